/* SPDX-License-Identifier: BSD-2-Clause */
/* Perf map files (/tmp/perf-PID.map) that JIT runtimes write: read safely, parsed as hostile text. */
#ifndef SFPROF_PERFMAP_H
#define SFPROF_PERFMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The format, as perf reads it (tools/perf/util/symbol.c, dso__load_perf_map):
 * one line per code range, "START SIZE NAME\n", START and SIZE in hex with or
 * without "0x" (perf parses both with strtoull(..., 16)), NAME the rest of the
 * line after one blank, spaces and all. Node (--perf-basic-prof), Java
 * (perf-map-agent, -XX:+DumpPerfMapAtExit) and CPython 3.12 (-X perf) write it.
 *
 * The file is written by the profiled process and read by sfprof as root, so
 * every byte is hostile. What this reader accepts:
 *
 * - Blanks (space, tab) may lead the line and separate START from SIZE; one
 *   blank separates SIZE from NAME, and further blanks are part of NAME, as
 *   in perf. A 0x or 0X prefix is optional on each number. A number with no
 *   digit, with a sign, or over 64 bits makes the line bad (perf's strtoull
 *   would take a sign and saturate an overflow).
 * - NAME is every byte up to the newline: control bytes, a trailing '\r' and
 *   NULs are kept raw (the output layer escapes them); it must not be empty.
 *   perf skips names shorter than 3 bytes; this reader keeps them.
 * - A size of 0, or a range whose end (START + SIZE) does not fit in 64 bits,
 *   makes the line bad.
 * - An empty line is skipped without being counted bad.
 * - Where ranges overlap, the line that comes later in the file wins: the
 *   runtime reused the range for newer code.
 *
 * Limits:
 * - PERFMAP_NAME_MAX: a longer name is cut to its first PERFMAP_NAME_MAX
 *   bytes (counted in names_cut; a UTF-8 character may be cut in two).
 * - PERFMAP_LINE_MAX: a line with more bytes before its newline is skipped
 *   whole without being held in memory (counted bad); the reader skips until
 *   its newline, however far that is.
 * - PERFMAP_MAX_ENTRIES entries, PERFMAP_MAX_BYTES bytes of names (each
 *   counted with its NUL): once either is reached, the good lines after it
 *   are dropped (counted in dropped), so that the entries are always a
 *   prefix of the file's good lines.
 */
#define PERFMAP_NAME_MAX 1024
#define PERFMAP_LINE_MAX (64 * 1024)
#define PERFMAP_MAX_ENTRIES (4u << 20)
#define PERFMAP_MAX_BYTES (256u << 20)

/* One good line. */
struct perfmap_entry {
	uint64_t start, size;	/* [start, start + size), size > 0, the end fits in 64 bits */
	const char *name;	/* name_len bytes, then a NUL; raw (NULs, control bytes) */
	uint32_t name_len;
};

struct perfmap_stats {
	uint64_t lines;		/* lines ended (by a newline or perfmap__finish()), empty ones too */
	uint64_t entries;	/* good lines kept */
	uint64_t bad_lines;	/* lines that are not START SIZE NAME, or over PERFMAP_LINE_MAX */
	uint64_t names_cut;	/* entries whose name was cut to PERFMAP_NAME_MAX */
	uint64_t dropped;	/* good lines not kept: past the limits, or out of memory */
	char first_error[160];	/* why the first bad line is bad: "line 12: size 0"; "" if none */
};

struct perfmap;

/** perfmap__new() - an empty map. @return it, or NULL with errno set (ENOMEM). */
struct perfmap *perfmap__new(void);

/** perfmap__free() - free the map and its names; accepts NULL. */
void perfmap__free(struct perfmap *m);

/**
 * perfmap__feed() - the next bytes of the file, in order.
 *
 * Complete lines are parsed; an unterminated last line is held (up to
 * PERFMAP_LINE_MAX bytes) until more bytes come or perfmap__finish(). How the
 * bytes are cut into calls changes nothing. All bytes are always consumed:
 * when memory runs out, the entry or held line concerned is dropped (counted)
 * and the bytes after it are still parsed.
 *
 * Entry pointers from perfmap__entry() and perfmap__find() are valid until
 * the next perfmap__feed(), perfmap__finish() or perfmap__read_more(); names
 * stay valid until perfmap__free().
 *
 * @return 0, or -ENOMEM when an entry or a held line was dropped for memory.
 */
int perfmap__feed(struct perfmap *m, const char *buf, size_t len);

/**
 * perfmap__finish() - the file ends here: parse the held unterminated line,
 * if any, as a complete one. Bytes fed later start a new line.
 * @return 0, or -ENOMEM as perfmap__feed().
 */
int perfmap__finish(struct perfmap *m);

/** @return the number of entries. */
size_t perfmap__count(const struct perfmap *m);

/** @return entry @i in file order, or NULL when @i >= perfmap__count(). */
const struct perfmap_entry *perfmap__entry(const struct perfmap *m, size_t i);

/**
 * perfmap__find() - the entry covering @addr; where several do, the one from
 * the latest line.
 *
 * The index behind it is brought up to date with the entries fed since the
 * last call, so a call after a feed costs more (see perfmap.c for the bounds);
 * otherwise O(log^2 n) at worst and O(log n) once lookups outnumber changes,
 * whatever the overlaps. Out of memory, it stays correct, scanning what it
 * could not index.
 *
 * @return the entry, or NULL when none covers @addr.
 */
const struct perfmap_entry *perfmap__find(struct perfmap *m, uint64_t addr);

/** @return the counts and the first error; valid until perfmap__free(). */
const struct perfmap_stats *perfmap__stats(const struct perfmap *m);

/** @return the bytes the map holds on the heap: entries, names, index, buffers. */
size_t perfmap__memory(const struct perfmap *m);

/**
 * perfmap__read_more() - read what was appended to the perf map @fd since the
 * last call and feed it.
 * @offset: where to read from; advanced past what was read (start with 0).
 * @max_bytes: at most this many bytes are read in this call.
 *
 * The file is read with pread(), so @fd's own offset does not matter. A file
 * that shrank below @*offset, or whose bytes just before @*offset changed
 * since the previous call (the runtime wrote it again from the start), is
 * stale: start over with a new map at offset 0 from a file opened again.
 *
 * @return the bytes read (0: nothing new), or a negative errno: -ESTALE,
 * -EINVAL (@max_bytes 0, not a regular file), -ENOMEM (as perfmap__feed(),
 * @*offset advanced all the same), or what fstat() or pread() failed with.
 */
ssize_t perfmap__read_more(struct perfmap *m, int fd, uint64_t *offset, size_t max_bytes);

/**
 * perfmap_open() - open /tmp/perf-@ns_pid.map as process @pid sees it.
 * @pid: the process in sfprof's PID namespace (/proc/@pid).
 * @ns_pid: the same process in its own PID namespace: the number in the file's name.
 * @why: on failure, a sentence saying why (may be NULL).
 *
 * The file is reached from /proc/@pid/root through "tmp" then its name, one
 * component at a time with O_NOFOLLOW, refusing symbolic links; it must be a
 * regular file with one link, owned by the process's real or effective uid
 * (from /proc/@pid/status) or by root. See perfmap_openat().
 *
 * @return a file descriptor (O_RDONLY | O_CLOEXEC | O_NONBLOCK), or a
 * negative errno: -ESRCH (no such process), -ENOENT (no map, plainly), the
 * refusals of perfmap_openat(), or what opening or reading /proc failed with.
 */
int perfmap_open(uint32_t pid, uint32_t ns_pid, char *why, size_t why_len);

/**
 * perfmap_openat() - perfmap_open() from a root directory held open (the
 * recorder keeps /proc/PID/root while the process lives: it is gone after the
 * process exits) with the process's real and effective uid.
 * @root_fd: the process's root directory (an O_PATH descriptor will do).
 *
 * The file is first opened O_PATH and checked, then opened for reading
 * through /proc/self/fd, so that nothing but the checked regular file is ever
 * opened for reading (a FIFO or a device put there is never opened).
 *
 * @return a file descriptor (O_RDONLY | O_CLOEXEC | O_NONBLOCK), or a
 * negative errno with a sentence in @why: -ENOENT (no tmp, or no map),
 * -ELOOP (tmp or the map is a symbolic link), -ENOTDIR (tmp is not a
 * directory), -EISDIR (the map is a directory), -EINVAL (not a regular file),
 * -EPERM (owned by another uid, or more than one link: a hard link to some
 * other file), or what openat() or fstat() failed with.
 */
int perfmap_openat(int root_fd, uint32_t ns_pid, uint32_t uid, uint32_t euid, char *why,
		   size_t why_len);

#endif
