/* SPDX-License-Identifier: BSD-2-Clause */
/* A fuzz input as a profile file the readers open by path: a file as it is, or records wrapped into one. */
#ifndef SFPROF_FUZZ_PROFILE_INPUT_H
#define SFPROF_FUZZ_PROFILE_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct profile_input {
	char path[256];		/* what to open */
	size_t size;		/* the file's size */
	int fd;
	bool named;		/* a temporary file (no /proc): unlinked at close */
};

/**
 * profile_input__open() - hand @data to a reader: as it is when it starts
 * with the file magic, else as the records of one block, wrapped in a header,
 * a block and a trailer so that mutations reach the record decoder rather
 * than stop at the zstd checksum.
 * @return 0, or -1 when the file cannot be made (no memory, no temporary file).
 */
int profile_input__open(struct profile_input *in, const uint8_t *data, size_t size);

/** profile_input__close() - close, and unlink a temporary file. */
void profile_input__close(struct profile_input *in);

#endif
