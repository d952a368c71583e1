/* SPDX-License-Identifier: BSD-2-Clause */
/* Module and cache tests on crafted ELF files, on this test binary and on corrupted copies of it. */
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#ifndef SHT_GNU_SFRAME
#define SHT_GNU_SFRAME 0x6ffffff4
#endif
#ifndef PT_GNU_SFRAME
#define PT_GNU_SFRAME 0x6474e554
#endif

/* ---- a small ELF writer: sections and program headers, 64-bit little-endian ---- */

#define MAX_SECS 16
#define MAX_SEGS 8

struct sec_spec {
	const char *name;
	uint32_t type;
	uint64_t flags;
	uint64_t addr;
	uint64_t offset;	/* 0: placed after what comes before */
	const void *data;	/* NULL: zeros */
	size_t size;
	uint32_t link;		/* an ELF section index: spec index + 1 */
	uint64_t entsize;
};

struct seg_spec {
	uint32_t type, flags;
	uint64_t vaddr, offset, filesz, memsz, align;
};

struct elf_spec {
	uint16_t type;
	struct sec_spec secs[MAX_SECS];
	size_t nsecs;
	struct seg_spec segs[MAX_SEGS];
	size_t nsegs;
};

static uint64_t align8(uint64_t v)
{
	return (v + 7) & ~7ull;
}

/* @return a malloc()ed image of @spec; section i of the spec is ELF section i + 1. */
static uint8_t *build_elf(const struct elf_spec *spec, size_t *len)
{
	uint64_t sec_off[MAX_SECS], pos, shstr_off, shoff, size;
	char shstr[512];
	uint32_t name_at[MAX_SECS], shstr_name;
	size_t shstr_len = 1;
	Elf64_Ehdr *eh;
	uint8_t *buf;

	shstr[0] = '\0';
	pos = sizeof(Elf64_Ehdr) + spec->nsegs * sizeof(Elf64_Phdr);
	for (size_t i = 0; i < spec->nsecs; i++) {
		const struct sec_spec *s = &spec->secs[i];

		name_at[i] = shstr_len;
		assert_true(shstr_len + strlen(s->name) + 1 < sizeof(shstr));
		strcpy(shstr + shstr_len, s->name);
		shstr_len += strlen(s->name) + 1;
		sec_off[i] = s->offset ? s->offset : align8(pos);
		if (s->type != SHT_NOBITS && sec_off[i] + s->size > pos)
			pos = sec_off[i] + s->size;
	}
	shstr_name = shstr_len;
	strcpy(shstr + shstr_len, ".shstrtab");
	shstr_len += sizeof(".shstrtab");
	shstr_off = pos;
	shoff = align8(shstr_off + shstr_len);
	size = shoff + (spec->nsecs + 2) * sizeof(Elf64_Shdr);

	buf = calloc(1, size);
	assert_non_null(buf);
	eh = (Elf64_Ehdr *)buf;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = spec->type ? spec->type : ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = spec->nsegs ? sizeof(Elf64_Ehdr) : 0;
	eh->e_shoff = shoff;
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = spec->nsegs;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = spec->nsecs + 2;
	eh->e_shstrndx = spec->nsecs + 1;

	for (size_t i = 0; i < spec->nsegs; i++) {
		const struct seg_spec *s = &spec->segs[i];
		Elf64_Phdr ph = {
			.p_type = s->type, .p_flags = s->flags, .p_offset = s->offset,
			.p_vaddr = s->vaddr, .p_paddr = s->vaddr, .p_filesz = s->filesz,
			.p_memsz = s->memsz, .p_align = s->align,
		};

		memcpy(buf + sizeof(Elf64_Ehdr) + i * sizeof(ph), &ph, sizeof(ph));
	}
	for (size_t i = 0; i < spec->nsecs; i++) {
		const struct sec_spec *s = &spec->secs[i];
		Elf64_Shdr sh = {
			.sh_name = name_at[i], .sh_type = s->type, .sh_flags = s->flags,
			.sh_addr = s->addr, .sh_offset = sec_off[i], .sh_size = s->size,
			.sh_link = s->link, .sh_addralign = 1, .sh_entsize = s->entsize,
		};

		if (s->type == SHT_SYMTAB || s->type == SHT_DYNSYM)
			sh.sh_info = 1;
		if (s->data && s->type != SHT_NOBITS)
			memcpy(buf + sec_off[i], s->data, s->size);
		memcpy(buf + shoff + (i + 1) * sizeof(sh), &sh, sizeof(sh));
	}
	memcpy(buf + shstr_off, shstr, shstr_len);
	memcpy(buf + shoff + (spec->nsecs + 1) * sizeof(Elf64_Shdr),
	       &(Elf64_Shdr){ .sh_name = shstr_name, .sh_type = SHT_STRTAB,
			      .sh_offset = shstr_off, .sh_size = shstr_len, .sh_addralign = 1 },
	       sizeof(Elf64_Shdr));
	*len = size;
	return buf;
}

static Elf64_Ehdr *ehdr_of(uint8_t *image)
{
	return (Elf64_Ehdr *)image;
}

static Elf64_Shdr *shdr_of(uint8_t *image, size_t i)
{
	return (Elf64_Shdr *)(image + ehdr_of(image)->e_shoff) + i;
}

static Elf64_Phdr *phdr_of(uint8_t *image, size_t i)
{
	return (Elf64_Phdr *)(image + ehdr_of(image)->e_phoff) + i;
}

struct sym_spec {
	const char *name;
	uint64_t value, size;
	uint8_t type, bind;
	uint16_t shndx;
};

struct symtab_bytes {
	Elf64_Sym syms[32];
	size_t nsyms;
	char strs[1024];
	size_t strs_len;
};

static void make_symtab(const struct sym_spec *specs, size_t n, struct symtab_bytes *out)
{
	memset(out, 0, sizeof(*out));
	out->nsyms = 1;
	out->strs_len = 1;
	for (size_t i = 0; i < n; i++) {
		Elf64_Sym *sym = &out->syms[out->nsyms++];

		assert_true(out->nsyms <= ARRAY_SIZE(out->syms));
		assert_true(out->strs_len + strlen(specs[i].name) + 1 <= sizeof(out->strs));
		sym->st_name = out->strs_len;
		strcpy(out->strs + out->strs_len, specs[i].name);
		out->strs_len += strlen(specs[i].name) + 1;
		sym->st_value = specs[i].value;
		sym->st_size = specs[i].size;
		sym->st_info = ELF64_ST_INFO(specs[i].bind, specs[i].type);
		sym->st_shndx = specs[i].shndx;
	}
}

static size_t make_note(uint8_t *buf, uint32_t type, const char *name, const uint8_t *desc,
			uint32_t desc_len)
{
	Elf64_Nhdr nh = { .n_namesz = strlen(name) + 1, .n_descsz = desc_len, .n_type = type };
	size_t off = sizeof(nh);

	memcpy(buf, &nh, sizeof(nh));
	memcpy(buf + off, name, nh.n_namesz);
	off += (nh.n_namesz + 3) & ~3u;
	memcpy(buf + off, desc, desc_len);
	return off + ((desc_len + 3) & ~3u);
}

/* ---- the standard crafted module ---- */

enum {				/* ELF section indexes of the standard layout */
	S_NOTE = 1, S_TEXT, S_INIT, S_SYMTAB, S_STRTAB, S_DYNSYM, S_DYNSTR,
};

static const uint8_t std_build_id[20] = {
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x10, 0x32,
	0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe, 0xaa, 0xbb, 0xcc, 0xdd,
};

static const struct sym_spec std_symtab[] = {
	{ "outer", 0x1000, 0x100, STT_FUNC, STB_GLOBAL, S_TEXT },
	{ "inner", 0x1040, 0x10, STT_FUNC, STB_LOCAL, S_TEXT },
	{ "local_alias", 0x1200, 0x20, STT_FUNC, STB_LOCAL, S_TEXT },
	{ "global_name", 0x1200, 0x20, STT_FUNC, STB_GLOBAL, S_TEXT },
	{ "weak_name", 0x1200, 0x20, STT_FUNC, STB_WEAK, S_TEXT },
	{ "sizeless", 0x1300, 0, STT_FUNC, STB_LOCAL, S_TEXT },
	{ "next", 0x1380, 0x10, STT_FUNC, STB_GLOBAL, S_TEXT },
	{ "resolver", 0x1400, 0x10, STT_GNU_IFUNC, STB_GLOBAL, S_TEXT },
	{ "object", 0x1500, 0x10, STT_OBJECT, STB_GLOBAL, S_TEXT },
	{ "undefined", 0x1600, 0x10, STT_FUNC, STB_GLOBAL, SHN_UNDEF },
	{ "at_zero", 0, 0x10, STT_FUNC, STB_GLOBAL, S_TEXT },
	{ "", 0x1700, 0x10, STT_FUNC, STB_LOCAL, S_TEXT },
	{ "last_sizeless", 0x1f00, 0, STT_FUNC, STB_LOCAL, S_TEXT },
	{ "_init", 0x2100, 0, STT_FUNC, STB_GLOBAL, S_INIT },
};

static const struct sym_spec std_dynsym[] = {
	{ "global_name", 0x1200, 0x20, STT_FUNC, STB_GLOBAL, S_TEXT },
	{ "dyn_only", 0x1800, 0x8, STT_FUNC, STB_GLOBAL, S_TEXT },
};

struct fixture {
	struct symtab_bytes symtab, dynsym;
	uint8_t note[256];
	size_t note_len;
	void *sframe;		/* an encoded one-function SFrame section */
	size_t sframe_len;
	struct elf_spec spec;
};

#define SFRAME_ADDR 0x3000
#define SFRAME_FUNC 0x1000

static void *encode_sframe(uint64_t addr, size_t *len)
{
	struct sfu_row row = {
		.cfa = { .kind = SFU_LOC_REG_OFFSET, .reg = SFU_REG_SP, .offset = 8 },
		.ra = { .kind = SFU_LOC_AT_CFA, .offset = -8 },
		.fp = { .kind = SFU_LOC_SAME, .reg = SFU_REG_FP },
	};
	struct sfu_sframe_func func = { .start = SFRAME_FUNC, .size = 0x100, .rows = &row,
					.num_rows = 1 };
	SFU_OPTS(sfu_sframe_enc_opts, opts, .version = 2, .abi = SFU_SFRAME_ABI_AMD64_LE,
		 .cfa_fixed_ra_offset = -8, .addr = addr);
	struct sfu_diag diag = { 0 };
	void *buf = NULL;

	if (sfu_sframe_encode(&opts, &func, 1, &buf, len, &diag))
		fail_msg("sfu_sframe_encode: %s", diag.reason);
	return buf;
}

static void fixture_init(struct fixture *f)
{
	struct elf_spec *s = &f->spec;

	memset(f, 0, sizeof(*f));
	make_symtab(std_symtab, ARRAY_SIZE(std_symtab), &f->symtab);
	make_symtab(std_dynsym, ARRAY_SIZE(std_dynsym), &f->dynsym);
	f->note_len = make_note(f->note, NT_GNU_ABI_TAG, "GNU", (const uint8_t *)"\0\0\0\0\3\0\0\0\2\0\0\0\0\0\0\0", 16);
	f->note_len += make_note(f->note + f->note_len, NT_GNU_BUILD_ID, "GNU", std_build_id,
				 sizeof(std_build_id));
	f->sframe = encode_sframe(SFRAME_ADDR, &f->sframe_len);

	s->secs[S_NOTE - 1] = (struct sec_spec){ ".note.gnu.build-id", SHT_NOTE, SHF_ALLOC, 0x200,
						 0x200, f->note, f->note_len, 0, 0 };
	s->secs[S_TEXT - 1] = (struct sec_spec){ ".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR,
						 0x1000, 0x1000, NULL, 0x1000, 0, 0 };
	s->secs[S_INIT - 1] = (struct sec_spec){ ".init", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR,
						 0x2100, 0x2100, NULL, 0x10, 0, 0 };
	s->secs[S_SYMTAB - 1] = (struct sec_spec){ ".symtab", SHT_SYMTAB, 0, 0, 0, f->symtab.syms,
						   f->symtab.nsyms * sizeof(Elf64_Sym), S_STRTAB,
						   sizeof(Elf64_Sym) };
	s->secs[S_STRTAB - 1] = (struct sec_spec){ ".strtab", SHT_STRTAB, 0, 0, 0, f->symtab.strs,
						   f->symtab.strs_len, 0, 0 };
	s->secs[S_DYNSYM - 1] = (struct sec_spec){ ".dynsym", SHT_DYNSYM, 0, 0, 0, f->dynsym.syms,
						   f->dynsym.nsyms * sizeof(Elf64_Sym), S_DYNSTR,
						   sizeof(Elf64_Sym) };
	s->secs[S_DYNSTR - 1] = (struct sec_spec){ ".dynstr", SHT_STRTAB, 0, 0, 0, f->dynsym.strs,
						   f->dynsym.strs_len, 0, 0 };
	s->nsecs = S_DYNSTR;
	s->segs[0] = (struct seg_spec){ PT_LOAD, PF_R, 0, 0, 0x300, 0x300, 0x1000 };
	s->segs[1] = (struct seg_spec){ PT_LOAD, PF_R | PF_X, 0x1000, 0x1000, 0x1110, 0x1110, 0x1000 };
	s->segs[2] = (struct seg_spec){ PT_NOTE, PF_R, 0x200, 0x200, f->note_len, f->note_len, 4 };
	s->nsegs = 3;
}

static void fixture_fini(struct fixture *f)
{
	free(f->sframe);
}

static void add_section(struct elf_spec *s, struct sec_spec sec)
{
	assert_true(s->nsecs < MAX_SECS);
	s->secs[s->nsecs++] = sec;
}

static void add_segment(struct elf_spec *s, struct seg_spec seg)
{
	assert_true(s->nsegs < MAX_SEGS);
	s->segs[s->nsegs++] = seg;
}

/* Writes @image to a fresh file in @dir and opens it. */
static struct sfu_module *open_image(const char *dir, const uint8_t *image, size_t len,
				     struct sfu_diag *diag)
{
	char *path = path_join_or_fail(dir, "crafted.so");
	struct sfu_module *m;

	write_file_or_fail(path, image, len);
	m = sfu_module__open(path, diag);
	free(path);
	return m;
}

static struct sfu_module *open_fixture(const char *dir, struct fixture *f)
{
	struct sfu_diag diag = { 0 };
	struct sfu_module *m;
	uint8_t *image;
	size_t len;

	image = build_elf(&f->spec, &len);
	m = open_image(dir, image, len, &diag);
	free(image);
	if (!m)
		fail_msg("crafted module does not open: %s", diag.reason);
	return m;
}

static void _assert_contains(const char *s, const char *part, const char *file, int line)
{
	if (s && strstr(s, part))
		return;
	print_error("\"%s\" does not contain \"%s\"\n", s ? s : "(null)", part);
	_fail(file, line);
}
#define assert_contains(s, part) _assert_contains(s, part, __FILE__, __LINE__)

static int setup_dir(void **state)
{
	*state = make_temp_dir_or_fail();
	return 0;
}

static int teardown_dir(void **state)
{
	remove_temp_dir(*state);
	return 0;
}

/* ---- crafted modules ---- */

static void test_crafted_basics(void **state)
{
	struct fixture f;
	struct sfu_module *m;
	const struct sfu_segment *segs;
	size_t nsegs;

	fixture_init(&f);
	m = open_fixture(*state, &f);
	assert_int_equal(sfu_module__machine(m), EM_X86_64);
	assert_true(sfu_module__is_dyn(m));
	assert_bytes_equal(sfu_module__build_id(m)->bytes, sfu_module__build_id(m)->len,
			   std_build_id, sizeof(std_build_id));
	assert_contains(sfu_module__path(m), "crafted.so");
	segs = sfu_module__segments(m, &nsegs);
	assert_int_equal(nsegs, 2);
	assert_int_equal(segs[1].vaddr, 0x1000);
	assert_int_equal(segs[1].filesz, 0x1110);
	assert_int_equal(segs[1].flags, PF_R | PF_X);
	assert_int_equal(sfu_module__sframe_origin(m), SFU_SFRAME_NONE);
	assert_null(sfu_module__sframe(m));
	assert_null(sfu_module__sframe_error(m));
	assert_ptr_equal(sfu_module__get(m), m);
	sfu_module__put(m);
	sfu_module__put(m);
	sfu_module__put(NULL);
	fixture_fini(&f);
}

/*
 * The entry routine (e_entry through its first call) of a module with no
 * table for it: glibc's x86-64 _start, as crt1.o has it in a stripped program
 * whose .eh_frame was removed. A frame there is the outermost one; the
 * halt after the call, or a module with e_entry 0, is not.
 */
static void test_entry_routine(void **state)
{
	static const uint8_t start[] = {
		0x31, 0xed,			/* xor %ebp,%ebp */
		0x49, 0x89, 0xd1,		/* mov %rdx,%r9 */
		0x5e,				/* pop %rsi */
		0x48, 0x89, 0xe2,		/* mov %rsp,%rdx */
		0x48, 0x83, 0xe4, 0xf0,		/* and $-16,%rsp */
		0x50,				/* push %rax */
		0x54,				/* push %rsp */
		0x45, 0x31, 0xc0,		/* xor %r8d,%r8d */
		0x31, 0xc9,			/* xor %ecx,%ecx */
		0x48, 0x8d, 0x3d, 0, 0, 0, 0,	/* lea 0(%rip),%rdi */
		0xff, 0x15, 0, 0, 0, 0,		/* call *0(%rip) */
		0xf4,				/* hlt */
	};
	const uint64_t bias = 0x7f0000000000ull, entry = 0x1100, call_end = entry + 0x21;
	SFU_OPTS(sfu_unwind_opts, opts, .arch = SFU_ARCH_X86_64);
	uint8_t text[0x1000] = { 0 }, stack[64] = { 0 };
	struct sfu_snapshot snap = { .base = 0x7ffd0000, .data = stack, .size = sizeof(stack) };
	struct sfu_diag diag = { 0 };
	struct sfu_lookup lookup;
	struct sfu_step step;
	struct fixture f;

	memcpy(text + (entry - 0x1000), start, sizeof(start));
	fixture_init(&f);
	f.spec.secs[S_TEXT - 1].data = text;
	for (int with_entry = 1; with_entry >= 0; with_entry--) {
		struct sfu_regs ra = { .pc = bias + call_end, .sp = snap.base };
		struct sfu_regs hlt = { .pc = bias + call_end, .sp = snap.base };
		struct sfu_addrspace *as;
		struct sfu_module *m;
		size_t len;
		uint8_t *image = build_elf(&f.spec, &len);

		ehdr_of(image)->e_entry = with_entry ? entry : 0;
		m = open_image(*state, image, len, &diag);
		free(image);
		if (!m)
			fail_msg("crafted module does not open: %s", diag.reason);
		as = sfu_addrspace__new(NULL, NULL);
		assert_non_null(as);
		assert_int_equal(sfu_addrspace__add(as, bias + 0x1000, bias + 0x2000, 0x1000,
						    PROT_READ | PROT_EXEC, NULL, m), 0);
		/* a return address into it, looked up at pc - 1: inside the call */
		assert_int_equal(sfu_unwind_lookup(as, ra.pc - 1, &lookup), -ENOENT);
		assert_int_equal(lookup.source, SFU_SRC_NONE);
		assert_int_equal(lookup.func_start, with_entry ? bias + entry : 0);
		assert_int_equal(lookup.func_end, with_entry ? bias + call_end : 0);
		assert_int_equal(sfu_unwind_step(as, &opts, &ra, 0, sfu_snapshot_read, &snap, &step),
				 with_entry ? SFU_STOP_OUTERMOST : SFU_STOP_NO_INFO);
		/* its first instruction, precise */
		ra.pc = bias + entry;
		assert_int_equal(sfu_unwind_step(as, &opts, &ra, 1, sfu_snapshot_read, &snap, &step),
				 with_entry ? SFU_STOP_OUTERMOST : SFU_STOP_NO_INFO);
		/* the halt after the call is past it: frame pointers, which fail here */
		assert_int_equal(sfu_unwind_step(as, &opts, &hlt, 1, sfu_snapshot_read, &snap, &step),
				 SFU_STOP_NO_INFO);
		sfu_addrspace__free(as);
		sfu_module__put(m);
	}
	fixture_fini(&f);
}

static void test_crafted_symbolize(void **state)
{
	static const struct {
		uint64_t vaddr;
		const char *name;	/* NULL: -ENOENT */
		uint64_t offset;
	} cases[] = {
		{ 0x0fff, NULL, 0 },
		{ 0x1000, "outer", 0 },
		{ 0x1040, "inner", 0 },
		{ 0x104f, "inner", 0xf },
		{ 0x1050, "outer", 0x50 },	/* past the nested symbol, back in its parent */
		{ 0x10ff, "outer", 0xff },
		{ 0x1100, NULL, 0 },
		{ 0x1200, "global_name", 0 },	/* global beats weak and local aliases */
		{ 0x1210, "global_name", 0x10 },
		{ 0x1300, "sizeless", 0 },
		{ 0x137f, "sizeless", 0x7f },	/* size 0 reaches the next symbol */
		{ 0x1380, "next", 0 },
		{ 0x1390, NULL, 0 },
		{ 0x1405, "resolver", 5 },	/* STT_GNU_IFUNC counts */
		{ 0x1505, NULL, 0 },		/* STT_OBJECT does not */
		{ 0x1605, NULL, 0 },		/* undefined */
		{ 0x1705, NULL, 0 },		/* nameless */
		{ 0x1804, "dyn_only", 4 },	/* from .dynsym */
		{ 0x1fff, "last_sizeless", 0xff },
		{ 0x2000, NULL, 0 },		/* size 0 stops at the end of its section */
		{ 0x2050, NULL, 0 },
		{ 0x2100, "_init", 0 },
		{ 0x210f, "_init", 0xf },
		{ 0x2110, NULL, 0 },		/* and at the end of the segment */
		{ UINT64_MAX, NULL, 0 },
	};
	struct fixture f;
	struct sfu_module *m;

	fixture_init(&f);
	m = open_fixture(*state, &f);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *name = NULL;
		uint64_t offset = 0;
		int err = sfu_module__symbolize(m, cases[i].vaddr, &name, &offset);

		if (!cases[i].name) {
			if (err != -ENOENT)
				fail_msg("0x%llx: got %d (%s), want -ENOENT",
					 (unsigned long long)cases[i].vaddr, err, err ? "" : name);
			continue;
		}
		if (err || strcmp(name, cases[i].name) || offset != cases[i].offset)
			fail_msg("0x%llx: got %d %s+0x%llx, want %s+0x%llx",
				 (unsigned long long)cases[i].vaddr, err, err ? "" : name,
				 (unsigned long long)offset, cases[i].name,
				 (unsigned long long)cases[i].offset);
	}
	sfu_module__put(m);
	fixture_fini(&f);
}

static void test_crafted_symbol_addr(void **state)
{
	static const struct {
		const char *name;
		int err;
		uint64_t vaddr;
	} cases[] = {
		{ "outer", 0, 0x1000 },
		{ "inner", 0, 0x1040 },
		{ "local_alias", 0, 0x1200 },	/* aliases the address table dropped */
		{ "weak_name", 0, 0x1200 },
		{ "global_name", 0, 0x1200 },
		{ "resolver", 0, 0x1400 },
		{ "dyn_only", 0, 0x1800 },
		{ "_init", 0, 0x2100 },
		{ "object", -ENOENT, 0 },
		{ "undefined", -ENOENT, 0 },
		{ "at_zero", -ENOENT, 0 },
		{ "", -ENOENT, 0 },
		{ "outer2", -ENOENT, 0 },
		{ "a", -ENOENT, 0 },
		{ "zzz", -ENOENT, 0 },
	};
	struct fixture f;
	struct sfu_module *m;

	fixture_init(&f);
	m = open_fixture(*state, &f);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint64_t vaddr = 0;
		int err = sfu_module__symbol_addr(m, cases[i].name, &vaddr);

		if (err != cases[i].err || (!err && vaddr != cases[i].vaddr))
			fail_msg("%s: got %d 0x%llx, want %d 0x%llx", cases[i].name, err,
				 (unsigned long long)vaddr, cases[i].err,
				 (unsigned long long)cases[i].vaddr);
	}
	sfu_module__put(m);
	fixture_fini(&f);
}

/* Moves the build ID note from PT_NOTE to a section only, as in a relocatable object. */
static void note_section_only(struct fixture *f)
{
	f->spec.nsegs = 2;
}

static void no_notes(struct fixture *f)
{
	f->spec.nsegs = 2;
	f->spec.secs[S_NOTE - 1].type = SHT_PROGBITS;
}

static void short_build_id(struct fixture *f)
{
	f->note_len = make_note(f->note, NT_GNU_BUILD_ID, "GNU", std_build_id, 8);
	f->spec.secs[S_NOTE - 1].size = f->note_len;
	f->spec.segs[2].filesz = f->spec.segs[2].memsz = f->note_len;
}

static void other_owner(struct fixture *f)
{
	f->note_len = make_note(f->note, NT_GNU_BUILD_ID, "Go", std_build_id, 20);
	f->spec.secs[S_NOTE - 1].size = f->note_len;
	f->spec.segs[2].filesz = f->spec.segs[2].memsz = f->note_len;
}

static void test_crafted_build_id(void **state)
{
	static const struct {
		const char *name;
		void (*change)(struct fixture *f);
		size_t len;
	} cases[] = {
		{ "PT_NOTE after another note", NULL, 20 },
		{ "SHT_NOTE section only", note_section_only, 20 },
		{ "no notes", no_notes, 0 },
		{ "8-byte ID", short_build_id, 8 },
		{ "owner not GNU", other_owner, 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct fixture f;
		struct sfu_module *m;
		const struct sfu_build_id *id;

		fixture_init(&f);
		if (cases[i].change)
			cases[i].change(&f);
		m = open_fixture(*state, &f);
		id = sfu_module__build_id(m);
		if (id->len != cases[i].len || memcmp(id->bytes, std_build_id, id->len))
			fail_msg("%s: build ID of %u bytes, want %zu", cases[i].name, id->len,
				 cases[i].len);
		sfu_module__put(m);
		fixture_fini(&f);
	}
}

/* ---- SFrame sources ---- */

static const uint8_t bad_sframe[32] = { 0x12, 0x34 };

static void sframe_by_name(struct fixture *f)
{
	add_section(&f->spec, (struct sec_spec){ ".sframe", SHT_PROGBITS, SHF_ALLOC, SFRAME_ADDR,
						 SFRAME_ADDR, f->sframe, f->sframe_len, 0, 0 });
}

static void sframe_by_type(struct fixture *f)
{
	add_section(&f->spec, (struct sec_spec){ ".unwind_tables", SHT_GNU_SFRAME, SHF_ALLOC,
						 SFRAME_ADDR, SFRAME_ADDR, f->sframe,
						 f->sframe_len, 0, 0 });
}

static void sframe_by_segment(struct fixture *f)
{
	/* the bytes sit in a section that is neither named nor typed as SFrame */
	add_section(&f->spec, (struct sec_spec){ ".rodata", SHT_PROGBITS, SHF_ALLOC, SFRAME_ADDR,
						 SFRAME_ADDR, f->sframe, f->sframe_len, 0, 0 });
	add_segment(&f->spec, (struct seg_spec){ PT_GNU_SFRAME, PF_R, SFRAME_ADDR, SFRAME_ADDR,
						 f->sframe_len, f->sframe_len, 8 });
}

static void sframe_name_beats_type(struct fixture *f)
{
	add_section(&f->spec, (struct sec_spec){ ".bad", SHT_GNU_SFRAME, SHF_ALLOC, 0x4000,
						 0x4000, bad_sframe, sizeof(bad_sframe), 0, 0 });
	sframe_by_name(f);
}

static void sframe_type_beats_segment(struct fixture *f)
{
	sframe_by_type(f);
	add_section(&f->spec, (struct sec_spec){ ".bad", SHT_PROGBITS, SHF_ALLOC, 0x4000, 0x4000,
						 bad_sframe, sizeof(bad_sframe), 0, 0 });
	add_segment(&f->spec, (struct seg_spec){ PT_GNU_SFRAME, PF_R, 0x4000, 0x4000,
						 sizeof(bad_sframe), sizeof(bad_sframe), 8 });
}

static void sframe_bad_magic(struct fixture *f)
{
	add_section(&f->spec, (struct sec_spec){ ".sframe", SHT_PROGBITS, SHF_ALLOC, SFRAME_ADDR,
						 SFRAME_ADDR, bad_sframe, sizeof(bad_sframe), 0, 0 });
}

static void sframe_nobits(struct fixture *f)
{
	add_section(&f->spec, (struct sec_spec){ ".sframe", SHT_NOBITS, SHF_ALLOC, SFRAME_ADDR,
						 SFRAME_ADDR, NULL, 0x100, 0, 0 });
}

static void sframe_segment_past_eof(struct fixture *f)
{
	add_segment(&f->spec, (struct seg_spec){ PT_GNU_SFRAME, PF_R, SFRAME_ADDR, 0x7fff0000,
						 0x100, 0x100, 8 });
}

static void test_crafted_sframe(void **state)
{
	static const struct {
		const char *name;
		void (*change)(struct fixture *f);
		enum sfu_sframe_origin origin;
		const char *error;	/* NULL: decodes */
	} cases[] = {
		{ "section name", sframe_by_name, SFU_SFRAME_SECTION_NAME, NULL },
		{ "section type", sframe_by_type, SFU_SFRAME_SECTION_TYPE, NULL },
		{ "segment", sframe_by_segment, SFU_SFRAME_SEGMENT, NULL },
		{ "name before type", sframe_name_beats_type, SFU_SFRAME_SECTION_NAME, NULL },
		{ "type before segment", sframe_type_beats_segment, SFU_SFRAME_SECTION_TYPE, NULL },
		{ "bad magic", sframe_bad_magic, SFU_SFRAME_SECTION_NAME, "magic" },
		{ "NOBITS", sframe_nobits, SFU_SFRAME_SECTION_NAME, ".sframe" },
		{ "past the end", sframe_segment_past_eof, SFU_SFRAME_SEGMENT, "past the end" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct sfu_sframe *sf;
		struct sfu_module *m;
		struct fixture f;

		fixture_init(&f);
		cases[i].change(&f);
		m = open_fixture(*state, &f);
		sf = sfu_module__sframe(m);
		if (sfu_module__sframe_origin(m) != cases[i].origin)
			fail_msg("%s: origin %d, want %d", cases[i].name,
				 sfu_module__sframe_origin(m), cases[i].origin);
		if (!cases[i].error) {
			if (!sf)
				fail_msg("%s: not decoded: %s", cases[i].name,
					 sfu_module__sframe_error(m));
			assert_null(sfu_module__sframe_error(m));
			assert_int_equal(sfu_sframe__fde_count(sf), 1);
			/* the section's address was passed to the decoder */
			assert_int_equal(sfu_sframe__fde(sf, 0)->start, SFRAME_FUNC);
		} else {
			assert_null(sf);
			assert_contains(sfu_module__sframe_error(m), cases[i].error);
		}
		/* the rest of the module is intact */
		assert_int_equal(sfu_module__build_id(m)->len, 20);
		sfu_module__put(m);
		fixture_fini(&f);
	}
}

/* ---- corrupt files ---- */

static void sym_name_past_end(struct fixture *f)
{
	f->symtab.syms[1].st_name = f->symtab.strs_len + 10;
}

static void build_id_too_long(struct fixture *f)
{
	uint8_t id[65] = { 0 };

	f->note_len = make_note(f->note, NT_GNU_BUILD_ID, "GNU", id, sizeof(id));
	f->spec.secs[S_NOTE - 1].size = f->note_len;
	f->spec.segs[2].filesz = f->spec.segs[2].memsz = f->note_len;
}

static void strtab_unterminated(uint8_t *image, size_t *len)
{
	(void)len;
	shdr_of(image, S_STRTAB)->sh_size -= 1;
}

static void strtab_link_out_of_range(uint8_t *image, size_t *len)
{
	(void)len;
	shdr_of(image, S_SYMTAB)->sh_link = 99;
}

static void strtab_link_not_strtab(uint8_t *image, size_t *len)
{
	(void)len;
	shdr_of(image, S_SYMTAB)->sh_link = S_TEXT;
}

static void symtab_past_eof(uint8_t *image, size_t *len)
{
	shdr_of(image, S_SYMTAB)->sh_offset = *len - 8;
}

static void symtab_huge(uint8_t *image, size_t *len)
{
	(void)len;
	shdr_of(image, S_SYMTAB)->sh_size = 0x7fffffffffffull;
}

static void strtab_past_eof(uint8_t *image, size_t *len)
{
	shdr_of(image, S_STRTAB)->sh_offset = *len + 0x1000;
}

static void section_name_past_end(uint8_t *image, size_t *len)
{
	(void)len;
	shdr_of(image, S_TEXT)->sh_name = 0x10000;
}

static void shoff_past_eof(uint8_t *image, size_t *len)
{
	ehdr_of(image)->e_shoff = *len - 16;
}

static void shnum_huge(uint8_t *image, size_t *len)
{
	(void)len;
	ehdr_of(image)->e_shnum = 0xfeff;
}

static void shentsize_wrong(uint8_t *image, size_t *len)
{
	(void)len;
	ehdr_of(image)->e_shentsize = 40;
}

static void shstrndx_out_of_range(uint8_t *image, size_t *len)
{
	(void)len;
	ehdr_of(image)->e_shstrndx = 200;
}

static void phoff_past_eof(uint8_t *image, size_t *len)
{
	ehdr_of(image)->e_phoff = *len - 10;
}

static void phnum_huge(uint8_t *image, size_t *len)
{
	(void)len;
	ehdr_of(image)->e_phnum = 0xfff0;
}

static void note_past_eof(uint8_t *image, size_t *len)
{
	phdr_of(image, 2)->p_offset = *len - 4;
}

static void load_wraps(uint8_t *image, size_t *len)
{
	(void)len;
	phdr_of(image, 1)->p_vaddr = UINT64_MAX - 0x10;
}

static void not_elf(uint8_t *image, size_t *len)
{
	(void)len;
	image[1] = 'X';
}

static void bad_class(uint8_t *image, size_t *len)
{
	(void)len;
	image[EI_CLASS] = 7;
}

static void header_only_half(uint8_t *image, size_t *len)
{
	(void)image;
	*len = 40;
}

static void empty(uint8_t *image, size_t *len)
{
	(void)image;
	*len = 0;
}

static void test_corrupt(void **state)
{
	static const struct {
		const char *name;
		void (*before)(struct fixture *f);
		void (*after)(uint8_t *image, size_t *len);
		const char *reason;	/* part of the diag reason; NULL: any */
	} cases[] = {
		{ "symbol name past end", sym_name_past_end, NULL, "past the end of the string table" },
		{ "build ID too long", build_id_too_long, NULL, "longer than" },
		{ "string table unterminated", NULL, strtab_unterminated, "runs past the end" },
		{ "string table link out of range", NULL, strtab_link_out_of_range, "string table index" },
		{ "string table link not a string table", NULL, strtab_link_not_strtab, "not a string table" },
		{ "symbols past end of file", NULL, symtab_past_eof, "past the end of the file" },
		{ "huge symbol table", NULL, symtab_huge, "past the end of the file" },
		{ "string table past end of file", NULL, strtab_past_eof, NULL },
		{ "section name past end", NULL, section_name_past_end, "name offset" },
		{ "section headers past end of file", NULL, shoff_past_eof, NULL },
		{ "huge section count", NULL, shnum_huge, NULL },
		{ "section header size", NULL, shentsize_wrong, NULL },
		{ "section name table index", NULL, shstrndx_out_of_range, NULL },
		{ "program headers past end of file", NULL, phoff_past_eof, NULL },
		{ "huge program header count", NULL, phnum_huge, NULL },
		{ "notes past end of file", NULL, note_past_eof, "past the end of the file" },
		{ "PT_LOAD wraps", NULL, load_wraps, "wraps" },
		{ "not ELF", NULL, not_elf, "not an ELF file" },
		{ "bad class", NULL, bad_class, NULL },
		{ "half a header", NULL, header_only_half, NULL },
		{ "empty", NULL, empty, NULL },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct sfu_diag diag = { 0 };
		struct sfu_module *m;
		struct fixture f;
		uint8_t *image;
		size_t len;

		fixture_init(&f);
		if (cases[i].before)
			cases[i].before(&f);
		image = build_elf(&f.spec, &len);
		if (cases[i].after)
			cases[i].after(image, &len);
		errno = 0;
		m = open_image(*state, image, len, &diag);
		if (m || errno != EBADMSG || diag.err != -EBADMSG || !diag.reason[0])
			fail_msg("%s: got %p errno %d diag %d \"%s\", want EBADMSG", cases[i].name,
				 (void *)m, errno, diag.err, diag.reason);
		if (cases[i].reason && !strstr(diag.reason, cases[i].reason))
			fail_msg("%s: reason \"%s\" lacks \"%s\"", cases[i].name, diag.reason,
				 cases[i].reason);
		free(image);
		fixture_fini(&f);
	}
}

static void test_open_errors(void **state)
{
	struct sfu_diag diag = { 0 };
	char *missing = path_join_or_fail(*state, "missing.so");

	errno = 0;
	assert_null(sfu_module__open(missing, &diag));
	assert_int_equal(errno, ENOENT);
	assert_int_equal(diag.err, -ENOENT);

	errno = 0;
	assert_null(sfu_module__open(*state, &diag));	/* a directory */
	assert_int_equal(errno, EBADMSG);
	assert_contains(diag.reason, "not a regular file");

	errno = 0;
	assert_null(sfu_module__open(missing, NULL));	/* no diag */
	assert_int_equal(errno, ENOENT);
	free(missing);
}

/* ---- placing mappings: ELF address and load bias ---- */

/* The layouts of layout_module(), in its table's order. */
enum { SEPARATE, PACKED, LLD, EXEC, ARM64K };

/* A module with the PT_LOAD segments of @layout, and that layout's @name. */
static struct sfu_module *layout_module(size_t layout, const char **name)
{
	/* A PIE linked with -z separate-code (GNU ld's default on x86-64). */
	static const struct sfu_segment separate[] = {
		{ .vaddr = 0, .memsz = 0x708, .offset = 0, .filesz = 0x708, .flags = PF_R },
		{ .vaddr = 0x1000, .memsz = 0x291, .offset = 0x1000, .filesz = 0x291, .flags = PF_R | PF_X },
		{ .vaddr = 0x2000, .memsz = 0x208, .offset = 0x2000, .filesz = 0x208, .flags = PF_R },
		{ .vaddr = 0x3dd0, .memsz = 0x2a0, .offset = 0x2dd0, .filesz = 0x258, .flags = PF_R | PF_W },
	};
	/* -z noseparate-code: text and data share the file page at offset 0. */
	static const struct sfu_segment packed[] = {
		{ .vaddr = 0, .memsz = 0x8d0, .offset = 0, .filesz = 0x8d0, .flags = PF_R | PF_X },
		{ .vaddr = 0x1dd0, .memsz = 0x260, .offset = 0xdd0, .filesz = 0x250, .flags = PF_R | PF_W },
	};
	/* lld: segments packed in the file, text starting mid-page. */
	static const struct sfu_segment lld[] = {
		{ .vaddr = 0, .memsz = 0x5f0, .offset = 0, .filesz = 0x5f0, .flags = PF_R },
		{ .vaddr = 0x15f0, .memsz = 0x100, .offset = 0x5f0, .filesz = 0x100, .flags = PF_R | PF_X },
		{ .vaddr = 0x26f0, .memsz = 0x100, .offset = 0x6f0, .filesz = 0x0, .flags = PF_R | PF_W },
	};
	/* A non-PIE executable. */
	static const struct sfu_segment exec[] = {
		{ .vaddr = 0x400000, .memsz = 0x1000, .offset = 0, .filesz = 0x1000, .flags = PF_R | PF_X },
		{ .vaddr = 0x601000, .memsz = 0x1000, .offset = 0x1000, .filesz = 0x800, .flags = PF_R | PF_W },
	};
	/* AArch64 with 64K pages. */
	static const struct sfu_segment arm64k[] = {
		{ .vaddr = 0, .memsz = 0xf000, .offset = 0, .filesz = 0xf000, .flags = PF_R | PF_X },
		{ .vaddr = 0x1fdd0, .memsz = 0x300, .offset = 0xfdd0, .filesz = 0x200, .flags = PF_R | PF_W },
	};
	static const struct {
		const char *name;
		const struct sfu_segment *segs;
		size_t nsegs;
	} layouts[] = {
		{ "separate", separate, ARRAY_SIZE(separate) },
		{ "packed", packed, ARRAY_SIZE(packed) },
		{ "lld", lld, ARRAY_SIZE(lld) },
		{ "exec", exec, ARRAY_SIZE(exec) },
		{ "arm64k", arm64k, ARRAY_SIZE(arm64k) },
	};
	struct sfu_module *m;

	assert_true(layout < ARRAY_SIZE(layouts));
	*name = layouts[layout].name;
	m = sfu_module__new(layouts[layout].name, NULL, EM_X86_64, layouts[layout].segs,
			    layouts[layout].nsegs, NULL);
	assert_non_null(m);
	return m;
}

/* Fail case @i unless it returned @want_err and, on success, @want. */
static void check_case(size_t i, const char *layout, int err, uint64_t got, int want_err,
		       uint64_t want)
{
	if (err != want_err || (!err && got != want))
		fail_msg("case %zu (%s): got %d 0x%llx, want %d 0x%llx", i, layout, err,
			 (unsigned long long)got, want_err, (unsigned long long)want);
}

static void test_map_vaddr(void **state)
{
	const uint32_t r = PROT_READ, rx = PROT_READ | PROT_EXEC, rw = PROT_READ | PROT_WRITE;
	const struct {
		size_t layout;
		uint64_t file_offset;
		uint32_t prot;
		int err;
		uint64_t vaddr;
	} cases[] = {
		/* a PIE: each mapping at its segment's address */
		{ SEPARATE, 0, r, 0, 0 },
		{ SEPARATE, 0x1000, rx, 0, 0x1000 },
		{ SEPARATE, 0x2000, r, 0, 0x2000 },
		/* the data's first page, shared in the file with the read-only data */
		{ SEPARATE, 0x2000, rw, 0, 0x3000 },
		{ SEPARATE, 0x3000, rw, 0, 0x4000 },
		/* a non-PIE executable: the same, at its fixed addresses */
		{ EXEC, 0, rx, 0, 0x400000 },
		{ EXEC, 0x1000, rw, 0, 0x601000 },
		/* a mapping that starts in the middle of a segment (mprotect() split it) */
		{ EXEC, 0x800, rx, 0, 0x400800 },
		{ ARM64K, 0x8000, rx, 0, 0x8000 },
		{ SEPARATE, 0x1100, rx, 0, 0x1100 },
		/* file offsets that are no page multiples: a mapping described by hand */
		{ LLD, 0x5f0, rx, 0, 0x15f0 },
		{ LLD, 0x600, rx, 0, 0x1600 },
		{ LLD, 0x123, r, 0, 0x123 },
		{ SEPARATE, 0x2dd0, rw, 0, 0x3dd0 },
		/* the page before a segment starting mid-page is its mapping's start */
		{ LLD, 0, rx, 0, 0x1000 },
		{ PACKED, 0, rx, 0, 0 },
		{ PACKED, 0, rw, 0, 0x1000 },
		{ ARM64K, 0, rw, 0, 0x10000 },
		/* no segment with file bytes at the offset */
		{ SEPARATE, 0x10000, rx, -ENOENT, 0 },
		{ SEPARATE, 0x3028, rw, -ENOENT, 0 },
		{ LLD, 0x6f0, rw, -ENOENT, 0 },
		{ EXEC, UINT64_MAX - 0xfff, r, -ENOENT, 0 },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *name;
		struct sfu_module *m = layout_module(cases[i].layout, &name);
		uint64_t vaddr = 0, bias = 0;
		int err;

		err = sfu_module__map_vaddr(m, cases[i].file_offset, cases[i].prot, &vaddr);
		check_case(i, name, err, vaddr, cases[i].err, cases[i].vaddr);
		/* an executable mapping's bias is its start less that address */
		if (!err && cases[i].prot == rx) {
			assert_int_equal(sfu_module__bias(m, 0x7f0000000000ull, cases[i].file_offset,
							  &bias), 0);
			assert_int_equal(bias, 0x7f0000000000ull - vaddr);
		}
		sfu_module__put(m);
	}
}

static void test_bias(void **state)
{
	const uint64_t b = 0x555555554000ull;
	const struct {
		size_t layout;
		uint64_t map_start, file_offset;
		int err;
		uint64_t bias;
	} cases[] = {
		{ SEPARATE, b, 0, 0, b },
		{ SEPARATE, b + 0x1000, 0x1000, 0, b },	/* the text mapping */
		{ SEPARATE, b + 0x2000, 0x2000, 0, b },
		{ SEPARATE, b + 0x4000, 0x3000, 0, b },	/* the writable page past RELRO */
		{ SEPARATE, b, 0x10000, -ENOENT, 0 },
		{ PACKED, b, 0, 0, b },			/* r-x at offset 0 is the text */
		{ LLD, b + 0x1000, 0, 0, b },		/* r-x at offset 0 is the text here too */
		{ LLD, b + 0x2000, 0x6000, -ENOENT, 0 },	/* a segment with no file bytes */
		{ EXEC, 0x400000, 0, 0, 0 },
		{ EXEC, 0x601000, 0x1000, 0, 0 },
		{ ARM64K, b, 0, 0, b },
		/* 64K pages put the data's first page at offset 0 too: text wins without prot */
		{ ARM64K, b + 0x10000, 0, 0, b + 0x10000 },
		{ ARM64K, b + 0x1f000, 0xf000, 0, b },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *name;
		struct sfu_module *m = layout_module(cases[i].layout, &name);
		uint64_t bias = 0;
		int err = sfu_module__bias(m, cases[i].map_start, cases[i].file_offset, &bias);

		check_case(i, name, err, bias, cases[i].err, cases[i].bias);
		sfu_module__put(m);
	}
}

/* ---- this test binary, read by the library and by hand ---- */

__attribute__((noinline, used)) int sfu_test_known_function(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 3 + 1;
}

static void test_self_matches_raw_reading(void **state)
{
	uint8_t want_id[SFU_BUILD_ID_MAX];
	const struct sfu_segment *segs;
	const Elf64_Ehdr *eh;
	struct sfu_module *m;
	struct sfu_diag diag = { 0 };
	size_t len, want_len, nsegs, k = 0;
	uint64_t vaddr = 0;
	uint8_t *image;

	(void)state;
	image = read_file_or_fail("/proc/self/exe", &len);
	eh = (const Elf64_Ehdr *)image;
	m = sfu_module__open("/proc/self/exe", &diag);
	if (!m)
		fail_msg("/proc/self/exe: %s", diag.reason);

	want_len = raw_elf_build_id(image, len, want_id, sizeof(want_id));
	assert_true(want_len > 0);	/* meson links with --build-id */
	assert_bytes_equal(sfu_module__build_id(m)->bytes, sfu_module__build_id(m)->len, want_id,
			   want_len);
	assert_int_equal(sfu_module__machine(m), eh->e_machine);
	assert_int_equal(sfu_module__is_dyn(m), eh->e_type == ET_DYN);
	assert_int_equal(sfu_module__file_size(m), len);

	segs = sfu_module__segments(m, &nsegs);
	for (size_t i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(image + eh->e_phoff) + i;

		if (ph->p_type != PT_LOAD)
			continue;
		assert_true(k < nsegs);
		assert_int_equal(segs[k].vaddr, ph->p_vaddr);
		assert_int_equal(segs[k].memsz, ph->p_memsz);
		assert_int_equal(segs[k].offset, ph->p_offset);
		assert_int_equal(segs[k].filesz, ph->p_filesz);
		assert_int_equal(segs[k].flags, ph->p_flags & (PF_R | PF_W | PF_X));
		k++;
	}
	assert_int_equal(k, nsegs);
	assert_int_equal(sfu_module__symbol_addr(m, "sfu_test_known_function", &vaddr), 0);
	assert_int_equal(vaddr, raw_elf_symbol_value(image, len, "sfu_test_known_function"));
	sfu_module__put(m);
	free(image);
}

static void test_self_symbolize_live_function(void **state)
{
	const uint64_t addr = (uintptr_t)&sfu_test_known_function;
	struct sfu_addrspace *as = sfu_addrspace__new(NULL, NULL);
	struct sfu_diag diag = { 0 };
	const struct sfu_mapping *map;
	const char *name = NULL;
	uint64_t offset = 0, vaddr = 0;

	(void)state;
	assert_non_null(as);
	if (sfu_addrspace__load_pid(as, getpid(), &diag))
		fail_msg("load_pid: %s", diag.reason);
	map = sfu_addrspace__find(as, addr);
	assert_non_null(map);
	assert_non_null(map->module);

	assert_int_equal(sfu_module__symbolize(map->module, addr - map->bias, &name, &offset), 0);
	assert_string_equal(name, "sfu_test_known_function");
	assert_int_equal(offset, 0);
	assert_int_equal(sfu_module__symbolize(map->module, addr - map->bias + 1, &name, &offset), 0);
	assert_string_equal(name, "sfu_test_known_function");
	assert_int_equal(offset, 1);
	assert_int_equal(sfu_module__symbol_addr(map->module, "sfu_test_known_function", &vaddr), 0);
	assert_int_equal(vaddr + map->bias, addr);
	assert_int_equal(sfu_test_known_function(1), 4);
	sfu_addrspace__free(as);
}

/* Touches everything a module exposes, so the sanitizers see any bad read. */
static void exercise(const struct sfu_module *m)
{
	const struct sfu_segment *segs;
	const char *name;
	uint64_t off, bias, v;
	size_t n;

	segs = sfu_module__segments(m, &n);
	for (size_t i = 0; i < n; i++) {
		sfu_module__symbolize(m, segs[i].vaddr, &name, &off);
		sfu_module__symbolize(m, segs[i].vaddr + segs[i].memsz / 2, &name, &off);
		sfu_module__bias(m, 0x7f0000000000ull, segs[i].offset & ~0xfffull, &bias);
	}
	sfu_module__symbol_addr(m, "main", &v);
	(void)sfu_module__sframe_error(m);
	(void)sfu_module__build_id(m)->len;
}

static void test_self_truncated(void **state)
{
	char *path = path_join_or_fail(*state, "truncated");
	const Elf64_Ehdr *eh;
	uint64_t shdr_end;
	uint8_t *image;
	size_t len, tried = 0;

	image = read_file_or_fail("/proc/self/exe", &len);
	eh = (const Elf64_Ehdr *)image;
	shdr_end = eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize;
	/* the linker puts the section headers last, so every cut loses some of them */
	assert_int_equal(shdr_end, len);
	write_file_or_fail(path, image, len);

	for (size_t cut = len; cut-- > 0;) {
		struct sfu_diag diag = { 0 };
		struct sfu_module *m;

		/* every length in the headers and the tail, a sample in between */
		if (cut > 4096 && cut < len - 4096 && cut % 97)
			continue;
		assert_int_equal(truncate(path, cut), 0);
		errno = 0;
		m = sfu_module__open(path, &diag);
		if (m || errno != EBADMSG || !diag.reason[0])
			fail_msg("cut at %zu: got %p errno %d \"%s\"", cut, (void *)m, errno,
				 diag.reason);
		tried++;
	}
	assert_true(tried > 8192);
	free(image);
	free(path);
}

/* Flips bits in [from, to) of the image, one bit per byte, and opens each variant. */
static size_t flip_range(const char *path, uint8_t *image, size_t len, size_t from, size_t to,
			 size_t stride, bool all_bits)
{
	size_t opened = 0;
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(image, 1, len, f), len);
	assert_int_equal(fflush(f), 0);
	for (size_t off = from; off < to && off < len; off += stride) {
		for (unsigned bit = all_bits ? 0 : off % 8; bit < 8; bit++) {
			struct sfu_diag diag = { 0 };
			struct sfu_module *m;
			uint8_t flipped = image[off] ^ (1u << bit);

			assert_int_equal(pwrite(fileno(f), &flipped, 1, off), 1);
			errno = 0;
			m = sfu_module__open(path, &diag);
			if (m) {
				exercise(m);
				sfu_module__put(m);
				opened++;
			} else if (errno != EBADMSG || !diag.reason[0]) {
				fail_msg("bit %u of byte %zu: errno %d \"%s\"", bit, off, errno,
					 diag.reason);
			}
			if (!all_bits)
				break;
		}
		assert_int_equal(pwrite(fileno(f), &image[off], 1, off), 1);
	}
	fclose(f);
	return opened;
}

static void test_self_bit_flips(void **state)
{
	char *path = path_join_or_fail(*state, "flipped");
	const Elf64_Ehdr *eh;
	uint8_t *image;
	size_t len;

	image = read_file_or_fail("/proc/self/exe", &len);
	eh = (const Elf64_Ehdr *)image;
	/* every bit of the ELF header */
	flip_range(path, image, len, 0, sizeof(*eh), 1, true);
	/* one bit of each byte of the program and section header tables */
	flip_range(path, image, len, eh->e_phoff, eh->e_phoff + eh->e_phnum * sizeof(Elf64_Phdr),
		   1, false);
	flip_range(path, image, len, eh->e_shoff, eh->e_shoff + eh->e_shnum * sizeof(Elf64_Shdr),
		   1, false);
	/* the symbol and string tables and the notes */
	for (size_t i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *sh = (const Elf64_Shdr *)(image + eh->e_shoff) + i;

		if (sh->sh_type == SHT_SYMTAB || sh->sh_type == SHT_DYNSYM ||
		    sh->sh_type == SHT_NOTE)
			flip_range(path, image, len, sh->sh_offset, sh->sh_offset + sh->sh_size,
				   sh->sh_type == SHT_NOTE ? 1 : 5, false);
		else if (sh->sh_type == SHT_STRTAB)
			flip_range(path, image, len, sh->sh_offset, sh->sh_offset + sh->sh_size,
				   sh->sh_size > 4096 ? 13 : 1, false);
	}
	free(image);
	free(path);
}

/* ---- the cache ---- */

static void copy_file(const char *from, const char *to)
{
	size_t len;
	void *data = read_file_or_fail(from, &len);

	write_file_or_fail(to, data, len);
	free(data);
}

static void test_cache(void **state)
{
	const char *dir = *state;
	char *a = path_join_or_fail(dir, "a.so"), *hard = path_join_or_fail(dir, "hard.so"),
	     *sym = path_join_or_fail(dir, "sym.so"), *copy = path_join_or_fail(dir, "copy.so"),
	     *other = path_join_or_fail(dir, "other.so"), *bad = path_join_or_fail(dir, "bad.so"),
	     *missing = path_join_or_fail(dir, "missing.so");
	struct sfu_cache *cache = sfu_cache__new();
	struct sfu_module *ma, *m, *mo;
	struct sfu_build_id wrong;
	struct sfu_diag diag = { 0 };
	uint64_t vaddr;
	struct fixture f;
	uint8_t *image;
	size_t len;

	assert_non_null(cache);
	copy_file("/proc/self/exe", a);
	assert_int_equal(link(a, hard), 0);
	assert_int_equal(symlink(a, sym), 0);
	copy_file("/proc/self/exe", copy);
	fixture_init(&f);
	image = build_elf(&f.spec, &len);
	write_file_or_fail(other, image, len);
	write_file_or_fail(bad, "not an ELF file", 15);

	ma = sfu_cache__open(cache, a, NULL, &diag);
	assert_non_null(ma);
	assert_int_equal(sfu_cache__count(cache), 1);

	/* one inode under three names */
	m = sfu_cache__open(cache, hard, NULL, NULL);
	assert_ptr_equal(m, ma);
	sfu_module__put(m);
	m = sfu_cache__open(cache, sym, NULL, NULL);
	assert_ptr_equal(m, ma);
	sfu_module__put(m);
	/* another inode, same build ID */
	m = sfu_cache__open(cache, copy, NULL, NULL);
	assert_ptr_equal(m, ma);
	sfu_module__put(m);
	assert_int_equal(sfu_cache__count(cache), 1);

	mo = sfu_cache__open(cache, other, sfu_module__build_id(ma) /* wrong */, &diag);
	assert_null(mo);
	assert_int_equal(errno, ESTALE);
	assert_int_equal(diag.err, -ESTALE);
	assert_contains(diag.reason, "expected");
	/* the module was read and stays cached for a caller who expects it */
	assert_int_equal(sfu_cache__count(cache), 2);
	mo = sfu_cache__open(cache, other, NULL, NULL);
	assert_non_null(mo);
	assert_ptr_not_equal(mo, ma);
	assert_int_equal(sfu_cache__count(cache), 2);

	wrong = *sfu_module__build_id(ma);
	wrong.bytes[0] ^= 1;
	assert_null(sfu_cache__open(cache, a, &wrong, NULL));
	assert_int_equal(errno, ESTALE);
	m = sfu_cache__open(cache, a, sfu_module__build_id(ma), NULL);
	assert_ptr_equal(m, ma);
	sfu_module__put(m);
	m = sfu_cache__open(cache, a, &(struct sfu_build_id){ .len = 0 }, NULL);
	assert_ptr_equal(m, ma);
	sfu_module__put(m);

	/* a file rewritten in place is read again */
	write_file_or_fail(copy, image, len);
	m = sfu_cache__open(cache, copy, NULL, NULL);
	assert_ptr_equal(m, mo);
	sfu_module__put(m);
	assert_int_equal(sfu_cache__count(cache), 2);

	errno = 0;
	assert_null(sfu_cache__open(cache, bad, NULL, &diag));
	assert_int_equal(errno, EBADMSG);
	errno = 0;
	assert_null(sfu_cache__open(cache, missing, NULL, &diag));
	assert_int_equal(errno, ENOENT);
	assert_int_equal(sfu_cache__count(cache), 2);

	/* a trim keeps what is referenced */
	assert_int_equal(sfu_cache__trim(cache), 0);
	assert_int_equal(sfu_cache__count(cache), 2);
	/* released by its last user, a module goes at the next trim; opened again, it is read again */
	sfu_module__put(mo);
	assert_int_equal(sfu_cache__trim(cache), 1);
	assert_int_equal(sfu_cache__count(cache), 1);
	mo = sfu_cache__open(cache, other, NULL, NULL);
	assert_non_null(mo);
	assert_int_equal(sfu_cache__count(cache), 2);
	/* the other names of the one kept still find it */
	m = sfu_cache__open(cache, hard, NULL, NULL);
	assert_ptr_equal(m, ma);
	sfu_module__put(m);

	/* modules outlive the cache while referenced */
	sfu_cache__free(cache);
	assert_int_equal(sfu_module__symbol_addr(ma, "sfu_test_known_function", &vaddr), 0);
	sfu_module__put(ma);
	sfu_module__put(mo);
	sfu_cache__free(NULL);

	free(image);
	fixture_fini(&f);
	free(a), free(hard), free(sym), free(copy), free(other), free(bad), free(missing);
}

/* ---- the cache shared by threads, and modules without symbols ---- */

/* Up to @max files this process maps executable, from /proc/self/maps, each once. @return how many. */
static size_t mapped_files(char **paths, size_t max)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4608];
	size_t n = 0;

	assert_non_null(f);
	while (n < max && fgets(line, sizeof(line), f)) {
		char perms[8], *path = strchr(line, '/');
		bool seen = false;
		struct stat st;

		if (sscanf(line, "%*x-%*x %7s", perms) != 1 || !strchr(perms, 'x') || !path)
			continue;
		path[strcspn(path, "\n")] = '\0';
		/* a deleted file or a memfd is no path to open */
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		for (size_t i = 0; i < n && !seen; i++)
			seen = !strcmp(paths[i], path);
		if (!seen) {
			paths[n] = strdup(path);
			assert_non_null(paths[n++]);
		}
	}
	fclose(f);
	return n;
}

#define CACHE_THREADS 8
#define CACHE_FILES 48

struct cache_race {
	struct sfu_cache *cache;
	char *paths[CACHE_FILES];
	size_t npaths;
	pthread_barrier_t start;
	bool rotate;	/* each thread starts at another file; else all at the first */
};

struct cache_racer {
	struct cache_race *race;
	size_t index;
	struct sfu_module *got[CACHE_FILES];
};

static void *cache_racer(void *arg)
{
	struct cache_racer *t = arg;
	struct cache_race *race = t->race;

	pthread_barrier_wait(&race->start);
	for (size_t k = 0; k < race->npaths; k++) {
		size_t i = (k + (race->rotate ? t->index : 0)) % race->npaths;

		t->got[i] = sfu_cache__open(race->cache, race->paths[i], NULL, NULL);
	}
	return NULL;
}

/*
 * Which paths are one module: one file under several names, or files with
 * one build ID. @group[i] is the first path of path i's module; @return the
 * number of modules. Read without a cache, from stat() and the files.
 */
static size_t module_groups(char *const *paths, size_t n, size_t *group)
{
	struct sfu_build_id ids[CACHE_FILES];
	struct stat st[CACHE_FILES];
	size_t groups = 0;

	for (size_t i = 0; i < n; i++) {
		struct sfu_diag diag = { 0 };
		struct sfu_module *m = sfu_module__open(paths[i], &diag);

		if (!m)
			fail_msg("%s: %s", paths[i], diag.reason);
		ids[i] = *sfu_module__build_id(m);
		sfu_module__put(m);
		assert_int_equal(stat(paths[i], &st[i]), 0);
		group[i] = i;
		for (size_t j = 0; j < i && group[i] == i; j++) {
			bool same_file = st[i].st_dev == st[j].st_dev && st[i].st_ino == st[j].st_ino;
			bool same_id = ids[i].len && ids[i].len == ids[j].len &&
				       !memcmp(ids[i].bytes, ids[j].bytes, ids[i].len);

			if (same_file || same_id)
				group[i] = group[j];
		}
		groups += group[i] == i;
	}
	return groups;
}

/*
 * Threads opening the same files through one cache at once: files are read
 * without its lock, and whoever opens a file second gets the first's module.
 * Every thread gets one module per file (per build ID), and the cache holds
 * one per distinct file. Files without a build ID are there because the
 * build ID cannot merge their duplicates after the fact.
 */
static void test_cache_threads(void **state)
{
	const char *dir = *state;
	struct cache_race race = { 0 };
	struct cache_racer racers[CACHE_THREADS];
	size_t group[CACHE_FILES], groups;
	pthread_t threads[CACHE_THREADS];
	struct fixture f;
	uint8_t *image;
	size_t len;

	/*
	 * Crafted files first, where all threads start together in most
	 * rounds: opened in microseconds, they race the most. Then this
	 * program under two names and as a copy, and what it maps.
	 */
	fixture_init(&f);
	image = build_elf(&f.spec, &len);
	race.paths[race.npaths++] = path_join_or_fail(dir, "crafted.so");
	write_file_or_fail(race.paths[race.npaths - 1], image, len);
	free(image);
	no_notes(&f);
	image = build_elf(&f.spec, &len);
	for (int i = 0; i < 6; i++) {
		char name[32];

		snprintf(name, sizeof(name), "no-build-id-%d.so", i);
		race.paths[race.npaths++] = path_join_or_fail(dir, name);
		write_file_or_fail(race.paths[race.npaths - 1], image, len);
	}
	free(image);
	fixture_fini(&f);
	race.paths[race.npaths++] = strdup("/proc/self/exe");
	race.paths[race.npaths++] = path_join_or_fail(dir, "exe-copy");
	copy_file("/proc/self/exe", race.paths[race.npaths - 1]);
	race.npaths += mapped_files(race.paths + race.npaths, CACHE_FILES - race.npaths);
	for (size_t i = 0; i < race.npaths; i++)
		assert_non_null(race.paths[i]);
	groups = module_groups(race.paths, race.npaths, group);
	print_message("%zu paths, %zu modules, %d threads\n", race.npaths, groups, CACHE_THREADS);
	/* the crafted files are 7 modules; the executable's names and copy one */
	assert_true(race.npaths >= 10);
	assert_true(groups >= 8 && groups < race.npaths);

	for (int round = 0; round < 40; round++) {
		race.cache = sfu_cache__new();
		assert_non_null(race.cache);
		race.rotate = round % 4 == 3;
		assert_int_equal(pthread_barrier_init(&race.start, NULL, CACHE_THREADS), 0);
		for (size_t t = 0; t < CACHE_THREADS; t++) {
			racers[t] = (struct cache_racer){ .race = &race, .index = t };
			assert_int_equal(pthread_create(&threads[t], NULL, cache_racer, &racers[t]), 0);
		}
		for (size_t t = 0; t < CACHE_THREADS; t++)
			assert_int_equal(pthread_join(threads[t], NULL), 0);
		pthread_barrier_destroy(&race.start);

		for (size_t i = 0; i < race.npaths; i++) {
			const struct sfu_module *want = racers[0].got[group[i]];

			if (!racers[0].got[i])
				fail_msg("round %d: %s did not open", round, race.paths[i]);
			for (size_t t = 0; t < CACHE_THREADS; t++)
				if (racers[t].got[i] != want)
					fail_msg("round %d: thread %zu got module %p for %s, thread 0 "
						 "%p for %s", round, t, (void *)racers[t].got[i],
						 race.paths[i], (const void *)want,
						 race.paths[group[i]]);
			for (size_t j = 0; j < i; j++)
				if (group[j] != group[i] && racers[0].got[j] == want)
					fail_msg("round %d: %s and %s share a module", round,
						 race.paths[i], race.paths[j]);
		}
		if (sfu_cache__count(race.cache) != groups)
			fail_msg("round %d: %zu modules cached, %zu files", round,
				 sfu_cache__count(race.cache), groups);
		for (size_t t = 0; t < CACHE_THREADS; t++)
			for (size_t i = 0; i < race.npaths; i++)
				sfu_module__put(racers[t].got[i]);
		/* the cache's own references are all that is left */
		assert_int_equal(sfu_cache__trim(race.cache), groups);
		sfu_cache__free(race.cache);
	}
	for (size_t i = 0; i < race.npaths; i++)
		free(race.paths[i]);
}

/* The path of the first file this process maps whose name contains @part, malloc()ed; NULL when none. */
static char *mapped_file(const char *part)
{
	char *paths[CACHE_FILES], *found = NULL;
	size_t n = mapped_files(paths, CACHE_FILES);

	for (size_t i = 0; i < n; i++) {
		if (!found && strstr(paths[i], part))
			found = paths[i];
		else
			free(paths[i]);
	}
	return found;
}

#define TRIM_FILES 32

struct trim_race {
	struct sfu_cache *cache;
	char *paths[TRIM_FILES];
	bool stop;	/* atomic */
	unsigned long rounds;	/* atomic */
};

/*
 * Open every file, then let go of every one, over and over: references
 * dropped in bursts without the cache's lock, while the trim runs.
 */
static void *trim_racer(void *arg)
{
	struct trim_race *race = arg;
	struct sfu_module *got[TRIM_FILES];

	while (!__atomic_load_n(&race->stop, __ATOMIC_RELAXED)) {
		for (size_t i = 0; i < TRIM_FILES; i++)
			got[i] = sfu_cache__open(race->cache, race->paths[i], NULL, NULL);
		/* one at a time, spread over the trims */
		for (size_t i = 0; i < TRIM_FILES; i++) {
			sfu_module__put(got[i]);
			sched_yield();
		}
		__atomic_add_fetch(&race->rounds, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * Trimming while other threads open and let go of the same files: a module
 * the trim releases is gone from every index, so a later open makes a new
 * one; ASan sees a module reached after its release. The trim decides once
 * which modules only it holds: read twice, a count falling in between left
 * an index entry to a released module (a crash in free() after minutes of
 * recording under churn).
 */
static void test_cache_trim_race(void **state)
{
	const char *dir = *state;
	struct trim_race race = { 0 };
	pthread_t threads[2];
	size_t released = 0;
	struct fixture f;
	uint8_t *image;
	size_t len;

	fixture_init(&f);
	no_notes(&f);	/* no build ID: each file its own module */
	image = build_elf(&f.spec, &len);
	for (size_t i = 0; i < TRIM_FILES; i++) {
		char name[32];

		snprintf(name, sizeof(name), "trim-%zu.so", i);
		race.paths[i] = path_join_or_fail(dir, name);
		write_file_or_fail(race.paths[i], image, len);
	}
	free(image);
	fixture_fini(&f);
	race.cache = sfu_cache__new();
	assert_non_null(race.cache);
	for (size_t t = 0; t < 2; t++)
		assert_int_equal(pthread_create(&threads[t], NULL, trim_racer, &race), 0);
	for (int i = 0; i < 20000 || __atomic_load_n(&race.rounds, __ATOMIC_RELAXED) < 200; i++)
		released += sfu_cache__trim(race.cache);
	__atomic_store_n(&race.stop, true, __ATOMIC_RELAXED);
	for (size_t t = 0; t < 2; t++)
		assert_int_equal(pthread_join(threads[t], NULL), 0);
	print_message("%lu rounds of %d opens, %zu modules released by the trims\n", race.rounds,
		      TRIM_FILES, released);
	/* nothing holds them now: a last trim leaves an empty cache */
	sfu_cache__trim(race.cache);
	assert_int_equal(sfu_cache__count(race.cache), 0);
	sfu_cache__free(race.cache);
	for (size_t i = 0; i < TRIM_FILES; i++)
		free(race.paths[i]);
}

/* A cache whose memory bound refuses a second library while the first is mapped, and trims it once not. */
static void test_cache_limit(void **state)
{
	char *libc = mapped_file("/libc.so"), *libm = mapped_file("/libz.so");
	char *copy = path_join_or_fail(*state, "libc-copy.so");
	struct sfu_diag diag = { 0 };
	struct sfu_cache *cache;
	struct sfu_module *a, *b, *c;
	size_t mem_a, mem_b, before;

	if (!libc || !libm) {
		free(libc);
		free(libm);
		free(copy);
		skip();
	}
	/* what each takes, measured alone */
	a = sfu_module__open_flags(libc, SFU_MODULE_OPEN_NO_SYMBOLS, &diag);
	b = sfu_module__open_flags(libm, SFU_MODULE_OPEN_NO_SYMBOLS, &diag);
	assert_non_null(a);
	assert_non_null(b);
	mem_a = sfu_module__memory(a);
	mem_b = sfu_module__memory(b);
	print_message("%s holds %zu bytes, %s %zu\n", libc, mem_a, libm, mem_b);
	/* at least the copies of their .eh_frame sections (libc: 150 KiB, libz: 6 KiB) */
	assert_true(mem_a > 100000 && mem_b > 4096);
	before = sfu_module__memory(a);
	assert_non_null(sfu_module__eh_frame_table(a));
	/* the copy of .eh_frame is replaced by the table made from it */
	assert_int_not_equal(sfu_module__memory(a), before);
	sfu_module__put(a);
	sfu_module__put(b);

	cache = sfu_cache__new();
	assert_non_null(cache);
	sfu_cache__set_flags(cache, SFU_MODULE_OPEN_NO_SYMBOLS);
	sfu_cache__set_limit(cache, (mem_a > mem_b ? mem_a : mem_b) + 4096);
	a = sfu_cache__open(cache, libc, NULL, &diag);
	assert_non_null(a);
	assert_int_equal(sfu_cache__memory(cache), mem_a);
	/* held (mapped): the second does not fit, and is not kept */
	b = sfu_cache__open(cache, libm, NULL, &diag);
	assert_null(b);
	assert_int_equal(errno, ENOSPC);
	assert_int_equal(diag.err, -ENOSPC);
	assert_int_equal(sfu_cache__refused(cache), 1);
	assert_int_equal(sfu_cache__count(cache), 1);
	/* another file of the same build costs nothing: the module held is shared */
	copy_file(libc, copy);
	c = sfu_cache__open(cache, copy, NULL, &diag);
	assert_ptr_equal(c, a);
	sfu_module__put(c);
	/* no longer mapped: released to make room */
	sfu_module__put(a);
	b = sfu_cache__open(cache, libm, NULL, &diag);
	assert_non_null(b);
	assert_int_equal(sfu_cache__count(cache), 1);
	assert_true(sfu_cache__memory(cache) <= mem_b + 4096);
	assert_int_equal(sfu_cache__refused(cache), 1);
	/* no bound: both */
	sfu_cache__set_limit(cache, 0);
	a = sfu_cache__open(cache, libc, NULL, &diag);
	assert_non_null(a);
	assert_int_equal(sfu_cache__count(cache), 2);
	sfu_module__put(a);
	sfu_module__put(b);
	sfu_cache__free(cache);
	unlink(copy);
	free(copy);
	free(libc);
	free(libm);
}

/*
 * Real tables, every function and row: the row sfu_sframe__lookup() decodes
 * alone from the encoded section (what the unwinder uses) is the one
 * sfu_sframe__find() finds among every row decoded, at each row's first
 * byte, its last byte and past the function's end.
 */
static void test_lookup_real_tables(void **state)
{
	const char *parts[] = { "/libc.so", "/libm.so", "/libcmocka", "/proc/self/exe" };
	size_t checked = 0;

	(void)state;
	for (size_t p = 0; p < sizeof(parts) / sizeof(parts[0]); p++) {
		char *path = strcmp(parts[p], "/proc/self/exe") ? mapped_file(parts[p]) :
			     strdup(parts[p]);
		const struct sfu_sframe *tables[2];
		struct sfu_diag diag = { 0 };
		struct sfu_module *m;

		if (!path)
			continue;	/* not mapped by this build of the test */
		m = sfu_module__open(path, &diag);
		if (!m)
			fail_msg("%s: %s", path, diag.reason);
		tables[0] = sfu_module__sframe(m);
		tables[1] = sfu_module__eh_frame_table(m);
		for (int t = 0; t < 2; t++) {
			const struct sfu_sframe *sf = tables[t];

			for (size_t i = 0; sf && i < sfu_sframe__fde_count(sf); i++) {
				const struct sfu_fde *fde = sfu_sframe__fde(sf, i);

				for (uint32_t k = 0; k < fde->num_fres; k++) {
					const struct sfu_row *r = sfu_sframe__row(sf, fde->first_row + k);
					uint64_t end = k + 1 < fde->num_fres ? r[1].start : fde->size;
					uint64_t pcs[] = { fde->start + r->start, fde->start + end - 1,
							   fde->start + fde->size };

					for (size_t j = 0; j < 3; j++) {
						const struct sfu_fde *ff, *lf;
						const struct sfu_row *fr;
						struct sfu_row lr;
						int err = sfu_sframe__find(sf, pcs[j], &ff, &fr);

						assert_int_equal(sfu_sframe__lookup(sf, pcs[j], &lf, &lr), err);
						if (err)
							continue;
						assert_ptr_equal(lf, ff);
						assert_memory_equal(&lr, fr, sizeof(lr));
						checked++;
					}
				}
			}
		}
		sfu_module__put(m);
		free(path);
	}
	print_message("%zu lookups compared\n", checked);
	assert_true(checked > 10000);	/* libc's rows at least */
}

/*
 * SFU_MODULE_OPEN_NO_SYMBOLS, by sfu_module__open_flags() and by the cache:
 * the module is the same for unwinding (build ID, segments, tables) and
 * names no function, where the same file opened with symbols does.
 */
/* A build found by its ID alone (its file gone), and a module opened for symbols without unwind tables. */
static void test_cache_find_and_no_unwind(void **state)
{
	const char *dir = *state;
	char *copy = path_join_or_fail(dir, "self-copy");
	struct sfu_build_id none = { .len = 0 }, other;
	struct sfu_module *m, *found, *bare;
	struct sfu_cache *cache = sfu_cache__new();
	const char *name = NULL;
	uint64_t off = 0, vaddr = 0;
	size_t n;
	uint8_t *image;
	size_t len;

	assert_non_null(cache);
	image = read_file_or_fail("/proc/self/exe", &len);
	write_file_or_fail(copy, image, len);
	free(image);
	m = sfu_cache__open(cache, copy, NULL, NULL);
	assert_non_null(m);
	assert_int_equal(unlink(copy), 0);
	/* the file is gone: the build is found by its ID, the same module */
	found = sfu_cache__find(cache, sfu_module__build_id(m));
	assert_ptr_equal(found, m);
	sfu_module__put(found);
	other = *sfu_module__build_id(m);
	other.bytes[0] ^= 0xff;
	errno = 0;
	assert_null(sfu_cache__find(cache, &other));
	assert_int_equal(errno, ENOENT);
	assert_null(sfu_cache__find(cache, &none));
	assert_null(sfu_cache__find(NULL, sfu_module__build_id(m)));

	/* for a symbolizer: segments and symbols, nothing of what unwinding reads */
	bare = sfu_module__open_flags("/proc/self/exe", SFU_MODULE_OPEN_NO_UNWIND, NULL);
	assert_non_null(bare);
	assert_non_null(sfu_module__segments(bare, &n));
	assert_true(n > 0);
	assert_int_equal(sfu_module__symbol_addr(bare, "sfu_test_known_function", &vaddr), 0);
	assert_int_equal(sfu_module__symbolize(bare, vaddr, &name, &off), 0);
	assert_string_equal(name, "sfu_test_known_function");
	assert_null(sfu_module__sframe(bare));
	assert_null(sfu_module__eh_frame_table(bare));
	assert_non_null(sfu_module__eh_frame_table(m));	/* the binary has .eh_frame */
	sfu_module__put(bare);
	sfu_module__put(m);
	sfu_cache__free(cache);
	free(copy);
}

static void test_open_no_symbols(void **state)
{
	const char *dir = *state;
	char *crafted = path_join_or_fail(dir, "sframe.so"), *libc = mapped_file("/libc.so");
	const struct {
		const char *name, *path, *symbol;
		bool exact;	/* symbolize() names the symbol itself, not an alias */
	} cases[] = {
		{ "this test", "/proc/self/exe", "sfu_test_known_function", true },
		{ "crafted, with .sframe", crafted, "outer", true },
		{ "libc", libc, "malloc", false },
	};
	struct fixture f;
	uint8_t *image;
	size_t len;

	fixture_init(&f);
	sframe_by_name(&f);
	image = build_elf(&f.spec, &len);
	write_file_or_fail(crafted, image, len);
	free(image);
	fixture_fini(&f);

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct sfu_diag diag = { 0 };
		struct sfu_module *with, *without, *cached;
		struct sfu_cache *cache;
		const struct sfu_segment *sw, *so;
		const char *name = NULL;
		uint64_t vaddr = 0, offset = 0;
		size_t nw, no;

		if (!cases[i].path) {
			print_message("%s: not mapped, skipped\n", cases[i].name);
			continue;
		}
		with = sfu_module__open_flags(cases[i].path, 0, &diag);
		if (!with)
			fail_msg("%s: %s", cases[i].path, diag.reason);
		without = sfu_module__open_flags(cases[i].path, SFU_MODULE_OPEN_NO_SYMBOLS, &diag);
		if (!without)
			fail_msg("%s without symbols: %s", cases[i].path, diag.reason);

		/* what unwinding needs is all there */
		assert_bytes_equal(sfu_module__build_id(without)->bytes,
				   sfu_module__build_id(without)->len,
				   sfu_module__build_id(with)->bytes, sfu_module__build_id(with)->len);
		sw = sfu_module__segments(with, &nw);
		so = sfu_module__segments(without, &no);
		assert_bytes_equal(so, no * sizeof(*so), sw, nw * sizeof(*sw));
		assert_int_equal(sfu_module__sframe_origin(without), sfu_module__sframe_origin(with));
		assert_int_equal(!sfu_module__sframe(without), !sfu_module__sframe(with));
		assert_int_equal(!sfu_module__eh_frame_table(without),
				 !sfu_module__eh_frame_table(with));
		assert_true(sfu_module__sframe(without) || sfu_module__eh_frame_table(without));

		/* named with symbols, not without */
		assert_int_equal(sfu_module__symbol_addr(with, cases[i].symbol, &vaddr), 0);
		assert_int_equal(sfu_module__symbolize(with, vaddr, &name, &offset), 0);
		if (cases[i].exact)
			assert_string_equal(name, cases[i].symbol);
		assert_int_equal(offset, 0);
		assert_int_equal(sfu_module__symbolize(without, vaddr, &name, &offset), -ENOENT);
		assert_int_equal(sfu_module__symbol_addr(without, cases[i].symbol, &offset),
				 -ENOENT);

		/* a cache opens what it opens from then on with its flags */
		cache = sfu_cache__new();
		assert_non_null(cache);
		sfu_cache__set_flags(cache, SFU_MODULE_OPEN_NO_SYMBOLS);
		cached = sfu_cache__open(cache, cases[i].path, NULL, &diag);
		assert_non_null(cached);
		assert_int_equal(sfu_module__symbolize(cached, vaddr, &name, &offset), -ENOENT);
		sfu_module__put(cached);
		/* cached already: as it was opened */
		sfu_cache__set_flags(cache, 0);
		cached = sfu_cache__open(cache, cases[i].path, NULL, &diag);
		assert_non_null(cached);
		assert_int_equal(sfu_module__symbolize(cached, vaddr, &name, &offset), -ENOENT);
		sfu_module__put(cached);
		/* opened again once released: with symbols now */
		assert_int_equal(sfu_cache__trim(cache), 1);
		cached = sfu_cache__open(cache, cases[i].path, NULL, &diag);
		assert_non_null(cached);
		assert_int_equal(sfu_module__symbolize(cached, vaddr, &name, &offset), 0);
		sfu_module__put(cached);
		sfu_cache__free(cache);

		sfu_module__put(with);
		sfu_module__put(without);
	}
	free(crafted);
	free(libc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_crafted_basics, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_crafted_symbolize, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_crafted_symbol_addr, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_crafted_build_id, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_crafted_sframe, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_entry_routine, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_corrupt, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_open_errors, setup_dir, teardown_dir),
		cmocka_unit_test(test_map_vaddr),
		cmocka_unit_test(test_bias),
		cmocka_unit_test(test_self_matches_raw_reading),
		cmocka_unit_test(test_self_symbolize_live_function),
		cmocka_unit_test_setup_teardown(test_self_truncated, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_self_bit_flips, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_cache, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_cache_threads, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_open_no_symbols, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_cache_find_and_no_unwind, setup_dir, teardown_dir),
		cmocka_unit_test(test_lookup_real_tables),
		cmocka_unit_test_setup_teardown(test_cache_limit, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_cache_trim_race, setup_dir, teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
