/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof script: each sample and its stack in the text of perf script, for FlameGraph. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "session.h"
#include "util/text.h"

static const char usage[] =
	"usage: sfprof script [-i FILE] [--debug-file-directory DIR]... [--no-debuginfod]\n"
	"                     [--kallsyms FILE]\n"
	"\n"
	"Print each sample of a profile (default sfprof.data) as `perf script` prints a\n"
	"cpu-clock recording with call graphs, so that FlameGraph's stackcollapse-perf.pl\n"
	"and speedscope read it as they read perf's:\n"
	"\n"
	"  COMM  PID/TID  [CPU] SECS.USECS:  WEIGHT cpu-clock: \n"
	"  \\t    ADDRESS SYMBOL+0xOFFSET (MODULE)      one line per frame, innermost first\n"
	"  (a blank line)\n"
	"\n"
	"In a profile made from a trace (sfprof import), WEIGHT is nanoseconds of self\n"
	"time and the event is wall-time.\n"
	"\n"
	"User addresses are module-relative (the ELF address), kernel ones absolute. An\n"
	"address no symbol covers is named module+0xoffset, with no offset after it (as\n"
	"perf script prints [unknown]; stackcollapse-perf.pl then keeps the module's\n"
	"name). Where the depth limit left frames out, a line says how many:\n"
	"[N frames omitted]. Names, modules and comms are printed escaped: bytes that\n"
	"are not UTF-8 and control characters as \\xHH, \\n, \\t, \\r or \\uHHHH, a\n"
	"backslash as \\\\.\n"
	"\n"
	"  -i, --input FILE            the profile\n"
	"      --debug-file-directory DIR\n"
	"                              look for DIR/.build-id/xx/rest.debug files too\n"
	"      --no-debuginfod         never ask debuginfod, even with DEBUGINFOD_URLS set\n"
	"      --kallsyms FILE         kernel symbols (default /proc/kallsyms)\n";

/*
 * The text of frame @f's line, made once per distinct frame: the name and
 * the module escaped (text.h), so that no name can start a line of its own.
 * A frame no symbol covers is named module+0xoffset, once: perf script puts
 * no offset after a name it did not find either.
 */
static char *frame_line(const struct session_frame *f)
{
	char name[320], off[24] = "", *line, *shown = NULL, *mod = NULL;
	int n = -1;

	if (f->omitted) {
		n = asprintf(&line, "\t%16x [%" PRIu64 " frames omitted] ([omitted])\n", 0,
			     f->omitted);
		return n < 0 ? NULL : line;
	}
	if (f->sym)
		snprintf(off, sizeof(off), "+0x%" PRIx64, f->offset);
	shown = text_dup(session_frame_name(f, name, sizeof(name)), 0);
	mod = text_dup(f->kernel ? "[kernel.kallsyms]" : f->dso_path ? f->dso_path
					 : f->dso ? f->dso : "[unknown]", 0);
	if (shown && mod)
		n = asprintf(&line, "\t%16" PRIx64 " %s%s (%s)\n",
			     f->kernel || !f->module ? f->addr : f->rel, shown, off, mod);
	free(shown);
	free(mod);
	return n < 0 ? NULL : line;
}

static int print_samples(struct session *s)
{
	/* an imported trace: the weight is ns of self time, the event wall time */
	const char *event = session__meta(s)->flags & PROFILE_F_WALL_NS ? "wall-time" : "cpu-clock";
	size_t nframes = session__nframes(s), nsamples = session__nsamples(s);
	char **lines = calloc(nframes ? nframes : 1, sizeof(*lines));
	int err = 0;

	if (!lines)
		return -ENOMEM;
	for (size_t i = 0; i < nsamples && !err; i++) {
		const struct session_sample *smp = session__sample(s, i);
		const struct session_stack *st = session__stack(s, smp->stack);
		uint64_t usecs = smp->time_ns / 1000;
		char time[32];

		snprintf(time, sizeof(time), "%" PRIu64 ".%06" PRIu64, usecs / 1000000,
			 usecs % 1000000);
		text_put(stdout, smp->comm ? smp->comm : ":-1", 0);
		printf(" %5u/%-5u [%03u] %12s: %10u %s: \n", smp->pid, smp->tid, smp->cpu, time,
		       smp->weight, event);
		for (uint32_t j = 0; j < st->count; j++) {
			uint32_t fi = st->frames[j];

			if (!lines[fi] && !(lines[fi] = frame_line(session__frame(s, fi)))) {
				err = -ENOMEM;
				break;
			}
			fputs(lines[fi], stdout);
		}
		putchar('\n');
	}
	for (size_t i = 0; i < nframes; i++)
		free(lines[i]);
	free(lines);
	return err;
}

int cmd_script(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		SYM_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct session_opts sopts = { 0 };
	const char *path = "sfprof.data";
	static char obuf[1 << 16];
	struct profile_diag diag;
	struct session *s;
	const char **dirs;
	bool damaged;
	int c, err, ret = 1;

	dirs = calloc(argc, sizeof(*dirs));
	if (!dirs) {
		fprintf(stderr, "sfprof script: out of memory\n");
		return 1;
	}
	while ((c = getopt_long(argc, argv, "i:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			path = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			free(dirs);
			return 0;
		default:
			if (sym_option(c, optarg, &sopts.sym, dirs))
				break;
			fputs(usage, stderr);
			free(dirs);
			return 2;
		}
	}
	if (optind != argc) {
		fputs(usage, stderr);
		free(dirs);
		return 2;
	}
	sopts.sym.no_lines = true;
	s = session__open(path, &sopts, &diag);
	if (!s) {
		fprintf(stderr, "sfprof script: %s\n", diag.reason);
		free(dirs);
		return 1;
	}
	damaged = profile_print_notices(path, session__status(s));
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	if ((err = print_samples(s)))
		fprintf(stderr, "sfprof script: %s: %s\n", path, strerror(-err));
	else if (fflush(stdout) || ferror(stdout))
		fprintf(stderr, "sfprof script: writing: %s\n", strerror(errno));
	else
		ret = damaged ? 1 : 0;
	session__free(s);
	free(dirs);
	return ret;
}
