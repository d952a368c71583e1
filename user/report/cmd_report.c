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
#include "common/hmap.h"
#include "report_filter.h"
#include "report_tree.h"
#include "session.h"
#include "strtab.h"
#include "util/text.h"
#include "common/vec.h"

static const char usage[] =
	"usage: sfprof report [-i FILE] [--sort KEYS] [--children | --no-children] [--stdio]\n"
	"                     [-g [TYPE,THRESHOLD,ORDER]] [-G] [--percent-limit PCT]\n"
	"                     [--comm COMMS] [--pid PIDS] [--tid TIDS] [--dso DSOS]\n"
	"                     [--symbols SYMS] [--time RANGE] [--percentage relative|absolute]\n"
	"                     [--debug-file-directory DIR]... [--no-debuginfod] [--kallsyms FILE]\n"
	"                     [--no-inline] [--python-only]\n"
	"\n"
	"Print where a profile's samples were taken (default sfprof.data), as\n"
	"`perf report --stdio` does: a header with the totals, then one row per\n"
	"distinct combination of the sort keys with its share of all samples; one\n"
	"section per event when the file holds several (-e, --off-cpu).\n"
	"\n"
	"  -i, --input FILE            the profile\n"
	"  -s, --sort KEYS             comma-separated: comm, pid (PID:process name),\n"
	"                              tid (TID:thread name, what perf's pid key shows),\n"
	"                              dso, sym or symbol, srcline, cpu, event (the\n"
	"                              section's event, as a column) (default comm,dso,sym)\n"
	"      --children              add the share of samples with the row anywhere in\n"
	"                              their stack (counted once per sample), and sort by it\n"
	"      --no-children           self shares only (the default)\n"
	"  -g, --call-graph[=TYPE,THRESHOLD,ORDER]\n"
	"                              the call chains under each row, as perf's -g: TYPE\n"
	"                              graph (shares of the total, the default), fractal\n"
	"                              (of the parent), flat, folded, or none; THRESHOLD\n"
	"                              in percent leaves smaller branches out (0.5);\n"
	"                              ORDER callee (callers below the row's function)\n"
	"                              or caller (from the outermost caller down);\n"
	"                              default callee, caller with --children\n"
	"  -G, --inverted              -g with caller order\n"
	"      --percent-limit PCT     leave out rows under PCT percent (and call-graph\n"
	"                              branches, as perf does)\n"
	"      --comm COMMS            only samples of these thread names\n"
	"      --pid PIDS, --tid TIDS  only samples of these processes, threads\n"
	"      --dso DSOS              only rows in these modules (file name or path)\n"
	"      --symbols SYMS          only rows of these functions\n"
	"      --time RANGE            only samples in START,STOP (seconds, as script\n"
	"                              prints times; either may be empty; windows\n"
	"                              separated by spaces), or in percentages of the\n"
	"                              recording: 10%/2 (the second tenth), 0%-10%,30%-40%\n"
	"      --percentage MODE       absolute (shares of all samples, the default) or\n"
	"                              relative (of the samples the filters keep)\n"
	"      --stdio                 text output (the only mode; accepted as perf's)\n"
	"      --debug-file-directory DIR\n"
	"                              look for DIR/.build-id/xx/rest.debug files too\n"
	"      --no-debuginfod         never ask debuginfod, even with DEBUGINFOD_URLS set\n"
	"      --kallsyms FILE         kernel symbols (default /proc/kallsyms)\n"
	"      --no-inline             no inlined functions as frames of their own (DWARF's)\n"
	"      --python-only           Python functions alone: no native or kernel frames\n"
	"\n"
	"Self is the share of samples whose innermost frame (in the kernel if the\n"
	"sample was taken there) falls in the row. Symbols are [.] for user code and\n"
	"[k] for the kernel; an address no symbol covers shows as module+0xoffset.\n"
	"Functions inlined at an address (from DWARF) are frames of their own, shown\n"
	"\"NAME (inlined)\" in chains and --children rows; self time goes to the\n"
	"function they were inlined into, as in perf.\n"
	"Names, modules and comms are printed escaped: bytes that are not UTF-8 and\n"
	"control characters as \\xHH, \\n, \\t, \\r or \\uHHHH, a backslash as \\\\.\n"
	"In a profile made from a trace (sfprof import), samples are weighted by\n"
	"nanoseconds of wall time and the shares are shares of that time; so are\n"
	"off-CPU samples (event offcpu-time), by the time threads were off the CPU.\n";

enum sort_key {
	KEY_COMM, KEY_PID, KEY_TID, KEY_DSO, KEY_SYM, KEY_SRCLINE, KEY_CPU, KEY_EVENT, NKEYS
};

static const char *const key_names[NKEYS] = { "comm", "pid", "tid", "dso", "sym", "srcline",
					       "cpu", "event" };
static const char *const key_titles[NKEYS] = { "Command", "Pid:Command", "Tid:Command",
					       "Shared Object", "Symbol", "Source:Line", "CPU",
					       "Event" };

/* Samples grouped before rows are made: one per (stack, thread name, pid, tid, cpu). */
struct group_key {
	uint32_t stack, pid, tid, cpu;
	uint64_t comm;		/* the thread's name, by pointer */
};

struct group {
	struct group_key key;
	const char *comm;	/* the thread's name */
	const char *pcomm;	/* the process's name */
	uint64_t weight;
};

struct row {
	uint32_t key[NKEYS];	/* strtab ids (pid, tid, cpu: the number itself) */
	const char *pcomm;	/* for the pid column */
	const char *tcomm;	/* for the tid column */
	uint64_t self, children;
	size_t stamp;		/* last group counted in children, + 1 */
	uint32_t tree;		/* its call chains: a root in report.tree */
};

/* What -g asks for. */
struct call_graph {
	bool on;
	enum rtree_mode mode;
	double threshold;
	int order;		/* 0: perf's default, else ORDER_* */
};

enum { ORDER_CALLEE = 1, ORDER_CALLER };

/* One event's samples in the report: the header's figures. */
struct section {
	uint64_t samples, weight, first_ns, last_ns, processes, truncated;
	uint64_t cut;		/* samples whose stack lost frames at the session's bound */
	uint64_t python, py_truncated;	/* samples with Python frames; their chains cut at the cap */
	uint64_t shown_samples, shown_weight;	/* what the filters keep, for --percentage relative */
};

struct report {
	struct session *s;
	enum sort_key keys[NKEYS];
	size_t nkeys;
	bool use[NKEYS];
	bool elide[NKEYS];	/* a filter of one value: the column says nothing */
	bool children;
	bool sort_sym_first;	/* --sort starts with sym: chains skip the row's own function */
	bool relative;
	double percent_limit;
	const char *time_arg;
	struct call_graph cg;
	uint32_t event;		/* the section's: rows are made per event */
	struct report_filter filter;
	struct strtab strs;	/* every column's text but the numbers' */
	uint32_t *frame_dso, *frame_sym, *frame_src, *frame_chain;	/* strtab ids, 0 = not yet */
	uint8_t *frame_pass;	/* --dso, --symbols: 0 not yet, 1 shown, 2 left out */
	struct group *groups;
	size_t ngroups, groups_cap;
	struct row *rows;
	size_t nrows, rows_cap;
	struct hmap *group_map;	/* group_key -> group index + 1 */
	struct hmap *row_map;	/* row key -> row index + 1 */
	struct rtree *tree;
	uint64_t *chain;	/* one sample's chain keys, in the order shown */
	uint32_t *chain_frames;
	size_t chain_cap;
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
		if (!strcmp(tok, "symbol"))
			k = KEY_SYM;
		if (k == NKEYS || r->use[k]) {
			fprintf(stderr, "sfprof report: --sort: %s key '%s' (keys: comm, pid, tid, "
				"dso, sym, symbol, srcline, cpu, event)\n",
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
	r->sort_sym_first = !strncmp(arg, "sym", 3);
	free(copy);
	return err;
}

/*
 * perf's -g argument: print type, threshold, order, key and value in any
 * order, comma-separated. @return 0 or -EINVAL (said on stderr).
 */
static int parse_call_graph(struct report *r, const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	bool threshold = false;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	r->cg.on = true;
	for (tok = strtok_r(copy, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		double v;

		if (!strcmp(tok, "graph")) {
			r->cg.mode = RTREE_GRAPH;
		} else if (!strcmp(tok, "fractal")) {
			r->cg.mode = RTREE_FRACTAL;
		} else if (!strcmp(tok, "flat")) {
			r->cg.mode = RTREE_FLAT;
		} else if (!strcmp(tok, "folded")) {
			r->cg.mode = RTREE_FOLDED;
		} else if (!strcmp(tok, "none")) {
			r->cg.on = false;
		} else if (!strcmp(tok, "caller")) {
			r->cg.order = ORDER_CALLER;
		} else if (!strcmp(tok, "callee")) {
			r->cg.order = ORDER_CALLEE;
		} else if (!strcmp(tok, "function") || !strcmp(tok, "percent")) {
			/* perf's defaults: chains merged by function, shares in percent */
		} else if (!threshold && (v = strtod(tok, &end), end != tok && !*end) &&
			   v >= 0 && v <= 100) {
			r->cg.threshold = v;
			threshold = true;
		} else {
			fprintf(stderr, "sfprof report: -g: '%s' is not one of graph, fractal, flat, "
				"folded, none, caller, callee, function, percent or a threshold "
				"in percent (perf's address, period, count, branch and print "
				"limit are not supported)\n", tok);
			err = -EINVAL;
		}
	}
	free(copy);
	return err;
}

/* The frames a sample counts in, and its leaf: omitted-frame markers are not frames. */
static uint32_t chain_of(struct report *r, const struct session_stack *st)
{
	uint32_t n = 0;

	for (uint32_t j = 0; j < st->count; j++)
		if (!session__frame(r->s, st->frames[j])->omitted)
			r->chain_frames[n++] = st->frames[j];
	return n;
}

/*
 * The position in chain_frames (of @n) of the sample's function: self time
 * is the real function's, as perf's, not that of the functions inlined at
 * its address, which are rows only with --children.
 */
static uint32_t real_leaf(struct report *r, uint32_t n)
{
	uint32_t leaf = 0;

	while (leaf + 1 < n && session__frame(r->s, r->chain_frames[leaf])->inlined)
		leaf++;
	return leaf;
}

/*
 * real_leaf() of a stack without copying its frames (once per sample): in
 * *@leaf. @return false when the stack has no frames.
 */
static bool sample_leaf(struct report *r, const struct session_stack *st, uint32_t *leaf)
{
	bool found = false;

	for (uint32_t j = 0; j < st->count; j++) {
		const struct session_frame *f = session__frame(r->s, st->frames[j]);

		if (f->omitted)
			continue;
		*leaf = st->frames[j];
		found = true;
		if (!f->inlined)
			break;
	}
	return found;
}

/* Whether frame @i passes --dso and --symbols. */
static bool frame_shown(struct report *r, uint32_t i)
{
	if (!r->filter.ndsos && !r->filter.nsyms)
		return true;
	if (!r->frame_pass[i]) {
		const struct session_frame *f = session__frame(r->s, i);
		const char *dso = f->dso ? f->dso : "[unknown]";
		bool ok = report_filter__has(r->filter.syms, r->filter.nsyms, f->sym) &&
			  (report_filter__has(r->filter.dsos, r->filter.ndsos, dso) ||
			   (f->dso_path &&
			    report_filter__has(r->filter.dsos, r->filter.ndsos, f->dso_path)));

		r->frame_pass[i] = ok ? 1 : 2;
	}
	return r->frame_pass[i] == 1;
}

/* A sample without frames is in [unknown]: shown unless a filter names modules or symbols. */
static bool none_shown(const struct report *r)
{
	return !r->filter.nsyms && report_filter__has(r->filter.dsos, r->filter.ndsos, "[unknown]");
}

/*
 * Group event @event's samples by what rows can tell apart; count the
 * section's figures (over the samples in --time: perf's other filters keep
 * the total, as its --percentage absolute does).
 */
static int group_samples(struct report *r, uint32_t event, struct section *sec)
{
	size_t n = session__nsamples(r->s);
	struct hmap *pids = hmap__new(HMAP_U64);
	int err = 0;

	if (!pids || !(r->group_map = hmap__new(HMAP_BYTES))) {
		hmap__free(pids);
		return -ENOMEM;
	}
	memset(sec, 0, sizeof(*sec));
	for (size_t i = 0; i < n && !err; i++) {
		const struct session_sample *smp = session__sample(r->s, i);
		const struct session_stack *st;
		struct group_key key = { 0 };
		uint64_t *idx;
		uint32_t leaf;
		bool shown;

		if (smp->event != event || !report_filter__in_time(&r->filter, smp->time_ns))
			continue;
		st = session__stack(r->s, smp->stack);
		if (!sec->samples || smp->time_ns < sec->first_ns)
			sec->first_ns = smp->time_ns;
		if (smp->time_ns > sec->last_ns)
			sec->last_ns = smp->time_ns;
		sec->samples++;
		sec->weight += smp->weight;
		sec->truncated += st->truncated;
		sec->cut += st->cut;
		sec->python += st->python > 0;
		sec->py_truncated += st->py_truncated;
		if (hmap__entry_u64(pids, smp->pid, &idx)) {
			err = -ENOMEM;
			break;
		}
		if (!*idx) {
			*idx = 1;
			sec->processes++;
		}
		if (!report_filter__thread(&r->filter, smp->pid, smp->tid, smp->comm))
			continue;
		shown = sample_leaf(r, st, &leaf) ? frame_shown(r, leaf) : none_shown(r);
		if (shown) {
			sec->shown_samples++;
			sec->shown_weight += smp->weight;
		}
		key.stack = smp->stack;
		key.pid = r->use[KEY_PID] ? smp->pid : 0;
		key.tid = r->use[KEY_TID] ? smp->tid : 0;
		key.cpu = r->use[KEY_CPU] ? smp->cpu : 0;
		/* names by pointer: equal names kept twice meet again in one row, by content */
		key.comm = r->use[KEY_COMM] || r->use[KEY_TID] ? (uintptr_t)smp->comm : 0;
		if (hmap__entry(r->group_map, &key, sizeof(key), &idx, NULL)) {
			err = -ENOMEM;
			break;
		}
		if (!*idx) {
			struct group *g;

			if (VEC_RESERVE(r->groups, r->groups_cap, r->ngroups + 1, 64)) {
				err = -ENOMEM;
				break;
			}
			g = &r->groups[r->ngroups];
			g->key = key;
			g->key.pid = smp->pid;
			g->comm = smp->comm ? smp->comm : "";
			g->pcomm = session__image(r->s, smp->image)->comm;
			if (!g->pcomm || !*g->pcomm)
				g->pcomm = g->comm;
			g->weight = 0;
			*idx = ++r->ngroups;
		}
		r->groups[*idx - 1].weight += smp->weight;
	}
	hmap__free(pids);
	return err;
}

/* perf's srcline fallbacks: function+decimal offset, else module[hex address]. */
static void srcline_text(const struct session_frame *f, char *buf, size_t cap)
{
	if (f->file && f->line) {
		const char *base = strrchr(f->file, '/');

		snprintf(buf, cap, "%s:%u", base ? base + 1 : f->file, f->line);
	} else if (f->old_image) {
		snprintf(buf, cap, "%s", f->sym);	/* no code, no offset */
	} else if (f->sym) {
		snprintf(buf, cap, "%s+%" PRIu64, f->sym, f->offset);
	} else {
		snprintf(buf, cap, "%s[%" PRIx64 "]", f->dso ? f->dso : "[unknown]",
			 f->kernel ? f->addr : f->rel);
	}
}

/*
 * A frame's function as rows and chains show it: an inlined function with
 * " (inlined)" after it, as perf 6.1's report --inline shows it both in
 * --children rows ("[.] mix_leaf (inlined)") and in call chains.
 */
static const char *inline_name(const struct session_frame *f, char *buf, size_t cap)
{
	const char *name = session_frame_name(f, buf, cap);

	if (!f->inlined)
		return name;
	if (name != buf)
		snprintf(buf, cap, "%s (inlined)", name);
	else
		snprintf(buf + strlen(buf), cap - strlen(buf), " (inlined)");
	return buf;
}

/* Frame @i's module and symbol columns, interned once per frame. */
static int frame_ids(struct report *r, uint32_t i, uint32_t *dso, uint32_t *sym, uint32_t *src)
{
	const struct session_frame *f;
	char name[320];
	int err;

	if (r->frame_sym[i]) {
		*dso = r->frame_dso[i];
		*sym = r->frame_sym[i];
		*src = r->frame_src[i];
		return 0;
	}
	f = session__frame(r->s, i);
	if ((err = intern(r, f->dso ? f->dso : "[unknown]", dso)))
		return err;
	*src = 0;
	if (r->use[KEY_SRCLINE]) {
		srcline_text(f, name, sizeof(name));
		if ((err = intern(r, name, src)))
			return err;
	}
	/* a name longer than the column's room is cut, never inside an escape */
	r->buf[0] = '[';
	r->buf[1] = f->kernel ? 'k' : '.';
	r->buf[2] = ']';
	r->buf[3] = ' ';
	text_escape(r->buf + 4, sizeof(r->buf) - 4, inline_name(f, name, sizeof(name)), 0);
	if ((err = intern_shown(r, r->buf, sym)))
		return err;
	r->frame_dso[i] = *dso;
	r->frame_sym[i] = *sym;
	r->frame_src[i] = *src;
	return 0;
}

/* The key of frame @i in call chains: its function (perf merges chains by function). */
static int chain_key(struct report *r, uint32_t i, uint64_t *key)
{
	uint32_t dso, sym, src;
	int err;

	if ((err = frame_ids(r, i, &dso, &sym, &src)))
		return err;
	if (!r->frame_chain[i]) {
		char name[320];

		err = intern(r, inline_name(session__frame(r->s, i), name, sizeof(name)),
			     &r->frame_chain[i]);
		if (err)
			return err;
	}
	*key = (uint64_t)dso << 32 | r->frame_chain[i];
	return 0;
}

static const char *chain_name(uint64_t key, void *arg)
{
	const struct report *r = arg;

	return r->strs.strs[(uint32_t)key];
}

/*
 * The row of group @g at frame @frame (UINT32_MAX: a sample without frames),
 * its source line @src_frame's (the innermost frame of @frame's address).
 */
static int row_of(struct report *r, const struct group *g, uint32_t comm, uint32_t frame,
		  uint32_t src_frame, struct row **out)
{
	uint32_t key[NKEYS] = { 0 };
	uint64_t *idx;
	int err;

	if (r->use[KEY_COMM])
		key[KEY_COMM] = comm;
	if (r->use[KEY_PID])
		key[KEY_PID] = g->key.pid;
	if (r->use[KEY_TID])
		key[KEY_TID] = g->key.tid;
	if (r->use[KEY_CPU])
		key[KEY_CPU] = g->key.cpu;
	if (r->use[KEY_EVENT])
		key[KEY_EVENT] = r->event;
	if (r->use[KEY_DSO] || r->use[KEY_SYM] || r->use[KEY_SRCLINE]) {
		uint32_t dso, sym, src;

		if (frame == UINT32_MAX) {
			if ((err = intern_shown(r, "[unknown]", &dso)) ||
			    (err = intern_shown(r, "[.] [unknown]", &sym)))
				return err;
			src = dso;
		} else if ((err = frame_ids(r, frame, &dso, &sym, &src))) {
			return err;
		} else if (src_frame != frame) {
			uint32_t sdso, ssym;

			if ((err = frame_ids(r, src_frame, &sdso, &ssym, &src)))
				return err;
		}
		if (r->use[KEY_DSO])
			key[KEY_DSO] = dso;
		if (r->use[KEY_SYM])
			key[KEY_SYM] = sym;
		if (r->use[KEY_SRCLINE])
			key[KEY_SRCLINE] = src;
	}
	if (hmap__entry(r->row_map, key, sizeof(key), &idx, NULL))
		return -ENOMEM;
	if (!*idx) {
		struct row *row;

		if (VEC_RESERVE(r->rows, r->rows_cap, r->nrows + 1, 64))
			return -ENOMEM;
		row = &r->rows[r->nrows];
		memset(row, 0, sizeof(*row));
		memcpy(row->key, key, sizeof(key));
		row->pcomm = g->pcomm;
		row->tcomm = g->comm;
		if (r->cg.on && (err = rtree__root(r->tree, &row->tree)))
			return err;
		*idx = ++r->nrows;
	}
	*out = &r->rows[*idx - 1];
	return 0;
}

/* Add the chain from position @from of the group's @n frames to @row's tree. */
static int add_chain(struct report *r, struct row *row, uint32_t n, uint32_t from, uint64_t w)
{
	bool caller = r->cg.order == ORDER_CALLER;
	int err;

	if (!r->cg.on)
		return 0;
	for (uint32_t p = from; p < n; p++) {
		uint32_t fi = r->chain_frames[caller ? n - 1 - p : p];

		if ((err = chain_key(r, fi, &r->chain[p - from])))
			return err;
	}
	return rtree__add(r->tree, row->tree, r->chain, n - from, w);
}

/*
 * Self rows by the leaf; with --children, every row in the stack once per
 * sample. Each row's tree gets perf's chains: the whole stack for the row
 * of the leaf, and for the others, as perf's cumulative entries, the stack
 * from the row's first frame in the order shown on (its callers in callee
 * order, its callees in caller order).
 */
static int make_rows(struct report *r)
{
	bool caller = r->cg.order == ORDER_CALLER;
	int err;

	for (size_t i = 0; i < r->ngroups; i++) {
		const struct group *g = &r->groups[i];
		const struct session_stack *st = session__stack(r->s, g->key.stack);
		uint32_t comm = 0, n = chain_of(r, st), leaf = real_leaf(r, n);
		struct row *row;

		/* the self row's source line is the address's: the innermost frame's */
		if (r->use[KEY_COMM] && (err = intern(r, g->comm, &comm)))
			return err;
		if (n ? frame_shown(r, r->chain_frames[leaf]) : none_shown(r)) {
			if ((err = row_of(r, g, comm, n ? r->chain_frames[leaf] : UINT32_MAX,
					  n ? r->chain_frames[0] : UINT32_MAX, &row)))
				return err;
			row->self += g->weight;
			/* groups come in sample order: a pid shows the name of its last image */
			row->pcomm = g->pcomm;
			if ((err = add_chain(r, row, n, 0, g->weight)))
				return err;
			if (r->children) {
				row->stamp = i + 1;
				row->children += g->weight;
			}
		}
		if (!r->children)
			continue;
		for (uint32_t p = 0; p < n; p++) {
			uint32_t fi = r->chain_frames[caller ? n - 1 - p : p];

			if (!frame_shown(r, fi))
				continue;
			if ((err = row_of(r, g, comm, fi, fi, &row)))
				return err;
			/* once per sample however often the row recurs in the stack */
			if (row->stamp != i + 1) {
				row->stamp = i + 1;
				row->children += g->weight;
				if ((err = add_chain(r, row, n, p, g->weight)))
					return err;
			}
		}
	}
	return 0;
}

static bool numeric_key(enum sort_key key)
{
	return key == KEY_PID || key == KEY_TID || key == KEY_CPU || key == KEY_EVENT;
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

		if (numeric_key(key)) {
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
	if (key == KEY_PID || key == KEY_TID) {
		const char *name = key == KEY_PID ? row->pcomm : row->tcomm;
		int n = snprintf(buf, cap, "%7u:", row->key[key]);

		text_escape(buf + n, cap - n, name ? name : "", 0);
		return buf;
	}
	if (key == KEY_CPU) {
		snprintf(buf, cap, "%03u", row->key[key]);
		return buf;
	}
	if (key == KEY_EVENT) {
		text_escape(buf, cap, session__event(r->s, row->key[key])->name, 0);
		return buf;
	}
	return r->strs.strs[row->key[key]];
}

static void print_header(struct report *r, const char *path)
{
	const struct session_totals *t = session__totals(r->s);
	const struct profile_meta *meta = session__meta(r->s);
	static const char *const what[] = { "comm", "dso", "symbol" };
	char *const *lists[] = { r->filter.comms, r->filter.dsos, r->filter.syms };
	size_t counts[] = { r->filter.ncomms, r->filter.ndsos, r->filter.nsyms };

	printf("# sfprof report of %s\n", path);
	if (meta->cmdline && *meta->cmdline) {
		fputs("# Command line: ", stdout);
		text_put(stdout, meta->cmdline, 0);
		putchar('\n');
	}
	printf("#\n");
	/* perf names a filter of one value here, and leaves its column out */
	for (size_t i = 0; i < 3; i++)
		if (counts[i] == 1) {
			printf("# %s: ", what[i]);
			text_put(stdout, lists[i][0], 0);
			printf("\n#\n");
		}
	if (t->lost_unknown)
		printf("# Total Lost Samples: unknown (the file's count is damaged)\n#\n");
	else
		printf("# Total Lost Samples: %" PRIu64 "\n#\n", t->lost);
}

static void print_section_header(struct report *r, uint32_t event, const struct section *sec)
{
	const struct profile_meta *meta = session__meta(r->s);
	const struct session_event *ev = session__event(r->s, event);
	double secs = sec->samples ? (sec->last_ns - sec->first_ns) / 1e9 : 0;
	uint64_t samples = r->relative ? sec->shown_samples : sec->samples;
	uint64_t weight = r->relative ? sec->shown_weight : sec->weight;

	if (event == 0 && (meta->flags & PROFILE_F_WALL_NS)) {
		/* an imported trace: weights are ns of self time, shares are shares of time */
		printf("# Samples: %" PRIu64 "  of event 'wall-time' (weights in nanoseconds)",
		       samples);
		if (r->time_arg)
			printf(" (time slices: %s)", r->time_arg);
		printf("\n# Event count: %" PRIu64 " ns (%.6f s of wall time)\n", weight,
		       weight / 1e9);
		printf("# Duration: %.6f s (first to last sample)", secs);
	} else {
		printf("# Samples: %" PRIu64 "  of event '", samples);
		text_put(stdout, ev->name ? ev->name : "?", 0);
		putchar('\'');
		if (r->time_arg)
			printf(" (time slices: %s)", r->time_arg);
		printf("\n# Event count (approx.): %" PRIu64 "\n", weight);
		printf("# Duration: %.3f s (first to last sample)", secs);
	}
	if (event == 0 && meta->freq_hz)
		printf(", %u Hz", meta->freq_hz);
	else if (event && ev->freq_hz)
		printf(", %u Hz", ev->freq_hz);
	else if (event && ev->period && !(ev->flags & PROFILE_EV_F_WEIGHT_NS))
		printf(", a sample every %" PRIu64 " events", ev->period);
	if (event && (ev->flags & PROFILE_EV_F_WEIGHT_NS))
		printf("\n# Weights: nanoseconds (%.6f s in all)", weight / 1e9);
	printf("\n# Processes: %" PRIu64 "\n", sec->processes);
	if (sec->truncated)
		printf("# Truncated stacks: %" PRIu64 " samples (%.2f%%) whose user stack ended early\n",
		       sec->truncated, 100.0 * sec->truncated / sec->samples);
	if (sec->cut)
		printf("# Cut stacks: %" PRIu64 " samples (%.2f%%) whose stack was cut: the file's "
		       "stacks repeat frames past what report holds for its size\n", sec->cut,
		       100.0 * sec->cut / sec->samples);
	if (sec->python)
		printf("# Python: %" PRIu64 " samples (%.2f%%) with Python frames\n", sec->python,
		       100.0 * sec->python / sec->samples);
	if (sec->py_truncated)
		printf("# Python chains cut: %" PRIu64 " samples (%.2f%%) whose Python frames passed "
		       "the recording's cap: their outermost frames are missing\n", sec->py_truncated,
		       100.0 * sec->py_truncated / sec->samples);
	printf("#\n");
}

/* The row's share: of children with --children, as perf's --percent-limit compares. */
static bool row_shown(const struct report *r, const struct row *row, uint64_t total)
{
	uint64_t w = r->children ? row->children : row->self;

	if (!r->children && !row->self)
		return false;
	return !r->percent_limit || (total && 100.0 * w / total >= r->percent_limit);
}

static int print_rows(struct report *r, uint64_t total)
{
	size_t width[NKEYS] = { 0 }, shown[NKEYS], nshown = 0;
	char buf[128];
	int err = 0;

	for (size_t k = 0; k < r->nkeys; k++)
		if (!r->elide[r->keys[k]])
			shown[nshown++] = r->keys[k];
	for (size_t k = 0; k < nshown; k++)
		width[k] = strlen(key_titles[shown[k]]);
	for (size_t i = 0; i < r->nrows; i++) {
		if (!row_shown(r, &r->rows[i], total))
			continue;
		for (size_t k = 0; k < nshown; k++) {
			size_t n = strlen(cell(r, &r->rows[i], shown[k], buf, sizeof(buf)));

			if (n > width[k])
				width[k] = n;
		}
	}
	printf("# %s%s", r->children ? "Children      Self" : "Overhead", "");
	for (size_t k = 0; k < nshown; k++)
		printf("  %-*s", k + 1 < nshown ? (int)width[k] : 0, key_titles[shown[k]]);
	printf("\n# %s", r->children ? "........  ........" : "........");
	for (size_t k = 0; k < nshown; k++) {
		putchar(' ');
		putchar(' ');
		for (size_t j = 0; j < width[k]; j++)
			putchar('.');
	}
	printf("\n#\n");
	for (size_t i = 0; i < r->nrows && !err; i++) {
		const struct row *row = &r->rows[i];

		if (!row_shown(r, row, total))
			continue;
		if (r->children)
			printf("  %7.2f%%  %7.2f%%", total ? 100.0 * row->children / total : 0.0,
			       total ? 100.0 * row->self / total : 0.0);
		else
			printf("  %7.2f%%", total ? 100.0 * row->self / total : 0.0);
		for (size_t k = 0; k < nshown; k++)
			printf("  %-*s", k + 1 < nshown ? (int)width[k] : 0,
			       cell(r, row, shown[k], buf, sizeof(buf)));
		putchar('\n');
		if (r->cg.on) {
			struct rtree_print p = {
				.mode = r->cg.mode, .threshold = r->cg.threshold,
				.skip_first = r->sort_sym_first && !r->children,
				.total = total, .parent = r->children ? row->children : row->self,
				.name = chain_name, .arg = r,
			};

			err = rtree__print(r->tree, row->tree, stdout, &p);
		}
	}
	return err;
}

static void section_free(struct report *r)
{
	free(r->groups);
	free(r->rows);
	hmap__free(r->group_map);
	hmap__free(r->row_map);
	rtree__free(r->tree);
	r->groups = NULL;
	r->rows = NULL;
	r->group_map = r->row_map = NULL;
	r->tree = NULL;
	r->ngroups = r->groups_cap = r->nrows = r->rows_cap = 0;
}

/* One event's rows: its header, rows, and trees. @return 0 or a negative errno. */
static int report_event(struct report *r, uint32_t event, bool first)
{
	struct section sec;
	int err;

	if (!(r->row_map = hmap__new(HMAP_BYTES)) || (r->cg.on && !(r->tree = rtree__new())))
		return -ENOMEM;
	r->event = event;
	if ((err = group_samples(r, event, &sec)) || (err = make_rows(r)))
		return err;
	/* no samples, no rows: and qsort_r() takes no NULL array, even of none */
	if (r->nrows)
		qsort_r(r->rows, r->nrows, sizeof(*r->rows), row_cmp, r);
	if (!first)
		printf("\n\n");
	print_section_header(r, event, &sec);
	return print_rows(r, r->relative ? sec.shown_weight : sec.weight);
}

static int report_all(struct report *r, const char *path)
{
	size_t nframes = session__nframes(r->s), nevents = session__nevents(r->s);
	size_t nsamples = session__nsamples(r->s), maxlen = 1;
	const struct session_totals *t = session__totals(r->s);
	bool *has = calloc(nevents, sizeof(*has)), first = true;
	int err = 0;

	r->frame_dso = calloc(nframes ? nframes : 1, sizeof(*r->frame_dso));
	r->frame_sym = calloc(nframes ? nframes : 1, sizeof(*r->frame_sym));
	r->frame_src = calloc(nframes ? nframes : 1, sizeof(*r->frame_src));
	r->frame_chain = calloc(nframes ? nframes : 1, sizeof(*r->frame_chain));
	r->frame_pass = calloc(nframes ? nframes : 1, sizeof(*r->frame_pass));
	if (!has || !r->frame_dso || !r->frame_sym || !r->frame_src || !r->frame_chain ||
	    !r->frame_pass) {
		free(has);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nsamples; i++) {
		const struct session_stack *st = session__stack(r->s, session__sample(r->s, i)->stack);

		if (st->count > maxlen)
			maxlen = st->count;
	}
	r->chain = calloc(maxlen, sizeof(*r->chain));
	r->chain_frames = calloc(maxlen, sizeof(*r->chain_frames));
	if (!r->chain || !r->chain_frames) {
		free(has);
		return -ENOMEM;
	}
	/* id 0 is never a frame's symbol: frame_ids() uses 0 for "not yet" */
	{
		uint32_t none;

		if ((err = intern_shown(r, "", &none))) {
			free(has);
			return err;
		}
	}
	report_filter__resolve(&r->filter, t->first_ns, t->last_ns);
	for (size_t i = 0; i < nsamples; i++)
		has[session__sample(r->s, i)->event] = true;
	print_header(r, path);
	for (uint32_t e = 0; e < nevents && !err; e++) {
		/* the header's default event, when no sample counts it and others do */
		if (e == 0 && !has[0] && nevents > 1)
			continue;
		err = report_event(r, e, first);
		first = false;
		section_free(r);
	}
	free(has);
	return err;
}

static void report_free(struct report *r)
{
	strtab__release(&r->strs);
	free(r->frame_dso);
	free(r->frame_sym);
	free(r->frame_src);
	free(r->frame_chain);
	free(r->frame_pass);
	free(r->chain);
	free(r->chain_frames);
	section_free(r);
	report_filter__release(&r->filter);
	session__free(r->s);
}

/*
 * -g takes an optional argument as perf's does: attached (-gcaller,
 * --call-graph=caller), or the next word when it does not start with '-'
 * (report takes no other words).
 */
static const char *optional_arg(int argc, char **argv)
{
	if (optarg)
		return optarg;
	if (optind < argc && argv[optind][0] != '-')
		return argv[optind++];
	return NULL;
}

int cmd_report(int argc, char **argv)
{
	enum { OPT_CHILDREN = 256, OPT_NO_CHILDREN, OPT_STDIO, OPT_PERCENT_LIMIT, OPT_COMM,
	       OPT_PID, OPT_TID, OPT_DSO, OPT_SYMBOLS, OPT_TIME, OPT_PERCENTAGE };
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "sort", required_argument, NULL, 's' },
		{ "children", no_argument, NULL, OPT_CHILDREN },
		{ "no-children", no_argument, NULL, OPT_NO_CHILDREN },
		{ "call-graph", optional_argument, NULL, 'g' },
		{ "inverted", no_argument, NULL, 'G' },
		{ "percent-limit", required_argument, NULL, OPT_PERCENT_LIMIT },
		{ "comm", required_argument, NULL, OPT_COMM },
		{ "comms", required_argument, NULL, OPT_COMM },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "tid", required_argument, NULL, OPT_TID },
		{ "dso", required_argument, NULL, OPT_DSO },
		{ "dsos", required_argument, NULL, OPT_DSO },
		{ "symbols", required_argument, NULL, OPT_SYMBOLS },
		{ "time", required_argument, NULL, OPT_TIME },
		{ "percentage", required_argument, NULL, OPT_PERCENTAGE },
		{ "stdio", no_argument, NULL, OPT_STDIO },
		SYM_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct report r = { .keys = { KEY_COMM, KEY_DSO, KEY_SYM }, .nkeys = 3,
			    .use = { [KEY_COMM] = true, [KEY_DSO] = true, [KEY_SYM] = true },
			    .cg = { .mode = RTREE_GRAPH, .threshold = 0.5 } };
	struct session_opts sopts = { 0 };
	const char **dirs = NULL;
	const char *path = "sfprof.data", *arg;
	bool damaged = false;
	int c, err, ret = 2;

	dirs = calloc(argc, sizeof(*dirs));
	if (!dirs) {
		fprintf(stderr, "sfprof report: out of memory\n");
		return 1;
	}
	while ((c = getopt_long(argc, argv, "i:s:g::Gh", opts, NULL)) != -1) {
		char *end;

		err = 0;
		switch (c) {
		case 'i':
			path = optarg;
			break;
		case 's':
			err = parse_sort(&r, optarg);
			break;
		case OPT_CHILDREN:
			r.children = true;
			break;
		case OPT_NO_CHILDREN:
			r.children = false;
			break;
		case 'g':
			arg = optional_arg(argc, argv);
			r.cg.on = true;
			err = arg ? parse_call_graph(&r, arg) : 0;
			break;
		case 'G':
			r.cg.on = true;
			r.cg.order = ORDER_CALLER;
			break;
		case OPT_PERCENT_LIMIT:
			r.percent_limit = strtod(optarg, &end);
			if (end == optarg || *end || !(r.percent_limit >= 0 && r.percent_limit <= 100)) {
				fprintf(stderr, "sfprof report: --percent-limit: '%s' is not a "
					"percentage from 0 to 100\n", optarg);
				err = -EINVAL;
			}
			/* perf's --percent-limit is the call graphs' threshold too */
			r.cg.threshold = r.percent_limit;
			break;
		case OPT_COMM:
			err = report_filter__names(&r.filter.comms, &r.filter.ncomms, optarg);
			break;
		case OPT_DSO:
			err = report_filter__names(&r.filter.dsos, &r.filter.ndsos, optarg);
			break;
		case OPT_SYMBOLS:
			err = report_filter__names(&r.filter.syms, &r.filter.nsyms, optarg);
			break;
		case OPT_PID:
		case OPT_TID:
			err = c == OPT_PID ? report_filter__ids(&r.filter.pids, &r.filter.npids, optarg)
					   : report_filter__ids(&r.filter.tids, &r.filter.ntids, optarg);
			if (err == -EINVAL)
				fprintf(stderr, "sfprof report: --%s: '%s' is not a comma-separated "
					"list of ids\n", c == OPT_PID ? "pid" : "tid", optarg);
			break;
		case OPT_TIME:
			err = report_filter__time(&r.filter, optarg);
			if (err == -EINVAL)
				fprintf(stderr, "sfprof report: --time: '%s' is not START,STOP in "
					"seconds (either may be empty) nor percentages of the "
					"recording (10%%/2, 0%%-10%%)\n", optarg);
			r.time_arg = optarg;
			break;
		case OPT_PERCENTAGE:
			if (!strcmp(optarg, "relative") || !strcmp(optarg, "absolute")) {
				r.relative = optarg[0] == 'r';
			} else {
				fprintf(stderr, "sfprof report: --percentage: '%s' is neither "
					"relative nor absolute\n", optarg);
				err = -EINVAL;
			}
			break;
		case OPT_STDIO:
			break;
		case 'h':
			fputs(usage, stdout);
			ret = 0;
			goto out_args;
		default:
			if (cli_option_default(c, optarg, &sopts.sym, dirs, usage))
				break;
			goto out_args;
		}
		if (err == -ENOMEM) {
			fprintf(stderr, "sfprof report: out of memory\n");
			ret = 1;
			goto out_args;
		}
		if (err)
			goto out_args;
	}
	if (optind != argc) {
		fprintf(stderr, "sfprof report: unexpected argument '%s'\n", argv[optind]);
		fputs(usage, stderr);
		goto out_args;
	}
	/* perf shows callers from the outermost down with --children, callees without */
	if (!r.cg.order)
		r.cg.order = r.children ? ORDER_CALLER : ORDER_CALLEE;
	r.elide[KEY_COMM] = r.filter.ncomms == 1;
	r.elide[KEY_DSO] = r.filter.ndsos == 1;
	r.elide[KEY_SYM] = r.filter.nsyms == 1;
	/* source lines only when a column shows them: DWARF is not worth opening otherwise */
	sopts.sym.no_lines = !r.use[KEY_SRCLINE];
	ret = 1;
	r.s = cli_session_open(path, &sopts, &damaged);
	if (!r.s)
		goto out_args;
	print_replaced(r.s);
	if ((err = report_all(&r, path))) {
		fprintf(stderr, "sfprof report: %s: %s\n", path, strerror(-err));
		goto out;
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "sfprof report: writing the report: %s\n", strerror(errno));
		goto out;
	}
	ret = damaged ? 1 : 0;
out:
	report_free(&r);
	free(dirs);
	return ret;
out_args:
	report_filter__release(&r.filter);
	free(dirs);
	return ret;
}
