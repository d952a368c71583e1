// SPDX-License-Identifier: BSD-2-Clause
/* A small XRay-instrumented program whose traces seed fuzz_xray: threads, recursion, arguments, events. */
#include <cstring>
#include <thread>
#include <xray/xray_interface.h>
#include <xray/xray_log_interface.h>

#define TRACED [[clang::xray_always_instrument, gnu::noinline]]

TRACED static int leaf(int x)
{
	return x * 3 + 1;
}

TRACED static int fib(int n)
{
	return n < 2 ? leaf(n) : fib(n - 1) + fib(n - 2);
}

[[clang::xray_always_instrument, clang::xray_log_args(1), gnu::noinline]] static int with_arg(int n)
{
	return fib(n);
}

/* compiled at -O0: compiler-rt 16's event trampolines need the stack that gives them */
TRACED static void events(void)
{
	static const char payload[] = "seed";

	__xray_customevent(payload, sizeof(payload) - 1);
	__xray_typedevent(3, payload, sizeof(payload) - 1);
}

TRACED static void work(int n)
{
	volatile int sink = 0;

	for (int i = 0; i < n; i++)
		sink = sink + with_arg(6);
}

int main(int argc, char **argv)
{
	bool fdr = argc > 1 && !strcmp(argv[1], "fdr");

	if (fdr) {
		__xray_log_select_mode("xray-fdr");
		__xray_log_init_mode("xray-fdr", "func_duration_threshold_us=0");
		__xray_patch();
	}
	std::thread t(work, 2);
	work(1);
	t.join();
	if (fdr) {
		events();
		__xray_log_finalize();
		__xray_log_flushLog();
	}
	return 0;
}
