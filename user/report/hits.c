/* SPDX-License-Identifier: BSD-2-Clause */
/* Which modules a profile's samples hit: every frame of every sampled stack, each distinct stack once. */
#include <errno.h>
#include <stdlib.h>

#include "hits.h"

int session_hits(const struct session *s, bool *hit, bool *kernel)
{
	size_t nsamples = session__nsamples(s), nmodules = session__nmodules(s);
	uint32_t *done = NULL;
	size_t ndone = 0;

	*kernel = false;
	for (size_t i = 0; i < nmodules; i++)
		hit[i] = false;
	for (size_t i = 0; i < nsamples; i++) {
		uint32_t id = session__sample(s, i)->stack;
		const struct session_stack *st;

		/* stacks are shared by many samples: a bit per stack index seen */
		if (id / 32 >= ndone) {
			size_t n = id / 32 + 1 > 2 * ndone ? id / 32 + 1 : 2 * ndone;
			uint32_t *grown = realloc(done, n * sizeof(*done));

			if (!grown) {
				free(done);
				return -ENOMEM;
			}
			for (size_t j = ndone; j < n; j++)
				grown[j] = 0;
			done = grown;
			ndone = n;
		}
		if (done[id / 32] & 1u << id % 32)
			continue;
		done[id / 32] |= 1u << id % 32;
		st = session__stack(s, id);
		for (uint32_t j = 0; j < st->count; j++) {
			const struct session_frame *f = session__frame(s, st->frames[j]);

			if (f->kernel)
				*kernel = true;
			else if (f->module && f->module <= nmodules)
				hit[f->module - 1] = true;
		}
	}
	free(done);
	return 0;
}
