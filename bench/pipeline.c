/* SPDX-License-Identifier: BSD-2-Clause */
/* Benchmark: sfprof record's path after the BPF ring (unwind, encode, write) on its own stack. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "record/pipeline.h"
#include "record/procs.h"
#include "record/recorder.h"
#include "snapshot.h"

#define DEPTH_MAX	200	/* the deepest chain of ours */
#define VARIANTS	16	/* snapshots per depth: 4 innermost functions x 4 qsort positions */
#define EXPECT_MAX	(DEPTH_MAX + 4)
#define REF_MAX		1024	/* frames of the reference unwind */
#define KEPT_FRAMES	RECORDER_MAX_DEPTH	/* frames a stack keeps, as sfprof record */
#define COPY_START	RECORDER_STACK_START	/* sfprof record's first copy, sized per thread */
#define PERIOD_NS	1001001	/* samples 999 Hz apart, as sfprof record's default */
#define TICK_EVERY	8192	/* samples between two profile_writer__tick(), about once a second */
#define TARGET		200000	/* samples per second per core the record path must sustain */

static const unsigned bench_depths[] = { 10, 30, 60, 120, 200 };
#define NDEPTHS (sizeof(bench_depths) / sizeof(bench_depths[0]))

/* One sample as the ring would bring it, and what unwinding it must give. */
struct snapshot {
	struct sample_hdr h;
	uint8_t *ustack;	/* h.ustack_len bytes from h.sp */
	unsigned depth;		/* functions of our chain (the qsort comparator included) */
	/*
	 * Addresses the chain recorded as it ran, innermost first: the pc, the
	 * return address of each level, then those of capture_snapshot(),
	 * take_snapshots() and main(). The unwind must give all of them in this
	 * order; the frames of qsort_r and above main come between.
	 */
	uint64_t expect[EXPECT_MAX];
	size_t nexpect;
	uint64_t *ref;		/* the reference unwind's frames, for the file's stacks */
	size_t frames;
	size_t by_source[SFU_SRC_GOPCLNTAB + 1];
	const uint8_t *seen_cbf;	/* the stack bytes of the file already checked against it */
};

/* --- the workload: a chain of known depth that copies its own stack --- */

struct chain {
	struct snapshot *snap;
	struct sfu_snap_regs regs;	/* filled by SFU_SNAP__READ_REGS */
	uint64_t stack_top;
	uint8_t *buf;		/* MAX_USTACK_BYTES */
	size_t len;
	unsigned rotation;	/* which of the ring's functions is innermost */
	int hop;		/* the level that calls qsort_r; the comparator is hop - 1 */
	bool hopped;		/* qsort_r may call the comparator more than once */
	int hop_levels;		/* what the comparator's part of the chain returned */
	uint64_t sink;		/* step_saved's values, live across its call */
};

/* Copy the stack with plain loads: no call may run between the register read and the copy. */
static inline __attribute__((always_inline)) void copy_stack(struct chain *c)
{
	const volatile uint64_t *src = (const volatile uint64_t *)(uintptr_t)c->regs.sp;
	uint64_t *dst = (uint64_t *)c->buf;
	uint64_t len = (c->stack_top - c->regs.sp) & ~(uint64_t)7;

	/* the BPF sampler copies at most this much too: a deeper stack is cut */
	if (len > MAX_USTACK_BYTES)
		len = MAX_USTACK_BYTES;
	for (uint64_t w = 0; w < len / 8; w++)
		dst[w] = src[w];
	c->len = len;
}

#define CAPTURE(c)                                                                     \
	do {                                                                           \
		SFU_SNAP__READ_REGS(&(c)->regs);                                       \
		copy_stack(c);                                                         \
	} while (0)

/* level n's return address is frame n + 1 of the snapshot, libc's frames aside */
#define RECORD_RA(c, n) \
	((c)->snap->expect[(n) + 1] = (uint64_t)(uintptr_t)__builtin_return_address(0))

typedef int step_fn(struct chain *c, int n);
static step_fn step_plain, step_array, step_saved, step_alloca, step_qsort;

/*
 * Four frame shapes call each other in a ring, and one level goes through
 * libc's qsort_r, whose frames only .eh_frame describes. Each function does
 * work after its call, so no call is a tail call; SFU_SNAP_NOINLINE keeps
 * each one a real frame.
 */
static step_fn *next_step(const struct chain *c, int n)
{
	static step_fn *const ring[] = { step_plain, step_array, step_saved, step_alloca };

	return n == c->hop ? step_qsort : ring[((unsigned)n + c->rotation) % 4];
}

/* The smallest frame: the return address and alignment. */
SFU_SNAP_NOINLINE static int step_plain(struct chain *c, int n)
{
	RECORD_RA(c, n);
	if (n == 0) {
		CAPTURE(c);
		return 1;
	}
	return next_step(c, n - 1)(c, n - 1) + 1;
}

/* A fixed local array: the stack pointer moves by a constant. */
SFU_SNAP_NOINLINE static int step_array(struct chain *c, int n)
{
	volatile uint64_t scratch[6];

	RECORD_RA(c, n);
	scratch[n % 6] = (uint64_t)n;
	if (n == 0) {
		CAPTURE(c);
		return 1 + (int)(scratch[0] - scratch[0]);
	}
	return next_step(c, n - 1)(c, n - 1) + 1 + (int)(scratch[n % 6] - (uint64_t)n);
}

/* Values live across the call: callee-saved registers pushed in the prologue. */
SFU_SNAP_NOINLINE static int step_saved(struct chain *c, int n)
{
	uint64_t a = c->stack_top ^ (uint64_t)n, b = c->len + (uint64_t)n, d = (uint64_t)n * 3;
	int r;

	RECORD_RA(c, n);
	if (n == 0) {
		CAPTURE(c);
		return 1;
	}
	r = next_step(c, n - 1)(c, n - 1);
	c->sink ^= a * b + d;
	return r + 1;
}

/* A variable-size frame: the CFA is found from rbp / x29 even without frame pointers elsewhere. */
SFU_SNAP_NOINLINE static int step_alloca(struct chain *c, int n)
{
	volatile uint8_t *area = __builtin_alloca(16 + (size_t)(n & 3) * 16);

	RECORD_RA(c, n);
	area[0] = (uint8_t)n;
	if (n == 0) {
		CAPTURE(c);
		return 1 + area[0];
	}
	return next_step(c, n - 1)(c, n - 1) + 1 + (area[0] - (uint8_t)n);
}

/* Level hop - 1, called back by qsort_r: its return address is inside libc. */
SFU_SNAP_NOINLINE static int step_compare(const void *a, const void *b, void *arg)
{
	struct chain *c = arg;
	int n = c->hop - 1;

	if (!c->hopped) {
		c->hopped = true;
		RECORD_RA(c, n);
		c->hop_levels = next_step(c, n - 1)(c, n - 1) + 1;
	}
	return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

SFU_SNAP_NOINLINE static int step_qsort(struct chain *c, int n)
{
	int pair[2] = { 2, 1 };

	RECORD_RA(c, n);
	qsort_r(pair, 2, sizeof(pair[0]), step_compare, c);
	return c->hop_levels + 1 + (pair[0] - 1);
}

/*
 * Capture one snapshot at the bottom of a chain of @depth levels (3 or
 * more), the qsort_r hop at level @hop (2 .. depth - 1). @return 0, or
 * -EINVAL when the chain did not run as built, -E2BIG when the stack does
 * not fit a copy, -ENOMEM.
 */
SFU_SNAP_NOINLINE static int capture_snapshot(struct snapshot *s, struct chain *c, unsigned depth,
					      unsigned rotation, int hop)
{
	int levels;

	memset(s, 0, sizeof(*s));
	c->snap = s;
	c->rotation = rotation;
	c->hop = hop;
	c->hopped = false;
	s->depth = depth;
	s->expect[depth + 1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	levels = next_step(c, (int)depth - 1)(c, (int)depth - 1);
	if (levels != (int)depth || c->regs.sp >= c->stack_top)
		return -EINVAL;
	if (c->stack_top - c->regs.sp > MAX_USTACK_BYTES)
		return -E2BIG;
	s->ustack = malloc(c->len);
	if (!s->ustack)
		return -ENOMEM;
	memcpy(s->ustack, c->buf, c->len);
	s->expect[0] = c->regs.pc;
	s->h = (struct sample_hdr){
		.pid = (uint32_t)getpid(), .tid = (uint32_t)gettid(), .flags = SAMPLE_F_USER_REGS,
		.pc = c->regs.pc, .sp = c->regs.sp, .fp = c->regs.fp, .lr = c->regs.lr,
		.ustack_len = (uint32_t)c->len,
	};
	prctl(PR_GET_NAME, s->h.comm);
	return 0;
}

/* Every depth, VARIANTS snapshots each. @main_ra: main's return address. @return 0 or -errno. */
SFU_SNAP_NOINLINE static int take_snapshots(struct snapshot *snaps, uint64_t main_ra)
{
	uint64_t self_ra = (uint64_t)(uintptr_t)__builtin_return_address(0);
	struct chain c = { 0 };
	int err;

	err = bench_stack_top(&c.stack_top);
	if (err)
		return err;
	c.buf = malloc(MAX_USTACK_BYTES);
	if (!c.buf)
		return -ENOMEM;
	for (size_t d = 0; d < NDEPTHS; d++) {
		unsigned depth = bench_depths[d];

		for (unsigned v = 0; v < VARIANTS; v++) {
			/* the hop from near the leaf to near main */
			int hop = 2 + (int)((depth - 3) * (v / 4) / 3);
			struct snapshot *s = &snaps[d * VARIANTS + v];

			err = capture_snapshot(s, &c, depth, v % 4, hop);
			if (err)
				goto out;
			s->expect[depth + 2] = self_ra;
			s->expect[depth + 3] = main_ra;
			s->nexpect = depth + 4;
		}
	}
	err = 0;
out:
	free(c.buf);
	return err;
}

static void snapshots__free(struct snapshot *snaps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(snaps[i].ustack);
		free(snaps[i].ref);
	}
}

/*
 * Unwind each snapshot once with libsfunwind directly, outside the record
 * path: the frames must hold every address the chain recorded, in order,
 * and end at the outermost frame. They are then what each stack of the
 * file must be. @return 0, or -1 with the failure printed.
 */
static int reference_unwind(struct snapshot *snaps, size_t n)
{
	SFU_OPTS(sfu_unwind_opts, opts, .arch = SFU_ARCH_HOST);
	struct sfu_frame frames[REF_MAX];
	struct sfu_diag diag = { 0 };
	struct sfu_addrspace *as;
	int ret = -1;

	as = sfu_addrspace__new(NULL, NULL);
	if (!as || sfu_addrspace__load_pid(as, getpid(), &diag)) {
		fprintf(stderr, "pipeline: cannot load this process's mappings\n");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct snapshot *s = &snaps[i];
		struct sfu_regs regs = { s->h.pc, s->h.sp, s->h.fp, s->h.lr };
		struct sfu_snapshot mem = { s->h.sp, s->ustack, s->h.ustack_len };
		size_t count = 0, j = 0;
		int stop;

		stop = sfu_unwind(as, &opts, &regs, sfu_snapshot_read, &mem, frames, REF_MAX, &count);
		for (size_t k = 0; k < count && j < s->nexpect; k++)
			j += frames[k].addr == s->expect[j];
		if (stop != SFU_STOP_OUTERMOST || j != s->nexpect || frames[0].addr != s->expect[0]) {
			fprintf(stderr, "pipeline: %u-level snapshot %zu: %zu frames, stopped (%s) at "
				"%#" PRIx64 "; %zu of the %zu addresses the chain recorded found, "
				"the next %#" PRIx64 "\n",
				s->depth, i % VARIANTS, count, sfu_stop_name(stop),
				count ? frames[count - 1].addr : 0, j, s->nexpect,
				j < s->nexpect ? s->expect[j] : 0);
			goto out;
		}
		s->ref = malloc(count * sizeof(*s->ref));
		if (!s->ref) {
			fprintf(stderr, "pipeline: out of memory\n");
			goto out;
		}
		for (size_t k = 0; k < count; k++) {
			s->ref[k] = frames[k].addr;
			s->by_source[frames[k].source <= SFU_SRC_GOPCLNTAB ? frames[k].source : 0]++;
		}
		s->frames = count;
	}
	ret = 0;
out:
	sfu_addrspace__free(as);
	return ret;
}

/* --- the record path --- */

struct clocks {
	struct timespec cpu, wall;
};

static void clocks__now(struct clocks *c)
{
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c->cpu);
	clock_gettime(CLOCK_MONOTONIC, &c->wall);
}

static double seconds(const struct timespec *from, const struct timespec *to)
{
	return (double)(to->tv_sec - from->tv_sec) + (double)(to->tv_nsec - from->tv_nsec) * 1e-9;
}

/* Add the time since @start to *@cpu and *@wall. */
static void clocks__add_since(const struct clocks *start, double *cpu, double *wall)
{
	struct clocks now;

	clocks__now(&now);
	*cpu += seconds(&start->cpu, &now.cpu);
	*wall += seconds(&start->wall, &now.wall);
}

/*
 * One recording: a new process table over a new file, fed from one set of
 * snapshots. As in sfprof record, whose unwinding threads share the writer
 * and the module cache, the writer is called under a lock (uncontended
 * here) and modules come from a cache with the disk cache of .eh_frame
 * tables and no symbol tables.
 */
struct run {
	const char *path;
	struct profile_writer *w;
	pthread_mutex_t wlock;
	struct sfu_cache *cache;
	struct procs *procs;
	const struct snapshot *snaps;
	size_t nsnaps;
	uint64_t fed;		/* samples given to procs__sample() so far */
	uint64_t time0;		/* of the first: sample k is at time0 + k * PERIOD_NS */
};

static void on_warn(void *ctx, uint32_t pid, const char *comm, const char *why)
{
	(void)ctx;
	fprintf(stderr, "pipeline: process %u (%s): %s\n", pid, comm, why);
}

static void remove_file(const char *path)
{
	char old[4096];

	unlink(path);
	/* the writer renames what it finds at the path; nothing of ours may stay behind */
	snprintf(old, sizeof(old), "%s.old", path);
	unlink(old);
}

/* Create the file and the table, learn this process. @return 0, or -1 with the failure printed. */
static int run__start(struct run *r, const char *path, const struct snapshot *snaps, size_t n)
{
	struct profile_meta meta = {
		.flags = PROFILE_F_COMMAND, .freq_hz = 999, .stack_size = COPY_START,
		.host = "bench", .machine = "pipeline", .cmdline = "bench/pipeline",
	};
	struct profile_diag diag = { "" };
	struct timespec now;
	int err;

	clock_gettime(CLOCK_REALTIME, &now);
	meta.created_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	clock_gettime(CLOCK_MONOTONIC, &now);
	*r = (struct run){ .path = path, .wlock = PTHREAD_MUTEX_INITIALIZER, .snaps = snaps,
			   .nsnaps = n,
			   .time0 = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec };
	meta.clock_offset_ns = meta.created_ns - r->time0;
	r->w = profile_writer__create(path, &meta, &diag);
	if (!r->w) {
		fprintf(stderr, "pipeline: %s\n", diag.reason);
		return -1;
	}
	r->cache = procs__new_cache();
	if (!r->cache) {
		fprintf(stderr, "pipeline: procs__new_cache: %s\n", strerror(errno));
		return -1;
	}
	r->procs = procs__new(r->w, &r->wlock, r->cache, SFU_ARCH_HOST, KEPT_FRAMES);
	if (!r->procs) {
		fprintf(stderr, "pipeline: procs__new: %s\n", strerror(errno));
		return -1;
	}
	procs__set_copy_sizes(r->procs, COPY_START, true);
	procs__set_warn(r->procs, on_warn, NULL);
	err = procs__scan(r->procs, getpid());
	if (err) {
		fprintf(stderr, "pipeline: procs__scan: %s\n", strerror(-err));
		return -1;
	}
	return 0;
}

/* The timed loop: @count samples, the snapshots in turn. */
static void run__feed(struct run *r, uint64_t count)
{
	struct procs_copy_use use;

	for (uint64_t i = 0; i < count; i++, r->fed++) {
		struct sample_hdr h = r->snaps[r->fed % r->nsnaps].h;

		h.time_ns = r->time0 + r->fed * PERIOD_NS;
		procs__sample(r->procs, &h, NULL, r->snaps[r->fed % r->nsnaps].ustack, &use);
		if (r->fed % TICK_EVERY == TICK_EVERY - 1)
			profile_writer__tick(r->w);
	}
}

/* Every sample fed must have been written with a complete user stack. @return 0, or -1 with why. */
static int run__check(const struct run *r, const char *what)
{
	const struct procs_stats *st = procs__stats(r->procs);
	int err = procs__error(r->procs);

	if (err) {
		fprintf(stderr, "pipeline: %s: writing %s: %s\n", what, r->path, strerror(-err));
		return -1;
	}
	if (st->samples != r->fed || st->user_stacks != r->fed || st->complete != r->fed ||
	    st->unknown_pid || st->copy_ran_out) {
		fprintf(stderr, "pipeline: %s: %" PRIu64 " samples fed, %" PRIu64 " written, %" PRIu64
			" user stacks, %" PRIu64 " complete, %" PRIu64 " of an unknown process, %"
			PRIu64 " cut by their copy: the stacks are broken, the figures mean nothing\n",
			what, r->fed, st->samples, st->user_stacks, st->complete, st->unknown_pid,
			st->copy_ran_out);
		return -1;
	}
	return 0;
}

/* Close the file. @return 0, or -1 with the failure printed. */
static int run__close(struct run *r)
{
	struct profile_diag diag = { "" };
	int err;

	procs__free(r->procs);
	r->procs = NULL;
	sfu_cache__free(r->cache);
	r->cache = NULL;
	err = profile_writer__close(r->w, false, &diag);
	r->w = NULL;
	if (err) {
		fprintf(stderr, "pipeline: closing %s: %s\n", r->path, diag.reason);
		return -1;
	}
	return 0;
}

/* For a run that failed: accepts a run never started. */
static void run__abandon(struct run *r)
{
	procs__free(r->procs);
	sfu_cache__free(r->cache);
	if (r->w)
		profile_writer__discard(r->w);
	*r = (struct run){ 0 };
}

/*
 * One stack of the file against the reference unwind of its snapshot: the
 * same frames, those cut from the middle counted by its `omit`, ending with
 * `end`. @return 0 or -1 with the difference printed.
 */
static int check_stack(const uint8_t *cbf, size_t len, const struct snapshot *s)
{
	struct sfu_cbf_frame f;
	struct sfu_cbf_dec dec;
	size_t k = 0;

	sfu_cbf_dec__init(&dec, cbf, len, 0, NULL);
	while (!sfu_cbf_dec__next(&dec, &f)) {
		switch (f.kind) {
		case SFU_CBF_PC:
		case SFU_CBF_RA:
			if (k >= s->frames || f.value != s->ref[k]) {
				fprintf(stderr, "pipeline: %u-level stack: frame %zu of the file is %#"
					PRIx64 ", its unwind gave %#" PRIx64 "\n", s->depth, k,
					f.value, k < s->frames ? s->ref[k] : 0);
				return -1;
			}
			k++;
			break;
		case SFU_CBF_OMIT:
			k += f.value;
			break;
		case SFU_CBF_END:
			if (k == s->frames)
				return 0;
			fprintf(stderr, "pipeline: %u-level stack: %zu frames in the file, %zu unwound\n",
				s->depth, k, s->frames);
			return -1;
		default:
			fprintf(stderr, "pipeline: %u-level stack: %s after %zu frames (%s)\n",
				s->depth, sfu_cbf_kind_name(f.kind), k,
				sfu_cbf_dec__error(&dec, NULL) ? sfu_cbf_dec__error(&dec, NULL) : "trunc");
			return -1;
		}
	}
	return -1;
}

/* Read the closed file back: every sample, each with its snapshot's stack. @return 0 or -1. */
static int run__verify(const struct run *r, struct snapshot *snaps)
{
	struct profile_diag diag = { "" };
	struct profile_reader *rd;
	struct profile_record rec;
	uint64_t samples = 0;
	int ret = -1, err;

	for (size_t i = 0; i < r->nsnaps; i++)
		snaps[i].seen_cbf = NULL;
	rd = profile_reader__open(r->path, &diag);
	if (!rd) {
		fprintf(stderr, "pipeline: reading %s back: %s\n", r->path, diag.reason);
		return -1;
	}
	while ((err = profile_reader__next(rd, &rec)) > 0) {
		const struct profile_sample *sm = &rec.sample;
		struct snapshot *s;
		uint64_t k;

		if (rec.type != PROFILE_REC_SAMPLE)
			continue;
		k = (sm->time_ns - r->time0) / PERIOD_NS;
		s = &snaps[k % r->nsnaps];
		samples++;
		if (k >= r->fed || !sm->ustack) {
			fprintf(stderr, "pipeline: %s: sample %" PRIu64 " %s\n", r->path, k,
				sm->ustack ? "was never fed" : "has no user stack");
			goto out;
		}
		/* stacks are interned: the same bytes need checking once */
		if (sm->ustack == s->seen_cbf)
			continue;
		if (check_stack(sm->ustack, sm->ustack_len, s))
			goto out;
		s->seen_cbf = sm->ustack;
	}
	if (err < 0) {
		fprintf(stderr, "pipeline: reading %s back: %s\n", r->path, strerror(-err));
		goto out;
	}
	if (samples != r->fed) {
		fprintf(stderr, "pipeline: %s: %" PRIu64 " samples read back, %" PRIu64 " fed\n",
			r->path, samples, r->fed);
		goto out;
	}
	ret = 0;
out:
	profile_reader__free(rd);
	return ret;
}

/* --- the runs --- */

struct figures {
	uint64_t samples;
	double frames;		/* per sample */
	double cpu, wall;	/* seconds */
	uint64_t bytes;		/* the closed file */
};

static void print_header(void)
{
	printf("%-8s %9s %8s %8s %8s %14s %10s %11s %8s\n", "stacks", "samples", "frames",
	       "CPU s", "wall s", "samples/s/core", "us/sample", "bytes", "B/sample");
}

static void print_figures(const char *name, const struct figures *f)
{
	printf("%-8s %9" PRIu64 " %8.1f %8.3f %8.3f %14.0f %10.2f %11" PRIu64 " %8.2f\n", name,
	       f->samples, f->frames, f->cpu, f->wall, (double)f->samples / f->cpu,
	       f->cpu * 1e6 / (double)f->samples, f->bytes, (double)f->bytes / (double)f->samples);
}

/*
 * Steady state: one pass over @snaps untimed (the process learned, the
 * unwind cache warm, the stacks in the file), then @count samples timed,
 * the file's closing included. @return 0 or -1.
 */
static int measure(const char *path, struct snapshot *snaps, size_t n, uint64_t count,
		   const char *what, struct figures *f)
{
	struct run r = { 0 };
	struct clocks start;
	struct stat st;
	double frames = 0;

	if (run__start(&r, path, snaps, n))
		goto fail;
	run__feed(&r, n);
	*f = (struct figures){ .samples = count };
	clocks__now(&start);
	run__feed(&r, count);
	if (run__check(&r, what))
		goto fail;
	if (run__close(&r))
		goto fail;
	clocks__add_since(&start, &f->cpu, &f->wall);
	if (stat(path, &st)) {
		fprintf(stderr, "pipeline: %s: %s\n", path, strerror(errno));
		goto fail;
	}
	f->bytes = (uint64_t)st.st_size;
	for (uint64_t k = n; k < n + count; k++)
		frames += (double)snaps[k % n].frames;
	f->frames = frames / (double)count;
	return run__verify(&r, snaps);
fail:
	run__abandon(&r);
	return -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * Cold start, @runs times: a new table learns the process on its first
 * sample (its mappings, its modules, their unwind tables), the first pass
 * finds every row with an empty unwind cache and writes stacks the file
 * has not seen, the second pass is warm. Prints the medians. @return 0 or -1.
 */
static int measure_cold(const char *path, struct snapshot *snaps, size_t n, unsigned runs)
{
	double *t = calloc((size_t)runs * 3, sizeof(*t)), wall = 0;
	struct run r = { 0 };
	int ret = -1;

	if (!t) {
		fprintf(stderr, "pipeline: out of memory\n");
		return -1;
	}
	for (unsigned i = 0; i < runs; i++) {
		double *first = &t[i], *pass1 = &t[runs + i], *pass2 = &t[2 * runs + i];
		struct clocks start;

		clocks__now(&start);
		if (run__start(&r, path, snaps, n))
			goto out;
		run__feed(&r, 1);
		clocks__add_since(&start, first, &wall);
		clocks__now(&start);
		run__feed(&r, n - 1);
		clocks__add_since(&start, pass1, &wall);
		clocks__now(&start);
		run__feed(&r, n);
		clocks__add_since(&start, pass2, &wall);
		if (run__check(&r, "cold start") || run__close(&r) || run__verify(&r, snaps))
			goto out;
		remove_file(path);
	}
	for (unsigned k = 0; k < 3; k++)
		qsort(&t[k * runs], runs, sizeof(*t), cmp_double);
	printf("# cold start, median of %u: a new table and file, %zu snapshots, one pass then "
	       "another\n", runs, n);
	printf("cold  first sample:   %8.1f us  (the file, the /proc scan, mappings, modules and "
	       "their unwind tables)\n", t[runs / 2] * 1e6);
	printf("cold  first pass:     %8.2f us/sample  %8.0f samples/s per core  (empty unwind cache, "
	       "new stacks)\n", t[runs + runs / 2] * 1e6 / (double)(n - 1),
	       (double)(n - 1) / t[runs + runs / 2]);
	printf("warm  second pass:    %8.2f us/sample  %8.0f samples/s per core\n",
	       t[2 * runs + runs / 2] * 1e6 / (double)n, (double)n / t[2 * runs + runs / 2]);
	ret = 0;
out:
	run__abandon(&r);
	free(t);
	return ret;
}

/*
 * One process's samples through the pipeline's threads (pipeline.h), all
 * queued before the threads start: the wall time from their start to their
 * end, with 1 and with @workers threads. The process's own thread takes its
 * samples in batches and the others, with nothing queued, unwind part of
 * each. @return 0 or -1.
 */
static int measure_threads(const char *path, const struct snapshot *snaps, size_t n,
			   uint64_t count, unsigned workers, struct figures *f, uint64_t *helped)
{
	struct profile_meta meta = { .flags = PROFILE_F_COMMAND, .freq_hz = 999,
				     .cmdline = "bench/pipeline threads" };
	struct profile_diag diag = { "" };
	pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER;
	struct pipeline_stats st;
	struct pipeline *pl = NULL;
	struct profile_writer *w;
	struct clocks start;
	struct stat fst;
	size_t bytes = 0;
	int ret = -1, err;

	for (uint64_t k = 0; k < count; k++)
		bytes += sizeof(struct sample_hdr) + snaps[k % n].h.ustack_len + 64;
	w = profile_writer__create(path, &meta, &diag);
	if (!w) {
		fprintf(stderr, "pipeline: %s\n", diag.reason);
		return -1;
	}
	struct pipeline_opts opts = {
		.workers = workers, .queue_bytes = bytes * workers + (8u << 20),
		.arch = SFU_ARCH_HOST, .max_depth = KEPT_FRAMES, .copy_start = COPY_START,
		.copy_adaptive = true,
	};
	pl = pipeline__new(w, &wlock, &opts);
	if (!pl || (err = pipeline__scan(pl, getpid()))) {
		fprintf(stderr, "pipeline: pipeline__new/scan: %s\n", strerror(pl ? -err : errno));
		goto out;
	}
	for (uint64_t k = 0; k < count; k++) {
		struct sample_hdr h = snaps[k % n].h;

		h.time_ns = 1000000 + k * PERIOD_NS;
		pipeline__sample(pl, &h, NULL, snaps[k % n].ustack);
	}
	*f = (struct figures){ .samples = count };
	clocks__now(&start);
	if ((err = pipeline__start(pl)) || (err = pipeline__finish(pl))) {
		fprintf(stderr, "pipeline: %u threads: %s\n", workers, strerror(-err));
		goto out;
	}
	clocks__add_since(&start, &f->cpu, &f->wall);
	pipeline__stats(pl, &st);
	if (st.procs.samples != count || st.procs.complete != count || st.dropped) {
		fprintf(stderr, "pipeline: %u threads: %" PRIu64 " samples queued, %" PRIu64
			" written, %" PRIu64 " complete, %" PRIu64 " dropped: the figures mean "
			"nothing\n", workers, count, st.procs.samples, st.procs.complete, st.dropped);
		goto out;
	}
	*helped = st.helped;
	pipeline__free(pl);
	pl = NULL;
	err = profile_writer__close(w, false, &diag);
	w = NULL;
	if (err) {
		fprintf(stderr, "pipeline: closing %s: %s\n", path, diag.reason);
		goto out;
	}
	if (!stat(path, &fst))
		f->bytes = (uint64_t)fst.st_size;
	ret = 0;
out:
	pipeline__free(pl);
	if (w)
		profile_writer__discard(w);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: pipeline [--samples N] [--cold-runs N] [--out FILE]\n"
		"\n"
		"Captures %u snapshots of its own stack (chains of %u to %u functions built\n"
		"with SFrame and no frame pointers, passing through libc's qsort_r), then\n"
		"feeds them to sfprof record's path after the BPF ring, procs__sample():\n"
		"unwind, CBF encoding and the profile writer, on one thread. Prints samples\n"
		"per second per core of the thread's CPU time for each depth and for all of\n"
		"them mixed (N samples each, default 200000), and a cold start (median of N\n"
		"runs, default 20). Every stack must unwind to the outermost frame and read\n"
		"back from the file as unwound, else it exits 1. --out keeps the mixed run's\n"
		"file at FILE (for sfprof script -i FILE).\n",
		(unsigned)(NDEPTHS * VARIANTS), bench_depths[0], bench_depths[NDEPTHS - 1]);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "samples", required_argument, NULL, 'n' },
		{ "cold-runs", required_argument, NULL, 'c' },
		{ "out", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct snapshot snaps[NDEPTHS * VARIANTS];
	uint64_t main_ra = (uint64_t)(uintptr_t)__builtin_return_address(0);
	const size_t nsnaps = NDEPTHS * VARIANTS;
	unsigned long long count = 200000;
	unsigned long cold_runs = 20;
	const char *out = NULL, *dir = getenv("TMPDIR");
	size_t by_source[SFU_SRC_GOPCLNTAB + 1] = { 0 };
	char tmp_path[4096], *end;
	struct figures f;
	int opt, err, ret = 1;

	while ((opt = getopt_long(argc, argv, "n:c:o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			errno = 0;
			count = strtoull(optarg, &end, 0);
			if (errno || *end || !count || optarg[0] == '-') {
				fprintf(stderr, "pipeline: --samples: not a positive count: %s\n", optarg);
				return 2;
			}
			break;
		case 'c':
			errno = 0;
			cold_runs = strtoul(optarg, &end, 0);
			if (errno || *end || !cold_runs || cold_runs > 100000 || optarg[0] == '-') {
				fprintf(stderr, "pipeline: --cold-runs: not a count of 1 to 100000: %s\n",
					optarg);
				return 2;
			}
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	snprintf(tmp_path, sizeof(tmp_path), "%s/sfprof-bench-pipeline.%d.data",
		 dir && *dir ? dir : "/tmp", (int)getpid());

	err = take_snapshots(snaps, main_ra);
	if (err) {
		fprintf(stderr, "pipeline: capturing the snapshots: %s\n", strerror(-err));
		goto out;
	}
	if (reference_unwind(snaps, nsnaps))
		goto out;
	for (size_t i = 0; i < nsnaps; i++)
		for (size_t k = 0; k <= SFU_SRC_GOPCLNTAB; k++)
			by_source[k] += snaps[i].by_source[k];

	printf("# sfprof record's path after the ring (procs__sample: unwind, CBF, profile writer)\n"
	       "# on %zu snapshots of this process, one thread; %d frames kept per stack, copies up\n"
	       "# to %d KiB; frames found by: sframe %zu, eh_frame %zu, gopclntab %zu, fp %zu (%zu pcs)\n",
	       nsnaps, KEPT_FRAMES, MAX_USTACK_BYTES / 1024, by_source[SFU_SRC_SFRAME],
	       by_source[SFU_SRC_EH_FRAME], by_source[SFU_SRC_GOPCLNTAB], by_source[SFU_SRC_FP],
	       by_source[SFU_SRC_NONE]);
	if (measure_cold(tmp_path, snaps, nsnaps, (unsigned)cold_runs))
		goto out;

	printf("# warm: %llu samples per line after a pass untimed; the file's closing included\n",
	       count);
	print_header();
	for (size_t d = 0; d < NDEPTHS; d++) {
		char name[16];

		snprintf(name, sizeof(name), "depth%u", bench_depths[d]);
		if (measure(tmp_path, &snaps[d * VARIANTS], VARIANTS, count, name, &f))
			goto out;
		remove_file(tmp_path);
		print_figures(name, &f);
		fflush(stdout);
	}
	if (measure(out ? out : tmp_path, snaps, nsnaps, count, "mixed", &f))
		goto out;
	print_figures("mixed", &f);
	printf("target: %d samples/s per core: %s (mixed: %.0f)\n", TARGET,
	       (double)f.samples / f.cpu >= TARGET ? "met" : "NOT met",
	       (double)f.samples / f.cpu);
	remove_file(tmp_path);

	{
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		unsigned most = cpus < 2 ? 2 : cpus > 4 ? 4 : (unsigned)cpus;
		double one = 0;

		printf("# one process through the pipeline's threads: %llu mixed samples queued, then "
		       "the threads started;\n# wall time from their start to their end (%ld CPUs)\n",
		       count, cpus);
		printf("%-8s %9s %8s %14s %10s %s\n", "threads", "samples", "wall s", "samples/s",
		       "speed-up", "unwound by a helping thread");
		for (unsigned t = 1; t <= most; t++) {
			uint64_t helped = 0;

			if (measure_threads(tmp_path, snaps, nsnaps, count, t, &f, &helped))
				goto out;
			remove_file(tmp_path);
			if (t == 1)
				one = (double)f.samples / f.wall;
			printf("%-8u %9" PRIu64 " %8.3f %14.0f %9.2fx %.1f%%\n", t, f.samples, f.wall,
			       (double)f.samples / f.wall, (double)f.samples / f.wall / one,
			       100.0 * (double)helped / (double)f.samples);
			fflush(stdout);
		}
	}
	ret = 0;
out:
	remove_file(tmp_path);
	snapshots__free(snaps, nsnaps);
	return ret;
}
