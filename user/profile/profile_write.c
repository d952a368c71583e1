/* SPDX-License-Identifier: BSD-2-Clause */
/* Profile writer: records into zstd blocks written whole, interned stacks, a trailer at close. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "common/hmap.h"
#include "common/clock.h"
#include "profile.h"
#include "profile_internal.h"
#include "common/vec.h"

#define ZSTD_LEVEL 3
#define BLOCK_NS 1000000000ull	/* a block older than this is written at the next record */

struct buf {
	uint8_t *p;
	size_t len, cap;
	bool oom;	/* an append failed: the content is incomplete */
};

struct profile_writer {
	int fd;
	char *path;
	char *old_path;		/* set when an existing file was renamed away */
	bool not_owned;		/* made on a descriptor (create_fd): never unlinked */
	int err;		/* first write error, sticky */
	uint64_t committed;	/* bytes of whole blocks on disk */
	ZSTD_CCtx *zc;
	struct buf block, scratch, out;
	uint32_t block_records;
	uint64_t block_started;	/* CLOCK_MONOTONIC_COARSE ns of its first record */
	uint64_t prev_time;	/* of the last timed record in the block */
	struct hmap *stacks;	/* space byte and CBF bytes -> id, from 1 */
	uint32_t stack_count;	/* ids given: the next one is stack_count + 1 */
	size_t stack_bound;	/* past this many bytes held, stacks starts again (0: none) */
	uint64_t stack_resets;
	struct hmap *modules;	/* build ID length, build ID and path -> id, from 1 */
	uint8_t *stack_space;	/* of each stack id, from 1: samples may give ids */
	size_t stack_space_cap;
	uint64_t samples, lost, blocks;
	/* of samples and lost counts given, those in whole blocks on disk, and those refused */
	uint64_t block_samples, block_lost;
	uint64_t samples_written, lost_written, refused;
	uint64_t first_time, last_time;
	uint32_t processes;
	uint32_t events;	/* event ids given */
	struct hmap *py_frames;	/* flags, line, qualname, NUL, file -> id, from 1 */
	uint32_t py_count;	/* Python frame ids given */
};

static void set_reason(struct profile_diag *diag, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_reason(struct profile_diag *diag, const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return;
	va_start(ap, fmt);
	vsnprintf(diag->reason, sizeof(diag->reason), fmt, ap);
	va_end(ap);
}

static int buf_reserve(struct buf *b, size_t more)
{
	return VEC_RESERVE(b->p, b->cap, b->len + more, 4096);
}

static int buf_put(struct buf *b, const void *p, size_t n)
{
	if (buf_reserve(b, n)) {
		b->oom = true;
		return -ENOMEM;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

static void put_varint(struct buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		tmp[n++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	buf_put(b, tmp, n);
}

static void put_bytes(struct buf *b, const void *p, size_t n)
{
	put_varint(b, n);
	buf_put(b, p, n);
}

static void put_str(struct buf *b, const char *s)
{
	put_bytes(b, s ? s : "", s ? strlen(s) : 0);
}

/* The id of @key in @t, adding it when new (*@added set). @return 0, -ENOMEM or -EINVAL. */
static int intern(struct hmap *t, const uint8_t *key, size_t len, uint32_t *id, bool *added)
{
	uint64_t *v;
	int err = hmap__entry(t, key, len, &v, NULL);

	if (err)
		return err;
	*added = !*v;
	if (!*v)
		*v = hmap__count(t);	/* ids from 1 in the order first seen: nothing is deleted */
	*id = (uint32_t)*v;
	return 0;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= w;
	}
	return 0;
}

/* Write @p whole or, on failure, cut the file back to its last whole block. */
static int commit(struct profile_writer *w, const uint8_t *p, size_t n)
{
	int err;

	if (w->err)
		return w->err;
	err = write_all(w->fd, p, n);
	if (err) {
		if (ftruncate(w->fd, w->committed) == 0)
			lseek(w->fd, w->committed, SEEK_SET);
		w->err = err;
		return err;
	}
	w->committed += n;
	return 0;
}

int profile_writer__flush(struct profile_writer *w)
{
	size_t bound, csize;
	uint8_t *hdr;
	int err;

	if (w->err)
		return w->err;
	if (!w->block_records)
		return 0;
	bound = ZSTD_compressBound(w->block.len);
	w->out.len = 0;
	if (buf_reserve(&w->out, PROFILE_BLOCK_HDR + bound))
		return w->err = -ENOMEM;
	csize = ZSTD_compress2(w->zc, w->out.p + PROFILE_BLOCK_HDR, bound, w->block.p,
			       w->block.len);
	if (ZSTD_isError(csize) || csize > UINT32_MAX)
		return w->err = -EIO;
	hdr = w->out.p;
	memcpy(hdr, PROFILE_BLOCK_MAGIC, 4);
	put_le32(hdr + 4, csize);
	put_le32(hdr + 8, w->block.len);
	put_le32(hdr + 12, w->block_records);
	put_le32(hdr + 16, profile_crc32(0, hdr, 16));
	err = commit(w, w->out.p, PROFILE_BLOCK_HDR + csize);
	if (err)
		return err;
	w->blocks++;
	w->samples_written += w->block_samples;
	w->lost_written += w->block_lost;
	w->block_samples = w->block_lost = 0;
	w->block.len = 0;
	w->block_records = 0;
	w->prev_time = 0;
	return 0;
}

/* Append the record in w->scratch as @type. */
static int append(struct profile_writer *w, uint8_t type)
{
	if (w->err)
		return w->err;
	if (w->scratch.oom || buf_reserve(&w->block, w->scratch.len + 11))
		return w->err = -ENOMEM;
	buf_put(&w->block, &type, 1);
	put_varint(&w->block, w->scratch.len);
	buf_put(&w->block, w->scratch.p, w->scratch.len);
	w->block_records++;
	return 0;
}

/*
 * Start a record of about @room bytes in the scratch buffer. The block is cut
 * here, before the record is encoded, since its times are deltas within the
 * block it lands in.
 */
static int begin(struct profile_writer *w, size_t room)
{
	uint64_t now;

	if (w->err)
		return w->err;
	now = clock_ns(CLOCK_MONOTONIC_COARSE);
	if (w->block_records &&
	    (w->block.len + room > PROFILE_BLOCK_BYTES || now - w->block_started >= BLOCK_NS) &&
	    profile_writer__flush(w))
		return w->err;
	if (!w->block_records)
		w->block_started = now;
	w->scratch.len = 0;
	w->scratch.oom = false;
	if (buf_reserve(&w->scratch, room))
		return w->err = -ENOMEM;
	return 0;
}

static void put_time(struct profile_writer *w, uint64_t t)
{
	put_varint(&w->scratch, zigzag((int64_t)(t - w->prev_time)));
	w->prev_time = t;
}

/* The kernel's clocks are signed: a reader takes no time past INT64_MAX ns (docs/FORMAT.md). */
static bool bad_time(uint64_t t)
{
	return t > INT64_MAX;
}

static size_t slen(const char *s)
{
	return s ? strlen(s) : 0;
}

static int write_header(struct profile_writer *w, const struct profile_meta *m)
{
	const struct { uint8_t tag; const char *s; } fields[] = {
		{ HDR_HOST, m->host }, { HDR_RELEASE, m->release },
		{ HDR_MACHINE, m->machine }, { HDR_CMDLINE, m->cmdline },
	};
	struct buf *b = &w->scratch;
	uint8_t fixed[PROFILE_HDR_FIXED], f[3];

	b->len = 0;
	b->oom = false;
	memcpy(fixed, PROFILE_MAGIC, 8);
	put_le16(fixed + 8, PROFILE_VERSION);
	put_le16(fixed + 10, 0);	/* size, patched below */
	put_le32(fixed + 12, m->flags);
	put_le64(fixed + 16, m->created_ns);
	put_le32(fixed + 24, m->freq_hz);
	put_le32(fixed + 28, m->stack_size);
	put_le64(fixed + 32, m->clock_offset_ns);
	if (buf_put(b, fixed, sizeof(fixed)))
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		size_t n = slen(fields[i].s);

		if (!n)
			continue;
		if (n > 4096)
			n = 4096;
		f[0] = fields[i].tag;
		put_le16(f + 1, n);
		buf_put(b, f, 3);
		buf_put(b, fields[i].s, n);
	}
	f[0] = HDR_END;
	put_le16(f + 1, 0);
	buf_put(b, f, 3);
	if (b->oom || buf_reserve(b, 4))
		return -ENOMEM;
	put_le16(b->p + 10, b->len + 4);
	put_le32(b->p + b->len, profile_crc32(0, b->p, b->len));
	b->len += 4;
	return commit(w, b->p, b->len);
}

static void writer_free(struct profile_writer *w)
{
	ZSTD_freeCCtx(w->zc);
	free(w->block.p);
	free(w->scratch.p);
	free(w->out.p);
	hmap__free(w->stacks);
	free(w->stack_space);
	hmap__free(w->modules);
	hmap__free(w->py_frames);
	free(w->path);
	free(w->old_path);
	free(w);
}

struct profile_writer *profile_writer__create(const char *path, const struct profile_meta *meta,
					      struct profile_diag *diag)
{
	struct profile_writer *w = calloc(1, sizeof(*w));
	int err = -ENOMEM;
	struct stat st;

	if (!w)
		goto fail;
	w->fd = -1;
	w->path = strdup(path);
	if (!w->path || asprintf(&w->old_path, "%s.old", path) < 0) {
		w->old_path = NULL;
		goto fail;
	}
	w->zc = ZSTD_createCCtx();
	w->stacks = hmap__new(HMAP_BYTES);
	w->modules = hmap__new(HMAP_BYTES);
	w->py_frames = hmap__new(HMAP_BYTES);
	if (!w->zc || !w->stacks || !w->modules || !w->py_frames)
		goto fail;
	ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel, ZSTD_LEVEL);
	ZSTD_CCtx_setParameter(w->zc, ZSTD_c_checksumFlag, 1);

	/* only a regular file is moved aside: never a directory, a FIFO or a device */
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		err = S_ISDIR(st.st_mode) ? -EISDIR : -EEXIST;
		set_reason(diag, "%s: exists and is not a regular file", path);
		goto fail_quiet;
	}
	if (rename(path, w->old_path) < 0) {
		if (errno != ENOENT) {
			err = -errno;
			set_reason(diag, "%s: cannot keep the existing file as %s: %s", path,
				   w->old_path, strerror(errno));
			goto fail_quiet;
		}
		free(w->old_path);
		w->old_path = NULL;
	}
	w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		err = -errno;
		set_reason(diag, "%s: %s", path, strerror(errno));
		goto fail_quiet;
	}
	err = write_header(w, meta);
	if (err)
		goto fail;
	return w;
fail:
	set_reason(diag, "%s: %s", path, strerror(-err));
fail_quiet:
	if (w) {
		if (w->fd >= 0) {
			close(w->fd);
			unlink(path);
		}
		if (w->old_path)
			rename(w->old_path, path);
		writer_free(w);
	}
	errno = -err;
	return NULL;
}

struct profile_writer *profile_writer__create_fd(int fd, const char *name,
						 const struct profile_meta *meta,
						 struct profile_diag *diag)
{
	struct profile_writer *w = calloc(1, sizeof(*w));
	int err = -ENOMEM;

	if (!w)
		goto fail;
	w->fd = fd;
	w->not_owned = true;
	w->path = strdup(name);
	w->zc = ZSTD_createCCtx();
	w->stacks = hmap__new(HMAP_BYTES);
	w->modules = hmap__new(HMAP_BYTES);
	w->py_frames = hmap__new(HMAP_BYTES);
	if (!w->path || !w->zc || !w->stacks || !w->modules || !w->py_frames)
		goto fail;
	ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel, ZSTD_LEVEL);
	ZSTD_CCtx_setParameter(w->zc, ZSTD_c_checksumFlag, 1);
	err = write_header(w, meta);
	if (err)
		goto fail;
	return w;
fail:
	set_reason(diag, "%s: %s", name, strerror(-err));
	if (w) {
		w->fd = -1;
		writer_free(w);
	}
	close(fd);
	errno = -err;
	return NULL;
}

int profile_writer__process(struct profile_writer *w, const struct profile_process *p)
{
	if (begin(w, 64 + slen(p->comm) + slen(p->exe) + slen(p->cgroup) + slen(p->script)))
		return w->err;
	put_varint(&w->scratch, p->pid);
	put_varint(&w->scratch, p->ppid);
	put_str(&w->scratch, p->comm);
	put_str(&w->scratch, p->exe);
	put_varint(&w->scratch, p->pid_ns);
	put_varint(&w->scratch, p->mnt_ns);
	put_varint(&w->scratch, p->ns_pid);
	/* a field added after version 1's first readers, who skip it */
	if ((p->cgroup && p->cgroup[0]) || (p->script && p->script[0]))
		put_str(&w->scratch, p->cgroup ? p->cgroup : "");
	/* the same, after cgroup (written, maybe empty, when there is a script) */
	if (p->script && p->script[0])
		put_str(&w->scratch, p->script);
	w->processes++;
	return append(w, PROFILE_REC_PROCESS);
}

int profile_writer__thread(struct profile_writer *w, const struct profile_thread *t)
{
	if (begin(w, 32 + slen(t->comm)))
		return w->err;
	put_varint(&w->scratch, t->pid);
	put_varint(&w->scratch, t->tid);
	put_str(&w->scratch, t->comm);
	return append(w, PROFILE_REC_THREAD);
}

int profile_writer__exit(struct profile_writer *w, const struct profile_exit *e)
{
	if (bad_time(e->time_ns))
		return -EINVAL;
	if (begin(w, 32))
		return w->err;
	put_time(w, e->time_ns);
	put_varint(&w->scratch, e->pid);
	return append(w, PROFILE_REC_EXIT);
}

int profile_writer__comm(struct profile_writer *w, const struct profile_comm *c)
{
	if (bad_time(c->time_ns))
		return -EINVAL;
	if (begin(w, 48 + slen(c->comm)))
		return w->err;
	put_time(w, c->time_ns);
	put_varint(&w->scratch, c->pid);
	put_varint(&w->scratch, c->tid);
	put_str(&w->scratch, c->comm);
	return append(w, PROFILE_REC_COMM);
}

int profile_writer__jit(struct profile_writer *w, const struct profile_jit *j)
{
	if (bad_time(j->time_ns) || j->end <= j->start || j->lines_len > PROFILE_BLOCK_BYTES)
		return -EINVAL;
	if (begin(w, 80 + slen(j->name) + slen(j->source) + j->lines_len))
		return w->err;
	put_time(w, j->time_ns);
	put_varint(&w->scratch, j->pid);
	put_varint(&w->scratch, j->start);
	put_varint(&w->scratch, j->end - j->start);
	put_varint(&w->scratch, j->flags);
	put_str(&w->scratch, j->name);
	put_str(&w->scratch, j->source);
	if (j->lines_len)
		put_bytes(&w->scratch, j->lines, j->lines_len);
	return append(w, PROFILE_REC_JIT);
}

int profile_writer__lost(struct profile_writer *w, const struct profile_lost *l)
{
	if (bad_time(l->time_ns))
		return -EINVAL;
	if (begin(w, 32))
		return w->err;
	put_time(w, l->time_ns);
	put_varint(&w->scratch, l->cpu);
	put_varint(&w->scratch, l->count);
	if (append(w, PROFILE_REC_LOST))
		return w->err;
	w->lost += l->count;
	w->block_lost += l->count;
	return 0;
}

int profile_writer__mapping(struct profile_writer *w, const struct profile_mapping *m)
{
	/* mmap() makes no empty mapping: a reader takes none */
	if (m->end <= m->start)
		return -EINVAL;
	if (begin(w, 64))
		return w->err;
	put_varint(&w->scratch, m->pid);
	put_varint(&w->scratch, m->start);
	put_varint(&w->scratch, m->end - m->start);
	put_varint(&w->scratch, m->file_offset);
	buf_put(&w->scratch, &m->prot, 1);
	put_varint(&w->scratch, m->module_id);
	return append(w, PROFILE_REC_MAPPING);
}

int profile_writer__module(struct profile_writer *w, const struct profile_module *m, uint32_t *id)
{
	size_t plen = slen(m->path);
	uint8_t *key;
	bool added;
	int err;

	if (m->build_id_len > 255)
		return -EINVAL;
	/* key: build ID length, build ID, path */
	key = malloc(1 + m->build_id_len + plen);
	if (!key)
		return -ENOMEM;
	key[0] = m->build_id_len;
	if (m->build_id_len)
		memcpy(key + 1, m->build_id, m->build_id_len);
	if (plen)
		memcpy(key + 1 + m->build_id_len, m->path, plen);
	err = intern(w->modules, key, 1 + m->build_id_len + plen, id, &added);
	free(key);
	if (err || !added)
		return err;
	if (begin(w, 32 + m->build_id_len + plen))
		return w->err;
	put_varint(&w->scratch, *id);
	put_varint(&w->scratch, m->file_size);
	put_bytes(&w->scratch, m->build_id, m->build_id_len);
	put_str(&w->scratch, m->path);
	return append(w, PROFILE_REC_MODULE);
}

int profile_writer__event(struct profile_writer *w, const struct profile_event *e, uint32_t *id)
{
	if (begin(w, 80 + slen(e->name)))
		return w->err;
	*id = ++w->events;
	put_varint(&w->scratch, *id);
	put_varint(&w->scratch, e->type);
	put_varint(&w->scratch, e->config);
	put_varint(&w->scratch, e->period);
	put_varint(&w->scratch, e->freq_hz);
	put_varint(&w->scratch, e->flags);
	put_str(&w->scratch, e->name);
	return append(w, PROFILE_REC_EVENT);
}

/*
 * Start the stack index again: stacks seen before are written again, under
 * new ids, when next seen. Ids keep counting, so every id in the file names
 * one stack. @return 0 or -ENOMEM.
 */
static int forget_stacks(struct profile_writer *w)
{
	struct hmap *fresh = hmap__new(HMAP_BYTES);

	if (!fresh)
		return -ENOMEM;
	hmap__free(w->stacks);
	w->stacks = fresh;
	w->stack_resets++;
	return 0;
}

/* The id of a stack, writing its record the first time. 0 for an empty stack. */
static int stack_id(struct profile_writer *w, uint8_t space, const uint8_t *cbf, size_t len,
		    uint32_t *id)
{
	uint64_t *v;
	int err;

	*id = 0;
	if (!len)
		return 0;
	/* the space is part of the key: identical bytes in both spaces are two stacks */
	if (begin(w, len + 1))
		return w->err;
	w->scratch.p[0] = space;
	memcpy(w->scratch.p + 1, cbf, len);
	/* room for a new one's space first: an id is never given without it */
	if (VEC_RESERVE(w->stack_space, w->stack_space_cap, (size_t)w->stack_count + 1, 1024))
		return -ENOMEM;
	if (!hmap__find(w->stacks, w->scratch.p, len + 1, &v)) {
		*id = (uint32_t)*v;
		return 0;
	}
	/*
	 * Only a new stack can pass the bound: stacks that fit it are never
	 * written twice. The bound is on what the index holds, slots and key
	 * copies: it starts again once past it, so one insertion (a chunk of
	 * keys, or its slots doubled) may take it past the bound.
	 */
	if (w->stack_bound && hmap__memory(w->stacks) > w->stack_bound &&
	    (err = forget_stacks(w)))
		return err;
	err = hmap__entry(w->stacks, w->scratch.p, len + 1, &v, NULL);
	if (err)
		return err;
	if (w->stack_count == UINT32_MAX) {
		hmap__delete(w->stacks, w->scratch.p, len + 1, NULL);
		return -E2BIG;
	}
	*v = *id = ++w->stack_count;
	w->stack_space[*id - 1] = space;
	if (begin(w, len + 24))
		return w->err;
	put_varint(&w->scratch, *id);
	buf_put(&w->scratch, &space, 1);
	put_bytes(&w->scratch, cbf, len);
	return append(w, PROFILE_REC_STACK);
}

int profile_writer__stack(struct profile_writer *w, uint8_t space, const uint8_t *cbf, size_t len,
			  uint32_t *id)
{
	if (space != PROFILE_USER && space != PROFILE_KERNEL)
		return -EINVAL;
	return stack_id(w, space, cbf, len, id);
}

int profile_writer__py_frame(struct profile_writer *w, const struct profile_py_frame *f, uint32_t *id)
{
	uint8_t small[512], *key = small;
	size_t qlen, flen, klen;
	uint64_t *v;
	int err;

	if (!f->qualname || !f->file)
		return -EINVAL;
	if (w->err)
		return w->err;
	/* a reader keeps PROFILE_STR_MAX bytes of each: longer ones would not be told apart */
	qlen = strnlen(f->qualname, PROFILE_STR_MAX);
	flen = strnlen(f->file, PROFILE_STR_MAX);
	klen = 8 + qlen + 1 + flen;
	/* called for every frame of every sample: the common key is built on the stack */
	if (klen > sizeof(small) && !(key = malloc(klen)))
		return -ENOMEM;
	put_le32(key, f->flags);
	put_le32(key + 4, f->line);
	memcpy(key + 8, f->qualname, qlen);
	key[8 + qlen] = '\0';
	memcpy(key + 9 + qlen, f->file, flen);
	err = 0;
	if (!hmap__find(w->py_frames, key, klen, &v)) {
		*id = (uint32_t)*v;
		goto out;
	}
	/*
	 * Frames a process makes up (a hostile one names code anything) are
	 * bounded as stacks are: past the bound the index starts again and a
	 * frame seen before is written again under a new id.
	 */
	if (w->stack_bound && hmap__memory(w->py_frames) > w->stack_bound) {
		struct hmap *fresh = hmap__new(HMAP_BYTES);

		if (!fresh) {
			err = -ENOMEM;
			goto out;
		}
		hmap__free(w->py_frames);
		w->py_frames = fresh;
	}
	if (w->py_count == UINT32_MAX) {
		err = -E2BIG;
		goto out;
	}
	if ((err = hmap__entry(w->py_frames, key, klen, &v, NULL)))
		goto out;
	*v = *id = ++w->py_count;
	if ((err = begin(w, 32 + qlen + flen)))
		goto out;
	put_varint(&w->scratch, *id);
	put_varint(&w->scratch, f->line);
	put_varint(&w->scratch, f->flags);
	put_bytes(&w->scratch, f->qualname, qlen);
	put_bytes(&w->scratch, f->file, flen);
	err = append(w, PROFILE_REC_PY_FRAME);
out:
	if (key != small)
		free(key);
	return err;
}

/* A stack of a sample: its bytes, else an id interned before in that space. */
static int sample_stack(struct profile_writer *w, uint8_t space, const uint8_t *cbf, size_t len,
			uint32_t given, uint32_t *id)
{
	if (len || !given)
		return stack_id(w, space, cbf, len, id);
	if (given > w->stack_count || w->stack_space[given - 1] != space)
		return -EINVAL;
	*id = given;
	return 0;
}

int profile_writer__sample(struct profile_writer *w, const struct profile_sample *s)
{
	uint32_t uid, kid, flags = s->flags;
	int err;

	if (bad_time(s->time_ns) || s->py_depth > PROFILE_PY_MAX_DEPTH ||
	    (s->py_depth && !s->py_frames))
		return -EINVAL;
	for (size_t i = 0; i < s->py_depth; i++)
		if (!s->py_frames[i] || s->py_frames[i] > w->py_count)
			return -EINVAL;
	if (s->py_depth && s->py_truncated)
		flags |= PROFILE_SAMPLE_F_PY_TRUNCATED;
	else
		flags &= ~PROFILE_SAMPLE_F_PY_TRUNCATED;
	/* after a write error nothing more reaches the file: counted, for the summary */
	if (w->err) {
		w->refused++;
		return w->err;
	}
	if ((err = sample_stack(w, PROFILE_USER, s->ustack, s->ustack_len, s->ustack_id, &uid)) ||
	    (err = sample_stack(w, PROFILE_KERNEL, s->kstack, s->kstack_len, s->kstack_id, &kid)))
		return err;
	if (begin(w, 64 + 5 * s->py_depth))
		return w->err;
	put_time(w, s->time_ns);
	put_varint(&w->scratch, s->pid);
	put_varint(&w->scratch, s->tid);
	put_varint(&w->scratch, s->cpu);
	put_varint(&w->scratch, s->weight);
	put_varint(&w->scratch, uid);
	put_varint(&w->scratch, kid);
	/* fields added at the end: files of the default event alone are as before */
	if (s->event || flags || s->py_depth)
		put_varint(&w->scratch, s->event);
	if (flags || s->py_depth)
		put_varint(&w->scratch, flags);
	if (s->py_depth) {
		put_varint(&w->scratch, s->py_depth);
		for (size_t i = 0; i < s->py_depth; i++)
			put_varint(&w->scratch, s->py_frames[i]);
	}
	err = append(w, PROFILE_REC_SAMPLE);
	if (err)
		return err;
	w->block_samples++;
	if (!w->samples++ || s->time_ns < w->first_time)
		w->first_time = s->time_ns;
	if (s->time_ns > w->last_time)
		w->last_time = s->time_ns;
	return 0;
}

int profile_writer__tick(struct profile_writer *w)
{
	if (w->block_records && clock_ns(CLOCK_MONOTONIC_COARSE) - w->block_started >= BLOCK_NS)
		return profile_writer__flush(w);
	return w->err;
}

size_t profile_writer__stack_memory(const struct profile_writer *w)
{
	return hmap__memory(w->stacks);
}

void profile_writer__set_stack_bound(struct profile_writer *w, size_t bytes)
{
	w->stack_bound = bytes;
}

uint64_t profile_writer__stack_resets(const struct profile_writer *w)
{
	return w->stack_resets;
}

uint64_t profile_writer__bytes(const struct profile_writer *w)
{
	return w->committed;
}

uint64_t profile_writer__samples(const struct profile_writer *w)
{
	return w->samples;
}

void profile_writer__written(const struct profile_writer *w, uint64_t *samples, uint64_t *lost,
			     uint64_t *unwritten)
{
	*samples = w->samples_written;
	*lost = w->lost_written;
	*unwritten = w->samples - w->samples_written + w->refused;
}

/* Flush, write the trailer and close; on an error keep the blocks written, or with !@keep nothing. */
static int finish(struct profile_writer *w, bool failed, bool keep, struct profile_diag *diag)
{
	uint8_t t[PROFILE_TRAILER_SIZE];
	int err;

	err = profile_writer__flush(w);
	if (!err) {
		memcpy(t, PROFILE_TRAILER_MAGIC, 4);
		put_le32(t + 4, PROFILE_TRAILER_SIZE);
		put_le64(t + 8, w->samples);
		put_le64(t + 16, w->lost);
		put_le64(t + 24, w->blocks);
		put_le64(t + 32, w->first_time);
		put_le64(t + 40, w->last_time);
		put_le32(t + 48, w->processes);
		put_le32(t + 52, w->stack_count);
		put_le32(t + 56, failed ? PROFILE_TRAILER_F_FAILED : 0);
		put_le32(t + 60, profile_crc32(0, t, 60));
		err = commit(w, t, sizeof(t));
	}
	if (close(w->fd) < 0 && !err)
		err = -errno;
	w->fd = -1;
	if (err && !keep) {
		set_reason(diag, "%s: %s; nothing written%s", w->path, strerror(-err),
			   w->old_path ? ", the file there before is back" : "");
		profile_writer__discard(w);
		return err;
	}
	if (err)
		set_reason(diag, "%s: %s; the blocks written before the error are kept", w->path,
			   strerror(-err));
	writer_free(w);
	return err;
}

int profile_writer__close(struct profile_writer *w, bool failed, struct profile_diag *diag)
{
	return finish(w, failed, true, diag);
}

int profile_writer__close_whole(struct profile_writer *w, bool failed, struct profile_diag *diag)
{
	return finish(w, failed, false, diag);
}

void profile_writer__discard(struct profile_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (!w->not_owned)
		unlink(w->path);
	if (w->old_path)
		rename(w->old_path, w->path);
	writer_free(w);
}
