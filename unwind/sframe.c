/* SPDX-License-Identifier: BSD-2-Clause */
/* SFrame decoder: validates a whole section of any version once, then answers lookups. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sframe_internal.h"

/* Sorted lookup key: everything a pc search touches, 16 bytes. */
struct fde_key {
	uint64_t start;
	uint32_t size;
	uint32_t idx;
};

static uint64_t sframe_last_id;

/*
 * The section's bytes are kept and rows are decoded from them at each
 * lookup: decoded rows take 32 bytes where the section spends 3 to 6, and a
 * process mapping a compiler holds tens of MiB of them. Rows are made all at
 * once only for the callers that ask for them by pointer (dumps, tests).
 */
struct sfu_sframe {
	struct sfu_sframe_header hdr;
	uint8_t *bytes;			/* the section, owned */
	size_t size;
	bool swap;
	uint64_t fres_at, fres_end;	/* the FRE sub-section */
	struct sfu_fde *fdes;		/* section order */
	struct fde_key *keys;		/* sorted by start; NULL when fdes already are */
	size_t num_fdes;
	size_t num_rows;
	uint64_t id;
	pthread_mutex_t rows_lock;
	struct sfu_row *rows;		/* fdes[i].first_row .. + num_fres, once asked for (atomic) */
};

/* Bounds-checked reader over the section bytes. */
struct reader {
	const uint8_t *buf;
	size_t size;
	bool swap;
};

static const struct sframe_abi_regs abi_regs[] = {
	[SFU_SFRAME_ABI_AARCH64_BE] = { .sp = 31, .fp = 29, .ra = 30 },
	[SFU_SFRAME_ABI_AARCH64_LE] = { .sp = 31, .fp = 29, .ra = 30 },
	[SFU_SFRAME_ABI_AMD64_LE] = { .sp = 7, .fp = 6, .ra = 16 },
	[SFU_SFRAME_ABI_S390X_BE] = { .sp = 15, .fp = 11, .ra = 14 },
};

const struct sframe_abi_regs *sframe_abi_regs(uint8_t abi)
{
	if (abi < SFU_SFRAME_ABI_AARCH64_BE || abi > SFU_SFRAME_ABI_S390X_BE)
		return NULL;
	return &abi_regs[abi];
}

void sframe_loc_set_reg(struct sfu_loc *loc, uint8_t abi, uint16_t dwarf_reg)
{
	const struct sframe_abi_regs *r = sframe_abi_regs(abi);

	loc->dwarf_reg = 0;
	if (r && dwarf_reg == r->sp)
		loc->reg = SFU_REG_SP;
	else if (r && dwarf_reg == r->fp)
		loc->reg = SFU_REG_FP;
	else if (r && dwarf_reg == r->ra)
		loc->reg = SFU_REG_RA;
	else {
		loc->reg = SFU_REG_OTHER;
		loc->dwarf_reg = dwarf_reg;
	}
}

uint16_t sframe_loc_dwarf_reg(const struct sfu_loc *loc, uint8_t abi)
{
	const struct sframe_abi_regs *r = sframe_abi_regs(abi);

	switch (loc->reg) {
	case SFU_REG_SP: return r ? r->sp : 0;
	case SFU_REG_FP: return r ? r->fp : 0;
	case SFU_REG_RA: return r ? r->ra : 0;
	default: return loc->dwarf_reg;
	}
}

static inline bool fits(const struct reader *r, uint64_t off, uint64_t len)
{
	return off <= r->size && len <= r->size - off;
}

static inline uint16_t rd16(const struct reader *r, uint64_t off)
{
	uint16_t v;

	memcpy(&v, r->buf + off, sizeof(v));
	return r->swap ? __builtin_bswap16(v) : v;
}

static inline uint32_t rd32(const struct reader *r, uint64_t off)
{
	uint32_t v;

	memcpy(&v, r->buf + off, sizeof(v));
	return r->swap ? __builtin_bswap32(v) : v;
}

static inline uint64_t rd64(const struct reader *r, uint64_t off)
{
	uint64_t v;

	memcpy(&v, r->buf + off, sizeof(v));
	return r->swap ? __builtin_bswap64(v) : v;
}

/* A signed word of 1, 2 or 4 bytes. */
static inline int32_t rd_word(const struct reader *r, uint64_t off, unsigned size)
{
	switch (size) {
	case 1: return (int8_t)r->buf[off];
	case 2: return (int16_t)rd16(r, off);
	default: return (int32_t)rd32(r, off);
	}
}

static inline uint32_t rd_uword(const struct reader *r, uint64_t off, unsigned size)
{
	switch (size) {
	case 1: return r->buf[off];
	case 2: return rd16(r, off);
	default: return rd32(r, off);
	}
}

static int parse_header(const struct reader *r, struct sfu_sframe_header *h, struct sfu_diag *diag)
{
	static const uint8_t valid_flags[] = { 0, SFRAME_V1_FLAGS, SFRAME_V2_FLAGS, SFRAME_V3_FLAGS };

	if (r->size < SFRAME_HDR_SIZE) {
		diag_set(diag, -EBADMSG, "section of %zu bytes is shorter than the %d-byte header",
			    r->size, SFRAME_HDR_SIZE);
		return -EBADMSG;
	}
	h->version = r->buf[2];
	h->flags = r->buf[3];
	h->abi = r->buf[4];
	h->cfa_fixed_fp_offset = (int8_t)r->buf[5];
	h->cfa_fixed_ra_offset = (int8_t)r->buf[6];
	h->auxhdr_len = r->buf[7];
	h->num_fdes = rd32(r, 8);
	h->num_fres = rd32(r, 12);
	h->fre_len = rd32(r, 16);
	h->fdeoff = rd32(r, 20);
	h->freoff = rd32(r, 24);
	h->big_endian = r->buf[0] == 0xde;

	if (h->version < 1 || h->version > 3) {
		diag_set(diag, -ENOTSUP, "unsupported SFrame version %u", h->version);
		return -ENOTSUP;
	}
	if (!sframe_abi_regs(h->abi)) {
		diag_set(diag, -ENOTSUP, "unknown SFrame ABI %u", h->abi);
		return -ENOTSUP;
	}
	if (h->flags & ~valid_flags[h->version]) {
		diag_set(diag, -EBADMSG, "flags %#x not defined for version %u", h->flags,
			    h->version);
		return -EBADMSG;
	}
	return 0;
}

/* The CFA offset a data word stands for: s390x stores (offset - 160) / 8. */
static int cfa_offset(const struct sfu_sframe_header *h, int32_t w, int32_t *off)
{
	int64_t v = w;

	if (h->abi == SFU_SFRAME_ABI_S390X_BE)
		v = v * SFRAME_S390X_CFA_ALIGN + SFRAME_S390X_CFA_ADJ;
	if (v < INT32_MIN || v > INT32_MAX)
		return -1;
	*off = (int32_t)v;
	return 0;
}

/*
 * Turn the data words of one FRE of a default FDE into a row. Returns 0 or
 * a static reason.
 */
static const char *decode_default(const struct sfu_sframe_header *h, const int32_t *w,
				  unsigned n, uint8_t info, struct sfu_row *row)
{
	bool s390x = h->abi == SFU_SFRAME_ABI_S390X_BE;
	unsigned i = 1;

	row->fp.kind = SFU_LOC_SAME;
	row->fp.reg = SFU_REG_FP;
	if (n == 0) {
		/* no data words: the return address is undefined, the outermost frame */
		row->cfa.kind = SFU_LOC_UNDEFINED;
		row->ra.kind = SFU_LOC_UNDEFINED;
		return NULL;
	}
	if (n > 3)
		return "more than 3 data words in a default FRE";

	row->cfa.kind = SFU_LOC_REG_OFFSET;
	row->cfa.reg = SFRAME_FRE_BASE_SP(info) ? SFU_REG_SP : SFU_REG_FP;
	if (cfa_offset(h, w[0], &row->cfa.offset))
		return "s390x CFA offset out of range";

	if (h->cfa_fixed_ra_offset) {
		row->ra.kind = SFU_LOC_AT_CFA;
		row->ra.offset = h->cfa_fixed_ra_offset;
	} else if (i < n) {
		int32_t v = w[i++];

		if (s390x && v == 0) {
			/* padding: RA not saved, still in its register */
			row->ra.kind = SFU_LOC_IN_REG;
			row->ra.reg = SFU_REG_RA;
		} else if (s390x && h->version == 2 && (v & 1)) {
			row->ra.kind = SFU_LOC_IN_REG;
			sframe_loc_set_reg(&row->ra, h->abi, (uint32_t)v >> 1);
		} else {
			row->ra.kind = SFU_LOC_AT_CFA;
			row->ra.offset = v;
		}
	} else {
		/* RA untracked: still in the link register (AArch64 leaf) */
		row->ra.kind = SFU_LOC_IN_REG;
		row->ra.reg = SFU_REG_RA;
	}

	if (h->cfa_fixed_fp_offset) {
		row->fp.kind = SFU_LOC_AT_CFA;
		row->fp.offset = h->cfa_fixed_fp_offset;
	} else if (i < n) {
		int32_t v = w[i++];

		if (s390x && h->version == 2 && (v & 1)) {
			row->fp.kind = SFU_LOC_IN_REG;
			sframe_loc_set_reg(&row->fp, h->abi, (uint32_t)v >> 1);
		} else {
			row->fp.kind = SFU_LOC_AT_CFA;
			row->fp.offset = v;
		}
	}
	if (i != n)
		return "data words left over after CFA, RA and FP";
	return NULL;
}

/* One flexible rule: control word @c and offset @off. */
static void flex_rule(uint8_t abi, uint32_t c, int32_t off, struct sfu_loc *loc, bool *usable)
{
	if (SFRAME_FLEX_REG_P(c)) {
		sframe_loc_set_reg(loc, abi, SFRAME_FLEX_REGNUM(c));
		loc->kind = SFRAME_FLEX_DEREF(c) ? SFU_LOC_DEREF : SFU_LOC_IN_REG;
		loc->offset = off;
		/* "value of a register plus a non-zero offset" has no sfu_loc form */
		if (loc->kind == SFU_LOC_IN_REG && off != 0)
			*usable = false;
	} else if (SFRAME_FLEX_DEREF(c)) {
		loc->kind = SFU_LOC_AT_CFA;
		loc->offset = off;
	} else if (c == 0 && off == 0) {
		loc->kind = SFU_LOC_SAME;
	} else {
		/* CFA + offset as a value (DW_CFA_val_offset): not expressible */
		loc->kind = SFU_LOC_UNDEFINED;
		*usable = false;
	}
}

/* An RA with no rule in the FRE: at the header's fixed offset, or still in its register. */
static void untracked_ra(const struct sfu_sframe_header *h, struct sfu_row *row)
{
	if (h->cfa_fixed_ra_offset) {
		row->ra.kind = SFU_LOC_AT_CFA;
		row->ra.offset = h->cfa_fixed_ra_offset;
	} else {
		row->ra.kind = SFU_LOC_IN_REG;
		row->ra.reg = SFU_REG_RA;
	}
}

static const char *decode_flex(const struct sfu_sframe_header *h, const struct reader *r,
			       uint64_t off, unsigned n, unsigned size, struct sfu_row *row)
{
	bool usable = true;
	unsigned i = 2;
	uint32_t c;

	row->flags |= SFU_ROW_FLEX;
	row->fp.kind = SFU_LOC_SAME;
	row->fp.reg = SFU_REG_FP;
	if (n == 0) {
		row->cfa.kind = SFU_LOC_UNDEFINED;
		row->ra.kind = SFU_LOC_UNDEFINED;
		return NULL;
	}
	if (n < 2 || n > 6)
		return "flexible FRE with a data word count other than 0 or 2 to 6";

	c = rd_uword(r, off, size);
	if (!SFRAME_FLEX_REG_P(c))
		return "flexible FRE whose CFA rule names no register";
	sframe_loc_set_reg(&row->cfa, h->abi, SFRAME_FLEX_REGNUM(c));
	row->cfa.kind = SFRAME_FLEX_DEREF(c) ? SFU_LOC_DEREF : SFU_LOC_REG_OFFSET;
	if (cfa_offset(h, rd_word(r, off + size, size), &row->cfa.offset))
		return "s390x CFA offset out of range";

	if (n == 5 && rd_uword(r, off + i * size, size) == 0) {
		i++;	/* padding: RA has no rule of its own, FP follows */
		untracked_ra(h, row);
	} else if (i + 1 < n) {
		flex_rule(h->abi, rd_uword(r, off + i * size, size),
			  rd_word(r, off + (i + 1) * size, size), &row->ra, &usable);
		i += 2;
	} else {
		untracked_ra(h, row);
	}
	if (i + 1 < n) {
		flex_rule(h->abi, rd_uword(r, off + i * size, size),
			  rd_word(r, off + (i + 1) * size, size), &row->fp, &usable);
		i += 2;
	} else if (h->cfa_fixed_fp_offset) {
		row->fp.kind = SFU_LOC_AT_CFA;
		row->fp.offset = h->cfa_fixed_fp_offset;
	}
	if (i != n)
		return "data words left over in a flexible FRE";
	if (!usable)
		row->flags |= SFU_ROW_UNUSABLE;
	return NULL;
}

/*
 * Decode the FRE of @fde at section offset *@off (before @end, the end of
 * the FRE sub-section) into @row and move *@off past it. @return NULL, or
 * why the FRE is not one.
 */
static const char *decode_fre(const struct sfu_sframe_header *h, const struct reader *r,
			      const struct sfu_fde *fde, uint64_t *off, uint64_t end,
			      struct sfu_row *row)
{
	static const unsigned addr_size[] = { 1, 2, 4 };
	unsigned asz = addr_size[fde->fre_type];
	struct reader sub = { r->buf, end, r->swap };
	int32_t w[3] = { 0, 0, 0 };
	unsigned n, size_code, size;
	uint64_t at = *off;
	const char *why;
	uint8_t info;

	if (!fits(&sub, at, asz + 1))
		return "past the end of the FRE sub-section";
	memset(row, 0, sizeof(*row));
	row->start = rd_uword(&sub, at, asz);
	info = sub.buf[at + asz];
	at += asz + 1;
	n = SFRAME_FRE_COUNT(info);
	size_code = SFRAME_FRE_SIZE(info);
	if (size_code > 2)
		return "invalid offset size code 3";
	size = 1u << size_code;
	if (!fits(&sub, at, (uint64_t)n * size))
		return "data words past the end of the FRE sub-section";
	row->info = info;
	row->offset_size = size;
	row->offset_count = n;
	if (SFRAME_FRE_MANGLED(info))
		row->flags |= SFU_ROW_MANGLED_RA;
	/* the unwinder sees rows, not FDEs: each row of a trampoline says so */
	if (fde->signal_frame)
		row->flags |= SFU_ROW_SIGNAL_FRAME;

	if (fde->flex) {
		why = decode_flex(h, &sub, at, n, size, row);
	} else {
		for (unsigned j = 0; j < n && j < 3; j++)
			w[j] = rd_word(&sub, at + j * size, size);
		why = decode_default(h, w, n, info, row);
	}
	if (why)
		return why;
	*off = at + (uint64_t)n * size;
	return NULL;
}

/* The section offset of @fde's first FRE. */
static uint64_t first_fre(const struct sfu_sframe *sf, const struct sfu_fde *fde)
{
	return sf->fres_at + fde->fre_off + (sf->hdr.version == 3 ? SFRAME_V3_ATTR_SIZE : 0);
}

/*
 * Decode the FREs of FDE @fde_idx into @rows, checking that they follow each
 * other as the format says.
 */
static int decode_fres(const struct sfu_sframe *sf, const struct reader *r, size_t fde_idx,
		       const struct sfu_fde *fde, struct sfu_row *rows, struct sfu_diag *diag)
{
	uint64_t off = first_fre(sf, fde);

	for (uint32_t k = 0; k < fde->num_fres; k++) {
		struct sfu_row *row = &rows[k];
		const char *why = decode_fre(&sf->hdr, r, fde, &off, sf->fres_end, row);

		if (why) {
			diag_set(diag, -EBADMSG, "FDE %zu: FRE %u: %s", fde_idx, k, why);
			return -EBADMSG;
		}
		if (k > 0 && row->start <= rows[k - 1].start) {
			diag_set(diag, -EBADMSG, "FDE %zu: FRE %u start %#x does not increase",
				    fde_idx, k, row->start);
			return -EBADMSG;
		}
		if (fde->fde_type == SFU_FDE_PCINC && row->start > fde->size) {
			diag_set(diag, -EBADMSG, "FDE %zu: FRE %u start %#x past the function size %#x",
				    fde_idx, k, row->start, fde->size);
			return -EBADMSG;
		}
	}
	return 0;
}

/* Read FDE @i's fixed part. Returns 0 or -EBADMSG. */
static int read_fde(struct sfu_sframe *sf, const struct reader *r, uint64_t fdes_at,
		    uint64_t fres_at, uint64_t addr, size_t i, struct sfu_diag *diag)
{
	const struct sfu_sframe_header *h = &sf->hdr;
	struct sfu_fde *fde = &sf->fdes[i];
	uint64_t at, field;
	int64_t start;

	memset(fde, 0, sizeof(*fde));
	if (h->version == 3) {
		at = fdes_at + i * SFRAME_V3_FDE_SIZE;
		start = (int64_t)rd64(r, at);
		fde->size = rd32(r, at + 8);
		fde->fre_off = rd32(r, at + 12);
		if (!fits(r, fres_at + fde->fre_off, SFRAME_V3_ATTR_SIZE) ||
		    fde->fre_off + (uint64_t)SFRAME_V3_ATTR_SIZE > h->fre_len) {
			diag_set(diag, -EBADMSG, "FDE %zu: attributes at FRE offset %#x past the end of the FRE sub-section",
				    i, fde->fre_off);
			return -EBADMSG;
		}
		fde->num_fres = rd16(r, fres_at + fde->fre_off);
		fde->info = r->buf[fres_at + fde->fre_off + 2];
		fde->info2 = r->buf[fres_at + fde->fre_off + 3];
		fde->rep_size = r->buf[fres_at + fde->fre_off + 4];
		fde->signal_frame = SFU_FDE_INFO_SIGNAL_FRAME(fde->info);
		fde->flex = SFRAME_V3_FDE_TYPE(fde->info2) == SFRAME_V3_FDE_FLEX;
		if (SFRAME_V3_FDE_TYPE(fde->info2) > SFRAME_V3_FDE_FLEX) {
			diag_set(diag, -EBADMSG, "FDE %zu: unknown FDE type %u", i,
				    SFRAME_V3_FDE_TYPE(fde->info2));
			return -EBADMSG;
		}
	} else {
		unsigned fde_size = h->version == 1 ? SFRAME_V1_FDE_SIZE : SFRAME_V2_FDE_SIZE;

		at = fdes_at + i * fde_size;
		start = (int32_t)rd32(r, at);
		fde->size = rd32(r, at + 4);
		fde->fre_off = rd32(r, at + 8);
		fde->num_fres = rd32(r, at + 12);
		fde->info = r->buf[at + 16];
		fde->rep_size = h->version == 2 ? r->buf[at + 17] : 0;
	}
	fde->fre_type = SFU_FDE_INFO_FRE_TYPE(fde->info);
	fde->fde_type = SFU_FDE_INFO_FDE_TYPE(fde->info);
	fde->pauth_key = SFU_FDE_INFO_PAUTH_KEY(fde->info);
	if (fde->fre_type > SFU_FRE_ADDR4) {
		diag_set(diag, -EBADMSG, "FDE %zu: invalid FRE type %u", i, fde->fre_type);
		return -EBADMSG;
	}
	if (fde->fde_type == SFU_FDE_PCMASK) {
		if (h->version == 1)
			fde->rep_size = SFRAME_V1_PLT_REP_SIZE;
		if (!fde->rep_size) {
			diag_set(diag, -EBADMSG, "FDE %zu: PCMASK with a repeat size of 0", i);
			return -EBADMSG;
		}
	}
	/* Start is relative to the section, or (PCREL, always in V3) to the field itself. */
	field = (h->version == 3 || (h->flags & SFU_SFRAME_F_FDE_FUNC_START_PCREL)) ? at : 0;
	fde->start = addr + field + (uint64_t)start;
	return 0;
}

static int key_cmp(const void *a, const void *b)
{
	const struct fde_key *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int decode(struct sfu_sframe *sf, const struct reader *r, uint64_t addr,
		  struct sfu_diag *diag)
{
	const struct sfu_sframe_header *h = &sf->hdr;
	uint64_t hdr_end = SFRAME_HDR_SIZE + (uint64_t)h->auxhdr_len;
	uint64_t fdes_at = hdr_end + h->fdeoff, fres_at = hdr_end + h->freoff;
	unsigned fde_size = h->version == 1 ? SFRAME_V1_FDE_SIZE :
			    h->version == 2 ? SFRAME_V2_FDE_SIZE : SFRAME_V3_FDE_SIZE;
	uint64_t total_rows = 0;
	struct sfu_row *scratch = NULL;
	uint32_t max_fres = 0;
	bool sorted = true;
	int err;

	if (!fits(r, fdes_at, (uint64_t)h->num_fdes * fde_size)) {
		diag_set(diag, -EBADMSG, "%u FDEs at offset %#llx do not fit in %zu bytes",
			    h->num_fdes, (unsigned long long)fdes_at, r->size);
		return -EBADMSG;
	}
	if (!fits(r, fres_at, h->fre_len)) {
		diag_set(diag, -EBADMSG, "FRE sub-section (%u bytes at %#llx) runs past the end of %zu bytes",
			    h->fre_len, (unsigned long long)fres_at, r->size);
		return -EBADMSG;
	}
	/* Every FRE takes at least 2 bytes: a count larger than that is a lie. */
	if ((uint64_t)h->num_fres * 2 > h->fre_len) {
		diag_set(diag, -EBADMSG, "%u FREs cannot fit in an FRE sub-section of %u bytes",
			    h->num_fres, h->fre_len);
		return -EBADMSG;
	}

	sf->num_fdes = h->num_fdes;
	sf->fres_at = fres_at;
	sf->fres_end = fres_at + h->fre_len;
	sf->fdes = calloc(h->num_fdes ? h->num_fdes : 1, sizeof(*sf->fdes));
	sf->keys = calloc(h->num_fdes ? h->num_fdes : 1, sizeof(*sf->keys));
	if (!sf->fdes || !sf->keys)
		return -ENOMEM;

	for (size_t i = 0; i < h->num_fdes; i++) {
		err = read_fde(sf, r, fdes_at, fres_at, addr, i, diag);
		if (err)
			return err;
		if (sf->fdes[i].num_fres > max_fres)
			max_fres = sf->fdes[i].num_fres;
		total_rows += sf->fdes[i].num_fres;
		if (total_rows > h->num_fres) {
			diag_set(diag, -EBADMSG, "FDE %zu: FRE counts add up to more than the header's %u",
				    i, h->num_fres);
			return -EBADMSG;
		}
	}
	sf->num_rows = total_rows;
	/* every row is checked once here, in a scratch array, and not kept */
	scratch = calloc(max_fres ? max_fres : 1, sizeof(*scratch));
	if (!scratch)
		return -ENOMEM;

	total_rows = 0;
	for (size_t i = 0; i < h->num_fdes; i++) {
		struct sfu_fde *fde = &sf->fdes[i];

		if (fde->fre_off > h->fre_len) {
			diag_set(diag, -EBADMSG, "FDE %zu: FRE offset %#x past the end of the FRE sub-section",
				    i, fde->fre_off);
			err = -EBADMSG;
			goto out;
		}
		fde->first_row = total_rows;
		err = decode_fres(sf, r, i, fde, scratch, diag);
		if (err)
			goto out;
		total_rows += fde->num_fres;

		sf->keys[i] = (struct fde_key){ fde->start, fde->size, (uint32_t)i };
		if (i > 0 && sf->keys[i].start < sf->keys[i - 1].start)
			sorted = false;
	}
	if (!sorted) {
		if (h->flags & SFU_SFRAME_F_FDE_SORTED) {
			diag_set(diag, -EBADMSG, "FDEs are not sorted though the section says so");
			err = -EBADMSG;
			goto out;
		}
		qsort(sf->keys, sf->num_fdes, sizeof(*sf->keys), key_cmp);
	} else {
		/* the FDEs are their own index */
		free(sf->keys);
		sf->keys = NULL;
	}
	err = 0;
out:
	free(scratch);
	return err;
}

/* Take @bytes (@size of them, malloc()ed) as the section: they are freed with it, or now on failure. */
static struct sfu_sframe *sframe_take(uint8_t *bytes, size_t size, uint64_t addr,
				      struct sfu_diag *diag)
{
	struct reader r = { bytes, size, false };
	struct sfu_sframe *sf;
	uint16_t magic;
	int err;

	if (size < 2) {
		diag_set(diag, -EBADMSG, "section of %zu bytes has no SFrame magic", size);
		free(bytes);
		errno = EBADMSG;
		return NULL;
	}
	memcpy(&magic, bytes, sizeof(magic));
	if (magic == __builtin_bswap16(SFU_SFRAME_MAGIC)) {
		r.swap = true;
	} else if (magic != SFU_SFRAME_MAGIC) {
		diag_set(diag, -EBADMSG, "bad SFrame magic %#06x", magic);
		free(bytes);
		errno = EBADMSG;
		return NULL;
	}

	sf = calloc(1, sizeof(*sf));
	if (!sf) {
		free(bytes);
		errno = ENOMEM;
		return NULL;
	}
	sf->bytes = bytes;
	sf->size = size;
	sf->swap = r.swap;
	pthread_mutex_init(&sf->rows_lock, NULL);
	sf->id = __atomic_add_fetch(&sframe_last_id, 1, __ATOMIC_RELAXED);
	err = parse_header(&r, &sf->hdr, diag);
	if (!err)
		err = decode(sf, &r, addr, diag);
	if (err) {
		if (err == -ENOMEM)
			diag_set(diag, err, "out of memory");
		sfu_sframe__free(sf);
		errno = -err;
		return NULL;
	}
	return sf;
}

struct sfu_sframe *sframe_new_owned(void *bytes, size_t size, uint64_t addr,
				    struct sfu_diag *diag)
{
	if (!bytes && size) {
		errno = EINVAL;
		return NULL;
	}
	return sframe_take(bytes, size, addr, diag);
}

struct sfu_sframe *sfu_sframe__new(const void *data, size_t size, uint64_t addr,
				   struct sfu_diag *diag)
{
	uint8_t *copy;

	if (!data && size) {
		errno = EINVAL;
		return NULL;
	}
	copy = malloc(size ? size : 1);
	if (!copy) {
		diag_set(diag, -ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	if (size)
		memcpy(copy, data, size);
	return sframe_take(copy, size, addr, diag);
}

size_t sframe_memory(const struct sfu_sframe *sf)
{
	size_t n;

	if (!sf)
		return 0;
	n = sizeof(*sf) + sf->size + sf->num_fdes * sizeof(*sf->fdes);
	if (sf->keys)
		n += sf->num_fdes * sizeof(*sf->keys);
	if (__atomic_load_n(&sf->rows, __ATOMIC_ACQUIRE))
		n += sf->num_rows * sizeof(*sf->rows);
	return n;
}

uint64_t sframe_id(const struct sfu_sframe *sf)
{
	return sf->id;
}

void sfu_sframe__free(struct sfu_sframe *sf)
{
	if (!sf)
		return;
	free(sf->fdes);
	free(sf->rows);
	free(sf->keys);
	free(sf->bytes);
	pthread_mutex_destroy(&sf->rows_lock);
	free(sf);
}

const struct sfu_sframe_header *sfu_sframe__header(const struct sfu_sframe *sf)
{
	return &sf->hdr;
}

size_t sfu_sframe__fde_count(const struct sfu_sframe *sf)
{
	return sf->num_fdes;
}

const struct sfu_fde *sfu_sframe__fde(const struct sfu_sframe *sf, size_t i)
{
	return i < sf->num_fdes ? &sf->fdes[i] : NULL;
}

/* Every row, made on first use (the section was checked whole at decode). NULL: out of memory. */
static const struct sfu_row *all_rows(const struct sfu_sframe *csf)
{
	struct sfu_sframe *sf = (struct sfu_sframe *)csf;	/* made once, under its lock */
	struct reader r = { sf->bytes, sf->size, sf->swap };
	struct sfu_row *rows = __atomic_load_n(&sf->rows, __ATOMIC_ACQUIRE);

	if (rows)
		return rows;
	pthread_mutex_lock(&sf->rows_lock);
	rows = sf->rows;
	if (!rows && (rows = calloc(sf->num_rows ? sf->num_rows : 1, sizeof(*rows)))) {
		for (size_t i = 0; i < sf->num_fdes; i++) {
			const struct sfu_fde *fde = &sf->fdes[i];

			if (decode_fres(sf, &r, i, fde, rows + fde->first_row, NULL)) {
				free(rows);	/* cannot be: decode() checked the same bytes */
				rows = NULL;
				break;
			}
		}
		__atomic_store_n(&sf->rows, rows, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&sf->rows_lock);
	return rows;
}

const struct sfu_row *sfu_sframe__row(const struct sfu_sframe *sf, size_t i)
{
	const struct sfu_row *rows;

	if (i >= sf->num_rows || !(rows = all_rows(sf)))
		return NULL;
	return &rows[i];
}

/* The FDE covering @pc and @pc's offset in it (in the block, for PCMASK); NULL when none. */
static const struct sfu_fde *find_fde(const struct sfu_sframe *sf, uint64_t pc, uint64_t *offp)
{
	const struct fde_key *keys = sf->keys;
	size_t lo = 0, hi = sf->num_fdes, at;
	const struct sfu_fde *fde;
	uint64_t start, off;

	/* last function with start <= pc */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((keys ? keys[mid].start : sf->fdes[mid].start) <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	at = keys ? keys[lo - 1].idx : lo - 1;
	fde = &sf->fdes[at];
	start = fde->start;
	off = pc - start;
	if (off >= fde->size)
		return NULL;
	if (fde->fde_type == SFU_FDE_PCMASK)
		off %= fde->rep_size;
	*offp = off;
	return fde;
}

int sfu_sframe__find(const struct sfu_sframe *sf, uint64_t pc, const struct sfu_fde **fdep,
		     const struct sfu_row **rowp)
{
	const struct sfu_fde *fde;
	const struct sfu_row *rows;
	size_t lo = 0, hi;
	uint64_t off;

	fde = find_fde(sf, pc, &off);
	if (!fde)
		return -ENOENT;
	rows = all_rows(sf);
	if (!rows)
		return -ENOMEM;
	/* last row with start <= off */
	rows += fde->first_row;
	hi = fde->num_fres;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].start <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -ENOENT;
	*fdep = fde;
	*rowp = &rows[lo - 1];
	return 0;
}

int sfu_sframe__lookup(const struct sfu_sframe *sf, uint64_t pc, const struct sfu_fde **fdep,
		       struct sfu_row *row)
{
	struct reader r = { sf->bytes, sf->size, sf->swap };
	const struct sfu_fde *fde;
	struct sfu_row next;
	uint64_t off, at;

	fde = find_fde(sf, pc, &off);
	if (!fde || !fde->num_fres)
		return -ENOENT;
	/* FREs differ in size: the last one starting at or before off, by walking */
	at = first_fre(sf, fde);
	if (decode_fre(&sf->hdr, &r, fde, &at, sf->fres_end, row))
		return -EBADMSG;	/* cannot be: decode() checked the same bytes */
	if (row->start > off)
		return -ENOENT;
	for (uint32_t k = 1; k < fde->num_fres; k++) {
		if (decode_fre(&sf->hdr, &r, fde, &at, sf->fres_end, &next))
			return -EBADMSG;
		if (next.start > off)
			break;
		*row = next;
	}
	*fdep = fde;
	return 0;
}

const char *sfu_sframe_abi_name(uint8_t abi)
{
	switch (abi) {
	case SFU_SFRAME_ABI_AARCH64_BE: return "AArch64 big-endian";
	case SFU_SFRAME_ABI_AARCH64_LE: return "AArch64 little-endian";
	case SFU_SFRAME_ABI_AMD64_LE: return "AMD64 little-endian";
	case SFU_SFRAME_ABI_S390X_BE: return "s390x big-endian";
	default: return NULL;
	}
}
