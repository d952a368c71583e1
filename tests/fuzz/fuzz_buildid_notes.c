// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: ELF notes as the one build-ID note parser reads them
 * (buildid_from_notes(), user/buildid/buildid_read.c): a PT_NOTE segment,
 * /sys/kernel/notes. Byte 0 picks the alignment (bit 0: 8, else 4) and
 * whether the rest is read as a whole ELF file through buildid_read()
 * (bit 1); the rest is the input. The contract: a length of 0 or 2 to
 * BUILDID_MAX, the ID found a run of the input's bytes, the same input
 * giving the same answer.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildid/buildid.h"
#include "memfd_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_buildid_notes: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static void check(const uint8_t *in, size_t size, const uint8_t *id, size_t len, const char *who)
{
	if (len == 1 || len > BUILDID_MAX)
		broken("%s: a build ID of %zu bytes", who, len);
	if (len && !memmem(in, size, id, len))
		broken("%s: %zu bytes found that the input does not hold", who, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t id[BUILDID_MAX], again[BUILDID_MAX];
	size_t align, len, n;
	uint8_t *notes;

	if (!size)
		return 0;
	align = data[0] & 1 ? 8 : 4;
	n = size - 1;
	/* exactly n bytes on the heap: a read past them is the sanitizer's to see */
	notes = malloc(n ? n : 1);
	if (!notes)
		return 0;
	memcpy(notes, data + 1, n);
	len = buildid_from_notes(notes, n, align, id);
	check(data + 1, n, id, len, "buildid_from_notes");
	if (buildid_from_notes(notes, n, align, again) != len || memcmp(id, again, len))
		broken("buildid_from_notes: another answer for the same input");
	free(notes);
	if (data[0] & 2) {
		int fd = open(memfd_input("buildid_notes", data + 1, n), O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			broken("memfd: cannot open");
		len = buildid_read(fd, id);
		close(fd);
		check(data + 1, n, id, len, "buildid_read");
	}
	return 0;
}
