/* SPDX-License-Identifier: BSD-2-Clause */
/* The subcommands of sfprof. Each returns the process exit status. */
#ifndef SFPROF_CMDS_H
#define SFPROF_CMDS_H

int cmd_sframe(int argc, char **argv);

#endif
