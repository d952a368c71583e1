// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* The sampler: at each cpu-clock tick, a task's user registers, a copy of its user stack and its kernel stack. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "sample.h"

#define PF_KTHREAD 0x00200000	/* include/linux/sched.h */

/* Set by the loader before the object is loaded. */
const volatile __u32 ustack_size = 16384;	/* a multiple of STACK_CHUNK, <= MAX_USTACK_BYTES */
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
 * Copy the user stack from sp upwards, a page at a time, into @dst, which has
 * room for ustack_size bytes; stops at the first page that cannot be read
 * (the end of the stack's mapping). Returns the bytes copied.
 */
static __always_inline __u32 copy_stack(__u8 *dst, __u64 sp)
{
	__u64 off = 0, last = (__u64)ustack_size - STACK_CHUNK;

	for (int i = 0; i <= MAX_USTACK_BYTES / STACK_CHUNK; i++) {
		__u64 n = i ? STACK_CHUNK : STACK_CHUNK - (sp & (STACK_CHUNK - 1));

		/* off + n <= ustack_size, in 64 bits so that the verifier keeps the bound */
		if (off > last)
			break;
		asm volatile("%[n] &= 0x1fff" : [n] "+r"(n));
		if (n > STACK_CHUNK)
			break;
		if (bpf_probe_read_user(dst + off, n, (const void *)(sp + off)))
			break;
		off += n;
	}
	return off;
}

SEC("perf_event")
int sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, cpu = bpf_get_smp_processor_id();
	struct task_struct *task;
	struct sample_hdr *h;
	__u32 kbytes = 0;
	__u8 *rec;
	long n;

	if (!(__u32)id || tgid == self_tgid)
		return 0;	/* idle, or ourselves */
	if (filter_pids && !bpf_map_lookup_elem(&targets, &tgid))
		return 0;
	/*
	 * Written in place in the ring, so the stack is copied once: the record
	 * always has room for a full kernel stack and ustack_size bytes, and the
	 * reader uses what the header says was filled.
	 */
	rec = bpf_ringbuf_reserve(&samples, sizeof(*h) + MAX_KSTACK_DEPTH * 8 + ustack_size, 0);
	if (!rec) {
		count(COUNTER_LOST);
		return 0;
	}
	h = (struct sample_hdr *)rec;
	h->time_ns = bpf_ktime_get_ns();
	h->pid = tgid;
	h->tid = (__u32)id;
	h->cpu = cpu;
	h->flags = 0;
	h->pc = h->sp = h->fp = h->lr = 0;
	h->ustack_len = 0;
	bpf_get_current_comm(h->comm, sizeof(h->comm));

	if (!interrupted_user(ctx)) {
		h->flags |= SAMPLE_F_IN_KERNEL;
		n = bpf_get_stack(ctx, rec + sizeof(*h), MAX_KSTACK_DEPTH * 8, 0);
		if (n > 0)
			kbytes = n;
	}
	h->kstack_depth = kbytes / 8;

	task = bpf_get_current_task_btf();
	if (task->flags & PF_KTHREAD) {
		h->flags |= SAMPLE_F_KTHREAD;
	} else {
		/* the registers the task had in user space, even when it is in a syscall now */
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

		h->flags |= SAMPLE_F_USER_REGS;
		h->pc = PT_REGS_IP(regs);
		h->sp = PT_REGS_SP(regs);
		h->fp = PT_REGS_FP(regs);
#if defined(__TARGET_ARCH_arm64)
		h->lr = regs->regs[30];
#endif
		h->ustack_len = copy_stack(rec + sizeof(*h) + MAX_KSTACK_DEPTH * 8, h->sp);
		if (!h->ustack_len)
			count(COUNTER_USTACK_FAULT);
	}

	/*
	 * No wake-up per sample: that is an interrupt and a context switch each.
	 * The reader polls on a timer, and is woken only when the ring fills up.
	 */
	bpf_ringbuf_submit(rec, bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > wakeup_bytes ?
			   BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
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
