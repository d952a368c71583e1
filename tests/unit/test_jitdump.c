/* SPDX-License-Identifier: BSD-2-Clause */
/* The jitdump reader: dumps of every record kind in both byte orders, damage, a file read as it grows and rewritten, where .eh_frame stands. */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "testutil.h"
#include "jit/jitdump.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/*
 * The layouts, from tools/perf/util/jitdump.h and the writers (V8's
 * perf-jit.cc, CPython's perf_jit_trampoline.c): a 40-byte header, then
 * records of a 16-byte prefix (id, total_size, timestamp) and their fields,
 * in the byte order the magic tells.
 */

/* --- writing dumps --- */

static void dump_header(struct bytebuf *b, uint32_t total_size, uint64_t flags)
{
	bb_u32(b, JITDUMP_MAGIC);
	bb_u32(b, 1);
	bb_u32(b, total_size);
	bb_u32(b, EM_X86_64);
	bb_u32(b, 0xdeadbeef);
	bb_u32(b, 4242);
	bb_u64(b, 1000);
	if (total_size >= JITDUMP_HEADER_SIZE)
		bb_u64(b, flags);
	/* fields of a later version */
	while (b->len < total_size)
		bb_u8(b, 0xa5);
}

static size_t rec_begin(struct bytebuf *b, uint32_t id, uint64_t ts)
{
	size_t at = b->len;

	bb_u32(b, id);
	bb_u32(b, 0);
	bb_u64(b, ts);
	return at;
}

/* Pad to @align with zeros, as V8 pads DEBUG_INFO and UNWINDING_INFO, and set total_size. */
static void rec_end(struct bytebuf *b, size_t at, unsigned align)
{
	while ((b->len - at) % align)
		bb_u8(b, 0);
	bb_set(b, at + 4, b->len - at, 4);
}

static void rec_load(struct bytebuf *b, uint64_t ts, uint64_t addr, const char *name,
		     const void *code, size_t code_size, uint64_t index)
{
	size_t at = rec_begin(b, JITDUMP_CODE_LOAD, ts);

	bb_u32(b, 4242);
	bb_u32(b, 4243);
	bb_u64(b, addr);
	bb_u64(b, addr);
	bb_u64(b, code_size);
	bb_u64(b, index);
	bb_bytes(b, name, strlen(name) + 1);
	if (code_size)
		bb_bytes(b, code, code_size);
	rec_end(b, at, 1);
}

static void rec_move(struct bytebuf *b, uint64_t ts, uint64_t from, uint64_t to, uint64_t size,
		     uint64_t index)
{
	size_t at = rec_begin(b, JITDUMP_CODE_MOVE, ts);

	bb_u32(b, 4242);
	bb_u32(b, 4244);
	bb_u64(b, to);
	bb_u64(b, from);
	bb_u64(b, to);
	bb_u64(b, size);
	bb_u64(b, index);
	rec_end(b, at, 1);
}

struct entry {
	uint64_t addr;
	int32_t line, discrim;
	const char *file;
};

static void rec_debug(struct bytebuf *b, uint64_t ts, uint64_t code_addr,
		      const struct entry *e, size_t n)
{
	size_t at = rec_begin(b, JITDUMP_CODE_DEBUG_INFO, ts);

	bb_u64(b, code_addr);
	bb_u64(b, n);
	for (size_t i = 0; i < n; i++) {
		bb_u64(b, e[i].addr);
		bb_u32(b, (uint32_t)e[i].line);
		bb_u32(b, (uint32_t)e[i].discrim);
		bb_bytes(b, e[i].file, strlen(e[i].file) + 1);
	}
	rec_end(b, at, 8);
}

static void rec_unwind(struct bytebuf *b, uint64_t ts, const void *eh_frame, size_t eh_size,
		       const void *hdr, size_t hdr_size, uint64_t mapped)
{
	size_t at = rec_begin(b, JITDUMP_CODE_UNWINDING_INFO, ts);

	bb_u64(b, eh_size + hdr_size);
	bb_u64(b, hdr_size);
	bb_u64(b, mapped);
	if (eh_size)
		bb_bytes(b, eh_frame, eh_size);
	bb_bytes(b, hdr, hdr_size);
	rec_end(b, at, 8);
}

static void rec_raw(struct bytebuf *b, uint32_t id, uint64_t ts, const void *body, size_t len)
{
	size_t at = rec_begin(b, id, ts);

	if (len)
		bb_bytes(b, body, len);
	rec_end(b, at, 1);
}

/* --- reading them back as text --- */

struct text {
	char s[16384];
	size_t len;
};

__attribute__((format(printf, 2, 3)))
static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(t->s + t->len, sizeof(t->s) - t->len, fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(t->s) - t->len);
	t->len += (size_t)n;
}

static void put_bytes(struct text *t, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n && i < 8; i++)
		put(t, "%02x", p[i]);
}

static void put_name(struct text *t, const char *p, size_t n, bool cut)
{
	for (size_t i = 0; i < n; i++)
		put(t, (uint8_t)p[i] < 0x20 || (uint8_t)p[i] >= 0x7f ? "\\x%02x" : "%c",
		    (uint8_t)p[i]);
	if (cut)
		put(t, "[cut]");
}

/* One line per record: what a test expects to read. */
static void record_text(struct text *t, const struct jitdump_header *h,
			const struct jitdump_record *r)
{
	struct jitdump_line l;
	size_t off = 0;
	int ret;

	switch (r->id) {
	case JITDUMP_CODE_LOAD:
		put(t, "load %" PRIu64 " %" PRIu32 "/%" PRIu32 " %#" PRIx64 " %#" PRIx64 " +%" PRIu64
		    " #%" PRIu64 " ", r->timestamp, r->load.pid, r->load.tid, r->load.vma,
		    r->load.code_addr, r->load.code_size, r->load.code_index);
		put_name(t, r->load.name, r->load.name_len, r->load.name_cut);
		put(t, " code=");
		put_bytes(t, r->load.code, r->load.code_size);
		/* the name is NUL-terminated where the record says */
		assert_int_equal(r->load.name[strlen(r->load.name)], '\0');
		assert_ptr_equal(r->load.code, (const uint8_t *)r->load.name + strlen(r->load.name) + 1);
		break;
	case JITDUMP_CODE_MOVE:
		put(t, "move %" PRIu64 " %" PRIu32 "/%" PRIu32 " %#" PRIx64 " %#" PRIx64 "->%#" PRIx64
		    " +%" PRIu64 " #%" PRIu64, r->timestamp, r->move.pid, r->move.tid, r->move.vma,
		    r->move.old_code_addr, r->move.new_code_addr, r->move.code_size,
		    r->move.code_index);
		break;
	case JITDUMP_CODE_DEBUG_INFO:
		put(t, "debug %" PRIu64 " %#" PRIx64 " n=%" PRIu64, r->timestamp, r->debug.code_addr,
		    r->debug.nr_entry);
		while ((ret = jitdump_debug__next(h, r, &off, &l)) == 1) {
			put(t, " [%#" PRIx64 " %" PRId32 ":%" PRId32 " ", l.addr, l.line, l.discrim);
			put_name(t, l.file, l.file_len, l.file_cut);
			put(t, "]");
		}
		assert_int_equal(ret, 0);
		assert_int_equal(off, r->debug.entries_len);
		break;
	case JITDUMP_CODE_CLOSE:
		put(t, "close %" PRIu64, r->timestamp);
		break;
	case JITDUMP_CODE_UNWINDING_INFO:
		put(t, "unwind %" PRIu64 " %" PRIu64 "/%" PRIu64 "/%" PRIu64 " eh_frame=%zu:",
		    r->timestamp, r->unwind.unwinding_size, r->unwind.eh_frame_hdr_size,
		    r->unwind.mapped_size, r->unwind.eh_frame_size);
		put_bytes(t, r->unwind.eh_frame, r->unwind.eh_frame_size);
		put(t, " hdr=");
		put_bytes(t, r->unwind.eh_frame_hdr, (size_t)r->unwind.eh_frame_hdr_size);
		break;
	default:
		put(t, "id %" PRIu32 " %" PRIu64 " body=", r->id, r->timestamp);
		put_bytes(t, r->body, r->body_len);
		break;
	}
	assert_int_equal(r->body_len + JITDUMP_PREFIX_SIZE, r->size);
	put(t, "\n");
}

/* Read a whole dump from an exact-size heap copy, for the sanitizers. */
static void read_text(const uint8_t *data, size_t len, struct text *t)
{
	uint8_t *copy = memdup_exact_or_fail(data, len);
	struct jitdump_header h;
	struct jitdump_record r;
	char why[JITDUMP_WHY_MAX] = "";
	size_t off;
	int ret;

	t->len = 0;
	t->s[0] = '\0';
	ret = jitdump__header(copy, len, &h, why, sizeof(why));
	assert_int_equal(ret, 0);
	off = h.total_size;
	while ((ret = jitdump__next(&h, copy, len, &off, &r, why, sizeof(why))) == 1)
		record_text(t, &h, &r);
	if (ret)
		fprintf(stderr, "jitdump__next: %d %s\n", ret, why);
	assert_int_equal(ret, 0);
	assert_int_equal(off, len);
	free(copy);
}

/* --- the dump of every kind --- */

static const uint8_t code1[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3 };
static const uint8_t code2[] = { 0xc3 };
static const uint8_t eh_bytes[] = { 0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0 };
static const uint8_t hdr_bytes[20] = { 1, 0x1b, 0x03, 0x3b };
static const uint8_t odd_body[] = { 1, 2, 3 };

static const struct entry entries[] = {
	{ 0x7f0000001040, 1, 1, "/srv/app.js" },
	{ 0x7f0000001044, 12, 7, "\xff" },
	{ 0x7f0000001046, -1, 0, "" },
};

static void every_kind(struct bytebuf *b, bool big_endian)
{
	bb_init(b, big_endian);
	dump_header(b, JITDUMP_HEADER_SIZE, JITDUMP_FLAGS_ARCH_TIMESTAMP);
	rec_debug(b, 10, 0x7f0000001000, entries, N(entries));
	rec_unwind(b, 11, eh_bytes, sizeof(eh_bytes), hdr_bytes, sizeof(hdr_bytes), 32);
	rec_load(b, 12, 0x7f0000001000, "LazyCompile:*fib /srv/app.js:3", code1, sizeof(code1), 1);
	rec_raw(b, 99, 13, odd_body, sizeof(odd_body));
	rec_raw(b, 0xffffffff, 14, NULL, 0);
	rec_load(b, 15, 0x7f0000002000, "", code2, 0, 2);
	rec_load(b, 16, 0x7f0000003000, "py::f:/x.py", code2, sizeof(code2), 3);
	rec_move(b, 17, 0x7f0000001000, 0x7f0000004000, sizeof(code1), 1);
	rec_raw(b, JITDUMP_CODE_CLOSE, 18, NULL, 0);
	/* CODE_CLOSE with bytes: nothing in them is read */
	rec_raw(b, JITDUMP_CODE_CLOSE, 19, odd_body, sizeof(odd_body));
}

static const char every_kind_text[] =
	"debug 10 0x7f0000001000 n=3 [0x7f0000001040 1:1 /srv/app.js] [0x7f0000001044 12:7 \\xff]"
	" [0x7f0000001046 -1:0 ]\n"
	"unwind 11 32/20/32 eh_frame=12:1400000000000000 hdr=011b033b00000000\n"
	"load 12 4242/4243 0x7f0000001000 0x7f0000001000 +8 #1 LazyCompile:*fib /srv/app.js:3"
	" code=554889e5ffd15dc3\n"
	"id 99 13 body=010203\n"
	"id 4294967295 14 body=\n"
	"load 15 4242/4243 0x7f0000002000 0x7f0000002000 +0 #2  code=\n"
	"load 16 4242/4243 0x7f0000003000 0x7f0000003000 +1 #3 py::f:/x.py code=c3\n"
	"move 17 4242/4244 0x7f0000004000 0x7f0000001000->0x7f0000004000 +8 #1\n"
	"close 18\n"
	"close 19\n";

static void test_every_kind_both_orders(void **state)
{
	static struct bytebuf b;
	static struct text t;

	(void)state;
	for (int be = 0; be < 2; be++) {
		struct jitdump_header h;

		every_kind(&b, be);
		assert_int_equal(jitdump__header(b.data, b.len, &h, NULL, 0), 0);
		assert_int_equal(h.swapped, be != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__));
		assert_int_equal(h.version, 1);
		assert_int_equal(h.total_size, 40);
		assert_int_equal(h.elf_mach, EM_X86_64);
		assert_int_equal(h.pid, 4242);
		assert_int_equal(h.timestamp, 1000);
		assert_int_equal(h.flags, JITDUMP_FLAGS_ARCH_TIMESTAMP);
		read_text(b.data, b.len, &t);
		assert_string_equal(t.s, every_kind_text);
	}
}

/* --- headers --- */

struct header_case {
	const char *name;
	uint32_t magic, version, total_size;
	int want;		/* from the whole header */
	size_t decided_at;	/* bytes from which the answer is known; -EAGAIN before */
	const char *why;
};

static const struct header_case header_cases[] = {
	{ "known fields", JITDUMP_MAGIC, 1, 40, 0, 40, NULL },
	{ "without flags", JITDUMP_MAGIC, 1, 32, 0, 32, NULL },
	{ "more than known", JITDUMP_MAGIC, 1, 64, 0, 40, NULL },
	{ "not jitdump", 0x464c457f, 1, 40, -EBADMSG, 4, "not a jitdump file: magic 0x" },
	{ "perf.data", 0x32454c4946524550ull & 0xffffffff, 1, 40, -EBADMSG, 4, "magic" },
	{ "version 0", JITDUMP_MAGIC, 0, 40, -EBADMSG, 8, "jitdump version 0, not 1" },
	{ "version 2", JITDUMP_MAGIC, 2, 40, -EBADMSG, 8, "version 2" },
	{ "shorter than known", JITDUMP_MAGIC, 1, 31, -EBADMSG, 12, "header of 31 bytes" },
	{ "zero size", JITDUMP_MAGIC, 1, 0, -EBADMSG, 12, "header of 0 bytes" },
	{ "too large", JITDUMP_MAGIC, 1, JITDUMP_RECORD_MAX + 1, -EBADMSG, 12, "header of" },
};

static void test_headers(void **state)
{
	static struct bytebuf b;

	(void)state;
	for (size_t i = 0; i < N(header_cases); i++) {
		const struct header_case *c = &header_cases[i];

		for (int be = 0; be < 2; be++) {
			bb_init(&b, be);
			bb_u32(&b, c->magic);
			bb_u32(&b, c->version);
			bb_u32(&b, c->total_size);
			bb_u32(&b, EM_AARCH64);
			bb_u32(&b, 0);
			bb_u32(&b, 77);
			bb_u64(&b, 5);
			bb_u64(&b, 3);
			for (size_t len = 0; len <= b.len; len++) {
				uint8_t *copy = memdup_exact_or_fail(b.data, len);
				char why[JITDUMP_WHY_MAX] = "";
				struct jitdump_header h = { .pid = 1 };
				int ret = jitdump__header(copy, len, &h, why, sizeof(why));

				free(copy);
				if (len < c->decided_at) {
					if (ret != -EAGAIN)
						fail_msg("%s: %d at %zu bytes", c->name, ret, len);
					continue;
				}
				if (ret != c->want)
					fail_msg("%s (%s): %d at %zu bytes, want %d", c->name,
						 be ? "big-endian" : "little-endian", ret, len, c->want);
				if (ret) {
					assert_non_null(strstr(why, c->why));
					assert_int_equal(h.pid, 1);
					continue;
				}
				assert_int_equal(h.pid, 77);
				assert_int_equal(h.elf_mach, EM_AARCH64);
				assert_int_equal(h.timestamp, 5);
				/* flags only when the header says it has them */
				assert_int_equal(h.flags, c->total_size >= 40 ? 3 : 0);
				assert_int_equal(h.total_size, c->total_size);
			}
		}
	}
}

/* A 32-byte header without flags: the first record starts at byte 32. */
static void test_short_header(void **state)
{
	static struct bytebuf b;
	static struct text t;

	(void)state;
	bb_init(&b, false);
	dump_header(&b, 32, 0);
	rec_load(&b, 1, 0x1000, "f", code2, sizeof(code2), 0);
	read_text(b.data, b.len, &t);
	assert_string_equal(t.s, "load 1 4242/4243 0x1000 0x1000 +1 #0 f code=c3\n");
	/* and the extra bytes of a longer one are skipped */
	bb_init(&b, false);
	dump_header(&b, 100, 0);
	rec_raw(&b, JITDUMP_CODE_CLOSE, 2, NULL, 0);
	read_text(b.data, b.len, &t);
	assert_string_equal(t.s, "close 2\n");
}

/* --- damage --- */

struct damage_case {
	const char *name;
	void (*write)(struct bytebuf *b);
	const char *why;
	bool by_prefix;		/* told from the prefix, before the record is whole */
};

static void d_below_prefix(struct bytebuf *b)
{
	bb_u32(b, JITDUMP_CODE_CLOSE);
	bb_u32(b, 15);
	bb_u64(b, 0);
}

static void d_above_max(struct bytebuf *b)
{
	/* refused from the prefix alone: no reader waits for 64 MiB */
	bb_u32(b, JITDUMP_CODE_LOAD);
	bb_u32(b, JITDUMP_RECORD_MAX + 1);
	bb_u64(b, 0);
}

static void d_unknown_above_max(struct bytebuf *b)
{
	bb_u32(b, 1234);
	bb_u32(b, 0xffffffff);
	bb_u64(b, 0);
}

static void d_load_short(struct bytebuf *b)
{
	size_t at = rec_begin(b, JITDUMP_CODE_LOAD, 0);

	for (int i = 0; i < 39; i++)
		bb_u8(b, 0);
	rec_end(b, at, 1);
}

static void d_load_no_nul(struct bytebuf *b)
{
	size_t at = rec_begin(b, JITDUMP_CODE_LOAD, 0);

	bb_u32(b, 1);
	bb_u32(b, 1);
	bb_u64(b, 0x1000);
	bb_u64(b, 0x1000);
	bb_u64(b, 0);
	bb_u64(b, 0);
	bb_bytes(b, "name", 4);
	rec_end(b, at, 1);
}

static void d_load_code_past(struct bytebuf *b)
{
	size_t at = rec_begin(b, JITDUMP_CODE_LOAD, 0);

	bb_u32(b, 1);
	bb_u32(b, 1);
	bb_u64(b, 0x1000);
	bb_u64(b, 0x1000);
	bb_u64(b, 3);
	bb_u64(b, 0);
	bb_bytes(b, "f\0\xc3\xc3", 4);
	rec_end(b, at, 1);
}

static void d_load_code_huge(struct bytebuf *b)
{
	size_t at = rec_begin(b, JITDUMP_CODE_LOAD, 0);

	bb_u32(b, 1);
	bb_u32(b, 1);
	bb_u64(b, 0x1000);
	bb_u64(b, 0x1000);
	bb_u64(b, UINT64_MAX);
	bb_u64(b, 0);
	bb_bytes(b, "f\0\xc3", 3);
	rec_end(b, at, 1);
}

static void d_move_short(struct bytebuf *b)
{
	size_t at = rec_begin(b, JITDUMP_CODE_MOVE, 0);

	for (int i = 0; i < 47; i++)
		bb_u8(b, 0);
	rec_end(b, at, 1);
}

static void d_debug_short(struct bytebuf *b)
{
	size_t at = rec_begin(b, JITDUMP_CODE_DEBUG_INFO, 0);

	bb_u64(b, 0x1000);
	rec_end(b, at, 1);
}

static void d_debug_count(struct bytebuf *b)
{
	/* two entries said, one written; 8 bytes of V8's padding are no entry */
	size_t at = rec_begin(b, JITDUMP_CODE_DEBUG_INFO, 0);

	bb_u64(b, 0x1000);
	bb_u64(b, 2);
	bb_u64(b, 0x1000);
	bb_u32(b, 1);
	bb_u32(b, 0);
	bb_bytes(b, "a.js", 5);
	for (int i = 0; i < 16; i++)
		bb_u8(b, 0);
	rec_end(b, at, 1);
}

static void d_debug_count_huge(struct bytebuf *b)
{
	size_t at = rec_begin(b, JITDUMP_CODE_DEBUG_INFO, 0);

	bb_u64(b, 0x1000);
	bb_u64(b, UINT64_MAX);
	bb_u64(b, 0x1000);
	bb_u32(b, 1);
	bb_u32(b, 0);
	bb_bytes(b, "a.js", 5);
	rec_end(b, at, 8);
}

static void d_debug_no_nul(struct bytebuf *b)
{
	size_t at = rec_begin(b, JITDUMP_CODE_DEBUG_INFO, 0);

	bb_u64(b, 0x1000);
	bb_u64(b, 1);
	bb_u64(b, 0x1000);
	bb_u32(b, 1);
	bb_u32(b, 0);
	bb_bytes(b, "a.js", 4);
	rec_end(b, at, 1);
}

static void d_unwind_short(struct bytebuf *b)
{
	size_t at = rec_begin(b, JITDUMP_CODE_UNWINDING_INFO, 0);

	bb_u64(b, 0);
	bb_u64(b, 0);
	rec_end(b, at, 1);
}

static void d_unwind_past(struct bytebuf *b)
{
	size_t at = rec_begin(b, JITDUMP_CODE_UNWINDING_INFO, 0);

	bb_u64(b, 25);
	bb_u64(b, 20);
	bb_u64(b, 0);
	bb_bytes(b, hdr_bytes, sizeof(hdr_bytes));
	rec_end(b, at, 8);
}

static void d_unwind_hdr_above(struct bytebuf *b)
{
	size_t at = rec_begin(b, JITDUMP_CODE_UNWINDING_INFO, 0);

	bb_u64(b, 20);
	bb_u64(b, 21);
	bb_u64(b, 0);
	bb_bytes(b, hdr_bytes, sizeof(hdr_bytes));
	bb_u32(b, 0);
	rec_end(b, at, 1);
}

static const struct damage_case damage_cases[] = {
	{ "below its prefix", d_below_prefix, "record 3 of 15 bytes: less than its prefix", true },
	{ "above the maximum", d_above_max, "record 0 of 67108865 bytes: more than 67108864", true },
	{ "unknown above the maximum", d_unknown_above_max, "record 1234 of 4294967295 bytes", true },
	{ "load short", d_load_short, "CODE_LOAD of 55 bytes: its fields need 56", false },
	{ "load without NUL", d_load_no_nul, "CODE_LOAD: the name has no NUL inside the record", false },
	{ "load code past", d_load_code_past, "CODE_LOAD: code_size 3 past the record (2 bytes", false },
	{ "load code huge", d_load_code_huge, "code_size 18446744073709551615 past the record", false },
	{ "move short", d_move_short, "CODE_MOVE of 63 bytes: its fields need 64", false },
	{ "debug short", d_debug_short, "DEBUG_INFO of 24 bytes: its fields need 32", false },
	{ "debug count", d_debug_count, "DEBUG_INFO: entry 1 of 2 past the record", false },
	{ "debug count huge", d_debug_count_huge, "DEBUG_INFO: entry 1 of 18446744073709551615", false },
	{ "debug name without NUL", d_debug_no_nul, "entry 0's file name has no NUL", false },
	{ "unwind short", d_unwind_short, "UNWINDING_INFO of 32 bytes: its fields need 40", false },
	{ "unwind past", d_unwind_past, "unwinding_size 25 past the record (24 bytes)", false },
	{ "unwind header above", d_unwind_hdr_above, "eh_frame_hdr_size 21 above unwinding_size 20", false },
};

/* Each damage after a good record: the good one is read, the damage refused with its reason. */
static void test_damage(void **state)
{
	static struct bytebuf b;

	(void)state;
	for (size_t i = 0; i < N(damage_cases); i++) {
		const struct damage_case *c = &damage_cases[i];

		for (int be = 0; be < 2; be++) {
			struct jitdump_header h;
			struct jitdump_record r;
			char why[JITDUMP_WHY_MAX] = "";
			size_t off = JITDUMP_HEADER_SIZE, damage;
			uint8_t *copy;
			int ret;

			bb_init(&b, be);
			dump_header(&b, JITDUMP_HEADER_SIZE, 0);
			rec_raw(&b, JITDUMP_CODE_CLOSE, 1, NULL, 0);
			damage = b.len;
			c->write(&b);
			copy = memdup_exact_or_fail(b.data, b.len);
			assert_int_equal(jitdump__header(copy, b.len, &h, NULL, 0), 0);
			assert_int_equal(jitdump__next(&h, copy, b.len, &off, &r, why, sizeof(why)), 1);
			assert_int_equal(off, damage);
			ret = jitdump__next(&h, copy, b.len, &off, &r, why, sizeof(why));
			if (ret != -EBADMSG || !strstr(why, c->why))
				fail_msg("%s: %d '%s', want '%s'", c->name, ret, why, c->why);
			assert_int_equal(off, damage);
			/* no reason asked for: the same answer */
			assert_int_equal(jitdump__next(&h, copy, b.len, &off, &r, NULL, 0), -EBADMSG);
			/* cut short, a damaged record is waited for unless its prefix tells */
			for (size_t len = damage; len < b.len; len++) {
				bool told = c->by_prefix && len - damage >= JITDUMP_PREFIX_SIZE;

				ret = jitdump__next(&h, copy, len, &off, &r, NULL, 0);
				assert_int_equal(ret, told ? -EBADMSG : 0);
				assert_int_equal(off, damage);
			}
			free(copy);
		}
	}
}

/* Every cut of a good dump reads the records before the cut and waits at it. */
static void test_cuts(void **state)
{
	static struct bytebuf b;

	(void)state;
	every_kind(&b, false);
	for (size_t len = JITDUMP_HEADER_SIZE; len <= b.len; len++) {
		uint8_t *copy = memdup_exact_or_fail(b.data, len);
		struct jitdump_header h;
		struct jitdump_record r;
		size_t off = JITDUMP_HEADER_SIZE, last = off;
		int ret;

		assert_int_equal(jitdump__header(copy, len, &h, NULL, 0), 0);
		while ((ret = jitdump__next(&h, copy, len, &off, &r, NULL, 0)) == 1) {
			assert_true(off > last && off <= len);
			last = off;
		}
		assert_int_equal(ret, 0);
		assert_int_equal(off, last);
		assert_true(len - off < b.len);
		free(copy);
	}
	/* an offset past the bytes is the caller's mistake */
	{
		struct jitdump_header h;
		struct jitdump_record r;
		size_t off = b.len + 1;

		assert_int_equal(jitdump__header(b.data, b.len, &h, NULL, 0), 0);
		assert_int_equal(jitdump__next(&h, b.data, b.len, &off, &r, NULL, 0), -EINVAL);
	}
}

/* Names over JITDUMP_NAME_MAX come cut, with the code after the whole name. */
static void test_long_names(void **state)
{
	static struct bytebuf b;
	static char name[JITDUMP_NAME_MAX + 905];
	struct jitdump_header h;
	struct jitdump_record r;
	struct jitdump_line l;
	size_t lens[] = { 0, JITDUMP_NAME_MAX - 1, JITDUMP_NAME_MAX, JITDUMP_NAME_MAX + 1,
			  JITDUMP_NAME_MAX + 904 };

	(void)state;
	for (size_t i = 0; i < N(lens); i++) {
		bool cut = lens[i] > JITDUMP_NAME_MAX;
		struct entry e = { 0x2000, 3, 4, name };
		size_t off = JITDUMP_HEADER_SIZE, eoff = 0;
		uint8_t *copy;

		memset(name, 'n', lens[i]);
		name[lens[i]] = '\0';
		bb_init(&b, false);
		dump_header(&b, JITDUMP_HEADER_SIZE, 0);
		rec_load(&b, 1, 0x2000, name, code1, sizeof(code1), 9);
		copy = memdup_exact_or_fail(b.data, b.len);
		assert_int_equal(jitdump__header(copy, b.len, &h, NULL, 0), 0);
		assert_int_equal(jitdump__next(&h, copy, b.len, &off, &r, NULL, 0), 1);
		assert_int_equal(r.load.name_len, cut ? JITDUMP_NAME_MAX : lens[i]);
		assert_int_equal(r.load.name_cut, cut);
		assert_int_equal(strlen(r.load.name), lens[i]);
		assert_memory_equal(r.load.code, code1, sizeof(code1));
		assert_int_equal(off, b.len);
		free(copy);

		bb_init(&b, true);
		dump_header(&b, JITDUMP_HEADER_SIZE, 0);
		rec_debug(&b, 2, 0x2000, &e, 1);
		copy = memdup_exact_or_fail(b.data, b.len);
		off = JITDUMP_HEADER_SIZE;
		assert_int_equal(jitdump__header(copy, b.len, &h, NULL, 0), 0);
		assert_int_equal(jitdump__next(&h, copy, b.len, &off, &r, NULL, 0), 1);
		assert_int_equal(jitdump_debug__next(&h, &r, &eoff, &l), 1);
		assert_int_equal(l.file_len, cut ? JITDUMP_NAME_MAX : lens[i]);
		assert_int_equal(l.file_cut, cut);
		assert_int_equal(strlen(l.file), lens[i]);
		assert_int_equal(l.addr, 0x2000);
		assert_int_equal(l.line, 3);
		assert_int_equal(l.discrim, 4);
		assert_int_equal(jitdump_debug__next(&h, &r, &eoff, &l), 0);
		assert_int_equal(off, b.len);
		free(copy);
	}
}

/* The entry iterator on records it did not check: another kind, entries that do not fit. */
static void test_debug_iterator(void **state)
{
	static const uint8_t entry_cut[20] = { 0 };
	static const uint8_t no_nul[20] = { [16] = 'a', 'b', 'c', 'd' };
	struct jitdump_header h = { .version = 1 };
	struct jitdump_record r = { .id = JITDUMP_CODE_LOAD };
	struct jitdump_line l;
	size_t off = 0;

	(void)state;
	assert_int_equal(jitdump_debug__next(&h, &r, &off, &l), -EINVAL);
	r.id = JITDUMP_CODE_DEBUG_INFO;
	r.debug.entries = entry_cut;
	r.debug.entries_len = 16;
	assert_int_equal(jitdump_debug__next(&h, &r, &off, &l), -EBADMSG);
	r.debug.entries = no_nul;
	r.debug.entries_len = sizeof(no_nul);
	assert_int_equal(jitdump_debug__next(&h, &r, &off, &l), -EBADMSG);
	off = 21;
	assert_int_equal(jitdump_debug__next(&h, &r, &off, &l), -EINVAL);
	r.debug.entries_len = 0;
	off = 0;
	assert_int_equal(jitdump_debug__next(&h, &r, &off, &l), 0);
}

/* --- the file, read as it grows --- */

static int memfd_or_fail(void)
{
	int fd = memfd_create("jitdump", MFD_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

static void write_at(int fd, const void *p, size_t n, size_t at)
{
	assert_int_equal(pwrite(fd, p, n, (off_t)at), (ssize_t)n);
}

static int collect(void *ctx, const struct jitdump_header *h, const struct jitdump_record *r)
{
	record_text(ctx, h, r);
	return 0;
}

static struct jitdump_file *open_memfd(int *fd_out)
{
	int fd = memfd_or_fail();
	int dup_fd = dup(fd);
	struct jitdump_file *f;

	assert_true(dup_fd >= 0);
	f = jitdump_file__new(dup_fd);
	assert_non_null(f);
	*fd_out = fd;
	return f;
}

/* The dump written in two pieces, cut at every byte: the same records, once each. */
static void test_file_two_pieces(void **state)
{
	static struct bytebuf b;
	static struct text t;

	(void)state;
	for (int be = 0; be < 2; be++) {
		every_kind(&b, be);
		for (size_t cut = 0; cut <= b.len; cut++) {
			int fd, n;
			struct jitdump_file *f = open_memfd(&fd);

			t.len = 0;
			t.s[0] = '\0';
			write_at(fd, b.data, cut, 0);
			n = jitdump_file__poll(f, SIZE_MAX, collect, &t);
			assert_true(n >= 0);
			assert_int_equal(jitdump_file__header(f) != NULL, cut >= JITDUMP_HEADER_SIZE);
			write_at(fd, b.data + cut, b.len - cut, cut);
			assert_true(jitdump_file__poll(f, SIZE_MAX, collect, &t) >= 0);
			assert_string_equal(t.s, every_kind_text);
			assert_int_equal(jitdump_file__offset(f), b.len);
			assert_string_equal(jitdump_file__error(f), "");
			/* nothing new: nothing delivered */
			assert_int_equal(jitdump_file__poll(f, SIZE_MAX, collect, &t), 0);
			jitdump_file__free(f);
			close(fd);
		}
	}
}

/* Written a few bytes at a time, read a few bytes a poll: the work per poll is bounded. */
static void test_file_trickle(void **state)
{
	static struct bytebuf b;
	static struct text t;
	size_t steps[] = { 1, 3, 7, 16, 17, 100 };
	size_t budgets[] = { 0, 1, 5, 16, 64, SIZE_MAX };

	(void)state;
	every_kind(&b, true);
	for (size_t s = 0; s < N(steps); s++) {
		for (size_t k = 0; k < N(budgets); k++) {
			int fd;
			struct jitdump_file *f = open_memfd(&fd);
			size_t written = 0;

			t.len = 0;
			t.s[0] = '\0';
			while (written < b.len) {
				size_t n = b.len - written < steps[s] ? b.len - written : steps[s];
				uint64_t before = jitdump_file__offset(f);

				write_at(fd, b.data + written, n, written);
				written += n;
				assert_true(jitdump_file__poll(f, budgets[k], collect, &t) >= 0);
				/* a budget of B bytes moves past at most B bytes of new records */
				if (budgets[k] != SIZE_MAX && budgets[k])
					assert_true(jitdump_file__offset(f) - before <=
						    budgets[k] + JITDUMP_READ_CHUNK);
			}
			if (budgets[k] == 0) {
				/* nothing is read without a budget */
				assert_string_equal(t.s, "");
				assert_int_equal(jitdump_file__offset(f), 0);
			} else {
				while (jitdump_file__offset(f) < b.len)
					assert_true(jitdump_file__poll(f, budgets[k], collect, &t) >= 0);
				assert_string_equal(t.s, every_kind_text);
			}
			assert_true(jitdump_file__memory(f) <= 1024 + JITDUMP_READ_CHUNK + b.len);
			jitdump_file__free(f);
			close(fd);
		}
	}
}

/* A record larger than a read chunk is read whole, and the memory it took given back after it. */
static void test_file_large_record(void **state)
{
	size_t code_size = 3 * JITDUMP_READ_CHUNK + 5;
	size_t total = JITDUMP_PREFIX_SIZE + 40 + 2 + code_size;
	uint8_t *rec = calloc(1, total);
	static struct bytebuf b;
	static struct text t;
	int fd;
	struct jitdump_file *f = open_memfd(&fd);
	uint32_t u32;
	uint64_t u64;

	(void)state;
	assert_non_null(rec);
	bb_init(&b, false);
	dump_header(&b, JITDUMP_HEADER_SIZE, 0);
	write_at(fd, b.data, b.len, 0);
	u32 = JITDUMP_CODE_LOAD;
	memcpy(rec, &u32, 4);
	u32 = (uint32_t)total;
	memcpy(rec + 4, &u32, 4);
	u64 = code_size;
	memcpy(rec + JITDUMP_PREFIX_SIZE + 24, &u64, 8);
	rec[JITDUMP_PREFIX_SIZE + 40] = 'L';
	memset(rec + JITDUMP_PREFIX_SIZE + 42, 0xcc, code_size);
	write_at(fd, rec, total - 1, b.len);
	t.len = 0;
	assert_int_equal(jitdump_file__poll(f, SIZE_MAX, collect, &t), 0);
	assert_true(jitdump_file__memory(f) >= total - 1);
	write_at(fd, rec + total - 1, 1, b.len + total - 1);
	assert_int_equal(jitdump_file__poll(f, SIZE_MAX, collect, &t), 1);
	assert_string_equal(t.s, "load 0 0/0 0 0 +196613 #0 L code=cccccccccccccccc\n");
	/* small records after it: the buffer shrinks back */
	bb_init(&b, false);
	for (int i = 0; i < 4; i++)
		rec_raw(&b, JITDUMP_CODE_CLOSE, 7, NULL, 0);
	write_at(fd, b.data, b.len, JITDUMP_HEADER_SIZE + total);
	assert_int_equal(jitdump_file__poll(f, SIZE_MAX, NULL, NULL), 4);
	assert_true(jitdump_file__memory(f) < 2 * JITDUMP_READ_CHUNK);
	jitdump_file__free(f);
	close(fd);
	free(rec);
}

/* A prefix that claims 64 MiB gets no memory for bytes that are not in the file. */
static void test_file_claimed_size(void **state)
{
	static struct bytebuf b;
	int fd;
	struct jitdump_file *f = open_memfd(&fd);

	(void)state;
	bb_init(&b, false);
	dump_header(&b, JITDUMP_HEADER_SIZE, 0);
	bb_u32(&b, JITDUMP_CODE_LOAD);
	bb_u32(&b, JITDUMP_RECORD_MAX);
	bb_u64(&b, 0);
	write_at(fd, b.data, b.len, 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(jitdump_file__poll(f, SIZE_MAX, NULL, NULL), 0);
		assert_true(jitdump_file__memory(f) < 2 * JITDUMP_READ_CHUNK);
	}
	assert_int_equal(jitdump_file__offset(f), JITDUMP_HEADER_SIZE);
	jitdump_file__free(f);
	close(fd);
}

/* A header longer than the file so far: its extra bytes are waited for, never read. */
static void test_file_long_header(void **state)
{
	static struct bytebuf b;
	static struct text t;
	int fd;
	struct jitdump_file *f = open_memfd(&fd);

	(void)state;
	bb_init(&b, false);
	dump_header(&b, 200, 0);
	rec_raw(&b, JITDUMP_CODE_CLOSE, 5, NULL, 0);
	write_at(fd, b.data, 60, 0);
	t.len = 0;
	t.s[0] = '\0';
	assert_int_equal(jitdump_file__poll(f, SIZE_MAX, collect, &t), 0);
	assert_non_null(jitdump_file__header(f));
	assert_int_equal(jitdump_file__offset(f), 200);
	/* still there, not shrunk: nothing past byte 60 was read */
	assert_int_equal(jitdump_file__poll(f, SIZE_MAX, collect, &t), 0);
	assert_string_equal(jitdump_file__error(f), "");
	write_at(fd, b.data + 60, b.len - 60, 60);
	assert_int_equal(jitdump_file__poll(f, SIZE_MAX, collect, &t), 1);
	assert_string_equal(t.s, "close 5\n");
	assert_int_equal(jitdump_file__offset(f), b.len);
	jitdump_file__free(f);
	close(fd);
}

static int stop_at_second(void *ctx, const struct jitdump_header *h,
			  const struct jitdump_record *r)
{
	int *n = ctx;

	(void)h;
	(void)r;
	return ++*n == 2 ? -ECANCELED : 0;
}

/* A callback's error stops the poll; the next one goes on after that record. */
static void test_file_callback_stops(void **state)
{
	static struct bytebuf b;
	int fd, n = 0;
	struct jitdump_file *f = open_memfd(&fd);

	(void)state;
	every_kind(&b, false);
	write_at(fd, b.data, b.len, 0);
	assert_int_equal(jitdump_file__poll(f, SIZE_MAX, stop_at_second, &n), -ECANCELED);
	assert_int_equal(n, 2);
	assert_string_equal(jitdump_file__error(f), "");
	assert_int_equal(jitdump_file__poll(f, SIZE_MAX, NULL, NULL), 8);
	assert_int_equal(jitdump_file__offset(f), b.len);
	jitdump_file__free(f);
	close(fd);
}

struct rewrite_case {
	const char *name;
	size_t first;		/* bytes of the dump written before the first poll */
	void (*rewrite)(int fd, const struct bytebuf *b);
	int want;
	const char *why;
};

static void rw_truncate(int fd, const struct bytebuf *b)
{
	(void)b;
	assert_int_equal(ftruncate(fd, 60), 0);
}

static void rw_truncate_empty(int fd, const struct bytebuf *b)
{
	(void)b;
	assert_int_equal(ftruncate(fd, 0), 0);
}

/* O_TRUNC and a new run's header, longer by now than what was read */
static void rw_new_run(int fd, const struct bytebuf *b)
{
	static struct bytebuf again;

	assert_int_equal(ftruncate(fd, 0), 0);
	bb_init(&again, false);
	dump_header(&again, JITDUMP_HEADER_SIZE, JITDUMP_FLAGS_ARCH_TIMESTAMP);
	bb_set(&again, 24, 2000, 8);
	for (int i = 0; i < 40; i++)
		rec_raw(&again, JITDUMP_CODE_CLOSE, 7, NULL, 0);
	assert_true(again.len > b->len);
	write_at(fd, again.data, again.len, 0);
}

static void rw_pid(int fd, const struct bytebuf *b)
{
	static const uint8_t pid[4] = { 1, 2, 3, 4 };

	(void)b;
	write_at(fd, pid, sizeof(pid), 20);
}

/* the first bytes of a header, then another file's */
static void rw_partial_header(int fd, const struct bytebuf *b)
{
	static const uint8_t other[8] = { 0x44, 0x54, 0x69, 0x4a, 0, 0, 0, 1 };

	write_at(fd, other, sizeof(other), 0);
	write_at(fd, b->data + 8, b->len - 8, 8);
}

static void rw_append(int fd, const struct bytebuf *b)
{
	static struct bytebuf more;

	bb_init(&more, false);
	rec_raw(&more, JITDUMP_CODE_CLOSE, 20, NULL, 0);
	write_at(fd, more.data, more.len, b->len);
}

static const struct rewrite_case rewrite_cases[] = {
	{ "truncated", SIZE_MAX, rw_truncate, -EIO, "the file shrank from" },
	{ "truncated to nothing", SIZE_MAX, rw_truncate_empty, -EIO, "shrank from" },
	{ "a new run", SIZE_MAX, rw_new_run, -EIO, "the header changed" },
	{ "a new pid", SIZE_MAX, rw_pid, -EIO, "the header changed" },
	{ "half a header, then another", 12, rw_partial_header, -EIO, "the header changed" },
	{ "appended", SIZE_MAX, rw_append, 1, "" },
	{ "half a header, then the rest", 20, rw_append, 11, "" },
};

static void test_file_rewritten(void **state)
{
	static struct bytebuf b;

	(void)state;
	every_kind(&b, false);
	for (size_t i = 0; i < N(rewrite_cases); i++) {
		const struct rewrite_case *c = &rewrite_cases[i];
		size_t first = c->first < b.len ? c->first : b.len;
		int fd, ret;
		struct jitdump_file *f = open_memfd(&fd);

		write_at(fd, b.data, first, 0);
		assert_int_equal(jitdump_file__poll(f, SIZE_MAX, NULL, NULL),
				 first == b.len ? 10 : 0);
		if (first < b.len)
			write_at(fd, b.data + first, b.len - first, first);
		c->rewrite(fd, &b);
		ret = jitdump_file__poll(f, SIZE_MAX, NULL, NULL);
		if (ret != c->want || !strstr(jitdump_file__error(f), c->why))
			fail_msg("%s: %d '%s', want %d '%s'", c->name, ret, jitdump_file__error(f),
				 c->want, c->why);
		/* the error stays */
		if (c->want < 0)
			assert_int_equal(jitdump_file__poll(f, SIZE_MAX, NULL, NULL), c->want);
		jitdump_file__free(f);
		close(fd);
	}
}

/* Damage read from a file: the records before it, then the error with its offset, for good. */
static void test_file_damage(void **state)
{
	static struct bytebuf b;

	(void)state;
	for (size_t i = 0; i < N(damage_cases); i++) {
		const struct damage_case *c = &damage_cases[i];
		char want[JITDUMP_WHY_MAX + 32];
		int fd;
		struct jitdump_file *f = open_memfd(&fd);

		bb_init(&b, true);
		dump_header(&b, JITDUMP_HEADER_SIZE, 0);
		rec_raw(&b, JITDUMP_CODE_CLOSE, 1, NULL, 0);
		c->write(&b);
		write_at(fd, b.data, b.len, 0);
		assert_int_equal(jitdump_file__poll(f, SIZE_MAX, NULL, NULL), -EBADMSG);
		snprintf(want, sizeof(want), "offset 56: ");
		if (strncmp(jitdump_file__error(f), want, strlen(want)) ||
		    !strstr(jitdump_file__error(f), c->why))
			fail_msg("%s: '%s', want '%s...%s'", c->name, jitdump_file__error(f), want,
				 c->why);
		assert_int_equal(jitdump_file__offset(f), 56);
		assert_int_equal(jitdump_file__poll(f, SIZE_MAX, NULL, NULL), -EBADMSG);
		jitdump_file__free(f);
		close(fd);
	}
	/* a bad header */
	{
		int fd;
		struct jitdump_file *f = open_memfd(&fd);

		write_at(fd, "\x7f" "ELF", 4, 0);
		assert_int_equal(jitdump_file__poll(f, SIZE_MAX, NULL, NULL), -EBADMSG);
		assert_string_equal(jitdump_file__error(f),
				    "offset 0: not a jitdump file: magic 0x464c457f");
		jitdump_file__free(f);
		close(fd);
	}
	assert_null(jitdump_file__new(-1));
	assert_int_equal(errno, EBADF);
	jitdump_file__free(NULL);
}

/* --- where .eh_frame stands --- */

struct addr_case {
	uint64_t code_addr, code_size, eh_frame_size;
	uint64_t eh_frame, hdr;
};

static const struct addr_case addr_cases[] = {
	{ 0x1000, 0, 0, 0x1000, 0x1000 },
	{ 0x1000, 1, 56, 0x1008, 0x1040 },
	{ 0x1000, 8, 56, 0x1008, 0x1040 },
	/* CPython's x86-64 trampoline: 11 bytes */
	{ 0x7f5a3c001000, 11, 64, 0x7f5a3c001010, 0x7f5a3c001050 },
	/* the code's own alignment is not the point: its size is rounded */
	{ 0x1003, 5, 4, 0x100b, 0x100f },
	{ 0x1003, 9, 4, 0x1013, 0x1017 },
	/* modulo 2^64, as the pc-relative arithmetic is */
	{ UINT64_MAX - 3, 8, 8, 4, 12 },
};

static void test_eh_frame_addr(void **state)
{
	(void)state;
	for (size_t i = 0; i < N(addr_cases); i++) {
		const struct addr_case *c = &addr_cases[i];

		assert_int_equal(jitdump_eh_frame_addr(c->code_addr, c->code_size), c->eh_frame);
		assert_int_equal(jitdump_eh_frame_hdr_addr(c->code_addr, c->code_size,
							   c->eh_frame_size), c->hdr);
	}
}

/*
 * Unwinding data as CPython and V8 write it for code of @code_size bytes: a
 * CIE, one FDE whose pc_begin is -(round_up(code_size, 8) + the field's
 * offset), V8's zero terminator, then a 20-byte .eh_frame_hdr whose
 * eh_frame_ptr points back over the .eh_frame and whose one entry is
 * -(round_up(code_size, 8) + eh_frame_size) (datarel).
 */
static size_t unwinding_data(uint8_t *out, uint32_t code_size, size_t *eh_frame_size)
{
	static const uint8_t cie[] = {
		0x14, 0, 0, 0,		/* length */
		0, 0, 0, 0,		/* CIE id */
		1, 'z', 'R', 0,		/* version, augmentation */
		1, 0x78, 16,		/* code align 1, data align -8, RA r16 */
		1, 0x1b,		/* augmentation data: pcrel | sdata4 */
		0x0c, 7, 8,		/* def_cfa r7 (rsp) + 8 */
		0x90, 1,		/* r16 at cfa - 8 */
		0, 0,			/* nops to 24 bytes */
	};
	static const uint8_t program[] = {
		0x41, 0x0e, 16, 0x86, 2,	/* push %rbp */
		0x43, 0x0d, 6,			/* mov %rsp, %rbp */
		0x43, 0x0c, 7, 8,		/* call; pop %rbp */
	};
	uint32_t rounded = (code_size + 7) & ~7u, v;
	int32_t s;
	size_t at, fde, eh;

	memcpy(out, cie, sizeof(cie));
	at = fde = sizeof(cie);
	v = 4 + 4 + 4 + 1 + sizeof(program) + 3;	/* to a multiple of 8 with its length */
	memcpy(out + at, &v, 4);
	v = (uint32_t)(at + 4);				/* back to the CIE */
	memcpy(out + at + 4, &v, 4);
	s = -(int32_t)(rounded + at + 8);
	memcpy(out + at + 8, &s, 4);
	memcpy(out + at + 12, &code_size, 4);
	out[at + 16] = 0;
	memcpy(out + at + 17, program, sizeof(program));
	memset(out + at + 17 + sizeof(program), 0, 3);
	at += 4 + 4 + 4 + 4 + 1 + sizeof(program) + 3;
	memset(out + at, 0, 4);				/* terminator */
	at += 4;
	eh = at;
	out[at] = 1;
	out[at + 1] = 0x1b;
	out[at + 2] = 0x03;
	out[at + 3] = 0x3b;
	s = -(int32_t)(eh + 4);
	memcpy(out + at + 4, &s, 4);
	v = 1;
	memcpy(out + at + 8, &v, 4);
	s = -(int32_t)(rounded + eh);
	memcpy(out + at + 12, &s, 4);
	s = -(int32_t)(eh - fde);
	memcpy(out + at + 16, &s, 4);
	*eh_frame_size = eh;
	return eh + 20;
}

/*
 * The oracle: libsfunwind's .eh_frame reader, given the record's bytes at
 * the addresses jitdump_eh_frame_addr() names, finds through the header's
 * table and by a walk one function at exactly the code.
 */
static void test_eh_frame_lands_on_code(void **state)
{
	static const uint32_t sizes[] = { 8, 11, 13, 16, 200 };
	static const uint64_t addrs[] = { 0x7f5a3c001000, 0x55aa00000123 };

	(void)state;
	if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
		skip();
	for (size_t i = 0; i < N(sizes); i++) {
		for (size_t k = 0; k < N(addrs); k++) {
			static struct bytebuf b;
			uint8_t data[256];
			size_t eh_size, len = unwinding_data(data, sizes[i], &eh_size);
			struct jitdump_header h;
			struct jitdump_record r;
			size_t off = JITDUMP_HEADER_SIZE;

			bb_init(&b, false);
			dump_header(&b, JITDUMP_HEADER_SIZE, 0);
			rec_unwind(&b, 1, data, eh_size, data + eh_size, len - eh_size, len);
			assert_int_equal(jitdump__header(b.data, b.len, &h, NULL, 0), 0);
			assert_int_equal(jitdump__next(&h, b.data, b.len, &off, &r, NULL, 0), 1);
			assert_int_equal(r.unwind.eh_frame_size, eh_size);
			for (int use_hdr = 0; use_hdr < 2; use_hdr++) {
				struct sfu_eh_frame in = {
					.data = r.unwind.eh_frame,
					.size = r.unwind.eh_frame_size,
					.addr = jitdump_eh_frame_addr(addrs[k], sizes[i]),
					.hdr = use_hdr ? r.unwind.eh_frame_hdr : NULL,
					.hdr_size = use_hdr ? r.unwind.eh_frame_hdr_size : 0,
					.hdr_addr = jitdump_eh_frame_hdr_addr(addrs[k], sizes[i],
									      r.unwind.eh_frame_size),
					.machine = EM_X86_64,
				};
				struct sfu_eh_frame_stats st;
				struct sfu_sframe *sf = sfu_sframe__from_eh_frame(&in, &st, NULL);
				const struct sfu_fde *fde;

				assert_non_null(sf);
				if (st.used_hdr != use_hdr)
					fail_msg("size %u: used_hdr %d: %s", sizes[i], st.used_hdr, st.note);
				assert_int_equal(sfu_sframe__fde_count(sf), 1);
				fde = sfu_sframe__fde(sf, 0);
				assert_int_equal(fde->start, addrs[k]);
				assert_int_equal(fde->size, sizes[i]);
				sfu_sframe__free(sf);
			}
		}
	}
}

/*
 * Unwinding data as the writers themselves wrote it, cut from jitdumps of
 * `python3.13 -X perf_jit` (3.13.0, x86-64: its FDE's pc_begin is the
 * constant -0x30) and `node --perf-prof --perf-prof-unwinding-info` (20.20,
 * a TurboFan function; V8's FDE leaves out the last bytes of the code).
 */
static const uint8_t cpython_3130_unwind[] = {
	0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x7a, 0x52, 0x00, 0x01, 0x78, 0x10,
	0x01, 0x1b, 0x0c, 0x07, 0x08, 0x90, 0x01, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x1c, 0x00,
	0x00, 0x00, 0xd0, 0xff, 0xff, 0xff, 0x0b, 0x00, 0x00, 0x00, 0x00, 0x44, 0x0e, 0x10, 0x46,
	0x0e, 0x08, 0x00, 0x01, 0x1b, 0x03, 0x3b, 0xcc, 0xff, 0xff, 0xff, 0x01, 0x00, 0x00, 0x00,
	0xc0, 0xff, 0xff, 0xff, 0xe8, 0xff, 0xff, 0xff,
};
static const uint8_t node_20_unwind[] = {
	0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x7a, 0x4c, 0x52, 0x00, 0x01, 0x78,
	0x10, 0x02, 0xff, 0x1b, 0x0c, 0x07, 0x08, 0x90, 0x01, 0x00, 0x00, 0x00, 0x00, 0x28, 0x00,
	0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x5c, 0xfe, 0xff, 0xff, 0x7e, 0x01, 0x00, 0x00, 0x00,
	0x4f, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x03, 0x04, 0x01, 0x0d, 0x07, 0x41, 0x0e,
	0x08, 0x52, 0x0c, 0x06, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x01, 0x1b, 0x03, 0x3b, 0xb0, 0xff, 0xff, 0xff, 0x01, 0x00, 0x00, 0x00, 0x34, 0xfe,
	0xff, 0xff, 0xd0, 0xff, 0xff, 0xff,
};

struct real_case {
	const char *name;
	const uint8_t *data;
	size_t size;
	uint64_t code_addr, code_size;
	uint32_t fde_size;
};

static const struct real_case real_cases[] = {
	{ "CPython 3.13.0", cpython_3130_unwind, sizeof(cpython_3130_unwind), 0x7f46caa96000, 11, 11 },
	{ "Node 20", node_20_unwind, sizeof(node_20_unwind), 0x7fcc940061c0, 384, 382 },
};

static void test_eh_frame_real_writers(void **state)
{
	(void)state;
	if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
		skip();
	for (size_t i = 0; i < N(real_cases); i++) {
		const struct real_case *c = &real_cases[i];
		static struct bytebuf b;
		struct jitdump_header h;
		struct jitdump_record r;
		size_t off = JITDUMP_HEADER_SIZE;

		bb_init(&b, false);
		dump_header(&b, JITDUMP_HEADER_SIZE, 0);
		rec_unwind(&b, 1, c->data, c->size - 20, c->data + c->size - 20, 20, c->size);
		assert_int_equal(jitdump__header(b.data, b.len, &h, NULL, 0), 0);
		assert_int_equal(jitdump__next(&h, b.data, b.len, &off, &r, NULL, 0), 1);
		for (int use_hdr = 0; use_hdr < 2; use_hdr++) {
			struct sfu_eh_frame in = {
				.data = r.unwind.eh_frame,
				.size = r.unwind.eh_frame_size,
				.addr = jitdump_eh_frame_addr(c->code_addr, c->code_size),
				.hdr = use_hdr ? r.unwind.eh_frame_hdr : NULL,
				.hdr_size = use_hdr ? r.unwind.eh_frame_hdr_size : 0,
				.hdr_addr = jitdump_eh_frame_hdr_addr(c->code_addr, c->code_size,
								      r.unwind.eh_frame_size),
				.machine = EM_X86_64,
			};
			struct sfu_eh_frame_stats st;
			struct sfu_sframe *sf = sfu_sframe__from_eh_frame(&in, &st, NULL);

			assert_non_null(sf);
			if (st.used_hdr != use_hdr)
				fail_msg("%s: used_hdr %d: %s", c->name, st.used_hdr, st.note);
			assert_int_equal(sfu_sframe__fde_count(sf), 1);
			assert_int_equal(sfu_sframe__fde(sf, 0)->start, c->code_addr);
			assert_int_equal(sfu_sframe__fde(sf, 0)->size, c->fde_size);
			sfu_sframe__free(sf);
			/* the rounding matters: right after the code's last byte, the FDE misses it */
			if (c->code_size % 8) {
				in.addr = c->code_addr + c->code_size;
				in.hdr_addr = in.addr + r.unwind.eh_frame_size;
				sf = sfu_sframe__from_eh_frame(&in, &st, NULL);
				assert_non_null(sf);
				assert_int_not_equal(sfu_sframe__fde(sf, 0)->start, c->code_addr);
				sfu_sframe__free(sf);
			}
		}
	}
}

/* V8's unwinding record for code without unwinding information: a header alone. */
static void test_v8_empty_unwind(void **state)
{
	static struct bytebuf b;
	static struct text t;

	(void)state;
	bb_init(&b, false);
	dump_header(&b, JITDUMP_HEADER_SIZE, 0);
	rec_unwind(&b, 3, NULL, 0, hdr_bytes, sizeof(hdr_bytes), 0);
	read_text(b.data, b.len, &t);
	assert_string_equal(t.s, "unwind 3 20/20/0 eh_frame=0: hdr=011b033b00000000\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_kind_both_orders),
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_short_header),
		cmocka_unit_test(test_damage),
		cmocka_unit_test(test_cuts),
		cmocka_unit_test(test_long_names),
		cmocka_unit_test(test_debug_iterator),
		cmocka_unit_test(test_file_two_pieces),
		cmocka_unit_test(test_file_trickle),
		cmocka_unit_test(test_file_large_record),
		cmocka_unit_test(test_file_long_header),
		cmocka_unit_test(test_file_claimed_size),
		cmocka_unit_test(test_file_callback_stops),
		cmocka_unit_test(test_file_rewritten),
		cmocka_unit_test(test_file_damage),
		cmocka_unit_test(test_eh_frame_addr),
		cmocka_unit_test(test_eh_frame_lands_on_code),
		cmocka_unit_test(test_eh_frame_real_writers),
		cmocka_unit_test(test_v8_empty_unwind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
