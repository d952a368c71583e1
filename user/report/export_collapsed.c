/* SPDX-License-Identifier: BSD-2-Clause */
/* Folded stacks: one line per distinct stack, process name first, for FlameGraph and speedscope. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "util/text.h"
#include "common/vec.h"

struct fold_ctx {
	const struct session *s;
	struct folded *f;
	size_t kinds_cap;
	uint32_t *frame_names;	/* by session frame: name id + 1, 0 until named */
	bool keep_addresses;
};

/* Intern @name + @suffix as it is: the formats escape names as they write them. */
static int64_t intern(struct fold_ctx *c, const char *name, const char *suffix,
		      enum fold_kind kind)
{
	size_t len = strlen(name), slen = strlen(suffix);
	char *buf = malloc(len + slen + 1);
	int64_t id;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, name, len);
	memcpy(buf + len, suffix, slen + 1);
	id = strtab__intern(&c->f->names, buf, len + slen);
	free(buf);
	if (id < 0)
		return id;
	if (VEC_RESERVE(c->f->kinds, c->kinds_cap, (size_t)id + 1, 256))
		return -ENOMEM;
	if ((size_t)id == c->f->names.count - 1)
		c->f->kinds[id] = kind;
	return id;
}

static int64_t frame_name(struct fold_ctx *c, uint32_t idx)
{
	const struct session_frame *fr = session__frame(c->s, idx);
	char buf[512];
	const char *name;
	int64_t id;

	if (c->frame_names[idx])
		return c->frame_names[idx] - 1;
	name = session_frame_name(fr, buf, sizeof(buf));
	if (!fr->sym && !fr->omitted && !c->keep_addresses) {
		/*
		 * As stackcollapse-perf.pl folds perf script's "[unknown] (module)":
		 * one frame [module] for all the code of a module no symbol covers, so
		 * that stacks through stripped code merge instead of splitting at each
		 * instruction address. "[unknown]" and "[anon]" are bracketed already.
		 */
		const char *dso = fr->kernel ? "[kernel.kallsyms]" : fr->dso ? fr->dso : "[unknown]";

		if (dso[0] == '[')
			snprintf(buf, sizeof(buf), "%s", dso);
		else
			snprintf(buf, sizeof(buf), "[%s]", dso);
		name = buf;
	}
	if (fr->kernel)
		id = intern(c, name, "_[k]", FOLD_KERNEL);
	else
		id = intern(c, name, "", fr->omitted || !fr->module ? FOLD_OTHER : FOLD_USER);
	if (id >= 0)
		c->frame_names[idx] = id + 1;
	return id;
}

static int64_t process_name(struct fold_ctx *c, const struct session_sample *sm)
{
	const char *comm = session__image(c->s, sm->image)->comm;

	if (!comm || !*comm)
		comm = sm->comm && *sm->comm ? sm->comm : "[unknown]";
	return intern(c, comm, "", FOLD_PROCESS);
}

static int cmp_stacks(const void *a, const void *b, void *arg)
{
	const struct folded_stack *x = a, *y = b;
	const struct folded *f = arg;

	for (uint32_t i = 0; i < x->depth && i < y->depth; i++) {
		int d;

		if (x->names[i] == y->names[i])
			continue;
		d = strcmp(f->names.strs[x->names[i]], f->names.strs[y->names[i]]);
		if (d)
			return d;
	}
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* The folded stack of session stack @st for a sample of @sm's process. */
static int fold_one(struct fold_ctx *c, const struct session_sample *sm,
		    const struct session_stack *st, uint64_t count, struct folded_stack *out)
{
	int64_t id = process_name(c, sm);

	out->names = malloc((st->count + 1) * sizeof(*out->names));
	if (!out->names || id < 0)
		return -ENOMEM;
	out->names[0] = id;
	out->depth = 1;
	out->count = count;
	/* session stacks are innermost first: kernel frames, then user frames */
	for (uint32_t i = st->count; i-- > 0;) {
		if ((id = frame_name(c, st->frames[i])) < 0)
			return -ENOMEM;
		out->names[out->depth++] = id;
	}
	return 0;
}

int folded__build(struct folded *f, const struct session *s, bool keep_addresses)
{
	size_t nsamples = session__nsamples(s), nstacks = 0, n = 0;
	struct fold_ctx c = { .s = s, .f = f, .keep_addresses = keep_addresses };
	uint64_t *counts = NULL;
	size_t *first = NULL;	/* a sample of each stack: stacks belong to one image */
	int err = -ENOMEM;

	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < nsamples; i++)
		if (session__sample(s, i)->stack >= nstacks)
			nstacks = session__sample(s, i)->stack + 1;
	counts = calloc(nstacks + 1, sizeof(*counts));
	first = calloc(nstacks + 1, sizeof(*first));
	c.frame_names = calloc(session__nframes(s) + 1, sizeof(*c.frame_names));
	f->stacks = calloc(nstacks + 1, sizeof(*f->stacks));
	if (!counts || !first || !c.frame_names || !f->stacks)
		goto out;
	for (size_t i = 0; i < nsamples; i++) {
		const struct session_sample *sm = session__sample(s, i);

		if (!counts[sm->stack])
			first[sm->stack] = i;
		counts[sm->stack] += sm->weight;
		f->total += sm->weight;
	}
	for (size_t i = 0; i < nstacks; i++) {
		if (!counts[i])
			continue;
		if ((err = fold_one(&c, session__sample(s, first[i]), session__stack(s, i), counts[i],
				    &f->stacks[f->nstacks++])))
			goto out;
	}
	qsort_r(f->stacks, f->nstacks, sizeof(*f->stacks), cmp_stacks, f);
	/* stacks equal in name: other addresses in the same functions, or other processes */
	for (size_t i = 0; i < f->nstacks; i++) {
		if (n && !cmp_stacks(&f->stacks[n - 1], &f->stacks[i], f)) {
			f->stacks[n - 1].count += f->stacks[i].count;
			free(f->stacks[i].names);
		} else {
			f->stacks[n++] = f->stacks[i];
		}
	}
	f->nstacks = n;
	err = 0;
out:
	free(counts);
	free(first);
	free(c.frame_names);
	if (err)
		folded__release(f);
	return err;
}

void folded__release(struct folded *f)
{
	for (size_t i = 0; i < f->nstacks; i++)
		free(f->stacks[i].names);
	free(f->stacks);
	free(f->kinds);
	strtab__release(&f->names);
	memset(f, 0, sizeof(*f));
}

int export_collapsed(const struct session *s, FILE *out, bool keep_addresses)
{
	char **shown = NULL;	/* by name id: the escaped name, NULL when it is its own */
	struct folded f;
	int err;

	if ((err = folded__build(&f, s, keep_addresses)))
		return err;
	/* each name escaped once: ';' too, so that a frame holding one stays one frame */
	shown = calloc(f.names.count + 1, sizeof(*shown));
	if (!shown) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < f.names.count; i++) {
		if (text_clean(f.names.strs[i], TEXT_FOLDED))
			continue;
		if (!(shown[i] = text_dup(f.names.strs[i], TEXT_FOLDED))) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < f.nstacks; i++) {
		const struct folded_stack *st = &f.stacks[i];

		for (uint32_t j = 0; j < st->depth; j++) {
			uint32_t id = st->names[j];

			if (j)
				putc(';', out);
			fputs(shown[id] ? shown[id] : f.names.strs[id], out);
		}
		fprintf(out, " %" PRIu64 "\n", st->count);
	}
	err = export_stream_error(out);
out:
	for (size_t i = 0; shown && i < f.names.count; i++)
		free(shown[i]);
	free(shown);
	folded__release(&f);
	return err;
}
