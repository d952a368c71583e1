/* SPDX-License-Identifier: BSD-2-Clause */
/* The record path behind the ring: a bounded queue per unwinding thread, each thread with its own process table. */
#ifndef SFPROF_PIPELINE_H
#define SFPROF_PIPELINE_H

#include <linux/perf_event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "jit.h"
#include "prepare.h"
#include "procs.h"

/* How many unwinding threads at most, whatever the CPUs. */
#define PIPELINE_MAX_WORKERS 16
/* A thread's queue is at least this big: room for a few of the largest samples. */
#define PIPELINE_MIN_QUEUE (1u << 20)

struct pipeline_opts {
	unsigned workers;		/* unwinding threads, 1 to PIPELINE_MAX_WORKERS */
	/*
	 * Bytes of samples and task events waiting for their thread, all
	 * threads together, each thread's queue an equal share (allocated at
	 * once, touched as used). Samples leave the last eighth of a queue (at
	 * most 1 MiB) to task events: losing one misleads the process table, losing a sample
	 * only loses the sample. Past the bound an item is dropped and counted.
	 */
	size_t queue_bytes;
	enum sfu_arch arch;
	unsigned max_depth;		/* frames kept per stack */
	uint32_t copy_start;		/* a new thread's stack copy size */
	bool copy_adaptive;		/* sizes follow what the unwinds use */
	size_t module_bytes;		/* bound on the unwind tables of files opened (0: none) */
	bool prepare;			/* open files when mapped (prepare.h), not at first sample */
	bool fp_only;			/* unwind by frame pointers only (--call-graph fp) */
};

struct pipeline_stats {
	struct procs_stats procs;	/* summed over the threads */
	uint64_t handled;		/* samples handed to an unwinding thread and done */
	uint64_t ustack_bytes;		/* the user stack bytes those carried */
	uint64_t resized;		/* per-thread copy sizes published */
	uint64_t dropped;		/* samples dropped at the queue bound */
	uint64_t dropped_events;	/* task events dropped at their bound */
	uint64_t queued_peak;		/* the most bytes queued at once in one thread's queue */
	uint64_t queue_bytes;		/* the size of each thread's queue */
	uint64_t modules_refused;	/* files not loaded at the module_bytes bound */
	uint64_t module_memory;		/* what the files loaded hold now */
	uint64_t slow;			/* samples that took a thread over PIPELINE_SLOW_NS */
	uint64_t slowest_ns;		/* the longest a sample took */
	uint64_t helped;		/* samples unwound by a thread other than their process's */
	/* the handled samples' time (CLOCK_MONOTONIC, on a busy thread about its CPU time) in each step */
	uint64_t process_ns;		/* finding the process: its mappings told to the file the first time */
	uint64_t unwind_ns;		/* unwinding and encoding the user stack */
	uint64_t write_ns;		/* the kernel stack, Python frames, the sample written (compression included) */
	struct prepare_stats prepare;
	struct jit_stats jit;		/* summed over the threads; read once they have ended */
	uint64_t joined_at;		/* CLOCK_MONOTONIC: pipeline__finish() had the queues handled */
	uint64_t py_processes;		/* processes found running a Python interpreter */
	uint64_t py_frames;		/* Python frames named */
	uint64_t py_unresolved;		/* Python frames whose code object could not be read */
	uint64_t py_stale;		/* Python frames whose code object was gone when named */
};

/* A sample handled slower than this held its thread up: a file opened, a table made. */
#define PIPELINE_SLOW_NS 10000000ull

/* A thread's new stack copy size; called from an unwinding thread. @return 0 or -errno. */
typedef int (*pipeline_resize_fn)(void *ctx, uint32_t tid, uint32_t bytes, uint64_t top);

struct pipeline;

/**
 * pipeline__new() - unwinding threads (not started yet) writing to @w.
 * @wlock: held around every call of @w; the caller holds it too when it
 *         writes to @w while the threads run.
 *
 * Samples go to the thread of their process (pid % workers), so that one
 * process's samples and task events are handled in their order, and the
 * threads with nothing queued unwind for the others (a batch of samples at
 * a time, written in order by their own thread); task events
 * go to every thread, and every thread learns every running process, so
 * that each knows what it needs of processes it does not own (a fork's
 * parent) without opening their files. Files are opened
 * through one module cache that all threads share.
 *
 * @return the pipeline, or NULL with errno set.
 */
struct pipeline *pipeline__new(struct profile_writer *w, pthread_mutex_t *wlock,
			       const struct pipeline_opts *opts);

/** pipeline__set_warn() - what cannot be known of a process; called from the unwinding threads. */
void pipeline__set_warn(struct pipeline *pl, procs_warn_fn fn, void *ctx);

/** Whether process @pid is recorded: its new mappings are prepared only then. */
typedef bool (*pipeline_wanted_fn)(void *ctx, uint32_t pid);

/** pipeline__set_wanted() - which processes' files to prepare (all without one). */
void pipeline__set_wanted(struct pipeline *pl, pipeline_wanted_fn fn, void *ctx);
struct python_map_ops;

/** pipeline__set_python() - procs__set_python() of every thread (before any scan). @return 0 or -errno. */
int pipeline__set_python(struct pipeline *pl, const struct python_map_ops *ops);

/** pipeline__set_module_hook() - procs__set_module_hook() of every thread (before pipeline__start()). */
void pipeline__set_module_hook(struct pipeline *pl, procs_module_fn fn, void *ctx);

/**
 * pipeline__set_map_hook() - prepare__set_hook(): @fn told of each new
 * executable mapping with a build ID, on the thread that calls
 * pipeline__task_event(), as it does (before pipeline__start(); nothing is
 * told without preparation).
 */
void pipeline__set_map_hook(struct pipeline *pl, prepare_map_fn fn, void *ctx);

/**
 * Whether unwinding thread @worker's queue is backing up, told from that
 * thread: after each batch, and once it has handled what was queued when
 * it looked. @backlog from a quarter of the queue full until it is down to
 * a sixteenth.
 */
typedef void (*pipeline_backlog_fn)(void *ctx, unsigned worker, bool backlog);

/** pipeline__set_backlog() - where each thread says so (before pipeline__start()). */
void pipeline__set_backlog(struct pipeline *pl, pipeline_backlog_fn fn, void *ctx);

/** pipeline__set_resize() - where new stack copy sizes go (see procs_copy_use.new_size). */
void pipeline__set_resize(struct pipeline *pl, pipeline_resize_fn fn, void *ctx);

/** pipeline__scan() - learn a running process from /proc (before pipeline__start()). @return 0 or -errno. */
int pipeline__scan(struct pipeline *pl, pid_t pid);

/**
 * pipeline__scan_held() - pipeline__scan() of the command sfprof starts,
 * held before its exec: its samples are recorded from its exec on
 * (proctab__scan_held()). @return 0 or -errno.
 */
int pipeline__scan_held(struct pipeline *pl, pid_t pid);

/** pipeline__scan_all() - every process in /proc. @return their number, or -errno. */
int pipeline__scan_all(struct pipeline *pl);

/** pipeline__start() - start the unwinding threads. @return 0 or -errno. */
int pipeline__start(struct pipeline *pl);

/**
 * pipeline__sample() - queue a copy of a sample for its process's thread;
 * dropped and counted when the queue bound is reached. Never blocks.
 */
void pipeline__sample(struct pipeline *pl, const struct sample_hdr *h, const uint64_t *kstack,
		      const uint8_t *ustack);

/**
 * pipeline__task_event() - queue a copy of a task event for every thread.
 * Never blocks. A thread asleep is woken by the next pipeline__sample() or
 * pipeline__kick(): a round's events wake it once.
 */
void pipeline__task_event(struct pipeline *pl, const struct perf_event_header *e, uint64_t time);

/** pipeline__kick() - wake the threads asleep with items queued: at the end of each round of reading. */
void pipeline__kick(struct pipeline *pl);

/**
 * pipeline__wait_for_room() - from now on, pipeline__sample() and
 * pipeline__task_event() wait for room at the bound instead of dropping: for
 * the backlog read after sampling stopped, when waiting loses nothing.
 */
void pipeline__wait_for_room(struct pipeline *pl);

/**
 * pipeline__error() - @return the first error writing the profile in any
 * thread (the recording must stop), or 0.
 */
int pipeline__error(struct pipeline *pl);

/**
 * pipeline__finish() - let every thread handle what it has queued, then stop
 * them. Called once, after the last pipeline__sample(). @return
 * pipeline__error().
 */
int pipeline__finish(struct pipeline *pl);

/**
 * pipeline__stats() - figures so far; exact after pipeline__finish(),
 * approximate (processes, handled, dropped) while the threads run.
 */
void pipeline__stats(struct pipeline *pl, struct pipeline_stats *st);

/**
 * pipeline__cut() - the window barrier, called by the draining thread (the
 * queues' only writer), which queues nothing while it runs: wait until every
 * unwinding thread has handled every item queued before the cut, then point
 * every thread at @w and make each tell it again, at their next use, every
 * process, thread, module and mapping, so that a file started at a cut is a
 * complete profile. The caller closes the old writer after it. The threads
 * keep running; nothing queued is dropped. @return 0, pipeline__error(), or
 * -ENOMEM (then the threads may not have told @w everything again).
 */
int pipeline__cut(struct pipeline *pl, struct profile_writer *w);

struct pipeline_trim {
	size_t modules;		/* modules released */
	size_t queue_bytes;	/* queue bytes given back (pages never touched count too) */
	bool heap;		/* malloc gave memory back */
};

/**
 * pipeline__trim() - give back what the recording holds and no longer needs:
 * the modules no process maps any more, the queue pages a backlog touched
 * beyond each queue's working set, and the free memory in malloc's arenas.
 * Called now and then by the draining thread (the queues' writer), while the
 * threads run. @tr: what was given back, or NULL. @return modules released.
 */
size_t pipeline__trim(struct pipeline *pl, struct pipeline_trim *tr);

/** pipeline__free() - stops the threads if they run (dropping what is queued); accepts NULL. */
void pipeline__free(struct pipeline *pl);

#endif
