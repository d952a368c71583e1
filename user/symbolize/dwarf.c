/* SPDX-License-Identifier: BSD-2-Clause */
/* A module's DWARF: function names, source lines, inline chains and each CU's function table. */
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/hmap.h"
#include "common/vec.h"
#include "symbolize_internal.h"

static void cu_funcs_free(void *p);

/* Let go of @m's DWARF and what is kept by its strings' addresses; opened again when asked. */
void sym_module_drop_dwarf(struct sym_module *m)
{
	hmap__free_values(m->die_names, free);
	hmap__free_values(m->paths, free);
	hmap__free_values(m->cu_funcs, cu_funcs_free);
	m->die_names = m->paths = NULL;
	m->cu_funcs = NULL;
	if (m->dwarf)
		dwarf_end(m->dwarf);
	if (m->dwarf_fd >= 0)
		close(m->dwarf_fd);
	m->dwarf = NULL;
	m->dwarf_fd = -1;
	m->dwarf_tried = false;
}

/* Open the module's DWARF (the debug file's, else the binary's) on first use. */
void sym_module_dwarf(struct sym_module *m)
{
	const char *path;

	m->dwarf_used = m->used;
	if (m->dwarf_tried)
		return;
	m->dwarf_tried = true;
	path = sfu_module__path(m->dbg ? m->dbg : m->bin);
	m->dwarf_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (m->dwarf_fd >= 0)
		m->dwarf = dwarf_begin(m->dwarf_fd, DWARF_C_READ);
	if (m->dwarf)
		m->dwarf_opens++;
}

/*
 * @file, a source file name of @cu's line table, under the CU's
 * DW_AT_comp_dir when it is relative and not already under it (glibc's CU
 * "./csu" names "../sysdeps/nptl/x.h"), as llvm-symbolizer joins them;
 * libdw does not. The joined copy is kept by the address of the DWARF
 * string, which lives as long as the module's Dwarf. @return the name to show.
 */
const char *sym_module_cu_path(struct sym_module *m, Dwarf_Die *cu, const char *file)
{
	Dwarf_Attribute attr;
	const char *dir;
	uint64_t *slot;
	char *joined;

	size_t len;

	if (!file || file[0] == '/' || !(dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr))) ||
	    !(len = strlen(dir)))
		return file;
	/* a file of the CU's own directory: libdw joined that already */
	if (!strncmp(file, dir, len) && (file[len] == '/' || dir[len - 1] == '/'))
		return file;
	if ((!m->paths && !(m->paths = hmap__new(HMAP_U64))) ||
	    hmap__entry_u64(m->paths, (uintptr_t)file, &slot))
		return file;
	if (!*slot) {
		if (asprintf(&joined, "%s%s%s", dir, dir[len - 1] == '/' ? "" : "/",
			     file) < 0) {
			hmap__delete_u64(m->paths, (uintptr_t)file, NULL);
			return file;
		}
		*slot = (uintptr_t)joined;
	}
	return (const char *)(uintptr_t)*slot;
}

void sym_module_source_line(struct sym_module *m, uint64_t vaddr, struct sym_info *out)
{
	Dwarf_Die cu;
	Dwarf_Line *line;
	int lineno;

	sym_module_dwarf(m);
	if (!m->dwarf || !dwarf_addrdie(m->dwarf, vaddr, &cu) ||
	    !(line = dwarf_getsrc_die(&cu, vaddr)))
		return;
	out->file = dwarf_linesrc(line, NULL, NULL);
	if (!dwarf_lineno(line, &lineno))
		out->line = lineno;
}

/*
 * The DWARF name of the function starting at @start: the subprogram of its
 * compilation unit whose ranges hold it, through its abstract origin (not
 * dwarf_getscopes(), which gives an inlined callee's abstract scopes instead
 * of the function it was inlined into), in @m's DWARF if open. @return NULL
 * when there is none or no such subprogram.
 */
static const char *dwarf_func_name_at(struct sym_module *m, uint64_t start)
{
	Dwarf_Die cu, die;
	int more;

	if (!m->dwarf || !dwarf_addrdie(m->dwarf, start, &cu) || dwarf_child(&cu, &die))
		return NULL;
	for (more = 0; !more; more = dwarf_siblingof(&die, &die)) {
		Dwarf_Attribute attr;

		/* a C++ function's DW_AT_name is unqualified: its linkage name, demangled, is not */
		if (dwarf_tag(&die) == DW_TAG_subprogram && dwarf_haspc(&die, start) > 0)
			return dwarf_attr_integrate(&die, DW_AT_linkage_name, &attr) ||
			       dwarf_attr_integrate(&die, DW_AT_MIPS_linkage_name, &attr) ||
			       dwarf_attr_integrate(&die, DW_AT_name, &attr) ?
			       dwarf_formstring(&attr) : NULL;
	}
	return NULL;
}

/*
 * The DWARF names of every function of @m with aliases or a versioned name,
 * made at once from its open DWARF: for a module whose DWARF a trim let go
 * and that is asked again (an agent's libc, a new aliased function every few
 * windows), instead of inflating its debug sections again for each.
 */
static void make_dwarf_names(struct sym_module *m)
{
	sym_module_syms(m);
	if (!m->dwarf || !(m->dwarf_names = hmap__new(HMAP_U64)))
		return;
	for (size_t i = 0, j; i < m->nsyms; i = j) {
		uint64_t start = m->syms[i].addr;
		size_t funcs = 0;
		bool versioned = false;
		const char *dw;
		char *copy;

		for (j = i; j < m->nsyms && m->syms[j].addr == start; j++) {
			funcs += !m->syms[j].label;
			versioned |= strchr(m->syms[j].name, '@') != NULL;
		}
		if (funcs < 2 && !versioned)
			continue;
		dw = dwarf_func_name_at(m, start);
		if (!(copy = strdup(dw ? dw : "")) || hmap__set_u64(m->dwarf_names, start,
								   (uintptr_t)copy))
			free(copy);
	}
}

/* dwarf_func_name_at(), from the names made at once when there are, opening the DWARF if need be. */
const char *sym_module_dwarf_func_name(struct sym_module *m, uint64_t start)
{
	uint64_t *v;

	if (m->dwarf_names && !hmap__find_u64(m->dwarf_names, start, &v))
		return *(const char *)(uintptr_t)*v ? (const char *)(uintptr_t)*v : NULL;
	sym_module_dwarf(m);
	if (m->dwarf_opens > 1 && !m->dwarf_names) {
		make_dwarf_names(m);
		if (m->dwarf_names && !hmap__find_u64(m->dwarf_names, start, &v))
			return *(const char *)(uintptr_t)*v ? (const char *)(uintptr_t)*v : NULL;
	}
	return dwarf_func_name_at(m, start);
}

/*
 * The name of a subprogram or inlined subroutine DIE as llvm-symbolizer
 * shows it: the linkage name (through the abstract origin and the
 * declaration), demangled, else DW_AT_name. Demangled copies are kept by
 * the address of the DWARF string, which lives as long as the module's
 * Dwarf.
 */
const char *sym_module_die_name(struct sym_module *m, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *raw;

	if ((!dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) &&
	     !dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr) &&
	     !dwarf_attr_integrate(die, DW_AT_name, &attr)) ||
	    !(raw = dwarf_formstring(&attr)) || !*raw)
		return NULL;
	return sym_module_demangled(m, raw);
}

/*
 * The chain of subprogram and inlined-subroutine DIEs holding @pc below
 * @parent, outermost first, into @chain (room for MAX_INLINE_DEPTH).
 * Not dwarf_getscopes(): past an inlined instance it climbs the callee's
 * abstract scopes, not the function the callee was inlined into.
 * Scopes without addresses (namespaces, classes) are searched @level deep.
 * @return the number of DIEs.
 */
static size_t inline_chain(Dwarf_Die *parent, uint64_t pc, Dwarf_Die *chain, unsigned level)
{
	Dwarf_Die die = *parent, child;
	size_t n = 0;
	unsigned depth = 0;

	while (depth++ < 4 * MAX_INLINE_DEPTH && !dwarf_child(&die, &child)) {
		bool found = false;

		do {
			int tag = dwarf_tag(&child);

			switch (tag) {
			case DW_TAG_subprogram:
			case DW_TAG_inlined_subroutine:
			case DW_TAG_lexical_block:
			case DW_TAG_try_block:
			case DW_TAG_catch_block:
				found = dwarf_haspc(&child, pc) > 0;
				break;
			case DW_TAG_namespace:
			case DW_TAG_class_type:
			case DW_TAG_structure_type:
			case DW_TAG_module:
				/* a definition nested in a scope without addresses of its own */
				/* nested scopes from a hostile file: a bounded recursion */
				if (!n && level < 64) {
					size_t k = inline_chain(&child, pc, chain, level + 1);

					if (k)
						return k;
				}
				break;
			default:
				break;
			}
			if (found) {
				if ((tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) &&
				    n < MAX_INLINE_DEPTH)
					chain[n++] = child;
				die = child;
				break;
			}
		} while (!dwarf_siblingof(&child, &child));
		if (!found)
			break;
	}
	return n;
}

/* A function's range of addresses in a CU (a DW_AT_ranges function has several). */
struct func_range {
	uint64_t lo, hi;
	Dwarf_Off die;
};

/* The functions of one CU by address: inline_chain() from the CU's DIE walks all of its DIEs. */
struct cu_funcs {
	struct func_range *r;
	size_t n, cap;
};

static void cu_funcs_free(void *p)
{
	struct cu_funcs *cf = p;

	if (cf)
		free(cf->r);
	free(cf);
}

static int func_range_cmp(const void *pa, const void *pb)
{
	const struct func_range *a = pa, *b = pb;

	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* The subprograms under @parent with addresses, in scopes without addresses @level deep. */
static int cu_funcs_add(struct cu_funcs *cf, Dwarf_Die *parent, unsigned level)
{
	Dwarf_Die child;

	if (dwarf_child(parent, &child))
		return 0;
	do {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
				if (lo >= hi)
					continue;
				if (VEC_RESERVE(cf->r, cf->cap, cf->n + 1, 256))
					return -ENOMEM;
				cf->r[cf->n++] = (struct func_range){ lo, hi, dwarf_dieoffset(&child) };
			}
			break;
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_module:
			/* as inline_chain(): definitions nested in scopes without addresses */
			if (level < 64 && cu_funcs_add(cf, &child, level + 1))
				return -ENOMEM;
			break;
		default:
			break;
		}
	} while (!dwarf_siblingof(&child, &child));
	return 0;
}

/*
 * inline_chain() of @cu at @pc through an index of the CU's functions made
 * on first use, so that a CU's DIEs are walked once, not once per address:
 * the function holding @pc, then the chain within it. The index missing
 * (no memory), the CU is walked. @return the number of DIEs.
 */
size_t sym_module_cu_inline_chain(struct sym_module *m, Dwarf_Die *cu, uint64_t pc, Dwarf_Die *chain)
{
	Dwarf_Off cu_off = dwarf_dieoffset(cu);
	struct cu_funcs *cf;
	size_t lo = 0, hi, scanned = 0;
	uint64_t *v;

	if ((!m->cu_funcs && !(m->cu_funcs = hmap__new(HMAP_U64))) ||
	    hmap__entry_u64(m->cu_funcs, cu_off, &v))
		return inline_chain(cu, pc, chain, 0);
	if (!*v) {
		if (!(cf = calloc(1, sizeof(*cf))) || cu_funcs_add(cf, cu, 0)) {
			cu_funcs_free(cf);
			hmap__delete_u64(m->cu_funcs, cu_off, NULL);
			return inline_chain(cu, pc, chain, 0);
		}
		/* a CU without functions has no array: qsort() takes no NULL */
		if (cf->n)
			qsort(cf->r, cf->n, sizeof(*cf->r), func_range_cmp);
		*v = (uintptr_t)cf;
	}
	cf = (struct cu_funcs *)(uintptr_t)*v;
	hi = cf->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cf->r[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ranges that overlap (rare: a hostile file) are looked through, a bounded number */
	for (size_t i = lo; i-- > 0 && scanned++ < 64;) {
		Dwarf_Die die;

		if (pc >= cf->r[i].hi || !dwarf_offdie(m->dwarf, cf->r[i].die, &die))
			continue;
		chain[0] = die;
		/* room for MAX_INLINE_DEPTH more after it */
		return 1 + inline_chain(&die, pc, chain + 1, 0);
	}
	return 0;
}
