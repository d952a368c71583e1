/* SPDX-License-Identifier: BSD-2-Clause */
/* gen-profile: write a synthetic profile with many mappings, processes, threads or stacks. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "sfunwind/cbf.h"

static const char usage[] =
	"usage: gen-profile -o FILE [--mappings N] [--order asc|desc|random] [--modules M]\n"
	"                   [--interleave] [--overlapping N] [--processes N] [--threads N]\n"
	"                   [--stacks N] [--samples N] [--seed S]\n"
	"\n"
	"Writes a valid profile through the profile writer, for benchmarks and tests\n"
	"of reading: everything it holds is known by construction.\n"
	"\n"
	"  --mappings N   N mappings of pid 1000, one page each, a page apart, at\n"
	"                 0x10000000 + 0x2000 * i, written in --order (default asc);\n"
	"                 mapping i is of module 1 + i % M (--modules, default 1,\n"
	"                 paths /nonexistent/gen/libN.so, with build IDs)\n"
	"  --interleave   a sample in each mapping right after it is written\n"
	"  --overlapping N  N more mappings of pid 1000 at random pages of a window\n"
	"                 of N pages, 1 to 16 pages long, at random file offsets of\n"
	"                 random modules: most overlap others; after each, a sample\n"
	"                 at a random address of the window (half of them return\n"
	"                 addresses)\n"
	"  --processes N  N processes (pids 2000...), each with one mapping and one sample\n"
	"  --threads N    N threads of pid 1000 (tids 100000...), one sample each\n"
	"  --stacks N     N distinct 8-frame user stacks of pid 1000, one sample each\n"
	"  --samples N    N more samples of pid 1000, each in a random mapping\n"
	"  --seed S       for --order random, --overlapping and --samples (default 1)\n"
	"\n"
	"Each part is in blocks of its own. With none of them, the profile has a\n"
	"header and a trailer and nothing else.\n";

#define BASE	0x10000000ull
#define STRIDE	0x2000ull
#define PAGE	0x1000ull
#define PID	1000u

struct gen {
	struct profile_writer *w;
	uint64_t rng;
	uint64_t time;
	uint32_t *modules;	/* writer ids */
	size_t nmodules;
	size_t nmappings;	/* of pid PID: samples may land in any */
};

/* xorshift64*: reproducible without libc's rand() state */
static uint64_t rnd(struct gen *g)
{
	g->rng ^= g->rng >> 12;
	g->rng ^= g->rng << 25;
	g->rng ^= g->rng >> 27;
	return g->rng * 0x2545f4914f6cdd1dull;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "gen-profile: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

/* A sample of @pid/@tid whose user stack is @addrs (innermost first). */
static int sample(struct gen *g, uint32_t pid, uint32_t tid, const uint64_t *addrs, size_t n)
{
	uint8_t cbf[SFU_CBF_BOUND(16)];
	struct sfu_cbf_enc enc;
	struct profile_sample s = { 0 };
	int err;

	if ((err = sfu_cbf_enc__init(&enc, 64, cbf, sizeof(cbf))) ||
	    (err = sfu_cbf_encode_stack(&enc, addrs, n, 0, false)))
		return err;
	g->time += 1000000;
	s.time_ns = g->time;
	s.pid = pid;
	s.tid = tid;
	s.weight = 1;
	s.ustack = cbf;
	s.ustack_len = sfu_cbf_enc__len(&enc);
	return profile_writer__sample(g->w, &s);
}

static uint64_t map_addr(size_t i)
{
	return BASE + STRIDE * i;
}

static int mappings(struct gen *g, size_t n, const char *order, bool interleave)
{
	size_t *idx = malloc((n ? n : 1) * sizeof(*idx));
	int err = 0;

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		idx[i] = !strcmp(order, "desc") ? n - 1 - i : i;
	if (!strcmp(order, "random"))
		for (size_t i = n; i > 1; i--) {
			size_t j = rnd(g) % i, t = idx[i - 1];

			idx[i - 1] = idx[j];
			idx[j] = t;
		}
	for (size_t k = 0; k < n && !err; k++) {
		size_t i = idx[k];
		struct profile_mapping m = { PID, map_addr(i), map_addr(i) + PAGE, PAGE * i, 5,
					     g->modules[i % g->nmodules] };

		err = profile_writer__mapping(g->w, &m);
		if (!err && interleave) {
			uint64_t pc = map_addr(i) + 0x10;

			err = sample(g, PID, PID, &pc, 1);
		}
	}
	g->nmappings = n;
	free(idx);
	return err;
}

static int overlapping(struct gen *g, size_t n)
{
	const uint64_t window = 0x7f0000000000ull;
	int err = 0;

	for (size_t i = 0; i < n && !err; i++) {
		uint64_t start = window + PAGE * (rnd(g) % n), addrs[2];
		struct profile_mapping m = { PID, start, start + PAGE * (1 + rnd(g) % 16),
					     PAGE * (rnd(g) % 64), 1 + rnd(g) % 7,
					     g->modules[rnd(g) % g->nmodules] };

		if (rnd(g) % 8 == 0)
			m.module_id = 0;	/* anonymous memory */

		if ((err = profile_writer__mapping(g->w, &m)))
			break;
		/* a caller's return address may end its mapping: the frame is then the one before */
		addrs[0] = window + rnd(g) % (PAGE * (n + 16));
		addrs[1] = rnd(g) % 2 ? m.end : m.start + rnd(g) % (m.end - m.start);
		err = sample(g, PID, PID, addrs, 2);
	}
	return err;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mappings", required_argument, NULL, 'm' },
		{ "order", required_argument, NULL, 'O' },
		{ "modules", required_argument, NULL, 'M' },
		{ "interleave", no_argument, NULL, 'I' },
		{ "overlapping", required_argument, NULL, 'V' },
		{ "processes", required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 't' },
		{ "stacks", required_argument, NULL, 's' },
		{ "samples", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	size_t nmaps = 0, nover = 0, nmods = 1, nprocs = 0, nthreads = 0, nstacks = 0, nsamples = 0;
	struct profile_meta meta = { .freq_hz = 999, .stack_size = 8192, .host = "gen",
				     .machine = "x86_64", .cmdline = "gen-profile" };
	struct gen g = { .rng = 1, .time = 1000000000 };
	const char *out = NULL, *order = "asc";
	bool interleave = false;
	struct profile_diag diag;
	char path[64];
	int c, err = 0;

	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'm': nmaps = strtoull(optarg, NULL, 0); break;
		case 'O': order = optarg; break;
		case 'M': nmods = strtoull(optarg, NULL, 0); break;
		case 'I': interleave = true; break;
		case 'V': nover = strtoull(optarg, NULL, 0); break;
		case 'p': nprocs = strtoull(optarg, NULL, 0); break;
		case 't': nthreads = strtoull(optarg, NULL, 0); break;
		case 's': nstacks = strtoull(optarg, NULL, 0); break;
		case 'n': nsamples = strtoull(optarg, NULL, 0); break;
		case 'S': g.rng = strtoull(optarg, NULL, 0) | 1; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (!out || optind != argc || !nmods || (strcmp(order, "asc") && strcmp(order, "desc") &&
						 strcmp(order, "random"))) {
		fputs(usage, stderr);
		return 2;
	}
	g.w = profile_writer__create(out, &meta, &diag);
	if (!g.w) {
		fprintf(stderr, "gen-profile: %s\n", diag.reason);
		return 1;
	}
	g.modules = calloc(nmods, sizeof(*g.modules));
	if (!g.modules)
		return fail("modules", ENOMEM);
	g.nmodules = nmods;
	if (nmaps || nover || nthreads || nstacks || nsamples) {
		struct profile_process p = { .pid = PID, .ppid = 1, .comm = "gen", .exe = "/nonexistent/gen/gen" };

		err = profile_writer__process(g.w, &p);
	}
	for (size_t i = 0; i < nmods && !err && (nmaps || nover); i++) {
		uint8_t build_id[20] = { 0x9e, 0x4e };
		struct profile_module mod = { .path = path, .build_id = build_id,
					      .build_id_len = sizeof(build_id) };

		snprintf(path, sizeof(path), "/nonexistent/gen/lib%zu.so", i);
		memcpy(build_id + 2, &i, sizeof(i));
		err = profile_writer__module(g.w, &mod, &g.modules[i]);
	}
	/* each part in blocks of its own: a test can damage one and read the others */
	if (!err && !(err = mappings(&g, nmaps, order, interleave)) &&
	    !(err = profile_writer__flush(g.w)))
		err = overlapping(&g, nover);
	if (!err)
		err = profile_writer__flush(g.w);
	for (size_t i = 0; i < nprocs && !err; i++) {
		uint32_t pid = 2000 + i;
		struct profile_process p = { .pid = pid, .ppid = 1, .comm = "proc", .exe = "/nonexistent/gen/proc" };
		struct profile_mapping m = { pid, BASE, BASE + PAGE, 0, 5, 0 };
		uint64_t pc = BASE + 0x10;

		if (!(err = profile_writer__process(g.w, &p)) &&
		    !(err = profile_writer__mapping(g.w, &m)))
			err = sample(&g, pid, pid, &pc, 1);
	}
	if (!err)
		err = profile_writer__flush(g.w);
	for (size_t i = 0; i < nthreads && !err; i++) {
		struct profile_thread t = { PID, 100000 + i, "thread" };
		uint64_t pc = BASE + 0x10;

		if (!(err = profile_writer__thread(g.w, &t)))
			err = sample(&g, PID, t.tid, &pc, 1);
	}
	if (!err)
		err = profile_writer__flush(g.w);
	for (size_t i = 0; i < nstacks && !err; i++) {
		uint64_t addrs[8];

		/* distinct by their leaf; the callers shared, as in a real program */
		addrs[0] = BASE + 0x100000 + 4 * i;
		for (size_t k = 1; k < 8; k++)
			addrs[k] = BASE + 0x1000 * k + 0x20;
		err = sample(&g, PID, PID, addrs, 8);
	}
	if (!err)
		err = profile_writer__flush(g.w);
	for (size_t i = 0; i < nsamples && !err; i++) {
		uint64_t pc = g.nmappings ? map_addr(rnd(&g) % g.nmappings) + (rnd(&g) % PAGE)
					  : BASE + rnd(&g) % PAGE;

		err = sample(&g, PID, PID, &pc, 1);
	}
	free(g.modules);
	if (err) {
		profile_writer__discard(g.w);
		return fail(out, err);
	}
	if ((err = profile_writer__close(g.w, false, &diag))) {
		fprintf(stderr, "gen-profile: %s\n", diag.reason);
		return 1;
	}
	return 0;
}
