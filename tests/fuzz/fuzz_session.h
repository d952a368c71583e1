/* SPDX-License-Identifier: BSD-2-Clause */
/* What the fuzz targets that load sessions share: the symbolizer's options. */
#ifndef SFPROF_FUZZ_SESSION_H
#define SFPROF_FUZZ_SESSION_H

#include "report/session.h"

/**
 * fuzz_session_opts() - options as `sfprof report` takes them, made for
 * fuzzing: kernel names from the small excerpt of /proc/kallsyms the seeds
 * hold (reading the whole file would take most of each run), no debuginfod
 * (no network). Files are found by their recorded paths as they would be.
 */
const struct session_opts *fuzz_session_opts(void);

#endif
