/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof report test program: one leaf reached through two callers in known shares, for call-graph trees. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/*
 * Built with -O2 -fomit-frame-pointer -Wa,--gsframe. main calls work() in a
 * loop until SECONDS pass; work() calls, in turn, via_g twice and via_h once
 * (so 2/3 and 1/3 of the leaf's time), each ending in the same hot leaf
 * tree_leaf, and then other_leaf directly for as long as one via_h call:
 *
 *   tree_leaf via_g work main     2/4 of the time
 *   tree_leaf via_h work main     1/4
 *   other_leaf work main          1/4
 *
 * Every function is noipa and uses its callee's result: no inlining, no tail
 * calls. The driver (tests/integration/report_tree_test.py) holds the same table.
 *
 * Usage: report_tree SECONDS
 */

#define NOIPA __attribute__((noipa))
#define SPIN 200000

static volatile long sink;
static unsigned long rng = 88172645463325252ul;

/*
 * How long one leaf call spins: drawn from one distribution for every call,
 * so the shares stay 2:1:1 while the calls' lengths do not keep step with a
 * sampling timer (a fixed length aliases with it and biases the shares).
 */
static long spin_count(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return SPIN / 2 + (long)(rng % SPIN);
}

NOIPA static long tree_leaf(long x)
{
	long n = spin_count();

	for (long i = 0; i < n; i++)
		sink += x ^ i;
	return sink;
}

NOIPA static long other_leaf(long x)
{
	long n = spin_count();

	for (long i = 0; i < n; i++)
		sink += x ^ i;
	return sink;
}

NOIPA static long via_g(long x)
{
	long r = tree_leaf(x + 1);

	sink = r;
	return r;
}

NOIPA static long via_h(long x)
{
	long r = tree_leaf(x + 2);

	sink = r;
	return r;
}

NOIPA static long work(long x)
{
	long r = via_g(x) + via_g(x + 1) + via_h(x) + other_leaf(x);

	sink = r;
	return r;
}

int main(int argc, char **argv)
{
	struct timespec t0, t;
	double secs;
	long r = 0;

	if (argc != 2 || (secs = atof(argv[1])) <= 0) {
		fprintf(stderr, "usage: report_tree SECONDS\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 16; i++)
			r += work(i);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	sink = r;
	return 0;
}
