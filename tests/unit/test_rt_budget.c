/* SPDX-License-Identifier: BSD-2-Clause */
/* Real-time priority within a budget: promoted when asked, demoted past the budget or when no longer wanted, promoted again the next window. */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "record/rt_budget.h"

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Burn @ns of this thread's CPU time. */
static void burn(uint64_t ns)
{
	uint64_t end = cpu_ns() + ns;
	volatile unsigned long x = 0;

	while (cpu_ns() < end)
		x++;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Whether this thread may ask for SCHED_FIFO at all: else the budget says it was refused. */
static bool may_be_realtime(void)
{
	struct sched_param sp = { .sched_priority = 1 };

	if (sched_setscheduler(0, SCHED_FIFO, &sp))
		return false;
	sp.sched_priority = 0;
	sched_setscheduler(0, SCHED_OTHER, &sp);
	return true;
}

static void test_budget(void **state)
{
	struct rt_budget_stats st;
	struct rt_budget *rb;

	(void)state;
	if (!may_be_realtime()) {
		rb = rt_budget__new(10, 1);
		assert_non_null(rb);
		rt_budget__tick(rb, true);
		rt_budget__stats(rb, &st);
		assert_true(st.refused);
		assert_int_equal(st.err, -EPERM);
		assert_int_equal(sched_getscheduler(0), SCHED_OTHER);
		rt_budget__free(rb);
		skip();
	}
	/* 10% of one CPU per 100 ms: 10 ms */
	rb = rt_budget__new(10, 1);
	assert_non_null(rb);
	/* nothing until asked */
	assert_int_equal(sched_getscheduler(0), SCHED_OTHER);
	rt_budget__tick(rb, true);
	assert_int_equal(sched_getscheduler(0) & ~SCHED_RESET_ON_FORK, SCHED_FIFO);
	assert_true(sched_getscheduler(0) & SCHED_RESET_ON_FORK);
	/* past the budget: normal priority for the rest of the window, asking changes nothing */
	burn(15000000);
	rt_budget__tick(rb, true);
	assert_int_equal(sched_getscheduler(0) & ~SCHED_RESET_ON_FORK, SCHED_OTHER);
	rt_budget__tick(rb, true);
	assert_int_equal(sched_getscheduler(0) & ~SCHED_RESET_ON_FORK, SCHED_OTHER);
	/* the next window: real-time again */
	sleep_ms(110);
	rt_budget__tick(rb, true);
	assert_int_equal(sched_getscheduler(0) & ~SCHED_RESET_ON_FORK, SCHED_FIFO);
	/* not wanted: normal priority at once, within the budget */
	rt_budget__tick(rb, false);
	assert_int_equal(sched_getscheduler(0) & ~SCHED_RESET_ON_FORK, SCHED_OTHER);
	rt_budget__stats(rb, &st);
	assert_false(st.refused);
	assert_int_equal(st.windows, 2);
	assert_int_equal(st.over, 1);
	/* the CPU burnt at real-time priority, and little more */
	assert_true(st.rt_ns >= 15000000);
	assert_true(st.rt_ns < 100000000);
	/* again in the same window: no new window; the next, entered real-time, counts */
	rt_budget__tick(rb, true);
	sleep_ms(110);
	rt_budget__tick(rb, true);
	rt_budget__stats(rb, &st);
	assert_int_equal(st.windows, 3);
	rt_budget__free(rb);
	/* freed by its thread: back to normal */
	assert_int_equal(sched_getscheduler(0) & ~SCHED_RESET_ON_FORK, SCHED_OTHER);
}

static void test_zero_is_never(void **state)
{
	struct rt_budget_stats st;
	struct rt_budget *rb = rt_budget__new(0, 1);

	(void)state;
	assert_non_null(rb);
	rt_budget__tick(rb, true);
	assert_int_equal(sched_getscheduler(0) & ~SCHED_RESET_ON_FORK, SCHED_OTHER);
	rt_budget__stats(rb, &st);
	assert_false(st.refused);
	assert_int_equal(st.windows, 0);
	rt_budget__free(rb);
	rt_budget__free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_zero_is_never),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
