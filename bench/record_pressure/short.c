/* SPDX-License-Identifier: BSD-2-Clause */
/* bench-record-pressure's churn: a process 60 frames deep for 20 ms; built as many variants (distinct build IDs). */
#include <time.h>

#ifndef VARIANT
#define VARIANT 0
#endif

static volatile unsigned long sink;
volatile int variant = VARIANT;

__attribute__((noinline)) static unsigned long down(int depth)
{
	volatile char pad[64];

	pad[0] = (char)depth;
	if (!depth) {
		struct timespec t0, t;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			for (int i = 0; i < 10000; i++)
				sink += (unsigned long)i;
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 20000000L);
		return (unsigned long)pad[0];
	}
	return down(depth - 1) + (unsigned long)pad[0];
}

int main(void)
{
	return (int)((down(60) + (unsigned long)variant) & 1);
}
