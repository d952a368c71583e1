/* SPDX-License-Identifier: BSD-2-Clause */
/* libcallback.so: calls back into the program that loaded it (see record_chains.c). */
#include "libcallback.h"

static volatile long lib_sink;

__attribute__((noipa)) long lib_step(lib_cb cb, long x)
{
	long r = cb(x + 1);

	lib_sink = r;	/* a use after the call: no tail call */
	return r + lib_sink;
}

__attribute__((noipa)) long lib_apply(lib_cb cb, long x)
{
	long r = lib_step(cb, x * 2);

	lib_sink = r;
	return r ^ lib_sink;
}
