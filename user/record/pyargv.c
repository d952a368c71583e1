/* SPDX-License-Identifier: BSD-2-Clause */
/* What a CPython process runs (its script or -m module), from its command line. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pyargv.h"

/* One argument of a command line: @len bytes at @s, @cut when the buffer ended before its NUL. */
struct arg {
	const char *s;
	size_t len;
	bool cut;
};

struct args {
	const char *p, *end;
};

/* The next argument of @a into @out. @return false when there is none. */
static bool next_arg(struct args *a, struct arg *out)
{
	const char *nul;

	if (a->p >= a->end)
		return false;
	nul = memchr(a->p, '\0', a->end - a->p);
	out->s = a->p;
	out->len = nul ? (size_t)(nul - a->p) : (size_t)(a->end - a->p);
	out->cut = !nul;
	a->p = nul ? nul + 1 : a->end;
	return true;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Whether the @len bytes at @s (a path) name an interpreter: see pyargv_is_interpreter(). */
static bool interpreter_n(const char *s, size_t len)
{
	static const char deleted[] = " (deleted)";
	const size_t dl = sizeof(deleted) - 1;
	const char *base = s, *end;
	size_t i, n;

	for (i = 0; i < len; i++)
		if (s[i] == '/')
			base = s + i + 1;
	end = s + len;
	if ((size_t)(end - base) >= dl && !memcmp(end - dl, deleted, dl))
		end -= dl;
	n = end - base;
	if (n < 6 || memcmp(base, "python", 6))
		return false;
	i = 6;
	/* a version: 3, 3.11, 2.7 */
	if (i < n && is_digit(base[i])) {
		while (i < n && is_digit(base[i]))
			i++;
		if (i + 1 < n && base[i] == '.' && is_digit(base[i + 1])) {
			i++;
			while (i < n && is_digit(base[i]))
				i++;
		}
	}
	/* ABI flags: d (debug), m (pymalloc, before 3.8), t (free-threaded) */
	for (size_t flags = 0; i < n && flags < 3; flags++, i++)
		if (!strchr("dmt", base[i]) || !base[i])
			return false;
	return i == n;
}

bool pyargv_is_interpreter(const char *path)
{
	return path && interpreter_n(path, strlen(path));
}

/* A module name as CPython imports one: identifiers (letters, digits, '_', non-ASCII) and dots. */
static bool module_name(const char *s, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!(c >= 0x80 || c == '_' || c == '.' || is_digit(c) ||
		      (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
			return false;
	}
	return true;
}

/* Keep @len bytes at @s as @out's name of @kind. @return 0 or -ENAMETOOLONG. */
static int keep(struct pyargv *out, enum pyargv_kind kind, const char *s, size_t len)
{
	if (len > PYARGV_NAME_MAX)
		return -ENAMETOOLONG;
	out->kind = kind;
	memcpy(out->name, s, len);
	out->name[len] = '\0';
	return 0;
}

/* The script argument @a (after the options): a path; "-" (stdin) is none. */
static int script(const struct arg *a, struct pyargv *out)
{
	if (a->cut)
		return -EBADMSG;	/* its end is not known */
	if (a->len == 1 && a->s[0] == '-')
		return -ENOENT;
	/*
	 * "" is no file CPython can open; a path starting with '-' (only
	 * possible after "--") would read as an option, or as "-m NAME", in
	 * the recorded form
	 */
	if (!a->len || a->s[0] == '-')
		return -EBADMSG;
	return keep(out, PYARGV_SCRIPT, a->s, a->len);
}

static int module(const char *s, size_t len, bool cut, struct pyargv *out)
{
	if (cut || !module_name(s, len))
		return -EBADMSG;
	return keep(out, PYARGV_MODULE, s, len);
}

static bool arg_is(const struct arg *a, const char *lit)
{
	return !a->cut && a->len == strlen(lit) && !memcmp(a->s, lit, a->len);
}

/*
 * One argument of options (@a, "-" and a letter or more): skipped, with the
 * next one for an option whose argument it is. @return 1 to go on with the
 * next argument, 0 with @out set (-m), or the result of the command line.
 */
static int short_options(const struct arg *a, struct args *rest, struct pyargv *out)
{
	/* CPython's own (Python 3's, and Python 2's -t, -3) that take no argument */
	static const char flags[] = "bBdEiIOPqRsStuvx3";
	struct arg next;

	for (size_t i = 1; i < a->len; i++) {
		char c = a->s[i];

		if (c && strchr(flags, c))
			continue;
		if (c == 'h' || c == '?' || c == 'V')
			return -ENOENT;	/* prints and exits */
		if (c == 'c')
			return -ENOENT;	/* a command: never read, it may hold secrets */
		if (c == 'm' || c == 'W' || c == 'X' || c == 'Q') {
			const char *v = a->s + i + 1;
			size_t vlen = a->len - i - 1;
			bool cut = a->cut;

			/* the argument: the rest of this one (-mNAME, -Wignore), else the next */
			if (!vlen) {
				if (a->cut || !next_arg(rest, &next))
					return -EBADMSG;
				v = next.s;
				vlen = next.len;
				cut = next.cut;
			}
			if (c == 'm')
				return module(v, vlen, cut, out);
			/* an option's argument cut: what follows it is not known */
			return cut ? -EBADMSG : 1;
		}
		return -EBADMSG;	/* CPython refuses it and exits */
	}
	return a->cut ? -EBADMSG : 1;
}

int pyargv_parse(const char *cmdline, size_t len, const char *exe, struct pyargv *out)
{
	struct args rest = { cmdline, cmdline ? cmdline + len : NULL };
	struct arg a;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!cmdline || !next_arg(&rest, &a))
		return -ENOENT;	/* a kernel thread, a zombie */
	if (!pyargv_is_interpreter(exe) && !interpreter_n(a.s, a.len))
		return -ENOENT;
	while (next_arg(&rest, &a)) {
		if (!a.len || a.s[0] != '-' || (a.len == 1 && !a.cut))
			return script(&a, out);
		if (arg_is(&a, "--")) {
			if (!next_arg(&rest, &a))
				return -ENOENT;	/* the REPL */
			return script(&a, out);
		}
		if (a.len >= 2 && a.s[1] == '-') {
			/* CPython's long options: this one takes the next argument */
			if (arg_is(&a, "--check-hash-based-pycs")) {
				if (!next_arg(&rest, &a) || a.cut)
					return -EBADMSG;
				continue;
			}
			if (!a.cut && (!strncmp(a.s, "--help", 6) || arg_is(&a, "--version")))
				return -ENOENT;	/* prints and exits */
			return -EBADMSG;
		}
		ret = short_options(&a, &rest, out);
		if (ret <= 0)
			return ret;
	}
	return -ENOENT;	/* no script: the REPL */
}

int pyargv_format(const struct pyargv *a, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "%s%s", a->kind == PYARGV_MODULE ? "-m " : "", a->name);

	if (n < 0 || (size_t)n >= cap)
		return -ENOSPC;
	return n;
}

char *pyargv_read(unsigned pid, const char *exe)
{
	char path[64], buf[PYARGV_CMDLINE_MAX], name[PYARGV_NAME_MAX + 4];
	struct pyargv a;
	size_t len = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	while (len < sizeof(buf) && (n = read(fd, buf + len, sizeof(buf) - len)) > 0)
		len += n;
	close(fd);
	if (pyargv_parse(buf, len, exe, &a) || pyargv_format(&a, name, sizeof(name)) < 0)
		return NULL;
	return strdup(name);
}
