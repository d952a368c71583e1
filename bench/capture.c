/* SPDX-License-Identifier: BSD-2-Clause */
/* The benchmark's workload: a call chain of known depth captures its own registers and stack. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "snapshot.h"

/* Largest stack copy: the chain itself needs a few KiB, the environment may add more. */
#define STACK_COPY_MAX (1u << 20)

struct chain {
	struct bench_snapshot *snap;
	struct sfu_snap_regs regs;	/* filled by SFU_SNAP__READ_REGS */
	uint64_t stack_top;
	uint8_t *buf;
	size_t len;
	int truncated;
	uint64_t sink;		/* step_saved's values, so that they stay live across its call */
};

/* Copy the stack with plain loads: no call may run between the register read and the copy. */
static inline __attribute__((always_inline)) void copy_stack(struct chain *c)
{
	const volatile uint64_t *src = (const volatile uint64_t *)(uintptr_t)c->regs.sp;
	uint64_t *dst = (uint64_t *)c->buf;
	uint64_t len = (c->stack_top - c->regs.sp) & ~(uint64_t)7;

	c->truncated = len > STACK_COPY_MAX;
	if (c->truncated)
		len = STACK_COPY_MAX;
	for (uint64_t w = 0; w < len / 8; w++)
		dst[w] = src[w];
	c->len = len;
}

#define CAPTURE(c)                                                                     \
	do {                                                                           \
		SFU_SNAP__READ_REGS(&(c)->regs);                                       \
		copy_stack(c);                                                         \
	} while (0)

/* frame n + 1 of the snapshot is the return address of the function n levels above the capture */
#define RECORD_RA(c, n)                                                                \
	((c)->snap->expect[(n) + 1] = (uint64_t)(uintptr_t)__builtin_return_address(0))

/*
 * Four functions with different frame shapes call each other in a ring. Each
 * does work after its call, so no call is a tail call, and SFU_SNAP_NOINLINE
 * keeps each one a real frame.
 */
static int step_plain(struct chain *c, int n);
static int step_array(struct chain *c, int n);
static int step_saved(struct chain *c, int n);
static int step_alloca(struct chain *c, int n);

/* The smallest frame: only the saved frame pointer and the return address. */
SFU_SNAP_NOINLINE static int step_plain(struct chain *c, int n)
{
	RECORD_RA(c, n);
	if (n == 0) {
		CAPTURE(c);
		return 1;
	}
	return step_array(c, n - 1) + 1;
}

/* A fixed local array: the stack pointer moves by a constant. */
SFU_SNAP_NOINLINE static int step_array(struct chain *c, int n)
{
	volatile uint64_t scratch[6];

	RECORD_RA(c, n);
	scratch[n % 6] = (uint64_t)n;
	if (n == 0) {
		CAPTURE(c);
		return 1 + (int)(scratch[0] - scratch[0]);
	}
	return step_saved(c, n - 1) + 1 + (int)(scratch[n % 6] - (uint64_t)n);
}

/* Values live across the call: callee-saved registers pushed in the prologue. */
SFU_SNAP_NOINLINE static int step_saved(struct chain *c, int n)
{
	uint64_t a = c->stack_top ^ (uint64_t)n, b = c->len + (uint64_t)n, d = (uint64_t)n * 3;
	int r;

	RECORD_RA(c, n);
	if (n == 0) {
		CAPTURE(c);
		return 1;
	}
	r = step_alloca(c, n - 1);
	c->sink ^= a * b + d;
	return r + 1;
}

/* A variable-size frame: only the frame pointer locates the CFA. */
SFU_SNAP_NOINLINE static int step_alloca(struct chain *c, int n)
{
	volatile uint8_t *area = __builtin_alloca(16 + (size_t)(n & 3) * 16);

	RECORD_RA(c, n);
	area[0] = (uint8_t)n;
	if (n == 0) {
		CAPTURE(c);
		return 1 + area[0];
	}
	return step_plain(c, n - 1) + 1 + (area[0] - (uint8_t)n);
}

static int (*const chain_start[])(struct chain *, int) = {
	step_plain, step_array, step_saved, step_alloca,
};

int bench_stack_top(uint64_t *top)
{
	char line[512];
	int err = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end;

		if (!strstr(line, "[stack]"))
			continue;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64, &start, &end) == 2) {
			*top = end;
			err = 0;
		}
		break;
	}
	fclose(f);
	return err;
}

SFU_SNAP_NOINLINE int bench_capture(struct bench_snapshot *s, size_t depth, unsigned rotation)
{
	struct chain c = { .snap = s };
	int err, levels;
	uint8_t *stack;

	memset(s, 0, sizeof(*s));
	if (depth < 4 || depth > BENCH_DEPTH_MAX)
		return -EINVAL;
	err = bench_stack_top(&c.stack_top);
	if (err)
		return err;
	c.buf = malloc(STACK_COPY_MAX);
	if (!c.buf)
		return -ENOMEM;

	/* frames: main, this function, then depth - 2 functions of the chain */
	s->expect[depth - 1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	levels = chain_start[rotation % 4](&c, (int)depth - 3);
	if (levels != (int)depth - 2 || c.regs.sp >= c.stack_top) {
		err = -EINVAL;
		goto out;
	}
	if (c.truncated) {
		err = -E2BIG;
		goto out;
	}
	stack = realloc(c.buf, c.len);
	if (!stack) {
		err = -ENOMEM;
		goto out;
	}
	c.buf = NULL;

	s->regs = (struct sfu_regs){ c.regs.pc, c.regs.sp, c.regs.fp, c.regs.lr };
	s->base = c.regs.sp;
	s->stack = stack;
	s->size = c.len;
	s->depth = depth;
	s->expect[0] = c.regs.pc;
	err = 0;
out:
	free(c.buf);
	return err;
}

void bench_snapshot__free(struct bench_snapshot *s)
{
	if (!s)
		return;
	free(s->stack);
	s->stack = NULL;
}
