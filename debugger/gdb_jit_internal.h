/* SPDX-License-Identifier: BSD-2-Clause */
/* The GDB JIT reader's view of the debugged process: which one, its mappings, its threads. */
#ifndef SFUNWIND_GDB_JIT_INTERNAL_H
#define SFUNWIND_GDB_JIT_INTERNAL_H

#include <stdint.h>

#include <gdb/jit-reader.h>

#include "sfunwind/unwind.h"

/*
 * The process GDB debugs, as the reader finds it without being told: GDB's
 * live tracee (found through /proc) or the core file GDB has open.
 */
struct jit_target;

/** jit_target__new() - @return an empty target for @arch, or NULL with errno set. */
struct jit_target *jit_target__new(enum sfu_arch arch);

/** jit_target__free() - close everything; accepts NULL. */
void jit_target__free(struct jit_target *t);

/**
 * jit_target__space() - the address space of the process whose memory GDB
 * reads through @read, found (again) when needed.
 * @pc, @sp: the registers of the frame GDB asks about, used to verify that
 *           the process found is the one GDB reads.
 *
 * @return the address space, or NULL when no process can be told apart.
 */
const struct sfu_addrspace *jit_target__space(struct jit_target *t, gdb_target_read *read,
					      uint64_t pc, uint64_t sp);

/**
 * jit_target__is_stop() - whether @pc and @sp are a thread's own registers
 * where it stopped (the innermost frame of that thread).
 *
 * @return 1 when they are, 0 when they are no thread's, or a negative errno
 * when the threads' registers cannot be read.
 */
int jit_target__is_stop(struct jit_target *t, uint64_t pc, uint64_t sp);

/**
 * jit_target__probe_core() - parse @fd as a core file the way the reader
 * does when GDB has one open (mappings from NT_FILE, threads from
 * NT_PRSTATUS, stack bytes from PT_LOAD), then forget it. For the fuzzer:
 * core files are untrusted input.
 * @fd: owned by the call (closed).
 *
 * @return 0, or a negative errno (-ENOEXEC: not a core of this
 * architecture; -EBADMSG: malformed).
 */
int jit_target__probe_core(struct jit_target *t, int fd);

#endif
