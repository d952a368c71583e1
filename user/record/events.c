/* SPDX-License-Identifier: BSD-2-Clause */
/* Event names as perf takes them, tracepoint ids from tracefs, and the perf_event_attr of each. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "events.h"

/* perf list's names; the first of an event's names is the one recorded. */
static const struct known_event {
	const char *name;
	uint32_t type;
	uint64_t config;
	bool clock;
} known[] = {
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, true },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, true },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, false },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, false },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, false },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, false },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, false },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, false },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, false },
	{ "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, false },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, false },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS, false },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, false },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, false },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, false },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, false },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, false },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, false },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, false },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, false },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES, false },
	{ "stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, false },
	{ "idle-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, false },
	{ "stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND, false },
	{ "idle-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND, false },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, false },
};

/* The first (recorded) name of the known event @k. */
static const struct known_event *canonical(const struct known_event *k)
{
	for (const struct known_event *c = known; c < k; c++)
		if (c->type == k->type && c->config == k->config)
			return c;
	return k;
}

static const struct known_event *find_known(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strlen(known[i].name) == len && !strncasecmp(known[i].name, name, len))
			return &known[i];
	return NULL;
}

/* A tracepoint's subsystem or name: what tracefs names directories with, never a path. */
static bool tp_word(const char *s, size_t len)
{
	if (!len || len >= EVENT_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/* tracefs's events directory, mounting tracefs where it is not (perf does so too). */
static int find_tracefs(char *out, size_t len)
{
	static const char *const dirs[] = { EVENT_TRACEFS, "/sys/kernel/debug/tracing" };

	for (size_t i = 0; i < 2; i++) {
		snprintf(out, len, "%s/events", dirs[i]);
		if (is_dir(out)) {
			snprintf(out, len, "%s", dirs[i]);
			return 0;
		}
	}
	if (mount("tracefs", EVENT_TRACEFS, "tracefs", 0, NULL))
		return -errno;
	snprintf(out, len, "%s", EVENT_TRACEFS);
	return 0;
}

static int tracepoint_id(const char *tracefs, const char *sys, const char *name, uint64_t *id,
			 char *err, size_t errlen)
{
	char path[4096], line[32], *end;
	unsigned long long v;
	FILE *f;
	int e;

	if ((size_t)snprintf(path, sizeof(path), "%s/events/%s/%s/id", tracefs, sys, name) >=
	    sizeof(path)) {
		snprintf(err, errlen, "tracepoint '%s:%s': the tracefs path is too long", sys, name);
		return -ENAMETOOLONG;
	}
	f = fopen(path, "re");
	if (!f) {
		e = errno;
		if (e == ENOENT)
			snprintf(err, errlen, "no tracepoint '%s:%s' (%s/events/%s/%s does not exist; "
				 "perf list tracepoint lists them)", sys, name, tracefs, sys, name);
		else
			snprintf(err, errlen, "tracepoint '%s:%s': %s: %s", sys, name, path, strerror(e));
		return -e;
	}
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		snprintf(err, errlen, "tracepoint '%s:%s': %s is empty", sys, name, path);
		return -EINVAL;
	}
	fclose(f);
	errno = 0;
	v = strtoull(line, &end, 10);
	if (end == line || errno || (*end && *end != '\n')) {
		snprintf(err, errlen, "tracepoint '%s:%s': %s holds no id", sys, name, path);
		return -EINVAL;
	}
	*id = v;
	return 0;
}

/* One event of an -e list: @len bytes at @s. */
static int parse_one(struct event_list *l, const char *s, size_t len, const char *tracefs,
		     char *err, size_t errlen)
{
	const char *colon = memchr(s, ':', len);
	const struct known_event *k;
	struct event_spec e = { .name = "" };
	char dir[4096];
	int rc;

	if (!len) {
		snprintf(err, errlen, "an empty event name in the -e list");
		return -EINVAL;
	}
	if (len >= EVENT_NAME_MAX) {
		snprintf(err, errlen, "event name too long: '%.40s...'", s);
		return -EINVAL;
	}
	if (memchr(s, '/', len) || memchr(s, '{', len) || memchr(s, '}', len)) {
		snprintf(err, errlen, "'%.*s': PMU terms (pmu/.../) and event groups ({...}) are not "
			 "supported", (int)len, s);
		return -EINVAL;
	}
	if (colon && (k = find_known(s, colon - s))) {
		snprintf(err, errlen, "'%.*s': event modifiers (:u, :k, :p, ...) are not supported: "
			 "sfprof takes each sample's user and kernel stacks", (int)len, s);
		return -EINVAL;
	}
	if (colon) {
		size_t slen = colon - s, nlen = len - slen - 1;

		if (memchr(colon + 1, ':', nlen) || !tp_word(s, slen) || !tp_word(colon + 1, nlen)) {
			snprintf(err, errlen, "'%.*s' is not a tracepoint: SUBSYSTEM:NAME, letters, digits "
				 "and '_' (no wildcards)", (int)len, s);
			return -EINVAL;
		}
		memcpy(e.tp_sys, s, slen);
		memcpy(e.tp_name, colon + 1, nlen);
		if (!tracefs) {
			rc = find_tracefs(dir, sizeof(dir));
			if (rc) {
				snprintf(err, errlen, "tracepoint '%.*s': tracefs is not mounted and cannot "
					 "be mounted at %s: %s", (int)len, s, EVENT_TRACEFS, strerror(-rc));
				return rc;
			}
			tracefs = dir;
		}
		rc = tracepoint_id(tracefs, e.tp_sys, e.tp_name, &e.config, err, errlen);
		if (rc)
			return rc;
		e.type = PERF_TYPE_TRACEPOINT;
		memcpy(e.name, s, len);	/* shorter than EVENT_NAME_MAX: checked above */
	} else {
		k = find_known(s, len);
		if (!k) {
			if (len == 11 && !strncmp(s, "offcpu-time", len))
				snprintf(err, errlen, "offcpu-time is recorded with --off-cpu, not -e");
			else
				snprintf(err, errlen, "unknown event '%.*s': sfprof knows cpu-clock, task-clock, "
					 "page-faults, minor-faults, major-faults, context-switches, "
					 "cpu-migrations, the hardware events (cycles, instructions, "
					 "cache-misses, branch-misses, ...) and tracepoints SUBSYSTEM:NAME",
					 (int)len, s);
			return -EINVAL;
		}
		k = canonical(k);
		snprintf(e.name, sizeof(e.name), "%s", k->name);
		e.type = k->type;
		e.config = k->config;
		e.clock = k->clock;
	}
	for (size_t i = 0; i < l->n; i++) {
		if (l->ev[i].type == e.type && l->ev[i].config == e.config) {
			snprintf(err, errlen, "event '%s' given twice", e.name);
			return -EINVAL;
		}
	}
	if (l->n >= MAX_EVENTS - 1) {
		snprintf(err, errlen, "more than %d events", MAX_EVENTS - 1);
		return -E2BIG;
	}
	l->ev[l->n++] = e;
	return 0;
}

int event_list__parse(struct event_list *l, const char *arg, const char *tracefs, char *err,
		      size_t errlen)
{
	const char *p = arg;

	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		int rc = parse_one(l, p, len, tracefs, err, errlen);

		if (rc)
			return rc;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

bool event_list__is_default(const struct event_list *l)
{
	return !l->n || (l->n == 1 && l->ev[0].type == PERF_TYPE_SOFTWARE &&
			 l->ev[0].config == PERF_COUNT_SW_CPU_CLOCK);
}

void event_spec__attr(const struct event_spec *e, uint64_t period, uint32_t freq_hz,
		      struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = e->type;
	attr->config = e->config;
	if (e->type == PERF_TYPE_TRACEPOINT) {
		attr->sample_period = 1;
	} else if (period) {
		attr->sample_period = period;
	} else {
		attr->freq = 1;
		attr->sample_freq = freq_hz;
	}
}

int event_spec__probe(const struct event_spec *e, char *err, size_t errlen)
{
	struct perf_event_attr attr;
	long fd;
	int en;

	if (e->type == PERF_TYPE_TRACEPOINT)
		return 0;	/* its id was found in tracefs */
	event_spec__attr(e, 0, 0, &attr);
	attr.freq = 0;
	attr.disabled = 1;
	attr.exclude_kernel = 1;	/* allowed at every perf_event_paranoid level */
	fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	en = errno;
	if (e->type == PERF_TYPE_HARDWARE && (en == ENOENT || en == EOPNOTSUPP || en == ENODEV))
		snprintf(err, errlen, "event '%s' needs a hardware performance counter (PMU), and this "
			 "machine has none (a virtual machine often has none): sample on cpu-clock "
			 "or another software event instead", e->name);
	else
		snprintf(err, errlen, "event '%s' cannot be opened: %s", e->name, strerror(en));
	return -en;
}
