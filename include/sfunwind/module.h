/* SPDX-License-Identifier: BSD-2-Clause */
/* ELF modules: build ID, loadable segments, unwind tables and symbols, cached by build ID. */
#ifndef SFUNWIND_MODULE_H
#define SFUNWIND_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sfunwind/diag.h"
#include "sfunwind/ehframe.h"
#include "sfunwind/sframe.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SFU_BUILD_ID_MAX 64

struct sfu_build_id {
	uint8_t len;		/* 0: the file has none */
	uint8_t bytes[SFU_BUILD_ID_MAX];
};

/* One PT_LOAD program header. */
struct sfu_segment {
	uint64_t vaddr;
	uint64_t memsz;
	uint64_t offset;
	uint64_t filesz;
	uint32_t flags;		/* PF_R | PF_W | PF_X */
};

/* Where a module's SFrame data came from. */
enum sfu_sframe_origin {
	SFU_SFRAME_NONE = 0,
	SFU_SFRAME_SECTION_NAME,	/* a section named .sframe */
	SFU_SFRAME_SECTION_TYPE,	/* a section of type SHT_GNU_SFRAME */
	SFU_SFRAME_SEGMENT,		/* the PT_GNU_SFRAME program header */
	SFU_SFRAME_EH_FRAME,		/* derived from .eh_frame (sfu_module__eh_frame_table()) */
};

struct sfu_module;
struct sfu_cache;

/**
 * sfu_module__open() - open an ELF file and read what unwinding needs.
 * @path: the file.
 * @diag: optional; the reason on failure.
 *
 * Reads the build ID, the PT_LOAD segments, the SFrame data (a `.sframe`
 * section, an SHT_GNU_SFRAME section or the PT_GNU_SFRAME segment, in that
 * order), the function symbols of `.symtab` and `.dynsym`, and a Go
 * program's `.gopclntab` (sfu_module__go_func()). A corrupt
 * SFrame section does not fail the open: the module has no SFrame table and
 * sfu_module__sframe_error() says why.
 *
 * @return the module with one reference, or NULL with errno set (ENOENT,
 * EACCES, EBADMSG for a file that is not a usable ELF file, ENOMEM).
 */
SFU_API struct sfu_module *sfu_module__open(const char *path, struct sfu_diag *diag);

/* Flags of sfu_module__open_flags() and sfu_cache__set_flags(). */
enum {
	/*
	 * Skip the symbol tables: sfu_module__symbolize() and
	 * sfu_module__symbol_addr() then find nothing (-ENOENT). Unwinding
	 * needs no symbols, and a large library's take long to build (140 ms
	 * for libLLVM-16.so).
	 */
	SFU_MODULE_OPEN_NO_SYMBOLS = 1u << 0,
	/*
	 * Skip what unwinding reads (.sframe, .eh_frame, the PLT ranges): a
	 * symbolizer needs only segments and symbols, and a copy of a large
	 * library's .eh_frame is held until its table is made.
	 */
	SFU_MODULE_OPEN_NO_UNWIND = 1u << 1,
};

/**
 * sfu_module__open_flags() - sfu_module__open() with SFU_MODULE_OPEN_* @flags.
 * @return as sfu_module__open().
 */
SFU_API struct sfu_module *sfu_module__open_flags(const char *path, unsigned flags,
						  struct sfu_diag *diag);

/**
 * sfu_module__new() - a module described by its caller rather than read from
 * a file: code a debugger or JIT knows about, or a test's synthetic tables.
 * @name: shown as the module's path.
 * @build_id: optional.
 * @machine: ELF machine (EM_X86_64, EM_AARCH64).
 * @segs: the loadable segments, copied; they define sfu_module__bias().
 * @sframe: optional table, owned by the module from now on (even on failure).
 *
 * @return the module with one reference, or NULL with errno set (ENOMEM).
 */
SFU_API struct sfu_module *sfu_module__new(const char *name, const struct sfu_build_id *build_id,
				   uint16_t machine, const struct sfu_segment *segs,
				   size_t num_segs, struct sfu_sframe *sframe);

/** sfu_module__get() - take a reference. @return @m. */
SFU_API struct sfu_module *sfu_module__get(struct sfu_module *m);

/** sfu_module__put() - drop a reference; the last one frees. Accepts NULL. */
SFU_API void sfu_module__put(struct sfu_module *m);

/** @return the path the module was opened from. */
SFU_API const char *sfu_module__path(const struct sfu_module *m);

/** @return the GNU build ID (len 0 when the file has none). */
SFU_API const struct sfu_build_id *sfu_module__build_id(const struct sfu_module *m);

/** @return the ELF machine (EM_X86_64, EM_AARCH64, ...). */
SFU_API uint16_t sfu_module__machine(const struct sfu_module *m);

/** @return true for ET_DYN (PIE or shared library). */
SFU_API bool sfu_module__is_dyn(const struct sfu_module *m);

/**
 * sfu_module__memory() - the bytes the module holds in memory: its unwind
 * tables (kept encoded), the copy of .eh_frame until it is converted, then
 * the converted table, symbols and segments. Grows when rows are decoded for
 * callers that ask for them (sfu_sframe__row()). Safe from any thread.
 */
SFU_API size_t sfu_module__memory(const struct sfu_module *m);

/** @return the size of the file in bytes. */
SFU_API uint64_t sfu_module__file_size(const struct sfu_module *m);

/** sfu_module__segments() - the PT_LOAD segments, in program header order. */
SFU_API const struct sfu_segment *sfu_module__segments(const struct sfu_module *m, size_t *count);

/** @return the decoded SFrame table, or NULL when the module has none. */
SFU_API const struct sfu_sframe *sfu_module__sframe(const struct sfu_module *m);

/** @return where the SFrame table came from. */
SFU_API enum sfu_sframe_origin sfu_module__sframe_origin(const struct sfu_module *m);

/** @return why the SFrame data present could not be decoded, or NULL. */
SFU_API const char *sfu_module__sframe_error(const struct sfu_module *m);

/**
 * sfu_module__eh_frame_table() - rows derived from the file's .eh_frame.
 *
 * Made on the first call (sfu_sframe__from_eh_frame(), with .eh_frame_hdr's
 * search table when there is one), or read from the disk cache when the
 * module has a cache directory and a build ID; later calls return the same
 * table. The unwinder calls this for pcs the .sframe table does not cover.
 * Safe to call from several threads at once: the first call converts under
 * the module's lock, the others wait for it.
 *
 * Only 64-bit x86-64 and AArch64 files that are not relocatable objects have
 * one. Function starts are addresses in the ELF file, like sfu_module__sframe()'s.
 *
 * @return the table, or NULL when the file has no .eh_frame or it could not
 * be converted (sfu_module__eh_frame_error() says why).
 */
SFU_API const struct sfu_sframe *sfu_module__eh_frame_table(const struct sfu_module *m);

/** @return why .eh_frame could not be converted, or NULL (also before the first try). */
SFU_API const char *sfu_module__eh_frame_error(const struct sfu_module *m);

/**
 * @return what the conversion found, or NULL when no conversion ran (not yet,
 * no .eh_frame, or the table came from the disk cache).
 */
SFU_API const struct sfu_eh_frame_stats *sfu_module__eh_frame_stats(const struct sfu_module *m);

/** @return true when sfu_module__eh_frame_table() was read from the disk cache. */
SFU_API bool sfu_module__eh_frame_from_disk(const struct sfu_module *m);

/**
 * sfu_module__set_cache_dir() - keep the table derived from .eh_frame on disk.
 * @dir: a directory, created with its parents when first written; NULL for
 *       no disk cache (the default).
 *
 * Takes effect if the table has not been made yet. Tables are files named
 * "<build ID>.eh_frame-v<N>.sframe" holding an SFrame version 3 section; a
 * module without a build ID, or whose .eh_frame is under 4 KiB (converted
 * faster than a file is read), is never cached on disk. A cache file that does
 * not decode is replaced.
 *
 * @return 0, or -ENOMEM.
 */
SFU_API int sfu_module__set_cache_dir(struct sfu_module *m, const char *dir);

/**
 * sfu_module__symbolize() - the function symbol containing @vaddr.
 * @vaddr: an address in the ELF file's own address space (not biased).
 * @name: receives the symbol name, valid as long as the module.
 * @offset: receives @vaddr - symbol value.
 *
 * Symbols of size zero cover up to the next symbol.
 *
 * @return 0, or -ENOENT when no symbol covers @vaddr.
 */
SFU_API int sfu_module__symbolize(const struct sfu_module *m, uint64_t vaddr,
			  const char **name, uint64_t *offset);

/**
 * sfu_module__symbol_addr() - the address of function symbol @name.
 * @return 0 and fills @vaddr, or -ENOENT.
 */
SFU_API int sfu_module__symbol_addr(const struct sfu_module *m, const char *name, uint64_t *vaddr);

/**
 * sfu_module__map_vaddr() - the ELF address a mapping of this module starts at.
 * @file_offset: the file offset mapped at the mapping's start (mmap()'s
 *	offset, the third field of /proc/PID/maps); a page multiple for the
 *	loader's mappings, but any value is placed.
 * @prot: the mapping's protection, PROT_READ | PROT_WRITE | PROT_EXEC.
 * @vaddr: receives the ELF virtual address mapped at the mapping's start:
 *	address A of a mapping at @start is ELF address *@vaddr + (A - start),
 *	and the load bias (sfu_module__bias()) is start - *@vaddr.
 *
 * The PT_LOAD segment is the one whose file bytes hold @file_offset, or
 * begin less than 64 KiB after it: the kernel maps a segment from its offset
 * rounded down to a page, so a mapping may begin before its segment, and
 * mprotect() splits a segment's mapping, so one may begin in its middle.
 * Where two segments share a file page (text and data linked without
 * -z separate-code), the segment whose PF_X matches PROT_EXEC in @prot wins,
 * then the one whose PF_W matches PROT_WRITE, then the one holding
 * @file_offset itself; a RELRO page made read-only stays ambiguous.
 *
 * A separate debug file keeps its segments' addresses and flags but no file
 * bytes past its notes: this places a mapping by its file offset only.
 *
 * @return 0, or -ENOENT when no segment with file bytes maps @file_offset
 * (the mapping is not of this file).
 */
SFU_API int sfu_module__map_vaddr(const struct sfu_module *m, uint64_t file_offset, uint32_t prot,
				  uint64_t *vaddr);

/**
 * sfu_module__bias() - load bias of a mapping of this module's code.
 * @map_start: the mapping's start address.
 * @file_offset: the file offset mapped there.
 *
 * sfu_module__map_vaddr() of an executable mapping, as a bias.
 *
 * @return 0 and fills @bias (runtime address = ELF vaddr + bias), or
 * -ENOENT when no PT_LOAD segment maps @file_offset.
 */
SFU_API int sfu_module__bias(const struct sfu_module *m, uint64_t map_start,
		     uint64_t file_offset, uint64_t *bias);

/**
 * sfu_cache__new() - a cache of modules keyed by build ID.
 *
 * A file is opened and decoded once, however many address spaces map it and
 * under whatever path. Thread-safe: every call may come from any thread
 * (a file is read without the cache's lock held, so one thread opening a
 * large library does not hold up the others; two threads opening the same
 * file at once end with one module).
 *
 * @return the cache, or NULL with errno set.
 */
SFU_API struct sfu_cache *sfu_cache__new(void);

/** sfu_cache__free() - drop the cache's references; accepts NULL. */
SFU_API void sfu_cache__free(struct sfu_cache *cache);

/**
 * sfu_cache__open() - the module for @path, opened at most once.
 * @expect: optional build ID the file must have.
 *
 * A file seen before (same device, inode, size and modification time) is
 * not opened again; a new file whose build ID is cached reuses the cached
 * module.
 *
 * @return a new reference to the module, or NULL with errno set (ESTALE when
 * the file's build ID differs from @expect).
 */
SFU_API struct sfu_module *sfu_cache__open(struct sfu_cache *cache, const char *path,
				   const struct sfu_build_id *expect, struct sfu_diag *diag);

/**
 * sfu_cache__find() - the cached module of build ID @id, without touching a
 * file: for a mapping whose file is gone (a short-lived process that
 * exited, its binary deleted) but whose build ID its mmap event gave.
 *
 * @return a new reference to the module, or NULL (ENOENT) when none is
 * cached with that build ID (or @id is empty).
 */
SFU_API struct sfu_module *sfu_cache__find(struct sfu_cache *cache, const struct sfu_build_id *id);

/**
 * sfu_cache__set_limit() - bound the memory of the modules the cache holds
 * (sfu_module__memory() summed), 0 for none (the default).
 *
 * Checked when a file is opened: when the modules held and the new one come
 * to more than @bytes, the modules no address space maps any more are
 * released first (sfu_cache__trim()); if that is not enough, the open fails
 * with ENOSPC and the file is not kept, so that a caller unwinds without it
 * (by frame pointers) rather than grow. Tables converted from .eh_frame
 * after the open replace the copy of the section they come from, so the
 * bound holds within what a conversion makes more than it reads.
 */
SFU_API void sfu_cache__set_limit(struct sfu_cache *cache, size_t bytes);

/** @return sfu_module__memory() of every module the cache holds, summed. */
SFU_API size_t sfu_cache__memory(const struct sfu_cache *cache);

/** @return how many opens sfu_cache__set_limit()'s bound refused so far. */
SFU_API uint64_t sfu_cache__refused(const struct sfu_cache *cache);

/** @return the number of distinct modules the cache holds. */
SFU_API size_t sfu_cache__count(const struct sfu_cache *cache);

/**
 * sfu_cache__trim() - release the modules nothing but the cache holds (no
 * address space maps them any more): a long recording with many short-lived
 * programs then keeps the modules of the live ones only. A module released
 * is opened again if a file of it is mapped later.
 *
 * @return the number of modules released.
 */
SFU_API size_t sfu_cache__trim(struct sfu_cache *cache);

/**
 * sfu_cache__set_dir() - the disk cache for tables derived from .eh_frame.
 * @dir: see sfu_module__set_cache_dir(); NULL turns it off (the default).
 *
 * Applies to modules this cache opens from now on: a second run of a
 * profiler then reads each library's converted table instead of converting
 * it again (a profiler would use $XDG_CACHE_HOME/sfprof or ~/.cache/sfprof).
 * A table is read from it, or written to it, only while it and every
 * directory on the way are owned by the effective user or root and
 * writable by no one else (one on the way may be sticky, as /tmp is), and
 * a table only if so is its file: another user's tables are never trusted.
 *
 * @return 0, -EPERM when @dir exists and is not such a directory (nothing
 * set), or -ENOMEM.
 */
SFU_API int sfu_cache__set_dir(struct sfu_cache *cache, const char *dir);

/**
 * sfu_cache__set_flags() - SFU_MODULE_OPEN_* flags for the files this cache
 * opens from now on (a profiler that only unwinds: SFU_MODULE_OPEN_NO_SYMBOLS).
 */
SFU_API void sfu_cache__set_flags(struct sfu_cache *cache, unsigned flags);

/* A function of a Go program, from the file's own table (.gopclntab). */
struct sfu_go_func {
	const char *name;	/* Go's name ("main.main"), valid as long as the module */
	uint64_t entry;		/* ELF address */
	uint64_t end;		/* exclusive: the next function's entry */
	uint8_t flags;		/* SFU_GO_FUNC_* */
};

#define SFU_GO_FUNC_TOPFRAME 0x1	/* starts its stack (runtime.goexit, mstart, rt0_go) */
#define SFU_GO_FUNC_SPWRITE 0x2		/* switches stacks (runtime.systemstack, mcall) */

/**
 * sfu_module__go_func() - the Go function whose range holds @vaddr, from
 * .gopclntab (found by its section, or by its magic in a file without
 * section headers; Go 1.16 and later): names that a stripped Go program
 * (-ldflags=-s) keeps.
 *
 * @return 0, -ENOENT when the module has no Go table or it does not cover
 * @vaddr, -EBADMSG when the table is damaged there.
 */
SFU_API int sfu_module__go_func(const struct sfu_module *m, uint64_t vaddr,
				struct sfu_go_func *out);

/**
 * sfu_module__go_inlined() - the Go functions at @vaddr, innermost first:
 * those Go's inline tree says were inlined there, then the function itself.
 * Up to @max names are stored (valid as long as the module); *@count says how
 * many there are (1 where nothing is inlined).
 *
 * @return 0, -ENOENT when the module has no Go table, it does not cover
 * @vaddr or its inline trees cannot be found (Go 1.18+ keeps them at an
 * address only the moduledata gives), -EBADMSG for a damaged table.
 */
SFU_API int sfu_module__go_inlined(const struct sfu_module *m, uint64_t vaddr, const char **names,
				   size_t max, size_t *count);

/** @return the number of functions in the module's Go table (0 without one). */
SFU_API size_t sfu_module__go_func_count(const struct sfu_module *m);

/**
 * sfu_module__go_func_at() - function @i of the module's Go table, in address order.
 * @return 0, -ENOENT when @i is out of range or there is no table, -EBADMSG.
 */
SFU_API int sfu_module__go_func_at(const struct sfu_module *m, size_t i, struct sfu_go_func *out);

#ifdef __cplusplus
}
#endif

#endif
