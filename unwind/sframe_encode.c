/* SPDX-License-Identifier: BSD-2-Clause */
/* SFrame encoder: writes versions 1, 2 and 3 in either byte order from decoded rows. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "opts_internal.h"
#include "sframe_internal.h"

struct writer {
	uint8_t *buf;
	size_t len, cap;
	bool swap;
	int err;
};

/* One FRE ready to write: its data words and info byte. */
struct fre_words {
	uint32_t start;
	uint8_t info;		/* without the size code, filled once the width is known */
	uint8_t n;
	int64_t w[6];
	bool ctrl[6];		/* the word is a flexible control word (unsigned) */
};

static void put(struct writer *wr, const void *p, size_t n)
{
	if (wr->err)
		return;
	if (wr->len + n > wr->cap) {
		size_t cap = wr->cap ? wr->cap * 2 : 256;
		uint8_t *b;

		while (cap < wr->len + n)
			cap *= 2;
		b = realloc(wr->buf, cap);
		if (!b) {
			wr->err = -ENOMEM;
			return;
		}
		wr->buf = b;
		wr->cap = cap;
	}
	memcpy(wr->buf + wr->len, p, n);
	wr->len += n;
}

static void put8(struct writer *wr, uint8_t v)
{
	put(wr, &v, 1);
}

static void put16(struct writer *wr, uint16_t v)
{
	v = wr->swap ? __builtin_bswap16(v) : v;
	put(wr, &v, 2);
}

static void put32(struct writer *wr, uint32_t v)
{
	v = wr->swap ? __builtin_bswap32(v) : v;
	put(wr, &v, 4);
}

static void put64(struct writer *wr, uint64_t v)
{
	v = wr->swap ? __builtin_bswap64(v) : v;
	put(wr, &v, 8);
}

static void put_sized(struct writer *wr, uint32_t v, unsigned size)
{
	if (size == 1)
		put8(wr, v);
	else if (size == 2)
		put16(wr, v);
	else
		put32(wr, v);
}

static void set32(struct writer *wr, size_t at, uint32_t v)
{
	if (wr->err)
		return;
	v = wr->swap ? __builtin_bswap32(v) : v;
	memcpy(wr->buf + at, &v, 4);
}

static int cfa_word(const struct sfu_sframe_enc_opts *o, int32_t off, int64_t *w)
{
	int64_t v = (int64_t)off - SFRAME_S390X_CFA_ADJ;

	if (o->abi != SFU_SFRAME_ABI_S390X_BE) {
		*w = off;
		return 0;
	}
	if (v % SFRAME_S390X_CFA_ALIGN)
		return -EINVAL;
	*w = v / SFRAME_S390X_CFA_ALIGN;
	return 0;
}

/*
 * A stack slot as a default data word. On s390x, 0 is the padding word and
 * (V2) an odd word names a register, so neither can be a slot.
 */
static int slot_word(const struct sfu_sframe_enc_opts *o, int32_t off, int64_t *w)
{
	if (o->abi == SFU_SFRAME_ABI_S390X_BE && (off == 0 || (o->version == 2 && (off & 1))))
		return -EINVAL;
	*w = off;
	return 0;
}

static uint32_t flex_ctrl(const struct sfu_loc *loc, uint8_t abi)
{
	switch (loc->kind) {
	case SFU_LOC_AT_CFA:
		return SFRAME_FLEX_CTRL(0, 1, 0);
	case SFU_LOC_REG_OFFSET:
	case SFU_LOC_IN_REG:
		return SFRAME_FLEX_CTRL((uint32_t)sframe_loc_dwarf_reg(loc, abi), 0, 1);
	case SFU_LOC_DEREF:
		return SFRAME_FLEX_CTRL((uint32_t)sframe_loc_dwarf_reg(loc, abi), 1, 1);
	default:
		return 0;	/* SAME: control 0, offset 0 */
	}
}

static bool is_untracked_ra(const struct sfu_sframe_enc_opts *o, const struct sfu_loc *ra)
{
	return !o->cfa_fixed_ra_offset && ra->kind == SFU_LOC_IN_REG && ra->reg == SFU_REG_RA &&
	       ra->offset == 0;
}

static void add_word(struct fre_words *f, int64_t w, bool ctrl)
{
	f->ctrl[f->n] = ctrl;
	f->w[f->n++] = w;
}

static int flex_words(const struct sfu_sframe_enc_opts *o, const struct sfu_row *row,
		      struct fre_words *f)
{
	bool fp = row->fp.kind != SFU_LOC_SAME || o->cfa_fixed_fp_offset;
	int64_t w;

	if (row->cfa.kind != SFU_LOC_REG_OFFSET && row->cfa.kind != SFU_LOC_DEREF)
		return -EINVAL;
	if (cfa_word(o, row->cfa.offset, &w))
		return -EINVAL;
	add_word(f, flex_ctrl(&row->cfa, o->abi), true);
	add_word(f, w, false);
	if (row->ra.kind == SFU_LOC_UNDEFINED) {
		/* an unusable row (see row_words): RA = CFA + 1 as a value, read back as unusable */
		add_word(f, 0, true);
		add_word(f, 1, false);
	} else if (is_untracked_ra(o, &row->ra)) {
		if (fp)
			add_word(f, 0, true);	/* padding */
	} else {
		add_word(f, flex_ctrl(&row->ra, o->abi), true);
		add_word(f, row->ra.kind == SFU_LOC_SAME ? 0 : row->ra.offset, false);
	}
	if (fp) {
		add_word(f, flex_ctrl(&row->fp, o->abi), true);
		add_word(f, row->fp.kind == SFU_LOC_SAME ? 0 : row->fp.offset, false);
	}
	return 0;
}

/* A register saved in place as a V2 s390x word: (dwarf reg << 1) | 1. */
static int s390x_reg_word(const struct sfu_sframe_enc_opts *o, const struct sfu_loc *loc,
			  int64_t *w)
{
	if (o->abi != SFU_SFRAME_ABI_S390X_BE || o->version != 2 || loc->offset)
		return -EINVAL;
	*w = ((int64_t)sframe_loc_dwarf_reg(loc, o->abi) << 1) | 1;
	return 0;
}

static int default_words(const struct sfu_sframe_enc_opts *o, const struct sfu_row *row,
			 struct fre_words *f)
{
	bool s390x = o->abi == SFU_SFRAME_ABI_S390X_BE;
	bool fp = row->fp.kind != SFU_LOC_SAME && !o->cfa_fixed_fp_offset;
	int64_t w;

	if (row->cfa.kind != SFU_LOC_REG_OFFSET ||
	    (row->cfa.reg != SFU_REG_SP && row->cfa.reg != SFU_REG_FP))
		return -EINVAL;
	if (cfa_word(o, row->cfa.offset, &w))
		return -EINVAL;
	f->info |= row->cfa.reg == SFU_REG_SP ? 1 : 0;
	add_word(f, w, false);

	if (o->cfa_fixed_ra_offset) {
		if (row->ra.kind != SFU_LOC_AT_CFA || row->ra.offset != o->cfa_fixed_ra_offset)
			return -EINVAL;
	} else if (row->ra.kind == SFU_LOC_AT_CFA) {
		if (slot_word(o, row->ra.offset, &w))
			return -EINVAL;
		add_word(f, w, false);
	} else if (is_untracked_ra(o, &row->ra)) {
		if (fp) {
			if (!s390x)
				return -EINVAL;	/* FP cannot follow an untracked RA */
			add_word(f, 0, false);	/* s390x padding */
		}
	} else if (row->ra.kind == SFU_LOC_IN_REG) {
		if (s390x_reg_word(o, &row->ra, &w))
			return -EINVAL;
		add_word(f, w, false);
	} else {
		return -EINVAL;
	}

	if (o->cfa_fixed_fp_offset) {
		if (row->fp.kind != SFU_LOC_AT_CFA || row->fp.offset != o->cfa_fixed_fp_offset)
			return -EINVAL;
	} else if (row->fp.kind == SFU_LOC_AT_CFA) {
		if (slot_word(o, row->fp.offset, &w))
			return -EINVAL;
		add_word(f, w, false);
	} else if (row->fp.kind == SFU_LOC_IN_REG) {
		if (s390x_reg_word(o, &row->fp, &w))
			return -EINVAL;
		add_word(f, w, false);
	} else if (row->fp.kind != SFU_LOC_SAME) {
		return -EINVAL;
	}
	return 0;
}

/* The narrowest word size (1, 2, 4) that holds every word of @f. */
static unsigned word_size(const struct fre_words *f)
{
	unsigned size = 1;

	for (unsigned i = 0; i < f->n; i++) {
		int64_t v = f->w[i];
		unsigned need;

		if (f->ctrl[i])
			need = v <= UINT8_MAX ? 1 : v <= UINT16_MAX ? 2 : 4;
		else
			need = (v >= INT8_MIN && v <= INT8_MAX) ? 1 :
			       (v >= INT16_MIN && v <= INT16_MAX) ? 2 : 4;
		if (need > size)
			size = need;
	}
	return size;
}

static int row_words(const struct sfu_sframe_enc_opts *o, const struct sfu_row *row, bool flex,
		     struct fre_words *f)
{
	int err;

	memset(f, 0, sizeof(*f));
	f->start = row->start;
	/*
	 * No data words: the outermost frame. An unusable row whose RA is
	 * undefined (how the decoder leaves one) must not become that.
	 */
	if (row->ra.kind == SFU_LOC_UNDEFINED && !(flex && (row->flags & SFU_ROW_UNUSABLE)))
		return 0;
	err = flex ? flex_words(o, row, f) : default_words(o, row, f);
	if (err)
		return err;
	if (row->flags & SFU_ROW_MANGLED_RA)
		f->info |= 0x80;
	return 0;
}

static bool func_is_flex(const struct sfu_sframe_enc_opts *o, const struct sfu_sframe_func *fn)
{
	if (o->version != 3)
		return false;
	for (size_t k = 0; k < fn->num_rows; k++)
		if (fn->rows[k].flags & SFU_ROW_FLEX)
			return true;
	return false;
}

static int write_fres(struct writer *wr, const struct sfu_sframe_enc_opts *o,
		      const struct sfu_sframe_func *fn, bool flex, unsigned fre_type,
		      struct sfu_diag *diag)
{
	static const unsigned addr_size[] = { 1, 2, 4 };

	for (size_t k = 0; k < fn->num_rows; k++) {
		struct fre_words f;
		unsigned size;

		if (row_words(o, &fn->rows[k], flex, &f)) {
			diag_set(diag, -EINVAL, "function at %#llx: row %zu cannot be written in SFrame version %u",
				    (unsigned long long)fn->start, k, o->version);
			return -EINVAL;
		}
		if (k > 0 && f.start <= fn->rows[k - 1].start) {
			diag_set(diag, -EINVAL, "function at %#llx: row starts do not increase",
				    (unsigned long long)fn->start);
			return -EINVAL;
		}
		if (fn->fde_type == SFU_FDE_PCINC ? f.start > fn->size : f.start >= fn->rep_size) {
			diag_set(diag, -EINVAL, "function at %#llx: row %zu starts past its end",
				    (unsigned long long)fn->start, k);
			return -EINVAL;
		}
		size = word_size(&f);
		put_sized(wr, f.start, addr_size[fre_type]);
		put8(wr, f.info | SFRAME_FRE_INFO(0, f.n, size == 1 ? 0 : size == 2 ? 1 : 2, 0));
		for (unsigned i = 0; i < f.n; i++)
			put_sized(wr, (uint32_t)f.w[i], size);
	}
	return 0;
}

static int start_cmp(const void *a, const void *b)
{
	const struct sfu_sframe_func *const *x = a, *const *y = b;

	return (*x)->start < (*y)->start ? -1 : (*x)->start > (*y)->start;
}

static unsigned fre_type_for(const struct sfu_sframe_func *fn)
{
	uint64_t max = fn->size;

	for (size_t k = 0; k < fn->num_rows; k++)
		if (fn->rows[k].start > max)
			max = fn->rows[k].start;
	return max <= UINT8_MAX ? SFU_FRE_ADDR1 : max <= UINT16_MAX ? SFU_FRE_ADDR2 : SFU_FRE_ADDR4;
}

static int check_opts(const struct sfu_sframe_enc_opts *o, size_t num_funcs,
		      struct sfu_diag *diag)
{
	static const uint8_t valid_flags[] = { 0, SFRAME_V1_FLAGS, SFRAME_V2_FLAGS, SFRAME_V3_FLAGS };

	if (o->version < 1 || o->version > 3 || !sframe_abi_regs(o->abi)) {
		diag_set(diag, -EINVAL, "cannot write SFrame version %u for ABI %u", o->version,
			    o->abi);
		return -EINVAL;
	}
	if (o->flags & ~valid_flags[o->version]) {
		diag_set(diag, -EINVAL, "flags %#x not defined for version %u", o->flags, o->version);
		return -EINVAL;
	}
	if (num_funcs > UINT32_MAX) {
		diag_set(diag, -ERANGE, "too many functions");
		return -ERANGE;
	}
	return 0;
}

static int check_func(const struct sfu_sframe_enc_opts *o, const struct sfu_sframe_func *fn,
		      size_t i, struct sfu_diag *diag)
{
	if (fn->fde_type > SFU_FDE_PCMASK || fn->pauth_key > 1)
		return diag_set(diag, -EINVAL, "function %zu: FDE type %u or PAuth key %u invalid",
				i, fn->fde_type, fn->pauth_key);
	if (fn->fde_type != SFU_FDE_PCMASK)
		return 0;
	/* V1 has no repeat size field: readers assume the .plt's 16 */
	if (o->version == 1 && fn->rep_size != SFRAME_V1_PLT_REP_SIZE)
		return diag_set(diag, -EINVAL, "function %zu: version 1 PCMASK repeats every %u bytes, not %u",
				i, SFRAME_V1_PLT_REP_SIZE, fn->rep_size);
	if (!fn->rep_size)
		return diag_set(diag, -EINVAL, "function %zu: PCMASK needs a repeat size", i);
	return 0;
}

static int encode(const struct sfu_sframe_enc_opts *o, const struct sfu_sframe_func *funcs,
		  size_t num_funcs, void **out, size_t *out_size, struct sfu_diag *diag)
{
	const bool host_be = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
	unsigned fde_size = o->version == 1 ? SFRAME_V1_FDE_SIZE :
			    o->version == 2 ? SFRAME_V2_FDE_SIZE : SFRAME_V3_FDE_SIZE;
	const struct sfu_sframe_func **sorted = NULL;
	struct writer wr = { .swap = o->big_endian != host_be };
	uint8_t flags = SFU_SFRAME_F_FDE_SORTED | o->flags;
	bool pcrel = o->version == 3 ||
		     (o->version == 2 && (o->pcrel || (o->flags & SFU_SFRAME_F_FDE_FUNC_START_PCREL)));
	uint64_t num_fres = 0;
	size_t fre_base;
	int err;

	err = check_opts(o, num_funcs, diag);
	if (err)
		return err;
	if (pcrel)
		flags |= SFU_SFRAME_F_FDE_FUNC_START_PCREL;
	sorted = malloc((num_funcs ? num_funcs : 1) * sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	for (size_t i = 0; i < num_funcs; i++) {
		sorted[i] = &funcs[i];
		num_fres += funcs[i].num_rows;
		err = check_func(o, &funcs[i], i, diag);
		if (err)
			goto out;
		if (o->version == 3 && funcs[i].num_rows > UINT16_MAX) {
			diag_set(diag, -ERANGE, "function %zu: more than 65535 rows", i);
			err = -ERANGE;
			goto out;
		}
	}
	if (num_fres > UINT32_MAX) {
		diag_set(diag, -ERANGE, "too many rows");
		err = -ERANGE;
		goto out;
	}
	qsort(sorted, num_funcs, sizeof(*sorted), start_cmp);

	put16(&wr, SFU_SFRAME_MAGIC);
	put8(&wr, o->version);
	put8(&wr, flags);
	put8(&wr, o->abi);
	put8(&wr, (uint8_t)o->cfa_fixed_fp_offset);
	put8(&wr, (uint8_t)o->cfa_fixed_ra_offset);
	put8(&wr, 0);
	put32(&wr, num_funcs);
	put32(&wr, num_fres);
	put32(&wr, 0);		/* fre_len, patched below */
	put32(&wr, 0);		/* fdeoff */
	put32(&wr, num_funcs * fde_size);

	/* FDEs first with placeholder FRE offsets, then the FREs, patching as we go. */
	for (size_t i = 0; i < num_funcs; i++) {
		const struct sfu_sframe_func *fn = sorted[i];
		uint64_t field = SFRAME_HDR_SIZE + i * fde_size;
		uint64_t rel = fn->start - o->addr - (pcrel ? field : 0);
		uint8_t info = fre_type_for(fn) | (fn->fde_type << 4) | (fn->pauth_key << 5);

		if (o->version == 3) {
			put64(&wr, rel);
			put32(&wr, fn->size);
			put32(&wr, 0);
			continue;
		}
		if ((int64_t)rel != (int32_t)rel) {
			diag_set(diag, -ERANGE, "function at %#llx is out of reach of a 32-bit start",
				    (unsigned long long)fn->start);
			err = -ERANGE;
			goto out;
		}
		put32(&wr, (uint32_t)rel);
		put32(&wr, fn->size);
		put32(&wr, 0);
		put32(&wr, fn->num_rows);
		put8(&wr, info);
		if (o->version == 2) {
			put8(&wr, fn->rep_size);
			put16(&wr, 0);
		}
	}
	fre_base = wr.len;
	for (size_t i = 0; i < num_funcs; i++) {
		const struct sfu_sframe_func *fn = sorted[i];
		size_t field = SFRAME_HDR_SIZE + i * fde_size + (o->version == 3 ? 12 : 8);
		unsigned fre_type = fre_type_for(fn);
		bool flex = func_is_flex(o, fn);

		set32(&wr, field, wr.len - fre_base);
		if (o->version == 3) {
			put16(&wr, fn->num_rows);
			put8(&wr, fre_type | (fn->fde_type << 4) | (fn->pauth_key << 5) |
				  (fn->signal_frame << 7));
			put8(&wr, flex ? SFRAME_V3_FDE_FLEX : SFRAME_V3_FDE_DEFAULT);
			put8(&wr, fn->rep_size);
		}
		err = write_fres(&wr, o, fn, flex, fre_type, diag);
		if (err)
			goto out;
	}
	if (wr.len - fre_base > UINT32_MAX) {
		diag_set(diag, -ERANGE, "FRE sub-section larger than 4 GiB");
		err = -ERANGE;
		goto out;
	}
	set32(&wr, 16, wr.len - fre_base);
	err = wr.err;
out:
	free(sorted);
	if (err) {
		free(wr.buf);
		return err;
	}
	*out = wr.buf;
	*out_size = wr.len;
	return 0;
}

int sfu_sframe_encode(const struct sfu_sframe_enc_opts *opts, const struct sfu_sframe_func *funcs,
		      size_t num_funcs, void **out, size_t *out_size, struct sfu_diag *diag)
{
	struct sfu_sframe_enc_opts o;

	if (!opts)
		return diag_set(diag, -EINVAL, "no options: the SFrame version has no default");
	if (!OPTS_VALID(opts, sfu_sframe_enc_opts))
		return diag_set(diag, -EINVAL, "options of %zu bytes: too small, or setting a field "
				"this library does not know", opts->sz);
	/* the encoder reads a whole struct of this library's size: the caller's may be shorter */
	o = (struct sfu_sframe_enc_opts){
		.sz = sizeof(o),
		.version = OPTS_GET(opts, version, 0),
		.abi = OPTS_GET(opts, abi, 0),
		.big_endian = OPTS_GET(opts, big_endian, false),
		.pcrel = OPTS_GET(opts, pcrel, false),
		.flags = OPTS_GET(opts, flags, 0),
		.cfa_fixed_fp_offset = OPTS_GET(opts, cfa_fixed_fp_offset, 0),
		.cfa_fixed_ra_offset = OPTS_GET(opts, cfa_fixed_ra_offset, 0),
		.addr = OPTS_GET(opts, addr, 0),
	};
	return encode(&o, funcs, num_funcs, out, out_size, diag);
}
