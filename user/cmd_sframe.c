/* SPDX-License-Identifier: BSD-2-Clause */
/* placeholder */
#include "cmds.h"
int cmd_sframe(int argc, char **argv) { (void)argc; (void)argv; return 1; }
