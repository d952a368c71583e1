/* SPDX-License-Identifier: BSD-2-Clause */
/* Where an image's mappings put its modules: module-relative addresses of mappings and frames. */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "export.h"
#include "sfunwind/module.h"

/* The kernel maps a segment from its offset rounded down to a page, at most this far. */
#define MAX_PAGE_SIZE 0x10000u
#define PAGE_SIZE 4096u

/*
 * The ELF vaddr mapped at the start of @m: the PT_LOAD segment that maps its
 * file offset, told apart from a neighbour sharing the page by protections,
 * as libsfunwind places mappings when it unwinds.
 */
static bool map_vaddr(const struct sfu_module *elf, const struct session_map *m, uint64_t *vaddr)
{
	const struct sfu_segment *segs, *best = NULL;
	int best_score = -1;
	size_t n;

	segs = sfu_module__segments(elf, &n);
	for (size_t i = 0; i < n; i++) {
		const struct sfu_segment *seg = &segs[i];
		int score = 0;

		if (!seg->filesz || m->file_offset >= seg->offset + seg->filesz ||
		    (m->file_offset < seg->offset && seg->offset - m->file_offset >= MAX_PAGE_SIZE))
			continue;
		if (!(seg->flags & PF_X) == !(m->prot & PROT_EXEC))
			score += 4;
		if (!(seg->flags & PF_W) == !(m->prot & PROT_WRITE))
			score += 2;
		if (m->file_offset >= seg->offset)
			score += 1;
		if (score > best_score) {
			best = seg;
			best_score = score;
		}
	}
	if (best) {
		*vaddr = m->file_offset - best->offset + best->vaddr;
		return true;
	}
	/*
	 * A debug file standing in for a missing binary keeps the segments'
	 * addresses and flags but not their file offsets: take the first segment
	 * with the mapping's permissions, mapped from the page holding its start.
	 */
	for (size_t i = 0; i < n; i++) {
		if (!(segs[i].flags & PF_X) == !(m->prot & PROT_EXEC) &&
		    !(segs[i].flags & PF_W) == !(m->prot & PROT_WRITE)) {
			*vaddr = segs[i].vaddr & ~(uint64_t)(PAGE_SIZE - 1);
			return true;
		}
	}
	return false;
}

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
		const struct sfu_module *elf;

		if (!m->module)
			continue;
		mod = session__module(s, m->module - 1);
		/* the session opens a module when a frame first lands in it */
		if (!mod->sym)
			continue;
		elf = sym_module__elf(mod->sym);
		if (elf) {
			l->known[i] = map_vaddr(elf, m, &l->vaddr[i]);
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
