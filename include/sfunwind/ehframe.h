/* SPDX-License-Identifier: BSD-2-Clause */
/* SFrame rows derived from the DWARF call frame information in .eh_frame. */
#ifndef SFUNWIND_EHFRAME_H
#define SFUNWIND_EHFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sfunwind/diag.h"
#include "sfunwind/sframe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where the call frame information of one ELF file is, and how to read it. */
struct sfu_eh_frame {
	const void *data;	/* the .eh_frame section */
	size_t size;
	uint64_t addr;		/* its address (sh_addr): pc-relative pointers are relative to it */
	const void *hdr;	/* optional .eh_frame_hdr: its search table lists the FDEs */
	size_t hdr_size;
	uint64_t hdr_addr;
	uint16_t machine;	/* EM_X86_64 or EM_AARCH64 */
	bool big_endian;	/* the ELF file's byte order */
	uint64_t text_base;	/* base of DW_EH_PE_textrel pointers; 0 when unknown */
	uint64_t data_base;	/* base of DW_EH_PE_datarel pointers in .eh_frame (the GOT); 0 when unknown */
};

/* What a conversion found; every count is of the input, not of the table. */
struct sfu_eh_frame_stats {
	uint32_t cies;		/* CIEs read */
	uint32_t fdes;		/* FDEs considered */
	uint32_t fdes_skipped;	/* FDEs left out: bad CIE, bad pointer, too large */
	uint32_t fdes_cut;	/* FDEs whose instructions stop being readable part way */
	uint32_t funcs;		/* functions in the table (a .plt FDE makes two) */
	uint32_t rows;
	uint32_t rows_unusable;	/* rows marked SFU_ROW_UNUSABLE */
	uint32_t signal_frames;	/* FDEs of signal trampolines (augmentation 'S') */
	bool used_hdr;		/* the FDEs came from .eh_frame_hdr's table, not a walk */
	char note[160];		/* why the first FDE was skipped or cut, "" when none was */
};

/**
 * sfu_sframe__from_eh_frame() - derive an SFrame table from .eh_frame.
 * @in: the sections; read only during the call.
 * @stats: optional; receives the counts above.
 * @diag: optional; the reason on failure.
 *
 * Each FDE's CFI program (every DW_CFA_* operation) is run and gives one row
 * wherever the CFA, return address or frame pointer rule changes. Rules the
 * row model cannot state exactly are not approximated: such a row carries
 * SFU_ROW_UNUSABLE (an unrecognised DWARF expression, a value rule). Rules
 * the unwinder cannot follow stay as they are (a CFA on a register other than
 * SP or FP, a return address held in another register) and stop it there.
 * Two expressions are understood: `breg(SP or FP) N; deref` as the CFA
 * (stack realignment through DRAP, signal trampolines) and the x86-64 `.plt`
 * expression, which becomes a PCMASK function as in the SFrame the linker
 * writes. An FDE whose CIE has augmentation 'S' (a signal trampoline) gives a
 * signal-frame FDE whose rows carry SFU_ROW_SIGNAL_FRAME.
 *
 * When @in->hdr holds a valid search table, the FDEs it lists are converted
 * (those the runtime unwinder would find); otherwise .eh_frame is walked.
 * An FDE that cannot be read is left out and counted; one whose program
 * breaks part way ends with an unusable row. Tables are SFrame version 3
 * (flexible FDEs where needed), whose function starts are the FDEs' own
 * addresses; sfu_sframe__header() tells it apart from a decoded section.
 *
 * @return the table, or NULL with errno set: EBADMSG when the section has
 * FDEs and none could be converted, ENOTSUP for another machine, ENOMEM.
 */
SFU_API struct sfu_sframe *sfu_sframe__from_eh_frame(const struct sfu_eh_frame *in,
					     struct sfu_eh_frame_stats *stats,
					     struct sfu_diag *diag);

/**
 * sfu_eh_frame_encode() - what sfu_sframe__from_eh_frame() decodes: the
 * derived table as the bytes of an SFrame version 3 section whose function
 * starts are relative to address 0.
 * @out: receives a malloc()ed buffer, freed by the caller.
 *
 * @return 0, or a negative errno as above.
 */
SFU_API int sfu_eh_frame_encode(const struct sfu_eh_frame *in, void **out, size_t *out_size,
			struct sfu_eh_frame_stats *stats, struct sfu_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
