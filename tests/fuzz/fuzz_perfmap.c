// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: the input as a perf map file (/tmp/perf-PID.map) read three
 * ways: fed whole, fed in pieces cut where the input says with lookups
 * between them, and appended piece by piece to a memory file read with
 * perfmap__read_more(). Each lookup's answer must cover its address and be
 * the latest covering line, as a slow scan of the entries finds it; the
 * three maps must hold the same entries and counts.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "jit/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Slow scans are O(entries) each: bounded per input so that a run stays fast. */
#define SCAN_BUDGET (4u << 20)

static int memfd = -1;
static size_t scan_budget;

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_perfmap: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static const struct perfmap_entry *find_slow(const struct perfmap *m, uint64_t addr)
{
	for (size_t i = perfmap__count(m); i--;) {
		const struct perfmap_entry *e = perfmap__entry(m, i);

		if (addr >= e->start && addr - e->start < e->size)
			return e;
	}
	return NULL;
}

static void check_find(struct perfmap *m, uint64_t addr)
{
	const struct perfmap_entry *got = perfmap__find(m, addr), *want;

	if (got && (addr < got->start || addr - got->start >= got->size))
		broken("find(%#llx) gave [%#llx, +%#llx), which does not cover it",
		       (unsigned long long)addr, (unsigned long long)got->start,
		       (unsigned long long)got->size);
	if (scan_budget < perfmap__count(m))
		return;
	scan_budget -= perfmap__count(m);
	want = find_slow(m, addr);
	if (got != want)
		broken("find(%#llx) gave entry %lld, the latest covering line is entry %lld",
		       (unsigned long long)addr,
		       got ? (long long)(got - perfmap__entry(m, 0)) : -1LL,
		       want ? (long long)(want - perfmap__entry(m, 0)) : -1LL);
}

static uint64_t load_u64(const uint8_t *p, size_t avail)
{
	uint64_t v = 0;

	memcpy(&v, p, avail < 8 ? avail : 8);
	return v;
}

/* Addresses from the input at @pos, and around an entry the input picks and the last one. */
static void probe(struct perfmap *m, const uint8_t *data, size_t size, size_t pos)
{
	size_t n = perfmap__count(m);

	check_find(m, load_u64(data + pos, size - pos));
	/* small addresses too, where short hex numbers land */
	check_find(m, data[pos] | (uint64_t)data[(pos + 1) % size] << 8);
	if (!n)
		return;
	for (int k = 0; k < 2; k++) {
		const struct perfmap_entry *e = perfmap__entry(m, k ? n - 1 : data[pos] * 7919u % n);

		check_find(m, e->start);
		check_find(m, e->start + e->size - 1);
		check_find(m, e->start - 1);
		check_find(m, e->start + e->size);
	}
}

static void check_entries(const struct perfmap *m, const char *how)
{
	const struct perfmap_stats *s = perfmap__stats(m);

	if (s->entries != perfmap__count(m))
		broken("%s: %llu entries counted, %zu held", how, (unsigned long long)s->entries,
		       perfmap__count(m));
	if (s->entries + s->bad_lines + s->dropped > s->lines)
		broken("%s: %llu lines, but %llu entries, %llu bad, %llu dropped", how,
		       (unsigned long long)s->lines, (unsigned long long)s->entries,
		       (unsigned long long)s->bad_lines, (unsigned long long)s->dropped);
	if (!s->bad_lines != !s->first_error[0])
		broken("%s: %llu bad lines, first error \"%s\"", how,
		       (unsigned long long)s->bad_lines, s->first_error);
	if (!memchr(s->first_error, '\0', sizeof(s->first_error)))
		broken("%s: first_error not terminated", how);
	for (size_t i = 0; i < perfmap__count(m); i++) {
		const struct perfmap_entry *e = perfmap__entry(m, i);

		if (!e->size || e->start + e->size < e->start)
			broken("%s: entry %zu is [%#llx, +%#llx)", how, i,
			       (unsigned long long)e->start, (unsigned long long)e->size);
		if (e->name_len > PERFMAP_NAME_MAX || e->name[e->name_len] != '\0')
			broken("%s: entry %zu: name of %u bytes, or not terminated", how, i,
			       e->name_len);
	}
}

static void same_maps(const struct perfmap *a, const struct perfmap *b, const char *how)
{
	const struct perfmap_stats *sa = perfmap__stats(a), *sb = perfmap__stats(b);

	if (perfmap__count(a) != perfmap__count(b) || sa->lines != sb->lines ||
	    sa->bad_lines != sb->bad_lines || sa->names_cut != sb->names_cut ||
	    sa->dropped != sb->dropped || strcmp(sa->first_error, sb->first_error))
		broken("fed whole: %zu entries, %llu lines, %llu bad, %llu cut, \"%s\"; %s: %zu, %llu, "
		       "%llu, %llu, \"%s\"", perfmap__count(a), (unsigned long long)sa->lines,
		       (unsigned long long)sa->bad_lines, (unsigned long long)sa->names_cut,
		       sa->first_error, how, perfmap__count(b), (unsigned long long)sb->lines,
		       (unsigned long long)sb->bad_lines, (unsigned long long)sb->names_cut,
		       sb->first_error);
	for (size_t i = 0; i < perfmap__count(a); i++) {
		const struct perfmap_entry *x = perfmap__entry(a, i), *y = perfmap__entry(b, i);

		if (x->start != y->start || x->size != y->size || x->name_len != y->name_len ||
		    memcmp(x->name, y->name, x->name_len))
			broken("entry %zu differs fed whole and %s", i, how);
	}
}

static void file_append(const uint8_t *data, size_t len, size_t at)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(memfd, data + done, len - done, (off_t)(at + done));

		if (n <= 0)
			broken("pwrite: %s", n ? strerror(errno) : "short write");
		done += (size_t)n;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap *whole, *pieces, *file;
	uint64_t offset = 0;
	size_t pos = 0;

	if (memfd < 0) {
		memfd = memfd_create("fuzz_perfmap", MFD_CLOEXEC);
		if (memfd < 0)
			broken("memfd_create: %s", strerror(errno));
	}
	if (ftruncate(memfd, 0))
		broken("ftruncate: %s", strerror(errno));
	scan_budget = SCAN_BUDGET;
	whole = perfmap__new();
	pieces = perfmap__new();
	file = perfmap__new();
	if (!whole || !pieces || !file)
		broken("perfmap__new: %s", strerror(errno));

	if (perfmap__feed(whole, (const char *)data, size) || perfmap__finish(whole))
		broken("feeding whole: out of memory");
	check_entries(whole, "fed whole");

	while (pos < size) {
		/* the byte at the cut says how long the piece is: 1 to 64, or the rest */
		size_t len = data[pos] == 0xff ? size - pos : 1 + (size_t)data[pos] % 64;
		ssize_t got;

		if (len > size - pos)
			len = size - pos;
		if (perfmap__feed(pieces, (const char *)data + pos, len))
			broken("feeding pieces: out of memory");
		probe(pieces, data, size, pos);

		file_append(data + pos, len, pos);
		/* at most a few bytes a call, so that the file is read in other pieces */
		while ((got = perfmap__read_more(file, memfd, &offset, 1 + data[pos] % 13)) > 0)
			;
		if (got < 0)
			broken("read_more at %llu: %s", (unsigned long long)offset, strerror((int)-got));
		if (offset != pos + len)
			broken("read_more stopped at %llu of %zu", (unsigned long long)offset, pos + len);
		pos += len;
	}
	if (perfmap__finish(pieces) || perfmap__finish(file))
		broken("finish: out of memory");
	check_entries(pieces, "fed in pieces");
	same_maps(whole, pieces, "fed in pieces");
	same_maps(whole, file, "read from a growing file");
	if (size)
		probe(pieces, data, size, size - 1);
	/* every entry at its ends, in the map that was indexed bit by bit and the one indexed once */
	for (size_t i = 0; i < perfmap__count(whole) && i < 512; i++) {
		const struct perfmap_entry *e = perfmap__entry(whole, i);

		check_find(whole, e->start);
		check_find(whole, e->start + e->size - 1);
		check_find(pieces, e->start);
		check_find(pieces, e->start + e->size - 1);
	}
	if (perfmap__memory(whole) < sizeof(struct perfmap_entry) * perfmap__count(whole))
		broken("memory: %zu bytes for %zu entries", perfmap__memory(whole),
		       perfmap__count(whole));
	perfmap__free(whole);
	perfmap__free(pieces);
	perfmap__free(file);
	return 0;
}
