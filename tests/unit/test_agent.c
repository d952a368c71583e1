/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof agent's pure parts: container IDs from cgroup paths, services and their query strings, retention. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <errno.h>
#include <cmocka.h>

#include "agent/outdir.h"
#include "agent/service.h"

#define ID64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID64B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define UID "3f2a4c1e-7b9d-4e5f-8a6b-1c2d3e4f5a6b"
#define UID_ "3f2a4c1e_7b9d_4e5f_8a6b_1c2d3e4f5a6b"

static const struct {
	const char *cgroup;
	const char *id;		/* NULL: none */
	const char *pod;	/* NULL: none */
	const char *runtime;
} cgroups[] = {
	{ "/system.slice/docker-" ID64 ".scope", ID64, NULL, "docker" },
	{ "/docker/" ID64, ID64, NULL, "docker" },
	{ "/system.slice/containerd.service/kubepods-burstable-pod" UID_ ".slice:cri-containerd:" ID64,
	  NULL, NULL, NULL },	/* the OCI spec's "slice:prefix:id" notation is not a path */
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/"
	  "cri-containerd-" ID64 ".scope", ID64, UID, "containerd" },
	{ "/kubepods/burstable/pod" UID "/" ID64, ID64, UID, "kubernetes" },
	{ "/kubepods.slice/kubepods-pod" UID_ ".slice", NULL, UID, "kubernetes" },
	{ "/machine.slice/libpod-" ID64 ".scope/container", ID64, NULL, "podman" },
	{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice/crio-"
	  ID64 ".scope", ID64, UID, "cri-o" },
	/* the innermost container wins (a pod's sandbox above its container) */
	{ "/docker/" ID64B "/docker/" ID64, ID64, NULL, "docker" },
	/* not containers */
	{ "/", NULL, NULL, NULL },
	{ "/user.slice/user-1000.slice/session-2.scope", NULL, NULL, NULL },
	{ "/process_api/97f599ccab7db96251de3a64f59ae33c", NULL, NULL, NULL },	/* 32 digits */
	{ "/docker-" ID64 "0.scope", NULL, NULL, NULL },	/* 65 digits */
	{ "/docker-0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef.scope", NULL,
	  NULL, NULL },	/* upper case: not what runtimes write */
	{ "", NULL, NULL, NULL },
};

static void test_container_from_cgroup(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cgroups) / sizeof(cgroups[0]); i++) {
		struct container c;
		bool found = container_from_cgroup(cgroups[i].cgroup, &c);

		print_message("%s\n", cgroups[i].cgroup);
		assert_int_equal(found, cgroups[i].id || cgroups[i].pod);
		assert_string_equal(c.id, cgroups[i].id ? cgroups[i].id : "");
		assert_string_equal(c.pod_uid, cgroups[i].pod ? cgroups[i].pod : "");
		if (cgroups[i].runtime)
			assert_string_equal(c.runtime, cgroups[i].runtime);
	}
	assert_false(container_from_cgroup(NULL, &(struct container){ 0 }));
}

static void test_service_of(void **state)
{
	struct service a, b;

	(void)state;
	service_of(GROUP_CONTAINER, "/system.slice/docker-" ID64 ".scope", "/usr/bin/python3",
		   "python3", &a);
	assert_string_equal(a.name, "docker-0123456789ab");
	assert_string_equal(a.container_id, ID64);
	assert_string_equal(a.exe, "");
	/* the same container, another program: one service */
	service_of(GROUP_CONTAINER, "/system.slice/docker-" ID64 ".scope", "/bin/sh", "sh", &b);
	assert_true(service_equal(&a, &b));
	/* not in a container: by executable */
	service_of(GROUP_CONTAINER, "/user.slice", "/usr/bin/python3", "python3", &a);
	assert_string_equal(a.name, "python3");
	assert_string_equal(a.exe, "/usr/bin/python3");
	assert_string_equal(a.container_id, "");
	service_of(GROUP_EXE, "/system.slice/docker-" ID64 ".scope", "/usr/bin/python3", "py", &a);
	assert_string_equal(a.name, "python3");
	service_of(GROUP_COMM, "/", "/usr/bin/python3", "worker 1", &a);
	assert_string_equal(a.name, "worker_1");
	assert_string_equal(a.exe, "");
	/* a server's syntax and anything not printable stay out of names */
	service_of(GROUP_EXE, "/", "/opt/a{b},c=d\n", "x", &a);
	assert_string_equal(a.name, "a_b__c_d_");
	assert_string_equal(a.exe, "/opt/a_b__c_d_");
	/* no executable (a kernel thread): its name */
	service_of(GROUP_CONTAINER, "/", "", "kworker/0:1", &a);
	assert_string_equal(a.name, "kworker/0:1");
	service_of(GROUP_CONTAINER, NULL, NULL, NULL, &a);
	assert_string_equal(a.name, "unknown");
}

static void test_service_query(void **state)
{
	struct service sv;
	char q[1024], small[40];
	int n;

	(void)state;
	service_of(GROUP_CONTAINER, "/docker/" ID64, "/app/server", "server", &sv);
	n = service_query(&sv, "web-1", 1700000000, 1700000010, 19, q, sizeof(q));
	assert_int_equal(n, (int)strlen(q));
	assert_string_equal(q, "name=docker-0123456789ab%7Bhost%3Dweb-1%2Ccontainer_id%3D" ID64
			    "%7D&from=1700000000&until=1700000010&format=pprof&sampleRate=19"
			    "&spyName=sfprof");
	service_of(GROUP_EXE, "/", "/usr/bin/x", "x", &sv);
	service_query(&sv, "h", 1, 2, 99, q, sizeof(q));
	assert_string_equal(q, "name=x%7Bhost%3Dh%2Cexe%3D%2Fusr%2Fbin%2Fx%7D&from=1&until=2"
			    "&format=pprof&sampleRate=99&spyName=sfprof");
	assert_int_equal(service_query(&sv, "h", 1, 2, 99, small, sizeof(small)), -ENOSPC);
}

static void touch(const char *dir, uint64_t from, uint64_t until, size_t bytes)
{
	char path[512];
	FILE *f;

	window_name(path, sizeof(path), dir, from, until);
	f = fopen(path, "w");
	assert_non_null(f);
	for (size_t i = 0; i < bytes; i++)
		fputc('x', f);
	fclose(f);
}

static int count_windows(const char *dir, uint64_t *oldest)
{
	char path[512];
	int n = 0;

	*oldest = 0;
	for (uint64_t t = 1000; t < 1200; t += 10) {
		window_name(path, sizeof(path), dir, t, t + 10);
		if (!access(path, F_OK)) {
			if (!n)
				*oldest = t;
			n++;
		}
	}
	return n;
}

static void test_retention(void **state)
{
	static const struct {
		struct retention r;
		uint64_t now;
		int left;		/* of 10 windows of 100 bytes, 1000..1100 */
		uint64_t oldest;
	} cases[] = {
		{ { 0, 0, 0 }, 2000, 10, 1000 },
		{ { 4, 0, 0 }, 2000, 4, 1060 },
		{ { 0, 350, 0 }, 2000, 3, 1070 },
		{ { 0, 0, 35 }, 1100, 4, 1060 },	/* ended at 1070 or later */
		{ { 0, 0, 1 }, 5000, 1, 1090 },		/* the newest always stays */
		{ { 8, 500, 0 }, 2000, 5, 1050 },	/* the tighter bound wins */
	};
	char dir[] = "/tmp/test_agent_XXXXXX", path[600];
	uint64_t oldest;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (uint64_t t = 1000; t < 1100; t += 10)
			touch(dir, t, t + 10, 100);
		assert_int_equal(outdir_retain(dir, &cases[c].r, cases[c].now), 10 - cases[c].left);
		assert_int_equal(count_windows(dir, &oldest), cases[c].left);
		assert_int_equal(oldest, cases[c].oldest);
		outdir_retain(dir, &(struct retention){ 1, 0, 0 }, 0);
		window_name(path, sizeof(path), dir, 1090, 1100);
		unlink(path);
	}
	/* unfinished windows are not windows, and go at start */
	window_tmp_name(path, sizeof(path), dir, 1000);
	fclose(fopen(path, "w"));
	assert_int_equal(outdir_retain(dir, &(struct retention){ 1, 0, 0 }, 0), 0);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(outdir_clean_tmp(dir), 1);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(outdir_retain(dir, &(struct retention){ 1, 0, 0 }, 0), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_container_from_cgroup),
		cmocka_unit_test(test_service_of),
		cmocka_unit_test(test_service_query),
		cmocka_unit_test(test_retention),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
