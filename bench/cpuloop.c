/* SPDX-License-Identifier: BSD-2-Clause */
/* Benchmark workload: one CPU-bound thread per CPU, iterations per second over a fixed window. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

#define ROUNDS		8	/* passes of the innermost function per iteration */
#define BLOCK_WORDS	64	/* a 512-byte block on the stack of each level */

static const char usage[] =
	"usage: cpuloop [--seconds S] [--warmup S] [--threads N] [--no-pin]\n"
	"\n"
	"Runs N threads (default: one per online CPU, each pinned to its CPU) doing the\n"
	"same deterministic work per iteration through four levels of calls, and prints\n"
	"the iterations per second of all threads together over S seconds (default 5)\n"
	"after a warm-up (default 0.25 s); then the share of that time the threads were\n"
	"on a CPU, and their iterations per second of CPU time, added up: the rate they\n"
	"would have had with the CPUs to themselves, which interrupts still slow down\n"
	"but other tasks do not:\n"
	"  cpuloop: 2 threads, 5.000 s, 123456 iterations, 24691.2 iterations/s;\n"
	"  on CPU 64.6%, 38212.5 iterations per CPU-second\n";

struct worker {
	pthread_t thread;
	clockid_t cpu_clock;	/* the thread's CPU time */
	int cpu;		/* -1: not pinned */
	_Atomic uint64_t iterations;	/* written by the thread only */
	char pad[64];		/* the next thread's counters on another cache line */
};

/* What main reads of a worker at each end of the window. */
struct reading {
	uint64_t iterations, cpu_ns;
};

static atomic_bool go, stop;
static volatile uint64_t sink;	/* keeps the work from being optimized away */

/* The levels are noinline so that every sample has the same few frames to unwind. */
static __attribute__((noinline)) uint64_t mix(uint64_t *block, uint64_t seed)
{
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < BLOCK_WORDS; i++) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			block[i] += seed;
		}
	}
	return seed;
}

static __attribute__((noinline)) uint64_t level3(uint64_t seed)
{
	uint64_t block[BLOCK_WORDS];

	for (int i = 0; i < BLOCK_WORDS; i++)
		block[i] = seed + i;
	seed = mix(block, seed);
	return seed ^ block[seed % BLOCK_WORDS];
}

static __attribute__((noinline)) uint64_t level2(uint64_t seed)
{
	uint64_t block[BLOCK_WORDS / 2];

	for (int i = 0; i < BLOCK_WORDS / 2; i++)
		block[i] = level3(seed + i * 0x9e3779b97f4a7c15ull) | 1;
	return block[seed % (BLOCK_WORDS / 2)];
}

static __attribute__((noinline)) uint64_t level1(uint64_t seed)
{
	return level2(seed) + level2(~seed);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t n = 0, sum = 0;

	if (w->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	while (!atomic_load_explicit(&go, memory_order_acquire))
		sched_yield();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		sum += level1(n ^ 0x5deece66dull);	/* the same seeds whatever the thread */
		atomic_store_explicit(&w->iterations, ++n, memory_order_relaxed);
	}
	sink = sum;
	return NULL;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void read_worker(struct worker *w, struct reading *r)
{
	r->iterations = atomic_load_explicit(&w->iterations, memory_order_relaxed);
	r->cpu_ns = clock_ns(w->cpu_clock);
}

/*
 * The window's figures over all threads: @rate, the iterations per second;
 * @oncpu, the share of the window the threads were on a CPU; @speed, the sum
 * of each thread's iterations per second of its CPU time: the rate they would
 * have had with the CPUs to themselves. A thread's CPU time excludes the time
 * other tasks ran in its place, and includes the interrupts that hit it (no
 * IRQ_TIME_ACCOUNTING): a sampler's cost per sample slows @speed, a
 * profiler's own process only lowers @oncpu, as does anything else running.
 */
static int window(struct worker *w, int nthreads, double seconds, uint64_t *n, double *secs,
		  double *rate, double *oncpu, double *speed)
{
	struct reading (*r)[2] = calloc(nthreads, sizeof(*r));
	uint64_t t0, t1;

	if (!r)
		return -ENOMEM;
	t0 = clock_mono_ns();
	for (int i = 0; i < nthreads; i++)
		read_worker(&w[i], &r[i][0]);
	sleep_s(seconds);
	for (int i = 0; i < nthreads; i++)
		read_worker(&w[i], &r[i][1]);
	t1 = clock_mono_ns();
	*secs = (t1 - t0) / 1e9;
	*n = 0;
	*oncpu = *speed = 0;
	for (int i = 0; i < nthreads; i++) {
		uint64_t iterations = r[i][1].iterations - r[i][0].iterations;
		double cpu = (r[i][1].cpu_ns - r[i][0].cpu_ns) / 1e9;

		*n += iterations;
		*oncpu += cpu / *secs / nthreads;
		if (cpu > 0)
			*speed += iterations / cpu;
	}
	*rate = *n / *secs;
	free(r);
	return 0;
}

static void stop_all(struct worker *w, long nthreads)
{
	atomic_store(&stop, true);
	atomic_store(&go, true);
	for (long i = 0; i < nthreads; i++)
		pthread_join(w[i].thread, NULL);
	free(w);
}

static int parse_seconds(const char *arg, const char *opt, double *out)
{
	char *end;
	double v = strtod(arg, &end);

	if (*end || v < 0 || v > 3600) {
		fprintf(stderr, "cpuloop: %s takes 0 to 3600 seconds, not '%s'\n", opt, arg);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "threads", required_argument, NULL, 't' },
		{ "no-pin", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double seconds = 5, warmup = 0.25, secs, rate, oncpu, speed;
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN), nthreads = ncpus;
	bool pin = true;
	struct worker *w;
	uint64_t n;
	char *end;
	int c, err;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_seconds(optarg, "--seconds", &seconds) || seconds == 0)
				return 2;
			break;
		case 'w':
			if (parse_seconds(optarg, "--warmup", &warmup))
				return 2;
			break;
		case 't':
			nthreads = strtol(optarg, &end, 10);
			if (*end || nthreads < 1 || nthreads > 1024) {
				fprintf(stderr, "cpuloop: --threads takes 1 to 1024, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'P':
			pin = false;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fputs(usage, stderr);
		return 2;
	}
	w = calloc(nthreads, sizeof(*w));
	if (!w) {
		fprintf(stderr, "cpuloop: out of memory\n");
		return 1;
	}
	for (long i = 0; i < nthreads; i++) {
		w[i].cpu = pin && ncpus > 0 ? (int)(i % ncpus) : -1;
		err = pthread_create(&w[i].thread, NULL, work, &w[i]);
		if (err) {
			fprintf(stderr, "cpuloop: cannot start thread %ld: %s\n", i, strerror(err));
			stop_all(w, i);
			return 1;
		}
		err = pthread_getcpuclockid(w[i].thread, &w[i].cpu_clock);
		if (err) {
			fprintf(stderr, "cpuloop: no CPU clock for thread %ld: %s\n", i, strerror(err));
			stop_all(w, i + 1);
			return 1;
		}
	}
	atomic_store_explicit(&go, true, memory_order_release);
	sleep_s(warmup);
	err = window(w, nthreads, seconds, &n, &secs, &rate, &oncpu, &speed);
	atomic_store(&stop, true);
	for (long i = 0; i < nthreads; i++)
		pthread_join(w[i].thread, NULL);
	free(w);
	if (err) {
		fprintf(stderr, "cpuloop: out of memory\n");
		return 1;
	}
	printf("cpuloop: %ld threads, %.3f s, %llu iterations, %.1f iterations/s; "
	       "on CPU %.1f%%, %.1f iterations per CPU-second\n",
	       nthreads, secs, (unsigned long long)n, rate, 100 * oncpu, speed);
	return 0;
}
