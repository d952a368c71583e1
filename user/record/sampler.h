/* SPDX-License-Identifier: BSD-2-Clause */
/* The BPF sampler's loader: samples and task events (mmap, comm, fork, exit), in time order. */
#ifndef SFPROF_SAMPLER_H
#define SFPROF_SAMPLER_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "events.h"
#include "offcpu_sampler.h"
#include "sample.h"	/* struct sample_hdr, shared with bpf/sample.bpf.c */

struct sampler_opts {
	uint32_t freq_hz;
	uint32_t stack_size;	/* bytes of user stack per sample, a multiple of 4096 */
	bool filter;		/* only the target processes (sampler__add_target) */
	bool follow_forks;	/* children of targets become targets */
	uint32_t ring_bytes;	/* the sample ring: a power of two, 4 MiB or more (0: 32 MiB) */
	/*
	 * What to sample on: NULL, cpu-clock at freq_hz, its samples naming no
	 * event; else each event of the list, its samples naming event_ids[i].
	 */
	const struct event_list *events;
	const uint32_t *event_ids;
	uint64_t period;	/* -c: a sample every period events (0: at freq_hz) */
	bool filter_tids;	/* only the threads of sampler__add_tid() */
	bool off_cpu;		/* also the blocks of the recorded threads (offcpu.bpf.c) */
	uint64_t off_cpu_min_ns;	/* shorter blocks are counted, not recorded */
	uint32_t off_cpu_event;	/* the offcpu-time event's id */
	bool no_python;		/* no Python frame walk (--no-python): the program as without it */
};

struct sampler_cbs {
	/* A sample: @kstack has h->kstack_depth entries, @ustack h->ustack_len bytes. */
	void (*sample)(void *ctx, const struct sample_hdr *h, const uint64_t *kstack,
		       const uint8_t *ustack);
	/*
	 * A PERF_RECORD_MMAP2, COMM, FORK or EXIT record with sample_id_all
	 * (pid, tid, time) at its end; @time is that time (CLOCK_MONOTONIC).
	 */
	void (*task_event)(void *ctx, const struct perf_event_header *e, uint64_t time);
};

struct sampler;

/**
 * sampler__new() - load the BPF sampler and open the task event buffers.
 * @err: receives a message fit for the user on failure.
 *
 * Sampling starts with sampler__start(); task events are recorded from now.
 *
 * @return the sampler, or NULL with errno set (EPERM: not privileged enough,
 * ENOENT: no kernel BTF, ...).
 */
struct sampler *sampler__new(const struct sampler_opts *opts, const struct sampler_cbs *cbs,
			     void *ctx, char *err, size_t errlen);

/** sampler__add_target() - sample process @pid (with opts.filter). @return 0 or -errno. */
int sampler__add_target(struct sampler *s, pid_t pid);

/** sampler__is_target() - whether process @pid is sampled: a target or a child of one, or any without opts.filter. */
bool sampler__is_target(struct sampler *s, pid_t pid);

/** sampler__add_tid() - sample thread @tid (with opts.filter_tids). @return 0 or -errno. */
int sampler__add_tid(struct sampler *s, pid_t tid);

/**
 * sampler__start() - attach the events on every CPU (a tracepoint once),
 * and the off-CPU sampler. @return 0 or -errno.
 */
int sampler__start(struct sampler *s, char *err, size_t errlen);

/**
 * sampler__poll() - wait up to @timeout_ms for data, then deliver what arrived:
 * task events and samples interleaved by time, so that a sample is handled
 * with every task event older than it already seen.
 *
 * @return the number of samples delivered, or a negative errno.
 */
int sampler__poll(struct sampler *s, int timeout_ms);

/**
 * sampler__set_window() - sample from @start_ns to before @end_ns
 * (CLOCK_MONOTONIC; UINT64_MAX: no end), at once: the BPF side takes no
 * sample outside it, whenever the events are detached, and the reader drops
 * any taken outside it before (while the events were being attached),
 * counted in sampler_stats.outside, neither recorded nor lost. Off-CPU
 * blocks, stamped with their start, are kept. Without a call: no bounds.
 */
void sampler__set_window(struct sampler *s, uint64_t start_ns, uint64_t end_ns);

/**
 * sampler__drain() - stop sampling and deliver everything still buffered.
 * @return 0 or a negative errno.
 */
int sampler__drain(struct sampler *s);

struct sampler_stats {
	uint64_t lost_ring;	/* the ring was full: the reader was behind */
	uint64_t lost_queue;	/* dropped in user space: the bound of the late queue */
	uint64_t lost_scratch;	/* no scratch buffer for the CPU (should not happen) */
	uint64_t malformed;	/* ring records shorter than their header said: lost too */
	uint64_t outside;	/* taken outside sampler__set_window()'s window: dropped, not lost */
	uint64_t py_truncated;	/* Python chains cut at PY_MAX_FRAMES */
	uint64_t py_faults;	/* Python frame walks ended by a read that failed */
	bool direct;		/* user stacks read straight into the ring (the program sample) */
	uint64_t step_ns[STEP_MAX];	/* SFPROF_SAMPLER_CUT=times: each step's ns (STEP_*), summed */
};

struct python_map_ops;

/**
 * sampler__python_ops() - @ops that tell the sampler's frame walk which
 * processes run an interpreter (py_procs): safe from any thread, valid
 * while the sampler is. @return 0, or -EOPNOTSUPP when the sampler walks
 * no Python frames (opts.no_python, or a kernel without bpf_loop(), 5.17).
 */
int sampler__python_ops(struct sampler *s, struct python_map_ops *ops);

/** sampler__stats() - counts so far, from the BPF side and the reader. */
void sampler__stats(struct sampler *s, struct sampler_stats *st);

/**
 * sampler__offcpu_stats() - the off-CPU sampler's counts.
 * @return 0, or -ENOENT when there is no off-CPU sampler.
 */
int sampler__offcpu_stats(struct sampler *s, struct offcpu_stats *st);

/** @return samples lost, all causes together. */
uint64_t sampler__lost(struct sampler *s);

/**
 * sampler__set_stack_copy() - copy @bytes of user stack for thread @tid from
 * now on (a multiple of STACK_CHUNK, MIN_USTACK_BYTES to MAX_USTACK_BYTES),
 * and none past @top (0: no bound); threads without a size get
 * sampler_opts.stack_size. @return 0 or -errno.
 */
int sampler__set_stack_copy(struct sampler *s, uint32_t tid, uint32_t bytes, uint64_t top);

/** sampler__forget_thread() - the thread exited: its size goes. */
void sampler__forget_thread(struct sampler *s, uint32_t tid);

/** sampler__free() - detach and free; accepts NULL. */
void sampler__free(struct sampler *s);

#endif
