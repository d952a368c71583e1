/* SPDX-License-Identifier: BSD-2-Clause */
/* OTLP profiles: an ExportProfilesServiceRequest (profiles v1development, docs/otlp/sfprof_otlp.proto) by hand. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buildid/buildid.h"
#include "common/hmap.h"
#include "common/vec.h"
#include "export.h"
#include "protobuf.h"
#include "util/text.h"

#ifndef SFPROF_VERSION
#define SFPROF_VERSION ""
#endif

/* Field numbers of opentelemetry.proto.{collector.,}profiles.v1development, common.v1, resource.v1. */
enum {
	REQUEST_RESOURCE_PROFILES = 1, REQUEST_DICTIONARY,
	DICT_MAPPING = 1, DICT_LOCATION, DICT_FUNCTION, DICT_LINK, DICT_STRING, DICT_ATTRIBUTE,
	DICT_STACK,
	RESOURCE_PROFILES_RESOURCE = 1, RESOURCE_PROFILES_SCOPE_PROFILES,
	RESOURCE_ATTRIBUTES = 1,
	SCOPE_PROFILES_SCOPE = 1, SCOPE_PROFILES_PROFILES,
	SCOPE_NAME = 1, SCOPE_VERSION,
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLES, PROFILE_TIME_UNIX_NANO, PROFILE_DURATION_NANO,
	PROFILE_PERIOD_TYPE, PROFILE_PERIOD,
	VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT,
	SAMPLE_STACK_INDEX = 1, SAMPLE_ATTRIBUTE_INDICES, SAMPLE_LINK_INDEX, SAMPLE_VALUES,
	MAPPING_MEMORY_START = 1, MAPPING_MEMORY_LIMIT, MAPPING_FILE_OFFSET, MAPPING_FILENAME,
	MAPPING_ATTRIBUTE_INDICES,
	STACK_LOCATION_INDICES = 1,
	LOCATION_MAPPING_INDEX = 1, LOCATION_ADDRESS, LOCATION_LINES,
	LINE_FUNCTION_INDEX = 1, LINE_LINE,
	FUNCTION_NAME = 1, FUNCTION_SYSTEM_NAME, FUNCTION_FILENAME,
	LINK_TRACE_ID = 1, LINK_SPAN_ID,
	KEY_VALUE_AND_UNIT_KEY = 1, KEY_VALUE_AND_UNIT_VALUE,
	KEY_VALUE_KEY = 1, KEY_VALUE_VALUE,
	ANY_VALUE_STRING = 1, ANY_VALUE_INT = 3,
};

/* Semantic conventions' names (resource, mapping and sample attributes). */
#define ATTR_BUILD_ID_GNU	"process.executable.build_id.gnu"
#define ATTR_THREAD_ID		"thread.id"
#define ATTR_THREAD_NAME	"thread.name"
#define ATTR_PID		"process.pid"

/* The sample attributes a Sample can have: thread.id, thread.name, process.pid. */
#define MAX_SAMPLE_ATTRS 3

/*
 * One dictionary table: its elements as fields of ProfilesDictionary, and
 * each element's encoding -> index + 1, so that equal elements are one.
 */
struct table {
	struct pb body;
	struct hmap *ids;
	uint32_t count;		/* elements, the zero value at index 0 included */
	unsigned field;
};

/* The Samples of one resource with one identity (stack and attributes), merged. */
struct agg {
	uint32_t stack;
	uint32_t attrs[MAX_SAMPLE_ATTRS];
	uint32_t nattrs;
	uint64_t value;
};

struct otlp {
	const struct session *s;
	const struct otlp_opts *o;
	struct strtab strs;
	struct table mappings, locations, functions, attributes, stacks;
	/* one buffer per message being built, so that building one may build another */
	struct pb map_msg, map_attrs, loc_msg, fn_msg, line, stack_msg, attr, any, packed;
	struct hmap *location_idx;	/* image + 1 << 32 | frame (kernel, Python: frame) -> index + 1 */
	struct hmap *mapping_idx;	/* image << 32 | mapping -> index + 1 */
	struct hmap *stack_idx;		/* image << 32 | session stack -> index + 1 */
	struct image_layout *layouts;	/* by image, made on first use */
	uint32_t kernel_mapping;	/* its index, 0 until a kernel frame needs it */
	uint64_t kernel_lo, kernel_hi;	/* the kernel addresses sampled (a pre-pass) */
	bool oom;
};

static uint64_t str(struct otlp *p, const char *s)
{
	return pb_string_id(&p->strs, s, &p->oom);
}

/* A string field written in place (not through the string table), escaped as str()'s are. */
static void put_string(struct otlp *p, struct pb *b, unsigned field, const char *s)
{
	char *heap = NULL;
	const char *shown = s ? s : "";

	if (!text_clean(shown, 0) && !(shown = heap = text_dup(shown, 0))) {
		p->oom = true;
		return;
	}
	pb_bytes(b, field, shown, strlen(shown));
	free(heap);
}

static int table__init(struct table *t, unsigned field, const void *zero, size_t zero_len)
{
	t->field = field;
	t->ids = hmap__new(HMAP_BYTES);
	if (!t->ids)
		return -ENOMEM;
	/* element 0 is the zero value, and present: index 0 means "none" */
	pb_bytes(&t->body, field, zero, zero_len);
	t->count = 1;
	if (hmap__set(t->ids, zero_len ? zero : "", zero_len, 1) || t->body.oom)
		return -ENOMEM;
	return 0;
}

static void table__release(struct table *t)
{
	hmap__free(t->ids);
	pb_release(&t->body);
}

/* The index of the element encoded in @msg, added to @t when new; @msg is emptied. */
static uint32_t intern(struct otlp *p, struct table *t, struct pb *msg)
{
	uint64_t *idx;
	uint32_t ret = 0;

	if (msg->oom || hmap__entry(t->ids, msg->len ? (const void *)msg->p : "", msg->len, &idx,
				    NULL)) {
		p->oom = true;
	} else if (*idx) {
		ret = *idx - 1;
	} else {
		ret = t->count++;
		*idx = ret + 1;
		pb_bytes(&t->body, t->field, msg->p, msg->len);
		p->oom |= t->body.oom;
	}
	msg->len = 0;
	msg->oom = false;
	return ret;
}

/* The value of @key in @cache (a map of index + 1), or 0 when none. */
static uint32_t cached(struct hmap *cache, uint64_t key)
{
	uint64_t *v;

	return hmap__find_u64(cache, key, &v) ? 0 : (uint32_t)*v;
}

static void cache(struct otlp *p, struct hmap *cache, uint64_t key, uint32_t idx)
{
	if (hmap__set_u64(cache, key, (uint64_t)idx + 1))
		p->oom = true;
}

/* An AnyValue: a string, or an integer when @s is NULL (written even when 0: a oneof's member). */
static void any_value(struct otlp *p, const char *s, int64_t num)
{
	if (s)
		put_string(p, &p->any, ANY_VALUE_STRING, s);
	else
		pb_uint_always(&p->any, ANY_VALUE_INT, (uint64_t)num);
}

/* The index of attribute @key = @s (or @num) in the dictionary's attribute table. */
static uint32_t attribute(struct otlp *p, const char *key, const char *s, int64_t num)
{
	pb_uint(&p->attr, KEY_VALUE_AND_UNIT_KEY, str(p, key));
	any_value(p, s, num);
	pb_msg(&p->attr, KEY_VALUE_AND_UNIT_VALUE, &p->any);
	return intern(p, &p->attributes, &p->attr);
}

static uint32_t mapping_index(struct otlp *p, uint32_t image, size_t map)
{
	uint64_t key = (uint64_t)image << 32 | map;
	const struct session_map *m = &session__image(p->s, image)->maps[map];
	char build_id[2 * sizeof(((struct session_module *)0)->build_id) + 1];
	uint32_t idx = cached(p->mapping_idx, key), attr = 0;
	const char *file = "[anon]";

	if (idx)
		return idx - 1;
	if (m->module) {
		const struct session_module *mod = session__module(p->s, m->module - 1);

		file = mod->path ? mod->path : "";
		if (mod->build_id_len) {
			buildid_hex(build_id, sizeof(build_id), mod->build_id, mod->build_id_len);
			attr = attribute(p, ATTR_BUILD_ID_GNU, build_id, 0);
		}
	}
	pb_uint(&p->map_msg, MAPPING_MEMORY_START, m->start);
	pb_uint(&p->map_msg, MAPPING_MEMORY_LIMIT, m->end);
	pb_uint(&p->map_msg, MAPPING_FILE_OFFSET, m->file_offset);
	pb_uint(&p->map_msg, MAPPING_FILENAME, str(p, file));
	if (attr) {
		pb_varint(&p->map_attrs, attr);
		pb_msg(&p->map_msg, MAPPING_ATTRIBUTE_INDICES, &p->map_attrs);
	}
	idx = intern(p, &p->mappings, &p->map_msg);
	cache(p, p->mapping_idx, key, idx);
	return idx;
}

static uint32_t kernel_mapping(struct otlp *p)
{
	if (!p->kernel_mapping) {
		pb_uint(&p->map_msg, MAPPING_MEMORY_START, p->kernel_lo);
		pb_uint(&p->map_msg, MAPPING_MEMORY_LIMIT, p->kernel_hi);
		pb_uint(&p->map_msg, MAPPING_FILENAME, str(p, "[kernel.kallsyms]"));
		p->kernel_mapping = intern(p, &p->mappings, &p->map_msg);
	}
	return p->kernel_mapping;
}

static uint32_t function_index(struct otlp *p, const char *name, const char *file)
{
	uint64_t n = str(p, name);

	pb_uint(&p->fn_msg, FUNCTION_NAME, n);
	/* the session keeps only the demangled name */
	pb_uint(&p->fn_msg, FUNCTION_SYSTEM_NAME, n);
	pb_uint(&p->fn_msg, FUNCTION_FILENAME, str(p, file));
	return intern(p, &p->functions, &p->fn_msg);
}

/* A Line of @f's function, into the Location being built. */
static void line(struct otlp *p, const struct session_frame *f)
{
	char buf[128];
	uint32_t fn = f->python ? function_index(p, f->py_qualname, f->file) :
		      function_index(p, session_frame_name(f, buf, sizeof(buf)), f->file);

	pb_uint(&p->line, LINE_FUNCTION_INDEX, fn);
	pb_uint(&p->line, LINE_LINE, f->line);
	pb_msg(&p->loc_msg, LOCATION_LINES, &p->line);
}

/*
 * The Location of frame @frame of image @image, as the pprof exporter makes
 * it: the @ninlined frames @inlined at its address (innermost first) are its
 * first Lines, its own function the last.
 */
static uint32_t location_index(struct otlp *p, uint32_t image, uint32_t frame,
			       const uint32_t *inlined, uint32_t ninlined)
{
	const struct session_frame *f = session__frame(p->s, frame);
	/* kernel and Python frames are the same in every process */
	uint64_t key = f->kernel || f->python ? frame : (uint64_t)(image + 1) << 32 | frame;
	uint32_t idx = cached(p->location_idx, key), map_idx = 0;
	struct frame_place fp;

	if (idx)
		return idx - 1;
	frame_place(f->kernel || f->python ? NULL : image_layouts__get(p->layouts, p->s, image, &p->oom),
		    f, p->o->no_symbolize, &fp);
	if (f->kernel)
		map_idx = kernel_mapping(p);
	else if (fp.map != SIZE_MAX)
		map_idx = mapping_index(p, image, fp.map);
	pb_uint(&p->loc_msg, LOCATION_MAPPING_INDEX, map_idx);
	pb_uint(&p->loc_msg, LOCATION_ADDRESS, fp.addr);
	if (fp.named) {
		for (uint32_t i = 0; i < ninlined; i++)
			line(p, session__frame(p->s, inlined[i]));
		line(p, f);
	}
	idx = intern(p, &p->locations, &p->loc_msg);
	cache(p, p->location_idx, key, idx);
	return idx;
}

/* The Stack of session stack @stack sampled in image @image. */
static uint32_t stack_index(struct otlp *p, uint32_t image, uint32_t stack)
{
	uint64_t key = (uint64_t)image << 32 | stack;
	const struct session_stack *st = session__stack(p->s, stack);
	uint32_t idx = cached(p->stack_idx, key);

	if (idx)
		return idx - 1;
	/* leaf first, as the session keeps them: kernel frames, then user frames */
	for (uint32_t i = 0, run = 0; i < st->count; i++) {
		const struct session_frame *f = session__frame(p->s, st->frames[i]);

		/* the frames inlined at an address are Lines of the real function's Location */
		if (f->inlined) {
			run++;
			continue;
		}
		if (!f->omitted)
			pb_varint(&p->packed, location_index(p, image, st->frames[i],
							     st->frames + i - run, run));
		run = 0;
	}
	if (p->packed.len)
		pb_msg(&p->stack_msg, STACK_LOCATION_INDICES, &p->packed);
	idx = intern(p, &p->stacks, &p->stack_msg);
	cache(p, p->stack_idx, key, idx);
	return idx;
}

/* A stretch of a container runtime's cgroup path: the last run of 64 hex digits, or NULL. */
static const char *container_id(const char *cgroup, char out[65])
{
	size_t run = 0;
	const char *found = NULL;

	for (const char *c = cgroup ? cgroup : ""; ; c++) {
		bool hex = (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f');

		if (hex) {
			run++;
			continue;
		}
		if (run == 64)
			found = c - 64;
		run = 0;
		if (!*c)
			break;
	}
	if (!found)
		return NULL;
	memcpy(out, found, 64);
	out[64] = '\0';
	return out;
}

/* A Resource attribute (a KeyValue, its key written in place). */
static void resource_attr(struct otlp *p, struct pb *res, const char *key, const char *s,
			  int64_t num)
{
	put_string(p, &p->attr, KEY_VALUE_KEY, key);
	any_value(p, s, num);
	pb_msg(&p->attr, KEY_VALUE_VALUE, &p->any);
	pb_msg(res, RESOURCE_ATTRIBUTES, &p->attr);
}

/* The attributes of the resource of process image @image (no resources given). */
static void process_resource(struct otlp *p, struct pb *res, uint32_t image)
{
	const struct session_image *im = session__image(p->s, image);
	const char *host = session__meta(p->s)->host, *exe = im->exe && *im->exe ? im->exe : NULL;
	const char *name = exe ? (strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe) : im->comm;
	char *service = NULL, cid[65];

	/* what the SDKs name a service nobody named */
	if (asprintf(&service, "unknown_service:%s", name ? name : "") < 0) {
		service = NULL;
		p->oom = true;
		return;
	}
	resource_attr(p, res, "service.name", service, 0);
	free(service);
	if (host && *host)
		resource_attr(p, res, "host.name", host, 0);
	resource_attr(p, res, "process.pid", NULL, im->pid);
	if (name && *name)
		resource_attr(p, res, "process.executable.name", name, 0);
	if (exe)
		resource_attr(p, res, "process.executable.path", exe, 0);
	if (container_id(im->cgroup, cid))
		resource_attr(p, res, "container.id", cid, 0);
}

static void value_type(struct otlp *p, struct pb *prof, unsigned field, const char *type,
		       const char *unit)
{
	pb_uint(&p->attr, VALUE_TYPE_TYPE, str(p, type));
	pb_uint(&p->attr, VALUE_TYPE_UNIT, str(p, unit));
	pb_msg(prof, field, &p->attr);
}

struct request {
	int *res_of;		/* by sample: its resource, -1 when left out */
	size_t *order;		/* kept samples, grouped by resource */
	size_t *start;		/* by resource: where its samples start in @order (nres + 1) */
	uint32_t *res_image;	/* no resources given: by resource, its (first) image */
	size_t nres;
	struct export_units u;
	uint64_t time_ns, duration_ns;
};

/*
 * Which resource each sample goes to: the caller's, or one per process
 * image (its pid and executable: images of the same pid and executable are one).
 */
static int assign_resources(struct otlp *p, struct request *rq)
{
	const struct otlp_opts *o = p->o;
	size_t n = session__nsamples(p->s), nimages = session__nimages(p->s);
	uint32_t *image_res = NULL;
	struct hmap *procs = NULL;
	int err = -ENOMEM;

	rq->res_of = calloc(n + 1, sizeof(*rq->res_of));
	if (!rq->res_of)
		goto out;
	if (o->nresources) {
		rq->nres = o->nresources;
	} else {
		image_res = calloc(nimages + 1, sizeof(*image_res));
		rq->res_image = calloc(nimages + 1, sizeof(*rq->res_image));
		procs = hmap__new(HMAP_BYTES);
		if (!image_res || !rq->res_image || !procs)
			goto out;
		for (uint32_t i = 0; i < nimages; i++) {
			const struct session_image *im = session__image(p->s, i);
			const char *exe = im->exe ? im->exe : "";
			size_t len = strlen(exe);
			char *key = malloc(sizeof(im->pid) + len);
			uint64_t *v;
			int ret;

			if (!key)
				goto out;
			memcpy(key, &im->pid, sizeof(im->pid));
			memcpy(key + sizeof(im->pid), exe, len);
			ret = hmap__entry(procs, key, sizeof(im->pid) + len, &v, NULL);
			free(key);
			if (ret)
				goto out;
			if (!*v) {
				rq->res_image[rq->nres] = i;
				*v = ++rq->nres;
			}
			image_res[i] = *v - 1;
		}
	}
	for (size_t i = 0; i < n; i++) {
		int r;

		if (o->resource_of)
			r = o->resource_of(o->ctx, p->s, i);
		else
			r = o->nresources ? 0 : (int)image_res[session__sample(p->s, i)->image];
		rq->res_of[i] = r >= 0 && (size_t)r < rq->nres ? r : -1;
	}
	err = 0;
out:
	free(image_res);
	hmap__free(procs);
	return err;
}

/* Group the kept samples by resource (a counting sort), note the time and the kernel's range. */
static int sort_samples(struct otlp *p, struct request *rq)
{
	size_t n = session__nsamples(p->s), kept = 0;
	uint64_t first = UINT64_MAX, last = 0;
	const struct profile_meta *meta = session__meta(p->s);

	rq->order = calloc(n + 1, sizeof(*rq->order));
	rq->start = calloc(rq->nres + 1, sizeof(*rq->start));
	if (!rq->order || !rq->start)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct session_sample *sm = session__sample(p->s, i);
		const struct session_stack *st = session__stack(p->s, sm->stack);

		if (rq->res_of[i] < 0)
			continue;
		kept++;
		rq->start[rq->res_of[i] + 1]++;
		first = sm->time_ns < first ? sm->time_ns : first;
		last = sm->time_ns > last ? sm->time_ns : last;
		for (uint32_t j = 0; j < st->kernel && j < st->count; j++) {
			const struct session_frame *f = session__frame(p->s, st->frames[j]);

			if (!f->kernel)
				continue;
			if (!p->kernel_lo || f->addr < p->kernel_lo)
				p->kernel_lo = f->addr;
			if (f->addr >= p->kernel_hi)
				p->kernel_hi = f->addr + 1;
		}
	}
	for (size_t r = 0; r < rq->nres; r++)
		rq->start[r + 1] += rq->start[r];
	for (size_t i = 0; i < n; i++)
		if (rq->res_of[i] >= 0)
			rq->order[rq->start[rq->res_of[i]]++] = i;
	/* the loop moved each start to its end: back */
	for (size_t r = rq->nres; r > 0; r--)
		rq->start[r] = rq->start[r - 1];
	rq->start[0] = 0;
	if (p->o->time_ns) {
		rq->time_ns = p->o->time_ns;
		rq->duration_ns = p->o->duration_ns;
	} else {
		rq->time_ns = kept ? first + meta->clock_offset_ns : meta->created_ns;
		rq->duration_ns = kept ? last - first : 0;
	}
	return 0;
}

/* The identity of a Sample: its stack and attribute indexes, as bytes to merge by. */
static void sample_key(struct pb *key, const struct agg *a)
{
	key->len = 0;
	pb_varint(key, a->stack);
	for (uint32_t i = 0; i < a->nattrs; i++)
		pb_varint(key, a->attrs[i]);
}

/* The Profile of resource @r: its samples, merged by identity, in order of first appearance. */
static void put_profile(struct otlp *p, const struct request *rq, size_t r, struct pb *prof)
{
	const struct export_units *u = &rq->u;
	const char *type = !u->type ? "samples" : !strcmp(u->type, "offcpu") ? "off_cpu" : u->type;
	const char *unit = u->type ? u->unit : "count";
	struct hmap *ids = hmap__new(HMAP_BYTES);
	struct agg *aggs = NULL;
	size_t naggs = 0, cap = 0;
	struct pb key = { 0 }, sample = { 0 };

	if (!ids) {
		p->oom = true;
		return;
	}
	value_type(p, prof, PROFILE_SAMPLE_TYPE, type, unit);
	for (size_t k = rq->start[r]; k < rq->start[r + 1]; k++) {
		const struct session_sample *sm = session__sample(p->s, rq->order[k]);
		struct agg a = { .stack = stack_index(p, sm->image, sm->stack) };
		uint64_t *slot;

		if (!p->o->no_thread_label) {
			a.attrs[a.nattrs++] = attribute(p, ATTR_THREAD_ID, NULL, sm->tid);
			a.attrs[a.nattrs++] = attribute(p, ATTR_THREAD_NAME, sm->comm ? sm->comm : "",
							0);
		}
		/* the caller's resources may hold several processes */
		if (p->o->nresources)
			a.attrs[a.nattrs++] = attribute(p, ATTR_PID, NULL, sm->pid);
		a.value = u->weight_ns ? sm->weight : (uint64_t)sm->weight * u->mult;
		sample_key(&key, &a);
		if (key.oom || hmap__entry(ids, key.p, key.len, &slot, NULL)) {
			p->oom = true;
			break;
		}
		if (*slot) {
			aggs[*slot - 1].value += a.value;
			continue;
		}
		if (VEC_RESERVE(aggs, cap, naggs + 1, 64)) {
			/* the entry stays, pointing past the end: nothing more is read */
			p->oom = true;
			break;
		}
		aggs[naggs++] = a;
		*slot = naggs;
	}
	key.len = 0;
	for (size_t i = 0; i < naggs && !p->oom; i++) {
		pb_uint(&sample, SAMPLE_STACK_INDEX, aggs[i].stack);
		for (uint32_t j = 0; j < aggs[i].nattrs; j++)
			pb_varint(&key, aggs[i].attrs[j]);
		if (aggs[i].nattrs)
			pb_msg(&sample, SAMPLE_ATTRIBUTE_INDICES, &key);
		pb_varint(&key, aggs[i].value);
		pb_msg(&sample, SAMPLE_VALUES, &key);
		pb_msg(prof, PROFILE_SAMPLES, &sample);
	}
	pb_fixed64(prof, PROFILE_TIME_UNIX_NANO, rq->time_ns);
	pb_uint(prof, PROFILE_DURATION_NANO, rq->duration_ns);
	/* weights in ns are measured, not sampled at a period */
	if (!u->weight_ns) {
		value_type(p, prof, PROFILE_PERIOD_TYPE, type, unit);
		pb_uint(prof, PROFILE_PERIOD, u->mult);
	}
	p->oom |= key.oom || sample.oom;
	pb_release(&key);
	pb_release(&sample);
	hmap__free(ids);
	free(aggs);
}

/* The ResourceProfiles of every resource with samples, into @req. */
static void put_resources(struct otlp *p, const struct request *rq, struct pb *req)
{
	struct pb rp = { 0 }, res = { 0 }, sp = { 0 }, scope = { 0 }, prof = { 0 };

	for (size_t r = 0; r < rq->nres && !p->oom; r++) {
		if (rq->start[r] == rq->start[r + 1])
			continue;
		if (p->o->nresources) {
			/* no resources[] with a count: resources without attributes */
			const struct otlp_resource *or = p->o->resources ? &p->o->resources[r] : NULL;

			for (size_t i = 0; or && i < or->nattrs; i++)
				resource_attr(p, &res, or->attrs[i].key, or->attrs[i].str,
					      or->attrs[i].num);
		} else {
			process_resource(p, &res, rq->res_image[r]);
		}
		pb_msg(&rp, RESOURCE_PROFILES_RESOURCE, &res);
		put_string(p, &scope, SCOPE_NAME, "sfprof");
		if (*SFPROF_VERSION)
			put_string(p, &scope, SCOPE_VERSION, SFPROF_VERSION);
		pb_msg(&sp, SCOPE_PROFILES_SCOPE, &scope);
		put_profile(p, rq, r, &prof);
		pb_msg(&sp, SCOPE_PROFILES_PROFILES, &prof);
		pb_msg(&rp, RESOURCE_PROFILES_SCOPE_PROFILES, &sp);
		pb_msg(req, REQUEST_RESOURCE_PROFILES, &rp);
	}
	p->oom |= rp.oom || res.oom || sp.oom || scope.oom || prof.oom || req->oom;
	pb_release(&rp);
	pb_release(&res);
	pb_release(&sp);
	pb_release(&scope);
	pb_release(&prof);
}

/* The request: its resources, then the dictionary they index, written to @out. */
static int write_request(struct otlp *p, const struct pb *req, FILE *out)
{
	/* Link{}: 16 and 8 zero bytes, for codecs that insist on the IDs' lengths */
	static const uint8_t zero_id[16];
	struct pb strings = { 0 }, link = { 0 }, head = { 0 };
	const struct pb *parts[8];
	size_t nparts = 0, len = 0;
	int err = -ENOMEM;

	pb_bytes(&link, LINK_TRACE_ID, zero_id, 16);
	pb_bytes(&link, LINK_SPAN_ID, zero_id, 8);
	pb_msg(&strings, DICT_LINK, &link);
	/* the dictionary's fields in their numbers' order; the link table before the strings */
	for (size_t i = 0; i < p->strs.count; i++)
		pb_bytes(&strings, DICT_STRING, p->strs.strs[i], strlen(p->strs.strs[i]));
	parts[nparts++] = &p->mappings.body;
	parts[nparts++] = &p->locations.body;
	parts[nparts++] = &p->functions.body;
	parts[nparts++] = &strings;
	parts[nparts++] = &p->attributes.body;
	parts[nparts++] = &p->stacks.body;
	for (size_t i = 0; i < nparts; i++)
		len += parts[i]->len;
	pb_varint(&head, REQUEST_DICTIONARY << 3 | PB_WIRE_LEN);
	pb_varint(&head, len);
	if (strings.oom || link.oom || head.oom)
		goto out;
	err = -EIO;
	if (!pb_write(req, out) || !pb_write(&head, out))
		goto out;
	for (size_t i = 0; i < nparts; i++)
		if (!pb_write(parts[i], out))
			goto out;
	err = 0;
out:
	pb_release(&strings);
	pb_release(&link);
	pb_release(&head);
	return err;
}

int export_otlp(const struct session *s, FILE *out)
{
	static const struct otlp_opts all = { 0 };

	return export_otlp_opts(s, out, &all);
}

int export_otlp_opts(const struct session *s, FILE *out, const struct otlp_opts *o)
{
	struct otlp p = { .s = s, .o = o };
	struct request rq = { 0 };
	struct pb req = { 0 };
	size_t n = session__nsamples(s);
	int err = -ENOMEM;

	p.layouts = calloc(session__nimages(s) + 1, sizeof(*p.layouts));
	p.location_idx = hmap__new(HMAP_U64);
	p.mapping_idx = hmap__new(HMAP_U64);
	p.stack_idx = hmap__new(HMAP_U64);
	if (!p.layouts || !p.location_idx || !p.mapping_idx || !p.stack_idx ||
	    table__init(&p.mappings, DICT_MAPPING, NULL, 0) ||
	    table__init(&p.locations, DICT_LOCATION, NULL, 0) ||
	    table__init(&p.functions, DICT_FUNCTION, NULL, 0) ||
	    table__init(&p.attributes, DICT_ATTRIBUTE, NULL, 0) ||
	    table__init(&p.stacks, DICT_STACK, NULL, 0))
		goto out;
	str(&p, "");	/* string_table[0] */
	/* one event's samples (pick_event()): its units */
	rq.u = export_units_of(s, n ? session__sample(s, 0)->event : 0);
	if ((err = assign_resources(&p, &rq)) || (err = sort_samples(&p, &rq)))
		goto out;
	put_resources(&p, &rq, &req);
	err = -ENOMEM;
	if (p.oom || req.oom)
		goto out;
	err = write_request(&p, &req, out);
out:
	for (size_t i = 0; p.layouts && i < session__nimages(s); i++)
		image_layout__release(&p.layouts[i]);
	free(p.layouts);
	hmap__free(p.location_idx);
	hmap__free(p.mapping_idx);
	hmap__free(p.stack_idx);
	table__release(&p.mappings);
	table__release(&p.locations);
	table__release(&p.functions);
	table__release(&p.attributes);
	table__release(&p.stacks);
	strtab__release(&p.strs);
	pb_release(&p.map_msg);
	pb_release(&p.map_attrs);
	pb_release(&p.loc_msg);
	pb_release(&p.fn_msg);
	pb_release(&p.line);
	pb_release(&p.stack_msg);
	pb_release(&p.attr);
	pb_release(&p.any);
	pb_release(&p.packed);
	pb_release(&req);
	free(rq.res_of);
	free(rq.order);
	free(rq.start);
	free(rq.res_image);
	return err;
}
