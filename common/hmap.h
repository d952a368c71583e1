/* SPDX-License-Identifier: BSD-2-Clause */
/* The hash map of sfprof: u64, u64-pair or byte-string keys to u64 values, open addressing. */
#ifndef SFPROF_HMAP_H
#define SFPROF_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A map holds one kind of key, chosen at hmap__new():
 *
 * - HMAP_U64: a u64 (two u32 packed as a << 32 | b), any value; use the
 *   functions ending in _u64.
 * - HMAP_U128: two u64 (a, b), for keys of a few integers (three u32, a
 *   u64 and a u32, an id and a pointer): compared in the table, as fast as
 *   a u64; use the functions ending in _u128.
 * - HMAP_BYTES: a byte string of up to UINT32_MAX bytes, compared byte for
 *   byte: a string, an encoded stack. The map keeps its own NUL-terminated
 *   copy, which never moves and lives until hmap__free() (a deleted key's
 *   too), so that a table of strings by id can point at it instead of
 *   copying again. Use the functions without a suffix.
 *
 * Values are u64: a count, an index, or a pointer cast through uintptr_t
 * (the map never frees what a value points to, unless hmap__free_values()
 * is asked to). The _entry functions add a missing key with the value 0, so
 * a map of indexes that stores index + 1 (or ids from 1, or non-NULL
 * pointers) finds and adds with one probe: 0 says the key is new.
 *
 * A pointer to a value stays valid until the next insertion or deletion.
 * Iteration order is unspecified. A function of another kind of key, or a
 * byte key over UINT32_MAX bytes, fails with -EINVAL. Not thread-safe.
 */

/*
 * The hashes, for a table of one's own: 64 bits, every bit of the key
 * reaching every bit of the hash (the map indexes by the high bits).
 */
static inline uint64_t hmap_hash_u64(uint64_t key)
{
	/*
	 * splitmix64's first round: one multiply, and the xor-shift before it
	 * spreads keys that differ only in their high bits (ids packed as
	 * a << 32 | b, page-aligned addresses) as well as sequential ids.
	 */
	uint64_t h = (key ^ (key >> 29)) * 0xbf58476d1ce4e5b9ull;

	return h ^ (h >> 32);
}

static inline uint64_t hmap_hash_u128(uint64_t a, uint64_t b)
{
	return hmap_hash_u64(a ^ hmap_hash_u64(b));
}

/** hmap_hash_bytes() - the hash of @len bytes, read 16 at a time. */
uint64_t hmap_hash_bytes(const void *key, size_t len);

enum hmap_keys {
	HMAP_U64,
	HMAP_U128,
	HMAP_BYTES,
};

struct hmap;

/**
 * hmap__new() - an empty map of @keys keys; allocates nothing until the first insertion.
 * @return the map, or NULL with errno set (EINVAL for an unknown @keys, ENOMEM).
 */
struct hmap *hmap__new(enum hmap_keys keys);

/** hmap__free() - free the map and its key copies; accepts NULL. */
void hmap__free(struct hmap *m);

/**
 * hmap__free_values() - hmap__free() after @free_value on each non-zero
 * value, as a pointer: for a map that owns what its values point to.
 */
void hmap__free_values(struct hmap *m, void (*free_value)(void *));

/** @return the number of keys in the map. */
size_t hmap__count(const struct hmap *m);

/** hmap__memory() - @return the bytes the map holds: its slots and the copies of its keys. */
size_t hmap__memory(const struct hmap *m);

/* --- u64 keys (HMAP_U64) --- */

/**
 * hmap__find_u64() - the value of @key.
 * @val: optional; receives a pointer to the value, to read or write in place.
 * @return 0, or -ENOENT when @key is not in the map.
 */
int hmap__find_u64(struct hmap *m, uint64_t key, uint64_t **val);

/**
 * hmap__entry_u64() - the value of @key, added as 0 when missing.
 * @val: receives a pointer to the value, to read or write in place.
 * @return 0, or -ENOMEM (the map is then unchanged).
 */
int hmap__entry_u64(struct hmap *m, uint64_t key, uint64_t **val);

/**
 * hmap__set_u64() - map @key to @val, replacing its value if present.
 * @return 0, or -ENOMEM (the map is then unchanged).
 */
int hmap__set_u64(struct hmap *m, uint64_t key, uint64_t val);

/**
 * hmap__delete_u64() - remove @key.
 * @val: optional; receives the value it had.
 * @return 0, or -ENOENT when @key is not in the map.
 */
int hmap__delete_u64(struct hmap *m, uint64_t key, uint64_t *val);

/* --- pairs of u64 (HMAP_U128): the u64 functions, for the key (@a, @b) --- */

/** hmap__find_u128() - hmap__find_u64() of (@a, @b). @return 0, or -ENOENT. */
int hmap__find_u128(struct hmap *m, uint64_t a, uint64_t b, uint64_t **val);

/** hmap__entry_u128() - hmap__entry_u64() of (@a, @b). @return 0, or -ENOMEM. */
int hmap__entry_u128(struct hmap *m, uint64_t a, uint64_t b, uint64_t **val);

/** hmap__set_u128() - hmap__set_u64() of (@a, @b). @return 0, or -ENOMEM. */
int hmap__set_u128(struct hmap *m, uint64_t a, uint64_t b, uint64_t val);

/** hmap__delete_u128() - hmap__delete_u64() of (@a, @b). @return 0, or -ENOENT. */
int hmap__delete_u128(struct hmap *m, uint64_t a, uint64_t b, uint64_t *val);

/* --- byte-string keys (HMAP_BYTES) --- */

/**
 * hmap__find() - the value of the @len bytes at @key.
 * @val: optional; receives a pointer to the value, to read or write in place.
 * @return 0, or -ENOENT when the key is not in the map.
 */
int hmap__find(struct hmap *m, const void *key, size_t len, uint64_t **val);

/**
 * hmap__entry() - the value of the @len bytes at @key, added (copied) with
 * the value 0 when missing.
 * @val: receives a pointer to the value, to read or write in place.
 * @copy: optional; receives the map's copy of the key, NUL-terminated.
 * @return 0, or -ENOMEM (the map is then unchanged).
 */
int hmap__entry(struct hmap *m, const void *key, size_t len, uint64_t **val, const char **copy);

/**
 * hmap__set() - map the @len bytes at @key to @val, replacing its value if present.
 * @return 0, or -ENOMEM (the map is then unchanged).
 */
int hmap__set(struct hmap *m, const void *key, size_t len, uint64_t val);

/**
 * hmap__delete() - remove the @len bytes at @key.
 * @val: optional; receives the value it had.
 * @return 0, or -ENOENT when the key is not in the map.
 */
int hmap__delete(struct hmap *m, const void *key, size_t len, uint64_t *val);

/* --- every kind --- */

/* One entry, as hmap__next() gives it. */
struct hmap_item {
	uint64_t key;		/* HMAP_U64: the key; HMAP_U128: its first half */
	uint64_t key2;		/* HMAP_U128: its second half */
	const char *bytes;	/* HMAP_BYTES: the map's copy of the key, NUL-terminated */
	size_t len;		/* HMAP_BYTES: its length */
	uint64_t val;
};

/**
 * hmap__next() - walk the entries: set *@pos to 0, then call until it fails.
 * The map must not change during the walk; values may (through hmap__find()).
 * @return 0 and fills @item, or -ENOENT past the last entry.
 */
int hmap__next(const struct hmap *m, size_t *pos, struct hmap_item *item);

#endif
