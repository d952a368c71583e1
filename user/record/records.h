/* SPDX-License-Identifier: BSD-2-Clause */
/* The records the sampler reads (BPF ring samples, perf task events): their checks, and a debug capture of them. */
#ifndef SFPROF_RECORDS_H
#define SFPROF_RECORDS_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#include "py_walk.h"
#include "sample.h"

/* A sample record's parts, pointing into the record. */
struct sample_view {
	const struct sample_hdr *h;
	const uint64_t *kstack;	/* h->kstack_depth addresses */
	const uint8_t *ustack;	/* h->ustack_len bytes from h->sp */
	const uint8_t *py;	/* h->py_depth struct sample_py_frame, unaligned: right after ustack */
};

/**
 * sample_record__check() - a sample as the BPF side writes it into the ring:
 * its header, kstack_depth kernel addresses, ustack_len bytes of stack, then
 * py_depth Python frames (at most PY_MAX_FRAMES).
 * @data: the record, 8-byte aligned as the ring gives it.
 * @return 0 with @out set, or -EBADMSG for a record shorter than its header
 * says, with a kernel stack deeper than the BPF side writes, or with a
 * time past INT64_MAX ns (no clock's, and the profile file cannot hold it).
 */
int sample_record__check(const void *data, size_t len, struct sample_view *out);

/**
 * task_record__time() - the time in a task event's sample_id (TID then TIME:
 * the record's last 8 bytes), e->size bytes being readable at @e.
 * @return 0, or -EBADMSG for a record too short to hold one or a time past
 * INT64_MAX ns.
 */
int task_record__time(const struct perf_event_header *e, uint64_t *time);

/*
 * A capture of what the sampler hands over, in the order it does, for the
 * fuzz corpora (tests/fuzz/fuzz_record.c reads it): items of a kind byte, a
 * little-endian u32 length and that many bytes, the record as read.
 */
enum record_capture_kind {
	RECORD_CAPTURE_TASK = 0,	/* a perf task event (its header.size bytes) */
	RECORD_CAPTURE_SAMPLE = 1,	/* a ring record as the ring gave it, once checked */
};

/* The environment variable naming the capture file: unset, nothing is captured. */
#define RECORD_CAPTURE_ENV "SFPROF_DEBUG_CAPTURE"

struct record_capture;

/**
 * record_capture__open() - create @path (owner-only, not through a symlink,
 * not over an existing file: samples hold stack bytes).
 * @return the capture, or NULL with errno set.
 */
struct record_capture *record_capture__open(const char *path);

/** record_capture__add() - append one item (none without a capture); the first failed write stops it. */
void record_capture__add(struct record_capture *c, enum record_capture_kind kind,
			 const void *data, size_t len);

/** record_capture__close() - accepts NULL. @return 0, or -errno when a write failed. */
int record_capture__close(struct record_capture *c);

#endif
