/* SPDX-License-Identifier: BSD-2-Clause */
/* Files prepared when mapped: this test's own code, named by a synthetic mmap2 record. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "record/prepare.h"

/* The executable mapping of this program's own file: an mmap2 record for it in @buf. */
static struct perf_rec_mmap2 *own_code(uint8_t *buf, size_t cap, uint32_t prot)
{
	struct perf_rec_mmap2 *e = (struct perf_rec_mmap2 *)buf;
	char self[4096], line[4600], path[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long long start, end;
	char perms[8];
	bool found = false;

	assert_true(n > 0);
	self[n] = '\0';
	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%llx-%llx %7s %*s %*s %*s %4095s", &start, &end, perms,
			       path) == 4 && perms[2] == 'x' && !strcmp(path, self);
	fclose(f);
	assert_true(found);
	memset(buf, 0, cap);
	e->header.type = PERF_RECORD_MMAP2;
	e->header.size = offsetof(struct perf_rec_mmap2, filename) + ((strlen(self) + 8) & ~7ul);
	assert_true(e->header.size <= cap);
	e->pid = e->tid = getpid();
	e->addr = start;
	e->len = end - start;
	e->prot = prot;
	strcpy(e->filename, self);
	return e;
}

/* Wait, 5 s at most, until @n files were prepared or failed. */
static void wait_done(struct prepare *p, uint64_t n)
{
	struct prepare_stats st;

	for (int i = 0; i < 500; i++) {
		prepare__stats(p, &st);
		if (st.prepared + st.failed >= n)
			return;
		usleep(10000);
	}
	fail_msg("%llu files prepared in 5 s, want %llu", (unsigned long long)st.prepared,
		 (unsigned long long)n);
}

static void test_prepare_own_code(void **state)
{
	static uint8_t buf[8192];
	struct sfu_cache *cache = sfu_cache__new();
	struct prepare *p;
	struct prepare_stats st;
	struct perf_rec_mmap2 *e;

	(void)state;
	assert_non_null(cache);
	p = prepare__new(cache);
	assert_non_null(p);
	assert_int_equal(prepare__start(p), 0);
	/* data and the anonymous are not asked for */
	e = own_code(buf, sizeof(buf), PROT_READ | PROT_WRITE);
	prepare__mmap(p, e, e->header.size);
	e = own_code(buf, sizeof(buf), PROT_READ | PROT_EXEC);
	prepare__mmap(p, e, e->header.size);
	wait_done(p, 1);
	prepare__stats(p, &st);
	assert_int_equal(st.asked, 1);
	assert_int_equal(st.prepared, 1);
	assert_int_equal(sfu_cache__count(cache), 1);
	/* held for the samples to come: the trim keeps it */
	assert_int_equal(sfu_cache__trim(cache), 0);
	/* asked again while held: not done twice */
	prepare__mmap(p, e, e->header.size);
	prepare__stats(p, &st);
	assert_int_equal(st.skipped, 1);
	/* a file that cannot be opened is counted, and nothing is kept of it */
	strcpy(e->filename, "/nonexistent/prepare-test");
	e->pid = 0x7fffffff;
	prepare__mmap(p, e, e->header.size);
	wait_done(p, 2);
	prepare__stats(p, &st);
	assert_int_equal(st.failed, 1);
	prepare__free(p);
	/* let go: only the cache holds it now */
	assert_int_equal(sfu_cache__trim(cache), 1);
	sfu_cache__free(cache);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prepare_own_code),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
