/* SPDX-License-Identifier: BSD-2-Clause */
/* ELF modules: build ID, loadable segments, unwind tables and symbols, cached by build ID. */
#ifndef SFUNWIND_MODULE_H
#define SFUNWIND_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sfunwind/diag.h"
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
 * order) and the function symbols of `.symtab` and `.dynsym`. A corrupt
 * SFrame section does not fail the open: the module has no SFrame table and
 * sfu_module__sframe_error() says why.
 *
 * @return the module with one reference, or NULL with errno set (ENOENT,
 * EACCES, EBADMSG for a file that is not a usable ELF file, ENOMEM).
 */
struct sfu_module *sfu_module__open(const char *path, struct sfu_diag *diag);

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
struct sfu_module *sfu_module__new(const char *name, const struct sfu_build_id *build_id,
				   uint16_t machine, const struct sfu_segment *segs,
				   size_t num_segs, struct sfu_sframe *sframe);

/** sfu_module__get() - take a reference. @return @m. */
struct sfu_module *sfu_module__get(struct sfu_module *m);

/** sfu_module__put() - drop a reference; the last one frees. Accepts NULL. */
void sfu_module__put(struct sfu_module *m);

/** @return the path the module was opened from. */
const char *sfu_module__path(const struct sfu_module *m);

/** @return the GNU build ID (len 0 when the file has none). */
const struct sfu_build_id *sfu_module__build_id(const struct sfu_module *m);

/** @return the ELF machine (EM_X86_64, EM_AARCH64, ...). */
uint16_t sfu_module__machine(const struct sfu_module *m);

/** @return true for ET_DYN (PIE or shared library). */
bool sfu_module__is_dyn(const struct sfu_module *m);

/** @return the size of the file in bytes. */
uint64_t sfu_module__file_size(const struct sfu_module *m);

/** sfu_module__segments() - the PT_LOAD segments, in program header order. */
const struct sfu_segment *sfu_module__segments(const struct sfu_module *m, size_t *count);

/** @return the decoded SFrame table, or NULL when the module has none. */
const struct sfu_sframe *sfu_module__sframe(const struct sfu_module *m);

/** @return where the SFrame table came from. */
enum sfu_sframe_origin sfu_module__sframe_origin(const struct sfu_module *m);

/** @return why the SFrame data present could not be decoded, or NULL. */
const char *sfu_module__sframe_error(const struct sfu_module *m);

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
int sfu_module__symbolize(const struct sfu_module *m, uint64_t vaddr,
			  const char **name, uint64_t *offset);

/**
 * sfu_module__symbol_addr() - the address of function symbol @name.
 * @return 0 and fills @vaddr, or -ENOENT.
 */
int sfu_module__symbol_addr(const struct sfu_module *m, const char *name, uint64_t *vaddr);

/**
 * sfu_module__bias() - load bias of a mapping of this module.
 * @map_start: the mapping's start address.
 * @file_offset: the file offset mapped there.
 *
 * @return 0 and fills @bias (runtime address = ELF vaddr + bias), or
 * -ENOENT when no PT_LOAD segment maps @file_offset.
 */
int sfu_module__bias(const struct sfu_module *m, uint64_t map_start,
		     uint64_t file_offset, uint64_t *bias);

/**
 * sfu_cache__new() - a cache of modules keyed by build ID.
 *
 * A file is opened and decoded once, however many address spaces map it and
 * under whatever path. Not thread-safe: one cache per thread, or a lock.
 *
 * @return the cache, or NULL with errno set.
 */
struct sfu_cache *sfu_cache__new(void);

/** sfu_cache__free() - drop the cache's references; accepts NULL. */
void sfu_cache__free(struct sfu_cache *cache);

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
struct sfu_module *sfu_cache__open(struct sfu_cache *cache, const char *path,
				   const struct sfu_build_id *expect, struct sfu_diag *diag);

/** @return the number of distinct modules the cache holds. */
size_t sfu_cache__count(const struct sfu_cache *cache);

#ifdef __cplusplus
}
#endif

#endif
