/* SPDX-License-Identifier: BSD-2-Clause */
/* Unwinding a user stack from a register snapshot and a memory reader. */
#ifndef SFUNWIND_UNWIND_H
#define SFUNWIND_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "sfunwind/addrspace.h"

#ifdef __cplusplus
extern "C" {
#endif

enum sfu_arch {
	SFU_ARCH_X86_64 = 0,
	SFU_ARCH_AARCH64 = 1,
};

/* The architecture this library was built for. */
#if defined(__aarch64__)
#define SFU_ARCH_HOST SFU_ARCH_AARCH64
#else
#define SFU_ARCH_HOST SFU_ARCH_X86_64
#endif

/* The registers unwinding needs. lr is used on AArch64 only. */
struct sfu_regs {
	uint64_t pc;
	uint64_t sp;
	uint64_t fp;
	uint64_t lr;
};

/**
 * Reads @len bytes at @addr of the unwound process into @buf.
 * @return 0, or a negative errno when the memory cannot be read.
 */
typedef int (*sfu_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* A copy of the stack taken at sample time, readable through sfu_snapshot_read(). */
struct sfu_snapshot {
	uint64_t base;		/* address of data[0], normally the sp */
	const uint8_t *data;
	size_t size;
};

/** sfu_snapshot_read() - an sfu_read_fn over a struct sfu_snapshot (ctx). */
SFU_API int sfu_snapshot_read(void *ctx, uint64_t addr, void *buf, size_t len);

/* What found the caller of a frame. */
enum sfu_source {
	SFU_SRC_NONE = 0,	/* frame 0: the registers themselves */
	SFU_SRC_SFRAME,		/* the module's .sframe */
	SFU_SRC_EH_FRAME,	/* rows derived from .eh_frame */
	SFU_SRC_FP,		/* frame-pointer walk */
	SFU_SRC_GOPCLNTAB,	/* a Go program's own pc-to-SP-delta table (.gopclntab) */
};

enum sfu_frame_kind {
	SFU_FRAME_PC = 0,	/* precise: the interrupted instruction (frame 0, or below a
				   signal frame) */
	SFU_FRAME_RA = 1,	/* a return address: the call is just before it */
};

struct sfu_frame {
	uint64_t addr;
	uint8_t kind;		/* enum sfu_frame_kind */
	uint8_t source;		/* enum sfu_source that produced this frame */
};

enum sfu_stop {
	SFU_STOP_OUTERMOST = 1,	/* the unwind info says the RA is undefined, or RA 0, or
				   no table covers the pc and it is in its module's entry
				   routine (e_entry through its first call: _start) */
	SFU_STOP_NO_INFO,	/* no table covers the pc and frame pointers fail */
	SFU_STOP_BAD_INFO,	/* the row cannot be used (unusable rule, RA in LR past frame 0) */
	SFU_STOP_MEMORY,	/* reading the stack failed */
	SFU_STOP_DEPTH,		/* the frame array is full */
	SFU_STOP_CFA_NOT_INCREASING,	/* the stack pointer did not move up */
	SFU_STOP_STACK_SWITCH,	/* the caller switched stacks to call it (Go's systemstack,
				   mcall, morestack): the older frames are on another stack */
};

/*
 * A cache of pc -> row lookups, valid across address spaces since it is
 * keyed by the unwind table itself. One per thread: it is not locked.
 */
struct sfu_unwind_cache;

/** sfu_unwind_cache__new() - @return an empty cache, or NULL with errno set. */
SFU_API struct sfu_unwind_cache *sfu_unwind_cache__new(void);

/** sfu_unwind_cache__free() - accepts NULL. */
SFU_API void sfu_unwind_cache__free(struct sfu_unwind_cache *cache);

/*
 * Options for sfu_unwind() and sfu_unwind_step(). Declare them with
 * SFU_OPTS(sfu_unwind_opts, opts, ...): zero is each field's default, and
 * NULL means all defaults. New fields go at the end (see SFU_OPTS()).
 */
struct sfu_unwind_opts {
	size_t sz;		/* sizeof(struct sfu_unwind_opts), set by SFU_OPTS() */
	enum sfu_arch arch;
	int no_fp_fallback;	/* do not walk frame pointers where no table covers */
	uint64_t pac_mask;	/* AArch64: bits to clear from signed RAs; 0 = bits 48-63 */
	struct sfu_unwind_cache *cache;	/* optional; speeds up repeated pcs */
	/*
	 * Walk frame pointers only, ignoring .sframe and .eh_frame: what a
	 * frame-pointer unwinder (perf --call-graph fp) sees, for comparison.
	 * A frame without a frame record (a leaf that did not push one, code
	 * built with -fomit-frame-pointer) loses its caller or ends the walk.
	 */
	int fp_only;
};

struct sfu_step {
	struct sfu_regs regs;	/* the caller's registers */
	uint8_t source;		/* enum sfu_source used */
	uint8_t kind;		/* enum sfu_frame_kind of regs.pc: SFU_FRAME_PC when the
				   frame was a signal trampoline, whose caller is the
				   interrupted code (pass first = 1 for it, lr is valid) */
};

/**
 * sfu_unwind_step() - find the caller of one frame.
 * @regs: the frame's registers; for frames past the first, @regs->pc is a
 *        return address (looked up as pc - 1).
 * @first: non-zero for the interrupted frame (its pc is precise, lr valid),
 *         and for a frame whose step said SFU_FRAME_PC.
 * @out: receives the caller's registers and the source used.
 *
 * The pc is looked up in the module's .sframe, then in the rows derived from
 * its .eh_frame (sfu_module__eh_frame_table()), then in a Go program's
 * .gopclntab (its pc-to-SP-delta table; a function Go flags TOPFRAME, or one
 * that switches stacks, ends the stack), then frame pointers are
 * walked (only frame pointers with @opts->fp_only). A row of a signal
 * trampoline (SFU_ROW_SIGNAL_FRAME), or Go's runtime.sigreturn, gives the
 * registers the kernel saved in its signal frame.
 *
 * This is what a debugger's unwinder hook calls once per frame.
 *
 * @return 0, or the reason unwinding cannot continue as a positive enum
 * sfu_stop value (never SFU_STOP_DEPTH); -EINVAL when @opts is not valid
 * (its sz too small, or a field this library does not know is set).
 */
SFU_API int sfu_unwind_step(const struct sfu_addrspace *as, const struct sfu_unwind_opts *opts,
		    const struct sfu_regs *regs, int first, sfu_read_fn read, void *ctx,
		    struct sfu_step *out);

/**
 * sfu_unwind() - walk the whole stack.
 * @frames: receives up to @max frames; frames[0] is regs->pc.
 * @count: receives the number of frames written.
 *
 * @return the stop reason (enum sfu_stop); -EINVAL, with no frame written,
 * when @opts is not valid (see sfu_unwind_step()).
 */
SFU_API int sfu_unwind(const struct sfu_addrspace *as, const struct sfu_unwind_opts *opts,
	       const struct sfu_regs *regs, sfu_read_fn read, void *ctx,
	       struct sfu_frame *frames, size_t max, size_t *count);

/* What covers one pc: sfu_unwind_lookup()'s answer. */
struct sfu_lookup {
	const struct sfu_mapping *mapping;	/* the pc's mapping, or NULL */
	const struct sfu_fde *fde;	/* the function's descriptor, or NULL */
	const struct sfu_row *row;	/* the row for the pc, or NULL */
	uint64_t func_start;	/* runtime address of the function (0 without an FDE, but
				   see below) */
	uint64_t func_end;	/* exclusive */
	uint64_t row_start;	/* runtime address where the row starts to apply */
	uint8_t source;		/* SFU_SRC_SFRAME, SFU_SRC_EH_FRAME, SFU_SRC_GOPCLNTAB, or
				   SFU_SRC_NONE */
	struct sfu_row row_buf;	/* holds *row where no table keeps rows (Go: fde is NULL) */
};

/**
 * sfu_unwind_lookup() - which table and row sfu_unwind_step() uses for @pc.
 * @pc: the address to look up as it is (pass a return address minus one).
 *
 * The module's .sframe first, then the rows derived from its .eh_frame, then
 * a Go program's .gopclntab (a row made for @pc, fde NULL), as the unwinder
 * does. A debugger's unwinder hook asks this to decide whether
 * to claim a frame; `info sframe` prints it.
 *
 * @return 0 with @out filled; -ENOENT when no table covers @pc (@out->mapping
 * still says which mapping, if any, holds it, and func_start and func_end the
 * entry routine when @pc is in it: a frame there is the outermost one).
 */
SFU_API int sfu_unwind_lookup(const struct sfu_addrspace *as, uint64_t pc, struct sfu_lookup *out);

/** @return a short name for a stop reason ("outermost frame"). */
SFU_API const char *sfu_stop_name(int stop);

/** @return a short name for a frame source ("sframe", "fp"). */
SFU_API const char *sfu_source_name(int source);

#ifdef __cplusplus
}
#endif

#endif
