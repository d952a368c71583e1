/* SPDX-License-Identifier: BSD-2-Clause */
/* The unwinders the benchmark compares, behind one signature. */
#ifndef BENCH_UNWINDER_H
#define BENCH_UNWINDER_H

#include <stddef.h>
#include <stdint.h>

#include "capture.h"

struct unwinder {
	const char *name;
	/*
	 * Unwinds @s, at most @max frames. Fills @out when non-NULL and @why with
	 * the reason it stopped when non-NULL. @return the number of frames.
	 */
	size_t (*walk)(void *state, const struct bench_snapshot *s, uint64_t *out, size_t max,
		       const char **why);
	void (*free)(void *state);	/* NULL when there is no state */
	void *state;
};

/*
 * Each sets up @u to unwind snapshots of this process, whose modules must all
 * be loaded by then. @return 0, or a negative errno after printing why; call
 * unwinder__fini() in both cases.
 */
int unwinder_sfunwind__init(struct unwinder *u);
int unwinder_libdw__init(struct unwinder *u);
int unwinder_libunwind__init(struct unwinder *u);
int unwinder_fp__init(struct unwinder *u);

/** unwinder__fini() - release what an init set up; accepts a zeroed @u. */
static inline void unwinder__fini(struct unwinder *u)
{
	if (u->free)
		u->free(u->state);
	u->free = NULL;
	u->state = NULL;
}

#endif
