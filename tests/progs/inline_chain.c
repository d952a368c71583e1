// SPDX-License-Identifier: BSD-2-Clause
/*
 * Inlined chains known by construction, for inlined frames in report,
 * script and the exports: built -O2 -g, `inline_chain MS` spends MS ms of
 * its CPU time in inline_work's loop, where mix_leaf is inlined into
 * mix_middle, inlined into mix_outer, inlined into inline_work; and
 * inline_work is called from step_caller, inlined into inline_driver, so
 * that the callers' return addresses have an inlined chain too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))

static volatile uint64_t sink;

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

ALWAYS_INLINE uint64_t mix_leaf(uint64_t x, unsigned i)
{
	/* the hot loop: most samples land here, three inlined levels deep */
	for (unsigned k = 0; k < 64; k++)
		x = x * 6364136223846793005ull + (i ^ k);
	return x;
}

ALWAYS_INLINE uint64_t mix_middle(uint64_t x, unsigned i)
{
	x = mix_leaf(x, i);
	return x ^ (x >> 17);
}

ALWAYS_INLINE uint64_t mix_outer(uint64_t x, unsigned i)
{
	x = mix_middle(x, i + 1);
	return x + i;
}

__attribute__((noinline)) uint64_t inline_work(uint64_t seed, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		seed = mix_outer(seed, i);
	return seed;
}

ALWAYS_INLINE uint64_t step_caller(uint64_t seed, unsigned n)
{
	/* the call is inlined code: its return address has a chain of its own */
	uint64_t r = inline_work(seed, n);

	sink += r;
	return r;
}

__attribute__((noinline)) void inline_driver(uint64_t ms)
{
	uint64_t end = cpu_ns() + ms * 1000000u, seed = 1;

	/* the clock is a system call: read it rarely, so the time stays in the loop */
	do {
		seed = step_caller(seed, 20000);
	} while (cpu_ns() < end);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	inline_driver(strtoull(argv[1], NULL, 0));
	return 0;
}
