/* SPDX-License-Identifier: BSD-2-Clause */
/* A fuzz input as a file the code under test opens by path, backed by memory. */
#ifndef SFPROF_FUZZ_MEMFD_INPUT_H
#define SFPROF_FUZZ_MEMFD_INPUT_H

#include <stddef.h>
#include <stdint.h>

/**
 * memfd_input() - write @data to this process's one memory file (made at
 * the first call, named @name) in place of what it held.
 * @return its path, /proc/self/fd/N; aborts when the file cannot be written.
 */
const char *memfd_input(const char *name, const uint8_t *data, size_t size);

#endif
