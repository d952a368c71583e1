/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof dump: every record of a profile file as a line of text, for debugging and tests. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "buildid/buildid.h"
#include "cmds.h"
#include "profile/profile.h"
#include "sfunwind/cbf.h"
#include "util/text.h"

static const char usage[] =
	"usage: sfprof dump [-i FILE]\n"
	"\n"
	"Print the header and every record of a profile (default sfprof.data), one per\n"
	"line, stacks decoded. A cut or damaged file is read as far as it goes, with a\n"
	"notice on stderr; the exit status is 1 for a damaged one.\n";

static void print_time(uint64_t ns)
{
	printf("%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
}

static void print_cbf(const uint8_t *cbf, size_t len)
{
	struct sfu_cbf_frame f;
	struct sfu_cbf_dec dec;

	sfu_cbf_dec__init(&dec, cbf, len, 0, NULL);
	while (!sfu_cbf_dec__next(&dec, &f)) {
		if (f.kind == SFU_CBF_OMIT)
			printf(" omit %" PRIu64, f.value);
		else if (f.kind == SFU_CBF_END || f.kind == SFU_CBF_TRUNCATED)
			printf(" %s", sfu_cbf_kind_name(f.kind));
		else
			printf(" %s 0x%" PRIx64, sfu_cbf_kind_name(f.kind), f.value);
	}
}

static void print_meta(const char *path, const struct profile_meta *m)
{
	printf("# %s: sfprof profile, created ", path);
	print_time(m->created_ns);
	printf(", %u Hz, %u-byte stacks%s%s%s\n", m->freq_hz, m->stack_size,
	       m->flags & PROFILE_F_SYSTEM_WIDE ? ", system-wide" : "",
	       m->flags & PROFILE_F_COMMAND ? ", command" : "",
	       m->flags & PROFILE_F_WALL_NS ? ", weights in ns of wall time" : "");
	fputs("# host ", stdout);
	text_put(stdout, m->host ? m->host : "?", 0);
	fputs(", kernel ", stdout);
	text_put(stdout, m->release ? m->release : "?", 0);
	fputs(", machine ", stdout);
	text_put(stdout, m->machine ? m->machine : "?", 0);
	putchar('\n');
	if (m->cmdline) {
		fputs("# command line: ", stdout);
		text_put(stdout, m->cmdline, 0);
		putchar('\n');
	}
}

/* A string of the file between double quotes, escaped (text.h) with '"' too. */
static void print_quoted(const char *s)
{
	putchar('"');
	text_put(stdout, s, TEXT_QUOTED);
	putchar('"');
}

/* A jit record's source lines: " lines +OFF:LINE FILE, +OFF:LINE, ..." (FILE when it changes). */
static void print_jit_lines(const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len;
	struct profile_jit_line ln;
	char file[4096];
	unsigned n = 0;
	int got;

	fputs(" lines", stdout);
	while (n++ < PROFILE_JIT_MAX_LINES && (got = profile_jit_line__next(&p, end, &ln)) == 1) {
		printf("%s +0x%" PRIx64 ":%" PRIu64, n > 1 ? "," : "", ln.offset, ln.line);
		if (ln.file) {
			snprintf(file, sizeof(file), "%.*s", (int)ln.file_len, ln.file);
			putchar(' ');
			print_quoted(file);
		}
	}
	if (got < 0)
		fputs(" (damaged)", stdout);
}

static void print_record(const struct profile_record *r)
{
	switch (r->type) {
	case PROFILE_REC_PROCESS:
		printf("process pid %u ppid %u comm ", r->process.pid, r->process.ppid);
		print_quoted(r->process.comm);
		fputs(" exe ", stdout);
		print_quoted(r->process.exe);
		if (r->process.script && r->process.script[0]) {
			fputs(" script ", stdout);
			print_quoted(r->process.script);
		}
		printf(" pidns %" PRIu64 " mntns %" PRIu64 " nspid %u\n", r->process.pid_ns,
		       r->process.mnt_ns, r->process.ns_pid);
		break;
	case PROFILE_REC_THREAD:
		printf("thread pid %u tid %u comm ", r->thread.pid, r->thread.tid);
		print_quoted(r->thread.comm);
		putchar('\n');
		break;
	case PROFILE_REC_MODULE:
		printf("module %u build-id ", r->module.id);
		buildid_fput(stdout, r->module.build_id, r->module.build_id_len);
		printf("%s size %" PRIu64 " path ", r->module.build_id_len ? "" : "-",
		       r->module.file_size);
		print_quoted(r->module.path);
		putchar('\n');
		break;
	case PROFILE_REC_MAPPING:
		printf("mapping pid %u 0x%" PRIx64 "-0x%" PRIx64 " offset 0x%" PRIx64 " %c%c%c module %u\n",
		       r->mapping.pid, r->mapping.start, r->mapping.end, r->mapping.file_offset,
		       r->mapping.prot & 1 ? 'r' : '-', r->mapping.prot & 2 ? 'w' : '-',
		       r->mapping.prot & 4 ? 'x' : '-', r->mapping.module_id);
		break;
	case PROFILE_REC_STACK:
		printf("stack %u %s", r->stack.id, r->stack.space ? "kernel" : "user");
		print_cbf(r->stack.cbf, r->stack.len);
		putchar('\n');
		break;
	case PROFILE_REC_SAMPLE:
		printf("sample ");
		print_time(r->sample.time_ns);
		printf(" pid %u tid %u cpu %u weight %u ustack %u kstack %u", r->sample.pid,
		       r->sample.tid, r->sample.cpu, r->sample.weight, r->sample.ustack_id,
		       r->sample.kstack_id);
		if (r->sample.event)
			printf(" event %u", r->sample.event);
		if (r->sample.flags)
			printf(" flags %#x", r->sample.flags);
		if (r->sample.py_depth) {
			fputs(" python", stdout);
			for (size_t i = 0; i < r->sample.py_depth; i++)
				printf("%s%u", i ? "," : " ", r->sample.py_frames[i]);
			if (r->sample.py_truncated)
				fputs(" truncated", stdout);
		}
		putchar('\n');
		break;
	case PROFILE_REC_EVENT:
		printf("event %u type %u config %" PRIu64 " period %" PRIu64 " freq %u flags %#x name ",
		       r->event.id, r->event.type, r->event.config, r->event.period,
		       r->event.freq_hz, r->event.flags);
		print_quoted(r->event.name);
		putchar('\n');
		break;
	case PROFILE_REC_LOST:
		printf("lost ");
		print_time(r->lost.time_ns);
		printf(" cpu %u count %" PRIu64 "\n", r->lost.cpu, r->lost.count);
		break;
	case PROFILE_REC_EXIT:
		printf("exit ");
		print_time(r->exit.time_ns);
		printf(" pid %u\n", r->exit.pid);
		break;
	case PROFILE_REC_COMM:
		printf("comm ");
		print_time(r->comm.time_ns);
		printf(" pid %u tid %u comm ", r->comm.pid, r->comm.tid);
		print_quoted(r->comm.comm);
		putchar('\n');
		break;
	case PROFILE_REC_JIT:
		printf("jit ");
		print_time(r->jit.time_ns);
		printf(" pid %u 0x%" PRIx64 "-0x%" PRIx64 "%s%s name ", r->jit.pid, r->jit.start,
		       r->jit.end, r->jit.flags & PROFILE_JIT_F_MAP ? " map" : "",
		       r->jit.flags & PROFILE_JIT_F_UNLOAD ? " unload" : "");
		print_quoted(r->jit.name);
		fputs(" source ", stdout);
		print_quoted(r->jit.source);
		if (r->jit.lines_len)
			print_jit_lines(r->jit.lines, r->jit.lines_len);
		putchar('\n');
		break;
	case PROFILE_REC_PY_FRAME:
		printf("py_frame %u line %u%s qualname ", r->py_frame.id, r->py_frame.line,
		       r->py_frame.flags & PROFILE_PY_F_ENTRY ? " entry" : "");
		print_quoted(r->py_frame.qualname);
		fputs(" file ", stdout);
		print_quoted(r->py_frame.file);
		putchar('\n');
		break;
	}
}

int cmd_dump(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = "sfprof.data";
	struct profile_reader *r;
	struct profile_record rec;
	struct profile_diag diag;
	const struct profile_status *st;
	uint64_t samples = 0;
	bool damaged;
	int c, ret;

	while ((c = getopt_long(argc, argv, "i:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			path = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fputs(usage, stderr);
		return 2;
	}
	r = profile_reader__open(path, &diag);
	if (!r) {
		fprintf(stderr, "sfprof dump: %s\n", diag.reason);
		return 1;
	}
	print_meta(path, profile_reader__meta(r));
	while ((ret = profile_reader__next(r, &rec)) > 0) {
		print_record(&rec);
		if (rec.type == PROFILE_REC_SAMPLE)
			samples++;
	}
	if (ret < 0)
		fprintf(stderr, "sfprof dump: %s: %s\n", path, strerror(-ret));
	st = profile_reader__status(r);
	if (st->lost_implausible)
		printf("# %" PRIu64 " samples, unknown lost (a damaged count), %" PRIu64 " blocks\n",
		       samples, st->blocks);
	else
		printf("# %" PRIu64 " samples, %" PRIu64 " lost, %" PRIu64 " blocks\n", samples,
		       st->lost, st->blocks);
	damaged = profile_print_notices(path, st);
	profile_reader__free(r);
	return ret < 0 || damaged ? 1 : 0;
}
