/* SPDX-License-Identifier: BSD-2-Clause */
/* SFrame decoder: validates a whole section of any version once, then answers lookups. */
#include <errno.h>
#include <limits.h>
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

struct sfu_sframe {
	struct sfu_sframe_header hdr;
	struct sfu_fde *fdes;		/* section order */
	struct sfu_row *rows;		/* fdes[i].first_row .. + num_fres */
	struct fde_key *keys;		/* sorted by start */
	size_t num_fdes;
	size_t num_rows;
	uint64_t id;
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
 * Decode the FREs of @fde starting at section offset @off, into @rows.
 * @end is the end of the FRE sub-section.
 */
static int decode_fres(const struct sfu_sframe *sf, const struct reader *r, size_t fde_idx,
		       struct sfu_fde *fde, uint64_t off, uint64_t end, struct sfu_row *rows,
		       struct sfu_diag *diag)
{
	static const unsigned addr_size[] = { 1, 2, 4 };
	const struct sfu_sframe_header *h = &sf->hdr;
	unsigned asz = addr_size[fde->fre_type];
	struct reader sub = { r->buf, end, r->swap };
	const char *why;

	for (uint32_t k = 0; k < fde->num_fres; k++) {
		struct sfu_row *row = &rows[k];
		int32_t w[3] = { 0, 0, 0 };
		unsigned n, size_code, size;
		uint8_t info;

		if (!fits(&sub, off, asz + 1)) {
			diag_set(diag, -EBADMSG, "FDE %zu: FRE %u runs past the end of the FRE sub-section",
				    fde_idx, k);
			return -EBADMSG;
		}
		memset(row, 0, sizeof(*row));
		row->start = rd_uword(&sub, off, asz);
		info = sub.buf[off + asz];
		off += asz + 1;
		n = SFRAME_FRE_COUNT(info);
		size_code = SFRAME_FRE_SIZE(info);
		if (size_code > 2) {
			diag_set(diag, -EBADMSG, "FDE %zu: FRE %u has invalid offset size code 3",
				    fde_idx, k);
			return -EBADMSG;
		}
		size = 1u << size_code;
		if (!fits(&sub, off, (uint64_t)n * size)) {
			diag_set(diag, -EBADMSG, "FDE %zu: FRE %u data words run past the end of the FRE sub-section",
				    fde_idx, k);
			return -EBADMSG;
		}
		row->info = info;
		row->offset_size = size;
		row->offset_count = n;
		if (SFRAME_FRE_MANGLED(info))
			row->flags |= SFU_ROW_MANGLED_RA;

		if (fde->flex) {
			why = decode_flex(h, &sub, off, n, size, row);
		} else {
			for (unsigned j = 0; j < n && j < 3; j++)
				w[j] = rd_word(&sub, off + j * size, size);
			why = decode_default(h, w, n, info, row);
		}
		if (why) {
			diag_set(diag, -EBADMSG, "FDE %zu: FRE %u: %s", fde_idx, k, why);
			return -EBADMSG;
		}
		off += (uint64_t)n * size;

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
	sf->fdes = calloc(h->num_fdes ? h->num_fdes : 1, sizeof(*sf->fdes));
	sf->keys = calloc(h->num_fdes ? h->num_fdes : 1, sizeof(*sf->keys));
	if (!sf->fdes || !sf->keys)
		return -ENOMEM;

	for (size_t i = 0; i < h->num_fdes; i++) {
		err = read_fde(sf, r, fdes_at, fres_at, addr, i, diag);
		if (err)
			return err;
		total_rows += sf->fdes[i].num_fres;
		if (total_rows > h->num_fres) {
			diag_set(diag, -EBADMSG, "FDE %zu: FRE counts add up to more than the header's %u",
				    i, h->num_fres);
			return -EBADMSG;
		}
	}
	sf->num_rows = total_rows;
	sf->rows = calloc(total_rows ? total_rows : 1, sizeof(*sf->rows));
	if (!sf->rows)
		return -ENOMEM;

	total_rows = 0;
	for (size_t i = 0; i < h->num_fdes; i++) {
		struct sfu_fde *fde = &sf->fdes[i];
		uint64_t first = fres_at + fde->fre_off;

		if (h->version == 3)
			first += SFRAME_V3_ATTR_SIZE;
		if (fde->fre_off > h->fre_len) {
			diag_set(diag, -EBADMSG, "FDE %zu: FRE offset %#x past the end of the FRE sub-section",
				    i, fde->fre_off);
			return -EBADMSG;
		}
		fde->first_row = total_rows;
		err = decode_fres(sf, r, i, fde, first, fres_at + h->fre_len, sf->rows + total_rows,
				  diag);
		if (err)
			return err;
		/* the unwinder sees rows, not FDEs: each row of a trampoline says so */
		for (uint32_t k = 0; fde->signal_frame && k < fde->num_fres; k++)
			sf->rows[total_rows + k].flags |= SFU_ROW_SIGNAL_FRAME;
		total_rows += fde->num_fres;

		sf->keys[i] = (struct fde_key){ fde->start, fde->size, (uint32_t)i };
		if (i > 0 && sf->keys[i].start < sf->keys[i - 1].start)
			sorted = false;
	}
	if (!sorted) {
		if (h->flags & SFU_SFRAME_F_FDE_SORTED) {
			diag_set(diag, -EBADMSG, "FDEs are not sorted though the section says so");
			return -EBADMSG;
		}
		qsort(sf->keys, sf->num_fdes, sizeof(*sf->keys), key_cmp);
	}
	return 0;
}

struct sfu_sframe *sfu_sframe__new(const void *data, size_t size, uint64_t addr,
				   struct sfu_diag *diag)
{
	static uint64_t last_id;
	struct reader r = { data, size, false };
	struct sfu_sframe *sf;
	uint16_t magic;
	int err;

	if (!data && size) {
		errno = EINVAL;
		return NULL;
	}
	if (size < 2) {
		diag_set(diag, -EBADMSG, "section of %zu bytes has no SFrame magic", size);
		errno = EBADMSG;
		return NULL;
	}
	memcpy(&magic, data, sizeof(magic));
	if (magic == __builtin_bswap16(SFU_SFRAME_MAGIC)) {
		r.swap = true;
	} else if (magic != SFU_SFRAME_MAGIC) {
		diag_set(diag, -EBADMSG, "bad SFrame magic %#06x", magic);
		errno = EBADMSG;
		return NULL;
	}

	sf = calloc(1, sizeof(*sf));
	if (!sf) {
		errno = ENOMEM;
		return NULL;
	}
	sf->id = __atomic_add_fetch(&last_id, 1, __ATOMIC_RELAXED);
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

const struct sfu_row *sfu_sframe__row(const struct sfu_sframe *sf, size_t i)
{
	return i < sf->num_rows ? &sf->rows[i] : NULL;
}

int sfu_sframe__find(const struct sfu_sframe *sf, uint64_t pc, const struct sfu_fde **fdep,
		     const struct sfu_row **rowp)
{
	const struct fde_key *keys = sf->keys;
	size_t lo = 0, hi = sf->num_fdes;
	const struct sfu_fde *fde;
	const struct sfu_row *rows;
	uint64_t off;

	/* last key with start <= pc */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (keys[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -ENOENT;
	off = pc - keys[lo - 1].start;
	if (off >= keys[lo - 1].size)
		return -ENOENT;
	fde = &sf->fdes[keys[lo - 1].idx];
	if (fde->fde_type == SFU_FDE_PCMASK)
		off %= fde->rep_size;

	/* last row with start <= off */
	rows = sf->rows + fde->first_row;
	lo = 0;
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
