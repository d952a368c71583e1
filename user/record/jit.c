/* SPDX-License-Identifier: BSD-2-Clause */
/* JIT code of the recorded processes: their perf maps and jitdumps read while recording, their code given rows. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "jit.h"
#include "jit/jitdump.h"
#include "jit/perfmap.h"
#include "util/mapfile.h"
#include "proctab.h"
#include "sfunwind/code.h"
#include "common/hmap.h"
#include "common/vec.h"

/* How often a process's map and dump are read when no sample asks for code they may hold. */
#define POLL_IDLE_NS (100ull * 1000000)
/* ... and at most how often when samples do (code the unwinder met that nothing named yet). */
#define POLL_NEED_NS (1ull * 1000000)
/* How often a missing perf map is looked for again. */
#define MAP_RETRY_NS (1000ull * 1000000)
/* Bytes read from a map or dump in one poll while recording (all of it at exit and at the end). */
#define POLL_BYTES (4u << 20)
/* The longest code whose instructions are read for rows. */
#define CODE_READ_MAX (16u << 10)
/* The most unwinding information kept for the code load it precedes. */
#define EH_MAX (1u << 20)
/* Root directories held open, to read maps written at exit: past it, such maps are missed. */
#define ROOT_FDS_MAX 512
/* Code of one jitdump kept to be written again into the next window. */
#define CODE_MAX (1u << 20)
/* Bytes of source lines one code load carries (the writer's bound on a record's lines). */
#define LINES_BYTES_MAX (192u << 10)
/* The largest code kept as a template, and templates kept per process. */
#define TMPL_CODE_MAX 512
#define TMPL_MAX 16
/* Pcs of unknown code remembered as matched (or not) against the templates. */
#define PCS_TRIED_MAX 65536
/* A perf map read past this holds no more lines (a hostile one is bounded far above it). */
#define MAP_MEMORY_MAX (32u << 20)
/* Exited processes are forgotten this long after their exit (their last samples come later). */
#define EXITED_KEEP_NS (10ull * 1000000000)

/* A jitdump's code in place, kept to write again into the next file (agent windows). */
struct code {
	uint64_t start, end, time, index;
	uint32_t flags;
	char *name;
	uint8_t *lines;
	size_t lines_len;
};

/*
 * Code given rows, kept as a template: JIT runtimes stamp out copies of the
 * same stub (CPython's trampolines), and a copy whose code load is not read
 * yet (the runtime buffers its jitdump) or that no map names gets the same
 * rows where its bytes are the template's.
 */
struct tmpl {
	uint8_t *code;
	size_t len;
	uint8_t *eh;		/* its unwinding info (jitdump); NULL: rows from its instructions */
	size_t eh_size, hdr_size;
};

/* What is known of one process's JIT code. */
struct jproc {
	uint32_t pid, ns_pid, uid, euid;
	char comm[SAMPLE_COMM_LEN + 1];
	int root_fd;			/* /proc/PID/root, O_PATH, held while it lives; -1 */
	bool owned;			/* sampled here: this thread reads its files */
	bool exited;
	uint64_t exit_time;
	uint64_t last_poll;
	/* the perf map */
	struct perfmap *map;
	int map_fd;
	uint64_t map_off, map_retry;
	size_t map_written;		/* entries written to the file */
	bool map_given_up;		/* refused (owner, link), or past its memory: said once, not read */
	bool map_told;			/* what its bad lines were, said once */
	bool dump_told;			/* a dump that ends inside a record, said once */
	char map_path[48];		/* "/tmp/perf-NSPID.map" as the process sees it */
	/* the jitdump */
	char *dump_name;		/* as mapped */
	uint64_t dump_start, dump_end;
	struct jitdump_file *dump;
	bool dump_given_up;
	uint8_t *eh;			/* UNWINDING_INFO waiting for its code load */
	size_t eh_size, eh_hdr_size;
	uint64_t debug_addr;		/* DEBUG_INFO waiting for its code load */
	uint8_t *debug;
	size_t debug_len;
	struct code *code;
	size_t ncode, code_cap, code_written;
	bool code_full;
	/*
	 * Code start -> its rows' module (a reference), or 1 when its rows
	 * could not be made: the runtime's mprotect() of a page of code is a
	 * new anonymous mapping that replaces them, and they are put back.
	 */
	struct hmap *tried;
	size_t added;			/* tables added while a sample is handled */
	/* code given rows, whose copies elsewhere get the same rows (struct tmpl) */
	struct tmpl tmpls[TMPL_MAX];
	unsigned ntmpls;
	struct hmap *pcs_tried;		/* pc of unknown code -> its copy's start + 2, or 1: none */
	size_t npcs_tried;
	struct sfu_addrspace *as;	/* the process's, while a sample is handled */
	uint64_t now;			/* the time of the sample being handled */
};

struct jit_recorder {
	enum sfu_arch arch;
	struct jit_ops ops;
	struct hmap *procs;		/* pid -> struct jproc * */
	unsigned root_fds;
	uint64_t last_sweep;
	struct jit_stats stats;
};

struct jit_recorder *jit_recorder__new(enum sfu_arch arch, const struct jit_ops *ops)
{
	struct jit_recorder *jr = calloc(1, sizeof(*jr));

	if (!jr)
		return NULL;
	jr->arch = arch;
	jr->ops = *ops;
	jr->procs = hmap__new(HMAP_U64);
	if (!jr->procs) {
		free(jr);
		errno = ENOMEM;
		return NULL;
	}
	return jr;
}

/* Code given rows kept as a template, unless it is one already or too large. */
static void keep_template(struct jproc *jp, const uint8_t *code, size_t len, const uint8_t *eh,
			  size_t eh_size, size_t hdr_size)
{
	struct tmpl *t = &jp->tmpls[jp->ntmpls];

	if (!len || len > TMPL_CODE_MAX || jp->ntmpls == TMPL_MAX)
		return;
	for (unsigned i = 0; i < jp->ntmpls; i++)
		if (jp->tmpls[i].len == len && !memcmp(jp->tmpls[i].code, code, len))
			return;
	*t = (struct tmpl){ malloc(len), len, eh ? malloc(eh_size) : NULL, eh_size, hdr_size };
	if (!t->code || (eh && !t->eh)) {
		free(t->code);
		free(t->eh);
		return;
	}
	memcpy(t->code, code, len);
	if (eh)
		memcpy(t->eh, eh, eh_size);
	jp->ntmpls++;
}

/* The code at @start has rows in @m (its reference kept), or none could be made (NULL). */
static int set_tried(struct jproc *jp, uint64_t start, struct sfu_module *m)
{
	uint64_t *v;

	if (hmap__entry_u64(jp->tried, start, &v))
		return -ENOMEM;
	if (*v > 1)
		sfu_module__put((struct sfu_module *)(uintptr_t)*v);
	*v = m ? (uintptr_t)m : 1;
	return 0;
}

static void drop_tried(struct hmap *tried)
{
	struct hmap_item it;
	size_t pos = 0;

	while (!hmap__next(tried, &pos, &it))
		if (it.val > 1)
			sfu_module__put((struct sfu_module *)(uintptr_t)it.val);
	hmap__free(tried);
}

static void close_files(struct jit_recorder *jr, struct jproc *jp)
{
	if (jp->root_fd >= 0) {
		close(jp->root_fd);
		jr->root_fds--;
		jp->root_fd = -1;
	}
	if (jp->map_fd >= 0)
		close(jp->map_fd);
	jp->map_fd = -1;
	perfmap__free(jp->map);
	jp->map = NULL;
	jitdump_file__free(jp->dump);
	jp->dump = NULL;
	free(jp->eh);
	jp->eh = NULL;
	free(jp->debug);
	jp->debug = NULL;
	for (size_t i = 0; i < jp->ncode; i++) {
		free(jp->code[i].name);
		free(jp->code[i].lines);
	}
	free(jp->code);
	jp->code = NULL;
	jp->ncode = jp->code_cap = 0;
}

static void jproc_free(struct jit_recorder *jr, struct jproc *jp)
{
	if (!jp)
		return;
	close_files(jr, jp);
	free(jp->dump_name);
	drop_tried(jp->tried);
	hmap__free(jp->pcs_tried);
	for (unsigned i = 0; i < jp->ntmpls; i++) {
		free(jp->tmpls[i].code);
		free(jp->tmpls[i].eh);
	}
	free(jp);
}

void jit_recorder__free(struct jit_recorder *jr)
{
	struct hmap_item it;
	size_t pos = 0;

	if (!jr)
		return;
	while (!hmap__next(jr->procs, &pos, &it))
		jproc_free(jr, (struct jproc *)(uintptr_t)it.val);
	hmap__free(jr->procs);
	free(jr);
}

void jit_recorder__count_reunwound(struct jit_recorder *jr)
{
	jr->stats.reunwound++;
}

const struct jit_stats *jit_recorder__stats(const struct jit_recorder *jr)
{
	return &jr->stats;
}

static struct jproc *get(struct jit_recorder *jr, uint32_t pid)
{
	uint64_t *v;

	return hmap__find_u64(jr->procs, pid, &v) ? NULL : (struct jproc *)(uintptr_t)*v;
}

static struct jproc *get_or_new(struct jit_recorder *jr, uint32_t pid)
{
	struct jproc *jp = get(jr, pid);

	if (jp)
		return jp;
	jp = calloc(1, sizeof(*jp));
	if (!jp)
		return NULL;
	jp->pid = pid;
	jp->root_fd = jp->map_fd = -1;
	if (!(jp->tried = hmap__new(HMAP_U64)) || !(jp->pcs_tried = hmap__new(HMAP_U64)) ||
	    hmap__set_u64(jr->procs, pid, (uintptr_t)jp)) {
		drop_tried(jp->tried);
		hmap__free(jp->pcs_tried);
		free(jp);
		return NULL;
	}
	return jp;
}

static void forget(struct jit_recorder *jr, struct jproc *jp)
{
	hmap__delete_u64(jr->procs, jp->pid, NULL);
	jproc_free(jr, jp);
}

static void warn(struct jit_recorder *jr, const struct jproc *jp, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void warn(struct jit_recorder *jr, const struct jproc *jp, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	if (!jr->ops.warn)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	jr->ops.warn(jr->ops.ctx, jp->pid, jp->comm, why);
}

static void record(struct jit_recorder *jr, const struct profile_jit *j)
{
	if (jr->ops.record && !jr->ops.record(jr->ops.ctx, j))
		jr->stats.records++;
}

/* The file name a jitdump is mapped as: ".../jit-NUMBER.dump". */
static bool is_jitdump(const char *name)
{
	const char *base = strrchr(name, '/');
	size_t len;

	base = base ? base + 1 : name;
	len = strlen(base);
	if (strncmp(base, "jit-", 4) || len < 10 || strcmp(base + len - 5, ".dump"))
		return false;
	for (const char *p = base + 4; p < base + len - 5; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

void jit_recorder__mmap(struct jit_recorder *jr, uint32_t pid, uint64_t start, uint64_t end,
			const char *name)
{
	struct jproc *jp;
	char *copy;

	if (!is_jitdump(name))
		return;
	/* a process with the pid of one that exited: what was known is of the other */
	if ((jp = get(jr, pid)) && jp->exited)
		forget(jr, jp);
	jp = get_or_new(jr, pid);
	if (!jp || jp->dump || !(copy = strdup(name)))
		return;
	/* the same pid again: a new process (exec or reuse) maps its own */
	free(jp->dump_name);
	jp->dump_name = copy;
	jp->dump_start = start;
	jp->dump_end = end;
	jp->dump_given_up = false;
}

/* --- reading what the runtime wrote --- */

/* What the process is: its uids and name, for the checks on the files it wrote. */
static void learn(struct jproc *jp, const struct proctab_proc *pr)
{
	char path[64], line[256];
	FILE *f;

	jp->ns_pid = pr->ns_pid ? pr->ns_pid : pr->pid;
	snprintf(jp->comm, sizeof(jp->comm), "%s", pr->comm);
	snprintf(jp->map_path, sizeof(jp->map_path), "/tmp/perf-%u.map", jp->ns_pid);
	snprintf(path, sizeof(path), "/proc/%u/status", pr->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %u %u", &jp->uid, &jp->euid) == 2)
			break;
	fclose(f);
}

/* Hold the process's root directory, to find its perf map after it exits. */
static void hold_root(struct jit_recorder *jr, struct jproc *jp)
{
	char path[48];

	if (jp->root_fd >= 0 || jp->exited || jr->root_fds >= ROOT_FDS_MAX)
		return;
	snprintf(path, sizeof(path), "/proc/%u/root", jp->pid);
	jp->root_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (jp->root_fd >= 0)
		jr->root_fds++;
}

static void write_map_entries(struct jit_recorder *jr, struct jproc *jp)
{
	size_t n = perfmap__count(jp->map);

	for (; jp->map_written < n; jp->map_written++) {
		const struct perfmap_entry *e = perfmap__entry(jp->map, jp->map_written);
		struct profile_jit j = {
			.time_ns = jp->now, .pid = jp->pid, .start = e->start,
			.end = e->start + e->size, .flags = PROFILE_JIT_F_MAP,
			.name = e->name, .source = jp->map_path,
		};

		record(jr, &j);
	}
}

/* Open the perf map the process sees now. @return an fd, -ENOENT (none yet), or -1: refused, said. */
static int open_map(struct jit_recorder *jr, struct jproc *jp)
{
	char why[300] = "";
	int fd;

	if (jp->root_fd >= 0)
		fd = perfmap_openat(jp->root_fd, jp->ns_pid, jp->uid, jp->euid, why, sizeof(why));
	else if (!jp->exited)
		fd = perfmap_open(jp->pid, jp->ns_pid, why, sizeof(why));
	else
		return -ENOENT;
	if (fd == -ENOENT || fd == -ESRCH)
		return -ENOENT;
	if (fd < 0) {
		jp->map_given_up = true;
		warn(jr, jp, "%s: %s", jp->map_path, why[0] ? why : strerror(-fd));
		return -1;
	}
	return fd;
}

/* Whether @fd is still the file the process names its map (not one renamed over it). */
static bool same_file(int fd, int other)
{
	struct stat a, b;

	return !fstat(fd, &a) && !fstat(other, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Start over with the map in @fd (-1: none yet): written again from its start, or replaced. */
static void restart_map(struct jproc *jp, int fd)
{
	if (jp->map_fd >= 0 && jp->map_fd != fd)
		close(jp->map_fd);
	jp->map_fd = fd;
	perfmap__free(jp->map);
	jp->map = NULL;
	jp->map_off = 0;
	/* its lines are new code: written after the old ones, which they win over */
	jp->map_written = 0;
}

/* What the map held that could not be used, said once (at the process's exit or the end). */
static void tell_map(struct jit_recorder *jr, struct jproc *jp)
{
	const struct perfmap_stats *st = perfmap__stats(jp->map);

	if (jp->map_told || (!st->bad_lines && !st->names_cut && !st->dropped))
		return;
	jp->map_told = true;
	warn(jr, jp, "%s: %" PRIu64 " lines not of the form START SIZE NAME (%s), %" PRIu64
	     " names cut to %u bytes, %" PRIu64 " lines past its limits: not read",
	     jp->map_path, st->bad_lines, st->first_error[0] ? st->first_error : "none",
	     st->names_cut, PERFMAP_NAME_MAX, st->dropped);
}

/*
 * Open the perf map when it is there (looked for again every second while it
 * is not, and checked every second for a file renamed over it), read what
 * was added.
 */
static void poll_map(struct jit_recorder *jr, struct jproc *jp, bool to_end)
{
	ssize_t got = 0;
	int fd;

	if (jp->map_given_up)
		return;
	if (to_end || jp->now >= jp->map_retry) {
		jp->map_retry = jp->now + MAP_RETRY_NS;
		fd = open_map(jr, jp);
		if (fd == -1)
			return;
		if (fd >= 0 && jp->map_fd >= 0 && same_file(fd, jp->map_fd)) {
			close(fd);
		} else if (fd >= 0) {
			restart_map(jp, fd);
			jr->stats.maps++;
		}
	}
	if (jp->map_fd < 0)
		return;
	/* a runtime that writes its map again and again is read at most this often per poll */
	for (int restarts = 0; restarts < 4; restarts++) {
		if (!jp->map && !(jp->map = perfmap__new()))
			return;
		do
			got = perfmap__read_more(jp->map, jp->map_fd, &jp->map_off, POLL_BYTES);
		while (to_end && got > 0);
		if (got != -ESTALE)
			break;
		/* written again from its start: what it said before was written already */
		write_map_entries(jr, jp);
		restart_map(jp, jp->map_fd);
	}
	if (!jp->map)
		return;
	/* a last line without its newline is whole only once its writer is gone */
	if (to_end && jp->exited)
		perfmap__finish(jp->map);
	if (got < 0 && got != -ENOMEM && got != -ESTALE) {
		warn(jr, jp, "%s: %s: reading stopped", jp->map_path, strerror((int)-got));
		jp->map_given_up = true;
	}
	write_map_entries(jr, jp);
	if (perfmap__memory(jp->map) > MAP_MEMORY_MAX && !jp->map_given_up) {
		warn(jr, jp, "%s: %zu lines take more than %u MiB: the lines after them are not read",
		     jp->map_path, perfmap__count(jp->map), MAP_MEMORY_MAX >> 20);
		jp->map_given_up = true;
	}
	if (to_end)
		tell_map(jr, jp);
}

/* The lines of a DEBUG_INFO record in the profile's encoding (struct profile_jit). */
static void keep_debug(struct jproc *jp, const struct jitdump_header *h,
		       const struct jitdump_record *r)
{
	struct jitdump_line ln;
	size_t off = 0, len = 0, cap = 0;
	const char *prev = NULL;
	size_t prev_len = 0;
	uint8_t *buf = NULL;
	unsigned n = 0;

	free(jp->debug);
	jp->debug = NULL;
	jp->debug_len = 0;
	jp->debug_addr = r->debug.code_addr;
	while (n++ < PROFILE_JIT_MAX_LINES && jitdump_debug__next(h, r, &off, &ln) == 1) {
		/* "\xff" is "the file of the entry before", as perf reads it */
		bool same = (prev && ln.file_len == prev_len && !memcmp(ln.file, prev, prev_len)) ||
			    (ln.file_len == 1 && (uint8_t)ln.file[0] == 0xff);
		size_t flen = same ? 0 : ln.file_len;
		struct profile_jit_line out = { ln.addr - r->debug.code_addr, (uint64_t)(uint32_t)ln.line,
						flen ? ln.file : NULL, flen };

		/* out of order or before the code: the table is read in address order */
		if (ln.addr < r->debug.code_addr || ln.line <= 0)
			continue;
		if (VEC_RESERVE(buf, cap, len + PROFILE_JIT_LINE_FIXED + flen, 256) ||
		    len + PROFILE_JIT_LINE_FIXED + flen > LINES_BYTES_MAX)
			break;
		len += profile_jit_line__put(buf + len, &out);
		if (flen) {
			prev = ln.file;
			prev_len = ln.file_len;
		}
	}
	jp->debug = buf;
	jp->debug_len = len;
}

/*
 * The DEBUG_INFO kept for the code load of @name, @code_size bytes, checked:
 * V8 writes each address 0x40 past the code's (the offset perf inject once
 * gave .text), taken off for its code ("JS:" names); a line outside the code
 * means the record cannot be trusted (Node 20 writes some script names from
 * freed memory, and the entries after them are garbage): no lines then.
 * @return whether jp->debug holds lines to use.
 */
static bool check_lines(struct jproc *jp, const char *name, uint64_t code_size)
{
	const uint8_t *p = jp->debug, *end = jp->debug + jp->debug_len;
	uint64_t shift = strncmp(name, "JS:", 3) ? 0 : 0x40;
	uint8_t *out = malloc(jp->debug_len + 1);
	struct profile_jit_line ln;
	size_t len = 0;
	int got;

	if (!out)
		return false;
	while ((got = profile_jit_line__next(&p, end, &ln)) == 1) {
		if (ln.offset < shift || ln.offset - shift >= code_size ||
		    (ln.file && memchr(ln.file, '\0', ln.file_len)))
			break;
		ln.offset -= shift;
		len += profile_jit_line__put(out + len, &ln);
	}
	if (got) {
		free(out);
		return false;
	}
	free(jp->debug);
	jp->debug = out;
	jp->debug_len = len;
	return true;
}

static uint16_t elf_machine(enum sfu_arch arch)
{
	return arch == SFU_ARCH_AARCH64 ? EM_AARCH64 : EM_X86_64;
}

/* Code at [@start, @start + @len) unwound by @table from now on (taken, even on failure). */
static bool add_table(struct jit_recorder *jr, struct jproc *jp, uint64_t start, uint64_t len,
		      struct sfu_sframe *table)
{
	struct sfu_segment seg = { .vaddr = start, .memsz = len, .offset = 0, .filesz = len,
				   .flags = PF_R | PF_X };
	struct sfu_module *m;
	int err;

	if (!jp->as) {
		sfu_sframe__free(table);
		return false;
	}
	m = sfu_module__new(JIT_MODULE_NAME, NULL, elf_machine(jr->arch), &seg, 1, table);
	if (!m)
		return false;
	err = sfu_addrspace__add(jp->as, start, start + len, 0, PROT_READ | PROT_EXEC, NULL, m);
	if (err || set_tried(jp, start, m)) {
		sfu_module__put(m);
		return false;
	}
	jp->added++;
	return true;
}

/*
 * The rows of a jitdump's unwinding information @eh (.eh_frame, then its
 * @hdr_size bytes of .eh_frame_hdr) for code at @code_addr, where the
 * runtime put them: right after the code.
 */
static struct sfu_sframe *eh_rows(enum sfu_arch arch, const uint8_t *eh, size_t eh_size,
				  size_t hdr_size, uint64_t code_addr, uint64_t code_size)
{
	size_t eh_len = eh_size - hdr_size;
	struct sfu_eh_frame in = {
		.data = eh, .size = eh_len,
		.addr = jitdump_eh_frame_addr(code_addr, code_size),
		.hdr = hdr_size ? eh + eh_len : NULL, .hdr_size = hdr_size,
		.hdr_addr = jitdump_eh_frame_hdr_addr(code_addr, code_size, eh_len),
		.machine = elf_machine(arch),
	};

	if (!eh_len || !code_size)
		return NULL;
	return sfu_sframe__from_eh_frame(&in, NULL, NULL);
}

/* A code load's unwinding information made into rows for its code. @return whether added. */
static bool eh_table(struct jit_recorder *jr, struct jproc *jp, uint64_t code_addr,
		     uint64_t code_size)
{
	struct sfu_sframe *t = eh_rows(jr->arch, jp->eh, jp->eh_size, jp->eh_hdr_size, code_addr,
				       code_size);

	if (!t || !add_table(jr, jp, code_addr, code_size, t))
		return false;
	jr->stats.eh_tables++;
	return true;
}

static void keep_code(struct jit_recorder *jr, struct jproc *jp, const struct profile_jit *j,
		      uint64_t index)
{
	struct code *c;

	if (jp->ncode >= CODE_MAX) {
		if (!jp->code_full)
			warn(jr, jp, "%s: more than %u pieces of code: the next window names only the newest",
			     jp->dump_name, CODE_MAX);
		jp->code_full = true;
		return;
	}
	if (VEC_RESERVE(jp->code, jp->code_cap, jp->ncode + 1, 64))
		return;
	c = &jp->code[jp->ncode];
	*c = (struct code){ j->start, j->end, j->time_ns, index, j->flags,
			    strdup(j->name), NULL, 0 };
	if (!c->name)
		return;
	if (j->lines_len && (c->lines = malloc(j->lines_len))) {
		memcpy(c->lines, j->lines, j->lines_len);
		c->lines_len = j->lines_len;
	}
	jp->ncode++;
}

static struct code *code_by_index(struct jproc *jp, uint64_t index)
{
	for (size_t i = jp->ncode; i-- > 0;)
		if (jp->code[i].index == index && !(jp->code[i].flags & PROFILE_JIT_F_UNLOAD))
			return &jp->code[i];
	return NULL;
}

struct dump_ctx {
	struct jit_recorder *jr;
	struct jproc *jp;
};

static int on_dump_record(void *ctx, const struct jitdump_header *h, const struct jitdump_record *r)
{
	struct dump_ctx *dc = ctx;
	struct jit_recorder *jr = dc->jr;
	struct jproc *jp = dc->jp;
	/* the architecture's counter (TSC) is not the samples' clock: its code holds at any time */
	bool arch_time = h->flags & JITDUMP_FLAGS_ARCH_TIMESTAMP;
	uint64_t t = arch_time ? jp->now : r->timestamp;
	uint32_t flags = arch_time ? PROFILE_JIT_F_MAP : 0;

	switch (r->id) {
	case JITDUMP_CODE_UNWINDING_INFO:
		free(jp->eh);
		jp->eh = NULL;
		jp->eh_size = jp->eh_hdr_size = 0;
		if (r->unwind.eh_frame_size + r->unwind.eh_frame_hdr_size <= EH_MAX &&
		    (jp->eh = malloc(r->unwind.eh_frame_size + r->unwind.eh_frame_hdr_size + 1))) {
			memcpy(jp->eh, r->unwind.eh_frame, r->unwind.eh_frame_size);
			memcpy(jp->eh + r->unwind.eh_frame_size, r->unwind.eh_frame_hdr,
			       r->unwind.eh_frame_hdr_size);
			jp->eh_size = r->unwind.eh_frame_size + r->unwind.eh_frame_hdr_size;
			jp->eh_hdr_size = r->unwind.eh_frame_hdr_size;
		}
		break;
	case JITDUMP_CODE_DEBUG_INFO:
		keep_debug(jp, h, r);
		break;
	case JITDUMP_CODE_LOAD: {
		char name[JITDUMP_NAME_MAX + 1];
		struct profile_jit j = {
			.time_ns = t > INT64_MAX ? INT64_MAX : t, .pid = jp->pid,
			.start = r->load.code_addr, .end = r->load.code_addr + r->load.code_size,
			.flags = flags, .name = name, .source = jp->dump_name,
		};

		/* code of no size, or past the end of the address space, names nothing */
		if (j.end <= j.start)
			break;
		memcpy(name, r->load.name, r->load.name_len);
		name[r->load.name_len] = '\0';
		if (jp->debug && jp->debug_addr == r->load.code_addr &&
		    check_lines(jp, name, r->load.code_size)) {
			j.lines = jp->debug;
			j.lines_len = jp->debug_len;
		}
		record(jr, &j);
		keep_code(jr, jp, &j, r->load.code_index);
		if (jp->eh && eh_table(jr, jp, r->load.code_addr, r->load.code_size))
			keep_template(jp, r->load.code, r->load.code_size, jp->eh, jp->eh_size,
				      jp->eh_hdr_size);
		free(jp->eh);
		jp->eh = NULL;
		free(jp->debug);
		jp->debug = NULL;
		break;
	}
	case JITDUMP_CODE_MOVE: {
		struct code *c = code_by_index(jp, r->move.code_index);
		struct profile_jit gone = {
			.time_ns = t > INT64_MAX ? INT64_MAX : t, .pid = jp->pid,
			.start = r->move.old_code_addr,
			.end = r->move.old_code_addr + r->move.code_size,
			.flags = flags | PROFILE_JIT_F_UNLOAD, .name = "", .source = jp->dump_name,
		};
		struct profile_jit moved = gone;

		if (!c || gone.end <= gone.start)
			break;
		moved.start = r->move.new_code_addr;
		moved.end = r->move.new_code_addr + r->move.code_size;
		moved.flags = flags;
		moved.name = c->name;
		if (moved.end <= moved.start)
			break;
		record(jr, &gone);
		record(jr, &moved);
		c->flags |= PROFILE_JIT_F_UNLOAD;
		keep_code(jr, jp, &moved, r->move.code_index);
		break;
	}
	default:
		break;
	}
	return 0;
}

struct dump_open {
	struct jproc *jp;
	int fd;
};

/*
 * The jitdump's places in mapfile__each()'s order: the mapped file itself
 * (a magic link, followed), then its name in the process's root held since
 * it was found (the process may be gone), no link followed at all: the
 * process wrote the name. Never its name in our own root, which is another
 * file when the process has a root of its own.
 */
static int dump_try(void *ctx, enum mapfile_via via, const char *place)
{
	struct dump_open *d = ctx;
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS |
					   RESOLVE_NO_MAGICLINKS };

	switch (via) {
	case MAPFILE_MAPPED:
		d->fd = mapfile__open_place(d->jp->pid, via, place, d->jp->dump_name);
		break;
	case MAPFILE_IN_ROOT:
		if (d->jp->root_fd >= 0)
			d->fd = (int)syscall(SYS_openat2, d->jp->root_fd, d->jp->dump_name, &how,
					     sizeof(how));
		if (d->fd < 0)
			d->fd = -errno;
		break;
	case MAPFILE_HERE:
		break;
	}
	return d->fd >= 0;
}

/* Open the jitdump the process mapped (the mapped file itself) and check who wrote it. */
static void open_dump(struct jit_recorder *jr, struct jproc *jp)
{
	struct dump_open d = { jp, -ENOENT };
	struct stat st;
	int fd;

	mapfile__each(jp->pid, jp->dump_start, jp->dump_end, jp->dump_name, dump_try, &d);
	fd = d.fd;
	if (fd < 0) {
		if (!jp->exited)
			warn(jr, jp, "%s: %s: its JIT code is not named", jp->dump_name,
			     strerror(-fd));
		jp->dump_given_up = true;
		return;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (st.st_uid && st.st_uid != jp->uid && st.st_uid != jp->euid)) {
		warn(jr, jp, "%s: %s: not read", jp->dump_name,
		     !S_ISREG(st.st_mode) ? "not a regular file" : "owned by another user than the process's");
		close(fd);
		jp->dump_given_up = true;
		return;
	}
	jp->dump = jitdump_file__new(fd);
	if (!jp->dump) {
		close(fd);
		return;
	}
	jr->stats.dumps++;
}

static void poll_dump(struct jit_recorder *jr, struct jproc *jp, bool to_end)
{
	struct dump_ctx dc = { jr, jp };
	int got;

	if (!jp->dump_name || jp->dump_given_up)
		return;
	if (!jp->dump)
		open_dump(jr, jp);
	if (!jp->dump)
		return;
	/* to the end: a poll that may read the largest record whole, until one delivers none */
	do
		got = jitdump_file__poll(jp->dump, to_end ? JITDUMP_RECORD_MAX + JITDUMP_READ_CHUNK :
					 POLL_BYTES, on_dump_record, &dc);
	while (to_end && got > 0);
	if (to_end && got >= 0 && !jp->dump_told) {
		struct stat st;
		int fd = jitdump_file__fd(jp->dump);

		/* a record begun and never ended: the runtime died or the file was cut */
		if (fd >= 0 && !fstat(fd, &st) && (uint64_t)st.st_size > jitdump_file__offset(jp->dump)) {
			jp->dump_told = true;
			warn(jr, jp, "%s: ends inside a record at offset %" PRIu64 " of %" PRIu64
			     ": its last %" PRIu64 " bytes not read", jp->dump_name,
			     jitdump_file__offset(jp->dump), (uint64_t)st.st_size,
			     (uint64_t)st.st_size - jitdump_file__offset(jp->dump));
		}
	}
	if (got < 0 && got != -ENOMEM) {
		warn(jr, jp, "%s: %s: reading stopped there", jp->dump_name,
		     jitdump_file__error(jp->dump));
		jp->dump_given_up = true;
		jitdump_file__free(jp->dump);
		jp->dump = NULL;
	}
}

/* Write again what an earlier file was told: the next window is a whole profile. */
static void rewrite(struct jit_recorder *jr, struct jproc *jp)
{
	if (jp->map)
		write_map_entries(jr, jp);
	for (; jp->code_written < jp->ncode; jp->code_written++) {
		const struct code *c = &jp->code[jp->code_written];
		struct profile_jit j = {
			.time_ns = c->time, .pid = jp->pid, .start = c->start, .end = c->end,
			.flags = c->flags, .name = c->name, .source = jp->dump_name,
			.lines = c->lines, .lines_len = c->lines_len,
		};

		if (!(c->flags & PROFILE_JIT_F_UNLOAD))
			record(jr, &j);
	}
}

static void catch_up(struct jit_recorder *jr, struct jproc *jp, bool to_end)
{
	jp->last_poll = jp->now;
	rewrite(jr, jp);
	poll_map(jr, jp, to_end);
	poll_dump(jr, jp, to_end);
	jp->code_written = jp->ncode;
}

/* --- rows for code that came with none --- */

/* Put back rows made for the code at @start that a new mapping of its page took out. */
static bool put_back(struct jproc *jp, uint64_t start, uint64_t pc)
{
	struct sfu_module *m;
	const struct sfu_mapping *mp;
	const struct sfu_segment *seg;
	uint64_t *v;
	size_t nseg;

	if (hmap__find_u64(jp->tried, start, &v) || *v <= 1)
		return false;
	m = (struct sfu_module *)(uintptr_t)*v;
	mp = sfu_addrspace__find(jp->as, pc);
	if ((mp && mp->module == m) || !(seg = sfu_module__segments(m, &nseg)) || !nseg ||
	    sfu_addrspace__add(jp->as, start, start + seg->memsz, 0, PROT_READ | PROT_EXEC, NULL,
			       m))
		return false;
	jp->added++;
	return true;
}

/*
 * Rows for unknown code at @pc that is a copy of a template: the bytes
 * around it read from the process, and found to hold the template's at
 * exactly one place that covers @pc. @return whether added.
 */
static bool template_table(struct jit_recorder *jr, struct jproc *jp, uint64_t pc)
{
	uint8_t buf[2 * TMPL_CODE_MAX];
	const struct sfu_mapping *mp;
	const struct tmpl *found = NULL;
	struct iovec local, remote;
	struct sfu_sframe *table;
	uint64_t lo, hi, base = 0, *v;
	ssize_t got;

	if (!jp->ntmpls)
		return false;
	if (!hmap__find_u64(jp->pcs_tried, pc, &v))
		return *v > 1 && put_back(jp, *v - 2, pc);
	if (jp->npcs_tried >= PCS_TRIED_MAX) {
		hmap__free(jp->pcs_tried);
		jp->npcs_tried = 0;
		if (!(jp->pcs_tried = hmap__new(HMAP_U64)))
			return false;
	}
	if (hmap__set_u64(jp->pcs_tried, pc, 1))
		return false;
	jp->npcs_tried++;
	mp = sfu_addrspace__find(jp->as, pc);
	if (!mp || mp->module)
		return false;
	lo = pc - mp->start > TMPL_CODE_MAX - 1 ? pc - (TMPL_CODE_MAX - 1) : mp->start;
	hi = mp->end - pc > TMPL_CODE_MAX ? pc + TMPL_CODE_MAX : mp->end;
	local = (struct iovec){ buf, hi - lo };
	remote = (struct iovec){ (void *)(uintptr_t)lo, hi - lo };
	got = process_vm_readv(jp->pid, &local, 1, &remote, 1, 0);
	if (got <= 0)
		return false;
	for (unsigned i = 0; i < jp->ntmpls; i++) {
		const struct tmpl *t = &jp->tmpls[i];

		for (uint64_t o = 0; o < t->len && o <= pc - lo; o++) {
			uint64_t b = pc - o;

			if (b + t->len > lo + (uint64_t)got || memcmp(buf + (b - lo), t->code, t->len))
				continue;
			/* two places, or two templates: which frame it is cannot be told */
			if (found && (found != t || base != b))
				return false;
			found = t;
			base = b;
		}
	}
	if (!found)
		return false;
	table = found->eh ? eh_rows(jr->arch, found->eh, found->eh_size, found->hdr_size, base,
				    found->len) :
			    sfu_sframe__from_code(found->code, found->len, base, jr->arch, NULL, NULL);
	if (!table || !add_table(jr, jp, base, found->len, table))
		return false;
	hmap__set_u64(jp->pcs_tried, pc, base + 2);
	jr->stats.copy_tables++;
	return true;
}

/* The code of the perf map's line or the jitdump's load holding @pc: [*start, *start + *len). */
static bool find_code(struct jproc *jp, uint64_t pc, uint64_t *start, uint64_t *len)
{
	const struct perfmap_entry *e = jp->map ? perfmap__find(jp->map, pc) : NULL;

	/* the newest code first; a dump's code is looked for among its last loads */
	for (size_t i = jp->ncode, n = 0; i-- > 0 && n < 4096; n++) {
		const struct code *c = &jp->code[i];

		if (pc >= c->start && pc < c->end && !(c->flags & PROFILE_JIT_F_UNLOAD)) {
			*start = c->start;
			*len = c->end - c->start;
			return true;
		}
	}
	if (!e)
		return false;
	*start = e->start;
	*len = e->size;
	return true;
}

/* Rows for the code at @pc by reading its instructions from the process. @return whether added. */
static bool code_table(struct jit_recorder *jr, struct jproc *jp, uint64_t pc)
{
	uint8_t buf[CODE_READ_MAX];
	struct sfu_code_stats st;
	struct sfu_sframe *t;
	uint64_t start, len;
	struct iovec local, remote;
	ssize_t got;

	uint64_t *seen;

	if (!find_code(jp, pc, &start, &len))
		return template_table(jr, jp, pc);
	if (!hmap__find_u64(jp->tried, start, &seen))
		return put_back(jp, start, pc);
	if (set_tried(jp, start, NULL))
		return false;
	if (len > CODE_READ_MAX)
		len = CODE_READ_MAX;
	local = (struct iovec){ buf, len };
	remote = (struct iovec){ (void *)(uintptr_t)start, len };
	got = process_vm_readv(jp->pid, &local, 1, &remote, 1, 0);
	if (got <= 0)
		return false;
	t = sfu_sframe__from_code(buf, (size_t)got, start, jr->arch, &st, NULL);
	if (!t) {
		jr->stats.code_refused++;
		return false;
	}
	if (!add_table(jr, jp, start, (uint64_t)got, t))
		return false;
	jr->stats.code_tables++;
	keep_template(jp, buf, (size_t)got, NULL, 0, 0);
	return true;
}

static void sweep(struct jit_recorder *jr, uint64_t time)
{
	struct jproc **gone = NULL;
	size_t ngone = 0, cap = 0, pos = 0;
	struct hmap_item it;

	if (time - jr->last_sweep < 1000000000ull)
		return;
	jr->last_sweep = time;
	while (!hmap__next(jr->procs, &pos, &it)) {
		struct jproc *jp = (struct jproc *)(uintptr_t)it.val;

		if (jp->exited && time - jp->exit_time > EXITED_KEEP_NS &&
		    !VEC_RESERVE(gone, cap, ngone + 1, 16))
			gone[ngone++] = jp;
	}
	for (size_t i = 0; i < ngone; i++)
		forget(jr, gone[i]);
	free(gone);
}

size_t jit_recorder__sample(struct jit_recorder *jr, const struct proctab_proc *pr, uint64_t time,
			    const uint64_t *pcs, size_t npcs, bool seen)
{
	struct jproc *jp = get(jr, pr->pid);
	bool need = false;
	size_t added;

	/* a sample past its exit's grace is of a new process with the pid */
	if (jp && jp->exited && time - jp->exit_time > PROCTAB_EXIT_GRACE_NS) {
		forget(jr, jp);
		jp = NULL;
	}
	if (!jp && !npcs && !seen)
		return 0;
	if (!jp && !(jp = get_or_new(jr, pr->pid)))
		return 0;
	jp->as = pr->as;
	jp->now = time;
	jp->added = 0;
	if (!jp->owned) {
		jp->owned = true;
		learn(jp, pr);
	}
	if ((npcs || seen) && !jp->exited)
		hold_root(jr, jp);
	for (size_t i = 0; i < npcs; i++) {
		uint64_t s, l;

		if (!find_code(jp, pcs[i], &s, &l))
			need = true;
	}
	if (time - jp->last_poll >= (need ? POLL_NEED_NS : POLL_IDLE_NS) || time < jp->last_poll)
		catch_up(jr, jp, false);
	for (size_t i = 0; i < npcs; i++)
		code_table(jr, jp, pcs[i]);
	added = jp->added;
	jp->as = NULL;
	return added;
}

void jit_recorder__exit(struct jit_recorder *jr, uint32_t pid, uint64_t time)
{
	struct jproc *jp = get(jr, pid);

	sweep(jr, time);
	if (!jp || jp->exited)
		return;
	jp->now = time;
	jp->exited = true;
	jp->exit_time = time;
	if (jp->owned)
		catch_up(jr, jp, true);
	close_files(jr, jp);
}

void jit_recorder__flush(struct jit_recorder *jr, uint64_t time)
{
	struct hmap_item it;
	size_t pos = 0;

	while (!hmap__next(jr->procs, &pos, &it)) {
		struct jproc *jp = (struct jproc *)(uintptr_t)it.val;

		if (!jp->owned || jp->exited)
			continue;
		jp->now = time;
		catch_up(jr, jp, true);
	}
}

void jit_recorder__forget_written(struct jit_recorder *jr)
{
	struct hmap_item it;
	size_t pos = 0;

	while (!hmap__next(jr->procs, &pos, &it)) {
		struct jproc *jp = (struct jproc *)(uintptr_t)it.val;

		jp->map_written = 0;
		jp->code_written = 0;
	}
}
