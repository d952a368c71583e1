/* SPDX-License-Identifier: BSD-2-Clause */
/* The escaping rule for text from outside: each class of byte and code point, the flags, cutting, widths. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/text.h"
#include "testutil.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

struct text_case {
	const char *in;
	unsigned flags;
	const char *want;
	size_t width;		/* characters shown: an entity is one */
};

static const struct text_case cases[] = {
	/* passes as it is */
	{ "", 0, "", 0 },
	{ "main", 0, "main", 4 },
	{ "std::vector<int>::push_back(int const&)", 0,
	  "std::vector<int>::push_back(int const&)", 39 },
	{ "/usr/lib/x86_64-linux-gnu/libc.so.6", 0, "/usr/lib/x86_64-linux-gnu/libc.so.6", 35 },
	{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5", 0, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5", 8 },
	{ "\xc2\xa0\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbd\xf4\x8f\xbf\xbd", 0,	/* edges that pass */
	  "\xc2\xa0\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbd\xf4\x8f\xbf\xbd", 5 },
	/* the crafted comm of issue 12 */
	{ "x\n\tfff main\n\x1b[2J", 0, "x\\n\\tfff main\\n\\x1b[2J", 22 },
	/* C0, DEL and the backslash */
	{ "\x01\x07\x08\x0b\x0c\r\x1f\x7f", 0, "\\x01\\x07\\x08\\x0b\\x0c\\r\\x1f\\x7f", 30 },
	{ "a\\x1b", 0, "a\\\\x1b", 6 },
	{ "\\", 0, "\\\\", 2 },
	/* C1 controls (CSI U+009B, NEL U+0085) and the separators */
	{ "\xc2\x80\xc2\x85\xc2\x9b\xc2\x9f", 0, "\\u0080\\u0085\\u009b\\u009f", 24 },
	{ "a\xe2\x80\xa8" "b\xe2\x80\xa9", 0, "a\\u2028b\\u2029", 14 },
	/* bidirectional formatting (Trojan Source) and the noncharacters */
	{ "\xe2\x80\x8e\xe2\x80\x8f\xe2\x80\xaa\xe2\x80\xae\xe2\x81\xa6\xe2\x81\xa9", 0,
	  "\\u200e\\u200f\\u202a\\u202e\\u2066\\u2069", 36 },
	{ "\xef\xbf\xbe\xef\xbf\xbf", 0, "\\ufffe\\uffff", 12 },
	{ "\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa", 0,	/* their neighbours pass */
	  "\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa", 4 },
	/* bytes that are not UTF-8: each one */
	{ "ab\xff", 0, "ab\\xff", 6 },
	{ "\x80\xbf", 0, "\\x80\\xbf", 8 },				/* lone continuations */
	{ "\xc0\xaf\xc1\xbf", 0, "\\xc0\\xaf\\xc1\\xbf", 16 },		/* overlong '/' */
	{ "\xe0\x80\xaf", 0, "\\xe0\\x80\\xaf", 12 },			/* overlong, 3 bytes */
	{ "\xf0\x80\x80\xaf", 0, "\\xf0\\x80\\x80\\xaf", 16 },		/* overlong, 4 bytes */
	{ "\xed\xa0\x80\xed\xbf\xbf", 0, "\\xed\\xa0\\x80\\xed\\xbf\\xbf", 24 },	/* surrogates */
	{ "\xf4\x90\x80\x80\xf5\x80", 0, "\\xf4\\x90\\x80\\x80\\xf5\\x80", 24 },	/* > U+10FFFF */
	{ "comm\xe2\x82", 0, "comm\\xe2\\x82", 12 },		/* cut by the kernel */
	{ "\xe2\x82x", 0, "\\xe2\\x82x", 9 },
	{ "\xc3\xc3\xa9", 0, "\\xc3\xc3\xa9", 5 },			/* a lead, then a whole one */
	{ "\xf0\x9f\x94", 0, "\\xf0\\x9f\\x94", 12 },
	/* the flags: only their characters, and only with them */
	{ "say \"hi\";{}:", 0, "say \"hi\";{}:", 12 },
	{ "say \"hi\"", TEXT_QUOTED, "say \\x22hi\\x22", 14 },
	{ "a;b;c", TEXT_FOLDED, "a\\x3bb\\x3bc", 11 },
	{ "a:b", TEXT_FOLDED, "a:b", 3 },
	{ "{{{reset}}}", TEXT_MARKUP, "\\x7b\\x7b\\x7breset\\x7d\\x7d\\x7d", 29 },
	{ "std::a", TEXT_MARKUP, "std::a", 6 },
	{ "lib:1}x", TEXT_FIELD, "lib\\x3a1\\x7dx", 13 },
	{ "a<b>&\"c'", TEXT_XML, "a&lt;b&gt;&amp;&quot;c&apos;", 8 },
	{ "\x1b\xff\\", TEXT_XML, "\\x1b\\xff\\\\", 10 },
	{ ";{:", TEXT_XML, ";{:", 3 },
};

static void test_cases(void **state)
{
	char buf[256];

	(void)state;
	for (size_t i = 0; i < N(cases); i++) {
		const struct text_case *c = &cases[i];
		size_t n = text_escape(buf, sizeof(buf), c->in, c->flags);
		char *dup = text_dup(c->in, c->flags), *mem = NULL;
		size_t memlen = 0;
		FILE *f = open_memstream(&mem, &memlen);

		if (strcmp(buf, c->want) || n != strlen(c->want))
			fail_msg("case %zu: text_escape() gave \"%s\" (%zu), want \"%s\"", i, buf, n,
				 c->want);
		assert_non_null(dup);
		assert_string_equal(dup, c->want);
		free(dup);
		assert_non_null(f);
		assert_int_equal(text_put(f, c->in, c->flags), 0);
		assert_int_equal(fclose(f), 0);
		assert_string_equal(mem, c->want);
		free(mem);
		if (text_clean(c->in, c->flags) != !strcmp(c->in, c->want))
			fail_msg("case %zu: text_clean() says %d", i, text_clean(c->in, c->flags));
		if (text_width(c->in, c->flags) != c->width)
			fail_msg("case %zu: text_width() %zu, want %zu", i,
				 text_width(c->in, c->flags), c->width);
	}
}

/* Whatever the bytes, the result is printable UTF-8 that decodes back to them. */
static size_t unescape(const char *s, unsigned char *out)
{
	size_t n = 0;

	while (*s) {
		if (*s != '\\') {
			out[n++] = *s++;
			continue;
		}
		s++;
		switch (*s) {
		case '\\': out[n++] = '\\'; s++; break;
		case 'n': out[n++] = '\n'; s++; break;
		case 't': out[n++] = '\t'; s++; break;
		case 'r': out[n++] = '\r'; s++; break;
		case 'x': {
			unsigned v;

			assert_int_equal(sscanf(s + 1, "%2x", &v), 1);
			out[n++] = v;
			s += 3;
			break;
		}
		case 'u': {
			unsigned v;

			assert_int_equal(sscanf(s + 1, "%4x", &v), 1);
			if (v < 0x800) {
				out[n++] = 0xc0 | v >> 6;
				out[n++] = 0x80 | (v & 0x3f);
			} else {
				out[n++] = 0xe0 | v >> 12;
				out[n++] = 0x80 | (v >> 6 & 0x3f);
				out[n++] = 0x80 | (v & 0x3f);
			}
			s += 5;
			break;
		}
		default:
			fail_msg("a lone backslash before '%c'", *s);
		}
	}
	return n;
}

/* A strict UTF-8 check, written apart from text.c's: every sequence decoded and range-checked. */
static bool valid_printable_utf8(const unsigned char *s)
{
	while (*s) {
		uint32_t c;
		size_t n;

		if (*s < 0x80)
			n = 1, c = *s;
		else if ((*s & 0xe0) == 0xc0)
			n = 2, c = *s & 0x1f;
		else if ((*s & 0xf0) == 0xe0)
			n = 3, c = *s & 0x0f;
		else if ((*s & 0xf8) == 0xf0)
			n = 4, c = *s & 0x07;
		else
			return false;
		for (size_t i = 1; i < n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return false;
			c = c << 6 | (s[i] & 0x3f);
		}
		if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000) ||
		    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) || c < 0x20 ||
		    (c >= 0x7f && c <= 0x9f) || c == 0x2028 || c == 0x2029)
			return false;
		s += n;
	}
	return true;
}

static void test_random_bytes_round_trip(void **state)
{
	unsigned char in[64], back[64];
	char out[64 * 6 + 1];
	unsigned seed = 12;

	(void)state;
	for (int round = 0; round < 200000; round++) {
		size_t len = rand_r(&seed) % 24;

		for (size_t i = 0; i < len; i++) {
			/* mostly the bytes that matter: controls, UTF-8 leads and continuations */
			static const unsigned char pick[] = { 0x00, 0x01, 0x0a, 0x1b, 0x5c, 0x41, 0x7f,
							      0x80, 0x85, 0x9b, 0xa8, 0xbf, 0xc2,
							      0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xff };

			in[i] = rand_r(&seed) & 1 ? pick[rand_r(&seed) % sizeof(pick)] :
						   (unsigned char)rand_r(&seed);
			if (!in[i])
				in[i] = 0x80;
		}
		in[len] = 0;
		assert_true(text_escape(out, sizeof(out), (char *)in, 0) < sizeof(out));
		if (!valid_printable_utf8((unsigned char *)out))
			fail_msg("round %d: not printable UTF-8: \"%s\"", round, out);
		if (unescape(out, back) != len || memcmp(back, in, len))
			fail_msg("round %d: \"%s\" does not decode back to its input", round, out);
	}
}

/* A cut result is a prefix of whole units, NUL-terminated, and the length is the whole one's. */
static void test_escape_cut(void **state)
{
#define FULL "ab\\x1b\xc3\xa9z\\u2028"
	const char *in = "ab\x1b\xc3\xa9z\xe2\x80\xa8", *full = FULL;
	static const char *const want[] = {
		"", "", "a", "ab", "ab", "ab", "ab", "ab\\x1b", "ab\\x1b", "ab\\x1b\xc3\xa9",
		"ab\\x1b\xc3\xa9z", "ab\\x1b\xc3\xa9z", "ab\\x1b\xc3\xa9z", "ab\\x1b\xc3\xa9z",
		"ab\\x1b\xc3\xa9z", "ab\\x1b\xc3\xa9z", FULL, FULL,
	};
#undef FULL
	char buf[32];

	(void)state;
	assert_int_equal(text_escape(NULL, 0, in, 0), strlen(full));
	for (size_t cap = 1; cap < N(want); cap++) {
		memset(buf, 'Q', sizeof(buf));
		assert_int_equal(text_escape(buf, cap, in, 0), strlen(full));
		if (strcmp(buf, want[cap]))
			fail_msg("cap %zu: \"%s\", want \"%s\"", cap, buf, want[cap]);
		assert_int_equal(buf[cap], 'Q');
	}
}

/* At most so many characters shown, never half an escape, entity or UTF-8 sequence. */
static void test_put_width(void **state)
{
	static const struct {
		const char *in;
		size_t max;
		const char *want;
		size_t width;
	} cuts[] = {
		{ "abcdef", 3, "abc", 3 },
		{ "ab\x1b" "cd", 3, "ab", 2 },
		{ "ab\x1b" "cd", 6, "ab\\x1b", 6 },
		{ "ab\x1b" "cd", 7, "ab\\x1bc", 7 },
		{ "a&b<c", 3, "a&amp;b", 3 },
		{ "\xc3\xa9\xc3\xa9\xc3\xa9", 2, "\xc3\xa9\xc3\xa9", 2 },
		{ "x", 0, "", 0 },
		{ "x\xff", (size_t)-1, "x\\xff", 5 },
	};

	(void)state;
	for (size_t i = 0; i < N(cuts); i++) {
		char *mem = NULL;
		size_t memlen = 0, w;
		FILE *f = open_memstream(&mem, &memlen);

		assert_non_null(f);
		w = text_put_width(f, cuts[i].in, TEXT_XML, cuts[i].max);
		assert_int_equal(fclose(f), 0);
		if (strcmp(mem, cuts[i].want) || w != cuts[i].width)
			fail_msg("cut %zu: \"%s\" (%zu), want \"%s\" (%zu)", i, mem, w, cuts[i].want,
				 cuts[i].width);
		free(mem);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_random_bytes_round_trip),
		cmocka_unit_test(test_escape_cut),
		cmocka_unit_test(test_put_width),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
