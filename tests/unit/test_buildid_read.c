/* SPDX-License-Identifier: BSD-2-Clause */
/* The one build-ID note parser and printer (user/buildid/buildid_read.c, buildid_hex()): made-up notes, damaged ones, and this binary against readelf. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "buildid/buildid.h"

/* A note as the ELF gABI lays it out: header, name and descriptor each padded to @align. */
static size_t put_note(uint8_t *buf, size_t off, size_t align, uint32_t type, const char *name,
		       uint32_t namesz, const uint8_t *desc, uint32_t descsz)
{
	uint32_t hdr[3] = { namesz, descsz, type };

	memcpy(buf + off, hdr, sizeof(hdr));
	off += sizeof(hdr);
	memcpy(buf + off, name, namesz);
	off = (off + namesz + align - 1) & ~(align - 1);
	memcpy(buf + off, desc, descsz);
	return (off + descsz + align - 1) & ~(align - 1);
}

static const uint8_t id20[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
				  13, 14, 15, 0xff };

struct notes_case {
	const char *what;
	size_t align;
	int layout;		/* what precedes or damages the build-ID note */
	size_t want;		/* the length found, 0: none */
};

enum { PLAIN, AFTER_OTHER, NAME_NO_NUL, DESC_TOO_SHORT, DESC_TOO_LONG, CUT, HUGE_NAMESZ,
       HUGE_DESCSZ, OTHER_NAME };

static const struct notes_case notes_cases[] = {
	{ "4-aligned", 4, PLAIN, 20 },
	{ "8-aligned (a PT_NOTE of p_align 8)", 8, PLAIN, 20 },
	{ "after an ABI tag note", 4, AFTER_OTHER, 20 },
	{ "after a property note, 8-aligned", 8, AFTER_OTHER, 20 },
	{ "name 'GNU' without its NUL", 4, NAME_NO_NUL, 0 },
	{ "a 1-byte ID", 4, DESC_TOO_SHORT, 0 },
	{ "longer than BUILDID_MAX", 4, DESC_TOO_LONG, 0 },
	{ "cut in its descriptor", 4, CUT, 0 },
	{ "namesz past the end (no wrap)", 4, HUGE_NAMESZ, 0 },
	{ "descsz past the end (no wrap)", 8, HUGE_DESCSZ, 0 },
	{ "type 3 of another vendor", 4, OTHER_NAME, 0 },
};

static void test_notes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(notes_cases) / sizeof(notes_cases[0]); i++) {
		const struct notes_case *c = &notes_cases[i];
		uint8_t buf[512] = { 0 }, big[BUILDID_MAX + 1] = { 0 }, out[BUILDID_MAX];
		uint8_t *heap;
		size_t n = 0, got;

		switch (c->layout) {
		case AFTER_OTHER:
			n = put_note(buf, n, c->align, 1 /* NT_GNU_ABI_TAG */, "GNU", 4, id20, 16);
			/* fall through */
		case PLAIN:
		case CUT:
			n = put_note(buf, n, c->align, 3, "GNU", 4, id20, sizeof(id20));
			if (c->layout == CUT)
				n -= 8;
			break;
		case NAME_NO_NUL:
			n = put_note(buf, n, c->align, 3, "GNU", 3, id20, sizeof(id20));
			break;
		case DESC_TOO_SHORT:
			n = put_note(buf, n, c->align, 3, "GNU", 4, id20, 1);
			break;
		case DESC_TOO_LONG:
			n = put_note(buf, n, c->align, 3, "GNU", 4, big, sizeof(big));
			break;
		case HUGE_NAMESZ:
			n = put_note(buf, n, c->align, 3, "GNU", 4, id20, sizeof(id20));
			((uint32_t *)buf)[0] = UINT32_MAX - 8;
			break;
		case HUGE_DESCSZ:
			n = put_note(buf, n, c->align, 3, "GNU", 4, id20, sizeof(id20));
			((uint32_t *)buf)[1] = UINT32_MAX - 2;
			break;
		case OTHER_NAME:
			n = put_note(buf, n, c->align, 3, "Go\0", 4, id20, sizeof(id20));
			break;
		}
		/* a heap copy of exactly n bytes: a read past them is ASan's to see */
		heap = malloc(n);
		assert_non_null(heap);
		memcpy(heap, buf, n);
		got = buildid_from_notes(heap, n, c->align, out);
		free(heap);
		if (got != c->want)
			fail_msg("%s: found %zu bytes, want %zu", c->what, got, c->want);
		if (c->want)
			assert_memory_equal(out, id20, c->want);
	}
	/* nothing, and less than a header */
	assert_int_equal(buildid_from_notes("", 0, 4, (uint8_t[BUILDID_MAX]){ 0 }), 0);
	assert_int_equal(buildid_from_notes("\4\0\0\0\24\0\0", 7, 4, (uint8_t[BUILDID_MAX]){ 0 }), 0);
}

static void test_hex(void **state)
{
	char hex[2 * BUILDID_MAX + 1], small[9];
	char *text = NULL;
	size_t len = 0;
	uint8_t long_id[100];
	FILE *f;

	(void)state;
	assert_int_equal(buildid_hex(hex, sizeof(hex), id20, sizeof(id20)), 40);
	assert_string_equal(hex, "deadbeef0102030405060708090a0b0c0d0e0fff");
	/* cut to the room given, still a string */
	assert_int_equal(buildid_hex(small, sizeof(small), id20, sizeof(id20)), 8);
	assert_string_equal(small, "deadbeef");
	/* buildid_fput(): any length (a user's markup names one), as buildid_hex() writes it */
	for (size_t i = 0; i < sizeof(long_id); i++)
		long_id[i] = (uint8_t)(i * 7);
	f = open_memstream(&text, &len);
	assert_non_null(f);
	buildid_fput(f, long_id, sizeof(long_id));
	buildid_fput(f, id20, 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(len, 200);
	for (size_t i = 0; i < sizeof(long_id); i++) {
		char want[3];

		snprintf(want, sizeof(want), "%02x", long_id[i]);
		assert_memory_equal(text + 2 * i, want, 2);
	}
	free(text);
}

/* This test's own binary: buildid_read() against readelf -n. */
static void test_read_self(void **state)
{
	char line[512], hex[2 * BUILDID_MAX + 1], *at, want[2 * BUILDID_MAX + 1] = "";
	uint8_t id[BUILDID_MAX];
	size_t len;
	FILE *p;
	int fd;

	(void)state;
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	len = buildid_read(fd, id);
	close(fd);
	/* /proc/self would be readelf's own: the test's binary by its path */
	{
		char exe[4096], cmd[4200];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		assert_true(n > 0);
		exe[n] = '\0';
		snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", exe);
		p = popen(cmd, "r");
	}
	while (p && fgets(line, sizeof(line), p))
		if ((at = strstr(line, "Build ID: ")))
			sscanf(at + strlen("Build ID: "), "%128[0-9a-f]", want);
	if (!p || pclose(p) != 0 || !want[0]) {
		print_message("readelf (binutils) not found or no build ID: case skipped\n");
		skip();
	}
	assert_true(len >= 2);
	buildid_hex(hex, sizeof(hex), id, len);
	assert_string_equal(hex, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_notes),
		cmocka_unit_test(test_hex),
		cmocka_unit_test(test_read_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
