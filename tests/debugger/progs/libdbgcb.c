/* SPDX-License-Identifier: BSD-2-Clause */
/* libdbgcb.so: one frame between the program and its callback. */
#include "libdbgcb.h"

volatile int dbgcb_sink;

__attribute__((noipa)) void dbgcb_call(void (*fn)(int), int v)
{
	fn(v + dbgcb_sink);
	__asm__ volatile("" ::: "memory");
	dbgcb_sink++;
}
