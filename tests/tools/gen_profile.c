/* SPDX-License-Identifier: BSD-2-Clause */
/* gen-profile: write a synthetic profile with many mappings, processes, threads or stacks. */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <link.h>
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
	"                   [--jit-map N [--jit-file] [--jit-samples S] [--jit-stacks K]]\n"
	"                   [--python LIB [--python-scale K]]\n"
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
	"  --seed S       for --order random, --overlapping, --samples and the JIT\n"
	"                 process's stacks (default 1)\n"
	"  --jit-map N    a process running JIT code (pid 3000, \"jitvm\"): an anonymous\n"
	"                 r-x mapping holding N functions of 64 bytes, named by N JIT\n"
	"                 records of a perf map (PROFILE_JIT_F_MAP, source\n"
	"                 /tmp/perf-3000.map) written after its samples, as a map read\n"
	"                 at exit is; its samples' user stacks (about 14 frames) run\n"
	"                 through 2-4 runs of 1-3 JIT frames between frames of the VM's\n"
	"                 executable, under main and libc's start-up; 3 in 4 leaves are\n"
	"                 in JIT code. Functions are picked with a skew (index N * u^3)\n"
	"  --jit-file     the same process, mappings and stacks, but the code's memory\n"
	"                 mapped from a file (/nonexistent/gen/jitcode.so) and no JIT\n"
	"                 records: the baseline without JIT frames\n"
	"  --jit-samples S  samples of the JIT process (default 1000000)\n"
	"  --jit-stacks K   distinct user stacks they are drawn from, K * u^2 (default\n"
	"                 100000)\n"
	"  --python LIB   a CPython-like process (pid 4000, \"python3\") whose native\n"
	"                 frames are functions of LIB (tests/unit/py_fixture.c, mapped\n"
	"                 as this program loads it) with Python frames (docs/FORMAT.md):\n"
	"                 30 samples (tid 4000) [leaf, eval, main] running rt_leaf <\n"
	"                 rt_mid < rt_top (one interpreter call); 20 * K (tid 4001,\n"
	"                 --python-scale, default 1) [leaf, eval, call, eval, main]\n"
	"                 running key_fn, called from C, < sort_them < <module>; 1 (tid\n"
	"                 4002) whose names hold a separator, markup and control\n"
	"                 characters; 5 (tid 4003) without Python frames\n"
	"\n"
	"Each part is in blocks of its own. With none of them, the profile has a\n"
	"header and a trailer and nothing else.\n";

#define BASE	0x10000000ull
#define STRIDE	0x2000ull
#define PAGE	0x1000ull
#define PID	1000u

/* --jit-map: the process, its VM's executable and libc, and its code in anonymous memory */
#define JIT_PID		3000u
#define JIT_EXE		0x400000ull	/* text of /nonexistent/gen/jitvm, 2 MiB */
#define JIT_EXE_LEN	0x200000ull
#define JIT_LIBC	0x7f1000000000ull	/* text of /nonexistent/gen/libc.so.6 */
#define JIT_LIBC_LEN	0x180000ull
#define JIT_CODE	0x7e0000000000ull
#define JIT_FN		64ull		/* bytes per JIT function */
#define JIT_MAX_FRAMES	32

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

/* --python: the fixture's functions, as this process maps the library */
enum { PY_LEAF, PY_EVAL, PY_CALL, PY_MAIN, PY_NFN };

#define PY_PID 4000u

struct py_fixture {
	const char *path;
	uint64_t fn[PY_NFN];
	struct profile_mapping maps[8];
	size_t nmaps;
};

static int py_phdr(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct py_fixture *fx = arg;

	(void)size;
	if (!info->dlpi_name || strcmp(info->dlpi_name, fx->path))
		return 0;
	for (size_t i = 0; i < info->dlpi_phnum && fx->nmaps < 8; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		fx->maps[fx->nmaps++] = (struct profile_mapping){
			PY_PID, start & ~(PAGE - 1), (start + ph->p_memsz + PAGE - 1) & ~(PAGE - 1),
			ph->p_offset & ~(PAGE - 1),
			(uint8_t)((ph->p_flags & PF_R ? 1 : 0) | (ph->p_flags & PF_W ? 2 : 0) |
				  (ph->p_flags & PF_X ? 4 : 0)), 0 };
	}
	return 1;
}

/* A sample of the Python process: user stack @addrs, Python frames @py (ids, innermost first). */
static int py_sample(struct gen *g, uint32_t tid, const uint64_t *addrs, size_t n,
		     const uint32_t *py, size_t npy)
{
	uint8_t cbf[SFU_CBF_BOUND(8)];
	struct sfu_cbf_enc enc;
	struct profile_sample s = { .pid = PY_PID, .tid = tid, .weight = 1, .py_frames = py,
				    .py_depth = npy };
	int err;

	if ((err = sfu_cbf_enc__init(&enc, 64, cbf, sizeof(cbf))) ||
	    (err = sfu_cbf_encode_stack(&enc, addrs, n, 0, false)))
		return err;
	s.time_ns = g->time += 1000000;
	s.ustack = cbf;
	s.ustack_len = sfu_cbf_enc__len(&enc);
	return profile_writer__sample(g->w, &s);
}

static int python_process(struct gen *g, const char *lib, size_t scale)
{
	static const char *const names[PY_NFN] = { "py_fixture_leaf", "_PyEval_EvalFrameDefault",
						   "py_fixture_call", "py_fixture_main" };
	static const struct profile_py_frame frames[] = {
		{ 0, "rt_leaf", "/srv/app/prog.py", 30, 0 },
		{ 0, "rt_mid", "/srv/app/prog.py", 20, 0 },
		{ 0, "rt_top", "/srv/app/prog.py", 10, PROFILE_PY_F_ENTRY },
		{ 0, "key_fn", "/srv/app/sorter.py", 7, PROFILE_PY_F_ENTRY },
		{ 0, "sort_them", "/srv/app/sorter.py", 12, 0 },
		{ 0, "<module>", "/srv/app/sorter.py", 40, PROFILE_PY_F_ENTRY },
		{ 0, "Odd;name <b>&\x1b[31m\n", "/srv/a b;c/odd.py", 3, PROFILE_PY_F_ENTRY },
	};
	struct py_fixture fx = { .path = lib };
	struct profile_process p = { .pid = PY_PID, .ppid = 1, .comm = "python3", .exe = lib };
	struct profile_module mod = { .path = lib };
	struct profile_thread t = { PY_PID, 0, "python3" };
	uint32_t id[7], module;
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	uint64_t u[5];
	int err;

	if (!h) {
		fprintf(stderr, "gen-profile: %s\n", dlerror());
		return -ENOENT;
	}
	for (int i = 0; i < PY_NFN; i++) {
		void *sym = dlsym(h, names[i]);

		if (!sym) {
			dlclose(h);
			return -ENOENT;
		}
		/* inside the function, as a return address is */
		fx.fn[i] = (uintptr_t)sym + 4;
	}
	dl_iterate_phdr(py_phdr, &fx);
	dlclose(h);
	if (!fx.nmaps)
		return -ENOENT;
	if ((err = profile_writer__process(g->w, &p)) ||
	    (err = profile_writer__module(g->w, &mod, &module)))
		return err;
	for (size_t i = 0; i < fx.nmaps && !err; i++) {
		fx.maps[i].module_id = module;
		err = profile_writer__mapping(g->w, &fx.maps[i]);
	}
	for (size_t i = 0; i < 7 && !err; i++)
		err = profile_writer__py_frame(g->w, &frames[i], &id[i]);
	for (uint32_t tid = PY_PID + 1; tid < PY_PID + 4 && !err; tid++) {
		t.tid = tid;
		err = profile_writer__thread(g->w, &t);
	}
	/* one interpreter call running three functions */
	u[0] = fx.fn[PY_LEAF], u[1] = fx.fn[PY_EVAL], u[2] = fx.fn[PY_MAIN];
	for (int i = 0; i < 30 && !err; i++)
		err = py_sample(g, PY_PID, u, 3, id, 3);
	/* two: a C function (sorted()) calls back into Python */
	u[0] = fx.fn[PY_LEAF], u[1] = fx.fn[PY_EVAL], u[2] = fx.fn[PY_CALL];
	u[3] = fx.fn[PY_EVAL], u[4] = fx.fn[PY_MAIN];
	for (size_t i = 0; i < 20 * scale && !err; i++)
		err = py_sample(g, PY_PID + 1, u, 5, id + 3, 3);
	u[0] = fx.fn[PY_EVAL], u[1] = fx.fn[PY_MAIN];
	if (!err)
		err = py_sample(g, PY_PID + 2, u, 2, id + 6, 1);
	u[0] = fx.fn[PY_LEAF], u[1] = fx.fn[PY_MAIN];
	for (int i = 0; i < 5 && !err; i++)
		err = py_sample(g, PY_PID + 3, u, 2, NULL, 0);
	return err;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "gen-profile: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

/* A sample of @pid/@tid whose user stack is @addrs (innermost first). */
static int sample(struct gen *g, uint32_t pid, uint32_t tid, const uint64_t *addrs, size_t n)
{
	uint8_t cbf[SFU_CBF_BOUND(JIT_MAX_FRAMES)];
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

/* splitmix64: a path's stack from its number alone, the same whatever drew it */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* A uniform double in [0, 1) from @r. */
static double unit(uint64_t r)
{
	return (double)(r >> 11) / 9007199254740992.0;
}

/* A JIT function, skewed towards low indexes: N * u^3. */
static uint64_t jit_fn(struct gen *g, size_t nfn)
{
	double u = unit(rnd(g));
	size_t f = (size_t)((double)nfn * u * u * u);

	return JIT_CODE + JIT_FN * (f < nfn ? f : nfn - 1);
}

/*
 * The user stack of path @p of the JIT process (innermost first), in
 * @addrs[JIT_MAX_FRAMES]: a leaf in JIT code (3 in 4) or in the VM below
 * JIT code, then 2-4 runs of 1-3 JIT frames each under 1-2 frames of the
 * VM's executable (its interpreter, a call stub), then main, libc's
 * __libc_start_call_main and _start. @return the number of frames.
 */
static size_t jit_path(uint64_t seed, size_t p, size_t nfn, uint64_t *addrs)
{
	struct gen g = { .rng = mix(seed ^ mix(p)) | 1 };
	size_t n = 0, runs = 2 + rnd(&g) % 3;

	if (rnd(&g) % 4 == 0) {
		/* a VM helper the JIT code called, and its caller in the VM */
		addrs[n++] = JIT_EXE + 0x10000 + rnd(&g) % 0x40000;
		if (rnd(&g) % 2)
			addrs[n++] = JIT_EXE + 0x50000 + rnd(&g) % 0x10000;
		addrs[n++] = jit_fn(&g, nfn) + 8 + rnd(&g) % (JIT_FN - 8);
	} else {
		addrs[n++] = jit_fn(&g, nfn) + rnd(&g) % JIT_FN;
	}
	for (size_t r = 0; r < runs; r++) {
		size_t k = r ? 1 + rnd(&g) % 3 : rnd(&g) % 3, vm = 1 + rnd(&g) % 2;

		/* return addresses: after a call inside each function */
		for (size_t i = 0; i < k; i++)
			addrs[n++] = jit_fn(&g, nfn) + 8 + rnd(&g) % (JIT_FN - 8);
		for (size_t i = 0; i < vm; i++)
			addrs[n++] = JIT_EXE + 0x80000 + 0x400 * (rnd(&g) % 64) + 0x20 + rnd(&g) % 0x100;
	}
	addrs[n++] = JIT_EXE + 0x1234;		/* main */
	addrs[n++] = JIT_LIBC + 0x271ca;	/* __libc_start_call_main */
	addrs[n++] = JIT_EXE + 0x1025;		/* _start */
	return n;
}

/*
 * --jit-map: the JIT process, @nsamples samples over @nstacks paths, and
 * (unless @file) its perf map's @nfn lines, after the samples.
 */
static int jit_process(struct gen *g, size_t nfn, bool file, size_t nsamples, size_t nstacks)
{
	struct profile_process p = { .pid = JIT_PID, .ppid = 1, .comm = "jitvm",
				     .exe = "/nonexistent/gen/jitvm" };
	static const char *const paths[] = { "/nonexistent/gen/jitvm", "/nonexistent/gen/libc.so.6",
					     "/nonexistent/gen/jitcode.so" };
	uint64_t seed = g->rng, code_len = (nfn * JIT_FN + PAGE - 1) / PAGE * PAGE;
	uint32_t mods[3];
	char name[128];
	int err;

	if ((err = profile_writer__process(g->w, &p)))
		return err;
	for (size_t i = 0; i < 3; i++) {
		uint8_t build_id[20] = { 0x9e, 0x17 };
		struct profile_module mod = { .path = paths[i], .build_id = build_id,
					      .build_id_len = sizeof(build_id) };

		build_id[2] = (uint8_t)i;
		if ((err = profile_writer__module(g->w, &mod, &mods[i])))
			return err;
	}
	if ((err = profile_writer__mapping(g->w, &(struct profile_mapping){
			JIT_PID, JIT_EXE, JIT_EXE + JIT_EXE_LEN, 0, 5, mods[0] })) ||
	    (err = profile_writer__mapping(g->w, &(struct profile_mapping){
			JIT_PID, JIT_LIBC, JIT_LIBC + JIT_LIBC_LEN, 0x26000, 5, mods[1] })) ||
	    (err = profile_writer__mapping(g->w, &(struct profile_mapping){
			JIT_PID, JIT_CODE, JIT_CODE + code_len, 0, 5, file ? mods[2] : 0 })) ||
	    (err = profile_writer__flush(g->w)))
		return err;
	for (size_t i = 0; i < nsamples && !err; i++) {
		uint64_t addrs[JIT_MAX_FRAMES];
		double u = unit(rnd(g));
		size_t path = (size_t)((double)nstacks * u * u), n;

		n = jit_path(seed, path < nstacks ? path : nstacks - 1, nfn, addrs);
		err = sample(g, JIT_PID, JIT_PID, addrs, n);
	}
	if (err || (err = profile_writer__flush(g->w)) || file)
		return err;
	for (size_t i = 0; i < nfn && !err; i++) {
		struct profile_jit j = { .time_ns = g->time + 1000000, .pid = JIT_PID,
					 .start = JIT_CODE + JIT_FN * i,
					 .end = JIT_CODE + JIT_FN * (i + 1), .flags = PROFILE_JIT_F_MAP,
					 .name = name, .source = "/tmp/perf-3000.map" };

		/* V8's style of name (--perf-basic-prof) */
		snprintf(name, sizeof(name), "JS:*jit_fn_%zu /srv/app/src/mod%zu.js:%zu:%zu", i,
			 i / 100, 1 + i * 7 % 900, 1 + i % 80);
		err = profile_writer__jit(g->w, &j);
	}
	if (!err)
		err = profile_writer__exit(g->w, &(struct profile_exit){ g->time + 2000000, JIT_PID });
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
		{ "jit-map", required_argument, NULL, 'J' },
		{ "jit-file", no_argument, NULL, 'F' },
		{ "jit-samples", required_argument, NULL, 'N' },
		{ "jit-stacks", required_argument, NULL, 'K' },
		{ "python", required_argument, NULL, 'P' },
		{ "python-scale", required_argument, NULL, 'Q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	size_t nmaps = 0, nover = 0, nmods = 1, nprocs = 0, nthreads = 0, nstacks = 0, nsamples = 0;
	size_t njit = 0, jit_samples = 1000000, jit_stacks = 100000, py_scale = 1;
	const char *py_lib = NULL;
	bool jit_file = false;
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
		case 'J': njit = strtoull(optarg, NULL, 0); break;
		case 'F': jit_file = true; break;
		case 'N': jit_samples = strtoull(optarg, NULL, 0); break;
		case 'K': jit_stacks = strtoull(optarg, NULL, 0); break;
		case 'P': py_lib = optarg; break;
		case 'Q': py_scale = strtoull(optarg, NULL, 0); break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (!out || optind != argc || !nmods || (strcmp(order, "asc") && strcmp(order, "desc") &&
						 strcmp(order, "random")) ||
	    (jit_file && !njit) || (njit && !jit_stacks)) {
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
	if (!err && njit && !(err = profile_writer__flush(g.w)))
		err = jit_process(&g, njit, jit_file, jit_samples, jit_stacks);
	if (!err && py_lib && !(err = profile_writer__flush(g.w)))
		err = python_process(&g, py_lib, py_scale);
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
