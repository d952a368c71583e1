/* SPDX-License-Identifier: BSD-2-Clause */
/* A CPU-bound program with a known chain (agent_leaf <- agent_mid <- main) for SECONDS (argv[1]). */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void agent_leaf(void)
{
	for (int i = 0; i < 100000; i++)
		sink += (unsigned long)i * 2654435761u;
}

__attribute__((noinline)) static void agent_mid(void)
{
	agent_leaf();
	sink++;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		agent_mid();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
