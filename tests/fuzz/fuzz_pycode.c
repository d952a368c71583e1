// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: CPython code objects read from a process's memory (user/record/pycode.c), the
 * memory being the input. A 16-byte header: the minor version (10 + byte 0 % 4), a byte of
 * flags, the code object's offset in the image (u16 LE), 4 spare bytes and the instruction's
 * byte offset (u64 LE); the rest is the image, at IMAGE_ADDR. With bit 0 of the flags, 3.13's
 * _Py_DebugOffsets (PYCODE_DEBUG_OFFSETS_LEN bytes) come first and give the layout when they
 * parse. pycode_seed.py writes the seeds.
 * Each answer is 0 or a negative errno; names are NUL-terminated UTF-8 in their arrays; the
 * cache answers as a direct read; the reads are few and none leaves the image.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/pycode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define IMAGE_ADDR	0x7f0000100000ull
#define HDR_LEN		16
/* Reads one resolve may make: the code object, its type and type name, 3 per str, 2 + 1 for the table. */
#define MAX_READS	16

struct image {
	const uint8_t *b;
	size_t len;
	unsigned reads;
};

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_pycode: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static int image_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct image *im = ctx;

	if (++im->reads > MAX_READS)
		broken("more than %d reads for one code object", MAX_READS);
	if (addr < IMAGE_ADDR || addr - IMAGE_ADDR > im->len || len > im->len - (addr - IMAGE_ADDR))
		return -EFAULT;
	memcpy(buf, im->b + (addr - IMAGE_ADDR), len);
	return 0;
}

static void check_utf8(const char *s, size_t cap, const char *what)
{
	size_t n = strnlen(s, cap);

	if (n == cap)
		broken("%s not NUL-terminated", what);
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		size_t k = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 :
			   c >= 0xf0 && c < 0xf5 ? 4 : 0;

		if (!k || i + k > n)
			broken("%s: no UTF-8 at byte %zu", what, i);
		for (size_t j = 1; j < k; j++)
			if (((unsigned char)s[i + j] & 0xc0) != 0x80)
				broken("%s: no UTF-8 at byte %zu", what, i + j);
		i += k;
	}
}

static void check_err(int err, const char *what)
{
	if (err > 0 || err == -EINVAL || err == -ENOMEM)
		broken("%s gave %d", what, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pycode_cache *cache;
	struct pycode_layout published;
	const struct pycode_layout *l;
	struct pycode_info a, b;
	struct image im;
	uint64_t instr_off;
	uint16_t code_off;
	int e1, e2;

	if (size < HDR_LEN)
		return 0;
	if (!cache) {
		cache = pycode_cache__new(4);
		if (!cache)
			broken("no cache");
	}
	l = pycode_layout__for(10 + data[0] % 4);
	memcpy(&code_off, data + 2, sizeof(code_off));
	memcpy(&instr_off, data + 8, sizeof(instr_off));
	im.b = data + HDR_LEN;
	im.len = size - HDR_LEN;
	if ((data[1] & 1) && im.len >= PYCODE_DEBUG_OFFSETS_LEN) {
		int err = pycode_layout__debug_offsets(im.b, im.len, &published);

		if (err && err != -ENOENT && err != -EBADMSG)
			broken("pycode_layout__debug_offsets() gave %d", err);
		if (!err)
			l = &published;
		im.b += PYCODE_DEBUG_OFFSETS_LEN;
		im.len -= PYCODE_DEBUG_OFFSETS_LEN;
	}

	im.reads = 0;
	e1 = pycode__resolve(l, image_read, &im, IMAGE_ADDR + code_off, instr_off, &a);
	check_err(e1, "pycode__resolve()");
	/* once read, once held: both answer as the direct read */
	pycode_cache__clear(cache);
	for (int round = 0; round < 2; round++) {
		im.reads = 0;
		e2 = pycode_cache__lookup(cache, l, image_read, &im, IMAGE_ADDR + code_off, instr_off, &b);
		if (e1 != e2)
			broken("resolve %d, cache lookup %d (round %d)", e1, e2, round);
		if (e1)
			continue;
		if (strcmp(a.qualname, b.qualname) || strcmp(a.file, b.file) ||
		    a.line != b.line || a.firstlineno != b.firstlineno)
			broken("the cache's answer differs (round %d)", round);
	}
	if (!e1) {
		check_utf8(a.qualname, sizeof(a.qualname), "qualname");
		check_utf8(a.file, sizeof(a.file), "file");
	}
	/* the image as a line table of each format */
	(void)pycode__line(310, im.b, im.len, 1, instr_off);
	(void)pycode__line(311, im.b, im.len, 1, instr_off);
	if (pycode__line(311, im.b, im.len, 1, UINT64_MAX) != 0 ||
	    pycode__line(310, im.b, im.len, 1, UINT64_MAX) != 0)
		broken("a line past every table");
	return 0;
}
