/* SPDX-License-Identifier: BSD-2-Clause */
/* JIT code of the recorded processes: their perf maps and jitdumps read while recording, their code given rows. */
#ifndef SFPROF_JIT_H
#define SFPROF_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "sfunwind.h"

struct proctab_proc;

/* The name of the modules that hold rows for JIT code: written to the file as anonymous memory. */
#define JIT_MODULE_NAME "[jit]"

/** @return whether @m holds rows for JIT code (jit_recorder__sample() made it). */
static inline bool jit_module_is(const struct sfu_module *m)
{
	const char *path = m ? sfu_module__path(m) : NULL;

	return path && !__builtin_strcmp(path, JIT_MODULE_NAME);
}

/* Where what the recorder learns goes: a JIT record for the file, a sentence for the user. */
struct jit_ops {
	int (*record)(void *ctx, const struct profile_jit *j);
	void (*warn)(void *ctx, uint32_t pid, const char *comm, const char *why);
	void *ctx;
};

struct jit_stats {
	uint64_t maps;		/* perf maps read */
	uint64_t dumps;		/* jitdumps read */
	uint64_t records;	/* JIT records written */
	uint64_t eh_tables;	/* code given rows from a jitdump's unwinding info */
	uint64_t code_tables;	/* code given rows by reading its instructions */
	uint64_t code_refused;	/* code whose instructions could not be read exactly */
	uint64_t copy_tables;	/* code given the rows of code with the same bytes (a template) */
	uint64_t reunwound;	/* samples unwound again with new rows */
};

/* Most pcs of one sample that procs__unwind() hands over (struct procs_unwound). */
#define JIT_PCS_MAX 8

struct jit_recorder;

/**
 * jit_recorder__new() - JIT state of the processes of one unwinding thread.
 * @return it, or NULL with errno set.
 */
struct jit_recorder *jit_recorder__new(enum sfu_arch arch, const struct jit_ops *ops);

/** jit_recorder__free() - accepts NULL. */
void jit_recorder__free(struct jit_recorder *jr);

/**
 * jit_recorder__mmap() - a task event mapped file @name at [@start, @end) in
 * @pid: a jitdump (a file named jit-N.dump) is remembered, and opened at the
 * process's next sample (the unwinding thread that owns it).
 */
void jit_recorder__mmap(struct jit_recorder *jr, uint32_t pid, uint64_t start, uint64_t end,
			const char *name);

/** jit_recorder__image() - @pr is a new process image: what was known of its pid is gone. */
void jit_recorder__image(struct jit_recorder *jr, const struct proctab_proc *pr);

/**
 * jit_recorder__sample() - a sample of @pr at @time was unwound; @pcs are the
 * code addresses (return addresses less one) of its frames in memory no file
 * backs whose caller the tables did not give, from a walk that did not reach
 * the outermost frame; @seen: the walk met such frames, complete or not (the
 * process runs JIT code). The process's perf map and
 * jitdump are read for what was added since (at once when there are @pcs,
 * else at most every 100 ms), new code is written to the file, and code at
 * @pcs is given rows: from its jitdump's unwinding information, or by
 * reading its instructions from the process (sfu_sframe__from_code()).
 *
 * @return how many tables were added to @pr's address space: the sample
 * should then be unwound again.
 */
size_t jit_recorder__sample(struct jit_recorder *jr, const struct proctab_proc *pr, uint64_t time,
			    const uint64_t *pcs, size_t npcs, bool seen);

/**
 * jit_recorder__exit() - @pid exited: its map and dump are read to their end
 * (a map written at exit, as Java's DumpPerfMapAtExit does, through the root
 * directory held while it lived) and closed.
 */
void jit_recorder__exit(struct jit_recorder *jr, uint32_t pid, uint64_t time);

/** jit_recorder__flush() - the recording ends: every process's map and dump read to the end. */
void jit_recorder__flush(struct jit_recorder *jr, uint64_t time);

/**
 * jit_recorder__forget_written() - the file changed (a window was cut): each
 * process's code is written again, whole, at its next sample.
 */
void jit_recorder__forget_written(struct jit_recorder *jr);

/** jit_recorder__count_reunwound() - a sample was unwound again with the rows just made. */
void jit_recorder__count_reunwound(struct jit_recorder *jr);

/** @return the counters for the summary. */
const struct jit_stats *jit_recorder__stats(const struct jit_recorder *jr);

#endif
