// SPDX-License-Identifier: BSD-2-Clause
/* Fuzz target: rows for machine code read instruction by instruction, then every byte looked up. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sfunwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Input layout:
 *   0  1  bit 0: AArch64, else x86-64
 *   1  ..  the function's code, its entry first, said to run at CODE_ADDR
 */
#define HEADER 1
#define CODE_ADDR 0x7f0000001000ull

/* Frames are at most 64 KiB; x86-64 keeps the SP 8-aligned, AArch64 16-aligned. */
#define FRAME_MAX (64 * 1024)

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_code: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static void check_row(const struct sfu_row *row, uint64_t pc, bool a64)
{
	unsigned long long at = (unsigned long long)(pc - CODE_ADDR);

	if (row->flags & SFU_ROW_UNUSABLE)
		return;
	if (row->cfa.kind != SFU_LOC_REG_OFFSET)
		broken("+%#llx: CFA of kind %u", at, row->cfa.kind);
	if (row->cfa.reg == SFU_REG_SP) {
		/* x86-64: the return address's slot at least */
		if (row->cfa.offset < (a64 ? 0 : 8) || row->cfa.offset % (a64 ? 16 : 8) ||
		    row->cfa.offset > FRAME_MAX)
			broken("+%#llx: CFA = SP%+d", at, row->cfa.offset);
	} else if (row->cfa.reg == SFU_REG_FP) {
		/* the caller's FP was pushed before the frame pointer was set up */
		if (row->cfa.offset < 16 || row->cfa.offset % 8 || row->cfa.offset > FRAME_MAX)
			broken("+%#llx: CFA = FP%+d", at, row->cfa.offset);
		if (row->fp.kind != SFU_LOC_AT_CFA)
			broken("+%#llx: CFA on the FP, but the caller's FP is not saved", at);
	} else {
		broken("+%#llx: CFA on register %u", at, row->cfa.reg);
	}
	if (!a64 && (row->ra.kind != SFU_LOC_AT_CFA || row->ra.offset != -8))
		broken("+%#llx: RA not at CFA - 8", at);
	/* AArch64: stur stores at any byte offset; the slot is below the CFA, within the frame */
	if (a64 && row->ra.kind == SFU_LOC_AT_CFA &&
	    (row->ra.offset > -8 || row->ra.offset < -FRAME_MAX))
		broken("+%#llx: RA saved at CFA%+d", at, row->ra.offset);
	else if (a64 && row->ra.kind != SFU_LOC_AT_CFA &&
		 (row->ra.kind != SFU_LOC_IN_REG || row->ra.reg != SFU_REG_RA || row->ra.offset))
		broken("+%#llx: RA of kind %u", at, row->ra.kind);
	if (!a64 && (row->flags & SFU_ROW_MANGLED_RA))
		broken("+%#llx: a signed return address on x86-64", at);
	/*
	 * x86-64: below the return address's slot, 8-aligned. AArch64: any
	 * slot of the frame below the CFA but the return address's, at any
	 * byte (`stp x29, x0, [sp, #24]` after `sub sp, sp, #32` saves it at
	 * CFA-8, `stur x29, [sp, #2]` after `str x28, [sp, #-16]!` at CFA-14:
	 * the fuzzer found both).
	 */
	if (row->fp.kind == SFU_LOC_AT_CFA &&
	    (row->fp.offset > (a64 ? -8 : -16) || (!a64 && row->fp.offset % 8) ||
	     row->fp.offset < -FRAME_MAX ||
	     (a64 && row->ra.kind == SFU_LOC_AT_CFA && row->ra.offset == row->fp.offset)))
		broken("+%#llx: FP saved at CFA%+d", at, row->fp.offset);
	else if (row->fp.kind != SFU_LOC_AT_CFA && row->fp.kind != SFU_LOC_SAME)
		broken("+%#llx: FP of kind %u", at, row->fp.kind);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sfu_code_stats st;
	struct sfu_diag diag = { 0 };
	const struct sfu_fde *fde;
	struct sfu_sframe *sf;
	struct sfu_row row;
	uint8_t *code;
	bool a64;

	if (size < HEADER)
		return 0;
	a64 = data[0] & 1;
	data += HEADER;
	size -= HEADER;
	/* an exact-size copy, so that a read past the end is caught */
	code = malloc(size ? size : 1);
	if (!code)
		return 0;
	memcpy(code, data, size);
	sf = sfu_sframe__from_code(code, size, CODE_ADDR, a64 ? SFU_ARCH_AARCH64 : SFU_ARCH_X86_64,
				   &st, &diag);
	free(code);
	if (!sf) {
		if (errno != ENOENT && errno != ENOMEM)
			broken("failed with errno %d (%s)", errno, diag.reason);
		if (errno == ENOENT && (!st.note[0] || !diag.reason[0]))
			broken("refused without a reason");
		return 0;
	}
	if (st.note[0])
		broken("a table, and a note: %s", st.note);
	if (!st.insns || st.insns > SFU_CODE_MAX_INSNS)
		broken("%u instructions", st.insns);
	/* a function per stretch of reached code, in order, from the entry, within the code */
	{
		uint64_t end = CODE_ADDR;
		uint32_t rows = 0;

		for (size_t i = 0; i < sfu_sframe__fde_count(sf); i++) {
			fde = sfu_sframe__fde(sf, i);
			if ((i ? fde->start <= end : fde->start != CODE_ADDR) || !fde->size ||
			    fde->start + fde->size > CODE_ADDR + size)
				broken("function %zu [%#llx, +%u) after %#llx", i,
				       (unsigned long long)fde->start, fde->size,
				       (unsigned long long)end);
			end = fde->start + fde->size;
			rows += fde->num_fres;
		}
		if (!sfu_sframe__fde_count(sf) || rows != st.rows)
			broken("%zu functions with %u rows, the stats say %u",
			       sfu_sframe__fde_count(sf), rows, st.rows);
	}
	for (size_t off = 0; off < size; off++) {
		/* bytes no path reaches have no row */
		if (sfu_sframe__lookup(sf, CODE_ADDR + off, &fde, &row)) {
			if (!off)
				broken("no row at the entry");
			continue;
		}
		if (row.flags & SFU_ROW_UNUSABLE)
			broken("+%#zx: an unusable row", off);
		/* the entry's row is what the caller's call left */
		if (!off && ((row.flags & (SFU_ROW_UNUSABLE | SFU_ROW_MANGLED_RA)) ||
			     row.cfa.reg != SFU_REG_SP || row.cfa.offset != (a64 ? 0 : 8) ||
			     row.ra.kind != (a64 ? SFU_LOC_IN_REG : SFU_LOC_AT_CFA) ||
			     row.fp.kind != SFU_LOC_SAME))
			broken("the entry's row is not the caller's call");
		check_row(&row, CODE_ADDR + off, a64);
	}
	if (sfu_sframe__lookup(sf, CODE_ADDR + size, &fde, &row) != -ENOENT)
		broken("a row past the end");
	sfu_sframe__free(sf);
	return 0;
}
