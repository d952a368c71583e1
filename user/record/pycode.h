/* SPDX-License-Identifier: BSD-2-Clause */
/* CPython code objects read from another process: names, file and the line of an instruction. */
#ifndef SFPROF_PYCODE_H
#define SFPROF_PYCODE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Offsets within one CPython minor version's objects, as its release builds
 * lay them out on 64-bit Linux (checked against the DWARF of pyenv's builds:
 * `ptype /o PyCodeObject`, `PyASCIIObject`, `PyCompactUnicodeObject`,
 * `PyBytesObject`, `PyTypeObject`). An offset of 0 means the version has no
 * such field (0 is ob_refcnt in every object, never one of these).
 */
struct pycode_layout {			/* offsets within the version's PyCodeObject and str objects */
	unsigned version;		/* 310, 311, 312, 313 */
	uint32_t co_qualname, co_name, co_filename, co_firstlineno, co_linetable, co_code_adaptive;
	/* 3.10: the bytes object of the bytecode (f_lasti counts its 2-byte units) */
	uint32_t co_code;
	/* PyObject */
	uint32_t ob_type;
	/* PyTypeObject */
	uint32_t tp_name, tp_flags;
	/* PyVarObject, PyBytesObject */
	uint32_t ob_size, bytes_sval;
	/* PyASCIIObject, PyCompactUnicodeObject */
	uint32_t str_length, str_state, str_ascii_data, str_compact_data;
};

/** pycode_layout__for() - the layout of CPython 3.@minor (10-13) release builds, or NULL. */
const struct pycode_layout *pycode_layout__for(unsigned minor);

/* The bytes of 3.13's _Py_DebugOffsets pycode_layout__debug_offsets() reads (to unicode_object). */
#define PYCODE_DEBUG_OFFSETS_LEN	568

/**
 * pycode_layout__debug_offsets() - the layout 3.13 publishes at the start of _PyRuntime
 * (_Py_DebugOffsets: cookie "xdebugpy", version, free_threaded, then its code, type, bytes
 * and str objects' offsets), from @len bytes read there, into @out. Only 3.13's struct
 * (3.14 moved its fields) of a build with the GIL. @return 0, -ENOENT for no such struct
 * (no cookie, another version, free-threaded), -EBADMSG for offsets out of bounds.
 */
int pycode_layout__debug_offsets(const uint8_t *buf, size_t len, struct pycode_layout *out);

/* Reads @len bytes at @addr of the process: 0 or -errno. */
typedef int (*pycode_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/*
 * Names are UTF-8, cut at a character boundary to fit (NUL included); a NUL or
 * a lone surrogate in the str becomes U+FFFD. They are the process's bytes:
 * views escape them like any other outside text. line 0: unknown (the
 * instruction has no line, or lies past the table).
 */
struct pycode_info { char qualname[256]; char file[512]; uint32_t firstlineno, line; };

/* Bytes of a line table read at most; a longer one gives line 0 with the names. */
#define PYCODE_LINETABLE_MAX	(256u << 10)

/**
 * pycode__resolve() - a code object's names and the line of byte offset @instr_off into its
 * bytecode (co_code_adaptive for 3.11+, co_code for 3.10), all reads bounded; garbage gives
 * -EBADMSG (never a crash or a hang). @return 0 or -errno.
 *
 * The object must be of a type named "code", its names of str types; a read that
 * fails gives the reader's error (-EFAULT, -EIO, -ESRCH ...). 3.10 has no
 * co_qualname: qualname is co_name.
 */
int pycode__resolve(const struct pycode_layout *l, pycode_read_fn read, void *ctx, uint64_t code,
		    uint64_t instr_off, struct pycode_info *out);

/**
 * pycode__line() - the line of byte offset @instr_off in @table, the co_linetable
 * bytes of @version (310: PEP 626 pairs; 311+: PEP 657 location entries), counted
 * from @firstlineno. @return the line, 0 when it has none or the table is
 * damaged or ends before the offset.
 */
uint32_t pycode__line(unsigned version, const uint8_t *table, size_t len, uint32_t firstlineno,
		      uint64_t instr_off);

/*
 * A cache per process of code objects: an address holds its names and line
 * table once read, so each (address, offset) costs one lookup after the first.
 * Failures are kept too, for a few lookups, so a process that points at
 * garbage costs a read now and then, and a read that failed once is tried again. Direct-mapped: a colliding address replaces the one held, which bounds
 * the entries; line tables are held up to 2 MiB in all, the others read again
 * at each lookup. A code object freed and another made at its address
 * keeps the old names until it is replaced or the cache cleared (on exec).
 */
struct pycode_cache;

/** pycode_cache__new() - a cache of at most @max_entries code objects (rounded up to a power of 2); NULL with errno set. */
struct pycode_cache *pycode_cache__new(size_t max_entries);

/** pycode_cache__free() - free @c; NULL is fine. */
void pycode_cache__free(struct pycode_cache *c);

/** pycode_cache__clear() - forget every code object (the process exec'd, or its interpreter went). */
void pycode_cache__clear(struct pycode_cache *c);

/**
 * pycode_cache__lookup() - pycode__resolve() through @c: the held answer for
 * @code when there is one (for @l's version), else read and held.
 * @return 0 or -errno, as pycode__resolve() (a held failure again).
 */
int pycode_cache__lookup(struct pycode_cache *c, const struct pycode_layout *l, pycode_read_fn read,
			 void *ctx, uint64_t code, uint64_t instr_off, struct pycode_info *out);

/* Where a code object's name and file pointers are, hashed as the sampler hashes them (py_check_hash()). */
struct pycode_check {
	uint32_t offset;	/* in the code object */
	unsigned words;		/* 1 to PY_CHECK_WORDS */
};

/**
 * pycode_cache__lookup_checked() - pycode_cache__lookup() of the object whose
 * names' hash, as the sampler read it, is @want (0: not read). A held answer
 * serves only a frame of the same hash, so that names read before the
 * process exited still name its late samples; otherwise the object is read
 * again. @return as pycode_cache__lookup(), or -ESTALE when the object at
 * @code is not the one the sampler saw (its names' hash differs).
 */
int pycode_cache__lookup_checked(struct pycode_cache *c, const struct pycode_layout *l,
				 pycode_read_fn read, void *ctx, uint64_t code, uint64_t instr_off,
				 const struct pycode_check *check, uint32_t want, struct pycode_info *out);

/** pycode_cache__stats() - lookups answered from the cache (@hits) and by reading (@misses). */
void pycode_cache__stats(const struct pycode_cache *c, uint64_t *hits, uint64_t *misses);

#endif
