/* SPDX-License-Identifier: BSD-2-Clause */
/* .eh_frame to SFrame: CIE and FDE parser, DW_CFA_* interpreter, rows in the SFrame model. */
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "sfunwind/ehframe.h"
#include "sframe_internal.h"

/* Pointer encodings (DW_EH_PE_*). */
#define PE_ABSPTR	0x00
#define PE_ULEB128	0x01
#define PE_UDATA2	0x02
#define PE_UDATA4	0x03
#define PE_UDATA8	0x04
#define PE_SLEB128	0x09
#define PE_SDATA2	0x0a
#define PE_SDATA4	0x0b
#define PE_SDATA8	0x0c
#define PE_FORMAT(e)	((e) & 0x0f)
#define PE_PCREL	0x10
#define PE_TEXTREL	0x20
#define PE_DATAREL	0x30
#define PE_FUNCREL	0x40
#define PE_ALIGNED	0x50
#define PE_APPL(e)	((e) & 0x70)
#define PE_INDIRECT	0x80
#define PE_OMIT		0xff

/* Call frame instructions (DW_CFA_*): the three with an operand in the opcode, then the rest. */
#define CFA_ADVANCE_LOC			0x40
#define CFA_OFFSET			0x80
#define CFA_RESTORE			0xc0
#define CFA_NOP				0x00
#define CFA_SET_LOC			0x01
#define CFA_ADVANCE_LOC1		0x02
#define CFA_ADVANCE_LOC2		0x03
#define CFA_ADVANCE_LOC4		0x04
#define CFA_OFFSET_EXTENDED		0x05
#define CFA_RESTORE_EXTENDED		0x06
#define CFA_UNDEFINED			0x07
#define CFA_SAME_VALUE			0x08
#define CFA_REGISTER			0x09
#define CFA_REMEMBER_STATE		0x0a
#define CFA_RESTORE_STATE		0x0b
#define CFA_DEF_CFA			0x0c
#define CFA_DEF_CFA_REGISTER		0x0d
#define CFA_DEF_CFA_OFFSET		0x0e
#define CFA_DEF_CFA_EXPRESSION		0x0f
#define CFA_EXPRESSION			0x10
#define CFA_OFFSET_EXTENDED_SF		0x11
#define CFA_DEF_CFA_SF			0x12
#define CFA_DEF_CFA_OFFSET_SF		0x13
#define CFA_VAL_OFFSET			0x14
#define CFA_VAL_OFFSET_SF		0x15
#define CFA_VAL_EXPRESSION		0x16
#define CFA_MIPS_ADVANCE_LOC8		0x1d
#define CFA_AARCH64_NEGATE_RA_STATE_WITH_PC 0x2c
#define CFA_AARCH64_NEGATE_RA_STATE	0x2d	/* DW_CFA_GNU_window_save elsewhere */
#define CFA_GNU_ARGS_SIZE		0x2e
#define CFA_GNU_NEGATIVE_OFFSET_EXTENDED 0x2f
#define CFA_LLVM_DEF_ASPACE_CFA		0x30
#define CFA_LLVM_DEF_ASPACE_CFA_SF	0x31

/* The DWARF expression operations the recognisers below look for. */
#define OP_DEREF	0x06
#define OP_CONST1U	0x08
#define OP_AND		0x1a
#define OP_PLUS		0x22
#define OP_SHL		0x24
#define OP_GE		0x2a
#define OP_LIT0		0x30
#define OP_LIT31	0x4f
#define OP_BREG0	0x70
#define OP_BREG31	0x8f
#define OP_BREGX	0x92

/* Nesting of DW_CFA_remember_state; compilers use one or two levels. */
#define REMEMBER_MAX	64

/* The encoder's limit on rows per function in SFrame version 3. */
#define ROWS_PER_FUNC_MAX 0xffff

/* Bounds-checked cursor over a byte range; a failed read sets bad and reads 0. */
struct cur {
	const uint8_t *buf;
	size_t off;
	size_t end;		/* reads stop here */
	bool swap;
	bool bad;
};

/* How a register other than the CFA is recovered in the caller. */
enum rule_kind {
	R_UNSET = 0,		/* no rule: the register's own convention */
	R_UNDEF,
	R_SAME,
	R_OFFSET,		/* saved at CFA + off */
	R_VAL_OFFSET,		/* the value CFA + off */
	R_REG,			/* in register reg */
	R_EXPR,			/* saved at the address the expression computes */
	R_VAL_EXPR,		/* the value the expression computes */
	R_BAD,			/* an operand out of range */
};

struct rule {
	uint8_t kind;		/* enum rule_kind */
	uint64_t reg;
	int64_t off;
	const uint8_t *expr;
	size_t expr_len;
};

enum cfa_kind {
	CFA_RULE_REG = 0,	/* reg + off */
	CFA_RULE_EXPR,
	CFA_RULE_BAD,		/* an operand out of range, or an offset applied to an expression */
};

/* The rules that matter for the SFrame model; the other columns are parsed and dropped. */
struct cfi_state {
	uint8_t cfa_kind;	/* enum cfa_kind */
	uint64_t cfa_reg;
	int64_t cfa_off;
	const uint8_t *cfa_expr;
	size_t cfa_expr_len;
	struct rule ra, fp, sp;
	bool ra_signed;		/* AArch64 PAuth: toggled by DW_CFA_AARCH64_negate_ra_state */
};

struct cie {
	uint64_t off;		/* of the entry in .eh_frame */
	uint64_t caf;		/* code alignment factor */
	int64_t daf;		/* data alignment factor */
	uint64_t ra_col;
	uint8_t fde_enc;
	bool has_z;		/* FDEs carry an augmentation data length */
	bool signal;		/* 'S' */
	bool bkey;		/* 'B': AArch64 return addresses signed with key B */
	const char *bad;	/* why the CIE cannot be used, or NULL */
	struct cfi_state init;	/* after the initial instructions */
};

/* The rule the x86-64 .plt expression states: CFA = SP + base + ((pc & mask) >= from) << shift. */
struct plt_rule {
	int32_t base;
	uint32_t mask;
	uint32_t from;
	uint32_t shift;
};

/* A function of the table being built; rows by index, as the row array moves. */
struct func {
	uint64_t start;
	uint32_t size;
	uint8_t fde_type;
	uint8_t rep_size;
	uint8_t pauth_key;
	bool signal_frame;
	size_t first_row;
	size_t num_rows;
};

struct conv {
	const struct sfu_eh_frame *in;
	struct sfu_eh_frame_stats *st;
	uint8_t abi;		/* enum sfu_sframe_abi */
	bool amd64;
	bool swap;
	uint16_t sp_col, fp_col;
	struct cie *cies;	/* parsed on first use, found through the hash */
	size_t num_cies, cies_cap;
	uint32_t *cie_slots;	/* open addressing: index + 1, 0 = empty */
	size_t slots_cap;	/* a power of two */
	struct func *funcs;
	size_t num_funcs, funcs_cap;
	struct sfu_row *rows;
	size_t num_rows, rows_cap;
	int err;		/* -ENOMEM once an allocation failed */
};

/* The interpretation of one FDE (or of a CIE's initial instructions when init is NULL). */
struct run {
	struct conv *x;
	const struct cie *cie;
	uint64_t start;		/* the function's address */
	uint64_t range;		/* its size */
	uint64_t loc;		/* offset of the next instruction's effect */
	bool done;		/* loc reached the end of the function */
	struct cfi_state st;
	const struct cfi_state *init;	/* for DW_CFA_restore; NULL in a CIE */
	struct cfi_state *stack;	/* DW_CFA_remember_state, allocated on first use */
	unsigned depth;
	size_t first_row;	/* the FDE's first row in x->rows */
	bool plt;		/* the CFA became the .plt expression at plt_loc */
	bool plt_broken;	/* and changed again afterwards */
	uint64_t plt_loc;
	struct plt_rule plt_rule;
	const char *why;	/* set when the program cannot be read further */
};

static void note(struct conv *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct conv *x, const char *fmt, ...)
{
	va_list ap;

	if (x->st->note[0])
		return;
	va_start(ap, fmt);
	vsnprintf(x->st->note, sizeof(x->st->note), fmt, ap);
	va_end(ap);
}

/* ---- reading ---- */

static void cur_fail(struct cur *c)
{
	c->bad = true;
	c->off = c->end;
}

static uint64_t rd_fixed(struct cur *c, unsigned n)
{
	/* the section's byte order: swap means "not the host's" */
	bool big = (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__) != c->swap;
	const uint8_t *b;
	uint64_t v = 0;

	if (c->bad || c->end - c->off < n) {
		cur_fail(c);
		return 0;
	}
	b = c->buf + c->off;
	c->off += n;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)b[i] << (8 * (big ? n - 1 - i : i));
	return v;
}

static uint8_t rd8(struct cur *c)
{
	return (uint8_t)rd_fixed(c, 1);
}

static uint64_t rd_uleb(struct cur *c)
{
	uint64_t v = 0;
	unsigned shift = 0;

	for (;;) {
		uint8_t b;

		if (c->bad || c->off >= c->end) {
			cur_fail(c);
			return 0;
		}
		b = c->buf[c->off++];
		if (shift < 64) {
			uint64_t part = b & 0x7f;

			if (shift && part >> (64 - shift))
				cur_fail(c);	/* more than 64 bits */
			else
				v |= part << shift;
		} else if (b & 0x7f) {
			cur_fail(c);
		}
		if (c->bad)
			return 0;
		if (!(b & 0x80))
			return v;
		shift += 7;
	}
}

static int64_t rd_sleb(struct cur *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (c->bad || c->off >= c->end) {
			cur_fail(c);
			return 0;
		}
		b = c->buf[c->off++];
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return (int64_t)v;
}

/* Skip @n bytes. */
static void skip(struct cur *c, uint64_t n)
{
	if (c->bad || n > c->end - c->off)
		cur_fail(c);
	else
		c->off += n;
}

/*
 * Read a pointer of encoding @enc. @addr is the address of buf[0] (for pcrel
 * and aligned); @data_base the datarel base, 0 when unknown. With @need false
 * the value is only skipped, so bases and indirection do not matter.
 * Returns 0, or -1 with *why set.
 */
static int rd_encoded(struct cur *c, const struct conv *x, uint8_t enc, uint64_t addr,
		      uint64_t data_base, bool need, uint64_t *out, const char **why)
{
	uint64_t field, v;

	if (enc == PE_OMIT) {
		*why = "pointer encoding DW_EH_PE_omit where a pointer is required";
		return -1;
	}
	if (PE_APPL(enc) == PE_ALIGNED) {
		uint64_t at = addr + c->off;

		skip(c, (8 - (at & 7)) & 7);
		if (PE_FORMAT(enc) != PE_ABSPTR) {
			*why = "DW_EH_PE_aligned with a format other than absptr";
			return -1;
		}
	}
	field = addr + c->off;
	switch (PE_FORMAT(enc)) {
	case PE_ABSPTR: v = rd_fixed(c, 8); break;
	case PE_ULEB128: v = rd_uleb(c); break;
	case PE_UDATA2: v = rd_fixed(c, 2); break;
	case PE_UDATA4: v = rd_fixed(c, 4); break;
	case PE_UDATA8: v = rd_fixed(c, 8); break;
	case PE_SLEB128: v = (uint64_t)rd_sleb(c); break;
	case PE_SDATA2: v = (uint64_t)(int64_t)(int16_t)rd_fixed(c, 2); break;
	case PE_SDATA4: v = (uint64_t)(int64_t)(int32_t)rd_fixed(c, 4); break;
	case PE_SDATA8: v = rd_fixed(c, 8); break;
	default:
		*why = "unknown pointer format";
		return -1;
	}
	if (c->bad) {
		*why = "pointer runs past the end of its entry";
		return -1;
	}
	if (!need)
		return 0;
	switch (PE_APPL(enc)) {
	case 0:
	case PE_ALIGNED:
		break;
	case PE_PCREL:
		v += field;
		break;
	case PE_TEXTREL:
		if (!x->in->text_base) {
			*why = "DW_EH_PE_textrel pointer without a text base";
			return -1;
		}
		v += x->in->text_base;
		break;
	case PE_DATAREL:
		if (!data_base) {
			*why = "DW_EH_PE_datarel pointer without a data base";
			return -1;
		}
		v += data_base;
		break;
	default:
		*why = "pointer application DW_EH_PE_funcrel or unknown";
		return -1;
	}
	if (enc & PE_INDIRECT) {
		*why = "DW_EH_PE_indirect function address (needs relocated memory)";
		return -1;
	}
	*out = v;
	return 0;
}

static bool format_ok(uint8_t enc)
{
	switch (PE_FORMAT(enc)) {
	case PE_ABSPTR: case PE_ULEB128: case PE_UDATA2: case PE_UDATA4: case PE_UDATA8:
	case PE_SLEB128: case PE_SDATA2: case PE_SDATA4: case PE_SDATA8:
		return enc != PE_OMIT;
	default:
		return false;
	}
}

/* A range's size field: only the format part of the encoding applies. */
static int rd_range(struct cur *c, uint8_t enc, uint64_t *out, const char **why)
{
	switch (PE_FORMAT(enc)) {
	case PE_ABSPTR: *out = rd_fixed(c, 8); break;
	case PE_ULEB128: *out = rd_uleb(c); break;
	case PE_UDATA2:
	case PE_SDATA2: *out = rd_fixed(c, 2); break;
	case PE_UDATA4:
	case PE_SDATA4: *out = rd_fixed(c, 4); break;
	case PE_UDATA8:
	case PE_SDATA8: *out = rd_fixed(c, 8); break;
	case PE_SLEB128: *out = (uint64_t)rd_sleb(c); break;
	default:
		*why = "unknown pointer format";
		return -1;
	}
	if (c->bad) {
		*why = "address range runs past the end of its entry";
		return -1;
	}
	return 0;
}

/* One .eh_frame entry's framing. */
struct entry {
	size_t off;		/* of the length field */
	size_t id_off;		/* of the CIE id / CIE pointer */
	size_t body;		/* after the id */
	size_t end;
	uint64_t id;
	bool terminator;	/* length 0 */
};

/* Read the entry at @off. Returns 0, or -1 when its length runs past the section. */
static int read_entry(const struct conv *x, size_t off, struct entry *e)
{
	struct cur c = { x->in->data, off, x->in->size, x->swap, false };
	uint64_t len = rd_fixed(&c, 4);
	bool dwarf64 = false;

	if (c.bad)
		return -1;
	e->off = off;
	e->terminator = len == 0;
	if (e->terminator) {
		e->end = c.off;
		return 0;
	}
	if (len == 0xffffffff) {
		len = rd_fixed(&c, 8);
		dwarf64 = true;
	}
	if (c.bad || len > c.end - c.off)
		return -1;
	e->end = c.off + len;
	c.end = e->end;
	e->id_off = c.off;
	e->id = rd_fixed(&c, dwarf64 ? 8 : 4);
	if (c.bad)
		return -1;
	e->body = c.off;
	return 0;
}

/* ---- the CFI interpreter ---- */

static struct rule *column(struct run *r, uint64_t reg)
{
	if (reg == r->cie->ra_col)
		return &r->st.ra;
	if (reg == r->x->fp_col)
		return &r->st.fp;
	if (reg == r->x->sp_col)
		return &r->st.sp;
	return NULL;
}

static void set_rule(struct run *r, uint64_t reg, uint8_t kind, uint64_t reg2, int64_t off,
		     const uint8_t *expr, size_t expr_len)
{
	struct rule *rule = column(r, reg);

	if (rule)
		*rule = (struct rule){ kind, reg2, off, expr, expr_len };
}

/* @v (from a uleb or sleb) times the data alignment factor, or R_BAD. */
static void set_offset_rule(struct run *r, uint64_t reg, uint8_t kind, int64_t v)
{
	int64_t off;

	if (__builtin_mul_overflow(v, r->cie->daf, &off))
		set_rule(r, reg, R_BAD, 0, 0, NULL, 0);
	else
		set_rule(r, reg, kind, 0, off, NULL, 0);
}

static void set_cfa(struct run *r, uint64_t reg, int64_t off, bool ok)
{
	r->st.cfa_kind = ok ? CFA_RULE_REG : CFA_RULE_BAD;
	r->st.cfa_reg = reg;
	r->st.cfa_off = off;
	r->st.cfa_expr = NULL;
	r->st.cfa_expr_len = 0;
}

/* A uleb operand that must be a non-negative int64. */
static int64_t uleb_signed(struct cur *c, bool *ok)
{
	uint64_t v = rd_uleb(c);

	*ok = v <= INT64_MAX;
	return (int64_t)v;
}

static bool row_equal(const struct sfu_row *a, const struct sfu_row *b)
{
	return a->flags == b->flags && !memcmp(&a->cfa, &b->cfa, sizeof(a->cfa)) &&
	       !memcmp(&a->ra, &b->ra, sizeof(a->ra)) && !memcmp(&a->fp, &b->fp, sizeof(a->fp));
}


/* A register as a loc of @kind with @off; false when it does not fit the model's fields. */
static bool reg_loc(const struct conv *x, uint64_t reg, int64_t off, uint8_t kind,
		    struct sfu_loc *loc)
{
	if (reg > UINT16_MAX || off < INT32_MIN || off > INT32_MAX)
		return false;
	memset(loc, 0, sizeof(*loc));
	sframe_loc_set_reg(loc, x->abi, (uint16_t)reg);
	loc->kind = kind;
	loc->offset = (int32_t)off;
	return true;
}

/* `DW_OP_breg<reg> off`, then `DW_OP_deref` when @deref is non-NULL and present, and nothing else. */
static bool expr_breg(const struct conv *x, const uint8_t *e, size_t len, uint64_t *reg,
		      int64_t *off, bool *deref)
{
	struct cur c = { e, 0, len, x->swap, false };
	uint8_t op = rd8(&c);

	if (op >= OP_BREG0 && op <= OP_BREG31)
		*reg = op - OP_BREG0;
	else if (op == OP_BREGX)
		*reg = rd_uleb(&c);
	else
		return false;
	*off = rd_sleb(&c);
	if (deref) {
		*deref = c.off < c.end && c.buf[c.off] == OP_DEREF;
		if (*deref)
			c.off++;
	}
	return !c.bad && c.off == c.end;
}

/* A small constant: DW_OP_lit<n> or DW_OP_const1u n. */
static bool expr_small_const(struct cur *c, uint32_t *v)
{
	uint8_t op = rd8(c);

	if (op >= OP_LIT0 && op <= OP_LIT31)
		*v = op - OP_LIT0;
	else if (op == OP_CONST1U)
		*v = rd8(c);
	else
		return false;
	return !c->bad;
}

/*
 * The CFA expression ld writes for the x86-64 .plt:
 *   breg7 (rsp) base; breg16 (rip) 0; lit mask; and; lit from; ge; lit shift; shl; plus
 * that is SP + base, plus 1 << shift once (pc & mask) >= from.
 */
static bool expr_plt(const struct conv *x, const uint8_t *e, size_t len, struct plt_rule *p)
{
	struct cur c = { e, 0, len, x->swap, false };
	int64_t base;

	if (!x->amd64 || rd8(&c) != OP_BREG0 + 7)
		return false;
	base = rd_sleb(&c);
	if (rd8(&c) != OP_BREG0 + 16 || rd_sleb(&c) != 0 || !expr_small_const(&c, &p->mask) ||
	    rd8(&c) != OP_AND || !expr_small_const(&c, &p->from) || rd8(&c) != OP_GE ||
	    !expr_small_const(&c, &p->shift) || rd8(&c) != OP_SHL || rd8(&c) != OP_PLUS ||
	    c.bad || c.off != c.end)
		return false;
	/* a block of mask + 1 bytes, a power of two that SFrame's repeat size can hold */
	if (p->mask == 0 || p->mask > 0xff || ((p->mask + 1) & p->mask) || p->from > p->mask ||
	    p->shift > 16 || base < INT32_MIN || base + (1 << p->shift) > INT32_MAX)
		return false;
	p->base = (int32_t)base;
	return true;
}

/*
 * RA or FP rule as a loc. @is_ra picks the return address's conventions.
 * Returns false when the model has no exact form for the rule.
 */
static bool rule_loc(const struct run *r, const struct rule *rule, bool is_ra, struct sfu_loc *loc)
{
	const struct conv *x = r->x;
	uint64_t own = is_ra ? r->cie->ra_col : x->fp_col, reg;
	int64_t off;
	bool deref;

	memset(loc, 0, sizeof(*loc));
	switch (rule->kind) {
	case R_UNSET:
	case R_SAME:
		/* an unsaved AArch64 return address is still in its register, the link register */
		if (is_ra && !x->amd64)
			return reg_loc(x, own, 0, SFU_LOC_IN_REG, loc);
		loc->kind = SFU_LOC_SAME;
		loc->reg = is_ra ? 0 : SFU_REG_FP;
		return true;
	case R_OFFSET:
		if (rule->off < INT32_MIN || rule->off > INT32_MAX)
			return false;
		loc->kind = SFU_LOC_AT_CFA;
		loc->offset = (int32_t)rule->off;
		return true;
	case R_REG:
		if (rule->reg == own) {
			struct rule same = { .kind = R_SAME };

			return rule_loc(r, &same, is_ra, loc);
		}
		return reg_loc(x, rule->reg, 0, SFU_LOC_IN_REG, loc);
	case R_EXPR:
		if (!expr_breg(x, rule->expr, rule->expr_len, &reg, &off, NULL))
			return false;
		return reg_loc(x, reg, off, SFU_LOC_DEREF, loc);
	case R_VAL_EXPR:
		if (!expr_breg(x, rule->expr, rule->expr_len, &reg, &off, &deref) || off || deref)
			return false;
		return reg_loc(x, reg, 0, SFU_LOC_IN_REG, loc);
	default:
		/* undefined FP, value rules and operands out of range */
		return false;
	}
}

/* The SP column: the model takes the caller's SP to be the CFA. */
static bool sp_rule_ok(const struct run *r, const struct sfu_loc *cfa)
{
	const struct rule *sp = &r->st.sp;
	struct sfu_loc addr;
	uint64_t reg;
	int64_t off;

	switch (sp->kind) {
	case R_UNSET:
		return true;
	case R_VAL_OFFSET:
		return sp->off == 0;
	case R_EXPR:
		/* saved where the CFA is loaded from: a signal frame */
		if (!expr_breg(r->x, sp->expr, sp->expr_len, &reg, &off, NULL) ||
		    !reg_loc(r->x, reg, off, SFU_LOC_DEREF, &addr))
			return false;
		return !memcmp(&addr, cfa, sizeof(addr));
	default:
		return false;
	}
}

/*
 * The row the current state gives. Sets *is_plt (leaving @row alone) when the
 * CFA is the .plt expression.
 */
static void state_row(struct run *r, struct sfu_row *row, bool *is_plt, struct plt_rule *plt)
{
	const struct cfi_state *s = &r->st;
	const struct conv *x = r->x;
	bool cfa_ok = false, ok;
	uint64_t reg;
	int64_t off;
	bool deref;

	*is_plt = false;
	memset(row, 0, sizeof(*row));
	row->fp.kind = SFU_LOC_SAME;
	row->fp.reg = SFU_REG_FP;
	/* an undefined return address is the outermost frame, whatever the rest says */
	if (s->ra.kind == R_UNDEF) {
		row->cfa.kind = SFU_LOC_UNDEFINED;
		row->ra.kind = SFU_LOC_UNDEFINED;
		return;
	}
	if (s->cfa_kind == CFA_RULE_REG) {
		cfa_ok = reg_loc(x, s->cfa_reg, s->cfa_off, SFU_LOC_REG_OFFSET, &row->cfa);
	} else if (s->cfa_kind == CFA_RULE_EXPR) {
		if (expr_plt(x, s->cfa_expr, s->cfa_expr_len, plt)) {
			*is_plt = true;
			return;
		}
		cfa_ok = expr_breg(x, s->cfa_expr, s->cfa_expr_len, &reg, &off, &deref) &&
			 reg_loc(x, reg, off, deref ? SFU_LOC_DEREF : SFU_LOC_REG_OFFSET, &row->cfa);
	}
	ok = cfa_ok && rule_loc(r, &s->ra, true, &row->ra) && rule_loc(r, &s->fp, false, &row->fp) &&
	     sp_rule_ok(r, &row->cfa);
	if (ok) {
		if (s->ra_signed)
			row->flags |= SFU_ROW_MANGLED_RA;
		return;
	}
	/* the canonical unusable row: the CFA when known, nothing else (see the encoder) */
	if (!cfa_ok) {
		memset(&row->cfa, 0, sizeof(row->cfa));
		row->cfa.kind = SFU_LOC_REG_OFFSET;
		row->cfa.reg = SFU_REG_SP;
	}
	memset(&row->ra, 0, sizeof(row->ra));
	row->ra.kind = SFU_LOC_UNDEFINED;
	memset(&row->fp, 0, sizeof(row->fp));
	row->fp.kind = SFU_LOC_SAME;
	row->fp.reg = SFU_REG_FP;
	row->flags = SFU_ROW_UNUSABLE;
}

static int push_row(struct conv *x, const struct sfu_row *row)
{
	if (VEC_RESERVE(x->rows, x->rows_cap, x->num_rows + 1, 64))
		return x->err = -ENOMEM;
	x->rows[x->num_rows++] = *row;
	return 0;
}

/* Record the state in effect from r->loc on, when it differs from the last row. */
static int flush(struct run *r)
{
	struct conv *x = r->x;
	struct plt_rule plt;
	struct sfu_row row;
	bool is_plt;

	if (r->loc >= r->range)
		return 0;
	state_row(r, &row, &is_plt, &plt);
	if (r->plt) {
		/* one expression for the rest of the function, or nothing SFrame can hold */
		if (!is_plt || memcmp(&plt, &r->plt_rule, sizeof(plt)))
			r->plt_broken = true;
		return 0;
	}
	if (is_plt) {
		/* a row at this location, from before an advance by 0, is overruled */
		while (x->num_rows > r->first_row && x->rows[x->num_rows - 1].start >= r->loc)
			x->num_rows--;
		r->plt = true;
		r->plt_loc = r->loc;
		r->plt_rule = plt;
		return 0;
	}
	row.start = (uint32_t)r->loc;
	if (x->num_rows > r->first_row && x->rows[x->num_rows - 1].start == row.start) {
		/* an advance by 0: the later state wins */
		x->num_rows--;
	}
	if (x->num_rows > r->first_row && row_equal(&x->rows[x->num_rows - 1], &row))
		return 0;
	return push_row(x, &row);
}

static int advance(struct run *r, uint64_t delta)
{
	uint64_t d;
	int err;

	if (!r->init) {
		r->why = "a location operation in a CIE";
		return -1;
	}
	if ((err = flush(r)))
		return err;
	if (__builtin_mul_overflow(delta, r->cie->caf, &d) || r->loc + d < r->loc ||
	    r->loc + d >= r->range) {
		r->loc = r->range;
		r->done = true;
	} else {
		r->loc += d;
	}
	return 0;
}

/* Run the instructions in [c->off, c->end). Returns 0, -1 with r->why, or -ENOMEM. */
static int execute(struct run *r, struct cur *c)
{
	const struct conv *x = r->x;
	uint64_t reg, reg2, len, v;
	int64_t off;
	bool ok;
	int err;

	while (!r->done && c->off < c->end) {
		uint8_t op = rd8(c);

		switch (op & 0xc0) {
		case CFA_ADVANCE_LOC:
			if ((err = advance(r, op & 0x3f)))
				return err;
			continue;
		case CFA_OFFSET:
			off = uleb_signed(c, &ok);
			if (ok)
				set_offset_rule(r, op & 0x3f, R_OFFSET, off);
			else
				set_rule(r, op & 0x3f, R_BAD, 0, 0, NULL, 0);
			goto check;
		case CFA_RESTORE:
			reg = op & 0x3f;
			goto restore;
		default:
			break;
		}
		switch (op) {
		case CFA_NOP:
			break;
		case CFA_SET_LOC: {
			const char *why = NULL;
			uint64_t addr;

			if (rd_encoded(c, x, r->cie->fde_enc, x->in->addr, x->in->data_base, true,
				       &addr, &why)) {
				r->why = why;
				return -1;
			}
			if (addr < r->start + r->loc) {
				r->why = "DW_CFA_set_loc moves backwards";
				return -1;
			}
			if (!r->init) {
				r->why = "a location operation in a CIE";
				return -1;
			}
			if ((err = flush(r)))
				return err;
			if (addr - r->start >= r->range) {
				r->loc = r->range;
				r->done = true;
			} else {
				r->loc = addr - r->start;
			}
			break;
		}
		case CFA_ADVANCE_LOC1:
			v = rd_fixed(c, 1);
			goto adv;
		case CFA_ADVANCE_LOC2:
			v = rd_fixed(c, 2);
			goto adv;
		case CFA_ADVANCE_LOC4:
			v = rd_fixed(c, 4);
			goto adv;
		case CFA_MIPS_ADVANCE_LOC8:
			v = rd_fixed(c, 8);
adv:
			if (c->bad)
				goto check;
			if ((err = advance(r, v)))
				return err;
			break;
		case CFA_OFFSET_EXTENDED:
			reg = rd_uleb(c);
			off = uleb_signed(c, &ok);
			if (ok)
				set_offset_rule(r, reg, R_OFFSET, off);
			else
				set_rule(r, reg, R_BAD, 0, 0, NULL, 0);
			break;
		case CFA_GNU_NEGATIVE_OFFSET_EXTENDED:
			reg = rd_uleb(c);
			off = uleb_signed(c, &ok);
			if (ok)
				set_offset_rule(r, reg, R_OFFSET, -off);
			else
				set_rule(r, reg, R_BAD, 0, 0, NULL, 0);
			break;
		case CFA_OFFSET_EXTENDED_SF:
			reg = rd_uleb(c);
			set_offset_rule(r, reg, R_OFFSET, rd_sleb(c));
			break;
		case CFA_VAL_OFFSET:
			reg = rd_uleb(c);
			off = uleb_signed(c, &ok);
			if (ok)
				set_offset_rule(r, reg, R_VAL_OFFSET, off);
			else
				set_rule(r, reg, R_BAD, 0, 0, NULL, 0);
			break;
		case CFA_VAL_OFFSET_SF:
			reg = rd_uleb(c);
			set_offset_rule(r, reg, R_VAL_OFFSET, rd_sleb(c));
			break;
		case CFA_RESTORE_EXTENDED:
			reg = rd_uleb(c);
restore:
			if (c->bad)
				goto check;
			if (column(r, reg)) {
				struct rule *dst = column(r, reg);

				/* back to the CIE's rule; inside a CIE, to none */
				if (!r->init)
					*dst = (struct rule){ 0 };
				else if (dst == &r->st.ra)
					*dst = r->init->ra;
				else if (dst == &r->st.fp)
					*dst = r->init->fp;
				else
					*dst = r->init->sp;
			}
			break;
		case CFA_UNDEFINED:
			set_rule(r, rd_uleb(c), R_UNDEF, 0, 0, NULL, 0);
			break;
		case CFA_SAME_VALUE:
			set_rule(r, rd_uleb(c), R_SAME, 0, 0, NULL, 0);
			break;
		case CFA_REGISTER:
			reg = rd_uleb(c);
			reg2 = rd_uleb(c);
			set_rule(r, reg, R_REG, reg2, 0, NULL, 0);
			break;
		case CFA_REMEMBER_STATE:
			if (r->depth == REMEMBER_MAX) {
				r->why = "DW_CFA_remember_state nested too deep";
				return -1;
			}
			if (!r->stack) {
				r->stack = malloc(REMEMBER_MAX * sizeof(*r->stack));
				if (!r->stack)
					return r->x->err = -ENOMEM;
			}
			r->stack[r->depth++] = r->st;
			break;
		case CFA_RESTORE_STATE:
			if (!r->depth) {
				r->why = "DW_CFA_restore_state without a remembered state";
				return -1;
			}
			/* the CFA and every column come back, the location does not */
			r->st = r->stack[--r->depth];
			break;
		case CFA_DEF_CFA:
			reg = rd_uleb(c);
			off = uleb_signed(c, &ok);
			set_cfa(r, reg, off, ok);
			break;
		case CFA_DEF_CFA_SF:
			reg = rd_uleb(c);
			ok = !__builtin_mul_overflow(rd_sleb(c), r->cie->daf, &off);
			set_cfa(r, reg, off, ok);
			break;
		case CFA_LLVM_DEF_ASPACE_CFA:
		case CFA_LLVM_DEF_ASPACE_CFA_SF:
			reg = rd_uleb(c);
			if (op == CFA_LLVM_DEF_ASPACE_CFA)
				off = uleb_signed(c, &ok);
			else
				ok = !__builtin_mul_overflow(rd_sleb(c), r->cie->daf, &off);
			/* only the default address space is memory the unwinder can read */
			v = rd_uleb(c);
			set_cfa(r, reg, off, ok && v == 0);
			break;
		case CFA_DEF_CFA_REGISTER:
			reg = rd_uleb(c);
			/* an expression has no offset to keep: as the DWARF standard, refuse */
			set_cfa(r, reg, r->st.cfa_off, r->st.cfa_kind == CFA_RULE_REG);
			break;
		case CFA_DEF_CFA_OFFSET:
			off = uleb_signed(c, &ok);
			set_cfa(r, r->st.cfa_reg, off, ok && r->st.cfa_kind == CFA_RULE_REG);
			break;
		case CFA_DEF_CFA_OFFSET_SF:
			ok = !__builtin_mul_overflow(rd_sleb(c), r->cie->daf, &off);
			set_cfa(r, r->st.cfa_reg, off, ok && r->st.cfa_kind == CFA_RULE_REG);
			break;
		case CFA_DEF_CFA_EXPRESSION:
			len = rd_uleb(c);
			if (c->bad || len > c->end - c->off)
				goto truncated;
			r->st.cfa_kind = CFA_RULE_EXPR;
			r->st.cfa_expr = c->buf + c->off;
			r->st.cfa_expr_len = len;
			r->st.cfa_off = 0;
			c->off += len;
			break;
		case CFA_EXPRESSION:
		case CFA_VAL_EXPRESSION:
			reg = rd_uleb(c);
			len = rd_uleb(c);
			if (c->bad || len > c->end - c->off)
				goto truncated;
			set_rule(r, reg, op == CFA_EXPRESSION ? R_EXPR : R_VAL_EXPR, 0, 0,
				 c->buf + c->off, len);
			c->off += len;
			break;
		case CFA_GNU_ARGS_SIZE:
			/* bytes of outgoing arguments: the CFA rule already accounts for them */
			rd_uleb(c);
			break;
		case CFA_AARCH64_NEGATE_RA_STATE:
		case CFA_AARCH64_NEGATE_RA_STATE_WITH_PC:
			/* on other machines 0x2d is SPARC's DW_CFA_GNU_window_save */
			if (x->amd64) {
				r->why = "DW_CFA_GNU_window_save on x86-64";
				return -1;
			}
			r->st.ra_signed = !r->st.ra_signed;
			break;
		default:
			r->why = "unknown DW_CFA operation";
			return -1;
		}
check:
		if (c->bad)
			goto truncated;
	}
	return 0;
truncated:
	r->why = "instruction runs past the end of its entry";
	return -1;
}

/* ---- CIEs ---- */

static size_t slot_of(uint64_t off, size_t cap)
{
	return (size_t)((off * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static int cie_slots_grow(struct conv *x)
{
	size_t cap = x->slots_cap ? x->slots_cap * 2 : 64;
	uint32_t *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return x->err = -ENOMEM;
	for (size_t i = 0; i < x->num_cies; i++) {
		size_t s = slot_of(x->cies[i].off, cap);

		while (slots[s])
			s = (s + 1) & (cap - 1);
		slots[s] = (uint32_t)i + 1;
	}
	free(x->cie_slots);
	x->cie_slots = slots;
	x->slots_cap = cap;
	return 0;
}

static void parse_cie(struct conv *x, size_t off, struct cie *cie)
{
	const struct sfu_eh_frame *in = x->in;
	struct entry e;
	struct cur c;
	const char *aug, *why = NULL;
	size_t aug_len, insns;
	uint8_t version;
	struct run r;
	int err;

	memset(cie, 0, sizeof(*cie));
	cie->off = off;
	if (read_entry(x, off, &e) || e.terminator) {
		cie->bad = "CIE pointer to a bad entry";
		return;
	}
	if (e.id != 0) {
		cie->bad = "CIE pointer to an entry that is not a CIE";
		return;
	}
	c = (struct cur){ in->data, e.body, e.end, x->swap, false };
	version = rd8(&c);
	if (version != 1 && version != 3 && version != 4) {
		cie->bad = "unknown CIE version";
		return;
	}
	aug = (const char *)c.buf + c.off;
	aug_len = strnlen(aug, c.end - c.off);
	if (aug_len == c.end - c.off) {
		cie->bad = "CIE augmentation string runs past the end of the CIE";
		return;
	}
	c.off += aug_len + 1;
	if (aug[0] == 'e' && aug[1] == 'h') {
		skip(&c, 8);	/* GCC 2's eh_ptr */
		aug += 2;
	}
	if (version == 4) {
		uint8_t addr_size = rd8(&c), seg_size = rd8(&c);

		if (!c.bad && (addr_size != 8 || seg_size != 0)) {
			cie->bad = "CIE address or segment size not supported";
			return;
		}
	}
	cie->caf = rd_uleb(&c);
	cie->daf = rd_sleb(&c);
	cie->ra_col = version == 1 ? rd8(&c) : rd_uleb(&c);
	if (c.bad) {
		cie->bad = "CIE fields run past the end of the CIE";
		return;
	}
	if (!cie->caf) {
		cie->bad = "CIE code alignment factor of 0";
		return;
	}
	if (cie->ra_col == x->sp_col || cie->ra_col == x->fp_col) {
		cie->bad = "CIE return address column is the stack or frame pointer";
		return;
	}
	cie->fde_enc = PE_ABSPTR;
	insns = c.end;
	if (aug[0] == 'z') {
		uint64_t zlen = rd_uleb(&c);

		if (c.bad || zlen > c.end - c.off) {
			cie->bad = "CIE augmentation data runs past the end of the CIE";
			return;
		}
		insns = c.off + zlen;
		cie->has_z = true;
		c.end = insns;
		for (const char *a = aug + 1; *a; a++) {
			uint64_t ignored;
			uint8_t enc;

			switch (*a) {
			case 'L':
				rd8(&c);	/* LSDA pointers: FDE augmentation data, skipped whole */
				break;
			case 'P':
				enc = rd8(&c);
				if (!c.bad && rd_encoded(&c, x, enc, in->addr, in->data_base, false,
							 &ignored, &why)) {
					cie->bad = why;
					return;
				}
				break;
			case 'R':
				cie->fde_enc = rd8(&c);
				if (!c.bad && !format_ok(cie->fde_enc)) {
					cie->bad = "unknown FDE pointer encoding";
					return;
				}
				break;
			case 'S':
				cie->signal = true;
				break;
			case 'B':
				cie->bkey = true;
				break;
			case 'G':
				break;	/* AArch64 MTE tagged stack frames: nothing to unwind differently */
			default:
				cie->bad = "unknown CIE augmentation";
				return;
			}
			if (c.bad) {
				cie->bad = "CIE augmentation data runs past its length";
				return;
			}
		}
		c.off = insns;
		c.end = e.end;
	} else if (aug[0]) {
		/* without 'z' the size of unknown augmentation data is unknown */
		cie->bad = "unknown CIE augmentation";
		return;
	}

	/* the initial instructions: the state every FDE of this CIE starts from */
	memset(&r, 0, sizeof(r));
	r.x = x;
	r.cie = cie;
	r.range = UINT64_MAX;
	r.st.cfa_kind = CFA_RULE_BAD;	/* no CFA until the CIE defines one */
	err = execute(&r, &c);
	free(r.stack);
	if (err) {
		cie->bad = err == -1 ? r.why : "out of memory";
		return;
	}
	cie->init = r.st;
}

/* The CIE at @off, parsed on first use. NULL when out of memory. */
static const struct cie *get_cie(struct conv *x, size_t off)
{
	size_t s;

	if (x->slots_cap) {
		for (s = slot_of(off, x->slots_cap); x->cie_slots[s]; s = (s + 1) & (x->slots_cap - 1))
			if (x->cies[x->cie_slots[s] - 1].off == off)
				return &x->cies[x->cie_slots[s] - 1];
	}
	if ((x->num_cies + 1) * 2 > x->slots_cap && cie_slots_grow(x))
		return NULL;
	if (x->num_cies >= UINT32_MAX - 1 ||
	    VEC_RESERVE(x->cies, x->cies_cap, x->num_cies + 1, 64)) {
		x->err = -ENOMEM;
		return NULL;
	}
	parse_cie(x, off, &x->cies[x->num_cies]);
	if (!x->cies[x->num_cies].bad)
		x->st->cies++;
	for (s = slot_of(off, x->slots_cap); x->cie_slots[s]; s = (s + 1) & (x->slots_cap - 1))
		;
	x->cie_slots[s] = (uint32_t)++x->num_cies;
	return &x->cies[x->num_cies - 1];
}

/* ---- FDEs ---- */

/* Is @row what the default (non-flexible) FRE can say for this ABI? */
static bool row_is_default(const struct conv *x, const struct sfu_row *row)
{
	bool untracked;

	if (row->flags & SFU_ROW_UNUSABLE)
		return false;
	if (row->ra.kind == SFU_LOC_UNDEFINED)
		return true;
	if (row->cfa.kind != SFU_LOC_REG_OFFSET ||
	    (row->cfa.reg != SFU_REG_SP && row->cfa.reg != SFU_REG_FP))
		return false;
	if (row->fp.kind != SFU_LOC_SAME && row->fp.kind != SFU_LOC_AT_CFA)
		return false;
	if (x->amd64)
		return row->ra.kind == SFU_LOC_AT_CFA && row->ra.offset == -8;
	untracked = row->ra.kind == SFU_LOC_IN_REG && row->ra.reg == SFU_REG_RA &&
		    row->ra.offset == 0;
	/* after an untracked RA the default FRE has no place for the FP */
	return row->ra.kind == SFU_LOC_AT_CFA || (untracked && row->fp.kind == SFU_LOC_SAME);
}

static int add_func(struct conv *x, const struct func *fn)
{
	bool flex = false;

	if (!fn->num_rows)
		return 0;
	for (size_t k = 0; k < fn->num_rows; k++)
		if (!row_is_default(x, &x->rows[fn->first_row + k]))
			flex = true;
	for (size_t k = 0; flex && k < fn->num_rows; k++)
		x->rows[fn->first_row + k].flags |= SFU_ROW_FLEX;
	if (VEC_RESERVE(x->funcs, x->funcs_cap, x->num_funcs + 1, 64))
		return x->err = -ENOMEM;
	x->funcs[x->num_funcs++] = *fn;
	return 0;
}

/* An unusable row at @loc, replacing whatever the FDE had from there on. */
static int cut_at(struct run *r, uint64_t loc)
{
	struct conv *x = r->x;
	struct sfu_row row;

	while (x->num_rows > r->first_row && x->rows[x->num_rows - 1].start >= loc)
		x->num_rows--;
	memset(&row, 0, sizeof(row));
	row.start = (uint32_t)loc;
	row.flags = SFU_ROW_UNUSABLE;
	row.cfa.kind = SFU_LOC_REG_OFFSET;
	row.cfa.reg = SFU_REG_SP;
	row.ra.kind = SFU_LOC_UNDEFINED;
	row.fp.kind = SFU_LOC_SAME;
	row.fp.reg = SFU_REG_FP;
	if (x->num_rows > r->first_row && row_equal(&x->rows[x->num_rows - 1], &row))
		return 0;
	return push_row(x, &row);
}

/* The rows of one FDE become one function, or two for the .plt. */
static int finish_fde(struct run *r)
{
	struct conv *x = r->x;
	struct func fn = {
		.start = r->start,
		.size = (uint32_t)r->range,
		.fde_type = SFU_FDE_PCINC,
		.pauth_key = r->cie->bkey,
		.signal_frame = r->cie->signal,
		.first_row = r->first_row,
	};
	const struct plt_rule *p = &r->plt_rule;
	uint64_t block_start = r->start + r->plt_loc;
	int err;

	if (r->plt && (r->plt_broken || block_start % (p->mask + 1))) {
		/* an expression that depends on where the block starts, or that changes */
		if ((err = cut_at(r, r->plt_loc)))
			return err;
		r->plt = false;
	}
	if (!r->plt) {
		fn.num_rows = x->num_rows - r->first_row;
		return add_func(x, &fn);
	}

	/* the first part (PLT0), as it is; then the blocks, repeating every mask + 1 bytes */
	fn.size = (uint32_t)r->plt_loc;
	fn.num_rows = x->num_rows - r->first_row;
	if ((err = add_func(x, &fn)))
		return err;
	fn = (struct func){
		.start = block_start,
		.size = (uint32_t)(r->range - r->plt_loc),
		.fde_type = SFU_FDE_PCMASK,
		.rep_size = (uint8_t)(p->mask + 1),
		.first_row = x->num_rows,
	};
	for (int step = p->from ? 0 : 1; step < 2; step++) {
		struct sfu_row row = {
			.start = step ? p->from : 0,
			.cfa = { .kind = SFU_LOC_REG_OFFSET, .reg = SFU_REG_SP,
				 .offset = p->base + (step ? (1 << p->shift) : 0) },
			.ra = { .kind = SFU_LOC_AT_CFA, .offset = -8 },
			.fp = { .kind = SFU_LOC_SAME, .reg = SFU_REG_FP },
		};

		if ((err = push_row(x, &row)))
			return err;
	}
	fn.num_rows = x->num_rows - fn.first_row;
	return add_func(x, &fn);
}

/*
 * Convert the FDE at @off. @want is the start the search table gave, or
 * UINT64_MAX when walking. Problems are counted and noted; only -ENOMEM fails.
 */
static int convert_fde(struct conv *x, size_t off, uint64_t want)
{
	const struct sfu_eh_frame *in = x->in;
	const struct cie *cie;
	const char *why = NULL;
	uint64_t start, range;
	struct entry e;
	struct run r;
	struct cur c;
	int err;

	x->st->fdes++;
	if (read_entry(x, off, &e) || e.terminator || e.id == 0) {
		note(x, "FDE at .eh_frame+%#zx: not an FDE", off);
		goto skipped;
	}
	if (e.id > e.id_off) {
		note(x, "FDE at .eh_frame+%#zx: CIE pointer before the section", off);
		goto skipped;
	}
	cie = get_cie(x, e.id_off - e.id);
	if (!cie)
		return x->err;
	if (cie->bad) {
		note(x, "FDE at .eh_frame+%#zx: CIE at %#llx: %s", off,
		     (unsigned long long)(e.id_off - e.id), cie->bad);
		goto skipped;
	}
	c = (struct cur){ in->data, e.body, e.end, x->swap, false };
	if (rd_encoded(&c, x, cie->fde_enc, in->addr, in->data_base, true, &start, &why) ||
	    rd_range(&c, cie->fde_enc, &range, &why)) {
		note(x, "FDE at .eh_frame+%#zx: %s", off, why);
		goto skipped;
	}
	if (want != UINT64_MAX && start != want) {
		note(x, "FDE at .eh_frame+%#zx: starts at %#llx, the search table says %#llx", off,
		     (unsigned long long)start, (unsigned long long)want);
		goto skipped;
	}
	/* ld leaves FDEs of discarded code behind with a start of 0 */
	if (!range || (!start && want == UINT64_MAX))
		return 0;
	if (range > UINT32_MAX || start + range < start) {
		note(x, "FDE at .eh_frame+%#zx: range of %#llx bytes too large", off,
		     (unsigned long long)range);
		goto skipped;
	}
	if (cie->has_z) {
		uint64_t zlen = rd_uleb(&c);

		skip(&c, zlen);
		if (c.bad) {
			note(x, "FDE at .eh_frame+%#zx: augmentation data runs past the end", off);
			goto skipped;
		}
	}

	memset(&r, 0, sizeof(r));
	r.x = x;
	r.cie = cie;
	r.start = start;
	r.range = range;
	r.st = cie->init;
	r.init = &cie->init;
	r.first_row = x->num_rows;
	err = execute(&r, &c);
	free(r.stack);
	if (err == -ENOMEM)
		return err;
	if (err) {
		/* what the program said up to here stands; from here on nothing is known */
		x->st->fdes_cut++;
		note(x, "FDE at .eh_frame+%#zx (function %#llx): %s", off,
		     (unsigned long long)start, r.why);
		if (r.plt)
			r.plt_broken = true;
		else if ((err = cut_at(&r, r.loc)))
			return err;
	} else if ((err = flush(&r))) {
		return err;
	}
	if (x->num_rows - r.first_row > ROWS_PER_FUNC_MAX) {
		x->num_rows = r.first_row;
		note(x, "FDE at .eh_frame+%#zx: more than %d rows", off, ROWS_PER_FUNC_MAX);
		goto skipped;
	}
	if (cie->signal)
		x->st->signal_frames++;
	return finish_fde(&r);

skipped:
	x->st->fdes_skipped++;
	return 0;
}

/* ---- enumeration ---- */

struct hdr_entry {
	uint64_t loc;
	uint64_t fde;
};

/*
 * The FDEs .eh_frame_hdr's search table lists. Returns 1 with the entries,
 * 0 when there is no usable table (then .eh_frame is walked), -ENOMEM.
 */
static int read_hdr(struct conv *x, struct hdr_entry **out, size_t *count)
{
	const struct sfu_eh_frame *in = x->in;
	struct cur c = { in->hdr, 0, in->hdr_size, x->swap, false };
	uint8_t version, ptr_enc, count_enc, table_enc;
	uint64_t eh_frame, n;
	struct hdr_entry *t;
	const char *why;

	if (!in->hdr || !in->hdr_size)
		return 0;
	version = rd8(&c);
	ptr_enc = rd8(&c);
	count_enc = rd8(&c);
	table_enc = rd8(&c);
	if (c.bad || version != 1) {
		note(x, ".eh_frame_hdr: bad header, walking .eh_frame");
		return 0;
	}
	if (rd_encoded(&c, x, ptr_enc, in->hdr_addr, in->hdr_addr, true, &eh_frame, &why)) {
		note(x, ".eh_frame_hdr: %s, walking .eh_frame", why);
		return 0;
	}
	if (eh_frame != in->addr) {
		note(x, ".eh_frame_hdr points at %#llx, not at .eh_frame, walking .eh_frame",
		     (unsigned long long)eh_frame);
		return 0;
	}
	if (count_enc == PE_OMIT || table_enc == PE_OMIT)
		return 0;
	if (rd_encoded(&c, x, count_enc, in->hdr_addr, in->hdr_addr, true, &n, &why)) {
		note(x, ".eh_frame_hdr: %s, walking .eh_frame", why);
		return 0;
	}
	/* every entry takes two bytes at least: a larger count is a lie */
	if (n > (c.end - c.off) / 2) {
		note(x, ".eh_frame_hdr: %llu entries cannot fit, walking .eh_frame",
		     (unsigned long long)n);
		return 0;
	}
	t = calloc(n ? n : 1, sizeof(*t));
	if (!t)
		return x->err = -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		if (rd_encoded(&c, x, table_enc, in->hdr_addr, in->hdr_addr, true, &t[i].loc, &why) ||
		    rd_encoded(&c, x, table_enc, in->hdr_addr, in->hdr_addr, true, &t[i].fde, &why)) {
			note(x, ".eh_frame_hdr: entry %llu: %s, walking .eh_frame",
			     (unsigned long long)i, why);
			goto bad;
		}
		if (i && t[i].loc < t[i - 1].loc) {
			note(x, ".eh_frame_hdr: table not sorted at entry %llu, walking .eh_frame",
			     (unsigned long long)i);
			goto bad;
		}
		if (t[i].fde < in->addr || t[i].fde - in->addr >= in->size) {
			note(x, ".eh_frame_hdr: entry %llu points outside .eh_frame, walking .eh_frame",
			     (unsigned long long)i);
			goto bad;
		}
	}
	*out = t;
	*count = n;
	return 1;
bad:
	free(t);
	return 0;
}

static int walk(struct conv *x)
{
	size_t off = 0;
	struct entry e;
	int err;

	while (off < x->in->size) {
		if (read_entry(x, off, &e)) {
			note(x, ".eh_frame+%#zx: entry runs past the end of the section", off);
			x->st->fdes_skipped++;
			return 0;
		}
		/* a zero terminator ends one input's CFI; ld may have placed more after it */
		if (!e.terminator && e.id != 0 && (err = convert_fde(x, off, UINT64_MAX)))
			return err;
		off = e.end;
	}
	return 0;
}

static int func_cmp(const void *a, const void *b)
{
	const struct func *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->first_row < y->first_row ? -1 : x->first_row > y->first_row;
}

static int convert(struct conv *x)
{
	struct hdr_entry *table = NULL;
	size_t count = 0, n = 0;
	int err;

	err = read_hdr(x, &table, &count);
	if (err < 0)
		return err;
	if (err == 1) {
		x->st->used_hdr = true;
		err = 0;
		for (size_t i = 0; i < count; i++) {
			/*
			 * One start listed twice: the first entry wins, as it would in the
			 * end. An FDE has one start, so each FDE is run at most once.
			 */
			if (i && table[i].loc == table[i - 1].loc)
				continue;
			if ((err = convert_fde(x, (size_t)(table[i].fde - x->in->addr), table[i].loc)))
				break;
		}
		free(table);
		if (err)
			return err;
	} else if ((err = walk(x))) {
		return err;
	}

	/* one function per start: the first FDE found for it */
	if (x->num_funcs > 1)
		qsort(x->funcs, x->num_funcs, sizeof(*x->funcs), func_cmp);
	for (size_t i = 0; i < x->num_funcs; i++) {
		if (n && x->funcs[n - 1].start == x->funcs[i].start)
			continue;
		x->funcs[n++] = x->funcs[i];
	}
	x->num_funcs = n;
	return 0;
}

static int setup(struct conv *x, const struct sfu_eh_frame *in, struct sfu_eh_frame_stats *st,
		 struct sfu_diag *diag)
{
	const bool host_be = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;

	memset(x, 0, sizeof(*x));
	memset(st, 0, sizeof(*st));
	x->in = in;
	x->st = st;
	x->swap = in->big_endian != host_be;
	if (!in->data && in->size)
		return diag_set(diag, -EINVAL, ".eh_frame of %zu bytes at NULL", in->size);
	if (!in->hdr && in->hdr_size)
		return diag_set(diag, -EINVAL, ".eh_frame_hdr of %zu bytes at NULL", in->hdr_size);
	switch (in->machine) {
	case EM_X86_64:
		if (in->big_endian)
			return diag_set(diag, -ENOTSUP, "big-endian x86-64");
		x->abi = SFU_SFRAME_ABI_AMD64_LE;
		x->amd64 = true;
		break;
	case EM_AARCH64:
		x->abi = in->big_endian ? SFU_SFRAME_ABI_AARCH64_BE : SFU_SFRAME_ABI_AARCH64_LE;
		break;
	default:
		return diag_set(diag, -ENOTSUP, "no SFrame ABI for ELF machine %u", in->machine);
	}
	x->sp_col = sframe_abi_regs(x->abi)->sp;
	x->fp_col = sframe_abi_regs(x->abi)->fp;
	return 0;
}

static void conv_free(struct conv *x)
{
	free(x->cies);
	free(x->cie_slots);
	free(x->funcs);
	free(x->rows);
}

int sfu_eh_frame_encode(const struct sfu_eh_frame *in, void **out, size_t *out_size,
			struct sfu_eh_frame_stats *stats, struct sfu_diag *diag)
{
	const bool host_be = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
	struct sfu_eh_frame_stats local;
	struct sfu_sframe_func *funcs = NULL;
	struct sfu_sframe_enc_opts opts;
	struct conv x;
	int err;

	if (!stats)
		stats = &local;
	err = setup(&x, in, stats, diag);
	if (err)
		return err;
	err = convert(&x);
	if (err) {
		diag_set(diag, err, "out of memory");
		goto out;
	}
	if (!x.num_funcs && stats->fdes_skipped) {
		err = diag_set(diag, -EBADMSG, "no FDE could be converted: %s", stats->note);
		goto out;
	}
	funcs = calloc(x.num_funcs ? x.num_funcs : 1, sizeof(*funcs));
	if (!funcs) {
		err = diag_set(diag, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < x.num_funcs; i++) {
		const struct func *fn = &x.funcs[i];

		funcs[i] = (struct sfu_sframe_func){
			.start = fn->start,
			.size = fn->size,
			.fde_type = fn->fde_type,
			.pauth_key = fn->pauth_key,
			.rep_size = fn->rep_size,
			.signal_frame = fn->signal_frame,
			.rows = x.rows + fn->first_row,
			.num_rows = fn->num_rows,
		};
		stats->rows += fn->num_rows;
		for (size_t k = 0; k < fn->num_rows; k++)
			if (x.rows[fn->first_row + k].flags & SFU_ROW_UNUSABLE)
				stats->rows_unusable++;
	}
	stats->funcs = x.num_funcs;
	SFU_OPTS_RESET(&opts,
		.version = 3,
		.abi = x.abi,
		.big_endian = host_be,
		.cfa_fixed_ra_offset = x.amd64 ? -8 : 0,
		.addr = 0,
	);
	err = sfu_sframe_encode(&opts, funcs, x.num_funcs, out, out_size, diag);
out:
	free(funcs);
	conv_free(&x);
	return err;
}

struct sfu_sframe *sfu_sframe__from_eh_frame(const struct sfu_eh_frame *in,
					     struct sfu_eh_frame_stats *stats,
					     struct sfu_diag *diag)
{
	size_t size = 0;
	void *buf = NULL;
	int err;

	err = sfu_eh_frame_encode(in, &buf, &size, stats, diag);
	if (err) {
		errno = -err;
		return NULL;
	}
	return sframe_new_owned(buf, size, 0, diag);
}
