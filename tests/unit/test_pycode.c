/* SPDX-License-Identifier: BSD-2-Clause */
/* CPython code objects read from live interpreters against their own co_lines(), and forged ones refused. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <linux/types.h>

#include "py_walk.h"
#include "record/pycode.h"

/* ---- a live interpreter ------------------------------------------------------------------ */

struct child {
	pid_t pid;
	FILE *out;	/* its stdout */
	int in;		/* its stdin: closed, it exits */
	int mem;	/* /proc/PID/mem */
};

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct child *c = ctx;
	ssize_t n = pread(c->mem, buf, len, (off_t)addr);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* The interpreter of the test that runs, stopped by its teardown when an assert cut it short. */
static struct child running = { .pid = -1, .in = -1, .mem = -1 };

static bool child_start(struct child *c, const char *python)
{
	int to[2], from[2];

	if (pipe(to) || pipe(from))
		return false;
	c->pid = fork();
	if (c->pid < 0)
		return false;
	if (!c->pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[1]);
		close(from[0]);
		execl(python, python, "-I", SRCDIR "/pycode_oracle.py", (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	c->in = to[1];
	c->out = fdopen(from[0], "r");
	c->mem = -1;
	return c->out != NULL;
}

/* Stop the interpreter; /proc/PID/mem stays open (reads of it fail). */
static void child_stop(struct child *c)
{
	int status;

	if (c->pid <= 0)
		return;
	close(c->in);
	if (c->out)
		fclose(c->out);
	c->out = NULL;
	/* it exits when its stdin closes; the kill is for one that hangs */
	kill(c->pid, SIGKILL);
	waitpid(c->pid, &status, 0);
	c->pid = -1;
}

static int teardown_child(void **state)
{
	(void)state;
	alarm(0);
	child_stop(&running);
	if (running.mem >= 0)
		close(running.mem);
	running.mem = -1;
	return 0;
}

static size_t unhex(const char *s, char *out, size_t cap)
{
	size_t n = 0;

	if (!strcmp(s, "-"))
		s = "";
	for (; s[0] && s[1] && n + 1 < cap; s += 2) {
		unsigned v;

		sscanf(s, "%2x", &v);
		out[n++] = (char)v;
	}
	out[n] = '\0';
	return n;
}

/*
 * Each code object the oracle names, read through /proc/PID/mem, against its
 * names and the line of each of its instructions (and one past its end).
 */
static void check_interpreter(const char *python, unsigned want_minor)
{
	uint64_t hits, misses, lines = 0, codes = 0;
	char buf[8192], path[64];
	const struct pycode_layout *l = NULL;
	struct pycode_layout published;
	unsigned long long runtime;
	struct pycode_cache *cache;
	struct pycode_info info;
	uint64_t code = 0;
	struct child *cp = &running;
	unsigned minor, debug;
	int err = 0;

	if (access(python, X_OK)) {
		print_message("%s: not installed, skipped\n", python);
		skip();
	}
	/* a hung interpreter ends the test, not the suite's time */
	alarm(50);
	cache = pycode_cache__new(64);
	assert_non_null(cache);
	assert_true(child_start(cp, python));
	assert_non_null(fgets(buf, sizeof(buf), cp->out));
	assert_int_equal(sscanf(buf, "V %u %u", &minor, &debug), 2);
	assert_int_equal(minor, want_minor);
	assert_int_equal(debug, 0);
	l = pycode_layout__for(minor);
	assert_non_null(l);
	assert_int_equal(l->version, 300 + minor);
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)cp->pid);
	cp->mem = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(cp->mem >= 0);

	/* 3.13 publishes its layout at _PyRuntime's start: the same as the table's, and used */
	assert_non_null(fgets(buf, sizeof(buf), cp->out));
	assert_int_equal(sscanf(buf, "R %llu", &runtime), 1);
	if (runtime) {
		uint8_t dbg[PYCODE_DEBUG_OFFSETS_LEN];

		assert_int_equal(mem_read(cp, runtime, dbg, sizeof(dbg)), 0);
		err = pycode_layout__debug_offsets(dbg, sizeof(dbg), &published);
		assert_int_equal(err, minor == 13 ? 0 : -ENOENT);
		if (!err) {
			assert_memory_equal(&published, l, sizeof(published));
			print_message("%s: the layout of _Py_DebugOffsets at %#llx\n", python, runtime);
			l = &published;
		}
	} else {
		assert_true(minor < 13);
	}

	while (fgets(buf, sizeof(buf), cp->out) && buf[0] != 'E') {
		char qhex[1024], fhex[2048], q[512], f[1024];
		unsigned long long id, off;
		unsigned first;
		int line, pos;

		if (buf[0] == 'C') {
			assert_int_equal(sscanf(buf, "C %llu %u %1023s %2047s", &id, &first, qhex, fhex), 4);
			unhex(qhex, q, sizeof(q));
			unhex(fhex, f, sizeof(f));
			code = id;
			codes++;
			err = pycode__resolve(l, mem_read, cp, code, 0, &info);
			if (err)
				fail_msg("%s: code %#llx (%s): %s", python, id, q, strerror(-err));
			assert_string_equal(info.qualname, q);
			assert_string_equal(info.file, f);
			assert_int_equal(info.firstlineno, first);
			continue;
		}
		assert_int_equal(sscanf(buf, "L %llu %d %d", &off, &line, &pos), 3);
		/* the direct read for some, the cache for every offset */
		if (off % 16 == 0) {
			assert_int_equal(pycode__resolve(l, mem_read, cp, code, off, &info), 0);
			if (info.line != (unsigned)line)
				fail_msg("%s: %s offset %llu: line %u, co_lines() %d", python,
					 info.qualname, off, info.line, line);
		}
		assert_int_equal(pycode_cache__lookup(cache, l, mem_read, cp, code, off, &info), 0);
		if (info.line != (unsigned)line)
			fail_msg("%s: %s offset %llu: line %u from the cache, co_lines() %d", python,
				 info.qualname, off, info.line, line);
		if (pos >= 0)
			assert_int_equal(info.line, pos);
		lines++;
	}
	assert_int_equal(buf[0], 'E');
	pycode_cache__stats(cache, &hits, &misses);
	print_message("%s: %llu code objects, %llu offsets, cache %llu hits %llu misses\n", python,
		      (unsigned long long)codes, (unsigned long long)lines,
		      (unsigned long long)hits, (unsigned long long)misses);
	assert_true(codes > 100 && lines > 1000);
	assert_true(hits > misses);

	/* not a code object: a str, a stack address, nothing */
	assert_true(pycode__resolve(l, mem_read, cp, code + 8, 0, &info) < 0);
	assert_true(pycode__resolve(l, mem_read, cp, 0x10, 0, &info) < 0);
	child_stop(cp);
	/* the process gone: reads fail, never a crash */
	assert_true(pycode__resolve(l, mem_read, cp, code, 0, &info) < 0);
	pycode_cache__free(cache);
	alarm(0);
}

static const char *pyenv_python(unsigned minor, char *buf, size_t len)
{
	const char *root = getenv("PYENV_ROOT");
	char pat[512];
	glob_t g;

	snprintf(pat, sizeof(pat), "%s/versions/3.%u.*/bin/python3.%u",
		 root ? root : "/root/.pyenv", minor, minor);
	snprintf(buf, len, "pyenv python3.%u", minor);
	if (glob(pat, 0, NULL, &g))
		return buf;
	/* the last: the newest patch release */
	snprintf(buf, len, "%s", g.gl_pathv[g.gl_pathc - 1]);
	globfree(&g);
	return buf;
}

static void test_pyenv(void **state)
{
	unsigned minor = (unsigned)(uintptr_t)*state;
	char python[512];

	check_interpreter(pyenv_python(minor, python, sizeof(python)), minor);
}

static void test_debian_311(void **state)
{
	(void)state;
	check_interpreter("/usr/bin/python3.11", 11);
}

/* ---- forged memory ---------------------------------------------------------------------- */

#define IMG_BASE	0x7f0000100000ull
#define IMG_SIZE	0x8000u
#define T_CODE		0x0100u		/* the type named "code" */
#define T_CODE_NAME	0x0400u
#define T_STR		0x0800u
#define T_BYTES		0x0c00u
#define O_QUAL		0x1000u
#define O_NAME		0x1200u
#define O_FILE		0x1400u
#define O_TABLE		0x1800u
#define O_CODE		0x2000u

struct image {
	uint8_t b[IMG_SIZE];
	unsigned reads;
};

static int img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct image *im = ctx;

	im->reads++;
	if (addr < IMG_BASE || addr - IMG_BASE > IMG_SIZE || len > IMG_SIZE - (addr - IMG_BASE))
		return -EFAULT;
	memcpy(buf, im->b + (addr - IMG_BASE), len);
	return 0;
}

static void put64(struct image *im, uint32_t at, uint64_t v)
{
	memcpy(im->b + at, &v, sizeof(v));
}

static void put32(struct image *im, uint32_t at, uint32_t v)
{
	memcpy(im->b + at, &v, sizeof(v));
}

/* A compact str of @n code points of @kind at @at (ASCII when @ascii). */
static void put_str(struct image *im, const struct pycode_layout *l, uint32_t at, unsigned kind,
		    bool ascii, const void *data, size_t n)
{
	uint32_t state = (kind << 2) | (1u << 5) | (ascii ? 1u << 6 : 0);

	put64(im, at + l->ob_type, IMG_BASE + T_STR);
	put64(im, at + l->str_length, n);
	put32(im, at + l->str_state, state);
	memcpy(im->b + at + (ascii ? l->str_ascii_data : l->str_compact_data), data, n * kind);
}

/*
 * A code object "f.<locals>.g" (3.10: "g") from "/a/b\u00e9.py" (latin-1),
 * first line 10, with @table as its line table.
 */
static void forge(struct image *im, const struct pycode_layout *l, const uint8_t *table, size_t len)
{
	static const uint8_t file[] = { '/', 'a', '/', 'b', 0xe9, '.', 'p', 'y' };

	memset(im, 0, sizeof(*im));
	put64(im, T_CODE + l->tp_name, IMG_BASE + T_CODE_NAME);
	memcpy(im->b + T_CODE_NAME, "code", 5);
	put64(im, T_STR + l->tp_flags, 1ul << 28);
	put64(im, T_BYTES + l->tp_flags, 1ul << 27);
	put_str(im, l, O_QUAL, 1, true, "f.<locals>.g", 12);
	put_str(im, l, O_NAME, 1, true, "g", 1);
	put_str(im, l, O_FILE, 1, false, file, sizeof(file));
	put64(im, O_TABLE + l->ob_type, IMG_BASE + T_BYTES);
	put64(im, O_TABLE + l->ob_size, len);
	memcpy(im->b + O_TABLE + l->bytes_sval, table, len);
	put64(im, O_CODE + l->ob_type, IMG_BASE + T_CODE);
	put32(im, O_CODE + l->co_firstlineno, 10);
	if (l->co_qualname)
		put64(im, O_CODE + l->co_qualname, IMG_BASE + O_QUAL);
	put64(im, O_CODE + l->co_name, IMG_BASE + O_NAME);
	put64(im, O_CODE + l->co_filename, IMG_BASE + O_FILE);
	put64(im, O_CODE + l->co_linetable, IMG_BASE + O_TABLE);
}

/* 3.11+: (units, line delta) entries of code 13, one code 15, one of code 11, a long one (14). */
static const uint8_t table_311[] = {
	0x80 | 13 << 3 | 0, 0x00,		/* [0, 2): +0 = 10 */
	0x80 | 13 << 3 | 2, 0x04,		/* [2, 8): +2 = 12 */
	0x80 | 15 << 3 | 0,			/* [8, 10): no line */
	0x80 | 11 << 3 | 1, 0x05, 0x07,		/* [10, 14): +1 = 13 */
	0x80 | 14 << 3 | 0, 0x43, 0x01, 0, 1, 2, /* [14, 16): -(0x43&63 | 1<<6 = 67)>>1 = -33: line <= 0 */
	0x80 | 13 << 3 | 0, 0x44, 0x01,		/* [16, 18): +(4 | 64) >> 1 = +34 = 14 */
	0x80 | 3 << 3 | 0, 0x11,		/* [18, 20): short form, same line */
};
static const struct { uint64_t off; uint32_t line; } lines_311[] = {
	{ 0, 10 }, { 1, 10 }, { 2, 12 }, { 7, 12 }, { 8, 0 }, { 10, 13 }, { 13, 13 }, { 14, 0 },
	{ 16, 14 }, { 18, 14 }, { 20, 0 }, { 1u << 30, 0 }, { UINT64_MAX, 0 },
};

/* 3.10: (byte delta, line delta) pairs. */
static const uint8_t table_310[] = { 6, 0, 4, 2, 0, 3, 2, 0x80, 8, 0xff, 0, 0x7f };
static const struct { uint64_t off; uint32_t line; } lines_310[] = {
	{ 0, 10 }, { 5, 10 }, { 6, 12 }, { 9, 12 }, { 10, 0 }, { 12, 14 }, { 19, 14 }, { 20, 0 },
};

static void test_forged_ok(void **state)
{
	static struct image im;
	struct pycode_info info;

	(void)state;
	for (unsigned minor = 10; minor <= 13; minor++) {
		const struct pycode_layout *l = pycode_layout__for(minor);
		bool v310 = minor == 10;

		forge(&im, l, v310 ? table_310 : table_311, v310 ? sizeof(table_310) : sizeof(table_311));
		for (size_t i = 0; i < (v310 ? 8 : 13); i++) {
			uint64_t off = v310 ? lines_310[i].off : lines_311[i].off;
			uint32_t want = v310 ? lines_310[i].line : lines_311[i].line;

			assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, off, &info), 0);
			assert_string_equal(info.qualname, v310 ? "g" : "f.<locals>.g");
			assert_string_equal(info.file, "/a/b\xc3\xa9.py");
			assert_int_equal(info.firstlineno, 10);
			if (info.line != want)
				fail_msg("3.%u offset %llu: line %u, want %u", minor,
					 (unsigned long long)off, info.line, want);
		}
	}
	assert_null(pycode_layout__for(9));
	assert_null(pycode_layout__for(14));
}

/* Strings of each kind: UCS2, UCS4, the code points that become U+FFFD, and those refused. */
static void test_forged_strings(void **state)
{
	static struct image im;
	const struct pycode_layout *l = pycode_layout__for(12);
	const uint16_t ucs2[] = { 0x540d, 0x524d, 0xd800, 'x' };
	const uint32_t ucs4[] = { 0x1f600, 0, 'y' }, bad4[] = { 'a', 0x110000 };
	struct pycode_info info;
	char want[600];

	(void)state;
	forge(&im, l, table_311, sizeof(table_311));
	put_str(&im, l, O_QUAL, 2, false, ucs2, 4);
	put_str(&im, l, O_FILE, 4, false, ucs4, 3);
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info), 0);
	assert_string_equal(info.qualname, "\xe5\x90\x8d\xe5\x89\x8d\xef\xbf\xbdx");
	assert_string_equal(info.file, "\xf0\x9f\x98\x80\xef\xbf\xbdy");

	/* past U+10FFFF: no str */
	put_str(&im, l, O_FILE, 4, false, bad4, 2);
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info), -EBADMSG);
	/* ASCII that is not */
	put_str(&im, l, O_FILE, 1, true, "a\x80", 2);
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info), -EBADMSG);
	/* a kind of 3, a legacy (not compact) str, a negative length */
	put_str(&im, l, O_FILE, 1, true, "ok", 2);
	put32(&im, O_FILE + l->str_state, 3u << 2 | 1u << 5);
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info), -EBADMSG);
	put32(&im, O_FILE + l->str_state, 1u << 2 | 1u << 6);
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info), -EBADMSG);
	put_str(&im, l, O_FILE, 1, true, "ok", 2);
	put64(&im, O_FILE + l->str_length, (uint64_t)-5);
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info), -EBADMSG);
	/* a huge length is read no further than the name can hold: cut at 511 bytes */
	put_str(&im, l, O_FILE, 1, true, "ok", 2);
	memset(im.b + O_FILE + l->str_ascii_data, 'z', 600);
	put64(&im, O_FILE + l->str_length, 1ull << 62);
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info), 0);
	memset(want, 'z', 511);
	want[511] = '\0';
	assert_string_equal(info.file, want);
	/* three-byte characters cut at a character boundary: 85 of them in 255 bytes */
	for (unsigned i = 0; i < 100; i++)
		((uint16_t *)(im.b + O_QUAL + l->str_compact_data))[i] = 0x540d;
	put64(&im, O_QUAL + l->str_length, 100);
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info), 0);
	assert_int_equal(strlen(info.qualname), 255);
	/* a str whose type is not a str's */
	put64(&im, O_QUAL + l->ob_type, IMG_BASE + T_BYTES);
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info), -EBADMSG);
}

/* Objects that are not what they say: each refused, the reads few. */
static void test_forged_objects(void **state)
{
	static struct image im;
	const struct pycode_layout *l = pycode_layout__for(11);
	struct pycode_info info;
	uint8_t big[16];

	(void)state;
	forge(&im, l, table_311, sizeof(table_311));
	/* not of type "code" */
	memcpy(im.b + T_CODE_NAME, "codf", 5);
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info), -EBADMSG);
	memcpy(im.b + T_CODE_NAME, "code", 5);
	put64(&im, O_CODE + l->ob_type, 0);
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info), -EBADMSG);
	put64(&im, O_CODE + l->ob_type, 0x10);
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info), -EFAULT);
	put64(&im, O_CODE + l->ob_type, IMG_BASE + T_CODE);
	/* a name that points at itself, at the code object, outside */
	put64(&im, O_CODE + l->co_qualname, IMG_BASE + O_CODE);
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info), -EBADMSG);
	put64(&im, O_CODE + l->co_qualname, IMG_BASE + IMG_SIZE - 8);
	assert_true(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info) < 0);
	put64(&im, O_CODE + l->co_qualname, IMG_BASE + O_QUAL);
	/* the line table not bytes; negative, past the image, past the limit */
	put64(&im, O_TABLE + l->ob_type, IMG_BASE + T_STR);
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info), -EBADMSG);
	put64(&im, O_TABLE + l->ob_type, IMG_BASE + T_BYTES);
	put64(&im, O_TABLE + l->ob_size, (uint64_t)-1);
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info), -EBADMSG);
	put64(&im, O_TABLE + l->ob_size, IMG_SIZE);
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info), -EFAULT);
	put64(&im, O_TABLE + l->ob_size, PYCODE_LINETABLE_MAX + 1);
	im.reads = 0;
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 2, &info), 0);
	assert_string_equal(info.qualname, "f.<locals>.g");
	assert_int_equal(info.line, 0);
	assert_true(im.reads < 16);
	/* a negative first line */
	put64(&im, O_TABLE + l->ob_size, sizeof(table_311));
	put32(&im, O_CODE + l->co_firstlineno, (uint32_t)-3);
	assert_int_equal(pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, 0, &info), -EBADMSG);
	/* damaged tables: an entry without bit 7, a varint cut by the end */
	big[0] = 0x7f;
	assert_int_equal(pycode__line(311, big, 1, 5, 0), 0);
	big[0] = 0x80 | 13 << 3;
	big[1] = 0x41;
	assert_int_equal(pycode__line(311, big, 2, 5, 0), 0);
	memset(big, 0x7f, sizeof(big));
	big[0] = 0x80 | 13 << 3;
	assert_int_equal(pycode__line(311, big, sizeof(big), 5, 0), 0);
	assert_int_equal(pycode__line(310, big, 1, 5, 0), 0);
	/* a line delta past an int: damage, whatever follows */
	big[0] = 0x80 | 13 << 3;
	memset(big + 1, 0x7f, 6);
	big[7] = 0x3f;
	assert_int_equal(pycode__line(311, big, 8, 5, 0), 0);
	/* lines driven far by many large deltas stay in range (no overflow, line 0 at the end) */
	{
		static uint8_t far[7 * 4096];

		for (size_t i = 0; i < sizeof(far); i += 7) {
			far[i] = 0x80 | 13 << 3;
			/* 0xfffffffe: +2^31 - 1 each */
			memcpy(far + i + 1, "\x7e\x7f\x7f\x7f\x7f", 5);
			far[i + 6] = 0x03;
		}
		assert_int_equal(pycode__line(311, far, sizeof(far), 5, 0), 5u + 0x7fffffff);
		assert_int_equal(pycode__line(311, far, sizeof(far), 5, 2), 0);
		assert_int_equal(pycode__line(311, far, sizeof(far), 5, 2 * 4095), 0);
	}
	assert_int_equal(pycode__line(311, NULL, 0, 5, 0), 0);
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static void assert_utf8(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	assert_true(n < cap);
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		size_t k = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;

		assert_true(k && i + k <= n);
		for (size_t j = 1; j < k; j++)
			assert_int_equal((unsigned char)s[i + j] & 0xc0, 0x80);
		i += k;
	}
}

/*
 * Random damage to the objects of a forged code object: every answer is an
 * error or names that are UTF-8 within their arrays, and the cache answers
 * as a direct read does.
 */
static void test_forged_random(void **state)
{
	static struct image im, orig;
	struct pycode_cache *cache = pycode_cache__new(8);
	struct pycode_info a, b;
	unsigned ok = 0;

	(void)state;
	assert_non_null(cache);
	for (unsigned round = 0; round < 20000; round++) {
		const struct pycode_layout *l = pycode_layout__for(10 + round % 4);
		uint64_t off = rnd() % 40;
		int e1, e2;

		forge(&orig, l, l->version == 310 ? table_310 : table_311,
		      l->version == 310 ? sizeof(table_310) : sizeof(table_311));
		im = orig;
		for (unsigned k = 1 + rnd() % 8; k--;) {
			uint32_t at = (uint32_t)(rnd() % 0x2100);

			if (rnd() & 1)
				im.b[at] = (uint8_t)rnd();
			else
				im.b[at] ^= (uint8_t)(1u << (rnd() % 8));
		}
		e1 = pycode__resolve(l, img_read, &im, IMG_BASE + O_CODE, off, &a);
		pycode_cache__clear(cache);
		e2 = pycode_cache__lookup(cache, l, img_read, &im, IMG_BASE + O_CODE, off, &b);
		assert_int_equal(e1, e2);
		assert_true(e1 <= 0);
		if (e1)
			continue;
		ok++;
		assert_utf8(a.qualname, sizeof(a.qualname));
		assert_utf8(a.file, sizeof(a.file));
		assert_string_equal(a.qualname, b.qualname);
		assert_string_equal(a.file, b.file);
		assert_int_equal(a.line, b.line);
	}
	/* most damage falls where nothing is read */
	assert_true(ok > 1000);
	pycode_cache__free(cache);
}

struct big_image {
	uint8_t *b;
	size_t size;
	unsigned reads;
};

static int big_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct big_image *im = ctx;

	im->reads++;
	if (addr < IMG_BASE || addr - IMG_BASE > im->size || len > im->size - (addr - IMG_BASE))
		return -EFAULT;
	memcpy(buf, im->b + (addr - IMG_BASE), len);
	return 0;
}

/*
 * Line tables past the cache's budget: 12 code objects that share one table of
 * PYCODE_LINETABLE_MAX bytes; the first ones' copies fill the budget, the
 * later ones read the table at each lookup and still answer right.
 */
static void test_cache_budget(void **state)
{
	static struct image small;
	const struct pycode_layout *l = pycode_layout__for(12);
	const uint32_t table = IMG_SIZE, codes = IMG_SIZE + PYCODE_LINETABLE_MAX + 64;
	struct big_image im = { .size = codes + 12 * 0x100 };
	struct pycode_cache *cache = pycode_cache__new(64);
	struct pycode_info info;
	unsigned reads;

	(void)state;
	im.b = calloc(1, im.size);
	assert_non_null(im.b);
	assert_non_null(cache);
	forge(&small, l, table_311, sizeof(table_311));
	memcpy(im.b, small.b, IMG_SIZE);
	/* the bytes object: each entry one code unit, the line one more */
	memcpy(im.b + table, small.b + O_TABLE, l->bytes_sval);
	memcpy(im.b + table + l->ob_size, &(uint64_t){ PYCODE_LINETABLE_MAX }, 8);
	for (uint32_t i = 0; i < PYCODE_LINETABLE_MAX; i += 2) {
		im.b[table + l->bytes_sval + i] = 0x80 | 13 << 3;
		im.b[table + l->bytes_sval + i + 1] = 0x02;
	}
	for (unsigned k = 0; k < 12; k++) {
		uint64_t at = IMG_BASE + table;

		memcpy(im.b + codes + k * 0x100, small.b + O_CODE, 0x100);
		memcpy(im.b + codes + k * 0x100 + l->co_linetable, &at, 8);
	}
	for (unsigned round = 0; round < 2; round++) {
		for (unsigned k = 0; k < 12; k++) {
			reads = im.reads;
			assert_int_equal(pycode_cache__lookup(cache, l, big_read, &im,
							      IMG_BASE + codes + k * 0x100,
							      2 * (1000 + k), &info), 0);
			assert_int_equal(info.line, 10 + 1000 + k + 1);
			assert_string_equal(info.qualname, "f.<locals>.g");
			/* held: no reads; past the budget (2 MiB: 8 tables): the table alone */
			if (round)
				assert_int_equal(im.reads - reads, k < 8 ? 0 : 1);
		}
	}
	/* the resolve without the cache agrees */
	assert_int_equal(pycode__resolve(l, big_read, &im, IMG_BASE + codes, 2 * 5000, &info), 0);
	assert_int_equal(info.line, 10 + 5000 + 1);
	pycode_cache__free(cache);
	free(im.b);
}

/* 3.13's _Py_DebugOffsets: the table's layout from it, other versions and bad offsets refused. */
static void test_debug_offsets(void **state)
{
	const struct pycode_layout *want = pycode_layout__for(13);
	static const struct { uint32_t at; uint64_t v; } fields[] = {
		{ 280, 112 }, { 288, 120 }, { 296, 128 }, { 304, 136 }, { 312, 68 }, { 344, 200 },
		{ 360, 8 }, { 376, 24 }, { 392, 168 }, { 520, 16 }, { 528, 32 }, { 544, 32 },
		{ 552, 16 }, { 560, 40 },
	};
	uint8_t buf[PYCODE_DEBUG_OFFSETS_LEN], bad[PYCODE_DEBUG_OFFSETS_LEN];
	struct pycode_layout got;
	uint64_t v;

	(void)state;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, "xdebugpy", 8);
	v = 0x030d00f0;
	memcpy(buf + 8, &v, 8);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		memcpy(buf + fields[i].at, &fields[i].v, 8);
	assert_int_equal(pycode_layout__debug_offsets(buf, sizeof(buf), &got), 0);
	assert_memory_equal(&got, want, sizeof(got));
	assert_int_equal(pycode_layout__debug_offsets(buf, sizeof(buf) - 1, &got), -ENOENT);
	assert_int_equal(pycode_layout__debug_offsets(NULL, 0, &got), -ENOENT);
	memcpy(bad, buf, sizeof(bad));
	bad[0] = 'X';
	assert_int_equal(pycode_layout__debug_offsets(bad, sizeof(bad), &got), -ENOENT);
	/* 3.14's struct is another; a free-threaded build lays objects out otherwise */
	memcpy(bad, buf, sizeof(bad));
	v = 0x030e00a0;
	memcpy(bad + 8, &v, 8);
	assert_int_equal(pycode_layout__debug_offsets(bad, sizeof(bad), &got), -ENOENT);
	memcpy(bad, buf, sizeof(bad));
	bad[16] = 1;
	assert_int_equal(pycode_layout__debug_offsets(bad, sizeof(bad), &got), -ENOENT);
	/* fields past the header read: ob_type at the str's data, state past it */
	memcpy(bad, buf, sizeof(bad));
	v = 40;
	memcpy(bad + 360, &v, 8);
	assert_int_equal(pycode_layout__debug_offsets(bad, sizeof(bad), &got), -EBADMSG);
	memcpy(bad, buf, sizeof(bad));
	memcpy(bad + 544, &v, 8);
	assert_int_equal(pycode_layout__debug_offsets(bad, sizeof(bad), &got), -EBADMSG);
	/* an offset 0, past 4096, or past what this file reads of an object */
	for (unsigned k = 0; k < 3; k++) {
		static const uint64_t vals[] = { 0, 1u << 20, 3000 };

		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
			memcpy(bad, buf, sizeof(bad));
			memcpy(bad + fields[i].at, &vals[k], 8);
			/* tp_name and tp_flags may be anywhere in a type below 4096; co_code_adaptive is not read */
			if (k == 2 && (fields[i].at == 376 || fields[i].at == 392 || fields[i].at == 344))
				continue;
			if (pycode_layout__debug_offsets(bad, sizeof(bad), &got) != -EBADMSG)
				fail_msg("field at %u = %llu accepted", fields[i].at,
					 (unsigned long long)vals[k]);
		}
	}
}

/* The cache: held names and failures, a collision replaces, clear forgets. */
static void test_cache(void **state)
{
	static struct image im;
	const struct pycode_layout *l = pycode_layout__for(13);
	struct pycode_cache *cache = pycode_cache__new(1);
	struct pycode_info info;
	uint64_t hits, misses;
	unsigned reads;

	(void)state;
	assert_null(pycode_cache__new(0));
	assert_non_null(cache);
	forge(&im, l, table_311, sizeof(table_311));
	assert_int_equal(pycode_cache__lookup(cache, l, img_read, &im, IMG_BASE + O_CODE, 2, &info), 0);
	assert_int_equal(info.line, 12);
	reads = im.reads;
	assert_int_equal(pycode_cache__lookup(cache, l, img_read, &im, IMG_BASE + O_CODE, 10, &info), 0);
	assert_int_equal(info.line, 13);
	assert_string_equal(info.qualname, "f.<locals>.g");
	assert_int_equal(im.reads, reads);
	/* a failure is held: no reads the second time */
	assert_int_equal(pycode_cache__lookup(cache, l, img_read, &im, IMG_BASE + O_QUAL, 0, &info), -EBADMSG);
	reads = im.reads;
	assert_int_equal(pycode_cache__lookup(cache, l, img_read, &im, IMG_BASE + O_QUAL, 0, &info), -EBADMSG);
	assert_int_equal(im.reads, reads);
	/* one slot: the code object was replaced, read again; cleared, read again */
	assert_int_equal(pycode_cache__lookup(cache, l, img_read, &im, IMG_BASE + O_CODE, 0, &info), 0);
	assert_true(im.reads > reads);
	reads = im.reads;
	pycode_cache__clear(cache);
	assert_int_equal(pycode_cache__lookup(cache, l, img_read, &im, IMG_BASE + O_CODE, 0, &info), 0);
	assert_true(im.reads > reads);
	/* another version's layout is another entry */
	assert_int_equal(pycode_cache__lookup(cache, pycode_layout__for(10), img_read, &im,
					      IMG_BASE + O_CODE, 0, &info), -EBADMSG);
	pycode_cache__stats(cache, &hits, &misses);
	assert_int_equal(hits, 2);
	assert_int_equal(misses, 5);
	pycode_cache__free(cache);
	pycode_cache__free(NULL);
}

/*
 * A held failure answers a few lookups, then the object is read again: a
 * read that failed once (its memory unreadable for a moment) does not leave
 * a live code object unnamed for the rest of the process.
 */
static void test_cache_retry(void **state)
{
	static struct image im;
	const struct pycode_layout *l = pycode_layout__for(13);
	struct pycode_cache *cache = pycode_cache__new(4);
	struct pycode_info info;
	uint8_t type[8];
	unsigned reads, held = 0, i;
	int err;

	(void)state;
	assert_non_null(cache);
	forge(&im, l, table_311, sizeof(table_311));
	/* the type pointer unreadable: the object is not a code object, for now */
	memcpy(type, im.b + O_CODE + l->ob_type, 8);
	memset(im.b + O_CODE + l->ob_type, 0, 8);
	assert_int_equal(pycode_cache__lookup(cache, l, img_read, &im, IMG_BASE + O_CODE, 2, &info),
			 -EBADMSG);
	memcpy(im.b + O_CODE + l->ob_type, type, 8);
	for (i = 0; i < 64; i++) {
		reads = im.reads;
		err = pycode_cache__lookup(cache, l, img_read, &im, IMG_BASE + O_CODE, 2, &info);
		if (!err)
			break;
		assert_int_equal(err, -EBADMSG);
		assert_int_equal(im.reads, reads);	/* held: not read */
		held++;
	}
	/* a few lookups held it, never all */
	assert_true(held >= 2 && held < 64);
	assert_int_equal(err, 0);
	assert_string_equal(info.qualname, "f.<locals>.g");
	assert_int_equal(info.line, 12);
	pycode_cache__free(cache);
}

/* Failing reads: the process has exited. */
static int gone_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx, (void)addr, (void)buf, (void)len;
	return -EIO;
}

/*
 * The checked cache: held names serve the frames whose hash of the names'
 * pointers is the one read with them, even once the process is gone; a
 * frame of another hash reads again and is stale when memory disagrees.
 */
static void test_cache_checked(void **state)
{
	static struct image im;
	const struct pycode_layout *l = pycode_layout__for(13);
	const struct pycode_check chk = { 112, 3 };
	struct pycode_cache *cache = pycode_cache__new(8);
	struct pycode_info info;
	__u64 words[PY_CHECK_WORDS];
	uint32_t want;
	unsigned reads;

	(void)state;
	assert_non_null(cache);
	forge(&im, l, table_311, sizeof(table_311));
	memcpy(words, im.b + O_CODE + chk.offset, sizeof(words));
	want = py_check_hash(words, 3);
	/* the sampler saw another object there: stale, never its names */
	assert_int_equal(pycode_cache__lookup_checked(cache, l, img_read, &im, IMG_BASE + O_CODE, 2,
						      &chk, want ^ 2, &info), -ESTALE);
	/* the object the sampler saw: named, then held */
	assert_int_equal(pycode_cache__lookup_checked(cache, l, img_read, &im, IMG_BASE + O_CODE, 2,
						      &chk, want, &info), 0);
	assert_string_equal(info.qualname, "f.<locals>.g");
	reads = im.reads;
	assert_int_equal(pycode_cache__lookup_checked(cache, l, gone_read, NULL, IMG_BASE + O_CODE, 10,
						      &chk, want, &info), 0);
	assert_string_equal(info.qualname, "f.<locals>.g");
	assert_int_equal(info.line, 13);
	assert_int_equal(im.reads, reads);
	/* unchecked frames take what is held */
	assert_int_equal(pycode_cache__lookup_checked(cache, l, gone_read, NULL, IMG_BASE + O_CODE, 2,
						      &chk, 0, &info), 0);
	/* another hash once the process is gone: nothing to read it from */
	assert_int_not_equal(pycode_cache__lookup_checked(cache, l, gone_read, NULL, IMG_BASE + O_CODE,
							  2, &chk, want ^ 2, &info), 0);
	pycode_cache__free(cache);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forged_ok),
		cmocka_unit_test(test_forged_strings),
		cmocka_unit_test(test_forged_objects),
		cmocka_unit_test(test_forged_random),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_cache_retry),
		cmocka_unit_test(test_cache_checked),
		cmocka_unit_test(test_debug_offsets),
		cmocka_unit_test(test_cache_budget),
		cmocka_unit_test_teardown(test_debian_311, teardown_child),
		cmocka_unit_test_prestate_setup_teardown(test_pyenv, NULL, teardown_child, (void *)10),
		cmocka_unit_test_prestate_setup_teardown(test_pyenv, NULL, teardown_child, (void *)11),
		cmocka_unit_test_prestate_setup_teardown(test_pyenv, NULL, teardown_child, (void *)12),
		cmocka_unit_test_prestate_setup_teardown(test_pyenv, NULL, teardown_child, (void *)13),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
