/* SPDX-License-Identifier: BSD-2-Clause */
/* Which process the GDB JIT reader unwinds: GDB's live tracee, or the core file GDB has open. */
/*
 * A JIT reader is told nothing about the process: it gets a frame's
 * registers and a memory reader, no pid and no file name. Unwinding needs
 * the mappings (which module, hence which .sframe, covers a pc) and, to tell
 * the innermost frame of a thread, the threads' own registers. So the reader
 * finds the process itself:
 *
 *  - live: GDB is the tracer of its inferior, so the inferior is a
 *    /proc/PID whose status says `TracerPid:` one of our own threads (GDB
 *    ptraces from its main thread, whose tid is getpid()). The guess is
 *    verified with bytes GDB reads: the stack at the frame's sp must read
 *    the same through /proc/PID/mem (this tells two processes of one
 *    program apart), and the code at its pc must be the bytes of the file
 *    mapped there (GDB's reader shows memory without its breakpoints, as
 *    the file has it). The mappings come from /proc/PID/maps.
 *  - core: GDB keeps the core file open, so it is one of our descriptors
 *    (/proc/self/fd) holding an ELF file of type ET_CORE. The mappings come
 *    from its NT_FILE note (PT_LOAD flags say which are executable), the
 *    threads' registers from its NT_PRSTATUS notes; the stack check reads
 *    the core's PT_LOAD bytes. The file is untrusted input: libelf bounds
 *    the notes, and every count, offset and string of NT_FILE is checked
 *    against the note's size here.
 *
 * Every call checks, with a kill(pid, 0) and one 16-byte read, that the
 * process found is still the one GDB reads (GDB may have re-run the
 * program, attached elsewhere or opened another core); when not, the
 * search starts again. A pc in no mapping (a library dlopen()ed since)
 * reloads the live process's maps once per such pc.
 */
#include <ctype.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gdb_jit_internal.h"
#include "sfunwind/addrspace.h"
#include "sfunwind/module.h"

/* Bytes compared when verifying that a process is the one GDB reads. */
#define VERIFY_BYTES 16

/*
 * struct elf_prstatus, the same on both 64-bit architectures: pr_reg
 * follows 112 bytes of signal info, pids and times. x86-64 pr_reg is struct
 * user_regs_struct (27 registers, rip at 16, rsp at 19); AArch64 it is
 * struct user_pt_regs (x0-x30, sp at 31, pc at 32, pstate).
 */
#define PRSTATUS_REGS_OFFSET 112
#define X86_64_PRSTATUS_NREGS 27
#define X86_64_PRSTATUS_PC 16
#define X86_64_PRSTATUS_SP 19
#define AARCH64_PRSTATUS_NREGS 34
#define AARCH64_PRSTATUS_PC 32
#define AARCH64_PRSTATUS_SP 31

/* NT_FILE: count, page size, then count (start, end, page offset) triples, then the names. */
#define NT_FILE_HEADER 16
#define NT_FILE_ENTRY 24

enum target_kind {
	TARGET_NONE = 0,
	TARGET_LIVE,
	TARGET_CORE,
};

/* A PT_LOAD of a core file. */
struct core_segment {
	uint64_t vaddr, memsz;
	uint64_t offset, filesz;
	uint32_t flags;
};

/* Where one thread stopped. */
struct thread_stop {
	uint64_t pc, sp;
};

/* One process found: everything that goes when it stops being GDB's. */
struct process {
	enum target_kind kind;
	pid_t pid;			/* live */
	int fd;				/* live: /proc/PID/mem; core: the core file */
	struct core_segment *segs;	/* core */
	size_t num_segs;
	struct thread_stop *threads;	/* core */
	size_t num_threads;
	struct sfu_addrspace *as;
};

struct jit_target {
	enum sfu_arch arch;
	struct sfu_cache *modules;	/* outlives processes: a re-run reuses the modules */
	struct process cur;
	uint64_t reload_pc;		/* live: the last pc that made us reload the maps */
};

static void process_close(struct process *p)
{
	if (p->fd >= 0)
		close(p->fd);
	free(p->segs);
	free(p->threads);
	sfu_addrspace__free(p->as);
	*p = (struct process){ .fd = -1 };
}

struct jit_target *jit_target__new(enum sfu_arch arch)
{
	struct jit_target *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->arch = arch;
	t->cur.fd = -1;
	t->modules = sfu_cache__new();
	if (!t->modules) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

void jit_target__free(struct jit_target *t)
{
	if (!t)
		return;
	process_close(&t->cur);
	sfu_cache__free(t->modules);
	free(t);
}

static bool gdb_read(gdb_target_read *read, uint64_t addr, void *buf, size_t len)
{
	return len <= INT_MAX && read(addr, buf, (int)len) == GDB_SUCCESS;
}

static bool pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	if (off > (uint64_t)INT64_MAX)
		return false;
	do
		n = pread(fd, buf, len, (off_t)off);
	while (n < 0 && errno == EINTR);
	return n >= 0 && (size_t)n == len;
}

/* Read the process's memory as we see it: /proc/PID/mem, or the core's PT_LOAD bytes. */
static bool process_read(const struct process *p, uint64_t addr, void *buf, size_t len)
{
	if (p->kind == TARGET_LIVE)
		return pread_all(p->fd, buf, len, addr);
	for (size_t i = 0; i < p->num_segs; i++) {
		const struct core_segment *s = &p->segs[i];

		if (addr >= s->vaddr && addr - s->vaddr <= s->filesz &&
		    len <= s->filesz - (addr - s->vaddr))
			return pread_all(p->fd, buf, len, s->offset + (addr - s->vaddr));
	}
	return false;
}

/* Read a whole small /proc file into @buf (NUL-terminated). @return its length or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	ssize_t n;
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (len < size - 1) {
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			return n;
		}
		if (!n)
			break;
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	return len;
}

/*
 * Verify that @p is the process GDB reads.
 * @return 0 when it is, -ESRCH when it is not, -EFAULT when GDB itself
 * cannot read the stack at @sp (then nothing can be verified or unwound).
 */
static int verify(const struct process *p, gdb_target_read *read, uint64_t pc, uint64_t sp)
{
	unsigned char gdb_bytes[VERIFY_BYTES], our_bytes[VERIFY_BYTES];
	const struct sfu_mapping *m;
	char *path = NULL;
	size_t len;
	int fd, err = 0;

	if (!gdb_read(read, sp, gdb_bytes, sizeof(gdb_bytes)))
		return -EFAULT;
	if (!process_read(p, sp, our_bytes, sizeof(our_bytes)) ||
	    memcmp(gdb_bytes, our_bytes, sizeof(our_bytes)))
		return -ESRCH;

	/*
	 * The code at the pc, as the file mapped there has it. Skipped where
	 * there is no file to compare with (anonymous code, a deleted or
	 * unreadable file) or GDB cannot read the code (a core without it).
	 */
	m = sfu_addrspace__find(p->as, pc);
	if (!m || !m->module || !m->path || m->path[0] != '/')
		return 0;
	len = m->end - pc < VERIFY_BYTES ? m->end - pc : VERIFY_BYTES;
	if (!gdb_read(read, pc, gdb_bytes, len))
		return 0;
	if (p->kind == TARGET_LIVE) {
		if (asprintf(&path, "/proc/%d/root%s", (int)p->pid, m->path) < 0)
			return 0;
	} else if (!(path = strdup(m->path))) {
		return 0;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (pread_all(fd, our_bytes, len, m->file_offset + (pc - m->start)) &&
		    memcmp(gdb_bytes, our_bytes, len))
			err = -ESRCH;
		close(fd);
	}
	free(path);
	return err;
}

/* ---- live processes ---- */

/* @return whether a thread of ours is @pid's tracer. */
static bool traced_by_us(pid_t pid)
{
	char path[64], buf[4096];
	const char *line;
	long tracer;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return false;
	line = strstr(buf, "\nTracerPid:");
	if (!line)
		return false;
	tracer = strtol(line + strlen("\nTracerPid:"), NULL, 10);
	if (tracer <= 0)
		return false;
	if (tracer == getpid())
		return true;
	/* GDB may one day ptrace from another of its threads */
	snprintf(path, sizeof(path), "/proc/self/task/%ld", tracer);
	return access(path, F_OK) == 0;
}

static int load_maps(struct jit_target *t, pid_t pid, struct sfu_addrspace **out)
{
	struct sfu_addrspace *as = sfu_addrspace__new(t->modules, NULL);
	int err;

	if (!as)
		return -ENOMEM;
	err = sfu_addrspace__load_pid(as, pid, NULL);
	if (err) {
		sfu_addrspace__free(as);
		return err;
	}
	*out = as;
	return 0;
}

static int live_open(struct jit_target *t, pid_t pid, struct process *p)
{
	char path[64];

	*p = (struct process){ .kind = TARGET_LIVE, .pid = pid, .fd = -1 };
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	p->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (p->fd < 0)
		return -errno;
	return load_maps(t, pid, &p->as);
}

static int find_live(struct jit_target *t, gdb_target_read *read, uint64_t pc, uint64_t sp)
{
	DIR *dir = opendir("/proc");
	struct dirent *ent;
	struct process p;
	int err = -ESRCH;

	if (!dir)
		return -errno;
	while (err && (ent = readdir(dir))) {
		char *end;
		long pid = strtol(ent->d_name, &end, 10);

		if (!isdigit((unsigned char)ent->d_name[0]) || *end || pid <= 0 || pid > INT_MAX ||
		    !traced_by_us((pid_t)pid))
			continue;
		if (live_open(t, (pid_t)pid, &p) || verify(&p, read, pc, sp)) {
			process_close(&p);
			continue;
		}
		t->cur = p;
		err = 0;
	}
	closedir(dir);
	return err;
}

/*
 * The registers a stopped thread will resume with: the last two fields of
 * /proc/PID/task/TID/syscall are its user sp and pc, whether or not it
 * stopped in a system call ("running" when it runs).
 */
static int live_is_stop(const struct process *p, uint64_t pc, uint64_t sp)
{
	char path[96], buf[512];
	struct dirent *ent;
	int found = 0, read_any = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)p->pid);
	dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? -ESRCH : -errno;
	while (!found && (ent = readdir(dir))) {
		uint64_t tsp, tpc;
		char *last, *prev;
		ssize_t len;

		if (!isdigit((unsigned char)ent->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/syscall", (int)p->pid,
			 ent->d_name);
		len = read_small(path, buf, sizeof(buf));
		if (len <= 0 || !strncmp(buf, "running", 7))
			continue;
		while (len > 0 && isspace((unsigned char)buf[len - 1]))
			buf[--len] = '\0';
		last = strrchr(buf, ' ');
		if (!last)
			continue;
		*last++ = '\0';
		prev = strrchr(buf, ' ');
		prev = prev ? prev + 1 : buf;
		tpc = strtoull(last, NULL, 16);
		tsp = strtoull(prev, NULL, 16);
		read_any = 1;
		found = tpc == pc && tsp == sp;
	}
	closedir(dir);
	if (!found && !read_any)
		return -EIO;
	return found;
}

/* ---- core files ---- */

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static const struct core_segment *core_segment_at(const struct process *p, uint64_t addr)
{
	for (size_t i = 0; i < p->num_segs; i++)
		if (addr >= p->segs[i].vaddr && addr - p->segs[i].vaddr < p->segs[i].memsz)
			return &p->segs[i];
	return NULL;
}

/* The executable file mappings of an NT_FILE note. */
static int core_add_files(struct process *p, const unsigned char *desc, size_t size)
{
	const unsigned char *names, *end = desc + size;
	uint64_t count, page;

	if (size < NT_FILE_HEADER)
		return -EBADMSG;
	count = get_u64(desc);
	page = get_u64(desc + 8);
	if (count > (size - NT_FILE_HEADER) / NT_FILE_ENTRY)
		return -EBADMSG;
	names = desc + NT_FILE_HEADER + count * NT_FILE_ENTRY;
	for (uint64_t i = 0; i < count; i++) {
		const unsigned char *entry = desc + NT_FILE_HEADER + i * NT_FILE_ENTRY;
		const unsigned char *nul = memchr(names, '\0', end - names);
		uint64_t start = get_u64(entry), stop = get_u64(entry + 8);
		uint64_t pgoff = get_u64(entry + 16);
		const struct core_segment *seg;
		const char *name = (const char *)names;
		int err;

		if (!nul)
			return -EBADMSG;
		names = nul + 1;
		if (page && pgoff > UINT64_MAX / page)
			continue;
		/*
		 * A kernel core has a PT_LOAD for every mapping, whose flags say
		 * whether it is code; GDB's gcore leaves out file mappings it did
		 * not see modified, so those are taken as they come: a pc in data
		 * is still in no function of the module's tables.
		 */
		seg = core_segment_at(p, start);
		if ((seg && !(seg->flags & PF_X)) || name[0] != '/')
			continue;
		err = sfu_addrspace__add(p->as, start, stop, pgoff * page, PROT_READ | PROT_EXEC,
					 name, NULL);
		if (err == -ENOMEM)
			return err;
	}
	return 0;
}

static int core_add_thread(struct process *p, enum sfu_arch arch, const unsigned char *desc,
			   size_t size)
{
	size_t nregs = arch == SFU_ARCH_AARCH64 ? AARCH64_PRSTATUS_NREGS : X86_64_PRSTATUS_NREGS;
	size_t ipc = arch == SFU_ARCH_AARCH64 ? AARCH64_PRSTATUS_PC : X86_64_PRSTATUS_PC;
	size_t isp = arch == SFU_ARCH_AARCH64 ? AARCH64_PRSTATUS_SP : X86_64_PRSTATUS_SP;
	const unsigned char *regs = desc + PRSTATUS_REGS_OFFSET;
	struct thread_stop *bigger;

	if (size < PRSTATUS_REGS_OFFSET + nregs * 8)
		return -EBADMSG;
	bigger = realloc(p->threads, (p->num_threads + 1) * sizeof(*bigger));
	if (!bigger)
		return -ENOMEM;
	p->threads = bigger;
	p->threads[p->num_threads++] = (struct thread_stop){
		.pc = get_u64(regs + ipc * 8),
		.sp = get_u64(regs + isp * 8),
	};
	return 0;
}

static int core_notes(struct process *p, enum sfu_arch arch, Elf *elf, const GElf_Phdr *ph)
{
	Elf_Data *data = elf_getdata_rawchunk(elf, ph->p_offset, ph->p_filesz, ELF_T_NHDR);
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;
	int err;

	if (!data)
		return -EBADMSG;
	while ((next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const unsigned char *base = data->d_buf;

		off = next;
		if (desc_off > data->d_size || nh.n_descsz > data->d_size - desc_off ||
		    nh.n_namesz != sizeof("CORE") || memcmp(base + name_off, "CORE", sizeof("CORE")))
			continue;
		if (nh.n_type == NT_FILE)
			err = core_add_files(p, base + desc_off, nh.n_descsz);
		else if (nh.n_type == NT_PRSTATUS)
			err = core_add_thread(p, arch, base + desc_off, nh.n_descsz);
		else
			continue;
		if (err)
			return err;
	}
	return 0;
}

/* @fd: an open file that may be a core file; owned by @p from here. */
static int core_open(struct jit_target *t, int fd, struct process *p)
{
	unsigned machine = t->arch == SFU_ARCH_AARCH64 ? EM_AARCH64 : EM_X86_64;
	Elf64_Ehdr eh;
	size_t phnum;
	Elf *elf = NULL;
	int err;

	*p = (struct process){ .kind = TARGET_CORE, .fd = fd };
	if (!pread_all(fd, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_type != ET_CORE || eh.e_machine != machine)
		return -ENOEXEC;
	/* a core of the other byte order would not be one GDB runs this plugin for */
	if (eh.e_ident[EI_DATA] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB :
								ELFDATA2MSB))
		return -ENOEXEC;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOTSUP;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_getphdrnum(elf, &phnum)) {
		err = -EBADMSG;
		goto out;
	}
	p->segs = calloc(phnum ? phnum : 1, sizeof(*p->segs));
	p->as = sfu_addrspace__new(t->modules, NULL);
	if (!p->segs || !p->as) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph)) {
			err = -EBADMSG;
			goto out;
		}
		if (ph.p_type == PT_LOAD && ph.p_filesz <= ph.p_memsz)
			p->segs[p->num_segs++] = (struct core_segment){
				.vaddr = ph.p_vaddr, .memsz = ph.p_memsz,
				.offset = ph.p_offset, .filesz = ph.p_filesz,
				.flags = ph.p_flags,
			};
	}
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_NOTE &&
		    (err = core_notes(p, t->arch, elf, &ph)))
			goto out;
	}
	err = p->num_threads ? 0 : -EBADMSG;
out:
	elf_end(elf);
	return err;
}

static int find_core(struct jit_target *t, gdb_target_read *read, uint64_t pc, uint64_t sp)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *ent;
	struct process p;
	int err = -ESRCH;

	if (!dir)
		return -errno;
	while (err && (ent = readdir(dir))) {
		char path[64];
		struct stat st;
		int fd;

		if (!isdigit((unsigned char)ent->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%.16s", ent->d_name);
		/* a FIFO would block the open: look first, open only regular files */
		if (stat(path, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (core_open(t, fd, &p) || verify(&p, read, pc, sp)) {
			process_close(&p);
			continue;
		}
		t->cur = p;
		err = 0;
	}
	closedir(dir);
	return err;
}

/* ---- the target ---- */

/* @return 0 when the process found is still the one GDB reads, or verify()'s error. */
static int still_ours(const struct process *p, gdb_target_read *read, uint64_t sp)
{
	unsigned char gdb_bytes[VERIFY_BYTES], our_bytes[VERIFY_BYTES];

	if (p->kind == TARGET_LIVE && kill(p->pid, 0) && errno == ESRCH)
		return -ESRCH;
	if (!gdb_read(read, sp, gdb_bytes, sizeof(gdb_bytes)))
		return -EFAULT;
	if (!process_read(p, sp, our_bytes, sizeof(our_bytes)) ||
	    memcmp(gdb_bytes, our_bytes, sizeof(our_bytes)))
		return -ESRCH;
	return 0;
}

const struct sfu_addrspace *jit_target__space(struct jit_target *t, gdb_target_read *read,
					      uint64_t pc, uint64_t sp)
{
	struct process *p = &t->cur;
	struct sfu_addrspace *as;
	int err;

	if (p->kind != TARGET_NONE) {
		err = still_ours(p, read, sp);
		if (err == -EFAULT)
			return NULL;
		if (!err) {
			if (sfu_addrspace__find(p->as, pc) || p->kind != TARGET_LIVE ||
			    pc == t->reload_pc)
				return p->as;
			/* a library loaded since the maps were read */
			t->reload_pc = pc;
			if (!load_maps(t, p->pid, &as)) {
				sfu_addrspace__free(p->as);
				p->as = as;
			}
			return p->as;
		}
		process_close(p);
	}
	t->reload_pc = 0;
	/* a live process first: GDB reads a core only when it has no process */
	if (!find_live(t, read, pc, sp) || !find_core(t, read, pc, sp))
		return t->cur.as;
	return NULL;
}

int jit_target__is_stop(struct jit_target *t, uint64_t pc, uint64_t sp)
{
	const struct process *p = &t->cur;

	if (p->kind == TARGET_LIVE)
		return live_is_stop(p, pc, sp);
	if (p->kind == TARGET_CORE) {
		for (size_t i = 0; i < p->num_threads; i++)
			if (p->threads[i].pc == pc && p->threads[i].sp == sp)
				return 1;
		return 0;
	}
	return -ESRCH;
}

int jit_target__probe_core(struct jit_target *t, int fd)
{
	struct process p;
	int err = core_open(t, fd, &p);

	/* what the reader does next with a core: read its stacks, ask for its threads' stops */
	for (size_t i = 0; !err && i < p.num_threads; i++) {
		unsigned char bytes[VERIFY_BYTES];
		uint64_t pc = p.threads[i].pc;

		if (process_read(&p, p.threads[i].sp, bytes, sizeof(bytes)))
			pc ^= get_u64(bytes);
		sfu_addrspace__find(p.as, pc);
	}
	process_close(&p);
	return err;
}
