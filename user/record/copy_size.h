/* SPDX-License-Identifier: BSD-2-Clause */
/* How much user stack to copy for a thread: grown when its unwinds ran out, shrunk when they used little. */
#ifndef SFPROF_COPY_SIZE_H
#define SFPROF_COPY_SIZE_H

#include <stdbool.h>
#include <stdint.h>

/*
 * One thread's copy size and what its recent samples used. A copy never goes
 * past the end of the stack's mapping, nor on the main thread past the sp
 * its program started with, nor past the thread's top once known (its
 * outermost frame), so a large size costs a shallow stack little.
 *
 * A sample whose unwind needed bytes past a full copy sets the size to max
 * at once. So does a copy that ended by itself, short of the size, within
 * COPY_SIZE_TIGHT bytes of where its unwind stopped reading: its stack ends
 * where its frames do (the main thread's), and a deeper one will cost no
 * more than it needs, while samples at a smaller size would be cut before
 * the growth could be seen. A run of samples that all used well under the
 * size shrinks it to a quarter and 256 bytes more than the most they used
 * (down to min), unless no copy of the run was longer than that: those
 * copies ended by themselves, and a smaller size would only cut the next
 * deep one. Each growth at a cut doubles the run needed before the next
 * shrink, so a thread whose depth swings does not pay a cut stack each time.
 */
struct copy_size {
	uint32_t size;		/* bytes copied per sample now */
	uint32_t max_used;	/* the most a sample used in this run */
	uint32_t max_copied;	/* the longest copy in this run */
	uint32_t run;		/* samples in this run */
	uint32_t patience;	/* samples a run needs before a shrink */
	uint64_t top;		/* where the thread's stack ends (see copy_size__observe_top()); 0: unknown */
	bool top_off;		/* a top cut a stack once: never set again */
};

struct copy_limits {
	uint32_t min, max;	/* multiples of @page */
	uint32_t page;
};

/* Samples a run needs before the first shrink; doubled by each growth, up to the max. */
#define COPY_SIZE_RUN		32u
#define COPY_SIZE_MAX_RUN	4096u
/* A copy that ends this close past its unwind's last read ends with the stack. */
#define COPY_SIZE_TIGHT		256u

/* Bytes past the highest read of a complete unwind that the copy still takes. */
#define COPY_TOP_SLACK		64u

/** copy_size__init() - a thread that starts with @size bytes per copy. */
void copy_size__init(struct copy_size *cs, uint32_t size);

/**
 * copy_size__observe() - one sample of the thread: @copied bytes were
 * copied, the unwind read @used of them, and @ran_out says it needed more.
 * @return true when cs->size changed (to be published to the sampler).
 */
bool copy_size__observe(struct copy_size *cs, const struct copy_limits *lim, uint32_t copied,
			uint32_t used, bool ran_out);

/**
 * copy_size__observe_top() - where the thread's stack ends, from a sample at
 * @sp: a thread's outermost frame does not move, so the highest byte an
 * unwind that reached it (@complete) read, and COPY_TOP_SLACK more, is as
 * far as any of its copies need to go. The sampler copies no further (a
 * thread's stack mapping ends a little above, and a read past a mapping's
 * end faults, the dearest read there is). A copy the top cut whose unwind
 * ran out (@ran_out, @copied reaching the top) drops the top for good: the
 * thread's stacks do not end where one unwind's did.
 * @return true when cs->top changed (to be published to the sampler).
 */
bool copy_size__observe_top(struct copy_size *cs, uint64_t sp, uint32_t copied, uint32_t used,
			    bool ran_out, bool complete);

#endif
