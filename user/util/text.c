/* SPDX-License-Identifier: BSD-2-Clause */
/* The escaping rule of text.h: a byte table for the common case, UTF-8 checked where it matters. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

/* Bytes that always need a look (controls, backslash, non-ASCII); the flags that add the rest. */
#define ALWAYS 0x80

static const uint8_t special[256] = {
	[0x00 ... 0x1f] = ALWAYS,
	['\\'] = ALWAYS,
	[0x7f ... 0xff] = ALWAYS,
	['"'] = TEXT_QUOTED | TEXT_XML,
	[';'] = TEXT_FOLDED,
	['{'] = TEXT_MARKUP | TEXT_FIELD,
	['}'] = TEXT_MARKUP | TEXT_FIELD,
	[':'] = TEXT_FIELD,
	['&'] = TEXT_XML,
	['<'] = TEXT_XML,
	['>'] = TEXT_XML,
	['\''] = TEXT_XML,
};

/* What one character at a special byte becomes. */
struct unit {
	size_t len;		/* bytes of the input it takes */
	char esc[8];		/* what is written instead, NUL-terminated; "" when they pass */
	size_t esc_len;
	size_t width;		/* characters shown */
};

static const char hex[] = "0123456789abcdef";

/*
 * The length of the well-formed UTF-8 sequence at @s (the Unicode Standard's
 * table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF) and its
 * code point in @cp; 0 when there is none. A NUL ends the check, so nothing
 * past the string is read.
 */
static size_t utf8_seq(const unsigned char *s, uint32_t *cp)
{
	unsigned char lo = 0x80, hi = 0xbf;
	uint32_t c;
	size_t n;

	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2, c = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3, c = s[0] & 0x0f;
		lo = s[0] == 0xe0 ? 0xa0 : lo;
		hi = s[0] == 0xed ? 0x9f : hi;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4, c = s[0] & 0x07;
		lo = s[0] == 0xf0 ? 0x90 : lo;
		hi = s[0] == 0xf4 ? 0x8f : hi;
	} else {
		return 0;
	}
	if (s[1] < lo || s[1] > hi)
		return 0;
	c = c << 6 | (s[1] & 0x3f);
	for (size_t i = 2; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	*cp = c;
	return n;
}

/* Code points past ASCII that are escaped although well-formed (text.h says why). */
static bool escaped_point(uint32_t c)
{
	return c <= 0x9f || c == 0x200e || c == 0x200f || (c >= 0x2028 && c <= 0x202e) ||
	       (c >= 0x2066 && c <= 0x2069) || c == 0xfffe || c == 0xffff;
}

static void esc_byte(struct unit *u, unsigned char c)
{
	u->esc[0] = '\\';
	u->esc[1] = 'x';
	u->esc[2] = hex[c >> 4];
	u->esc[3] = hex[c & 15];
	u->esc[4] = '\0';
	u->esc_len = u->width = 4;
}

static void esc_str(struct unit *u, const char *esc, size_t width)
{
	u->esc_len = strlen(esc);
	memcpy(u->esc, esc, u->esc_len + 1);
	u->width = width;
}

/* The unit at @s, a special byte under @flags (not the NUL). */
static void next_unit(const unsigned char *s, unsigned flags, struct unit *u)
{
	uint32_t cp;

	u->len = 1;
	if (s[0] >= 0x80) {
		u->len = utf8_seq(s, &cp);
		if (!u->len) {
			u->len = 1;
			esc_byte(u, s[0]);
		} else if (escaped_point(cp)) {
			u->esc[0] = '\\';
			u->esc[1] = 'u';
			for (int i = 0; i < 4; i++)
				u->esc[2 + i] = hex[cp >> (12 - 4 * i) & 15];
			u->esc[6] = '\0';
			u->esc_len = u->width = 6;
		} else {
			u->esc[0] = '\0';
			u->esc_len = 0;
			u->width = 1;
		}
		return;
	}
	if (flags & TEXT_XML) {
		switch (s[0]) {
		case '&': esc_str(u, "&amp;", 1); return;
		case '<': esc_str(u, "&lt;", 1); return;
		case '>': esc_str(u, "&gt;", 1); return;
		case '"': esc_str(u, "&quot;", 1); return;
		case '\'': esc_str(u, "&apos;", 1); return;
		}
	}
	switch (s[0]) {
	case '\\': esc_str(u, "\\\\", 2); return;
	case '\t': esc_str(u, "\\t", 2); return;
	case '\n': esc_str(u, "\\n", 2); return;
	case '\r': esc_str(u, "\\r", 2); return;
	default: esc_byte(u, s[0]); return;
	}
}

bool text_clean(const char *str, unsigned flags)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned mask = flags | ALWAYS;
	struct unit u;

	for (;;) {
		while (!(special[*s] & mask))
			s++;
		if (!*s)
			return true;
		next_unit(s, flags, &u);
		if (u.esc_len)
			return false;
		s += u.len;
	}
}

size_t text_put_width(FILE *out, const char *str, unsigned flags, size_t max)
{
	const unsigned char *s = (const unsigned char *)str, *run = s;
	unsigned mask = flags | ALWAYS;
	size_t width = 0;
	struct unit u;

	for (;;) {
		/* a run of plain ASCII, one character per byte */
		while (width < max && !(special[*s] & mask)) {
			s++;
			width++;
		}
		if (!*s || width >= max)
			break;
		next_unit(s, flags, &u);
		if (u.width > max - width)
			break;
		width += u.width;
		if (u.esc_len) {
			if (s > run)
				fwrite(run, 1, s - run, out);
			fwrite(u.esc, 1, u.esc_len, out);
			run = s + u.len;
		}
		s += u.len;
	}
	if (s > run)
		fwrite(run, 1, s - run, out);
	return width;
}

int text_put(FILE *out, const char *str, unsigned flags)
{
	const unsigned char *s = (const unsigned char *)str, *run = s;
	unsigned mask = flags | ALWAYS;
	struct unit u;

	for (;;) {
		while (!(special[*s] & mask))
			s++;
		if (!*s)
			break;
		next_unit(s, flags, &u);
		if (u.esc_len) {
			if (s > run)
				fwrite(run, 1, s - run, out);
			fwrite(u.esc, 1, u.esc_len, out);
			run = s + u.len;
		}
		s += u.len;
	}
	if (s > run)
		fwrite(run, 1, s - run, out);
	return ferror(out) ? -EIO : 0;
}

size_t text_width(const char *str, unsigned flags)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned mask = flags | ALWAYS;
	size_t width = 0;
	struct unit u;

	for (;;) {
		while (!(special[*s] & mask)) {
			s++;
			width++;
		}
		if (!*s)
			return width;
		next_unit(s, flags, &u);
		width += u.width;
		s += u.len;
	}
}

/* snprintf()'s way of filling a buffer: whole pieces while they fit, then only the count. */
struct sink {
	char *buf;
	size_t cap, len;
	bool cut;
};

static void sink_add(struct sink *k, const void *p, size_t n, bool whole)
{
	if (!k->cut) {
		size_t room = k->cap ? k->cap - 1 - k->len : 0;
		size_t take = n <= room ? n : whole ? 0 : room;

		memcpy(k->buf + k->len, p, take);
		if (take < n)
			k->cut = true;
		k->len += take;
	}
}

size_t text_escape(char *buf, size_t cap, const char *str, unsigned flags)
{
	const unsigned char *s = (const unsigned char *)str, *run;
	struct sink k = { buf, cap, 0, cap == 0 };
	unsigned mask = flags | ALWAYS;
	size_t total = 0;
	struct unit u;

	for (;;) {
		run = s;
		while (!(special[*s] & mask))
			s++;
		sink_add(&k, run, s - run, false);
		total += s - run;
		if (!*s)
			break;
		next_unit(s, flags, &u);
		if (u.esc_len) {
			sink_add(&k, u.esc, u.esc_len, true);
			total += u.esc_len;
		} else {
			sink_add(&k, s, u.len, true);
			total += u.len;
		}
		s += u.len;
	}
	if (cap)
		buf[k.len] = '\0';
	return total;
}

char *text_dup(const char *s, unsigned flags)
{
	size_t n = text_escape(NULL, 0, s, flags);
	char *copy = malloc(n + 1);

	if (!copy) {
		errno = ENOMEM;
		return NULL;
	}
	text_escape(copy, n + 1, s, flags);
	return copy;
}
