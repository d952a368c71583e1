/* SPDX-License-Identifier: BSD-2-Clause */
/* The hash map: both kinds of key, growth, clusters of colliding keys, deletion, against a model. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hmap.h"
#include "testutil.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The slot a hash starts from in a table of 1 << @bits slots, as hmap.c numbers them. */
static size_t home_slot(uint64_t hash, unsigned bits)
{
	return (uint32_t)(hash >> 32) >> (32 - bits);
}

/*
 * The integer kinds through one set of calls: key @key of a HMAP_U64 map,
 * or (@key, ~@key ^ 5) of a HMAP_U128 one, its second half alike for all keys.
 */
static bool is_pair(struct hmap *m)
{
	/* only a HMAP_U128 map takes _u128 calls */
	return hmap__find_u128(m, 0, 0, NULL) != -EINVAL;
}

static int set_int(struct hmap *m, uint64_t key, uint64_t val)
{
	return is_pair(m) ? hmap__set_u128(m, key, ~key ^ 5, val) : hmap__set_u64(m, key, val);
}

static int find_int(struct hmap *m, uint64_t key, uint64_t **val)
{
	return is_pair(m) ? hmap__find_u128(m, key, ~key ^ 5, val) : hmap__find_u64(m, key, val);
}

static int delete_int(struct hmap *m, uint64_t key, uint64_t *val)
{
	return is_pair(m) ? hmap__delete_u128(m, key, ~key ^ 5, val) :
			    hmap__delete_u64(m, key, val);
}

/* The hash a key of @m's kind starts from. */
static uint64_t hash_int(struct hmap *m, uint64_t key)
{
	return is_pair(m) ? hmap_hash_u128(key, ~key ^ 5) : hmap_hash_u64(key);
}

static void _assert_has_int(struct hmap *m, uint64_t key, uint64_t want, const char *file, int line)
{
	uint64_t *v, got = ~want;
	int err = find_int(m, key, &v);

	if (!err && (got = *v) == want)
		return;
	print_error("key 0x%llx: got %d, value %llu; want value %llu\n", (unsigned long long)key,
		    err, (unsigned long long)got, (unsigned long long)want);
	_fail(file, line);
}
#define assert_has_int(m, k, v) _assert_has_int(m, k, v, __FILE__, __LINE__)

static void _assert_lacks_int(struct hmap *m, uint64_t key, const char *file, int line)
{
	int err = find_int(m, key, NULL);

	if (err == -ENOENT)
		return;
	print_error("key 0x%llx: got %d, want -ENOENT\n", (unsigned long long)key, err);
	_fail(file, line);
}
#define assert_lacks_int(m, k) _assert_lacks_int(m, k, __FILE__, __LINE__)

static void _assert_has(struct hmap *m, const void *key, size_t len, uint64_t want,
			const char *file, int line)
{
	uint64_t *v, got = ~want;
	int err = hmap__find(m, key, len, &v);

	if (!err && (got = *v) == want)
		return;
	print_error("%zu-byte key: got %d, value %llu; want value %llu\n", len, err,
		    (unsigned long long)got, (unsigned long long)want);
	_fail(file, line);
}
#define assert_has(m, k, l, v) _assert_has(m, k, l, v, __FILE__, __LINE__)

static struct hmap *new_or_fail(enum hmap_keys keys)
{
	struct hmap *m = hmap__new(keys);

	assert_non_null(m);
	return m;
}

/* The calls of a kind other than @m's fail with -EINVAL. */
static void check_other_kinds_refused(struct hmap *m, enum hmap_keys keys)
{
	uint64_t *v;

	if (keys != HMAP_U64) {
		assert_int_equal(hmap__find_u64(m, 1, NULL), -EINVAL);
		assert_int_equal(hmap__set_u64(m, 1, 1), -EINVAL);
		assert_int_equal(hmap__entry_u64(m, 1, &v), -EINVAL);
		assert_int_equal(hmap__delete_u64(m, 1, NULL), -EINVAL);
	}
	if (keys != HMAP_U128) {
		assert_int_equal(hmap__find_u128(m, 1, 2, NULL), -EINVAL);
		assert_int_equal(hmap__set_u128(m, 1, 2, 1), -EINVAL);
		assert_int_equal(hmap__entry_u128(m, 1, 2, &v), -EINVAL);
		assert_int_equal(hmap__delete_u128(m, 1, 2, NULL), -EINVAL);
	}
	if (keys != HMAP_BYTES) {
		assert_int_equal(hmap__find(m, "a", 1, NULL), -EINVAL);
		assert_int_equal(hmap__set(m, "a", 1, 1), -EINVAL);
		assert_int_equal(hmap__entry(m, "a", 1, &v, NULL), -EINVAL);
		assert_int_equal(hmap__delete(m, "a", 1, NULL), -EINVAL);
	}
}

/* Insert, find, replace, update in place and delete, for both kinds of integer key. */
static void test_int_basics(void **state)
{
	static const enum hmap_keys kinds[] = { HMAP_U64, HMAP_U128 };

	(void)state;
	for (size_t k = 0; k < N(kinds); k++) {
		struct hmap *m = new_or_fail(kinds[k]);
		uint64_t *v, old = 0;

		assert_int_equal(hmap__count(m), 0);
		assert_lacks_int(m, 0);		/* nothing allocated yet */
		assert_int_equal(delete_int(m, 0, NULL), -ENOENT);
		/* every value is a key: 0 and all ones included */
		assert_int_equal(set_int(m, 0, 10), 0);
		assert_int_equal(set_int(m, UINT64_MAX, 20), 0);
		assert_int_equal(set_int(m, 1ull << 32, 30), 0);
		assert_int_equal(hmap__count(m), 3);
		assert_has_int(m, 0, 10);
		assert_has_int(m, UINT64_MAX, 20);
		assert_has_int(m, 1ull << 32, 30);
		assert_lacks_int(m, 1);
		/* set replaces */
		assert_int_equal(set_int(m, 0, 11), 0);
		assert_int_equal(hmap__count(m), 3);
		assert_has_int(m, 0, 11);
		/* entry: a new key reads 0, an old one its value, both writable in place */
		assert_int_equal(kinds[k] == HMAP_U64 ? hmap__entry_u64(m, 7, &v) :
			hmap__entry_u128(m, 7, ~7ull ^ 5, &v), 0);
		assert_int_equal(*v, 0);
		*v = 70;
		assert_int_equal(find_int(m, 7, &v), 0);
		assert_int_equal(*v, 70);
		(*v)++;
		assert_has_int(m, 7, 71);
		assert_int_equal(hmap__count(m), 4);
		/* delete */
		assert_int_equal(delete_int(m, UINT64_MAX, &old), 0);
		assert_int_equal(old, 20);
		assert_lacks_int(m, UINT64_MAX);
		assert_int_equal(delete_int(m, UINT64_MAX, &old), -ENOENT);
		assert_int_equal(hmap__count(m), 3);
		assert_has_int(m, 0, 11);
		assert_has_int(m, 1ull << 32, 30);
		check_other_kinds_refused(m, kinds[k]);
		hmap__free(m);
	}
	hmap__free(NULL);
}

/* Pairs are told apart by either half, in either order. */
static void test_u128_halves(void **state)
{
	static const uint64_t pairs[][2] = {
		{ 0, 0 }, { 0, 1 }, { 1, 0 }, { 1, 2 }, { 2, 1 }, { UINT64_MAX, 0 },
		{ 0, UINT64_MAX }, { 1ull << 63, 1ull << 63 }, { 5, 5 },
	};
	struct hmap *m = new_or_fail(HMAP_U128);
	struct hmap_item it;
	size_t pos = 0, n = 0;
	uint64_t *v;

	(void)state;
	for (size_t i = 0; i < N(pairs); i++)
		assert_int_equal(hmap__set_u128(m, pairs[i][0], pairs[i][1], i), 0);
	assert_int_equal(hmap__count(m), N(pairs));
	for (size_t i = 0; i < N(pairs); i++) {
		assert_int_equal(hmap__find_u128(m, pairs[i][0], pairs[i][1], &v), 0);
		assert_int_equal(*v, i);
	}
	assert_int_equal(hmap__find_u128(m, 2, 2, NULL), -ENOENT);
	while (!hmap__next(m, &pos, &it)) {
		assert_int_equal(it.key, pairs[it.val][0]);
		assert_int_equal(it.key2, pairs[it.val][1]);
		n++;
	}
	assert_int_equal(n, N(pairs));
	hmap__free(m);
}

/* Keys around the 4, 8 and 16 bytes the hash and the comparison read at once, equal up to their last byte. */
static const struct {
	const char *key;
	size_t len;
} near_keys[] = {
	{ "", 0 }, { "a", 1 }, { "ab", 2 }, { "abc", 3 }, { "a\0", 2 }, { "\0a", 2 },
	{ "abcdefg", 7 }, { "abcdefgh", 8 }, { "abcdefgi", 8 }, { "abcdefghi", 9 },
	{ "abcdefghijklmnop", 16 }, { "abcdefghijklmnoq", 16 }, { "abcdefghijklmnopq", 17 },
	{ "abcdefghijklmnopr", 17 }, { "abcdefghijklmnopqrstuvwxyz0123456789", 36 },
	{ "abcdefghijklmnopqrstuvwxyz012345678:", 36 },
};

/* Every key of near_keys added, @copies asked for or not, and found again. */
static void check_near_keys(bool copies)
{
	struct hmap *m = new_or_fail(HMAP_BYTES);
	const char *copy[N(near_keys)];
	uint64_t *v, old;

	assert_int_equal(hmap__find(m, "a", 1, NULL), -ENOENT);
	for (size_t i = 0; i < N(near_keys); i++) {
		/* from an exact-size heap copy: no read past the key goes unnoticed */
		void *key = memdup_exact_or_fail(near_keys[i].key, near_keys[i].len);

		assert_int_equal(hmap__entry(m, key, near_keys[i].len, &v, copies ? &copy[i] : NULL),
				 0);
		assert_int_equal(*v, 0);
		*v = i + 1;
		free(key);
	}
	assert_int_equal(hmap__count(m), N(near_keys));
	for (size_t i = 0; i < N(near_keys); i++) {
		const char *again = NULL;

		assert_has(m, near_keys[i].key, near_keys[i].len, i + 1);
		/* a copy asked for later is one too, and does not move as the map grows */
		assert_int_equal(hmap__entry(m, near_keys[i].key, near_keys[i].len, &v, &again), 0);
		assert_int_equal(*v, i + 1);
		assert_memory_equal(again, near_keys[i].key, near_keys[i].len);
		assert_int_equal(again[near_keys[i].len], '\0');
		if (copies)
			assert_ptr_equal(again, copy[i]);
		copy[i] = again;
	}
	for (unsigned k = 0; k < 1000; k++)
		assert_int_equal(hmap__set(m, &k, sizeof(k), k), 0);
	for (size_t i = 0; i < N(near_keys); i++) {
		const char *again = NULL;

		assert_int_equal(hmap__entry(m, near_keys[i].key, near_keys[i].len, &v, &again), 0);
		assert_ptr_equal(again, copy[i]);
	}
	assert_int_equal(hmap__find(m, "abcd", 4, NULL), -ENOENT);
	assert_int_equal(hmap__find(m, "abcdefghijklmnopqrstuvwxyz0123456788", 36, NULL), -ENOENT);
	assert_int_equal(hmap__set(m, "ab", 2, 99), 0);
	assert_has(m, "ab", 2, 99);
	assert_int_equal(hmap__delete(m, "ab", 2, &old), 0);
	assert_int_equal(old, 99);
	assert_int_equal(hmap__find(m, "ab", 2, NULL), -ENOENT);
	assert_has(m, "abc", 3, 4);
	assert_has(m, "a", 1, 2);
	assert_int_equal(hmap__delete(m, "ab", 2, NULL), -ENOENT);
	assert_int_equal(hmap__count(m), N(near_keys) - 1 + 1000);
	hmap__free(m);
}

static void test_bytes_basics(void **state)
{
	struct hmap *m = new_or_fail(HMAP_BYTES);

	(void)state;
	check_near_keys(false);
	check_near_keys(true);
	check_other_kinds_refused(m, HMAP_BYTES);
	hmap__free(m);
}

static void test_new_errors(void **state)
{
	(void)state;
	errno = 0;
	assert_null(hmap__new((enum hmap_keys)7));
	assert_int_equal(errno, EINVAL);
}

/*
 * Keys longer than a first chunk make a bigger one; a very long key is kept
 * in a chunk of its own, and short ones keep filling the chunk they were in.
 */
static void test_long_keys(void **state)
{
	static const size_t lens[] = { 100, 5000, 300000, 5, 2000000, 17, 70000, 3 };
	struct hmap *m = new_or_fail(HMAP_BYTES);
	char *keys[N(lens)];

	(void)state;
	for (size_t i = 0; i < N(lens); i++) {
		keys[i] = malloc(lens[i]);
		assert_non_null(keys[i]);
		memset(keys[i], 'a' + (int)i, lens[i]);
		assert_int_equal(hmap__set(m, keys[i], lens[i], i), 0);
	}
	for (size_t i = 0; i < N(lens); i++) {
		assert_has(m, keys[i], lens[i], i);
		keys[i][lens[i] / 2] ^= 1;
		assert_int_equal(hmap__find(m, keys[i], lens[i], NULL), -ENOENT);
		free(keys[i]);
	}
	hmap__free(m);
}

/* The same hash for a key and its copy, and different hashes for near keys of every length. */
static void test_hash_bytes(void **state)
{
	uint8_t buf[80];
	uint64_t seen[2 * N(buf) + 1];
	size_t n = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 1);
	for (size_t len = 0; len <= sizeof(buf); len++) {
		void *copy = memdup_exact_or_fail(buf, len);

		assert_int_equal(hmap_hash_bytes(copy, len), hmap_hash_bytes(buf, len));
		free(copy);
		seen[n++] = hmap_hash_bytes(buf, len);
		if (len) {
			/* the last byte flipped: every byte counts, the last of a word too */
			buf[len - 1] ^= 0x80;
			seen[n++] = hmap_hash_bytes(buf, len);
			buf[len - 1] ^= 0x80;
		}
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (seen[i] == seen[j])
				fail_msg("hashes %zu and %zu are equal: 0x%llx", i, j,
					 (unsigned long long)seen[i]);
}

/* Grows from empty through many doublings; every key is found with its value after each. */
static void test_growth(void **state)
{
	const uint64_t n = 200000;
	struct hmap *u = new_or_fail(HMAP_U64), *b = new_or_fail(HMAP_BYTES);
	struct hmap *p = new_or_fail(HMAP_U128);

	(void)state;
	for (uint64_t i = 0; i < n; i++) {
		/* keys alike in their low bits, as packed ids are */
		uint64_t key = i << 32 | 5;
		uint32_t words[3] = { (uint32_t)i, 5, (uint32_t)(i >> 7) };

		assert_int_equal(hmap__set_u64(u, key, i), 0);
		assert_int_equal(hmap__set_u128(p, key, i >> 7, i), 0);
		assert_int_equal(hmap__set(b, words, sizeof(words), i), 0);
		if ((i & (i + 1)) == 0) {
			/* just before a table of i + 1 keys doubles */
			for (uint64_t j = 0; j <= i; j++)
				assert_has_int(u, j << 32 | 5, j);
		}
	}
	assert_int_equal(hmap__count(u), n);
	assert_int_equal(hmap__count(p), n);
	assert_int_equal(hmap__count(b), n);
	for (uint64_t i = 0; i < n; i++) {
		uint32_t words[3] = { (uint32_t)i, 5, (uint32_t)(i >> 7) };
		uint64_t *v;

		assert_has_int(u, i << 32 | 5, i);
		assert_int_equal(hmap__find_u128(p, i << 32 | 5, i >> 7, &v), 0);
		assert_int_equal(*v, i);
		assert_has(b, words, sizeof(words), i);
	}
	assert_lacks_int(u, n << 32 | 5);
	assert_lacks_int(u, 6);
	assert_int_equal(hmap__find_u128(p, 5, 1, NULL), -ENOENT);
	hmap__free(u);
	hmap__free(p);
	hmap__free(b);
}

/*
 * Keys that start from the last slot of the first table (16 slots, 8 keys
 * at most), so that their cluster wraps around to slot 0 and on over slot
 * 3, the start of the others. Each deletion in it leaves the others found.
 */
static void test_collisions(void **state)
{
	static const enum hmap_keys kinds[] = { HMAP_U64, HMAP_U128 };
	const unsigned bits = 4;

	(void)state;
	for (size_t kind = 0; kind < N(kinds); kind++) {
		struct hmap *probe = new_or_fail(kinds[kind]);
		uint64_t keys[8];
		size_t nlast = 0, nthree = 0;

		for (uint64_t k = 0; nlast < 5 || nthree < 3; k++) {
			size_t h = home_slot(hash_int(probe, k), bits);

			if (h == 15 && nlast < 5)
				keys[nlast++] = k;
			else if (h == 3 && nthree < 3)
				keys[5 + nthree++] = k;
		}
		hmap__free(probe);
		/* slots 15, 0, 1, 2, 3, then 4, 5, 6 for the keys of slot 3; the last stays out */
		for (size_t drop = 0; drop < N(keys); drop++) {
			struct hmap *m = new_or_fail(kinds[kind]);

			for (size_t i = 0; i < N(keys) - 1; i++)
				assert_int_equal(set_int(m, keys[i], i + 100), 0);
			assert_int_equal(hmap__count(m), N(keys) - 1);
			if (drop < N(keys) - 1) {
				assert_int_equal(delete_int(m, keys[drop], NULL), 0);
				assert_lacks_int(m, keys[drop]);
			}
			for (size_t i = 0; i < N(keys) - 1; i++)
				if (i != drop)
					assert_has_int(m, keys[i], i + 100);
			/* and back in: found again, the others too */
			assert_int_equal(set_int(m, keys[drop], 7), 0);
			assert_has_int(m, keys[drop], 7);
			for (size_t i = 0; i < N(keys) - 1; i++)
				if (i != drop)
					assert_has_int(m, keys[i], i + 100);
			hmap__free(m);
		}
	}
}

/* The same for byte keys, whose slots come from their tags alone when the table grows. */
static void test_collisions_bytes(void **state)
{
	char keys[6][16];
	size_t n = 0;
	struct hmap *m = new_or_fail(HMAP_BYTES);

	(void)state;
	for (unsigned k = 0; n < N(keys); k++) {
		char key[16];

		snprintf(key, sizeof(key), "key%u", k);
		if (home_slot(hmap_hash_bytes(key, strlen(key)), 4) == 9)
			memcpy(keys[n++], key, sizeof(key));
	}
	for (size_t i = 0; i < N(keys); i++)
		assert_int_equal(hmap__set(m, keys[i], strlen(keys[i]), i), 0);
	assert_int_equal(hmap__delete(m, keys[1], strlen(keys[1]), NULL), 0);
	assert_int_equal(hmap__delete(m, keys[4], strlen(keys[4]), NULL), 0);
	for (size_t i = 0; i < N(keys); i++) {
		if (i == 1 || i == 4)
			assert_int_equal(hmap__find(m, keys[i], strlen(keys[i]), NULL), -ENOENT);
		else
			assert_has(m, keys[i], strlen(keys[i]), i);
	}
	/* a growth moves the cluster apart */
	for (unsigned k = 0; k < 1000; k++) {
		char key[16];

		snprintf(key, sizeof(key), "other%u", k);
		assert_int_equal(hmap__set(m, key, strlen(key), 1000 + k), 0);
	}
	for (size_t i = 0; i < N(keys); i++)
		if (i != 1 && i != 4)
			assert_has(m, keys[i], strlen(keys[i]), i);
	assert_int_equal(hmap__count(m), N(keys) - 2 + 1000);
	hmap__free(m);
}

/* Every key once, with its value, then nothing. */
static void test_iteration(void **state)
{
	struct hmap *u = new_or_fail(HMAP_U64), *b = new_or_fail(HMAP_BYTES);
	struct hmap_item it;
	uint8_t seen[1000] = { 0 };
	size_t pos = 0, n = 0;

	(void)state;
	assert_int_equal(hmap__next(u, &pos, &it), -ENOENT);
	for (uint64_t i = 0; i < N(seen); i++)
		assert_int_equal(hmap__set_u64(u, i * 3, i), 0);
	for (uint64_t i = 0; i < N(seen); i += 2)
		assert_int_equal(hmap__delete_u64(u, i * 3, NULL), 0);
	while (!hmap__next(u, &pos, &it)) {
		assert_int_equal(it.key, it.val * 3);
		assert_true(it.val % 2 == 1);
		assert_int_equal(seen[it.val]++, 0);
		n++;
	}
	assert_int_equal(n, N(seen) / 2);
	assert_int_equal(hmap__next(u, &pos, &it), -ENOENT);

	assert_int_equal(hmap__set(b, "one", 3, 1), 0);
	assert_int_equal(hmap__set(b, "three", 5, 3), 0);
	pos = 0;
	n = 0;
	while (!hmap__next(b, &pos, &it)) {
		assert_int_equal(it.len, it.val == 1 ? 3 : 5);
		assert_memory_equal(it.bytes, it.val == 1 ? "one" : "three", it.len);
		n++;
	}
	assert_int_equal(n, 2);
	hmap__free(u);
	hmap__free(b);
}

/* A map that owns what its values point to frees them with itself (the sanitizer checks). */
static void test_free_values(void **state)
{
	struct hmap *m = new_or_fail(HMAP_U64);

	(void)state;
	for (uint64_t i = 0; i < 100; i++) {
		char *v = malloc(16);

		assert_non_null(v);
		assert_int_equal(hmap__set_u64(m, i, (uintptr_t)v), 0);
	}
	assert_int_equal(hmap__set_u64(m, 100, 0), 0);	/* none: skipped */
	hmap__free_values(m, free);
	hmap__free_values(NULL, free);
}

/* Random insertions, replacements and deletions over a small key range, each kind against an array. */
static void test_model(void **state)
{
	enum { KEYS = 4096, OPS = 400000 };
	static uint64_t model[KEYS];	/* value + 1, 0: absent */
	struct hmap *u = new_or_fail(HMAP_U64), *b = new_or_fail(HMAP_BYTES);
	struct hmap *p = new_or_fail(HMAP_U128);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	size_t count = 0;

	(void)state;
	memset(model, 0, sizeof(model));
	for (size_t op = 0; op < OPS; op++) {
		uint64_t key, val, got, *v;
		char bkey[24];
		size_t blen;
		int err;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		key = (x >> 8) % KEYS;
		val = x >> 40;
		/* bytes keys of several lengths, one per u64 key */
		blen = (size_t)snprintf(bkey, sizeof(bkey), "%0*llu", (int)(key % 19) + 1,
					(unsigned long long)key);
		switch (x % 4) {
		case 0:
		case 1:
			assert_int_equal(hmap__set_u64(u, key, val), 0);
			assert_int_equal(set_int(p, key, val), 0);
			assert_int_equal(hmap__set(b, bkey, blen, val), 0);
			count += !model[key];
			model[key] = val + 1;
			break;
		case 2:
			err = hmap__delete_u64(u, key, &got);
			assert_int_equal(err, model[key] ? 0 : -ENOENT);
			if (!err)
				assert_int_equal(got, model[key] - 1);
			assert_int_equal(delete_int(p, key, NULL), err);
			assert_int_equal(hmap__delete(b, bkey, blen, NULL), err);
			count -= !err;
			model[key] = 0;
			break;
		default:
			err = hmap__find_u64(u, key, &v);
			assert_int_equal(err, model[key] ? 0 : -ENOENT);
			if (!err) {
				assert_int_equal(*v, model[key] - 1);
				*v = val;	/* in place: later finds see it */
			}
			assert_int_equal(find_int(p, key, &v), err);
			if (!err) {
				assert_int_equal(*v, model[key] - 1);
				*v = val;
			}
			assert_int_equal(hmap__find(b, bkey, blen, &v), err);
			if (!err) {
				assert_int_equal(*v, model[key] - 1);
				*v = val;
				model[key] = val + 1;
			}
		}
		assert_int_equal(hmap__count(u), count);
		assert_int_equal(hmap__count(p), count);
		assert_int_equal(hmap__count(b), count);
	}
	for (uint64_t key = 0; key < KEYS; key++) {
		char bkey[24];
		size_t blen = (size_t)snprintf(bkey, sizeof(bkey), "%0*llu", (int)(key % 19) + 1,
					       (unsigned long long)key);

		if (model[key]) {
			assert_has_int(u, key, model[key] - 1);
			assert_has_int(p, key, model[key] - 1);
			assert_has(b, bkey, blen, model[key] - 1);
		} else {
			assert_lacks_int(u, key);
			assert_lacks_int(p, key);
			assert_int_equal(hmap__find(b, bkey, blen, NULL), -ENOENT);
		}
	}
	hmap__free(u);
	hmap__free(p);
	hmap__free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_int_basics),
		cmocka_unit_test(test_u128_halves),
		cmocka_unit_test(test_bytes_basics),
		cmocka_unit_test(test_new_errors),
		cmocka_unit_test(test_long_keys),
		cmocka_unit_test(test_hash_bytes),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_collisions),
		cmocka_unit_test(test_collisions_bytes),
		cmocka_unit_test(test_iteration),
		cmocka_unit_test(test_free_values),
		cmocka_unit_test(test_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
