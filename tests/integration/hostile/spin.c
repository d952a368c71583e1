/* SPDX-License-Identifier: BSD-2-Clause */
/* CPU-bound for SECS seconds (argv[1]), through stacks of 1 to 97 frames: a recording's load. */
#include <stdlib.h>
#include <time.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void leaf(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i; }
__attribute__((noinline)) static void rec(int d, unsigned long n) { if (d) rec(d - 1, n); else leaf(n); sink++; }
int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long k = 0;; k++) {
		rec(k % 97, 2000);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 > secs) return 0;
	}
}
