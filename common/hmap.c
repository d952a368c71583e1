/* SPDX-License-Identifier: BSD-2-Clause */
/* The hash map: linear probing in a power-of-two table at most half full, backward-shift deletion. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"

#define MIN_BITS 4
/* slots are numbered by the top bits of a 32-bit tag */
#define MAX_BITS 31
/* byte keys are copied into chunks growing from the first size to the last */
#define CHUNK_FIRST 4096u
#define CHUNK_MAX (1u << 20)

/*
 * A slot: 24 bytes, 32 for HMAP_U128. Keys of integers are in the table;
 * a byte key is the address of its copy in a chunk, which never moves.
 */
struct hent {
	uint64_t val;
	uint32_t tag;	/* the hash's high half with bit 0 set; 0: a free slot */
	uint32_t len;	/* of a byte key */
	uint64_t key[];	/* HMAP_U64: 1; HMAP_U128: 2; HMAP_BYTES: the copy's address */
};

struct chunk {
	struct chunk *next;
	size_t used, size;
	char bytes[];
};

struct hmap {
	enum hmap_keys keys;
	size_t chunk_bytes;	/* of every chunk, headers included */
	size_t stride;		/* bytes per slot */
	unsigned char *slots;	/* 1 << bits of them, NULL before the first insertion */
	unsigned bits;
	size_t count;
	struct chunk *chunks;	/* the one filling first */
	size_t chunk_size;	/* of the next chunk */
};

/* A key of any kind, hashed. */
struct hkey {
	uint64_t w[2];		/* HMAP_U64: w[0]; HMAP_U128: both */
	const uint8_t *bytes;	/* HMAP_BYTES */
	uint32_t len;
	uint32_t tag;
};

/*
 * The lookups inline their steps: a map of small keys spends more on calls
 * than on its probes otherwise (sfprof report runs millions of them).
 */
#define HOT static inline __attribute__((always_inline))

static uint64_t mum(uint64_t a, uint64_t b)
{
	unsigned __int128 r = (unsigned __int128)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t load32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The first 16 bytes of a key, zero-padded: all of a short key, for the hash. */
HOT void head_words(const uint8_t *p, size_t len, uint64_t w[2])
{
	if (len >= 16) {
		w[0] = load64(p);
		w[1] = load64(p + 8);
	} else if (len >= 8) {
		w[0] = load64(p);
		w[1] = len > 8 ? load64(p + len - 8) >> (8 * (16 - len)) : 0;
	} else if (len >= 4) {
		w[0] = load32(p) | load32(p + len - 4) >> (8 * (8 - len)) << 32;
		w[1] = 0;
	} else {
		w[0] = len ? p[0] | (uint64_t)p[len >> 1] << (8 * (len >> 1)) |
			     (uint64_t)p[len - 1] << (8 * (len - 1)) : 0;
		w[1] = 0;
	}
}

/*
 * wyhash's shape, one lane: a 128-bit multiply per 16 bytes. A key of up to
 * 16 bytes is its head words @w; of a longer one, the last 16 bytes are read
 * whole, overlapping those already taken.
 */
HOT uint64_t hash_bytes(const uint8_t *p, size_t len, const uint64_t w[2])
{
	static const uint64_t p0 = 0xa0761d6478bd642full, p1 = 0xe7037ed1a0b428dbull;
	uint64_t seed = p0, a = w[0], b = w[1];

	if (len > 16) {
		size_t n = len;

		for (; n > 16; p += 16, n -= 16)
			seed = mum(load64(p) ^ p1, load64(p + 8) ^ seed);
		a = load64(p + n - 16);
		b = load64(p + n - 8);
	}
	return mum(p1 ^ len, mum(a ^ p1, b ^ seed));
}

uint64_t hmap_hash_bytes(const void *key, size_t len)
{
	uint64_t w[2];

	head_words(key, len, w);
	return hash_bytes(key, len, w);
}

static uint32_t tag_of(uint64_t hash)
{
	return (uint32_t)(hash >> 32) | 1;
}

static size_t mask(const struct hmap *m)
{
	return ((size_t)1 << m->bits) - 1;
}

static size_t home(const struct hmap *m, uint32_t tag)
{
	return tag >> (32 - m->bits);
}

static struct hent *slot(const struct hmap *m, size_t j)
{
	return (struct hent *)(m->slots + j * m->stride);
}

/* (@a, @b) as a key of @m. @return 0, or -EINVAL for a map of another kind. */
HOT int key_ints(const struct hmap *m, enum hmap_keys keys, uint64_t a, uint64_t b,
		 struct hkey *k)
{
	if (m->keys != keys)
		return -EINVAL;
	*k = (struct hkey){ .w = { a, b } };
	k->tag = tag_of(keys == HMAP_U64 ? hmap_hash_u64(a) : hmap_hash_u128(a, b));
	return 0;
}

/* The @len bytes at @key as a key of @m. @return 0, or -EINVAL. */
HOT int key_bytes(const struct hmap *m, const void *key, size_t len, struct hkey *k)
{
	if (m->keys != HMAP_BYTES || len > UINT32_MAX)
		return -EINVAL;
	head_words(key, len, k->w);
	k->bytes = key;
	k->len = (uint32_t)len;
	k->tag = tag_of(hash_bytes(key, len, k->w));
	return 0;
}

/* Whether @len bytes at @a and @b are equal: short keys without a call. */
HOT bool same_bytes(const uint8_t *a, const uint8_t *b, size_t len)
{
	if (len > 16)
		return !memcmp(a, b, len);
	if (len >= 8)
		return load64(a) == load64(b) && load64(a + len - 8) == load64(b + len - 8);
	if (len >= 4)
		return load32(a) == load32(b) && load32(a + len - 4) == load32(b + len - 4);
	return !len || (a[0] == b[0] && a[len >> 1] == b[len >> 1] && a[len - 1] == b[len - 1]);
}

HOT bool matches(const struct hmap *m, const struct hent *e, const struct hkey *k)
{
	switch (m->keys) {
	case HMAP_U64:
		return e->key[0] == k->w[0];
	case HMAP_U128:
		return e->key[0] == k->w[0] && e->key[1] == k->w[1];
	default:
		return e->tag == k->tag && e->len == k->len &&
		       same_bytes((const uint8_t *)(uintptr_t)e->key[0], k->bytes, k->len);
	}
}

/* The slot of @k: its entry, or the free slot where it would go. */
HOT struct hent *probe(const struct hmap *m, const struct hkey *k)
{
	for (size_t j = home(m, k->tag);; j = (j + 1) & mask(m)) {
		struct hent *e = slot(m, j);

		if (!e->tag || matches(m, e, k))
			return e;
	}
}

/* Double the table (or make the first). @return 0 or -ENOMEM. */
static int grow(struct hmap *m)
{
	unsigned bits = m->slots ? m->bits + 1 : MIN_BITS;
	struct hmap big = *m;

	if (bits > MAX_BITS)
		return -ENOMEM;
	big.bits = bits;
	big.slots = calloc((size_t)1 << bits, m->stride);
	if (!big.slots)
		return -ENOMEM;
	for (size_t i = 0; m->slots && i <= mask(m); i++) {
		const struct hent *e = slot(m, i);
		size_t j;

		if (!e->tag)
			continue;
		/* the tag keeps what the slot needs: keys are not hashed again */
		for (j = home(&big, e->tag); slot(&big, j)->tag; j = (j + 1) & mask(&big))
			;
		memcpy(slot(&big, j), e, m->stride);
	}
	free(m->slots);
	m->slots = big.slots;
	m->bits = bits;
	return 0;
}

/* A copy of @len bytes and a NUL, in a chunk that never moves; NULL when out of memory. */
static char *keep(struct hmap *m, const void *key, size_t len)
{
	struct chunk *c = m->chunks;
	char *copy;

	if (len + 1 > CHUNK_MAX / 4) {
		/* a long key gets a chunk of its own, behind the one filling */
		c = malloc(sizeof(*c) + len + 1);
		if (!c)
			return NULL;
		c->size = c->used = len + 1;
		m->chunk_bytes += sizeof(*c) + len + 1;
		if (m->chunks) {
			c->next = m->chunks->next;
			m->chunks->next = c;
		} else {
			c->next = NULL;
			m->chunks = c;
		}
		copy = c->bytes;
	} else {
		if (!c || c->size - c->used < len + 1) {
			size_t size = m->chunk_size ? m->chunk_size : CHUNK_FIRST;

			while (size < len + 1)
				size *= 2;
			c = malloc(sizeof(*c) + size);
			if (!c)
				return NULL;
			c->size = size;
			c->used = 0;
			m->chunk_bytes += sizeof(*c) + size;
			c->next = m->chunks;
			m->chunks = c;
			m->chunk_size = size < CHUNK_MAX ? size * 2 : CHUNK_MAX;
		}
		copy = c->bytes + c->used;
		c->used += len + 1;
	}
	memcpy(copy, key, len);
	copy[len] = '\0';
	return copy;
}

/* Take the entry at slot @i out, moving later ones of its cluster back: no tombstones. */
static void remove_at(struct hmap *m, size_t i)
{
	for (size_t j = i;;) {
		j = (j + 1) & mask(m);
		if (!slot(m, j)->tag)
			break;
		/* j may move to i unless its home lies cyclically in (i, j] */
		if (((j - home(m, slot(m, j)->tag)) & mask(m)) >= ((j - i) & mask(m))) {
			memcpy(slot(m, i), slot(m, j), m->stride);
			i = j;
		}
	}
	slot(m, i)->tag = 0;
	m->count--;
}

struct hmap *hmap__new(enum hmap_keys keys)
{
	struct hmap *m;

	if (keys != HMAP_U64 && keys != HMAP_U128 && keys != HMAP_BYTES) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->keys = keys;
	m->stride = sizeof(struct hent) + (keys == HMAP_U128 ? 2 : 1) * sizeof(uint64_t);
	return m;
}

void hmap__free_values(struct hmap *m, void (*free_value)(void *))
{
	for (size_t i = 0; m && m->slots && i <= mask(m); i++)
		if (slot(m, i)->tag && slot(m, i)->val)
			free_value((void *)(uintptr_t)slot(m, i)->val);
	hmap__free(m);
}

void hmap__free(struct hmap *m)
{
	if (!m)
		return;
	while (m->chunks) {
		struct chunk *next = m->chunks->next;

		free(m->chunks);
		m->chunks = next;
	}
	free(m->slots);
	free(m);
}

size_t hmap__count(const struct hmap *m)
{
	return m->count;
}

size_t hmap__memory(const struct hmap *m)
{
	return sizeof(*m) + (m->slots ? ((size_t)1 << m->bits) * m->stride : 0) + m->chunk_bytes;
}

/* The value of @k, in place. @return 0, or -ENOENT. */
HOT int find(struct hmap *m, const struct hkey *k, uint64_t **val)
{
	struct hent *e;

	if (!m->slots || !(e = probe(m, k))->tag)
		return -ENOENT;
	if (val)
		*val = &e->val;
	return 0;
}

/* The value of @k, its entry made when new. @return 0 or -ENOMEM. */
HOT int entry(struct hmap *m, const struct hkey *k, uint64_t **val, const char **copy)
{
	struct hent *e = NULL;
	char *bytes = NULL;

	if (m->slots && (e = probe(m, k))->tag) {
		*val = &e->val;
		if (copy)
			*copy = (const char *)(uintptr_t)e->key[0];
		return 0;
	}
	/* the copy first: a table grown for nothing is harmless, a key without its bytes is not */
	if (m->keys == HMAP_BYTES && !(bytes = keep(m, k->bytes, k->len)))
		return -ENOMEM;
	/* at most half full */
	if (!m->slots || (m->count + 1) * 2 > (size_t)1 << m->bits) {
		if (grow(m))
			return -ENOMEM;
		e = probe(m, k);
	}
	e->val = 0;
	e->len = k->len;
	if (bytes)
		e->key[0] = (uintptr_t)bytes;
	else
		memcpy(e->key, k->w, m->stride - sizeof(*e));
	e->tag = k->tag;
	m->count++;
	*val = &e->val;
	if (copy)
		*copy = bytes;
	return 0;
}

static int delete(struct hmap *m, const struct hkey *k, uint64_t *val)
{
	struct hent *e;

	if (!m->slots || !(e = probe(m, k))->tag)
		return -ENOENT;
	if (val)
		*val = e->val;
	remove_at(m, (size_t)((unsigned char *)e - m->slots) / m->stride);
	return 0;
}

int hmap__find_u64(struct hmap *m, uint64_t key, uint64_t **val)
{
	struct hkey k;
	int err = key_ints(m, HMAP_U64, key, 0, &k);

	return err ? err : find(m, &k, val);
}

int hmap__entry_u64(struct hmap *m, uint64_t key, uint64_t **val)
{
	struct hkey k;
	int err = key_ints(m, HMAP_U64, key, 0, &k);

	return err ? err : entry(m, &k, val, NULL);
}

int hmap__set_u64(struct hmap *m, uint64_t key, uint64_t val)
{
	uint64_t *v;
	int err = hmap__entry_u64(m, key, &v);

	if (!err)
		*v = val;
	return err;
}

int hmap__delete_u64(struct hmap *m, uint64_t key, uint64_t *val)
{
	struct hkey k;
	int err = key_ints(m, HMAP_U64, key, 0, &k);

	return err ? err : delete(m, &k, val);
}

int hmap__find_u128(struct hmap *m, uint64_t a, uint64_t b, uint64_t **val)
{
	struct hkey k;
	int err = key_ints(m, HMAP_U128, a, b, &k);

	return err ? err : find(m, &k, val);
}

int hmap__entry_u128(struct hmap *m, uint64_t a, uint64_t b, uint64_t **val)
{
	struct hkey k;
	int err = key_ints(m, HMAP_U128, a, b, &k);

	return err ? err : entry(m, &k, val, NULL);
}

int hmap__set_u128(struct hmap *m, uint64_t a, uint64_t b, uint64_t val)
{
	uint64_t *v;
	int err = hmap__entry_u128(m, a, b, &v);

	if (!err)
		*v = val;
	return err;
}

int hmap__delete_u128(struct hmap *m, uint64_t a, uint64_t b, uint64_t *val)
{
	struct hkey k;
	int err = key_ints(m, HMAP_U128, a, b, &k);

	return err ? err : delete(m, &k, val);
}

int hmap__find(struct hmap *m, const void *key, size_t len, uint64_t **val)
{
	struct hkey k;
	int err = key_bytes(m, key, len, &k);

	return err ? err : find(m, &k, val);
}

int hmap__entry(struct hmap *m, const void *key, size_t len, uint64_t **val, const char **copy)
{
	struct hkey k;
	int err = key_bytes(m, key, len, &k);

	return err ? err : entry(m, &k, val, copy);
}

int hmap__set(struct hmap *m, const void *key, size_t len, uint64_t val)
{
	uint64_t *v;
	int err = hmap__entry(m, key, len, &v, NULL);

	if (!err)
		*v = val;
	return err;
}

int hmap__delete(struct hmap *m, const void *key, size_t len, uint64_t *val)
{
	struct hkey k;
	int err = key_bytes(m, key, len, &k);

	return err ? err : delete(m, &k, val);
}

int hmap__next(const struct hmap *m, size_t *pos, struct hmap_item *item)
{
	for (; m->slots && *pos <= mask(m); (*pos)++) {
		const struct hent *e = slot(m, *pos);

		if (!e->tag)
			continue;
		*item = (struct hmap_item){ .val = e->val };
		if (m->keys == HMAP_BYTES) {
			item->bytes = (const char *)(uintptr_t)e->key[0];
			item->len = e->len;
		} else {
			item->key = e->key[0];
			item->key2 = m->keys == HMAP_U128 ? e->key[1] : 0;
		}
		(*pos)++;
		return 0;
	}
	return -ENOENT;
}
