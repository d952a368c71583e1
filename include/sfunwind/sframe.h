/* SPDX-License-Identifier: BSD-2-Clause */
/* SFrame sections: decode versions 1-3 in either byte order, look up rows, encode. */
#ifndef SFUNWIND_SFRAME_H
#define SFUNWIND_SFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sfunwind/diag.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SFU_SFRAME_MAGIC 0xdee2

/* Section-wide flags (sfp_flags). */
#define SFU_SFRAME_F_FDE_SORTED		0x1
#define SFU_SFRAME_F_FRAME_POINTER	0x2
#define SFU_SFRAME_F_FDE_FUNC_START_PCREL 0x4

enum sfu_sframe_abi {
	SFU_SFRAME_ABI_AARCH64_BE = 1,
	SFU_SFRAME_ABI_AARCH64_LE = 2,
	SFU_SFRAME_ABI_AMD64_LE = 3,
	SFU_SFRAME_ABI_S390X_BE = 4,
};

/* How the FRE start addresses of a function are matched against a pc. */
enum sfu_fde_type {
	SFU_FDE_PCINC = 0,	/* pc - start >= fre start */
	SFU_FDE_PCMASK = 1,	/* (pc - start) % rep_size >= fre start */
};

/* Width of the FRE start address field (the FDE's FRE type). */
enum sfu_fre_type {
	SFU_FRE_ADDR1 = 0,
	SFU_FRE_ADDR2 = 1,
	SFU_FRE_ADDR4 = 2,
};

/* Registers as the unwinder knows them, independent of the ABI. */
enum sfu_reg {
	SFU_REG_SP = 0,
	SFU_REG_FP = 1,
	SFU_REG_RA = 2,		/* link register (AArch64 x30, s390x r14) */
	SFU_REG_OTHER = 3,	/* any other DWARF register, see dwarf_reg */
};

/* How a value (CFA, return address, saved frame pointer) is recovered. */
enum sfu_loc_kind {
	SFU_LOC_SAME = 0,	/* unchanged from the callee: in its register */
	SFU_LOC_UNDEFINED,	/* not recoverable: for RA, the outermost frame */
	SFU_LOC_AT_CFA,		/* saved in memory at CFA + offset */
	SFU_LOC_REG_OFFSET,	/* register + offset (the CFA rule) */
	SFU_LOC_DEREF,		/* memory at register + offset */
	SFU_LOC_IN_REG,		/* the value of another register */
};

struct sfu_loc {
	uint8_t kind;		/* enum sfu_loc_kind */
	uint8_t reg;		/* enum sfu_reg, for REG_OFFSET, DEREF, IN_REG */
	uint16_t dwarf_reg;	/* DWARF number when reg is SFU_REG_OTHER */
	int32_t offset;
};

/* Row flags. */
#define SFU_ROW_MANGLED_RA	0x1	/* RA is signed (AArch64 PAuth): strip before use */
#define SFU_ROW_UNUSABLE	0x2	/* describes a frame the unwinder cannot step */
#define SFU_ROW_FLEX		0x4	/* came from a V3 flexible FDE */
#define SFU_ROW_SIGNAL_FRAME	0x8	/* in a signal trampoline: the caller's registers are
					   in the kernel's signal frame at the SP (V3) */

/*
 * One frame row entry, decoded. The CFA is always a REG_OFFSET or DEREF
 * location; ra and fp are SAME, UNDEFINED, AT_CFA, IN_REG or DEREF.
 */
struct sfu_row {
	uint32_t start;		/* offset from the function start (PCMASK: in the block) */
	uint8_t flags;		/* SFU_ROW_* */
	uint8_t offset_size;	/* bytes per encoded offset: 1, 2 or 4 (for dumps) */
	uint8_t offset_count;	/* encoded offsets (for dumps) */
	uint8_t info;		/* raw FRE info byte */
	struct sfu_loc cfa;
	struct sfu_loc ra;
	struct sfu_loc fp;
};

/* FDE info bits (all versions) and V3 additions. */
#define SFU_FDE_INFO_FRE_TYPE(i)	((i) & 0xf)
#define SFU_FDE_INFO_FDE_TYPE(i)	(((i) >> 4) & 0x1)
#define SFU_FDE_INFO_PAUTH_KEY(i)	(((i) >> 5) & 0x1)
#define SFU_FDE_INFO_SIGNAL_FRAME(i)	(((i) >> 7) & 0x1)

/* One function descriptor, decoded. */
struct sfu_fde {
	uint64_t start;		/* function start, in the address space of `addr` given at decode */
	uint32_t size;
	uint32_t num_fres;
	uint32_t fre_off;	/* offset of the first FRE (V3: of the attributes) in the FRE sub-section */
	uint32_t first_row;	/* index of the first row in sfu_sframe__row() */
	uint8_t info;		/* raw info byte */
	uint8_t info2;		/* V3: raw second info byte, 0 before */
	uint8_t fre_type;	/* enum sfu_fre_type */
	uint8_t fde_type;	/* enum sfu_fde_type */
	uint8_t pauth_key;	/* AArch64: 0 = key A, 1 = key B */
	uint8_t rep_size;	/* PCMASK block size (V1: 16 implied for the AMD64 .plt) */
	bool signal_frame;	/* V3 */
	bool flex;		/* V3 flexible FDE: rows carry SFU_ROW_FLEX */
};

struct sfu_sframe_header {
	uint8_t version;
	uint8_t flags;
	uint8_t abi;		/* enum sfu_sframe_abi */
	int8_t cfa_fixed_fp_offset;
	int8_t cfa_fixed_ra_offset;
	uint8_t auxhdr_len;
	uint32_t num_fdes;
	uint32_t num_fres;
	uint32_t fre_len;
	uint32_t fdeoff;
	uint32_t freoff;
	bool big_endian;	/* byte order, told by the magic's bytes */
};

struct sfu_sframe;

/**
 * sfu_sframe__new() - decode and validate a whole SFrame section.
 * @data: section bytes; copied, the caller may free them afterwards.
 * @size: section size in bytes.
 * @addr: the address the section is loaded at (its sh_addr), which
 *        function start addresses are relative to.
 * @diag: optional; receives the reason when decoding fails.
 *
 * Every count and offset is checked against the section bounds. Unsorted
 * FDE tables are sorted at load.
 *
 * @return the decoded section, or NULL with errno set: EBADMSG for corrupt
 * input, ENOTSUP for an unknown version or ABI, ENOMEM.
 */
SFU_API struct sfu_sframe *sfu_sframe__new(const void *data, size_t size, uint64_t addr,
				   struct sfu_diag *diag);

/** sfu_sframe__free() - release a decoded section; accepts NULL. */
SFU_API void sfu_sframe__free(struct sfu_sframe *sf);

/** @return the decoded header. */
SFU_API const struct sfu_sframe_header *sfu_sframe__header(const struct sfu_sframe *sf);

/** @return the number of FDEs. */
SFU_API size_t sfu_sframe__fde_count(const struct sfu_sframe *sf);

/**
 * sfu_sframe__fde() - the FDE at position @i, in section order (as stored).
 * @return the FDE, or NULL when @i is out of range.
 */
SFU_API const struct sfu_fde *sfu_sframe__fde(const struct sfu_sframe *sf, size_t i);

/**
 * sfu_sframe__row() - row @i of the whole section (FDE first_row + k).
 *
 * A table keeps its section encoded; the first call of sfu_sframe__row() or
 * sfu_sframe__find() decodes every row (about 32 bytes each, 5-10 times the
 * section) and keeps them. sfu_sframe__lookup() does not.
 *
 * @return the row, or NULL when @i is out of range or memory ran out.
 */
SFU_API const struct sfu_row *sfu_sframe__row(const struct sfu_sframe *sf, size_t i);

/**
 * sfu_sframe__find() - the FDE and row that describe @pc.
 * @pc: an address in the same space as @addr given to sfu_sframe__new().
 *
 * @return 0 and fills @fde and @row; -ENOENT when no function covers @pc or
 * the function has no row for it.
 */
SFU_API int sfu_sframe__find(const struct sfu_sframe *sf, uint64_t pc,
		     const struct sfu_fde **fde, const struct sfu_row **row);

/**
 * sfu_sframe__lookup() - sfu_sframe__find() with @pc's row decoded into
 * @row from the encoded section, making no other row: what an unwinder
 * calls (the FREs of @pc's function are read in turn, up to @pc's).
 *
 * @return 0 and fills @fde and @row; -ENOENT as sfu_sframe__find().
 */
SFU_API int sfu_sframe__lookup(const struct sfu_sframe *sf, uint64_t pc,
			       const struct sfu_fde **fde, struct sfu_row *row);

/* Input to the encoder: one function and its rows. */
struct sfu_sframe_func {
	uint64_t start;
	uint32_t size;
	uint8_t fde_type;	/* enum sfu_fde_type */
	uint8_t pauth_key;
	uint8_t rep_size;	/* PCMASK; written from V2 on */
	bool signal_frame;	/* written in V3 only */
	const struct sfu_row *rows;
	size_t num_rows;
};

/*
 * Options for sfu_sframe_encode(), declared with SFU_OPTS(sfu_sframe_enc_opts,
 * opts, ...); new fields go at the end (see SFU_OPTS()).
 */
struct sfu_sframe_enc_opts {
	size_t sz;		/* sizeof(struct sfu_sframe_enc_opts), set by SFU_OPTS() */
	uint8_t version;	/* 1, 2 or 3 */
	uint8_t abi;		/* enum sfu_sframe_abi */
	bool big_endian;	/* byte order to write */
	bool pcrel;		/* V2: set SFRAME_F_FDE_FUNC_START_PCREL (always in V3) */
	uint8_t flags;		/* extra flags, e.g. SFU_SFRAME_F_FRAME_POINTER */
	int8_t cfa_fixed_fp_offset;
	int8_t cfa_fixed_ra_offset;
	uint64_t addr;		/* address the section will be loaded at */
};

/**
 * sfu_sframe_encode() - write an SFrame section.
 * @funcs: functions in any order; they are written sorted by start.
 * @out: receives a malloc()ed buffer, freed by the caller.
 *
 * Rows use the smallest FRE start and offset widths that hold them. A row
 * the chosen version and ABI cannot express gives -EINVAL. In a V3 flexible
 * FDE, a row flagged SFU_ROW_UNUSABLE whose RA is undefined is written with
 * the RA rule "CFA + 1 as a value", which decodes as unusable again (rather
 * than as the outermost frame, which an undefined RA otherwise means).
 *
 * @return 0, or a negative errno (-EINVAL, -ENOMEM, -ERANGE); -EINVAL also
 * when @opts is NULL (there is no default version) or not valid (its sz too
 * small, or a field this library does not know is set).
 */
SFU_API int sfu_sframe_encode(const struct sfu_sframe_enc_opts *opts,
		      const struct sfu_sframe_func *funcs, size_t num_funcs,
		      void **out, size_t *out_size, struct sfu_diag *diag);

/** @return a printable name for @abi ("AMD64 little-endian"), or NULL. */
SFU_API const char *sfu_sframe_abi_name(uint8_t abi);

#ifdef __cplusplus
}
#endif

#endif
