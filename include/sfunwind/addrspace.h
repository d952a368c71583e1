/* SPDX-License-Identifier: BSD-2-Clause */
/* Address spaces: the modules mapped into one process, looked up by address. */
#ifndef SFUNWIND_ADDRSPACE_H
#define SFUNWIND_ADDRSPACE_H

#include <stdint.h>
#include <sys/types.h>

#include "sfunwind/diag.h"
#include "sfunwind/module.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One executable mapping of a module. */
struct sfu_mapping {
	uint64_t start;
	uint64_t end;		/* exclusive */
	uint64_t file_offset;
	uint64_t bias;		/* runtime address = ELF vaddr + bias */
	uint32_t prot;		/* PROT_READ | PROT_WRITE | PROT_EXEC */
	struct sfu_module *module;	/* NULL for anonymous or unreadable files */
	const char *path;	/* as the process names it; owned by the address space */
};

struct sfu_addrspace;

/**
 * sfu_addrspace__new() - an empty address space.
 * @cache: where modules are opened; may be NULL for a private one.
 * @root: optional prefix for opening files (e.g. "/proc/PID/root"), or NULL.
 *
 * @return the address space, or NULL with errno set.
 */
SFU_API struct sfu_addrspace *sfu_addrspace__new(struct sfu_cache *cache, const char *root);

/** sfu_addrspace__free() - accepts NULL. */
SFU_API void sfu_addrspace__free(struct sfu_addrspace *as);

/**
 * sfu_addrspace__add() - add a mapping from an explicit description.
 * @path: file to open (prefixed by the root), or NULL for an anonymous range.
 * @module: optional module already opened; takes a new reference. When NULL
 *          and @path is given, the module is opened through the cache; a
 *          file that cannot be opened leaves the mapping without a module.
 *
 * Overlapping mappings replace the old ones where they overlap, as mmap does.
 *
 * @return 0 or a negative errno (-EINVAL for end <= start, -ENOMEM).
 */
SFU_API int sfu_addrspace__add(struct sfu_addrspace *as, uint64_t start, uint64_t end,
		       uint64_t file_offset, uint32_t prot, const char *path,
		       struct sfu_module *module);

/**
 * sfu_addrspace__load_pid() - add the executable mappings of process @pid
 * from /proc/PID/maps, opening files through /proc/PID/root.
 *
 * @return 0, or a negative errno (-ESRCH when the process is gone).
 */
SFU_API int sfu_addrspace__load_pid(struct sfu_addrspace *as, pid_t pid, struct sfu_diag *diag);

/**
 * sfu_addrspace__load_maps() - add the executable mappings listed in a
 * /proc/PID/maps style text.
 *
 * @return 0, or -EBADMSG for a line that does not parse.
 */
SFU_API int sfu_addrspace__load_maps(struct sfu_addrspace *as, const char *text, size_t len,
			     struct sfu_diag *diag);

/**
 * sfu_addrspace__find() - the mapping containing @addr, in O(log n).
 * @return the mapping, or NULL.
 */
SFU_API const struct sfu_mapping *sfu_addrspace__find(const struct sfu_addrspace *as, uint64_t addr);

/** sfu_addrspace__mappings() - all mappings sorted by address. */
SFU_API const struct sfu_mapping *sfu_addrspace__mappings(const struct sfu_addrspace *as, size_t *count);

#ifdef __cplusplus
}
#endif

#endif
