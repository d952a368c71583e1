// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: the report's symbolizer (user/symbolize/). An input
 * that is an ELF file is given to it as a module's binary: addresses of its
 * executable segments, as a PIE maps them, and addresses the input chooses
 * are named (ELF symbols, demangled, with DWARF lines through libdw). Any
 * other input is a list of names, one per line, demangled.
 */
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbolize/symbolize.h"
#include "sfunwind.h"
#include "memfd_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Lookups per segment, and segments looked at: a bound on one input's time. */
#define PROBES_PER_SEGMENT 8
#define MAX_SEGMENTS 8
/* Names demangled per input, and their length. */
#define MAX_NAMES 64
#define MAX_NAME 4096

static volatile uint64_t sink;
static const char *input_path;

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_symbolize: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static void check_name(const char *name, const char *what)
{
	size_t len;

	if (!name)
		broken("%s: found without a name", what);
	len = strlen(name);
	sink += len;
	if (!len)
		broken("%s: an empty name", what);
}

static void lookup(struct symbolizer *s, struct sym_module *m, const struct sym_mapping *map,
		   uint64_t addr, bool is_ra)
{
	struct sym_info info;

	if (!symbolizer__lookup_mapped(s, m, addr, map, is_ra, &info)) {
		if (info.name || info.file)
			broken("lookup of %#llx failed with a name or file", (unsigned long long)addr);
		return;
	}
	check_name(info.name, "lookup");
	if (info.offset > info.vaddr)
		broken("%#llx is %s+%#llx at ELF address %#llx: a symbol above the address",
		       (unsigned long long)addr, info.name, (unsigned long long)info.offset,
		       (unsigned long long)info.vaddr);
	if (info.file)
		sink += strlen(info.file) + info.line;
}

static void symbolize_elf(const uint8_t *data, size_t size)
{
	/* with lines and without: libdw only on the first */
	static const struct symbolizer_opts opts[2] = {
		{ .kallsyms = "/nonexistent/kallsyms", .no_debuginfod = true },
		{ .kallsyms = "/nonexistent/kallsyms", .no_debuginfod = true, .no_lines = true },
	};
	static const uint8_t no_build_id[1];
	struct sfu_module *elf;
	const struct sfu_segment *segs;
	size_t nsegs = 0;

	input_path = memfd_input("fuzz_symbolize", data, size);
	/*
	 * the segments, to map the executable ones as the loader would; opened
	 * as the symbolizer opens a file (no unwind sections: one whose
	 * .sframe or .eh_frame is bad still has symbols)
	 */
	elf = sfu_module__open_flags(input_path, SFU_MODULE_OPEN_NO_UNWIND, NULL);
	segs = elf ? sfu_module__segments(elf, &nsegs) : NULL;
	for (int pass = 0; pass < 2; pass++) {
		struct symbolizer *s = symbolizer__new(&opts[pass]);
		struct sym_module *m;

		if (!s)
			return;
		/* no build ID: the file at the path is taken as it is */
		m = symbolizer__module(s, no_build_id, 0, input_path);
		if (!m) {
			symbolizer__free(s);
			continue;
		}
		if (strcmp(sym_module__path(m), input_path))
			broken("module path %s, opened %s", sym_module__path(m), input_path);
		if (!elf != !sym_module__found(m))
			broken("the module opens %s, the symbolizer %s", elf ? "" : "not",
			       sym_module__found(m) ? "found it" : "did not");
		check_name(sym_module__name(m), "module name");
		for (size_t i = 0; i < nsegs && i < MAX_SEGMENTS; i++) {
			const struct sfu_segment *seg = &segs[i];
			/* as if mapped at a typical PIE base, page-aligned as mmap would */
			struct sym_mapping map = {
				0x555555554000ULL + (seg->vaddr & ~0xfffULL), seg->offset & ~0xfffULL,
				(seg->flags & PF_X ? PROT_EXEC : 0) | (seg->flags & PF_W ? PROT_WRITE : 0) |
				PROT_READ,
			};
			uint64_t vaddr, span = (seg->vaddr & 0xfff) + seg->memsz;

			if (sym_module__map_vaddr(m, &map, &vaddr) == 0)
				sink += vaddr;
			for (unsigned k = 0; k < PROBES_PER_SEGMENT; k++) {
				uint64_t at = map.start + (span / PROBES_PER_SEGMENT) * k + k;

				lookup(s, m, &map, at, k & 1);
			}
		}
		/* addresses the input chooses, in its first executable mapping or none */
		for (size_t off = 0; off + 8 <= size && off < 64; off += 16) {
			struct sym_mapping map = { 0x555555554000ULL, 0, PROT_READ | PROT_EXEC };
			uint64_t v;

			memcpy(&v, data + size - 8 - off, sizeof(v));
			lookup(s, m, &map, v, off & 16);
			lookup(s, m, &map, map.start + (v & 0xfffff), false);
		}
		/* the same module again is the same one */
		if (symbolizer__module(s, no_build_id, 0, input_path) != m)
			broken("a module asked twice gave two");
		symbolizer__free(s);
	}
	sfu_module__put(elf);
}

/* One name per line (or NUL): demangled, or NULL for a name that is not mangled. */
static void demangle_names(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	char name[MAX_NAME + 1];

	for (unsigned n = 0; p < end && n < MAX_NAMES; n++) {
		const uint8_t *eol = p;
		size_t len;
		char *dm;

		while (eol < end && *eol != '\n' && *eol)
			eol++;
		len = (size_t)(eol - p) < MAX_NAME ? (size_t)(eol - p) : MAX_NAME;
		memcpy(name, p, len);
		name[len] = '\0';
		p = eol + 1;
		dm = symbolizer__demangle(name);
		if (!dm)
			continue;
		if (strncmp(name, "_Z", 2) && strncmp(name, "_R", 2))
			broken("\"%s\" is not mangled, but demangled to \"%s\"", name, dm);
		check_name(dm, "demangled");
		free(dm);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= 4 && !memcmp(data, "\177ELF", 4))
		symbolize_elf(data, size);
	else
		demangle_names(data, size);
	return 0;
}
