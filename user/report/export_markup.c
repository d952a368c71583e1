/* SPDX-License-Identifier: BSD-2-Clause */
/* Symbolizer markup: per process image, its modules and mappings, then each sample's user stack. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "buildid/buildid.h"
#include "export.h"
#include "util/text.h"

/* %p of the markup spec: 0x and an even number of hex digits. */
static const char *hex_p(char *buf, size_t cap, uint64_t v)
{
	int n = snprintf(buf, cap, "%" PRIx64, v);

	snprintf(buf, cap, "0x%0*" PRIx64, n + (n & 1), v);
	return buf;
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* A mapping the markup can describe: a module with a build ID, placed, with some access. */
static bool describable(const struct image_layout *l, size_t i)
{
	const struct session_map *m = &l->im->maps[i];

	return l->known[i] && (m->prot & 7) &&
	       session__module(l->s, m->module - 1)->build_id_len;
}

static void put_context(FILE *out, const struct image_layout *l, uint32_t *stamp, uint32_t image)
{
	const struct session_image *im = l->im;
	char a[24], b[24];

	fputs("{{{reset}}}\n", out);
	for (size_t i = 0; i < im->nmaps; i++) {
		const struct session_module *mod;

		if (!describable(l, i) || stamp[im->maps[i].module - 1] == image + 1)
			continue;
		stamp[im->maps[i].module - 1] = image + 1;
		mod = session__module(l->s, im->maps[i].module - 1);
		fprintf(out, "{{{module:%u:", im->maps[i].module);
		/* a field holds no ':' or '}' and only printable characters */
		text_put(out, basename_of(mod->path ? mod->path : ""), TEXT_FIELD);
		fputs(":elf:", out);
		buildid_fput(out, mod->build_id, mod->build_id_len);
		fputs("}}}\n", out);
	}
	for (size_t i = 0; i < im->nmaps; i++) {
		const struct session_map *m = &im->maps[i];

		if (!describable(l, i))
			continue;
		fprintf(out, "{{{mmap:%s:0x%" PRIx64 ":load:%u:%s%s%s:%s}}}\n",
			hex_p(a, sizeof(a), m->start), m->end - m->start, m->module,
			m->prot & 1 ? "r" : "", m->prot & 2 ? "w" : "", m->prot & 4 ? "x" : "",
			hex_p(b, sizeof(b), l->vaddr[i]));
	}
}

static void put_sample(FILE *out, const struct image_layout *l, const struct session_sample *sm)
{
	const struct session_stack *st = session__stack(l->s, sm->stack);
	const struct session_image *im = l->im;
	unsigned n = 0;
	char buf[128];

	/* the filter acts on elements and SGR escapes anywhere in a line: none in a name */
	text_put(out, sm->comm && *sm->comm ? sm->comm : im->comm ? im->comm : "", TEXT_MARKUP);
	fprintf(out, " %u/%u [%03u] %" PRIu64 ".%09" PRIu64 ":", sm->pid, sm->tid, sm->cpu,
		sm->time_ns / 1000000000u, sm->time_ns % 1000000000u);
	if (sm->weight != 1)
		fprintf(out, " weight %u", sm->weight);
	putc('\n', out);
	if (st->count == st->kernel)
		fprintf(out, "    [%s]\n", st->count ? "kernel frames only" : "no stack");
	/* kernel frames first, innermost first: llvm-symbolizer has no vmlinux to name them */
	for (uint32_t i = st->kernel; i < st->count; i++) {
		const struct session_frame *f = session__frame(l->s, st->frames[i]);
		uint64_t addr;
		size_t map;

		/* the markup filter finds the functions inlined at an address itself */
		if (f->inlined)
			continue;
		if (f->omitted) {
			fprintf(out, "    [%" PRIu64 " frames omitted]\n", f->omitted);
			n += f->omitted;
			continue;
		}
		if (f->python) {	/* the interpreter's: its function, file and line, as llvm-symbolizer prints one */
			fprintf(out, "    #%u    0x%016" PRIx64 " in ", n++, f->addr);
			text_put(out, f->py_qualname, TEXT_MARKUP);
			putc(' ', out);
			text_put(out, f->file, TEXT_MARKUP);
			fprintf(out, ":%u\n", f->line);
			continue;
		}
		if (f->old_image) {	/* no code: as a frame no module names, by its name */
			fprintf(out, "    #%u    0x%016" PRIx64 " ", n++, f->addr);
			text_put(out, f->sym, TEXT_MARKUP);
			putc('\n', out);
			continue;
		}
		if (image_layout__frame_addr(l, f, &addr, &map) && f->module && describable(l, map))
			fprintf(out, "{{{bt:%u:%s:%s}}}\n", n, hex_p(buf, sizeof(buf), addr),
				f->is_ra ? "ra" : "pc");
		else if (!f->module && f->sym) {
			/*
			 * JIT code: markup names code by an ELF module's build ID and
			 * cannot carry a runtime's names, so the frame is written
			 * symbolized, as llvm-symbolizer prints one.
			 */
			fprintf(out, "    #%u    0x%016" PRIx64 " in ", n, f->addr);
			text_put(out, f->sym, TEXT_MARKUP);
			if (f->file) {
				putc(' ', out);
				text_put(out, f->file, TEXT_MARKUP);
				fprintf(out, ":%u", f->line);
			}
			fputs(" (", out);
			text_put(out, f->dso, TEXT_MARKUP);
			fprintf(out, "+0x%" PRIx64 ")\n", f->offset);
		} else {	/* no module with a build ID to name it by: as llvm-symbolizer prints a frame */
			fprintf(out, "    #%u    0x%016" PRIx64 " ", n, addr);
			text_put(out, session_frame_name(f, buf, sizeof(buf)), TEXT_MARKUP);
			putc('\n', out);
		}
		n++;
	}
	if (st->truncated)
		fputs("    [truncated]\n", out);
}

int export_markup(const struct session *s, FILE *out)
{
	size_t nimages = session__nimages(s), nsamples = session__nsamples(s);
	size_t *start = calloc(nimages + 1, sizeof(*start));
	size_t *order = calloc(nsamples + 1, sizeof(*order));
	uint32_t *stamp = calloc(session__nmodules(s) + 1, sizeof(*stamp));
	int err = -ENOMEM;

	if (!start || !order || !stamp)
		goto out;
	/* samples grouped by image, in file order within each */
	for (size_t i = 0; i < nsamples; i++)
		start[session__sample(s, i)->image + 1]++;
	for (size_t i = 0; i < nimages; i++)
		start[i + 1] += start[i];
	for (size_t i = 0; i < nsamples; i++)
		order[start[session__sample(s, i)->image]++] = i;
	for (size_t i = 0, done = 0; i < nimages; done = start[i++]) {
		struct image_layout l;

		if (done == start[i])
			continue;
		if ((err = image_layout__init(&l, s, i)))
			goto out;
		put_context(out, &l, stamp, i);
		for (size_t j = done; j < start[i]; j++)
			put_sample(out, &l, session__sample(s, order[j]));
		image_layout__release(&l);
	}
	err = export_stream_error(out);
out:
	free(start);
	free(order);
	free(stamp);
	return err;
}
