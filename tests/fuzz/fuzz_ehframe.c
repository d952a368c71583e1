// SPDX-License-Identifier: BSD-2-Clause
/* Fuzz target: derive an SFrame table from .eh_frame (and .eh_frame_hdr) bytes, then use it. */
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sfunwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Input layout, integers little-endian:
 *   0   1  flags: bit 0 AArch64 (else x86-64), bit 1 big-endian (AArch64),
 *          bit 2 a data and text base for datarel and textrel pointers
 *   1   4  address of .eh_frame
 *   5   4  address of .eh_frame_hdr
 *   9   4  length H of .eh_frame_hdr (clamped to what is there)
 *   13  H  .eh_frame_hdr
 *   ..     .eh_frame, the rest
 * gen_seeds.sh writes real sections in this form.
 */
#define HEADER 13

#define MAX_PROBED_FDES 256
#define MAX_PROBED_ROWS 64

static volatile uint64_t sink;

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_ehframe: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* What every derived table promises: rows inside their function, in order, well-formed. */
static void check_table(const struct sfu_sframe *sf, const struct sfu_eh_frame_stats *st)
{
	size_t count = sfu_sframe__fde_count(sf), rows = 0;
	uint64_t prev_start = 0;

	if (sfu_sframe__header(sf)->version != 3)
		broken("derived table of version %u", sfu_sframe__header(sf)->version);
	if (count != st->funcs)
		broken("%zu FDEs, the stats say %u", count, st->funcs);
	for (size_t i = 0; i < count; i++) {
		const struct sfu_fde *fde = sfu_sframe__fde(sf, i);

		if (i && fde->start <= prev_start)
			broken("FDE %zu starts at %#llx, not after %#llx", i,
			       (unsigned long long)fde->start, (unsigned long long)prev_start);
		prev_start = fde->start;
		if (!fde->num_fres)
			broken("FDE %zu has no rows", i);
		for (uint32_t k = 0; k < fde->num_fres; k++) {
			const struct sfu_row *row = sfu_sframe__row(sf, fde->first_row + k);

			if (fde->fde_type == SFU_FDE_PCINC && row->start >= fde->size)
				broken("FDE %zu row %u starts at %#x, past the size %#x", i, k,
				       row->start, fde->size);
			if ((row->flags & SFU_ROW_UNUSABLE) && !(row->flags & SFU_ROW_FLEX))
				broken("FDE %zu row %u unusable outside a flexible FDE", i, k);
			if (fde->signal_frame != !!(row->flags & SFU_ROW_SIGNAL_FRAME))
				broken("FDE %zu row %u: signal flag differs from its FDE's", i, k);
			sink += row->start + row->flags + row->cfa.kind + row->ra.kind + row->fp.kind;
		}
		rows += fde->num_fres;
	}
	if (rows != st->rows)
		broken("%zu rows, the stats say %u", rows, st->rows);
}

static void probe(const struct sfu_sframe *sf)
{
	size_t count = sfu_sframe__fde_count(sf);

	if (count > MAX_PROBED_FDES)
		count = MAX_PROBED_FDES;
	for (size_t i = 0; i < count; i++) {
		const struct sfu_fde *fde = sfu_sframe__fde(sf, i), *got;
		size_t n = fde->num_fres < MAX_PROBED_ROWS ? fde->num_fres : MAX_PROBED_ROWS;
		const struct sfu_row *row;

		for (size_t k = 0; k < n; k++) {
			uint64_t pc = fde->start + sfu_sframe__row(sf, fde->first_row + k)->start;

			if (sfu_sframe__find(sf, pc, &got, &row) == 0 &&
			    (pc < got->start || pc - got->start >= got->size))
				broken("find(%#llx) gave a function that does not cover it",
				       (unsigned long long)pc);
		}
		sink += sfu_sframe__find(sf, fde->start + fde->size, &got, &row);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sfu_eh_frame in = { 0 };
	struct sfu_eh_frame_stats st;
	struct sfu_diag diag = { 0 };
	struct sfu_sframe *sf;
	uint8_t *eh = NULL, *hdr = NULL;
	size_t hdr_len;
	void *enc = NULL;
	size_t enc_size;

	if (size < HEADER)
		return 0;
	hdr_len = rd32(data + 9);
	if (hdr_len > size - HEADER)
		hdr_len = size - HEADER;
	/* exact-size copies, so that a read past either end is caught */
	hdr = malloc(hdr_len ? hdr_len : 1);
	eh = malloc(size - HEADER - hdr_len ? size - HEADER - hdr_len : 1);
	if (!hdr || !eh)
		goto out;
	memcpy(hdr, data + HEADER, hdr_len);
	memcpy(eh, data + HEADER + hdr_len, size - HEADER - hdr_len);
	in = (struct sfu_eh_frame){
		.data = eh,
		.size = size - HEADER - hdr_len,
		.addr = rd32(data + 1),
		.hdr = hdr_len ? hdr : NULL,
		.hdr_size = hdr_len,
		.hdr_addr = rd32(data + 5),
		.machine = (data[0] & 1) ? EM_AARCH64 : EM_X86_64,
		.big_endian = (data[0] & 3) == 3,
		.data_base = (data[0] & 4) ? 0x600000 : 0,
		.text_base = (data[0] & 4) ? 0x400000 : 0,
	};
	sf = sfu_sframe__from_eh_frame(&in, &st, &diag);
	if (!sf) {
		if (errno != EBADMSG && errno != ENOMEM)
			broken("conversion failed with errno %d (%s)", errno, diag.reason);
		if (!diag.reason[0])
			broken("conversion failed without a reason");
		goto out;
	}
	check_table(sf, &st);
	probe(sf);
	/* the same input encodes to bytes that decode to the same number of functions */
	if (sfu_eh_frame_encode(&in, &enc, &enc_size, NULL, NULL) == 0) {
		struct sfu_sframe *again = sfu_sframe__new(enc, enc_size, 0, NULL);

		if (!again || sfu_sframe__fde_count(again) != sfu_sframe__fde_count(sf))
			broken("encoded table does not decode the same");
		sfu_sframe__free(again);
	} else {
		broken("encode failed where the conversion succeeded");
	}
	sfu_sframe__free(sf);
out:
	free(enc);
	free(hdr);
	free(eh);
	return 0;
}
