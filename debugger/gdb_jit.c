/* SPDX-License-Identifier: BSD-2-Clause */
/* GDB JIT-reader plugin: unwinds the frames .sframe covers, for GDBs without Python. */
/*
 * Usage: (gdb) jit-reader-load /abs/path/to/sfunwind-gdb-jit.so
 *
 * GDB prepends the JIT reader's unwinder to every architecture's list when an
 * inferior is created (gdb/jit.c: jit_prepend_unwinder), so ours is asked
 * first about every frame, frame 0 and signal trampolines included; only
 * GDB's dummy-frame, tail-call, inline and Python unwinders come before it.
 * We claim a frame only when the .sframe section of its module covers its
 * pc and its .eh_frame does not; anything else (libc's frames, which have
 * .eh_frame, a program built with both tables, the signal trampoline) gets
 * GDB_FAIL and GDB's own unwinders keep it with their full register state
 * (and the tail-call frames GDB makes from DWARF). For a claimed frame we
 * give GDB the caller's pc, sp and frame pointer, the three registers SFrame
 * describes; every other register is left unset, which GDB shows as <not
 * saved>. (GDB 13 copies a value given to reg_set whatever its `defined`
 * field says, so "unknown" is expressed by not setting the register at all.)
 * No JIT symbols are read: `read` fails.
 *
 * Precise pc or return address. The callbacks do not say which frame level
 * GDB unwinds, but the row to use depends on it: the innermost frame of a
 * thread, and a frame a signal interrupted, stopped exactly at their pc; any
 * other frame holds a return address, whose call is at pc - 1 (the return
 * address may be the first byte of the next function after a call to a
 * noreturn function, and a precise pc at a function's first instruction
 * must not be looked up in the function before). We tell them apart, in
 * order:
 *
 *  1. The previous unwind call stepped a signal trampoline (a row marked as
 *     a signal frame: GDB's own sigtramp unwinder takes the frame, but we
 *     step it through libsfunwind anyway to see its caller, SFU_FRAME_PC)
 *     and this frame has the registers that step found: the interrupted
 *     frame, precise. GDB sniffs a frame right after the one below it
 *     (our unwinder is asked first about each), and every unwind call
 *     forgets what the previous one learnt, so only the next sniff can use
 *     it. After the process ran, that next sniff is frame 0 of a new chain:
 *     then the registers match only if frame 0 stopped exactly where the
 *     interrupted frame was, and frame 0 is precise too.
 *  2. Both readings give the same answer (same table, function and row,
 *     and the step gives the same caller): no need to know. This is the
 *     common case, so deep stacks cost no system call per frame. (A return
 *     address does not start a new row unless the call was the last
 *     instruction of its function.)
 *  3. Otherwise the frame is precise exactly when its pc and sp are a
 *     thread's own registers (jit_target__is_stop: for a live process the
 *     kernel's /proc/PID/task/TID/syscall of each stopped thread, for a core
 *     its NT_PRSTATUS notes): a caller's sp is always above its callee's,
 *     and threads do not share stacks, so no other frame can have them.
 *     When those cannot be read, we fail rather than guess.
 *
 * We do not remember the callers we give GDB to skip 2. for them: after
 * `finish` or a `stepi` over a `ret` the thread stops exactly at such a
 * caller's pc and sp, and then it is frame 0, precise.
 *
 * Which process: see gdb_jit_target.c. The row cache (sfu_unwind_cache),
 * the module cache and the address space live across calls; `destroy` frees
 * them. The plugin never prints (GDB gives readers no log callback); every
 * error is a GDB_FAIL, after which GDB's own unwinders try the frame.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <gdb/jit-reader.h>

#include "gdb_jit_internal.h"
#include "sfunwind/addrspace.h"
#include "sfunwind/module.h"
#include "sfunwind/sframe.h"
#include "sfunwind/unwind.h"

/* Our code is BSD-2-Clause, which is GPL-compatible; GDB looks the symbol up with dlsym. */
#pragma GCC visibility push(default)
GDB_DECLARE_GPL_COMPATIBLE_READER
struct gdb_reader_funcs *gdb_init_reader(void);
#pragma GCC visibility pop

/* DWARF register numbers of the registers SFrame describes. */
#if defined(__aarch64__)
#define DWARF_PC 32
#define DWARF_SP 31
#define DWARF_FP 29
#define DWARF_LR 30
#else
#define DWARF_PC 16
#define DWARF_SP 7
#define DWARF_FP 6
#define DWARF_LR -1
#endif

/* Frame ids of the frames claimed last: get_frame_id follows its unwind call. */
#define ID_SLOTS 16

struct frame_id_slot {
	uint64_t pc, sp;
	struct gdb_frame_id id;
};

struct reader {
	struct gdb_reader_funcs funcs;
	struct jit_target *target;
	struct sfu_unwind_cache *rows;
	struct sfu_unwind_opts opts;
	/* the frame a signal interrupted, as the previous unwind call found it (1. above) */
	struct {
		bool valid;
		uint64_t pc, sp;
	} interrupted;
	struct frame_id_slot ids[ID_SLOTS];
	unsigned next_id;
};

/* One frame's registers as GDB gives them. */
struct frame_regs {
	struct sfu_regs regs;
	bool fp_known;
	bool lr_known;
};

/* One reading of a frame: its pc precise or a return address. */
struct reading {
	bool precise;			/* the pc was looked up as it is */
	struct sfu_lookup lookup;	/* source SFU_SRC_NONE when nothing covers it */
	bool stepped;			/* lookup found an .sframe row or a signal-frame row */
	int stop;			/* sfu_unwind_step()'s answer */
	struct sfu_step step;
};

static int gdb_read_mem(void *ctx, uint64_t addr, void *buf, size_t len)
{
	gdb_target_read *read = (gdb_target_read *)ctx;

	if (len > 0x7fffffff)
		return -EINVAL;
	return read(addr, buf, (int)len) == GDB_SUCCESS ? 0 : -EFAULT;
}

/* @return 0 with *value set, -ENOENT when GDB does not know the register. */
static int reg_get(struct gdb_unwind_callbacks *cb, int regnum, uint64_t *value)
{
	struct gdb_reg_value *v = cb->reg_get(cb, regnum);
	int err = -ENOENT;

	if (!v)
		return err;
	if (v->defined && v->size > 0) {
		*value = 0;
		/* little-endian targets only (x86-64, AArch64), as the host */
		memcpy(value, v->value, v->size < 8 ? (size_t)v->size : 8);
		err = 0;
	}
	if (v->free)
		v->free(v);
	return err;
}

static void reg_value_free(struct gdb_reg_value *v)
{
	free(v);
}

/* @return 0, or -ENOMEM (the register then stays unknown to GDB). */
static int reg_set(struct gdb_unwind_callbacks *cb, int regnum, uint64_t value)
{
	struct gdb_reg_value *v = malloc(sizeof(*v) + sizeof(value));

	if (!v)
		return -ENOMEM;
	v->size = sizeof(value);
	v->defined = 1;
	v->free = reg_value_free;
	memcpy(v->value, &value, sizeof(value));
	cb->reg_set(cb, regnum, v);
	return 0;
}

static int read_frame(struct gdb_unwind_callbacks *cb, struct frame_regs *f)
{
	memset(f, 0, sizeof(*f));
	if (reg_get(cb, DWARF_PC, &f->regs.pc) || reg_get(cb, DWARF_SP, &f->regs.sp))
		return -ENOENT;
	f->fp_known = !reg_get(cb, DWARF_FP, &f->regs.fp);
	f->lr_known = DWARF_LR >= 0 && !reg_get(cb, DWARF_LR, &f->regs.lr);
	return 0;
}

static bool loc_uses(const struct sfu_loc *loc, uint8_t reg)
{
	return (loc->kind == SFU_LOC_REG_OFFSET || loc->kind == SFU_LOC_DEREF ||
		loc->kind == SFU_LOC_IN_REG) && loc->reg == reg;
}

static void read_as(const struct reader *r, const struct sfu_addrspace *as,
		    const struct frame_regs *f, bool precise, gdb_target_read *read,
		    struct reading *out)
{
	const struct sfu_row *row;

	memset(out, 0, sizeof(*out));
	out->precise = precise;
	if (sfu_unwind_lookup(as, precise ? f->regs.pc : f->regs.pc - 1, &out->lookup)) {
		/* no table, but the entry routine (_start): the outermost frame */
		if (out->lookup.func_start) {
			out->stepped = true;
			out->stop = SFU_STOP_OUTERMOST;
		}
		return;
	}
	row = out->lookup.row;
	if (out->lookup.source != SFU_SRC_SFRAME && !(row->flags & SFU_ROW_SIGNAL_FRAME))
		return;
	out->stepped = true;
	/* registers GDB does not know must not feed the step */
	if ((!f->fp_known && (loc_uses(&row->cfa, SFU_REG_FP) || loc_uses(&row->ra, SFU_REG_FP))) ||
	    (!f->lr_known && (loc_uses(&row->cfa, SFU_REG_RA) || loc_uses(&row->ra, SFU_REG_RA) ||
			      loc_uses(&row->fp, SFU_REG_RA)))) {
		out->stop = SFU_STOP_BAD_INFO;
		return;
	}
	out->stop = sfu_unwind_step(as, &r->opts, &f->regs, precise, gdb_read_mem, (void *)read,
				    &out->step);
}

static bool same_reading(const struct reading *a, const struct reading *b)
{
	if (a->lookup.source != b->lookup.source || a->stepped != b->stepped)
		return false;
	if (!a->stepped)
		return true;
	if (a->lookup.row != b->lookup.row || a->lookup.func_start != b->lookup.func_start ||
	    a->stop != b->stop)
		return false;
	return a->stop || (a->step.regs.pc == b->step.regs.pc && a->step.regs.sp == b->step.regs.sp &&
			   a->step.regs.fp == b->step.regs.fp && a->step.kind == b->step.kind);
}

/*
 * The reading of the frame @f that applies (see the top of the file).
 * @return 0, or a negative errno when it cannot be told.
 */
static int read_frame_as(struct reader *r, const struct sfu_addrspace *as,
			 const struct frame_regs *f, gdb_target_read *read, struct reading *out)
{
	struct reading ra;
	int stop;

	if (r->interrupted.valid && r->interrupted.pc == f->regs.pc &&
	    r->interrupted.sp == f->regs.sp) {
		read_as(r, as, f, true, read, out);
		return 0;
	}
	read_as(r, as, f, true, read, out);
	read_as(r, as, f, false, read, &ra);
	if (same_reading(out, &ra))
		return 0;
	stop = jit_target__is_stop(r->target, f->regs.pc, f->regs.sp);
	if (stop < 0)
		return stop;
	if (!stop)
		*out = ra;
	return 0;
}

static void remember_id(struct reader *r, const struct frame_regs *f, const struct reading *rd)
{
	struct frame_id_slot *slot = &r->ids[r->next_id++ % ID_SLOTS];

	slot->pc = f->regs.pc;
	slot->sp = f->regs.sp;
	slot->id.code_address = rd->lookup.func_start;
	/* the CFA, the caller's sp; an outermost frame without one is told by its own sp */
	slot->id.stack_address = rd->stop ? f->regs.sp : rd->step.regs.sp;
}

/* Whether the caller's frame pointer is known: from memory, or from a register GDB knows. */
static bool caller_fp_known(const struct frame_regs *f, const struct reading *rd)
{
	const struct sfu_row *row = rd->lookup.row;

	if (f->fp_known)
		return true;
	/* sfu_unwind_step() keeps the register in an epilogue whose slot is below the sp */
	return row->fp.kind == SFU_LOC_AT_CFA &&
	       !(rd->precise && rd->step.regs.sp + (int64_t)row->fp.offset < f->regs.sp);
}

/*
 * Whether the module's own .eh_frame has a row for the pc @rd looked up too:
 * GDB's DWARF unwinder then takes the frame, as it does without us, with
 * every register the CFI saves and the tail-call frames it makes from the
 * DWARF call sites of the frames it unwinds.
 */
static bool eh_frame_covers(const struct reading *rd, const struct frame_regs *f)
{
	const struct sfu_mapping *m = rd->lookup.mapping;
	const struct sfu_sframe *table;
	const struct sfu_fde *fde;
	const struct sfu_row *row;
	uint64_t pc = rd->precise ? f->regs.pc : f->regs.pc - 1;

	if (!m || !m->module)
		return false;
	table = sfu_module__eh_frame_table(m->module);
	return table && !sfu_sframe__find(table, pc - m->bias, &fde, &row);
}

static enum gdb_status jit_unwind(struct gdb_reader_funcs *self, struct gdb_unwind_callbacks *cb)
{
	struct reader *r = self->priv_data;
	const struct sfu_addrspace *as;
	struct reading rd;
	struct frame_regs f;

	/* whatever happens below, what we knew of the next frame was about this one */
	r->interrupted.valid = false;
	if (read_frame(cb, &f) || f.regs.pc < 4096)
		return GDB_FAIL;
	as = jit_target__space(r->target, cb->target_read, f.regs.pc, f.regs.sp);
	if (!as || read_frame_as(r, as, &f, cb->target_read, &rd) || !rd.stepped)
		return GDB_FAIL;
	if (!rd.stop && rd.step.kind == SFU_FRAME_PC) {
		/* a signal trampoline (stepped even where GDB keeps it): next is the interrupted frame */
		r->interrupted.valid = true;
		r->interrupted.pc = rd.step.regs.pc;
		r->interrupted.sp = rd.step.regs.sp;
	}
	if (rd.lookup.source != SFU_SRC_SFRAME &&
	    !(rd.lookup.source == SFU_SRC_NONE && rd.stop == SFU_STOP_OUTERMOST))
		return GDB_FAIL;
	if (rd.lookup.source == SFU_SRC_SFRAME && eh_frame_covers(&rd, &f))
		return GDB_FAIL;
	if (rd.stop == SFU_STOP_OUTERMOST) {
		/*
		 * The table says the chain ends here, or this is the entry
		 * routine. A reader cannot give GDB its outer_frame_id; a caller
		 * at pc 0 is one frame GDB shows and stops after ("zero PC").
		 */
		if (reg_set(cb, DWARF_PC, 0) || reg_set(cb, DWARF_SP, f.regs.sp))
			return GDB_FAIL;
		remember_id(r, &f, &rd);
		return GDB_SUCCESS;
	}
	if (rd.stop)
		return GDB_FAIL;
	if (reg_set(cb, DWARF_PC, rd.step.regs.pc) || reg_set(cb, DWARF_SP, rd.step.regs.sp) ||
	    (caller_fp_known(&f, &rd) && reg_set(cb, DWARF_FP, rd.step.regs.fp))) {
		r->interrupted.valid = false;
		return GDB_FAIL;
	}
	remember_id(r, &f, &rd);
	return GDB_SUCCESS;
}

static struct gdb_frame_id jit_get_frame_id(struct gdb_reader_funcs *self,
					    struct gdb_unwind_callbacks *cb)
{
	struct reader *r = self->priv_data;
	struct gdb_frame_id id = { 0, 0 };
	const struct sfu_addrspace *as;
	struct frame_regs f;
	struct reading rd;

	if (read_frame(cb, &f))
		return id;
	for (unsigned i = 0; i < ID_SLOTS; i++) {
		const struct frame_id_slot *slot = &r->ids[(r->next_id - 1 - i) % ID_SLOTS];

		if (slot->pc == f.regs.pc && slot->sp == f.regs.sp &&
		    (slot->id.code_address || slot->id.stack_address))
			return slot->id;
	}
	/* not one we just claimed: work it out again, without touching what unwind remembers */
	as = jit_target__space(r->target, cb->target_read, f.regs.pc, f.regs.sp);
	if (as && !read_frame_as(r, as, &f, cb->target_read, &rd) && rd.stepped) {
		id.code_address = rd.lookup.func_start;
		id.stack_address = rd.stop ? f.regs.sp : rd.step.regs.sp;
	}
	return id;
}

static enum gdb_status jit_read(struct gdb_reader_funcs *self, struct gdb_symbol_callbacks *cb,
				void *memory, long memory_sz)
{
	(void)self;
	(void)cb;
	(void)memory;
	(void)memory_sz;
	return GDB_FAIL;
}

static void jit_destroy(struct gdb_reader_funcs *self)
{
	struct reader *r;

	if (!self)
		return;
	r = self->priv_data;
	jit_target__free(r->target);
	sfu_unwind_cache__free(r->rows);
	free(r);
}

struct gdb_reader_funcs *gdb_init_reader(void)
{
	struct reader *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->target = jit_target__new(SFU_ARCH_HOST);
	r->rows = sfu_unwind_cache__new();
	if (!r->target || !r->rows) {
		jit_target__free(r->target);
		sfu_unwind_cache__free(r->rows);
		free(r);
		return NULL;
	}
	SFU_OPTS_RESET(&r->opts,
		.arch = SFU_ARCH_HOST,
		/* frames no table covers are GDB's: never walk frame pointers here */
		.no_fp_fallback = 1,
		.cache = r->rows,
	);
	r->funcs = (struct gdb_reader_funcs){
		.reader_version = GDB_READER_INTERFACE_VERSION,
		.priv_data = r,
		.read = jit_read,
		.unwind = jit_unwind,
		.get_frame_id = jit_get_frame_id,
		.destroy = jit_destroy,
	};
	return &r->funcs;
}
