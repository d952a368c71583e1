/* SPDX-License-Identifier: BSD-2-Clause */
/* The record path assembled once for record, its flight recorder and the agent: parts, loop, drain. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildid/buildid_record.h"
#include "lost.h"
#include "python.h"
#include "recorder.h"
#include "sizes.h"
#include "common/clock.h"

#define DEFAULT_MAX_WORKERS	4	/* unwinding threads by default: the CPUs online, at most this */
#define SECOND_NS		1000000000ull
#define ROUND_MS		100	/* a round's poll: the trim, ticks and cuts need no finer clock */

struct recorder {
	struct recorder_opts opts;
	struct recorder_hooks hooks;
	void *ctx;
	struct recorder_budget budget;
	struct sampler *sampler;
	struct buildid_keeper *buildid;
	struct pipeline *pipeline;
	struct profile_writer *w;
	pthread_mutex_t wlock;	/* w is written by the unwinding threads too */
	uint64_t lost_written;
	struct rt_budget *reader_rt;	/* the ring reader's: the thread of recorder__run() */
	struct rt_budget *unwind_rt[PIPELINE_MAX_WORKERS];	/* each its unwinding thread's */
	bool targets_added;
	int scanned;		/* processes running at the start (pipeline__scan_all()'s error as it is) */
	uint64_t t0, t_end, deadline, drained, unwound;
};

void recorder_budget__split(uint64_t max_memory, uint32_t rate_hz, struct recorder_budget *b)
{
	int ncpus;

	if (rate_hz) {
		ncpus = libbpf_num_possible_cpus();
		b->ring = rate_ring_bytes(max_memory, rate_hz, ncpus > 0 ? ncpus : 256);
	} else {
		b->ring = record_ring_bytes(max_memory);
	}
	b->queues = max_memory * 3 / 8;
	b->stack_index = max_memory / 16;
	b->modules = max_memory / 4;
	b->flight = max_memory / 8;
}

/* The reading thread only copies: everything slow happens on the unwinding threads. */
static void on_sample(void *ctx, const struct sample_hdr *h, const uint64_t *kstack,
		      const uint8_t *ustack)
{
	struct recorder *r = ctx;

	if (r->hooks.item)
		r->hooks.item(r->ctx, h->time_ns);
	pipeline__sample(r->pipeline, h, kstack, ustack);
}

static void on_task_event(void *ctx, const struct perf_event_header *e, uint64_t time)
{
	struct recorder *r = ctx;

	if (r->hooks.item)
		r->hooks.item(r->ctx, time);
	pipeline__task_event(r->pipeline, e, time);
	if (e->type == PERF_RECORD_EXIT && r->opts.copy_adaptive && e->size >= sizeof(*e) + 16) {
		uint32_t tid;

		/* pid, ppid, tid: its size goes with it */
		memcpy(&tid, (const uint8_t *)(e + 1) + 8, sizeof(tid));
		sampler__forget_thread(r->sampler, tid);
	}
	if (e->type == PERF_RECORD_COMM && (e->misc & PERF_RECORD_MISC_COMM_EXEC) &&
	    r->opts.copy_adaptive && e->size >= sizeof(*e) + 8) {
		uint32_t tid;

		/* pid, tid: a new program, its stack elsewhere; its samples carry its new name */
		memcpy(&tid, (const uint8_t *)(e + 1) + 4, sizeof(tid));
		sampler__forget_thread(r->sampler, tid);
	}
}

/*
 * From unwinding thread @worker: real-time priority while its queue backs
 * up, within its budget. Its budget is its own: made and used by it alone,
 * read once it has ended.
 */
static void on_backlog(void *ctx, unsigned worker, bool backlog)
{
	struct recorder *r = ctx;
	struct rt_budget **rb = &r->unwind_rt[worker];

	if (!*rb && (!backlog || !r->opts.rt_pct ||
		     !(*rb = rt_budget__new(r->opts.rt_pct, RT_BUDGET_PRIO_UNWIND))))
		return;
	rt_budget__tick(*rb, backlog);
}

/* From an unwinding thread: a map update, safe from any thread. */
static int on_resize(void *ctx, uint32_t tid, uint32_t bytes, uint64_t top)
{
	struct recorder *r = ctx;

	return sampler__set_stack_copy(r->sampler, tid, bytes, top);
}

static void on_warn(void *ctx, uint32_t pid, const char *comm, const char *why)
{
	struct recorder *r = ctx;

	if (r->hooks.warn)
		r->hooks.warn(r->ctx, pid, comm, why);
}

static bool is_recorded(void *ctx, uint32_t pid)
{
	struct recorder *r = ctx;

	return sampler__is_target(r->sampler, pid);
}

struct recorder *recorder__new(const struct recorder_opts *opts, const struct recorder_hooks *hooks,
			       void *ctx, char *msg, size_t msglen)
{
	struct sampler_cbs cbs = { on_sample, on_task_event };
	struct sampler_opts sopts = opts->sampler;
	struct recorder *r = calloc(1, sizeof(*r));
	long cpus;
	int err;

	if (!r) {
		snprintf(msg, msglen, "%s", strerror(ENOMEM));
		return NULL;
	}
	r->opts = *opts;
	if (hooks)
		r->hooks = *hooks;
	r->ctx = ctx;
	pthread_mutex_init(&r->wlock, NULL);
	if (!r->opts.workers) {
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
		r->opts.workers = cpus < 1 ? 1 : cpus > DEFAULT_MAX_WORKERS ? DEFAULT_MAX_WORKERS : cpus;
	}
	if (!r->opts.max_depth)
		r->opts.max_depth = RECORDER_MAX_DEPTH;
	recorder_budget__split(opts->max_memory, opts->ring_by_rate ? sopts.freq_hz : 0, &r->budget);
	sopts.ring_bytes = r->budget.ring;
	sopts.no_python = !opts->python;
	r->sampler = sampler__new(&sopts, &cbs, r, msg, msglen);
	if (!r->sampler) {
		err = errno;
		free(r);
		errno = err;
		return NULL;
	}
	return r;
}

/* The unwinding threads writing to @w, told of what runs already; not started. @return 0 or -errno (said). */
static int make_pipeline(struct recorder *r, struct profile_writer *w)
{
	const struct recorder_opts *o = &r->opts;
	struct pipeline_opts popts = {
		.workers = o->workers, .queue_bytes = r->budget.queues, .arch = SFU_ARCH_HOST,
		.max_depth = o->max_depth, .copy_start = o->sampler.stack_size,
		.copy_adaptive = o->copy_adaptive, .module_bytes = r->budget.modules,
		.prepare = o->prepare, .fp_only = o->fp_only,
	};
	struct python_map_ops pyops;
	int err;

	r->w = w;
	profile_writer__set_stack_bound(w, r->budget.stack_index);
	r->pipeline = pipeline__new(w, &r->wlock, &popts);
	if (!r->pipeline) {
		err = errno ? -errno : -ENOMEM;
		fprintf(stderr, "sfprof %s: cannot start the unwinding threads: %s\n", o->name,
			strerror(-err));
		return err;
	}
	pipeline__set_warn(r->pipeline, on_warn, r);
	pipeline__set_resize(r->pipeline, on_resize, r);
	if (o->rt)
		pipeline__set_backlog(r->pipeline, on_backlog, r);
	pipeline__set_wanted(r->pipeline, is_recorded, r);
	if (o->python) {
		if (sampler__python_ops(r->sampler, &pyops)) {
			if (o->say_no_python)
				fprintf(stderr, "sfprof %s: no Python frames: the kernel has no "
					"bpf_loop() (5.17)\n", o->name);
		} else if ((err = pipeline__set_python(r->pipeline, &pyops))) {
			fprintf(stderr, "sfprof %s: Python frames: %s\n", o->name, strerror(-err));
			return err;
		}
	}
	if (r->buildid) {
		pipeline__set_module_hook(r->pipeline, buildid_record__module, r->buildid);
		pipeline__set_map_hook(r->pipeline, buildid_record__map, r->buildid);
	}
	/* what runs already; new processes arrive as task events */
	r->scanned = o->all ? pipeline__scan_all(r->pipeline) : 0;
	for (size_t i = 0; i < o->npids; i++)
		if (!pipeline__scan(r->pipeline, o->pids[i]))
			r->scanned++;
	for (size_t i = 0; i < o->ntids; i++)
		if ((!i || o->tid_pids[i] != o->tid_pids[i - 1]) &&
		    !pipeline__scan(r->pipeline, o->tid_pids[i]))
			r->scanned++;
	/* sampled from its exec on, as perf counts a command: before it, it is sfprof */
	if (o->held > 0 && !pipeline__scan_held(r->pipeline, o->held))
		r->scanned++;
	return 0;
}

int recorder__prepare(struct recorder *r, struct profile_writer *w)
{
	const struct recorder_opts *o = &r->opts;

	if (!r->targets_added) {
		/* a cache that cannot be written is said before sampling starts */
		if (o->buildid &&
		    !(r->buildid = buildid_record__start(o->name, o->buildid_bytes,
							 o->buildid_protect_s)))
			return -EIO;
		for (size_t i = 0; i < o->npids; i++)
			sampler__add_target(r->sampler, o->pids[i]);
		for (size_t i = 0; i < o->ntids; i++)
			sampler__add_tid(r->sampler, o->tids[i]);
		if (o->held > 0)
			sampler__add_target(r->sampler, o->held);
		r->targets_added = true;
	}
	return make_pipeline(r, w);
}

static int start_threads(struct recorder *r)
{
	int err = pipeline__start(r->pipeline);

	if (err)
		fprintf(stderr, "sfprof %s: cannot start the unwinding threads: %s\n", r->opts.name,
			strerror(-err));
	return err;
}

int recorder__start(struct recorder *r)
{
	char msg[512];
	int err;

	if ((err = start_threads(r)))
		return err;
	/* real-time before the first sample: the ring never waits for the programs sampled */
	if (r->opts.rt) {
		if (!(r->reader_rt = rt_budget__new(r->opts.rt_pct, RT_BUDGET_PRIO_READER))) {
			err = -errno;
			fprintf(stderr, "sfprof %s: %s\n", r->opts.name, strerror(errno));
			return err;
		}
		rt_budget__tick(r->reader_rt, true);
	}
	if ((err = sampler__start(r->sampler, msg, sizeof(msg)))) {
		fprintf(stderr, "sfprof %s: %s\n", r->opts.name, msg);
		return err;
	}
	/*
	 * Every CPU attached: sampling starts now, for the duration exactly
	 * (samples taken while attaching are dropped).
	 */
	r->t0 = clock_mono_ns();
	r->deadline = r->opts.duration ? r->t0 + (uint64_t)(r->opts.duration * 1e9) : UINT64_MAX;
	if (r->opts.exact_window)
		sampler__set_window(r->sampler, r->t0, r->deadline);
	return 0;
}

int recorder__write_lost(struct recorder *r)
{
	if (!r->pipeline || !r->w)
		return 0;	/* no threads since recorder__end_threads() */
	return record_write_lost(r->sampler, r->pipeline, r->w, &r->wlock, &r->lost_written);
}

/* The policy's verdict on @err (0: none). @return 0, RECORDER_AGAIN, or -errno. */
static int check(struct recorder *r, int err)
{
	return r->hooks.check ? r->hooks.check(r->ctx, err) : err;
}

/* Once a second. @return 0, RECORDER_AGAIN, RECORDER_STOP or -errno. */
static int each_second(struct recorder *r, uint64_t now)
{
	int err;

	if (r->hooks.second && (err = r->hooks.second(r->ctx, now)))
		return err;
	/* modules of processes long gone: a churn of programs costs no memory */
	pipeline__trim(r->pipeline, NULL);
	err = r->hooks.lost_each_second ? recorder__write_lost(r) : 0;
	pthread_mutex_lock(&r->wlock);
	if (!err)
		err = profile_writer__tick(r->w);
	pthread_mutex_unlock(&r->wlock);
	if (err && (err = check(r, err)))
		return err;
	if (r->hooks.progress)
		r->hooks.progress(r->ctx);
	return 0;
}

int recorder__run(struct recorder *r)
{
	uint64_t last = r->t0, deadline = r->deadline;
	int err = 0;

	while (!(r->hooks.stopped && r->hooks.stopped(r->ctx))) {
		uint64_t now = clock_mono_ns();
		/* wake at the deadline, not after it: a round hands over for 20 ms at most */
		int timeout = deadline - now < ROUND_MS * 1000000ull ?
			      (int)((deadline - now + 999999) / 1000000) : ROUND_MS;

		if (now >= deadline)
			break;
		err = sampler__poll(r->sampler, timeout);
		if (r->reader_rt)
			rt_budget__tick(r->reader_rt, true);
		pipeline__kick(r->pipeline);	/* the round's task events, at once */
		if (err < 0 && err != -EINTR) {
			if (r->hooks.read_failed)
				r->hooks.read_failed(r->ctx, err);
			break;
		}
		err = check(r, pipeline__error(r->pipeline));
		if (err == RECORDER_AGAIN)
			continue;
		if (err)
			break;
		now = clock_mono_ns();
		if (now >= deadline)
			break;
		if (r->hooks.round && (err = r->hooks.round(r->ctx, now)))
			break;
		if (now - last >= SECOND_NS) {
			last = now;
			err = each_second(r, now);
			if (err == RECORDER_AGAIN)
				continue;
			if (err)
				break;
		}
	}
	/* sampling ends now, or at the deadline the loop saw late: the BPF side stops at once */
	r->t_end = clock_mono_ns();
	if (r->t_end > deadline)
		r->t_end = deadline;
	if (r->opts.exact_window)
		sampler__set_window(r->sampler, r->t0, r->t_end);
	return err < 0 ? err : 0;
}

int recorder__drain(struct recorder *r, int err, enum recorder_step *step)
{
	int e;

	*step = 0;
	/* what remains is not urgent: nothing can overflow once the events are detached */
	if (r->reader_rt)
		rt_budget__tick(r->reader_rt, false);
	if (!r->pipeline)
		return err ? err : -EIO;	/* threads that could not be made again: said */
	pipeline__wait_for_room(r->pipeline);
	if (!err && (err = sampler__drain(r->sampler)))
		*step = RECORDER_READING;
	r->drained = clock_mono_ns();
	/* the backlog: every sample queued is unwound and written (none after a write error) */
	if ((e = pipeline__finish(r->pipeline)) && !err) {
		err = e;
		*step = RECORDER_WRITING;
	}
	r->unwound = clock_mono_ns();
	if (!err && (err = recorder__write_lost(r)))
		*step = RECORDER_WRITING;
	return err;
}

int recorder__cut(struct recorder *r, struct profile_writer *w)
{
	int err = pipeline__cut(r->pipeline, w);

	recorder__set_writer(r, w);
	return err;
}

void recorder__set_writer(struct recorder *r, struct profile_writer *w)
{
	r->w = w;
	profile_writer__set_stack_bound(w, r->budget.stack_index);
}

struct profile_writer *recorder__writer(struct recorder *r)
{
	return r->w;
}

void recorder__written(struct recorder *r, uint64_t *samples, uint64_t *bytes)
{
	pthread_mutex_lock(&r->wlock);
	*samples = profile_writer__samples(r->w);
	*bytes = profile_writer__bytes(r->w);
	pthread_mutex_unlock(&r->wlock);
}

struct pipeline *recorder__pipeline(struct recorder *r)
{
	return r->pipeline;
}

void recorder__end_threads(struct recorder *r, bool finish)
{
	if (!r)
		return;
	if (finish)
		pipeline__finish(r->pipeline);
	pipeline__free(r->pipeline);
	r->pipeline = NULL;
	r->w = NULL;
}

int recorder__restart(struct recorder *r, struct profile_writer *w)
{
	int err = make_pipeline(r, w);

	return err ? err : start_threads(r);
}

void recorder__stats(struct recorder *r, struct recorder_stats *st)
{
	struct rt_budget_stats u;

	memset(st, 0, sizeof(*st));
	sampler__stats(r->sampler, &st->sampler);
	if (r->pipeline)
		pipeline__stats(r->pipeline, &st->pipeline);
	st->has_offcpu = !sampler__offcpu_stats(r->sampler, &st->offcpu);
	st->lost_written = r->lost_written;
	st->workers = r->opts.workers;
	st->scanned = r->scanned;
	st->budget = r->budget;
	st->t0 = r->t0;
	st->t_end = r->t_end;
	st->drained = r->drained;
	st->unwound = r->unwound;
	rt_budget__stats(r->reader_rt, &st->reader_rt);
	for (unsigned i = 0; i < PIPELINE_MAX_WORKERS; i++) {
		rt_budget__stats(r->unwind_rt[i], &u);
		st->unwind_rt.windows += u.windows;
		st->unwind_rt.over += u.over;
		st->unwind_rt.rt_ns += u.rt_ns;
	}
}

int recorder__finish_keeper(struct recorder *r, FILE *out)
{
	return r->buildid ? buildid_record__finish(r->buildid, r->opts.name, out) : 0;
}

void recorder__free(struct recorder *r)
{
	if (!r)
		return;
	pipeline__free(r->pipeline);
	buildid_keeper__free(r->buildid);
	sampler__free(r->sampler);
	rt_budget__free(r->reader_rt);
	for (unsigned i = 0; i < PIPELINE_MAX_WORKERS; i++)
		rt_budget__free(r->unwind_rt[i]);
	pthread_mutex_destroy(&r->wlock);
	free(r);
}
