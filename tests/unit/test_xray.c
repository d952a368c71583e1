/* SPDX-License-Identifier: BSD-2-Clause */
/* The XRay trace reader: hand-built traces of every record kind, v1-v5 and basic mode, both byte orders, damage. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "import/xray.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/*
 * The layouts, from llvm's lib/XRay (RecordInitializer.cpp, Trace.cpp,
 * FDRTraceExpander.cpp) and compiler-rt's xray_records.h, checked against
 * llvm-xray-16 fdr-dump on traces compiler-rt 16 wrote (tests/xray/dump):
 * - header: u16 version, u16 type, bitfield (constant_tsc, nonstop_tsc),
 *   u64 cycle frequency, u64 thread buffer size (FDR), 8 bytes reserved;
 * - function record: u32 of 1-bit discriminant 0, 3-bit kind, 28-bit id,
 *   then u32 tsc delta; metadata: 1-bit discriminant 1, 7-bit kind, then
 *   15 bytes: NewBuffer i32 tid; NewCPUId u16 cpu, u64 tsc; TSCWrap u64;
 *   WalltimeMarker u64 seconds, u32 microseconds; CustomEvent i32 size, u64
 *   tsc (v1-4), u16 cpu (v4), or i32 size, i32 delta (v5); CallArgument
 *   u64; BufferExtents u64; TypedEvent i32 size, i32 delta, u16 type; Pid
 *   i32. Event payloads follow the record.
 * - bitfields fill little-endian bytes from the least significant bit and
 *   big-endian ones from the most significant (the spec's rule).
 * - basic mode: 32-byte records: u16 record type (0), u8 cpu, u8 kind, i32
 *   function id, u64 tsc, u32 tid, u32 pid; or u16 type (1), 2 bytes, i32
 *   function id, u32 tid, u32 pid, u64 argument.
 */

#define FREQ 2500000000ULL
#define CONSTANT_TSC 1
#define NONSTOP_TSC 2

/* --- building traces --- */

static void hdr(struct bytebuf *b, uint16_t version, uint16_t type, uint64_t buffer_size,
		unsigned flags)
{
	uint8_t bits = b->big_endian ? (uint8_t)((flags & 1) << 7 | (flags & 2) << 5) :
				       (uint8_t)flags;

	bb_u16(b, version);
	bb_u16(b, type);
	bb_u8(b, bits);
	bb_u8(b, 0);
	bb_u8(b, 0);
	bb_u8(b, 0);
	bb_u64(b, FREQ);
	bb_u64(b, buffer_size);
	bb_u64(b, 0x5a5a5a5a5a5a5a5aULL);
}

static size_t meta(struct bytebuf *b, unsigned kind)
{
	size_t at = b->len;

	bb_u8(b, b->big_endian ? 0x80 | kind : kind << 1 | 1);
	return at;
}

/* Reserved bytes hold garbage, as compiler-rt leaves them. */
static void meta_pad(struct bytebuf *b, size_t at)
{
	while (b->len < at + 16)
		bb_u8(b, 0xa5);
}

static size_t fn(struct bytebuf *b, unsigned kind, uint32_t id, uint32_t delta)
{
	size_t at = b->len;

	bb_u32(b, b->big_endian ? kind << 28 | (id & 0x0fffffff) : kind << 1 | id << 4);
	bb_u32(b, delta);
	return at;
}

static size_t m_extents(struct bytebuf *b, uint64_t size)
{
	size_t at = meta(b, 7);

	bb_u64(b, size);
	meta_pad(b, at);
	return at;
}

/* Set the extents at @at to the bytes written since. */
static void extents_close(struct bytebuf *b, size_t at)
{
	bb_set(b, at + 1, b->len - at - 16, 8);
}

static void m_newbuf(struct bytebuf *b, uint32_t tid)
{
	size_t at = meta(b, 0);

	bb_u32(b, tid);
	meta_pad(b, at);
}

static void m_eob(struct bytebuf *b)
{
	meta_pad(b, meta(b, 1));
}

static void m_cpu(struct bytebuf *b, uint16_t cpu, uint64_t tsc)
{
	size_t at = meta(b, 2);

	bb_u16(b, cpu);
	bb_u64(b, tsc);
	meta_pad(b, at);
}

static void m_wrap(struct bytebuf *b, uint64_t tsc)
{
	size_t at = meta(b, 3);

	bb_u64(b, tsc);
	meta_pad(b, at);
}

static void m_wall(struct bytebuf *b, uint64_t s, uint32_t us)
{
	size_t at = meta(b, 4);

	bb_u64(b, s);
	bb_u32(b, us);
	meta_pad(b, at);
}

/* Custom event: version 5 takes a delta, older ones a tsc (and version 4 a cpu). */
static void m_custom(struct bytebuf *b, unsigned version, int32_t size, uint64_t tsc,
		     uint16_t cpu, const char *payload, size_t n)
{
	size_t at = meta(b, 5);

	bb_u32(b, (uint32_t)size);
	if (version >= 5) {
		bb_u32(b, tsc);
	} else {
		bb_u64(b, tsc);
		if (version == 4)
			bb_u16(b, cpu);
	}
	meta_pad(b, at);
	bb_bytes(b, payload, n);
}

static void m_arg(struct bytebuf *b, uint64_t v)
{
	size_t at = meta(b, 6);

	bb_u64(b, v);
	meta_pad(b, at);
}

static void m_typed(struct bytebuf *b, int32_t size, uint32_t delta, uint16_t type,
		    const char *payload, size_t n)
{
	size_t at = meta(b, 8);

	bb_u32(b, (uint32_t)size);
	bb_u32(b, delta);
	bb_u16(b, type);
	meta_pad(b, at);
	bb_bytes(b, payload, n);
}

static void m_pid(struct bytebuf *b, uint32_t pid)
{
	size_t at = meta(b, 9);

	bb_u32(b, pid);
	meta_pad(b, at);
}

/* A well-formed version 3-5 buffer of 96 bytes: 7 records, see GOOD(). */
static void good_buffer(struct bytebuf *b, uint32_t tid)
{
	size_t ext = m_extents(b, 0);

	m_newbuf(b, tid);
	m_wall(b, 10, 20);
	m_pid(b, 500);
	m_cpu(b, 1, 100);
	fn(b, 0, 1, 1);
	fn(b, 1, 1, 1);
	extents_close(b, ext);
}

static void basic_rec(struct bytebuf *b, uint8_t cpu, uint8_t kind, int32_t func, uint64_t tsc,
		      uint32_t tid, uint32_t pid)
{
	bb_u16(b, 0);
	bb_u8(b, cpu);
	bb_u8(b, kind);
	bb_u32(b, (uint32_t)func);
	bb_u64(b, tsc);
	bb_u32(b, tid);
	bb_u32(b, pid);
	bb_u64(b, 0xa5a5a5a5a5a5a5a5ULL);
}

static void basic_arg(struct bytebuf *b, int32_t func, uint32_t tid, uint32_t pid, uint64_t arg)
{
	bb_u16(b, 1);
	bb_u16(b, 0xa5a5);
	bb_u32(b, (uint32_t)func);
	bb_u32(b, tid);
	bb_u32(b, pid);
	bb_u64(b, arg);
	bb_u64(b, 0xa5a5a5a5a5a5a5a5ULL);
}

static void fill(struct bytebuf *b, uint8_t byte, size_t n)
{
	while (n--)
		bb_u8(b, byte);
}

/* --- what the reader should return --- */

struct want {
	int ret;		/* 1 record, 2 loss */
	uint8_t kind;
	uint64_t offset;
	int32_t func_id;
	uint32_t delta;
	uint64_t value, value2;
	int32_t event_size;
	uint16_t event_type, event_cpu;
	const char *payload;
	uint64_t tsc;
	uint32_t tid, pid;
	uint16_t cpu;
	uint64_t bytes;		/* loss */
	const char *reason;	/* loss: a part of its reason */
};

#define R(k, off, ...)	{ .ret = 1, .kind = XRAY_REC_##k, .offset = (off), __VA_ARGS__ }
#define LOSS(off, n, why) { .ret = 2, .offset = (off), .bytes = (n), .reason = (why) }
#define ST(t, p, c)	.tid = (t), .pid = (p), .cpu = (c)
#define FN(k, off, id, d, t, ...) R(k, off, .func_id = (id), .delta = (d), .tsc = (t), __VA_ARGS__)
/* The 7 records of good_buffer(@tid) at @off. */
#define GOOD(off, t)							\
	R(BUFFER_EXTENTS, off, .value = 80),				\
	R(NEW_BUFFER, (off) + 16, .value = (t), .tid = (t)),		\
	R(WALLTIME, (off) + 32, .value = 10, .value2 = 20, .tid = (t)),	\
	R(PID, (off) + 48, .value = 500, ST(t, 500, 0)),		\
	R(NEW_CPU, (off) + 64, .value = 100, .tsc = 100, ST(t, 500, 1)), \
	FN(ENTER, (off) + 80, 1, 1, 101, ST(t, 500, 1)),		\
	FN(EXIT, (off) + 88, 1, 1, 102, ST(t, 500, 1))

struct trace_case {
	const char *name;
	void (*build)(struct bytebuf *b);
	uint16_t version, type;
	uint64_t buffer_size;
	unsigned flags;
	const struct want *want;
	size_t n_want;
};

static const char *kind_str(uint8_t kind, char *buf, size_t len)
{
	snprintf(buf, len, "%u (%s)", kind, xray_rec_name(kind));
	return buf;
}

#define check_field(what, got, want)						\
	do {									\
		if ((uint64_t)(got) != (uint64_t)(want)) {			\
			print_error("%s: result %zu at 0x%" PRIx64 ": %s is %" PRIu64 \
				    " (0x%" PRIx64 "), expected %" PRIu64 " (0x%" PRIx64 ")\n", \
				    tc, i, w->offset, what, (uint64_t)(got), (uint64_t)(got), \
				    (uint64_t)(want), (uint64_t)(want));	\
			fail();							\
		}								\
	} while (0)

/*
 * Read @size bytes of @data (a heap copy of exactly that size) and compare
 * every result with @want, then expect the end.
 */
static void check_trace(const char *tc, const uint8_t *data, size_t size, const struct want *want,
			size_t n_want)
{
	char reason[160], kb[2][48];
	struct xray_reader *r = xray_reader__new(data, size, reason);
	struct xray_record rec;
	struct xray_loss loss;
	size_t i;
	int ret;

	if (!r) {
		print_error("%s: xray_reader__new: %s (%s)\n", tc, strerror(errno), reason);
		fail();
	}
	for (i = 0; i < n_want; i++) {
		const struct want *w = &want[i];

		memset(&rec, 0x5c, sizeof(rec));
		ret = xray_reader__next(r, &rec, &loss);
		if (ret != w->ret) {
			print_error("%s: result %zu: got %d (%s at 0x%" PRIx64 "%s%s), expected %d at 0x%"
				    PRIx64 "\n", tc, i, ret,
				    ret == 1 ? kind_str(rec.kind, kb[0], sizeof(kb[0])) : "loss",
				    ret == 1 ? rec.offset : ret == 2 ? loss.offset : 0,
				    ret == 2 ? ": " : "", ret == 2 ? loss.reason : "", w->ret,
				    w->offset);
			fail();
		}
		if (ret == 2) {
			check_field("loss offset", loss.offset, w->offset);
			check_field("loss bytes", loss.bytes, w->bytes);
			if (!strstr(loss.reason, w->reason)) {
				print_error("%s: result %zu: loss reason \"%s\" lacks \"%s\"\n", tc, i,
					    loss.reason, w->reason);
				fail();
			}
			continue;
		}
		if (rec.kind != w->kind) {
			print_error("%s: result %zu at 0x%" PRIx64 ": kind %s, expected %s\n", tc, i,
				    rec.offset, kind_str(rec.kind, kb[0], sizeof(kb[0])),
				    kind_str(w->kind, kb[1], sizeof(kb[1])));
			fail();
		}
		check_field("offset", rec.offset, w->offset);
		check_field("func_id", rec.func_id, w->func_id);
		check_field("tsc_delta", rec.tsc_delta, w->delta);
		check_field("value", rec.value, w->value);
		check_field("value2", rec.value2, w->value2);
		check_field("event_size", rec.event_size, w->event_size);
		check_field("event_type", rec.event_type, w->event_type);
		check_field("event_cpu", rec.event_cpu, w->event_cpu);
		check_field("tsc", rec.tsc, w->tsc);
		check_field("tid", rec.tid, w->tid);
		check_field("pid", rec.pid, w->pid);
		check_field("cpu", rec.cpu, w->cpu);
		if (w->payload) {
			/* in place: a pointer into the trace, right after the record */
			if (rec.payload != data + rec.offset + 16 ||
			    memcmp(rec.payload, w->payload, (size_t)w->event_size)) {
				print_error("%s: result %zu: payload not \"%s\" at offset 0x%" PRIx64
					    "\n", tc, i, w->payload, rec.offset + 16);
				fail();
			}
		} else if (rec.payload) {
			print_error("%s: result %zu: a payload where none is\n", tc, i);
			fail();
		}
	}
	ret = xray_reader__next(r, &rec, &loss);
	if (ret) {
		print_error("%s: after %zu results: got %d (%s at 0x%" PRIx64 "%s%s), expected the end\n",
			    tc, n_want, ret, ret == 1 ? kind_str(rec.kind, kb[0], sizeof(kb[0])) : "loss",
			    ret == 1 ? rec.offset : loss.offset, ret == 2 ? ": " : "",
			    ret == 2 ? loss.reason : "");
		fail();
	}
	/* and it stays at the end */
	assert_int_equal(xray_reader__next(r, &rec, &loss), 0);
	xray_reader__free(r);
}

static void run_case(const struct trace_case *c, bool big_endian)
{
	char tc[96];
	struct bytebuf b;
	const struct xray_header *h;
	struct xray_reader *r;
	uint8_t *data;

	snprintf(tc, sizeof(tc), "%s (%s-endian)", c->name, big_endian ? "big" : "little");
	bb_init(&b, big_endian);
	hdr(&b, c->version, c->type, c->buffer_size, c->flags);
	c->build(&b);
	data = memdup_exact_or_fail(b.data, b.len);

	r = xray_reader__new(data, b.len, NULL);
	if (!r) {
		print_error("%s: xray_reader__new: %s\n", tc, strerror(errno));
		fail();
	}
	h = xray_reader__header(r);
	assert_int_equal(h->version, c->version);
	assert_int_equal(h->type, c->type);
	assert_int_equal(h->big_endian, big_endian);
	assert_int_equal(h->constant_tsc, !!(c->flags & CONSTANT_TSC));
	assert_int_equal(h->nonstop_tsc, !!(c->flags & NONSTOP_TSC));
	assert_int_equal(h->cycle_freq, FREQ);
	assert_int_equal(h->buffer_size, c->type == XRAY_TRACE_FDR ? c->buffer_size : 0);
	xray_reader__free(r);

	check_trace(tc, data, b.len, c->want, c->n_want);
	free(data);
}

/* --- version 5: every record kind, TSC deltas, wraps, CPU changes --- */

static void build_v5(struct bytebuf *b)
{
	size_t ext = m_extents(b, 0);

	m_newbuf(b, 77);
	m_wall(b, 1000, 250);
	m_pid(b, 55);
	m_cpu(b, 3, 1000);
	fn(b, 0, 1, 10);
	fn(b, 3, 2, 5);
	m_arg(b, 0xdeadbeef);
	fn(b, 1, 2, 7);
	fn(b, 2, 1, 1);
	m_wrap(b, 5000);
	fn(b, 0, 0x0fffffff, 2);
	m_cpu(b, 1, 9000);
	fn(b, 1, 0x0fffffff, 4);
	m_custom(b, 5, 5, 3, 0, "hello", 5);
	m_typed(b, 3, 2, 9, "abc", 3);
	/* event deltas are signed: this one goes back a tick */
	m_custom(b, 5, 1, 0xffffffff, 0, "x", 1);
	/* function deltas are not */
	fn(b, 1, 1, 0xffffffff);
	extents_close(b, ext);

	/* a new buffer starts from nothing */
	ext = m_extents(b, 0);
	m_newbuf(b, 78);
	fn(b, 0, 4, 6);
	fn(b, 1, 4, 1);
	extents_close(b, ext);
}

static const struct want want_v5[] = {
	R(BUFFER_EXTENTS, 32, .value = 225),
	R(NEW_BUFFER, 48, .value = 77, .tid = 77),
	R(WALLTIME, 64, .value = 1000, .value2 = 250, .tid = 77),
	R(PID, 80, .value = 55, ST(77, 55, 0)),
	R(NEW_CPU, 96, .value = 1000, .tsc = 1000, ST(77, 55, 3)),
	FN(ENTER, 112, 1, 10, 1010, ST(77, 55, 3)),
	FN(ENTER_ARGS, 120, 2, 5, 1015, ST(77, 55, 3)),
	R(CALL_ARG, 128, .value = 0xdeadbeef, .tsc = 1015, ST(77, 55, 3)),
	FN(EXIT, 144, 2, 7, 1022, ST(77, 55, 3)),
	FN(TAIL_EXIT, 152, 1, 1, 1023, ST(77, 55, 3)),
	R(TSC_WRAP, 160, .value = 5000, .tsc = 5000, ST(77, 55, 3)),
	FN(ENTER, 176, 0x0fffffff, 2, 5002, ST(77, 55, 3)),
	R(NEW_CPU, 184, .value = 9000, .tsc = 9000, ST(77, 55, 1)),
	FN(EXIT, 200, 0x0fffffff, 4, 9004, ST(77, 55, 1)),
	R(CUSTOM_EVENT, 208, .delta = 3, .event_size = 5, .payload = "hello", .tsc = 9007,
	  ST(77, 55, 1)),
	R(TYPED_EVENT, 229, .delta = 2, .event_size = 3, .event_type = 9, .payload = "abc",
	  .tsc = 9009, ST(77, 55, 1)),
	R(CUSTOM_EVENT, 248, .delta = 0xffffffff, .event_size = 1, .payload = "x", .tsc = 9008,
	  ST(77, 55, 1)),
	FN(EXIT, 265, 1, 0xffffffff, 9008 + 0xffffffffULL, ST(77, 55, 1)),
	R(BUFFER_EXTENTS, 273, .value = 32),
	R(NEW_BUFFER, 289, .value = 78, .tid = 78),
	FN(ENTER, 305, 4, 6, 6, .tid = 78),
	FN(EXIT, 313, 4, 1, 7, .tid = 78),
};

/* --- version 4: custom events with an absolute tsc and a cpu --- */

static void build_v4(struct bytebuf *b)
{
	size_t ext = m_extents(b, 0);

	m_newbuf(b, 5);
	m_wall(b, 7, 999999);
	m_pid(b, 6);
	m_cpu(b, 2, 100);
	fn(b, 0, 7, 1);
	m_custom(b, 4, 2, 555, 9, "\0\xff", 2);
	fn(b, 1, 7, 2);
	extents_close(b, ext);
}

static const struct want want_v4[] = {
	R(BUFFER_EXTENTS, 32, .value = 98),
	R(NEW_BUFFER, 48, .value = 5, .tid = 5),
	R(WALLTIME, 64, .value = 7, .value2 = 999999, .tid = 5),
	R(PID, 80, .value = 6, ST(5, 6, 0)),
	R(NEW_CPU, 96, .value = 100, .tsc = 100, ST(5, 6, 2)),
	FN(ENTER, 112, 7, 1, 101, ST(5, 6, 2)),
	/* the event's own time; the buffer's stays where it was */
	R(CUSTOM_EVENT, 120, .value = 555, .event_size = 2, .event_cpu = 9, .payload = "\0\xff",
	  .tsc = 555, ST(5, 6, 2)),
	FN(EXIT, 138, 7, 2, 103, ST(5, 6, 2)),
};

/* --- version 3: custom events without a cpu --- */

static void build_v3(struct bytebuf *b)
{
	size_t ext = m_extents(b, 0);

	m_newbuf(b, 5);
	m_pid(b, 6);
	m_cpu(b, 0, 10);
	m_custom(b, 3, 1, 42, 0, "z", 1);
	fn(b, 0, 1, 1);
	extents_close(b, ext);
}

static const struct want want_v3[] = {
	R(BUFFER_EXTENTS, 32, .value = 73),
	R(NEW_BUFFER, 48, .value = 5, .tid = 5),
	R(PID, 64, .value = 6, ST(5, 6, 0)),
	R(NEW_CPU, 80, .value = 10, .tsc = 10, ST(5, 6, 0)),
	R(CUSTOM_EVENT, 96, .value = 42, .event_size = 1, .payload = "z", .tsc = 42, ST(5, 6, 0)),
	FN(ENTER, 113, 1, 1, 11, ST(5, 6, 0)),
};

/* --- version 2: extents, no pid; an empty buffer --- */

static void build_v2(struct bytebuf *b)
{
	size_t ext;

	m_extents(b, 0);
	ext = m_extents(b, 0);
	m_newbuf(b, 9);
	m_cpu(b, 1, 50);
	fn(b, 0, 3, 5);
	fn(b, 1, 3, 5);
	extents_close(b, ext);
}

static const struct want want_v2[] = {
	R(BUFFER_EXTENTS, 32, .value = 0),
	R(BUFFER_EXTENTS, 48, .value = 48),
	R(NEW_BUFFER, 64, .value = 9, .tid = 9),
	R(NEW_CPU, 80, .value = 50, .tsc = 50, ST(9, 0, 1)),
	FN(ENTER, 96, 3, 5, 55, ST(9, 0, 1)),
	FN(EXIT, 104, 3, 5, 60, ST(9, 0, 1)),
};

/* --- version 1: fixed-size buffers, EndOfBuffer, padding, a buffer the end cuts --- */

static void build_v1(struct bytebuf *b)
{
	/* buffer 1 (0x20-0xa0): EndOfBuffer, then padding that would not read */
	m_newbuf(b, 11);
	m_wall(b, 1, 2);
	m_cpu(b, 4, 1000);
	fn(b, 0, 1, 3);
	fn(b, 1, 1, 4);
	m_eob(b);
	fill(b, 0xff, 48);
	/* buffer 2 (0xa0-0x120): full to its last byte, no EndOfBuffer */
	m_newbuf(b, 12);
	m_wall(b, 1, 3);
	m_cpu(b, 5, 2000);
	fn(b, 0, 2, 1);
	fn(b, 1, 2, 1);
	m_wrap(b, 7000);
	for (int i = 0; i < 3; i++) {
		fn(b, 0, 3, 1);
		fn(b, 1, 3, 1);
	}
	/* buffer 3 (0x120-0x1a0): the trace ends 40 bytes into it */
	m_newbuf(b, 13);
	m_wall(b, 1, 4);
	fn(b, 0, 9, 2);
}

static const struct want want_v1[] = {
	R(NEW_BUFFER, 32, .value = 11, .tid = 11),
	R(WALLTIME, 48, .value = 1, .value2 = 2, .tid = 11),
	R(NEW_CPU, 64, .value = 1000, .tsc = 1000, ST(11, 0, 4)),
	FN(ENTER, 80, 1, 3, 1003, ST(11, 0, 4)),
	FN(EXIT, 88, 1, 4, 1007, ST(11, 0, 4)),
	R(END_OF_BUFFER, 96, .tsc = 1007, ST(11, 0, 4)),
	R(NEW_BUFFER, 160, .value = 12, .tid = 12),
	R(WALLTIME, 176, .value = 1, .value2 = 3, .tid = 12),
	R(NEW_CPU, 192, .value = 2000, .tsc = 2000, ST(12, 0, 5)),
	FN(ENTER, 208, 2, 1, 2001, ST(12, 0, 5)),
	FN(EXIT, 216, 2, 1, 2002, ST(12, 0, 5)),
	R(TSC_WRAP, 224, .value = 7000, .tsc = 7000, ST(12, 0, 5)),
	FN(ENTER, 240, 3, 1, 7001, ST(12, 0, 5)),
	FN(EXIT, 248, 3, 1, 7002, ST(12, 0, 5)),
	FN(ENTER, 256, 3, 1, 7003, ST(12, 0, 5)),
	FN(EXIT, 264, 3, 1, 7004, ST(12, 0, 5)),
	FN(ENTER, 272, 3, 1, 7005, ST(12, 0, 5)),
	FN(EXIT, 280, 3, 1, 7006, ST(12, 0, 5)),
	R(NEW_BUFFER, 288, .value = 13, .tid = 13),
	R(WALLTIME, 304, .value = 1, .value2 = 4, .tid = 13),
	FN(ENTER, 320, 9, 2, 2, .tid = 13),
	LOSS(328, 0, "the trace ends 40 bytes into the buffer at 0x120, which claims 128 bytes"),
};

/* --- version 1 with buffer_size 0: buffers one after the other, as llvm-xray reads them --- */

static void build_v1_seq(struct bytebuf *b)
{
	m_newbuf(b, 1);
	m_wall(b, 1, 1);
	m_cpu(b, 1, 10);
	fn(b, 0, 1, 1);
	m_eob(b);
	m_newbuf(b, 2);
	m_wall(b, 1, 2);
	m_cpu(b, 0, 20);
	fn(b, 1, 1, 1);
	m_eob(b);
	fill(b, 0xff, 8);
	m_newbuf(b, 3);
	m_wall(b, 1, 3);
	fn(b, 0, 5, 1);
}

static const struct want want_v1_seq[] = {
	R(NEW_BUFFER, 32, .value = 1, .tid = 1),
	R(WALLTIME, 48, .value = 1, .value2 = 1, .tid = 1),
	R(NEW_CPU, 64, .value = 10, .tsc = 10, ST(1, 0, 1)),
	FN(ENTER, 80, 1, 1, 11, ST(1, 0, 1)),
	R(END_OF_BUFFER, 88, .tsc = 11, ST(1, 0, 1)),
	R(NEW_BUFFER, 104, .value = 2, .tid = 2),
	R(WALLTIME, 120, .value = 1, .value2 = 2, .tid = 2),
	R(NEW_CPU, 136, .value = 20, .tsc = 20, ST(2, 0, 0)),
	FN(EXIT, 152, 1, 1, 21, ST(2, 0, 0)),
	R(END_OF_BUFFER, 160, .tsc = 21, ST(2, 0, 0)),
	LOSS(176, 8, "no NewBuffer record where a buffer should start"),
	R(NEW_BUFFER, 184, .value = 3, .tid = 3),
	R(WALLTIME, 200, .value = 1, .value2 = 3, .tid = 3),
	FN(ENTER, 216, 5, 1, 1, .tid = 3),
};

/* --- version 1 with a buffer_size past the end of the trace --- */

static void build_v1_huge(struct bytebuf *b)
{
	m_newbuf(b, 1);
	m_cpu(b, 0, 5);
	fn(b, 0, 1, 1);
	m_eob(b);
	/* padding of a buffer the trace does not hold whole: nothing lost */
	fill(b, 0xff, 24);
}

static const struct want want_v1_huge[] = {
	R(NEW_BUFFER, 32, .value = 1, .tid = 1),
	R(NEW_CPU, 48, .value = 5, .tsc = 5, ST(1, 0, 0)),
	FN(ENTER, 64, 1, 1, 6, ST(1, 0, 0)),
	R(END_OF_BUFFER, 72, .tsc = 6, ST(1, 0, 0)),
};

static void build_v1_huge_cut(struct bytebuf *b)
{
	m_newbuf(b, 1);
	fn(b, 0, 1, 1);
}

static const struct want want_v1_huge_cut[] = {
	R(NEW_BUFFER, 32, .value = 1, .tid = 1),
	FN(ENTER, 48, 1, 1, 1, .tid = 1),
	LOSS(56, 0, "the trace ends 24 bytes into the buffer at 0x20"),
};

/* --- version 1 damage: a buffer without NewBuffer, records crossing the buffer's end --- */

static void build_v1_damaged(struct bytebuf *b)
{
	/* buffer 1 (0x20-0x60): not a buffer */
	fill(b, 0xff, 64);
	/* buffer 2 (0x60-0xa0): full, no EndOfBuffer */
	m_newbuf(b, 2);
	m_wall(b, 1, 1);
	m_cpu(b, 0, 1);
	fn(b, 0, 1, 1);
	fn(b, 1, 1, 1);
	/* buffer 3 (0xa0-0xe0): an event that does not fit */
	m_newbuf(b, 3);
	m_wall(b, 1, 1);
	m_cpu(b, 0, 1);
	m_custom(b, 1, 8, 0, 0, "", 0);
	/* buffer 4 (0xe0-0x120): a BufferExtents record, unknown in version 1 */
	m_newbuf(b, 4);
	m_extents(b, 16);
	fn(b, 0, 1, 1);
	fn(b, 1, 1, 1);
	fill(b, 0, 16);
	/* buffer 5 (0x120-0x160): a record across its end */
	m_newbuf(b, 5);
	m_wall(b, 1, 1);
	m_cpu(b, 0, 1);
	fill(b, 0, 8);
	meta(b, 2);
	fill(b, 0x5a, 7);
	/* buffer 6 (0x160-0x1a0), which the trace holds up to its EndOfBuffer */
	m_newbuf(b, 6);
	m_eob(b);
}

static const struct want want_v1_damaged[] = {
	LOSS(32, 64, "buffer does not start with a NewBuffer record (buffer at 0x20)"),
	R(NEW_BUFFER, 96, .value = 2, .tid = 2),
	R(WALLTIME, 112, .value = 1, .value2 = 1, .tid = 2),
	R(NEW_CPU, 128, .value = 1, .tsc = 1, ST(2, 0, 0)),
	FN(ENTER, 144, 1, 1, 2, ST(2, 0, 0)),
	FN(EXIT, 152, 1, 1, 3, ST(2, 0, 0)),
	R(NEW_BUFFER, 160, .value = 3, .tid = 3),
	R(WALLTIME, 176, .value = 1, .value2 = 1, .tid = 3),
	R(NEW_CPU, 192, .value = 1, .tsc = 1, ST(3, 0, 0)),
	LOSS(208, 16, "CustomEvent of 8 bytes: 0 bytes left in the buffer (buffer at 0xa0)"),
	R(NEW_BUFFER, 224, .value = 4, .tid = 4),
	LOSS(240, 48, "BufferExtents record in a version 1 trace (buffer at 0xe0)"),
	R(NEW_BUFFER, 288, .value = 5, .tid = 5),
	R(WALLTIME, 304, .value = 1, .value2 = 1, .tid = 5),
	R(NEW_CPU, 320, .value = 1, .tsc = 1, ST(5, 0, 0)),
	/* eight zero bytes read as a function record: enter #0 */
	FN(ENTER, 336, 0, 0, 1, ST(5, 0, 0)),
	LOSS(344, 8, "NewCPUId record cut: 8 of its 16 bytes in the buffer (buffer at 0x120)"),
	R(NEW_BUFFER, 352, .value = 6, .tid = 6),
	R(END_OF_BUFFER, 368, .tid = 6),
};

/* --- basic mode --- */

static void build_basic(struct bytebuf *b)
{
	basic_rec(b, 2, 0, 7, 1000, 10, 20);
	basic_rec(b, 2, 3, 8, 1100, 10, 20);
	basic_arg(b, 8, 10, 20, 0x1234);
	basic_rec(b, 1, 1, 8, 1200, 11, 20);
	/* two records that cannot be read: one loss */
	basic_rec(b, 2, 9, 8, 1250, 11, 20);
	bb_u16(b, 5);
	fill(b, 0, 30);
	basic_rec(b, 0, 2, 7, 1300, 10, 20);
	fill(b, 0, 10);
}

static const struct want want_basic[] = {
	FN(ENTER, 32, 7, 0, 1000, ST(10, 20, 2)),
	FN(ENTER_ARGS, 64, 8, 0, 1100, ST(10, 20, 2)),
	R(CALL_ARG, 96, .func_id = 8, .value = 0x1234, .tsc = 1100, ST(10, 20, 2)),
	FN(EXIT, 128, 8, 0, 1200, ST(11, 20, 1)),
	LOSS(160, 64, "unknown function record type 9, and more records that cannot be read"),
	FN(TAIL_EXIT, 224, 7, 0, 1300, ST(10, 20, 0)),
	LOSS(256, 10, "10 trailing bytes: not a whole 32-byte record"),
};

/* --- versions 2-5: damage --- */

/* The last record cut in the middle. */
static void build_cut_record(struct bytebuf *b)
{
	good_buffer(b, 1);
	good_buffer(b, 2);
	b->len -= 4;
}

static const struct want want_cut_record[] = {
	GOOD(32, 1),
	R(BUFFER_EXTENTS, 128, .value = 80),
	R(NEW_BUFFER, 144, .value = 2, .tid = 2),
	R(WALLTIME, 160, .value = 10, .value2 = 20, .tid = 2),
	R(PID, 176, .value = 500, ST(2, 500, 0)),
	R(NEW_CPU, 192, .value = 100, .tsc = 100, ST(2, 500, 1)),
	FN(ENTER, 208, 1, 1, 101, ST(2, 500, 1)),
	LOSS(216, 4, "function record cut: 4 of its 8 bytes in the buffer (buffer at 0x80)"),
};

/* Cut between two records: the extents tell that bytes are missing. */
static void build_cut_between(struct bytebuf *b)
{
	good_buffer(b, 1);
	good_buffer(b, 2);
	b->len -= 8;
}

static const struct want want_cut_between[] = {
	GOOD(32, 1),
	R(BUFFER_EXTENTS, 128, .value = 80),
	R(NEW_BUFFER, 144, .value = 2, .tid = 2),
	R(WALLTIME, 160, .value = 10, .value2 = 20, .tid = 2),
	R(PID, 176, .value = 500, ST(2, 500, 0)),
	R(NEW_CPU, 192, .value = 100, .tsc = 100, ST(2, 500, 1)),
	FN(ENTER, 208, 1, 1, 101, ST(2, 500, 1)),
	LOSS(216, 0, "the trace ends 88 bytes into the buffer at 0x80, which claims 96 bytes"),
};

/* Extents that understate: the buffer's last record is where the next buffer should start. */
static void build_extents_short(struct bytebuf *b)
{
	good_buffer(b, 1);
	bb_set(b, 33, 72, 8);
	good_buffer(b, 2);
}

static const struct want want_extents_short[] = {
	R(BUFFER_EXTENTS, 32, .value = 72),
	R(NEW_BUFFER, 48, .value = 1, .tid = 1),
	R(WALLTIME, 64, .value = 10, .value2 = 20, .tid = 1),
	R(PID, 80, .value = 500, ST(1, 500, 0)),
	R(NEW_CPU, 96, .value = 100, .tsc = 100, ST(1, 500, 1)),
	FN(ENTER, 112, 1, 1, 101, ST(1, 500, 1)),
	LOSS(120, 8, "no BufferExtents record where a buffer should start"),
	GOOD(128, 2),
};

/* Extents that overstate, into the next buffer: a new buffer starts at its extents. */
static void build_extents_long(struct bytebuf *b)
{
	good_buffer(b, 1);
	bb_set(b, 33, 80 + 40, 8);
	good_buffer(b, 2);
	good_buffer(b, 3);
}

static const struct want want_extents_long[] = {
	R(BUFFER_EXTENTS, 32, .value = 120),
	R(NEW_BUFFER, 48, .value = 1, .tid = 1),
	R(WALLTIME, 64, .value = 10, .value2 = 20, .tid = 1),
	R(PID, 80, .value = 500, ST(1, 500, 0)),
	R(NEW_CPU, 96, .value = 100, .tsc = 100, ST(1, 500, 1)),
	FN(ENTER, 112, 1, 1, 101, ST(1, 500, 1)),
	FN(EXIT, 120, 1, 1, 102, ST(1, 500, 1)),
	LOSS(128, 0, "BufferExtents record inside the buffer at 0x20, whose extents claim 120 bytes"),
	GOOD(128, 2),
	GOOD(224, 3),
};

/* Extents of 2^64 - 1: no overflow, the same as any overstatement. */
static void build_extents_max(struct bytebuf *b)
{
	good_buffer(b, 1);
	bb_set(b, 33, UINT64_MAX, 8);
	good_buffer(b, 2);
}

static const struct want want_extents_max[] = {
	R(BUFFER_EXTENTS, 32, .value = UINT64_MAX),
	R(NEW_BUFFER, 48, .value = 1, .tid = 1),
	R(WALLTIME, 64, .value = 10, .value2 = 20, .tid = 1),
	R(PID, 80, .value = 500, ST(1, 500, 0)),
	R(NEW_CPU, 96, .value = 100, .tsc = 100, ST(1, 500, 1)),
	FN(ENTER, 112, 1, 1, 101, ST(1, 500, 1)),
	FN(EXIT, 120, 1, 1, 102, ST(1, 500, 1)),
	LOSS(128, 0, "BufferExtents record inside the buffer at 0x20"),
	GOOD(128, 2),
};

/* Event sizes past the buffer's end, zero and negative; then reading goes on. */
static void build_events_bad(struct bytebuf *b)
{
	size_t ext = m_extents(b, 0);

	m_newbuf(b, 1);
	m_custom(b, 5, 1000, 1, 0, "abcd", 4);
	extents_close(b, ext);
	good_buffer(b, 2);
	ext = m_extents(b, 0);
	m_newbuf(b, 3);
	m_typed(b, 0, 1, 1, "abcd", 4);
	extents_close(b, ext);
	ext = m_extents(b, 0);
	m_newbuf(b, 4);
	m_custom(b, 5, -5, 1, 0, "abcd", 4);
	extents_close(b, ext);
	good_buffer(b, 5);
}

static const struct want want_events_bad[] = {
	R(BUFFER_EXTENTS, 32, .value = 36),
	R(NEW_BUFFER, 48, .value = 1, .tid = 1),
	LOSS(64, 20, "CustomEvent of 1000 bytes: 4 bytes left in the buffer (buffer at 0x20)"),
	GOOD(84, 2),
	R(BUFFER_EXTENTS, 180, .value = 36),
	R(NEW_BUFFER, 196, .value = 3, .tid = 3),
	LOSS(212, 20, "TypedEvent of 0 bytes"),
	R(BUFFER_EXTENTS, 232, .value = 36),
	R(NEW_BUFFER, 248, .value = 4, .tid = 4),
	LOSS(264, 20, "CustomEvent of -5 bytes"),
	GOOD(284, 5),
};

/* Unknown kinds, EndOfBuffer after version 1, garbage between buffers, trailing bytes. */
static void build_unknown(struct bytebuf *b)
{
	size_t ext = m_extents(b, 0);

	m_newbuf(b, 1);
	meta_pad(b, meta(b, 12));
	fn(b, 0, 1, 1);
	extents_close(b, ext);
	ext = m_extents(b, 0);
	m_newbuf(b, 2);
	fn(b, 5, 1, 1);
	fn(b, 0, 1, 1);
	extents_close(b, ext);
	ext = m_extents(b, 0);
	m_newbuf(b, 3);
	m_eob(b);
	extents_close(b, ext);
	fill(b, 0xff, 8);
	good_buffer(b, 4);
	fill(b, 0, 10);
}

static const struct want want_unknown[] = {
	R(BUFFER_EXTENTS, 32, .value = 40),
	R(NEW_BUFFER, 48, .value = 1, .tid = 1),
	LOSS(64, 24, "unknown metadata record kind 12 (buffer at 0x20)"),
	R(BUFFER_EXTENTS, 88, .value = 32),
	R(NEW_BUFFER, 104, .value = 2, .tid = 2),
	LOSS(120, 16, "unknown function record type 5 (buffer at 0x58)"),
	R(BUFFER_EXTENTS, 136, .value = 32),
	R(NEW_BUFFER, 152, .value = 3, .tid = 3),
	/* the buffer's end is not followed by a buffer: found by looking */
	LOSS(168, 24, "EndOfBuffer record in a version 5 trace (buffer at 0x88)"),
	GOOD(192, 4),
	LOSS(288, 10, "trailing bytes too short for a BufferExtents record"),
};

/* Garbage between buffers that starts like a BufferExtents record. */
static void build_garbage_extents(struct bytebuf *b)
{
	good_buffer(b, 1);
	for (int i = 0; i < 5; i++) {
		meta(b, 7);
		bb_u8(b, 0);
		bb_u16(b, 0xffff);
	}
	good_buffer(b, 2);
}

static const struct want want_garbage_extents[] = {
	GOOD(32, 1),
	LOSS(128, 20, "BufferExtents record not followed by a NewBuffer record"),
	GOOD(148, 2),
};

/* A BufferExtents record inside a buffer that cannot start one: damage, not a new buffer. */
static void build_extents_inside(struct bytebuf *b)
{
	size_t ext = m_extents(b, 0);

	m_newbuf(b, 1);
	m_extents(b, 5);
	fn(b, 0, 1, 1);
	extents_close(b, ext);
	good_buffer(b, 2);
}

static const struct want want_extents_inside[] = {
	R(BUFFER_EXTENTS, 32, .value = 40),
	R(NEW_BUFFER, 48, .value = 1, .tid = 1),
	LOSS(64, 24, "BufferExtents record inside a buffer, not followed by a NewBuffer record "
	     "(buffer at 0x20)"),
	GOOD(88, 2),
};

#define CASE(n, v, t, bs, fl) { #n, build_##n, v, t, bs, fl, want_##n, N(want_##n) }

static const struct trace_case cases[] = {
	CASE(v5, 5, XRAY_TRACE_FDR, 4096, CONSTANT_TSC),
	CASE(v4, 4, XRAY_TRACE_FDR, 4096, CONSTANT_TSC | NONSTOP_TSC),
	CASE(v3, 3, XRAY_TRACE_FDR, 4096, 0),
	CASE(v2, 2, XRAY_TRACE_FDR, 0, NONSTOP_TSC),
	CASE(v1, 1, XRAY_TRACE_FDR, 128, NONSTOP_TSC),
	CASE(v1_seq, 1, XRAY_TRACE_FDR, 0, CONSTANT_TSC),
	CASE(v1_huge, 1, XRAY_TRACE_FDR, 1ULL << 40, CONSTANT_TSC),
	CASE(v1_huge_cut, 1, XRAY_TRACE_FDR, UINT64_MAX, CONSTANT_TSC),
	CASE(v1_damaged, 1, XRAY_TRACE_FDR, 64, CONSTANT_TSC),
	CASE(basic, 3, XRAY_TRACE_BASIC, 0, CONSTANT_TSC | NONSTOP_TSC),
	CASE(cut_record, 5, XRAY_TRACE_FDR, 4096, CONSTANT_TSC),
	CASE(cut_between, 5, XRAY_TRACE_FDR, 4096, CONSTANT_TSC),
	CASE(extents_short, 5, XRAY_TRACE_FDR, 4096, CONSTANT_TSC),
	CASE(extents_long, 3, XRAY_TRACE_FDR, 4096, CONSTANT_TSC),
	CASE(extents_max, 4, XRAY_TRACE_FDR, 4096, CONSTANT_TSC),
	CASE(events_bad, 5, XRAY_TRACE_FDR, 4096, CONSTANT_TSC),
	CASE(unknown, 5, XRAY_TRACE_FDR, 4096, CONSTANT_TSC),
	CASE(garbage_extents, 4, XRAY_TRACE_FDR, 4096, CONSTANT_TSC),
	CASE(extents_inside, 2, XRAY_TRACE_FDR, 0, CONSTANT_TSC),
};

static void test_traces(void **state)
{
	(void)state;
	for (size_t i = 0; i < N(cases); i++) {
		run_case(&cases[i], false);
		run_case(&cases[i], true);
	}
}

/* --- headers that are not read --- */

struct header_case {
	const char *name;
	uint8_t bytes[32];
	size_t len;
	int err;
	const char *reason;
};

static const struct header_case header_cases[] = {
	{ "empty", { 0 }, 0, EBADMSG, "0 bytes: too short" },
	{ "cut header", { 5, 0, 1, 0 }, 31, EBADMSG, "31 bytes: too short" },
	{ "zeros", { 0 }, 32, EBADMSG, "not an XRay trace" },
	{ "yaml", "---\nheader:\n  version: 1\n", 32, EBADMSG, "YAML" },
	{ "fdr version 6", { 6, 0, 1, 0 }, 32, ENOTSUP, "FDR trace version 6" },
	{ "fdr version 6 big-endian", { 0, 6, 0, 1 }, 32, ENOTSUP, "FDR trace version 6" },
	{ "basic version 4", { 4, 0, 0, 0 }, 32, ENOTSUP, "basic-mode trace version 4" },
	{ "type 2", { 1, 0, 2, 0 }, 32, ENOTSUP, "trace type 2" },
	{ "large version", { 0x00, 0x01, 0x01, 0x01 }, 32, EBADMSG, "not an XRay trace" },
};

static void test_headers(void **state)
{
	(void)state;
	for (size_t i = 0; i < N(header_cases); i++) {
		const struct header_case *c = &header_cases[i];
		char reason[160] = "unset";
		void *data = memdup_exact_or_fail(c->bytes, c->len);
		struct xray_reader *r;

		errno = 0;
		r = xray_reader__new(data, c->len, reason);
		if (r || errno != c->err || !strstr(reason, c->reason)) {
			print_error("%s: got %p errno %d reason \"%s\", expected errno %d and \"%s\"\n",
				    c->name, (void *)r, errno, reason, c->err, c->reason);
			fail();
		}
		free(data);
	}
	/* a header and nothing else is an empty trace, in both modes */
	for (int type = 0; type <= 1; type++) {
		struct bytebuf b;
		struct xray_reader *r;
		struct xray_record rec;

		bb_init(&b, false);
		hdr(&b, 3, (uint16_t)type, 0, 0);
		r = xray_reader__new(b.data, b.len, NULL);
		assert_non_null(r);
		assert_int_equal(xray_reader__next(r, &rec, NULL), 0);
		xray_reader__free(r);
	}
}

/* --- any damage: every cut and many corruptions of the cases, within bounds --- */

/* The reader's promises on any input; @return the number of results. */
static size_t check_invariants(const char *tc, const uint8_t *data, size_t size)
{
	struct xray_reader *r = xray_reader__new(data, size, NULL);
	struct xray_record rec;
	struct xray_loss loss;
	uint64_t floor = 0;	/* nothing may be returned before this */
	bool any_rec = false;
	uint64_t last_rec = 0;
	size_t n = 0;
	int ret;

	if (!r)
		return 0;
	while ((ret = xray_reader__next(r, &rec, &loss)) > 0) {
		bool bad;

		if (++n > 2 * size + 2) {
			print_error("%s: more results than bytes\n", tc);
			fail();
		}
		if (ret == 2) {
			bad = loss.offset < floor || loss.offset > size || loss.bytes > size - loss.offset ||
			      (any_rec && loss.offset <= last_rec) || !loss.reason[0];
			if (bad) {
				print_error("%s: loss at 0x%" PRIx64 " of %" PRIu64 " bytes (%s) out of "
					    "order or bounds (floor 0x%" PRIx64 ", size 0x%zx)\n", tc,
					    loss.offset, loss.bytes, loss.reason, floor, size);
				fail();
			}
			floor = loss.offset + loss.bytes;
			continue;
		}
		bad = rec.offset < floor || (any_rec && rec.offset <= last_rec) ||
		      rec.offset >= size || size - rec.offset < 8 ||
		      (rec.kind >= XRAY_REC_META_BASE && size - rec.offset < 16) ||
		      (rec.kind > XRAY_REC_ENTER_ARGS && rec.kind < XRAY_REC_META_BASE) ||
		      rec.kind > XRAY_REC_PID;
		if (rec.payload)
			bad |= rec.event_size <= 0 || rec.payload < data ||
			       rec.payload > data + size ||
			       (size_t)rec.event_size > (size_t)(data + size - rec.payload);
		if (bad) {
			print_error("%s: record %u at 0x%" PRIx64 " out of order or bounds\n", tc,
				    rec.kind, rec.offset);
			fail();
		}
		any_rec = true;
		last_rec = rec.offset;
	}
	assert_int_equal(ret, 0);
	xray_reader__free(r);
	return n;
}

static void test_any_damage(void **state)
{
	static const uint8_t values[] = { 0x00, 0xff, 0x01, 0x0f, 0x80, 0x87, 0x0b, 0x11 };
	struct test_rng rng;

	(void)state;
	rng_seed(&rng, 10);
	for (size_t i = 0; i < N(cases); i++) {
		for (int be = 0; be <= 1; be++) {
			const struct trace_case *c = &cases[i];
			struct bytebuf b;
			char tc[96];

			bb_init(&b, be);
			hdr(&b, c->version, c->type, c->buffer_size, c->flags);
			c->build(&b);
			for (size_t len = 0; len <= b.len; len++) {
				uint8_t *data = memdup_exact_or_fail(b.data, len);

				snprintf(tc, sizeof(tc), "%s cut at %zu", c->name, len);
				check_invariants(tc, data, len);
				free(data);
			}
			for (size_t at = 32; at < b.len; at++) {
				for (size_t v = 0; v < N(values); v++) {
					uint8_t *data = memdup_exact_or_fail(b.data, b.len);

					data[at] = values[v];
					snprintf(tc, sizeof(tc), "%s byte %zu = 0x%02x", c->name, at,
						 values[v]);
					check_invariants(tc, data, b.len);
					free(data);
				}
			}
			for (int k = 0; k < 200; k++) {
				uint8_t *data = memdup_exact_or_fail(b.data, b.len);

				for (int j = 0; j < 4; j++)
					data[rng_range(&rng, 32, (int64_t)b.len - 1)] =
						(uint8_t)rng_next(&rng);
				snprintf(tc, sizeof(tc), "%s random %d", c->name, k);
				check_invariants(tc, data, b.len);
				free(data);
			}
		}
	}
}

/* A cut anywhere costs the buffer it falls in, never the buffers before it. */
static void test_cut_costs_one_buffer(void **state)
{
	struct bytebuf b;

	(void)state;
	bb_init(&b, false);
	hdr(&b, 5, XRAY_TRACE_FDR, 4096, CONSTANT_TSC);
	for (uint32_t t = 1; t <= 4; t++)
		good_buffer(&b, t);
	for (size_t len = 32; len <= b.len; len++) {
		struct xray_reader *r = xray_reader__new(b.data, len, NULL);
		struct xray_record rec;
		struct xray_loss loss;
		size_t records = 0, losses = 0;
		/* whole buffers before the cut, and the records of the cut one before it */
		size_t whole = (len - 32) / 96, part = (len - 32) % 96;
		size_t want = whole * 7 + (part < 80 ? part / 16 : 5 + (part - 80) / 8);
		int ret;

		assert_non_null(r);
		while ((ret = xray_reader__next(r, &rec, &loss)) > 0) {
			if (ret == 1)
				records++;
			else
				losses++;
		}
		assert_int_equal(ret, 0);
		if (records != want || losses != (part != 0)) {
			print_error("cut at %zu: %zu records and %zu losses, expected %zu and %d\n",
				    len, records, losses, want, part != 0);
			fail();
		}
		xray_reader__free(r);
	}
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(xray_rec_name(XRAY_REC_ENTER), "Function");
	assert_string_equal(xray_rec_name(XRAY_REC_TAIL_EXIT), "Function");
	assert_string_equal(xray_rec_name(XRAY_REC_NEW_BUFFER), "NewBuffer");
	assert_string_equal(xray_rec_name(XRAY_REC_BUFFER_EXTENTS), "BufferExtents");
	assert_string_equal(xray_rec_name(XRAY_REC_PID), "PIDEntry");
	assert_string_equal(xray_rec_name(XRAY_REC_TYPED_EVENT), "TypedEvent");
	assert_string_equal(xray_rec_name(7), "Unknown");
	assert_string_equal(xray_rec_name(XRAY_REC_PID + 1), "Unknown");
	assert_string_equal(xray_rec_name(255), "Unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_traces),
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_any_damage),
		cmocka_unit_test(test_cut_costs_one_buffer),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
