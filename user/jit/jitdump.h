/* SPDX-License-Identifier: BSD-2-Clause */
/* perf's jitdump files (jit-PID.dump) that JIT runtimes write: records parsed as hostile bytes, read while they grow. */
#ifndef SFPROF_JITDUMP_H
#define SFPROF_JITDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The format, as perf reads it (tools/perf/util/jitdump.[ch]) and V8
 * (src/diagnostics/perf-jit.cc), CPython 3.13+ (Python/perf_jit_trampoline.c,
 * -X perf_jit) and perf's own JVMTI agent write it; the specification is
 * tools/perf/Documentation/jitdump-specification.txt.
 *
 * A file header: u32 magic 0x4A695444 ("JiTD"; read as 0x4454694A the file
 * is in the other byte order and every field of the header and the records
 * is swapped), u32 version (1), u32 total_size (the header's bytes: records
 * start there), u32 elf_mach, u32 pad1, u32 pid, u64 timestamp, u64 flags
 * (bit 0: JITDUMP_FLAGS_ARCH_TIMESTAMP). Then records, one after another
 * without padding between them: u32 id, u32 total_size (the whole record,
 * this prefix included), u64 timestamp, then by id:
 *
 *   0 CODE_LOAD   u32 pid, u32 tid, u64 vma, u64 code_addr, u64 code_size,
 *                 u64 code_index, the name with its NUL, code_size bytes of code
 *   1 CODE_MOVE   u32 pid, u32 tid, u64 vma, u64 old_code_addr, u64 new_code_addr,
 *                 u64 code_size, u64 code_index
 *   2 DEBUG_INFO  u64 code_addr, u64 nr_entry, then nr_entry entries of
 *                 u64 addr, i32 line, i32 discrim, the file name with its NUL
 *   3 CODE_CLOSE  nothing
 *   4 UNWINDING_INFO  u64 unwinding_size, u64 eh_frame_hdr_size, u64 mapped_size,
 *                 unwinding_size bytes: .eh_frame, then .eh_frame_hdr (its last
 *                 eh_frame_hdr_size bytes); it applies to the next CODE_LOAD
 *
 * What this reader accepts, where the writers and perf leave room:
 *
 * - The header: version 1 only. total_size at least 32 (a header without
 *   flags, as some writers' older copies of the struct have; flags read as 0
 *   then) and at most JITDUMP_RECORD_MAX; more than the 40 bytes known is
 *   skipped. elf_mach and pad1 are not checked: CPython 3.13.0 leaves
 *   elf_mach 0 and pad1 uninitialized.
 * - A record whose total_size is below its fixed fields, above
 *   JITDUMP_RECORD_MAX, or too small for what its fields say follows, is
 *   damage (-EBADMSG): the framing can no longer be trusted, and reading
 *   stops there. Bytes a record has beyond its contents (V8 pads DEBUG_INFO
 *   and UNWINDING_INFO records to 8 bytes) are ignored.
 * - Unknown ids are delivered with their body and nothing parsed, and
 *   skipped by their total_size, as perf skips them.
 * - CODE_LOAD: the name must end with a NUL inside the record, and the code
 *   follows the NUL (perf takes the code from the record's end instead;
 *   producers write no bytes after it, so both agree on them). code_size 0 is
 *   an empty function. A name longer than JITDUMP_NAME_MAX is delivered cut
 *   to JITDUMP_NAME_MAX bytes with name_cut set (a UTF-8 character may be cut
 *   in two); the code still starts after the whole name.
 * - DEBUG_INFO: nr_entry is never trusted: each entry must fit, file name
 *   and NUL included, inside the record, or the record is damage. Entries
 *   are delivered as written: a file name of "\xff" means "the same file as
 *   the entry before" to perf (genelf_debug.c; V8's record struct describes
 *   it), and V8 writes each entry's addr as the code address plus 0x40 (the
 *   offset perf inject once gave .text in its ELF files; Node 20 does).
 * - UNWINDING_INFO: eh_frame_hdr_size <= unwinding_size <= the bytes after
 *   the fixed fields. An empty .eh_frame with only a header is valid (V8
 *   writes one for code without unwinding information).
 * - Timestamps pass through unchanged: CLOCK_MONOTONIC nanoseconds unless
 *   the header has JITDUMP_FLAGS_ARCH_TIMESTAMP (then the architecture's
 *   counter, TSC on x86).
 *
 * Limits:
 * - JITDUMP_RECORD_MAX: the largest record (and header) read; a larger
 *   total_size is damage. jitdump_file holds in memory at most twice the
 *   bytes of the record it is reading and one read chunk
 *   (JITDUMP_READ_CHUNK), whatever the file's size; a total_size is not
 *   given memory before the record's bytes are in the file.
 * - JITDUMP_NAME_MAX: the longest code or file name delivered whole.
 */
#define JITDUMP_MAGIC			0x4A695444u
#define JITDUMP_MAGIC_SWAPPED		0x4454694Au
#define JITDUMP_VERSION			1
#define JITDUMP_HEADER_SIZE		40	/* the header fields known */
#define JITDUMP_HEADER_MIN		32	/* a header without flags */
#define JITDUMP_PREFIX_SIZE		16	/* id, total_size, timestamp */
#define JITDUMP_FLAGS_ARCH_TIMESTAMP	(1ull << 0)
#define JITDUMP_RECORD_MAX		(64u << 20)
#define JITDUMP_NAME_MAX		4096
#define JITDUMP_READ_CHUNK		(64u << 10)
/* Room for any reason this reader gives. */
#define JITDUMP_WHY_MAX			160

struct jitdump_header {
	uint32_t version;
	uint32_t total_size;	/* bytes of header: the first record starts here */
	uint32_t elf_mach;	/* e_machine of the code, or 0 (CPython 3.13.0) */
	uint32_t pid;
	uint64_t timestamp;
	uint64_t flags;		/* JITDUMP_FLAGS_ARCH_TIMESTAMP; 0 when total_size < 40 */
	bool swapped;		/* the file's byte order is not the host's */
};

enum jitdump_rec_id {
	JITDUMP_CODE_LOAD = 0,
	JITDUMP_CODE_MOVE = 1,
	JITDUMP_CODE_DEBUG_INFO = 2,
	JITDUMP_CODE_CLOSE = 3,
	JITDUMP_CODE_UNWINDING_INFO = 4,
};

/*
 * One record, decoded in place: pointers point into the bytes given to
 * jitdump__next(). For jitdump_file they are valid only during the
 * callback: an UNWINDING_INFO's bytes must be copied to serve the CODE_LOAD
 * after it, which may come in a later callback or a later poll.
 */
struct jitdump_record {
	uint32_t id;		/* enum jitdump_rec_id, or an id this reader does not know */
	uint32_t size;		/* total_size: the whole record, prefix included */
	uint64_t timestamp;
	const uint8_t *body;	/* the size - JITDUMP_PREFIX_SIZE bytes after the prefix */
	size_t body_len;
	union {
		struct {
			uint32_t pid, tid;
			uint64_t vma, code_addr, code_size, code_index;
			const char *name;	/* NUL-terminated in the record; use name_len bytes */
			size_t name_len;	/* <= JITDUMP_NAME_MAX */
			bool name_cut;		/* the name had more bytes than name_len */
			const uint8_t *code;	/* code_size bytes */
		} load;
		struct {
			uint32_t pid, tid;
			uint64_t vma, old_code_addr, new_code_addr, code_size, code_index;
		} move;
		struct {
			uint64_t code_addr;
			uint64_t nr_entry;		/* entries in entries_len bytes, all checked */
			const uint8_t *entries;		/* read them with jitdump_debug__next() */
			size_t entries_len;		/* up to the end of the last entry */
		} debug;
		struct {
			uint64_t unwinding_size, eh_frame_hdr_size, mapped_size;	/* as written */
			const uint8_t *eh_frame;	/* unwinding_size - eh_frame_hdr_size bytes */
			size_t eh_frame_size;
			const uint8_t *eh_frame_hdr;	/* eh_frame_hdr_size bytes, right after */
		} unwind;
	};
};

/* One DEBUG_INFO entry. */
struct jitdump_line {
	uint64_t addr;
	int32_t line, discrim;	/* discrim: V8 writes the column there */
	const char *file;	/* NUL-terminated in the record; use file_len bytes */
	size_t file_len;	/* <= JITDUMP_NAME_MAX */
	bool file_cut;
};

/**
 * jitdump__header() - decode the file header at the start of @buf.
 * @why: on -EBADMSG, why (may be NULL; JITDUMP_WHY_MAX bytes hold any reason).
 *
 * A bad magic is told from the first 4 bytes, a bad version from the first
 * 8, a bad total_size from the first 12: a file refused stays refused
 * however it grows.
 *
 * @return 0 with @h filled, -EAGAIN when @len is too short to tell yet, or
 * -EBADMSG (not a jitdump, another version, a total_size out of bounds).
 */
int jitdump__header(const uint8_t *buf, size_t len, struct jitdump_header *h, char *why,
		    size_t why_len);

/**
 * jitdump__next() - decode the record at @*off in @buf.
 * @h: the file's header (for its byte order).
 * @why: on -EBADMSG, why, without the offset (may be NULL).
 *
 * Each record's size is checked against its fixed fields and what they say
 * follows (see the top of this file) before anything is read.
 *
 * @return 1 with @r filled and @*off advanced past the record; 0 when the
 * bytes end inside the record (more may come: the file is still being
 * written); -EBADMSG for a record that can never be read (then @*off is
 * where it starts); -EINVAL when @*off is past @len.
 */
int jitdump__next(const struct jitdump_header *h, const uint8_t *buf, size_t len, size_t *off,
		  struct jitdump_record *r, char *why, size_t why_len);

/**
 * jitdump_debug__next() - the next entry of a DEBUG_INFO record.
 * @off: offset in @r->debug.entries; start with 0.
 *
 * @return 1 with @out filled and @*off advanced; 0 after the last entry;
 * -EBADMSG when an entry does not fit (never for a record from
 * jitdump__next(), which checked them all); -EINVAL when @r is not
 * DEBUG_INFO.
 */
int jitdump_debug__next(const struct jitdump_header *h, const struct jitdump_record *r,
			size_t *off, struct jitdump_line *out);

/**
 * jitdump_eh_frame_addr() - the run-time address that the .eh_frame bytes of
 * an UNWINDING_INFO record stand at, for the CODE_LOAD of @code_addr,
 * @code_size that follows it: code_addr + round_up(code_size, 8) (modulo
 * 2^64). Their pc-relative pointers (FDE pc_begin, DW_EH_PE_pcrel) are
 * relative to that address, as if the unwinding data were mapped right after
 * the code; see jitdump.c for the writers and perf inject this follows.
 */
uint64_t jitdump_eh_frame_addr(uint64_t code_addr, uint64_t code_size);

/**
 * jitdump_eh_frame_hdr_addr() - the same for the .eh_frame_hdr bytes, which
 * follow the @eh_frame_size bytes of .eh_frame: its eh_frame_ptr (pcrel) and
 * table (datarel) land on the .eh_frame above and the code.
 */
uint64_t jitdump_eh_frame_hdr_addr(uint64_t code_addr, uint64_t code_size,
				   uint64_t eh_frame_size);

/* --- a file that is still being written --- */

struct jitdump_file;

/**
 * jitdump_file__new() - read the jitdump file open on @fd from its start.
 * @fd: taken (closed by jitdump_file__free()); already opened and checked
 * by the caller. Read with pread(), so its offset does not matter.
 *
 * @return the reader, or NULL with errno set (EBADF, ENOMEM).
 */
struct jitdump_file *jitdump_file__new(int fd);

/** jitdump_file__free() - close the fd and free the reader; accepts NULL. */
void jitdump_file__free(struct jitdump_file *f);

/* Called for each record; a negative errno stops the poll and is returned. */
typedef int (*jitdump_record_fn)(void *ctx, const struct jitdump_header *h,
				 const struct jitdump_record *r);

/**
 * jitdump_file__poll() - read what was appended since the last call and
 * call @fn for each complete record, in file order, unknown ids included.
 * @max_bytes: at most this many bytes of records are read in this call
 * (0: only the records already read whole), besides the header's bytes
 * read again to check that the file was not rewritten.
 *
 * A record the file's current end cuts waits for a later call; so does a
 * header written in part. The record a negative @fn return stops at counts
 * as delivered: the next call goes on after it.
 *
 * Each call first checks that the file was not written again from the
 * start: it must not have shrunk below what was read, and the header bytes
 * read must still be there unchanged (the runtime opens the file O_TRUNC).
 *
 * @return the records delivered (0: nothing new; at most INT_MAX), what @fn
 * returned, -ENOMEM (no buffer for the record begun: nothing is lost, the
 * next call tries again), or -EBADMSG (a bad header or record) / -EIO (the
 * file shrank, its header changed, or a read failed) when the file cannot be
 * read further; the reason is then in jitdump_file__error(), and later calls
 * return the same error.
 */
int jitdump_file__poll(struct jitdump_file *f, size_t max_bytes, jitdump_record_fn fn, void *ctx);

/** @return why the file cannot be read further ("offset 96: ..."), or "" while it can. */
const char *jitdump_file__error(const struct jitdump_file *f);

/**
 * @return the file offset of the next record to deliver: the end of the
 * last record delivered (or of the header; 0 before it is read).
 */
uint64_t jitdump_file__offset(const struct jitdump_file *f);

/** @return the file descriptor read (to see how long the file is now). */
int jitdump_file__fd(const struct jitdump_file *f);

/** @return the header, or NULL until it has been read. */
const struct jitdump_header *jitdump_file__header(const struct jitdump_file *f);

/** @return the bytes the reader holds on the heap: see JITDUMP_RECORD_MAX above. */
size_t jitdump_file__memory(const struct jitdump_file *f);

#endif
