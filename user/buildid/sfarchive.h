/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof archives: a profile with the binaries and debug files its frames need, in one tar (zstd). */
#ifndef SFPROF_SFARCHIVE_H
#define SFPROF_SFARCHIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buildid.h"

/*
 * An archive is a tar (POSIX pax), zstd-compressed with content checksums
 * (a damaged archive is told from a whole one), of regular files:
 *   sfprof.data                 the profile, byte for byte
 *   kallsyms                    /proc/kallsyms of the recording machine (optional)
 *   .build-id/XX/REST           a binary, by build ID (buildid.h)
 *   .build-id/XX/REST.debug     a separate debug file of it
 * Unpacked into a directory, that directory is a build-ID tree
 * (--buildid-dir) beside the profile. Readers skip members of other names
 * (an archive of a later sfprof may hold more) and refuse anything that is
 * not a regular file (links, devices), a member twice, and an archive
 * without its profile.
 */
#define SFARCHIVE_PROFILE "sfprof.data"
#define SFARCHIVE_KALLSYMS "kallsyms"

/*
 * What a member can be. Every member is taken at the size its header gives
 * and must hold that many bytes, none of them a hole; the profile starts
 * with its magic, binaries and debug files with ELF's; and:
 *   - all members together, those skipped too: at most SFARCHIVE_MAX_BYTES,
 *     a bound on a hostile archive's size;
 *   - kallsyms: at most SFARCHIVE_MAX_KALLSYMS, some ten times a large
 *     kernel's (lines of at most ~600 bytes, a few hundred thousand of them).
 * Unpacking also refuses a member that would leave the directory's file
 * system with less than a margin free. A member is refused at its header
 * or its first bytes, before any of it is written.
 */
#define SFARCHIVE_MAX_BYTES (64ull << 30)
#define SFARCHIVE_MAX_KALLSYMS (64ull << 20)

enum sfarchive_kind {
	SFARCHIVE_OTHER = 0,	/* skipped */
	SFARCHIVE_PROFILE_FILE,
	SFARCHIVE_KALLSYMS_FILE,
	SFARCHIVE_BINARY,
	SFARCHIVE_DEBUG,
};

struct sfarchive_member {
	enum sfarchive_kind kind;
	const char *name;	/* as the archive names it, "./" removed */
	uint64_t size;
	uint8_t build_id[BUILDID_MAX];	/* binaries and debug files */
	size_t build_id_len;
};

/* --- writing --- */

struct sfarchive_writer;

/**
 * sfarchive_writer__create() - start an archive at @path, written aside and
 * put in place by sfarchive_writer__commit() (util/outfile.h: mode 0600, a
 * symlink at @path refused). @return the writer, or NULL with errno set and
 * @why filled.
 */
struct sfarchive_writer *sfarchive_writer__create(const char *path, char *why, size_t why_cap);

/**
 * sfarchive_writer__add() - the file at @src as member @name (one of the
 * names above). @return 0, or a negative errno with @why filled.
 */
int sfarchive_writer__add(struct sfarchive_writer *w, const char *name, const char *src,
			  char *why, size_t why_cap);

/** sfarchive_writer__bytes() - what the members added so far hold, uncompressed. */
uint64_t sfarchive_writer__bytes(const struct sfarchive_writer *w);

/**
 * sfarchive_writer__commit() - finish the archive and put it in place;
 * frees @w. @return 0, or a negative errno with @why filled (nothing is
 * left at the path then but what was there).
 */
int sfarchive_writer__commit(struct sfarchive_writer *w, char *why, size_t why_cap);

/** sfarchive_writer__discard() - drop what was written; accepts NULL. */
void sfarchive_writer__discard(struct sfarchive_writer *w);

/* --- reading --- */

/**
 * sfarchive_is() - whether @path looks like an archive rather than a
 * profile: zstd or tar magic, and not the profile's. @return 1, 0, or a
 * negative errno when it cannot be read.
 */
int sfarchive_is(const char *path);

/* What a reader does with the members it takes; each returns 0 or a negative errno to stop. */
struct sfarchive_sink {
	int (*begin)(void *ctx, const struct sfarchive_member *m);
	int (*data)(void *ctx, const void *buf, size_t len);
	int (*end)(void *ctx);
	void *ctx;
};

/**
 * sfarchive_read_memory() - read an archive held in memory, telling @sink
 * each member it takes. @return 0, or a negative errno with @why filled:
 * -EBADMSG for a damaged archive or one that breaks the rules above,
 * -EFBIG for a member larger than it can be, or what a sink returned.
 */
int sfarchive_read_memory(const void *data, size_t size, const struct sfarchive_sink *sink,
			  char *why, size_t why_cap);

/**
 * sfarchive_unpack() - unpack the archive at @path into a new private
 * directory (mkdtemp in $TMPDIR, else /tmp), returned in *@dir (free() it;
 * sfarchive_remove() removes it). Nothing is left behind on failure.
 * @return 0, or a negative errno with @why filled: those of
 * sfarchive_read_memory(), -ENOSPC for a member the directory's file system
 * has no room for.
 */
int sfarchive_unpack(const char *path, char **dir, char *why, size_t why_cap);

/** sfarchive_remove() - remove a directory sfarchive_unpack() made, and what it holds. */
void sfarchive_remove(const char *dir);

#endif
