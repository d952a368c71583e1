/* SPDX-License-Identifier: BSD-2-Clause */
/* Lost samples as the recording commands (record, agent) count and write them. */
#ifndef SFPROF_LOST_H
#define SFPROF_LOST_H

#include <pthread.h>
#include <stdint.h>

struct pipeline;
struct profile_writer;
struct sampler;

/** record_lost() - samples lost so far, every cause: the ring, the reader's late queue, the unwinders' queue. */
uint64_t record_lost(struct sampler *s, struct pipeline *pl);

/**
 * record_write_lost() - write into @w (under @wlock) the samples lost since
 * *@written, which then follows. @return 0 or -errno (*@written unchanged).
 */
int record_write_lost(struct sampler *s, struct pipeline *pl, struct profile_writer *w,
		      pthread_mutex_t *wlock, uint64_t *written);

#endif
