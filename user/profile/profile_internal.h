/* SPDX-License-Identifier: BSD-2-Clause */
/* The profile file's layout (docs/FORMAT.md), shared by its writer and reader. */
#ifndef SFPROF_PROFILE_INTERNAL_H
#define SFPROF_PROFILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PROFILE_MAGIC		"\x89SFPROF\n"
#define PROFILE_VERSION		1
#define PROFILE_HDR_FIXED	40
#define PROFILE_BLOCK_MAGIC	"SFB1"
#define PROFILE_BLOCK_HDR	20
#define PROFILE_TRAILER_MAGIC	"SFT1"
#define PROFILE_TRAILER_SIZE	64
#define PROFILE_TRAILER_F_FAILED 0x1

/* Header field tags. */
enum { HDR_END = 0, HDR_HOST = 1, HDR_RELEASE = 2, HDR_MACHINE = 3, HDR_CMDLINE = 4 };

/* Writer limits: a block is cut at this many record bytes. */
#define PROFILE_BLOCK_BYTES	(256 * 1024)
/* A reader refuses blocks that claim more than this (a corrupt size). */
#define PROFILE_BLOCK_MAX	(64u * 1024 * 1024)

/** crc32() - CRC-32 (IEEE 802.3, zlib's) of @len bytes, continuing from @crc (0 to start). */
uint32_t profile_crc32(uint32_t crc, const void *buf, size_t len);

static inline void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (8 * i);
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = v >> (8 * i);
}

static inline uint16_t get_le16(const uint8_t *p)
{
	return p[0] | (uint16_t)p[1] << 8;
}

static inline uint32_t get_le32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t get_le64(const uint8_t *p)
{
	return get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

static inline uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* A bounds-checked cursor over untrusted bytes; `bad` sticks once set. */
struct cursor {
	const uint8_t *p, *end;
	bool bad;
};

static inline uint64_t cur_varint(struct cursor *c)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (c->p >= c->end) {
			c->bad = true;
			return 0;
		}
		b = *c->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	c->bad = true;	/* more than 10 bytes */
	return 0;
}

static inline uint32_t cur_u32(struct cursor *c)
{
	uint64_t v = cur_varint(c);

	if (v > UINT32_MAX)
		c->bad = true;
	return (uint32_t)v;
}

static inline uint8_t cur_u8(struct cursor *c)
{
	if (c->p >= c->end) {
		c->bad = true;
		return 0;
	}
	return *c->p++;
}

/* A length-prefixed byte string; NULL (and bad) when it overruns. */
static inline const uint8_t *cur_bytes(struct cursor *c, size_t *len)
{
	uint64_t n = cur_varint(c);
	const uint8_t *p = c->p;

	if (c->bad || n > (uint64_t)(c->end - c->p)) {
		c->bad = true;
		*len = 0;
		return NULL;
	}
	c->p += n;
	*len = n;
	return p;
}

#endif
