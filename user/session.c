/* SPDX-License-Identifier: BSD-2-Clause */
/* Loads a profile: images per pid as they change, samples, and each distinct stack resolved once. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "sfunwind/cbf.h"

#define MAX_FRAMES 4096

/* Open-addressing map from a key of three u64 to a u32 value. */
struct kmap {
	struct kent {
		uint64_t k[3];
		uint32_t val;
		bool used;
	} *ents;
	size_t cap, count;
};

struct session {
	struct profile_meta meta;
	struct profile_status status;
	struct session_totals totals;
	struct symbolizer *sym;
	char **strings;			/* every string the session owns */
	size_t nstrings, strings_cap;
	struct session_image *images;
	size_t nimages, images_cap;
	struct session_module *modules;	/* by module id - 1 */
	size_t nmodules;
	struct session_sample *samples;
	size_t nsamples, samples_cap;
	struct session_stack *stacks;
	size_t nstacks, stacks_cap;
	struct session_frame *frames;
	size_t nframes, frames_cap;
	struct kmap by_pid;		/* pid -> current image + 1 */
	struct kmap by_tid;		/* tid -> string index of its name */
	struct kmap stack_keys;		/* (image, ustack id, kstack id) -> stack */
	struct kmap frame_keys;		/* (kind, a, b) -> frame */
	struct kmap sampled_pids;	/* pids with samples, counted */
	struct profile_reader *reader;
	uint32_t scratch[MAX_FRAMES];
};

static uint64_t kmix(const uint64_t k[3])
{
	uint64_t h = k[0] * 0x9e3779b97f4a7c15ull ^ k[1] * 0xc2b2ae3d27d4eb4full ^
		     k[2] * 0x165667b19e3779f9ull;

	return h ^ (h >> 29);
}

static struct kent *kmap_slot(const struct kmap *m, const uint64_t k[3])
{
	for (size_t j = kmix(k) & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
		struct kent *e = &m->ents[j];

		if (!e->used || (e->k[0] == k[0] && e->k[1] == k[1] && e->k[2] == k[2]))
			return e;
	}
}

static bool kmap_get(const struct kmap *m, uint64_t a, uint64_t b, uint64_t c, uint32_t *val)
{
	const uint64_t k[3] = { a, b, c };
	struct kent *e;

	if (!m->cap)
		return false;
	e = kmap_slot(m, k);
	if (!e->used)
		return false;
	*val = e->val;
	return true;
}

static int kmap_put(struct kmap *m, uint64_t a, uint64_t b, uint64_t c, uint32_t val)
{
	const uint64_t k[3] = { a, b, c };
	struct kent *e;

	if ((m->count + 1) * 2 > m->cap) {
		struct kmap big = { calloc(m->cap ? m->cap * 2 : 1024, sizeof(struct kent)),
				    m->cap ? m->cap * 2 : 1024, m->count };

		if (!big.ents)
			return -ENOMEM;
		for (size_t i = 0; i < m->cap; i++)
			if (m->ents[i].used)
				*kmap_slot(&big, m->ents[i].k) = m->ents[i];
		free(m->ents);
		*m = big;
	}
	e = kmap_slot(m, k);
	if (!e->used)
		m->count++;
	e->k[0] = a;
	e->k[1] = b;
	e->k[2] = c;
	e->val = val;
	e->used = true;
	return 0;
}

/* Grow an array of @size-byte elements to hold one more. */
static int grow(void **arr, size_t *cap, size_t len, size_t size)
{
	void *p;
	size_t n;

	if (len < *cap)
		return 0;
	n = *cap ? *cap * 2 : 256;
	p = realloc(*arr, n * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

static const char *keep(struct session *s, const char *str, size_t len)
{
	char *copy;

	if (grow((void **)&s->strings, &s->strings_cap, s->nstrings, sizeof(*s->strings)))
		return "";
	copy = strndup(str, len);
	if (!copy)
		return "";
	s->strings[s->nstrings++] = copy;
	return copy;
}

static const char *keep_str(struct session *s, const char *str)
{
	return str ? keep(s, str, strlen(str)) : NULL;
}

static int new_image(struct session *s, uint32_t pid, uint32_t *idx)
{
	struct session_image *im;

	if (grow((void **)&s->images, &s->images_cap, s->nimages, sizeof(*s->images)))
		return -ENOMEM;
	im = &s->images[s->nimages];
	memset(im, 0, sizeof(*im));
	im->pid = pid;
	im->comm = "";
	im->exe = "";
	*idx = s->nimages++;
	return kmap_put(&s->by_pid, pid, 0, 0, *idx + 1);
}

static int current_image(struct session *s, uint32_t pid, uint32_t *idx)
{
	uint32_t v;

	if (kmap_get(&s->by_pid, pid, 0, 0, &v)) {
		*idx = v - 1;
		return 0;
	}
	return new_image(s, pid, idx);
}

static int add_map(struct session *s, const struct profile_mapping *m)
{
	struct session_image *im;
	struct session_map *maps;
	uint32_t idx;
	size_t i;

	if (current_image(s, m->pid, &idx))
		return -ENOMEM;
	im = &s->images[idx];
	maps = realloc(im->maps, (im->nmaps + 1) * sizeof(*maps));
	if (!maps)
		return -ENOMEM;
	im->maps = maps;
	/* keep sorted; a new mapping over an old range replaces it, as mmap does */
	for (i = 0; i < im->nmaps; i++) {
		if (maps[i].start < m->end && m->start < maps[i].end) {
			memmove(&maps[i], &maps[i + 1], (im->nmaps - i - 1) * sizeof(*maps));
			im->nmaps--;
			i--;
		}
	}
	for (i = im->nmaps; i > 0 && maps[i - 1].start > m->start; i--)
		maps[i] = maps[i - 1];
	maps[i] = (struct session_map){ m->start, m->end, m->file_offset, m->prot,
					m->module_id <= s->nmodules ? m->module_id : 0 };
	im->nmaps++;
	return 0;
}

static int add_module(struct session *s, const struct profile_module *m)
{
	struct session_module *mod;

	if (!m->id || m->id > 1u << 24)
		return 0;
	if (m->id > s->nmodules) {
		struct session_module *mods = realloc(s->modules, m->id * sizeof(*mods));

		if (!mods)
			return -ENOMEM;
		memset(mods + s->nmodules, 0, (m->id - s->nmodules) * sizeof(*mods));
		s->modules = mods;
		s->nmodules = m->id;
	}
	mod = &s->modules[m->id - 1];
	mod->build_id_len = m->build_id_len <= sizeof(mod->build_id) ? m->build_id_len : 0;
	memcpy(mod->build_id, m->build_id, mod->build_id_len);
	mod->path = keep_str(s, m->path);
	mod->file_size = m->file_size;
	mod->sym = NULL;	/* found on first use */
	return 0;
}

static const struct session_map *find_map(const struct session_image *im, uint64_t addr)
{
	size_t lo = 0, hi = im->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (im->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= im->maps[lo - 1].end)
		return NULL;
	return &im->maps[lo - 1];
}

static int add_frame(struct session *s, const struct session_frame *f, uint32_t *idx)
{
	if (grow((void **)&s->frames, &s->frames_cap, s->nframes, sizeof(*s->frames)))
		return -ENOMEM;
	s->frames[s->nframes] = *f;
	*idx = s->nframes++;
	return 0;
}

enum { KEY_USER = 1, KEY_KERNEL, KEY_UNMAPPED, KEY_OMIT };

/* The frame for a user address of an image. */
static int user_frame(struct session *s, uint32_t image, uint64_t addr, bool is_ra, uint32_t *idx)
{
	const struct session_image *im = &s->images[image];
	/* a return address belongs with its call, which may end the mapping before it */
	const struct session_map *m = find_map(im, is_ra && addr ? addr - 1 : addr);
	struct session_frame f = { .addr = addr, .is_ra = is_ra };
	struct session_module *mod;
	struct sym_info info;
	uint64_t off;

	if (!m || !m->module) {
		if (kmap_get(&s->frame_keys, KEY_UNMAPPED | (uint64_t)is_ra << 8, image, addr, idx))
			return 0;
		f.dso = m ? "[anon]" : "[unknown]";
		f.offset = addr;
		f.rel = addr;
		return add_frame(s, &f, idx) ||
		       kmap_put(&s->frame_keys, KEY_UNMAPPED | (uint64_t)is_ra << 8, image, addr, *idx);
	}
	off = addr - m->start + m->file_offset;
	if (kmap_get(&s->frame_keys, KEY_USER | (uint64_t)is_ra << 8, m->module, off, idx))
		return 0;
	mod = &s->modules[m->module - 1];
	if (!mod->sym && mod->path)
		mod->sym = symbolizer__module(s->sym, mod->build_id, mod->build_id_len, mod->path);
	f.module = m->module;
	f.dso = mod->sym ? sym_module__name(mod->sym) : "[unknown]";
	f.dso_path = mod->path;
	if (symbolizer__lookup_mapped(s->sym, mod->sym, addr,
				      &(struct sym_mapping){ m->start, m->file_offset, m->prot },
				      is_ra, &info)) {
		f.sym = info.name;
		f.offset = info.offset;
		f.file = info.file;
		f.line = info.line;
	} else {
		f.offset = off;
	}
	f.rel = info.vaddr;
	return add_frame(s, &f, idx) ||
	       kmap_put(&s->frame_keys, KEY_USER | (uint64_t)is_ra << 8, m->module, off, *idx);
}

static int kernel_frame(struct session *s, uint64_t addr, bool is_ra, uint32_t *idx)
{
	struct session_frame f = { .addr = addr, .is_ra = is_ra, .kernel = true,
				   .dso = "[kernel.kallsyms]" };
	struct sym_info info;

	if (kmap_get(&s->frame_keys, KEY_KERNEL | (uint64_t)is_ra << 8, 0, addr, idx))
		return 0;
	/* a return address is named after its call: a noreturn call may end the function */
	if (symbolizer__kernel(s->sym, is_ra && addr ? addr - 1 : addr, &info)) {
		f.sym = info.name;
		f.offset = info.offset + (is_ra && addr ? 1 : 0);
	} else {
		f.offset = addr;
	}
	f.rel = addr;
	return add_frame(s, &f, idx) ||
	       kmap_put(&s->frame_keys, KEY_KERNEL | (uint64_t)is_ra << 8, 0, addr, *idx);
}

static int omit_frame(struct session *s, uint64_t count, uint32_t *idx)
{
	struct session_frame f = { .dso = "", .omitted = count };

	if (kmap_get(&s->frame_keys, KEY_OMIT, 0, count, idx))
		return 0;
	return add_frame(s, &f, idx) || kmap_put(&s->frame_keys, KEY_OMIT, 0, count, *idx);
}

/* Decode one CBF stack into frames appended at s->scratch[*n]. Returns whether it was truncated. */
static bool decode_stack(struct session *s, const uint8_t *cbf, size_t len, bool kernel,
			 uint32_t image, size_t *n)
{
	struct sfu_cbf_dec dec;
	struct sfu_cbf_frame f;
	bool truncated = false;

	sfu_cbf_dec__init(&dec, cbf, len, 0, NULL);
	while (!sfu_cbf_dec__next(&dec, &f)) {
		uint32_t idx;
		int err;

		if (f.kind == SFU_CBF_END)
			break;
		if (f.kind == SFU_CBF_TRUNCATED) {
			truncated = true;
			break;
		}
		if (*n == MAX_FRAMES) {
			truncated = true;
			break;
		}
		if (f.kind == SFU_CBF_OMIT)
			err = omit_frame(s, f.value, &idx);
		else if (kernel)
			err = kernel_frame(s, f.value, f.kind != SFU_CBF_PC, &idx);
		else
			err = user_frame(s, image, f.value, f.kind != SFU_CBF_PC, &idx);
		if (err)
			break;
		s->scratch[(*n)++] = idx;
	}
	return truncated;
}

/* The resolved stack of a sample, resolved once per (image, user stack, kernel stack). */
static int resolve(struct session *s, uint32_t image, const struct profile_sample *ps,
		   uint32_t *idx)
{
	struct session_stack *st;
	uint32_t *frames;
	size_t n = 0, nk;

	if (kmap_get(&s->stack_keys, image, ps->ustack_id, ps->kstack_id, idx))
		return 0;
	if (grow((void **)&s->stacks, &s->stacks_cap, s->nstacks, sizeof(*s->stacks)))
		return -ENOMEM;
	st = &s->stacks[s->nstacks];
	memset(st, 0, sizeof(*st));
	if (ps->kstack)
		decode_stack(s, ps->kstack, ps->kstack_len, true, image, &n);
	nk = n;
	if (ps->ustack)
		st->truncated = decode_stack(s, ps->ustack, ps->ustack_len, false, image, &n);
	frames = malloc((n ? n : 1) * sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	memcpy(frames, s->scratch, n * sizeof(*frames));
	st->frames = frames;
	st->count = n;
	st->kernel = nk;
	*idx = s->nstacks++;
	return kmap_put(&s->stack_keys, image, ps->ustack_id, ps->kstack_id, *idx);
}

static const char *thread_comm(struct session *s, uint32_t tid, const struct session_image *im)
{
	uint32_t v;

	if (kmap_get(&s->by_tid, tid, 0, 0, &v))
		return s->strings[v];
	return im->comm;
}

static int add_sample(struct session *s, const struct profile_sample *ps)
{
	struct session_sample *out;
	uint32_t image, stack;
	int err;

	if ((err = current_image(s, ps->pid, &image)) || (err = resolve(s, image, ps, &stack)))
		return err;
	if (grow((void **)&s->samples, &s->samples_cap, s->nsamples, sizeof(*s->samples)))
		return -ENOMEM;
	out = &s->samples[s->nsamples++];
	*out = (struct session_sample){ ps->time_ns, ps->pid, ps->tid, ps->cpu, ps->weight,
					image, stack, thread_comm(s, ps->tid, &s->images[image]) };
	if (!s->totals.samples || ps->time_ns < s->totals.first_ns)
		s->totals.first_ns = ps->time_ns;
	if (ps->time_ns > s->totals.last_ns)
		s->totals.last_ns = ps->time_ns;
	s->totals.samples++;
	s->totals.weight += ps->weight;
	if (s->stacks[stack].truncated)
		s->totals.truncated++;
	return kmap_put(&s->sampled_pids, ps->pid, 0, 0, 1);
}

static int set_thread(struct session *s, uint32_t tid, const char *comm)
{
	size_t n = s->nstrings;

	keep_str(s, comm ? comm : "");
	if (s->nstrings == n)
		return -ENOMEM;
	return kmap_put(&s->by_tid, tid, 0, 0, s->nstrings - 1);
}

static int apply(struct session *s, const struct profile_record *r)
{
	uint32_t idx;

	switch (r->type) {
	case PROFILE_REC_PROCESS:
		if (new_image(s, r->process.pid, &idx))
			return -ENOMEM;
		s->images[idx].ppid = r->process.ppid;
		s->images[idx].comm = keep_str(s, r->process.comm);
		s->images[idx].exe = keep_str(s, r->process.exe);
		/* after exec the main thread has the new name, whatever it was called before */
		return set_thread(s, r->process.pid, r->process.comm);
	case PROFILE_REC_THREAD:
		return set_thread(s, r->thread.tid, r->thread.comm);
	case PROFILE_REC_COMM:
		return set_thread(s, r->comm.tid, r->comm.comm);
	case PROFILE_REC_MODULE:
		return add_module(s, &r->module);
	case PROFILE_REC_MAPPING:
		return add_map(s, &r->mapping);
	case PROFILE_REC_SAMPLE:
		return add_sample(s, &r->sample);
	case PROFILE_REC_LOST:
		s->totals.lost += r->lost.count;
		return 0;
	default:
		return 0;
	}
}

struct session *session__open(const char *path, const struct session_opts *opts,
			      struct profile_diag *diag)
{
	struct session *s = calloc(1, sizeof(*s));
	struct profile_record rec;
	int ret;

	if (!s || !(s->sym = symbolizer__new(opts ? &opts->sym : NULL))) {
		snprintf(diag->reason, sizeof(diag->reason), "out of memory");
		free(s);
		return NULL;
	}
	s->reader = profile_reader__open(path, diag);
	if (!s->reader) {
		session__free(s);
		return NULL;
	}
	s->meta = *profile_reader__meta(s->reader);
	while ((ret = profile_reader__next(s->reader, &rec)) > 0) {
		if (apply(s, &rec)) {
			ret = -ENOMEM;
			break;
		}
	}
	if (ret < 0) {
		snprintf(diag->reason, sizeof(diag->reason), "%s: %s", path, strerror(-ret));
		session__free(s);
		return NULL;
	}
	s->status = *profile_reader__status(s->reader);
	if (s->status.has_trailer && s->status.trailer_lost > s->totals.lost)
		s->totals.lost = s->status.trailer_lost;
	s->totals.processes = s->sampled_pids.count;
	return s;
}

void session__free(struct session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nstacks; i++)
		free((void *)s->stacks[i].frames);
	for (size_t i = 0; i < s->nimages; i++)
		free(s->images[i].maps);
	for (size_t i = 0; i < s->nstrings; i++)
		free(s->strings[i]);
	free(s->strings);
	free(s->images);
	free(s->modules);
	free(s->samples);
	free(s->stacks);
	free(s->frames);
	free(s->by_pid.ents);
	free(s->by_tid.ents);
	free(s->stack_keys.ents);
	free(s->frame_keys.ents);
	free(s->sampled_pids.ents);
	profile_reader__free(s->reader);
	symbolizer__free(s->sym);
	free(s);
}

const struct profile_meta *session__meta(const struct session *s) { return &s->meta; }
const struct profile_status *session__status(const struct session *s) { return &s->status; }
const struct session_totals *session__totals(const struct session *s) { return &s->totals; }
size_t session__nsamples(const struct session *s) { return s->nsamples; }
size_t session__nframes(const struct session *s) { return s->nframes; }
size_t session__nimages(const struct session *s) { return s->nimages; }
size_t session__nmodules(const struct session *s) { return s->nmodules; }

const struct session_sample *session__sample(const struct session *s, size_t i)
{
	return &s->samples[i];
}

const struct session_stack *session__stack(const struct session *s, uint32_t i)
{
	return &s->stacks[i];
}

const struct session_frame *session__frame(const struct session *s, uint32_t i)
{
	return &s->frames[i];
}

const struct session_image *session__image(const struct session *s, uint32_t i)
{
	return &s->images[i];
}

const struct session_module *session__module(const struct session *s, uint32_t i)
{
	return &s->modules[i];
}

const char *session_frame_name(const struct session_frame *f, char *buf, size_t cap)
{
	if (f->sym)
		return f->sym;
	if (f->omitted)
		snprintf(buf, cap, "[%" PRIu64 " frames omitted]", f->omitted);
	else
		snprintf(buf, cap, "%s+0x%" PRIx64, f->dso, f->offset);
	return buf;
}
