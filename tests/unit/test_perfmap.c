/* SPDX-License-Identifier: BSD-2-Clause */
/* Perf map files: the lines JIT runtimes write and hostile ones, the latest-line index, reading, opening. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jit/perfmap.h"
#include "testutil.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

struct want_entry {
	uint64_t start, size;
	const char *name;
	size_t name_len;
};

/* An entry whose name is a string literal, NULs and all. */
#define E(start, size, name) { start, size, name, sizeof(name) - 1 }

struct map_case {
	const char *what;
	const char *text;
	size_t len;		/* 0: strlen(text) */
	struct want_entry want[4];
	size_t nwant;
	uint64_t lines, bad;
	const char *first_error;	/* NULL: none */
};

static const struct map_case cases[] = {
	{ "node --perf-basic-prof", "3b8e1a4c0a0 41 LazyCompile:~fib /x.js:3\n"
	  "3b8e1a4c140 1c Builtin:ArgumentsAdaptorTrampoline\n", 0,
	  { E(0x3b8e1a4c0a0, 0x41, "LazyCompile:~fib /x.js:3"),
	    E(0x3b8e1a4c140, 0x1c, "Builtin:ArgumentsAdaptorTrampoline") }, 2, 2, 0, NULL },
	{ "java perf-map-agent", "7f1c6d0f3a20 1c0 Ljava/lang/String;::hashCode\n"
	  "7f1c6d0f4000 80 Interpreter\n", 0,
	  { E(0x7f1c6d0f3a20, 0x1c0, "Ljava/lang/String;::hashCode"),
	    E(0x7f1c6d0f4000, 0x80, "Interpreter") }, 2, 2, 0, NULL },
	{ "java -XX:+DumpPerfMapAtExit (0x, zero-padded)",
	  "0x00007f8a1d0e4f00 0x0000000000000148 java.lang.String.hashCode()\n", 0,
	  { E(0x7f8a1d0e4f00, 0x148, "java.lang.String.hashCode()") }, 1, 1, 0, NULL },
	{ "cpython -X perf", "7f3a4c0a1000 b py::fib:/tmp/w.py\n7f3a4c0a100b b py::<module>:/tmp/w.py\n", 0,
	  { E(0x7f3a4c0a1000, 0xb, "py::fib:/tmp/w.py"),
	    E(0x7f3a4c0a100b, 0xb, "py::<module>:/tmp/w.py") }, 2, 2, 0, NULL },
	{ "0x on one field, upper case", "0X1000 ABC f\n1000 0xabc g\n", 0,
	  { E(0x1000, 0xabc, "f"), E(0x1000, 0xabc, "g") }, 2, 2, 0, NULL },
	{ "tabs and leading blanks; blanks after the first one kept in the name",
	  " \t1000\t \t20\t  spaced name \n", 0,
	  { E(0x1000, 0x20, "  spaced name ") }, 1, 1, 0, NULL },
	{ "a CRLF line keeps its \\r", "1000 20 f\r\n", 0, { E(0x1000, 0x20, "f\r") }, 1, 1, 0, NULL },
	{ "empty lines are not bad", "\n\n1000 20 f\n\n", 0, { E(0x1000, 0x20, "f") }, 1, 4, 0, NULL },
	{ "an unterminated last line", "1000 20 f\n2000 10 last", 0,
	  { E(0x1000, 0x20, "f"), E(0x2000, 0x10, "last") }, 2, 2, 0, NULL },
	{ "17 digits with a leading zero fit", "0ffffffffffff0000 ffff f\n", 0,
	  { E(0xffffffffffff0000, 0xffff, "f") }, 1, 1, 0, NULL },
	{ "the last byte below 2^64 is reachable", "ffffffffffffff00 ff top\n", 0,
	  { E(0xffffffffffffff00, 0xff, "top") }, 1, 1, 0, NULL },
	{ "NUL and control bytes kept raw", "1000 20 a\0b\x1b[2J\x7f\n", 17,
	  { E(0x1000, 0x20, "a\0b\x1b[2J\x7f") }, 1, 1, 0, NULL },
	/* bad lines */
	{ "not hex", "hello world foo\n1000 20 f\n", 0, { E(0x1000, 0x20, "f") }, 1, 2, 1,
	  "line 1: no start address" },
	{ "a sign", "-1000 20 f\n", 0, { { 0 } }, 0, 1, 1, "line 1: no start address" },
	{ "0x and no digit", "0x 20 f\n", 0, { { 0 } }, 0, 1, 1, "line 1: no start address" },
	{ "start over 64 bits", "10000000000000000 1 f\n", 0, { { 0 } }, 0, 1, 1,
	  "line 1: start address over 64 bits" },
	{ "size over 64 bits", "1000 1ffffffffffffffff f\n", 0, { { 0 } }, 0, 1, 1,
	  "line 1: size over 64 bits" },
	{ "size 0", "1000 20 f\n2000 0 g\n", 0, { E(0x1000, 0x20, "f") }, 1, 2, 1, "line 2: size 0" },
	{ "wraps", "ffffffffffffff00 101 w\n", 0, { { 0 } }, 0, 1, 1,
	  "line 1: range 0xffffffffffffff00+0x101 wraps past the end of the address space" },
	{ "ends at 2^64", "ffffffffffffff00 100 w\n", 0, { { 0 } }, 0, 1, 1,
	  "line 1: range 0xffffffffffffff00+0x100 wraps past the end of the address space" },
	{ "no size", "1000\n1000 \n", 0, { { 0 } }, 0, 2, 2,
	  "line 1: no blank after the start address" },
	{ "no name", "1000 20\n1000 20 \n", 0, { { 0 } }, 0, 2, 2, "line 1: no name" },
	{ "a size that runs into the name", "1000 20xyz f\n", 0, { { 0 } }, 0, 1, 1,
	  "line 1: no blank after the size" },
	{ "blanks only", " \t\n", 0, { { 0 } }, 0, 1, 1, "line 1: no start address" },
	{ "the first error is kept", "x\n\ny\n1000 0 z\n", 0, { { 0 } }, 0, 4, 3,
	  "line 1: no start address" },
	{ "NUL in a number", "10\x00" "0 20 f\n", 10, { { 0 } }, 0, 1, 1,
	  "line 1: no blank after the start address" },
};

static const struct perfmap_entry *find_slow(const struct perfmap *m, uint64_t addr)
{
	for (size_t i = perfmap__count(m); i--;) {
		const struct perfmap_entry *e = perfmap__entry(m, i);

		if (addr >= e->start && addr - e->start < e->size)
			return e;
	}
	return NULL;
}

static void _assert_entries(const struct perfmap *m, const struct want_entry *want, size_t nwant,
			    const char *file, int line)
{
	if (perfmap__count(m) != nwant) {
		print_error("%zu entries, want %zu\n", perfmap__count(m), nwant);
		_fail(file, line);
	}
	for (size_t i = 0; i < nwant; i++) {
		const struct perfmap_entry *e = perfmap__entry(m, i);
		size_t len = want[i].name_len;

		if (e->start != want[i].start || e->size != want[i].size || e->name_len != len ||
		    memcmp(e->name, want[i].name, len) || e->name[len] != '\0') {
			print_error("entry %zu: %#llx %#llx \"%.*s\" (%u bytes), want %#llx %#llx \"%s\"\n",
				    i, (unsigned long long)e->start, (unsigned long long)e->size,
				    (int)e->name_len, e->name, e->name_len,
				    (unsigned long long)want[i].start,
				    (unsigned long long)want[i].size, want[i].name);
			_fail(file, line);
		}
	}
}
#define assert_entries(m, w, n) _assert_entries(m, w, n, __FILE__, __LINE__)

/* Two maps hold the same entries and counts. */
static void _assert_maps_equal(const struct perfmap *a, const struct perfmap *b, const char *file,
			       int line)
{
	const struct perfmap_stats *sa = perfmap__stats(a), *sb = perfmap__stats(b);

	if (perfmap__count(a) != perfmap__count(b) || sa->lines != sb->lines ||
	    sa->entries != sb->entries || sa->bad_lines != sb->bad_lines ||
	    sa->names_cut != sb->names_cut || sa->dropped != sb->dropped ||
	    strcmp(sa->first_error, sb->first_error)) {
		print_error("maps differ: %zu/%zu entries, %llu/%llu lines, %llu/%llu bad, \"%s\"/\"%s\"\n",
			    perfmap__count(a), perfmap__count(b), (unsigned long long)sa->lines,
			    (unsigned long long)sb->lines, (unsigned long long)sa->bad_lines,
			    (unsigned long long)sb->bad_lines, sa->first_error, sb->first_error);
		_fail(file, line);
	}
	for (size_t i = 0; i < perfmap__count(a); i++) {
		const struct perfmap_entry *x = perfmap__entry(a, i), *y = perfmap__entry(b, i);

		if (x->start != y->start || x->size != y->size || x->name_len != y->name_len ||
		    memcmp(x->name, y->name, x->name_len)) {
			print_error("entry %zu differs\n", i);
			_fail(file, line);
		}
	}
}
#define assert_maps_equal(a, b) _assert_maps_equal(a, b, __FILE__, __LINE__)

static struct perfmap *new_or_fail(void)
{
	struct perfmap *m = perfmap__new();

	assert_non_null(m);
	return m;
}

static struct perfmap *feed_in_steps(const char *text, size_t len, size_t step)
{
	struct perfmap *m = new_or_fail();

	for (size_t at = 0; at < len; at += step)
		assert_int_equal(perfmap__feed(m, text + at, len - at < step ? len - at : step), 0);
	assert_int_equal(perfmap__finish(m), 0);
	return m;
}

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < N(cases); i++) {
		const struct map_case *c = &cases[i];
		size_t len = c->len ? c->len : strlen(c->text);
		struct perfmap *whole, *bytes, *odd;
		const struct perfmap_stats *s;

		print_message("case %zu: %s\n", i, c->what);
		whole = feed_in_steps(c->text, len, len ? len : 1);
		assert_entries(whole, c->want, c->nwant);
		s = perfmap__stats(whole);
		assert_int_equal(s->lines, c->lines);
		assert_int_equal(s->bad_lines, c->bad);
		assert_int_equal(s->entries, c->nwant);
		assert_string_equal(s->first_error, c->first_error ? c->first_error : "");
		/* how the bytes come changes nothing */
		bytes = feed_in_steps(c->text, len, 1);
		odd = feed_in_steps(c->text, len, 3);
		assert_maps_equal(whole, bytes);
		assert_maps_equal(whole, odd);
		/* each entry is found at its ends, unless a later one covers them */
		for (size_t j = 0; j < c->nwant; j++) {
			const struct perfmap_entry *e = perfmap__entry(whole, j);

			assert_ptr_equal(perfmap__find(whole, e->start), find_slow(whole, e->start));
			assert_ptr_equal(perfmap__find(whole, e->start + e->size - 1),
					 find_slow(whole, e->start + e->size - 1));
		}
		perfmap__free(whole);
		perfmap__free(bytes);
		perfmap__free(odd);
	}
}

static void test_held_line(void **state)
{
	struct perfmap *m = new_or_fail();
	const struct want_entry want[] = { E(0x1000, 0x20, "abc"), E(0x2000, 0x10, "tail") };

	(void)state;
	assert_int_equal(perfmap__feed(m, "1000 20 a", 9), 0);
	assert_int_equal(perfmap__count(m), 0);
	assert_null(perfmap__find(m, 0x1000));
	assert_int_equal(perfmap__stats(m)->lines, 0);
	assert_int_equal(perfmap__feed(m, "bc\n2000 10 tail", 15), 0);
	assert_entries(m, want, 1);
	assert_string_equal(perfmap__find(m, 0x101f)->name, "abc");
	assert_int_equal(perfmap__finish(m), 0);
	assert_entries(m, want, 2);
	assert_string_equal(perfmap__find(m, 0x2000)->name, "tail");
	/* finish with nothing held changes nothing */
	assert_int_equal(perfmap__finish(m), 0);
	assert_int_equal(perfmap__stats(m)->lines, 2);
	assert_null(perfmap__entry(m, 2));
	perfmap__free(m);
	perfmap__free(NULL);
}

static void test_latest_wins(void **state)
{
	static const char text[] =
		"1000 100 old\n"		/* [0x1000, 0x1100) */
		"1040 40 inner\n"		/* [0x1040, 0x1080) */
		"1000 100 reused\n"		/* the whole range again: hides both */
		"1080 10 last\n";		/* [0x1080, 0x1090) */
	static const struct { uint64_t addr; const char *name; } probes[] = {
		{ 0xfff, NULL }, { 0x1000, "reused" }, { 0x1040, "reused" }, { 0x107f, "reused" },
		{ 0x1080, "last" }, { 0x108f, "last" }, { 0x1090, "reused" }, { 0x10ff, "reused" },
		{ 0x1100, NULL }, { 0, NULL }, { UINT64_MAX, NULL },
	};
	struct perfmap *m = new_or_fail();

	(void)state;
	/* the first two lines alone: the inner one wins over the outer */
	assert_int_equal(perfmap__feed(m, text, 27), 0);
	assert_string_equal(perfmap__find(m, 0x1040)->name, "inner");
	assert_string_equal(perfmap__find(m, 0x1080)->name, "old");
	assert_int_equal(perfmap__feed(m, text + 27, sizeof(text) - 1 - 27), 0);
	for (size_t i = 0; i < N(probes); i++) {
		const struct perfmap_entry *e = perfmap__find(m, probes[i].addr);

		if (!probes[i].name)
			assert_null(e);
		else
			assert_string_equal(e ? e->name : "(none)", probes[i].name);
	}
	perfmap__free(m);
}

/*
 * Random maps over a small address range, so that lines overlap a lot, fed
 * in random pieces with lookups in between: every answer is the slow scan's.
 */
static void test_random_against_scan(void **state)
{
	struct test_rng rng;

	(void)state;
	rng_seed(&rng, 42);
	for (int round = 0; round < 40; round++) {
		struct perfmap *m = new_or_fail();
		size_t nlines = (size_t)rng_range(&rng, 1, 3000), len = 0, at = 0;
		char *text = malloc(nlines * 40 + 1);

		assert_non_null(text);
		for (size_t i = 0; i < nlines; i++) {
			uint64_t start = (uint64_t)rng_range(&rng, 0, 4000);
			uint64_t size = (uint64_t)rng_range(&rng, 1, rng_range(&rng, 0, 3) ? 20 : 2000);

			len += (size_t)sprintf(text + len, "%llx %llx n%zu\n", (unsigned long long)start,
					       (unsigned long long)size, i);
		}
		while (at < len) {
			size_t step = (size_t)rng_range(&rng, 1, rng_range(&rng, 0, 1) ? 50 : 5000);

			if (step > len - at)
				step = len - at;
			assert_int_equal(perfmap__feed(m, text + at, step), 0);
			at += step;
			for (int k = 0; k < 8; k++) {
				uint64_t addr = (uint64_t)rng_range(&rng, 0, 6100);

				assert_ptr_equal(perfmap__find(m, addr), find_slow(m, addr));
			}
		}
		assert_int_equal(perfmap__count(m), nlines);
		for (uint64_t addr = 0; addr < 6100; addr++)
			assert_ptr_equal(perfmap__find(m, addr), find_slow(m, addr));
		perfmap__free(m);
		free(text);
	}
}

static double seconds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * 100,000 nested ranges, [B - i, B + i + 1) for i = 0..n-1, in both orders:
 * innermost last, the answer at B + d is line d's (the smallest covering one);
 * outermost last, it is the last line everywhere. Lookups stay correct and
 * the index stays within 2 pieces per line; the time is printed, not judged.
 */
static void test_nested_hostile(void **state)
{
	const size_t n = 100000;
	const uint64_t base = 0x40000000;

	(void)state;
	for (int inner_last = 0; inner_last < 2; inner_last++) {
		struct perfmap *m = new_or_fail();
		char line[64];
		size_t lookups = 0;
		double t0, t1;

		for (size_t k = 0; k < n; k++) {
			size_t i = inner_last ? n - 1 - k : k;
			int len = snprintf(line, sizeof(line), "%llx %llx f\n",
					   (unsigned long long)(base - i), (unsigned long long)(2 * i + 1));

			assert_int_equal(perfmap__feed(m, line, (size_t)len), 0);
		}
		assert_int_equal(perfmap__count(m), n);
		t0 = seconds_now();
		assert_non_null(perfmap__find(m, base));	/* builds the index */
		t1 = seconds_now();
		for (int rep = 0; rep < 5; rep++) {
			for (size_t d = 0; d < n; d += 7) {
				/* line k holds i = n - 1 - k (inner last) or i = k */
				size_t want = inner_last ? n - 1 - d : n - 1;
				const struct perfmap_entry *hi = perfmap__find(m, base + d);
				const struct perfmap_entry *lo = perfmap__find(m, base - d);

				assert_ptr_equal(hi, perfmap__entry(m, want));
				assert_ptr_equal(lo, perfmap__entry(m, want));
				lookups += 2;
			}
		}
		assert_null(perfmap__find(m, base - n));
		assert_null(perfmap__find(m, base + n));
		print_message("nested, %s last: index built in %.3f s, %zu lookups in %.3f s "
			      "(%.0f ns each), %zu bytes held\n", inner_last ? "innermost" : "outermost",
			      t1 - t0, lookups, seconds_now() - t1,
			      (seconds_now() - t1) * 1e9 / (double)lookups, perfmap__memory(m));
		/* entries (32 bytes), names (2), at most 2 pieces (16 each) per line, chunks' slack */
		assert_true(perfmap__memory(m) < n * (32 + 2 + 2 * 16) * 2 + (1u << 20));
		perfmap__free(m);
	}
}

/* A lookup after every line: the index is updated in levels, never rebuilt whole each time. */
static void test_find_after_each_line(void **state)
{
	const size_t n = 20000;
	struct perfmap *m = new_or_fail();
	char line[64];
	double t0 = seconds_now();

	(void)state;
	for (size_t i = 0; i < n; i++) {
		/* nested again, innermost last, so that each line changes the answer */
		int len = snprintf(line, sizeof(line), "%llx %llx f%zu\n",
				   (unsigned long long)(0x100000 - (n - i)),
				   (unsigned long long)(2 * (n - i) + 1), i);

		assert_int_equal(perfmap__feed(m, line, (size_t)len), 0);
		assert_ptr_equal(perfmap__find(m, 0x100000), perfmap__entry(m, i));
		assert_ptr_equal(perfmap__find(m, 0x100000 - (n - i)), perfmap__entry(m, i));
		if (i)
			assert_ptr_equal(perfmap__find(m, 0x100000 - (n - i) - 1),
					 perfmap__entry(m, i - 1));
	}
	print_message("a lookup after each of %zu lines: %.3f s\n", n, seconds_now() - t0);
	perfmap__free(m);
}

static void test_names_cut(void **state)
{
	struct perfmap *m = new_or_fail();
	size_t name_len = 5000;
	char *text = malloc(name_len + PERFMAP_NAME_MAX + 64);
	int len;

	(void)state;
	assert_non_null(text);
	len = sprintf(text, "1000 10 ");
	for (size_t i = 0; i < name_len; i++)
		text[len + i] = (char)('a' + i % 26);
	len += (int)name_len;
	/* the same name cut to PERFMAP_NAME_MAX by the writer */
	len += sprintf(text + len, "\n2000 10 ");
	memcpy(text + len, text + 8, PERFMAP_NAME_MAX);
	len += PERFMAP_NAME_MAX;
	text[len++] = '\n';
	assert_int_equal(perfmap__feed(m, text, (size_t)len), 0);
	assert_int_equal(perfmap__count(m), 2);
	assert_int_equal(perfmap__entry(m, 0)->name_len, PERFMAP_NAME_MAX);
	assert_int_equal(perfmap__entry(m, 0)->name[PERFMAP_NAME_MAX], '\0');
	assert_memory_equal(perfmap__entry(m, 0)->name, text + 8, PERFMAP_NAME_MAX);
	/* exactly PERFMAP_NAME_MAX is not cut */
	assert_int_equal(perfmap__entry(m, 1)->name_len, PERFMAP_NAME_MAX);
	assert_int_equal(perfmap__stats(m)->names_cut, 1);
	assert_int_equal(perfmap__stats(m)->bad_lines, 0);
	perfmap__free(m);
	free(text);
}

/* A line over PERFMAP_LINE_MAX is skipped without being held, however it comes. */
static void test_long_line(void **state)
{
	/* lengths known at compile time: a sprintf() count could be negative to the compiler */
	static const char head[] = "1000 10 before\n2000 10 ", tail[] = "\n3000 10 after\n";
	size_t long_len = 3 * PERFMAP_LINE_MAX, len;
	char *text = malloc(long_len + 256);
	static const struct want_entry want[] = {
		E(0x1000, 0x10, "before"), E(0x3000, 0x10, "after"), E(0x4000, 0x10, "at the limit"),
	};

	(void)state;
	if (!text)
		fail_msg("out of memory");
	memcpy(text, head, sizeof(head) - 1);
	len = sizeof(head) - 1;
	memset(text + len, 'x', long_len);
	len += long_len;
	memcpy(text + len, tail, sizeof(tail));
	len += sizeof(tail) - 1;
	for (size_t step = 1; step <= len; step = step * 7 + 1) {
		struct perfmap *m = new_or_fail();

		for (size_t at = 0; at < len; at += step) {
			assert_int_equal(perfmap__feed(m, text + at, len - at < step ? len - at : step), 0);
			/* what is held stays within the limit */
			assert_true(perfmap__memory(m) < 2 * PERFMAP_LINE_MAX + 64 * 1024);
		}
		assert_entries(m, want, 2);
		assert_int_equal(perfmap__stats(m)->bad_lines, 1);
		assert_int_equal(perfmap__stats(m)->lines, 3);
		assert_string_equal(perfmap__stats(m)->first_error, "line 2: over 65536 bytes: skipped");
		perfmap__free(m);
	}
	/* unterminated at the end: skipped, and the line ends at finish */
	{
		struct perfmap *m = new_or_fail();

		assert_int_equal(perfmap__feed(m, text, len - 15), 0);
		assert_int_equal(perfmap__finish(m), 0);
		assert_entries(m, want, 1);
		assert_int_equal(perfmap__stats(m)->lines, 2);
		assert_int_equal(perfmap__stats(m)->bad_lines, 1);
		perfmap__free(m);
	}
	/* a line of exactly PERFMAP_LINE_MAX bytes is read */
	{
		struct perfmap *m = new_or_fail();

		len = (size_t)sprintf(text, "4000 10 at the limit");
		memset(text + len, ' ', PERFMAP_LINE_MAX - len);
		text[PERFMAP_LINE_MAX] = '\n';
		for (size_t at = 0; at <= PERFMAP_LINE_MAX; at += 1000)
			assert_int_equal(perfmap__feed(m, text + at,
						       PERFMAP_LINE_MAX + 1 - at < 1000 ?
						       PERFMAP_LINE_MAX + 1 - at : 1000), 0);
		assert_int_equal(perfmap__count(m), 1);
		assert_int_equal(perfmap__stats(m)->bad_lines, 0);
		assert_int_equal(perfmap__entry(m, 0)->name_len, PERFMAP_NAME_MAX);
		assert_memory_equal(perfmap__entry(m, 0)->name, "at the limit  ", 14);
		perfmap__free(m);
	}
	free(text);
}

/* Past PERFMAP_MAX_ENTRIES entries or PERFMAP_MAX_BYTES of names, lines are dropped. */
static void test_limits(void **state)
{
	struct perfmap *m = new_or_fail();
	char line[PERFMAP_NAME_MAX + 64];
	size_t extra = 10, per_line, lines;

	(void)state;
	for (size_t i = 0; i < PERFMAP_MAX_ENTRIES + extra; i++) {
		int len = snprintf(line, sizeof(line), "%zx 1 f\n", i);

		assert_int_equal(perfmap__feed(m, line, (size_t)len), 0);
	}
	assert_int_equal(perfmap__count(m), PERFMAP_MAX_ENTRIES);
	assert_int_equal(perfmap__stats(m)->dropped, extra);
	assert_int_equal(perfmap__stats(m)->bad_lines, 0);
	assert_ptr_equal(perfmap__find(m, PERFMAP_MAX_ENTRIES - 1),
			 perfmap__entry(m, PERFMAP_MAX_ENTRIES - 1));
	assert_null(perfmap__find(m, PERFMAP_MAX_ENTRIES));
	perfmap__free(m);

	/* names of PERFMAP_NAME_MAX bytes, PERFMAP_NAME_MAX + 1 each with the NUL */
	m = new_or_fail();
	per_line = PERFMAP_NAME_MAX + 1;
	lines = PERFMAP_MAX_BYTES / per_line;
	memset(line, 'n', sizeof(line));
	for (size_t i = 0; i < lines + extra; i++) {
		int len = snprintf(line, sizeof(line), "%zx 1 ", i);

		line[len] = 'n';
		line[len + PERFMAP_NAME_MAX] = '\n';
		assert_int_equal(perfmap__feed(m, line, (size_t)len + PERFMAP_NAME_MAX + 1), 0);
		line[len + PERFMAP_NAME_MAX] = 'n';
	}
	assert_int_equal(perfmap__count(m), lines);
	assert_int_equal(perfmap__stats(m)->dropped, extra);
	/* a short name later is dropped too: the entries are a prefix of the file */
	assert_int_equal(perfmap__feed(m, "ffff0000 1 f\n", 13), 0);
	assert_int_equal(perfmap__count(m), lines);
	assert_int_equal(perfmap__stats(m)->dropped, extra + 1);
	perfmap__free(m);
}

static char *temp_root;

static char *root_path(const char *rel)
{
	return path_join_or_fail(temp_root, rel);
}

static void unlink_rel(const char *rel)
{
	char *p = root_path(rel);
	struct stat st;

	if (!lstat(p, &st))
		assert_int_equal(S_ISDIR(st.st_mode) ? rmdir(p) : unlink(p), 0);
	free(p);
}

static int open_as(int root_fd, uint32_t uid, char *why, size_t why_len)
{
	return perfmap_openat(root_fd, 1234, uid, uid, why, why_len);
}

static void expect_refused(int root_fd, int want, const char *want_why)
{
	char why[256];
	int fd = open_as(root_fd, getuid(), why, sizeof(why));

	if (fd >= 0)
		close(fd);
	assert_int_equal(fd, want);
	if (want_why)
		assert_string_equal(why, want_why);
}

/* A temporary directory stands in for the process's root. */
static void test_openat(void **state)
{
	char why[256], *p, *q;
	int root_fd, fd;
	struct perfmap *m;
	uint64_t offset = 0;

	(void)state;
	temp_root = make_temp_dir_or_fail();
	root_fd = open(temp_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(root_fd >= 0);

	expect_refused(root_fd, -ENOENT, "/tmp: No such file or directory");
	/* /tmp as a symbolic link to a directory with a good map */
	p = root_path("elsewhere");
	assert_int_equal(mkdir(p, 0755), 0);
	free(p);
	p = root_path("elsewhere/perf-1234.map");
	write_file_or_fail(p, "1000 10 f\n", 10);
	free(p);
	p = root_path("tmp");
	assert_int_equal(symlink("elsewhere", p), 0);
	expect_refused(root_fd, -ELOOP, "/tmp is a symbolic link: not followed");
	assert_int_equal(unlink(p), 0);
	write_file_or_fail(p, "", 0);
	expect_refused(root_fd, -ENOTDIR, "/tmp is not a directory");
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkdir(p, 01777), 0);
	free(p);

	expect_refused(root_fd, -ENOENT, "/tmp/perf-1234.map: No such file or directory");
	p = root_path("tmp/perf-1234.map");
	/* a symbolic link, to a good file and to a FIFO */
	q = root_path("elsewhere/perf-1234.map");
	assert_int_equal(symlink(q, p), 0);
	expect_refused(root_fd, -ELOOP, "/tmp/perf-1234.map is a symbolic link: not followed");
	unlink_rel("tmp/perf-1234.map");
	/* a directory */
	assert_int_equal(mkdir(p, 0755), 0);
	expect_refused(root_fd, -EISDIR, "/tmp/perf-1234.map is a directory: not read");
	unlink_rel("tmp/perf-1234.map");
	/* a FIFO: refused without being opened, so without blocking */
	assert_int_equal(mkfifo(p, 0644), 0);
	expect_refused(root_fd, -EINVAL, "/tmp/perf-1234.map is not a regular file: not read");
	unlink_rel("tmp/perf-1234.map");
	/* a hard link to another file */
	assert_int_equal(link(q, p), 0);
	expect_refused(root_fd, -EPERM, "/tmp/perf-1234.map has 2 hard links: not read");
	unlink_rel("tmp/perf-1234.map");

	/* a good file */
	write_file_or_fail(p, "1000 10 f\n2000 10 g", 19);
	fd = open_as(root_fd, getuid(), why, sizeof(why));
	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_GETFL) & (O_ACCMODE | O_NONBLOCK), O_RDONLY | O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	m = new_or_fail();
	assert_int_equal(perfmap__read_more(m, fd, &offset, 1 << 20), 19);
	assert_int_equal(perfmap__count(m), 1);
	close(fd);
	perfmap__free(m);

	/* owned by another uid: refused, unless it is the process's real or effective uid */
	if (geteuid() == 0) {
		assert_int_equal(chown(p, 12345, 12345), 0);
		fd = open_as(root_fd, 1000, why, sizeof(why));
		assert_int_equal(fd, -EPERM);
		assert_string_equal(why, "/tmp/perf-1234.map is owned by uid 12345, not the "
				    "process's uid 1000: not read");
		fd = perfmap_openat(root_fd, 1234, 1000, 1001, why, sizeof(why));
		assert_int_equal(fd, -EPERM);
		assert_string_equal(why, "/tmp/perf-1234.map is owned by uid 12345, not the "
				    "process's uid 1000 or euid 1001: not read");
		fd = perfmap_openat(root_fd, 1234, 1000, 12345, why, sizeof(why));
		assert_true(fd >= 0);
		close(fd);
		fd = perfmap_openat(root_fd, 1234, 12345, 0, NULL, 0);
		assert_true(fd >= 0);
		close(fd);
		/* root's file is read for any process */
		assert_int_equal(chown(p, 0, 0), 0);
		fd = open_as(root_fd, 1000, why, sizeof(why));
		assert_true(fd >= 0);
		close(fd);
	} else {
		print_message("not root: the owner checks are not run\n");
	}
	free(p);
	free(q);
	unlink_rel("tmp/perf-1234.map");
	unlink_rel("tmp");
	unlink_rel("elsewhere/perf-1234.map");
	unlink_rel("elsewhere");
	close(root_fd);
	remove_temp_dir(temp_root);
	temp_root = NULL;
}

/* perfmap_open() on this process: /proc/self/root is "/", so the map is the real /tmp/perf-PID.map. */
static void test_open_self(void **state)
{
	char path[64], why[256];
	uint32_t pid = (uint32_t)getpid();
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", pid);
	unlink(path);
	fd = perfmap_open(pid, pid, why, sizeof(why));
	assert_int_equal(fd, -ENOENT);
	write_file_or_fail(path, "1000 10 f\n", 10);
	fd = perfmap_open(pid, pid, why, sizeof(why));
	if (fd < 0)
		print_error("perfmap_open: %s\n", why);
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
	/* no such process */
	assert_int_equal(perfmap_open(UINT32_MAX, 1, why, sizeof(why)), -ESRCH);
}

/* A file that grows, line by line and in the middle of lines, then one rewritten. */
static void test_read_more(void **state)
{
	static const char *const parts[] = {
		"1000 10 a\n2000 1", "0 b\n", "", "3000 10 c\n4000 10 d\n",
	};
	char *dir = make_temp_dir_or_fail(), *path = path_join_or_fail(dir, "perf-1.map");
	struct perfmap *m = new_or_fail();
	uint64_t offset = 0, written = 0;
	int fd;

	(void)state;
	write_file_or_fail(path, "", 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(perfmap__read_more(m, fd, &offset, 4), 0);
	for (size_t i = 0; i < N(parts); i++) {
		FILE *f = fopen(path, "a");
		ssize_t n;
		uint64_t got = 0;

		assert_non_null(f);
		fputs(parts[i], f);
		fclose(f);
		written += strlen(parts[i]);
		/* at most 4 bytes a call */
		while ((n = perfmap__read_more(m, fd, &offset, 4)) > 0) {
			assert_true(n <= 4);
			got += (uint64_t)n;
		}
		assert_int_equal(n, 0);
		assert_int_equal(got, strlen(parts[i]));
		assert_int_equal(offset, written);
	}
	assert_int_equal(perfmap__count(m), 4);
	assert_string_equal(perfmap__find(m, 0x200f)->name, "b");
	assert_int_equal(perfmap__read_more(m, fd, &offset, 0), -EINVAL);

	/* rewritten longer than what was read: the bytes before the offset changed */
	{
		char big[256];

		memset(big, 'z', sizeof(big));
		memcpy(big, "1000 10 A\n", 10);
		big[sizeof(big) - 1] = '\n';
		write_file_or_fail(path, big, sizeof(big));
		assert_int_equal(perfmap__read_more(m, fd, &offset, 1 << 20), -ESTALE);
	}
	/* shrunk below the offset */
	write_file_or_fail(path, "1000 10 a\n", 10);
	assert_int_equal(perfmap__read_more(m, fd, &offset, 1 << 20), -ESTALE);
	close(fd);
	perfmap__free(m);
	unlink(path);
	free(path);
	remove_temp_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_held_line),
		cmocka_unit_test(test_latest_wins),
		cmocka_unit_test(test_random_against_scan),
		cmocka_unit_test(test_nested_hostile),
		cmocka_unit_test(test_find_after_each_line),
		cmocka_unit_test(test_names_cut),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_openat),
		cmocka_unit_test(test_open_self),
		cmocka_unit_test(test_read_more),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
