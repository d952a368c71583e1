/* SPDX-License-Identifier: BSD-2-Clause */
/* The per-thread stack copy size policy of sfprof record (see copy_size.h). */
#include "copy_size.h"

void copy_size__init(struct copy_size *cs, uint32_t size)
{
	cs->size = size;
	cs->max_used = 0;
	cs->max_copied = 0;
	cs->run = 0;
	cs->patience = COPY_SIZE_RUN;
	cs->top = 0;
	cs->top_off = false;
}

bool copy_size__observe_top(struct copy_size *cs, uint64_t sp, uint32_t copied, uint32_t used,
			    bool ran_out, bool complete)
{
	uint64_t top;

	if (cs->top_off)
		return false;
	if (ran_out) {
		if (!cs->top || sp >= cs->top || sp + copied < cs->top)
			return false;	/* not the top's cut */
		cs->top = 0;
		cs->top_off = true;
		return true;
	}
	if (!complete || !used || used > copied || sp > UINT64_MAX - used - COPY_TOP_SLACK - 7)
		return false;
	top = (sp + used + 7) / 8 * 8 + COPY_TOP_SLACK;
	if (top <= cs->top)
		return false;
	cs->top = top;
	return true;
}

static uint32_t round_up(uint64_t v, uint32_t page)
{
	return (uint32_t)((v + page - 1) / page * page);
}

bool copy_size__observe(struct copy_size *cs, const struct copy_limits *lim, uint32_t copied,
			uint32_t used, bool ran_out)
{
	uint64_t want, longest;

	/* a copy the stack's end cut short would not have been longer at any size */
	if (ran_out && copied >= cs->size) {
		cs->run = 0;
		cs->max_used = 0;
		cs->max_copied = 0;
		if (cs->patience < COPY_SIZE_MAX_RUN)
			cs->patience *= 2;
		if (cs->size >= lim->max)
			return false;
		/*
		 * Straight to the maximum: samples already in the ring were
		 * copied at the old size, and each step would cost a ringful of
		 * cut stacks; the next run shrinks it to what the stacks use.
		 */
		cs->size = lim->max;
		return true;
	}
	if (!ran_out && used && used <= copied && copied - used <= COPY_SIZE_TIGHT &&
	    copied < cs->size && cs->size < lim->max) {
		/* the stack ended with the frames: a deep one will be copied to its end, no further */
		cs->size = lim->max;
		cs->run = 0;
		cs->max_used = 0;
		cs->max_copied = 0;
		return true;
	}
	if (used > cs->max_used)
		cs->max_used = used;
	if (copied > cs->max_copied)
		cs->max_copied = copied;
	if (++cs->run < cs->patience)
		return false;
	want = round_up((uint64_t)cs->max_used + cs->max_used / 4 + 256, lim->page);
	if (want < lim->min)
		want = lim->min;
	longest = cs->max_copied;
	cs->run = 0;
	cs->max_used = 0;
	cs->max_copied = 0;
	/*
	 * No copy of the run reached @want, each stopped where its stack
	 * ended: a smaller size would have copied no less, and could only
	 * cut the next deep stack.
	 */
	if (want >= cs->size || longest <= want)
		return false;
	cs->size = (uint32_t)want;
	return true;
}
