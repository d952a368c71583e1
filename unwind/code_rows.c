/* SPDX-License-Identifier: BSD-2-Clause */
/* SFrame rows for machine code without unwind info: every path from the entry, decoded with capstone. */
#include <capstone/capstone.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sfunwind/code.h"
#include "sframe_internal.h"

/* The largest stack height (CFA - SP or CFA - FP) followed: JIT stubs keep small frames. */
#define FRAME_MAX	(64 * 1024)
#define SLOT		8	/* a pushed register, a saved FP or return address */
#define SP_UNKNOWN	(-1)
#define HEIGHT_BAD	INT32_MAX	/* outside [0, FRAME_MAX] */

/*
 * The frame before one instruction, as distances below the CFA. A frame
 * pointer is set up when FP points into this frame; the caller's FP is then
 * saved, since FP no longer holds it. Every field is an int32_t, so that
 * memcmp() compares frames.
 */
struct frame {
	int32_t sp;		/* CFA - SP; SP_UNKNOWN only while a frame pointer is set up */
	int32_t fp;		/* CFA - FP while the frame pointer is set up, else 0 */
	int32_t fp_saved;	/* the caller's FP is at CFA - fp_saved; 0 while FP holds it */
	int32_t ra_saved;	/* the return address is at CFA - ra_saved (x86-64: always 8);
				   0 while the link register holds it (AArch64) */
	int32_t ra_signed;	/* AArch64: the return address carries a PAC */
};

/* What one byte of the code is to the walk. */
enum byte_kind {
	B_UNSEEN = 0,		/* no path reached it (yet) */
	B_START,		/* a reached instruction starts here */
	B_INSIDE,		/* inside a reached instruction */
};

struct byte_info {
	struct frame in;	/* B_START: the frame before the instruction */
	uint8_t kind;		/* enum byte_kind */
	uint8_t len;		/* B_START: the instruction's length, 0 until decoded */
	bool queued;		/* in the walk's todo list */
};

/* Where execution goes after one instruction, and with what frame. */
struct flow {
	struct frame out;
	bool next;		/* falls through to the following instruction */
	bool jump;		/* goes to target (too) */
	uint64_t target;
};

struct walk;

#define ARCH_COUNT	2

/* What differs between architectures. */
struct arch {
	const char *name;
	unsigned index;		/* in disasms[] */
	cs_arch cs_arch;
	cs_mode cs_mode;
	uint8_t abi;		/* enum sfu_sframe_abi */
	int8_t cfa_fixed_ra_offset;
	int32_t sp_align;	/* what the ABI keeps the SP a multiple of */
	struct frame entry;	/* at the function's first instruction */
	/* the instruction just decoded: where it goes, and the frame after it */
	int (*step)(struct walk *w, const struct frame *in, struct flow *fl);
};

struct walk {
	const struct arch *arch;
	const uint8_t *code;
	size_t len;
	uint64_t addr;
	csh cs;
	cs_insn *insn;
	struct byte_info *bytes;
	uint32_t *todo;		/* reached instructions to go through (again): each queued once at a time */
	size_t num_todo;
	uint32_t insns;
	int pauth_key;		/* AArch64: -1 until a PAC instruction, then 0 (key A) or 1 (key B) */
	char why[160];
};

static int fail(struct walk *w, uint64_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The code cannot be analysed exactly: say why, at which instruction. */
static int fail(struct walk *w, uint64_t at, const char *fmt, ...)
{
	char what[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(w->why, sizeof(w->why), "+%#llx: %s", (unsigned long long)(at - w->addr), what);
	return -ENOENT;
}

static bool has_group(const cs_insn *insn, uint8_t group)
{
	for (uint8_t i = 0; i < insn->detail->groups_count; i++)
		if (insn->detail->groups[i] == group)
			return true;
	return false;
}

/* A distance below the CFA; out of range (above the CFA, too far below), one check_frame() refuses. */
static int32_t height(int64_t v)
{
	return v < 0 || v > FRAME_MAX ? HEIGHT_BAD : (int32_t)v;
}

/*
 * FP set to CFA - @v: a frame pointer if it points into the frame, below
 * where the return address and a saved FP can be; else (a pointer to a
 * local or to an argument) 0, FP holding nothing the rows use.
 */
static int32_t frame_pointer(int64_t v)
{
	return v >= 2 * SLOT && v <= FRAME_MAX && v % SLOT == 0 ? (int32_t)v : 0;
}

/*
 * SP moves by @delta (positive: towards the CFA, as a pop). An unknown SP
 * (under a frame pointer) stays unknown.
 */
static void sp_move(struct frame *f, int64_t delta)
{
	if (f->sp != SP_UNKNOWN)
		f->sp = height((int64_t)f->sp - delta);
}

/* SP changed in a way not modelled: only a frame pointer keeps the CFA. */
static int sp_lost(struct walk *w, struct frame *f)
{
	if (!f->fp)
		return fail(w, w->insn->address, "%s %s changes the stack pointer without a frame pointer",
			    w->insn->mnemonic, w->insn->op_str);
	f->sp = SP_UNKNOWN;
	return 0;
}

/* FP is overwritten with something that is not a frame pointer of ours. */
static int fp_lost(struct walk *w, struct frame *f)
{
	if (!f->fp_saved)
		return fail(w, w->insn->address, "%s %s overwrites the caller's frame pointer",
			    w->insn->mnemonic, w->insn->op_str);
	f->fp = 0;
	return 0;
}

/* The frame pointer set from the SP (mov %rsp,%rbp; mov x29, sp): a frame of ours. */
static int fp_from_sp(struct walk *w, struct frame *f, const cs_insn *insn)
{
	if (!f->fp_saved)
		return fp_lost(w, f);
	if (f->sp == SP_UNKNOWN)
		return fail(w, insn->address, "mov %s with the stack height unknown", insn->op_str);
	f->fp = frame_pointer(f->sp);
	return 0;
}

/* The link register is overwritten (AArch64). */
static int ra_lost(struct walk *w, const struct frame *f)
{
	if (!f->ra_saved)
		return fail(w, w->insn->address, "%s %s overwrites the return address in the link register",
			    w->insn->mnemonic, w->insn->op_str);
	return 0;
}

/*
 * A store to [CFA - @at, CFA - @at + @size): the return address and the
 * saved frame pointer must stay where the rows say they are.
 */
static int check_store(struct walk *w, const struct frame *f, int64_t at, int64_t size)
{
	int64_t lo = -at, hi = -at + size;

	if (f->ra_saved && lo < -f->ra_saved + SLOT && hi > -f->ra_saved)
		return fail(w, w->insn->address, "%s %s overwrites the return address",
			    w->insn->mnemonic, w->insn->op_str);
	if (f->fp_saved && lo < -f->fp_saved + SLOT && hi > -f->fp_saved)
		return fail(w, w->insn->address, "%s %s overwrites the saved frame pointer",
			    w->insn->mnemonic, w->insn->op_str);
	return 0;
}

/* ---- x86-64 ---- */

static bool x86_is_sp(unsigned reg)
{
	return reg == X86_REG_RSP || reg == X86_REG_ESP || reg == X86_REG_SP || reg == X86_REG_SPL;
}

static bool x86_is_fp(unsigned reg)
{
	return reg == X86_REG_RBP || reg == X86_REG_EBP || reg == X86_REG_BP || reg == X86_REG_BPL;
}

/* Is operand @i exactly the 64-bit register @reg? */
static bool x86_op_is(const cs_x86 *x, unsigned i, unsigned reg)
{
	return i < x->op_count && x->operands[i].type == X86_OP_REG && x->operands[i].reg == reg;
}

static bool x86_op_imm(const cs_x86 *x, unsigned i, int64_t *imm)
{
	if (i >= x->op_count || x->operands[i].type != X86_OP_IMM)
		return false;
	*imm = x->operands[i].imm;
	return true;
}

/* A memory operand [reg + disp]: no index, no segment. */
static bool x86_op_base_disp(const cs_x86 *x, unsigned i, unsigned reg, int64_t *disp)
{
	const cs_x86_op *op = &x->operands[i];

	if (i >= x->op_count || op->type != X86_OP_MEM || op->mem.base != reg ||
	    op->mem.index != X86_REG_INVALID || op->mem.segment != X86_REG_INVALID)
		return false;
	*disp = op->mem.disp;
	return true;
}

/* `pop %rbp` (also the second half of leave), with @f->sp the slot it loads. */
static int pop_fp(struct walk *w, struct frame *f)
{
	if (f->sp == SP_UNKNOWN)
		return fail(w, w->insn->address, "%s loads the frame pointer from an unknown slot",
			    w->insn->mnemonic);
	if (f->fp_saved == f->sp) {
		f->fp_saved = 0;
		f->fp = 0;
	} else if (fp_lost(w, f)) {
		return -ENOENT;
	}
	sp_move(f, SLOT);
	return 0;
}

/* A store through [SP + disp] or [FP + disp]; those through other registers cannot be placed. */
static int x86_check_store(struct walk *w, const struct frame *f, const cs_x86_op *op)
{
	if (op->mem.index != X86_REG_INVALID || op->mem.segment != X86_REG_INVALID)
		return 0;
	if (op->mem.base == X86_REG_RSP && f->sp != SP_UNKNOWN)
		return check_store(w, f, f->sp - op->mem.disp, op->size ? op->size : SLOT);
	if (op->mem.base == X86_REG_RBP && f->fp)
		return check_store(w, f, f->fp - op->mem.disp, op->size ? op->size : SLOT);
	return 0;
}

/* An instruction with no stack role of its own: only what it writes matters. */
static int x86_other(struct walk *w, struct frame *f)
{
	const cs_insn *insn = w->insn;
	const cs_x86 *x = &insn->detail->x86;
	bool sp_written = false, fp_written = false;
	cs_regs rd, wr;
	uint8_t nrd, nwr;

	if (cs_regs_access(w->cs, insn, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return fail(w, insn->address, "%s %s: no register access information", insn->mnemonic,
			    insn->op_str);
	for (uint8_t i = 0; i < nwr; i++) {
		sp_written |= x86_is_sp(wr[i]);
		fp_written |= x86_is_fp(wr[i]);
	}
	for (uint8_t i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];

		/* an operand of unknown access counts as written */
		if (op->type == X86_OP_REG && (op->access & CS_AC_WRITE || !op->access)) {
			sp_written |= x86_is_sp(op->reg);
			fp_written |= x86_is_fp(op->reg);
		}
		if (op->type == X86_OP_MEM && (op->access & CS_AC_WRITE || !op->access) &&
		    x86_check_store(w, f, op))
			return -ENOENT;
	}
	if (sp_written && sp_lost(w, f))
		return -ENOENT;
	if (fp_written && fp_lost(w, f))
		return -ENOENT;
	return 0;
}

/* Without REX.W, 66-prefixed pushes, pops, calls, returns and jumps move the SP or IP by 2 bytes, or not. */
static bool x86_stack_or_branch(const cs_insn *insn)
{
	switch (insn->id) {
	case X86_INS_PUSH:
	case X86_INS_POP:
	case X86_INS_PUSHF:
	case X86_INS_PUSHFQ:
	case X86_INS_POPF:
	case X86_INS_POPFQ:
	case X86_INS_LEAVE:
	case X86_INS_ENTER:
		return true;
	default:
		return has_group(insn, CS_GRP_CALL) || has_group(insn, CS_GRP_RET) ||
		       has_group(insn, CS_GRP_JUMP) || has_group(insn, CS_GRP_BRANCH_RELATIVE);
	}
}

static int x86_step(struct walk *w, const struct frame *in, struct flow *fl)
{
	const cs_insn *insn = w->insn;
	const cs_x86 *x = &insn->detail->x86;
	struct frame *f = &fl->out;
	int64_t imm, disp;

	*fl = (struct flow){ .out = *in, .next = true };
	/* REX.W wins over 0x66: `data16 data16 rex.W call` is the TLS general-dynamic call */
	if (x->prefix[2] == X86_PREFIX_OPSIZE && !(x->rex & 0x8) && x86_stack_or_branch(insn))
		return fail(w, insn->address, "%s %s with an operand-size prefix", insn->mnemonic,
			    insn->op_str);
	switch (insn->id) {
	case X86_INS_PUSH:
		sp_move(f, -SLOT);
		/* the caller's FP, saved where the rows can find it */
		if (x86_op_is(x, 0, X86_REG_RBP) && !f->fp_saved && f->sp != SP_UNKNOWN)
			f->fp_saved = f->sp;
		return 0;
	case X86_INS_PUSHFQ:
		sp_move(f, -SLOT);
		return 0;
	case X86_INS_POPFQ:
		sp_move(f, SLOT);
		return 0;
	case X86_INS_POP:
		if (x->op_count != 1 || x->operands[0].type != X86_OP_REG)
			break;	/* to memory, addressed after the SP moved: not modelled */
		if (x86_is_sp(x->operands[0].reg))
			return sp_lost(w, f);
		if (x->operands[0].reg == X86_REG_RBP)
			return pop_fp(w, f);
		sp_move(f, SLOT);
		return 0;
	case X86_INS_SUB:
	case X86_INS_ADD:
		if (!x86_op_is(x, 0, X86_REG_RSP) || !x86_op_imm(x, 1, &imm))
			break;
		sp_move(f, insn->id == X86_INS_ADD ? imm : -imm);
		return 0;
	case X86_INS_LEA:
		if (x86_op_is(x, 0, X86_REG_RSP) && x86_op_base_disp(x, 1, X86_REG_RSP, &disp)) {
			sp_move(f, disp);
			return 0;
		}
		if (x86_op_is(x, 0, X86_REG_RSP) && x86_op_base_disp(x, 1, X86_REG_RBP, &disp) && f->fp) {
			/* the epilogue `lea -N(%rbp), %rsp` before popping callee-saved registers */
			f->sp = height(f->fp - disp);
			return 0;
		}
		if (x86_op_is(x, 0, X86_REG_RBP) && x86_op_base_disp(x, 1, X86_REG_RSP, &disp) &&
		    f->sp != SP_UNKNOWN && f->fp_saved) {
			/* a frame pointer set up as `lea N(%rsp), %rbp`, or a pointer to a local */
			f->fp = frame_pointer(f->sp - disp);
			return 0;
		}
		break;
	case X86_INS_MOV:
		if (x86_op_is(x, 0, X86_REG_RBP) && x86_op_is(x, 1, X86_REG_RSP))
			return fp_from_sp(w, f, insn);
		if (x86_op_is(x, 0, X86_REG_RSP) && x86_op_is(x, 1, X86_REG_RBP) && f->fp) {
			f->sp = f->fp;
			return 0;
		}
		break;
	case X86_INS_LEAVE:
		if (!f->fp)
			return sp_lost(w, f);
		f->sp = f->fp;
		return pop_fp(w, f);
	case X86_INS_ENTER:
		/* capstone says nothing of its registers; compilers do not emit it */
		return fail(w, insn->address, "enter is not modelled");
	case X86_INS_CALL:
		/* a call into the function's own body (not its entry) would not return here as a call */
		if (x86_op_imm(x, 0, &imm) && (uint64_t)imm > w->addr && (uint64_t)imm - w->addr < w->len)
			return fail(w, insn->address, "call into the function's own body");
		return 0;
	case X86_INS_RET:
		if (in->sp != SLOT)
			return fail(w, insn->address, in->sp == SP_UNKNOWN ?
				    "returns with the stack height unknown" :
				    "returns with the return address not on top of the stack");
		fl->next = false;
		return 0;
	case X86_INS_JMP:
		fl->next = false;
		/* a direct jump; an indirect one leaves the function (a tail call, a jump table) */
		if (x86_op_imm(x, 0, &imm)) {
			fl->jump = true;
			fl->target = (uint64_t)imm;
		}
		return 0;
	case X86_INS_LJMP:
	case X86_INS_INT1:
	case X86_INS_INT3:
	case X86_INS_UD0:
	case X86_INS_UD2:
	case X86_INS_UD2B:
	case X86_INS_HLT:
		fl->next = false;
		return 0;
	case X86_INS_LCALL:
	case X86_INS_RETF:
	case X86_INS_RETFQ:
		return fail(w, insn->address, "far %s is not modelled", insn->mnemonic);
	default:
		if (has_group(insn, CS_GRP_IRET))
			return fail(w, insn->address, "%s is not modelled", insn->mnemonic);
		if (has_group(insn, CS_GRP_JUMP) || has_group(insn, CS_GRP_BRANCH_RELATIVE)) {
			/* jcc, jrcxz, loop, xbegin: either way; the target is the last operand */
			if (!x->op_count || !x86_op_imm(x, x->op_count - 1u, &imm))
				return fail(w, insn->address, "%s %s: no target", insn->mnemonic,
					    insn->op_str);
			fl->jump = true;
			fl->target = (uint64_t)imm;
		}
		break;
	}
	return x86_other(w, f);
}

/* ---- AArch64 ---- */

static bool a64_is_sp(unsigned reg)
{
	return reg == ARM64_REG_SP || reg == ARM64_REG_WSP;
}

static bool a64_is_fp(unsigned reg)
{
	return reg == ARM64_REG_X29 || reg == ARM64_REG_W29;
}

static bool a64_is_lr(unsigned reg)
{
	return reg == ARM64_REG_X30 || reg == ARM64_REG_W30;
}

/* Bytes register @reg moves to or from memory; 0 for a register that is not a data register. */
static int a64_reg_size(unsigned reg)
{
	if ((reg >= ARM64_REG_X0 && reg <= ARM64_REG_X28) || reg == ARM64_REG_X29 ||
	    reg == ARM64_REG_X30 || reg == ARM64_REG_XZR)
		return 8;
	if ((reg >= ARM64_REG_W0 && reg <= ARM64_REG_W30) || reg == ARM64_REG_WZR)
		return 4;
	if (reg >= ARM64_REG_B0 && reg <= ARM64_REG_B31)
		return 1;
	if (reg >= ARM64_REG_H0 && reg <= ARM64_REG_H31)
		return 2;
	if (reg >= ARM64_REG_S0 && reg <= ARM64_REG_S31)
		return 4;
	if (reg >= ARM64_REG_D0 && reg <= ARM64_REG_D31)
		return 8;
	if (reg >= ARM64_REG_Q0 && reg <= ARM64_REG_Q31)
		return 16;
	return 0;
}

static bool a64_op_reg(const cs_arm64 *a, unsigned i, unsigned reg)
{
	return i < a->op_count && a->operands[i].type == ARM64_OP_REG && a->operands[i].reg == reg;
}

/* An immediate operand, with its `lsl #n` applied; false for another shift. */
static bool a64_op_imm(const cs_arm64 *a, unsigned i, int64_t *imm)
{
	const cs_arm64_op *op = &a->operands[i];

	if (i >= a->op_count || op->type != ARM64_OP_IMM)
		return false;
	if (op->shift.type == ARM64_SFT_INVALID) {
		*imm = op->imm;
		return true;
	}
	if (op->shift.type != ARM64_SFT_LSL || op->shift.value > 12)
		return false;
	*imm = op->imm * ((int64_t)1 << op->shift.value);
	return true;
}

/*
 * The register or the pair a load or store moves, with [sp, #imm]{!} or
 * [sp], #imm: ldr, str, ldur, stur, ldp, stp of data registers. The first
 * register goes to or comes from CFA - *at, the second 8 or 4 bytes above.
 * Returns false for any other shape (other bases, register offsets).
 */
struct a64_transfer {
	unsigned regs[2];
	unsigned num_regs;
	int size;		/* of each register */
	bool known;		/* the SP's height is known, and so are the two below */
	int64_t at;		/* height of the first register's slot */
	int64_t sp_after;	/* the SP's height after writeback */
};

static bool a64_transfer(const cs_insn *insn, const struct frame *f, struct a64_transfer *t)
{
	const cs_arm64 *a = &insn->detail->arm64;
	const cs_arm64_op *mem;
	unsigned m;
	int64_t post = 0;
	bool has_post;

	switch (insn->id) {
	case ARM64_INS_LDR:
	case ARM64_INS_STR:
	case ARM64_INS_LDUR:
	case ARM64_INS_STUR:
		t->num_regs = 1;
		break;
	case ARM64_INS_LDP:
	case ARM64_INS_STP:
		t->num_regs = 2;
		break;
	default:
		return false;
	}
	m = t->num_regs;
	if (a->op_count < m + 1 || a->op_count > m + 2)
		return false;
	mem = &a->operands[m];
	has_post = a->op_count == m + 2;
	if (mem->type != ARM64_OP_MEM || mem->mem.base != ARM64_REG_SP ||
	    mem->mem.index != ARM64_REG_INVALID || (has_post && !a64_op_imm(a, m + 1, &post)) ||
	    (has_post && (!a->writeback || mem->mem.disp)))
		return false;
	for (unsigned k = 0; k < t->num_regs; k++) {
		if (a->operands[k].type != ARM64_OP_REG)
			return false;
		t->regs[k] = a->operands[k].reg;
		t->size = a64_reg_size(t->regs[k]);
		if (!t->size)
			return false;
	}
	t->known = f->sp != SP_UNKNOWN;
	if (!t->known)
		return true;
	/* pre-index and offset forms address SP + disp; post-index SP, then adds */
	t->at = (int64_t)f->sp - mem->mem.disp;
	t->sp_after = !a->writeback ? f->sp : has_post ? (int64_t)f->sp - post : t->at;
	return true;
}

static bool a64_is_store(unsigned id)
{
	return id == ARM64_INS_STR || id == ARM64_INS_STUR || id == ARM64_INS_STP;
}

/* A load or store of a64_transfer() shape: saves and restores of FP and LR. */
static int a64_load_store(struct walk *w, const struct a64_transfer *t, struct frame *f)
{
	const cs_insn *insn = w->insn;
	bool store = a64_is_store(insn->id);

	for (unsigned k = 0; k < t->num_regs; k++) {
		unsigned reg = t->regs[k];
		int64_t at = t->at - (int64_t)k * t->size;
		bool saves_fp = store && reg == ARM64_REG_X29 && !f->fp_saved;
		bool saves_lr = store && reg == ARM64_REG_X30 && !f->ra_saved;

		if (!t->known) {
			/* a slot under an unknown SP: neither a save nor a restore can be placed */
			if (saves_fp || saves_lr || (!store && (a64_is_fp(reg) || a64_is_lr(reg))))
				return fail(w, insn->address, "%s %s with the stack height unknown",
					    insn->mnemonic, insn->op_str);
			continue;
		}
		if (store && (saves_fp || saves_lr)) {
			/* a slot inside the frame, below the CFA and at or above the SP */
			if (at < SLOT || at > t->sp_after || check_store(w, f, at, SLOT))
				return fail(w, insn->address, "%s %s saves %s outside the frame",
					    insn->mnemonic, insn->op_str, saves_fp ? "x29" : "x30");
			if (saves_fp)
				f->fp_saved = (int32_t)at;
			else
				f->ra_saved = (int32_t)at;
			continue;
		}
		if (store) {
			if (check_store(w, f, at, t->size))
				return -ENOENT;
			continue;
		}
		if (reg == ARM64_REG_X29 && f->fp_saved && at == f->fp_saved) {
			f->fp_saved = 0;
			f->fp = 0;
		} else if (reg == ARM64_REG_X30 && f->ra_saved && at == f->ra_saved) {
			/* the value saved, signed or not */
			f->ra_saved = 0;
		} else if (a64_is_fp(reg) && fp_lost(w, f)) {
			return -ENOENT;
		} else if (a64_is_lr(reg) && ra_lost(w, f)) {
			return -ENOENT;
		}
	}
	if (t->known)
		f->sp = height(t->sp_after);
	return 0;
}

/*
 * PAC instructions on the link register (hint space): paci[ab]sp and
 * paci[ab]z sign it, auti[ab]sp, auti[ab]z and xpaclri leave it plain.
 */
static int a64_hint(struct walk *w, int64_t hint, struct frame *f)
{
	int key;

	/* once saved, the return address is the copy in memory, whatever becomes of x30 */
	if (f->ra_saved)
		return 0;
	switch (hint) {
	case 24: case 25:	/* paciaz, paciasp */
	case 26: case 27:	/* pacibz, pacibsp */
		key = hint >= 26;
		if (w->pauth_key >= 0 && w->pauth_key != key)
			return fail(w, w->insn->address, "return addresses signed with both keys");
		w->pauth_key = key;
		f->ra_signed = 1;
		break;
	case 28: case 29: case 30: case 31:	/* auti[ab]z, auti[ab]sp */
	case 7:					/* xpaclri */
		f->ra_signed = 0;
		break;
	default:
		break;
	}
	return 0;
}

/* What an instruction without a stack role writes: capstone's register lists and operands. */
static int a64_other(struct walk *w, struct frame *f)
{
	const cs_insn *insn = w->insn;
	const cs_arm64 *a = &insn->detail->arm64;
	bool sp_written = false, fp_written = false, lr_written = false;
	cs_regs rd, wr;
	uint8_t nrd, nwr;

	switch (insn->id) {
	case ARM64_INS_CMP:
	case ARM64_INS_CMN:
	case ARM64_INS_TST:
	case ARM64_INS_SVC:
		/* capstone 4 lists their first operand (cmp sp, x0) or x30 (svc) as written */
		return 0;
	default:
		break;
	}
	if (cs_regs_access(w->cs, insn, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return fail(w, insn->address, "%s %s: no register access information", insn->mnemonic,
			    insn->op_str);
	for (uint8_t i = 0; i < nwr; i++) {
		sp_written |= a64_is_sp(wr[i]);
		fp_written |= a64_is_fp(wr[i]);
		lr_written |= a64_is_lr(wr[i]);
	}
	for (uint8_t i = 0; i < a->op_count; i++) {
		const cs_arm64_op *op = &a->operands[i];

		if (op->type == ARM64_OP_REG && (op->access & CS_AC_WRITE || !op->access)) {
			sp_written |= a64_is_sp(op->reg);
			fp_written |= a64_is_fp(op->reg);
			lr_written |= a64_is_lr(op->reg);
		}
		/* writeback moves the base register, whatever capstone's lists say */
		if (op->type == ARM64_OP_MEM && a->writeback) {
			sp_written |= a64_is_sp(op->mem.base);
			fp_written |= a64_is_fp(op->mem.base);
			lr_written |= a64_is_lr(op->mem.base);
		}
		/* a store (or one capstone does not say) through SP or FP: 64 bytes at most (st1 of four) */
		if (op->type == ARM64_OP_MEM && (op->access & CS_AC_WRITE || !op->access) &&
		    op->mem.index == ARM64_REG_INVALID) {
			if (op->mem.base == ARM64_REG_SP && f->sp != SP_UNKNOWN &&
			    check_store(w, f, (int64_t)f->sp - op->mem.disp, 64))
				return -ENOENT;
			if (op->mem.base == ARM64_REG_X29 && f->fp &&
			    check_store(w, f, (int64_t)f->fp - op->mem.disp, 64))
				return -ENOENT;
		}
	}
	if (sp_written && sp_lost(w, f))
		return -ENOENT;
	if (fp_written && fp_lost(w, f))
		return -ENOENT;
	if (lr_written && ra_lost(w, f))
		return -ENOENT;
	return 0;
}

/* A branch's target: its last operand. */
static int a64_target(struct walk *w, struct flow *fl)
{
	const cs_arm64 *a = &w->insn->detail->arm64;

	if (!a->op_count || a->operands[a->op_count - 1].type != ARM64_OP_IMM)
		return fail(w, w->insn->address, "%s %s: no target", w->insn->mnemonic, w->insn->op_str);
	fl->jump = true;
	fl->target = (uint64_t)a->operands[a->op_count - 1].imm;
	return 0;
}

static int a64_step(struct walk *w, const struct frame *in, struct flow *fl)
{
	const cs_insn *insn = w->insn;
	const cs_arm64 *a = &insn->detail->arm64;
	struct frame *f = &fl->out;
	struct a64_transfer t = { 0 };
	int64_t imm;

	*fl = (struct flow){ .out = *in, .next = true };
	if (a64_transfer(insn, f, &t))
		return a64_load_store(w, &t, f);
	switch (insn->id) {
	case ARM64_INS_SUB:
	case ARM64_INS_ADD:
		if (a64_op_reg(a, 0, ARM64_REG_SP) && a64_op_reg(a, 1, ARM64_REG_SP) &&
		    a->op_count == 3 && a64_op_imm(a, 2, &imm)) {
			sp_move(f, insn->id == ARM64_INS_ADD ? imm : -imm);
			return 0;
		}
		if (a64_op_reg(a, 0, ARM64_REG_X29) && a64_op_reg(a, 1, ARM64_REG_SP) &&
		    a->op_count == 3 && a64_op_imm(a, 2, &imm) && insn->id == ARM64_INS_ADD &&
		    f->sp != SP_UNKNOWN && f->fp_saved) {
			/* add x29, sp, #n: a frame record above the locals, or a pointer to a local */
			f->fp = frame_pointer((int64_t)f->sp - imm);
			return 0;
		}
		if (a64_op_reg(a, 0, ARM64_REG_SP) && a64_op_reg(a, 1, ARM64_REG_X29) &&
		    a->op_count == 3 && a64_op_imm(a, 2, &imm) && f->fp) {
			f->sp = height(insn->id == ARM64_INS_ADD ? f->fp - imm : f->fp + imm);
			return 0;
		}
		break;
	case ARM64_INS_MOV:
		if (a64_op_reg(a, 0, ARM64_REG_X29) && a64_op_reg(a, 1, ARM64_REG_SP))
			return fp_from_sp(w, f, insn);
		if (a64_op_reg(a, 0, ARM64_REG_SP) && a64_op_reg(a, 1, ARM64_REG_X29) && f->fp) {
			f->sp = f->fp;
			return 0;
		}
		break;
	case ARM64_INS_BL:
	case ARM64_INS_BLR:
		/* the call puts its own return address in x30 */
		if (!f->ra_saved)
			return fail(w, insn->address, "%s %s with the return address still in x30",
				    insn->mnemonic, insn->op_str);
		if (insn->id == ARM64_INS_BL && a->op_count == 1 && a->operands[0].type == ARM64_OP_IMM &&
		    (uint64_t)a->operands[0].imm > w->addr && (uint64_t)a->operands[0].imm - w->addr < w->len)
			return fail(w, insn->address, "call into the function's own body");
		return 0;
	case ARM64_INS_RET:
		if (a->op_count && !a64_op_reg(a, 0, ARM64_REG_X30))
			return fail(w, insn->address, "ret %s is not modelled", insn->op_str);
		if (in->sp != 0)
			return fail(w, insn->address, in->sp == SP_UNKNOWN ?
				    "returns with the stack height unknown" :
				    "returns with the stack not restored");
		if (in->ra_saved)
			return fail(w, insn->address, "returns with the return address not in x30");
		if (in->ra_signed)
			return fail(w, insn->address, "returns with a signed return address");
		fl->next = false;
		return 0;
	case ARM64_INS_B:
		/* b, b.cond (always: b.al, b.nv) */
		if (a->cc == ARM64_CC_INVALID || a->cc == ARM64_CC_AL || a->cc == ARM64_CC_NV)
			fl->next = false;
		return a64_target(w, fl);
	case ARM64_INS_CBZ:
	case ARM64_INS_CBNZ:
	case ARM64_INS_TBZ:
	case ARM64_INS_TBNZ:
		return a64_target(w, fl);
	case ARM64_INS_BR:
		/* leaves the function: a tail call, a jump table */
		fl->next = false;
		return 0;
	case ARM64_INS_BRK:
	case ARM64_INS_HLT:
	case ARM64_INS_ERET:
	case ARM64_INS_DRPS:
		/* a trap, or undefined at EL0 */
		fl->next = false;
		return 0;
	case ARM64_INS_HINT:
		if (a->op_count == 1 && a->operands[0].type == ARM64_OP_IMM)
			return a64_hint(w, a->operands[0].imm, f);
		break;
	default:
		if (has_group(insn, CS_GRP_JUMP) || has_group(insn, CS_GRP_CALL) ||
		    has_group(insn, CS_GRP_RET) || has_group(insn, CS_GRP_BRANCH_RELATIVE))
			return fail(w, insn->address, "%s %s is not modelled", insn->mnemonic,
				    insn->op_str);
		break;
	}
	return a64_other(w, f);
}

/* ---- the walk ---- */

static const struct arch arch_x86_64 = {
	.name = "x86-64",
	.index = 0,
	.cs_arch = CS_ARCH_X86,
	.cs_mode = CS_MODE_64,
	.abi = SFU_SFRAME_ABI_AMD64_LE,
	.cfa_fixed_ra_offset = -SLOT,
	.sp_align = 8,
	/* the call pushed the return address */
	.entry = { .sp = SLOT, .ra_saved = SLOT },
	.step = x86_step,
};

static const struct arch arch_aarch64 = {
	.name = "AArch64",
	.index = 1,
	.cs_arch = CS_ARCH_ARM64,
	.cs_mode = CS_MODE_ARM,
	.abi = SFU_SFRAME_ABI_AARCH64_LE,
	.sp_align = 16,
	/* the call left the return address in x30 */
	.entry = { .sp = 0 },
	.step = a64_step,
};

/* The frame after an instruction: one the rows can state, the stack as the ABI keeps it. */
static int check_frame(struct walk *w, const struct frame *f)
{
	uint64_t at = w->insn->address;

	if (f->sp == SP_UNKNOWN && !f->fp)
		return fail(w, at, "no way to the CFA");
	if (f->sp != SP_UNKNOWN) {
		if (f->sp > FRAME_MAX)
			return fail(w, at, "the stack pointer leaves the frame (above the CFA, or more than %d bytes below)",
				    FRAME_MAX);
		if (f->sp % w->arch->sp_align)
			return fail(w, at, "the stack pointer is not %d-byte aligned", w->arch->sp_align);
		if (f->ra_saved > f->sp)
			return fail(w, at, "the return address is popped");
		if (f->fp_saved > f->sp)
			return fail(w, at, "the saved frame pointer is popped to no register");
	}
	if (f->fp && f->fp != frame_pointer(f->fp))
		return fail(w, at, "a frame pointer %d bytes below the CFA", f->fp);
	return 0;
}

/*
 * Two paths meet at one instruction. What they agree on stays; a frame
 * pointer one of them no longer has is forgotten, and so is an SP height
 * they disagree on under a frame pointer both have: the rows from what
 * remains hold on both paths. Where the caller's FP or the return address
 * is, or the SP without a common frame pointer, has no such answer.
 * Returns false when the frames cannot meet.
 */
static bool meet(const struct frame *a, const struct frame *b, struct frame *out)
{
	*out = *a;
	if (a->fp_saved != b->fp_saved || a->ra_saved != b->ra_saved || a->ra_signed != b->ra_signed)
		return false;
	if (a->fp != b->fp)
		out->fp = 0;
	if (a->sp != b->sp)
		out->sp = SP_UNKNOWN;
	return out->sp != SP_UNKNOWN || out->fp;
}

/* A path reaches offset @off with frame @f. */
static int reach(struct walk *w, uint64_t from, size_t off, const struct frame *f)
{
	struct byte_info *b = &w->bytes[off];
	struct frame met;

	if (b->kind == B_INSIDE)
		return fail(w, from, "goes into the middle of an instruction at +%#zx", off);
	if (b->kind == B_START) {
		if (!meet(&b->in, f, &met))
			return fail(w, from, "paths meet at +%#zx with different frames (CFA = SP + %d or %d)",
				    off, b->in.sp, f->sp);
		if (!memcmp(&met, &b->in, sizeof(met)))
			return 0;
		/* knowing less there, go through it and what follows again (twice at most) */
		b->in = met;
	} else {
		b->kind = B_START;
		b->in = *f;
	}
	if (!b->queued) {
		b->queued = true;
		w->todo[w->num_todo++] = (uint32_t)off;
	}
	return 0;
}

/* Do the bytes at @off fail to decode only because the code ends? */
static bool cut_at_end(struct walk *w, size_t off)
{
	uint8_t longest[16] = { 0 };
	const uint8_t *p = longest;
	size_t left = w->len - off, size = sizeof(longest);
	uint64_t at = w->addr + off;

	if (left >= sizeof(longest))
		return false;
	memcpy(longest, w->code + off, left);
	return cs_disasm_iter(w->cs, &p, &size, &at, w->insn) && w->insn->size > left;
}

static int decode(struct walk *w, size_t off)
{
	const uint8_t *p = w->code + off;
	size_t left = w->len - off;
	uint64_t at = w->addr + off;

	/* again, after paths met: the same bytes, the same instruction */
	if (w->bytes[off].len)
		return cs_disasm_iter(w->cs, &p, &left, &at, w->insn) ? 0 :
		       fail(w, w->addr + off, "bytes that decoded once do not decode again");
	if (w->insns == SFU_CODE_MAX_INSNS)
		return fail(w, at, "more than %u instructions", SFU_CODE_MAX_INSNS);
	if (!cs_disasm_iter(w->cs, &p, &left, &at, w->insn))
		return fail(w, w->addr + off, "%s", cut_at_end(w, off) ?
			    "an instruction cut at the end of the code" : "bytes that do not decode");
	w->insns++;
	for (size_t k = 1; k < w->insn->size; k++) {
		if (w->bytes[off + k].kind != B_UNSEEN)
			return fail(w, w->addr + off, "instructions overlap at +%#zx", off + k);
		w->bytes[off + k].kind = B_INSIDE;
	}
	w->bytes[off].len = (uint8_t)w->insn->size;
	return 0;
}

static int walk_paths(struct walk *w)
{
	struct flow fl;
	int err;

	err = reach(w, w->addr, 0, &w->arch->entry);
	while (!err && w->num_todo) {
		size_t off = w->todo[--w->num_todo];
		uint64_t at = w->addr + off;

		w->bytes[off].queued = false;
		if ((err = decode(w, off)) || (err = w->arch->step(w, &w->bytes[off].in, &fl)) ||
		    (err = check_frame(w, &fl.out)))
			break;
		/* a target outside is a tail call, or a branch to other code: the path leaves */
		if (fl.jump && fl.target >= w->addr && fl.target - w->addr < w->len)
			err = reach(w, at, fl.target - w->addr, &fl.out);
		if (err || !fl.next)
			continue;
		/* past the end, like a jump elsewhere, the path leaves (a call that does not return) */
		off += w->bytes[off].len;
		if (off < w->len)
			err = reach(w, at, off, &fl.out);
	}
	return err;
}

/* ---- rows ---- */

static void frame_row(const struct frame *f, uint32_t start, struct sfu_row *row)
{
	memset(row, 0, sizeof(*row));
	row->start = start;
	/*
	 * From the SP while its height is known: the caller's SP is always
	 * recovered, the FP only as well as the callee's rows keep it (and a
	 * register compiled code sets to SP + N need not be a frame pointer).
	 */
	row->cfa.kind = SFU_LOC_REG_OFFSET;
	row->cfa.reg = f->sp != SP_UNKNOWN ? SFU_REG_SP : SFU_REG_FP;
	row->cfa.offset = f->sp != SP_UNKNOWN ? f->sp : f->fp;
	if (f->ra_saved) {
		row->ra.kind = SFU_LOC_AT_CFA;
		row->ra.offset = -f->ra_saved;
	} else {
		row->ra.kind = SFU_LOC_IN_REG;
		row->ra.reg = SFU_REG_RA;
	}
	if (f->ra_signed)
		row->flags |= SFU_ROW_MANGLED_RA;
	row->fp.reg = SFU_REG_FP;
	if (f->fp_saved) {
		row->fp.kind = SFU_LOC_AT_CFA;
		row->fp.offset = -f->fp_saved;
	} else {
		row->fp.kind = SFU_LOC_SAME;
	}
}

/* Can the default FRE say @row? After a return address in the link register, not a saved FP. */
static bool row_is_default(const struct sfu_row *row)
{
	if (row->flags & SFU_ROW_UNUSABLE)
		return false;
	return row->ra.kind != SFU_LOC_IN_REG || row->fp.kind == SFU_LOC_SAME;
}

/* Rows that say the same, wherever they start. */
static bool same_rule(const struct sfu_row *a, const struct sfu_row *b)
{
	return a->flags == b->flags && !memcmp(&a->cfa, &b->cfa, sizeof(a->cfa)) &&
	       !memcmp(&a->ra, &b->ra, sizeof(a->ra)) && !memcmp(&a->fp, &b->fp, sizeof(a->fp));
}

/*
 * One function per stretch of reached instructions, with one row where the
 * rule changes (frames that differ in what the rows do not say, such as the
 * SP under a frame pointer, share one). Bytes no path reaches belong to no
 * function: an unwinder has no rows there and does what it does for code
 * without any (JIT code entered where no path from its entry leads, as V8's
 * on-stack replacement does, keeps its frame pointers).
 */
static int make_funcs(const struct walk *w, struct sfu_sframe_func **out_funcs, size_t *nfuncs,
		      struct sfu_row **out_rows, size_t *nrows)
{
	struct sfu_sframe_func *funcs;
	struct sfu_row *rows;
	size_t n = 0, nf = 0;

	/* at most a row and a function per instruction */
	rows = calloc((size_t)w->insns + 1, sizeof(*rows));
	funcs = calloc((size_t)w->insns + 1, sizeof(*funcs));
	if (!rows || !funcs) {
		free(rows);
		free(funcs);
		return -ENOMEM;
	}
	for (size_t off = 0; off < w->len;) {
		const struct byte_info *b = &w->bytes[off];
		struct sfu_sframe_func *fn;
		size_t first = n, start = off;
		bool flex = false;

		if (b->kind != B_START) {
			off++;
			continue;
		}
		for (; off < w->len && w->bytes[off].kind == B_START; off += w->bytes[off].len) {
			frame_row(&w->bytes[off].in, (uint32_t)(off - start), &rows[n]);
			flex |= !row_is_default(&rows[n]);
			if (n == first || !same_rule(&rows[n - 1], &rows[n]))
				n++;
		}
		/* a row the default FRE cannot say makes the whole function flexible */
		for (size_t k = first; flex && k < n; k++)
			rows[k].flags |= SFU_ROW_FLEX;
		fn = &funcs[nf++];
		fn->start = w->addr + start;
		fn->size = (uint32_t)(off - start);
		fn->pauth_key = w->pauth_key > 0;
		fn->rows = rows + first;
		fn->num_rows = n - first;
	}
	*out_funcs = funcs;
	*nfuncs = nf;
	*out_rows = rows;
	*nrows = n;
	return 0;
}

static int encode(const struct walk *w, struct sfu_code_stats *stats, void **buf, size_t *size,
		  struct sfu_diag *diag)
{
	SFU_OPTS(sfu_sframe_enc_opts, opts,
		.version = 3,
		.abi = w->arch->abi,
		.cfa_fixed_ra_offset = w->arch->cfa_fixed_ra_offset,
		.addr = 0,
	);
	struct sfu_sframe_func *funcs;
	struct sfu_row *rows;
	size_t n, nf;
	int err;

	err = make_funcs(w, &funcs, &nf, &rows, &n);
	if (err)
		return diag_set(diag, err, "out of memory");
	stats->rows = (uint32_t)n;
	err = sfu_sframe_encode(&opts, funcs, nf, buf, size, diag);
	free(rows);
	free(funcs);
	return err;
}

/*
 * One disassembler per architecture, used under a lock: capstone 4's
 * decoders sort some of their tables on first use without one
 * (X86_insn_reg_intel()), and opening a disassembler costs more than
 * analysing a trampoline. Closed when the library is unloaded.
 */
static pthread_mutex_t disasm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct disasm {
	csh cs;
	cs_insn *insn;
	bool open;
} disasms[ARCH_COUNT];

__attribute__((destructor)) static void disasm_close(void)
{
	for (size_t i = 0; i < ARCH_COUNT; i++) {
		if (!disasms[i].open)
			continue;
		cs_free(disasms[i].insn, 1);
		cs_close(&disasms[i].cs);
		disasms[i].open = false;
	}
}

/* The disassembler of @w's architecture, opened on first use; call with disasm_lock held. */
static int disasm_open(struct walk *w, struct sfu_diag *diag)
{
	struct disasm *d = &disasms[w->arch->index];

	if (!d->open) {
		switch (cs_open(w->arch->cs_arch, w->arch->cs_mode, &d->cs)) {
		case CS_ERR_OK:
			break;
		case CS_ERR_MEM:
			return diag_set(diag, -ENOMEM, "out of memory");
		default:
			return diag_set(diag, -ENOTSUP, "capstone cannot decode %s", w->arch->name);
		}
		if (cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK ||
		    !(d->insn = cs_malloc(d->cs))) {
			cs_close(&d->cs);
			return diag_set(diag, -ENOMEM, "cannot set up the %s disassembler",
					w->arch->name);
		}
		d->open = true;
	}
	w->cs = d->cs;
	w->insn = d->insn;
	return 0;
}

static int analyse(struct walk *w, struct sfu_code_stats *stats, void **buf, size_t *size,
		   struct sfu_diag *diag)
{
	int err;

	w->bytes = calloc(w->len, sizeof(*w->bytes));
	w->todo = calloc(w->len, sizeof(*w->todo));
	if (!w->bytes || !w->todo) {
		err = diag_set(diag, -ENOMEM, "out of memory");
		goto out;
	}
	pthread_mutex_lock(&disasm_lock);
	err = disasm_open(w, diag);
	if (!err)
		err = walk_paths(w);
	pthread_mutex_unlock(&disasm_lock);
	stats->insns = w->insns;
	if (err == -ENOENT) {
		snprintf(stats->note, sizeof(stats->note), "%s", w->why);
		diag_set(diag, err, "%s", w->why);
	}
	if (!err)
		err = encode(w, stats, buf, size, diag);
out:
	free(w->bytes);
	free(w->todo);
	return err;
}

struct sfu_sframe *sfu_sframe__from_code(const void *code, size_t len, uint64_t addr,
					 enum sfu_arch arch, struct sfu_code_stats *stats,
					 struct sfu_diag *diag)
{
	struct sfu_code_stats local;
	struct walk w = { .code = code, .len = len, .addr = addr, .pauth_key = -1 };
	size_t size = 0;
	void *buf = NULL;
	int err;

	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	if (arch == SFU_ARCH_X86_64) {
		w.arch = &arch_x86_64;
	} else if (arch == SFU_ARCH_AARCH64) {
		w.arch = &arch_aarch64;
	} else {
		err = diag_set(diag, -ENOTSUP, "machine code of architecture %d is not analysed", arch);
		goto fail;
	}
	if ((!code && len) || addr + len < addr) {
		err = diag_set(diag, -EINVAL, "no code, or a range that wraps");
		goto fail;
	}
	if (!len || len > SFU_CODE_MAX_BYTES) {
		snprintf(stats->note, sizeof(stats->note), "%zu bytes of code (1 to %d are analysed)",
			 len, SFU_CODE_MAX_BYTES);
		err = diag_set(diag, -ENOENT, "%s", stats->note);
		goto fail;
	}
	err = analyse(&w, stats, &buf, &size, diag);
	if (err)
		goto fail;
	return sframe_new_owned(buf, size, 0, diag);
fail:
	errno = -err;
	return NULL;
}

/*
 * How far the entry routine at @addr runs: through its first call (the
 * call's return address is the routine's last frame address), or through
 * the first jump, return or halt before any call. A process starts there,
 * so no frame of the routine has a caller. Decodes at most @len bytes.
 * @return 0 with *end set, or -ENOENT when the bytes do not decode to
 * such a routine (an invalid instruction, or none of those within @len).
 */
int sfu_code__entry_end(enum sfu_arch arch, uint64_t addr, const uint8_t *code, size_t len,
			uint64_t *end)
{
	struct walk w = { .arch = arch == SFU_ARCH_AARCH64 ? &arch_aarch64 : &arch_x86_64 };
	const uint8_t *p = code;
	uint64_t at = addr;
	size_t left = len;
	int err;

	pthread_mutex_lock(&disasm_lock);
	err = disasm_open(&w, NULL);
	while (!err) {
		if (!cs_disasm_iter(w.cs, &p, &left, &at, w.insn)) {
			err = -ENOENT;
			break;
		}
		if (has_group(w.insn, CS_GRP_CALL) || has_group(w.insn, CS_GRP_JUMP) ||
		    has_group(w.insn, CS_GRP_RET) ||
		    (arch != SFU_ARCH_AARCH64 && w.insn->id == X86_INS_HLT)) {
			*end = at;
			break;
		}
	}
	pthread_mutex_unlock(&disasm_lock);
	return err;
}
