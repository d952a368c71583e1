/* SPDX-License-Identifier: BSD-2-Clause */
/* What the commands that read profiles share on their command line: the symbolization options, opening the profile, its notices. */
#ifndef SFPROF_CLI_H
#define SFPROF_CLI_H

#include <stdbool.h>

struct profile_status;
struct session;
struct session_opts;
struct symbolizer_opts;

/* Where symbols come from: the options report, script, export, diff, archive and symbolize share. */
enum { OPT_SYM_DEBUG_DIR = 0x1000, OPT_SYM_NO_DEBUGINFOD, OPT_SYM_KALLSYMS, OPT_SYM_BUILDID_DIR,
       OPT_SYM_NO_INLINE, OPT_SYM_PYTHON_ONLY };

#define SYM_OPTIONS \
	{ "debug-file-directory", required_argument, NULL, OPT_SYM_DEBUG_DIR }, \
	{ "no-debuginfod", no_argument, NULL, OPT_SYM_NO_DEBUGINFOD }, \
	{ "kallsyms", required_argument, NULL, OPT_SYM_KALLSYMS }, \
	{ "buildid-dir", required_argument, NULL, OPT_SYM_BUILDID_DIR }, \
	{ "no-inline", no_argument, NULL, OPT_SYM_NO_INLINE }, \
	{ "python-only", no_argument, NULL, OPT_SYM_PYTHON_ONLY }

/**
 * sym_option() - take getopt's @c if it is one of SYM_OPTIONS.
 * @dirs: room for argc entries; --debug-file-directory appends to it and
 *        points @o->debug_dirs at it.
 * @return whether @c was one of them.
 */
bool sym_option(int c, const char *arg, struct symbolizer_opts *o, const char **dirs);

/**
 * cli_option_default() - the default case of the getopt loop of a command
 * that takes SYM_OPTIONS: @c taken if it is one of them (sym_option()),
 * else @usage printed on stderr after getopt's own message.
 * @return true when @c was taken, false when the command is to exit with
 * status 2.
 */
bool cli_option_default(int c, const char *arg, struct symbolizer_opts *o, const char **dirs,
			const char *usage);

/**
 * profile_print_notices() - print what a reader met in @path: truncation,
 * damage (stderr). A command shows what it could read, then exits with
 * status 1 when the file is damaged. A file cut short is not damaged: a
 * recording that did not finish leaves one.
 * @return whether the file is damaged.
 */
bool profile_print_notices(const char *path, const struct profile_status *st);

/**
 * cli_session_open() - open the profile at @path for a command, saying on
 * stderr why when it cannot be, and what its reader met
 * (profile_print_notices()).
 * @damaged: set when the file is damaged, left alone otherwise (several
 *	profiles add up).
 * @return the session, or NULL after saying why.
 */
struct session *cli_session_open(const char *path, const struct session_opts *o, bool *damaged);

/**
 * pick_event() - the one event of @s whose samples a view that adds their
 * weights shows: the one named @name, else the first event with samples
 * (said on stderr, with the others and their counts, when several have
 * some). Leaves only its samples in @s.
 * @return its index, or -1 after saying on stderr that @path has no event @name.
 */
int pick_event(struct session *s, const char *path, const char *name);

/*
 * print_replaced() - say on stderr which binaries of @s changed since the
 * recording with no copy of the recorded build found: their frames are
 * unnamed (perl+0x11458d), which would otherwise pass silently.
 */
void print_replaced(const struct session *s);

#endif
