/* SPDX-License-Identifier: BSD-2-Clause */
/* Address space tests: lookups at mapping edges, mmap-like replacement, maps parsing, this process. */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define RX (PROT_READ | PROT_EXEC)
#define RW (PROT_READ | PROT_WRITE)

/* A mapping as a test expects it; path NULL for anonymous. */
struct want_map {
	uint64_t start, end, file_offset;
	const char *path;
};

static void _assert_mappings(const struct sfu_addrspace *as, const struct want_map *want,
			     size_t n, const char *file, int line)
{
	size_t count;
	const struct sfu_mapping *maps = sfu_addrspace__mappings(as, &count);

	for (size_t i = 0; i < count || i < n; i++) {
		const struct sfu_mapping *g = i < count ? &maps[i] : NULL;
		const struct want_map *w = i < n ? &want[i] : NULL;

		if (g && w && g->start == w->start && g->end == w->end &&
		    g->file_offset == w->file_offset &&
		    (g->path && w->path ? !strcmp(g->path, w->path) : g->path == w->path))
			continue;
		print_error("mapping %zu: got ", i);
		if (g)
			print_error("%#llx-%#llx @%#llx %s", (unsigned long long)g->start,
				    (unsigned long long)g->end, (unsigned long long)g->file_offset,
				    g->path ? g->path : "(anon)");
		else
			print_error("none");
		print_error(", want ");
		if (w)
			print_error("%#llx-%#llx @%#llx %s\n", (unsigned long long)w->start,
				    (unsigned long long)w->end, (unsigned long long)w->file_offset,
				    w->path ? w->path : "(anon)");
		else
			print_error("none\n");
		_fail(file, line);
	}
}
#define assert_mappings(as, want, n) _assert_mappings(as, want, n, __FILE__, __LINE__)

/* An address space whose root holds nothing, so no path opens. */
static struct sfu_addrspace *empty_root_addrspace(void)
{
	struct sfu_addrspace *as = sfu_addrspace__new(NULL, "/nonexistent-sfu-root");

	assert_non_null(as);
	return as;
}

static void add_all(struct sfu_addrspace *as, const struct want_map *maps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert_int_equal(sfu_addrspace__add(as, maps[i].start, maps[i].end,
						    maps[i].file_offset, RX, maps[i].path, NULL),
				 0);
}

static void test_find_edges(void **state)
{
	static const struct want_map maps[] = {
		{ 0, 0x1000, 0, "zero" },
		{ 0x1000, 0x2000, 0, "adjacent" },
		{ 0x5000, 0x5001, 0, "one byte" },
		{ 0x10000, 0x20000, 0x3000, "big" },
		{ 0xfffffffffffff000ull, UINT64_MAX, 0, "top" },
	};
	struct sfu_addrspace *as = empty_root_addrspace();

	(void)state;
	assert_null(sfu_addrspace__find(as, 0));
	assert_null(sfu_addrspace__find(as, UINT64_MAX));
	add_all(as, maps, ARRAY_SIZE(maps));
	assert_mappings(as, maps, ARRAY_SIZE(maps));

	for (size_t i = 0; i < ARRAY_SIZE(maps); i++) {
		const struct sfu_mapping *m;
		const uint64_t probes[] = { maps[i].start, maps[i].end - 1, maps[i].end,
					    maps[i].start - 1, maps[i].start + (maps[i].end - maps[i].start) / 2 };

		for (size_t k = 0; k < ARRAY_SIZE(probes); k++) {
			uint64_t addr = probes[k];
			const char *want = NULL;

			for (size_t j = 0; j < ARRAY_SIZE(maps); j++)
				if (addr >= maps[j].start && addr < maps[j].end)
					want = maps[j].path;
			m = sfu_addrspace__find(as, addr);
			if (!want && m)
				fail_msg("0x%llx: found %s, want none", (unsigned long long)addr,
					 m->path);
			if (want && (!m || strcmp(m->path, want)))
				fail_msg("0x%llx: found %s, want %s", (unsigned long long)addr,
					 m ? m->path : "none", want);
		}
	}
	assert_null(sfu_addrspace__find(as, 0x2000));
	assert_null(sfu_addrspace__find(as, 0x4fff));
	assert_null(sfu_addrspace__find(as, 0x5001));
	sfu_addrspace__free(as);
}

static void test_add_invalid(void **state)
{
	struct sfu_addrspace *as = empty_root_addrspace();
	size_t count;

	(void)state;
	assert_int_equal(sfu_addrspace__add(as, 0x2000, 0x2000, 0, RX, NULL, NULL), -EINVAL);
	assert_int_equal(sfu_addrspace__add(as, 0x2000, 0x1000, 0, RX, NULL, NULL), -EINVAL);
	sfu_addrspace__mappings(as, &count);
	assert_int_equal(count, 0);
	sfu_addrspace__free(as);
	sfu_addrspace__free(NULL);
}

static void test_add_overlap(void **state)
{
	static const struct want_map base[] = {
		{ 0x1000, 0x3000, 0x0, "a" },
		{ 0x4000, 0x6000, 0x10000, "b" },
		{ 0x6000, 0x8000, 0x20000, "c" },
	};
	static const struct {
		const char *name;
		struct want_map add;
		struct want_map want[6];
		size_t n;
	} cases[] = {
		{ "in a gap", { 0x3000, 0x4000, 0x500, "new" }, {
			{ 0x1000, 0x3000, 0x0, "a" }, { 0x3000, 0x4000, 0x500, "new" },
			{ 0x4000, 0x6000, 0x10000, "b" }, { 0x6000, 0x8000, 0x20000, "c" } }, 4 },
		{ "before all", { 0x0, 0x1000, 0x0, "new" }, {
			{ 0x0, 0x1000, 0x0, "new" }, { 0x1000, 0x3000, 0x0, "a" },
			{ 0x4000, 0x6000, 0x10000, "b" }, { 0x6000, 0x8000, 0x20000, "c" } }, 4 },
		{ "after all", { 0x8000, 0x9000, 0x0, "new" }, {
			{ 0x1000, 0x3000, 0x0, "a" }, { 0x4000, 0x6000, 0x10000, "b" },
			{ 0x6000, 0x8000, 0x20000, "c" }, { 0x8000, 0x9000, 0x0, "new" } }, 4 },
		{ "same range", { 0x4000, 0x6000, 0x700, "new" }, {
			{ 0x1000, 0x3000, 0x0, "a" }, { 0x4000, 0x6000, 0x700, "new" },
			{ 0x6000, 0x8000, 0x20000, "c" } }, 3 },
		{ "inside one: split", { 0x1800, 0x2000, 0x700, "new" }, {
			{ 0x1000, 0x1800, 0x0, "a" }, { 0x1800, 0x2000, 0x700, "new" },
			{ 0x2000, 0x3000, 0x1000, "a" },
			{ 0x4000, 0x6000, 0x10000, "b" }, { 0x6000, 0x8000, 0x20000, "c" } }, 5 },
		{ "head of one", { 0x800, 0x2000, 0x700, "new" }, {
			{ 0x800, 0x2000, 0x700, "new" }, { 0x2000, 0x3000, 0x1000, "a" },
			{ 0x4000, 0x6000, 0x10000, "b" }, { 0x6000, 0x8000, 0x20000, "c" } }, 4 },
		{ "tail of one", { 0x2000, 0x3800, 0x700, "new" }, {
			{ 0x1000, 0x2000, 0x0, "a" }, { 0x2000, 0x3800, 0x700, "new" },
			{ 0x4000, 0x6000, 0x10000, "b" }, { 0x6000, 0x8000, 0x20000, "c" } }, 4 },
		{ "across two", { 0x5000, 0x7000, 0x700, "new" }, {
			{ 0x1000, 0x3000, 0x0, "a" }, { 0x4000, 0x5000, 0x10000, "b" },
			{ 0x5000, 0x7000, 0x700, "new" }, { 0x7000, 0x8000, 0x21000, "c" } }, 4 },
		{ "across all, trimming", { 0x2000, 0x7000, 0x700, NULL }, {
			{ 0x1000, 0x2000, 0x0, "a" }, { 0x2000, 0x7000, 0x700, NULL },
			{ 0x7000, 0x8000, 0x21000, "c" } }, 3 },
		{ "over all", { 0x0, 0x10000, 0x0, "new" }, {
			{ 0x0, 0x10000, 0x0, "new" } }, 1 },
		{ "exactly two", { 0x4000, 0x8000, 0x0, "new" }, {
			{ 0x1000, 0x3000, 0x0, "a" }, { 0x4000, 0x8000, 0x0, "new" } }, 2 },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct sfu_addrspace *as = empty_root_addrspace();

		print_message("  %s\n", cases[i].name);
		add_all(as, base, ARRAY_SIZE(base));
		add_all(as, &cases[i].add, 1);
		assert_mappings(as, cases[i].want, cases[i].n);
		sfu_addrspace__free(as);
	}
}

static const struct sfu_segment packed_segs[] = {
	/* -z noseparate-code: text and data share the file page at offset 0 */
	{ .vaddr = 0, .memsz = 0x8d0, .offset = 0, .filesz = 0x8d0, .flags = PF_R | PF_X },
	{ .vaddr = 0x1dd0, .memsz = 0x260, .offset = 0xdd0, .filesz = 0x250, .flags = PF_R | PF_W },
};

static void test_add_module_refs_and_bias(void **state)
{
	const uint64_t b = 0x7f0000000000ull;
	struct sfu_module *m = sfu_module__new("packed", NULL, EM_X86_64, packed_segs,
					       ARRAY_SIZE(packed_segs), NULL);
	struct sfu_addrspace *as = empty_root_addrspace();
	const struct sfu_mapping *maps;
	size_t count;

	(void)state;
	assert_non_null(m);
	assert_int_equal(sfu_addrspace__add(as, b, b + 0x1000, 0, RX, "/lib/packed.so", m), 0);
	/* the data mapping: same file offset, told apart by its protection */
	assert_int_equal(sfu_addrspace__add(as, b + 0x1000, b + 0x2000, 0, RW, "/lib/packed.so", m), 0);
	/* an offset no segment maps: not this file, so no module */
	assert_int_equal(sfu_addrspace__add(as, b + 0x10000, b + 0x11000, 0x40000, RX, NULL, m), 0);
	maps = sfu_addrspace__mappings(as, &count);
	assert_int_equal(count, 3);
	assert_ptr_equal(maps[0].module, m);
	assert_int_equal(maps[0].bias, b);
	assert_ptr_equal(maps[1].module, m);
	assert_int_equal(maps[1].bias, b);
	assert_int_equal(maps[1].prot, RW);
	assert_null(maps[2].module);

	/* splitting a mapping shares its module; the sanitizer checks the references */
	assert_int_equal(sfu_addrspace__add(as, b + 0x400, b + 0x800, 0x400, RX, NULL, NULL), 0);
	maps = sfu_addrspace__mappings(as, &count);
	assert_int_equal(count, 5);
	assert_ptr_equal(maps[0].module, m);
	assert_null(maps[1].module);
	assert_ptr_equal(maps[2].module, m);
	assert_int_equal(maps[2].start, b + 0x800);
	assert_int_equal(maps[2].file_offset, 0x800);
	assert_int_equal(maps[2].bias, b);
	assert_string_equal(maps[2].path, "/lib/packed.so");
	assert_ptr_not_equal(maps[0].path, maps[2].path);
	sfu_module__put(m);
	sfu_addrspace__free(as);
}

/* ---- /proc/PID/maps text ---- */

/* A temporary directory holding copies of this test binary under awkward names. */
struct maps_fixture {
	char *dir;
	char *spaced;		/* "lib with spaces.so" */
	uint64_t text_offset;	/* file offset of the executable segment */
	uint64_t text_vaddr;
};

static int setup_maps(void **state)
{
	struct maps_fixture *f = calloc(1, sizeof(*f));
	const struct sfu_segment *segs;
	struct sfu_module *m;
	size_t len, n;
	void *image;

	assert_non_null(f);
	f->dir = make_temp_dir_or_fail();
	f->spaced = path_join_or_fail(f->dir, "lib with spaces.so");
	image = read_file_or_fail("/proc/self/exe", &len);
	write_file_or_fail(f->spaced, image, len);
	free(image);
	m = sfu_module__open(f->spaced, NULL);
	assert_non_null(m);
	segs = sfu_module__segments(m, &n);
	for (size_t i = 0; i < n; i++)
		if (segs[i].flags & PF_X) {
			f->text_offset = segs[i].offset & ~0xfffull;
			f->text_vaddr = segs[i].vaddr - (segs[i].offset & 0xfff);
		}
	sfu_module__put(m);
	*state = f;
	return 0;
}

static int teardown_maps(void **state)
{
	struct maps_fixture *f = *state;

	free(f->spaced);
	remove_temp_dir(f->dir);
	free(f);
	return 0;
}

static void test_load_maps(void **state)
{
	struct maps_fixture *f = *state;
	const uint64_t base = 0x7f1234560000ull;
	char text[4096];
	struct sfu_addrspace *as = sfu_addrspace__new(NULL, NULL);
	struct sfu_diag diag = { 0 };
	const struct sfu_mapping *maps;
	size_t count;
	int n;

	(void)state;
	assert_non_null(as);
	n = snprintf(text, sizeof(text),
		     "%llx-%llx r--p 00000000 08:01 1234                       %s\n"
		     "%llx-%llx r-xp %08llx 08:01 1234                       %s\n"
		     "7f0000001000-7f0000002000 r-xp 00001000 fd:01 99    /nonexistent/lib (deleted)\n"
		     "7f0000003000-7f0000004000 r-xp 00000000 00:00 0\n"
		     "7f0000005000-7f0000006000 rwxp 00000000 00:00 0 \n"
		     "\n"
		     "7f0000007000-7f0000008000 r-xp 00000000 103:02 42   /nonexistent/libmissing.so\n"
		     "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]\n"
		     "7ffc00100000-7ffc00102000 r-xp 00000000 00:00 0                          [vdso]\n"
		     "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]",
		     (unsigned long long)base, (unsigned long long)base + 0x1000, f->spaced,
		     (unsigned long long)base + 0x1000, (unsigned long long)base + 0x3000,
		     (unsigned long long)f->text_offset, f->spaced);
	assert_true(n > 0 && (size_t)n < sizeof(text));
	if (sfu_addrspace__load_maps(as, text, n, &diag))
		fail_msg("load_maps: %s", diag.reason);

	maps = sfu_addrspace__mappings(as, &count);
	assert_int_equal(count, 7);	/* the executable ones */
	/* a path with spaces, opened and placed */
	assert_int_equal(maps[0].start, 0x7f0000001000ull);
	assert_string_equal(maps[0].path, "/nonexistent/lib (deleted)");
	assert_null(maps[0].module);
	assert_int_equal(maps[0].prot, RX);
	assert_null(maps[1].path);			/* anonymous */
	assert_null(maps[1].module);
	assert_null(maps[2].path);			/* anonymous, trailing space */
	assert_int_equal(maps[2].prot, PROT_READ | PROT_WRITE | PROT_EXEC);
	assert_string_equal(maps[3].path, "/nonexistent/libmissing.so");
	assert_null(maps[3].module);			/* unreadable, but kept */
	assert_string_equal(maps[4].path, f->spaced);
	assert_non_null(maps[4].module);
	assert_int_equal(maps[4].start, base + 0x1000);
	assert_int_equal(maps[4].file_offset, f->text_offset);
	assert_int_equal(maps[4].bias, base + 0x1000 - f->text_vaddr);
	assert_string_equal(maps[5].path, "[vdso]");	/* future work: read it from memory */
	assert_null(maps[5].module);
	assert_int_equal(maps[5].end, 0x7ffc00102000ull);
	/* [vsyscall] is --x: executable, so kept, without a module; no newline after it */
	assert_string_equal(maps[6].path, "[vsyscall]");
	assert_int_equal(maps[6].prot, PROT_EXEC);
	assert_null(maps[6].module);
	sfu_addrspace__free(as);
}

static void test_load_maps_vsyscall_kept(void **state)
{
	static const char text[] =
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";
	struct sfu_addrspace *as = sfu_addrspace__new(NULL, NULL);
	const struct sfu_mapping *m;

	(void)state;
	assert_non_null(as);
	assert_int_equal(sfu_addrspace__load_maps(as, text, sizeof(text) - 1, NULL), 0);
	m = sfu_addrspace__find(as, 0xffffffffff600000ull);
	assert_non_null(m);
	assert_string_equal(m->path, "[vsyscall]");
	assert_int_equal(m->prot, PROT_EXEC);
	assert_null(m->module);
	sfu_addrspace__free(as);
}

static void test_load_maps_bad_lines(void **state)
{
	static const struct {
		const char *text;
		const char *reason;
	} cases[] = {
		{ "garbage\n", "line 1" },
		{ "1000-2000 r-xp 00000000 08:01 1 /a\n1000-2000 r-xp\n", "line 2" },
		{ "2000-1000 r-xp 00000000 08:01 1 /a\n", "line 1" },	/* end before start */
		{ "1000-1000 r-xp 00000000 08:01 1 /a\n", "line 1" },	/* empty */
		{ "zz00-2000 r-xp 00000000 08:01 1 /a\n", "line 1" },
		{ "1000-2000 rxxp 00000000 08:01 1 /a\n", "line 1" },
		{ "1000-2000 r-xp 00000000 0801 1 /a\n", "line 1" },
		{ "1000-2000 r-xp 00000000 08:01 x /a\n", "line 1" },
		{ "1000-2000 r-xp 00000000 08:01 1/a\n", "line 1" },
		{ "10000000000000000-10000000000000001 r-xp 0 0:0 0\n", "line 1" },	/* 65 bits */
		{ "1000-2000  r-xp 00000000 08:01 1 /a\n", "line 1" },
		{ "\n\n1000-2000 r-xq 00000000 08:01 1 /a", "line 3" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct sfu_addrspace *as = empty_root_addrspace();
		struct sfu_diag diag = { 0 };
		int err = sfu_addrspace__load_maps(as, cases[i].text, strlen(cases[i].text), &diag);

		if (err != -EBADMSG || diag.err != -EBADMSG || !strstr(diag.reason, cases[i].reason))
			fail_msg("case %zu: got %d \"%s\", want -EBADMSG at %s", i, err,
				 diag.reason, cases[i].reason);
		sfu_addrspace__free(as);
	}
}

static void test_load_maps_root(void **state)
{
	struct maps_fixture *f = *state;
	char text[256];
	struct sfu_addrspace *as = sfu_addrspace__new(NULL, f->dir);
	const struct sfu_mapping *m;
	int n;

	assert_non_null(as);
	/* the process sees the file at /lib with spaces.so inside its root */
	n = snprintf(text, sizeof(text), "10000-12000 r-xp %llx 08:01 1 /lib with spaces.so\n",
		     (unsigned long long)f->text_offset);
	assert_int_equal(sfu_addrspace__load_maps(as, text, n, NULL), 0);
	m = sfu_addrspace__find(as, 0x10000);
	assert_non_null(m);
	assert_string_equal(m->path, "/lib with spaces.so");
	assert_non_null(m->module);
	sfu_addrspace__free(as);
}

/* ---- this process ---- */

__attribute__((noinline, used)) int sfu_test_addrspace_function(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 7;
}

static void test_load_self(void **state)
{
	const uint64_t addr = (uintptr_t)&sfu_test_addrspace_function;
	struct sfu_addrspace *as = sfu_addrspace__new(NULL, NULL);
	struct sfu_diag diag = { 0 };
	const struct sfu_mapping *maps, *m;
	size_t count, len, with_module = 0;
	uint8_t *image;
	bool vdso = false;

	(void)state;
	assert_non_null(as);
	if (sfu_addrspace__load_pid(as, getpid(), &diag))
		fail_msg("load_pid: %s", diag.reason);
	maps = sfu_addrspace__mappings(as, &count);
	assert_true(count >= 2);	/* at least this binary and libc */

	for (size_t i = 0; i < count; i++) {
		assert_true(maps[i].start < maps[i].end);
		assert_true(maps[i].prot & PROT_EXEC);
		if (i)
			assert_true(maps[i - 1].end <= maps[i].start);
		assert_ptr_equal(sfu_addrspace__find(as, maps[i].start), &maps[i]);
		assert_ptr_equal(sfu_addrspace__find(as, maps[i].end - 1), &maps[i]);
		m = sfu_addrspace__find(as, maps[i].end);
		assert_true(!m || m == &maps[i + 1]);
		m = sfu_addrspace__find(as, maps[i].start - 1);
		assert_true(!m || (i && m == &maps[i - 1]));
		if (maps[i].module)
			with_module++;
		if (maps[i].path && !strcmp(maps[i].path, "[vdso]")) {
			vdso = true;
			assert_null(maps[i].module);
		}
	}
	assert_true(with_module >= 2);
	(void)vdso;	/* absent when the kernel maps none */

	/* the bias of this PIE, against the symbol table read by hand */
	m = sfu_addrspace__find(as, addr);
	assert_non_null(m);
	assert_non_null(m->module);
	image = read_file_or_fail("/proc/self/exe", &len);
	assert_int_equal(m->bias, addr - raw_elf_symbol_value(image, len, "sfu_test_addrspace_function"));
	free(image);
	assert_int_equal(sfu_test_addrspace_function(1), 8);
	sfu_addrspace__free(as);
}

static void test_shared_cache(void **state)
{
	const uint64_t addr = (uintptr_t)&sfu_test_addrspace_function;
	struct sfu_cache *cache = sfu_cache__new();
	struct sfu_addrspace *a, *b;
	const struct sfu_mapping *ma, *mb;
	size_t count;

	(void)state;
	assert_non_null(cache);
	a = sfu_addrspace__new(cache, NULL);
	b = sfu_addrspace__new(cache, "/proc/self/root");
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(sfu_addrspace__load_pid(a, getpid(), NULL), 0);
	count = sfu_cache__count(cache);
	assert_true(count >= 2);
	assert_int_equal(sfu_addrspace__load_pid(b, getpid(), NULL), 0);
	/* the same files through another root are the same modules */
	assert_int_equal(sfu_cache__count(cache), count);
	ma = sfu_addrspace__find(a, addr);
	mb = sfu_addrspace__find(b, addr);
	assert_non_null(ma);
	assert_non_null(mb);
	assert_non_null(ma->module);
	assert_ptr_equal(ma->module, mb->module);
	/* reloading replaces every mapping with itself */
	assert_int_equal(sfu_addrspace__load_pid(a, getpid(), NULL), 0);
	assert_ptr_equal(sfu_addrspace__find(a, addr)->module, mb->module);
	sfu_addrspace__free(a);
	/* the modules outlive one address space */
	assert_non_null(sfu_module__path(mb->module));
	sfu_addrspace__free(b);
	sfu_cache__free(cache);
}

static void test_load_gone_pid(void **state)
{
	struct sfu_addrspace *as = sfu_addrspace__new(NULL, NULL);
	struct sfu_diag diag = { 0 };
	pid_t child;
	int status;

	(void)state;
	assert_non_null(as);
	child = fork();
	assert_true(child >= 0);
	if (!child)
		_exit(0);
	assert_int_equal(waitpid(child, &status, 0), child);
	/* pid reuse within this instant is unlikely enough */
	assert_int_equal(sfu_addrspace__load_pid(as, child, &diag), -ESRCH);
	assert_int_equal(diag.err, -ESRCH);
	assert_non_null(strstr(diag.reason, "/maps"));
	sfu_addrspace__free(as);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_edges),
		cmocka_unit_test(test_add_invalid),
		cmocka_unit_test(test_add_overlap),
		cmocka_unit_test(test_add_module_refs_and_bias),
		cmocka_unit_test_setup_teardown(test_load_maps, setup_maps, teardown_maps),
		cmocka_unit_test(test_load_maps_vsyscall_kept),
		cmocka_unit_test(test_load_maps_bad_lines),
		cmocka_unit_test_setup_teardown(test_load_maps_root, setup_maps, teardown_maps),
		cmocka_unit_test(test_load_self),
		cmocka_unit_test(test_shared_cache),
		cmocka_unit_test(test_load_gone_pid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
