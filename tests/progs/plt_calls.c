/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof report test program: a hot loop calling libc through the program's PLT stubs. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * Built with -fno-builtin: each strlen() and labs() is a call to
 * strlen@plt and labs@plt, whose stubs hold a share of the samples that
 * sfprof names as objdump labels them (tests/integration/report_test.py).
 *
 * Usage: plt_calls SECONDS
 */

#define NOIPA __attribute__((noipa))

static volatile long sink;
static char text[] = "a short string";

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

NOIPA static long plt_loop(void)
{
	long n = 0;

	for (int i = 0; i < 100000; i++)
		n += (long)strlen(text + (i & 7)) + labs(i - 50000);
	return n;
}

int main(int argc, char **argv)
{
	long end = now_ms() + 1000 * (argc > 1 ? atol(argv[1]) : 2);

	while (now_ms() < end)
		sink += plt_loop();
	return 0;
}
