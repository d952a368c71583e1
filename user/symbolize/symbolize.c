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
#include <sys/stat.h>
#include <unistd.h>

#include "buildid/buildid.h"
#include "plt_names.h"
#include "common/hmap.h"
#include "sfunwind.h"
#include "symbolize.h"
#include "common/vec.h"

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

static void cu_funcs_free(void *p);

/* Let go of @m's DWARF and what is kept by its strings' addresses; opened again when asked. */
static void module_drop_dwarf(struct sym_module *m)
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

static void module_free(struct sym_module *m)
{
	free(m->syms);
	free(m->dsyms);
	plt_names__free(m->plt);
	module_drop_dwarf(m);
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

static bool same_build_id(const struct sfu_module *m, const uint8_t *id, size_t len)
{
	const struct sfu_build_id *b = sfu_module__build_id(m);

	return len && b->len == len && !memcmp(b->bytes, id, len);
}

/*
 * Open @path if it is the ELF file with this build ID (any build ID when
 * len is 0) and, when @size is not 0, of that size (what the recording
 * saw: a build ID is easily forged); *@other is set when it is another
 * build's.
 */
static struct sfu_module *open_sized(const char *path, const uint8_t *id, size_t len,
				     uint64_t size, bool *other)
{
	/* segments and symbols: nothing of what unwinding reads */
	struct sfu_module *m = sfu_module__open_flags(path, SFU_MODULE_OPEN_NO_UNWIND, NULL);

	if (m && ((len && !same_build_id(m, id, len)) ||
		  (size && sfu_module__file_size(m) != size))) {
		sfu_module__put(m);
		*other = true;
		return NULL;
	}
	return m;
}

static struct sfu_module *open_matching(const char *path, const uint8_t *id, size_t len,
					bool *other)
{
	return open_sized(path, id, len, 0, other);
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
 * Whether the cache's entry @path may be read: it, and every directory on
 * the way to it, can be changed by no one but this user and root (root
 * reporting must not read what a user put or links there). A refusal is
 * said once.
 */
static bool cache_entry_trusted(struct symbolizer *s, const char *path)
{
	char why[4600];
	int err = buildid_entry_trust(s->cache_dir, path, why, sizeof(why));

	if (err && err != -ENOENT && !s->cache_said) {
		s->cache_said = true;
		fprintf(stderr, "sfprof: build-ID cache %s: %s: not used\n", s->cache_dir, why);
	}
	return !err;
}

/*
 * The file with this build ID (@suffix NULL: the binary, else its debug
 * file) in the build-ID trees: --buildid-dir's (an archive's), then the
 * cache; of @size bytes when that is not 0. A tree's entry is a file, never
 * a link to one.
 */
static struct sfu_module *find_kept_sized(struct symbolizer *s, const uint8_t *id, size_t len,
					  const char *suffix, uint64_t size)
{
	char path[4400];
	struct sfu_module *m;
	struct stat st;
	bool other;	/* a tree's entry holds its build ID: never another's */

	for (size_t i = 0; i <= s->opts.num_buildid_dirs; i++) {
		bool cache = i == s->opts.num_buildid_dirs;
		const char *dir = cache ? s->cache_dir : s->opts.buildid_dirs[i];

		if (!dir || buildid_path(path, sizeof(path), dir, id, len, suffix) ||
		    lstat(path, &st) || (cache && !cache_entry_trusted(s, path)) ||
		    !S_ISREG(st.st_mode))
			continue;
		if ((m = open_sized(path, id, len, size, &other)))
			return m;
	}
	return NULL;
}

static struct sfu_module *find_kept(struct symbolizer *s, const uint8_t *id, size_t len,
				    const char *suffix)
{
	return find_kept_sized(s, id, len, suffix, 0);
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
	bool other;	/* a debug file of another build: as none */
	int fd;

	if (!len)
		return NULL;
	/* a path cut short would name another file: a directory too deep is passed over */
	if (!buildid_path(path, sizeof(path), "/usr/lib/debug", id, len, BUILDID_DEBUG_SUFFIX) &&
	    (m = open_matching(path, id, len, &other)))
		return m;
	for (size_t i = 0; i < s->opts.num_debug_dirs; i++) {
		if (!buildid_path(path, sizeof(path), s->opts.debug_dirs[i], id, len,
				  BUILDID_DEBUG_SUFFIX) &&
		    (m = open_matching(path, id, len, &other)))
			return m;
	}
	if ((m = find_kept(s, id, len, BUILDID_DEBUG_SUFFIX)))
		return m;
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
	m = open_matching(found, id, len, &other);
	free(found);
	return m;
}

struct sym_module *symbolizer__module(struct symbolizer *s, const uint8_t *build_id,
				      size_t build_id_len, const char *path)
{
	return symbolizer__module_sized(s, build_id, build_id_len, path, 0);
}

struct sym_module *symbolizer__module_sized(struct symbolizer *s, const uint8_t *build_id,
					    size_t build_id_len, const char *path,
					    uint64_t file_size)
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
	if (err) {
		free(key);
		return NULL;
	}
	if (*v) {
		free(key);
		m = (struct sym_module *)(uintptr_t)*v;
		m->used = s->round;
		return m;
	}
	m = calloc(1, sizeof(*m));
	if (!m || !(m->path = strdup(path))) {
		hmap__delete(s->module_keys, key, 1 + build_id_len + plen, NULL);
		free(key);
		free(m);
		return NULL;
	}
	m->key = key;
	m->key_len = 1 + build_id_len + plen;
	m->used = s->round;
	m->dwarf_fd = -1;
	m->sym_fd[0] = m->sym_fd[1] = -1;
	memcpy(m->build_id, build_id, build_id_len);
	m->build_id_len = build_id_len;
	slash = strrchr(m->path, '/');
	m->name = slash ? slash + 1 : m->path;
	/*
	 * The copy kept by build ID first: what the recording saw, which no one
	 * but this user and root can change since. The recorded path may hold
	 * another build now, or a forgery of this one put there by whoever can
	 * write it; it is read only when nothing was kept, and only if it still
	 * holds the same build (or none was recorded).
	 */
	if (build_id_len)
		m->bin = find_kept_sized(s, build_id, build_id_len, NULL, file_size);
	if (!m->bin && path[0] == '/')
		m->bin = open_sized(path, build_id, build_id_len, file_size, &m->replaced);
	m->dbg = find_debug(s, build_id, build_id_len, debuginfod_wanted(s) &&
			    (!m->bin || !has_symtab(sfu_module__path(m->bin))));
	if (!m->bin && m->dbg) {
		m->bin = m->dbg;	/* a debug file keeps the program headers */
		sfu_module__get(m->bin);
	}
	m->replaced &= !m->bin;
	m->next = s->modules;
	s->modules = m;
	*v = (uintptr_t)m;
	return m;
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
				module_drop_dwarf(m);
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

static const char *dwarf_func_name(struct sym_module *m, uint64_t start);
static const char *best_alias(struct sym_module *m, uint64_t start);

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
	const char *alias = best_alias(m, start), *name = raw;
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
		const char *dw = dwarf_func_name(m, start);

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

/* Open the module's DWARF (the debug file's, else the binary's) on first use. */
static void module_dwarf(struct sym_module *m)
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
static const char *cu_path(struct sym_module *m, Dwarf_Die *cu, const char *file)
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

static bool better_alias(const struct elf_sym *a, const struct elf_sym *b);

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
			int type, vis;
			const char *name;
			GElf_Shdr sec;
			GElf_Sym sym;
			Elf_Scn *in;

			if (gelf_getsym(data, (int)i, &sym) && GELF_ST_TYPE(sym.st_info) == STT_FILE) {
				file = elf_strptr(elf, shdr.sh_link, sym.st_name);
				if (file && !*file)
					file = NULL;
				continue;
			}
			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
			    sym.st_shndx >= SHN_LORESERVE || sym.st_shndx >= shnum || !sym.st_value)
				continue;
			type = GELF_ST_TYPE(sym.st_info);
			vis = GELF_ST_VISIBILITY(sym.st_other);
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
			if (type != STT_NOTYPE && type != STT_FUNC && type != STT_GNU_IFUNC)
				continue;
			if (!(in = elf_getscn(elf, sym.st_shndx)) || !gelf_getshdr(in, &sec) ||
			    !(sec.sh_flags & SHF_EXECINSTR) || sym.st_value < sec.sh_addr ||
			    sym.st_value - sec.sh_addr >= sec.sh_size)
				continue;
			name = elf_strptr(elf, shdr.sh_link, sym.st_name);
			/* ARM's mapping symbols ($x, $d) mark code and data: no names (perf) */
			if (!name || !*name ||
			    (type == STT_NOTYPE && (vis == STV_HIDDEN || vis == STV_INTERNAL ||
						    name[0] == '$')))
				continue;
			if (VEC_RESERVE(m->syms, *cap, m->nsyms + 1, 256))
				return -ENOMEM;
			m->syms[m->nsyms++] = (struct elf_sym){
				.addr = sym.st_value, .size = sym.st_size,
				.sec_end = sec.sh_addr + sec.sh_size, .name = name,
				.label = type == STT_NOTYPE, .bind = GELF_ST_BIND(sym.st_info),
				.file = GELF_ST_BIND(sym.st_info) == STB_LOCAL ? file : NULL,
				.order = (uint32_t)m->nsyms,
			};
		}
	}
	return 0;
}

/* The module's symbols, read on first use: the debug file's, else the binary's (perf's choice). */
static void module_syms(struct sym_module *m)
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
static const struct elf_sym *llvm_symbol(struct sym_module *m, uint64_t vaddr)
{
	const struct elf_sym *sym;
	size_t lo;

	module_syms(m);
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
static const char *label_lookup(struct sym_module *m, uint64_t vaddr, uint64_t *offset)
{
	size_t lo, hi;

	module_syms(m);
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

/* perf's choose_best_symbol(): whether @a is a better name than @b for their address. */
static bool better_alias(const struct elf_sym *a, const struct elf_sym *b)
{
	size_t ua = strspn(a->name, "_"), ub = strspn(b->name, "_"), la, lb;

	if (!a->size != !b->size)
		return a->size;
	if ((a->bind == STB_WEAK) != (b->bind == STB_WEAK))
		return b->bind == STB_WEAK;
	if ((a->bind == STB_GLOBAL) != (b->bind == STB_GLOBAL))
		return a->bind == STB_GLOBAL;
	if (ua != ub)
		return ua < ub;
	la = strlen(a->name);
	lb = strlen(b->name);
	if (la != lb)
		return la > lb;
	/* perf keeps the first of its tree here; a fixed order instead */
	return strcmp(a->name, b->name) < 0;
}

/*
 * The name perf's loader keeps for the function at @start when several
 * function symbols name it (glibc: __libc_start_main_impl,
 * __libc_start_main@@GLIBC_2.34, __libc_start_main@GLIBC_2.2.5...), or NULL
 * when one name does.
 */
static const char *best_alias(struct sym_module *m, uint64_t start)
{
	const struct elf_sym *best = NULL, *prev = NULL;
	size_t hi, names = 0;

	module_syms(m);
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
	module_syms(m);
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
static const char *dwarf_func_name(struct sym_module *m, uint64_t start)
{
	uint64_t *v;

	if (m->dwarf_names && !hmap__find_u64(m->dwarf_names, start, &v))
		return *(const char *)(uintptr_t)*v ? (const char *)(uintptr_t)*v : NULL;
	module_dwarf(m);
	if (m->dwarf_opens > 1 && !m->dwarf_names) {
		make_dwarf_names(m);
		if (m->dwarf_names && !hmap__find_u64(m->dwarf_names, start, &v))
			return *(const char *)(uintptr_t)*v ? (const char *)(uintptr_t)*v : NULL;
	}
	return dwarf_func_name_at(m, start);
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

/*
 * A symbol table name as shown: demangled (C++, Rust), the copy kept by the
 * address of the name, which lives as long as the module's ELF handles.
 * @return it, or @name itself when it is not mangled or memory runs out.
 */
static const char *sym_demangled(struct sym_module *m, const char *name)
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
	    !(name = label_lookup(m, look, &off))) {
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
		source_line(m, look, out);
	return true;
}

bool symbolizer__lookup_data(struct symbolizer *s, struct sym_module *m, uint64_t vaddr,
			     struct sym_info *out)
{
	const struct elf_sym *sym;

	(void)s;
	memset(out, 0, sizeof(*out));
	out->vaddr = vaddr;
	if (!m || !m->bin || !(sym = llvm_symbol(m, vaddr)))
		return false;
	out->offset = vaddr - sym->addr;
	out->name = sym_demangled(m, sym->name);
	return true;
}

/*
 * The name of a subprogram or inlined subroutine DIE as llvm-symbolizer
 * shows it: the linkage name (through the abstract origin and the
 * declaration), demangled, else DW_AT_name. Demangled copies are kept by
 * the address of the DWARF string, which lives as long as the module's
 * Dwarf.
 */
static const char *die_name(struct sym_module *m, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *raw;
	uint64_t *slot;
	char *dm;

	if ((!dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) &&
	     !dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr) &&
	     !dwarf_attr_integrate(die, DW_AT_name, &attr)) ||
	    !(raw = dwarf_formstring(&attr)) || !*raw)
		return NULL;
	if (strncmp(raw, "_Z", 2) && strncmp(raw, "_R", 2))
		return raw;
	if ((!m->die_names && !(m->die_names = hmap__new(HMAP_U64))) ||
	    hmap__entry_u64(m->die_names, (uintptr_t)raw, &slot))
		return raw;
	if (!*slot) {
		if (!(dm = symbolizer__demangle(raw)) && !(dm = strdup(raw))) {
			hmap__delete_u64(m->die_names, (uintptr_t)raw, NULL);
			return raw;
		}
		*slot = (uintptr_t)dm;
	}
	return (const char *)(uintptr_t)*slot;
}

/* Deepest nesting of inlined calls followed: DWARF from a hostile file can nest without end. */
#define MAX_INLINE_DEPTH 256

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
static size_t cu_inline_chain(struct sym_module *m, Dwarf_Die *cu, uint64_t pc, Dwarf_Die *chain)
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

/*
 * The source file the symbol table gives the local function starting at
 * @start (the STT_FILE before it), or NULL: what llvm-symbolizer names a
 * frame's file by when there is no DWARF.
 */
static const char *symtab_file(struct sym_module *m, uint64_t start)
{
	size_t i;

	module_syms(m);
	for (i = syms_after(m, start); i > 0 && m->syms[i - 1].addr == start; i--)
		if (m->syms[i - 1].file && !m->syms[i - 1].label)
			return m->syms[i - 1].file;
	return NULL;
}

/*
 * The name llvm-symbolizer gives the function holding @vaddr from the
 * symbol table (it takes that over the DWARF name of the outermost frame):
 * llvm_symbol()'s, of those at its address the largest, then the last in
 * the table (glibc's debug file names __libc_start_main_impl's address
 * __libc_start_main@GLIBC_2.2.5, __fstatat's fstatat); an object's name in
 * data (gvar). Demangled; *@file (if given) its STT_FILE.
 * @return it, or NULL.
 */
static const char *symtab_function(struct sym_module *m, uint64_t vaddr, const char **file)
{
	const struct elf_sym *best = llvm_symbol(m, vaddr);

	if (!best)
		return NULL;
	if (file)
		*file = best->file;
	return sym_demangled(m, best->name);
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
	module_dwarf(m);
	bool have_cu = m->dwarf && dwarf_addrdie(m->dwarf, vaddr, &cu);

	if (have_cu && (chain = malloc((MAX_INLINE_DEPTH + 1) * sizeof(*chain))))
		n = cu_inline_chain(m, &cu, vaddr, chain);
	if (!n && (n = go_inlined(m, vaddr, frames, cap))) {
		free(chain);
		return n;
	}
	if (!n) {
		const char *file = NULL, *name = symtab_function(m, vaddr, &file);
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
			f.file = cu_path(m, &cu, dwarf_linesrc(line, NULL, NULL));
			if (!dwarf_lineno(line, &v) && v > 0)
				f.line = v;
			if (!dwarf_linecol(line, &v) && v > 0)
				f.column = v;
		} else {
			f.file = name ? file : symtab_file(m, vaddr - info.offset);
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
		f->name = die_name(m, die);
		if (!i) {
			Dwarf_Line *line = dwarf_getsrc_die(&cu, vaddr);
			int v;

			if (line) {
				f->file = cu_path(m, &cu, dwarf_linesrc(line, NULL, NULL));
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
				f->file = cu_path(m, &cu, dwarf_filesrc(files, w, NULL, NULL));
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
		const char *name = symtab_function(m, vaddr, NULL);

		if (name)
			frames[n - 1].name = name;
		else if (!frames[n - 1].name && lookup_vaddr(s, m, vaddr, false, &info))
			frames[n - 1].name = info.name;
	}
	free(chain);
	return n;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The farthest a kernel address is named from the symbol before it (kallsyms has no sizes). */
#define KSYM_REACH (1u << 20)

static void load_kallsyms(struct symbolizer *s)
{
	/*
	 * What kallsyms can be, the file being outside input (an archive's, a
	 * --kallsyms): a line is an address, a type, a name of at most
	 * KSYM_NAME_LEN (512) bytes and a module's, so one longer is no symbol's
	 * and is skipped without being held; a file is some ten times a large
	 * kernel's (~6 MB, ~150k lines) at most, so a larger one is no
	 * kallsyms and names nothing.
	 */
	enum { KSYM_LINE_MAX = 1024 };
	const size_t max_bytes = 64u << 20, max_syms = 1u << 21;
	FILE *f = fopen(s->opts.kallsyms ? s->opts.kallsyms : "/proc/kallsyms", "re");
	char line[KSYM_LINE_MAX + 1];
	size_t total = 0;
	bool too_big = false;

	s->ksyms_loaded = true;
	if (!f)
		return;
	for (;;) {
		unsigned long long addr;
		int name = 0, name_end = 0, c;
		size_t len = 0;
		char type;

		/* the rest of a cut line is never read as a line of its own */
		while ((c = getc_unlocked(f)) != EOF) {
			if (++total > max_bytes || c == '\n')
				break;
			if (len < KSYM_LINE_MAX)
				line[len] = c;
			len++;
		}
		if (total > max_bytes) {
			too_big = true;
			break;
		}
		if (c == EOF && !len)
			break;
		if (s->nksyms >= max_syms) {
			too_big = true;
			break;
		}
		if (len > KSYM_LINE_MAX)
			continue;
		line[len] = '\0';
		if (sscanf(line, "%llx %c %n%*s%n", &addr, &type, &name, &name_end) != 2 ||
		    !name_end || !addr)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		/*
		 * A BPF program's code is named only while it is loaded: kept
		 * as a bound that names nothing, so that no address in it is
		 * named after the symbol below it. A profile names the
		 * programs its recording saw (session.c).
		 */
		if (strstr(line + name_end, "[bpf]")) {
			if (VEC_RESERVE(s->ksyms, s->ksyms_cap, s->nksyms + 1, 65536))
				break;
			s->ksyms[s->nksyms].addr = addr;
			s->ksyms[s->nksyms++].name = KSYM_NONE;
			continue;
		}
		if (s->knames_len + (name_end - name) + 1 > UINT32_MAX ||
		    VEC_RESERVE(s->ksyms, s->ksyms_cap, s->nksyms + 1, 65536) ||
		    VEC_RESERVE(s->knames, s->knames_cap, s->knames_len + (name_end - name) + 1,
				1 << 20))
			break;
		s->ksyms[s->nksyms].addr = addr;
		s->ksyms[s->nksyms++].name = s->knames_len;
		memcpy(s->knames + s->knames_len, line + name, name_end - name);
		s->knames_len += name_end - name;
		s->knames[s->knames_len++] = '\0';
	}
	fclose(f);
	if (too_big) {
		free(s->ksyms);
		free(s->knames);
		s->ksyms = NULL;
		s->knames = NULL;
		s->nksyms = s->ksyms_cap = s->knames_len = s->knames_cap = 0;
	}
	/* no text symbols (a file of data symbols, an empty one): no array to sort */
	if (s->nksyms)
		qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), ksym_cmp);
	/* held as long as the symbolizer (an agent's months): no room to grow into */
	if (s->nksyms) {
		struct ksym *k = realloc(s->ksyms, s->nksyms * sizeof(*s->ksyms));
		char *n = realloc(s->knames, s->knames_len);

		if (k)
			s->ksyms = k;
		if (n)
			s->knames = n;
	}
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
	/*
	 * kallsyms gives no sizes: past the last symbol below it by more than
	 * any function's length, an address is in no symbol kallsyms lists (a
	 * BPF program's JIT image, gone since), not _einittext+0x3c82e666
	 */
	if (!lo || addr - s->ksyms[lo - 1].addr >= KSYM_REACH || s->ksyms[lo - 1].name == KSYM_NONE)
		return false;
	out->name = s->knames + s->ksyms[lo - 1].name;
	out->offset = addr - s->ksyms[lo - 1].addr;
	return true;
}
