/* SPDX-License-Identifier: BSD-2-Clause */
/* The XRay instrumentation map: function ids to addresses from an ELF file's `xray_instr_map`. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/vec.h"
#include "xray.h"

/*
 * A sled entry: the sled's address, its function's address, then kind,
 * always_instrument and version bytes, padded to 32 bytes on 64-bit targets
 * and 16 bytes on 32-bit ones. From version 2 on both addresses are relative
 * to where they are stored (the address field, the function field).
 */
#define SLED_SIZE_64 32
#define SLED_SIZE_32 16

/* A relocation's value at an address of the section, for sleds whose fields the file leaves 0. */
struct reloc {
	uint64_t offset;
	uint64_t value;
};

struct xray_instrmap {
	uint64_t *addrs;	/* by id - 1 */
	uint8_t *kinds;		/* by id - 1: 1 << the kind of each of its sleds */
	size_t count;
};

static uint64_t get_word(const uint8_t *p, unsigned size, bool big_endian)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)p[big_endian ? size - 1 - i : i] << (8 * i);
	return v;
}

static int reloc_cmp(const void *a, const void *b)
{
	const struct reloc *x = a, *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* What a relocation of a type it knows resolves to; false for other types. */
static bool reloc_value(uint16_t machine, uint32_t type, uint64_t sym, int64_t addend,
			uint64_t place, uint64_t *value)
{
	enum { X86_64_64 = 1, X86_64_RELATIVE = 8, X86_64_PC64 = 24,
	       AARCH64_ABS64 = 257, AARCH64_PREL64 = 260, AARCH64_RELATIVE = 1027 };

	if ((machine == EM_X86_64 && type == X86_64_RELATIVE) ||
	    (machine == EM_AARCH64 && type == AARCH64_RELATIVE))
		*value = addend;
	else if ((machine == EM_X86_64 && type == X86_64_64) ||
		 (machine == EM_AARCH64 && type == AARCH64_ABS64))
		*value = sym + addend;
	else if ((machine == EM_X86_64 && type == X86_64_PC64) ||
		 (machine == EM_AARCH64 && type == AARCH64_PREL64))
		*value = sym + addend - place;
	else
		return false;
	return true;
}

/*
 * The relocations that apply to the map's bytes [lo, hi) (addresses of the
 * section; section offsets in a relocatable object, whose sections sit at 0).
 * In a relocatable object only the section's own relocation section counts;
 * in a linked file every SHT_RELA section may hold some (.rela.dyn).
 */
static int load_relocs(Elf *elf, uint16_t machine, bool relocatable, size_t map_ndx,
		       uint64_t lo, uint64_t hi, struct reloc **out, size_t *nout, char *reason)
{
	struct reloc *relocs = NULL;
	size_t n = 0, cap = 0;
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data, *symdata = NULL;
		GElf_Shdr sh;
		size_t count;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		if (relocatable && sh.sh_info != map_ndx)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		if (sh.sh_link) {
			Elf_Scn *sym_scn = elf_getscn(elf, sh.sh_link);

			symdata = sym_scn ? elf_getdata(sym_scn, NULL) : NULL;
		}
		count = data->d_size / sh.sh_entsize;
		for (size_t i = 0; i < count; i++) {
			uint64_t sym = 0, value, place;
			GElf_Rela rela;
			GElf_Sym s;

			if (!gelf_getrela(data, i, &rela))
				break;
			/* a relocatable object's offsets are the section's own, from its address */
			place = relocatable ? lo + rela.r_offset : rela.r_offset;
			if (place < lo || place >= hi)
				continue;
			if (GELF_R_SYM(rela.r_info)) {
				if (!symdata || !gelf_getsym(symdata, GELF_R_SYM(rela.r_info), &s))
					continue;
				sym = s.st_value;
			}
			if (!reloc_value(machine, GELF_R_TYPE(rela.r_info), sym, rela.r_addend, place,
					 &value))
				continue;
			if (VEC_RESERVE(relocs, cap, n + 1, 64)) {
				free(relocs);
				snprintf(reason, 160, "out of memory");
				return -ENOMEM;
			}
			relocs[n++] = (struct reloc){ place, value };
		}
	}
	/* stable on equal offsets: the first relocation seen wins, as in llvm-xray */
	for (size_t i = 1; i < n; i++) {
		struct reloc r = relocs[i];
		size_t j = i;

		while (j > 0 && reloc_cmp(&relocs[j - 1], &r) > 0) {
			relocs[j] = relocs[j - 1];
			j--;
		}
		relocs[j] = r;
	}
	*out = relocs;
	*nout = n;
	return 0;
}

static bool find_reloc(const struct reloc *relocs, size_t n, uint64_t place, uint64_t *value)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (relocs[mid].offset < place)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && relocs[lo].offset == place) {
		*value = relocs[lo].value;
		return true;
	}
	return false;
}

/* Number the sleds' functions as compiler-rt and llvm-xray do. */
static int read_sleds(struct xray_instrmap *m, Elf *elf, const GElf_Ehdr *eh, Elf_Scn *scn,
		      const GElf_Shdr *sh, char *reason)
{
	bool is64 = eh->e_ident[EI_CLASS] == ELFCLASS64;
	bool big = eh->e_ident[EI_DATA] == ELFDATA2MSB;
	unsigned word = is64 ? 8 : 4, sled = is64 ? SLED_SIZE_64 : SLED_SIZE_32;
	uint64_t mask = is64 ? UINT64_MAX : UINT32_MAX;
	bool relocatable = eh->e_type == ET_REL;
	struct reloc *relocs = NULL;
	size_t nrelocs = 0, nsleds, id = 1;
	bool relocs_loaded = false;
	const uint8_t *p;
	uint64_t cur = 0;
	Elf_Data *data;
	int err;

	if (sh->sh_type == SHT_NOBITS) {
		snprintf(reason, 160, "xray_instr_map has no bytes in the file (SHT_NOBITS)");
		return -EBADMSG;
	}
	data = elf_getdata(scn, NULL);
	if (!data || (data->d_size && !data->d_buf)) {
		snprintf(reason, 160, "xray_instr_map: %s", elf_errmsg(-1));
		return -EBADMSG;
	}
	if (data->d_size % sled) {
		snprintf(reason, 160, "xray_instr_map: %zu bytes, not a whole number of %u-byte sleds",
			 (size_t)data->d_size, sled);
		return -EBADMSG;
	}
	nsleds = data->d_size / sled;
	if (!nsleds) {
		snprintf(reason, 160, "xray_instr_map is empty");
		return -EBADMSG;
	}
	m->addrs = calloc(nsleds, sizeof(*m->addrs));
	m->kinds = calloc(nsleds, sizeof(*m->kinds));
	if (!m->addrs || !m->kinds) {
		snprintf(reason, 160, "out of memory");
		return -ENOMEM;
	}
	p = data->d_buf;
	for (size_t i = 0; i < nsleds; i++, p += sled) {
		uint64_t pos = (uint64_t)i * sled;
		uint64_t func = get_word(p + word, word, big);
		uint8_t version = p[2 * word + 2], kind = p[2 * word];

		/*
		 * Older sleds in position-independent files and sleds in objects
		 * not yet linked: a relocation writes the address, as llvm-xray reads
		 * them. Only the function's address matters for ids.
		 */
		if (!func) {
			if (!relocs_loaded) {
				err = load_relocs(elf, eh->e_machine, relocatable, elf_ndxscn(scn),
						  sh->sh_addr, sh->sh_addr + data->d_size, &relocs,
						  &nrelocs, reason);
				if (err)
					return err;
				relocs_loaded = true;
			}
			find_reloc(relocs, nrelocs, sh->sh_addr + pos + word, &func);
		}
		if (version >= 2)
			func = (func + sh->sh_addr + pos + word) & mask;
		/*
		 * A new id each time the function changes; a leading run of sleds
		 * with function 0 shares id 1 with the first real function, as in
		 * llvm-xray's InstrumentationMap.
		 */
		if (!cur) {
			cur = func;
			m->addrs[id - 1] = func;
		}
		if (func != cur) {
			id++;
			cur = func;
			m->addrs[id - 1] = func;
		}
		if (kind < 8)
			m->kinds[id - 1] |= 1u << kind;
	}
	m->count = id;
	free(relocs);
	return 0;
}

struct xray_instrmap *xray_instrmap__open(const char *path, char *reason)
{
	struct xray_instrmap *m = NULL;
	Elf_Scn *scn = NULL, *map = NULL;
	GElf_Shdr sh, map_sh;
	Elf *elf = NULL;
	GElf_Ehdr eh;
	size_t shstrndx;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		snprintf(reason, 160, "%s", strerror(errno));
		errno = -err;
		return NULL;
	}
	err = -EBADMSG;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(reason, 160, "libelf: %s", elf_errmsg(-1));
		goto out;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		snprintf(reason, 160, "not an ELF file");
		goto out;
	}
	if ((eh.e_ident[EI_CLASS] != ELFCLASS64 && eh.e_ident[EI_CLASS] != ELFCLASS32) ||
	    elf_getshdrstrndx(elf, &shstrndx)) {
		snprintf(reason, 160, "unusable ELF header");
		goto out;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		/* the first one, as llvm-xray: a linked file has only one */
		if (name && !strcmp(name, "xray_instr_map")) {
			map = scn;
			map_sh = sh;
			break;
		}
	}
	if (!map) {
		snprintf(reason, 160, "no xray_instr_map section (not built with -fxray-instrument?)");
		err = -ENOENT;
		goto out;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(reason, 160, "out of memory");
		err = -ENOMEM;
		goto out;
	}
	err = read_sleds(m, elf, &eh, map, &map_sh, reason);
out:
	if (elf)
		elf_end(elf);
	close(fd);
	if (err) {
		xray_instrmap__free(m);
		errno = -err;
		return NULL;
	}
	return m;
}

int xray_instrmap__func(const struct xray_instrmap *m, int32_t id, uint64_t *addr)
{
	if (id < 1 || (size_t)id > m->count)
		return -ENOENT;
	*addr = m->addrs[id - 1];
	return 0;
}

int xray_instrmap__kinds(const struct xray_instrmap *m, int32_t id, uint8_t *kinds)
{
	if (id < 1 || (size_t)id > m->count)
		return -ENOENT;
	*kinds = m->kinds[id - 1];
	return 0;
}

size_t xray_instrmap__count(const struct xray_instrmap *m)
{
	return m->count;
}

void xray_instrmap__free(struct xray_instrmap *m)
{
	if (!m)
		return;
	free(m->addrs);
	free(m->kinds);
	free(m);
}
