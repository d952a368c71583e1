/* SPDX-License-Identifier: BSD-2-Clause */
/* Assert helpers shared by the unit suites. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static void hexdump_diff(const uint8_t *got, size_t got_len, const uint8_t *want, size_t want_len)
{
	size_t n = got_len > want_len ? got_len : want_len;

	for (size_t i = 0; i < n; i++) {
		int g = i < got_len ? got[i] : -1, w = i < want_len ? want[i] : -1;

		if (g != w) {
			print_error("first difference at byte %zu: got %d, want %d\n", i, g, w);
			return;
		}
	}
}

void _assert_bytes_equal(const void *got, size_t got_len, const void *want, size_t want_len,
			 const char *file, int line)
{
	if (got_len == want_len && !memcmp(got, want, got_len))
		return;
	print_error("byte strings differ (got %zu bytes, want %zu)\n", got_len, want_len);
	hexdump_diff(got, got_len, want, want_len);
	_fail(file, line);
}

static int loc_equal(const struct sfu_loc *a, const struct sfu_loc *b)
{
	return a->kind == b->kind && a->reg == b->reg && a->dwarf_reg == b->dwarf_reg &&
	       a->offset == b->offset;
}

void _assert_row_equal(const struct sfu_row *got, const struct sfu_row *want,
		       const char *file, int line)
{
	if (got->start == want->start && got->flags == want->flags &&
	    loc_equal(&got->cfa, &want->cfa) && loc_equal(&got->ra, &want->ra) &&
	    loc_equal(&got->fp, &want->fp))
		return;
	print_error("rows differ:\n"
		    "  got  start %u flags %#x cfa %u/%u%+d ra %u/%u%+d fp %u/%u%+d\n"
		    "  want start %u flags %#x cfa %u/%u%+d ra %u/%u%+d fp %u/%u%+d\n",
		    got->start, got->flags, got->cfa.kind, got->cfa.reg, got->cfa.offset,
		    got->ra.kind, got->ra.reg, got->ra.offset, got->fp.kind, got->fp.reg,
		    got->fp.offset, want->start, want->flags, want->cfa.kind, want->cfa.reg,
		    want->cfa.offset, want->ra.kind, want->ra.reg, want->ra.offset, want->fp.kind,
		    want->fp.reg, want->fp.offset);
	_fail(file, line);
}

void *read_file_or_fail(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long size;

	if (!f)
		fail_msg("%s: cannot open", path);
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		fail_msg("%s: cannot seek", path);
	buf = malloc(size ? size : 1);
	assert_non_null(buf);
	if (fread(buf, 1, size, f) != (size_t)size)
		fail_msg("%s: short read", path);
	fclose(f);
	*len = size;
	return buf;
}
