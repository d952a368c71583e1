/* SPDX-License-Identifier: BSD-2-Clause */
/* report's filters: --time windows in seconds and percentages, id lists, names. */
#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "report/report_filter.h"

#define S 1000000000ull

struct time_case {
	const char *arg;
	int err;
	uint64_t first, last;	/* the recording */
	uint64_t in[3], out[3];	/* times inside and outside the windows (0: none) */
};

static const struct time_case time_cases[] = {
	{ "10.5,11", 0, 0, 0, { 10 * S + S / 2, 11 * S, 0 }, { 10 * S + S / 2 - 1, 11 * S + 1, 0 } },
	{ ",11", 0, 0, 0, { 1, 11 * S, 0 }, { 11 * S + 1, 0, 0 } },
	{ "11,", 0, 0, 0, { 11 * S, 99 * S, 0 }, { 11 * S - 1, 0, 0 } },
	{ "1,2 5,6", 0, 0, 0, { 1 * S, 5 * S, 6 * S }, { 3 * S, 7 * S, 0 } },
	{ "0.000000001,0.000000002", 0, 0, 0, { 1, 2, 0 }, { 3, 0, 0 } },
	/* the second half of [100, 200]: from 150, a ns before the next window */
	{ "50%/2", 0, 100, 200, { 150, 200, 0 }, { 149, 0, 0 } },
	{ "50%/1", 0, 100, 200, { 100, 149, 0 }, { 150, 200, 0 } },
	{ "0%-10%,90%-100%", 0, 100, 200, { 100, 109, 190 }, { 111, 150, 0 } },
	{ .arg = "yesterday", .err = -EINVAL },
	{ .arg = "5,3", .err = -EINVAL },
	{ .arg = "1,2,3", .err = -EINVAL },
	{ .arg = "60%/2", .err = -EINVAL },
	{ .arg = "10%-5%", .err = -EINVAL },
	{ .arg = "10%/0", .err = -EINVAL },
	{ .arg = "101%-102%", .err = -EINVAL },
	{ .arg = "1.x,2", .err = -EINVAL },
	{ .arg = "", .err = -EINVAL },
	{ .arg = "10%/1,", .err = -EINVAL },
};

static void test_time(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(time_cases) / sizeof(time_cases[0]); i++) {
		const struct time_case *c = &time_cases[i];
		struct report_filter f = { 0 };
		int err = report_filter__time(&f, c->arg);

		if (err != c->err)
			fail_msg("--time '%s': %d, want %d", c->arg, err, c->err);
		if (!err) {
			report_filter__resolve(&f, c->first, c->last);
			for (int k = 0; k < 3; k++) {
				if (c->in[k] && !report_filter__in_time(&f, c->in[k]))
					fail_msg("--time '%s': %llu not in", c->arg,
						 (unsigned long long)c->in[k]);
				if (c->out[k] && report_filter__in_time(&f, c->out[k]))
					fail_msg("--time '%s': %llu in", c->arg,
						 (unsigned long long)c->out[k]);
			}
		}
		report_filter__release(&f);
	}
}

static void test_ids_and_names(void **state)
{
	static const struct { const char *arg; int err; size_t n; } cases[] = {
		{ "1", 0, 1 }, { "1,22,333", 0, 3 }, { "", -EINVAL, 0 }, { "12x", -EINVAL, 0 },
		{ "1,", -EINVAL, 0 }, { "-1", -EINVAL, 0 }, { "4294967296", -EINVAL, 0 },
	};
	struct report_filter f = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t *ids = NULL;
		size_t n = 0;
		int err = report_filter__ids(&ids, &n, cases[i].arg);

		if (err != cases[i].err || (!err && n != cases[i].n))
			fail_msg("ids '%s': %d with %zu", cases[i].arg, err, n);
		free(ids);
	}
	assert_int_equal(report_filter__ids(&f.pids, &f.npids, "7,8"), 0);
	assert_int_equal(report_filter__names(&f.comms, &f.ncomms, "a,b c"), 0);
	assert_true(report_filter__thread(&f, 8, 100, "b c"));
	assert_false(report_filter__thread(&f, 9, 100, "a"));
	assert_false(report_filter__thread(&f, 7, 100, "b"));
	assert_false(report_filter__thread(&f, 7, 100, NULL));
	assert_true(report_filter__has(NULL, 0, NULL));
	report_filter__release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_ids_and_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
