/* SPDX-License-Identifier: BSD-2-Clause */
/* The stack copy size policy: grows at a cut stack, shrinks after a run of small ones, damps swings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "record/copy_size.h"

static const struct copy_limits lim = { 4096, 65536, 4096 };

/* Feed @n samples using @used bytes of full copies; @return how many changed the size. */
static unsigned feed(struct copy_size *cs, unsigned n, uint32_t used, bool ran_out)
{
	unsigned changes = 0;

	for (unsigned i = 0; i < n; i++)
		changes += copy_size__observe(cs, &lim, cs->size, used, ran_out);
	return changes;
}

static void test_grows_when_cut(void **state)
{
	struct copy_size cs;

	(void)state;
	copy_size__init(&cs, 8192);
	/* straight to the maximum: the samples in flight were cut already */
	assert_true(copy_size__observe(&cs, &lim, 8192, 8192, true));
	assert_int_equal(cs.size, 65536);
	/* at the maximum: nothing more to give */
	assert_false(copy_size__observe(&cs, &lim, 65536, 65536, true));
	assert_int_equal(cs.size, 65536);
}

static void test_short_copy_is_not_cut(void **state)
{
	struct copy_size cs;

	(void)state;
	copy_size__init(&cs, 16384);
	/* the stack's mapping ended after 5000 bytes: a bigger copy holds no more */
	assert_false(copy_size__observe(&cs, &lim, 5000, 5000, true));
	assert_int_equal(cs.size, 16384);
}

static void test_shrinks_after_a_run(void **state)
{
	struct copy_size cs;

	(void)state;
	copy_size__init(&cs, 16384);
	assert_int_equal(feed(&cs, COPY_SIZE_RUN - 1, 900, false), 0);
	assert_int_equal(cs.size, 16384);
	assert_int_equal(feed(&cs, 1, 1500, false), 1);
	/* a quarter and 256 bytes more than the most used (1500 -> 2131): a page */
	assert_int_equal(cs.size, 4096);
	/* never below the minimum */
	assert_int_equal(feed(&cs, COPY_SIZE_RUN, 0, false), 0);
	assert_int_equal(cs.size, 4096);
	/* 5000 used: 6506 -> two pages */
	copy_size__init(&cs, 16384);
	assert_int_equal(feed(&cs, COPY_SIZE_RUN, 5000, false), 1);
	assert_int_equal(cs.size, 8192);
	assert_int_equal(feed(&cs, 4 * COPY_SIZE_RUN, 5000, false), 0);
}

static void test_swings_are_damped(void **state)
{
	struct copy_size cs;
	unsigned cuts = 0;

	(void)state;
	copy_size__init(&cs, 4096);
	/* a thread mostly shallow, deep (12 KiB) once every 50 samples, for 20000 samples */
	for (unsigned i = 0; i < 20000; i++) {
		uint32_t need = i % 50 == 49 ? 12000 : 600;
		bool cut = need > cs.size;

		cuts += cut;
		copy_size__observe(&cs, &lim, cs.size, cut ? cs.size : need, cut);
	}
	/* each growth makes the next shrink wait twice as long: a few cuts, not one per swing */
	assert_true(cuts <= 6);
	/* 12000 used: 15256, four pages */
	assert_int_equal(cs.size, 16384);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grows_when_cut),
		cmocka_unit_test(test_short_copy_is_not_cut),
		cmocka_unit_test(test_shrinks_after_a_run),
		cmocka_unit_test(test_swings_are_damped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
