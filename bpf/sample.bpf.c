// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* The sampler: at each sample of a perf event or tracepoint hit, a task's user registers, a copy of its user stack and its kernel stack. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "sample.h"
#include "sample.bpf.h"
#include "python.bpf.h"

/* Set by the loader before the object is loaded. */
const volatile __u32 ustack_size = 16384;	/* a multiple of STACK_CHUNK, <= MAX_USTACK_BYTES:
						 * for threads without a size in stack_sizes */
const volatile bool filter_pids = false;	/* only tgids in `targets` */
const volatile bool filter_tids = false;	/* only tids in `tids` (-t) */
const volatile bool follow_forks = false;	/* children of targets become targets */
const volatile __u32 self_tgid = 0;		/* sfprof itself, never sampled */
const volatile __u64 wakeup_bytes = 4 << 20;	/* wake the reader once this much is waiting */
const volatile __u32 cost_cut = 0;		/* SAMPLE_CUT_*: parts left out (benchmarks only) */
/*
 * The sampling window (CLOCK_MONOTONIC ns), set by the loader once every
 * CPU is attached and again when recording stops: no sample is taken
 * outside it, whenever the reader gets to detach the events.
 */
volatile __u64 window_start_ns = 0;
volatile __u64 window_end_ns = ~0ull;
/* Set by the loader before py_procs gets its first process: till then no sample looks it up. */
volatile __u32 py_any = 0;
/* Bumped after each process added to targets (by the loader, or at a fork): filter_memos' age. */
volatile __u32 targets_gen = 1;

/*
 * The pid filter's last answer on this CPU: a CPU's samples are mostly of
 * one process, and a lookup in targets misses the cache (hundreds of ns).
 */
struct filter_memo {
	__u32 tgid;
	__u32 gen;	/* targets_gen when answered */
	__u32 wanted;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct filter_memo);
	__uint(max_entries, 1);
} filter_memos SEC(".maps");

/* Bumped after each change to stack_sizes (by the loader): copy_memos' age. */
volatile __u32 sizes_gen = 1;

/* The stack_sizes entry of the thread this CPU sampled last, as filter_memos keeps the filter's. */
struct copy_memo {
	__u32 tid;
	__u32 gen;	/* sizes_gen when read */
	__u32 found;	/* the thread has an entry: copy */
	__u32 pad;
	struct stack_copy copy;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct copy_memo);
	__uint(max_entries, 1);
} copy_memos SEC(".maps");

/* @tid's entry in stack_sizes, or NULL: from this CPU's memo when it is of @tid and up to date. */
static __always_inline const struct stack_copy *thread_copy(__u32 tid)
{
	struct copy_memo *memo;
	struct stack_copy *c;
	__u32 zero = 0, gen;

	if (cost_cut & SAMPLE_TWICE_LOOKUPS)
		bpf_map_lookup_elem(&stack_sizes, &tid);
	memo = bpf_map_lookup_elem(&copy_memos, &zero);
	gen = sizes_gen;
	if (memo && memo->tid == tid && memo->gen == gen)
		return memo->found ? &memo->copy : NULL;
	c = bpf_map_lookup_elem(&stack_sizes, &tid);
	if (!memo)
		return c;
	memo->tid = tid;
	memo->gen = gen;
	memo->found = !!c;
	if (!c)
		return NULL;
	memo->copy = *c;
	return &memo->copy;
}

/* SAMPLE_TIMES: each STEP_*'s ns summed, and the samples, per CPU (bench-pressure's breakdown). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, STEP_MAX);
} step_ns SEC(".maps");

/* With SAMPLE_TIMES, the time since @since added to step @which: @return now; else 0, nothing read. */
static __always_inline __u64 step(__u32 which, __u64 since)
{
	__u64 now, *v;

	if (!(cost_cut & SAMPLE_TIMES))
		return 0;
	now = bpf_ktime_get_ns();
	v = bpf_map_lookup_elem(&step_ns, &which);
	if (v)
		*v += which == STEP_SAMPLES ? 1 : now - since;
	return now;
}

/* A tracepoint's hits on this CPU since its last sample (its period is in the cookie). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, MAX_EVENTS);
} tp_hits SEC(".maps");

/*
 * One scratch sample per CPU (the loader sets max_entries): perf_event and
 * tracepoint programs do not nest on a CPU (the kernel's bpf_prog_active).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct scratch);
	__uint(max_entries, 1);
} scratch SEC(".maps");

/* Only for the loader: its perf buffers of mmap, comm, fork and exit records (see execs). */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} task_events SEC(".maps");

/*
 * A doorbell rung at each exec of a recorded process: its mmap records are
 * in the task event buffers by then, and the reader, woken, hands them to the
 * preparing thread while the process lives. The task event buffers wake no one.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} execs SEC(".maps");

static __always_inline bool interrupted_user(struct bpf_perf_event_data *ctx)
{
#if defined(__TARGET_ARCH_x86)
	/* the context allows only whole 8-byte loads: cs with its padding */
	__u64 cs = *(__u64 *)((__u8 *)&ctx->regs + __builtin_offsetof(struct pt_regs, cs));

	return (cs & 3) == 3;
#elif defined(__TARGET_ARCH_arm64)
	return (ctx->regs.pstate & 0xf) == 0;	/* EL0t */
#else
#error "sfprof's sampler knows x86-64 and arm64"
#endif
}

/* Whether the current task is one recorded. */
static __always_inline bool wanted(__u32 tgid, __u32 tid)
{
	struct filter_memo *memo;
	__u32 zero = 0, gen;
	bool yes;

	if (!tid || tgid == self_tgid)
		return false;	/* idle, or ourselves */
	if (filter_tids)
		return bpf_map_lookup_elem(&tids, &tid);
	if (!filter_pids)
		return true;
	if (cost_cut & SAMPLE_TWICE_LOOKUPS)
		bpf_map_lookup_elem(&targets, &tgid);
	memo = bpf_map_lookup_elem(&filter_memos, &zero);
	gen = targets_gen;
	if (memo && memo->tgid == tgid && memo->gen == gen)
		return memo->wanted;
	yes = bpf_map_lookup_elem(&targets, &tgid);
	if (memo) {
		memo->tgid = tgid;
		memo->gen = gen;
		memo->wanted = yes;
	}
	return yes;
}

/*
 * bpf_probe_read_user() into a dynptr (Linux 6.16): a user stack read
 * straight into its ring record. Weak: only the program that uses it,
 * sample, is loaded where the kernel has it; sample_copied elsewhere.
 */
extern int bpf_probe_read_user_dynptr(struct bpf_dynptr *dptr, __u32 off, __u32 size,
				      const void *unsafe_ptr__ign) __ksym __weak;

/* Wake the reader only once the ring holds wakeup_bytes: a wake-up per sample is an interrupt and a context switch. */
static __always_inline __u64 wakeup_flag(void)
{
	return bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > wakeup_bytes ?
	       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/*
 * copy_stack() into the ring record @dp at @at: @size bytes from @sp, in
 * one read when @whole, else (or when it fails) in pieces that never cross
 * a page, stopping where a piece cannot be read. @return the bytes copied.
 */
static __always_inline __u32 copy_stack_direct(struct bpf_dynptr *dp, __u32 at, __u64 sp,
					       __u32 size, bool whole)
{
	__u32 off = STACK_CHUNK - (sp & (STACK_CHUNK - 1)), n;

	if (whole && !bpf_probe_read_user_dynptr(dp, at, size, (const void *)sp))
		return size;
	if (off > size)
		off = size;
	if (!off || bpf_probe_read_user_dynptr(dp, at, off, (const void *)sp))
		return 0;
	for (int i = 0; i < MAX_USTACK_BYTES / STACK_CHUNK; i++) {
		if (off >= size)
			break;
		n = size - off < STACK_CHUNK ? size - off : STACK_CHUNK;
		if (bpf_probe_read_user_dynptr(dp, at + off, n, (const void *)(sp + off)))
			break;
		off += n;
	}
	return off;
}

/*
 * The sample whose header and kernel stack are in @sc written into the ring
 * in place: one record reserved at its most (the header, @kbytes, @usize of
 * user stack), the user stack read straight into it, the header written
 * last. The record is longer than its contents when the copy ends early.
 */
static __always_inline int put_direct(struct scratch *sc, __u64 kbytes, __u32 usize, bool whole,
				      __u64 t)
{
	struct sample_hdr *h = &sc->h;
	struct bpf_dynptr dp;
	__u32 at = sizeof(*h) + kbytes;

	if (bpf_ringbuf_reserve_dynptr(&samples, at + usize, 0, &dp)) {
		bpf_ringbuf_discard_dynptr(&dp, BPF_RB_NO_WAKEUP);
		count(COUNTER_LOST);
		return 0;
	}
	if (kbytes && kbytes <= MAX_KSTACK_DEPTH * 8)
		bpf_dynptr_write(&dp, sizeof(*h), sc->data, kbytes, 0);
	t = step(STEP_RESERVE, t);
	if (usize) {
		h->ustack_len = copy_stack_direct(&dp, at, h->sp, usize, whole);
		if (!h->ustack_len)
			count(COUNTER_USTACK_FAULT);
	}
	t = step(STEP_COPY, t);
	bpf_dynptr_write(&dp, 0, h, sizeof(*h), 0);
	if (cost_cut & SAMPLE_CUT_OUTPUT)
		bpf_ringbuf_discard_dynptr(&dp, BPF_RB_NO_WAKEUP);
	else
		bpf_ringbuf_submit_dynptr(&dp, wakeup_flag());
	step(STEP_SUBMIT, t);
	step(STEP_SAMPLES, 0);
	return 0;
}

/*
 * The sample of the current task into the ring: @user when the event
 * interrupted user code (no kernel stack then), else its kernel stack from
 * @ctx; @id is the task's bpf_get_current_pid_tgid(). @direct: the user
 * stack goes straight into the ring record
 * (put_direct()), except for processes whose Python frames are walked (the
 * walk reads the stack's copy in @sc); otherwise the sample is assembled
 * in @sc and copied into the ring.
 */
static __always_inline int take_sample(void *ctx, __u64 id, bool user, __u32 event,
				       __u64 weight, bool direct, __u64 t)
{
	__u32 tgid = id >> 32, tid = (__u32)id, cpu = bpf_get_smp_processor_id();
	struct task_struct *task;
	struct mm_struct *mm;
	struct sample_hdr *h;
	struct scratch *sc;
	const struct stack_copy *sized;
	__u64 kbytes = 0, len, now = bpf_ktime_get_ns();
	__u32 usize;
	bool python, whole;
	long n;

	if (now < window_start_ns || now >= window_end_ns || (cost_cut & SAMPLE_CUT_AFTER_FILTER))
		return 0;
	if (cost_cut & SAMPLE_TIMES) {
		__u32 which = STEP_FILTER;
		__u64 *v = bpf_map_lookup_elem(&step_ns, &which);

		if (v)
			*v += now - t;
	}
	sc = bpf_map_lookup_elem(&scratch, &cpu);
	if (!sc) {
		count(COUNTER_NO_SCRATCH);
		return 0;
	}
	h = &sc->h;
	h->time_ns = now;
	h->pid = tgid;
	h->tid = tid;
	h->cpu = cpu;
	h->flags = 0;
	h->pc = h->sp = h->fp = h->lr = 0;
	h->ustack_len = 0;
	h->weight = weight;
	h->event = event;
	h->py_depth = 0;
	/* the loader has one for a thread it has seen: it knows its name (SAMPLE_F_NO_COMM) */
	sized = cost_cut & SAMPLE_CUT_SIZE_LOOKUP ? NULL : thread_copy(tid);
	if (sized)
		h->flags |= SAMPLE_F_NO_COMM;
	else if (!(cost_cut & SAMPLE_CUT_COMM))
		bpf_get_current_comm(h->comm, sizeof(h->comm));

	if (!user && !(cost_cut & SAMPLE_CUT_KSTACK)) {
		h->flags |= SAMPLE_F_IN_KERNEL;
		n = bpf_get_stack(ctx, sc->data, MAX_KSTACK_DEPTH * 8, 0);
		if (n > 0)
			kbytes = (__u64)n & ~7ull;
	}
	h->kstack_depth = kbytes / 8;
	t = step(STEP_HEADER, now);

	task = bpf_get_current_task_btf();
	/*
	 * No mm in a user task: it is exiting, past exit_mm() (freeing its
	 * pages is much of that time), with no user stack left to copy; its
	 * samples have a kernel stack only.
	 */
	mm = task->mm;
	if (task->flags & PF_KTHREAD) {
		h->flags |= SAMPLE_F_KTHREAD;
	} else if (mm) {
		usize = user_regs(h, task, mm, cost_cut & SAMPLE_CUT_USTACK ? 0 :
				  sized ? sized->size : ustack_size, sized ? sized->top : 0, &whole);
		/* the old program's memory is gone: so is its interpreter */
		python = python_frames && py_any && !(cost_cut & SAMPLE_CUT_PYTHON) &&
			 !(h->flags & SAMPLE_F_EXEC_NEW_MM);
		if (python && (cost_cut & SAMPLE_TWICE_LOOKUPS))
			bpf_map_lookup_elem(&py_procs, &tgid);
		python = python && bpf_map_lookup_elem(&py_procs, &tgid);
		t = step(STEP_REGS, t);
		if (direct && !python)
			return put_direct(sc, kbytes, usize, whole, t);
		if (usize) {
			h->ustack_len = copy_stack(sc, kbytes, h->sp, usize, whole);
			if (!h->ustack_len)
				count(COUNTER_USTACK_FAULT);
		}
		if (python)
			py_sample(sc, kbytes, tgid, tid, task, now, true);
		t = step(STEP_COPY, t);
	}

	len = sizeof(*h) + kbytes + h->ustack_len + (__u64)h->py_depth * sizeof(struct sample_py_frame);
	if (len > sizeof(*sc) || (cost_cut & SAMPLE_CUT_OUTPUT))
		return 0;
	if (bpf_ringbuf_output(&samples, sc, len, wakeup_flag()))
		count(COUNTER_LOST);
	step(STEP_SUBMIT, t);
	step(STEP_SAMPLES, 0);
	return 0;
}

static __always_inline int perf_sample(struct bpf_perf_event_data *ctx, bool direct)
{
	__u64 t = cost_cut & SAMPLE_TIMES ? bpf_ktime_get_ns() : 0;
	__u64 id = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx);

	if (!wanted(id >> 32, (__u32)id))
		return 0;
	return take_sample(ctx, id, interrupted_user(ctx), cookie & COOKIE_EVENT_MASK,
			   cookie & COOKIE_F_WEIGHT_PERIOD ? ctx->sample_period : 1, direct, t);
}

/*
 * A perf event's sample: cpu-clock and the other software and hardware
 * events. The loader loads one of the two: sample where the kernel has
 * bpf_probe_read_user_dynptr(), else sample_copied.
 */
SEC("perf_event")
int sample(struct bpf_perf_event_data *ctx)
{
	return perf_sample(ctx, true);
}

SEC("perf_event")
int sample_copied(struct bpf_perf_event_data *ctx)
{
	return perf_sample(ctx, false);
}

/*
 * A tracepoint hit (-e subsys:name): the kernel runs this at every hit of
 * every task, whatever the perf event's period, so the period is counted
 * here, per CPU, among the recorded tasks' hits.
 */
SEC("tracepoint")
int tracepoint_sample(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx);
	__u64 period = cookie >> COOKIE_PERIOD_SHIFT, *hits;
	__u32 event = cookie & COOKIE_EVENT_MASK;

	if (!wanted(id >> 32, (__u32)id))
		return 0;
	if (period > 1) {
		__u32 slot = event % MAX_EVENTS;

		hits = bpf_map_lookup_elem(&tp_hits, &slot);
		if (!hits)
			return 0;
		if (++*hits < period)
			return 0;
		*hits = 0;
	}
	return take_sample(ctx, id, false, event, period ? period : 1, false, 0);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u8 one = 1;

	if (!follow_forks || ptgid == ctgid)
		return 0;
	if (bpf_map_lookup_elem(&targets, &ptgid)) {
		bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY);
		__sync_fetch_and_add(&targets_gen, 1);
	}
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;

	if (tgid == self_tgid || (filter_pids && !bpf_map_lookup_elem(&targets, &tgid)))
		return 0;
	/* full, the reader has yet to read: it reads every buffer then */
	bpf_ringbuf_output(&execs, &tgid, sizeof(tgid), BPF_RB_FORCE_WAKEUP);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
