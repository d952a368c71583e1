/* SPDX-License-Identifier: BSD-2-Clause */
/* The record path after the ring: each sample unwound in its process (proctab.h), encoded (stack_enc.h) and written. */
#ifndef SFPROF_PROCS_H
#define SFPROF_PROCS_H

#include <linux/perf_event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "sample.h"
#include "sfunwind.h"
#include "stack_enc.h"

struct procs_stats {
	uint64_t samples;		/* written */
	uint64_t user_stacks;		/* samples with a user stack */
	uint64_t complete;		/* user stacks unwound to the outermost frame */
	uint64_t processes;		/* processes with samples */
	uint64_t unknown_pid;		/* samples of processes never seen in /proc or events */
	uint64_t copy_ran_out;		/* user stacks cut by a full copy's end or the thread's top */
	uint64_t before_exec;		/* samples of a held process before its exec: not written */
	uint64_t exec_old_image;	/* samples in execve with the old program's registers, no stack */
	uint64_t unnamed;		/* samples the sampler read no name for (SAMPLE_F_NO_COMM) */
};

/* How a sample's user stack copy served its unwind. */
struct procs_copy_use {
	uint32_t copied;	/* bytes in the copy */
	uint32_t used;		/* bytes from sp up to the end of the highest read */
	bool ran_out;		/* the unwind needed bytes past the copy */
	bool unwound;		/* there was a user stack to unwind */
	uint32_t new_size;	/* non-zero: copy this much for the thread from now on, */
	uint64_t new_top;	/* and no further than this (0: no bound) */
};

struct procs;

/**
 * procs__new_cache() - a module cache as recording uses it: no symbol tables,
 * and tables derived from .eh_frame kept in $XDG_CACHE_HOME/sfprof (or
 * ~/.cache/sfprof). @return the cache, or NULL with errno set.
 */
struct sfu_cache *procs__new_cache(void);

/**
 * procs__new() - an empty process table writing to @w.
 * @wlock: held around every call of @w (NULL: @w is this table's alone).
 * @cache: where files are opened; shared, it must outlive the table.
 * @max_depth: frames kept per stack (longer stacks keep top and bottom).
 *
 * One table is used by one thread at a time; several tables (one per
 * unwinding thread) may share @w and @cache.
 *
 * @return the table, or NULL with errno set.
 */
struct procs *procs__new(struct profile_writer *w, pthread_mutex_t *wlock, struct sfu_cache *cache,
			 enum sfu_arch arch, unsigned max_depth);

/* What cannot be known of a process (its mappings, ...), said once per process image. */
typedef void (*procs_warn_fn)(void *ctx, uint32_t pid, const char *comm, const char *why);

/** procs__set_warn() - where to say it; without one, nothing is said. */
void procs__set_warn(struct procs *p, procs_warn_fn fn, void *ctx);

/* A mapping of a file (@m->module set) of a sampled process, told as its record is written. */
typedef void (*procs_module_fn)(void *ctx, uint32_t pid, const struct sfu_mapping *m);

/** procs__set_module_hook() - who is told (the build-ID cache); without one, nobody. */
void procs__set_module_hook(struct procs *p, procs_module_fn fn, void *ctx);

/**
 * procs__error() - @return the first error writing the profile (a full
 * disk, no memory), 0 while there is none: the recording must stop.
 */
int procs__error(const struct procs *p);

/**
 * procs__set_copy_sizes() - threads start with @start bytes of stack copy;
 * with @adaptive, each one's size then follows what its unwinds use
 * (struct copy_size), told in procs_copy_use.new_size.
 */
void procs__set_copy_sizes(struct procs *p, uint32_t start, bool adaptive);

/**
 * procs__set_fp_only() - unwind user stacks by frame pointers only
 * (--call-graph fp), for comparison with a frame-pointer unwinder.
 */
void procs__set_fp_only(struct procs *p, bool fp_only);

/**
 * procs__set_jit() - read the perf maps and jitdumps of the processes (the
 * default), or not: a test of the record path on made-up pids must not read
 * the files and memory of the live processes that have them.
 */
void procs__set_jit(struct procs *p, bool on);

/**
 * procs__set_writer() - write to @w from now on (a window cut: the caller
 * closes the old one). Called while no sample or event is being handled.
 */
void procs__set_writer(struct procs *p, struct profile_writer *w);

/**
 * procs__forget_written() - tell the next file everything again: processes,
 * their mappings and modules (proctab__forget_emitted()) and threads are
 * written anew at their next sample. What was learned (copy sizes of
 * programs) stays. Called while no sample or event is being handled.
 * @return 0 or -ENOMEM.
 */
int procs__forget_written(struct procs *p);

struct python_map_ops;
struct python_stats;

/**
 * procs__set_python() - tell the interpreters found in the table's
 * processes through @ops (the sampler's py_procs map), and name the Python
 * frames of their samples (its callbacks NULL: name them, tell no one);
 * NULL: look for none, write no Python frames (the default). Of the
 * tables sharing one map (@shards of them, this one number @shard), each
 * looks after the processes whose pid % @shards is its number; the
 * samples it writes must be of those. Called before any scan.
 * @return 0 or -ENOMEM.
 */
int procs__set_python(struct procs *p, const struct python_map_ops *ops, unsigned shard,
		      unsigned shards);

/** @return what the table's Python frames cost and gave (python.h). */
const struct python_stats *procs__python_stats(const struct procs *p);

/** procs__free() - accepts NULL. */
void procs__free(struct procs *p);

/**
 * procs__scan() - learn a running process from /proc: its name, executable
 * and executable mappings. @return 0, or -ESRCH when it is gone.
 */
int procs__scan(struct procs *p, pid_t pid);

/** procs__scan_held() - procs__scan() of a process whose samples count from its exec (proctab__scan_held()). */
int procs__scan_held(struct procs *p, pid_t pid);

/** procs__scan_all() - procs__scan() every process in /proc. @return their number. */
int procs__scan_all(struct procs *p);

/** procs__task_event() - apply an mmap, comm (exec), fork or exit record. */
void procs__task_event(struct procs *p, const struct perf_event_header *e, uint64_t time);

/**
 * procs__sample() - unwind a sample in its process's address space and
 * write it (and, the first time, the process, thread and mappings it needs).
 * The stack bytes are not kept. @use says how the stack copy served. A
 * weight past 32 bits (a long block off the CPU) is written as several
 * samples of the same stacks and time, whose weights add up to it.
 */
void procs__sample(struct procs *p, const struct sample_hdr *h, const uint64_t *kstack,
		   const uint8_t *ustack, struct procs_copy_use *use);

/*
 * A sample in three steps, so that the middle one, the unwinding, may run on
 * another thread than the table's (pipeline.h's helping threads):
 * procs__sample_process() and procs__sample_write() on the table's thread,
 * in the samples' order; procs__unwind() anywhere, as long as no task event
 * is applied to the table in between (the address space must not change).
 */

/* A user stack unwound and encoded, apart from any table. */
struct procs_unwound {
	struct stack_enc enc;		/* holds the bytes */
	const uint8_t *cbf;		/* the CBF of the user stack; len 0: none */
	size_t len;
	bool complete;			/* unwound to the outermost frame */
	/*
	 * Not unwound: taken in execve with the registers of the program it
	 * replaces, whose memory or mappings are gone (procs__unwind()).
	 */
	bool old_image;
	int err;			/* encoding failed (-ENOMEM, -ERANGE) */
	struct procs_copy_use use;	/* new_size not set here */
	uint64_t jit_pcs[8];		/* frames in JIT code no table passed (jit.h) */
	size_t njit;
	bool jit_seen;			/* frames in JIT code, the walk complete or not */
};

struct proctab_proc;

/**
 * procs__sample_process() - the process of sample @h, told to the file (with
 * its mappings) the first time. @return it, or NULL when the sample is not
 * to be written (a held process before its exec, counted; no memory, kept as
 * the table's error).
 */
const struct proctab_proc *procs__sample_process(struct procs *p, const struct sample_hdr *h);

/**
 * procs__unwind() - unwind @h's user stack in @as and encode it in @u, with
 * @self's unwinding state (its cache, its frame array, the cut policy): @self
 * must be used by no other thread meanwhile. Touches no table.
 */
void procs__unwind(struct procs *self, const struct sfu_addrspace *as, const struct sample_hdr *h,
		   const uint8_t *ustack, struct procs_unwound *u);

/**
 * procs__sample_write() - write sample @h of @pr with the user stack @u
 * (and, the first time, its thread). @use as procs__sample() gives it.
 */
void procs__sample_write(struct procs *p, const struct proctab_proc *pr, const struct sample_hdr *h,
			 const uint64_t *kstack, const uint8_t *ustack,
			 const struct procs_unwound *u, struct procs_copy_use *use);

/**
 * procs__jit_flush() - the file is about to be closed or cut: the perf maps
 * and jitdumps of the processes read to their end and their code written.
 * Called while no sample or event is being handled.
 */
void procs__jit_flush(struct procs *p, uint64_t time);

struct jit_stats;

/** @return what the JIT recorder read and made. */
const struct jit_stats *procs__jit_stats(const struct procs *p);

/** procs__unwound_release() - free @u's buffers; it can be used again. */
void procs__unwound_release(struct procs_unwound *u);

/** @return the processes the table holds now (to see that it does not grow without end). */
size_t procs__held(const struct procs *p);

/** @return counters for the summary (processes may be read from another thread, atomically). */
const struct procs_stats *procs__stats(const struct procs *p);

#endif
