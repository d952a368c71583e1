/* SPDX-License-Identifier: BSD-2-Clause */
/* The record pipeline: samples through 1-4 unwinding threads into a profile, the order of task events, the queue bound. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "record/pipeline.h"
#include "record/proctab.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Pids no process has (pid_max is at most 2^22): nothing of them is read from /proc. */
#define PID_BASE 4200000u
/* A second thread of a synthetic process: its pid plus this, odd so that pid % n and tid % n differ. */
#define TID_OFFSET 100001u

/* The address sanitizer: it sees malloc()ed memory leak, not mapped memory. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif

#if defined(__aarch64__)
#define TEST_ARCH SFU_ARCH_AARCH64
#else
#define TEST_ARCH SFU_ARCH_X86_64
#endif

/* ---- the file a pipeline writes, and its reading back ---- */

struct fixture {
	char *dir, *path;
	struct profile_writer *w;
	pthread_mutex_t wlock;
};

static const struct profile_meta meta = { .cmdline = "test_pipeline" };

static void fixture_open(struct fixture *f)
{
	struct profile_diag diag = { "" };

	memset(f, 0, sizeof(*f));
	f->dir = make_temp_dir_or_fail();
	/* the pipeline keeps derived tables under $XDG_CACHE_HOME/sfprof: not in the user's */
	assert_int_equal(setenv("XDG_CACHE_HOME", f->dir, 1), 0);
	f->path = path_join_or_fail(f->dir, "pipeline.data");
	f->w = profile_writer__create(f->path, &meta, &diag);
	if (!f->w)
		fail_msg("%s: %s", f->path, diag.reason);
	pthread_mutex_init(&f->wlock, NULL);
}

static void fixture_close(struct fixture *f)
{
	if (f->w)
		profile_writer__discard(f->w);
	pthread_mutex_destroy(&f->wlock);
	remove_temp_dir(path_join_or_fail(f->dir, "sfprof"));
	remove_temp_dir(f->dir);
	free(f->path);
}

static struct pipeline *pipeline_or_fail(struct fixture *f, unsigned workers, size_t queue_bytes)
{
	struct pipeline_opts opts = {
		.workers = workers, .queue_bytes = queue_bytes, .arch = TEST_ARCH,
		.max_depth = 64, .copy_start = 16384,
	};
	struct pipeline *pl = pipeline__new(f->w, &f->wlock, &opts);

	if (!pl)
		fail_msg("pipeline__new(%u workers): %s", workers, strerror(errno));
	return pl;
}

/* One record of the file, as much of it as the cases look at. */
struct got_rec {
	enum profile_rec type;
	uint32_t pid, tid, cpu;
	uint64_t time_ns;
	char comm[32];
	uint64_t kaddrs[16];	/* the kernel stack, innermost first */
	size_t kdepth;
	uint64_t uaddrs[64];	/* the user stack (test_helping's), innermost first */
	size_t udepth;
	bool ucomplete;		/* it ends in `end`, not `trunc` */
};

struct readback {
	struct got_rec *recs;
	size_t n;
	size_t samples;
	uint64_t trailer_samples;
};

/* The addresses of a kernel stack: a pc, then return addresses, then the end. */
static void _decode_kstack(const uint8_t *cbf, size_t len, struct got_rec *g, const char *file,
			   int line)
{
	struct sfu_cbf_frame frames[ARRAY_SIZE(g->kaddrs) + 1];
	size_t n = 0;

	g->kdepth = 0;
	if (!cbf)
		return;
	if (sfu_cbf_decode(cbf, len, 0, frames, ARRAY_SIZE(frames), &n, NULL, NULL) || !n ||
	    frames[n - 1].kind != SFU_CBF_END) {
		print_error("kernel stack of %zu bytes does not decode to a whole stack\n", len);
		_fail(file, line);
	}
	for (size_t i = 0; i + 1 < n; i++) {
		if (frames[i].kind != (i ? SFU_CBF_RA : SFU_CBF_PC)) {
			print_error("kernel frame %zu is a %s\n", i, sfu_cbf_kind_name(frames[i].kind));
			_fail(file, line);
		}
		g->kaddrs[g->kdepth++] = frames[i].value;
	}
}

static void _decode_ustack(const uint8_t *cbf, size_t len, struct got_rec *g, const char *file,
			   int line)
{
	struct sfu_cbf_frame frames[ARRAY_SIZE(g->uaddrs) + 1];
	size_t n = 0;

	g->udepth = 0;
	g->ucomplete = false;
	if (!cbf)
		return;
	if (sfu_cbf_decode(cbf, len, 0, frames, ARRAY_SIZE(frames), &n, NULL, NULL) || !n ||
	    (frames[n - 1].kind != SFU_CBF_END && frames[n - 1].kind != SFU_CBF_TRUNCATED)) {
		print_error("user stack of %zu bytes does not decode to a whole stack\n", len);
		_fail(file, line);
	}
	g->ucomplete = frames[n - 1].kind == SFU_CBF_END;
	for (size_t i = 0; i + 1 < n; i++)
		g->uaddrs[g->udepth++] = frames[i].value;
}

/* Close the writer and read every record of the file back. */
static void _close_and_read(struct fixture *f, struct readback *rb, const char *file, int line)
{
	struct profile_diag diag = { "" };
	struct profile_reader *r;
	struct profile_record rec;
	size_t cap = 0;
	int ret;

	memset(rb, 0, sizeof(*rb));
	if (profile_writer__close(f->w, false, &diag)) {
		f->w = NULL;
		print_error("close: %s\n", diag.reason);
		_fail(file, line);
	}
	f->w = NULL;
	r = profile_reader__open(f->path, &diag);
	if (!r) {
		print_error("%s: %s\n", f->path, diag.reason);
		_fail(file, line);
	}
	while ((ret = profile_reader__next(r, &rec)) > 0) {
		struct got_rec *g;

		if (rb->n == cap) {
			cap = cap ? 2 * cap : 1024;
			rb->recs = realloc(rb->recs, cap * sizeof(*rb->recs));
			assert_non_null(rb->recs);
		}
		g = &rb->recs[rb->n++];
		memset(g, 0, sizeof(*g));
		g->type = rec.type;
		switch (rec.type) {
		case PROFILE_REC_PROCESS:
			g->pid = rec.process.pid;
			snprintf(g->comm, sizeof(g->comm), "%s", rec.process.comm);
			break;
		case PROFILE_REC_THREAD:
			g->pid = rec.thread.pid;
			g->tid = rec.thread.tid;
			snprintf(g->comm, sizeof(g->comm), "%s", rec.thread.comm);
			break;
		case PROFILE_REC_COMM:
			g->pid = rec.comm.pid;
			g->tid = rec.comm.tid;
			g->time_ns = rec.comm.time_ns;
			snprintf(g->comm, sizeof(g->comm), "%s", rec.comm.comm);
			break;
		case PROFILE_REC_SAMPLE:
			g->pid = rec.sample.pid;
			g->tid = rec.sample.tid;
			g->cpu = rec.sample.cpu;
			g->time_ns = rec.sample.time_ns;
			_decode_kstack(rec.sample.kstack, rec.sample.kstack_len, g, file, line);
			_decode_ustack(rec.sample.ustack, rec.sample.ustack_len, g, file, line);
			rb->samples++;
			break;
		default:
			break;
		}
	}
	if (ret < 0 || profile_reader__status(r)->bad_blocks || !profile_reader__status(r)->has_trailer) {
		print_error("%s: read %d, %llu bad blocks\n", f->path, ret,
			    (unsigned long long)profile_reader__status(r)->bad_blocks);
		_fail(file, line);
	}
	rb->trailer_samples = profile_reader__status(r)->trailer_samples;
	profile_reader__free(r);
}
#define close_and_read(f, rb) _close_and_read(f, rb, __FILE__, __LINE__)

/* ---- synthetic samples and task events ---- */

/* A sample as the ring gives it: header, kernel stack words, user stack bytes. */
struct sent {
	struct sample_hdr h;
	uint64_t kstack[4];
	uint8_t ustack[32];
};

/* Sample @i of a run over @npids processes: its own time, pid, tid, cpu and stacks. */
static void make_sample(struct sent *s, size_t i, unsigned npids)
{
	uint32_t pid = PID_BASE + (uint32_t)((i * 7) % npids);

	memset(s, 0, sizeof(*s));
	s->h.time_ns = 1000000 + i;
	s->h.pid = pid;
	s->h.tid = i % 3 ? pid : pid + TID_OFFSET;
	s->h.cpu = i % 8;
	s->h.flags = 0;	/* no user registers: nothing is unwound */
	s->h.kstack_depth = i % 5;
	for (size_t k = 0; k < s->h.kstack_depth; k++)
		s->kstack[k] = 0xffffffff81000000ull + i * 0x40 + k * 0x1000;
	s->h.ustack_len = (i % 5) * 8;
	for (size_t k = 0; k < s->h.ustack_len; k++)
		s->ustack[k] = (uint8_t)(i + k);
	snprintf(s->h.comm, sizeof(s->h.comm), "p%u", pid - PID_BASE);
}

static void send_sample(struct pipeline *pl, const struct sent *s)
{
	pipeline__sample(pl, &s->h, s->kstack, s->ustack);
}

/* A PERF_RECORD_COMM of @pid (its main thread), with the sample_id (tid, time) perf appends. */
static size_t make_comm(uint8_t *buf, size_t cap, uint32_t pid, const char *comm, bool exec,
			uint64_t time)
{
	struct perf_rec_comm *e = (struct perf_rec_comm *)buf;
	size_t name = (strlen(comm) + 8) & ~(size_t)7;
	size_t size = offsetof(struct perf_rec_comm, comm) + name + 16;
	uint64_t sample_id[2] = { pid, time };

	assert_true(size <= cap);
	memset(buf, 0, size);
	e->header.type = PERF_RECORD_COMM;
	e->header.misc = exec ? PERF_RECORD_MISC_COMM_EXEC : 0;
	e->header.size = size;
	e->pid = e->tid = pid;
	strcpy(e->comm, comm);
	memcpy(buf + size - sizeof(sample_id), sample_id, sizeof(sample_id));
	return size;
}

static void send_comm(struct pipeline *pl, uint32_t pid, const char *comm, bool exec,
		      uint64_t time)
{
	uint64_t buf[16];

	make_comm((uint8_t *)buf, sizeof(buf), pid, comm, exec, time);
	pipeline__task_event(pl, (const struct perf_event_header *)buf, time);
}

/* ---- assert helpers ---- */

/* A sample read back is the one sent: pid, tid, cpu, time and kernel stack. */
static void _assert_sample_equal(const struct got_rec *g, const struct sent *s, const char *file,
				 int line)
{
	bool same = g->pid == s->h.pid && g->tid == s->h.tid && g->cpu == s->h.cpu &&
		    g->time_ns == s->h.time_ns && g->kdepth == s->h.kstack_depth;

	for (size_t k = 0; same && k < g->kdepth; k++)
		same = g->kaddrs[k] == s->kstack[k];
	if (same)
		return;
	print_error("sample at %llu: got pid %u tid %u cpu %u, %zu kernel frames; "
		    "sent pid %u tid %u cpu %u, %u kernel frames\n",
		    (unsigned long long)s->h.time_ns, g->pid, g->tid, g->cpu, g->kdepth, s->h.pid,
		    s->h.tid, s->h.cpu, s->h.kstack_depth);
	_fail(file, line);
}

/*
 * The samples of the file are exactly those of @sent[0..n) that @kept says
 * (all when NULL), each as sent; @sent[k] is at @first_time + k.
 */
static void _assert_samples_kept(const struct readback *rb, const struct sent *sent, size_t n,
				 const bool *kept, uint64_t first_time, const char *file, int line)
{
	bool *seen = calloc(n ? n : 1, sizeof(*seen));
	size_t want = 0;

	assert_non_null(seen);
	for (size_t k = 0; k < n; k++)
		want += !kept || kept[k];
	if (rb->samples != want || rb->trailer_samples != want) {
		print_error("%zu samples in the file (trailer: %llu), %zu kept\n", rb->samples,
			    (unsigned long long)rb->trailer_samples, want);
		_fail(file, line);
	}
	for (size_t i = 0; i < rb->n; i++) {
		const struct got_rec *g = &rb->recs[i];
		uint64_t k = g->time_ns - first_time;

		if (g->type != PROFILE_REC_SAMPLE)
			continue;
		if (g->time_ns < first_time || k >= n || seen[k] || (kept && !kept[k])) {
			print_error("sample at %llu: not kept, or written twice\n",
				    (unsigned long long)g->time_ns);
			_fail(file, line);
		}
		seen[k] = true;
		_assert_sample_equal(g, &sent[k], file, line);
	}
	free(seen);
}
#define assert_samples_kept(rb, sent, n, kept, t0) \
	_assert_samples_kept(rb, sent, n, kept, t0, __FILE__, __LINE__)

static void _assert_u64_equal(uint64_t got, uint64_t want, const char *what, const char *file,
			      int line)
{
	if (got == want)
		return;
	print_error("%s: %llu, want %llu\n", what, (unsigned long long)got,
		    (unsigned long long)want);
	_fail(file, line);
}
#define assert_stat(got, want) _assert_u64_equal(got, want, #got, __FILE__, __LINE__)

/* Index of the first record of @type and @pid from @from on whose comm is @comm; fails when none. */
static size_t _find_rec(const struct readback *rb, size_t from, enum profile_rec type,
			uint32_t pid, const char *comm, const char *file, int line)
{
	for (size_t i = from; i < rb->n; i++)
		if (rb->recs[i].type == type && rb->recs[i].pid == pid &&
		    (!comm || !strcmp(rb->recs[i].comm, comm)))
			return i;
	print_error("no record of type %d for pid %u%s%s from record %zu on\n", type, pid,
		    comm ? " named " : "", comm ? comm : "", from);
	_fail(file, line);
	return 0;
}

/* Index of the sample at @time; fails when none. */
static size_t _find_sample(const struct readback *rb, uint64_t time, const char *file, int line)
{
	for (size_t i = 0; i < rb->n; i++)
		if (rb->recs[i].type == PROFILE_REC_SAMPLE && rb->recs[i].time_ns == time)
			return i;
	print_error("no sample at %llu\n", (unsigned long long)time);
	_fail(file, line);
	return 0;
}

/* ---- the cases ---- */

/* Every sample of many processes is written once, as sent, whatever the number of threads. */
static void test_samples_through_workers(void **state)
{
	static const struct {
		unsigned workers, npids;
		size_t nsamples;
	} cases[] = {
		{ 1, 1, 200 },
		{ 1, 37, 3000 },
		{ 2, 37, 3000 },
		{ 4, 37, 3000 },
		{ 4, 3, 3000 },		/* fewer processes than threads: one thread idles */
	};

	(void)state;
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		size_t n = cases[c].nsamples;
		struct sent *sent = calloc(n, sizeof(*sent));
		uint64_t ustack_bytes = 0, last_time[64] = { 0 };
		struct pipeline_stats st;
		struct readback rb;
		struct fixture f;
		struct pipeline *pl;
		size_t processes = 0, threads = 0, want_threads = 0;
		bool has_tid[64][2] = { { false } };

		print_message("%u workers, %u processes, %zu samples\n", cases[c].workers,
			      cases[c].npids, n);
		assert_non_null(sent);
		assert_true(cases[c].npids <= ARRAY_SIZE(last_time));
		fixture_open(&f);
		pl = pipeline_or_fail(&f, cases[c].workers, 64u << 20);
		assert_int_equal(pipeline__start(pl), 0);
		for (size_t i = 0; i < n; i++) {
			bool *t;

			make_sample(&sent[i], i, cases[c].npids);
			ustack_bytes += sent[i].h.ustack_len;
			send_sample(pl, &sent[i]);
			t = &has_tid[sent[i].h.pid - PID_BASE][sent[i].h.tid != sent[i].h.pid];
			want_threads += !*t;
			*t = true;
		}
		assert_int_equal(pipeline__finish(pl), 0);
		pipeline__stats(pl, &st);
		assert_stat(st.handled, n);
		assert_stat(st.procs.samples, n);
		assert_stat(st.dropped, 0);
		assert_stat(st.dropped_events, 0);
		assert_stat(st.ustack_bytes, ustack_bytes);
		assert_stat(st.procs.processes, cases[c].npids);
		assert_stat(st.procs.unknown_pid, cases[c].npids);
		assert_stat(st.procs.user_stacks, 0);
		pipeline__free(pl);

		close_and_read(&f, &rb);
		assert_samples_kept(&rb, sent, n, NULL, sent[0].h.time_ns);
		for (size_t i = 0; i < rb.n; i++) {
			const struct got_rec *g = &rb.recs[i];
			uint32_t k = g->pid - PID_BASE;

			if (g->type == PROFILE_REC_PROCESS || g->type == PROFILE_REC_THREAD ||
			    g->type == PROFILE_REC_SAMPLE)
				assert_true(k < cases[c].npids);
			switch (g->type) {
			case PROFILE_REC_PROCESS:
				/* once, before its samples, named as they name it */
				assert_int_equal(last_time[k], 0);
				last_time[k] = 1;
				assert_true(!strncmp(g->comm, "p", 1) &&
					    strtoul(g->comm + 1, NULL, 10) == k);
				processes++;
				break;
			case PROFILE_REC_THREAD:
				threads++;
				break;
			case PROFILE_REC_SAMPLE:
				/* a process's samples are handled in the order they came */
				assert_true(last_time[k] > 0);
				assert_true(g->time_ns > last_time[k]);
				last_time[k] = g->time_ns;
				break;
			default:
				break;
			}
		}
		assert_int_equal(processes, cases[c].npids);
		/* each thread once */
		assert_int_equal(threads, want_threads);
		free(rb.recs);
		fixture_close(&f);
		free(sent);
	}
}

/*
 * The run of process @pid (the @p-th of the case) in the file: its samples
 * of round r at r * 10000 + p * 100 + 1..20; an exec named "exec-one" before
 * round 1, "exec-two" before round 2, a rename before round 3. Each process
 * record and the rename lie between the runs they separate.
 */
static void _assert_exec_order(const struct readback *rb, uint32_t pid, uint64_t p,
			       const char *first_name, const char *file, int line)
{
	size_t at, first, second, renamed;

	at = _find_rec(rb, 0, PROFILE_REC_PROCESS, pid, NULL, file, line);
	if (strcmp(rb->recs[at].comm, first_name)) {
		print_error("pid %u: first named %s, want %s\n", pid, rb->recs[at].comm, first_name);
		_fail(file, line);
	}
	first = _find_rec(rb, 0, PROFILE_REC_PROCESS, pid, "exec-one", file, line);
	second = _find_rec(rb, 0, PROFILE_REC_PROCESS, pid, "exec-two", file, line);
	renamed = _find_rec(rb, 0, PROFILE_REC_COMM, pid, "renamed", file, line);
	for (uint64_t i = 1; i <= 20; i++) {
		size_t r0 = _find_sample(rb, p * 100 + i, file, line),
		       r1 = _find_sample(rb, 10000 + p * 100 + i, file, line),
		       r2 = _find_sample(rb, 20000 + p * 100 + i, file, line),
		       r3 = _find_sample(rb, 30000 + p * 100 + i, file, line);

		if (!(at < r0 && r0 < first && first < r1 && r1 < second && second < r2 &&
		      r2 < renamed && renamed < r3)) {
			print_error("pid %u: process records at %zu, %zu, %zu, rename at %zu; "
				    "samples %llu at %zu, %zu, %zu, %zu\n", pid, at, first, second,
				    renamed, (unsigned long long)i, r0, r1, r2, r3);
			_fail(file, line);
		}
	}
	/* each image written once: no process record but those three */
	for (size_t i = 0; i < rb->n; i++) {
		if (rb->recs[i].type == PROFILE_REC_PROCESS && rb->recs[i].pid == pid &&
		    i != at && i != first && i != second) {
			print_error("pid %u: a fourth process record, at %zu\n", pid, i);
			_fail(file, line);
		}
	}
}
#define assert_exec_order(rb, pid, p, name) _assert_exec_order(rb, pid, p, name, __FILE__, __LINE__)

/*
 * A process's task events and samples are handled in the order they came,
 * whichever thread owns it: an exec between two runs of samples has the
 * second run's process record carry the new name; a rename is written
 * between the runs it separates. The processes are this one (its /proc
 * files read, its mappings opened through the shared cache, as a real
 * one's are) and a made-up one for each thread.
 */
static void test_exec_order(void **state)
{
	static const unsigned workers[] = { 1, 2, 4 };
	const uint32_t me = (uint32_t)getpid();
	char my_comm[32] = "";
	FILE *comm = fopen("/proc/self/comm", "re");

	(void)state;
	assert_non_null(comm);
	assert_non_null(fgets(my_comm, sizeof(my_comm), comm));
	my_comm[strcspn(my_comm, "\n")] = '\0';
	fclose(comm);
	for (size_t c = 0; c < ARRAY_SIZE(workers); c++) {
		/* this process, then PID_BASE (a multiple of 16) + j on thread j */
		size_t nprocs = 1 + workers[c];
		struct pipeline_stats st;
		struct readback rb;
		struct fixture f;
		struct pipeline *pl;

		print_message("%u workers\n", workers[c]);
		fixture_open(&f);
		pl = pipeline_or_fail(&f, workers[c], 64u << 20);
		assert_int_equal(pipeline__start(pl), 0);
		for (uint64_t round = 0; round < 4; round++) {
			static const char *const names[] = { NULL, "exec-one", "exec-two", "renamed" };

			for (uint64_t p = 0; p < nprocs; p++) {
				uint32_t pid = p ? PID_BASE + (uint32_t)p - 1 : me;

				if (round)
					send_comm(pl, pid, names[round], round < 3, round * 10000);
			}
			for (uint64_t i = 1; i <= 20; i++) {
				for (uint64_t p = 0; p < nprocs; p++) {
					struct sent s;

					make_sample(&s, i, 1);
					s.h.pid = s.h.tid = p ? PID_BASE + (uint32_t)p - 1 : me;
					snprintf(s.h.comm, sizeof(s.h.comm), "sampled-%u", (unsigned)p);
					s.h.time_ns = round * 10000 + p * 100 + i;
					send_sample(pl, &s);
				}
			}
		}
		assert_int_equal(pipeline__finish(pl), 0);
		pipeline__stats(pl, &st);
		assert_stat(st.handled, 80 * nprocs);
		assert_stat(st.procs.samples, 80 * nprocs);
		assert_stat(st.dropped_events, 0);
		pipeline__free(pl);

		close_and_read(&f, &rb);
		assert_int_equal(rb.samples, 80 * nprocs);
		/* named by /proc, then by the events */
		assert_exec_order(&rb, me, 0, my_comm);
		/* named by their samples (nothing in /proc), then by the events */
		for (uint64_t p = 1; p < nprocs; p++) {
			char name[32];

			snprintf(name, sizeof(name), "sampled-%u", (unsigned)p);
			assert_exec_order(&rb, PID_BASE + (uint32_t)p - 1, p, name);
		}
		free(rb.recs);
		fixture_close(&f);
	}
}


#if defined(__x86_64__)
/* ---- real stacks of this process, unwound by helping threads ---- */

#define CAPTURE_BYTES 65536u	/* an ASan build's frames are larger */
#define CAPTURE_DEPTHS 6

struct captured {
	struct sample_hdr h;
	uint8_t stack[CAPTURE_BYTES];
};

/*
 * The registers and stack of this point: a sample's, as the BPF side takes
 * them. The copy reads the callers' frames, redzones and all: word by word,
 * unseen by the address sanitizer (its memcpy() would be seen).
 */
static __attribute__((noinline, no_sanitize_address)) void capture_here(struct captured *c)
{
	uint64_t pc, sp, fp;
	extern void *__libc_stack_end;
	size_t len;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(pc), "=r"(sp), "=r"(fp));
	len = (uint64_t)(uintptr_t)__libc_stack_end - sp;
	if (len > CAPTURE_BYTES)
		len = CAPTURE_BYTES;
	len &= ~(size_t)7;
	for (size_t i = 0; i < len; i += 8)
		*(uint64_t *)(c->stack + i) = *(const volatile uint64_t *)(uintptr_t)(sp + i);
	c->h.pc = pc;
	c->h.sp = sp;
	c->h.fp = fp;
	c->h.ustack_len = (uint32_t)len;
	c->h.flags = SAMPLE_F_USER_REGS;
}

/* @depth - 1 frames of itself above capture_here(): the chain is known by construction. */
#define CAPTURE_BASE_DEPTH 20	/* deep enough that a batch takes longer than a wake-up */
static __attribute__((noinline)) void capture_at_depth(struct captured *c, int depth)
{
	if (depth > 1)
		capture_at_depth(c, depth - 1);
	else
		capture_here(c);
	__asm__ volatile("" ::: "memory");	/* no tail call */
}

/* The chain sfu_unwind() gives @c alone, in this process's own address space. */
static size_t unwind_alone(const struct captured *c, uint64_t *addrs, size_t max, bool *complete)
{
	struct sfu_cache *cache = sfu_cache__new();
	struct sfu_addrspace *as;
	SFU_OPTS(sfu_unwind_opts, opts, .arch = TEST_ARCH);
	struct sfu_snapshot snap = { c->h.sp, c->stack, c->h.ustack_len };
	struct sfu_regs regs = { .pc = c->h.pc, .sp = c->h.sp, .fp = c->h.fp };
	struct sfu_frame frames[64];
	size_t n = 0;

	assert_non_null(cache);
	as = sfu_addrspace__new(cache, NULL);
	assert_non_null(as);
	assert_int_equal(sfu_addrspace__load_pid(as, getpid(), NULL), 0);
	*complete = sfu_unwind(as, &opts, &regs, sfu_snapshot_read, &snap, frames, 64, &n) ==
		    SFU_STOP_OUTERMOST;
	assert_true(n <= max);
	for (size_t i = 0; i < n; i++)
		addrs[i] = frames[i].addr;
	sfu_addrspace__free(as);
	sfu_cache__free(cache);
	return n;
}

/*
 * One process's samples unwound by two threads: the idle thread unwinds
 * part of each batch the busy one offers, and every sample is still written
 * in its order with its own user stack. The stacks are this process's, taken
 * at depths 20 to 25 of a recursion: the chains are those sfu_unwind() gives
 * each alone, complete, one frame longer per level. Whether the idle thread
 * gets a share is the scheduler's to say: a run where it got none is tried
 * again (five times at most), each run checked whole.
 */
static void test_helping(void **state)
{
	static const unsigned workers[] = { 1, 2, 3 };
	static struct captured caps[CAPTURE_DEPTHS];
	uint64_t want[CAPTURE_DEPTHS][64];
	size_t want_n[CAPTURE_DEPTHS];
	const size_t n = 2400;

	(void)state;
	for (int d = 0; d < CAPTURE_DEPTHS; d++) {
		bool complete;

		capture_at_depth(&caps[d], CAPTURE_BASE_DEPTH + d);
		want_n[d] = unwind_alone(&caps[d], want[d], 64, &complete);
		assert_true(complete);
		/* one more frame of the recursion per level */
		if (d)
			assert_int_equal(want_n[d], want_n[0] + (size_t)d);
	}
	for (size_t c = 0, attempt = 1; c < ARRAY_SIZE(workers); attempt++) {
		struct pipeline_stats st;
		struct readback rb;
		struct fixture f;
		struct pipeline *pl;
		size_t seen = 0;
		bool again;

		print_message("%u workers, one process (run %zu)\n", workers[c], attempt);
		fixture_open(&f);
		pl = pipeline_or_fail(&f, workers[c], 256u << 20);
		/* queued before the threads start: batches of 64 wait at once */
		for (size_t i = 0; i < n; i++) {
			struct captured *cp = &caps[i % CAPTURE_DEPTHS];

			cp->h.time_ns = 1000 + i;
			cp->h.pid = (uint32_t)getpid();
			cp->h.tid = (uint32_t)getpid() + (uint32_t)(i % 4);
			snprintf(cp->h.comm, sizeof(cp->h.comm), "helped");
			pipeline__sample(pl, &cp->h, NULL, cp->stack);
		}
		assert_int_equal(pipeline__start(pl), 0);
		assert_int_equal(pipeline__finish(pl), 0);
		pipeline__stats(pl, &st);
		assert_stat(st.dropped, 0);
		assert_stat(st.handled, n);
		assert_stat(st.procs.complete, n);
		print_message("  %llu of %zu samples unwound by a helping thread\n",
			      (unsigned long long)st.helped, n);
		if (workers[c] == 1)
			assert_stat(st.helped, 0);
		else
			assert_true(st.helped < n);
		again = workers[c] > 1 && !st.helped;
		if (again && attempt == 5)
			fail_msg("%u workers: no sample unwound by a helping thread in 5 runs",
				 workers[c]);
		pipeline__free(pl);

		close_and_read(&f, &rb);
		for (size_t i = 0; i < rb.n; i++) {
			const struct got_rec *g = &rb.recs[i];
			size_t k;

			if (g->type != PROFILE_REC_SAMPLE)
				continue;
			/* in order, each with the stack of its own depth */
			assert_int_equal(g->time_ns, 1000 + seen);
			k = seen % CAPTURE_DEPTHS;
			assert_true(g->ucomplete);
			assert_int_equal(g->udepth, want_n[k]);
			assert_memory_equal(g->uaddrs, want[k], want_n[k] * sizeof(uint64_t));
			seen++;
		}
		assert_int_equal(seen, n);
		free(rb.recs);
		fixture_close(&f);
		if (!again) {
			c++;
			attempt = 0;
		}
	}
}
#else
static void test_helping(void **state)
{
	(void)state;
	skip();	/* the capture is written for x86-64 */
}
#endif

/* The bytes an item takes in a queue, read from queued_peak: an empty one-thread pipeline queues it. */
struct costs {
	size_t sample, event;
};

static void queue_costs(struct fixture *f, const struct sent *s, const uint8_t *ustack,
			const struct perf_event_header *e, struct costs *c)
{
	struct pipeline *pl = pipeline_or_fail(f, 1, 0);
	size_t payload = sizeof(s->h) + s->h.kstack_depth * 8 + s->h.ustack_len;
	struct pipeline_stats st;

	pipeline__sample(pl, &s->h, s->kstack, ustack);
	pipeline__stats(pl, &st);
	c->sample = st.queued_peak;
	/* the payload and a small header */
	assert_true(c->sample >= payload && c->sample <= payload + 64);
	pipeline__task_event(pl, e, 1);
	pipeline__stats(pl, &st);
	c->event = st.queued_peak - c->sample;
	assert_true(c->event >= e->size && c->event <= (size_t)e->size + 64);
	/* never started: freed with both queued */
	pipeline__free(pl);
}

/*
 * Each thread's queue is an equal share of queue_bytes (at least
 * PIPELINE_MIN_QUEUE) of which samples leave the last eighth (at most
 * 1 MiB) to task events. With the threads not started, a thread's samples past its share
 * are dropped and counted, exactly those; task events fill the rest and are
 * dropped and counted past it, each copy; what was kept is all written once
 * the threads run.
 */
static void test_queue_bound(void **state)
{
	static const struct {
		unsigned workers;
		size_t queue_bytes;	/* all threads together, a multiple of 8 */
		uint32_t ustack_len;
		size_t per_worker;	/* samples sent to each thread's processes */
	} cases[] = {
		{ 1, 4096, 16384, 100 },	/* a tiny bound: the smallest queue */
		{ 1, 1u << 20, 0, 10000 },	/* small samples */
		{ 2, 4u << 20, 16384, 200 },
		{ 4, 1024, 32768, 60 },		/* each queue the smallest */
		{ 1, 16u << 20, 32768, 600 },	/* room for task events: 1 MiB, not an eighth */
	};
	static uint8_t ustack[32768];
	uint64_t ev[16];
	const struct perf_event_header *rename = (const struct perf_event_header *)ev;

	(void)state;
	for (size_t i = 0; i < sizeof(ustack); i++)
		ustack[i] = (uint8_t)(i * 13);
	/* a rename of a process of the first thread: written for each copy that thread keeps */
	make_comm((uint8_t *)ev, sizeof(ev), PID_BASE, "renamed", false, 1);
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		unsigned workers = cases[c].workers;
		size_t n = workers * cases[c].per_worker, share, fit, events_fit, renames = 0;
		struct sent *sent = calloc(n, sizeof(*sent));
		bool *kept = calloc(n, sizeof(*kept));
		struct pipeline_stats st;
		struct readback rb;
		struct costs cost;
		struct fixture f;
		struct pipeline *pl;
		struct sent late;

		assert_non_null(sent);
		assert_non_null(kept);
		fixture_open(&f);
		for (size_t i = 0; i < n; i++) {
			/* PID_BASE is a multiple of 16: sample i goes to thread i % workers */
			uint32_t pid = PID_BASE + i % (3 * workers);

			make_sample(&sent[i], i, 1);
			sent[i].h.pid = sent[i].h.tid = pid;
			snprintf(sent[i].h.comm, sizeof(sent[i].h.comm), "p%u", pid - PID_BASE);
			/* one size for all, so that how many fit is known */
			sent[i].h.kstack_depth = 3;
			for (size_t k = 0; k < 3; k++)
				sent[i].kstack[k] = 0xffffffff81000000ull + i * 0x40 + k * 0x1000;
			sent[i].h.ustack_len = cases[c].ustack_len;
		}
		queue_costs(&f, &sent[0], ustack, rename, &cost);
		share = cases[c].queue_bytes / workers;
		if (share < PIPELINE_MIN_QUEUE)
			share = PIPELINE_MIN_QUEUE;
		/* samples leave the last eighth of a queue, at most 1 MiB, to task events */
		fit = (share - (share / 8 < (1u << 20) ? share / 8 : 1u << 20)) / cost.sample;
		events_fit = (share - fit * cost.sample) / cost.event;
		print_message("%u workers, queues of %zu bytes: %zu of %zu samples of %zu bytes, "
			      "%zu event copies of %zu bytes a queue\n", workers, share, fit,
			      cases[c].per_worker, cost.sample, events_fit, cost.event);
		assert_true(fit > 0 && fit < cases[c].per_worker);

		pl = pipeline_or_fail(&f, workers, cases[c].queue_bytes);
		for (size_t i = 0; i < n; i++) {
			uint64_t before;

			pipeline__stats(pl, &st);
			before = st.dropped;
			pipeline__sample(pl, &sent[i].h, sent[i].kstack, ustack);
			pipeline__stats(pl, &st);
			kept[i] = st.dropped == before;
			/* the one dropped or none: it is the thread's (i / workers)th sample */
			assert_stat(st.dropped - before, i / workers < fit ? 0 : 1);
		}
		assert_stat(st.dropped, n - workers * fit);
		assert_stat(st.dropped_events, 0);
		assert_stat(st.handled, 0);

		/* task events get the room samples may not take, then are dropped, each copy counted */
		for (size_t k = 0; k < events_fit + 3; k++) {
			uint64_t before = st.dropped_events;

			pipeline__task_event(pl, rename, 2 + k);
			pipeline__stats(pl, &st);
			assert_stat(st.dropped_events - before, k < events_fit ? 0 : workers);
		}
		assert_stat(st.dropped_events, 3 * workers);
		/* one queue full, or all of them */
		assert_true(st.queued_peak >= fit * cost.sample + events_fit * cost.event);
		assert_true(st.queued_peak <= workers * (fit * cost.sample + events_fit * cost.event));
		/* and no room for a sample */
		late = sent[0];
		late.h.time_ns = 1;
		pipeline__sample(pl, &late.h, late.kstack, ustack);
		pipeline__stats(pl, &st);
		assert_stat(st.dropped, n - workers * fit + 1);

		assert_int_equal(pipeline__start(pl), 0);
		assert_int_equal(pipeline__finish(pl), 0);
		pipeline__stats(pl, &st);
		assert_stat(st.handled, workers * fit);
		assert_stat(st.procs.samples, workers * fit);
		assert_stat(st.ustack_bytes, workers * fit * cases[c].ustack_len);
		pipeline__free(pl);
		close_and_read(&f, &rb);
		assert_samples_kept(&rb, sent, n, kept, sent[0].h.time_ns);
		for (size_t i = 0; i < rb.n; i++)
			renames += rb.recs[i].type == PROFILE_REC_COMM && rb.recs[i].pid == PID_BASE &&
				   !strcmp(rb.recs[i].comm, "renamed");
		assert_int_equal(renames, events_fit);
		free(rb.recs);
		fixture_close(&f);
		free(kept);
		free(sent);
	}
}

/*
 * With the threads running, the queues go round many times (large samples
 * through the smallest queues): every sample kept is written whole and in
 * its place, the drops counted are exactly those missing; waiting for room
 * (the backlog after sampling stopped) drops nothing.
 */
static void test_queue_laps(void **state)
{
	static const struct {
		unsigned workers;
		bool wait;
		size_t nsamples;
	} cases[] = {
		{ 1, true, 3000 }, { 3, true, 3000 }, { 1, false, 3000 }, { 4, false, 6000 },
	};
	static uint8_t ustack[16384];

	(void)state;
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		size_t n = cases[c].nsamples, nkept = 0;
		struct sent *sent = calloc(n, sizeof(*sent));
		bool *kept = calloc(n, sizeof(*kept));
		uint64_t ustack_bytes = 0;
		struct pipeline_stats st;
		struct readback rb;
		struct fixture f;
		struct pipeline *pl;

		print_message("%u workers, %s\n", cases[c].workers,
			      cases[c].wait ? "waiting for room" : "dropping at the bound");
		assert_non_null(sent);
		assert_non_null(kept);
		fixture_open(&f);
		pl = pipeline_or_fail(&f, cases[c].workers, 0);
		if (cases[c].wait)
			pipeline__wait_for_room(pl);
		assert_int_equal(pipeline__start(pl), 0);
		for (size_t i = 0; i < n; i++) {
			uint64_t before;

			make_sample(&sent[i], i, 37);
			/* sizes that do not divide the queue: items end anywhere, wraps everywhere */
			sent[i].h.ustack_len = (uint32_t)((i * 2654435761u) % sizeof(ustack));
			pipeline__stats(pl, &st);
			before = st.dropped;
			pipeline__sample(pl, &sent[i].h, sent[i].kstack, ustack);
			if (i % 64 == 0)
				send_comm(pl, sent[i].h.pid, "renamed", false, sent[i].h.time_ns);
			pipeline__stats(pl, &st);
			kept[i] = st.dropped == before;
			nkept += kept[i];
			if (kept[i])
				ustack_bytes += sent[i].h.ustack_len;
			else
				usleep(100);	/* the threads catch up: kept and dropped alternate */
		}
		/* many times round each queue */
		assert_true(ustack_bytes > 4ull * cases[c].workers * PIPELINE_MIN_QUEUE);
		assert_int_equal(pipeline__finish(pl), 0);
		pipeline__stats(pl, &st);
		print_message("%zu of %zu samples kept\n", nkept, n);
		if (cases[c].wait) {
			assert_stat(st.dropped, 0);
			assert_stat(st.dropped_events, 0);
		}
		assert_stat(st.dropped, n - nkept);
		assert_stat(st.handled, nkept);
		assert_stat(st.procs.samples, nkept);
		assert_stat(st.ustack_bytes, ustack_bytes);
		pipeline__free(pl);
		close_and_read(&f, &rb);
		assert_samples_kept(&rb, sent, n, kept, sent[0].h.time_ns);
		free(rb.recs);
		fixture_close(&f);
		free(kept);
		free(sent);
	}
}

/* A KiB field of /proc/self/status ("VmSize:", "RssAnon:"). */
static uint64_t status_kib(const char *field)
{
	FILE *f = fopen("/proc/self/status", "re");
	size_t len = strlen(field);
	char line[256];
	uint64_t kib = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, len))
			kib = strtoull(line + len, NULL, 10);
	fclose(f);
	return kib;
}

static uint64_t vm_size_kib(void)
{
	uint64_t kib = status_kib("VmSize:");

	assert_true(kib > 0);
	return kib;
}

/*
 * Freed with items queued, its threads never started or still running:
 * nothing leaks. The sanitizer build sees malloc()ed memory; the queues are
 * mapped, which it does not see: without threads, the virtual size must not
 * grow over many pipelines.
 */
static void test_free_queued(void **state)
{
	static const struct {
		unsigned workers;
		bool start;
	} cases[] = {
		{ 1, false }, { 4, false }, { 1, true }, { 4, true },
	};

	(void)state;
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		uint64_t vm_before = 0;

		for (int round = 0; round < 33; round++) {
			struct pipeline_stats st;
			struct readback rb;
			struct fixture f;
			struct pipeline *pl;
			struct sent s;

			/* after a first round: thread stacks and allocator arenas are made once */
			if (round == 1)
				vm_before = vm_size_kib();
			fixture_open(&f);
			pl = pipeline_or_fail(&f, cases[c].workers, 16u << 20);
			if (cases[c].start)
				assert_int_equal(pipeline__start(pl), 0);
			for (size_t i = 0; i < 2000; i++) {
				make_sample(&s, i, 11);
				send_sample(pl, &s);
				if (i % 100 == 0)
					send_comm(pl, s.h.pid, "renamed", false, s.h.time_ns);
			}
			pipeline__stats(pl, &st);
			assert_stat(st.dropped, 0);
			assert_stat(st.dropped_events, 0);
			pipeline__free(pl);
			close_and_read(&f, &rb);
			/* never started, nothing was written; started, what was handled before the stop */
			if (!cases[c].start)
				assert_int_equal(rb.samples, 0);
			assert_true(rb.samples <= 2000);
			free(rb.recs);
			fixture_close(&f);
		}
#if !defined(TEST_ASAN)
		/*
		 * 32 pipelines of 16 MiB of queues: a queue not unmapped shows.
		 * Not where threads ran: the C library keeps their stacks and
		 * makes malloc arenas (64 MiB each) as they come.
		 */
		if (!cases[c].start && vm_size_kib() > vm_before + 8192)
			fail_msg("%u workers%s: %llu KiB more mapped after 32 pipelines",
				 cases[c].workers, cases[c].start ? ", started" : "",
				 (unsigned long long)(vm_size_kib() - vm_before));
#else
		(void)vm_before;
#endif
	}
}

/* Wait (10 s at most) until the threads have handled @n samples. */
static void wait_handled(struct pipeline *pl, uint64_t n)
{
	struct pipeline_stats st;

	for (int i = 0; i < 10000; i++) {
		pipeline__stats(pl, &st);
		if (st.handled >= n)
			return;
		usleep(1000);
	}
	fail_msg("%llu of %llu samples handled after 10 s", (unsigned long long)st.handled,
		 (unsigned long long)n);
}

/*
 * A backlog touches a queue's pages far past its working set; once it is
 * handled, trimming gives them back (the kernel's RSS falls by as much).
 * Trimming while the threads read, after every few samples, never takes a
 * page that holds an item: every sample is read back whole.
 */
static void test_trim_queue(void **state)
{
	static uint8_t ustack[16384];
	const size_t queue = 16u << 20, backlog = 12u << 20;
	size_t n = backlog / (sizeof(ustack) + 256), total = n + 4000, nkept = 0;
	struct sent *sent = calloc(total, sizeof(*sent));
	bool *kept = calloc(total, sizeof(*kept));
	struct pipeline_trim tr;
	struct pipeline_stats st;
	uint64_t before, after;
	struct readback rb;
	struct fixture f;
	struct pipeline *pl;

	(void)state;
	assert_non_null(sent);
	assert_non_null(kept);
	memset(ustack, 0x5a, sizeof(ustack));
	fixture_open(&f);
	pl = pipeline_or_fail(&f, 1, queue);
	/* the backlog, queued before the thread starts: 12 MiB of a 16 MiB queue */
	for (size_t i = 0; i < n; i++) {
		make_sample(&sent[i], i, 5);
		sent[i].h.ustack_len = sizeof(ustack);
		pipeline__sample(pl, &sent[i].h, sent[i].kstack, ustack);
		kept[i] = true;
	}
	pipeline__stats(pl, &st);
	assert_stat(st.dropped, 0);
	assert_int_equal(pipeline__start(pl), 0);
	wait_handled(pl, n);
	before = status_kib("RssAnon:");
	pipeline__trim(pl, &tr);
	after = status_kib("RssAnon:");
	print_message("trimmed %zu KiB of queue; RssAnon %llu -> %llu KiB\n", tr.queue_bytes >> 10,
		      (unsigned long long)before, (unsigned long long)after);
	/* the pages past the working set (a quarter and 1 MiB): about 7 MiB of the 12 */
	assert_true(tr.queue_bytes >= (6u << 20));
	assert_true(tr.queue_bytes <= backlog);
#if !defined(TEST_ASAN)
	assert_true(before - after >= (tr.queue_bytes >> 10) / 2);
#endif
	/* trims among reads: sizes that end anywhere, the queue going round */
	for (size_t i = n; i < total; i++) {
		uint64_t dropped;

		make_sample(&sent[i], i, 5);
		sent[i].h.ustack_len = (uint32_t)((i * 2654435761u) % sizeof(ustack));
		pipeline__stats(pl, &st);
		dropped = st.dropped;
		pipeline__sample(pl, &sent[i].h, sent[i].kstack, ustack);
		pipeline__stats(pl, &st);
		kept[i] = st.dropped == dropped;
		if (i % 7 == 0)
			pipeline__trim(pl, NULL);
	}
	for (size_t i = 0; i < total; i++)
		nkept += kept[i];
	assert_true(nkept > n + 1000);
	assert_int_equal(pipeline__finish(pl), 0);
	pipeline__stats(pl, &st);
	assert_stat(st.handled, nkept);
	pipeline__free(pl);
	close_and_read(&f, &rb);
	assert_samples_kept(&rb, sent, total, kept, sent[0].h.time_ns);
	free(rb.recs);
	fixture_close(&f);
	free(kept);
	free(sent);
}

/* Threads between 1 and PIPELINE_MAX_WORKERS; NULL is freed. */
static void test_new_args(void **state)
{
	static const unsigned bad[] = { 0, PIPELINE_MAX_WORKERS + 1 };
	struct fixture f;
	struct pipeline *pl;

	(void)state;
	fixture_open(&f);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct pipeline_opts opts = { .workers = bad[i], .queue_bytes = 4096 };

		errno = 0;
		assert_null(pipeline__new(f.w, &f.wlock, &opts));
		assert_int_equal(errno, EINVAL);
	}
	pl = pipeline_or_fail(&f, PIPELINE_MAX_WORKERS, 4096);
	assert_int_equal(pipeline__start(pl), 0);
	assert_int_equal(pipeline__finish(pl), 0);
	pipeline__free(pl);
	pipeline__free(NULL);
	fixture_close(&f);
}

/* The name thread @tid of @pid has in @rb's record of it, or NULL when none; fails when two. */
static const char *_thread_name(const struct readback *rb, uint32_t pid, uint32_t tid,
				const char *file, int line)
{
	const char *name = NULL;

	for (size_t i = 0; i < rb->n; i++) {
		if (rb->recs[i].type != PROFILE_REC_THREAD || rb->recs[i].tid != tid ||
		    rb->recs[i].pid != pid)
			continue;
		if (name) {
			print_error("thread %u written twice in one file: %s, %s\n", tid, name,
				    rb->recs[i].comm);
			_fail(file, line);
		}
		name = rb->recs[i].comm;
	}
	return name;
}
#define thread_name(rb, pid, tid) _thread_name(rb, pid, tid, __FILE__, __LINE__)

/* A PERF_RECORD_COMM of thread @tid of @pid renaming itself. */
static void send_rename(struct pipeline *pl, uint32_t pid, uint32_t tid, const char *comm,
			uint64_t time)
{
	uint64_t buf[16];
	struct perf_rec_comm *e = (struct perf_rec_comm *)buf;
	size_t size = make_comm((uint8_t *)buf, sizeof(buf), pid, comm, false, time);
	uint64_t sample_id[2] = { tid, time };

	e->tid = tid;
	memcpy((uint8_t *)buf + size - sizeof(sample_id), sample_id, sizeof(sample_id));
	pipeline__task_event(pl, (const struct perf_event_header *)buf, time);
}

/*
 * The sampler leaves a thread's name out of its samples once the loader has
 * sized its copy (SAMPLE_F_NO_COMM): each file (a window of the agent, cut
 * by pipeline__cut()) still names every thread it has samples of, by the
 * name the thread had: its first sample's, then its renames'. A thread not
 * sampled for a whole window is forgotten; its name comes from /proc then,
 * or its process's where /proc has none (these threads are made up). A
 * thread number another process's thread has now is that thread's.
 */
static void test_thread_names(void **state)
{
	const uint32_t pid = PID_BASE + 7, busy = pid + TID_OFFSET, idle = pid + 2 * TID_OFFSET;
	const uint32_t other = PID_BASE + 9;
	struct fixture f[4];
	struct readback rb[4];
	struct pipeline *pl;
	uint64_t time = 1000;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(f); i++)
		fixture_open(&f[i]);
	pl = pipeline_or_fail(&f[0], 2, 64u << 20);
	assert_int_equal(pipeline__start(pl), 0);
	for (size_t w = 0; w < ARRAY_SIZE(f); w++) {
		if (w)
			assert_int_equal(pipeline__cut(pl, f[w].w), 0);
		for (int i = 0; i < 4; i++) {
			struct sent s;

			make_sample(&s, i, 1);
			s.h.pid = pid;
			s.h.tid = busy;
			s.h.time_ns = time++;
			/* named in its first sample only: after that, what is left there is not its name */
			if (w || i) {
				s.h.flags |= SAMPLE_F_NO_COMM;
				snprintf(s.h.comm, sizeof(s.h.comm), "stale-%d", i);
			} else {
				snprintf(s.h.comm, sizeof(s.h.comm), "busy-a");
			}
			send_sample(pl, &s);
			if (w == 1 && i == 1)
				send_rename(pl, pid, busy, "busy-b", time++);
			if (w == 0 || w == 3) {
				s.h.tid = idle;
				s.h.time_ns = time++;
				snprintf(s.h.comm, sizeof(s.h.comm), "idle-a");
				if (w)
					s.h.flags |= SAMPLE_F_NO_COMM;
				else
					s.h.flags &= ~SAMPLE_F_NO_COMM;
				send_sample(pl, &s);
			}
		}
	}
	/* busy's number, now a thread of another process (busy's exit was never told) */
	{
		struct sent s;

		make_sample(&s, 0, 1);
		s.h.pid = other;
		s.h.tid = busy;
		s.h.time_ns = time++;
		snprintf(s.h.comm, sizeof(s.h.comm), "other");
		send_sample(pl, &s);
	}
	assert_int_equal(pipeline__finish(pl), 0);
	pipeline__free(pl);
	for (size_t w = 0; w < ARRAY_SIZE(f); w++) {
		close_and_read(&f[w], &rb[w]);
		assert_int_equal(rb[w].samples, w == 0 ? 8 : w == 3 ? 9 : 4);
	}
	assert_non_null(thread_name(&rb[3], other, busy));
	assert_string_equal(thread_name(&rb[3], other, busy), "other");
	/* its first sample's name; renamed in the second file, after its first two samples */
	assert_string_equal(thread_name(&rb[0], pid, busy), "busy-a");
	assert_string_equal(thread_name(&rb[1], pid, busy), "busy-a");
	_find_rec(&rb[1], 0, PROFILE_REC_COMM, pid, "busy-b", __FILE__, __LINE__);
	assert_string_equal(thread_name(&rb[2], pid, busy), "busy-b");
	assert_string_equal(thread_name(&rb[3], pid, busy), "busy-b");
	/* sampled in the first and last files only: forgotten, then named as its process */
	assert_string_equal(thread_name(&rb[0], pid, idle), "idle-a");
	assert_null(thread_name(&rb[1], pid, idle));
	assert_null(thread_name(&rb[2], pid, idle));
	assert_string_equal(thread_name(&rb[3], pid, idle), "busy-a");
	for (size_t w = 0; w < ARRAY_SIZE(f); w++) {
		free(rb[w].recs);
		fixture_close(&f[w]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_samples_through_workers),
		cmocka_unit_test(test_exec_order),
		cmocka_unit_test(test_helping),
		cmocka_unit_test(test_queue_bound),
		cmocka_unit_test(test_queue_laps),
		cmocka_unit_test(test_free_queued),
		cmocka_unit_test(test_trim_queue),
		cmocka_unit_test(test_new_args),
		cmocka_unit_test(test_thread_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
