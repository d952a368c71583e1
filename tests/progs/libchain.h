/* SPDX-License-Identifier: BSD-2-Clause */
/* libchain.so: a shared library in the middle of the test programs' call chains. */
#ifndef SFU_LIBCHAIN_H
#define SFU_LIBCHAIN_H

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*chain_cb)(int x);

/*
 * chain_apply() - call chain_step() through the PLT, which calls @cb.
 * @tag: when not NULL, chain_step() writes a snapshot "<tag>" before calling @cb.
 *
 * Chain below the caller: chain_apply -> chain_step -> cb.
 * @return a value derived from cb(x), so that no call is a tail call.
 */
int chain_apply(chain_cb cb, int x, const char *tag);

/* chain_step() - exported so that chain_apply() reaches it through the PLT. */
int chain_step(chain_cb cb, int x, const char *tag);

#ifdef __cplusplus
}
#endif

#endif
