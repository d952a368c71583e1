/* SPDX-License-Identifier: BSD-2-Clause */
/* What the cache and the address space need of a module beyond the public API. */
#ifndef SFU_MODULE_INTERNAL_H
#define SFU_MODULE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "sfunwind/module.h"
#include "sfunwind/unwind.h"

/* Identity of a file: equal ids mean the same bytes, short of a clock skew. */
struct sfu_file_id {
	uint64_t dev;
	uint64_t ino;
	uint64_t size;
	uint64_t mtime_sec;
	uint64_t mtime_nsec;
};

/** sfu_file_id__from_stat() - fill @id from a stat() result. */
void sfu_file_id__from_stat(struct sfu_file_id *id, const struct stat *st);

/** @return <0, 0 or >0 as @a sorts before, with or after @b. */
int sfu_file_id__cmp(const struct sfu_file_id *a, const struct sfu_file_id *b);

/** @return the identity of the file the module was read from, as fstat() saw it. */
const struct sfu_file_id *sfu_module__file_id(const struct sfu_module *m);

/** @return the references to @m now (the cache's own included). */
unsigned sfu_module__refs(const struct sfu_module *m);

/** @return <0, 0 or >0 as build ID @a sorts before, with or after @b. */
int sfu_build_id__cmp(const struct sfu_build_id *a, const struct sfu_build_id *b);

/**
 * sfu_module__in_plt() - whether @vaddr is in a PLT section (.plt, .plt.sec,
 * .iplt). Stubs there touch neither the stack nor the link register.
 */
bool sfu_module__in_plt(const struct sfu_module *m, uint64_t vaddr);

/**
 * sfu_module__entry() - the module's entry routine (e_entry, where a process
 * or the dynamic loader starts), as [*start, *end) ELF addresses: through
 * its first call, as sfu_code__entry_end() decodes it. No frame in it has a
 * caller. @return false when the module has none (e_entry 0, outside an
 * executable segment, or code that does not decode to such a routine).
 */
bool sfu_module__entry(const struct sfu_module *m, uint64_t *start, uint64_t *end);

/* See code_rows.c. */
int sfu_code__entry_end(enum sfu_arch arch, uint64_t addr, const uint8_t *code, size_t len,
			uint64_t *end);

struct sfu_gopclntab;

/**
 * sfu_module__gopclntab() - a Go program's own function table, or NULL.
 * @sigreturn: optional; receives the entry of Go's sa_restorer, or 0.
 */
const struct sfu_gopclntab *sfu_module__gopclntab(const struct sfu_module *m, uint64_t *sigreturn);

#endif
