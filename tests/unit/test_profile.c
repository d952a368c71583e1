/* SPDX-License-Identifier: BSD-2-Clause */
/* Profile file: round trips of every record, cut and damaged files, bad headers, a full disk. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zstd.h>

#include "testutil.h"
#include "profile/profile.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Not a record type: an op that flushes the writer's block. */
#define OP_FLUSH ((enum profile_rec)0)

/* The layout from docs/FORMAT.md, spelled out here again so that the test does not trust the code. */
#define HDR_FIXED	40
#define BLOCK_HDR	20
#define TRAILER_SIZE	64
#define BLOCK_RECORD_BYTES (256 * 1024)

static const uint8_t file_magic[8] = { 0x89, 'S', 'F', 'P', 'R', 'O', 'F', '\n' };

static uint16_t le16(const uint8_t *p)
{
	return p[0] | p[1] << 8;
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static void set_le16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static void set_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (8 * i);
}

/* CRC-32 as zlib computes it, written again from the polynomial. */
static uint32_t crc32_ieee(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t c = 0xffffffffu;

	while (len--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & -(c & 1));
	}
	return ~c;
}

/* ---- the file's block layout, parsed independently of the reader ---- */

struct block_info {
	uint64_t off, end;	/* of the block header, and just past its frame */
	uint32_t csize, usize, records;
	size_t first_record;	/* index of its first record in the whole file */
};

struct layout {
	uint64_t header_size;
	struct block_info *blocks;
	size_t nblocks;
	bool has_trailer;
	uint64_t trailer_off;
	const uint8_t *trailer;
	size_t records;
};

/* Walk a well-formed file; fails the test where it is not. */
static void parse_layout(const uint8_t *data, size_t len, struct layout *l)
{
	uint64_t pos;

	memset(l, 0, sizeof(*l));
	assert_true(len >= HDR_FIXED);
	assert_memory_equal(data, file_magic, 8);
	assert_int_equal(le16(data + 8), 1);
	l->header_size = le16(data + 10);
	assert_true(l->header_size >= HDR_FIXED + 3 + 4 && l->header_size <= len);
	assert_int_equal(crc32_ieee(data, l->header_size - 4), le32(data + l->header_size - 4));
	pos = l->header_size;
	while (pos < len) {
		struct block_info *b;

		if (!memcmp(data + pos, "SFT1", 4)) {
			assert_true(len - pos == TRAILER_SIZE);
			assert_int_equal(le32(data + pos + 4), TRAILER_SIZE);
			assert_int_equal(crc32_ieee(data + pos, 60), le32(data + pos + 60));
			l->has_trailer = true;
			l->trailer_off = pos;
			l->trailer = data + pos;
			break;
		}
		assert_true(len - pos >= BLOCK_HDR);
		assert_memory_equal(data + pos, "SFB1", 4);
		assert_int_equal(crc32_ieee(data + pos, 16), le32(data + pos + 16));
		l->blocks = realloc(l->blocks, (l->nblocks + 1) * sizeof(*l->blocks));
		assert_non_null(l->blocks);
		b = &l->blocks[l->nblocks++];
		b->off = pos;
		b->csize = le32(data + pos + 4);
		b->usize = le32(data + pos + 8);
		b->records = le32(data + pos + 12);
		b->first_record = l->records;
		b->end = pos + BLOCK_HDR + b->csize;
		assert_true(b->end <= len);
		l->records += b->records;
		pos = b->end;
	}
}

/* The offset where whole blocks end at or before @cut, and how many blocks and records fit. */
static uint64_t whole_before(const struct layout *l, uint64_t cut, size_t *blocks, size_t *records)
{
	uint64_t end = l->header_size;

	*blocks = 0;
	*records = 0;
	for (size_t i = 0; i < l->nblocks && l->blocks[i].end <= cut; i++) {
		end = l->blocks[i].end;
		*blocks = i + 1;
		*records = l->blocks[i].first_record + l->blocks[i].records;
	}
	return end;
}

/* ---- records as text: what a test compares and prints ---- */

static void put_escaped(FILE *f, const char *s)
{
	if (!s) {
		fputs("(null)", f);
		return;
	}
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p >= 0x20 && *p < 0x7f && *p != '\\' && *p != '"')
			fputc(*p, f);
		else
			fprintf(f, "\\x%02x", *p);
	}
	fputc('"', f);
}

static void put_hex(FILE *f, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	char chunk[256];

	while (n) {
		size_t k = n < sizeof(chunk) / 2 ? n : sizeof(chunk) / 2;

		for (size_t i = 0; i < k; i++) {
			chunk[2 * i] = digits[p[i] >> 4];
			chunk[2 * i + 1] = digits[p[i] & 15];
		}
		fwrite(chunk, 1, 2 * k, f);
		p += k;
		n -= k;
	}
}

/* A stack reference: the id, and the bytes or "-" when the reader does not have them. */
static void put_stack_ref(FILE *f, uint32_t id, const uint8_t *p, size_t n)
{
	fprintf(f, "%u:", id);
	if (p)
		put_hex(f, p, n);
	else
		fputc('-', f);
}

static char *fmt_record(const struct profile_record *r)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	switch (r->type) {
	case PROFILE_REC_PROCESS:
		fprintf(f, "process pid=%u ppid=%u comm=", r->process.pid, r->process.ppid);
		put_escaped(f, r->process.comm);
		fputs(" exe=", f);
		put_escaped(f, r->process.exe);
		fprintf(f, " pid_ns=%llu mnt_ns=%llu ns_pid=%u",
			(unsigned long long)r->process.pid_ns, (unsigned long long)r->process.mnt_ns,
			r->process.ns_pid);
		break;
	case PROFILE_REC_THREAD:
		fprintf(f, "thread pid=%u tid=%u comm=", r->thread.pid, r->thread.tid);
		put_escaped(f, r->thread.comm);
		break;
	case PROFILE_REC_MODULE:
		fprintf(f, "module id=%u file_size=%llu build_id=", r->module.id,
			(unsigned long long)r->module.file_size);
		put_hex(f, r->module.build_id, r->module.build_id_len);
		fputs(" path=", f);
		put_escaped(f, r->module.path);
		break;
	case PROFILE_REC_MAPPING:
		fprintf(f, "mapping pid=%u %#llx-%#llx off=%#llx prot=%u module=%u", r->mapping.pid,
			(unsigned long long)r->mapping.start, (unsigned long long)r->mapping.end,
			(unsigned long long)r->mapping.file_offset, r->mapping.prot,
			r->mapping.module_id);
		break;
	case PROFILE_REC_STACK:
		fprintf(f, "stack id=%u space=%u cbf=", r->stack.id, r->stack.space);
		put_hex(f, r->stack.cbf, r->stack.len);
		break;
	case PROFILE_REC_SAMPLE:
		fprintf(f, "sample t=%llu pid=%u tid=%u cpu=%u weight=%u user=",
			(unsigned long long)r->sample.time_ns, r->sample.pid, r->sample.tid,
			r->sample.cpu, r->sample.weight);
		put_stack_ref(f, r->sample.ustack_id, r->sample.ustack, r->sample.ustack_len);
		fputs(" kernel=", f);
		put_stack_ref(f, r->sample.kstack_id, r->sample.kstack, r->sample.kstack_len);
		for (size_t i = 0; i < r->sample.py_depth; i++)
			fprintf(f, "%s%u", i ? "," : " python=", r->sample.py_frames[i]);
		if (r->sample.py_truncated)
			fputs(" py_truncated", f);
		break;
	case PROFILE_REC_PY_FRAME:
		fprintf(f, "py_frame id=%u line=%u flags=%u qualname=", r->py_frame.id,
			r->py_frame.line, r->py_frame.flags);
		put_escaped(f, r->py_frame.qualname);
		fputs(" file=", f);
		put_escaped(f, r->py_frame.file);
		break;
	case PROFILE_REC_LOST:
		fprintf(f, "lost t=%llu cpu=%u count=%llu", (unsigned long long)r->lost.time_ns,
			r->lost.cpu, (unsigned long long)r->lost.count);
		break;
	case PROFILE_REC_EXIT:
		fprintf(f, "exit t=%llu pid=%u", (unsigned long long)r->exit.time_ns, r->exit.pid);
		break;
	case PROFILE_REC_COMM:
		fprintf(f, "comm t=%llu pid=%u tid=%u comm=", (unsigned long long)r->comm.time_ns,
			r->comm.pid, r->comm.tid);
		put_escaped(f, r->comm.comm);
		break;
	default:
		fprintf(f, "type %u", r->type);
	}
	fclose(f);
	assert_non_null(out);
	return out;
}

struct lines {
	char **v;
	size_t n, cap;
};

static void lines_add(struct lines *l, char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		assert_non_null(l->v);
	}
	l->v[l->n++] = s;
}

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static void _assert_lines_equal(const struct lines *got, const struct lines *want, const char *what,
				const char *file, int line)
{
	size_t n = got->n < want->n ? got->n : want->n;

	for (size_t i = 0; i < n; i++) {
		if (!strcmp(got->v[i], want->v[i]))
			continue;
		print_error("%s: record %zu of %zu differs:\n  got  %.300s\n  want %.300s\n", what, i,
			    want->n, got->v[i], want->v[i]);
		_fail(file, line);
	}
	if (got->n != want->n) {
		print_error("%s: %zu records, want %zu; next %s: %.300s\n", what, got->n, want->n,
			    got->n > n ? "extra" : "missing",
			    got->n > n ? got->v[n] : want->v[n]);
		_fail(file, line);
	}
}
#define assert_lines_equal(g, w, what) _assert_lines_equal(g, w, what, __FILE__, __LINE__)

/* ---- the model: what each writer call must put in the file ---- */

struct model_stack {
	uint8_t space;
	uint8_t *cbf;
	size_t len;
};

struct model_module {
	uint8_t *build_id;
	size_t build_id_len;
	char *path;
};

struct model {
	struct profile_record *recs;	/* deep copies, in file order */
	size_t n, cap;
	struct model_stack *stacks;	/* id - 1 */
	size_t nstacks;
	struct model_module *modules;	/* id - 1 */
	size_t nmodules;
	uint64_t samples, lost, first_time, last_time;
	uint32_t processes;
};

static void *dup_bytes(const void *p, size_t n)
{
	void *c = malloc(n ? n : 1);

	assert_non_null(c);
	if (n)
		memcpy(c, p, n);
	return c;
}

static char *dup_str(const char *s)
{
	char *c = strdup(s ? s : "");

	assert_non_null(c);
	return c;
}

static void model_add(struct model *m, const struct profile_record *r)
{
	struct profile_record *c;

	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 256;
		m->recs = realloc(m->recs, m->cap * sizeof(*m->recs));
		assert_non_null(m->recs);
	}
	c = &m->recs[m->n++];
	*c = *r;
	switch (r->type) {
	case PROFILE_REC_PROCESS:
		c->process.comm = dup_str(r->process.comm);
		c->process.exe = dup_str(r->process.exe);
		break;
	case PROFILE_REC_THREAD:
		c->thread.comm = dup_str(r->thread.comm);
		break;
	case PROFILE_REC_MODULE:
		c->module.build_id = dup_bytes(r->module.build_id, r->module.build_id_len);
		c->module.path = dup_str(r->module.path);
		break;
	case PROFILE_REC_COMM:
		c->comm.comm = dup_str(r->comm.comm);
		break;
	default:	/* stack bytes belong to m->stacks */
		break;
	}
}

static void model_free(struct model *m)
{
	for (size_t i = 0; i < m->n; i++) {
		struct profile_record *r = &m->recs[i];

		switch (r->type) {
		case PROFILE_REC_PROCESS:
			free((char *)r->process.comm);
			free((char *)r->process.exe);
			break;
		case PROFILE_REC_THREAD:
			free((char *)r->thread.comm);
			break;
		case PROFILE_REC_MODULE:
			free((uint8_t *)r->module.build_id);
			free((char *)r->module.path);
			break;
		case PROFILE_REC_COMM:
			free((char *)r->comm.comm);
			break;
		default:
			break;
		}
	}
	for (size_t i = 0; i < m->nstacks; i++)
		free(m->stacks[i].cbf);
	for (size_t i = 0; i < m->nmodules; i++) {
		free(m->modules[i].build_id);
		free(m->modules[i].path);
	}
	free(m->recs);
	free(m->stacks);
	free(m->modules);
	memset(m, 0, sizeof(*m));
}

/* The id a stack gets: the next one when it is new, with its STACK record. */
static uint32_t model_stack(struct model *m, uint8_t space, const uint8_t *cbf, size_t len,
			    const uint8_t **stored)
{
	struct model_stack *s;
	struct profile_record r = { .type = PROFILE_REC_STACK };

	*stored = NULL;
	if (!len)
		return 0;
	for (size_t i = 0; i < m->nstacks; i++) {
		s = &m->stacks[i];
		if (s->space == space && s->len == len && !memcmp(s->cbf, cbf, len)) {
			*stored = s->cbf;
			return i + 1;
		}
	}
	m->stacks = realloc(m->stacks, (m->nstacks + 1) * sizeof(*m->stacks));
	assert_non_null(m->stacks);
	s = &m->stacks[m->nstacks++];
	s->space = space;
	s->cbf = dup_bytes(cbf, len);
	s->len = len;
	r.stack = (struct profile_stack){ .id = m->nstacks, .space = space, .cbf = s->cbf, .len = len };
	model_add(m, &r);
	*stored = s->cbf;
	return m->nstacks;
}

static uint32_t model_module(struct model *m, const struct profile_module *mod, bool *added)
{
	const char *path = mod->path ? mod->path : "";
	struct model_module *e;

	for (size_t i = 0; i < m->nmodules; i++) {
		e = &m->modules[i];
		if (e->build_id_len == mod->build_id_len && !strcmp(e->path, path) &&
		    !memcmp(e->build_id, mod->build_id, mod->build_id_len)) {
			*added = false;
			return i + 1;
		}
	}
	m->modules = realloc(m->modules, (m->nmodules + 1) * sizeof(*m->modules));
	assert_non_null(m->modules);
	e = &m->modules[m->nmodules++];
	e->build_id = dup_bytes(mod->build_id, mod->build_id_len);
	e->build_id_len = mod->build_id_len;
	e->path = dup_str(path);
	*added = true;
	return m->nmodules;
}

/*
 * Make the writer call @op stands for and add what it writes to @m.
 * @return the writer's return value; @m is unchanged when it failed.
 */
static int apply(struct profile_writer *w, struct model *m, const struct profile_record *op)
{
	struct profile_record r = *op;
	uint32_t id = 0;
	bool added;
	int err;

	switch ((int)op->type) {
	case OP_FLUSH:
		return profile_writer__flush(w);
	case PROFILE_REC_PROCESS:
		err = profile_writer__process(w, &op->process);
		if (!err)
			m->processes++;
		break;
	case PROFILE_REC_THREAD:
		err = profile_writer__thread(w, &op->thread);
		break;
	case PROFILE_REC_MODULE:
		err = profile_writer__module(w, &op->module, &id);
		if (err)
			return err;
		r.module.id = model_module(m, &op->module, &added);
		assert_int_equal(id, r.module.id);
		if (added)
			model_add(m, &r);
		return 0;
	case PROFILE_REC_MAPPING:
		err = profile_writer__mapping(w, &op->mapping);
		break;
	case PROFILE_REC_SAMPLE:
		err = profile_writer__sample(w, &op->sample);
		if (err)
			return err;
		r.sample.ustack_id = model_stack(m, PROFILE_USER, op->sample.ustack,
						 op->sample.ustack_len, &r.sample.ustack);
		r.sample.kstack_id = model_stack(m, PROFILE_KERNEL, op->sample.kstack,
						 op->sample.kstack_len, &r.sample.kstack);
		if (!m->samples || op->sample.time_ns < m->first_time)
			m->first_time = op->sample.time_ns;
		if (!m->samples || op->sample.time_ns > m->last_time)
			m->last_time = op->sample.time_ns;
		m->samples++;
		model_add(m, &r);
		return 0;
	case PROFILE_REC_LOST:
		err = profile_writer__lost(w, &op->lost);
		if (!err)
			m->lost += op->lost.count;
		break;
	case PROFILE_REC_EXIT:
		err = profile_writer__exit(w, &op->exit);
		break;
	case PROFILE_REC_COMM:
		err = profile_writer__comm(w, &op->comm);
		break;
	default:
		fail_msg("op type %u", op->type);
		return -EINVAL;
	}
	if (!err)
		model_add(m, &r);
	return err;
}

/*
 * The records a reader must return when it keeps records [0, n) of the model
 * except [skip_from, skip_to): samples then lose the stacks defined there.
 * @unknown: receives how many stack references lost their bytes.
 */
static void model_expect(const struct model *m, size_t n, size_t skip_from, size_t skip_to,
			 struct lines *out, uint64_t *unknown)
{
	bool *lost = calloc(m->nstacks + 1, sizeof(*lost));

	assert_non_null(lost);
	*unknown = 0;
	for (size_t i = skip_from; i < skip_to; i++)
		if (m->recs[i].type == PROFILE_REC_STACK)
			lost[m->recs[i].stack.id] = true;
	for (size_t i = 0; i < n; i++) {
		struct profile_record r = m->recs[i];

		if (i >= skip_from && i < skip_to)
			continue;
		if (r.type == PROFILE_REC_SAMPLE) {
			if (lost[r.sample.ustack_id] && r.sample.ustack_id) {
				r.sample.ustack = NULL;
				r.sample.ustack_len = 0;
				++*unknown;
			}
			if (lost[r.sample.kstack_id] && r.sample.kstack_id) {
				r.sample.kstack = NULL;
				r.sample.kstack_len = 0;
				++*unknown;
			}
		}
		lines_add(out, fmt_record(&r));
	}
	free(lost);
}

static void model_lines(const struct model *m, size_t n, struct lines *out)
{
	uint64_t unknown;

	model_expect(m, n, 0, 0, out, &unknown);
}

/* ---- reading a file back ---- */

struct readout {
	struct lines lines;
	struct profile_status st;
	int next_err;		/* what the last next() returned: 0 or a negative errno */
};

/* A sample's stack bytes, which must outlive the record they came with. */
struct kept_stack {
	const uint8_t *p;
	uint8_t *copy;
	size_t len;
};

/*
 * Read every record of @path. @return 0, or the negative errno of
 * profile_reader__open() with @diag filled.
 */
static int read_profile(const char *path, struct readout *out, struct profile_diag *diag,
			struct profile_meta *meta_copy)
{
	struct kept_stack *kept = NULL;
	size_t nkept = 0, kept_cap = 0;
	struct profile_record rec;
	struct profile_reader *r;
	int ret;

	memset(out, 0, sizeof(*out));
	errno = 0;
	r = profile_reader__open(path, diag);
	if (!r) {
		assert_int_not_equal(errno, 0);
		return -errno;
	}
	if (meta_copy)
		*meta_copy = *profile_reader__meta(r);
	while ((ret = profile_reader__next(r, &rec)) > 0) {
		const uint8_t *sp[2];
		size_t sl[2];

		lines_add(&out->lines, fmt_record(&rec));
		if (rec.type != PROFILE_REC_SAMPLE)
			continue;
		sp[0] = rec.sample.ustack;
		sp[1] = rec.sample.kstack;
		sl[0] = rec.sample.ustack_len;
		sl[1] = rec.sample.kstack_len;
		for (int i = 0; i < 2; i++) {
			if (!sp[i])
				continue;
			if (nkept == kept_cap) {
				kept_cap = kept_cap ? 2 * kept_cap : 256;
				kept = realloc(kept, kept_cap * sizeof(*kept));
				assert_non_null(kept);
			}
			kept[nkept++] = (struct kept_stack){ sp[i], dup_bytes(sp[i], sl[i]), sl[i] };
		}
	}
	out->next_err = ret;
	/* next() after the end keeps saying so */
	if (ret == 0)
		assert_int_equal(profile_reader__next(r, &rec), 0);
	out->st = *profile_reader__status(r);
	/* stack bytes of samples stay valid while the reader lives */
	for (size_t i = 0; i < nkept; i++) {
		assert_memory_equal(kept[i].p, kept[i].copy, kept[i].len);
		free(kept[i].copy);
	}
	free(kept);
	if (meta_copy) {
		/* strings are valid while the reader lives: copy them out */
		meta_copy->host = meta_copy->host ? dup_str(meta_copy->host) : NULL;
		meta_copy->release = meta_copy->release ? dup_str(meta_copy->release) : NULL;
		meta_copy->machine = meta_copy->machine ? dup_str(meta_copy->machine) : NULL;
		meta_copy->cmdline = meta_copy->cmdline ? dup_str(meta_copy->cmdline) : NULL;
	}
	profile_reader__free(r);
	return 0;
}

static void readout_free(struct readout *o)
{
	lines_free(&o->lines);
}

static void meta_free(struct profile_meta *m)
{
	free((char *)m->host);
	free((char *)m->release);
	free((char *)m->machine);
	free((char *)m->cmdline);
}

static const struct profile_meta plain_meta = {
	.flags = PROFILE_F_COMMAND,
	.created_ns = 1732230000123456789ull,
	.freq_hz = 999,
	.stack_size = 16384,
	.clock_offset_ns = 1732229000000000000ull,
	.host = "testhost",
	.release = "6.8.0-test",
	.machine = "x86_64",
	.cmdline = "sfprof record -g -- ./app",
};

/* Write @ops into @path; the model gets what the file must hold. */
static void write_ops(const char *path, const struct profile_meta *meta,
		      const struct profile_record *ops, size_t n, bool failed, struct model *m)
{
	struct profile_diag diag = { "" };
	struct profile_writer *w = profile_writer__create(path, meta, &diag);

	if (!w)
		fail_msg("%s: create: %s", path, diag.reason);
	for (size_t i = 0; i < n; i++) {
		int err = apply(w, m, &ops[i]);

		if (err)
			fail_msg("op %zu (type %u): %s", i, ops[i].type, strerror(-err));
	}
	assert_int_equal(profile_writer__samples(w), m->samples);
	if (profile_writer__close(w, failed, &diag))
		fail_msg("%s: close: %s", path, diag.reason);
}

/* ---- round trips: a table of scenarios ---- */

static const uint8_t build_id_20[20] = {
	0x8a, 0x1f, 0x00, 0xff, 0x7e, 0x42, 0x13, 0x37, 0xde, 0xad,
	0xbe, 0xef, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x80,
};
static uint8_t build_id_255[255];	/* filled in main() */
static const uint8_t cbf_user[] = { 0x03, 0x22, 0x55, 0x5d, 0x0c, 0x0d, 0xe1, 0x40, 0x91, 0x20, 0x00 };
static const uint8_t cbf_kernel[] = { 0x03, 0x28, 0xff, 0xff, 0xff, 0xff, 0x81, 0x00, 0x10, 0x00 };
static const uint8_t cbf_deep[] = {
	0x03, 0x2d, 0x00, 0x00, 0x7f, 0x12, 0x34, 0x56, 0x78, 0x9a, 0x41, 0x10, 0x41, 0x10,
	0xc3, 0x41, 0xf0, 0x41, 0x20, 0x00,
};
/* the same bytes as a user and as a kernel stack: two ids */
static const uint8_t cbf_both[] = { 0x03, 0x21, 0x42, 0x00 };
static const uint8_t cbf_one[] = { 0x00 };

#define REC(t, field, ...) { .type = PROFILE_REC_##t, .field = { __VA_ARGS__ } }
#define FLUSH { .type = OP_FLUSH }
#define USTACK(a) .ustack = (a), .ustack_len = sizeof(a)
#define KSTACK(a) .kstack = (a), .kstack_len = sizeof(a)

static const struct profile_record ops_every_type[] = {
	REC(PROCESS, process, .pid = 4242, .ppid = 1, .comm = "app", .exe = "/usr/bin/app",
	    .pid_ns = 4026531836ull, .mnt_ns = 4026531841ull, .ns_pid = 17),
	REC(THREAD, thread, .pid = 4242, .tid = 4243, .comm = "worker-1"),
	REC(MODULE, module, .file_size = 1234567, .build_id = build_id_20, .build_id_len = 20,
	    .path = "/usr/bin/app"),
	REC(MAPPING, mapping, .pid = 4242, .start = 0x55d0c0de0000ull, .end = 0x55d0c0e01000ull,
	    .file_offset = 0x1000, .prot = 5, .module_id = 1),
	REC(SAMPLE, sample, .time_ns = 123456789012ull, .pid = 4242, .tid = 4243, .cpu = 3,
	    .weight = 1, USTACK(cbf_user), KSTACK(cbf_kernel)),
	REC(LOST, lost, .time_ns = 123456789999ull, .cpu = 7, .count = 17),
	REC(COMM, comm, .time_ns = 123456790000ull, .pid = 4242, .tid = 4243, .comm = "renamed"),
	REC(EXIT, exit, .time_ns = 123456790001ull, .pid = 4242),
};

/* Strings with bytes a C string can hold but a careless reader mangles. */
static const struct profile_record ops_odd_strings[] = {
	REC(PROCESS, process, .pid = 1, .comm = "\x01\x02\x7f\x80\xfe\xff", .exe = "",
	    .ns_pid = 1),
	REC(PROCESS, process, .pid = 2, .ppid = 1, .comm = NULL, .exe = NULL),
	REC(PROCESS, process, .pid = 3, .comm = "tab\there\nnewline \"q\" \\", .exe =
	    "/tmp/\xc3\xa9t\xc3\xa9 dir/a b\xe2\x80\x8f"),
	REC(THREAD, thread, .pid = 3, .tid = 4, .comm = ""),
	REC(THREAD, thread, .pid = 3, .tid = 5, .comm = NULL),
	REC(MODULE, module, .file_size = 0, .build_id = build_id_20, .build_id_len = 0,
	    .path = ""),
	REC(MODULE, module, .file_size = 1, .build_id = build_id_20, .build_id_len = 0,
	    .path = "[vdso]"),
	REC(MODULE, module, .file_size = 2, .build_id = build_id_255, .build_id_len = 255,
	    .path = "/lib/\xff\x01odd"),
	REC(COMM, comm, .time_ns = 1, .pid = 3, .tid = 4, .comm = "\x1b[31mred"),
};

/*
 * Times are deltas within a block; they go backwards, jump across the whole
 * range of the kernel's signed clocks (0 to INT64_MAX ns), and restart in
 * each block.
 */
static const struct profile_record ops_times[] = {
	REC(SAMPLE, sample, .time_ns = 5000000000ull, .pid = 1, .tid = 1, .weight = 1),
	REC(SAMPLE, sample, .time_ns = 1000000000ull, .pid = 1, .tid = 1, .weight = 1),
	REC(LOST, lost, .time_ns = 0, .count = 1),
	REC(SAMPLE, sample, .time_ns = INT64_MAX, .pid = 1, .tid = 1, .weight = 1),
	REC(EXIT, exit, .time_ns = 1, .pid = 1),
	REC(COMM, comm, .time_ns = INT64_MAX - 1, .pid = 1, .tid = 1, .comm = "x"),
	REC(SAMPLE, sample, .time_ns = 5, .pid = 1, .tid = 1, .weight = 1),
	FLUSH,
	REC(SAMPLE, sample, .time_ns = 999, .pid = 1, .tid = 1, .weight = 1),
	REC(SAMPLE, sample, .time_ns = 998, .pid = 1, .tid = 1, .weight = 1),
	FLUSH,
	FLUSH,	/* an empty block is not written */
	REC(LOST, lost, .time_ns = 7, .count = 2),
	REC(SAMPLE, sample, .time_ns = 3, .pid = 1, .tid = 1, .weight = 1),
};

/* Interning: a stack seen again costs only its id; the space is part of the identity. */
static const struct profile_record ops_interning[] = {
	REC(SAMPLE, sample, .time_ns = 10, .pid = 1, .tid = 1, .weight = 1, USTACK(cbf_user)),
	REC(SAMPLE, sample, .time_ns = 20, .pid = 1, .tid = 2, .weight = 1, USTACK(cbf_user)),
	REC(SAMPLE, sample, .time_ns = 30, .pid = 1, .tid = 2, .weight = 1, USTACK(cbf_both),
	    KSTACK(cbf_both)),
	REC(SAMPLE, sample, .time_ns = 40, .pid = 1, .tid = 2, .weight = 1, KSTACK(cbf_kernel)),
	REC(SAMPLE, sample, .time_ns = 50, .pid = 1, .tid = 2, .weight = 1),
	FLUSH,
	/* defined in an earlier block: still only the id */
	REC(SAMPLE, sample, .time_ns = 60, .pid = 1, .tid = 1, .weight = 3, USTACK(cbf_user),
	    KSTACK(cbf_both)),
	REC(SAMPLE, sample, .time_ns = 70, .pid = 1, .tid = 1, .weight = 1, USTACK(cbf_deep),
	    KSTACK(cbf_kernel)),
	REC(SAMPLE, sample, .time_ns = 80, .pid = 1, .tid = 1, .weight = 1, USTACK(cbf_one),
	    KSTACK(cbf_one)),
	REC(SAMPLE, sample, .time_ns = 90, .pid = 1, .tid = 1, .weight = 1, USTACK(cbf_deep)),
	/* the same module twice is one record; another path is another module */
	REC(MODULE, module, .file_size = 10, .build_id = build_id_20, .build_id_len = 20,
	    .path = "/a"),
	REC(MODULE, module, .file_size = 10, .build_id = build_id_20, .build_id_len = 20,
	    .path = "/a"),
	REC(MODULE, module, .file_size = 10, .build_id = build_id_20, .build_id_len = 20,
	    .path = "/b"),
	REC(MODULE, module, .file_size = 10, .build_id = build_id_20, .build_id_len = 19,
	    .path = "/a"),
	FLUSH,
	REC(MODULE, module, .file_size = 99, .build_id = build_id_20, .build_id_len = 20,
	    .path = "/a"),
};

/*
 * Every field at its limits: the most a field holds, or the most a reader
 * takes (docs/FORMAT.md: times up to INT64_MAX ns, no empty mapping, lost
 * counts a recording could reach in the file's time span).
 */
static const struct profile_record ops_limits[] = {
	REC(PROCESS, process, .pid = UINT32_MAX, .ppid = UINT32_MAX, .comm = "p", .exe = "e",
	    .pid_ns = UINT64_MAX, .mnt_ns = UINT64_MAX, .ns_pid = UINT32_MAX),
	REC(PROCESS, process, .pid = 0),
	REC(THREAD, thread, .pid = UINT32_MAX, .tid = UINT32_MAX, .comm = "t"),
	REC(MODULE, module, .file_size = UINT64_MAX, .build_id = build_id_20, .build_id_len = 1,
	    .path = "/m"),
	REC(MAPPING, mapping, .pid = UINT32_MAX, .start = 0, .end = UINT64_MAX,
	    .file_offset = UINT64_MAX, .prot = 7, .module_id = UINT32_MAX),
	REC(MAPPING, mapping, .pid = 1, .start = 0xffffffffff600000ull, .end = 0xffffffffff601000ull,
	    .file_offset = 0, .prot = 4, .module_id = 0),
	REC(MAPPING, mapping, .pid = 1, .start = 0x7fffffffe000ull, .end = 0x7fffffffe001ull,
	    .prot = 0),
	REC(SAMPLE, sample, .time_ns = INT64_MAX, .pid = UINT32_MAX, .tid = UINT32_MAX,
	    .cpu = UINT32_MAX, .weight = UINT32_MAX, USTACK(cbf_deep), KSTACK(cbf_kernel)),
	REC(SAMPLE, sample, .time_ns = 0, .pid = 0, .tid = 0, .cpu = 0, .weight = 0),
	REC(LOST, lost, .time_ns = 0, .cpu = UINT32_MAX, .count = UINT64_MAX / 2),
	REC(LOST, lost, .time_ns = 0, .cpu = 0, .count = UINT64_MAX / 2),
	REC(EXIT, exit, .time_ns = INT64_MAX, .pid = UINT32_MAX),
	REC(COMM, comm, .time_ns = 0, .pid = UINT32_MAX, .tid = UINT32_MAX, .comm = ""),
};

static char long_cmdline[4097];		/* 4096 bytes: the longest header field written whole */
static char long_exe[4096];		/* 4095 bytes: PATH_MAX with its NUL */

static const struct profile_record ops_long_strings[] = {
	REC(PROCESS, process, .pid = 9, .comm = "0123456789abcde", .exe = long_exe),
	REC(MODULE, module, .file_size = 4, .build_id = build_id_20, .build_id_len = 20,
	    .path = long_exe),
	REC(COMM, comm, .time_ns = 1, .pid = 9, .tid = 9, .comm = long_exe),
};

static const struct profile_meta meta_empty = { 0 };

static const struct profile_meta meta_odd = {
	.flags = 0xffffffffu,
	.created_ns = UINT64_MAX,
	.freq_hz = UINT32_MAX,
	.stack_size = UINT32_MAX,
	.clock_offset_ns = UINT64_MAX,
	.host = "h\x01\x7f\x80\xff\tx",
	.release = "",
	.machine = "aarch64",
	.cmdline = long_cmdline,
};

static const struct profile_meta meta_system_wide = {
	.flags = PROFILE_F_SYSTEM_WIDE,
	.created_ns = 1,
	.freq_hz = 0,
	.stack_size = 0,
	.clock_offset_ns = 0,
	.host = "a-much-longer-host-name.example.internal",
	.release = NULL,
	.machine = "x86_64",
	.cmdline = "sfprof record -a -F 4999",
};

struct roundtrip_case {
	const char *name;
	const struct profile_meta *meta;
	const struct profile_record *ops;
	size_t nops;
	bool failed;		/* close() says the recording stopped on an error */
};

#define CASE(n, m, o, f) { n, m, o, ARRAY_SIZE(o), f }

static const struct roundtrip_case roundtrip_cases[] = {
	CASE("every record type", &plain_meta, ops_every_type, false),
	CASE("odd strings", &meta_odd, ops_odd_strings, false),
	CASE("times", &meta_system_wide, ops_times, false),
	CASE("interning", &plain_meta, ops_interning, true),
	CASE("limits", &meta_empty, ops_limits, false),
	CASE("long strings", &plain_meta, ops_long_strings, false),
	{ "no records", &plain_meta, NULL, 0, false },
	{ "no records, failed", &meta_empty, NULL, 0, true },
};

/* A header string: what was written comes back, and an absent or empty one reads as NULL or "". */
static void _assert_meta_str(const char *got, const char *want, const char *what, const char *file,
			     int line)
{
	if (!want || !*want) {
		if (got && *got) {
			print_error("meta %s: got \"%s\", want nothing\n", what, got);
			_fail(file, line);
		}
		return;
	}
	if (!got || strcmp(got, want)) {
		print_error("meta %s: got %s%.100s%s, want \"%.100s\"\n", what, got ? "\"" : "",
			    got ? got : "NULL", got ? "\"" : "", want);
		_fail(file, line);
	}
}
#define assert_meta_str(g, w, what) _assert_meta_str(g, w, what, __FILE__, __LINE__)

static void check_meta(const struct profile_meta *got, const struct profile_meta *want)
{
	assert_int_equal(got->flags, want->flags);
	assert_int_equal(got->created_ns, want->created_ns);
	assert_int_equal(got->freq_hz, want->freq_hz);
	assert_int_equal(got->stack_size, want->stack_size);
	assert_int_equal(got->clock_offset_ns, want->clock_offset_ns);
	assert_meta_str(got->host, want->host, "host");
	assert_meta_str(got->release, want->release, "release");
	assert_meta_str(got->machine, want->machine, "machine");
	assert_meta_str(got->cmdline, want->cmdline, "cmdline");
}

/* The trailer's totals, read from the bytes. */
static void check_trailer(const struct layout *l, const struct model *m, bool failed)
{
	const uint8_t *t = l->trailer;

	assert_true(l->has_trailer);
	assert_int_equal(le64(t + 8), m->samples);
	assert_int_equal(le64(t + 16), m->lost);
	assert_int_equal(le64(t + 24), l->nblocks);
	assert_int_equal(le64(t + 32), m->first_time);
	assert_int_equal(le64(t + 40), m->last_time);
	assert_int_equal(le32(t + 48), m->processes);
	assert_int_equal(le32(t + 52), m->nstacks);
	assert_int_equal(le32(t + 56), failed ? 1 : 0);
}

/* A complete file: every record, the trailer, nothing damaged. */
static void check_whole(const char *path, const struct model *m, bool failed,
			const struct profile_meta *meta)
{
	struct profile_diag diag = { "" };
	struct profile_meta got_meta;
	struct readout out;
	struct lines want = { 0 };
	struct layout l;
	uint8_t *data;
	size_t len;

	if (read_profile(path, &out, &diag, &got_meta))
		fail_msg("%s: %s", path, diag.reason);
	data = read_file_or_fail(path, &len);
	parse_layout(data, len, &l);
	assert_int_equal(l.records, m->n);
	for (size_t i = 0; i < l.nblocks; i++)
		assert_true(l.blocks[i].records > 0);
	model_lines(m, m->n, &want);
	assert_lines_equal(&out.lines, &want, "whole file");
	assert_int_equal(out.next_err, 0);
	assert_true(out.st.has_trailer);
	assert_false(out.st.truncated);
	assert_int_equal(out.st.trailer_failed, failed);
	assert_int_equal(out.st.trailer_samples, m->samples);
	assert_int_equal(out.st.trailer_lost, m->lost);
	assert_int_equal(out.st.file_size, len);
	assert_int_equal(out.st.bytes_recovered, len);
	assert_int_equal(out.st.blocks, l.nblocks);
	assert_int_equal(out.st.bad_blocks, 0);
	assert_int_equal(out.st.unknown_stacks, 0);
	assert_string_equal(out.st.first_error, "");
	if (meta)
		check_meta(&got_meta, meta);
	check_trailer(&l, m, failed);
	meta_free(&got_meta);
	lines_free(&want);
	readout_free(&out);
	free(l.blocks);
	free(data);
}

static void test_roundtrip(void **state)
{
	const char *dir = *state;

	for (size_t i = 0; i < ARRAY_SIZE(roundtrip_cases); i++) {
		const struct roundtrip_case *c = &roundtrip_cases[i];
		char *path = path_join_or_fail(dir, "rt.data");
		struct model m = { 0 };

		print_message("roundtrip: %s\n", c->name);
		write_ops(path, c->meta, c->ops, c->nops, c->failed, &m);
		check_whole(path, &m, c->failed, c->meta);
		unlink(path);
		free(path);
		model_free(&m);
	}
}

/* Every record type shows up in the file as that type, with the numbers the format gives. */
static void test_record_bytes(void **state)
{
	char *path = path_join_or_fail(*state, "rt.data");
	struct model m = { 0 };
	struct layout l;
	uint8_t *data;
	size_t len;

	write_ops(path, &plain_meta, ops_every_type, ARRAY_SIZE(ops_every_type), false, &m);
	data = read_file_or_fail(path, &len);
	parse_layout(data, len, &l);
	assert_int_equal(l.nblocks, 1);
	/* stacks come before the sample that uses them: process, thread, module, mapping,
	 * user stack, kernel stack, sample, lost, comm, exit */
	assert_int_equal(l.blocks[0].records, 10);
	assert_int_equal(m.n, 10);
	assert_int_equal(m.recs[4].type, PROFILE_REC_STACK);
	assert_int_equal(m.recs[4].stack.space, PROFILE_USER);
	assert_int_equal(m.recs[5].stack.space, PROFILE_KERNEL);
	/* created owner-only */
	{
		struct stat st;

		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0600);
	}
	free(l.blocks);
	free(data);
	model_free(&m);
	free(path);
}

/* ---- writer: file handling ---- */

static void test_old_file_kept(void **state)
{
	const char *dir = *state;
	char *path = path_join_or_fail(dir, "p.data"), *old = path_join_or_fail(dir, "p.data.old");
	struct profile_diag diag = { "" };
	struct profile_writer *w;
	struct model m = { 0 };
	mode_t mask = umask(0);	/* the mode must be 0600 whatever the umask allows */
	uint8_t *data, *first;
	size_t len, first_len;
	struct stat st;

	write_file_or_fail(path, "previous", 8);
	chmod(path, 0644);
	w = profile_writer__create(path, &plain_meta, &diag);
	umask(mask);
	if (!w)
		fail_msg("create: %s", diag.reason);
	data = read_file_or_fail(old, &len);
	assert_bytes_equal(data, len, "previous", 8);
	free(data);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(profile_writer__close(w, false, &diag), 0);
	first = read_file_or_fail(path, &first_len);

	/* a second recording moves the first profile to .old, replacing the older file */
	write_ops(path, &plain_meta, ops_every_type, ARRAY_SIZE(ops_every_type), false, &m);
	check_whole(path, &m, false, &plain_meta);
	data = read_file_or_fail(old, &len);
	assert_bytes_equal(data, len, first, first_len);
	free(data);
	free(first);
	model_free(&m);
	free(old);
	free(path);
}

static void test_discard(void **state)
{
	const char *dir = *state;
	char *path = path_join_or_fail(dir, "d.data"), *old = path_join_or_fail(dir, "d.data.old");
	struct profile_diag diag = { "" };
	struct profile_writer *w;
	struct model m = { 0 };
	uint8_t *data;
	size_t len;

	/* with a previous file: it comes back */
	write_file_or_fail(path, "keep me", 7);
	w = profile_writer__create(path, &plain_meta, &diag);
	assert_non_null(w);
	for (size_t i = 0; i < ARRAY_SIZE(ops_every_type); i++)
		assert_int_equal(apply(w, &m, &ops_every_type[i]), 0);
	assert_int_equal(profile_writer__flush(w), 0);
	profile_writer__discard(w);
	data = read_file_or_fail(path, &len);
	assert_bytes_equal(data, len, "keep me", 7);
	free(data);
	assert_int_equal(access(old, F_OK), -1);
	assert_int_equal(errno, ENOENT);

	/* without one: nothing is left */
	unlink(path);
	w = profile_writer__create(path, &plain_meta, &diag);
	assert_non_null(w);
	profile_writer__discard(w);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(access(old, F_OK), -1);
	profile_writer__discard(NULL);
	model_free(&m);
	free(old);
	free(path);
}

static void test_create_errors(void **state)
{
	const char *dir = *state;
	char *path = path_join_or_fail(dir, "c.data"), *old = path_join_or_fail(dir, "c.data.old");
	char *nodir = path_join_or_fail(dir, "missing/c.data"), *sub = path_join_or_fail(old, "x");
	struct profile_diag diag = { "" };
	uint8_t *data;
	size_t len;

	errno = 0;
	assert_null(profile_writer__create(nodir, &plain_meta, &diag));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(diag.reason, nodir));

	/* the old name is taken by a non-empty directory: the existing file is left alone */
	write_file_or_fail(path, "existing", 8);
	assert_int_equal(mkdir(old, 0700), 0);
	write_file_or_fail(sub, "x", 1);
	diag.reason[0] = '\0';
	errno = 0;
	assert_null(profile_writer__create(path, &plain_meta, &diag));
	assert_int_not_equal(errno, 0);
	assert_non_null(strstr(diag.reason, path));
	data = read_file_or_fail(path, &len);
	assert_bytes_equal(data, len, "existing", 8);
	free(data);
	unlink(sub);
	rmdir(old);
	free(sub);
	free(nodir);
	free(old);
	free(path);
}

/*
 * An output path that is not a regular file is not "an existing output file"
 * to move aside: `sfprof record -o /dev/null` runs as root, and renaming
 * /dev/null to /dev/null.old then creating a regular file in its place breaks
 * the system; `-o somedir` would rename the directory. A FIFO stands in for
 * the device node here. Writing into it or refusing are both fine; moving it is not.
 */
static void test_special_output_paths(void **state)
{
	static const struct { const char *name; mode_t type; } cases[] = {
		{ "a directory", S_IFDIR },
		{ "a FIFO (as /dev/null is a device)", S_IFIFO },
	};
	const char *dir = *state;
	int failures = 0;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *path = path_join_or_fail(dir, "special"), *old = path_join_or_fail(dir, "special.old");
		char *inside = path_join_or_fail(path, "keep");
		struct profile_diag diag = { "" };
		struct profile_writer *w;
		bool replaced, renamed;
		struct stat st;
		int reader = -1;

		if (cases[i].type == S_IFDIR) {
			assert_int_equal(mkdir(path, 0700), 0);
			write_file_or_fail(inside, "x", 1);
		} else {
			assert_int_equal(mkfifo(path, 0600), 0);
			/* a reader, so that a writer opening the FIFO does not wait for one */
			reader = open(path, O_RDONLY | O_NONBLOCK);
			assert_true(reader >= 0);
		}
		w = profile_writer__create(path, &plain_meta, &diag);
		if (w)
			profile_writer__close(w, false, &diag);
		replaced = lstat(path, &st) || (st.st_mode & S_IFMT) != cases[i].type;
		renamed = !access(old, F_OK);
		if (reader >= 0)
			close(reader);
		/* clean up whatever happened, then say what did */
		unlink(inside);
		if (rmdir(path))
			unlink(path);
		if (rmdir(old) && !access(old, F_OK)) {
			char *old_inside = path_join_or_fail(old, "keep");

			unlink(old_inside);
			free(old_inside);
			if (rmdir(old))
				unlink(old);
		}
		free(inside);
		free(old);
		free(path);
		if (replaced || renamed) {
			print_error("output path is %s: create %s (%s), and it was %s\n",
				    cases[i].name, w ? "succeeded" : "failed", diag.reason,
				    renamed ? "renamed to special.old" : "replaced");
			failures++;
		}
	}
	assert_int_equal(failures, 0);
}

static void test_writer_counters_and_args(void **state)
{
	char *path = path_join_or_fail(*state, "n.data");
	struct profile_diag diag = { "" };
	struct profile_writer *w = profile_writer__create(path, &plain_meta, &diag);
	struct profile_mapping bad_map = { .pid = 1, .start = 0x2000, .end = 0x1000 };
	struct profile_mapping empty_map = { .pid = 1, .start = 0x2000, .end = 0x2000 };
	const uint64_t past = (uint64_t)INT64_MAX + 1;	/* no kernel clock reads this */
	struct profile_sample late_sample = { .time_ns = past, .pid = 1, .tid = 1, .weight = 1,
					      .ustack = cbf_user, .ustack_len = sizeof(cbf_user) };
	uint8_t big_id[256] = { 0 };
	struct profile_module bad_mod = { .build_id = big_id, .build_id_len = 256, .path = "/x" };
	struct model m = { 0 };
	uint64_t header_bytes;
	uint32_t id = 0;
	struct stat st;

	assert_non_null(w);
	header_bytes = profile_writer__bytes(w);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(header_bytes, st.st_size);
	assert_int_equal(profile_writer__samples(w), 0);
	assert_int_equal(profile_writer__flush(w), 0);	/* nothing to write */
	assert_int_equal(profile_writer__bytes(w), header_bytes);
	assert_int_equal(profile_writer__mapping(w, &bad_map), -EINVAL);
	assert_int_equal(profile_writer__mapping(w, &empty_map), -EINVAL);
	assert_int_equal(profile_writer__module(w, &bad_mod, &id), -EINVAL);
	assert_int_equal(profile_writer__sample(w, &late_sample), -EINVAL);
	assert_int_equal(profile_writer__lost(w, &(struct profile_lost){ .time_ns = past }), -EINVAL);
	assert_int_equal(profile_writer__exit(w, &(struct profile_exit){ .time_ns = UINT64_MAX }),
			 -EINVAL);
	assert_int_equal(profile_writer__comm(w, &(struct profile_comm){ .time_ns = past }), -EINVAL);
	for (size_t i = 0; i < ARRAY_SIZE(ops_interning); i++)
		assert_int_equal(apply(w, &m, &ops_interning[i]), 0);
	assert_int_equal(profile_writer__samples(w), m.samples);
	assert_int_equal(profile_writer__flush(w), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(profile_writer__bytes(w), st.st_size);
	assert_true(profile_writer__bytes(w) > header_bytes);
	assert_int_equal(profile_writer__close(w, false, &diag), 0);
	/* the rejected calls left nothing behind */
	check_whole(path, &m, false, &plain_meta);
	model_free(&m);
	free(path);
}

/* Samples may name a stack interned before by its id instead of repeating its bytes. */
static void test_sample_by_stack_id(void **state)
{
	char *path = path_join_or_fail(*state, "ids.data");
	struct profile_diag diag = { "" };
	struct profile_writer *w = profile_writer__create(path, &plain_meta, &diag);
	static const uint8_t ubytes[] = { 0x01, 0x02, 0x03 }, kbytes[] = { 0x04, 0x05 };
	struct profile_sample s = { .time_ns = 10, .pid = 7, .tid = 7, .weight = 3 };
	struct profile_reader *r;
	struct profile_record rec;
	uint32_t uid = 0, kid = 0, again = 0, none = 1;
	int samples = 0, ret;

	assert_non_null(w);
	assert_int_equal(profile_writer__stack(w, PROFILE_USER, ubytes, sizeof(ubytes), &uid), 0);
	assert_int_equal(profile_writer__stack(w, PROFILE_KERNEL, kbytes, sizeof(kbytes), &kid), 0);
	assert_int_equal(profile_writer__stack(w, PROFILE_USER, ubytes, sizeof(ubytes), &again), 0);
	assert_int_equal(profile_writer__stack(w, PROFILE_USER, NULL, 0, &none), 0);
	assert_int_equal(profile_writer__stack(w, 7, ubytes, sizeof(ubytes), &again), -EINVAL);
	assert_int_not_equal(uid, 0);
	assert_int_not_equal(kid, uid);
	assert_int_equal(again, uid);
	assert_int_equal(none, 0);
	s.ustack_id = uid;
	s.kstack_id = kid;
	assert_int_equal(profile_writer__sample(w, &s), 0);
	/* an id of the other space, or one never given, is refused */
	s.ustack_id = kid;
	assert_int_equal(profile_writer__sample(w, &s), -EINVAL);
	s.ustack_id = kid + 1;
	assert_int_equal(profile_writer__sample(w, &s), -EINVAL);
	/* bytes win over an id */
	s.ustack_id = 0;
	s.kstack_id = 0;
	s.ustack = kbytes;
	s.ustack_len = sizeof(kbytes);
	assert_int_equal(profile_writer__sample(w, &s), 0);
	assert_int_equal(profile_writer__samples(w), 2);
	assert_int_equal(profile_writer__close(w, false, &diag), 0);

	r = profile_reader__open(path, &diag);
	assert_non_null(r);
	while ((ret = profile_reader__next(r, &rec)) > 0) {
		if (rec.type != PROFILE_REC_SAMPLE)
			continue;
		if (!samples++) {
			assert_int_equal(rec.sample.ustack_len, sizeof(ubytes));
			assert_memory_equal(rec.sample.ustack, ubytes, sizeof(ubytes));
			assert_int_equal(rec.sample.kstack_len, sizeof(kbytes));
			assert_memory_equal(rec.sample.kstack, kbytes, sizeof(kbytes));
		} else {
			/* the user-space copy of the kernel stack's bytes: a stack of its own */
			assert_int_equal(rec.sample.ustack_len, sizeof(kbytes));
			assert_int_not_equal(rec.sample.ustack_id, kid);
			assert_null(rec.sample.kstack);
		}
		assert_int_equal(rec.sample.weight, 3);
	}
	assert_int_equal(ret, 0);
	assert_int_equal(samples, 2);
	profile_reader__free(r);
	free(path);
}

/*
 * close_whole(): a profile that cannot be written whole leaves nothing
 * behind but the file that was there before. In a child, with RLIMIT_FSIZE.
 */
static void test_close_whole(void **state)
{
	char *path = path_join_or_fail(*state, "whole.data");
	char *old = path_join_or_fail(*state, "whole.data.old");
	static const char before[] = "the profile before";
	uint8_t stack[64];
	char got[64] = "";
	int fd, status;
	pid_t pid;

	for (size_t i = 0; i < sizeof(stack); i++)
		stack[i] = (uint8_t)(i * 37 + 1);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, before, sizeof(before)), sizeof(before));
	close(fd);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct profile_diag diag = { "" };
		struct profile_writer *w = profile_writer__create(path, &plain_meta, &diag);
		struct profile_sample s = { .pid = 1, .tid = 1, .weight = 1, .ustack = stack,
					    .ustack_len = sizeof(stack) };
		struct rlimit rl = { 64 * 1024, 64 * 1024 };
		int err = 0;

		signal(SIGXFSZ, SIG_IGN);
		if (!w || setrlimit(RLIMIT_FSIZE, &rl))
			_exit(2);
		/* far more than 64 KiB, whatever zstd makes of it: every sample a new stack */
		for (uint32_t i = 0; i < 200000 && !err; i++) {
			memcpy(stack, &i, sizeof(i));
			s.time_ns = i;
			err = profile_writer__sample(w, &s);
		}
		err = profile_writer__close_whole(w, false, &diag);
		_exit(err == -EFBIG && strstr(diag.reason, "nothing written") ? 0 : 3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, got, sizeof(got)), sizeof(before));
	close(fd);
	assert_string_equal(got, before);
	assert_int_equal(access(old, F_OK), -1);
	free(path);
	free(old);
}

/* ---- a generated recording with many blocks ---- */

struct gen {
	struct profile_record *ops;
	size_t n, cap;
	uint8_t *stacks[64];
	size_t stack_len[64];
	size_t nstacks;
};

static void gen_add(struct gen *g, struct profile_record r)
{
	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 1024;
		g->ops = realloc(g->ops, g->cap * sizeof(*g->ops));
		assert_non_null(g->ops);
	}
	g->ops[g->n++] = r;
}

static const char *const gen_comms[] = { "app", "worker", "gc", "io-\xff", "" };

/* A CBF stack of @depth frames in a PIE text, with some direct recursion. */
static void gen_stack(struct gen *g, struct test_rng *rng, bool kernel)
{
	uint64_t addrs[128];
	size_t depth = rng_range(rng, 1, 100);
	struct sfu_cbf_enc enc;
	uint8_t *buf = malloc(SFU_CBF_BOUND(depth));

	assert_non_null(buf);
	for (size_t i = 0; i < depth; i++) {
		if (i && rng_range(rng, 0, 5) == 0) {
			addrs[i] = addrs[i - 1];	/* recursion */
			continue;
		}
		addrs[i] = kernel ? 0xffffffff81000000ull + rng_range(rng, 0, 0xffffff)
				  : 0x55d0c0de0000ull + rng_range(rng, 0, 0x3ffff);
	}
	assert_int_equal(sfu_cbf_enc__init(&enc, 64, buf, SFU_CBF_BOUND(depth)), 0);
	assert_int_equal(sfu_cbf_encode_stack(&enc, addrs, depth, 0, rng_range(rng, 0, 9) == 0), 0);
	g->stacks[g->nstacks] = buf;
	g->stack_len[g->nstacks++] = sfu_cbf_enc__len(&enc);
}

/*
 * About @nsamples samples among every other record type, with a flush every
 * 50-250 records so that there are many blocks, and stacks first seen all
 * along the recording so that later blocks refer to earlier ones.
 */
static void gen_recording(struct gen *g, uint64_t seed, size_t nsamples)
{
	struct test_rng rng;
	uint64_t t = 1000000000;
	size_t next_flush = 100;

	memset(g, 0, sizeof(*g));
	rng_seed(&rng, seed);
	for (size_t i = 0; i < ARRAY_SIZE(g->stacks); i++)
		gen_stack(g, &rng, i % 4 == 3);
	for (size_t i = 0; i < nsamples; i++) {
		size_t avail = 2 + i * (ARRAY_SIZE(g->stacks) - 2) / nsamples;
		uint32_t pid = 100 + rng_range(&rng, 0, 3);
		size_t u = rng_range(&rng, 0, avail - 1), k = rng_range(&rng, 0, avail - 1);
		struct profile_record r = { .type = PROFILE_REC_SAMPLE };

		switch (rng_range(&rng, 0, 40)) {
		case 0:
			gen_add(g, (struct profile_record)REC(PROCESS, process, .pid = pid, .ppid = 1,
				.comm = gen_comms[i % 5], .exe = "/usr/bin/app", .pid_ns = i,
				.mnt_ns = 2 * i, .ns_pid = pid));
			break;
		case 1:
			gen_add(g, (struct profile_record)REC(THREAD, thread, .pid = pid,
				.tid = pid + rng_range(&rng, 0, 5), .comm = gen_comms[(i + 1) % 5]));
			break;
		case 2:
			gen_add(g, (struct profile_record)REC(MODULE, module,
				.file_size = rng_range(&rng, 0, 1 << 20), .build_id = build_id_20,
				.build_id_len = rng_range(&rng, 0, 20),
				.path = gen_comms[rng_range(&rng, 0, 4)]));
			break;
		case 3:
			gen_add(g, (struct profile_record)REC(MAPPING, mapping, .pid = pid,
				.start = 0x7f0000000000ull + i * 4096, .end = 0x7f0000000000ull + i * 8192,
				.file_offset = i, .prot = i & 7, .module_id = rng_range(&rng, 0, 4)));
			break;
		case 4:
			gen_add(g, (struct profile_record)REC(LOST, lost, .time_ns = t - 5,
				.cpu = rng_range(&rng, 0, 7), .count = rng_range(&rng, 1, 100)));
			break;
		case 5:
			gen_add(g, (struct profile_record)REC(EXIT, exit, .time_ns = t + 1, .pid = pid));
			break;
		case 6:
			gen_add(g, (struct profile_record)REC(COMM, comm, .time_ns = t, .pid = pid,
				.tid = pid + 1, .comm = gen_comms[i % 5]));
			break;
		default:
			break;
		}
		/* per-CPU buffers are drained in turn: times step back now and then */
		t += rng_range(&rng, 0, 9) == 0 ? -(int64_t)rng_range(&rng, 0, 3000000)
						 : rng_range(&rng, 0, 1001001);
		r.sample.time_ns = t;
		r.sample.pid = pid;
		r.sample.tid = pid + rng_range(&rng, 0, 5);
		r.sample.cpu = rng_range(&rng, 0, 7);
		r.sample.weight = 1;
		if (rng_range(&rng, 0, 9)) {
			r.sample.ustack = g->stacks[u];
			r.sample.ustack_len = g->stack_len[u];
		}
		if (rng_range(&rng, 0, 4) == 0) {
			r.sample.kstack = g->stacks[k];
			r.sample.kstack_len = g->stack_len[k];
		}
		gen_add(g, r);
		if (g->n >= next_flush) {
			gen_add(g, (struct profile_record){ .type = OP_FLUSH });
			next_flush = g->n + rng_range(&rng, 50, 250);
		}
	}
}

static void gen_free(struct gen *g)
{
	for (size_t i = 0; i < g->nstacks; i++)
		free(g->stacks[i]);
	free(g->ops);
}

/* A recording written to @path, its bytes and its layout. */
struct recording {
	struct gen gen;
	struct model model;
	uint8_t *data;
	size_t len;
	struct layout layout;
};

static void record_file(const char *path, struct recording *rec, uint64_t seed, size_t nsamples)
{
	memset(rec, 0, sizeof(*rec));
	gen_recording(&rec->gen, seed, nsamples);
	write_ops(path, &plain_meta, rec->gen.ops, rec->gen.n, false, &rec->model);
	rec->data = read_file_or_fail(path, &rec->len);
	parse_layout(rec->data, rec->len, &rec->layout);
	assert_int_equal(rec->layout.records, rec->model.n);
}

static void recording_free(struct recording *rec)
{
	gen_free(&rec->gen);
	model_free(&rec->model);
	free(rec->data);
	free(rec->layout.blocks);
}

static void test_generated_roundtrip(void **state)
{
	char *path = path_join_or_fail(*state, "gen.data");
	struct recording rec;

	record_file(path, &rec, 1, 4000);
	assert_true(rec.layout.nblocks >= 20);
	check_whole(path, &rec.model, false, &plain_meta);
	recording_free(&rec);
	free(path);
}

/* Without flushes, blocks are cut at 256 KiB of records. */
static void test_block_size_limit(void **state)
{
	char *path = path_join_or_fail(*state, "big.data");
	struct recording rec;

	memset(&rec, 0, sizeof(rec));
	gen_recording(&rec.gen, 7, 60000);
	/* drop the flushes */
	{
		size_t j = 0;

		for (size_t i = 0; i < rec.gen.n; i++)
			if (rec.gen.ops[i].type != OP_FLUSH)
				rec.gen.ops[j++] = rec.gen.ops[i];
		rec.gen.n = j;
	}
	write_ops(path, &plain_meta, rec.gen.ops, rec.gen.n, false, &rec.model);
	rec.data = read_file_or_fail(path, &rec.len);
	parse_layout(rec.data, rec.len, &rec.layout);
	assert_true(rec.layout.nblocks >= 3);
	for (size_t i = 0; i < rec.layout.nblocks; i++) {
		assert_true(rec.layout.blocks[i].usize <= BLOCK_RECORD_BYTES);
		/* a block is cut by size, not earlier, unless a second went by */
		if (i + 1 < rec.layout.nblocks && rec.layout.blocks[i].usize < BLOCK_RECORD_BYTES - 4096)
			print_message("block %zu: %u bytes of records (cut by time?)\n", i,
				      rec.layout.blocks[i].usize);
	}
	check_whole(path, &rec.model, false, &plain_meta);
	recording_free(&rec);
	free(path);
}

/* ---- cut files ---- */

/* The file @rec cut at @cut bytes must give the whole blocks before the cut and say it was cut. */
static void check_cut(const char *path, const struct recording *rec, uint64_t cut)
{
	struct profile_diag diag = { "" };
	struct lines want = { 0 };
	size_t blocks, records;
	uint64_t end = whole_before(&rec->layout, cut, &blocks, &records);
	struct readout out;
	int err;

	write_file_or_fail(path, rec->data, cut);
	err = read_profile(path, &out, &diag, NULL);
	if (cut < rec->layout.header_size) {
		if (err != -EBADMSG)
			fail_msg("cut at %llu (inside the header): open gave %d, want -EBADMSG (%s)",
				 (unsigned long long)cut, err, diag.reason);
		assert_true(diag.reason[0] != '\0');
		return;
	}
	if (err)
		fail_msg("cut at %llu: %s", (unsigned long long)cut, diag.reason);
	model_lines(&rec->model, records, &want);
	if (out.st.blocks != blocks || out.st.bytes_recovered != end || !out.st.truncated ||
	    out.st.has_trailer || out.st.bad_blocks || out.next_err)
		fail_msg("cut at %llu: blocks %llu (want %zu), bytes_recovered %llu (want %llu), "
			 "truncated %d, has_trailer %d, bad_blocks %llu, next %d, error \"%s\"",
			 (unsigned long long)cut, (unsigned long long)out.st.blocks, blocks,
			 (unsigned long long)out.st.bytes_recovered, (unsigned long long)end,
			 out.st.truncated, out.st.has_trailer,
			 (unsigned long long)out.st.bad_blocks, out.next_err, out.st.first_error);
	assert_lines_equal(&out.lines, &want, "cut file");
	assert_int_equal(out.st.file_size, cut);
	assert_int_equal(out.st.unknown_stacks, 0);
	lines_free(&want);
	readout_free(&out);
}

static void test_cut_at_block_boundaries(void **state)
{
	char *path = path_join_or_fail(*state, "gen.data"), *cut = path_join_or_fail(*state, "cut");
	struct recording rec;
	const struct layout *l;

	record_file(path, &rec, 2, 3000);
	l = &rec.layout;
	check_cut(cut, &rec, l->header_size);
	for (size_t i = 0; i < l->nblocks; i++) {
		/* at the boundary, and a few bytes either side of it */
		check_cut(cut, &rec, l->blocks[i].end);
		check_cut(cut, &rec, l->blocks[i].end - 1);
		check_cut(cut, &rec, l->blocks[i].off + 1);
		check_cut(cut, &rec, l->blocks[i].off + BLOCK_HDR - 1);
		check_cut(cut, &rec, l->blocks[i].off + BLOCK_HDR);
	}
	/* inside the trailer: every block is there, the end is not */
	for (uint64_t off = l->trailer_off; off < rec.len; off++)
		check_cut(cut, &rec, off);
	recording_free(&rec);
	free(cut);
	free(path);
}

static void test_cut_at_random_offsets(void **state)
{
	char *path = path_join_or_fail(*state, "gen.data"), *cut = path_join_or_fail(*state, "cut");
	struct recording rec;
	struct test_rng rng;

	record_file(path, &rec, 3, 3000);
	rng_seed(&rng, 0x5f9f0f11e);
	for (int i = 0; i < 400; i++)
		check_cut(cut, &rec, rng_range(&rng, 0, rec.len - 1));
	/* and every length of the header */
	for (uint64_t off = 0; off <= rec.layout.header_size; off++)
		check_cut(cut, &rec, off);
	recording_free(&rec);
	free(cut);
	free(path);
}

/* ---- damaged files ---- */

struct damage_case {
	const char *name;
	bool in_header;		/* the byte is in the block header, else in the zstd frame */
	int where;		/* offset in it; negative from its end */
	uint8_t xor;
	const char *reason;	/* a word first_error must hold */
};

static const struct damage_case damage_cases[] = {
	{ "frame magic", false, 0, 0x01, "damaged" },
	{ "frame header descriptor", false, 4, 0xff, "damaged" },
	{ "frame, early", false, 9, 0x10, "damaged" },
	{ "frame, middle", false, -1000000, 0x80, "damaged" },	/* clamped to the middle */
	{ "frame, last byte before checksum", false, -5, 0x04, "damaged" },
	{ "content checksum", false, -1, 0x01, "damaged" },
	{ "block magic", true, 0, 0x20, "damaged block header" },
	{ "compressed size", true, 4, 0x01, "damaged block header" },
	{ "uncompressed size", true, 9, 0x40, "damaged block header" },
	{ "record count", true, 12, 0x01, "damaged block header" },
	{ "header CRC", true, 19, 0x80, "damaged block header" },
};

static void check_damaged(const char *path, const struct recording *rec, size_t k,
			  const struct damage_case *c)
{
	const struct block_info *b = &rec->layout.blocks[k];
	struct profile_diag diag = { "" };
	struct lines want = { 0 };
	uint8_t *copy = dup_bytes(rec->data, rec->len);
	uint64_t at, unknown, recovered;
	struct readout out;
	char offset_word[32];

	if (c->in_header) {
		at = b->off + c->where;
	} else if (c->where == -1000000) {
		at = b->off + BLOCK_HDR + b->csize / 2;
	} else {
		at = c->where >= 0 ? b->off + BLOCK_HDR + c->where : b->end + c->where;
	}
	assert_true(at >= b->off && at < b->end);
	copy[at] ^= c->xor;
	write_file_or_fail(path, copy, rec->len);
	free(copy);
	if (read_profile(path, &out, &diag, NULL))
		fail_msg("%s in block %zu: open: %s", c->name, k, diag.reason);
	model_expect(&rec->model, rec->model.n, b->first_record, b->first_record + b->records,
		     &want, &unknown);
	recovered = rec->len - (b->end - b->off);
	if (out.st.bad_blocks != 1 || out.st.blocks != rec->layout.nblocks - 1 ||
	    out.st.unknown_stacks != unknown || out.st.truncated || !out.st.has_trailer ||
	    out.st.bytes_recovered != recovered || out.next_err)
		fail_msg("%s in block %zu (byte %llu): bad_blocks %llu (want 1), blocks %llu "
			 "(want %zu), unknown_stacks %llu (want %llu), truncated %d, has_trailer %d, "
			 "bytes_recovered %llu (want %llu), next %d, error \"%s\"",
			 c->name, k, (unsigned long long)at, (unsigned long long)out.st.bad_blocks,
			 (unsigned long long)out.st.blocks, rec->layout.nblocks - 1,
			 (unsigned long long)out.st.unknown_stacks, (unsigned long long)unknown,
			 out.st.truncated, out.st.has_trailer,
			 (unsigned long long)out.st.bytes_recovered, (unsigned long long)recovered,
			 out.next_err, out.st.first_error);
	assert_lines_equal(&out.lines, &want, c->name);
	if (!strstr(out.st.first_error, c->reason))
		fail_msg("%s in block %zu: first_error \"%s\" does not say \"%s\"", c->name, k,
			 out.st.first_error, c->reason);
	snprintf(offset_word, sizeof(offset_word), "offset %llu", (unsigned long long)b->off);
	if (!strstr(out.st.first_error, offset_word))
		fail_msg("%s in block %zu: first_error \"%s\" does not give the block's %s",
			 c->name, k, out.st.first_error, offset_word);
	lines_free(&want);
	readout_free(&out);
}

static void test_damaged_block(void **state)
{
	char *path = path_join_or_fail(*state, "gen.data"), *bad = path_join_or_fail(*state, "bad");
	struct recording rec;
	uint64_t unknown_total = 0;

	record_file(path, &rec, 4, 2000);
	for (size_t k = 0; k < rec.layout.nblocks; k++) {
		for (size_t i = 0; i < ARRAY_SIZE(damage_cases); i++)
			check_damaged(bad, &rec, k, &damage_cases[i]);
	}
	/* the recording is such that damage does cost later samples their stacks */
	for (size_t k = 0; k < rec.layout.nblocks; k++) {
		const struct block_info *b = &rec.layout.blocks[k];
		struct lines want = { 0 };
		uint64_t unknown;

		model_expect(&rec.model, rec.model.n, b->first_record, b->first_record + b->records,
			     &want, &unknown);
		unknown_total += unknown;
		lines_free(&want);
	}
	assert_true(unknown_total > 0);
	recording_free(&rec);
	free(bad);
	free(path);
}

/* Two damaged blocks side by side, and damage right before the trailer. */
static void test_damaged_neighbours(void **state)
{
	char *path = path_join_or_fail(*state, "gen.data"), *bad = path_join_or_fail(*state, "bad");
	struct profile_diag diag = { "" };
	struct recording rec;
	const struct layout *l;
	struct readout out;
	uint8_t *copy;

	record_file(path, &rec, 5, 1500);
	l = &rec.layout;
	copy = dup_bytes(rec.data, rec.len);
	copy[l->blocks[1].off + 2] ^= 1;				/* header */
	copy[l->blocks[2].off + BLOCK_HDR + l->blocks[2].csize / 2] ^= 1;	/* frame */
	copy[l->blocks[l->nblocks - 1].off] ^= 1;			/* last block's header */
	write_file_or_fail(bad, copy, rec.len);
	assert_int_equal(read_profile(bad, &out, &diag, NULL), 0);
	assert_int_equal(out.st.bad_blocks, 3);
	assert_int_equal(out.st.blocks, l->nblocks - 3);
	assert_true(out.st.has_trailer);
	assert_false(out.st.truncated);
	assert_non_null(strstr(out.st.first_error, "damaged block header"));
	readout_free(&out);

	/* a damaged trailer: every block is read, and the file counts as cut */
	memcpy(copy, rec.data, rec.len);
	copy[l->trailer_off + 9] ^= 1;
	write_file_or_fail(bad, copy, rec.len);
	assert_int_equal(read_profile(bad, &out, &diag, NULL), 0);
	{
		struct lines want = { 0 };

		model_lines(&rec.model, rec.model.n, &want);
		assert_lines_equal(&out.lines, &want, "damaged trailer");
		lines_free(&want);
	}
	assert_int_equal(out.st.blocks, l->nblocks);
	assert_false(out.st.has_trailer);
	assert_true(out.st.truncated);
	assert_true(out.st.first_error[0] != '\0');
	readout_free(&out);
	free(copy);
	recording_free(&rec);
	free(bad);
	free(path);
}

static void test_bytes_after_trailer(void **state)
{
	char *path = path_join_or_fail(*state, "gen.data"), *bad = path_join_or_fail(*state, "bad");
	static const size_t extra[] = { 1, 19, 20, 64, 100, 70000 };
	struct recording rec;

	record_file(path, &rec, 6, 500);
	for (size_t i = 0; i < ARRAY_SIZE(extra) + 1; i++) {
		/* the last case appends a copy of a whole valid block */
		size_t n = i < ARRAY_SIZE(extra) ? extra[i] : rec.layout.blocks[0].end -
								 rec.layout.blocks[0].off;
		uint8_t *copy = calloc(1, rec.len + n);
		struct profile_diag diag = { "" };
		struct lines want = { 0 };
		struct readout out;

		assert_non_null(copy);
		memcpy(copy, rec.data, rec.len);
		if (i == ARRAY_SIZE(extra))
			memcpy(copy + rec.len, rec.data + rec.layout.blocks[0].off, n);
		else
			memset(copy + rec.len, 0xa5, n);
		write_file_or_fail(bad, copy, rec.len + n);
		assert_int_equal(read_profile(bad, &out, &diag, NULL), 0);
		model_lines(&rec.model, rec.model.n, &want);
		assert_lines_equal(&out.lines, &want, "bytes after the trailer");
		assert_true(out.st.has_trailer);
		assert_false(out.st.truncated);
		assert_int_equal(out.st.bad_blocks, 0);
		assert_int_equal(out.st.bytes_recovered, rec.len);
		if (!strstr(out.st.first_error, "after the trailer"))
			fail_msg("%zu bytes after the trailer: first_error \"%s\"", n,
				 out.st.first_error);
		lines_free(&want);
		readout_free(&out);
		free(copy);
	}
	recording_free(&rec);
	free(bad);
	free(path);
}

/* ---- files that are not profiles ---- */

enum mutation {
	MUT_NONE,
	MUT_XOR,	/* data[at] ^= val */
	MUT_VERSION,	/* the version becomes val, CRC fixed or not */
	MUT_SIZE,	/* the header size becomes val, CRC fixed */
	MUT_CUT,	/* keep the first val bytes */
	MUT_TEXT,	/* replace the whole file by text */
};

struct bad_header_case {
	const char *name;
	enum mutation mut;
	size_t at;
	long val;
	bool fix_crc;
	int want_errno;
	const char *reason;
};

static const struct bad_header_case bad_header_cases[] = {
	{ "magic, first byte", MUT_XOR, 0, 0x01, false, EBADMSG, "not an sfprof profile" },
	{ "magic, last byte", MUT_XOR, 7, 0x0a, false, EBADMSG, "not an sfprof profile" },
	{ "magic, PNG", MUT_XOR, 1, 'S' ^ 'P', false, EBADMSG, "not an sfprof profile" },
	{ "a text file", MUT_TEXT, 0, 0, false, EBADMSG, "not an sfprof profile" },
	{ "empty", MUT_CUT, 0, 0, false, EBADMSG, "not an sfprof profile" },
	{ "magic only", MUT_CUT, 0, 8, false, EBADMSG, "" },
	{ "39 bytes", MUT_CUT, 0, 39, false, EBADMSG, "" },
	{ "fixed part only", MUT_CUT, 0, 40, false, EBADMSG, "header" },
	{ "header less one byte", MUT_CUT, 0, -1, false, EBADMSG, "header" },
	{ "version 2", MUT_VERSION, 0, 2, true, ENOTSUP, "version 2" },
	{ "version 0", MUT_VERSION, 0, 0, true, ENOTSUP, "version 0" },
	{ "version 65535", MUT_VERSION, 0, 65535, true, ENOTSUP, "version 65535" },
	{ "version 2, CRC not fixed", MUT_VERSION, 0, 2, false, ENOTSUP, "version 2" },
	{ "header CRC", MUT_XOR, (size_t)-1, 0x01, false, EBADMSG, "damaged header" },
	{ "host name byte", MUT_XOR, 45, 0x20, false, EBADMSG, "damaged header" },
	{ "flags", MUT_XOR, 12, 0x04, false, EBADMSG, "damaged header" },
	{ "header size past the end", MUT_SIZE, 0, 65535, true, EBADMSG, "damaged header" },
	{ "header size too small", MUT_SIZE, 0, 40, true, EBADMSG, "damaged header" },
};

static void test_bad_header(void **state)
{
	char *path = path_join_or_fail(*state, "gen.data"), *bad = path_join_or_fail(*state, "bad");
	struct recording rec;

	record_file(path, &rec, 8, 200);
	for (size_t i = 0; i < ARRAY_SIZE(bad_header_cases); i++) {
		const struct bad_header_case *c = &bad_header_cases[i];
		uint8_t *copy = dup_bytes(rec.data, rec.len);
		uint64_t hsize = rec.layout.header_size;
		struct profile_diag diag = { "" };
		size_t len = rec.len;
		struct readout out;
		int err;

		switch (c->mut) {
		case MUT_NONE:
			break;
		case MUT_XOR:
			copy[c->at == (size_t)-1 ? hsize - 1 : c->at] ^= c->val;
			break;
		case MUT_VERSION:
			set_le16(copy + 8, c->val);
			break;
		case MUT_SIZE:
			set_le16(copy + 10, c->val);
			break;
		case MUT_CUT:
			len = c->val < 0 ? hsize + c->val : (size_t)c->val;
			break;
		case MUT_TEXT:
			len = snprintf((char *)copy, rec.len, "# this is a perf script output\n"
				       "app 4242 [003] 123.456: cycles:\n");
			break;
		}
		if (c->fix_crc)
			set_le32(copy + hsize - 4, crc32_ieee(copy, hsize - 4));
		write_file_or_fail(bad, copy, len);
		free(copy);
		err = read_profile(bad, &out, &diag, NULL);
		if (err != -c->want_errno)
			fail_msg("%s: open gave %d (%s), want -%d", c->name, err, diag.reason,
				 c->want_errno);
		if (!strstr(diag.reason, c->reason) || !strstr(diag.reason, bad))
			fail_msg("%s: reason \"%s\" does not name the file and say \"%s\"", c->name,
				 diag.reason, c->reason);
	}
	recording_free(&rec);
	free(bad);
	free(path);
}

static void test_not_a_file(void **state)
{
	char *sub = path_join_or_fail(*state, "adir"), *missing = path_join_or_fail(*state, "nope");
	struct profile_diag diag = { "" };

	assert_int_equal(mkdir(sub, 0700), 0);
	errno = 0;
	assert_null(profile_reader__open(sub, &diag));
	assert_true(errno == EISDIR || errno == EINVAL);
	assert_non_null(strstr(diag.reason, sub));
	rmdir(sub);

	errno = 0;
	assert_null(profile_reader__open(missing, &diag));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(diag.reason, missing));
	profile_reader__free(NULL);
	free(missing);
	free(sub);
}

/* ---- files made by hand: what the reader must accept from another writer ---- */

struct fbuild {
	uint8_t *p;
	size_t len, cap;
};

static void fb_put(struct fbuild *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void fb_u8(struct fbuild *b, uint8_t v)
{
	fb_put(b, &v, 1);
}

static void fb_le(struct fbuild *b, uint64_t v, unsigned size)
{
	for (unsigned i = 0; i < size; i++)
		fb_u8(b, i < 8 ? v >> (8 * i) : 0);
}

static void fb_varint(struct fbuild *b, uint64_t v)
{
	do {
		fb_u8(b, (v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void fb_svarint(struct fbuild *b, int64_t v)
{
	fb_varint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void fb_str(struct fbuild *b, const char *s)
{
	fb_varint(b, strlen(s));
	fb_put(b, s, strlen(s));
}

/* A record: type, length, then @payload's bytes (consumed). */
static void fb_record(struct fbuild *b, uint8_t type, struct fbuild *payload)
{
	fb_u8(b, type);
	fb_varint(b, payload->len);
	fb_put(b, payload->p, payload->len);
	free(payload->p);
	memset(payload, 0, sizeof(*payload));
}

struct hdr_field {
	uint8_t tag;
	const char *value;
};

static void fb_header(struct fbuild *b, const struct hdr_field *fields, size_t n, bool end_tag)
{
	size_t start = b->len;

	fb_put(b, file_magic, 8);
	fb_le(b, 1, 2);
	fb_le(b, 0, 2);				/* size, below */
	fb_le(b, PROFILE_F_SYSTEM_WIDE, 4);
	fb_le(b, 1700000000000000000ull, 8);
	fb_le(b, 999, 4);
	fb_le(b, 8192, 4);
	fb_le(b, 42, 8);
	for (size_t i = 0; i < n; i++) {
		fb_u8(b, fields[i].tag);
		fb_le(b, strlen(fields[i].value), 2);
		fb_put(b, fields[i].value, strlen(fields[i].value));
	}
	if (end_tag)
		fb_le(b, 0, 3);
	set_le16(b->p + start + 10, b->len - start + 4);
	fb_le(b, crc32_ieee(b->p + start, b->len - start), 4);
}

/* One block of @recs (consumed) holding @nrec records; @usize 0 gives the true size. */
static void fb_block(struct fbuild *b, struct fbuild *recs, uint32_t nrec, uint32_t usize,
		     bool checksum)
{
	ZSTD_CCtx *zc = ZSTD_createCCtx();
	size_t bound = ZSTD_compressBound(recs->len), csize, at;
	uint8_t *frame = malloc(bound);

	assert_non_null(zc);
	assert_non_null(frame);
	ZSTD_CCtx_setParameter(zc, ZSTD_c_checksumFlag, checksum);
	csize = ZSTD_compress2(zc, frame, bound, recs->p ? recs->p : (const void *)"", recs->len);
	assert_false(ZSTD_isError(csize));
	at = b->len;
	fb_put(b, "SFB1", 4);
	fb_le(b, csize, 4);
	fb_le(b, usize ? usize : recs->len, 4);
	fb_le(b, nrec, 4);
	fb_le(b, crc32_ieee(b->p + at, 16), 4);
	fb_put(b, frame, csize);
	free(frame);
	ZSTD_freeCCtx(zc);
	free(recs->p);
	memset(recs, 0, sizeof(*recs));
}

/* What a trailer counts: a writer's count of what it wrote. */
struct trailer_counts {
	uint64_t samples, lost, blocks, first, last;
	uint32_t processes, stacks;
};

static void fb_trailer(struct fbuild *b, const struct trailer_counts *t)
{
	size_t at = b->len;

	fb_put(b, "SFT1", 4);
	fb_le(b, TRAILER_SIZE, 4);
	fb_le(b, t->samples, 8);
	fb_le(b, t->lost, 8);
	fb_le(b, t->blocks, 8);
	fb_le(b, t->first, 8);
	fb_le(b, t->last, 8);
	fb_le(b, t->processes, 4);
	fb_le(b, t->stacks, 4);
	fb_le(b, 0, 4);		/* flags */
	fb_le(b, crc32_ieee(b->p + at, 60), 4);
}

static void fb_sample(struct fbuild *recs, int64_t dt, uint64_t pid, uint32_t ustack,
		      uint32_t kstack, const char *extra)
{
	struct fbuild p = { 0 };

	fb_svarint(&p, dt);
	fb_varint(&p, pid);
	fb_varint(&p, pid + 1);
	fb_varint(&p, 2);
	fb_varint(&p, 1);
	fb_varint(&p, ustack);
	fb_varint(&p, kstack);
	if (extra)
		fb_put(&p, extra, strlen(extra));
	fb_record(recs, PROFILE_REC_SAMPLE, &p);
}

static void fb_stack_n(struct fbuild *recs, uint32_t id, uint8_t space, const char *cbf,
		       size_t len)
{
	struct fbuild p = { 0 };

	fb_varint(&p, id);
	fb_u8(&p, space);
	fb_varint(&p, len);
	fb_put(&p, cbf, len);
	fb_record(recs, PROFILE_REC_STACK, &p);
}

static void fb_thread(struct fbuild *recs, uint32_t tid, const char *comm, const char *extra)
{
	struct fbuild p = { 0 };

	fb_varint(&p, 7);
	fb_varint(&p, tid);
	fb_str(&p, comm);
	if (extra)
		fb_put(&p, extra, strlen(extra));
	fb_record(recs, PROFILE_REC_THREAD, &p);
}

/* Each builds the blocks of a file; the header and trailer are added around them. */
static void craft_unknown_types(struct fbuild *f)
{
	struct fbuild r = { 0 }, p = { 0 };

	fb_put(&p, "future", 6);
	fb_record(&r, 42, &p);
	fb_record(&r, 0, &p);
	for (int i = 0; i < 300; i++)
		fb_u8(&p, i);
	fb_record(&r, 255, &p);
	fb_sample(&r, 100, 5, 0, 0, NULL);
	fb_record(&r, 200, &p);
	fb_block(f, &r, 5, 0, true);
}

static void craft_new_fields(struct fbuild *f)
{
	struct fbuild r = { 0 }, p = { 0 };

	fb_varint(&p, 9);
	fb_varint(&p, 1);
	fb_str(&p, "app");
	fb_str(&p, "/bin/app");
	fb_varint(&p, 11);
	fb_varint(&p, 12);
	fb_varint(&p, 13);
	fb_put(&p, "\x05new\x80\x01", 6);
	fb_record(&r, PROFILE_REC_PROCESS, &p);
	fb_thread(&r, 10, "t", "\x01\x02\x03");
	fb_sample(&r, 1000, 9, 0, 0, "\x2a\xff\x01");
	fb_svarint(&p, 1);	/* an exit with a field after the pid */
	fb_varint(&p, 9);
	fb_varint(&p, 77);
	fb_record(&r, PROFILE_REC_EXIT, &p);
	fb_block(f, &r, 4, 0, true);
}

static void craft_times(struct fbuild *f)
{
	struct fbuild r = { 0 }, p = { 0 };

	fb_sample(&r, 100, 1, 0, 0, NULL);
	fb_sample(&r, -30, 1, 0, 0, NULL);
	fb_svarint(&p, -70);	/* a lost record at 0 */
	fb_varint(&p, 3);
	fb_varint(&p, 4);
	fb_record(&r, PROFILE_REC_LOST, &p);
	fb_block(f, &r, 3, 0, true);
	/* each block starts again from 0 */
	fb_sample(&r, 50, 1, 0, 0, NULL);
	fb_block(f, &r, 1, 0, true);
}

/* Times are the kernel's, signed: below 0 or past INT64_MAX ns is no time. */
static void craft_bad_times(struct fbuild *f)
{
	struct fbuild r = { 0 }, p = { 0 };

	fb_sample(&r, 50, 1, 0, 0, NULL);
	fb_svarint(&p, INT64_MIN);	/* 50 - 2^63 */
	fb_varint(&p, 1);
	fb_varint(&p, 1);
	fb_str(&p, "c");
	fb_record(&r, PROFILE_REC_COMM, &p);
	fb_sample(&r, -51, 1, 0, 0, NULL);	/* just below 0 */
	fb_sample(&r, INT64_MAX, 1, 0, 0, NULL);	/* 50 + INT64_MAX */
	fb_sample(&r, INT64_MAX - 50, 1, 0, 0, NULL);	/* INT64_MAX itself */
	fb_sample(&r, 1, 1, 0, 0, NULL);	/* one past it */
	fb_sample(&r, -INT64_MAX, 1, 0, 0, NULL);	/* back to 0 */
	fb_block(f, &r, 7, 0, true);
}

/* Mappings mmap() cannot make: empty, or past the top of the address space. */
static void craft_bad_mappings(struct fbuild *f)
{
	static const uint64_t maps[][2] = {
		{ 0x1000, 0 }, { 0xfffffffffffff000ull, 0x1000 }, { 1, UINT64_MAX },
		{ 0xfffffffffffff000ull, 0xfff }, { 0, UINT64_MAX },
	};
	struct fbuild r = { 0 }, p = { 0 };

	for (size_t i = 0; i < ARRAY_SIZE(maps); i++) {
		fb_varint(&p, 3);
		fb_varint(&p, maps[i][0]);
		fb_varint(&p, maps[i][1]);
		fb_varint(&p, 0);
		fb_u8(&p, 5);
		fb_varint(&p, 0);
		fb_record(&r, PROFILE_REC_MAPPING, &p);
	}
	fb_block(f, &r, ARRAY_SIZE(maps), 0, true);
}

/* A block whose header counts other than the records its frame holds: skipped whole. */
static void craft_record_counts(struct fbuild *f)
{
	struct fbuild r = { 0 };

	fb_thread(&r, 40, "all ones", NULL);
	fb_block(f, &r, 0xffffffffu, 0, true);
	fb_thread(&r, 41, "right", NULL);
	fb_block(f, &r, 1, 0, true);
	fb_thread(&r, 42, "one short", NULL);
	fb_thread(&r, 43, "of two", NULL);
	fb_block(f, &r, 1, 0, true);
	fb_thread(&r, 44, "one more", NULL);
	fb_block(f, &r, 2, 0, true);
	fb_block(f, &r, 1, 0, true);	/* none */
	fb_thread(&r, 45, "last", NULL);
	fb_block(f, &r, 1, 0, true);
}

static void fb_lost(struct fbuild *recs, int64_t dt, uint64_t count)
{
	struct fbuild p = { 0 };

	fb_svarint(&p, dt);
	fb_varint(&p, UINT32_MAX);
	fb_varint(&p, count);
	fb_record(recs, PROFILE_REC_LOST, &p);
}

/*
 * Lost counts against what 8192 CPUs at the header's 999 Hz could take in
 * the 10 s the records span and the 2 s of slack: 12 * 8192 * 999 (spelled
 * out in the expected messages).
 */
#define LOST_BOUND 98205696ull

static void craft_lost_counts(struct fbuild *f)
{
	struct fbuild r = { 0 };

	fb_sample(&r, 1000000000, 1, 0, 0, NULL);
	fb_sample(&r, 10000000000, 1, 0, 0, NULL);
	fb_lost(&r, 0, LOST_BOUND - 10);
	fb_lost(&r, 0, UINT64_MAX);	/* the sum would wrap */
	fb_lost(&r, 0, 11);		/* one past the bound with the first */
	fb_lost(&r, 0, 10);		/* the bound itself */
	fb_block(f, &r, 6, 0, true);
}

static void craft_lost_ok(struct fbuild *f)
{
	struct fbuild r = { 0 };

	fb_sample(&r, 1000000000, 1, 0, 0, NULL);
	fb_lost(&r, 10000000000, 3);
	fb_block(f, &r, 2, 0, true);
}

static void craft_malformed_records(struct fbuild *f)
{
	struct fbuild r = { 0 }, p = { 0 };

	fb_svarint(&p, 5);	/* a sample cut after its pid */
	fb_varint(&p, 1);
	fb_record(&r, PROFILE_REC_SAMPLE, &p);
	fb_thread(&r, 11, "after", NULL);
	fb_sample(&r, 5, 1ull << 32, 0, 0, NULL);	/* a pid wider than 32 bits */
	fb_thread(&r, 12, "after2", NULL);
	for (int i = 0; i < 10; i++)	/* a time of 11 varint bytes */
		fb_u8(&p, 0x80);
	fb_u8(&p, 0);
	fb_varint(&p, 1);
	fb_record(&r, PROFILE_REC_EXIT, &p);
	fb_varint(&p, 1);	/* a string longer than its record */
	fb_varint(&p, 2);
	fb_varint(&p, 50);
	fb_put(&p, "short", 5);
	fb_record(&r, PROFILE_REC_THREAD, &p);
	fb_thread(&r, 13, "after3", NULL);
	fb_block(f, &r, 7, 0, true);
}

static void craft_bad_framing(struct fbuild *f)
{
	struct fbuild r = { 0 };

	fb_thread(&r, 20, "before", NULL);
	fb_u8(&r, PROFILE_REC_THREAD);	/* a length past the end of the block */
	fb_varint(&r, 100);
	fb_put(&r, "abc", 3);
	fb_block(f, &r, 2, 0, true);
	fb_thread(&r, 21, "next block", NULL);
	fb_u8(&r, PROFILE_REC_THREAD);	/* a length varint that never ends */
	fb_put(&r, "\xff\xff", 2);
	fb_block(f, &r, 2, 0, true);
	fb_thread(&r, 22, "third block", NULL);
	fb_block(f, &r, 1, 0, true);
}

/* A py_frame record (docs/FORMAT.md): id, line, flags, qualname, file. */
static void fb_py_frame(struct fbuild *recs, uint64_t id, uint64_t line, uint64_t flags,
			const char *qualname, const char *file)
{
	struct fbuild p = { 0 };

	fb_varint(&p, id);
	fb_varint(&p, line);
	fb_varint(&p, flags);
	fb_str(&p, qualname);
	fb_str(&p, file);
	fb_record(recs, PROFILE_REC_PY_FRAME, &p);
}

/* A sample of pid 1 with sample flags @flags and Python frames: a count @depth, then @n ids. */
static void fb_py_sample(struct fbuild *recs, uint64_t flags, uint64_t depth, const uint64_t *ids,
			 size_t n)
{
	struct fbuild p = { 0 };

	fb_svarint(&p, 1);
	fb_varint(&p, 1);
	fb_varint(&p, 2);
	fb_varint(&p, 2);
	fb_varint(&p, 1);
	fb_varint(&p, 0);
	fb_varint(&p, 0);
	fb_varint(&p, 0);	/* event */
	fb_varint(&p, flags);
	fb_varint(&p, depth);
	for (size_t i = 0; i < n; i++)
		fb_varint(&p, ids[i]);
	fb_record(recs, PROFILE_REC_SAMPLE, &p);
}

static void craft_python(struct fbuild *f)
{
	struct fbuild r = { 0 };

	fb_py_frame(&r, 1, 30, 1, "rt_leaf", "/srv/p.py");
	fb_py_frame(&r, 2, 20, 0, "rt_mid", "/srv/p.py");
	fb_py_frame(&r, 2, 99, 0, "again", "x.py");	/* a second definition: the first stands */
	fb_py_sample(&r, 0, 2, (const uint64_t[]){ 1, 2 }, 2);
	/* cut at the cap (flags bit 1) */
	fb_py_sample(&r, 2, 2, (const uint64_t[]){ 1, 2 }, 2);
	/* an id never defined cuts the chain there, and is counted */
	fb_py_sample(&r, 0, 3, (const uint64_t[]){ 1, 7, 2 }, 3);
	/* an id 0 at the innermost: nothing left */
	fb_py_sample(&r, 0, 2, (const uint64_t[]){ 0, 1 }, 2);
	/* the cut bit with no frames: no chain */
	fb_py_sample(&r, 2, 0, NULL, 0);
	fb_block(f, &r, 8, 0, true);
}

static void craft_python_malformed(struct fbuild *f)
{
	struct fbuild r = { 0 };
	uint64_t ids[PROFILE_PY_MAX_DEPTH + 1];

	for (size_t i = 0; i < PROFILE_PY_MAX_DEPTH + 1; i++)
		ids[i] = 1;
	fb_py_frame(&r, 0, 1, 0, "zero", "z.py");	/* id 0 */
	fb_py_frame(&r, 1, 1, 0, "ok", "ok.py");
	/* more frames than a sample may hold */
	fb_py_sample(&r, 0, PROFILE_PY_MAX_DEPTH + 1, ids, PROFILE_PY_MAX_DEPTH + 1);
	/* a count past the record's end */
	fb_py_sample(&r, 0, 3, ids, 2);
	/* an id wider than 32 bits */
	fb_py_sample(&r, 0, 1, (const uint64_t[]){ 1ull << 32 }, 1);
	fb_thread(&r, 40, "after", NULL);
	fb_block(f, &r, 6, 0, true);
}

/* CBF bytes end in 0x00 (`end`): a string literal's length, not strlen() */
#define fb_stack(r, id, space, lit) fb_stack_n(r, id, space, lit, sizeof(lit) - 1)

static void craft_stacks(struct fbuild *f)
{
	struct fbuild r = { 0 };

	fb_stack(&r, 1, PROFILE_USER, "\x03\x21\x10\x00");
	fb_stack(&r, 2, PROFILE_KERNEL, "\x03\x28\xff\x00");
	fb_sample(&r, 1, 1, 1, 2, NULL);
	fb_sample(&r, 1, 1, 2, 1, NULL);	/* each used in the other space */
	fb_sample(&r, 1, 1, 7, 0, NULL);	/* never defined */
	fb_stack(&r, 1, PROFILE_USER, "\x03\x21\x99\x00");	/* a second definition */
	fb_stack(&r, 3, PROFILE_USER, "");
	fb_sample(&r, 1, 1, 1, 0, NULL);
	fb_sample(&r, 1, 1, 3, 0, NULL);
	fb_block(f, &r, 9, 0, true);
}

static void craft_bad_blocks(struct fbuild *f)
{
	struct fbuild r = { 0 };

	fb_thread(&r, 30, "sizes differ", NULL);
	fb_block(f, &r, 1, 1000, true);	/* says 1000 bytes, holds fewer */
	fb_thread(&r, 31, "ok", NULL);
	fb_block(f, &r, 1, 0, true);
	fb_thread(&r, 32, "huge", NULL);
	fb_block(f, &r, 1, 100u << 20, true);	/* says 100 MiB */
	fb_thread(&r, 33, "ok again", NULL);
	fb_block(f, &r, 1, 0, true);
	fb_block(f, &r, 0, 0, true);	/* no records at all */
	fb_thread(&r, 34, "after empty", NULL);
	fb_block(f, &r, 1, 0, true);
}

struct crafted_case {
	const char *name;
	void (*build)(struct fbuild *f);
	const char *want[12];	/* the records as fmt_record() prints them */
	uint64_t blocks, bad_blocks, unknown_stacks;
	const char *error;	/* in first_error; "" for none */
	struct trailer_counts trailer;	/* what the writer counted */
	uint64_t lost;		/* in the status */
	bool lost_implausible;
};

static const struct crafted_case crafted_cases[] = {
	{ "unknown record types", craft_unknown_types,
	  { "sample t=100 pid=5 tid=6 cpu=2 weight=1 user=0:- kernel=0:-" }, 1, 0, 0, "",
	  { .samples = 1, .blocks = 1, .first = 100, .last = 100 }, 0, false },
	{ "new fields at the end of records", craft_new_fields,
	  { "process pid=9 ppid=1 comm=\"app\" exe=\"/bin/app\" pid_ns=11 mnt_ns=12 ns_pid=13",
	    "thread pid=7 tid=10 comm=\"t\"",
	    "sample t=1000 pid=9 tid=10 cpu=2 weight=1 user=0:- kernel=0:-",
	    "exit t=1001 pid=9" }, 1, 0, 0, "",
	  { .samples = 1, .blocks = 1, .first = 1000, .last = 1000, .processes = 1 }, 0, false },
	{ "times", craft_times,
	  { "sample t=100 pid=1 tid=2 cpu=2 weight=1 user=0:- kernel=0:-",
	    "sample t=70 pid=1 tid=2 cpu=2 weight=1 user=0:- kernel=0:-",
	    "lost t=0 cpu=3 count=4",
	    "sample t=50 pid=1 tid=2 cpu=2 weight=1 user=0:- kernel=0:-" }, 2, 0, 0, "",
	  { .samples = 3, .lost = 4, .blocks = 2, .first = 50, .last = 100 }, 4, false },
	{ "times below 0 or past INT64_MAX", craft_bad_times,
	  { "sample t=50 pid=1 tid=2 cpu=2 weight=1 user=0:- kernel=0:-",
	    "sample t=9223372036854775807 pid=1 tid=2 cpu=2 weight=1 user=0:- kernel=0:-",
	    "sample t=0 pid=1 tid=2 cpu=2 weight=1 user=0:- kernel=0:-" }, 1, 0, 0,
	  "malformed record of type 9", { .samples = 7, .blocks = 1 }, 0, false },
	{ "empty and wrapping mappings", craft_bad_mappings,
	  { "mapping pid=3 0xfffffffffffff000-0xffffffffffffffff off=0 prot=5 module=0",
	    "mapping pid=3 0-0xffffffffffffffff off=0 prot=5 module=0" }, 1, 0, 0,
	  "malformed record of type 4", { .blocks = 1 }, 0, false },
	{ "record counts", craft_record_counts,
	  { "thread pid=7 tid=41 comm=\"right\"",
	    "thread pid=7 tid=45 comm=\"last\"" }, 2, 4, 0,
	  "claims 4294967295 records but holds 1", { .blocks = 6 }, 0, false },
	{ "lost counts", craft_lost_counts,
	  { "sample t=1000000000 pid=1 tid=2 cpu=2 weight=1 user=0:- kernel=0:-",
	    "sample t=11000000000 pid=1 tid=2 cpu=2 weight=1 user=0:- kernel=0:-",
	    "lost t=11000000000 cpu=4294967295 count=98205686",
	    "lost t=11000000000 cpu=4294967295 count=10" }, 1, 0, 0,
	  "a lost record counts 18446744073709551615 samples",
	  { .samples = 2, .lost = LOST_BOUND, .blocks = 1, .first = 1000000000,
	    .last = 11000000000 }, LOST_BOUND, true },
	{ "a trailer's lost count no recording reaches", craft_lost_ok,
	  { "sample t=1000000000 pid=1 tid=2 cpu=2 weight=1 user=0:- kernel=0:-",
	    "lost t=11000000000 cpu=4294967295 count=3" }, 1, 0, 0,
	  "the trailer counts 18446744073709551615 lost samples",
	  { .samples = 1, .lost = UINT64_MAX, .blocks = 1, .first = 1000000000,
	    .last = 1000000000 }, 3, true },
	{ "a trailer's lost count just within reach", craft_lost_ok,
	  { "sample t=1000000000 pid=1 tid=2 cpu=2 weight=1 user=0:- kernel=0:-",
	    "lost t=11000000000 cpu=4294967295 count=3" }, 1, 0, 0,
	  "the trailer counts 98205696 lost samples but the blocks hold 3",
	  { .samples = 1, .lost = LOST_BOUND, .blocks = 1, .first = 1000000000,
	    .last = 1000000000 }, LOST_BOUND, false },
	{ "trailer counts the blocks do not hold", craft_new_fields,
	  { "process pid=9 ppid=1 comm=\"app\" exe=\"/bin/app\" pid_ns=11 mnt_ns=12 ns_pid=13",
	    "thread pid=7 tid=10 comm=\"t\"",
	    "sample t=1000 pid=9 tid=10 cpu=2 weight=1 user=0:- kernel=0:-",
	    "exit t=1001 pid=9" }, 1, 0, 0, "the trailer counts 2 samples but the blocks hold 1",
	  { .samples = 2, .blocks = 1, .first = 1000, .last = 1000, .processes = 1 }, 0, false },
	{ "malformed records", craft_malformed_records,
	  { "thread pid=7 tid=11 comm=\"after\"",
	    "thread pid=7 tid=12 comm=\"after2\"",
	    "thread pid=7 tid=13 comm=\"after3\"" }, 1, 0, 0, "malformed record of type 6", { 0 }, 0, false },
	{ "bad record framing", craft_bad_framing,
	  { "thread pid=7 tid=20 comm=\"before\"",
	    "thread pid=7 tid=21 comm=\"next block\"",
	    "thread pid=7 tid=22 comm=\"third block\"" }, 3, 0, 0, "malformed record framing", { 0 }, 0, false },
	{ "stack ids", craft_stacks,
	  { "stack id=1 space=0 cbf=03211000",
	    "stack id=2 space=1 cbf=0328ff00",
	    "sample t=1 pid=1 tid=2 cpu=2 weight=1 user=1:03211000 kernel=2:0328ff00",
	    "sample t=2 pid=1 tid=2 cpu=2 weight=1 user=2:- kernel=1:-",
	    "sample t=3 pid=1 tid=2 cpu=2 weight=1 user=7:- kernel=0:-",
	    "stack id=1 space=0 cbf=03219900",
	    "stack id=3 space=0 cbf=",
	    "sample t=4 pid=1 tid=2 cpu=2 weight=1 user=1:03211000 kernel=0:-",
	    "sample t=5 pid=1 tid=2 cpu=2 weight=1 user=3: kernel=0:-" }, 1, 0, 3, "",
	  { .samples = 5, .blocks = 1, .first = 1, .last = 5, .stacks = 4 }, 0, false },
	{ "python frames", craft_python,
	  { "py_frame id=1 line=30 flags=1 qualname=\"rt_leaf\" file=\"/srv/p.py\"",
	    "py_frame id=2 line=20 flags=0 qualname=\"rt_mid\" file=\"/srv/p.py\"",
	    "py_frame id=2 line=99 flags=0 qualname=\"again\" file=\"x.py\"",
	    "sample t=1 pid=1 tid=2 cpu=2 weight=1 user=0:- kernel=0:- python=1,2",
	    "sample t=2 pid=1 tid=2 cpu=2 weight=1 user=0:- kernel=0:- python=1,2 py_truncated",
	    "sample t=3 pid=1 tid=2 cpu=2 weight=1 user=0:- kernel=0:- python=1 py_truncated",
	    "sample t=4 pid=1 tid=2 cpu=2 weight=1 user=0:- kernel=0:-",
	    "sample t=5 pid=1 tid=2 cpu=2 weight=1 user=0:- kernel=0:-" }, 1, 0, 0, "",
	  { .samples = 5, .blocks = 1, .first = 1, .last = 5 }, 0, false },
	{ "malformed python frames", craft_python_malformed,
	  { "py_frame id=1 line=1 flags=0 qualname=\"ok\" file=\"ok.py\"",
	    "thread pid=7 tid=40 comm=\"after\"" }, 1, 0, 0, "malformed record of type 12",
	  { .blocks = 1 }, 0, false },
	{ "damaged and odd blocks", craft_bad_blocks,
	  { "thread pid=7 tid=31 comm=\"ok\"",
	    "thread pid=7 tid=33 comm=\"ok again\"",
	    "thread pid=7 tid=34 comm=\"after empty\"" }, 4, 2, 0, "size mismatch", { 0 }, 0, false },
};

static void test_crafted_records(void **state)
{
	char *path = path_join_or_fail(*state, "crafted.data");

	for (size_t i = 0; i < ARRAY_SIZE(crafted_cases); i++) {
		const struct crafted_case *c = &crafted_cases[i];
		struct profile_diag diag = { "" };
		struct fbuild f = { 0 };
		struct lines want = { 0 };
		struct readout out;

		print_message("crafted: %s\n", c->name);
		fb_header(&f, NULL, 0, true);
		c->build(&f);
		fb_trailer(&f, &c->trailer);
		write_file_or_fail(path, f.p, f.len);
		free(f.p);
		if (read_profile(path, &out, &diag, NULL))
			fail_msg("%s: %s", c->name, diag.reason);
		for (size_t k = 0; k < ARRAY_SIZE(c->want) && c->want[k]; k++)
			lines_add(&want, dup_str(c->want[k]));
		assert_lines_equal(&out.lines, &want, c->name);
		if (out.st.blocks != c->blocks || out.st.bad_blocks != c->bad_blocks ||
		    out.st.unknown_stacks != c->unknown_stacks || !out.st.has_trailer ||
		    out.next_err || !strstr(out.st.first_error, c->error) ||
		    (!c->error[0] && out.st.first_error[0]) || out.st.lost != c->lost ||
		    out.st.lost_implausible != c->lost_implausible)
			fail_msg("%s: blocks %llu (want %llu), bad_blocks %llu (want %llu), "
				 "unknown_stacks %llu (want %llu), has_trailer %d, next %d, "
				 "lost %llu%s (want %llu%s), "
				 "first_error \"%s\" (want \"%s\")", c->name,
				 (unsigned long long)out.st.blocks, (unsigned long long)c->blocks,
				 (unsigned long long)out.st.bad_blocks,
				 (unsigned long long)c->bad_blocks,
				 (unsigned long long)out.st.unknown_stacks,
				 (unsigned long long)c->unknown_stacks, out.st.has_trailer,
				 out.next_err, (unsigned long long)out.st.lost,
				 out.st.lost_implausible ? " implausible" : "",
				 (unsigned long long)c->lost, c->lost_implausible ? " implausible" : "",
				 out.st.first_error, c->error);
		lines_free(&want);
		readout_free(&out);
	}
	free(path);
}

struct crafted_header_case {
	const char *name;
	struct hdr_field fields[6];
	size_t nfields;
	bool end_tag;
	const char *host, *release, *machine, *cmdline;
};

static const struct crafted_header_case crafted_header_cases[] = {
	{ "unknown tags are skipped", { { 9, "future" }, { 1, "h" }, { 200, "" }, { 4, "cmd" } },
	  4, true, "h", NULL, NULL, "cmd" },
	{ "a repeated tag keeps the first", { { 3, "x86_64" }, { 3, "aarch64" } }, 2, true,
	  NULL, NULL, "x86_64", NULL },
	{ "no end tag", { { 2, "6.1" } }, 1, false, NULL, "6.1", NULL, NULL },
	{ "no fields", { { 0, "" } }, 0, true, NULL, NULL, NULL, NULL },
};

static void test_crafted_header(void **state)
{
	char *path = path_join_or_fail(*state, "crafted.data");

	for (size_t i = 0; i < ARRAY_SIZE(crafted_header_cases); i++) {
		const struct crafted_header_case *c = &crafted_header_cases[i];
		struct profile_diag diag = { "" };
		struct profile_meta meta;
		struct fbuild f = { 0 }, r = { 0 };
		struct readout out;

		print_message("crafted header: %s\n", c->name);
		fb_header(&f, c->fields, c->nfields, c->end_tag);
		fb_thread(&r, 1, "x", NULL);
		fb_block(&f, &r, 1, 0, true);
		fb_trailer(&f, &(struct trailer_counts){ .blocks = 1 });
		write_file_or_fail(path, f.p, f.len);
		free(f.p);
		if (read_profile(path, &out, &diag, &meta))
			fail_msg("%s: %s", c->name, diag.reason);
		assert_int_equal(out.lines.n, 1);
		assert_int_equal(meta.flags, PROFILE_F_SYSTEM_WIDE);
		assert_int_equal(meta.created_ns, 1700000000000000000ull);
		assert_int_equal(meta.freq_hz, 999);
		assert_int_equal(meta.stack_size, 8192);
		assert_int_equal(meta.clock_offset_ns, 42);
		assert_meta_str(meta.host, c->host, "host");
		assert_meta_str(meta.release, c->release, "release");
		assert_meta_str(meta.machine, c->machine, "machine");
		assert_meta_str(meta.cmdline, c->cmdline, "cmdline");
		meta_free(&meta);
		readout_free(&out);
	}
	free(path);
}

/* ---- a full disk ---- */

/* What the child writing onto a full disk saw. */
struct limited_result {
	bool skipped;		/* no tmpfs could be mounted */
	char skip_why[128];
	bool created;
	int create_errno;
	int first_err;		/* the first writer call that failed */
	size_t failed_op;
	int close_err;
	char reason[256];
};

enum full_how {
	FULL_FSIZE,	/* RLIMIT_FSIZE with SIGXFSZ ignored: write() fails with EFBIG */
	FULL_TMPFS,	/* a tmpfs of that size in a mount namespace: ENOSPC */
};

/* Write "0 <id> 1" to @file: root in a new user namespace is the caller outside. */
static int write_id_map(const char *file, unsigned id)
{
	char line[64];
	int fd = open(file, O_WRONLY | O_CLOEXEC), n, ok;

	if (fd < 0)
		return -1;
	n = snprintf(line, sizeof(line), "0 %u 1\n", id);
	ok = write(fd, line, n) == n;
	close(fd);
	return ok ? 0 : -1;
}

/* In the child: a @size-byte tmpfs at @mnt, seen by this process alone. */
static int mount_tmpfs(const char *mnt, uint64_t size, char *why, size_t why_len)
{
	unsigned uid = getuid(), gid = getgid();
	char opts[64];
	int fd;

	if (unshare(CLONE_NEWNS)) {
		/* not privileged: a user namespace of our own grants it */
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS)) {
			snprintf(why, why_len, "unshare: %s", strerror(errno));
			return -1;
		}
		fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (write(fd, "deny", 4) != 4)
				why[0] = '\0';
			close(fd);
		}
		if (write_id_map("/proc/self/uid_map", uid) ||
		    write_id_map("/proc/self/gid_map", gid)) {
			snprintf(why, why_len, "uid_map: %s", strerror(errno));
			return -1;
		}
	}
	snprintf(opts, sizeof(opts), "size=%llu", (unsigned long long)size);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", mnt, "tmpfs", 0, opts)) {
		snprintf(why, why_len, "mount tmpfs: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int copy_file(const char *from, const char *to)
{
	uint8_t buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n = 0;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	while (out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			n = -1;
	close(in);
	if (out >= 0)
		close(out);
	return out < 0 || n < 0 ? -1 : 0;
}

/*
 * Write @g's ops to @path from a child that can store only @limit bytes: by
 * RLIMIT_FSIZE, or on a tmpfs of that size (whose file the child then copies
 * to @path, since only it sees the mount).
 */
static void write_limited(const char *path, const struct gen *g, uint64_t limit,
			  enum full_how how, struct limited_result *res)
{
	int fds[2], status;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct profile_diag diag = { "" };
		struct limited_result r = { 0 };
		struct profile_writer *w;
		struct model m = { 0 };
		char mnt[4096], target[4096 + 16];
		const char *out = path;

		close(fds[0]);
		if (how == FULL_FSIZE) {
			struct rlimit rl;

			signal(SIGXFSZ, SIG_IGN);
			getrlimit(RLIMIT_FSIZE, &rl);
			rl.rlim_cur = limit;
			if (setrlimit(RLIMIT_FSIZE, &rl))
				_exit(2);
		} else {
			snprintf(mnt, sizeof(mnt), "%s.mnt", path);
			snprintf(target, sizeof(target), "%s/p.data", mnt);
			out = target;
			if (mkdir(mnt, 0700) ||
			    mount_tmpfs(mnt, limit, r.skip_why, sizeof(r.skip_why))) {
				r.skipped = true;
				goto report;
			}
		}
		w = profile_writer__create(out, &plain_meta, &diag);
		if (!w) {
			r.create_errno = errno;
			snprintf(r.reason, sizeof(r.reason), "%s", diag.reason);
		} else {
			r.created = true;
			for (size_t i = 0; i < g->n && !r.first_err; i++) {
				r.first_err = apply(w, &m, &g->ops[i]);
				r.failed_op = i;
			}
			r.close_err = profile_writer__close(w, false, &diag);
			snprintf(r.reason, sizeof(r.reason), "%s", diag.reason);
		}
		if (how == FULL_TMPFS && r.created && copy_file(out, path))
			_exit(4);
report:
		if (write(fds[1], &r, sizeof(r)) != sizeof(r))
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], res, sizeof(*res)), sizeof(*res));
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (how == FULL_TMPFS) {
		char *mnt;

		if (asprintf(&mnt, "%s.mnt", path) < 0)
			fail_msg("out of memory");
		rmdir(mnt);	/* the tmpfs went with the child's namespace */
		free(mnt);
	}
}

enum limit_at { AT_BLOCK_START, AT_BLOCK_END, AT_TRAILER };

struct full_disk_case {
	const char *name;
	enum limit_at at;
	int block;		/* negative: from the last block */
	int64_t delta;
};

static const struct full_disk_case full_disk_cases[] = {
	{ "inside block 0", AT_BLOCK_END, 0, -7 },
	{ "just past block 2", AT_BLOCK_END, 2, 1 },
	{ "at the end of block 3", AT_BLOCK_END, 3, 0 },
	{ "in the header of block 5", AT_BLOCK_START, 5, 5 },
	{ "inside the last block", AT_BLOCK_END, -1, -1 },
	{ "inside the trailer", AT_TRAILER, 0, 30 },
	{ "at the start of the trailer", AT_TRAILER, 0, 0 },
};

/* Where a full-disk case puts the limit in @l. */
static uint64_t case_limit(const struct layout *l, const struct full_disk_case *c)
{
	const struct block_info *b = &l->blocks[c->block < 0 ? (int)l->nblocks + c->block : c->block];

	if (c->at == AT_TRAILER)
		return l->trailer_off + c->delta;
	return (c->at == AT_BLOCK_START ? b->off : b->end) + c->delta;
}

/*
 * Fill the disk at @limit bytes: the writer must leave every block written
 * before that readable, and say why it stopped.
 */
static void check_full_disk(const char *dir, const struct recording *rec, enum full_how how,
			    uint64_t limit, const char *name)
{
	char *lim = path_join_or_fail(dir, "lim");
	const int want_err = how == FULL_FSIZE ? -EFBIG : -ENOSPC;
	const struct layout *l = &rec->layout;
	struct profile_diag diag = { "" };
	struct limited_result res;
	struct lines want = { 0 };
	size_t blocks, records;
	struct readout out;
	uint64_t end;
	uint8_t *data;
	size_t len;

	unlink(lim);
	write_limited(lim, &rec->gen, limit, how, &res);
	if (res.skipped) {
		print_message("full tmpfs: skipped (%s)\n", res.skip_why);
		free(lim);
		skip();
	}
	assert_true(res.created);
	/* the last block and the trailer are written by close() */
	if (res.first_err && res.first_err != want_err)
		fail_msg("%s: op %zu failed with %d, want %d", name, res.failed_op, res.first_err,
			 want_err);
	if (res.close_err != want_err)
		fail_msg("%s, %llu bytes: close gave %d, want %d (%s)", name,
			 (unsigned long long)limit, res.close_err, want_err, res.reason);
	assert_true(strstr(res.reason, "lim") || strstr(res.reason, "p.data"));

	data = read_file_or_fail(lim, &len);
	assert_true(len <= limit);
	/* what is on disk is the unlimited file's blocks, up to the last that fit */
	end = whole_before(l, limit, &blocks, &records);
	if (len != end)
		fail_msg("%s: %zu bytes on disk, want the %llu of the whole blocks", name, len,
			 (unsigned long long)end);
	assert_memory_equal(data, rec->data, len);
	free(data);
	if (read_profile(lim, &out, &diag, NULL))
		fail_msg("%s: %s", name, diag.reason);
	model_lines(&rec->model, records, &want);
	assert_lines_equal(&out.lines, &want, name);
	assert_true(out.st.truncated);
	assert_false(out.st.has_trailer);
	assert_int_equal(out.st.blocks, blocks);
	assert_int_equal(out.st.bytes_recovered, end);
	assert_int_equal(out.st.bad_blocks, 0);
	if (how == FULL_TMPFS)
		print_message("full tmpfs of %llu bytes: %zu of %zu blocks kept\n",
			      (unsigned long long)limit, blocks, l->nblocks);
	lines_free(&want);
	readout_free(&out);
	unlink(lim);
	free(lim);
}

static void test_full_disk(void **state)
{
	char *path = path_join_or_fail(*state, "gen.data"), *lim = path_join_or_fail(*state, "lim");
	struct limited_result res;
	struct recording rec;

	record_file(path, &rec, 9, 2000);
	for (size_t i = 0; i < ARRAY_SIZE(full_disk_cases); i++)
		check_full_disk(*state, &rec, FULL_FSIZE, case_limit(&rec.layout, &full_disk_cases[i]),
				full_disk_cases[i].name);

	/* not even the header fits: nothing is left behind */
	unlink(lim);
	write_limited(lim, &rec.gen, 20, FULL_FSIZE, &res);
	assert_false(res.created);
	assert_int_equal(res.create_errno, EFBIG);
	assert_non_null(strstr(res.reason, lim));
	assert_int_equal(access(lim, F_OK), -1);
	free(lim);
	recording_free(&rec);
	free(path);
}

/* A real ENOSPC, from a small tmpfs; skipped where no mount namespace can be made. */
static void test_full_tmpfs(void **state)
{
	static const unsigned percent[] = { 5, 30, 55, 80, 100 };
	char *path = path_join_or_fail(*state, "gen.data");
	struct recording rec;

	record_file(path, &rec, 10, 12000);
	for (size_t i = 0; i < ARRAY_SIZE(percent); i++) {
		/* a tmpfs holds whole pages; the last case cuts into the trailer's page */
		uint64_t limit = (rec.len * percent[i] / 100 - 1) & ~4095ull;
		char name[64];

		snprintf(name, sizeof(name), "tmpfs at %u%% of the file", percent[i]);
		check_full_disk(*state, &rec, FULL_TMPFS, limit, name);
	}
	recording_free(&rec);
	free(path);
}

/* ---- the bound on the writer's stack index ---- */

#define BOUND_USTACKS 100
#define BOUND_KSTACKS 7

struct bound_stacks {
	uint8_t *cbf[BOUND_USTACKS + BOUND_KSTACKS];	/* user stacks, then kernel stacks */
	size_t len[BOUND_USTACKS + BOUND_KSTACKS];
	size_t key_bytes;	/* of them all in the index: a space byte and the CBF */
	size_t max_key;		/* of the largest */
};

/* Distinct stacks of 1 to 8 frames. */
static void bound_stacks_init(struct bound_stacks *s)
{
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < ARRAY_SIZE(s->cbf); i++) {
		bool kernel = i >= BOUND_USTACKS;
		size_t depth = 1 + i % 8;
		uint64_t addrs[8];
		struct sfu_cbf_enc enc;

		for (size_t j = 0; j < depth; j++)
			addrs[j] = (kernel ? 0xffffffff81000000ull : 0x55d0c0de0000ull) + i * 0x100 +
				   j * 0x10;
		s->cbf[i] = malloc(SFU_CBF_BOUND(depth));
		assert_non_null(s->cbf[i]);
		assert_int_equal(sfu_cbf_enc__init(&enc, 64, s->cbf[i], SFU_CBF_BOUND(depth)), 0);
		assert_int_equal(sfu_cbf_encode_stack(&enc, addrs, depth, 0, false), 0);
		s->len[i] = sfu_cbf_enc__len(&enc);
		s->key_bytes += s->len[i] + 1;
		if (s->len[i] + 1 > s->max_key)
			s->max_key = s->len[i] + 1;
	}
}

static void bound_stacks_free(struct bound_stacks *s)
{
	for (size_t i = 0; i < ARRAY_SIZE(s->cbf); i++)
		free(s->cbf[i]);
}

/*
 * profile_writer__set_stack_bound(): past the bound the index starts again,
 * and a stack seen before is written again under a new id, ids counting on.
 * Whatever the bound, every sample reads back with its stacks' bytes, every
 * id in the file names one stack, and the trailer counts the stack records.
 */
static void test_stack_bound(void **state)
{
	enum { NONE, ALL, HALF, SMALL, TINY };
	static const struct {
		const char *name;
		int bound;
		size_t cycles;
		bool resets;	/* the index must start again */
	} cases[] = {
		{ "no bound", NONE, 10, false },
		{ "a bound that holds every stack", ALL, 10, false },
		{ "a bound of half of what every stack takes", HALF, 10, true },
		{ "a bound of a few stacks", SMALL, 10, true },
		{ "a bound below one stack", TINY, 3, true },
	};
	struct bound_stacks s;
	size_t all = 0;	/* what the index holds with every stack: measured with no bound */

	bound_stacks_init(&s);
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		const size_t bounds[] = { [NONE] = 0, [ALL] = all, [HALF] = all / 2,
					  [SMALL] = 512, [TINY] = 4 };
		char *path = path_join_or_fail(*state, "bound.data");
		struct profile_diag diag = { "" };
		struct profile_writer *w = profile_writer__create(path, &plain_meta, &diag);
		uint32_t first_id = 0, last_id = 0, ids_of[ARRAY_SIZE(s.cbf)] = { 0 };
		size_t stack_records = 0, samples = 0, nsamples = cases[c].cycles * BOUND_USTACKS;
		size_t bound = bounds[cases[c].bound], written = 0;
		struct profile_record rec;
		struct profile_reader *r;
		struct layout l;
		uint64_t resets;
		uint8_t *data;
		size_t len;
		int ret;

		print_message("%s\n", cases[c].name);
		assert_non_null(w);
		profile_writer__set_stack_bound(w, bound);
		/* an id given before any reset stays good for a sample that names it */
		assert_int_equal(profile_writer__stack(w, PROFILE_USER, s.cbf[0], s.len[0], &first_id),
				 0);
		for (size_t i = 0; i < nsamples; i++) {
			size_t u = i % BOUND_USTACKS, k = BOUND_USTACKS + i % BOUND_KSTACKS;
			struct profile_sample smp = {
				.time_ns = 1000 + i, .pid = 1, .tid = 1, .weight = 1,
				.ustack = s.cbf[u], .ustack_len = s.len[u],
				.kstack = s.cbf[k], .kstack_len = s.len[k],
			};

			assert_int_equal(profile_writer__sample(w, &smp), 0);
		}
		assert_int_equal(profile_writer__sample(w, &(struct profile_sample){
			.time_ns = 1000 + nsamples, .pid = 1, .tid = 1, .weight = 1,
			.ustack_id = first_id }), 0);
		resets = profile_writer__stack_resets(w);
		if (cases[c].bound == NONE) {
			all = profile_writer__stack_memory(w);
			/* slots and key copies: more than the keys alone */
			assert_true(all > s.key_bytes);
		} else if (!cases[c].resets) {
			assert_true(profile_writer__stack_memory(w) <= bound);
		}
		if (cases[c].resets != (resets > 0))
			fail_msg("%s: %llu resets", cases[c].name, (unsigned long long)resets);
		assert_int_equal(profile_writer__close(w, false, &diag), 0);

		r = profile_reader__open(path, &diag);
		assert_non_null(r);
		while ((ret = profile_reader__next(r, &rec)) > 0) {
			size_t i, u, k;

			if (rec.type == PROFILE_REC_STACK) {
				/* ids count on from 1: each names one stack */
				assert_int_equal(rec.stack.id, last_id + 1);
				last_id = rec.stack.id;
				stack_records++;
				written += rec.stack.len + 1;
				continue;
			}
			if (rec.type != PROFILE_REC_SAMPLE)
				continue;
			i = rec.sample.time_ns - 1000;
			assert_int_equal(i, samples++);
			if (i == nsamples) {
				assert_int_equal(rec.sample.ustack_id, first_id);
				assert_bytes_equal(rec.sample.ustack, rec.sample.ustack_len, s.cbf[0],
						   s.len[0]);
				continue;
			}
			u = i % BOUND_USTACKS;
			k = BOUND_USTACKS + i % BOUND_KSTACKS;
			assert_bytes_equal(rec.sample.ustack, rec.sample.ustack_len, s.cbf[u],
					   s.len[u]);
			assert_bytes_equal(rec.sample.kstack, rec.sample.kstack_len, s.cbf[k],
					   s.len[k]);
			/* a stack written again has a new id, never an older one */
			assert_true(rec.sample.ustack_id >= ids_of[u]);
			assert_true(rec.sample.kstack_id >= ids_of[k]);
			ids_of[u] = rec.sample.ustack_id;
			ids_of[k] = rec.sample.kstack_id;
		}
		assert_int_equal(ret, 0);
		assert_int_equal(samples, nsamples + 1);
		assert_int_equal(profile_reader__status(r)->unknown_stacks, 0);
		profile_reader__free(r);

		data = read_file_or_fail(path, &len);
		parse_layout(data, len, &l);
		print_message("  %llu resets, %zu stack records\n", (unsigned long long)resets,
			      stack_records);
		assert_int_equal(le32(l.trailer + 52), stack_records);
		if (!cases[c].resets) {
			/* each stack once */
			assert_int_equal(stack_records, ARRAY_SIZE(s.cbf));
		} else {
			/* written again after a reset, at most once each per reset */
			assert_true(stack_records > ARRAY_SIZE(s.cbf));
			assert_true(stack_records <= ARRAY_SIZE(s.cbf) * (resets + 1));
			/*
			 * Between two resets the index holds what was written,
			 * and more (its slots): at most the bound's worth of
			 * keys, or one stack larger than it.
			 */
			assert_true(written <= (resets + 1) * (bound > s.max_key ? bound : s.max_key));
		}
		free(l.blocks);
		free(data);
		unlink(path);
		free(path);
	}
	bound_stacks_free(&s);
}

/*
 * A module without a build ID (the vDSO, a stripped or anonymous mapping) and
 * without a path, given as NULL pointers. Last in the list: the sanitizer
 * build stops at the first undefined behaviour.
 */
static const struct profile_record ops_null_module[] = {
	REC(MODULE, module, .file_size = 0, .build_id = NULL, .build_id_len = 0, .path = NULL),
	REC(MODULE, module, .file_size = 8192, .build_id = NULL, .build_id_len = 0,
	    .path = "[vdso]"),
	REC(MAPPING, mapping, .pid = 1, .start = 0x7ffc1000, .end = 0x7ffc3000, .prot = 5,
	    .module_id = 2),
};

static void test_module_without_build_id(void **state)
{
	char *path = path_join_or_fail(*state, "vdso.data");
	struct model m = { 0 };

	write_ops(path, &plain_meta, ops_null_module, ARRAY_SIZE(ops_null_module), false, &m);
	check_whole(path, &m, false, &plain_meta);
	model_free(&m);
	free(path);
}

/* Event records and the samples that name them; samples of the default event keep their old bytes. */
static void test_events(void **state)
{
	char *path = path_join_or_fail(*state, "events.data");
	struct profile_diag diag = { "" };
	struct profile_writer *w = profile_writer__create(path, &plain_meta, &diag);
	struct profile_event faults = { .type = 1, .config = 2, .period = 1, .name = "page-faults" };
	struct profile_event off = { .type = PROFILE_EV_OFF_CPU, .flags = PROFILE_EV_F_WEIGHT_NS,
				     .name = "offcpu-time" };
	uint32_t id1 = 0, id2 = 0, nsamples = 0, nevents = 0;
	struct profile_reader *r;
	struct profile_record rec;

	assert_non_null(w);
	assert_int_equal(profile_writer__event(w, &faults, &id1), 0);
	assert_int_equal(profile_writer__event(w, &off, &id2), 0);
	assert_int_equal(id1, 1);
	assert_int_equal(id2, 2);
	assert_int_equal(profile_writer__sample(w, &(struct profile_sample){
		.time_ns = 10, .pid = 1, .tid = 1, .weight = 1 }), 0);
	assert_int_equal(profile_writer__sample(w, &(struct profile_sample){
		.time_ns = 11, .pid = 1, .tid = 1, .weight = 1, .event = id1 }), 0);
	assert_int_equal(profile_writer__sample(w, &(struct profile_sample){
		.time_ns = 12, .pid = 1, .tid = 1, .weight = 123456789, .event = id2 }), 0);
	assert_int_equal(profile_writer__close(w, false, &diag), 0);

	r = profile_reader__open(path, &diag);
	assert_non_null(r);
	while (profile_reader__next(r, &rec) > 0) {
		if (rec.type == PROFILE_REC_EVENT) {
			const struct profile_event *want = nevents++ ? &off : &faults;

			assert_int_equal(rec.event.id, nevents);
			assert_int_equal(rec.event.type, want->type);
			assert_int_equal(rec.event.config, want->config);
			assert_int_equal(rec.event.period, want->period);
			assert_int_equal(rec.event.flags, want->flags);
			assert_string_equal(rec.event.name, want->name);
		} else if (rec.type == PROFILE_REC_SAMPLE) {
			static const uint32_t want_event[] = { 0, 1, 2 };

			assert_true(nsamples < 3);
			assert_int_equal(rec.sample.event, want_event[nsamples]);
			nsamples++;
		}
	}
	assert_int_equal(nevents, 2);
	assert_int_equal(nsamples, 3);
	assert_false(profile_status_damaged(profile_reader__status(r)));
	profile_reader__free(r);
	free(path);
}

/*
 * Python frames through the writer and back: interned by content (flags
 * included), ids from 1, a sample's chain in order with its cut flag, the
 * deepest chain allowed, and what is refused. Past the index's bound a frame
 * comes again under a new id, and every id still names its content.
 */
/* The process record's trailing fields: cgroup, then script (cgroup written empty when only the script is known). */
static void test_process_script(void **state)
{
	static const struct { const char *cgroup, *script; } want[] = {
		{ "", "" }, { "/user.slice", "" }, { "", "/srv/app.py" },
		{ "/system.slice/x.service", "-m gunicorn" }, { NULL, "tool" },
	};
	char *path = path_join_or_fail(*state, "script.data");
	struct profile_diag diag = { "" };
	struct profile_writer *w = profile_writer__create(path, &plain_meta, &diag);
	struct profile_reader *r;
	struct profile_record rec;
	size_t n = 0;

	assert_non_null(w);
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		assert_int_equal(profile_writer__process(w, &(struct profile_process){
			.pid = 10 + i, .comm = "python3", .exe = "/usr/bin/python3.11",
			.cgroup = want[i].cgroup, .script = want[i].script }), 0);
	assert_int_equal(profile_writer__close(w, false, &diag), 0);
	r = profile_reader__open(path, &diag);
	assert_non_null(r);
	while (profile_reader__next(r, &rec) > 0) {
		if (rec.type != PROFILE_REC_PROCESS)
			continue;
		assert_true(n < ARRAY_SIZE(want));
		assert_int_equal(rec.process.pid, 10 + n);
		assert_string_equal(rec.process.cgroup, want[n].cgroup ? want[n].cgroup : "");
		assert_string_equal(rec.process.script, want[n].script);
		n++;
	}
	assert_int_equal(n, ARRAY_SIZE(want));
	profile_reader__free(r);
	unlink(path);
	free(path);
}

static void test_python_frames(void **state)
{
	char *path = path_join_or_fail(*state, "python.data");
	struct profile_diag diag = { "" };
	struct profile_writer *w = profile_writer__create(path, &plain_meta, &diag);
	static uint32_t deep[PROFILE_PY_MAX_DEPTH + 1];
	char names[64][32];
	struct profile_py_frame pf[64];
	uint32_t id[64], again, nsamples = 0, nframes = 0;
	struct profile_reader *r;
	struct profile_record rec;
	/* what each id names, as read */
	struct { char q[32], f[32]; uint32_t line, flags; } got[256] = { 0 };

	assert_non_null(w);
	for (int i = 0; i < 64; i++) {
		snprintf(names[i], sizeof(names[i]), "f%d\xc3\xa9<>\"", i);
		pf[i] = (struct profile_py_frame){ .qualname = names[i], .file = "/a/b.py",
						   .line = (uint32_t)i, .flags = i & 1 };
		assert_int_equal(profile_writer__py_frame(w, &pf[i], &id[i]), 0);
		assert_int_equal(id[i], i + 1);
	}
	assert_int_equal(profile_writer__py_frame(w, &pf[5], &again), 0);
	assert_int_equal(again, id[5]);
	pf[5].flags ^= PROFILE_PY_F_ENTRY;
	assert_int_equal(profile_writer__py_frame(w, &pf[5], &again), 0);
	assert_int_equal(again, 65);
	pf[5].flags ^= PROFILE_PY_F_ENTRY;
	assert_int_equal(profile_writer__py_frame(w, &(struct profile_py_frame){ .qualname = "q" },
						  &again), -EINVAL);

	for (size_t i = 0; i <= PROFILE_PY_MAX_DEPTH; i++)
		deep[i] = id[i % 64];
	assert_int_equal(profile_writer__sample(w, &(struct profile_sample){
		.time_ns = 1, .pid = 1, .tid = 1, .weight = 1, .py_frames = id, .py_depth = 3 }), 0);
	assert_int_equal(profile_writer__sample(w, &(struct profile_sample){
		.time_ns = 2, .pid = 1, .tid = 1, .weight = 1, .py_frames = deep,
		.py_depth = PROFILE_PY_MAX_DEPTH, .py_truncated = true }), 0);
	/* refused: too deep, an id 0, an id never given, frames without their array */
	assert_int_equal(profile_writer__sample(w, &(struct profile_sample){
		.time_ns = 3, .pid = 1, .py_frames = deep, .py_depth = PROFILE_PY_MAX_DEPTH + 1 }),
			 -EINVAL);
	assert_int_equal(profile_writer__sample(w, &(struct profile_sample){
		.time_ns = 3, .pid = 1, .py_frames = (const uint32_t[]){ 0 }, .py_depth = 1 }),
			 -EINVAL);
	assert_int_equal(profile_writer__sample(w, &(struct profile_sample){
		.time_ns = 3, .pid = 1, .py_frames = (const uint32_t[]){ 66 }, .py_depth = 1 }),
			 -EINVAL);
	assert_int_equal(profile_writer__sample(w, &(struct profile_sample){
		.time_ns = 3, .pid = 1, .py_depth = 1 }), -EINVAL);
	/* past the bound the index starts again: a frame seen before gets a new id */
	profile_writer__set_stack_bound(w, 1);
	assert_int_equal(profile_writer__py_frame(w, &pf[7], &again), 0);
	assert_int_equal(again, 8);	/* in the index still: only a new frame passes the bound */
	assert_int_equal(profile_writer__py_frame(w, &(struct profile_py_frame){
		.qualname = "new", .file = "n.py" }, &again), 0);
	assert_int_equal(again, 66);
	assert_int_equal(profile_writer__py_frame(w, &pf[7], &again), 0);
	assert_int_equal(again, 67);
	assert_int_equal(profile_writer__sample(w, &(struct profile_sample){
		.time_ns = 4, .pid = 1, .tid = 1, .weight = 1, .py_frames = &again, .py_depth = 1 }),
			 0);
	/* a sample without Python frames writes no field for them */
	assert_int_equal(profile_writer__sample(w, &(struct profile_sample){
		.time_ns = 5, .pid = 1, .tid = 1, .weight = 1, .py_truncated = true }), 0);
	assert_int_equal(profile_writer__close(w, false, &diag), 0);

	r = profile_reader__open(path, &diag);
	assert_non_null(r);
	while (profile_reader__next(r, &rec) > 0) {
		if (rec.type == PROFILE_REC_PY_FRAME) {
			assert_int_equal(rec.py_frame.id, ++nframes);
			assert_true(rec.py_frame.id < 256);
			snprintf(got[rec.py_frame.id].q, 32, "%s", rec.py_frame.qualname);
			snprintf(got[rec.py_frame.id].f, 32, "%s", rec.py_frame.file);
			got[rec.py_frame.id].line = rec.py_frame.line;
			got[rec.py_frame.id].flags = rec.py_frame.flags;
		} else if (rec.type == PROFILE_REC_SAMPLE) {
			const struct profile_sample *sm = &rec.sample;
			static const size_t want_depth[] = { 3, PROFILE_PY_MAX_DEPTH, 1, 0 };

			assert_true(nsamples < 4);
			assert_int_equal(sm->py_depth, want_depth[nsamples]);
			assert_int_equal(sm->py_truncated, nsamples == 1);
			for (size_t i = 0; i < sm->py_depth; i++) {
				uint32_t k = nsamples == 2 ? 7 : i % 64;

				assert_true(sm->py_frames[i] < 256);
				assert_string_equal(got[sm->py_frames[i]].q, names[k]);
				assert_string_equal(got[sm->py_frames[i]].f, "/a/b.py");
				assert_int_equal(got[sm->py_frames[i]].line, k);
				assert_int_equal(got[sm->py_frames[i]].flags, k & 1);
			}
			nsamples++;
		}
	}
	assert_int_equal(nframes, 67);
	assert_int_equal(nsamples, 4);
	assert_false(profile_status_damaged(profile_reader__status(r)));
	profile_reader__free(r);
	free(path);
}

static int setup_dir(void **state)
{
	*state = make_temp_dir_or_fail();
	return 0;
}

static int teardown_dir(void **state)
{
	remove_temp_dir(*state);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roundtrip, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_record_bytes, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_old_file_kept, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_discard, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_create_errors, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_writer_counters_and_args, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_sample_by_stack_id, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_close_whole, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_special_output_paths, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_generated_roundtrip, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_block_size_limit, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_cut_at_block_boundaries, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_cut_at_random_offsets, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_damaged_block, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_damaged_neighbours, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_bytes_after_trailer, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_bad_header, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_not_a_file, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_crafted_records, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_crafted_header, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_full_disk, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_full_tmpfs, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_stack_bound, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_events, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_python_frames, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_process_script, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_module_without_build_id, setup_dir,
						teardown_dir),
	};

	for (size_t i = 0; i < sizeof(build_id_255); i++)
		build_id_255[i] = i * 7 + 1;
	memset(long_cmdline, 'c', sizeof(long_cmdline) - 1);
	memset(long_exe, 'e', sizeof(long_exe) - 1);
	long_exe[0] = '/';
	return cmocka_run_group_tests(tests, NULL, NULL);
}
