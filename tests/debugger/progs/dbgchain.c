/* SPDX-License-Identifier: BSD-2-Clause */
/* Call chains known by construction, stopped where a debugger can look at them. */
/*
 * usage: dbgchain MODE [N]
 *
 * Each mode ends in a stop whose chain is fixed by the source: raise(SIGTRAP)
 * (the debugger stops there), abort() for a core file, or a spin loop for
 * `gdb -p`. Every function is noipa and keeps working after its call, so
 * that no optimisation level inlines it, clones it or turns the call into a
 * tail call: the frames a debugger shows are exactly the ones named below.
 *
 *   leaf      main run_leaf level1 level2 level3 level4 leaf6 raise
 *   lib       main run_lib dbgcb_call (libdbgcb.so) lib_callback cb_leaf raise
 *   vla N     main run_vla vla_frame (alloca and a VLA of N bytes) vla_leaf raise
 *   signal    main run_signal spin_until <signal> on_signal handler_leaf raise
 *   thread    thread: thread_start thread_mid thread_leaf raise; main waits in pthread_join
 *   deep N    main run_deep deep x N deep_leaf raise
 *   abort     main run_abort abort_mid leaf_abort abort
 *   spin      main run_spin spin_outer spin_leaf, forever (prints its pid first)
 *   step      main run_step stepped; stepped calls step_callee once and stops with
 *             raise(SIGTRAP) in step_done after it returns
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

KEEP static void trap(void)
{
	raise(SIGTRAP);
	BARRIER();
}

KEEP void leaf6(void) { raise(SIGTRAP); BARRIER(); sink++; }
KEEP void level4(void) { leaf6(); BARRIER(); sink++; }
KEEP void level3(void) { level4(); BARRIER(); sink++; }
KEEP void level2(void) { level3(); BARRIER(); sink++; }
KEEP void level1(void) { level2(); BARRIER(); sink++; }
KEEP int run_leaf(void) { level1(); BARRIER(); return sink; }

KEEP void cb_leaf(int v) { sink += v; raise(SIGTRAP); BARRIER(); sink++; }
KEEP static void lib_callback(int v) { cb_leaf(v + 1); BARRIER(); sink++; }
KEEP int run_lib(void) { dbgcb_call(lib_callback, 1); BARRIER(); return sink; }

KEEP void vla_leaf(char *p) { p[0] = 1; raise(SIGTRAP); BARRIER(); sink += p[0]; }
KEEP void vla_frame(int n)
{
	char vla[n];
	char *a = alloca(n + 32);

	memset(vla, 0, n);
	memset(a, 0, n + 32);
	vla_leaf(vla);
	BARRIER();
	sink += vla[n - 1] + a[n];
}
KEEP int run_vla(int n) { vla_frame(n); BARRIER(); return sink; }

volatile sig_atomic_t signalled;
KEEP void handler_leaf(void) { raise(SIGTRAP); BARRIER(); sink++; }
KEEP static void on_signal(int sig) { (void)sig; handler_leaf(); BARRIER(); signalled = 1; }
KEEP void spin_until(void)
{
	while (!signalled)
		sink++;
	BARRIER();
}
KEEP int run_signal(void)
{
	struct sigaction sa;
	struct itimerval it = { .it_value = { .tv_usec = 20000 } };

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	spin_until();
	BARRIER();
	return sink;
}

/*
 * The thread stops only once main is past pthread_create (clone3's return
 * path in the parent has no unwind information) and has had time to block
 * in pthread_join, so that main's chain is fixed too.
 */
volatile int main_joining;
KEEP void thread_leaf(void) { raise(SIGTRAP); BARRIER(); sink++; }
KEEP void thread_mid(void) { thread_leaf(); BARRIER(); sink++; }
KEEP static void *thread_start(void *arg)
{
	while (!main_joining)
		usleep(1000);
	usleep(20000);
	thread_mid();
	BARRIER();
	return arg;
}
KEEP int run_thread(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, thread_start, NULL))
		return -1;
	main_joining = 1;
	pthread_join(t, NULL);
	BARRIER();
	return sink;
}

KEEP void deep_leaf(void) { raise(SIGTRAP); BARRIER(); sink++; }
KEEP void deep(int n)
{
	if (n > 1)
		deep(n - 1);
	else
		deep_leaf();
	BARRIER();
	sink++;
}
KEEP int run_deep(int n) { deep(n); BARRIER(); return sink; }

KEEP void leaf_abort(void) { abort(); }
KEEP void abort_mid(void) { leaf_abort(); BARRIER(); sink++; }
KEEP int run_abort(void) { abort_mid(); BARRIER(); return sink; }

KEEP void spin_leaf(void)
{
	for (;;)
		sink++;
}
KEEP void spin_outer(void) { spin_leaf(); BARRIER(); sink++; }
KEEP int run_spin(void)
{
	printf("%d\n", (int)getpid());
	fflush(stdout);
	spin_outer();
	BARRIER();
	return sink;
}

KEEP int step_callee(int v) { return v * 3 + sink; }
KEEP void step_done(void) { trap(); BARRIER(); }
KEEP int stepped(int n)
{
	int buf[8];

	for (int i = 0; i < 8; i++)
		buf[i] = n + i + sink;
	buf[3] = step_callee(buf[n & 7]);
	BARRIER();
	return buf[3] + buf[7];
}
KEEP int run_step(void)
{
	int r;

	raise(SIGTRAP);		/* the debugger sets its breakpoints here */
	r = stepped(5);
	step_done();
	BARRIER();
	return r;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "leaf";
	int n = argc > 2 ? atoi(argv[2]) : 16;
	int r;

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
		fprintf(stderr, "dbgchain: unknown mode '%s'\n", mode);
		return 2;
	}
	BARRIER();
	return r & 1;
}
