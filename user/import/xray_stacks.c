/* SPDX-License-Identifier: BSD-2-Clause */
/* Call stacks rebuilt from XRay records per thread, with self time per (thread, stack, window). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/hmap.h"
#include "common/vec.h"
#include "xray_stacks.h"

/*
 * An interval longer than this many windows is not believed: a damaged
 * timestamp, not a call (at 1 s windows, 18 hours in one stack of one thread).
 */
#define MAX_GAP_WINDOWS (1u << 16)

/*
 * (parent, func) -> child node, the lookup of every call: a key and a node
 * in 16 bytes (node 0, the root, is never a child: it marks a free slot).
 * Not an hmap: its 24-byte entries and out-of-line calls made `sfprof import
 * xray` about 10% slower and 7 MiB bigger on scripts/bench-xray's trace. It
 * hashes as hmap does.
 */
struct ctab {
	struct cent {
		uint64_t key;
		uint32_t node;
	} *ents;
	size_t cap, count;
	unsigned shift;		/* 64 - log2(cap) */
};

static struct cent *ctab_slot(const struct ctab *t, uint64_t key)
{
	for (size_t j = (size_t)(hmap_hash_u64(key) >> t->shift);; j = (j + 1) & (t->cap - 1))
		if (t->ents[j].key == key || !t->ents[j].node)
			return &t->ents[j];
}

/* The slot of @key, free (node 0) when new; NULL when out of memory. */
static struct cent *ctab_get(struct ctab *t, uint64_t key)
{
	if ((t->count + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct ctab big = { calloc(cap, sizeof(struct cent)), cap, t->count,
				    (unsigned)(64 - __builtin_ctzll(cap)) };

		if (!big.ents)
			return NULL;
		for (size_t i = 0; i < t->cap; i++)
			if (t->ents[i].node)
				*ctab_slot(&big, t->ents[i].key) = t->ents[i];
		free(t->ents);
		*t = big;
	}
	return ctab_slot(t, key);
}

struct node {
	uint32_t last_child;	/* the child made or found last, to skip the hash */
	uint32_t parent;
	int32_t func;
	uint32_t depth;
	uint64_t calls;		/* entries that pushed this node */
	uint64_t closed;	/* pops of it: by its exit, or by an outer one */
};

struct frame {
	int32_t func;
	uint32_t node;
};

/* What a thread without slot arrays keeps of a node (see struct thread). */
struct total {
	uint64_t ticks;		/* in the windows closed */
	uint64_t mark;		/* gen << 32 | 1 + index in touched[] */
};

/* Self time of one stack in a thread's current window, until the window closes. */
struct touch {
	uint32_t node;
	uint64_t ticks;
	uint64_t end;
};

struct thread {
	struct xray_thread pub;
	/*
	 * The current window's self time, indexed by node: slot[node] is 1 +
	 * the node's index in touched[] (0: not yet in this window), so that
	 * the per-record path is an array access, not a hash probe;
	 * total[node] is the node's ticks in the windows closed. Without the
	 * arrays (too many threads times nodes) the totals map holds both.
	 */
	uint32_t *slot;
	uint64_t *total;
	size_t slot_cap;
	struct touch *touched;
	size_t ntouched, touched_cap;
	int64_t window;
	uint32_t gen;		/* windows closed: marks the totals map's slots of this one */
	bool have_window;
	bool no_slots;		/* decided once: no slot array, the totals map instead */
	/* frames of each function on the stack, for ids below DENSE_FUNCS (else on_stack) */
	uint64_t *counts;
	bool no_dense;		/* decided once: this thread keeps all its counts in on_stack */
	struct frame *stack;
	size_t stack_cap;
	uint32_t depth;
	uint64_t overflow;	/* entries not pushed past the depth limit, still open */
	uint64_t last_tsc;
	bool have_last;
};

struct xray_stacks {
	uint64_t window_ticks;
	uint64_t base;
	bool have_base, finished;
	struct xray_stacks_stats stats;
	struct thread *threads;
	size_t nthreads, threads_cap;
	size_t last_thread;	/* records come a buffer, one thread, at a time */
	struct node *nodes;
	size_t nnodes, nodes_cap;
	struct hmap *thread_ids;	/* pid << 32 | tid -> thread index + 1 */
	struct ctab children;		/* (parent, func) -> node */
	struct hmap *on_stack;		/* thread << 32 | func -> frames of func on its stack */
	/* For threads without slot arrays: thread << 32 | node -> index in totals + 1. */
	struct hmap *total_ids;
	struct total *totals;
	size_t ntotals, totals_cap;
	xray_window_fn fn;
	void *ctx;
	struct xray_cell *out;	/* a window's cells, as given to fn */
	size_t out_cap;
	uint64_t ncells;
	size_t slot_total;	/* 4-byte units of all threads' arrays: bounded by MAX_SLOTS */
};

/* Function ids whose on-stack counts a thread keeps in an array rather than the hash. */
#define DENSE_FUNCS 4096

/*
 * Per-thread arrays, in 4-byte units, all threads together (1 GiB); past it
 * the totals map is used. Set lower by a unit test, to take the map's path.
 */
#ifdef XRAY_STACKS_MAX_SLOTS
#define MAX_SLOTS XRAY_STACKS_MAX_SLOTS
#else
#define MAX_SLOTS (1u << 28)
#endif

/* The totals of @node in thread @thread, made (zero) when new; NULL when out of memory. */
static struct total *total_of(struct xray_stacks *s, uint64_t thread, uint32_t node)
{
	uint64_t *v;

	if (hmap__entry_u64(s->total_ids, thread << 32 | node, &v))
		return NULL;
	if (!*v) {
		if (VEC_RESERVE(s->totals, s->totals_cap, s->ntotals + 1, 256)) {
			hmap__delete_u64(s->total_ids, thread << 32 | node, NULL);
			return NULL;
		}
		s->totals[s->ntotals] = (struct total){ 0, 0 };
		*v = ++s->ntotals;
	}
	return &s->totals[*v - 1];
}

uint64_t xray_ticks_to_ns(uint64_t ticks, uint64_t freq)
{
	if (!freq || freq == 1000000000u)
		return ticks;
	return (uint64_t)((unsigned __int128)ticks * 1000000000u / freq);
}

struct xray_stacks *xray_stacks__new(uint64_t window_ticks, xray_window_fn fn, void *ctx)
{
	struct xray_stacks *s;

	if (!window_ticks) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->window_ticks = window_ticks;
	s->fn = fn;
	s->ctx = ctx;
	s->nodes = calloc(64, sizeof(*s->nodes));
	s->thread_ids = hmap__new(HMAP_U64);
	s->on_stack = hmap__new(HMAP_U64);
	s->total_ids = hmap__new(HMAP_U64);
	if (!s->nodes || !s->thread_ids || !s->on_stack || !s->total_ids) {
		xray_stacks__free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->nodes_cap = 64;
	s->nnodes = 1;		/* the root: the empty stack */
	s->last_thread = SIZE_MAX;
	return s;
}

static struct thread *thread_of(struct xray_stacks *s, uint32_t pid, uint32_t tid)
{
	struct thread *th;
	uint64_t *v;

	if (s->last_thread != SIZE_MAX) {
		th = &s->threads[s->last_thread];
		if (th->pub.pid == pid && th->pub.tid == tid)
			return th;
	}
	if (hmap__entry_u64(s->thread_ids, (uint64_t)pid << 32 | tid, &v))
		return NULL;
	if (!*v) {
		if (VEC_RESERVE(s->threads, s->threads_cap, s->nthreads + 1, 16)) {
			hmap__delete_u64(s->thread_ids, (uint64_t)pid << 32 | tid, NULL);
			return NULL;
		}
		th = &s->threads[s->nthreads];
		memset(th, 0, sizeof(*th));
		th->pub.pid = pid;
		th->pub.tid = tid;
		*v = ++s->nthreads;
	}
	s->last_thread = *v - 1;
	return &s->threads[*v - 1];
}

/* The child of @parent for @func, made when new. @return 0 or -ENOMEM. */
static int child_of(struct xray_stacks *s, uint32_t parent, int32_t func, uint32_t *node)
{
	uint32_t last = s->nodes[parent].last_child;
	struct cent *e;
	struct node *n;

	if (last && s->nodes[last].func == func) {
		*node = last;
		return 0;
	}
	e = ctab_get(&s->children, (uint64_t)parent << 32 | (uint32_t)func);
	if (!e)
		return -ENOMEM;
	if (e->node) {
		*node = e->node;
		s->nodes[parent].last_child = e->node;
		return 0;
	}
	if (s->nnodes >= UINT32_MAX || VEC_RESERVE(s->nodes, s->nodes_cap, s->nnodes + 1, 64))
		return -ENOMEM;
	n = &s->nodes[s->nnodes];
	n->parent = parent;
	n->func = func;
	n->depth = s->nodes[parent].depth + 1;
	n->calls = 0;
	n->closed = 0;
	n->last_child = 0;
	e->key = (uint64_t)parent << 32 | (uint32_t)func;
	e->node = (uint32_t)s->nnodes;
	s->children.count++;
	s->nodes[parent].last_child = (uint32_t)s->nnodes;
	*node = s->nnodes++;
	return 0;
}

static int64_t window_of(const struct xray_stacks *s, uint64_t tsc)
{
	int64_t d = (int64_t)(tsc - s->base);
	int64_t w = d / (int64_t)s->window_ticks;

	/* round towards minus infinity: a tsc before the base is in a negative window */
	if (d < 0 && w * (int64_t)s->window_ticks != d)
		w--;
	return w;
}

/* Give the thread's current window to fn and forget it. */
static int flush_window(struct xray_stacks *s, struct thread *th)
{
	uint64_t thread = th - s->threads;
	size_t n = th->ntouched;

	if (!n)
		return 0;
	if (VEC_RESERVE(s->out, s->out_cap, n, 256))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct touch *t = &th->touched[i];
		uint64_t *total;

		if (th->slot) {
			th->slot[t->node] = 0;
			total = &th->total[t->node];
		} else {
			struct total *tot = total_of(s, thread, t->node);

			if (!tot)
				return -ENOMEM;
			total = &tot->ticks;
		}
		s->out[i] = (struct xray_cell){ (uint32_t)thread, t->node, th->window, t->ticks,
						t->end, *total };
		*total += t->ticks;
	}
	th->ntouched = 0;
	th->gen++;
	s->ncells += n;
	if (s->ncells > 2 * s->stats.function_records + XRAY_STACKS_EXTRA_CELLS)
		return -E2BIG;
	return s->fn(s->ctx, s->out, n);
}

/*
 * Make the thread's slot and total arrays cover @node. @return 0, 1 when
 * they cannot (too many threads times nodes: the totals map takes over),
 * -ENOMEM.
 */
static int grow_slots(struct xray_stacks *s, struct thread *th, uint32_t node)
{
	size_t cap = th->slot_cap ? th->slot_cap : 1024, slot_cap = th->slot_cap;
	size_t total_cap = th->slot_cap;

	while (cap <= node)
		cap *= 2;
	if (s->slot_total - 3 * th->slot_cap + 3 * cap > MAX_SLOTS) {
		/* from now on the totals map holds what the arrays held */
		for (size_t i = 0; i < th->slot_cap; i++) {
			struct total *tot;

			if (!th->total[i] && !th->slot[i])
				continue;
			tot = total_of(s, th - s->threads, i);
			if (!tot)
				return -ENOMEM;
			tot->ticks = th->total[i];
			tot->mark = (uint64_t)th->gen << 32 | th->slot[i];
		}
		s->slot_total -= 3 * th->slot_cap;
		free(th->slot);
		free(th->total);
		th->slot = NULL;
		th->total = NULL;
		th->slot_cap = 0;
		th->no_slots = true;
		return 1;
	}
	/* doubling from the old capacity (or from cap) lands on cap itself */
	if (VEC_RESERVE(th->slot, slot_cap, cap, cap) || VEC_RESERVE(th->total, total_cap, cap, cap))
		return -ENOMEM;
	memset(th->slot + th->slot_cap, 0, (cap - th->slot_cap) * sizeof(*th->slot));
	memset(th->total + th->slot_cap, 0, (cap - th->slot_cap) * sizeof(*th->total));
	s->slot_total += 3 * (cap - th->slot_cap);
	th->slot_cap = cap;
	return 0;
}

/* @node's self time in the thread's current window, made when new; NULL when out of memory. */
static struct touch *touch_of(struct xray_stacks *s, struct thread *th, uint32_t node)
{
	struct total *tot = NULL;
	uint32_t at;

	if (!th->no_slots && node >= th->slot_cap && grow_slots(s, th, node) < 0)
		return NULL;
	if (th->slot) {
		at = th->slot[node];
	} else {
		tot = total_of(s, th - s->threads, node);
		if (!tot)
			return NULL;
		/* a slot of a window closed since is no slot */
		at = tot->mark >> 32 == th->gen ? (uint32_t)tot->mark : 0;
	}
	if (at)
		return &th->touched[at - 1];
	if (VEC_RESERVE(th->touched, th->touched_cap, th->ntouched + 1, 256))
		return NULL;
	th->touched[th->ntouched] = (struct touch){ node, 0, 0 };
	at = (uint32_t)++th->ntouched;
	if (th->slot)
		th->slot[node] = at;
	else
		tot->mark = (uint64_t)th->gen << 32 | at;
	return &th->touched[at - 1];
}

/* Add to @node in the thread's current window @w. @return 0 or -errno. */
static int window_add(struct xray_stacks *s, struct thread *th, uint32_t node, int64_t w,
		      uint64_t ticks, uint64_t end)
{
	struct touch *t;
	int err;

	if (!th->have_window || th->window != w) {
		if (th->have_window && (err = flush_window(s, th)))
			return err;
		th->window = w;
		th->have_window = true;
	}
	t = touch_of(s, th, node);
	if (!t)
		return -ENOMEM;
	t->ticks += ticks;
	if (end > t->end)
		t->end = end;
	return 0;
}

/* Give the ticks [from, to) of @th to @node, window by window. */
static int account(struct xray_stacks *s, struct thread *th, uint32_t node, uint64_t from,
		   uint64_t to)
{
	int64_t w = window_of(s, from), last = window_of(s, to - 1);
	int err;

	if ((uint64_t)(last - w) >= MAX_GAP_WINDOWS) {
		s->stats.gaps++;
		return 0;
	}
	s->stats.self_ticks += to - from;
	while (from < to) {
		uint64_t end = s->base + (uint64_t)(w + 1) * s->window_ticks;

		if (end > to || end <= from)
			end = to;
		if ((err = window_add(s, th, node, w, end - from, end)))
			return err;
		from = end;
		w++;
	}
	return 0;
}

/*
 * The number of frames of @func on @th's stack: an array for small ids (the
 * common case, no hash probe per call), the on_stack hash otherwise. Made
 * when @make; NULL when there is none yet (or, with @make, no memory).
 */
/* count_of() of a function whose counts are in the on_stack map. */
static uint64_t *count_in_map(struct xray_stacks *s, struct thread *th, int32_t func, bool make)
{
	uint64_t key = (uint64_t)(th - s->threads) << 32 | (uint32_t)func, *count;
	int err = make ? hmap__entry_u64(s->on_stack, key, &count) :
			 hmap__find_u64(s->on_stack, key, &count);

	return err ? NULL : count;
}

static uint64_t *count_of(struct xray_stacks *s, struct thread *th, int32_t func, bool make)
{
	if (func >= 0 && func < DENSE_FUNCS && !th->no_dense) {
		if (th->counts)
			return &th->counts[func];
		if (!make)
			return NULL;
		/* the first count decides for the thread's whole life: its counts are never split */
		if (s->slot_total + 2 * DENSE_FUNCS <= MAX_SLOTS &&
		    (th->counts = calloc(DENSE_FUNCS, sizeof(*th->counts)))) {
			s->slot_total += 2 * DENSE_FUNCS;
			return &th->counts[func];
		}
		th->no_dense = true;
	}
	return count_in_map(s, th, func, make);
}

static int push(struct xray_stacks *s, struct thread *th, int32_t func)
{
	uint32_t parent = th->depth ? th->stack[th->depth - 1].node : XRAY_STACKS_ROOT, node;
	uint64_t *count;
	int err;

	if (th->depth == XRAY_STACKS_MAX_DEPTH || th->overflow) {
		s->stats.too_deep++;
		th->overflow++;
		return 0;
	}
	if (VEC_RESERVE(th->stack, th->stack_cap, th->depth + 1, 64))
		return -ENOMEM;
	if ((err = child_of(s, parent, func, &node)))
		return err;
	count = count_of(s, th, func, true);
	if (!count)
		return -ENOMEM;
	(*count)++;
	s->nodes[node].calls++;
	th->stack[th->depth++] = (struct frame){ func, node };
	return 0;
}

static void pop(struct xray_stacks *s, struct thread *th, int32_t func)
{
	uint64_t *count;
	uint32_t i;

	/* past the depth limit the frames are not known: an exit closes the last entry */
	if (th->overflow) {
		th->overflow--;
		return;
	}
	count = count_of(s, th, func, false);
	if (!count || !*count) {
		s->stats.unmatched++;
		return;
	}
	/* the innermost frame of @func: the frames above it never exited */
	for (i = th->depth; i > 0 && th->stack[i - 1].func != func; i--) {
		uint64_t *c = count_of(s, th, th->stack[i - 1].func, false);

		if (c && *c)
			(*c)--;
		s->nodes[th->stack[i - 1].node].closed++;
		s->stats.unwound++;
	}
	/* the count said it is there; i is 0 only if the counts were wrong */
	if (i) {
		i--;
		s->nodes[th->stack[i].node].closed++;
	}
	(*count)--;
	th->depth = i;
}

static int function_record(struct xray_stacks *s, const struct xray_record *rec)
{
	struct thread *th = thread_of(s, rec->pid, rec->tid);
	int err;

	if (!th)
		return -ENOMEM;
	s->stats.function_records++;
	th->pub.records++;
	if (!s->have_base) {
		s->base = rec->tsc;
		s->have_base = true;
		s->stats.first_tsc = s->stats.last_tsc = rec->tsc;
	}
	if (rec->tsc < s->stats.first_tsc)
		s->stats.first_tsc = rec->tsc;
	if (rec->tsc > s->stats.last_tsc)
		s->stats.last_tsc = rec->tsc;
	if (th->have_last) {
		if (rec->tsc < th->last_tsc)
			s->stats.backwards++;
		else if (th->depth && rec->tsc > th->last_tsc &&
			 (err = account(s, th, th->stack[th->depth - 1].node, th->last_tsc, rec->tsc)))
			return err;
	}
	th->last_tsc = rec->tsc;
	th->have_last = true;
	switch (rec->kind) {
	case XRAY_REC_ENTER:
		s->stats.enters++;
		return push(s, th, rec->func_id);
	case XRAY_REC_ENTER_ARGS:
		s->stats.enters_args++;
		return push(s, th, rec->func_id);
	case XRAY_REC_EXIT:
		s->stats.exits++;
		pop(s, th, rec->func_id);
		return 0;
	default:
		s->stats.tail_exits++;
		pop(s, th, rec->func_id);
		return 0;
	}
}

int xray_stacks__add(struct xray_stacks *s, const struct xray_record *rec)
{
	if (s->finished)
		return -EINVAL;
	s->stats.records++;
	switch (rec->kind) {
	case XRAY_REC_ENTER:
	case XRAY_REC_ENTER_ARGS:
	case XRAY_REC_EXIT:
	case XRAY_REC_TAIL_EXIT:
		return function_record(s, rec);
	case XRAY_REC_CALL_ARG:
		s->stats.call_args++;
		return 0;
	case XRAY_REC_CUSTOM_EVENT:
		s->stats.custom_events++;
		return 0;
	case XRAY_REC_TYPED_EVENT:
		s->stats.typed_events++;
		return 0;
	default:
		return 0;
	}
}

void xray_stacks__break(struct xray_stacks *s)
{
	s->stats.breaks++;
	for (size_t i = 0; i < s->nthreads; i++)
		s->threads[i].have_last = false;
}

int xray_stacks__finish(struct xray_stacks *s)
{
	int err;

	if (s->finished)
		return 0;
	s->finished = true;
	for (size_t i = 0; i < s->nthreads; i++)
		if ((err = flush_window(s, &s->threads[i])))
			return err;
	/* what only the per-record path needed */
	hmap__free(s->total_ids);
	hmap__free(s->on_stack);
	free(s->totals);
	s->total_ids = s->on_stack = NULL;
	s->totals = NULL;
	s->ntotals = s->totals_cap = 0;
	return 0;
}

const struct xray_stacks_stats *xray_stacks__stats(const struct xray_stacks *s)
{
	return &s->stats;
}

uint64_t xray_stacks__base(const struct xray_stacks *s)
{
	return s->base;
}

size_t xray_stacks__nthreads(const struct xray_stacks *s)
{
	return s->nthreads;
}

const struct xray_thread *xray_stacks__thread(const struct xray_stacks *s, size_t i)
{
	return &s->threads[i].pub;
}

size_t xray_stacks__nnodes(const struct xray_stacks *s)
{
	return s->nnodes;
}

uint32_t xray_stacks__node(const struct xray_stacks *s, uint32_t node, int32_t *func,
			   uint32_t *parent)
{
	const struct node *n = &s->nodes[node];

	*func = n->func;
	*parent = n->parent;
	return n->depth;
}

uint64_t xray_stacks__ncells(const struct xray_stacks *s)
{
	return s->ncells;
}

int xray_stacks__foreach_func(const struct xray_stacks *s,
			      int (*fn)(void *ctx, int32_t func, uint64_t calls, uint64_t closed),
			      void *ctx)
{
	struct func_sum {
		int32_t func;
		uint64_t calls, closed;
	} *sums = NULL;
	size_t nsums = 0, cap = 0;
	struct hmap *ids = hmap__new(HMAP_U64);	/* func -> index in sums + 1 */
	int ret = 0;

	if (!ids)
		return -ENOMEM;
	/* counted per node: summed per function */
	for (size_t i = 1; i < s->nnodes; i++) {
		uint64_t *v;

		if (hmap__entry_u64(ids, (uint32_t)s->nodes[i].func, &v)) {
			ret = -ENOMEM;
			goto out;
		}
		if (!*v) {
			if (VEC_RESERVE(sums, cap, nsums + 1, 64)) {
				ret = -ENOMEM;
				goto out;
			}
			sums[nsums] = (struct func_sum){ s->nodes[i].func, 0, 0 };
			*v = ++nsums;
		}
		sums[*v - 1].calls += s->nodes[i].calls;
		sums[*v - 1].closed += s->nodes[i].closed;
	}
	for (size_t i = 0; i < nsums && !ret; i++)
		ret = fn(ctx, sums[i].func, sums[i].calls, sums[i].closed);
out:
	hmap__free(ids);
	free(sums);
	return ret;
}

void xray_stacks__free(struct xray_stacks *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nthreads; i++) {
		free(s->threads[i].stack);
		free(s->threads[i].slot);
		free(s->threads[i].total);
		free(s->threads[i].touched);
		free(s->threads[i].counts);
	}
	free(s->threads);
	free(s->nodes);
	free(s->out);
	hmap__free(s->thread_ids);
	free(s->children.ents);
	hmap__free(s->on_stack);
	hmap__free(s->total_ids);
	free(s->totals);
	free(s);
}
