// SPDX-License-Identifier: BSD-2-Clause
/*
 * A "JIT runtime" that lies to profilers: tiny x86-64 functions copied into
 * anonymous executable memory, named by a perf map or a jitdump written in
 * hostile ways (tests/integration/jit_hostile_test.py).
 *
 *   jit_hostile MODE SECONDS
 *
 * The code (frame pointers kept in every function):
 *
 *   outer:  push %rbp; mov %rsp,%rbp; call middle; call ctl; call big; call nul;
 *           pop %rbp; ret
 *   middle: push %rbp; mov %rsp,%rbp; call leaf; pop %rbp; ret
 *   leaf, ctl, big, nul: push %rbp; mov %rsp,%rbp; mov $N,%ecx; 1: dec %ecx; jnz 1b;
 *           pop %rbp; ret          (N differs: leaf spins the most)
 *
 * each at FN_SLOT bytes from the last, in one page mapped PROT_READ|PROT_EXEC.
 * main calls outer through run_jit() until the process has used SECONDS of
 * CPU time (at most 4 x SECONDS of wall time).
 *
 * MODE (what the process writes before it runs its code; jitdump modes map
 * the file PROT_READ|PROT_EXEC, as runtimes do, so that profilers find it):
 *
 *   map-hostile     /tmp/perf-PID.map, in order: a huge range (0 ffffffffffff0000)
 *                   named HUGE_RANGE; ranges overlapping the functions named
 *                   EARLY_SPAN, EARLY_LEAF; the good lines (outer, middle, leaf);
 *                   bad lines over leaf (no size, size 0, wrapping, signs, a
 *                   number over 64 bits, a number with no digit), named BAD_*;
 *                   big named by a 3 MB name of control bytes (a line over the
 *                   reader's limit); ctl named by a 60 KB name of control bytes
 *                   (cut to 1024 bytes by the reader); nul named
 *                   "jit_nul\0HIDDEN\e[0m"; last, a 200 KB line over leaf
 *                   (NAMED_LONG...) with no newline at the end of the file.
 *   dump-cut        /tmp/jit-PID.dump: a header, CODE_LOADs of outer, middle,
 *                   leaf, ctl, nul; then big's CODE_LOAD cut in the middle of
 *                   its name: the file ends there.
 *   dump-rewritten  the same dump, whole (big too); after 1 s of wall time it
 *                   is truncated and written again from the start: a header
 *                   with another timestamp and CODE_LOADs named jit_rewritten_*.
 *   dump-bad        CODE_LOADs of outer, middle, leaf; ctl's with a 1 MB name of
 *                   control bytes; a CODE_LOAD whose total_size (24) is below its
 *                   fixed fields; then good CODE_LOADs of big and nul (after the
 *                   damage).
 *   dump-nonul      CODE_LOADs of outer, middle, leaf; ctl's whose name has no
 *                   NUL (the record ends in it); then good CODE_LOADs of big, nul.
 *   plain           nothing written (a baseline).
 *
 * It prints "jit_hostile: pid N code 0xADDR" first, then what it wrote, on stdout.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FN_SLOT 0x100
enum { F_OUTER, F_MIDDLE, F_LEAF, F_CTL, F_BIG, F_NUL, NFN };

static const char *const good_names[NFN] = {
	"jit_hostile_outer", "jit_hostile_middle", "jit_hostile_leaf",
	"jit_hostile_ctl", "jit_hostile_big", "jit_hostile_nul",
};
static const char *const rewritten_names[NFN] = {
	"jit_rewritten_outer", "jit_rewritten_middle", "jit_rewritten_leaf",
	"jit_rewritten_ctl", "jit_rewritten_big", "jit_rewritten_nul",
};

static uint8_t *code;		/* the page of code */
static size_t code_len[NFN];	/* the bytes of each function */

static void die(const char *what)
{
	fprintf(stderr, "jit_hostile: %s: %s\n", what, strerror(errno));
	exit(2);
}

static size_t emit_call(uint8_t *p, size_t at, int from, int to)
{
	uint64_t next = (uint64_t)(uintptr_t)code + (uint64_t)from * FN_SLOT + at + 5;
	int32_t rel = (int32_t)((int64_t)((uintptr_t)code + (uint64_t)to * FN_SLOT) - (int64_t)next);

	p[at] = 0xe8;
	memcpy(p + at + 1, &rel, 4);
	return at + 5;
}

static void make_code(void)
{
	static const uint32_t spins[NFN] = { 0, 0, 4000000, 1500000, 1300000, 1100000 };

	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		die("mmap");
	memset(code, 0xcc, 4096);	/* int3 between the functions */
	for (int f = 0; f < NFN; f++) {
		uint8_t *p = code + f * FN_SLOT;
		size_t n = 0;

		p[n++] = 0x55;				/* push %rbp */
		p[n++] = 0x48, p[n++] = 0x89, p[n++] = 0xe5;	/* mov %rsp,%rbp */
		if (f == F_OUTER) {
			n = emit_call(p, n, f, F_MIDDLE);
			n = emit_call(p, n, f, F_CTL);
			n = emit_call(p, n, f, F_BIG);
			n = emit_call(p, n, f, F_NUL);
		} else if (f == F_MIDDLE) {
			n = emit_call(p, n, f, F_LEAF);
		} else {
			p[n++] = 0xb9;			/* mov $N,%ecx */
			memcpy(p + n, &spins[f], 4);
			n += 4;
			p[n++] = 0xff, p[n++] = 0xc9;	/* 1: dec %ecx */
			p[n++] = 0x75, p[n++] = 0xfc;	/* jnz 1b */
		}
		p[n++] = 0x5d;				/* pop %rbp */
		p[n++] = 0xc3;				/* ret */
		code_len[f] = n;
	}
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC))
		die("mprotect");
}

static uint64_t fn_addr(int f)
{
	return (uint64_t)(uintptr_t)code + (uint64_t)f * FN_SLOT;
}

/* @len bytes of names full of what a terminal obeys; @nul: a NUL is allowed in them. */
static char *hostile_bytes(size_t len, const char *lead, int nul)
{
	static const char pat[] = "\x1b[31m" "\r" "\x07" "\xe2\x80\xae" "\xff\xfe" "\x1b]0;owned\x07"
				  "\xc3" "(" "\x7f" "\x9b" "\x00" "x";
	size_t plen = sizeof(pat) - 1, llen = strlen(lead);
	char *s = malloc(len + 1);

	if (!s)
		die("malloc");
	memcpy(s, lead, llen);
	for (size_t i = llen; i < len; i++) {
		s[i] = pat[(i - llen) % plen];
		if (!nul && !s[i])
			s[i] = '\x01';
	}
	s[len] = '\0';
	return s;
}

static void write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("write");
		p += n;
		len -= (size_t)n;
	}
}

static void put(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(int fd, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	write_all(fd, buf, (size_t)n);
}

static void write_map(void)
{
	char path[64];
	uint64_t leaf = fn_addr(F_LEAF);
	char *name;
	int fd;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die(path);
	/* a range over everything, first: it must name no frame of a file */
	put(fd, "0 ffffffffffff0000 HUGE_RANGE\n");
	/* ranges overlapping the functions, before their good lines: the later lines win */
	put(fd, "%lx 400 EARLY_SPAN\n", (unsigned long)fn_addr(F_OUTER));
	put(fd, "%lx 10 EARLY_LEAF\n", (unsigned long)leaf + 8);
	put(fd, "\n");
	/* the good lines, with and without 0x, blanks before and between the numbers */
	put(fd, "%lx %x %s\n", (unsigned long)fn_addr(F_OUTER), FN_SLOT, good_names[F_OUTER]);
	put(fd, "0x%lx 0x%x %s\n", (unsigned long)fn_addr(F_MIDDLE), FN_SLOT,
	    good_names[F_MIDDLE]);
	put(fd, " \t%lX \t%X %s\n", (unsigned long)leaf, FN_SLOT, good_names[F_LEAF]);
	/* bad lines over leaf, after its good line: each would win if it were taken */
	put(fd, "%lx\n", (unsigned long)leaf);
	put(fd, "%lx %x\n", (unsigned long)leaf, FN_SLOT);
	put(fd, "%lx 0 BAD_SIZE0\n", (unsigned long)leaf);
	put(fd, "%lx ffffffffffffff00 BAD_WRAP\n", (unsigned long)leaf);
	put(fd, "%lx -%x BAD_MINUS_SIZE\n", (unsigned long)leaf, FN_SLOT);
	put(fd, "+%lx %x BAD_PLUS_START\n", (unsigned long)leaf, FN_SLOT);
	put(fd, "-%lx %x BAD_MINUS_START\n", (unsigned long)leaf, FN_SLOT);
	put(fd, "1%016lx %x BAD_OVER64\n", (unsigned long)leaf, FN_SLOT);
	put(fd, "%lx 1%016x BAD_OVER64_SIZE\n", (unsigned long)leaf, FN_SLOT);
	put(fd, "0x %x BAD_NODIGIT\n", FN_SLOT);
	put(fd, "%lx %x \n", (unsigned long)leaf, FN_SLOT);
	/* big: a 3 MB name of control bytes and NULs (a line over the reader's limit) */
	name = hostile_bytes(3u << 20, "BIG3MB", 1);
	put(fd, "%lx %x ", (unsigned long)fn_addr(F_BIG), FN_SLOT);
	write_all(fd, name, 3u << 20);
	put(fd, "\n");
	free(name);
	/* ctl: 60 KB of control bytes (no NUL), cut to its first 1024 by the reader */
	name = hostile_bytes(60u << 10, "CTL60K", 0);
	put(fd, "%lx %x ", (unsigned long)fn_addr(F_CTL), FN_SLOT);
	write_all(fd, name, 60u << 10);
	put(fd, "\n");
	free(name);
	/* nul: a NUL in the name */
	put(fd, "%lx %x ", (unsigned long)fn_addr(F_NUL), FN_SLOT);
	write_all(fd, "jit_nul\0HIDDEN\x1b[0m\n", 19);
	/* last: 200 KB over leaf, no newline at the end of the file */
	name = hostile_bytes(200u << 10, "NAMED_LONG", 1);
	put(fd, "%lx %x ", (unsigned long)leaf, FN_SLOT);
	write_all(fd, name, 200u << 10);
	free(name);
	close(fd);
	printf("jit_hostile: wrote %s\n", path);
}

/* --- jitdump --- */

struct jd_header {
	uint32_t magic, version, total_size, elf_mach, pad1, pid;
	uint64_t timestamp, flags;
};

struct jd_load {
	uint32_t id, total_size;
	uint64_t timestamp;
	uint32_t pid, tid;
	uint64_t vma, code_addr, code_size, code_index;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static char dump_path[64];
static void *dump_map;
static int dump_fd = -1;

static void dump_header(int fd, uint64_t timestamp)
{
	struct jd_header h = { 0x4A695444u, 1, sizeof(h), EM_X86_64, 0, (uint32_t)getpid(),
			       timestamp, 0 };

	write_all(fd, &h, sizeof(h));
}

/*
 * A CODE_LOAD of function @f named @name (@name_len bytes; a NUL follows
 * unless @no_nul); @cut_at: write only that many bytes of the record (0: all).
 */
static void dump_load(int fd, int f, const char *name, size_t name_len, int no_nul,
		      size_t cut_at, uint32_t size_override)
{
	static uint64_t index;
	struct jd_load r = {
		.id = 0, .timestamp = now_ns(), .pid = (uint32_t)getpid(),
		.tid = (uint32_t)syscall(SYS_gettid), .vma = fn_addr(f), .code_addr = fn_addr(f),
		.code_size = no_nul ? 0 : code_len[f], .code_index = ++index,
	};
	size_t total = sizeof(r) + name_len + (no_nul ? 0 : 1) + r.code_size;
	uint8_t *buf = malloc(total);

	if (!buf)
		die("malloc");
	r.total_size = size_override ? size_override : (uint32_t)total;
	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), name, name_len);
	if (!no_nul) {
		buf[sizeof(r) + name_len] = 0;
		memcpy(buf + sizeof(r) + name_len + 1, code + f * FN_SLOT, r.code_size);
	}
	write_all(fd, buf, cut_at ? cut_at : total);
	free(buf);
}

static void dump_good(int fd, int f, const char *const *names)
{
	dump_load(fd, f, names[f], strlen(names[f]), 0, 0, 0);
}

static int open_dump(void)
{
	long page = sysconf(_SC_PAGESIZE);
	int fd;

	snprintf(dump_path, sizeof(dump_path), "/tmp/jit-%d.dump", getpid());
	fd = open(dump_path, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0644);
	if (fd < 0)
		die(dump_path);
	dump_header(fd, now_ns());
	/* as perf's agent, V8 and CPython do: the mapping tells profilers where the file is */
	dump_map = mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (dump_map == MAP_FAILED)
		die("mmap the jitdump");
	return fd;
}

static void write_dump(const char *mode)
{
	int fd = open_dump();

	dump_good(fd, F_OUTER, good_names);
	dump_good(fd, F_MIDDLE, good_names);
	dump_good(fd, F_LEAF, good_names);
	if (!strcmp(mode, "dump-cut")) {
		const char *n = good_names[F_BIG];

		dump_good(fd, F_CTL, good_names);
		dump_good(fd, F_NUL, good_names);
		/* big's record ends in the middle of its name: the file ends there */
		dump_load(fd, F_BIG, n, strlen(n), 0, sizeof(struct jd_load) + 6, 0);
	} else if (!strcmp(mode, "dump-rewritten")) {
		dump_good(fd, F_CTL, good_names);
		dump_good(fd, F_BIG, good_names);
		dump_good(fd, F_NUL, good_names);
	} else if (!strcmp(mode, "dump-bad")) {
		char *name = hostile_bytes(1u << 20, "CTL1MB", 0);

		dump_load(fd, F_CTL, name, 1u << 20, 0, 0, 0);
		free(name);
		/* a record smaller than a CODE_LOAD's fixed fields, framed as if it were whole */
		dump_load(fd, F_BIG, "BAD_SMALL", 9, 0, 24, 24);
		dump_good(fd, F_BIG, good_names);
		dump_good(fd, F_NUL, good_names);
	} else if (!strcmp(mode, "dump-nonul")) {
		static const char n[] = "BAD_NONUL_jit_hostile_ctl";

		/* the record ends inside the name: no NUL */
		dump_load(fd, F_CTL, n, sizeof(n) - 1, 1, 0, 0);
		dump_good(fd, F_BIG, good_names);
		dump_good(fd, F_NUL, good_names);
	}
	printf("jit_hostile: wrote %s\n", dump_path);
	/* dump-rewritten writes it again */
	if (strcmp(mode, "dump-rewritten"))
		close(fd);
	else
		dump_fd = fd;
}

static void rewrite_dump(void)
{
	int fd = dump_fd;

	if (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET))
		die("truncate the jitdump");
	dump_header(fd, now_ns());
	for (int f = 0; f < NFN; f++)
		dump_good(fd, f, rewritten_names);
	close(fd);
	printf("jit_hostile: wrote %s again from the start\n", dump_path);
	fflush(stdout);
}

/* --- running --- */

__attribute__((noinline)) static void run_jit(void (*outer)(void))
{
	outer();
	__asm__ volatile("" ::: "memory");
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double wall_seconds(void)
{
	return now_ns() / 1e9;
}

int main(int argc, char **argv)
{
	const char *mode;
	double secs, t0, c0;
	int rewrite = 0;
	void (*outer)(void);

	if (argc != 3) {
		fprintf(stderr, "usage: jit_hostile map-hostile|dump-cut|dump-rewritten|dump-bad|"
				"dump-nonul|plain SECONDS\n");
		return 2;
	}
	mode = argv[1];
	secs = atof(argv[2]);
	make_code();
	printf("jit_hostile: pid %d code 0x%lx\n", getpid(), (unsigned long)fn_addr(0));
	if (!strcmp(mode, "map-hostile"))
		write_map();
	else if (!strncmp(mode, "dump-", 5))
		write_dump(mode);
	else if (strcmp(mode, "plain"))
		return fprintf(stderr, "jit_hostile: no mode %s\n", mode), 2;
	rewrite = !strcmp(mode, "dump-rewritten");
	fflush(stdout);
	outer = (void (*)(void))(uintptr_t)fn_addr(F_OUTER);
	t0 = wall_seconds();
	c0 = cpu_seconds();
	while (cpu_seconds() - c0 < secs && wall_seconds() - t0 < 4 * secs) {
		run_jit(outer);
		if (rewrite && wall_seconds() - t0 >= 1.0) {
			rewrite_dump();
			rewrite = 0;
		}
	}
	printf("jit_hostile: ran %.2f s of CPU in %.2f s\n", cpu_seconds() - c0,
	       wall_seconds() - t0);
	return 0;
}
