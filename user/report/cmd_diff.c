/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof diff: per-symbol shares of a baseline profile and how they changed in another, as perf diff. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "session.h"
#include "strtab.h"
#include "common/hmap.h"
#include "util/text.h"
#include "common/vec.h"

static const char usage[] =
	"usage: sfprof diff [OLD [NEW]] [--sort KEYS] [--percentage absolute|relative]\n"
	"                   [--dsos LIST] [--comms LIST] [--symbols LIST] [--baseline-only]\n"
	"                   [--event NAME]\n"
	"                   [--debug-file-directory DIR]... [--no-debuginfod] [--kallsyms FILE]\n"
	"                     [--no-inline] [--python-only]\n"
	"\n"
	"Compare two profiles as `perf diff OLD NEW` does (default sfprof.data.old and\n"
	"sfprof.data, the two last recordings): one row per distinct combination of the\n"
	"sort keys, matched between the files by name (module and symbol names, not\n"
	"addresses: the binaries may have changed). Baseline is the row's self share\n"
	"in OLD; Delta Abs is its share in NEW minus that, in percentage points. Rows\n"
	"are sorted by the size of the change; rows only in OLD come last, with no\n"
	"delta (as perf diff prints them), rows only in NEW have no baseline.\n"
	"\n"
	"  -s, --sort KEYS             comma-separated: comm, dso, sym or symbol\n"
	"                              (default dso,sym)\n"
	"      --percentage MODE       absolute (default): shares of all samples of each\n"
	"                              file; relative: shares of the samples the filters\n"
	"                              keep\n"
	"  -d, --dsos LIST             only samples whose innermost frame is in one of these\n"
	"                              modules (comma-separated file names)\n"
	"  -C, --comms LIST            only samples of threads of these names\n"
	"  -S, --symbols LIST          only samples whose innermost frame is one of these\n"
	"                              functions\n"
	"  -b, --baseline-only         only rows that OLD has\n"
	"      --event NAME            compare event NAME's samples (default: NEW's first\n"
	"                              event with samples; said when NEW has several)\n"
	"      --debug-file-directory DIR\n"
	"                              look for DIR/.build-id/xx/rest.debug files too\n"
	"      --no-debuginfod         never ask debuginfod, even with DEBUGINFOD_URLS set\n"
	"      --kallsyms FILE         kernel symbols (default /proc/kallsyms)\n"
	"      --no-inline             no inlined functions as frames of their own (DWARF's)\n"
	"      --python-only           Python functions alone: no native or kernel frames\n"
	"\n"
	"Symbols are [.] for user code and [k] for the kernel; an address no symbol\n"
	"covers is module+0xoffset, which matches only the same offset in the other\n"
	"file. Names are printed escaped, as report prints them.\n";

enum diff_key { KEY_COMM, KEY_DSO, KEY_SYM, NKEYS };

static const char *const key_titles[NKEYS] = { "Command", "Shared Object", "Symbol" };

enum pct_mode { PCT_ABSOLUTE, PCT_RELATIVE };

struct diff_row {
	uint32_t key[NKEYS];	/* strtab ids */
	uint64_t weight[2];	/* self weight in OLD, NEW */
	bool in[2];
};

/* A comma-separated list of names, for the filters. */
struct name_list {
	char *buf;
	const char **names;
	size_t count;
};

struct diff {
	enum diff_key keys[NKEYS];
	size_t nkeys;
	bool use[NKEYS];
	enum pct_mode pct;
	bool baseline_only;
	struct name_list dsos, comms, symbols;
	struct strtab strs;	/* every column's text, escaped as printed */
	struct diff_row *rows;
	size_t nrows, rows_cap;
	struct hmap *row_map;	/* (comm << 32 | dso, sym) -> row index + 1 */
	uint64_t total[2];	/* every sample's weight, per file */
	uint64_t kept[2];	/* the weight the filters kept */
	char buf[8192];
};

static int name_list__parse(struct name_list *l, const char *arg)
{
	char *tok, *save = NULL;

	free(l->buf);
	free(l->names);
	memset(l, 0, sizeof(*l));
	if (!(l->buf = strdup(arg)) || !(l->names = calloc(strlen(arg) / 2 + 2, sizeof(*l->names))))
		return -ENOMEM;
	for (tok = strtok_r(l->buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		l->names[l->count++] = tok;
	return 0;
}

static void name_list__release(struct name_list *l)
{
	free(l->buf);
	free(l->names);
}

/* Whether @name passes filter @l: no filter, or one of its names. */
static bool name_list__has(const struct name_list *l, const char *name)
{
	if (!l->buf)
		return true;
	for (size_t i = 0; i < l->count; i++)
		if (!strcmp(l->names[i], name))
			return true;
	return false;
}

static int intern_shown(struct diff *d, const char *str, uint32_t *id)
{
	int64_t v = strtab__intern(&d->strs, str, strlen(str));

	*id = (uint32_t)v;
	return v < 0 ? (int)v : 0;
}

/* The id of @str escaped as printed, with @prefix before it. */
static int intern(struct diff *d, const char *prefix, const char *str, uint32_t *id)
{
	size_t plen = strlen(prefix), n;
	char *heap, *joined;
	int err;

	memcpy(d->buf, prefix, plen + 1);
	n = text_escape(d->buf + plen, sizeof(d->buf) - plen, str, 0);
	if (plen + n < sizeof(d->buf))
		return intern_shown(d, d->buf, id);
	/* a demangled template longer than the buffer: escaped on the heap */
	if (!(heap = text_dup(str, 0)))
		return -ENOMEM;
	err = asprintf(&joined, "%s%s", prefix, heap) < 0 ? -ENOMEM : 0;
	free(heap);
	if (err)
		return err;
	err = intern_shown(d, joined, id);
	free(joined);
	return err;
}

static int parse_sort(struct diff *d, const char *arg)
{
	static const struct { const char *name; enum diff_key key; } names[] = {
		{ "comm", KEY_COMM }, { "dso", KEY_DSO }, { "sym", KEY_SYM }, { "symbol", KEY_SYM },
	};
	char *copy = strdup(arg), *tok, *save = NULL;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	d->nkeys = 0;
	memset(d->use, 0, sizeof(d->use));
	for (tok = strtok_r(copy, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save)) {
		size_t k;

		for (k = 0; k < sizeof(names) / sizeof(names[0]) && strcmp(tok, names[k].name); k++)
			;
		if (k == sizeof(names) / sizeof(names[0]) || d->use[names[k].key]) {
			fprintf(stderr, "sfprof diff: --sort: %s key '%s' (keys: comm, dso, sym)\n",
				k == sizeof(names) / sizeof(names[0]) ? "unknown" : "repeated", tok);
			err = -EINVAL;
			break;
		}
		d->use[names[k].key] = true;
		d->keys[d->nkeys++] = names[k].key;
	}
	if (!err && !d->nkeys) {
		fprintf(stderr, "sfprof diff: --sort needs at least one key\n");
		err = -EINVAL;
	}
	free(copy);
	return err;
}

/*
 * The innermost frame of a stack that is a real function: self time is its,
 * not that of the functions inlined at its address, as in report's rows
 * and in perf diff's.
 */
static const struct session_frame *leaf_function(const struct session *s,
						 const struct session_stack *st)
{
	uint32_t i = 0;

	while (i + 1 < st->count && session__frame(s, st->frames[i])->inlined)
		i++;
	return session__frame(s, st->frames[i]);
}

/* Add the samples of file @side (0 OLD, 1 NEW) to the rows. */
static int add_samples(struct diff *d, const struct session *s, int side)
{
	size_t n = session__nsamples(s);
	char name[320];
	int err;

	for (size_t i = 0; i < n; i++) {
		const struct session_sample *smp = session__sample(s, i);
		const struct session_stack *st = session__stack(s, smp->stack);
		const struct session_frame *f = st->count ? leaf_function(s, st) : NULL;
		const char *dso = f && f->dso ? f->dso : "[unknown]";
		const char *sym = f ? session_frame_name(f, name, sizeof(name)) : "[unknown]";
		const char *comm = smp->comm ? smp->comm : "";
		uint32_t key[NKEYS] = { 0 };
		uint64_t *idx;

		d->total[side] += smp->weight;
		if (!name_list__has(&d->dsos, dso) || !name_list__has(&d->symbols, sym) ||
		    !name_list__has(&d->comms, comm))
			continue;
		d->kept[side] += smp->weight;
		if (d->use[KEY_COMM] && (err = intern(d, "", comm, &key[KEY_COMM])))
			return err;
		if (d->use[KEY_DSO] && (err = intern(d, "", dso, &key[KEY_DSO])))
			return err;
		if (d->use[KEY_SYM] &&
		    (err = intern(d, f && f->kernel ? "[k] " : "[.] ", sym, &key[KEY_SYM])))
			return err;
		if (hmap__entry_u128(d->row_map, (uint64_t)key[KEY_COMM] << 32 | key[KEY_DSO],
				     key[KEY_SYM], &idx))
			return -ENOMEM;
		if (!*idx) {
			if (VEC_RESERVE(d->rows, d->rows_cap, d->nrows + 1, 64))
				return -ENOMEM;
			memset(&d->rows[d->nrows], 0, sizeof(d->rows[d->nrows]));
			memcpy(d->rows[d->nrows].key, key, sizeof(key));
			*idx = ++d->nrows;
		}
		d->rows[*idx - 1].weight[side] += smp->weight;
		d->rows[*idx - 1].in[side] = true;
	}
	return 0;
}

/* A row's share of file @side, in percent, as --percentage says. */
static double share(const struct diff *d, const struct diff_row *r, int side)
{
	uint64_t total = d->pct == PCT_RELATIVE ? d->kept[side] : d->total[side];

	return total ? 100.0 * r->weight[side] / total : 0.0;
}

static double delta(const struct diff *d, const struct diff_row *r)
{
	return share(d, r, 1) - share(d, r, 0);
}

static int row_cmp(const void *pa, const void *pb, void *arg)
{
	const struct diff_row *a = pa, *b = pb;
	const struct diff *d = arg;

	/* as perf diff: rows NEW has first, by the size of their change; OLD's alone last */
	if (a->in[1] != b->in[1])
		return a->in[1] ? -1 : 1;
	if (a->in[1]) {
		double x = fabs(delta(d, a)), y = fabs(delta(d, b));

		if (x != y)
			return x > y ? -1 : 1;
	}
	if (a->weight[0] != b->weight[0])
		return a->weight[0] > b->weight[0] ? -1 : 1;
	for (size_t k = 0; k < d->nkeys; k++) {
		int c = strcmp(d->strs.strs[a->key[d->keys[k]]], d->strs.strs[b->key[d->keys[k]]]);

		if (c)
			return c;
	}
	return 0;
}

static void print_rows(const struct diff *d, const char *old, const char *new)
{
	size_t width[NKEYS] = { 0 };

	printf("# sfprof diff\n# Baseline: ");
	text_put(stdout, old, 0);
	printf(" (%" PRIu64 " samples' weight)\n# New:      ", d->total[0]);
	text_put(stdout, new, 0);
	printf(" (%" PRIu64 " samples' weight)\n#\n", d->total[1]);
	for (size_t k = 0; k < d->nkeys; k++)
		width[k] = strlen(key_titles[d->keys[k]]);
	for (size_t i = 0; i < d->nrows; i++)
		for (size_t k = 0; k < d->nkeys; k++) {
			size_t n = strlen(d->strs.strs[d->rows[i].key[d->keys[k]]]);

			if (n > width[k])
				width[k] = n;
		}
	printf("# Baseline  Delta Abs");
	for (size_t k = 0; k < d->nkeys; k++)
		printf("  %-*s", k + 1 < d->nkeys ? (int)width[k] : 0, key_titles[d->keys[k]]);
	printf("\n# ........  .........");
	for (size_t k = 0; k < d->nkeys; k++) {
		printf("  ");
		for (size_t j = 0; j < width[k]; j++)
			putchar('.');
	}
	printf("\n#\n");
	for (size_t i = 0; i < d->nrows; i++) {
		const struct diff_row *r = &d->rows[i];
		char base[16] = "", dlt[16] = "";

		if (d->baseline_only && !r->in[0])
			continue;
		if (r->in[0])
			snprintf(base, sizeof(base), "%.2f%%", share(d, r, 0));
		if (r->in[1]) {
			double v = delta(d, r);

			/* -0.001 is no change: printed +0.00%, never -0.00% */
			snprintf(dlt, sizeof(dlt), "%+.2f%%", fabs(v) < 0.005 ? 0.0 : v);
		}
		printf("  %8s  %9s", base, dlt);
		for (size_t k = 0; k < d->nkeys; k++)
			printf("  %-*s", k + 1 < d->nkeys ? (int)width[k] : 0,
			       d->strs.strs[r->key[d->keys[k]]]);
		putchar('\n');
	}
}

static void diff_release(struct diff *d)
{
	strtab__release(&d->strs);
	free(d->rows);
	hmap__free(d->row_map);
	name_list__release(&d->dsos);
	name_list__release(&d->comms);
	name_list__release(&d->symbols);
}

int cmd_diff(int argc, char **argv)
{
	enum { OPT_PERCENTAGE = 256, OPT_EVENT };
	static const struct option opts[] = {
		{ "sort", required_argument, NULL, 's' },
		{ "percentage", required_argument, NULL, OPT_PERCENTAGE },
		{ "dsos", required_argument, NULL, 'd' },
		{ "comms", required_argument, NULL, 'C' },
		{ "symbols", required_argument, NULL, 'S' },
		{ "baseline-only", no_argument, NULL, 'b' },
		{ "event", required_argument, NULL, OPT_EVENT },
		SYM_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct diff d = { .keys = { KEY_DSO, KEY_SYM }, .nkeys = 2,
			  .use = { [KEY_DSO] = true, [KEY_SYM] = true } };
	const char *paths[2] = { "sfprof.data.old", "sfprof.data" };
	struct session *s[2] = { NULL, NULL };
	struct session_opts sopts = { 0 };
	const char **dirs;
	bool damaged = false;
	const char *event = NULL;
	int c, err = 0, ret = 2, ev;

	dirs = calloc(argc, sizeof(*dirs));
	if (!dirs) {
		fprintf(stderr, "sfprof diff: out of memory\n");
		return 1;
	}
	while ((c = getopt_long(argc, argv, "s:d:C:S:bh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_sort(&d, optarg))
				goto out;
			break;
		case OPT_PERCENTAGE:
			if (!strcmp(optarg, "absolute")) {
				d.pct = PCT_ABSOLUTE;
			} else if (!strcmp(optarg, "relative")) {
				d.pct = PCT_RELATIVE;
			} else {
				fprintf(stderr, "sfprof diff: --percentage: '%s' is neither absolute "
					"nor relative\n", optarg);
				goto out;
			}
			break;
		case 'd':
		case 'C':
		case 'S':
			err = name_list__parse(c == 'd' ? &d.dsos : c == 'C' ? &d.comms : &d.symbols,
					       optarg);
			if (err) {
				fprintf(stderr, "sfprof diff: out of memory\n");
				ret = 1;
				goto out;
			}
			break;
		case 'b':
			d.baseline_only = true;
			break;
		case OPT_EVENT:
			event = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			ret = 0;
			goto out;
		default:
			if (cli_option_default(c, optarg, &sopts.sym, dirs, usage))
				break;
			goto out;
		}
	}
	if (argc - optind > 2) {
		fprintf(stderr, "sfprof diff: two profiles at most: OLD and NEW ('%s' is a third)\n",
			argv[optind + 2]);
		fputs(usage, stderr);
		goto out;
	}
	if (argc - optind == 1) {
		/* perf diff FILE: FILE against perf.data */
		paths[0] = argv[optind];
	} else if (argc - optind == 2) {
		paths[0] = argv[optind];
		paths[1] = argv[optind + 1];
	}
	ret = 1;
	if (!(d.row_map = hmap__new(HMAP_U128))) {
		fprintf(stderr, "sfprof diff: out of memory\n");
		goto out;
	}
	/* no source lines are shown: DWARF is not worth opening for them */
	sopts.sym.no_lines = true;
	for (int i = 0; i < 2; i++) {
		if (!(s[i] = cli_session_open(paths[i], &sopts, &damaged)))
			goto out;
		print_replaced(s[i]);
	}
	/* one event's samples, NEW's choice, compared with OLD's of the same name */
	if ((ev = pick_event(s[1], paths[1], event)) < 0 ||
	    pick_event(s[0], paths[0], session__event(s[1], ev)->name) < 0)
		goto out;
	for (int i = 0; i < 2; i++) {
		if ((err = add_samples(&d, s[i], i))) {
			fprintf(stderr, "sfprof diff: %s: %s\n", paths[i], strerror(-err));
			goto out;
		}
	}
	if (d.nrows)
		qsort_r(d.rows, d.nrows, sizeof(*d.rows), row_cmp, &d);
	print_rows(&d, paths[0], paths[1]);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "sfprof diff: writing: %s\n", strerror(errno));
		goto out;
	}
	ret = damaged ? 1 : 0;
out:
	session__free(s[0]);
	session__free(s[1]);
	diff_release(&d);
	free(dirs);
	return ret;
}
