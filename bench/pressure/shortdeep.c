/* SPDX-License-Identifier: BSD-2-Clause */
/* Workload of scripts/bench-pressure: a short-lived process, 60 frames deep for about 20 ms. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/*
 * usage: pressure_shortN [MILLISECONDS [DEPTH]]
 *
 * Goes down DEPTH frames (default 60, about 6 KiB of stack) and spins there for
 * MILLISECONDS of wall time (default 20), then exits. The driver runs it in a
 * loop so that processes start and end all the time; meson builds it as a few
 * variants (VARIANT) with distinct build IDs, so that the loop also opens and
 * drops executables the recorder has not seen.
 */

#ifndef VARIANT
#define VARIANT 0
#endif

#define NOIPA __attribute__((noipa))

static volatile uint64_t sink;
volatile int variant = VARIANT;
static long budget_ns = 20000000L;

NOIPA static uint64_t spin(uint64_t seed)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 5000; i++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < budget_ns);
	return seed;
}

NOIPA static uint64_t down(uint64_t seed, int level)
{
	volatile char block[64];

	block[level % 64] = (char)seed;
	if (!level)
		return spin(seed);
	return down(seed + 1, level - 1) ^ block[level % 64];
}

int main(int argc, char **argv)
{
	int depth = 60;

	if (argc > 1)
		budget_ns = (long)(atof(argv[1]) * 1e6);
	if (argc > 2)
		depth = atoi(argv[2]);
	if (argc > 3 || budget_ns < 0 || depth <= 0) {
		fputs("usage: pressure_short [MILLISECONDS [DEPTH]]\n", stderr);
		return 2;
	}
	sink = down((uint64_t)variant + 1, depth - 1);
	return 0;
}
