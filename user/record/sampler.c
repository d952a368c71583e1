/* SPDX-License-Identifier: BSD-2-Clause */
/* Loads the BPF sampler, opens the task event buffers, and merges both streams by time. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "util/progname.h"
#include "python.h"
#include "records.h"
#include "sample.skel.h"
#include "sampler.h"
#include "common/clock.h"

#define TASK_BUF_PAGES	256	/* per CPU: 1 MiB of mmap/comm/fork/exit records */
#define RING_BYTES	(32u << 20)	/* unless sampler_opts.ring_bytes says */
/*
 * Samples newer than a round's horizon wait in user space for the next
 * round, at most this many bytes; past it they are dropped and counted.
 * A round stops at the first such sample, so this holds about one per round.
 */
#define LATE_MAX_BYTES	(4u << 20)
/* A round hands over samples for at most this long: the caller's clock (--duration) comes first. */
#define ROUND_BUDGET_NS	20000000ull
/* What on_sample returns to end ring_buffer__consume() early; libbpf passes it through. */
#define END_ROUND	(-ECANCELED)

/* A task event kept until the samples before it have been handled. */
struct task_ev {
	uint64_t time;
	uint64_t seq;		/* arrival order, to keep equal times stable */
	struct perf_event_header *rec;
};

/* A sample newer than the round's horizon, kept for the next round. */
struct late_sample {
	uint64_t time;
	uint8_t *data;
	size_t len;
};

struct sampler {
	struct sample_bpf *skel;
	struct ring_buffer *ring;
	struct perf_buffer *tasks;	/* woken when half full, or by an exec */
	struct ring_buffer *execs;	/* the BPF side's exec doorbell */
	struct bpf_link **links;	/* nlinks of them, each event's on every CPU */
	size_t nlinks;
	struct offcpu_sampler *offcpu;	/* --off-cpu */
	int ncpus;
	bool direct;			/* the program sample, not sample_copied (direct_reads()) */
	struct sampler_cbs cbs;
	void *ctx;
	uint32_t freq_hz;
	uint64_t period;
	const struct event_list *events;	/* NULL: cpu-clock, no event id */
	const uint32_t *event_ids;
	struct task_ev *evs;	/* pending, sorted by time from evs_head on */
	size_t evs_head, evs_len, evs_cap;
	uint64_t ev_seq;
	struct late_sample *late;
	size_t late_len, late_cap, late_bytes;
	uint64_t horizon;	/* samples after this are late */
	uint64_t round_end;	/* CLOCK_MONOTONIC ns at which a round stops handing over */
	uint64_t dropped_late;	/* samples dropped: LATE_MAX_BYTES reached */
	uint64_t window_start, window_end;	/* sampler__set_window() */
	uint64_t outside;	/* on-CPU samples taken outside the window: dropped */
	uint64_t malformed;	/* records shorter than their header says */
	int epfd;		/* the ring's and the task buffers' epoll fds */
	int delivered;
	int err;
	struct record_capture *capture;	/* SFPROF_DEBUG_CAPTURE: what is handed over, for the fuzz corpora */
};

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN && getenv("SFPROF_DEBUG_BPF"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

/* Deliver pending task events up to and including @time. */
static void advance(struct sampler *s, uint64_t time)
{
	while (s->evs_head < s->evs_len && s->evs[s->evs_head].time <= time) {
		struct task_ev *ev = &s->evs[s->evs_head++];

		record_capture__add(s->capture, RECORD_CAPTURE_TASK, ev->rec, ev->rec->size);
		s->cbs.task_event(s->ctx, ev->rec, ev->time);
		free(ev->rec);
	}
	if (s->evs_head == s->evs_len)
		s->evs_head = s->evs_len = 0;
}

static void deliver(struct sampler *s, const void *data, size_t len)
{
	struct sample_view v;

	if (sample_record__check(data, len, &v)) {
		s->malformed++;
		return;
	}
	/* an off-CPU block is stamped with its start, which may come before the window's */
	if (!(v.h->flags & SAMPLE_F_OFF_CPU) &&
	    (v.h->time_ns < s->window_start || v.h->time_ns >= s->window_end)) {
		s->outside++;
		return;
	}
	advance(s, v.h->time_ns);
	record_capture__add(s->capture, RECORD_CAPTURE_SAMPLE, data, len);
	s->cbs.sample(s->ctx, v.h, v.kstack, v.ustack);
	s->delivered++;
}

static int on_sample(void *ctx, void *data, size_t len)
{
	struct sampler *s = ctx;
	const struct sample_hdr *h = data;
	struct late_sample *l;

	if (len >= sizeof(*h) && h->time_ns > s->horizon) {
		/*
		 * Its task events may not have been read yet: it waits for the
		 * next round, and so does the rest of the ring.
		 */
		if (s->late_bytes + len > LATE_MAX_BYTES) {
			s->dropped_late++;
			return END_ROUND;
		}
		if (s->late_len == s->late_cap) {
			size_t cap = s->late_cap ? s->late_cap * 2 : 64;
			struct late_sample *p = realloc(s->late, cap * sizeof(*p));

			if (!p) {
				s->dropped_late++;
				return END_ROUND;
			}
			s->late = p;
			s->late_cap = cap;
		}
		l = &s->late[s->late_len];
		l->data = malloc(len);
		if (!l->data) {
			s->dropped_late++;
			return END_ROUND;
		}
		memcpy(l->data, data, len);
		l->len = len;
		l->time = h->time_ns;
		s->late_len++;
		s->late_bytes += len;
		return END_ROUND;
	}
	deliver(s, data, len);
	/* the rest waits in the ring, where the kernel counts what does not fit */
	if ((s->delivered & 63) == 0 && clock_mono_ns() >= s->round_end)
		return END_ROUND;
	return 0;
}

static enum bpf_perf_event_ret on_task_event(void *ctx, int cpu, struct perf_event_header *e)
{
	struct sampler *s = ctx;
	struct task_ev *ev;
	uint64_t time;

	(void)cpu;
	if (e->type != PERF_RECORD_MMAP2 && e->type != PERF_RECORD_COMM &&
	    e->type != PERF_RECORD_FORK && e->type != PERF_RECORD_EXIT)
		return LIBBPF_PERF_EVENT_CONT;
	if (task_record__time(e, &time))
		return LIBBPF_PERF_EVENT_CONT;
	if (s->evs_len == s->evs_cap) {
		size_t cap = s->evs_cap ? s->evs_cap * 2 : 256;
		struct task_ev *p = realloc(s->evs, cap * sizeof(*p));

		if (!p) {
			s->err = -ENOMEM;
			return LIBBPF_PERF_EVENT_ERROR;
		}
		s->evs = p;
		s->evs_cap = cap;
	}
	ev = &s->evs[s->evs_len];
	ev->rec = malloc(e->size);
	if (!ev->rec) {
		s->err = -ENOMEM;
		return LIBBPF_PERF_EVENT_ERROR;
	}
	memcpy(ev->rec, e, e->size);
	ev->time = time;
	ev->seq = s->ev_seq++;
	s->evs_len++;
	return LIBBPF_PERF_EVENT_CONT;
}

static int ev_cmp(const void *a, const void *b)
{
	const struct task_ev *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int late_cmp(const void *a, const void *b)
{
	const struct late_sample *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

/* One round: task events first, then the samples they came before. */
static int round_trip(struct sampler *s, uint64_t horizon)
{
	size_t nlate;
	int err;

	s->delivered = 0;
	s->horizon = horizon;
	s->round_end = horizon == UINT64_MAX ? UINT64_MAX : clock_mono_ns() + ROUND_BUDGET_NS;
	/* the caller's deadline is the window's end: it gets its turn then (not at drain) */
	if (horizon != UINT64_MAX && s->round_end > s->window_end)
		s->round_end = s->window_end;
	err = ring_buffer__consume(s->execs);	/* rung: it only woke us */
	if (err >= 0)
		err = perf_buffer__consume(s->tasks);
	if (err < 0)
		return err;
	qsort(s->evs + s->evs_head, s->evs_len - s->evs_head, sizeof(*s->evs), ev_cmp);

	/* last round's late samples, now that their events are in */
	nlate = s->late_len;
	s->late_len = 0;
	if (nlate)
		qsort(s->late, nlate, sizeof(*s->late), late_cmp);
	for (size_t i = 0; i < nlate; i++) {
		struct late_sample l = s->late[i];

		if (l.time > horizon) {
			s->late[s->late_len++] = l;
			continue;
		}
		deliver(s, l.data, l.len);
		s->late_bytes -= l.len;
		free(l.data);
	}
	/* at drain, the ring to its end: no round budget, nothing is late */
	do {
		err = ring_buffer__consume(s->ring);
	} while (horizon == UINT64_MAX && err == END_ROUND);
	if (err < 0 && err != END_ROUND)
		return err;
	/*
	 * Task events up to the horizon, when every sample before it was
	 * handed over; a round that ended early leaves samples older than the
	 * horizon in the ring, and their events wait with them.
	 */
	if (err != END_ROUND)
		advance(s, horizon);
	return s->err ? s->err : s->delivered;
}

int sampler__poll(struct sampler *s, int timeout_ms)
{
	struct epoll_event ev[3];
	int n;

	/*
	 * Task events the last round held back (it ended at a sample newer than
	 * its horizon: those after the last sample handed over wait for the
	 * samples before them) go at the next round, soon: an exec's mappings
	 * must reach the preparing thread while the process lives, and nothing
	 * else may wake the reader for 100 ms, longer than a short-lived program
	 * lives.
	 */
	if (timeout_ms > 1 && s->evs_head < s->evs_len && s->evs[s->evs_head].time <= s->horizon)
		timeout_ms = 1;
	/*
	 * Wait without reading: both streams are read afterwards, task events
	 * first, up to one horizon, so every sample meets the events before it.
	 */
	n = epoll_wait(s->epfd, ev, 3, timeout_ms);
	if (n < 0 && errno != EINTR)
		return -errno;
	return round_trip(s, clock_mono_ns());
}

static void detach(struct sampler *s)
{
	/* a perf event's link closes its event's fd too: it is closed nowhere else */
	for (size_t i = 0; s->links && i < s->nlinks; i++) {
		bpf_link__destroy(s->links[i]);
		s->links[i] = NULL;
	}
	offcpu_sampler__detach(s->offcpu);
}

void sampler__set_window(struct sampler *s, uint64_t start_ns, uint64_t end_ns)
{
	s->window_start = start_ns;
	s->window_end = end_ns;
	/* the BPF side's copies (mmapped .bss and .data): read at its next sample */
	__atomic_store_n(&s->skel->bss->window_start_ns, start_ns, __ATOMIC_RELEASE);
	__atomic_store_n(&s->skel->data->window_end_ns, end_ns, __ATOMIC_RELEASE);
}

int sampler__drain(struct sampler *s)
{
	int err;

	detach(s);
	/* a sample reserved just before detaching may still be committing */
	usleep(10000);
	err = round_trip(s, UINT64_MAX);
	return err < 0 ? err : 0;
}

/* @key's value in the per-CPU array @map, summed over the CPUs. */
static uint64_t percpu_sum(struct sampler *s, const struct bpf_map *map, uint32_t key)
{
	uint64_t *vals, sum = 0;

	vals = calloc(s->ncpus, sizeof(*vals));
	if (!vals)
		return 0;
	if (!bpf_map_lookup_elem(bpf_map__fd(map), &key, vals))
		for (int i = 0; i < s->ncpus; i++)
			sum += vals[i];
	free(vals);
	return sum;
}

/* A per-CPU counter of the BPF side, summed. */
static uint64_t counter(struct sampler *s, uint32_t key)
{
	return percpu_sum(s, s->skel->maps.counters, key);
}

uint64_t sampler__lost(struct sampler *s)
{
	struct sampler_stats st;
	struct offcpu_stats os = { 0 };

	sampler__stats(s, &st);
	sampler__offcpu_stats(s, &os);
	return st.lost_ring + st.lost_queue + st.lost_scratch + st.malformed + os.lost + os.full;
}

int sampler__offcpu_stats(struct sampler *s, struct offcpu_stats *st)
{
	if (!s->offcpu)
		return -ENOENT;
	offcpu_sampler__stats(s->offcpu, st);
	return 0;
}

void sampler__stats(struct sampler *s, struct sampler_stats *st)
{
	st->lost_ring = counter(s, COUNTER_LOST);
	st->lost_scratch = counter(s, COUNTER_NO_SCRATCH);
	st->lost_queue = s->dropped_late;
	st->malformed = s->malformed;
	st->outside = s->outside;
	st->py_truncated = counter(s, COUNTER_PY_TRUNCATED);
	st->py_faults = counter(s, COUNTER_PY_FAULT);
	st->direct = s->direct;
	for (uint32_t i = 0; i < STEP_MAX; i++)
		st->step_ns[i] = s->skel->rodata->cost_cut & SAMPLE_TIMES ?
				 percpu_sum(s, s->skel->maps.step_ns, i) : 0;
}

static int py_update(void *ctx, uint32_t pid, const struct py_proc *proc)
{
	struct sampler *s = ctx;

	/* the sampler looks py_procs up from now on */
	__atomic_store_n(&s->skel->bss->py_any, 1, __ATOMIC_RELEASE);
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.py_procs), &pid, proc, BPF_ANY))
		return -errno;
	return 0;
}

static void py_remove(void *ctx, uint32_t pid)
{
	struct sampler *s = ctx;

	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.py_procs), &pid);
}

static bool py_wanted(void *ctx, uint32_t pid)
{
	return sampler__is_target(ctx, (pid_t)pid);
}

int sampler__python_ops(struct sampler *s, struct python_map_ops *ops)
{
	if (!s->skel->rodata->python_frames)
		return -EOPNOTSUPP;
	*ops = (struct python_map_ops){ py_update, py_remove, py_wanted, s };
	return 0;
}

int sampler__set_stack_copy(struct sampler *s, uint32_t tid, uint32_t bytes, uint64_t top)
{
	struct stack_copy c = { .size = bytes, .top = top };

	if (bytes < MIN_USTACK_BYTES || bytes > MAX_USTACK_BYTES || bytes % STACK_CHUNK)
		return -EINVAL;
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.stack_sizes), &tid, &c, BPF_ANY))
		return -errno;
	/* each CPU's memo of the thread it sampled last is now out of date */
	__atomic_fetch_add(&s->skel->data->sizes_gen, 1, __ATOMIC_RELEASE);
	return 0;
}

void sampler__forget_thread(struct sampler *s, uint32_t tid)
{
	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.stack_sizes), &tid);
	__atomic_fetch_add(&s->skel->data->sizes_gen, 1, __ATOMIC_RELEASE);
}

int sampler__add_target(struct sampler *s, pid_t pid)
{
	uint32_t key = pid;
	uint8_t one = 1;

	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.targets), &key, &one, BPF_ANY))
		return -errno;
	/* each CPU's memo of the filter's last answer is now out of date */
	__atomic_fetch_add(&s->skel->data->targets_gen, 1, __ATOMIC_RELEASE);
	return 0;
}

bool sampler__is_target(struct sampler *s, pid_t pid)
{
	uint32_t key = pid;
	uint8_t one;

	return !s->skel->rodata->filter_pids ||
	       !bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.targets), &key, &one);
}

int sampler__add_tid(struct sampler *s, pid_t tid)
{
	uint32_t key = tid;
	uint8_t one = 1;

	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.tids), &key, &one, BPF_ANY))
		return -errno;
	return 0;
}

static long perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
			    unsigned long flags)
{
	return syscall(__NR_perf_event_open, attr, pid, cpu, group, flags);
}

/* Room for @n more links. @return 0 or -ENOMEM. */
static int reserve_links(struct sampler *s, size_t n)
{
	struct bpf_link **links = realloc(s->links, (s->nlinks + n) * sizeof(*links));

	if (!links)
		return -ENOMEM;
	s->links = links;
	for (size_t i = s->nlinks; i < s->nlinks + n; i++)
		s->links[i] = NULL;
	return 0;
}

/* A tracepoint: its program runs at every hit on every CPU; one attachment. */
static int attach_tracepoint(struct sampler *s, const struct event_spec *e, uint64_t cookie,
			     char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_tracepoint_opts, opts, .bpf_cookie = cookie);
	struct bpf_link *link;
	int en;

	if (reserve_links(s, 1)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	link = bpf_program__attach_tracepoint_opts(s->skel->progs.tracepoint_sample, e->tp_sys,
						   e->tp_name, &opts);
	if (!link) {
		en = errno;
		snprintf(err, errlen, "cannot attach to the tracepoint %s: %s", e->name, strerror(en));
		return -en;
	}
	s->links[s->nlinks++] = link;
	return 0;
}

/* A perf event on every CPU, sampled at the sampler's period or frequency. */
static int attach_perf_event(struct sampler *s, const struct event_spec *e, uint64_t cookie,
			     char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_perf_event_opts, opts, .bpf_cookie = cookie);
	struct perf_event_attr attr;
	int en;

	if (reserve_links(s, s->ncpus)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	event_spec__attr(e, s->period, s->freq_hz, &attr);
	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		int fd = perf_event_open(&attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		size_t i = s->nlinks;

		if (fd < 0) {
			if (errno == ENODEV)
				continue;	/* a possible CPU that is offline */
			en = errno;
			snprintf(err, errlen, "cannot open the %s event on CPU %d: %s%s", e->name, cpu,
				 strerror(en), en == EACCES || en == EPERM ?
				 " (needs CAP_PERFMON or root)" : "");
			return -en;
		}
		/*
		 * From here the link owns the event's fd and closes it when it
		 * is destroyed: closed again, the number may be another thread's
		 * file by then (the build-ID keeper's walk lost its "/" so)
		 */
		s->links[i] = bpf_program__attach_perf_event_opts(s->direct ? s->skel->progs.sample :
								  s->skel->progs.sample_copied,
								  fd, &opts);
		if (!s->links[i]) {
			en = errno;
			close(fd);
			snprintf(err, errlen, "cannot attach the sampler to %s on CPU %d: %s", e->name, cpu,
				 strerror(en));
			return -en;
		}
		s->nlinks++;
	}
	return 0;
}

int sampler__start(struct sampler *s, char *err, size_t errlen)
{
	/* works in VMs without hardware counters */
	static const struct event_list cpu_clock = {
		.ev = { { .name = "cpu-clock", .type = PERF_TYPE_SOFTWARE,
			  .config = PERF_COUNT_SW_CPU_CLOCK, .clock = true } },
		.n = 1,
	};
	const struct event_list *l = s->events ? s->events : &cpu_clock;
	int rc;

	/* the blocks first: a thread that blocks from the start is seen */
	if (s->offcpu && (rc = offcpu_sampler__attach(s->offcpu, err, errlen)))
		return rc;
	for (size_t i = 0; i < l->n; i++) {
		const struct event_spec *e = &l->ev[i];
		uint64_t cookie = s->events ? s->event_ids[i] & COOKIE_EVENT_MASK : 0;

		if (e->type == PERF_TYPE_TRACEPOINT) {
			uint64_t period = s->period ? s->period : 1;

			if (period > UINT32_MAX)
				period = UINT32_MAX;
			rc = attach_tracepoint(s, e, cookie | period << COOKIE_PERIOD_SHIFT, err, errlen);
		} else {
			rc = attach_perf_event(s, e, cookie | (e->clock ? 0 : COOKIE_F_WEIGHT_PERIOD),
					       err, errlen);
		}
		if (rc)
			return rc;
	}
	return 0;
}

static int on_exec(void *ctx, void *data, size_t len)
{
	(void)ctx;
	(void)data;
	(void)len;
	return 0;
}

/*
 * A dummy event on every CPU. Its records wake no one until half the buffer
 * fills: the reader reads them each round (100 ms at most apart), and at
 * each exec of a process recorded, which the BPF side's exec tracepoint
 * tells (the execs ring). The exec's mappings of its program and loader are
 * in the buffer by then: they reach the preparing thread while the process
 * lives, for its files to be opened and held before it exits and they are
 * deleted: the reader's 100 ms timer alone is longer than a short-lived
 * program lives. Waking at every record instead would wake the reader and
 * the unwinding thread at each of a program's mmaps, not once per exec.
 */
static int open_task_events(struct sampler *s, char *err, size_t errlen)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
		.sample_id_all = 1,
		.mmap = 1,
		.mmap2 = 1,
		.comm = 1,
		.comm_exec = 1,
		.task = 1,
		.build_id = 1,
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC,
		.watermark = 1,
	};
	int e;

	attr.wakeup_watermark = TASK_BUF_PAGES * (uint32_t)sysconf(_SC_PAGESIZE) / 2;
	s->tasks = perf_buffer__new_raw(bpf_map__fd(s->skel->maps.task_events), TASK_BUF_PAGES,
					&attr, on_task_event, s, NULL);
	if (!s->tasks) {
		e = errno;
		snprintf(err, errlen, "cannot open task event buffers: %s", strerror(e));
		return -e;
	}
	s->execs = ring_buffer__new(bpf_map__fd(s->skel->maps.execs), on_exec, s, NULL);
	if (!s->execs) {
		e = errno;
		snprintf(err, errlen, "cannot open the exec ring buffer: %s", strerror(e));
		return -e;
	}
	return 0;
}

/* @tag: which one woke the reader, as strace shows it */
static int add_epoll(int epfd, int fd, uint32_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = tag };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/*
 * Whether this kernel reads user memory into a ring record in place
 * (bpf_probe_read_user_dynptr(), Linux 6.16): then the program sample
 * copies each user stack once, straight into the ring; before it,
 * sample_copied assembles the sample aside and copies it into the ring.
 */
static bool direct_reads(void)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	bool yes;

	if (!vmlinux)
		return false;
	yes = btf__find_by_name_kind(vmlinux, "bpf_probe_read_user_dynptr", BTF_KIND_FUNC) > 0;
	btf__free(vmlinux);
	return yes;
}

/*
 * SFPROF_SAMPLER_CUT: the parts of each sample the sampler leaves out, for
 * scripts/bench-pressure's breakdown of its cost (a comma-separated list of
 * cut_names; lookups-twice makes its map lookups twice instead, so that one
 * costs the difference; times times each step of the program sample, and
 * record prints them). Never set in a recording anyone reads.
 */
#define SAMPLER_CUT_ENV "SFPROF_SAMPLER_CUT"

static const struct {
	const char *name;
	uint32_t bit;
} cut_names[] = {
	{ "after-filter", SAMPLE_CUT_AFTER_FILTER }, { "size-lookup", SAMPLE_CUT_SIZE_LOOKUP },
	{ "kstack", SAMPLE_CUT_KSTACK }, { "ustack", SAMPLE_CUT_USTACK },
	{ "python", SAMPLE_CUT_PYTHON }, { "output", SAMPLE_CUT_OUTPUT }, { "comm", SAMPLE_CUT_COMM },
	{ "direct", SAMPLE_CUT_DIRECT }, { "lookups-twice", SAMPLE_TWICE_LOOKUPS },
	{ "times", SAMPLE_TIMES },
};

/* @spec (NULL: none) into @cut. @return 0, or -EINVAL with @err saying which name is unknown. */
static int cost_cut_parse(const char *spec, volatile uint32_t *cut, char *err, size_t errlen)
{
	uint32_t bits = 0;

	for (const char *p = spec; p && *p;) {
		size_t len = strcspn(p, ",");
		size_t i;

		for (i = 0; i < sizeof(cut_names) / sizeof(cut_names[0]); i++)
			if (len && strlen(cut_names[i].name) == len && !strncmp(p, cut_names[i].name, len))
				break;
		if (len && i == sizeof(cut_names) / sizeof(cut_names[0])) {
			snprintf(err, errlen, "%s: no part named '%.*s' (after-filter, size-lookup, "
				 "kstack, ustack, python, output, comm, direct, lookups-twice, times)", SAMPLER_CUT_ENV, (int)len, p);
			return -EINVAL;
		}
		if (len)
			bits |= cut_names[i].bit;
		p += len + (p[len] == ',');
	}
	*cut = bits;
	return 0;
}

struct sampler *sampler__new(const struct sampler_opts *opts, const struct sampler_cbs *cbs,
			     void *ctx, char *err, size_t errlen)
{
	struct sampler *s = calloc(1, sizeof(*s));
	const char *capture;
	uint32_t ring_bytes;
	int e;

	if (!s) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	s->epfd = -1;
	s->window_end = UINT64_MAX;
	s->cbs = *cbs;
	s->ctx = ctx;
	s->freq_hz = opts->freq_hz;
	s->period = opts->period;
	s->events = opts->events;
	s->event_ids = opts->event_ids;
	libbpf_set_print(libbpf_quiet);
	capture = getenv(RECORD_CAPTURE_ENV);
	if (capture && *capture && !(s->capture = record_capture__open(capture))) {
		e = errno;
		snprintf(err, errlen, "%s=%s: %s", RECORD_CAPTURE_ENV, capture, strerror(e));
		goto fail;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		snprintf(err, errlen, "this kernel has no BTF (/sys/kernel/btf/vmlinux): "
			 "sfprof needs a kernel built with CONFIG_DEBUG_INFO_BTF");
		e = ENOENT;
		goto fail;
	}
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0) {
		e = -s->ncpus;
		snprintf(err, errlen, "cannot count CPUs: %s", strerror(e));
		goto fail;
	}
	s->skel = sample_bpf__open();
	if (!s->skel) {
		e = errno;
		snprintf(err, errlen, "cannot open the BPF sampler: %s", strerror(e));
		goto fail;
	}
	e = -cost_cut_parse(getenv(SAMPLER_CUT_ENV), &s->skel->rodata->cost_cut, err, errlen);
	if (e)
		goto fail;
	s->skel->rodata->ustack_size = opts->stack_size;
	s->skel->rodata->filter_pids = opts->filter;
	s->skel->rodata->filter_tids = opts->filter_tids;
	s->skel->rodata->follow_forks = opts->follow_forks;
	s->skel->rodata->self_tgid = getpid();
	/* the walk's loops are bpf_loop()'s: without it (before 5.17) the branch is dead, the program loads */
	s->skel->rodata->python_frames = !opts->no_python &&
		libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, NULL) == 1;
	ring_bytes = opts->ring_bytes ? opts->ring_bytes : RING_BYTES;
	/* woken at 4 MiB waiting, or half of a smaller ring (that would only fill) */
	if (s->skel->rodata->wakeup_bytes > ring_bytes / 2)
		s->skel->rodata->wakeup_bytes = ring_bytes / 2;
	bpf_map__set_max_entries(s->skel->maps.samples, ring_bytes);
	bpf_map__set_max_entries(s->skel->maps.scratch, s->ncpus);
	s->direct = !(s->skel->rodata->cost_cut & SAMPLE_CUT_DIRECT) && direct_reads();
	bpf_program__set_autoload(s->skel->progs.sample, s->direct);
	bpf_program__set_autoload(s->skel->progs.sample_copied, !s->direct);
	if (sample_bpf__load(s->skel)) {
		e = errno;
		if (e == EPERM)
			snprintf(err, errlen, "not allowed to load BPF programs: sfprof %s needs "
				 "CAP_BPF and CAP_PERFMON (or root)", sfprof_command());
		else
			snprintf(err, errlen, "cannot load the BPF sampler: %s%s", strerror(e),
				 getenv("SFPROF_DEBUG_BPF") ? "" : " (SFPROF_DEBUG_BPF=1 shows the verifier's log)");
		goto fail;
	}
	if (sample_bpf__attach(s->skel)) {
		e = errno;
		snprintf(err, errlen, "cannot attach the fork and exec tracepoints: %s", strerror(e));
		goto fail;
	}
	s->ring = ring_buffer__new(bpf_map__fd(s->skel->maps.samples), on_sample, s, NULL);
	if (!s->ring) {
		e = errno;
		snprintf(err, errlen, "cannot open the sample ring buffer: %s", strerror(e));
		goto fail;
	}
	e = -open_task_events(s, err, errlen);
	if (e)
		goto fail;
	if (opts->off_cpu) {
		struct offcpu_opts oo = {
			.ring_fd = bpf_map__fd(s->skel->maps.samples),
			.targets_fd = bpf_map__fd(s->skel->maps.targets),
			.tids_fd = bpf_map__fd(s->skel->maps.tids),
			.sizes_fd = bpf_map__fd(s->skel->maps.stack_sizes),
			.counters_fd = bpf_map__fd(s->skel->maps.counters),
			.py_procs_fd = bpf_map__fd(s->skel->maps.py_procs),
			.py_threads_fd = bpf_map__fd(s->skel->maps.py_threads),
			.python_frames = s->skel->rodata->python_frames,
			.stack_size = opts->stack_size, .filter_pids = opts->filter,
			.filter_tids = opts->filter_tids, .self_tgid = getpid(),
			.min_ns = opts->off_cpu_min_ns, .event_id = opts->off_cpu_event,
			.wakeup_bytes = s->skel->rodata->wakeup_bytes,
		};

		s->offcpu = offcpu_sampler__new(&oo, err, errlen);
		if (!s->offcpu) {
			e = errno;
			goto fail;
		}
	}
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0 || add_epoll(s->epfd, ring_buffer__epoll_fd(s->ring), 0) ||
	    add_epoll(s->epfd, perf_buffer__epoll_fd(s->tasks), 1) ||
	    add_epoll(s->epfd, ring_buffer__epoll_fd(s->execs), 2)) {
		e = errno;
		snprintf(err, errlen, "epoll: %s", strerror(e));
		goto fail;
	}
	return s;
fail:
	sampler__free(s);
	errno = e;
	return NULL;
}

void sampler__free(struct sampler *s)
{
	if (!s)
		return;
	detach(s);
	if (s->epfd >= 0)
		close(s->epfd);
	ring_buffer__free(s->ring);
	perf_buffer__free(s->tasks);
	ring_buffer__free(s->execs);
	offcpu_sampler__free(s->offcpu);
	sample_bpf__destroy(s->skel);
	record_capture__close(s->capture);
	for (size_t i = s->evs_head; i < s->evs_len; i++)
		free(s->evs[i].rec);
	for (size_t i = 0; i < s->late_len; i++)
		free(s->late[i].data);
	free(s->evs);
	free(s->late);
	free(s->links);
	free(s);
}
