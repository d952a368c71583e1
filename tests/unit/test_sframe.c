/* SPDX-License-Identifier: BSD-2-Clause */
/* SFrame decoder: hand-built sections of every version, byte order and ABI, and corrupt ones. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* ---- format constants, spelled out here so the tests do not share the decoder's ---- */

#define HDR_SIZE	28
#define F_SORTED	0x1
#define F_FP		0x2
#define F_PCREL		0x4
#define ABI_A64_BE	1
#define ABI_A64_LE	2
#define ABI_AMD64	3
#define ABI_S390X	4

/* FRE info: base register (1 = SP), data word count, size code (0/1/2 = 1/2/4 bytes), mangled RA. */
#define FI(sp, n, sz, m) ((uint8_t)((sp) | ((n) << 1) | ((sz) << 5) | ((m) << 7)))
/* FDE info (V3: the attribute's info): FRE type, PCMASK, pauth key B, signal frame. */
#define FDEI(ft, mask, keyb, sig) ((uint8_t)((ft) | ((mask) << 4) | ((keyb) << 5) | ((sig) << 7)))
/* V3 flexible control word. */
#define CTRL(reg, deref, reg_p) ((int64_t)(((reg) << 3) | ((deref) << 1) | (reg_p)))

enum { ADDR1, ADDR2, ADDR4 };

/* ---- expected locations and rows ---- */

#define L_SP(o)		{ .kind = SFU_LOC_REG_OFFSET, .reg = SFU_REG_SP, .offset = (o) }
#define L_FP(o)		{ .kind = SFU_LOC_REG_OFFSET, .reg = SFU_REG_FP, .offset = (o) }
#define L_REG(dw, o)	{ .kind = SFU_LOC_REG_OFFSET, .reg = SFU_REG_OTHER, .dwarf_reg = (dw), .offset = (o) }
#define L_DEREF(r, dw, o) { .kind = SFU_LOC_DEREF, .reg = (r), .dwarf_reg = (dw), .offset = (o) }
#define L_AT(o)		{ .kind = SFU_LOC_AT_CFA, .offset = (o) }
#define L_SAME		{ .kind = SFU_LOC_SAME }
#define L_UNDEF		{ .kind = SFU_LOC_UNDEFINED }
#define L_INREG(r)	{ .kind = SFU_LOC_IN_REG, .reg = (r) }
#define L_INDW(dw, o)	{ .kind = SFU_LOC_IN_REG, .reg = SFU_REG_OTHER, .dwarf_reg = (dw), .offset = (o) }
#define ROW(s, fl, c, r, f) { .start = (s), .flags = (fl), .cfa = c, .ra = r, .fp = f }
#define OUTERMOST(s, fl) ROW(s, fl, L_UNDEF, L_UNDEF, L_SAME)

#define MANGLED	SFU_ROW_MANGLED_RA
#define UNUSABLE SFU_ROW_UNUSABLE
#define FLEX	SFU_ROW_FLEX

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- a hand-made section, described at the level of its fields ---- */

struct t_fre {
	uint32_t start;
	uint8_t info;		/* count and word size come from here */
	int64_t w[15];
};

struct t_fde {
	uint64_t func;		/* absolute address; the builder stores it relative */
	uint32_t size;
	uint8_t info;
	uint8_t info2;		/* V3 */
	uint8_t rep_size;	/* V2, V3 */
	const struct t_fre *fres;
	size_t nfres;
};

struct t_sec {
	uint8_t version, flags, abi;
	int8_t fixed_fp, fixed_ra;
	uint8_t auxhdr_len;
	const struct t_fde *fdes;
	size_t nfdes;
};

#define MAX_FDES 8
#define MAX_FRES 16

struct built {
	struct bytebuf b;
	size_t fde_at[MAX_FDES];	/* section offset of each FDE (index entry in V3) */
	size_t attr_at[MAX_FDES];	/* V3: section offset of the attribute record */
	size_t fre_at[MAX_FDES][MAX_FRES];
	uint32_t fre_off[MAX_FDES];	/* as stored: relative to the FRE sub-section */
	size_t fres_at;			/* section offset of the FRE sub-section */
	uint32_t fre_len, num_fres;
	size_t used;			/* bytes the header says are in use */
};

static unsigned fde_size(unsigned version)
{
	return version == 1 ? 17 : version == 2 ? 20 : 16;
}

static unsigned word_size(uint8_t info)
{
	unsigned code = (info >> 5) & 3;

	return code == 0 ? 1 : code == 1 ? 2 : 4;	/* code 3 is invalid: written as 4 */
}

static void build(const struct t_sec *s, uint64_t addr, bool be, struct built *out)
{
	static const unsigned asz[] = { 1, 2, 4, 4 };
	unsigned fsz = fde_size(s->version);
	bool pcrel = s->version == 3 || (s->flags & F_PCREL);
	struct bytebuf fres;
	size_t fdes_at;

	assert_true(s->nfdes <= MAX_FDES);
	memset(out, 0, sizeof(*out));
	bb_init(&fres, be);

	/* FRE sub-section first: the FDEs need the offsets */
	for (size_t i = 0; i < s->nfdes; i++) {
		const struct t_fde *f = &s->fdes[i];
		unsigned a = asz[f->info & 3];

		assert_true(f->nfres <= MAX_FRES);
		out->fre_off[i] = fres.len;
		if (s->version == 3) {
			bb_u16(&fres, f->nfres);
			bb_u8(&fres, f->info);
			bb_u8(&fres, f->info2);
			bb_u8(&fres, f->rep_size);
		}
		for (size_t k = 0; k < f->nfres; k++) {
			const struct t_fre *r = &f->fres[k];
			unsigned n = (r->info >> 1) & 0xf, ws = word_size(r->info);

			out->fre_at[i][k] = fres.len;
			bb_put(&fres, r->start, a);
			bb_u8(&fres, r->info);
			for (unsigned j = 0; j < n; j++)
				bb_put(&fres, (uint64_t)r->w[j], ws);
		}
		out->num_fres += f->nfres;
	}
	out->fre_len = fres.len;

	bb_init(&out->b, be);
	bb_u16(&out->b, 0xdee2);
	bb_u8(&out->b, s->version);
	bb_u8(&out->b, s->flags);
	bb_u8(&out->b, s->abi);
	bb_u8(&out->b, (uint8_t)s->fixed_fp);
	bb_u8(&out->b, (uint8_t)s->fixed_ra);
	bb_u8(&out->b, s->auxhdr_len);
	bb_u32(&out->b, s->nfdes);
	bb_u32(&out->b, out->num_fres);
	bb_u32(&out->b, out->fre_len);
	bb_u32(&out->b, 0);			/* fdeoff */
	bb_u32(&out->b, s->nfdes * fsz);	/* freoff */
	for (unsigned i = 0; i < s->auxhdr_len; i++)
		bb_u8(&out->b, 0xa5);
	fdes_at = out->b.len;

	for (size_t i = 0; i < s->nfdes; i++) {
		const struct t_fde *f = &s->fdes[i];
		size_t at = out->b.len;
		uint64_t rel = f->func - addr - (pcrel ? at : 0);

		out->fde_at[i] = at;
		if (s->version == 3) {
			bb_u64(&out->b, rel);
			bb_u32(&out->b, f->size);
			bb_u32(&out->b, out->fre_off[i]);
			continue;
		}
		assert_true((int64_t)rel == (int32_t)rel);
		bb_u32(&out->b, rel);
		bb_u32(&out->b, f->size);
		bb_u32(&out->b, out->fre_off[i]);
		bb_u32(&out->b, f->nfres);
		bb_u8(&out->b, f->info);
		if (s->version == 2) {
			bb_u8(&out->b, f->rep_size);
			bb_u16(&out->b, 0);
		}
	}
	assert_int_equal(out->b.len - fdes_at, s->nfdes * fsz);
	out->fres_at = out->b.len;
	bb_bytes(&out->b, fres.data, fres.len);
	out->used = out->b.len;
	for (size_t i = 0; i < s->nfdes; i++) {
		if (s->version == 3)
			out->attr_at[i] = out->fres_at + out->fre_off[i];
		for (size_t k = 0; k < s->fdes[i].nfres; k++)
			out->fre_at[i][k] += out->fres_at;
	}
}

/* ---- decoding cases ---- */

struct t_lookup {
	uint64_t pc;
	int fde;		/* section order; -1: expect -ENOENT */
	int row;		/* within the FDE */
};

struct dec_case {
	const char *name;
	struct t_sec sec;
	uint64_t addr;
	const struct sfu_fde *fdes;	/* expected, section order */
	const struct sfu_row *rows;	/* expected, all FDEs in section order */
	size_t nrows;
	const struct t_lookup *lookups;
	size_t nlookups;
};

#define SEC(v, fl, abi_, ffp, fra, fdes_) \
	{ .version = (v), .flags = (fl), .abi = (abi_), .fixed_fp = (ffp), .fixed_ra = (fra), \
	  .fdes = (fdes_), .nfdes = N(fdes_) }
#define SEC_AUX(v, fl, abi_, ffp, fra, aux, fdes_) \
	{ .version = (v), .flags = (fl), .abi = (abi_), .fixed_fp = (ffp), .fixed_ra = (fra), \
	  .auxhdr_len = (aux), .fdes = (fdes_), .nfdes = N(fdes_) }
#define FDE(fn, sz, inf, fres_) { .func = (fn), .size = (sz), .info = (inf), .fres = (fres_), .nfres = N(fres_) }
#define FDE2(fn, sz, inf, i2, rep, fres_) \
	{ .func = (fn), .size = (sz), .info = (inf), .info2 = (i2), .rep_size = (rep), .fres = (fres_), \
	  .nfres = N(fres_) }
#define WFDE(st, sz, n, ft, dt, key, rep) \
	{ .start = (st), .size = (sz), .num_fres = (n), .fre_type = (ft), .fde_type = (dt), \
	  .pauth_key = (key), .rep_size = (rep) }
#define WFDE3(st, sz, n, ft, dt, key, rep, sig, i2) \
	{ .start = (st), .size = (sz), .num_fres = (n), .fre_type = (ft), .fde_type = (dt), \
	  .pauth_key = (key), .rep_size = (rep), .signal_frame = (sig), .info2 = (i2) }

/* V1, AMD64: push %rbp prologue, ADDR2 function with 1/2/4-byte offsets, a .plt. */
static const struct t_fre v1_f0[] = {
	{ 0, FI(1, 1, 0, 0), { 8 } },
	{ 1, FI(1, 2, 0, 0), { 16, -16 } },
	{ 4, FI(0, 2, 0, 0), { 16, -16 } },
	{ 0x1f, FI(1, 1, 0, 0), { 8 } },
};
static const struct t_fre v1_f1[] = {
	{ 0, FI(1, 1, 1, 0), { 8 } },
	{ 0x120, FI(1, 2, 1, 0), { 0x1000, -0x90 } },
	{ 0x200, FI(0, 2, 2, 0), { 0x20000, -0x20008 } },
	{ 0x2ff, FI(1, 1, 2, 0), { 0x12345 } },
};
static const struct t_fre plt16[] = {
	{ 0, FI(1, 1, 0, 0), { 8 } },
	{ 11, FI(1, 1, 0, 0), { 16 } },
};
static const struct t_fde v1_fdes[] = {
	FDE(0x401000, 0x20, FDEI(ADDR1, 0, 0, 0), v1_f0),
	FDE(0x401100, 0x300, FDEI(ADDR2, 0, 0, 0), v1_f1),
	FDE(0x401400, 0x40, FDEI(ADDR1, 1, 0, 0), plt16),
};
static const struct sfu_fde v1_want_fdes[] = {
	WFDE(0x401000, 0x20, 4, ADDR1, SFU_FDE_PCINC, 0, 0),
	WFDE(0x401100, 0x300, 4, ADDR2, SFU_FDE_PCINC, 0, 0),
	WFDE(0x401400, 0x40, 2, ADDR1, SFU_FDE_PCMASK, 0, 16),
};
static const struct sfu_row v1_rows[] = {
	ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
	ROW(1, 0, L_SP(16), L_AT(-8), L_AT(-16)),
	ROW(4, 0, L_FP(16), L_AT(-8), L_AT(-16)),
	ROW(0x1f, 0, L_SP(8), L_AT(-8), L_SAME),
	ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
	ROW(0x120, 0, L_SP(0x1000), L_AT(-8), L_AT(-0x90)),
	ROW(0x200, 0, L_FP(0x20000), L_AT(-8), L_AT(-0x20008)),
	ROW(0x2ff, 0, L_SP(0x12345), L_AT(-8), L_SAME),
	ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
	ROW(11, 0, L_SP(16), L_AT(-8), L_SAME),
};
static const struct t_lookup v1_lookups[] = {
	{ 0, -1, 0 }, { 0x400fff, -1, 0 },
	{ 0x401000, 0, 0 }, { 0x401001, 0, 1 }, { 0x401003, 0, 1 }, { 0x401004, 0, 2 },
	{ 0x40101e, 0, 2 }, { 0x40101f, 0, 3 }, { 0x401020, -1, 0 }, { 0x4010ff, -1, 0 },
	{ 0x401100, 1, 0 }, { 0x40121f, 1, 0 }, { 0x401220, 1, 1 }, { 0x4012ff, 1, 1 },
	{ 0x401300, 1, 2 }, { 0x4013fe, 1, 2 }, { 0x4013ff, 1, 3 },
	/* .plt: 16-byte blocks, lookups in the 1st, 2nd and 3rd */
	{ 0x401400, 2, 0 }, { 0x40140a, 2, 0 }, { 0x40140b, 2, 1 }, { 0x40140f, 2, 1 },
	{ 0x401410, 2, 0 }, { 0x40141a, 2, 0 }, { 0x40141b, 2, 1 }, { 0x40141f, 2, 1 },
	{ 0x401420, 2, 0 }, { 0x40142a, 2, 0 }, { 0x40142b, 2, 1 }, { 0x40143f, 2, 1 },
	{ 0x401440, -1, 0 }, { UINT64_MAX, -1, 0 },
};

/* V2, AMD64: outermost row, offset width limits, PCMASK with a 32-byte block, late first FRE. */
static const struct t_fre v2_f0[] = {
	{ 0, FI(0, 0, 0, 0), { 0 } },
	{ 4, FI(1, 2, 0, 0), { 127, -128 } },
	{ 8, FI(1, 2, 1, 0), { 128, -129 } },
	{ 0xc, FI(1, 2, 1, 0), { 32767, -32768 } },
	{ 0x10, FI(0, 2, 2, 0), { 32768, -32769 } },
	{ 0x14, FI(1, 2, 2, 0), { INT32_MAX, INT32_MIN } },
};
static const struct t_fre plt32[] = {
	{ 0, FI(1, 1, 0, 0), { 8 } },
	{ 6, FI(1, 1, 0, 0), { 16 } },
	{ 0x1a, FI(1, 1, 0, 0), { 24 } },
};
static const struct t_fre late_first[] = {
	{ 4, FI(1, 1, 0, 0), { 8 } },
};
static const struct t_fre no_fres[1];
static const struct t_fde v2_fdes[] = {
	FDE(0x401000, 0x30, FDEI(ADDR1, 0, 0, 0), v2_f0),
	FDE2(0x401100, 0x60, FDEI(ADDR1, 1, 0, 0), 0, 32, plt32),
	FDE(0x401200, 0x10, FDEI(ADDR1, 0, 0, 0), late_first),
	{ .func = 0x401300, .size = 0x10, .fres = no_fres, .nfres = 0 },
};
static const struct sfu_fde v2_want_fdes[] = {
	WFDE(0x401000, 0x30, 6, ADDR1, SFU_FDE_PCINC, 0, 0),
	WFDE(0x401100, 0x60, 3, ADDR1, SFU_FDE_PCMASK, 0, 32),
	WFDE(0x401200, 0x10, 1, ADDR1, SFU_FDE_PCINC, 0, 0),
	WFDE(0x401300, 0x10, 0, ADDR1, SFU_FDE_PCINC, 0, 0),
};
static const struct sfu_row v2_rows[] = {
	OUTERMOST(0, 0),
	ROW(4, 0, L_SP(127), L_AT(-8), L_AT(-128)),
	ROW(8, 0, L_SP(128), L_AT(-8), L_AT(-129)),
	ROW(0xc, 0, L_SP(32767), L_AT(-8), L_AT(-32768)),
	ROW(0x10, 0, L_FP(32768), L_AT(-8), L_AT(-32769)),
	ROW(0x14, 0, L_SP(INT32_MAX), L_AT(-8), L_AT(INT32_MIN)),
	ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
	ROW(6, 0, L_SP(16), L_AT(-8), L_SAME),
	ROW(0x1a, 0, L_SP(24), L_AT(-8), L_SAME),
	ROW(4, 0, L_SP(8), L_AT(-8), L_SAME),
};
static const struct t_lookup v2_lookups[] = {
	{ 0x401000, 0, 0 }, { 0x401003, 0, 0 }, { 0x401004, 0, 1 }, { 0x401013, 0, 4 },
	{ 0x401014, 0, 5 }, { 0x40102f, 0, 5 }, { 0x401030, -1, 0 },
	{ 0x401100, 1, 0 }, { 0x401105, 1, 0 }, { 0x401106, 1, 1 }, { 0x401119, 1, 1 },
	{ 0x40111a, 1, 2 }, { 0x40111f, 1, 2 },
	{ 0x401120, 1, 0 }, { 0x401125, 1, 0 }, { 0x401126, 1, 1 }, { 0x401139, 1, 1 },
	{ 0x40113a, 1, 2 }, { 0x401140, 1, 0 }, { 0x401146, 1, 1 }, { 0x401159, 1, 1 },
	{ 0x40115a, 1, 2 }, { 0x40115f, 1, 2 }, { 0x401160, -1, 0 },
	/* before the first FRE start */
	{ 0x401200, -1, 0 }, { 0x401203, -1, 0 }, { 0x401204, 2, 0 }, { 0x40120f, 2, 0 },
	{ 0x401210, -1, 0 },
	/* a function without FREs */
	{ 0x401300, -1, 0 }, { 0x40130f, -1, 0 },
};

/* V2, AMD64 with a fixed FP offset in the header, and an auxiliary header. */
static const struct t_fre fixed_fp_fres[] = {
	{ 0, FI(1, 1, 0, 0), { 8 } },
	{ 2, FI(0, 1, 0, 0), { 16 } },
	{ 8, FI(0, 0, 0, 0), { 0 } },
};
static const struct t_fde fixed_fp_fdes[] = {
	FDE(0x402000, 0x10, FDEI(ADDR1, 0, 0, 0), fixed_fp_fres),
};
static const struct sfu_fde fixed_fp_want_fdes[] = {
	WFDE(0x402000, 0x10, 3, ADDR1, SFU_FDE_PCINC, 0, 0),
};
static const struct sfu_row fixed_fp_rows[] = {
	ROW(0, 0, L_SP(8), L_AT(-8), L_AT(-16)),
	ROW(2, 0, L_FP(16), L_AT(-8), L_AT(-16)),
	OUTERMOST(8, 0),
};
static const struct t_lookup fixed_fp_lookups[] = {
	{ 0x402000, 0, 0 }, { 0x402001, 0, 0 }, { 0x402002, 0, 1 }, { 0x402007, 0, 1 },
	{ 0x402008, 0, 2 }, { 0x40200f, 0, 2 }, { 0x402010, -1, 0 }, { 0x401fff, -1, 0 },
};

/* V2, AArch64: pauth key B, mangled RA, CFA/RA/FP, ADDR4 and ADDR2 functions. */
static const struct t_fre a64_f0[] = {
	{ 0, FI(1, 1, 0, 0), { 0 } },
	{ 4, FI(1, 1, 0, 1), { 0 } },
	{ 8, FI(1, 3, 0, 1), { 32, -24, -32 } },
	{ 0xc, FI(0, 3, 0, 1), { 32, -24, -32 } },
	{ 0x38, FI(1, 2, 0, 1), { 32, -24 } },
	{ 0x3c, FI(1, 1, 0, 0), { 0 } },
};
static const struct t_fre a64_f1[] = {
	{ 0, FI(1, 2, 0, 0), { 16, -8 } },
	{ 0x10000, FI(1, 3, 2, 0), { 0x10010, -0x10008, -0x10010 } },
	{ 0x1ffff, FI(1, 1, 0, 0), { 0 } },
};
static const struct t_fre a64_f2[] = {
	{ 0, FI(1, 1, 0, 0), { 0 } },
	{ 0xfff, FI(1, 3, 1, 0), { 0x200, -0x1f8, -0x200 } },
};
static const struct t_fde a64_fdes[] = {
	FDE(0x410000, 0x40, FDEI(ADDR1, 0, 1, 0), a64_f0),
	FDE(0x420000, 0x20000, FDEI(ADDR4, 0, 0, 0), a64_f1),
	FDE(0x440000, 0x1000, FDEI(ADDR2, 0, 0, 0), a64_f2),
};
static const struct sfu_fde a64_want_fdes[] = {
	WFDE(0x410000, 0x40, 6, ADDR1, SFU_FDE_PCINC, 1, 0),
	WFDE(0x420000, 0x20000, 3, ADDR4, SFU_FDE_PCINC, 0, 0),
	WFDE(0x440000, 0x1000, 2, ADDR2, SFU_FDE_PCINC, 0, 0),
};
static const struct sfu_row a64_rows[] = {
	ROW(0, 0, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
	ROW(4, MANGLED, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
	ROW(8, MANGLED, L_SP(32), L_AT(-24), L_AT(-32)),
	ROW(0xc, MANGLED, L_FP(32), L_AT(-24), L_AT(-32)),
	ROW(0x38, MANGLED, L_SP(32), L_AT(-24), L_SAME),
	ROW(0x3c, 0, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
	ROW(0, 0, L_SP(16), L_AT(-8), L_SAME),
	ROW(0x10000, 0, L_SP(0x10010), L_AT(-0x10008), L_AT(-0x10010)),
	ROW(0x1ffff, 0, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
	ROW(0, 0, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
	ROW(0xfff, 0, L_SP(0x200), L_AT(-0x1f8), L_AT(-0x200)),
};
static const struct t_lookup a64_lookups[] = {
	{ 0x40ffff, -1, 0 },
	{ 0x410000, 0, 0 }, { 0x410003, 0, 0 }, { 0x410004, 0, 1 }, { 0x410007, 0, 1 },
	{ 0x410008, 0, 2 }, { 0x41000b, 0, 2 }, { 0x41000c, 0, 3 }, { 0x410037, 0, 3 },
	{ 0x410038, 0, 4 }, { 0x41003b, 0, 4 }, { 0x41003c, 0, 5 }, { 0x41003f, 0, 5 },
	{ 0x410040, -1, 0 }, { 0x41ffff, -1, 0 },
	{ 0x420000, 1, 0 }, { 0x42ffff, 1, 0 }, { 0x430000, 1, 1 }, { 0x43fffe, 1, 1 },
	{ 0x43ffff, 1, 2 },
	{ 0x440000, 2, 0 }, { 0x440ffe, 2, 0 }, { 0x440fff, 2, 1 }, { 0x441000, -1, 0 },
};

/* V2, s390x: CFA scaled by 8 plus 160, RA padding word 0, registers in odd words. */
static const struct t_fre s390x_v2_f0[] = {
	{ 0, FI(1, 1, 0, 0), { 0 } },
	{ 6, FI(1, 3, 0, 0), { 20, -48, -72 } },
	{ 10, FI(1, 3, 0, 0), { 20, 0, -72 } },
	{ 14, FI(1, 3, 0, 0), { 20, (1 << 1) | 1, (16 << 1) | 1 } },
	{ 20, FI(0, 2, 0, 0), { -2, -40 } },
	{ 24, FI(1, 2, 1, 0), { 1000, -48 } },
	{ 28, FI(1, 2, 0, 0), { -20, (14 << 1) | 1 } },
	{ 32, FI(1, 3, 0, 0), { 20, -48, (11 << 1) | 1 } },
	{ 36, FI(1, 2, 2, 0), { 0x0fffffeb, -48 } },
	{ 40, FI(1, 2, 2, 0), { -0x10000000, -48 } },
};
static const struct t_fde s390x_v2_fdes[] = {
	FDE(0x1000000, 0x40, FDEI(ADDR1, 0, 0, 0), s390x_v2_f0),
};
static const struct sfu_fde s390x_v2_want_fdes[] = {
	WFDE(0x1000000, 0x40, 10, ADDR1, SFU_FDE_PCINC, 0, 0),
};
static const struct sfu_row s390x_v2_rows[] = {
	ROW(0, 0, L_SP(160), L_INREG(SFU_REG_RA), L_SAME),
	ROW(6, 0, L_SP(320), L_AT(-48), L_AT(-72)),
	ROW(10, 0, L_SP(320), L_INREG(SFU_REG_RA), L_AT(-72)),
	ROW(14, 0, L_SP(320), L_INDW(1, 0), L_INDW(16, 0)),
	ROW(20, 0, L_FP(144), L_AT(-40), L_SAME),
	ROW(24, 0, L_SP(8160), L_AT(-48), L_SAME),
	ROW(28, 0, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
	ROW(32, 0, L_SP(320), L_AT(-48), L_INREG(SFU_REG_FP)),
	ROW(36, 0, L_SP(0x7ffffff8), L_AT(-48), L_SAME),
	ROW(40, 0, L_SP(INT32_MIN + 160), L_AT(-48), L_SAME),
};
static const struct t_lookup s390x_v2_lookups[] = {
	{ 0x1000000, 0, 0 }, { 0x1000005, 0, 0 }, { 0x1000006, 0, 1 }, { 0x100000a, 0, 2 },
	{ 0x100000e, 0, 3 }, { 0x1000013, 0, 3 }, { 0x1000014, 0, 4 }, { 0x100003f, 0, 9 },
	{ 0x1000040, -1, 0 },
};

/* V3, s390x: the same words mean stack offsets (no register trick); a flexible FDE. */
static const struct t_fre s390x_v3_f0[] = {
	{ 0, FI(1, 1, 0, 0), { 0 } },
	{ 6, FI(1, 3, 0, 0), { 20, -48, -72 } },
	{ 10, FI(1, 3, 0, 0), { 20, 0, -72 } },
	{ 14, FI(1, 3, 0, 0), { 20, -47, -71 } },
	{ 20, FI(1, 2, 0, 0), { 20, 29 } },
};
static const struct t_fre s390x_v3_f1[] = {
	{ 0, FI(0, 2, 0, 0), { CTRL(15, 0, 1), 0 } },
	{ 4, FI(0, 6, 0, 0), { CTRL(10, 0, 1), 20, CTRL(9, 0, 1), 0, CTRL(0, 1, 0), -72 } },
	{ 8, FI(0, 5, 0, 0), { CTRL(11, 0, 1), -2, 0, CTRL(0, 1, 0), -72 } },
};
static const struct t_fde s390x_v3_fdes[] = {
	FDE2(0x1000000, 0x40, FDEI(ADDR1, 0, 0, 0), 0, 0, s390x_v3_f0),
	FDE2(0x1000100, 0x20, FDEI(ADDR1, 0, 0, 0), 1, 0, s390x_v3_f1),
};
static const struct sfu_fde s390x_v3_want_fdes[] = {
	WFDE3(0x1000000, 0x40, 5, ADDR1, SFU_FDE_PCINC, 0, 0, false, 0),
	WFDE3(0x1000100, 0x20, 3, ADDR1, SFU_FDE_PCINC, 0, 0, false, 1),
};
static const struct sfu_row s390x_v3_rows[] = {
	ROW(0, 0, L_SP(160), L_INREG(SFU_REG_RA), L_SAME),
	ROW(6, 0, L_SP(320), L_AT(-48), L_AT(-72)),
	ROW(10, 0, L_SP(320), L_INREG(SFU_REG_RA), L_AT(-72)),
	ROW(14, 0, L_SP(320), L_AT(-47), L_AT(-71)),
	ROW(20, 0, L_SP(320), L_AT(29), L_SAME),
	ROW(0, FLEX, L_SP(160), L_INREG(SFU_REG_RA), L_SAME),
	ROW(4, FLEX, L_REG(10, 320), L_INDW(9, 0), L_AT(-72)),
	ROW(8, FLEX, L_FP(144), L_INREG(SFU_REG_RA), L_AT(-72)),
};
static const struct t_lookup s390x_v3_lookups[] = {
	{ 0x1000000, 0, 0 }, { 0x1000013, 0, 3 }, { 0x1000014, 0, 4 }, { 0x100003f, 0, 4 },
	{ 0x1000040, -1, 0 }, { 0x10000ff, -1, 0 },
	{ 0x1000100, 1, 0 }, { 0x1000103, 1, 0 }, { 0x1000104, 1, 1 }, { 0x1000108, 1, 2 },
	{ 0x100011f, 1, 2 }, { 0x1000120, -1, 0 },
};

/* V3, AMD64: default, flexible (every rule form), signal frame and PCMASK FDEs. */
static const struct t_fre v3_flex[] = {
	{ 0, FI(0, 2, 0, 0), { CTRL(7, 0, 1), 8 } },
	/* DRAP: CFA = *(r10 - 8), RA and FP on the stack (control word 2) */
	{ 4, FI(0, 6, 0, 0), { CTRL(10, 1, 1), -8, CTRL(0, 1, 0), -8, CTRL(0, 1, 0), -16 } },
	/* RA in r11, FP in rbx */
	{ 8, FI(0, 6, 0, 0), { CTRL(7, 0, 1), 16, CTRL(11, 0, 1), 0, CTRL(3, 0, 1), 0 } },
	/* RA = CFA + 8 as a value (val_offset): unusable */
	{ 12, FI(0, 4, 0, 0), { CTRL(7, 0, 1), 16, 0, 8 } },
	/* FP = rbx + 8 as a value: unusable */
	{ 16, FI(0, 6, 0, 0), { CTRL(7, 0, 1), 16, CTRL(0, 1, 0), -8, CTRL(3, 0, 1), 8 } },
	/* FP rule 0/0: unchanged */
	{ 20, FI(0, 6, 0, 0), { CTRL(7, 0, 1), 16, CTRL(0, 1, 0), -8, 0, 0 } },
	{ 24, FI(0, 0, 0, 0), { 0 } },
	{ 28, FI(0, 6, 1, 0), { CTRL(7, 0, 1), 0x1000, CTRL(0, 1, 0), -8, CTRL(0, 1, 0), -0x1010 } },
	{ 32, FI(0, 6, 2, 0), { CTRL(300, 0, 1), 0x20000, CTRL(0, 1, 0), -8, CTRL(6, 1, 1), -0x20010 } },
	/* RA = *(rsp + 0) */
	{ 36, FI(0, 4, 0, 0), { CTRL(7, 0, 1), 8, CTRL(7, 1, 1), 0 } },
	/* CFA = rbp + 16 through the flexible form */
	{ 40, FI(0, 2, 0, 0), { CTRL(6, 0, 1), 16 } },
};
static const struct t_fre one_fre_sp8[] = {
	{ 0, FI(1, 1, 0, 0), { 8 } },
};
static const struct t_fde v3_fdes[] = {
	FDE2(0x401000, 0x20, FDEI(ADDR1, 0, 0, 0), 0, 0, v1_f0),
	FDE2(0x401100, 0x40, FDEI(ADDR1, 0, 0, 0), 1, 0, v3_flex),
	FDE2(0x401200, 0x10, FDEI(ADDR1, 0, 0, 1), 0, 0, one_fre_sp8),
	FDE2(0x401300, 0x40, FDEI(ADDR1, 1, 0, 0), 0, 16, plt16),
};
static const struct sfu_fde v3_want_fdes[] = {
	WFDE3(0x401000, 0x20, 4, ADDR1, SFU_FDE_PCINC, 0, 0, false, 0),
	WFDE3(0x401100, 0x40, 11, ADDR1, SFU_FDE_PCINC, 0, 0, false, 1),
	WFDE3(0x401200, 0x10, 1, ADDR1, SFU_FDE_PCINC, 0, 0, true, 0),
	WFDE3(0x401300, 0x40, 2, ADDR1, SFU_FDE_PCMASK, 0, 16, false, 0),
};
static const struct sfu_row v3_rows[] = {
	ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
	ROW(1, 0, L_SP(16), L_AT(-8), L_AT(-16)),
	ROW(4, 0, L_FP(16), L_AT(-8), L_AT(-16)),
	ROW(0x1f, 0, L_SP(8), L_AT(-8), L_SAME),
	ROW(0, FLEX, L_SP(8), L_AT(-8), L_SAME),
	ROW(4, FLEX, L_DEREF(SFU_REG_OTHER, 10, -8), L_AT(-8), L_AT(-16)),
	ROW(8, FLEX, L_SP(16), L_INDW(11, 0), L_INDW(3, 0)),
	ROW(12, FLEX | UNUSABLE, L_SP(16), L_UNDEF, L_SAME),
	ROW(16, FLEX | UNUSABLE, L_SP(16), L_AT(-8), L_INDW(3, 8)),
	ROW(20, FLEX, L_SP(16), L_AT(-8), L_SAME),
	OUTERMOST(24, FLEX),
	ROW(28, FLEX, L_SP(0x1000), L_AT(-8), L_AT(-0x1010)),
	ROW(32, FLEX, L_REG(300, 0x20000), L_AT(-8), L_DEREF(SFU_REG_FP, 0, -0x20010)),
	ROW(36, FLEX, L_SP(8), L_DEREF(SFU_REG_SP, 0, 0), L_SAME),
	ROW(40, FLEX, L_FP(16), L_AT(-8), L_SAME),
	ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
	ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
	ROW(11, 0, L_SP(16), L_AT(-8), L_SAME),
};
static const struct t_lookup v3_lookups[] = {
	{ 0x400fff, -1, 0 }, { 0x401000, 0, 0 }, { 0x401003, 0, 1 }, { 0x401004, 0, 2 },
	{ 0x40101f, 0, 3 }, { 0x401020, -1, 0 },
	{ 0x401100, 1, 0 }, { 0x401103, 1, 0 }, { 0x401104, 1, 1 }, { 0x40110b, 1, 2 },
	{ 0x40110c, 1, 3 }, { 0x401118, 1, 6 }, { 0x40111b, 1, 6 }, { 0x40111c, 1, 7 },
	{ 0x401128, 1, 10 }, { 0x40113f, 1, 10 }, { 0x401140, -1, 0 },
	{ 0x401200, 2, 0 }, { 0x40120f, 2, 0 }, { 0x401210, -1, 0 },
	{ 0x401300, 3, 0 }, { 0x40130b, 3, 1 }, { 0x401310, 3, 0 }, { 0x40131a, 3, 0 },
	{ 0x40131b, 3, 1 }, { 0x401320, 3, 0 }, { 0x40132b, 3, 1 }, { 0x40133f, 3, 1 },
	{ 0x401340, -1, 0 },
};

/*
 * V3, AMD64 flexible FRE with the RA padding word: the RA is untracked, so
 * it is where the header's fixed RA offset says (libsframe
 * sframe_fre_get_ra_offset; gas writes padding whenever ra_loc is NONE and
 * the FP is tracked, which on AMD64 is every DRAP function that saves %rbp).
 */
static const struct t_fre v3_pad_fres[] = {
	{ 0, FI(0, 5, 0, 0), { CTRL(10, 1, 1), -8, 0, CTRL(0, 1, 0), -16 } },
};
static const struct t_fde v3_pad_fdes[] = {
	FDE2(0x401000, 0x10, FDEI(ADDR1, 0, 0, 0), 1, 0, v3_pad_fres),
};
static const struct sfu_fde v3_pad_want_fdes[] = {
	WFDE3(0x401000, 0x10, 1, ADDR1, SFU_FDE_PCINC, 0, 0, false, 1),
};
static const struct sfu_row v3_pad_rows[] = {
	ROW(0, FLEX, L_DEREF(SFU_REG_OTHER, 10, -8), L_AT(-8), L_AT(-16)),
};
static const struct t_lookup v3_pad_lookups[] = {
	{ 0x401000, 0, 0 },
};

/* V3, AArch64: pauth key B in the attribute record, mangled RA, ADDR2. */
static const struct t_fre a64_v3_f0[] = {
	{ 0, FI(1, 1, 0, 0), { 0 } },
	{ 4, FI(1, 1, 0, 1), { 0 } },
	{ 8, FI(1, 3, 0, 1), { 48, -40, -48 } },
	{ 0x3fc, FI(1, 1, 0, 0), { 0 } },
};
static const struct t_fde a64_v3_fdes[] = {
	FDE2(0x410000, 0x400, FDEI(ADDR2, 0, 1, 0), 0, 0, a64_v3_f0),
	FDE2(0x410400, 0x40, FDEI(ADDR1, 0, 0, 1), 0, 0, a64_f0),
};
static const struct sfu_fde a64_v3_want_fdes[] = {
	WFDE3(0x410000, 0x400, 4, ADDR2, SFU_FDE_PCINC, 1, 0, false, 0),
	WFDE3(0x410400, 0x40, 6, ADDR1, SFU_FDE_PCINC, 0, 0, true, 0),
};
static const struct sfu_row a64_v3_rows[] = {
	ROW(0, 0, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
	ROW(4, MANGLED, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
	ROW(8, MANGLED, L_SP(48), L_AT(-40), L_AT(-48)),
	ROW(0x3fc, 0, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
	ROW(0, 0, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
	ROW(4, MANGLED, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
	ROW(8, MANGLED, L_SP(32), L_AT(-24), L_AT(-32)),
	ROW(0xc, MANGLED, L_FP(32), L_AT(-24), L_AT(-32)),
	ROW(0x38, MANGLED, L_SP(32), L_AT(-24), L_SAME),
	ROW(0x3c, 0, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
};
static const struct t_lookup a64_v3_lookups[] = {
	{ 0x410000, 0, 0 }, { 0x410007, 0, 1 }, { 0x410008, 0, 2 }, { 0x4103fb, 0, 2 },
	{ 0x4103fc, 0, 3 }, { 0x4103ff, 0, 3 }, { 0x410400, 1, 0 }, { 0x41041f, 1, 3 },
	{ 0x410438, 1, 4 }, { 0x41043f, 1, 5 }, { 0x410440, -1, 0 },
};

/* Unsorted FDE tables without the sorted flag: sorted at load, lookups work. */
static const struct t_fre two_fres[] = {
	{ 0, FI(1, 1, 0, 0), { 8 } },
	{ 1, FI(1, 1, 0, 0), { 16 } },
};
static const struct t_fde unsorted_fdes[] = {
	FDE2(0x402000, 0x10, FDEI(ADDR1, 0, 0, 0), 0, 0, two_fres),
	FDE2(0x401000, 0x20, FDEI(ADDR1, 0, 0, 0), 0, 0, one_fre_sp8),
	FDE2(0x401800, 0x8, FDEI(ADDR1, 0, 0, 0), 0, 0, two_fres),
};
static const struct sfu_fde unsorted_want_fdes[] = {
	WFDE(0x402000, 0x10, 2, ADDR1, SFU_FDE_PCINC, 0, 0),
	WFDE(0x401000, 0x20, 1, ADDR1, SFU_FDE_PCINC, 0, 0),
	WFDE(0x401800, 0x8, 2, ADDR1, SFU_FDE_PCINC, 0, 0),
};
static const struct sfu_row unsorted_rows[] = {
	ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
	ROW(1, 0, L_SP(16), L_AT(-8), L_SAME),
	ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
	ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
	ROW(1, 0, L_SP(16), L_AT(-8), L_SAME),
};
static const struct t_lookup unsorted_lookups[] = {
	{ 0x400fff, -1, 0 }, { 0x401000, 1, 0 }, { 0x40101f, 1, 0 }, { 0x401020, -1, 0 },
	{ 0x4017ff, -1, 0 }, { 0x401800, 2, 0 }, { 0x401801, 2, 1 }, { 0x401807, 2, 1 },
	{ 0x401808, -1, 0 }, { 0x402000, 0, 0 }, { 0x402001, 0, 1 }, { 0x40200f, 0, 1 },
	{ 0x402010, -1, 0 },
};

static const struct t_fde empty_fdes[1];
static const struct t_lookup empty_lookups[] = {
	{ 0, -1, 0 }, { 0x401000, -1, 0 },
};

#define CASE(nm, sec_, fdes_, rows_, lk_) \
	{ .name = nm, .sec = sec_, .addr = 0x400000, .fdes = fdes_, .rows = rows_, \
	  .nrows = N(rows_), .lookups = lk_, .nlookups = N(lk_) }
#define S390X_CASE(nm, sec_, fdes_, rows_, lk_) \
	{ .name = nm, .sec = sec_, .addr = 0xff0000, .fdes = fdes_, .rows = rows_, \
	  .nrows = N(rows_), .lookups = lk_, .nlookups = N(lk_) }

static const struct dec_case dec_cases[] = {
	CASE("v1_amd64", SEC(1, F_SORTED | F_FP, ABI_AMD64, 0, -8, v1_fdes), v1_want_fdes,
	     v1_rows, v1_lookups),
	CASE("v2_amd64", SEC(2, F_SORTED, ABI_AMD64, 0, -8, v2_fdes), v2_want_fdes, v2_rows,
	     v2_lookups),
	CASE("v2_amd64_pcrel", SEC(2, F_SORTED | F_PCREL, ABI_AMD64, 0, -8, v2_fdes),
	     v2_want_fdes, v2_rows, v2_lookups),
	CASE("v2_amd64_fixed_fp_auxhdr",
	     SEC_AUX(2, F_SORTED | F_PCREL, ABI_AMD64, -16, -8, 3, fixed_fp_fdes),
	     fixed_fp_want_fdes, fixed_fp_rows, fixed_fp_lookups),
	CASE("v2_aarch64_le", SEC(2, F_SORTED | F_PCREL, ABI_A64_LE, 0, 0, a64_fdes),
	     a64_want_fdes, a64_rows, a64_lookups),
	CASE("v2_aarch64_be", SEC(2, F_SORTED | F_PCREL, ABI_A64_BE, 0, 0, a64_fdes),
	     a64_want_fdes, a64_rows, a64_lookups),
	CASE("v1_aarch64_be", SEC(1, F_SORTED, ABI_A64_BE, 0, 0, a64_fdes), a64_want_fdes,
	     a64_rows, a64_lookups),
	S390X_CASE("v2_s390x", SEC(2, F_SORTED | F_PCREL, ABI_S390X, 0, 0, s390x_v2_fdes),
		   s390x_v2_want_fdes, s390x_v2_rows, s390x_v2_lookups),
	S390X_CASE("v3_s390x", SEC(3, F_SORTED | F_PCREL, ABI_S390X, 0, 0, s390x_v3_fdes),
		   s390x_v3_want_fdes, s390x_v3_rows, s390x_v3_lookups),
	CASE("v3_amd64", SEC(3, F_SORTED | F_PCREL, ABI_AMD64, 0, -8, v3_fdes), v3_want_fdes,
	     v3_rows, v3_lookups),
	CASE("v3_amd64_flex_ra_padding_uses_fixed_ra",
	     SEC(3, F_SORTED | F_PCREL, ABI_AMD64, 0, -8, v3_pad_fdes), v3_pad_want_fdes,
	     v3_pad_rows, v3_pad_lookups),
	CASE("v3_aarch64_le", SEC(3, F_SORTED | F_PCREL, ABI_A64_LE, 0, 0, a64_v3_fdes),
	     a64_v3_want_fdes, a64_v3_rows, a64_v3_lookups),
	CASE("v3_aarch64_be", SEC(3, F_SORTED | F_PCREL, ABI_A64_BE, 0, 0, a64_v3_fdes),
	     a64_v3_want_fdes, a64_v3_rows, a64_v3_lookups),
	CASE("v1_unsorted", SEC(1, 0, ABI_AMD64, 0, -8, unsorted_fdes), unsorted_want_fdes,
	     unsorted_rows, unsorted_lookups),
	CASE("v2_unsorted_pcrel", SEC(2, F_PCREL, ABI_AMD64, 0, -8, unsorted_fdes),
	     unsorted_want_fdes, unsorted_rows, unsorted_lookups),
	CASE("v3_unsorted", SEC(3, F_PCREL, ABI_AMD64, 0, -8, unsorted_fdes),
	     unsorted_want_fdes, unsorted_rows, unsorted_lookups),
	{ .name = "v2_empty",
	  .sec = { .version = 2, .flags = F_SORTED, .abi = ABI_AMD64, .fixed_ra = -8,
		   .fdes = empty_fdes, .nfdes = 0 },
	  .addr = 0x400000, .lookups = empty_lookups, .nlookups = N(empty_lookups) },
};

static void check_header(const struct sfu_sframe *sf, const struct t_sec *s,
			 const struct built *bt, bool be)
{
	const struct sfu_sframe_header *h = sfu_sframe__header(sf);

	assert_int_equal(h->version, s->version);
	assert_int_equal(h->flags, s->flags);
	assert_int_equal(h->abi, s->abi);
	assert_int_equal(h->cfa_fixed_fp_offset, s->fixed_fp);
	assert_int_equal(h->cfa_fixed_ra_offset, s->fixed_ra);
	assert_int_equal(h->auxhdr_len, s->auxhdr_len);
	assert_int_equal(h->num_fdes, s->nfdes);
	assert_int_equal(h->num_fres, bt->num_fres);
	assert_int_equal(h->fre_len, bt->fre_len);
	assert_int_equal(h->fdeoff, 0);
	assert_int_equal(h->freoff, s->nfdes * fde_size(s->version));
	assert_int_equal(h->big_endian, be);
	assert_int_equal(sfu_sframe__fde_count(sf), s->nfdes);
}

static void check_decoded(const struct sfu_sframe *sf, const struct dec_case *c,
			  const struct built *bt)
{
	size_t r = 0;

	for (size_t i = 0; i < c->sec.nfdes; i++) {
		const struct t_fde *tf = &c->sec.fdes[i];
		const struct sfu_fde *fde = sfu_sframe__fde(sf, i);

		assert_non_null(fde);
		assert_fde_equal(fde, &c->fdes[i]);
		assert_int_equal(fde->fre_off, bt->fre_off[i]);
		assert_int_equal(fde->info, tf->info);
		for (size_t k = 0; k < tf->nfres; k++, r++) {
			const struct sfu_row *row = sfu_sframe__row(sf, fde->first_row + k);
			uint8_t info = tf->fres[k].info;
			struct sfu_row expect;

			assert_true(r < c->nrows);
			assert_non_null(row);
			/* the decoder marks each row of a signal trampoline (V3) */
			expect = c->rows[r];
			if (c->fdes[i].signal_frame)
				expect.flags |= SFU_ROW_SIGNAL_FRAME;
			assert_row_equal(row, &expect);
			assert_int_equal(row->info, info);
			assert_int_equal(row->offset_count, (info >> 1) & 0xf);
			assert_int_equal(row->offset_size, word_size(info));
		}
	}
	assert_int_equal(r, c->nrows);
	assert_null(sfu_sframe__fde(sf, c->sec.nfdes));
	assert_null(sfu_sframe__row(sf, c->nrows));
}

static void check_lookups(const struct sfu_sframe *sf, const struct dec_case *c)
{
	for (size_t i = 0; i < c->nlookups; i++) {
		const struct t_lookup *l = &c->lookups[i];
		const struct sfu_fde *fde = NULL;
		const struct sfu_row *row = NULL;
		int err = sfu_sframe__find(sf, l->pc, &fde, &row);

		if (l->fde < 0) {
			if (err != -ENOENT)
				fail_msg("%s: pc %#llx: got %d, want -ENOENT", c->name,
					 (unsigned long long)l->pc, err);
			continue;
		}
		if (err)
			fail_msg("%s: pc %#llx: got %d, want FDE %d row %d", c->name,
				 (unsigned long long)l->pc, err, l->fde, l->row);
		if (fde != sfu_sframe__fde(sf, l->fde) ||
		    row != sfu_sframe__row(sf, fde->first_row + l->row))
			fail_msg("%s: pc %#llx: got FDE at %#llx row start %#x, want FDE %d row %d",
				 c->name, (unsigned long long)l->pc,
				 (unsigned long long)fde->start, row->start, l->fde, l->row);
	}
}

static void test_decode_case(void **state)
{
	const struct dec_case *c = *state;

	/* the section below its functions (positive starts) and above them (negative) */
	for (int i = 0; i < 4; i++) {
		bool be = i & 1;
		uint64_t addr = c->addr + (i & 2 ? 0x200000 : 0);
		struct sfu_diag diag = { 0 };
		struct sfu_sframe *sf;
		struct built bt;

		build(&c->sec, addr, be, &bt);
		sf = sframe_new_exact(bt.b.data, bt.b.len, addr, &diag);
		if (!sf)
			fail_msg("%s (%s, section at %#llx): decode failed: errno %d: %s", c->name,
				 be ? "BE" : "LE", (unsigned long long)addr, errno, diag.reason);
		check_header(sf, &c->sec, &bt, be);
		check_decoded(sf, c, &bt);
		check_lookups(sf, c);
		sfu_sframe__free(sf);
	}
}

/* ---- literal bytes, written out by hand, to pin the layout itself ---- */

/* V1 AMD64 LE, section at 0x1000: one function at 0x1100, 0x20 bytes, two FREs. */
static const uint8_t v1_literal[] = {
	0xe2, 0xde, 0x01, 0x01, 0x03, 0x00, 0xf8, 0x00,	/* magic, v1, sorted, amd64, 0, -8, 0 */
	0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,	/* 1 FDE, 2 FREs */
	0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* fre_len 7, fdeoff 0 */
	0x11, 0x00, 0x00, 0x00,				/* freoff 17 */
	0x00, 0x01, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00,	/* start 0x100, size 0x20 */
	0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,	/* fre_off 0, 2 FREs */
	0x00,						/* ADDR1, PCINC */
	0x00, 0x03, 0x08,				/* 0: sp+8 */
	0x01, 0x05, 0x10, 0xf0,				/* 1: sp+16, fp at cfa-16 */
};

/* V2 AArch64 BE with PCREL, section at 0x10000: one function at 0x10100, key B. */
static const uint8_t v2_be_literal[] = {
	0xde, 0xe2, 0x02, 0x05, 0x01, 0x00, 0x00, 0x00,	/* BE magic, v2, sorted|pcrel, aarch64-be */
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02,	/* 1 FDE, 2 FREs */
	0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,	/* fre_len 8, fdeoff 0 */
	0x00, 0x00, 0x00, 0x14,				/* freoff 20 */
	0x00, 0x00, 0x00, 0xe4, 0x00, 0x00, 0x00, 0x40,	/* start 0x100 - 28 = 0xe4, size 0x40 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,	/* fre_off 0, 2 FREs */
	0x20, 0x00, 0x00, 0x00,				/* ADDR1, key B, rep 0, pad */
	0x00, 0x03, 0x00,				/* 0: sp+0, RA in x30 */
	0x04, 0x87, 0x10, 0xf8, 0xf0,			/* 4: mangled sp+16, ra cfa-8, fp cfa-16 */
};

/* V3 AMD64 LE, section at 0: one function at 0x40, attribute record before the FREs. */
static const uint8_t v3_literal[] = {
	0xe2, 0xde, 0x03, 0x05, 0x03, 0x00, 0xf8, 0x00,	/* v3, sorted|pcrel, amd64, ra -8 */
	0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,	/* 1 FDE, 1 FRE */
	0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* fre_len 5 + 3, fdeoff 0 */
	0x10, 0x00, 0x00, 0x00,				/* freoff 16 */
	0x24, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* start 0x40 - 28 (i64) */
	0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* size 16, fre_off 0 */
	0x01, 0x00, 0x80, 0x00, 0x00,			/* 1 FRE, signal frame, default, rep 0 */
	0x00, 0x03, 0x08,				/* 0: sp+8 */
};

/*
 * The layout gcc -Wa,--gsframe produced on this machine (NOTES.md): .sframe
 * at 0x20f8 after .text, so the first FDE's start field is 0xffffef28 and
 * readelf prints pc 0x1020.
 */
static const uint8_t v1_after_text[] = {
	0xe2, 0xde, 0x01, 0x01, 0x03, 0x00, 0xf8, 0x00,
	0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
	0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x11, 0x00, 0x00, 0x00,
	0x28, 0xef, 0xff, 0xff, 0x10, 0x00, 0x00, 0x00,	/* start -0x10d8, size 16 */
	0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
	0x00,
	0x00, 0x03, 0x08,
};

static void test_literal_v1_after_text(void **state)
{
	const struct sfu_fde *fde;
	const struct sfu_row *row;
	struct sfu_sframe *sf = sframe_new_exact(v1_after_text, sizeof(v1_after_text), 0x20f8,
						 NULL);

	(void)state;
	assert_non_null(sf);
	assert_int_equal(sfu_sframe__fde(sf, 0)->start, 0x1020);
	assert_int_equal(sfu_sframe__find(sf, 0x1020, &fde, &row), 0);
	assert_int_equal(sfu_sframe__find(sf, 0x102f, &fde, &row), 0);
	assert_int_equal(sfu_sframe__find(sf, 0x1030, &fde, &row), -ENOENT);
	assert_int_equal(sfu_sframe__find(sf, 0x101f, &fde, &row), -ENOENT);
	sfu_sframe__free(sf);
}

static void test_literal_v1(void **state)
{
	const struct sfu_row want[] = {
		ROW(0, 0, L_SP(8), L_AT(-8), L_SAME),
		ROW(1, 0, L_SP(16), L_AT(-8), L_AT(-16)),
	};
	const struct sfu_fde wfde = WFDE(0x1100, 0x20, 2, ADDR1, SFU_FDE_PCINC, 0, 0);
	const struct sfu_fde *fde;
	const struct sfu_row *row;
	struct sfu_sframe *sf = sframe_new_exact(v1_literal, sizeof(v1_literal), 0x1000, NULL);

	(void)state;
	assert_non_null(sf);
	assert_false(sfu_sframe__header(sf)->big_endian);
	assert_fde_equal(sfu_sframe__fde(sf, 0), &wfde);
	assert_row_equal(sfu_sframe__row(sf, 0), &want[0]);
	assert_row_equal(sfu_sframe__row(sf, 1), &want[1]);
	assert_int_equal(sfu_sframe__find(sf, 0x111f, &fde, &row), 0);
	assert_row_equal(row, &want[1]);
	sfu_sframe__free(sf);
}

static void test_literal_v2_be(void **state)
{
	const struct sfu_row want[] = {
		ROW(0, 0, L_SP(0), L_INREG(SFU_REG_RA), L_SAME),
		ROW(4, MANGLED, L_SP(16), L_AT(-8), L_AT(-16)),
	};
	const struct sfu_fde wfde = WFDE(0x10100, 0x40, 2, ADDR1, SFU_FDE_PCINC, 1, 0);
	struct sfu_sframe *sf = sframe_new_exact(v2_be_literal, sizeof(v2_be_literal), 0x10000,
						 NULL);

	(void)state;
	assert_non_null(sf);
	assert_true(sfu_sframe__header(sf)->big_endian);
	assert_int_equal(sfu_sframe__header(sf)->abi, ABI_A64_BE);
	assert_fde_equal(sfu_sframe__fde(sf, 0), &wfde);
	assert_row_equal(sfu_sframe__row(sf, 0), &want[0]);
	assert_row_equal(sfu_sframe__row(sf, 1), &want[1]);
	sfu_sframe__free(sf);
}

static void test_literal_v3(void **state)
{
	const struct sfu_row want = ROW(0, SFU_ROW_SIGNAL_FRAME, L_SP(8), L_AT(-8), L_SAME);
	const struct sfu_fde wfde = WFDE3(0x40, 0x10, 1, ADDR1, SFU_FDE_PCINC, 0, 0, true, 0);
	const struct sfu_fde *fde;
	const struct sfu_row *row;
	struct sfu_sframe *sf = sframe_new_exact(v3_literal, sizeof(v3_literal), 0, NULL);

	(void)state;
	assert_non_null(sf);
	assert_fde_equal(sfu_sframe__fde(sf, 0), &wfde);
	assert_int_equal(sfu_sframe__fde(sf, 0)->fre_off, 0);
	assert_row_equal(sfu_sframe__row(sf, 0), &want);
	assert_int_equal(sfu_sframe__find(sf, 0x4f, &fde, &row), 0);
	assert_int_equal(sfu_sframe__find(sf, 0x50, &fde, &row), -ENOENT);
	assert_int_equal(sfu_sframe__find(sf, 0x3f, &fde, &row), -ENOENT);
	sfu_sframe__free(sf);
}

/* The FRE start may equal the function size (the kernel allows it): an empty last range. */
static void test_fre_start_at_size(void **state)
{
	static const struct t_fre fres[] = {
		{ 0, FI(1, 1, 0, 0), { 8 } },
		{ 0x10, FI(1, 1, 0, 0), { 16 } },
	};
	static const struct t_fde fdes[] = { FDE(0x401000, 0x10, FDEI(ADDR1, 0, 0, 0), fres) };
	const struct t_sec s = SEC(2, F_SORTED, ABI_AMD64, 0, -8, fdes);
	const struct sfu_fde *fde;
	const struct sfu_row *row;
	struct sfu_sframe *sf;
	struct built bt;

	(void)state;
	build(&s, 0x400000, false, &bt);
	sf = sframe_new_exact(bt.b.data, bt.b.len, 0x400000, NULL);
	assert_non_null(sf);
	assert_int_equal(sfu_sframe__find(sf, 0x40100f, &fde, &row), 0);
	assert_int_equal(row->start, 0);
	assert_int_equal(sfu_sframe__find(sf, 0x401010, &fde, &row), -ENOENT);
	sfu_sframe__free(sf);
}

/* The section is copied: the caller's buffer may go away after decoding. */
static void test_input_copied(void **state)
{
	const struct dec_case *c = &dec_cases[0];
	const struct sfu_fde *fde;
	const struct sfu_row *row;
	struct sfu_sframe *sf;
	struct built bt;
	uint8_t *copy;

	(void)state;
	build(&c->sec, c->addr, false, &bt);
	copy = malloc(bt.b.len);
	assert_non_null(copy);
	memcpy(copy, bt.b.data, bt.b.len);
	sf = sfu_sframe__new(copy, bt.b.len, c->addr, NULL);
	memset(copy, 0xff, bt.b.len);
	free(copy);
	assert_non_null(sf);
	assert_int_equal(sfu_sframe__find(sf, 0x401004, &fde, &row), 0);
	assert_row_equal(row, &c->rows[2]);
	sfu_sframe__free(sf);
	sfu_sframe__free(NULL);
}

static void test_abi_names(void **state)
{
	(void)state;
	for (unsigned abi = 1; abi <= 4; abi++)
		assert_non_null(sfu_sframe_abi_name(abi));
	assert_null(sfu_sframe_abi_name(0));
	assert_null(sfu_sframe_abi_name(5));
}

/* ---- corrupt sections ---- */

enum base { BASE_V1, BASE_V2, BASE_V3, BASE_NONE };

static const struct t_fre base_f0[] = {
	{ 0, FI(1, 1, 0, 0), { 8 } },
	{ 1, FI(1, 2, 0, 0), { 16, -16 } },
	{ 4, FI(0, 2, 0, 0), { 16, -16 } },
};
static const struct t_fde base_v12_fdes[] = {
	FDE(0x401000, 0x20, FDEI(ADDR1, 0, 0, 0), base_f0),
	FDE2(0x401100, 0x40, FDEI(ADDR1, 1, 0, 0), 0, 16, plt16),
};
static const struct t_fre base_flex[] = {
	{ 0, FI(0, 2, 0, 0), { CTRL(7, 0, 1), 8 } },
	{ 4, FI(0, 6, 0, 0), { CTRL(10, 1, 1), -8, CTRL(0, 1, 0), -8, CTRL(0, 1, 0), -16 } },
};
static const struct t_fde base_v3_fdes[] = {
	FDE2(0x401000, 0x20, FDEI(ADDR1, 0, 0, 0), 0, 0, base_f0),
	FDE2(0x401100, 0x40, FDEI(ADDR1, 1, 0, 0), 0, 16, plt16),
	FDE2(0x401200, 0x20, FDEI(ADDR1, 0, 0, 0), 1, 0, base_flex),
};
static const struct t_sec bases[] = {
	[BASE_V1] = SEC(1, F_SORTED, ABI_AMD64, 0, -8, base_v12_fdes),
	[BASE_V2] = SEC(2, F_SORTED | F_PCREL, ABI_AMD64, 0, -8, base_v12_fdes),
	[BASE_V3] = SEC(3, F_SORTED | F_PCREL, ABI_AMD64, 0, -8, base_v3_fdes),
};

struct bad_case {
	const char *name;
	enum base base;
	const struct t_sec *sec;	/* for BASE_NONE */
	void (*corrupt)(struct built *bt);
	int want_errno;
	size_t truncate_to;		/* if non-zero, decode only this many bytes */
};

/* Where the per-FDE fields live. */
static size_t fde_fre_off_at(const struct built *bt, unsigned version, size_t i)
{
	return bt->fde_at[i] + (version == 3 ? 12 : 8);
}

static unsigned version_of(const struct built *bt)
{
	return bt->b.data[2];
}

static void set_num_fres_fde(struct built *bt, size_t i, uint64_t n)
{
	if (version_of(bt) == 3)
		bb_set(&bt->b, bt->attr_at[i], n, 2);
	else
		bb_set(&bt->b, bt->fde_at[i] + 12, n, 4);
}

static size_t info_at(const struct built *bt, size_t i)
{
	return version_of(bt) == 3 ? bt->attr_at[i] + 2 : bt->fde_at[i] + 16;
}

static void c_magic(struct built *bt) { bb_set(&bt->b, 0, 0xdee3, 2); }
static void c_version0(struct built *bt) { bt->b.data[2] = 0; }
static void c_version4(struct built *bt) { bt->b.data[2] = 4; }
static void c_version255(struct built *bt) { bt->b.data[2] = 255; }
static void c_abi0(struct built *bt) { bt->b.data[4] = 0; }
static void c_abi5(struct built *bt) { bt->b.data[4] = 5; }
static void c_abi255(struct built *bt) { bt->b.data[4] = 255; }
static void c_flag4(struct built *bt) { bt->b.data[3] |= 0x4; }
static void c_flag8(struct built *bt) { bt->b.data[3] |= 0x8; }
static void c_flag80(struct built *bt) { bt->b.data[3] |= 0x80; }
static void c_flag2(struct built *bt) { bt->b.data[3] |= 0x2; }
static void c_fdeoff(struct built *bt) { bb_set(&bt->b, 20, 0x10000, 4); }
static void c_fdeoff_max(struct built *bt) { bb_set(&bt->b, 20, 0xffffffff, 4); }
static void c_freoff(struct built *bt) { bb_set(&bt->b, 24, 0x10000, 4); }
static void c_freoff_max(struct built *bt) { bb_set(&bt->b, 24, 0xffffffff, 4); }
static void c_fre_len(struct built *bt) { bb_set(&bt->b, 16, bt->fre_len + 1, 4); }
static void c_fre_len_max(struct built *bt) { bb_set(&bt->b, 16, 0xffffffff, 4); }
static void c_auxhdr(struct built *bt) { bt->b.data[7] = 0xff; }
static void c_num_fdes_max(struct built *bt) { bb_set(&bt->b, 8, 0xffffffff, 4); }
static void c_num_fres_max(struct built *bt) { bb_set(&bt->b, 12, 0xffffffff, 4); }
static void c_num_fres_short(struct built *bt) { bb_set(&bt->b, 12, bt->num_fres - 1, 4); }

static void c_fde_fre_off_past(struct built *bt)
{
	bb_set(&bt->b, fde_fre_off_at(bt, version_of(bt), 1), bt->fre_len + 1, 4);
}

static void c_fde_fre_off_max(struct built *bt)
{
	bb_set(&bt->b, fde_fre_off_at(bt, version_of(bt), 1), 0xffffffff, 4);
}

/* The last FDE's FREs start right at the end of the FRE sub-section. */
static void c_fde_fre_off_at_end(struct built *bt)
{
	size_t last = bb_get(&bt->b, 8, 4) - 1;

	bb_set(&bt->b, fde_fre_off_at(bt, version_of(bt), last), bt->fre_len, 4);
}

/* V3: the attribute record would straddle the end of the FRE sub-section. */
static void c_attr_past_end(struct built *bt)
{
	bb_set(&bt->b, fde_fre_off_at(bt, 3, 2), bt->fre_len - 4, 4);
}

static void c_fde_num_fres_max(struct built *bt)
{
	set_num_fres_fde(bt, 0, version_of(bt) == 3 ? 0xffff : 0xffffffff);
}

/* The last FDE claims one more FRE than there is; the header agrees. */
static void c_last_fde_extra_fre(struct built *bt)
{
	size_t last = bb_get(&bt->b, 8, 4) - 1;
	uint64_t n = version_of(bt) == 3 ? bb_get(&bt->b, bt->attr_at[last], 2) :
					   bb_get(&bt->b, bt->fde_at[last] + 12, 4);

	set_num_fres_fde(bt, last, n + 1);
	bb_set(&bt->b, 12, bt->num_fres + 1, 4);
}

static void c_fre_type3(struct built *bt) { bt->b.data[info_at(bt, 0)] |= 0x3; }
static void c_fre_type15(struct built *bt) { bt->b.data[info_at(bt, 0)] |= 0xf; }

static void c_size_code3(struct built *bt)
{
	bt->b.data[bt->fre_at[0][1] + 1] |= 0x60;
}

/* The last FRE's data words run past the end of the section. */
static void c_words_past_end(struct built *bt)
{
	size_t last = bb_get(&bt->b, 8, 4) - 1;

	bt->b.data[bt->fre_at[last][1] + 1] += 2 << 1;	/* two more data words */
}

static void c_pcmask_rep0(struct built *bt)
{
	if (version_of(bt) == 3)
		bt->b.data[bt->attr_at[1] + 4] = 0;
	else
		bt->b.data[bt->fde_at[1] + 17] = 0;
}

static void c_info2_2(struct built *bt) { bt->b.data[bt->attr_at[0] + 3] = 2; }
static void c_info2_1f(struct built *bt) { bt->b.data[bt->attr_at[0] + 3] = 0x1f; }

/* Swap the start fields of the first two FDEs (the sorted flag stays). */
static void c_swap_starts(struct built *bt)
{
	unsigned v = version_of(bt), sz = v == 3 ? 8 : 4;
	bool pcrel = v == 3 || (bt->b.data[3] & F_PCREL);
	int64_t a = (int64_t)bb_get(&bt->b, bt->fde_at[0], sz);
	int64_t b = (int64_t)bb_get(&bt->b, bt->fde_at[1], sz);

	if (sz == 4) {
		a = (int32_t)a;
		b = (int32_t)b;
	}
	if (pcrel) {
		a += bt->fde_at[0];
		b += bt->fde_at[1];
	}
	bb_set(&bt->b, bt->fde_at[0], b - (pcrel ? bt->fde_at[0] : 0), sz);
	bb_set(&bt->b, bt->fde_at[1], a - (pcrel ? bt->fde_at[1] : 0), sz);
}

/* s390x with a CFA word whose decoded offset (w * 8 + 160) does not fit in 32 bits. */
static const struct t_fre s390x_big_fres[] = {
	{ 0, FI(1, 1, 2, 0), { 0x10000000 } },
};
static const struct t_fde s390x_big_fdes[] = {
	FDE(0x1000000, 0x10, FDEI(ADDR1, 0, 0, 0), s390x_big_fres),
};
static const struct t_sec s390x_big = SEC(2, F_SORTED | F_PCREL, ABI_S390X, 0, 0,
					  s390x_big_fdes);
static const struct t_fre s390x_big_neg_fres[] = {
	{ 0, FI(1, 1, 2, 0), { INT32_MIN } },
};
static const struct t_fde s390x_big_neg_fdes[] = {
	FDE(0x1000000, 0x10, FDEI(ADDR1, 0, 0, 0), s390x_big_neg_fres),
};
static const struct t_sec s390x_big_neg = SEC(2, F_SORTED | F_PCREL, ABI_S390X, 0, 0,
					      s390x_big_neg_fdes);
static const struct t_fre s390x_flex_big_fres[] = {
	{ 0, FI(0, 2, 2, 0), { CTRL(15, 0, 1), 0x7fffffff } },
};
static const struct t_fde s390x_flex_big_fdes[] = {
	FDE2(0x1000000, 0x10, FDEI(ADDR1, 0, 0, 0), 1, 0, s390x_flex_big_fres),
};
static const struct t_sec s390x_flex_big = SEC(3, F_SORTED | F_PCREL, ABI_S390X, 0, 0,
					       s390x_flex_big_fdes);

/* Sections that are wrong in their FREs. */
#define ONE_FDE_SEC(nm, v, abi_, fra, i2, ...) \
	static const struct t_fre nm##_fres[] = { __VA_ARGS__ }; \
	static const struct t_fde nm##_fdes[] = { \
		FDE2(0x401000, 0x40, FDEI(ADDR1, 0, 0, 0), i2, 0, nm##_fres) }; \
	static const struct t_sec nm = SEC(v, (v) == 1 ? F_SORTED : F_SORTED | F_PCREL, abi_, 0, fra, \
					   nm##_fdes)

ONE_FDE_SEC(fre_equal, 2, ABI_AMD64, -8, 0,
	    { 0, FI(1, 1, 0, 0), { 8 } }, { 4, FI(1, 1, 0, 0), { 16 } },
	    { 4, FI(1, 1, 0, 0), { 8 } });
ONE_FDE_SEC(fre_decreasing, 1, ABI_AMD64, -8, 0,
	    { 0, FI(1, 1, 0, 0), { 8 } }, { 8, FI(1, 1, 0, 0), { 16 } },
	    { 4, FI(1, 1, 0, 0), { 8 } });
ONE_FDE_SEC(fre_decreasing_v3, 3, ABI_AMD64, -8, 0,
	    { 2, FI(1, 1, 0, 0), { 8 } }, { 1, FI(1, 1, 0, 0), { 16 } });
ONE_FDE_SEC(fre_past_size, 2, ABI_AMD64, -8, 0,
	    { 0, FI(1, 1, 0, 0), { 8 } }, { 0x41, FI(1, 1, 0, 0), { 16 } });
ONE_FDE_SEC(fre_past_size_v3, 3, ABI_AMD64, -8, 0,
	    { 0, FI(1, 1, 0, 0), { 8 } }, { 0xff, FI(1, 1, 0, 0), { 16 } });
ONE_FDE_SEC(words4_a64, 2, ABI_A64_LE, 0, 0,
	    { 0, FI(1, 4, 0, 0), { 16, -8, -16, 4 } });
ONE_FDE_SEC(words15_a64, 3, ABI_A64_LE, 0, 0,
	    { 0, FI(1, 15, 0, 0), { 16, -8, -16, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 } });
ONE_FDE_SEC(words3_amd64, 2, ABI_AMD64, -8, 0,
	    { 0, FI(1, 3, 0, 0), { 16, -16, -24 } });
ONE_FDE_SEC(words4_s390x, 2, ABI_S390X, 0, 0,
	    { 0, FI(1, 4, 0, 0), { 0, -48, -72, -80 } });
ONE_FDE_SEC(flex1, 3, ABI_AMD64, -8, 1,
	    { 0, FI(0, 1, 0, 0), { CTRL(7, 0, 1) } });
ONE_FDE_SEC(flex7, 3, ABI_AMD64, -8, 1,
	    { 0, FI(0, 7, 0, 0), { CTRL(7, 0, 1), 8, 2, -8, 2, -16, 0 } });
ONE_FDE_SEC(flex3_nopad, 3, ABI_AMD64, -8, 1,
	    { 0, FI(0, 3, 0, 0), { CTRL(7, 0, 1), 8, 2 } });
ONE_FDE_SEC(flex5_nopad, 3, ABI_AMD64, -8, 1,
	    { 0, FI(0, 5, 0, 0), { CTRL(7, 0, 1), 8, 2, -8, 2 } });
ONE_FDE_SEC(flex_cfa_no_reg, 3, ABI_AMD64, -8, 1,
	    { 0, FI(0, 2, 0, 0), { CTRL(0, 1, 0), 8 } });

static const struct t_fde unsorted_flag_fdes[] = {
	FDE(0x402000, 0x10, FDEI(ADDR1, 0, 0, 0), two_fres),
	FDE(0x401000, 0x20, FDEI(ADDR1, 0, 0, 0), one_fre_sp8),
};
static const struct t_sec unsorted_flag_v1 = SEC(1, F_SORTED, ABI_AMD64, 0, -8,
						 unsorted_flag_fdes);

#define BAD(nm, b, fn, e) { .name = nm, .base = (b), .corrupt = (fn), .want_errno = (e) }
#define BAD_SEC(nm, s, e) { .name = nm, .base = BASE_NONE, .sec = &(s), .want_errno = (e) }

static const struct bad_case bad_cases[] = {
	BAD("bad_magic", BASE_V2, c_magic, EBADMSG),
	BAD("version_0", BASE_V1, c_version0, ENOTSUP),
	BAD("version_4", BASE_V3, c_version4, ENOTSUP),
	BAD("version_255", BASE_V2, c_version255, ENOTSUP),
	BAD("abi_0", BASE_V1, c_abi0, ENOTSUP),
	BAD("abi_5", BASE_V2, c_abi5, ENOTSUP),
	BAD("abi_255", BASE_V3, c_abi255, ENOTSUP),
	BAD("v1_flag_pcrel", BASE_V1, c_flag4, EBADMSG),
	BAD("v1_flag_0x80", BASE_V1, c_flag80, EBADMSG),
	BAD("v2_flag_0x8", BASE_V2, c_flag8, EBADMSG),
	BAD("v2_flag_0x80", BASE_V2, c_flag80, EBADMSG),
	BAD("v3_flag_frame_pointer", BASE_V3, c_flag2, EBADMSG),
	BAD("v3_flag_0x8", BASE_V3, c_flag8, EBADMSG),
	BAD("v1_fdeoff_past_end", BASE_V1, c_fdeoff, EBADMSG),
	BAD("v2_fdeoff_max", BASE_V2, c_fdeoff_max, EBADMSG),
	BAD("v3_fdeoff_past_end", BASE_V3, c_fdeoff, EBADMSG),
	BAD("v1_freoff_past_end", BASE_V1, c_freoff, EBADMSG),
	BAD("v2_freoff_max", BASE_V2, c_freoff_max, EBADMSG),
	BAD("v3_freoff_past_end", BASE_V3, c_freoff, EBADMSG),
	BAD("v1_fre_len_past_end", BASE_V1, c_fre_len, EBADMSG),
	BAD("v3_fre_len_max", BASE_V3, c_fre_len_max, EBADMSG),
	BAD("v2_auxhdr_past_end", BASE_V2, c_auxhdr, EBADMSG),
	BAD("v1_fde_fre_off_past_end", BASE_V1, c_fde_fre_off_past, EBADMSG),
	BAD("v2_fde_fre_off_past_end", BASE_V2, c_fde_fre_off_past, EBADMSG),
	BAD("v3_fde_fre_off_past_end", BASE_V3, c_fde_fre_off_past, EBADMSG),
	BAD("v1_fde_fre_off_max", BASE_V1, c_fde_fre_off_max, EBADMSG),
	BAD("v3_fde_fre_off_max", BASE_V3, c_fde_fre_off_max, EBADMSG),
	BAD("v2_fde_fres_at_end", BASE_V2, c_fde_fre_off_at_end, EBADMSG),
	BAD("v3_attr_at_end", BASE_V3, c_fde_fre_off_at_end, EBADMSG),
	BAD("v3_attr_past_end", BASE_V3, c_attr_past_end, EBADMSG),
	BAD("v1_num_fdes_max", BASE_V1, c_num_fdes_max, EBADMSG),
	BAD("v3_num_fdes_max", BASE_V3, c_num_fdes_max, EBADMSG),
	BAD("v2_num_fres_max", BASE_V2, c_num_fres_max, EBADMSG),
	BAD("v3_num_fres_max", BASE_V3, c_num_fres_max, EBADMSG),
	BAD("v1_num_fres_below_sum", BASE_V1, c_num_fres_short, EBADMSG),
	BAD("v1_fde_num_fres_max", BASE_V1, c_fde_num_fres_max, EBADMSG),
	BAD("v2_fde_num_fres_max", BASE_V2, c_fde_num_fres_max, EBADMSG),
	BAD("v3_fde_num_fres_max", BASE_V3, c_fde_num_fres_max, EBADMSG),
	BAD("v1_last_fde_extra_fre", BASE_V1, c_last_fde_extra_fre, EBADMSG),
	BAD("v3_last_fde_extra_fre", BASE_V3, c_last_fde_extra_fre, EBADMSG),
	BAD("v1_fre_type_3", BASE_V1, c_fre_type3, EBADMSG),
	BAD("v2_fre_type_15", BASE_V2, c_fre_type15, EBADMSG),
	BAD("v3_fre_type_3", BASE_V3, c_fre_type3, EBADMSG),
	BAD("v1_offset_size_code_3", BASE_V1, c_size_code3, EBADMSG),
	BAD("v2_offset_size_code_3", BASE_V2, c_size_code3, EBADMSG),
	BAD("v3_offset_size_code_3", BASE_V3, c_size_code3, EBADMSG),
	BAD("v1_words_past_end", BASE_V1, c_words_past_end, EBADMSG),
	BAD("v3_words_past_end", BASE_V3, c_words_past_end, EBADMSG),
	BAD("v2_pcmask_rep_size_0", BASE_V2, c_pcmask_rep0, EBADMSG),
	BAD("v3_pcmask_rep_size_0", BASE_V3, c_pcmask_rep0, EBADMSG),
	BAD("v3_info2_2", BASE_V3, c_info2_2, EBADMSG),
	BAD("v3_info2_0x1f", BASE_V3, c_info2_1f, EBADMSG),
	BAD("v1_unsorted_with_flag", BASE_V1, c_swap_starts, EBADMSG),
	BAD("v2_unsorted_with_flag", BASE_V2, c_swap_starts, EBADMSG),
	BAD("v3_unsorted_with_flag", BASE_V3, c_swap_starts, EBADMSG),
	BAD_SEC("v1_unsorted_with_flag_built", unsorted_flag_v1, EBADMSG),
	BAD_SEC("fre_start_equal", fre_equal, EBADMSG),
	BAD_SEC("fre_start_decreasing", fre_decreasing, EBADMSG),
	BAD_SEC("v3_fre_start_decreasing", fre_decreasing_v3, EBADMSG),
	BAD_SEC("fre_start_past_size", fre_past_size, EBADMSG),
	BAD_SEC("v3_fre_start_past_size", fre_past_size_v3, EBADMSG),
	BAD_SEC("aarch64_4_words", words4_a64, EBADMSG),
	BAD_SEC("aarch64_15_words", words15_a64, EBADMSG),
	BAD_SEC("amd64_3_words", words3_amd64, EBADMSG),
	BAD_SEC("s390x_4_words", words4_s390x, EBADMSG),
	BAD_SEC("flex_1_word", flex1, EBADMSG),
	BAD_SEC("flex_7_words", flex7, EBADMSG),
	BAD_SEC("flex_3_words_no_padding", flex3_nopad, EBADMSG),
	BAD_SEC("flex_5_words_no_padding", flex5_nopad, EBADMSG),
	BAD_SEC("flex_cfa_without_register", flex_cfa_no_reg, EBADMSG),
	BAD_SEC("s390x_cfa_offset_overflow", s390x_big, EBADMSG),
	BAD_SEC("s390x_cfa_offset_underflow", s390x_big_neg, EBADMSG),
	BAD_SEC("s390x_flex_cfa_offset_overflow", s390x_flex_big, EBADMSG),
	{ .name = "header_truncated", .base = BASE_V2, .want_errno = EBADMSG, .truncate_to = 27 },
	{ .name = "magic_only", .base = BASE_V2, .want_errno = EBADMSG, .truncate_to = 2 },
	{ .name = "one_byte", .base = BASE_V2, .want_errno = EBADMSG, .truncate_to = 1 },
};

static void test_bad_case(void **state)
{
	const struct bad_case *c = *state;
	const struct t_sec *s = c->base == BASE_NONE ? c->sec : &bases[c->base];

	for (int be = 0; be <= 1; be++) {
		struct built bt;

		build(s, 0x400000, be, &bt);
		if (c->corrupt)
			c->corrupt(&bt);
		assert_sframe_rejects(bt.b.data, c->truncate_to ? c->truncate_to : bt.b.len,
				      c->want_errno);
	}
}

static void test_null_and_empty(void **state)
{
	struct sfu_diag diag = { 0 };

	(void)state;
	errno = 0;
	assert_null(sfu_sframe__new(NULL, 10, 0, &diag));
	assert_int_equal(errno, EINVAL);
	assert_sframe_rejects("", 0, EBADMSG);
}

/* ---- truncation, bit flips and random damage ---- */

/* Touch everything a decoded section offers; ASan catches stray pointers. */
static void walk(const struct sfu_sframe *sf)
{
	size_t nf = sfu_sframe__fde_count(sf);

	for (size_t i = 0; i < nf; i++) {
		const struct sfu_fde *fde = sfu_sframe__fde(sf, i);
		uint64_t probe[] = { fde->start, fde->start + 1, fde->start + fde->size / 2,
				     fde->start + fde->size - 1, fde->start + fde->size,
				     fde->start - 1 };

		assert_non_null(fde);
		assert_true(fde->fre_type <= ADDR4);
		assert_true(fde->fde_type != SFU_FDE_PCMASK || fde->rep_size);
		for (size_t k = 0; k < fde->num_fres; k++) {
			const struct sfu_row *row = sfu_sframe__row(sf, fde->first_row + k);

			assert_non_null(row);
			assert_true(row->offset_size == 1 || row->offset_size == 2 ||
				    row->offset_size == 4);
			if (k)
				assert_true(row->start > row[-1].start);
		}
		for (size_t p = 0; p < N(probe); p++) {
			const struct sfu_fde *f = NULL, *lf = NULL;
			const struct sfu_row *row = NULL;
			struct sfu_row lrow;
			int err = sfu_sframe__find(sf, probe[p], &f, &row);

			/* the row decoded alone is the one every row was decoded into */
			assert_int_equal(sfu_sframe__lookup(sf, probe[p], &lf, &lrow), err);
			if (err) {
				assert_int_equal(err, -ENOENT);
				continue;
			}
			assert_ptr_equal(lf, f);
			assert_memory_equal(&lrow, row, sizeof(lrow));
			assert_true(probe[p] - f->start < f->size);
			assert_true(row >= sfu_sframe__row(sf, f->first_row));
			assert_true(row <= sfu_sframe__row(sf, f->first_row + f->num_fres - 1));
		}
	}
}

static void expect_clean_failure(int err, const struct sfu_diag *diag, const char *what,
				 size_t at)
{
	if (err != EBADMSG && err != ENOTSUP)
		fail_msg("%s %zu: errno %d", what, at, err);
	if (!diag->reason[0])
		fail_msg("%s %zu: no reason", what, at);
	if (diag->err != -err)
		fail_msg("%s %zu: diag.err %d, errno %d", what, at, diag->err, err);
}

static void test_truncation(void **state)
{
	(void)state;
	for (size_t ci = 0; ci < N(dec_cases); ci++) {
		const struct dec_case *c = &dec_cases[ci];

		for (int be = 0; be <= 1; be++) {
			struct built bt;

			build(&c->sec, c->addr, be, &bt);
			/* trailing bytes no header field points at */
			for (int k = 0; k < 5; k++)
				bb_u8(&bt.b, 0);
			for (size_t len = 0; len <= bt.b.len; len++) {
				struct sfu_diag diag = { 0 };
				struct sfu_sframe *sf = sframe_new_exact(bt.b.data, len, c->addr,
									 &diag);

				if (len < bt.used) {
					if (sf)
						fail_msg("%s: truncated to %zu of %zu bytes: decoded",
							 c->name, len, bt.used);
					expect_clean_failure(errno, &diag, c->name, len);
					continue;
				}
				if (!sf)
					fail_msg("%s: %zu bytes (%zu used): %s", c->name, len, bt.used,
						 diag.reason);
				assert_int_equal(sfu_sframe__fde_count(sf), c->sec.nfdes);
				walk(sf);
				sfu_sframe__free(sf);
			}
		}
	}
}

static void flip_all_bits(const struct t_sec *s, uint64_t addr, bool be)
{
	struct built bt;

	build(s, addr, be, &bt);
	for (size_t bit = 0; bit < bt.b.len * 8; bit++) {
		struct sfu_diag diag = { 0 };
		struct sfu_sframe *sf;

		bt.b.data[bit / 8] ^= 1u << (bit % 8);
		sf = sframe_new_exact(bt.b.data, bt.b.len, addr, &diag);
		if (sf) {
			walk(sf);
			sfu_sframe__free(sf);
		} else {
			expect_clean_failure(errno, &diag, "bit", bit);
		}
		bt.b.data[bit / 8] ^= 1u << (bit % 8);
	}
}

static void test_bit_flips(void **state)
{
	(void)state;
	for (int be = 0; be <= 1; be++) {
		flip_all_bits(&bases[BASE_V1], 0x400000, be);
		flip_all_bits(&bases[BASE_V2], 0x400000, be);
		flip_all_bits(&bases[BASE_V3], 0x400000, be);
		flip_all_bits(&dec_cases[4].sec, 0x400000, be);	/* v2 aarch64 */
		flip_all_bits(&dec_cases[8].sec, 0xff0000, be);	/* v3 s390x */
	}
}

/* Random multi-byte damage of every decoding case, deterministic. */
static void test_random_damage(void **state)
{
	struct test_rng rng;

	(void)state;
	rng_seed(&rng, 0x5f3a11ce);
	for (size_t ci = 0; ci < N(dec_cases); ci++) {
		const struct dec_case *c = &dec_cases[ci];

		for (int iter = 0; iter < 400; iter++) {
			struct sfu_diag diag = { 0 };
			struct sfu_sframe *sf;
			struct built bt;
			int hits = (int)rng_range(&rng, 1, 6);

			build(&c->sec, c->addr, iter & 1, &bt);
			while (hits--) {
				size_t at = (size_t)rng_range(&rng, 0, (int64_t)bt.b.len - 1);

				bt.b.data[at] = (uint8_t)rng_next(&rng);
			}
			sf = sframe_new_exact(bt.b.data, bt.b.len, c->addr, &diag);
			if (sf) {
				walk(sf);
				sfu_sframe__free(sf);
			} else {
				expect_clean_failure(errno, &diag, c->name, (size_t)iter);
			}
		}
	}
}

int main(void)
{
	struct CMUnitTest tests[N(dec_cases) + N(bad_cases) + 16];
	size_t n = 0;

	for (size_t i = 0; i < N(dec_cases); i++)
		tests[n++] = (struct CMUnitTest){ dec_cases[i].name, test_decode_case, NULL, NULL,
						  (void *)&dec_cases[i] };
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_literal_v1);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_literal_v1_after_text);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_literal_v2_be);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_literal_v3);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_fre_start_at_size);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_input_copied);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_abi_names);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_null_and_empty);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_truncation);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_bit_flips);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_random_damage);
	for (size_t i = 0; i < N(bad_cases); i++)
		tests[n++] = (struct CMUnitTest){ bad_cases[i].name, test_bad_case, NULL, NULL,
						  (void *)&bad_cases[i] };
	return _cmocka_run_group_tests("sframe", tests, n, NULL, NULL);
}
