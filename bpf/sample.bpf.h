/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/* BPF-only parts of the samplers (sample.bpf.c, offcpu.bpf.c): their shared maps, the scratch sample and the user stack copy. */
#ifndef SFPROF_SAMPLE_BPF_H
#define SFPROF_SAMPLE_BPF_H

#include "py_walk.h"
#include "sample.h"

#define PF_KTHREAD 0x00200000	/* include/linux/sched.h */
#define START_SLACK 64		/* bytes copied past the sp a process started with (see fill_user()) */

/*
 * The maps both programs use (sample.bpf.c's; the off-CPU object's are given
 * the sampler's fds by its loader): one ring, one set of targets and tids,
 * one table of per-thread copy sizes. Declared once, so that they cannot
 * drift apart.
 */
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
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 4096);
} tids SEC(".maps");

/* The user-stack copy of each thread (tid) the loader has sized: it learns from the unwinds. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct stack_copy);
	__uint(max_entries, MAX_SIZED_THREADS);
} stack_sizes SEC(".maps");

/*
 * A sample is assembled here, then copied into the ring at its exact size:
 * the header, the kernel stack's kstack_depth words, the user stack right
 * after them. One per CPU and per kind of program that cannot interrupt
 * another of its kind on that CPU. A per-CPU array cannot hold values this
 * large.
 */
/* The sampler's counters (COUNTER_*), shared with the off-CPU sampler. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, COUNTER_MAX);
} counters SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		(*c)++;
}

struct scratch {
	struct sample_hdr h;
	/*
	 * a chunk more than ever filled: what the verifier can prove of the
	 * last, partial chunk; then the Python frames (sample.bpf.c's only)
	 */
	__u8 data[MAX_KSTACK_DEPTH * 8 + MAX_USTACK_BYTES + STACK_CHUNK +
		  PY_MAX_FRAMES * sizeof(struct sample_py_frame)];
};

/*
 * Copy @size bytes of the user stack from sp upwards to @sc's data after
 * @kbytes of kernel stack: in one read when @whole (the stack goes on that
 * far, user_regs() knows), else, or when that read fails, in pieces that
 * never cross a page, so that a piece fails only at the end of the stack's
 * mapping (or at a page never touched); stops there. Returns the bytes
 * copied: @size, or fewer where the stack ends.
 *
 * The page sp is in, then whole pages, then what is left: the loop's offset
 * depends only on its counter and the first piece, so that the verifier
 * walks it once per page (an offset that also carried the partial pieces
 * multiplied its states past its limit at 64 pages).
 */
static __always_inline __u32 copy_stack(struct scratch *sc, __u64 kbytes, __u64 sp, __u32 size,
				       bool whole)
{
	__u64 off, pages, n;
	__u8 *dst;

	if (!size || size > MAX_USTACK_BYTES || kbytes > MAX_KSTACK_DEPTH * 8)
		return 0;
	dst = sc->data + kbytes;
	/* one read for the whole stack: each costs hundreds of ns whatever its size */
	n = size;
	asm volatile("%[n] &= 0x7ffff" : [n] "+r"(n));
	if (whole && n <= MAX_USTACK_BYTES && !bpf_probe_read_user(dst, n, (const void *)sp))
		return n;
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

/*
 * Whether @task, a 64-bit task whose user registers are @regs, is inside
 * execve(2) or execveat(2): the system call it is in (orig_ax, syscallno;
 * -1 outside one). A 32-bit task's calls have other numbers: never said.
 */
static __always_inline bool in_execve(struct task_struct *task, struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	__u64 nr = regs->orig_ax;

	if (task->thread_info.status & 0x0002)	/* TS_COMPAT: an ia32 system call */
		return false;
	/*
	 * An exception keeps its error code in orig_ax; a system call's ax is
	 * -ENOSYS from its entry until it returns (execve sets no other).
	 */
	return (nr == 59 || nr == 322) && regs->ax == (__u64)-38;
#elif defined(__TARGET_ARCH_arm64)
	int nr = regs->syscallno;

	if (regs->pstate & 0x10)		/* PSR_MODE32_BIT: an AArch32 task */
		return false;
	return nr == 221 || nr == 281;
#else
#error "sfprof's sampler knows x86-64 and arm64"
#endif
}

/*
 * The user registers of @task (the current task, with an mm) into @h.
 * @return how many bytes of its user stack to copy from sp: @size, less
 * where the stack ends first (its start, its outermost frame at @top, 0:
 * no bound), 0 when there is none to copy; @whole says it ends there, so
 * that every byte up to it can be read (in one read).
 */
static __always_inline __u32 user_regs(struct sample_hdr *h, struct task_struct *task,
				       struct mm_struct *mm, __u32 size, __u64 top, bool *whole)
{
	/* the registers the task had in user space, even when it is in a syscall now */
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u64 start;

	h->flags |= SAMPLE_F_USER_REGS;
	h->pc = PT_REGS_IP(regs);
	h->sp = PT_REGS_SP(regs);
	h->fp = PT_REGS_FP(regs);
#if defined(__TARGET_ARCH_arm64)
	h->lr = regs->regs[30];
#endif
	if (in_execve(task, regs)) {
		h->flags |= SAMPLE_F_EXECVE;
		/*
		 * A new address space has no code bounds until the ELF loader
		 * sets them, right before it gives the thread the new
		 * program's registers: till then the registers are the old
		 * program's, and what is at their sp is not their stack.
		 */
		if (!mm->end_code) {
			h->flags |= SAMPLE_F_EXEC_NEW_MM;
			return 0;
		}
	}
	/*
	 * On the stack the process started on, no frame lies above the sp the
	 * kernel gave its entry point: what is past it is argv, the environment
	 * and the auxiliary vector, kilobytes that no unwind reads.
	 */
	/*
	 * A thread's outermost frame, as its unwinds found it: its mapping
	 * ends a little above, and a read past a mapping's end faults, the
	 * dearest read there is.
	 */
	if (h->sp < top && top - h->sp <= size) {
		*whole = true;
		return top - h->sp;
	}
	*whole = false;
	start = mm->start_stack;	/* its line is seldom in the cache: only without a top */
	if (h->sp < start && start - h->sp + START_SLACK < size) {
		size = start - h->sp + START_SLACK;
		*whole = true;
	}
	return size;
}

/*
 * The user registers of @task (the current task, with an mm) into @sc's
 * header, and @size bytes of its user stack after @kbytes of kernel stack,
 * none past @top (0: no bound; see user_regs()). @return false when the
 * stack's first page could not be read.
 */
static __always_inline bool fill_user(struct scratch *sc, __u64 kbytes, struct task_struct *task,
				      struct mm_struct *mm, __u32 size, __u64 top)
{
	struct sample_hdr *h = &sc->h;
	bool whole;

	size = user_regs(h, task, mm, size, top, &whole);
	if (h->flags & SAMPLE_F_EXEC_NEW_MM)
		return true;
	h->ustack_len = copy_stack(sc, kbytes, h->sp, size, whole);
	return h->ustack_len != 0;
}

#endif
