/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof import xray: XRay traces of a program into an ordinary profile, weighted by time. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmds.h"
#include "profile/profile.h"
#include "sfunwind/cbf.h"
#include "sfunwind/module.h"
#include "common/clock.h"
#include "xray.h"
#include "xray_stacks.h"

static const char usage[] =
	"usage: sfprof import xray -m BINARY [-o FILE] [--functions] [--force] TRACE...\n"
	"       sfprof import xray -m BINARY --map\n"
	"\n"
	"Make a profile (default sfprof.data) from XRay traces (FDR versions 1-5 or\n"
	"basic mode) of BINARY, built with -fxray-instrument. Each thread's call stacks\n"
	"are rebuilt from function entries and exits as `llvm-xray stack` does; the time\n"
	"between two records of a thread is self time of the stack current between\n"
	"them. The profile holds one sample per thread, stack and second of the trace,\n"
	"weighted by nanoseconds of self time, so that `sfprof report`, `script` and\n"
	"`export` show shares of time. Function ids are named through BINARY's\n"
	"xray_instr_map and its symbols. Windows go to a temporary file next to\n"
	"FILE as they close, so memory grows with distinct stacks, not with the\n"
	"length of the traces; a profile that cannot be written whole is not kept.\n"
	"\n"
	"A damaged part of a trace costs that part: the rest is imported, the loss\n"
	"is reported with its offset, the profile is marked as incomplete and the\n"
	"exit status is 1.\n"
	"\n"
	"  -m, --instr-map BINARY      the instrumented program\n"
	"  -o, --output FILE           the profile to write (default sfprof.data; an\n"
	"                              existing one is renamed FILE.old)\n"
	"      --functions             print each function entered: id, entries, frames\n"
	"                              of it closed (by its exit or an outer one: the\n"
	"                              count of `llvm-xray account -d`), address in BINARY\n"
	"      --map                   print BINARY's function ids and addresses, and stop\n"
	"      --force                 import a trace that does not look like BINARY's:\n"
	"                              by default a trace is refused (exit 1, nothing\n"
	"                              written) when it has function ids past the map's\n"
	"                              functions or compiler-rt's file name for another\n"
	"                              program (xray-log.NAME.XXXXXX): it is a trace of\n"
	"                              another build, whose ids name other functions.\n"
	"                              Records of a kind the function's sleds do not make\n"
	"                              (a tail exit without a tail-call sled) are warned of\n";

/* Time is summed per window of this many ns of the trace: sample weights are 32-bit ns. */
#define WINDOW_NS 1000000000ull
/* The trace is read in order: pages this far behind the record being read are given back. */
#define DROP_STEP (16u << 20)
#define DROP_MARGIN (1u << 20)
/* Deeper stacks keep their innermost and outermost frames around an omit, as recorded ones. */
#define MAX_FRAMES 4096
#define KEEP_OUTER 16
/* Function ids the map does not have: an address no mapping holds, told apart by the id. */
#define UNKNOWN_FUNC_BASE 0xffffffff00000000ull

struct trace {
	const char *path;
	struct xray_header hdr;
	uint64_t freq;		/* ticks per second used: the header's, 1e9 when it says 0 */
	struct xray_stacks *stacks;
	uint64_t losses, lost_bytes;
	uint64_t offset_ns;	/* where the trace starts in the profile's time */
	uint64_t mtime_ns;
	uint64_t first_cell;	/* its cells' place in the spill */
	/* what says it is not BINARY's trace */
	uint64_t foreign_ids;		/* function records of ids the map does not have */
	int32_t max_id;			/* the largest id seen */
	uint64_t foreign_kinds;		/* records of a kind their function's sleds do not make */
	int32_t kind_id;		/* the first of those: its function and record kind */
	uint8_t kind_rec;
};

struct import {
	const char *binary, *output;
	char *binary_abs;
	const char *comm;
	struct xray_instrmap *map;
	struct sfu_module *module;
	struct trace *traces;
	size_t ntraces;
	bool functions, map_only, force;
	uint64_t unknown_ids;
	/*
	 * Windows are written here as they close, and read back once every
	 * trace is read: the profile's times and clock offset need each
	 * trace's first and last timestamps.
	 */
	FILE *spill;
	uint64_t spilled;	/* cells */
	int spill_err;		/* errno of a failed write to it */
	/* writing */
	struct profile_writer *w;
	uint32_t module_id;
	struct sfu_cbf_frame *frames;
	size_t frames_cap;
	uint8_t *cbf_buf;
	size_t cbf_cap;
	uint64_t samples;
};

/* A file that is gone when closed, in the directory of @output (which has to have room anyway). */
static FILE *open_spill(const char *output)
{
	const char *slash = strrchr(output, '/');
	char *dir = slash ? strndup(output, slash == output ? 1 : (size_t)(slash - output)) :
			    strdup(".");
	FILE *f = NULL;
	int fd;

	if (!dir)
		return NULL;
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		/* a file system without O_TMPFILE: a named one, unlinked at once */
		char *tmpl = malloc(strlen(dir) + sizeof("/.sfprof-import-XXXXXX"));

		if (tmpl) {
			sprintf(tmpl, "%s/.sfprof-import-XXXXXX", dir);
			fd = mkostemp(tmpl, O_CLOEXEC);
			if (fd >= 0)
				unlink(tmpl);
			free(tmpl);
		}
	}
	if (fd >= 0 && !(f = fdopen(fd, "w+")))
		close(fd);
	free(dir);
	return f;
}

static int spill_window(void *ctx, const struct xray_cell *cells, size_t n)
{
	struct import *im = ctx;

	errno = 0;
	if (fwrite(cells, sizeof(*cells), n, im->spill) != n) {
		im->spill_err = errno ? errno : EIO;
		return -im->spill_err;
	}
	im->spilled += n;
	return 0;
}

/* A function record against the map: its id, and a sled of its function that makes its kind. */
static void check_record(const struct import *im, struct trace *t, const struct xray_record *rec)
{
	static const uint8_t makes[] = {
		[XRAY_REC_ENTER] = 1u << XRAY_SLED_ENTRY | 1u << XRAY_SLED_LOG_ARGS_ENTRY,
		[XRAY_REC_EXIT] = 1u << XRAY_SLED_EXIT,
		[XRAY_REC_TAIL_EXIT] = 1u << XRAY_SLED_TAIL,
		[XRAY_REC_ENTER_ARGS] = 1u << XRAY_SLED_LOG_ARGS_ENTRY,
	};
	uint8_t kinds;

	if (rec->func_id > t->max_id)
		t->max_id = rec->func_id;
	if (xray_instrmap__kinds(im->map, rec->func_id, &kinds)) {
		t->foreign_ids++;
		return;
	}
	if (!(kinds & makes[rec->kind]) && !t->foreign_kinds++) {
		t->kind_id = rec->func_id;
		t->kind_rec = rec->kind;
	}
}

/*
 * compiler-rt names a trace xray_logfile_base, the program's name and six
 * random characters; by default the base is "xray-log.". @return the NAME of
 * "xray-log.NAME.XXXXXX" in @path's file name (@len bytes), or NULL.
 */
static const char *trace_program(const char *path, size_t *len)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t n = strlen(base);

	if (strncmp(base, "xray-log.", 9) || n < 9 + 1 + 7 || base[n - 7] != '.')
		return NULL;
	*len = n - 7 - 9;
	return base + 9;
}

/*
 * Does trace @t look like BINARY's? Ids past the map, kinds its sleds do not
 * make, a file name compiler-rt gave another program. @return 0, or 1 after
 * saying why not.
 */
static int check_trace(const struct import *im, const struct trace *t)
{
	static const char *const rec_names[] = { "an entry", "an exit", "a tail exit",
						 "an entry with arguments" };
	static const char *const sled_names[] = { "entry", "exit", "tail-call", "argument-logging" };
	static const uint8_t sled_of[] = { XRAY_SLED_ENTRY, XRAY_SLED_EXIT, XRAY_SLED_TAIL,
					   XRAY_SLED_LOG_ARGS_ENTRY };
	const char *prog;
	size_t len;
	int bad = 0;

	if (t->foreign_ids) {
		fprintf(stderr, "sfprof import: %s: %" PRIu64 " function records of ids %s's "
			"xray_instr_map does not have (ids up to %" PRId32 ", the map has %zu "
			"functions)\n", t->path, t->foreign_ids, im->binary, t->max_id,
			xray_instrmap__count(im->map));
		bad = 1;
	}
	/* said, not refused: traces written from the spec have them, and so may a damaged one */
	if (t->foreign_kinds)
		fprintf(stderr, "sfprof import: %s: warning: %" PRIu64 " function records of a kind "
			"their function's sleds in %s do not make (the first: %s of function #%"
			PRId32 ", which has no %s sled)\n", t->path, t->foreign_kinds, im->binary,
			rec_names[t->kind_rec], t->kind_id, sled_names[sled_of[t->kind_rec]]);
	prog = trace_program(t->path, &len);
	if (prog && (strlen(im->comm) != len || memcmp(prog, im->comm, len))) {
		fprintf(stderr, "sfprof import: %s: compiler-rt named this trace after a program "
			"called '%.*s', not '%s'\n", t->path, (int)len, prog, im->comm);
		bad = 1;
	}
	if (bad)
		fprintf(stderr, "sfprof import: %s: not a trace of %s (of another build? its function "
			"ids would name other functions): nothing written; --force imports it "
			"anyway\n", t->path, im->binary);
	return bad;
}

/* Read one trace through its stacks; @return 0, or 1 after printing why it cannot be used. */
static int read_trace(struct import *im, struct trace *t)
{
	char reason[160] = "";
	struct xray_reader *r = NULL;
	struct xray_record rec;
	struct xray_loss loss;
	void *data = MAP_FAILED;
	uint64_t dropped = 0;
	struct stat st;
	int fd, ret, status = 1;

	fd = open(t->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "sfprof import: %s: %s\n", t->path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || !st.st_size) {
		fprintf(stderr, "sfprof import: %s: %s\n", t->path,
			S_ISREG(st.st_mode) ? "empty file, not an XRay trace" : "not a regular file");
		goto out;
	}
	t->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + st.st_mtim.tv_nsec;
	data = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (data == MAP_FAILED) {
		fprintf(stderr, "sfprof import: %s: %s\n", t->path, strerror(errno));
		goto out;
	}
	madvise(data, st.st_size, MADV_SEQUENTIAL);
	r = xray_reader__new(data, st.st_size, reason);
	if (!r) {
		fprintf(stderr, "sfprof import: %s: not a usable XRay trace: %s\n", t->path,
			reason[0] ? reason : strerror(errno));
		goto out;
	}
	t->hdr = *xray_reader__header(r);
	t->freq = t->hdr.cycle_freq ? t->hdr.cycle_freq : 1000000000u;
	/* windows are whole ticks: at a frequency below 1 Hz, a window is one tick */
	t->first_cell = im->spilled;
	t->stacks = xray_stacks__new(t->freq * WINDOW_NS / 1000000000u ?
				     t->freq * WINDOW_NS / 1000000000u : 1, spill_window, im);
	if (!t->stacks) {
		fprintf(stderr, "sfprof import: out of memory\n");
		goto out;
	}
	while ((ret = xray_reader__next(r, &rec, &loss)) > 0) {
		if (ret == 2) {
			fprintf(stderr, "sfprof import: %s: offset %" PRIu64 " (0x%" PRIx64 "): "
				"%" PRIu64 " bytes lost: %s\n", t->path, loss.offset, loss.offset,
				loss.bytes, loss.reason);
			t->losses++;
			t->lost_bytes += loss.bytes;
			xray_stacks__break(t->stacks);
			continue;
		}
		if ((ret = xray_stacks__add(t->stacks, &rec)))
			break;
		if (rec.kind <= XRAY_REC_ENTER_ARGS)
			check_record(im, t, &rec);
		/* pages read are not needed again: memory stays the stacks', not the trace's */
		if (rec.offset >= dropped + DROP_STEP && rec.offset < (uint64_t)st.st_size) {
			uint64_t upto = (rec.offset - DROP_MARGIN) & ~(uint64_t)(DROP_STEP - 1);

			if (upto > dropped) {
				madvise(data, upto, MADV_DONTNEED);
				dropped = upto;
			}
		}
	}
	if (!ret)
		ret = xray_stacks__finish(t->stacks);
	if (ret && im->spill_err) {
		fprintf(stderr, "sfprof import: writing a temporary file next to %s: %s\n",
			im->output, strerror(im->spill_err));
		goto out;
	}
	if (ret) {
		fprintf(stderr, "sfprof import: %s: %s\n", t->path, ret == -E2BIG ?
			"its timestamps span more one-second windows than its records can "
			"account for (damaged timestamps?)" : strerror(-ret));
		goto out;
	}
	if (!xray_stacks__stats(t->stacks)->function_records) {
		fprintf(stderr, "sfprof import: %s: no function records%s\n", t->path,
			t->losses ? " could be read" : " in the trace");
		goto out;
	}
	status = 0;
out:
	xray_reader__free(r);
	if (data != MAP_FAILED)
		munmap(data, st.st_size);
	if (fd >= 0)
		close(fd);
	return status;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The binary's segments as the loader maps them, in each process of the traces. */
static int write_process(struct import *im, uint32_t pid)
{
	struct profile_process proc = { .pid = pid, .comm = im->comm, .exe = im->binary_abs };
	const struct sfu_segment *segs;
	size_t nsegs;
	int err;

	if ((err = profile_writer__process(im->w, &proc)))
		return err;
	segs = sfu_module__segments(im->module, &nsegs);
	for (size_t i = 0; i < nsegs; i++) {
		const uint64_t page = 4096;
		struct profile_mapping m = {
			.pid = pid,
			.start = segs[i].vaddr & ~(page - 1),
			.end = segs[i].vaddr + segs[i].memsz,
			.file_offset = segs[i].offset & ~(page - 1),
			.prot = (segs[i].flags & PF_R ? 1 : 0) | (segs[i].flags & PF_W ? 2 : 0) |
				(segs[i].flags & PF_X ? 4 : 0),
			.module_id = im->module_id,
		};

		if (!segs[i].memsz)
			continue;
		if ((err = profile_writer__mapping(im->w, &m)))
			return err;
	}
	return 0;
}

static uint64_t func_addr(struct import *im, int32_t id)
{
	uint64_t addr;

	if (!xray_instrmap__func(im->map, id, &addr))
		return addr;
	return UNKNOWN_FUNC_BASE | (uint32_t)id;
}

/* The CBF bytes of @node of trace @t: every frame an exact pc, the function's entry. */
static int node_cbf(struct import *im, const struct trace *t, uint32_t node,
		    const uint8_t **cbf, size_t *len)
{
	struct sfu_cbf_enc enc;
	uint32_t depth, parent, n = 0;
	int32_t func;
	int err;

	depth = xray_stacks__node(t->stacks, node, &func, &parent);
	if (depth + 1 > im->frames_cap) {
		struct sfu_cbf_frame *p = realloc(im->frames, (depth + 1) * sizeof(*p));

		if (!p)
			return -ENOMEM;
		im->frames = p;
		im->frames_cap = depth + 1;
	}
	/* innermost first; a stack too deep loses its middle to an omit */
	for (uint32_t i = 0, at = node; i < depth; i++) {
		if (depth > MAX_FRAMES && i == MAX_FRAMES - KEEP_OUTER)
			im->frames[n++] = (struct sfu_cbf_frame){ SFU_CBF_OMIT,
								   depth - MAX_FRAMES };
		xray_stacks__node(t->stacks, at, &func, &parent);
		if (depth <= MAX_FRAMES || i < MAX_FRAMES - KEEP_OUTER ||
		    i >= depth - KEEP_OUTER)
			im->frames[n++] = (struct sfu_cbf_frame){ SFU_CBF_PC, func_addr(im, func) };
		at = parent;
	}
	if (SFU_CBF_BOUND(n) > im->cbf_cap) {
		uint8_t *p = realloc(im->cbf_buf, SFU_CBF_BOUND(n));

		if (!p)
			return -ENOMEM;
		im->cbf_buf = p;
		im->cbf_cap = SFU_CBF_BOUND(n);
	}
	if ((err = sfu_cbf_enc__init(&enc, 64, im->cbf_buf, im->cbf_cap)) ||
	    (err = sfu_cbf_encode_frames(&enc, im->frames, n)))
		return err;
	*cbf = im->cbf_buf;
	*len = sfu_cbf_enc__len(&enc);
	return 0;
}

/*
 * One weighted sample per cell, read back from the spill in the order the
 * windows closed. Weights telescope: each (thread, stack)'s samples sum to
 * its ticks in ns, rounded once.
 */
static int write_samples(struct import *im, const struct trace *t)
{
	const struct xray_stacks_stats *st = xray_stacks__stats(t->stacks);
	uint64_t left = xray_stacks__ncells(t->stacks);
	size_t nnodes = xray_stacks__nnodes(t->stacks);
	/* each node's stack id in the profile, 0 until it has one: encoded and interned once */
	uint32_t *ids = calloc(nnodes, sizeof(*ids));
	struct xray_cell cells[1024];
	int err = 0;

	if (!ids)
		return -ENOMEM;
	if (fseeko(im->spill, (off_t)(t->first_cell * sizeof(*cells)), SEEK_SET)) {
		err = -errno;
		goto out;
	}
	while (left) {
		size_t n = left < 1024 ? left : 1024;

		if (fread(cells, sizeof(*cells), n, im->spill) != n) {
			err = ferror(im->spill) ? -EIO : -ENODATA;
			goto out;
		}
		left -= n;
		for (size_t i = 0; i < n; i++) {
			const struct xray_cell *c = &cells[i];
			const struct xray_thread *th;
			struct profile_sample s;
			uint64_t ns;

			if (c->thread >= xray_stacks__nthreads(t->stacks) || c->node >= nnodes) {
				err = -EIO;
				goto out;
			}
			th = xray_stacks__thread(t->stacks, c->thread);
			s = (struct profile_sample){ .pid = th->pid, .tid = th->tid };
			ns = xray_ticks_to_ns(c->before + c->ticks, t->freq) -
			     xray_ticks_to_ns(c->before, t->freq);
			/* when the time it stands for ended: samples of a window fall inside it */
			s.time_ns = t->offset_ns +
				    xray_ticks_to_ns(c->end_tsc - st->first_tsc, t->freq);
			if (!ids[c->node]) {
				const uint8_t *cbf;
				size_t len;

				if ((err = node_cbf(im, t, c->node, &cbf, &len)) ||
				    (err = profile_writer__stack(im->w, PROFILE_USER, cbf, len,
								 &ids[c->node])))
					goto out;
			}
			s.ustack_id = ids[c->node];
			while (ns) {
				s.weight = ns > UINT32_MAX ? UINT32_MAX : ns;
				ns -= s.weight;
				if ((err = profile_writer__sample(im->w, &s)))
					goto out;
				im->samples++;
			}
		}
	}
out:
	free(ids);
	return err;
}

static int write_profile(struct import *im, bool failed, struct profile_diag *diag)
{
	const struct sfu_build_id *bid = sfu_module__build_id(im->module);
	struct profile_module mod = {
		.file_size = sfu_module__file_size(im->module),
		.build_id = bid->bytes,
		.build_id_len = bid->len,
		.path = im->binary_abs,
	};
	const struct trace *t0 = &im->traces[0];
	const struct xray_stacks_stats *st0 = xray_stacks__stats(t0->stacks);
	uint64_t span0 = xray_ticks_to_ns(st0->last_tsc - st0->first_tsc, t0->freq);
	struct profile_meta meta = {
		.flags = PROFILE_F_WALL_NS,
		.created_ns = clock_real_ns(),
		.cmdline = im->binary_abs,
		/* the trace is written when it ends: its file's time dates its end */
		.clock_offset_ns = t0->mtime_ns > span0 ? t0->mtime_ns - span0 : 0,
	};
	uint64_t *threads = NULL;
	size_t nthreads = 0;
	int err = 0;

	/* the windows are all on disk before the profile replaces anything */
	if (fflush(im->spill)) {
		err = -errno;
		snprintf(diag->reason, sizeof(diag->reason), "writing a temporary file next to %s: %s",
			 im->output, strerror(-err));
		return err;
	}
	/* (pid, tid) of every thread of every trace, each once, by pid */
	for (size_t i = 0; i < im->ntraces; i++)
		nthreads += xray_stacks__nthreads(im->traces[i].stacks);
	threads = malloc(nthreads * sizeof(*threads));
	if (!threads) {
		snprintf(diag->reason, sizeof(diag->reason), "out of memory");
		return -ENOMEM;
	}
	nthreads = 0;
	for (size_t i = 0; i < im->ntraces; i++) {
		const struct trace *t = &im->traces[i];

		for (size_t j = 0; j < xray_stacks__nthreads(t->stacks); j++) {
			const struct xray_thread *th = xray_stacks__thread(t->stacks, j);

			threads[nthreads++] = (uint64_t)th->pid << 32 | th->tid;
		}
	}
	qsort(threads, nthreads, sizeof(*threads), u64_cmp);
	im->w = profile_writer__create(im->output, &meta, diag);
	if (!im->w) {
		err = -errno;
		free(threads);
		return err;
	}
	if ((err = profile_writer__module(im->w, &mod, &im->module_id)))
		goto fail;
	for (size_t i = 0; i < nthreads; i++) {
		struct profile_thread pt = { threads[i] >> 32, (uint32_t)threads[i], im->comm };

		if (i && threads[i] == threads[i - 1])
			continue;
		if ((!i || pt.pid != threads[i - 1] >> 32) && (err = write_process(im, pt.pid)))
			goto fail;
		if ((err = profile_writer__thread(im->w, &pt)))
			goto fail;
	}
	for (size_t i = 0; i < im->ntraces; i++)
		if ((err = write_samples(im, &im->traces[i])))
			goto fail;
	free(threads);
	err = profile_writer__close_whole(im->w, failed, diag);
	im->w = NULL;
	return err;
fail:
	free(threads);
	snprintf(diag->reason, sizeof(diag->reason), "%s: %s", im->output, strerror(-err));
	profile_writer__discard(im->w);
	im->w = NULL;
	return err;
}

static int count_unknown(void *ctx, int32_t func, uint64_t calls, uint64_t closed)
{
	struct import *im = ctx;
	uint64_t addr;

	(void)closed;
	if (xray_instrmap__func(im->map, func, &addr))
		im->unknown_ids += calls;
	return 0;
}

/* A function's counts, for --functions in the order of ids. */
struct func_count {
	int32_t func;
	uint64_t calls, closed;
};

struct func_counts {
	struct func_count *v;
	size_t n, cap;
};

static int add_function(void *ctx, int32_t func, uint64_t calls, uint64_t closed)
{
	struct func_counts *fc = ctx;

	if (fc->n == fc->cap) {
		size_t cap = fc->cap ? fc->cap * 2 : 256;
		struct func_count *p = realloc(fc->v, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		fc->v = p;
		fc->cap = cap;
	}
	fc->v[fc->n++] = (struct func_count){ func, calls, closed };
	return 0;
}

static int func_cmp(const void *a, const void *b)
{
	const struct func_count *x = a, *y = b;

	return x->func < y->func ? -1 : x->func > y->func;
}

static int print_functions(struct import *im, const struct trace *t)
{
	struct func_counts fc = { 0 };
	int err = xray_stacks__foreach_func(t->stacks, add_function, &fc);

	if (!err) {
		qsort(fc.v, fc.n, sizeof(*fc.v), func_cmp);
		if (im->ntraces > 1)
			printf("# %s\n", t->path);
		for (size_t i = 0; i < fc.n; i++)
			printf("%11" PRId32 " %12" PRIu64 " %12" PRIu64 " 0x%" PRIx64 "\n",
			       fc.v[i].func, fc.v[i].calls, fc.v[i].closed,
			       func_addr(im, fc.v[i].func));
	}
	free(fc.v);
	return err;
}

static int print_map(const struct import *im)
{
	for (size_t id = 1; id <= xray_instrmap__count(im->map); id++) {
		uint64_t addr = 0;

		xray_instrmap__func(im->map, id, &addr);
		printf("%11zu 0x%" PRIx64 "\n", id, addr);
	}
	return fflush(stdout) || ferror(stdout);
}

static int count_funcs(void *ctx, int32_t func, uint64_t calls, uint64_t closed)
{
	(void)func;
	(void)calls;
	(void)closed;
	(*(uint64_t *)ctx)++;
	return 0;
}

static void print_summary(struct import *im, const struct trace *t)
{
	const struct xray_stacks_stats *st = xray_stacks__stats(t->stacks);
	uint64_t span = xray_ticks_to_ns(st->last_tsc - st->first_tsc, t->freq);
	uint64_t funcs = 0;

	xray_stacks__foreach_func(t->stacks, count_funcs, &funcs);
	fprintf(stderr, "%s: XRay %s version %u, %" PRIu64 " ticks/s%s\n", t->path,
		t->hdr.type == XRAY_TRACE_FDR ? "FDR" : "basic mode", t->hdr.version,
		t->hdr.cycle_freq, t->hdr.cycle_freq ? "" : " (none: ticks taken as ns)");
	fprintf(stderr, "  threads          %zu%s\n", xray_stacks__nthreads(t->stacks),
		xray_stacks__thread(t->stacks, 0)->pid ? "" :
		" (the trace has no process ids: shown as pid 0)");
	fprintf(stderr, "  records          %" PRIu64 " (%" PRIu64 " function: %" PRIu64 " entries, %"
		PRIu64 " with arguments, %" PRIu64 " exits, %" PRIu64 " tail exits)\n", st->records,
		st->function_records, st->enters, st->enters_args, st->exits, st->tail_exits);
	fprintf(stderr, "  functions        %" PRIu64 " entered (the map has %zu)\n", funcs,
		xray_instrmap__count(im->map));
	fprintf(stderr, "  time covered     %" PRIu64 ".%09" PRIu64 " s, self time %" PRIu64 " ns\n",
		span / 1000000000u, span % 1000000000u, xray_ticks_to_ns(st->self_ticks, t->freq));
	fprintf(stderr, "  unmatched exits  %" PRIu64 " (no entry of their function on the stack: "
		"ignored)\n", st->unmatched);
	fprintf(stderr, "  unwound frames   %" PRIu64 " (popped by an outer exit: exceptions, "
		"longjmp)\n", st->unwound);
	fprintf(stderr, "  call arguments   %" PRIu64 "\n", st->call_args);
	fprintf(stderr, "  custom events    %" PRIu64 "\n", st->custom_events);
	fprintf(stderr, "  typed events     %" PRIu64 "\n", st->typed_events);
	if (st->backwards)
		fprintf(stderr, "  time backwards   %" PRIu64 " records earlier than the one before "
			"(no time counted)\n", st->backwards);
	if (st->gaps)
		fprintf(stderr, "  gaps             %" PRIu64 " intervals of more than 18 hours (not "
			"counted)\n", st->gaps);
	if (st->too_deep)
		fprintf(stderr, "  too deep         %" PRIu64 " entries past %u frames\n", st->too_deep,
			XRAY_STACKS_MAX_DEPTH);
	fprintf(stderr, "  lost             %" PRIu64 " bytes in %" PRIu64 " place(s)\n",
		t->lost_bytes, t->losses);
}

static void import_free(struct import *im)
{
	for (size_t i = 0; i < im->ntraces; i++)
		xray_stacks__free(im->traces[i].stacks);
	free(im->traces);
	xray_instrmap__free(im->map);
	sfu_module__put(im->module);
	free(im->binary_abs);
	free(im->frames);
	free(im->cbf_buf);
	if (im->spill)
		fclose(im->spill);
}

static int import_xray(int argc, char **argv)
{
	enum { OPT_FUNCTIONS = 256, OPT_MAP, OPT_FORCE };
	static const struct option opts[] = {
		{ "instr-map", required_argument, NULL, 'm' },
		{ "output", required_argument, NULL, 'o' },
		{ "functions", no_argument, NULL, OPT_FUNCTIONS },
		{ "map", no_argument, NULL, OPT_MAP },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct import im = { .output = "sfprof.data" };
	struct profile_diag diag = { "" };
	char reason[160] = "";
	struct sfu_diag sdiag;
	uint64_t losses = 0;
	int c, ret = 1;

	while ((c = getopt_long(argc, argv, "m:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			im.binary = optarg;
			break;
		case 'o':
			im.output = optarg;
			break;
		case OPT_FUNCTIONS:
			im.functions = true;
			break;
		case OPT_MAP:
			im.map_only = true;
			break;
		case OPT_FORCE:
			im.force = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (!im.binary || (optind == argc && !im.map_only) || (optind != argc && im.map_only)) {
		fprintf(stderr, "sfprof import xray: %s\n",
			!im.binary ? "say which binary with -m BINARY" :
			im.map_only ? "--map takes no trace" : "no trace to import");
		fputs(usage, stderr);
		return 2;
	}
	im.map = xray_instrmap__open(im.binary, reason);
	if (!im.map) {
		fprintf(stderr, "sfprof import: %s: %s\n", im.binary, reason);
		goto out;
	}
	if (im.map_only) {
		ret = print_map(&im);
		goto out;
	}
	im.module = sfu_module__open(im.binary, &sdiag);
	im.binary_abs = realpath(im.binary, NULL);
	if (!im.module || !im.binary_abs) {
		fprintf(stderr, "sfprof import: %s: %s\n", im.binary,
			im.module ? strerror(errno) : sdiag.reason);
		goto out;
	}
	im.comm = strrchr(im.binary_abs, '/') ? strrchr(im.binary_abs, '/') + 1 : im.binary_abs;
	im.traces = calloc(argc - optind, sizeof(*im.traces));
	if (!im.traces) {
		fprintf(stderr, "sfprof import: out of memory\n");
		goto out;
	}
	im.spill = open_spill(im.output);
	if (!im.spill) {
		fprintf(stderr, "sfprof import: a temporary file next to %s: %s\n", im.output,
			strerror(errno));
		goto out;
	}
	for (int i = optind; i < argc; i++) {
		struct trace *t = &im.traces[im.ntraces++];

		t->path = argv[i];
		if (read_trace(&im, t))
			goto out;
		if (!im.force && check_trace(&im, t))
			goto out;
		xray_stacks__foreach_func(t->stacks, count_unknown, &im);
		losses += t->losses;
		if (i > optind) {
			const struct trace *prev = &im.traces[im.ntraces - 2];
			const struct xray_stacks_stats *ps = xray_stacks__stats(prev->stacks);

			/* traces follow one another in the profile's time */
			t->offset_ns = prev->offset_ns + xray_ticks_to_ns(ps->last_tsc - ps->first_tsc,
									  prev->freq) + 1;
		}
	}
	if ((ret = write_profile(&im, losses != 0, &diag))) {
		fprintf(stderr, "sfprof import: %s\n", diag.reason);
		ret = 1;
		goto out;
	}
	for (size_t i = 0; i < im.ntraces; i++)
		print_summary(&im, &im.traces[i]);
	if (im.unknown_ids)
		fprintf(stderr, "sfprof import: warning: %" PRIu64 " entries of function ids that %s's "
			"xray_instr_map does not have (a trace of another build?)\n", im.unknown_ids,
			im.binary);
	fprintf(stderr, "sfprof import: wrote %s: %" PRIu64 " samples, weights in ns of self time%s\n", im.output,
		im.samples, losses ? "; marked incomplete: parts of the trace were lost" : "");
	if (im.functions) {
		int err = 0;

		printf("# %9s %12s %12s %s\n", "id", "entries", "closed", "address");
		for (size_t i = 0; i < im.ntraces && !err; i++)
			err = print_functions(&im, &im.traces[i]);
		if (err || fflush(stdout) || ferror(stdout)) {
			fprintf(stderr, "sfprof import: writing: %s\n", strerror(err ? -err : errno));
			ret = 1;
			goto out;
		}
	}
	ret = losses ? 1 : 0;
out:
	import_free(&im);
	return ret;
}

int cmd_import(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "xray"))
		return import_xray(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage, stdout);
		return 0;
	}
	fprintf(stderr, "sfprof import: %s (formats: xray)\n",
		argc < 2 ? "say which format" : "unknown format");
	fputs(usage, stderr);
	return 2;
}
