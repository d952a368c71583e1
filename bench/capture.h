/* SPDX-License-Identifier: BSD-2-Clause */
/* The benchmark's workload: a call chain of known depth captures its own registers and stack. */
#ifndef BENCH_CAPTURE_H
#define BENCH_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "sfunwind/unwind.h"

#define BENCH_DEPTH_MAX 128

/* One sample, as a profiler would receive it: registers and a copy of the stack. */
struct bench_snapshot {
	struct sfu_regs regs;	/* at the capture point: frame 0 */
	uint64_t base;		/* address of stack[0], the sp */
	uint8_t *stack;		/* malloc()ed copy from the sp to the top of the stack */
	size_t size;
	size_t depth;		/* frames from the capture point up to main, inclusive */
	uint64_t expect[BENCH_DEPTH_MAX];	/* their addresses: the pc, then return addresses */
};

/**
 * bench_capture() - capture the stack at the bottom of a chain @depth frames deep.
 * @rotation: which of the chain's four functions is innermost, so that the
 *            snapshots of one depth start in different functions.
 *
 * The chain runs from the caller of bench_capture() (main) down to the capture
 * point; every function of it records its return address, which gives the
 * expected frames without trusting any unwinder. Free with bench_snapshot__free().
 *
 * @return 0, or a negative errno (-EINVAL for @depth outside 4..BENCH_DEPTH_MAX,
 * -ENOMEM, -ENOENT when the stack's mapping is not found, -E2BIG for a stack
 * larger than the copy buffer).
 */
int bench_capture(struct bench_snapshot *s, size_t depth, unsigned rotation);

/**
 * bench_stack_top() - the end of this process's [stack] mapping: the main
 * thread's stack top. @return 0, or -ENOENT or -errno.
 */
int bench_stack_top(uint64_t *top);

/** bench_snapshot__free() - free the stack copy; accepts NULL. */
void bench_snapshot__free(struct bench_snapshot *s);

#endif
