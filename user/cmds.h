/* SPDX-License-Identifier: BSD-2-Clause */
/* The subcommands of sfprof. Each returns the process exit status. */
#ifndef SFPROF_CMDS_H
#define SFPROF_CMDS_H

int cmd_sframe(int argc, char **argv);
int cmd_cbf(int argc, char **argv);

int cmd_dump(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_script(int argc, char **argv);
int cmd_export(int argc, char **argv);

struct profile_status;

/* Print what a reader met in @path: truncation, damaged blocks (stderr). */
void profile_print_notices(const char *path, const struct profile_status *st);

#endif
