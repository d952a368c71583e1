/* SPDX-License-Identifier: BSD-2-Clause */
/* Where an image's mappings put its modules: module-relative addresses of mappings and frames. */
#include <errno.h>
#include <stdlib.h>

#include "export.h"

int image_layout__init(struct image_layout *l, const struct session *s, uint32_t image)
{
	const struct session_image *im = session__image(s, image);
	size_t n = im->nmaps ? im->nmaps : 1;

	l->s = s;
	l->im = im;
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
	return 0;
}

void image_layout__release(struct image_layout *l)
{
	free(l->vaddr);
	free(l->known);
	l->vaddr = NULL;
	l->known = NULL;
}

bool image_layout__frame_addr(const struct image_layout *l, const struct session_frame *f,
			      uint64_t *addr, size_t *map)
{
	const struct session_image *im = l->im;
	/* a return address may sit just past the end of its caller's mapping */
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
