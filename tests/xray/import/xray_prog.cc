// SPDX-License-Identifier: BSD-2-Clause
// An XRay-instrumented program for `sfprof import xray`: one scenario per run,
// traced in FDR mode (or basic mode) from the moment it patches the sleds until
// it flushes the log.
#include <xray/xray_interface.h>
#include <xray/xray_log_interface.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

// Time that is the function's own: a loop no optimizer removes.
NOINLINE void spin(int n)
{
	for (int i = 0; i < n; i++)
		sink = sink + i;
}

namespace work {

NOINLINE int leaf(int n)
{
	spin(n);
	return n & 7;
}

// Direct recursion: the call is not in tail position, each level stays on the stack.
NOINLINE int recurse(int depth)
{
	if (depth <= 0)
		return leaf(200);
	int r = recurse(depth - 1);
	return r ^ leaf(20 + depth);
}

// Mutual recursion: ping -> pong -> ping ...
NOINLINE int pong(int n);
NOINLINE int ping(int n)
{
	if (n <= 0)
		return leaf(50);
	int r = pong(n - 1);
	spin(30);
	return r + 1;
}
NOINLINE int pong(int n)
{
	int r = ping(n - 1);
	spin(10);
	return r + 2;
}

// Tail calls: the caller's frame is gone before the callee runs (a tail exit record).
NOINLINE int tail_target(int n)
{
	spin(n);
	return n + 1;
}
NOINLINE int tail_caller(int n)
{
	spin(40);
	return tail_target(n * 2);
}
NOINLINE int tail_chain(int n)
{
	spin(25);
	return tail_caller(n + 3);
}

// Exceptions: thrower's and middle's frames are unwound, they never write an exit.
NOINLINE int thrower(int n)
{
	leaf(n);
	if (n % 2)
		throw std::runtime_error("odd");
	return n;
}
NOINLINE int middle(int n)
{
	spin(15);
	int r = thrower(n);
	leaf(5);
	return r + 1;
}
NOINLINE int catcher(int n)
{
	try {
		return middle(n);
	} catch (const std::exception &) {
		spin(20);
		return -1;
	}
}

// A recursive function that throws at the bottom and catches half way up:
// the exit of the catching level matches the innermost entry of the function.
NOINLINE int rthrow(int depth, int catch_at)
{
	if (depth == 0) {
		spin(50);
		throw std::runtime_error("bottom");
	}
	if (depth == catch_at) {
		try {
			return rthrow(depth - 1, catch_at);
		} catch (const std::exception &) {
			spin(30);
			return depth;
		}
	}
	int r = rthrow(depth - 1, catch_at);
	spin(5);
	return r;
}

// The exit of the catching level closes the innermost rthrow frame, so three
// stay open above it; the exit of this caller closes them all. (llvm-xray stack
// counts only closed frames: a frame open at the end of the trace has no time.)
NOINLINE int rthrow_top(int depth, int catch_at)
{
	int r = rthrow(depth, catch_at);
	spin(10);
	return r + 1;
}

// Entries with an argument (EnterArg and CallArgument records) and custom events.
[[clang::xray_always_instrument, clang::xray_log_args(1)]] NOINLINE int logged(int n)
{
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "event %d", n);

	__xray_customevent(buf, len);
	return leaf(n % 64);
}

NOINLINE void worker_a(int rounds)
{
	for (int i = 0; i < rounds; i++) {
		recurse(4);
		leaf(100);
	}
}

NOINLINE void worker_b(int rounds)
{
	for (int i = 0; i < rounds; i++) {
		tail_chain(i);
		catcher(i);
	}
}

NOINLINE void worker_c(int rounds)
{
	for (int i = 0; i < rounds; i++)
		ping(6);
}

} // namespace work

static void scenario(const char *name, bool basic)
{
	using namespace work;

	if (!strcmp(name, "threads")) {
		std::thread a(worker_a, 300), b(worker_b, 300), c(worker_c, 300);
		/*
		 * Basic mode writes a thread's last records when the thread exits:
		 * those of the main thread, still running at the flush, would be lost.
		 */
		if (basic)
			std::thread(worker_a, 100).join();
		else
			worker_a(100);
		a.join();
		b.join();
		c.join();
	} else if (!strcmp(name, "recursion")) {
		for (int i = 0; i < 200; i++) {
			recurse(8);
			ping(9);
		}
	} else if (!strcmp(name, "tailcalls")) {
		for (int i = 0; i < 500; i++)
			tail_chain(i);
	} else if (!strcmp(name, "exceptions")) {
		for (int i = 0; i < 300; i++) {
			catcher(i);
			if (i % 10 == 0)
				rthrow_top(6, 3);
		}
	} else if (!strcmp(name, "events")) {
		for (int i = 0; i < 200; i++)
			logged(i);
	} else {
		fprintf(stderr, "unknown scenario %s\n", name);
	}
}

int main(int argc, char **argv)
{
	// basic ("naive") mode when asked: the same runtime calls, another log format
	bool basic = argc == 3 && !strcmp(argv[2], "basic");
	const char *mode = basic ? "xray-basic" : "xray-fdr";

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s threads|recursion|tailcalls|exceptions|events [basic]\n",
			argv[0]);
		return 2;
	}
	if (__xray_log_select_mode(mode) != XRayLogRegisterStatus::XRAY_REGISTRATION_OK ||
	    __xray_log_init_mode(mode, "func_duration_threshold_us=0") !=
		    XRayLogInitStatus::XRAY_LOG_INITIALIZED ||
	    __xray_patch() != XRayPatchingStatus::SUCCESS) {
		fprintf(stderr, "XRay %s mode could not be started\n", mode);
		return 1;
	}
	scenario(argv[1], basic);
	if (__xray_log_finalize() != XRayLogInitStatus::XRAY_LOG_FINALIZED ||
	    __xray_log_flushLog() != XRayLogFlushStatus::XRAY_LOG_FLUSHED) {
		fprintf(stderr, "XRay %s log could not be written\n", mode);
		return 1;
	}
	return 0;
}
