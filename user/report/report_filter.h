/* SPDX-License-Identifier: BSD-2-Clause */
/* Which samples report shows: perf report's --comm, --pid, --tid, --dso, --symbols and --time. */
#ifndef SFPROF_REPORT_FILTER_H
#define SFPROF_REPORT_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A window of --time: absolute ns, or fractions of the recording until resolved. */
struct time_range {
	uint64_t start, end;	/* ns, inclusive; 0: open */
	double start_frac, end_frac;
	bool frac;
};

/* Zeroed: no filter. Lists are comma-separated arguments, repeatable. */
struct report_filter {
	char **comms, **dsos, **syms;
	size_t ncomms, ndsos, nsyms;
	uint32_t *pids, *tids;
	size_t npids, ntids;
	struct time_range *times;
	size_t ntimes;
};

/** report_filter__names() - append comma-separated @arg to a name list. @return 0, -EINVAL, -ENOMEM. */
int report_filter__names(char ***list, size_t *n, const char *arg);

/** report_filter__ids() - append comma-separated decimal ids. @return 0, -EINVAL (not ids), -ENOMEM. */
int report_filter__ids(uint32_t **list, size_t *n, const char *arg);

/**
 * report_filter__time() - parse perf's --time: "START,STOP" in seconds
 * (either may be empty; ranges separated by spaces), or percentages of the
 * recording: "10%/2" (the second tenth), "0%-10%", lists of either joined
 * by ','. @return 0, -EINVAL (not such a string), -ENOMEM.
 */
int report_filter__time(struct report_filter *f, const char *arg);

/** report_filter__resolve() - place percentage windows in the recording's [@first, @last] ns. */
void report_filter__resolve(struct report_filter *f, uint64_t first, uint64_t last);

/** @return whether time @ns is in a --time window (true when there is none). */
bool report_filter__in_time(const struct report_filter *f, uint64_t ns);

/** @return whether a sample of @pid, @tid and thread name @comm passes --pid, --tid, --comm. */
bool report_filter__thread(const struct report_filter *f, uint32_t pid, uint32_t tid,
			   const char *comm);

/** @return whether @name is in @list (true when the list is empty). */
bool report_filter__has(char *const *list, size_t n, const char *name);

void report_filter__release(struct report_filter *f);

#endif
