/* SPDX-License-Identifier: BSD-2-Clause */
/* record --flight-recorder: the last SECS of unwound stacks kept in memory as profile slices, written on demand. */
#ifndef SFPROF_FLIGHT_H
#define SFPROF_FLIGHT_H

#include <stdint.h>

#include "pipeline.h"
#include "profile/profile.h"

struct flight;

/**
 * flight__new() - keep the last @secs of a recording: slices of a fraction
 * of @secs (at most 1 s), each a whole profile (pipeline__cut()) written
 * zstd-compressed into a memfd; slices wholly older than @secs, and the
 * oldest past @max_bytes in all, are dropped. @meta goes into every slice
 * and every profile written. @now is CLOCK_MONOTONIC ns.
 * @return the recorder, or NULL with errno set.
 */
struct flight *flight__new(double secs, uint64_t max_bytes, const struct profile_meta *meta,
			   uint64_t now);

/** flight__writer() - the writer of the slice being recorded. */
struct profile_writer *flight__writer(struct flight *f);

/** flight__cut_at() - when the slice being recorded ends (CLOCK_MONOTONIC ns). */
uint64_t flight__cut_at(const struct flight *f);

/**
 * flight__cut() - end the current slice at @now and start the next (its
 * writer passed to every unwinding thread through pipeline__cut(), from the
 * draining thread). @return 0 or -errno (the recording must stop).
 */
int flight__cut(struct flight *f, struct pipeline *pl, uint64_t now);

/**
 * flight__write() - write the samples of the last @secs before @now (and
 * the processes, threads, modules and mappings they need) as a profile at
 * @path (an existing file is kept as @path.old). The current slice must
 * have been cut at @now. @samples: how many were written.
 * @return 0 or -errno (@diag says why).
 */
int flight__write(struct flight *f, const char *path, uint64_t now, uint64_t *samples,
		  struct profile_diag *diag);

/** flight__stats() - slices held, their bytes, and slices dropped at the byte bound. */
void flight__stats(const struct flight *f, uint64_t *slices, uint64_t *bytes, uint64_t *dropped);

/** flight__free() - accepts NULL. */
void flight__free(struct flight *f);

#endif
