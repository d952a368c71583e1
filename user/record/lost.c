/* SPDX-License-Identifier: BSD-2-Clause */
/* Lost samples as the recording commands (record, agent) count and write them. */
#include <time.h>

#include "lost.h"
#include "pipeline.h"
#include "profile/profile.h"
#include "sampler.h"
#include "common/clock.h"

uint64_t record_lost(struct sampler *s, struct pipeline *pl)
{
	struct pipeline_stats ps;

	pipeline__stats(pl, &ps);
	return sampler__lost(s) + ps.dropped;
}

int record_write_lost(struct sampler *s, struct pipeline *pl, struct profile_writer *w,
		      pthread_mutex_t *wlock, uint64_t *written)
{
	uint64_t lost = record_lost(s, pl);
	int err = 0;

	if (lost > *written) {
		struct profile_lost rec = { 0, UINT32_MAX, lost - *written };

		rec.time_ns = clock_mono_ns();
		pthread_mutex_lock(wlock);
		err = profile_writer__lost(w, &rec);
		pthread_mutex_unlock(wlock);
		if (!err)
			*written = lost;
	}
	return err;
}
