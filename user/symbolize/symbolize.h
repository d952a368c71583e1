/* SPDX-License-Identifier: BSD-2-Clause */
/* Names for addresses: ELF symbols found by build ID, demangled, with DWARF lines; kernel from kallsyms. */
#ifndef SFPROF_SYMBOLIZE_H
#define SFPROF_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct symbolizer_opts {
	const char *const *debug_dirs;	/* --debug-file-directory, tried after /usr/lib/debug */
	size_t num_debug_dirs;
	const char *kallsyms;		/* default /proc/kallsyms */
	bool no_debuginfod;		/* even when DEBUGINFOD_URLS is set */
	bool no_lines;			/* skip DWARF line lookups */
	bool no_inline;			/* sessions show no inlined frames (--no-inline) */
	bool python_only;		/* sessions show Python frames alone (--python-only) */
	/*
	 * Build-ID trees (--buildid-dir, an unpacked archive): a binary missing
	 * at its recorded path, or replaced there, is looked for in them, then
	 * in the build-ID cache (user/buildid/buildid.h); their .debug files
	 * are debug files.
	 */
	const char *const *buildid_dirs;
	size_t num_buildid_dirs;
};

/* What an address resolves to. Strings live as long as the symbolizer. */
struct sym_info {
	const char *name;	/* demangled function, or NULL when unknown */
	uint64_t offset;	/* from the function's start */
	uint64_t vaddr;		/* the address in the ELF file (module-relative for markup) */
	const char *file;	/* source file, or NULL */
	unsigned line;
};

struct sym_module;
struct symbolizer;

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts);
void symbolizer__free(struct symbolizer *s);

/**
 * symbolizer__module() - the binary a profile's module record names: the
 * binary kept by build ID (--buildid-dir, then the build-ID cache, whose
 * entries are used only when no one but this user and root can change
 * them), else its recorded path if the build ID matches, else a debug file
 * found by build ID (/usr/lib/debug/.build-id, --debug-file-directory, the
 * build-ID trees, debuginfod). Never NULL: a module whose file is found
 * nowhere still names its frames module+0xoffset.
 */
struct sym_module *symbolizer__module(struct symbolizer *s, const uint8_t *build_id,
				      size_t build_id_len, const char *path);

/**
 * symbolizer__module_sized() - symbolizer__module() of a module recorded
 * with its file's size (the profile's module record): a file found of
 * another size is not the one recorded, whatever build ID it claims. A
 * @file_size of 0 checks no size.
 */
struct sym_module *symbolizer__module_sized(struct symbolizer *s, const uint8_t *build_id,
					    size_t build_id_len, const char *path,
					    uint64_t file_size);

/**
 * symbolizer__trim() - one round ends (an agent's window): let go of the
 * modules not asked for in the last @idle_rounds rounds, and of those found
 * nowhere (looked for again when asked: their file may be kept by build ID
 * since), and of the DWARF of those whose DWARF was not asked for in as
 * many rounds (opened again when asked). What the
 * kernel's symbols hold stays. Names given out of a module let go are gone
 * with it, as are source file names given out of any. @return the modules
 * let go.
 */
size_t symbolizer__trim(struct symbolizer *s, unsigned idle_rounds);

/** @return the short name shown for a module (its file name). */
const char *sym_module__name(const struct sym_module *m);

/** @return the recorded path of a module. */
const char *sym_module__path(const struct sym_module *m);

/** @return whether an ELF file (binary or debug file) was found for the module. */
bool sym_module__found(const struct sym_module *m);

/**
 * @return whether the module's recorded path holds another build now and no
 * file of the recorded build was found elsewhere (cache, debug directories):
 * its frames stay unnamed.
 */
bool sym_module__replaced(const struct sym_module *m);

/** @return the path of the binary found for the module (not a debug file standing in for it), or NULL. */
const char *sym_module__binary_file(const struct sym_module *m);

/** @return the path of the separate debug file found for the module, or NULL. */
const char *sym_module__debug_file(const struct sym_module *m);

/* The mapping an address was sampled in. */
struct sym_mapping {
	uint64_t start;
	uint64_t file_offset;
	uint8_t prot;		/* PROT_READ | PROT_WRITE | PROT_EXEC */
};

/**
 * sym_module__map_vaddr() - the ELF address a mapping of the module starts at.
 *
 * sfu_module__map_vaddr() of the binary; for a module of which only a
 * separate debug file was found, whose program headers keep the segments'
 * addresses and flags but not their file offsets, the start of the page of
 * the first segment with the mapping's permissions (the loader maps a
 * segment from the page holding its start).
 *
 * @return 0 and fills @vaddr, or -ENOENT (no ELF file found, or no segment
 * for the mapping).
 */
int sym_module__map_vaddr(const struct sym_module *m, const struct sym_mapping *map,
			  uint64_t *vaddr);

/**
 * symbolizer__lookup_mapped() - name user address @addr of mapping @map.
 *
 * The address is placed in the module's ELF file by sym_module__map_vaddr().
 * @is_ra: a return address: looked up as addr - 1, the call instruction,
 * whose name, offset and line are given (perf's _start+0x7).
 *
 * @return true when a function name was found (out->name set); out->vaddr
 * is the ELF address, or the file offset when the address was not placed.
 */
bool symbolizer__lookup_mapped(struct symbolizer *s, struct sym_module *m, uint64_t addr,
			       const struct sym_mapping *map, bool is_ra, struct sym_info *out);

/* One frame of the inlined chain at an address, innermost first. */
struct sym_frame {
	const char *name;	/* demangled, or NULL when unknown */
	const char *file;	/* NULL when unknown */
	unsigned line, column;	/* 0 when unknown */
};

/**
 * symbolizer__lookup_inlined() - the functions inlined at ELF address
 * @vaddr of @m, from its DWARF: the innermost inlined function first, each
 * with its source position (the line table's for the first, the call site
 * of the one before for the others), the function they were inlined into
 * last. Without DWARF for the address, one frame: the ELF symbol's name.
 *
 * At most @cap frames are written to @frames. Strings live as long as the
 * symbolizer.
 *
 * @return the number of frames found (which may exceed @cap), 0 when
 * nothing names the address.
 */
size_t symbolizer__lookup_inlined(struct symbolizer *s, struct sym_module *m, uint64_t vaddr,
				  struct sym_frame *frames, size_t cap);

/**
 * symbolizer__lookup_data() - the symbol holding ELF address @vaddr of @m
 * as llvm-symbolizer names data: the last object, function or untyped
 * symbol at or before it (at one address the largest, then the last in the
 * table), if the address is inside its size (a symbol of size 0 reaches to
 * the next).
 *
 * @return true when named (out->name demangled, out->offset from its start).
 */
bool symbolizer__lookup_data(struct symbolizer *s, struct sym_module *m, uint64_t vaddr,
			     struct sym_info *out);

/** symbolizer__kernel() - name a kernel address from kallsyms. @return true when named. */
bool symbolizer__kernel(struct symbolizer *s, uint64_t addr, struct sym_info *out);

/** @return a demangled copy of @name (C++ and Rust), or NULL when it is not mangled; free() it. */
char *symbolizer__demangle(const char *name);

#endif
