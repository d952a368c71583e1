/* SPDX-License-Identifier: BSD-2-Clause */
/* SFrame encoder: round trips through the decoder, fixed byte layouts, and rows it must refuse. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define F_SORTED	SFU_SFRAME_F_FDE_SORTED
#define F_FP		SFU_SFRAME_F_FRAME_POINTER
#define F_PCREL		SFU_SFRAME_F_FDE_FUNC_START_PCREL
#define ABI_A64_BE	SFU_SFRAME_ABI_AARCH64_BE
#define ABI_A64_LE	SFU_SFRAME_ABI_AARCH64_LE
#define ABI_AMD64	SFU_SFRAME_ABI_AMD64_LE
#define ABI_S390X	SFU_SFRAME_ABI_S390X_BE

#define L_SP(o)		{ .kind = SFU_LOC_REG_OFFSET, .reg = SFU_REG_SP, .offset = (o) }
#define L_FP(o)		{ .kind = SFU_LOC_REG_OFFSET, .reg = SFU_REG_FP, .offset = (o) }
#define L_REG(dw, o)	{ .kind = SFU_LOC_REG_OFFSET, .reg = SFU_REG_OTHER, .dwarf_reg = (dw), .offset = (o) }
#define L_DEREF(r, dw, o) { .kind = SFU_LOC_DEREF, .reg = (r), .dwarf_reg = (dw), .offset = (o) }
#define L_AT(o)		{ .kind = SFU_LOC_AT_CFA, .offset = (o) }
#define L_SAME		{ .kind = SFU_LOC_SAME, .reg = SFU_REG_FP }
#define L_UNDEF		{ .kind = SFU_LOC_UNDEFINED }
#define L_INREG(r)	{ .kind = SFU_LOC_IN_REG, .reg = (r) }
#define L_INDW(dw, o)	{ .kind = SFU_LOC_IN_REG, .reg = SFU_REG_OTHER, .dwarf_reg = (dw), .offset = (o) }
#define ROW(s, fl, c, r, f) { .start = (s), .flags = (fl), .cfa = c, .ra = r, .fp = f }
#define OUTERMOST(s, fl) ROW(s, fl, L_UNDEF, L_UNDEF, L_SAME)

#define MANGLED	SFU_ROW_MANGLED_RA
#define FLEX	SFU_ROW_FLEX

#define N(a) (sizeof(a) / sizeof((a)[0]))

#define FUNC(st, sz, rows_) { .start = (st), .size = (sz), .rows = (rows_), .num_rows = N(rows_) }
#define PLT(st, sz, rep, rows_) \
	{ .start = (st), .size = (sz), .fde_type = SFU_FDE_PCMASK, .rep_size = (rep), \
	  .rows = (rows_), .num_rows = N(rows_) }

/* Version variants a round trip runs through. */
enum {
	V1 = 1 << 0,
	V2 = 1 << 1,
	V2_PCREL = 1 << 2,
	V3 = 1 << 3,
	ALL_VERSIONS = V1 | V2 | V2_PCREL | V3,
};

static void variant_opts(unsigned variant, struct sfu_sframe_enc_opts *o)
{
	o->version = variant == V1 ? 1 : variant == V3 ? 3 : 2;
	o->pcrel = variant == V2_PCREL;
}

static const char *variant_name(unsigned variant)
{
	return variant == V1 ? "v1" : variant == V2 ? "v2" : variant == V2_PCREL ? "v2+pcrel" : "v3";
}

/* ---- checking an encoded section by decoding it ---- */

static int start_cmp(const void *a, const void *b)
{
	const struct sfu_sframe_func *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static uint8_t want_fre_type(const struct sfu_sframe_func *fn)
{
	uint64_t max = fn->size;

	for (size_t k = 0; k < fn->num_rows; k++)
		if (fn->rows[k].start > max)
			max = fn->rows[k].start;
	return max <= 0xff ? SFU_FRE_ADDR1 : max <= 0xffff ? SFU_FRE_ADDR2 : SFU_FRE_ADDR4;
}

static bool func_flex(const struct sfu_sframe_func *fn)
{
	for (size_t k = 0; k < fn->num_rows; k++)
		if (fn->rows[k].flags & SFU_ROW_FLEX)
			return true;
	return false;
}

struct width_stats {
	unsigned offset_size[5];	/* rows by decoded offset size */
	unsigned fre_type[3];		/* FDEs by FRE type */
};

/* Smallest signed width of a data word. */
static unsigned width_of(int64_t v)
{
	return v >= INT8_MIN && v <= INT8_MAX ? 1 : v >= INT16_MIN && v <= INT16_MAX ? 2 : 4;
}

/*
 * The word size a default (non-flexible) row needs: the widest of its data
 * words, which this computes from the row as the format defines them.
 */
static unsigned want_default_width(const struct sfu_sframe_enc_opts *o, const struct sfu_row *r)
{
	bool s390x = o->abi == ABI_S390X;
	unsigned w = width_of(s390x ? (r->cfa.offset - 160) / 8 : r->cfa.offset);
	bool fp = r->fp.kind != SFU_LOC_SAME && !o->cfa_fixed_fp_offset;

	if (!o->cfa_fixed_ra_offset) {
		if (r->ra.kind == SFU_LOC_AT_CFA)
			w = w > width_of(r->ra.offset) ? w : width_of(r->ra.offset);
		else if (r->ra.kind == SFU_LOC_IN_REG && r->ra.reg == SFU_REG_OTHER)
			w = w > width_of(r->ra.dwarf_reg * 2 + 1) ? w : width_of(r->ra.dwarf_reg * 2 + 1);
	}
	if (fp && r->fp.kind == SFU_LOC_AT_CFA)
		w = w > width_of(r->fp.offset) ? w : width_of(r->fp.offset);
	else if (fp && r->fp.kind == SFU_LOC_IN_REG && r->fp.reg == SFU_REG_OTHER)
		w = w > width_of(r->fp.dwarf_reg * 2 + 1) ? w : width_of(r->fp.dwarf_reg * 2 + 1);
	return w;
}

/* Smallest unsigned width of a flexible control word. */
static unsigned uwidth_of(uint32_t v)
{
	return v <= UINT8_MAX ? 1 : v <= UINT16_MAX ? 2 : 4;
}

static uint32_t dwarf_of(uint8_t abi, const struct sfu_loc *l)
{
	static const uint16_t regs[][3] = {
		[ABI_A64_BE] = { 31, 29, 30 }, [ABI_A64_LE] = { 31, 29, 30 },
		[ABI_AMD64] = { 7, 6, 16 }, [ABI_S390X] = { 15, 11, 14 },
	};

	return l->reg == SFU_REG_OTHER ? l->dwarf_reg : regs[abi][l->reg];
}

/* Control word of a flexible rule: (regnum << 3) | (deref << 1) | reg_p. */
static uint32_t ctrl_of(uint8_t abi, const struct sfu_loc *l)
{
	switch (l->kind) {
	case SFU_LOC_AT_CFA: return 2;
	case SFU_LOC_REG_OFFSET:
	case SFU_LOC_IN_REG: return dwarf_of(abi, l) << 3 | 1;
	case SFU_LOC_DEREF: return dwarf_of(abi, l) << 3 | 3;
	default: return 0;
	}
}

/* The word size a flexible row needs: control words unsigned, offsets signed. */
static unsigned want_flex_width(const struct sfu_sframe_enc_opts *o, const struct sfu_row *r)
{
	int64_t cfa = o->abi == ABI_S390X ? (r->cfa.offset - 160) / 8 : r->cfa.offset;
	unsigned w = uwidth_of(ctrl_of(o->abi, &r->cfa));
	bool ra_untracked = !o->cfa_fixed_ra_offset && r->ra.kind == SFU_LOC_IN_REG &&
			    r->ra.reg == SFU_REG_RA && !r->ra.offset;
	bool fp = r->fp.kind != SFU_LOC_SAME || o->cfa_fixed_fp_offset;

#define WIDEN(x) do { unsigned x_ = (x); if (x_ > w) w = x_; } while (0)
	WIDEN(width_of(cfa));
	if (!ra_untracked) {
		WIDEN(uwidth_of(ctrl_of(o->abi, &r->ra)));
		if (r->ra.kind != SFU_LOC_SAME)
			WIDEN(width_of(r->ra.offset));
	}
	if (fp) {
		WIDEN(uwidth_of(ctrl_of(o->abi, &r->fp)));
		if (r->fp.kind != SFU_LOC_SAME)
			WIDEN(width_of(r->fp.offset));
	}
#undef WIDEN
	return w;
}

static void check_find(const struct sfu_sframe *sf, const struct sfu_sframe_func *fn,
		       const struct sfu_fde *fde, const char *what)
{
	for (size_t k = 0; k < fn->num_rows; k++) {
		uint32_t limit = fn->fde_type == SFU_FDE_PCMASK ? fn->rep_size : fn->size;
		uint64_t offs[3] = { fn->rows[k].start, 0, 0 };
		size_t noffs = 1;

		if (fn->rows[k].start >= limit || fn->rows[k].start >= fn->size)
			continue;
		/* the last byte before the next row starts still belongs to this row */
		offs[noffs++] = (k + 1 < fn->num_rows ? fn->rows[k + 1].start : limit) - 1;
		if (fn->fde_type == SFU_FDE_PCMASK && fn->rep_size && fn->start + fn->rep_size +
		    fn->rows[k].start < fn->start + fn->size)
			offs[noffs++] = fn->rep_size + fn->rows[k].start;	/* next block */
		for (size_t j = 0; j < noffs; j++) {
			const struct sfu_fde *f = NULL;
			const struct sfu_row *row = NULL;
			int err;

			if (offs[j] >= fn->size)
				continue;
			err = sfu_sframe__find(sf, fn->start + offs[j], &f, &row);
			if (err || f != fde || row != sfu_sframe__row(sf, fde->first_row + k))
				fail_msg("%s: find(%#llx) gave %d, FDE %p row %p; want row %zu of %#llx",
					 what, (unsigned long long)(fn->start + offs[j]), err,
					 (const void *)f, (const void *)row, k,
					 (unsigned long long)fn->start);
		}
	}
}

/* Decode @buf and compare it with what was encoded. */
static void check_round_trip(const struct sfu_sframe_enc_opts *o,
			     const struct sfu_sframe_func *funcs, size_t n, const void *buf,
			     size_t len, const char *what, struct width_stats *st)
{
	struct sfu_sframe_func *sorted = malloc((n ? n : 1) * sizeof(*sorted));
	bool pcrel = o->version == 3 || (o->version == 2 && o->pcrel);
	const struct sfu_sframe_header *h;
	struct sfu_diag diag = { 0 };
	struct sfu_sframe *sf;
	size_t total = 0;

	assert_non_null(sorted);
	sf = sframe_new_exact(buf, len, o->addr, &diag);
	if (!sf)
		fail_msg("%s: encoded section does not decode: %s", what, diag.reason);
	h = sfu_sframe__header(sf);
	assert_int_equal(h->version, o->version);
	assert_int_equal(h->flags, F_SORTED | (pcrel ? F_PCREL : 0) | o->flags);
	assert_int_equal(h->abi, o->abi);
	assert_int_equal(h->cfa_fixed_fp_offset, o->cfa_fixed_fp_offset);
	assert_int_equal(h->cfa_fixed_ra_offset, o->cfa_fixed_ra_offset);
	assert_int_equal(h->big_endian, o->big_endian);
	assert_int_equal(h->auxhdr_len, 0);
	assert_int_equal(sfu_sframe__fde_count(sf), n);

	if (n)
		memcpy(sorted, funcs, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), start_cmp);
	for (size_t i = 0; i < n; i++) {
		const struct sfu_sframe_func *fn = &sorted[i];
		const struct sfu_fde *fde = sfu_sframe__fde(sf, i);
		struct sfu_fde want = {
			.start = fn->start,
			.size = fn->size,
			.num_fres = fn->num_rows,
			.fre_type = want_fre_type(fn),
			.fde_type = fn->fde_type,
			.pauth_key = fn->pauth_key,
			.rep_size = o->version > 1 ? fn->rep_size :
				    fn->fde_type == SFU_FDE_PCMASK ? 16 : 0,
			.signal_frame = o->version == 3 && fn->signal_frame,
			.info2 = o->version == 3 && func_flex(fn),
		};

		assert_non_null(fde);
		assert_fde_equal(fde, &want);
		if (st)
			st->fre_type[fde->fre_type]++;
		for (size_t k = 0; k < fn->num_rows; k++) {
			const struct sfu_row *row = sfu_sframe__row(sf, fde->first_row + k);
			const struct sfu_row *in = &fn->rows[k];
			struct sfu_row expect = *in;

			/* the decoder marks each row of a signal trampoline (V3) */
			if (want.signal_frame)
				expect.flags |= SFU_ROW_SIGNAL_FRAME;
			assert_non_null(row);
			assert_row_equal(row, &expect);
			if (st && row->offset_size <= 4)
				st->offset_size[row->offset_size]++;
			if (st && in->ra.kind != SFU_LOC_UNDEFINED) {
				unsigned ww = in->flags & FLEX ? want_flex_width(o, in) :
								 want_default_width(o, in);

				if (row->offset_size != ww)
					fail_msg("%s: function %#llx row %zu: %u-byte words, want %u",
						 what, (unsigned long long)fn->start, k,
						 row->offset_size, ww);
			}
		}
		total += fn->num_rows;
		check_find(sf, fn, fde, what);
	}
	assert_int_equal(h->num_fres, total);
	sfu_sframe__free(sf);
	free(sorted);
}

static void encode_ok(const struct sfu_sframe_enc_opts *o, const struct sfu_sframe_func *funcs,
		      size_t n, void **buf, size_t *len, const char *what)
{
	struct sfu_diag diag = { 0 };
	int err;

	*buf = NULL;
	*len = 0;
	err = sfu_sframe_encode(o, funcs, n, buf, len, &diag);
	if (err)
		fail_msg("%s: encode failed with %d: %s", what, err, diag.reason);
	assert_non_null(*buf);
}

/* ---- round trips of hand-written tables ---- */

struct rt_case {
	const char *name;
	uint8_t abi;
	int8_t fixed_fp, fixed_ra;
	uint8_t flags;
	unsigned versions;
	const struct sfu_sframe_func *funcs;
	size_t nfuncs;
};

static const struct sfu_row amd64_push_rbp[] = {
	ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
	ROW(1, 0, L_SP(16), L_AT(-8), L_AT(-16)),
	ROW(4, 0, L_FP(16), L_AT(-8), L_AT(-16)),
	ROW(0x1f, 0, L_SP(8), L_AT(-8), L_SAME),
};
static const struct sfu_row amd64_plt[] = {
	ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
	ROW(11, 0, L_SP(16), L_AT(-8), L_SAME),
};
static const struct sfu_row amd64_start[] = {
	OUTERMOST(0, 0),
	ROW(4, 0, L_SP(8), L_AT(-8), L_SAME),
};
static const struct sfu_row amd64_big[] = {
	ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
	ROW(0x100, 0, L_SP(0x1000), L_AT(-8), L_AT(-0x1000)),
	ROW(0x8000, 0, L_FP(-129), L_AT(-8), L_AT(32767)),
	ROW(0x2ffff, 0, L_SP(0x123456), L_AT(-8), L_AT(INT32_MIN)),
};
static const struct sfu_row amd64_mid[] = {
	ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
	ROW(0xfff, 0, L_SP(INT32_MAX), L_AT(-8), L_SAME),
};
/* given out of order: the encoder sorts */
static const struct sfu_sframe_func amd64_funcs[] = {
	FUNC(0x401000, 0x20, amd64_push_rbp),
	PLT(0x400f00, 0x40, 16, amd64_plt),
	FUNC(0x410000, 0x30000, amd64_big),
	FUNC(0x401100, 0x10, amd64_start),
	FUNC(0x401200, 0x1000, amd64_mid),
};

static const struct sfu_row amd64_fixed_fp_rows[] = {
	ROW(0, 0, L_SP(8), L_AT(-8), L_AT(-16)),
	ROW(2, 0, L_FP(16), L_AT(-8), L_AT(-16)),
	OUTERMOST(8, 0),
};
static const struct sfu_sframe_func amd64_fixed_fp_funcs[] = {
	FUNC(0x401000, 0x10, amd64_fixed_fp_rows),
};

static const struct sfu_row a64_f0[] = {
	ROW(0, 0, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
	ROW(4, MANGLED, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
	ROW(8, MANGLED, L_SP(32), L_AT(-24), L_AT(-32)),
	ROW(0xc, MANGLED, L_FP(32), L_AT(-24), L_AT(-32)),
	ROW(0x38, MANGLED, L_SP(32), L_AT(-24), L_SAME),
	ROW(0x3c, 0, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
};
static const struct sfu_row a64_f1[] = {
	ROW(0, 0, L_SP(16), L_AT(-8), L_SAME),
	ROW(0x10000, 0, L_SP(0x10010), L_AT(-0x10008), L_AT(-0x10010)),
	ROW(0x1ffff, 0, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
};
static const struct sfu_row a64_f2[] = {
	OUTERMOST(0, 0),
};
static const struct sfu_sframe_func a64_funcs[] = {
	{ .start = 0x410000, .size = 0x40, .pauth_key = 1, .rows = a64_f0, .num_rows = N(a64_f0) },
	FUNC(0x420000, 0x20000, a64_f1),
	{ .start = 0x440000, .size = 0x8, .signal_frame = true, .rows = a64_f2,
	  .num_rows = N(a64_f2) },
	{ .start = 0x440100, .size = 0x10, .pauth_key = 1, .signal_frame = true, .rows = a64_f0,
	  .num_rows = 2 },
};

static const struct sfu_row s390x_rows[] = {
	ROW(0, 0, L_SP(160), L_INREG(SFU_REG_RA), L_SAME),
	ROW(6, 0, L_SP(320), L_AT(-48), L_AT(-72)),
	ROW(10, 0, L_SP(320), L_INREG(SFU_REG_RA), L_AT(-72)),	/* RA padding word */
	ROW(14, 0, L_FP(144), L_AT(-40), L_SAME),
	ROW(20, 0, L_SP(8160), L_AT(-48), L_SAME),
	ROW(24, 0, L_SP(-0x7fffff60), L_AT(-48), L_SAME),
	ROW(28, 0, L_SP(0x7ffffff8), L_AT(-48), L_SAME),
};
/* V2 only: registers in odd data words */
static const struct sfu_row s390x_v2_reg_rows[] = {
	ROW(0, 0, L_SP(160), L_INDW(1, 0), L_INDW(16, 0)),
	ROW(4, 0, L_SP(320), L_AT(-48), L_INREG(SFU_REG_FP)),
	ROW(8, 0, L_SP(320), L_INDW(63, 0), L_INDW(64, 0)),
};
static const struct sfu_sframe_func s390x_funcs[] = {
	FUNC(0x1000000, 0x40, s390x_rows),
};
static const struct sfu_sframe_func s390x_v2_funcs[] = {
	FUNC(0x1000000, 0x40, s390x_rows),
	FUNC(0x1000100, 0x20, s390x_v2_reg_rows),
};

static const struct sfu_row amd64_flex_rows[] = {
	ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME),
	ROW(4, FLEX, L_DEREF(SFU_REG_OTHER, 10, -8), L_AT(-8), L_AT(-16)),
	ROW(8, FLEX, L_REG(10, 16), L_AT(-8), L_AT(-16)),
	ROW(12, FLEX, L_SP(16), L_INDW(11, 0), L_INDW(3, 0)),
	ROW(16, FLEX, L_SP(0x1000), L_AT(-8), L_AT(-0x1010)),
	ROW(20, FLEX, L_REG(300, 0x20000), L_AT(-8), L_DEREF(SFU_REG_FP, 0, -0x20010)),
	OUTERMOST(24, FLEX),
	ROW(28, FLEX, L_SP(8), L_DEREF(SFU_REG_SP, 0, 0), L_SAME),
	ROW(32, FLEX, L_SP(8), { .kind = SFU_LOC_SAME }, L_SAME),
	ROW(36, FLEX, L_FP(16), L_AT(-8), L_INDW(3, 0)),
	ROW(40, FLEX, L_REG(9000, -5), L_AT(-8), L_SAME),
};
static const struct sfu_sframe_func amd64_flex_funcs[] = {
	FUNC(0x401000, 0x20, amd64_push_rbp),
	{ .start = 0x401100, .size = 0x40, .signal_frame = true, .rows = amd64_flex_rows,
	  .num_rows = N(amd64_flex_rows) },
	PLT(0x400f00, 0x40, 16, amd64_plt),
};

static const struct sfu_row a64_flex_rows[] = {
	ROW(0, FLEX, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
	ROW(4, FLEX, L_REG(9, 16), L_INREG(SFU_REG_RA), L_AT(-16)),	/* RA padding word */
	ROW(8, FLEX | MANGLED, L_SP(32), L_AT(-24), L_AT(-32)),
	ROW(12, FLEX, L_DEREF(SFU_REG_OTHER, 9, 0), L_AT(-8), L_AT(-16)),
	ROW(16, FLEX, L_SP(32), L_INDW(16, 0), L_SAME),
};
static const struct sfu_sframe_func a64_flex_funcs[] = {
	{ .start = 0x410000, .size = 0x40, .pauth_key = 1, .rows = a64_flex_rows,
	  .num_rows = N(a64_flex_rows) },
	FUNC(0x410100, 0x40, a64_f0),
};

static const struct sfu_row s390x_flex_rows[] = {
	ROW(0, FLEX, L_SP(160), L_INREG(SFU_REG_RA), L_SAME),
	ROW(4, FLEX, L_REG(10, 320), L_INDW(9, 0), L_AT(-72)),
	ROW(8, FLEX, L_FP(144), L_INREG(SFU_REG_RA), L_AT(-72)),
	ROW(12, FLEX, L_SP(160), L_AT(-48), L_INDW(0, 0)),
};
static const struct sfu_sframe_func s390x_flex_funcs[] = {
	FUNC(0x1000000, 0x40, s390x_rows),
	FUNC(0x1000100, 0x20, s390x_flex_rows),
};

/* V3 starts are 64-bit: functions far from the section. */
static const struct sfu_sframe_func far_funcs[] = {
	FUNC(0x7f0000001000ull, 0x20, amd64_push_rbp),
	FUNC(0x1000, 0x10, amd64_start),
};

static const struct rt_case rt_cases[] = {
	{ "amd64", ABI_AMD64, 0, -8, 0, ALL_VERSIONS, amd64_funcs, N(amd64_funcs) },
	{ "amd64_frame_pointer_flag", ABI_AMD64, 0, -8, F_FP, V1 | V2 | V2_PCREL, amd64_funcs,
	  N(amd64_funcs) },
	{ "amd64_fixed_fp", ABI_AMD64, -16, -8, 0, ALL_VERSIONS, amd64_fixed_fp_funcs,
	  N(amd64_fixed_fp_funcs) },
	{ "amd64_empty", ABI_AMD64, 0, -8, 0, ALL_VERSIONS, NULL, 0 },
	{ "aarch64_le", ABI_A64_LE, 0, 0, 0, ALL_VERSIONS, a64_funcs, N(a64_funcs) },
	{ "aarch64_be", ABI_A64_BE, 0, 0, 0, ALL_VERSIONS, a64_funcs, N(a64_funcs) },
	{ "s390x", ABI_S390X, 0, 0, 0, V2 | V2_PCREL | V3, s390x_funcs, N(s390x_funcs) },
	{ "s390x_v2_registers", ABI_S390X, 0, 0, 0, V2 | V2_PCREL, s390x_v2_funcs,
	  N(s390x_v2_funcs) },
	{ "amd64_v3_flex", ABI_AMD64, 0, -8, 0, V3, amd64_flex_funcs, N(amd64_flex_funcs) },
	{ "aarch64_v3_flex", ABI_A64_LE, 0, 0, 0, V3, a64_flex_funcs, N(a64_flex_funcs) },
	{ "aarch64_be_v3_flex", ABI_A64_BE, 0, 0, 0, V3, a64_flex_funcs, N(a64_flex_funcs) },
	{ "s390x_v3_flex", ABI_S390X, 0, 0, 0, V3, s390x_flex_funcs, N(s390x_flex_funcs) },
	{ "amd64_v3_far_functions", ABI_AMD64, 0, -8, 0, V3, far_funcs, N(far_funcs) },
};

static void test_round_trip(void **state)
{
	const struct rt_case *c = *state;

	for (unsigned variant = V1; variant <= V3; variant <<= 1) {
		if (!(c->versions & variant))
			continue;
		for (int be = 0; be <= 1; be++) {
			SFU_OPTS(sfu_sframe_enc_opts, o,
				.abi = c->abi,
				.big_endian = be,
				.flags = c->flags,
				.cfa_fixed_fp_offset = c->fixed_fp,
				.cfa_fixed_ra_offset = c->fixed_ra,
				.addr = c->abi == ABI_S390X ? 0xff0000 : 0x400000
			);
			char what[96];
			void *buf;
			size_t len;

			variant_opts(variant, &o);
			snprintf(what, sizeof(what), "%s %s %s", c->name, variant_name(variant),
				 be ? "BE" : "LE");
			encode_ok(&o, c->funcs, c->nfuncs, &buf, &len, what);
			check_round_trip(&o, c->funcs, c->nfuncs, buf, len, what, NULL);
			free(buf);
		}
	}
}

/* ---- random tables ---- */

struct gen {
	struct test_rng rng;
	const struct sfu_sframe_enc_opts *o;
};

static int32_t rand_offset(struct gen *g)
{
	switch (rng_range(&g->rng, 0, 2)) {
	case 0: return (int32_t)rng_range(&g->rng, INT8_MIN, INT8_MAX);
	case 1: return (int32_t)rng_range(&g->rng, INT16_MIN, INT16_MAX);
	default: return (int32_t)rng_range(&g->rng, INT32_MIN, INT32_MAX);
	}
}

/* A non-zero even offset (s390x V2: an odd word names a register, 0 is padding). */
static int32_t rand_s390x_offset(struct gen *g)
{
	int32_t v;

	do
		v = rand_offset(g) & ~1;
	while (!v);
	return v;
}

/* A CFA offset: on s390x it must be 160 plus a multiple of 8, within int32 after decoding. */
static int32_t rand_cfa_offset(struct gen *g)
{
	int64_t k;

	if (g->o->abi != ABI_S390X)
		return rand_offset(g);
	switch (rng_range(&g->rng, 0, 2)) {
	case 0: k = rng_range(&g->rng, INT8_MIN, INT8_MAX); break;
	case 1: k = rng_range(&g->rng, INT16_MIN, INT16_MAX); break;
	default: k = rng_range(&g->rng, -0x0fffffff, 0x0fffffeb); break;
	}
	return (int32_t)(160 + 8 * k);
}

/* A DWARF register that is none of the ABI's SP, FP and RA. */
static uint16_t rand_other_reg(struct gen *g, uint16_t max)
{
	static const uint16_t special[][3] = {
		[ABI_A64_BE] = { 31, 29, 30 }, [ABI_A64_LE] = { 31, 29, 30 },
		[ABI_AMD64] = { 7, 6, 16 }, [ABI_S390X] = { 15, 11, 14 },
	};
	const uint16_t *s = special[g->o->abi];
	uint16_t r;

	do
		r = (uint16_t)rng_range(&g->rng, 0, max);
	while (r == s[0] || r == s[1] || r == s[2]);
	return r;
}

static void rand_reg(struct gen *g, struct sfu_loc *l, uint16_t max)
{
	l->reg = (uint8_t)rng_range(&g->rng, SFU_REG_SP, SFU_REG_OTHER);
	if (l->reg == SFU_REG_RA)
		l->reg = SFU_REG_OTHER;
	l->dwarf_reg = l->reg == SFU_REG_OTHER ? rand_other_reg(g, max) : 0;
}

static void gen_default_row(struct gen *g, struct sfu_row *r)
{
	const struct sfu_sframe_enc_opts *o = g->o;
	bool s390x = o->abi == ABI_S390X;

	r->cfa.kind = SFU_LOC_REG_OFFSET;
	r->cfa.reg = rng_range(&g->rng, 0, 1) ? SFU_REG_SP : SFU_REG_FP;
	r->cfa.offset = rand_cfa_offset(g);
	r->fp.kind = SFU_LOC_SAME;
	r->fp.reg = SFU_REG_FP;

	if (o->cfa_fixed_ra_offset) {
		r->ra.kind = SFU_LOC_AT_CFA;
		r->ra.offset = o->cfa_fixed_ra_offset;
	} else {
		switch (rng_range(&g->rng, 0, s390x && o->version == 2 ? 2 : 1)) {
		case 0:
			r->ra.kind = SFU_LOC_IN_REG;
			r->ra.reg = SFU_REG_RA;
			break;
		case 1:
			r->ra.kind = SFU_LOC_AT_CFA;
			r->ra.offset = s390x ? rand_s390x_offset(g) : rand_offset(g);
			break;
		default:
			r->ra.kind = SFU_LOC_IN_REG;
			r->ra.reg = SFU_REG_OTHER;
			r->ra.dwarf_reg = rand_other_reg(g, 200);
			break;
		}
	}
	/* outside s390x an FP word can only follow a tracked RA */
	if (!s390x && r->ra.kind == SFU_LOC_IN_REG && !o->cfa_fixed_ra_offset)
		return;
	switch (rng_range(&g->rng, 0, s390x && o->version == 2 ? 2 : 1)) {
	case 0:
		break;
	case 1:
		r->fp.kind = SFU_LOC_AT_CFA;
		r->fp.offset = s390x ? rand_s390x_offset(g) : rand_offset(g);
		break;
	default:
		r->fp.kind = SFU_LOC_IN_REG;
		r->fp.reg = SFU_REG_OTHER;
		r->fp.dwarf_reg = rand_other_reg(g, 200);
		break;
	}
	if (o->abi != ABI_AMD64 && rng_range(&g->rng, 0, 1))
		r->flags |= MANGLED;
}

static void gen_flex_rule(struct gen *g, struct sfu_loc *l, bool is_ra)
{
	switch (rng_range(&g->rng, 0, 4)) {
	case 0:
		l->kind = SFU_LOC_AT_CFA;
		l->offset = rand_offset(g);
		break;
	case 1:
		l->kind = SFU_LOC_IN_REG;
		rand_reg(g, l, 40);
		if (l->reg == SFU_REG_SP && !is_ra)
			l->reg = SFU_REG_OTHER, l->dwarf_reg = rand_other_reg(g, 40);
		break;
	case 2:
		l->kind = SFU_LOC_DEREF;
		rand_reg(g, l, 4000);
		l->offset = rand_offset(g);
		break;
	case 3:
		l->kind = SFU_LOC_SAME;
		l->reg = is_ra ? 0 : SFU_REG_FP;
		break;
	default:
		if (is_ra && !g->o->cfa_fixed_ra_offset) {
			l->kind = SFU_LOC_IN_REG;	/* untracked: padding or nothing */
			l->reg = SFU_REG_RA;
		} else {
			l->kind = SFU_LOC_SAME;
			l->reg = is_ra ? 0 : SFU_REG_FP;
		}
		break;
	}
}

static void gen_flex_row(struct gen *g, struct sfu_row *r)
{
	r->flags = FLEX;
	r->cfa.kind = rng_range(&g->rng, 0, 1) ? SFU_LOC_REG_OFFSET : SFU_LOC_DEREF;
	rand_reg(g, &r->cfa, 9000);
	r->cfa.offset = rand_cfa_offset(g);
	gen_flex_rule(g, &r->ra, true);
	gen_flex_rule(g, &r->fp, false);
	if (g->o->abi != ABI_AMD64 && rng_range(&g->rng, 0, 1))
		r->flags |= MANGLED;
}

static void gen_row(struct gen *g, bool flex, struct sfu_row *r)
{
	memset(r, 0, sizeof(*r));
	if (rng_range(&g->rng, 0, 19) == 0) {
		r->flags = flex ? FLEX : 0;
		r->cfa.kind = r->ra.kind = SFU_LOC_UNDEFINED;
		r->fp.kind = SFU_LOC_SAME;
		r->fp.reg = SFU_REG_FP;
		return;
	}
	if (flex)
		gen_flex_row(g, r);
	else
		gen_default_row(g, r);
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

#define RAND_FUNCS 24
#define RAND_ROWS 10

struct rand_table {
	struct sfu_sframe_func funcs[RAND_FUNCS];
	struct sfu_row rows[RAND_FUNCS][RAND_ROWS];
};

static void gen_table(struct gen *g, struct rand_table *t)
{
	const struct sfu_sframe_enc_opts *o = g->o;
	uint64_t at = 0x500000;

	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < RAND_FUNCS; i++) {
		struct sfu_sframe_func *fn = &t->funcs[i];
		uint32_t starts[RAND_ROWS], limit;
		size_t n = (size_t)rng_range(&g->rng, 1, RAND_ROWS), m = 0;
		bool flex = o->version == 3 && rng_range(&g->rng, 0, 2) == 0;

		switch (i % 3) {	/* sizes needing ADDR1, ADDR2 and ADDR4 starts */
		case 0: fn->size = (uint32_t)rng_range(&g->rng, 1, 0xff); break;
		case 1: fn->size = (uint32_t)rng_range(&g->rng, 0x100, 0xffff); break;
		default: fn->size = (uint32_t)rng_range(&g->rng, 0x10000, 0x100000); break;
		}
		fn->start = at;
		at += fn->size + (uint64_t)rng_range(&g->rng, 0, 64);
		if (rng_range(&g->rng, 0, 5) == 0) {
			fn->fde_type = SFU_FDE_PCMASK;
			fn->rep_size = o->version == 1 ? 16 : (uint8_t)rng_range(&g->rng, 2, 255);
		}
		if (o->abi != ABI_AMD64 && o->abi != ABI_S390X)
			fn->pauth_key = (uint8_t)rng_range(&g->rng, 0, 1);
		fn->signal_frame = o->version == 3 && rng_range(&g->rng, 0, 3) == 0;

		limit = fn->fde_type == SFU_FDE_PCMASK ? fn->rep_size : fn->size;
		starts[m++] = rng_range(&g->rng, 0, 3) ? 0 : (uint32_t)rng_range(&g->rng, 0, limit - 1);
		for (size_t k = 1; k < n; k++)
			starts[m++] = (uint32_t)rng_range(&g->rng, 0, limit - 1);
		if (n > 1 && rng_range(&g->rng, 0, 1))
			starts[m - 1] = limit - 1;	/* the last byte */
		qsort(starts, m, sizeof(starts[0]), u32_cmp);
		n = 0;
		for (size_t k = 0; k < m; k++) {
			if (k && starts[k] == starts[k - 1])
				continue;
			gen_row(g, flex, &t->rows[i][n]);
			t->rows[i][n++].start = starts[k];
		}
		fn->rows = t->rows[i];
		fn->num_rows = n;
	}
	/* hand them to the encoder out of order */
	for (size_t i = RAND_FUNCS - 1; i > 0; i--) {
		size_t j = (size_t)rng_range(&g->rng, 0, (int64_t)i);
		struct sfu_sframe_func tmp = t->funcs[i];

		t->funcs[i] = t->funcs[j];
		t->funcs[j] = tmp;
	}
}

static void test_random_round_trips(void **state)
{
	static const struct { uint8_t abi; int8_t fixed_ra; unsigned versions; } abis[] = {
		{ ABI_AMD64, -8, ALL_VERSIONS },
		{ ABI_A64_LE, 0, ALL_VERSIONS },
		{ ABI_A64_BE, 0, ALL_VERSIONS },
		{ ABI_S390X, 0, V2 | V2_PCREL | V3 },
	};
	struct width_stats st = { { 0 }, { 0 } };
	struct rand_table *t = malloc(sizeof(*t));
	struct gen g;

	(void)state;
	assert_non_null(t);
	rng_seed(&g.rng, 20240611);
	for (size_t a = 0; a < N(abis); a++) {
		for (unsigned variant = V1; variant <= V3; variant <<= 1) {
			if (!(abis[a].versions & variant))
				continue;
			for (int iter = 0; iter < 12; iter++) {
				SFU_OPTS(sfu_sframe_enc_opts, o,
					.abi = abis[a].abi,
					.big_endian = iter & 1,
					.cfa_fixed_ra_offset = abis[a].fixed_ra,
					.addr = 0x400000
				);
				char what[96];
				void *buf;
				size_t len;

				variant_opts(variant, &o);
				g.o = &o;
				gen_table(&g, t);
				snprintf(what, sizeof(what), "random abi %u %s %s #%d", o.abi,
					 variant_name(variant), o.big_endian ? "BE" : "LE", iter);
				encode_ok(&o, t->funcs, RAND_FUNCS, &buf, &len, what);
				check_round_trip(&o, t->funcs, RAND_FUNCS, buf, len, what, &st);
				free(buf);
			}
		}
	}
	free(t);
	/* the generator reached every width */
	assert_true(st.offset_size[1] && st.offset_size[2] && st.offset_size[4]);
	assert_true(st.fre_type[SFU_FRE_ADDR1] && st.fre_type[SFU_FRE_ADDR2] &&
		    st.fre_type[SFU_FRE_ADDR4]);
}

/* ---- exact bytes ---- */

/* V1 AMD64 LE, section at 0x1000, written out by hand. */
static const uint8_t v1_amd64_bytes[] = {
	0xe2, 0xde, 0x01, 0x01, 0x03, 0x00, 0xf8, 0x00,	/* magic, v1, sorted, amd64, fp 0, ra -8 */
	0x02, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00,	/* 2 FDEs, 4 FREs */
	0x0e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* fre_len 14, fdeoff 0 */
	0x22, 0x00, 0x00, 0x00,				/* freoff 34 */
	0x00, 0x01, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00,	/* 0x1100 - 0x1000, size 0x20 */
	0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,	/* fre_off 0, 3 FREs */
	0x00,						/* ADDR1, PCINC */
	0x20, 0x01, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00,	/* 0x1120 - 0x1000, size 0x10 */
	0x0b, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,	/* fre_off 11, 1 FRE */
	0x00,
	0x00, 0x03, 0x08,				/* 0: sp+8 */
	0x01, 0x05, 0x10, 0xf0,				/* 1: sp+16, fp at cfa-16 */
	0x04, 0x04, 0x10, 0xf0,				/* 4: fp+16, fp at cfa-16 */
	0x00, 0x03, 0x08,				/* 0: sp+8 */
};

static void test_bytes_v1_amd64(void **state)
{
	static const struct sfu_row f0[] = {
		ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
		ROW(1, 0, L_SP(16), L_AT(-8), L_AT(-16)),
		ROW(4, 0, L_FP(16), L_AT(-8), L_AT(-16)),
	};
	static const struct sfu_row f1[] = {
		ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
	};
	const struct sfu_sframe_func funcs[] = { FUNC(0x1120, 0x10, f1), FUNC(0x1100, 0x20, f0) };
	SFU_OPTS(sfu_sframe_enc_opts, o, .version = 1, .abi = ABI_AMD64,
		 .cfa_fixed_ra_offset = -8, .addr = 0x1000);
	void *buf;
	size_t len;

	(void)state;
	encode_ok(&o, funcs, N(funcs), &buf, &len, "v1 amd64");
	assert_bytes_equal(buf, len, v1_amd64_bytes, sizeof(v1_amd64_bytes));
	free(buf);
}

/* V2 AArch64 BE with PCREL, section at 0x10000. */
static const uint8_t v2_aarch64_be_bytes[] = {
	0xde, 0xe2, 0x02, 0x05, 0x01, 0x00, 0x00, 0x00,	/* BE magic, v2, sorted|pcrel, aarch64-be */
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02,	/* 1 FDE, 2 FREs */
	0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,	/* fre_len 8, fdeoff 0 */
	0x00, 0x00, 0x00, 0x14,				/* freoff 20 */
	0x00, 0x00, 0x00, 0xe4, 0x00, 0x00, 0x00, 0x40,	/* 0x10100 - (0x10000 + 28), size 0x40 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,	/* fre_off 0, 2 FREs */
	0x20, 0x00, 0x00, 0x00,				/* ADDR1, key B, rep 0, padding */
	0x00, 0x03, 0x00,				/* 0: sp+0, RA in x30 */
	0x04, 0x87, 0x10, 0xf8, 0xf0,			/* 4: mangled, sp+16, ra cfa-8, fp cfa-16 */
};

static void test_bytes_v2_aarch64_be(void **state)
{
	static const struct sfu_row f0[] = {
		ROW(0, 0, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
		ROW(4, MANGLED, L_SP(16), L_AT(-8), L_AT(-16)),
	};
	const struct sfu_sframe_func funcs[] = {
		{ .start = 0x10100, .size = 0x40, .pauth_key = 1, .rows = f0, .num_rows = 2 },
	};
	SFU_OPTS(sfu_sframe_enc_opts, o, .version = 2, .abi = ABI_A64_BE, .big_endian = true,
		 .pcrel = true, .addr = 0x10000);
	void *buf;
	size_t len;

	(void)state;
	encode_ok(&o, funcs, N(funcs), &buf, &len, "v2 aarch64 be");
	assert_bytes_equal(buf, len, v2_aarch64_be_bytes, sizeof(v2_aarch64_be_bytes));
	free(buf);
}

/* V3 AMD64 LE, section at 0: 16-byte index entry, 5-byte attribute record. */
static const uint8_t v3_amd64_bytes[] = {
	0xe2, 0xde, 0x03, 0x05, 0x03, 0x00, 0xf8, 0x00,	/* v3, sorted|pcrel, amd64, ra -8 */
	0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,	/* 1 FDE, 1 FRE */
	0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* fre_len 5 + 3, fdeoff 0 */
	0x10, 0x00, 0x00, 0x00,				/* freoff 16 */
	0x24, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* 0x40 - 28, as an i64 */
	0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* size 16, fre_off 0 */
	0x01, 0x00, 0x80, 0x00, 0x00,			/* 1 FRE, signal frame, default type, rep 0 */
	0x00, 0x03, 0x08,				/* 0: sp+8 */
};

static void test_bytes_v3_amd64(void **state)
{
	static const struct sfu_row f0[] = { ROW(0, 0, L_SP(8), L_AT(-8), L_SAME) };
	const struct sfu_sframe_func funcs[] = {
		{ .start = 0x40, .size = 0x10, .signal_frame = true, .rows = f0, .num_rows = 1 },
	};
	SFU_OPTS(sfu_sframe_enc_opts, o, .version = 3, .abi = ABI_AMD64,
		 .cfa_fixed_ra_offset = -8);
	void *buf;
	size_t len;

	(void)state;
	encode_ok(&o, funcs, N(funcs), &buf, &len, "v3 amd64");
	assert_bytes_equal(buf, len, v3_amd64_bytes, sizeof(v3_amd64_bytes));
	free(buf);
}

/* ---- inputs the encoder must refuse ---- */

struct rej_case {
	const char *name;
	struct sfu_sframe_enc_opts opts;
	struct sfu_sframe_func func;
	int want;		/* negative errno */
	bool or_exact;		/* success is acceptable if the section round-trips exactly */
};

#define OPTS(v, abi_, fra) { .version = (v), .abi = (abi_), .cfa_fixed_ra_offset = (fra), \
			     .addr = 0x400000 }
#define ONE_ROW_FUNC(...) { .start = 0x401000, .size = 0x40, \
			    .rows = (const struct sfu_row[]){ __VA_ARGS__ }, .num_rows = 1 }
#define TWO_ROW_FUNC(...) { .start = 0x401000, .size = 0x40, \
			    .rows = (const struct sfu_row[]){ __VA_ARGS__ }, .num_rows = 2 }
#define REJ(nm, v, abi_, fra, fn, e) { .name = nm, .opts = OPTS(v, abi_, fra), .func = fn, .want = (e) }

static const struct sfu_row sp8_rows[] = {
	ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
	ROW(11, 0, L_SP(16), L_AT(-8), L_SAME),
};

static const struct rej_case rej_cases[] = {
	REJ("amd64_ra_not_at_fixed_offset", 2, ABI_AMD64, -8,
	    ONE_ROW_FUNC(ROW(0, 0, L_SP(8), L_AT(-16), L_SAME)), -EINVAL),
	REJ("amd64_ra_in_register", 1, ABI_AMD64, -8,
	    ONE_ROW_FUNC(ROW(0, 0, L_SP(8), L_INREG(SFU_REG_RA), L_SAME)), -EINVAL),
	REJ("amd64_cfa_other_register", 2, ABI_AMD64, -8,
	    ONE_ROW_FUNC(ROW(0, 0, L_REG(10, 8), L_AT(-8), L_SAME)), -EINVAL),
	REJ("amd64_cfa_deref_v2", 2, ABI_AMD64, -8,
	    ONE_ROW_FUNC(ROW(0, 0, L_DEREF(SFU_REG_SP, 0, 8), L_AT(-8), L_SAME)), -EINVAL),
	REJ("amd64_cfa_deref_v3_not_flex", 3, ABI_AMD64, -8,
	    ONE_ROW_FUNC(ROW(0, 0, L_DEREF(SFU_REG_SP, 0, 8), L_AT(-8), L_SAME)), -EINVAL),
	REJ("amd64_cfa_at_cfa", 1, ABI_AMD64, -8,
	    ONE_ROW_FUNC(ROW(0, 0, L_AT(8), L_AT(-8), L_SAME)), -EINVAL),
	REJ("aarch64_fp_without_ra", 2, ABI_A64_LE, 0,
	    ONE_ROW_FUNC(ROW(0, 0, L_SP(16), L_INREG(SFU_REG_RA), L_AT(-16))), -EINVAL),
	REJ("aarch64_ra_other_register", 2, ABI_A64_LE, 0,
	    ONE_ROW_FUNC(ROW(0, 0, L_SP(16), L_INDW(9, 0), L_SAME)), -EINVAL),
	REJ("aarch64_fp_deref", 3, ABI_A64_BE, 0,
	    ONE_ROW_FUNC(ROW(0, 0, L_SP(16), L_AT(-8), L_DEREF(SFU_REG_SP, 0, 0))), -EINVAL),
	REJ("aarch64_ra_same", 1, ABI_A64_LE, 0,
	    ONE_ROW_FUNC(ROW(0, 0, L_SP(16), { .kind = SFU_LOC_SAME }, L_SAME)), -EINVAL),
	REJ("s390x_cfa_not_160_plus_8k", 2, ABI_S390X, 0,
	    ONE_ROW_FUNC(ROW(0, 0, L_SP(161), L_INREG(SFU_REG_RA), L_SAME)), -EINVAL),
	REJ("s390x_v3_ra_in_other_register", 3, ABI_S390X, 0,
	    ONE_ROW_FUNC(ROW(0, 0, L_SP(160), L_INDW(9, 0), L_SAME)), -EINVAL),
	REJ("s390x_v2_register_plus_offset", 2, ABI_S390X, 0,
	    ONE_ROW_FUNC(ROW(0, 0, L_SP(160), L_INDW(9, 8), L_SAME)), -EINVAL),
	REJ("rows_with_equal_starts", 2, ABI_AMD64, -8,
	    TWO_ROW_FUNC(ROW(4, 0, L_SP(8), L_AT(-8), L_SAME),
			 ROW(4, 0, L_SP(16), L_AT(-8), L_SAME)), -EINVAL),
	REJ("rows_with_decreasing_starts", 3, ABI_AMD64, -8,
	    TWO_ROW_FUNC(ROW(8, 0, L_SP(8), L_AT(-8), L_SAME),
			 ROW(4, 0, L_SP(16), L_AT(-8), L_SAME)), -EINVAL),
	{ .name = "pcmask_rep_size_0_v2", .opts = OPTS(2, ABI_AMD64, -8),
	  .func = { .start = 0x401000, .size = 0x40, .fde_type = SFU_FDE_PCMASK, .rows = sp8_rows,
		    .num_rows = 2 }, .want = -EINVAL },
	{ .name = "pcmask_rep_size_0_v3", .opts = OPTS(3, ABI_AMD64, -8),
	  .func = { .start = 0x401000, .size = 0x40, .fde_type = SFU_FDE_PCMASK, .rows = sp8_rows,
		    .num_rows = 2 }, .want = -EINVAL },
	REJ("flex_cfa_at_cfa", 3, ABI_AMD64, -8,
	    ONE_ROW_FUNC(ROW(0, FLEX, L_AT(8), L_AT(-8), L_SAME)), -EINVAL),
	REJ("flex_cfa_undefined_ra_defined", 3, ABI_AMD64, -8,
	    ONE_ROW_FUNC(ROW(0, FLEX, L_UNDEF, L_AT(-8), L_SAME)), -EINVAL),
	REJ("version_0", 0, ABI_AMD64, -8, ONE_ROW_FUNC(ROW(0, 0, L_SP(8), L_AT(-8), L_SAME)),
	    -EINVAL),
	REJ("version_4", 4, ABI_AMD64, -8, ONE_ROW_FUNC(ROW(0, 0, L_SP(8), L_AT(-8), L_SAME)),
	    -EINVAL),
	REJ("abi_0", 2, 0, -8, ONE_ROW_FUNC(ROW(0, 0, L_SP(8), L_AT(-8), L_SAME)), -EINVAL),
	REJ("abi_5", 2, 5, -8, ONE_ROW_FUNC(ROW(0, 0, L_SP(8), L_AT(-8), L_SAME)), -EINVAL),
	{ .name = "v1_start_out_of_reach", .opts = OPTS(1, ABI_AMD64, -8),
	  .func = { .start = 0x400000 + 0x80000000ull, .size = 0x40, .rows = sp8_rows,
		    .num_rows = 2 }, .want = -ERANGE },
	{ .name = "v2_pcrel_start_out_of_reach",
	  .opts = { .version = 2, .abi = ABI_AMD64, .pcrel = true, .cfa_fixed_ra_offset = -8,
		    .addr = 0x100000000ull },
	  .func = { .start = 0x1000, .size = 0x40, .rows = sp8_rows, .num_rows = 2 },
	  .want = -ERANGE },

	/* What the format cannot say, the encoder must refuse rather than write something else. */
	REJ("s390x_v2_ra_at_cfa_0", 2, ABI_S390X, 0,
	    ONE_ROW_FUNC(ROW(0, 0, L_SP(160), L_AT(0), L_SAME)), -EINVAL),
	REJ("s390x_v3_ra_at_cfa_0", 3, ABI_S390X, 0,
	    ONE_ROW_FUNC(ROW(0, 0, L_SP(160), L_AT(0), L_AT(-72))), -EINVAL),
	REJ("s390x_v2_ra_at_odd_offset", 2, ABI_S390X, 0,
	    ONE_ROW_FUNC(ROW(0, 0, L_SP(160), L_AT(-47), L_SAME)), -EINVAL),
	REJ("s390x_v2_fp_at_odd_offset", 2, ABI_S390X, 0,
	    ONE_ROW_FUNC(ROW(0, 0, L_SP(160), L_AT(-48), L_AT(-71))), -EINVAL),
	REJ("row_start_past_function_size", 2, ABI_AMD64, -8,
	    TWO_ROW_FUNC(ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
			 ROW(0x41, 0, L_SP(16), L_AT(-8), L_SAME)), -EINVAL),
	{ .name = "v1_pcmask_rep_size_32", .opts = OPTS(1, ABI_AMD64, -8),
	  .func = { .start = 0x401000, .size = 0x40, .fde_type = SFU_FDE_PCMASK, .rep_size = 32,
		    .rows = sp8_rows, .num_rows = 2 }, .want = -EINVAL },

	/* Either refused or written faithfully. */
	{ .name = "v3_flag_frame_pointer",
	  .opts = { .version = 3, .abi = ABI_AMD64, .flags = F_FP, .cfa_fixed_ra_offset = -8,
		    .addr = 0x400000 },
	  .func = FUNC(0x401000, 0x40, sp8_rows), .want = -EINVAL, .or_exact = true },
	{ .name = "v1_flag_pcrel",
	  .opts = { .version = 1, .abi = ABI_AMD64, .flags = F_PCREL, .cfa_fixed_ra_offset = -8,
		    .addr = 0x400000 },
	  .func = FUNC(0x401000, 0x40, sp8_rows), .want = -EINVAL, .or_exact = true },
	{ .name = "v2_flag_pcrel_without_pcrel_option",
	  .opts = { .version = 2, .abi = ABI_AMD64, .flags = F_PCREL, .cfa_fixed_ra_offset = -8,
		    .addr = 0x400000 },
	  .func = FUNC(0x401000, 0x40, sp8_rows), .want = -EINVAL, .or_exact = true },
	{ .name = "v2_flag_0x80",
	  .opts = { .version = 2, .abi = ABI_AMD64, .flags = 0x80, .cfa_fixed_ra_offset = -8,
		    .addr = 0x400000 },
	  .func = FUNC(0x401000, 0x40, sp8_rows), .want = -EINVAL, .or_exact = true },
	{ .name = "pauth_key_2", .opts = OPTS(2, ABI_A64_LE, 0),
	  .func = { .start = 0x401000, .size = 0x40, .pauth_key = 2,
		    .rows = (const struct sfu_row[]){ ROW(0, 0, L_SP(0), L_INREG(SFU_REG_RA), L_SAME) },
		    .num_rows = 1 }, .want = -EINVAL, .or_exact = true },
	{ .name = "fde_type_2", .opts = OPTS(3, ABI_AMD64, -8),
	  .func = { .start = 0x401000, .size = 0x40, .fde_type = 2, .rep_size = 16,
		    .rows = sp8_rows, .num_rows = 2 }, .want = -EINVAL, .or_exact = true },
	{ .name = "s390x_cfa_offset_int32_min", .opts = OPTS(2, ABI_S390X, 0),
	  .func = ONE_ROW_FUNC(ROW(0, 0, L_SP(INT32_MIN), L_INREG(SFU_REG_RA), L_SAME)),
	  .want = -EINVAL, .or_exact = true },
};

static void test_reject(void **state)
{
	const struct rej_case *c = *state;

	for (int be = 0; be <= 1; be++) {
		struct sfu_sframe_enc_opts o = c->opts;
		struct sfu_diag diag = { 0 };
		void *buf = (void *)&diag;	/* must stay untouched on failure */
		size_t len = 12345;
		int err;

		o.sz = sizeof(o);	/* its padding is zero, as SFU_OPTS() makes it */
		o.big_endian = be;
		err = sfu_sframe_encode(&o, &c->func, 1, &buf, &len, &diag);
		if (!err && c->or_exact) {
			check_round_trip(&o, &c->func, 1, buf, len, c->name, NULL);
			free(buf);
			continue;
		}
		if (err != c->want) {
			if (!err)
				free(buf);
			fail_msg("%s (%s): got %d, want %d", c->name, be ? "BE" : "LE", err, c->want);
		}
		assert_int_equal(diag.err, c->want);
		assert_true(diag.reason[0] != '\0');
		assert_ptr_equal(buf, (void *)&diag);
		assert_int_equal(len, 12345);
		if (getenv("SFU_TEST_VERBOSE"))
			print_message("%s: %s\n", c->name, diag.reason);
	}
}

/* V3 keeps the row count in 16 bits. */
static void test_v3_row_limit(void **state)
{
	const size_t n = 65536;
	struct sfu_row *rows = calloc(n, sizeof(*rows));
	struct sfu_sframe_func fn = { .start = 0x401000, .size = 0x100000, .rows = rows,
				      .num_rows = n };
	struct sfu_sframe_enc_opts o = OPTS(3, ABI_AMD64, -8);
	struct sfu_diag diag = { 0 };
	void *buf = NULL;
	size_t len = 0;

	(void)state;
	o.sz = sizeof(o);
	assert_non_null(rows);
	for (size_t k = 0; k < n; k++)
		rows[k] = (struct sfu_row)ROW((uint32_t)k * 2, 0, L_SP(8), L_AT(-8), L_SAME);
	assert_int_equal(sfu_sframe_encode(&o, &fn, 1, &buf, &len, &diag), -ERANGE);
	assert_true(diag.reason[0] != '\0');
	assert_null(buf);

	/* one fewer fits, and decodes */
	fn.num_rows = n - 1;
	encode_ok(&o, &fn, 1, &buf, &len, "65535 rows");
	check_round_trip(&o, &fn, 1, buf, len, "65535 rows", NULL);
	free(buf);
	free(rows);
}

int main(void)
{
	struct CMUnitTest tests[N(rt_cases) + N(rej_cases) + 8];
	size_t n = 0;

	for (size_t i = 0; i < N(rt_cases); i++)
		tests[n++] = (struct CMUnitTest){ rt_cases[i].name, test_round_trip, NULL, NULL,
						  (void *)&rt_cases[i] };
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_random_round_trips);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_bytes_v1_amd64);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_bytes_v2_aarch64_be);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_bytes_v3_amd64);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_v3_row_limit);
	for (size_t i = 0; i < N(rej_cases); i++)
		tests[n++] = (struct CMUnitTest){ rej_cases[i].name, test_reject, NULL, NULL,
						  (void *)&rej_cases[i] };
	return _cmocka_run_group_tests("sframe_encode", tests, n, NULL, NULL);
}
