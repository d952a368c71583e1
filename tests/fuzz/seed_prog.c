// SPDX-License-Identifier: BSD-2-Clause
/* Source of the fuzz seeds built at check time: frame shapes that give varied SFrame rows. */
#include <alloca.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

volatile int sink;

NOINLINE int leaf(int x)
{
	return x * 3 + 1;
}

/* alloca forces a frame pointer: the CFA moves from SP to FP. */
NOINLINE int dynamic_frame(int n)
{
	char *buf = alloca((size_t)n + 16);

	memset(buf, n, (size_t)n + 16);
	return leaf(buf[n]);
}

/* Frames past 127 and 32767 bytes need 2- and 4-byte FRE offsets. */
NOINLINE int medium_frame(int n)
{
	volatile char buf[1000];

	buf[n % 1000] = (char)n;
	return dynamic_frame(buf[n % 1000] & 7) + buf[0];
}

NOINLINE int large_frame(int n)
{
	volatile char buf[70000];

	buf[n % 70000] = (char)n;
	return medium_frame(buf[n % 70000] & 63);
}

NOINLINE int sum(int count, ...)
{
	va_list ap;
	int total = 0;

	va_start(ap, count);
	for (int i = 0; i < count; i++)
		total += va_arg(ap, int);
	va_end(ap);
	return total;
}

NOINLINE int recurse(int depth)
{
	if (depth <= 0)
		return large_frame(depth + 5);
	return recurse(depth - 1) + sum(3, depth, depth, depth);
}

NOINLINE __attribute__((noreturn)) void die(int code)
{
	sink = code;
	exit(code);
}

int main(int argc, char **argv)
{
	(void)argv;
	sink = recurse(argc + 2);
	if (sink == 12345)
		die(3);
	return 0;
}
