/* SPDX-License-Identifier: BSD-2-Clause */
/* Real-time priority for one thread of the record path, within a CPU budget per window. */
#ifndef SFPROF_RT_BUDGET_H
#define SFPROF_RT_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

/* Each budget covers this much time: the ring reader's poll timer. */
#define RT_BUDGET_WINDOW_NS	100000000ull
/* The default budget: a quarter of one CPU, about twice what the reader takes at 20 kHz on 2 CPUs. */
#define RT_BUDGET_DEFAULT_PCT	25
/* SCHED_FIFO priorities: the ring's reader above the unwinding threads it feeds. */
#define RT_BUDGET_PRIO_READER	2
#define RT_BUDGET_PRIO_UNWIND	1

struct rt_budget_stats {
	bool refused;		/* real-time priority was asked for and refused: err says why */
	int err;		/* -EPERM without CAP_SYS_NICE */
	uint64_t windows;	/* windows in which the thread ran at real-time priority */
	uint64_t over;		/* windows in which it used its budget up and went on at normal priority */
	uint64_t rt_ns;		/* CPU time it used at real-time priority */
};

struct rt_budget;

/**
 * rt_budget__new() - a budget for the calling thread: SCHED_FIFO @prio when
 * rt_budget__tick() asks for it, for at most @pct % of one CPU in each
 * RT_BUDGET_WINDOW_NS; past it, normal priority until the next window.
 * Nothing changes until the first tick. Threads it creates start at normal
 * priority (SCHED_RESET_ON_FORK). @pct 0: never real-time.
 *
 * @return the budget, or NULL with errno set (out of memory).
 */
struct rt_budget *rt_budget__new(unsigned pct, int prio);

/**
 * rt_budget__tick() - from the thread of rt_budget__new(), at least once a
 * window while it runs: @want real-time priority (it has work that must
 * not wait behind the programs sampled) or not. Promotes it when it wants
 * it and has budget left in this window; demotes it when it no longer wants
 * it or its CPU time in the window passed the budget. A refusal (no
 * CAP_SYS_NICE) is final: the thread stays at normal priority.
 */
void rt_budget__tick(struct rt_budget *rb, bool want);

/** rt_budget__stats() - what the thread got; from that thread, or after it ended. */
void rt_budget__stats(const struct rt_budget *rb, struct rt_budget_stats *st);

/** rt_budget__free() - back to normal priority (from the thread, if it runs on), then free; NULL is fine. */
void rt_budget__free(struct rt_budget *rb);

#endif
