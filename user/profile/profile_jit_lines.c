/* SPDX-License-Identifier: BSD-2-Clause */
/* The source lines of a jit record (docs/FORMAT.md): entries of offset, line and file, read and written. */
#include <errno.h>
#include <string.h>

#include "profile.h"

static bool get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

int profile_jit_line__next(const uint8_t **p, const uint8_t *end, struct profile_jit_line *out)
{
	uint64_t len;

	if (*p >= end)
		return 0;
	if (!get_varint(p, end, &out->offset) || !get_varint(p, end, &out->line) ||
	    !get_varint(p, end, &len) || len > (uint64_t)(end - *p))
		return -EBADMSG;
	out->file = len ? (const char *)*p : NULL;
	out->file_len = (size_t)len;
	*p += len;
	return 1;
}

static void put_varint(uint8_t *buf, size_t *len, uint64_t v)
{
	do {
		buf[(*len)++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

size_t profile_jit_line__put(uint8_t *buf, const struct profile_jit_line *in)
{
	size_t len = 0;

	put_varint(buf, &len, in->offset);
	put_varint(buf, &len, in->line);
	put_varint(buf, &len, in->file ? in->file_len : 0);
	if (in->file && in->file_len)
		memcpy(buf + len, in->file, in->file_len);
	return len + (in->file ? in->file_len : 0);
}
