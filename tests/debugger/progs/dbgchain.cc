// SPDX-License-Identifier: BSD-2-Clause
// Call chains known by construction, with C++ names: dbgchain.c's modes in C++.
/*
 * usage: dbgchain-cxx MODE [N]
 *
 * The modes of dbgchain.c, built from a namespace, class methods, a virtual
 * call, templates and a lambda. Every function is noipa and keeps working
 * after its call, so the frames a debugger shows are exactly these (names
 * as `nm -C` prints them, without their argument lists; "cxx::" is the
 * namespace cxxchain):
 *
 *   leaf    main cxx::run_leaf cxx::Walker::walk cxx::descend<2, F> cxx::descend<1, F>
 *           cxx::descend<0, F> F::operator() cxx::Leaf::visit (virtual) raise,
 *           where F is the lambda cxx::Walker::walk(cxx::Node const&)::{lambda(int)#1}
 *   lib     main cxx::run_lib dbgcb_call (libdbgcb.so) cxx::on_callback
 *           cxx::Leaf::visit raise
 *   vla N   main cxx::run_vla cxx::Buffer<char>::fill (alloca and a VLA of N bytes)
 *           cxx::Buffer<char>::leaf raise
 *   signal  main cxx::run_signal cxx::Spinner::spin_until <signal> cxx::on_signal
 *           cxx::handler_leaf raise
 *   thread  thread: cxx::Worker::start cxx::Worker::mid cxx::Leaf::visit raise;
 *           main cxx::run_thread waits in pthread_join
 *   deep N  main cxx::run_deep cxx::Recurser::deep x N cxx::Recurser::bottom raise
 *   abort   main cxx::run_abort cxx::abort_mid cxx::leaf_abort abort
 *   spin    main cxx::run_spin cxx::spin_outer cxx::Spin::operator() forever
 *           (prints its pid first)
 *   step    main cxx::run_step cxx::Stepper::stepped; stepped calls
 *           cxx::Stepper::callee once and has cxx::Stepper::mix inlined (an
 *           inline frame), and the run stops with raise(SIGTRAP) in
 *           cxx::step_done after it returns
 */
#include <alloca.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "libdbgcb.h"

#define KEEP __attribute__((noipa))
#define BARRIER() __asm__ volatile("" ::: "memory")

volatile int sink;

namespace cxxchain {

struct Node {
	virtual ~Node() {}
	virtual void visit(int v) const = 0;
};

struct Leaf : Node {
	KEEP void visit(int v) const override { sink += v; raise(SIGTRAP); BARRIER(); sink++; }
};

// The virtual call goes through a pointer the compiler cannot see through.
Node *volatile the_leaf;

template <int N, typename Fn> KEEP void descend(const Fn &fn)
{
	if constexpr (N > 0)
		descend<N - 1>(fn);
	else
		fn(N + 1);
	BARRIER();
	sink++;
}

class Walker {
public:
	KEEP void walk(const Node &node)
	{
		auto hop = [&node](int v) KEEP { node.visit(v); BARRIER(); sink++; };
		descend<2>(hop);
		BARRIER();
		depth_++;
	}
private:
	int depth_ = 0;
};

KEEP int run_leaf()
{
	Walker w;

	w.walk(*the_leaf);
	BARRIER();
	return sink;
}

KEEP void on_callback(int v) { the_leaf->visit(v + 1); BARRIER(); sink++; }
KEEP int run_lib() { dbgcb_call(on_callback, 1); BARRIER(); return sink; }

template <typename T> struct Buffer {
	KEEP static void leaf(T *p) { p[0] = 1; raise(SIGTRAP); BARRIER(); sink += p[0]; }
	KEEP static void fill(int n)
	{
		T vla[n];
		T *a = static_cast<T *>(alloca(n + 32));

		memset(vla, 0, n);
		memset(a, 0, n + 32);
		leaf(vla);
		BARRIER();
		sink += vla[n - 1] + a[n];
	}
};
KEEP int run_vla(int n) { Buffer<char>::fill(n); BARRIER(); return sink; }

volatile sig_atomic_t signalled;
KEEP void handler_leaf() { raise(SIGTRAP); BARRIER(); sink++; }
KEEP void on_signal(int) { handler_leaf(); BARRIER(); signalled = 1; }
struct Spinner {
	KEEP void spin_until()
	{
		while (!signalled)
			sink++;
		BARRIER();
	}
};
KEEP int run_signal()
{
	struct sigaction sa;
	struct itimerval it = {};
	Spinner s;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGALRM, &sa, nullptr);
	it.it_value.tv_usec = 20000;
	setitimer(ITIMER_REAL, &it, nullptr);
	s.spin_until();
	BARRIER();
	return sink;
}

struct Worker {
	KEEP void mid() { the_leaf->visit(2); BARRIER(); sink++; }
	/* as in dbgchain.c: stop only once main is blocked in pthread_join */
	KEEP static void *start(void *arg)
	{
		while (!main_joining)
			usleep(1000);
		usleep(20000);
		static_cast<Worker *>(arg)->mid();
		BARRIER();
		return arg;
	}
	static volatile int main_joining;
};
volatile int Worker::main_joining;
KEEP int run_thread()
{
	pthread_t t;
	Worker w;

	if (pthread_create(&t, nullptr, Worker::start, &w))
		return -1;
	Worker::main_joining = 1;
	pthread_join(t, nullptr);
	BARRIER();
	return sink;
}

struct Recurser {
	KEEP void bottom() { raise(SIGTRAP); BARRIER(); sink++; }
	KEEP void deep(int n)
	{
		if (n > 1)
			deep(n - 1);
		else
			bottom();
		BARRIER();
		sink++;
	}
};
KEEP int run_deep(int n) { Recurser r; r.deep(n); BARRIER(); return sink; }

KEEP void leaf_abort() { abort(); }
KEEP void abort_mid() { leaf_abort(); BARRIER(); sink++; }
KEEP int run_abort() { abort_mid(); BARRIER(); return sink; }

struct Spin {
	KEEP void operator()() const
	{
		for (;;)
			sink++;
	}
};
KEEP void spin_outer() { Spin()(); BARRIER(); sink++; }
KEEP int run_spin()
{
	printf("%d\n", (int)getpid());
	fflush(stdout);
	spin_outer();
	BARRIER();
	return sink;
}

struct Stepper {
	KEEP static int callee(int v) { return v * 3 + sink; }
	// an inline frame at the instructions it becomes, at every -O level
	__attribute__((always_inline)) static inline int mix(int a, int b)
	{
		return (a ^ b) * 7 + sink;
	}
	KEEP static int stepped(int n)
	{
		int buf[8];

		for (int i = 0; i < 8; i++)
			buf[i] = mix(n, i);
		buf[3] = callee(buf[n & 7]);
		BARRIER();
		return buf[3] + buf[7];
	}
};
KEEP void step_done() { raise(SIGTRAP); BARRIER(); }
KEEP int run_step()
{
	int r;

	raise(SIGTRAP);		// the debugger sets its breakpoints here
	r = Stepper::stepped(5);
	step_done();
	BARRIER();
	return r;
}

} // namespace cxxchain

int main(int argc, char **argv)
{
	using namespace cxxchain;
	const char *mode = argc > 1 ? argv[1] : "leaf";
	int n = argc > 2 ? atoi(argv[2]) : 16;
	Leaf leaf;
	int r;

	the_leaf = &leaf;
	if (!strcmp(mode, "leaf"))
		r = run_leaf();
	else if (!strcmp(mode, "lib"))
		r = run_lib();
	else if (!strcmp(mode, "vla"))
		r = run_vla(n > 0 ? n : 16);
	else if (!strcmp(mode, "signal"))
		r = run_signal();
	else if (!strcmp(mode, "thread"))
		r = run_thread();
	else if (!strcmp(mode, "deep"))
		r = run_deep(n > 0 ? n : 1);
	else if (!strcmp(mode, "abort"))
		r = run_abort();
	else if (!strcmp(mode, "spin"))
		r = run_spin();
	else if (!strcmp(mode, "step"))
		r = run_step();
	else {
		fprintf(stderr, "dbgchain-cxx: unknown mode '%s'\n", mode);
		return 2;
	}
	BARRIER();
	return r & 1;
}
