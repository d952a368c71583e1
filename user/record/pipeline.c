/* SPDX-License-Identifier: BSD-2-Clause */
/* The record path behind the ring: samples queued, bounded in bytes, to unwinding threads that own their processes. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>

#include "buildid/buildid.h"
#include "kernel_jit.h"
#include "pipeline.h"
#include "python.h"
#include "common/clock.h"
#include "util/mapfile.h"

enum item_kind { ITEM_SAMPLE, ITEM_TASK_EVENT, ITEM_WRAP };

/*
 * A sample or a task event in a thread's queue, copied out of the ring or
 * the task buffers; ITEM_WRAP: the rest of the queue's end is unused.
 */
struct item {
	uint32_t kind;
	uint32_t len;		/* of data */
	uint64_t time;		/* of a task event */
	uint8_t data[];
};

#define ITEM_ALIGN 16u	/* the end of the queue always has room for a header */

/*
 * A thread takes the samples at the head of its queue in batches (up to the
 * next task event): their processes first, in order; then their unwinding,
 * which the threads with nothing queued share (help()); then their writing,
 * in order. The address spaces cannot change in between: only task events
 * change them, and the batch ends before one.
 */
#define BATCH_MAX 64u
/*
 * A batch is offered only from this many samples on: a backlog. Smaller ones
 * (a few samples read from the ring together) cost the thread woken to help
 * more than their unwinding.
 */
#define HELP_MIN 16u

/*
 * Who unwinds a slot of an offered batch (atomic). A helping thread takes an
 * OPEN slot and unwinds it into a buffer of its own, then PUBLISHING it swaps
 * that into the slot and says DONE. Its own thread, out of slots to take,
 * takes back every slot still OPEN or HELPER and unwinds it itself (OWNER):
 * it does not wait for a thread the scheduler took the CPU from to finish a
 * slot, only, rarely, for a swap under way. A helper whose slot was taken
 * back drops its work. A helper reads the slot's sample (in the queue) and
 * process (freed at its exit): the owner leaves the batch (moves the queue's
 * tail, applies task events, fills the slots again) only once no helper is
 * inside it (shard.inside), after writing the batch.
 */
enum slot_state { SLOT_OPEN, SLOT_HELPER, SLOT_OWNER, SLOT_PUBLISHING, SLOT_DONE };

struct slot {
	const struct item *it;
	const struct proctab_proc *pr;	/* NULL: not written */
	uint64_t unwind_ns;		/* what the unwinding took, on whichever thread */
	struct procs_unwound u;
	uint32_t state;			/* enum slot_state */
};

/*
 * One unwinding thread, the processes it owns, and its queue: a ring of
 * bytes with one writer (the draining thread) and one reader (this thread),
 * which handles each item in place. Its memory is allocated once and is the
 * bound: nothing on the record path copies a sample twice or grows with the
 * backlog.
 */
struct shard {
	struct pipeline *pl;
	struct procs *procs;
	pthread_t thread;
	bool started;
	uint8_t *ring;
	size_t size;		/* of ring, a multiple of ITEM_ALIGN */
	size_t head, tail;	/* bytes ever written and read (atomic: one writer each) */
	size_t event_room;	/* samples leave this much for task events */
	size_t wrap_at;		/* go back to the start once the reader is this far in */
	pthread_mutex_t lock;	/* for sleeping and waking only */
	pthread_cond_t wake;
	bool sleeping;		/* the thread waits for wake (atomic) */
	bool closing;		/* handle what is queued, then stop (atomic) */
	bool backlogged;	/* the thread's: what it last told pipeline.backlog */
	/* the thread's own; read by others after it is joined */
	uint64_t handled, ustack_bytes, resized;
	uint64_t slow, slowest_ns;
	uint64_t helped;	/* samples of other threads' batches unwound here */
	uint64_t process_ns, unwind_ns, write_ns;	/* its samples' steps, summed */
	/*
	 * The batch being handled. board (atomic) offers its unwinding to the
	 * other threads: generation << 32 | count << 16 | next to take.
	 */
	struct slot batch[BATCH_MAX];
	uint64_t board;
	uint32_t inside;	/* helpers between taking a slot and leaving it (atomic) */
	struct procs_unwound spare;	/* where this thread unwinds a slot it helps with */
};

struct pipeline {
	struct pipeline_opts opts;
	struct sfu_cache *cache;
	struct prepare *prepare;	/* NULL when files are opened at first sample */
	struct shard shards[PIPELINE_MAX_WORKERS];
	unsigned nshards;
	bool abandon;		/* stopping without handling what is queued (atomic) */
	bool wait_for_room;	/* the producer waits at the bound instead of dropping */
	pipeline_resize_fn resize;
	void *resize_ctx;
	pipeline_wanted_fn wanted;
	void *wanted_ctx;
	pipeline_backlog_fn backlog;
	void *backlog_ctx;
	/* the window's file, for the kernel's JIT code (BPF programs) loaded at its start and end */
	struct profile_writer *w;
	pthread_mutex_t *wlock;
	struct kernel_jit *kernel_jit;
	int kernel_jit_err;
	/* the producer's */
	uint64_t dropped, dropped_events;
	size_t queued_peak;
	uint64_t joined_at;	/* CLOCK_MONOTONIC: pipeline__finish() had every queue handled */
};

static size_t item_size(size_t len)
{
	return (sizeof(struct item) + len + ITEM_ALIGN - 1) & ~(size_t)(ITEM_ALIGN - 1);
}


/* The BPF programs loaded now, into the window's file; a write error stops the recording. */
static void write_kernel_jit(struct pipeline *pl)
{
	int err;

	if (!pl->w || pl->kernel_jit_err)
		return;
	if (pl->wlock)
		pthread_mutex_lock(pl->wlock);
	err = kernel_jit__write(pl->kernel_jit, pl->w, clock_mono_ns());
	if (pl->wlock)
		pthread_mutex_unlock(pl->wlock);
	pl->kernel_jit_err = err;
}

struct pipeline *pipeline__new(struct profile_writer *w, pthread_mutex_t *wlock,
			       const struct pipeline_opts *opts)
{
	struct pipeline *pl;

	if (!opts->workers || opts->workers > PIPELINE_MAX_WORKERS) {
		errno = EINVAL;
		return NULL;
	}
	pl = calloc(1, sizeof(*pl));
	if (!pl)
		return NULL;
	pl->opts = *opts;
	pl->cache = procs__new_cache();
	if (!pl->cache)
		goto fail;
	sfu_cache__set_limit(pl->cache, opts->module_bytes);
	pl->w = w;
	pl->wlock = wlock;
	if (!(pl->kernel_jit = kernel_jit__new()))
		goto fail;
	if (opts->prepare && !(pl->prepare = prepare__new(pl->cache)))
		goto fail;
	for (unsigned i = 0; i < opts->workers; i++) {
		struct shard *sh = &pl->shards[i];

		sh->pl = pl;
		pthread_mutex_init(&sh->lock, NULL);
		pthread_cond_init(&sh->wake, NULL);
		pl->nshards++;
		/* pages are touched as the backlog first reaches them */
		sh->size = opts->queue_bytes / opts->workers & ~(size_t)(ITEM_ALIGN - 1);
		if (sh->size < PIPELINE_MIN_QUEUE)
			sh->size = PIPELINE_MIN_QUEUE;
		sh->event_room = sh->size / 8 < (1u << 20) ? sh->size / 8 : 1u << 20;
		/* room for a stall of the thread right after a wrap: a file opened, a table made */
		sh->wrap_at = sh->size / 4;
		sh->ring = mmap(NULL, sh->size, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (sh->ring == MAP_FAILED) {
			sh->ring = NULL;
			goto fail;
		}
		sh->procs = procs__new(w, wlock, pl->cache, opts->arch, opts->max_depth);
		if (!sh->procs)
			goto fail;
		procs__set_copy_sizes(sh->procs, opts->copy_start, opts->copy_adaptive);
		procs__set_fp_only(sh->procs, opts->fp_only);
	}
	/* the sampler's own programs are loaded by now: its stacks pass through them */
	write_kernel_jit(pl);
	return pl;
fail:
	pipeline__free(pl);
	errno = ENOMEM;
	return NULL;
}

void pipeline__set_warn(struct pipeline *pl, procs_warn_fn fn, void *ctx)
{
	for (unsigned i = 0; i < pl->nshards; i++)
		procs__set_warn(pl->shards[i].procs, fn, ctx);
}

void pipeline__set_wanted(struct pipeline *pl, pipeline_wanted_fn fn, void *ctx)
{
	pl->wanted = fn;
	pl->wanted_ctx = ctx;
}

int pipeline__set_python(struct pipeline *pl, const struct python_map_ops *ops)
{
	for (unsigned i = 0; i < pl->nshards; i++) {
		int err = procs__set_python(pl->shards[i].procs, ops, i, pl->nshards);

		if (err)
			return err;
	}
	return 0;
}

void pipeline__set_module_hook(struct pipeline *pl, procs_module_fn fn, void *ctx)
{
	for (unsigned i = 0; i < pl->nshards; i++)
		procs__set_module_hook(pl->shards[i].procs, fn, ctx);
}

void pipeline__set_map_hook(struct pipeline *pl, prepare_map_fn fn, void *ctx)
{
	if (pl->prepare)
		prepare__set_hook(pl->prepare, fn, ctx);
}

void pipeline__set_backlog(struct pipeline *pl, pipeline_backlog_fn fn, void *ctx)
{
	pl->backlog = fn;
	pl->backlog_ctx = ctx;
}

void pipeline__set_resize(struct pipeline *pl, pipeline_resize_fn fn, void *ctx)
{
	pl->resize = fn;
	pl->resize_ctx = ctx;
}

static struct shard *owner(struct pipeline *pl, uint32_t pid)
{
	return &pl->shards[pid % pl->nshards];
}

/*
 * Every thread learns every running process, not only those it owns: a fork
 * is handled by the child's thread, which then copies what it knows of the
 * parent. A child whose parent it did not know would be read from /proc when
 * its fork is handled, which may be after its exec: its first image would
 * take the name of the next.
 */
int pipeline__scan(struct pipeline *pl, pid_t pid)
{
	int err = 0;

	for (unsigned i = 0; i < pl->nshards; i++) {
		int e = procs__scan(pl->shards[i].procs, pid);

		if (e && !err)
			err = e;
	}
	return err;
}

int pipeline__scan_held(struct pipeline *pl, pid_t pid)
{
	int err = 0;

	for (unsigned i = 0; i < pl->nshards; i++) {
		int e = procs__scan_held(pl->shards[i].procs, pid);

		if (e && !err)
			err = e;
	}
	return err;
}

int pipeline__scan_all(struct pipeline *pl)
{
	int n = 0;

	for (unsigned i = 0; i < pl->nshards; i++) {
		int got = procs__scan_all(pl->shards[i].procs);

		if (got < 0)
			return got;
		if (!i)
			n = got;
	}
	return n;
}

/* Unwind @sl's sample into @u with @self's unwinding state. @return the ns it took. */
static uint64_t unwind_slot(struct procs *self, const struct slot *sl, struct procs_unwound *u)
{
	const struct sample_hdr *h = (const struct sample_hdr *)sl->it->data;
	const uint64_t *kstack = (const uint64_t *)(h + 1);
	uint64_t t0 = clock_mono_ns();

	procs__unwind(self, sl->pr ? sl->pr->as : NULL, h,
		      (const uint8_t *)(kstack + h->kstack_depth), u);
	return clock_mono_ns() - t0;
}

/* Take the next slot of @sh's offered batch. @return false when none is left. */
static bool claim(struct shard *sh, unsigned *idx)
{
	uint64_t b = __atomic_load_n(&sh->board, __ATOMIC_ACQUIRE);

	for (;;) {
		unsigned n = (b >> 16) & 0xffff, next = b & 0xffff;

		if (next >= n)
			return false;
		/* the generation in the word: a later batch's board never matches */
		if (__atomic_compare_exchange_n(&sh->board, &b, b + 1, true, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			*idx = next;
			return true;
		}
	}
}

static bool offered(const struct shard *sh)
{
	uint64_t b = __atomic_load_n(&sh->board, __ATOMIC_ACQUIRE);

	return (b & 0xffff) < ((b >> 16) & 0xffff);
}

/* Whether another thread than @me offers slots. */
static bool offered_any(const struct shard *me)
{
	for (unsigned j = 0; j < me->pl->nshards; j++)
		if (&me->pl->shards[j] != me && offered(&me->pl->shards[j]))
			return true;
	return false;
}

/* Whether another thread than @me has items queued: it may offer a batch soon. */
static bool busy_peer(const struct shard *me)
{
	for (unsigned j = 0; j < me->pl->nshards; j++) {
		const struct shard *sh = &me->pl->shards[j];

		if (sh != me && __atomic_load_n(&sh->head, __ATOMIC_ACQUIRE) !=
				__atomic_load_n(&sh->tail, __ATOMIC_ACQUIRE))
			return true;
	}
	return false;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/*
 * Wait a moment for another thread: spin, then sleep. A thread at
 * real-time priority (pipeline__set_backlog()) must sleep for one of
 * normal priority that it took this CPU from to run here again.
 */
static void backoff(unsigned *spins)
{
	if (++*spins < 1000)
		cpu_relax();
	else
		usleep(20);
}

/*
 * Unwind slots of the other threads' offered batches with @me's unwinding
 * state; @me has nothing queued. @return whether it did any.
 */
static bool help(struct shard *me)
{
	struct pipeline *pl = me->pl;
	bool any = false;

	for (unsigned j = 0; j < pl->nshards; j++) {
		struct shard *sh = &pl->shards[j];
		unsigned i;

		if (sh == me)
			continue;
		/* counted in before a slot is taken: the owner waits for none to be inside */
		__atomic_add_fetch(&sh->inside, 1, __ATOMIC_SEQ_CST);
		while (claim(sh, &i)) {
			struct slot *sl = &sh->batch[i];
			uint32_t open = SLOT_OPEN, mine = SLOT_HELPER;
			struct procs_unwound u;
			uint64_t ns;

			/* taken back already: the owner unwinds it */
			if (!__atomic_compare_exchange_n(&sl->state, &open, SLOT_HELPER, false,
							 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
				continue;
			ns = unwind_slot(me->procs, sl, &me->spare);
			if (!__atomic_compare_exchange_n(&sl->state, &mine, SLOT_PUBLISHING, false,
							 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
				continue;	/* taken back meanwhile: dropped */
			u = sl->u;
			sl->u = me->spare;
			me->spare = u;
			sl->unwind_ns = ns;
			__atomic_store_n(&sl->state, SLOT_DONE, __ATOMIC_RELEASE);
			me->helped++;
			any = true;
		}
		__atomic_sub_fetch(&sh->inside, 1, __ATOMIC_RELEASE);
	}
	return any;
}

/* Offer @sh's batch of @n slots and wake the threads that sleep. */
static void offer(struct shard *sh, unsigned n)
{
	struct pipeline *pl = sh->pl;
	uint64_t gen = (__atomic_load_n(&sh->board, __ATOMIC_RELAXED) >> 32) + 1;

	/* the slots' samples and processes are set: a helper reads them once it holds one */
	for (unsigned i = 0; i < n; i++)
		__atomic_store_n(&sh->batch[i].state, SLOT_OPEN, __ATOMIC_RELEASE);
	__atomic_store_n(&sh->board, gen << 32 | (uint64_t)n << 16, __ATOMIC_SEQ_CST);
	for (unsigned j = 0; j < pl->nshards; j++) {
		struct shard *other = &pl->shards[j];

		if (other != sh && __atomic_load_n(&other->sleeping, __ATOMIC_SEQ_CST)) {
			pthread_mutex_lock(&other->lock);
			pthread_cond_signal(&other->wake);
			pthread_mutex_unlock(&other->lock);
		}
	}
}

/* Handle the @n samples in @sh->batch: processes, unwinding (shared), writing, in order. */
static void handle_batch(struct shard *sh, unsigned n)
{
	struct pipeline *pl = sh->pl;
	uint64_t begin_ns[BATCH_MAX];
	unsigned i;

	for (i = 0; i < n; i++) {
		struct slot *sl = &sh->batch[i];
		uint64_t t0 = clock_mono_ns();

		sl->pr = procs__error(sh->procs) ? NULL :
			procs__sample_process(sh->procs, (const struct sample_hdr *)sl->it->data);
		begin_ns[i] = clock_mono_ns() - t0;
	}
	if (n >= HELP_MIN && pl->nshards > 1) {
		offer(sh, n);
		while (claim(sh, &i)) {
			struct slot *sl = &sh->batch[i];
			uint32_t open = SLOT_OPEN;

			if (__atomic_compare_exchange_n(&sl->state, &open, SLOT_OWNER, false,
							__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
				sl->unwind_ns = unwind_slot(sh->procs, sl, &sl->u);
		}
		/* every slot taken: those not done yet are taken back, or waited for mid-swap */
		for (i = 0; i < n; i++) {
			struct slot *sl = &sh->batch[i];
			uint32_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);

			while (st == SLOT_OPEN || st == SLOT_HELPER) {
				if (__atomic_compare_exchange_n(&sl->state, &st, SLOT_OWNER, false,
								__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
					sl->unwind_ns = unwind_slot(sh->procs, sl, &sl->u);
					st = SLOT_OWNER;
				}
			}
			for (unsigned spins = 0; st == SLOT_PUBLISHING;) {
				backoff(&spins);
				st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
			}
		}
	} else {
		for (i = 0; i < n; i++)
			sh->batch[i].unwind_ns = unwind_slot(sh->procs, &sh->batch[i], &sh->batch[i].u);
	}
	for (i = 0; i < n; i++) {
		struct slot *sl = &sh->batch[i];
		const struct sample_hdr *h = (const struct sample_hdr *)sl->it->data;
		struct procs_copy_use use;
		uint64_t t0 = clock_mono_ns(), took;

		if (!sl->pr || procs__error(sh->procs))
			continue;
		procs__sample_write(sh->procs, sl->pr, h, (const uint64_t *)(h + 1),
				    (const uint8_t *)((const uint64_t *)(h + 1) + h->kstack_depth),
				    &sl->u, &use);
		took = clock_mono_ns() - t0;
		sh->process_ns += begin_ns[i];
		sh->unwind_ns += sl->unwind_ns;
		sh->write_ns += took;
		took += begin_ns[i] + sl->unwind_ns;
		if (took > PIPELINE_SLOW_NS)
			sh->slow++;
		if (took > sh->slowest_ns)
			sh->slowest_ns = took;
		sh->handled++;
		sh->ustack_bytes += h->ustack_len;
		if (use.new_size && pl->resize && !pl->resize(pl->resize_ctx, h->tid, use.new_size, use.new_top))
			sh->resized++;
	}
	/* a helper still reading a slot it lost (its thread off the CPU) */
	for (unsigned spins = 0; __atomic_load_n(&sh->inside, __ATOMIC_SEQ_CST);)
		backoff(&spins);
}

/* Wait for an item; @return false when closing and none is left. */
static bool wait_item(struct shard *sh)
{
	bool more = true;

	pthread_mutex_lock(&sh->lock);
	__atomic_store_n(&sh->sleeping, true, __ATOMIC_SEQ_CST);
	/* looked at again after saying so: a writer that missed the flag has published */
	while (__atomic_load_n(&sh->head, __ATOMIC_SEQ_CST) == sh->tail) {
		/* nothing queued: unwind for a thread that has (offer() wakes us) */
		bool any = offered_any(sh), busy = any || busy_peer(sh);

		/* closing, this thread still helps the others to their ends */
		if (!busy && __atomic_load_n(&sh->closing, __ATOMIC_SEQ_CST)) {
			more = false;
			break;
		}
		if (busy) {
			/*
			 * While another thread works, stay awake a little for
			 * its next batch: a wake-up takes about as long as a
			 * batch of cached unwinds.
			 */
			pthread_mutex_unlock(&sh->lock);
			if (!help(sh))
				for (int spin = 0; spin < 200 && !offered_any(sh) &&
				     __atomic_load_n(&sh->head, __ATOMIC_ACQUIRE) == sh->tail; spin++)
					cpu_relax();
			pthread_mutex_lock(&sh->lock);
			/*
			 * Closing, nobody wakes this thread again: it looks until the
			 * others end. An item published while the lock was let go
			 * was signalled to nobody: look again before waiting.
			 */
			if (any || offered_any(sh) || __atomic_load_n(&sh->closing, __ATOMIC_SEQ_CST) ||
			    __atomic_load_n(&sh->head, __ATOMIC_SEQ_CST) != sh->tail)
				continue;
		}
		pthread_cond_wait(&sh->wake, &sh->lock);
	}
	__atomic_store_n(&sh->sleeping, false, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&sh->lock);
	return more;
}

/* The item at byte @at of @sh's queue, past a wrap marker there: *@at moves past the marker. */
static struct item *item_at(struct shard *sh, size_t *at)
{
	size_t pos = *at % sh->size;
	struct item *it = (struct item *)(sh->ring + pos);

	if (it->kind == ITEM_WRAP) {
		*at += sh->size - pos;
		it = (struct item *)sh->ring;
	}
	return it;
}

/*
 * Tell whether @sh's queue is backing up: a quarter full or more, until it
 * is down to a sixteenth (the thread may then be real-time, and should not
 * flip at every batch).
 */
static void say_backlog(struct shard *sh)
{
	struct pipeline *pl = sh->pl;
	size_t queued = __atomic_load_n(&sh->head, __ATOMIC_ACQUIRE) - sh->tail;

	if (!pl->backlog)
		return;
	if (queued >= sh->size / 4)
		sh->backlogged = true;
	else if (queued <= sh->size / 16)
		sh->backlogged = false;
	pl->backlog(pl->backlog_ctx, (unsigned)(sh - pl->shards), sh->backlogged);
}

static void *worker(void *arg)
{
	struct shard *sh = arg;
	struct pipeline *pl = sh->pl;
	/* a batch holds at most this much of the queue: the producer keeps room */
	size_t batch_bytes = sh->size / 8;

	while (wait_item(sh)) {
		size_t head = __atomic_load_n(&sh->head, __ATOMIC_ACQUIRE);

		while (sh->tail != head) {
			size_t at = sh->tail, from;
			struct item *it = item_at(sh, &at);
			unsigned n = 0;

			if (at == head) {	/* a wrap marker last */
				__atomic_store_n(&sh->tail, at, __ATOMIC_RELEASE);
				break;
			}
			if (__atomic_load_n(&pl->abandon, __ATOMIC_RELAXED)) {
				__atomic_store_n(&sh->tail, at + item_size(it->len), __ATOMIC_RELEASE);
				continue;
			}
			if (it->kind == ITEM_TASK_EVENT) {
				procs__task_event(sh->procs, (const struct perf_event_header *)it->data,
						  it->time);
				/* the room goes back item by item: the writer need not wait for a batch */
				__atomic_store_n(&sh->tail, at + item_size(it->len), __ATOMIC_RELEASE);
				continue;
			}
			/* the samples up to the next task event, the end, or the batch's bounds */
			from = at;
			for (;;) {
				sh->batch[n++].it = it;
				at += item_size(it->len);
				if (n == BATCH_MAX || at == head || at - from >= batch_bytes)
					break;
				size_t next = at;
				struct item *nx = item_at(sh, &next);

				if (next == head || nx->kind != ITEM_SAMPLE)
					break;
				at = next;
				it = nx;
			}
			handle_batch(sh, n);
			__atomic_store_n(&sh->tail, at, __ATOMIC_RELEASE);
			say_backlog(sh);
		}
		/* up to the head: before it waits or helps, at normal priority */
		say_backlog(sh);
	}
	return NULL;
}

int pipeline__start(struct pipeline *pl)
{
	char name[32];

	if (pl->prepare) {
		int err = prepare__start(pl->prepare);

		if (err)
			return err;
	}
	for (unsigned i = 0; i < pl->nshards; i++) {
		struct shard *sh = &pl->shards[i];
		int err = pthread_create(&sh->thread, NULL, worker, sh);

		if (err)
			return -err;
		sh->started = true;
		/* as top -H and /proc show it: at most 15 bytes */
		snprintf(name, sizeof(name), "sfprof-unw%u", i);
		name[15] = '\0';
		pthread_setname_np(sh->thread, name);
	}
	return 0;
}

/*
 * Room for an item of @len bytes in @sh's queue, leaving @keep bytes free;
 * NULL when there is none. The draining thread is the only writer.
 */
static struct item *reserve(struct shard *sh, size_t len, size_t keep)
{
	size_t tail = __atomic_load_n(&sh->tail, __ATOMIC_ACQUIRE);
	size_t pos = sh->head % sh->size, need = item_size(len), skip = 0;
	size_t used = sh->head - tail;

	/*
	 * Wrap when it does not fit before the end; and go back to the start
	 * early when the reader is far enough from it (in this lap, past
	 * wrap_at): the pages in use are then about those of the deepest
	 * backlog, not the whole ring's. The bytes skipped count as used until
	 * the reader passes them, so what is free after a wrap is what lies
	 * before the reader: wrap_at keeps that much room.
	 */
	if (need > sh->size - pos || (used <= pos && pos - used >= sh->wrap_at + keep + need))
		skip = sh->size - pos;
	if (used + skip + need + keep > sh->size)
		return NULL;
	if (used + need > sh->pl->queued_peak)
		sh->pl->queued_peak = used + need;	/* items, not the bytes a wrap skips */
	if (skip) {
		((struct item *)(sh->ring + pos))->kind = ITEM_WRAP;
		/* the reader may see this head before the item's: the marker must be seen first */
		__atomic_store_n(&sh->head, sh->head + skip, __ATOMIC_RELEASE);
		pos = 0;
	}
	return (struct item *)(sh->ring + pos);
}

/* Wake @sh's thread if it sleeps with items queued. */
static void kick(struct shard *sh)
{
	if (__atomic_load_n(&sh->sleeping, __ATOMIC_SEQ_CST) &&
	    __atomic_load_n(&sh->head, __ATOMIC_SEQ_CST) != sh->tail) {
		pthread_mutex_lock(&sh->lock);
		pthread_cond_signal(&sh->wake);
		pthread_mutex_unlock(&sh->lock);
	}
}

/* Publish the item reserve() gave; @wake: wake the thread now if it sleeps, not at pipeline__kick(). */
static void publish(struct shard *sh, struct item *it, bool wake)
{
	__atomic_store_n(&sh->head, sh->head + item_size(it->len), __ATOMIC_SEQ_CST);
	if (wake && __atomic_load_n(&sh->sleeping, __ATOMIC_SEQ_CST)) {
		pthread_mutex_lock(&sh->lock);
		pthread_cond_signal(&sh->wake);
		pthread_mutex_unlock(&sh->lock);
	}
}

void pipeline__kick(struct pipeline *pl)
{
	for (unsigned i = 0; i < pl->nshards; i++)
		kick(&pl->shards[i]);
}

void pipeline__sample(struct pipeline *pl, const struct sample_hdr *h, const uint64_t *kstack,
		      const uint8_t *ustack)
{
	size_t kbytes = (size_t)h->kstack_depth * 8;
	size_t pybytes = (size_t)h->py_depth * sizeof(struct sample_py_frame);
	size_t len = sizeof(*h) + kbytes + h->ustack_len + pybytes;
	struct shard *sh = owner(pl, h->pid);
	struct item *it = reserve(sh, len, sh->event_room);

	/* the sampling has stopped: nothing more can be lost by waiting */
	while (!it && pl->wait_for_room && sh->started) {
		usleep(100);
		it = reserve(sh, len, sh->event_room);
	}
	if (!it) {
		pl->dropped++;
		return;
	}
	it->kind = ITEM_SAMPLE;
	it->len = len;
	memcpy(it->data, h, sizeof(*h));
	if (kbytes)	/* a sample without a kernel stack may pass none */
		memcpy(it->data + sizeof(*h), kstack, kbytes);
	memcpy(it->data + sizeof(*h) + kbytes, ustack, h->ustack_len);
	/* the Python frames follow the user stack, in the ring record as here */
	if (pybytes)
		memcpy(it->data + sizeof(*h) + kbytes + h->ustack_len, ustack + h->ustack_len, pybytes);
	publish(sh, it, true);
}

/*
 * An executable mapping the kernel gave no build ID (it reads the note only
 * from a page in memory and not under writeback, and a program is often run
 * as soon as it is written): the ID read from the file as the process maps
 * it, while it lives, into a copy of the record in @buf, as the kernel
 * writes it. Read later, a short-lived program deleted once it ran has no
 * file left to read it from. @return the record to use.
 */
static const struct perf_event_header *with_build_id(const struct perf_event_header *e,
						     uint8_t *buf, size_t cap)
{
	const struct perf_rec_mmap2 *m = (const struct perf_rec_mmap2 *)e;
	struct perf_rec_mmap2 *c = (struct perf_rec_mmap2 *)buf;
	uint8_t id[BUILDID_MAX];
	size_t len;
	int fd;

	if ((e->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) || e->size > cap ||
	    e->size <= offsetof(struct perf_rec_mmap2, filename) || m->filename[0] != '/')
		return e;
	/* the mapped file alone: a file at its path may have been replaced since */
	fd = mapfile__open(m->pid, m->addr, m->addr + m->len, NULL);
	if (fd < 0)
		return e;
	len = buildid_read(fd, id);
	close(fd);
	if (len < 2 || len > sizeof(c->build_id))
		return e;
	memcpy(buf, e, e->size);
	c->header.misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
	c->build_id_size = len;
	c->reserved_1 = 0;
	c->reserved_2 = 0;
	memset(c->build_id, 0, sizeof(c->build_id));
	memcpy(c->build_id, id, len);
	return &c->header;
}

void pipeline__task_event(struct pipeline *pl, const struct perf_event_header *e, uint64_t time)
{
	_Alignas(8) uint8_t buf[8192];

	if (pl->prepare && e->type == PERF_RECORD_MMAP2 &&
	    e->size >= offsetof(struct perf_rec_mmap2, filename) &&
	    (((const struct perf_rec_mmap2 *)e)->prot & PROT_EXEC) &&
	    (!pl->wanted || pl->wanted(pl->wanted_ctx, ((const struct perf_rec_mmap2 *)e)->pid))) {
		e = with_build_id(e, buf, sizeof(buf));
		prepare__mmap(pl->prepare, (const struct perf_rec_mmap2 *)e, e->size);
	}
	for (unsigned i = 0; i < pl->nshards; i++) {
		struct shard *sh = &pl->shards[i];
		struct item *it = reserve(sh, e->size, 0);

		while (!it && pl->wait_for_room && sh->started) {
			kick(sh);
			usleep(100);
			it = reserve(sh, e->size, 0);
		}
		if (!it) {
			pl->dropped_events++;
			continue;
		}
		it->kind = ITEM_TASK_EVENT;
		it->len = e->size;
		it->time = time;
		memcpy(it->data, e, e->size);
		/* the thread needs it only before the next sample: woken then, or at the round's end */
		publish(sh, it, false);
	}
}

/* Whether @sh's thread has handled every item queued: it moves the tail past an item once done. */
static bool drained(struct shard *sh)
{
	return __atomic_load_n(&sh->tail, __ATOMIC_ACQUIRE) == sh->head || !sh->started;
}

int pipeline__cut(struct pipeline *pl, struct profile_writer *w)
{
	int err = 0;

	pipeline__kick(pl);
	for (unsigned i = 0; i < pl->nshards; i++)
		while (!drained(&pl->shards[i]))
			usleep(100);
	/* the window cut names the JIT code its samples ran, the kernel's too */
	write_kernel_jit(pl);
	pl->w = w;
	kernel_jit__new_window(pl->kernel_jit);
	write_kernel_jit(pl);
	for (unsigned i = 0; i < pl->nshards; i++) {
		procs__jit_flush(pl->shards[i].procs, clock_mono_ns());
		procs__set_writer(pl->shards[i].procs, w);
		if (procs__forget_written(pl->shards[i].procs) && !err)
			err = -ENOMEM;
	}
	return err ? err : pipeline__error(pl);
}

void pipeline__wait_for_room(struct pipeline *pl)
{
	pl->wait_for_room = true;
}

int pipeline__error(struct pipeline *pl)
{
	if (pl->kernel_jit_err)
		return pl->kernel_jit_err;
	for (unsigned i = 0; i < pl->nshards; i++) {
		int err = procs__error(pl->shards[i].procs);

		if (err)
			return err;
	}
	return 0;
}

/* Stop the threads: each handles its queue to the end first (unless abandoned). */
static void join(struct pipeline *pl)
{
	for (unsigned i = 0; i < pl->nshards; i++) {
		struct shard *sh = &pl->shards[i];

		pthread_mutex_lock(&sh->lock);
		__atomic_store_n(&sh->closing, true, __ATOMIC_SEQ_CST);
		pthread_cond_signal(&sh->wake);
		pthread_mutex_unlock(&sh->lock);
	}
	for (unsigned i = 0; i < pl->nshards; i++) {
		struct shard *sh = &pl->shards[i];

		if (sh->started)
			pthread_join(sh->thread, NULL);
		sh->started = false;
	}
}

int pipeline__finish(struct pipeline *pl)
{
	join(pl);
	pl->joined_at = clock_mono_ns();
	/* maps written at the end of the programs still running are read now */
	for (unsigned i = 0; i < pl->nshards; i++)
		procs__jit_flush(pl->shards[i].procs, clock_mono_ns());
	write_kernel_jit(pl);
	return pipeline__error(pl);
}

void pipeline__stats(struct pipeline *pl, struct pipeline_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (unsigned i = 0; i < pl->nshards; i++) {
		const struct shard *sh = &pl->shards[i];
		const struct procs_stats *ps = procs__stats(sh->procs);

		st->procs.samples += ps->samples;
		st->procs.user_stacks += ps->user_stacks;
		st->procs.complete += ps->complete;
		st->procs.processes += __atomic_load_n(&ps->processes, __ATOMIC_RELAXED);
		st->procs.unknown_pid += ps->unknown_pid;
		st->procs.copy_ran_out += ps->copy_ran_out;
		st->procs.before_exec += ps->before_exec;
		st->procs.exec_old_image += ps->exec_old_image;
		st->procs.unnamed += ps->unnamed;
		st->handled += sh->handled;
		st->ustack_bytes += sh->ustack_bytes;
		st->resized += sh->resized;
		st->slow += sh->slow;
		st->helped += sh->helped;
		st->process_ns += sh->process_ns;
		st->unwind_ns += sh->unwind_ns;
		st->write_ns += sh->write_ns;
		{
			const struct jit_stats *js = procs__jit_stats(sh->procs);

			st->jit.maps += js->maps;
			st->jit.dumps += js->dumps;
			st->jit.records += js->records;
			st->jit.eh_tables += js->eh_tables;
			st->jit.code_tables += js->code_tables;
			st->jit.code_refused += js->code_refused;
			st->jit.copy_tables += js->copy_tables;
			st->jit.reunwound += js->reunwound;
		}
		{
			const struct python_stats *py = procs__python_stats(sh->procs);

			st->py_processes += py->processes;
			st->py_frames += py->frames;
			st->py_unresolved += py->unresolved;
			st->py_stale += py->stale;
		}
		if (sh->slowest_ns > st->slowest_ns)
			st->slowest_ns = sh->slowest_ns;
	}
	if (pl->prepare)
		prepare__stats(pl->prepare, &st->prepare);
	st->dropped = pl->dropped;
	st->dropped_events = pl->dropped_events;
	st->queued_peak = pl->queued_peak;
	st->joined_at = pl->joined_at;
	st->queue_bytes = pl->nshards ? pl->shards[0].size : 0;
	st->modules_refused = sfu_cache__refused(pl->cache);
	st->module_memory = sfu_cache__memory(pl->cache);
}

/*
 * Give back the pages of @sh's queue that a backlog touched beyond the
 * working set ([0, wrap_at) and a margin: the queue goes back to the start
 * there when the reader keeps up) and that hold nothing now. The draining
 * thread is the queue's only writer, so the free part, from the head to the
 * reader's tail, is nobody's while this runs; the reader only ever makes it
 * bigger.
 */
static size_t release_queue(struct shard *sh, size_t page)
{
	size_t tail = __atomic_load_n(&sh->tail, __ATOMIC_ACQUIRE);
	size_t from = sh->head, to = tail + sh->size, released = 0;
	size_t floor = sh->wrap_at + PIPELINE_MIN_QUEUE;

	while (from < to) {
		size_t pos = from % sh->size;
		size_t end = pos + (to - from) < sh->size ? pos + (to - from) : sh->size;
		/* inward to whole pages: the tail's page holds the next item */
		size_t a = ((pos > floor ? pos : floor) + page - 1) & ~(page - 1);
		size_t b = end & ~(page - 1);

		if (b > a && !madvise(sh->ring + a, b - a, MADV_DONTNEED))
			released += b - a;
		from += end - pos;
	}
	return released;
}

size_t pipeline__trim(struct pipeline *pl, struct pipeline_trim *tr)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct pipeline_trim t = { .modules = sfu_cache__trim(pl->cache) };

	for (unsigned i = 0; i < pl->nshards; i++)
		t.queue_bytes += release_queue(&pl->shards[i], page);
	/* the threads' malloc arenas: freed processes and stack indexes leave holes */
	t.heap = malloc_trim(0);
	if (tr)
		*tr = t;
	return t.modules;
}

void pipeline__free(struct pipeline *pl)
{
	if (!pl)
		return;
	__atomic_store_n(&pl->abandon, true, __ATOMIC_RELAXED);
	join(pl);
	prepare__free(pl->prepare);
	kernel_jit__free(pl->kernel_jit);
	for (unsigned i = 0; i < pl->nshards; i++) {
		struct shard *sh = &pl->shards[i];

		if (sh->ring)
			munmap(sh->ring, sh->size);
		procs__free(sh->procs);
		for (unsigned k = 0; k < BATCH_MAX; k++)
			procs__unwound_release(&sh->batch[k].u);
		procs__unwound_release(&sh->spare);
		pthread_cond_destroy(&sh->wake);
		pthread_mutex_destroy(&sh->lock);
	}
	sfu_cache__free(pl->cache);
	free(pl);
}
