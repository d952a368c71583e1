/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof symbolize: a symbolizing filter for symbolizer markup (stdin or files to stdout). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "filter.h"
#include "symbolize/symbolize.h"
#include "util/text.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sfprof symbolize [OPTIONS] [FILE...]\n"
		"\n"
		"Copy lines of text (the FILEs, or stdin) to stdout with the symbolizer markup\n"
		"elements in them replaced: {{{symbol}}}, {{{pc}}}, {{{data}}}, {{{bt}}} (a line\n"
		"per frame, inlined frames expanded), {{{hexdict}}}, {{{dumpfile}}}, using the\n"
		"context of {{{reset}}}, {{{module}}} and {{{mmap}}}. Binaries are found by build\n"
		"ID as report finds them. An element that cannot be handled is reported on stderr\n"
		"as FILE:LINE:COLUMN: message and the exit status is 1.\n"
		"\n"
		"  --debug-file-directory DIR  look for DIR/.build-id/xx/rest.debug (repeatable)\n"
		"  --buildid-dir DIR           a build-ID tree to look in (repeatable)\n"
		"  --no-debuginfod             never ask a debuginfod server\n"
		"  --color[=always|auto|never] keep the markup's SGR colours (auto: on a terminal)\n"
		"  --no-color                  strip them (the default when stdout is not a terminal)\n"
		"  -h, --help\n");
}

struct source {
	const char *name;
};

static void report(void *ctx, unsigned long line, size_t col, const char *msg)
{
	const struct source *src = ctx;

	fprintf(stderr, "sfprof symbolize: %s:%lu:%zu: ", src->name, line, col);
	text_put(stderr, msg, 0);
	putc('\n', stderr);
}

/* Filter @in to stdout. @return 0, or -errno when reading or memory failed. */
static int filter_stream(struct markup_filter *f, FILE *in)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int err = 0;

	while ((n = getline(&line, &cap, in)) > 0) {
		/* a last line without its newline gets one, as llvm-symbolizer gives it */
		if (line[n - 1] != '\n') {
			if ((size_t)n + 2 > cap) {
				char *grown = realloc(line, n + 2);

				if (!grown) {
					free(line);
					return -ENOMEM;
				}
				line = grown;
				cap = n + 2;
			}
			line[n++] = '\n';
			line[n] = 0;
		}
		if ((err = markup_filter__line(f, line, n)))
			break;
	}
	if (!err && ferror(in))
		err = -EIO;
	free(line);
	return err;
}

int cmd_symbolize(int argc, char **argv)
{
	enum { OPT_COLOR = 0x2000, OPT_NO_COLOR };
	static const struct option longopts[] = {
		SYM_OPTIONS,
		{ "color", optional_argument, NULL, OPT_COLOR },
		{ "no-color", no_argument, NULL, OPT_NO_COLOR },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct symbolizer_opts so = { 0 };
	struct markup_filter_opts fo = { .error = report };
	struct markup_filter *f = NULL;
	struct symbolizer *s = NULL;
	struct source src = { "<stdin>" };
	const char **dirs = calloc(argc + 1, sizeof(*dirs));
	int color = -1, c, status = 0;
	unsigned long errors;

	if (!dirs) {
		fprintf(stderr, "sfprof symbolize: out of memory\n");
		return 1;
	}
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (sym_option(c, optarg, &so, dirs))
			continue;
		switch (c) {
		case OPT_COLOR:
			if (!optarg || !strcmp(optarg, "always"))
				color = 1;
			else if (!strcmp(optarg, "never"))
				color = 0;
			else if (!strcmp(optarg, "auto"))
				color = -1;
			else {
				fprintf(stderr, "sfprof symbolize: --color takes always, auto or never, not '%s'\n",
					optarg);
				free(dirs);
				return 2;
			}
			break;
		case OPT_NO_COLOR:
			color = 0;
			break;
		case 'h':
			usage(stdout);
			free(dirs);
			return 0;
		default:
			usage(stderr);
			free(dirs);
			return 2;
		}
	}
	fo.color = color < 0 ? isatty(STDOUT_FILENO) : color;
	fo.ctx = &src;
	if (!(s = symbolizer__new(&so)) || !(f = markup_filter__new(s, stdout, &fo))) {
		fprintf(stderr, "sfprof symbolize: out of memory\n");
		status = 1;
		goto out;
	}
	/* files are one stream: context carries from one to the next, as cat would give them */
	for (int i = optind; i == optind || i < argc; i++) {
		FILE *in = stdin;
		int err;

		if (i < argc && strcmp(argv[i], "-")) {
			if (!(in = fopen(argv[i], "re"))) {
				fprintf(stderr, "sfprof symbolize: %s: %m\n", argv[i]);
				status = 1;
				continue;
			}
			src.name = argv[i];
		} else {
			src.name = "<stdin>";
		}
		err = filter_stream(f, in);
		markup_filter__end_file(f);
		if (in != stdin)
			fclose(in);
		if (err) {
			fprintf(stderr, "sfprof symbolize: %s: %s\n", src.name, strerror(-err));
			status = 1;
		}
		if (i >= argc)
			break;
	}
	markup_filter__finish(f);
	errors = markup_filter__errors(f);
	if (errors) {
		fprintf(stderr, "sfprof symbolize: %lu element%s could not be handled\n", errors,
			errors == 1 ? "" : "s");
		status = 1;
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "sfprof symbolize: writing the output: %m\n");
		status = 1;
	}
out:
	markup_filter__free(f);
	symbolizer__free(s);
	free(dirs);
	return status;
}
