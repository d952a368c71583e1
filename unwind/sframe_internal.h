/* SPDX-License-Identifier: BSD-2-Clause */
/* SFrame layout constants shared by the decoder and the encoder. */
#ifndef SFU_SFRAME_INTERNAL_H
#define SFU_SFRAME_INTERNAL_H

#include <stdint.h>

#include "diag_internal.h"
#include "sfunwind/sframe.h"

#define SFRAME_HDR_SIZE		28
#define SFRAME_V1_FDE_SIZE	17
#define SFRAME_V2_FDE_SIZE	20
#define SFRAME_V3_FDE_SIZE	16	/* the index entry */
#define SFRAME_V3_ATTR_SIZE	5	/* num_fres, info, info2, rep_size before the FREs */

#define SFRAME_V1_FLAGS		0x3
#define SFRAME_V2_FLAGS		0x7
#define SFRAME_V3_FLAGS		0x5

/* V1 has no repeat size; its only PCMASK user, the AMD64 .plt, repeats every 16 bytes. */
#define SFRAME_V1_PLT_REP_SIZE	16

/* V3 info2: the FDE type. */
#define SFRAME_V3_FDE_TYPE(i2)	((i2) & 0x1f)
#define SFRAME_V3_FDE_DEFAULT	0
#define SFRAME_V3_FDE_FLEX	1

/* V3 flexible FDE control words: (dwarf reg << 3) | (deref << 1) | reg_p. */
#define SFRAME_FLEX_REG_P(w)	((w) & 0x1)
#define SFRAME_FLEX_DEREF(w)	(((w) >> 1) & 0x1)
#define SFRAME_FLEX_REGNUM(w)	((w) >> 3)
#define SFRAME_FLEX_CTRL(reg, deref, reg_p) (((reg) << 3) | ((deref) << 1) | (reg_p))

/* FRE info byte. */
#define SFRAME_FRE_BASE_SP(i)	((i) & 0x1)
#define SFRAME_FRE_COUNT(i)	(((i) >> 1) & 0xf)
#define SFRAME_FRE_SIZE(i)	(((i) >> 5) & 0x3)
#define SFRAME_FRE_MANGLED(i)	(((i) >> 7) & 0x1)
#define SFRAME_FRE_INFO(base_sp, count, size_code, mangled) \
	((base_sp) | ((count) << 1) | ((size_code) << 5) | ((mangled) << 7))

/* s390x: CFA offsets are stored as (offset - 160) / 8. */
#define SFRAME_S390X_CFA_ADJ	160
#define SFRAME_S390X_CFA_ALIGN	8

/* DWARF numbers of the registers the unwinder knows, per ABI. */
struct sframe_abi_regs {
	uint16_t sp, fp, ra;
};

const struct sframe_abi_regs *sframe_abi_regs(uint8_t abi);

/* Map a DWARF register of @abi to a struct sfu_loc's reg/dwarf_reg. */
void sframe_loc_set_reg(struct sfu_loc *loc, uint8_t abi, uint16_t dwarf_reg);

/* The DWARF number behind a loc's register. */
uint16_t sframe_loc_dwarf_reg(const struct sfu_loc *loc, uint8_t abi);

/*
 * sframe_new_owned() - sfu_sframe__new() taking @bytes (malloc()ed) instead
 * of copying them: freed with the table, or at once when it fails.
 */
struct sfu_sframe *sframe_new_owned(void *bytes, size_t size, uint64_t addr,
				    struct sfu_diag *diag);

/* Bytes the table holds in memory (its section, index, and rows once decoded); 0 for NULL. */
size_t sframe_memory(const struct sfu_sframe *sf);

/* A number no other table decoded by this process shares, for caches. */
uint64_t sframe_id(const struct sfu_sframe *sf);


#endif
