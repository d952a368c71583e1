/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof xray: look into XRay traces; `dump` prints every record as llvm-xray fdr-dump does. */

/*
 * The record lines are llvm-xray-16 fdr-dump's, so that the two outputs
 * compare line by line, with two differences: a typed event's line ends in
 * '>' (llvm's lacks it), and bytes of event payloads outside printable ASCII
 * are written \xNN (llvm writes them raw). Everything else sfprof prints
 * starts with '#' (header, summary) or "LOSS" (damage, one line each), and
 * --state appends to each record line, after two spaces and '@', what the
 * reader derived. Basic-mode records, which fdr-dump does not read, are
 * printed in the same style with their absolute time, thread and process.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmds.h"
#include "xray.h"

static void usage(FILE *f)
{
	fputs("usage: sfprof xray dump [--state] TRACE\n"
	      "\n"
	      "Print an XRay trace (FDR versions 1-5 or basic mode, either byte order): its\n"
	      "header, then every record on one line as `llvm-xray fdr-dump TRACE` prints it,\n"
	      "then a summary. Damaged or cut buffers are skipped, each with a line\n"
	      "\"LOSS at OFFSET: N bytes skipped: REASON\", and the rest is read.\n"
	      "\n"
	      "  --state     after each record: its file offset, and the thread, process,\n"
	      "              cpu and absolute time (ticks) the reader derived for it\n"
	      "  -h, --help  print this help\n"
	      "\n"
	      "Exit status: 0 when the trace was read (losses included), 1 when it cannot\n"
	      "be (missing, not an XRay trace, unknown version), 2 on a usage error.\n", f);
}

static void print_payload(const struct xray_record *rec)
{
	for (int32_t i = 0; i < rec->event_size; i++) {
		uint8_t c = rec->payload[i];

		if (c >= 0x20 && c < 0x7f)
			putchar(c);
		else
			printf("\\x%02x", c);
	}
}

static const char *func_action(uint8_t kind)
{
	switch (kind) {
	case XRAY_REC_ENTER:
		return "Enter";
	case XRAY_REC_EXIT:
		return "Exit";
	case XRAY_REC_TAIL_EXIT:
		return "Tail Exit";
	default:
		return "Enter With Arg";
	}
}

static void print_fdr_record(const struct xray_header *h, const struct xray_record *rec)
{
	switch (rec->kind) {
	case XRAY_REC_ENTER:
	case XRAY_REC_EXIT:
	case XRAY_REC_TAIL_EXIT:
	case XRAY_REC_ENTER_ARGS:
		printf("<Function %s: #%" PRId32 " delta = +%" PRIu32 ">", func_action(rec->kind),
		       rec->func_id, rec->tsc_delta);
		break;
	case XRAY_REC_NEW_BUFFER:
		printf("<Thread ID: %" PRId32 ">", (int32_t)rec->value);
		break;
	case XRAY_REC_END_OF_BUFFER:
		printf("<End of Buffer>");
		break;
	case XRAY_REC_NEW_CPU:
		printf("<CPU: id = %u, tsc = %" PRIu64 ">", rec->cpu, rec->value);
		break;
	case XRAY_REC_TSC_WRAP:
		printf("<TSC Wrap: base = %" PRIu64 ">", rec->value);
		break;
	case XRAY_REC_WALLTIME:
		printf("<Wall Time: seconds = %" PRIu64 ".%06" PRIu64 ">", rec->value, rec->value2);
		break;
	case XRAY_REC_CUSTOM_EVENT:
		if (h->version >= 5)
			printf("<Custom Event: delta = +%" PRId32 ", size = %" PRId32 ", data = '",
			       (int32_t)rec->tsc_delta, rec->event_size);
		else
			printf("<Custom Event: tsc = %" PRIu64 ", cpu = %u, size = %" PRId32
			       ", data = '", rec->value, rec->event_cpu, rec->event_size);
		print_payload(rec);
		printf("'>");
		break;
	case XRAY_REC_TYPED_EVENT:
		printf("<Typed Event: delta = +%" PRId32 ", type = %u, size = %" PRId32 ", data = '",
		       (int32_t)rec->tsc_delta, rec->event_type, rec->event_size);
		print_payload(rec);
		printf("'>");
		break;
	case XRAY_REC_CALL_ARG:
		printf("<Call Argument: data = %" PRIu64 " (hex = 0x%" PRIx64 ")>", rec->value,
		       rec->value);
		break;
	case XRAY_REC_BUFFER_EXTENTS:
		printf("<Buffer: size = %" PRIu64 " bytes>", rec->value);
		break;
	case XRAY_REC_PID:
		printf("<PID: %" PRId32 ">", (int32_t)rec->value);
		break;
	default:
		printf("<%s>", xray_rec_name(rec->kind));
		break;
	}
}

static void print_basic_record(const struct xray_record *rec)
{
	if (rec->kind == XRAY_REC_CALL_ARG)
		printf("<Call Argument: data = %" PRIu64 " (hex = 0x%" PRIx64 "), #%" PRId32
		       ", tid = %" PRIu32 ", pid = %" PRIu32 ">", rec->value, rec->value,
		       rec->func_id, rec->tid, rec->pid);
	else
		printf("<Function %s: #%" PRId32 " tsc = %" PRIu64 ", cpu = %u, tid = %" PRIu32
		       ", pid = %" PRIu32 ">", func_action(rec->kind), rec->func_id, rec->tsc,
		       rec->cpu, rec->tid, rec->pid);
}

struct counts {
	uint64_t records;
	uint64_t by_kind[XRAY_REC_META_BASE + 16];
	uint64_t losses;
	uint64_t lost_bytes;
};

static void print_summary(const struct xray_header *h, const struct counts *c)
{
	static const uint8_t meta[] = {
		XRAY_REC_NEW_BUFFER, XRAY_REC_END_OF_BUFFER, XRAY_REC_NEW_CPU, XRAY_REC_TSC_WRAP,
		XRAY_REC_WALLTIME, XRAY_REC_CUSTOM_EVENT, XRAY_REC_CALL_ARG,
		XRAY_REC_BUFFER_EXTENTS, XRAY_REC_TYPED_EVENT, XRAY_REC_PID,
	};
	const uint64_t *k = c->by_kind;
	uint64_t funcs = k[XRAY_REC_ENTER] + k[XRAY_REC_EXIT] + k[XRAY_REC_TAIL_EXIT] +
			 k[XRAY_REC_ENTER_ARGS];

	printf("# %" PRIu64 " records: %" PRIu64 " function (enter %" PRIu64 ", exit %" PRIu64
	       ", tail exit %" PRIu64 ", enter with args %" PRIu64 ")", c->records, funcs,
	       k[XRAY_REC_ENTER], k[XRAY_REC_EXIT], k[XRAY_REC_TAIL_EXIT], k[XRAY_REC_ENTER_ARGS]);
	if (h->type == XRAY_TRACE_BASIC) {
		printf(", %" PRIu64 " call argument\n", k[XRAY_REC_CALL_ARG]);
	} else {
		printf(", %" PRIu64 " metadata (", c->records - funcs);
		for (size_t i = 0; i < sizeof(meta); i++)
			printf("%s%s %" PRIu64, i ? ", " : "", xray_rec_name(meta[i]), k[meta[i]]);
		printf(")\n");
	}
	printf("# %" PRIu64 " loss%s, %" PRIu64 " bytes skipped\n", c->losses,
	       c->losses == 1 ? "" : "es", c->lost_bytes);
}

static int dump(const char *path, bool state)
{
	struct xray_reader *r = NULL;
	const struct xray_header *h;
	char reason[160];
	struct xray_record rec;
	struct xray_loss loss;
	struct counts c = { 0 };
	void *map = NULL;
	struct stat st;
	size_t size = 0;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "sfprof xray: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "sfprof xray: %s: not a regular file\n", path);
		close(fd);
		return 1;
	}
	size = (size_t)st.st_size;
	if (size) {
		map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED) {
			fprintf(stderr, "sfprof xray: %s: mmap: %s\n", path, strerror(errno));
			close(fd);
			return 1;
		}
		madvise(map, size, MADV_SEQUENTIAL);
	}
	close(fd);

	r = xray_reader__new(map, size, reason);
	if (!r) {
		fprintf(stderr, "sfprof xray: %s: %s\n", path, reason[0] ? reason : strerror(errno));
		ret = 1;
		goto out;
	}
	h = xray_reader__header(r);
	printf("# %s: XRay %s trace version %u, %s-endian, cycle frequency %" PRIu64
	       " Hz, constant TSC %s, non-stop TSC %s", path,
	       h->type == XRAY_TRACE_FDR ? "FDR" : "basic-mode", h->version,
	       h->big_endian ? "big" : "little", h->cycle_freq, h->constant_tsc ? "yes" : "no",
	       h->nonstop_tsc ? "yes" : "no");
	if (h->type == XRAY_TRACE_FDR)
		printf(", buffer size %" PRIu64 " bytes", h->buffer_size);
	printf(", %zu bytes\n", size);

	while ((ret = xray_reader__next(r, &rec, &loss)) > 0) {
		if (ret == 2) {
			printf("LOSS at 0x%" PRIx64 ": %" PRIu64 " bytes skipped: %s\n", loss.offset,
			       loss.bytes, loss.reason);
			c.losses++;
			c.lost_bytes += loss.bytes;
			continue;
		}
		c.records++;
		if (rec.kind < sizeof(c.by_kind) / sizeof(c.by_kind[0]))
			c.by_kind[rec.kind]++;
		if (h->type == XRAY_TRACE_FDR)
			print_fdr_record(h, &rec);
		else
			print_basic_record(&rec);
		if (state)
			printf("  @0x%" PRIx64 " tid %" PRIu32 " pid %" PRIu32 " cpu %u tsc %" PRIu64,
			       rec.offset, rec.tid, rec.pid, rec.cpu, rec.tsc);
		putchar('\n');
	}
	if (ret < 0) {
		fflush(stdout);
		fprintf(stderr, "sfprof xray: %s: %s\n", path, strerror(-ret));
		ret = 1;
		goto out;
	}
	print_summary(h, &c);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "sfprof xray: writing the dump: %s\n", strerror(errno));
		ret = 1;
		goto out;
	}
	ret = 0;
out:
	xray_reader__free(r);
	if (map)
		munmap(map, size);
	return ret;
}

static int cmd_xray_dump(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "state", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool state = false;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			state = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	return dump(argv[optind], state);
}

int cmd_xray(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "dump"))
		return cmd_xray_dump(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc >= 2)
		fprintf(stderr, "sfprof xray: unknown subcommand '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
