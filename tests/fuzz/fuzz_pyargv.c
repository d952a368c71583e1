// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: a process's /proc/PID/cmdline as the recorder reads a CPython
 * process's (user/record/pyargv.c). Byte 0 picks the executable (none, an
 * interpreter, an interpreter deleted since, another program); the rest is the
 * command line, at most PYARGV_CMDLINE_MAX bytes as read from /proc.
 * Each answer is 0 or one of the documented errors; a name found is
 * NUL-terminated, non-empty, within PYARGV_NAME_MAX bytes, a whole
 * NUL-terminated argument of the input (a module's maybe after "-m" in the
 * same argument), a script never one that reads as an option; the same input
 * gives the same answer, and its recorded form fits.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/pyargv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const exes[] = { NULL, "/usr/bin/python3.11", "/usr/bin/python3.11 (deleted)",
				    "/usr/bin/node" };

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_pyargv: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* Whether @name ends an argument of @cmd (NUL after it): the whole argument, or after -m (-um ...). */
static bool ends_an_argument(const char *cmd, size_t len, const char *name, bool module)
{
	size_t n = strlen(name), start = 0;

	for (size_t i = 0; i < len; i++) {
		if (cmd[i])
			continue;
		if (i - start >= n && !memcmp(cmd + i - n, name, n)) {
			size_t at = i - n;

			if (at == start)
				return true;
			if (module && at - start >= 2 && cmd[start] == '-' && cmd[at - 1] == 'm')
				return true;
		}
		start = i + 1;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pyargv a, b;
	const char *exe;
	char out[PYARGV_NAME_MAX + 4];
	size_t len;
	int ret, ret2, n;
	char *cmd;

	if (!size)
		return 0;
	exe = exes[data[0] % (sizeof(exes) / sizeof(exes[0]))];
	len = size - 1 > PYARGV_CMDLINE_MAX ? PYARGV_CMDLINE_MAX : size - 1;
	/* a copy of exactly @len bytes: a read past the end is caught by ASan */
	cmd = malloc(len ? len : 1);
	if (!cmd)
		return 0;
	memcpy(cmd, data + 1, len);
	ret = pyargv_parse(cmd, len, exe, &a);
	if (ret && ret != -ENOENT && ret != -EBADMSG && ret != -ENAMETOOLONG)
		broken("returned %d", ret);
	ret2 = pyargv_parse(cmd, len, exe, &b);
	if (ret2 != ret || (!ret && (a.kind != b.kind || strcmp(a.name, b.name))))
		broken("the same input gave %d then %d", ret, ret2);
	if (!ret) {
		size_t nl = strnlen(a.name, sizeof(a.name));

		if (nl == sizeof(a.name) || !nl)
			broken("a name of %zu bytes", nl);
		if (a.kind != PYARGV_SCRIPT && a.kind != PYARGV_MODULE)
			broken("kind %d", a.kind);
		if (!ends_an_argument(cmd, len, a.name, a.kind == PYARGV_MODULE))
			broken("\"%s\" is no whole argument of the input", a.name);
		n = pyargv_format(&a, out, sizeof(out));
		if (n <= 0 || (size_t)n != strlen(out) || (size_t)n != nl + (a.kind == PYARGV_MODULE ? 3 : 0))
			broken("\"%s\" recorded as \"%s\" (%d)", a.name, out, n);
		if (a.kind == PYARGV_SCRIPT && a.name[0] == '-')
			broken("a script \"%s\" that reads as an option", a.name);
	}
	free(cmd);
	return 0;
}
