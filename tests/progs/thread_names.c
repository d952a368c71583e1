// SPDX-License-Identifier: BSD-2-Clause
/*
 * Threads that name themselves, then rename themselves, for the names a
 * recording gives each sample: thread K calls itself "first-K" and spends
 * MS ms of its CPU time in first_phase, then "second-K" and MS ms in
 * second_phase. A sample in first_phase is of a thread named first-K, one
 * in second_phase of a thread named second-K, by construction.
 *
 * usage: thread_names THREADS MS
 */
#define _GNU_SOURCE	/* pthread_setname_np */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

static volatile unsigned long sink;
static unsigned long ms;

static unsigned long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void spin(void)
{
	unsigned long long end = cpu_ns() + ms * 1000000ull;

	while (cpu_ns() < end)
		for (int i = 0; i < 20000; i++)
			sink += i;
}

__attribute__((noinline)) void first_phase(void)
{
	spin();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void second_phase(void)
{
	spin();
	__asm__ volatile("" ::: "memory");
}

static void *worker(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "first-%lu", (unsigned long)(size_t)arg);
	if (pthread_setname_np(pthread_self(), name))
		abort();
	first_phase();
	snprintf(name, sizeof(name), "second-%lu", (unsigned long)(size_t)arg);
	if (prctl(PR_SET_NAME, name, 0, 0, 0))
		abort();
	second_phase();
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long n;
	pthread_t t[16];

	if (argc != 3)
		return 2;
	n = strtoul(argv[1], NULL, 0);
	ms = strtoul(argv[2], NULL, 0);
	if (!n || n > 16)
		return 2;
	for (unsigned long i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(size_t)i))
			return 1;
	for (unsigned long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
