/* SPDX-License-Identifier: BSD-2-Clause */
/* The build-ID cache's layout: binaries and debug files kept by build ID, as perf's ~/.debug and debuginfod keep them. */
#ifndef SFPROF_BUILDID_H
#define SFPROF_BUILDID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A build-ID tree: DIR/.build-id/XX/REST holds the binary whose build ID is
 * XX followed by REST in lower-case hex, DIR/.build-id/XX/REST.debug a
 * separate debug file of it (the layout of /usr/lib/debug/.build-id). The
 * cache is such a tree in $XDG_CACHE_HOME/sfprof (else ~/.cache/sfprof),
 * beside the unwind tables derived from .eh_frame; an unpacked archive is
 * another.
 */
#define BUILDID_TREE ".build-id"
#define BUILDID_DEBUG_SUFFIX ".debug"

/* The bytes of the longest build ID a tree names (SFU_BUILD_ID_MAX). */
#define BUILDID_MAX 64

/**
 * buildid_cache_dir() - the cache directory: $XDG_CACHE_HOME/sfprof when
 * XDG_CACHE_HOME is an absolute path, else $HOME/.cache/sfprof.
 * @return 0, -ENOENT when neither variable gives one, -ENAMETOOLONG.
 */
int buildid_cache_dir(char *out, size_t cap);

/**
 * buildid_hex() - @id in lower-case hex into @out (2 * @len + 1 bytes).
 * @return the length written.
 */
size_t buildid_hex(char *out, size_t cap, const uint8_t *id, size_t len);

/** buildid_read() - the GNU build ID of the ELF file open at @fd into @out (BUILDID_MAX bytes). @return its length, or 0. */
size_t buildid_read(int fd, uint8_t *out);

/**
 * buildid_path() - DIR/.build-id/XX/REST followed by @suffix (NULL: none).
 * @return 0, or -EINVAL for an empty or too long build ID, -ENAMETOOLONG.
 */
int buildid_path(char *out, size_t cap, const char *dir, const uint8_t *id, size_t len,
		 const char *suffix);

/**
 * buildid_parse_name() - the build ID a tree's entry names: @xx the
 * directory (two hex digits), @rest the file's name (hex, then optionally
 * @BUILDID_DEBUG_SUFFIX). @return the build ID's length (1 to BUILDID_MAX)
 * with *@debug set, or 0 when the names are not an entry's.
 */
size_t buildid_parse_name(const char *xx, const char *rest, uint8_t *id, bool *debug);

#endif
