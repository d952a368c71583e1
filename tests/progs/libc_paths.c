/* SPDX-License-Identifier: BSD-2-Clause */
/* Self-unwind test program whose time goes through libc: qsort callbacks, memcpy, signal handlers. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>

#include "snapshot.h"

/*
 * Debian's libc has no .sframe and no frame pointers, so every chain here
 * crosses code only .eh_frame describes:
 *
 *   qsort   main -> sort_many -> qsort (libc: msort_with_tmp, recursive)
 *           -> cmp_ints, the hot function
 *   memcpy  main -> copy_many -> memcpy / memmove (libc's AVX or SSE
 *           implementations), where the time goes
 *   signal  main -> signal_loop -> raise (libc: pthread_kill with signals
 *           blocked) -> the kernel's signal frame -> __restore_rt (libc)
 *           -> on_usr1 -> busy_in_handler, where the time goes
 *
 * The qsort and signal modes write snapshots "<mode>-snap-N" captured in place
 * (in cmp_ints, and in busy_in_handler: through the signal frame), then every
 * mode writes "<mode>-sample-NNN"
 * taken by a SIGPROF timer as a profiler would, frame 0 anywhere (in libc
 * for most memcpy samples). The shadow stack names the program's functions
 * only; the driver checks that the frames in the program are exactly those.
 *
 * With "gdb" instead of a sample count, the mode runs a short while without
 * the timer and without writing anything, for tests/integration/libc_unwind.py
 * to stop it in gdb; with "run", for about SECONDS (RUN_SECONDS if not
 * given), for sfprof record (tests/integration/libc_record.py).
 *
 * Usage: libc_paths OUTPUT-DIR qsort|memcpy|signal [SAMPLES | gdb | run [SECONDS]]
 */

#define DEFAULT_SAMPLES 300
#define MAX_SECONDS 30
#define RUN_SECONDS 3
#define SNAPS 4

static struct sfu_snap_capture **samples;
static int max_samples;
static volatile sig_atomic_t nsamples;
static volatile sig_atomic_t sampling;
static volatile uint64_t sink;
static volatile int snap_due;
static int snapping;		/* snapshots go to a directory: not under gdb or record */
static size_t copy_size = 1 << 20;	/* under gdb: small, for the vector loops */
static int snaps_taken;
static const char *mode;

static void on_sigprof(int sig, siginfo_t *info, void *ucontext)
{
	int n = nsamples;

	(void)sig;
	(void)info;
	if (!sampling || n >= max_samples)
		return;
	sfu_snap__capture_signal(samples[n], ucontext);
	nsamples = n + 1;
}

/* Writes "<mode>-snap-N" from the function that expands it, when one is due. */
#define SNAP_IF_DUE()                                                                  \
	do {                                                                           \
		if (snap_due && snaps_taken < SNAPS) {                                  \
			char tag_[48];                                                 \
			snap_due = 0;                                                  \
			SFU_SNAP_CAPTURE();                                            \
			snprintf(tag_, sizeof(tag_), "%s-snap-%d", mode, snaps_taken++); \
			sfu_snap__write(tag_);                                         \
		}                                                                      \
	} while (0)

/* ---- qsort ---- */

SFU_SNAP_NOINLINE static int cmp_ints(const void *a, const void *b)
{
	SFU_SNAP_FUNC();
	int x = *(const int *)a, y = *(const int *)b;
	uint64_t h = (uint64_t)x;

	/* make the comparator the hot function, as a costly key comparison would be */
	for (int i = 0; i < 40; i++) {
		h = h * 6364136223846793005ull + 1442695040888963407ull;
		__asm__ volatile("" : "+r"(h));
	}
	sink += h;
	SNAP_IF_DUE();
	return (x > y) - (x < y);
}

SFU_SNAP_NOINLINE static void sort_many(int rounds)
{
	SFU_SNAP_FUNC();
	int n = 2000, *a = malloc(n * sizeof(*a));
	uint64_t x = 88172645463325252ull;

	if (!a)
		abort();
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			a[i] = (int)(x & 0xffffff);
		}
		/* a snapshot in some comparator call of some rounds */
		if (snapping && r % 3 == 1)
			snap_due = 1;
		qsort(a, n, sizeof(*a), cmp_ints);
	}
	free(a);
}

/* ---- memcpy ---- */

SFU_SNAP_NOINLINE static void copy_many(int rounds)
{
	SFU_SNAP_FUNC();
	/* sizes the compiler cannot see, so that the calls stay calls into libc */
	volatile size_t size = copy_size;
	char *src = malloc(size + 64), *dst = malloc(size + 64);

	if (!src || !dst)
		abort();
	memset(src, 1, size + 64);
	for (int r = 0; r < rounds; r++) {
		memcpy(dst, src + (r & 31), size);
		memmove(dst + 1, dst, size - 1);
		sink += (uint8_t)dst[r & 1023];
	}
	free(src);
	free(dst);
}

/* ---- signal ---- */

SFU_SNAP_NOINLINE static void busy_in_handler(void)
{
	SFU_SNAP_FUNC();
	uint64_t h = sink;

	for (int i = 0; i < 200000; i++) {
		h = h * 6364136223846793005ull + 1442695040888963407ull;
		__asm__ volatile("" : "+r"(h));
	}
	sink = h;
	SNAP_IF_DUE();
}

SFU_SNAP_NOINLINE static void on_usr1(int sig)
{
	SFU_SNAP_FUNC();

	(void)sig;
	busy_in_handler();
}

SFU_SNAP_NOINLINE static void signal_loop(int rounds)
{
	SFU_SNAP_FUNC();
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL)) {
		perror("libc_paths: SIGUSR1");
		exit(1);
	}
	for (int r = 0; r < rounds; r++) {
		if (snapping && r % 5 == 2)
			snap_due = 1;
		raise(SIGUSR1);
	}
}

/* One round of the mode's work; returns 0, or -1 for an unknown mode. */
SFU_SNAP_NOINLINE static int work(int rounds)
{
	SFU_SNAP_FUNC();

	if (!strcmp(mode, "qsort"))
		sort_many(rounds);
	else if (!strcmp(mode, "memcpy"))
		copy_many(rounds * 20);
	else if (!strcmp(mode, "signal"))
		signal_loop(rounds * 2);
	else
		return -1;
	return 0;
}

SFU_SNAP_NOINLINE static int sample_for_a_while(void)
{
	SFU_SNAP_FUNC();
	struct itimerval timer = { { 0, 1000 }, { 0, 1000 } };
	struct timespec start, now;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigprof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL) || setitimer(ITIMER_PROF, &timer, NULL)) {
		perror("libc_paths: SIGPROF timer");
		return -1;
	}
	sampling = 1;
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		if (work(5))
			return -1;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (nsamples < max_samples && now.tv_sec - start.tv_sec < MAX_SECONDS);
	sampling = 0;
	timer = (struct itimerval){ { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &timer, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	SFU_SNAP_FUNC();
	int under_gdb = argc == 4 && !strcmp(argv[3], "gdb");
	int run = (argc == 4 || argc == 5) && !strcmp(argv[3], "run");
	long run_seconds = argc == 5 ? atol(argv[4]) : RUN_SECONDS;
	struct timespec start, now;
	char tag[48];

	if (argc < 3 || argc > 5 || (argc == 5 && !run) || run_seconds <= 0) {
		fprintf(stderr, "usage: %s OUTPUT-DIR qsort|memcpy|signal "
			"[SAMPLES | gdb | run [SECONDS]]\n", argv[0]);
		return 2;
	}
	mode = argv[2];
	if (under_gdb) {
		copy_size = 777;
		return work(2) ? 2 : 0;
	}
	if (run) {
		clock_gettime(CLOCK_MONOTONIC, &start);
		do {
			if (work(5))
				return 2;
			clock_gettime(CLOCK_MONOTONIC, &now);
		} while (now.tv_sec - start.tv_sec < run_seconds);
		return 0;
	}
	snapping = 1;
	max_samples = argc == 4 ? atoi(argv[3]) : DEFAULT_SAMPLES;
	if (max_samples <= 0 || sfu_snap__init(argv[1]))
		return 2;
	samples = calloc((size_t)max_samples, sizeof(*samples));
	if (!samples)
		return 1;
	for (int i = 0; i < max_samples; i++) {
		samples[i] = sfu_snap__capture_new(0);
		if (!samples[i]) {
			fprintf(stderr, "libc_paths: out of memory\n");
			return 1;
		}
	}
	/* the snapshots in place first, then the samples */
	if (work(12)) {
		fprintf(stderr, "libc_paths: unknown mode %s\n", mode);
		return 2;
	}
	/* memcpy's time is all in libc: only samples (and gdb) see it */
	if (snaps_taken != (strcmp(mode, "memcpy") ? SNAPS : 0)) {
		fprintf(stderr, "libc_paths: %s: %d snapshots in place\n", mode, snaps_taken);
		return 1;
	}
	if (sample_for_a_while())
		return 1;
	for (int i = 0; i < nsamples; i++) {
		snprintf(tag, sizeof(tag), "%s-sample-%03d", mode, i);
		sfu_snap__write_capture(samples[i], tag);
	}
	printf("libc_paths: %s: %d snapshots, %d samples\n", mode, snaps_taken, (int)nsamples);
	for (int i = 0; i < max_samples; i++)
		sfu_snap__capture_free(samples[i]);
	free(samples);
	sfu_snap__thread_fini();
	return sfu_snap__status();
}
