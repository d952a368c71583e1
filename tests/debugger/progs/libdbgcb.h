/* SPDX-License-Identifier: BSD-2-Clause */
/* A shared library that calls back into its caller (dbgchain's `lib` mode). */
#ifndef DBGCB_H
#define DBGCB_H

#ifdef __cplusplus
extern "C" {
#endif

void dbgcb_call(void (*fn)(int), int v);

#ifdef __cplusplus
}
#endif

#endif
