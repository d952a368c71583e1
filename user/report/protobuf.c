/* SPDX-License-Identifier: BSD-2-Clause */
/* Protocol buffers written by hand, shared by the pprof and OTLP exporters. */
#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "protobuf.h"
#include "util/text.h"

bool pb_write(const struct pb *b, FILE *out)
{
	/* an empty buffer has no bytes, nor perhaps a pointer: fwrite() wants one */
	return !b->len || fwrite(b->p, 1, b->len, out) == b->len;
}

void pb_raw(struct pb *b, const void *data, size_t n)
{
	if (b->oom || !n)
		return;
	if (VEC_RESERVE(b->p, b->cap, b->len + n, 256)) {
		b->oom = true;
		return;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t buf[10];
	size_t n = 0;

	do {
		buf[n++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	pb_raw(b, buf, n);
}

void pb_uint(struct pb *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_uint_always(b, field, v);
}

void pb_uint_always(struct pb *b, unsigned field, uint64_t v)
{
	pb_varint(b, field << 3 | PB_WIRE_VARINT);
	pb_varint(b, v);
}

void pb_fixed64(struct pb *b, unsigned field, uint64_t v)
{
	uint8_t le[8];

	if (!v)
		return;
	for (int i = 0; i < 8; i++)
		le[i] = v >> (8 * i);
	pb_varint(b, field << 3 | PB_WIRE_I64);
	pb_raw(b, le, sizeof(le));
}

void pb_bytes(struct pb *b, unsigned field, const void *data, size_t n)
{
	pb_varint(b, field << 3 | PB_WIRE_LEN);
	pb_varint(b, n);
	pb_raw(b, data, n);
}

void pb_msg(struct pb *b, unsigned field, struct pb *sub)
{
	pb_bytes(b, field, sub->p, sub->len);
	b->oom |= sub->oom;
	sub->len = 0;
	sub->oom = false;
}

void pb_release(struct pb *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

uint64_t pb_string_id(struct strtab *t, const char *s, bool *oom)
{
	char buf[256], *heap = NULL;
	const char *shown = s ? s : "";
	int64_t id;

	if (!text_clean(shown, 0)) {
		size_t n = text_escape(buf, sizeof(buf), shown, 0);

		if (n >= sizeof(buf) && !(heap = text_dup(shown, 0))) {
			*oom = true;
			return 0;
		}
		shown = heap ? heap : buf;
	}
	id = strtab__intern(t, shown, strlen(shown));
	free(heap);
	if (id < 0) {
		*oom = true;
		return 0;
	}
	return id;
}
