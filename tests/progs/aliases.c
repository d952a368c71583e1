// SPDX-License-Identifier: BSD-2-Clause
/*
 * One hot function under several names, for naming as perf does: the
 * function is spin_impl (static: a local symbol, and the DWARF name with
 * -g); spin_work and __spin_work are global aliases, spin_weak a weak one.
 * perf's loader keeps spin_work (global, fewest leading underscores); with
 * DWARF perf's output shows spin_impl.
 */
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline, used)) static void spin_impl(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i;
}

void spin_work(unsigned long n) __attribute__((alias("spin_impl")));
void __spin_work(unsigned long n) __attribute__((alias("spin_impl")));
void spin_weak(unsigned long n) __attribute__((weak, alias("spin_impl")));

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 300000000;

	__spin_work(n);
	return 0;
}
