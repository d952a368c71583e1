/* SPDX-License-Identifier: BSD-2-Clause */
/* The sfprof command running ("record", "report"), for messages from code several commands share. */
#ifndef SFPROF_PROGNAME_H
#define SFPROF_PROGNAME_H

/** sfprof_command_set() - name the command running; main() does, before running it. */
void sfprof_command_set(const char *name);

/** @return the name of the command running ("report"), for messages: "sfprof report: ...". */
const char *sfprof_command(void);

#endif
