/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof record -e: perf's event names, tracepoints from a made-up tracefs, and what is refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "record/events.h"

static char tracefs[] = "/tmp/sfprof-test-tracefs-XXXXXX";

/* A tracepoint directory with its id file holding @id (NULL: no id file). */
static void make_tracepoint(const char *sys, const char *name, const char *id)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/events", tracefs);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/events/%s", tracefs, sys);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/events/%s/%s", tracefs, sys, name);
	assert_int_equal(mkdir(path, 0700), 0);
	if (!id)
		return;
	snprintf(path, sizeof(path), "%s/events/%s/%s/id", tracefs, sys, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(id, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(tracefs))
		return -1;
	make_tracepoint("syscalls", "sys_enter_write", "840\n");
	make_tracepoint("sched", "sched_switch", "372\n");
	make_tracepoint("bad", "no_id", NULL);
	make_tracepoint("bad", "junk_id", "12x\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tracefs);
	return system(cmd) ? -1 : 0;
}

struct good {
	const char *arg;
	size_t n;
	/* each event: its recorded name, type, config, clock */
	struct { const char *name; uint32_t type; uint64_t config; bool clock; } ev[3];
};

static const struct good goods[] = {
	{ "cpu-clock", 1, { { "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, true } } },
	{ "task-clock", 1, { { "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, true } } },
	{ "faults", 1, { { "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, false } } },
	{ "Page-Faults", 1, { { "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, false } } },
	{ "cs,migrations", 2, {
		{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, false },
		{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, false } } },
	{ "minor-faults,major-faults", 2, {
		{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, false },
		{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, false } } },
	{ "cycles,instructions,branch-misses", 3, {
		{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, false },
		{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, false },
		{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, false } } },
	{ "syscalls:sys_enter_write", 1, {
		{ "syscalls:sys_enter_write", PERF_TYPE_TRACEPOINT, 840, false } } },
	{ "sched:sched_switch,cpu-clock", 2, {
		{ "sched:sched_switch", PERF_TYPE_TRACEPOINT, 372, false },
		{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, true } } },
};

static void test_good(void **state)
{
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
		const struct good *g = &goods[i];
		struct event_list l = { .n = 0 };
		int rc = event_list__parse(&l, g->arg, tracefs, err, sizeof(err));

		if (rc)
			fail_msg("'%s': %d %s", g->arg, rc, err);
		assert_int_equal(l.n, g->n);
		for (size_t j = 0; j < g->n; j++) {
			assert_string_equal(l.ev[j].name, g->ev[j].name);
			assert_int_equal(l.ev[j].type, g->ev[j].type);
			assert_int_equal(l.ev[j].config, g->ev[j].config);
			assert_int_equal(l.ev[j].clock, g->ev[j].clock);
		}
	}
}

struct bad {
	const char *arg;
	int rc;
	const char *says;	/* in the message */
};

static const struct bad bads[] = {
	{ "nosuch", -EINVAL, "unknown event 'nosuch'" },
	{ "", -EINVAL, "empty event name" },
	{ "cpu-clock,", -EINVAL, "empty event name" },
	{ "cycles:u", -EINVAL, "modifiers" },
	{ "faults:k", -EINVAL, "modifiers" },
	{ "cpu/cycles/", -EINVAL, "PMU terms" },
	{ "{cycles,instructions}", -EINVAL, "event groups" },
	{ "sched:*", -EINVAL, "not a tracepoint" },
	{ "a:b:c", -EINVAL, "not a tracepoint" },
	{ "..:x", -EINVAL, "not a tracepoint" },
	{ ":x", -EINVAL, "not a tracepoint" },
	{ "sched:", -EINVAL, "not a tracepoint" },
	{ "sched:nope", -ENOENT, "no tracepoint 'sched:nope'" },
	{ "bad:no_id", -ENOENT, "no tracepoint" },
	{ "bad:junk_id", -EINVAL, "holds no id" },
	{ "page-faults,faults", -EINVAL, "given twice" },
	{ "offcpu-time", -EINVAL, "--off-cpu" },
};

static void test_bad(void **state)
{
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct event_list l = { .n = 0 };
		int rc;

		err[0] = '\0';
		rc = event_list__parse(&l, bads[i].arg, tracefs, err, sizeof(err));
		if (rc != bads[i].rc || !strstr(err, bads[i].says))
			fail_msg("'%s': %d '%s', want %d '%s'", bads[i].arg, rc, err, bads[i].rc,
				 bads[i].says);
	}
}

static void test_too_many_and_long(void **state)
{
	struct event_list l = { .n = 0 };
	char err[256], name[EVENT_NAME_MAX + 8];

	(void)state;
	/* ids up to MAX_EVENTS - 1: one stays for offcpu-time */
	l.n = MAX_EVENTS - 1;
	assert_int_equal(event_list__parse(&l, "cpu-clock", tracefs, err, sizeof(err)), -E2BIG);
	l.n = 0;
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	assert_int_equal(event_list__parse(&l, name, tracefs, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "too long"));
}

static void test_default_and_attr(void **state)
{
	struct event_list l = { .n = 0 };
	struct perf_event_attr attr;
	char err[256];

	(void)state;
	assert_true(event_list__is_default(&l));
	assert_int_equal(event_list__parse(&l, "cpu-clock", tracefs, err, sizeof(err)), 0);
	assert_true(event_list__is_default(&l));
	assert_int_equal(event_list__parse(&l, "faults", tracefs, err, sizeof(err)), 0);
	assert_false(event_list__is_default(&l));

	/* frequency, period, and a tracepoint's every hit */
	event_spec__attr(&l.ev[1], 0, 999, &attr);
	assert_int_equal(attr.freq, 1);
	assert_int_equal(attr.sample_freq, 999);
	event_spec__attr(&l.ev[1], 10, 999, &attr);
	assert_int_equal(attr.freq, 0);
	assert_int_equal(attr.sample_period, 10);
	assert_int_equal(event_list__parse(&l, "syscalls:sys_enter_write", tracefs, err, sizeof(err)), 0);
	event_spec__attr(&l.ev[2], 10, 999, &attr);
	assert_int_equal(attr.type, PERF_TYPE_TRACEPOINT);
	assert_int_equal(attr.config, 840);
	assert_int_equal(attr.sample_period, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_too_many_and_long),
		cmocka_unit_test(test_default_and_attr),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
