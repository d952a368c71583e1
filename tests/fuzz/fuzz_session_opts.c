// SPDX-License-Identifier: BSD-2-Clause
/* The symbolizer's options of the fuzz targets that load sessions. */
#include <unistd.h>

#include "fuzz_session.h"

#ifndef FUZZ_SEEDS_DIR
#define FUZZ_SEEDS_DIR "."
#endif

const struct session_opts *fuzz_session_opts(void)
{
	static struct session_opts opts;
	static int made;

	if (!made) {
		/* gen_seeds.sh writes it; without it (no /proc/kallsyms) kernel frames stay unnamed */
		static const char excerpt[] = FUZZ_SEEDS_DIR "/kallsyms-session";

		opts.sym.kallsyms = access(excerpt, R_OK) ? "/nonexistent/kallsyms" : excerpt;
		opts.sym.no_debuginfod = true;
		made = 1;
	}
	return &opts;
}
