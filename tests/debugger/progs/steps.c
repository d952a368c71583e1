/* SPDX-License-Identifier: BSD-2-Clause */
/* Ordinary -O2 -g code for the stepping tests: inlined frames, a tail call, a signal handler, threads. */
/*
 * usage: steps [ITERATIONS]
 *
 * Runs, in this order, each part once (the inlined part ITERATIONS times,
 * default 3), so that a debugger session can stop in each:
 *
 *   inline  main run_inline work, work holding two inlined copies of
 *           mix_outer, each holding two of mix_inner (always_inline), and
 *           a call of step_leaf between them; the inlined code writes the
 *           global `watched`
 *   tail    main run_tail tail_caller, which jumps to tail_callee (a
 *           sibling call at -O2: no frame of tail_caller remains)
 *   signal  main run_signal victim, three times; victim sends itself SIGUSR1
 *           with a tgkill syscall of its own, so that the signal interrupts
 *           victim right after that syscall; on_signal runs handler_mid
 *           handler_leaf
 *   thread  main run_thread pthread_join; the thread runs thread_start
 *           thread_mid thread_leaf, entering thread_leaf only once main's
 *           thread is blocked in its futex (read from /proc), so that both
 *           threads' stacks are the same at every run
 *
 * x86-64 only (the syscall instruction).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define KEEP __attribute__((noinline, noclone))
#define INLINE static inline __attribute__((always_inline))
#define BARRIER() __asm__ volatile("" ::: "memory")

volatile int watched;
volatile int sink;

INLINE int mix_inner(int x)
{
	int s = 0;

	for (int i = 0; i < x; i++)
		s += (i * x) ^ sink;
	return s;
}

INLINE int mix_outer(int x)
{
	int a = mix_inner(x + 1);

	watched += a;
	return mix_inner(a & 7) + a;
}

/* noipa: work must save what it keeps across the call (no IPA-RA), so its frame changes */
__attribute__((noipa)) int step_leaf(int x)
{
	sink += x;
	BARRIER();
	return sink & 31;
}

KEEP int work(int x)
{
	int r = mix_outer(x);

	r += step_leaf(r);
	r += mix_outer(r & 15);
	return r;
}

KEEP int run_inline(int n)
{
	int t = 0;

	for (int i = 0; i < n; i++)
		t += work(i + 1);
	return t;
}

KEEP int tail_callee(int x)
{
	sink += x;
	BARRIER();
	return sink * 3 + x;
}

/* the call is the last thing it does: at -O2 a jmp, and its frame is gone */
KEEP int tail_caller(int x)
{
	sink++;
	return tail_callee(x * 5);
}

KEEP int run_tail(int x)
{
	int r = tail_caller(x);

	sink += r;
	return r + 1;
}

KEEP void handler_leaf(int sig)
{
	sink += sig;
	BARRIER();
}

KEEP void handler_mid(int sig)
{
	handler_leaf(sig);
	sink++;
}

KEEP static void on_signal(int sig)
{
	handler_mid(sig);
	sink++;
}

static long self_pid, self_tid;

/* tgkill by hand: the signal comes on the way out of the syscall, so the
 * interrupted frame is this one, at the instruction after the syscall */
KEEP void victim(void)
{
	long ret;

	sink++;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_tgkill), "D"(self_pid), "S"(self_tid), "d"((long)SIGUSR1)
			 : "rcx", "r11", "memory");
	sink += (int)ret + 1;
}

KEEP int run_signal(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL))
		return -1;
	self_pid = getpid();
	self_tid = syscall(SYS_gettid);
	victim();
	victim();
	victim();
	return sink;
}

static pid_t main_tid;

/* main's thread is in futex(2): /proc/.../syscall starts with its number */
static int main_blocked(void)
{
	char path[64], buf[64];
	FILE *f;
	int n = -1;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)main_tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	sscanf(buf, "%d", &n);
	return n == SYS_futex;
}

KEEP void thread_leaf(int v)
{
	sink += v;
	BARRIER();
	sink++;
}

KEEP void thread_mid(int v)
{
	while (!main_blocked())
		usleep(1000);
	thread_leaf(v + 1);
	sink++;
}

KEEP static void *thread_start(void *arg)
{
	thread_mid((int)(long)arg);
	return NULL;
}

KEEP int run_thread(void)
{
	pthread_t t;

	main_tid = (pid_t)syscall(SYS_gettid);
	if (pthread_create(&t, NULL, thread_start, (void *)2L))
		return -1;
	pthread_join(t, NULL);
	return sink;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	int t = run_inline(n);

	t += run_tail(t & 7);
	t += run_signal();
	t += run_thread();
	printf("%d\n", t);
	return 0;
}
