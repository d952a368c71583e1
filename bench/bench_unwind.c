/* SPDX-License-Identifier: BSD-2-Clause */
/* Benchmark: libsfunwind, libdw, libunwind and frame pointers unwinding the same snapshots. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture.h"
#include "common/clock.h"
#include "unwinder.h"

#define SNAPS_PER_DEPTH 4
#define BATCH_NS 2e5		/* a batch of unwinds between two clock reads */

static const size_t bench_depths[] = { 32, 128 };

/* Every unwinder must give exactly the frames the chain recorded. @return 0 or -1. */
static int check(const struct unwinder *u, const struct bench_snapshot *s, unsigned index)
{
	uint64_t frames[BENCH_DEPTH_MAX];
	const char *why = "";
	size_t n;

	n = u->walk(u->state, s, frames, s->depth, &why);
	if (n != s->depth) {
		printf("warning: %s: %zu-frame snapshot %u: %zu frames, stopped at %#" PRIx64
		       " (%s)\n", u->name, s->depth, index, n, n ? frames[n - 1] : 0, why);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (frames[i] != s->expect[i]) {
			printf("mismatch: %s: %zu-frame snapshot %u: frame %zu is %#" PRIx64
			       ", expected %#" PRIx64 "\n",
			       u->name, s->depth, index, i, frames[i], s->expect[i]);
			return -1;
		}
	}
	return 0;
}

/* @return the frames unwound; @short_unwinds counts the unwinds that fell short of main. */
static uint64_t run_batch(const struct unwinder *u, const struct bench_snapshot *snaps,
			  size_t nsnaps, size_t batch, uint64_t *short_unwinds)
{
	uint64_t frames = 0;

	for (size_t i = 0; i < batch; i++) {
		const struct bench_snapshot *s = &snaps[i % nsnaps];
		size_t n = u->walk(u->state, s, NULL, s->depth, NULL);

		frames += n;
		*short_unwinds += n != s->depth;
	}
	return frames;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Per-batch figures of one unwinder at one depth. */
struct timing {
	double *ns_per_frame;	/* one per batch, sorted */
	size_t batches;
	uint64_t short_unwinds;	/* unwinds that fell short of main */
};

/*
 * Warm up, then time batches of unwinds for @seconds in all. Each batch is
 * short, so that a batch during which another process ran stands out as an
 * outlier instead of inflating the whole figure.
 *
 * @return 0, -ENOMEM, or -ENODATA when an unwinder unwound no frame at all.
 */
static int measure(const struct unwinder *u, const struct bench_snapshot *snaps, size_t nsnaps,
		   double seconds, struct timing *t)
{
	size_t batch = nsnaps, cap = 1024;
	double t0, dt, elapsed = 0;
	uint64_t frames;

	memset(t, 0, sizeof(*t));
	/* the warm-up also sizes a batch so that the clock reads cost nothing */
	for (;;) {
		uint64_t ignored = 0;

		t0 = (double)clock_mono_ns();
		run_batch(u, snaps, nsnaps, batch, &ignored);
		if ((double)clock_mono_ns() - t0 >= BATCH_NS)
			break;
		batch *= 2;
	}
	t->ns_per_frame = malloc(cap * sizeof(*t->ns_per_frame));
	if (!t->ns_per_frame)
		return -ENOMEM;
	while (elapsed < seconds * 1e9) {
		t0 = (double)clock_mono_ns();
		frames = run_batch(u, snaps, nsnaps, batch, &t->short_unwinds);
		dt = (double)clock_mono_ns() - t0;
		elapsed += dt;
		if (!frames)
			return -ENODATA;
		if (t->batches == cap) {
			double *grown = realloc(t->ns_per_frame, 2 * cap * sizeof(*grown));

			if (!grown)
				return -ENOMEM;
			t->ns_per_frame = grown;
			cap *= 2;
		}
		t->ns_per_frame[t->batches++] = dt / (double)frames;
	}
	qsort(t->ns_per_frame, t->batches, sizeof(*t->ns_per_frame), cmp_double);
	return 0;
}

static double percentile(const struct timing *t, double p)
{
	return t->ns_per_frame[(size_t)(p * (double)(t->batches - 1))];
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_unwind [--seconds S] [--only NAME] [--verbose]\n"
		   "Unwinds the same 32- and 128-frame snapshots with libsfunwind, libdw, libunwind\n"
		   "and frame pointers; prints ns per frame and the ratio to libsfunwind.\n"
		   "  --seconds S  timing per unwinder and depth (default 0.5)\n"
		   "  --only NAME  time only this unwinder (libsfunwind, libdw, libunwind, fp),\n"
		   "               for profiling; all are still checked\n"
		   "  --verbose    also print the spread of the batches\n");
}

int main(int argc, char **argv)
{
	enum { NDEPTHS = sizeof(bench_depths) / sizeof(bench_depths[0]) };
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "only", required_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct bench_snapshot snaps[NDEPTHS][SNAPS_PER_DEPTH] = { 0 };
	/* libsfunwind first: the ratios are to it */
	static int (*const unwinder_init[])(struct unwinder *) = {
		unwinder_sfunwind__init,
		unwinder_libdw__init,
		unwinder_libunwind__init,
		unwinder_fp__init,
	};
	enum { NUNWINDERS = sizeof(unwinder_init) / sizeof(unwinder_init[0]) };
	struct unwinder unwinders[NUNWINDERS] = { 0 };
	const char *only = NULL;
	double seconds = 0.5;
	int opt, status = 1, verbose = 0;

	while ((opt = getopt_long(argc, argv, "s:o:vh", longopts, NULL)) != -1) {
		char *end;

		switch (opt) {
		case 's':
			seconds = strtod(optarg, &end);
			if (*end || !(seconds > 0)) {
				fprintf(stderr, "bench_unwind: --seconds: not a positive number: %s\n",
					optarg);
				return 2;
			}
			break;
		case 'o':
			only = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}

	for (size_t d = 0; d < NDEPTHS; d++) {
		for (unsigned i = 0; i < SNAPS_PER_DEPTH; i++) {
			int err = bench_capture(&snaps[d][i], bench_depths[d], i);

			if (err) {
				fprintf(stderr, "bench_unwind: capturing a %zu-frame stack: %s\n",
					bench_depths[d], strerror(-err));
				goto out;
			}
		}
	}
	/* the maps are read after the captures: every module is loaded by then */
	for (size_t u = 0; u < NUNWINDERS; u++) {
		if (unwinder_init[u](&unwinders[u]))
			goto out;
	}
	if (only) {
		size_t u = 0;

		while (u < NUNWINDERS && strcmp(unwinders[u].name, only))
			u++;
		if (u == NUNWINDERS) {
			fprintf(stderr, "bench_unwind: --only: no unwinder named %s\n", only);
			status = 2;
			goto out;
		}
	}

	status = 0;
	for (size_t u = 0; u < NUNWINDERS; u++) {
		for (size_t d = 0; d < NDEPTHS; d++) {
			for (unsigned i = 0; i < SNAPS_PER_DEPTH; i++) {
				if (check(&unwinders[u], &snaps[d][i], i))
					status = 1;
			}
		}
	}

	printf("# %d snapshots per depth, warm caches; median of %.0f-us batches over %.1f s\n",
	       SNAPS_PER_DEPTH, BATCH_NS / 1e3, seconds);
	printf("# libsfunwind: SFrame only; libdw: one Dwfl reused across samples; "
	       "libunwind: remote, UNW_CACHE_GLOBAL\n");
	for (size_t d = 0; d < NDEPTHS; d++) {
		double ns[NUNWINDERS] = { 0 };

		printf("# %zu-frame stacks\n", bench_depths[d]);
		for (size_t u = 0; u < NUNWINDERS; u++) {
			struct timing t;
			int err;

			if (only && strcmp(unwinders[u].name, only))
				continue;
			err = measure(&unwinders[u], snaps[d], SNAPS_PER_DEPTH, seconds, &t);
			if (err) {
				printf("warning: %s: %s\n", unwinders[u].name,
				       err == -ENODATA ? "no frame unwound" : strerror(-err));
				free(t.ns_per_frame);
				status = 1;
				continue;
			}
			ns[u] = percentile(&t, 0.5);
			if (ns[0] > 0)
				printf("%s: %.1f ns/frame (%.*fx)\n", unwinders[u].name, ns[u],
				       ns[u] / ns[0] < 1 ? 2 : 1, ns[u] / ns[0]);
			else
				printf("%s: %.1f ns/frame\n", unwinders[u].name, ns[u]);
			if (verbose)
				printf("#   %zu batches: min %.1f, p10 %.1f, p25 %.1f, p75 %.1f, "
				       "p90 %.1f, max %.1f\n", t.batches, percentile(&t, 0),
				       percentile(&t, 0.1), percentile(&t, 0.25), percentile(&t, 0.75),
				       percentile(&t, 0.9), percentile(&t, 1));
			if (t.short_unwinds) {
				printf("warning: %s: %" PRIu64 " unwinds fell short of main\n",
				       unwinders[u].name, t.short_unwinds);
				status = 1;
			}
			free(t.ns_per_frame);
			fflush(stdout);
		}
	}
out:
	for (size_t u = 0; u < NUNWINDERS; u++)
		unwinder__fini(&unwinders[u]);
	for (size_t d = 0; d < NDEPTHS; d++) {
		for (unsigned i = 0; i < SNAPS_PER_DEPTH; i++)
			bench_snapshot__free(&snaps[d][i]);
	}
	return status;
}

