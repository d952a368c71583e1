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

#include "common/hmap.h"
#include "profile.h"
#include "profile_internal.h"
#include "common/vec.h"

#define HEADER_MAX	65536
#define RESYNC_CHUNK	65536

/*
 * What a lost count is checked against: samples no recording could have
 * taken. Linux runs on at most 8192 CPUs (NR_CPUS), no kernel delivers a
 * CPU's samples faster than a MHz, and the recording lasted at most the
 * file's time span (from the header's creation to its last timed record)
 * and the two seconds a lost record may lag behind what it counts.
 */
#define LOST_MAX_CPUS	8192u
#define LOST_MAX_HZ	1000000u
#define LOST_SLACK_NS	2000000000u

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
	/* string fields of the last record: up to PROFILE_STR_MAX bytes each, the rest cut */
	char str[4][PROFILE_STR_MAX + 1];
	struct hmap *stacks;	/* id -> struct stack_ent *, the first record of each id */
	struct hmap *py_ids;	/* the Python frame ids defined so far (value 1) */
	uint32_t py_buf[PROFILE_PY_MAX_DEPTH];	/* the last sample's Python frame ids */
	bool done;
	/* what the records held, for the checks of lost counts and of the trailer */
	uint64_t start_time;	/* the header's creation on the sample clock, or UINT64_MAX */
	uint64_t min_time, max_time;	/* of the timed records */
	uint64_t lost;		/* the lost records' counts, summed */
	uint64_t samples, processes, stack_records;
	uint64_t first_sample, last_sample;
	uint64_t trailer_blocks, trailer_first, trailer_last;
	uint32_t trailer_processes, trailer_stacks;
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
	/* recording began when the file was made: lost samples may predate every record */
	r->start_time = r->meta.created_ns >= r->meta.clock_offset_ns ?
			r->meta.created_ns - r->meta.clock_offset_ns : UINT64_MAX;
	r->min_time = UINT64_MAX;
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
	    !(r->stacks = hmap__new(HMAP_U64)) || !(r->py_ids = hmap__new(HMAP_U64)))
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
	hmap__free(r->py_ids);
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
	r->trailer_blocks = get_le64(t + 24);
	r->trailer_first = get_le64(t + 32);
	r->trailer_last = get_le64(t + 40);
	r->trailer_processes = get_le32(t + 48);
	r->trailer_stacks = get_le32(t + 52);
	r->st.trailer_failed = get_le32(t + 56) & PROFILE_TRAILER_F_FAILED;
	r->st.bytes_recovered += PROFILE_TRAILER_SIZE;
	r->pos += PROFILE_TRAILER_SIZE;
	if (r->pos != r->st.file_size)
		note(r, "%llu bytes after the trailer",
		     (unsigned long long)(r->st.file_size - r->pos));
}

/*
 * The records framed in @len bytes of a block, up to the first whose framing
 * is malformed (then *@whole is false; next() reports it there).
 */
static uint64_t count_records(const uint8_t *data, size_t len, bool *whole)
{
	struct cursor c = { data, data + len, false };
	uint64_t n = 0;

	while (c.p < c.end) {
		uint64_t rlen;

		cur_u8(&c);
		rlen = cur_varint(&c);
		if (c.bad || rlen > (uint64_t)(c.end - c.p)) {
			*whole = false;
			return n;
		}
		c.p += rlen;
		n++;
	}
	*whole = true;
	return n;
}

/*
 * Load the next whole block into r->rec. Returns 1 when one is loaded, 0 at
 * the end of the file, or a negative errno for I/O errors.
 */
static int next_block(struct profile_reader *r)
{
	uint8_t hdr[PROFILE_TRAILER_SIZE];
	uint32_t csize, usize, nrec;
	uint64_t framed;
	bool whole;
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
		nrec = get_le32(hdr + 12);
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
		/* a count the records do not bear out: the header or the frame lies */
		framed = count_records(r->data, usize, &whole);
		if (whole && framed != nrec) {
			r->st.bad_blocks++;
			note(r, "block at offset %llu claims %u records but holds %llu",
			     (unsigned long long)r->pos, nrec, (unsigned long long)framed);
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

/*
 * A sample's Python frame ids (its last field): at most PROFILE_PY_MAX_DEPTH,
 * each defined by an earlier record. A chain is cut at the first id never
 * defined (its record was in a damaged block), keeping its inner frames.
 */
static void cur_py_frames(struct profile_reader *r, struct cursor *c, struct profile_sample *s)
{
	uint64_t depth = cur_varint(c), *v;
	size_t n = 0;

	/* each id takes a byte at least: a count past the record's end is a lie */
	if (c->bad || depth > PROFILE_PY_MAX_DEPTH || depth > (uint64_t)(c->end - c->p)) {
		c->bad = true;
		return;
	}
	for (uint64_t i = 0; i < depth; i++) {
		uint32_t id = cur_u32(c);

		if (c->bad)
			return;
		if (n < i)
			continue;	/* cut already */
		if (!id || hmap__find_u64(r->py_ids, id, &v)) {
			r->st.unknown_py_frames++;
			continue;
		}
		r->py_buf[n++] = id;
	}
	s->py_frames = n ? r->py_buf : NULL;
	s->py_depth = n;
	s->py_truncated = n && (n < depth || (s->flags & PROFILE_SAMPLE_F_PY_TRUNCATED));
}

static uint64_t cur_time(struct profile_reader *r, struct cursor *c)
{
	uint64_t t = r->prev_time + (uint64_t)unzigzag(cur_varint(c));

	/*
	 * The kernel's clocks are signed 64-bit nanoseconds: a delta that takes
	 * the time below 0 or past INT64_MAX gives no time at all.
	 */
	if ((int64_t)t < 0) {
		c->bad = true;
		return 0;
	}
	r->prev_time = t;
	return t;
}

/*
 * The most samples a recording could have lost over @span_ns: LOST_MAX_CPUS
 * CPUs at the header's frequency (LOST_MAX_HZ when it gives none, or more).
 */
static uint64_t lost_bound(const struct profile_reader *r, uint64_t span_ns)
{
	uint32_t hz = r->meta.freq_hz && r->meta.freq_hz < LOST_MAX_HZ ? r->meta.freq_hz
								       : LOST_MAX_HZ;
	unsigned __int128 b = ((unsigned __int128)span_ns + LOST_SLACK_NS) * LOST_MAX_CPUS * hz /
			      1000000000u;

	return b > UINT64_MAX ? UINT64_MAX : (uint64_t)b;
}

/* The span of the recording, from its start to the last timed record, @t included. */
static uint64_t time_span(const struct profile_reader *r, uint64_t t)
{
	uint64_t first = r->start_time < r->min_time ? r->start_time : r->min_time;
	uint64_t last = r->max_time > t ? r->max_time : t;

	if (first > t)
		first = t;
	return last - first;
}

/* Whether @count more lost samples, counted at @t, are more than the recording could have lost. */
static bool lost_plausible(struct profile_reader *r, uint64_t t, uint64_t count)
{
	uint64_t sum = r->lost + count;

	return sum >= r->lost && sum <= lost_bound(r, time_span(r, t));
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

static void saw_time(struct profile_reader *r, uint64_t t)
{
	if (t < r->min_time)
		r->min_time = t;
	if (t > r->max_time)
		r->max_time = t;
}

/* A record read whole, in the counts the trailer is checked against. */
static void count_record(struct profile_reader *r, const struct profile_record *rec)
{
	switch (rec->type) {
	case PROFILE_REC_SAMPLE:
		if (!r->samples++ || rec->sample.time_ns < r->first_sample)
			r->first_sample = rec->sample.time_ns;
		if (rec->sample.time_ns > r->last_sample)
			r->last_sample = rec->sample.time_ns;
		saw_time(r, rec->sample.time_ns);
		break;
	case PROFILE_REC_LOST:
		saw_time(r, rec->lost.time_ns);
		break;
	case PROFILE_REC_EXIT:
		saw_time(r, rec->exit.time_ns);
		break;
	case PROFILE_REC_COMM:
		saw_time(r, rec->comm.time_ns);
		break;
	case PROFILE_REC_PROCESS:
		r->processes++;
		break;
	case PROFILE_REC_STACK:
		r->stack_records++;
		break;
	default:
		break;
	}
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
		/* added later: a record without it has no cgroup */
		rec->process.cgroup = c->p < c->end ? cur_str(c, r->str[2], sizeof(r->str[2])) : "";
		/* added after cgroup: a record without it runs no script known */
		rec->process.script = c->p < c->end ? cur_str(c, r->str[3], sizeof(r->str[3])) : "";
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
		/* mmap() makes no empty mapping, nor one past the top of the address space */
		if (rec->mapping.end <= rec->mapping.start)
			c->bad = true;
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
		if (c->p < c->end)
			rec->sample.event = cur_u32(c);
		if (c->p < c->end)
			rec->sample.flags = cur_u32(c);
		if (c->p < c->end)
			cur_py_frames(r, c, &rec->sample);
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
		if (c->bad)
			break;
		/* a count no recording could reach: skipped, and the total lost is unknown */
		if (!lost_plausible(r, rec->lost.time_ns, rec->lost.count)) {
			r->st.lost_implausible = true;
			note(r, "block %llu: a lost record counts %llu samples, more than %u CPUs "
			     "could have taken by its time", (unsigned long long)r->block_no,
			     (unsigned long long)rec->lost.count, LOST_MAX_CPUS);
			return 0;
		}
		r->lost += rec->lost.count;
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
	case PROFILE_REC_EVENT:
		rec->event.id = cur_u32(c);
		rec->event.type = cur_u32(c);
		rec->event.config = cur_varint(c);
		rec->event.period = cur_varint(c);
		rec->event.freq_hz = cur_u32(c);
		rec->event.flags = cur_u32(c);
		rec->event.name = cur_str(c, s1, sizeof(r->str[0]));
		if (!rec->event.id)
			c->bad = true;
		break;
	case PROFILE_REC_JIT:
		rec->jit.time_ns = cur_time(r, c);
		rec->jit.pid = cur_u32(c);
		rec->jit.start = cur_varint(c);
		rec->jit.end = rec->jit.start + cur_varint(c);
		/* code takes room, inside the address space */
		if (rec->jit.end <= rec->jit.start)
			c->bad = true;
		rec->jit.flags = cur_u32(c);
		rec->jit.name = cur_str(c, s1, sizeof(r->str[0]));
		rec->jit.source = cur_str(c, s2, sizeof(r->str[1]));
		if (c->p < c->end)
			rec->jit.lines = cur_bytes(c, &rec->jit.lines_len);
		break;
	case PROFILE_REC_PY_FRAME:
		rec->py_frame.id = cur_u32(c);
		rec->py_frame.line = cur_u32(c);
		rec->py_frame.flags = cur_u32(c);
		rec->py_frame.qualname = cur_str(c, s1, sizeof(r->str[0]));
		rec->py_frame.file = cur_str(c, s2, sizeof(r->str[1]));
		if (!rec->py_frame.id)
			c->bad = true;
		/* a second record of an id is taken as the first was: the samples' ids stay valid */
		if (!c->bad && hmap__set_u64(r->py_ids, rec->py_frame.id, 1))
			return -ENOMEM;
		break;
	default:
		return 0;	/* a newer record type: skipped */
	}
	if (c->bad) {
		note(r, "malformed record of type %u in block %llu", type,
		     (unsigned long long)r->block_no);
		return 0;
	}
	count_record(r, rec);
	return 1;
}

/* One count of the trailer against what the blocks held. */
static void check_count(struct profile_reader *r, const char *what, uint64_t trailer,
			uint64_t read)
{
	if (trailer != read)
		note(r, "the trailer counts %llu %s but the blocks hold %llu",
		     (unsigned long long)trailer, what, (unsigned long long)read);
}

/*
 * At the end of the file: the lost samples, and the trailer's counts
 * against the records when every block was read whole (a damaged block
 * takes its records with it).
 */
static void check_totals(struct profile_reader *r)
{
	bool whole = !r->st.bad_blocks && !r->st.first_error[0];
	uint64_t bound = lost_bound(r, r->max_time ? time_span(r, r->max_time) : 0);

	r->st.lost = r->lost;
	if (!r->st.has_trailer)
		return;
	if (r->st.trailer_lost > bound) {
		r->st.lost_implausible = true;
		note(r, "the trailer counts %llu lost samples, more than %u CPUs could have taken "
		     "in the recording's %.0f s", (unsigned long long)r->st.trailer_lost,
		     LOST_MAX_CPUS, r->max_time ? time_span(r, r->max_time) / 1e9 : 0.0);
		return;
	}
	/* lost records may have been in damaged blocks: the writer's count is the whole */
	if (r->st.trailer_lost > r->st.lost)
		r->st.lost = r->st.trailer_lost;
	if (!whole)
		return;
	check_count(r, "samples", r->st.trailer_samples, r->samples);
	check_count(r, "lost samples", r->st.trailer_lost, r->lost);
	check_count(r, "blocks", r->trailer_blocks, r->st.blocks);
	check_count(r, "processes", r->trailer_processes, r->processes);
	check_count(r, "stacks", r->trailer_stacks, r->stack_records);
	if (r->samples) {
		check_count(r, "ns for the first sample's time", r->trailer_first, r->first_sample);
		check_count(r, "ns for the last sample's time", r->trailer_last, r->last_sample);
	}
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
				if (r->done)
					check_totals(r);
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
