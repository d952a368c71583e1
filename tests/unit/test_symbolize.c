/* SPDX-License-Identifier: BSD-2-Clause */
/* The report's symbolizer names addresses as perf does: code labels, and the alias perf keeps. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <glob.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "testutil.h"
#include "symbolize/symbolize.h"

#define TEXT_ADDR 0x1000u
#define TEXT_SIZE 0x1000u
#define MAP_START 0x7f0000000000ull

struct sym_spec {
	const char *name;
	uint64_t value, size;
	unsigned char type, bind, vis;
	uint16_t shndx;		/* 0: .text */
};

struct lookup {
	uint64_t vaddr;
	bool is_ra;
	const char *want;	/* NULL: no name */
	uint64_t offset;
};

struct sym_case {
	const char *what;
	struct sym_spec syms[8];
	struct lookup lookups[8];
};

static const struct sym_case cases[] = {
	{ "labels: ld.so's _start (NOTYPE, size 0) up to the next symbol",
	  { { "_start", 0x1100, 0, STT_NOTYPE, STB_LOCAL, STV_DEFAULT, 0 },
	    { "_dl_start_user", 0x1108, 0, STT_NOTYPE, STB_LOCAL, STV_DEFAULT, 0 },
	    { "fn", 0x1200, 0x40, STT_FUNC, STB_GLOBAL, STV_DEFAULT, 0 },
	    { "hidden_label", 0x1300, 0, STT_NOTYPE, STB_LOCAL, STV_HIDDEN, 0 } },
	  { { 0x1107, false, "_start", 7 },
	    { 0x1108, true, "_start", 7 },		/* named at 0x1107, as perf: _start+0x7 */
	    { 0x1110, false, "_dl_start_user", 8 },
	    { 0x11f0, false, "_dl_start_user", 0xe8 },
	    { 0x1210, false, "fn", 0x10 },
	    { 0x1250, false, NULL, 0 },			/* past fn's size, no label */
	    { 0x1310, false, NULL, 0 } } },		/* a hidden label names nothing */
	{ "aliases: perf's choose_best_symbol() without DWARF",
	  { { "impl", 0x1100, 0x40, STT_FUNC, STB_LOCAL, STV_DEFAULT, 0 },
	    { "__work", 0x1100, 0x40, STT_FUNC, STB_GLOBAL, STV_DEFAULT, 0 },
	    { "work", 0x1100, 0x40, STT_FUNC, STB_GLOBAL, STV_DEFAULT, 0 },
	    { "weak_work", 0x1100, 0x40, STT_FUNC, STB_WEAK, STV_DEFAULT, 0 },
	    { "short", 0x1200, 0x40, STT_FUNC, STB_GLOBAL, STV_DEFAULT, 0 },
	    { "a_long_name", 0x1200, 0x40, STT_FUNC, STB_GLOBAL, STV_DEFAULT, 0 },
	    { "__x", 0x1300, 0x40, STT_FUNC, STB_GLOBAL, STV_DEFAULT, 0 },
	    { "_y", 0x1300, 0x40, STT_FUNC, STB_WEAK, STV_DEFAULT, 0 } },
	  { { 0x1110, false, "work", 0x10 },		/* global, fewest underscores */
	    { 0x1201, false, "a_long_name", 1 },	/* then the longest */
	    { 0x1300, false, "__x", 0 } } },		/* not weak before underscores */
	{ "aliases: sized first; a versioned name stays without DWARF (perf --no-inline)",
	  { { "zero", 0x1100, 0, STT_FUNC, STB_GLOBAL, STV_DEFAULT, 0 },
	    { "sized_one", 0x1100, 0x20, STT_FUNC, STB_GLOBAL, STV_DEFAULT, 0 },
	    { "f_impl", 0x1200, 0x20, STT_FUNC, STB_LOCAL, STV_DEFAULT, 0 },
	    { "f@@V_2", 0x1200, 0x20, STT_FUNC, STB_GLOBAL, STV_DEFAULT, 0 },
	    { "f@V_1", 0x1200, 0x20, STT_FUNC, STB_GLOBAL, STV_DEFAULT, 0 } },
	  { { 0x1104, false, "sized_one", 4 },
	    { 0x1204, false, "f@@V_2", 4 } } },	/* equal length: name order */
};

/* Write an ELF file: one R+X PT_LOAD of .text, and a .symtab of @syms. @return 0 or -errno. */
static int write_elf(const char *path, const struct sym_spec *syms, size_t n)
{
	static const char shstr[] = "\0.text\0.symtab\0.strtab\0.shstrtab";
	Elf64_Sym table[9] = { { 0 } };
	char strtab[512] = "";
	size_t strlen_used = 1;
	uint8_t *text = calloc(1, TEXT_SIZE);
	Elf_Scn *scn[4];
	Elf_Data *data;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	uint64_t off;
	int fd, err = -EIO;
	Elf *e;

	if (!text)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(syms[i].name) + 1;

		table[i + 1] = (Elf64_Sym){
			.st_name = (Elf64_Word)strlen_used,
			.st_info = ELF64_ST_INFO(syms[i].bind, syms[i].type),
			.st_other = syms[i].vis,
			.st_shndx = syms[i].shndx ? syms[i].shndx : 1,
			.st_value = syms[i].value,
			.st_size = syms[i].size,
		};
		memcpy(strtab + strlen_used, syms[i].name, len);
		strlen_used += len;
	}
	struct {
		const void *buf;
		size_t size, align;
		Elf_Type type;
		uint32_t name, sh_type;
		uint64_t flags, addr, entsize;
	} secs[4] = {
		{ text, TEXT_SIZE, 16, ELF_T_BYTE, 1, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR,
		  TEXT_ADDR, 0 },
		{ table, (n + 1) * sizeof(Elf64_Sym), 8, ELF_T_SYM, 7, SHT_SYMTAB, 0, 0,
		  sizeof(Elf64_Sym) },
		{ strtab, strlen_used, 1, ELF_T_BYTE, 15, SHT_STRTAB, 0, 0, 0 },
		{ shstr, sizeof(shstr), 1, ELF_T_BYTE, 23, SHT_STRTAB, 0, 0, 0 },
	};
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		free(text);
		return -errno;
	}
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_WRITE, NULL);
	if (!e || !(eh = elf64_newehdr(e)) || !(ph = elf64_newphdr(e, 1)))
		goto out;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	elf_flagelf(e, ELF_C_SET, ELF_F_LAYOUT);
	off = TEXT_ADDR;
	for (int i = 0; i < 4; i++) {
		GElf_Shdr sh;

		if (!(scn[i] = elf_newscn(e)) || !(data = elf_newdata(scn[i])))
			goto out;
		data->d_buf = (void *)secs[i].buf;
		data->d_size = secs[i].size;
		data->d_align = secs[i].align;
		data->d_type = secs[i].type;
		data->d_version = EV_CURRENT;
		off = (off + secs[i].align - 1) & ~(uint64_t)(secs[i].align - 1);
		if (!gelf_getshdr(scn[i], &sh))
			goto out;
		sh.sh_name = secs[i].name;
		sh.sh_type = secs[i].sh_type;
		sh.sh_flags = secs[i].flags;
		sh.sh_addr = secs[i].addr;
		sh.sh_offset = off;
		sh.sh_size = secs[i].size;
		sh.sh_addralign = secs[i].align;
		sh.sh_entsize = secs[i].entsize;
		sh.sh_link = i == 1 ? 3 : 0;	/* .symtab's names are in .strtab, section 3 */
		sh.sh_info = i == 1 ? (uint32_t)n + 1 : 0;
		if (!gelf_update_shdr(scn[i], &sh))
			goto out;
		off += secs[i].size;
	}
	eh->e_shstrndx = 4;
	eh->e_shoff = (off + 7) & ~7ull;
	*ph = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0,
			    .p_vaddr = 0, .p_paddr = 0, .p_filesz = TEXT_ADDR + TEXT_SIZE,
			    .p_memsz = TEXT_ADDR + TEXT_SIZE, .p_align = 0x1000 };
	if (elf_update(e, ELF_C_WRITE) < 0)
		goto out;
	err = 0;
out:
	if (err)
		fprintf(stderr, "write_elf: %s\n", elf_errmsg(-1));
	elf_end(e);
	close(fd);
	free(text);
	return err;
}

static void test_cases(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct sym_case *sc = &cases[c];
		const struct sym_mapping map = { MAP_START, 0, PROT_READ | PROT_EXEC };
		char path[] = "/tmp/test_symbolize.XXXXXX";
		struct symbolizer *s;
		struct sym_module *m;
		size_t n = 0;
		int fd = mkstemp(path);

		assert_true(fd >= 0);
		close(fd);
		while (n < 8 && sc->syms[n].name)
			n++;
		assert_int_equal(write_elf(path, sc->syms, n), 0);
		s = symbolizer__new(&(struct symbolizer_opts){ .no_debuginfod = true,
							       .no_lines = true });
		assert_non_null(s);
		m = symbolizer__module(s, (const uint8_t *)"", 0, path);
		assert_non_null(m);
		assert_true(sym_module__found(m));
		for (size_t i = 0; i < 8 && sc->lookups[i].vaddr; i++) {
			const struct lookup *l = &sc->lookups[i];
			struct sym_info info;
			bool named = symbolizer__lookup_mapped(s, m, MAP_START + l->vaddr, &map,
							       l->is_ra, &info);

			if (named != (l->want != NULL) ||
			    (named && (strcmp(info.name, l->want) || info.offset != l->offset)))
				fail_msg("%s: %#llx%s: got %s+%#llx, want %s+%#llx", sc->what,
					 (unsigned long long)l->vaddr, l->is_ra ? " (ra)" : "",
					 named ? info.name : "(none)",
					 (unsigned long long)info.offset,
					 l->want ? l->want : "(none)", (unsigned long long)l->offset);
			assert_int_equal(info.vaddr, l->vaddr);
		}
		symbolizer__free(s);
		unlink(path);
	}
}

/*
 * One rule for ELF symbols (common/elf_sym.h): libsfunwind's function table
 * (sfu_module__symbolize) and the symbolizer name each address alike. Before
 * it, libsfunwind kept a weak alias over a local one and a sizeless global
 * over a sized local, and named code by absolute symbols and by functions
 * outside executable sections, which perf and llvm-symbolizer do not.
 */
static void test_one_rule(void **state)
{
	static const struct sym_spec syms[] = {
		{ "weak_fn", 0x1100, 0x40, STT_FUNC, STB_WEAK, STV_DEFAULT, 0 },
		{ "local_fn", 0x1100, 0x40, STT_FUNC, STB_LOCAL, STV_DEFAULT, 0 },
		{ "global_nosize", 0x1200, 0, STT_FUNC, STB_GLOBAL, STV_DEFAULT, 0 },
		{ "local_sized", 0x1200, 0x20, STT_FUNC, STB_LOCAL, STV_DEFAULT, 0 },
		{ "absolute", 0x1300, 0x20, STT_FUNC, STB_GLOBAL, STV_DEFAULT, SHN_ABS },
		{ "not_in_code", 0x1400, 0x20, STT_FUNC, STB_GLOBAL, STV_DEFAULT, 2 },
	};
	static const struct {
		uint64_t vaddr;
		const char *want;	/* NULL: no name */
		uint64_t offset;
	} cases[] = {
		{ 0x1104, "local_fn", 4 },	/* not weak before global (perf) */
		{ 0x1204, "local_sized", 4 },	/* sized first */
		{ 0x1304, NULL, 0 },		/* SHN_ABS names no code */
		{ 0x1404, NULL, 0 },		/* nor a function of a section not executable */
	};
	const struct sym_mapping map = { MAP_START, 0, PROT_READ | PROT_EXEC };
	char path[] = "/tmp/test_symbolize.XXXXXX";
	struct sfu_module *mod;
	struct symbolizer *s;
	struct sym_module *m;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(write_elf(path, syms, sizeof(syms) / sizeof(syms[0])), 0);
	mod = sfu_module__open(path, NULL);
	assert_non_null(mod);
	s = symbolizer__new(&(struct symbolizer_opts){ .no_debuginfod = true, .no_lines = true });
	assert_non_null(s);
	m = symbolizer__module(s, (const uint8_t *)"", 0, path);
	assert_non_null(m);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *lib_name = NULL;
		uint64_t lib_off = 0;
		bool lib_named = !sfu_module__symbolize(mod, cases[i].vaddr, &lib_name, &lib_off);
		struct sym_info info;
		bool named = symbolizer__lookup_mapped(s, m, MAP_START + cases[i].vaddr, &map,
						       false, &info);

		if (lib_named != (cases[i].want != NULL) ||
		    (lib_named && (strcmp(lib_name, cases[i].want) || lib_off != cases[i].offset)))
			fail_msg("%#llx: libsfunwind: got %s+%#llx, want %s",
				 (unsigned long long)cases[i].vaddr, lib_named ? lib_name : "(none)",
				 (unsigned long long)lib_off, cases[i].want ? cases[i].want : "(none)");
		if (named != (cases[i].want != NULL) ||
		    (named && (strcmp(info.name, cases[i].want) || info.offset != cases[i].offset)))
			fail_msg("%#llx: symbolizer: got %s+%#llx, want %s",
				 (unsigned long long)cases[i].vaddr, named ? info.name : "(none)",
				 (unsigned long long)info.offset,
				 cases[i].want ? cases[i].want : "(none)");
	}
	symbolizer__free(s);
	sfu_module__put(mod);
	unlink(path);
}

/* The value of symbol @name in @path's .symtab. */
static uint64_t sym_value(const char *path, const char *name)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf_Scn *scn = NULL;
	uint64_t value = 0;
	Elf *e;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(e);
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d = elf_getdata(scn, NULL);
		GElf_Shdr sh;
		GElf_Sym sym;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !d)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++)
			if (gelf_getsym(d, (int)i, &sym) &&
			    !strcmp(elf_strptr(e, sh.sh_link, sym.st_name), name))
				value = sym.st_value;
	}
	elf_end(e);
	close(fd);
	assert_true(value != 0);
	return value;
}

static void expect_name(struct symbolizer *s, struct sym_module *m, uint64_t vaddr,
			const char *want)
{
	/* a library's text is at the same file offset as its address */
	const struct sym_mapping map = { MAP_START, 0, PROT_READ | PROT_EXEC };
	struct sym_info info;

	assert_true(symbolizer__lookup_mapped(s, m, MAP_START + vaddr, &map, false, &info));
	if (strcmp(info.name, want) || info.offset)
		fail_msg("%#llx: got %s+%#llx, want %s", (unsigned long long)vaddr, info.name,
			 (unsigned long long)info.offset, want);
}

/*
 * An aliased function is named by its DWARF name (impl_one, not one_alias,
 * which perf's loader keeps without DWARF), before a trim lets go of the
 * module's DWARF and after: asked again, the names of all aliased functions
 * are made at once from the DWARF opened again, and stay right.
 */
static void test_dwarf_names_across_trims(void **state)
{
	uint64_t one = sym_value(ALIAS_FIXTURE, "impl_one"), two = sym_value(ALIAS_FIXTURE,
									   "impl_two");
	struct symbolizer *s = symbolizer__new(&(struct symbolizer_opts){ .no_debuginfod = true,
									   .no_lines = true });
	struct sym_module *m;

	(void)state;
	assert_non_null(s);
	m = symbolizer__module(s, (const uint8_t *)"", 0, ALIAS_FIXTURE);
	assert_true(sym_module__found(m));
	expect_name(s, m, one, "impl_one");
	/* round 1: the module and its DWARF, asked for in round 0, stay */
	assert_int_equal(symbolizer__trim(s, 1), 0);
	assert_ptr_equal(symbolizer__module(s, (const uint8_t *)"", 0, ALIAS_FIXTURE), m);
	/* round 2: the module stays (asked for in round 1), its DWARF goes */
	assert_int_equal(symbolizer__trim(s, 1), 0);
	assert_ptr_equal(symbolizer__module(s, (const uint8_t *)"", 0, ALIAS_FIXTURE), m);
	expect_name(s, m, two, "impl_two");
	expect_name(s, m, one, "impl_one");
	/* two idle rounds: the module goes */
	assert_int_equal(symbolizer__trim(s, 1), 0);
	assert_int_equal(symbolizer__trim(s, 1), 1);
	symbolizer__free(s);
}

/* A label objdump -d prints in a PLT section: <NAME@plt>, or <.plt> for what it does not name. */
struct plt_label {
	uint64_t addr;
	char name[512];
};

/* objdump's label of a stub, not one relative to it (<*ABS*+0x9f550@plt-0x10> before PLT0) */
static bool stub_label(const char *name)
{
	size_t n = strlen(name);

	return n > 4 && !strcmp(name + n - 4, "@plt");
}

static bool plt_section(const char *name)
{
	return !strcmp(name, ".plt") || !strcmp(name, ".plt.sec") || !strcmp(name, ".plt.got");
}

/* objdump -d -C's labels in @path's PLT sections, in order. @return their number, or -1. */
static long objdump_plt_labels(const char *objdump, const char *path, struct plt_label *out,
			       size_t cap)
{
	char cmd[4096], line[4096];
	bool in_plt = false;
	size_t n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s -d -C '%s' 2>/dev/null", objdump, path);
	if (!(f = popen(cmd, "r")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char sec[256], *lt, *end;
		unsigned long long addr;

		if (sscanf(line, "Disassembly of section %255[^:]:", sec) == 1) {
			in_plt = plt_section(sec);
			continue;
		}
		/* 0000000000001090 <puts@plt>: */
		end = line + strlen(line);
		while (end > line && (end[-1] == '\n' || end[-1] == ' '))
			*--end = 0;
		if (!in_plt || end - line < 4 || strcmp(end - 2, ">:") ||
		    sscanf(line, "%llx <", &addr) != 1 || !(lt = strchr(line, '<')) || n == cap)
			continue;
		end[-2] = 0;
		out[n].addr = addr;
		snprintf(out[n].name, sizeof(out[n].name), "%s", lt + 1);
		n++;
	}
	return pclose(f) ? -1 : (long)n;
}

struct plt_figures {
	size_t files, stubs, addrs, mismatches;
};

/*
 * Every byte of every PLT section of @path named by the symbolizer as
 * objdump labels it: NAME@plt and the offset from the label, or nothing
 * where objdump's label is not a stub's (PLT0, an IBT PLT's lazy entries).
 */
static void compare_plt(const char *path, struct plt_figures *fig)
{
	static struct plt_label labels[8192];
	struct symbolizer *s;
	struct sym_module *m;
	Elf_Scn *scn = NULL;
	const char *objdump;
	size_t nphdr, shstrndx;
	GElf_Ehdr eh;
	long n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;

	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(e);
	assert_non_null(gelf_getehdr(e, &eh));
	objdump = eh.e_machine == EM_AARCH64 ? "aarch64-linux-gnu-objdump" : "objdump";
	if ((n = objdump_plt_labels(objdump, path, labels, 8192)) < 0) {
		print_message("%s: %s did not run: not compared\n", path, objdump);
		elf_end(e);
		close(fd);
		return;
	}
	s = symbolizer__new(&(struct symbolizer_opts){ .no_debuginfod = true, .no_lines = true });
	assert_non_null(s);
	m = symbolizer__module(s, (const uint8_t *)"", 0, path);
	assert_true(sym_module__found(m));
	assert_int_equal(elf_getphdrnum(e, &nphdr), 0);
	assert_int_equal(elf_getshdrstrndx(e, &shstrndx), 0);
	fig->files++;
	while ((scn = elf_nextscn(e, scn))) {
		struct sym_mapping map = { MAP_START, 0, PROT_READ | PROT_EXEC };
		uint64_t seg_vaddr = 0;
		GElf_Shdr sh;
		GElf_Phdr ph;
		const char *name;
		size_t l = 0;

		assert_non_null(gelf_getshdr(scn, &sh));
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name || !plt_section(name) || sh.sh_type != SHT_PROGBITS)
			continue;
		/* mapped as the loader maps the executable segment holding it */
		for (size_t i = 0; i < nphdr; i++)
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    (ph.p_flags & PF_X) && ph.p_vaddr <= sh.sh_addr &&
			    sh.sh_addr < ph.p_vaddr + ph.p_memsz) {
				map.file_offset = ph.p_offset & ~0xfffull;
				seg_vaddr = ph.p_vaddr & ~0xfffull;
			}
		for (uint64_t a = sh.sh_addr; a < sh.sh_addr + sh.sh_size; a++) {
			const struct plt_label *want = NULL;
			struct sym_info info;
			bool named;

			while (l < (size_t)n && labels[l].addr <= a)
				l++;
			if (l && labels[l - 1].addr >= sh.sh_addr)
				want = &labels[l - 1];
			if (want && want->addr == a && stub_label(want->name))
				fig->stubs++;
			if (want && !stub_label(want->name))
				want = NULL;
			named = symbolizer__lookup_mapped(s, m, MAP_START + (a - seg_vaddr), &map,
							  false, &info);
			fig->addrs++;
			if (named != (want != NULL) ||
			    (want && (strcmp(info.name, want->name) ||
				      info.offset != a - want->addr))) {
				if (fig->mismatches++ < 10)
					print_message("%s: %s %#llx: %s+%#llx, objdump %s\n", path,
						      name, (unsigned long long)a,
						      named ? info.name : "(none)",
						      (unsigned long long)info.offset,
						      want ? want->name : "(none)");
			}
		}
	}
	symbolizer__free(s);
	elf_end(e);
	close(fd);
}

/*
 * PLT stubs, which no symbol names, named NAME@plt as objdump labels them
 * (perf names them so too): the fixtures (.plt and .plt.got; an IBT
 * .plt.sec; AArch64; i386's REL files, PIC and not, with IBT and without;
 * x32's), and libc and libpython where installed.
 */
static void test_plt_stubs(void **state)
{
	const char *const fixed[] = { PLT_FIXTURE, PLT_FIXTURE_IBT, PLT_FIXTURE_AARCH64,
				      "/usr/lib/x86_64-linux-gnu/libc.so.6" };
	const char *const elf32[] = { PLT_FIXTURES_ELF32 };
	struct plt_figures fig = { 0 };
	glob_t g;

	(void)state;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (fixed[i][0])
			compare_plt(fixed[i], &fig);
	/* each 32-bit fixture compared and with stubs objdump names: none passes by naming nothing */
	for (size_t i = 0; i < sizeof(elf32) / sizeof(elf32[0]); i++) {
		struct plt_figures before = fig;

		if (!elf32[i][0])
			continue;
		compare_plt(elf32[i], &fig);
		print_message("%s: %zu stubs\n", elf32[i], fig.stubs - before.stubs);
		assert_int_equal(fig.files, before.files + 1);
		assert_true(fig.stubs > before.stubs);
	}
	if (!glob("/usr/lib/x86_64-linux-gnu/libpython3*.so.1.0", 0, NULL, &g)) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			compare_plt(g.gl_pathv[i], &fig);
		globfree(&g);
	}
	print_message("PLT stubs: %zu files, %zu stubs, %zu addresses, %zu differ from objdump\n",
		      fig.files, fig.stubs, fig.addrs, fig.mismatches);
	assert_true(fig.files >= 2 && fig.stubs > 0);
	assert_int_equal(fig.mismatches, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_one_rule),
		cmocka_unit_test(test_dwarf_names_across_trims),
		cmocka_unit_test(test_plt_stubs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
