/* SPDX-License-Identifier: BSD-2-Clause */
/* CPython interpreters found in recorded processes: told to the sampler's frame walk, and its frames named. */
#ifndef SFPROF_PYTHON_H
#define SFPROF_PYTHON_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "py_walk.h"	/* struct py_proc */
#include "pycode.h"
#include "sample.h"

/* The cookie at the start of _PyRuntime in 3.13+: _Py_DebugOffsets follows. */
#define PYTHON_DEBUG_COOKIE	"xdebugpy"

/*
 * What is known of an interpreter's build: its minor version and where its
 * _PyRuntime is in the file (a virtual address), from the file alone.
 */
struct python_build {
	unsigned minor;			/* 10 ... 13 */
	uint64_t runtime_vaddr;		/* _PyRuntime's st_value */
	struct {
		uint64_t vaddr, offset, filesz;	/* page-aligned vaddr and offset */
	} loads[8];			/* the PT_LOADs: the bias of a mapping of any of them */
	unsigned nloads;
	struct py_proc proc;		/* interp_head relative to _PyRuntime (add its address) */
	uint32_t co_code_adaptive;	/* the bytecode's offset in a code object (3.11+) */
	bool from_debug_offsets;	/* proc's offsets are the interpreter's own (3.13+) */
};

/**
 * python_layout__table() - the offsets the walk needs for CPython 3.@minor
 * release builds (10-13, from their DWARF) into @out, interp_head holding
 * the offset of interpreters.head in _PyRuntime. @return 0, or -ENOENT for
 * a version not in the table.
 */
int python_layout__table(unsigned minor, struct py_proc *out, uint32_t *co_code_adaptive);

/**
 * python_layout__debug_offsets() - the same from the _Py_DebugOffsets at
 * the start of a 3.13 _PyRuntime (@buf, @len bytes of it, untrusted): the
 * cookie checked, the version it names against @minor, every offset
 * against the bounds the walk reads within. @return 0, -ENOENT without
 * the cookie or for another version's layout, -EBADMSG for offsets the
 * walk cannot use.
 */
int python_layout__debug_offsets(const uint8_t *buf, size_t len, unsigned minor,
				 struct py_proc *out, uint32_t *co_code_adaptive);

/**
 * python_build__read() - whether the ELF file @path is an interpreter
 * (libpython3.X.so*, or a program exporting _PyRuntime): its build in
 * @out. @return 0, -ENOENT when it is not one or its version is not
 * supported, another -errno when it cannot be read.
 */
int python_build__read(const char *path, struct python_build *out);

/**
 * python__instr_offset() - the byte offset in the bytecode of the
 * instruction @f says its frame is at (sample.h: f_lasti, prev_instr or
 * instr_ptr by version), for pycode__resolve(). @return it, or UINT64_MAX
 * when it is not inside the first 16 MiB of the code object's bytecode.
 */
uint64_t python__instr_offset(unsigned minor, uint32_t co_code_adaptive,
			      const struct sample_py_frame *f);

struct python_stats {
	uint64_t processes;		/* processes found running an interpreter */
	uint64_t frames;		/* Python frames resolved */
	uint64_t unresolved;		/* frames whose code object could not be read */
	uint64_t stale;			/* frames whose code object was gone when named (another at its address) */
};

struct python;

/* Where processes' interpreters are told: the sampler's py_procs map (libbpf stays out of here). */
struct python_map_ops {
	int (*update)(void *ctx, uint32_t pid, const struct py_proc *proc);	/* 0 or -errno */
	void (*remove)(void *ctx, uint32_t pid);
	bool (*wanted)(void *ctx, uint32_t pid);	/* whether @pid is recorded (NULL: all are) */
	void *ctx;
};

/**
 * python__new() - processes' interpreters, told through @ops (NULL: to no
 * one, for tests; copied). @return it, or NULL with errno set.
 */
struct python *python__new(const struct python_map_ops *ops);

/**
 * python__proc() - what the walk was told of @pid's interpreter into @out.
 * @return 0, or -ENOENT when none is known.
 */
int python__proc(struct python *py, uint32_t pid, struct py_proc *out);

/** python__free() - accepts NULL. What it told stays (the map goes with the sampler). */
void python__free(struct python *py);

/**
 * python__mapped() - process @pid mapped file @path (as it names it) at
 * @start from file offset @pgoff, executable: if the file is an
 * interpreter (a libpython3*, or the process's own program exporting
 * _PyRuntime), the process is told to the walk. A process keeps the first
 * interpreter found until its exec or exit.
 * @return 1 when it was one, 0 when not, or -errno.
 */
int python__mapped(struct python *py, uint32_t pid, const char *path, uint64_t start,
		   uint64_t pgoff);

/** python__scan() - python__mapped() for each executable file mapping in /proc/@pid/maps. @return as it. */
int python__scan(struct python *py, uint32_t pid);

/** python__forget() - @pid exec'd or exited: its interpreter is gone. */
void python__forget(struct python *py, uint32_t pid);

/* How long an exited process's names are kept for its samples still queued (as proctab keeps it). */
#define PYTHON_EXIT_GRACE_NS	2000000000ull

/**
 * python__exited() - @pid exited at @time_ns: no more walks of it, but the
 * names read while it ran still name its samples that come after the exit
 * for PYTHON_EXIT_GRACE_NS; processes exited longer ago are forgotten.
 */
void python__exited(struct python *py, uint32_t pid, uint64_t time_ns);

/**
 * python__resolve() - the name, file and line of frame @f of a sample of
 * @pid, read from its memory (cached per process). @return 0, -ENOENT for
 * a process with no interpreter known, -ESTALE when the code object the
 * sample saw is no longer at its address (its names, read at sample time
 * by the sampler, differ from those there now), or pycode__resolve()'s
 * error.
 */
int python__resolve(struct python *py, uint32_t pid, const struct sample_py_frame *f,
		    struct pycode_info *out);

/** python__count_named() - count a frame named from the caller's own memo of python__resolve()'s answers. */
void python__count_named(struct python *py);

/** @return counters for the summary. */
const struct python_stats *python__stats(const struct python *py);

#endif
