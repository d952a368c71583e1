/* SPDX-License-Identifier: BSD-2-Clause */
/* The vDSO images a recording's processes map: read from memory once, made modules with a build ID. */
#ifndef SFPROF_VDSO_H
#define SFPROF_VDSO_H

#include <stdint.h>

#include "sfunwind.h"

struct vdso_set;

/**
 * vdso_set__new() - the vDSO images of a recording, opened through @cache.
 * Nothing is read until a process's [vdso] mapping is asked about.
 * @return the set, or NULL with errno set (ENOMEM).
 */
struct vdso_set *vdso_set__new(struct sfu_cache *cache);

/** vdso_set__free() - drop the images and their modules' references; accepts NULL. */
void vdso_set__free(struct vdso_set *v);

/**
 * vdso_set__module() - the module of the vDSO process @pid maps at
 * @start-@end: an ELF file in memory (a memfd, its path /proc/self/fd/N)
 * holding the image's bytes, so that the unwinder reads its .eh_frame, and
 * the build-ID cache keeps it like any binary for report to name its
 * frames. The image is read from the process (/proc/PID/mem) and shared
 * with every process mapping the same bytes (the kernel maps one image per
 * ABI); a process that cannot be read gets sfprof's own image when its
 * mapping has the same length, and none otherwise.
 *
 * @return a new reference to the module, or NULL (errno set) when none.
 */
struct sfu_module *vdso_set__module(struct vdso_set *v, uint32_t pid, uint64_t start,
				    uint64_t end);

/**
 * vdso_image_size() - the bytes of the ELF image at @data (@len readable):
 * the end of its furthest program header, section header table or
 * section, checked against @len.
 * @return the size, or 0 when @data is no ELF image that fits in @len.
 */
uint64_t vdso_image_size(const uint8_t *data, uint64_t len);

#endif
