// SPDX-License-Identifier: BSD-2-Clause
/* Fuzz target: decode an SFrame section, walk and query it, then re-encode and decode it again. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sfunwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Where the section is said to be loaded; function starts are relative to it. */
#define SECTION_ADDR 0x401000ULL

/* Bounds that keep one input fast whatever its counts claim. */
#define MAX_PROBED_FDES 256
#define MAX_PROBED_ROWS 64
#define MAX_ENCODED_ROWS 100000

static volatile uint64_t sink;

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_sframe: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static void touch_loc(const struct sfu_loc *loc)
{
	sink += loc->kind + loc->reg + loc->dwarf_reg + (uint64_t)(int64_t)loc->offset;
}

static void touch_row(const struct sfu_row *row)
{
	sink += row->start + row->flags + row->offset_size + row->offset_count + row->info;
	touch_loc(&row->cfa);
	touch_loc(&row->ra);
	touch_loc(&row->fp);
}

/* Every FDE and each of its rows is reachable through the accessors. */
static void walk(const struct sfu_sframe *sf)
{
	size_t count = sfu_sframe__fde_count(sf);

	for (size_t i = 0; i < count; i++) {
		const struct sfu_fde *fde = sfu_sframe__fde(sf, i);

		if (!fde)
			broken("FDE %zu of %zu is NULL", i, count);
		sink += fde->start + fde->size + fde->info + fde->info2 + fde->rep_size;
		for (size_t k = 0; k < fde->num_fres; k++) {
			const struct sfu_row *row = sfu_sframe__row(sf, (size_t)fde->first_row + k);

			if (!row)
				broken("FDE %zu row %zu (index %zu) is NULL", i, k,
				       (size_t)fde->first_row + k);
			touch_row(row);
		}
	}
	if (sfu_sframe__fde(sf, count))
		broken("FDE %zu exists past the count", count);
}

/* A hit must lie inside the function and at or after the row's start. */
static void probe(const struct sfu_sframe *sf, uint64_t pc)
{
	const struct sfu_fde *fde = NULL, *lfde = NULL;
	const struct sfu_row *row = NULL;
	int err = sfu_sframe__find(sf, pc, &fde, &row);
	struct sfu_row lrow;
	int lerr = sfu_sframe__lookup(sf, pc, &lfde, &lrow);

	/* the row decoded alone from the section is the one decoded among all */
	if (lerr != err || (!err && (lfde != fde || memcmp(&lrow, row, sizeof(lrow)))))
		broken("lookup(%#llx) differs from find: %d against %d", (unsigned long long)pc,
		       lerr, err);
	if (err == -ENOENT)
		return;
	if (err)
		broken("find(%#llx) returned %d, not 0 or -ENOENT", (unsigned long long)pc, err);
	if (!fde || !row)
		broken("find(%#llx) succeeded without an FDE or row", (unsigned long long)pc);
	if (pc < fde->start || pc - fde->start >= fde->size)
		broken("find(%#llx) gave function [%#llx, +%u) that does not cover it",
		       (unsigned long long)pc, (unsigned long long)fde->start, fde->size);
	if (fde->fde_type == SFU_FDE_PCINC && row->start > pc - fde->start)
		broken("find(%#llx) gave a row starting at +%u, after the pc (+%llu)",
		       (unsigned long long)pc, row->start,
		       (unsigned long long)(pc - fde->start));
	touch_row(row);
}

static void probe_all(const struct sfu_sframe *sf, const uint8_t *data, size_t size)
{
	size_t count = sfu_sframe__fde_count(sf);

	if (count > MAX_PROBED_FDES)
		count = MAX_PROBED_FDES;
	for (size_t i = 0; i < count; i++) {
		const struct sfu_fde *fde = sfu_sframe__fde(sf, i);
		size_t rows = fde->num_fres < MAX_PROBED_ROWS ? fde->num_fres : MAX_PROBED_ROWS;

		probe(sf, fde->start - 1);
		probe(sf, fde->start);
		probe(sf, fde->start + fde->size / 2);
		probe(sf, fde->start + fde->size - 1);
		probe(sf, fde->start + fde->size);
		for (size_t k = 0; k < rows; k++) {
			const struct sfu_row *row = sfu_sframe__row(sf, (size_t)fde->first_row + k);

			probe(sf, fde->start + row->start);
			if (row->start)
				probe(sf, fde->start + row->start - 1);
		}
	}
	/* A few addresses the input itself chooses. */
	for (size_t off = 0; off + 4 <= size && off < 64; off += 16) {
		uint32_t v;

		memcpy(&v, data + size - 4 - off, sizeof(v));
		probe(sf, SECTION_ADDR + v);
		probe(sf, v);
	}
	probe(sf, 0);
	probe(sf, UINT64_MAX);
}

static int cmp_func_start(const void *a, const void *b)
{
	const struct sfu_sframe_func *fa = a, *fb = b;

	return fa->start < fb->start ? -1 : fa->start > fb->start;
}

static int loc_equal(const struct sfu_loc *a, const struct sfu_loc *b)
{
	return a->kind == b->kind && a->reg == b->reg && a->offset == b->offset &&
	       (a->reg != SFU_REG_OTHER || a->dwarf_reg == b->dwarf_reg);
}

/* The mangled-RA bit means nothing for a row whose RA is not recoverable. */
static int row_equal(const struct sfu_row *a, const struct sfu_row *b)
{
	bool mangled_matters = a->ra.kind != SFU_LOC_UNDEFINED;

	return a->start == b->start && loc_equal(&a->cfa, &b->cfa) &&
	       loc_equal(&a->ra, &b->ra) && loc_equal(&a->fp, &b->fp) &&
	       (!mangled_matters ||
		(a->flags & SFU_ROW_MANGLED_RA) == (b->flags & SFU_ROW_MANGLED_RA));
}

/*
 * A section the encoder accepted must decode again. Where the input was
 * plain (functions sorted and apart, rows in order inside their function,
 * nothing V3-flexible) the rows must come back unchanged.
 */
static void check_roundtrip(const struct sfu_sframe_func *funcs, size_t num_funcs, bool plain,
			    const void *out, size_t out_size)
{
	struct sfu_diag diag = { 0 };
	struct sfu_sframe *again = sfu_sframe__new(out, out_size, SECTION_ADDR, &diag);

	if (!again)
		broken("re-encoded section (%zu bytes) does not decode: %s", out_size, diag.reason);
	if (sfu_sframe__fde_count(again) != num_funcs)
		broken("re-encoded section has %zu FDEs, not %zu", sfu_sframe__fde_count(again),
		       num_funcs);
	walk(again);
	for (size_t i = 0; plain && i < num_funcs; i++) {
		const struct sfu_sframe_func *want = &funcs[i];
		const struct sfu_fde *got = sfu_sframe__fde(again, i);

		if (got->start != want->start || got->size != want->size ||
		    got->num_fres != want->num_rows || got->fde_type != want->fde_type)
			broken("FDE %zu: [%#llx, +%u) %u rows type %u came back as [%#llx, +%u) %u rows type %u",
			       i, (unsigned long long)want->start, want->size,
			       (unsigned)want->num_rows, want->fde_type,
			       (unsigned long long)got->start, got->size, got->num_fres,
			       got->fde_type);
		for (size_t k = 0; k < want->num_rows; k++) {
			const struct sfu_row *w = &want->rows[k];
			const struct sfu_row *g = sfu_sframe__row(again, (size_t)got->first_row + k);

			if (!row_equal(g, w))
				broken("FDE %zu row %zu changed in the round trip: "
				       "+%u cfa %u/%u/%d ra %u/%u/%d fp %u/%u/%d flags %#x, was "
				       "+%u cfa %u/%u/%d ra %u/%u/%d fp %u/%u/%d flags %#x",
				       i, k, g->start, g->cfa.kind, g->cfa.reg, g->cfa.offset,
				       g->ra.kind, g->ra.reg, g->ra.offset, g->fp.kind, g->fp.reg,
				       g->fp.offset, g->flags, w->start, w->cfa.kind, w->cfa.reg,
				       w->cfa.offset, w->ra.kind, w->ra.reg, w->ra.offset,
				       w->fp.kind, w->fp.reg, w->fp.offset, w->flags);
		}
	}
	sfu_sframe__free(again);
}

static void encode_and_check(const struct sfu_sframe_header *hdr,
			     struct sfu_sframe_func *funcs, size_t n, bool plain)
{
	SFU_OPTS(sfu_sframe_enc_opts, opts,
		.version = hdr->version,
		.abi = hdr->abi,
		.big_endian = hdr->big_endian,
		.pcrel = hdr->flags & SFU_SFRAME_F_FDE_FUNC_START_PCREL,
		.flags = hdr->flags & SFU_SFRAME_F_FRAME_POINTER,
		.cfa_fixed_fp_offset = hdr->cfa_fixed_fp_offset,
		.cfa_fixed_ra_offset = hdr->cfa_fixed_ra_offset,
		.addr = SECTION_ADDR
	);
	struct sfu_diag diag = { 0 };
	void *out = NULL;
	size_t out_size = 0;
	int err;

	qsort(funcs, n, sizeof(*funcs), cmp_func_start);
	for (size_t i = 1; i < n; i++)
		if (funcs[i].start < funcs[i - 1].start + funcs[i - 1].size)
			plain = false;
	err = sfu_sframe_encode(&opts, funcs, n, &out, &out_size, &diag);
	if (err == 0)
		check_roundtrip(funcs, n, plain, out, out_size);
	else if (err != -EINVAL && err != -ERANGE && err != -ENOMEM)
		broken("encode returned %d, not a documented error", err);
	free(out);
}

/* Feed the decoded functions back to the encoder, skipping those it cannot step through. */
static void reencode(const struct sfu_sframe *sf)
{
	size_t count = sfu_sframe__fde_count(sf), total = 0, n = 0;
	struct sfu_sframe_func *funcs;
	struct sfu_row *rows;
	bool plain = true;

	for (size_t i = 0; i < count; i++)
		total += sfu_sframe__fde(sf, i)->num_fres;
	if (total > MAX_ENCODED_ROWS)
		return;
	funcs = calloc(count ? count : 1, sizeof(*funcs));
	rows = calloc(total ? total : 1, sizeof(*rows));
	if (funcs && rows) {
		total = 0;
		for (size_t i = 0; i < count; i++) {
			const struct sfu_fde *fde = sfu_sframe__fde(sf, i);
			struct sfu_sframe_func *f;

			f = &funcs[n++];
			f->start = fde->start;
			f->size = fde->size;
			f->fde_type = fde->fde_type;
			f->pauth_key = fde->pauth_key;
			f->rep_size = fde->rep_size;
			f->signal_frame = fde->signal_frame;
			f->rows = &rows[total];
			f->num_rows = fde->num_fres;
			for (size_t k = 0; k < fde->num_fres; k++) {
				const struct sfu_row *row =
					sfu_sframe__row(sf, (size_t)fde->first_row + k);

				rows[total++] = *row;
				if (row->flags & (SFU_ROW_FLEX | SFU_ROW_UNUSABLE) ||
				    row->start >= fde->size ||
				    (k && row->start <= f->rows[k - 1].start))
					plain = false;
			}
		}
		encode_and_check(sfu_sframe__header(sf), funcs, n, plain);
	}
	free(funcs);
	free(rows);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sfu_diag diag = { 0 };
	struct sfu_sframe *sf = sfu_sframe__new(data, size, SECTION_ADDR, &diag);

	if (!sf) {
		if (errno != EBADMSG && errno != ENOTSUP && errno != ENOMEM)
			broken("decode failed with errno %d (%s)", errno, diag.reason);
		return 0;
	}
	if (!sfu_sframe__header(sf))
		broken("decoded section has no header");
	walk(sf);
	probe_all(sf, data, size);
	reencode(sf);
	sfu_sframe__free(sf);
	return 0;
}
