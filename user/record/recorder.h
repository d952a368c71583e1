/* SPDX-License-Identifier: BSD-2-Clause */
/* The record path assembled once: sampler, build-ID keeper, unwinding threads, writer lock and memory budget; its loop and its drain. */
#ifndef SFPROF_RECORDER_H
#define SFPROF_RECORDER_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "offcpu_sampler.h"
#include "pipeline.h"
#include "profile/profile.h"
#include "rt_budget.h"
#include "sampler.h"

/* The copy a thread starts with; its own unwinds then size it (unless copy_adaptive is off). */
#define RECORDER_STACK_START	65536
/* Frames kept per stack: perf's default max-stack is 127. */
#define RECORDER_MAX_DEPTH	128

/*
 * What --max-memory buys, the one place it is split: the sample ring 1/8 (a
 * power of two, 4 to 32 MiB; for a lasting low rate only what a quarter of
 * a second of samples needs), samples waiting to be unwound 3/8, the index
 * of stacks written 1/16, the unwind tables of the files sampled 1/4, and
 * the flight recorder's slices 1/8 (record --flight-recorder).
 */
struct recorder_budget {
	uint32_t ring;
	uint64_t queues;
	uint64_t stack_index;
	uint64_t modules;
	uint64_t flight;
};

/**
 * recorder_budget__split() - the shares of @max_memory; @rate_hz, when not
 * 0, sizes the ring for that rate on the CPUs this machine may have
 * (rate_ring_bytes()), else the ring takes its whole share.
 */
void recorder_budget__split(uint64_t max_memory, uint32_t rate_hz, struct recorder_budget *b);

struct recorder_opts {
	const char *name;		/* "record", "agent": messages say "sfprof NAME: ..." */
	/*
	 * The sampler as the command wants it; ring_bytes is the budget's,
	 * no_python follows python below.
	 */
	struct sampler_opts sampler;
	uint64_t max_memory;		/* split by recorder_budget__split() */
	bool ring_by_rate;		/* the ring sized for sampler.freq_hz, not the bound alone */
	unsigned workers;		/* unwinding threads (0: the CPUs online, at most 4) */
	unsigned max_depth;		/* frames kept per stack (0: RECORDER_MAX_DEPTH) */
	bool copy_adaptive;		/* per-thread copy sizes, from sampler.stack_size on */
	bool prepare;			/* open a file when a process maps it */
	bool fp_only;			/* frame pointers only */
	bool python;			/* Python frames */
	bool say_no_python;		/* say when the kernel cannot walk them */
	/* the build-ID keeper, its bound and how long what the recording uses is kept */
	bool buildid;
	uint64_t buildid_bytes;
	uint64_t buildid_protect_s;
	/* real-time priority within a budget for the reader and the unwinding threads */
	bool rt;
	unsigned rt_pct;
	/* what is recorded: every process (all), these processes, these threads */
	bool all;
	const pid_t *pids;
	size_t npids;
	const pid_t *tids, *tid_pids;	/* each thread, and its process */
	size_t ntids;
	pid_t held;			/* a command forked and held before its exec (0: none) */
	/*
	 * Sampling's window [t0, t0 + duration) is exact: the BPF side takes no
	 * sample outside it (record's --duration); else samples come until
	 * the drain.
	 */
	bool exact_window;
	double duration;		/* seconds; 0: until stopped */
};

/* From the hooks' returns: stop without an error; the round begins again (a policy recovered). */
#define RECORDER_STOP	1
#define RECORDER_AGAIN	2

/*
 * A command's policy, called from the thread that runs recorder__run() (and
 * reads the ring). Every hook may be NULL.
 */
struct recorder_hooks {
	/* before each sample or task event of time @time is queued: a policy's cut */
	void (*item)(void *ctx, uint64_t time);
	/* whether recording stops before the next round (a signal, a policy's error) */
	bool (*stopped)(void *ctx);
	/* reading the ring failed with @err: say it; recording stops */
	void (*read_failed)(void *ctx, int err);
	/*
	 * After each round's poll with @err pipeline__error() (0: none), and
	 * after a writer's tick that failed with @err. @return 0 to go on,
	 * RECORDER_AGAIN (the policy recovered: a new file) or -errno to stop
	 * (said). NULL: stop on any error.
	 */
	int (*check)(void *ctx, int err);
	/* each round at @now (CLOCK_MONOTONIC): @return 0, RECORDER_STOP or -errno to stop (said) */
	int (*round)(void *ctx, uint64_t now);
	/* once a second, before what the recorder does then: the same returns */
	int (*second)(void *ctx, uint64_t now);
	/* once a second, after the writer's tick: a progress line */
	void (*progress)(void *ctx);
	/* what cannot be known of a process; from the unwinding threads. NULL: nothing said */
	procs_warn_fn warn;
	/* whether lost samples are written once a second too, not only at cuts and at the end */
	bool lost_each_second;
};

struct recorder;

/**
 * recorder__new() - load the sampler (task events are recorded from now on).
 * @msg: receives a message fit for the user on failure.
 * @return the recorder, or NULL with errno set.
 */
struct recorder *recorder__new(const struct recorder_opts *opts, const struct recorder_hooks *hooks,
			       void *ctx, char *msg, size_t msglen);

/**
 * recorder__prepare() - start the build-ID keeper, name the targets, make
 * the unwinding threads (not started) writing to @w, and learn what runs
 * already. Says why on stderr when it fails.
 * @return 0 or -errno.
 */
int recorder__prepare(struct recorder *r, struct profile_writer *w);

/**
 * recorder__start() - start the unwinding threads, the reader's real-time
 * budget and sampling on every CPU; sampling's window starts when it
 * returns. Says why on stderr when it fails. @return 0 or -errno.
 */
int recorder__start(struct recorder *r);

/**
 * recorder__run() - read the ring until stopped: hooks->stopped, the
 * duration, an error (reading, or writing unless hooks->check recovers), or
 * a hook's stop. Each round: poll, kick the threads, check, the round's
 * policy; each second: the policy's, the trim of what processes long gone
 * held, the lost samples, the writer's tick, the progress line.
 * @return 0, or the -errno that stopped it (said).
 */
int recorder__run(struct recorder *r);

enum recorder_step { RECORDER_READING = 1, RECORDER_WRITING };

/**
 * recorder__drain() - after recorder__run(): the ring read to its end (not
 * after an error @err), every sample queued unwound and written, the lost
 * samples written. @step: which failed (not said).
 * @return 0, or the first -errno (@err itself when it is one).
 */
int recorder__drain(struct recorder *r, int err, enum recorder_step *step);

/**
 * recorder__cut() - the policy's cut, from the reading thread: every item
 * queued until now is written to the old writer, every later one to @w,
 * which starts a whole profile. @return 0 or -errno (pipeline__cut()).
 */
int recorder__cut(struct recorder *r, struct profile_writer *w);

/**
 * recorder__set_writer() - @w is what the threads now write (cut by the
 * caller through recorder__pipeline(), as the flight recorder does).
 */
void recorder__set_writer(struct recorder *r, struct profile_writer *w);

/** recorder__writer() - what the threads write. */
struct profile_writer *recorder__writer(struct recorder *r);

/** recorder__written() - the samples and bytes the writer has taken so far, while the threads run. */
void recorder__written(struct recorder *r, uint64_t *samples, uint64_t *bytes);

/** recorder__pipeline() - the unwinding threads, for a cut made elsewhere (flight__cut()). */
struct pipeline *recorder__pipeline(struct recorder *r);

/** recorder__write_lost() - the samples lost since the last call, into the writer. @return 0 or -errno. */
int recorder__write_lost(struct recorder *r);

/**
 * recorder__end_threads() - stop the unwinding threads, each first through
 * its queue with @finish, else dropping it: the writer is the caller's
 * again. recorder__restart() makes new ones.
 */
void recorder__end_threads(struct recorder *r, bool finish);

/**
 * recorder__restart() - new unwinding threads writing to @w, started, after
 * recorder__end_threads() (a write error ends threads for good).
 * @return 0 or -errno (said).
 */
int recorder__restart(struct recorder *r, struct profile_writer *w);

struct recorder_stats {
	struct sampler_stats sampler;
	struct pipeline_stats pipeline;
	bool has_offcpu;
	struct offcpu_stats offcpu;
	uint64_t lost_written;		/* lost samples written so far */
	unsigned workers;
	int scanned;			/* processes running at the start */
	struct recorder_budget budget;
	/* CLOCK_MONOTONIC: sampling's window [t0, t_end); the ring drained, the threads through */
	uint64_t t0, t_end, drained, unwound;
	struct rt_budget_stats reader_rt;
	struct rt_budget_stats unwind_rt;	/* summed over the threads */
};

/** recorder__stats() - figures so far (see pipeline__stats() for when they are exact). */
void recorder__stats(struct recorder *r, struct recorder_stats *st);

/**
 * recorder__finish_keeper() - finish the build-ID keeper and say what the
 * cache kept on @out (buildid_record__finish()). @return 0 or its error.
 */
int recorder__finish_keeper(struct recorder *r, FILE *out);

/** recorder__free() - stop and free everything; accepts NULL. The writer stays the caller's. */
void recorder__free(struct recorder *r);
#endif
