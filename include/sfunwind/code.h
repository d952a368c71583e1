/* SPDX-License-Identifier: BSD-2-Clause */
/* SFrame rows for machine code that has no unwind info, found by reading its instructions. */
#ifndef SFUNWIND_CODE_H
#define SFUNWIND_CODE_H

#include <stddef.h>
#include <stdint.h>

#include "sfunwind/diag.h"
#include "sfunwind/sframe.h"
#include "sfunwind/unwind.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most code, and the most instructions, one call analyses. */
#define SFU_CODE_MAX_BYTES	(64 * 1024)
#define SFU_CODE_MAX_INSNS	16384

/* What an analysis found. */
struct sfu_code_stats {
	uint32_t insns;		/* instructions decoded (those reached from the entry) */
	uint32_t rows;		/* rows in the table */
	char note[160];		/* why the code could not be analysed, "" when it was */
};

/**
 * sfu_sframe__from_code() - unwind rows for one function's machine code,
 * found by reading its instructions.
 * @code: the function's bytes; read only during the call.
 * @len: their number, at most SFU_CODE_MAX_BYTES.
 * @addr: the runtime address of code[0], which is the function's entry.
 * @arch: SFU_ARCH_X86_64 (System V) or SFU_ARCH_AARCH64 (AAPCS64, little-endian).
 * @stats: optional; receives the counts above, and the reason on ENOENT.
 * @diag: optional; the reason on failure.
 *
 * Meant for JIT code that comes with neither unwind info nor a frame
 * pointer, such as the trampolines of CPython's perf support, whose start
 * and size a perf map gives. Every path from the entry is followed (branch
 * targets inside [@addr, @addr + @len)), tracking the stack height (at the
 * entry the CFA is SP + 8 on x86-64, SP with the return address in x30 on
 * AArch64), where the caller's frame pointer and (AArch64) the return
 * address are saved, and whether a frame pointer is set up.
 *
 * Modelled exactly on x86-64: push and pop, add/sub/lea of RSP by a
 * constant, `mov %rsp,%rbp`, `lea N(%rsp),%rbp`, `mov %rbp,%rsp`,
 * `lea N(%rbp),%rsp`, leave, calls (the stack is as before once they
 * return), ret, direct jumps and conditional branches (both ways), jumps
 * elsewhere and falling past the end (tail calls, calls that do not return:
 * the path leaves) and instructions that end a path (int3, ud2, hlt). FP
 * set to SP + N is a frame pointer only when it points into the frame
 * below the saved FP; otherwise it holds nothing the rows use.
 * On AArch64: stp/ldp/str/ldr on [sp] (offset, pre- and post-index),
 * add/sub of sp by a constant, `mov x29, sp`, `add x29, sp, #N`, moves
 * back from x29 to sp, bl/blr once x30 is saved, ret, b, b.cond, cbz, cbnz,
 * tbz, tbnz, br (a tail call), brk, and the PAC hints on x30 (rows after
 * paciasp or pacibsp carry SFU_ROW_MANGLED_RA; the FDE names the key).
 * Rows give the CFA from the SP while its height is known. Another change
 * of the SP is allowed only under a frame pointer, whose rows then give the
 * CFA from the FP. SP-based heights are multiples of 8 (x86-64) or 16
 * (AArch64), at most 64 KiB.
 *
 * Where paths meet, what they agree on is kept: a frame pointer set up on
 * one path only is forgotten, an SP height that differs under a common
 * frame pointer becomes unknown. Nothing is approximated: code that does
 * what the model cannot state exactly (an unknown change of the SP without
 * a frame pointer, paths meeting with different SP heights and no common
 * frame pointer or with the caller's FP or return address in different
 * places, an instruction that cannot be decoded on a path, a jump into the
 * middle of an instruction, the return address or the saved frame pointer
 * overwritten, a return with the frame not undone, more than
 * SFU_CODE_MAX_INSNS instructions) gives no table at all. Stores through
 * registers other than SP and FP are not followed.
 *
 * The row at an instruction describes the frame before it executes: for an
 * interrupted pc, and for a return address looked up as pc - 1 (inside the
 * call, whose row holds during the callee). Bytes no path reaches (padding
 * after a return, trailing bytes, code entered some other way, such as V8's
 * on-stack replacement) are not decoded and belong to no function: the
 * table has one function per stretch of reached instructions, so that
 * there an unwinder does what it does for code without rows (frame
 * pointers) instead of stopping.
 *
 * Safe from any thread; the decoding itself is serialized, since capstone
 * 4 is not thread-safe on first use. A trampoline takes about 13 us.
 *
 * @return an SFrame version 3 table (as sfu_sframe__from_eh_frame() makes)
 * whose functions cover the reached stretches of [@addr, @addr + @len), the
 * first starting at @addr; or NULL
 * with errno set: ENOENT when the code cannot be analysed exactly (@stats
 * and @diag say why), ENOTSUP for another architecture, EINVAL for no @code
 * or a range that wraps, ENOMEM.
 */
SFU_API struct sfu_sframe *sfu_sframe__from_code(const void *code, size_t len, uint64_t addr,
						 enum sfu_arch arch, struct sfu_code_stats *stats,
						 struct sfu_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
