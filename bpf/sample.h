/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared between the sampler (sample.bpf.c) and its loader: fixed-size types only. */
#ifndef SFPROF_BPF_SAMPLE_H
#define SFPROF_BPF_SAMPLE_H

#ifndef MAX_USTACK_BYTES
#define MAX_USTACK_BYTES	262144	/* --stack-size upper bound; cc1's deepest stacks pass 64 KiB */
#endif
#ifndef MIN_USTACK_BYTES
#define MIN_USTACK_BYTES	4096	/* the smallest copy a thread is given */
#endif
#ifndef MAX_SIZED_THREADS
#define MAX_SIZED_THREADS	65536	/* threads with a copy size of their own (LRU) */
#endif
#ifndef MAX_KSTACK_DEPTH
#define MAX_KSTACK_DEPTH	127
#endif
#ifndef STACK_CHUNK
#define STACK_CHUNK		4096	/* user stacks are copied a page at a time */
#endif
#ifndef SAMPLE_COMM_LEN
#define SAMPLE_COMM_LEN		16
#endif

/* sample_hdr.flags */
#define SAMPLE_F_USER_REGS	0x1	/* pc, sp, fp, lr are the thread's user registers */
#define SAMPLE_F_IN_KERNEL	0x2	/* the sample interrupted kernel code */
#define SAMPLE_F_KTHREAD	0x4	/* a kernel thread: no user stack */

/*
 * One sample in the ring buffer: this header; kstack_depth kernel addresses
 * (u64, innermost first); then ustack_len bytes of the user stack from sp.
 * The record is exactly that long: a shallow stack costs the ring little.
 */
struct sample_hdr {
	__u64 time_ns;		/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 pid;		/* tgid */
	__u32 tid;
	__u32 cpu;
	__u32 flags;		/* SAMPLE_F_* */
	__u64 pc, sp, fp, lr;
	__u32 kstack_depth;
	__u32 ustack_len;
	char comm[SAMPLE_COMM_LEN];
};

/* Indexes of the per-CPU counters map. */
#define COUNTER_LOST		0	/* ring buffer full */
#define COUNTER_USTACK_FAULT	1	/* the first page of the stack could not be read */
#define COUNTER_NO_SCRATCH	2	/* no scratch buffer for this CPU: lost */
#define COUNTER_MAX		3

#endif
