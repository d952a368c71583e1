/* SPDX-License-Identifier: BSD-2-Clause */
/* A module's ELF symbol tables: functions, code labels and data, their aliases and lookups. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/elf_sym.h"
#include "common/vec.h"
#include "symbolize_internal.h"

static int elf_sym_cmp(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* functions first: at one address a function names the code, not a label */
	if (x->label != y->label)
		return x->label ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* By address, then size, then place in the table: llvm-symbolizer's stable sort. */
static int dsym_cmp(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * Add the functions and code labels of ELF file @path's symbol table (slot
 * @slot of sym_elf[], kept open for the names), as perf's loader takes
 * them: labels are STT_NOTYPE, named, in an executable section, not hidden
 * or internal. @return 0 or -ENOMEM (what was added stays).
 */
static int read_syms(struct sym_module *m, int slot, const char *path, size_t *cap,
		     size_t *dcap)
{
	uint32_t type = SHT_DYNSYM;
	Elf_Scn *scn = NULL;
	size_t shnum;
	Elf *elf;

	if ((m->sym_fd[slot] = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	elf_version(EV_CURRENT);
	elf = m->sym_elf[slot] = elf_begin(m->sym_fd[slot], ELF_C_READ_MMAP, NULL);
	if (!elf || elf_getshdrnum(elf, &shnum))
		return 0;
	/* one table, as perf loads one: .symtab, else .dynsym (a debug file's is NOBITS) */
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;

		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_SYMTAB)
			type = SHT_SYMTAB;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Shdr shdr;
		size_t n;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != type ||
		    !shdr.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		n = data->d_size / shdr.sh_entsize;
		const char *file = NULL;	/* the STT_FILE the local symbols that follow come from */

		for (size_t i = 1; i < n; i++) {
			enum elf_sym_kind kind;
			const char *name;
			int type;
			GElf_Shdr sec;
			GElf_Sym sym;
			Elf_Scn *in;

			if (gelf_getsym(data, (int)i, &sym) && GELF_ST_TYPE(sym.st_info) == STT_FILE) {
				file = elf_strptr(elf, shdr.sh_link, sym.st_name);
				if (file && !*file)
					file = NULL;
				continue;
			}
			if (!gelf_getsym(data, (int)i, &sym) || !elf_sym_in_section(&sym, shnum) ||
			    !sym.st_value)
				continue;
			type = GELF_ST_TYPE(sym.st_info);
			/*
			 * What llvm-symbolizer names any address by: objects, functions
			 * and untyped symbols (assembly's, __bss_start, _end) of loaded
			 * sections, ARM's mapping symbols ($x, $d) aside
			 */
			if ((type == STT_OBJECT || type == STT_FUNC || type == STT_GNU_IFUNC ||
			     type == STT_NOTYPE) &&
			    (in = elf_getscn(elf, sym.st_shndx)) && gelf_getshdr(in, &sec) &&
			    (sec.sh_flags & SHF_ALLOC) &&
			    (name = elf_strptr(elf, shdr.sh_link, sym.st_name)) && *name &&
			    !(type == STT_NOTYPE && name[0] == '$')) {
				if (VEC_RESERVE(m->dsyms, *dcap, m->ndsyms + 1, 256))
					return -ENOMEM;
				m->dsyms[m->ndsyms] = (struct elf_sym){
					.addr = sym.st_value, .size = sym.st_size,
					.sec_end = sec.sh_addr + sec.sh_size, .name = name,
					.label = type == STT_NOTYPE, .bind = GELF_ST_BIND(sym.st_info),
					.file = GELF_ST_BIND(sym.st_info) == STB_LOCAL ? file : NULL,
					.order = (uint32_t)m->ndsyms,
				};
				m->ndsyms++;
			}
			/* the rule libsfunwind's function table keeps too */
			if (!(in = elf_getscn(elf, sym.st_shndx)) || !gelf_getshdr(in, &sec) ||
			    !(kind = elf_sym_code_kind(&sym, &sec)) ||
			    !elf_sym_code_name(kind, name = elf_strptr(elf, shdr.sh_link,
								       sym.st_name)))
				continue;
			if (VEC_RESERVE(m->syms, *cap, m->nsyms + 1, 256))
				return -ENOMEM;
			m->syms[m->nsyms++] = (struct elf_sym){
				.addr = sym.st_value, .size = sym.st_size,
				.sec_end = sec.sh_addr + sec.sh_size, .name = name,
				.label = kind == ELF_SYM_LABEL, .bind = GELF_ST_BIND(sym.st_info),
				.file = GELF_ST_BIND(sym.st_info) == STB_LOCAL ? file : NULL,
				.order = (uint32_t)m->nsyms,
			};
		}
	}
	return 0;
}

/* The module's symbols, read on first use: the debug file's, else the binary's (perf's choice). */
void sym_module_syms(struct sym_module *m)
{
	size_t cap = 0, dcap = 0;

	if (m->syms_read)
		return;
	m->syms_read = true;
	if (m->dbg)
		read_syms(m, 0, sfu_module__path(m->dbg), &cap, &dcap);
	if (!m->nsyms && m->bin && m->bin != m->dbg) {
		m->ndsyms = 0;
		read_syms(m, 1, sfu_module__path(m->bin), &cap, &dcap);
	}
	if (m->nsyms)
		qsort(m->syms, m->nsyms, sizeof(*m->syms), elf_sym_cmp);
	if (m->ndsyms) {
		size_t n = 0;

		/* one per address, as llvm-symbolizer keeps: the largest, then the last */
		qsort(m->dsyms, m->ndsyms, sizeof(*m->dsyms), dsym_cmp);
		for (size_t i = 0; i < m->ndsyms; i++)
			if (i + 1 == m->ndsyms || m->dsyms[i + 1].addr != m->dsyms[i].addr)
				m->dsyms[n++] = m->dsyms[i];
		m->ndsyms = n;
	}
}

/* The index of the first of @n symbols sorted by address that lies past @vaddr. */
static size_t first_past(const struct elf_sym *v, size_t n, uint64_t vaddr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The symbol llvm-symbolizer names ELF address @vaddr by: the one kept at
 * the greatest address at or below it, unless its size ends before
 * @vaddr (a symbol of no size runs to the next). @return it, or NULL.
 */
const struct elf_sym *sym_module_llvm_symbol(struct sym_module *m, uint64_t vaddr)
{
	const struct elf_sym *sym;
	size_t lo;

	sym_module_syms(m);
	if (!(lo = first_past(m->dsyms, m->ndsyms, vaddr)))
		return NULL;
	sym = &m->dsyms[lo - 1];
	return sym->size && vaddr - sym->addr >= sym->size ? NULL : sym;
}

/* The index of the first symbol at an address past @vaddr. */
static size_t syms_after(const struct sym_module *m, uint64_t vaddr)
{
	return first_past(m->syms, m->nsyms, vaddr);
}

/*
 * The code label holding ELF address @vaddr, for an address no function
 * symbol covers: the first symbol at the last address at or before it, if
 * a label, up to the next symbol or its section's end, as perf's
 * symbols__fixup_end extends a symbol of size 0. @return its name, or NULL.
 */
const char *sym_module_label(struct sym_module *m, uint64_t vaddr, uint64_t *offset)
{
	size_t lo, hi;

	sym_module_syms(m);
	hi = syms_after(m, vaddr);
	if (!hi)
		return NULL;
	for (lo = hi - 1; lo && m->syms[lo - 1].addr == m->syms[hi - 1].addr; lo--)
		;
	if (!m->syms[lo].label || vaddr >= m->syms[lo].sec_end ||
	    (hi < m->nsyms && vaddr >= m->syms[hi].addr))
		return NULL;
	*offset = vaddr - m->syms[lo].addr;
	return m->syms[lo].name;
}

/* Whether @a is a better name than @b for their address: the one rule (common/elf_sym.h). */
static bool better_alias(const struct elf_sym *a, const struct elf_sym *b)
{
	return elf_sym_alias_cmp(&(struct elf_sym_alias){ a->name, a->size, a->bind },
				 &(struct elf_sym_alias){ b->name, b->size, b->bind }) < 0;
}

/*
 * The name perf's loader keeps for the function at @start when several
 * function symbols name it (glibc: __libc_start_main_impl,
 * __libc_start_main@@GLIBC_2.34, __libc_start_main@GLIBC_2.2.5...), or NULL
 * when one name does.
 */
const char *sym_module_best_alias(struct sym_module *m, uint64_t start)
{
	const struct elf_sym *best = NULL, *prev = NULL;
	size_t hi, names = 0;

	sym_module_syms(m);
	hi = syms_after(m, start);
	/* at one address functions come first, in name order: a repeated name is adjacent */
	for (size_t i = hi; i-- > 0 && m->syms[i].addr == start;) {
		const struct elf_sym *s = &m->syms[i];

		if (s->label)
			continue;
		if (!prev || strcmp(s->name, prev->name))
			names++;
		prev = s;
		if (!best || better_alias(s, best))
			best = s;
	}
	return names > 1 ? best->name : NULL;
}

/*
 * The source file the symbol table gives the local function starting at
 * @start (the STT_FILE before it), or NULL: what llvm-symbolizer names a
 * frame's file by when there is no DWARF.
 */
const char *sym_module_symtab_file(struct sym_module *m, uint64_t start)
{
	size_t i;

	sym_module_syms(m);
	for (i = syms_after(m, start); i > 0 && m->syms[i - 1].addr == start; i--)
		if (m->syms[i - 1].file && !m->syms[i - 1].label)
			return m->syms[i - 1].file;
	return NULL;
}

/*
 * The name llvm-symbolizer gives the function holding @vaddr from the
 * symbol table (it takes that over the DWARF name of the outermost frame):
 * sym_module_llvm_symbol()'s, of those at its address the largest, then the last in
 * the table (glibc's debug file names __libc_start_main_impl's address
 * __libc_start_main@GLIBC_2.2.5, __fstatat's fstatat); an object's name in
 * data (gvar). Demangled; *@file (if given) its STT_FILE.
 * @return it, or NULL.
 */
const char *sym_module_symtab_function(struct sym_module *m, uint64_t vaddr, const char **file)
{
	const struct elf_sym *best = sym_module_llvm_symbol(m, vaddr);

	if (!best)
		return NULL;
	if (file)
		*file = best->file;
	return sym_module_demangled(m, best->name);
}
