/* SPDX-License-Identifier: BSD-2-Clause */
/* The unwinder: one step per frame from SFrame rows (.sframe, then rows derived from
 * .eh_frame), frame pointers where no table covers. */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sfunwind/unwind.h"
#include "gopclntab_internal.h"
#include "module_internal.h"
#include "opts_internal.h"
#include "sframe_internal.h"

#define AARCH64_DEFAULT_PAC_MASK 0xffff000000000000ull

#define CACHE_SLOTS 1024	/* direct-mapped; a power of two */

/*
 * Where the kernel's signal frame keeps the interrupted registers, as offsets
 * from the SP in the trampoline that returns from the handler (sigreturn).
 *
 * x86-64: the handler's `ret` popped rt_sigframe.pretcode, so the SP points at
 * the struct ucontext; uc_mcontext follows uc_flags, uc_link and uc_stack
 * (40 bytes) and its registers are r8 ... r15, rdi, rsi, rbp, rbx, rdx, rax,
 * rcx, rsp, rip: gregs[REG_RBP = 10], [REG_RSP = 15], [REG_RIP = 16].
 *
 * AArch64: the SP points at struct rt_sigframe { siginfo (128 bytes); struct
 * ucontext }, whose uc_mcontext (16-aligned after a 1024-bit sigmask) is at
 * +176: fault_address, regs[31], sp, pc.
 */
#define X86_64_SIGFRAME_RBP	(40 + 10 * 8)
#define X86_64_SIGFRAME_RSP	(40 + 15 * 8)
#define X86_64_SIGFRAME_RIP	(40 + 16 * 8)
#define AARCH64_SIGFRAME_REGS	(128 + 176 + 8)
#define AARCH64_SIGFRAME_X29	(AARCH64_SIGFRAME_REGS + 29 * 8)
#define AARCH64_SIGFRAME_X30	(AARCH64_SIGFRAME_REGS + 30 * 8)
#define AARCH64_SIGFRAME_SP	(AARCH64_SIGFRAME_REGS + 31 * 8)
#define AARCH64_SIGFRAME_PC	(AARCH64_SIGFRAME_REGS + 32 * 8)

struct cache_slot {
	uint64_t table;		/* sframe_id() of the table, 0 = empty */
	uint64_t pc;		/* in the table's address space */
	struct sfu_row row;	/* decoded: tables keep their rows encoded */
};

struct sfu_unwind_cache {
	struct cache_slot slot[CACHE_SLOTS];
};

struct sfu_unwind_cache *sfu_unwind_cache__new(void)
{
	return calloc(1, sizeof(struct sfu_unwind_cache));
}

void sfu_unwind_cache__free(struct sfu_unwind_cache *cache)
{
	free(cache);
}

int sfu_snapshot_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct sfu_snapshot *s = ctx;
	uint64_t off = addr - s->base;

	if (addr < s->base || off > s->size || len > s->size - off)
		return -EFAULT;
	memcpy(buf, s->data + off, len);
	return 0;
}

static inline int read_u64(sfu_read_fn read, void *ctx, uint64_t addr, uint64_t *v)
{
	/* the profiler's reader, inlined: an indirect call per word is a third of a frame */
	if (read == sfu_snapshot_read) {
		const struct sfu_snapshot *s = ctx;
		uint64_t off = addr - s->base;

		if (addr < s->base || off > s->size || sizeof(*v) > s->size - off)
			return -EFAULT;
		memcpy(v, s->data + off, sizeof(*v));
		return 0;
	}
	return read(ctx, addr, v, sizeof(*v));
}

/* The value of register @reg of the frame being unwound, or -1 when unknown. */
static int reg_value(const struct sfu_regs *regs, const struct sfu_unwind_opts *opts, int first,
		     uint8_t reg, uint64_t *v)
{
	switch (reg) {
	case SFU_REG_SP:
		*v = regs->sp;
		return 0;
	case SFU_REG_FP:
		*v = regs->fp;
		return 0;
	case SFU_REG_RA:
		/* the link register holds the RA only until the callee saves or reuses it */
		if (opts->arch != SFU_ARCH_AARCH64 || !first)
			return -1;
		*v = regs->lr;
		return 0;
	default:
		return -1;
	}
}

/*
 * Recover the value a loc describes. Returns 0, SFU_STOP_BAD_INFO or
 * SFU_STOP_MEMORY. @same is the value when the loc says "unchanged".
 */
static inline __attribute__((always_inline)) int loc_value(const struct sfu_loc *loc, uint64_t cfa, uint64_t same,
		     const struct sfu_regs *regs, const struct sfu_unwind_opts *opts, int first,
		     sfu_read_fn read, void *ctx, uint64_t *v)
{
	uint64_t base;

	switch (loc->kind) {
	case SFU_LOC_SAME:
		*v = same;
		return 0;
	case SFU_LOC_AT_CFA:
		return read_u64(read, ctx, cfa + (int64_t)loc->offset, v) ? SFU_STOP_MEMORY : 0;
	case SFU_LOC_IN_REG:
		if (reg_value(regs, opts, first, loc->reg, &base))
			return SFU_STOP_BAD_INFO;
		*v = base + (int64_t)loc->offset;
		return 0;
	case SFU_LOC_DEREF:
		if (reg_value(regs, opts, first, loc->reg, &base))
			return SFU_STOP_BAD_INFO;
		return read_u64(read, ctx, base + (int64_t)loc->offset, v) ? SFU_STOP_MEMORY : 0;
	default:
		return SFU_STOP_BAD_INFO;
	}
}

/*
 * A signal trampoline: the caller is the interrupted code, whose registers
 * the kernel saved on the stack. Its pc is precise, not a return address.
 */
static int step_signal(const struct sfu_unwind_opts *opts, const struct sfu_regs *regs,
		       sfu_read_fn read, void *ctx, struct sfu_step *out)
{
	uint64_t pc, sp, fp, lr = 0;

	if (opts->arch == SFU_ARCH_AARCH64) {
		if (read_u64(read, ctx, regs->sp + AARCH64_SIGFRAME_PC, &pc) ||
		    read_u64(read, ctx, regs->sp + AARCH64_SIGFRAME_SP, &sp) ||
		    read_u64(read, ctx, regs->sp + AARCH64_SIGFRAME_X29, &fp) ||
		    read_u64(read, ctx, regs->sp + AARCH64_SIGFRAME_X30, &lr))
			return SFU_STOP_MEMORY;
	} else {
		if (read_u64(read, ctx, regs->sp + X86_64_SIGFRAME_RIP, &pc) ||
		    read_u64(read, ctx, regs->sp + X86_64_SIGFRAME_RSP, &sp) ||
		    read_u64(read, ctx, regs->sp + X86_64_SIGFRAME_RBP, &fp))
			return SFU_STOP_MEMORY;
	}
	/*
	 * No CFA check: on an alternate signal stack the interrupted SP may lie
	 * below the frame. The depth limit bounds a loop.
	 */
	out->regs.pc = pc;
	out->regs.sp = sp;
	out->regs.fp = fp;
	out->regs.lr = lr;
	out->kind = SFU_FRAME_PC;
	return pc ? 0 : SFU_STOP_OUTERMOST;
}

static int step_row(const struct sfu_row *row, const struct sfu_unwind_opts *opts,
		    const struct sfu_regs *regs, int first, sfu_read_fn read, void *ctx,
		    struct sfu_step *out)
{
	uint64_t cfa, base, ra, fp;
	int stop;

	if (row->flags & SFU_ROW_SIGNAL_FRAME)
		return step_signal(opts, regs, read, ctx, out);
	/* before the RA: an unusable row may leave it undefined, which is not the outermost frame */
	if (row->flags & SFU_ROW_UNUSABLE)
		return SFU_STOP_BAD_INFO;
	if (row->ra.kind == SFU_LOC_UNDEFINED)
		return SFU_STOP_OUTERMOST;

	if (reg_value(regs, opts, first, row->cfa.reg, &base))
		return SFU_STOP_BAD_INFO;
	cfa = base + (int64_t)row->cfa.offset;
	if (row->cfa.kind == SFU_LOC_DEREF) {
		if (read_u64(read, ctx, cfa, &cfa))
			return SFU_STOP_MEMORY;
	} else if (row->cfa.kind != SFU_LOC_REG_OFFSET) {
		return SFU_STOP_BAD_INFO;
	}

	stop = loc_value(&row->ra, cfa, 0, regs, opts, first, read, ctx, &ra);
	if (!stop && row->ra.kind == SFU_LOC_SAME)
		stop = SFU_STOP_BAD_INFO;	/* a caller cannot return to itself */
	if (stop)
		return stop;
	/*
	 * In an epilogue after `pop %rbp` the row still names the FP's slot, now
	 * below the SP: the register already holds the caller's value.
	 */
	if (first && row->fp.kind == SFU_LOC_AT_CFA && cfa + (int64_t)row->fp.offset < regs->sp)
		fp = regs->fp;
	else if ((stop = loc_value(&row->fp, cfa, regs->fp, regs, opts, first, read, ctx, &fp)))
		return stop;

	if (row->flags & SFU_ROW_MANGLED_RA)
		ra &= ~(opts->pac_mask ? opts->pac_mask : AARCH64_DEFAULT_PAC_MASK);
	/* the interrupted frame may not have moved the stack yet (AArch64 leaf) */
	if (cfa < regs->sp || (cfa == regs->sp && !first))
		return SFU_STOP_CFA_NOT_INCREASING;

	out->regs.pc = ra;
	out->regs.sp = cfa;
	out->regs.fp = fp;
	out->regs.lr = 0;
	out->kind = SFU_FRAME_RA;
	return ra ? 0 : SFU_STOP_OUTERMOST;
}

/* x86-64 and AArch64 frame records alike: [fp] = caller's fp, [fp + 8] = return address. */
static int step_fp(const struct sfu_regs *regs, sfu_read_fn read, void *ctx, struct sfu_step *out)
{
	uint64_t rec[2];

	if (regs->fp < regs->sp || (regs->fp & 7))
		return SFU_STOP_NO_INFO;
	if (read(ctx, regs->fp, rec, sizeof(rec)))
		return SFU_STOP_MEMORY;
	if (regs->fp + 16 <= regs->sp)
		return SFU_STOP_CFA_NOT_INCREASING;
	out->regs.pc = rec[1];
	out->regs.sp = regs->fp + 16;
	out->regs.fp = rec[0];
	out->regs.lr = 0;
	out->source = SFU_SRC_FP;
	out->kind = SFU_FRAME_RA;
	return rec[1] ? 0 : SFU_STOP_OUTERMOST;
}

/* @pc's row in @sf, in a slot of @cache or else in @buf; NULL when none. */
static inline __attribute__((always_inline)) const struct sfu_row *table_find(const struct sfu_sframe *sf, uint64_t pc,
					struct sfu_unwind_cache *cache, struct sfu_row *buf)
{
	const struct sfu_fde *fde;
	struct cache_slot *slot;
	uint64_t id;

	if (!cache)
		return sfu_sframe__lookup(sf, pc, &fde, buf) ? NULL : buf;
	id = sframe_id(sf);
	slot = &cache->slot[(pc ^ (pc >> 12) ^ id * 0x9e3779b97f4a7c15ull) & (CACHE_SLOTS - 1)];
	if (slot->table == id && slot->pc == pc)
		return &slot->row;
	if (sfu_sframe__lookup(sf, pc, &fde, buf))
		return NULL;
	slot->table = id;
	slot->pc = pc;
	slot->row = *buf;
	return &slot->row;
}

/*
 * The row for @pc, through a one-entry mapping cache; *last is the pc's
 * mapping or NULL. The module's .sframe first, then the rows derived from
 * its .eh_frame; *source says which.
 */
static const struct sfu_row *find_row(const struct sfu_addrspace *as, uint64_t pc,
				      struct sfu_unwind_cache *cache, struct sfu_row *buf,
				      const struct sfu_mapping **last, uint8_t *source)
{
	const struct sfu_mapping *m = *last;
	const struct sfu_sframe *sf;
	const struct sfu_row *row;

	if (!m || pc < m->start || pc >= m->end) {
		m = sfu_addrspace__find(as, pc);
		*last = m;
		if (!m)
			return NULL;
	}
	if (!m->module)
		return NULL;
	if ((sf = sfu_module__sframe(m->module)) && (row = table_find(sf, pc - m->bias, cache, buf))) {
		*source = SFU_SRC_SFRAME;
		return row;
	}
	if ((sf = sfu_module__eh_frame_table(m->module)) &&
	    (row = table_find(sf, pc - m->bias, cache, buf))) {
		*source = SFU_SRC_EH_FRAME;
		return row;
	}
	return NULL;
}

/*
 * AArch64 PLT stubs have no SFrame rows (ld writes none) but a known rule:
 * they neither move the SP nor touch the link register.
 */
static const struct sfu_row aarch64_plt_row = {
	.cfa = { .kind = SFU_LOC_REG_OFFSET, .reg = SFU_REG_SP },
	.ra = { .kind = SFU_LOC_IN_REG, .reg = SFU_REG_RA },
	.fp = { .kind = SFU_LOC_SAME, .reg = SFU_REG_FP },
};

/* Returned by step_go() for a pc its table does not cover. */
#define GO_NOT_COVERED (-1)

/* Go's signal handler entry: TOPFRAME for Go's traceback, but its caller is the signal frame. */
static bool go_sigtramp(const char *name)
{
	return !strcmp(name, "runtime.sigtramp") || !strcmp(name, "runtime.cgoSigtramp");
}

/*
 * A Go frame on AArch64, @delta bytes deep: Go stores the LR at the new SP's
 * slot 0 and the caller's FP just below it (FP = SP - 8). With no frame yet
 * (a frameless leaf, a prologue) the RA is still in the link register.
 */
static int step_go_aarch64(const struct sfu_regs *regs, int first, int32_t delta,
			   sfu_read_fn read, void *ctx, uint64_t *ra, uint64_t *fp)
{
	*fp = regs->fp;
	if (!delta) {
		if (!first)
			return SFU_STOP_BAD_INFO;
		*ra = regs->lr;
		return 0;
	}
	if (read_u64(read, ctx, regs->sp, ra))
		return SFU_STOP_MEMORY;
	if (*fp == regs->sp - 8 && read_u64(read, ctx, regs->sp - 8, fp))
		return SFU_STOP_MEMORY;
	return 0;
}

/*
 * Go code, from the pc-to-SP-delta table Go's own unwinder reads: exact in
 * frameless functions, which keep no frame record. On x86-64 the RA is at
 * SP + delta; the function has made a frame record when the FP points just
 * below it (a duffzero call borrows one its caller made the same way).
 * @return 0, a stop reason, or GO_NOT_COVERED.
 */
static int step_go(const struct sfu_mapping *m, const struct sfu_unwind_opts *opts,
		   const struct sfu_regs *regs, int first, sfu_read_fn read, void *ctx,
		   struct sfu_step *out)
{
	uint64_t pc = (first ? regs->pc : regs->pc - 1) - m->bias;
	const struct sfu_gopclntab *t;
	uint64_t sigreturn, cfa, ra, fp;
	struct go_func f;
	int32_t delta;
	int err;

	t = sfu_module__gopclntab(m->module, &sigreturn);
	if (!t || sfu_gopclntab__ptr_size(t) != 8 ||
	    (opts->arch != SFU_ARCH_X86_64 && opts->arch != SFU_ARCH_AARCH64))
		return GO_NOT_COVERED;
	/* Go sets sa_restorer on x86 only: AArch64 returns through the vDSO's trampoline */
	if (opts->arch != SFU_ARCH_X86_64)
		sigreturn = 0;
	/* the handler returns to sa_restorer's first byte: pc - 1 is another function */
	if (sigreturn && regs->pc - m->bias == sigreturn && !first) {
		out->source = SFU_SRC_GOPCLNTAB;
		return step_signal(opts, regs, read, ctx, out);
	}
	err = sfu_gopclntab__find(t, pc, &f);
	if (err == -ENOENT)
		return GO_NOT_COVERED;
	out->source = SFU_SRC_GOPCLNTAB;
	if (err)
		return SFU_STOP_BAD_INFO;
	if (sigreturn && f.entry == sigreturn)
		return step_signal(opts, regs, read, ctx, out);
	if ((f.flags & GO_FUNC_TOPFRAME) && !go_sigtramp(f.name))
		return SFU_STOP_OUTERMOST;
	/*
	 * systemstack, mcall, morestack: the code they call runs on a stack
	 * that starts at them (the g0 stack, whose older frames are stale).
	 * Inside one, the SP may already be the other stack's. The frames
	 * that called them are on the goroutine's stack, which Go finds
	 * through the g register: the stack is cut here, not complete.
	 */
	if ((f.flags & GO_FUNC_SPWRITE) && !go_sigtramp(f.name))
		return first ? SFU_STOP_BAD_INFO : SFU_STOP_STACK_SWITCH;
	if (sfu_gopclntab__spdelta(t, &f, pc, &delta, NULL) || delta < 0)
		return SFU_STOP_BAD_INFO;
	if (opts->arch == SFU_ARCH_AARCH64) {
		cfa = regs->sp + (uint64_t)delta;
		if ((err = step_go_aarch64(regs, first, delta, read, ctx, &ra, &fp)))
			return err;
	} else {
		cfa = regs->sp + (uint64_t)delta + 8;
		if (read_u64(read, ctx, cfa - 8, &ra))
			return SFU_STOP_MEMORY;
		fp = regs->fp;
		if (fp == cfa - 16 && read_u64(read, ctx, cfa - 16, &fp))
			return SFU_STOP_MEMORY;
	}
	out->regs.pc = ra;
	out->regs.sp = cfa;
	out->regs.fp = fp;
	out->regs.lr = 0;
	/*
	 * asyncPreempt was entered by a signal handler that pushed the
	 * interrupted pc; a handler returns to sa_restorer's first byte. Neither
	 * follows a call: each is looked up as it is.
	 */
	out->kind = strcmp(f.name, "runtime.asyncPreempt") && (!sigreturn || ra - m->bias != sigreturn)
			    ? SFU_FRAME_RA : SFU_FRAME_PC;
	return ra ? 0 : SFU_STOP_OUTERMOST;
}

/* Whether @pc lies in the entry routine of @m's module (sfu_module__entry()). */
static bool in_entry(const struct sfu_mapping *m, uint64_t pc)
{
	uint64_t start, end;

	return sfu_module__entry(m->module, &start, &end) && pc - m->bias >= start &&
	       pc - m->bias < end;
}

static int step(const struct sfu_addrspace *as, const struct sfu_unwind_opts *opts,
		const struct sfu_regs *regs, int first, sfu_read_fn read, void *ctx,
		struct sfu_step *out, const struct sfu_mapping **last)
{
	/* a return address may be one past the end of a call to a noreturn function */
	uint64_t pc = first ? regs->pc : regs->pc - 1;
	uint8_t source = SFU_SRC_SFRAME;
	struct sfu_row buf;
	const struct sfu_row *row;
	const struct sfu_mapping *m;

	if (opts->fp_only)
		return step_fp(regs, read, ctx, out);
	row = find_row(as, pc, opts->cache, &buf, last, &source);
	m = *last;
	if (!row && first && opts->arch == SFU_ARCH_AARCH64 && m && m->module &&
	    sfu_module__in_plt(m->module, pc - m->bias))
		row = &aarch64_plt_row;
	if (row) {
		out->source = source;
		return step_row(row, opts, regs, first, read, ctx, out);
	}
	if (m && m->module) {
		int stop = step_go(m, opts, regs, first, read, ctx, out);

		if (stop != GO_NOT_COVERED)
			return stop;
	}
	/* where a process starts: crt1.o's _start has no .sframe, and a stripped program no .eh_frame */
	if (m && m->module && in_entry(m, pc))
		return SFU_STOP_OUTERMOST;
	if (opts->no_fp_fallback)
		return SFU_STOP_NO_INFO;
	return step_fp(regs, read, ctx, out);
}

/*
 * The caller's options as this library's struct: fields past the caller's sz
 * read as their default, so that step() never reads past the caller's struct.
 * @return 0, or -EINVAL for options this library cannot honour.
 */
static int opts_load(const struct sfu_unwind_opts *opts, struct sfu_unwind_opts *o)
{
	if (!OPTS_VALID(opts, sfu_unwind_opts))
		return -EINVAL;
	*o = (struct sfu_unwind_opts){
		.sz = sizeof(*o),
		.arch = OPTS_GET(opts, arch, SFU_ARCH_X86_64),
		.no_fp_fallback = OPTS_GET(opts, no_fp_fallback, 0),
		.pac_mask = OPTS_GET(opts, pac_mask, 0),
		.cache = OPTS_GET(opts, cache, NULL),
		.fp_only = OPTS_GET(opts, fp_only, 0),
	};
	return 0;
}

int sfu_unwind_step(const struct sfu_addrspace *as, const struct sfu_unwind_opts *opts,
		    const struct sfu_regs *regs, int first, sfu_read_fn read, void *ctx,
		    struct sfu_step *out)
{
	const struct sfu_mapping *last = NULL;
	struct sfu_unwind_opts o;
	int err;

	err = opts_load(opts, &o);
	if (err)
		return err;
	return step(as, &o, regs, first, read, ctx, out, &last);
}

int sfu_unwind(const struct sfu_addrspace *as, const struct sfu_unwind_opts *opts,
	       const struct sfu_regs *regs, sfu_read_fn read, void *ctx,
	       struct sfu_frame *frames, size_t max, size_t *count)
{
	const struct sfu_mapping *last = NULL;
	struct sfu_regs cur = *regs;
	struct sfu_unwind_opts o;
	struct sfu_step next;
	size_t n = 0;
	int stop;

	*count = 0;
	stop = opts_load(opts, &o);
	if (stop)
		return stop;
	if (!max)
		return SFU_STOP_DEPTH;
	frames[n++] = (struct sfu_frame){ cur.pc, SFU_FRAME_PC, SFU_SRC_NONE };
	for (;;) {
		if (n == max) {
			stop = SFU_STOP_DEPTH;
			break;
		}
		/* the interrupted frame, and a frame a signal interrupted, have a precise pc */
		stop = step(as, &o, &cur, frames[n - 1].kind == SFU_FRAME_PC, read, ctx, &next,
			    &last);
		if (stop)
			break;
		frames[n++] = (struct sfu_frame){ next.regs.pc, next.kind, next.source };
		cur = next.regs;
	}
	*count = n;
	return stop;
}

/* sfu_unwind_lookup() in a Go program's table: the row step_go() applies, less its FP tests. */
static int lookup_go(const struct sfu_mapping *m, uint64_t pc, struct sfu_lookup *out)
{
	uint16_t machine = sfu_module__machine(m->module);
	uint64_t run_start, sigreturn;
	const struct sfu_gopclntab *t;
	struct go_func f;
	int32_t delta;

	t = sfu_module__gopclntab(m->module, &sigreturn);
	if (!t || (machine != EM_X86_64 && machine != EM_AARCH64) ||
	    sfu_gopclntab__ptr_size(t) != 8 || sfu_gopclntab__find(t, pc - m->bias, &f))
		return -ENOENT;
	if (machine != EM_X86_64)
		sigreturn = 0;
	out->func_start = f.entry + m->bias;
	out->func_end = f.end + m->bias;
	out->row_start = out->func_start;
	out->source = SFU_SRC_GOPCLNTAB;
	out->row_buf.cfa = (struct sfu_loc){ .kind = SFU_LOC_REG_OFFSET, .reg = SFU_REG_SP };
	out->row_buf.fp = (struct sfu_loc){ .kind = SFU_LOC_SAME, .reg = SFU_REG_FP };
	if (sigreturn && f.entry == sigreturn) {
		out->row_buf.flags = SFU_ROW_SIGNAL_FRAME;
		out->row_buf.ra.kind = SFU_LOC_UNDEFINED;
	} else if ((f.flags & (GO_FUNC_TOPFRAME | GO_FUNC_SPWRITE)) && !go_sigtramp(f.name)) {
		out->row_buf.ra.kind = SFU_LOC_UNDEFINED;
	} else if (sfu_gopclntab__spdelta(t, &f, pc - m->bias, &delta, &run_start) || delta < 0) {
		out->row_buf.flags = SFU_ROW_UNUSABLE;
		out->row_buf.ra.kind = SFU_LOC_UNDEFINED;
	} else {
		out->row_start = run_start + m->bias;
		out->row_buf.start = (uint32_t)(run_start - f.entry);
		if (machine == EM_AARCH64) {
			out->row_buf.cfa.offset = delta;
			out->row_buf.ra = delta ? (struct sfu_loc){ .kind = SFU_LOC_AT_CFA,
								    .offset = -delta }
					        : (struct sfu_loc){ .kind = SFU_LOC_IN_REG,
								    .reg = SFU_REG_RA };
		} else {
			out->row_buf.cfa.offset = delta + 8;
			out->row_buf.ra = (struct sfu_loc){ .kind = SFU_LOC_AT_CFA, .offset = -8 };
		}
	}
	out->row = &out->row_buf;
	return 0;
}

int sfu_unwind_lookup(const struct sfu_addrspace *as, uint64_t pc, struct sfu_lookup *out)
{
	const struct sfu_sframe *tables[2];
	const struct sfu_mapping *m;
	const struct sfu_fde *fde;
	const struct sfu_row *row;
	size_t i;

	memset(out, 0, sizeof(*out));
	m = sfu_addrspace__find(as, pc);
	out->mapping = m;
	if (!m || !m->module)
		return -ENOENT;
	tables[0] = sfu_module__sframe(m->module);
	tables[1] = sfu_module__eh_frame_table(m->module);
	for (i = 0; i < 2; i++) {
		if (!tables[i] || sfu_sframe__find(tables[i], pc - m->bias, &fde, &row))
			continue;
		out->fde = fde;
		out->row = row;
		out->func_start = fde->start + m->bias;
		out->func_end = out->func_start + fde->size;
		if (fde->fde_type == SFU_FDE_PCMASK && fde->rep_size)
			out->row_start = pc - (pc - out->func_start) % fde->rep_size + row->start;
		else
			out->row_start = out->func_start + row->start;
		out->source = i == 0 ? SFU_SRC_SFRAME : SFU_SRC_EH_FRAME;
		return 0;
	}
	if (!lookup_go(m, pc, out))
		return 0;
	if (sfu_module__entry(m->module, &out->func_start, &out->func_end) &&
	    pc - m->bias >= out->func_start && pc - m->bias < out->func_end) {
		out->func_start += m->bias;
		out->func_end += m->bias;
	} else {
		out->func_start = out->func_end = 0;
	}
	return -ENOENT;
}

const char *sfu_version(void)
{
	return SFU_VERSION_STRING;
}

const char *sfu_stop_name(int stop)
{
	switch (stop) {
	case SFU_STOP_OUTERMOST: return "outermost frame";
	case SFU_STOP_NO_INFO: return "no unwind info";
	case SFU_STOP_BAD_INFO: return "unusable unwind info";
	case SFU_STOP_MEMORY: return "unreadable memory";
	case SFU_STOP_DEPTH: return "depth limit";
	case SFU_STOP_CFA_NOT_INCREASING: return "CFA not increasing";
	case SFU_STOP_STACK_SWITCH: return "stack switched";
	default: return "unknown";
	}
}

const char *sfu_source_name(int source)
{
	switch (source) {
	case SFU_SRC_NONE: return "regs";
	case SFU_SRC_SFRAME: return "sframe";
	case SFU_SRC_EH_FRAME: return "eh_frame";
	case SFU_SRC_FP: return "fp";
	case SFU_SRC_GOPCLNTAB: return "gopclntab";
	default: return "unknown";
	}
}
