/* SPDX-License-Identifier: BSD-2-Clause */
/* The disk cache of tables derived from .eh_frame, for the module code. */
#ifndef SFU_EHFRAME_INTERNAL_H
#define SFU_EHFRAME_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "sfunwind/module.h"
#include "sfunwind/sframe.h"

/*
 * Bumped whenever the conversion gives other rows for the same input, so
 * that tables written by an older library are derived again, not reused.
 */
#define EHCACHE_FORMAT 1

/**
 * ehcache_load() - the table cached for build ID @id, if there is one.
 * @machine: the module's ELF machine; a table of another ABI is refused.
 *
 * @return 0 and *@out; -ENOENT when nothing is cached; -EBADMSG when the
 * file does not decode or belongs to another ABI (derive and store anew);
 * -EPERM when the file or a directory on the way to it could be changed by
 * someone other than the effective user and root (ehcache_dir_trust());
 * -ENOMEM.
 */
int ehcache_load(const char *dir, const struct sfu_build_id *id, uint16_t machine,
		 struct sfu_sframe **out);

/**
 * ehcache_store() - write @size bytes of an encoded table for build ID @id,
 * creating @dir (and its parents) when needed. The file appears whole or
 * not at all (written aside, then renamed). Not into a directory that
 * ehcache_dir_trust() refuses (-EPERM).
 *
 * @return 0 or a negative errno.
 */
int ehcache_store(const char *dir, const struct sfu_build_id *id, const void *buf, size_t size);

/**
 * ehcache_dir_trust() - whether @dir and every directory on the way to it
 * (walked from / with O_NOFOLLOW; a link followed only when the effective
 * user or root owns it) are owned by the effective user or root and
 * writable by no one else (one on the way may be sticky, as /tmp is).
 * @return 0, -EPERM, or the errno of a lookup (-ENOENT: missing).
 */
int ehcache_dir_trust(const char *dir);

/** @return the path of the cache file for @id, malloc()ed, or NULL (ENOMEM, or no build ID). */
char *ehcache_path(const char *dir, const struct sfu_build_id *id);

#endif
