/* SPDX-License-Identifier: BSD-2-Clause */
/* Unwinder tests on synthetic stacks whose true frames are known by construction. */
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define TEXT_VADDR	0x1000ull
#define TEXT_SIZE	0x1000ull
#define BIAS		0x400000ull		/* runtime = vaddr + BIAS */
#define STACK_TOP	0x7ffff000ull
#define STACK_SIZE	0x800u

/* Functions of the synthetic module, as ELF vaddrs. */
#define F_LEAF		0x1000ull	/* sp-based, pushes rbp at +1 */
#define F_MID		0x1100ull	/* sp-based, frame of 0x20 */
#define F_FPBASED	0x1200ull	/* rbp-based after its prologue */
#define F_ROOT		0x1300ull	/* RA undefined: the outermost frame */
#define F_NOINFO	0x1800ull	/* no row: found by frame pointers */

static struct sfu_loc reg_off(uint8_t reg, int32_t off)
{
	return (struct sfu_loc){ .kind = SFU_LOC_REG_OFFSET, .reg = reg, .offset = off };
}

static struct sfu_loc at_cfa(int32_t off)
{
	return (struct sfu_loc){ .kind = SFU_LOC_AT_CFA, .offset = off };
}

static const struct sfu_loc same = { .kind = SFU_LOC_SAME, .reg = SFU_REG_FP };
static const struct sfu_loc lr = { .kind = SFU_LOC_IN_REG, .reg = SFU_REG_RA };
static const struct sfu_loc undef = { .kind = SFU_LOC_UNDEFINED };

/* Rows in the decoder's canonical form for AMD64 (RA fixed at CFA-8). */
static struct sfu_row leaf_rows[2], mid_rows[2], fp_rows[3], root_rows[1];

static void init_x86_rows(void)
{
	leaf_rows[0] = (struct sfu_row){ .start = 0, .cfa = reg_off(SFU_REG_SP, 8), .ra = at_cfa(-8), .fp = same };
	leaf_rows[1] = (struct sfu_row){ .start = 1, .cfa = reg_off(SFU_REG_SP, 16), .ra = at_cfa(-8), .fp = at_cfa(-16) };
	mid_rows[0] = (struct sfu_row){ .start = 0, .cfa = reg_off(SFU_REG_SP, 8), .ra = at_cfa(-8), .fp = same };
	mid_rows[1] = (struct sfu_row){ .start = 4, .cfa = reg_off(SFU_REG_SP, 40), .ra = at_cfa(-8), .fp = same };
	fp_rows[0] = (struct sfu_row){ .start = 0, .cfa = reg_off(SFU_REG_SP, 8), .ra = at_cfa(-8), .fp = same };
	fp_rows[1] = (struct sfu_row){ .start = 1, .cfa = reg_off(SFU_REG_SP, 16), .ra = at_cfa(-8), .fp = at_cfa(-16) };
	fp_rows[2] = (struct sfu_row){ .start = 4, .cfa = reg_off(SFU_REG_FP, 16), .ra = at_cfa(-8), .fp = at_cfa(-16) };
	root_rows[0] = (struct sfu_row){ .start = 0, .cfa = undef, .ra = undef, .fp = same };
}

struct world {
	struct sfu_addrspace *as;
	uint8_t stack[STACK_SIZE];
	struct sfu_snapshot snap;
	uint64_t sp;		/* where the next push goes, growing down */
};

static struct sfu_module *make_module_v(uint8_t abi, uint8_t version,
					const struct sfu_sframe_func *funcs, size_t n)
{
	SFU_OPTS(sfu_sframe_enc_opts, o, .version = version, .abi = abi, .addr = 0x5000);
	struct sfu_segment seg = { .vaddr = TEXT_VADDR, .memsz = TEXT_SIZE, .offset = TEXT_VADDR,
				   .filesz = TEXT_SIZE, .flags = PF_R | PF_X };
	struct sfu_diag diag = { 0 };
	struct sfu_sframe *sf;
	struct sfu_module *m;
	size_t size;
	void *buf;

	if (abi == SFU_SFRAME_ABI_AMD64_LE)
		o.cfa_fixed_ra_offset = -8;
	assert_int_equal(sfu_sframe_encode(&o, funcs, n, &buf, &size, &diag), 0);
	sf = sfu_sframe__new(buf, size, o.addr, &diag);
	free(buf);
	assert_non_null(sf);
	m = sfu_module__new("synthetic", NULL, abi == SFU_SFRAME_ABI_AMD64_LE ? EM_X86_64 : EM_AARCH64,
			    &seg, 1, sf);
	assert_non_null(m);
	return m;
}

static struct sfu_module *make_module(uint8_t abi, const struct sfu_sframe_func *funcs, size_t n)
{
	return make_module_v(abi, 2, funcs, n);
}

static void world_init(struct world *w, struct sfu_module *m)
{
	memset(w, 0, sizeof(*w));
	w->as = sfu_addrspace__new(NULL, NULL);
	assert_non_null(w->as);
	assert_int_equal(sfu_addrspace__add(w->as, TEXT_VADDR + BIAS, TEXT_VADDR + BIAS + TEXT_SIZE,
					    TEXT_VADDR, 5 /* r-x */, NULL, m), 0);
	sfu_module__put(m);
	w->sp = STACK_TOP;
	w->snap = (struct sfu_snapshot){ STACK_TOP - STACK_SIZE, w->stack, STACK_SIZE };
}

static void push(struct world *w, uint64_t v)
{
	w->sp -= 8;
	memcpy(&w->stack[w->sp - (STACK_TOP - STACK_SIZE)], &v, 8);
}

static uint64_t rt(uint64_t vaddr)
{
	return vaddr + BIAS;
}

static struct sfu_module *x86_module(void)
{
	const struct sfu_sframe_func funcs[] = {
		{ .start = F_LEAF, .size = 0x100, .rows = leaf_rows, .num_rows = 2 },
		{ .start = F_MID, .size = 0x100, .rows = mid_rows, .num_rows = 2 },
		{ .start = F_FPBASED, .size = 0x100, .rows = fp_rows, .num_rows = 3 },
		{ .start = F_ROOT, .size = 0x100, .rows = root_rows, .num_rows = 1 },
	};

	init_x86_rows();
	return make_module(SFU_SFRAME_ABI_AMD64_LE, funcs, 4);
}

/*
 * root -> fpbased -> mid -> leaf, stopped in leaf after its push of rbp.
 * Builds the stack top-down exactly as the calls would have.
 */
static void build_x86_chain(struct world *w, struct sfu_regs *regs, uint64_t *want, size_t *nwant)
{
	uint64_t fpbased_fp;

	/* fpbased, called by root: push rbp; mov rsp, rbp */
	push(w, rt(F_ROOT + 0x20));		/* RA into root */
	push(w, 0x1111);			/* root's rbp */
	fpbased_fp = w->sp;
	w->sp -= 0x10;				/* locals */
	/* mid, called by fpbased at +0x30: sub $0x20, rsp */
	push(w, rt(F_FPBASED + 0x30));
	w->sp -= 0x20;
	/* leaf, called by mid at +0x10: push rbp */
	push(w, rt(F_MID + 0x10));
	push(w, fpbased_fp);

	*regs = (struct sfu_regs){ .pc = rt(F_LEAF + 2), .sp = w->sp, .fp = fpbased_fp };
	want[0] = rt(F_LEAF + 2);
	want[1] = rt(F_MID + 0x10);
	want[2] = rt(F_FPBASED + 0x30);
	want[3] = rt(F_ROOT + 0x20);
	*nwant = 4;
}

static void test_x86_chain(void **state)
{
	SFU_OPTS(sfu_unwind_opts, opts, .arch = SFU_ARCH_X86_64, .no_fp_fallback = 1);
	struct sfu_frame frames[16];
	struct world w;
	struct sfu_regs regs;
	uint64_t want[8];
	size_t n, nwant;

	(void)state;
	world_init(&w, x86_module());
	build_x86_chain(&w, &regs, want, &nwant);
	assert_int_equal(sfu_unwind(w.as, &opts, &regs, sfu_snapshot_read, &w.snap, frames, 16, &n),
			 SFU_STOP_OUTERMOST);
	assert_int_equal(n, nwant);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(frames[i].addr, want[i]);
		assert_int_equal(frames[i].kind, i ? SFU_FRAME_RA : SFU_FRAME_PC);
		assert_int_equal(frames[i].source, i ? SFU_SRC_SFRAME : SFU_SRC_NONE);
	}

	/* the row cache gives the same frames, the first time and the next */
	opts.cache = sfu_unwind_cache__new();
	assert_non_null(opts.cache);
	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal(sfu_unwind(w.as, &opts, &regs, sfu_snapshot_read, &w.snap, frames,
					    16, &n), SFU_STOP_OUTERMOST);
		assert_int_equal(n, nwant);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(frames[i].addr, want[i]);
	}
	sfu_unwind_cache__free(opts.cache);
	opts.cache = NULL;

	/* depth limit: the array holds 2 */
	assert_int_equal(sfu_unwind(w.as, &opts, &regs, sfu_snapshot_read, &w.snap, frames, 2, &n),
			 SFU_STOP_DEPTH);
	assert_int_equal(n, 2);
	assert_int_equal(frames[1].addr, want[1]);

	/* a stack copy cut short: the frame whose RA is missing stops with MEMORY */
	w.snap.base = regs.sp;
	w.snap.data = w.stack + (regs.sp - (STACK_TOP - STACK_SIZE));
	w.snap.size = 0x20;
	assert_int_equal(sfu_unwind(w.as, &opts, &regs, sfu_snapshot_read, &w.snap, frames, 16, &n),
			 SFU_STOP_MEMORY);
	assert_int_equal(n, 2);
	sfu_addrspace__free(w.as);
}

static void test_x86_step_matches_unwind(void **state)
{
	SFU_OPTS(sfu_unwind_opts, opts, .arch = SFU_ARCH_X86_64);
	struct sfu_step step;
	struct world w;
	struct sfu_regs regs;
	uint64_t want[8];
	size_t nwant;

	(void)state;
	world_init(&w, x86_module());
	build_x86_chain(&w, &regs, want, &nwant);
	for (size_t i = 1; i < nwant; i++) {
		assert_int_equal(sfu_unwind_step(w.as, &opts, &regs, i == 1, sfu_snapshot_read,
						 &w.snap, &step), 0);
		assert_int_equal(step.regs.pc, want[i]);
		assert_int_equal(step.source, SFU_SRC_SFRAME);
		assert_true(step.regs.sp > regs.sp);
		regs = step.regs;
	}
	assert_int_equal(sfu_unwind_step(w.as, &opts, &regs, 0, sfu_snapshot_read, &w.snap, &step),
			 SFU_STOP_OUTERMOST);
	sfu_addrspace__free(w.as);
}

/*
 * fp_only: the tables are ignored. In the chain, leaf and mid keep no frame
 * record of their own: the walk from leaf's rbp (fpbased's record) goes
 * straight to root, as a frame-pointer unwinder does, then stops at root's
 * rbp, which is no frame pointer.
 */
static void test_fp_only(void **state)
{
	SFU_OPTS(sfu_unwind_opts, opts, .arch = SFU_ARCH_X86_64, .fp_only = 1);
	struct sfu_frame frames[16];
	struct sfu_step step;
	struct world w;
	struct sfu_regs regs;
	uint64_t want[8];
	size_t n, nwant;

	(void)state;
	world_init(&w, x86_module());
	build_x86_chain(&w, &regs, want, &nwant);
	assert_int_equal(sfu_unwind(w.as, &opts, &regs, sfu_snapshot_read, &w.snap, frames, 16, &n),
			 SFU_STOP_NO_INFO);
	assert_int_equal(n, 2);
	assert_int_equal(frames[0].addr, want[0]);
	assert_int_equal(frames[1].addr, want[3]);
	assert_int_equal(frames[1].source, SFU_SRC_FP);
	/* one step says the same */
	assert_int_equal(sfu_unwind_step(w.as, &opts, &regs, 1, sfu_snapshot_read, &w.snap, &step), 0);
	assert_int_equal(step.regs.pc, want[3]);
	assert_int_equal(step.source, SFU_SRC_FP);
	/* the same world with the tables: the whole chain */
	opts.fp_only = 0;
	assert_int_equal(sfu_unwind(w.as, &opts, &regs, sfu_snapshot_read, &w.snap, frames, 16, &n),
			 SFU_STOP_OUTERMOST);
	assert_int_equal(n, nwant);
	sfu_addrspace__free(w.as);
}

/* A pc no table covers: frame pointers take over, and the frame says so. */
static void test_fp_fallback(void **state)
{
	SFU_OPTS(sfu_unwind_opts, opts, .arch = SFU_ARCH_X86_64);
	struct sfu_frame frames[16];
	struct sfu_regs regs;
	struct world w;
	uint64_t rec;
	size_t n;

	(void)state;
	world_init(&w, x86_module());
	/* noinfo (fp-based, no row) called by mid at +0x10; mid called by root */
	push(&w, rt(F_ROOT + 0x20));
	w.sp -= 0x20;
	push(&w, rt(F_MID + 0x10));
	push(&w, 0);			/* caller's rbp: not a frame pointer */
	rec = w.sp;
	w.sp -= 0x18;
	regs = (struct sfu_regs){ .pc = rt(F_NOINFO + 8), .sp = w.sp, .fp = rec };

	assert_int_equal(sfu_unwind(w.as, &opts, &regs, sfu_snapshot_read, &w.snap, frames, 16, &n),
			 SFU_STOP_OUTERMOST);
	assert_int_equal(n, 3);
	assert_int_equal(frames[1].addr, rt(F_MID + 0x10));
	assert_int_equal(frames[1].source, SFU_SRC_FP);
	assert_int_equal(frames[2].addr, rt(F_ROOT + 0x20));
	assert_int_equal(frames[2].source, SFU_SRC_SFRAME);

	/* without the fallback the walk stops at once */
	opts.no_fp_fallback = 1;
	assert_int_equal(sfu_unwind(w.as, &opts, &regs, sfu_snapshot_read, &w.snap, frames, 16, &n),
			 SFU_STOP_NO_INFO);
	assert_int_equal(n, 1);

	/* a pc outside every mapping, with a frame pointer below sp */
	opts.no_fp_fallback = 0;
	regs = (struct sfu_regs){ .pc = 0x1234, .sp = w.sp, .fp = w.sp - 64 };
	assert_int_equal(sfu_unwind(w.as, &opts, &regs, sfu_snapshot_read, &w.snap, frames, 16, &n),
			 SFU_STOP_NO_INFO);
	assert_int_equal(n, 1);
	sfu_addrspace__free(w.as);
}

/* A saved RA that leads back into a frame that does not move the stack. */
static void test_cfa_not_increasing(void **state)
{
	SFU_OPTS(sfu_unwind_opts, opts, .arch = SFU_ARCH_X86_64, .no_fp_fallback = 1);
	static struct sfu_row zero_rows[1];
	struct sfu_sframe_func funcs[1];
	struct sfu_frame frames[16];
	struct sfu_regs regs;
	struct world w;
	size_t n;

	(void)state;
	/* CFA = FP + 8 with FP never restored: the second frame's CFA equals its SP */
	zero_rows[0] = (struct sfu_row){ .start = 0, .cfa = reg_off(SFU_REG_FP, 8), .ra = at_cfa(-8), .fp = same };
	funcs[0] = (struct sfu_sframe_func){ .start = F_LEAF, .size = 0x100, .rows = zero_rows, .num_rows = 1 };
	world_init(&w, make_module(SFU_SFRAME_ABI_AMD64_LE, funcs, 1));
	push(&w, rt(F_LEAF + 0x10));
	push(&w, rt(F_LEAF + 0x10));
	regs = (struct sfu_regs){ .pc = rt(F_LEAF + 4), .sp = w.sp, .fp = w.sp };
	assert_int_equal(sfu_unwind(w.as, &opts, &regs, sfu_snapshot_read, &w.snap, frames, 16, &n),
			 SFU_STOP_CFA_NOT_INCREASING);
	assert_int_equal(n, 2);
	sfu_addrspace__free(w.as);
}

/*
 * AArch64: leaf with RA still in LR (CFA = SP + 0), a caller that saved a
 * signed RA (PAuth), and what happens when LR is needed past frame 0.
 */
static void test_aarch64(void **state)
{
	SFU_OPTS(sfu_unwind_opts, opts, .arch = SFU_ARCH_AARCH64, .no_fp_fallback = 1);
	static struct sfu_row leaf[1], mid[2], root[1];
	struct sfu_sframe_func funcs[3];
	struct sfu_frame frames[16];
	struct sfu_regs regs;
	struct world w;
	size_t n;

	(void)state;
	leaf[0] = (struct sfu_row){ .start = 0, .cfa = reg_off(SFU_REG_SP, 0), .ra = lr, .fp = same };
	mid[0] = (struct sfu_row){ .start = 0, .cfa = reg_off(SFU_REG_SP, 0), .ra = lr, .fp = same };
	/* after paciasp; stp x29, x30, [sp, -32]!; mov x29, sp */
	mid[1] = (struct sfu_row){ .start = 8, .flags = SFU_ROW_MANGLED_RA, .cfa = reg_off(SFU_REG_FP, 32),
				   .ra = at_cfa(-24), .fp = at_cfa(-32) };
	root[0] = (struct sfu_row){ .start = 0, .cfa = undef, .ra = undef, .fp = same };
	funcs[0] = (struct sfu_sframe_func){ .start = F_LEAF, .size = 0x100, .rows = leaf, .num_rows = 1 };
	funcs[1] = (struct sfu_sframe_func){ .start = F_MID, .size = 0x100, .rows = mid, .num_rows = 2 };
	funcs[2] = (struct sfu_sframe_func){ .start = F_ROOT, .size = 0x100, .rows = root, .num_rows = 1 };
	world_init(&w, make_module(SFU_SFRAME_ABI_AARCH64_LE, funcs, 3));

	/* mid's frame record: [fp] = caller fp, [fp+8] = signed RA into root */
	w.sp -= 16;
	push(&w, rt(F_ROOT + 0x40) | 0x003d000000000000ull);	/* PAC bits */
	push(&w, 0x2222);
	regs = (struct sfu_regs){ .pc = rt(F_LEAF + 0x10), .sp = w.sp, .fp = w.sp,
				  .lr = rt(F_MID + 0x20) };
	assert_int_equal(sfu_unwind(w.as, &opts, &regs, sfu_snapshot_read, &w.snap, frames, 16, &n),
			 SFU_STOP_OUTERMOST);
	assert_int_equal(n, 3);
	assert_int_equal(frames[1].addr, rt(F_MID + 0x20));
	assert_int_equal(frames[2].addr, rt(F_ROOT + 0x40));

	/* stopped in mid before it saved LR, but as a caller: LR is gone */
	regs = (struct sfu_regs){ .pc = rt(F_MID + 4), .sp = w.sp, .fp = w.sp, .lr = 0 };
	struct sfu_step step;

	assert_int_equal(sfu_unwind_step(w.as, &opts, &regs, 0, sfu_snapshot_read, &w.snap, &step),
			 SFU_STOP_BAD_INFO);
	sfu_addrspace__free(w.as);
}

/* Functions of the signal-frame tests. */
#define F_HANDLER	0x1400ull	/* a signal handler, a leaf */
#define F_TRAMP		0x1500ull	/* the sigreturn trampoline; the restorer is 1 or 4 bytes in */
#define F_INTR		0x1600ull	/* the function the signal interrupted */

/*
 * x86-64: handler <- __restore_rt <- the kernel's signal frame <- intr <- root.
 * The interrupted pc is intr's first byte: looked up as pc - 1, as a return
 * address would be, it would fall outside intr. Its CFA is FP-based, so the
 * FP must come from the signal frame too.
 */
static void test_x86_signal_frame(void **state)
{
	SFU_OPTS(sfu_unwind_opts, opts, .arch = SFU_ARCH_X86_64, .no_fp_fallback = 1);
	static struct sfu_row handler[1], tramp[1], intr[1], root[1];
	struct sfu_sframe_func funcs[4];
	struct sfu_frame frames[16];
	struct sfu_regs regs;
	struct sfu_step step;
	uint64_t intr_sp, intr_fp, intr_pc, uc;
	struct world w;
	size_t n;

	(void)state;
	handler[0] = (struct sfu_row){ .start = 0, .cfa = reg_off(SFU_REG_SP, 8), .ra = at_cfa(-8), .fp = same };
	/* the trampoline's own rules do not matter: the signal frame layout does */
	tramp[0] = (struct sfu_row){ .start = 0, .cfa = reg_off(SFU_REG_SP, 8), .ra = at_cfa(-8), .fp = same };
	intr[0] = (struct sfu_row){ .start = 0, .cfa = reg_off(SFU_REG_FP, 16), .ra = at_cfa(-8), .fp = at_cfa(-16) };
	root[0] = (struct sfu_row){ .start = 0, .cfa = undef, .ra = undef, .fp = same };
	funcs[0] = (struct sfu_sframe_func){ .start = F_HANDLER, .size = 0x100, .rows = handler, .num_rows = 1 };
	funcs[1] = (struct sfu_sframe_func){ .start = F_TRAMP, .size = 0x10, .signal_frame = true,
					     .rows = tramp, .num_rows = 1 };
	funcs[2] = (struct sfu_sframe_func){ .start = F_INTR, .size = 0x100, .rows = intr, .num_rows = 1 };
	funcs[3] = (struct sfu_sframe_func){ .start = F_ROOT, .size = 0x100, .rows = root, .num_rows = 1 };
	world_init(&w, make_module_v(SFU_SFRAME_ABI_AMD64_LE, 3, funcs, 4));

	/* intr's frame: RA into root, saved rbp, rbp pointing at it */
	push(&w, rt(F_ROOT + 0x20));
	push(&w, 0x3333);
	intr_fp = w.sp;
	w.sp -= 0x28;
	intr_sp = w.sp;
	/* the kernel's frame below: struct ucontext, then pretcode on top */
	w.sp -= 0x200;
	uc = w.sp;
	memcpy(&w.stack[uc + 40 + 10 * 8 - (STACK_TOP - STACK_SIZE)], &intr_fp, 8);
	memcpy(&w.stack[uc + 40 + 15 * 8 - (STACK_TOP - STACK_SIZE)], &intr_sp, 8);
	intr_pc = rt(F_INTR);
	memcpy(&w.stack[uc + 40 + 16 * 8 - (STACK_TOP - STACK_SIZE)], &intr_pc, 8);
	push(&w, rt(F_TRAMP + 1));	/* pretcode: __restore_rt, one byte into its FDE */
	regs = (struct sfu_regs){ .pc = rt(F_HANDLER + 4), .sp = w.sp, .fp = 0x4444 };

	assert_int_equal(sfu_unwind(w.as, &opts, &regs, sfu_snapshot_read, &w.snap, frames, 16, &n),
			 SFU_STOP_OUTERMOST);
	assert_int_equal(n, 4);
	assert_int_equal(frames[1].addr, rt(F_TRAMP + 1));
	assert_int_equal(frames[1].kind, SFU_FRAME_RA);
	assert_int_equal(frames[2].addr, intr_pc);
	assert_int_equal(frames[2].kind, SFU_FRAME_PC);
	assert_int_equal(frames[2].source, SFU_SRC_SFRAME);
	assert_int_equal(frames[3].addr, rt(F_ROOT + 0x20));
	assert_int_equal(frames[3].kind, SFU_FRAME_RA);

	/* one step from the trampoline, as a debugger takes it */
	regs = (struct sfu_regs){ .pc = rt(F_TRAMP + 1), .sp = uc, .fp = 0x4444 };
	assert_int_equal(sfu_unwind_step(w.as, &opts, &regs, 0, sfu_snapshot_read, &w.snap, &step), 0);
	assert_int_equal(step.regs.pc, intr_pc);
	assert_int_equal(step.regs.sp, intr_sp);
	assert_int_equal(step.regs.fp, intr_fp);
	assert_int_equal(step.kind, SFU_FRAME_PC);

	/* a signal frame cut off by the end of the stack copy */
	w.snap.size = uc + 100 - w.snap.base;
	assert_int_equal(sfu_unwind_step(w.as, &opts, &regs, 0, sfu_snapshot_read, &w.snap, &step),
			 SFU_STOP_MEMORY);
	sfu_addrspace__free(w.as);
}

/*
 * AArch64: the interrupted function is a leaf whose RA is still in x30,
 * which only the signal frame has: handler <- trampoline <- intr <- root.
 */
static void test_aarch64_signal_frame(void **state)
{
	SFU_OPTS(sfu_unwind_opts, opts, .arch = SFU_ARCH_AARCH64, .no_fp_fallback = 1);
	static struct sfu_row handler[1], tramp[1], intr[1], root[1];
	struct sfu_sframe_func funcs[4];
	struct sfu_frame frames[16];
	struct sfu_regs regs;
	uint64_t frame, v;
	struct world w;
	size_t n;

	(void)state;
	handler[0] = (struct sfu_row){ .start = 0, .cfa = reg_off(SFU_REG_SP, 0), .ra = lr, .fp = same };
	tramp[0] = (struct sfu_row){ .start = 0, .cfa = reg_off(SFU_REG_SP, 0), .ra = lr, .fp = same };
	intr[0] = (struct sfu_row){ .start = 0, .cfa = reg_off(SFU_REG_SP, 0), .ra = lr, .fp = same };
	root[0] = (struct sfu_row){ .start = 0, .cfa = undef, .ra = undef, .fp = same };
	funcs[0] = (struct sfu_sframe_func){ .start = F_HANDLER, .size = 0x100, .rows = handler, .num_rows = 1 };
	funcs[1] = (struct sfu_sframe_func){ .start = F_TRAMP, .size = 0x10, .signal_frame = true,
					     .rows = tramp, .num_rows = 1 };
	funcs[2] = (struct sfu_sframe_func){ .start = F_INTR, .size = 0x100, .rows = intr, .num_rows = 1 };
	funcs[3] = (struct sfu_sframe_func){ .start = F_ROOT, .size = 0x100, .rows = root, .num_rows = 1 };
	world_init(&w, make_module_v(SFU_SFRAME_ABI_AARCH64_LE, 3, funcs, 4));

	/* intr's SP, then struct rt_sigframe { siginfo; ucontext } below it */
	w.sp -= 0x40;
	v = w.sp;
	w.sp -= 0x300;
	frame = w.sp;
	memcpy(&w.stack[frame + 312 + 31 * 8 - (STACK_TOP - STACK_SIZE)], &v, 8);
	v = rt(F_INTR + 0x10);
	memcpy(&w.stack[frame + 312 + 32 * 8 - (STACK_TOP - STACK_SIZE)], &v, 8);
	v = rt(F_ROOT + 0x40);
	memcpy(&w.stack[frame + 312 + 30 * 8 - (STACK_TOP - STACK_SIZE)], &v, 8);
	v = 0x5555;
	memcpy(&w.stack[frame + 312 + 29 * 8 - (STACK_TOP - STACK_SIZE)], &v, 8);
	/* the handler runs with x30 = the restorer, one instruction into the FDE */
	regs = (struct sfu_regs){ .pc = rt(F_HANDLER + 8), .sp = frame, .fp = 0x6666,
				  .lr = rt(F_TRAMP + 4) };

	assert_int_equal(sfu_unwind(w.as, &opts, &regs, sfu_snapshot_read, &w.snap, frames, 16, &n),
			 SFU_STOP_OUTERMOST);
	assert_int_equal(n, 4);
	assert_int_equal(frames[1].addr, rt(F_TRAMP + 4));
	assert_int_equal(frames[2].addr, rt(F_INTR + 0x10));
	assert_int_equal(frames[2].kind, SFU_FRAME_PC);
	/* from x30 as the kernel saved it */
	assert_int_equal(frames[3].addr, rt(F_ROOT + 0x40));
	sfu_addrspace__free(w.as);
}

/* An unusable row stops the unwind as unusable, though its RA reads as undefined. */
static void test_unusable_row(void **state)
{
	SFU_OPTS(sfu_unwind_opts, opts, .arch = SFU_ARCH_X86_64);
	static struct sfu_row rows[2];
	struct sfu_sframe_func funcs[1];
	struct sfu_regs regs;
	struct sfu_step step;
	struct world w;

	(void)state;
	rows[0] = (struct sfu_row){ .start = 0, .flags = SFU_ROW_FLEX, .cfa = reg_off(SFU_REG_SP, 8),
				    .ra = at_cfa(-8), .fp = same };
	rows[1] = (struct sfu_row){ .start = 4, .flags = SFU_ROW_FLEX | SFU_ROW_UNUSABLE,
				    .cfa = reg_off(SFU_REG_SP, 16), .ra = undef, .fp = same };
	funcs[0] = (struct sfu_sframe_func){ .start = F_LEAF, .size = 0x100, .rows = rows, .num_rows = 2 };
	world_init(&w, make_module_v(SFU_SFRAME_ABI_AMD64_LE, 3, funcs, 1));
	push(&w, rt(F_ROOT + 0x20));
	push(&w, 0);
	regs = (struct sfu_regs){ .pc = rt(F_LEAF + 8), .sp = w.sp, .fp = w.sp };
	/* neither the outermost frame nor a frame-pointer guess */
	assert_int_equal(sfu_unwind_step(w.as, &opts, &regs, 1, sfu_snapshot_read, &w.snap, &step),
			 SFU_STOP_BAD_INFO);
	sfu_addrspace__free(w.as);
}

static void test_snapshot_read_bounds(void **state)
{
	uint8_t data[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	struct sfu_snapshot s = { 0x1000, data, sizeof(data) };
	uint64_t v;

	(void)state;
	assert_int_equal(sfu_snapshot_read(&s, 0x1000, &v, 8), 0);
	assert_int_equal(sfu_snapshot_read(&s, 0x1008, &v, 8), 0);
	assert_int_equal(sfu_snapshot_read(&s, 0x1009, &v, 8), -EFAULT);
	assert_int_equal(sfu_snapshot_read(&s, 0xff8, &v, 8), -EFAULT);
	assert_int_equal(sfu_snapshot_read(&s, UINT64_MAX - 3, &v, 8), -EFAULT);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(sfu_stop_name(SFU_STOP_OUTERMOST), "outermost frame");
	assert_string_equal(sfu_stop_name(SFU_STOP_CFA_NOT_INCREASING), "CFA not increasing");
	assert_string_equal(sfu_stop_name(SFU_STOP_STACK_SWITCH), "stack switched");
	assert_string_equal(sfu_source_name(SFU_SRC_FP), "fp");
	assert_string_equal(sfu_stop_name(99), "unknown");
}

/* ---- options from callers built against other headers (SFU_OPTS, sz) ---- */

#define END_OF(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/*
 * struct sfu_unwind_opts as the header declared it before fp_only: what a
 * client built then passes, with sz = sizeof of this.
 */
struct opts_before_fp_only {
	size_t sz;
	enum sfu_arch arch;
	int no_fp_fallback;
	uint64_t pac_mask;
	struct sfu_unwind_cache *cache;
};

/* Room for a caller's struct and what lies past it in the caller's memory. */
union opts_mem {
	struct sfu_unwind_opts opts;
	uint64_t align;
	unsigned char bytes[sizeof(struct sfu_unwind_opts) + 32];
};

/* sfu_unwind() on the x86 chain with @opts: @return the stop, the frame count in *@n. */
static int unwind_chain(const struct sfu_unwind_opts *opts, size_t *n)
{
	struct sfu_frame frames[16];
	struct world w;
	struct sfu_regs regs;
	uint64_t want[8];
	size_t nwant;
	int stop;

	world_init(&w, x86_module());
	build_x86_chain(&w, &regs, want, &nwant);
	*n = 99;
	stop = sfu_unwind(w.as, opts, &regs, sfu_snapshot_read, &w.snap, frames, 16, n);
	if (stop == SFU_STOP_OUTERMOST) {
		assert_int_equal(*n, nwant);
		for (size_t i = 0; i < nwant; i++)
			assert_int_equal(frames[i].addr, want[i]);
	}
	sfu_addrspace__free(w.as);
	return stop;
}

/* sfu_unwind_step() from the chain's first frame with @opts: @return 0 or the stop. */
static int step_chain(const struct sfu_unwind_opts *opts, struct sfu_step *step)
{
	struct world w;
	struct sfu_regs regs;
	uint64_t want[8];
	size_t nwant;
	int stop;

	world_init(&w, x86_module());
	build_x86_chain(&w, &regs, want, &nwant);
	stop = sfu_unwind_step(w.as, opts, &regs, 1, sfu_snapshot_read, &w.snap, step);
	sfu_addrspace__free(w.as);
	return stop;
}

/*
 * A client built before fp_only: its struct ends before the field, and its
 * memory past sz is anything (all ones here, which as fp_only would walk
 * frame pointers only and lose mid and fpbased). The library must read
 * fp_only as 0 and walk the tables, honouring the fields the client set.
 */
static void test_opts_older_caller(void **state)
{
	struct opts_before_fp_only old = { .sz = sizeof(old), .arch = SFU_ARCH_X86_64,
					   .no_fp_fallback = 1 };
	const size_t cuts[] = { sizeof(old), END_OF(struct opts_before_fp_only, arch),
				sizeof(size_t) };
	union opts_mem mem;
	struct sfu_step step;
	size_t n;

	(void)state;
	assert_true(sizeof(old) <= offsetof(struct sfu_unwind_opts, fp_only));
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		memset(mem.bytes, 0xff, sizeof(mem.bytes));
		old.sz = cuts[i];
		memcpy(mem.bytes, &old, cuts[i]);
		assert_int_equal(unwind_chain(&mem.opts, &n), SFU_STOP_OUTERMOST);
		assert_int_equal(step_chain(&mem.opts, &step), 0);
		assert_int_equal(step.source, SFU_SRC_SFRAME);
		assert_int_equal(step.regs.pc, rt(F_MID + 0x10));
	}
	/* the same bytes read whole (sz of today's struct) are fp_only: proof the cut mattered */
	memset(mem.bytes, 0, sizeof(mem.bytes));
	memcpy(mem.bytes, &old, sizeof(old));
	mem.opts.sz = sizeof(mem.opts);
	mem.opts.fp_only = -1;
	assert_int_equal(unwind_chain(&mem.opts, &n), SFU_STOP_NO_INFO);
	assert_int_equal(n, 2);
}

/*
 * A client built against a newer header: a larger sz is fine while every
 * byte this library does not know is zero, the fields it knows still apply;
 * one nonzero byte there asks for something it cannot do: -EINVAL, no frame.
 */
static void test_opts_newer_caller(void **state)
{
	const size_t known = END_OF(struct sfu_unwind_opts, fp_only);
	/* a field past fp_only set: right after it (today's tail padding), and the last byte */
	const size_t at[] = { known, sizeof(union opts_mem) - 1 };
	union opts_mem mem;
	struct sfu_step step;
	size_t n;

	(void)state;
	memset(mem.bytes, 0, sizeof(mem.bytes));
	mem.opts.sz = sizeof(mem.bytes);
	mem.opts.arch = SFU_ARCH_X86_64;
	assert_int_equal(unwind_chain(&mem.opts, &n), SFU_STOP_OUTERMOST);
	mem.opts.fp_only = 1;
	assert_int_equal(unwind_chain(&mem.opts, &n), SFU_STOP_NO_INFO);
	assert_int_equal(n, 2);
	mem.opts.fp_only = 0;
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		mem.bytes[at[i]] = 1;
		assert_int_equal(unwind_chain(&mem.opts, &n), -EINVAL);
		assert_int_equal(n, 0);
		assert_int_equal(step_chain(&mem.opts, &step), -EINVAL);
		mem.bytes[at[i]] = 0;
	}
	/* nonzero bytes past sz are not the caller's: not looked at */
	mem.opts.sz = known;
	mem.bytes[sizeof(mem.bytes) - 1] = 1;
	assert_int_equal(unwind_chain(&mem.opts, &n), SFU_STOP_OUTERMOST);
}

/* sz too small to hold sz itself (a struct zeroed without SFU_OPTS()): -EINVAL. */
static void test_opts_bad_size(void **state)
{
	const size_t sizes[] = { 0, 1, sizeof(size_t) - 1 };
	union opts_mem mem;
	struct sfu_step step;
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		memset(mem.bytes, 0, sizeof(mem.bytes));
		mem.opts.sz = sizes[i];
		assert_int_equal(unwind_chain(&mem.opts, &n), -EINVAL);
		assert_int_equal(n, 0);
		assert_int_equal(step_chain(&mem.opts, &step), -EINVAL);
	}
	/* sz alone: every field takes its default */
	mem.opts.sz = sizeof(size_t);
	assert_int_equal(unwind_chain(&mem.opts, &n), SFU_STOP_OUTERMOST);
}

/* NULL options are the defaults: x86-64, tables then frame pointers. */
static void test_opts_null(void **state)
{
	SFU_OPTS(sfu_unwind_opts, opts);
	struct sfu_step with_null, with_defaults;
	size_t n;

	(void)state;
	assert_int_equal(opts.sz, sizeof(opts));
	assert_int_equal(unwind_chain(NULL, &n), SFU_STOP_OUTERMOST);
	assert_int_equal(step_chain(NULL, &with_null), 0);
	assert_int_equal(step_chain(&opts, &with_defaults), 0);
	assert_memory_equal(&with_null.regs, &with_defaults.regs, sizeof(with_null.regs));
	assert_int_equal(with_null.source, with_defaults.source);
	assert_int_equal(with_null.kind, with_defaults.kind);
}

/*
 * The encoder's options grow the same way: an older struct reads its
 * missing fields as 0 (addr, here), a newer one's unknown bytes must be 0,
 * and NULL is -EINVAL (the version has no default).
 */
static void test_enc_opts_sizes(void **state)
{
	const struct sfu_sframe_func fn = { .start = F_LEAF, .size = 0x100, .rows = leaf_rows,
					    .num_rows = 2 };
	const size_t known = END_OF(struct sfu_sframe_enc_opts, addr);
	SFU_OPTS(sfu_sframe_enc_opts, o, .version = 2, .abi = SFU_SFRAME_ABI_AMD64_LE,
		 .cfa_fixed_ra_offset = -8);
	union {
		struct sfu_sframe_enc_opts opts;
		unsigned char bytes[sizeof(struct sfu_sframe_enc_opts) + 16];
	} mem;
	struct sfu_diag diag = { 0 };
	void *want, *got;
	size_t want_len, got_len;

	(void)state;
	init_x86_rows();
	assert_int_equal(sfu_sframe_encode(&o, &fn, 1, &want, &want_len, &diag), 0);
	/* a struct that ends before addr, with garbage where addr would be */
	memset(mem.bytes, 0xff, sizeof(mem.bytes));
	memcpy(mem.bytes, &o, offsetof(struct sfu_sframe_enc_opts, addr));
	mem.opts.sz = offsetof(struct sfu_sframe_enc_opts, addr);
	assert_int_equal(sfu_sframe_encode(&mem.opts, &fn, 1, &got, &got_len, &diag), 0);
	assert_bytes_equal(got, got_len, want, want_len);
	free(got);
	/* a larger one, zero past what the library knows */
	memset(mem.bytes, 0, sizeof(mem.bytes));
	memcpy(mem.bytes, &o, sizeof(o));
	mem.opts.sz = sizeof(mem.bytes);
	assert_int_equal(sfu_sframe_encode(&mem.opts, &fn, 1, &got, &got_len, &diag), 0);
	assert_bytes_equal(got, got_len, want, want_len);
	free(got);
	mem.bytes[known] = 1;
	assert_int_equal(sfu_sframe_encode(&mem.opts, &fn, 1, &got, &got_len, &diag), -EINVAL);
	assert_int_equal(diag.err, -EINVAL);
	mem.opts.sz = 0;
	assert_int_equal(sfu_sframe_encode(&mem.opts, &fn, 1, &got, &got_len, NULL), -EINVAL);
	assert_int_equal(sfu_sframe_encode(NULL, &fn, 1, &got, &got_len, NULL), -EINVAL);
	free(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_x86_chain),
		cmocka_unit_test(test_x86_step_matches_unwind),
		cmocka_unit_test(test_fp_fallback),
		cmocka_unit_test(test_fp_only),
		cmocka_unit_test(test_cfa_not_increasing),
		cmocka_unit_test(test_aarch64),
		cmocka_unit_test(test_x86_signal_frame),
		cmocka_unit_test(test_aarch64_signal_frame),
		cmocka_unit_test(test_unusable_row),
		cmocka_unit_test(test_snapshot_read_bounds),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_opts_older_caller),
		cmocka_unit_test(test_opts_newer_caller),
		cmocka_unit_test(test_opts_bad_size),
		cmocka_unit_test(test_opts_null),
		cmocka_unit_test(test_enc_opts_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
