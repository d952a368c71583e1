/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof record test program: spins in a known chain for a few milliseconds, then exits. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

/*
 * Built with -O2 -fomit-frame-pointer -Wa,--gsframe; the driver
 * (tests/integration/record_test.py) copies it under names that nothing
 * else on the system runs, and starts it many times while
 * `sfprof record -a` runs, or records it with -p. Almost all of its time
 * is spent in
 *
 *   sl_leaf sl_work main
 *
 * until SIGALRM (setitimer, no polling of the clock) ends the spin.
 * VARIANT, set with -D, only makes the build IDs of copies differ.
 *
 * Usage: shortlived MILLISECONDS
 */

#ifndef VARIANT
#define VARIANT 0
#endif

#define NOIPA __attribute__((noipa))

static volatile sig_atomic_t stop;
static volatile long sink = VARIANT;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

NOIPA static long sl_leaf(long x)
{
	while (!stop)
		for (int i = 0; i < 1000; i++)
			sink += x ^ i;
	return sink;
}

NOIPA static long sl_work(long x)
{
	long r = sl_leaf(x + 1);

	sink = r;
	return r;
}

int main(int argc, char **argv)
{
	struct itimerval it = { { 0, 0 }, { 0, 0 } };
	long ms;
	long r;

	if (argc != 2 || (ms = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: shortlived MILLISECONDS\n");
		return 2;
	}
	it.it_value.tv_sec = ms / 1000;
	it.it_value.tv_usec = ms % 1000 * 1000;
	signal(SIGALRM, on_alarm);
	if (setitimer(ITIMER_REAL, &it, NULL)) {
		perror("shortlived: setitimer");
		return 1;
	}
	r = sl_work(ms);
	sink = r;
	return 0;
}
