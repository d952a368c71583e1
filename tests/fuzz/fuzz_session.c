// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: load the input as a profile into a session (processes, images,
 * mappings, modules, stacks resolved to frames, as report, script and export
 * do), then walk every sample, stack and frame and check what session.h
 * promises.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_session.h"
#include "profile_input.h"
#include "report/session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_session: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static void touch_str(const char *s, const char *what)
{
	if (!s)
		broken("%s is NULL", what);
	sink += strlen(s);
}

static void check_frame(const struct session *s, uint32_t idx)
{
	const struct session_frame *f;
	char buf[128];
	const char *name;

	if (idx >= session__nframes(s))
		broken("frame %u of %zu", idx, session__nframes(s));
	f = session__frame(s, idx);
	touch_str(f->dso, "frame dso");
	if (f->sym)
		sink += strlen(f->sym);
	if (f->file)
		sink += strlen(f->file) + f->line;
	if (f->dso_path)
		sink += strlen(f->dso_path);
	if (f->module > session__nmodules(s))
		broken("frame of module %u, %zu modules", f->module, session__nmodules(s));
	if (f->kernel && f->module)
		broken("kernel frame of module %u", f->module);
	if (f->python && (f->kernel || f->module || f->inlined || f->addr || !f->sym ||
			  !f->py_qualname || !f->file))
		broken("Python frame %u: kernel %d module %u inlined %d addr %#llx, or no names", idx,
		       f->kernel, f->module, f->inlined, (unsigned long long)f->addr);
	name = session_frame_name(f, buf, sizeof(buf));
	touch_str(name, "frame name");
	if (!f->sym && !memchr(buf, '\0', sizeof(buf)))
		broken("frame name not terminated");
	sink += f->addr + f->offset + f->rel + f->is_ra + f->omitted;
}

static void check_images(const struct session *s)
{
	for (size_t i = 0; i < session__nimages(s); i++) {
		const struct session_image *im = session__image(s, (uint32_t)i);

		touch_str(im->comm, "image comm");
		touch_str(im->exe, "image exe");
		if (im->nmaps && !im->maps)
			broken("image %zu: %zu mappings, no array", i, im->nmaps);
		for (size_t j = 0; j < im->nmaps; j++) {
			const struct session_map *m = &im->maps[j];

			if (j && m->start < im->maps[j - 1].start)
				broken("image %zu: mapping %zu at %#llx before %#llx", i, j,
				       (unsigned long long)m->start,
				       (unsigned long long)im->maps[j - 1].start);
			if (m->module > session__nmodules(s))
				broken("mapping of module %u, %zu modules", m->module,
				       session__nmodules(s));
			sink += m->end + m->file_offset + m->prot;
		}
	}
	for (size_t i = 0; i < session__nmodules(s); i++) {
		const struct session_module *m = session__module(s, (uint32_t)i);

		if (m->build_id_len > sizeof(m->build_id))
			broken("module %zu: build ID of %zu bytes", i, m->build_id_len);
		if (m->path)
			sink += strlen(m->path);
		sink += m->file_size;
	}
}

static void check_samples(const struct session *s)
{
	const struct session_totals *t = session__totals(s);
	uint64_t weight = 0, truncated = 0, first = UINT64_MAX, last = 0, python = 0;

	if (t->samples != session__nsamples(s))
		broken("totals say %llu samples, %zu held", (unsigned long long)t->samples,
		       session__nsamples(s));
	for (size_t i = 0; i < session__nsamples(s); i++) {
		const struct session_sample *smp = session__sample(s, i);
		const struct session_stack *st;

		if (smp->image >= session__nimages(s))
			broken("sample %zu of image %u, %zu images", i, smp->image,
			       session__nimages(s));
		if (session__image(s, smp->image)->pid != smp->pid)
			broken("sample %zu of pid %u in an image of pid %u", i, smp->pid,
			       session__image(s, smp->image)->pid);
		touch_str(smp->comm, "sample comm");
		st = session__stack(s, smp->stack);
		if (st->count && !st->frames)
			broken("stack %u: %u frames, no array", smp->stack, st->count);
		if (st->kernel > st->count)
			broken("stack %u: %u kernel frames of %u", smp->stack, st->kernel, st->count);
		for (uint32_t j = 0, npy = 0; j < st->count; j++) {
			const struct session_frame *f;

			check_frame(s, st->frames[j]);
			f = session__frame(s, st->frames[j]);
			npy += f->python;
			if (j + 1 == st->count && npy != st->python)
				broken("stack %u: %u Python frames, it says %u", smp->stack, npy,
				       st->python);
			if (f->kernel && j >= st->kernel)
				broken("stack %u: kernel frame %u after the kernel part", smp->stack, j);
			if (!f->kernel && !f->omitted && j < st->kernel)
				broken("stack %u: user frame %u in the kernel part", smp->stack, j);
			/* an inlined frame is shown with the function it was inlined into, next */
			if (f->inlined) {
				const struct session_frame *next;

				if (j + 1 >= st->count)
					broken("stack %u: inlined frame %u ends it", smp->stack, j);
				next = session__frame(s, st->frames[j + 1]);
				if (next->addr != f->addr || next->module != f->module ||
				    next->is_ra != f->is_ra || f->kernel)
					broken("stack %u: inlined frame %u at another address than the "
					       "next", smp->stack, j);
			}
		}
		weight += smp->weight;
		truncated += st->truncated;
		python += st->python > 0;
		first = smp->time_ns < first ? smp->time_ns : first;
		last = smp->time_ns > last ? smp->time_ns : last;
		sink += smp->tid + smp->cpu;
	}
	if (python != t->python)
		broken("totals: %llu samples with Python frames, the samples: %llu",
		       (unsigned long long)t->python, (unsigned long long)python);
	if (weight != t->weight || truncated != t->truncated)
		broken("totals: weight %llu, truncated %llu; the samples: %llu, %llu",
		       (unsigned long long)t->weight, (unsigned long long)t->truncated,
		       (unsigned long long)weight, (unsigned long long)truncated);
	if (t->samples && (first != t->first_ns || last != t->last_ns))
		broken("totals: first %llu last %llu; the samples: %llu, %llu",
		       (unsigned long long)t->first_ns, (unsigned long long)t->last_ns,
		       (unsigned long long)first, (unsigned long long)last);
	if (t->processes > session__nimages(s))
		broken("%llu processes, %zu images", (unsigned long long)t->processes,
		       session__nimages(s));
	/* every frame, also those of no sample */
	for (size_t i = 0; i < session__nframes(s); i++)
		check_frame(s, (uint32_t)i);
}

/* Records of each type in the file, as the reader gives them. */
struct counts {
	uint64_t of[PROFILE_REC_PY_FRAME + 1];
};

static void count_records(const char *path, struct counts *c)
{
	struct profile_diag diag = { "" };
	struct profile_reader *r = profile_reader__open(path, &diag);
	struct profile_record rec;

	memset(c, 0, sizeof(*c));
	while (r && profile_reader__next(r, &rec) > 0)
		if (rec.type <= PROFILE_REC_PY_FRAME)
			c->of[rec.type]++;
	profile_reader__free(r);
}

/* What a session holds is made from records: never more of it than they give. */
static void check_counts(const struct session *s, const struct counts *c)
{
	/* a JIT record of a pid not seen yet makes its image too */
	uint64_t images = c->of[PROFILE_REC_PROCESS] + c->of[PROFILE_REC_MAPPING] +
			  c->of[PROFILE_REC_SAMPLE] + c->of[PROFILE_REC_JIT];

	if (session__nmodules(s) > c->of[PROFILE_REC_MODULE])
		broken("%zu modules from %llu module records", session__nmodules(s),
		       (unsigned long long)c->of[PROFILE_REC_MODULE]);
	if (session__nimages(s) > images)
		broken("%zu images from %llu process, mapping, sample and jit records",
		       session__nimages(s), (unsigned long long)images);
	if (session__nsamples(s) != c->of[PROFILE_REC_SAMPLE])
		broken("%zu samples from %llu sample records", session__nsamples(s),
		       (unsigned long long)c->of[PROFILE_REC_SAMPLE]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct counts counts;
	struct profile_diag diag = { "" };
	struct profile_input in;
	struct session *s;

	if (profile_input__open(&in, data, size))
		broken("cannot hand %zu bytes to the session", size);
	errno = 0;
	s = session__open(in.path, fuzz_session_opts(), &diag);
	if (!s) {
		if (!diag.reason[0])
			broken("session__open failed (errno %d) without a reason", errno);
	} else {
		const struct profile_status *st = session__status(s);

		if (st->file_size != in.size)
			broken("file_size %llu, the file has %zu bytes",
			       (unsigned long long)st->file_size, in.size);
		sink += session__meta(s)->freq_hz + st->bad_blocks;
		count_records(in.path, &counts);
		check_counts(s, &counts);
		check_images(s);
		check_samples(s);
		session__free(s);
	}
	profile_input__close(&in);
	return 0;
}
