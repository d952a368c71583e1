/* SPDX-License-Identifier: BSD-2-Clause */
/* OTLP/HTTP answers read by field number, every length checked against the end of the body. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "otlp_response.h"

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_I32 = 5 };

/* A bounded reader over bytes that come from the network. */
struct reader {
	const uint8_t *p, *end;
};

/* @return 0, or -EBADMSG when the varint runs past the end or over 10 bytes. */
static int read_varint(struct reader *r, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 70; shift += 7) {
		uint8_t b;

		if (r->p >= r->end)
			return -EBADMSG;
		b = *r->p++;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EBADMSG;
}

/*
 * The next field: its number and wire type, and for a LEN field its bytes
 * (@sub), for a varint its value. @return 1 for a field, 0 at the end, or
 * -EBADMSG.
 */
static int next_field(struct reader *r, uint32_t *num, unsigned *wire, uint64_t *v,
		      struct reader *sub)
{
	uint64_t key, n;

	if (r->p == r->end)
		return 0;
	if (read_varint(r, &key))
		return -EBADMSG;
	*num = key >> 3 > UINT32_MAX ? 0 : (uint32_t)(key >> 3);
	*wire = key & 7;
	if (!*num)
		return -EBADMSG;
	switch (*wire) {
	case WIRE_VARINT:
		return read_varint(r, v) ? -EBADMSG : 1;
	case WIRE_I64:
	case WIRE_I32:
		n = *wire == WIRE_I64 ? 8 : 4;
		if ((size_t)(r->end - r->p) < n)
			return -EBADMSG;
		r->p += n;
		return 1;
	case WIRE_LEN:
		if (read_varint(r, &n) || n > (size_t)(r->end - r->p))
			return -EBADMSG;
		sub->p = r->p;
		sub->end = r->p + n;
		r->p += n;
		return 1;
	default:
		return -EBADMSG;	/* groups (3, 4) are not in these messages */
	}
}

/* A string field's bytes into @out, control characters and NULs as spaces, cut to @cap. */
static void copy_text(const struct reader *s, char *out, size_t cap)
{
	size_t n = (size_t)(s->end - s->p);

	if (!cap)
		return;
	if (n > cap - 1)
		n = cap - 1;
	for (size_t i = 0; i < n; i++)
		out[i] = s->p[i] < 0x20 || s->p[i] == 0x7f ? ' ' : (char)s->p[i];
	out[n] = '\0';
}

static int read_partial(struct reader *r, struct otlp_partial *out)
{
	struct reader sub;
	uint32_t num;
	unsigned wire;
	uint64_t v;
	int ret;

	while ((ret = next_field(r, &num, &wire, &v, &sub)) > 0) {
		if (num == 1 && wire == WIRE_VARINT)
			out->rejected = (int64_t)v;
		else if (num == 2 && wire == WIRE_LEN)
			copy_text(&sub, out->message, sizeof(out->message));
	}
	return ret;
}

int otlp_response_read(const void *buf, size_t len, struct otlp_partial *out)
{
	struct reader r = { buf, (const uint8_t *)buf + len }, sub;
	uint32_t num;
	unsigned wire;
	uint64_t v;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!buf)
		return len ? -EBADMSG : 0;
	while ((ret = next_field(&r, &num, &wire, &v, &sub)) > 0) {
		if (num != 1 || wire != WIRE_LEN)
			continue;
		/* a message given again is merged into the first (protobuf's rule) */
		if ((ret = read_partial(&sub, out)) < 0)
			break;
	}
	if (ret < 0)
		memset(out, 0, sizeof(*out));
	return ret < 0 ? -EBADMSG : 0;
}

int otlp_status_message(const void *buf, size_t len, char *out, size_t cap)
{
	struct reader r = { buf, (const uint8_t *)buf + len }, sub;
	bool found = false;
	uint32_t num;
	unsigned wire;
	uint64_t v;
	int ret;

	if (cap)
		out[0] = '\0';
	if (!buf)
		return len ? -EBADMSG : -ENOENT;
	while ((ret = next_field(&r, &num, &wire, &v, &sub)) > 0) {
		if (num == 2 && wire == WIRE_LEN) {
			copy_text(&sub, out, cap);
			found = true;
		}
	}
	if (ret < 0) {
		if (cap)
			out[0] = '\0';
		return -EBADMSG;
	}
	return found && cap && out[0] ? 0 : -ENOENT;
}
