/* SPDX-License-Identifier: BSD-2-Clause */
/* The record path behind the ring: samples queued, bounded in bytes, to unwinding threads that own their processes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"

enum item_kind { ITEM_SAMPLE, ITEM_TASK_EVENT };

/* A sample or a task event, copied out of the ring or the task buffers. */
struct item {
	struct item *next;
	uint32_t kind;
	uint32_t len;		/* of data */
	uint64_t time;		/* of a task event */
	uint8_t data[];
};

/* One unwinding thread, the processes it owns, and its queue. */
struct shard {
	struct pipeline *pl;
	struct procs *procs;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct item *head, *tail;	/* under lock */
	bool closing;			/* under lock: handle what is queued, then stop */
	/* the thread's own; read by others after it is joined */
	uint64_t handled, ustack_bytes, resized;
};

struct pipeline {
	struct pipeline_opts opts;
	struct sfu_cache *cache;
	struct shard shards[PIPELINE_MAX_WORKERS];
	unsigned nshards;
	size_t queued;		/* bytes in every queue (atomic) */
	size_t queued_peak;	/* the producer's */
	size_t event_bound;	/* task events may fill the queues up to this */
	bool abandon;		/* stopping without handling what is queued (atomic) */
	pipeline_resize_fn resize;
	void *resize_ctx;
	uint64_t dropped, dropped_events;	/* the producer's */
};

/* Tables derived from .eh_frame are kept on disk: the next recording reads them back. */
static void set_cache_dir(struct sfu_cache *cache)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char dir[4096];

	if (xdg && xdg[0] == '/')
		snprintf(dir, sizeof(dir), "%s/sfprof", xdg);
	else if (home && home[0] == '/')
		snprintf(dir, sizeof(dir), "%s/.cache/sfprof", home);
	else
		return;
	sfu_cache__set_dir(cache, dir);
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
	pl->event_bound = opts->queue_bytes + opts->queue_bytes / 8;
	pl->cache = sfu_cache__new();
	if (!pl->cache)
		goto fail;
	set_cache_dir(pl->cache);
	/* recording unwinds and never names a function: no symbol tables */
	sfu_cache__set_flags(pl->cache, SFU_MODULE_OPEN_NO_SYMBOLS);
	for (unsigned i = 0; i < opts->workers; i++) {
		struct shard *sh = &pl->shards[i];

		sh->pl = pl;
		pthread_mutex_init(&sh->lock, NULL);
		pthread_cond_init(&sh->wake, NULL);
		pl->nshards++;
		sh->procs = procs__new(w, wlock, pl->cache, opts->arch, opts->max_depth);
		if (!sh->procs)
			goto fail;
		procs__set_copy_sizes(sh->procs, opts->copy_start, opts->copy_adaptive);
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

void pipeline__set_resize(struct pipeline *pl, pipeline_resize_fn fn, void *ctx)
{
	pl->resize = fn;
	pl->resize_ctx = ctx;
}

static struct shard *owner(struct pipeline *pl, uint32_t pid)
{
	return &pl->shards[pid % pl->nshards];
}

int pipeline__scan(struct pipeline *pl, pid_t pid)
{
	return procs__scan(owner(pl, pid)->procs, pid);
}

int pipeline__scan_all(struct pipeline *pl)
{
	int n = 0;

	/* each thread learns the processes it owns; the others come by events */
	for (unsigned i = 0; i < pl->nshards; i++) {
		int err = procs__scan_owned(pl->shards[i].procs, i, pl->nshards);

		if (err < 0)
			return err;
		n += err;
	}
	return n;
}

static void handle(struct shard *sh, struct item *it)
{
	struct pipeline *pl = sh->pl;

	if (it->kind == ITEM_TASK_EVENT) {
		procs__task_event(sh->procs, (const struct perf_event_header *)it->data, it->time);
	} else if (!procs__error(sh->procs)) {
		const struct sample_hdr *h = (const struct sample_hdr *)it->data;
		const uint64_t *kstack = (const uint64_t *)(h + 1);
		struct procs_copy_use use;

		procs__sample(sh->procs, h, kstack, (const uint8_t *)(kstack + h->kstack_depth),
			      &use);
		sh->handled++;
		sh->ustack_bytes += h->ustack_len;
		if (use.new_size && pl->resize && !pl->resize(pl->resize_ctx, h->tid, use.new_size))
			sh->resized++;
	}
}

static void *worker(void *arg)
{
	struct shard *sh = arg;
	struct pipeline *pl = sh->pl;

	for (;;) {
		struct item *it, *next;
		bool closing;

		pthread_mutex_lock(&sh->lock);
		while (!sh->head && !sh->closing)
			pthread_cond_wait(&sh->wake, &sh->lock);
		it = sh->head;
		sh->head = sh->tail = NULL;
		closing = sh->closing;
		pthread_mutex_unlock(&sh->lock);
		for (; it; it = next) {
			next = it->next;
			if (!__atomic_load_n(&pl->abandon, __ATOMIC_RELAXED))
				handle(sh, it);
			__atomic_sub_fetch(&pl->queued, sizeof(*it) + it->len, __ATOMIC_RELAXED);
			free(it);
		}
		if (closing) {
			/* what came after the last look, if anything, is handled too */
			pthread_mutex_lock(&sh->lock);
			it = sh->head;
			pthread_mutex_unlock(&sh->lock);
			if (!it)
				return NULL;
		}
	}
}

int pipeline__start(struct pipeline *pl)
{
	for (unsigned i = 0; i < pl->nshards; i++) {
		struct shard *sh = &pl->shards[i];
		int err = pthread_create(&sh->thread, NULL, worker, sh);

		if (err)
			return -err;
		sh->started = true;
	}
	return 0;
}

/* A queue item of @len bytes, if the bound allows; NULL otherwise. */
static struct item *reserve(struct pipeline *pl, size_t len, size_t bound)
{
	size_t size = sizeof(struct item) + len;
	size_t now = __atomic_load_n(&pl->queued, __ATOMIC_RELAXED);
	struct item *it;

	/* one producer: the queues only shrink between this look and the add */
	if (now + size > bound)
		return NULL;
	it = malloc(size);
	if (!it)
		return NULL;
	now = __atomic_add_fetch(&pl->queued, size, __ATOMIC_RELAXED);
	if (now > pl->queued_peak)
		pl->queued_peak = now;
	it->next = NULL;
	it->len = len;
	return it;
}

static void push(struct shard *sh, struct item *it)
{
	pthread_mutex_lock(&sh->lock);
	if (sh->tail)
		sh->tail->next = it;
	else
		sh->head = it;
	sh->tail = it;
	pthread_cond_signal(&sh->wake);
	pthread_mutex_unlock(&sh->lock);
}

void pipeline__sample(struct pipeline *pl, const struct sample_hdr *h, const uint64_t *kstack,
		      const uint8_t *ustack)
{
	size_t kbytes = (size_t)h->kstack_depth * 8;
	size_t len = sizeof(*h) + kbytes + h->ustack_len;
	struct item *it = reserve(pl, len, pl->opts.queue_bytes);

	if (!it) {
		pl->dropped++;
		return;
	}
	it->kind = ITEM_SAMPLE;
	memcpy(it->data, h, sizeof(*h));
	memcpy(it->data + sizeof(*h), kstack, kbytes);
	memcpy(it->data + sizeof(*h) + kbytes, ustack, h->ustack_len);
	push(owner(pl, h->pid), it);
}

void pipeline__task_event(struct pipeline *pl, const struct perf_event_header *e, uint64_t time)
{
	for (unsigned i = 0; i < pl->nshards; i++) {
		struct item *it = reserve(pl, e->size, pl->event_bound);

		if (!it) {
			pl->dropped_events++;
			continue;
		}
		it->kind = ITEM_TASK_EVENT;
		it->time = time;
		memcpy(it->data, e, e->size);
		push(&pl->shards[i], it);
	}
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
		sh->closing = true;
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
		st->handled += sh->handled;
		st->ustack_bytes += sh->ustack_bytes;
		st->resized += sh->resized;
	}
	st->dropped = pl->dropped;
	st->dropped_events = pl->dropped_events;
	st->queued_peak = pl->queued_peak;
}

size_t pipeline__trim(struct pipeline *pl)
{
	return sfu_cache__trim(pl->cache);
}

void pipeline__free(struct pipeline *pl)
{
	if (!pl)
		return;
	__atomic_store_n(&pl->abandon, true, __ATOMIC_RELAXED);
	join(pl);
	for (unsigned i = 0; i < pl->nshards; i++) {
		struct shard *sh = &pl->shards[i];

		for (struct item *it = sh->head, *next; it; it = next) {
			next = it->next;
			free(it);
		}
		procs__free(sh->procs);
		pthread_cond_destroy(&sh->wake);
		pthread_mutex_destroy(&sh->lock);
	}
	sfu_cache__free(pl->cache);
	free(pl);
}
