/* SPDX-License-Identifier: BSD-2-Clause */
/* Module cache: each file is opened once, and files with one build ID share a module. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buildid_note.h"
#include "common/vec.h"
#include "diag_internal.h"
#include "ehframe_internal.h"
#include "module_internal.h"

/* A file seen before, by identity. */
struct file_entry {
	struct sfu_file_id id;
	struct sfu_module *module;
};

struct sfu_cache {
	struct sfu_module **modules;	/* one reference each, in opening order */
	size_t count, cap;
	struct file_entry *files;	/* sorted by id */
	size_t file_count, file_cap;
	struct sfu_module **by_build_id;	/* modules that have one, sorted by it */
	size_t build_id_count, build_id_cap;
	char *dir;			/* disk cache for tables derived from .eh_frame */
	unsigned flags;			/* SFU_MODULE_OPEN_*, for every file opened */
	size_t limit;			/* on the memory of the modules held; 0: none */
	uint64_t refused;		/* opens the limit refused (atomic) */
	/* held for lookups and changes, never while a file is read */
	pthread_mutex_t lock;
};

/* Index of the first file entry not below @id. */
static size_t file_lower_bound(const struct sfu_cache *cache, const struct sfu_file_id *id)
{
	size_t lo = 0, hi = cache->file_count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sfu_file_id__cmp(&cache->files[mid].id, id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Index of the first module whose build ID is not below @id. */
static size_t build_id_lower_bound(const struct sfu_cache *cache, const struct sfu_build_id *id)
{
	size_t lo = 0, hi = cache->build_id_count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sfu_build_id__cmp(sfu_module__build_id(cache->by_build_id[mid]), id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct sfu_module *find_file(const struct sfu_cache *cache, const struct sfu_file_id *id)
{
	size_t i = file_lower_bound(cache, id);

	if (i < cache->file_count && !sfu_file_id__cmp(&cache->files[i].id, id))
		return cache->files[i].module;
	return NULL;
}

static void insert_file(struct sfu_cache *cache, const struct sfu_file_id *id,
			struct sfu_module *m)
{
	size_t i = file_lower_bound(cache, id);

	if (i < cache->file_count && !sfu_file_id__cmp(&cache->files[i].id, id)) {
		/* the file changed between stat() and open(), back to a state seen before */
		cache->files[i].module = m;
		return;
	}
	memmove(&cache->files[i + 1], &cache->files[i],
		(cache->file_count - i) * sizeof(*cache->files));
	cache->files[i] = (struct file_entry){ .id = *id, .module = m };
	cache->file_count++;
}

struct sfu_cache *sfu_cache__new(void)
{
	struct sfu_cache *cache = calloc(1, sizeof(*cache));

	if (!cache) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&cache->lock, NULL);
	return cache;
}

void sfu_cache__free(struct sfu_cache *cache)
{
	if (!cache)
		return;
	for (size_t i = 0; i < cache->count; i++)
		sfu_module__put(cache->modules[i]);
	free(cache->modules);
	free(cache->files);
	free(cache->by_build_id);
	free(cache->dir);
	pthread_mutex_destroy(&cache->lock);
	free(cache);
}

int sfu_cache__set_dir(struct sfu_cache *cache, const char *dir)
{
	char *copy = NULL;

	/* one missing is made when a table is stored, and checked then */
	if (dir && ehcache_dir_trust(dir) == -EPERM)
		return -EPERM;
	if (dir && !(copy = strdup(dir)))
		return -ENOMEM;
	pthread_mutex_lock(&cache->lock);
	free(cache->dir);
	cache->dir = copy;
	pthread_mutex_unlock(&cache->lock);
	return 0;
}

void sfu_cache__set_flags(struct sfu_cache *cache, unsigned flags)
{
	pthread_mutex_lock(&cache->lock);
	cache->flags = flags;
	pthread_mutex_unlock(&cache->lock);
}

static void format_build_id(char *buf, size_t size, const struct sfu_build_id *id)
{
	if (!id->len)
		snprintf(buf, size, "none");
	else
		buildid_hex(buf, size, id->bytes, id->len);
}

void sfu_cache__set_limit(struct sfu_cache *cache, size_t bytes)
{
	pthread_mutex_lock(&cache->lock);
	cache->limit = bytes;
	pthread_mutex_unlock(&cache->lock);
}

/* What the modules held take, under the lock. */
static size_t memory_locked(const struct sfu_cache *cache)
{
	size_t n = 0;

	for (size_t i = 0; i < cache->count; i++)
		n += sfu_module__memory(cache->modules[i]);
	return n;
}

size_t sfu_cache__memory(const struct sfu_cache *cache)
{
	pthread_mutex_t *lock = (pthread_mutex_t *)&cache->lock;
	size_t n;

	pthread_mutex_lock(lock);
	n = memory_locked(cache);
	pthread_mutex_unlock(lock);
	return n;
}

uint64_t sfu_cache__refused(const struct sfu_cache *cache)
{
	return __atomic_load_n(&cache->refused, __ATOMIC_RELAXED);
}

/*
 * Whether a new module of @need bytes fits under the limit, after releasing
 * the modules no one else holds if it would not. Two threads may both pass
 * at once: the bound is as exact as one module.
 */
static bool fits(struct sfu_cache *cache, const struct sfu_module *m)
{
	const struct sfu_build_id *id = sfu_module__build_id(m);
	size_t limit, held, need = sfu_module__memory(m), pos;

	pthread_mutex_lock(&cache->lock);
	limit = cache->limit;
	held = limit ? memory_locked(cache) : 0;
	/* another file of a build already held costs nothing: the cache keeps one module */
	pos = build_id_lower_bound(cache, id);
	if (id->len && pos < cache->build_id_count &&
	    !sfu_build_id__cmp(sfu_module__build_id(cache->by_build_id[pos]), id))
		need = 0;
	pthread_mutex_unlock(&cache->lock);
	if (!limit || held + need <= limit)
		return true;
	sfu_cache__trim(cache);
	return sfu_cache__memory(cache) + need <= limit;
}

/*
 * Adds a freshly opened module, or swaps it for the cached one of the same
 * build ID. Consumes the reference in *@m; *@m receives the module kept.
 */
static int add_module(struct sfu_cache *cache, struct sfu_module **m)
{
	const struct sfu_build_id *id = sfu_module__build_id(*m);
	size_t pos = build_id_lower_bound(cache, id);
	int err;

	/* every array grows first, so that a failure leaves the cache as it was */
	if ((err = VEC_RESERVE(cache->files, cache->file_cap, cache->file_count + 1, 16)) ||
	    (err = VEC_RESERVE(cache->modules, cache->cap, cache->count + 1, 16)) ||
	    (err = VEC_RESERVE(cache->by_build_id, cache->build_id_cap,
			       cache->build_id_count + 1, 16)))
		return err;

	if (id->len && pos < cache->build_id_count &&
	    !sfu_build_id__cmp(sfu_module__build_id(cache->by_build_id[pos]), id)) {
		/* another copy or version of a file already decoded */
		struct sfu_module *cached = cache->by_build_id[pos];

		insert_file(cache, sfu_module__file_id(*m), cached);
		sfu_module__put(*m);
		*m = cached;
		return 0;
	}
	cache->modules[cache->count++] = *m;
	if (id->len) {
		memmove(&cache->by_build_id[pos + 1], &cache->by_build_id[pos],
			(cache->build_id_count - pos) * sizeof(*cache->by_build_id));
		cache->by_build_id[pos] = *m;
		cache->build_id_count++;
	}
	insert_file(cache, sfu_module__file_id(*m), *m);
	return 0;
}

struct sfu_module *sfu_cache__find(struct sfu_cache *cache, const struct sfu_build_id *id)
{
	struct sfu_module *m = NULL;
	size_t pos;

	if (!cache || !id || !id->len) {
		errno = ENOENT;
		return NULL;
	}
	pthread_mutex_lock(&cache->lock);
	pos = build_id_lower_bound(cache, id);
	if (pos < cache->build_id_count &&
	    !sfu_build_id__cmp(sfu_module__build_id(cache->by_build_id[pos]), id))
		m = sfu_module__get(cache->by_build_id[pos]);
	pthread_mutex_unlock(&cache->lock);
	if (!m)
		errno = ENOENT;
	return m;
}

struct sfu_module *sfu_cache__open(struct sfu_cache *cache, const char *path,
				   const struct sfu_build_id *expect, struct sfu_diag *diag)
{
	struct sfu_module *m = NULL;
	struct sfu_file_id id;
	unsigned flags;
	struct stat st;
	int err;

	if (stat(path, &st)) {
		err = diag_set(diag, -errno, "%s", strerror(errno));
		goto out;
	}
	sfu_file_id__from_stat(&id, &st);
	pthread_mutex_lock(&cache->lock);
	m = sfu_module__get(find_file(cache, &id));
	flags = cache->flags;
	pthread_mutex_unlock(&cache->lock);
	if (!m) {
		/* read without the lock: a large file must not hold up the other threads */
		struct sfu_module *opened = sfu_module__open_flags(path, flags, diag);

		if (!opened) {
			err = -errno;
			goto out;
		}
		if (!fits(cache, opened)) {
			__atomic_add_fetch(&cache->refused, 1, __ATOMIC_RELAXED);
			err = diag_set(diag, -ENOSPC, "the modules held reach their memory bound");
			sfu_module__put(opened);
			goto out;
		}
		pthread_mutex_lock(&cache->lock);
		/* another thread may have opened it meanwhile: one module per file */
		m = sfu_module__get(find_file(cache, sfu_module__file_id(opened)));
		err = 0;
		if (m) {
			sfu_module__put(opened);
		} else {
			m = opened;
			err = cache->dir ? sfu_module__set_cache_dir(m, cache->dir) : 0;
			/* keyed by what open() saw, in case the file changed since stat() */
			if (!err)
				err = add_module(cache, &m);
			if (err) {
				sfu_module__put(m);
				m = NULL;
			} else {
				sfu_module__get(m);
			}
		}
		pthread_mutex_unlock(&cache->lock);
		if (err) {
			diag_set(diag, err, "out of memory");
			goto out;
		}
	}

	/* an expected ID of length 0 asks for nothing: the caller did not know one */
	if (expect && expect->len && sfu_build_id__cmp(expect, sfu_module__build_id(m))) {
		char got[2 * SFU_BUILD_ID_MAX + 1], want[2 * SFU_BUILD_ID_MAX + 1];

		format_build_id(got, sizeof(got), sfu_module__build_id(m));
		format_build_id(want, sizeof(want), expect);
		err = diag_set(diag, -ESTALE, "build ID %.80s, expected %.80s", got, want);
		goto out;
	}
	err = 0;
out:
	if (err) {
		sfu_module__put(m);
		errno = -err;
		return NULL;
	}
	return m;
}

size_t sfu_cache__count(const struct sfu_cache *cache)
{
	/* the lock is not part of the cache's value */
	pthread_mutex_t *lock = (pthread_mutex_t *)&cache->lock;
	size_t n;

	pthread_mutex_lock(lock);
	n = cache->count;
	pthread_mutex_unlock(lock);
	return n;
}

static int ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

	return x < y ? -1 : x > y;
}

/*
 * Keep the entries of @n pointers (at @stride bytes, the module pointer
 * @offset in) whose module is not one of the @ndead sorted in @dead.
 */
static size_t drop_dead(void *array, size_t n, size_t stride, size_t offset,
			struct sfu_module **dead, size_t ndead)
{
	uint8_t *a = array;
	size_t kept = 0;

	for (size_t i = 0; i < n; i++) {
		struct sfu_module *m;

		memcpy(&m, a + i * stride + offset, sizeof(m));
		if (bsearch(&m, dead, ndead, sizeof(*dead), ptr_cmp))
			continue;
		if (kept != i)
			memcpy(a + kept * stride, a + i * stride, stride);
		kept++;
	}
	return kept;
}

size_t sfu_cache__trim(struct sfu_cache *cache)
{
	struct sfu_module **dead;
	size_t ndead = 0, kept = 0;

	pthread_mutex_lock(&cache->lock);
	/*
	 * Which modules only the cache holds is decided once: a count read
	 * again for the indexes could have fallen to 1 meanwhile (another
	 * thread freeing an address space needs no lock), leaving an index
	 * entry to a module released here. A count of 1 cannot rise again: the
	 * only way to such a module is through the indexes, under this lock.
	 */
	dead = malloc((cache->count ? cache->count : 1) * sizeof(*dead));
	if (!dead) {
		pthread_mutex_unlock(&cache->lock);
		return 0;	/* nothing released: a later trim will */
	}
	for (size_t i = 0; i < cache->count; i++) {
		struct sfu_module *m = cache->modules[i];

		if (sfu_module__refs(m) == 1)
			dead[ndead++] = m;
		else
			cache->modules[kept++] = m;
	}
	cache->count = kept;
	qsort(dead, ndead, sizeof(*dead), ptr_cmp);
	/* the indexes first: they hold no reference of their own */
	cache->file_count = drop_dead(cache->files, cache->file_count, sizeof(*cache->files),
				      offsetof(struct file_entry, module), dead, ndead);
	cache->build_id_count = drop_dead(cache->by_build_id, cache->build_id_count,
					  sizeof(*cache->by_build_id), 0, dead, ndead);
	for (size_t i = 0; i < ndead; i++)
		sfu_module__put(dead[i]);
	pthread_mutex_unlock(&cache->lock);
	free(dead);
	return ndead;
}
