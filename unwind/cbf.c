/* SPDX-License-Identifier: BSD-2-Clause */
/* Compact Backtrace Format version 0: streaming encoder and decoder, Swift's encoding choices. */
#include <errno.h>
#include <string.h>

#include "sfunwind/cbf.h"

#include "diag_internal.h"

/* Opcodes and their fields (CompactBacktraceFormat.md, "Instructions"). */
#define OP_END		0x00
#define OP_TRUNC	0x01
#define OP_PC		0x10
#define OP_RA		0x20
#define OP_ASYNC	0x30
#define OP_ABSOLUTE	0x08	/* pc/ra/async: the address is not a delta */
#define OP_OMIT		0x40
#define OP_OMIT_EXT	0x20	/* omit: the count follows in bytes */
#define OP_REP		0x80
#define OP_REP_EXT	0x08	/* rep: the count follows in bytes */

/* omit and rep counts that Swift's encoder writes inside the instruction. */
#define OMIT_INLINE_MAX	31
#define REP_INLINE_MAX	8

#define INFO_VERSION(b)	((b) >> 2)
#define INFO_SIZE(b)	((b) & 0x3)

const char *sfu_cbf_kind_name(unsigned kind)
{
	switch (kind) {
	case SFU_CBF_PC: return "pc";
	case SFU_CBF_RA: return "ra";
	case SFU_CBF_ASYNC: return "async";
	case SFU_CBF_OMIT: return "omit";
	case SFU_CBF_END: return "end";
	case SFU_CBF_TRUNCATED: return "truncated";
	}
	return NULL;
}

static bool is_address_kind(unsigned kind)
{
	return kind == SFU_CBF_PC || kind == SFU_CBF_RA || kind == SFU_CBF_ASYNC;
}

static uint64_t low_bytes_mask(unsigned n)
{
	return n >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * n)) - 1;
}

/* The low @n bytes of @v sign-extended from their top bit to 64 bits. */
static uint64_t sign_extend(uint64_t v, unsigned n)
{
	uint64_t m = low_bytes_mask(n);

	v &= m;
	if (n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~m;
	return v;
}

/* Fewest bytes that sign-extend back to @v, a value already truncated to the word. */
static unsigned signed_width(uint64_t v, uint64_t mask, unsigned word_bytes)
{
	/* the bits a two's complement number needs: 64 less its redundant sign bits */
	unsigned bits = 64 - (unsigned)__builtin_clrsbll((long long)sign_extend(v, word_bytes));
	unsigned n = (bits + 7) / 8;

	(void)mask;	/* v is already truncated to the word */
	return n < word_bytes ? n : word_bytes;
}

/* Fewest bytes that hold @v as an unsigned number (at least one). */
static unsigned unsigned_width(uint64_t v)
{
	unsigned n = 1;

	while (n < 8 && v > low_bytes_mask(n))
		n++;
	return n;
}

static void put_be(struct sfu_cbf_enc *enc, uint64_t v, unsigned n)
{
	while (n--)
		enc->buf[enc->len++] = (uint8_t)(v >> (8 * n));
}

int sfu_cbf_enc__init(struct sfu_cbf_enc *enc, unsigned word_bits, void *buf, size_t cap)
{
	uint8_t size;

	switch (word_bits) {
	case 16: size = 0; break;
	case 32: size = 1; break;
	case 64: size = 2; break;
	default: return -EINVAL;
	}
	memset(enc, 0, sizeof(*enc));
	enc->buf = buf;
	enc->cap = cap;
	enc->word_bytes = (uint8_t)(word_bits / 8);
	enc->mask = low_bytes_mask(enc->word_bytes);
	if (!cap)
		return -ENOSPC;
	enc->buf[enc->len++] = (uint8_t)(0 << 2 | size);	/* version 0 */
	return 0;
}

int sfu_cbf_enc__rebuffer(struct sfu_cbf_enc *enc, void *buf, size_t cap)
{
	if (cap < enc->len)
		return -EINVAL;
	enc->buf = buf;
	enc->cap = cap;
	return 0;
}

size_t sfu_cbf_enc__len(const struct sfu_cbf_enc *enc)
{
	return enc->len;
}

static int room(const struct sfu_cbf_enc *enc, uint64_t need)
{
	if (enc->done)
		return -EINVAL;
	return need <= enc->cap - enc->len ? 0 : -ENOSPC;
}

int sfu_cbf_enc__frame(struct sfu_cbf_enc *enc, unsigned kind, uint64_t addr)
{
	static const uint8_t ops[] = { [SFU_CBF_PC] = OP_PC, [SFU_CBF_RA] = OP_RA,
				       [SFU_CBF_ASYNC] = OP_ASYNC };
	uint64_t delta, value;
	unsigned abs_n, rel_n, n;
	bool absolute;
	int err;

	if (!is_address_kind(kind))
		return -EINVAL;
	addr &= enc->mask;
	delta = (addr - enc->prev_addr) & enc->mask;
	abs_n = signed_width(addr, enc->mask, enc->word_bytes);
	rel_n = signed_width(delta, enc->mask, enc->word_bytes);
	/* Swift: absolute only when strictly shorter, so the first frame (from 0) is relative */
	absolute = abs_n < rel_n;
	n = absolute ? abs_n : rel_n;
	value = absolute ? addr : delta;
	err = room(enc, 1 + n);
	if (err)
		return err;
	enc->buf[enc->len++] = (uint8_t)(ops[kind] | (absolute ? OP_ABSOLUTE : 0) | (n - 1));
	put_be(enc, value, n);
	enc->prev_addr = addr;
	enc->last = (struct sfu_cbf_frame){ .kind = (uint8_t)kind, .value = addr };
	enc->has_last = true;
	return 0;
}

/* The most one `rep` carries: Swift's decoder limit, and what the word's bytes can hold. */
static uint64_t rep_limit(const struct sfu_cbf_enc *enc)
{
	return enc->mask < SFU_CBF_MAX_REPEAT ? enc->mask : SFU_CBF_MAX_REPEAT;
}

static unsigned rep_size(uint64_t count)
{
	return count <= REP_INLINE_MAX ? 1 : 1 + unsigned_width(count);
}

static void put_rep(struct sfu_cbf_enc *enc, uint64_t count)
{
	unsigned n;

	if (count <= REP_INLINE_MAX) {
		enc->buf[enc->len++] = (uint8_t)(OP_REP | (count - 1));
		return;
	}
	n = unsigned_width(count);
	enc->buf[enc->len++] = (uint8_t)(OP_REP | OP_REP_EXT | (n - 1));
	put_be(enc, count, n);
}

int sfu_cbf_enc__rep(struct sfu_cbf_enc *enc, uint64_t count)
{
	uint64_t limit = rep_limit(enc), full = count / limit, rest = count % limit, need;
	int err;

	if (enc->done || !enc->has_last)
		return -EINVAL;
	if (!count)
		return 0;
	/* full <= 2^64 / 0xffff, so this cannot overflow */
	need = full * rep_size(limit) + (rest ? rep_size(rest) : 0);
	err = room(enc, need);
	if (err)
		return err;
	for (uint64_t i = 0; i < full; i++)
		put_rep(enc, limit);
	if (rest)
		put_rep(enc, rest);
	return 0;
}

int sfu_cbf_enc__omit(struct sfu_cbf_enc *enc, uint64_t count)
{
	unsigned n = unsigned_width(count);
	int err;

	if (count > enc->mask)
		return enc->done ? -EINVAL : -ERANGE;
	/* a count of 0 cannot be written inline (count + 1), so it takes the byte form */
	err = room(enc, count >= 1 && count <= OMIT_INLINE_MAX ? 1 : 1 + n);
	if (err)
		return err;
	if (count >= 1 && count <= OMIT_INLINE_MAX) {
		enc->buf[enc->len++] = (uint8_t)(OP_OMIT | (count - 1));
	} else {
		enc->buf[enc->len++] = (uint8_t)(OP_OMIT | OP_OMIT_EXT | (n - 1));
		put_be(enc, count, n);
	}
	enc->last = (struct sfu_cbf_frame){ .kind = SFU_CBF_OMIT, .value = count };
	enc->has_last = true;
	return 0;
}

int sfu_cbf_enc__end(struct sfu_cbf_enc *enc, bool truncated)
{
	int err = room(enc, 1);

	if (err)
		return err;
	enc->buf[enc->len++] = truncated ? OP_TRUNC : OP_END;
	enc->done = true;
	return 0;
}

/* @times copies of a frame or omit: written once and a `rep`, or only a `rep` continuing the last. */
static int put_run(struct sfu_cbf_enc *enc, unsigned kind, uint64_t value, uint64_t times)
{
	int err;

	if (enc->has_last && enc->last.kind == kind && enc->last.value == value)
		return sfu_cbf_enc__rep(enc, times);
	err = kind == SFU_CBF_OMIT ? sfu_cbf_enc__omit(enc, value)
				   : sfu_cbf_enc__frame(enc, kind, value);
	if (err)
		return err;
	return sfu_cbf_enc__rep(enc, times - 1);
}

static uint64_t entry_value(const struct sfu_cbf_enc *enc, const struct sfu_cbf_frame *f)
{
	return is_address_kind(f->kind) ? f->value & enc->mask : f->value;
}

int sfu_cbf_encode_frames(struct sfu_cbf_enc *enc, const struct sfu_cbf_frame *frames, size_t n)
{
	size_t i, j;
	int err;

	if (enc->done)
		return -EINVAL;
	/* Check everything first so that only -ENOSPC leaves a partial encoding. */
	for (i = 0; i < n; i++) {
		unsigned kind = frames[i].kind;

		if (kind == SFU_CBF_END || kind == SFU_CBF_TRUNCATED) {
			if (i + 1 != n)
				return -EINVAL;
		} else if (kind == SFU_CBF_OMIT) {
			if (frames[i].value > enc->mask)
				return -ERANGE;
		} else if (!is_address_kind(kind)) {
			return -EINVAL;
		}
	}
	for (i = 0; i < n; i = j) {
		const struct sfu_cbf_frame *f = &frames[i];
		uint64_t value = entry_value(enc, f);

		if (f->kind == SFU_CBF_END || f->kind == SFU_CBF_TRUNCATED)
			return sfu_cbf_enc__end(enc, f->kind == SFU_CBF_TRUNCATED);
		for (j = i + 1; j < n && frames[j].kind == f->kind &&
				entry_value(enc, &frames[j]) == value; j++)
			;
		err = put_run(enc, f->kind, value, j - i);
		if (err)
			return err;
	}
	return sfu_cbf_enc__end(enc, false);
}

/* addrs[from, to) as frames: index 0 is the pc, the others return addresses. */
static int put_addrs(struct sfu_cbf_enc *enc, const uint64_t *addrs, size_t from, size_t to)
{
	size_t i, j;
	int err;

	for (i = from; i < to; i = j) {
		unsigned kind = i == 0 ? SFU_CBF_PC : SFU_CBF_RA;
		uint64_t addr = addrs[i] & enc->mask;

		/* the pc never joins a run: it is a different kind from what follows */
		for (j = i + 1; j < to && kind == SFU_CBF_RA && (addrs[j] & enc->mask) == addr; j++)
			;
		err = put_run(enc, kind, addr, j - i);
		if (err)
			return err;
	}
	return 0;
}

int sfu_cbf_encode_stack(struct sfu_cbf_enc *enc, const uint64_t *addrs, size_t n,
			 size_t max_frames, bool truncated)
{
	size_t top = n, bottom = 0, omitted = 0;
	int err;

	if (enc->done)
		return -EINVAL;
	if (max_frames && n > max_frames) {
		bottom = max_frames / 2 < 16 ? max_frames / 2 : 16;
		top = max_frames - bottom;
		omitted = n - max_frames;
		if ((uint64_t)omitted > enc->mask)
			return -ERANGE;
	}
	err = put_addrs(enc, addrs, 0, top);
	if (!err && omitted)
		err = sfu_cbf_enc__omit(enc, omitted);
	if (!err)
		err = put_addrs(enc, addrs, n - bottom, n);
	if (!err)
		err = sfu_cbf_enc__end(enc, truncated);
	return err;
}

/* Record why the input is malformed; the instruction (or information byte) at @at is to blame. */
static void malformed(struct sfu_cbf_dec *dec, size_t at, const char *why)
{
	dec->err = -EBADMSG;
	dec->why = why;
	dec->why_pos = at;
	if (at < dec->len)
		diag_set(dec->diag, -EBADMSG, "byte %zu (0x%02x): %s", at, dec->data[at], why);
	else
		diag_set(dec->diag, -EBADMSG, "byte %zu (end of input): %s", at, why);
}

void sfu_cbf_dec__init(struct sfu_cbf_dec *dec, const void *data, size_t len, unsigned flags,
		       struct sfu_diag *diag)
{
	static const uint8_t bits[] = { 16, 32, 64 };
	uint8_t info;

	memset(dec, 0, sizeof(*dec));
	dec->data = data;
	dec->len = len;
	dec->flags = (uint8_t)flags;
	dec->diag = diag;
	if (!len) {
		malformed(dec, 0, "no information byte");
		return;
	}
	info = dec->data[0];
	dec->pos = 1;
	if (INFO_VERSION(info) != 0) {
		malformed(dec, 0, "information byte: unsupported version (only 0 is defined)");
	} else if (INFO_SIZE(info) == 3) {
		malformed(dec, 0, "information byte: reserved word size 3");
	} else {
		dec->word_bits = bits[INFO_SIZE(info)];
		dec->mask = low_bytes_mask(dec->word_bits / 8);
	}
}

static int finish(struct sfu_cbf_dec *dec, struct sfu_cbf_frame *out, unsigned kind)
{
	dec->done = true;
	*out = (struct sfu_cbf_frame){ .kind = (uint8_t)kind };
	return 0;
}

/* Big-endian @n bytes after the opcode at @at, or false when the input ends first. */
static bool read_be(struct sfu_cbf_dec *dec, size_t at, unsigned n, uint64_t *v)
{
	uint64_t x = 0;

	if (dec->len - at - 1 < n)
		return false;
	for (unsigned i = 0; i < n; i++)
		x = x << 8 | dec->data[at + 1 + i];
	dec->pos = at + 1 + n;
	*v = x;
	return true;
}

int sfu_cbf_dec__next(struct sfu_cbf_dec *dec, struct sfu_cbf_frame *out)
{
	static const uint8_t kinds[] = { 0, SFU_CBF_PC, SFU_CBF_RA, SFU_CBF_ASYNC };

	if (dec->done)
		return -ENOENT;
	if (dec->err)		/* a bad information byte */
		return finish(dec, out, SFU_CBF_TRUNCATED);
	if (dec->repeat) {
		dec->repeat--;
		*out = dec->last;
		return 0;
	}
	for (;;) {
		size_t at = dec->pos;
		unsigned n;
		uint8_t op;
		uint64_t v;

		if (at >= dec->len) {
			if (dec->flags & SFU_CBF_DEC_END_OPTIONAL)
				return finish(dec, out, SFU_CBF_END);
			malformed(dec, at, "input ends without an end or trunc instruction");
			return finish(dec, out, SFU_CBF_TRUNCATED);
		}
		op = dec->data[at];
		if (op == OP_END || op == OP_TRUNC) {
			dec->pos = at + 1;
			return finish(dec, out, op == OP_TRUNC ? SFU_CBF_TRUNCATED : SFU_CBF_END);
		}
		if (op >= OP_PC && op < OP_OMIT) {
			n = (op & 0x7) + 1;
			if (!read_be(dec, at, n, &v)) {
				malformed(dec, at, "input ends inside the address");
				return finish(dec, out, SFU_CBF_TRUNCATED);
			}
			/* wider than the word is allowed: Swift's decoder keeps the low bits */
			v = sign_extend(v, n);
			dec->prev_addr = ((op & OP_ABSOLUTE) ? v : dec->prev_addr + v) & dec->mask;
			dec->last = (struct sfu_cbf_frame){ .kind = kinds[op >> 4],
							    .value = dec->prev_addr };
			dec->has_last = true;
			*out = dec->last;
			return 0;
		}
		if ((op & 0xc0) == OP_OMIT) {
			n = (op & 0x1f) + 1;
			if (!(op & OP_OMIT_EXT)) {
				v = n;
				dec->pos = at + 1;
			} else if (n > dec->word_bits / 8U) {
				malformed(dec, at, "omit count has more bytes than the word");
				return finish(dec, out, SFU_CBF_TRUNCATED);
			} else if (!read_be(dec, at, n, &v)) {
				malformed(dec, at, "input ends inside the omit count");
				return finish(dec, out, SFU_CBF_TRUNCATED);
			}
			dec->last = (struct sfu_cbf_frame){ .kind = SFU_CBF_OMIT, .value = v };
			dec->has_last = true;
			*out = dec->last;
			return 0;
		}
		if ((op & 0xf0) == OP_REP) {
			if (!dec->has_last) {
				malformed(dec, at, "rep with no previous frame");
				return finish(dec, out, SFU_CBF_TRUNCATED);
			}
			n = (op & 0x7) + 1;
			if (!(op & OP_REP_EXT)) {
				v = n;
				dec->pos = at + 1;
			} else if (n > dec->word_bits / 8U) {
				malformed(dec, at, "rep count has more bytes than the word");
				return finish(dec, out, SFU_CBF_TRUNCATED);
			} else if (!read_be(dec, at, n, &v)) {
				malformed(dec, at, "input ends inside the rep count");
				return finish(dec, out, SFU_CBF_TRUNCATED);
			}
			if (v > SFU_CBF_MAX_REPEAT) {
				malformed(dec, at, "rep count over the limit of 0x100001");
				return finish(dec, out, SFU_CBF_TRUNCATED);
			}
			/* zero repeats, as the specification reads, though Swift yields one */
			if (!v)
				continue;
			dec->repeat = v - 1;
			*out = dec->last;
			return 0;
		}
		malformed(dec, at, "reserved opcode");
		return finish(dec, out, SFU_CBF_TRUNCATED);
	}
}

unsigned sfu_cbf_dec__word_bits(const struct sfu_cbf_dec *dec)
{
	return dec->word_bits;
}

size_t sfu_cbf_dec__offset(const struct sfu_cbf_dec *dec)
{
	return dec->pos;
}

const char *sfu_cbf_dec__error(const struct sfu_cbf_dec *dec, size_t *pos)
{
	if (pos)
		*pos = dec->why_pos;
	return dec->err ? dec->why : NULL;
}

int sfu_cbf_decode(const void *data, size_t len, unsigned flags, struct sfu_cbf_frame *frames,
		   size_t cap, size_t *count, unsigned *word_bits, struct sfu_diag *diag)
{
	struct sfu_cbf_dec dec;
	struct sfu_cbf_frame f;
	size_t n = 0;
	int err = 0;

	*count = 0;
	if (word_bits)
		*word_bits = 0;
	if (!cap)
		return -EINVAL;
	sfu_cbf_dec__init(&dec, data, len, flags, diag);
	if (word_bits)
		*word_bits = dec.word_bits;
	while (sfu_cbf_dec__next(&dec, &f) == 0) {
		if (f.kind != SFU_CBF_END && f.kind != SFU_CBF_TRUNCATED && n == cap - 1) {
			f = (struct sfu_cbf_frame){ .kind = SFU_CBF_TRUNCATED };
			err = diag_set(diag, -ENOSPC, "more than %zu results", cap - 1);
			frames[n++] = f;
			break;
		}
		frames[n++] = f;
	}
	*count = n;
	return err ? err : dec.err;
}
