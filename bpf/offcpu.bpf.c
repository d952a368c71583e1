// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* The off-CPU sampler: the stacks of threads when they block, weighted by the time they stay off the CPU. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "offcpu.h"
#include "sample.bpf.h"
#include "python.bpf.h"

/*
 * How: at sched_switch the blocking thread is current; its kernel stack and
 * user registers are held in `blocked` (bounded) with the time. When it is
 * switched in again its time off the CPU is known: a block shorter than
 * min_ns is dropped there (counted). The user stack is copied when the
 * thread leaves the syscall it blocked in (sys_exit, in its own context, its
 * stack unchanged since it blocked: no other program reads another task's
 * user memory), and only then goes to the ring, with the kernel stack held:
 * one ring record per block of min_ns or more, none for shorter ones. A
 * thread woken that blocks again before it leaves the syscall (a pipe's
 * lock after its wait) goes on with the same block. A thread that blocked
 * outside a syscall (a page fault) meets no sys_exit with the same
 * registers: its block is counted, not recorded.
 */

/* Set by the loader before the object is loaded. */
const volatile __u32 ustack_size = 16384;	/* for threads without a size in stack_sizes */
const volatile bool filter_pids = false;	/* only tgids in `targets` */
const volatile bool filter_tids = false;	/* only tids in `tids` */
const volatile __u32 self_tgid = 0;		/* sfprof itself, never recorded */
const volatile __u64 wakeup_bytes = 4 << 20;	/* wake the reader once this much is waiting */
const volatile __u64 min_ns = 1000000;		/* shorter blocks are not recorded */
const volatile __u32 event_id = 0;		/* the offcpu-time event's id in the profile */
/* __schedule's text, from kallsyms (0: unknown): a block's kernel stack starts there */
const volatile __u64 sched_lo = 0, sched_hi = 0;

/* Threads off the CPU (tid): allocated as threads block, at most MAX_BLOCKED at once. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct offcpu_block);
	__uint(max_entries, MAX_BLOCKED);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} blocked SEC(".maps");

/* Where a block is assembled before it goes into `blocked`: too big for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct offcpu_block);
	__uint(max_entries, 1);
} block_buf SEC(".maps");

/*
 * One scratch sample per CPU (the loader sets max_entries), apart from the
 * sampler's: a perf_event program may interrupt this one.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct scratch);
	__uint(max_entries, 1);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, OFFCPU_COUNTER_MAX);
} offcpu_counters SEC(".maps");

static __always_inline void add(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&offcpu_counters, &which);

	if (c)
		*c += n;
}

static __always_inline bool wanted(struct task_struct *t)
{
	__u32 tgid = t->tgid, tid = t->pid;

	if (!tid || tgid == self_tgid || (t->flags & PF_KTHREAD) || !t->mm)
		return false;
	if (filter_tids)
		return bpf_map_lookup_elem(&tids, &tid);
	return !filter_pids || bpf_map_lookup_elem(&targets, &tgid);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	struct offcpu_block *b;
	struct pt_regs *regs;
	__u32 tid, zero = 0;
	long n;

	/* the one switched in: this piece of its time off the CPU ends now */
	tid = next->pid;
	b = tid ? bpf_map_lookup_elem(&blocked, &tid) : NULL;
	if (b && !b->ready) {
		b->off_ns += now - b->out_ns;
		b->ready = 1;
		if (b->off_ns < min_ns) {
			add(OFFCPU_SHORT, 1);
			add(OFFCPU_SHORT_NS, b->off_ns);
			bpf_map_delete_elem(&blocked, &tid);
		}
	}

	/* the one switched out blocks, unless it was preempted (it stays runnable) */
	if (preempt || prev_state == 0 || !wanted(prev))
		return 0;
	tid = prev->pid;
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	b = bpf_map_lookup_elem(&blocked, &tid);
	if (b && b->ready) {
		/* still in the syscall it blocked in: the same block goes on */
		if (PT_REGS_IP(regs) == b->pc && PT_REGS_SP(regs) == b->sp) {
			b->out_ns = now;
			b->ready = 0;
			return 0;
		}
		/* it ran since its last block and made no syscall: that block is lost */
		add(OFFCPU_NOT_SYSCALL, 1);
		add(OFFCPU_NOT_SYSCALL_NS, b->off_ns);
	}
	b = bpf_map_lookup_elem(&block_buf, &zero);
	if (!b)
		return 0;
	b->start_ns = b->out_ns = now;
	b->off_ns = 0;
	b->ready = 0;
	b->pc = PT_REGS_IP(regs);
	b->sp = PT_REGS_SP(regs);
	b->cpu = bpf_get_smp_processor_id();
	n = bpf_get_stack(ctx, b->kstack, sizeof(b->kstack), 0);
	/*
	 * This program, bpf_trace_run and the tracepoint's iterator sit above
	 * __schedule: not the thread's stack (a kernel's own count of them)
	 */
	if (n > 0 && sched_lo) {
		__u32 skip = 0;

		for (int i = 1; i < 8 && i * 8 < n; i++)
			if (b->kstack[i] >= sched_lo && b->kstack[i] < sched_hi) {
				skip = i;
				break;
			}
		if (skip)
			n = bpf_get_stack(ctx, b->kstack, sizeof(b->kstack),
					  skip & BPF_F_SKIP_FIELD_MASK);
	}
	b->kstack_depth = n > 0 ? (__u64)n / 8 : 0;
	if (bpf_map_update_elem(&blocked, &tid, b, BPF_ANY))
		add(OFFCPU_FULL, 1);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(offcpu_sys_exit, struct pt_regs *uregs, long ret)
{
	__u64 id = bpf_get_current_pid_tgid(), kbytes, len;
	__u32 tid = (__u32)id, cpu = bpf_get_smp_processor_id();
	struct offcpu_block *b;
	struct task_struct *task;
	struct pt_regs *regs;
	struct sample_hdr *h;
	struct scratch *sc;
	struct mm_struct *mm;
	struct stack_copy *sized;

	b = bpf_map_lookup_elem(&blocked, &tid);
	if (!b)
		return 0;
	if (!b->ready) {
		/* running, so switched in: sched_switch's program did not run then */
		b->off_ns += bpf_ktime_get_ns() - b->out_ns;
		b->ready = 1;
		add(OFFCPU_UNSEEN, 1);
		/* the threshold, as at a switch-in seen */
		if (b->off_ns < min_ns) {
			add(OFFCPU_SHORT, 1);
			add(OFFCPU_SHORT_NS, b->off_ns);
			bpf_map_delete_elem(&blocked, &tid);
			return 0;
		}
	}
	task = bpf_get_current_task_btf();
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	mm = task->mm;
	/* not the syscall it blocked in: its stack has moved on */
	if (!mm || PT_REGS_IP(regs) != b->pc || PT_REGS_SP(regs) != b->sp) {
		add(OFFCPU_NOT_SYSCALL, 1);
		add(OFFCPU_NOT_SYSCALL_NS, b->off_ns);
		bpf_map_delete_elem(&blocked, &tid);
		return 0;
	}
	sc = bpf_map_lookup_elem(&scratch, &cpu);
	if (!sc) {
		add(OFFCPU_NO_SCRATCH, 1);
		bpf_map_delete_elem(&blocked, &tid);
		return 0;
	}
	h = &sc->h;
	h->time_ns = b->start_ns;
	h->pid = id >> 32;
	h->tid = tid;
	h->cpu = b->cpu;
	h->flags = SAMPLE_F_OFF_CPU | SAMPLE_F_IN_KERNEL;
	h->pc = h->sp = h->fp = h->lr = 0;
	h->ustack_len = 0;
	h->weight = b->off_ns;
	h->event = event_id;
	h->py_depth = 0;
	bpf_get_current_comm(h->comm, sizeof(h->comm));
	kbytes = (__u64)b->kstack_depth * 8;
	if (kbytes > MAX_KSTACK_DEPTH * 8)
		kbytes = MAX_KSTACK_DEPTH * 8;
	if (bpf_probe_read_kernel(sc->data, kbytes, b->kstack))
		kbytes = 0;
	h->kstack_depth = kbytes / 8;
	bpf_map_delete_elem(&blocked, &tid);

	sized = bpf_map_lookup_elem(&stack_sizes, &tid);
	if (!fill_user(sc, kbytes, task, mm, sized ? sized->size : ustack_size, sized ? sized->top : 0))
		add(OFFCPU_USTACK_FAULT, 1);
	/*
	 * Still in the call it blocked in: its interpreter's frames are the
	 * ones it blocked under (a thread state keeps its frame while the
	 * thread waits without the GIL). Blocks are few: each code object's
	 * names are read, not taken from a recent read.
	 */
	if (python_frames && !(h->flags & SAMPLE_F_EXEC_NEW_MM))
		py_sample(sc, kbytes, h->pid, tid, task, bpf_ktime_get_ns(), false);
	len = sizeof(*h) + kbytes + h->ustack_len +
	      (__u64)h->py_depth * sizeof(struct sample_py_frame);
	if (len > sizeof(*sc))
		return 0;
	if (bpf_ringbuf_output(&samples, sc, len,
			       bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > wakeup_bytes ?
			       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP)) {
		add(OFFCPU_LOST, 1);
		return 0;
	}
	add(OFFCPU_EMITTED, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
