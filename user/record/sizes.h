/* SPDX-License-Identifier: BSD-2-Clause */
/* Sizes the recording commands (record, agent) take and derive: K/M/G arguments, the sample ring. */
#ifndef SFPROF_SIZES_H
#define SFPROF_SIZES_H

#include <stdint.h>

/** parse_size() - a size in bytes, with an optional K, M or G (binary) suffix. @return 0 or -EINVAL. */
int parse_size(const char *arg, uint64_t *bytes);

/** record_ring_bytes() - the sample ring for @max_memory: 1/8 of it, a power of two from 4 to 32 MiB. */
uint32_t record_ring_bytes(uint64_t max_memory);

#endif
