// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: load the input as a profile into a session, then export it in
 * the five formats (collapsed, pprof, markup, svg, otlp) into memory, and check
 * the shape of each: whole lines, a gzip stream holding well-formed protobuf
 * with pprof's empty first string, a whole SVG document, an OTLP request whose
 * every index is within its dictionary table, each table starting with its
 * zero value. OTLP also goes through export_otlp_opts() with resources of the
 * fuzzer's choosing, samples left out, addresses unsymbolized.
 *
 * Where the rule for text from outside is built in (user/util/text.h, issue
 * 12), text from the profile must also come out as it wants: valid UTF-8, no
 * control characters but the format's own newlines, and each collapsed line
 * a stack and a count. SFPROF_FUZZ_STRICT_TEXT=0 or 1 in the environment
 * turns that off or on whatever the build.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fuzz_session.h"
#include "profile_input.h"
#include "report/export.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#if defined(__has_include)
#if __has_include("util/text.h")
#define STRICT_TEXT_DEFAULT 1
#endif
#endif
#ifndef STRICT_TEXT_DEFAULT
#define STRICT_TEXT_DEFAULT 0
#endif

/* Bytes of inflated pprof output looked at: a bound on one input's time. */
#define MAX_PPROF_BYTES (16u << 20)

static volatile uint64_t sink;
static int strict_text = -1;

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_export: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* The length of the UTF-8 sequence at @p (RFC 3629: no overlongs, surrogates, or past U+10FFFF), 0 if invalid. */
static size_t utf8_len(const uint8_t *p, size_t n)
{
	uint8_t c = p[0];
	size_t len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 :
		     c >= 0xf0 && c <= 0xf4 ? 4 : 0;

	if (!len || len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) ||
	    (c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f))
		return 0;
	return len;
}

/* Issue 12's rule for text: valid UTF-8, and no control character but those @allowed. */
static void check_text(const char *fmt, const uint8_t *p, size_t n, const char *allowed)
{
	for (size_t i = 0; i < n;) {
		size_t len = utf8_len(p + i, n - i);

		if (!len)
			broken("%s: invalid UTF-8 at byte %zu (0x%02x)", fmt, i, p[i]);
		if ((p[i] < 0x20 || p[i] == 0x7f) && !strchr(allowed, p[i]))
			broken("%s: control character 0x%02x at byte %zu", fmt, p[i], i);
		i += len;
	}
}

/* Each line a stack, a space and a count; the counts add up to every sample's weight. */
static void check_collapsed(const char *out, size_t len, const struct session *s)
{
	uint64_t total = 0;

	/* samples of weight 0 took no time: they have no line */
	if (session__totals(s)->weight && !len)
		broken("collapsed: nothing for samples of weight %llu",
		       (unsigned long long)session__totals(s)->weight);
	if (len && out[len - 1] != '\n')
		broken("collapsed: the last line is not whole");
	if (!strict_text)
		return;
	check_text("collapsed", (const uint8_t *)out, len, "\n");
	for (const char *p = out, *end = out + len; p < end;) {
		const char *eol = memchr(p, '\n', end - p), *sp = eol;
		uint64_t count = 0;

		while (sp > p && sp[-1] >= '0' && sp[-1] <= '9')
			sp--;
		if (sp == eol || sp == p || sp[-1] != ' ' || sp - 1 == p)
			broken("collapsed: a line not a stack and a count: \"%.*s\"", (int)(eol - p), p);
		for (const char *d = sp; d < eol; d++)
			count = count * 10 + (uint64_t)(*d - '0');
		total += count;
		p = eol + 1;
	}
	if (total != session__totals(s)->weight)
		broken("collapsed: counts add up to %llu, the samples weigh %llu",
		       (unsigned long long)total, (unsigned long long)session__totals(s)->weight);
}

static bool get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (*p == end)
			return false;
		*v |= (uint64_t)(**p & 0x7f) << shift;
		if (!(*(*p)++ & 0x80))
			return true;
	}
	return false;
}

/* A protobuf message: every field's tag, wire type and length within the message. */
static void walk_message(const uint8_t *p, const uint8_t *end, unsigned depth, size_t *strings,
			 bool *first_empty)
{
	while (p < end) {
		uint64_t key, v;

		if (!get_varint(&p, end, &key) || !(key >> 3))
			broken("pprof: a bad field key at depth %u", depth);
		switch (key & 7) {
		case 0:
			if (!get_varint(&p, end, &v))
				broken("pprof: a bad varint at depth %u", depth);
			break;
		case 2:
			if (!get_varint(&p, end, &v) || v > (uint64_t)(end - p))
				broken("pprof: a field longer than its message at depth %u", depth);
			/* profile.string_table (6): text from the profile */
			if (!depth && key >> 3 == 6) {
				if (!(*strings)++)
					*first_empty = !v;
				if (strict_text)
					check_text("pprof string", p, v, "");
			} else if (!depth && (key >> 3) <= 5) {
				/* sample, mapping, location, function: messages */
				walk_message(p, p + v, depth + 1, strings, first_empty);
			}
			p += v;
			break;
		default:
			broken("pprof: wire type %u, which it never writes", (unsigned)(key & 7));
		}
	}
}

static void check_pprof(const uint8_t *out, size_t len)
{
	size_t cap = 4096, strings = 0;
	uint8_t *plain = malloc(cap);
	bool first_empty = false;
	z_stream z;
	int ret;

	if (!plain)
		return;
	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 16 + 15) != Z_OK) {
		free(plain);
		return;
	}
	z.next_in = (uint8_t *)out;
	z.avail_in = len;
	do {
		if (z.total_out == cap) {
			uint8_t *more = cap < MAX_PPROF_BYTES ? realloc(plain, cap * 2) : NULL;

			if (!more)
				goto out;
			plain = more;
			cap *= 2;
		}
		z.next_out = plain + z.total_out;
		z.avail_out = cap - z.total_out;
		ret = inflate(&z, Z_NO_FLUSH);
	} while (ret == Z_OK);
	if (ret != Z_STREAM_END || z.avail_in)
		broken("pprof: not one whole gzip stream (zlib %d, %u bytes after it)", ret,
		       z.avail_in);
	walk_message(plain, plain + z.total_out, 0, &strings, &first_empty);
	if (!strings || !first_empty)
		broken("pprof: string_table[0] is not \"\" (%zu strings)", strings);
out:
	inflateEnd(&z);
	free(plain);
}

/* --- OTLP: an ExportProfilesServiceRequest (docs/otlp/sfprof_otlp.proto) --- */

/* A length-delimited field of a message, or a varint's value; false at the end. */
struct pb_field {
	unsigned num, wire;
	uint64_t v;
	const uint8_t *p;	/* LEN: its bytes, v of them */
};

static bool next_field(const uint8_t **p, const uint8_t *end, struct pb_field *f, const char *what)
{
	uint64_t key;

	if (*p == end)
		return false;
	if (!get_varint(p, end, &key) || !(key >> 3))
		broken("otlp: %s: a bad field key", what);
	f->num = key >> 3;
	f->wire = key & 7;
	f->p = NULL;
	switch (f->wire) {
	case 0:
		if (!get_varint(p, end, &f->v))
			broken("otlp: %s: a bad varint", what);
		break;
	case 1:
		if (end - *p < 8)
			broken("otlp: %s: a fixed64 past the end", what);
		*p += 8;
		break;
	case 2:
		if (!get_varint(p, end, &f->v) || f->v > (uint64_t)(end - *p))
			broken("otlp: %s: a field longer than its message", what);
		f->p = *p;
		*p += f->v;
		break;
	default:
		broken("otlp: %s: wire type %u, which it never writes", what, f->wire);
	}
	return true;
}

/* Each index (varint or packed) of field @num of the message at @p..@end is below @n. */
static void check_indices(const uint8_t *p, const uint8_t *end, unsigned num, uint64_t n,
			  const char *what)
{
	struct pb_field f;

	while (next_field(&p, end, &f, what)) {
		const uint8_t *q = f.p;
		uint64_t v = f.v;

		if (f.num != num)
			continue;
		if (f.wire == 0 && v >= n)
			broken("otlp: %s %llu, the table has %llu", what, (unsigned long long)v,
			       (unsigned long long)n);
		while (f.wire == 2 && q < f.p + f.v) {
			if (!get_varint(&q, f.p + f.v, &v))
				broken("otlp: %s: a bad packed varint", what);
			if (v >= n)
				broken("otlp: %s %llu, the table has %llu", what, (unsigned long long)v,
				       (unsigned long long)n);
		}
	}
}

enum { T_MAPPING, T_LOCATION, T_FUNCTION, T_LINK, T_STRING, T_ATTRIBUTE, T_STACK, T_N };

static void check_otlp(const uint8_t *out, size_t len)
{
	static const char *const tables[T_N] = { "mapping", "location", "function", "link",
						 "string", "attribute", "stack" };
	const uint8_t *p = out, *end = out + len, *dict = NULL, *dict_end = NULL;
	uint64_t count[T_N] = { 0 };
	struct pb_field f, g, h;
	unsigned ndicts = 0;

	while (next_field(&p, end, &f, "request")) {
		if (f.wire != 2 || (f.num != 1 && f.num != 2))
			broken("otlp: request field %u (wire %u)", f.num, f.wire);
		if (f.num == 2) {
			dict = f.p;
			dict_end = f.p + f.v;
			ndicts++;
		}
	}
	if (ndicts != 1)
		broken("otlp: %u dictionaries, not one", ndicts);
	for (p = dict; next_field(&p, dict_end, &f, "dictionary");) {
		if (f.wire != 2 || f.num < 1 || f.num > T_N)
			broken("otlp: dictionary field %u (wire %u)", f.num, f.wire);
		/* element 0: the zero value (a Link of zero IDs, 16 and 8 bytes: 28 with their keys) */
		if (!count[f.num - 1]++ && f.v != (f.num - 1 == T_LINK ? 28u : 0u))
			broken("otlp: %s_table[0] is %llu bytes, not the zero value", tables[f.num - 1],
			       (unsigned long long)f.v);
		if (f.num - 1 == T_STRING && strict_text)
			check_text("otlp string", f.p, f.v, "");
	}
	for (int t = 0; t < T_N; t++)
		if (!count[t])
			broken("otlp: no %s_table[0]", tables[t]);
	for (p = dict; next_field(&p, dict_end, &f, "dictionary");) {
		const uint8_t *e = f.p + f.v, *q;

		switch (f.num - 1) {
		case T_MAPPING:
			check_indices(f.p, e, 4, count[T_STRING], "mapping filename");
			check_indices(f.p, e, 5, count[T_ATTRIBUTE], "mapping attribute");
			break;
		case T_LOCATION:
			check_indices(f.p, e, 1, count[T_MAPPING], "location mapping");
			for (q = f.p; next_field(&q, e, &g, "location");)
				if (g.num == 3 && g.wire == 2)
					check_indices(g.p, g.p + g.v, 1, count[T_FUNCTION],
						      "line function");
			break;
		case T_FUNCTION:
			for (unsigned n = 1; n <= 3; n++)
				check_indices(f.p, e, n, count[T_STRING], "function string");
			break;
		case T_ATTRIBUTE:
			check_indices(f.p, e, 1, count[T_STRING], "attribute key");
			break;
		case T_STACK:
			check_indices(f.p, e, 1, count[T_LOCATION], "stack location");
			break;
		}
	}
	/* ResourceProfiles -> ScopeProfiles (2) -> Profile (2) -> Sample (2) */
	for (p = out; next_field(&p, end, &f, "request");) {
		const uint8_t *q, *r, *t;

		if (f.num != 1)
			continue;
		for (q = f.p; next_field(&q, f.p + f.v, &g, "resource profiles");) {
			if (g.num != 2 || g.wire != 2)
				continue;
			for (r = g.p; next_field(&r, g.p + g.v, &h, "scope profiles");) {
				struct pb_field s;

				if (h.num != 2 || h.wire != 2)
					continue;
				for (t = h.p; next_field(&t, h.p + h.v, &s, "profile");) {
					if (s.wire != 2)
						continue;
					if (s.num == 1 || s.num == 5)
						for (unsigned n = 1; n <= 2; n++)
							check_indices(s.p, s.p + s.v, n, count[T_STRING],
								      "value type string");
					if (s.num != 2)
						continue;
					check_indices(s.p, s.p + s.v, 1, count[T_STACK], "sample stack");
					check_indices(s.p, s.p + s.v, 2, count[T_ATTRIBUTE],
						      "sample attribute");
				}
			}
		}
	}
}

/* export_otlp_opts()'s resources: three services, samples spread over them by index. */
static int otlp_resource_of(void *ctx, const struct session *s, size_t sample)
{
	(void)ctx;
	(void)s;
	/* 3 is past the resources, and left out as -1 is */
	return sample % 5 == 4 ? -1 : (int)(sample % 5);
}

static void check_svg(const char *out, size_t len)
{
	static const char head[] = "<?xml", tail[] = "</svg>\n";

	if (len < sizeof(head) - 1 + sizeof(tail) - 1 || memcmp(out, head, sizeof(head) - 1) ||
	    memcmp(out + len - (sizeof(tail) - 1), tail, sizeof(tail) - 1))
		broken("svg: not a whole document (%zu bytes)", len);
	if (strict_text)
		check_text("svg", (const uint8_t *)out, len, "\n\t");
}

static void check_markup(const char *out, size_t len)
{
	if (len && out[len - 1] != '\n')
		broken("markup: the last line is not whole");
	if (strict_text)
		check_text("markup", (const uint8_t *)out, len, "\n");
}

enum format { COLLAPSED, PPROF, MARKUP, SVG, OTLP, OTLP_OPTS };

static void export(const struct session *s, enum format fmt)
{
	static const char *const names[] = { "collapsed", "pprof", "markup", "svg", "otlp",
					     "otlp (options)" };
	static const struct otlp_attr attrs[] = {
		{ "service.name", "fuzz", 0 }, { "process.pid", NULL, -1 },
		{ "host.name", "\xff\x01", 0 },
	};
	static const struct otlp_resource resources[] = {
		{ attrs, 3 }, { attrs, 1 }, { NULL, 0 },
	};
	const struct otlp_opts otlp = {
		.no_symbolize = true, .no_thread_label = true, .resources = resources,
		.nresources = 3, .resource_of = otlp_resource_of, .time_ns = 1, .duration_ns = 2,
	};
	const struct svg_opts svg = { .title = "fuzz", .min_width = 0.1 };
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	int err;

	if (!f)
		return;
	switch (fmt) {
	case COLLAPSED: err = export_collapsed(s, f, false); break;
	case PPROF: err = export_pprof(s, f); break;
	case MARKUP: err = export_markup(s, f); break;
	case OTLP: err = export_otlp(s, f); break;
	case OTLP_OPTS: err = export_otlp_opts(s, f, &otlp); break;
	default: err = export_svg(s, f, &svg); break;
	}
	if (fclose(f))
		err = err ? err : -ENOMEM;
	if (err && err != -ENOMEM)
		broken("%s: returned %d", names[fmt], err);
	if (!err) {
		switch (fmt) {
		case COLLAPSED: check_collapsed(out, len, s); break;
		case PPROF: check_pprof((const uint8_t *)out, len); break;
		case MARKUP: check_markup(out, len); break;
		case OTLP:
		case OTLP_OPTS: check_otlp((const uint8_t *)out, len); break;
		default: check_svg(out, len); break;
		}
	}
	sink += len;
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile_diag diag = { "" };
	struct profile_input in;
	struct session *s;

	if (strict_text < 0) {
		const char *e = getenv("SFPROF_FUZZ_STRICT_TEXT");

		strict_text = e && *e ? strcmp(e, "0") != 0 : STRICT_TEXT_DEFAULT;
	}
	if (profile_input__open(&in, data, size))
		broken("cannot hand %zu bytes to the session", size);
	s = session__open(in.path, fuzz_session_opts(), &diag);
	if (s) {
		for (enum format fmt = COLLAPSED; fmt <= OTLP_OPTS; fmt++)
			export(s, fmt);
		session__free(s);
	}
	profile_input__close(&in);
	return 0;
}
