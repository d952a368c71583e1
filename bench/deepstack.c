/* SPDX-License-Identifier: BSD-2-Clause */
/* Workload of scripts/bench-report: CPU-bound threads at the bottom of deep call chains. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"usage: deepstack SECONDS [THREADS]\n"
	"\n"
	"Runs THREADS threads (default: one per online CPU) for SECONDS seconds. Each\n"
	"thread goes down call chains 30 to 120 frames deep through nine functions\n"
	"(indirect recursion, chosen by a fixed pseudo-random sequence) and\n"
	"spins at the bottom for about a millisecond: the stacks of bench_storage's\n"
	"synthetic recording, in a real program, for profilers to record and report.\n";

#define NOIPA __attribute__((noipa))
#define NFUNCS 8

static volatile int stop;
static volatile uint64_t sink;

typedef uint64_t (*step_fn)(uint64_t seed, int depth);

static step_fn steps[NFUNCS];

NOIPA static uint64_t leaf(uint64_t seed)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 20000; i++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 1000000L);
	return seed;
}

/* The next function of a chain: the seed's bits pick it, so chains vary but repeat. */
NOIPA static uint64_t down(uint64_t seed, int depth)
{
	if (!depth)
		return leaf(seed);
	return steps[(seed >> (depth % 61)) % NFUNCS](seed, depth - 1) + 1;
}

#define STEP(n)                                                    \
	NOIPA static uint64_t step##n(uint64_t seed, int depth)   \
	{                                                          \
		volatile char frame[16 + 8 * n];                   \
		frame[0] = (char)seed;                             \
		return down(seed * 0x9e3779b97f4a7c15ull + n, depth) ^ frame[0]; \
	}
STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7)

static void *work(void *arg)
{
	uint64_t seed = (uintptr_t)arg * 0x2545f4914f6cdd1dull + 1, sum = 0;

	while (!stop) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		sum += down(seed, 15 + seed % 46);	/* 30 to 120 frames of down and step */
	}
	sink = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t threads[256];
	long nthreads = sysconf(_SC_NPROCESSORS_ONLN);
	double secs;

	if (argc < 2 || argc > 3 || (secs = atof(argv[1])) <= 0 ||
	    (argc == 3 && (nthreads = atol(argv[2])) <= 0)) {
		fputs(usage, stderr);
		return 2;
	}
	if (nthreads > 256)
		nthreads = 256;
	memcpy(steps, (step_fn[]){ step0, step1, step2, step3, step4, step5, step6, step7 },
	       sizeof(steps));
	for (long i = 0; i < nthreads; i++)
		if (pthread_create(&threads[i], NULL, work, (void *)(uintptr_t)(i + 1))) {
			perror("deepstack: pthread_create");
			return 1;
		}
	{
		struct timespec ts = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };

		nanosleep(&ts, NULL);
	}
	stop = 1;
	for (long i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	return 0;
}
