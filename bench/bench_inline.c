// SPDX-License-Identifier: BSD-2-Clause
/*
 * Writes a profile whose addresses lie in a real binary (scripts/bench-report's
 * inlined-frames figure): one process mapping BINARY as the loader would, with
 * its build ID and size, and N samples drawn from a pool of stacks made of
 * random addresses inside the binary's functions (its symbol table's), so
 * that report looks up each address's inlined chain in the binary's DWARF.
 *
 * usage: bench_inline --binary PATH [--samples N] [--stacks M] [--addresses K] --out FILE
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/profile.h"
#include "sfunwind/cbf.h"

#define BASE 0x7f3a00000000ull
#define PAGE 0x1000ull
#define MAX_DEPTH 48
#define MAX_LOADS 16

struct func {
	uint64_t start, size;
};

struct load {
	uint64_t vaddr, memsz, offset;
	uint8_t prot;
};

struct binary {
	uint8_t build_id[64];
	size_t build_id_len;
	struct load loads[MAX_LOADS];
	size_t nloads;
	struct func *funcs;
	size_t nfuncs, funcs_cap;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	/* xorshift64*: reproducible figures from run to run */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

__attribute__((noreturn)) static void die(const char *what)
{
	fprintf(stderr, "bench_inline: %s\n", what);
	exit(1);
}

static bool executable(const struct binary *b, uint64_t vaddr)
{
	for (size_t i = 0; i < b->nloads; i++)
		if ((b->loads[i].prot & 4) && vaddr >= b->loads[i].vaddr &&
		    vaddr - b->loads[i].vaddr < b->loads[i].memsz)
			return true;
	return false;
}

/* The build ID note, the PT_LOADs and the functions of the symbol tables. */
static void read_binary(const char *path, struct binary *b)
{
	int fd = open(path, O_RDONLY);
	Elf *e;
	size_t nph = 0;
	Elf_Scn *scn = NULL;

	elf_version(EV_CURRENT);
	if (fd < 0 || !(e = elf_begin(fd, ELF_C_READ, NULL)) || elf_getphdrnum(e, &nph))
		die("cannot read the binary as ELF");
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, i, &ph) || ph.p_type != PT_LOAD || b->nloads == MAX_LOADS)
			continue;
		b->loads[b->nloads++] = (struct load){ ph.p_vaddr, ph.p_memsz, ph.p_offset,
			(uint8_t)((ph.p_flags & PF_R ? 1 : 0) | (ph.p_flags & PF_W ? 2 : 0) |
				  (ph.p_flags & PF_X ? 4 : 0)) };
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || !(d = elf_getdata(scn, NULL)))
			continue;
		if (sh.sh_type == SHT_NOTE) {
			GElf_Nhdr nh;
			size_t off = 0, name_off, desc_off;

			while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0)
				if (nh.n_type == NT_GNU_BUILD_ID && nh.n_descsz <= sizeof(b->build_id)) {
					memcpy(b->build_id, (uint8_t *)d->d_buf + desc_off, nh.n_descsz);
					b->build_id_len = nh.n_descsz;
				}
		} else if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) {
			size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;

			for (size_t i = 0; i < n; i++) {
				GElf_Sym sym;

				if (!gelf_getsym(d, i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
				    sym.st_size < 8 || !executable(b, sym.st_value))
					continue;
				if (b->nfuncs == b->funcs_cap) {
					b->funcs_cap = b->funcs_cap ? 2 * b->funcs_cap : 1024;
					b->funcs = realloc(b->funcs, b->funcs_cap * sizeof(*b->funcs));
					if (!b->funcs)
						die("out of memory");
				}
				b->funcs[b->nfuncs++] = (struct func){ sym.st_value, sym.st_size };
			}
		}
	}
	elf_end(e);
	close(fd);
	if (!b->nfuncs || !b->nloads)
		die("no functions or no PT_LOAD in the binary");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "binary", required_argument, NULL, 'b' },
		{ "samples", required_argument, NULL, 'n' },
		{ "stacks", required_argument, NULL, 's' },
		{ "addresses", required_argument, NULL, 'a' },
		{ "out", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	const char *binary = NULL, *out = NULL;
	size_t nsamples = 1000000, nstacks = 20000, naddrs = 20000;
	struct binary b = { 0 };
	struct profile_meta meta = { .freq_hz = 999, .cmdline = "bench_inline" };
	struct profile_diag diag;
	struct profile_writer *w;
	uint32_t module_id;
	uint64_t *addrs, (*stacks)[MAX_DEPTH];
	uint8_t *depth;
	uint8_t ubuf[SFU_CBF_BOUND(MAX_DEPTH)];
	struct stat st;
	int c;

	while ((c = getopt_long(argc, argv, "b:n:s:a:o:", opts, NULL)) != -1) {
		switch (c) {
		case 'b': binary = optarg; break;
		case 'n': nsamples = strtoull(optarg, NULL, 0); break;
		case 's': nstacks = strtoull(optarg, NULL, 0); break;
		case 'a': naddrs = strtoull(optarg, NULL, 0); break;
		case 'o': out = optarg; break;
		default: die("usage: bench_inline --binary PATH [--samples N] [--stacks M] "
			     "[--addresses K] --out FILE");
		}
	}
	if (!binary || !out || !nsamples || !nstacks || !naddrs || stat(binary, &st))
		die("usage: bench_inline --binary PATH [--samples N] [--stacks M] [--addresses K] "
		    "--out FILE");
	read_binary(binary, &b);
	addrs = malloc(naddrs * sizeof(*addrs));
	stacks = malloc(nstacks * sizeof(*stacks));
	depth = malloc(nstacks);
	if (!addrs || !stacks || !depth)
		die("out of memory");
	for (size_t i = 0; i < naddrs; i++) {
		const struct func *f = &b.funcs[rng() % b.nfuncs];

		addrs[i] = BASE + f->start + 1 + rng() % (f->size - 1);
	}
	for (size_t i = 0; i < nstacks; i++) {
		depth[i] = 8 + rng() % (MAX_DEPTH - 8);
		for (size_t k = 0; k < depth[i]; k++)
			stacks[i][k] = addrs[rng() % naddrs];
	}

	w = profile_writer__create(out, &meta, &diag);
	if (!w)
		die(diag.reason);
	struct profile_process p = { .pid = 4242, .ppid = 1, .comm = "bench", .exe = binary };
	struct profile_module m = { .build_id = b.build_id, .build_id_len = b.build_id_len,
				    .path = binary, .file_size = (uint64_t)st.st_size };

	if (profile_writer__process(w, &p) || profile_writer__module(w, &m, &module_id))
		die("cannot write the process");
	for (size_t i = 0; i < b.nloads; i++) {
		const struct load *l = &b.loads[i];
		uint64_t start = (BASE + l->vaddr) & ~(PAGE - 1);
		struct profile_mapping map = { 4242, start, (BASE + l->vaddr + l->memsz + PAGE - 1) &
					       ~(PAGE - 1), l->offset & ~(PAGE - 1), l->prot,
					       module_id };

		if (profile_writer__mapping(w, &map))
			die("cannot write a mapping");
	}
	for (size_t i = 0; i < nsamples; i++) {
		/* skewed towards the first stacks, as profiles are */
		double u = (double)(rng() >> 11) / (double)(1ull << 53);
		size_t k = (size_t)(u * u * u * nstacks);
		struct profile_sample s = { .time_ns = 1000000000ull + i * 1001001ull, .pid = 4242,
					    .tid = 4242, .weight = 1, .ustack = ubuf };
		struct sfu_cbf_enc enc;

		if (k >= nstacks)
			k = nstacks - 1;
		if (sfu_cbf_enc__init(&enc, 64, ubuf, sizeof(ubuf)) ||
		    sfu_cbf_encode_stack(&enc, stacks[k], depth[k], MAX_DEPTH, false))
			die("CBF encoding");
		s.ustack_len = sfu_cbf_enc__len(&enc);
		/* sfprof record writes a block a second at the latest */
		if (i % 1000 == 999 && profile_writer__flush(w))
			die("cannot write a block");
		if (profile_writer__sample(w, &s))
			die("cannot write a sample");
	}
	if (profile_writer__close(w, false, &diag))
		die(diag.reason);
	printf("%zu samples, %zu stacks of %zu addresses in %zu functions of %s\n", nsamples,
	       nstacks, naddrs, b.nfuncs, binary);
	free(addrs);
	free(stacks);
	free(depth);
	free(b.funcs);
	return 0;
}
