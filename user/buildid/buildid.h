/* SPDX-License-Identifier: BSD-2-Clause */
/* The build-ID cache's layout: binaries and debug files kept by build ID, as perf's ~/.debug and debuginfod keep them. */
#ifndef SFPROF_BUILDID_H
#define SFPROF_BUILDID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/buildid_note.h"

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

/**
 * buildid_cache_dir() - the cache directory: $XDG_CACHE_HOME/sfprof when
 * XDG_CACHE_HOME is an absolute path, else $HOME/.cache/sfprof.
 * @return 0, -ENOENT when neither variable gives one, -ENAMETOOLONG.
 */
int buildid_cache_dir(char *out, size_t cap);

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

/*
 * Trust. A tree is used only when no one but the effective user and root
 * can change it: every directory on the way to it owned by one of them and
 * writable by no one else (one on the way may be sticky, as /tmp), the
 * tree's own directories never writable by others, and each entry a
 * regular file owned by one of them and writable by no one else: then the
 * paths checked name the same files until the checker itself changes them.
 */
struct stat;

/**
 * buildid_dir_trust() - check the directory @dir and each directory on the
 * way to it, walked from / by openat() with O_NOFOLLOW (a symbolic link
 * followed only when the effective user or root owns it); its last @own
 * directories are a tree's own, never links, nor sticky and writable by others. With
 * @create, those missing are made, owner-only.
 * @return 0, or a negative errno with @why filled ("DIR: owned by uid 1000,
 * not by root"): -ENOENT when a directory is missing (and not @create),
 * -EPERM when one is someone else's, -ENOTDIR.
 */
int buildid_dir_trust(const char *dir, size_t own, bool create, char *why, size_t why_cap);

/** buildid_tree_trust() - buildid_dir_trust() of @dir and of its .build-id, both its own. */
int buildid_tree_trust(const char *dir, bool create, char *why, size_t why_cap);

/**
 * buildid_entry_trust() - check the entry @path of the tree @dir
 * (buildid_path()): the tree (buildid_tree_trust()), its .build-id and XX
 * directories, and the entry itself, a regular file, not a link, owned by
 * the effective user or root and writable by no one else.
 * @return 0, or a negative errno with @why filled (-ENOENT: no such entry).
 */
int buildid_entry_trust(const char *dir, const char *path, char *why, size_t why_cap);

/** buildid_file_trusted() - whether @st is a regular file that the effective user or root owns and no one else may write. */
bool buildid_file_trusted(const struct stat *st);

/**
 * buildid_open_checked() - open the file @path for reading and check that
 * what the fd reads holds build ID @id (@len bytes): a file found by path
 * earlier may have been replaced since.
 * @return the fd, or a negative errno with @why filled (-ESTALE: another
 * build, or none).
 */
int buildid_open_checked(const char *path, const uint8_t *id, size_t len, char *why,
			 size_t why_cap);

#endif
