/* SPDX-License-Identifier: BSD-2-Clause */
/* The modules of a profile whose frames its samples hit, as perf marks DSOs with hits. */
#ifndef SFPROF_HITS_H
#define SFPROF_HITS_H

#include <stdbool.h>

#include "report/session.h"

/**
 * session_hits() - mark in @hit (session__nmodules() entries) each module
 * one of whose frames is in a sample's stack, leaf or caller; *@kernel
 * whether a kernel frame is. @return 0 or -ENOMEM.
 */
int session_hits(const struct session *s, bool *hit, bool *kernel);

#endif
