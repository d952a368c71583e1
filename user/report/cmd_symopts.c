/* SPDX-License-Identifier: BSD-2-Clause */
/* The symbolization options of report, script and export, parsed once. */
#include <getopt.h>

#include "cmds.h"
#include "symbolize.h"

bool sym_option(int c, const char *arg, struct symbolizer_opts *o, const char **dirs)
{
	switch (c) {
	case OPT_SYM_DEBUG_DIR:
		dirs[o->num_debug_dirs++] = arg;
		o->debug_dirs = dirs;
		return true;
	case OPT_SYM_NO_DEBUGINFOD:
		o->no_debuginfod = true;
		return true;
	case OPT_SYM_KALLSYMS:
		o->kallsyms = arg;
		return true;
	default:
		return false;
	}
}
