/* SPDX-License-Identifier: BSD-2-Clause */
/* The symbolizer: its modules, demangled and displayed names, and the lookups that ask the other files. */
#include <dwarf.h>
#include <elfutils/debuginfod.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "buildid/buildid.h"
#include "common/hmap.h"
#include "plt_names.h"
#include "symbolize_internal.h"

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s || !(s->module_keys = hmap__new(HMAP_BYTES))) {
		free(s);
		return NULL;
	}
	if (opts)
		s->opts = *opts;
	s->cache_dir = malloc(4096);
	if (s->cache_dir && buildid_cache_dir(s->cache_dir, 4096)) {
		free(s->cache_dir);
		s->cache_dir = NULL;
	}
	return s;
}

static void module_free(struct sym_module *m)
{
	free(m->syms);
	free(m->dsyms);
	plt_names__free(m->plt);
	sym_module_drop_dwarf(m);
	for (int i = 0; i < 2; i++) {
		if (m->sym_elf[i])
			elf_end(m->sym_elf[i]);
		if (m->sym_fd[i] >= 0)
			close(m->sym_fd[i]);
	}
	sfu_module__put(m->bin);
	sfu_module__put(m->dbg);
	hmap__free_values(m->names, free);
	hmap__free_values(m->dwarf_names, free);
	free(m->path);
	free(m->key);
	free(m);
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	while (s->modules) {
		struct sym_module *next = s->modules->next;

		module_free(s->modules);
		s->modules = next;
	}
	hmap__free(s->module_keys);
	free(s->ksyms);
	free(s->knames);
	if (s->dbgd)
		debuginfod_end(s->dbgd);
	free(s->cache_dir);
	free(s);
}

size_t symbolizer__trim(struct symbolizer *s, unsigned idle_rounds)
{
	struct sym_module **link = &s->modules;
	size_t freed = 0;

	s->round++;
	while (*link) {
		struct sym_module *m = *link;

		/* a module found nowhere is looked for again: its file may have been kept since */
		if (m->bin && s->round - m->used <= idle_rounds) {
			/*
			 * Its names stay (copies); its DWARF, not asked for in
			 * as many rounds, goes: libdw holds a debug file's
			 * compressed sections inflated (11.7 MiB for Debian's
			 * libc6-dbg), and opening it again inflates them again.
			 */
			if (m->dwarf_tried && s->round - m->dwarf_used > idle_rounds)
				sym_module_drop_dwarf(m);
			link = &m->next;
			continue;
		}
		*link = m->next;
		hmap__delete(s->module_keys, m->key, m->key_len, NULL);
		module_free(m);
		freed++;
	}
	return freed;
}

const char *sym_module__name(const struct sym_module *m)
{
	return m->name;
}

const char *sym_module__path(const struct sym_module *m)
{
	return m->path;
}

bool sym_module__replaced(const struct sym_module *m)
{
	return m->replaced;
}

bool sym_module__found(const struct sym_module *m)
{
	return m->bin != NULL;
}

const char *sym_module__binary_file(const struct sym_module *m)
{
	return m->bin && m->bin != m->dbg ? sfu_module__path(m->bin) : NULL;
}

const char *sym_module__debug_file(const struct sym_module *m)
{
	return m->dbg ? sfu_module__path(m->dbg) : NULL;
}

char *symbolizer__demangle(const char *name)
{
	char *dm;

	if (!name || (strncmp(name, "_Z", 2) && strncmp(name, "_R", 2)))
		return NULL;
	dm = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
	/* libiberty demangles some names to nothing ("_RC0", a Rust crate root): shown as they are */
	if (dm && !dm[0]) {
		free(dm);
		return NULL;
	}
	return dm;
}

/*
 * The name shown for the function starting at @start, cached, as perf's
 * output names it. One symbol there: its name, demangled. Several (aliases:
 * glibc's .symver makes __libc_start_main@@GLIBC_2.34 and
 * __libc_start_main@GLIBC_2.2.5 of __libc_start_main_impl), or a versioned
 * name: the function's DWARF name when there is DWARF (perf's default output
 * shows the function addr2line finds where it differs from the symbol's),
 * else the alias perf's loader keeps (choose_best_symbol(): sized, not
 * weak, global, fewest leading underscores, longest).
 */
static const char *display_name(struct sym_module *m, uint64_t start, const char *raw)
{
	bool mangled = !strncmp(raw, "_Z", 2) || !strncmp(raw, "_R", 2);
	const char *alias = sym_module_best_alias(m, start), *name = raw;
	uint64_t *slot;
	char *dm = NULL;

	if (!alias && !strchr(raw, '@') && !mangled)
		return raw;
	if ((!m->names && !(m->names = hmap__new(HMAP_U64))) ||
	    hmap__entry_u64(m->names, start, &slot))
		return raw;
	if (*slot)
		return (const char *)(uintptr_t)*slot;
	if (alias || strchr(raw, '@')) {
		const char *dw = sym_module_dwarf_func_name(m, start);

		name = dw && *dw ? dw : alias ? alias : raw;
	}
	if (!(dm = symbolizer__demangle(name)))
		dm = strdup(name);
	if (!dm) {
		hmap__delete_u64(m->names, start, NULL);
		return raw;
	}
	*slot = (uintptr_t)dm;
	return dm;
}

int sym_module__map_vaddr(const struct sym_module *m, const struct sym_mapping *map,
			  uint64_t *vaddr)
{
	const uint64_t page = 4096;
	const struct sfu_segment *segs;
	size_t n;

	if (!m->bin)
		return -ENOENT;
	if (m->bin != m->dbg)
		return sfu_module__map_vaddr(m->bin, map->file_offset, map->prot, vaddr);
	/*
	 * A debug file standing in for its binary: its program headers keep the
	 * segments' addresses and flags, not their file offsets. The loader maps
	 * each segment from the page holding its start, so the first segment
	 * with the mapping's permissions is the one, from that page on.
	 */
	segs = sfu_module__segments(m->dbg, &n);
	for (size_t i = 0; i < n; i++) {
		if (!(segs[i].flags & PF_X) == !(map->prot & PROT_EXEC) &&
		    !(segs[i].flags & PF_W) == !(map->prot & PROT_WRITE)) {
			*vaddr = segs[i].vaddr & ~(page - 1);
			return 0;
		}
	}
	return -ENOENT;
}

static bool lookup_vaddr(struct symbolizer *s, struct sym_module *m, uint64_t vaddr, bool is_ra,
			 struct sym_info *out);

bool symbolizer__lookup_mapped(struct symbolizer *s, struct sym_module *m, uint64_t addr,
			       const struct sym_mapping *map, bool is_ra, struct sym_info *out)
{
	uint64_t vaddr;

	memset(out, 0, sizeof(*out));
	out->vaddr = addr - map->start + map->file_offset;
	if (!m || sym_module__map_vaddr(m, map, &vaddr))
		return false;
	return lookup_vaddr(s, m, vaddr + (addr - map->start), is_ra, out);
}

/*
 * A symbol table name as shown: demangled (C++, Rust), the copy kept by the
 * address of the name, which lives as long as the module's ELF handles.
 * @return it, or @name itself when it is not mangled or memory runs out.
 */
const char *sym_module_demangled(struct sym_module *m, const char *name)
{
	uint64_t *slot;
	char *dm;

	if (strncmp(name, "_Z", 2) && strncmp(name, "_R", 2))
		return name;
	if ((!m->die_names && !(m->die_names = hmap__new(HMAP_U64))) ||
	    hmap__entry_u64(m->die_names, (uintptr_t)name, &slot))
		return name;
	if (!*slot) {
		if (!(dm = symbolizer__demangle(name)) && !(dm = strdup(name))) {
			hmap__delete_u64(m->die_names, (uintptr_t)name, NULL);
			return name;
		}
		*slot = (uintptr_t)dm;
	}
	return (const char *)(uintptr_t)*slot;
}

/* The PLT stub of the binary holding ELF address @vaddr: its name, or NULL. */
static const char *plt_lookup(struct sym_module *m, uint64_t vaddr, uint64_t *offset)
{
	if (!m->plt_read && m->bin) {
		m->plt_read = true;
		/* a debug file standing in for the binary has no PLT bytes: nothing named */
		m->plt = plt_names__new(sfu_module__path(m->bin));
	}
	return plt_names__lookup(m->plt, vaddr, offset);
}

/* A Go program stripped of its symbols (-ldflags=-s) still names its functions in .gopclntab. */
static const char *go_lookup(struct sym_module *m, uint64_t vaddr, uint64_t *offset)
{
	struct sfu_go_func f;

	if (sfu_module__go_func(m->bin, vaddr, &f))
		return NULL;
	*offset = vaddr - f.entry;
	return f.name;
}

/* Name ELF address @vaddr of @m. */
static bool lookup_vaddr(struct symbolizer *s, struct sym_module *m, uint64_t vaddr, bool is_ra,
			 struct sym_info *out)
{
	uint64_t look, off;
	const char *name = NULL;

	out->vaddr = vaddr;
	/* a return address may follow a call to a noreturn function at the end of its caller */
	look = is_ra && vaddr ? vaddr - 1 : vaddr;
	if ((!m->dbg || sfu_module__symbolize(m->dbg, look, &name, &off)) &&
	    sfu_module__symbolize(m->bin, look, &name, &off) &&
	    !(name = sym_module_label(m, look, &off))) {
		/* no symbol: a PLT stub is named NAME@plt, as objdump and perf name it */
		if (!(name = go_lookup(m, look, &off)) && !(name = plt_lookup(m, look, &off)))
			return false;
		out->offset = off;
		out->name = name;
		return true;
	}
	/* named, offset and line at the call, as perf names a caller (_start+0x7) */
	out->offset = off;
	out->name = display_name(m, look - off, name);
	if (!s->opts.no_lines)
		sym_module_source_line(m, look, out);
	return true;
}

bool symbolizer__lookup_data(struct symbolizer *s, struct sym_module *m, uint64_t vaddr,
			     struct sym_info *out)
{
	const struct elf_sym *sym;

	(void)s;
	memset(out, 0, sizeof(*out));
	out->vaddr = vaddr;
	if (!m || !m->bin || !(sym = sym_module_llvm_symbol(m, vaddr)))
		return false;
	out->offset = vaddr - sym->addr;
	out->name = sym_module_demangled(m, sym->name);
	return true;
}

/*
 * Where DWARF says nothing (a Go program built with -ldflags=-w), Go's own
 * inline tree: the functions inlined at @vaddr, innermost first, then the one
 * they were inlined into. @return their count, 0 where nothing is inlined.
 */
static size_t go_inlined(struct sym_module *m, uint64_t vaddr, struct sym_frame *frames,
			 size_t cap)
{
	const char *names[MAX_INLINE_DEPTH];
	size_t n;

	if (sfu_module__go_inlined(m->bin, vaddr, names, MAX_INLINE_DEPTH, &n) || n < 2 ||
	    n > MAX_INLINE_DEPTH)
		return 0;
	for (size_t i = 0; i < n && i < cap; i++)
		frames[i] = (struct sym_frame){ .name = names[i] };
	return n;
}

size_t symbolizer__lookup_inlined(struct symbolizer *s, struct sym_module *m, uint64_t vaddr,
				  struct sym_frame *frames, size_t cap)
{
	Dwarf_Die cu, *chain = NULL;
	Dwarf_Files *files = NULL;
	size_t n = 0, nfiles = 0;
	struct sym_info info;

	if (!m || !m->bin)
		return 0;
	sym_module_dwarf(m);
	bool have_cu = m->dwarf && dwarf_addrdie(m->dwarf, vaddr, &cu);

	if (have_cu && (chain = malloc((MAX_INLINE_DEPTH + 1) * sizeof(*chain))))
		n = sym_module_cu_inline_chain(m, &cu, vaddr, chain);
	if (!n && (n = go_inlined(m, vaddr, frames, cap))) {
		free(chain);
		return n;
	}
	if (!n) {
		const char *file = NULL, *name = sym_module_symtab_function(m, vaddr, &file);
		struct sym_frame f = { .name = name };
		Dwarf_Line *line;
		int v;

		free(chain);
		memset(&info, 0, sizeof(info));
		/* no subprogram DWARF for it: the symbol table's name, as llvm-symbolizer gives */
		if (!name && !lookup_vaddr(s, m, vaddr, false, &info))
			return 0;
		if (!name)
			f.name = info.name;
		if (have_cu && (line = dwarf_getsrc_die(&cu, vaddr))) {
			/* a line table without the function's DIE */
			f.file = sym_module_cu_path(m, &cu, dwarf_linesrc(line, NULL, NULL));
			if (!dwarf_lineno(line, &v) && v > 0)
				f.line = v;
			if (!dwarf_linecol(line, &v) && v > 0)
				f.column = v;
		} else {
			f.file = name ? file : sym_module_symtab_file(m, vaddr - info.offset);
		}
		if (cap)
			frames[0] = f;
		return 1;
	}
	if (dwarf_getsrcfiles(&cu, &files, &nfiles))
		files = NULL;
	for (size_t i = 0; i < n && i < cap; i++) {
		Dwarf_Die *die = &chain[n - 1 - i];	/* innermost first */
		struct sym_frame *f = &frames[i];

		memset(f, 0, sizeof(*f));
		f->name = sym_module_die_name(m, die);
		if (!i) {
			Dwarf_Line *line = dwarf_getsrc_die(&cu, vaddr);
			int v;

			if (line) {
				f->file = sym_module_cu_path(m, &cu, dwarf_linesrc(line, NULL, NULL));
				if (!dwarf_lineno(line, &v) && v > 0)
					f->line = v;
				if (!dwarf_linecol(line, &v) && v > 0)
					f->column = v;
			}
		} else {
			/* where the callee one frame in was inlined */
			Dwarf_Die *callee = &chain[n - i];
			Dwarf_Attribute attr;
			Dwarf_Word w;

			if (files && dwarf_attr(callee, DW_AT_call_file, &attr) &&
			    !dwarf_formudata(&attr, &w) && w < nfiles)
				f->file = sym_module_cu_path(m, &cu, dwarf_filesrc(files, w, NULL, NULL));
			if (dwarf_attr(callee, DW_AT_call_line, &attr) && !dwarf_formudata(&attr, &w))
				f->line = w > UINT32_MAX ? 0 : (unsigned)w;
			if (dwarf_attr(callee, DW_AT_call_column, &attr) &&
			    !dwarf_formudata(&attr, &w))
				f->column = w > UINT32_MAX ? 0 : (unsigned)w;
		}
	}
	/* the outermost frame as llvm-symbolizer names it: the symbol table's, else DWARF's */
	memset(&info, 0, sizeof(info));
	if (n <= cap) {
		const char *name = sym_module_symtab_function(m, vaddr, NULL);

		if (name)
			frames[n - 1].name = name;
		else if (!frames[n - 1].name && lookup_vaddr(s, m, vaddr, false, &info))
			frames[n - 1].name = info.name;
	}
	free(chain);
	return n;
}
