/* SPDX-License-Identifier: BSD-2-Clause */
/* What the commands reading a profile take from it and say about it: one event's samples, binaries changed since. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report/session.h"
#include "symbolize/symbolize.h"
#include "util/progname.h"
#include "util/text.h"

void print_replaced(const struct session *s)
{
	size_t n = 0;

	for (size_t i = 0; i < session__nmodules(s); i++)
		n += session__module(s, i)->sym && sym_module__replaced(session__module(s, i)->sym);
	if (!n)
		return;
	fprintf(stderr, "sfprof %s: %zu binar%s changed since the recording and no copy of the "
		"recorded build was found (build-ID cache, --buildid-dir, debug directories): ",
		sfprof_command(), n, n == 1 ? "y" : "ies");
	for (size_t i = 0, k = 0; i < session__nmodules(s) && k < 8; i++) {
		const struct session_module *m = session__module(s, i);

		if (!m->sym || !sym_module__replaced(m->sym))
			continue;
		fputs(k++ ? ", " : "", stderr);
		text_put(stderr, m->path ? m->path : "?", 0);
	}
	fprintf(stderr, "%s; their frames are shown as module+0xoffset\n", n > 8 ? ", ..." : "");
}

int pick_event(struct session *s, const char *path, const char *name)
{
	size_t nevents = session__nevents(s), with = 0;
	uint64_t *count = calloc(nevents, sizeof(*count));
	int pick = -1;

	if (!count) {
		fprintf(stderr, "sfprof %s: out of memory\n", sfprof_command());
		return -1;
	}
	for (size_t i = 0; i < session__nsamples(s); i++)
		count[session__sample(s, i)->event]++;
	for (size_t e = 0; e < nevents; e++) {
		with += count[e] > 0;
		if (pick < 0 && (name ? !strcmp(session__event(s, e)->name, name) : count[e] > 0))
			pick = e;
	}
	if (name && pick < 0) {
		fprintf(stderr, "sfprof %s: %s has no event '%s' (it has", sfprof_command(), path, name);
		for (size_t e = 0; e < nevents; e++)
			fprintf(stderr, "%s %s", e ? "," : "", session__event(s, e)->name);
		fprintf(stderr, ")\n");
	} else if (!name && with > 1) {
		fprintf(stderr, "sfprof %s: %s holds samples of %zu events:", sfprof_command(), path,
			with);
		for (size_t e = 0, n = 0; e < nevents; e++)
			if (count[e])
				fprintf(stderr, "%s %s (%lu)", n++ ? "," : "", session__event(s, e)->name,
					(unsigned long)count[e]);
		fprintf(stderr, "; this is %s's (--event NAME for another)\n",
			session__event(s, pick)->name);
	}
	free(count);
	if (pick >= 0)
		session__only_event(s, pick);
	else if (!name)
		pick = 0;	/* no samples at all: the default event, empty */
	return pick;
}
