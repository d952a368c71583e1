/* SPDX-License-Identifier: BSD-2-Clause */
/* The stack copy size policy: grows at a cut stack or a stack that ends with its frames, shrinks when that shortens copies, damps swings. */
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

/* Feed @n samples that used @used bytes of copies that ended @above bytes past that, by themselves. */
static unsigned feed_ended(struct copy_size *cs, unsigned n, uint32_t used, uint32_t above)
{
	unsigned changes = 0;

	for (unsigned i = 0; i < n; i++)
		changes += copy_size__observe(cs, &lim, used + above, used, false);
	return changes;
}

static void test_copies_that_end_keep_the_size(void **state)
{
	struct copy_size cs;

	(void)state;
	/* copies that end 4 KiB past what the unwinds used (a thread's TLS above its frames) */
	copy_size__init(&cs, 65536);
	assert_int_equal(feed_ended(&cs, COPY_SIZE_RUN - 1, 3000, 4096), 0);
	assert_int_equal(cs.size, 65536);
	/* 3000 used: 4006 -> a page, shorter than the 7096-byte copies: smaller is cheaper */
	assert_int_equal(feed_ended(&cs, 1, 3000, 4096), 1);
	assert_int_equal(cs.size, 4096);
	/* copies that all end before the size would shrink to: it stays */
	copy_size__init(&cs, 65536);
	assert_int_equal(feed_ended(&cs, 8 * COPY_SIZE_RUN, 3000, 700), 0);
	assert_int_equal(cs.size, 65536);
	/* one copy of the run longer than the new size is enough to shrink */
	copy_size__init(&cs, 65536);
	assert_int_equal(feed_ended(&cs, COPY_SIZE_RUN - 1, 3000, 700), 0);
	assert_true(copy_size__observe(&cs, &lim, 9000, 3000, false));
	assert_int_equal(cs.size, 4096);
}

static void test_copies_that_end_with_the_frames(void **state)
{
	struct copy_size cs;

	(void)state;
	/* the main thread: its copies end 64 bytes past the sp the program started with */
	copy_size__init(&cs, 16384);
	assert_true(copy_size__observe(&cs, &lim, 3064, 3000, false));
	assert_int_equal(cs.size, 65536);
	/* and stay at the maximum: a smaller size would copy no less */
	assert_int_equal(feed_ended(&cs, 8 * COPY_SIZE_RUN, 3000, 64), 0);
	assert_int_equal(cs.size, 65536);
	/* so its deep stack is not cut */
	assert_false(copy_size__observe(&cs, &lim, 60064, 60000, false));
	assert_int_equal(cs.size, 65536);

	/* not so: a copy that failed (nothing read), a copy the unwind ran out of, a full copy */
	copy_size__init(&cs, 16384);
	assert_false(copy_size__observe(&cs, &lim, 0, 0, false));
	assert_false(copy_size__observe(&cs, &lim, 5000, 5000, true));
	assert_false(copy_size__observe(&cs, &lim, 16384, 16300, false));
	/* nor one that ended further past the unwind's last read */
	assert_false(copy_size__observe(&cs, &lim, 3000 + COPY_SIZE_TIGHT + 1, 3000, false));
	assert_int_equal(cs.size, 16384);
	assert_true(copy_size__observe(&cs, &lim, 3000 + COPY_SIZE_TIGHT, 3000, false));
	assert_int_equal(cs.size, 65536);
}

static void test_copies_in_flight_after_growth(void **state)
{
	struct copy_size cs;

	(void)state;
	copy_size__init(&cs, 16384);
	assert_true(copy_size__observe(&cs, &lim, 16384, 16384, true));
	assert_int_equal(cs.size, 65536);
	/* cut at the old size, copied before the growth was seen: no new growth, no shrink */
	for (unsigned i = 0; i < 4 * COPY_SIZE_RUN; i++)
		assert_false(copy_size__observe(&cs, &lim, i % 2 ? 16384 : 20064,
						i % 2 ? 16384 : 20000, i % 2));
	assert_int_equal(cs.size, 65536);
}

static void test_swings_of_ended_copies_cost_no_cut(void **state)
{
	struct copy_size cs;
	unsigned cuts = 0;

	(void)state;
	copy_size__init(&cs, 4096);
	/* the main thread, mostly shallow, 60 KiB deep once every 50 samples */
	for (unsigned i = 0; i < 20000; i++) {
		uint32_t need = i % 50 == 49 ? 60000 : 600;
		bool cut = need + 64 > cs.size;

		cuts += cut;
		copy_size__observe(&cs, &lim, cut ? cs.size : need + 64, cut ? cs.size : need, cut);
	}
	assert_int_equal(cuts, 0);
	assert_int_equal(cs.size, 65536);
}

/*
 * A thread's top: the highest read of complete unwinds and the slack, only
 * growing; incomplete unwinds teach nothing; an unwind the top cut drops it
 * for good, and a copy that ran out short of the top is not the top's cut.
 */
static void test_top(void **state)
{
	const uint64_t root = 0x7f0000100000;	/* the outermost frame's end */
	struct copy_size cs;

	(void)state;
	copy_size__init(&cs, 16384);
	assert_int_equal(cs.top, 0);
	/* an unwind that stopped early: its highest read is not the stack's end */
	assert_false(copy_size__observe_top(&cs, root - 400, 4096, 200, false, false));
	assert_int_equal(cs.top, 0);
	/* complete: up to the root, and the slack */
	assert_true(copy_size__observe_top(&cs, root - 400, 4096, 400, false, true));
	assert_int_equal(cs.top, root + COPY_TOP_SLACK);
	/* deeper samples of the same thread end at the same root: no change */
	assert_false(copy_size__observe_top(&cs, root - 9000, 9064, 9000, false, true));
	/* an unaligned end is rounded up to a word */
	assert_true(copy_size__observe_top(&cs, root - 400, 4096, 403, false, true));
	assert_int_equal(cs.top, root + 8 + COPY_TOP_SLACK);
	/* a lower end never lowers it */
	assert_false(copy_size__observe_top(&cs, root - 400, 4096, 300, false, true));
	assert_int_equal(cs.top, root + 8 + COPY_TOP_SLACK);
	/* ran out, but its copy ended before the top (the size's cut): the top stays */
	assert_false(copy_size__observe_top(&cs, root - 20000, 16384, 16384, true, false));
	assert_int_equal(cs.top, root + 8 + COPY_TOP_SLACK);
	/* ran out at the top: dropped, and never learned again */
	assert_true(copy_size__observe_top(&cs, root - 100, 100 + 8 + COPY_TOP_SLACK,
					   100 + 8 + COPY_TOP_SLACK, true, false));
	assert_int_equal(cs.top, 0);
	assert_false(copy_size__observe_top(&cs, root - 400, 4096, 400, false, true));
	assert_int_equal(cs.top, 0);
	/* a new thread starts without one */
	copy_size__init(&cs, 16384);
	assert_int_equal(cs.top, 0);
	assert_true(copy_size__observe_top(&cs, root - 400, 4096, 400, false, true));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grows_when_cut),
		cmocka_unit_test(test_short_copy_is_not_cut),
		cmocka_unit_test(test_shrinks_after_a_run),
		cmocka_unit_test(test_swings_are_damped),
		cmocka_unit_test(test_copies_that_end_keep_the_size),
		cmocka_unit_test(test_copies_that_end_with_the_frames),
		cmocka_unit_test(test_copies_in_flight_after_growth),
		cmocka_unit_test(test_swings_of_ended_copies_cost_no_cut),
		cmocka_unit_test(test_top),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
