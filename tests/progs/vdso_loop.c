/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof record test program: spends its time in the vDSO's clock_gettime, called from a known chain. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/*
 * clock_gettime(CLOCK_MONOTONIC) is answered in the vDSO, without a system
 * call: samples land in [vdso] code. Chain, innermost first:
 *
 *   [vdso] clock_gettime, then libc's clock_gettime, then vdso_loop main
 *
 * The driver (tests/integration/vdso_test.py) checks the [vdso] frames'
 * names against the image's own symbols.
 *
 * Usage: vdso_loop SECONDS
 */

#define NOIPA __attribute__((noipa))

static volatile long sink;

NOIPA static void vdso_loop(double seconds)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		for (int i = 0; i < 1000; i++) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			sink += now.tv_nsec;
		}
	} while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;

	vdso_loop(seconds);
	printf("%ld\n", sink & 1);
	return 0;
}
