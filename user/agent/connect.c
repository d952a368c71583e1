/* SPDX-License-Identifier: BSD-2-Clause */
/* Pyroscope's push API over the connect protocol: PushRequest encoding, labels, the URL, error bodies read. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect.h"

#define WIRE_LEN 2

size_t connect_labels(const struct service *sv, const char *host, char hostbuf[128],
		      struct connect_label out[CONNECT_MAX_LABELS])
{
	size_t n = 0, i = 0;

	/* as service_query() cleans it: the two APIs give a series the same labels */
	for (; host && host[i] && i + 1 < 128; i++)
		hostbuf[i] = isalnum((unsigned char)host[i]) || strchr("._-/:", host[i]) ? host[i] : '_';
	hostbuf[i] = '\0';
	out[n++] = (struct connect_label){ "__name__", "process_cpu" };
	out[n++] = (struct connect_label){ "service_name", sv->name };
	out[n++] = (struct connect_label){ "host", hostbuf };
	if (sv->container_id[0])
		out[n++] = (struct connect_label){ "container_id", sv->container_id };
	if (sv->pod_uid[0])
		out[n++] = (struct connect_label){ "pod_uid", sv->pod_uid };
	if (sv->exe[0])
		out[n++] = (struct connect_label){ "exe", sv->exe };
	if (sv->script[0])
		out[n++] = (struct connect_label){ "script", sv->script };
	if (sv->module[0])
		out[n++] = (struct connect_label){ "module", sv->module };
	out[n++] = (struct connect_label){ "pyroscope_spy", "sfprof" };
	return n;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* A length-delimited field of @len bytes: its tag, length and bytes. */
static size_t field_len(size_t len)
{
	return 1 + varint_len(len) + len;
}

static void put_varint(struct connect_request *r, uint64_t v)
{
	while (v >= 0x80) {
		r->buf[r->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	r->buf[r->len++] = (uint8_t)v;
}

/* The tag and length of field @field (fields 1 and 2 only: one byte of tag). */
static void put_head(struct connect_request *r, unsigned field, size_t len)
{
	r->buf[r->len++] = (uint8_t)(field << 3 | WIRE_LEN);
	put_varint(r, len);
}

static void put_bytes(struct connect_request *r, unsigned field, const void *data, size_t len)
{
	put_head(r, field, len);
	memcpy(r->buf + r->len, data, len);
	r->len += len;
}

int connect_request__add(struct connect_request *r, const struct connect_label *labels, size_t n,
			 const void *pprof, size_t len)
{
	size_t series = 0, sample = field_len(len), need;

	for (size_t i = 0; i < n; i++)
		series += field_len(field_len(strlen(labels[i].name)) +
				    field_len(strlen(labels[i].value)));
	series += field_len(sample);
	need = field_len(series);
	if (r->cap - r->len < need) {
		size_t cap = r->cap ? r->cap : 4096;
		uint8_t *b;

		while (cap - r->len < need)
			cap *= 2;
		b = realloc(r->buf, cap);
		if (!b)
			return -ENOMEM;
		r->buf = b;
		r->cap = cap;
	}
	put_head(r, 1, series);
	for (size_t i = 0; i < n; i++) {
		size_t nl = strlen(labels[i].name), vl = strlen(labels[i].value);

		put_head(r, 1, field_len(nl) + field_len(vl));
		put_bytes(r, 1, labels[i].name, nl);
		put_bytes(r, 2, labels[i].value, vl);
	}
	put_head(r, 2, sample);
	put_bytes(r, 1, pprof, len);
	r->nseries++;
	return 0;
}

void connect_request__release(struct connect_request *r)
{
	free(r->buf);
	*r = (struct connect_request){ 0 };
}

char *connect_url(const char *base)
{
	size_t n = strlen(base), pl = strlen(CONNECT_PUSH_PATH);
	char *url;

	if (n >= pl && !strcmp(base + n - pl, CONNECT_PUSH_PATH))
		return strdup(base);
	while (n && base[n - 1] == '/')
		n--;
	url = malloc(n + pl + 1);
	if (!url)
		return NULL;
	memcpy(url, base, n);
	memcpy(url + n, CONNECT_PUSH_PATH, pl + 1);
	return url;
}

/* --- the error body: a JSON object, read as far as its code and message --- */

struct json {
	const char *s, *end;
};

static void skip_ws(struct json *j)
{
	while (j->s < j->end && (*j->s == ' ' || *j->s == '\t' || *j->s == '\n' || *j->s == '\r'))
		j->s++;
}

static int hex4(const char *s, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		int c = (unsigned char)s[i];

		if (!isxdigit(c))
			return -EBADMSG;
		*v = *v << 4 | (unsigned)(isdigit(c) ? c - '0' : tolower(c) - 'a' + 10);
	}
	return 0;
}

/*
 * A string at j->s (its opening quote): decoded into @out (NULL: skipped),
 * control characters and non-ASCII escapes as spaces and '?', cut to @cap.
 */
static int json_string(struct json *j, char *out, size_t cap)
{
	size_t n = 0;

	if (j->s >= j->end || *j->s != '"')
		return -EBADMSG;
	for (j->s++; j->s < j->end; j->s++) {
		unsigned char c = (unsigned char)*j->s;
		unsigned v;

		if (c == '"') {
			j->s++;
			if (out && cap)
				out[n < cap ? n : cap - 1] = '\0';
			return 0;
		}
		if (c == '\\') {
			if (j->end - j->s < 2)
				return -EBADMSG;
			c = (unsigned char)*++j->s;
			switch (c) {
			case '"': case '\\': case '/':
				break;
			case 'b': case 'f': case 'n': case 'r': case 't':
				c = ' ';
				break;
			case 'u':
				if (j->end - j->s < 5 || hex4(j->s + 1, &v))
					return -EBADMSG;
				j->s += 4;
				c = v >= 0x20 && v < 0x7f ? (unsigned char)v : v < 0x20 ? ' ' : '?';
				break;
			default:
				return -EBADMSG;
			}
		} else if (c < 0x20) {
			c = ' ';
		}
		if (out && n + 1 < cap)
			out[n++] = (char)c;
	}
	return -EBADMSG;
}

static bool scalar_char(char c)
{
	return c && (isalnum((unsigned char)c) || strchr("+-.", c));
}

/* Any value, skipped: a scalar whole, objects and arrays by their depth (strings with their escapes). */
static int json_skip(struct json *j)
{
	size_t depth = 0;

	skip_ws(j);
	if (j->s >= j->end)
		return -EBADMSG;
	if (scalar_char(*j->s)) {
		while (j->s < j->end && scalar_char(*j->s))
			j->s++;
		return 0;
	}
	if (*j->s == '"')
		return json_string(j, NULL, 0);
	if (*j->s != '{' && *j->s != '[')
		return -EBADMSG;
	while (j->s < j->end) {
		char c = *j->s;

		if (c == '"') {
			if (json_string(j, NULL, 0))
				return -EBADMSG;
			continue;
		}
		j->s++;
		if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && !--depth)
			return 0;
	}
	return -EBADMSG;
}

int connect_error_message(const char *body, size_t len, char *out, size_t cap)
{
	struct json j = { body, body + len };
	char code[64] = "", msg[512] = "";

	if (cap)
		out[0] = '\0';
	skip_ws(&j);
	if (j.s >= j.end || *j.s != '{')
		return -EBADMSG;
	j.s++;
	skip_ws(&j);
	if (j.s < j.end && *j.s == '}')
		goto done;
	for (;;) {
		char key[16];
		int err;

		skip_ws(&j);
		if (json_string(&j, key, sizeof(key)))
			return -EBADMSG;
		skip_ws(&j);
		if (j.s >= j.end || *j.s != ':')
			return -EBADMSG;
		j.s++;
		skip_ws(&j);
		if (j.s < j.end && *j.s == '"' && (!strcmp(key, "code") || !strcmp(key, "message")))
			err = json_string(&j, !strcmp(key, "code") ? code : msg,
					  !strcmp(key, "code") ? sizeof(code) : sizeof(msg));
		else
			err = json_skip(&j);
		if (err)
			return err;
		skip_ws(&j);
		if (j.s < j.end && *j.s == ',') {
			j.s++;
			continue;
		}
		if (j.s < j.end && *j.s == '}')
			break;
		return -EBADMSG;
	}
done:
	if (!code[0] && !msg[0])
		return -ENOENT;
	if (cap)
		snprintf(out, cap, "%s%s%s", code, code[0] && msg[0] ? ": " : "", msg);
	return 0;
}
