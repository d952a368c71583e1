// SPDX-License-Identifier: BSD-2-Clause
/* An XRay-instrumented program for tests/xray/dump: threads, recursion, tail calls, arguments, events. */
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <xray/xray_interface.h>
#include <xray/xray_log_interface.h>

#define TRACED [[clang::xray_always_instrument, gnu::noinline]]

TRACED static int leaf(int x)
{
	asm volatile("" ::: "memory");
	return x * 3 + 1;
}

TRACED static int fib(int n)
{
	return n < 2 ? leaf(n) : fib(n - 1) + fib(n - 2);
}

/* at -O1 and above the call to leaf() is a tail call: a tail exit record */
TRACED static int tail(int x)
{
	return leaf(x + 1);
}

[[clang::xray_always_instrument, clang::xray_log_args(1), gnu::noinline]] static int with_arg(int n)
{
	return fib(n) + tail(n);
}

/* compiler-rt 16's event trampolines crash unless the stack is as -O0 leaves it */
TRACED static void events(void)
{
	static const char payload[] = "dump";

	__xray_customevent(payload, sizeof(payload) - 1);
	__xray_typedevent(5, payload, sizeof(payload) - 1);
}

TRACED static void work(int rounds)
{
	volatile int sink = 0;

	for (int i = 0; i < rounds; i++)
		sink = sink + with_arg(8 + i % 3);
}

/* usage: dump_prog fdr|basic|events ROUNDS THREADS */
int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "fdr";
	int rounds = argc > 2 ? atoi(argv[2]) : 4;
	int threads = argc > 3 ? atoi(argv[3]) : 2;
	bool fdr = strcmp(mode, "basic") != 0;
	std::vector<std::thread> pool;

	if (fdr) {
		/* small buffers: several per thread */
		__xray_log_select_mode("xray-fdr");
		__xray_log_init_mode("xray-fdr", "func_duration_threshold_us=0 buffer_size=2048 "
						 "buffer_max=512");
		__xray_patch();
	}
	for (int t = 0; t < threads; t++)
		pool.emplace_back(work, rounds + t);
	for (auto &t : pool)
		t.join();
	work(1);
	if (!strcmp(mode, "events"))
		events();
	if (fdr) {
		__xray_log_finalize();
		__xray_log_flushLog();
	}
	return 0;
}
