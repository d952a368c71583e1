// SPDX-License-Identifier: BSD-2-Clause
/* Fuzz target: decode Compact Backtrace Format bytes, then re-encode what decoded and compare. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sfunwind/cbf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Results kept per input: a `rep` may expand to 0x100001 frames, so this bounds the time. */
#define MAX_RESULTS 65536

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_cbf: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static bool is_final(const struct sfu_cbf_frame *f)
{
	return f->kind == SFU_CBF_END || f->kind == SFU_CBF_TRUNCATED;
}

/* What the decoder returned obeys its contract. */
static void check_results(const struct sfu_cbf_frame *f, size_t n, int err, unsigned word,
			  const struct sfu_diag *diag)
{
	uint64_t mask = word == 64 ? UINT64_MAX : (UINT64_C(1) << word) - 1;

	if (err && err != -EBADMSG && err != -ENOSPC)
		broken("decode returned %d, not 0, -EBADMSG or -ENOSPC", err);
	if (err && (diag->err != err || !diag->reason[0]))
		broken("decode returned %d without saying why (diag %d '%s')", err, diag->err,
		       diag->reason);
	if (word != 0 && word != 16 && word != 32 && word != 64)
		broken("word size %u", word);
	if (!n || !is_final(&f[n - 1]))
		broken("%zu results, the last not END or TRUNCATED", n);
	if (err && f[n - 1].kind != SFU_CBF_TRUNCATED)
		broken("error %d but the last result is not TRUNCATED", err);
	if (!word && n != 1)
		broken("bad information byte but %zu results", n);
	for (size_t i = 0; i + 1 < n; i++) {
		if (is_final(&f[i]) || !sfu_cbf_kind_name(f[i].kind))
			broken("result %zu has kind %u", i, f[i].kind);
		if (f[i].kind != SFU_CBF_OMIT && f[i].value > mask)
			broken("result %zu: address %#llx wider than %u bits", i,
			       (unsigned long long)f[i].value, word);
		if (f[i].kind == SFU_CBF_OMIT && f[i].value > mask)
			broken("result %zu: omit %llu wider than %u bits", i,
			       (unsigned long long)f[i].value, word);
	}
}

/*
 * The streaming decoder stays in bounds and agrees with the array form (up
 * to its last result, which -ENOSPC made up).
 */
static void check_stream(const uint8_t *data, size_t size, const struct sfu_cbf_frame *f, size_t n,
			 int err)
{
	struct sfu_cbf_dec dec;
	struct sfu_cbf_frame r;
	size_t i = 0;

	if (err == -ENOSPC)
		n--;
	sfu_cbf_dec__init(&dec, data, size, 0, NULL);
	while (i < n && sfu_cbf_dec__next(&dec, &r) == 0) {
		if (r.kind != f[i].kind || r.value != f[i].value)
			broken("stream result %zu differs from the array's", i);
		if (sfu_cbf_dec__offset(&dec) > size)
			broken("offset %zu past %zu bytes", sfu_cbf_dec__offset(&dec), size);
		i++;
	}
	if (i != n)
		broken("stream gave %zu results, the array %zu", i, n);
}

static uint8_t *encode(unsigned word, const struct sfu_cbf_frame *f, size_t n, size_t *len)
{
	uint8_t *buf = malloc(SFU_CBF_BOUND(n));
	struct sfu_cbf_enc enc;
	int err;

	if (!buf)
		return NULL;
	err = sfu_cbf_enc__init(&enc, word, buf, SFU_CBF_BOUND(n));
	if (!err)
		err = sfu_cbf_encode_frames(&enc, f, n);
	if (err)
		broken("re-encoding %zu results at %u bits failed: %d", n, word, err);
	*len = sfu_cbf_enc__len(&enc);
	return buf;
}

/*
 * The results, encoded again, decode to the same results without error, and
 * that encoding is canonical: encoding its results gives the same bytes.
 */
static void check_reencode(unsigned word, const struct sfu_cbf_frame *f, size_t n,
			   struct sfu_cbf_frame *again)
{
	struct sfu_diag diag = { 0 };
	uint8_t *bytes, *bytes2;
	size_t len, len2, n2;
	unsigned word2;
	int err;

	bytes = encode(word, f, n, &len);
	if (!bytes)
		return;
	err = sfu_cbf_decode(bytes, len, 0, again, n, &n2, &word2, &diag);
	if (err)
		broken("re-encoded results do not decode: %d %s", err, diag.reason);
	if (word2 != word || n2 != n)
		broken("re-encoded: %zu results at %u bits, was %zu at %u", n2, word2, n, word);
	for (size_t i = 0; i < n; i++)
		if (again[i].kind != f[i].kind || again[i].value != f[i].value)
			broken("re-encoded result %zu: %s %#llx, was %s %#llx", i,
			       sfu_cbf_kind_name(again[i].kind), (unsigned long long)again[i].value,
			       sfu_cbf_kind_name(f[i].kind), (unsigned long long)f[i].value);
	bytes2 = encode(word, again, n, &len2);
	if (bytes2 && (len2 != len || memcmp(bytes, bytes2, len)))
		broken("encoding is not canonical: %zu bytes, then %zu", len, len2);
	free(bytes2);
	free(bytes);
}

/* Reused between inputs: allocating them each time would dominate the run. */
static struct sfu_cbf_frame results[MAX_RESULTS], again[MAX_RESULTS];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sfu_diag diag = { 0 };
	size_t n;
	unsigned word;
	int err;

	err = sfu_cbf_decode(data, size, 0, results, MAX_RESULTS, &n, &word, &diag);
	check_results(results, n, err, word, &diag);
	check_stream(data, size, results, n, err);
	/* a bad information byte has no word size; the lone TRUNCATED still encodes */
	if (err != -ENOSPC)
		check_reencode(word ? word : 64, results, n, again);

	/* knowing the length: no `end` needed, otherwise the same */
	err = sfu_cbf_decode(data, size, SFU_CBF_DEC_END_OPTIONAL, results, MAX_RESULTS, &n, &word,
			     &diag);
	check_results(results, n, err, word, &diag);
	return 0;
}
