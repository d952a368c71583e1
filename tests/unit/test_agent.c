/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof agent's pure parts: container IDs from cgroup paths, services and their query strings, retention, OTLP answers and resources. */
#include <inttypes.h>
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

#include "agent/connect.h"
#include "agent/otel.h"
#include "agent/otlp_response.h"
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

/* --- OpenTelemetry's settings (otel.c) --- */

/* The list as "k=v|k=v" (in order). */
static void list_str(const struct otel_list *l, char *buf, size_t cap)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < l->n; i++)
		n += snprintf(buf + n, n < cap ? cap - n : 0, "%s%s=%s", i ? "|" : "", l->kv[i].key,
			      l->kv[i].value);
}

static void test_otel_parse_list(void **state)
{
	static const struct {
		const char *in;
		bool headers;
		int ret;
		const char *want;	/* the list, or a part of the error */
	} cases[] = {
		{ "k1=v1,k2=v2", true, 0, "k1=v1|k2=v2" },
		{ " api-key = secret%20value , x=%2C%3D%25 ", true, 0, "api-key=secret value|x=,=%" },
		{ "a=1,,b=2,", false, 0, "a=1|b=2" },
		{ "a=1+2", false, 0, "a=1+2" },			/* '+' is no space (RFC 3986) */
		{ "Auth=one,auth=two", true, 0, "Auth=two" },	/* header names without case */
		{ "Auth=one,auth=two", false, 0, "Auth=one|auth=two" },
		{ "service.name=svc,k8s.pod.name=p%C3%A9", false, 0, "service.name=svc|k8s.pod.name=p\xc3\xa9" },
		{ "k=", false, 0, "k=" },
		{ "k=a=b", false, 0, "k=a=b" },
		{ "noequals", true, -EINVAL, "member 1 is not KEY=VALUE" },
		{ "a=1,secret", true, -EINVAL, "member 2 is not KEY=VALUE" },
		{ "=v", false, -EINVAL, "member 1 has no key" },
		{ "a b=v", false, -EINVAL, "member 1: a key is" },
		{ "k=%zz", false, -EINVAL, "the value of k" },
		{ "k=%4", false, -EINVAL, "the value of k" },
		{ "k=%00", false, -EINVAL, "decodes to NUL" },
		{ "k=a%0d%0aX-Evil: 1", true, -EINVAL, "control character" },
		{ "k=a%0d%0ab", false, 0, "k=a\r\nb" },		/* an attribute may */
		{ "k=a%09b", true, 0, "k=a\tb" },
	};
	char buf[256], err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct otel_list l = { 0 };
		int ret;

		err[0] = '\0';
		ret = otel_parse_list(&l, cases[i].in, cases[i].headers, "VAR", err, sizeof(err));
		if (ret != cases[i].ret)
			fail_msg("\"%s\": %d (%s), not %d", cases[i].in, ret, err, cases[i].ret);
		if (!ret) {
			list_str(&l, buf, sizeof(buf));
			if (strcmp(buf, cases[i].want))
				fail_msg("\"%s\": \"%s\", not \"%s\"", cases[i].in, buf, cases[i].want);
		} else if (!strstr(err, cases[i].want) || strncmp(err, "VAR: ", 5)) {
			fail_msg("\"%s\": said \"%s\"", cases[i].in, err);
		}
		/* a secret in a value is never said */
		assert_null(strstr(err, "secret"));
		for (size_t k = 0; k < l.n; k++) {
			free(l.kv[k].key);
			free(l.kv[k].value);
		}
		free(l.kv);
	}
}

static const char *table_getenv(void *ctx, const char *name)
{
	const char *const (*vars)[2] = ctx;

	for (size_t i = 0; vars[i][0]; i++)
		if (!strcmp(vars[i][0], name))
			return vars[i][1];
	return NULL;
}

static void test_otel_export_read(void **state)
{
	static const char *const none[][2] = { { NULL, NULL } };
	static const char *const base[][2] = {
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "x-common=1,x-both=common" },
		{ "OTEL_EXPORTER_OTLP_PROFILES_HEADERS", "X-Both=profiles" },
		{ "OTEL_EXPORTER_OTLP_COMPRESSION", "gzip" },
		{ "OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs,deployment.environment=prod" },
		{ "OTEL_SERVICE_NAME", "from-env" },
		{ NULL, NULL } };
	static const char *const prof[][2] = {
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318" },
		{ "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "https://p.example/custom/path" },
		{ "OTEL_EXPORTER_OTLP_COMPRESSION", "gzip" },
		{ "OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION", "none" },
		{ "OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs" },
		{ NULL, NULL } };
	/* empty is unset: the base endpoint is used */
	static const char *const empty[][2] = {
		{ "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "" },
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/otlp" },
		{ "OTEL_EXPORTER_OTLP_COMPRESSION", "" },
		{ NULL, NULL } };
	static const char *const badcomp[][2] = {
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318" },
		{ "OTEL_EXPORTER_OTLP_COMPRESSION", "zstd" },
		{ NULL, NULL } };
	static const char *const badurl[][2] = {
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318" }, { NULL, NULL } };
	static const char *const badhdr[][2] = {
		{ "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318" },
		{ "OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Basic abc,broken" },
		{ NULL, NULL } };
	/* no endpoint: nothing else is read, a bad variable meant for others is no error */
	static const char *const other[][2] = {
		{ "OTEL_RESOURCE_ATTRIBUTES", "broken" }, { "OTEL_EXPORTER_OTLP_COMPRESSION", "x" },
		{ NULL, NULL } };
	static const struct {
		const char *const (*env)[2];
		const char *option;
		int ret;
		const char *endpoint;	/* or a part of the error */
		enum otel_endpoint_from from;
		bool gzip;
		const char *headers, *resource;
	} cases[] = {
		{ none, NULL, 0, NULL, OTEL_FROM_NONE, false, "", "" },
		{ other, NULL, 0, NULL, OTEL_FROM_NONE, false, "", "" },
		{ base, NULL, 0, "http://collector:4318/v1development/profiles", OTEL_FROM_ENV, true,
		  "x-common=1|x-both=profiles", "service.name=from-env|deployment.environment=prod" },
		{ prof, NULL, 0, "https://p.example/custom/path", OTEL_FROM_PROFILES_ENV, false, "",
		  "service.name=from-attrs" },
		{ empty, NULL, 0, "http://c:4318/otlp/v1development/profiles", OTEL_FROM_ENV, false, "", "" },
		/* the option wins; a server alone gets the path, a path is used as given */
		{ prof, "http://127.0.0.1:4318", 0, "http://127.0.0.1:4318/v1development/profiles",
		  OTEL_FROM_OPTION, false, "", "service.name=from-attrs" },
		{ none, "http://h:1/", 0, "http://h:1/v1development/profiles", OTEL_FROM_OPTION, false, "", "" },
		{ none, "http://h:1/x/v1development/profiles", 0, "http://h:1/x/v1development/profiles",
		  OTEL_FROM_OPTION, false, "", "" },
		{ none, "ftp://h", -EINVAL, "--otlp-endpoint: not an http", 0, false, NULL, NULL },
		{ none, "http://", -EINVAL, "--otlp-endpoint: no host", 0, false, NULL, NULL },
		{ none, "http://h/a b", -EINVAL, "--otlp-endpoint: a space", 0, false, NULL, NULL },
		{ badcomp, NULL, -EINVAL, "OTEL_EXPORTER_OTLP_COMPRESSION: gzip or none", 0, false, NULL, NULL },
		{ badurl, NULL, -EINVAL, "OTEL_EXPORTER_OTLP_ENDPOINT: not an http", 0, false, NULL, NULL },
		{ badhdr, NULL, -EINVAL, "OTEL_EXPORTER_OTLP_HEADERS: member 2", 0, false, NULL, NULL },
	};
	char buf[512], err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct otel_export e;
		int ret;

		err[0] = '\0';
		ret = otel_export_read(&e, cases[i].option, table_getenv, (void *)cases[i].env, err,
				       sizeof(err));
		if (ret != cases[i].ret)
			fail_msg("case %zu: %d (%s), not %d", i, ret, err, cases[i].ret);
		if (ret) {
			if (!strstr(err, cases[i].endpoint))
				fail_msg("case %zu: said \"%s\"", i, err);
			assert_null(strstr(err, "abc"));
			otel_export_free(&e);
			continue;
		}
		assert_int_equal(e.from, cases[i].from);
		if (cases[i].endpoint)
			assert_string_equal(e.endpoint, cases[i].endpoint);
		else
			assert_null(e.endpoint);
		assert_int_equal(e.gzip, cases[i].gzip);
		list_str(&e.headers, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].headers);
		list_str(&e.resource, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].resource);
		otel_export_free(&e);
		otel_export_free(&e);	/* twice: freed state is empty */
	}
	otel_export_free(NULL);
}

/* --- Pyroscope's connect push (connect.c) --- */

static void test_connect_request(void **state)
{
	static const uint8_t want[] = {
		0x0a, 0x0e,				/* series, 14 bytes */
		0x0a, 0x06, 0x0a, 0x01, 'a', 0x12, 0x01, 'b',	/* labels { name "a", value "b" } */
		0x12, 0x04, 0x0a, 0x02, 'x', 'y',	/* samples { raw_profile "xy" } */
	};
	struct connect_request r = { 0 };
	const struct connect_label one = { "a", "b" };
	uint8_t *big = calloc(1, 300);

	(void)state;
	assert_int_equal(connect_request__add(&r, &one, 1, "xy", 2), 0);
	assert_int_equal(r.len, sizeof(want));
	assert_memory_equal(r.buf, want, sizeof(want));
	/* a second series follows; lengths past 127 take two varint bytes */
	assert_non_null(big);
	assert_int_equal(connect_request__add(&r, &one, 1, big, 300), 0);
	assert_int_equal(r.nseries, 2);
	/* 0a LEN(2) [0a 06 ...(8)] [12 LEN(2) [0a LEN(2) 300]] */
	assert_int_equal(r.len, sizeof(want) + 1 + 2 + 8 + 1 + 2 + 1 + 2 + 300);
	assert_int_equal(r.buf[sizeof(want)], 0x0a);
	assert_int_equal(r.buf[sizeof(want) + 1], (8 + 1 + 2 + 1 + 2 + 300) % 128 | 0x80);
	assert_int_equal(r.buf[sizeof(want) + 2], (8 + 1 + 2 + 1 + 2 + 300) / 128);
	connect_request__release(&r);
	assert_null(r.buf);
	assert_int_equal(r.len, 0);
	free(big);
}

static void test_connect_labels_url(void **state)
{
	struct service sv;
	struct connect_label l[CONNECT_MAX_LABELS];
	char host[128], *url;
	size_t n;

	(void)state;
	service_of(GROUP_CONTAINER, "/system.slice/docker-" ID64 ".scope", "/usr/bin/app", NULL,
		   "app", &sv);
	n = connect_labels(&sv, "my host{1}", host, l);
	assert_int_equal(n, 5);
	assert_string_equal(l[0].name, "__name__");
	assert_string_equal(l[0].value, "process_cpu");
	assert_string_equal(l[1].name, "service_name");
	assert_string_equal(l[1].value, "docker-0123456789ab");
	assert_string_equal(l[2].name, "host");
	assert_string_equal(l[2].value, "my_host_1_");	/* as the /ingest query has it */
	assert_string_equal(l[3].name, "container_id");
	assert_string_equal(l[3].value, ID64);
	assert_string_equal(l[4].name, "pyroscope_spy");
	service_of(GROUP_EXE, NULL, "/usr/bin/python3.11", "/srv/app.py", "python3", &sv);
	n = connect_labels(&sv, "h", host, l);
	assert_int_equal(n, 6);
	assert_string_equal(l[3].name, "exe");
	assert_string_equal(l[4].name, "script");
	assert_string_equal(l[4].value, "/srv/app.py");
	for (size_t i = 0; i < n; i++)	/* Prometheus label names */
		for (const char *c = l[i].name; *c; c++)
			assert_true((*c >= 'a' && *c <= 'z') || *c == '_');
	url = connect_url("http://h:4040");
	assert_string_equal(url, "http://h:4040/push.v1.PusherService/Push");
	free(url);
	url = connect_url("https://h/prefix//");
	assert_string_equal(url, "https://h/prefix/push.v1.PusherService/Push");
	free(url);
	url = connect_url("http://h/push.v1.PusherService/Push");
	assert_string_equal(url, "http://h/push.v1.PusherService/Push");
	free(url);
}

static void test_connect_error_message(void **state)
{
	static const struct {
		const char *body;
		int ret;
		const char *want;
	} cases[] = {
		{ "{\"code\":\"unavailable\",\"message\":\"ingester down\"}", 0, "unavailable: ingester down" },
		{ " {\"details\":[{\"type\":\"x\",\"value\":\"}]\"}],\"message\":\"a\\\"b\\u0041\\n\","
		  "\"n\":-1.5e3,\"t\":true,\"code\":\"internal\"} ", 0, "internal: a\"bA " },
		{ "{\"message\":\"only\"}", 0, "only" },
		{ "{\"code\":\"invalid_argument\"}", 0, "invalid_argument" },
		{ "{\"code\":\"a\\u0001\\u00e9\"}", 0, "a ?" },
		{ "{}", -ENOENT, "" },
		{ "{\"other\":1}", -ENOENT, "" },
		{ "", -EBADMSG, "" },
		{ "not json", -EBADMSG, "" },
		{ "{\"code\":\"x\"", -EBADMSG, "" },
		{ "{\"code\":\"x", -EBADMSG, "" },
		{ "{\"code\":\"\\q\"}", -EBADMSG, "" },
		{ "{\"code\":\"\\u12\"}", -EBADMSG, "" },
		{ "{\"details\":[[[}", -EBADMSG, "" },
	};
	char out[64];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ret = connect_error_message(cases[i].body, strlen(cases[i].body), out, sizeof(out));

		if (ret != cases[i].ret || strcmp(out, cases[i].want))
			fail_msg("%s: %d \"%s\", not %d \"%s\"", cases[i].body, ret, out, cases[i].ret,
				 cases[i].want);
	}
	/* cut to the room given */
	assert_int_equal(connect_error_message("{\"message\":\"0123456789\"}", 24, out, 5), 0);
	assert_string_equal(out, "0123");
}

/* An ExportProfilesServiceResponse's bytes (M() makes a string literal's length explicit). */
#define M(s) { (const uint8_t *)(s), sizeof(s) - 1 }

static void test_otlp_response(void **state)
{
	static const struct {
		struct { const uint8_t *p; size_t n; } in;
		int ret;
		int64_t rejected;
		const char *message;
	} cases[] = {
		{ M(""), 0, 0, "" },					/* a full success */
		{ M("\x0a\x00"), 0, 0, "" },				/* an empty partial_success */
		{ M("\x0a\x06\x08\x03\x12\x02" "ab"), 0, 3, "ab" },
		/* unknown fields of every wire type skipped, before and inside */
		{ M("\x10\x05" "\x19" "12345678" "\x25" "1234" "\x3a\x01x"
		    "\x0a\x09\x18\x01\x08\x02\x12\x03" "a\nb"), 0, 2, "a b" },
		/* given twice: merged, the later value wins */
		{ M("\x0a\x02\x08\x01" "\x0a\x02\x08\x07"), 0, 7, "" },
		/* a negative count (int64 as a 10-byte varint) */
		{ M("\x0a\x0b\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"), 0, -1, "" },
		/* lengths past the end, inside and outside */
		{ M("\x0a\x05\x08\x01"), -EBADMSG, 0, "" },
		{ M("\x0a\x04\x08\x01\x12\x09" "ab"), -EBADMSG, 0, "" },
		{ M("\x0a\x02\x08"), -EBADMSG, 0, "" },		/* a varint cut */
		{ M("\x0a\x02\x08\x80"), -EBADMSG, 0, "" },
		{ M("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"), -EBADMSG, 0, "" },
		{ M("\x19" "1234"), -EBADMSG, 0, "" },		/* a fixed64 cut */
		{ M("\x0b"), -EBADMSG, 0, "" },			/* a group */
		{ M("\x00\x00"), -EBADMSG, 0, "" },			/* field 0 */
		{ M("<html>"), -EBADMSG, 0, "" },
		/* a length over 2^63 */
		{ M("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"), -EBADMSG, 0, "" },
	};
	struct otlp_partial ps;
	char big[1200];
	uint8_t body[1300];
	char msg[64];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ret = otlp_response_read(cases[i].in.p, cases[i].in.n, &ps);

		if (ret != cases[i].ret || ps.rejected != cases[i].rejected ||
		    strcmp(ps.message, cases[i].message))
			fail_msg("case %zu: %d, %" PRId64 ", \"%s\"", i, ret, ps.rejected, ps.message);
	}
	/* a message longer than the room: cut, NUL-terminated */
	memset(big, 'm', sizeof(big));
	body[0] = 0x0a;
	body[1] = 0x80 | ((sizeof(big) + 3) & 0x7f);
	body[2] = (sizeof(big) + 3) >> 7;
	body[3] = 0x12;
	body[4] = 0x80 | (sizeof(big) & 0x7f);
	body[5] = sizeof(big) >> 7;
	memcpy(body + 6, big, sizeof(big));
	assert_int_equal(otlp_response_read(body, 6 + sizeof(big), &ps), 0);
	assert_int_equal(strlen(ps.message), sizeof(ps.message) - 1);
	/* and one byte short of it: refused */
	assert_int_equal(otlp_response_read(body, 5 + sizeof(big), &ps), -EBADMSG);
	assert_int_equal(otlp_response_read(NULL, 0, &ps), 0);

	/* google.rpc.Status: its message */
	assert_int_equal(otlp_status_message("\x08\x0e\x12\x04" "down", 8, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "down");
	assert_int_equal(otlp_status_message("\x08\x0e", 2, msg, sizeof(msg)), -ENOENT);
	assert_int_equal(otlp_status_message("", 0, msg, sizeof(msg)), -ENOENT);
	assert_int_equal(otlp_status_message("\x08\x0e\x12\x09" "down", 8, msg, sizeof(msg)),
			 -EBADMSG);
	assert_string_equal(msg, "");
	assert_int_equal(otlp_status_message("\x12\x06" "abcdef", 8, msg, 4), 0);
	assert_string_equal(msg, "abc");
}

static void attrs_equal(const struct otlp_attr *got, size_t n, const char *const *want)
{
	size_t i = 0;

	for (; want[i]; i += 2) {
		if (i / 2 >= n)
			fail_msg("attribute %s missing", want[i]);
		if (strcmp(got[i / 2].key, want[i]) || !got[i / 2].str ||
		    strcmp(got[i / 2].str, want[i + 1]))
			fail_msg("attribute %zu: %s=%s, want %s=%s", i / 2, got[i / 2].key,
				 got[i / 2].str ? got[i / 2].str : "(int)", want[i], want[i + 1]);
	}
	if (n != i / 2)
		fail_msg("%zu attributes, want %zu", n, i / 2);
}

static void test_otel_resource_attrs(void **state)
{
	struct otel_list res = { 0 };
	struct otlp_attr out[OTEL_SERVICE_ATTRS + 8];
	struct service sv;
	char err[128];
	size_t n;

	(void)state;
	/* the agent's own service.name (OTEL_SERVICE_NAME) and a host.name given: ours win */
	assert_int_equal(otel_parse_list(&res, "deployment.environment=test,service.name=agent,"
					 "host.name=other,team=a%20b", false, "R", err, sizeof(err)), 0);
	service_of(GROUP_EXE, "/user.slice", "/usr/bin/app", NULL, "app", &sv);
	n = otel_resource_attrs(&sv, "host1", &res, out);
	attrs_equal(out, n, (const char *const[]){
		"service.name", "app", "host.name", "host1",
		"process.executable.name", "app", "process.executable.path", "/usr/bin/app",
		"deployment.environment", "test", "team", "a b", NULL });
	/* a container in a pod: its ID and the pod's UID, no executable */
	service_of(GROUP_CONTAINER, "/kubepods/burstable/pod" UID "/" ID64, "/usr/bin/app", NULL,
		   "app", &sv);
	n = otel_resource_attrs(&sv, "", NULL, out);
	attrs_equal(out, n, (const char *const[]){
		"service.name", "kubernetes-0123456789ab", "container.id", ID64, "k8s.pod.uid", UID,
		NULL });
	/* by command name: the name alone */
	service_of(GROUP_COMM, NULL, "/usr/bin/app", NULL, "worker", &sv);
	n = otel_resource_attrs(&sv, NULL, &res, out);
	attrs_equal(out, n, (const char *const[]){
		"service.name", "worker", "deployment.environment", "test", "host.name", "other",
		"team", "a b", NULL });
	for (size_t i = 0; i < res.n; i++) {
		free(res.kv[i].key);
		free(res.kv[i].value);
	}
	free(res.kv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_container_from_cgroup),
		cmocka_unit_test(test_service_of),
		cmocka_unit_test(test_service_of_python),
		cmocka_unit_test(test_service_query),
		cmocka_unit_test(test_retention),
		cmocka_unit_test(test_otel_parse_list),
		cmocka_unit_test(test_otel_export_read),
		cmocka_unit_test(test_connect_request),
		cmocka_unit_test(test_connect_labels_url),
		cmocka_unit_test(test_connect_error_message),
		cmocka_unit_test(test_otlp_response),
		cmocka_unit_test(test_otel_resource_attrs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
