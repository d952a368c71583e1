/* SPDX-License-Identifier: BSD-2-Clause */
/* Go's function table: made-up tables of each layout, damaged ones, and real Go programs against go tool nm. */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "testutil.h"
#include "gopclntab_internal.h"
#include "module_internal.h"

#ifndef GO_PROG
#define GO_PROG ""
#endif
#ifndef GO_FIXTURE
#define GO_FIXTURE ""
#endif
#ifndef LLVM_SYMBOLIZER
#define LLVM_SYMBOLIZER ""
#endif
#ifndef GO_FIXTURE_PIE
#define GO_FIXTURE_PIE ""
#endif
#ifndef GO_FIXTURE_STRIPPED
#define GO_FIXTURE_STRIPPED ""
#endif

#define TEXT 0x401000ull

/* ---- made-up tables ---- */

struct buf {
	uint8_t b[1024];
	size_t len;
};

static void put(struct buf *b, const void *p, size_t n)
{
	assert_true(b->len + n <= sizeof(b->b));
	memcpy(b->b + b->len, p, n);
	b->len += n;
}

static void put_u32(struct buf *b, uint32_t v)
{
	put(b, &v, 4);
}

static void put_u64(struct buf *b, uint64_t v)
{
	put(b, &v, 8);
}

static void align(struct buf *b, size_t a)
{
	while (b->len % a)
		b->b[b->len++] = 0;
}

/* A function of the made-up table and where its SP delta changes. */
struct fake_func {
	const char *name;
	uint32_t off, size;	/* from TEXT */
	uint8_t flag;		/* _func.flag, not written in the 1.16 layout */
	const uint8_t *pcsp;	/* encoded pc-value pairs, terminated */
	size_t pcsp_len;
};

/* main.leaf: 0 throughout. main.mid: 0, then 0x28 from +4, then 0 from +0x3c. */
static const uint8_t leaf_pcsp[] = { 2, 0x20, 0 };
static const uint8_t mid_pcsp[] = { 2, 4, 0x50, 0x38, 0x4f, 4, 0 };
static const uint8_t goexit_pcsp[] = { 2, 0x10, 0 };

static const struct fake_func fake[] = {
	{ "main.leaf", 0x00, 0x20, 0, leaf_pcsp, sizeof(leaf_pcsp) },
	{ "main.mid", 0x20, 0x40, GO_FUNC_ASM, mid_pcsp, sizeof(mid_pcsp) },
	{ "runtime.goexit", 0x60, 0x10, GO_FUNC_TOPFRAME, goexit_pcsp, sizeof(goexit_pcsp) },
};
#define NFAKE (sizeof(fake) / sizeof(fake[0]))

/* A table of layout @version (116, 118, 120) holding fake[]. */
static void build_table(unsigned version, struct buf *t)
{
	unsigned words = version == 116 ? 7 : 8;
	size_t hdr = 8 + words * 8, names, pctab, pcln, nameoff[NFAKE], pcspoff[NFAKE];
	size_t recs, rec_size = version == 116 ? 44 : version == 118 ? 40 : 44;

	memset(t, 0, sizeof(*t));
	t->len = hdr;
	names = t->len;
	for (size_t i = 0; i < NFAKE; i++) {
		nameoff[i] = t->len - names;
		put(t, fake[i].name, strlen(fake[i].name) + 1);
	}
	align(t, 8);
	pctab = t->len;
	t->b[t->len++] = 0;	/* offset 0 means "no table" */
	for (size_t i = 0; i < NFAKE; i++) {
		pcspoff[i] = t->len - pctab;
		put(t, fake[i].pcsp, fake[i].pcsp_len);
	}
	align(t, 8);
	pcln = t->len;
	recs = (2 * NFAKE + 1) * (version == 116 ? 8 : 4);
	recs = (recs + 7) & ~(size_t)7;
	for (size_t i = 0; i <= NFAKE; i++) {
		uint32_t off = i < NFAKE ? fake[i].off : fake[NFAKE - 1].off + fake[NFAKE - 1].size;
		uint32_t funcoff = (uint32_t)(recs + i * ((rec_size + 7) & ~(size_t)7));

		if (version == 116) {
			put_u64(t, TEXT + off);
			if (i < NFAKE)
				put_u64(t, funcoff);
		} else {
			put_u32(t, off);
			if (i < NFAKE)
				put_u32(t, funcoff);
		}
	}
	align(t, 8);
	for (size_t i = 0; i < NFAKE; i++) {
		uint8_t tail[4] = { 0, version == 116 ? 0 : fake[i].flag, 0, 0 };

		if (version == 116)
			put_u64(t, TEXT + fake[i].off);
		else
			put_u32(t, fake[i].off);
		put_u32(t, (uint32_t)nameoff[i]);
		put_u32(t, 0);			/* args */
		put_u32(t, 0);			/* deferreturn */
		put_u32(t, (uint32_t)pcspoff[i]);
		put_u32(t, 0);			/* pcfile */
		put_u32(t, 0);			/* pcln */
		put_u32(t, 0);			/* npcdata */
		put_u32(t, 0);			/* cuOffset */
		if (version == 120)
			put_u32(t, 1);		/* startLine */
		put(t, tail, 4);
		align(t, 8);
	}
	/* the header, now that the offsets are known */
	{
		uint32_t magic = version == 116 ? GOPCLNTAB_MAGIC_116 :
				 version == 118 ? GOPCLNTAB_MAGIC_118 : GOPCLNTAB_MAGIC_120;
		uint64_t w[8];
		unsigned k = 0;

		memcpy(t->b, &magic, 4);
		t->b[4] = t->b[5] = 0;
		t->b[6] = 1;
		t->b[7] = 8;
		w[k++] = NFAKE;
		w[k++] = 0;		/* nfiles */
		if (version != 116)
			w[k++] = TEXT;
		w[k++] = names;
		w[k++] = 0;		/* cutab */
		w[k++] = 0;		/* filetab */
		w[k++] = pctab;
		w[k++] = pcln;
		memcpy(t->b + 8, w, k * 8);
	}
}

static void test_layouts(void **state)
{
	static const unsigned versions[] = { 116, 118, 120 };
	/* pc offset from TEXT, the function, its SP delta */
	static const struct {
		uint32_t off;
		size_t func;
		int32_t delta;
	} probes[] = {
		{ 0x00, 0, 0 }, { 0x1f, 0, 0 }, { 0x20, 1, 0 }, { 0x23, 1, 0 }, { 0x24, 1, 0x28 },
		{ 0x5b, 1, 0x28 }, { 0x5c, 1, 0 }, { 0x5f, 1, 0 }, { 0x60, 2, 0 }, { 0x6f, 2, 0 },
	};

	(void)state;
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		struct sfu_diag diag = { 0 };
		struct sfu_gopclntab *t;
		struct go_func f;
		struct buf b;

		build_table(versions[v], &b);
		t = sfu_gopclntab__new(b.b, b.len, 0, &diag);
		if (!t)
			fail_msg("layout %u: %s", versions[v], diag.reason);
		assert_int_equal(sfu_gopclntab__version(t), versions[v]);
		assert_int_equal(sfu_gopclntab__count(t), NFAKE);
		for (size_t i = 0; i < NFAKE; i++) {
			assert_int_equal(sfu_gopclntab__func(t, i, &f), 0);
			assert_string_equal(f.name, fake[i].name);
			assert_int_equal(f.entry, TEXT + fake[i].off);
			assert_int_equal(f.end, TEXT + fake[i].off + fake[i].size);
		}
		assert_int_equal(sfu_gopclntab__func(t, NFAKE, &f), -ENOENT);
		/* goexit starts its stack in every layout: by its flag, or by its name in 1.16 */
		assert_int_equal(sfu_gopclntab__func(t, 2, &f), 0);
		assert_true(f.flags & GO_FUNC_TOPFRAME);
		for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
			int32_t delta = -1;

			assert_int_equal(sfu_gopclntab__find(t, TEXT + probes[i].off, &f), 0);
			assert_string_equal(f.name, fake[probes[i].func].name);
			assert_int_equal(sfu_gopclntab__spdelta(t, &f, TEXT + probes[i].off, &delta, NULL), 0);
			assert_int_equal(delta, probes[i].delta);
		}
		assert_int_equal(sfu_gopclntab__find(t, TEXT - 1, &f), -ENOENT);
		assert_int_equal(sfu_gopclntab__find(t, TEXT + 0x70, &f), -ENOENT);
		assert_int_equal(sfu_gopclntab__pcdata(t, &f, GO_PCDATA_INLTREE_INDEX, TEXT, &(int32_t){ 0 }),
				 -ENOENT);
		sfu_gopclntab__free(t);
	}
}

/* Every lookup a caller can make, on a table that decoded: bounded, never out of bounds. */
static void exercise(const struct sfu_gopclntab *t)
{
	size_t n = sfu_gopclntab__count(t);
	struct go_func f;
	uint64_t v;
	int32_t d;

	for (size_t i = 0; i < n && i < 64; i++) {
		if (sfu_gopclntab__func(t, i, &f))
			continue;
		for (uint64_t pc = f.entry; pc < f.end && pc < f.entry + 0x80; pc++) {
			(void)sfu_gopclntab__spdelta(t, &f, pc, &d, NULL);
			(void)sfu_gopclntab__pcdata(t, &f, GO_PCDATA_INLTREE_INDEX, pc, &d);
		}
		(void)sfu_gopclntab__funcdata(t, &f, GO_FUNCDATA_INLTREE, &v);
	}
	for (uint64_t pc = TEXT - 2; pc < TEXT + 0x80; pc += 3)
		if (!sfu_gopclntab__find(t, pc, &f))
			(void)sfu_gopclntab__spdelta(t, &f, pc, &d, NULL);
}

static void test_damaged(void **state)
{
	static const unsigned versions[] = { 116, 118, 120 };

	(void)state;
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		struct sfu_gopclntab *t;
		struct buf b;

		build_table(versions[v], &b);
		/* every truncation: a header cut short, or tables that end early */
		for (size_t len = 0; len <= b.len; len++) {
			uint8_t *copy = memdup_exact_or_fail(b.b, len);

			t = sfu_gopclntab__new(copy, len, 0, NULL);
			free(copy);
			if (len < 8 + (versions[v] == 116 ? 7 : 8) * 8)
				assert_null(t);
			if (t)
				exercise(t);
			sfu_gopclntab__free(t);
		}
		/* every byte flipped */
		for (size_t i = 0; i < b.len; i++) {
			uint8_t *copy = memdup_exact_or_fail(b.b, b.len);

			copy[i] ^= 0xff;
			t = sfu_gopclntab__new(copy, b.len, 0, NULL);
			free(copy);
			if (t)
				exercise(t);
			sfu_gopclntab__free(t);
		}
		/* what the header checks refuse, and why */
		{
			static const struct {
				size_t at;
				uint8_t byte;
				int err;
			} bad[] = {
				{ 0, 0x00, ENOTSUP },	/* magic */
				{ 4, 0x01, EBADMSG },	/* padding */
				{ 6, 0x03, EBADMSG },	/* pc quantum */
				{ 7, 0x02, EBADMSG },	/* pointer size */
				{ 15, 0x7f, EBADMSG },	/* nfunc: far more than fit */
			};

			for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
				struct sfu_diag diag = { 0 };
				struct buf c = b;

				c.b[bad[i].at] = bad[i].byte;
				errno = 0;
				assert_null(sfu_gopclntab__new(c.b, c.len, 0, &diag));
				assert_int_equal(errno, bad[i].err);
				assert_int_equal(diag.err, -bad[i].err);
				assert_true(diag.reason[0]);
			}
		}
		/* found by its magic behind other bytes, not by a magic alone */
		{
			uint8_t image[2048] = { 0 };
			size_t off = 0;

			memcpy(image + 8, "\xf0\xff\xff\xff", 4);	/* a magic with no header */
			memcpy(image + 256, b.b, b.len);
			assert_int_equal(sfu_gopclntab__scan(image, sizeof(image), &off), 0);
			assert_int_equal(off, 256);
			assert_int_equal(sfu_gopclntab__scan(image, 200, &off), -ENOENT);
		}
	}
}

/*
 * Inline trees reached through the moduledata, as in a stripped file: the
 * fuzz corpus's segments (gopclntab_seed.py), Go 1.18's 20-byte inlinedCall
 * with a parent index and 1.20's 16-byte one without, main.leaf inlined into
 * main.mid at +0x10 .. +0x18.
 */
static void test_inline_layouts(void **state)
{
	static const char *const seeds[] = { "go118-segment-inline", "go120-segment-inline" };

	(void)state;
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		char path[512];
		struct sfu_gopclntab *t;
		const char *names[4];
		uint64_t gofunc, start;
		struct go_func f;
		uint8_t *seg;
		int32_t delta;
		size_t len, off, n;
		FILE *fp;

		snprintf(path, sizeof(path), "%s/../fuzz/corpus/gopclntab/%s", SRCDIR, seeds[i]);
		fp = fopen(path, "rb");
		assert_non_null(fp);
		seg = malloc(4096);
		assert_non_null(seg);
		len = fread(seg, 1, 4096, fp);
		fclose(fp);
		assert_int_equal(sfu_gopclntab__scan(seg, len, &off), 0);
		assert_int_equal(off, 64);
		t = sfu_gopclntab__new_in(seg, len, 0x4a0000, off, len - off, 0, NULL);
		assert_non_null(t);
		assert_int_equal(sfu_gopclntab__find(t, TEXT + 0x30, &f), 0);
		assert_string_equal(f.name, "main.mid");
		/* no gofunc yet: the tree cannot be reached */
		assert_int_equal(sfu_gopclntab__inlined(t, &f, TEXT + 0x30, names, 4, &n), -ENOENT);
		assert_int_equal(sfu_gopclntab__find_gofunc(t, seg, len, &gofunc), 0);
		assert_int_equal(sfu_gopclntab__set_gofunc(t, gofunc, NULL, 0, 0), 0);
		for (uint64_t pc = f.entry; pc < f.end; pc++) {
			bool in = pc - f.entry >= 0x10 && pc - f.entry < 0x18;

			assert_int_equal(sfu_gopclntab__inlined(t, &f, pc, names, 4, &n), 0);
			assert_int_equal(n, in ? 1 : 0);
			if (in)
				assert_string_equal(names[0], "main.leaf");
		}
		/* where the frame's size starts to hold */
		assert_int_equal(sfu_gopclntab__spdelta(t, &f, TEXT + 0x30, &delta, &start), 0);
		assert_int_equal(delta, 0x28);
		assert_int_equal(start, TEXT + 0x24);
		/* a moduledata that names another table is not the one */
		seg[len - 41 * 8] ^= 0x08;
		assert_int_equal(sfu_gopclntab__find_gofunc(t, seg, len, &gofunc), -ENOENT);
		sfu_gopclntab__free(t);
		free(seg);
	}
}

/*
 * A Go program for @machine as far as the module reads one: a PT_LOAD and a
 * .gopclntab section holding the made-up 1.18 table, written to @path.
 */
static void write_go_elf(char *path, uint16_t machine)
{
	enum { TAB_OFF = 0x1000, TAB_ADDR = 0x401000 };	/* offset 0 at 0x400000 */
	static const char shstrtab[] = "\0.gopclntab\0.shstrtab";
	uint8_t image[0x2000] = { 0 };
	Elf64_Ehdr *eh = (Elf64_Ehdr *)image;
	Elf64_Phdr *ph = (Elf64_Phdr *)(image + sizeof(*eh));
	Elf64_Shdr *sh = (Elf64_Shdr *)(image + 0x200);
	size_t strs = 0x400, len;
	struct buf b;
	int fd;

	build_table(118, &b);
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = machine;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_shoff = 0x200;
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = 3;
	eh->e_shstrndx = 2;
	len = TAB_OFF + b.len;
	*ph = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0,
			    .p_vaddr = TAB_ADDR - TAB_OFF, .p_paddr = TAB_ADDR - TAB_OFF,
			    .p_filesz = len, .p_memsz = len, .p_align = 0x1000 };
	sh[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC,
			      .sh_addr = TAB_ADDR, .sh_offset = TAB_OFF, .sh_size = b.len,
			      .sh_addralign = 32 };
	sh[2] = (Elf64_Shdr){ .sh_name = 12, .sh_type = SHT_STRTAB, .sh_offset = strs,
			      .sh_size = sizeof(shstrtab), .sh_addralign = 1 };
	memcpy(image + strs, shstrtab, sizeof(shstrtab));
	memcpy(image + TAB_OFF, b.b, b.len);
	strcpy(path, "/tmp/test_gopclntab_elf_XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, image, len), (ssize_t)len);
	close(fd);
}

/*
 * AArch64: main.leaf frameless (its RA in the link register), main.mid 0x28
 * bytes deep from +0x24 with the LR at its SP and the caller's FP below it,
 * runtime.goexit ending the stack; what the made-up table says, in an ELF
 * file the module opens.
 */
static void test_go_aarch64(void **state)
{
	SFU_OPTS(sfu_unwind_opts, opts, .arch = SFU_ARCH_AARCH64);
	uint64_t stack[16] = { 0 }, base = 0x7ffd0010;
	struct sfu_snapshot snap = { .base = base - 16, .data = (uint8_t *)stack,
				     .size = sizeof(stack) };
	struct sfu_regs regs = { .pc = TEXT + 0x04, .sp = base, .fp = 0x1111, .lr = TEXT + 0x30 };
	struct sfu_frame frames[8];
	struct sfu_addrspace *as;
	struct sfu_module *m;
	struct sfu_lookup l;
	struct sfu_step step;
	char path[64];
	size_t n;

	(void)state;
	write_go_elf(path, EM_AARCH64);
	m = sfu_module__open(path, NULL);
	unlink(path);
	assert_non_null(m);
	assert_int_equal(sfu_module__go_func_count(m), NFAKE);
	as = sfu_addrspace__new(NULL, NULL);
	assert_non_null(as);
	assert_int_equal(sfu_addrspace__add(as, 0x400000, 0x500000, 0, PROT_READ | PROT_EXEC, NULL, m),
			 0);
	/* main.mid's frame: the LR at its SP (base), the FP it was called with below it */
	stack[1] = 0x7777;			/* base - 8 */
	stack[2] = TEXT + 0x64;		/* base: into runtime.goexit */
	assert_int_equal(sfu_unwind(as, &opts, &regs, sfu_snapshot_read, &snap, frames, 8, &n),
			 SFU_STOP_OUTERMOST);
	assert_int_equal(n, 3);
	assert_int_equal(frames[1].addr, TEXT + 0x30);
	assert_int_equal(frames[2].addr, TEXT + 0x64);
	assert_int_equal(frames[1].source, SFU_SRC_GOPCLNTAB);
	/* main.mid's step on its own: the CFA 0x28 up, its frame record's FP read */
	regs = (struct sfu_regs){ .pc = TEXT + 0x30, .sp = base, .fp = base - 8 };
	assert_int_equal(sfu_unwind_step(as, &opts, &regs, 0, sfu_snapshot_read, &snap, &step), 0);
	assert_int_equal(step.regs.pc, TEXT + 0x64);
	assert_int_equal(step.regs.sp, base + 0x28);
	assert_int_equal(step.regs.fp, 0x7777);
	/* past frame 0, a frameless function's RA is nowhere: the link register was reused */
	regs = (struct sfu_regs){ .pc = TEXT + 0x08, .sp = base, .lr = TEXT + 0x30 };
	assert_int_equal(sfu_unwind_step(as, &opts, &regs, 0, sfu_snapshot_read, &snap, &step),
			 SFU_STOP_BAD_INFO);
	/* the rows a debugger is shown */
	assert_int_equal(sfu_unwind_lookup(as, TEXT + 0x2f, &l), 0);
	assert_int_equal(l.row->cfa.offset, 0x28);
	assert_int_equal(l.row->ra.kind, SFU_LOC_AT_CFA);
	assert_int_equal(l.row->ra.offset, -0x28);
	assert_int_equal(sfu_unwind_lookup(as, TEXT + 0x04, &l), 0);
	assert_int_equal(l.row->ra.kind, SFU_LOC_IN_REG);
	assert_int_equal(sfu_unwind_lookup(as, TEXT + 0x64, &l), 0);
	assert_int_equal(l.row->ra.kind, SFU_LOC_UNDEFINED);
	/* the same file for x86-64: the RA just above the frame, main.mid's at +0x28 */
	sfu_addrspace__free(as);
	sfu_module__put(m);
	write_go_elf(path, EM_X86_64);
	m = sfu_module__open(path, NULL);
	unlink(path);
	assert_non_null(m);
	as = sfu_addrspace__new(NULL, NULL);
	assert_non_null(as);
	assert_int_equal(sfu_addrspace__add(as, 0x400000, 0x500000, 0, PROT_READ | PROT_EXEC, NULL, m),
			 0);
	memset(stack, 0, sizeof(stack));
	stack[2] = TEXT + 0x30;			/* main.leaf's RA, at its SP */
	stack[2 + 1 + 0x28 / 8] = TEXT + 0x64;	/* main.mid's, above its 0x28 bytes */
	opts.arch = SFU_ARCH_X86_64;
	regs = (struct sfu_regs){ .pc = TEXT + 0x04, .sp = base };
	assert_int_equal(sfu_unwind(as, &opts, &regs, sfu_snapshot_read, &snap, frames, 8, &n),
			 SFU_STOP_OUTERMOST);
	assert_int_equal(n, 3);
	assert_int_equal(frames[1].addr, TEXT + 0x30);
	assert_int_equal(frames[2].addr, TEXT + 0x64);
	sfu_addrspace__free(as);
	sfu_module__put(m);
}

/* ---- real Go programs ---- */

struct nm_sym {
	uint64_t addr;
	char name[160];
};

struct nm_syms {
	struct nm_sym *s;
	size_t n;
};

/* go tool nm's text symbols of @path: the oracle for names and entries. */
static bool go_nm(const char *path, struct nm_syms *out)
{
	char cmd[1024], line[512];
	size_t cap = 0;
	FILE *p;

	out->s = NULL;
	out->n = 0;
	snprintf(cmd, sizeof(cmd), "'%s' tool nm '%s'", GO_PROG, path);
	p = popen(cmd, "r");
	if (!p)
		return false;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long addr;
		char type, *name;
		int at = 0;

		/* "ADDR TYPE NAME": a name may hold spaces ("type..eq.struct { ... }") */
		if (sscanf(line, "%llx %c %n", &addr, &type, &at) != 2 || !at ||
		    (type != 'T' && type != 't'))
			continue;
		name = line + at;
		name[strcspn(name, "\n")] = 0;
		if (out->n == cap) {
			cap = cap ? 2 * cap : 4096;
			out->s = realloc(out->s, cap * sizeof(*out->s));
			assert_non_null(out->s);
		}
		out->s[out->n].addr = addr;
		snprintf(out->s[out->n].name, sizeof(out->s[out->n].name), "%s", name);
		out->n++;
	}
	return pclose(p) == 0 && out->n;
}

/*
 * Whether symbol @sym is Go's @name: the same, or the symbol of an ABI0
 * (assembly) body ("runtime.sigreturn.abi0"), where Go's table shortens an
 * array length to "[...]" ("type..eq.[...]runtime.Frame" for "[2]").
 */
static bool same_go_name(const char *sym, const char *name)
{
	while (*name) {
		if (!strncmp(name, "[...]", 5) && *sym == '[') {
			size_t digits = strspn(sym + 1, "0123456789");

			if (!digits || sym[1 + digits] != ']')
				return false;
			sym += digits + 2;
			name += 5;
			continue;
		}
		if (*sym++ != *name++)
			return false;
	}
	return !*sym || !strcmp(sym, ".abi0");
}

/* Whether nm names @name at @addr. */
static bool nm_has(const struct nm_syms *nm, uint64_t addr, const char *name)
{
	for (size_t i = 0; i < nm->n; i++)
		if (nm->s[i].addr == addr && same_go_name(nm->s[i].name, name))
			return true;
	return false;
}

static bool have_go(void)
{
	return GO_FIXTURE[0] && !access(GO_FIXTURE, R_OK) && !access(GO_FIXTURE_STRIPPED, R_OK) &&
	       !access(GO_FIXTURE_PIE, R_OK);
}

/* The bytes of @path, and a copy with no section headers (as sstrip leaves a file). */
static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	data = malloc((size_t)n);
	assert_non_null(data);
	assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return data;
}

/*
 * Every function's name and entry in Go's table are go tool nm's: in the
 * plain build, the -s build and a copy of it without section headers (found
 * by its magic) against the plain build's symbols; in a PIE build (the
 * table in .data.rel.ro.gopclntab) against its own.
 */
static void test_go_names(void **state)
{
	const char *paths[] = { GO_FIXTURE, GO_FIXTURE_STRIPPED, NULL, GO_FIXTURE_PIE };
	char sstripped[] = "/tmp/test_gopclntab_XXXXXX";
	struct nm_syms nm, nm_pie;
	size_t count = 0;

	(void)state;
	if (!have_go())
		skip();
	/* the oracle: go tool nm of the program with its symbols */
	assert_true(go_nm(GO_FIXTURE, &nm));
	assert_true(go_nm(GO_FIXTURE_PIE, &nm_pie));
	{
		size_t len;
		uint8_t *image = read_file(GO_FIXTURE_STRIPPED, &len);
		Elf64_Ehdr *eh = (Elf64_Ehdr *)image;
		int fd = mkstemp(sstripped);

		assert_true(fd >= 0);
		eh->e_shoff = 0;
		eh->e_shnum = 0;
		eh->e_shstrndx = 0;
		assert_int_equal(write(fd, image, len), (ssize_t)len);
		close(fd);
		free(image);
		paths[2] = sstripped;
	}
	for (size_t p = 0; p < 4; p++) {
		const struct nm_syms *oracle = p == 3 ? &nm_pie : &nm;
		struct sfu_diag diag = { 0 };
		struct sfu_module *m = sfu_module__open(paths[p], &diag);
		size_t n, missing = 0;
		struct sfu_go_func f, g;
		bool leaf = false;

		if (!m)
			fail_msg("%s: %s", paths[p], diag.reason);
		n = sfu_module__go_func_count(m);
		assert_true(n > 1000);
		if (p == 0)
			count = n;
		if (p < 3)
			assert_int_equal(n, count);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(sfu_module__go_func_at(m, i, &f), 0);
			if (!nm_has(oracle, f.entry, f.name)) {
				if (missing++ < 5)
					print_error("%s: %s at %#llx: not in go tool nm\n", paths[p],
						    f.name, (unsigned long long)f.entry);
			}
			assert_int_equal(sfu_module__go_func(m, f.entry + (f.end - f.entry) / 2, &g), 0);
			assert_int_equal(g.entry, f.entry);
			if (!strcmp(f.name, "main.goLeaf"))
				leaf = true;
		}
		assert_int_equal(missing, 0);
		assert_true(leaf);
		sfu_module__put(m);
	}
	unlink(sstripped);
	free(nm.s);
	free(nm_pie.s);
}

/* The first `call rel32` in [start, end) of @image (at ELF address @base) to @target: its return address. */
static uint64_t call_site(const uint8_t *code, uint64_t start, uint64_t end, uint64_t target)
{
	for (uint64_t pc = start; pc + 5 <= end; pc++) {
		int32_t rel;

		if (code[pc - start] != 0xe8)
			continue;
		memcpy(&rel, code + (pc - start) + 1, 4);
		if (pc + 5 + (int64_t)rel == target)
			return pc + 5;
	}
	return 0;
}

/* The bytes at ELF address @vaddr of a non-PIE program's file image. */
static const uint8_t *code_at(const uint8_t *image, uint64_t vaddr)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)image;

	for (unsigned i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(image + eh->e_phoff + i * eh->e_phentsize);

		if (ph->p_type == PT_LOAD && vaddr >= ph->p_vaddr && vaddr < ph->p_vaddr + ph->p_filesz)
			return image + ph->p_offset + (vaddr - ph->p_vaddr);
	}
	return NULL;
}

static void find_go(const struct sfu_module *m, const char *name, struct sfu_go_func *out)
{
	size_t n = sfu_module__go_func_count(m);

	for (size_t i = 0; i < n; i++)
		if (!sfu_module__go_func_at(m, i, out) && !strcmp(out->name, name))
			return;
	fail_msg("%s: not in the Go table", name);
}

/*
 * SP deltas against the instructions (goMid's `sub $N, %rsp`), and an unwind
 * of a stack laid out as the program makes it: goLeaf (frameless) > goMid >
 * goTop > main.main > runtime.goexit, which ends it.
 */
static void test_go_unwind(void **state)
{
	const struct sfu_gopclntab *t;
	struct sfu_go_func leaf, mid, top, mmain, goexit;
	SFU_OPTS(sfu_unwind_opts, opts, .arch = SFU_ARCH_X86_64);
	uint64_t stack[2048] = { 0 }, sub_pc = 0, ra_mid, ra_top, ra_main, sp, base = 0x7ffd0000;
	struct sfu_snapshot snap = { .base = base, .data = (uint8_t *)stack, .size = sizeof(stack) };
	struct sfu_frame frames[16];
	struct sfu_addrspace *as;
	struct sfu_module *m;
	const uint8_t *code;
	struct go_func gf;
	uint32_t frame = 0;
	int32_t delta;
	uint8_t *image;
	size_t len, n;

	(void)state;
	if (!have_go())
		skip();
	image = read_file(GO_FIXTURE_STRIPPED, &len);
	m = sfu_module__open(GO_FIXTURE_STRIPPED, NULL);
	assert_non_null(m);
	t = sfu_module__gopclntab(m, NULL);
	assert_non_null(t);
	find_go(m, "main.goLeaf", &leaf);
	find_go(m, "main.goMid", &mid);
	find_go(m, "main.goTop", &top);
	find_go(m, "main.main", &mmain);
	find_go(m, "runtime.goexit", &goexit);
	assert_true(goexit.flags & SFU_GO_FUNC_TOPFRAME);

	/* goLeaf never moves the SP; its table ends where the int3 padding to the next function starts */
	assert_int_equal(sfu_gopclntab__find(t, leaf.entry, &gf), 0);
	code = code_at(image, leaf.entry);
	assert_non_null(code);
	for (uint64_t pc = leaf.entry; pc < leaf.end; pc++) {
		int err = sfu_gopclntab__spdelta(t, &gf, pc, &delta, NULL);

		if (pc - leaf.entry < 16 || code[pc - leaf.entry] != 0xcc) {
			assert_int_equal(err, 0);
			assert_int_equal(delta, 0);
		} else if (err) {
			assert_int_equal(err, -ENOENT);
		}
	}
	/* goMid: 0 up to its `sub $N, %rsp`, N after it */
	code = code_at(image, mid.entry);
	assert_non_null(code);
	for (uint64_t pc = mid.entry; pc + 7 <= mid.end; pc++) {
		const uint8_t *c = code + (pc - mid.entry);

		if (c[0] == 0x48 && c[1] == 0x81 && c[2] == 0xec) {
			memcpy(&frame, c + 3, 4);
			sub_pc = pc;
			break;
		}
	}
	assert_true(sub_pc && frame);
	assert_int_equal(sfu_gopclntab__find(t, sub_pc, &gf), 0);
	assert_int_equal(sfu_gopclntab__spdelta(t, &gf, sub_pc, &delta, NULL), 0);
	assert_int_equal(delta, 0);
	assert_int_equal(sfu_gopclntab__spdelta(t, &gf, sub_pc + 7, &delta, NULL), 0);
	assert_int_equal(delta, (int32_t)frame);

	/* the return addresses the calls leave, and the frames between them */
	ra_mid = call_site(code, mid.entry, mid.end, leaf.entry);
	ra_top = call_site(code_at(image, top.entry), top.entry, top.end, mid.entry);
	ra_main = call_site(code_at(image, mmain.entry), mmain.entry, mmain.end, top.entry);
	assert_true(ra_mid && ra_top && ra_main);
	sp = base;
	stack[0] = ra_mid;	/* goLeaf's RA, at its SP */
	for (int k = 0; k < 3; k++) {
		uint64_t ra = k == 0 ? ra_mid : k == 1 ? ra_top : ra_main;
		uint64_t next = k == 0 ? ra_top : k == 1 ? ra_main : goexit.entry + 1;

		assert_int_equal(sfu_gopclntab__find(t, ra - 1, &gf), 0);
		assert_int_equal(sfu_gopclntab__spdelta(t, &gf, ra - 1, &delta, NULL), 0);
		sp += 8 + (uint64_t)delta;
		assert_true(sp - base + 8 <= sizeof(stack));
		stack[(sp - base) / 8] = next;
	}
	as = sfu_addrspace__new(NULL, NULL);
	assert_non_null(as);
	assert_int_equal(sfu_addrspace__add(as, 0x400000, 0x1000000, 0, PROT_READ | PROT_EXEC, NULL, m),
			 0);
	{
		struct sfu_regs regs = { .pc = leaf.entry + 4, .sp = base, .fp = 0x1234 };

		assert_int_equal(sfu_unwind(as, &opts, &regs, sfu_snapshot_read, &snap, frames, 16, &n),
				 SFU_STOP_OUTERMOST);
	}
	assert_int_equal(n, 5);
	assert_int_equal(frames[1].addr, ra_mid);
	assert_int_equal(frames[2].addr, ra_top);
	assert_int_equal(frames[3].addr, ra_main);
	assert_int_equal(frames[4].addr, goexit.entry + 1);
	for (size_t i = 1; i < n; i++)
		assert_int_equal(frames[i].source, SFU_SRC_GOPCLNTAB);
	assert_string_equal(sfu_source_name(SFU_SRC_GOPCLNTAB), "gopclntab");
	/* what a debugger asks: the function and the row for goMid's call */
	{
		struct sfu_lookup l;

		assert_int_equal(sfu_unwind_lookup(as, ra_mid - 1, &l), 0);
		assert_int_equal(l.source, SFU_SRC_GOPCLNTAB);
		assert_int_equal(l.func_start, mid.entry);
		assert_int_equal(l.func_end, mid.end);
		assert_non_null(l.row);
		assert_int_equal(l.row->cfa.offset, (int32_t)frame + 8);
		assert_int_equal(l.row->ra.kind, SFU_LOC_AT_CFA);
		/* the frame's size holds from the instruction after the `sub` */
		assert_int_equal(l.row_start, sub_pc + 7);
		assert_null(l.fde);
	}
	/*
	 * Go's signal handler returns to runtime.sigreturn's first byte, with the
	 * SP at the kernel's ucontext: the interrupted registers are there
	 * (uc_mcontext after 40 bytes: rbp, rsp, rip at gregs 10, 15, 16).
	 */
	{
		struct sfu_go_func sigreturn;
		uint64_t uc = base + 0x1000;
		struct sfu_regs regs;
		struct sfu_step step;

		find_go(m, "runtime.sigreturn", &sigreturn);
		memset(stack, 0, sizeof(stack));
		stack[(uc - base + 40) / 8 + 10] = 0x5555;
		stack[(uc - base + 40) / 8 + 15] = base;
		stack[(uc - base + 40) / 8 + 16] = leaf.entry + 4;
		regs = (struct sfu_regs){ .pc = sigreturn.entry, .sp = uc };
		assert_int_equal(sfu_unwind_step(as, &opts, &regs, 0, sfu_snapshot_read, &snap, &step), 0);
		assert_int_equal(step.regs.pc, leaf.entry + 4);
		assert_int_equal(step.regs.sp, base);
		assert_int_equal(step.regs.fp, 0x5555);
		assert_int_equal(step.kind, SFU_FRAME_PC);
		assert_int_equal(step.source, SFU_SRC_GOPCLNTAB);
		/* a stack that ends in runtime.mstart (a thread's) is whole too */
		find_go(m, "runtime.mstart", &goexit);
		regs = (struct sfu_regs){ .pc = goexit.entry + 5, .sp = base };
		assert_int_equal(sfu_unwind_step(as, &opts, &regs, 0, sfu_snapshot_read, &snap, &step),
				 SFU_STOP_OUTERMOST);
	}
	sfu_addrspace__free(as);
	sfu_module__put(m);
	free(image);
}

/* Whether @wrapper is the method wrapper Go makes for value method @method: pkg.(*T).M for pkg.T.M. */
static bool wrapper_of(const char *wrapper, const char *method)
{
	const char *star = strstr(wrapper, "(*"), *close;
	size_t pre;

	if (!star || !(close = strstr(star, ").")))
		return false;
	pre = (size_t)(star - wrapper);
	return !strncmp(method, wrapper, pre) &&
	       !strncmp(method + pre, star + 2, (size_t)(close - star - 2)) &&
	       !strcmp(method + pre + (close - star - 2), close + 1);
}

struct inline_counts {
	size_t checked, inlined, wrappers, differ;
};

/* Go's inline tree of @mods at every 16th byte of their text against @oracle's DWARF. */
static void compare_with_dwarf(const char *oracle, struct sfu_module *const *mods,
			       const char *const *paths, size_t nmods, struct inline_counts *c)
{
	char addrs[] = "/tmp/test_gopclntab_addrs_XXXXXX", cmd[1024], line[1024];
	struct sfu_go_func first, last;
	uint64_t lo, hi;
	FILE *f, *p;
	size_t n;
	int fd;

	n = sfu_module__go_func_count(mods[0]);
	assert_int_equal(sfu_module__go_func_at(mods[0], 0, &first), 0);
	assert_int_equal(sfu_module__go_func_at(mods[0], n - 1, &last), 0);
	lo = first.entry;
	hi = last.end;
	fd = mkstemp(addrs);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	for (uint64_t a = lo; a < hi; a += 16)
		fprintf(f, "%#llx\n", (unsigned long long)a);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "'%s' --obj='%s' --functions=linkage --no-demangle < '%s'",
		 LLVM_SYMBOLIZER, oracle, addrs);
	p = popen(cmd, "r");
	assert_non_null(p);
	for (uint64_t a = lo; a < hi; a += 16) {
		const char *want[16], *got[16];
		char names[16][160];
		size_t nwant = 0, ngot;

		/* one block per address: function and location lines, innermost first, then a blank */
		while (fgets(line, sizeof(line), p) && line[0] != '\n') {
			line[strcspn(line, "\n")] = 0;
			if (nwant < 16)
				snprintf(names[nwant], sizeof(names[0]), "%.159s", line);
			if (!fgets(line, sizeof(line), p))
				break;
			if (nwant < 16) {
				want[nwant] = names[nwant];
				nwant++;
			}
		}
		if (!nwant || !strcmp(want[nwant - 1], "??"))
			continue;	/* no DWARF for it (an assembly body, autogenerated code) */
		for (size_t i = 0; i < nmods; i++) {
			bool same;

			if (sfu_module__go_inlined(mods[i], a, got, 16, &ngot))
				ngot = 0;
			same = ngot == nwant;
			for (size_t k = 0; same && k < ngot; k++)
				same = same_go_name(want[k], got[k]);
			/* Go writes no DWARF for what it inlines into an autogenerated wrapper */
			if (!same && nwant == 1 && ngot == 2 && same_go_name(want[0], got[1]) &&
			    wrapper_of(got[1], got[0])) {
				c->wrappers++;
				continue;
			}
			c->checked++;
			c->inlined += nwant > 1;
			if (!same && c->differ++ < 5)
				print_error("%s: %#llx: Go's inline tree says %s (%zu frames), DWARF %s (%zu)\n",
					    paths[i], (unsigned long long)a, ngot ? got[0] : "nothing", ngot,
					    want[0], nwant);
		}
	}
	pclose(p);
	unlink(addrs);
}

/*
 * Go's inline tree against the DWARF of the same build (llvm-symbolizer's
 * inlined frames): the plain build, the -s build (the same code, no
 * symbols) against the plain build's answers, and a PIE (the table in RELRO,
 * go:func.* in .rodata) against its own.
 */
static void test_go_inlined(void **state)
{
	const char *paths[] = { GO_FIXTURE, GO_FIXTURE_STRIPPED, GO_FIXTURE_PIE };
	struct inline_counts c = { 0 };
	struct sfu_module *m[3];
	size_t n;

	(void)state;
	if (!have_go() || !LLVM_SYMBOLIZER[0])
		skip();
	for (int i = 0; i < 3; i++) {
		m[i] = sfu_module__open(paths[i], NULL);
		assert_non_null(m[i]);
	}
	compare_with_dwarf(GO_FIXTURE, m, paths, 2, &c);
	compare_with_dwarf(GO_FIXTURE_PIE, m + 2, paths + 2, 1, &c);
	print_message("%zu addresses, %zu of them in inlined code, %zu in wrappers DWARF has no "
		      "inlined frames for, %zu differ\n", c.checked, c.inlined, c.wrappers, c.differ);
	assert_true(c.inlined > 100);
	assert_int_equal(c.differ, 0);
	/* goStep, inlined into goLeaf's loop */
	{
		struct sfu_go_func leaf;
		const char *got[4];
		bool seen = false;

		find_go(m[1], "main.goLeaf", &leaf);
		for (uint64_t a = leaf.entry; a < leaf.end; a++)
			if (!sfu_module__go_inlined(m[1], a, got, 4, &n) && n == 2) {
				assert_string_equal(got[0], "main.goStep");
				assert_string_equal(got[1], "main.goLeaf");
				seen = true;
			}
		assert_true(seen);
		/* an unwinder's open keeps the table alone: names, no inline trees, less memory */
		{
			struct sfu_module *u = sfu_module__open_flags(GO_FIXTURE_STRIPPED,
								      SFU_MODULE_OPEN_NO_SYMBOLS, NULL);
			struct sfu_go_func g;

			assert_non_null(u);
			assert_int_equal(sfu_module__go_func_count(u), sfu_module__go_func_count(m[1]));
			assert_int_equal(sfu_module__go_func(u, leaf.entry, &g), 0);
			assert_string_equal(g.name, "main.goLeaf");
			for (uint64_t a = leaf.entry; a < leaf.end; a++)
				if (!sfu_module__go_inlined(m[1], a, got, 4, &n) && n == 2)
					assert_int_equal(sfu_module__go_inlined(u, a, got, 4, &n), -ENOENT);
			assert_true(sfu_module__memory(u) < sfu_module__memory(m[1]));
			sfu_module__put(u);
		}
	}
	sfu_module__put(m[0]);
	sfu_module__put(m[1]);
	sfu_module__put(m[2]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layouts),
		cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_inline_layouts),
		cmocka_unit_test(test_go_aarch64),
		cmocka_unit_test(test_go_names),
		cmocka_unit_test(test_go_unwind),
		cmocka_unit_test(test_go_inlined),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
