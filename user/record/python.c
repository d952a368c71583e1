/* SPDX-License-Identifier: BSD-2-Clause */
/* CPython interpreters found in recorded processes: told to the sampler's frame walk, and its frames named. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "python.h"
#include "common/hmap.h"

#define CODE_CACHE_ENTRIES	4096	/* code objects remembered per process */
#define INSTR_MAX		(16u << 20)	/* bytecode offsets past this are garbage */
#define DEBUG_OFFSETS_LEN	352	/* the part of 3.13's _Py_DebugOffsets read (to code_object.co_code_adaptive) */

/*
 * The offsets of each minor version's release builds, from the DWARF of
 * pyenv's builds (`gdb -batch -ex 'print &((struct _ts *)0)->...'`); Debian's
 * have the same. interp_head is interpreters.head's offset in _PyRuntime.
 */
static const struct {
	unsigned minor;
	struct py_proc proc;
	uint32_t co_code_adaptive;
} layouts[] = {
	{ 10, { .interp_head = 0x20, .version = 310, .kind = PY_KIND_310,
		.thread_match = PY_MATCH_FSBASE, .interp_next = 0x0, .interp_threads = 0x8,
		.ts_next = 0x8, .ts_id = 0xb0, .ts_frame = 0x18, .cframe_frame = PY_OFF_NONE,
		.f_code = 0x20, .f_back = 0x18, .f_instr = 0x60, .f_entry = PY_OFF_NONE,
		.f_owner = PY_OFF_NONE, .f_window = 0x64, .code_check = 104,
		.code_check_words = 2 }, 0 },
	{ 11, { .interp_head = 0x28, .version = 311, .kind = PY_KIND_311,
		.thread_match = PY_MATCH_TID, .interp_next = 0x0, .interp_threads = 0x10,
		.ts_next = 0x8, .ts_id = 0xa0, .ts_frame = 0x38, .cframe_frame = 0x8,
		.f_code = 0x20, .f_back = 0x30, .f_instr = 0x38, .f_entry = 0x44,
		.f_owner = PY_OFF_NONE, .f_window = 0x45, .code_check = 112,
		.code_check_words = 3 }, 0xb8 },
	{ 12, { .interp_head = 0x28, .version = 312, .kind = PY_KIND_312,
		.thread_match = PY_MATCH_TID, .interp_next = 0x0, .interp_threads = 0x48,
		.ts_next = 0x8, .ts_id = 0x90, .ts_frame = 0x38, .cframe_frame = 0x0,
		.f_code = 0x0, .f_back = 0x8, .f_instr = 0x38, .f_entry = PY_OFF_NONE,
		.f_owner = 0x46, .f_window = 0x47, .code_check = 112,
		.code_check_words = 3 }, 0xc0 },
	{ 13, { .interp_head = 0x278, .version = 313, .kind = PY_KIND_312,
		.thread_match = PY_MATCH_TID, .interp_next = 0x1c60, .interp_threads = 0x1cb0,
		.ts_next = 0x8, .ts_id = 0xa0, .ts_frame = 0x48, .cframe_frame = PY_OFF_NONE,
		.f_code = 0x0, .f_back = 0x8, .f_instr = 0x38, .f_entry = PY_OFF_NONE,
		.f_owner = 0x46, .f_window = 0x47, .code_check = 112,
		.code_check_words = 3 }, 0xc8 },
};

int python_layout__table(unsigned minor, struct py_proc *out, uint32_t *co_code_adaptive)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		if (layouts[i].minor == minor) {
			*out = layouts[i].proc;
			*co_code_adaptive = layouts[i].co_code_adaptive;
			return 0;
		}
	}
	return -ENOENT;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* A frame field's end within the window the walk reads of each frame. */
static int frame_field(uint64_t off, unsigned size, uint16_t *out, uint16_t *window)
{
	if (off > PY_FRAME_WINDOW - size)	/* not off + size: a wild offset wraps */
		return -EBADMSG;
	*out = (uint16_t)off;
	if (off + size > *window)
		*window = (uint16_t)(off + size);
	return 0;
}

/* A field of a struct other than a frame: below PY_OFF_NONE, 8-byte loads there. */
static int struct_field(uint64_t off, uint16_t *out)
{
	if (off >= PY_OFF_NONE - 8)
		return -EBADMSG;
	*out = (uint16_t)off;
	return 0;
}

int python_layout__debug_offsets(const uint8_t *buf, size_t len, unsigned minor,
				 struct py_proc *out, uint32_t *co_code_adaptive)
{
	struct py_proc p = {
		.version = 300 + minor, .kind = PY_KIND_312, .thread_match = PY_MATCH_TID,
		.cframe_frame = PY_OFF_NONE, .f_entry = PY_OFF_NONE,
	};
	uint64_t version, cca;
	int err = 0;

	if (len < DEBUG_OFFSETS_LEN || memcmp(buf, PYTHON_DEBUG_COOKIE, 8))
		return -ENOENT;
	version = le64(buf + 8);
	/*
	 * Only 3.13's struct is read here: 3.14 added fields in its middle.
	 * A free-threaded build lays its objects out otherwise.
	 */
	if (minor != 13 || (version >> 24) != 3 || ((version >> 16) & 0xff) != minor ||
	    le64(buf + 16))
		return -ENOENT;
	p.interp_head = le64(buf + 40);
	if (p.interp_head >= (1u << 24))
		return -EBADMSG;
	err = err ?: struct_field(le64(buf + 64), &p.interp_next);
	err = err ?: struct_field(le64(buf + 72), &p.interp_threads);
	err = err ?: struct_field(le64(buf + 168), &p.ts_next);
	err = err ?: struct_field(le64(buf + 184), &p.ts_frame);
	err = err ?: struct_field(le64(buf + 200), &p.ts_id);
	err = err ?: frame_field(le64(buf + 232), 8, &p.f_back, &p.f_window);
	err = err ?: frame_field(le64(buf + 240), 8, &p.f_code, &p.f_window);
	err = err ?: frame_field(le64(buf + 248), 8, &p.f_instr, &p.f_window);
	err = err ?: frame_field(le64(buf + 264), 1, &p.f_owner, &p.f_window);
	if (err)
		return err;
	cca = le64(buf + 344);
	if (!cca || cca >= 4096)
		return -EBADMSG;
	/* co_filename, co_name, co_qualname: as many of them as follow each other */
	err = struct_field(le64(buf + 280), &p.code_check);
	if (err || p.code_check >= cca)
		return -EBADMSG;
	p.code_check_words = 1;
	if (le64(buf + 288) == p.code_check + 8u) {
		p.code_check_words = 2;
		if (le64(buf + 296) == p.code_check + 16u)
			p.code_check_words = 3;
	}
	*out = p;
	*co_code_adaptive = (uint32_t)cca;
	return 0;
}

uint64_t python__instr_offset(unsigned minor, uint32_t co_code_adaptive,
			      const struct sample_py_frame *f)
{
	uint64_t start;

	if (minor == 10) {
		int32_t lasti = (int32_t)(uint32_t)f->instr;

		/* -1: the frame has not started; its first instruction's line is the closest */
		return lasti < 0 ? 0 : (uint64_t)lasti * 2;
	}
	start = f->code + co_code_adaptive;
	/*
	 * 3.11's and 3.12's prev_instr is one unit before the first instruction
	 * until the frame runs (it is the last one executed)
	 */
	if (f->instr == start - 2)
		return 0;
	if (f->instr < start || f->instr - start >= INSTR_MAX || start < f->code)
		return UINT64_MAX;
	return f->instr - start;
}

/* The minor version in a name: libpython3.X.so..., python3.X. 0 when none. */
static unsigned minor_of_name(const char *path)
{
	const char *base = strrchr(path, '/'), *s;
	unsigned minor = 0;

	base = base ? base + 1 : path;
	if (!strncmp(base, "libpython3.", 11))
		s = base + 11;
	else if (!strncmp(base, "python3.", 8))
		s = base + 8;
	else
		return 0;
	for (; *s >= '0' && *s <= '9' && minor < 1000; s++)
		minor = minor * 10 + (*s - '0');
	return minor;
}

/* @len bytes at virtual address @vaddr of @elf's file, from the section that holds them. */
static int read_vaddr(Elf *elf, uint64_t vaddr, void *buf, size_t len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !(sh.sh_flags & SHF_ALLOC))
			continue;
		if (vaddr < sh.sh_addr || vaddr - sh.sh_addr >= sh.sh_size ||
		    len > sh.sh_size - (vaddr - sh.sh_addr))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size != sh.sh_size)
			return -EBADMSG;
		memcpy(buf, (const uint8_t *)d->d_buf + (vaddr - sh.sh_addr), len);
		return 0;
	}
	return -ENOENT;
}

/* _PyRuntime's and Py_Version's addresses in the dynamic symbol table (Py_Version: 3.11+). */
static int find_symbols(Elf *elf, uint64_t *runtime, uint64_t *py_version)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	*runtime = *py_version = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			return -EBADMSG;
		n = d->d_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name)
				continue;
			if (!strcmp(name, "_PyRuntime"))
				*runtime = sym.st_value;
			else if (!strcmp(name, "Py_Version"))
				*py_version = sym.st_value;
		}
		break;
	}
	return *runtime ? 0 : -ENOENT;
}

int python_build__read(const char *path, struct python_build *out)
{
	uint64_t runtime, pyver_addr;
	uint8_t dbg[DEBUG_OFFSETS_LEN];
	unsigned minor = minor_of_name(path);
	uint32_t pyver;
	size_t nph;
	Elf *elf;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64) {
		err = -ENOENT;
		goto out;
	}
	err = find_symbols(elf, &runtime, &pyver_addr);
	if (err)
		goto out;
	/* the version the binary holds beats its name (a python3 symlink, a renamed copy) */
	if (pyver_addr && !read_vaddr(elf, pyver_addr, &pyver, sizeof(pyver)) &&
	    (pyver >> 24) == 3)
		minor = (pyver >> 16) & 0xff;
	memset(out, 0, sizeof(*out));
	out->minor = minor;
	out->runtime_vaddr = runtime;
	err = -ENOENT;
	if (minor >= 13 && !read_vaddr(elf, runtime, dbg, sizeof(dbg)) &&
	    !python_layout__debug_offsets(dbg, sizeof(dbg), minor, &out->proc, &out->co_code_adaptive)) {
		out->from_debug_offsets = true;
		err = 0;
	}
	if (err && (err = python_layout__table(minor, &out->proc, &out->co_code_adaptive)))
		goto out;
	if (elf_getphdrnum(elf, &nph)) {
		err = -EBADMSG;
		goto out;
	}
	for (size_t i = 0; i < nph && out->nloads < sizeof(out->loads) / sizeof(out->loads[0]); i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		out->loads[out->nloads].vaddr = ph.p_vaddr & ~0xfffull;
		out->loads[out->nloads].offset = ph.p_offset & ~0xfffull;
		out->loads[out->nloads].filesz = ph.p_filesz + (ph.p_offset & 0xfff);
		out->nloads++;
	}
	err = out->nloads ? 0 : -EBADMSG;
out:
	elf_end(elf);
	close(fd);
	return err;
}

/* --- processes --- */

struct py_process {
	struct py_proc proc;	/* as told to the walk */
	unsigned minor;
	uint32_t co_code_adaptive;
	const struct pycode_layout *layout;
	struct pycode_cache *codes;
	int mem;		/* /proc/PID/mem */
	uint64_t frames;	/* named: a process forgotten before any is not counted */
	uint64_t exit_ns;	/* when it exited (0: running): kept for its last samples */
};

struct python {
	struct python_map_ops ops;
	struct hmap *procs;	/* pid -> struct py_process * */
	struct hmap *builds;	/* (dev, ino) of a file -> struct python_build *, NULL when none */
	struct python_stats stats;
	uint64_t swept_ns;	/* the last python__exited() sweep */
};

struct python *python__new(const struct python_map_ops *ops)
{
	struct python *py = calloc(1, sizeof(*py));

	if (!py)
		return NULL;
	if (ops)
		py->ops = *ops;
	py->procs = hmap__new(HMAP_U64);
	py->builds = hmap__new(HMAP_U128);
	if (!py->procs || !py->builds) {
		python__free(py);
		errno = ENOMEM;
		return NULL;
	}
	return py;
}

static void process_free(void *v)
{
	struct py_process *pp = v;

	if (!pp)
		return;
	pycode_cache__free(pp->codes);
	if (pp->mem >= 0)
		close(pp->mem);
	free(pp);
}

void python__free(struct python *py)
{
	if (!py)
		return;
	hmap__free_values(py->procs, process_free);
	hmap__free_values(py->builds, free);
	free(py);
}

/* @pid runs an interpreter: its state here, and the walk told. @return 1 or -errno. */
static int add_process(struct python *py, uint32_t pid, unsigned minor, uint32_t co_code_adaptive,
		       const struct py_proc *proc)
{
	struct py_process *pp = calloc(1, sizeof(*pp));
	char path[64];

	if (!pp)
		return -ENOMEM;
	pp->proc = *proc;
	pp->minor = minor;
	pp->co_code_adaptive = co_code_adaptive;
	pp->layout = pycode_layout__for(minor);
	pp->codes = pycode_cache__new(CODE_CACHE_ENTRIES);
	snprintf(path, sizeof(path), "/proc/%u/mem", pid);
	/* not there (gone, or not ours to read): the walk still runs, its frames go unnamed */
	pp->mem = open(path, O_RDONLY | O_CLOEXEC);
	if (!pp->codes || hmap__set_u64(py->procs, pid, (uintptr_t)pp)) {
		process_free(pp);
		return -ENOMEM;
	}
	py->stats.processes++;
	if (py->ops.update)
		return py->ops.update(py->ops.ctx, pid, proc) ?: 1;
	return 1;
}

/* The build of the file @path, read once per file (@st): NULL when it is no interpreter. */
static const struct python_build *build_of(struct python *py, const char *path, const struct stat *st)
{
	struct python_build *b;
	uint64_t *v;

	if (!hmap__find_u128(py->builds, st->st_dev, st->st_ino, &v))
		return (const struct python_build *)(uintptr_t)*v;
	b = malloc(sizeof(*b));
	if (b && python_build__read(path, b)) {
		free(b);
		b = NULL;
	}
	/* a file that is no interpreter is remembered as such: most files mapped are not */
	if (hmap__set_u128(py->builds, st->st_dev, st->st_ino, (uintptr_t)b)) {
		free(b);
		return NULL;
	}
	return b;
}

/*
 * Whether @path may hold @pid's interpreter: a libpython, or the program
 * itself (python3.X, an embedding program linked with it). Other files
 * (libc, every library of every process under -a) are not opened.
 */
static bool candidate(uint32_t pid, const char *path)
{
	const char *base = strrchr(path, '/');
	char link[64], exe[4096];
	ssize_t n;

	if (!strncmp(base ? base + 1 : path, "libpython3", 10))
		return true;
	snprintf(link, sizeof(link), "/proc/%u/exe", pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	return !strcmp(exe, path);
}

int python__mapped(struct python *py, uint32_t pid, const char *path, uint64_t start,
		   uint64_t pgoff)
{
	const struct python_build *b;
	struct py_proc proc;
	char full[4200];
	struct stat st;
	unsigned i;
	uint64_t *v;

	if (!hmap__find_u64(py->procs, pid, &v)) {
		if (!((struct py_process *)(uintptr_t)*v)->exit_ns)
			return 0;
		/* a new process with the pid of one that exited, kept for its last samples */
		python__forget(py, pid);
	}
	if (!path || path[0] != '/')
		return 0;
	if (py->ops.wanted && !py->ops.wanted(py->ops.ctx, pid))
		return 0;
	if (!candidate(pid, path))
		return 0;
	/* the file as the process sees it, through its root (a container's) */
	snprintf(full, sizeof(full), "/proc/%u/root%s", pid, path);
	if (stat(full, &st) && stat(path, &st))
		return 0;
	if (!S_ISREG(st.st_mode))
		return 0;
	b = build_of(py, access(full, R_OK) ? path : full, &st);
	if (!b)
		return 0;
	/* the segment the mapping is of gives the file's bias */
	for (i = 0; i < b->nloads; i++)
		if (pgoff >= b->loads[i].offset && pgoff - b->loads[i].offset < b->loads[i].filesz)
			break;
	if (i == b->nloads)
		return 0;
	proc = b->proc;
	proc.interp_head += start - pgoff - (b->loads[i].vaddr - b->loads[i].offset) + b->runtime_vaddr;
	return add_process(py, pid, b->minor, b->co_code_adaptive, &proc);
}

int python__scan(struct python *py, uint32_t pid)
{
	char path[64], line[4400], file[4200], perms[8];
	unsigned long long start, end, off;
	int found = 0, n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		file[0] = '\0';
		n = sscanf(line, "%llx-%llx %7s %llx %*s %*s %4199[^\n]", &start, &end, perms, &off, file);
		if (n < 5 || file[0] != '/')
			continue;
		/* the first mapping of a file is its offset 0: found from there */
		found = python__mapped(py, pid, file, start, off);
	}
	fclose(f);
	return found;
}

void python__forget(struct python *py, uint32_t pid)
{
	uint64_t v;

	if (hmap__delete_u64(py->procs, pid, &v))
		return;
	/* found by a scan right after an exec, then forgotten at the exec's event */
	if (!((struct py_process *)(uintptr_t)v)->frames)
		py->stats.processes--;
	process_free((struct py_process *)(uintptr_t)v);
	if (py->ops.remove)
		py->ops.remove(py->ops.ctx, pid);
}

int python__proc(struct python *py, uint32_t pid, struct py_proc *out)
{
	uint64_t *v;

	if (hmap__find_u64(py->procs, pid, &v))
		return -ENOENT;
	*out = ((const struct py_process *)(uintptr_t)*v)->proc;
	return 0;
}

static int read_mem(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct py_process *pp = ctx;
	ssize_t n;

	if (addr > INT64_MAX)
		return -EFAULT;
	n = pread(pp->mem, buf, len, (off_t)addr);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

int python__resolve(struct python *py, uint32_t pid, const struct sample_py_frame *f,
		    struct pycode_info *out)
{
	struct pycode_check check;
	struct py_process *pp;
	uint64_t *v, off;
	int err;

	if (hmap__find_u64(py->procs, pid, &v))
		return -ENOENT;
	pp = (struct py_process *)(uintptr_t)*v;
	if (!pp->layout || pp->mem < 0)
		return -ENOENT;
	off = python__instr_offset(pp->minor, pp->co_code_adaptive, f);
	/*
	 * The names held for the code object the sample saw (same hash of its
	 * name pointers), or read now: names read after the sample are of the
	 * object the sample saw only if their hash is the sampler's (a module's
	 * body freed once it has run, another function made at its address).
	 */
	check = (struct pycode_check){ pp->proc.code_check, pp->proc.code_check_words };
	err = pycode_cache__lookup_checked(pp->codes, pp->layout, read_mem, pp, f->code,
					   off == UINT64_MAX ? 0 : off, &check, f->reserved, out);
	if (err == -ESTALE) {
		py->stats.stale++;
		return err;
	}
	if (err) {
		py->stats.unresolved++;
		return err;
	}
	if (off == UINT64_MAX)
		out->line = 0;
	pp->frames++;
	py->stats.frames++;
	return 0;
}

void python__exited(struct python *py, uint32_t pid, uint64_t time_ns)
{
	struct hmap_item it;
	uint64_t *v, *gone = NULL;
	size_t pos = 0, n = 0, cap = 0;

	if (!hmap__find_u64(py->procs, pid, &v)) {
		((struct py_process *)(uintptr_t)*v)->exit_ns = time_ns ? time_ns : 1;
		/* the walk has nothing to read any more */
		if (py->ops.remove)
			py->ops.remove(py->ops.ctx, pid);
	}
	if (time_ns - py->swept_ns < PYTHON_EXIT_GRACE_NS)
		return;
	py->swept_ns = time_ns;
	while (!hmap__next(py->procs, &pos, &it)) {
		const struct py_process *pp = (const struct py_process *)(uintptr_t)it.val;

		if (!pp->exit_ns || time_ns - pp->exit_ns <= PYTHON_EXIT_GRACE_NS)
			continue;
		if (n == cap) {
			uint64_t *more = realloc(gone, (cap = cap ? 2 * cap : 16) * sizeof(*gone));

			if (!more)
				break;
			gone = more;
		}
		gone[n++] = it.key;
	}
	for (size_t i = 0; i < n; i++)
		python__forget(py, (uint32_t)gone[i]);
	free(gone);
}

void python__count_named(struct python *py)
{
	py->stats.frames++;
}

const struct python_stats *python__stats(const struct python *py)
{
	return &py->stats;
}
