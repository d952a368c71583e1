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
	service_of(GROUP_CONTAINER, "/system.slice/docker-" ID64 ".scope", "/usr/bin/python3", NULL,
		   "python3", &a);
	assert_string_equal(a.name, "docker-0123456789ab");
	assert_string_equal(a.container_id, ID64);
	assert_string_equal(a.exe, "");
	/* the same container, another program: one service */
	service_of(GROUP_CONTAINER, "/system.slice/docker-" ID64 ".scope", "/bin/sh", NULL, "sh", &b);
	assert_true(service_equal(&a, &b));
	/* not in a container: by executable */
	service_of(GROUP_CONTAINER, "/user.slice", "/usr/bin/python3", NULL, "python3", &a);
	assert_string_equal(a.name, "python3");
	assert_string_equal(a.exe, "/usr/bin/python3");
	assert_string_equal(a.container_id, "");
	service_of(GROUP_EXE, "/system.slice/docker-" ID64 ".scope", "/usr/bin/python3", NULL, "py", &a);
	assert_string_equal(a.name, "python3");
	service_of(GROUP_COMM, "/", "/usr/bin/python3", NULL, "worker 1", &a);
	assert_string_equal(a.name, "worker_1");
	assert_string_equal(a.exe, "");
	/* a server's syntax and anything not printable stay out of names */
	service_of(GROUP_EXE, "/", "/opt/a{b},c=d\n", NULL, "x", &a);
	assert_string_equal(a.name, "a_b__c_d_");
	assert_string_equal(a.exe, "/opt/a_b__c_d_");
	/* no executable (a kernel thread): its name */
	service_of(GROUP_CONTAINER, "/", "", NULL, "kworker/0:1", &a);
	assert_string_equal(a.name, "kworker/0:1");
	service_of(GROUP_CONTAINER, NULL, NULL, NULL, NULL, &a);
	assert_string_equal(a.name, "unknown");
}

/* A Python program by executable: named by its script or module, beside exe=; by comm or container, not. */
static void test_service_of_python(void **state)
{
	struct service a, b;
	char q[2048];

	(void)state;
	service_of(GROUP_EXE, "/", "/usr/bin/python3.11", "/srv/app/app.py", "python3", &a);
	assert_string_equal(a.name, "app.py");
	assert_string_equal(a.script, "/srv/app/app.py");
	assert_string_equal(a.module, "");
	assert_string_equal(a.exe, "/usr/bin/python3.11");
	/* another script under the same interpreter: another series */
	service_of(GROUP_EXE, "/", "/usr/bin/python3.11", "/usr/local/bin/tool", "tool", &b);
	assert_string_equal(b.name, "tool");
	assert_false(service_equal(&a, &b));
	/* the same name in another directory: the script= label keeps them apart */
	service_of(GROUP_EXE, "/", "/usr/bin/python3.11", "/srv/other/app.py", "python3", &b);
	assert_string_equal(b.name, "app.py");
	assert_false(service_equal(&a, &b));
	service_of(GROUP_CONTAINER, "/user.slice", "/usr/bin/python3.11", "-m gunicorn", "gunicorn",
		   &a);
	assert_string_equal(a.name, "gunicorn");
	assert_string_equal(a.module, "gunicorn");
	assert_string_equal(a.script, "");
	service_of(GROUP_EXE, "/", "/usr/bin/python3.11", "-m myapp.server", "python3", &a);
	assert_string_equal(a.name, "myapp.server");
	service_query(&a, "h", 1, 2, 99, q, sizeof(q));
	assert_string_equal(q, "name=myapp.server%7Bhost%3Dh%2Cexe%3D%2Fusr%2Fbin%2Fpython3.11"
			    "%2Cmodule%3Dmyapp.server%7D&from=1&until=2&format=pprof&sampleRate=99"
			    "&spyName=sfprof");
	service_of(GROUP_EXE, "/", "/usr/bin/python3.11", "app.py", "python3", &a);
	assert_string_equal(a.name, "app.py");
	service_query(&a, "h", 1, 2, 99, q, sizeof(q));
	assert_string_equal(q, "name=app.py%7Bhost%3Dh%2Cexe%3D%2Fusr%2Fbin%2Fpython3.11"
			    "%2Cscript%3Dapp.py%7D&from=1&until=2&format=pprof&sampleRate=99"
			    "&spyName=sfprof");
	/* the server's syntax stays out of the name and labels */
	service_of(GROUP_EXE, "/", "/usr/bin/python3", "/srv/a{b}=c,d.py", "python3", &a);
	assert_string_equal(a.name, "a_b__c_d.py");
	assert_string_equal(a.script, "/srv/a_b__c_d.py");
	/* by comm: unchanged */
	service_of(GROUP_COMM, "/", "/usr/bin/python3.11", "/srv/app/app.py", "worker", &a);
	assert_string_equal(a.name, "worker");
	assert_string_equal(a.script, "");
	/* in a container: the container */
	service_of(GROUP_CONTAINER, "/docker/" ID64, "/usr/bin/python3.11", "app.py", "python3", &a);
	assert_string_equal(a.name, "docker-0123456789ab");
	assert_string_equal(a.script, "");
	/* no script: the interpreter, as before */
	service_of(GROUP_EXE, "/", "/usr/bin/python3.11", "", "python3", &a);
	assert_string_equal(a.name, "python3.11");
	assert_string_equal(a.script, "");
	assert_string_equal(a.module, "");
	/* every label at its longest: the query still fits its buffer in push.c */
	{
		char exe[300], script[300], host[200], big[4096];

		memset(exe, '/', sizeof(exe) - 1);
		exe[sizeof(exe) - 1] = '\0';
		memset(script, '/', sizeof(script) - 1);
		script[sizeof(script) - 1] = '\0';
		memset(host, '%', sizeof(host) - 1);
		host[sizeof(host) - 1] = '\0';
		service_of(GROUP_EXE, "/", exe, script, "x", &a);
		assert_true(service_query(&a, host, UINT64_MAX, UINT64_MAX, UINT32_MAX, big,
					  sizeof(big)) > 0);
	}
}

static void test_service_query(void **state)
{
	struct service sv;
	char q[1024], small[40];
	int n;

	(void)state;
	service_of(GROUP_CONTAINER, "/docker/" ID64, "/app/server", NULL, "server", &sv);
	n = service_query(&sv, "web-1", 1700000000, 1700000010, 19, q, sizeof(q));
	assert_int_equal(n, (int)strlen(q));
	assert_string_equal(q, "name=docker-0123456789ab%7Bhost%3Dweb-1%2Ccontainer_id%3D" ID64
			    "%7D&from=1700000000&until=1700000010&format=pprof&sampleRate=19"
			    "&spyName=sfprof");
	service_of(GROUP_EXE, "/", "/usr/bin/x", NULL, "x", &sv);
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
		cmocka_unit_test(test_service_of_python),
		cmocka_unit_test(test_service_query),
		cmocka_unit_test(test_retention),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
