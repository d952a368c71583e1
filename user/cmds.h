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

/* sfprof_command(): the name of the command running, for messages. */
#include "util/progname.h"

/* The command-line helpers shared by the commands that read profiles. */
#include "cli/cli.h"

#endif
