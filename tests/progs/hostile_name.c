/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A process that names itself as an attacker would: its comm holds a line
 * break, a tab, a fake frame line and the terminal escape that clears the
 * screen. tests/integration/hostile_text.py also renames hot_spin in the
 * binary (objcopy) and runs it from a path with control bytes and bytes that
 * are not UTF-8, so that every string a profile holds is hostile.
 *
 * usage: hostile_name SECONDS   (0: only print hot_spin's address and exit)
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

/* the source file's name, as DWARF gives it to pprof's Function.filename */
#line 20 "hostile\x1b[2J\xff\n\tfff.c"

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void hot_spin(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * i;
}

__attribute__((noinline)) void hot_caller(double end)
{
	while (now() < end)
		hot_spin(100000);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1;

	/* 16 bytes: the kernel keeps 15, the 'J' is cut */
	if (prctl(PR_SET_NAME, "x\n\tfff main\n\x1b[2J", 0, 0, 0)) {
		perror("prctl");
		return 1;
	}
	hot_caller(now() + seconds);
	return 0;
}
