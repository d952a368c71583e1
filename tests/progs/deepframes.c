/* SPDX-License-Identifier: BSD-2-Clause */
/* record-pressure's program: one thread whose stack is 40 KiB deep most of the time, 4 KiB otherwise. */
#include <stdlib.h>
#include <time.h>

#define NOIPA __attribute__((noipa))

static volatile unsigned long sink;

/* About 230 bytes of stack a frame: 180 frames are past 40 KiB. */
NOIPA static unsigned long df_down(int depth, int spins)
{
	volatile char pad[200];
	unsigned long s = 0;

	pad[0] = (char)depth;
	if (depth == 0) {
		for (int i = 0; i < spins; i++)
			s += (unsigned long)i ^ sink;
		return s + pad[0];
	}
	s = df_down(depth - 1, spins) + pad[0];
	sink += s;
	return s;
}

NOIPA static void df_loop(double seconds)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		sink += df_down(180, 200000);
		sink += df_down(15, 20000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

int main(int argc, char **argv)
{
	df_loop(argc > 1 ? atof(argv[1]) : 3.0);
	return 0;
}
