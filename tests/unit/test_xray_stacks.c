/* SPDX-License-Identifier: BSD-2-Clause */
/* Stacks rebuilt from XRay records: self time per stack, pops to the matching entry, windows, counts. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "import/xray_stacks.h"

#define E XRAY_REC_ENTER
#define A XRAY_REC_ENTER_ARGS
#define X XRAY_REC_EXIT
#define T XRAY_REC_TAIL_EXIT
#define ARG XRAY_REC_CALL_ARG
#define CUSTOM XRAY_REC_CUSTOM_EVENT
#define TYPED XRAY_REC_TYPED_EVENT
#define BREAK 0xff	/* not a record: xray_stacks__break() */
#define R(kind, func, tsc) { kind, func, tsc, 1, 0 }
#define RT(kind, func, tsc, tid, pid) { kind, func, tsc, tid, pid }

/* One input: a record of thread (pid, tid) at tsc; thread 1 of pid 0 when not said. */
struct in {
	uint8_t kind;
	int32_t func;
	uint64_t tsc;
	uint32_t tid, pid;
};

/* What one stack of one thread must have had: functions root first, ticks over all windows. */
struct want {
	uint32_t tid, pid;
	int32_t path[8];	/* 0-terminated */
	uint64_t ticks;
};

/* The cells given by the last object made with keep(), in the order given. */
static struct xray_cell *got;
static size_t ngot, got_cap;

static int keep(void *ctx, const struct xray_cell *cells, size_t n)
{
	(void)ctx;
	/* one thread, one window, each node once */
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(cells[i].thread, cells[0].thread);
		assert_int_equal(cells[i].window, cells[0].window);
		for (size_t j = 0; j < i; j++)
			assert_int_not_equal(cells[i].node, cells[j].node);
	}
	if (ngot + n > got_cap) {
		got_cap = (ngot + n) * 2;
		got = realloc(got, got_cap * sizeof(*got));
		assert_non_null(got);
	}
	memcpy(got + ngot, cells, n * sizeof(*cells));
	ngot += n;
	return 0;
}

static int count_cells(void *ctx, const struct xray_cell *cells, size_t n)
{
	(void)cells;
	*(uint64_t *)ctx += n;
	return 0;
}

static const struct xray_cell *cells_of(const struct xray_stacks *s, size_t *n)
{
	assert_int_equal(xray_stacks__ncells(s), ngot);
	*n = ngot;
	return got;
}

static struct xray_stacks *feed(const struct in *ins, size_t n, uint64_t window)
{
	struct xray_stacks *s = xray_stacks__new(window, keep, NULL);

	assert_non_null(s);
	ngot = 0;
	for (size_t i = 0; i < n; i++) {
		struct xray_record rec = { .kind = ins[i].kind, .func_id = ins[i].func,
					   .tsc = ins[i].tsc, .tid = ins[i].tid, .pid = ins[i].pid,
					   .offset = i };

		if (ins[i].kind == BREAK)
			xray_stacks__break(s);
		else
			assert_int_equal(xray_stacks__add(s, &rec), 0);
	}
	assert_int_equal(xray_stacks__finish(s), 0);
	return s;
}

/* The node whose path from the root is @path (0-terminated), or UINT32_MAX. */
static uint32_t node_of(const struct xray_stacks *s, const int32_t *path)
{
	size_t depth = 0;

	while (depth < 8 && path[depth])
		depth++;
	for (uint32_t n = 1; n < xray_stacks__nnodes(s); n++) {
		uint32_t parent, at = n;
		int32_t func;
		size_t d = xray_stacks__node(s, n, &func, &parent);
		bool same = d == depth;

		for (size_t i = depth; same && i-- > 0;) {
			xray_stacks__node(s, at, &func, &parent);
			same = func == path[i];
			at = parent;
		}
		if (same)
			return n;
	}
	return UINT32_MAX;
}

static uint64_t thread_ticks(const struct xray_stacks *s, uint32_t tid, uint32_t pid,
			     uint32_t node)
{
	const struct xray_cell *cells;
	uint64_t sum = 0;
	size_t n;

	cells = cells_of(s, &n);
	for (size_t i = 0; i < n; i++) {
		const struct xray_thread *th = xray_stacks__thread(s, cells[i].thread);

		if (th->tid == tid && th->pid == pid && cells[i].node == node)
			sum += cells[i].ticks;
	}
	return sum;
}

/* Every stack with time is one of @wants, with that time. */
static void _assert_stacks(const struct xray_stacks *s, const struct want *wants, size_t n,
			   const char *file, int line)
{
	const struct xray_cell *cells;
	uint64_t total = 0, want_total = 0;
	size_t ncells;

	for (size_t i = 0; i < n; i++) {
		uint32_t node = node_of(s, wants[i].path);
		uint64_t got;

		if (node == UINT32_MAX)
			_fail(file, line);
		got = thread_ticks(s, wants[i].tid ? wants[i].tid : 1, wants[i].pid, node);
		if (got != wants[i].ticks) {
			print_error("stack %zu: %llu ticks, want %llu\n", i, (unsigned long long)got,
				    (unsigned long long)wants[i].ticks);
			_fail(file, line);
		}
		want_total += wants[i].ticks;
	}
	cells = cells_of(s, &ncells);
	for (size_t i = 0; i < ncells; i++)
		total += cells[i].ticks;
	if (total != want_total || total != xray_stacks__stats(s)->self_ticks) {
		print_error("%llu ticks in all, want %llu (self_ticks %llu)\n",
			    (unsigned long long)total, (unsigned long long)want_total,
			    (unsigned long long)xray_stacks__stats(s)->self_ticks);
		_fail(file, line);
	}
}
#define assert_stacks(s, w) _assert_stacks(s, w, sizeof(w) / sizeof(w[0]), __FILE__, __LINE__)

static void test_nested(void **state)
{
	(void)state;
	/* 1 [1;2] 1 [1;2;3] 1 ... then an entry of 4 at the root */
	static const struct in ins[] = {
		R(E, 1, 100), R(E, 2, 110), R(X, 2, 130), R(E, 3, 135), R(E, 2, 140),
		R(X, 2, 150), R(X, 3, 152), R(X, 1, 160), R(E, 4, 500), R(X, 4, 510),
	};
	static const struct want wants[] = {
		{ .path = { 1 }, .ticks = 10 + 5 + 8 },
		{ .path = { 1, 2 }, .ticks = 20 },
		{ .path = { 1, 3 }, .ticks = 5 + 2 },
		{ .path = { 1, 3, 2 }, .ticks = 10 },
		{ .path = { 4 }, .ticks = 10 },	/* 160-500 had no stack: no time */
	};
	struct xray_stacks *s = feed(ins, sizeof(ins) / sizeof(ins[0]), 1000);
	const struct xray_stacks_stats *st = xray_stacks__stats(s);

	assert_stacks(s, wants);
	assert_int_equal(st->records, 10);
	assert_int_equal(st->function_records, 10);
	assert_int_equal(st->enters, 5);
	assert_int_equal(st->exits, 5);
	assert_int_equal(st->unmatched, 0);
	assert_int_equal(st->unwound, 0);
	assert_int_equal(st->first_tsc, 100);
	assert_int_equal(st->last_tsc, 510);
	assert_int_equal(xray_stacks__nthreads(s), 1);
	assert_int_equal(xray_stacks__thread(s, 0)->records, 10);
	xray_stacks__free(s);
}

/* An exit deeper in the stack closes the frames above it: an exception went through them. */
static void test_unwound(void **state)
{
	(void)state;
	static const struct in ins[] = {
		R(E, 1, 0), R(E, 2, 10), R(E, 3, 20), R(E, 4, 30), R(X, 4, 40),
		/* 3 and 2 never exit: 1's exit at 100 closes them */
		R(X, 1, 100), R(E, 5, 110), R(X, 5, 111),
	};
	static const struct want wants[] = {
		{ .path = { 1 }, .ticks = 10 },
		{ .path = { 1, 2 }, .ticks = 10 },
		{ .path = { 1, 2, 3 }, .ticks = 10 + 60 },
		{ .path = { 1, 2, 3, 4 }, .ticks = 10 },
		{ .path = { 5 }, .ticks = 1 },
	};
	struct xray_stacks *s = feed(ins, sizeof(ins) / sizeof(ins[0]), 1000);

	assert_stacks(s, wants);
	assert_int_equal(xray_stacks__stats(s)->unwound, 2);
	assert_int_equal(xray_stacks__stats(s)->unmatched, 0);
	xray_stacks__free(s);
}

/* An exit of a function not on the stack is counted and changes nothing. */
static void test_unmatched(void **state)
{
	(void)state;
	static const struct in ins[] = {
		R(X, 9, 0), R(E, 1, 10), R(E, 2, 20), R(X, 7, 25), R(T, 8, 27), R(X, 2, 30),
		R(X, 1, 40), R(X, 1, 50),
	};
	static const struct want wants[] = {
		{ .path = { 1 }, .ticks = 10 + 10 },
		{ .path = { 1, 2 }, .ticks = 10 },	/* across the unmatched exits */
	};
	struct xray_stacks *s = feed(ins, sizeof(ins) / sizeof(ins[0]), 1000);

	assert_stacks(s, wants);
	assert_int_equal(xray_stacks__stats(s)->unmatched, 4);
	assert_int_equal(xray_stacks__stats(s)->unwound, 0);
	xray_stacks__free(s);
}

/* Recursion: each level its own node; an exit closes the innermost frame of its function. */
static void test_recursion(void **state)
{
	(void)state;
	static const struct in ins[] = {
		R(E, 1, 0), R(E, 1, 10), R(E, 2, 15), R(E, 1, 20), R(X, 1, 30),
		/* 2 exits through a tail call... */
		R(T, 2, 31), R(E, 3, 33), R(X, 3, 40),
		/* ...and this exit of 1 closes the innermost 1 left */
		R(X, 1, 50), R(X, 1, 70),
	};
	static const struct want wants[] = {
		{ .path = { 1 }, .ticks = 10 + 20 },
		{ .path = { 1, 1 }, .ticks = 5 + 2 + 10 },
		{ .path = { 1, 1, 2 }, .ticks = 5 + 1 },
		{ .path = { 1, 1, 2, 1 }, .ticks = 10 },
		{ .path = { 1, 1, 3 }, .ticks = 7 },
	};
	struct xray_stacks *s = feed(ins, sizeof(ins) / sizeof(ins[0]), 1000);
	const struct xray_stacks_stats *st = xray_stacks__stats(s);

	assert_stacks(s, wants);
	assert_int_equal(st->tail_exits, 1);
	assert_int_equal(st->unwound, 0);
	assert_int_equal(xray_stacks__nnodes(s), 6);
	xray_stacks__free(s);
}

/* Threads are apart, by pid and tid: the same tid in two processes is two threads. */
static void test_threads(void **state)
{
	(void)state;
	static const struct in ins[] = {
		RT(E, 1, 0, 7, 100), RT(E, 1, 5, 8, 100), RT(E, 2, 6, 7, 200),
		RT(E, 2, 10, 7, 100), RT(X, 1, 20, 8, 100), RT(X, 2, 30, 7, 100),
		RT(X, 2, 36, 7, 200), RT(X, 1, 40, 7, 100),
	};
	static const struct want wants[] = {
		{ 7, 100, { 1 }, 10 + 10 },
		{ 7, 100, { 1, 2 }, 20 },
		{ 8, 100, { 1 }, 15 },
		{ 7, 200, { 2 }, 30 },
	};
	struct xray_stacks *s = feed(ins, sizeof(ins) / sizeof(ins[0]), 1000);

	assert_stacks(s, wants);
	assert_int_equal(xray_stacks__nthreads(s), 3);
	xray_stacks__free(s);
}

static int cell_cmp(const void *pa, const void *pb)
{
	const struct xray_cell *a = pa, *b = pb;

	if (a->thread != b->thread)
		return a->thread < b->thread ? -1 : 1;
	if (a->node != b->node)
		return a->node < b->node ? -1 : 1;
	return a->window < b->window ? -1 : a->window > b->window;
}

/* Time is cut at window boundaries; windows count from the first function record. */
static void test_windows(void **state)
{
	(void)state;
	static const struct in ins[] = {
		R(E, 1, 1005), R(E, 2, 1095), R(X, 2, 1350), R(X, 1, 1360),
		/* before the first record: a negative window */
		RT(E, 3, 900, 2, 0), RT(X, 3, 1010, 2, 0),
	};
	struct xray_stacks *s = feed(ins, sizeof(ins) / sizeof(ins[0]), 100);
	struct xray_cell *cells;
	size_t n;
	static const struct {
		uint32_t node;
		int64_t window;
		uint64_t ticks, end, before;
	} want[] = {
		{ 1, 0, 90, 1095, 0 }, { 1, 3, 10, 1360, 90 },
		{ 2, 0, 10, 1105, 0 }, { 2, 1, 100, 1205, 10 }, { 2, 2, 100, 1305, 110 },
		{ 2, 3, 45, 1350, 210 },
		{ 3, -2, 5, 905, 0 }, { 3, -1, 100, 1005, 5 }, { 3, 0, 5, 1010, 105 },
	};

	cells = (struct xray_cell *)cells_of(s, &n);
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	assert_int_equal(xray_stacks__base(s), 1005);
	/* given window by window: in order of thread, node, window, they are these */
	qsort(cells, n, sizeof(*cells), cell_cmp);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(cells[i].node, want[i].node);
		assert_int_equal(cells[i].window, want[i].window);
		assert_int_equal(cells[i].ticks, want[i].ticks);
		assert_int_equal(cells[i].end_tsc, want[i].end);
		assert_int_equal(cells[i].before, want[i].before);
	}
	assert_int_equal(xray_stacks__stats(s)->first_tsc, 900);
	xray_stacks__free(s);
}

/* Time going backwards, losses and incredible gaps give no time. */
static void test_no_time(void **state)
{
	(void)state;
	static const struct in ins[] = {
		R(E, 1, 1000), R(E, 2, 990), R(X, 2, 1000), R(BREAK, 0, 0), R(E, 3, 5000),
		R(X, 3, 5000 + 100ull * ((1u << 16) + 1)), R(E, 4, UINT64_MAX / 2),
		R(X, 4, UINT64_MAX / 2 + 3),
		R(X, 1, UINT64_MAX / 2 + 10),
	};
	static const struct want wants[] = {
		{ .path = { 1, 2 }, .ticks = 10 },
		{ .path = { 1, 4 }, .ticks = 3 },
		{ .path = { 1 }, .ticks = 7 },
	};
	struct xray_stacks *s = feed(ins, sizeof(ins) / sizeof(ins[0]), 100);
	const struct xray_stacks_stats *st = xray_stacks__stats(s);

	assert_stacks(s, wants);
	assert_int_equal(st->backwards, 1);
	assert_int_equal(st->breaks, 1);
	assert_int_equal(st->gaps, 2);	/* [1;3] for 65536 windows, [1] up to 4's entry */
	xray_stacks__free(s);
}

/*
 * A window is given when its thread leaves it, before the trace ends, and
 * then forgotten: a long trace costs no more memory than a short one.
 */
static void test_streamed(void **state)
{
	struct xray_stacks *s = xray_stacks__new(100, keep, NULL);
	struct xray_record rec = { .tid = 1, .func_id = 1 };
	uint64_t tsc = 0;

	(void)state;
	assert_non_null(s);
	ngot = 0;
	/* f1 calls f2 once per 10 ticks, for 100 windows */
	for (int i = 0; i < 1000; i++) {
		rec.kind = XRAY_REC_ENTER;
		rec.func_id = 1 + (i > 0);
		rec.tsc = tsc;
		assert_int_equal(xray_stacks__add(s, &rec), 0);
		tsc += 4;
		rec.kind = XRAY_REC_EXIT;
		rec.func_id = 2;
		rec.tsc = tsc;
		if (i)
			assert_int_equal(xray_stacks__add(s, &rec), 0);
		tsc += 6;
		/* every window before the current one is out, each as 2 cells */
		if (i % 10 == 0)
			assert_int_equal(ngot, 2 * (size_t)(i / 10));
	}
	assert_int_equal(xray_stacks__finish(s), 0);
	/*
	 * Per window f2 has 40 ticks and f1 60, but in window 0, where f1 is
	 * alone until f2's first entry at tsc 10: 36 and 64.
	 */
	assert_int_equal(ngot, 200);
	for (size_t i = 0; i < ngot; i++) {
		const struct xray_cell *c = &got[i];
		int32_t func;
		uint32_t parent;

		xray_stacks__node(s, c->node, &func, &parent);
		assert_true(i == 0 || got[i - 1].window <= c->window);
		/* before: the same stack's ticks in the windows given earlier */
		if (func == 2)
			assert_int_equal(c->before, c->window ? 36 + (c->window - 1) * 40 : 0);
		else
			assert_int_equal(c->before, c->window ? 64 + (c->window - 1) * 60 : 0);
		assert_int_equal(c->ticks, func == 2 ? (c->window ? 40 : 36) :
					   c->window == 99 ? 54 : c->window ? 60 : 64);
	}
	assert_int_equal(xray_stacks__ncells(s), ngot);
	xray_stacks__free(s);
}

/* Timestamps that jump by hours at every record open more windows than they may. */
static void test_window_budget(void **state)
{
	uint64_t cells = 0;
	struct xray_stacks *s = xray_stacks__new(1, count_cells, &cells);
	struct xray_record rec = { .tid = 1, .func_id = 1, .kind = XRAY_REC_ENTER };
	uint64_t tsc = 0;
	int err = 0;

	(void)state;
	assert_non_null(s);
	assert_int_equal(xray_stacks__add(s, &rec), 0);
	/* each exit and entry 65535 windows after the one before */
	for (int i = 0; i < 1000 && !err; i++) {
		rec.kind = i & 1 ? XRAY_REC_ENTER : XRAY_REC_EXIT;
		rec.tsc = tsc += 65535;
		err = xray_stacks__add(s, &rec);
	}
	assert_int_equal(err, -E2BIG);
	assert_true(cells <= XRAY_STACKS_EXTRA_CELLS + 2000);
	assert_true(cells >= XRAY_STACKS_EXTRA_CELLS - 65536 * 2);
	xray_stacks__free(s);
}

/* What the window function returns stops the import. */
static int refuse(void *ctx, const struct xray_cell *cells, size_t n)
{
	(void)ctx;
	(void)cells;
	(void)n;
	return -ENOSPC;
}

static void test_window_error(void **state)
{
	struct xray_stacks *s = xray_stacks__new(10, refuse, NULL);
	struct xray_record rec = { .tid = 1, .func_id = 1, .kind = XRAY_REC_ENTER };

	(void)state;
	assert_int_equal(xray_stacks__add(s, &rec), 0);
	rec.tsc = 5;
	assert_int_equal(xray_stacks__add(s, &rec), 0);
	rec.tsc = 15;
	assert_int_equal(xray_stacks__add(s, &rec), -ENOSPC);
	xray_stacks__free(s);
	s = xray_stacks__new(10, refuse, NULL);
	rec.tsc = 0;
	assert_int_equal(xray_stacks__add(s, &rec), 0);
	rec.tsc = 5;
	assert_int_equal(xray_stacks__add(s, &rec), 0);
	assert_int_equal(xray_stacks__finish(s), -ENOSPC);
	xray_stacks__free(s);
}

static int collect(void *ctx, int32_t func, uint64_t calls, uint64_t closed)
{
	uint64_t (*counts)[2] = ctx;

	if (func >= 0 && func < 8) {
		counts[func][0] += calls;
		counts[func][1] += closed;
	}
	return 0;
}

static void test_counts(void **state)
{
	(void)state;
	static const struct in ins[] = {
		R(A, 1, 0), R(ARG, 0, 0), R(E, 2, 1), R(CUSTOM, 0, 0), R(E, 3, 2), R(TYPED, 0, 0),
		R(X, 1, 5), R(E, 2, 6), R(X, 2, 7), R(E, 2, 8), R(XRAY_REC_NEW_BUFFER, 0, 0),
	};
	struct xray_stacks *s = feed(ins, sizeof(ins) / sizeof(ins[0]), 100);
	const struct xray_stacks_stats *st = xray_stacks__stats(s);
	uint64_t counts[8][2] = { { 0 } };

	assert_int_equal(st->records, 11);
	assert_int_equal(st->function_records, 7);
	assert_int_equal(st->enters_args, 1);
	assert_int_equal(st->enters, 4);
	assert_int_equal(st->call_args, 1);
	assert_int_equal(st->custom_events, 1);
	assert_int_equal(st->typed_events, 1);
	assert_int_equal(xray_stacks__foreach_func(s, collect, counts), 0);
	assert_int_equal(counts[1][0], 1);
	assert_int_equal(counts[1][1], 1);
	assert_int_equal(counts[2][0], 3);
	assert_int_equal(counts[2][1], 2);	/* one still open at the end */
	assert_int_equal(counts[3][0], 1);
	assert_int_equal(counts[3][1], 1);
	xray_stacks__free(s);
}

/* Past the depth limit entries are counted, not pushed; their exits close them. */
static void test_too_deep(void **state)
{
	uint64_t ncells = 0;
	struct xray_stacks *s = xray_stacks__new(1000, count_cells, &ncells);
	struct xray_record rec = { .tid = 1 };
	uint64_t tsc = 0;

	(void)state;
	assert_non_null(s);
	for (uint32_t i = 0; i < XRAY_STACKS_MAX_DEPTH + 5; i++) {
		rec.kind = XRAY_REC_ENTER;
		rec.func_id = 1 + (i & 1);
		rec.tsc = tsc++;
		assert_int_equal(xray_stacks__add(s, &rec), 0);
	}
	for (uint32_t i = XRAY_STACKS_MAX_DEPTH + 5; i-- > 0;) {
		rec.kind = XRAY_REC_EXIT;
		rec.func_id = 1 + (i & 1);
		rec.tsc = tsc++;
		assert_int_equal(xray_stacks__add(s, &rec), 0);
	}
	assert_int_equal(xray_stacks__finish(s), 0);
	assert_int_equal(xray_stacks__stats(s)->too_deep, 5);
	assert_int_equal(xray_stacks__stats(s)->unmatched, 0);
	assert_int_equal(xray_stacks__stats(s)->unwound, 0);
	assert_int_equal(xray_stacks__nnodes(s), XRAY_STACKS_MAX_DEPTH + 1);
	assert_int_equal(xray_stacks__stats(s)->self_ticks, tsc - 1);
	xray_stacks__free(s);
}

/* Unmatched exits cost no search of a deep stack: a million against 60000 frames is quick. */
static void test_unmatched_deep(void **state)
{
	uint64_t ncells = 0;
	struct xray_stacks *s = xray_stacks__new(1000, count_cells, &ncells);
	struct xray_record rec = { .tid = 1 };

	(void)state;
	assert_non_null(s);
	for (uint32_t i = 0; i < 60000; i++) {
		rec.kind = XRAY_REC_ENTER;
		rec.func_id = 1;
		rec.tsc = i;
		assert_int_equal(xray_stacks__add(s, &rec), 0);
	}
	rec.kind = XRAY_REC_EXIT;
	rec.func_id = 2;
	for (uint32_t i = 0; i < 1000000; i++)
		assert_int_equal(xray_stacks__add(s, &rec), 0);
	assert_int_equal(xray_stacks__stats(s)->unmatched, 1000000);
	xray_stacks__free(s);
}

static void test_ticks_to_ns(void **state)
{
	(void)state;
	assert_int_equal(xray_ticks_to_ns(12345, 1000000000u), 12345);
	assert_int_equal(xray_ticks_to_ns(12345, 0), 12345);
	assert_int_equal(xray_ticks_to_ns(3, 3000000000u), 1);
	assert_int_equal(xray_ticks_to_ns(5, 3000000000u), 1);
	assert_int_equal(xray_ticks_to_ns(6, 3000000000u), 2);
	/* no overflow on long traces at high frequencies */
	assert_int_equal(xray_ticks_to_ns(3000000000ull * 100000, 3000000000u),
			 100000ull * 1000000000u);
	assert_null(xray_stacks__new(0, keep, NULL));
	xray_stacks__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nested),
		cmocka_unit_test(test_unwound),
		cmocka_unit_test(test_unmatched),
		cmocka_unit_test(test_recursion),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_windows),
		cmocka_unit_test(test_no_time),
		cmocka_unit_test(test_streamed),
		cmocka_unit_test(test_window_budget),
		cmocka_unit_test(test_window_error),
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_too_deep),
		cmocka_unit_test(test_unmatched_deep),
		cmocka_unit_test(test_ticks_to_ns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
