/* SPDX-License-Identifier: BSD-2-Clause */
/* What sfprof record and agent do with the build-ID cache: start the keeper, tell it each module, say what it kept. */
#ifndef SFPROF_BUILDID_RECORD_H
#define SFPROF_BUILDID_RECORD_H

#include <stdint.h>
#include <stdio.h>

#include "buildid_keeper.h"
#include "sfunwind.h"

/**
 * buildid_record__start() - the keeper of the cache directory
 * (buildid_cache_dir()) bounded at @max_bytes, what the recording uses kept
 * from eviction for @protect_s (buildid_keeper__new()). Says why on stderr,
 * as "sfprof CMD: ...", when it cannot be kept.
 * @return the keeper, or NULL.
 */
struct buildid_keeper *buildid_record__start(const char *cmd, uint64_t max_bytes,
					     uint64_t protect_s);

/** buildid_record__module() - a procs_module_fn whose ctx is a struct buildid_keeper. */
void buildid_record__module(void *ctx, uint32_t pid, const struct sfu_mapping *m);

/**
 * buildid_record__map() - a prepare_map_fn whose ctx is a struct
 * buildid_keeper: the file of a new mapping held for a while
 * (buildid_keeper__hold()).
 */
void buildid_record__map(void *ctx, uint32_t pid, uint64_t start, uint64_t end,
			 const struct sfu_build_id *id, const char *path);

/**
 * buildid_record__finish() - finish the keeper and say in one line what the
 * cache kept (and why some were not) on @out, as "sfprof CMD: ...".
 * @return 0 or its error.
 */
int buildid_record__finish(struct buildid_keeper *k, const char *cmd, FILE *out);

#endif
