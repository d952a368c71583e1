/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof report: self and total shares per command, process, module and symbol, as perf report. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "util/hmap.h"
#include "session.h"
#include "strtab.h"
#include "util/text.h"
#include "util/vec.h"

static const char usage[] =
	"usage: sfprof report [-i FILE] [--sort KEYS] [--children] [--stdio]\n"
	"                     [--debug-file-directory DIR]... [--no-debuginfod] [--kallsyms FILE]\n"
	"\n"
	"Print where a profile's samples were taken (default sfprof.data), as\n"
	"`perf report --stdio` does: a header with the totals, then one row per\n"
	"distinct combination of the sort keys with its share of all samples.\n"
	"\n"
	"  -i, --input FILE            the profile\n"
	"  -s, --sort KEYS             comma-separated: comm, pid, dso, sym (default comm,dso,sym)\n"
	"      --children              add the share of samples with the row anywhere in\n"
	"                              their stack (counted once per sample), and sort by it\n"
	"      --stdio                 text output (the only mode; accepted as perf's)\n"
	"      --debug-file-directory DIR\n"
	"                              look for DIR/.build-id/xx/rest.debug files too\n"
	"      --no-debuginfod         never ask debuginfod, even with DEBUGINFOD_URLS set\n"
	"      --kallsyms FILE         kernel symbols (default /proc/kallsyms)\n"
	"\n"
	"Self is the share of samples whose innermost frame (in the kernel if the\n"
	"sample was taken there) falls in the row. Symbols are [.] for user code and\n"
	"[k] for the kernel; an address no symbol covers shows as module+0xoffset.\n"
	"Names, modules and comms are printed escaped: bytes that are not UTF-8 and\n"
	"control characters as \\xHH, \\n, \\t, \\r or \\uHHHH, a backslash as \\\\.\n"
	"In a profile made from a trace (sfprof import), samples are weighted by\n"
	"nanoseconds of wall time and the shares are shares of that time.\n";

enum sort_key { KEY_COMM, KEY_PID, KEY_DSO, KEY_SYM, NKEYS };

static const char *const key_names[NKEYS] = { "comm", "pid", "dso", "sym" };
static const char *const key_titles[NKEYS] = { "Command", "Pid:Command", "Shared Object",
					       "Symbol" };

/* Samples grouped before rows are made: one per (stack, thread name, pid). */
struct group {
	uint32_t stack;
	uint32_t pid;
	const char *comm;	/* the thread's name */
	const char *pcomm;	/* the process's name */
	uint64_t weight;
};

struct row {
	uint32_t key[NKEYS];	/* strtab ids (pid: the pid itself) */
	const char *pcomm;	/* for the pid column */
	uint64_t self, children;
	size_t stamp;		/* last group counted in children, + 1 */
};

struct report {
	struct session *s;
	enum sort_key keys[NKEYS];
	size_t nkeys;
	bool use[NKEYS];
	bool children;
	struct strtab strs;	/* every column's text but the pid's */
	uint32_t *frame_dso, *frame_sym;	/* per session frame: strtab ids, 0 = not yet */
	struct group *groups;
	size_t ngroups, groups_cap;
	struct row *rows;
	size_t nrows, rows_cap;
	struct hmap *group_map;	/* (stack << 32 | pid, comm) -> group index + 1 */
	struct hmap *row_map;	/* row key, two u32 to a u64 -> row index + 1 */
	char buf[8192];	/* one symbol column; demangled templates run long */
};

/* The id of @str in the report's strings, as printed. @return 0 or -ENOMEM. */
static int intern_shown(struct report *r, const char *str, uint32_t *id)
{
	int64_t v = strtab__intern(&r->strs, str, strlen(str));

	*id = (uint32_t)v;
	return v < 0 ? (int)v : 0;
}

/*
 * The id of @str from outside (a comm, a module's name), escaped: the report
 * keeps its strings as it prints them. The escaping is injective, so rows
 * stay as distinct as the names.
 */
static int intern(struct report *r, const char *str, uint32_t *id)
{
	size_t n;

	if (text_clean(str, 0))
		return intern_shown(r, str, id);
	n = text_escape(r->buf, sizeof(r->buf), str, 0);
	if (n >= sizeof(r->buf)) {
		char *heap = text_dup(str, 0);
		int err;

		if (!heap)
			return -ENOMEM;
		err = intern_shown(r, heap, id);
		free(heap);
		return err;
	}
	return intern_shown(r, r->buf, id);
}

static int parse_sort(struct report *r, const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	r->nkeys = 0;
	memset(r->use, 0, sizeof(r->use));
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t k;

		for (k = 0; k < NKEYS && strcmp(tok, key_names[k]); k++)
			;
		if (k == NKEYS || r->use[k]) {
			fprintf(stderr, "sfprof report: --sort: %s key '%s' (keys: comm, pid, dso, sym)\n",
				k == NKEYS ? "unknown" : "repeated", tok);
			err = -EINVAL;
			break;
		}
		r->use[k] = true;
		r->keys[r->nkeys++] = k;
	}
	if (!err && !r->nkeys) {
		fprintf(stderr, "sfprof report: --sort needs at least one key\n");
		err = -EINVAL;
	}
	free(copy);
	return err;
}

/* Group the samples by what rows can tell apart: stack, thread name, pid. */
static int group_samples(struct report *r)
{
	size_t n = session__nsamples(r->s);

	if (!(r->group_map = hmap__new(HMAP_U128)))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct session_sample *smp = session__sample(r->s, i);
		uint64_t *idx;

		/* names by pointer: equal names kept twice meet again in one row, by content */
		if (hmap__entry_u128(r->group_map,
				     (uint64_t)smp->stack << 32 | (r->use[KEY_PID] ? smp->pid : 0),
				     r->use[KEY_COMM] ? (uintptr_t)smp->comm : 0, &idx))
			return -ENOMEM;
		if (!*idx) {
			struct group *g;

			if (VEC_RESERVE(r->groups, r->groups_cap, r->ngroups + 1, 64))
				return -ENOMEM;
			g = &r->groups[r->ngroups];
			g->stack = smp->stack;
			g->pid = smp->pid;
			g->comm = smp->comm ? smp->comm : "";
			g->pcomm = session__image(r->s, smp->image)->comm;
			if (!g->pcomm || !*g->pcomm)
				g->pcomm = g->comm;
			g->weight = 0;
			*idx = ++r->ngroups;
		}
		r->groups[*idx - 1].weight += smp->weight;
	}
	return 0;
}

/* Frame @i's module and symbol columns, interned once per frame. */
static int frame_ids(struct report *r, uint32_t i, uint32_t *dso, uint32_t *sym)
{
	const struct session_frame *f;
	char name[320];
	int err;

	if (r->frame_sym[i]) {
		*dso = r->frame_dso[i];
		*sym = r->frame_sym[i];
		return 0;
	}
	f = session__frame(r->s, i);
	if ((err = intern(r, f->dso ? f->dso : "[unknown]", dso)))
		return err;
	/* a name longer than the column's room is cut, never inside an escape */
	r->buf[0] = '[';
	r->buf[1] = f->kernel ? 'k' : '.';
	r->buf[2] = ']';
	r->buf[3] = ' ';
	text_escape(r->buf + 4, sizeof(r->buf) - 4, session_frame_name(f, name, sizeof(name)), 0);
	if ((err = intern_shown(r, r->buf, sym)))
		return err;
	r->frame_dso[i] = *dso;
	r->frame_sym[i] = *sym;
	return 0;
}

/* The row of group @g at frame @frame (UINT32_MAX: a sample without frames). */
static int row_of(struct report *r, const struct group *g, uint32_t comm, uint32_t frame,
		  struct row **out)
{
	uint32_t key[NKEYS] = { 0 };
	uint64_t *idx;
	int err;

	if (r->use[KEY_COMM])
		key[KEY_COMM] = comm;
	if (r->use[KEY_PID])
		key[KEY_PID] = g->pid;
	if (r->use[KEY_DSO] || r->use[KEY_SYM]) {
		uint32_t dso, sym;

		if (frame == UINT32_MAX) {
			if ((err = intern_shown(r, "[unknown]", &dso)) ||
			    (err = intern_shown(r, "[.] [unknown]", &sym)))
				return err;
		} else if ((err = frame_ids(r, frame, &dso, &sym))) {
			return err;
		}
		if (r->use[KEY_DSO])
			key[KEY_DSO] = dso;
		if (r->use[KEY_SYM])
			key[KEY_SYM] = sym;
	}
	if (hmap__entry_u128(r->row_map, (uint64_t)key[0] << 32 | key[1],
			     (uint64_t)key[2] << 32 | key[3], &idx))
		return -ENOMEM;
	if (!*idx) {
		struct row *row;

		if (VEC_RESERVE(r->rows, r->rows_cap, r->nrows + 1, 64))
			return -ENOMEM;
		row = &r->rows[r->nrows];
		memset(row, 0, sizeof(*row));
		memcpy(row->key, key, sizeof(key));
		row->pcomm = g->pcomm;
		*idx = ++r->nrows;
	}
	*out = &r->rows[*idx - 1];
	return 0;
}

static int make_rows(struct report *r)
{
	size_t nframes = session__nframes(r->s);
	int err;

	r->frame_dso = calloc(nframes ? nframes : 1, sizeof(*r->frame_dso));
	r->frame_sym = calloc(nframes ? nframes : 1, sizeof(*r->frame_sym));
	r->row_map = hmap__new(HMAP_U128);
	if (!r->frame_dso || !r->frame_sym || !r->row_map)
		return -ENOMEM;
	/* id 0 is never a frame's symbol: frame_ids() uses 0 for "not yet" */
	{
		uint32_t none;

		if ((err = intern_shown(r, "", &none)))
			return err;
	}
	for (size_t i = 0; i < r->ngroups; i++) {
		const struct group *g = &r->groups[i];
		const struct session_stack *st = session__stack(r->s, g->stack);
		uint32_t comm = 0;
		struct row *row;

		if (r->use[KEY_COMM] && (err = intern(r, g->comm, &comm)))
			return err;
		if ((err = row_of(r, g, comm, st->count ? st->frames[0] : UINT32_MAX, &row)))
			return err;
		row->self += g->weight;
		/* groups come in sample order: a pid shows the name of its last image */
		row->pcomm = g->pcomm;
		if (!r->children)
			continue;
		if (!st->count) {
			row->children += g->weight;
			continue;
		}
		for (uint32_t j = 0; j < st->count; j++) {
			if (session__frame(r->s, st->frames[j])->omitted)
				continue;
			if ((err = row_of(r, g, comm, st->frames[j], &row)))
				return err;
			/* once per sample however often the row recurs in the stack */
			if (row->stamp != i + 1) {
				row->stamp = i + 1;
				row->children += g->weight;
			}
		}
	}
	return 0;
}

static int row_cmp(const void *pa, const void *pb, void *arg)
{
	const struct row *a = pa, *b = pb;
	const struct report *r = arg;

	if (r->children && a->children != b->children)
		return a->children > b->children ? -1 : 1;
	if (a->self != b->self)
		return a->self > b->self ? -1 : 1;
	for (size_t k = 0; k < r->nkeys; k++) {
		enum sort_key key = r->keys[k];
		int c;

		if (key == KEY_PID) {
			if (a->key[key] != b->key[key])
				return a->key[key] < b->key[key] ? -1 : 1;
			continue;
		}
		c = strcmp(r->strs.strs[a->key[key]], r->strs.strs[b->key[key]]);
		if (c)
			return c;
	}
	return 0;
}

/* The text of column @key of @row. */
static const char *cell(struct report *r, const struct row *row, enum sort_key key, char *buf,
			size_t cap)
{
	if (key == KEY_PID) {
		int n = snprintf(buf, cap, "%7u:", row->key[KEY_PID]);

		text_escape(buf + n, cap - n, row->pcomm ? row->pcomm : "", 0);
		return buf;
	}
	return r->strs.strs[row->key[key]];
}

static void print_header(struct report *r, const char *path)
{
	const struct session_totals *t = session__totals(r->s);
	const struct profile_meta *meta = session__meta(r->s);
	double secs = t->samples ? (t->last_ns - t->first_ns) / 1e9 : 0;

	printf("# sfprof report of %s\n", path);
	if (meta->cmdline && *meta->cmdline) {
		fputs("# Command line: ", stdout);
		text_put(stdout, meta->cmdline, 0);
		putchar('\n');
	}
	printf("#\n");
	if (t->lost_unknown)
		printf("# Total Lost Samples: unknown (the file's count is damaged)\n#\n");
	else
		printf("# Total Lost Samples: %" PRIu64 "\n#\n", t->lost);
	if (meta->flags & PROFILE_F_WALL_NS) {
		/* an imported trace: weights are ns of self time, shares are shares of time */
		printf("# Samples: %" PRIu64 "  of event 'wall-time' (weights in nanoseconds)\n",
		       t->samples);
		printf("# Event count: %" PRIu64 " ns (%.6f s of wall time)\n", t->weight,
		       t->weight / 1e9);
		printf("# Duration: %.6f s (first to last sample)", secs);
	} else {
		printf("# Samples: %" PRIu64 "  of event 'cpu-clock'\n", t->samples);
		printf("# Event count (approx.): %" PRIu64 "\n", t->weight);
		printf("# Duration: %.3f s (first to last sample)", secs);
	}
	if (meta->freq_hz)
		printf(", %u Hz", meta->freq_hz);
	printf("\n# Processes: %" PRIu64 "\n", t->processes);
	if (t->truncated)
		printf("# Truncated stacks: %" PRIu64 " samples (%.2f%%) whose user stack ended early\n",
		       t->truncated, 100.0 * t->truncated / t->samples);
	printf("#\n");
}

static void print_rows(struct report *r)
{
	uint64_t total = session__totals(r->s)->weight;
	size_t width[NKEYS] = { 0 };
	char buf[128];

	for (size_t k = 0; k < r->nkeys; k++)
		width[k] = strlen(key_titles[r->keys[k]]);
	for (size_t i = 0; i < r->nrows; i++)
		for (size_t k = 0; k < r->nkeys; k++) {
			size_t n = strlen(cell(r, &r->rows[i], r->keys[k], buf, sizeof(buf)));

			if (n > width[k])
				width[k] = n;
		}
	printf("# %s%s", r->children ? "Children      Self" : "Overhead", "");
	for (size_t k = 0; k < r->nkeys; k++)
		printf("  %-*s", k + 1 < r->nkeys ? (int)width[k] : 0, key_titles[r->keys[k]]);
	printf("\n# %s", r->children ? "........  ........" : "........");
	for (size_t k = 0; k < r->nkeys; k++) {
		putchar(' ');
		putchar(' ');
		for (size_t j = 0; j < width[k]; j++)
			putchar('.');
	}
	printf("\n#\n");
	for (size_t i = 0; i < r->nrows; i++) {
		const struct row *row = &r->rows[i];

		if (!r->children && !row->self)
			continue;
		if (r->children)
			printf("  %7.2f%%  %7.2f%%", total ? 100.0 * row->children / total : 0.0,
			       total ? 100.0 * row->self / total : 0.0);
		else
			printf("  %7.2f%%", total ? 100.0 * row->self / total : 0.0);
		for (size_t k = 0; k < r->nkeys; k++)
			printf("  %-*s", k + 1 < r->nkeys ? (int)width[k] : 0,
			       cell(r, row, r->keys[k], buf, sizeof(buf)));
		putchar('\n');
	}
}

static void report_free(struct report *r)
{
	strtab__release(&r->strs);
	free(r->frame_dso);
	free(r->frame_sym);
	free(r->groups);
	free(r->rows);
	hmap__free(r->group_map);
	hmap__free(r->row_map);
	session__free(r->s);
}

int cmd_report(int argc, char **argv)
{
	enum { OPT_CHILDREN = 256, OPT_STDIO };
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "sort", required_argument, NULL, 's' },
		{ "children", no_argument, NULL, OPT_CHILDREN },
		{ "stdio", no_argument, NULL, OPT_STDIO },
		SYM_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct report r = { .keys = { KEY_COMM, KEY_DSO, KEY_SYM }, .nkeys = 3,
			    .use = { [KEY_COMM] = true, [KEY_DSO] = true, [KEY_SYM] = true } };
	struct session_opts sopts = { 0 };
	const char **dirs = NULL;
	const char *path = "sfprof.data";
	struct profile_diag diag;
	bool damaged;
	int c, err, ret = 1;

	dirs = calloc(argc, sizeof(*dirs));
	if (!dirs) {
		fprintf(stderr, "sfprof report: out of memory\n");
		return 1;
	}
	while ((c = getopt_long(argc, argv, "i:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			path = optarg;
			break;
		case 's':
			if (parse_sort(&r, optarg)) {
				free(dirs);
				return 2;
			}
			break;
		case OPT_CHILDREN:
			r.children = true;
			break;
		case OPT_STDIO:
			break;
		case 'h':
			fputs(usage, stdout);
			free(dirs);
			return 0;
		default:
			if (sym_option(c, optarg, &sopts.sym, dirs))
				break;
			fputs(usage, stderr);
			free(dirs);
			return 2;
		}
	}
	if (optind != argc) {
		fputs(usage, stderr);
		free(dirs);
		return 2;
	}
	/* report shows no source lines: DWARF is not worth opening for it */
	sopts.sym.no_lines = true;
	r.s = session__open(path, &sopts, &diag);
	if (!r.s) {
		fprintf(stderr, "sfprof report: %s\n", diag.reason);
		free(dirs);
		return 1;
	}
	damaged = profile_print_notices(path, session__status(r.s));
	if ((err = group_samples(&r)) || (err = make_rows(&r))) {
		fprintf(stderr, "sfprof report: %s: %s\n", path, strerror(-err));
		goto out;
	}
	/* no samples, no rows: and qsort_r() takes no NULL array, even of none */
	if (r.nrows)
		qsort_r(r.rows, r.nrows, sizeof(*r.rows), row_cmp, &r);
	print_header(&r, path);
	print_rows(&r);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "sfprof report: writing the report: %s\n", strerror(errno));
		goto out;
	}
	ret = damaged ? 1 : 0;
out:
	report_free(&r);
	free(dirs);
	return ret;
}
