/* SPDX-License-Identifier: BSD-2-Clause */
/* PLT stubs named NAME@plt, as objdump and perf name them, from the GOT slots they jump through. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plt_names.h"
#include "symbolize.h"

struct plt_stub {
	uint64_t start, end;
	char *name;
};

struct plt_names {
	struct plt_stub *stubs;	/* by address */
	size_t n, cap;
};

/* A dynamic relocation of a GOT slot: what a stub jumping through the slot calls. */
struct got_reloc {
	uint64_t slot;
	int64_t addend;
	const char *sym;	/* NULL: no symbol (IRELATIVE) */
};

struct got_relocs {
	struct got_reloc *v;
	size_t n, cap;
};

static int got_reloc_cmp(const void *a, const void *b)
{
	const struct got_reloc *x = a, *y = b;

	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static int stub_cmp(const void *a, const void *b)
{
	const struct plt_stub *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The relocations of allocated REL and RELA sections on .dynsym. A REL
 * relocation's addend is in the slot it relocates; objdump names its stub
 * without one, and so do we. @return 0 or -errno.
 */
static int read_relocs(Elf *e, struct got_relocs *r)
{
	size_t rel_size = gelf_fsize(e, ELF_T_REL, 1, EV_CURRENT);
	size_t rela_size = gelf_fsize(e, ELF_T_RELA, 1, EV_CURRENT);
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Scn *symscn;
		GElf_Shdr sh, symsh;
		Elf_Data *d, *symd;
		bool is_rela;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_RELA && sh.sh_type != SHT_REL))
			continue;
		is_rela = sh.sh_type == SHT_RELA;
		if (!(sh.sh_flags & SHF_ALLOC) || !rel_size || !rela_size ||
		    sh.sh_entsize != (is_rela ? rela_size : rel_size) ||
		    !(d = elf_getdata(scn, NULL)) ||
		    !(symscn = elf_getscn(e, sh.sh_link)) || !gelf_getshdr(symscn, &symsh) ||
		    symsh.sh_type != SHT_DYNSYM || !(symd = elf_getdata(symscn, NULL)))
			continue;
		n = d->d_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			struct got_reloc *g;
			GElf_Rela rela;
			GElf_Rel rel;
			GElf_Sym sym;
			size_t si;

			if (is_rela ? !gelf_getrela(d, (int)i, &rela) : !gelf_getrel(d, (int)i, &rel))
				return -EBADMSG;
			if (!is_rela)
				rela = (GElf_Rela){ .r_offset = rel.r_offset, .r_info = rel.r_info };
			if (r->n == r->cap) {
				size_t cap = r->cap ? 2 * r->cap : 256;
				void *v = realloc(r->v, cap * sizeof(*r->v));

				if (!v)
					return -ENOMEM;
				r->v = v;
				r->cap = cap;
			}
			g = &r->v[r->n];
			*g = (struct got_reloc){ .slot = rela.r_offset, .addend = rela.r_addend };
			si = GELF_R_SYM(rela.r_info);
			if (si) {
				/* a symbol past the table, a name past its strings: dropped */
				if (!gelf_getsym(symd, (int)si, &sym) ||
				    !(g->sym = elf_strptr(e, symsh.sh_link, sym.st_name)) ||
				    !*g->sym)
					continue;
			}
			r->n++;
		}
	}
	if (r->n)
		qsort(r->v, r->n, sizeof(*r->v), got_reloc_cmp);
	return 0;
}

static const struct got_reloc *find_reloc(const struct got_relocs *r, uint64_t slot)
{
	struct got_reloc key = { .slot = slot };

	return r->n ? bsearch(&key, r->v, r->n, sizeof(*r->v), got_reloc_cmp) : NULL;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * x86-64: the GOT slot the entry at @p (@len bytes, at ELF address @addr)
 * jumps through, `jmp *disp(%rip)` (ff 25) at its start, after endbr64
 * (f3 0f 1e fa) and a bnd prefix (f2) when present. @return false when it
 * jumps through none (PLT0, a lazy entry of an IBT .plt).
 */
static bool x86_64_slot(const uint8_t *p, size_t len, uint64_t addr, uint64_t *slot)
{
	size_t pos = 0;

	if (len >= 4 && !memcmp(p, "\xf3\x0f\x1e\xfa", 4))
		pos = 4;
	if (pos < len && p[pos] == 0xf2)
		pos++;
	if (pos + 6 > len || p[pos] != 0xff || p[pos + 1] != 0x25)
		return false;
	*slot = addr + pos + 6 + (uint64_t)(int64_t)(int32_t)le32(p + pos + 2);
	return true;
}

/*
 * i386: the GOT slot the entry at @p (@len bytes) jumps through, after
 * endbr32 (f3 0f 1e fb) when present: `jmp *ADDR` (ff 25) in an
 * executable's PLT, `jmp *OFF(%ebx)` (ff a3) in a PIC one, %ebx holding
 * the GOT's address @got (none when @has_got is false). @return false when
 * it jumps through none (PLT0, a lazy entry of an IBT .plt).
 */
static bool i386_slot(const uint8_t *p, size_t len, uint64_t got, bool has_got, uint64_t *slot)
{
	size_t pos = 0;

	if (len >= 4 && !memcmp(p, "\xf3\x0f\x1e\xfb", 4))
		pos = 4;
	if (pos + 6 > len || p[pos] != 0xff)
		return false;
	if (p[pos + 1] == 0x25)
		*slot = le32(p + pos + 2);
	else if (p[pos + 1] == 0xa3 && has_got)
		*slot = (uint32_t)(got + le32(p + pos + 2));
	else
		return false;
	return true;
}

/*
 * AArch64: the GOT slot of `adrp x16, PAGE; ldr x17, [x16, #OFF]` at @p
 * (ELF address @addr), both instructions in @len bytes. @return false when
 * they are not there.
 */
static bool aarch64_slot(const uint8_t *p, size_t len, uint64_t addr, uint64_t *slot)
{
	uint32_t adrp, ldr;
	int64_t imm;

	if (len < 8)
		return false;
	adrp = le32(p);
	ldr = le32(p + 4);
	if ((adrp & 0x9f00001f) != 0x90000010 || (ldr & 0xffc003ff) != 0xf9400211)
		return false;
	imm = (int64_t)((((adrp >> 5) & 0x7ffff) << 2) | ((adrp >> 29) & 3));
	if (imm & (1 << 20))
		imm -= 1 << 21;
	*slot = (addr & ~(uint64_t)0xfff) + (uint64_t)(imm * 4096) + ((ldr >> 10) & 0xfff) * 8;
	return true;
}

/* Add the stub at @start named after relocation @g. @return 0 or -ENOMEM. */
static int add_stub(struct plt_names *p, uint64_t start, const struct got_reloc *g)
{
	char *dm = g->sym ? symbolizer__demangle(g->sym) : NULL;
	const char *base = dm ? dm : g->sym;
	int n;

	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		void *v = realloc(p->stubs, cap * sizeof(*p->stubs));

		if (!v) {
			free(dm);
			return -ENOMEM;
		}
		p->stubs = v;
		p->cap = cap;
	}
	p->stubs[p->n] = (struct plt_stub){ .start = start };
	/* objdump's synthetic names: the symbol (+ its addend), or *ABS*(+ADDEND) */
	if (!base && !g->addend)
		n = asprintf(&p->stubs[p->n].name, "*ABS*@plt");
	else if (!base)
		n = asprintf(&p->stubs[p->n].name, "*ABS*+0x%llx@plt",
			     (unsigned long long)g->addend);
	else if (g->addend)
		n = asprintf(&p->stubs[p->n].name, "%s+0x%llx@plt", base,
			     (unsigned long long)g->addend);
	else
		n = asprintf(&p->stubs[p->n].name, "%s@plt", base);
	free(dm);
	if (n < 0)
		return -ENOMEM;
	p->n++;
	return 0;
}

/* What decoding a file's PLT entries needs beyond their bytes. */
struct plt_file {
	unsigned machine;
	bool is32;		/* ELFCLASS32: addresses wrap at 4 GiB (i386, x32) */
	bool has_got;
	uint64_t got;		/* _GLOBAL_OFFSET_TABLE_: .got.plt, else .got (objdump's choice) */
	const struct got_relocs *relocs;
};

/* The stubs of PLT section @scn (@sh) of file @f. @return 0 or -errno. */
static int read_plt(struct plt_names *p, Elf_Scn *scn, const GElf_Shdr *sh,
		    const struct plt_file *f)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t first = p->n, size;
	const uint8_t *buf;
	uint64_t slot;
	int err;

	if (!d || !d->d_buf)
		return 0;
	buf = d->d_buf;
	size = d->d_size < sh->sh_size ? d->d_size : sh->sh_size;
	if (f->machine == EM_X86_64 || f->machine == EM_386) {
		/* .plt and .plt.sec: 16-byte entries; .plt.got: 8 (16 with IBT) */
		size_t stride = sh->sh_entsize == 8 || sh->sh_entsize == 16 ? sh->sh_entsize : 16;

		for (size_t off = 0; off + stride <= size; off += stride) {
			const struct got_reloc *g;
			bool jumps;

			if (f->machine == EM_386)
				jumps = i386_slot(buf + off, stride, f->got, f->has_got, &slot);
			else
				jumps = x86_64_slot(buf + off, stride, sh->sh_addr + off, &slot);
			if (jumps && f->is32)
				slot = (uint32_t)slot;
			if (jumps && (g = find_reloc(f->relocs, slot)) &&
			    (err = add_stub(p, sh->sh_addr + off, g)))
				return err;
		}
	} else {
		for (size_t off = 0; off + 8 <= size; off += 4) {
			const struct got_reloc *g;
			uint64_t start = sh->sh_addr + off;

			if (!aarch64_slot(buf + off, size - off, start, &slot) ||
			    !(g = find_reloc(f->relocs, slot)))
				continue;
			/* a BTI PLT's entries start with bti c */
			if (off >= 4 && le32(buf + off - 4) == 0xd503245f)
				start -= 4;
			if ((err = add_stub(p, start, g)))
				return err;
			off += 4;
		}
	}
	/* each stub runs to the next, the last to the section's end */
	for (size_t i = first; i < p->n; i++)
		p->stubs[i].end = i + 1 < p->n ? p->stubs[i + 1].start : sh->sh_addr + size;
	return 0;
}

static bool is_plt(const char *name, unsigned machine)
{
	if (!name)
		return false;
	if (machine == EM_AARCH64)
		return !strcmp(name, ".plt");
	return !strcmp(name, ".plt") || !strcmp(name, ".plt.sec") || !strcmp(name, ".plt.got");
}

struct plt_names *plt_names__new(const char *path)
{
	struct plt_names *p = calloc(1, sizeof(*p));
	struct got_relocs r = { 0 };
	struct plt_file f = { .relocs = &r };
	Elf_Scn *scn = NULL;
	bool got_plt = false;
	GElf_Ehdr eh;
	size_t shstrndx;
	int fd, err = 0;
	Elf *e = NULL;

	if (!p)
		return NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		err = -errno;
		goto out;
	}
	elf_version(EV_CURRENT);
	if (!(e = elf_begin(fd, ELF_C_READ_MMAP, NULL)) || elf_kind(e) != ELF_K_ELF ||
	    !gelf_getehdr(e, &eh) || elf_getshdrstrndx(e, &shstrndx)) {
		err = -EBADMSG;
		goto out;
	}
	f.is32 = gelf_getclass(e) == ELFCLASS32;
	/* x86 (i386, x32, x86-64) and 64-bit Arm: other PLTs are not decoded, stay unnamed */
	if (!(eh.e_machine == EM_X86_64 || (eh.e_machine == EM_386 && f.is32) ||
	      (eh.e_machine == EM_AARCH64 && !f.is32)))
		goto out;
	f.machine = eh.e_machine;
	if ((err = read_relocs(e, &r)) || !r.n)
		goto out;
	/* the address a PIC i386 PLT finds in %ebx, as objdump takes it */
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".got.plt") || (!strcmp(name, ".got") && !got_plt)) {
			got_plt = !strcmp(name, ".got.plt");
			f.got = sh.sh_addr;
			f.has_got = true;
		}
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) ||
		    !is_plt(elf_strptr(e, shstrndx, sh.sh_name), eh.e_machine))
			continue;
		if ((err = read_plt(p, scn, &sh, &f)))
			goto out;
	}
	if (p->n)
		qsort(p->stubs, p->n, sizeof(*p->stubs), stub_cmp);
out:
	free(r.v);
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	if (err) {
		plt_names__free(p);
		errno = -err;
		return NULL;
	}
	return p;
}

void plt_names__free(struct plt_names *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		free(p->stubs[i].name);
	free(p->stubs);
	free(p);
}

const char *plt_names__lookup(const struct plt_names *p, uint64_t vaddr, uint64_t *offset)
{
	size_t lo = 0, hi = p ? p->n : 0;

	/* the last stub starting at or before vaddr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->stubs[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || vaddr >= p->stubs[lo - 1].end)
		return NULL;
	*offset = vaddr - p->stubs[lo - 1].start;
	return p->stubs[lo - 1].name;
}
