/* SPDX-License-Identifier: BSD-2-Clause */
/* The file behind a process's mapping: the places it is reached from, in the one order they are tried. */
#ifndef SFPROF_MAPFILE_H
#define SFPROF_MAPFILE_H

#include <stdint.h>

/* The places of a mapping's file, in the order mapfile__each() tries them. */
enum mapfile_via {
	MAPFILE_MAPPED,		/* /proc/PID/map_files/START-END: the mapped file itself */
	MAPFILE_IN_ROOT,	/* /proc/PID/root/PATH: its path in the process's root */
	MAPFILE_HERE,		/* PATH in our own root: the process may be gone */
};

/*
 * Given each place in turn. @return 0 to go on to the next place, anything
 * else to stop there (mapfile__each() returns it).
 */
typedef int (*mapfile_try_fn)(void *ctx, enum mapfile_via via, const char *path);

/**
 * mapfile__each() - call @fn with each place the file of mapping [@start,
 * @end) of process @pid is reached from, in order: the mapped file itself
 * (held even when deleted, or in another mount namespace), then @path
 * through the process's root, then @path here.
 * @path: the mapping's path as the kernel gave it; the last two places are
 *	tried only when it is absolute (NULL: the mapped file alone). Neither
 *	names the mapped file for sure (it may have been replaced since): a
 *	caller that can checks the build ID of what it opens.
 *
 * A @path of PATH_MAX bytes or more gives the mapped file alone: no place
 * is ever cut short (it would name another file).
 *
 * @return what @fn returned to stop, or -ENOENT when it went on past the last place.
 */
int mapfile__each(uint32_t pid, uint64_t start, uint64_t end, const char *path,
		  mapfile_try_fn fn, void *ctx);

/**
 * mapfile__open() - open the file of mapping [@start, @end) of process @pid
 * read-only, from the first place mapfile__each() gives that opens.
 *
 * The process's root is entered with openat2(RESOLVE_IN_ROOT) so that an
 * absolute symlink in it resolves there, not here; @path's last component
 * is never followed (the kernel's path of a mapping names no symlink);
 * only a regular file is taken. Opened O_NONBLOCK | O_CLOEXEC.
 *
 * @return the fd, or a negative errno (-ENOENT when no place holds it).
 */
int mapfile__open(uint32_t pid, uint64_t start, uint64_t end, const char *path);

struct sfu_build_id;
struct sfu_cache;

/**
 * mapfile__module() - the module of the file of mapping [@start, @end) of
 * process @pid from @cache (sfu_cache__open()), from the first place
 * mapfile__each() gives that opens with build ID @want (NULL: any).
 *
 * The places are reached by their paths, as sfu_cache__open() takes them:
 * without mapfile__open()'s RESOLVE_IN_ROOT, O_NOFOLLOW and regular-file
 * rules, so a caller that has @want passes it. Stops at ENOSPC (the
 * cache's memory bound refuses the file from any place).
 *
 * @return a new reference to the module, or NULL with errno set.
 */
struct sfu_module *mapfile__module(struct sfu_cache *cache, uint32_t pid, uint64_t start,
				   uint64_t end, const char *path, const struct sfu_build_id *want);

/**
 * mapfile__open_place() - open one place mapfile__each() gave (@place, by
 * way of @via, for mapping path @path of process @pid) as mapfile__open()
 * does: for a caller that tries places of its own between them.
 *
 * @return the fd, or a negative errno.
 */
int mapfile__open_place(uint32_t pid, enum mapfile_via via, const char *place, const char *path);

/**
 * mapfile__open_path() - open @path as mapfile__open() opens a place: read-only, O_NONBLOCK | O_CLOEXEC,
 * a regular file only; its last component followed only when @follow (a /proc magic link).
 *
 * @return the fd, or a negative errno.
 */
int mapfile__open_path(const char *path, int follow);

#endif
