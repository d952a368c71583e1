/* SPDX-License-Identifier: BSD-2-Clause */
/* The symbolization options of report, script and export, parsed once. */
#include <getopt.h>
#include <stdio.h>

#include "cmds.h"
#include "symbolize.h"

/* --buildid-dir's, as many as anyone names (no room was given for them) */
#define MAX_BUILDID_DIRS 64

bool sym_option(int c, const char *arg, struct symbolizer_opts *o, const char **dirs)
{
	static const char *buildid_dirs[MAX_BUILDID_DIRS];

	switch (c) {
	case OPT_SYM_BUILDID_DIR:
		if (o->num_buildid_dirs == MAX_BUILDID_DIRS) {
			fprintf(stderr, "sfprof %s: more than %d --buildid-dir: %s not searched\n", sfprof_command(),
				MAX_BUILDID_DIRS, arg);
			return true;
		}
		buildid_dirs[o->num_buildid_dirs++] = arg;
		o->buildid_dirs = buildid_dirs;
		return true;
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
	case OPT_SYM_NO_INLINE:
		o->no_inline = true;
		return true;
	case OPT_SYM_PYTHON_ONLY:
		o->python_only = true;
		return true;
	default:
		return false;
	}
}
