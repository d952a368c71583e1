/* SPDX-License-Identifier: BSD-2-Clause */
/* What the commands that read profiles share on their command line: the symbolization options, opening the profile, its notices. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>

#include "cli.h"
#include "profile/profile.h"
#include "report/session.h"
#include "symbolize/symbolize.h"
#include "util/progname.h"

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

bool cli_option_default(int c, const char *arg, struct symbolizer_opts *o, const char **dirs,
			const char *usage)
{
	if (sym_option(c, arg, o, dirs))
		return true;
	/* getopt_long() has said what was wrong */
	fputs(usage, stderr);
	return false;
}

bool profile_print_notices(const char *path, const struct profile_status *st)
{
	if (st->truncated)
		fprintf(stderr, "sfprof %s: %s: file truncated: recovered %" PRIu64 " of %" PRIu64
			" bytes (%" PRIu64 " whole blocks); the recording did not finish\n", sfprof_command(), path,
			st->bytes_recovered, st->file_size, st->blocks);
	if (st->bad_blocks)
		fprintf(stderr, "sfprof %s: %s: %" PRIu64 " damaged block(s) skipped: %s\n", sfprof_command(), path,
			st->bad_blocks, st->first_error[0] ? st->first_error : "checksum mismatch");
	else if (st->first_error[0])
		fprintf(stderr, "sfprof %s: %s: damaged: %s\n", sfprof_command(), path, st->first_error);
	if (st->lost_implausible)
		fprintf(stderr, "sfprof %s: %s: a count of lost samples is implausible: how many were "
			"lost is unknown\n", sfprof_command(), path);
	if (st->unknown_stacks)
		fprintf(stderr, "sfprof %s: %s: %" PRIu64 " sample stack(s) were in damaged blocks\n",
			sfprof_command(), path, st->unknown_stacks);
	if (st->unknown_py_frames)
		fprintf(stderr, "sfprof %s: %s: %" PRIu64 " sample Python chain(s) cut at frames "
			"that were in damaged blocks\n", sfprof_command(), path, st->unknown_py_frames);
	if (st->trailer_failed)
		fprintf(stderr, "sfprof %s: %s: the recording stopped early on an error\n",
			sfprof_command(), path);
	return profile_status_damaged(st);
}

struct session *cli_session_open(const char *path, const struct session_opts *o, bool *damaged)
{
	struct profile_diag diag;
	struct session *s = session__open(path, o, &diag);

	if (!s) {
		fprintf(stderr, "sfprof %s: %s\n", sfprof_command(), diag.reason);
		return NULL;
	}
	*damaged |= profile_print_notices(path, session__status(s));
	return s;
}
