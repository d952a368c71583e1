/* SPDX-License-Identifier: BSD-2-Clause */
/* Seeds of fuzz_unwind: a program that captures its own registers and stack (unwind_seed_lib.c, unwind_seed_prog.cc). */
#ifndef SFPROF_FUZZ_UNWIND_SEED_H
#define SFPROF_FUZZ_UNWIND_SEED_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* fuzz_unwind's module slots */
enum { UNW_LIBC = 0, UNW_LIB = 1, UNW_PROG = 2 };

/* Where captures go: PREFIX-N. */
void unw_set_output(const char *prefix);

/* Write one seed: these registers, the load addresses of the modules, the stack from @sp up. */
void unw_capture(uint64_t pc, uint64_t sp, uint64_t fp, unsigned module);

/* Recurse @depth times through frames of varied shapes, then call @cb. */
int lib_walk(int depth, int (*cb)(int), int arg);

#ifdef __cplusplus
}
#endif

/*
 * The registers where this is written, with the pc at the capture itself:
 * the stack from sp up is the one the unwind tables describe at that pc.
 */
#define UNW_CAPTURE(module) do {						\
	uint64_t pc_, sp_, fp_;							\
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"	\
			 : "=r"(pc_), "=r"(sp_), "=r"(fp_));			\
	unw_capture(pc_, sp_, fp_, (module));					\
} while (0)

#endif
