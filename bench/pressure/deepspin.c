/* SPDX-License-Identifier: BSD-2-Clause */
/* Workload of scripts/bench-pressure: long-lived threads spinning at the bottom of a 200-frame recursion. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"usage: pressure_deep SECONDS [THREADS [DEPTH]]\n"
	"\n"
	"Runs THREADS threads (default: one per online CPU) for SECONDS seconds. Each\n"
	"goes down DEPTH frames (default 200) of one recursive function with a 64-byte\n"
	"block on the stack of each frame (about 20 KiB of stack at 200, more than the\n"
	"8 KiB perf --call-graph dwarf copies), spins at the bottom for about 50 ms, and\n"
	"climbs back up to go down again: nearly every sample lands 200 frames deep.\n"
	"It stops by itself at the deadline, whatever becomes of whoever started it.\n";

#define NOIPA __attribute__((noipa))

static volatile int stop;
static volatile uint64_t sink;
static int depth = 200;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

NOIPA static uint64_t spin(uint64_t seed)
{
	double t0 = now();

	do {
		for (int i = 0; i < 20000; i++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
		}
	} while (!stop && now() - t0 < 0.05);
	return seed;
}

/* Work after the call keeps it a call: no tail call, no loop. */
NOIPA static uint64_t down(uint64_t seed, int level)
{
	volatile char block[64];

	block[level % 64] = (char)seed;
	if (!level)
		return spin(seed);
	return down(seed + 1, level - 1) ^ block[level % 64];
}

static void *work(void *arg)
{
	uint64_t seed = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;

	while (!stop)
		seed += down(seed, depth - 1);
	sink = seed;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t threads[256];
	long nthreads = sysconf(_SC_NPROCESSORS_ONLN);
	double secs, end;

	if (argc < 2 || argc > 4 || (secs = atof(argv[1])) <= 0 ||
	    (argc > 2 && (nthreads = atol(argv[2])) <= 0) ||
	    (argc > 3 && (depth = atoi(argv[3])) <= 0)) {
		fputs(usage, stderr);
		return 2;
	}
	if (nthreads > 256)
		nthreads = 256;
	for (long i = 0; i < nthreads; i++)
		if (pthread_create(&threads[i], NULL, work, (void *)(uintptr_t)(i + 1))) {
			perror("pressure_deep: pthread_create");
			return 1;
		}
	end = now() + secs;
	while (now() < end) {
		double left = end - now();
		struct timespec ts = { (time_t)left, (long)((left - (time_t)left) * 1e9) };

		nanosleep(&ts, NULL);
	}
	stop = 1;
	for (long i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	return 0;
}
