/* SPDX-License-Identifier: BSD-2-Clause */
/* Files opened, and their unwind tables made, when a process maps them: before its samples need them. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "prepare.h"
#include "common/clock.h"
#include "util/mapfile.h"

/* Files prepared lately, by a hash of their build ID or path: not asked for again while held. */
#define RECENT_SLOTS 1024
/* Modules held at once, at most; past it the oldest goes early. */
#define HELD_MAX 512

struct request {
	uint32_t pid;
	uint64_t start, end;
	struct sfu_build_id build_id;	/* len 0: the event gave none */
	char path[512];
};

struct held {
	struct sfu_module *m;
	uint64_t until;
};

struct prepare {
	struct sfu_cache *cache;
	prepare_map_fn hook;
	void *hook_ctx;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;		/* over the queue and stopping */
	pthread_cond_t wake;
	bool stopping;
	struct request queue[PREPARE_QUEUE];
	size_t head, tail;		/* requests ever queued and taken */
	/* the producer's */
	struct { uint64_t key, at; } recent[RECENT_SLOTS];
	/* the thread's */
	struct held held[HELD_MAX];
	size_t nheld;
	uint64_t asked, prepared, skipped, failed;	/* atomic */
};

/* FNV-1a: the key of a file among the recent ones; a collision only prepares a file twice. */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void count(uint64_t *c)
{
	__atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

/* Let go of what was held past its time, or the oldest when room is needed. */
static void release_held(struct prepare *p, uint64_t now, bool make_room)
{
	size_t kept = 0;

	for (size_t i = 0; i < p->nheld; i++) {
		if (p->held[i].until <= now || (make_room && i == 0)) {
			sfu_module__put(p->held[i].m);
			continue;
		}
		p->held[kept++] = p->held[i];
	}
	p->nheld = kept;
}

/* Open the file of @r as the process sees it, else by its path here, checked by build ID. */
static struct sfu_module *open_request(struct prepare *p, const struct request *r)
{
	const struct sfu_build_id *want = r->build_id.len ? &r->build_id : NULL;
	struct sfu_module *m;

	if (want && (m = sfu_cache__find(p->cache, want)))
		return m;
	return mapfile__module(p->cache, r->pid, r->start, r->end, r->path, want);
}

static void prepare_one(struct prepare *p, const struct request *r)
{
	struct sfu_module *m = open_request(p, r);

	if (!m) {
		count(&p->failed);
		return;
	}
	/* what the unwinder reads for pcs no .sframe covers: made now, off its threads */
	if (!sfu_module__sframe(m))
		sfu_module__eh_frame_table(m);
	release_held(p, clock_mono_ns(), p->nheld == HELD_MAX);
	p->held[p->nheld++] = (struct held){ m, clock_mono_ns() + PREPARE_HOLD_NS };
	count(&p->prepared);
}

static void *run(void *arg)
{
	struct prepare *p = arg;

	pthread_mutex_lock(&p->lock);
	while (!p->stopping) {
		if (p->head == p->tail) {
			struct timespec until;

			/* wake now and then to let go of what was held long enough */
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 1;
			pthread_cond_timedwait(&p->wake, &p->lock, &until);
			pthread_mutex_unlock(&p->lock);
			release_held(p, clock_mono_ns(), false);
			pthread_mutex_lock(&p->lock);
			continue;
		}
		struct request r = p->queue[p->tail % PREPARE_QUEUE];

		p->tail++;
		pthread_mutex_unlock(&p->lock);
		prepare_one(p, &r);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct prepare *prepare__new(struct sfu_cache *cache)
{
	struct prepare *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->cache = cache;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	return p;
}

void prepare__set_hook(struct prepare *p, prepare_map_fn fn, void *ctx)
{
	p->hook = fn;
	p->hook_ctx = ctx;
}

int prepare__start(struct prepare *p)
{
	int err = pthread_create(&p->thread, NULL, run, p);

	if (err)
		return -err;
	p->started = true;
	pthread_setname_np(p->thread, "sfprof-prepare");	/* as top -H and /proc show it */
	return 0;
}

void prepare__mmap(struct prepare *p, const struct perf_rec_mmap2 *e, uint16_t size)
{
	size_t off = offsetof(struct perf_rec_mmap2, filename);
	size_t name_len;
	struct request *r;
	uint64_t key, now;
	bool has_id;

	if (size <= off || !memchr(e->filename, '\0', size - off) || !(e->prot & PROT_EXEC) ||
	    e->filename[0] != '/')
		return;
	count(&p->asked);
	name_len = strlen(e->filename);
	has_id = (e->header.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) && e->build_id_size &&
		 e->build_id_size <= sizeof(e->build_id);
	key = has_id ? hash_bytes(0xcbf29ce484222325ull, e->build_id, e->build_id_size) :
		       hash_bytes(0x84222325cbf29ce4ull, e->filename, name_len);
	now = clock_mono_ns();
	if (name_len >= sizeof(r->path) ||
	    (p->recent[key % RECENT_SLOTS].key == key &&
	     now - p->recent[key % RECENT_SLOTS].at < PREPARE_HOLD_NS / 2)) {
		count(&p->skipped);
		return;
	}
	if (p->hook && has_id) {
		struct sfu_build_id id = { .len = e->build_id_size };

		/*
		 * Told now, not when the thread takes it: a large table
		 * being made before it can take hundreds of ms, longer than
		 * a short-lived program and its deleted file last
		 */
		memcpy(id.bytes, e->build_id, e->build_id_size);
		p->hook(p->hook_ctx, e->pid, e->addr, e->addr + e->len, &id, e->filename);
	}
	pthread_mutex_lock(&p->lock);
	if (p->head - p->tail >= PREPARE_QUEUE) {
		pthread_mutex_unlock(&p->lock);
		count(&p->skipped);
		return;
	}
	r = &p->queue[p->head % PREPARE_QUEUE];
	r->pid = e->pid;
	r->start = e->addr;
	r->end = e->addr + e->len;
	r->build_id.len = has_id ? e->build_id_size : 0;
	if (has_id)
		memcpy(r->build_id.bytes, e->build_id, e->build_id_size);
	memcpy(r->path, e->filename, name_len + 1);
	p->head++;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	p->recent[key % RECENT_SLOTS].key = key;
	p->recent[key % RECENT_SLOTS].at = now;
}

void prepare__stats(const struct prepare *p, struct prepare_stats *st)
{
	st->asked = __atomic_load_n(&p->asked, __ATOMIC_RELAXED);
	st->prepared = __atomic_load_n(&p->prepared, __ATOMIC_RELAXED);
	st->skipped = __atomic_load_n(&p->skipped, __ATOMIC_RELAXED);
	st->failed = __atomic_load_n(&p->failed, __ATOMIC_RELAXED);
}

void prepare__free(struct prepare *p)
{
	if (!p)
		return;
	if (p->started) {
		pthread_mutex_lock(&p->lock);
		p->stopping = true;
		pthread_cond_signal(&p->wake);
		pthread_mutex_unlock(&p->lock);
		pthread_join(p->thread, NULL);
	}
	for (size_t i = 0; i < p->nheld; i++)
		sfu_module__put(p->held[i].m);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
