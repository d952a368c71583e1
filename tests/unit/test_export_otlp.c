/* SPDX-License-Identifier: BSD-2-Clause */
/* export_otlp_opts(): resources per process or the caller's, samples left out, addresses unsymbolized. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profile/profile.h"
#include "report/export.h"
#include "report/session.h"
#include "sfunwind/cbf.h"
#include "testutil.h"

#define MAP_START 0x10000000ull
#define PERIOD (1000000000u / 999)

/* ---- a protobuf reader just big enough for the checks ---- */

struct span {
	const uint8_t *p;
	size_t n;
};

static uint64_t varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;

	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	fail_msg("a varint past its message");
	return 0;
}

/* The fields numbered @num of message @m: LEN ones as spans; varints' values in @vals. */
static size_t fields(struct span m, unsigned num, struct span *out, uint64_t *vals, size_t cap)
{
	const uint8_t *p = m.p, *end = m.p + m.n;
	size_t n = 0;

	while (p < end) {
		uint64_t key = varint(&p, end), v = 0;
		struct span s = { NULL, 0 };

		switch (key & 7) {
		case 0:
			v = varint(&p, end);
			break;
		case 1:
			assert_true(end - p >= 8);
			p += 8;
			break;
		case 2:
			v = varint(&p, end);
			assert_true(v <= (uint64_t)(end - p));
			s = (struct span){ p, v };
			p += v;
			break;
		default:
			fail_msg("wire type %u", (unsigned)(key & 7));
		}
		if (key >> 3 != num)
			continue;
		assert_true(n < cap);
		if (out)
			out[n] = s;
		if (vals)
			vals[n] = v;
		n++;
	}
	return n;
}

static struct span field(struct span m, unsigned num)
{
	struct span s[1] = { { NULL, 0 } };

	assert_int_equal(fields(m, num, s, NULL, 1), 1);
	return s[0];
}

/* The values of a packed repeated varint field. */
static size_t packed(struct span m, unsigned num, uint64_t *vals, size_t cap)
{
	struct span s[4];
	size_t nf = fields(m, num, s, NULL, 4), n = 0;

	for (size_t i = 0; i < nf; i++)
		for (const uint8_t *p = s[i].p; p < s[i].p + s[i].n;) {
			assert_true(n < cap);
			vals[n++] = varint(&p, s[i].p + s[i].n);
		}
	return n;
}

static bool span_is(struct span s, const char *str)
{
	return s.n == strlen(str) && !memcmp(s.p, str, s.n);
}

/* The integer value of resource attribute @key, or -1 when none. */
static int64_t resource_int(struct span rp, const char *key)
{
	struct span kv[16];
	size_t n = fields(field(rp, 1), 1, kv, NULL, 16);

	for (size_t i = 0; i < n; i++) {
		uint64_t v[1];

		if (span_is(field(kv[i], 1), key) && fields(field(kv[i], 2), 3, NULL, v, 1))
			return (int64_t)v[0];
	}
	return -1;
}

static bool resource_has(struct span rp, const char *key, const char *val)
{
	struct span kv[16];
	size_t n = fields(field(rp, 1), 1, kv, NULL, 16);

	for (size_t i = 0; i < n; i++)
		if (span_is(field(kv[i], 1), key) && span_is(field(field(kv[i], 2), 1), val))
			return true;
	return false;
}

/* ---- the profile: two processes running the same library ---- */

static void sample(struct profile_writer *w, uint32_t pid, uint64_t time, uint64_t pc, uint64_t ra)
{
	uint8_t cbf[SFU_CBF_BOUND(2)];
	uint64_t addrs[2] = { pc, ra };
	struct sfu_cbf_enc enc;
	struct profile_sample s = { .pid = pid, .tid = pid + 1, .weight = 1, .time_ns = time };

	assert_int_equal(sfu_cbf_enc__init(&enc, 64, cbf, sizeof(cbf)), 0);
	assert_int_equal(sfu_cbf_encode_stack(&enc, addrs, 2, 0, false), 0);
	s.ustack = cbf;
	s.ustack_len = sfu_cbf_enc__len(&enc);
	assert_int_equal(profile_writer__sample(w, &s), 0);
}

static struct session *two_processes(const char *dir)
{
	static const uint8_t build_id[20] = { 0xab, 0xcd, 0xef };
	struct profile_meta meta = { .freq_hz = 999, .host = "otlp-host" };
	struct profile_module mod = { .build_id = build_id, .build_id_len = sizeof(build_id),
				      .path = "/nonexistent/sfprof-test/libo.so" };
	struct session_opts opts = { .sym = { .no_debuginfod = true, .no_lines = true } };
	struct profile_diag diag;
	struct profile_writer *w;
	struct session *s;
	char path[4096];
	uint32_t mod_id;

	snprintf(path, sizeof(path), "%s/otlp.data", dir);
	w = profile_writer__create(path, &meta, &diag);
	if (!w)
		fail_msg("%s", diag.reason);
	assert_int_equal(profile_writer__module(w, &mod, &mod_id), 0);
	for (uint32_t pid = 100; pid <= 200; pid += 100) {
		struct profile_process proc = {
			.pid = pid, .ppid = 1, .comm = pid == 100 ? "a" : "b",
			.exe = pid == 100 ? "/nonexistent/sfprof-test/a" : "/nonexistent/sfprof-test/b",
			.cgroup = pid == 200 ? "/system.slice/docker-0123456789abcdef0123456789abcdef"
					       "0123456789abcdef0123456789abcdef.scope" : "",
		};
		struct profile_mapping m = { pid, MAP_START, MAP_START + 0x10000, 0, 5, mod_id };

		assert_int_equal(profile_writer__process(w, &proc), 0);
		assert_int_equal(profile_writer__mapping(w, &m), 0);
	}
	for (int i = 0; i < 3; i++)
		sample(w, 100, 1000 + i, MAP_START + 0x100, MAP_START + 0x200);
	for (int i = 0; i < 2; i++)
		sample(w, 200, 2000 + i, MAP_START + 0x300, MAP_START + 0x200);
	if (profile_writer__close(w, false, &diag))
		fail_msg("%s", diag.reason);
	s = session__open(path, &opts, &diag);
	if (!s)
		fail_msg("%s", diag.reason);
	return s;
}

static struct span export(const struct session *s, const struct otlp_opts *o, char **buf)
{
	size_t len = 0;
	FILE *f = open_memstream(buf, &len);

	assert_non_null(f);
	assert_int_equal(o ? export_otlp_opts(s, f, o) : export_otlp(s, f), 0);
	assert_int_equal(fclose(f), 0);
	return (struct span){ (const uint8_t *)*buf, len };
}

/* The sum of the values of the samples of ResourceProfiles @rp, and their attribute counts. */
static uint64_t profile_total(struct span rp, size_t *nattrs)
{
	struct span prof = field(field(rp, 2), 2), samples[16];
	size_t n = fields(prof, 2, samples, NULL, 16);
	uint64_t total = 0, vals[16];

	*nattrs = 0;
	for (size_t i = 0; i < n; i++) {
		size_t nv = packed(samples[i], 4, vals, 16);

		for (size_t j = 0; j < nv; j++)
			total += vals[j];
		*nattrs += packed(samples[i], 2, vals, 16);
	}
	return total;
}

static void test_per_process(void **state)
{
	struct session *s = two_processes(*state);
	struct span rp[4];
	size_t nattrs;
	char *buf = NULL;
	struct span req = export(s, NULL, &buf);

	/* one resource per process, each with its own samples */
	assert_int_equal(fields(req, 1, rp, NULL, 4), 2);
	assert_int_equal(resource_int(rp[0], "process.pid"), 100);
	assert_int_equal(resource_int(rp[1], "process.pid"), 200);
	assert_true(resource_has(rp[0], "process.executable.name", "a"));
	assert_true(resource_has(rp[1], "process.executable.path", "/nonexistent/sfprof-test/b"));
	assert_true(resource_has(rp[0], "host.name", "otlp-host"));
	assert_true(resource_has(rp[1], "container.id",
				 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
	assert_false(resource_has(rp[0], "container.id", ""));
	assert_true(profile_total(rp[0], &nattrs) == 3ull * PERIOD);
	/* thread.id and thread.name */
	assert_int_equal(nattrs, 2);
	assert_true(profile_total(rp[1], &nattrs) == 2ull * PERIOD);
	free(buf);
	session__free(s);
}

static int resource_by_pid(void *ctx, const struct session *s, size_t i)
{
	(void)ctx;
	return session__sample(s, i)->pid == 100 ? 1 : -1;
}

static void test_caller_resources(void **state)
{
	static const struct otlp_attr x[] = { { "service.name", "svc-x", 0 } };
	static const struct otlp_attr y[] = { { "service.name", "svc-y", 0 }, { "n", NULL, -7 } };
	static const struct otlp_resource resources[] = { { x, 1 }, { y, 2 } };
	const struct otlp_opts o = {
		.no_symbolize = true, .no_thread_label = true, .resources = resources,
		.nresources = 2, .resource_of = resource_by_pid, .time_ns = 5, .duration_ns = 7,
	};
	struct session *s = two_processes(*state);
	struct span rp[4], tables[16], locs[16];
	size_t nattrs, n;
	char *buf = NULL;
	struct span req = export(s, &o, &buf), dict;
	uint64_t v[4];

	/* resource 0 has no samples: left out; pid 200's samples left out */
	assert_int_equal(fields(req, 1, rp, NULL, 4), 1);
	assert_true(resource_has(rp[0], "service.name", "svc-y"));
	assert_int_equal(resource_int(rp[0], "n"), -7);
	assert_true(profile_total(rp[0], &nattrs) == 3ull * PERIOD);
	/* process.pid alone: the caller's resource may hold several processes */
	assert_int_equal(nattrs, 1);
	assert_int_equal(fields(field(field(rp[0], 2), 2), 4, NULL, v, 1), 1);
	assert_int_equal(v[0], 7);
	/* user frames as addresses: Locations without Lines, in a mapping with the build ID */
	dict = field(req, 2);
	n = fields(dict, 2, locs, NULL, 16);
	assert_int_equal(n, 3);		/* the zero Location and two frames */
	for (size_t i = 1; i < n; i++) {
		assert_int_equal(fields(locs[i], 3, NULL, NULL, 16), 0);
		assert_int_equal(fields(locs[i], 1, NULL, v, 1), 1);
		assert_int_equal(v[0], 1);
	}
	assert_int_equal(fields(dict, 1, tables, NULL, 16), 2);
	assert_int_equal(packed(tables[1], 5, v, 4), 1);
	assert_int_equal(fields(dict, 3, NULL, NULL, 16), 1);	/* no function but the zero one */
	free(buf);
	session__free(s);
}

static int setup_dir(void **state)
{
	*state = make_temp_dir_or_fail();
	return 0;
}

static int teardown_dir(void **state)
{
	remove_temp_dir(*state);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_per_process, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_caller_resources, setup_dir, teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
