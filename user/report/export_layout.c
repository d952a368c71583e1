/* SPDX-License-Identifier: BSD-2-Clause */
/* Where an image's mappings put its modules: module-relative addresses of mappings and frames. */
#include <errno.h>
#include <stdlib.h>

#include "export.h"

/* The module-relative range [lo, hi] of mapping @i, inclusive, as frame_addr() tests it. */
static void module_range(const struct image_layout *l, size_t i, uint64_t *lo, uint64_t *hi)
{
	const struct session_map *m = &l->im->maps[i];
	uint64_t len = m->end - m->start;	/* the session keeps no empty mapping */

	*lo = l->vaddr[i];
	/* rel - lo < len holds up to the top of the address space when lo + len wraps */
	*hi = *lo + (len - 1) < *lo ? UINT64_MAX : *lo + (len - 1);
}

static int point_cmp(const void *pa, const void *pb)
{
	const struct layout_point *a = pa, *b = pb;

	if (a->module != b->module)
		return a->module < b->module ? -1 : 1;
	return a->at < b->at ? -1 : a->at > b->at;
}

/* The index of the last point at or before (@module, @at), or SIZE_MAX. */
static size_t point_at(const struct image_layout *l, uint32_t module, uint64_t at)
{
	size_t lo = 0, hi = l->npoints;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct layout_point *p = &l->points[mid];

		if (p->module < module || (p->module == module && p->at <= at))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : SIZE_MAX;
}

/* The first segment at or after @k that no mapping owns yet (@next: union-find links). */
static size_t next_free(size_t *next, size_t k)
{
	size_t root = k;

	while (next[root] != root)
		root = next[root];
	while (next[k] != root) {
		size_t up = next[k];

		next[k] = root;
		k = up;
	}
	return root;
}

/*
 * Give each segment of module-relative addresses to the first mapping (in
 * address order) whose range holds it, so that frame_addr() is a binary
 * search: mappings in turn take the segments not taken before them, each
 * segment taken once, O(n log n) for n mappings.
 */
static int index_ranges(struct image_layout *l)
{
	const struct session_image *im = l->im;
	size_t n = 0, *next = NULL;

	l->points = malloc(2 * (im->nmaps ? im->nmaps : 1) * sizeof(*l->points));
	if (!l->points)
		return -ENOMEM;
	for (size_t i = 0; i < im->nmaps; i++) {
		uint64_t lo, hi;

		if (!im->maps[i].module || !l->known[i])
			continue;
		module_range(l, i, &lo, &hi);
		l->points[n++] = (struct layout_point){ im->maps[i].module, lo };
		if (hi != UINT64_MAX)
			l->points[n++] = (struct layout_point){ im->maps[i].module, hi + 1 };
	}
	qsort(l->points, n, sizeof(*l->points), point_cmp);
	l->npoints = 0;
	for (size_t i = 0; i < n; i++)
		if (!l->npoints || point_cmp(&l->points[l->npoints - 1], &l->points[i]))
			l->points[l->npoints++] = l->points[i];
	l->owner = malloc((l->npoints + 1) * sizeof(*l->owner));
	next = malloc((l->npoints + 1) * sizeof(*next));
	if (!l->owner || !next) {
		free(next);
		return -ENOMEM;
	}
	for (size_t k = 0; k <= l->npoints; k++) {
		l->owner[k] = SIZE_MAX;
		next[k] = k;	/* npoints: past the last, never taken */
	}
	for (size_t i = 0; i < im->nmaps; i++) {
		uint32_t module = im->maps[i].module;
		size_t first, last;
		uint64_t lo, hi;

		if (!module || !l->known[i])
			continue;
		module_range(l, i, &lo, &hi);
		first = point_at(l, module, lo);
		/* the segments up to the one that starts past hi, or the module's last */
		last = point_at(l, module, hi);
		for (size_t k = next_free(next, first); k <= last; k = next_free(next, k + 1)) {
			l->owner[k] = i;
			next[k] = k + 1;
		}
	}
	free(next);
	return 0;
}

int image_layout__init(struct image_layout *l, const struct session *s, uint32_t image)
{
	const struct session_image *im = session__image(s, image);
	size_t n = im->nmaps ? im->nmaps : 1;

	l->s = s;
	l->im = im;
	l->points = NULL;
	l->owner = NULL;
	l->npoints = 0;
	l->vaddr = calloc(n, sizeof(*l->vaddr));
	l->known = calloc(n, sizeof(*l->known));
	if (!l->vaddr || !l->known) {
		image_layout__release(l);
		return -ENOMEM;
	}
	for (size_t i = 0; i < im->nmaps; i++) {
		const struct session_map *m = &im->maps[i];
		const struct session_module *mod;

		if (!m->module)
			continue;
		mod = session__module(s, m->module - 1);
		/* the session opens a module when a frame first lands in it */
		if (!mod->sym)
			continue;
		if (sym_module__found(mod->sym)) {
			/* as the session placed its frames */
			l->known[i] = !sym_module__map_vaddr(mod->sym,
				&(struct sym_mapping){ m->start, m->file_offset, m->prot },
				&l->vaddr[i]);
		} else {
			/* what the session assumed when it named the frames module+offset */
			l->vaddr[i] = m->file_offset;
			l->known[i] = true;
		}
	}
	if (index_ranges(l)) {
		image_layout__release(l);
		return -ENOMEM;
	}
	return 0;
}

void image_layout__release(struct image_layout *l)
{
	free(l->vaddr);
	free(l->known);
	free(l->points);
	free(l->owner);
	l->vaddr = NULL;
	l->known = NULL;
	l->points = NULL;
	l->owner = NULL;
	l->npoints = 0;
}

bool image_layout__frame_addr(const struct image_layout *l, const struct session_frame *f,
			      uint64_t *addr, size_t *map)
{
	const struct session_image *im = l->im;
	/* a return address may sit just past the end of its caller's mapping */
	uint64_t rel = f->is_ra && f->rel ? f->rel - 1 : f->rel;
	size_t lo = 0, hi = im->nmaps, k;

	*addr = f->addr;
	*map = SIZE_MAX;
	if (f->kernel || f->omitted || f->old_image)
		return false;
	if (!f->module) {
		/* the mappings are sorted and none overlaps: the last starting at or before addr */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (im->maps[mid].start <= f->addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo && f->addr < im->maps[lo - 1].end)
			*map = lo - 1;
		return *map != SIZE_MAX;
	}
	k = point_at(l, f->module, rel);
	if (k == SIZE_MAX || l->points[k].module != f->module || l->owner[k] == SIZE_MAX)
		return false;
	*map = l->owner[k];
	*addr = f->rel - l->vaddr[*map] + im->maps[*map].start;
	return true;
}

struct image_layout *image_layouts__get(struct image_layout *layouts, const struct session *s,
					uint32_t image, bool *oom)
{
	struct image_layout *l = &layouts[image];

	if (!l->vaddr && image_layout__init(l, s, image)) {
		*oom = true;
		return NULL;
	}
	return l;
}

void frame_place(const struct image_layout *l, const struct session_frame *f, bool no_symbolize,
		 struct frame_place *out)
{
	out->addr = f->addr;
	out->map = SIZE_MAX;
	/* code the interpreter runs: no mapping, no address, a Line of the code object's */
	if (f->python)
		out->addr = 0;
	else if (!f->kernel && l)
		image_layout__frame_addr(l, f, &out->addr, &out->map);
	out->named = !no_symbolize || f->kernel || out->map == SIZE_MAX || (!f->module && f->sym);
}
