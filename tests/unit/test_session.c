/* SPDX-License-Identifier: BSD-2-Clause */
/* Session: mappings replace whole what they overlap, as records come, at any scale; frames placed as then. */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "profile/profile.h"
#include "report/export.h"
#include "report/session.h"
#include "sfunwind/cbf.h"
#include "common/hmap.h"

#define PAGE 0x1000ull
#define WINDOW 0x7f0000000000ull
#define NMODULES 4

/* ---- the rule, written again the slow way: a list, searched whole ---- */

struct model_map {
	uint64_t start, end, file_offset;
	uint8_t prot;
	int module;		/* 0 none, else 1 + index of its path */
};

struct model_image {
	struct model_map *maps;
	size_t n, cap;
};

/* A mapping removes every mapping it overlaps, whole, then joins them. */
static void model_add(struct model_image *im, const struct model_map *m)
{
	size_t kept = 0;

	for (size_t i = 0; i < im->n; i++)
		if (!(im->maps[i].start < m->end && m->start < im->maps[i].end))
			im->maps[kept++] = im->maps[i];
	im->n = kept;
	if (im->n == im->cap) {
		im->cap = im->cap ? 2 * im->cap : 64;
		im->maps = realloc(im->maps, im->cap * sizeof(*im->maps));
		assert_non_null(im->maps);
	}
	im->maps[im->n++] = *m;
}

static const struct model_map *model_find(const struct model_image *im, uint64_t addr)
{
	for (size_t i = 0; i < im->n; i++)
		if (im->maps[i].start <= addr && addr < im->maps[i].end)
			return &im->maps[i];
	return NULL;
}

static int model_cmp(const void *pa, const void *pb)
{
	const struct model_map *a = pa, *b = pb;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* ---- writing the profile ---- */

struct gen {
	struct profile_writer *w;
	uint32_t module_ids[NMODULES];
	uint64_t time;
};

static const char *const module_paths[NMODULES] = {
	"/nonexistent/sfprof-test/liba.so", "/nonexistent/sfprof-test/libb.so",
	"/nonexistent/sfprof-test/libc.so", "/nonexistent/sfprof-test/big.so",
};

static void gen_open(struct gen *g, const char *path)
{
	static const uint8_t build_id[20] = { 0x5e, 0x55 };
	struct profile_meta meta = { .freq_hz = 999 };
	struct profile_diag diag;

	memset(g, 0, sizeof(*g));
	g->w = profile_writer__create(path, &meta, &diag);
	if (!g->w)
		fail_msg("%s", diag.reason);
	for (int i = 0; i < NMODULES; i++) {
		struct profile_module mod = { .build_id = build_id, .build_id_len = sizeof(build_id),
					      .path = module_paths[i] };
		uint8_t id[20];

		/* a build ID each: markup describes only modules that have one */
		memcpy(id, build_id, sizeof(id));
		id[19] = i;
		mod.build_id = id;
		assert_int_equal(profile_writer__module(g->w, &mod, &g->module_ids[i]), 0);
	}
}

static void gen_map(struct gen *g, uint32_t pid, const struct model_map *m)
{
	struct profile_mapping rec = { pid, m->start, m->end, m->file_offset, m->prot,
				       m->module ? g->module_ids[m->module - 1] : 0 };

	assert_int_equal(profile_writer__mapping(g->w, &rec), 0);
}

/* A sample of @pid whose user stack is @pc, then @ra as its caller's return address. */
static void gen_sample(struct gen *g, uint32_t pid, uint64_t pc, uint64_t ra)
{
	uint8_t cbf[SFU_CBF_BOUND(2)];
	uint64_t addrs[2] = { pc, ra };
	struct sfu_cbf_enc enc;
	struct profile_sample s = { .pid = pid, .tid = pid, .weight = 1 };

	assert_int_equal(sfu_cbf_enc__init(&enc, 64, cbf, sizeof(cbf)), 0);
	assert_int_equal(sfu_cbf_encode_stack(&enc, addrs, 2, 0, false), 0);
	s.time_ns = g->time += 1000;
	s.ustack = cbf;
	s.ustack_len = sfu_cbf_enc__len(&enc);
	assert_int_equal(profile_writer__sample(g->w, &s), 0);
}

static void gen_close(struct gen *g)
{
	struct profile_diag diag;

	if (profile_writer__close(g->w, false, &diag))
		fail_msg("%s", diag.reason);
}

static struct session *open_session(const char *path)
{
	struct session_opts opts = { .sym = { .no_debuginfod = true, .no_lines = true } };
	struct profile_diag diag;
	struct session *s = session__open(path, &opts, &diag);

	if (!s)
		fail_msg("%s", diag.reason);
	assert_false(profile_status_damaged(session__status(s)));
	return s;
}

/* ---- what a frame must be, by the model ---- */

struct want_frame {
	const char *dso;
	uint64_t offset;
};

/* A frame at @addr (a return address when @is_ra) with the model's mappings then. */
static struct want_frame model_frame(const struct model_image *im, uint64_t addr, bool is_ra)
{
	const struct model_map *m = model_find(im, is_ra ? addr - 1 : addr);

	if (!m)
		return (struct want_frame){ "[unknown]", addr };
	if (!m->module)
		return (struct want_frame){ "[anon]", addr };
	return (struct want_frame){ strrchr(module_paths[m->module - 1], '/') + 1,
				    addr - m->start + m->file_offset };
}

static void _check_frame(const struct session *s, uint32_t fi, const struct want_frame *want,
			 size_t sample, const char *file, int line)
{
	const struct session_frame *f = session__frame(s, fi);

	if (strcmp(f->dso, want->dso) || f->offset != want->offset || f->sym) {
		print_error("sample %zu: frame %s+%#" PRIx64 ", want %s+%#" PRIx64 "\n", sample,
			    f->dso, f->offset, want->dso, want->offset);
		_fail(file, line);
	}
}
#define check_frame(s, fi, w, i) _check_frame(s, fi, w, i, __FILE__, __LINE__)

/* The session's mappings of image @im against the model's, sorted. */
static void _check_maps(const struct session *s, const struct session_image *im,
			struct model_image *model, const char *file, int line)
{
	qsort(model->maps, model->n, sizeof(*model->maps), model_cmp);
	if (im->nmaps != model->n) {
		print_error("%zu mappings, want %zu\n", im->nmaps, model->n);
		_fail(file, line);
	}
	for (size_t i = 0; i < im->nmaps; i++) {
		const struct session_map *got = &im->maps[i];
		const struct model_map *want = &model->maps[i];
		const char *path = got->module ? session__module(s, got->module - 1)->path : NULL;

		if (got->start != want->start || got->end != want->end ||
		    got->file_offset != want->file_offset || got->prot != want->prot ||
		    !got->module != !want->module ||
		    (want->module && strcmp(path, module_paths[want->module - 1]))) {
			print_error("mapping %zu: %#" PRIx64 "-%#" PRIx64 " off %#" PRIx64
				    " prot %u %s, want %#" PRIx64 "-%#" PRIx64 " off %#" PRIx64
				    " prot %u %s\n", i, got->start, got->end, got->file_offset,
				    got->prot, path ? path : "-", want->start, want->end,
				    want->file_offset, want->prot,
				    want->module ? module_paths[want->module - 1] : "-");
			_fail(file, line);
		}
	}
}
#define check_maps(s, im, m) _check_maps(s, im, m, __FILE__, __LINE__)

/* ---- random records against the model ---- */

#define RANDOM_PIDS 2
#define RANDOM_OPS 6000
#define RANDOM_PAGES 800

struct expected_sample {
	struct want_frame pc, ra;
};

/* An address no sample used yet: frames outside modules are interned by address. */
static uint64_t fresh_addr(struct test_rng *rng, struct hmap *used)
{
	for (;;) {
		uint64_t a = WINDOW + rng_range(rng, 0, (RANDOM_PAGES + 16) * PAGE);
		uint64_t *v;

		assert_int_equal(hmap__entry_u64(used, a, &v), 0);
		if (!*v) {
			*v = 1;
			return a;
		}
	}
}

static void random_records(const char *path, uint64_t seed, struct model_image *models,
			   struct expected_sample **expect, size_t *nexpect)
{
	struct hmap *used = hmap__new(HMAP_U64);
	struct test_rng rng;
	struct gen g;
	size_t cap = 0;

	assert_non_null(used);
	rng_seed(&rng, seed);
	gen_open(&g, path);
	*expect = NULL;
	*nexpect = 0;
	for (int op = 0; op < RANDOM_OPS; op++) {
		uint32_t p = rng_range(&rng, 0, RANDOM_PIDS - 1);
		struct model_image *im = &models[p];
		int kind = rng_range(&rng, 0, 99);

		if (kind < 60) {
			uint64_t start = WINDOW + PAGE * rng_range(&rng, 0, RANDOM_PAGES);
			struct model_map m = { start, start + PAGE * rng_range(&rng, 1, 12),
					       PAGE * rng_range(&rng, 0, 63), rng_range(&rng, 0, 7),
					       (int)rng_range(&rng, 0, NMODULES) };

			gen_map(&g, 100 + p, &m);
			model_add(im, &m);
		} else if (kind < 99) {
			struct expected_sample *e;
			uint64_t pc = fresh_addr(&rng, used), ra = fresh_addr(&rng, used);

			/* a return address just past a mapping's end belongs to it */
			if (im->n && rng_range(&rng, 0, 3) == 0) {
				const struct model_map *m = &im->maps[rng_range(&rng, 0, im->n - 1)];
				uint64_t *v;

				assert_int_equal(hmap__entry_u64(used, m->end, &v), 0);
				if (!*v) {
					*v = 1;
					ra = m->end;
				}
			}
			gen_sample(&g, 100 + p, pc, ra);
			if (*nexpect == cap) {
				cap = cap ? 2 * cap : 256;
				*expect = realloc(*expect, cap * sizeof(**expect));
				assert_non_null(*expect);
			}
			e = &(*expect)[(*nexpect)++];
			e->pc = model_frame(im, pc, false);
			e->ra = model_frame(im, ra, true);
		} else {
			/* exec: a new image, none of the old mappings */
			struct profile_process proc = { .pid = 100 + p, .comm = "exec" };

			assert_int_equal(profile_writer__process(g.w, &proc), 0);
			im->n = 0;
		}
	}
	gen_close(&g);
	hmap__free(used);
}

/* The image of the last sample of @pid: its final mappings. */
static const struct session_image *last_image(const struct session *s, uint32_t pid)
{
	const struct session_image *found = NULL;

	for (size_t i = 0; i < session__nimages(s); i++)
		if (session__image(s, i)->pid == pid)
			found = session__image(s, i);
	assert_non_null(found);
	return found;
}

static void test_random_mappings(void **state)
{
	char *path = path_join_or_fail(*state, "random.data");

	for (uint64_t seed = 1; seed <= 4; seed++) {
		struct model_image models[RANDOM_PIDS] = { { 0 } };
		struct expected_sample *expect;
		struct session *s;
		size_t n;

		print_message("random mappings, seed %" PRIu64 "\n", seed);
		random_records(path, seed, models, &expect, &n);
		s = open_session(path);
		assert_int_equal(session__nsamples(s), n);
		for (size_t i = 0; i < n; i++) {
			const struct session_stack *st = session__stack(s, session__sample(s, i)->stack);

			assert_int_equal(st->count, 2);
			check_frame(s, st->frames[0], &expect[i].pc, i);
			check_frame(s, st->frames[1], &expect[i].ra, i);
		}
		for (uint32_t p = 0; p < RANDOM_PIDS; p++) {
			check_maps(s, last_image(s, 100 + p), &models[p]);
			free(models[p].maps);
		}
		session__free(s);
		free(expect);
	}
	free(path);
}

/*
 * Many mappings, their answer known by construction: N one-page mappings
 * two pages apart written from the top down, then N / 2 three-page mappings
 * in a shuffled order, each over a pair of them (which both go, whole) and
 * the gap between; samples before and after in every part.
 */
#define MANY 100000

static void test_many_mappings(void **state)
{
	char *path = path_join_or_fail(*state, "many.data");
	size_t *order = malloc(MANY / 2 * sizeof(*order));
	const struct session_image *im;
	struct test_rng rng;
	struct session *s;
	size_t k = 0;
	struct gen g;

	assert_non_null(order);
	rng_seed(&rng, 42);
	gen_open(&g, path);
	for (size_t i = MANY; i-- > 0;) {
		uint64_t start = WINDOW + 2 * PAGE * i;
		struct model_map m = { start, start + PAGE, PAGE * i, 5, 1 + i % 3 };

		gen_map(&g, 7, &m);
	}
	/* in each small page, in the gap after it, and at the end of a pair as a return address */
	for (size_t i = 0; i < MANY; i += 97)
		gen_sample(&g, 7, WINDOW + 2 * PAGE * i + 0x10, WINDOW + 2 * PAGE * i + PAGE);
	for (size_t j = 0; j < MANY / 2; j++)
		order[j] = j;
	for (size_t j = MANY / 2; j > 1; j--) {
		size_t r = rng_range(&rng, 0, j - 1), t = order[j - 1];

		order[j - 1] = order[r];
		order[r] = t;
	}
	for (size_t j = 0; j < MANY / 2; j++) {
		uint64_t start = WINDOW + 4 * PAGE * order[j];
		struct model_map m = { start, start + 3 * PAGE, 0x100000, 5, 4 };

		gen_map(&g, 7, &m);
	}
	for (size_t i = 0; i < MANY; i += 97)
		gen_sample(&g, 7, WINDOW + 2 * PAGE * i + 0x10, WINDOW + 2 * PAGE * i + PAGE + 0x10);
	gen_close(&g);
	free(order);

	s = open_session(path);
	assert_int_equal(session__nsamples(s), 2 * ((MANY + 96) / 97));
	for (size_t n = 0, i = 0; i < MANY; i += 97, n++) {
		const struct session_stack *before = session__stack(s, session__sample(s, n)->stack);
		const struct session_stack *after =
			session__stack(s, session__sample(s, n + (MANY + 96) / 97)->stack);
		static const char *const small[] = { "liba.so", "libb.so", "libc.so" };
		uint64_t pair = 4 * PAGE * (i / 2), at = 2 * PAGE * i;
		struct want_frame w;

		w = (struct want_frame){ small[i % 3], PAGE * i + 0x10 };
		check_frame(s, before->frames[0], &w, n);
		/* the return address at the small page's end is in it */
		w = (struct want_frame){ small[i % 3], PAGE * i + PAGE };
		check_frame(s, before->frames[1], &w, n);
		if (at + PAGE < pair + 3 * PAGE) {
			w = (struct want_frame){ "big.so", 0x100000 + at - pair + 0x10 };
			check_frame(s, after->frames[0], &w, n);
			w = (struct want_frame){ "big.so", 0x100000 + at - pair + PAGE + 0x10 };
			check_frame(s, after->frames[1], &w, n);
		} else {
			/* the second of a pair: its page is the big one's last, the gap after it none's */
			w = (struct want_frame){ "big.so", 0x100000 + at - pair + 0x10 };
			check_frame(s, after->frames[0], &w, n);
			w = (struct want_frame){ "[unknown]", WINDOW + at + PAGE + 0x10 };
			check_frame(s, after->frames[1], &w, n);
		}
		k++;
	}
	im = last_image(s, 7);
	assert_int_equal(im->nmaps, MANY / 2);
	for (size_t j = 0; j < im->nmaps; j++) {
		assert_int_equal(im->maps[j].start, WINDOW + 4 * PAGE * j);
		assert_int_equal(im->maps[j].end, WINDOW + 4 * PAGE * j + 3 * PAGE);
		assert_string_equal(session__module(s, im->maps[j].module - 1)->path,
				    module_paths[3]);
	}
	assert_true(k > 1000);
	session__free(s);
	free(path);
}

/* ---- where exporters place frames: the linear search they did before, against the index ---- */

static bool old_frame_addr(const struct image_layout *l, const struct session_frame *f,
			   uint64_t *addr, size_t *map)
{
	const struct session_image *im = l->im;
	uint64_t rel = f->is_ra && f->rel ? f->rel - 1 : f->rel;

	*addr = f->addr;
	*map = SIZE_MAX;
	if (f->kernel || f->omitted)
		return false;
	if (!f->module) {
		for (size_t i = 0; i < im->nmaps; i++) {
			if (f->addr >= im->maps[i].start && f->addr < im->maps[i].end) {
				*map = i;
				break;
			}
		}
		return *map != SIZE_MAX;
	}
	for (size_t i = 0; i < im->nmaps; i++) {
		const struct session_map *m = &im->maps[i];

		if (m->module != f->module || !l->known[i])
			continue;
		if (rel >= l->vaddr[i] && rel - l->vaddr[i] < m->end - m->start) {
			*addr = f->rel - l->vaddr[i] + m->start;
			*map = i;
			return true;
		}
	}
	return false;
}

static void test_layout_frames(void **state)
{
	char *path = path_join_or_fail(*state, "layout.data");

	for (uint64_t seed = 11; seed <= 13; seed++) {
		struct model_image models[RANDOM_PIDS] = { { 0 } };
		struct expected_sample *expect;
		size_t n, placed = 0, checked = 0;
		struct session *s;

		random_records(path, seed, models, &expect, &n);
		s = open_session(path);
		/* frames are shared by images: each frame in each image, as the exporters ask */
		for (uint32_t i = 0; i < session__nimages(s); i++) {
			struct image_layout l;

			if (!session__image(s, i)->nmaps)
				continue;
			assert_int_equal(image_layout__init(&l, s, i), 0);
			for (uint32_t fi = 0; fi < session__nframes(s); fi++) {
				const struct session_frame *f = session__frame(s, fi);
				uint64_t got_addr, want_addr;
				size_t got_map, want_map;
				bool got = image_layout__frame_addr(&l, f, &got_addr, &got_map);
				bool want = old_frame_addr(&l, f, &want_addr, &want_map);

				if (got != want || got_addr != want_addr || got_map != want_map)
					fail_msg("seed %" PRIu64 ", image %u, frame %u (%s+%#" PRIx64
						 "): placed %d at %#" PRIx64 " in %zu, want %d at %#"
						 PRIx64 " in %zu", seed, i, fi, f->dso, f->offset, got,
						 got_addr, got_map, want, want_addr, want_map);
				placed += got;
				checked++;
			}
			image_layout__release(&l);
		}
		print_message("layout, seed %" PRIu64 ": %zu of %zu frames placed\n", seed, placed,
			      checked);
		assert_true(placed > checked / 10 && placed < checked);
		for (uint32_t p = 0; p < RANDOM_PIDS; p++)
			free(models[p].maps);
		session__free(s);
		free(expect);
	}
	free(path);
}

/* ---- JIT code: frames in anonymous memory named by the time their code was made ---- */

static void gen_jit(struct gen *g, uint64_t time, uint64_t start, uint64_t end, uint32_t flags,
		    const char *name, const char *source, const uint8_t *lines, size_t lines_len)
{
	struct profile_jit j = { time, 100, start, end, flags, name, source, lines, lines_len };

	assert_int_equal(profile_writer__jit(g->w, &j), 0);
}

/* The name of frame @k of sample @i's stack (its user frames), "" when unnamed. */
static const char *frame_sym(const struct session *s, size_t i, uint32_t k,
			     const struct session_frame **out)
{
	const struct session_sample *sm = session__sample(s, i);
	const struct session_stack *st = session__stack(s, sm->stack);
	const struct session_frame *f;

	assert_true(k < st->count);
	f = session__frame(s, st->frames[k]);
	if (out)
		*out = f;
	return f->sym ? f->sym : "";
}

static void test_jit_names(void **state)
{
	char *path = path_join_or_fail(*state, "jit.data");
	/* offset 0: a.js:10, offset 8: line 11 of the same file */
	static const uint8_t lines[] = { 0, 10, 4, 'a', '.', 'j', 's', 8, 11, 0 };
	const struct session_frame *f;
	struct session *s;
	struct gen g;

	gen_open(&g, path);
	gen_map(&g, 100, &(struct model_map){ 0x10000, 0x20000, 0, 5, 0 });
	g.time = 0;
	gen_sample(&g, 100, 0x10010, 0x10110);	/* 1000: before any code load */
	gen_jit(&g, 1500, 0x10000, 0x10100, 0, "js_a", "/tmp/jit-100.dump", lines, sizeof(lines));
	gen_sample(&g, 100, 0x10010, 0x10110);	/* 2000: js_a */
	gen_jit(&g, 2500, 0x10000, 0x10100, PROFILE_JIT_F_UNLOAD, "", "/tmp/jit-100.dump", NULL, 0);
	gen_sample(&g, 100, 0x10010, 0x10110);	/* 3000: freed, nothing there */
	gen_jit(&g, 3500, 0x10000, 0x10080, 0, "js_b", "/tmp/jit-100.dump", NULL, 0);
	gen_sample(&g, 100, 0x10010, 0x10110);	/* 4000: js_b */
	gen_sample(&g, 100, 0x10090, 0x10110);	/* 5000: past js_b, where js_a was */
	/* a perf map read at exit, after the samples: its lines hold at any time */
	gen_jit(&g, 9000, 0x10100, 0x10200, PROFILE_JIT_F_MAP, "map_fn", "/tmp/perf-100.map",
		NULL, 0);
	/* a map's line under timed code: the timed code names it */
	gen_jit(&g, 9000, 0x10000, 0x10010, PROFILE_JIT_F_MAP, "map_under", "/tmp/perf-100.map",
		NULL, 0);
	gen_close(&g);

	s = open_session(path);
	assert_int_equal(session__nsamples(s), 5);
	assert_string_equal(frame_sym(s, 0, 0, &f), "");
	assert_string_equal(f->dso, "[anon]");
	assert_string_equal(frame_sym(s, 0, 1, &f), "map_fn");
	assert_string_equal(f->dso, "perf-100.map");
	assert_int_equal(f->offset, 0xf);	/* named and offset at its call, 0x1010f */
	assert_string_equal(frame_sym(s, 1, 0, &f), "js_a");
	assert_string_equal(f->dso, "jit-100.dump");
	assert_int_equal(f->offset, 0x10);
	assert_non_null(f->file);
	assert_string_equal(f->file, "a.js");
	assert_int_equal(f->line, 11);
	assert_string_equal(frame_sym(s, 2, 0, NULL), "");
	assert_string_equal(frame_sym(s, 3, 0, NULL), "js_b");
	assert_string_equal(frame_sym(s, 4, 0, NULL), "");
	for (size_t i = 0; i < 5; i++)
		assert_string_equal(frame_sym(s, i, 1, NULL), "map_fn");
	session__free(s);

	/* hostile ranges: thousands nested over one address, one huge; lookups end */
	gen_open(&g, path);
	gen_map(&g, 100, &(struct model_map){ 0x10000, 0x20000, 0, 5, 0 });
	for (uint64_t i = 0; i < 20000; i++)
		gen_jit(&g, 100, 0x10000 + i, 0x20000 - i, PROFILE_JIT_F_MAP, "nested",
			"/tmp/perf-100.map", NULL, 0);
	gen_jit(&g, 100, 0, UINT64_MAX, PROFILE_JIT_F_MAP, "huge", "/tmp/perf-100.map", NULL, 0);
	g.time = 0;
	gen_sample(&g, 100, 0x17000, 0x18000);
	gen_close(&g);
	s = open_session(path);
	/* the newest line covering it is further than the scan goes: named by what the scan saw */
	assert_true(strcmp(frame_sym(s, 0, 0, NULL), ""));
	session__free(s);
	free(path);
}

/* Kernel frames in BPF programs: named by the recording's records (pid 0), not by kallsyms now. */
static void test_kernel_jit_names(void **state)
{
	char *path = path_join_or_fail(*state, "kjit.data");
	char *ksyms = path_join_or_fail(*state, "kallsyms");
	struct session_opts opts = { .sym = { .no_debuginfod = true, .no_lines = true,
					      .kallsyms = ksyms } };
	const struct session_frame *f;
	const struct session_stack *st;
	struct profile_diag diag;
	struct session *s;
	struct gen g;
	FILE *kf;

	/* kallsyms now: another program where the recorded one was; a module's function below */
	kf = fopen(ksyms, "w");
	assert_non_null(kf);
	fputs("ffffffffc0000000 t modfn\t[mod]\n"
	      "ffffffffc0010000 t bpf_prog_0123456789abcdef_other\t[bpf]\n"
	      "ffffffffc0020000 t bpf_prog_fedcba9876543210_live\t[bpf]\n", kf);
	fclose(kf);

	gen_open(&g, path);
	{
		uint8_t cbf[SFU_CBF_BOUND(4)];
		/* in the recorded program; past it, in the module's range; in the live one; modfn */
		uint64_t addrs[4] = { 0xffffffffc0010010, 0xffffffffc0018001, 0xffffffffc0020011,
				      0xffffffffc0000021 };
		struct sfu_cbf_enc enc;
		struct profile_sample smp = { .pid = 100, .tid = 100, .weight = 1, .time_ns = 1000 };

		assert_int_equal(sfu_cbf_enc__init(&enc, 64, cbf, sizeof(cbf)), 0);
		assert_int_equal(sfu_cbf_encode_stack(&enc, addrs, 4, 0, false), 0);
		smp.kstack = cbf;
		smp.kstack_len = sfu_cbf_enc__len(&enc);
		assert_int_equal(profile_writer__sample(g.w, &smp), 0);
	}
	/* written at the recording's end, after the sample; a later record at the same address wins */
	assert_int_equal(profile_writer__jit(g.w, &(struct profile_jit){ 2000, 0, 0xffffffffc0010000,
		0xffffffffc0010100, PROFILE_JIT_F_MAP, "bpf_prog_old_fork", "[bpf]", NULL, 0 }), 0);
	assert_int_equal(profile_writer__jit(g.w, &(struct profile_jit){ 2000, 0, 0xffffffffc0010000,
		0xffffffffc0010080, PROFILE_JIT_F_MAP, "bpf_prog_1111111111111111_fork", "[bpf]",
		NULL, 0 }), 0);
	gen_close(&g);

	s = session__open(path, &opts, &diag);
	if (!s)
		fail_msg("%s", diag.reason);
	st = session__stack(s, session__sample(s, 0)->stack);
	assert_int_equal(st->kernel, 4);
	f = session__frame(s, st->frames[0]);
	assert_non_null(f->sym);
	assert_string_equal(f->sym, "bpf_prog_1111111111111111_fork");
	assert_int_equal(f->offset, 0x10);
	assert_true(f->kernel);
	/* past every recorded range, in a program kallsyms lists now: not named after either */
	f = session__frame(s, st->frames[1]);
	assert_null(f->sym);
	f = session__frame(s, st->frames[2]);
	assert_null(f->sym);
	f = session__frame(s, st->frames[3]);
	assert_non_null(f->sym);
	assert_string_equal(f->sym, "modfn");
	session__free(s);
	free(ksyms);
	free(path);
}

/* A sample of pid 100 with kernel stack @k, user stack @u (NULL: none), @flags. */
static void exec_sample(struct gen *g, const uint64_t *k, const uint64_t *u, bool u_trunc,
			uint32_t flags)
{
	uint8_t kcbf[SFU_CBF_BOUND(2)], ucbf[SFU_CBF_BOUND(2)];
	struct profile_sample smp = { .pid = 100, .tid = 100, .weight = 1, .flags = flags };
	struct sfu_cbf_enc enc;

	smp.time_ns = g->time += 1000;
	assert_int_equal(sfu_cbf_enc__init(&enc, 64, kcbf, sizeof(kcbf)), 0);
	assert_int_equal(sfu_cbf_encode_stack(&enc, k, 2, 0, false), 0);
	smp.kstack = kcbf;
	smp.kstack_len = sfu_cbf_enc__len(&enc);
	if (u) {
		assert_int_equal(sfu_cbf_enc__init(&enc, 64, ucbf, sizeof(ucbf)), 0);
		assert_int_equal(sfu_cbf_encode_stack(&enc, u, 2, 0, u_trunc), 0);
		smp.ustack = ucbf;
		smp.ustack_len = sfu_cbf_enc__len(&enc);
	}
	assert_int_equal(profile_writer__sample(g->w, &smp), 0);
}

/*
 * A sample taken in execve with the registers of the program it replaced
 * (PROFILE_SAMPLE_F_EXEC_OLD_IMAGE): its kernel frames, then the one marker
 * frame, whatever user stack the record names; not truncated, not unknown,
 * a stack of its own beside the same kernel stack without the flag.
 */
static void test_exec_old_image(void **state)
{
	char *path = path_join_or_fail(*state, "exec.data");
	static const uint64_t k[2] = { 0xffffffff81000010, 0xffffffff81000120 };
	static const uint64_t u[2] = { 0x10010, 0x10110 };
	const struct session_stack *st[4];
	const struct session_frame *f;
	struct profile_reader *r;
	struct profile_record rec;
	struct profile_diag diag;
	struct session *s;
	uint32_t flags[4], n = 0;
	struct gen g;

	gen_open(&g, path);
	gen_map(&g, 100, &(struct model_map){ 0x10000, 0x20000, 0, 5, 1 });
	exec_sample(&g, k, u, false, 0);
	exec_sample(&g, k, u, false, PROFILE_SAMPLE_F_EXEC_OLD_IMAGE);	/* a stack given: ignored */
	exec_sample(&g, k, NULL, false, PROFILE_SAMPLE_F_EXEC_OLD_IMAGE);
	exec_sample(&g, k, u, true, 0);
	gen_close(&g);

	/* the field read back where written; none where not (files from before it read alike) */
	r = profile_reader__open(path, &diag);
	if (!r)
		fail_msg("%s", diag.reason);
	while (profile_reader__next(r, &rec) > 0)
		if (rec.type == PROFILE_REC_SAMPLE && n < 4)
			flags[n++] = rec.sample.flags;
	profile_reader__free(r);
	assert_int_equal(n, 4);
	assert_int_equal(flags[0], 0);
	assert_int_equal(flags[1], PROFILE_SAMPLE_F_EXEC_OLD_IMAGE);
	assert_int_equal(flags[2], PROFILE_SAMPLE_F_EXEC_OLD_IMAGE);
	assert_int_equal(flags[3], 0);

	s = open_session(path);
	assert_int_equal(session__nsamples(s), 4);
	for (size_t i = 0; i < 4; i++)
		st[i] = session__stack(s, session__sample(s, i)->stack);
	assert_int_equal(st[0]->count, 4);
	assert_false(st[0]->truncated);
	assert_ptr_equal(st[1], st[2]);
	assert_ptr_not_equal(st[0], st[1]);
	assert_int_equal(st[1]->kernel, 2);
	assert_int_equal(st[1]->count, 3);
	assert_false(st[1]->truncated);
	f = session__frame(s, st[1]->frames[2]);
	assert_true(f->old_image);
	assert_false(f->kernel);
	assert_int_equal(f->module, 0);
	assert_int_equal(f->addr, 0);
	assert_string_equal(f->sym, SESSION_EXEC_OLD_IMAGE);
	assert_string_equal(f->dso, SESSION_EXEC_OLD_IMAGE_DSO);
	for (uint32_t i = 0; i < st[0]->count; i++)
		assert_false(session__frame(s, st[0]->frames[i])->old_image);
	assert_true(st[3]->truncated);
	assert_int_equal(session__totals(s)->truncated, 1);
	session__free(s);
	free(path);
}

/* ---- inlined frames: a chain known by construction (inline_fixture.c), looked up once ---- */

struct fixture_segs {
	const char *path;
	uintptr_t base;
	struct model_map maps[8];
	size_t n;
};

static int fixture_phdr(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct fixture_segs *fs = arg;

	(void)size;
	if (!info->dlpi_name || strcmp(info->dlpi_name, fs->path))
		return 0;
	fs->base = info->dlpi_addr;
	for (size_t i = 0; i < info->dlpi_phnum && fs->n < 8; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		/* as the loader maps them: from the page holding the segment's start */
		fs->maps[fs->n++] = (struct model_map){
			start & ~(PAGE - 1), (start + ph->p_memsz + PAGE - 1) & ~(PAGE - 1),
			ph->p_offset & ~(PAGE - 1),
			(uint8_t)((ph->p_flags & PF_R ? 1 : 0) | (ph->p_flags & PF_W ? 2 : 0) |
				  (ph->p_flags & PF_X ? 4 : 0)), 1 };
	}
	return 1;
}

static struct session *open_session_inline(const char *path, bool no_inline)
{
	struct session_opts opts = { .sym = { .no_debuginfod = true, .no_inline = no_inline } };
	struct profile_diag diag;
	struct session *s = session__open(path, &opts, &diag);

	if (!s)
		fail_msg("%s", diag.reason);
	return s;
}

static void _check_chain(const struct session *s, const uint32_t *frames, bool is_ra,
			 const char *const *want, size_t n, const char *file, int line)
{
	for (size_t k = 0; k < n; k++) {
		const struct session_frame *f = session__frame(s, frames[k]);

		if (!f->sym || strcmp(f->sym, want[k]) || f->inlined != (k + 1 < n) ||
		    f->is_ra != is_ra || f->addr != session__frame(s, frames[n - 1])->addr ||
		    f->rel != session__frame(s, frames[n - 1])->rel || !f->line) {
			print_error("frame %zu: %s (inlined %d, ra %d, line %u), want %s (inlined %d, "
				    "ra %d)\n", k, f->sym ? f->sym : "(null)", f->inlined, f->is_ra,
				    f->line, want[k], k + 1 < n, is_ra);
			_fail(file, line);
		}
	}
}
#define check_chain(s, fr, ra, want, n) _check_chain(s, fr, ra, want, n, __FILE__, __LINE__)

static void test_inlined_frames(void **state)
{
	static const char *const chain[] = { "inline_fixture_inner", "inline_fixture_middle",
					     "inline_fixture_outer" };
	char *path = path_join_or_fail(*state, "inline.data");
	struct fixture_segs fs = { .path = INLINE_FIXTURE };
	void *h = dlopen(INLINE_FIXTURE, RTLD_NOW | RTLD_LOCAL);
	void *(*outer)(void);
	uint64_t ra, entry;
	struct profile_module mod = { .path = INLINE_FIXTURE };
	struct gen g;
	struct session *s;
	const struct session_stack *st;

	if (!h)
		fail_msg("dlopen %s: %s", INLINE_FIXTURE, dlerror());
	*(void **)&outer = dlsym(h, "inline_fixture_outer");
	assert_non_null(outer);
	ra = (uintptr_t)outer();
	entry = (uintptr_t)outer;
	dl_iterate_phdr(fixture_phdr, &fs);
	assert_true(fs.n > 0);

	/* one module, no build ID: the file at its path is the one */
	gen_open(&g, path);
	assert_int_equal(profile_writer__module(g.w, &mod, &g.module_ids[0]), 0);
	for (size_t i = 0; i < fs.n; i++)
		gen_map(&g, 1, &fs.maps[i]);
	/* the return address as a pc (in inline_fixture_inner) and as a caller's (its call) */
	gen_sample(&g, 1, ra, ra);
	/* a second stack: the same caller, from the function's entry, which has no inlined frames */
	gen_sample(&g, 1, entry, ra);
	gen_close(&g);

	s = open_session_inline(path, false);
	assert_int_equal(session__nsamples(s), 2);
	st = session__stack(s, session__sample(s, 0)->stack);
	assert_int_equal(st->count, 6);
	check_chain(s, st->frames, false, chain, 3);
	check_chain(s, st->frames + 3, true, chain, 3);
	/* the pc is after the call, the caller at it: the innermost lines differ */
	assert_int_not_equal(session__frame(s, st->frames[0])->line,
			     session__frame(s, st->frames[3])->line);
	st = session__stack(s, session__sample(s, 1)->stack);
	assert_int_equal(st->count, 4);
	check_chain(s, st->frames, false, chain + 2, 1);
	check_chain(s, st->frames + 1, true, chain, 3);
	/* looked up once per address: the caller's three frames are the first stack's */
	assert_memory_equal(st->frames + 1, session__stack(s, session__sample(s, 0)->stack)->frames + 3,
			    3 * sizeof(uint32_t));
	assert_int_equal(session__nframes(s), 7);
	session__free(s);

	/* --no-inline: one frame per address, the real function's */
	s = open_session_inline(path, true);
	st = session__stack(s, session__sample(s, 0)->stack);
	assert_int_equal(st->count, 2);
	check_chain(s, st->frames, false, chain + 2, 1);
	check_chain(s, st->frames + 1, true, chain + 2, 1);
	assert_int_equal(session__nframes(s), 3);
	session__free(s);
	dlclose(h);
	free(path);
}

/* ---- Python frames: merged into the native stacks at the interpreter's frames ---- */

/* A sample of pid 1: kernel stack @k (@nk), user stack @u (@nu, cut when @u_trunc), Python @py. */
static void py_sample(struct gen *g, const uint64_t *k, size_t nk, const uint64_t *u, size_t nu,
		      bool u_trunc, const uint32_t *py, size_t npy, bool py_trunc)
{
	uint8_t kcbf[SFU_CBF_BOUND(8)], ucbf[SFU_CBF_BOUND(8)];
	struct profile_sample smp = { .pid = 1, .tid = 1, .weight = 1, .py_frames = py,
				      .py_depth = npy, .py_truncated = py_trunc };
	struct sfu_cbf_enc enc;

	smp.time_ns = g->time += 1000;
	if (nk) {
		assert_int_equal(sfu_cbf_enc__init(&enc, 64, kcbf, sizeof(kcbf)), 0);
		assert_int_equal(sfu_cbf_encode_stack(&enc, k, nk, 0, false), 0);
		smp.kstack = kcbf;
		smp.kstack_len = sfu_cbf_enc__len(&enc);
	}
	assert_int_equal(sfu_cbf_enc__init(&enc, 64, ucbf, sizeof(ucbf)), 0);
	assert_int_equal(sfu_cbf_encode_stack(&enc, u, nu, 0, u_trunc), 0);
	smp.ustack = ucbf;
	smp.ustack_len = sfu_cbf_enc__len(&enc);
	assert_int_equal(profile_writer__sample(g->w, &smp), 0);
}

/* The names of a stack's frames, innermost first, against @want (NULL-terminated). */
static void _check_names(const struct session *s, const struct session_stack *st,
			 const char *const *want, const char *file, int line)
{
	uint32_t n = 0;

	for (; want[n]; n++) {
		const struct session_frame *f = n < st->count ? session__frame(s, st->frames[n]) : NULL;

		if (!f || !f->sym || strcmp(f->sym, want[n])) {
			print_error("frame %u: %s, want %s\n", n, f && f->sym ? f->sym : "(none)",
				    want[n]);
			_fail(file, line);
		}
	}
	if (st->count != n) {
		print_error("%u frames, want %u\n", st->count, n);
		_fail(file, line);
	}
}
#define check_names(s, st, ...) \
	_check_names(s, st, (const char *const[]){ __VA_ARGS__, NULL }, __FILE__, __LINE__)

static struct session *open_session_py(const char *path, bool python_only)
{
	struct session_opts opts = { .sym = { .no_debuginfod = true, .python_only = python_only } };
	struct profile_diag diag;
	struct session *s = session__open(path, &opts, &diag);

	if (!s)
		fail_msg("%s", diag.reason);
	return s;
}

/*
 * Chains known by construction: each segment of the Python chain (split
 * after each entry frame) goes just before its _PyEval_EvalFrameDefault
 * frame, innermost with innermost; what is left goes with the outermost;
 * with none, outside the user stack. --python-only: the Python frames alone.
 */
static void test_python_frames(void **state)
{
	char *path = path_join_or_fail(*state, "python.data");
	struct fixture_segs fs = { .path = PY_FIXTURE };
	void *h = dlopen(PY_FIXTURE, RTLD_NOW | RTLD_LOCAL);
	struct profile_module mod = { .path = PY_FIXTURE };
	static const char *const fn[] = { "py_fixture_leaf", "_PyEval_EvalFrameDefault",
					  "py_fixture_call", "py_fixture_main",
					  "_PyEval_EvalFrameDefault_not" };
	enum { LEAF, EVAL, CALL, MAIN, NOT };
	static const uint64_t k[2] = { 0xffffffff81000010, 0xffffffff81000120 };
	struct profile_py_frame pf[] = {
		{ .qualname = "rt_leaf", .file = "/srv/app/prog.py", .line = 30,
		  .flags = PROFILE_PY_F_ENTRY },
		{ .qualname = "rt_mid", .file = "/srv/app/prog.py", .line = 20 },
		{ .qualname = "rt_top", .file = "/srv/app/prog.py", .line = 10,
		  .flags = PROFILE_PY_F_ENTRY },
		{ .qualname = "Gen.__next__", .file = "gen.py", .line = 0,
		  .flags = PROFILE_PY_F_ENTRY },
		/* the same content again: the same id */
		{ .qualname = "rt_leaf", .file = "/srv/app/prog.py", .line = 30,
		  .flags = PROFILE_PY_F_ENTRY },
		/* the same code without the entry flag: a frame record of its own */
		{ .qualname = "rt_mid", .file = "/srv/app/prog.py", .line = 20,
		  .flags = PROFILE_PY_F_ENTRY },
	};
	uint32_t id[6];
	uint64_t a[5];
	const struct session_stack *st;
	struct session_stack user;
	const struct session_frame *f;
	struct session *s;
	struct gen g;

	if (!h)
		fail_msg("dlopen %s: %s", PY_FIXTURE, dlerror());
	for (int i = 0; i < 5; i++) {
		void *sym = dlsym(h, fn[i]);

		assert_non_null(sym);
		/* inside the function, past its entry: as a return address would be */
		a[i] = (uintptr_t)sym + 4;
	}
	dl_iterate_phdr(fixture_phdr, &fs);
	assert_true(fs.n > 0);

	gen_open(&g, path);
	assert_int_equal(profile_writer__module(g.w, &mod, &g.module_ids[0]), 0);
	for (size_t i = 0; i < fs.n; i++)
		gen_map(&g, 1, &fs.maps[i]);
	for (int i = 0; i < 6; i++)
		assert_int_equal(profile_writer__py_frame(g.w, &pf[i], &id[i]), 0);
	assert_int_equal(id[0], 1);
	assert_int_equal(id[4], id[0]);
	assert_int_not_equal(id[5], id[1]);
	/* a frame of no name, and ids never given, are refused */
	assert_int_equal(profile_writer__py_frame(g.w, &(struct profile_py_frame){ .file = "x" },
						  &id[4]), -EINVAL);
	assert_int_equal(profile_writer__sample(g.w, &(struct profile_sample){
		.pid = 1, .tid = 1, .py_frames = (const uint32_t[]){ 99 }, .py_depth = 1 }),
			 -EINVAL);

	/* 0: two interpreter calls, two segments, a C function between them */
	py_sample(&g, k, 2, (const uint64_t[]){ a[LEAF], a[EVAL], a[CALL], a[EVAL], a[MAIN] }, 5,
		  false, (const uint32_t[]){ id[0], id[1], id[2] }, 3, false);
	/* 1: the native stack cut after one interpreter call: every segment goes with it */
	py_sample(&g, NULL, 0, (const uint64_t[]){ a[LEAF], a[EVAL], a[CALL] }, 3, true,
		  (const uint32_t[]){ id[0], id[5], id[2] }, 3, true);
	/* 2: no interpreter frame (a name that only starts like it): outside the user stack */
	py_sample(&g, NULL, 0, (const uint64_t[]){ a[LEAF], a[NOT], a[MAIN] }, 3, false,
		  (const uint32_t[]){ id[3] }, 1, false);
	/* 3: more interpreter calls than segments: the outer ones run none */
	py_sample(&g, NULL, 0, (const uint64_t[]){ a[EVAL], a[CALL], a[EVAL], a[MAIN] }, 4, false,
		  (const uint32_t[]){ id[3] }, 1, false);
	/* 4: no Python frames */
	py_sample(&g, NULL, 0, (const uint64_t[]){ a[LEAF], a[MAIN] }, 2, false, NULL, 0, false);
	gen_close(&g);

	s = open_session_py(path, false);
	assert_int_equal(session__nsamples(s), 5);
	st = session__stack(s, session__sample(s, 0)->stack);
	assert_int_equal(st->kernel, 2);
	assert_int_equal(st->python, 3);
	assert_false(st->py_truncated);
	/* kernel frames first, as they were (named by this machine's kallsyms, or not) */
	user = *st;
	user.frames += 2;
	user.count -= 2;
	assert_true(session__frame(s, st->frames[0])->kernel);
	assert_true(session__frame(s, st->frames[1])->kernel);
	check_names(s, &user, fn[LEAF], "rt_leaf (prog.py:30)", fn[EVAL], fn[CALL],
		    "rt_mid (prog.py:20)", "rt_top (prog.py:10)", fn[EVAL], fn[MAIN]);
	f = session__frame(s, st->frames[3]);
	assert_true(f->python);
	assert_false(f->kernel);
	assert_string_equal(f->py_qualname, "rt_leaf");
	assert_string_equal(f->dso, "/srv/app/prog.py");
	assert_string_equal(f->file, "/srv/app/prog.py");
	assert_int_equal(f->line, 30);
	assert_int_equal(f->addr, 0);

	st = session__stack(s, session__sample(s, 1)->stack);
	check_names(s, st, fn[LEAF], "rt_leaf (prog.py:30)", "rt_mid (prog.py:20)",
		    "rt_top (prog.py:10)", fn[EVAL], fn[CALL]);
	assert_true(st->truncated);
	assert_true(st->py_truncated);
	/* equal content, whatever its flags: one frame */
	assert_int_equal(st->frames[2],
			 session__stack(s, session__sample(s, 0)->stack)->frames[6]);

	st = session__stack(s, session__sample(s, 2)->stack);
	check_names(s, st, fn[LEAF], fn[NOT], fn[MAIN], "Gen.__next__ (gen.py)");
	st = session__stack(s, session__sample(s, 3)->stack);
	check_names(s, st, "Gen.__next__ (gen.py)", fn[EVAL], fn[CALL], fn[EVAL], fn[MAIN]);
	st = session__stack(s, session__sample(s, 4)->stack);
	check_names(s, st, fn[LEAF], fn[MAIN]);
	assert_int_equal(st->python, 0);
	assert_int_equal(session__totals(s)->python, 4);
	assert_int_equal(session__totals(s)->py_truncated, 1);
	session__free(s);

	/* the native stack's 4,000 frames and 200 Python frames: cut at the 4,096 views hold */
	{
		static uint64_t deep[4000];
		static uint8_t cbf[SFU_CBF_BOUND(4000)];
		static uint32_t chain[200];
		struct profile_sample smp = { .pid = 1, .tid = 1, .weight = 1, .py_frames = chain,
					      .py_depth = 200 };
		struct sfu_cbf_enc enc;
		char *deep_path = path_join_or_fail(*state, "python-deep.data");

		for (int i = 0; i < 4000; i++)	/* distinct addresses: no `rep` */
			deep[i] = a[i % 2 ? EVAL : CALL] + (i % 7);
		gen_open(&g, deep_path);
		assert_int_equal(profile_writer__module(g.w, &mod, &g.module_ids[0]), 0);
		for (size_t i = 0; i < fs.n; i++)
			gen_map(&g, 1, &fs.maps[i]);
		/* no entry flag: one segment, the innermost eval frame's */
		assert_int_equal(profile_writer__py_frame(g.w, &pf[1], &id[1]), 0);
		for (int i = 0; i < 200; i++)
			chain[i] = id[1];
		assert_int_equal(sfu_cbf_enc__init(&enc, 64, cbf, sizeof(cbf)), 0);
		assert_int_equal(sfu_cbf_encode_stack(&enc, deep, 4000, 0, false), 0);
		smp.ustack = cbf;
		smp.ustack_len = sfu_cbf_enc__len(&enc);
		assert_int_equal(profile_writer__sample(g.w, &smp), 0);
		gen_close(&g);
		s = open_session_py(deep_path, false);
		st = session__stack(s, session__sample(s, 0)->stack);
		assert_int_equal(st->count, 4096);
		assert_true(st->truncated);
		/* the innermost eval frame (index 1) takes the one segment: 200 frames before it */
		assert_true(session__frame(s, st->frames[1])->python);
		assert_true(session__frame(s, st->frames[200])->python);
		assert_false(session__frame(s, st->frames[201])->python);
		assert_int_equal(st->python, 200);
		session__free(s);
		free(deep_path);
	}

	/* --python-only: Python frames alone, none for a sample without */
	s = open_session_py(path, true);
	check_names(s, session__stack(s, session__sample(s, 0)->stack), "rt_leaf (prog.py:30)",
		    "rt_mid (prog.py:20)", "rt_top (prog.py:10)");
	st = session__stack(s, session__sample(s, 1)->stack);
	assert_int_equal(st->kernel, 0);
	assert_true(st->truncated);
	check_names(s, session__stack(s, session__sample(s, 3)->stack), "Gen.__next__ (gen.py)");
	assert_int_equal(session__stack(s, session__sample(s, 4)->stack)->count, 0);
	session__free(s);
	dlclose(h);
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
		cmocka_unit_test_setup_teardown(test_random_mappings, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_kernel_jit_names, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_many_mappings, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_layout_frames, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_jit_names, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_exec_old_image, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_inlined_frames, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_python_frames, setup_dir, teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
