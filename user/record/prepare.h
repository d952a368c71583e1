/* SPDX-License-Identifier: BSD-2-Clause */
/* Files opened, and their unwind tables made, when a process maps them: before its samples need them. */
#ifndef SFPROF_PREPARE_H
#define SFPROF_PREPARE_H

#include <stdint.h>

#include "proctab.h"
#include "sfunwind.h"

/* Mappings waiting to be prepared; past this a mapping is not prepared (its first sample opens it). */
#define PREPARE_QUEUE 256
/* A module prepared is held this long for the samples that will need it, then left to the cache's trim. */
#define PREPARE_HOLD_NS 3000000000ull

struct prepare_stats {
	uint64_t asked;		/* executable file mappings seen */
	uint64_t prepared;	/* files opened (or found in the cache) ahead of samples */
	uint64_t skipped;	/* already prepared lately, or the queue was full */
	uint64_t failed;	/* could not be opened (gone, not ELF, the memory bound) */
};

struct prepare;

/* What is told of each new mapping with a build ID, from prepare__mmap(): its process, range, build ID, path. */
typedef void (*prepare_map_fn)(void *ctx, uint32_t pid, uint64_t start, uint64_t end,
			       const struct sfu_build_id *id, const char *path);

/**
 * prepare__new() - a thread that opens, through @cache, the files that new
 * executable mappings name, and makes their tables from .eh_frame when they
 * have no .sframe: the unwinding threads then find them ready instead of
 * stopping for them at a process's first samples (a large library's table
 * takes 77 ms to read from the disk cache, 462 ms to make). Not started yet.
 * @return the object, or NULL with errno set.
 */
struct prepare *prepare__new(struct sfu_cache *cache);

/**
 * prepare__set_hook() - call @fn for each new mapping with a build ID, from
 * prepare__mmap() (on its caller's thread, at once: not when the thread
 * takes it), before prepare__start(). @fn must be quick.
 */
void prepare__set_hook(struct prepare *p, prepare_map_fn fn, void *ctx);

/** prepare__start() - start the thread. @return 0 or -errno. */
int prepare__start(struct prepare *p);

/**
 * prepare__mmap() - a task event's new mapping: queued for the thread if it
 * is an executable file mapping not prepared lately. From one thread (the
 * draining one); never blocks.
 */
void prepare__mmap(struct prepare *p, const struct perf_rec_mmap2 *e, uint16_t size);

/** prepare__stats() - what it did so far (approximate while it runs). */
void prepare__stats(const struct prepare *p, struct prepare_stats *st);

/** prepare__free() - stop the thread (what is queued is dropped) and let go of what it holds; accepts NULL. */
void prepare__free(struct prepare *p);

#endif
