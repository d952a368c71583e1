/* SPDX-License-Identifier: BSD-2-Clause */
/* libsfunwind under test, SFrame only: a gap in the tables must not hide behind frame pointers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sfunwind/addrspace.h"
#include "sfunwind/unwind.h"
#include "unwinder.h"

struct sfu_walker {
	struct sfu_addrspace *as;
	struct sfu_unwind_opts opts;
	struct sfu_frame frames[BENCH_DEPTH_MAX];
};

static size_t sfu_walk(void *state, const struct bench_snapshot *s, uint64_t *out, size_t max,
		       const char **why)
{
	struct sfu_walker *w = state;
	struct sfu_snapshot mem = { s->base, s->stack, s->size };
	size_t n;
	int stop;

	stop = sfu_unwind(w->as, &w->opts, &s->regs, sfu_snapshot_read, &mem, w->frames, max, &n);
	if (why)
		*why = sfu_stop_name(stop);
	if (out) {
		for (size_t i = 0; i < n; i++)
			out[i] = w->frames[i].addr;
	}
	return n;
}

static void sfu_walker__free(void *state)
{
	struct sfu_walker *w = state;

	if (!w)
		return;
	sfu_addrspace__free(w->as);
	sfu_unwind_cache__free(w->opts.cache);
	free(w);
}

int unwinder_sfunwind__init(struct unwinder *u)
{
	struct sfu_diag diag = { 0 };
	struct sfu_walker *w;
	int err;

	w = calloc(1, sizeof(*w));
	if (!w) {
		fprintf(stderr, "bench_unwind: libsfunwind: %s\n", strerror(ENOMEM));
		return -ENOMEM;
	}
	*u = (struct unwinder){ "libsfunwind", sfu_walk, sfu_walker__free, w };
	/* warm caches, as in the profiler: one row cache per unwinding thread */
	SFU_OPTS_RESET(&w->opts, .arch = SFU_ARCH_X86_64, .no_fp_fallback = 1,
		       .cache = sfu_unwind_cache__new());
	w->as = sfu_addrspace__new(NULL, NULL);
	if (!w->as || !w->opts.cache) {
		err = -errno;
		fprintf(stderr, "bench_unwind: libsfunwind: cannot create an address space: %s\n",
			strerror(-err));
		return err;
	}
	err = sfu_addrspace__load_pid(w->as, getpid(), &diag);
	if (err) {
		fprintf(stderr, "bench_unwind: libsfunwind: loading /proc/self/maps: %s\n",
			diag.reason[0] ? diag.reason : strerror(-err));
		return err;
	}
	return 0;
}
