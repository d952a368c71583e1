// SPDX-License-Identifier: BSD-2-Clause
/* A freestanding program small enough to fuzz as a whole ELF file. */
__attribute__((noinline)) static long step(long x)
{
	return x * 7 + 3;
}

long counter;

void _start(void)
{
	for (;;)
		counter = step(counter);
}
