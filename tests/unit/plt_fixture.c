/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A program calling libc through its PLT (test_symbolize): built as is, with
 * an IBT PLT (.plt.sec) and for AArch64 when a cross compiler is there, its
 * stubs named by sfprof as objdump labels them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
	struct timespec ts;
	char buf[64];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(buf, sizeof(buf), "%s %ld", argv[0], (long)ts.tv_nsec);
	if (argc > 1 && strlen(buf) > strtoul(argv[1], NULL, 10))
		puts(buf);
	return (int)(ts.tv_sec & 1);
}
