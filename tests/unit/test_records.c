/* SPDX-License-Identifier: BSD-2-Clause */
/* The records the sampler reads: ring samples and task events checked at every boundary; the debug capture's file. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "record/records.h"

#define HDR sizeof(struct sample_hdr)

/* A sample record of @len bytes saying @depth and @ustack_len, checked from an exact-size copy. */
static int check(size_t len, uint32_t depth, uint32_t ustack_len, struct sample_view *v)
{
	uint8_t *rec = calloc(1, len ? len : 1);
	struct sample_hdr h = { .kstack_depth = depth, .ustack_len = ustack_len };
	int err;

	assert_non_null(rec);
	memcpy(rec, &h, len < HDR ? len : HDR);
	err = sample_record__check(rec, len, v);
	if (!err) {
		assert_ptr_equal(v->h, rec);
		assert_ptr_equal(v->kstack, rec + HDR);
		assert_ptr_equal(v->ustack, rec + HDR + 8 * (size_t)depth);
		assert_true(v->ustack + ustack_len <= rec + len);
	}
	free(rec);
	return err;
}

static void test_sample_bounds(void **state)
{
	static const struct {
		size_t len;
		uint32_t depth, ustack_len;
		int want;
	} cases[] = {
		{ 0, 0, 0, -EBADMSG },
		{ HDR - 1, 0, 0, -EBADMSG },			/* shorter than its header */
		{ HDR, 0, 0, 0 },
		{ HDR + 8, 1, 0, 0 },
		{ HDR + 7, 1, 0, -EBADMSG },			/* a kernel address cut */
		{ HDR + 8 * MAX_KSTACK_DEPTH, MAX_KSTACK_DEPTH, 0, 0 },
		{ HDR + 8 * 128, MAX_KSTACK_DEPTH + 1, 0, -EBADMSG },	/* deeper than BPF writes */
		{ HDR + 8 + 4096, 1, 4096, 0 },
		{ HDR + 8 + 4095, 1, 4096, -EBADMSG },		/* the user stack cut */
		{ HDR + 4096, 0, 4096, 0 },
		{ HDR + 16, 0, UINT32_MAX, -EBADMSG },
		{ HDR, UINT32_MAX, 0, -EBADMSG },		/* depth * 8 would overflow a u32 */
		{ HDR + 16, 1, 9, -EBADMSG },			/* the stack and kernel addresses overlap */
	};
	struct sample_view v;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int err = check(cases[i].len, cases[i].depth, cases[i].ustack_len, &v);

		if (err != cases[i].want)
			fail_msg("case %zu: %zu bytes, depth %u, ustack %u: %d, want %d", i,
				 cases[i].len, cases[i].depth, cases[i].ustack_len, err, cases[i].want);
	}
}

/* Python frames follow the user stack (unaligned): all of them inside the record, at most PY_MAX_FRAMES. */
static void test_sample_python(void **state)
{
	static const struct {
		size_t len;
		uint32_t depth, ustack_len, py_depth;
		int want;
	} cases[] = {
		{ HDR + 24, 0, 0, 1, 0 },
		{ HDR + 23, 0, 0, 1, -EBADMSG },			/* the frame cut */
		{ HDR + 8 + 5 + 48, 1, 5, 2, 0 },			/* after an odd-sized stack */
		{ HDR + 8 + 5 + 47, 1, 5, 2, -EBADMSG },
		{ HDR + 24 * PY_MAX_FRAMES, 0, 0, PY_MAX_FRAMES, 0 },
		{ HDR + 24 * (PY_MAX_FRAMES + 1), 0, 0, PY_MAX_FRAMES + 1, -EBADMSG },	/* past the cap */
		{ HDR + 24, 0, 0, UINT32_MAX, -EBADMSG },		/* depth * 24 would overflow a u32 */
		{ HDR + 4096, 0, 4096, 0, 0 },
		{ HDR + 4096 + 24, 0, 4096 + 24, 1, -EBADMSG },	/* the stack takes the frame's bytes */
	};
	struct sample_view v;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t *rec = calloc(1, cases[i].len);
		struct sample_hdr h = { .kstack_depth = cases[i].depth,
					.ustack_len = cases[i].ustack_len, .py_depth = cases[i].py_depth };
		int err;

		assert_non_null(rec);
		memcpy(rec, &h, HDR);
		err = sample_record__check(rec, cases[i].len, &v);
		if (err != cases[i].want)
			fail_msg("case %zu: %zu bytes, ustack %u, %u Python frames: %d, want %d", i,
				 cases[i].len, cases[i].ustack_len, cases[i].py_depth, err, cases[i].want);
		if (!err) {
			assert_ptr_equal(v.py, v.ustack + cases[i].ustack_len);
			assert_true(v.py + 24 * (size_t)cases[i].py_depth <= rec + cases[i].len);
		}
		free(rec);
	}
}

/* A sample's time is a u64 the profile keeps as a signed one: past INT64_MAX the record is bad. */
static void test_sample_time(void **state)
{
	struct sample_hdr h = { .time_ns = (uint64_t)INT64_MAX };
	struct sample_view v;

	(void)state;
	assert_int_equal(sample_record__check(&h, sizeof(h), &v), 0);
	h.time_ns++;
	assert_int_equal(sample_record__check(&h, sizeof(h), &v), -EBADMSG);
	h.time_ns = UINT64_MAX;
	assert_int_equal(sample_record__check(&h, sizeof(h), &v), -EBADMSG);
}

static void test_task_time(void **state)
{
	uint8_t rec[64] = { 0 };
	struct perf_event_header *e = (struct perf_event_header *)rec;
	uint64_t t = 0, want = 0x1122334455667788ull;

	(void)state;
	e->type = PERF_RECORD_EXIT;
	/* sample_id_all: pid, tid, then time, the record's last 8 bytes */
	e->size = 48;
	memcpy(rec + 40, &want, 8);
	assert_int_equal(task_record__time(e, &t), 0);
	assert_true(t == want);
	e->size = sizeof(*e) + 16;
	memcpy(rec + 16, &want, 8);
	t = 0;
	assert_int_equal(task_record__time(e, &t), 0);
	assert_true(t == want);
	/* past INT64_MAX ns: no clock's, and the profile file cannot hold it */
	want = (uint64_t)INT64_MAX;
	memcpy(rec + 16, &want, 8);
	assert_int_equal(task_record__time(e, &t), 0);
	want++;
	memcpy(rec + 16, &want, 8);
	assert_int_equal(task_record__time(e, &t), -EBADMSG);
	e->size = sizeof(*e) + 15;
	assert_int_equal(task_record__time(e, &t), -EBADMSG);
	e->size = 0;
	assert_int_equal(task_record__time(e, &t), -EBADMSG);
}

static char *temp_dir(void)
{
	char *dir = strdup("/tmp/test_records-XXXXXX");

	assert_non_null(dir);
	assert_non_null(mkdtemp(dir));
	return dir;
}

/* The capture: items of a kind, a u32 length and the bytes; owner-only; never over a file or through a link. */
static void test_capture_file(void **state)
{
	char *dir = temp_dir(), path[256], link[256], buf[64];
	struct record_capture *c;
	struct stat st;
	FILE *f;
	size_t n;
	static const uint8_t want[] = {
		0, 3, 0, 0, 0, 'a', 'b', 'c',
		1, 0, 0, 0, 0,
		1, 2, 0, 0, 0, 0xff, 0xfe,
	};

	(void)state;
	snprintf(path, sizeof(path), "%s/capture", dir);
	c = record_capture__open(path);
	assert_non_null(c);
	record_capture__add(c, RECORD_CAPTURE_TASK, "abc", 3);
	record_capture__add(c, RECORD_CAPTURE_SAMPLE, "", 0);
	record_capture__add(c, RECORD_CAPTURE_SAMPLE, "\xff\xfe", 2);
	assert_int_equal(record_capture__close(c), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	f = fopen(path, "rb");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_int_equal(n, sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));

	/* an existing file is kept, a link is not followed */
	assert_null(record_capture__open(path));
	assert_int_equal(errno, EEXIST);
	snprintf(link, sizeof(link), "%s/link", dir);
	assert_int_equal(symlink("/nonexistent-target", link), 0);
	assert_null(record_capture__open(link));
	assert_int_equal(errno, EEXIST);
	assert_int_equal(access("/nonexistent-target", F_OK), -1);
	assert_int_equal(record_capture__close(NULL), 0);
	unlink(link);
	unlink(path);
	rmdir(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample_bounds),
		cmocka_unit_test(test_sample_python),
		cmocka_unit_test(test_sample_time),
		cmocka_unit_test(test_task_time),
		cmocka_unit_test(test_capture_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
