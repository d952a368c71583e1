/* SPDX-License-Identifier: BSD-2-Clause */
/* Frame-pointer walking under test: [fp] holds the caller's fp, [fp + 8] the return address. */
#include <string.h>

#include "unwinder.h"

static size_t fp_walk(void *state, const struct bench_snapshot *s, uint64_t *out, size_t max,
		      const char **why)
{
	const char *stop = "depth limit";
	uint64_t fp = s->regs.fp, sp = s->regs.sp, rec[2];
	size_t n = 0;

	(void)state;
	if (out)
		out[0] = s->regs.pc;
	for (n = 1; n < max; n++) {
		uint64_t off = fp - s->base;

		if (fp < sp || (fp & 7) || s->size < sizeof(rec) || off > s->size - sizeof(rec)) {
			stop = "frame pointer outside the stack";
			break;
		}
		memcpy(rec, s->stack + off, sizeof(rec));
		if (out)
			out[n] = rec[1];
		sp = fp + sizeof(rec);
		fp = rec[0];
	}
	if (why)
		*why = stop;
	return n;
}

int unwinder_fp__init(struct unwinder *u)
{
	*u = (struct unwinder){ "fp", fp_walk, NULL, NULL };
	return 0;
}
