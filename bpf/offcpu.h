/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared between the off-CPU sampler (offcpu.bpf.c) and its loader: fixed-size types only. */
#ifndef SFPROF_BPF_OFFCPU_H
#define SFPROF_BPF_OFFCPU_H

#include "sample.h"

#ifndef MAX_BLOCKED
#define MAX_BLOCKED		16384	/* threads blocked at once with their stack held */
#endif

/*
 * A thread that blocked, held from sched_switch until it runs again and
 * leaves the syscall it blocked in: its kernel stack as it blocked, and the
 * user registers its user stack is copied against then (unchanged while it
 * was off the CPU). A thread that blocks again in the same syscall before
 * leaving it (woken, then waiting for a lock) adds to the same block.
 */
struct offcpu_block {
	__u64 start_ns;		/* first switched out (CLOCK_MONOTONIC): the sample's time */
	__u64 out_ns;		/* last switched out */
	__u64 off_ns;		/* off the CPU so far, the pieces that ended */
	__u64 pc, sp;		/* its user registers when it blocked */
	__u32 cpu;
	__u32 ready;		/* switched in again: off_ns is whole until it blocks again */
	__u32 kstack_depth;
	__u32 reserved;
	__u64 kstack[MAX_KSTACK_DEPTH];
};

/* Indexes of the per-CPU counters of the off-CPU sampler. */
#define OFFCPU_EMITTED		0	/* blocks written to the ring */
#define OFFCPU_LOST		1	/* the ring was full */
#define OFFCPU_SHORT		2	/* blocks shorter than the threshold: not recorded */
#define OFFCPU_SHORT_NS		3	/* their time */
#define OFFCPU_FULL		4	/* no room in the blocked map: not recorded */
#define OFFCPU_NOT_SYSCALL	5	/* woke outside a syscall (a page fault): its user stack
					   could not be copied when it ran again */
#define OFFCPU_NOT_SYSCALL_NS	6	/* their time */
#define OFFCPU_NO_SCRATCH	7
#define OFFCPU_USTACK_FAULT	8	/* the first page of the stack could not be read */
#define OFFCPU_UNSEEN		9	/* left its syscall with no switch-in seen: its time
					   off the CPU then ends there, a little late */
#define OFFCPU_COUNTER_MAX	10

#endif
