/* SPDX-License-Identifier: BSD-2-Clause */
/* Splitting a line of symbolizer markup into nodes, as llvm-symbolizer's parser does. */
#include <string.h>

#include "markup.h"

static const char *find(const char *s, size_t len, const char *what)
{
	return memmem(s, len, what, 3);
}

/* The first element of @s with a non-empty tag, or false. */
static bool find_element(const char *s, size_t len, struct markup_node *node)
{
	const char *p = s, *end = s + len;

	for (;;) {
		const char *open = find(p, end - p, "{{{"), *close, *c;

		if (!open || !(close = find(open + 3, end - open - 3, "}}}")))
			return false;
		p = close + 3;
		c = memchr(open + 3, ':', close - open - 3);
		memset(node, 0, sizeof(*node));
		node->kind = MARKUP_ELEMENT;
		node->text = (struct markup_span){ open, close + 3 - open };
		node->tag = (struct markup_span){ open + 3, (c ? c : close) - open - 3 };
		if (!node->tag.len)
			continue;
		if (!c)
			return true;
		node->body = (struct markup_span){ c + 1, close - c - 1 };
		/* "{{{tag:}}}" has one empty field, "{{{tag}}}" none */
		for (const char *f = c + 1;; ) {
			const char *next = memchr(f, ':', close - f);
			const char *fend = next ? next : close;

			if (node->nfields < MARKUP_MAX_FIELDS)
				node->fields[node->nfields] = (struct markup_span){ f, fend - f };
			node->nfields++;
			if (!next)
				break;
			f = next + 1;
		}
		return true;
	}
}

/* The length of the SGR escape at @s, or 0: "\033[" 0, 1 or 30-37 "m". */
static size_t sgr_len(const char *s, size_t len)
{
	if (len >= 4 && s[0] == '\033' && s[1] == '[' && (s[2] == '0' || s[2] == '1') && s[3] == 'm')
		return 4;
	if (len >= 5 && s[0] == '\033' && s[1] == '[' && s[2] == '3' && s[3] >= '0' && s[3] <= '7' &&
	    s[4] == 'm')
		return 5;
	return 0;
}

/* The next text or SGR node of text @s (no element in it). */
static void text_node(const char *s, size_t len, struct markup_node *node)
{
	size_t n = sgr_len(s, len), i;

	memset(node, 0, sizeof(*node));
	if (n) {
		node->kind = MARKUP_SGR;
		node->text = (struct markup_span){ s, n };
		return;
	}
	for (i = 1; i < len && !(s[i] == '\033' && sgr_len(s + i, len - i)); i++)
		;
	node->kind = MARKUP_TEXT;
	node->text = (struct markup_span){ s, i };
}

bool markup_next(const char *line, size_t len, size_t *pos, struct markup_node *node)
{
	const char *s = line + *pos;
	size_t left = len - *pos;
	struct markup_node el;

	if (!left)
		return false;
	if (find_element(s, left, &el)) {
		if (el.text.s == s) {
			*node = el;
			*pos += el.text.len;
			return true;
		}
		left = el.text.s - s;
	}
	text_node(s, left, node);
	*pos += node->text.len;
	return true;
}

long markup_unclosed(const char *line, size_t len, size_t from)
{
	const char *open = NULL;

	for (const char *p = line + from, *end = line + len; (p = find(p, end - p, "{{{")); p++)
		open = p;
	if (!open || find(open + 3, line + len - open - 3, "}}}"))
		return -1;
	return open - line;
}

long markup_multiline_begin(const char *line, size_t len, size_t from)
{
	static const char tag[] = "hexdict:";
	long at = markup_unclosed(line, len, from);

	if (at < 0 || len - at - 3 < sizeof(tag) - 1 || memcmp(line + at + 3, tag, sizeof(tag) - 1))
		return -1;
	return at;
}

long markup_open_before_end(const char *line, size_t len)
{
	long end = markup_multiline_end(line, len);
	const char *open = find(line, end < 0 ? len : (size_t)end - 3, "{{{");

	return open ? open - line : -1;
}

long markup_multiline_end(const char *line, size_t len)
{
	const char *close = find(line, len, "}}}");

	return close ? close + 3 - line : -1;
}
