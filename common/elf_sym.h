/* SPDX-License-Identifier: BSD-2-Clause */
/* The one rule for ELF symbols in code: which symbols name code, and which alias names an address. */
#ifndef SFPROF_ELF_SYM_H
#define SFPROF_ELF_SYM_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * libsfunwind's function table (unwind/elf.c) and sfprof's symbolizer
 * (user/symbolize/elf_syms.c) both read symbols with these, so that a
 * frame is named the same by sfu_module__symbolize() and by sfprof report.
 * Header-only: the rule is a few comparisons, and common/ links no libelf.
 */

enum elf_sym_kind {
	ELF_SYM_NONE,		/* names no code */
	ELF_SYM_FUNC,		/* STT_FUNC, STT_GNU_IFUNC */
	ELF_SYM_LABEL,		/* STT_NOTYPE in code: assembly's entry points (ld.so's _start) */
};

/**
 * elf_sym_in_section() - whether @sym is defined in a section of a file of
 * @shnum sections: not undefined, absolute (SHN_ABS), common, or past the
 * section table. Only then may its section's header be read.
 */
static inline bool elf_sym_in_section(const GElf_Sym *sym, size_t shnum)
{
	return sym->st_shndx != SHN_UNDEF && sym->st_shndx < SHN_LORESERVE &&
	       sym->st_shndx < shnum;
}

/**
 * elf_sym_code_kind() - what @sym names in code, as perf's loader
 * (dso__load_sym: functions and labels of executable sections) and
 * llvm-symbolizer (no absolute symbols) take it.
 * @sym: the symbol.
 * @sec: the header of its section, read only when elf_sym_in_section();
 *	 NULL when it is not.
 *
 * A function or a label at a non-zero address inside an executable
 * section; a label not hidden or internal (a local jump target of a
 * hand-written function, not an entry point). Its name is judged apart
 * (elf_sym_code_name()), after the caller has checked it lies inside the
 * string table.
 *
 * @return ELF_SYM_FUNC, ELF_SYM_LABEL, or ELF_SYM_NONE.
 */
static inline enum elf_sym_kind elf_sym_code_kind(const GElf_Sym *sym, const GElf_Shdr *sec)
{
	int type = GELF_ST_TYPE(sym->st_info), vis = GELF_ST_VISIBILITY(sym->st_other);

	if (!sec || !sym->st_value || !(sec->sh_flags & SHF_EXECINSTR) ||
	    sym->st_value < sec->sh_addr || sym->st_value - sec->sh_addr >= sec->sh_size)
		return ELF_SYM_NONE;
	if (type == STT_FUNC || type == STT_GNU_IFUNC)
		return ELF_SYM_FUNC;
	if (type == STT_NOTYPE && vis != STV_HIDDEN && vis != STV_INTERNAL)
		return ELF_SYM_LABEL;
	return ELF_SYM_NONE;
}

/**
 * elf_sym_code_name() - whether @name may name code of @kind: not empty,
 * and a label not one of ARM's and AArch64's mapping symbols ($x, $d,
 * $a, $t), which mark code and data, not functions (perf, llvm-symbolizer).
 * @return true when it does.
 */
static inline bool elf_sym_code_name(enum elf_sym_kind kind, const char *name)
{
	return kind != ELF_SYM_NONE && name && *name && !(kind == ELF_SYM_LABEL && name[0] == '$');
}

/* One of the names of an address, as elf_sym_alias_cmp() weighs it. */
struct elf_sym_alias {
	const char *name;
	uint64_t size;
	unsigned char bind;	/* STB_* */
};

/**
 * elf_sym_alias_cmp() - which of two function symbols of one address names
 * it, as perf's choose_best_symbol(): the sized one, then the one not weak,
 * then the global one, then the one with fewer leading underscores, then
 * the longer name; then name order, where perf keeps whichever it met first.
 *
 * @return < 0 when @a is the better name, > 0 when @b is, 0 for one name.
 */
static inline int elf_sym_alias_cmp(const struct elf_sym_alias *a, const struct elf_sym_alias *b)
{
	size_t ua = strspn(a->name, "_"), ub = strspn(b->name, "_"), la, lb;

	if (!a->size != !b->size)
		return a->size ? -1 : 1;
	if ((a->bind == STB_WEAK) != (b->bind == STB_WEAK))
		return a->bind == STB_WEAK ? 1 : -1;
	if ((a->bind == STB_GLOBAL) != (b->bind == STB_GLOBAL))
		return a->bind == STB_GLOBAL ? -1 : 1;
	if (ua != ub)
		return ua < ub ? -1 : 1;
	la = strlen(a->name);
	lb = strlen(b->name);
	if (la != lb)
		return la > lb ? -1 : 1;
	return strcmp(a->name, b->name);
}

#endif
