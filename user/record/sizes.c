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
