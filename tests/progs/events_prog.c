/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Workloads whose events are known by construction, for sfprof record -e,
 * -c, -t, --call-graph and --off-cpu (tests/integration/events_test.py):
 *
 *   writes N        exactly N write(2) calls, all from ev_do_write <- ev_write_loop
 *                   <- ev_outer <- main (to /dev/null), nothing else written
 *   faults N        N first touches of fresh anonymous pages, from fault_touch <-
 *                   fault_outer <- main
 *   threads SECS    two threads spinning in spin_x and spin_y; prints "x TID" and
 *                   "y TID", then waits for a line on stdin before spinning SECS
 *   chain SECS      main -> fp_outer -> fp_mid -> fp_leaf spinning
 *   offcpu ROUNDS   thread A sleeps 50 ms at a time in off_a_sleep (ROUNDS times);
 *                   thread B waits in off_b_wait on a pipe that the main thread
 *                   feeds every 20 ms (from off_feed, 4 x ROUNDS times); thread C
 *                   spins in on_cpu_spin meanwhile. Prints the time each of A and
 *                   B spent in its blocking calls (CLOCK_MONOTONIC around them), in
 *                   ns, and its thread id: "A NS TID" and "B NS TID".
 *   pingpong SECS   two threads bounce a byte over two pipes for SECS (each round
 *                   trip blocks each thread once); prints "round-trips/s N"
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;
static volatile int stop;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* --- writes --- */

NOINLINE void ev_do_write(int fd)
{
	if (write(fd, "x", 1) != 1)
		exit(3);
	__asm__ volatile("" ::: "memory");	/* no tail call: this frame stays */
}

NOINLINE void ev_write_loop(int fd, long n)
{
	for (long i = 0; i < n; i++)
		ev_do_write(fd);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void ev_outer(long n)
{
	FILE *f = fopen("/dev/null", "w");

	if (!f)
		exit(3);
	ev_write_loop(fileno(f), n);
	__asm__ volatile("" ::: "memory");
}

/* --- faults --- */

NOINLINE void fault_touch(volatile char *p, long pages, long page)
{
	for (long i = 0; i < pages; i++)
		p[i * page] = 1;
	__asm__ volatile("" ::: "memory");
}

NOINLINE void fault_outer(long pages)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (p == MAP_FAILED)
		exit(3);
	/* no huge pages: one fault per page */
	madvise(p, pages * page, MADV_NOHUGEPAGE);
	fault_touch(p, pages, page);
	__asm__ volatile("" ::: "memory");
}

/* --- threads, chain --- */

NOINLINE void spin_x(void)
{
	while (!stop)
		sink++;
}

NOINLINE void spin_y(void)
{
	while (!stop)
		sink += 2;
}

static void *thread_x(void *arg)
{
	(void)arg;
	printf("x %ld\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	spin_x();
	return NULL;
}

static void *thread_y(void *arg)
{
	(void)arg;
	printf("y %ld\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	spin_y();
	return NULL;
}

NOINLINE void fp_leaf(uint64_t end)
{
	while (now_ns() < end)
		for (int i = 0; i < 1000; i++)
			sink += i;
	__asm__ volatile("" ::: "memory");
}

NOINLINE void fp_mid(uint64_t end)
{
	fp_leaf(end);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void fp_outer(uint64_t end)
{
	fp_mid(end);
	__asm__ volatile("" ::: "memory");
}

/* --- offcpu --- */

static int pipefd[2];
static long rounds;
static uint64_t blocked_a, blocked_b;
static long tid_a, tid_b;

NOINLINE void off_a_sleep(void)
{
	struct timespec ts = { 0, 50000000 };
	uint64_t t0 = now_ns();

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	blocked_a += now_ns() - t0;
}

static void *thread_a(void *arg)
{
	(void)arg;
	tid_a = syscall(SYS_gettid);
	for (long i = 0; i < rounds; i++)
		off_a_sleep();
	return NULL;
}

NOINLINE int off_b_wait(void)
{
	char c;
	uint64_t t0 = now_ns();
	ssize_t n = read(pipefd[0], &c, 1);

	blocked_b += now_ns() - t0;
	return n == 1 && c == 'x';
}

static void *thread_b(void *arg)
{
	(void)arg;
	tid_b = syscall(SYS_gettid);
	while (off_b_wait())
		;
	return NULL;
}

NOINLINE void on_cpu_spin(void)
{
	while (!stop)
		sink++;
}

static void *thread_c(void *arg)
{
	(void)arg;
	on_cpu_spin();
	return NULL;
}

NOINLINE void off_feed(long n)
{
	struct timespec ts = { 0, 20000000 };

	for (long i = 0; i < n; i++) {
		nanosleep(&ts, NULL);
		if (write(pipefd[1], "x", 1) != 1)
			exit(3);
	}
	if (write(pipefd[1], "q", 1) != 1)
		exit(3);
}

/* --- pingpong --- */

static int ping[2], pong[2];

static void *ponger(void *arg)
{
	char c;

	(void)arg;
	while (read(ping[0], &c, 1) == 1 && c == 'p')
		if (write(pong[1], &c, 1) != 1)
			break;
	return NULL;
}

static void pingpong(long secs)
{
	uint64_t end = now_ns() + secs * 1000000000ull, trips = 0, t0 = now_ns();
	pthread_t t;
	char c = 'p';

	if (pipe(ping) || pipe(pong))
		exit(3);
	pthread_create(&t, NULL, ponger, NULL);
	while (now_ns() < end) {
		for (int i = 0; i < 1000; i++)
			if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
				exit(3);
		trips += 1000;
	}
	c = 'q';
	if (write(ping[1], &c, 1) != 1)
		exit(3);
	pthread_join(t, NULL);
	printf("round-trips/s %.0f\n", trips / ((now_ns() - t0) / 1e9));
}

int main(int argc, char **argv)
{
	pthread_t a, b, c;
	long n;

	if (argc != 3)
		return 2;
	n = atol(argv[2]);
	if (!strcmp(argv[1], "writes")) {
		ev_outer(n);
	} else if (!strcmp(argv[1], "faults")) {
		fault_outer(n);
	} else if (!strcmp(argv[1], "threads")) {
		char line[16];

		pthread_create(&a, NULL, thread_x, NULL);
		pthread_create(&b, NULL, thread_y, NULL);
		if (!fgets(line, sizeof(line), stdin))
			stop = 1;
		sleep(n);
		stop = 1;
		pthread_join(a, NULL);
		pthread_join(b, NULL);
	} else if (!strcmp(argv[1], "chain")) {
		fp_outer(now_ns() + n * 1000000000ull);
	} else if (!strcmp(argv[1], "offcpu")) {
		rounds = n;
		if (pipe(pipefd))
			return 3;
		pthread_create(&a, NULL, thread_a, NULL);
		pthread_create(&b, NULL, thread_b, NULL);
		pthread_create(&c, NULL, thread_c, NULL);
		off_feed(n * 4);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		stop = 1;
		pthread_join(c, NULL);
		printf("A %llu %ld\nB %llu %ld\n", (unsigned long long)blocked_a, tid_a,
		       (unsigned long long)blocked_b, tid_b);
	} else if (!strcmp(argv[1], "pingpong")) {
		pingpong(n);
	} else {
		return 2;
	}
	return 0;
}
