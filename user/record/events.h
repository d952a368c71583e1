/* SPDX-License-Identifier: BSD-2-Clause */
/* What `sfprof record -e` samples on: perf's event names, tracepoints, and how to open them. */
#ifndef SFPROF_EVENTS_H
#define SFPROF_EVENTS_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sample.h"	/* MAX_EVENTS */

#define EVENT_NAME_MAX	128
#define EVENT_TRACEFS	"/sys/kernel/tracing"

struct event_spec {
	char name[EVENT_NAME_MAX];	/* as perf names it: page-faults, syscalls:sys_enter_write */
	uint32_t type;			/* PERF_TYPE_SOFTWARE, _HARDWARE or _TRACEPOINT */
	uint64_t config;		/* perf_event_attr.config; a tracepoint's id in tracefs */
	bool clock;			/* cpu-clock, task-clock: a sample weighs 1, not its period */
	char tp_sys[EVENT_NAME_MAX];	/* a tracepoint's subsystem and name */
	char tp_name[EVENT_NAME_MAX];
};

/* The events of one recording, in the order given; the off-CPU event is not one of them. */
struct event_list {
	struct event_spec ev[MAX_EVENTS];
	size_t n;
};

/**
 * event_list__parse() - append the events of one -e argument: names as perf
 * takes them (cpu-clock, page-faults or faults, cs, cycles, ...) and
 * tracepoints SUBSYS:NAME, comma-separated.
 * @tracefs: where tracepoints are (their id file); NULL: EVENT_TRACEFS,
 *           mounted there first if it is not (as perf does).
 * @err: receives a message fit for the user on failure.
 *
 * @return 0; -EINVAL for a name that is no event (or an event given twice,
 * or a perf syntax not supported: modifiers, PMU terms, groups), -ENOENT for
 * a tracepoint tracefs does not have, -E2BIG past MAX_EVENTS - 1 events
 * (one id is kept for the off-CPU event).
 */
int event_list__parse(struct event_list *l, const char *arg, const char *tracefs, char *err,
		      size_t errlen);

/**
 * event_list__is_default() - whether @l is what a recording without -e
 * samples: nothing, or cpu-clock alone. @return true or false.
 */
bool event_list__is_default(const struct event_list *l);

/**
 * event_spec__attr() - the perf_event_attr of @e sampled every @period events,
 * or at @freq_hz when @period is 0 (a tracepoint: every hit, the sampler
 * counts its period).
 */
void event_spec__attr(const struct event_spec *e, uint64_t period, uint32_t freq_hz,
		      struct perf_event_attr *attr);

/**
 * event_spec__probe() - open @e counting this process only, to say before
 * recording whether this machine has it (a VM often has no hardware PMU).
 * @return 0, or -errno with @err set.
 */
int event_spec__probe(const struct event_spec *e, char *err, size_t errlen);

#endif
