/* SPDX-License-Identifier: BSD-2-Clause */
/* Perf map files: the line parser, the latest-line-wins address index, reading and opening safely. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jit/perfmap.h"
#include "common/vec.h"

/*
 * The index.
 *
 * perfmap__find() wants the latest line covering an address, and the lines
 * may overlap in any way: a runtime reuses a range for newer code, and a
 * hostile file nests 100,000 ranges. A search tree of ranges would have to
 * walk the overlaps; instead the overlaps are resolved once, when indexing:
 * a set of entries becomes a "level", the step function from address to
 * entry, stored as disjoint pieces sorted by address. Piece k covers
 * [start_k, start_k+1) and names the latest entry covering all of it (or
 * none: a gap). Every piece starts at some entry's start or end, so n entries
 * make at most 2n pieces whatever their overlaps, and a lookup in a level is
 * one binary search.
 *
 * A level is built from its entries by a sweep over their starts and ends in
 * address order, the entries that have started kept in a max-heap by line
 * number; those that ended are popped lazily when they reach the top. The top
 * is the latest line covering the piece. O(p log p) for p entries.
 *
 * The file keeps growing while it is read, so the entries fed since the last
 * lookup become a new level on top, newer than every level below it. Two
 * levels merge in one linear pass ("overlay": the newer level where it has an
 * entry, the older one where it has a gap). As in a binary counter, the top
 * level merges into the one below while it holds at least half as many
 * entries, so each level holds under half the entries of the one below: at
 * most log2(n) + 1 levels, and an entry is merged O(log n) times per level it
 * doubles into, O(log^2 n) amortised per entry fed.
 *
 * A lookup tries the levels from the newest: the first that covers the
 * address has the answer, O(log^2 n) at worst. Once there have been more
 * lookups than pieces since the levels last changed, all levels merge into
 * one (linear: the sizes are geometric), after which a lookup is O(log n).
 *
 * Entries not indexed for want of memory are scanned, latest first, so that
 * the answer never depends on an allocation.
 */

#define NO_ENTRY UINT32_MAX
#define MAX_LEVELS 48

/* Names are copied into chunks that never move: a name pointer lives as long as the map. */
#define CHUNK_MIN (16u * 1024)
#define CHUNK_MAX (1024u * 1024)

/* perfmap__read_more() reads this much at a time. */
#define READ_CHUNK (64u * 1024)
/* The bytes before the read offset that are read again to notice a rewritten file. */
#define TAIL_BYTES 64

struct name_chunk {
	struct name_chunk *next;
	size_t size, used;
	char data[];
};

/* Covers [start, the next piece's start); the last piece of a level is a gap. */
struct piece {
	uint64_t start;
	uint32_t entry;		/* index into entries, or NO_ENTRY */
};

struct level {
	struct piece *pieces;
	size_t count;
	size_t first, end;	/* the entries [first, end) it indexes */
};

struct perfmap {
	struct perfmap_entry *entries;
	size_t count, cap;
	struct name_chunk *chunks;	/* newest first */
	size_t chunk_bytes;
	uint64_t name_bytes;		/* against PERFMAP_MAX_BYTES */
	bool full;			/* a limit was reached: later entries are dropped */

	/* the unterminated line held between feeds */
	char *line;
	size_t line_len, line_cap;
	bool skipping;			/* in a line over PERFMAP_LINE_MAX, or one dropped */

	struct level levels[MAX_LEVELS];	/* oldest first */
	size_t nlevels;
	size_t indexed;			/* entries [0, indexed) are in the levels */
	size_t pieces_total;
	uint64_t lookups;		/* since the levels last changed */

	char *readbuf;
	uint8_t tail[TAIL_BYTES];	/* the last bytes read, ending at tail_end */
	size_t tail_len;
	uint64_t tail_end;

	struct perfmap_stats stats;
};

struct perfmap *perfmap__new(void)
{
	struct perfmap *m = calloc(1, sizeof(*m));

	if (!m)
		errno = ENOMEM;
	return m;
}

void perfmap__free(struct perfmap *m)
{
	struct name_chunk *c, *next;

	if (!m)
		return;
	for (c = m->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	for (size_t i = 0; i < m->nlevels; i++)
		free(m->levels[i].pieces);
	free(m->entries);
	free(m->line);
	free(m->readbuf);
	free(m);
}

/* --- parsing --- */

__attribute__((format(printf, 2, 3)))
static void line_bad(struct perfmap *m, const char *fmt, ...)
{
	struct perfmap_stats *s = &m->stats;
	va_list ap;
	int n;

	s->bad_lines++;
	if (s->first_error[0])
		return;
	/* the line being parsed is the one after those ended */
	n = snprintf(s->first_error, sizeof(s->first_error), "line %llu: ",
		     (unsigned long long)s->lines + 1);
	if (n < 0 || (size_t)n >= sizeof(s->first_error))
		return;
	va_start(ap, fmt);
	vsnprintf(s->first_error + n, sizeof(s->first_error) - (size_t)n, fmt, ap);
	va_end(ap);
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * A hex number at @*pos of @line (@len bytes), with or without 0x; @*pos is
 * moved past it. @return 0, -EINVAL for no digit, -ERANGE over 64 bits.
 */
static int parse_hex(const char *line, size_t len, size_t *pos, uint64_t *val)
{
	size_t p = *pos, digits = 0;
	uint64_t v = 0;
	bool over = false;
	int d;

	if (len - p >= 2 && line[p] == '0' && (line[p + 1] == 'x' || line[p + 1] == 'X'))
		p += 2;
	while (p < len && (d = hex_digit(line[p])) >= 0) {
		if (v >> 60)
			over = true;
		v = v << 4 | (uint64_t)d;
		digits++;
		p++;
	}
	*pos = p;
	*val = v;
	if (!digits)
		return -EINVAL;
	return over ? -ERANGE : 0;
}

static char *name_alloc(struct perfmap *m, size_t need)
{
	struct name_chunk *c = m->chunks;
	size_t size;
	char *p;

	if (!c || c->size - c->used < need) {
		/* chunks grow with the map, so a big map has few of them */
		size = c ? (c->size < CHUNK_MAX ? c->size * 2 : CHUNK_MAX) : CHUNK_MIN;
		if (size < need)
			size = need;
		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->size = size;
		c->used = 0;
		c->next = m->chunks;
		m->chunks = c;
		m->chunk_bytes += sizeof(*c) + size;
	}
	p = c->data + c->used;
	c->used += need;
	return p;
}

static int entry_add(struct perfmap *m, uint64_t start, uint64_t size, const char *name,
		     size_t name_len)
{
	size_t keep = name_len > PERFMAP_NAME_MAX ? PERFMAP_NAME_MAX : name_len;
	struct perfmap_entry *e;
	char *copy;

	if (m->full || m->count >= PERFMAP_MAX_ENTRIES ||
	    m->name_bytes + keep + 1 > PERFMAP_MAX_BYTES) {
		m->full = true;
		m->stats.dropped++;
		return 0;
	}
	if (VEC_RESERVE(m->entries, m->cap, m->count + 1, 256))
		goto nomem;
	copy = name_alloc(m, keep + 1);
	if (!copy)
		goto nomem;
	memcpy(copy, name, keep);
	copy[keep] = '\0';
	m->name_bytes += keep + 1;
	if (keep < name_len)
		m->stats.names_cut++;
	e = &m->entries[m->count++];
	e->start = start;
	e->size = size;
	e->name = copy;
	e->name_len = (uint32_t)keep;
	m->stats.entries++;
	return 0;
nomem:
	m->stats.dropped++;
	return -ENOMEM;
}

/* One line without its newline, at most PERFMAP_LINE_MAX bytes. @return 0 or -ENOMEM. */
static int line_parse(struct perfmap *m, const char *line, size_t len)
{
	uint64_t start, size;
	size_t p = 0;
	int err = 0;

	if (!len)
		goto out;
	while (p < len && is_blank(line[p]))
		p++;
	switch (parse_hex(line, len, &p, &start)) {
	case -EINVAL:
		line_bad(m, "no start address");
		goto out;
	case -ERANGE:
		line_bad(m, "start address over 64 bits");
		goto out;
	}
	if (p == len || !is_blank(line[p])) {
		line_bad(m, "no blank after the start address");
		goto out;
	}
	while (p < len && is_blank(line[p]))
		p++;
	switch (parse_hex(line, len, &p, &size)) {
	case -EINVAL:
		line_bad(m, "no size");
		goto out;
	case -ERANGE:
		line_bad(m, "size over 64 bits");
		goto out;
	}
	if (p == len || !is_blank(line[p])) {
		line_bad(m, p == len ? "no name" : "no blank after the size");
		goto out;
	}
	p++;
	if (p == len) {
		line_bad(m, "no name");
		goto out;
	}
	if (!size) {
		line_bad(m, "size 0");
		goto out;
	}
	if (size > UINT64_MAX - start) {
		line_bad(m, "range %#llx+%#llx wraps past the end of the address space",
			 (unsigned long long)start, (unsigned long long)size);
		goto out;
	}
	err = entry_add(m, start, size, line + p, len - p);
out:
	m->stats.lines++;
	return err;
}

/* Keep @len more bytes of the unterminated line; the total stays within PERFMAP_LINE_MAX. */
static int line_hold(struct perfmap *m, const char *buf, size_t len)
{
	if (VEC_RESERVE(m->line, m->line_cap, m->line_len + len, 256))
		return -ENOMEM;
	memcpy(m->line + m->line_len, buf, len);
	m->line_len += len;
	return 0;
}

int perfmap__feed(struct perfmap *m, const char *buf, size_t len)
{
	size_t pos = 0;
	int err = 0, r;

	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t seg = nl ? (size_t)(nl - (buf + pos)) : len - pos;
		size_t next = pos + seg + (nl ? 1 : 0);

		if (m->skipping) {
			if (nl) {
				m->skipping = false;
				m->stats.lines++;
			}
		} else if (seg > PERFMAP_LINE_MAX - m->line_len) {
			line_bad(m, "over %u bytes: skipped", PERFMAP_LINE_MAX);
			m->line_len = 0;
			if (nl)
				m->stats.lines++;
			else
				m->skipping = true;
		} else if (!nl) {
			if (line_hold(m, buf + pos, seg)) {
				/* the line is lost; its bytes to come are skipped */
				m->stats.dropped++;
				m->line_len = 0;
				m->skipping = true;
				err = -ENOMEM;
			}
		} else if (m->line_len) {
			if (line_hold(m, buf + pos, seg)) {
				m->stats.dropped++;
				m->stats.lines++;
				err = -ENOMEM;
			} else if ((r = line_parse(m, m->line, m->line_len))) {
				err = r;
			}
			m->line_len = 0;
		} else if ((r = line_parse(m, buf + pos, seg))) {
			err = r;
		}
		pos = next;
	}
	return err;
}

int perfmap__finish(struct perfmap *m)
{
	int err = 0;

	if (m->skipping) {
		m->skipping = false;
		m->stats.lines++;
	} else if (m->line_len) {
		err = line_parse(m, m->line, m->line_len);
		m->line_len = 0;
	}
	return err;
}

size_t perfmap__count(const struct perfmap *m)
{
	return m->count;
}

const struct perfmap_entry *perfmap__entry(const struct perfmap *m, size_t i)
{
	return i < m->count ? &m->entries[i] : NULL;
}

const struct perfmap_stats *perfmap__stats(const struct perfmap *m)
{
	return &m->stats;
}

size_t perfmap__memory(const struct perfmap *m)
{
	size_t bytes = sizeof(*m) + m->cap * sizeof(*m->entries) + m->chunk_bytes + m->line_cap;

	if (m->readbuf)
		bytes += READ_CHUNK;
	for (size_t i = 0; i < m->nlevels; i++)
		bytes += m->levels[i].count * sizeof(struct piece);
	return bytes;
}

/* --- the index --- */

struct start_key {
	uint64_t start;
	uint32_t entry;
};

static int cmp_start(const void *a, const void *b)
{
	const struct start_key *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t entry_end(const struct perfmap_entry *e)
{
	return e->start + e->size;
}

/* A max-heap of entry indexes: the latest line on top. */
static void heap_push(uint32_t *heap, size_t *n, uint32_t v)
{
	size_t i = (*n)++;

	while (i && heap[(i - 1) / 2] < v) {
		heap[i] = heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	heap[i] = v;
}

static void heap_pop(uint32_t *heap, size_t *n)
{
	uint32_t v = heap[--*n];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < *n) {
		if (c + 1 < *n && heap[c + 1] > heap[c])
			c++;
		if (heap[c] <= v)
			break;
		heap[i] = heap[c];
		i = c;
	}
	if (*n)
		heap[i] = v;
}

/* The level of entries [first, end): the sweep described at the top. @return 0 or -ENOMEM. */
static int level_build(const struct perfmap *m, size_t first, size_t end, struct level *out)
{
	size_t n = end - first, nb = 0, sp = 0, nheap = 0, np = 0;
	struct start_key *starts;
	uint64_t *bounds;
	uint32_t *heap;
	struct piece *pieces = NULL, *shrunk;
	int err = -ENOMEM;

	starts = malloc(n * sizeof(*starts));
	bounds = malloc(2 * n * sizeof(*bounds));
	heap = malloc(n * sizeof(*heap));
	if (!starts || !bounds || !heap)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct perfmap_entry *e = &m->entries[first + i];

		starts[i].start = e->start;
		starts[i].entry = (uint32_t)(first + i);
		bounds[2 * i] = e->start;
		bounds[2 * i + 1] = entry_end(e);
	}
	qsort(starts, n, sizeof(*starts), cmp_start);
	qsort(bounds, 2 * n, sizeof(*bounds), cmp_u64);
	for (size_t i = 0; i < 2 * n; i++)
		if (!nb || bounds[nb - 1] != bounds[i])
			bounds[nb++] = bounds[i];
	pieces = malloc(nb * sizeof(*pieces));
	if (!pieces)
		goto out;
	for (size_t i = 0; i < nb; i++) {
		uint64_t at = bounds[i];
		uint32_t top;

		while (sp < n && starts[sp].start == at)
			heap_push(heap, &nheap, starts[sp++].entry);
		/* an entry on top that ended before here covers nothing from here on */
		while (nheap && entry_end(&m->entries[heap[0]]) <= at)
			heap_pop(heap, &nheap);
		top = nheap ? heap[0] : NO_ENTRY;
		if (np ? pieces[np - 1].entry != top : top != NO_ENTRY) {
			pieces[np].start = at;
			pieces[np].entry = top;
			np++;
		}
	}
	/* fewer pieces than bounds where neighbours had the same entry */
	shrunk = np ? realloc(pieces, np * sizeof(*pieces)) : NULL;
	if (shrunk)
		pieces = shrunk;
	out->pieces = pieces;
	out->count = np;
	out->first = first;
	out->end = end;
	pieces = NULL;
	err = 0;
out:
	free(pieces);
	free(starts);
	free(bounds);
	free(heap);
	return err;
}

/* The levels' top two as one: the newer where it has an entry, else the older. @return 0 or -ENOMEM. */
static int levels_merge_top(struct perfmap *m)
{
	struct level *older = &m->levels[m->nlevels - 2], *newer = &m->levels[m->nlevels - 1];
	const struct piece *a = newer->pieces, *b = older->pieces;
	size_t na = newer->count, nb = older->count, i = 0, j = 0, np = 0;
	uint32_t va = NO_ENTRY, vb = NO_ENTRY, last = NO_ENTRY;
	struct piece *pieces, *shrunk;

	pieces = malloc((na + nb ? na + nb : 1) * sizeof(*pieces));
	if (!pieces)
		return -ENOMEM;
	while (i < na || j < nb) {
		uint64_t at = i < na && (j >= nb || a[i].start <= b[j].start) ? a[i].start : b[j].start;
		uint32_t v;

		if (i < na && a[i].start == at)
			va = a[i++].entry;
		if (j < nb && b[j].start == at)
			vb = b[j++].entry;
		v = va != NO_ENTRY ? va : vb;
		if (v != last) {
			pieces[np].start = at;
			pieces[np].entry = v;
			np++;
			last = v;
		}
	}
	shrunk = np ? realloc(pieces, np * sizeof(*pieces)) : NULL;
	if (shrunk)
		pieces = shrunk;
	m->pieces_total -= older->count + newer->count;
	m->pieces_total += np;
	free(older->pieces);
	free(newer->pieces);
	older->pieces = pieces;
	older->count = np;
	older->end = newer->end;
	m->nlevels--;
	m->lookups = 0;
	return 0;
}

static void index_update(struct perfmap *m)
{
	struct level *top;

	if (m->indexed < m->count && m->nlevels < MAX_LEVELS &&
	    !level_build(m, m->indexed, m->count, &m->levels[m->nlevels])) {
		m->pieces_total += m->levels[m->nlevels].count;
		m->nlevels++;
		m->indexed = m->count;
		m->lookups = 0;
		while (m->nlevels >= 2) {
			top = &m->levels[m->nlevels - 1];
			if (2 * (top->end - top->first) < top[-1].end - top[-1].first ||
			    levels_merge_top(m))
				break;
		}
	}
	if (m->nlevels > 1 && ++m->lookups > m->pieces_total) {
		while (m->nlevels > 1 && !levels_merge_top(m))
			;
		m->lookups = 0;
	}
}

/* The entry of the piece holding @addr in @l, or NO_ENTRY. */
static uint32_t level_find(const struct level *l, uint64_t addr)
{
	size_t lo = 0, hi = l->count;

	/* the first piece starting after addr; the one before it holds addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->pieces[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? l->pieces[lo - 1].entry : NO_ENTRY;
}

const struct perfmap_entry *perfmap__find(struct perfmap *m, uint64_t addr)
{
	index_update(m);
	/* what memory kept out of the index is newer than all of it */
	for (size_t i = m->count; i-- > m->indexed;) {
		const struct perfmap_entry *e = &m->entries[i];

		if (addr >= e->start && addr - e->start < e->size)
			return e;
	}
	for (size_t l = m->nlevels; l--;) {
		uint32_t e = level_find(&m->levels[l], addr);

		if (e != NO_ENTRY)
			return &m->entries[e];
	}
	return NULL;
}

/* --- reading --- */

/* Remember the last TAIL_BYTES bytes read, which end at @end. */
static void tail_keep(struct perfmap *m, const char *buf, size_t len, uint64_t end)
{
	if (len >= TAIL_BYTES) {
		memcpy(m->tail, buf + len - TAIL_BYTES, TAIL_BYTES);
		m->tail_len = TAIL_BYTES;
	} else {
		size_t old = m->tail_len + len > TAIL_BYTES ? TAIL_BYTES - len : m->tail_len;

		memmove(m->tail, m->tail + m->tail_len - old, old);
		memcpy(m->tail + old, buf, len);
		m->tail_len = old + len;
	}
	m->tail_end = end;
}

static ssize_t pread_full(int fd, void *buf, size_t len, uint64_t offset)
{
	ssize_t n;

	do
		n = pread(fd, buf, len, (off_t)offset);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* @return 0, or -ESTALE when the bytes before @offset are not those read last. */
static int tail_check(struct perfmap *m, int fd, uint64_t offset)
{
	uint8_t again[TAIL_BYTES];
	ssize_t n;

	if (!m->tail_len || m->tail_end != offset) {
		/* the caller moved: nothing to compare with */
		m->tail_len = 0;
		return 0;
	}
	n = pread_full(fd, again, m->tail_len, offset - m->tail_len);
	if (n < 0)
		return (int)n;
	if ((size_t)n != m->tail_len || memcmp(again, m->tail, m->tail_len))
		return -ESTALE;
	return 0;
}

ssize_t perfmap__read_more(struct perfmap *m, int fd, uint64_t *offset, size_t max_bytes)
{
	size_t total = 0;
	struct stat st;
	int err;

	if (!max_bytes)
		return -EINVAL;
	if (max_bytes > SSIZE_MAX)
		max_bytes = SSIZE_MAX;
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size < *offset)
		return -ESTALE;
	err = tail_check(m, fd, *offset);
	if (err)
		return err;
	if (!m->readbuf) {
		m->readbuf = malloc(READ_CHUNK);
		if (!m->readbuf)
			return -ENOMEM;
	}
	while (total < max_bytes) {
		size_t want = max_bytes - total < READ_CHUNK ? max_bytes - total : READ_CHUNK;
		ssize_t n;

		if (*offset > (uint64_t)INT64_MAX - want)
			return total ? (ssize_t)total : -EOVERFLOW;
		n = pread_full(fd, m->readbuf, want, *offset);
		if (n < 0)
			return total ? (ssize_t)total : n;
		if (!n)
			break;
		*offset += (uint64_t)n;
		total += (size_t)n;
		tail_keep(m, m->readbuf, (size_t)n, *offset);
		err = perfmap__feed(m, m->readbuf, (size_t)n);
		if (err)
			return err;
	}
	return (ssize_t)total;
}

/* --- opening --- */

__attribute__((format(printf, 4, 5)))
static int refuse(char *why, size_t why_len, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && why_len) {
		va_start(ap, fmt);
		vsnprintf(why, why_len, fmt, ap);
		va_end(ap);
	}
	return err;
}

int perfmap_openat(int root_fd, uint32_t ns_pid, uint32_t uid, uint32_t euid, char *why,
		   size_t why_len)
{
	char name[32], path[48], self[40];
	int tmp_fd = -1, path_fd = -1, fd = -1, err;
	struct stat st, st2;

	snprintf(name, sizeof(name), "perf-%u.map", ns_pid);
	snprintf(path, sizeof(path), "/tmp/%s", name);
	if (why && why_len)
		why[0] = '\0';
	/*
	 * O_PATH with O_NOFOLLOW opens a symbolic link itself, so that it can be
	 * told apart and refused; nothing is opened for reading yet.
	 */
	tmp_fd = openat(root_fd, "tmp", O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (tmp_fd < 0) {
		err = -errno;
		err = refuse(why, why_len, err, "/tmp: %s", strerror(-err));
		goto out;
	}
	if (fstat(tmp_fd, &st)) {
		err = -errno;
		err = refuse(why, why_len, err, "/tmp: %s", strerror(-err));
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		err = refuse(why, why_len, -ELOOP, "/tmp is a symbolic link: not followed");
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		err = refuse(why, why_len, -ENOTDIR, "/tmp is not a directory");
		goto out;
	}
	path_fd = openat(tmp_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (path_fd < 0) {
		err = -errno;
		err = refuse(why, why_len, err, "%s: %s", path, strerror(-err));
		goto out;
	}
	if (fstat(path_fd, &st)) {
		err = -errno;
		err = refuse(why, why_len, err, "%s: %s", path, strerror(-err));
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		err = refuse(why, why_len, -ELOOP, "%s is a symbolic link: not followed", path);
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		err = refuse(why, why_len, -EISDIR, "%s is a directory: not read", path);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err = refuse(why, why_len, -EINVAL, "%s is not a regular file: not read", path);
		goto out;
	}
	if (st.st_uid != uid && st.st_uid != euid && st.st_uid != 0) {
		if (uid == euid)
			err = refuse(why, why_len, -EPERM,
				     "%s is owned by uid %u, not the process's uid %u: not read",
				     path, (unsigned)st.st_uid, uid);
		else
			err = refuse(why, why_len, -EPERM,
				     "%s is owned by uid %u, not the process's uid %u or euid %u: "
				     "not read", path, (unsigned)st.st_uid, uid, euid);
		goto out;
	}
	/* a root-owned file linked into /tmp by the process would pass the owner check */
	if (st.st_nlink != 1) {
		err = refuse(why, why_len, -EPERM, "%s has %llu hard links: not read", path,
			     (unsigned long long)st.st_nlink);
		goto out;
	}
	/* opening the magic link reopens the very file checked, whatever the name is now */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", path_fd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		err = -errno;
		err = refuse(why, why_len, err, "%s: cannot reopen through %s: %s", path, self,
			     strerror(-err));
		goto out;
	}
	if (fstat(fd, &st2)) {
		err = -errno;
		err = refuse(why, why_len, err, "%s: %s", path, strerror(-err));
		goto out;
	}
	if (st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
		err = refuse(why, why_len, -ESTALE, "%s changed while being opened", path);
		goto out;
	}
	err = fd;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	if (path_fd >= 0)
		close(path_fd);
	if (tmp_fd >= 0)
		close(tmp_fd);
	return err;
}

/* The real and effective uid from the "Uid:" line of /proc/PID/status. @return 0 or -errno. */
static int status_uids(int proc_fd, uint32_t *uid, uint32_t *euid)
{
	char buf[8192];
	size_t len = 0;
	const char *p, *end;
	unsigned long long v[2];
	ssize_t n;
	int fd;

	fd = openat(proc_fd, "status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len < sizeof(buf) - 1) {
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	p = strstr(buf, "\nUid:");
	if (!p)
		return -EBADMSG;
	p += 5;
	end = buf + len;
	for (int i = 0; i < 2; i++) {
		char *stop;

		while (p < end && is_blank(*p))
			p++;
		if (p == end || *p < '0' || *p > '9')
			return -EBADMSG;
		errno = 0;
		v[i] = strtoull(p, &stop, 10);
		if (errno || v[i] > UINT32_MAX)
			return -EBADMSG;
		p = stop;
	}
	*uid = (uint32_t)v[0];
	*euid = (uint32_t)v[1];
	return 0;
}

int perfmap_open(uint32_t pid, uint32_t ns_pid, char *why, size_t why_len)
{
	int proc_fd = -1, root_fd = -1, err;
	uint32_t uid, euid;
	char path[32];

	if (why && why_len)
		why[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%u", pid);
	proc_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (proc_fd < 0) {
		err = errno == ENOENT ? -ESRCH : -errno;
		err = refuse(why, why_len, err, "%s: %s", path, strerror(errno));
		goto out;
	}
	root_fd = openat(proc_fd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0) {
		err = errno == ENOENT ? -ESRCH : -errno;
		err = refuse(why, why_len, err, "%s/root: %s", path, strerror(errno));
		goto out;
	}
	err = status_uids(proc_fd, &uid, &euid);
	if (err) {
		err = refuse(why, why_len, err == -ENOENT ? -ESRCH : err, "%s/status: %s", path,
			     err == -EBADMSG ? "no Uid line" : strerror(-err));
		goto out;
	}
	err = perfmap_openat(root_fd, ns_pid, uid, euid, why, why_len);
out:
	if (root_fd >= 0)
		close(root_fd);
	if (proc_fd >= 0)
		close(proc_fd);
	return err;
}
