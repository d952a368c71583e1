/* SPDX-License-Identifier: BSD-2-Clause */
/* The sfprof command running, set once by main() and read by messages. */
#include "progname.h"

static const char *command = "";

void sfprof_command_set(const char *name)
{
	command = name;
}

const char *sfprof_command(void)
{
	return command;
}
