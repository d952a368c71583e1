// SPDX-License-Identifier: BSD-2-Clause
/*
 * Work split between two functions by CPU time, for sfprof diff and
 * export --diff: `diff_work A B` spends A ms of its thread's CPU time in
 * work_a, then B ms in work_b, both called from main; each spins in its own
 * loop, so the self time of each is its budget by construction.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

__attribute__((noinline)) void work_a(uint64_t ms)
{
	uint64_t end = cpu_ns() + ms * 1000000u;

	/* the clock is a system call: read it rarely, so the time stays here */
	do {
		for (unsigned i = 0; i < 200000; i++)
			sink += i;
	} while (cpu_ns() < end);
}

__attribute__((noinline)) void work_b(uint64_t ms)
{
	uint64_t end = cpu_ns() + ms * 1000000u;

	do {
		for (unsigned i = 0; i < 200000; i++)
			sink ^= i;
	} while (cpu_ns() < end);
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	work_a(strtoull(argv[1], NULL, 0));
	work_b(strtoull(argv[2], NULL, 0));
	return 0;
}
