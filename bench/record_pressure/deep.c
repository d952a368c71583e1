/* SPDX-License-Identifier: BSD-2-Clause */
/* bench-record-pressure's long-lived load: THREADS threads spinning 200 frames deep, for SECONDS. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;
static double seconds;

__attribute__((noinline)) static unsigned long down(int depth)
{
	unsigned long s = 0;

	if (!depth) {
		for (int i = 0; i < 200000; i++)
			s += (unsigned long)i ^ sink;
		return s;
	}
	s = down(depth - 1) + (unsigned long)depth;
	sink += s;
	return s;
}

static void *run(void *arg)
{
	struct timespec t0, t;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		sink += down(200);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	pthread_t t;

	seconds = argc > 1 ? atof(argv[1]) : 10;
	for (int i = 1; i < threads; i++)
		pthread_create(&t, NULL, run, NULL);
	run(NULL);
	return 0;
}
