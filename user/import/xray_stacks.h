/* SPDX-License-Identifier: BSD-2-Clause */
/* Call stacks rebuilt per thread from XRay records, as llvm-xray stack does; self time per stack. */
#ifndef SFPROF_XRAY_STACKS_H
#define SFPROF_XRAY_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xray.h"

/*
 * Records are given in file order, one trace at a time (one object per
 * trace: its ticks are the trace's own). Per thread (pid, tid):
 *
 * - an entry (with or without arguments) pushes its function;
 * - an exit or a tail exit pops down to the innermost entry of its function,
 *   taking with it the frames above that never exited (an exception or a
 *   longjmp went through them); one whose function is not on the stack is
 *   counted as unmatched and changes nothing;
 * - the ticks between two consecutive function records of a thread are self
 *   time of the stack that was current between them (none when it was empty).
 *
 * Stacks are interned in a trie of (parent, function) nodes, and self time
 * is summed per (thread, node, window), windows being fixed spans of ticks.
 * Only each thread's current window is held: when a thread's next interval
 * falls in another window, the one it leaves is handed to the caller and
 * forgotten. Memory grows with distinct stacks and threads, not with the
 * length of the trace.
 */

/* A stack: node 0 is the empty stack, the others have a parent and a function. */
#define XRAY_STACKS_ROOT 0

/* Deeper entries are not pushed: counted in `too_deep`, their time goes to the deepest frame kept. */
#define XRAY_STACKS_MAX_DEPTH 65536

struct xray_stacks_stats {
	uint64_t records;		/* every record given */
	uint64_t function_records;	/* entries, exits, tail exits */
	uint64_t enters, enters_args, exits, tail_exits;
	uint64_t call_args, custom_events, typed_events;
	uint64_t unmatched;		/* exits, tail exits with no entry of theirs on the stack */
	uint64_t unwound;		/* frames popped by an outer exit, never exited themselves */
	uint64_t backwards;		/* function records earlier than their thread's last one */
	uint64_t too_deep;		/* entries past XRAY_STACKS_MAX_DEPTH */
	uint64_t gaps;			/* intervals too long to be believed: not counted */
	uint64_t breaks;		/* losses: intervals across them not counted */
	uint64_t first_tsc, last_tsc;	/* of function records; valid when function_records */
	uint64_t self_ticks;		/* all the time given to stacks */
};

struct xray_thread {
	uint32_t pid, tid;
	uint64_t records;		/* its function records */
};

/* Self time of one stack in one thread and window. */
struct xray_cell {
	uint32_t thread;		/* index for xray_stacks__thread() */
	uint32_t node;
	int64_t window;			/* (tsc - base) / window ticks, base: the first record's */
	uint64_t ticks;
	uint64_t end_tsc;		/* where the last interval counted in it ended */
	uint64_t before;		/* ticks of this thread and node in the cells given before */
};

/*
 * Cells beyond two per function record and this many are refused: only
 * timestamps that jump by hours at every record open that many windows.
 */
#define XRAY_STACKS_EXTRA_CELLS (1u << 24)

struct xray_stacks;

/**
 * xray_window_fn - a thread's window is closed: its cells (one thread, one
 * window, each node once). A window may be given again when a thread's
 * timestamps go back to it (after a loss). A non-zero return (-errno) stops
 * the import: xray_stacks__add() or __finish() returns it.
 */
typedef int (*xray_window_fn)(void *ctx, const struct xray_cell *cells, size_t n);

/**
 * xray_stacks__new() - start rebuilding the stacks of one trace.
 * @window_ticks: the span of a window, in the trace's ticks (at least 1).
 * @fn, @ctx: given each window as it closes.
 *
 * @return the object, or NULL with errno set (EINVAL, ENOMEM).
 */
struct xray_stacks *xray_stacks__new(uint64_t window_ticks, xray_window_fn fn, void *ctx);

/**
 * xray_stacks__add() - account one record, in file order.
 * @return 0, -ENOMEM, -E2BIG when the timestamps open more windows than the
 * records can account for (see XRAY_STACKS_EXTRA_CELLS: a damaged trace),
 * what @fn returned, or -EINVAL after xray_stacks__finish().
 */
int xray_stacks__add(struct xray_stacks *s, const struct xray_record *rec);

/**
 * xray_stacks__break() - part of the trace was lost here: no thread's next
 * interval starts before it. Stacks are kept.
 */
void xray_stacks__break(struct xray_stacks *s);

/**
 * xray_stacks__finish() - no more records: give every thread's last window.
 * Stacks, threads and counts stay readable. @return 0, -ENOMEM, or what
 * @fn returned (the object is then unusable for records).
 */
int xray_stacks__finish(struct xray_stacks *s);

/** @return the counts so far. */
const struct xray_stacks_stats *xray_stacks__stats(const struct xray_stacks *s);

/** @return the tsc window 0 starts at (the first function record's), 0 before any. */
uint64_t xray_stacks__base(const struct xray_stacks *s);

size_t xray_stacks__nthreads(const struct xray_stacks *s);
const struct xray_thread *xray_stacks__thread(const struct xray_stacks *s, size_t i);

/** @return the number of nodes, the root included. */
size_t xray_stacks__nnodes(const struct xray_stacks *s);

/**
 * xray_stacks__node() - a node's function and parent.
 * @return its depth (0 for the root).
 */
uint32_t xray_stacks__node(const struct xray_stacks *s, uint32_t node, int32_t *func,
			   uint32_t *parent);

/** @return the number of cells given to the window function so far. */
uint64_t xray_stacks__ncells(const struct xray_stacks *s);

/**
 * xray_stacks__foreach_func() - each function entered, in no particular
 * order, with its number of entries (@calls) and of frames of it popped
 * (@closed: by its exit or tail exit, or by the exit of a caller, as
 * `llvm-xray account -d` counts calls); they differ by the frames still open
 * at the end. Stops at the first non-zero return of @fn.
 * @return that value, 0, or -ENOMEM.
 */
int xray_stacks__foreach_func(const struct xray_stacks *s,
			      int (*fn)(void *ctx, int32_t func, uint64_t calls, uint64_t closed),
			      void *ctx);

/** xray_stacks__free() - accepts NULL. */
void xray_stacks__free(struct xray_stacks *s);

/** xray_ticks_to_ns() - @ticks at @freq ticks/s in ns, rounded down (1 GHz when @freq is 0). */
uint64_t xray_ticks_to_ns(uint64_t ticks, uint64_t freq);

#endif
