/* SPDX-License-Identifier: BSD-2-Clause */
/* The build-ID cache at record time: files held open by the recording threads, linked or copied on the keeper's thread. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
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
#include "util/hmap.h"

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

struct job {
	struct job *next;
	int fd;
	size_t len;
	uint8_t id[BUILDID_MAX];
};

/* An entry of the cache, as the keeper's thread knows it. */
struct entry {
	char *path;
	struct timespec used;	/* mtime: when a recording last used it */
	uint64_t size;
	bool mine;		/* used by this recording: never evicted by it */
	bool gone;
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
	/* the thread's own */
	struct entry *entries;	/* the tree's, by use (oldest first); then this recording's */
	size_t nentries, entries_cap;
	size_t nscanned;	/* the tree's, sorted */
	size_t evict_next;	/* before it: gone or mine */
	bool scanned;
	uint64_t held;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

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

static int mkdir_private(const char *path)
{
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

/* mkdir -p of @dir, owner-only for what is made. */
static int make_dirs(const char *dir)
{
	char buf[4096];
	size_t n = strlen(dir);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, dir, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir_private(buf)) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	return mkdir_private(buf);
}

static void *keeper_main(void *arg);

struct buildid_keeper *buildid_keeper__new(const char *dir, uint64_t max_bytes, char *why,
					   size_t why_cap)
{
	struct buildid_keeper *k = calloc(1, sizeof(*k));
	char tree[4200], probe[4300];
	int err, fd;

	if (!k || !(k->dir = strdup(dir)) || !(k->offered = hmap__new(HMAP_BYTES))) {
		snprintf(why, why_cap, "out of memory");
		err = -ENOMEM;
		goto fail;
	}
	k->max_bytes = max_bytes;
	k->tail = &k->head;
	snprintf(tree, sizeof(tree), "%s/" BUILDID_TREE, dir);
	err = make_dirs(dir);
	if (!err)
		err = mkdir_private(tree);
	if (err) {
		snprintf(why, why_cap, "%s: %s", err == -ENOENT || err == -ENOTDIR ? dir : tree,
			 strerror(-err));
		goto fail;
	}
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
		hmap__free(k->offered);
		free(k->dir);
		free(k);
	}
	errno = -err;
	return NULL;
}

/* Open the first of the places that holds the file. @return the fd, or -1. */
static int open_module(uint32_t pid, uint64_t start, uint64_t end, const char *map_path,
		       const char *module_path)
{
	char path[4200];
	int fd;

	/* the mapped file itself: held even when deleted, or in another mount namespace */
	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid,
		 (unsigned long long)start, (unsigned long long)end);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0)
		return fd;
	if (map_path && map_path[0] == '/') {
		snprintf(path, sizeof(path), "/proc/%u/root%s", pid, map_path);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd >= 0)
			return fd;
	}
	if (module_path && module_path[0] == '/')
		fd = open(module_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && map_path && map_path[0] == '/')
		fd = open(map_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	return fd;
}

/* Close the holds past their time, or the oldest when @room is set and none is free. Under lock. */
static void expire_holds(struct buildid_keeper *k, uint64_t now, bool room)
{
	while (k->nholds) {
		struct hold *h = &k->holds[k->hold_first];

		if (now - h->at < HOLD_NS && !(room && k->nholds == HOLD_MAX))
			break;
		close(h->fd);
		k->hold_first = (k->hold_first + 1) % HOLD_MAX;
		k->nholds--;
	}
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
	int fd;

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
	expire_holds(k, now_ns(), true);
	h = &k->holds[(k->hold_first + k->nholds) % HOLD_MAX];
	h->fd = fd;
	h->len = len;
	memcpy(h->id, id, len);
	h->at = now_ns();
	k->nholds++;
	pthread_mutex_unlock(&k->lock);
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
	uint64_t t0 = now_ns(), *seen, took;
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
	expire_holds(k, now_ns(), false);
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
	took = now_ns() - t0;
	if (took > k->st.offer_ns_max)
		k->st.offer_ns_max = took;
	pthread_mutex_unlock(&k->lock);
}

/* --- the keeper's thread --- */

/* The GNU build ID of the ELF file open at @fd. @return its length, or 0. */
static size_t read_build_id(int fd, uint8_t *out)
{
	size_t found = 0, phnum;
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum))
		goto out;
	for (size_t i = 0; i < phnum && !found; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		while (d && !found && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off))) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((const char *)d->d_buf + name_off, "GNU", 4) &&
			    nh.n_descsz >= 2 && nh.n_descsz <= BUILDID_MAX) {
				memcpy(out, (const uint8_t *)d->d_buf + desc_off, nh.n_descsz);
				found = nh.n_descsz;
			}
		}
	}
out:
	elf_end(elf);
	return found;
}

static int add_entry(struct buildid_keeper *k, const char *path, const struct stat *st, bool mine)
{
	struct entry *e;

	if (k->nentries == k->entries_cap) {
		size_t cap = k->entries_cap ? 2 * k->entries_cap : 64;

		e = realloc(k->entries, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		k->entries = e;
		k->entries_cap = cap;
	}
	e = &k->entries[k->nentries];
	if (!(e->path = strdup(path)))
		return -ENOMEM;
	e->used = st->st_mtim;
	e->size = st->st_size;
	e->mine = mine;
	e->gone = false;
	k->nentries++;
	k->held += e->size;
	return 0;
}

static int by_use(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	if (x->used.tv_nsec != y->used.tv_nsec)
		return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* What the tree holds now: its entries, their sizes and when they were last used. */
static void scan(struct buildid_keeper *k)
{
	char tree[4200], path[4600];
	struct dirent *de, *fe;
	DIR *d, *sub;

	k->scanned = true;
	snprintf(tree, sizeof(tree), "%s/" BUILDID_TREE, k->dir);
	d = opendir(tree);
	if (!d)
		return;
	while ((de = readdir(d))) {
		uint8_t id[BUILDID_MAX];
		bool debug;

		if (strlen(de->d_name) != 2 || de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", tree, de->d_name);
		sub = opendir(path);
		if (!sub)
			continue;
		while ((fe = readdir(sub))) {
			struct stat st;

			/* entries only: not a temporary file of another recording */
			if (!buildid_parse_name(de->d_name, fe->d_name, id, &debug))
				continue;
			snprintf(path, sizeof(path), "%s/%s/%s", tree, de->d_name, fe->d_name);
			if (!lstat(path, &st) && S_ISREG(st.st_mode))
				add_entry(k, path, &st, false);
		}
		closedir(sub);
	}
	closedir(d);
	/* sorted once: what the tree had is evicted oldest first, and found by when it was used */
	if (k->nentries)
		qsort(k->entries, k->nentries, sizeof(*k->entries), by_use);
	k->nscanned = k->nentries;
}

/*
 * Remove the oldest entries this recording did not use until @need more
 * bytes fit under the bound. @return whether they fit.
 */
static bool make_room(struct buildid_keeper *k, uint64_t need)
{
	if (need > k->max_bytes)
		return false;
	/* this recording's entries, after the tree's, are all mine: never evicted */
	for (; k->held + need > k->max_bytes && k->evict_next < k->nscanned; k->evict_next++) {
		struct entry *e = &k->entries[k->evict_next];

		if (e->mine || e->gone)
			continue;
		if (unlink(e->path) && errno != ENOENT)
			continue;
		e->gone = true;
		k->held -= e->size;
		k->st.evicted++;
		k->st.evicted_bytes += e->size;
	}
	return k->held + need <= k->max_bytes;
}

/*
 * Mark an entry of the tree as used by this recording (its mtime is when it
 * was last used, @st's): found by it among the tree's sorted entries, or by
 * a walk of them when another recording used it since the tree was read.
 * This recording's own entries are mine already.
 */
static void touch(struct buildid_keeper *k, const char *path, const struct stat *st)
{
	struct entry key = { .path = (char *)path, .used = st->st_mtim };
	struct entry *e = k->nscanned ? bsearch(&key, k->entries, k->nscanned, sizeof(key), by_use) :
			  NULL;

	for (size_t i = 0; !e && i < k->nscanned; i++)
		if (!k->entries[i].gone && !strcmp(k->entries[i].path, path))
			e = &k->entries[i];
	if (e)
		e->mine = true;
	utimensat(AT_FDCWD, path, NULL, 0);
}

/* Copy @fd into a new file published at @dest whole or not at all. @return 0 or -errno. */
static int copy_to(struct buildid_keeper *k, int fd, const char *dest, uint64_t size)
{
	char dir[4300], tmp[4400], self[64];
	const char *slash = strrchr(dest, '/');
	uint64_t t0 = now_ns();
	off_t in_off = 0;
	bool named = false;
	int out, err = 0;

	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - dest), dest);
	/* a file with no name until it is whole: a crash leaves nothing */
	out = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
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
	k->st.copy_ns += now_ns() - t0;
	return err;
}

static void keep(struct buildid_keeper *k, struct job *job)
{
	char dest[4400], dir[4400], self[64];
	uint8_t id[BUILDID_MAX];
	struct stat st;
	int err;

	if (!k->scanned)
		scan(k);
	if (buildid_path(dest, sizeof(dest), k->dir, job->id, job->len, NULL))
		return;
	if (!lstat(dest, &st) && S_ISREG(st.st_mode)) {
		k->st.present++;
		touch(k, dest, &st);
		return;
	}
	if (fstat(job->fd, &st) || !S_ISREG(st.st_mode) ||
	    read_build_id(job->fd, id) != job->len || memcmp(id, job->id, job->len)) {
		k->st.mismatched++;
		return;
	}
	if (!make_room(k, st.st_size)) {
		k->st.over_bound++;
		return;
	}
	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(dest, '/') - dest), dest);
	if ((err = mkdir_private(dir))) {
		fail(k, err, "making", dir);
		return;
	}
	/*
	 * A hard link costs nothing; not of a set-id file, whose old version
	 * must not outlive an upgrade (fs.protected_hardlinks' reason).
	 */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", job->fd);
	if (!(st.st_mode & (S_ISUID | S_ISGID)) &&
	    !linkat(AT_FDCWD, self, AT_FDCWD, dest, AT_SYMLINK_FOLLOW)) {
		k->st.linked++;
	} else if (!(st.st_mode & (S_ISUID | S_ISGID)) && errno == EEXIST) {
		k->st.present++;
	} else if ((err = copy_to(k, job->fd, dest, st.st_size))) {
		fail(k, err, "copying into", dest);
		return;
	} else {
		k->st.copied++;
		k->st.copied_bytes += st.st_size;
	}
	if (add_entry(k, dest, &st, true))
		fail(k, -ENOMEM, "remembering", dest);
}

static void *keeper_main(void *arg)
{
	struct buildid_keeper *k = arg;

	pthread_mutex_lock(&k->lock);
	for (;;) {
		struct job *job = k->head;

		if (!job) {
			if (k->stop)
				break;
			pthread_cond_wait(&k->wake, &k->lock);
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
		expire_holds(k, UINT64_MAX / 2, false);	/* every one: all are past their time */
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
	for (size_t i = 0; i < k->nentries; i++)
		free(k->entries[i].path);
	free(k->entries);
	hmap__free(k->offered);
	pthread_mutex_destroy(&k->lock);
	pthread_cond_destroy(&k->wake);
	free(k->dir);
	free(k);
}
