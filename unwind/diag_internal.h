/* SPDX-License-Identifier: BSD-2-Clause */
/* Filling a struct sfu_diag from library code. */
#ifndef SFU_DIAG_INTERNAL_H
#define SFU_DIAG_INTERNAL_H

#include <stdarg.h>
#include <stdio.h>

#include "sfunwind/diag.h"

/**
 * diag_set() - record why a call fails, when the caller asked.
 * @diag: optional.
 * @err: the negative errno the caller is about to return.
 *
 * @return @err, so that `return diag_set(diag, -EBADMSG, "...");` reads as one step.
 */
static inline int diag_set(struct sfu_diag *diag, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline int diag_set(struct sfu_diag *diag, int err, const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return err;
	diag->err = err;
	va_start(ap, fmt);
	vsnprintf(diag->reason, sizeof(diag->reason), fmt, ap);
	va_end(ap);
	return err;
}

#endif
