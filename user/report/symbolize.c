/* SPDX-License-Identifier: BSD-2-Clause */
/* Symbolizer: binaries and debug files found by build ID, demangled names, DWARF lines, kallsyms. */
#include <dwarf.h>
#include <elfutils/debuginfod.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libiberty/demangle.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/hmap.h"
#include "sfunwind.h"
#include "symbolize.h"
#include "util/vec.h"

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
	struct hmap *names;	/* symbol start -> its demangled name (char *), made on first use */
	struct label *labels;	/* code labels and function starts, by address; read on first use */
	size_t nlabels;
	bool labels_read;
};

/*
 * A symbol for the lookups the function table cannot answer: untyped code
 * labels (ld.so's _start is STT_NOTYPE of size 0), which perf names code
 * by, and the function starts that end them.
 */
struct label {
	uint64_t addr, end;	/* end: the section's end */
	char *name;		/* NULL: a function start, only bounding the label before it */
};

struct ksym {
	uint64_t addr;
	char *name;
};

struct symbolizer {
	struct symbolizer_opts opts;
	struct sym_module *modules;
	struct hmap *module_keys;	/* build ID length, build ID, path -> struct sym_module * */
	struct ksym *ksyms;
	size_t nksyms, ksyms_cap;
	bool ksyms_loaded;
	debuginfod_client *dbgd;
	bool dbgd_tried;
};

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s || !(s->module_keys = hmap__new(HMAP_BYTES))) {
		free(s);
		return NULL;
	}
	if (opts)
		s->opts = *opts;
	return s;
}

static void module_free(struct sym_module *m)
{
	for (size_t i = 0; i < m->nlabels; i++)
		free(m->labels[i].name);
	free(m->labels);
	sfu_module__put(m->bin);
	sfu_module__put(m->dbg);
	if (m->dwarf)
		dwarf_end(m->dwarf);
	if (m->dwarf_fd >= 0)
		close(m->dwarf_fd);
	hmap__free_values(m->names, free);
	free(m->path);
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
	for (size_t i = 0; i < s->nksyms; i++)
		free(s->ksyms[i].name);
	free(s->ksyms);
	if (s->dbgd)
		debuginfod_end(s->dbgd);
	free(s);
}

static bool same_build_id(const struct sfu_module *m, const uint8_t *id, size_t len)
{
	const struct sfu_build_id *b = sfu_module__build_id(m);

	return len && b->len == len && !memcmp(b->bytes, id, len);
}

/* Open @path if it is the ELF file with this build ID (any build ID when len is 0). */
static struct sfu_module *open_matching(const char *path, const uint8_t *id, size_t len)
{
	struct sfu_module *m = sfu_module__open(path, NULL);

	if (m && len && !same_build_id(m, id, len)) {
		sfu_module__put(m);
		return NULL;
	}
	return m;
}

static void build_id_path(char *out, size_t cap, const char *dir, const uint8_t *id, size_t len)
{
	size_t n = snprintf(out, cap, "%s/.build-id/%02x/", dir, id[0]);

	for (size_t i = 1; i < len && n + 3 < cap; i++)
		n += snprintf(out + n, cap - n, "%02x", id[i]);
	snprintf(out + n, cap - n, ".debug");
}

/* Whether the ELF file at @path has a .symtab: a binary that was not stripped. */
static bool has_symtab(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool found = false;
	Elf_Scn *scn = NULL;
	Elf *elf;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (elf && !found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;

		found = gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_SYMTAB;
	}
	elf_end(elf);
	close(fd);
	return found;
}

static bool debuginfod_wanted(const struct symbolizer *s)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	return !s->opts.no_debuginfod && urls && *urls;
}

/*
 * A debug file for the build ID: debug directories, then debuginfod when
 * @remote (the binary is missing or stripped: a server is not worth a round
 * trip for a binary that names its functions itself).
 */
static struct sfu_module *find_debug(struct symbolizer *s, const uint8_t *id, size_t len,
				     bool remote)
{
	char path[4096];
	struct sfu_module *m;
	char *found = NULL;
	int fd;

	if (!len)
		return NULL;
	build_id_path(path, sizeof(path), "/usr/lib/debug", id, len);
	if ((m = open_matching(path, id, len)))
		return m;
	for (size_t i = 0; i < s->opts.num_debug_dirs; i++) {
		build_id_path(path, sizeof(path), s->opts.debug_dirs[i], id, len);
		if ((m = open_matching(path, id, len)))
			return m;
	}
	if (!remote)
		return NULL;
	if (!s->dbgd_tried) {
		s->dbgd_tried = true;
		s->dbgd = debuginfod_begin();
	}
	if (!s->dbgd)
		return NULL;
	fd = debuginfod_find_debuginfo(s->dbgd, id, len, &found);
	if (fd < 0)
		return NULL;
	close(fd);
	m = open_matching(found, id, len);
	free(found);
	return m;
}

struct sym_module *symbolizer__module(struct symbolizer *s, const uint8_t *build_id,
				      size_t build_id_len, const char *path)
{
	size_t plen = strlen(path);
	struct sym_module *m;
	const char *slash;
	uint8_t *key;
	uint64_t *v;
	int err;

	if (build_id_len > SFU_BUILD_ID_MAX)
		build_id_len = 0;
	/* a profile can name many modules: found by hash, not by a walk of a list */
	key = malloc(1 + build_id_len + plen);
	if (!key)
		return NULL;
	key[0] = build_id_len;
	memcpy(key + 1, build_id, build_id_len);
	memcpy(key + 1 + build_id_len, path, plen);
	err = hmap__entry(s->module_keys, key, 1 + build_id_len + plen, &v, NULL);
	free(key);
	if (err)
		return NULL;
	if (*v)
		return (struct sym_module *)(uintptr_t)*v;
	m = calloc(1, sizeof(*m));
	if (!m || !(m->path = strdup(path))) {
		free(m);
		return NULL;
	}
	m->dwarf_fd = -1;
	memcpy(m->build_id, build_id, build_id_len);
	m->build_id_len = build_id_len;
	slash = strrchr(m->path, '/');
	m->name = slash ? slash + 1 : m->path;
	/* the recorded path only if it still holds the same build (or none was recorded) */
	if (path[0] == '/')
		m->bin = open_matching(path, build_id, build_id_len);
	m->dbg = find_debug(s, build_id, build_id_len, debuginfod_wanted(s) &&
			    (!m->bin || !has_symtab(sfu_module__path(m->bin))));
	if (!m->bin && m->dbg) {
		m->bin = m->dbg;	/* a debug file keeps the program headers */
		sfu_module__get(m->bin);
	}
	m->next = s->modules;
	s->modules = m;
	*v = (uintptr_t)m;
	return m;
}

const char *sym_module__name(const struct sym_module *m)
{
	return m->name;
}

const char *sym_module__path(const struct sym_module *m)
{
	return m->path;
}

bool sym_module__found(const struct sym_module *m)
{
	return m->bin != NULL;
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

static const char *dwarf_func_name(struct sym_module *m, uint64_t start);

/*
 * The name shown for the symbol starting at @start, cached: demangled; a
 * versioned name of the symbol table (__libc_start_main@@GLIBC_2.34, an
 * alias glibc's .symver makes of __libc_start_main_impl) is replaced by the
 * function's DWARF name when there is DWARF, as perf's output names such a
 * frame (its DWARF-based inline lookup reports the subprogram, and that
 * line stands for the frame); without DWARF it stays.
 */
static const char *display_name(struct sym_module *m, uint64_t start, const char *raw)
{
	bool versioned = strchr(raw, '@') != NULL;
	uint64_t *slot;
	char *dm;

	if (!versioned && strncmp(raw, "_Z", 2) && strncmp(raw, "_R", 2))
		return raw;
	if ((!m->names && !(m->names = hmap__new(HMAP_U64))) ||
	    hmap__entry_u64(m->names, start, &slot))
		return raw;
	if (*slot)
		return (const char *)(uintptr_t)*slot;
	if (versioned) {
		const char *dw = dwarf_func_name(m, start);

		dm = dw && *dw ? strdup(dw) : NULL;
	} else {
		dm = symbolizer__demangle(raw);
	}
	if (!dm && !(dm = strdup(raw))) {
		hmap__delete_u64(m->names, start, NULL);
		return raw;
	}
	*slot = (uintptr_t)dm;
	return dm;
}

/* Open the module's DWARF (the debug file's, else the binary's) on first use. */
static void module_dwarf(struct sym_module *m)
{
	const char *path;

	if (m->dwarf_tried)
		return;
	m->dwarf_tried = true;
	path = sfu_module__path(m->dbg ? m->dbg : m->bin);
	m->dwarf_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (m->dwarf_fd >= 0)
		m->dwarf = dwarf_begin(m->dwarf_fd, DWARF_C_READ);
}

static void source_line(struct sym_module *m, uint64_t vaddr, struct sym_info *out)
{
	Dwarf_Die cu;
	Dwarf_Line *line;
	int lineno;

	module_dwarf(m);
	if (!m->dwarf || !dwarf_addrdie(m->dwarf, vaddr, &cu) ||
	    !(line = dwarf_getsrc_die(&cu, vaddr)))
		return;
	out->file = dwarf_linesrc(line, NULL, NULL);
	if (!dwarf_lineno(line, &lineno))
		out->line = lineno;
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

static int label_cmp(const void *a, const void *b)
{
	const struct label *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* a function start first: at one address the function names the code */
	if (!x->name || !y->name)
		return !x->name == !y->name ? 0 : !x->name ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * Add the code labels and function starts of one ELF file's symbol tables,
 * as perf's symbol loader takes labels: STT_NOTYPE, named, defined in an
 * executable section, not hidden or internal.
 */
static int read_labels(struct sym_module *m, const char *path, size_t *cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;
	Elf_Scn *scn = NULL;
	size_t shnum;
	Elf *elf;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_getshdrnum(elf, &shnum))
		goto out;
	while (!err && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Shdr shdr;
		size_t n;

		if (!gelf_getshdr(scn, &shdr) || (shdr.sh_type != SHT_SYMTAB &&
						   shdr.sh_type != SHT_DYNSYM) ||
		    !shdr.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		n = data->d_size / shdr.sh_entsize;
		for (size_t i = 1; i < n; i++) {
			int type, vis;
			const char *name;
			GElf_Shdr sec;
			GElf_Sym sym;
			Elf_Scn *in;

			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
			    sym.st_shndx >= SHN_LORESERVE || sym.st_shndx >= shnum)
				continue;
			type = GELF_ST_TYPE(sym.st_info);
			vis = GELF_ST_VISIBILITY(sym.st_other);
			if (type != STT_NOTYPE && type != STT_FUNC && type != STT_GNU_IFUNC)
				continue;
			if (!(in = elf_getscn(elf, sym.st_shndx)) || !gelf_getshdr(in, &sec) ||
			    !(sec.sh_flags & SHF_EXECINSTR) || sym.st_value < sec.sh_addr ||
			    sym.st_value >= sec.sh_addr + sec.sh_size)
				continue;
			name = elf_strptr(elf, shdr.sh_link, sym.st_name);
			if (type == STT_NOTYPE && (!name || !*name || vis == STV_HIDDEN ||
						   vis == STV_INTERNAL))
				continue;
			if (VEC_RESERVE(m->labels, *cap, m->nlabels + 1, 256)) {
				err = -ENOMEM;
				break;
			}
			m->labels[m->nlabels] = (struct label){ sym.st_value, sec.sh_addr + sec.sh_size,
								NULL };
			if (type == STT_NOTYPE && !(m->labels[m->nlabels].name = strdup(name))) {
				err = -ENOMEM;
				break;
			}
			m->nlabels++;
		}
	}
out:
	elf_end(elf);
	close(fd);
	return err;
}

/*
 * The code label holding ELF address @vaddr, for an address no function
 * symbol covers: the last label or function start at or before it, if a
 * label, up to the next one or its section's end, as perf's symbols__fixup_end
 * extends a symbol of size 0. @return the label's name, or NULL.
 */
static const char *label_lookup(struct sym_module *m, uint64_t vaddr, uint64_t *offset)
{
	size_t lo = 0, hi, cap = 0;

	if (!m->labels_read) {
		m->labels_read = true;
		if ((m->dbg && read_labels(m, sfu_module__path(m->dbg), &cap)) ||
		    (m->bin && m->bin != m->dbg && read_labels(m, sfu_module__path(m->bin), &cap)))
			return NULL;	/* what was read so far still serves */
		if (m->nlabels)
			qsort(m->labels, m->nlabels, sizeof(*m->labels), label_cmp);
	}
	hi = m->nlabels;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->labels[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	/* the symbols at that address: a function start among them bounds, never names */
	hi = lo;
	while (lo > 1 && m->labels[lo - 2].addr == m->labels[hi - 1].addr)
		lo--;
	if (!m->labels[lo - 1].name || vaddr >= m->labels[lo - 1].end ||
	    (hi < m->nlabels && vaddr >= m->labels[hi].addr))
		return NULL;
	*offset = vaddr - m->labels[lo - 1].addr;
	return m->labels[lo - 1].name;
}

/*
 * The DWARF name of the function starting at @start: the subprogram of its
 * compilation unit whose ranges hold it, through its abstract origin (not
 * dwarf_getscopes(), which gives an inlined callee's abstract scopes instead
 * of the function it was inlined into). @return NULL when there is no DWARF
 * or no such subprogram.
 */
static const char *dwarf_func_name(struct sym_module *m, uint64_t start)
{
	Dwarf_Die cu, die;
	int more;

	module_dwarf(m);
	if (!m->dwarf || !dwarf_addrdie(m->dwarf, start, &cu) || dwarf_child(&cu, &die))
		return NULL;
	for (more = 0; !more; more = dwarf_siblingof(&die, &die)) {
		Dwarf_Attribute attr;

		if (dwarf_tag(&die) == DW_TAG_subprogram && dwarf_haspc(&die, start) > 0)
			return dwarf_attr_integrate(&die, DW_AT_name, &attr) ?
			       dwarf_formstring(&attr) : NULL;
	}
	return NULL;
}

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
	    !(name = label_lookup(m, look, &off)))
		return false;
	out->offset = off + (vaddr - look);
	out->name = display_name(m, look - off, name);
	if (!s->opts.no_lines)
		source_line(m, look, out);
	return true;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void load_kallsyms(struct symbolizer *s)
{
	FILE *f = fopen(s->opts.kallsyms ? s->opts.kallsyms : "/proc/kallsyms", "re");
	char *line = NULL;
	size_t cap = 0;

	s->ksyms_loaded = true;
	if (!f)
		return;
	/*
	 * Whole lines: names reach 512 bytes (KSYM_NAME_LEN), and the rest of a
	 * line cut by a fixed buffer would read as a line of its own, naming a
	 * symbol no line gives.
	 */
	while (getline(&line, &cap, f) > 0) {
		unsigned long long addr;
		int name = 0, name_end = 0;
		char type;

		if (sscanf(line, "%llx %c %n%*s%n", &addr, &type, &name, &name_end) != 2 ||
		    !name_end || !addr)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (VEC_RESERVE(s->ksyms, s->ksyms_cap, s->nksyms + 1, 65536))
			break;
		s->ksyms[s->nksyms].addr = addr;
		s->ksyms[s->nksyms].name = strndup(line + name, name_end - name);
		if (s->ksyms[s->nksyms].name)
			s->nksyms++;
	}
	free(line);
	fclose(f);
	/* no text symbols (a file of data symbols, an empty one): no array to sort */
	if (s->nksyms)
		qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), ksym_cmp);
}

bool symbolizer__kernel(struct symbolizer *s, uint64_t addr, struct sym_info *out)
{
	size_t lo = 0, hi;

	memset(out, 0, sizeof(*out));
	out->vaddr = addr;
	if (!s->ksyms_loaded)
		load_kallsyms(s);
	hi = s->nksyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return false;
	out->name = s->ksyms[lo - 1].name;
	out->offset = addr - s->ksyms[lo - 1].addr;
	return true;
}
