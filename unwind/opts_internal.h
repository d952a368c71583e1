/* SPDX-License-Identifier: BSD-2-Clause */
/* Reading an options struct that carries its size (sz), from a caller built against any header. */
#ifndef SFU_OPTS_INTERNAL_H
#define SFU_OPTS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Each options struct of the public API starts with `size_t sz`, which the
 * caller sets to sizeof the struct its header declared (SFU_OPTS() does).
 * The struct only grows at its end, and each one has a
 * `#define <type>__last_field <field>` here, updated when a field is added,
 * so that the library knows where its own view of the struct ends.
 *
 * A caller built against an older header passes a smaller sz: the fields
 * past it read as zero, the default (OPTS_GET). A caller built against a
 * newer header passes a larger sz: that is fine as long as every byte the
 * library does not know is zero, i.e. the caller asked for nothing this
 * library cannot do; otherwise the call fails with -EINVAL rather than
 * silently ignoring a request (OPTS_VALID). This is libbpf's convention.
 */

#define sfu_unwind_opts__last_field fp_only
#define sfu_sframe_enc_opts__last_field addr

#define offsetofend(TYPE, FIELD) (offsetof(TYPE, FIELD) + sizeof(((TYPE *)0)->FIELD))

/* @return whether @len bytes at @p are all zero. */
static inline bool opts_tail_zero(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/*
 * @return whether a caller's struct of @user_sz bytes at @opts can be read by
 * a library that knows its first @known bytes.
 */
static inline bool opts_valid(const void *opts, size_t known, size_t user_sz)
{
	/* too small to hold sz itself: a zeroed struct whose caller forgot sz */
	if (user_sz < sizeof(size_t))
		return false;
	return user_sz <= known ||
	       opts_tail_zero((const unsigned char *)opts + known, user_sz - known);
}

/* NULL is valid: every field takes its default. */
#define OPTS_VALID(opts, TYPE)                                                                    \
	(!(opts) || opts_valid((opts), offsetofend(struct TYPE, TYPE##__last_field), (opts)->sz))

/* Whether the caller's struct reaches the end of @field. */
#define OPTS_HAS(opts, field) ((opts) && (opts)->sz >= offsetofend(__typeof__(*(opts)), field))

/* @field, or @fallback when the caller's struct stops before it (or is NULL). */
#define OPTS_GET(opts, field, fallback) (OPTS_HAS(opts, field) ? (opts)->field : (fallback))

#endif
