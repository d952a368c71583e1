/* SPDX-License-Identifier: BSD-2-Clause */
/* The processes a recording sees: their address spaces, kept current by task events, and their samples. */
#ifndef SFPROF_PROCS_H
#define SFPROF_PROCS_H

#include <linux/perf_event.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile.h"
#include "sample.h"
#include "sfunwind.h"

struct procs_stats {
	uint64_t samples;		/* written */
	uint64_t user_stacks;		/* samples with a user stack */
	uint64_t complete;		/* user stacks unwound to the outermost frame */
	uint64_t processes;		/* processes with samples */
	uint64_t unknown_pid;		/* samples of processes never seen in /proc or events */
};

struct procs;

/**
 * procs__new() - an empty process table writing to @w.
 * @max_depth: frames kept per stack (longer stacks keep top and bottom).
 * @return the table, or NULL with errno set.
 */
struct procs *procs__new(struct profile_writer *w, enum sfu_arch arch, unsigned max_depth);

/** procs__free() - accepts NULL. */
void procs__free(struct procs *p);

/**
 * procs__scan() - learn a running process from /proc: its name, executable
 * and executable mappings. @return 0, or -ESRCH when it is gone.
 */
int procs__scan(struct procs *p, pid_t pid);

/** procs__scan_all() - procs__scan() every process in /proc. @return their number. */
int procs__scan_all(struct procs *p);

/** procs__task_event() - apply an mmap, comm (exec), fork or exit record. */
void procs__task_event(struct procs *p, const struct perf_event_header *e, uint64_t time);

/**
 * procs__sample() - unwind a sample in its process's address space and
 * write it (and, the first time, the process, thread and mappings it needs).
 * The stack bytes are not kept.
 */
void procs__sample(struct procs *p, const struct sample_hdr *h, const uint64_t *kstack,
		   const uint8_t *ustack);

/** @return counters for the summary. */
const struct procs_stats *procs__stats(const struct procs *p);

#endif
