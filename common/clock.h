/* SPDX-License-Identifier: BSD-2-Clause */
/* The one clock reading of user/: a clock's time in nanoseconds. */
#ifndef SFPROF_CLOCK_H
#define SFPROF_CLOCK_H

#include <stdint.h>
#include <time.h>

/*
 * Inline, not in a .c: the record path reads it per batch, and every unit
 * test and fuzz target that compiles a file of user/ by its own list of
 * sources gets it without naming one more file.
 */

/** clock_ns() - the time of clock @clk in ns. @return it (0 when @clk is not a clock). */
static inline uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	if (clock_gettime(clk, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/** clock_mono_ns() - CLOCK_MONOTONIC in ns: intervals and deadlines. @return it. */
static inline uint64_t clock_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/** clock_real_ns() - CLOCK_REALTIME in ns: wall-clock times stored in files. @return it. */
static inline uint64_t clock_real_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

#endif
