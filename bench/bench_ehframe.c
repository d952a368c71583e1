/* SPDX-License-Identifier: BSD-2-Clause */
/* Figures for rows derived from .eh_frame: coverage, conversion speed, memory, disk cache. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sfunwind.h"

/*
 * usage: bench_ehframe [--runs N] --cache-dir DIR FILE...
 *
 * For each ELF FILE (a shared library without .sframe, typically):
 *
 *   coverage   the share of .text bytes whose row can be stepped through:
 *              the CFA from SP or FP (plain or loaded), the RA and FP from
 *              places the unwinder reads, outermost rows and signal
 *              trampolines included; the rest is split into bytes no FDE
 *              covers (most of them alignment padding between functions)
 *              and bytes whose rows are unusable or out of reach
 *   convert    sfu_sframe__from_eh_frame() on the sections read from the
 *              file: the best of N runs, and per MB of .eh_frame
 *   memory     bytes the derived table keeps allocated (mallinfo2), and
 *              the same per FDE
 *   disk       a first module (converts and writes DIR/<build-id>...sframe),
 *              then a second one, as a second profiler run opens it: time of
 *              sfu_module__eh_frame_table() for each, and the file's size
 *
 * Times are CLOCK_MONOTONIC wall time of one thread.
 */

struct sections {
	struct sfu_eh_frame in;
	void *eh, *hdr;
	uint64_t text_start, text_end;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int read_sections(const char *path, struct sections *s)
{
	GElf_Shdr shdr;
	GElf_Ehdr ehdr;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf *elf;
	int fd, err = -ENOENT;

	memset(s, 0, sizeof(*s));
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || !gelf_getehdr(elf, &ehdr) || elf_getshdrstrndx(elf, &shstrndx)) {
		err = -EBADMSG;
		goto out;
	}
	s->in.machine = ehdr.e_machine;
	s->in.big_endian = ehdr.e_ident[EI_DATA] == ELFDATA2MSB;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &shdr) || !(name = elf_strptr(elf, shstrndx, shdr.sh_name)))
			continue;
		if (!strcmp(name, ".text")) {
			s->text_start = shdr.sh_addr;
			s->text_end = shdr.sh_addr + shdr.sh_size;
			continue;
		}
		if (strcmp(name, ".eh_frame") && strcmp(name, ".eh_frame_hdr"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_size)
			continue;
		if (!strcmp(name, ".eh_frame")) {
			s->eh = malloc(d->d_size);
			memcpy(s->eh, d->d_buf, d->d_size);
			s->in.data = s->eh;
			s->in.size = d->d_size;
			s->in.addr = shdr.sh_addr;
		} else {
			s->hdr = malloc(d->d_size);
			memcpy(s->hdr, d->d_buf, d->d_size);
			s->in.hdr = s->hdr;
			s->in.hdr_size = d->d_size;
			s->in.hdr_addr = shdr.sh_addr;
		}
	}
	err = s->in.data && s->text_end ? 0 : -ENOENT;
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

static bool reg_readable(const struct sfu_loc *l)
{
	return l->reg == SFU_REG_SP || l->reg == SFU_REG_FP;
}

/* Can the unwinder step through @row (at frame 0, where the link register is known)? */
static bool row_usable(const struct sfu_row *row)
{
	if (row->flags & SFU_ROW_SIGNAL_FRAME)
		return true;
	if (row->flags & SFU_ROW_UNUSABLE)
		return false;
	if (row->ra.kind == SFU_LOC_UNDEFINED)
		return true;	/* the outermost frame: a correct answer */
	if ((row->cfa.kind != SFU_LOC_REG_OFFSET && row->cfa.kind != SFU_LOC_DEREF) ||
	    !reg_readable(&row->cfa))
		return false;
	switch (row->ra.kind) {
	case SFU_LOC_AT_CFA:
		break;
	case SFU_LOC_DEREF:
		if (!reg_readable(&row->ra))
			return false;
		break;
	case SFU_LOC_IN_REG:
		if (row->ra.reg != SFU_REG_RA || row->ra.offset)
			return false;
		break;
	default:
		return false;
	}
	switch (row->fp.kind) {
	case SFU_LOC_SAME:
	case SFU_LOC_AT_CFA:
		return true;
	case SFU_LOC_DEREF:
	case SFU_LOC_IN_REG:
		return reg_readable(&row->fp) && (row->fp.kind == SFU_LOC_DEREF || !row->fp.offset);
	default:
		return false;
	}
}

/* Bytes of [lo, hi) inside [a, b). */
static uint64_t overlap(uint64_t lo, uint64_t hi, uint64_t a, uint64_t b)
{
	uint64_t s = lo > a ? lo : a, e = hi < b ? hi : b;

	return e > s ? e - s : 0;
}

/* Below this, a stretch of .text between FDEs is taken for alignment padding. */
#define PADDING_MAX 64

static void coverage(const struct sfu_sframe *sf, const struct sections *s, uint64_t *usable,
		     uint64_t *unusable, uint64_t *covered, uint64_t *padding)
{
	uint64_t pos = s->text_start;

	*usable = *unusable = *covered = *padding = 0;
	for (size_t i = 0; i < sfu_sframe__fde_count(sf); i++) {
		const struct sfu_fde *fde = sfu_sframe__fde(sf, i);

		/* the FDEs come sorted by start */
		if (fde->start > pos && fde->start - pos < PADDING_MAX)
			*padding += overlap(pos, fde->start, s->text_start, s->text_end);
		if (fde->start + fde->size > pos)
			pos = fde->start + fde->size;
		*covered += overlap(fde->start, fde->start + fde->size, s->text_start, s->text_end);
		for (uint32_t k = 0; k < fde->num_fres; k++) {
			const struct sfu_row *row = sfu_sframe__row(sf, fde->first_row + k);
			uint64_t lo, hi, n;

			if (fde->fde_type == SFU_FDE_PCMASK) {
				/* each row's share of every block */
				uint32_t end = k + 1 < fde->num_fres ?
					       sfu_sframe__row(sf, fde->first_row + k + 1)->start :
					       fde->rep_size;

				n = overlap(fde->start, fde->start + fde->size, s->text_start,
					    s->text_end) * (end - row->start) / fde->rep_size;
			} else {
				lo = fde->start + row->start;
				hi = k + 1 < fde->num_fres ?
				     fde->start + sfu_sframe__row(sf, fde->first_row + k + 1)->start :
				     fde->start + fde->size;
				n = overlap(lo, hi, s->text_start, s->text_end);
			}
			if (row_usable(row))
				*usable += n;
			else
				*unusable += n;
		}
	}
}

static void bench_file(const char *path, int runs, const char *cache_dir)
{
	uint64_t usable, unusable, covered, padding, text;
	struct sfu_eh_frame_stats st;
	struct sfu_sframe *sf = NULL;
	struct sections s;
	double best = 1e30, t, first_ms, second_ms;
	size_t before, mem = 0;
	struct sfu_module *m;
	struct sfu_cache *cache;
	char *file = NULL;
	int err;

	err = read_sections(path, &s);
	if (err) {
		fprintf(stderr, "bench_ehframe: %s: no .eh_frame or .text (%s)\n", path,
			strerror(-err));
		return;
	}
	for (int r = 0; r < runs; r++) {
		struct mallinfo2 mi;

		if (sf)
			sfu_sframe__free(sf);
		mi = mallinfo2();
		before = mi.uordblks;
		t = now_ms();
		sf = sfu_sframe__from_eh_frame(&s.in, &st, NULL);
		t = now_ms() - t;
		if (!sf) {
			fprintf(stderr, "bench_ehframe: %s: conversion failed: %s\n", path,
				strerror(errno));
			goto out;
		}
		mi = mallinfo2();
		mem = mi.uordblks - before;
		if (t < best)
			best = t;
	}
	coverage(sf, &s, &usable, &unusable, &covered, &padding);
	text = s.text_end - s.text_start;

	printf("%s:\n", path);
	printf("  .eh_frame   %zu bytes, .eh_frame_hdr %zu bytes, .text %" PRIu64 " bytes\n",
	       s.in.size, s.in.hdr_size, text);
	printf("  fdes        %u (%u skipped, %u cut short), %u functions, %u rows "
	       "(%u unusable), %u signal trampolines\n", st.fdes, st.fdes_skipped, st.fdes_cut,
	       st.funcs, st.rows, st.rows_unusable, st.signal_frames);
	printf("  coverage    %.2f%% of .text has usable rows; %.2f%% has no FDE (%.2f%% in gaps "
	       "under %d bytes: padding); %.2f%% has rows the unwinder cannot follow\n",
	       100.0 * usable / text, 100.0 * (text - covered) / text, 100.0 * padding / text,
	       PADDING_MAX, 100.0 * unusable / text);
	printf("              %.2f%% of the bytes FDEs cover\n", 100.0 * usable / covered);
	printf("  convert     %.2f ms (best of %d), %.1f ms per MB of .eh_frame\n", best, runs,
	       best / (s.in.size / 1048576.0));
	printf("  memory      %zu bytes for the table (%.1f per FDE, %.1f per row)\n", mem,
	       (double)mem / st.funcs, (double)mem / st.rows);

	/* the disk cache, through modules as a profiler opens them */
	cache = sfu_cache__new();
	sfu_cache__set_dir(cache, cache_dir);
	m = sfu_cache__open(cache, path, NULL, NULL);
	t = now_ms();
	if (!m || !sfu_module__eh_frame_table(m)) {
		fprintf(stderr, "bench_ehframe: %s: no module or table\n", path);
		sfu_module__put(m);
		sfu_cache__free(cache);
		goto out;
	}
	first_ms = now_ms() - t;
	sfu_module__put(m);
	sfu_cache__free(cache);

	cache = sfu_cache__new();
	sfu_cache__set_dir(cache, cache_dir);
	m = sfu_cache__open(cache, path, NULL, NULL);
	t = now_ms();
	sfu_module__eh_frame_table(m);
	second_ms = now_ms() - t;
	if (asprintf(&file, "%s", sfu_module__eh_frame_from_disk(m) ? "read from disk" :
				  "NOT read from disk") < 0)
		file = NULL;
	printf("  disk cache  first run %.2f ms (convert and write), second run %.2f ms (%s)\n",
	       first_ms, second_ms, file ? file : "?");
	free(file);
	sfu_module__put(m);
	sfu_cache__free(cache);
out:
	sfu_sframe__free(sf);
	free(s.eh);
	free(s.hdr);
}

int main(int argc, char **argv)
{
	const char *cache_dir = NULL;
	int runs = 10, i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--cache-dir") && i + 1 < argc)
			cache_dir = argv[++i];
		else
			break;
	}
	if (i == argc || !cache_dir || runs < 1) {
		fprintf(stderr, "usage: %s [--runs N] --cache-dir DIR FILE...\n", argv[0]);
		return 2;
	}
	for (; i < argc; i++)
		bench_file(argv[i], runs, cache_dir);
	return 0;
}
