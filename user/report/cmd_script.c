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
	"usage: sfprof script [-i FILE] [-F FIELDS] [--debug-file-directory DIR]...\n"
	"                     [--no-debuginfod] [--kallsyms FILE]\n"
	"                     [--no-inline] [--python-only]\n"
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
	"time and the event is wall-time; an off-CPU sample (offcpu-time) weighs the\n"
	"nanoseconds its thread was off the CPU. In a file of several events each\n"
	"sample names its own, padded to the longest name as perf pads them.\n"
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
	"  -F, --fields FIELDS         what to print, as perf script's -F: comma-separated\n"
	"                              comm, tid, pid, time, cpu, event, period, ip, sym,\n"
	"                              dso, symoff, srcline (the default: comm, pid, tid,\n"
	"                              cpu, time, period, event, ip, sym, symoff, dso);\n"
	"                              +FIELD and -FIELD add to or take from the default.\n"
	"                              Without ip, one line per sample and no frames;\n"
	"                              sym, dso, symoff and srcline need ip\n"
	"      --debug-file-directory DIR\n"
	"                              look for DIR/.build-id/xx/rest.debug files too\n"
	"      --no-debuginfod         never ask debuginfod, even with DEBUGINFOD_URLS set\n"
	"      --kallsyms FILE         kernel symbols (default /proc/kallsyms)\n"
	"      --no-inline             no inlined functions as frames of their own (DWARF's)\n"
	"      --python-only           Python functions alone: no native or kernel frames\n";

enum field {
	F_COMM, F_TID, F_PID, F_TIME, F_CPU, F_EVENT, F_PERIOD, F_IP, F_SYM, F_DSO, F_SYMOFF,
	F_SRCLINE, NFIELDS
};

static const char *const field_names[NFIELDS] = {
	"comm", "tid", "pid", "time", "cpu", "event", "period", "ip", "sym", "dso", "symoff",
	"srcline",
};

#define F(x) (1u << (x))
#define DEFAULT_FIELDS (F(F_COMM) | F(F_PID) | F(F_TID) | F(F_CPU) | F(F_TIME) | F(F_PERIOD) | \
			F(F_EVENT) | F(F_IP) | F(F_SYM) | F(F_SYMOFF) | F(F_DSO))

/* perf script's -F: a list, or +FIELD/-FIELD changes to the default. @return 0 or -EINVAL (said). */
static int parse_fields(const char *arg, unsigned *fields)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	bool change = arg[0] == '+' || arg[0] == '-';
	unsigned f = change ? *fields : 0;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char sign = change ? tok[0] : 0;
		size_t k;

		if (change && sign != '+' && sign != '-') {
			fprintf(stderr, "sfprof script: -F: '%s': with +FIELD or -FIELD, every field "
				"needs its sign\n", tok);
			err = -EINVAL;
			break;
		}
		for (k = 0; k < NFIELDS && strcmp(tok + !!sign, field_names[k]); k++)
			;
		if (k == NFIELDS) {
			fprintf(stderr, "sfprof script: -F: unknown field '%s' (fields: comm, tid, "
				"pid, time, cpu, event, period, ip, sym, dso, symoff, srcline)\n",
				tok + !!sign);
			err = -EINVAL;
			break;
		}
		if (sign == '-')
			f &= ~F(k);
		else
			f |= F(k);
	}
	free(copy);
	if (!err && !f) {
		fprintf(stderr, "sfprof script: -F: no field left to print\n");
		err = -EINVAL;
	}
	if (!err && !(f & F(F_IP)) && (f & (F(F_SYM) | F(F_DSO) | F(F_SYMOFF) | F(F_SRCLINE)))) {
		/* as perf: the frames' names are printed with their addresses */
		fprintf(stderr, "sfprof script: -F: sym, dso, symoff and srcline are printed with "
			"the frames: they need ip\n");
		err = -EINVAL;
	}
	*fields = f;
	return err;
}

/*
 * A Python frame's module (its file, escaped) with its spaces as "\x20": the
 * interpreter's own files are "<frozen importlib._bootstrap>", and tools
 * that read perf script's text (stackcollapse-perf.pl) take the module in
 * parentheses for a word. Frees @mod. @return the new string, or NULL.
 */
static char *py_module(char *mod)
{
	size_t len = strlen(mod);
	char *out = malloc(len * 4 + 1), *o = out;

	if (out) {
		for (size_t i = 0; i < len; i++)
			if (mod[i] == ' ') {
				memcpy(o, "\\x20", 4);
				o += 4;
			} else {
				*o++ = mod[i];
			}
		*o = '\0';
	}
	free(mod);
	return out;
}

/*
 * The text of frame @f's line with @fields, made once per distinct frame:
 * the name and the module escaped (text.h), so that no name can start a
 * line of its own. A frame no symbol covers is named module+0xoffset, once:
 * perf script puts no offset after a name it did not find either.
 */
static char *frame_line(const struct session_frame *f, unsigned fields)
{
	char name[320], off[24] = "", addr[24] = "", *line, *shown = NULL, *mod = NULL;
	char src[280] = "";
	int n = -1;

	if (f->omitted) {
		n = asprintf(&line, "\t%16x [%" PRIu64 " frames omitted] ([omitted])\n", 0,
			     f->omitted);
		return n < 0 ? NULL : line;
	}
	/* [execve: old image] and Python frames are no machine code: nothing to be at an offset of */
	if (f->sym && !f->old_image && !f->python && (fields & F(F_SYMOFF)))
		snprintf(off, sizeof(off), "+0x%" PRIx64, f->offset);
	snprintf(addr, sizeof(addr), "%16" PRIx64, f->kernel || !f->module ? f->addr : f->rel);
	if ((fields & F(F_SRCLINE)) && f->file && f->line) {
		const char *base = strrchr(f->file, '/');
		char *esc = text_dup(base ? base + 1 : f->file, 0);

		if (!esc)
			return NULL;
		snprintf(src, sizeof(src), "\n  %s:%u", esc, f->line);
		free(esc);
	}
	shown = text_dup(session_frame_name(f, name, sizeof(name)), 0);
	/* perf script --inline (perf 6.1) names an inlined frame's module "(inlined)" */
	mod = text_dup(f->kernel ? "[kernel.kallsyms]" : f->inlined ? "inlined" : f->dso_path ?
		       f->dso_path : f->dso ? f->dso : "[unknown]", 0);
	if (mod && f->python && strchr(mod, ' '))
		mod = py_module(mod);	/* NULL when out of memory: no line, as below */
	if (shown && mod)
		n = asprintf(&line, "\t%s%s%s%s%s%s%s\n", addr,
			     fields & (F(F_SYM) | F(F_SYMOFF)) ? " " : "",
			     fields & (F(F_SYM) | F(F_SYMOFF)) ? shown : "", off,
			     fields & F(F_DSO) ? " (" : "", fields & F(F_DSO) ? mod : "",
			     fields & F(F_DSO) ? ")" : "");
	if (n >= 0 && *src) {
		/* perf puts the source line under the frame's line */
		char *with;

		line[n - 1] = 0;
		n = asprintf(&with, "%s%s\n", line, src);
		free(line);
		line = with;
	}
	free(shown);
	free(mod);
	return n < 0 ? NULL : line;
}

/* A sample's first line, as perf script's perf_sample__fprintf_start() and process_event(). */
static void print_head(struct session *s, const struct session_sample *smp, unsigned fields,
		       int name_width)
{
	const struct session_event *ev = session__event(s, smp->event);
	/* an imported trace: the weight is ns of self time, the event wall time */
	const char *event = ev->name ? ev->name : "?";

	if (fields & F(F_COMM)) {
		char *comm = text_dup(smp->comm ? smp->comm : ":-1", 0);

		/* perf pads the name when no frames follow */
		printf(fields & F(F_IP) ? "%s " : "%16s ", comm ? comm : "?");
		free(comm);
	}
	if ((fields & F(F_PID)) && (fields & F(F_TID)))
		printf("%5u/%-5u ", smp->pid, smp->tid);
	else if (fields & F(F_PID))
		printf("%5u ", smp->pid);
	else if (fields & F(F_TID))
		printf("%5u ", smp->tid);
	if (fields & F(F_CPU))
		printf("[%03u] ", smp->cpu);
	if (fields & F(F_TIME)) {
		uint64_t usecs = smp->time_ns / 1000;
		char time[32];

		snprintf(time, sizeof(time), "%" PRIu64 ".%06" PRIu64, usecs / 1000000,
			 usecs % 1000000);
		printf("%12s: ", time);
	}
	if (fields & F(F_PERIOD))
		printf("%10u ", smp->weight);
	if (fields & F(F_EVENT)) {
		char *name = text_dup(event, 0);

		printf("%*s: ", name_width, name ? name : "?");
		free(name);
	}
}

static int print_samples(struct session *s, unsigned fields)
{
	size_t nframes = session__nframes(s), nsamples = session__nsamples(s);
	char **lines = calloc(nframes ? nframes : 1, sizeof(*lines));
	int err = 0, name_width = 0;

	if (!lines)
		return -ENOMEM;
	/* perf pads event names to the longest of the file's */
	for (size_t e = 0; e < session__nevents(s); e++) {
		const char *name = session__event(s, e)->name;
		int w = name ? (int)text_width(name, 0) : 1;

		if (e == 0 && session__nevents(s) > 1) {
			bool used = false;

			for (size_t i = 0; i < nsamples && !used; i++)
				used = !session__sample(s, i)->event;
			if (!used)
				continue;
		}
		if (w > name_width)
			name_width = w;
	}
	for (size_t i = 0; i < nsamples && !err; i++) {
		const struct session_sample *smp = session__sample(s, i);
		const struct session_stack *st = session__stack(s, smp->stack);

		print_head(s, smp, fields, name_width);
		putchar('\n');
		if (!(fields & F(F_IP)))
			continue;
		for (uint32_t j = 0; j < st->count; j++) {
			uint32_t fi = st->frames[j];

			if (!lines[fi] && !(lines[fi] = frame_line(session__frame(s, fi), fields))) {
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
		{ "fields", required_argument, NULL, 'F' },
		SYM_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct session_opts sopts = { 0 };
	const char *path = "sfprof.data";
	static char obuf[1 << 16];
	struct session *s;
	const char **dirs;
	bool damaged = false;
	unsigned fields = DEFAULT_FIELDS;
	int c, err, ret = 1;

	dirs = calloc(argc, sizeof(*dirs));
	if (!dirs) {
		fprintf(stderr, "sfprof script: out of memory\n");
		return 1;
	}
	while ((c = getopt_long(argc, argv, "i:F:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			path = optarg;
			break;
		case 'F':
			if ((err = parse_fields(optarg, &fields))) {
				if (err == -ENOMEM)
					fprintf(stderr, "sfprof script: out of memory\n");
				free(dirs);
				return 2;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			free(dirs);
			return 0;
		default:
			if (cli_option_default(c, optarg, &sopts.sym, dirs, usage))
				break;
			free(dirs);
			return 2;
		}
	}
	if (optind != argc) {
		fputs(usage, stderr);
		free(dirs);
		return 2;
	}
	sopts.sym.no_lines = !(fields & F(F_SRCLINE));
	s = cli_session_open(path, &sopts, &damaged);
	if (!s) {
		free(dirs);
		return 1;
	}
	print_replaced(s);
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	if ((err = print_samples(s, fields)))
		fprintf(stderr, "sfprof script: %s: %s\n", path, strerror(-err));
	else if (fflush(stdout) || ferror(stdout))
		fprintf(stderr, "sfprof script: writing: %s\n", strerror(errno));
	else
		ret = damaged ? 1 : 0;
	session__free(s);
	free(dirs);
	return ret;
}
