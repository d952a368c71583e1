/* SPDX-License-Identifier: BSD-2-Clause */
/* pprof: profile.proto encoded by hand (github.com/google/pprof/proto/profile.proto), gzipped. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "buildid/buildid.h"
#include "export.h"
#include "protobuf.h"
#include "common/hmap.h"

/* Field numbers of profile.proto. */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE, PROFILE_MAPPING, PROFILE_LOCATION,
	PROFILE_FUNCTION, PROFILE_STRING_TABLE, PROFILE_TIME_NANOS = 9, PROFILE_DURATION_NANOS,
	PROFILE_PERIOD_TYPE, PROFILE_PERIOD, PROFILE_COMMENT,
	VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE, SAMPLE_LABEL,
	LABEL_KEY = 1, LABEL_STR, LABEL_NUM,
	MAPPING_ID = 1, MAPPING_MEMORY_START, MAPPING_MEMORY_LIMIT, MAPPING_FILE_OFFSET,
	MAPPING_FILENAME, MAPPING_BUILD_ID, MAPPING_HAS_FUNCTIONS,
	LOCATION_ID = 1, LOCATION_MAPPING_ID, LOCATION_ADDRESS, LOCATION_LINE,
	LINE_FUNCTION_ID = 1, LINE_LINE,
	FUNCTION_ID = 1, FUNCTION_NAME, FUNCTION_SYSTEM_NAME, FUNCTION_FILENAME,
};

/* The most Lines of one Location: the session's deepest inlined chain (MAX_INLINED). */
#define MAX_INLINED_LINES 64

/* The id @key maps to in @ids, 0 when none. */
static uint32_t id_of(struct hmap *ids, uint64_t key)
{
	uint64_t *id;

	return hmap__find_u64(ids, key, &id) ? 0 : (uint32_t)*id;
}

struct pprof {
	const struct session *s;
	const struct pprof_opts *o;
	struct strtab strs;
	struct pb samples, mappings, locations, functions, msg, line;
	struct hmap *location_ids;	/* image + 1 << 32 | frame (kernel: frame) -> id */
	struct hmap *mapping_ids;	/* image << 32 | mapping index -> id */
	struct hmap *function_ids;	/* name string << 32 | file string -> id */
	struct image_layout *layouts;	/* by image, made on first use */
	uint32_t nlocations, nmappings, nfunctions;
	uint32_t kernel_mapping;	/* its id; written last, once its range is known */
	uint64_t kernel_lo, kernel_hi;
	bool oom;
};

/* The id of @s in the string table (escaped, pb_string_id()). */
static uint64_t str(struct pprof *p, const char *s)
{
	return pb_string_id(&p->strs, s, &p->oom);
}

static void value_type(struct pprof *p, struct pb *out, unsigned field, const char *type,
		       const char *unit)
{
	pb_uint(&p->msg, VALUE_TYPE_TYPE, str(p, type));
	pb_uint(&p->msg, VALUE_TYPE_UNIT, str(p, unit));
	pb_msg(out, field, &p->msg);
}

static uint32_t mapping_id(struct pprof *p, uint32_t image, size_t map)
{
	uint64_t key = (uint64_t)image << 32 | map;
	const struct session_image *im = session__image(p->s, image);
	const struct session_map *m = &im->maps[map];
	const char *file = "[anon]";
	char build_id[2 * sizeof(((struct session_module *)0)->build_id) + 1] = "";
	uint32_t id = id_of(p->mapping_ids, key);

	if (id)
		return id;
	if (m->module) {
		const struct session_module *mod = session__module(p->s, m->module - 1);

		file = mod->path ? mod->path : "";
		buildid_hex(build_id, sizeof(build_id), mod->build_id, mod->build_id_len);
	}
	id = ++p->nmappings;
	pb_uint(&p->msg, MAPPING_ID, id);
	pb_uint(&p->msg, MAPPING_MEMORY_START, m->start);
	pb_uint(&p->msg, MAPPING_MEMORY_LIMIT, m->end);
	pb_uint(&p->msg, MAPPING_FILE_OFFSET, m->file_offset);
	pb_uint(&p->msg, MAPPING_FILENAME, str(p, file));
	pb_uint(&p->msg, MAPPING_BUILD_ID, str(p, build_id));
	/* every location carries its function: nothing for pprof to symbolize */
	pb_uint(&p->msg, MAPPING_HAS_FUNCTIONS, !p->o->no_symbolize);
	pb_msg(&p->mappings, PROFILE_MAPPING, &p->msg);
	if (hmap__set_u64(p->mapping_ids, key, id))
		p->oom = true;
	return id;
}

static uint32_t function_id(struct pprof *p, const char *name, const char *file)
{
	uint64_t n = str(p, name), f = str(p, file);
	uint64_t key = n << 32 | f;
	uint32_t id = id_of(p->function_ids, key);

	if (id)
		return id;
	id = ++p->nfunctions;
	pb_uint(&p->msg, FUNCTION_ID, id);
	pb_uint(&p->msg, FUNCTION_NAME, n);
	/* the session keeps only the demangled name */
	pb_uint(&p->msg, FUNCTION_SYSTEM_NAME, n);
	pb_uint(&p->msg, FUNCTION_FILENAME, f);
	pb_msg(&p->functions, PROFILE_FUNCTION, &p->msg);
	if (hmap__set_u64(p->function_ids, key, id))
		p->oom = true;
	return id;
}

/*
 * The Location of frame @frame of image @image; @inlined are the @ninlined
 * frames inlined at its address (innermost first), its Lines before its
 * own, innermost first as profile.proto orders them.
 */
static uint32_t location_id(struct pprof *p, uint32_t image, uint32_t frame,
			    const uint32_t *inlined, uint32_t ninlined)
{
	const struct session_frame *f = session__frame(p->s, frame);
	/* kernel and Python frames are the same in every process */
	uint64_t key = f->kernel || f->python ? frame : (uint64_t)(image + 1) << 32 | frame;
	uint32_t id = id_of(p->location_ids, key), map_id = 0, fn;
	uint32_t inlined_fn[MAX_INLINED_LINES];
	struct frame_place fp;
	uint64_t addr;
	bool named;
	char buf[128];

	if (id)
		return id;
	frame_place(f->kernel || f->python ? NULL : image_layouts__get(p->layouts, p->s, image, &p->oom),
		    f, p->o->no_symbolize, &fp);
	addr = fp.addr;
	named = fp.named;
	if (f->kernel) {
		if (!p->kernel_mapping)
			p->kernel_mapping = ++p->nmappings;
		if (!p->kernel_lo || addr < p->kernel_lo)
			p->kernel_lo = addr;
		if (addr >= p->kernel_hi)
			p->kernel_hi = addr + 1;
		map_id = p->kernel_mapping;
	} else if (fp.map != SIZE_MAX) {
		map_id = mapping_id(p, image, fp.map);
	}
	/* before the location's fields: a new function is built in the same buffer */
	fn = !named ? 0 : f->python ? function_id(p, f->py_qualname, f->file) :
	     function_id(p, session_frame_name(f, buf, sizeof(buf)), f->file);
	if (ninlined > MAX_INLINED_LINES) {
		/* the innermost ones: the session holds no deeper chain than that */
		ninlined = MAX_INLINED_LINES;
	}
	for (uint32_t i = 0; named && i < ninlined; i++) {
		const struct session_frame *in = session__frame(p->s, inlined[i]);

		inlined_fn[i] = function_id(p, session_frame_name(in, buf, sizeof(buf)), in->file);
	}
	id = ++p->nlocations;
	pb_uint(&p->msg, LOCATION_ID, id);
	pb_uint(&p->msg, LOCATION_MAPPING_ID, map_id);
	pb_uint(&p->msg, LOCATION_ADDRESS, addr);
	if (named) {
		for (uint32_t i = 0; i < ninlined; i++) {
			const struct session_frame *in = session__frame(p->s, inlined[i]);

			pb_uint(&p->line, LINE_FUNCTION_ID, inlined_fn[i]);
			pb_uint(&p->line, LINE_LINE, in->line);
			pb_msg(&p->msg, LOCATION_LINE, &p->line);
		}
		pb_uint(&p->line, LINE_FUNCTION_ID, fn);
		pb_uint(&p->line, LINE_LINE, f->line);
		pb_msg(&p->msg, LOCATION_LINE, &p->line);
	}
	pb_msg(&p->locations, PROFILE_LOCATION, &p->msg);
	if (hmap__set_u64(p->location_ids, key, id))
		p->oom = true;
	return id;
}

static void label(struct pprof *p, struct pb *sample, const char *key, const char *s, uint64_t num)
{
	pb_uint(&p->line, LABEL_KEY, str(p, key));
	if (s)
		pb_uint(&p->line, LABEL_STR, str(p, s));
	else
		pb_uint(&p->line, LABEL_NUM, num);
	pb_msg(sample, SAMPLE_LABEL, &p->line);
}

/* Samples of one stack, process, thread and thread name become one Sample. */
static int cmp_samples(const void *a, const void *b, void *arg)
{
	const struct session_sample *x = session__sample(arg, *(const size_t *)a);
	const struct session_sample *y = session__sample(arg, *(const size_t *)b);

	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->comm != y->comm)
		return (uintptr_t)x->comm < (uintptr_t)y->comm ? -1 : 1;
	return 0;
}

static void put_sample(struct pprof *p, const struct session_sample *sm, uint64_t count,
		       uint64_t weight, const struct export_units *u, struct pb *ids, struct pb *sample)
{
	const struct session_stack *st = session__stack(p->s, sm->stack);

	/* leaf first, as the session keeps them: kernel frames, then user frames */
	for (uint32_t i = 0, run = 0; i < st->count; i++) {
		const struct session_frame *f = session__frame(p->s, st->frames[i]);

		/* the frames inlined at an address are Lines of the real function's Location */
		if (f->inlined) {
			run++;
			continue;
		}
		if (!f->omitted)
			pb_varint(ids, location_id(p, sm->image, st->frames[i], st->frames + i - run,
						   run));
		run = 0;
	}
	if (ids->len)
		pb_bytes(sample, SAMPLE_LOCATION_ID, ids->p, ids->len);
	ids->len = 0;
	if (u->count)
		pb_varint(ids, u->weight_ns ? count : weight);
	if (u->type)
		pb_varint(ids, weight * u->mult);
	pb_bytes(sample, SAMPLE_VALUE, ids->p, ids->len);
	ids->len = 0;
	label(p, sample, "pid", NULL, sm->pid);
	label(p, sample, "tid", NULL, sm->tid);
	if (!p->o->no_thread_label)
		label(p, sample, "thread", sm->comm ? sm->comm : "", 0);
	pb_msg(&p->samples, PROFILE_SAMPLE, sample);
}

static void main_mapping(struct pprof *p, uint32_t image)
{
	const struct session_image *im = session__image(p->s, image);

	for (size_t j = 0; j < im->nmaps; j++) {
		const struct session_module *mod;

		if (!im->maps[j].module)
			continue;
		mod = session__module(p->s, im->maps[j].module - 1);
		if (mod->path && im->exe && !strcmp(mod->path, im->exe)) {
			mapping_id(p, image, j);
			return;
		}
	}
}

static int gzip_write(FILE *out, const struct pb *b)
{
	uint8_t buf[65536];
	z_stream z;
	int ret;

	memset(&z, 0, sizeof(z));
	/* 16 + window bits: a gzip header and trailer */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY))
		return -ENOMEM;
	z.next_in = b->p;
	z.avail_in = b->len;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		ret = deflate(&z, Z_FINISH);
		if (fwrite(buf, 1, sizeof(buf) - z.avail_out, out) != sizeof(buf) - z.avail_out) {
			deflateEnd(&z);
			return -EIO;
		}
	} while (ret == Z_OK);
	deflateEnd(&z);
	return ret == Z_STREAM_END ? 0 : -EIO;
}

static void put_profile(struct pprof *p, struct pb *prof)
{
	const struct profile_meta *meta = session__meta(p->s);
	const struct session_totals *tot = session__totals(p->s);
	size_t all = session__nsamples(p->s), n = 0;
	/* one event's samples (pick_event()): its units */
	struct export_units u = export_units_of(p->s, all ? session__sample(p->s, 0)->event : 0);
	size_t *order = calloc(all + 1, sizeof(*order));
	uint64_t first = UINT64_MAX, last = 0;
	struct pb ids = { 0 }, sample = { 0 };

	if (!order) {
		p->oom = true;
		return;
	}
	str(p, "");	/* string_table[0] */
	if (u.count)
		value_type(p, prof, PROFILE_SAMPLE_TYPE, "samples", "count");
	if (u.type)
		value_type(p, prof, PROFILE_SAMPLE_TYPE, u.type, u.unit);
	for (size_t i = 0; i < all; i++) {
		const struct session_sample *sm = session__sample(p->s, i);

		if (p->o->keep && !p->o->keep(p->o->keep_ctx, p->s, i))
			continue;
		order[n++] = i;
		first = sm->time_ns < first ? sm->time_ns : first;
		last = sm->time_ns > last ? sm->time_ns : last;
	}
	/* mapping[0] is the main binary, by pprof's convention: the first sampled process's */
	for (size_t i = 0; i < n && !p->nmappings; i++)
		if (!i || session__sample(p->s, order[i])->image !=
			  session__sample(p->s, order[i - 1])->image)
			main_mapping(p, session__sample(p->s, order[i])->image);
	qsort_r(order, n, sizeof(*order), cmp_samples, (void *)p->s);
	for (size_t i = 0, j; i < n; i = j) {
		uint64_t weight = 0;

		for (j = i; j < n && !cmp_samples(&order[i], &order[j], (void *)p->s); j++)
			weight += session__sample(p->s, order[j])->weight;
		put_sample(p, session__sample(p->s, order[i]), j - i, weight, &u, &ids, &sample);
	}
	if (p->kernel_mapping) {
		pb_uint(&p->msg, MAPPING_ID, p->kernel_mapping);
		pb_uint(&p->msg, MAPPING_MEMORY_START, p->kernel_lo);
		pb_uint(&p->msg, MAPPING_MEMORY_LIMIT, p->kernel_hi);
		pb_uint(&p->msg, MAPPING_FILENAME, str(p, "[kernel.kallsyms]"));
		pb_uint(&p->msg, MAPPING_HAS_FUNCTIONS, 1);
		pb_msg(&p->mappings, PROFILE_MAPPING, &p->msg);
	}
	pb_raw(prof, p->samples.p, p->samples.len);
	pb_raw(prof, p->mappings.p, p->mappings.len);
	pb_raw(prof, p->locations.p, p->locations.len);
	pb_raw(prof, p->functions.p, p->functions.len);
	if (meta->cmdline)
		str(p, meta->cmdline);
	for (size_t i = 0; i < p->strs.count; i++)
		pb_bytes(prof, PROFILE_STRING_TABLE, p->strs.strs[i], strlen(p->strs.strs[i]));
	if (p->o->time_ns) {
		pb_uint(prof, PROFILE_TIME_NANOS, p->o->time_ns);
		pb_uint(prof, PROFILE_DURATION_NANOS, p->o->duration_ns);
	} else if (p->o->keep) {
		pb_uint(prof, PROFILE_TIME_NANOS, n ? first + meta->clock_offset_ns : meta->created_ns);
		pb_uint(prof, PROFILE_DURATION_NANOS, n ? last - first : 0);
	} else {
		pb_uint(prof, PROFILE_TIME_NANOS,
			tot->samples ? tot->first_ns + meta->clock_offset_ns : meta->created_ns);
		pb_uint(prof, PROFILE_DURATION_NANOS, tot->last_ns - tot->first_ns);
	}
	/* the string table is complete: these two name strings it already holds */
	pb_uint(&p->msg, VALUE_TYPE_TYPE, str(p, u.type ? u.type : "samples"));
	pb_uint(&p->msg, VALUE_TYPE_UNIT, str(p, u.type ? u.unit : "count"));
	pb_msg(prof, PROFILE_PERIOD_TYPE, &p->msg);
	pb_uint(prof, PROFILE_PERIOD, u.mult);
	if (meta->cmdline)
		pb_uint(prof, PROFILE_COMMENT, str(p, meta->cmdline));
	p->oom |= ids.oom || sample.oom || p->samples.oom || p->mappings.oom ||
		  p->locations.oom || p->functions.oom || p->msg.oom || p->line.oom;
	pb_release(&ids);
	pb_release(&sample);
	free(order);
}

int export_pprof(const struct session *s, FILE *out)
{
	static const struct pprof_opts all = { 0 };

	return export_pprof_opts(s, out, &all);
}

int export_pprof_opts(const struct session *s, FILE *out, const struct pprof_opts *o)
{
	struct pprof p = { .s = s, .o = o };
	struct pb prof = { 0 };
	int err = -ENOMEM;

	p.layouts = calloc(session__nimages(s) + 1, sizeof(*p.layouts));
	p.location_ids = hmap__new(HMAP_U64);
	p.mapping_ids = hmap__new(HMAP_U64);
	p.function_ids = hmap__new(HMAP_U64);
	if (p.layouts && p.location_ids && p.mapping_ids && p.function_ids) {
		put_profile(&p, &prof);
		if (!p.oom && !prof.oom)
			err = gzip_write(out, &prof);
	}
	for (size_t i = 0; p.layouts && i < session__nimages(s); i++)
		image_layout__release(&p.layouts[i]);
	free(p.layouts);
	hmap__free(p.location_ids);
	hmap__free(p.mapping_ids);
	hmap__free(p.function_ids);
	strtab__release(&p.strs);
	pb_release(&p.samples);
	pb_release(&p.mappings);
	pb_release(&p.locations);
	pb_release(&p.functions);
	pb_release(&p.msg);
	pb_release(&p.line);
	pb_release(&prof);
	return err;
}

struct export_units export_units_of(const struct session *s, uint32_t event)
{
	const struct profile_meta *meta = session__meta(s);
	const struct session_event *ev = session__event(s, event);
	bool clock = !event || (ev->type == PERF_TYPE_SOFTWARE &&
				(ev->config == PERF_COUNT_SW_CPU_CLOCK ||
				 ev->config == PERF_COUNT_SW_TASK_CLOCK));
	uint32_t hz = event ? ev->freq_hz : meta->freq_hz;

	if (!event && (meta->flags & PROFILE_F_WALL_NS))
		return (struct export_units){ "wall", "nanoseconds", 1, false, true };
	if (event && (ev->flags & PROFILE_EV_F_WEIGHT_NS))
		return (struct export_units){ ev->type == PROFILE_EV_OFF_CPU ? "offcpu" : ev->name,
					      "nanoseconds", 1, true, true };
	if (clock && (hz || ev->period))
		return (struct export_units){ "cpu", "nanoseconds",
					      hz ? 1000000000u / hz : ev->period, true, false };
	if (ev->period)
		return (struct export_units){ ev->name, "count", ev->period, true, false };
	/* a count sampled at a frequency: what a sample stands for varies; samples only */
	return (struct export_units){ NULL, NULL, 1, true, false };
}
