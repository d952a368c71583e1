/* SPDX-License-Identifier: BSD-2-Clause */
/* libchain.so: calls back into the executable; its snapshot state lives in the executable. */
#include "libchain.h"
#include "snapshot.h"

SFU_SNAP_NOINLINE int chain_step(chain_cb cb, int x, const char *tag)
{
	SFU_SNAP_FUNC();

	if (tag)
		SFU_SNAPSHOT(tag);
	return cb(x) + 3;
}

SFU_SNAP_NOINLINE int chain_apply(chain_cb cb, int x, const char *tag)
{
	SFU_SNAP_FUNC();

	/* a global default-visibility function: called through the PLT from -fPIC code */
	return chain_step(cb, x, tag) - 1;
}
