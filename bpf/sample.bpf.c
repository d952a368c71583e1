// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* The sampler: at each cpu-clock tick, a task's user registers, a copy of its user stack and its kernel stack. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "sample.h"

#define PF_KTHREAD 0x00200000	/* include/linux/sched.h */
#define START_SLACK 64		/* bytes copied past the sp a process started with (see sample()) */

/* Set by the loader before the object is loaded. */
const volatile __u32 ustack_size = 16384;	/* a multiple of STACK_CHUNK, <= MAX_USTACK_BYTES:
						 * for threads without a size in stack_sizes */
const volatile bool filter_pids = false;	/* only tgids in `targets` */
const volatile bool follow_forks = false;	/* children of targets become targets */
const volatile __u32 self_tgid = 0;		/* sfprof itself, never sampled */
const volatile __u64 wakeup_bytes = 4 << 20;	/* wake the reader once this much is waiting */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 32 << 20);
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 65536);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, COUNTER_MAX);
} counters SEC(".maps");

/* The user-stack copy size of each thread (tid) the loader has sized: it learns from the unwinds. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, MAX_SIZED_THREADS);
} stack_sizes SEC(".maps");

/*
 * A sample is assembled here, then copied into the ring at its exact size:
 * the header, the kernel stack's kstack_depth words, the user stack right
 * after them. One per CPU (the loader sets max_entries): a perf_event
 * program does not nest on its CPU. A per-CPU array cannot hold values this
 * large.
 */
struct scratch {
	struct sample_hdr h;
	/* a chunk more than ever filled: what the verifier can prove of the last, partial chunk */
	__u8 data[MAX_KSTACK_DEPTH * 8 + MAX_USTACK_BYTES + STACK_CHUNK];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct scratch);
	__uint(max_entries, 1);
} scratch SEC(".maps");

/* Only for the loader: its perf buffers of mmap, comm, fork and exit records. */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} task_events SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		(*c)++;
}

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

/*
 * Copy @size bytes of the user stack from sp upwards to @sc's data after
 * @kbytes of kernel stack, in pieces that never cross a page, so that a
 * piece fails only at the end of the stack's mapping (or at a page never
 * touched); stops there. Returns the bytes copied: @size, or fewer where
 * the stack ends.
 *
 * The page sp is in, then whole pages, then what is left: the loop's offset
 * depends only on its counter and the first piece, so that the verifier
 * walks it once per page (an offset that also carried the partial pieces
 * multiplied its states past its limit at 64 pages).
 */
static __always_inline __u32 copy_stack(struct scratch *sc, __u64 kbytes, __u64 sp, __u32 size)
{
	__u64 off, pages, n;
	__u8 *dst;

	if (!size || size > MAX_USTACK_BYTES || kbytes > MAX_KSTACK_DEPTH * 8)
		return 0;
	dst = sc->data + kbytes;
	off = STACK_CHUNK - (sp & (STACK_CHUNK - 1));
	if (off > size)
		off = size;
	/* in 64 bits, masked, so that the verifier keeps the bound */
	asm volatile("%[n] &= 0x1fff" : [n] "+r"(off));
	if (off > STACK_CHUNK || !off || bpf_probe_read_user(dst, off, (const void *)sp))
		return 0;
	pages = (size - off) / STACK_CHUNK;
	for (int i = 0; i < MAX_USTACK_BYTES / STACK_CHUNK; i++) {
		if (i >= pages)
			break;
		if (bpf_probe_read_user(dst + off, STACK_CHUNK, (const void *)(sp + off)))
			return off;
		off += STACK_CHUNK;
	}
	n = size - off;
	asm volatile("%[n] &= 0x1fff" : [n] "+r"(n));
	if (n && n < STACK_CHUNK && off <= MAX_USTACK_BYTES &&
	    !bpf_probe_read_user(dst + off, n, (const void *)(sp + off)))
		off += n;
	return off;
}

SEC("perf_event")
int sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, cpu = bpf_get_smp_processor_id();
	struct task_struct *task;
	struct mm_struct *mm;
	struct sample_hdr *h;
	struct scratch *sc;
	__u32 *sized;
	__u64 kbytes = 0, len, start;
	__u32 size;
	long n;

	if (!tid || tgid == self_tgid)
		return 0;	/* idle, or ourselves */
	if (filter_pids && !bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	sc = bpf_map_lookup_elem(&scratch, &cpu);
	if (!sc) {
		count(COUNTER_NO_SCRATCH);
		return 0;
	}
	h = &sc->h;
	h->time_ns = bpf_ktime_get_ns();
	h->pid = tgid;
	h->tid = tid;
	h->cpu = cpu;
	h->flags = 0;
	h->pc = h->sp = h->fp = h->lr = 0;
	h->ustack_len = 0;
	bpf_get_current_comm(h->comm, sizeof(h->comm));

	if (!interrupted_user(ctx)) {
		h->flags |= SAMPLE_F_IN_KERNEL;
		n = bpf_get_stack(ctx, sc->data, MAX_KSTACK_DEPTH * 8, 0);
		if (n > 0)
			kbytes = (__u64)n & ~7ull;
	}
	h->kstack_depth = kbytes / 8;

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
		/* the registers the task had in user space, even when it is in a syscall now */
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

		h->flags |= SAMPLE_F_USER_REGS;
		h->pc = PT_REGS_IP(regs);
		h->sp = PT_REGS_SP(regs);
		h->fp = PT_REGS_FP(regs);
#if defined(__TARGET_ARCH_arm64)
		h->lr = regs->regs[30];
#endif
		sized = bpf_map_lookup_elem(&stack_sizes, &tid);
		size = sized ? *sized : ustack_size;
		/*
		 * On the stack the process started on, no frame lies above the
		 * sp the kernel gave its entry point: what is past it is argv,
		 * the environment and the auxiliary vector, kilobytes that no
		 * unwind reads.
		 */
		start = mm->start_stack;
		if (h->sp < start && start - h->sp + START_SLACK < size)
			size = start - h->sp + START_SLACK;
		h->ustack_len = copy_stack(sc, kbytes, h->sp, size);
		if (!h->ustack_len)
			count(COUNTER_USTACK_FAULT);
	}

	len = sizeof(*h) + kbytes + h->ustack_len;
	if (len > sizeof(*sc))
		return 0;
	/*
	 * No wake-up per sample: that is an interrupt and a context switch each.
	 * The reader polls on a timer, and is woken only when the ring fills up.
	 */
	if (bpf_ringbuf_output(&samples, sc, len,
			       bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > wakeup_bytes ?
			       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP)) {
		count(COUNTER_LOST);
		return 0;
	}
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u8 one = 1;

	if (!follow_forks || ptgid == ctgid)
		return 0;
	if (bpf_map_lookup_elem(&targets, &ptgid))
		bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
