/* SPDX-License-Identifier: BSD-2-Clause */
/* The build-ID cache at record time: the binaries a recording maps, kept by build ID on a thread of their own. */
#ifndef SFPROF_BUILDID_KEEPER_H
#define SFPROF_BUILDID_KEEPER_H

#include <stddef.h>
#include <stdint.h>

/* What the cache may hold, all entries at their file size, unless told otherwise. */
#define BUILDID_KEEPER_DEFAULT_BYTES (2ull << 30)

struct buildid_keeper_stats {
	uint64_t offered;	/* distinct build IDs offered */
	uint64_t linked;	/* kept as a hard link of the mapped file */
	uint64_t copied;	/* kept as a copy (another file system, deleted, set-id) */
	uint64_t copied_bytes;
	uint64_t present;	/* in the cache already: marked as used now */
	uint64_t held;		/* taken from the file held since its mmap (the process gone, maybe the file) */
	uint64_t unopened;	/* the mapped file could not be opened any more */
	uint64_t mismatched;	/* the file opened holds another build ID (replaced meanwhile) */
	uint64_t untrusted;	/* entries found that others could change: kept again as copies */
	uint64_t over_bound;	/* not kept: bigger than the bound allows */
	uint64_t failed;	/* not kept: an error writing the cache */
	uint64_t dropped;	/* not kept: too many waiting at once */
	uint64_t evicted;	/* older entries removed for the bound */
	uint64_t evicted_bytes;
	uint64_t held_bytes;	/* what the cache holds at the end */
	uint64_t offer_ns_max;	/* the longest offer on a recording thread */
	uint64_t copy_ns;	/* time the keeper's thread spent copying */
	char first_error[320];	/* the first error writing the cache, in words */
};

struct buildid_keeper;

/* Entries this recording uses are never evicted by it. */
#define BUILDID_KEEPER_PROTECT_ALL UINT64_MAX

/**
 * buildid_keeper__new() - keep binaries in the build-ID tree of @dir
 * (created, owner-only, if missing; refused with EPERM when it or a
 * directory on the way can be changed by someone other than the effective
 * user and root: buildid_tree_trust()), holding at most @max_bytes (every
 * entry at its file size; oldest use evicted first), with a thread of its
 * own. An entry this keeper kept or found is not evicted by it within
 * @protect_s seconds of its last use by it (BUILDID_KEEPER_PROTECT_ALL: a
 * recording's own binaries stay as long as it runs; an agent's only until
 * its windows are symbolized). The directory is checked writable now, so
 * that a recording does not learn at its end that nothing could be kept.
 *
 * @return the keeper, or NULL with errno set and @why filled with a sentence.
 */
struct buildid_keeper *buildid_keeper__new(const char *dir, uint64_t max_bytes,
					   uint64_t protect_s, char *why, size_t why_cap);

/**
 * buildid_keeper__offer() - a module of a sampled process: its build ID,
 * and where its file is: the mapping @start-@end of process @pid
 * (/proc/PID/map_files, which holds even a deleted file), then @map_path
 * through the process's root, then @module_path. Each build ID is taken
 * once. The file is opened here, so that it is held even if the process
 * exits and the file is removed before the keeper's thread gets to it; the
 * rest is done on that thread: a hard link only of a file no one but the
 * effective user and root can write, else a copy (checked to hold the
 * build, whole), so that an entry is never changed by the owner of the
 * original after the fact. Thread-safe; never
 * waits on file copies.
 */
void buildid_keeper__offer(struct buildid_keeper *k, const uint8_t *id, size_t len, uint32_t pid,
			   uint64_t start, uint64_t end, const char *map_path,
			   const char *module_path);

/**
 * buildid_keeper__hold() - the file process @pid maps now at @start-@end (an
 * mmap event; opened through /proc/PID/map_files, never by path), held open for a while (10 s, at most 256 files, the oldest
 * let go first) in case a sample hits it: a short-lived process has often
 * exited, and its binary been deleted, by the time its first sample is
 * written and the file offered. An offer of the build ID takes the file
 * held. Build IDs offered or held already cost a lookup. Thread-safe; opens
 * one file on the caller's thread, and closes none but the oldest held when
 * 256 are (the keeper's thread closes those past their time): quick enough
 * for the thread draining the ring, which calls it at each exec's mappings.
 */
void buildid_keeper__hold(struct buildid_keeper *k, const uint8_t *id, size_t len, uint32_t pid,
			  uint64_t start, uint64_t end);

/**
 * buildid_keeper__finish() - keep what was offered, evict down to the bound,
 * stop the thread and fill @st. No offer may come after it.
 * @return 0, or the first error writing the cache (negative errno; what
 * could be kept is kept).
 */
int buildid_keeper__finish(struct buildid_keeper *k, struct buildid_keeper_stats *st);

/** buildid_keeper__free() - finishes if need be; accepts NULL. */
void buildid_keeper__free(struct buildid_keeper *k);

#endif
