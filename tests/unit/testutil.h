/* SPDX-License-Identifier: BSD-2-Clause */
/* Assert helpers for the cmocka unit suites; each forwards the caller's file and line. */
#ifndef SFU_TESTUTIL_H
#define SFU_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sfunwind.h"

void _assert_bytes_equal(const void *got, size_t got_len, const void *want, size_t want_len,
			 const char *file, int line);
#define assert_bytes_equal(g, gl, w, wl) _assert_bytes_equal(g, gl, w, wl, __FILE__, __LINE__)

/*
 * Rows are equal when start, flags and the three locations are. A location's
 * reg is compared only for the kinds that use it (REG_OFFSET, DEREF, IN_REG),
 * dwarf_reg only when reg is SFU_REG_OTHER, and offset for every kind but
 * SAME and UNDEFINED. offset_size, offset_count and info are encoding details
 * and are not compared.
 */
void _assert_row_equal(const struct sfu_row *got, const struct sfu_row *want,
		       const char *file, int line);
#define assert_row_equal(g, w) _assert_row_equal(g, w, __FILE__, __LINE__)

/*
 * FDEs are equal when start, size, num_fres, fre_type, fde_type, pauth_key,
 * rep_size, signal_frame and info2 are; the raw info byte, fre_off and
 * first_row are layout details and are not compared.
 */
void _assert_fde_equal(const struct sfu_fde *got, const struct sfu_fde *want,
		       const char *file, int line);
#define assert_fde_equal(g, w) _assert_fde_equal(g, w, __FILE__, __LINE__)

/*
 * Decode @len bytes of @data from a heap copy of exactly @len bytes (so that
 * the address sanitizer sees any read past the end) and expect failure with
 * @want_errno, the same negative errno in the diag and a non-empty reason.
 */
void _assert_sframe_rejects(const void *data, size_t len, int want_errno,
			    const char *file, int line);
#define assert_sframe_rejects(d, l, e) _assert_sframe_rejects(d, l, e, __FILE__, __LINE__)

/* Decode from an exact-size heap copy; NULL with errno and @diag filled on failure. */
struct sfu_sframe *sframe_new_exact(const void *data, size_t len, uint64_t addr,
				    struct sfu_diag *diag);

/*
 * A heap copy of exactly @len bytes (a valid pointer even when @len is 0), so
 * that the address sanitizer sees any read past the end; free() it.
 */
void *memdup_exact_or_fail(const void *data, size_t len);

/*
 * CBF result sequences are equal when they have the same length and each
 * kind and value match; on a difference, both entries are printed with the
 * index of the first.
 */
void _assert_cbf_frames_equal(const struct sfu_cbf_frame *got, size_t got_n,
			      const struct sfu_cbf_frame *want, size_t want_n,
			      const char *file, int line);
#define assert_cbf_frames_equal(g, gn, w, wn) _assert_cbf_frames_equal(g, gn, w, wn, __FILE__, __LINE__)

/* Read a whole file into a malloc()ed buffer; fails the test when it cannot. */
void *read_file_or_fail(const char *path, size_t *len);

/*
 * A byte builder for hand-made test inputs, in either byte order, so that
 * decoders are checked against bytes that no encoder of ours produced.
 */
struct bytebuf {
	uint8_t data[8192];
	size_t len;
	bool big_endian;
};

void bb_init(struct bytebuf *b, bool big_endian);
/* Append the low @size bytes (1, 2, 4 or 8) of @v in the buffer's byte order. */
void bb_put(struct bytebuf *b, uint64_t v, unsigned size);
/* Overwrite @size bytes at @at with @v in the buffer's byte order. */
void bb_set(struct bytebuf *b, size_t at, uint64_t v, unsigned size);
/* Read back @size bytes at @at in the buffer's byte order. */
uint64_t bb_get(const struct bytebuf *b, size_t at, unsigned size);
void bb_bytes(struct bytebuf *b, const void *p, size_t n);
#define bb_u8(b, v)  bb_put(b, (uint8_t)(v), 1)
#define bb_u16(b, v) bb_put(b, (uint16_t)(v), 2)
#define bb_u32(b, v) bb_put(b, (uint32_t)(v), 4)
#define bb_u64(b, v) bb_put(b, (uint64_t)(v), 8)

/* Deterministic PRNG (xorshift64*) for randomized but reproducible cases. */
struct test_rng {
	uint64_t s;
};

void rng_seed(struct test_rng *r, uint64_t seed);
uint64_t rng_next(struct test_rng *r);
/* Uniform in [lo, hi], inclusive. */
int64_t rng_range(struct test_rng *r, int64_t lo, int64_t hi);

/* A new empty directory under $TMPDIR (or /tmp), malloc()ed; fails the test when it cannot. */
char *make_temp_dir_or_fail(void);

/* Remove @dir and the files directly in it, then free(@dir). Accepts NULL. */
void remove_temp_dir(char *dir);

/* "@dir/@name", malloc()ed. */
char *path_join_or_fail(const char *dir, const char *name);

/* Create or replace @path with @len bytes of @data; fails the test when it cannot. */
void write_file_or_fail(const char *path, const void *data, size_t len);

/*
 * Independent readers of a 64-bit native-endian ELF image, written without
 * libelf so the library under test can be checked against them.
 */
/* The GNU build ID from the PT_NOTE segments; @return its length, 0 when there is none. */
size_t raw_elf_build_id(const uint8_t *image, size_t len, uint8_t *id, size_t id_max);

/* The value of symbol @name in .symtab; fails the test when it is missing. */
uint64_t raw_elf_symbol_value(const uint8_t *image, size_t len, const char *name);

#endif
