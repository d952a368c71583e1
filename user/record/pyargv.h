/* SPDX-License-Identifier: BSD-2-Clause */
/* What a CPython process runs (its script or -m module), from its command line. */
#ifndef SFPROF_PYARGV_H
#define SFPROF_PYARGV_H

#include <stdbool.h>
#include <stddef.h>

/* Bytes of /proc/PID/cmdline read at most: a script comes within the first few arguments. */
#define PYARGV_CMDLINE_MAX	4096
/* The longest script path or module name kept, in bytes; a longer one is not kept. */
#define PYARGV_NAME_MAX		255

enum pyargv_kind { PYARGV_SCRIPT = 1, PYARGV_MODULE = 2 };

struct pyargv {
	enum pyargv_kind kind;
	char name[PYARGV_NAME_MAX + 1];	/* the script's path as given, or the module's name */
};

/**
 * pyargv_is_interpreter() - whether @path's basename is a CPython
 * interpreter's: python, python3, python3.11, python3.13t, python3.11d (a
 * " (deleted)" suffix, an interpreter upgraded while it runs, is allowed).
 */
bool pyargv_is_interpreter(const char *path);

/**
 * pyargv_parse() - what a CPython interpreter runs, from its command line:
 * @len bytes of /proc/PID/cmdline at @cmdline (NUL-separated arguments, maybe
 * cut short or not NUL-terminated; untrusted), when argv[0]'s or @exe's
 * (NULL: unknown) basename is an interpreter's. Options are skipped as
 * CPython's own parser does (flags combined as in -uOB, -W/-X/-Q with their
 * argument in the same or the next argument, --check-hash-based-pycs MODE,
 * "--" ends them); the first argument after them is the script, "-m NAME"
 * (or -mNAME) a module. Nothing else is kept: never a -c command nor the
 * script's own arguments.
 * @return 0 with @out set; -ENOENT for no script (not an interpreter, -c,
 * stdin, the REPL, a --help or --version that exits); -EBADMSG for a command
 * line CPython would refuse or that was cut before its script; -ENAMETOOLONG
 * for a name longer than PYARGV_NAME_MAX.
 */
int pyargv_parse(const char *cmdline, size_t len, const char *exe, struct pyargv *out);

/**
 * pyargv_format() - @a as the profile records it: the script's path, or
 * "-m NAME" for a module, into @buf of @cap bytes.
 * @return its length, or -ENOSPC when it does not fit.
 */
int pyargv_format(const struct pyargv *a, char *buf, size_t cap);

/**
 * pyargv_read() - pyargv_parse() and pyargv_format() of live process @pid's
 * /proc/PID/cmdline (PYARGV_CMDLINE_MAX bytes at most), whose executable is
 * @exe. @return a malloc'd string, or NULL when it runs no script (or is
 * gone, or memory ran out).
 */
char *pyargv_read(unsigned pid, const char *exe);

#endif
