/* SPDX-License-Identifier: BSD-2-Clause */
/* Call stacks rebuilt from XRay records per thread, with self time per (thread, stack, window). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xray_stacks.h"

/*
 * An interval longer than this many windows is not believed: a damaged
 * timestamp, not a call (at 1 s windows, 18 hours in one stack of one thread).
 */
#define MAX_GAP_WINDOWS (1u << 16)

/* Open addressing from a key of two u64 to two u64; the all-ones key marks a free slot. */
struct htab {
	struct hent {
		uint64_t a, b, v, w;
	} *ents;
	size_t cap, count;
};

/*
 * (parent, func) -> child node, the lookup of every call: a key and a node
 * in 16 bytes (node 0, the root, is never a child: it marks a free slot).
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
	for (size_t j = (size_t)((key * 0x9e3779b97f4a7c15ull) >> t->shift);; j = (j + 1) & (t->cap - 1))
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
	uint32_t depth, cap;
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
	struct htab thread_ids;	/* (pid, tid) -> thread index */
	struct ctab children;	/* (parent, func) -> node */
	struct htab on_stack;	/* (thread, func) -> frames of func on that thread's stack */
	/*
	 * For threads without slot arrays: (thread, node) -> ticks in the
	 * windows closed, gen << 32 | 1 + index in touched[].
	 */
	struct htab totals;
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

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;

	return h ^ (h >> 31);
}

static struct hent *slot(const struct htab *t, uint64_t a, uint64_t b)
{
	for (size_t j = mix(a, b) & (t->cap - 1);; j = (j + 1) & (t->cap - 1)) {
		struct hent *e = &t->ents[j];

		if ((e->a == a && e->b == b) || (e->a == UINT64_MAX && e->b == UINT64_MAX))
			return e;
	}
}

static struct hent *htab_find(const struct htab *t, uint64_t a, uint64_t b)
{
	struct hent *e;

	if (!t->cap)
		return NULL;
	e = slot(t, a, b);
	return e->a == UINT64_MAX && e->b == UINT64_MAX ? NULL : e;
}

/* The entry of (a, b), made with value 0 when new; NULL when out of memory. */
static struct hent *htab_get(struct htab *t, uint64_t a, uint64_t b)
{
	struct hent *e;

	if ((t->count + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct htab big = { malloc(cap * sizeof(struct hent)), cap, t->count };

		if (!big.ents)
			return NULL;
		memset(big.ents, 0xff, cap * sizeof(struct hent));
		for (size_t i = 0; i < t->cap; i++)
			if (t->ents[i].a != UINT64_MAX || t->ents[i].b != UINT64_MAX)
				*slot(&big, t->ents[i].a, t->ents[i].b) = t->ents[i];
		free(t->ents);
		*t = big;
	}
	e = slot(t, a, b);
	if (e->a == UINT64_MAX && e->b == UINT64_MAX) {
		e->a = a;
		e->b = b;
		e->v = 0;
		e->w = 0;
		t->count++;
	}
	return e;
}

static void htab_release(struct htab *t)
{
	free(t->ents);
	memset(t, 0, sizeof(*t));
}

/* Make room in *@v for one more than @n elements of @size, doubling from @first. @return 0 or -ENOMEM. */
static int room_for_one(void *v, size_t n, size_t *cap, size_t size, size_t first)
{
	void **pp = v, *p;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : first;
	p = realloc(*pp, c * size);
	if (!p)
		return -ENOMEM;
	*pp = p;
	*cap = c;
	return 0;
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
	if (!s->nodes) {
		free(s);
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
	struct hent *e;

	if (s->last_thread != SIZE_MAX) {
		th = &s->threads[s->last_thread];
		if (th->pub.pid == pid && th->pub.tid == tid)
			return th;
	}
	e = htab_get(&s->thread_ids, pid, tid);
	if (!e)
		return NULL;
	if (!e->v) {
		if (room_for_one(&s->threads, s->nthreads, &s->threads_cap, sizeof(*s->threads), 16))
			return NULL;
		th = &s->threads[s->nthreads];
		memset(th, 0, sizeof(*th));
		th->pub.pid = pid;
		th->pub.tid = tid;
		e->v = ++s->nthreads;
	}
	s->last_thread = e->v - 1;
	return &s->threads[e->v - 1];
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
	if (s->nnodes >= UINT32_MAX ||
	    room_for_one(&s->nodes, s->nnodes, &s->nodes_cap, sizeof(*s->nodes), 64))
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
	if (n > s->out_cap) {
		struct xray_cell *p = realloc(s->out, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		s->out = p;
		s->out_cap = n;
	}
	for (size_t i = 0; i < n; i++) {
		const struct touch *t = &th->touched[i];
		uint64_t *total;

		if (th->slot) {
			th->slot[t->node] = 0;
			total = &th->total[t->node];
		} else {
			struct hent *e = htab_get(&s->totals, thread, t->node);

			if (!e)
				return -ENOMEM;
			total = &e->v;
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
	size_t cap = th->slot_cap ? th->slot_cap : 1024;
	uint32_t *p;
	uint64_t *q;

	while (cap <= node)
		cap *= 2;
	if (s->slot_total - 3 * th->slot_cap + 3 * cap > MAX_SLOTS) {
		/* from now on the totals map holds what the arrays held */
		for (size_t i = 0; i < th->slot_cap; i++) {
			struct hent *e;

			if (!th->total[i] && !th->slot[i])
				continue;
			e = htab_get(&s->totals, th - s->threads, i);
			if (!e)
				return -ENOMEM;
			e->v = th->total[i];
			e->w = (uint64_t)th->gen << 32 | th->slot[i];
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
	p = realloc(th->slot, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	th->slot = p;
	q = realloc(th->total, cap * sizeof(*q));
	if (!q)
		return -ENOMEM;
	th->total = q;
	memset(p + th->slot_cap, 0, (cap - th->slot_cap) * sizeof(*p));
	memset(q + th->slot_cap, 0, (cap - th->slot_cap) * sizeof(*q));
	s->slot_total += 3 * (cap - th->slot_cap);
	th->slot_cap = cap;
	return 0;
}

/* @node's self time in the thread's current window, made when new; NULL when out of memory. */
static struct touch *touch_of(struct xray_stacks *s, struct thread *th, uint32_t node)
{
	struct hent *e = NULL;
	uint32_t at;

	if (!th->no_slots && node >= th->slot_cap && grow_slots(s, th, node) < 0)
		return NULL;
	if (th->slot) {
		at = th->slot[node];
	} else {
		e = htab_get(&s->totals, th - s->threads, node);
		if (!e)
			return NULL;
		/* a slot of a window closed since is no slot */
		at = e->w >> 32 == th->gen ? (uint32_t)e->w : 0;
	}
	if (at)
		return &th->touched[at - 1];
	if (room_for_one(&th->touched, th->ntouched, &th->touched_cap, sizeof(*th->touched), 256))
		return NULL;
	th->touched[th->ntouched] = (struct touch){ node, 0, 0 };
	at = (uint32_t)++th->ntouched;
	if (th->slot)
		th->slot[node] = at;
	else
		e->w = (uint64_t)th->gen << 32 | at;
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
static uint64_t *count_of(struct xray_stacks *s, struct thread *th, int32_t func, bool make)
{
	struct hent *e;

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
	e = make ? htab_get(&s->on_stack, th - s->threads, (uint32_t)func) :
		   htab_find(&s->on_stack, th - s->threads, (uint32_t)func);
	return e ? &e->v : NULL;
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
	if (th->depth == th->cap) {
		uint32_t cap = th->cap ? th->cap * 2 : 64;
		struct frame *p = realloc(th->stack, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		th->stack = p;
		th->cap = cap;
	}
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
	htab_release(&s->totals);
	htab_release(&s->on_stack);
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
	struct htab calls = { 0 }, closed = { 0 };
	int ret = 0;

	/* counted per node: summed per function */
	for (size_t i = 1; i < s->nnodes; i++) {
		struct hent *e = htab_get(&calls, (uint32_t)s->nodes[i].func, 0);
		struct hent *c = htab_get(&closed, (uint32_t)s->nodes[i].func, 0);

		if (!e || !c) {
			ret = -ENOMEM;
			goto out;
		}
		e->v += s->nodes[i].calls;
		c->v += s->nodes[i].closed;
	}
	for (size_t i = 0; i < calls.cap && !ret; i++) {
		const struct hent *e = &calls.ents[i];

		if (e->a != UINT64_MAX || e->b != UINT64_MAX)
			ret = fn(ctx, (int32_t)(uint32_t)e->a, e->v, htab_find(&closed, e->a, 0)->v);
	}
out:
	htab_release(&calls);
	htab_release(&closed);
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
	htab_release(&s->thread_ids);
	free(s->children.ents);
	htab_release(&s->on_stack);
	htab_release(&s->totals);
	free(s);
}
