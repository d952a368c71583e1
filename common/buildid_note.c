/* SPDX-License-Identifier: BSD-2-Clause */
/* GNU build IDs: the one parser of NT_GNU_BUILD_ID notes and the one hex printer. */
#include <errno.h>
#include <string.h>

#include "buildid_note.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

/* Elf32_Nhdr and Elf64_Nhdr alike: three 4-byte words. */
#define NHDR_SIZE 12

int buildid_note_find(const void *notes, size_t size, size_t align, uint8_t *out, size_t *len)
{
	const uint8_t *p = notes;
	uint64_t a = align == 8 ? 8 : 4, off = 0;

	/* 64-bit sums of 32-bit sizes: none wraps */
	while (off <= size && size - off >= NHDR_SIZE) {
		uint32_t namesz, descsz, type;
		uint64_t name_off = off + NHDR_SIZE, desc_off;

		memcpy(&namesz, p + off, 4);
		memcpy(&descsz, p + off + 4, 4);
		memcpy(&type, p + off + 8, 4);
		desc_off = (name_off + namesz + a - 1) & ~(a - 1);
		if (desc_off > size || descsz > size - desc_off)
			return 0;
		if (type == NT_GNU_BUILD_ID && namesz == sizeof("GNU") &&
		    !memcmp(p + name_off, "GNU", sizeof("GNU")) && descsz >= 2) {
			if (descsz > BUILDID_MAX)
				return -EMSGSIZE;
			memcpy(out, p + desc_off, descsz);
			*len = descsz;
			return 1;
		}
		off = (desc_off + descsz + a - 1) & ~(a - 1);
	}
	return 0;
}

size_t buildid_from_notes(const void *notes, size_t size, size_t align, uint8_t *out)
{
	size_t len = 0;

	return buildid_note_find(notes, size, align, out, &len) == 1 ? len : 0;
}

size_t buildid_hex(char *out, size_t cap, const uint8_t *id, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	size_t n = 0;

	for (size_t i = 0; i < len && n + 2 < cap; i++) {
		out[n++] = digits[id[i] >> 4];
		out[n++] = digits[id[i] & 15];
	}
	if (cap)
		out[n] = '\0';
	return n;
}

void buildid_fput(FILE *f, const uint8_t *id, size_t len)
{
	char hex[2 * BUILDID_MAX + 1];

	/* in pieces: a build ID a user wrote (symbolizer markup) has no bound */
	for (size_t i = 0; i < len; i += BUILDID_MAX) {
		size_t n = len - i < BUILDID_MAX ? len - i : BUILDID_MAX;

		buildid_hex(hex, sizeof(hex), id + i, n);
		fputs(hex, f);
	}
}

