// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: read the input as a jitdump file, every record and every
 * DEBUG_INFO entry, and check the reader's promises; then write the same
 * bytes into a memory file in steps the input chooses and read it with
 * jitdump_file between the steps, on small budgets: it must deliver the
 * same records and stop at the same damage, and a file cut short after it
 * was read must be seen as rewritten.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "jit/jitdump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_jitdump: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* @p, @n lie within the record [rec, rec + size): read them all, for the sanitizers. */
static void within(const struct jitdump_record *r, const uint8_t *rec, const void *p, size_t n,
		   const char *what)
{
	const uint8_t *q = p;
	volatile uint8_t sum = 0;

	if (n && (!q || q < rec || q > rec + r->size || n > (size_t)(rec + r->size - q)))
		broken("record %u: %s (%zu bytes) outside the record of %u bytes", r->id, what, n,
		       r->size);
	for (size_t i = 0; i < n; i++)
		sum ^= q[i];
	(void)sum;
}

static void check_name(const struct jitdump_record *r, const uint8_t *rec, const char *name,
		       size_t len, bool cut, const char *what)
{
	size_t full;

	within(r, rec, name, len + 1, what);
	full = strnlen(name, (size_t)(rec + r->size - (const uint8_t *)name));
	if (full == (size_t)(rec + r->size - (const uint8_t *)name))
		broken("%s without its NUL in the record", what);
	if (len > JITDUMP_NAME_MAX || cut != (full > JITDUMP_NAME_MAX) ||
	    len != (cut ? JITDUMP_NAME_MAX : full))
		broken("%s of %zu bytes given as %zu, cut %d", what, full, len, cut);
}

static uint64_t check_record(const struct jitdump_header *h, const uint8_t *rec,
			     const struct jitdump_record *r)
{
	struct jitdump_line l;
	uint64_t n = 0, d = r->id * 31ull + r->size;
	size_t off = 0, last = 0;
	int ret;

	if (r->size < JITDUMP_PREFIX_SIZE || r->size > JITDUMP_RECORD_MAX ||
	    r->body != rec + JITDUMP_PREFIX_SIZE || r->body_len != r->size - JITDUMP_PREFIX_SIZE)
		broken("record %u of %u bytes, body of %zu", r->id, r->size, r->body_len);
	within(r, rec, r->body, r->body_len, "body");
	switch (r->id) {
	case JITDUMP_CODE_LOAD:
		if (r->body_len < 40 || r->load.name != (const char *)r->body + 40)
			broken("CODE_LOAD of %u bytes, name at %+td", r->size,
			       (const uint8_t *)r->load.name - rec);
		check_name(r, rec, r->load.name, r->load.name_len, r->load.name_cut, "load name");
		if (r->load.code != (const uint8_t *)r->load.name + strlen(r->load.name) + 1)
			broken("CODE_LOAD code not right after the name");
		within(r, rec, r->load.code, (size_t)r->load.code_size, "code");
		d = d * 31 + r->load.code_addr + r->load.code_size;
		break;
	case JITDUMP_CODE_MOVE:
		if (r->body_len < 48)
			broken("CODE_MOVE of %u bytes", r->size);
		d = d * 31 + r->move.new_code_addr;
		break;
	case JITDUMP_CODE_DEBUG_INFO:
		if (r->body_len < 16 || r->debug.entries != r->body + 16)
			broken("DEBUG_INFO of %u bytes", r->size);
		within(r, rec, r->debug.entries, r->debug.entries_len, "entries");
		while ((ret = jitdump_debug__next(h, r, &off, &l)) == 1) {
			if (off <= last || off > r->debug.entries_len)
				broken("entry at %zu after %zu of %zu", off, last, r->debug.entries_len);
			last = off;
			check_name(r, rec, l.file, l.file_len, l.file_cut, "entry file");
			if ((const uint8_t *)l.file + strlen(l.file) + 1 != r->debug.entries + off)
				broken("entry ends at %zu, not after its file name", off);
			n++;
			d = d * 31 + l.addr + (uint32_t)l.line;
		}
		if (ret != 0)
			broken("an entry of a checked record refused: %d", ret);
		if (n != r->debug.nr_entry || off != r->debug.entries_len)
			broken("%llu entries in %zu bytes, %llu said in %zu",
			       (unsigned long long)n, off, (unsigned long long)r->debug.nr_entry,
			       r->debug.entries_len);
		break;
	case JITDUMP_CODE_UNWINDING_INFO:
		if (r->body_len < 24 || r->unwind.eh_frame != r->body + 24 ||
		    r->unwind.eh_frame_hdr != r->unwind.eh_frame + r->unwind.eh_frame_size ||
		    r->unwind.eh_frame_size + r->unwind.eh_frame_hdr_size != r->unwind.unwinding_size)
			broken("UNWINDING_INFO of %u bytes: sizes %llu/%llu", r->size,
			       (unsigned long long)r->unwind.unwinding_size,
			       (unsigned long long)r->unwind.eh_frame_hdr_size);
		within(r, rec, r->unwind.eh_frame, r->unwind.eh_frame_size, "eh_frame");
		within(r, rec, r->unwind.eh_frame_hdr, (size_t)r->unwind.eh_frame_hdr_size,
		       "eh_frame_hdr");
		d = d * 31 + r->unwind.unwinding_size;
		if (jitdump_eh_frame_hdr_addr(r->timestamp, r->unwind.mapped_size,
					      r->unwind.eh_frame_size) -
		    jitdump_eh_frame_addr(r->timestamp, r->unwind.mapped_size) !=
		    r->unwind.eh_frame_size)
			broken("the header is not right after .eh_frame");
		break;
	default:
		break;
	}
	return d;
}

/* What a reading found: the records' digests, where it stopped, and how. */
struct outcome {
	uint64_t digests[4096];
	size_t n;		/* records (digests past the array are not kept) */
	uint64_t end;		/* the offset of the next record */
	uint32_t header_size;	/* the header's total_size; 0 when it was not read */
	int ret;		/* 0 (the bytes end), -EBADMSG, or -EAGAIN (header incomplete) */
	char why[JITDUMP_WHY_MAX];
};

static void add(struct outcome *o, uint64_t d)
{
	if (o->n < sizeof(o->digests) / sizeof(o->digests[0]))
		o->digests[o->n] = d;
	o->n++;
}

static void read_memory(const uint8_t *data, size_t size, struct outcome *o)
{
	struct jitdump_header h;
	struct jitdump_record r;
	size_t off;
	int ret;

	o->n = 0;
	o->end = 0;
	o->header_size = 0;
	o->why[0] = '\0';
	ret = jitdump__header(data, size, &h, o->why, sizeof(o->why));
	if (ret) {
		if (ret != -EAGAIN && ret != -EBADMSG)
			broken("jitdump__header: %d", ret);
		if (ret == -EBADMSG && !o->why[0])
			broken("a header refused without a reason");
		o->ret = ret;
		return;
	}
	if (h.version != 1 || h.total_size < 32 || h.total_size > JITDUMP_RECORD_MAX ||
	    (h.total_size < 40 && h.flags))
		broken("header version %u of %u bytes accepted", h.version, h.total_size);
	off = h.total_size;
	o->end = off;
	o->header_size = h.total_size;
	if (off > size) {
		o->ret = 0;
		return;
	}
	while ((ret = jitdump__next(&h, data, size, &off, &r, o->why, sizeof(o->why))) == 1) {
		if (off <= o->end || off > size || off - o->end != r.size)
			broken("record of %u bytes moved from %llu to %zu", r.size,
			       (unsigned long long)o->end, off);
		add(o, check_record(&h, data + o->end, &r));
		o->end = off;
	}
	if (ret != 0 && ret != -EBADMSG)
		broken("jitdump__next: %d", ret);
	if (off != o->end)
		broken("jitdump__next moved to %zu and returned %d", off, ret);
	if (ret == -EBADMSG && !o->why[0])
		broken("a record refused without a reason");
	o->ret = ret;
}

static int collect(void *ctx, const struct jitdump_header *h, const struct jitdump_record *r)
{
	struct outcome *o = ctx;

	add(o, check_record(h, r->body - JITDUMP_PREFIX_SIZE, r));
	return 0;
}

/* xorshift64*: the steps and budgets the input chooses */
static uint64_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static int memfd(void)
{
	static int fd = -1;

	if (fd < 0) {
		fd = memfd_create("fuzz_jitdump", MFD_CLOEXEC);
		if (fd < 0) {
			perror("fuzz_jitdump: memfd_create");
			abort();
		}
	}
	return fd;
}

static void write_at(int fd, const uint8_t *p, size_t n, size_t at)
{
	while (n) {
		ssize_t got = pwrite(fd, p, n, (off_t)at);

		if (got <= 0) {
			perror("fuzz_jitdump: pwrite");
			abort();
		}
		p += got;
		at += (size_t)got;
		n -= (size_t)got;
	}
}

static int poll_checked(struct jitdump_file *f, size_t budget, struct outcome *o, size_t size)
{
	size_t before = o->n;
	int ret = jitdump_file__poll(f, budget, collect, o);

	if (ret >= 0 && (size_t)ret != o->n - before)
		broken("poll returned %d for %zu records", ret, o->n - before);
	if (ret < 0 && ret != -EBADMSG)
		broken("poll: %d '%s' on a file only appended to", ret, jitdump_file__error(f));
	if (jitdump_file__memory(f) > 4096 + 2 * size + JITDUMP_READ_CHUNK)
		broken("%zu bytes held for a file of %zu", jitdump_file__memory(f), size);
	return ret;
}

static void read_file(const uint8_t *data, size_t size, const struct outcome *want)
{
	static const size_t budgets[] = { 1, 7, 16, 100, 4096, SIZE_MAX };
	static struct outcome got;
	uint64_t s = 0x9e3779b97f4a7c15ull ^ size;
	int fd = memfd(), ret = 0;
	struct jitdump_file *f;
	size_t written = 0;

	for (size_t i = 0; i < size && i < 64; i++)
		s = (s ^ data[i]) * 0x100000001b3ull;
	if (!s)
		s = 1;
	if (ftruncate(fd, 0)) {
		perror("fuzz_jitdump: ftruncate");
		abort();
	}
	f = jitdump_file__new(dup(fd));
	if (!f)
		broken("jitdump_file__new: %s", strerror(errno));
	got.n = 0;
	/* the file grows in a few steps, polled on small budgets between them */
	while (written < size && ret >= 0) {
		size_t step = 1 + (size_t)(next(&s) % (size - written));

		if (next(&s) % 4 == 0 && step > 17)
			step = 1 + step % 17;
		write_at(fd, data + written, step, written);
		written += step;
		for (int k = next(&s) % 3; k >= 0 && ret >= 0; k--)
			ret = poll_checked(f, budgets[next(&s) % 6], &got, size);
	}
	/* then to the end */
	for (int i = 0; ret >= 0; i++) {
		uint64_t before = jitdump_file__offset(f);

		ret = poll_checked(f, SIZE_MAX, &got, size);
		if (ret == 0 && jitdump_file__offset(f) == before)
			break;
		if (i > 1000000)
			broken("polls do not end");
	}
	if (got.n != want->n || memcmp(got.digests, want->digests,
				       (want->n < 4096 ? want->n : 4096) * sizeof(got.digests[0])))
		broken("%zu records from the file, %zu from memory", got.n, want->n);
	if (want->ret == -EBADMSG) {
		char at[64];

		if (ret != -EBADMSG)
			broken("the file read to %d where memory found damage: %s", ret, want->why);
		snprintf(at, sizeof(at), "offset %llu: ", (unsigned long long)want->end);
		if (strncmp(jitdump_file__error(f), at, strlen(at)) ||
		    strcmp(jitdump_file__error(f) + strlen(at), want->why))
			broken("the file: '%s', memory: '%s%s'", jitdump_file__error(f), at, want->why);
		if (jitdump_file__poll(f, SIZE_MAX, NULL, NULL) != -EBADMSG)
			broken("the error did not stay");
	} else {
		size_t known = want->header_size < JITDUMP_HEADER_SIZE ? JITDUMP_HEADER_MIN :
									 JITDUMP_HEADER_SIZE;

		if (ret < 0)
			broken("the file refused with '%s' what memory read", jitdump_file__error(f));
		if (jitdump_file__offset(f) != (want->ret == -EAGAIN ? 0 : want->end))
			broken("the file stopped at %llu, memory at %llu",
			       (unsigned long long)jitdump_file__offset(f),
			       (unsigned long long)want->end);
		if (jitdump_file__header(f) ? want->ret == -EAGAIN : want->ret != -EAGAIN)
			broken("a header read from one and not the other");
		/*
		 * its last byte was read (unless it is one of the header's bytes
		 * past those known, which are skipped): a shorter file was
		 * written again
		 */
		if (size && (want->ret == -EAGAIN || size <= known || size > want->header_size)) {
			if (ftruncate(fd, (off_t)(size - 1))) {
				perror("fuzz_jitdump: ftruncate");
				abort();
			}
			if (jitdump_file__poll(f, SIZE_MAX, NULL, NULL) != -EIO ||
			    !strstr(jitdump_file__error(f), "shrank"))
				broken("a file cut short not seen: '%s'", jitdump_file__error(f));
		}
	}
	jitdump_file__free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct outcome want;

	read_memory(data, size, &want);
	read_file(data, size, &want);
	return 0;
}
