/* SPDX-License-Identifier: BSD-2-Clause */
/* Profile reader: every whole block of a cut or damaged file, with a report of what was lost. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "util/hmap.h"
#include "profile.h"
#include "profile_internal.h"
#include "util/vec.h"

#define HEADER_MAX	65536
#define RESYNC_CHUNK	65536

/* A stack record kept for the samples that name it. */
struct stack_ent {
	uint8_t space;
	uint32_t len;
	uint8_t cbf[];
};

struct profile_reader {
	int fd;
	char *path;
	struct profile_meta meta;
	char *strings[5];	/* header fields by tag */
	struct profile_status st;
	uint64_t pos;		/* file offset of the next block */
	ZSTD_DCtx *zd;
	uint8_t *cbuf, *data;	/* compressed and decompressed block */
	size_t cbuf_cap, data_cap;
	struct cursor rec;	/* records left in the current block */
	uint64_t prev_time;
	uint64_t block_no;
	char str[2][4096];	/* string fields of the last record */
	struct hmap *stacks;	/* id -> struct stack_ent *, the first record of each id */
	bool done;
};

static void note(struct profile_reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Remember the first damage met, for the caller's notice. */
static void note(struct profile_reader *r, const char *fmt, ...)
{
	va_list ap;

	if (r->st.first_error[0])
		return;
	va_start(ap, fmt);
	vsnprintf(r->st.first_error, sizeof(r->st.first_error), fmt, ap);
	va_end(ap);
}

static int read_at(struct profile_reader *r, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = pread(r->fd, p, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ENODATA;
		p += n;
		len -= n;
		off += n;
	}
	return 0;
}

static int parse_header(struct profile_reader *r, struct profile_diag *diag)
{
	uint8_t fixed[PROFILE_HDR_FIXED], *hdr = NULL;
	uint16_t version, size;
	struct cursor c;
	int err;

	if (r->st.file_size < PROFILE_HDR_FIXED ||
	    read_at(r, fixed, sizeof(fixed), 0) || memcmp(fixed, PROFILE_MAGIC, 8)) {
		snprintf(diag->reason, sizeof(diag->reason), "%s: not an sfprof profile%s", r->path,
			 r->st.file_size < PROFILE_HDR_FIXED ? " (too short)" : " (bad magic)");
		return -EBADMSG;
	}
	version = get_le16(fixed + 8);
	if (version != PROFILE_VERSION) {
		snprintf(diag->reason, sizeof(diag->reason),
			 "%s: profile format version %u; this sfprof reads version %u", r->path,
			 version, PROFILE_VERSION);
		return -ENOTSUP;
	}
	size = get_le16(fixed + 10);
	if (size < PROFILE_HDR_FIXED + 3 + 4 || size > r->st.file_size) {
		snprintf(diag->reason, sizeof(diag->reason), "%s: damaged header (size %u)", r->path,
			 size);
		return -EBADMSG;
	}
	hdr = malloc(size);
	if (!hdr)
		return -ENOMEM;
	err = read_at(r, hdr, size, 0);
	if (err || profile_crc32(0, hdr, size - 4) != get_le32(hdr + size - 4)) {
		snprintf(diag->reason, sizeof(diag->reason), "%s: damaged header (%s)", r->path,
			 err ? strerror(-err) : "checksum mismatch");
		free(hdr);
		return -EBADMSG;
	}
	r->meta.flags = get_le32(hdr + 12);
	r->meta.created_ns = get_le64(hdr + 16);
	r->meta.freq_hz = get_le32(hdr + 24);
	r->meta.stack_size = get_le32(hdr + 28);
	r->meta.clock_offset_ns = get_le64(hdr + 32);
	c = (struct cursor){ hdr + PROFILE_HDR_FIXED, hdr + size - 4, false };
	while (c.end - c.p >= 3) {
		uint8_t tag = c.p[0];
		uint16_t len = get_le16(c.p + 1);

		c.p += 3;
		if (tag == HDR_END || len > c.end - c.p)
			break;
		if (tag < sizeof(r->strings) / sizeof(r->strings[0]) && !r->strings[tag]) {
			r->strings[tag] = strndup((const char *)c.p, len);
			if (!r->strings[tag]) {
				free(hdr);
				return -ENOMEM;
			}
		}
		c.p += len;
	}
	r->meta.host = r->strings[HDR_HOST];
	r->meta.release = r->strings[HDR_RELEASE];
	r->meta.machine = r->strings[HDR_MACHINE];
	r->meta.cmdline = r->strings[HDR_CMDLINE];
	r->pos = size;
	r->st.bytes_recovered = size;
	free(hdr);
	return 0;
}

struct profile_reader *profile_reader__open(const char *path, struct profile_diag *diag)
{
	struct profile_reader *r = calloc(1, sizeof(*r));
	struct profile_diag local;
	struct stat st;
	int err = -ENOMEM;

	if (!diag)
		diag = &local;
	diag->reason[0] = '\0';
	if (!r)
		goto fail;
	r->fd = -1;
	if (!(r->path = strdup(path)) || !(r->zd = ZSTD_createDCtx()) ||
	    !(r->stacks = hmap__new(HMAP_U64)))
		goto fail;
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0 || fstat(r->fd, &st) < 0) {
		err = -errno;
		snprintf(diag->reason, sizeof(diag->reason), "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
		snprintf(diag->reason, sizeof(diag->reason), "%s: not a regular file", path);
		goto fail;
	}
	r->st.file_size = st.st_size;
	err = parse_header(r, diag);
	if (err)
		goto fail;
	return r;
fail:
	if (!diag->reason[0])
		snprintf(diag->reason, sizeof(diag->reason), "%s: %s", path, strerror(-err));
	profile_reader__free(r);
	errno = -err;
	return NULL;
}

const struct profile_meta *profile_reader__meta(const struct profile_reader *r)
{
	return &r->meta;
}

const struct profile_status *profile_reader__status(const struct profile_reader *r)
{
	return &r->st;
}

void profile_reader__free(struct profile_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	hmap__free_values(r->stacks, free);
	for (size_t i = 0; i < sizeof(r->strings) / sizeof(r->strings[0]); i++)
		free(r->strings[i]);
	ZSTD_freeDCtx(r->zd);
	free(r->cbuf);
	free(r->data);
	free(r->path);
	free(r);
}

/* Whether a valid block header or trailer starts at @p (@avail bytes readable). */
static bool valid_block_header(const uint8_t *p, size_t avail)
{
	return avail >= PROFILE_BLOCK_HDR && !memcmp(p, PROFILE_BLOCK_MAGIC, 4) &&
	       profile_crc32(0, p, 16) == get_le32(p + 16);
}

static bool valid_trailer(const uint8_t *p, size_t avail)
{
	return avail >= PROFILE_TRAILER_SIZE && !memcmp(p, PROFILE_TRAILER_MAGIC, 4) &&
	       get_le32(p + 4) == PROFILE_TRAILER_SIZE &&
	       profile_crc32(0, p, 60) == get_le32(p + 60);
}

/*
 * After damage at r->pos: find the next valid block header or trailer.
 * Returns 0 with r->pos there, or 1 when none is left in the file.
 */
static int resync(struct profile_reader *r)
{
	uint8_t buf[RESYNC_CHUNK + PROFILE_TRAILER_SIZE];
	uint64_t off = r->pos + 1;
	int err;

	while (off < r->st.file_size) {
		size_t n = r->st.file_size - off < sizeof(buf) ? r->st.file_size - off : sizeof(buf);

		err = read_at(r, buf, n, off);
		if (err)
			return err;
		for (size_t i = 0; i + 4 <= n; i++) {
			if (valid_block_header(buf + i, n - i) || valid_trailer(buf + i, n - i)) {
				r->pos = off + i;
				return 0;
			}
		}
		if (n < sizeof(buf))
			break;
		off += RESYNC_CHUNK;
	}
	r->pos = r->st.file_size;
	return 1;
}

static void read_trailer(struct profile_reader *r, const uint8_t *t)
{
	r->st.has_trailer = true;
	r->st.truncated = false;
	r->st.trailer_samples = get_le64(t + 8);
	r->st.trailer_lost = get_le64(t + 16);
	r->st.trailer_failed = get_le32(t + 56) & PROFILE_TRAILER_F_FAILED;
	r->st.bytes_recovered += PROFILE_TRAILER_SIZE;
	r->pos += PROFILE_TRAILER_SIZE;
	if (r->pos != r->st.file_size)
		note(r, "%llu bytes after the trailer",
		     (unsigned long long)(r->st.file_size - r->pos));
}

/*
 * Load the next whole block into r->rec. Returns 1 when one is loaded, 0 at
 * the end of the file, or a negative errno for I/O errors.
 */
static int next_block(struct profile_reader *r)
{
	uint8_t hdr[PROFILE_TRAILER_SIZE];
	uint32_t csize, usize;
	size_t got;
	int err;

	for (;;) {
		uint64_t left = r->st.file_size - r->pos;

		if (r->pos >= r->st.file_size) {
			if (!r->st.has_trailer)
				r->st.truncated = true;
			return 0;
		}
		got = left < sizeof(hdr) ? left : sizeof(hdr);
		err = read_at(r, hdr, got, r->pos);
		if (err)
			return err;
		if (valid_trailer(hdr, got)) {
			read_trailer(r, hdr);
			return 0;
		}
		/* a block or trailer cut short: the recording ended mid-write */
		if (got < PROFILE_BLOCK_HDR ||
		    (!memcmp(hdr, PROFILE_TRAILER_MAGIC, 4) && got < PROFILE_TRAILER_SIZE) ||
		    (valid_block_header(hdr, got) &&
		     PROFILE_BLOCK_HDR + (uint64_t)get_le32(hdr + 4) > left)) {
			r->st.truncated = true;
			return 0;
		}
		if (!valid_block_header(hdr, got)) {
			r->st.bad_blocks++;
			note(r, "damaged block header at offset %llu", (unsigned long long)r->pos);
			err = resync(r);
			if (err < 0)
				return err;
			continue;
		}
		csize = get_le32(hdr + 4);
		usize = get_le32(hdr + 8);
		r->block_no++;
		if (csize > PROFILE_BLOCK_MAX || usize > PROFILE_BLOCK_MAX) {
			r->st.bad_blocks++;
			note(r, "block at offset %llu claims %u bytes", (unsigned long long)r->pos,
			     csize > usize ? csize : usize);
			err = resync(r);
			if (err < 0)
				return err;
			continue;
		}
		if (VEC_RESERVE(r->cbuf, r->cbuf_cap, csize ? csize : 1, 65536) ||
		    VEC_RESERVE(r->data, r->data_cap, usize ? usize : 1, 65536))
			return -ENOMEM;
		err = read_at(r, r->cbuf, csize, r->pos + PROFILE_BLOCK_HDR);
		if (err)
			return err;
		got = ZSTD_decompressDCtx(r->zd, r->data, usize, r->cbuf, csize);
		if (ZSTD_isError(got) || got != usize) {
			r->st.bad_blocks++;
			note(r, "block at offset %llu is damaged (%s)", (unsigned long long)r->pos,
			     ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size mismatch");
			r->pos += PROFILE_BLOCK_HDR + csize;
			continue;
		}
		r->pos += PROFILE_BLOCK_HDR + csize;
		r->st.blocks++;
		r->st.bytes_recovered += PROFILE_BLOCK_HDR + csize;
		r->rec = (struct cursor){ r->data, r->data + usize, false };
		r->prev_time = 0;
		return 1;
	}
}

static int add_stack(struct profile_reader *r, const struct profile_stack *s)
{
	struct stack_ent *e;
	uint64_t *v;

	if (hmap__entry_u64(r->stacks, s->id, &v))
		return -ENOMEM;
	if (*v)
		return 0;	/* a second definition of an id keeps the first */
	e = malloc(sizeof(*e) + s->len);
	if (!e) {
		hmap__delete_u64(r->stacks, s->id, NULL);
		return -ENOMEM;
	}
	e->space = s->space;
	e->len = s->len;
	memcpy(e->cbf, s->cbf, s->len);
	*v = (uintptr_t)e;
	return 0;
}

static void resolve(struct profile_reader *r, uint32_t id, uint8_t space, const uint8_t **cbf,
		    size_t *len)
{
	const struct stack_ent *e;
	uint64_t *v;

	*cbf = NULL;
	*len = 0;
	if (!id)
		return;
	e = hmap__find_u64(r->stacks, id, &v) ? NULL : (const struct stack_ent *)(uintptr_t)*v;
	if (!e || e->space != space) {
		r->st.unknown_stacks++;
		return;
	}
	*cbf = e->cbf;
	*len = e->len;
}

static uint64_t cur_time(struct profile_reader *r, struct cursor *c)
{
	r->prev_time += (uint64_t)unzigzag(cur_varint(c));
	return r->prev_time;
}

/* A string field: NUL-terminated in place is impossible, so copy into the record buffer. */
static const char *cur_str(struct cursor *c, char *out, size_t cap)
{
	size_t len;
	const uint8_t *p = cur_bytes(c, &len);

	if (!p)
		return "";
	if (len >= cap)
		len = cap - 1;
	memcpy(out, p, len);
	out[len] = '\0';
	return out;
}

/* Decode one record's payload. Returns 1 when @rec is filled, 0 when it is skipped. */
static int decode(struct profile_reader *r, uint8_t type, struct cursor *c,
		  struct profile_record *rec)
{
	char *s1 = r->str[0], *s2 = r->str[1];
	size_t len;

	memset(rec, 0, sizeof(*rec));
	rec->type = type;
	switch (type) {
	case PROFILE_REC_PROCESS:
		rec->process.pid = cur_u32(c);
		rec->process.ppid = cur_u32(c);
		rec->process.comm = cur_str(c, s1, sizeof(r->str[0]));
		rec->process.exe = cur_str(c, s2, sizeof(r->str[1]));
		rec->process.pid_ns = cur_varint(c);
		rec->process.mnt_ns = cur_varint(c);
		rec->process.ns_pid = cur_u32(c);
		break;
	case PROFILE_REC_THREAD:
		rec->thread.pid = cur_u32(c);
		rec->thread.tid = cur_u32(c);
		rec->thread.comm = cur_str(c, s1, sizeof(r->str[0]));
		break;
	case PROFILE_REC_MODULE:
		rec->module.id = cur_u32(c);
		rec->module.file_size = cur_varint(c);
		rec->module.build_id = cur_bytes(c, &rec->module.build_id_len);
		rec->module.path = cur_str(c, s1, sizeof(r->str[0]));
		break;
	case PROFILE_REC_MAPPING:
		rec->mapping.pid = cur_u32(c);
		rec->mapping.start = cur_varint(c);
		rec->mapping.end = rec->mapping.start + cur_varint(c);
		rec->mapping.file_offset = cur_varint(c);
		rec->mapping.prot = cur_u8(c);
		rec->mapping.module_id = cur_u32(c);
		break;
	case PROFILE_REC_STACK:
		rec->stack.id = cur_u32(c);
		rec->stack.space = cur_u8(c);
		rec->stack.cbf = cur_bytes(c, &len);
		rec->stack.len = len;
		if (!c->bad && rec->stack.id && add_stack(r, &rec->stack))
			return -ENOMEM;
		break;
	case PROFILE_REC_SAMPLE:
		rec->sample.time_ns = cur_time(r, c);
		rec->sample.pid = cur_u32(c);
		rec->sample.tid = cur_u32(c);
		rec->sample.cpu = cur_u32(c);
		rec->sample.weight = cur_u32(c);
		rec->sample.ustack_id = cur_u32(c);
		rec->sample.kstack_id = cur_u32(c);
		if (!c->bad) {
			resolve(r, rec->sample.ustack_id, PROFILE_USER, &rec->sample.ustack,
				&rec->sample.ustack_len);
			resolve(r, rec->sample.kstack_id, PROFILE_KERNEL, &rec->sample.kstack,
				&rec->sample.kstack_len);
		}
		break;
	case PROFILE_REC_LOST:
		rec->lost.time_ns = cur_time(r, c);
		rec->lost.cpu = cur_u32(c);
		rec->lost.count = cur_varint(c);
		break;
	case PROFILE_REC_EXIT:
		rec->exit.time_ns = cur_time(r, c);
		rec->exit.pid = cur_u32(c);
		break;
	case PROFILE_REC_COMM:
		rec->comm.time_ns = cur_time(r, c);
		rec->comm.pid = cur_u32(c);
		rec->comm.tid = cur_u32(c);
		rec->comm.comm = cur_str(c, s1, sizeof(r->str[0]));
		break;
	default:
		return 0;	/* a newer record type: skipped */
	}
	if (c->bad) {
		note(r, "malformed record of type %u in block %llu", type,
		     (unsigned long long)r->block_no);
		return 0;
	}
	return 1;
}

int profile_reader__next(struct profile_reader *r, struct profile_record *rec)
{
	for (;;) {
		struct cursor payload;
		uint64_t len;
		uint8_t type;
		int ret;

		if (r->done)
			return 0;
		if (r->rec.p >= r->rec.end) {
			ret = next_block(r);
			if (ret <= 0) {
				r->done = ret == 0;
				return ret;
			}
			continue;
		}
		type = cur_u8(&r->rec);
		len = cur_varint(&r->rec);
		if (r->rec.bad || len > (uint64_t)(r->rec.end - r->rec.p)) {
			note(r, "malformed record framing in block %llu",
			     (unsigned long long)r->block_no);
			r->rec.p = r->rec.end;
			continue;
		}
		payload = (struct cursor){ r->rec.p, r->rec.p + len, false };
		r->rec.p += len;
		ret = decode(r, type, &payload, rec);
		if (ret)
			return ret;
	}
}
