// SPDX-License-Identifier: BSD-2-Clause
/* A CPU-bound program with a few levels of calls, for sfprof to read and profile. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

/* FNV-1a over a buffer: a leaf with a tight loop. */
NOINLINE static uint64_t hash_block(const uint8_t *buf, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ buf[i]) * 0x100000001b3ULL;
	return h;
}

/* A recursive leaf: deep stacks for the unwinder. */
NOINLINE static uint64_t fib(unsigned n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

/* A frame big enough to need wide SFrame offsets. */
NOINLINE static uint64_t fill_and_hash(unsigned seed)
{
	uint8_t block[8192];

	for (size_t i = 0; i < sizeof(block); i++)
		block[i] = (uint8_t)(seed * 31 + i);
	return hash_block(block, sizeof(block));
}

NOINLINE static uint64_t middle(unsigned round)
{
	return fill_and_hash(round) ^ fib(18 + round % 4);
}

NOINLINE static uint64_t outer(unsigned round)
{
	uint64_t acc = 0;

	for (unsigned i = 0; i < 8; i++)
		acc += middle(round + i);
	return acc;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? strtod(argv[1], NULL) : 1.0;
	double end = now() + seconds;
	unsigned rounds = 0;

	do
		sink += outer(rounds++);
	while (now() < end);
	printf("workload: %u rounds in %.2f s\n", rounds, seconds);
	return 0;
}
