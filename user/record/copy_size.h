/* SPDX-License-Identifier: BSD-2-Clause */
/* How much user stack to copy for a thread: grown when its unwinds ran out, shrunk when they used little. */
#ifndef SFPROF_COPY_SIZE_H
#define SFPROF_COPY_SIZE_H

#include <stdbool.h>
#include <stdint.h>

/*
 * One thread's copy size and what its recent samples used. A copy never goes
 * past the end of the stack's mapping, nor on the main thread past the sp
 * its program started with, so a large size costs a shallow stack little.
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

/** copy_size__init() - a thread that starts with @size bytes per copy. */
void copy_size__init(struct copy_size *cs, uint32_t size);

/**
 * copy_size__observe() - one sample of the thread: @copied bytes were
 * copied, the unwind read @used of them, and @ran_out says it needed more.
 * @return true when cs->size changed (to be published to the sampler).
 */
bool copy_size__observe(struct copy_size *cs, const struct copy_limits *lim, uint32_t copied,
			uint32_t used, bool ran_out);

#endif
