/* SPDX-License-Identifier: BSD-2-Clause */
/* The symbolizing filter: context (reset, module, mmap) kept, presentation elements replaced. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buildid/buildid.h"
#include "filter.h"
#include "markup.h"
#include "symbolize/symbolize.h"
#include "common/hmap.h"
#include "util/text.h"
#include "common/vec.h"

/* A multi-line element longer than this is not one: written as the text it is. */
#define MULTILINE_MAX (1u << 20)
/* Inlined frames shown per address; DWARF from a hostile file can claim more. */
#define MAX_FRAMES 64
/* Frames kept for addresses seen before, before the cache starts over. */
#define CACHE_FRAMES_MAX (1u << 22)

struct module {
	uint64_t id;
	char *name;
	uint8_t *build_id;
	size_t build_id_len;
	struct sym_module *sym;	/* looked up on first use */
	bool sym_tried;
};

struct map {
	uint64_t start, size, rel;	/* rel: the module-relative address of start */
	struct module *mod;
	char mode[4];
};

struct markup_filter {
	struct symbolizer *sym;
	FILE *out;
	struct markup_filter_opts opts;
	struct module **mods;
	size_t nmods, mods_cap;
	struct hmap *mod_ids;		/* module id -> index in mods + 1 */
	struct map *maps;		/* by start, none overlapping */
	size_t nmaps, maps_cap;
	/* the "[[[ELF module ...]]]" line being built: its module and its mmaps */
	struct module *mil;
	struct map *mil_maps;
	size_t nmil_maps, mil_maps_cap;
	/* the line being filtered, for error columns */
	const char *line;
	size_t len;
	unsigned long lineno;
	const char *eol;
	/* a multi-line element in progress */
	char *ml;
	size_t ml_len, ml_cap;
	unsigned long ml_lineno;
	size_t ml_col;			/* where it begins on its first line, 0-based */
	struct markup_node *deferred;
	size_t ndeferred, deferred_cap;
	bool dangling;			/* an SGR state written and not reset */
	unsigned long errors;
	/* inlined frames by (module, module-relative address) */
	struct hmap *cache;
	struct sym_frame *cframes;
	size_t ncframes, cframes_cap;
};

struct markup_filter *markup_filter__new(struct symbolizer *sym, FILE *out,
					 const struct markup_filter_opts *opts)
{
	struct markup_filter *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->sym = sym;
	f->out = out;
	if (opts)
		f->opts = *opts;
	if (!(f->mod_ids = hmap__new(HMAP_U64)) || !(f->cache = hmap__new(HMAP_U128))) {
		markup_filter__free(f);
		errno = ENOMEM;
		return NULL;
	}
	return f;
}

static void clear_context(struct markup_filter *f)
{
	for (size_t i = 0; i < f->nmods; i++) {
		free(f->mods[i]->name);
		free(f->mods[i]->build_id);
		free(f->mods[i]);
	}
	f->nmods = 0;
	f->nmaps = 0;
	hmap__free(f->mod_ids);
	f->mod_ids = hmap__new(HMAP_U64);
}

void markup_filter__free(struct markup_filter *f)
{
	if (!f)
		return;
	clear_context(f);
	hmap__free(f->mod_ids);
	free(f->mods);
	free(f->maps);
	free(f->mil_maps);
	free(f->ml);
	free(f->deferred);
	hmap__free(f->cache);
	free(f->cframes);
	free(f);
}

unsigned long markup_filter__errors(const struct markup_filter *f)
{
	return f->errors;
}

/* Report an error at @at, a byte of the current line or of the multi-line element. */
static void error_at(struct markup_filter *f, const char *at, const char *fmt, ...)
{
	unsigned long line = f->lineno;
	size_t col = 1;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	f->errors++;
	/* at the end of the input there is no current line (f->line NULL) */
	if (at && f->line && at >= f->line && at <= f->line + f->len) {
		col = at - f->line + 1;
	} else if (at && f->ml && at >= f->ml && at <= f->ml + f->ml_len) {
		const char *bol = f->ml;

		line = f->ml_lineno;
		for (const char *p = f->ml; p < at; p++)
			if (*p == '\n') {
				line++;
				bol = p + 1;
			}
		col = at - bol + 1 + (bol == f->ml ? f->ml_col : 0);
	}
	if (f->opts.error)
		f->opts.error(f->opts.ctx, line, col, msg);
}

static void put_span(struct markup_filter *f, struct markup_span s)
{
	fwrite(s.s, 1, s.len, f->out);
}

static bool span_is(struct markup_span s, const char *what)
{
	return s.len == strlen(what) && !memcmp(s.s, what, s.len);
}

/* A name from a binary: printed under the one escaping rule (control bytes, bad UTF-8). */
static void put_name(struct markup_filter *f, const char *name)
{
	text_put(f->out, name, 0);
}

/* llvm-symbolizer's printRawElement: "[[[tag:field:...]]]", an element it could not present. */
static void put_raw(struct markup_filter *f, const struct markup_node *n)
{
	fputs("[[[", f->out);
	put_span(f, n->tag);
	if (n->nfields) {
		putc(':', f->out);
		put_span(f, n->body);
	}
	fputs("]]]", f->out);
}

/* --- fields --- */

static int digit(char c, unsigned radix)
{
	int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
		c >= 'A' && c <= 'F' ? c - 'A' + 10 : 99;

	return d < (int)radix ? d : -1;
}

/* Digits in @radix, all of @s, no sign, at most 64 bits. */
static bool parse_uint(const char *s, size_t len, unsigned radix, uint64_t *out)
{
	uint64_t v = 0;

	if (!len)
		return false;
	for (size_t i = 0; i < len; i++) {
		int d = digit(s[i], radix);

		if (d < 0 || v > (UINT64_MAX - d) / radix)
			return false;
		v = v * radix + d;
	}
	*out = v;
	return true;
}

static bool type_error(struct markup_filter *f, struct markup_span s, const char *what)
{
	error_at(f, s.s, "expected %s; found '%.*s'", what, (int)s.len, s.s);
	return false;
}

/* %p: 0x and hex digits, or all zeros. */
static bool parse_addr(struct markup_filter *f, struct markup_span s, uint64_t *out)
{
	size_t zeros = 0;

	while (zeros < s.len && s.s[zeros] == '0')
		zeros++;
	if (s.len && zeros == s.len) {
		*out = 0;
		return true;
	}
	if (s.len < 2 || s.s[0] != '0' || s.s[1] != 'x' || !parse_uint(s.s + 2, s.len - 2, 16, out))
		return type_error(f, s, "address");
	return true;
}

/* %i: hex after 0x, binary after 0b, octal after 0o or 0, else decimal. */
static bool parse_int(struct markup_filter *f, struct markup_span s, const char *what,
		      uint64_t *out)
{
	unsigned radix = 10;
	size_t skip = 0;

	if (s.len > 1 && s.s[0] == '0') {
		char c = s.s[1] | 0x20;

		if (c == 'x' || c == 'b' || c == 'o') {
			radix = c == 'x' ? 16 : c == 'b' ? 2 : 8;
			skip = 2;
		} else if (s.s[1] >= '0' && s.s[1] <= '9') {
			radix = 8;
			skip = 1;
		}
	}
	if (!parse_uint(s.s + skip, s.len - skip, radix, out))
		return type_error(f, s, what);
	return true;
}

static bool check_fields(struct markup_filter *f, const struct markup_node *n, size_t want)
{
	if (n->nfields == want)
		return true;
	error_at(f, n->tag.s + n->tag.len, "expected %zu field(s); found %zu", want, n->nfields);
	return false;
}

static bool check_fields_between(struct markup_filter *f, const struct markup_node *n,
				 size_t least, size_t most)
{
	if (n->nfields < least) {
		error_at(f, n->tag.s + n->tag.len, "expected at least %zu field(s); found %zu",
			 least, n->nfields);
		return false;
	}
	if (n->nfields > most) {
		error_at(f, n->tag.s + n->tag.len, "expected at most %zu field(s); found %zu",
			 most, n->nfields);
		return false;
	}
	return true;
}

/* :ra or :pc; @is_ra set. */
static bool parse_pc_type(struct markup_filter *f, struct markup_span s, bool *is_ra)
{
	if (span_is(s, "ra") || span_is(s, "pc")) {
		*is_ra = s.s[0] == 'r';
		return true;
	}
	return type_error(f, s, "PC type");
}

/* --- context --- */

static struct module *find_module(struct markup_filter *f, uint64_t id)
{
	uint64_t *v;

	return hmap__find_u64(f->mod_ids, id, &v) ? NULL : f->mods[*v - 1];
}

/* The mmap holding @addr, or NULL. */
static const struct map *containing(const struct markup_filter *f, uint64_t addr)
{
	size_t lo = 0, hi = f->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr - f->maps[lo - 1].start >= f->maps[lo - 1].size)
		return NULL;
	return &f->maps[lo - 1];
}

static void end_module_line(struct markup_filter *f)
{
	if (!f->mil)
		return;
	/* the mmaps in address order (insertion sort: they arrive mostly sorted) */
	for (size_t i = 1; i < f->nmil_maps; i++)
		for (size_t j = i; j && f->mil_maps[j - 1].start > f->mil_maps[j].start; j--) {
			struct map t = f->mil_maps[j];

			f->mil_maps[j] = f->mil_maps[j - 1];
			f->mil_maps[j - 1] = t;
		}
	for (size_t i = 0; i < f->nmil_maps; i++) {
		const struct map *m = &f->mil_maps[i];

		fprintf(f->out, "%c[0x%" PRIx64 "-0x%" PRIx64 "](%s)", i ? ',' : ' ', m->start,
			m->start + m->size - 1, m->mode);
	}
	fprintf(f->out, "]]]%s", f->eol);
	f->mil = NULL;
	f->nmil_maps = 0;
}

static void begin_module_line(struct markup_filter *f, struct module *m)
{
	fprintf(f->out, "[[[ELF module #0x%" PRIx64 " \"", m->id);
	fputs(m->name, f->out);
	putc('"', f->out);
	f->mil = m;
}

static void filter_node(struct markup_filter *f, const struct markup_node *n);

static void flush_deferred(struct markup_filter *f)
{
	end_module_line(f);
	for (size_t i = 0; i < f->ndeferred; i++)
		filter_node(f, &f->deferred[i]);
	f->ndeferred = 0;
}

static void do_reset(struct markup_filter *f, const struct markup_node *n)
{
	if (!check_fields(f, n, 0))
		return;
	if (!f->nmods && !f->nmaps)
		return;
	flush_deferred(f);
	put_raw(f, n);
	fputs(f->eol, f->out);
	f->mil = NULL;
	clear_context(f);
}

static void do_module(struct markup_filter *f, const struct markup_node *n)
{
	struct markup_span id_s = n->fields[0], build_id = n->fields[3];
	struct module *m;
	uint64_t id, *slot;

	if (n->nfields < 3) {
		check_fields_between(f, n, 3, SIZE_MAX);
		return;
	}
	if (!parse_int(f, id_s, "module ID", &id))
		return;
	if (!span_is(n->fields[2], "elf")) {
		error_at(f, n->fields[2].s, "unknown module type");
		return;
	}
	if (!check_fields(f, n, 4))
		return;
	if (!build_id.len || build_id.len % 2 || build_id.len / 2 > 64) {
		type_error(f, build_id, "build ID");
		return;
	}
	for (size_t i = 0; i < build_id.len; i++)
		if (digit(build_id.s[i], 16) < 0) {
			type_error(f, build_id, "build ID");
			return;
		}
	if (find_module(f, id)) {
		error_at(f, id_s.s, "duplicate module ID");
		return;
	}
	if (VEC_RESERVE(f->mods, f->mods_cap, f->nmods + 1, 16) ||
	    !(m = calloc(1, sizeof(*m))))
		goto nomem;
	m->id = id;
	m->name = strndup(n->fields[1].s, n->fields[1].len);
	m->build_id = malloc(build_id.len / 2);
	if (!m->name || !m->build_id || hmap__entry_u64(f->mod_ids, id, &slot)) {
		free(m->name);
		free(m->build_id);
		free(m);
		goto nomem;
	}
	m->build_id_len = build_id.len / 2;
	for (size_t i = 0; i < m->build_id_len; i++)
		m->build_id[i] = digit(build_id.s[2 * i], 16) << 4 | digit(build_id.s[2 * i + 1], 16);
	f->mods[f->nmods++] = m;
	*slot = f->nmods;
	flush_deferred(f);
	begin_module_line(f, m);
	fputs("; BuildID=", f->out);
	buildid_fput(f->out, m->build_id, m->build_id_len);
	return;
nomem:
	error_at(f, n->text.s, "out of memory");
}

static bool parse_mode(struct markup_filter *f, struct markup_span s, char *mode)
{
	size_t i = 0, k = 0;

	for (const char *c = "rwx"; *c && i < s.len; c++)
		if ((s.s[i] | 0x20) == *c) {
			mode[k++] = *c;
			i++;
		}
	mode[k] = 0;
	if (!s.len || i != s.len)
		return type_error(f, s, "mode");
	return true;
}

static void do_mmap(struct markup_filter *f, const struct markup_node *n)
{
	struct map m = { 0 };
	uint64_t mod_id;
	size_t at;

	if (n->nfields < 3) {
		check_fields_between(f, n, 3, SIZE_MAX);
		return;
	}
	if (!parse_addr(f, n->fields[0], &m.start) || !parse_int(f, n->fields[1], "size", &m.size))
		return;
	if (!span_is(n->fields[2], "load")) {
		error_at(f, n->fields[2].s, "unknown mmap type");
		return;
	}
	if (!check_fields(f, n, 6) || !parse_int(f, n->fields[3], "module ID", &mod_id) ||
	    !parse_mode(f, n->fields[4], m.mode))
		return;
	if (!(m.mod = find_module(f, mod_id))) {
		error_at(f, n->fields[3].s, "unknown module ID");
		return;
	}
	if (!parse_addr(f, n->fields[5], &m.rel))
		return;
	/* as llvm-symbolizer checks: the new mmap holds the next one's start, or the one before holds its start */
	{
		size_t lo = 0, hi = f->nmaps;
		const struct map *o = NULL;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (f->maps[mid].start <= m.start)
				lo = mid + 1;
			else
				hi = mid;
		}
		at = lo;
		if (at < f->nmaps && f->maps[at].start - m.start < m.size)
			o = &f->maps[at];
		else if (at && (f->maps[at - 1].start == m.start ||
				m.start - f->maps[at - 1].start < f->maps[at - 1].size))
			o = &f->maps[at - 1];
		if (o) {
			error_at(f, n->fields[0].s,
				 "overlapping mmap: #0x%" PRIx64 " [0x%" PRIx64 "-0x%" PRIx64 "]",
				 o->mod->id, o->start, o->start + o->size - 1);
			return;
		}
	}
	if (VEC_RESERVE(f->maps, f->maps_cap, f->nmaps + 1, 16) ||
	    VEC_RESERVE(f->mil_maps, f->mil_maps_cap, f->nmil_maps + 1, 16)) {
		error_at(f, n->text.s, "out of memory");
		return;
	}
	memmove(&f->maps[at + 1], &f->maps[at], (f->nmaps - at) * sizeof(*f->maps));
	f->maps[at] = m;
	f->nmaps++;
	if (f->mil != m.mod) {
		flush_deferred(f);
		begin_module_line(f, m.mod);
		fputs("; adds", f->out);
	}
	f->mil_maps[f->nmil_maps++] = m;
}

/* Whether @n is a contextual element (handled here: the rest of its line is dropped). */
static bool try_contextual(struct markup_filter *f, const struct markup_node *n)
{
	if (n->kind != MARKUP_ELEMENT)
		return false;
	if (span_is(n->tag, "mmap"))
		do_mmap(f, n);
	else if (span_is(n->tag, "reset"))
		do_reset(f, n);
	else if (span_is(n->tag, "module"))
		do_module(f, n);
	else
		return false;
	return true;
}

/* --- presentation --- */

/*
 * The symbolizer's module for @m, or NULL when no file has its build ID
 * (reported at @field, the address that needed it).
 */
static struct sym_module *module_sym(struct markup_filter *f, struct module *m,
				     struct markup_span field)
{
	if (!m->sym_tried) {
		m->sym_tried = true;
		m->sym = symbolizer__module(f->sym, m->build_id, m->build_id_len, "");
	}
	if (m->sym && sym_module__found(m->sym))
		return m->sym;
	{
		char hex[2 * BUILDID_MAX + 1];

		buildid_hex(hex, sizeof(hex), m->build_id,
			    m->build_id_len < BUILDID_MAX ? m->build_id_len : BUILDID_MAX);
		error_at(f, field.s, "could not find build ID '%s'", hex);
	}
	return NULL;
}

/* The inlined frames at @rel of @sm, cached: @return their number (at most MAX_FRAMES). */
static size_t frames_at(struct markup_filter *f, struct sym_module *sm, uint64_t rel,
			const struct sym_frame **out)
{
	struct sym_frame frames[MAX_FRAMES];
	uint64_t *slot;
	size_t n;

	if (!hmap__find_u128(f->cache, (uintptr_t)sm, rel, &slot)) {
		*out = f->cframes + (*slot >> 8);
		return *slot & 0xff;
	}
	n = symbolizer__lookup_inlined(f->sym, sm, rel, frames, MAX_FRAMES);
	if (n > MAX_FRAMES)
		n = MAX_FRAMES;
	if (f->ncframes + n > CACHE_FRAMES_MAX) {
		hmap__free(f->cache);
		f->ncframes = 0;
		if (!(f->cache = hmap__new(HMAP_U128)))
			goto uncached;
	}
	if (VEC_RESERVE(f->cframes, f->cframes_cap, f->ncframes + n + 1, 1024) ||
	    hmap__entry_u128(f->cache, (uintptr_t)sm, rel, &slot))
		goto uncached;
	memcpy(f->cframes + f->ncframes, frames, n * sizeof(*frames));
	*slot = (uint64_t)f->ncframes << 8 | n;
	*out = f->cframes + f->ncframes;
	f->ncframes += n;
	return n;
uncached:
	/* still answered, from a copy that lives until the next lookup */
	if (!f->cache)
		f->cache = hmap__new(HMAP_U128);
	if (!VEC_RESERVE(f->cframes, f->cframes_cap, f->ncframes + n + 1, 1024)) {
		memcpy(f->cframes + f->ncframes, frames, n * sizeof(*frames));
		*out = f->cframes + f->ncframes;
		return n;
	}
	return 0;
}

/* An address of a pc, bt or data element: its mmap and module, or false (reported, raw). */
static bool place(struct markup_filter *f, const struct markup_node *n, struct markup_span field,
		  uint64_t addr, const struct map **map, struct sym_module **sm)
{
	if (!(*map = containing(f, addr))) {
		error_at(f, field.s, "no mmap covers address");
		put_raw(f, n);
		return false;
	}
	if (!(*sm = module_sym(f, (*map)->mod, field))) {
		put_raw(f, n);
		return false;
	}
	return true;
}

static void do_symbol(struct markup_filter *f, const struct markup_node *n)
{
	char *raw, *dm;

	if (!check_fields(f, n, 1))
		return;
	if (!(raw = strndup(n->fields[0].s, n->fields[0].len))) {
		error_at(f, n->text.s, "out of memory");
		return;
	}
	dm = symbolizer__demangle(raw);
	put_name(f, dm ? dm : raw);
	free(dm);
	free(raw);
}

static void do_pc(struct markup_filter *f, const struct markup_node *n)
{
	const struct sym_frame *fr;
	struct sym_module *sm;
	const struct map *map;
	bool is_ra = false;
	uint64_t addr;
	size_t k;

	if (!check_fields_between(f, n, 1, 2) || !parse_addr(f, n->fields[0], &addr) ||
	    (n->nfields == 2 && !parse_pc_type(f, n->fields[1], &is_ra)))
		return;
	/* a pc without a type is a precise code location; a return address's call is one byte before */
	addr -= is_ra;
	if (!place(f, n, n->fields[0], addr, &map, &sm))
		return;
	k = frames_at(f, sm, addr - map->start + map->rel, &fr);
	if (!k || (!fr[k - 1].name && !fr[0].file && !fr[0].line)) {
		put_raw(f, n);
		return;
	}
	/* the function the code is in (the outermost of an inlined chain), the innermost line */
	put_name(f, fr[k - 1].name ? fr[k - 1].name : "<invalid>");
	putc('[', f->out);
	put_name(f, fr[0].file ? fr[0].file : "<invalid>");
	fprintf(f->out, ":%u]", fr[0].line);
}

static void do_bt(struct markup_filter *f, const struct markup_node *n)
{
	static const struct sym_frame none;
	const struct sym_frame *fr;
	struct sym_module *sm;
	const struct map *map;
	uint64_t num, addr, rel;
	bool is_ra = true;
	char head[32];
	size_t k;

	if (!check_fields_between(f, n, 2, 3))
		return;
	if (!parse_uint(n->fields[0].s, n->fields[0].len, 10, &num)) {
		type_error(f, n->fields[0], "frame number");
		return;
	}
	if (!parse_addr(f, n->fields[1], &addr) ||
	    (n->nfields == 3 && !parse_pc_type(f, n->fields[2], &is_ra)))
		return;
	/* a frame without a type is a return address */
	addr -= is_ra;
	/* reported at the frame number, where llvm-symbolizer puts its caret */
	if (!place(f, n, n->fields[0], addr, &map, &sm))
		return;
	rel = addr - map->start + map->rel;
	k = frames_at(f, sm, rel, &fr);
	if (!k) {
		fr = &none;
		k = 1;
	}
	snprintf(head, sizeof(head), "#%" PRIu64, num);
	for (size_t i = 0; i < k; i++) {
		fprintf(f->out, "%6s", head);
		if (i + 1 == k)
			fputs("   ", f->out);
		else
			fprintf(f->out, ".%-2zu", i + 1);
		fprintf(f->out, " 0x%016" PRIx64 " ", addr);
		if (fr[i].name || fr[i].file || fr[i].line || fr[i].column) {
			put_name(f, fr[i].name ? fr[i].name : "<invalid>");
			putc(' ', f->out);
			put_name(f, fr[i].file ? fr[i].file : "<invalid>");
			fprintf(f->out, ":%u:%u ", fr[i].line, fr[i].column);
		}
		putc('(', f->out);
		fputs(map->mod->name, f->out);
		fprintf(f->out, "+0x%" PRIx64 ")", rel);
		if (i + 1 != k)
			fputs(f->eol, f->out);
	}
}

static void do_data(struct markup_filter *f, const struct markup_node *n)
{
	struct sym_module *sm;
	const struct map *map;
	struct sym_info info;
	uint64_t addr;

	if (!check_fields(f, n, 1) || !parse_addr(f, n->fields[0], &addr) ||
	    !place(f, n, n->fields[0], addr, &map, &sm))
		return;
	if (symbolizer__lookup_data(f->sym, sm, addr - map->start + map->rel, &info))
		put_name(f, info.name);
	else
		fputs("<invalid>", f->out);
}

/*
 * hexdict: the pairs as written (without the element's braces and the line
 * breaks that only open and close it), then one line per value that falls
 * in an mmap: "  KEY = function[file:line] (module+0xREL)" for code,
 * "  KEY = variable+0xOFF (module+0xREL)" for data.
 */
static void do_hexdict(struct markup_filter *f, const struct markup_node *n)
{
	/* an empty body may have no bytes at all */
	const char *s = n->body.s ? n->body.s : "", *end = s + n->body.len;
	const char *key = NULL, *p;
	size_t keylen = 0;
	bool bad = false;

	/* the dump as written, less the break after "hexdict:" and the indent before "}}}" */
	if (s < end && *s == '\r')
		s++;
	if (s < end && *s == '\n')
		s++;
	for (p = end; p > s && (p[-1] == ' ' || p[-1] == '\t'); p--)
		;
	if (p > s && p[-1] == '\n')
		end = p - 1 - (p - 1 > s && p[-2] == '\r');
	fwrite(s, 1, end - s, f->out);
	for (p = s; p < end;) {
		const char *tok, *colon;
		size_t len;
		uint64_t v;

		while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
			p++;
		if (p == end)
			break;
		tok = p;
		while (p < end && !(*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
			p++;
		len = p - tok;
		if (!key && (colon = memchr(tok, ':', len)) && colon > tok) {
			key = tok;
			keylen = colon - tok;
			if (colon + 1 == p)
				continue;	/* "KEY:" then whitespace, then the value */
			tok = colon + 1;
			len = p - tok;
		}
		if (!key) {
			error_at(f, tok, "expected key:value pair; found '%.*s'", (int)len, tok);
			bad = true;
			break;
		}
		if (!(len && strspn(tok, "0") >= len) &&
		    !(len > 2 && tok[0] == '0' && tok[1] == 'x' && parse_uint(tok + 2, len - 2, 16, &v))) {
			error_at(f, tok, "expected value of %.*s; found '%.*s'", (int)keylen, key,
				 (int)len, tok);
			bad = true;
			break;
		}
		if (len && strspn(tok, "0") >= len)
			v = 0;
		{
			const struct map *map = v ? containing(f, v) : NULL;
			struct sym_module *sm = map ? map->mod->sym : NULL;
			uint64_t rel = map ? v - map->start + map->rel : 0;

			if (map && !map->mod->sym_tried) {
				map->mod->sym_tried = true;
				sm = map->mod->sym = symbolizer__module(f->sym, map->mod->build_id,
									map->mod->build_id_len, "");
			}
			if (sm && sym_module__found(sm)) {
				const struct sym_frame *fr;
				struct sym_info info;
				size_t k;

				fprintf(f->out, "%s  %.*s = ", f->eol, (int)keylen, key);
				if (strchr(map->mode, 'x') && (k = frames_at(f, sm, rel, &fr)) &&
				    fr[k - 1].name) {
					put_name(f, fr[k - 1].name);
					putc('[', f->out);
					put_name(f, fr[0].file ? fr[0].file : "<invalid>");
					fprintf(f->out, ":%u]", fr[0].line);
				} else if (!strchr(map->mode, 'x') &&
					   symbolizer__lookup_data(f->sym, sm, rel, &info)) {
					put_name(f, info.name);
					if (info.offset)
						fprintf(f->out, "+0x%" PRIx64, info.offset);
				} else {
					fputs("?", f->out);
				}
				fprintf(f->out, " (%s+0x%" PRIx64 ")", map->mod->name, rel);
			}
		}
		key = NULL;
	}
	if (!bad && key) {
		error_at(f, key, "expected value of %.*s; found nothing", (int)keylen, key);
		bad = true;
	}
}

/* dumpfile: a dump was published; shown as "[[[dumpfile TYPE NAME]]]" (nothing is run on it). */
static void do_dumpfile(struct markup_filter *f, const struct markup_node *n)
{
	if (!check_fields(f, n, 2))
		return;
	fputs("[[[dumpfile ", f->out);
	put_span(f, n->fields[0]);
	putc(' ', f->out);
	put_span(f, n->fields[1]);
	fputs("]]]", f->out);
}

static void do_sgr(struct markup_filter *f, const struct markup_node *n)
{
	if (!f->opts.color)
		return;
	put_span(f, n->text);
	f->dangling = n->text.s[2] != '0';
}

static void filter_node(struct markup_filter *f, const struct markup_node *n)
{
	if (n->kind == MARKUP_SGR) {
		do_sgr(f, n);
		return;
	}
	if (n->kind == MARKUP_TEXT) {
		put_span(f, n->text);
		return;
	}
	for (size_t i = 0; i < n->tag.len; i++)
		if (n->tag.s[i] < 'a' || n->tag.s[i] > 'z') {
			error_at(f, n->tag.s, "tags must be all lowercase characters");
			return;
		}
	if (span_is(n->tag, "symbol"))
		do_symbol(f, n);
	else if (span_is(n->tag, "pc"))
		do_pc(f, n);
	else if (span_is(n->tag, "bt"))
		do_bt(f, n);
	else if (span_is(n->tag, "data"))
		do_data(f, n);
	else if (span_is(n->tag, "hexdict"))
		do_hexdict(f, n);
	else if (span_is(n->tag, "dumpfile"))
		do_dumpfile(f, n);
	else {
		/* passed through as llvm-symbolizer does, but not handled: an error */
		error_at(f, n->tag.s, "unknown element '%.*s'", (int)n->tag.len, n->tag.s);
		put_span(f, n->text);
	}
}

static int defer(struct markup_filter *f, const struct markup_node *n)
{
	if (VEC_RESERVE(f->deferred, f->deferred_cap, f->ndeferred + 1, 16))
		return -ENOMEM;
	f->deferred[f->ndeferred++] = *n;
	return 0;
}

static int ml_append(struct markup_filter *f, const char *s, size_t len)
{
	if (VEC_RESERVE(f->ml, f->ml_cap, f->ml_len + len + 1, 256))
		return -ENOMEM;
	memcpy(f->ml + f->ml_len, s, len);
	f->ml_len += len;
	return 0;
}

/* A multi-line element never closed (or too long to be one): its lines written as text. */
static void ml_abandon(struct markup_filter *f, const char *why)
{
	struct markup_node n;
	size_t pos = 0;
	const char *line = f->line;
	size_t len = f->len;

	error_at(f, f->ml, "%s", why);
	/* its text as a line of its own, SGR escapes handled */
	f->line = f->ml;
	f->len = f->ml_len;
	while (markup_next(f->ml, f->ml_len, &pos, &n))
		if (n.kind != MARKUP_ELEMENT)
			filter_node(f, &n);
		else
			put_span(f, n.text);
	f->line = line;
	f->len = len;
	f->ml_len = 0;
}

/*
 * Whether an unclosed "{{{" at @s begins an element cut at the line's end
 * ("{{{pc:0x1", "{{{reset"): a tag of lowercase letters, then ':' or the
 * end of the line. Other text with braces ("{{{not markup") is text.
 */
static bool looks_like_element(const char *s, size_t len)
{
	size_t i = 3;

	while (i < len && ((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_'))
		i++;
	return i > 3 && (i == len || s[i] == ':' || s[i] == '\n' || s[i] == '\r');
}

int markup_filter__line(struct markup_filter *f, const char *line, size_t len)
{
	struct markup_node n;
	size_t pos = 0, stop = len;
	bool opening = false;
	long mlb;
	int err = 0;

	f->lineno++;
	f->line = line;
	f->len = len;
	f->eol = len >= 2 && line[len - 2] == '\r' && line[len - 1] == '\n' ? "\r\n" : "\n";
	f->ndeferred = 0;
	if (f->dangling) {
		/* the spec's state ends with its line */
		fputs("\033[0m", f->out);
		f->dangling = false;
	}
	if (f->ml_len && markup_open_before_end(line, len) >= 0) {
		/* another element begins: the hexdict was never closed; this line is its own */
		ml_abandon(f, "hexdict not closed before the next element: written as text");
	} else if (f->ml_len) {
		long end = markup_multiline_end(line, len);

		if (end < 0 && f->ml_len + len <= MULTILINE_MAX)
			return ml_append(f, line, len);
		if (end < 0 || (size_t)end > MULTILINE_MAX - f->ml_len) {
			/* then this line is a line of its own */
			ml_abandon(f, "multi-line element longer than 1 MiB: written as text");
		} else {
			size_t mpos = 0;

			if ((err = ml_append(f, line, end)))
				return err;
			pos = end;
			/* the element joined from its lines, then the rest of this line */
			if (markup_next(f->ml, f->ml_len, &mpos, &n) && (err = defer(f, &n)))
				return err;
		}
	}
	if ((mlb = markup_multiline_begin(line, len, pos)) >= 0) {
		stop = mlb;
		opening = true;
	} else if ((mlb = markup_unclosed(line, len, pos)) >= 0 && looks_like_element(line + mlb,
										       len - mlb)) {
		/* as llvm-symbolizer, text; but an error: no other element spans lines */
		error_at(f, line + mlb, "element not closed on its line (only hexdict may span "
			 "lines): left as text");
	}
	while (markup_next(line, stop, &pos, &n)) {
		if (try_contextual(f, &n))
			goto done;
		if ((err = defer(f, &n)))
			goto done;
	}
	flush_deferred(f);
done:
	f->ndeferred = 0;
	if (f->ml_len && !opening)
		f->ml_len = 0;	/* the element that ended on this line was written */
	if (opening) {
		f->ml_len = 0;
		f->ml_lineno = f->lineno;
		f->ml_col = mlb;
		err = ml_append(f, line + mlb, len - mlb);
	}
	return err;
}

void markup_filter__end_file(struct markup_filter *f)
{
	if (f->ml_len) {
		f->line = NULL;
		f->len = 0;
		ml_abandon(f, "multi-line element not closed before the end of its file");
	}
	f->lineno = 0;
}

void markup_filter__finish(struct markup_filter *f)
{
	if (f->ml_len) {
		f->line = NULL;
		f->len = 0;
		ml_abandon(f, "multi-line element not closed before the end of the input");
	}
	end_module_line(f);
	if (f->dangling) {
		fputs("\033[0m", f->out);
		f->dangling = false;
	}
	f->mil = NULL;
	clear_context(f);
}
