/* SPDX-License-Identifier: BSD-2-Clause */
/* The record path behind the ring: samples queued, bounded in bytes, to unwinding threads that own their processes. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pipeline.h"

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
	/* the thread's own; read by others after it is joined */
	uint64_t handled, ustack_bytes, resized;
	uint64_t slow, slowest_ns;
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
	/* the producer's */
	uint64_t dropped, dropped_events;
	size_t queued_peak;
};

static size_t item_size(size_t len)
{
	return (sizeof(struct item) + len + ITEM_ALIGN - 1) & ~(size_t)(ITEM_ALIGN - 1);
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

void pipeline__set_module_hook(struct pipeline *pl, procs_module_fn fn, void *ctx)
{
	for (unsigned i = 0; i < pl->nshards; i++)
		procs__set_module_hook(pl->shards[i].procs, fn, ctx);
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

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void handle(struct shard *sh, const struct item *it)
{
	struct pipeline *pl = sh->pl;

	if (it->kind == ITEM_TASK_EVENT) {
		procs__task_event(sh->procs, (const struct perf_event_header *)it->data, it->time);
	} else if (!procs__error(sh->procs)) {
		const struct sample_hdr *h = (const struct sample_hdr *)it->data;
		const uint64_t *kstack = (const uint64_t *)(h + 1);
		struct procs_copy_use use;
		uint64_t t0 = now_ns(), took;

		procs__sample(sh->procs, h, kstack, (const uint8_t *)(kstack + h->kstack_depth),
			      &use);
		took = now_ns() - t0;
		if (took > PIPELINE_SLOW_NS)
			sh->slow++;
		if (took > sh->slowest_ns)
			sh->slowest_ns = took;
		sh->handled++;
		sh->ustack_bytes += h->ustack_len;
		if (use.new_size && pl->resize && !pl->resize(pl->resize_ctx, h->tid, use.new_size))
			sh->resized++;
	}
}

/* Wait for an item; @return false when closing and none is left. */
static bool wait_item(struct shard *sh)
{
	bool more = true;

	pthread_mutex_lock(&sh->lock);
	__atomic_store_n(&sh->sleeping, true, __ATOMIC_SEQ_CST);
	/* looked at again after saying so: a writer that missed the flag has published */
	while (__atomic_load_n(&sh->head, __ATOMIC_SEQ_CST) == sh->tail) {
		if (__atomic_load_n(&sh->closing, __ATOMIC_SEQ_CST)) {
			more = false;
			break;
		}
		pthread_cond_wait(&sh->wake, &sh->lock);
	}
	__atomic_store_n(&sh->sleeping, false, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&sh->lock);
	return more;
}

static void *worker(void *arg)
{
	struct shard *sh = arg;
	struct pipeline *pl = sh->pl;

	while (wait_item(sh)) {
		size_t head = __atomic_load_n(&sh->head, __ATOMIC_ACQUIRE);

		while (sh->tail != head) {
			size_t pos = sh->tail % sh->size;
			struct item *it = (struct item *)(sh->ring + pos);
			size_t size = it->kind == ITEM_WRAP ? sh->size - pos : item_size(it->len);

			if (it->kind != ITEM_WRAP && !__atomic_load_n(&pl->abandon, __ATOMIC_RELAXED))
				handle(sh, it);
			/* the room goes back item by item: the writer need not wait for a batch */
			__atomic_store_n(&sh->tail, sh->tail + size, __ATOMIC_RELEASE);
		}
	}
	return NULL;
}

int pipeline__start(struct pipeline *pl)
{
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

/* Publish the item reserve() gave, and wake the thread if it sleeps. */
static void publish(struct shard *sh, struct item *it)
{
	__atomic_store_n(&sh->head, sh->head + item_size(it->len), __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&sh->sleeping, __ATOMIC_SEQ_CST)) {
		pthread_mutex_lock(&sh->lock);
		pthread_cond_signal(&sh->wake);
		pthread_mutex_unlock(&sh->lock);
	}
}

void pipeline__sample(struct pipeline *pl, const struct sample_hdr *h, const uint64_t *kstack,
		      const uint8_t *ustack)
{
	size_t kbytes = (size_t)h->kstack_depth * 8;
	size_t len = sizeof(*h) + kbytes + h->ustack_len;
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
	memcpy(it->data + sizeof(*h), kstack, kbytes);
	memcpy(it->data + sizeof(*h) + kbytes, ustack, h->ustack_len);
	publish(sh, it);
}

void pipeline__task_event(struct pipeline *pl, const struct perf_event_header *e, uint64_t time)
{
	if (pl->prepare && e->type == PERF_RECORD_MMAP2 &&
	    e->size >= offsetof(struct perf_rec_mmap2, filename) &&
	    (((const struct perf_rec_mmap2 *)e)->prot & PROT_EXEC) &&
	    (!pl->wanted || pl->wanted(pl->wanted_ctx, ((const struct perf_rec_mmap2 *)e)->pid)))
		prepare__mmap(pl->prepare, (const struct perf_rec_mmap2 *)e, e->size);
	for (unsigned i = 0; i < pl->nshards; i++) {
		struct shard *sh = &pl->shards[i];
		struct item *it = reserve(sh, e->size, 0);

		while (!it && pl->wait_for_room && sh->started) {
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
		publish(sh, it);
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

	for (unsigned i = 0; i < pl->nshards; i++)
		while (!drained(&pl->shards[i]))
			usleep(100);
	for (unsigned i = 0; i < pl->nshards; i++) {
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
		st->handled += sh->handled;
		st->ustack_bytes += sh->ustack_bytes;
		st->resized += sh->resized;
		st->slow += sh->slow;
		if (sh->slowest_ns > st->slowest_ns)
			st->slowest_ns = sh->slowest_ns;
	}
	if (pl->prepare)
		prepare__stats(pl->prepare, &st->prepare);
	st->dropped = pl->dropped;
	st->dropped_events = pl->dropped_events;
	st->queued_peak = pl->queued_peak;
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
	for (unsigned i = 0; i < pl->nshards; i++) {
		struct shard *sh = &pl->shards[i];

		if (sh->ring)
			munmap(sh->ring, sh->size);
		procs__free(sh->procs);
		pthread_cond_destroy(&sh->wake);
		pthread_mutex_destroy(&sh->lock);
	}
	sfu_cache__free(pl->cache);
	free(pl);
}
