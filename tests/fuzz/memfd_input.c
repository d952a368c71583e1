/* SPDX-License-Identifier: BSD-2-Clause */
/* A fuzz input as a file the code under test opens by path, backed by memory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memfd_input.h"

static void fail(const char *name, const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", name, what, err ? strerror(err) : "short write");
	abort();
}

const char *memfd_input(const char *name, const uint8_t *data, size_t size)
{
	static char path[64];
	static int fd = -1;
	size_t done = 0;

	if (fd < 0) {
		fd = memfd_create(name, MFD_CLOEXEC);
		if (fd < 0)
			fail(name, "memfd_create", errno);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0))
		fail(name, "ftruncate", errno);
	while (done < size) {
		ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);

		if (n <= 0)
			fail(name, "pwrite", n ? errno : 0);
		done += (size_t)n;
	}
	return path;
}
