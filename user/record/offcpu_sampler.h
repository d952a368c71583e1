/* SPDX-License-Identifier: BSD-2-Clause */
/* The off-CPU sampler's loader (bpf/offcpu.bpf.c): blocks of the recorded threads into the sampler's ring. */
#ifndef SFPROF_OFFCPU_SAMPLER_H
#define SFPROF_OFFCPU_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct offcpu_opts {
	/* the sampler's maps, shared: its ring, its targets, its per-thread copy sizes */
	int ring_fd, targets_fd, tids_fd, sizes_fd;
	/* its counters, and its Python processes and threads (when python_frames) */
	int counters_fd, py_procs_fd, py_threads_fd;
	bool python_frames;	/* a blocked thread's Python frames too */
	uint32_t stack_size;	/* bytes of user stack for a thread without a size of its own */
	bool filter_pids, filter_tids;
	uint32_t self_tgid;
	uint64_t min_ns;	/* shorter blocks are counted, not recorded */
	uint32_t event_id;	/* the offcpu-time event's id in the profile */
	uint64_t wakeup_bytes;
};

struct offcpu_stats {
	uint64_t emitted;		/* blocks written to the ring */
	uint64_t lost;			/* the ring was full */
	uint64_t short_blocks, short_ns;	/* below the threshold: not recorded */
	uint64_t full;			/* no room to hold the block: not recorded */
	uint64_t not_syscall, not_syscall_ns;	/* woke outside a syscall: not recorded */
	uint64_t ustack_fault;		/* recorded without a user stack */
	uint64_t still_blocked;		/* off the CPU when the recording stopped: not recorded */
	uint64_t unseen;		/* no switch-in seen: ended at the syscall's exit */
	uint64_t prog_misses;		/* runs of the programs the kernel skipped (recursion):
					   a switch-out missed is a block not seen at all */
};

struct offcpu_sampler;

/**
 * offcpu_sampler__new() - load the off-CPU sampler over the sampler's maps.
 * @err: receives a message fit for the user on failure.
 * @return the sampler, or NULL with errno set.
 */
struct offcpu_sampler *offcpu_sampler__new(const struct offcpu_opts *o, char *err, size_t errlen);

/** offcpu_sampler__attach() - start: sched_switch and sys_exit. @return 0 or -errno. */
int offcpu_sampler__attach(struct offcpu_sampler *oc, char *err, size_t errlen);

/** offcpu_sampler__detach() - stop; the blocks still held are counted as still_blocked. */
void offcpu_sampler__detach(struct offcpu_sampler *oc);

/** offcpu_sampler__stats() - counts so far. */
void offcpu_sampler__stats(struct offcpu_sampler *oc, struct offcpu_stats *st);

/** offcpu_sampler__free() - detach and free; accepts NULL. */
void offcpu_sampler__free(struct offcpu_sampler *oc);

#endif
