/* SPDX-License-Identifier: BSD-2-Clause */
/* The kernel's JIT code (BPF programs) written into a profile, as perf's KSYMBOL events keep it. */
#ifndef SFPROF_KERNEL_JIT_H
#define SFPROF_KERNEL_JIT_H

#include <stdint.h>

#include "profile/profile.h"

/* A JIT record of the kernel's code: pid 0, source KERNEL_JIT_SOURCE. */
#define KERNEL_JIT_SOURCE "[bpf]"

struct kernel_jit;

/** kernel_jit__new() - a scanner of the BPF programs loaded; NULL (errno) when out of memory. */
struct kernel_jit *kernel_jit__new(void);
void kernel_jit__free(struct kernel_jit *k);

/**
 * kernel_jit__write() - write a JIT record (pid 0) for each function of each BPF program
 * loaded now that this window has not had yet: its range from the program's own info,
 * its name as /proc/kallsyms gives it. Programs the kernel does not let us see (not
 * root, addresses hidden) are left out: their frames stay unnamed.
 *
 * @return 0, or the writer's negative errno.
 */
int kernel_jit__write(struct kernel_jit *k, struct profile_writer *w, uint64_t time_ns);

/** kernel_jit__new_window() - the next writer is a file of its own: every program written again. */
void kernel_jit__new_window(struct kernel_jit *k);

#endif
