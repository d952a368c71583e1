/* SPDX-License-Identifier: BSD-2-Clause */
/* Real-time priority for one thread of the record path, within a CPU budget per window. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rt_budget.h"
#include "common/clock.h"

/*
 * Why the record path runs real-time at all: when every CPU is busy its
 * threads wait for one like any other, and the buffers fill meanwhile. Beside
 * CPU-bound programs in its scheduling group at high rates, the ring's reader
 * spends most of its time on the run queue and the ring, tens of ms of
 * samples, overflows (scripts/bench-ring-20khz gives the figures). A real-time
 * thread is never kept waiting by programs of normal priority; the budget
 * keeps it from taking more of a CPU from them than the budget and one step
 * of its work (a round of the reader, 20 ms at most; a batch of the
 * unwinders) in any window. Behind that, the kernel's own bound on
 * real-time tasks (kernel.sched_rt_runtime_us) holds.
 */
struct rt_budget {
	pid_t tid;
	unsigned pct;
	int prio;
	int err;		/* the refusal: no more asking */
	bool rt;		/* the thread is SCHED_FIFO now */
	bool spent;		/* the budget of this window is used up */
	bool counted;		/* this window is counted in windows */
	uint64_t budget_ns;	/* of CPU time, per window */
	uint64_t window_at;	/* CLOCK_MONOTONIC start of the window */
	uint64_t window_cpu;	/* the thread's CPU time then */
	uint64_t rt_since;	/* its CPU time when it last went real-time */
	uint64_t windows, over, rt_ns;
};

/* The policy of thread @tid (sched_setscheduler() sets a thread's on Linux). @return 0 or -errno. */
static int set_policy(pid_t tid, int policy, int prio)
{
	struct sched_param sp = { .sched_priority = prio };

	return sched_setscheduler(tid, policy, &sp) ? -errno : 0;
}

static void demote(struct rt_budget *rb, uint64_t cpu)
{
	if (!rb->rt)
		return;
	set_policy(rb->tid, SCHED_OTHER | SCHED_RESET_ON_FORK, 0);
	rb->rt = false;
	rb->rt_ns += cpu - rb->rt_since;
}

struct rt_budget *rt_budget__new(unsigned pct, int prio)
{
	struct rt_budget *rb = calloc(1, sizeof(*rb));

	if (!rb)
		return NULL;
	rb->tid = (pid_t)syscall(SYS_gettid);
	rb->pct = pct > 100 ? 100 : pct;
	rb->prio = prio;
	rb->budget_ns = RT_BUDGET_WINDOW_NS * rb->pct / 100;
	return rb;
}

void rt_budget__tick(struct rt_budget *rb, bool want)
{
	uint64_t now, cpu;

	if (!rb || !rb->pct || rb->err)
		return;
	if (!want && !rb->rt)
		return;
	now = clock_ns(CLOCK_MONOTONIC);
	cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	if (!rb->window_at || now - rb->window_at >= RT_BUDGET_WINDOW_NS) {
		rb->window_at = now;
		rb->window_cpu = cpu;
		rb->spent = false;
		/* a window it enters real-time counts too */
		rb->counted = rb->rt;
		rb->windows += rb->rt;
	}
	if (rb->rt && cpu - rb->window_cpu > rb->budget_ns) {
		demote(rb, cpu);
		rb->spent = true;
		rb->over++;
	} else if (rb->rt && !want) {
		demote(rb, cpu);
	} else if (!rb->rt && want && !rb->spent) {
		rb->err = set_policy(rb->tid, SCHED_FIFO | SCHED_RESET_ON_FORK, rb->prio);
		if (rb->err)
			return;
		rb->rt = true;
		rb->rt_since = cpu;
		if (!rb->counted)
			rb->windows++;
		rb->counted = true;
	}
}

void rt_budget__stats(const struct rt_budget *rb, struct rt_budget_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!rb)
		return;
	st->refused = rb->err != 0;
	st->err = rb->err;
	st->windows = rb->windows;
	st->over = rb->over;
	st->rt_ns = rb->rt_ns;
	if (rb->rt && (pid_t)syscall(SYS_gettid) == rb->tid)
		st->rt_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID) - rb->rt_since;
}

void rt_budget__free(struct rt_budget *rb)
{
	if (!rb)
		return;
	if (rb->rt && (pid_t)syscall(SYS_gettid) == rb->tid)
		demote(rb, clock_ns(CLOCK_THREAD_CPUTIME_ID));
	free(rb);
}
