/* SPDX-License-Identifier: BSD-2-Clause */
/* The build-ID cache at record time: files held open by the recording threads, linked or copied on the keeper's thread. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buildid.h"
#include "buildid_keeper.h"
#include "common/clock.h"
#include "common/hmap.h"
#include "util/mapfile.h"
#include "common/vec.h"

/* Files held open and waiting at once: past it an offer is dropped and counted. */
#define MAX_PENDING 512
/*
 * Files held from their mmap in case a sample hits them (buildid_keeper__hold),
 * at most this many, each at most HOLD_NS: a process's first samples come
 * within a second of its mmaps, even late ones from the unwinders' queues.
 */
#define HOLD_MAX 256
#define HOLD_NS 10000000000ull
/* Build IDs remembered as offered: past it all are forgotten (the map is bounded by count). */
#define OFFERED_MAX 16384
/* Beside an entry that is a hard link: its last use (mark_used()) */
#define STAMP_SUFFIX ".used"

struct job {
	struct job *next;
	int fd;
	size_t len;
	uint8_t id[BUILDID_MAX];
};

/*
 * An entry of the cache, as the keeper's thread knows it: in the eviction
 * queue by the use it was queued at, oldest first.
 */
struct entry {
	uint8_t id[BUILDID_MAX];
	uint8_t len;
	bool debug;		/* the tree's .debug file of the build */
	bool gone;		/* removed, or moved to the queue's tail */
	uint64_t size;
	uint64_t used;		/* when a recording last used it: its mtime, ns since the epoch */
	uint64_t queued;	/* the use it is queued by; older than used: used again since */
	uint64_t mine;		/* when this recording last used it (as used); 0: never */
};

struct buildid_keeper {
	char *dir;
	uint64_t max_bytes;
	pthread_t thread;
	bool started, finished;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct job *head, **tail;
	size_t pending;
	bool stop;
	struct hmap *offered;	/* build ID -> 1 */
	/* files held from their mmap, oldest first, a ring under lock */
	struct hold {
		int fd;
		size_t len;
		uint8_t id[BUILDID_MAX];
		uint64_t at;
	} holds[HOLD_MAX];
	size_t hold_first, nholds;
	struct buildid_keeper_stats st;	/* offered, unopened, dropped, offer_ns_max under lock */
	int err;
	uint64_t protect_ns;	/* this recording's use keeps an entry this long (UINT64_MAX: always) */
	/* the thread's own */
	struct entry *entries;	/* the eviction queue: [first, nentries), by queued */
	size_t first, nentries, entries_cap;
	uint64_t base;		/* the sequence number of entries[0] */
	struct hmap *index;	/* hash of (build ID, debug) -> 1 + sequence number of its entry */
	bool scanned;
	uint64_t held;
};

/* Keep the first error, in words. */
static int fail(struct buildid_keeper *k, int err, const char *what, const char *path)
{
	if (!k->err) {
		k->err = err;
		snprintf(k->st.first_error, sizeof(k->st.first_error), "%s %.200s: %s", what, path,
			 strerror(-err));
	}
	k->st.failed++;
	return err;
}

/* Keep the first error, said already in @why. */
static void fail_why(struct buildid_keeper *k, int err, const char *why)
{
	if (!k->err) {
		k->err = err;
		snprintf(k->st.first_error, sizeof(k->st.first_error), "%s", why);
	}
	k->st.failed++;
}

static void *keeper_main(void *arg);

struct buildid_keeper *buildid_keeper__new(const char *dir, uint64_t max_bytes,
					   uint64_t protect_s, char *why, size_t why_cap)
{
	struct buildid_keeper *k = calloc(1, sizeof(*k));
	char tree[4200], probe[4300];
	int err, fd;

	if (!k || !(k->dir = strdup(dir)) || !(k->offered = hmap__new(HMAP_BYTES)) ||
	    !(k->index = hmap__new(HMAP_U64))) {
		snprintf(why, why_cap, "out of memory");
		err = -ENOMEM;
		goto fail;
	}
	k->max_bytes = max_bytes;
	k->protect_ns = protect_s >= UINT64_MAX / 1000000000ull ? UINT64_MAX :
			protect_s * 1000000000ull;
	k->tail = &k->head;
	snprintf(tree, sizeof(tree), "%s/" BUILDID_TREE, dir);
	/*
	 * Made if missing, and used only if no one else can change it: root
	 * keeping other users' binaries must not write where they point it.
	 */
	if ((err = buildid_tree_trust(dir, true, why, why_cap)))
		goto fail;
	/* writable: a file made and removed at once */
	snprintf(probe, sizeof(probe), "%s/.probe-XXXXXX", tree);
	fd = mkostemp(probe, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		snprintf(why, why_cap, "%s: %s", tree, strerror(errno));
		goto fail;
	}
	close(fd);
	unlink(probe);
	pthread_mutex_init(&k->lock, NULL);
	pthread_cond_init(&k->wake, NULL);
	err = -pthread_create(&k->thread, NULL, keeper_main, k);
	if (err) {
		snprintf(why, why_cap, "cannot start its thread: %s", strerror(-err));
		pthread_mutex_destroy(&k->lock);
		pthread_cond_destroy(&k->wake);
		goto fail;
	}
	k->started = true;
	pthread_setname_np(k->thread, "sfprof-keeper");	/* as top -H and /proc show it */
	return k;
fail:
	if (k) {
		hmap__free(k->index);
		hmap__free(k->offered);
		free(k->dir);
		free(k);
	}
	errno = -err;
	return NULL;
}

struct module_places {
	uint32_t pid;
	const char *map_path, *module_path;
	int fd;
	bool module_tried;
};

/*
 * The places of mapfile__each(), with the path record opened the module by
 * (checked there by build ID: another process's, maybe alive) before the
 * mapping's path here (maybe replaced since).
 */
static int try_place(void *ctx, enum mapfile_via via, const char *place)
{
	struct module_places *mp = ctx;

	if (via == MAPFILE_HERE && mp->module_path && mp->module_path[0] == '/') {
		/* a /proc/PID/map_files link, maybe: followed */
		mp->module_tried = true;
		mp->fd = mapfile__open_path(mp->module_path, 1);
		if (mp->fd >= 0)
			return 1;
	}
	mp->fd = mapfile__open_place(mp->pid, via, place, mp->map_path);
	return mp->fd >= 0;
}

/* Open the first of the places that holds the file. @return the fd, or -1. */
static int open_module(uint32_t pid, uint64_t start, uint64_t end, const char *map_path,
		       const char *module_path)
{
	struct module_places mp = { pid, map_path, module_path, -1, false };

	if (mapfile__each(pid, start, end, map_path, try_place, &mp) > 0)
		return mp.fd;
	/* a mapping of no file ([vdso]): the module's own, the memfd of its image */
	if (!mp.module_tried && module_path && module_path[0] == '/')
		return (mp.fd = mapfile__open_path(module_path, 1)) >= 0 ? mp.fd : -1;
	return -1;
}

/*
 * Take out the holds past their time into @fds (room for HOLD_MAX). Under
 * lock; the caller
 * closes them after letting go of it: closing the last reference to a
 * deleted file frees it there and then. @return their number.
 */
static size_t expire_holds(struct buildid_keeper *k, uint64_t now, int *fds)
{
	size_t n = 0;

	while (k->nholds) {
		struct hold *h = &k->holds[k->hold_first];

		if (now - h->at < HOLD_NS)
			break;
		fds[n++] = h->fd;
		k->hold_first = (k->hold_first + 1) % HOLD_MAX;
		k->nholds--;
	}
	return n;
}

static void close_all(const int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
}

/* The fd held for build ID @id, taken out of the holds (the slot closed over). -1: none. Under lock. */
static int take_hold(struct buildid_keeper *k, const uint8_t *id, size_t len)
{
	for (size_t i = 0; i < k->nholds; i++) {
		struct hold *h = &k->holds[(k->hold_first + i) % HOLD_MAX];
		int fd;

		if (h->len != len || memcmp(h->id, id, len))
			continue;
		fd = h->fd;
		/* the oldest moves into the slot: the ring stays dense, its order nearly kept */
		*h = k->holds[k->hold_first];
		k->hold_first = (k->hold_first + 1) % HOLD_MAX;
		k->nholds--;
		return fd;
	}
	return -1;
}

void buildid_keeper__hold(struct buildid_keeper *k, const uint8_t *id, size_t len, uint32_t pid,
			  uint64_t start, uint64_t end)
{
	struct hold *h;
	bool known;
	int fd, oldest = -1;

	if (!k || len < 2 || len > BUILDID_MAX)
		return;
	pthread_mutex_lock(&k->lock);
	known = k->stop || !hmap__find(k->offered, id, len, NULL);
	for (size_t i = 0; !known && i < k->nholds; i++) {
		h = &k->holds[(k->hold_first + i) % HOLD_MAX];
		known = h->len == len && !memcmp(h->id, id, len);
	}
	pthread_mutex_unlock(&k->lock);
	if (known)
		return;		/* offered (kept or not), or held already */
	/*
	 * the mapped file itself, nothing found by its path (which may name a
	 * file replaced since); its build ID is checked when it is kept (the
	 * range may have been mapped again by then: a non-PIE program exec'd
	 * at the same address)
	 */
	fd = open_module(pid, start, end, NULL, NULL);
	if (fd < 0)
		return;
	pthread_mutex_lock(&k->lock);
	if (k->stop) {		/* finishing: its holds are closed */
		pthread_mutex_unlock(&k->lock);
		close(fd);
		return;
	}
	/* the keeper's thread lets go of those past their time; the oldest makes room */
	if (k->nholds == HOLD_MAX) {
		oldest = k->holds[k->hold_first].fd;
		k->hold_first = (k->hold_first + 1) % HOLD_MAX;
		k->nholds--;
	}
	h = &k->holds[(k->hold_first + k->nholds) % HOLD_MAX];
	h->fd = fd;
	h->len = len;
	memcpy(h->id, id, len);
	h->at = clock_mono_ns();
	k->nholds++;
	pthread_mutex_unlock(&k->lock);
	if (oldest >= 0)
		close(oldest);
}

/*
 * The build IDs offered, forgotten all at once past OFFERED_MAX (an agent
 * sees a new one with each unique binary, for months): one offered again
 * is found in the cache and only marked as used.
 */
static void forget_offers(struct buildid_keeper *k)
{
	struct hmap *fresh;

	if (hmap__count(k->offered) < OFFERED_MAX || !(fresh = hmap__new(HMAP_BYTES)))
		return;
	hmap__free(k->offered);
	k->offered = fresh;
}

void buildid_keeper__offer(struct buildid_keeper *k, const uint8_t *id, size_t len, uint32_t pid,
			   uint64_t start, uint64_t end, const char *map_path,
			   const char *module_path)
{
	uint64_t t0 = clock_mono_ns(), *seen, took;
	struct job *job;
	bool held;
	int fd;

	if (!k || len < 2 || len > BUILDID_MAX)
		return;
	pthread_mutex_lock(&k->lock);
	forget_offers(k);
	if (k->stop || hmap__entry(k->offered, id, len, &seen, NULL) || *seen) {
		pthread_mutex_unlock(&k->lock);
		return;
	}
	*seen = 1;
	k->st.offered++;
	/* the file as it was mapped, held since: the process and its file may be gone now */
	fd = take_hold(k, id, len);
	held = fd >= 0;
	if (held)
		k->st.held++;
	pthread_mutex_unlock(&k->lock);

	if (fd < 0)
		fd = open_module(pid, start, end, map_path, module_path);
	job = fd >= 0 ? malloc(sizeof(*job)) : NULL;
	pthread_mutex_lock(&k->lock);
	if (fd < 0) {
		k->st.unopened++;
	} else if (!job || k->pending >= MAX_PENDING) {
		k->st.dropped++;
		close(fd);
		free(job);
	} else {
		job->next = NULL;
		job->fd = fd;
		job->len = len;
		memcpy(job->id, id, len);
		*k->tail = job;
		k->tail = &job->next;
		k->pending++;
		pthread_cond_signal(&k->wake);
	}
	took = clock_mono_ns() - t0;
	if (took > k->st.offer_ns_max)
		k->st.offer_ns_max = took;
	pthread_mutex_unlock(&k->lock);
}

/* --- the keeper's thread --- */

static uint64_t mtime_ns(const struct stat *st)
{
	return st->st_mtim.tv_sec * 1000000000ull + st->st_mtim.tv_nsec;
}

static uint64_t entry_hash(const uint8_t *id, size_t len, bool debug)
{
	return hmap_hash_bytes(id, len) ^ debug;
}

static int entry_path(const struct buildid_keeper *k, const struct entry *e, char *out,
		      size_t cap)
{
	return buildid_path(out, cap, k->dir, e->id, e->len, e->debug ? BUILDID_DEBUG_SUFFIX : NULL);
}

/*
 * An entry that is a hard link of the mapped file shares its inode, whose
 * times are the original's (/usr/bin/perl's): its use is the mtime of an
 * empty stamp beside it, never of the inode.
 */
static void stamp_path(char *out, size_t cap, const char *entry)
{
	snprintf(out, cap, "%s" STAMP_SUFFIX, entry);
}

/* Record a use of the entry at @path now, whose inode is @st. */
static void mark_used(const char *path, const struct stat *st)
{
	char stamp[4700];
	int fd;

	if (st->st_nlink <= 1) {
		utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW);
		return;
	}
	stamp_path(stamp, sizeof(stamp), path);
	fd = open(stamp, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		futimens(fd, NULL);
		close(fd);
	}
}

/*
 * The entry at @path's last use: its stamp's mtime or its own, the later
 * (the original of a link may have gone since).
 */
static uint64_t last_use(const char *path, const struct stat *st)
{
	char stamp[4700];
	struct stat ss;

	stamp_path(stamp, sizeof(stamp), path);
	if (!lstat(stamp, &ss) && S_ISREG(ss.st_mode) && mtime_ns(&ss) > mtime_ns(st))
		return mtime_ns(&ss);
	return mtime_ns(st);
}

/* The live entry of index value @v (1 + its sequence number), or NULL. */
static struct entry *indexed(struct buildid_keeper *k, uint64_t v)
{
	if (v <= k->base + k->first || v > k->base + k->nentries)
		return NULL;
	return k->entries[v - 1 - k->base].gone ? NULL : &k->entries[v - 1 - k->base];
}

static bool same_build(const struct entry *e, const uint8_t *id, size_t len, bool debug)
{
	return e->len == len && e->debug == debug && !memcmp(e->id, id, len);
}

/*
 * The entry of a build, or NULL. Two builds whose hashes collide share one
 * index slot: the later is then found by nobody, and only ages out.
 */
static struct entry *find_entry(struct buildid_keeper *k, const uint8_t *id, size_t len,
				bool debug)
{
	uint64_t *v;
	struct entry *e;

	if (hmap__find_u64(k->index, entry_hash(id, len, debug), &v) || !(e = indexed(k, *v)))
		return NULL;
	return same_build(e, id, len, debug) ? e : NULL;
}

/* The queue's gone head dropped when it is most of the array: sequence numbers stay. */
static void compact(struct buildid_keeper *k)
{
	if (k->first < 64 || k->first < k->nentries / 2)
		return;
	memmove(k->entries, k->entries + k->first, (k->nentries - k->first) * sizeof(*k->entries));
	k->base += k->first;
	k->nentries -= k->first;
	k->first = 0;
}

/* @e (a copy: the array may move) at the queue's tail, and indexed there. @return 0 or -ENOMEM. */
static int push_entry(struct buildid_keeper *k, const struct entry *e)
{
	struct entry *other;
	uint64_t *v;

	compact(k);
	if (VEC_RESERVE(k->entries, k->entries_cap, k->nentries + 1, 64))
		return -ENOMEM;
	if (hmap__entry_u64(k->index, entry_hash(e->id, e->len, e->debug), &v))
		return -ENOMEM;
	/* a slot of another live build keeps it (a collision) */
	other = indexed(k, *v);
	if (!other || same_build(other, e->id, e->len, e->debug))
		*v = k->base + k->nentries + 1;
	k->entries[k->nentries++] = *e;
	return 0;
}

/* An entry found in the tree or kept now, @mine when this recording uses it. */
static int add_entry(struct buildid_keeper *k, const uint8_t *id, size_t len, bool debug,
		     const struct stat *st, uint64_t mine)
{
	struct entry e = { .len = len, .debug = debug, .size = st->st_size,
			   .used = mine ? mine : mtime_ns(st), .mine = mine };
	int err;

	memcpy(e.id, id, len);
	e.queued = e.used;
	if ((err = push_entry(k, &e)))
		return err;
	k->held += e.size;
	return 0;
}

static int by_use(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->used != y->used)
		return x->used < y->used ? -1 : 1;
	return memcmp(x->id, y->id, sizeof(x->id));
}

/*
 * A directory of the tree (@name in @at), opened only if it is one, not a
 * link, and no one else can change it: what is evicted from it is removed.
 */
static DIR *open_tree_dir(int at, const char *name)
{
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	DIR *d;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || (st.st_uid != geteuid() && st.st_uid) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)) || !(d = fdopendir(fd))) {
		close(fd);
		return NULL;
	}
	return d;
}

/* What the tree holds now: its entries, their sizes and when they were last used, oldest first. */
static void scan(struct buildid_keeper *k)
{
	char tree[4200], path[4600];
	struct dirent *de, *fe;
	DIR *d, *sub;

	k->scanned = true;
	snprintf(tree, sizeof(tree), "%s/" BUILDID_TREE, k->dir);
	d = open_tree_dir(AT_FDCWD, tree);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (strlen(de->d_name) != 2 || de->d_name[0] == '.')
			continue;
		sub = open_tree_dir(dirfd(d), de->d_name);
		if (!sub)
			continue;
		while ((fe = readdir(sub))) {
			struct entry *e;
			struct stat st;

			snprintf(path, sizeof(path), "%s/%s/%s", tree, de->d_name, fe->d_name);
			if (VEC_RESERVE(k->entries, k->entries_cap, k->nentries + 1, 64))
				break;
			e = &k->entries[k->nentries];
			memset(e, 0, sizeof(*e));
			/* entries only: not a temporary file of another recording */
			e->len = buildid_parse_name(de->d_name, fe->d_name, e->id, &e->debug);
			if (!e->len || lstat(path, &st) || !S_ISREG(st.st_mode))
				continue;
			e->size = st.st_size;
			e->used = e->queued = last_use(path, &st);
			k->held += e->size;
			k->nentries++;
		}
		closedir(sub);
	}
	closedir(d);
	/* sorted once, then indexed: a tree's entry is found by its build ID when it is used */
	if (k->nentries)
		qsort(k->entries, k->nentries, sizeof(*k->entries), by_use);
	for (size_t i = 0; i < k->nentries; i++) {
		struct entry *e = &k->entries[i];

		if (hmap__set_u64(k->index, entry_hash(e->id, e->len, e->debug), k->base + i + 1))
			break;	/* out of memory: the rest are only evicted by age */
	}
}

/* Out of the queue: removed from the tree (@evicted) or never to be evicted by this recording. */
static void drop_entry(struct buildid_keeper *k, struct entry *e, bool removed)
{
	uint64_t *v;

	if (!hmap__find_u64(k->index, entry_hash(e->id, e->len, e->debug), &v) &&
	    *v == k->base + (size_t)(e - k->entries) + 1)
		hmap__delete_u64(k->index, entry_hash(e->id, e->len, e->debug), NULL);
	e->gone = true;
	if (removed)
		k->held -= e->size;
}

/*
 * Remove the entries used longest ago until @need more bytes fit under the
 * bound. Not one this recording used within protect_ns: the queue's head is
 * then such an entry, and so is all that follows it (kept or used since by
 * this recording, in the order it did so). An entry used again since it was
 * queued goes to the tail. @return whether they fit.
 */
static bool make_room(struct buildid_keeper *k, uint64_t need)
{
	uint64_t now = clock_real_ns();

	if (need > k->max_bytes)
		return false;
	for (size_t budget = k->nentries - k->first;
	     k->held + need > k->max_bytes && k->first < k->nentries && budget; budget--) {
		struct entry *e = &k->entries[k->first];
		char path[4400], stamp[4500];

		if (e->gone) {
			k->first++;
			continue;
		}
		if (e->used != e->queued) {
			struct entry again = *e;

			again.queued = again.used;
			e->gone = true;
			k->first++;
			if (push_entry(k, &again))
				fail(k, -ENOMEM, "remembering", k->dir);
			continue;
		}
		if (e->mine && k->protect_ns == UINT64_MAX) {
			drop_entry(k, e, false);	/* held for as long as this recording runs */
			k->first++;
			continue;
		}
		if (e->mine && now < e->mine + k->protect_ns)
			break;
		k->first++;
		if (entry_path(k, e, path, sizeof(path)) || (unlink(path) && errno != ENOENT)) {
			drop_entry(k, e, false);	/* not ours to remove: it stays, and counts */
			continue;
		}
		stamp_path(stamp, sizeof(stamp), path);
		unlink(stamp);
		drop_entry(k, e, true);
		k->st.evicted++;
		k->st.evicted_bytes += e->size;
	}
	return k->held + need <= k->max_bytes;
}

/*
 * Mark an entry of the tree as used by this recording now: its mtime, and
 * in the queue (moved to the tail when the head reaches it).
 */
static void touch(struct buildid_keeper *k, const uint8_t *id, size_t len, const char *path,
		  const struct stat *st)
{
	struct entry *e = find_entry(k, id, len, false);

	if (e)
		e->used = e->mine = clock_real_ns();
	mark_used(path, st);
}

/* Whether the file open at @fd is @size bytes and holds build ID @id. */
static bool copy_is(int fd, uint64_t size, const uint8_t *id, size_t len)
{
	uint8_t got[BUILDID_MAX];
	struct stat st;

	return !fstat(fd, &st) && (uint64_t)st.st_size == size && buildid_read(fd, got) == len &&
	       !memcmp(got, id, len);
}

/*
 * Copy @fd, of build ID @id, into a new file published at @dest whole or
 * not at all. @return 0 or -errno (-ESTALE: the copy is of another build).
 */
static int copy_to(struct buildid_keeper *k, int fd, const char *dest, uint64_t size,
		   const uint8_t *id, size_t len)
{
	char dir[4300], tmp[4400], self[64];
	const char *slash = strrchr(dest, '/');
	uint64_t t0 = clock_mono_ns();
	off_t in_off = 0;
	bool named = false;
	int out, err = 0;

	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - dest), dest);
	/* a file with no name until it is whole: a crash leaves nothing */
	out = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (out < 0) {
		snprintf(tmp, sizeof(tmp), "%s/.tmp-XXXXXX", dir);
		out = mkostemp(tmp, O_CLOEXEC);
		if (out < 0)
			return -errno;
		named = true;
	}
	while ((uint64_t)in_off < size) {
		ssize_t n = copy_file_range(fd, &in_off, out, NULL, size - in_off, 0);

		if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL ||
			      errno == EOPNOTSUPP)) {
			char buf[65536];

			n = pread(fd, buf, sizeof(buf), in_off);
			if (n > 0 && write(out, buf, n) != n)
				n = -1;
			if (n > 0)
				in_off += n;
		}
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0) {
			err = -EIO;	/* shorter than it was: changed under us */
			break;
		}
	}
	if (!err && fchmod(out, 0400))
		err = -errno;
	/* what was copied is the build offered: the original's owner may write it meanwhile */
	if (!err && !copy_is(out, size, id, len))
		err = -ESTALE;
	if (!err && named) {
		/* no replace: another recording may have put it there meanwhile */
		if (link(tmp, dest) && errno != EEXIST)
			err = -errno;
	} else if (!err) {
		snprintf(self, sizeof(self), "/proc/self/fd/%d", out);
		if (linkat(AT_FDCWD, self, AT_FDCWD, dest, AT_SYMLINK_FOLLOW) && errno != EEXIST)
			err = -errno;
	}
	if (named)
		unlink(tmp);
	close(out);
	k->st.copy_ns += clock_mono_ns() - t0;
	return err;
}

static void keep(struct buildid_keeper *k, struct job *job)
{
	char dest[4400], dir[4400], self[64], stamp[4500], why[sizeof(k->st.first_error)];
	uint8_t id[BUILDID_MAX];
	uint64_t linked = k->st.linked;
	bool linkable;
	struct stat st;
	int err;

	if (!k->scanned)
		scan(k);
	if (buildid_path(dest, sizeof(dest), k->dir, job->id, job->len, NULL))
		return;
	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(dest, '/') - dest), dest);
	/* made if missing; never one someone else made (a link to anywhere, say) */
	if ((err = buildid_dir_trust(dir, 3, true, why, sizeof(why)))) {
		fail_why(k, err, why);
		return;
	}
	if (!lstat(dest, &st)) {
		if (buildid_file_trusted(&st)) {
			k->st.present++;
			touch(k, job->id, job->len, dest, &st);
			return;
		}
		/*
		 * An entry someone else can write (a link of their file, kept
		 * by an older sfprof), or no file: kept again, as a copy.
		 */
		struct entry *e = find_entry(k, job->id, job->len, false);

		stamp_path(stamp, sizeof(stamp), dest);
		if (unlink(dest) && errno != ENOENT) {
			fail(k, -errno, "removing", dest);
			return;
		}
		unlink(stamp);
		if (e)
			drop_entry(k, e, true);
		k->st.untrusted++;
	}
	if (fstat(job->fd, &st) || !S_ISREG(st.st_mode) ||
	    buildid_read(job->fd, id) != job->len || memcmp(id, job->id, job->len)) {
		k->st.mismatched++;
		return;
	}
	if (!make_room(k, st.st_size)) {
		k->st.over_bound++;
		return;
	}
	/*
	 * A hard link costs nothing, but shares the inode: only of a file no
	 * one but this user and root can write, or its owner would change the
	 * entry after the fact (a copy for the rest). Not of a set-id file
	 * either, whose old version must not outlive an upgrade
	 * (fs.protected_hardlinks' reason).
	 */
	linkable = buildid_file_trusted(&st) && !(st.st_mode & (S_ISUID | S_ISGID));
	snprintf(self, sizeof(self), "/proc/self/fd/%d", job->fd);
	if (linkable && !linkat(AT_FDCWD, self, AT_FDCWD, dest, AT_SYMLINK_FOLLOW)) {
		k->st.linked++;
	} else if (linkable && errno == EEXIST) {
		k->st.present++;
	} else if ((err = copy_to(k, job->fd, dest, st.st_size, job->id, job->len))) {
		fail(k, err, "copying into", dest);
		return;
	} else {
		k->st.copied++;
		k->st.copied_bytes += st.st_size;
	}
	if (k->st.linked > linked) {
		/* the link's mtime is the original's: its use is a stamp's */
		st.st_nlink++;
		mark_used(dest, &st);
	}
	if (add_entry(k, job->id, job->len, false, &st, clock_real_ns()))
		fail(k, -ENOMEM, "remembering", dest);
}

static void *keeper_main(void *arg)
{
	struct buildid_keeper *k = arg;

	pthread_mutex_lock(&k->lock);
	for (;;) {
		struct job *job = k->head;
		int fds[HOLD_MAX];
		size_t n = expire_holds(k, clock_mono_ns(), fds);

		if (n) {
			pthread_mutex_unlock(&k->lock);
			close_all(fds, n);
			pthread_mutex_lock(&k->lock);
			continue;
		}
		if (!job) {
			struct timespec until;

			if (k->stop)
				break;
			if (!k->nholds) {
				pthread_cond_wait(&k->wake, &k->lock);
				continue;
			}
			/* a job wakes it, or the next second: the holds past their time go then */
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec++;
			pthread_cond_timedwait(&k->wake, &k->lock, &until);
			continue;
		}
		k->head = job->next;
		if (!k->head)
			k->tail = &k->head;
		pthread_mutex_unlock(&k->lock);
		keep(k, job);
		close(job->fd);
		free(job);
		pthread_mutex_lock(&k->lock);
		k->pending--;
	}
	pthread_mutex_unlock(&k->lock);
	return NULL;
}

int buildid_keeper__finish(struct buildid_keeper *k, struct buildid_keeper_stats *st)
{
	if (!k->finished) {
		pthread_mutex_lock(&k->lock);
		k->stop = true;
		pthread_cond_signal(&k->wake);
		pthread_mutex_unlock(&k->lock);
		pthread_join(k->thread, NULL);
		k->finished = true;
		int fds[HOLD_MAX];

		/* every one: all are past their time */
		close_all(fds, expire_holds(k, UINT64_MAX / 2, fds));
		if (!k->scanned)
			scan(k);
		/* entries other recordings added meanwhile count too */
		make_room(k, 0);
		k->st.held_bytes = k->held;
	}
	if (st)
		*st = k->st;
	return k->err;
}

void buildid_keeper__free(struct buildid_keeper *k)
{
	if (!k)
		return;
	if (k->started)
		buildid_keeper__finish(k, NULL);
	free(k->entries);
	hmap__free(k->index);
	hmap__free(k->offered);
	pthread_mutex_destroy(&k->lock);
	pthread_cond_destroy(&k->wake);
	free(k->dir);
	free(k);
}
