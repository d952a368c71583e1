/* SPDX-License-Identifier: BSD-2-Clause */
/* SFU_API: what libsfunwind.so exports (it is built with -fvisibility=hidden). */
#ifndef SFUNWIND_API_H
#define SFUNWIND_API_H

#if defined(__GNUC__) || defined(__clang__)
#define SFU_API __attribute__((visibility("default")))
#else
#define SFU_API
#endif

#include <string.h>

/*
 * SFU_OPTS() - declare an options struct @NAME of type struct @TYPE, every
 * byte zeroed (padding too) and sz set to the size this header gives it,
 * then the fields given: SFU_OPTS(sfu_unwind_opts, opts, .arch = SFU_ARCH_HOST).
 *
 * Options structs only grow at their end. The library reads the fields the
 * caller's sz covers, takes the default (zero) for the others, and fails
 * with -EINVAL when sz is too small to hold sz itself, or when the caller
 * set a field (a nonzero byte past the end) that this library does not know.
 * Padding counts: fill a struct by SFU_OPTS() or SFU_OPTS_RESET(), not by
 * assigning a compound literal.
 */
#define SFU_OPTS(TYPE, NAME, ...)                                                                 \
	struct TYPE NAME = ({                                                                     \
		memset(&NAME, 0, sizeof(struct TYPE));                                            \
		(struct TYPE){ .sz = sizeof(struct TYPE), __VA_ARGS__ };                          \
	})

/* SFU_OPTS_RESET() - the same for an existing struct (a member): *@PTR zeroed, then filled. */
#define SFU_OPTS_RESET(PTR, ...)                                                                  \
	do {                                                                                      \
		__typeof__(*(PTR)) *sfu_opts_p_ = (PTR);                                          \
		memset(sfu_opts_p_, 0, sizeof(*sfu_opts_p_));                                     \
		*sfu_opts_p_ = (__typeof__(*(PTR))){ .sz = sizeof(*sfu_opts_p_), __VA_ARGS__ };   \
	} while (0)

#endif
