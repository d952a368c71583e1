/* SPDX-License-Identifier: BSD-2-Clause */
/* The growable array: first capacity, doubling, a jump past double, overflow left unchanged. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "common/vec.h"

static void test_growth(void **state)
{
	static const struct {
		size_t need, cap;	/* asked, and the capacity after */
	} steps[] = {
		{ 0, 0 },		/* nothing asked: nothing allocated */
		{ 1, 64 },		/* the first capacity */
		{ 64, 64 },
		{ 65, 128 },		/* doubled */
		{ 100, 128 },
		{ 129, 256 },
		{ 1000, 1024 },		/* doubled until it holds them */
		{ 3, 1024 },		/* never shrinks */
	};
	uint32_t *v = NULL;
	size_t cap = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		assert_int_equal(VEC_RESERVE(v, cap, steps[i].need, 64), 0);
		assert_int_equal(cap, steps[i].cap);
		if (steps[i].need)
			v[steps[i].need - 1] = (uint32_t)i;	/* the sanitizer checks the room */
	}
	free(v);
}

static void test_contents_kept(void **state)
{
	uint64_t *v = NULL;
	size_t cap = 0, n = 0;

	(void)state;
	for (uint64_t i = 0; i < 10000; i++) {
		assert_int_equal(VEC_RESERVE(v, cap, n + 1, 1), 0);
		v[n++] = i * i;
	}
	for (uint64_t i = 0; i < n; i++)
		assert_int_equal(v[i], i * i);
	assert_int_equal(cap, 16384);
	free(v);
}

static void test_overflow(void **state)
{
	char *v = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(VEC_RESERVE(v, cap, 10, 8), 0);
	assert_int_equal(cap, 16);
	memcpy(v, "123456789", 10);
	/* a count whose bytes do not fit a size_t, then more than any object may have */
	assert_int_equal(vec_reserve(&v, &cap, SIZE_MAX / 2 + 2, 4, 1), -ENOMEM);
	assert_int_equal(vec_reserve(&v, &cap, SIZE_MAX, 1, 1), -ENOMEM);
	assert_int_equal(vec_reserve(&v, &cap, PTRDIFF_MAX / 2 + 1, 2, 1), -ENOMEM);
	assert_int_equal(cap, 16);
	assert_string_equal(v, "123456789");
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_contents_kept),
		cmocka_unit_test(test_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
