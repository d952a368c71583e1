/* SPDX-License-Identifier: BSD-2-Clause */
/* Compact Backtrace Format: hand-derived vectors, Swift's vectors, round trips, malformed input. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/*
 * What Swift does, read from swiftlang/swift (facts, not code):
 *
 * stdlib/public/RuntimeModule/CompactBacktrace.swift (stored versions
 * 6e759e7ad8eb and 3220f5d7caba), Encoder.Iterator:
 * - emitNext(address:) computes absCount and deltaCount as the fewest bytes
 *   that sign-extend back to the address and to `address &- lastAddress`
 *   (counting redundant leading 0x00/0xff bytes at Address.bitWidth), and
 *   writes absolute only `if absCount < deltaCount`: ties go relative.
 *   lastAddress starts at 0, so the first frame is relative to 0 whenever
 *   its delta is as short as itself, which is always. Only pc/ra/async
 *   update lastAddress.
 * - Bytes go out most significant first (EightByteBuffer, from index
 *   8 - count).
 * - `.omittedFrames(count)`: `count <= 0x1f` goes in the instruction as
 *   count - 1 (so 0 would trap: UInt8(-1)); larger counts follow as the
 *   fewest big-endian bytes, x = 1 and the low bits byte count - 1.
 * - A frame equal to `lastFrame` (set for every frame written, omits
 *   included) starts a run: count = the number of further equal frames;
 *   `count <= 8` gives `rep` x = 0 with count - 1, else x = 1 and the fewest
 *   bytes of count. So `rep N` means N more copies.
 * - `.truncated` writes `trunc` and stops; the end of the frames writes
 *   `end` in 3220f5d7caba (nothing in the older 6e759e7ad8eb).
 *
 * Decoder.Iterator in the same file:
 * - a bad information byte (size 3, version != 0) gives an empty sequence;
 * - end of input where an instruction should be, a reserved opcode, or end
 *   of input inside an argument gives `.truncated`;
 * - `rep` with no previous frame gives `.truncated`; otherwise it returns
 *   the previous frame (which may be an omit) and sets repeatCount =
 *   count - 1, i.e. count copies in all;
 * - addresses: the first byte is sign-extended into a 64-bit word, further
 *   bytes are shifted in (any count up to 8, even above the word size), the
 *   result added to lastAddress (or replacing it) and truncated to the word.
 *
 * test/Backtracing/CompactBacktraceFormat.swift (stored version 6564eda7fae2):
 * - testRepeatLimit: `02 18 7f 8a 10 00 01 00` is "pc, absolute, 1-byte
 *   address 0x7f", "rep, external, 3-byte repeat count" 0x100001, end; it
 *   decodes to 1048578 frames (pc 0x7f and 0x100001 copies) and no
 *   truncation. The count is at maxRepeatCount (1_048_576) + 1; with
 *   `02 18 7f 8a 10 00 02` (one more) the decoder gives pc 0x7f then
 *   truncated. The bytes are hand-made: "The encoder never emits a rep with
 *   more repeats than maxRepeatCount". That is why the first frame is
 *   absolute here although the encoder would write `10 7f`.
 * - testAllInstructions: the frames pc 0x1000, ra 0x1010, ra 0xf10, async
 *   0x7fff00002000, omit 5, omit 1000, ra 0x2020 x2, pc 0x3030 x10,
 *   truncated round-trip (19 results). The bytes are not published; the
 *   vector below derives them from the rules above.
 *
 * Where this codec differs, on input no Swift encoder writes: a bad
 * information byte gives TRUNCATED rather than nothing; a `rep` whose byte
 * count is 0 repeats 0 times (the specification) where Swift yields one copy;
 * a count with more bytes than the word is malformed (the specification
 * says "up to the machine word length"; Swift shifts the excess out).
 */

/* A run of @times equal results; tables list results as runs. */
struct run {
	uint8_t kind;
	uint64_t value;
	uint64_t times;
};

#define R(k, v, t)	{ SFU_CBF_##k, (v), (t) }
#define F(k, v)		R(k, v, 1)
#define END		{ SFU_CBF_END, 0, 1 }
#define TRUNC		{ SFU_CBF_TRUNCATED, 0, 1 }
#define BYTES(...)	.bytes = (const uint8_t[]){ __VA_ARGS__ }, \
			.len = sizeof((const uint8_t[]){ __VA_ARGS__ })
#define RUNS(...)	.runs = (const struct run[]){ __VA_ARGS__ }, \
			.nruns = sizeof((const struct run[]){ __VA_ARGS__ }) / sizeof(struct run)

struct vector {
	const char *name;
	unsigned word;		/* for encoding; decoding reads it from the bytes */
	bool encode;		/* our encoder writes exactly these bytes for these results */
	unsigned flags;		/* SFU_CBF_DEC_* */
	const uint8_t *bytes;
	size_t len;
	const struct run *runs;
	size_t nruns;
};

static const struct vector vectors[] = {
	/*
	 * Swift's published vector (CompactBacktraceFormat.swift, testRepeatLimit):
	 * 02 info: version 0, size 2 = 64-bit
	 * 18 0001 1 000: pc, absolute, 1 byte: 7f
	 * 8a 1000 1 010: rep, count in 3 bytes: 10 00 01 = 0x100001 more copies
	 * 00 end
	 */
	{ "swift-repeat-limit", 64, false, 0,
	  BYTES(0x02, 0x18, 0x7f, 0x8a, 0x10, 0x00, 0x01, 0x00),
	  RUNS(R(PC, 0x7f, 0x100002), END) },
	/*
	 * The same frames from an encoder: Swift's (and ours) writes the first
	 * address relative to 0, a tie: 10 = pc, relative, 1 byte, 7f.
	 */
	{ "swift-repeat-limit-encoded", 64, true, 0,
	  BYTES(0x02, 0x10, 0x7f, 0x8a, 0x10, 0x00, 0x01, 0x00),
	  RUNS(R(PC, 0x7f, 0x100002), END) },
	/*
	 * Swift's testAllInstructions frames, bytes derived from its encoder rules:
	 * 02          64-bit
	 * 11 10 00    pc 0x1000: abs 2 bytes, delta from 0 2 bytes, tie -> relative
	 * 20 10       ra 0x1010: delta 0x10 (1) < abs (2) -> relative
	 * 21 ff 00    ra 0xf10: delta -0x100 = ff00 (2), abs 0f10 (2), tie -> relative
	 * 35 7f ff 00 00 10 f0
	 *             async 0x7fff00002000: delta 0x7fff000010f0 (6), abs (6) -> relative
	 * 44          omit 5: inline, 5 - 1 = 4
	 * 61 03 e8    omit 1000 > 31: x = 1, 2 bytes 03e8
	 * 29 20 20    ra 0x2020: abs 2 < delta -0x7ffeffffffe0 (6) -> absolute
	 * 80          1 more ra 0x2020: rep, inline, 1 - 1 = 0
	 * 11 10 10    pc 0x3030: delta 0x1010 (2), abs (2) -> relative
	 * 88 09       9 more pc 0x3030 > 8: rep x = 1, 1 byte 09
	 * 01          trunc
	 */
	{ "swift-all-instructions", 64, true, 0,
	  BYTES(0x02, 0x11, 0x10, 0x00, 0x20, 0x10, 0x21, 0xff, 0x00,
		0x35, 0x7f, 0xff, 0x00, 0x00, 0x10, 0xf0, 0x44, 0x61, 0x03, 0xe8,
		0x29, 0x20, 0x20, 0x80, 0x11, 0x10, 0x10, 0x88, 0x09, 0x01),
	  RUNS(F(PC, 0x1000), F(RA, 0x1010), F(RA, 0xf10), F(ASYNC, 0x7fff00002000),
	       F(OMIT, 5), F(OMIT, 1000), R(RA, 0x2020, 2), R(PC, 0x3030, 10), TRUNC) },
	/*
	 * 16-bit, every instruction form:
	 * 00          info: size 0 = 16-bit
	 * 11 12 34    pc 0x1234: abs 2, delta 2, tie -> relative
	 * 20 0c       ra 0x1240: delta 0x0c (1)
	 * 21 ee c0    ra 0x0100: delta -0x1140 = eec0 (2), abs 0100 (2) -> relative
	 * 38 f0       async 0xfff0: abs f0 sign-extends to fff0 (1) < delta fef0 (2)
	 * 5e          omit 31: inline, 31 - 1 = 0x1e
	 * 60 20       omit 32: x = 1, 1 byte
	 * 21 01 10    ra 0x0100: delta 0x0110 from fff0 (2), abs (2) -> relative
	 * 87          8 more: rep inline 8 - 1
	 * 21 00 80    ra 0x0180: delta 0x80 needs 00 80 (2), abs (2) -> relative
	 * 89 01 2c    300 more: rep x = 1, 2 bytes 012c
	 * 60 00       omit 0: cannot be inline (count + 1), x = 1, 1 byte 00
	 * 00          end
	 */
	{ "w16-all-forms", 16, true, 0,
	  BYTES(0x00, 0x11, 0x12, 0x34, 0x20, 0x0c, 0x21, 0xee, 0xc0, 0x38, 0xf0, 0x5e,
		0x60, 0x20, 0x21, 0x01, 0x10, 0x87, 0x21, 0x00, 0x80, 0x89, 0x01, 0x2c,
		0x60, 0x00, 0x00),
	  RUNS(F(PC, 0x1234), F(RA, 0x1240), F(RA, 0x100), F(ASYNC, 0xfff0), F(OMIT, 31),
	       F(OMIT, 32), R(RA, 0x100, 9), R(RA, 0x180, 301), F(OMIT, 0), END) },
	/*
	 * 16-bit wrap-around:
	 * 00
	 * 10 fe       pc 0xfffe: delta from 0 is fffe = -2 (1), abs (1), tie -> relative
	 * 20 03       ra 0x0001: delta 0x0003 mod 2^16 (1), abs 01 (1), tie -> relative
	 * 28 80       ra 0xff80: abs 80 (1) < delta ff7f (2) -> absolute
	 * 00
	 */
	{ "w16-wrap", 16, true, 0,
	  BYTES(0x00, 0x10, 0xfe, 0x20, 0x03, 0x28, 0x80, 0x00),
	  RUNS(F(PC, 0xfffe), F(RA, 0x0001), F(RA, 0xff80), END) },
	/*
	 * 32-bit:
	 * 01          info: size 1 = 32-bit
	 * 13 7f ff 12 34  pc 0x7fff1234: abs 4, delta 4, tie -> relative
	 * 22 00 ed cc ra 0x80000000: delta 0xedcc needs 00 ed cc (3) < abs (4, its
	 *             top bit is set and no shorter form sign-extends to it)
	 * 29 ff 00    ra 0xffffff00: abs ff00 (2) < delta 0x7fffff00 (4)
	 * 38 10       async 0x10: abs (1) < delta 0x110 (2)
	 * 20 00       ra 0x10: another kind, not a rep; delta 0 (1), abs (1), tie
	 * 80          1 more ra 0x10
	 * 62 01 11 70 omit 70000: x = 1, 3 bytes
	 * 80          omit 70000 again: Swift's encoder repeats omits too
	 * 01          trunc
	 */
	{ "w32-all-forms", 32, true, 0,
	  BYTES(0x01, 0x13, 0x7f, 0xff, 0x12, 0x34, 0x22, 0x00, 0xed, 0xcc, 0x29, 0xff, 0x00,
		0x38, 0x10, 0x20, 0x00, 0x80, 0x62, 0x01, 0x11, 0x70, 0x80, 0x01),
	  RUNS(F(PC, 0x7fff1234), F(RA, 0x80000000), F(RA, 0xffffff00), F(ASYNC, 0x10),
	       R(RA, 0x10, 2), R(OMIT, 70000, 2), TRUNC) },
	/*
	 * 64-bit, relative widths 1 to 8, absolute 1 and 2:
	 * 02
	 * 10 40                      pc 0x40: tie at 1 -> relative
	 * 20 40                      ra 0x80: delta 0x40 (1) < abs 00 80 (2)
	 * 21 7f 7f                   ra 0x7fff: delta 0x7f7f (2), abs (2), tie
	 * 22 7f 80 01                ra 0x800000: delta 0x7f8001 (3) < abs 00 80 00 00 (4)
	 * 23 7f 80 00 00             ra 0x80000000: delta 0x7f800000 (4) < abs (5)
	 * 24 7f 80 00 00 00          ra 0x8000000000: delta (5) < abs (6)
	 * 25 7f 80 00 00 00 00       ra 0x800000000000: delta (6) < abs (7)
	 * 26 7f 80 00 00 00 00 00    ra 0x80000000000000: delta (7) < abs (8)
	 * 28 80                      ra -0x80: abs 80 (1) < delta -0x80000000000080 (8)
	 * 37 80 00 00 00 00 00 00 7f async 0x7fffffffffffffff: delta 0x800000000000007f
	 *                            (8), abs (8), tie -> relative
	 * 19 10 00                   pc 0x1000: abs (2) < delta 0x8000000000001001 (8)
	 * 20 ff                      ra 0xfff: delta -1 (1) < abs 0f ff (2)
	 * 89 12 34                   0x1234 more: rep x = 1, 2 bytes
	 * 67 ff ff ff ff ff ff ff ff omit 2^64 - 1: x = 1, 8 bytes
	 * 00
	 */
	{ "w64-widths", 64, true, 0,
	  BYTES(0x02, 0x10, 0x40, 0x20, 0x40, 0x21, 0x7f, 0x7f, 0x22, 0x7f, 0x80, 0x01,
		0x23, 0x7f, 0x80, 0x00, 0x00, 0x24, 0x7f, 0x80, 0x00, 0x00, 0x00,
		0x25, 0x7f, 0x80, 0x00, 0x00, 0x00, 0x00,
		0x26, 0x7f, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x28, 0x80,
		0x37, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7f, 0x19, 0x10, 0x00,
		0x20, 0xff, 0x89, 0x12, 0x34,
		0x67, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00),
	  RUNS(F(PC, 0x40), F(RA, 0x80), F(RA, 0x7fff), F(RA, 0x800000), F(RA, 0x80000000),
	       F(RA, 0x8000000000), F(RA, 0x800000000000), F(RA, 0x80000000000000),
	       F(RA, 0xffffffffffffff80), F(ASYNC, 0x7fffffffffffffff), F(PC, 0x1000),
	       R(RA, 0xfff, 0x1235), F(OMIT, UINT64_MAX), END) },
	/* Nothing but the end: 02 00, and 00 01 for a 16-bit truncated empty stack. */
	{ "w64-empty", 64, true, 0, BYTES(0x02, 0x00), RUNS(END) },
	{ "w16-empty-trunc", 16, true, 0, BYTES(0x00, 0x01), RUNS(TRUNC) },
	/*
	 * Forms no encoder of ours writes, which the specification allows:
	 * 1f 00 00 00 00 00 00 00 7f  pc, absolute, 8 bytes (not the fewest)
	 * 8f 00 00 00 00 00 00 00 02  rep, 8 count bytes (the word size) = 2
	 * 00
	 */
	{ "w64-wide-forms", 64, false, 0,
	  BYTES(0x02, 0x1f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7f,
		0x8f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00),
	  RUNS(R(PC, 0x7f, 3), END) },
	/* The specification's example: 0xff on a 32-bit backtrace is 0xffffffff. */
	{ "w32-sign-extend", 32, true, 0, BYTES(0x01, 0x10, 0xff, 0x00), RUNS(F(PC, 0xffffffff), END) },
	/*
	 * 16-bit, an address wider than the word: Swift keeps the low bits.
	 * 1b 12 34 56 78  pc, absolute, 4 bytes -> 0x5678
	 * 20 02           ra, relative +2 -> 0x567a
	 */
	{ "w16-wide-address", 16, false, 0, BYTES(0x00, 0x1b, 0x12, 0x34, 0x56, 0x78, 0x20, 0x02, 0x00),
	  RUNS(F(PC, 0x5678), F(RA, 0x567a), END) },
	/* rep with a 1-byte count of 0 (88 00) repeats nothing. */
	{ "rep-zero", 64, false, 0, BYTES(0x02, 0x10, 0x01, 0x88, 0x00, 0x20, 0x01, 0x00),
	  RUNS(F(PC, 1), F(RA, 2), END) },
	/* rep after an omit repeats the omit (40 = omit 1, 81 = 2 more). */
	{ "rep-omit", 32, true, 0, BYTES(0x01, 0x40, 0x81, 0x00), RUNS(R(OMIT, 1, 3), END) },
	/* No end, in a buffer of known length: END with SFU_CBF_DEC_END_OPTIONAL. */
	{ "end-optional", 64, false, SFU_CBF_DEC_END_OPTIONAL, BYTES(0x02, 0x10, 0x05, 0x80),
	  RUNS(R(PC, 5, 2), END) },
};

/* Expand runs into a malloc()ed array of results. */
static struct sfu_cbf_frame *expand(const struct run *runs, size_t nruns, size_t *n)
{
	struct sfu_cbf_frame *f;
	size_t total = 0, k = 0;

	for (size_t i = 0; i < nruns; i++)
		total += runs[i].times;
	f = malloc((total ? total : 1) * sizeof(*f));
	assert_non_null(f);
	for (size_t i = 0; i < nruns; i++)
		for (uint64_t t = 0; t < runs[i].times; t++)
			f[k++] = (struct sfu_cbf_frame){ .kind = runs[i].kind, .value = runs[i].value };
	*n = total;
	return f;
}

/* Decode from an exact-size heap copy into a malloc()ed array, up to and including END or TRUNCATED. */
static struct sfu_cbf_frame *decode_all(const uint8_t *bytes, size_t len, unsigned flags, size_t *n,
					struct sfu_cbf_dec *dec_out)
{
	uint8_t *copy = memdup_exact_or_fail(bytes, len);
	size_t cap = 64, k = 0;
	struct sfu_cbf_frame *f = malloc(cap * sizeof(*f));
	struct sfu_cbf_dec dec;
	struct sfu_cbf_frame r;

	assert_non_null(f);
	sfu_cbf_dec__init(&dec, copy, len, flags, NULL);
	while (sfu_cbf_dec__next(&dec, &r) == 0) {
		if (k == cap) {
			cap *= 2;
			f = realloc(f, cap * sizeof(*f));
			assert_non_null(f);
		}
		f[k++] = r;
	}
	/* once finished, it stays finished */
	assert_int_equal(sfu_cbf_dec__next(&dec, &r), -ENOENT);
	free(copy);
	dec.data = NULL;
	if (dec_out)
		*dec_out = dec;
	*n = k;
	return f;
}

/* Encode @n results at @word into a malloc()ed buffer of SFU_CBF_BOUND(n) bytes. */
static uint8_t *encode_all(unsigned word, const struct sfu_cbf_frame *f, size_t n, size_t *len)
{
	size_t cap = SFU_CBF_BOUND(n);
	uint8_t *buf = malloc(cap);
	struct sfu_cbf_enc enc;

	assert_non_null(buf);
	assert_int_equal(sfu_cbf_enc__init(&enc, word, buf, cap), 0);
	assert_int_equal(sfu_cbf_encode_frames(&enc, f, n), 0);
	*len = sfu_cbf_enc__len(&enc);
	assert_true(*len <= cap);
	return buf;
}

static void test_vector(void **state)
{
	const struct vector *v = *state;
	size_t want_n, got_n, arr_n;
	struct sfu_cbf_frame *want = expand(v->runs, v->nruns, &want_n);
	struct sfu_cbf_frame *got = decode_all(v->bytes, v->len, v->flags, &got_n, NULL);
	struct sfu_cbf_frame *arr = malloc(want_n * sizeof(*arr));
	struct sfu_diag diag = { 0 };
	unsigned word = 0;

	assert_cbf_frames_equal(got, got_n, want, want_n);

	/* the array form agrees, and reads the word size */
	assert_non_null(arr);
	assert_int_equal(sfu_cbf_decode(v->bytes, v->len, v->flags, arr, want_n, &arr_n, &word,
					&diag), 0);
	assert_cbf_frames_equal(arr, arr_n, want, want_n);
	assert_int_equal(word, v->word);

	if (v->encode) {
		size_t len;
		uint8_t *bytes = encode_all(v->word, want, want_n, &len);

		assert_bytes_equal(bytes, len, v->bytes, v->len);
		free(bytes);
	}
	free(arr);
	free(got);
	free(want);
}

/* Inputs that must end in TRUNCATED with a reason, after the results before the fault. */
struct bad {
	const char *name;
	const uint8_t *bytes;
	size_t len;
	const struct run *runs;	/* what comes before TRUNCATED */
	size_t nruns;
	size_t pos;		/* where the fault is reported */
	const char *why;	/* part of the reason */
};

static const struct bad bads[] = {
	{ "empty", .len = 0, .bytes = (const uint8_t[]){ 0 }, .pos = 0, .why = "no information byte" },
	{ "size-3", BYTES(0x03, 0x10, 0x01, 0x00), .pos = 0, .why = "reserved word size" },
	{ "version-1", BYTES(0x06, 0x10, 0x01, 0x00), .pos = 0, .why = "version" },
	{ "version-63", BYTES(0xfe, 0x00), .pos = 0, .why = "version" },
	/* premature end, in each place an instruction has bytes */
	{ "no-end", BYTES(0x02, 0x10, 0x01), RUNS(F(PC, 1)), .pos = 3, .why = "without an end" },
	{ "info-only", BYTES(0x01), .pos = 1, .why = "without an end" },
	{ "end-in-address", BYTES(0x02, 0x10, 0x01, 0x22, 0x00, 0x01), RUNS(F(PC, 1)), .pos = 3,
	  .why = "inside the address" },
	{ "end-in-address-8", BYTES(0x02, 0x1f, 0, 0, 0, 0, 0, 0, 0), .pos = 1,
	  .why = "inside the address" },
	{ "end-in-omit", BYTES(0x02, 0x61, 0x01), .pos = 1, .why = "inside the omit count" },
	{ "end-in-rep", BYTES(0x02, 0x10, 0x01, 0x89, 0x01), RUNS(F(PC, 1)), .pos = 3,
	  .why = "inside the rep count" },
	/* rep with nothing to repeat */
	{ "rep-first", BYTES(0x02, 0x80, 0x00), .pos = 1, .why = "no previous frame" },
	{ "rep-first-ext", BYTES(0x00, 0x88, 0x05, 0x00), .pos = 1, .why = "no previous frame" },
	/* counts with more bytes than the word */
	{ "omit-3-bytes-w16", BYTES(0x00, 0x62, 0x00, 0x00, 0x01, 0x00), .pos = 1,
	  .why = "more bytes than the word" },
	{ "omit-5-bytes-w32", BYTES(0x01, 0x10, 0x01, 0x64, 0, 0, 0, 0, 1, 0x00), RUNS(F(PC, 1)),
	  .pos = 3, .why = "more bytes than the word" },
	{ "omit-9-bytes-w64", BYTES(0x02, 0x68, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x00), .pos = 1,
	  .why = "more bytes than the word" },
	{ "omit-32-bytes-w64", BYTES(0x02, 0x7f), .pos = 1, .why = "more bytes than the word" },
	{ "rep-3-bytes-w16", BYTES(0x00, 0x10, 0x01, 0x8a, 0x00, 0x00, 0x01, 0x00), RUNS(F(PC, 1)),
	  .pos = 3, .why = "more bytes than the word" },
	{ "rep-5-bytes-w32", BYTES(0x01, 0x10, 0x01, 0x8c, 0, 0, 0, 0, 1, 0x00), RUNS(F(PC, 1)),
	  .pos = 3, .why = "more bytes than the word" },
	/* Swift's over-limit vector: one more than maxRepeatCount + 1 */
	{ "swift-rep-over-limit", BYTES(0x02, 0x18, 0x7f, 0x8a, 0x10, 0x00, 0x02), RUNS(F(PC, 0x7f)),
	  .pos = 3, .why = "over the limit" },
	{ "rep-max-count", BYTES(0x02, 0x10, 0x01, 0x8f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				 0xff, 0x00), RUNS(F(PC, 1)), .pos = 3, .why = "over the limit" },
	/* reserved opcodes, after a frame so that what came before is kept */
	{ "reserved-02", BYTES(0x02, 0x10, 0x01, 0x02, 0x00), RUNS(F(PC, 1)), .pos = 3,
	  .why = "reserved opcode" },
	{ "reserved-0f", BYTES(0x02, 0x0f), .pos = 1, .why = "reserved opcode" },
	{ "reserved-90", BYTES(0x02, 0x10, 0x01, 0x90, 0x00), RUNS(F(PC, 1)), .pos = 3,
	  .why = "reserved opcode" },
	{ "reserved-ff", BYTES(0x01, 0xff), .pos = 1, .why = "reserved opcode" },
};

static void test_bad(void **state)
{
	const struct bad *b = *state;
	size_t want_n, got_n, arr_n, pos = 99;
	struct sfu_cbf_frame *want = expand(b->runs, b->nruns, &want_n);
	struct sfu_cbf_dec dec;
	struct sfu_cbf_frame *got = decode_all(b->bytes, b->len, 0, &got_n, &dec);
	struct sfu_cbf_frame arr[8];
	struct sfu_diag diag = { 0 };
	uint8_t *copy;
	const char *why;

	want = realloc(want, (want_n + 1) * sizeof(*want));
	assert_non_null(want);
	want[want_n++] = (struct sfu_cbf_frame){ .kind = SFU_CBF_TRUNCATED };
	assert_cbf_frames_equal(got, got_n, want, want_n);
	why = sfu_cbf_dec__error(&dec, &pos);
	assert_non_null(why);
	assert_non_null(strstr(why, b->why));
	assert_int_equal(pos, b->pos);

	/* the array form says -EBADMSG, keeps the same results, and explains with the offset */
	copy = memdup_exact_or_fail(b->bytes, b->len);
	assert_int_equal(sfu_cbf_decode(copy, b->len, 0, arr, N(arr), &arr_n, NULL, &diag), -EBADMSG);
	assert_cbf_frames_equal(arr, arr_n, want, want_n);
	assert_int_equal(diag.err, -EBADMSG);
	assert_non_null(strstr(diag.reason, b->why));
	{
		char at[32];

		snprintf(at, sizeof(at), "byte %zu ", b->pos);
		assert_true(!strncmp(diag.reason, at, strlen(at)));
	}
	free(copy);
	free(got);
	free(want);
}

/* Every opcode byte that is not an instruction is refused; every other one is not. */
static void test_reserved_opcodes(void **state)
{
	(void)state;
	for (unsigned op = 0; op < 256; op++) {
		/* a frame first so that rep is valid, then the opcode with 8 zero bytes after it */
		uint8_t in[] = { 0x02, 0x10, 0x01, (uint8_t)op, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
		bool reserved = (op >= 0x02 && op <= 0x0f) || op >= 0x90;
		struct sfu_cbf_dec dec;
		size_t n, pos;
		struct sfu_cbf_frame *f = decode_all(in, sizeof(in), 0, &n, &dec);
		const char *why = sfu_cbf_dec__error(&dec, &pos);

		if (reserved) {
			assert_non_null(why);
			assert_non_null(strstr(why, "reserved opcode"));
			assert_int_equal(pos, 3);
			assert_int_equal(n, 2);
		} else if (why) {
			assert_null(strstr(why, "reserved opcode"));
		} else {
			assert_int_equal(f[n - 1].kind, op == 0x01 ? SFU_CBF_TRUNCATED : SFU_CBF_END);
		}
		free(f);
	}
}

/* The Swift vector's 0x100002 frames stream out one by one without being stored. */
static void test_swift_vector_streams(void **state)
{
	static const uint8_t in[] = { 0x02, 0x18, 0x7f, 0x8a, 0x10, 0x00, 0x01, 0x00 };
	struct sfu_cbf_dec dec;
	struct sfu_cbf_frame f;
	uint64_t frames = 0;

	(void)state;
	sfu_cbf_dec__init(&dec, in, sizeof(in), 0, NULL);
	assert_int_equal(sfu_cbf_dec__word_bits(&dec), 64);
	while (sfu_cbf_dec__next(&dec, &f) == 0 && f.kind == SFU_CBF_PC) {
		assert_int_equal(f.value, 0x7f);
		frames++;
	}
	/* Swift's test: "count 1048578 truncated false" */
	assert_int_equal(frames, 1048578);
	assert_int_equal(f.kind, SFU_CBF_END);
	assert_null(sfu_cbf_dec__error(&dec, NULL));
	assert_int_equal(sfu_cbf_dec__offset(&dec), sizeof(in));
}

/* Bytes after END are left alone; the offset says where they start. */
static void test_trailing_bytes(void **state)
{
	static const uint8_t in[] = { 0x02, 0x10, 0x01, 0x00, 0xff, 0xff };
	struct sfu_cbf_dec dec;
	struct sfu_cbf_frame f;

	(void)state;
	sfu_cbf_dec__init(&dec, in, sizeof(in), 0, NULL);
	assert_int_equal(sfu_cbf_dec__next(&dec, &f), 0);
	assert_int_equal(sfu_cbf_dec__next(&dec, &f), 0);
	assert_int_equal(f.kind, SFU_CBF_END);
	assert_int_equal(sfu_cbf_dec__offset(&dec), 4);
	assert_null(sfu_cbf_dec__error(&dec, NULL));
}

/* The array form: room for cap - 1 results and a TRUNCATED, or -EINVAL. */
static void test_decode_cap(void **state)
{
	/* pc 1, ra 2, 3 more ra 2, end: 6 results */
	static const uint8_t in[] = { 0x02, 0x10, 0x01, 0x20, 0x01, 0x82, 0x00 };
	struct sfu_cbf_frame arr[6];
	struct sfu_diag diag = { 0 };
	size_t n = 99;
	unsigned word = 99;

	(void)state;
	assert_int_equal(sfu_cbf_decode(in, sizeof(in), 0, arr, 0, &n, &word, NULL), -EINVAL);
	assert_int_equal(n, 0);
	assert_int_equal(sfu_cbf_decode(in, sizeof(in), 0, arr, 6, &n, &word, NULL), 0);
	assert_int_equal(n, 6);
	assert_int_equal(arr[5].kind, SFU_CBF_END);
	assert_int_equal(sfu_cbf_decode(in, sizeof(in), 0, arr, 5, &n, NULL, &diag), -ENOSPC);
	assert_int_equal(n, 5);
	assert_int_equal(arr[3].kind, SFU_CBF_RA);
	assert_int_equal(arr[4].kind, SFU_CBF_TRUNCATED);
	assert_int_equal(diag.err, -ENOSPC);
	assert_int_equal(sfu_cbf_decode(in, sizeof(in), 0, arr, 1, &n, NULL, NULL), -ENOSPC);
	assert_int_equal(n, 1);
	assert_int_equal(arr[0].kind, SFU_CBF_TRUNCATED);
	/* a bad information byte reports word size 0 */
	assert_int_equal(sfu_cbf_decode("\x03", 1, 0, arr, 6, &n, &word, NULL), -EBADMSG);
	assert_int_equal(word, 0);
}

/* Signed value of @v at @bits, as an independent model of "fits in n bytes". */
static int64_t as_signed(uint64_t v, unsigned bits)
{
	if (bits == 64)
		return (int64_t)v;
	v &= (UINT64_C(1) << bits) - 1;
	return v >> (bits - 1) ? (int64_t)v - ((int64_t)1 << bits) : (int64_t)v;
}

static unsigned model_width(uint64_t v, unsigned bits)
{
	int64_t s = as_signed(v, bits);

	for (unsigned n = 1; n < bits / 8; n++) {
		int64_t lim = (int64_t)1 << (8 * n - 1);

		if (s >= -lim && s < lim)
			return n;
	}
	return bits / 8;
}

static uint64_t word_mask(unsigned bits)
{
	return bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
}

/* An address near @prev, or anywhere, or small, or just below 0: the cases the widths turn on. */
static uint64_t random_addr(struct test_rng *r, uint64_t prev, unsigned bits)
{
	switch (rng_range(r, 0, 5)) {
	case 0: return prev + (uint64_t)rng_range(r, -300, 300);
	case 1: return prev + (uint64_t)rng_range(r, -0x123456, 0x123456);
	case 2: return rng_next(r);
	case 3: return (uint64_t)rng_range(r, 0, 0x1000);
	case 4: return (uint64_t)-rng_range(r, 1, 0x10000);
	default: return rng_next(r) >> rng_range(r, 1, bits - 1);
	}
}

/*
 * Each address instruction is absolute exactly when the model's absolute
 * width is strictly smaller than its delta width, and has that many bytes.
 */
static void test_width_choice(void **state)
{
	static const unsigned words[] = { 16, 32, 64 };
	struct test_rng r;

	(void)state;
	rng_seed(&r, 0xcbf1);
	for (size_t w = 0; w < N(words); w++) {
		unsigned bits = words[w];
		uint64_t mask = word_mask(bits);

		for (int i = 0; i < 20000; i++) {
			uint64_t prev = random_addr(&r, rng_next(&r), bits) & mask;
			uint64_t addr = random_addr(&r, prev, bits) & mask;
			unsigned abs_n = model_width(addr, bits);
			unsigned rel_n = model_width(addr - prev, bits);
			bool absolute = abs_n < rel_n;
			uint8_t buf[32];
			struct sfu_cbf_enc enc;
			size_t at;

			assert_int_equal(sfu_cbf_enc__init(&enc, bits, buf, sizeof(buf)), 0);
			assert_int_equal(sfu_cbf_enc__frame(&enc, SFU_CBF_RA, prev), 0);
			at = sfu_cbf_enc__len(&enc);
			assert_int_equal(sfu_cbf_enc__frame(&enc, SFU_CBF_ASYNC, addr), 0);
			assert_int_equal(buf[at] & 0xf0, 0x30);
			assert_int_equal(!!(buf[at] & 0x08), absolute);
			assert_int_equal((buf[at] & 0x7) + 1, absolute ? abs_n : rel_n);
			assert_int_equal(sfu_cbf_enc__len(&enc), at + 1 + (absolute ? abs_n : rel_n));
		}
	}
}

/*
 * Random stacks at each word size: what decodes is what was encoded (with
 * addresses truncated to the word), and encoding that again gives the same
 * bytes.
 */
static void test_random_round_trips(void **state)
{
	static const unsigned words[] = { 16, 32, 64 };
	struct test_rng r;

	(void)state;
	rng_seed(&r, 0x5eed0cbf);
	for (size_t w = 0; w < N(words); w++) {
		unsigned bits = words[w];
		uint64_t mask = word_mask(bits);

		for (int iter = 0; iter < 400; iter++) {
			size_t n = (size_t)rng_range(&r, 0, iter % 10 ? 64 : 1500), got_n, len, len2;
			struct sfu_cbf_frame *f = calloc(n + 1, sizeof(*f)), *got;
			uint64_t prev = 0;
			uint8_t *bytes, *again;

			assert_non_null(f);
			for (size_t i = 0; i < n; i++) {
				int64_t pick = rng_range(&r, 0, 99);

				if (i && pick < 25) {
					f[i] = f[i - 1];	/* runs: recursion, repeated omits */
				} else if (pick < 30) {
					uint64_t c = (uint64_t)rng_range(&r, 0, 40);

					if (rng_range(&r, 0, 3) == 0)
						c = rng_next(&r) & mask;
					f[i] = (struct sfu_cbf_frame){ SFU_CBF_OMIT, c };
				} else {
					uint8_t kind = i == 0 ? SFU_CBF_PC :
						       pick < 35 ? SFU_CBF_ASYNC :
						       pick < 38 ? SFU_CBF_PC : SFU_CBF_RA;

					prev = random_addr(&r, prev, bits);
					/* unmasked: the codec must drop the high bits itself */
					f[i] = (struct sfu_cbf_frame){ kind, prev };
				}
			}
			f[n] = (struct sfu_cbf_frame){ rng_range(&r, 0, 1) ? SFU_CBF_END
									   : SFU_CBF_TRUNCATED, 0 };
			bytes = encode_all(bits, f, n + 1, &len);
			for (size_t i = 0; i < n; i++)
				if (f[i].kind != SFU_CBF_OMIT)
					f[i].value &= mask;
			got = decode_all(bytes, len, 0, &got_n, NULL);
			assert_cbf_frames_equal(got, got_n, f, n + 1);
			again = encode_all(bits, got, got_n, &len2);
			assert_bytes_equal(again, len2, bytes, len);
			free(again);
			free(got);
			free(bytes);
			free(f);
		}
	}
}

struct stack_case {
	const char *name;
	unsigned word;
	const uint64_t *addrs;
	size_t n;
	size_t max;
	bool truncated;
	const uint8_t *bytes;	/* expected encoding, or NULL to check only the results */
	size_t len;
	const struct run *runs;	/* expected results */
	size_t nruns;
};

#define ADDRS(...)	.addrs = (const uint64_t[]){ __VA_ARGS__ }, \
			.n = sizeof((const uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t)

static const struct stack_case stack_cases[] = {
	/*
	 * 02
	 * 12 40 10 00  pc 0x401000: 3 bytes either way, tie -> relative
	 * 21 01 00     ra 0x401100: delta 0x100 (2) < abs (3)
	 * 21 01 00     ra 0x401200
	 * 00
	 */
	{ "plain", 64, ADDRS(0x401000, 0x401100, 0x401200), 0, false,
	  BYTES(0x02, 0x12, 0x40, 0x10, 0x00, 0x21, 0x01, 0x00, 0x21, 0x01, 0x00, 0x00),
	  RUNS(F(PC, 0x401000), F(RA, 0x401100), F(RA, 0x401200), END) },
	/*
	 * Direct recursion: ten ra 0x2000 are one ra and a rep of 9.
	 * 02
	 * 11 10 00     pc 0x1000: 2 bytes either way, tie -> relative
	 * 21 10 00     ra 0x2000: delta 0x1000 (2), abs (2), tie -> relative
	 * 88 09        9 more: > 8, so x = 1 and 1 byte
	 * 21 10 00     ra 0x3000
	 * 01           trunc: unwinding stopped early
	 */
	{ "recursion", 64,
	  ADDRS(0x1000, 0x2000, 0x2000, 0x2000, 0x2000, 0x2000, 0x2000, 0x2000, 0x2000, 0x2000,
		0x2000, 0x3000), 0, true,
	  BYTES(0x02, 0x11, 0x10, 0x00, 0x21, 0x10, 0x00, 0x88, 0x09, 0x21, 0x10, 0x00, 0x01),
	  RUNS(F(PC, 0x1000), R(RA, 0x2000, 10), F(RA, 0x3000), TRUNC) },
	/*
	 * The pc and an equal return address are different kinds: no rep.
	 * 00 (16-bit) 11 20 00 (pc 0x2000) 20 00 (ra 0x2000, delta 0) 80 (1 more) 00
	 */
	{ "pc-equals-ra", 16, ADDRS(0x2000, 0x2000, 0x2000), 0, false,
	  BYTES(0x00, 0x11, 0x20, 0x00, 0x20, 0x00, 0x80, 0x00),
	  RUNS(F(PC, 0x2000), R(RA, 0x2000, 2), END) },
	/*
	 * max 5 of 8: the innermost 5 - min(16, 2) = 3 and the outermost 2.
	 * 01 (32-bit) 10 01 (pc 1) 20 01 (ra 2) 20 01 (ra 3) 42 (omit 3)
	 * 20 04 (ra 7: delta 4 from 3) 20 01 (ra 8) 00
	 */
	{ "omit-small", 32, ADDRS(1, 2, 3, 4, 5, 6, 7, 8), 5, false,
	  BYTES(0x01, 0x10, 0x01, 0x20, 0x01, 0x20, 0x01, 0x42, 0x20, 0x04, 0x20, 0x01, 0x00),
	  RUNS(F(PC, 1), F(RA, 2), F(RA, 3), F(OMIT, 3), F(RA, 7), F(RA, 8), END) },
	/* max 1: only the pc, then the rest omitted. 02 10 01 (pc 1) 41 (omit 2) 01 */
	{ "omit-max-1", 64, ADDRS(1, 2, 3), 1, true, BYTES(0x02, 0x10, 0x01, 0x41, 0x01),
	  RUNS(F(PC, 1), F(OMIT, 2), TRUNC) },
	/* exactly max frames: nothing omitted */
	{ "at-max", 64, ADDRS(1, 2, 3), 3, false, NULL, 0,
	  RUNS(F(PC, 1), F(RA, 2), F(RA, 3), END) },
	/*
	 * Recursion across the cut (max 10 of 26: top 5, bottom 5): the first
	 * frame after the omit is written again, as a rep there would repeat
	 * the omit.
	 * 02
	 * 10 01        pc 1
	 * 21 4f ff     ra 0x5000: delta 0x4fff (2), abs (2), tie -> relative
	 * 82           3 more
	 * 4f           omit 16: inline, 16 - 1
	 * 20 00        ra 0x5000: omit leaves the previous address at 0x5000, delta 0
	 * 83           4 more
	 * 00
	 */
	{ "recursion-across-omit", 64,
	  ADDRS(1, 0x5000, 0x5000, 0x5000, 0x5000, 0x5000, 0x5000, 0x5000, 0x5000, 0x5000,
		0x5000, 0x5000, 0x5000, 0x5000, 0x5000, 0x5000, 0x5000, 0x5000, 0x5000, 0x5000,
		0x5000, 0x5000, 0x5000, 0x5000, 0x5000, 0x5000), 10, false,
	  BYTES(0x02, 0x10, 0x01, 0x21, 0x4f, 0xff, 0x82, 0x4f, 0x20, 0x00, 0x83, 0x00),
	  RUNS(F(PC, 1), R(RA, 0x5000, 4), F(OMIT, 16), R(RA, 0x5000, 5), END) },
	/* no frames at all */
	{ "empty", 32, .addrs = (const uint64_t[]){ 0 }, .n = 0, 0, true, BYTES(0x01, 0x01),
	  RUNS(TRUNC) },
	/* addresses above the word are truncated: 0x1_0000_1000 at 32 bits is 0x1000 */
	{ "truncate-to-word", 32, ADDRS(0x100001000ULL, 0x1000), 0, false,
	  BYTES(0x01, 0x11, 0x10, 0x00, 0x20, 0x00, 0x00),
	  RUNS(F(PC, 0x1000), F(RA, 0x1000), END) },
};

static void test_stack(void **state)
{
	const struct stack_case *c = *state;
	size_t cap = SFU_CBF_BOUND(c->n), want_n, got_n;
	uint8_t *buf = malloc(cap);
	struct sfu_cbf_frame *want = expand(c->runs, c->nruns, &want_n), *got;
	struct sfu_cbf_enc enc;

	assert_non_null(buf);
	assert_int_equal(sfu_cbf_enc__init(&enc, c->word, buf, cap), 0);
	assert_int_equal(sfu_cbf_encode_stack(&enc, c->addrs, c->n, c->max, c->truncated), 0);
	if (c->bytes)
		assert_bytes_equal(buf, sfu_cbf_enc__len(&enc), c->bytes, c->len);
	got = decode_all(buf, sfu_cbf_enc__len(&enc), 0, &got_n, NULL);
	assert_cbf_frames_equal(got, got_n, want, want_n);
	free(got);
	free(want);
	free(buf);
}

/* Long stacks against a limit, at every word size: shape and bound. */
static void test_stack_limits(void **state)
{
	static const unsigned words[] = { 16, 32, 64 };
	static const size_t maxes[] = { 1, 2, 3, 31, 32, 33, 64, 127 };
	struct test_rng r;

	(void)state;
	rng_seed(&r, 0x57ac);
	for (size_t w = 0; w < N(words); w++) {
		for (size_t m = 0; m < N(maxes); m++) {
			size_t max = maxes[m], n = max + (size_t)rng_range(&r, 1, 3000);
			size_t bottom = max / 2 < 16 ? max / 2 : 16, top = max - bottom, got_n;
			uint64_t *addrs = malloc(n * sizeof(*addrs)), mask = word_mask(words[w]);
			uint8_t *buf = malloc(SFU_CBF_BOUND(n));
			struct sfu_cbf_frame *got;
			struct sfu_cbf_enc enc;

			assert_non_null(addrs);
			assert_non_null(buf);
			for (size_t i = 0; i < n; i++)
				addrs[i] = i && rng_range(&r, 0, 2) == 0 ? addrs[i - 1] : rng_next(&r);
			assert_int_equal(sfu_cbf_enc__init(&enc, words[w], buf, SFU_CBF_BOUND(n)), 0);
			assert_int_equal(sfu_cbf_encode_stack(&enc, addrs, n, max, false), 0);
			got = decode_all(buf, sfu_cbf_enc__len(&enc), 0, &got_n, NULL);
			assert_int_equal(got_n, max + 2);
			for (size_t i = 0; i < top; i++) {
				assert_int_equal(got[i].kind, i ? SFU_CBF_RA : SFU_CBF_PC);
				assert_int_equal(got[i].value, addrs[i] & mask);
			}
			assert_int_equal(got[top].kind, SFU_CBF_OMIT);
			assert_int_equal(got[top].value, n - max);
			for (size_t i = 0; i < bottom; i++) {
				assert_int_equal(got[top + 1 + i].kind, SFU_CBF_RA);
				assert_int_equal(got[top + 1 + i].value, addrs[n - bottom + i] & mask);
			}
			assert_int_equal(got[max + 1].kind, SFU_CBF_END);
			free(got);
			free(buf);
			free(addrs);
		}
	}
}

/* The worst case (no two addresses alike, all 8-byte deltas) fits SFU_CBF_BOUND. */
static void test_bound(void **state)
{
	enum { NF = 200 };
	uint64_t addrs[NF];
	uint8_t buf[SFU_CBF_BOUND(NF)];
	struct sfu_cbf_enc enc;

	(void)state;
	for (size_t i = 0; i < NF; i++)
		addrs[i] = i % 2 ? 0xc000000000000000ULL - i : 0x4000000000000000ULL + i;
	assert_int_equal(sfu_cbf_enc__init(&enc, 64, buf, sizeof(buf)), 0);
	assert_int_equal(sfu_cbf_encode_stack(&enc, addrs, NF, NF - 1, true), 0);
	assert_true(sfu_cbf_enc__len(&enc) <= sizeof(buf));
	assert_true(sfu_cbf_enc__len(&enc) > 8 * (NF - 2));
}

/* Encoder errors: bad word, no room (with nothing written), nothing to repeat, after the end. */
static void test_encoder_errors(void **state)
{
	enum { NADDRS = 70000 };
	uint8_t buf[16], big[64];
	struct sfu_cbf_enc enc;
	uint64_t *addrs = malloc(NADDRS * sizeof(*addrs));

	(void)state;
	assert_non_null(addrs);
	assert_int_equal(sfu_cbf_enc__init(&enc, 8, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(sfu_cbf_enc__init(&enc, 128, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(sfu_cbf_enc__init(&enc, 64, buf, 0), -ENOSPC);

	assert_int_equal(sfu_cbf_enc__init(&enc, 64, buf, sizeof(buf)), 0);
	assert_int_equal(sfu_cbf_enc__rep(&enc, 1), -EINVAL);
	assert_int_equal(sfu_cbf_enc__frame(&enc, SFU_CBF_OMIT, 1), -EINVAL);
	assert_int_equal(sfu_cbf_enc__frame(&enc, SFU_CBF_END, 1), -EINVAL);
	assert_int_equal(sfu_cbf_enc__rep(&enc, 0), -EINVAL);
	/* 1 + 9 + 9 > 16: the second frame does not fit, and nothing of it is written */
	assert_int_equal(sfu_cbf_enc__frame(&enc, SFU_CBF_PC, 0x8000000000000000ULL), 0);
	assert_int_equal(sfu_cbf_enc__len(&enc), 10);
	assert_int_equal(sfu_cbf_enc__frame(&enc, SFU_CBF_RA, 0x4000000000000000ULL), -ENOSPC);
	assert_int_equal(sfu_cbf_enc__len(&enc), 10);
	/* move to a bigger buffer and go on: the result is as if it had fitted */
	memcpy(big, buf, sfu_cbf_enc__len(&enc));
	assert_int_equal(sfu_cbf_enc__rebuffer(&enc, big, 5), -EINVAL);
	assert_int_equal(sfu_cbf_enc__rebuffer(&enc, big, sizeof(big)), 0);
	assert_int_equal(sfu_cbf_enc__frame(&enc, SFU_CBF_RA, 0x4000000000000000ULL), 0);
	assert_int_equal(sfu_cbf_enc__rep(&enc, 0), 0);
	assert_int_equal(sfu_cbf_enc__end(&enc, false), 0);
	{
		/*
		 * 02
		 * 17 80 00 00 00 00 00 00 00  pc 2^63: abs 8, delta 8, tie -> relative
		 * 27 c0 00 00 00 00 00 00 00  ra 2^62: abs 8 (40 would need 7 bytes
		 *                             plus a sign), delta -2^62 = c0.. (8), tie
		 * 00
		 */
		static const uint8_t want[] = { 0x02, 0x17, 0x80, 0, 0, 0, 0, 0, 0, 0,
						0x27, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0x00 };

		assert_bytes_equal(big, sfu_cbf_enc__len(&enc), want, sizeof(want));
	}
	assert_int_equal(sfu_cbf_enc__frame(&enc, SFU_CBF_RA, 1), -EINVAL);
	assert_int_equal(sfu_cbf_enc__rep(&enc, 1), -EINVAL);
	assert_int_equal(sfu_cbf_enc__omit(&enc, 1), -EINVAL);
	assert_int_equal(sfu_cbf_enc__end(&enc, true), -EINVAL);
	assert_int_equal(sfu_cbf_encode_stack(&enc, addrs, 0, 0, false), -EINVAL);

	/* an omit count must fit the word */
	assert_int_equal(sfu_cbf_enc__init(&enc, 16, buf, sizeof(buf)), 0);
	assert_int_equal(sfu_cbf_enc__omit(&enc, 0x10000), -ERANGE);
	assert_int_equal(sfu_cbf_enc__omit(&enc, 0xffff), 0);
	for (size_t i = 0; i < NADDRS; i++)
		addrs[i] = i;
	assert_int_equal(sfu_cbf_enc__init(&enc, 16, buf, sizeof(buf)), 0);
	assert_int_equal(sfu_cbf_encode_stack(&enc, addrs, NADDRS, 4, false), -ERANGE);
	assert_int_equal(sfu_cbf_enc__len(&enc), 1);
	free(addrs);

	/* encode_frames checks its whole input before writing */
	{
		const struct sfu_cbf_frame after_end[] = { { SFU_CBF_END, 0 }, { SFU_CBF_PC, 1 } };
		const struct sfu_cbf_frame bad_kind[] = { { SFU_CBF_PC, 1 }, { 77, 1 } };
		const struct sfu_cbf_frame big_omit[] = { { SFU_CBF_PC, 1 }, { SFU_CBF_OMIT, 1 << 20 } };

		assert_int_equal(sfu_cbf_enc__init(&enc, 16, buf, sizeof(buf)), 0);
		assert_int_equal(sfu_cbf_encode_frames(&enc, after_end, 2), -EINVAL);
		assert_int_equal(sfu_cbf_encode_frames(&enc, bad_kind, 2), -EINVAL);
		assert_int_equal(sfu_cbf_encode_frames(&enc, big_omit, 2), -ERANGE);
		assert_int_equal(sfu_cbf_enc__len(&enc), 1);
	}
	assert_null(sfu_cbf_kind_name(0));
	assert_string_equal(sfu_cbf_kind_name(SFU_CBF_TRUNCATED), "truncated");
}

/* Repeats above what one rep carries are split, and decode to the same frames. */
static void test_rep_split(void **state)
{
	static const struct {
		unsigned word;
		uint64_t count;
		uint8_t want[16];	/* after the info byte and `10 01` (pc 1) */
		size_t len;
	} cases[] = {
		/* 16-bit: at most ffff a rep: 89 ff ff, then 1 more: 80 */
		{ 16, 0x10000, { 0x89, 0xff, 0xff, 0x80 }, 4 },
		{ 16, 0xffff, { 0x89, 0xff, 0xff }, 3 },
		/* 32-bit: at most 0x100001 (Swift's limit): 8a 10 00 01, then 1 more */
		{ 32, 0x100002, { 0x8a, 0x10, 0x00, 0x01, 0x80 }, 5 },
		/* 64-bit: two full reps and 9 more (88 09) */
		{ 64, 2 * 0x100001 + 9, { 0x8a, 0x10, 0x00, 0x01, 0x8a, 0x10, 0x00, 0x01, 0x88, 0x09 }, 10 },
	};

	(void)state;
	for (size_t i = 0; i < N(cases); i++) {
		uint8_t buf[32], want[32];
		struct sfu_cbf_enc enc;
		struct sfu_cbf_dec dec;
		struct sfu_cbf_frame f;
		uint64_t frames = 0;
		size_t wl = 0;

		assert_int_equal(sfu_cbf_enc__init(&enc, cases[i].word, buf, sizeof(buf)), 0);
		assert_int_equal(sfu_cbf_enc__frame(&enc, SFU_CBF_PC, 1), 0);
		assert_int_equal(sfu_cbf_enc__rep(&enc, cases[i].count), 0);
		assert_int_equal(sfu_cbf_enc__end(&enc, false), 0);
		want[wl++] = buf[0];
		want[wl++] = 0x10;
		want[wl++] = 0x01;
		memcpy(want + wl, cases[i].want, cases[i].len);
		wl += cases[i].len;
		want[wl++] = 0x00;
		assert_bytes_equal(buf, sfu_cbf_enc__len(&enc), want, wl);

		sfu_cbf_dec__init(&dec, buf, sfu_cbf_enc__len(&enc), 0, NULL);
		while (sfu_cbf_dec__next(&dec, &f) == 0 && f.kind == SFU_CBF_PC)
			frames++;
		assert_int_equal(f.kind, SFU_CBF_END);
		assert_int_equal(frames, cases[i].count + 1);
	}
}

int main(void)
{
	struct CMUnitTest tests[N(vectors) + N(bads) + N(stack_cases) + 12];
	size_t n = 0;

	for (size_t i = 0; i < N(vectors); i++)
		tests[n++] = (struct CMUnitTest){ vectors[i].name, test_vector, NULL, NULL,
						  (void *)&vectors[i] };
	for (size_t i = 0; i < N(bads); i++)
		tests[n++] = (struct CMUnitTest){ bads[i].name, test_bad, NULL, NULL,
						  (void *)&bads[i] };
	for (size_t i = 0; i < N(stack_cases); i++)
		tests[n++] = (struct CMUnitTest){ stack_cases[i].name, test_stack, NULL, NULL,
						  (void *)&stack_cases[i] };
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_reserved_opcodes);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_swift_vector_streams);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_trailing_bytes);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_decode_cap);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_width_choice);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_random_round_trips);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_stack_limits);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_bound);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_encoder_errors);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_rep_split);
	return _cmocka_run_group_tests("cbf", tests, n, NULL, NULL);
}
