/* SPDX-License-Identifier: BSD-2-Clause */
/* The script or module a CPython process runs, from its /proc/PID/cmdline (user/record/pyargv.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "record/pyargv.h"

/* A command line as /proc gives it: each argument NUL-terminated (the literal's NUL ends the last). */
#define CMD(s)	s, sizeof(s)

struct pcase {
	const char *cmdline;
	size_t len;
	const char *exe;
	int ret;
	const char *want;	/* pyargv_format()'s form, when ret is 0 */
};

static const struct pcase cases[] = {
	/* scripts, options before them skipped */
	{ CMD("python3\0app.py"), NULL, 0, "app.py" },
	{ CMD("/usr/bin/python3.11\0/srv/app/main.py\0--port\0 8080"), NULL, 0, "/srv/app/main.py" },
	{ CMD("python\0-uOB\0app.py\0-c\0x"), NULL, 0, "app.py" },
	{ CMD("python3\0-W\0ignore\0-X\0dev\0app.py"), NULL, 0, "app.py" },
	{ CMD("python3\0-Wignore\0-Xfrozen_modules=off\0app.py"), NULL, 0, "app.py" },
	{ CMD("python3\0-uW\0error\0app.py"), NULL, 0, "app.py" },
	{ CMD("python3\0-uWerror\0app.py"), NULL, 0, "app.py" },
	{ CMD("python3\0--check-hash-based-pycs\0never\0app.py"), NULL, 0, "app.py" },
	{ CMD("python3\0-I\0-E\0-s\0-S\0-P\0-q\0-x\0-v\0-d\0-b\0-bb\0-R\0-OO\0app.py"), NULL, 0,
	  "app.py" },
	{ CMD("python3\0--\0app.py\0--\0x"), NULL, 0, "app.py" },
	{ CMD("python3\0-u\0--\0app.py"), NULL, 0, "app.py" },
	/* the script's own arguments are never looked at: -c after it is its own */
	{ CMD("python3\0tool.py\0-c\0secret"), NULL, 0, "tool.py" },
	/* a shebang script: the kernel gives the interpreter, its argument, then the script */
	{ CMD("/usr/bin/python3\0/usr/local/bin/tool\0x"), NULL, 0, "/usr/local/bin/tool" },
	{ CMD("/usr/bin/python3\0-u\0/usr/local/bin/tool\0x"), NULL, 0, "/usr/local/bin/tool" },
	{ CMD("python3\0/srv/venv/bin/gunicorn\0app:app"), NULL, 0, "/srv/venv/bin/gunicorn" },
	/* modules */
	{ CMD("python3\0-m\0gunicorn\0app:app\0-w\0004"), NULL, 0, "-m gunicorn" },
	{ CMD("python3\0-mhttp.server\0008000"), NULL, 0, "-m http.server" },
	{ CMD("python3.13t\0-u\0-m\0myapp.server"), NULL, 0, "-m myapp.server" },
	{ CMD("python3\0-um\0uvicorn\0main:app"), NULL, 0, "-m uvicorn" },
	{ CMD("python3\0-m\0mod_\xc3\xa9t\xc3\xa9"), NULL, 0, "-m mod_\xc3\xa9t\xc3\xa9" },
	{ CMD("python3\0-m\0../etc/passwd"), NULL, -EBADMSG, NULL },
	{ CMD("python3\0-m\0my app"), NULL, -EBADMSG, NULL },
	{ CMD("python3\0-m\0"), NULL, -EBADMSG, NULL },
	{ CMD("python3\0-m"), NULL, -EBADMSG, NULL },
	/* no script: a command (never kept), stdin, the REPL, help and version */
	{ CMD("python3\0-c\0import os; os.system('curl -H \"token: s3cret\"')"), NULL, -ENOENT, NULL },
	{ CMD("python3\0-uc\0print(1)"), NULL, -ENOENT, NULL },
	{ CMD("python3\0-cprint(1)\0app.py"), NULL, -ENOENT, NULL },
	{ CMD("python3\0-"), NULL, -ENOENT, NULL },
	{ CMD("python3\0-u\0-\0app.py"), NULL, -ENOENT, NULL },
	{ CMD("python3\0--\0-"), NULL, -ENOENT, NULL },
	{ CMD("python3"), NULL, -ENOENT, NULL },
	{ CMD("python3\0-i"), NULL, -ENOENT, NULL },
	{ CMD("python3\0--"), NULL, -ENOENT, NULL },
	{ CMD("python3\0-V\0app.py"), NULL, -ENOENT, NULL },
	{ CMD("python3\0-h"), NULL, -ENOENT, NULL },
	{ CMD("python3\0--help-env"), NULL, -ENOENT, NULL },
	{ CMD("python3\0--version"), NULL, -ENOENT, NULL },
	/* interpreters by argv[0] or by the executable; other programs are not */
	{ CMD("/usr/bin/python\0a.py"), NULL, 0, "a.py" },
	{ CMD("python2.7\0-3\0-t\0-Q\0new\0a.py"), NULL, 0, "a.py" },
	{ CMD("python3.11d\0a.py"), NULL, 0, "a.py" },
	{ CMD("my-worker\0a.py"), "/usr/bin/python3.11", 0, "a.py" },
	{ CMD("my-worker\0a.py"), "/usr/bin/python3.11 (deleted)", 0, "a.py" },
	{ CMD("/srv/venv/bin/python\0a.py"), "/usr/bin/python3.11", 0, "a.py" },
	{ CMD("node\0a.py"), "/usr/bin/node", -ENOENT, NULL },
	{ CMD("pythonista\0a.py"), NULL, -ENOENT, NULL },
	{ CMD("python3.\0a.py"), NULL, -ENOENT, NULL },
	{ CMD("python3.11x\0a.py"), NULL, -ENOENT, NULL },
	{ CMD("/usr/bin/python3/\0a.py"), NULL, -ENOENT, NULL },
	{ CMD("ipython\0a.py"), NULL, -ENOENT, NULL },
	{ CMD("bash\0-c\0python3 a.py"), "/usr/bin/bash", -ENOENT, NULL },
	/* a process that renamed itself (setproctitle): one argument, padded */
	{ CMD("gunicorn: master [app]\0\0\0\0"), "/usr/bin/python3.11", -EBADMSG, NULL },
	/* hostile and damaged */
	{ "", 0, "/usr/bin/python3", -ENOENT, NULL },
	{ NULL, 0, "/usr/bin/python3", -ENOENT, NULL },
	{ CMD("python3\0"), NULL, -EBADMSG, NULL },
	{ CMD("python3\0-Z\0a.py"), NULL, -EBADMSG, NULL },
	{ CMD("python3\0--frobnicate\0a.py"), NULL, -EBADMSG, NULL },
	{ CMD("python3\0--check-hash-based-pycs"), NULL, -EBADMSG, NULL },
	{ CMD("python3\0-W"), NULL, -EBADMSG, NULL },
	{ CMD("python3\0-X"), NULL, -EBADMSG, NULL },
	{ CMD("python3\0--\0-m gunicorn"), NULL, -EBADMSG, NULL },
	/* cut before the end of the script's name: not kept */
	{ "python3\0/srv/app/ma", 19, NULL, -EBADMSG, NULL },
	{ "python3\0-m\0gunic", 16, NULL, -EBADMSG, NULL },
	{ "python3\0-W\0ign", 14, NULL, -EBADMSG, NULL },
	{ "python3\0-u", 10, NULL, -EBADMSG, NULL },
	{ "python3", 7, NULL, -ENOENT, NULL },
	{ "pyth", 4, "/usr/bin/python3", -ENOENT, NULL },
};

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct pcase *c = &cases[i];
		struct pyargv a;
		char got[PYARGV_NAME_MAX + 4];
		int ret = pyargv_parse(c->cmdline, c->len, c->exe, &a);

		if (ret != c->ret)
			fail_msg("case %zu (%s ...): returned %d, want %d", i,
				 c->cmdline ? c->cmdline : "NULL", ret, c->ret);
		if (ret)
			continue;
		assert_true(pyargv_format(&a, got, sizeof(got)) > 0);
		if (strcmp(got, c->want))
			fail_msg("case %zu (%s ...): \"%s\", want \"%s\"", i, c->cmdline, got, c->want);
	}
}

static void test_interpreter_names(void **state)
{
	static const char *const yes[] = { "python", "python3", "python3.11", "python3.13t",
					   "python3.7m", "python3.13td", "/opt/py/bin/python3.12",
					   "python2.7", "python3.11 (deleted)" };
	static const char *const no[] = { "", "/", "py", "pythonw.exe", "python3.11-config",
					  "python3.1.1", "python3.11dddd", "cpython", "python3-dbg",
					  "python3.11 (deleted) (deleted)", NULL };

	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!pyargv_is_interpreter(yes[i]))
			fail_msg("\"%s\" is not taken for an interpreter", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (pyargv_is_interpreter(no[i]))
			fail_msg("\"%s\" is taken for an interpreter", no[i]);
}

/* Names: at most PYARGV_NAME_MAX bytes kept whole, never cut; formats that do not fit refused. */
static void test_lengths(void **state)
{
	char cmd[1200], out[8];
	struct pyargv a;
	size_t n;

	(void)state;
	for (size_t len = PYARGV_NAME_MAX - 1; len <= PYARGV_NAME_MAX + 1; len++) {
		memcpy(cmd, "python3\0", 8);
		memset(cmd + 8, 'a', len);
		cmd[8 + len] = '\0';
		n = 8 + len + 1;
		if (len <= PYARGV_NAME_MAX) {
			assert_int_equal(pyargv_parse(cmd, n, NULL, &a), 0);
			assert_int_equal(strlen(a.name), len);
		} else {
			assert_int_equal(pyargv_parse(cmd, n, NULL, &a), -ENAMETOOLONG);
		}
		memcpy(cmd, "python3\0-m\0", 11);
		memset(cmd + 11, 'm', len);
		cmd[11 + len] = '\0';
		assert_int_equal(pyargv_parse(cmd, 11 + len + 1, NULL, &a),
				 len <= PYARGV_NAME_MAX ? 0 : -ENAMETOOLONG);
	}
	assert_int_equal(pyargv_parse(CMD("python3\0-m\0abcdefgh"), NULL, &a), 0);
	assert_int_equal(pyargv_format(&a, out, sizeof(out)), -ENOSPC);
	assert_int_equal(pyargv_parse(CMD("python3\0abcd"), NULL, &a), 0);
	assert_int_equal(pyargv_format(&a, out, sizeof(out)), 4);
	assert_string_equal(out, "abcd");
}

/* This process's own command line: the test program is no interpreter. */
static void test_read_self(void **state)
{
	char exe[4096];
	ssize_t n;

	(void)state;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	assert_null(pyargv_read((unsigned)getpid(), exe));
	assert_null(pyargv_read(0x7fffffffu, "/usr/bin/python3"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_interpreter_names),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_read_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
