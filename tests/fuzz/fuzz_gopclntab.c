// SPDX-License-Identifier: BSD-2-Clause
/* Fuzz target: a Go function table (.gopclntab) decoded, searched and its pc-value tables read. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gopclntab_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* .text of the made-up tables (tests/fuzz/gopclntab_seed.py); where a 1.18 table's textStart is 0. */
#define TEXT_HINT 0x401000ULL
/* Where the input is said to be loaded when it is taken as a segment holding a table. */
#define SEGMENT_ADDR 0x4a0000ULL

/* Bounds that keep one input fast whatever its counts claim. */
#define MAX_FUNCS 256
#define MAX_PCS 64

static volatile uint64_t sink;

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_gopclntab: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static void check_err(int err, const char *what)
{
	if (err && err != -ENOENT && err != -EBADMSG)
		broken("%s returned %d", what, err);
}

/* A function as decoded: a name the table holds, a range that is one. */
static void check_func(const struct go_func *f)
{
	if (!f->name)
		broken("a function without a name");
	sink += strlen(f->name);
	if (f->end < f->entry)
		broken("function %s ends at %#llx before its entry %#llx", f->name,
		       (unsigned long long)f->end, (unsigned long long)f->entry);
}

static void probe(const struct sfu_gopclntab *t, const struct go_func *f, uint64_t pc)
{
	const char *names[8];
	uint64_t v, start;
	size_t n;
	int32_t d;
	int err;

	err = sfu_gopclntab__spdelta(t, f, pc, &d, &start);
	check_err(err, "spdelta");
	if (!err && (start < f->entry || start > pc))
		broken("the SP delta at %#llx applies from %#llx", (unsigned long long)pc,
		       (unsigned long long)start);
	err = sfu_gopclntab__inlined(t, f, pc, names, 8, &n);
	check_err(err, "inlined");
	for (size_t i = 0; !err && i < n && i < 8; i++)
		sink += strlen(names[i]);

	err = sfu_gopclntab__pcdata(t, f, GO_PCDATA_INLTREE_INDEX, pc, &d);
	check_err(err, "pcdata");
	if (!err)
		sink += (uint32_t)d;
	err = sfu_gopclntab__funcdata(t, f, GO_FUNCDATA_INLTREE, &v);
	check_err(err, "funcdata");
	if (!err)
		sink += v;
}

/* The whole input as the segment a stripped file's table is found in, with its moduledata. */
static struct sfu_gopclntab *in_segment(const uint8_t *data, size_t size)
{
	struct sfu_gopclntab *t;
	uint64_t gofunc;
	size_t off;

	if (sfu_gopclntab__scan(data, size, &off))
		return NULL;
	if (off >= size)
		broken("scan found a table at %zu of %zu bytes", off, size);
	t = sfu_gopclntab__new_in(data, size, SEGMENT_ADDR, off, size - off, TEXT_HINT, NULL);
	if (t && !sfu_gopclntab__find_gofunc(t, data, size, &gofunc)) {
		if (!gofunc)
			broken("moduledata found with gofunc 0");
		/* the input again as the segment go:func.* is in, a page further: a PIE's .rodata */
		if (gofunc >= SEGMENT_ADDR + 0x1000 &&
		    sfu_gopclntab__set_gofunc(t, gofunc, data, size, SEGMENT_ADDR + 0x1000) != 0)
			broken("set_gofunc failed");
		else
			sfu_gopclntab__set_gofunc(t, gofunc, NULL, 0, 0);
	}
	return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sfu_gopclntab *t;
	struct go_func f, g;
	size_t n;
	int err;

	t = sfu_gopclntab__new(data, size, TEXT_HINT, NULL);
	if (!t) {
		if (errno != EBADMSG && errno != ENOTSUP && errno != ENOMEM)
			broken("refused with errno %d", errno);
		t = in_segment(data, size);
		if (!t)
			return 0;
	}
	n = sfu_gopclntab__count(t);
	if (sfu_gopclntab__func(t, n, &f) != -ENOENT)
		broken("function %zu of %zu exists", n, n);
	for (size_t i = 0; i < n && i < MAX_FUNCS; i++) {
		err = sfu_gopclntab__func(t, i, &f);
		check_err(err, "func");
		if (err)
			continue;
		check_func(&f);
		for (uint64_t k = 0; k < MAX_PCS && f.entry + k < f.end; k++) {
			uint64_t pc = f.entry + k;

			probe(t, &f, pc);
			err = sfu_gopclntab__find(t, pc, &g);
			check_err(err, "find");
			if (err)
				continue;
			check_func(&g);
			if (pc < g.entry || pc >= g.end)
				broken("%#llx found in [%#llx, %#llx)", (unsigned long long)pc,
				       (unsigned long long)g.entry, (unsigned long long)g.end);
		}
	}
	sfu_gopclntab__free(t);
	return 0;
}
