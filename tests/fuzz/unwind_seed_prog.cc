// SPDX-License-Identifier: BSD-2-Clause
/*
 * The program of fuzz_unwind's seeds, built without --gsframe (.eh_frame
 * only): it captures its registers and stack at points where the unwind goes
 * through itself, its --gsframe library, libc's qsort, a signal frame and a
 * thread's start, each capture a seed.
 *
 * usage: unwind_seed_prog PREFIX   (writes PREFIX-0, PREFIX-1, ...)
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "unwind_seed.h"

#define NOINLINE __attribute__((noinline))

static volatile int sink;

static NOINLINE int capture_here(int v)
{
	UNW_CAPTURE(UNW_PROG);
	return v + sink;
}

template <int N> struct chain {
	static NOINLINE int run(int x)
	{
		volatile char pad[N * 24];

		pad[x % (N * 24)] = (char)x;
		return chain<N - 1>::run(x + pad[x % (N * 24)]) + 1;
	}
};

template <> struct chain<0> {
	static NOINLINE int run(int x)
	{
		/* through the library, back here to capture; then captured in the library */
		return lib_walk(4, capture_here, x) + lib_walk(3, capture_here, -x - 1);
	}
};

static int compared;

static int compare(const void *a, const void *b)
{
	int x = *static_cast<const int *>(a), y = *static_cast<const int *>(b);

	/* once, from inside libc's qsort */
	if (!compared++)
		lib_walk(2, capture_here, x);
	return (x > y) - (x < y);
}

static void on_signal(int sig)
{
	capture_here(sig);
}

static void *thread_main(void *arg)
{
	return reinterpret_cast<void *>(static_cast<long>(chain<2>::run(static_cast<int>(
		reinterpret_cast<long>(arg)))));
}

int main(int argc, char **argv)
{
	std::vector<int> v = { 5, 3, 9, 1, 7, 2, 8 };
	struct sigaction sa = {};
	pthread_t t;

	if (argc != 2)
		return 2;
	unw_set_output(argv[1]);
	chain<4>::run(1);
	qsort(v.data(), v.size(), sizeof(int), compare);
	std::sort(v.begin(), v.end(), [](int a, int b) { return a > b; });
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, nullptr);
	raise(SIGUSR1);
	if (pthread_create(&t, nullptr, thread_main, reinterpret_cast<void *>(3L)) == 0)
		pthread_join(t, nullptr);
	return sink;
}
