/* SPDX-License-Identifier: BSD-2-Clause */
/* The symbolizer's objects and the functions its files (find, ELF symbols, DWARF, kallsyms) share. */
#ifndef SFPROF_SYMBOLIZE_INTERNAL_H
#define SFPROF_SYMBOLIZE_INTERNAL_H

#include <elfutils/debuginfod.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>

#include "sfunwind.h"
#include "symbolize.h"

struct sym_module {
	struct sym_module *next;
	uint8_t build_id[SFU_BUILD_ID_MAX];
	size_t build_id_len;
	char *path;		/* as recorded */
	const char *name;	/* basename of path */
	struct sfu_module *bin;	/* the binary: segments and symbols */
	struct sfu_module *dbg;	/* a separate debug file: symbols and DWARF */
	int dwarf_fd;
	Dwarf *dwarf;
	bool dwarf_tried;
	bool replaced;		/* path holds another build now, and the recorded one is nowhere */
	uint64_t dwarf_used;	/* the round when its DWARF was last asked for */
	unsigned dwarf_opens;
	struct hmap *dwarf_names;	/* an aliased function's start -> its DWARF name or "" (char *) */
	struct hmap *names;	/* symbol start -> its demangled name (char *), made on first use */
	struct elf_sym *syms;	/* functions and code labels, by address; read on first use */
	size_t nsyms;
	bool syms_read;
	Elf *sym_elf[2];	/* the files their names are in, kept open: debug file, binary */
	int sym_fd[2];
	struct elf_sym *dsyms;	/* objects and functions, by address, for data addresses */
	size_t ndsyms;
	struct hmap *die_names;	/* a DWARF name string -> its demangled copy (char *) */
	struct hmap *paths;	/* a relative DWARF file name -> it under its CU's directory (char *) */
	struct hmap *cu_funcs;	/* a CU's DIE offset -> its functions' ranges (struct cu_funcs *) */
	struct plt_names *plt;	/* the binary's PLT stubs, read on first use */
	bool plt_read;
	uint8_t *key;		/* its key in module_keys */
	size_t key_len;
	uint64_t used;		/* the symbolizer's round when last asked for */
};

/*
 * A symbol as perf's loader takes it, for what the function table cannot
 * answer: the aliases of one address, to choose among as perf does, and
 * untyped code labels (ld.so's _start is STT_NOTYPE of size 0).
 */
struct elf_sym {
	uint64_t addr, size;
	uint64_t sec_end;	/* the end of its section */
	const char *name;	/* in a string table of sym_elf[] */
	bool label;		/* STT_NOTYPE */
	uint8_t bind;		/* STB_* */
	const char *file;	/* a local symbol's STT_FILE, as llvm-symbolizer names its source */
	uint32_t order;		/* its place in the table(s) read: the later of two aliases */
};

struct ksym {
	uint64_t addr;
	uint32_t name;		/* offset in knames; KSYM_NONE: code named by nothing here */
};

#define KSYM_NONE UINT32_MAX

struct symbolizer {
	struct symbolizer_opts opts;
	struct sym_module *modules;
	struct hmap *module_keys;	/* build ID length, build ID, path -> struct sym_module * */
	struct ksym *ksyms;
	size_t nksyms, ksyms_cap;
	char *knames;		/* their names, NUL-terminated, one after another */
	size_t knames_len, knames_cap;
	bool ksyms_loaded;
	uint64_t round;		/* symbolizer__trim() calls so far */
	debuginfod_client *dbgd;
	bool dbgd_tried;
	char *cache_dir;	/* the build-ID cache's directory, NULL when there is none */
	bool cache_said;	/* why an entry of it was refused, said once */
};

/* Deepest nesting of inlined calls followed: DWARF from a hostile file can nest without end. */
#define MAX_INLINE_DEPTH 256

/* symbolizer.c */

/*
 * A symbol table name as shown: demangled (C++, Rust), the copy kept by the
 * address of the name. @return it, or @name itself.
 */
const char *sym_module_demangled(struct sym_module *m, const char *name);

/* elf_syms.c: the symbol tables, read on first use */

void sym_module_syms(struct sym_module *m);
/* The symbol llvm-symbolizer names ELF address @vaddr by. @return it, or NULL. */
const struct elf_sym *sym_module_llvm_symbol(struct sym_module *m, uint64_t vaddr);
/* The code label holding @vaddr where no function does. @return its name, or NULL. */
const char *sym_module_label(struct sym_module *m, uint64_t vaddr, uint64_t *offset);
/* The alias perf keeps for the function at @start. @return it, or NULL when one name does. */
const char *sym_module_best_alias(struct sym_module *m, uint64_t start);
/* The STT_FILE of the local function starting at @start. @return it, or NULL. */
const char *sym_module_symtab_file(struct sym_module *m, uint64_t start);
/* The name llvm-symbolizer gives the function holding @vaddr from the symbol table. @return it, or NULL. */
const char *sym_module_symtab_function(struct sym_module *m, uint64_t vaddr, const char **file);

/* dwarf.c: the module's DWARF, opened on first use */

void sym_module_dwarf(struct sym_module *m);
void sym_module_drop_dwarf(struct sym_module *m);
void sym_module_source_line(struct sym_module *m, uint64_t vaddr, struct sym_info *out);
/* @file of @cu's line table under its DW_AT_comp_dir. @return the name to show. */
const char *sym_module_cu_path(struct sym_module *m, Dwarf_Die *cu, const char *file);
/* The DWARF name of the function starting at @start. @return it, or NULL. */
const char *sym_module_dwarf_func_name(struct sym_module *m, uint64_t start);
/* A subprogram's or inlined subroutine's name as llvm-symbolizer shows it. @return it, or NULL. */
const char *sym_module_die_name(struct sym_module *m, Dwarf_Die *die);
/* The subprogram and inlined-subroutine DIEs holding @pc, outermost first. @return their number. */
size_t sym_module_cu_inline_chain(struct sym_module *m, Dwarf_Die *cu, uint64_t pc,
				  Dwarf_Die *chain);

#endif
