/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof buildid-list: the build IDs of a profile's modules, one "<build-id> <path>" per line, as perf buildid-list prints them. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildid/buildid.h"
#include "report/hits.h"
#include "cmds.h"
#include "report/session.h"
#include "common/hmap.h"
#include "util/text.h"

static const char usage[] =
	"usage: sfprof buildid-list [-i FILE] [-H] [--all] [-k]\n"
	"\n"
	"Print the build ID and recorded path of each module whose frames the samples\n"
	"of FILE (default sfprof.data; an archive of sfprof archive too) hit, one\n"
	"\"<build-id> <path>\" per line, as perf buildid-list prints those perf record\n"
	"kept. Modules recorded without a build ID are not listed.\n"
	"\n"
	"  -i, --input FILE   the profile\n"
	"  -H, --with-hits    only modules with hits (the default; perf's option)\n"
	"      --all          every module the profile names: every executable file\n"
	"                     mapping of the sampled processes, hit or not\n"
	"  -k, --kernel       the running kernel's build ID (/sys/kernel/notes) alone\n";

static int kernel_build_id(void)
{
	uint8_t notes[4096], id[BUILDID_MAX];
	char hex[2 * BUILDID_MAX + 1];
	int fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
	ssize_t n;
	size_t len;

	if (fd < 0) {
		fprintf(stderr, "sfprof buildid-list: /sys/kernel/notes: %s\n", strerror(errno));
		return 1;
	}
	n = read(fd, notes, sizeof(notes));
	close(fd);
	/* 4-byte aligned, as the kernel lays them out */
	len = n > 0 ? buildid_from_notes(notes, (size_t)n, 4, id) : 0;
	if (!len) {
		fprintf(stderr, "sfprof buildid-list: /sys/kernel/notes: no build ID note\n");
		return 1;
	}
	buildid_hex(hex, sizeof(hex), id, len);
	printf("%s\n", hex);
	return 0;
}

int cmd_buildid_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "with-hits", no_argument, NULL, 'H' },
		{ "all", no_argument, NULL, 'A' },
		{ "kernel", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct session_opts sopts = { .sym = { .no_lines = true, .no_debuginfod = true } };
	const char *path = "sfprof.data";
	bool all = false, kernel, damaged = false;
	struct hmap *printed = NULL;
	struct session *s;
	bool *hit = NULL;
	int c, ret = 1;

	argv[0] = "sfprof buildid-list";
	while ((c = getopt_long(argc, argv, "i:Hkh", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			path = optarg;
			break;
		case 'H':
			all = false;
			break;
		case 'A':
			all = true;
			break;
		case 'k':
			return kernel_build_id();
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "sfprof buildid-list: unexpected argument '%s'\n\n%s", argv[optind],
			usage);
		return 2;
	}
	if (!(s = cli_session_open(path, &sopts, &damaged)))
		return 1;
	hit = calloc(session__nmodules(s) + 1, sizeof(*hit));
	printed = hmap__new(HMAP_BYTES);
	if (!hit || !printed || session_hits(s, hit, &kernel)) {
		fprintf(stderr, "sfprof buildid-list: out of memory\n");
		goto out;
	}
	for (size_t i = 0; i < session__nmodules(s); i++) {
		const struct session_module *m = session__module(s, i);
		char hex[2 * BUILDID_MAX + 1], key[2 * BUILDID_MAX + 4096];
		uint64_t *v;
		int n;

		if (!m->build_id_len || (!all && !hit[i]))
			continue;
		buildid_hex(hex, sizeof(hex), m->build_id, m->build_id_len);
		/* one line per (build ID, path): a module is recorded once per process image */
		n = snprintf(key, sizeof(key), "%s %s", hex, m->path);
		if (n < 0 || hmap__entry(printed, key, (size_t)n < sizeof(key) ? (size_t)n :
					 sizeof(key) - 1, &v, NULL)) {
			fprintf(stderr, "sfprof buildid-list: out of memory\n");
			goto out;
		}
		if (*v)
			continue;
		*v = 1;
		printf("%s ", hex);
		text_put(stdout, m->path, 0);
		putchar('\n');
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "sfprof buildid-list: writing: %s\n", strerror(errno));
		goto out;
	}
	ret = damaged ? 1 : 0;
out:
	hmap__free(printed);
	free(hit);
	session__free(s);
	return ret;
}
