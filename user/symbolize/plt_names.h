/* SPDX-License-Identifier: BSD-2-Clause */
/* Names for PLT stubs (NAME@plt), from the relocations of the GOT slots they jump through. */
#ifndef SFPROF_PLT_NAMES_H
#define SFPROF_PLT_NAMES_H

#include <stdint.h>

struct plt_names;

/**
 * plt_names__new() - the PLT stubs of ELF file @path (x86-64, x32 and i386:
 * .plt, .plt.sec, .plt.got; AArch64: .plt), each named as objdump and perf
 * name it: the symbol of the relocation (JUMP_SLOT, GLOB_DAT..., from RELA
 * or REL sections) of the GOT slot its indirect jump loads, "NAME@plt"
 * (demangled), or "*ABS*+0xADDEND@plt" ("*ABS*@plt" when the addend is 0
 * or, as in REL files, in the slot) for one without a symbol. The PLT0
 * header and lazy-binding entries that jump through no relocated slot are
 * not named.
 *
 * @return the stubs (possibly none), or NULL with errno set (the file cannot
 * be read, or memory runs out).
 */
struct plt_names *plt_names__new(const char *path);

void plt_names__free(struct plt_names *p);

/**
 * plt_names__lookup() - the stub holding ELF address @vaddr.
 * @return its name (lives as long as @p) and *@offset from the stub's start,
 * or NULL when no stub holds it.
 */
const char *plt_names__lookup(const struct plt_names *p, uint64_t vaddr, uint64_t *offset);

#endif
