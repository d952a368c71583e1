/* SPDX-License-Identifier: BSD-2-Clause */
/* Sizes the recording commands take and derive. */
#include <errno.h>
#include <stdlib.h>

#include "sizes.h"

/* A size in bytes, with an optional K, M or G (binary) suffix. @return 0 or -EINVAL. */
int parse_size(const char *arg, uint64_t *bytes)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (end == arg || errno || arg[0] == '-')
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*bytes = (uint64_t)v << shift;
	return 0;
}

/* The sample ring: 1/8 of --max-memory, a power of two from 4 to 32 MiB. */
uint32_t record_ring_bytes(uint64_t max_memory)
{
	uint32_t bytes = 32u << 20;

	while (bytes > (4u << 20) && bytes > max_memory / 8)
		bytes >>= 1;
	return bytes;
}

/*
 * The reader polls every 100 ms and is woken when the ring is half full, so a
 * quarter of a second of samples at the largest copy (64 KiB of user stack,
 * the kernel stack and the header) is room to spare.
 */
#define SAMPLE_MAX_BYTES	(66u << 10)
#define RING_SECS_DIV		4
#define RING_MIN_BYTES		(1u << 20)

uint32_t rate_ring_bytes(uint64_t max_memory, uint32_t freq_hz, unsigned ncpus)
{
	uint32_t cap = record_ring_bytes(max_memory), bytes = RING_MIN_BYTES;
	uint64_t need = (uint64_t)freq_hz * ncpus * SAMPLE_MAX_BYTES / RING_SECS_DIV;

	while (bytes < cap && bytes < need)
		bytes <<= 1;
	return bytes;
}
