/* SPDX-License-Identifier: BSD-2-Clause */
/* Go's own function table (.gopclntab, Go 1.16 and later): names, extents and SP deltas. */
#ifndef SFU_GOPCLNTAB_INTERNAL_H
#define SFU_GOPCLNTAB_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sfunwind/diag.h"

/* pcHeader.magic of each layout (little-endian in the file). */
#define GOPCLNTAB_MAGIC_116 0xfffffffau	/* Go 1.16, 1.17 */
#define GOPCLNTAB_MAGIC_118 0xfffffff0u	/* Go 1.18, 1.19 */
#define GOPCLNTAB_MAGIC_120 0xfffffff1u	/* Go 1.20 and later */

/* _func.flag bits (runtime/symtab.go funcFlag). */
#define GO_FUNC_TOPFRAME 0x1	/* the first function of its stack: nothing called it */
#define GO_FUNC_SPWRITE 0x2	/* writes SP other than by a constant: switches stacks */
#define GO_FUNC_ASM 0x4

/* PCDATA and FUNCDATA table indexes (runtime/symtab.go). */
#define GO_PCDATA_INLTREE_INDEX 2
#define GO_FUNCDATA_INLTREE 3

struct sfu_gopclntab;

/* One function of the table, as sfu_gopclntab__find() decodes it. */
struct go_func {
	const char *name;	/* in the table's copy: valid as long as the table */
	uint64_t entry;		/* ELF address */
	uint64_t end;		/* exclusive: the next function's entry */
	uint8_t func_id;	/* _func.funcID, whose values vary with the Go version */
	uint8_t flags;		/* GO_FUNC_*; from the name for Go 1.16, which had none */
	uint8_t nfuncdata;
	uint32_t npcdata;
	uint32_t pcsp;		/* offset of its pc-to-SP-delta table in pctab, 0 = none */
	size_t rec;		/* offset of its _func record in the table */
};

/**
 * sfu_gopclntab__new() - validate and keep a copy of a Go function table.
 * @data: the table's bytes (from its pcHeader to the end of the section, or
 *        of the segment when it was found by its magic).
 * @text_hint: the address of .text, used when the header's textStart is 0
 *        (an unrelocated position-independent file); 0 when unknown.
 * @diag: optional; the reason on failure.
 *
 * @return the table, or NULL with errno set: EBADMSG for a header that does
 * not describe a table inside @data, ENOTSUP for another magic, ENOMEM.
 */
struct sfu_gopclntab *sfu_gopclntab__new(const void *data, size_t size, uint64_t text_hint,
					 struct sfu_diag *diag);

/**
 * sfu_gopclntab__new_in() - sfu_gopclntab__new() for a table at [@off, @off +
 * @size) of @image, the read-only segment at ELF address @image_addr that
 * holds it: the whole segment is kept, for the inline trees in go:func.*
 * beside the table.
 * @return as sfu_gopclntab__new().
 */
struct sfu_gopclntab *sfu_gopclntab__new_in(const void *image, size_t image_size,
					    uint64_t image_addr, size_t off, size_t size,
					    uint64_t text_hint, struct sfu_diag *diag);

/**
 * sfu_gopclntab__find_gofunc() - moduledata.gofunc (go:func.*, what FUNCDATA
 * offsets are relative to from Go 1.18 on), found in @data (a writable
 * segment's bytes) by the moduledata that points at the table.
 * @return 0, or -ENOENT.
 */
int sfu_gopclntab__find_gofunc(const struct sfu_gopclntab *t, const uint8_t *data, size_t size,
			       uint64_t *gofunc);

/**
 * sfu_gopclntab__set_gofunc() - what sfu_gopclntab__find_gofunc() found.
 * @seg: optional; the bytes of the segment at ELF address @addr that holds
 *       go:func.* when the table's own does not (a PIE keeps the table in
 *       RELRO, go:func.* in .rodata): copied.
 * @return 0, or -ENOMEM.
 */
int sfu_gopclntab__set_gofunc(struct sfu_gopclntab *t, uint64_t gofunc, const void *seg,
			      size_t size, uint64_t addr);

/**
 * sfu_gopclntab__read() - @len bytes at ELF address @addr of the segments kept.
 * @return 0, or -ENOENT when they are not all in one of them.
 */
int sfu_gopclntab__read(const struct sfu_gopclntab *t, uint64_t addr, void *buf, size_t len);

/**
 * sfu_gopclntab__inlined() - the functions inlined at @pc in @f, innermost
 * first, from Go's inline tree (FUNCDATA_InlTree, PCDATA_InlTreeIndex); @f
 * itself is not among them. Up to @max names are stored, *@count says how
 * many there are.
 * @return 0 (*@count 0 when nothing is inlined there), -ENOENT when the tree
 * cannot be reached (no gofunc), -EBADMSG.
 */
int sfu_gopclntab__inlined(const struct sfu_gopclntab *t, const struct go_func *f, uint64_t pc,
			   const char **names, size_t max, size_t *count);

/** sfu_gopclntab__free() - accepts NULL. */
void sfu_gopclntab__free(struct sfu_gopclntab *t);

/**
 * sfu_gopclntab__scan() - the offset of a plausible table header in @image
 * (a stripped file's read-only data), found by its magic and a header whose
 * sizes and offsets fit. @return 0 and sets @off, or -ENOENT.
 */
int sfu_gopclntab__scan(const uint8_t *image, size_t size, size_t *off);

/** @return the number of functions. */
size_t sfu_gopclntab__count(const struct sfu_gopclntab *t);

/** @return 116, 118 or 120: the layout (Go 1.16-1.17, 1.18-1.19, 1.20+). */
unsigned sfu_gopclntab__version(const struct sfu_gopclntab *t);

/** @return the bytes the table holds. */
size_t sfu_gopclntab__memory(const struct sfu_gopclntab *t);

/** @return the pointer size the table was written for (4 or 8). */
unsigned sfu_gopclntab__ptr_size(const struct sfu_gopclntab *t);

/**
 * sfu_gopclntab__func() - function @i, in table (address) order.
 * @return 0, -ENOENT when @i is out of range, -EBADMSG for a damaged record.
 */
int sfu_gopclntab__func(const struct sfu_gopclntab *t, size_t i, struct go_func *out);

/**
 * sfu_gopclntab__find() - the function whose range holds @pc (an ELF address).
 * @return 0, -ENOENT when no function covers @pc, -EBADMSG for a damaged
 * table (unsorted where the search went, a record out of bounds).
 */
int sfu_gopclntab__find(const struct sfu_gopclntab *t, uint64_t pc, struct go_func *out);

/**
 * sfu_gopclntab__spdelta() - how far @f has moved the SP below its entry
 * value at @pc: the return address is at SP + delta.
 * @run_start: optional; receives where that value starts to apply.
 * @return 0, -ENOENT when the table has no value for @pc, -EBADMSG.
 */
int sfu_gopclntab__spdelta(const struct sfu_gopclntab *t, const struct go_func *f, uint64_t pc,
			   int32_t *delta, uint64_t *run_start);

/**
 * sfu_gopclntab__pcdata() - the value of PCDATA table @index of @f at @pc.
 * @return 0, -ENOENT when @f has no such table or no value at @pc, -EBADMSG.
 */
int sfu_gopclntab__pcdata(const struct sfu_gopclntab *t, const struct go_func *f,
			  uint32_t index, uint64_t pc, int32_t *value);

/**
 * sfu_gopclntab__funcdata() - FUNCDATA @index of @f: for Go 1.18 and later an
 * offset from moduledata.gofunc (go:func.*), before an address.
 * @return 0, -ENOENT when @f has none, -EBADMSG.
 */
int sfu_gopclntab__funcdata(const struct sfu_gopclntab *t, const struct go_func *f,
			    uint32_t index, uint64_t *value);

/**
 * sfu_gopclntab__name() - the function name at offset @nameoff of funcnametab
 * (what an inline tree entry names). @return the name, or NULL when out of bounds.
 */
const char *sfu_gopclntab__name(const struct sfu_gopclntab *t, int64_t nameoff);

#endif
