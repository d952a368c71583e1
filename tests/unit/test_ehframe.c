/* SPDX-License-Identifier: BSD-2-Clause */
/* .eh_frame conversion tests on hand-made CFI bytes, on this test binary, and on broken input. */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define SEC_ADDR	0x200000ull	/* where the hand-made .eh_frame is said to be */
#define HDR_ADDR	0x1ff000ull	/* and its .eh_frame_hdr */
#define FUNC		0x401000ull	/* the function the FDEs describe */
#define RANGE		0x40u

/* DW_CFA_* and DW_EH_PE_* used below, spelled out so that the test does not share the parser's. */
enum {
	ADV = 0x40, OFF = 0x80, RST = 0xc0,
	NOP = 0x00, SET_LOC = 0x01, ADV1 = 0x02, ADV2 = 0x03, ADV4 = 0x04, OFF_EXT = 0x05,
	RST_EXT = 0x06, UNDEF = 0x07, SAME_VALUE = 0x08, REGISTER = 0x09, REMEMBER = 0x0a,
	RESTORE_STATE = 0x0b, DEF_CFA = 0x0c, DEF_CFA_REG = 0x0d, DEF_CFA_OFF = 0x0e,
	DEF_CFA_EXPR = 0x0f, EXPR = 0x10, OFF_EXT_SF = 0x11, DEF_CFA_SF = 0x12,
	DEF_CFA_OFF_SF = 0x13, VAL_OFF = 0x14, VAL_OFF_SF = 0x15, VAL_EXPR = 0x16,
	ADV8 = 0x1d, NEGATE_RA = 0x2d, ARGS_SIZE = 0x2e, NEG_OFF_EXT = 0x2f, ASPACE = 0x30,
};
enum {
	PE_ABS = 0x00, PE_ULEB = 0x01, PE_U2 = 0x02, PE_U4 = 0x03, PE_U8 = 0x04, PE_SLEB = 0x09,
	PE_S2 = 0x0a, PE_S4 = 0x0b, PE_S8 = 0x0c, PE_PCREL = 0x10, PE_TEXTREL = 0x20,
	PE_DATAREL = 0x30, PE_FUNCREL = 0x40, PE_ALIGNED = 0x50, PE_INDIRECT = 0x80,
};
enum { BREG0 = 0x70, BREGX = 0x92, DEREF = 0x06, LIT0 = 0x30 };

/* ---- rows as the decoder gives them ---- */

#define L_SP(o)		{ .kind = SFU_LOC_REG_OFFSET, .reg = SFU_REG_SP, .offset = (o) }
#define L_FP(o)		{ .kind = SFU_LOC_REG_OFFSET, .reg = SFU_REG_FP, .offset = (o) }
#define L_REG(r, o)	{ .kind = SFU_LOC_REG_OFFSET, .reg = SFU_REG_OTHER, .dwarf_reg = (r), .offset = (o) }
#define L_DEREF(g, o)	{ .kind = SFU_LOC_DEREF, .reg = (g), .offset = (o) }
#define L_AT(o)		{ .kind = SFU_LOC_AT_CFA, .offset = (o) }
#define L_SAME		{ .kind = SFU_LOC_SAME, .reg = SFU_REG_FP }
#define L_UNDEF		{ .kind = SFU_LOC_UNDEFINED }
#define L_LR		{ .kind = SFU_LOC_IN_REG, .reg = SFU_REG_RA }
#define L_INREG(r)	{ .kind = SFU_LOC_IN_REG, .reg = SFU_REG_OTHER, .dwarf_reg = (r) }
#define ROW(s, f, c, r, p) { .start = (s), .flags = (f), .cfa = c, .ra = r, .fp = p }
#define OUTER(s, f)	{ .start = (s), .flags = (f), .cfa = L_UNDEF, .ra = L_UNDEF, .fp = L_SAME }
#define UNUSABLE(s, c)	{ .start = (s), .flags = SFU_ROW_FLEX | SFU_ROW_UNUSABLE, .cfa = c, \
			  .ra = L_UNDEF, .fp = L_SAME }
#define FLEX		SFU_ROW_FLEX
#define MANGLED		SFU_ROW_MANGLED_RA

/* ---- a writer of .eh_frame bytes ---- */

static void put_uleb(struct bytebuf *b, uint64_t v)
{
	do {
		uint8_t byte = v & 0x7f;

		v >>= 7;
		bb_u8(b, byte | (v ? 0x80 : 0));
	} while (v);
}

static void put_sleb(struct bytebuf *b, int64_t v)
{
	for (;;) {
		uint8_t byte = v & 0x7f;

		v >>= 7;
		if ((v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40))) {
			bb_u8(b, byte);
			return;
		}
		bb_u8(b, byte | 0x80);
	}
}

struct cie_spec {
	uint8_t version;	/* 0: 1 */
	const char *aug;	/* NULL: "zR" */
	uint64_t caf;		/* 0: 1 */
	int64_t daf;		/* 0: -8 */
	uint64_t ra;		/* 0: 16 */
	uint8_t fde_enc;	/* for 'R', when fde_enc_set; otherwise pcrel|sdata4 */
	bool fde_enc_set;
	const uint8_t *augdata;	/* replaces the generated augmentation data */
	size_t augdata_len;
	const uint8_t *insns;	/* NULL: x86-64's def_cfa rsp+8, rip at cfa-8 */
	size_t insns_len;
	bool dwarf64;
};

static const uint8_t x86_cie_insns[] = { DEF_CFA, 7, 8, OFF | 16, 1 };
static const uint8_t a64_cie_insns[] = { DEF_CFA, 31, 0 };

static size_t begin_entry(struct bytebuf *b, bool dwarf64)
{
	size_t at = b->len;

	if (dwarf64) {
		bb_u32(b, 0xffffffff);
		bb_u64(b, 0);
	} else {
		bb_u32(b, 0);
	}
	return at;
}

static void end_entry(struct bytebuf *b, size_t at, bool dwarf64)
{
	if (dwarf64)
		bb_set(b, at + 4, b->len - at - 12, 8);
	else
		bb_set(b, at, b->len - at - 4, 4);
}

static uint8_t cie_fde_enc(const struct cie_spec *c)
{
	const char *aug = c->aug ? c->aug : "zR";

	if (!strchr(aug, 'R'))
		return PE_ABS;
	return c->fde_enc_set ? c->fde_enc : PE_PCREL | PE_S4;
}

static size_t put_cie(struct bytebuf *b, const struct cie_spec *c)
{
	const char *aug = c->aug ? c->aug : "zR";
	uint8_t version = c->version ? c->version : 1;
	size_t at = begin_entry(b, c->dwarf64);

	if (c->dwarf64)
		bb_u64(b, 0);
	else
		bb_u32(b, 0);
	bb_u8(b, version);
	bb_bytes(b, aug, strlen(aug) + 1);
	if (!strncmp(aug, "eh", 2))
		bb_u64(b, 0);
	if (version == 4) {
		bb_u8(b, 8);
		bb_u8(b, 0);
	}
	put_uleb(b, c->caf ? c->caf : 1);
	put_sleb(b, c->daf ? c->daf : -8);
	if (version == 1)
		bb_u8(b, c->ra ? c->ra : 16);
	else
		put_uleb(b, c->ra ? c->ra : 16);
	if (aug[0] == 'z') {
		if (c->augdata) {
			put_uleb(b, c->augdata_len);
			bb_bytes(b, c->augdata, c->augdata_len);
		} else {
			struct bytebuf d;

			bb_init(&d, b->big_endian);
			for (const char *a = aug + 1; *a; a++) {
				if (*a == 'R')
					bb_u8(&d, cie_fde_enc(c));
				else if (*a == 'L')
					bb_u8(&d, PE_PCREL | PE_S4);
				else if (*a == 'P') {
					bb_u8(&d, PE_INDIRECT | PE_PCREL | PE_S4);
					bb_u32(&d, 0x1234);
				}
			}
			put_uleb(b, d.len);
			bb_bytes(b, d.data, d.len);
		}
	}
	if (c->insns)
		bb_bytes(b, c->insns, c->insns_len);
	else
		bb_bytes(b, x86_cie_insns, sizeof(x86_cie_insns));
	end_entry(b, at, c->dwarf64);
	return at;
}

/* A pointer in encoding @enc at the buffer's end, which is at address @sec + b->len. */
static void put_ptr(struct bytebuf *b, uint8_t enc, uint64_t v, uint64_t sec, uint64_t data_base,
		    uint64_t text_base)
{
	if ((enc & 0x70) == PE_ALIGNED)
		while ((sec + b->len) & 7)
			bb_u8(b, 0);
	switch (enc & 0x70) {
	case PE_PCREL: v -= sec + b->len; break;
	case PE_DATAREL: v -= data_base; break;
	case PE_TEXTREL: v -= text_base; break;
	default: break;
	}
	switch (enc & 0x0f) {
	case PE_ABS: case PE_U8: case PE_S8: bb_u64(b, v); break;
	case PE_U2: case PE_S2: bb_u16(b, v); break;
	case PE_U4: case PE_S4: bb_u32(b, v); break;
	case PE_ULEB: put_uleb(b, v); break;
	case PE_SLEB: put_sleb(b, (int64_t)v); break;
	default: bb_u32(b, v); break;
	}
}

struct fde_spec {
	size_t cie;		/* offset of its CIE */
	uint8_t enc;		/* the CIE's FDE encoding */
	bool z;			/* the CIE has 'z': write augmentation data */
	uint64_t start;		/* 0: FUNC */
	uint64_t range;		/* 0: RANGE */
	const uint8_t *insns;
	size_t insns_len;
	const uint8_t *augdata;	/* FDE augmentation data (LSDA) */
	size_t augdata_len;
	bool dwarf64;
};

static size_t put_fde(struct bytebuf *b, const struct fde_spec *f, uint64_t data_base,
		      uint64_t text_base)
{
	size_t at = begin_entry(b, f->dwarf64), field = b->len;

	if (f->dwarf64)
		bb_u64(b, field - f->cie);
	else
		bb_u32(b, field - f->cie);
	put_ptr(b, f->enc, f->start ? f->start : FUNC, SEC_ADDR, data_base, text_base);
	/* the range: the format of the encoding, no application */
	put_ptr(b, f->enc & 0x0f, f->range ? f->range : RANGE, SEC_ADDR, 0, 0);
	if (f->z) {
		put_uleb(b, f->augdata_len);
		if (f->augdata_len)
			bb_bytes(b, f->augdata, f->augdata_len);
	}
	if (f->insns_len)
		bb_bytes(b, f->insns, f->insns_len);
	end_entry(b, at, f->dwarf64);
	return at;
}

/* One CIE and one FDE of @insns with the x86-64 defaults. */
static void one_fde(struct bytebuf *b, const uint8_t *insns, size_t len, uint64_t range)
{
	struct cie_spec c = { 0 };
	size_t cie;

	bb_init(b, false);
	cie = put_cie(b, &c);
	put_fde(b, &(struct fde_spec){ .cie = cie, .enc = PE_PCREL | PE_S4, .z = true,
				       .range = range, .insns = insns, .insns_len = len }, 0, 0);
	bb_u32(b, 0);	/* the terminator crtend.o adds */
}

/* ---- running the converter ---- */

struct conv_in {
	uint16_t machine;
	bool big_endian;
	const struct bytebuf *hdr;
	uint64_t data_base, text_base;
};

/* Convert from exact-size heap copies, so the address sanitizer sees a read past the end. */
static struct sfu_sframe *convert(const struct bytebuf *b, const struct conv_in *ci,
				  struct sfu_eh_frame_stats *st, struct sfu_diag *diag)
{
	void *data = memdup_exact_or_fail(b->data, b->len);
	void *hdr = ci && ci->hdr ? memdup_exact_or_fail(ci->hdr->data, ci->hdr->len) : NULL;
	struct sfu_eh_frame in = {
		.data = data,
		.size = b->len,
		.addr = SEC_ADDR,
		.hdr = hdr,
		.hdr_size = hdr ? ci->hdr->len : 0,
		.hdr_addr = HDR_ADDR,
		.machine = ci && ci->machine ? ci->machine : EM_X86_64,
		.big_endian = ci && ci->big_endian,
		.data_base = ci ? ci->data_base : 0,
		.text_base = ci ? ci->text_base : 0,
	};
	struct sfu_sframe *sf;
	int saved;

	sf = sfu_sframe__from_eh_frame(&in, st, diag);
	saved = errno;
	free(data);
	free(hdr);
	errno = saved;
	return sf;
}

static struct sfu_sframe *convert_ok(const struct bytebuf *b, const struct conv_in *ci,
				     struct sfu_eh_frame_stats *st)
{
	struct sfu_diag diag = { 0 };
	struct sfu_sframe *sf = convert(b, ci, st, &diag);

	if (!sf)
		fail_msg("conversion failed: %s (%s)", diag.reason, strerror(errno));
	return sf;
}

static void _assert_rows(const struct sfu_sframe *sf, size_t fde_idx, const struct sfu_row *want,
			 size_t n, const char *file, int line)
{
	const struct sfu_fde *fde = sfu_sframe__fde(sf, fde_idx);

	if (!fde) {
		print_error("no FDE %zu\n", fde_idx);
		_fail(file, line);
		return;
	}
	if (fde->num_fres != n) {
		print_error("FDE %zu has %u rows, want %zu\n", fde_idx, fde->num_fres, n);
		for (uint32_t k = 0; k < fde->num_fres; k++) {
			const struct sfu_row *r = sfu_sframe__row(sf, fde->first_row + k);

			print_error("  row %u: start %#x flags %#x cfa %d/%d/%d ra %d/%d fp %d/%d\n", k,
				    r->start, r->flags, r->cfa.kind, r->cfa.reg, r->cfa.offset,
				    r->ra.kind, r->ra.offset, r->fp.kind, r->fp.offset);
		}
		_fail(file, line);
		return;
	}
	for (size_t k = 0; k < n; k++)
		_assert_row_equal(sfu_sframe__row(sf, fde->first_row + k), &want[k], file, line);
}
#define assert_rows(sf, i, w, n) _assert_rows(sf, i, w, n, __FILE__, __LINE__)

/* ---- every DW_CFA operation, on x86-64 ---- */

struct op_case {
	const char *name;
	uint8_t insns[48];
	size_t len;
	struct sfu_row rows[8];
	size_t nrows;
	uint32_t cut;		/* expected stats.fdes_cut */
	uint8_t set_loc;	/* 1 + index of a DW_CFA_set_loc whose operand is patched */
	uint8_t set_loc_to;	/* to this offset in the function */
};

#define INSNS(...) { __VA_ARGS__ }, sizeof((uint8_t[]){ __VA_ARGS__ })

static const struct op_case x86_ops[] = {
	{ "push rbp; mov rsp, rbp; leave",
	  INSNS(ADV | 1, DEF_CFA_OFF, 16, OFF | 6, 2, ADV | 3, DEF_CFA_REG, 6, ADV1, 0x30,
		DEF_CFA, 7, 8),
	  { ROW(0, 0, L_SP(8), L_AT(-8), L_SAME), ROW(1, 0, L_SP(16), L_AT(-8), L_AT(-16)),
	    ROW(4, 0, L_FP(16), L_AT(-8), L_AT(-16)), ROW(0x34, 0, L_SP(8), L_AT(-8), L_AT(-16)) },
	  4, 0, 0, 0 },
	{ "advance_loc2, advance_loc4, MIPS_advance_loc8",
	  INSNS(ADV2, 0x10, 0, DEF_CFA_OFF, 16, ADV4, 0x10, 0, 0, 0, DEF_CFA_OFF, 24,
		ADV8, 0x10, 0, 0, 0, 0, 0, 0, 0, DEF_CFA_OFF, 32),
	  { ROW(0, 0, L_SP(8), L_AT(-8), L_SAME), ROW(0x10, 0, L_SP(16), L_AT(-8), L_SAME),
	    ROW(0x20, 0, L_SP(24), L_AT(-8), L_SAME), ROW(0x30, 0, L_SP(32), L_AT(-8), L_SAME) },
	  4, 0, 0, 0 },
	{ "set_loc (pcrel sdata4 pointer)",
	  /* the pointer is patched by the test: +8 from the function */
	  INSNS(SET_LOC, 0, 0, 0, 0, DEF_CFA_OFF, 16),
	  { ROW(0, 0, L_SP(8), L_AT(-8), L_SAME), ROW(8, 0, L_SP(16), L_AT(-8), L_SAME) }, 2, 0, 1, 8 },
	{ "offset_extended, offset_extended_sf, GNU_negative_offset_extended",
	  INSNS(ADV | 1, OFF_EXT, 6, 2, ADV | 1, OFF_EXT_SF, 6, 0x7e /* -2 */, ADV | 1,
		NEG_OFF_EXT, 6, 3),
	  { ROW(0, 0, L_SP(8), L_AT(-8), L_SAME), ROW(1, 0, L_SP(8), L_AT(-8), L_AT(-16)),
	    ROW(2, 0, L_SP(8), L_AT(-8), L_AT(16)), ROW(3, 0, L_SP(8), L_AT(-8), L_AT(24)) },
	  4, 0, 0, 0 },
	{ "restore, restore_extended",
	  INSNS(ADV | 1, OFF | 6, 2, ADV | 1, RST | 6, ADV | 1, OFF | 6, 3, ADV | 1, RST_EXT, 6),
	  { ROW(0, 0, L_SP(8), L_AT(-8), L_SAME), ROW(1, 0, L_SP(8), L_AT(-8), L_AT(-16)),
	    ROW(2, 0, L_SP(8), L_AT(-8), L_SAME), ROW(3, 0, L_SP(8), L_AT(-8), L_AT(-24)),
	    ROW(4, 0, L_SP(8), L_AT(-8), L_SAME) },
	  5, 0, 0, 0 },
	{ "undefined RA: the outermost frame",
	  INSNS(ADV | 4, UNDEF, 16),
	  { ROW(0, 0, L_SP(8), L_AT(-8), L_SAME), OUTER(4, 0) }, 2, 0, 0, 0 },
	{ "same_value",
	  INSNS(ADV | 1, OFF | 6, 2, ADV | 1, SAME_VALUE, 6),
	  { ROW(0, 0, L_SP(8), L_AT(-8), L_SAME), ROW(1, 0, L_SP(8), L_AT(-8), L_AT(-16)),
	    ROW(2, 0, L_SP(8), L_AT(-8), L_SAME) }, 3, 0, 0, 0 },
	{ "register: FP in rax",
	  INSNS(ADV | 1, REGISTER, 6, 0, ADV | 1, REGISTER, 6, 6),
	  { ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME), ROW(1, FLEX, L_SP(8), L_AT(-8), L_INREG(0)),
	    ROW(2, FLEX, L_SP(8), L_AT(-8), L_SAME) }, 3, 0, 0, 0 },
	{ "register: RA in rdx",
	  INSNS(ADV | 1, REGISTER, 16, 1),
	  { ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME),
	    ROW(1, FLEX, L_SP(8), L_INREG(1), L_SAME) }, 2, 0, 0, 0 },
	{ "remember_state, restore_state (an early return)",
	  INSNS(ADV | 1, DEF_CFA_OFF, 16, OFF | 6, 2, ADV | 4, REMEMBER, DEF_CFA_OFF, 8, RST | 6,
		ADV | 1, RESTORE_STATE),
	  { ROW(0, 0, L_SP(8), L_AT(-8), L_SAME), ROW(1, 0, L_SP(16), L_AT(-8), L_AT(-16)),
	    ROW(5, 0, L_SP(8), L_AT(-8), L_SAME), ROW(6, 0, L_SP(16), L_AT(-8), L_AT(-16)) }, 4, 0, 0, 0 },
	{ "def_cfa_sf, def_cfa_offset_sf",
	  INSNS(ADV | 1, DEF_CFA_SF, 7, 0x7e /* -2 */, ADV | 1, DEF_CFA_OFF_SF, 0x7d /* -3 */),
	  { ROW(0, 0, L_SP(8), L_AT(-8), L_SAME), ROW(1, 0, L_SP(16), L_AT(-8), L_SAME),
	    ROW(2, 0, L_SP(24), L_AT(-8), L_SAME) }, 3, 0, 0, 0 },
	{ "def_cfa_expression: breg7 16; deref, breg6 -8; deref (DRAP), bregx 7 8",
	  INSNS(ADV | 1, DEF_CFA_EXPR, 3, BREG0 + 7, 16, DEREF, ADV | 1, DEF_CFA_EXPR, 3,
		BREG0 + 6, 0x78 /* -8 */, DEREF, ADV | 1, DEF_CFA_EXPR, 3, BREGX, 7, 8),
	  { ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME),
	    ROW(1, FLEX, L_DEREF(SFU_REG_SP, 16), L_AT(-8), L_SAME),
	    ROW(2, FLEX, L_DEREF(SFU_REG_FP, -8), L_AT(-8), L_SAME),
	    ROW(3, FLEX, L_SP(8), L_AT(-8), L_SAME) }, 4, 0, 0, 0 },
	{ "def_cfa_expression nobody knows: unusable",
	  INSNS(ADV | 2, DEF_CFA_EXPR, 2, LIT0 + 1, DEREF, ADV | 2, DEF_CFA, 7, 8),
	  { ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME), UNUSABLE(2, L_SP(0)),
	    ROW(4, FLEX, L_SP(8), L_AT(-8), L_SAME) }, 3, 0, 0, 0 },
	{ "def_cfa_offset after an expression: unusable until def_cfa",
	  INSNS(ADV | 1, DEF_CFA_EXPR, 2, BREG0 + 7, 16, ADV | 1, DEF_CFA_OFF, 32, ADV | 1,
		DEF_CFA, 7, 8),
	  { ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME), ROW(1, FLEX, L_SP(16), L_AT(-8), L_SAME),
	    UNUSABLE(2, L_SP(0)), ROW(3, FLEX, L_SP(8), L_AT(-8), L_SAME) }, 4, 0, 0, 0 },
	{ "CFA in r10 (DRAP prologue)",
	  INSNS(ADV | 5, DEF_CFA, 10, 0),
	  { ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME), ROW(5, FLEX, L_REG(10, 0), L_AT(-8), L_SAME) },
	  2, 0, 0, 0 },
	{ "expression and val_expression for the FP",
	  INSNS(ADV | 1, EXPR, 6, 2, BREG0 + 7, 8, ADV | 1, VAL_EXPR, 6, 2, BREG0 + 3, 0, ADV | 1,
		VAL_EXPR, 6, 2, BREG0 + 3, 8),
	  { ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME),
	    ROW(1, FLEX, L_SP(8), L_AT(-8), L_DEREF(SFU_REG_SP, 8)),
	    ROW(2, FLEX, L_SP(8), L_AT(-8), L_INREG(3)), UNUSABLE(3, L_SP(8)) }, 4, 0, 0, 0 },
	{ "val_offset, val_offset_sf: unusable",
	  INSNS(ADV | 1, VAL_OFF, 6, 2, ADV | 1, RST | 6, ADV | 1, VAL_OFF_SF, 16, 0x7f),
	  { ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME), UNUSABLE(1, L_SP(8)),
	    ROW(2, FLEX, L_SP(8), L_AT(-8), L_SAME), UNUSABLE(3, L_SP(8)) }, 4, 0, 0, 0 },
	{ "GNU_args_size and nop change nothing",
	  INSNS(ADV | 1, ARGS_SIZE, 16, NOP, ADV | 1, DEF_CFA_OFF, 16, ARGS_SIZE, 0, NOP, NOP),
	  { ROW(0, 0, L_SP(8), L_AT(-8), L_SAME), ROW(2, 0, L_SP(16), L_AT(-8), L_SAME) }, 2, 0, 0, 0 },
	{ "RA at CFA-16",
	  INSNS(ADV | 1, OFF | 16, 2),
	  { ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME), ROW(1, FLEX, L_SP(8), L_AT(-16), L_SAME) },
	  2, 0, 0, 0 },
	{ "SP held in a register: unusable",
	  INSNS(ADV | 1, REGISTER, 7, 8, ADV | 1, RST | 7),
	  { ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME), UNUSABLE(1, L_SP(8)),
	    ROW(2, FLEX, L_SP(8), L_AT(-8), L_SAME) }, 3, 0, 0, 0 },
	{ "LLVM_def_aspace_cfa: address space 0, then 1",
	  INSNS(ADV | 1, ASPACE, 7, 16, 0, ADV | 1, ASPACE, 7, 16, 1),
	  { ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME), ROW(1, FLEX, L_SP(16), L_AT(-8), L_SAME),
	    UNUSABLE(2, L_SP(0)) }, 3, 0, 0, 0 },
	{ "advance_loc 0: the later state wins; an equal state adds no row",
	  INSNS(ADV | 1, DEF_CFA_OFF, 16, ADV | 0, DEF_CFA_OFF, 24, ADV | 1, DEF_CFA_OFF, 24),
	  { ROW(0, 0, L_SP(8), L_AT(-8), L_SAME), ROW(1, 0, L_SP(24), L_AT(-8), L_SAME) }, 2, 0, 0, 0 },
	{ "rows past the function's end are dropped",
	  INSNS(ADV | 0x3f, DEF_CFA_OFF, 16, ADV | 1, DEF_CFA_OFF, 24, ADV | 8, DEF_CFA_OFF, 32),
	  { ROW(0, 0, L_SP(8), L_AT(-8), L_SAME), ROW(0x3f, 0, L_SP(16), L_AT(-8), L_SAME) }, 2, 0, 0, 0 },
	{ "GNU_window_save on x86-64: cut there",
	  INSNS(ADV | 1, DEF_CFA_OFF, 16, ADV | 2, NEGATE_RA),
	  { ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME), ROW(1, FLEX, L_SP(16), L_AT(-8), L_SAME),
	    UNUSABLE(3, L_SP(0)) }, 3, 1, 0, 0 },
	{ "unknown operation: cut there",
	  INSNS(ADV | 2, 0x3f, DEF_CFA_OFF, 16),
	  { ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME), UNUSABLE(2, L_SP(0)) }, 2, 1, 0, 0 },
	{ "restore_state without remember_state: cut",
	  INSNS(ADV | 3, RESTORE_STATE),
	  { ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME), UNUSABLE(3, L_SP(0)) }, 2, 1, 0, 0 },
	{ "set_loc backwards: cut",
	  INSNS(ADV | 9, SET_LOC, 0, 0, 0, 0),
	  { ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME), UNUSABLE(9, L_SP(0)) }, 2, 1, 2, 2 },
	{ "an operand past the end: cut",
	  INSNS(ADV | 1, DEF_CFA_OFF, 16, ADV | 1, DEF_CFA_EXPR, 9, BREG0 + 7),
	  { ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME), ROW(1, FLEX, L_SP(16), L_AT(-8), L_SAME),
	    UNUSABLE(2, L_SP(0)) }, 3, 1, 0, 0 },
};

static void test_x86_ops(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(x86_ops); i++) {
		const struct op_case *c = &x86_ops[i];
		struct sfu_eh_frame_stats st;
		struct sfu_sframe *sf;
		struct bytebuf b;

		print_message("  %s\n", c->name);
		one_fde(&b, c->insns, c->len, 0);
		if (c->set_loc) {
			/* the instructions end where the terminator starts; the operand is pc-relative */
			size_t at = b.len - 4 - c->len + c->set_loc;

			bb_set(&b, at, (uint32_t)(FUNC + c->set_loc_to - (SEC_ADDR + at)), 4);
		}
		sf = convert_ok(&b, NULL, &st);
		assert_int_equal(sfu_sframe__fde_count(sf), 1);
		assert_int_equal(sfu_sframe__fde(sf, 0)->start, FUNC);
		assert_int_equal(sfu_sframe__fde(sf, 0)->size, RANGE);
		assert_rows(sf, 0, c->rows, c->nrows);
		assert_int_equal(st.fdes, 1);
		assert_int_equal(st.fdes_skipped, 0);
		assert_int_equal(st.fdes_cut, c->cut);
		if (c->cut)
			assert_true(st.note[0]);
		sfu_sframe__free(sf);
	}
}

/* ---- AArch64 ---- */

static struct sfu_sframe *a64_convert(const uint8_t *insns, size_t len, const char *aug,
				      bool big_endian)
{
	struct cie_spec c = { .aug = aug, .caf = 4, .ra = 30, .insns = a64_cie_insns,
			      .insns_len = sizeof(a64_cie_insns) };
	struct conv_in ci = { .machine = EM_AARCH64, .big_endian = big_endian };
	struct bytebuf b;
	size_t cie;

	bb_init(&b, big_endian);
	cie = put_cie(&b, &c);
	put_fde(&b, &(struct fde_spec){ .cie = cie, .enc = PE_PCREL | PE_S4, .z = true,
					.insns = insns, .insns_len = len }, 0, 0);
	return convert_ok(&b, &ci, NULL);
}

static void test_aarch64(void **state)
{
	/* paciasp; stp x29, x30, [sp, -32]!; mov x29, sp; ... ldp; autiasp; ret */
	static const uint8_t pac[] = {
		ADV | 1, NEGATE_RA, ADV | 1, DEF_CFA_OFF, 32, OFF | 29, 4, OFF | 30, 3, ADV | 1,
		DEF_CFA, 29, 32, ADV | 4, DEF_CFA, 31, 32, ADV | 1, RST | 30, RST | 29,
		DEF_CFA_OFF, 0, ADV | 1, NEGATE_RA,
	};
	static const struct sfu_row pac_rows[] = {
		ROW(0, 0, L_SP(0), L_LR, L_SAME),
		ROW(4, MANGLED, L_SP(0), L_LR, L_SAME),
		ROW(8, MANGLED, L_SP(32), L_AT(-24), L_AT(-32)),
		ROW(12, MANGLED, L_FP(32), L_AT(-24), L_AT(-32)),
		ROW(28, MANGLED, L_SP(32), L_AT(-24), L_AT(-32)),
		ROW(32, MANGLED, L_SP(0), L_LR, L_SAME),
		ROW(36, 0, L_SP(0), L_LR, L_SAME),
	};
	/* only x29 saved: the RA is still in the link register, so a flexible FDE */
	static const uint8_t fp_only[] = { ADV | 1, DEF_CFA_OFF, 16, OFF | 29, 2 };
	static const struct sfu_row fp_only_rows[] = {
		ROW(0, FLEX, L_SP(0), L_LR, L_SAME),
		ROW(4, FLEX, L_SP(16), L_LR, L_AT(-16)),
	};
	struct sfu_sframe *sf;

	(void)state;
	for (int be = 0; be < 2; be++) {
		sf = a64_convert(pac, sizeof(pac), "zR", be);
		assert_int_equal(sfu_sframe__header(sf)->abi,
				 be ? SFU_SFRAME_ABI_AARCH64_BE : SFU_SFRAME_ABI_AARCH64_LE);
		assert_int_equal(sfu_sframe__header(sf)->cfa_fixed_ra_offset, 0);
		assert_int_equal(sfu_sframe__fde(sf, 0)->pauth_key, 0);
		assert_rows(sf, 0, pac_rows, ARRAY_SIZE(pac_rows));
		sfu_sframe__free(sf);
	}

	sf = a64_convert(pac, sizeof(pac), "zRB", false);
	assert_int_equal(sfu_sframe__fde(sf, 0)->pauth_key, 1);
	sfu_sframe__free(sf);

	sf = a64_convert(fp_only, sizeof(fp_only), "zR", false);
	assert_true(sfu_sframe__fde(sf, 0)->flex);
	assert_rows(sf, 0, fp_only_rows, ARRAY_SIZE(fp_only_rows));
	sfu_sframe__free(sf);
}

/* ---- CIE augmentations and versions ---- */

/* 'P' then 'R' in the augmentation data, with the personality pointer cut short */
static const uint8_t short_personality[] = { 0x9b, 0, 0 };

static void test_augmentations(void **state)
{
	static const uint8_t lsda[] = { 0x10, 0x20, 0x30, 0x40 };
	static const uint8_t body[] = { ADV | 1, DEF_CFA_OFF, 16 };
	static const struct sfu_row rows[] = {
		ROW(0, 0, L_SP(8), L_AT(-8), L_SAME), ROW(1, 0, L_SP(16), L_AT(-8), L_SAME),
	};
	static const struct {
		const char *name;
		struct cie_spec cie;
		bool fde_dwarf64;
		bool ok;		/* false: the FDE is skipped */
		bool signal;
	} cases[] = {
		{ "no augmentation, absptr", { .aug = "" }, false, true, false },
		{ "zR", { .aug = "zR" }, false, true, false },
		{ "zPLR, indirect personality, LSDA", { .aug = "zPLR" }, false, true, false },
		{ "zRS: a signal trampoline", { .aug = "zRS" }, false, true, true },
		{ "zRG: MTE", { .aug = "zRG" }, false, true, false },
		{ "eh (GCC 2)", { .aug = "eh" }, false, true, false },
		{ "version 3", { .version = 3 }, false, true, false },
		{ "version 4", { .version = 4 }, false, true, false },
		{ "64-bit lengths", { .dwarf64 = true }, true, true, false },
		{ "unknown letter after z", { .aug = "zRX" }, false, false, false },
		{ "unknown letter without z", { .aug = "X" }, false, false, false },
		{ "version 2", { .version = 2 }, false, false, false },
		{ "RA column is the SP", { .ra = 7 }, false, false, false },
		{ "pointer encoding in the augmentation data cut short",
		  { .aug = "zPR", .augdata = short_personality, .augdata_len = 3 },
		  false, false, false },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct cie_spec c = cases[i].cie;
		struct sfu_eh_frame_stats st;
		struct sfu_diag diag = { 0 };
		struct sfu_sframe *sf;
		struct bytebuf b;
		const char *aug = c.aug ? c.aug : "zR";
		size_t cie;

		print_message("  %s\n", cases[i].name);
		bb_init(&b, false);
		cie = put_cie(&b, &c);
		put_fde(&b, &(struct fde_spec){ .cie = cie, .enc = cie_fde_enc(&c),
						.z = aug[0] == 'z', .insns = body,
						.insns_len = sizeof(body),
						.augdata = strchr(aug, 'L') ? lsda : NULL,
						.augdata_len = strchr(aug, 'L') ? sizeof(lsda) : 0,
						.dwarf64 = cases[i].fde_dwarf64 }, 0, 0);
		sf = convert(&b, NULL, &st, &diag);
		if (!cases[i].ok) {
			assert_null(sf);
			assert_int_equal(errno, EBADMSG);
			assert_int_equal(st.fdes_skipped, 1);
			assert_true(st.note[0]);
			assert_true(diag.reason[0]);
			continue;
		}
		if (!sf)
			fail_msg("%s: %s", cases[i].name, diag.reason);
		assert_int_equal(st.fdes_skipped, 0);
		assert_int_equal(st.cies, 1);
		assert_int_equal(sfu_sframe__fde(sf, 0)->start, FUNC);
		assert_int_equal(sfu_sframe__fde(sf, 0)->signal_frame, cases[i].signal);
		assert_int_equal(st.signal_frames, cases[i].signal);
		if (cases[i].signal) {
			struct sfu_row want[2] = { rows[0], rows[1] };

			want[0].flags = want[1].flags = SFU_ROW_SIGNAL_FRAME;
			assert_rows(sf, 0, want, 2);
		} else {
			assert_rows(sf, 0, rows, 2);
		}
		sfu_sframe__free(sf);
	}
}

/* ---- pointer encodings of the function start ---- */

static void test_pointer_encodings(void **state)
{
	static const uint8_t body[] = { ADV | 1, DEF_CFA_OFF, 16 };
	static const struct {
		const char *name;
		uint8_t enc;
		uint64_t start;
		uint64_t data_base, text_base;
		bool ok;
	} cases[] = {
		{ "absptr", PE_ABS, FUNC, 0, 0, true },
		{ "udata2", PE_U2, 0x1000, 0, 0, true },
		{ "udata4", PE_U4, FUNC, 0, 0, true },
		{ "udata8", PE_U8, 0x7f0000401000ull, 0, 0, true },
		{ "sdata2", PE_S2, 0x1000, 0, 0, true },
		{ "sdata4", PE_S4, FUNC, 0, 0, true },
		{ "sdata8", PE_S8, FUNC, 0, 0, true },
		{ "uleb128", PE_ULEB, FUNC, 0, 0, true },
		{ "sleb128", PE_SLEB, FUNC, 0, 0, true },
		{ "pcrel|sdata4", PE_PCREL | PE_S4, FUNC, 0, 0, true },
		{ "pcrel|sdata4 backwards", PE_PCREL | PE_S4, 0x1000, 0, 0, true },
		{ "pcrel|sdata2", PE_PCREL | PE_S2, SEC_ADDR + 0x100, 0, 0, true },
		{ "pcrel|udata8", PE_PCREL | PE_U8, FUNC, 0, 0, true },
		{ "pcrel|sleb128", PE_PCREL | PE_SLEB, FUNC, 0, 0, true },
		{ "datarel|sdata4", PE_DATAREL | PE_S4, FUNC, 0x600000, 0, true },
		{ "textrel|udata4", PE_TEXTREL | PE_U4, FUNC, 0, 0x400000, true },
		{ "aligned", PE_ALIGNED, FUNC, 0, 0, true },
		{ "datarel without a base", PE_DATAREL | PE_S4, FUNC, 0, 0, false },
		{ "textrel without a base", PE_TEXTREL | PE_U4, FUNC, 0, 0, false },
		{ "funcrel", PE_FUNCREL | PE_S4, FUNC, 0, 0, false },
		{ "indirect", PE_INDIRECT | PE_PCREL | PE_S4, FUNC, 0, 0, false },
		{ "format 5", 0x05, FUNC, 0, 0, false },
		{ "omit", 0xff, FUNC, 0, 0, false },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct cie_spec c = { .fde_enc = cases[i].enc, .fde_enc_set = true };
		struct conv_in ci = { .data_base = cases[i].data_base,
				      .text_base = cases[i].text_base };
		struct sfu_eh_frame_stats st;
		struct sfu_sframe *sf;
		struct bytebuf b;
		size_t cie;

		print_message("  %s\n", cases[i].name);
		bb_init(&b, false);
		cie = put_cie(&b, &c);
		put_fde(&b, &(struct fde_spec){ .cie = cie, .enc = cases[i].enc, .z = true,
						.start = cases[i].start, .insns = body,
						.insns_len = sizeof(body) }, cases[i].data_base,
			cases[i].text_base);
		sf = convert(&b, &ci, &st, NULL);
		if (!cases[i].ok) {
			assert_null(sf);
			assert_int_equal(errno, EBADMSG);
			assert_int_equal(st.fdes_skipped, 1);
			continue;
		}
		assert_non_null(sf);
		assert_int_equal(sfu_sframe__fde_count(sf), 1);
		assert_int_equal(sfu_sframe__fde(sf, 0)->start, cases[i].start);
		assert_int_equal(sfu_sframe__fde(sf, 0)->size, RANGE);
		sfu_sframe__free(sf);
	}
}

/* ---- .eh_frame_hdr ---- */

/* Three FDEs at FUNC, FUNC + 0x100, FUNC + 0x200; @offs receives their offsets. */
static void three_fdes(struct bytebuf *b, size_t offs[3])
{
	static const uint8_t body[] = { ADV | 1, DEF_CFA_OFF, 16 };
	struct cie_spec c = { 0 };
	size_t cie;

	bb_init(b, false);
	cie = put_cie(b, &c);
	for (int i = 0; i < 3; i++)
		offs[i] = put_fde(b, &(struct fde_spec){ .cie = cie, .enc = PE_PCREL | PE_S4, .z = true,
							 .start = FUNC + 0x100 * i,
							 .insns = body, .insns_len = sizeof(body) },
				  0, 0);
	bb_u32(b, 0);
}

/* A search table listing @n FDEs (start, offset in .eh_frame). */
static void make_hdr(struct bytebuf *h, const uint64_t *starts, const size_t *offs, size_t n,
		     uint64_t eh_frame)
{
	bb_init(h, false);
	bb_u8(h, 1);
	bb_u8(h, PE_PCREL | PE_S4);
	bb_u8(h, PE_U4);
	bb_u8(h, PE_DATAREL | PE_S4);
	bb_u32(h, (uint32_t)(eh_frame - (HDR_ADDR + h->len)));
	bb_u32(h, n);
	for (size_t i = 0; i < n; i++) {
		bb_u32(h, (uint32_t)(starts[i] - HDR_ADDR));
		bb_u32(h, (uint32_t)(SEC_ADDR + offs[i] - HDR_ADDR));
	}
}

static void test_hdr(void **state)
{
	uint64_t starts[3] = { FUNC, FUNC + 0x100, FUNC + 0x200 };
	struct sfu_eh_frame_stats st;
	struct sfu_sframe *sf;
	struct bytebuf b, h;
	struct conv_in ci = { .hdr = &h };
	size_t offs[3], sub[2];

	(void)state;
	three_fdes(&b, offs);

	/* the table lists two of the three: those are the table */
	sub[0] = offs[0];
	sub[1] = offs[2];
	make_hdr(&h, (uint64_t[]){ starts[0], starts[2] }, sub, 2, SEC_ADDR);
	sf = convert_ok(&b, &ci, &st);
	assert_true(st.used_hdr);
	assert_int_equal(st.fdes, 2);
	assert_int_equal(sfu_sframe__fde_count(sf), 2);
	assert_int_equal(sfu_sframe__fde(sf, 1)->start, FUNC + 0x200);
	sfu_sframe__free(sf);

	/* no table: all three, walked */
	sf = convert_ok(&b, NULL, &st);
	assert_false(st.used_hdr);
	assert_int_equal(sfu_sframe__fde_count(sf), 3);
	sfu_sframe__free(sf);

	/* a table not sorted, or pointing elsewhere, is not used: walk */
	make_hdr(&h, (uint64_t[]){ starts[2], starts[0] }, (size_t[]){ offs[2], offs[0] }, 2,
		 SEC_ADDR);
	sf = convert_ok(&b, &ci, &st);
	assert_false(st.used_hdr);
	assert_int_equal(sfu_sframe__fde_count(sf), 3);
	assert_true(strstr(st.note, "not sorted"));
	sfu_sframe__free(sf);

	make_hdr(&h, starts, offs, 3, SEC_ADDR + 0x10);
	sf = convert_ok(&b, &ci, &st);
	assert_false(st.used_hdr);
	sfu_sframe__free(sf);

	make_hdr(&h, starts, (size_t[]){ offs[0], offs[1], 0x7000 }, 3, SEC_ADDR);
	sf = convert_ok(&b, &ci, &st);
	assert_false(st.used_hdr);
	assert_true(strstr(st.note, "outside"));
	sfu_sframe__free(sf);

	/* an empty table: nothing listed, nothing converted */
	make_hdr(&h, starts, offs, 0, SEC_ADDR);
	sf = convert_ok(&b, &ci, &st);
	assert_true(st.used_hdr);
	assert_int_equal(sfu_sframe__fde_count(sf), 0);
	sfu_sframe__free(sf);

	/* a count larger than the table */
	make_hdr(&h, starts, offs, 3, SEC_ADDR);
	bb_set(&h, 8, 1000000, 4);
	sf = convert_ok(&b, &ci, &st);
	assert_false(st.used_hdr);
	sfu_sframe__free(sf);

	/* an entry whose start is not its FDE's: that FDE is skipped */
	make_hdr(&h, (uint64_t[]){ starts[0], starts[1] + 4, starts[2] }, offs, 3, SEC_ADDR);
	sf = convert_ok(&b, &ci, &st);
	assert_true(st.used_hdr);
	assert_int_equal(st.fdes_skipped, 1);
	assert_int_equal(sfu_sframe__fde_count(sf), 2);
	sfu_sframe__free(sf);

	/* an entry that points at the CIE */
	make_hdr(&h, starts, (size_t[]){ 0, offs[1], offs[2] }, 3, SEC_ADDR);
	sf = convert_ok(&b, &ci, &st);
	assert_int_equal(st.fdes_skipped, 1);
	assert_int_equal(sfu_sframe__fde_count(sf), 2);
	sfu_sframe__free(sf);
}

/* ---- the .plt expression ---- */

static void test_plt(void **state)
{
	/* what ld writes for .plt: PLT0, then 16-byte blocks */
	static const uint8_t plt[] = {
		DEF_CFA_OFF, 16, ADV | 6, DEF_CFA_OFF, 24, ADV | 10, DEF_CFA_EXPR, 11, BREG0 + 7, 8,
		BREG0 + 16, 0, LIT0 + 15, 0x1a /* and */, LIT0 + 11, 0x2a /* ge */, LIT0 + 3,
		0x24 /* shl */, 0x22 /* plus */,
	};
	static const struct sfu_row plt0[] = {
		ROW(0, 0, L_SP(16), L_AT(-8), L_SAME), ROW(6, 0, L_SP(24), L_AT(-8), L_SAME),
	};
	static const struct sfu_row blocks[] = {
		ROW(0, 0, L_SP(8), L_AT(-8), L_SAME), ROW(11, 0, L_SP(16), L_AT(-8), L_SAME),
	};
	uint8_t changed[sizeof(plt) + 3];
	struct sfu_sframe *sf;
	const struct sfu_fde *fde;
	const struct sfu_row *row;
	struct bytebuf b;
	size_t pc_field;

	(void)state;
	one_fde(&b, plt, sizeof(plt), 0x40);
	pc_field = 4 + bb_get(&b, 0, 4) + 8;	/* past the CIE, the FDE's length and CIE pointer */
	sf = convert_ok(&b, NULL, NULL);
	assert_int_equal(sfu_sframe__fde_count(sf), 2);
	assert_int_equal(sfu_sframe__fde(sf, 0)->start, FUNC);
	assert_int_equal(sfu_sframe__fde(sf, 0)->size, 16);
	assert_rows(sf, 0, plt0, 2);
	fde = sfu_sframe__fde(sf, 1);
	assert_int_equal(fde->start, FUNC + 16);
	assert_int_equal(fde->size, 0x30);
	assert_int_equal(fde->fde_type, SFU_FDE_PCMASK);
	assert_int_equal(fde->rep_size, 16);
	assert_rows(sf, 1, blocks, 2);
	/* the expression's own answer for a pc in the third block, at +12 */
	assert_int_equal(sfu_sframe__find(sf, FUNC + 0x20 + 12, &fde, &row), 0);
	assert_int_equal(row->cfa.offset, 8 + (((FUNC + 0x20 + 12) & 15) >= 11 ? 8 : 0));
	sfu_sframe__free(sf);

	/* a .plt whose blocks are not 16-aligned cannot repeat by offset: unusable */
	one_fde(&b, plt, sizeof(plt), 0x40);
	bb_set(&b, pc_field, (uint32_t)(FUNC + 4 - (SEC_ADDR + pc_field)), 4);
	sf = convert_ok(&b, NULL, NULL);
	assert_int_equal(sfu_sframe__fde_count(sf), 1);
	assert_true(sfu_sframe__row(sf, 2)->flags & SFU_ROW_UNUSABLE);
	assert_int_equal(sfu_sframe__row(sf, 2)->start, 16);
	sfu_sframe__free(sf);

	/* a CFA change after the expression: unusable from the expression on */
	memcpy(changed, plt, sizeof(plt));
	changed[sizeof(plt)] = ADV | 4;
	changed[sizeof(plt) + 1] = DEF_CFA_OFF;
	changed[sizeof(plt) + 2] = 8;
	one_fde(&b, changed, sizeof(changed), 0x40);
	sf = convert_ok(&b, NULL, NULL);
	assert_int_equal(sfu_sframe__fde_count(sf), 1);
	assert_int_equal(sfu_sframe__fde(sf, 0)->num_fres, 3);
	assert_true(sfu_sframe__row(sf, 2)->flags & SFU_ROW_UNUSABLE);
	sfu_sframe__free(sf);
}

/* ---- sections that are wrong as a whole ---- */

static void test_bad_sections(void **state)
{
	static const uint8_t body[] = { ADV | 1, DEF_CFA_OFF, 16 };
	struct sfu_eh_frame_stats st;
	struct sfu_diag diag;
	struct sfu_sframe *sf;
	struct bytebuf b;
	size_t offs[3];

	(void)state;
	/* empty, and only a terminator: a table without functions */
	bb_init(&b, false);
	sf = convert_ok(&b, NULL, &st);
	assert_int_equal(sfu_sframe__fde_count(sf), 0);
	sfu_sframe__free(sf);
	bb_u32(&b, 0);
	sf = convert_ok(&b, NULL, &st);
	assert_int_equal(sfu_sframe__fde_count(sf), 0);
	sfu_sframe__free(sf);

	/* another machine */
	three_fdes(&b, offs);
	memset(&diag, 0, sizeof(diag));
	assert_null(convert(&b, &(struct conv_in){ .machine = EM_RISCV }, &st, &diag));
	assert_int_equal(errno, ENOTSUP);
	assert_null(convert(&b, &(struct conv_in){ .machine = EM_X86_64, .big_endian = true },
			    &st, &diag));
	assert_int_equal(errno, ENOTSUP);

	/* the last FDE's length runs past the end: the others stay */
	three_fdes(&b, offs);
	bb_set(&b, offs[2], 0x1000, 4);
	sf = convert_ok(&b, NULL, &st);
	assert_int_equal(sfu_sframe__fde_count(sf), 2);
	assert_int_equal(st.fdes_skipped, 1);
	sfu_sframe__free(sf);

	/* a CIE pointer to an FDE, and one before the section */
	three_fdes(&b, offs);
	bb_set(&b, offs[2] + 4, offs[2] + 4 - offs[1], 4);
	bb_set(&b, offs[1] + 4, offs[1] + 4 + 0x100, 4);
	sf = convert_ok(&b, NULL, &st);
	assert_int_equal(sfu_sframe__fde_count(sf), 1);
	assert_int_equal(st.fdes_skipped, 2);
	sfu_sframe__free(sf);

	/* every FDE broken: an error */
	three_fdes(&b, offs);
	bb_set(&b, 8, 7, 1);	/* CIE version 7 */
	memset(&diag, 0, sizeof(diag));
	assert_null(convert(&b, NULL, &st, &diag));
	assert_int_equal(errno, EBADMSG);
	assert_int_equal(diag.err, -EBADMSG);
	assert_true(strstr(diag.reason, "version"));

	/* zero-length and discarded (start 0) FDEs are left out quietly */
	bb_init(&b, false);
	{
		struct cie_spec c = { .fde_enc = PE_U4, .fde_enc_set = true };
		size_t cie = put_cie(&b, &c), f;

		/* udata4: length, CIE pointer, start at +8, range at +12 */
		f = put_fde(&b, &(struct fde_spec){ .cie = cie, .enc = PE_U4, .z = true,
						    .insns = body, .insns_len = sizeof(body) }, 0, 0);
		bb_set(&b, f + 8, 0, 4);
		f = put_fde(&b, &(struct fde_spec){ .cie = cie, .enc = PE_U4, .z = true,
						    .start = FUNC + 0x40, .insns = body,
						    .insns_len = sizeof(body) }, 0, 0);
		bb_set(&b, f + 12, 0, 4);
		put_fde(&b, &(struct fde_spec){ .cie = cie, .enc = PE_U4, .z = true,
						.start = FUNC + 0x80, .insns = body,
						.insns_len = sizeof(body) }, 0, 0);
	}
	sf = convert_ok(&b, NULL, &st);
	assert_int_equal(sfu_sframe__fde_count(sf), 1);
	assert_int_equal(sfu_sframe__fde(sf, 0)->start, FUNC + 0x80);
	assert_int_equal(st.fdes_skipped, 0);
	sfu_sframe__free(sf);

	/* two FDEs for one function: the first one found */
	three_fdes(&b, offs);
	bb_set(&b, offs[1] + 8, (uint32_t)(FUNC - (SEC_ADDR + offs[1] + 8)), 4);
	sf = convert_ok(&b, NULL, &st);
	assert_int_equal(sfu_sframe__fde_count(sf), 2);
	sfu_sframe__free(sf);

	/* nesting remember_state 65 deep: the program is cut */
	{
		uint8_t deep[70];

		deep[0] = ADV | 1;
		memset(deep + 1, REMEMBER, 65);
		one_fde(&b, deep, 66, 0);
		sf = convert_ok(&b, NULL, &st);
		assert_int_equal(st.fdes_cut, 1);
		assert_true(strstr(st.note, "remember"));
		sfu_sframe__free(sf);
	}
}

/*
 * Every prefix and thousands of random corruptions of a section with all
 * kinds of entries: errors, never crashes (the sanitizer build checks reads).
 */
static void test_truncated_and_flipped(void **state)
{
	static const uint8_t prog[] = {
		ADV | 1, DEF_CFA_OFF, 16, OFF | 6, 2, ADV | 3, DEF_CFA_REG, 6, REMEMBER, ADV1, 0x20,
		DEF_CFA, 7, 8, RESTORE_STATE, DEF_CFA_EXPR, 3, BREG0 + 6, 0x78, DEREF, EXPR, 6, 2,
		BREG0 + 6, 0, ADV2, 1, 0, VAL_OFF_SF, 16, 1, ARGS_SIZE, 8,
	};
	struct cie_spec cies[] = { { .aug = "zPLR" }, { .aug = "zRS" }, { .aug = "", .version = 3 } };
	struct sfu_eh_frame_stats st;
	struct test_rng rng;
	struct bytebuf b, h;
	struct conv_in ci = { .hdr = &h };
	uint64_t starts[3];
	size_t offs[3];

	(void)state;
	bb_init(&b, false);
	for (int i = 0; i < 3; i++) {
		size_t cie = put_cie(&b, &cies[i]);

		starts[i] = FUNC + 0x100 * i;
		offs[i] = put_fde(&b, &(struct fde_spec){ .cie = cie, .enc = cie_fde_enc(&cies[i]),
							  .z = cies[i].aug[0] == 'z',
							  .start = starts[i], .insns = prog,
							  .insns_len = sizeof(prog),
							  .augdata = (const uint8_t[]){ 1, 2, 3, 4 },
							  .augdata_len = i == 0 ? 4 : 0 }, 0, 0);
	}
	bb_u32(&b, 0);
	make_hdr(&h, starts, offs, 3, SEC_ADDR);

	for (size_t len = 0; len <= b.len; len++) {
		struct bytebuf cut = b;
		struct sfu_sframe *sf;

		cut.len = len;
		sf = convert(&cut, len & 1 ? &ci : NULL, &st, NULL);
		assert_true(sf || errno == EBADMSG);
		sfu_sframe__free(sf);
	}
	rng_seed(&rng, 0x5eed);
	for (int i = 0; i < 4000; i++) {
		struct bytebuf bad = b, badh = h;
		struct conv_in bci = { .hdr = &badh };
		struct sfu_sframe *sf;
		int flips = (int)rng_range(&rng, 1, 4);

		for (int k = 0; k < flips; k++) {
			if (rng_range(&rng, 0, 5) == 0)
				badh.data[rng_range(&rng, 0, badh.len - 1)] ^= 1u << rng_range(&rng, 0, 7);
			else
				bad.data[rng_range(&rng, 0, bad.len - 1)] = (uint8_t)rng_next(&rng);
		}
		sf = convert(&bad, i & 1 ? &bci : NULL, &st, NULL);
		assert_true(sf || errno == EBADMSG);
		if (sf) {
			/* whatever came out answers lookups */
			const struct sfu_fde *fde;
			const struct sfu_row *row;

			for (uint64_t pc = FUNC - 4; pc < FUNC + 0x300; pc += 3)
				(void)sfu_sframe__find(sf, pc, &fde, &row);
		}
		sfu_sframe__free(sf);
	}
}

/* The encoded form decodes to the same table (what the disk cache stores). */
static void test_encode_matches(void **state)
{
	static const uint8_t prog[] = { ADV | 1, DEF_CFA_OFF, 16, ADV | 1, DEF_CFA_EXPR, 1, LIT0 };
	struct sfu_eh_frame in = { .addr = SEC_ADDR, .machine = EM_X86_64 };
	struct sfu_sframe *a, *b2;
	struct bytebuf b;
	size_t size;
	void *buf;

	(void)state;
	one_fde(&b, prog, sizeof(prog), 0);
	in.data = b.data;
	in.size = b.len;
	a = sfu_sframe__from_eh_frame(&in, NULL, NULL);
	assert_non_null(a);
	assert_int_equal(sfu_eh_frame_encode(&in, &buf, &size, NULL, NULL), 0);
	b2 = sframe_new_exact(buf, size, 0, NULL);
	assert_non_null(b2);
	assert_int_equal(sfu_sframe__header(b2)->version, 3);
	assert_int_equal(sfu_sframe__fde_count(a), sfu_sframe__fde_count(b2));
	for (size_t i = 0; i < 3; i++)
		assert_row_equal(sfu_sframe__row(b2, i), sfu_sframe__row(a, i));
	/* the unusable row stays unusable through the encoder */
	assert_true(sfu_sframe__row(b2, 2)->flags & SFU_ROW_UNUSABLE);
	free(buf);
	sfu_sframe__free(a);
	sfu_sframe__free(b2);
}

/* ---- modules: this test binary has .eh_frame and no .sframe ---- */

static struct sfu_module *open_self(void)
{
	struct sfu_diag diag = { 0 };
	struct sfu_module *m = sfu_module__open("/proc/self/exe", &diag);

	if (!m)
		fail_msg("/proc/self/exe: %s", diag.reason);
	return m;
}

static void test_self_module(void **state)
{
	const struct sfu_eh_frame_stats *st;
	const struct sfu_sframe *sf;
	const struct sfu_fde *fde;
	const struct sfu_row *row;
	struct sfu_module *m = open_self();
	uint64_t addr;

	(void)state;
	assert_null(sfu_module__eh_frame_stats(m));	/* not converted yet */
	sf = sfu_module__eh_frame_table(m);
	assert_non_null(sf);
	assert_ptr_equal(sfu_module__eh_frame_table(m), sf);	/* once */
	assert_null(sfu_module__eh_frame_error(m));
	assert_false(sfu_module__eh_frame_from_disk(m));
	st = sfu_module__eh_frame_stats(m);
	assert_non_null(st);
	assert_true(st->used_hdr);
	assert_true(st->fdes > 10);
	assert_int_equal(st->fdes_skipped, 0);
	assert_int_equal(st->fdes_cut, 0);
	/* the functions of this file have rows, and at their first byte the CFA is SP + 8 */
	assert_int_equal(sfu_module__symbol_addr(m, "test_self_module", &addr), 0);
	assert_int_equal(sfu_sframe__find(sf, addr, &fde, &row), 0);
	assert_int_equal(fde->start, addr);
	assert_int_equal(row->cfa.kind, SFU_LOC_REG_OFFSET);
	assert_int_equal(row->cfa.reg, SFU_REG_SP);
	assert_int_equal(row->cfa.offset, 8);
	assert_int_equal(sfu_module__symbol_addr(m, "main", &addr), 0);
	assert_int_equal(sfu_sframe__find(sf, addr + 1, &fde, &row), 0);
	sfu_module__put(m);
}

/* The call chain this test unwinds; each keeps its frame (the empty asm after the call). */
static struct sfu_regs captured;
static uint8_t *stack_copy;
static uint64_t stack_base;
static size_t stack_len;

/* The end of the mapping holding @addr, from /proc/self/maps. */
static uint64_t mapping_end(uint64_t addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long long start, end;
	char line[512];
	uint64_t found = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx", &start, &end) == 2 && addr >= start && addr < end)
			found = end;
	fclose(f);
	assert_true(found);
	return found;
}

/* The stack above @sp, read word by word: the sanitizer's redzones are part of it. */
__attribute__((no_sanitize("address"))) static void copy_stack(uint64_t sp, size_t len)
{
	const volatile uint64_t *src = (const volatile uint64_t *)(uintptr_t)sp;
	uint64_t *dst = (uint64_t *)stack_copy;

	for (size_t i = 0; i < len / 8; i++)
		dst[i] = src[i];
}

__attribute__((noinline)) static void capture(void)
{
	uint64_t sp, fp, pc;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(pc), "=r"(sp), "=r"(fp));
	captured = (struct sfu_regs){ .pc = pc, .sp = sp, .fp = fp };
	stack_base = sp;
	stack_len = (mapping_end(sp) - sp) & ~(size_t)7;
	stack_copy = malloc(stack_len);
	assert_non_null(stack_copy);
	copy_stack(sp, stack_len);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void middle_frame(void)
{
	capture();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void outer_frame(void)
{
	middle_frame();
	__asm__ volatile("" ::: "memory");
}

static void test_self_unwind(void **state)
{
	SFU_OPTS(sfu_unwind_opts, opts, .arch = SFU_ARCH_X86_64, .no_fp_fallback = 1);
	const char *want[] = { "capture", "middle_frame", "outer_frame", "test_self_unwind" };
	struct sfu_frame frames[64];
	struct sfu_snapshot snap;
	struct sfu_addrspace *as;
	struct sfu_diag diag = { 0 };
	size_t n;
	int stop, saw_main = 0;

	(void)state;
	outer_frame();
	as = sfu_addrspace__new(NULL, NULL);
	assert_non_null(as);
	assert_int_equal(sfu_addrspace__load_pid(as, getpid(), &diag), 0);
	snap = (struct sfu_snapshot){ stack_base, stack_copy, stack_len };
	stop = sfu_unwind(as, &opts, &captured, sfu_snapshot_read, &snap, frames, 64, &n);
	for (size_t i = 0; i < n; i++) {
		uint64_t lookup = frames[i].kind == SFU_FRAME_RA ? frames[i].addr - 1 : frames[i].addr;
		const struct sfu_mapping *map = sfu_addrspace__find(as, lookup);
		const char *name = "??";
		uint64_t off;

		if (map && map->module)
			sfu_module__symbolize(map->module, lookup - map->bias, &name, &off);
		print_message("  #%zu %#llx %s %s\n", i, (unsigned long long)frames[i].addr,
			      sfu_source_name(frames[i].source), name);
		if (i < ARRAY_SIZE(want))
			assert_string_equal(name, want[i]);
		if (i && i < ARRAY_SIZE(want))
			assert_int_equal(frames[i].source, SFU_SRC_EH_FRAME);
		saw_main |= !strcmp(name, "main");
	}
	/* through cmocka and libc (no .sframe, no frame pointers) to _start */
	assert_int_equal(stop, SFU_STOP_OUTERMOST);
	assert_true(saw_main);
	sfu_addrspace__free(as);
	free(stack_copy);
}

/* ---- the disk cache ---- */

static void test_disk_cache(void **state)
{
	char *dir = make_temp_dir_or_fail(), *sub = path_join_or_fail(dir, "a");
	char *subsub = path_join_or_fail(sub, "b");
	const struct sfu_sframe *first, *again;
	struct sfu_cache *cache;
	struct sfu_module *m;
	struct stat stbuf;
	size_t nfdes;
	DIR *d;

	(void)state;
	/* the first run converts and stores, creating the directories */
	cache = sfu_cache__new();
	assert_non_null(cache);
	assert_int_equal(sfu_cache__set_dir(cache, subsub), 0);
	m = sfu_cache__open(cache, "/proc/self/exe", NULL, NULL);
	assert_non_null(m);
	first = sfu_module__eh_frame_table(m);
	assert_non_null(first);
	assert_false(sfu_module__eh_frame_from_disk(m));
	nfdes = sfu_sframe__fde_count(first);
	assert_int_equal(stat(subsub, &stbuf), 0);
	sfu_module__put(m);
	sfu_cache__free(cache);

	/* the second reads it */
	cache = sfu_cache__new();
	assert_int_equal(sfu_cache__set_dir(cache, subsub), 0);
	m = sfu_cache__open(cache, "/proc/self/exe", NULL, NULL);
	again = sfu_module__eh_frame_table(m);
	assert_non_null(again);
	assert_true(sfu_module__eh_frame_from_disk(m));
	assert_null(sfu_module__eh_frame_stats(m));
	assert_int_equal(sfu_sframe__fde_count(again), nfdes);
	sfu_module__put(m);
	sfu_cache__free(cache);

	/* a damaged cache file is converted again and replaced */
	d = opendir(subsub);
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));) {
		char *p;

		if (e->d_name[0] == '.')
			continue;
		assert_non_null(strstr(e->d_name, ".eh_frame-v"));
		p = path_join_or_fail(subsub, e->d_name);
		assert_int_equal(truncate(p, 40), 0);
		free(p);
	}
	closedir(d);
	m = sfu_module__open("/proc/self/exe", NULL);
	assert_non_null(m);
	assert_int_equal(sfu_module__set_cache_dir(m, subsub), 0);
	assert_non_null(sfu_module__eh_frame_table(m));
	assert_false(sfu_module__eh_frame_from_disk(m));
	assert_int_equal(sfu_sframe__fde_count(sfu_module__eh_frame_table(m)), nfdes);
	sfu_module__put(m);
	m = sfu_module__open("/proc/self/exe", NULL);
	assert_int_equal(sfu_module__set_cache_dir(m, subsub), 0);
	assert_non_null(sfu_module__eh_frame_table(m));
	assert_true(sfu_module__eh_frame_from_disk(m));
	sfu_module__put(m);

	/* no disk cache by default */
	m = sfu_module__open("/proc/self/exe", NULL);
	assert_non_null(sfu_module__eh_frame_table(m));
	assert_false(sfu_module__eh_frame_from_disk(m));
	sfu_module__put(m);

	remove_temp_dir(subsub);
	remove_temp_dir(sub);
	remove_temp_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_x86_ops),
		cmocka_unit_test(test_aarch64),
		cmocka_unit_test(test_augmentations),
		cmocka_unit_test(test_pointer_encodings),
		cmocka_unit_test(test_hdr),
		cmocka_unit_test(test_plt),
		cmocka_unit_test(test_bad_sections),
		cmocka_unit_test(test_truncated_and_flipped),
		cmocka_unit_test(test_encode_matches),
		cmocka_unit_test(test_self_module),
		cmocka_unit_test(test_self_unwind),
		cmocka_unit_test(test_disk_cache),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
