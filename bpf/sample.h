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

/* A thread's user stack copy (the map stack_sizes, keyed by tid): what user space learned from its unwinds. */
struct stack_copy {
	__u32 size;	/* bytes copied from sp */
	__u32 reserved;
	__u64 top;	/* and none past this address (its outermost frame's); 0: no bound */
};
#endif
#ifndef SAMPLE_COMM_LEN
#define SAMPLE_COMM_LEN		16
#endif

/* sample_hdr.flags */
#define SAMPLE_F_USER_REGS	0x1	/* pc, sp, fp, lr are the thread's user registers */
#define SAMPLE_F_IN_KERNEL	0x2	/* the sample interrupted kernel code */
#define SAMPLE_F_KTHREAD	0x4	/* a kernel thread: no user stack */
#define SAMPLE_F_OFF_CPU	0x8	/* taken when the thread blocked (offcpu.bpf.c) */
/* the thread (a 64-bit one) is inside execve(2) or execveat(2) */
#define SAMPLE_F_EXECVE		0x10
/*
 * ... past the point where the new program's address space replaced the
 * old one: pc, sp, fp, lr are still the old program's, whose memory is
 * gone. No user stack is copied.
 */
#define SAMPLE_F_EXEC_NEW_MM	0x20
/* the sample carries the thread's Python frames (py_depth records of struct sample_py_frame) */
#define SAMPLE_F_PYTHON		0x40
/*
 * comm is not filled in: the thread has a stack_sizes entry, which the
 * loader makes only for a thread it has seen a sample of, and so named; a
 * rename after that reaches it as a comm event.
 */
#define SAMPLE_F_NO_COMM	0x80

#ifndef MAX_EVENTS
#define MAX_EVENTS		64	/* events of one recording (-e, --off-cpu) */
#endif

/*
 * The bpf_cookie of each attachment: the event's id in the profile (0: the
 * header's default, no event record), whether a sample weighs its period
 * (events counted) or 1 (timers), and for a tracepoint its period (the BPF
 * side counts: the kernel runs a tracepoint's program at every hit).
 */
#define COOKIE_EVENT_MASK	0xffffull
#define COOKIE_F_WEIGHT_PERIOD	(1ull << 16)
#define COOKIE_PERIOD_SHIFT	32

/*
 * One sample in the ring buffer: this header; kstack_depth kernel addresses
 * (u64, innermost first); then ustack_len bytes of the user stack from sp;
 * then py_depth struct sample_py_frame (innermost first, not 8-byte aligned
 * when ustack_len is not). The record is exactly that long: a shallow stack
 * costs the ring little.
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
	__u64 weight;		/* events the sample stands for; ns off the CPU (SAMPLE_F_OFF_CPU) */
	__u32 event;		/* the event's id in the profile, 0: the default (cpu-clock) */
	__u32 py_depth;		/* Python frames after the user stack (SAMPLE_F_PYTHON) */
};

/* sample_py_frame.flags */
#define SAMPLE_PY_F_ENTRY	0x1	/* entered from C: the innermost frame of one _PyEval_EvalFrameDefault call */
#define SAMPLE_PY_F_TRUNCATED	0x2	/* on the outermost record: the chain went on past PY_MAX_FRAMES */

/*
 * One Python frame as read at sample time. @instr is what the interpreter
 * keeps: 3.10 f_lasti (an int, in code units, -1 before the first one),
 * 3.11 and 3.12 prev_instr, 3.13 instr_ptr (addresses into the code
 * object's co_code_adaptive): user/record/python.c makes it a byte offset.
 */
struct sample_py_frame {
	__u64 code;		/* the code object's address */
	__u64 instr;
	__u32 flags;		/* SAMPLE_PY_F_* */
	__u32 reserved;		/* py_check_hash() of the code object's names (0: not read) */
};

/* Indexes of the per-CPU counters map. */
/*
 * Parts of a sample the sampler leaves out (its cost_cut, set from
 * SFPROF_SAMPLER_CUT): only for scripts/bench-pressure, which measures what
 * each part costs. A recording made with any is incomplete.
 */
#define SAMPLE_CUT_AFTER_FILTER	0x1	/* return once the task is known to be recorded */
#define SAMPLE_CUT_SIZE_LOOKUP	0x2	/* every thread copies ustack_size: no per-thread size */
#define SAMPLE_CUT_KSTACK	0x4	/* no kernel stack */
#define SAMPLE_CUT_USTACK	0x8	/* no user stack copy (registers still read) */
#define SAMPLE_CUT_PYTHON	0x10	/* no Python walk */
#define SAMPLE_CUT_OUTPUT	0x20	/* assembled, not put in the ring */
#define SAMPLE_CUT_COMM		0x40	/* no comm */
#define SAMPLE_CUT_DIRECT	0x80	/* sample_copied where sample could run (the loader's) */
/* not a cut: the per-sample map lookups (targets, stack_sizes, py_procs) made twice, to measure one */
#define SAMPLE_TWICE_LOOKUPS	0x100
/* not a cut: the ns of each step of the program sample (STEP_*) summed per CPU in step_ns */
#define SAMPLE_TIMES		0x200

#define STEP_FILTER	0	/* the pid filter */
#define STEP_HEADER	1	/* the scratch sample's header: time, ids, comm (see SAMPLE_F_NO_COMM); the kernel stack */
#define STEP_REGS	2	/* the user registers, whether Python */
#define STEP_RESERVE	3	/* the ring record reserved, the kernel stack written in (put_direct()) */
#define STEP_COPY	4	/* the user stack read (into the record, or the scratch sample) */
#define STEP_SUBMIT	5	/* the header written in and the record submitted, or the sample output */
#define STEP_SAMPLES	6	/* samples that went through every step: a count, not ns */
#define STEP_MAX	7

#define COUNTER_LOST		0	/* ring buffer full */
#define COUNTER_USTACK_FAULT	1	/* the first page of the stack could not be read */
#define COUNTER_NO_SCRATCH	2	/* no scratch buffer for this CPU: lost */
#define COUNTER_PY_TRUNCATED	3	/* Python chains cut at PY_MAX_FRAMES */
#define COUNTER_PY_FAULT	4	/* Python reads that failed (each ends its chain) */
#define COUNTER_MAX		5

#endif
