/* SPDX-License-Identifier: BSD-2-Clause */
/* Benchmark: bytes per sample and encode/decode speed of the profile file on a synthetic recording. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "profile/profile.h"
#include "sfunwind/cbf.h"

/*
 * The recording: NPROCS processes with 16 threads between them, each thread
 * CPU-bound on its own CPU, sampled by a per-CPU timer at --hz; the samples
 * reach the writer in time order, as they leave BPF's shared ring buffer.
 * Each process has a call graph of a few dozen functions in a PIE executable
 * and libc; its stacks are 30-120 frames deep, some directly recursive, and
 * a few hundred distinct stacks get a Zipf-like share of the samples. About
 * one sample in five is taken in the kernel and has a kernel stack too.
 * --chaos moves every thread to another CPU every period and lets one tick in
 * ten find its thread asleep: the order of threads in the stream is then as
 * unpredictable as it gets. --stacks changes how many distinct user stacks there are.
 */
#define NPROCS		3
#define NTHREADS	16
#define NCPUS		NTHREADS
#define EXE_FUNCS	64
#define LIBC_FUNCS	24
#define KERNEL_FUNCS	96
#define MAX_DEPTH	127	/* what sfprof record keeps of a stack */
#define KERNEL_SHARE	0.2
#define ZIPF_S		1.1

static const unsigned proc_threads[NPROCS] = { 8, 5, 3 };
static unsigned proc_stacks[NPROCS] = { 140, 100, 80 };	/* distinct user stacks, --stacks */
#define KERNEL_STACKS	48

/* ---- a small deterministic RNG ---- */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static uint64_t rng_below(uint64_t n)
{
	return n ? rng_next() % n : 0;
}

static double rng_unit(void)
{
	return (rng_next() >> 11) * (1.0 / 9007199254740992.0);
}

static double rng_gauss(void)
{
	double u = rng_unit(), v = rng_unit();

	return sqrt(-2.0 * log(u > 0 ? u : 1e-300)) * cos(2 * M_PI * v);
}

/* ---- the synthetic programs ---- */

struct func {
	uint64_t entry;
	uint32_t size;
	bool recursive;		/* calls itself directly */
};

struct stack {
	uint64_t *addrs;	/* innermost first: a pc, then return addresses */
	size_t n;
	uint64_t hash;
};

struct pool {
	struct stack *stacks;
	size_t n;
	double *cdf;		/* Zipf over the pool's order */
};

struct proc_model {
	uint32_t pid;
	uint64_t exe_base, libc_base;
	struct func funcs[EXE_FUNCS + LIBC_FUNCS];	/* executable, then libc */
	struct pool pool;
};

struct thread_model {
	uint32_t pid, tid;
	struct proc_model *proc;
	unsigned rotate;	/* threads of a process favour slightly different stacks */
};

/* Where @caller calls @callee: the same edge always has the same return address. */
static uint64_t call_site(const struct func *funcs, unsigned caller, unsigned callee)
{
	const struct func *f = &funcs[caller];
	uint64_t h = (caller * 0x9e3779b1u) ^ (callee * 0x85ebca6bu);

	h ^= h >> 13;
	return f->entry + 5 + (h * 0xc2b2ae35u) % (f->size - 8);
}

static uint64_t hash_addrs(const uint64_t *a, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ a[i]) * 0x100000001b3ull;
	return h;
}

/*
 * A stack from a chain of calls @chain[0] (outermost) .. @chain[n-1] (the
 * leaf), the pc at one of a few places in the leaf.
 */
static void make_stack(const struct func *funcs, const unsigned *chain, size_t n, unsigned pc_slot,
		       struct stack *s)
{
	const struct func *leaf = &funcs[chain[n - 1]];

	s->addrs = malloc(n * sizeof(*s->addrs));
	if (!s->addrs) {
		perror("bench_storage");
		exit(1);
	}
	s->n = n;
	s->addrs[0] = leaf->entry + 3 + (pc_slot * 0x3b + chain[n - 1] * 7) % (leaf->size - 4);
	for (size_t i = 1; i < n; i++)
		s->addrs[i] = call_site(funcs, chain[n - 1 - i], chain[n - i]);
	s->hash = hash_addrs(s->addrs, n);
}

static bool pool_has(const struct pool *p, const struct stack *s)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->stacks[i].hash == s->hash && p->stacks[i].n == s->n &&
		    !memcmp(p->stacks[i].addrs, s->addrs, s->n * sizeof(*s->addrs)))
			return true;
	return false;
}

static void pool_cdf(struct pool *p)
{
	double sum = 0;

	p->cdf = malloc(p->n * sizeof(*p->cdf));
	if (!p->cdf) {
		perror("bench_storage");
		exit(1);
	}
	for (size_t i = 0; i < p->n; i++)
		sum += 1.0 / pow(i + 1, ZIPF_S);
	for (size_t i = 0; i < p->n; i++)
		p->cdf[i] = (i ? p->cdf[i - 1] : 0) + 1.0 / pow(i + 1, ZIPF_S) / sum;
}

static size_t pool_pick(const struct pool *p)
{
	double u = rng_unit();
	size_t lo = 0, hi = p->n - 1;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * A walk down the call graph: a root of 3-4 frames (thread start or main),
 * a chain through the executable's functions, which go deeper with each
 * call, a directly recursive function repeated 2-60 times now and then, and
 * a few libc frames at the leaf.
 */
static size_t walk_user(const struct proc_model *pm, unsigned *chain)
{
	const unsigned libc0 = EXE_FUNCS;
	size_t n = 0, target = 30 + rng_below(70);
	unsigned f;

	if (rng_below(4) == 0) {
		chain[n++] = 0;			/* _start */
		chain[n++] = libc0 + 0;		/* __libc_start_main */
		chain[n++] = libc0 + 1;		/* __libc_start_call_main */
		f = 1;				/* main */
	} else {
		chain[n++] = libc0 + 2;		/* clone3 */
		chain[n++] = libc0 + 3;		/* start_thread */
		f = 2 + rng_below(2);		/* the thread's entry */
	}
	chain[n++] = f;
	while (n < target && f + 1 < EXE_FUNCS) {
		f += 1 + rng_below(f < 8 ? 2 : 3);
		if (f >= EXE_FUNCS)
			break;
		chain[n++] = f;
		if (pm->funcs[f].recursive && rng_below(3) == 0) {
			size_t depth = 2 + rng_below(rng_below(4) ? 12 : 59);

			for (size_t i = 0; i < depth && n < MAX_DEPTH - 6; i++)
				chain[n++] = f;
		}
	}
	/* into libc: malloc, memcpy, a lock... */
	for (size_t k = rng_below(4); k && n < MAX_DEPTH - 1; k--)
		chain[n++] = libc0 + 4 + rng_below(LIBC_FUNCS - 4);
	return n;
}

static size_t walk_kernel(unsigned *chain)
{
	size_t n = 0, target = 6 + rng_below(20);
	unsigned f;

	/* syscall entry, timer interrupt or page fault */
	switch (rng_below(3)) {
	case 0:
		chain[n++] = 0;
		chain[n++] = 1;
		f = 2;
		break;
	case 1:
		chain[n++] = 3;
		chain[n++] = 4;
		f = 5;
		break;
	default:
		chain[n++] = 6;
		chain[n++] = 7;
		f = 8;
		break;
	}
	chain[n++] = f;
	while (n < target) {
		f += 1 + rng_below(6);
		if (f >= KERNEL_FUNCS)
			break;
		chain[n++] = f;
	}
	return n;
}

static void lay_out(struct func *funcs, size_t n, uint64_t base, unsigned recursive_one_in)
{
	uint64_t at = base + 0x1040;

	for (size_t i = 0; i < n; i++) {
		funcs[i].entry = at;
		funcs[i].size = 64 + rng_below(1500);
		funcs[i].recursive = recursive_one_in && i > 4 && rng_below(recursive_one_in) == 0;
		at += (funcs[i].size + 15) & ~15ull;
	}
}

static void build_proc(struct proc_model *pm, uint32_t pid, size_t nstacks)
{
	unsigned chain[MAX_DEPTH + 8];

	memset(pm, 0, sizeof(*pm));
	pm->pid = pid;
	pm->exe_base = 0x55a000000000ull + (rng_below(0x1000000) << 12);
	pm->libc_base = 0x7f1000000000ull + (rng_below(0x1000000) << 12);
	lay_out(pm->funcs, EXE_FUNCS, pm->exe_base, 5);
	lay_out(pm->funcs + EXE_FUNCS, LIBC_FUNCS, pm->libc_base + 0x28000, 0);
	pm->pool.stacks = calloc(nstacks, sizeof(*pm->pool.stacks));
	if (!pm->pool.stacks) {
		perror("bench_storage");
		exit(1);
	}
	while (pm->pool.n < nstacks) {
		size_t n = walk_user(pm, chain);
		struct stack s;

		make_stack(pm->funcs, chain, n, rng_below(4), &s);
		if (s.n < 4 || pool_has(&pm->pool, &s)) {
			free(s.addrs);
			continue;
		}
		pm->pool.stacks[pm->pool.n++] = s;
	}
	pool_cdf(&pm->pool);
}

static void build_kernel(struct func *kf, struct pool *kp)
{
	unsigned chain[MAX_DEPTH + 8];

	lay_out(kf, KERNEL_FUNCS, 0xffffffff81000000ull, 0);
	kp->stacks = calloc(KERNEL_STACKS, sizeof(*kp->stacks));
	if (!kp->stacks) {
		perror("bench_storage");
		exit(1);
	}
	while (kp->n < KERNEL_STACKS) {
		size_t n = walk_kernel(chain);
		struct stack s;

		make_stack(kf, chain, n, rng_below(3), &s);
		if (pool_has(kp, &s)) {
			free(s.addrs);
			continue;
		}
		kp->stacks[kp->n++] = s;
	}
	pool_cdf(kp);
}

static void pool_free(struct pool *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->stacks[i].addrs);
	free(p->stacks);
	free(p->cdf);
}

/* ---- the sample stream ---- */

struct event {
	uint64_t time;
	uint16_t thread;
	uint16_t cpu;
	int16_t ustack;		/* index in the process's pool */
	int16_t kstack;		/* index in the kernel pool, -1: none */
};

static int cmp_event(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

/*
 * @n samples: every CPU's timer fires once a period at its own phase, late
 * by a microsecond or two, now and then by tens of them; a thread moves to
 * another CPU now and then.
 */
static struct event *make_events(size_t n, unsigned hz, struct thread_model *threads,
				 const struct pool *kpool, uint64_t start, bool chaos)
{
	struct event *ev = malloc(n * sizeof(*ev));
	uint64_t period = 1000000000ull / hz;
	uint64_t phase[NCPUS];
	unsigned on_cpu[NCPUS];
	size_t done = 0;

	if (!ev) {
		perror("bench_storage");
		exit(1);
	}
	for (unsigned c = 0; c < NCPUS; c++) {
		phase[c] = 30000 + rng_below(period - 60000);
		on_cpu[c] = c;
	}
	for (uint64_t k = 0; done < n; k++) {
		size_t first = done;

		if (chaos || rng_below(200) == 0) {
			/* --chaos: every thread anywhere, every period */
			for (unsigned m = chaos ? NCPUS : 1; m; m--) {
				unsigned a = rng_below(NCPUS), b = rng_below(NCPUS), t = on_cpu[a];

				on_cpu[a] = on_cpu[b];
				on_cpu[b] = t;
			}
		}
		for (unsigned c = 0; c < NCPUS && done < n; c++) {
			if (chaos && rng_below(10) == 0)
				continue;	/* the thread was sleeping */
			struct thread_model *t = &threads[on_cpu[c]];
			const struct pool *up = &t->proc->pool;
			double late = 1500 + 600 * rng_gauss();
			struct event *e = &ev[done++];
			size_t u = pool_pick(up);

			if (rng_below(100) == 0)
				late += 10000 + rng_below(60000);
			e->time = start + k * period + phase[c] + (uint64_t)(late > 0 ? late : 0);
			e->thread = on_cpu[c];
			e->cpu = c;
			/* a thread's favourites are its process's, a little shuffled */
			if (u < 8)
				u = (u + t->rotate) % 8;
			e->ustack = u;
			e->kstack = rng_unit() < KERNEL_SHARE ? (int16_t)pool_pick(kpool) : -1;
		}
		qsort(ev + first, done - first, sizeof(*ev), cmp_event);
	}
	return ev;
}

/* ---- the other records ---- */

static const uint8_t exe_build_id[NPROCS][20] = {
	{ 0x3a, 0x91, 0x0c, 0x55, 0x12, 0xe8, 0x71, 0x04, 0x9b, 0x2f,
	  0xd0, 0x66, 0x13, 0x8a, 0xc4, 0x7e, 0x01, 0x5d, 0xa9, 0x33 },
	{ 0x7c, 0x02, 0xee, 0x41, 0x90, 0x1b, 0x65, 0xf3, 0x28, 0xd7,
	  0x4e, 0xb1, 0x0a, 0x9c, 0x36, 0x58, 0xe2, 0x14, 0x87, 0xcd },
	{ 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa,
	  0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00, 0x12, 0x34, 0x56, 0x78 },
};
static const uint8_t libc_build_id[20] = {
	0x4b, 0x7b, 0x2a, 0x8c, 0x3e, 0x1f, 0x90, 0x55, 0x6d, 0xa0,
	0xc7, 0x12, 0x88, 0x39, 0xf4, 0x0e, 0xb6, 0x21, 0x73, 0x9d,
};
static const char *const proc_comm[NPROCS] = { "httpd", "indexer", "cc1" };
static const char *const proc_exe[NPROCS] = {
	"/usr/sbin/httpd", "/opt/search/bin/indexer", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1",
};

static int check(int err, const char *what)
{
	if (err) {
		fprintf(stderr, "bench_storage: %s: %s\n", what, strerror(-err));
		exit(1);
	}
	return 0;
}

static void write_process(struct profile_writer *w, const struct proc_model *pm, unsigned i,
			  uint64_t t0)
{
	struct profile_process p = {
		.pid = pm->pid, .ppid = 1, .comm = proc_comm[i], .exe = proc_exe[i],
		.pid_ns = 4026531836ull, .mnt_ns = 4026531841ull, .ns_pid = pm->pid,
	};
	struct profile_module exe = {
		.file_size = 2000000 + i * 123457, .build_id = exe_build_id[i], .build_id_len = 20,
		.path = proc_exe[i],
	};
	struct profile_module libc = {
		.file_size = 1922136, .build_id = libc_build_id, .build_id_len = 20,
		.path = "/usr/lib/x86_64-linux-gnu/libc.so.6",
	};
	struct profile_module vdso = { .file_size = 8192, .path = "[vdso]" };
	uint32_t exe_id, libc_id, vdso_id;
	struct profile_mapping m;
	struct profile_comm c;

	check(profile_writer__process(w, &p), "process");
	check(profile_writer__module(w, &exe, &exe_id), "module");
	check(profile_writer__module(w, &libc, &libc_id), "module");
	vdso.build_id = libc_build_id;	/* a build ID of its own in real life; any will do */
	check(profile_writer__module(w, &vdso, &vdso_id), "module");
	m = (struct profile_mapping){ pm->pid, pm->exe_base, pm->exe_base + 0x1000, 0, 1, exe_id };
	check(profile_writer__mapping(w, &m), "mapping");
	m = (struct profile_mapping){ pm->pid, pm->exe_base + 0x1000, pm->exe_base + 0x80000, 0x1000,
				      5, exe_id };
	check(profile_writer__mapping(w, &m), "mapping");
	m = (struct profile_mapping){ pm->pid, pm->libc_base, pm->libc_base + 0x28000, 0, 1,
				      libc_id };
	check(profile_writer__mapping(w, &m), "mapping");
	m = (struct profile_mapping){ pm->pid, pm->libc_base + 0x28000, pm->libc_base + 0x1bd000,
				      0x28000, 5, libc_id };
	check(profile_writer__mapping(w, &m), "mapping");
	m = (struct profile_mapping){ pm->pid, 0x7ffd3c1f2000ull, 0x7ffd3c1f4000ull, 0, 5, vdso_id };
	check(profile_writer__mapping(w, &m), "mapping");
	c = (struct profile_comm){ t0, pm->pid, pm->pid, proc_comm[i] };
	check(profile_writer__comm(w, &c), "comm");
}

/* ---- checksums of what was written and what was read ---- */

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t sample_sum(uint64_t h, uint64_t time, uint32_t pid, uint32_t tid, uint32_t cpu,
			   uint32_t weight)
{
	h = mix(h, time);
	h = mix(h, pid);
	h = mix(h, tid);
	h = mix(h, cpu);
	return mix(h, weight);
}

/* ---- the file, parsed again to see where its bytes go ---- */

struct field_stats {
	const char *name;
	uint64_t raw;		/* varint bytes in the row layout */
	struct { uint8_t *p; size_t len, cap; } col;	/* this block's column */
	uint64_t packed;	/* the columns compressed one by one */
};

static void col_put(struct field_stats *f, const uint8_t *p, size_t n)
{
	if (f->col.len + n > f->col.cap) {
		f->col.cap = (f->col.len + n) * 2;
		f->col.p = realloc(f->col.p, f->col.cap);
		if (!f->col.p) {
			perror("bench_storage");
			exit(1);
		}
	}
	memcpy(f->col.p + f->col.len, p, n);
	f->col.len += n;
}

static void col_varint(struct field_stats *f, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;

	do {
		b[n++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	col_put(f, b, n);
}

static size_t zsize(const void *p, size_t n, int level)
{
	size_t bound = ZSTD_compressBound(n), c;
	void *out = malloc(bound);

	if (!out) {
		perror("bench_storage");
		exit(1);
	}
	c = ZSTD_compress(out, bound, p, n, level);
	free(out);
	if (ZSTD_isError(c)) {
		fprintf(stderr, "bench_storage: zstd: %s\n", ZSTD_getErrorName(c));
		exit(1);
	}
	return c;
}

static bool get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; shift < 70 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

enum {
	F_TIME, F_PID, F_TID, F_CPU, F_WEIGHT, F_USTACK, F_KSTACK,
	F_TIME_US,		/* experiment: times rounded to microseconds */
	F_TIME_TID,		/* experiment: delta from the same thread's previous sample, less a period */
	F_TIME_TID_US,		/* the same in microseconds */
	F_STACKS_PAIR,		/* experiment: one id for the (user, kernel) pair */
	F_OTHER,		/* every record that is not a sample, whole */
	NFIELDS
};

/* Where the bytes of @path go: by record type, by sample field, and what other layouts would give. */
static int breakdown(const char *path, unsigned hz)
{
	static const char *const type_names[] = {
		"?", "process", "thread", "module", "mapping", "stack", "sample", "lost", "exit",
		"comm",
	};
	struct field_stats f[NFIELDS] = {
		[F_TIME] = { "time delta (ns)" }, [F_PID] = { "pid" }, [F_TID] = { "tid" },
		[F_CPU] = { "cpu" }, [F_WEIGHT] = { "weight" }, [F_USTACK] = { "user stack id" },
		[F_KSTACK] = { "kernel stack id" }, [F_TIME_US] = { "time delta (us)" },
		[F_TIME_TID] = { "time, per-thread delta-of-delta (ns)" },
		[F_TIME_TID_US] = { "time, per-thread delta-of-delta (us)" },
		[F_STACKS_PAIR] = { "stack pair id" }, [F_OTHER] = { "other records" },
	};
	uint64_t type_count[256] = { 0 }, type_bytes[256] = { 0 }, framing = 0;
	uint64_t samples = 0, blocks = 0, usize_total = 0, csize_total = 0, level19 = 0;
	uint64_t period = 1000000000ull / hz, header = 0, file_size;
	static uint64_t tid_prev[1 << 16];	/* by tid & 0xffff */
	FILE *fp = fopen(path, "rb");
	uint8_t *file = NULL, *data = NULL;
	size_t data_cap = 0;
	struct stat st;
	/* pair ids, interned like the writer does stacks */
	struct { uint64_t key; uint32_t id; } *pairs = NULL;
	size_t pairs_cap = 1 << 16, npairs = 0;

	if (!fp || fstat(fileno(fp), &st)) {
		perror(path);
		return -1;
	}
	file_size = st.st_size;
	file = malloc(file_size ? file_size : 1);
	pairs = calloc(pairs_cap, sizeof(*pairs));
	if (!file || !pairs || fread(file, 1, file_size, fp) != file_size) {
		fprintf(stderr, "bench_storage: %s: cannot read\n", path);
		return -1;
	}
	fclose(fp);
	header = file[10] | file[11] << 8;
	for (uint64_t pos = header; pos + 20 <= file_size && !memcmp(file + pos, "SFB1", 4);) {
		uint32_t csize = file[pos + 4] | file[pos + 5] << 8 | file[pos + 6] << 16 |
				 (uint32_t)file[pos + 7] << 24;
		uint32_t usize = file[pos + 8] | file[pos + 9] << 8 | file[pos + 10] << 16 |
				 (uint32_t)file[pos + 11] << 24;
		const uint8_t *p, *end;
		uint64_t prev_time = 0, prev_us = 0;

		if (usize > data_cap) {
			data_cap = usize;
			data = realloc(data, data_cap);
			if (!data) {
				perror("bench_storage");
				return -1;
			}
		}
		if (ZSTD_isError(ZSTD_decompress(data, usize, file + pos + 20, csize))) {
			fprintf(stderr, "bench_storage: block at %" PRIu64 " does not decompress\n", pos);
			return -1;
		}
		blocks++;
		usize_total += usize;
		csize_total += csize;
		level19 += zsize(data, usize, 19);
		for (size_t i = 0; i < NFIELDS; i++)
			f[i].col.len = 0;
		p = data;
		end = data + usize;
		while (p < end) {
			const uint8_t *rec = p, *q;
			uint64_t len, v[7];
			uint8_t type = *p++;

			if (!get_varint(&p, end, &len) || len > (uint64_t)(end - p))
				break;
			framing += p - rec;
			type_count[type]++;
			type_bytes[type] += p - rec + len;
			q = p;
			p += len;
			if (type != PROFILE_REC_SAMPLE) {
				col_put(&f[F_OTHER], rec, p - rec);
				continue;
			}
			samples++;
			for (int k = 0; k < 7; k++) {
				const uint8_t *at = q;

				get_varint(&q, p, &v[k]);
				f[k].raw += q - at;
				col_put(&f[k], at, q - at);
			}
			{
				uint64_t t = prev_time + unzigzag(v[0]), us = t / 1000;
				uint64_t *tp = &tid_prev[v[2] & 0xffff];
				uint64_t key = v[5] << 32 | v[6], h = key * 0x9e3779b97f4a7c15ull;
				size_t j;

				col_varint(&f[F_TIME_US], zigzag((int64_t)(us - prev_us)));
				col_varint(&f[F_TIME_TID], zigzag((int64_t)(t - *tp - period)));
				col_varint(&f[F_TIME_TID_US],
					   zigzag((int64_t)(us - *tp / 1000 - period / 1000)));
				*tp = t;
				prev_time = t;
				prev_us = us;
				for (j = h >> 48 & (pairs_cap - 1); pairs[j].id && pairs[j].key != key;
				     j = (j + 1) & (pairs_cap - 1))
					;
				if (!pairs[j].id && npairs < pairs_cap / 2) {
					pairs[j].key = key;
					pairs[j].id = ++npairs;
				}
				col_varint(&f[F_STACKS_PAIR], pairs[j].id);
			}
		}
		for (size_t i = 0; i < NFIELDS; i++)
			f[i].packed += zsize(f[i].col.p ? f[i].col.p : (uint8_t *)"", f[i].col.len, 3);
		pos += 20 + (uint64_t)csize;
	}
	free(data);
	free(file);
	free(pairs);
	if (!samples) {
		fprintf(stderr, "bench_storage: no samples in %s\n", path);
		return -1;
	}

	printf("\nwhere the bytes go (%" PRIu64 " blocks, %" PRIu64 " samples):\n", blocks, samples);
	printf("  file %" PRIu64 " B = header %" PRIu64 " + block headers %" PRIu64
	       " + zstd frames %" PRIu64 " + trailer %" PRIu64 "\n", file_size, header,
	       blocks * 20, csize_total, file_size - header - blocks * 20 - csize_total);
	printf("  records before compression: %.2f B/sample, compressed %.2f B/sample"
	       " (zstd -3, ratio %.2f); at zstd -19: %.2f B/sample\n",
	       (double)usize_total / samples, (double)csize_total / samples,
	       (double)usize_total / csize_total, (double)level19 / samples);
	printf("  %-8s %10s %12s %9s\n", "record", "count", "raw bytes", "B/sample");
	for (int t = 1; t < 256; t++) {
		if (!type_count[t])
			continue;
		printf("  %-8s %10" PRIu64 " %12" PRIu64 " %9.3f\n",
		       t < 10 ? type_names[t] : "unknown", type_count[t], type_bytes[t],
		       (double)type_bytes[t] / samples);
	}
	printf("  (record type and length bytes: %.2f B/sample of the above)\n",
	       (double)framing / samples);
	printf("  sample fields, raw varint bytes and each field compressed alone"
	       " (zstd -3, per block):\n");
	printf("  %-38s %9s %11s\n", "field", "raw B/smp", "alone B/smp");
	for (size_t i = 0; i < NFIELDS; i++) {
		char raw[32] = "-";

		if (i <= F_KSTACK)
			snprintf(raw, sizeof(raw), "%.3f", (double)f[i].raw / samples);
		printf("  %-38s %9s %11.3f\n", f[i].name, raw, (double)f[i].packed / samples);
	}
	{
		double columnar = 0, base = 0;

		for (size_t i = 0; i <= F_KSTACK; i++)
			base += (double)f[i].packed / samples;
		base += (double)f[F_OTHER].packed / samples;
		columnar = base;
		printf("  columnar, as the row fields: %.2f B/sample (+ block headers %.3f)\n",
		       columnar, (double)blocks * 20 / samples);
		printf("    with times in us:                            %.2f\n",
		       columnar - (double)f[F_TIME].packed / samples +
		       (double)f[F_TIME_US].packed / samples);
		printf("    with per-thread delta-of-delta times (ns):   %.2f\n",
		       columnar - (double)f[F_TIME].packed / samples +
		       (double)f[F_TIME_TID].packed / samples);
		printf("    with per-thread delta-of-delta times (us):   %.2f\n",
		       columnar - (double)f[F_TIME].packed / samples +
		       (double)f[F_TIME_TID_US].packed / samples);
		printf("    and no pid, weight (implied), one stack-pair id: %.2f\n",
		       columnar - (double)(f[F_TIME].packed + f[F_PID].packed + f[F_WEIGHT].packed +
					   f[F_USTACK].packed + f[F_KSTACK].packed) / samples +
		       (double)(f[F_TIME_TID_US].packed + f[F_STACKS_PAIR].packed) / samples);
	}
	for (size_t i = 0; i < NFIELDS; i++)
		free(f[i].col.p);
	return 0;
}

/* ---- the benchmark ---- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_storage [--samples N] [--hz HZ] [--seed S] [--out FILE] [--breakdown]\n"
		"                     [--stacks N] [--chaos]\n"
		"\n"
		"Write a synthetic %u-thread recording of N samples (default 60 s at 999 Hz)\n"
		"with the profile writer, read it back, and print bytes per sample and the\n"
		"encode and decode throughput. --out keeps the file at FILE; --breakdown\n"
		"shows where its bytes go. Exits non-zero when what is read back differs\n"
		"from what was written.\n", NTHREADS);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "samples", required_argument, NULL, 'n' },
		{ "hz", required_argument, NULL, 'f' },
		{ "seed", required_argument, NULL, 's' },
		{ "out", required_argument, NULL, 'o' },
		{ "breakdown", no_argument, NULL, 'b' },
		{ "stacks", required_argument, NULL, 'S' },
		{ "chaos", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned hz = 999, seed = 1;
	size_t nsamples = 0;
	const char *out = NULL;
	bool show_breakdown = false, chaos = false, keep;
	unsigned long user_stacks = 0;
	char tmp_path[4096];
	struct proc_model procs[NPROCS];
	struct thread_model threads[NTHREADS];
	struct func kfuncs[KERNEL_FUNCS];
	struct pool kpool = { 0 };
	struct event *ev;
	uint64_t start = 12345678901234ull, sum_w = 0, sum_r = 0, frames_w = 0, frames_r = 0;
	uint64_t samples_r = 0, lost_w = 0, lost_r = 0, stacks_r = 0, block_start;
	struct profile_diag diag = { "" };
	struct profile_writer *w;
	struct profile_reader *r;
	struct profile_record rec;
	uint8_t ubuf[SFU_CBF_BOUND(MAX_DEPTH)], kbuf[SFU_CBF_BOUND(MAX_DEPTH)];
	double t0, t_enc, t_dec;
	struct stat st;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "n:f:s:o:bS:ch", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			nsamples = strtoull(optarg, NULL, 0);
			break;
		case 'f':
			hz = strtoul(optarg, NULL, 0);
			break;
		case 's':
			seed = strtoul(optarg, NULL, 0);
			break;
		case 'o':
			out = optarg;
			break;
		case 'b':
			show_breakdown = true;
			break;
		case 'S':
			user_stacks = strtoul(optarg, NULL, 0);
			break;
		case 'c':
			chaos = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !hz || hz > 100000 || (user_stacks && (user_stacks < 3 * NPROCS ||
								      user_stacks > 30000))) {
		usage(stderr);
		return 2;
	}
	if (!nsamples)
		nsamples = (size_t)NTHREADS * hz * 60;
	if (user_stacks) {
		unsigned total = proc_stacks[0] + proc_stacks[1] + proc_stacks[2];

		for (unsigned i = 0; i < NPROCS; i++)
			proc_stacks[i] = proc_stacks[i] * user_stacks / total;
	}
	keep = out != NULL;
	if (!out) {
		const char *dir = getenv("TMPDIR");

		snprintf(tmp_path, sizeof(tmp_path), "%s/bench_storage.%d.data",
			 dir && *dir ? dir : "/tmp", (int)getpid());
		out = tmp_path;
	}

	/* the programs and the stream, made before any clock starts */
	rng_state = seed;
	for (unsigned i = 0, t = 0; i < NPROCS; i++) {
		build_proc(&procs[i], 2000 + 137 * i, proc_stacks[i]);
		for (unsigned k = 0; k < proc_threads[i]; k++, t++)
			threads[t] = (struct thread_model){
				procs[i].pid, procs[i].pid + k, &procs[i], k % 8 };
	}
	build_kernel(kfuncs, &kpool);
	ev = make_events(nsamples, hz, threads, &kpool, start, chaos);

	/* encode: CBF encoding of every stack and the writer, wall time */
	t0 = now_s();
	{
		struct profile_meta meta = {
			.flags = PROFILE_F_COMMAND, .created_ns = 1763700000000000000ull,
			.freq_hz = hz, .stack_size = 16384,
			.clock_offset_ns = 1763700000000000000ull - start,
			.host = "bench", .release = "6.12.0", .machine = "x86_64",
			.cmdline = "sfprof record -F 999 -- ./workload",
		};

		w = profile_writer__create(out, &meta, &diag);
		if (!w) {
			fprintf(stderr, "bench_storage: %s\n", diag.reason);
			return 1;
		}
	}
	for (unsigned i = 0, t = 0; i < NPROCS; i++) {
		write_process(w, &procs[i], i, start);
		for (unsigned k = 0; k < proc_threads[i]; k++, t++) {
			char comm[16];
			struct profile_thread th = { threads[t].pid, threads[t].tid, comm };

			snprintf(comm, sizeof(comm), "%s-%u", proc_comm[i], k);
			check(profile_writer__thread(w, &th), "thread");
		}
	}
	block_start = ev[0].time;
	for (size_t i = 0; i < nsamples; i++) {
		const struct event *e = &ev[i];
		const struct thread_model *t = &threads[e->thread];
		const struct stack *us = &t->proc->pool.stacks[e->ustack];
		const struct stack *ks = e->kstack >= 0 ? &kpool.stacks[e->kstack] : NULL;
		struct profile_sample s = {
			.time_ns = e->time, .pid = t->pid, .tid = t->tid, .cpu = e->cpu, .weight = 1,
			.ustack = ubuf, .kstack = kbuf,
		};
		struct sfu_cbf_enc enc;

		/* sfprof record writes a block a second at the latest */
		if (e->time - block_start >= 1000000000ull) {
			check(profile_writer__flush(w), "flush");
			block_start = e->time;
		}
		if (sfu_cbf_enc__init(&enc, 64, ubuf, sizeof(ubuf)) ||
		    sfu_cbf_encode_stack(&enc, us->addrs, us->n, MAX_DEPTH, false))
			check(-EINVAL, "CBF encoding");
		s.ustack_len = sfu_cbf_enc__len(&enc);
		if (ks) {
			if (sfu_cbf_enc__init(&enc, 64, kbuf, sizeof(kbuf)) ||
			    sfu_cbf_encode_stack(&enc, ks->addrs, ks->n, MAX_DEPTH, false))
				check(-EINVAL, "CBF encoding");
			s.kstack_len = sfu_cbf_enc__len(&enc);
		}
		check(profile_writer__sample(w, &s), "sample");
		if (i % 300000 == 150000) {
			struct profile_lost l = { e->time, e->cpu, 17 + i % 50 };

			check(profile_writer__lost(w, &l), "lost");
			lost_w += l.count;
		}
	}
	for (unsigned i = 0; i < NPROCS; i++) {
		struct profile_exit x = { ev[nsamples - 1].time + 1000 * i, procs[i].pid };

		check(profile_writer__exit(w, &x), "exit");
	}
	if (profile_writer__close(w, false, &diag)) {
		fprintf(stderr, "bench_storage: %s\n", diag.reason);
		return 1;
	}
	t_enc = now_s() - t0;

	/* what was written, summed outside the timed part */
	for (size_t i = 0; i < nsamples; i++) {
		const struct event *e = &ev[i];
		const struct thread_model *t = &threads[e->thread];
		const struct stack *us = &t->proc->pool.stacks[e->ustack];

		sum_w = sample_sum(sum_w, e->time, t->pid, t->tid, e->cpu, 1);
		for (size_t k = 0; k < us->n; k++)
			sum_w = mix(sum_w, us->addrs[k]);
		sum_w = mix(sum_w, 0x4b);	/* between the user and the kernel stack */
		frames_w += us->n;
		if (e->kstack >= 0) {
			const struct stack *ks = &kpool.stacks[e->kstack];

			for (size_t k = 0; k < ks->n; k++)
				sum_w = mix(sum_w, ks->addrs[k]);
			frames_w += ks->n;
		}
	}

	/* decode: the reader and CBF decoding of every sample's stacks */
	t0 = now_s();
	r = profile_reader__open(out, &diag);
	if (!r) {
		fprintf(stderr, "bench_storage: %s\n", diag.reason);
		return 1;
	}
	while ((ret = profile_reader__next(r, &rec)) > 0) {
		const uint8_t *cbf[2];
		size_t len[2];

		if (rec.type == PROFILE_REC_STACK) {
			stacks_r++;
			continue;
		}
		if (rec.type == PROFILE_REC_LOST)
			lost_r += rec.lost.count;
		if (rec.type != PROFILE_REC_SAMPLE)
			continue;
		samples_r++;
		sum_r = sample_sum(sum_r, rec.sample.time_ns, rec.sample.pid, rec.sample.tid,
				   rec.sample.cpu, rec.sample.weight);
		cbf[0] = rec.sample.ustack;
		len[0] = rec.sample.ustack_len;
		cbf[1] = rec.sample.kstack;
		len[1] = rec.sample.kstack_len;
		for (int k = 0; k < 2; k++) {
			struct sfu_cbf_dec dec;
			struct sfu_cbf_frame fr;

			if (k)
				sum_r = mix(sum_r, 0x4b);
			if (!cbf[k])
				continue;
			sfu_cbf_dec__init(&dec, cbf[k], len[k], 0, NULL);
			while (!sfu_cbf_dec__next(&dec, &fr)) {
				if (fr.kind == SFU_CBF_PC || fr.kind == SFU_CBF_RA) {
					sum_r = mix(sum_r, fr.value);
					frames_r++;
				} else if (fr.kind != SFU_CBF_END) {
					sum_r = mix(sum_r, ~0ull);	/* never written */
				}
			}
		}
	}
	t_dec = now_s() - t0;
	if (ret < 0) {
		fprintf(stderr, "bench_storage: reading %s: %s\n", out, strerror(-ret));
		return 1;
	}
	{
		const struct profile_status *s = profile_reader__status(r);

		if (s->bad_blocks || s->truncated || s->unknown_stacks || s->trailer_samples != nsamples)
			sum_r ^= 1;
	}
	profile_reader__free(r);

	if (stat(out, &st)) {
		perror(out);
		return 1;
	}
	printf("samples: %zu (%u threads of %u processes at %u Hz%s)\n", nsamples, NTHREADS, NPROCS,
	       hz, chaos ? ", --chaos" : "");
	printf("distinct stacks: %" PRIu64 " (%u user, %u kernel)\n", stacks_r,
	       proc_stacks[0] + proc_stacks[1] + proc_stacks[2], KERNEL_STACKS);
	printf("frames per sample: %.1f\n", (double)frames_w / nsamples);
	printf("file bytes: %lld\n", (long long)st.st_size);
	printf("bytes/sample: %.2f\n", (double)st.st_size / nsamples);
	printf("encode: %.0f samples/s\n", nsamples / t_enc);
	printf("decode: %.0f samples/s\n", nsamples / t_dec);
	if (show_breakdown && breakdown(out, hz))
		return 1;

	ret = 0;
	if (samples_r != nsamples || sum_r != sum_w || frames_r != frames_w || lost_r != lost_w) {
		fprintf(stderr, "bench_storage: read back %" PRIu64 " samples, %" PRIu64
			" frames, %" PRIu64 " lost (checksum %016" PRIx64 "); wrote %zu, %" PRIu64
			", %" PRIu64 " (checksum %016" PRIx64 ")\n", samples_r, frames_r, lost_r,
			sum_r, nsamples, frames_w, lost_w, sum_w);
		ret = 1;
	}
	if (!keep)
		unlink(out);
	for (unsigned i = 0; i < NPROCS; i++)
		pool_free(&procs[i].pool);
	pool_free(&kpool);
	free(ev);
	return ret;
}
