// SPDX-License-Identifier: BSD-2-Clause
/* CPython code objects read from another process: names, file and the line of an instruction. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "py_walk.h"	/* py_check_hash() */
#include "pycode.h"

/* Py_TPFLAGS_BYTES_SUBCLASS, Py_TPFLAGS_UNICODE_SUBCLASS: the same bits in 3.10-3.13. */
#define TPFLAGS_BYTES		(1ul << 27)
#define TPFLAGS_UNICODE		(1ul << 28)

/* PyASCIIObject.state: interned:2, kind:3, compact:1, ascii:1 from bit 0 in 3.10-3.13. */
#define STATE_KIND(s)		(((s) >> 2) & 7)
#define STATE_COMPACT(s)	(((s) >> 5) & 1)
#define STATE_ASCII(s)		(((s) >> 6) & 1)

/* The most any layout reads of a code object's or a str's header. */
#define CODE_HDR_MAX		256
#define STR_HDR_MAX		128
/* Past any line a table can reach; deltas are at most 2^31 each. */
#define LINE_FAR		((int64_t)1 << 40)

/*
 * Layouts from the DWARF of pyenv's 3.10.13, 3.11.7, 3.12.1 and 3.13.0
 * (gdb `ptype /o`), the same in each minor's other release builds.
 */
static const struct pycode_layout layouts[] = {
	{ .version = 310, .co_qualname = 0, .co_name = 112, .co_filename = 104,
	  .co_firstlineno = 40, .co_linetable = 120, .co_code_adaptive = 0, .co_code = 48,
	  .ob_type = 8, .tp_name = 24, .tp_flags = 168, .ob_size = 16, .bytes_sval = 32,
	  .str_length = 16, .str_state = 32, .str_ascii_data = 48, .str_compact_data = 72 },
	{ .version = 311, .co_qualname = 128, .co_name = 120, .co_filename = 112,
	  .co_firstlineno = 72, .co_linetable = 136, .co_code_adaptive = 184, .co_code = 0,
	  .ob_type = 8, .tp_name = 24, .tp_flags = 168, .ob_size = 16, .bytes_sval = 32,
	  .str_length = 16, .str_state = 32, .str_ascii_data = 48, .str_compact_data = 72 },
	{ .version = 312, .co_qualname = 128, .co_name = 120, .co_filename = 112,
	  .co_firstlineno = 68, .co_linetable = 136, .co_code_adaptive = 192, .co_code = 0,
	  .ob_type = 8, .tp_name = 24, .tp_flags = 168, .ob_size = 16, .bytes_sval = 32,
	  .str_length = 16, .str_state = 32, .str_ascii_data = 40, .str_compact_data = 56 },
	{ .version = 313, .co_qualname = 128, .co_name = 120, .co_filename = 112,
	  .co_firstlineno = 68, .co_linetable = 136, .co_code_adaptive = 200, .co_code = 0,
	  .ob_type = 8, .tp_name = 24, .tp_flags = 168, .ob_size = 16, .bytes_sval = 32,
	  .str_length = 16, .str_state = 32, .str_ascii_data = 40, .str_compact_data = 56 },
};

const struct pycode_layout *pycode_layout__for(unsigned minor)
{
	if (minor < 10 || minor > 13)
		return NULL;
	return &layouts[minor - 10];
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* A layout whose fields all lie inside the headers this file reads. */
static bool layout_ok(const struct pycode_layout *l)
{
	return l && l->co_name && l->co_filename && l->co_firstlineno && l->co_linetable &&
	       l->co_qualname <= CODE_HDR_MAX - 8 && l->co_name <= CODE_HDR_MAX - 8 &&
	       l->co_filename <= CODE_HDR_MAX - 8 && l->co_firstlineno <= CODE_HDR_MAX - 4 &&
	       l->co_linetable <= CODE_HDR_MAX - 8 && l->ob_type <= STR_HDR_MAX - 8 &&
	       l->ob_size <= STR_HDR_MAX - 8 && l->bytes_sval <= STR_HDR_MAX &&
	       l->str_length <= STR_HDR_MAX - 8 && l->str_state <= STR_HDR_MAX - 4 &&
	       l->str_ascii_data <= STR_HDR_MAX && l->str_compact_data <= STR_HDR_MAX &&
	       l->ob_size + 8 <= l->bytes_sval && l->str_length + 8 <= l->str_ascii_data &&
	       l->str_state + 4 <= l->str_ascii_data && l->str_ascii_data <= l->str_compact_data &&
	       l->ob_type + 8 <= l->str_ascii_data && l->ob_type + 8 <= l->bytes_sval &&
	       l->tp_flags <= 4096 && l->tp_name <= 4096;
}

/* Fields of 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h), from 3.13.0's DWARF. */
#define DBG_VERSION		8
#define DBG_FREE_THREADED	16
#define DBG_CO_FILENAME		280
#define DBG_CO_NAME		288
#define DBG_CO_QUALNAME		296
#define DBG_CO_LINETABLE	304
#define DBG_CO_FIRSTLINENO	312
#define DBG_CO_CODE_ADAPTIVE	344
#define DBG_OB_TYPE		360
#define DBG_TP_NAME		376
#define DBG_TP_FLAGS		392
#define DBG_BYTES_OB_SIZE	520
#define DBG_BYTES_OB_SVAL	528
#define DBG_STR_STATE		544
#define DBG_STR_LENGTH		552
#define DBG_STR_ASCII_SIZE	560

int pycode_layout__debug_offsets(const uint8_t *buf, size_t len, struct pycode_layout *out)
{
	static const struct { uint32_t dbg; size_t field; } map[] = {
		{ DBG_CO_FILENAME, offsetof(struct pycode_layout, co_filename) },
		{ DBG_CO_NAME, offsetof(struct pycode_layout, co_name) },
		{ DBG_CO_QUALNAME, offsetof(struct pycode_layout, co_qualname) },
		{ DBG_CO_LINETABLE, offsetof(struct pycode_layout, co_linetable) },
		{ DBG_CO_FIRSTLINENO, offsetof(struct pycode_layout, co_firstlineno) },
		{ DBG_CO_CODE_ADAPTIVE, offsetof(struct pycode_layout, co_code_adaptive) },
		{ DBG_OB_TYPE, offsetof(struct pycode_layout, ob_type) },
		{ DBG_TP_NAME, offsetof(struct pycode_layout, tp_name) },
		{ DBG_TP_FLAGS, offsetof(struct pycode_layout, tp_flags) },
		{ DBG_BYTES_OB_SIZE, offsetof(struct pycode_layout, ob_size) },
		{ DBG_BYTES_OB_SVAL, offsetof(struct pycode_layout, bytes_sval) },
		{ DBG_STR_STATE, offsetof(struct pycode_layout, str_state) },
		{ DBG_STR_LENGTH, offsetof(struct pycode_layout, str_length) },
		{ DBG_STR_ASCII_SIZE, offsetof(struct pycode_layout, str_ascii_data) },
	};
	struct pycode_layout l = { .version = 313 };
	uint64_t version;

	if (!buf || len < PYCODE_DEBUG_OFFSETS_LEN || memcmp(buf, "xdebugpy", 8))
		return -ENOENT;
	/* PY_VERSION_HEX: 0x030d.... */
	version = get_u64(buf + DBG_VERSION);
	if ((version >> 16) != 0x030d || get_u64(buf + DBG_FREE_THREADED))
		return -ENOENT;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		uint64_t v = get_u64(buf + map[i].dbg);
		uint32_t off = (uint32_t)v;

		if (!v || v >= 4096)
			return -EBADMSG;
		memcpy((char *)&l + map[i].field, &off, sizeof(off));
	}
	/* PyCompactUnicodeObject: PyASCIIObject, utf8_length, utf8 (3.12+) */
	l.str_compact_data = l.str_ascii_data + 16;
	if (!layout_ok(&l))
		return -EBADMSG;
	*out = l;
	return 0;
}

/* The object at @addr has a type whose tp_flags hold @flag. */
static int check_type_flag(const struct pycode_layout *l, pycode_read_fn read, void *ctx,
			   uint64_t type, unsigned long flag)
{
	uint8_t b[8];
	int err;

	if (!type)
		return -EBADMSG;
	err = read(ctx, type + l->tp_flags, b, sizeof(b));
	if (err)
		return err;
	return get_u64(b) & flag ? 0 : -EBADMSG;
}

static size_t utf8_put(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * The compact str at @addr as UTF-8 in @out (@cap bytes, NUL included). Code
 * objects' names are always compact (made by the compiler, interned or not);
 * a legacy str there is garbage.
 */
static int read_str(const struct pycode_layout *l, pycode_read_fn read, void *ctx, uint64_t addr,
		    char *out, size_t cap)
{
	uint8_t hdr[STR_HDR_MAX], data[2048];
	unsigned kind, state;
	size_t n, len = 0;
	int64_t length;
	uint64_t at;
	int err;

	if (!addr)
		return -EBADMSG;
	err = read(ctx, addr, hdr, l->str_ascii_data);
	if (err)
		return err;
	err = check_type_flag(l, read, ctx, get_u64(hdr + l->ob_type), TPFLAGS_UNICODE);
	if (err)
		return err;
	state = get_u32(hdr + l->str_state);
	kind = STATE_KIND(state);
	length = (int64_t)get_u64(hdr + l->str_length);
	if (!STATE_COMPACT(state) || (kind != 1 && kind != 2 && kind != 4) ||
	    (STATE_ASCII(state) && kind != 1) || length < 0)
		return -EBADMSG;
	/* each code point is one UTF-8 byte at least: no more can fit */
	n = (size_t)length < cap - 1 ? (size_t)length : cap - 1;
	if (n * kind > sizeof(data))
		n = sizeof(data) / kind;
	at = addr + (STATE_ASCII(state) ? l->str_ascii_data : l->str_compact_data);
	if (n) {
		err = read(ctx, at, data, n * kind);
		if (err)
			return err;
	}
	for (size_t i = 0; i < n; i++) {
		char enc[4];
		uint32_t cp;
		size_t k;

		if (kind == 1)
			cp = data[i];
		else if (kind == 2)
			cp = (uint32_t)data[2 * i] | (uint32_t)data[2 * i + 1] << 8;
		else
			cp = get_u32(data + 4 * i);
		if ((STATE_ASCII(state) && cp >= 0x80) || cp > 0x10ffff)
			return -EBADMSG;
		/* a NUL would end the C string early; a surrogate is no UTF-8 */
		if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff))
			cp = 0xfffd;
		k = utf8_put(enc, cp);
		if (len + k > cap - 1)
			break;
		memcpy(out + len, enc, k);
		len += k;
	}
	out[len] = '\0';
	return 0;
}

/*
 * Where the bytes of the bytes object at @addr are and how many: 0, -E2BIG
 * past PYCODE_LINETABLE_MAX, -EBADMSG for no bytes object, or the reader's error.
 */
static int bytes_locate(const struct pycode_layout *l, pycode_read_fn read, void *ctx, uint64_t addr,
			uint64_t *data, size_t *len)
{
	uint8_t hdr[STR_HDR_MAX];
	int64_t size;
	int err;

	if (!addr)
		return -EBADMSG;
	err = read(ctx, addr, hdr, l->bytes_sval);
	if (err)
		return err;
	err = check_type_flag(l, read, ctx, get_u64(hdr + l->ob_type), TPFLAGS_BYTES);
	if (err)
		return err;
	size = (int64_t)get_u64(hdr + l->ob_size);
	if (size < 0)
		return -EBADMSG;
	if ((uint64_t)size > PYCODE_LINETABLE_MAX)
		return -E2BIG;
	*data = addr + l->bytes_sval;
	*len = (size_t)size;
	return 0;
}

/* The @len bytes at @addr in a new buffer (@len may be 0). */
static int read_alloc(pycode_read_fn read, void *ctx, uint64_t addr, size_t len, uint8_t **out)
{
	uint8_t *b = malloc(len ? len : 1);
	int err;

	if (!b)
		return -ENOMEM;
	err = len ? read(ctx, addr, b, len) : 0;
	if (err) {
		free(b);
		return err;
	}
	*out = b;
	return 0;
}

/* Keep a line that damage drives far within range, so that no sum overflows. */
static int64_t line_add(int64_t line, int64_t delta)
{
	line += delta;
	if (line > LINE_FAR)
		return LINE_FAR;
	return line < -LINE_FAR ? -LINE_FAR : line;
}

static uint32_t line_of(int64_t line)
{
	return line > 0 && line <= UINT32_MAX ? (uint32_t)line : 0;
}

/*
 * 3.10 (PEP 626, Objects/lnotab_notes.txt): (byte delta, signed line delta)
 * pairs from offset 0 and co_firstlineno; a line delta of -128 is "no line".
 */
static uint32_t line_310(const uint8_t *t, size_t len, int64_t line, uint64_t off)
{
	uint64_t end = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		uint64_t start = end;
		int8_t ldelta = (int8_t)t[i + 1];

		end += t[i];
		if (ldelta != -128)
			line = line_add(line, ldelta);
		if (off >= start && off < end)
			return ldelta == -128 ? 0 : line_of(line);
	}
	return 0;
}

/* A varint of the location table: 6 bits a byte, 0x40 for more. false when the table ends first. */
static bool varint(const uint8_t *t, size_t len, size_t *pos, uint64_t *val)
{
	unsigned shift = 0;
	uint64_t v = 0;
	uint8_t b;

	do {
		/* CPython's are ints: a longer one is damage */
		if (*pos >= len || shift > 30)
			return false;
		b = t[(*pos)++];
		v |= (uint64_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	if (v > UINT32_MAX)
		return false;
	*val = v;
	return true;
}

/*
 * 3.11+ (PEP 657, Objects/locations.md): entries of a first byte with bit 7
 * set, a 4-bit code and the number of 2-byte code units less one; the line
 * moves by a signed varint (codes 13, 14), by 0-2 (codes 10-12) or not at
 * all, and code 15 has no line. Later bytes (columns) are skipped to the
 * next byte with bit 7 set, as CPython does.
 */
static uint32_t line_311(const uint8_t *t, size_t len, int64_t line, uint64_t off)
{
	uint64_t end = 0;
	size_t pos = 0;

	while (pos < len) {
		uint8_t first = t[pos++];
		unsigned code = (first >> 3) & 15;
		uint64_t start = end, u;
		int64_t delta = 0;

		if (!(first & 0x80))
			return 0;
		end += ((uint64_t)(first & 7) + 1) * 2;
		if (code == 13 || code == 14) {
			if (!varint(t, len, &pos, &u))
				return 0;
			delta = u & 1 ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
		} else if (code >= 10 && code <= 12) {
			delta = code - 10;
		}
		line = line_add(line, delta);
		if (off >= start && off < end)
			return code == 15 ? 0 : line_of(line);
		while (pos < len && !(t[pos] & 0x80))
			pos++;
	}
	return 0;
}

uint32_t pycode__line(unsigned version, const uint8_t *table, size_t len, uint32_t firstlineno,
		      uint64_t instr_off)
{
	if (!table)
		return 0;
	if (version == 310)
		return line_310(table, len, firstlineno, instr_off);
	return line_311(table, len, firstlineno, instr_off);
}

/* What a code object holds apart from the line of one instruction. */
struct code_names {
	uint32_t firstlineno;
	uint64_t table_addr;	/* the line table's bytes */
	size_t table_len;
	bool table_big;		/* past PYCODE_LINETABLE_MAX: lines unknown */
};

/* The bytes of a code object's header that hold the fields read. */
static size_t code_hdr_len(const struct pycode_layout *l)
{
	const uint32_t fields[] = { l->co_qualname, l->co_name, l->co_filename, l->co_firstlineno,
				    l->co_linetable, l->ob_type };
	size_t need = 0;

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (fields[i] + 8u > need)
			need = fields[i] + 8u;
	return need;
}

static int read_code(const struct pycode_layout *l, pycode_read_fn read, void *ctx, uint64_t code,
		     struct pycode_info *out, struct code_names *cn)
{
	uint8_t hdr[CODE_HDR_MAX], tb[8];
	uint64_t name_ptr, type;
	int32_t first;
	size_t need;
	char tname[5];
	int err;

	if (!layout_ok(l))
		return -EINVAL;
	if (!code)
		return -EBADMSG;
	need = code_hdr_len(l);
	err = read(ctx, code, hdr, need);
	if (err)
		return err;
	/* a code object's type is named "code": its flags say nothing of it */
	type = get_u64(hdr + l->ob_type);
	if (!type)
		return -EBADMSG;
	err = read(ctx, type + l->tp_name, tb, sizeof(tb));
	if (err)
		return err;
	if (!get_u64(tb))
		return -EBADMSG;
	err = read(ctx, get_u64(tb), tname, sizeof(tname));
	if (err)
		return err;
	if (memcmp(tname, "code", sizeof(tname)))
		return -EBADMSG;

	memcpy(&first, hdr + l->co_firstlineno, sizeof(first));
	if (first < 0)
		return -EBADMSG;
	cn->firstlineno = (uint32_t)first;
	name_ptr = get_u64(hdr + (l->co_qualname ? l->co_qualname : l->co_name));
	err = read_str(l, read, ctx, name_ptr, out->qualname, sizeof(out->qualname));
	if (err)
		return err;
	err = read_str(l, read, ctx, get_u64(hdr + l->co_filename), out->file, sizeof(out->file));
	if (err)
		return err;
	err = bytes_locate(l, read, ctx, get_u64(hdr + l->co_linetable), &cn->table_addr, &cn->table_len);
	cn->table_big = err == -E2BIG;
	if (cn->table_big) {
		cn->table_len = 0;
		err = 0;
	}
	out->firstlineno = cn->firstlineno;
	out->line = 0;
	return err;
}

int pycode__resolve(const struct pycode_layout *l, pycode_read_fn read, void *ctx, uint64_t code,
		    uint64_t instr_off, struct pycode_info *out)
{
	struct code_names cn;
	uint8_t *table;
	int err;

	err = read_code(l, read, ctx, code, out, &cn);
	if (err)
		return err;
	if (cn.table_big)
		return 0;
	err = read_alloc(read, ctx, cn.table_addr, cn.table_len, &table);
	if (err)
		return err;
	out->line = pycode__line(l->version, table, cn.table_len, cn.firstlineno, instr_off);
	free(table);
	return 0;
}

/*
 * Lookups a held failure answers before the object is read again: garbage
 * costs a read in CACHE_FAIL_HITS, and a live object a read that failed once
 * (the process between two states) is named again.
 */
#define CACHE_FAIL_HITS	4

/* Bytes of line tables a cache holds in all; tables past it are read at each lookup. */
#define CACHE_TABLE_BUDGET	(2u << 20)

struct cache_slot {
	uint64_t code;
	unsigned version;	/* 0: empty */
	int err;		/* the held failure, or 0 */
	unsigned err_hits;	/* lookups the failure has answered */
	uint32_t check;		/* the names' hash read with them (0: not read) */
	char *qualname, *file;
	struct code_names cn;
	uint8_t *table;		/* NULL: not held (over the budget, or big) */
};

struct pycode_cache {
	struct cache_slot *slots;
	size_t mask;
	unsigned bits;		/* log2 of the slots */
	size_t table_bytes;
	uint64_t hits, misses;
};

struct pycode_cache *pycode_cache__new(size_t max_entries)
{
	struct pycode_cache *c;
	unsigned bits = 0;
	size_t n = 1;

	if (!max_entries || max_entries > (1u << 24)) {
		errno = EINVAL;
		return NULL;
	}
	while (n < max_entries) {
		n <<= 1;
		bits++;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->slots = calloc(n, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->mask = n - 1;
	c->bits = bits;
	return c;
}

static void slot_clear(struct pycode_cache *c, struct cache_slot *s)
{
	if (s->table)
		c->table_bytes -= s->cn.table_len;
	free(s->qualname);
	free(s->file);
	free(s->table);
	memset(s, 0, sizeof(*s));
}

void pycode_cache__clear(struct pycode_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i <= c->mask; i++)
		slot_clear(c, &c->slots[i]);
}

void pycode_cache__free(struct pycode_cache *c)
{
	if (!c)
		return;
	pycode_cache__clear(c);
	free(c->slots);
	free(c);
}

void pycode_cache__stats(const struct pycode_cache *c, uint64_t *hits, uint64_t *misses)
{
	*hits = c ? c->hits : 0;
	*misses = c ? c->misses : 0;
}

static size_t slot_index(const struct pycode_cache *c, uint64_t code)
{
	/* Fibonacci hashing: the product's top bits mix all of the address's */
	uint64_t h = code * 0x9e3779b97f4a7c15ull;

	return c->bits ? (size_t)(h >> (64 - c->bits)) : 0;
}

/* Fill @s for @code (and its names' hash where @check says where): a failure is held as well. */
static int slot_fill(struct pycode_cache *c, struct cache_slot *s, const struct pycode_layout *l,
		     pycode_read_fn read, void *ctx, uint64_t code, const struct pycode_check *check,
		     struct pycode_info *out)
{
	__u64 words[PY_CHECK_WORDS];
	int err;

	s->code = code;
	s->version = l->version;
	s->check = 0;
	if (check && check->words && check->words <= PY_CHECK_WORDS &&
	    !read(ctx, code + check->offset, words, check->words * 8))
		s->check = py_check_hash(words, check->words);
	err = read_code(l, read, ctx, code, out, &s->cn);
	if (err == -ENOMEM || err == -EINVAL) {
		/* ours, not the process's: nothing to hold */
		memset(s, 0, sizeof(*s));
		return err;
	}
	if (!err && !s->cn.table_big && c->table_bytes + s->cn.table_len <= CACHE_TABLE_BUDGET) {
		err = read_alloc(read, ctx, s->cn.table_addr, s->cn.table_len, &s->table);
		if (!err)
			c->table_bytes += s->cn.table_len;
		else if (err == -ENOMEM) {
			memset(s, 0, sizeof(*s));
			return err;
		}
	}
	if (!err) {
		s->qualname = strdup(out->qualname);
		s->file = strdup(out->file);
		if (!s->qualname || !s->file) {
			slot_clear(c, s);
			return -ENOMEM;
		}
	}
	s->err = err;
	return err;
}

int pycode_cache__lookup(struct pycode_cache *c, const struct pycode_layout *l, pycode_read_fn read,
			 void *ctx, uint64_t code, uint64_t instr_off, struct pycode_info *out)
{
	return pycode_cache__lookup_checked(c, l, read, ctx, code, instr_off, NULL, 0, out);
}

int pycode_cache__lookup_checked(struct pycode_cache *c, const struct pycode_layout *l,
				 pycode_read_fn read, void *ctx, uint64_t code, uint64_t instr_off,
				 const struct pycode_check *check, uint32_t want, struct pycode_info *out)
{
	struct cache_slot *s;
	uint8_t *table;
	int err;

	if (!c || !l)
		return -EINVAL;
	s = &c->slots[slot_index(c, code)];
	if (s->version == l->version && s->code == code && (!want || s->check == want) &&
	    (!s->err || ++s->err_hits < CACHE_FAIL_HITS)) {
		c->hits++;
		if (s->err)
			return s->err;
		/* held names came from these arrays: they fit */
		memcpy(out->qualname, s->qualname, strlen(s->qualname) + 1);
		memcpy(out->file, s->file, strlen(s->file) + 1);
		out->firstlineno = s->cn.firstlineno;
	} else {
		c->misses++;
		slot_clear(c, s);
		err = slot_fill(c, s, l, read, ctx, code, check, out);
		if (err)
			return err;
		/* another object now, or its names unread: held for the samples that saw it */
		if (want && s->check != want)
			return -ESTALE;
	}
	out->line = 0;
	if (s->cn.table_big)
		return 0;
	if (s->table) {
		out->line = pycode__line(l->version, s->table, s->cn.table_len, s->cn.firstlineno,
					 instr_off);
		return 0;
	}
	/* over the budget: the table again, from where it was */
	err = read_alloc(read, ctx, s->cn.table_addr, s->cn.table_len, &table);
	if (err)
		return err;
	out->line = pycode__line(l->version, table, s->cn.table_len, s->cn.firstlineno, instr_off);
	free(table);
	return 0;
}
