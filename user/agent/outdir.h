/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof agent's output directory: whole windows under their time span, kept by count, bytes and age. */
#ifndef SFPROF_AGENT_OUTDIR_H
#define SFPROF_AGENT_OUTDIR_H

#include <stddef.h>
#include <stdint.h>

/* What is kept; 0 in a field: no bound of that kind. */
struct retention {
	uint64_t count;
	uint64_t bytes;
	uint64_t age_secs;	/* by the window's end */
};

/**
 * window_name() - a window's file name: window-FROM-UNTIL.sfprof, Unix
 * seconds, ten digits each, so that names sort by time. @return 0 or -ENOSPC.
 */
int window_name(char *buf, size_t cap, const char *dir, uint64_t from, uint64_t until);

/**
 * window_tmp_name() - where a window is written until whole: a dot file
 * ending in .tmp in the same directory, which no reader takes as a window.
 * @return 0 or -ENOSPC.
 */
int window_tmp_name(char *buf, size_t cap, const char *dir, uint64_t from);

/**
 * outdir_retain() - delete the oldest windows of @dir past any bound of @r
 * (the newest is always kept); at @now_secs (Unix) for the age.
 * @return how many were deleted, or -errno when @dir cannot be read.
 */
int outdir_retain(const char *dir, const struct retention *r, uint64_t now_secs);

/**
 * outdir_clean_tmp() - remove the unfinished windows (.tmp) a stopped run
 * left in @dir. @return how many.
 */
int outdir_clean_tmp(const char *dir);

#endif
