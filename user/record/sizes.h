/* SPDX-License-Identifier: BSD-2-Clause */
/* Sizes the recording commands (record, agent) take and derive: K/M/G arguments, the sample ring. */
#ifndef SFPROF_SIZES_H
#define SFPROF_SIZES_H

#include <stdint.h>

/** parse_size() - a size in bytes, with an optional K, M or G (binary) suffix. @return 0 or -EINVAL. */
int parse_size(const char *arg, uint64_t *bytes);

/** record_ring_bytes() - the sample ring for @max_memory: 1/8 of it, a power of two from 4 to 32 MiB. */
uint32_t record_ring_bytes(uint64_t max_memory);

/**
 * rate_ring_bytes() - the sample ring for a lasting low rate: room for a quarter
 * of a second of @freq_hz samples of the largest size on @ncpus CPUs, a power of
 * two from 1 MiB up to record_ring_bytes(@max_memory). The ring's pages are
 * mapped twice (its wrap), so each byte saved is two of RSS.
 */
uint32_t rate_ring_bytes(uint64_t max_memory, uint32_t freq_hz, unsigned ncpus);

#endif
