/* SPDX-License-Identifier: BSD-2-Clause */
/* The flight recorder: slices of a recording in memfds, the last SECS of them merged into a profile on demand. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flight.h"
#include "common/hmap.h"

#define MAX_SLICES 64

struct slice {
	int fd;			/* a memfd holding one whole profile */
	uint64_t start, end;	/* CLOCK_MONOTONIC ns */
	uint64_t bytes;
};

struct flight {
	uint64_t keep_ns, slice_ns, max_bytes;
	struct profile_meta meta;
	struct slice slices[MAX_SLICES];	/* closed ones, oldest first */
	unsigned n;
	struct profile_writer *w;		/* the one being recorded */
	int w_fd;
	uint64_t w_start, w_end;
	uint64_t dropped;
};

static int open_slice(struct flight *f, uint64_t start)
{
	struct profile_diag diag = { "" };
	int fd = memfd_create("sfprof-flight", MFD_CLOEXEC), dup_fd;

	if (fd < 0)
		return -errno;
	dup_fd = dup(fd);
	if (dup_fd < 0) {
		close(fd);
		return -errno;
	}
	f->w = profile_writer__create_fd(dup_fd, "flight recorder slice", &f->meta, &diag);
	if (!f->w) {
		int err = -errno;

		close(fd);
		return err;
	}
	f->w_fd = fd;
	f->w_start = start;
	f->w_end = start + f->slice_ns;
	return 0;
}

struct flight *flight__new(double secs, uint64_t max_bytes, const struct profile_meta *meta,
			   uint64_t now)
{
	struct flight *f = calloc(1, sizeof(*f));
	int err;

	if (!f)
		return NULL;
	f->keep_ns = (uint64_t)(secs * 1e9);
	/* slices of a quarter of the span, at most a second: what is kept overshoots by one */
	f->slice_ns = f->keep_ns / 4 < 1000000000ull ? f->keep_ns / 4 : 1000000000ull;
	if (f->slice_ns < 10000000ull)
		f->slice_ns = 10000000ull;
	f->max_bytes = max_bytes;
	f->meta = *meta;
	f->w_fd = -1;
	err = open_slice(f, now);
	if (err) {
		free(f);
		errno = -err;
		return NULL;
	}
	return f;
}

struct profile_writer *flight__writer(struct flight *f)
{
	return f->w;
}

uint64_t flight__cut_at(const struct flight *f)
{
	return f->w_end;
}

static void drop_oldest(struct flight *f)
{
	close(f->slices[0].fd);
	memmove(f->slices, f->slices + 1, (f->n - 1) * sizeof(*f->slices));
	f->n--;
}

int flight__cut(struct flight *f, struct pipeline *pl, uint64_t now)
{
	struct profile_writer *old = f->w;
	struct profile_diag diag = { "" };
	int old_fd = f->w_fd, err;
	uint64_t old_start = f->w_start, total = 0;
	struct stat st;

	err = open_slice(f, now);
	if (err)
		return err;
	err = pl ? pipeline__cut(pl, f->w) : 0;
	if (profile_writer__close(old, false, &diag) && !err)
		err = -EIO;
	if (err) {
		close(old_fd);
		return err;
	}
	if (f->n == MAX_SLICES)
		drop_oldest(f);
	f->slices[f->n++] = (struct slice){ old_fd, old_start, now,
					    fstat(old_fd, &st) ? 0 : (uint64_t)st.st_size };
	/* wholly older than what is kept: no sample of it can be asked for */
	while (f->n && f->slices[0].end + f->keep_ns < now)
		drop_oldest(f);
	for (unsigned i = 0; i < f->n; i++)
		total += f->slices[i].bytes;
	/* the byte bound: a burst costs the oldest seconds, counted */
	while (f->n > 1 && total > f->max_bytes) {
		total -= f->slices[0].bytes;
		drop_oldest(f);
		f->dropped++;
	}
	return 0;
}

/* Copy one slice's records into @out: samples and timed records from @min to @max only. @return 0 or -errno. */
static int copy_slice(struct profile_writer *out, const struct slice *sl, uint64_t min,
		      uint64_t max, uint64_t *samples, struct profile_diag *diag)
{
	char path[64];
	struct profile_reader *r;
	struct profile_record rec;
	struct hmap *modules = hmap__new(HMAP_U64), *py_frames = hmap__new(HMAP_U64);
	uint32_t *py_ids = malloc(PROFILE_PY_MAX_DEPTH * sizeof(*py_ids));
	int ret, err = 0;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", sl->fd);
	r = profile_reader__open(path, diag);
	if (!r || !modules || !py_frames || !py_ids) {
		hmap__free(modules);
		hmap__free(py_frames);
		free(py_ids);
		profile_reader__free(r);
		return -ENOMEM;
	}
	/*
	 * ids are the slice's own: modules and Python frames are numbered again
	 * in the output, stacks interned again
	 */
	while (!err && (ret = profile_reader__next(r, &rec)) == 1) {
		uint64_t *v;
		uint32_t id;

		switch (rec.type) {
		case PROFILE_REC_PROCESS:
			err = profile_writer__process(out, &rec.process);
			break;
		case PROFILE_REC_THREAD:
			err = profile_writer__thread(out, &rec.thread);
			break;
		case PROFILE_REC_MODULE:
			err = profile_writer__module(out, &rec.module, &id);
			if (!err)
				err = hmap__set_u64(modules, rec.module.id, id);
			break;
		case PROFILE_REC_MAPPING:
			if (rec.mapping.module_id)
				rec.mapping.module_id = hmap__find_u64(modules, rec.mapping.module_id, &v) ?
							0 : (uint32_t)*v;
			err = profile_writer__mapping(out, &rec.mapping);
			break;
		case PROFILE_REC_PY_FRAME:
			err = profile_writer__py_frame(out, &rec.py_frame, &id);
			if (!err)
				err = hmap__set_u64(py_frames, rec.py_frame.id, id);
			break;
		case PROFILE_REC_SAMPLE:
			if (rec.sample.time_ns < min || rec.sample.time_ns > max)
				break;
			/* the Python frames by their ids in the output; one the slice lacks, left out */
			if (rec.sample.py_frames) {
				size_t k = 0;

				for (size_t i = 0; i < rec.sample.py_depth && k < PROFILE_PY_MAX_DEPTH; i++)
					if (!hmap__find_u64(py_frames, rec.sample.py_frames[i], &v))
						py_ids[k++] = (uint32_t)*v;
				rec.sample.py_frames = k ? py_ids : NULL;
				rec.sample.py_depth = k;
			}
			rec.sample.ustack_id = rec.sample.kstack_id = 0;
			if (!rec.sample.ustack)
				rec.sample.ustack_len = 0;
			if (!rec.sample.kstack)
				rec.sample.kstack_len = 0;
			err = profile_writer__sample(out, &rec.sample);
			if (!err)
				(*samples)++;
			break;
		case PROFILE_REC_LOST:
			if (rec.lost.time_ns >= min && rec.lost.time_ns <= max)
				err = profile_writer__lost(out, &rec.lost);
			break;
		case PROFILE_REC_EXIT:
			if (rec.exit.time_ns >= min && rec.exit.time_ns <= max)
				err = profile_writer__exit(out, &rec.exit);
			break;
		case PROFILE_REC_COMM:
			if (rec.comm.time_ns >= min && rec.comm.time_ns <= max)
				err = profile_writer__comm(out, &rec.comm);
			break;
		default:
			break;	/* stacks come with their samples; events are refused with -e */
		}
	}
	if (!err && ret < 0)
		err = ret;
	profile_reader__free(r);
	hmap__free(modules);
	hmap__free(py_frames);
	free(py_ids);
	return err;
}

int flight__write(struct flight *f, const char *path, uint64_t now, uint64_t *samples,
		  struct profile_diag *diag)
{
	uint64_t min = now > f->keep_ns ? now - f->keep_ns : 0;
	struct profile_meta meta = f->meta;
	struct profile_writer *out;
	int err = 0;

	*samples = 0;
	out = profile_writer__create(path, &meta, diag);
	if (!out)
		return -errno;
	for (unsigned i = 0; i < f->n && !err; i++)
		if (f->slices[i].end >= min)
			err = copy_slice(out, &f->slices[i], min, now, samples, diag);
	if (err) {
		snprintf(diag->reason, sizeof(diag->reason), "%s: %s", path, strerror(-err));
		profile_writer__discard(out);
		return err;
	}
	return profile_writer__close_whole(out, false, diag);
}

void flight__stats(const struct flight *f, uint64_t *slices, uint64_t *bytes, uint64_t *dropped)
{
	*slices = f->n;
	*bytes = 0;
	for (unsigned i = 0; i < f->n; i++)
		*bytes += f->slices[i].bytes;
	*dropped = f->dropped;
}

void flight__free(struct flight *f)
{
	if (!f)
		return;
	while (f->n)
		drop_oldest(f);
	if (f->w)
		profile_writer__discard(f->w);
	if (f->w_fd >= 0)
		close(f->w_fd);
	free(f);
}
