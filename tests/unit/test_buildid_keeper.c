/* SPDX-License-Identifier: BSD-2-Clause */
/* The build-ID keeper: a file held from its mmap is kept after the mapping and the file are gone; one not held is not. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "buildid/buildid.h"
#include "buildid/buildid_keeper.h"
#include "sfunwind.h"

struct copy {
	char path[256];
	uint8_t id[SFU_BUILD_ID_MAX];
	size_t len;
	uint8_t *bytes;		/* the file's content */
	size_t size;
	void *map;		/* its first page, mapped from the file */
};

static uint8_t *read_all(const char *path, size_t *size)
{
	struct stat st;
	uint8_t *b;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	b = malloc(st.st_size);
	assert_non_null(b);
	assert_int_equal(read(fd, b, st.st_size), st.st_size);
	close(fd);
	*size = st.st_size;
	return b;
}

/*
 * A copy of this test's own binary in @dir, its build ID changed by @flip
 * (each test gets a build the cache has never seen), mapped as a process
 * maps a program: /proc/self/map_files then names it.
 */
static void make_copy(struct copy *c, const char *dir, const char *name, uint8_t flip)
{
	struct sfu_module *m = sfu_module__open("/proc/self/exe", NULL);
	const struct sfu_build_id *bid;
	uint8_t *hit;
	int fd;

	assert_non_null(m);
	bid = sfu_module__build_id(m);
	assert_true(bid->len >= 2);
	c->bytes = read_all("/proc/self/exe", &c->size);
	hit = memmem(c->bytes, c->size, bid->bytes, bid->len);
	assert_non_null(hit);
	c->len = bid->len;
	hit[c->len - 1] ^= flip;
	memcpy(c->id, hit, c->len);
	sfu_module__put(m);
	snprintf(c->path, sizeof(c->path), "%s/%s", dir, name);
	fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, c->bytes, c->size), c->size);
	close(fd);
	fd = open(c->path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	c->map = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(c->map != MAP_FAILED);
	close(fd);
}

/* The process exits, the program is deleted: its mapping and its file are gone. */
static void remove_copy(struct copy *c)
{
	assert_int_equal(munmap(c->map, 4096), 0);
	assert_int_equal(unlink(c->path), 0);
}

static bool kept_as(const char *cache, const struct copy *c)
{
	char path[4096];
	uint8_t *got;
	size_t size;
	bool same;

	assert_int_equal(buildid_path(path, sizeof(path), cache, c->id, c->len, NULL), 0);
	if (access(path, F_OK))
		return false;
	got = read_all(path, &size);
	same = size == c->size && !memcmp(got, c->bytes, size);
	free(got);
	return same;
}

/* A keeper over a new cache in a new directory @dir (a mkdtemp template); skipped without root. */
static struct buildid_keeper *start(char *dir, char *cache, size_t cap)
{
	char probe[64], why[512];
	struct buildid_keeper *k;

	snprintf(probe, sizeof(probe), "/proc/%d/map_files", getpid());
	if (access(probe, R_OK)) {
		/* map_files needs CAP_SYS_ADMIN: what the keeper holds is opened through it */
		print_message("needs root (CAP_SYS_ADMIN) to open /proc/PID/map_files: not run\n");
		skip();
	}
	assert_non_null(mkdtemp(dir));
	snprintf(cache, cap, "%s/cache", dir);
	k = buildid_keeper__new(cache, 1ull << 30, BUILDID_KEEPER_PROTECT_ALL, why, sizeof(why));
	assert_non_null(k);
	return k;
}

static void clean(const char *dir, struct copy *a, struct copy *b)
{
	char cmd[400];

	free(a->bytes);
	free(b->bytes);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_held_file_kept(void **state)
{
	char dir[] = "/tmp/sfprof-keeper-XXXXXX", cache[300];
	struct buildid_keeper_stats st;
	struct buildid_keeper *k = start(dir, cache, sizeof(cache));
	struct copy held = { 0 }, unheld = { 0 }, bogus = { 0 };
	uint64_t s1, s2;

	(void)state;

	make_copy(&held, dir, "held", 0x5a);
	make_copy(&unheld, dir, "unheld", 0xa5);
	s1 = (uintptr_t)held.map;
	s2 = (uintptr_t)unheld.map;
	/* both mapped: only the first is told at its mmap */
	buildid_keeper__hold(k, held.id, held.len, getpid(), s1, s1 + 4096);
	/* told twice: one hold */
	buildid_keeper__hold(k, held.id, held.len, getpid(), s1, s1 + 4096);
	/* a build said to be at a range that holds another file (mapped again since) */
	memcpy(bogus.id, held.id, held.len);
	bogus.len = held.len;
	bogus.id[0] ^= 0xff;
	buildid_keeper__hold(k, bogus.id, bogus.len, getpid(), s1, s1 + 4096);
	remove_copy(&held);
	remove_copy(&unheld);
	/* their first samples come after both are gone */
	buildid_keeper__offer(k, held.id, held.len, getpid(), s1, s1 + 4096, held.path, held.path);
	buildid_keeper__offer(k, unheld.id, unheld.len, getpid(), s2, s2 + 4096, unheld.path,
			      unheld.path);
	buildid_keeper__offer(k, bogus.id, bogus.len, getpid(), s1, s1 + 4096, held.path,
			      held.path);
	assert_int_equal(buildid_keeper__finish(k, &st), 0);
	buildid_keeper__free(k);

	assert_int_equal(st.offered, 3);
	assert_int_equal(st.held, 2);
	assert_int_equal(st.mismatched, 1);	/* the held file's build ID is checked */
	assert_int_equal(st.copied, 1);		/* deleted: no link can be made to it */
	assert_int_equal(st.linked, 0);
	assert_int_equal(st.unopened, 1);
	assert_true(kept_as(cache, &held));
	assert_false(kept_as(cache, &unheld));
	bogus.bytes = held.bytes;
	bogus.size = held.size;
	assert_false(kept_as(cache, &bogus));

	clean(dir, &held, &unheld);
}

/* Holds past the bound close the oldest: a file held then let go is not kept. */
static void test_holds_bounded(void **state)
{
	char dir[] = "/tmp/sfprof-keeper-XXXXXX", cache[300];
	struct buildid_keeper_stats st;
	struct buildid_keeper *k = start(dir, cache, sizeof(cache));
	struct copy first = { 0 }, last = { 0 };
	uint8_t other[SFU_BUILD_ID_MAX];
	uint64_t s1, s2;

	(void)state;
	make_copy(&first, dir, "first", 0x11);
	make_copy(&last, dir, "last", 0x22);
	s1 = (uintptr_t)first.map;
	s2 = (uintptr_t)last.map;
	buildid_keeper__hold(k, first.id, first.len, getpid(), s1, s1 + 4096);
	/* 256 more builds (made-up IDs, the same mapping) push the first out */
	memcpy(other, last.id, last.len);
	for (int i = 0; i < 256; i++) {
		other[0] = (uint8_t)i;
		other[1] = 0xee;
		buildid_keeper__hold(k, other, last.len, getpid(), s2, s2 + 4096);
	}
	buildid_keeper__hold(k, last.id, last.len, getpid(), s2, s2 + 4096);
	remove_copy(&first);
	remove_copy(&last);
	buildid_keeper__offer(k, first.id, first.len, getpid(), s1, s1 + 4096, first.path,
			      first.path);
	buildid_keeper__offer(k, last.id, last.len, getpid(), s2, s2 + 4096, last.path, last.path);
	assert_int_equal(buildid_keeper__finish(k, &st), 0);
	buildid_keeper__free(k);
	assert_int_equal(st.held, 1);
	assert_int_equal(st.unopened, 1);
	assert_false(kept_as(cache, &first));
	assert_true(kept_as(cache, &last));
	clean(dir, &first, &last);
}

/* An entry of another recording's: @size bytes under build @id, last used at @when (its mtime). */
static void old_entry(const char *cache, const uint8_t *id, size_t len, size_t size, time_t when)
{
	char path[4096], cmd[4200];
	struct timespec t[2] = { { when, 0 }, { when, 0 } };
	int fd;

	assert_int_equal(buildid_path(path, sizeof(path), cache, id, len, NULL), 0);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	assert_int_equal(system(cmd), 0);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, size), 0);
	assert_int_equal(futimens(fd, t), 0);
	close(fd);
}

static bool entry_there(const char *cache, const uint8_t *id, size_t len)
{
	char path[4096];

	assert_int_equal(buildid_path(path, sizeof(path), cache, id, len, NULL), 0);
	return !access(path, F_OK);
}

/*
 * The bound evicts the tree's entries oldest use first, never one this
 * recording used: four entries of 64 KiB used at 1000, 2000, 3000 and 4000
 * s, the oldest the build of a file offered now (there already: used, so
 * not evicted), and a new build that needs room for itself and 1.5 entries
 * less than they hold: the second and third go, the first and fourth stay.
 */
static void test_eviction_order(void **state)
{
	char dir[] = "/tmp/sfprof-keeper-XXXXXX", cache[300], why[512];
	struct buildid_keeper_stats st;
	struct buildid_keeper *k;
	struct copy used = { 0 }, fresh = { 0 };
	uint8_t ids[3][SFU_BUILD_ID_MAX];
	const size_t entry = 64 << 10;
	uint64_t s1, s2;

	(void)state;
	/* the bound depends on the copies' size: this first keeper only makes the cache */
	k = start(dir, cache, sizeof(cache));
	buildid_keeper__free(k);
	make_copy(&used, dir, "used", 0x33);
	make_copy(&fresh, dir, "fresh", 0x44);
	old_entry(cache, used.id, used.len, entry, 1000);
	for (int i = 0; i < 3; i++) {
		memcpy(ids[i], used.id, used.len);
		ids[i][0] ^= 0x80 | i;
		old_entry(cache, ids[i], used.len, entry, 2000 + 1000 * i);
	}
	k = buildid_keeper__new(cache, 4 * entry + fresh.size - entry * 3 / 2,
				BUILDID_KEEPER_PROTECT_ALL, why, sizeof(why));
	assert_non_null(k);
	s1 = (uintptr_t)used.map;
	s2 = (uintptr_t)fresh.map;
	buildid_keeper__offer(k, used.id, used.len, getpid(), s1, s1 + 4096, used.path, used.path);
	buildid_keeper__offer(k, fresh.id, fresh.len, getpid(), s2, s2 + 4096, fresh.path,
			      fresh.path);
	assert_int_equal(buildid_keeper__finish(k, &st), 0);
	buildid_keeper__free(k);
	assert_int_equal(st.present, 1);
	assert_int_equal(st.linked + st.copied, 1);
	assert_int_equal(st.evicted, 2);
	assert_int_equal(st.evicted_bytes, 2 * entry);
	assert_true(entry_there(cache, used.id, used.len));
	assert_false(entry_there(cache, ids[0], used.len));
	assert_false(entry_there(cache, ids[1], used.len));
	assert_true(entry_there(cache, ids[2], used.len));
	assert_true(kept_as(cache, &fresh));
	remove_copy(&used);
	remove_copy(&fresh);
	clean(dir, &used, &fresh);
}

/*
 * Three new builds, one after another, in a cache with room for two: a
 * recording keeps the first two and refuses the third (its own binaries
 * stay while it runs); a keeper whose protection has passed (an agent's,
 * after a few windows) evicts the oldest it kept itself and keeps the
 * third, so that a cache at its bound keeps what is new for months.
 */
static void keep_three(uint64_t protect_s, bool kept[3], struct buildid_keeper_stats *st)
{
	char dir[] = "/tmp/sfprof-keeper-XXXXXX", cache[300], why[512];
	struct buildid_keeper *k = start(dir, cache, sizeof(cache));
	struct copy c[3];

	memset(c, 0, sizeof(c));
	buildid_keeper__free(k);
	for (int i = 0; i < 3; i++)
		make_copy(&c[i], dir, i == 0 ? "c0" : i == 1 ? "c1" : "c2", 0x51 + i);
	k = buildid_keeper__new(cache, 2 * c[0].size + c[0].size / 2, protect_s, why, sizeof(why));
	assert_non_null(k);
	for (int i = 0; i < 3; i++) {
		uint64_t s = (uintptr_t)c[i].map;

		buildid_keeper__offer(k, c[i].id, c[i].len, getpid(), s, s + 4096, c[i].path,
				      c[i].path);
	}
	assert_int_equal(buildid_keeper__finish(k, st), 0);
	buildid_keeper__free(k);
	for (int i = 0; i < 3; i++) {
		kept[i] = kept_as(cache, &c[i]);
		remove_copy(&c[i]);
	}
	free(c[2].bytes);
	clean(dir, &c[0], &c[1]);
}

static void test_own_entries_evicted(void **state)
{
	struct buildid_keeper_stats st;
	bool kept[3];

	(void)state;
	keep_three(BUILDID_KEEPER_PROTECT_ALL, kept, &st);
	assert_true(kept[0] && kept[1] && !kept[2]);
	assert_int_equal(st.over_bound, 1);
	assert_int_equal(st.evicted, 0);
	keep_three(0, kept, &st);
	assert_true(!kept[0] && kept[1] && kept[2]);
	assert_int_equal(st.over_bound, 0);
	assert_int_equal(st.evicted, 1);
}

/*
 * An entry that is a hard link shares the original's inode: a use marks a
 * stamp beside it, and the original's mtime stays what it was.
 */
static void test_link_use_stamped(void **state)
{
	char dir[] = "/tmp/sfprof-keeper-XXXXXX", cache[300], path[4096], stamp[4200], why[512];
	struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	struct buildid_keeper_stats st;
	struct buildid_keeper *k = start(dir, cache, sizeof(cache));
	struct copy c = { 0 }, unused = { 0 };
	struct stat sb;
	uint64_t s;

	(void)state;
	make_copy(&c, dir, "linked", 0x61);
	assert_int_equal(utimensat(AT_FDCWD, c.path, old, 0), 0);
	s = (uintptr_t)c.map;
	buildid_keeper__offer(k, c.id, c.len, getpid(), s, s + 4096, c.path, c.path);
	assert_int_equal(buildid_keeper__finish(k, &st), 0);
	buildid_keeper__free(k);
	assert_int_equal(st.linked, 1);
	/* a second recording finds it there and uses it */
	k = buildid_keeper__new(cache, 1ull << 30, BUILDID_KEEPER_PROTECT_ALL, why, sizeof(why));
	assert_non_null(k);
	buildid_keeper__offer(k, c.id, c.len, getpid(), s, s + 4096, c.path, c.path);
	assert_int_equal(buildid_keeper__finish(k, &st), 0);
	buildid_keeper__free(k);
	assert_int_equal(st.present, 1);
	assert_int_equal(stat(c.path, &sb), 0);
	assert_int_equal(sb.st_mtim.tv_sec, 1000000000);
	assert_int_equal(buildid_path(path, sizeof(path), cache, c.id, c.len, NULL), 0);
	snprintf(stamp, sizeof(stamp), "%s.used", path);
	assert_int_equal(stat(stamp, &sb), 0);
	assert_true(sb.st_mtim.tv_sec > 1000000000);
	remove_copy(&c);
	clean(dir, &c, &unused);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_held_file_kept),
		cmocka_unit_test(test_holds_bounded),
		cmocka_unit_test(test_eviction_order),
		cmocka_unit_test(test_own_entries_evicted),
		cmocka_unit_test(test_link_use_stamped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
