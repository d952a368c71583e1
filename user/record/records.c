/* SPDX-License-Identifier: BSD-2-Clause */
/* The records the sampler reads, checked before use; and their debug capture for the fuzz corpora. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "records.h"

int sample_record__check(const void *data, size_t len, struct sample_view *out)
{
	const struct sample_hdr *h = data;
	size_t kbytes;

	/* a time past INT64_MAX ns is no clock's: the profile file cannot hold it */
	if (len < sizeof(*h) || h->kstack_depth > MAX_KSTACK_DEPTH || h->time_ns > INT64_MAX)
		return -EBADMSG;
	kbytes = (size_t)h->kstack_depth * 8;	/* the user stack follows the kernel stack */
	if (len - sizeof(*h) < kbytes || h->ustack_len > len - sizeof(*h) - kbytes)
		return -EBADMSG;
	/* the Python frames follow the user stack */
	if (h->py_depth > PY_MAX_FRAMES ||
	    (size_t)h->py_depth * sizeof(struct sample_py_frame) >
	    len - sizeof(*h) - kbytes - h->ustack_len)
		return -EBADMSG;
	out->h = h;
	out->kstack = (const uint64_t *)((const uint8_t *)data + sizeof(*h));
	out->ustack = (const uint8_t *)data + sizeof(*h) + kbytes;
	out->py = out->ustack + h->ustack_len;
	return 0;
}

int task_record__time(const struct perf_event_header *e, uint64_t *time)
{
	if (e->size < sizeof(*e) + 16)
		return -EBADMSG;
	memcpy(time, (const uint8_t *)e + e->size - 8, 8);
	return *time > INT64_MAX ? -EBADMSG : 0;
}

struct record_capture {
	FILE *f;
	int err;
};

struct record_capture *record_capture__open(const char *path)
{
	struct record_capture *c = calloc(1, sizeof(*c));
	int fd, e;

	if (!c)
		return NULL;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || !(c->f = fdopen(fd, "w"))) {
		e = errno;
		if (fd >= 0)
			close(fd);
		free(c);
		errno = e;
		return NULL;
	}
	return c;
}

void record_capture__add(struct record_capture *c, enum record_capture_kind kind,
			 const void *data, size_t len)
{
	uint8_t head[5] = { kind, len, len >> 8, len >> 16, len >> 24 };

	if (!c || c->err)
		return;
	errno = 0;
	if (len > UINT32_MAX || fwrite(head, sizeof(head), 1, c->f) != 1 ||
	    (len && fwrite(data, len, 1, c->f) != 1))
		c->err = errno ? -errno : -EIO;
}

int record_capture__close(struct record_capture *c)
{
	int err;

	if (!c)
		return 0;
	err = c->err;
	if (fclose(c->f) && !err)
		err = errno ? -errno : -EIO;
	free(c);
	return err;
}
