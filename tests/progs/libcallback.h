/* SPDX-License-Identifier: BSD-2-Clause */
/* libcallback.so: a shared library between a thread of record_chains and its hot leaf. */
#ifndef SFPROF_TEST_LIBCALLBACK_H
#define SFPROF_TEST_LIBCALLBACK_H

typedef long (*lib_cb)(long x);

/*
 * lib_apply() - call lib_step() through the PLT, which calls @cb.
 *
 * Chain below the caller: lib_apply -> lib_step -> cb.
 * @return a value derived from cb(x), so that no call is a tail call.
 */
long lib_apply(lib_cb cb, long x);

/* lib_step() - exported so that lib_apply() reaches it through the PLT. */
long lib_step(lib_cb cb, long x);

#endif
