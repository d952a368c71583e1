/* SPDX-License-Identifier: BSD-2-Clause */
/* Printers for a decoded SFrame table: sfprof's own listing and binutils 2.40 readelf's. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "buildid/buildid.h"
#include "sframe_dump.h"
#include "util/text.h"

static void diag_set(struct sfu_diag *diag, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void diag_set(struct sfu_diag *diag, int err, const char *fmt, ...)
{
	va_list ap;

	if (!diag)
		return;
	diag->err = err;
	va_start(ap, fmt);
	vsnprintf(diag->reason, sizeof(diag->reason), fmt, ap);
	va_end(ap);
}

static bool abi_is_aarch64(uint8_t abi)
{
	return abi == SFU_SFRAME_ABI_AARCH64_BE || abi == SFU_SFRAME_ABI_AARCH64_LE;
}

/* ---- sfprof's listing ---- */

const char *sframe_origin_name(enum sfu_sframe_origin origin)
{
	switch (origin) {
	case SFU_SFRAME_SECTION_NAME: return "section .sframe";
	case SFU_SFRAME_SECTION_TYPE: return "SHT_GNU_SFRAME section";
	case SFU_SFRAME_SEGMENT: return "PT_GNU_SFRAME segment";
	case SFU_SFRAME_EH_FRAME: return "derived from .eh_frame";
	default: return "SFrame data";
	}
}

static void print_flags(FILE *out, uint8_t flags)
{
	static const struct {
		uint8_t bit;
		const char *name;
	} names[] = {
		{ SFU_SFRAME_F_FDE_SORTED, "SFRAME_F_FDE_SORTED" },
		{ SFU_SFRAME_F_FRAME_POINTER, "SFRAME_F_FRAME_POINTER" },
		{ SFU_SFRAME_F_FDE_FUNC_START_PCREL, "SFRAME_F_FDE_FUNC_START_PCREL" },
	};
	const char *sep = "";

	if (!flags) {
		fputs("none", out);
		return;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (flags & names[i].bit) {
			fprintf(out, "%s%s", sep, names[i].name);
			sep = " | ";
			flags &= ~names[i].bit;
		}
	}
	if (flags)
		fprintf(out, "%s%#x", sep, flags);
}

static const char *reg_name(const struct sfu_loc *loc, char *buf, size_t len)
{
	switch (loc->reg) {
	case SFU_REG_SP: return "sp";
	case SFU_REG_FP: return "fp";
	case SFU_REG_RA: return "lr";
	default:
		snprintf(buf, len, "r%u", loc->dwarf_reg);
		return buf;
	}
}

/*
 * One rule as a short word: "sp+16", "(r12+8)" for a load, "c-8" for a slot
 * at CFA-8, "lr" for a value still in a register, "same", "undefined".
 */
static const char *loc_str(const struct sfu_loc *loc, char *buf, size_t len)
{
	char reg[16];

	switch (loc->kind) {
	case SFU_LOC_SAME:
		return "same";
	case SFU_LOC_UNDEFINED:
		return "undefined";
	case SFU_LOC_AT_CFA:
		snprintf(buf, len, "c%+d", loc->offset);
		return buf;
	case SFU_LOC_REG_OFFSET:
		snprintf(buf, len, "%s%+d", reg_name(loc, reg, sizeof(reg)), loc->offset);
		return buf;
	case SFU_LOC_DEREF:
		snprintf(buf, len, "(%s%+d)", reg_name(loc, reg, sizeof(reg)), loc->offset);
		return buf;
	case SFU_LOC_IN_REG:
		if (loc->offset)
			snprintf(buf, len, "%s%+d", reg_name(loc, reg, sizeof(reg)), loc->offset);
		else
			snprintf(buf, len, "%s", reg_name(loc, reg, sizeof(reg)));
		return buf;
	default:
		snprintf(buf, len, "?kind%u", loc->kind);
		return buf;
	}
}

static void print_function_name(FILE *out, const struct sfu_module *m, bool relocatable,
				uint64_t start)
{
	const char *name;
	uint64_t off;

	/* in a relocatable object every start is 0 until linked: a name would be a guess */
	if (!m || relocatable || sfu_module__symbolize(m, start, &name, &off)) {
		fputs("?", out);
		return;
	}
	/* the ELF file chose the name: escaped, as every name sfprof prints */
	text_put(out, name, 0);
	if (off)
		fprintf(out, "+%#" PRIx64, off);
}

/*
 * Columns of the listing; the header lines use the same widths. A function
 * line starts with "fde", a row with the address it starts at.
 */
#define FDE_FMT		"%-3s %5s  %-18s %10s  %-10s  %-3s  %-6s  %-4s  "

#define ROW_HDR_FMT	"    %-18s  %-14s %-22s "
#define ROW_FMT		"    0x%016" PRIx64 "  %-14s %-22s "

static void print_text_row(FILE *out, const struct sfu_fde *fde, const struct sfu_row *row)
{
	char cfa[40], ra_rule[40], ra[48], fp[40];

	snprintf(ra, sizeof(ra), "%s%s",
		 row->ra.kind == SFU_LOC_UNDEFINED && !(row->flags & SFU_ROW_UNUSABLE) ?
		 "undefined (outermost)" :
		 loc_str(&row->ra, ra_rule, sizeof(ra_rule)),
		 (row->flags & SFU_ROW_MANGLED_RA) ? "[s]" : "");
	fprintf(out, ROW_FMT, fde->start + row->start, loc_str(&row->cfa, cfa, sizeof(cfa)), ra);
	if (row->flags & SFU_ROW_UNUSABLE)
		fprintf(out, "%-14s unusable\n", loc_str(&row->fp, fp, sizeof(fp)));
	else
		fprintf(out, "%s\n", loc_str(&row->fp, fp, sizeof(fp)));
}

/* How the conversion went: what was read, and what could not be used. */
static void print_eh_frame_stats(FILE *out, const struct sfu_module *m)
{
	const struct sfu_eh_frame_stats *st = sfu_module__eh_frame_stats(m);

	if (!st) {
		if (sfu_module__eh_frame_from_disk(m))
			fputs("  eh-frame    read from the disk cache\n", out);
		return;
	}
	fprintf(out, "  eh-frame    %" PRIu32 " FDEs (%s), %" PRIu32 " CIEs, %" PRIu32
		" skipped, %" PRIu32 " cut short\n", st->fdes,
		st->used_hdr ? "from .eh_frame_hdr" : "walked", st->cies, st->fdes_skipped,
		st->fdes_cut);
	fprintf(out, "  unusable    %" PRIu32 " rows\n", st->rows_unusable);
	fprintf(out, "  signal      %" PRIu32 " trampolines\n", st->signal_frames);
	if (st->note[0])
		fprintf(out, "  note        %s\n", st->note);
}

int sframe_dump_text(FILE *out, const char *path, const struct sfu_sframe *sf,
		     enum sfu_sframe_origin origin, const struct sfu_module *m)
{
	const struct sfu_sframe_header *h = sfu_sframe__header(sf);
	const struct sfu_build_id *bid = m ? sfu_module__build_id(m) : NULL;
	const char *abi = sfu_sframe_abi_name(h->abi);
	bool relocatable = false;
	size_t nfdes = sfu_sframe__fde_count(sf);
	size_t nsegs = 0;

	/* no PT_LOAD: a relocatable object, whose starts are unrelocated */
	if (m) {
		sfu_module__segments(m, &nsegs);
		relocatable = nsegs == 0;
	}

	fprintf(out, "%s:\n", path);
	fprintf(out, "  source      %s\n", sframe_origin_name(origin));
	fputs("  build-id    ", out);
	if (bid && bid->len)
		buildid_fput(out, bid->bytes, bid->len);
	else
		fputs("none", out);
	fputc('\n', out);
	fprintf(out, "  version     %u\n", h->version);
	if (abi)
		fprintf(out, "  abi         %s\n", abi);
	else
		fprintf(out, "  abi         %u\n", h->abi);
	fprintf(out, "  byte-order  %s\n", h->big_endian ? "big-endian" : "little-endian");
	fputs("  flags       ", out);
	print_flags(out, h->flags);
	fputc('\n', out);
	/* 0 is "not fixed" in every version */
	if (h->cfa_fixed_fp_offset)
		fprintf(out, "  fixed-fp    c%+d\n", h->cfa_fixed_fp_offset);
	else
		fputs("  fixed-fp    none\n", out);
	if (h->cfa_fixed_ra_offset)
		fprintf(out, "  fixed-ra    c%+d\n", h->cfa_fixed_ra_offset);
	else
		fputs("  fixed-ra    none\n", out);
	if (h->auxhdr_len)
		fprintf(out, "  aux-header  %u bytes\n", h->auxhdr_len);
	fprintf(out, "  fdes        %" PRIu32 "\n", h->num_fdes);
	fprintf(out, "  fres        %" PRIu32 "\n", h->num_fres);
	if (origin == SFU_SFRAME_EH_FRAME && m)
		print_eh_frame_stats(out, m);
	if (relocatable)
		fputs("  note        relocatable object: function starts are not relocated\n", out);

	fprintf(out, "\n" FDE_FMT "%s\n", "", "IDX", "START", "SIZE", "TYPE", "KEY", "SIGNAL",
		"FLEX", "FUNCTION");
	fprintf(out, ROW_HDR_FMT "%s\n", "PC", "CFA", "RA", "FP");
	for (size_t i = 0; i < nfdes; i++) {
		const struct sfu_fde *fde = sfu_sframe__fde(sf, i);
		char type[16], start[24], size[16], idx[24];

		if (fde->fde_type == SFU_FDE_PCMASK)
			snprintf(type, sizeof(type), "pcmask/%u", fde->rep_size);
		else
			snprintf(type, sizeof(type), "pcinc");
		snprintf(start, sizeof(start), "0x%016" PRIx64, fde->start);
		snprintf(size, sizeof(size), "%" PRIu32, fde->size);
		snprintf(idx, sizeof(idx), "%zu", i);
		fprintf(out, "\n" FDE_FMT, "fde", idx, start, size, type,
			abi_is_aarch64(h->abi) ? (fde->pauth_key ? "B" : "A") : "-",
			fde->signal_frame ? "signal" : "-",
			fde->flex ? "flex" : "-");
		print_function_name(out, m, relocatable, fde->start);
		fputc('\n', out);
		for (uint32_t k = 0; k < fde->num_fres; k++)
			print_text_row(out, fde, sfu_sframe__row(sf, fde->first_row + k));
	}
	return ferror(out) ? -EIO : 0;
}

/* ---- binutils 2.40 readelf --sframe ---- */

/* Flags as 2.40 names them: it strcpy()s the second name over the first, so 3 shows as FRAME_POINTER. */
static const char *readelf_flags(uint8_t flags)
{
	if (!flags)
		return "NONE";
	if (flags & SFU_SFRAME_F_FRAME_POINTER)
		return "SFRAME_F_FRAME_POINTER";
	return "SFRAME_F_FDE_SORTED";
}

/* Where 2.40 finds the FP offset among an FRE's offsets. */
static unsigned readelf_fp_index(const struct sfu_sframe_header *h)
{
	return h->cfa_fixed_ra_offset ? 1 : 2;
}

/* Whether 2.40 prints a value (rather than "u") in the FP and RA columns of @row. */
static bool readelf_has_fp(const struct sfu_sframe_header *h, const struct sfu_row *row)
{
	return !h->cfa_fixed_fp_offset && row->offset_count > readelf_fp_index(h);
}

static bool readelf_has_ra(const struct sfu_sframe_header *h, const struct sfu_row *row)
{
	return !h->cfa_fixed_ra_offset && row->offset_count >= 2;
}

static int readelf_check(const struct sfu_sframe *sf, struct sfu_diag *diag)
{
	const struct sfu_sframe_header *h = sfu_sframe__header(sf);
	size_t nfdes = sfu_sframe__fde_count(sf);

	if (h->version != 1) {
		diag_set(diag, -ENOTSUP, "binutils 2.40 reads SFrame version 1 only, this is version %u",
			 h->version);
		return -ENOTSUP;
	}
	if (h->abi != SFU_SFRAME_ABI_AMD64_LE && !abi_is_aarch64(h->abi)) {
		diag_set(diag, -ENOTSUP, "binutils 2.40 knows no SFrame ABI %u", h->abi);
		return -ENOTSUP;
	}
	for (size_t i = 0; i < nfdes; i++) {
		const struct sfu_fde *fde = sfu_sframe__fde(sf, i);

		for (uint32_t k = 0; k < fde->num_fres; k++) {
			const struct sfu_row *row = sfu_sframe__row(sf, fde->first_row + k);

			/* 2.40 prints its error code as the offset ("sp+-1") */
			if (!row->offset_count) {
				diag_set(diag, -ENOTSUP, "FDE %zu: FRE %u has no CFA offset, which binutils 2.40 cannot show",
					 i, k);
				return -ENOTSUP;
			}
			/* the rows below print decoded values back as the raw words they came from */
			if (row->cfa.kind != SFU_LOC_REG_OFFSET ||
			    (readelf_has_fp(h, row) && row->fp.kind != SFU_LOC_AT_CFA) ||
			    (readelf_has_ra(h, row) && row->ra.kind != SFU_LOC_AT_CFA)) {
				diag_set(diag, -ENOTSUP, "FDE %zu: FRE %u has rules binutils 2.40 cannot show",
					 i, k);
				return -ENOTSUP;
			}
		}
	}
	return 0;
}

static void print_readelf_row(FILE *out, const struct sfu_sframe_header *h,
			      const struct sfu_fde *fde, const struct sfu_row *row)
{
	char cfa[32], fp[32], ra[32];
	uint64_t pc;

	/* PCMASK rows show the raw offset into the block, not an address */
	pc = fde->fde_type == SFU_FDE_PCMASK ? row->start : fde->start + row->start;
	snprintf(cfa, sizeof(cfa), "%s+%d", (row->info & 1) ? "sp" : "fp", row->cfa.offset);
	if (readelf_has_fp(h, row))
		snprintf(fp, sizeof(fp), "c%+d", row->fp.offset);
	else
		snprintf(fp, sizeof(fp), "u");
	/* 2.40 shows a fixed RA offset (AMD64) as "u" */
	if (readelf_has_ra(h, row))
		snprintf(ra, sizeof(ra), "c%+d%s", row->ra.offset,
			 (row->flags & SFU_ROW_MANGLED_RA) ? "[s]" : "   ");
	else
		snprintf(ra, sizeof(ra), "u%s", (row->flags & SFU_ROW_MANGLED_RA) ? "[s]" : "   ");
	fprintf(out, "\n    %016" PRIx64 "  %-10s%-10s%-13s", pc, cfa, fp, ra);
}

int sframe_dump_readelf(FILE *out, const struct sfu_sframe *sf, const char *secname,
			struct sfu_diag *diag)
{
	const struct sfu_sframe_header *h = sfu_sframe__header(sf);
	size_t nfdes = sfu_sframe__fde_count(sf);
	int err;

	err = readelf_check(sf, diag);
	if (err)
		return err;

	/* the format strings of libsframe 2.40's sframe-dump.c; 2.40 prints u32 counts with %d */
	fprintf(out, "Contents of the SFrame section %s:", secname);
	fprintf(out, "\n  Header :\n\n");
	fprintf(out, "    Version: SFRAME_VERSION_1\n");
	fprintf(out, "    Flags: %s\n", readelf_flags(h->flags));
	fprintf(out, "    Num FDEs: %d\n", (int32_t)h->num_fdes);
	fprintf(out, "    Num FREs: %d\n", (int32_t)h->num_fres);
	fprintf(out, "\n  Function Index :\n");
	for (size_t i = 0; i < nfdes; i++) {
		const struct sfu_fde *fde = sfu_sframe__fde(sf, i);

		fprintf(out, "\n    func idx [%zu]: pc = 0x%" PRIx64 ", size = %d bytes", i,
			fde->start, (int32_t)fde->size);
		if (abi_is_aarch64(h->abi) && fde->pauth_key)
			fprintf(out, ", pauth = B key");
		fprintf(out, "\n    %-7s%-8s %-10s%-10s%-13s", "STARTPC",
			fde->fde_type == SFU_FDE_PCMASK ? "[m]" : "   ", "CFA", "FP", "RA");
		for (uint32_t k = 0; k < fde->num_fres; k++)
			print_readelf_row(out, h, fde, sfu_sframe__row(sf, fde->first_row + k));
		fprintf(out, "\n");
	}
	return ferror(out) ? -EIO : 0;
}
