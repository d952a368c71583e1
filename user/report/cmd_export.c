/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof export: a profile as symbolizer markup, collapsed stacks, pprof, OTLP or an SVG flame graph. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "export.h"
#include "session.h"
#include "util/outfile.h"

static const char usage[] =
	"usage: sfprof export [-i FILE] -f FORMAT [-o OUT] [--title TEXT] [--min-width PX]\n"
	"                     [--diff OLD] [--keep-addresses] [--event NAME]\n"
	"                     [--debug-file-directory DIR]... [--no-debuginfod] [--kallsyms FILE]\n"
	"                     [--no-inline] [--python-only]\n"
	"\n"
	"Write a profile (default sfprof.data) in another tool's format, to OUT or stdout.\n"
	"\n"
	"formats:\n"
	"  markup     symbolizer markup for `llvm-symbolizer --filter-markup`: per process\n"
	"             {{{reset}}}, a {{{module}}} per binary with a build ID, an {{{mmap}}}\n"
	"             per mapping, then per sample a line `comm pid/tid [cpu] time:` and\n"
	"             its user frames as {{{bt}}} (frame 0 :pc, callers :ra). Kernel frames\n"
	"             are left out: the filter has no vmlinux to name them. A frame in\n"
	"             code without a build ID is written as plain text, named by sfprof.\n"
	"  collapsed  one line per distinct stack: the process name, then its frames\n"
	"             outermost first (user, then kernel frames with the suffix _[k]),\n"
	"             joined by ';', a space and the number of samples. For FlameGraph's\n"
	"             flamegraph.pl and speedscope. Code no symbol covers is one\n"
	"             frame [MODULE] per module, as stackcollapse-perf.pl folds perf\n"
	"             script's [unknown] frames ([unknown] outside every module),\n"
	"             or MODULE+0xOFFSET per address with --keep-addresses;\n"
	"             a ';' in a name is written \\x3b.\n"
	"  pprof      gzipped profile.proto for `go tool pprof`: sample types\n"
	"             samples/count and cpu/nanoseconds, mappings with build IDs,\n"
	"             locations, functions, and pid, tid and thread labels.\n"
	"  otlp       an OpenTelemetry ExportProfilesServiceRequest (profiles\n"
	"             v1development, protobuf, not compressed), as an OTLP/HTTP\n"
	"             exporter posts it: one resource per process (service.name,\n"
	"             host.name, process.pid, process.executable.name and .path,\n"
	"             container.id), CPU time in nanoseconds with the period, one\n"
	"             dictionary of strings, mappings (build IDs as\n"
	"             process.executable.build_id.gnu), locations, functions, stacks\n"
	"             and attributes (thread.id, thread.name) shared by all.\n"
	"  svg        an interactive flame graph, root at the bottom: hover for a\n"
	"             frame's share, click to zoom, Ctrl-F to search. Self-contained.\n"
	"             Frames are named as in collapsed. With --diff OLD, a differential\n"
	"             flame graph (FlameGraph's difffolded.pl -n, flamegraph.pl): widths\n"
	"             from this profile, OLD's counts scaled to its total; a frame is\n"
	"             red where it grew, blue where it shrank, deeper the larger the\n"
	"             change; its title adds the change in points of the total.\n"
	"\n"
	"A profile holding several events (-e, --off-cpu) gives one event's samples\n"
	"(collapsed, pprof, otlp, svg): --event's, else the first with samples (said on\n"
	"stderr). Their weights mean that event's unit: samples, events counted, or\n"
	"nanoseconds off the CPU (offcpu-time, pprof's offcpu/nanoseconds).\n"
	"\n"
	"Names, paths and comms are escaped in every format: bytes that are not UTF-8\n"
	"and control characters as \\xHH, \\n, \\t, \\r or \\uHHHH, a backslash as \\\\;\n"
	"markup '{' and '}' as \\xHH too (and ':' in its fields), svg XML's characters\n"
	"as entities.\n"
	"\n"
	"options:\n"
	"  -i, --input FILE            the profile (default sfprof.data)\n"
	"  -f, --format FORMAT         markup, collapsed, pprof, otlp or svg\n"
	"  -o, --output OUT            write to OUT instead of stdout: a new file, owner-only\n"
	"                              (0600, as the profile), put in place when complete;\n"
	"                              a symbolic link there is refused\n"
	"      --title TEXT            the flame graph's title (svg)\n"
	"      --min-width PX          leave out frames narrower than PX pixels (svg,\n"
	"                              default 0.1, as flamegraph.pl)\n"
	"      --diff OLD              a differential flame graph against profile OLD (svg)\n"
	"      --keep-addresses        unnamed code as MODULE+0xOFFSET, one frame per\n"
	"                              address (collapsed, svg)\n"
	"      --event NAME            the samples of event NAME only (as report names it:\n"
	"                              cpu-clock, offcpu-time, page-faults, ...)\n"
	"      --debug-file-directory DIR\n"
	"                              look for DIR/.build-id/xx/rest.debug too\n"
	"      --no-debuginfod         do not ask debuginfod even if DEBUGINFOD_URLS is set\n"
	"      --kallsyms FILE         kernel symbols (default /proc/kallsyms)\n"
	"      --no-inline             no inlined functions as frames of their own (DWARF's)\n"
	"      --python-only           Python functions alone: no native or kernel frames\n";

enum { OPT_TITLE = 256, OPT_MIN_WIDTH, OPT_DIFF, OPT_KEEP_ADDRESSES, OPT_EVENT };

static const char *const formats[] = { "markup", "collapsed", "pprof", "otlp", "svg" };

static int run(const struct session *s, const char *format, FILE *out,
	       const struct svg_opts *svg)
{
	if (!strcmp(format, "markup"))
		return export_markup(s, out);
	if (!strcmp(format, "collapsed"))
		return export_collapsed(s, out, svg->keep_addresses);
	if (!strcmp(format, "pprof"))
		return export_pprof(s, out);
	if (!strcmp(format, "otlp"))
		return export_otlp(s, out);
	return export_svg(s, out, svg);
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "title", required_argument, NULL, OPT_TITLE },
		{ "min-width", required_argument, NULL, OPT_MIN_WIDTH },
		{ "diff", required_argument, NULL, OPT_DIFF },
		{ "keep-addresses", no_argument, NULL, OPT_KEEP_ADDRESSES },
		{ "event", required_argument, NULL, OPT_EVENT },
		SYM_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = "sfprof.data", *format = NULL, *output = NULL, *base_path = NULL;
	const char *event = NULL;
	struct svg_opts svg = { .min_width = 0.1 };
	struct session_opts sopts = { 0 };
	const char **dirs = NULL;
	struct session *s = NULL, *base = NULL;
	struct outfile *file = NULL;
	char *deftitle = NULL;
	FILE *out = stdout;
	bool damaged = false;
	int c, err, ret = 1, ev = 0;
	bool known = false;

	dirs = calloc(argc, sizeof(*dirs));
	if (!dirs) {
		fprintf(stderr, "sfprof export: out of memory\n");
		return 1;
	}
	while ((c = getopt_long(argc, argv, "i:f:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			path = optarg;
			break;
		case 'f':
			format = optarg;
			break;
		case 'o':
			output = strcmp(optarg, "-") ? optarg : NULL;
			break;
		case OPT_TITLE:
			svg.title = optarg;
			break;
		case OPT_MIN_WIDTH: {
			char *end;

			svg.min_width = strtod(optarg, &end);
			if (*end || end == optarg || !(svg.min_width >= 0 && svg.min_width <= 1e6)) {
				fprintf(stderr, "sfprof export: --min-width: '%s' is not a number of "
					"pixels\n", optarg);
				ret = 2;
				goto out;
			}
			break;
		}
		case OPT_DIFF:
			base_path = optarg;
			break;
		case OPT_KEEP_ADDRESSES:
			svg.keep_addresses = true;
			break;
		case OPT_EVENT:
			event = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			ret = 0;
			goto out;
		default:
			if (cli_option_default(c, optarg, &sopts.sym, dirs, usage))
				break;
			ret = 2;
			goto out;
		}
	}
	for (size_t i = 0; format && i < sizeof(formats) / sizeof(formats[0]); i++)
		known |= !strcmp(format, formats[i]);
	if (optind != argc || !format || !known) {
		if (optind != argc)
			fprintf(stderr, "sfprof export: unexpected argument '%s'\n", argv[optind]);
		else if (!format)
			fprintf(stderr, "sfprof export: say which format with -f FORMAT\n");
		else
			fprintf(stderr, "sfprof export: unknown format '%s' (markup, collapsed, "
				"pprof, otlp or svg)\n", format);
		fputs(usage, stderr);
		ret = 2;
		goto out;
	}
	if (base_path && strcmp(format, "svg")) {
		fprintf(stderr, "sfprof export: --diff makes a differential flame graph: -f svg\n");
		ret = 2;
		goto out;
	}
	if (!output && !strcmp(format, "pprof") && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "sfprof export: pprof output is gzipped binary: use -o FILE\n");
		ret = 2;
		goto out;
	}
	if (!output && !strcmp(format, "otlp") && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "sfprof export: otlp output is binary protobuf: use -o FILE\n");
		ret = 2;
		goto out;
	}
	if (!(s = cli_session_open(path, &sopts, &damaged)))
		goto out;
	print_replaced(s);
	/* markup is a sample per line, whatever its event: all of them unless asked */
	if ((strcmp(format, "markup") || event) && (ev = pick_event(s, path, event)) < 0)
		goto out;
	if (base_path) {
		if (!(base = cli_session_open(base_path, &sopts, &damaged)))
			goto out;
		print_replaced(base);
		/* the baseline's samples of the same event */
		if (pick_event(base, base_path, session__event(s, ev)->name) < 0)
			goto out;
		svg.base = base;
	}
	if (!svg.title) {
		const char *cmdline = session__meta(s)->cmdline;

		/* export_svg() escapes the title: it may be the profiled command's */
		if (asprintf(&deftitle, "sfprof: %s", cmdline && *cmdline ? cmdline : path) < 0) {
			deftitle = NULL;
			fprintf(stderr, "sfprof export: out of memory\n");
			goto out;
		}
		svg.title = deftitle;
	}
	if (output && !(file = outfile__create(output))) {
		if (errno == ELOOP)
			fprintf(stderr, "sfprof export: %s: a symbolic link: not followed (name the "
				"file it points to)\n", output);
		else
			fprintf(stderr, "sfprof export: %s: %s\n", output, strerror(errno));
		goto out;
	}
	if (file)
		out = outfile__stream(file);
	err = run(s, format, out, &svg);
	if (file) {
		if (err)
			outfile__discard(file);
		else
			err = outfile__commit(file);
		file = NULL;
	} else if (fflush(out) && !err) {
		err = -errno;
	}
	if (err) {
		fprintf(stderr, "sfprof export: %s: %s\n", output ? output : "stdout",
			strerror(-err));
		goto out;
	}
	ret = damaged ? 1 : 0;
out:
	session__free(s);
	session__free(base);
	free(dirs);
	free(deftitle);
	return ret;
}
