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

/* The command-line helpers shared by the commands that read profiles. */
#include "cli/cli.h"

#endif
