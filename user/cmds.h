/* SPDX-License-Identifier: BSD-2-Clause */
/* The subcommands of sfprof. Each returns the process exit status. */
#ifndef SFPROF_CMDS_H
#define SFPROF_CMDS_H

#include <stdbool.h>

int cmd_sframe(int argc, char **argv);
int cmd_cbf(int argc, char **argv);

int cmd_dump(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_script(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_xray(int argc, char **argv);
int cmd_archive(int argc, char **argv);
int cmd_buildid_list(int argc, char **argv);
int cmd_symbolize(int argc, char **argv);

#include <stdbool.h>

struct profile_status;
struct session;

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

/** @return the name of the command running ("report"), for messages: "sfprof report: ...". */
const char *sfprof_command(void);

/*
 * Print what a reader met in @path: truncation, damage (stderr). @return
 * whether the file is damaged: a command shows what it could read, then
 * exits with status 1. A file cut short is not damaged: a recording that
 * did not finish leaves one.
 */
bool profile_print_notices(const char *path, const struct profile_status *st);

/* Where symbols come from: the options report, script and export share. */
enum { OPT_SYM_DEBUG_DIR = 0x1000, OPT_SYM_NO_DEBUGINFOD, OPT_SYM_KALLSYMS, OPT_SYM_BUILDID_DIR,
       OPT_SYM_NO_INLINE, OPT_SYM_PYTHON_ONLY };

#define SYM_OPTIONS \
	{ "debug-file-directory", required_argument, NULL, OPT_SYM_DEBUG_DIR }, \
	{ "no-debuginfod", no_argument, NULL, OPT_SYM_NO_DEBUGINFOD }, \
	{ "kallsyms", required_argument, NULL, OPT_SYM_KALLSYMS }, \
	{ "buildid-dir", required_argument, NULL, OPT_SYM_BUILDID_DIR }, \
	{ "no-inline", no_argument, NULL, OPT_SYM_NO_INLINE }, \
	{ "python-only", no_argument, NULL, OPT_SYM_PYTHON_ONLY }

struct symbolizer_opts;

/**
 * sym_option() - take getopt's @c if it is one of SYM_OPTIONS.
 * @dirs: room for argc entries; --debug-file-directory appends to it and
 *        points @o->debug_dirs at it.
 * @return whether @c was one of them.
 */
bool sym_option(int c, const char *arg, struct symbolizer_opts *o, const char **dirs);

#endif
