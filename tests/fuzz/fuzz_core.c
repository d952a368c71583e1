// SPDX-License-Identifier: BSD-2-Clause
/* Fuzz target: a core file as the GDB JIT reader reads one (NT_FILE, NT_PRSTATUS, PT_LOAD). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gdb_jit_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int input_fd = -1;
static struct jit_target *targets[2];

__attribute__((noreturn)) static void broken(const char *what)
{
	fprintf(stderr, "fuzz_core: %s: %s\n", what, strerror(errno));
	abort();
}

/* The reader finds a core through its descriptor: give it one backed by memory. */
static void write_input(const uint8_t *data, size_t size)
{
	size_t done = 0;

	if (input_fd < 0 && (input_fd = memfd_create("fuzz_core", MFD_CLOEXEC)) < 0)
		broken("memfd_create");
	if (ftruncate(input_fd, 0))
		broken("ftruncate");
	while (done < size) {
		ssize_t n = pwrite(input_fd, data + done, size - done, (off_t)done);

		if (n <= 0)
			broken("pwrite");
		done += (size_t)n;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum sfu_arch arches[2] = { SFU_ARCH_X86_64, SFU_ARCH_AARCH64 };

	write_input(data, size);
	for (int i = 0; i < 2; i++) {
		int fd, err;

		/* one target per architecture, kept: its module cache outlives each core, as in GDB */
		if (!targets[i] && !(targets[i] = jit_target__new(arches[i])))
			broken("jit_target__new");
		fd = dup(input_fd);
		if (fd < 0)
			broken("dup");
		err = jit_target__probe_core(targets[i], fd);
		if (err > 0 || (err && err != -ENOEXEC && err != -EBADMSG && err != -ENOMEM &&
				err != -ENOTSUP)) {
			fprintf(stderr, "fuzz_core: unexpected result %d\n", err);
			abort();
		}
	}
	return 0;
}
