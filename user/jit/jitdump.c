/* SPDX-License-Identifier: BSD-2-Clause */
/* The jitdump reader: header and records decoded in place over hostile bytes, and a file read as it grows. */

/*
 * Where an UNWINDING_INFO record's .eh_frame stands (jitdump_eh_frame_addr()).
 *
 * The unwinding data is .eh_frame first and .eh_frame_hdr after it, the
 * header being the last eh_frame_hdr_size of the unwinding_size bytes. The
 * specification says the opposite ("the EH Frame Header, followed by the
 * actual EH Frame"); perf and both writers below do this, and so does this
 * reader. The bytes hold pc-relative pointers, so they only mean something
 * at one address; the writers chose it as perf inject lays out the ELF file
 * it makes of each CODE_LOAD:
 *
 * - perf inject (tools/perf/util/genelf.c, jit_write_elf() and
 *   jit_add_eh_frame_info()): .text at GEN_ELF_TEXT_OFFSET, .eh_frame at
 *   ALIGN_8(GEN_ELF_TEXT_OFFSET + code_size), .eh_frame_hdr right after the
 *   unwinding_size - eh_frame_hdr_size bytes of .eh_frame. The MMAP2 record
 *   it injects (jitdump.c, jit_repipe_code_load()) maps that file at
 *   code_addr from file offset GEN_ELF_TEXT_OFFSET, for ALIGN_8(code_size) +
 *   mapped_size bytes. GEN_ELF_TEXT_OFFSET was sizeof(Elf64_Ehdr) = 64 and
 *   is round_up(sizeof(Ehdr) + sizeof(Phdr), 16) = 128 since "perf inject:
 *   Fix GEN_ELF_TEXT_OFFSET for jit" (2022) on 64-bit hosts: a multiple of 8
 *   either way, so .eh_frame is at code_addr + ALIGN_8(code_size) in the
 *   process's address space. (A 32-bit perf before that fix used 52, which
 *   is not: there the gap would be ALIGN_8(code_size + 4) - 4. sfprof reads
 *   64-bit processes.)
 * - V8 (src/diagnostics/eh-frame.cc, EhFrameWriter::Finish() and
 *   WriteEhFrameHdr(); written by perf-jit.cc, LogWriteUnwindingInfo()):
 *   the FDE's pc_begin (pcrel, sdata4) is -(RoundUp(code_size, 8) + the
 *   field's offset in .eh_frame), the header's eh_frame_ptr points back
 *   over the .eh_frame right before it and its one table entry's start
 *   (datarel) is -(RoundUp(code_size, 8) + eh_frame_size). unwinding_size is
 *   .eh_frame and header, eh_frame_hdr_size 20, mapped_size = unwinding_size;
 *   code without unwinding information gets a header alone (unwinding_size
 *   20, no FDE, mapped_size 0). The record is padded to 8 bytes.
 * - CPython (Python/perf_jit_trampoline.c, perf_map_jit_write_entry(), with
 *   the .eh_frame from Python/jit_unwind.c, elf_init_ehframe_perf(), in the
 *   current tree): the same layout and arithmetic, round_up(code_size, 8);
 *   eh_frame_hdr_size 20, mapped_size = round_up(unwinding_size, 16), the
 *   record padded to 8 bytes. Before gh-136541 (2025) the FDE's pc_begin was
 *   a constant, right for the x86-64 trampoline only by that change's own
 *   account: 3.13.0 on x86-64 writes -0x30, which for its 24-byte CIE and
 *   11-byte trampoline is the same -(round_up(11, 8) + 32); its header's
 *   table entry is computed as above.
 *
 * So: .eh_frame at code_addr + round_up(code_size, 8), .eh_frame_hdr right
 * after its eh_frame_size bytes. An unwinder given the bytes at those
 * addresses finds the FDE starting at code_addr, through the header's table
 * or by walking .eh_frame. (V8's FDE may cover a few bytes less than the
 * CODE_LOAD's code_size: 382 of 384 for a TurboFan function in Node 20.)
 * tests/unit/test_jitdump.c checks this with libsfunwind's .eh_frame reader
 * on records CPython 3.13.0 and Node 20 wrote.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jit/jitdump.h"

/* Bytes of each record's fields after the prefix. */
#define LOAD_FIELDS	40
#define MOVE_FIELDS	48
#define DEBUG_FIELDS	16
#define UNWIND_FIELDS	24
/* A debug entry's fixed part: addr, line, discrim. */
#define ENTRY_FIELDS	16

static uint32_t rd32(const struct jitdump_header *h, const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return h->swapped ? __builtin_bswap32(v) : v;
}

static uint64_t rd64(const struct jitdump_header *h, const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return h->swapped ? __builtin_bswap64(v) : v;
}

__attribute__((format(printf, 3, 4)))
static int bad(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (why && why_len) {
		va_start(ap, fmt);
		vsnprintf(why, why_len, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

int jitdump__header(const uint8_t *buf, size_t len, struct jitdump_header *h, char *why,
		    size_t why_len)
{
	struct jitdump_header hh = { 0 };
	uint32_t magic;

	if (len < 4)
		return -EAGAIN;
	memcpy(&magic, buf, sizeof(magic));
	if (magic == JITDUMP_MAGIC_SWAPPED)
		hh.swapped = true;
	else if (magic != JITDUMP_MAGIC)
		return bad(why, why_len, "not a jitdump file: magic 0x%08" PRIx32, magic);
	if (len < 8)
		return -EAGAIN;
	hh.version = rd32(&hh, buf + 4);
	if (hh.version != JITDUMP_VERSION)
		return bad(why, why_len, "jitdump version %" PRIu32 ", not %d", hh.version,
			   JITDUMP_VERSION);
	if (len < 12)
		return -EAGAIN;
	hh.total_size = rd32(&hh, buf + 8);
	if (hh.total_size < JITDUMP_HEADER_MIN || hh.total_size > JITDUMP_RECORD_MAX)
		return bad(why, why_len, "header of %" PRIu32 " bytes: not within %d-%u",
			   hh.total_size, JITDUMP_HEADER_MIN, JITDUMP_RECORD_MAX);
	if (len < (hh.total_size < JITDUMP_HEADER_SIZE ? JITDUMP_HEADER_MIN : JITDUMP_HEADER_SIZE))
		return -EAGAIN;
	hh.elf_mach = rd32(&hh, buf + 12);
	hh.pid = rd32(&hh, buf + 20);
	hh.timestamp = rd64(&hh, buf + 24);
	if (hh.total_size >= JITDUMP_HEADER_SIZE)
		hh.flags = rd64(&hh, buf + 32);
	*h = hh;
	return 0;
}

static int parse_load(const struct jitdump_header *h, struct jitdump_record *r, char *why,
		      size_t why_len)
{
	const uint8_t *b = r->body, *nul;
	size_t room, full;

	if (r->body_len < LOAD_FIELDS)
		return bad(why, why_len, "CODE_LOAD of %" PRIu32 " bytes: its fields need %d",
			   r->size, JITDUMP_PREFIX_SIZE + LOAD_FIELDS);
	r->load.pid = rd32(h, b);
	r->load.tid = rd32(h, b + 4);
	r->load.vma = rd64(h, b + 8);
	r->load.code_addr = rd64(h, b + 16);
	r->load.code_size = rd64(h, b + 24);
	r->load.code_index = rd64(h, b + 32);
	room = r->body_len - LOAD_FIELDS;
	nul = memchr(b + LOAD_FIELDS, '\0', room);
	if (!nul)
		return bad(why, why_len, "CODE_LOAD: the name has no NUL inside the record");
	full = (size_t)(nul - (b + LOAD_FIELDS));
	if (r->load.code_size > room - full - 1)
		return bad(why, why_len,
			   "CODE_LOAD: code_size %" PRIu64 " past the record (%zu bytes after the name)",
			   r->load.code_size, room - full - 1);
	r->load.name = (const char *)(b + LOAD_FIELDS);
	r->load.name_len = full > JITDUMP_NAME_MAX ? JITDUMP_NAME_MAX : full;
	r->load.name_cut = full > JITDUMP_NAME_MAX;
	r->load.code = nul + 1;
	return 0;
}

static int parse_move(const struct jitdump_header *h, struct jitdump_record *r, char *why,
		      size_t why_len)
{
	const uint8_t *b = r->body;

	if (r->body_len < MOVE_FIELDS)
		return bad(why, why_len, "CODE_MOVE of %" PRIu32 " bytes: its fields need %d",
			   r->size, JITDUMP_PREFIX_SIZE + MOVE_FIELDS);
	r->move.pid = rd32(h, b);
	r->move.tid = rd32(h, b + 4);
	r->move.vma = rd64(h, b + 8);
	r->move.old_code_addr = rd64(h, b + 16);
	r->move.new_code_addr = rd64(h, b + 24);
	r->move.code_size = rd64(h, b + 32);
	r->move.code_index = rd64(h, b + 40);
	return 0;
}

/* Walk all nr_entry entries now, so that a record delivered can be read to its end. */
static int parse_debug(const struct jitdump_header *h, struct jitdump_record *r, char *why,
		       size_t why_len)
{
	const uint8_t *b = r->body, *entries, *nul;
	size_t room, at = 0;

	if (r->body_len < DEBUG_FIELDS)
		return bad(why, why_len, "DEBUG_INFO of %" PRIu32 " bytes: its fields need %d",
			   r->size, JITDUMP_PREFIX_SIZE + DEBUG_FIELDS);
	r->debug.code_addr = rd64(h, b);
	r->debug.nr_entry = rd64(h, b + 8);
	entries = b + DEBUG_FIELDS;
	room = r->body_len - DEBUG_FIELDS;
	/* each entry takes at least ENTRY_FIELDS + 1 bytes: the loop ends within the record */
	for (uint64_t i = 0; i < r->debug.nr_entry; i++) {
		if (room - at < ENTRY_FIELDS + 1)
			return bad(why, why_len,
				   "DEBUG_INFO: entry %" PRIu64 " of %" PRIu64 " past the record",
				   i, r->debug.nr_entry);
		nul = memchr(entries + at + ENTRY_FIELDS, '\0', room - at - ENTRY_FIELDS);
		if (!nul)
			return bad(why, why_len,
				   "DEBUG_INFO: entry %" PRIu64 "'s file name has no NUL inside the record",
				   i);
		at = (size_t)(nul - entries) + 1;
	}
	r->debug.entries = entries;
	r->debug.entries_len = at;
	return 0;
}

static int parse_unwind(const struct jitdump_header *h, struct jitdump_record *r, char *why,
			size_t why_len)
{
	const uint8_t *b = r->body;
	size_t room;

	if (r->body_len < UNWIND_FIELDS)
		return bad(why, why_len, "UNWINDING_INFO of %" PRIu32 " bytes: its fields need %d",
			   r->size, JITDUMP_PREFIX_SIZE + UNWIND_FIELDS);
	r->unwind.unwinding_size = rd64(h, b);
	r->unwind.eh_frame_hdr_size = rd64(h, b + 8);
	r->unwind.mapped_size = rd64(h, b + 16);
	room = r->body_len - UNWIND_FIELDS;
	if (r->unwind.unwinding_size > room)
		return bad(why, why_len,
			   "UNWINDING_INFO: unwinding_size %" PRIu64 " past the record (%zu bytes)",
			   r->unwind.unwinding_size, room);
	if (r->unwind.eh_frame_hdr_size > r->unwind.unwinding_size)
		return bad(why, why_len,
			   "UNWINDING_INFO: eh_frame_hdr_size %" PRIu64 " above unwinding_size %" PRIu64,
			   r->unwind.eh_frame_hdr_size, r->unwind.unwinding_size);
	r->unwind.eh_frame = b + UNWIND_FIELDS;
	r->unwind.eh_frame_size = (size_t)(r->unwind.unwinding_size - r->unwind.eh_frame_hdr_size);
	r->unwind.eh_frame_hdr = r->unwind.eh_frame + r->unwind.eh_frame_size;
	return 0;
}

int jitdump__next(const struct jitdump_header *h, const uint8_t *buf, size_t len, size_t *off,
		  struct jitdump_record *r, char *why, size_t why_len)
{
	size_t at = *off;
	const uint8_t *p;
	uint32_t id, size;
	int err;

	if (at > len)
		return -EINVAL;
	if (len - at < JITDUMP_PREFIX_SIZE)
		return 0;
	p = buf + at;
	id = rd32(h, p);
	size = rd32(h, p + 4);
	/* told before the record is whole, so that a reader never waits for bytes it would refuse */
	if (size < JITDUMP_PREFIX_SIZE)
		return bad(why, why_len, "record %" PRIu32 " of %" PRIu32 " bytes: less than its prefix",
			   id, size);
	if (size > JITDUMP_RECORD_MAX)
		return bad(why, why_len, "record %" PRIu32 " of %" PRIu32 " bytes: more than %u", id,
			   size, JITDUMP_RECORD_MAX);
	if (len - at < size)
		return 0;
	memset(r, 0, sizeof(*r));
	r->id = id;
	r->size = size;
	r->timestamp = rd64(h, p + 8);
	r->body = p + JITDUMP_PREFIX_SIZE;
	r->body_len = size - JITDUMP_PREFIX_SIZE;
	switch (id) {
	case JITDUMP_CODE_LOAD:
		err = parse_load(h, r, why, why_len);
		break;
	case JITDUMP_CODE_MOVE:
		err = parse_move(h, r, why, why_len);
		break;
	case JITDUMP_CODE_DEBUG_INFO:
		err = parse_debug(h, r, why, why_len);
		break;
	case JITDUMP_CODE_UNWINDING_INFO:
		err = parse_unwind(h, r, why, why_len);
		break;
	default:
		/* CODE_CLOSE has no fields; ids not known are skipped whole */
		err = 0;
		break;
	}
	if (err)
		return err;
	*off = at + size;
	return 1;
}

int jitdump_debug__next(const struct jitdump_header *h, const struct jitdump_record *r,
			size_t *off, struct jitdump_line *out)
{
	size_t at = *off, len, full;
	const uint8_t *p, *nul;

	if (r->id != JITDUMP_CODE_DEBUG_INFO)
		return -EINVAL;
	len = r->debug.entries_len;
	if (at > len)
		return -EINVAL;
	if (at == len)
		return 0;
	if (len - at < ENTRY_FIELDS + 1)
		return -EBADMSG;
	p = r->debug.entries + at;
	nul = memchr(p + ENTRY_FIELDS, '\0', len - at - ENTRY_FIELDS);
	if (!nul)
		return -EBADMSG;
	full = (size_t)(nul - (p + ENTRY_FIELDS));
	out->addr = rd64(h, p);
	out->line = (int32_t)rd32(h, p + 8);
	out->discrim = (int32_t)rd32(h, p + 12);
	out->file = (const char *)(p + ENTRY_FIELDS);
	out->file_len = full > JITDUMP_NAME_MAX ? JITDUMP_NAME_MAX : full;
	out->file_cut = full > JITDUMP_NAME_MAX;
	*off = (size_t)(nul - r->debug.entries) + 1;
	return 1;
}

uint64_t jitdump_eh_frame_addr(uint64_t code_addr, uint64_t code_size)
{
	return code_addr + ((code_size + 7) & ~(uint64_t)7);
}

uint64_t jitdump_eh_frame_hdr_addr(uint64_t code_addr, uint64_t code_size,
				   uint64_t eh_frame_size)
{
	return jitdump_eh_frame_addr(code_addr, code_size) + eh_frame_size;
}

/* --- the file --- */

/*
 * buf holds the file's bytes [base, base + len), of which [base + start,
 * base + len) are not delivered yet; the next read is at base + len. Before
 * the header is read, base is 0 and start 0.
 */
struct jitdump_file {
	int fd;
	uint8_t *buf;
	size_t start, len, cap;
	uint64_t base;
	uint64_t high;		/* the end of the bytes read so far: the file was this long */
	struct jitdump_header hdr;
	bool have_hdr;
	uint8_t head[JITDUMP_HEADER_SIZE];	/* the header as read, to see it rewritten */
	size_t head_len;
	int err;		/* sticky: 0, -EBADMSG or -EIO */
	char error[JITDUMP_WHY_MAX + 32];
};

struct jitdump_file *jitdump_file__new(int fd)
{
	struct jitdump_file *f;

	if (fd < 0) {
		errno = EBADF;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		errno = ENOMEM;
		return NULL;
	}
	f->fd = fd;
	return f;
}

void jitdump_file__free(struct jitdump_file *f)
{
	if (!f)
		return;
	close(f->fd);
	free(f->buf);
	free(f);
}

__attribute__((format(printf, 3, 4)))
static int fail(struct jitdump_file *f, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->error, sizeof(f->error), fmt, ap);
	va_end(ap);
	f->err = err;
	return err;
}

/* pread() until @n bytes or the end of the file; @return the bytes read or -errno. */
static ssize_t pread_full(int fd, uint8_t *p, size_t n, uint64_t off)
{
	size_t done = 0;

	while (done < n) {
		ssize_t got = pread(fd, p + done, n - done, (off_t)(off + done));

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		done += (size_t)got;
	}
	return (ssize_t)done;
}

/* The runtime opens the file O_TRUNC: a new run of it writes a new header over the old file. */
static int check_rewritten(struct jitdump_file *f)
{
	uint8_t now[JITDUMP_HEADER_SIZE];
	const uint8_t *seen = f->have_hdr ? f->head : f->buf;
	size_t n = f->have_hdr ? f->head_len : (f->len < sizeof(now) ? f->len : sizeof(now));
	struct stat st;
	ssize_t got;

	if (fstat(f->fd, &st))
		return fail(f, -EIO, "fstat: %s", strerror(errno));
	if (st.st_size < 0 || (uint64_t)st.st_size < f->high)
		return fail(f, -EIO,
			    "the file shrank from %" PRIu64 " to %lld bytes: written again from the start",
			    f->high, (long long)st.st_size);
	if (!n)
		return 0;
	got = pread_full(f->fd, now, n, 0);
	if (got < 0)
		return fail(f, -EIO, "offset 0: %s", strerror((int)-got));
	if ((size_t)got < n)
		return fail(f, -EIO, "the header is gone: the file was written again from the start");
	if (memcmp(now, seen, n))
		return fail(f, -EIO, "the header changed: the file was written again from the start");
	return 0;
}

/* Deliver the records buf holds whole; @return 0 or a negative errno. */
static int deliver(struct jitdump_file *f, jitdump_record_fn fn, void *ctx, int *delivered)
{
	char why[JITDUMP_WHY_MAX];
	struct jitdump_record rec;
	size_t off;
	int ret;

	for (;;) {
		if (!f->have_hdr) {
			ret = jitdump__header(f->buf, f->len, &f->hdr, why, sizeof(why));
			if (ret == -EAGAIN)
				return 0;
			if (ret)
				return fail(f, ret, "offset 0: %s", why);
			f->have_hdr = true;
			f->head_len = f->hdr.total_size < JITDUMP_HEADER_SIZE ? JITDUMP_HEADER_MIN :
										  JITDUMP_HEADER_SIZE;
			memcpy(f->head, f->buf, f->head_len);
			if (f->hdr.total_size <= f->len) {
				f->start = f->hdr.total_size;
			} else {
				/* header bytes this reader does not know are never read */
				f->base = f->hdr.total_size;
				f->start = f->len = 0;
			}
			continue;
		}
		if (*delivered == INT_MAX)
			return 0;
		off = f->start;
		ret = jitdump__next(&f->hdr, f->buf, f->len, &off, &rec, why, sizeof(why));
		if (ret == 0)
			return 0;
		if (ret < 0)
			return fail(f, ret, "offset %" PRIu64 ": %s", f->base + f->start, why);
		f->start = off;
		(*delivered)++;
		if (fn && (ret = fn(ctx, &f->hdr, &rec)) < 0)
			return ret;
	}
}

/* How many bytes to read next: the rest of the record begun, or a chunk. */
static size_t wanted(const struct jitdump_file *f)
{
	size_t have = f->len - f->start;
	uint32_t size;

	if (!f->have_hdr || have < JITDUMP_PREFIX_SIZE)
		return JITDUMP_READ_CHUNK;
	/* deliver() left a prefix it accepted: size is within JITDUMP_RECORD_MAX */
	size = rd32(&f->hdr, f->buf + f->start + 4);
	if (size > have && size - have > JITDUMP_READ_CHUNK)
		return size - have;
	return JITDUMP_READ_CHUNK;
}

/*
 * Read up to @n more bytes after buf's; @return the bytes read (0 at the end)
 * or a negative errno. The buffer grows by a chunk, or by as much as it holds
 * once that is more, and only when what it holds leaves no room for a chunk:
 * a record's total_size is not trusted with memory before its bytes are in
 * the file, so the buffer stays within twice the bytes of the record begun
 * and a chunk.
 */
static ssize_t fill(struct jitdump_file *f, size_t n)
{
	size_t keep = f->len - f->start, room, want = n < JITDUMP_READ_CHUNK ? n : JITDUMP_READ_CHUNK;
	ssize_t got;

	if (f->start) {
		memmove(f->buf, f->buf + f->start, keep);
		f->base += f->start;
		f->len = keep;
		f->start = 0;
	}
	/* give back what a large record took once the reader is past it */
	if (f->cap > 2 * JITDUMP_READ_CHUNK && 2 * keep + JITDUMP_READ_CHUNK < f->cap) {
		uint8_t *smaller = realloc(f->buf, keep + JITDUMP_READ_CHUNK);

		if (smaller) {
			f->buf = smaller;
			f->cap = keep + JITDUMP_READ_CHUNK;
		}
	}
	if (f->cap - keep < want) {
		size_t add = keep > want ? (keep < n ? keep : n) : want;
		uint8_t *grown = realloc(f->buf, keep + add);

		if (!grown)
			return -ENOMEM;
		f->buf = grown;
		f->cap = keep + add;
	}
	room = f->cap - keep;
	got = pread_full(f->fd, f->buf + f->len, n < room ? n : room, f->base + f->len);
	if (got < 0)
		return got;
	f->len += (size_t)got;
	/* only bytes read say how long the file was: base may lie past its end */
	if (got && f->base + f->len > f->high)
		f->high = f->base + f->len;
	return got;
}

int jitdump_file__poll(struct jitdump_file *f, size_t max_bytes, jitdump_record_fn fn, void *ctx)
{
	size_t budget = max_bytes;
	int delivered = 0, err;
	ssize_t got;

	if (f->err)
		return f->err;
	err = check_rewritten(f);
	if (err)
		return err;
	for (;;) {
		err = deliver(f, fn, ctx, &delivered);
		if (err)
			return err;
		if (!budget || delivered == INT_MAX)
			break;
		got = fill(f, wanted(f) < budget ? wanted(f) : budget);
		if (got == -ENOMEM)
			return -ENOMEM;
		if (got < 0)
			return fail(f, -EIO, "offset %" PRIu64 ": %s", f->base + f->len,
				    strerror((int)-got));
		if (got == 0)
			break;
		budget -= (size_t)got;
	}
	return delivered;
}

const char *jitdump_file__error(const struct jitdump_file *f)
{
	return f->err ? f->error : "";
}

int jitdump_file__fd(const struct jitdump_file *f)
{
	return f->fd;
}

uint64_t jitdump_file__offset(const struct jitdump_file *f)
{
	return f->have_hdr ? f->base + f->start : 0;
}

const struct jitdump_header *jitdump_file__header(const struct jitdump_file *f)
{
	return f->have_hdr ? &f->hdr : NULL;
}

size_t jitdump_file__memory(const struct jitdump_file *f)
{
	return sizeof(*f) + f->cap;
}
