/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof sframe: print the SFrame tables of ELF files, in sfprof's layout or readelf's. */

/*
 * Several files: each is printed in turn; one that fails gets one line on
 * stderr and nothing on stdout (with --readelf not even its "File:" line),
 * the others are still printed, and the exit status is 1 at the end. With
 * --readelf the "File:" lines appear as readelf prints them, whenever more
 * than one FILE is named. Usage errors exit with 2.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sfunwind/module.h"
#include "sfunwind/sframe.h"

#include "cmds.h"
#include "sframe_dump.h"

static void usage(FILE *f)
{
	fputs("usage: sfprof sframe [--readelf] [--from-eh-frame] FILE...\n"
	      "\n"
	      "Print the SFrame unwind table of each ELF FILE: a summary of the header, then\n"
	      "each function (start, size, symbol, FDE type, pauth key) and its rows (start\n"
	      "address, CFA, return address and frame pointer rules).\n"
	      "\n"
	      "  --readelf        print exactly what binutils 2.40 `readelf --sframe FILE` prints\n"
	      "                   (SFrame version 1, a section named .sframe)\n"
	      "  --from-eh-frame  print the table libsfunwind derives from .eh_frame instead,\n"
	      "                   as the unwinder uses it where .sframe has no row; rows marked\n"
	      "                   'unusable' state rules SFrame cannot hold. With --readelf,\n"
	      "                   the functions SFrame version 1 can hold, as one .sframe\n"
	      "                   section (not those with flexible or unusable rows, signal\n"
	      "                   trampolines or an outermost-frame row)\n"
	      "  -h, --help       print this help\n"
	      "\n"
	      "A file that cannot be printed (missing, not ELF, without SFrame data, corrupt)\n"
	      "gets one line on stderr and nothing on stdout; the other files are still\n"
	      "printed, and the exit status is then 1.\n", f);
}

struct opts {
	bool readelf;
	bool from_eh_frame;
	bool file_headers;	/* readelf's "File: NAME" lines, for several files */
};

static void report(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void report(const char *path, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "sfprof sframe: %s: ", path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Can SFrame version 1 (binutils 2.40) hold function @fde of @sf, rows and all? */
static bool v1_can_hold(const struct sfu_sframe *sf, const struct sfu_fde *fde)
{
	if (fde->flex || fde->signal_frame ||
	    (fde->fde_type == SFU_FDE_PCMASK && fde->rep_size != 16))
		return false;
	for (uint32_t k = 0; k < fde->num_fres; k++)
		if (sfu_sframe__row(sf, fde->first_row + k)->ra.kind == SFU_LOC_UNDEFINED)
			return false;
	return true;
}

/*
 * The derived table as an SFrame version 1 section would hold it, decoded, for
 * readelf's format. Returns NULL after reporting why.
 */
static struct sfu_sframe *derived_as_v1(const char *path, const struct sfu_sframe *sf)
{
	size_t n = 0, count = sfu_sframe__fde_count(sf), size = 0;
	struct sfu_sframe_func *funcs = calloc(count ? count : 1, sizeof(*funcs));
	SFU_OPTS(sfu_sframe_enc_opts, opts,
		.version = 1,
		.abi = sfu_sframe__header(sf)->abi,
		.big_endian = sfu_sframe__header(sf)->big_endian,
		.cfa_fixed_ra_offset = sfu_sframe__header(sf)->cfa_fixed_ra_offset
	);
	struct sfu_diag diag = { 0 };
	struct sfu_sframe *v1 = NULL;
	void *buf = NULL;
	int err;

	if (!funcs) {
		report(path, "%s", strerror(ENOMEM));
		return NULL;
	}
	for (size_t i = 0; i < count; i++) {
		const struct sfu_fde *fde = sfu_sframe__fde(sf, i);

		if (!v1_can_hold(sf, fde))
			continue;
		funcs[n++] = (struct sfu_sframe_func){
			.start = fde->start,
			.size = fde->size,
			.fde_type = fde->fde_type,
			.pauth_key = fde->pauth_key,
			.rep_size = fde->rep_size,
			/* a function's rows are consecutive in the table */
			.rows = fde->num_fres ? sfu_sframe__row(sf, fde->first_row) : NULL,
			.num_rows = fde->num_fres,
		};
		/* 32-bit starts relative to the section: place it at the lowest function */
		if (n == 1 || fde->start < opts.addr)
			opts.addr = fde->start;
	}
	err = sfu_sframe_encode(&opts, funcs, n, &buf, &size, &diag);
	if (!err) {
		v1 = sfu_sframe__new(buf, size, opts.addr, &diag);
		err = v1 ? 0 : -errno;
	}
	if (err)
		report(path, "cannot write the derived table as SFrame version 1: %s",
		       diag.reason[0] ? diag.reason : strerror(-err));
	free(buf);
	free(funcs);
	return v1;
}

/* Render one module's table into @out. Returns 0, or 1 after reporting why not. */
static int render(const char *path, const struct sfu_module *m, const struct opts *o, FILE *out)
{
	const struct sfu_sframe *sf = sfu_module__sframe(m);
	enum sfu_sframe_origin origin = sfu_module__sframe_origin(m);
	struct sfu_diag diag = { 0 };
	struct sfu_sframe *v1;
	int err;

	if (o->from_eh_frame) {
		const char *why;

		sf = sfu_module__eh_frame_table(m);
		if (!sf) {
			why = sfu_module__eh_frame_error(m);
			if (why)
				report(path, "cannot derive a table from .eh_frame: %s", why);
			else
				report(path, "no .eh_frame to derive a table from (none, or not a 64-bit x86-64 or AArch64 executable or shared library)");
			return 1;
		}
		if (!o->readelf) {
			err = sframe_dump_text(out, path, sf, SFU_SFRAME_EH_FRAME, m);
			goto done;
		}
		v1 = derived_as_v1(path, sf);
		if (!v1)
			return 1;
		if (o->file_headers)
			fprintf(out, "\nFile: %s\n", path);
		err = sframe_dump_readelf(out, v1, ".sframe", &diag);
		sfu_sframe__free(v1);
		if (err == -ENOTSUP) {
			report(path, "--readelf: %s", diag.reason);
			return 1;
		}
		goto done;
	}
	if (!sf) {

		const char *why = sfu_module__sframe_error(m);

		if (why)
			report(path, "cannot decode SFrame data: %s", why);
		else
			report(path, "no SFrame data (no .sframe section, SHT_GNU_SFRAME section or PT_GNU_SFRAME segment)");
		return 1;
	}
	if (!o->readelf) {
		err = sframe_dump_text(out, path, sf, origin, m);
	} else if (origin != SFU_SFRAME_SECTION_NAME) {
		/* readelf --sframe dumps sections named .sframe, nothing else */
		report(path, "no section named .sframe (the SFrame data is in the %s; drop --readelf to print it)",
		       sframe_origin_name(origin));
		return 1;
	} else {
		if (o->file_headers)
			fprintf(out, "\nFile: %s\n", path);
		err = sframe_dump_readelf(out, sf, ".sframe", &diag);
		if (err == -ENOTSUP) {
			report(path, "--readelf: %s", diag.reason);
			return 1;
		}
	}
done:
	if (err) {
		report(path, "cannot format the output: %s", strerror(-err));
		return 1;
	}
	return 0;
}

/*
 * Print one file. Its text is built in memory and written only when complete,
 * so a file that fails leaves nothing on stdout.
 */
static int dump_file(const char *path, const struct opts *o, bool first)
{
	struct sfu_diag diag = { 0 };
	struct sfu_module *m;
	char *text = NULL;
	size_t len = 0;
	FILE *out;
	int ret;

	m = sfu_module__open(path, &diag);
	if (!m) {
		report(path, "%s", diag.reason[0] ? diag.reason : strerror(errno));
		return 1;
	}
	out = open_memstream(&text, &len);
	if (!out) {
		report(path, "%s", strerror(errno));
		sfu_module__put(m);
		return 1;
	}
	if (!o->readelf && !first)
		fputc('\n', out);
	ret = render(path, m, o, out);
	if (fclose(out) && !ret) {
		report(path, "cannot format the output: %s", strerror(errno));
		ret = 1;
	}
	if (!ret)
		fwrite(text, 1, len, stdout);
	free(text);
	sfu_module__put(m);
	return ret;
}

int cmd_sframe(int argc, char **argv)
{
	enum { OPT_READELF = 256, OPT_FROM_EH_FRAME };
	static const struct option longopts[] = {
		{ "readelf", no_argument, NULL, OPT_READELF },
		{ "from-eh-frame", no_argument, NULL, OPT_FROM_EH_FRAME },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct opts o = { 0 };
	int c, status = 0;
	bool first = true;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_READELF:
			o.readelf = true;
			break;
		case OPT_FROM_EH_FRAME:
			o.from_eh_frame = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "sfprof sframe: unknown option '%s' (see sfprof sframe --help)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "sfprof sframe: no FILE given\n\n");
		usage(stderr);
		return 2;
	}
	o.file_headers = argc - optind > 1;

	for (int i = optind; i < argc; i++) {
		if (dump_file(argv[i], &o, first))
			status = 1;
		else
			first = false;
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "sfprof sframe: cannot write to stdout: %s\n", strerror(errno));
		status = 1;
	}
	return status;
}
