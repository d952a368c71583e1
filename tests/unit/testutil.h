/* SPDX-License-Identifier: BSD-2-Clause */
/* Assert helpers for the cmocka unit suites; each forwards the caller's file and line. */
#ifndef SFU_TESTUTIL_H
#define SFU_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sfunwind.h"

void _assert_bytes_equal(const void *got, size_t got_len, const void *want, size_t want_len,
			 const char *file, int line);
#define assert_bytes_equal(g, gl, w, wl) _assert_bytes_equal(g, gl, w, wl, __FILE__, __LINE__)

void _assert_row_equal(const struct sfu_row *got, const struct sfu_row *want,
		       const char *file, int line);
#define assert_row_equal(g, w) _assert_row_equal(g, w, __FILE__, __LINE__)

/* Read a whole file into a malloc()ed buffer; fails the test when it cannot. */
void *read_file_or_fail(const char *path, size_t *len);

#endif
