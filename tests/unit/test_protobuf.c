/* SPDX-License-Identifier: BSD-2-Clause */
/* The hand-written protobuf of the pprof and OTLP exporters: varints, fixed64, fields, escaped strings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "report/protobuf.h"

static void assert_bytes(const struct pb *b, const uint8_t *want, size_t n, const char *file,
			 int line)
{
	if (b->oom || b->len != n || memcmp(b->p, want, n))
		_fail(file, line);
}

#define ASSERT_BYTES(b, ...) do { \
	static const uint8_t want_[] = { __VA_ARGS__ }; \
	assert_bytes((b), want_, sizeof(want_), __FILE__, __LINE__); \
} while (0)

struct varint_case {
	uint64_t v;
	uint8_t bytes[10];
	size_t n;
};

/* the protobuf encoding guide's values, and a negative int64 as ten bytes */
static const struct varint_case varints[] = {
	{ 0, { 0 }, 1 },
	{ 1, { 1 }, 1 },
	{ 127, { 0x7f }, 1 },
	{ 128, { 0x80, 0x01 }, 2 },
	{ 150, { 0x96, 0x01 }, 2 },
	{ 300, { 0xac, 0x02 }, 2 },
	{ UINT64_MAX, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 }, 10 },
	{ (uint64_t)-2, { 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 }, 10 },
};

static void test_varint(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(varints) / sizeof(varints[0]); i++) {
		struct pb b = { 0 };

		pb_varint(&b, varints[i].v);
		assert_bytes(&b, varints[i].bytes, varints[i].n, __FILE__, __LINE__);
		pb_release(&b);
	}
}

static void test_fields(void **state)
{
	struct pb b = { 0 }, sub = { 0 };

	(void)state;
	/* zero is proto3's default: left out, but a oneof's member is written */
	pb_uint(&b, 1, 0);
	pb_fixed64(&b, 3, 0);
	assert_int_equal(b.len, 0);
	pb_uint_always(&b, 3, 0);
	ASSERT_BYTES(&b, 0x18, 0x00);
	b.len = 0;
	pb_uint(&b, 1, 150);
	ASSERT_BYTES(&b, 0x08, 0x96, 0x01);
	b.len = 0;
	/* fixed64: wire type 1, little-endian */
	pb_fixed64(&b, 3, 0x0102030405060708ull);
	ASSERT_BYTES(&b, 0x19, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01);
	b.len = 0;
	pb_bytes(&b, 2, "testing", 7);
	ASSERT_BYTES(&b, 0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g');
	b.len = 0;
	/* a message field, and the sub-message emptied for the next one */
	pb_uint(&sub, 1, 150);
	pb_msg(&b, 3, &sub);
	ASSERT_BYTES(&b, 0x1a, 0x03, 0x08, 0x96, 0x01);
	assert_int_equal(sub.len, 0);
	b.len = 0;
	pb_msg(&b, 4, &sub);
	ASSERT_BYTES(&b, 0x22, 0x00);
	pb_release(&b);
	pb_release(&sub);
	assert_null(b.p);
}

static void test_string_id(void **state)
{
	struct strtab t = { 0 };
	bool oom = false;

	(void)state;
	assert_int_equal(pb_string_id(&t, "", &oom), 0);
	assert_int_equal(pb_string_id(&t, NULL, &oom), 0);
	assert_int_equal(pb_string_id(&t, "main", &oom), 1);
	assert_int_equal(pb_string_id(&t, "main", &oom), 1);
	/* bytes that are not UTF-8 are escaped: the table holds UTF-8 only */
	assert_int_equal(pb_string_id(&t, "a\xff\n", &oom), 2);
	assert_string_equal(t.strs[2], "a\\xff\\n");
	/* injective: the escaped text itself is another string */
	assert_int_equal(pb_string_id(&t, "a\\xff\\n", &oom), 3);
	assert_false(oom);
	strtab__release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varint),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_string_id),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
