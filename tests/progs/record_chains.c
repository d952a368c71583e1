/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof record test program: four threads spin in hot leaves at the end of known call chains. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libcallback.h"

/*
 * Built with -O2 -fomit-frame-pointer -Wa,--gsframe, so only .sframe can
 * unwind it. Each thread spins in its leaf until `stop` is set; the chains,
 * innermost first, up to each thread's entry function:
 *
 *   main thread:  spin_recursion recurse x RECURSION_DEPTH main_work main
 *   thread_a:     spin_a a_inner a_middle a_outer thread_a
 *   thread_b:     spin_cb cb_entry lib_step lib_apply b_outer thread_b
 *                 (lib_* are in libcallback.so, which calls back into the program)
 *   thread_c:     spin_c vla_frame thread_c
 *                 (vla_frame's stack moves by a run-time amount: its CFA comes from rbp)
 *
 * Every function is noipa, and each call is followed by a use of its result,
 * so there are no tail calls, no clones and no inlining. The driver
 * (tests/integration/record_test.py) holds the same table.
 *
 * Usage: record_chains SECONDS
 */

#define RECURSION_DEPTH 40
#define NOIPA __attribute__((noipa))

static volatile int stop;
static volatile long sink;

/* The hot leaves: volatile arithmetic until told to stop, no calls. */
NOIPA static long spin_recursion(long x)
{
	while (!stop)
		for (int i = 0; i < 1000; i++)
			sink += x ^ i;
	return sink;
}

NOIPA static long spin_a(long x)
{
	while (!stop)
		for (int i = 0; i < 1000; i++)
			sink += x * i;
	return sink;
}

NOIPA static long spin_cb(long x)
{
	while (!stop)
		for (int i = 0; i < 1000; i++)
			sink -= x + i;
	return sink;
}

NOIPA static long spin_c(const char *buf, long n)
{
	while (!stop)
		for (int i = 0; i < 1000; i++)
			sink += buf[i % n];
	return sink;
}

/* main thread: deep direct recursion */
NOIPA static long recurse(int depth, long x)
{
	long r = depth ? recurse(depth - 1, x + 1) : spin_recursion(x);

	sink = r;
	return r + depth;
}

NOIPA static long main_work(long x)
{
	long r = recurse(RECURSION_DEPTH - 1, x);

	sink = r;
	return r;
}

/* thread_a: a plain chain */
NOIPA static long a_inner(long x)
{
	long r = spin_a(x + 3);

	sink = r;
	return r;
}

NOIPA static long a_middle(long x)
{
	long r = a_inner(x * 5);

	sink = r;
	return r;
}

NOIPA static long a_outer(long x)
{
	long r = a_middle(x - 1);

	sink = r;
	return r;
}

NOIPA static void *thread_a(void *arg)
{
	long r = a_outer((long)arg);

	sink = r;
	return NULL;
}

/* thread_b: through libcallback.so and back */
NOIPA long cb_entry(long x)
{
	long r = spin_cb(x);

	sink = r;
	return r;
}

NOIPA static long b_outer(long x)
{
	long r = lib_apply(cb_entry, x);

	sink = r;
	return r;
}

NOIPA static void *thread_b(void *arg)
{
	long r = b_outer((long)arg);

	sink = r;
	return NULL;
}

/* thread_c: a frame of run-time size */
NOIPA static long vla_frame(long n)
{
	char buf[n];
	long r;

	memset(buf, (int)n, sizeof(buf));
	r = spin_c(buf, n);
	sink = r + buf[n - 1];
	return r;
}

NOIPA static void *thread_c(void *arg)
{
	long r = vla_frame(64 + (long)arg);

	sink = r;
	return NULL;
}

/* Not sampled much: it sleeps, then stops the others. */
static void *timer(void *arg)
{
	double secs = *(double *)arg;
	struct timespec ts = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };

	nanosleep(&ts, NULL);
	stop = 1;
	return NULL;
}

int main(int argc, char **argv)
{
	void *(*entries[])(void *) = { thread_a, thread_b, thread_c, timer };
	pthread_t threads[4];
	double secs;
	long r;

	if (argc != 2 || (secs = atof(argv[1])) <= 0) {
		fprintf(stderr, "usage: record_chains SECONDS\n");
		return 2;
	}
	for (int i = 0; i < 4; i++) {
		void *arg = entries[i] == timer ? (void *)&secs : (void *)(long)(i + 1);

		if (pthread_create(&threads[i], NULL, entries[i], arg)) {
			fprintf(stderr, "record_chains: pthread_create failed\n");
			return 1;
		}
	}
	r = main_work(7);
	sink = r;
	for (int i = 0; i < 4; i++)
		pthread_join(threads[i], NULL);
	return 0;
}
