/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof archive: a profile packed with the binaries and debug files its frames need, to report on another machine (perf archive). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "buildid/buildid.h"
#include "report/hits.h"
#include "buildid/sfarchive.h"
#include "cmds.h"
#include "report/session.h"
#include "common/hmap.h"
#include "util/text.h"

static const char usage[] =
	"usage: sfprof archive [-i FILE] [-o OUT] [--debug-file-directory DIR]\n"
	"                      [--buildid-dir DIR] [--no-debuginfod]\n"
	"\n"
	"Pack the profile FILE (default sfprof.data) with the binaries and debug files\n"
	"of the modules its samples hit, found as report finds them (the recorded path\n"
	"when it holds the same build, the build-ID cache, /usr/lib/debug/.build-id,\n"
	"--debug-file-directory, debuginfod), and this machine's /proc/kallsyms when\n"
	"the samples have kernel frames and FILE was recorded on this host and kernel,\n"
	"into OUT (default FILE.tar.zst): a zstd-compressed tar of sfprof.data,\n"
	"kallsyms and .build-id/XX/REST[.debug], written whole or not at all.\n"
	"\n"
	"On another machine, report it as it reports here:\n"
	"  sfprof report -i OUT          (script, export and buildid-list read OUT in\n"
	"                                place: unpacked into $TMPDIR while they run)\n"
	"or unpack it once:\n"
	"  mkdir DIR && tar -xf OUT -C DIR\n"
	"  sfprof report -i DIR/sfprof.data --buildid-dir DIR\n"
	"or merge its binaries into that machine's build-ID cache:\n"
	"  tar -xf OUT -C ~/.cache/sfprof .build-id\n";

struct packer {
	struct sfarchive_writer *w;
	struct hmap *added;	/* member name -> 1 */
	unsigned binaries, debug_files, missing;
};

/*
 * Add @src as the member for build ID @id (@suffix: .debug or none), once:
 * the file @src names as it is opened now, checked to hold that build
 * (report found it so, but a path someone else can write may have changed
 * since), and read through that same open file.
 */
static int add_kept(struct packer *p, const struct session_module *m, const char *src,
		    const char *suffix, char *why, size_t why_cap)
{
	char name[2 * BUILDID_MAX + 32], self[64];
	uint64_t *v;
	int err, fd;

	if (buildid_path(name, sizeof(name), ".", m->build_id, m->build_id_len, suffix))
		return 0;
	err = hmap__entry(p->added, name + 2, strlen(name + 2), &v, NULL);
	if (err || *v)
		return err;
	*v = 1;
	fd = buildid_open_checked(src, m->build_id, m->build_id_len, why, why_cap);
	if (fd < 0)
		return fd;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	err = sfarchive_writer__add(p->w, name + 2, self, why, why_cap);
	close(fd);
	if (err && !strncmp(why, self, strlen(self)))
		snprintf(why, why_cap, "%s: %s", src, strerror(-err));
	if (!err && suffix)
		p->debug_files++;
	else if (!err)
		p->binaries++;
	return err;
}

/* Whether kernel frames of this profile are named right by this machine's kallsyms. */
static bool same_kernel(const struct profile_meta *meta, const char **why)
{
	struct utsname uts;
	unsigned long long addr = 0;
	FILE *f;

	if (uname(&uts) || !meta->host || !meta->release || strcmp(meta->host, uts.nodename) ||
	    strcmp(meta->release, uts.release)) {
		*why = "recorded on another host or kernel";
		return false;
	}
	f = fopen("/proc/kallsyms", "re");
	if (!f || fscanf(f, "%llx", &addr) != 1 || !addr) {
		*why = "/proc/kallsyms hides its addresses here (kptr_restrict, not root)";
		if (f)
			fclose(f);
		return false;
	}
	fclose(f);
	return true;
}

int cmd_archive(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		SYM_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct session_opts sopts = { .sym = { .no_lines = true } };
	const char *path = "sfprof.data", *output = NULL, *kwhy = NULL;
	struct packer p = { 0 };
	struct session *s = NULL;
	char why[1024], *def_out = NULL;
	const char **dirs = calloc(argc + 1, sizeof(*dirs));
	bool *hit = NULL, kernel = false, damaged = false;
	int c, err, ret = 1;

	argv[0] = "sfprof archive";
	if (!dirs) {
		fprintf(stderr, "sfprof archive: out of memory\n");
		return 1;
	}
	while ((c = getopt_long(argc, argv, "i:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			path = optarg;
			break;
		case 'o':
			output = optarg;
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
	if (optind < argc) {
		fprintf(stderr, "sfprof archive: unexpected argument '%s'\n\n%s", argv[optind], usage);
		free(dirs);
		return 2;
	}
	if (sfarchive_is(path) == 1) {
		fprintf(stderr, "sfprof archive: %s is an archive already\n", path);
		free(dirs);
		return 1;
	}
	if (!output) {
		if (asprintf(&def_out, "%s.tar.zst", path) < 0) {
			fprintf(stderr, "sfprof archive: out of memory\n");
			free(dirs);
			return 1;
		}
		output = def_out;
	}
	if (!(s = cli_session_open(path, &sopts, &damaged)))
		goto out;
	print_replaced(s);
	if (damaged) {
		fprintf(stderr, "sfprof archive: %s is damaged: not archived\n", path);
		goto out;
	}
	hit = calloc(session__nmodules(s) + 1, sizeof(*hit));
	p.added = hmap__new(HMAP_BYTES);
	if (!hit || !p.added || session_hits(s, hit, &kernel)) {
		fprintf(stderr, "sfprof archive: out of memory\n");
		goto out;
	}
	p.w = sfarchive_writer__create(output, why, sizeof(why));
	if (!p.w) {
		fprintf(stderr, "sfprof archive: %s\n", why);
		goto out;
	}
	if ((err = sfarchive_writer__add(p.w, SFARCHIVE_PROFILE, path, why, sizeof(why))))
		goto write_error;
	for (size_t i = 0; i < session__nmodules(s); i++) {
		const struct session_module *m = session__module(s, i);
		const char *bin, *dbg;

		if (!hit[i])
			continue;
		bin = m->sym ? sym_module__binary_file(m->sym) : NULL;
		dbg = m->sym ? sym_module__debug_file(m->sym) : NULL;
		if (!m->build_id_len || (!bin && !dbg)) {
			if (!p.missing++)
				fputs("sfprof archive: no file for these modules the samples hit (their "
				      "frames stay MODULE+0xOFFSET):\n", stderr);
			fputs("  ", stderr);
			text_put(stderr, m->path, 0);
			fputs(m->build_id_len ? "\n" : " (recorded without a build ID)\n", stderr);
			continue;
		}
		if ((bin && (err = add_kept(&p, m, bin, NULL, why, sizeof(why)))) ||
		    (dbg && (err = add_kept(&p, m, dbg, BUILDID_DEBUG_SUFFIX, why, sizeof(why)))))
			goto write_error;
	}
	if (kernel && same_kernel(session__meta(s), &kwhy) &&
	    (err = sfarchive_writer__add(p.w, SFARCHIVE_KALLSYMS, "/proc/kallsyms", why,
					 sizeof(why))))
		goto write_error;
	if (kernel && kwhy)
		fprintf(stderr, "sfprof archive: kernel frames: no kallsyms kept (%s): they are "
			"named from the kallsyms of the machine that reports\n", kwhy);
	{
		uint64_t bytes = sfarchive_writer__bytes(p.w);

		err = sfarchive_writer__commit(p.w, why, sizeof(why));
		p.w = NULL;
		if (err)
			goto write_error;
		fprintf(stderr, "sfprof archive: %s: the profile, %u binaries, %u debug files%s "
			"(%.1f MiB before compression)\n", output, p.binaries, p.debug_files,
			kernel && !kwhy ? ", kallsyms" : "", bytes / 1048576.0);
	}
	ret = 0;
	goto out;
write_error:
	fprintf(stderr, "sfprof archive: %s: %s\n", output, why);
out:
	sfarchive_writer__discard(p.w);
	hmap__free(p.added);
	free(hit);
	session__free(s);
	free(def_out);
	free(dirs);
	return ret;
}
