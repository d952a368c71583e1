/* SPDX-License-Identifier: BSD-2-Clause */
/* The XRay trace reader: FDR versions 1-5 and basic mode, record by record, over untrusted bytes. */

/*
 * The trace is never copied: records are decoded in place, payload pointers
 * point into it, and the reader's state is a few counters, whatever the size.
 *
 * FDR traces are a header and thread buffers. Version 1 buffers are
 * buffer_size bytes each (the header's field), NewBuffer first and EndOfBuffer
 * then padding to the buffer's end. From version 2 each buffer is a
 * BufferExtents record and the number of bytes of records it names. Damage
 * costs the buffer it is in: the records before it were already returned, the
 * bytes from the damage to the place where reading resumes are one loss, and
 * reading resumes at
 *   - version 1: the next buffer_size boundary;
 *   - version 1 with buffer_size below 64 (no room for a buffer's preamble:
 *     read as llvm-xray reads every version 1 trace, record after record): the
 *     next NewBuffer followed by a WalltimeMarker;
 *   - versions 2-5: the end the extents named when a BufferExtents record
 *     starts there, else the next BufferExtents followed by a NewBuffer.
 * A buffer starts with NewBuffer (version 1) or with BufferExtents and
 * NewBuffer (or empty extents) as compiler-rt writes them; anything else
 * where a buffer should start is damage. A buffer the end of the trace cuts
 * short is a loss of its missing bytes (zero bytes skipped) unless it ended
 * cleanly (version 1: EndOfBuffer). A BufferExtents record that could start
 * a buffer inside one means the previous extents overstated: a zero-byte
 * loss, then a new buffer starts there.
 *
 * Byte order is told from the header (version and type are small numbers),
 * as llvm-xray does by trying little-endian and then big-endian. Bitfields
 * follow the spec: little-endian traces pack them from the least significant
 * bit, big-endian ones from the most significant.
 *
 * Where the spec and the producers differ, the reader follows compiler-rt
 * and llvm-xray: NewBuffer's thread id is 4 bytes (the version 1 spec says
 * 2; with its reserved bytes zero, little-endian traces read the same), and
 * the TSC delta of version 5 custom and typed events is signed. Version 1-4
 * custom events carry their own absolute TSC, which does not move the
 * buffer's.
 *
 * Basic mode traces are 32-byte records; a run of records that cannot be read
 * is one loss, and a partial record at the end another.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xray.h"

#define HEADER_SIZE 32
#define FUNC_SIZE 8
#define META_SIZE 16
#define BASIC_SIZE 32
/* Version 1 buffers smaller than NewBuffer, WalltimeMarker, NewCPUId, EndOfBuffer. */
#define V1_MIN_BUFFER (4 * META_SIZE)

/* Metadata kinds in the trace: enum xray_rec_kind minus XRAY_REC_META_BASE. */
enum {
	MK_NEW_BUFFER = 0,
	MK_END_OF_BUFFER = 1,
	MK_NEW_CPU = 2,
	MK_TSC_WRAP = 3,
	MK_WALLTIME = 4,
	MK_CUSTOM_EVENT = 5,
	MK_CALL_ARG = 6,
	MK_BUFFER_EXTENTS = 7,
	MK_TYPED_EVENT = 8,
	MK_PID = 9,
	MK_COUNT,
};

enum layout {
	LAYOUT_BASIC,
	LAYOUT_V1_FIXED,	/* version 1, buffers of buffer_size bytes */
	LAYOUT_V1_SEQ,		/* version 1, buffers one after the other */
	LAYOUT_EXTENTS,		/* versions 2-5 */
};

struct xray_reader {
	const uint8_t *data;
	size_t size;
	struct xray_header hdr;
	enum layout layout;
	bool swap;		/* the trace's byte order is not the host's */

	size_t pos;		/* next byte to read */
	bool in_buffer;
	size_t buf_start;	/* offset of the current buffer */
	uint64_t buf_claim;	/* where its header says it ends (may lie past the data) */
	size_t buf_end;		/* min(buf_claim, size) */
	bool buf_closed;	/* version 1: EndOfBuffer seen */
	size_t overstated;	/* version 1: a buffer found in the padding after an
				   EndOfBuffer (the header's buffer_size lies), 0 = none */

	/* thread state of the current buffer */
	uint64_t tsc;
	uint32_t tid;
	uint32_t pid;
	uint16_t cpu;
};

static inline uint16_t rd16(const struct xray_reader *r, const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return r->swap ? __builtin_bswap16(v) : v;
}

static inline uint32_t rd32(const struct xray_reader *r, const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return r->swap ? __builtin_bswap32(v) : v;
}

static inline uint64_t rd64(const struct xray_reader *r, const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return r->swap ? __builtin_bswap64(v) : v;
}

/* The first byte of a record: metadata or function, and the metadata kind. */
static inline bool is_meta(const struct xray_reader *r, uint8_t b)
{
	return r->hdr.big_endian ? b & 0x80 : b & 0x01;
}

static inline uint8_t meta_kind(const struct xray_reader *r, uint8_t b)
{
	return r->hdr.big_endian ? b & 0x7f : b >> 1;
}

static inline uint8_t meta_byte(const struct xray_reader *r, uint8_t kind)
{
	return r->hdr.big_endian ? (uint8_t)(0x80 | kind) : (uint8_t)(kind << 1 | 1);
}

static void set_reason(char *reason, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_reason(char *reason, const char *fmt, ...)
{
	va_list ap;

	if (!reason)
		return;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(((struct xray_loss *)0)->reason), fmt, ap);
	va_end(ap);
}

/* Version and type in one byte order: usable when both are small numbers. */
static bool header_plausible(const uint8_t *p, bool be)
{
	uint16_t version = be ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]);
	uint16_t type = be ? (uint16_t)(p[2] << 8 | p[3]) : (uint16_t)(p[3] << 8 | p[2]);

	return version >= 1 && version < 256 && type < 256;
}

static int read_header(struct xray_reader *r, char *reason)
{
	const uint8_t *p = r->data;
	struct xray_header *h = &r->hdr;
	bool host_be = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;

	if (r->size < HEADER_SIZE) {
		set_reason(reason, "%zu bytes: too short for an XRay header (32 bytes)", r->size);
		return -EBADMSG;
	}
	if (header_plausible(p, false)) {
		h->big_endian = false;
	} else if (header_plausible(p, true)) {
		h->big_endian = true;
	} else {
		set_reason(reason, "not an XRay trace: version and type %02x%02x %02x%02x are not "
			   "small numbers in either byte order%s", p[0], p[1], p[2], p[3],
			   memcmp(p, "---", 3) ? "" : " (YAML text? only binary traces are read)");
		return -EBADMSG;
	}
	r->swap = h->big_endian != host_be;
	h->version = rd16(r, p);
	h->type = rd16(r, p + 2);
	/* bool bitfields: the first two bits of the byte, from the end the byte order packs from */
	h->constant_tsc = h->big_endian ? p[4] & 0x80 : p[4] & 0x01;
	h->nonstop_tsc = h->big_endian ? p[4] & 0x40 : p[4] & 0x02;
	h->cycle_freq = rd64(r, p + 8);
	/* basic mode keeps the creation time there, FDR the thread buffer size */
	h->buffer_size = h->type == XRAY_TRACE_FDR ? rd64(r, p + 16) : 0;

	if (h->type > XRAY_TRACE_FDR) {
		set_reason(reason, "trace type %u: only basic mode (0) and FDR (1) are known",
			   h->type);
		return -ENOTSUP;
	}
	if (h->type == XRAY_TRACE_BASIC) {
		if (h->version > 3) {
			set_reason(reason, "basic-mode trace version %u: only versions 1-3 are known",
				   h->version);
			return -ENOTSUP;
		}
		r->layout = LAYOUT_BASIC;
	} else {
		if (h->version > 5) {
			set_reason(reason, "FDR trace version %u: only versions 1-5 are known",
				   h->version);
			return -ENOTSUP;
		}
		if (h->version >= 2)
			r->layout = LAYOUT_EXTENTS;
		else if (h->buffer_size < V1_MIN_BUFFER)
			r->layout = LAYOUT_V1_SEQ;
		else
			r->layout = LAYOUT_V1_FIXED;
	}
	return 0;
}

struct xray_reader *xray_reader__new(const void *data, size_t size, char *reason)
{
	struct xray_reader *r;
	int err;

	if (reason)
		reason[0] = '\0';
	if (!data && size) {
		set_reason(reason, "no data");
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		set_reason(reason, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	r->data = data;
	r->size = size;
	err = read_header(r, reason);
	if (err) {
		free(r);
		errno = -err;
		return NULL;
	}
	r->pos = HEADER_SIZE;
	return r;
}

const struct xray_header *xray_reader__header(const struct xray_reader *r)
{
	return &r->hdr;
}

void xray_reader__free(struct xray_reader *r)
{
	free(r);
}

static inline void rec_start(const struct xray_reader *r, struct xray_record *rec, uint8_t kind,
			     size_t off)
{
	*rec = (struct xray_record){
		.kind = kind,
		.offset = off,
		.tsc = r->tsc,
		.tid = r->tid,
		.pid = r->pid,
		.cpu = r->cpu,
	};
}

static void loss_fill(struct xray_loss *loss, uint64_t off, uint64_t bytes, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void loss_fill(struct xray_loss *loss, uint64_t off, uint64_t bytes, const char *fmt, ...)
{
	va_list ap;

	if (!loss)
		return;
	loss->offset = off;
	loss->bytes = bytes;
	va_start(ap, fmt);
	vsnprintf(loss->reason, sizeof(loss->reason), fmt, ap);
	va_end(ap);
}

/* --- basic mode --- */

/* Can the 32 bytes at @p be read as a basic-mode record? */
static bool basic_ok(const struct xray_reader *r, const uint8_t *p)
{
	uint16_t type = rd16(r, p);

	return type == 1 || (type == 0 && p[3] <= XRAY_REC_ENTER_ARGS);
}

static int basic_next(struct xray_reader *r, struct xray_record *rec, struct xray_loss *loss)
{
	size_t off = r->pos, end;
	const uint8_t *p;

	if (off >= r->size)
		return 0;
	if (r->size - off < BASIC_SIZE) {
		loss_fill(loss, off, r->size - off,
			  "%zu trailing bytes: not a whole 32-byte record", r->size - off);
		r->pos = r->size;
		return 2;
	}
	p = r->data + off;
	if (!basic_ok(r, p)) {
		uint16_t type = rd16(r, p);

		end = off + BASIC_SIZE;
		while (r->size - end >= BASIC_SIZE && !basic_ok(r, r->data + end))
			end += BASIC_SIZE;
		if (type == 0)
			loss_fill(loss, off, end - off, "unknown function record type %u%s", p[3],
				  end - off > BASIC_SIZE ? ", and more records that cannot be read" : "");
		else
			loss_fill(loss, off, end - off, "unknown record type %u%s", type,
				  end - off > BASIC_SIZE ? ", and more records that cannot be read" : "");
		r->pos = end;
		return 2;
	}
	r->pos = off + BASIC_SIZE;
	if (rd16(r, p) == 0) {
		r->cpu = p[2];
		r->tsc = rd64(r, p + 8);
		r->tid = rd32(r, p + 16);
		r->pid = rd32(r, p + 20);
		rec_start(r, rec, p[3], off);
		rec->func_id = (int32_t)rd32(r, p + 4);
		return 1;
	}
	/* an argument of the function record before it: time and cpu are that record's */
	r->tid = rd32(r, p + 8);
	r->pid = rd32(r, p + 12);
	rec_start(r, rec, XRAY_REC_CALL_ARG, off);
	rec->func_id = (int32_t)rd32(r, p + 4);
	rec->value = rd64(r, p + 16);
	return 1;
}

/* --- FDR --- */

static void reset_state(struct xray_reader *r)
{
	r->tsc = 0;
	r->tid = 0;
	r->pid = 0;
	r->cpu = 0;
}

/* Is there, at @off, a BufferExtents record followed by a NewBuffer record? */
static bool extents_plausible(const struct xray_reader *r, size_t off)
{
	uint64_t claim;

	if (off > r->size || r->size - off < META_SIZE + 1 ||
	    r->data[off] != meta_byte(r, MK_BUFFER_EXTENTS) ||
	    r->data[off + META_SIZE] != meta_byte(r, MK_NEW_BUFFER))
		return false;
	claim = rd64(r, r->data + off + 1);
	if (claim < META_SIZE)
		return false;
	/* past the end of the data: a buffer the end of the trace cut, or garbage */
	return claim <= r->size - off - META_SIZE ||
	       (r->hdr.buffer_size && claim <= r->hdr.buffer_size);
}

/* Is there, at @off, a NewBuffer record followed by a WalltimeMarker? */
static bool newbuffer_plausible(const struct xray_reader *r, size_t off)
{
	return off <= r->size && r->size - off >= 2 * META_SIZE &&
	       r->data[off] == meta_byte(r, MK_NEW_BUFFER) &&
	       r->data[off + META_SIZE] == meta_byte(r, MK_WALLTIME);
}

/*
 * A version 1 buffer's first records inside the padding between @off and the
 * end of the current buffer: NewBuffer, WalltimeMarker and NewCPUId one after
 * the other, as compiler-rt starts every buffer (records are not aligned: an
 * event's payload can leave them anywhere). @return its offset, or 0.
 */
static size_t buffer_in_padding(const struct xray_reader *r, size_t off)
{
	uint8_t first = meta_byte(r, MK_NEW_BUFFER);

	while (off < r->buf_end) {
		const uint8_t *hit = memchr(r->data + off, first, r->buf_end - off);

		if (!hit)
			return 0;
		off = (size_t)(hit - r->data);
		if (newbuffer_plausible(r, off) && r->size - off >= 3 * META_SIZE &&
		    r->data[off + 2 * META_SIZE] == meta_byte(r, MK_NEW_CPU))
			return off;
		off++;
	}
	return 0;
}

/* The first place at or after @off where a buffer plausibly starts; the size if none. */
static size_t scan_buffer(const struct xray_reader *r, size_t off)
{
	uint8_t first = meta_byte(r, r->layout == LAYOUT_EXTENTS ? MK_BUFFER_EXTENTS : MK_NEW_BUFFER);

	for (; off < r->size; off++) {
		const uint8_t *hit = memchr(r->data + off, first, r->size - off);

		if (!hit)
			break;
		off = (size_t)(hit - r->data);
		if (r->layout == LAYOUT_EXTENTS ? extents_plausible(r, off) : newbuffer_plausible(r, off))
			return off;
	}
	return r->size;
}

/*
 * The buffer is damaged from @off on: skip to where the next buffer starts,
 * and describe the bytes skipped in @loss.
 */
static int damage(struct xray_reader *r, size_t off, struct xray_loss *loss, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int damage(struct xray_reader *r, size_t off, struct xray_loss *loss, const char *fmt, ...)
{
	size_t resume;
	va_list ap;

	switch (r->layout) {
	case LAYOUT_V1_FIXED:
		resume = r->in_buffer ? r->buf_end : r->size;
		break;
	case LAYOUT_EXTENTS:
		if (r->in_buffer && r->buf_claim > off && r->buf_claim <= r->size &&
		    (r->buf_claim == r->size || extents_plausible(r, r->buf_claim)))
			resume = r->buf_claim;
		else
			resume = scan_buffer(r, off + 1);
		break;
	default:
		resume = scan_buffer(r, off + 1);
		break;
	}
	if (loss) {
		int n;

		loss->offset = off;
		loss->bytes = resume - off;
		va_start(ap, fmt);
		n = vsnprintf(loss->reason, sizeof(loss->reason), fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < sizeof(loss->reason) && r->in_buffer)
			snprintf(loss->reason + n, sizeof(loss->reason) - (size_t)n,
				 " (buffer at 0x%zx)", r->buf_start);
	}
	r->pos = resume;
	r->in_buffer = false;
	return 2;
}

/*
 * Can the BufferExtents record at @off start a buffer? compiler-rt writes no
 * empty buffers, and a NewBuffer record first in the others; a buffer the
 * end of the trace cuts after its extents is still one.
 */
static bool extents_start(const struct xray_reader *r, size_t off)
{
	return r->size - off <= META_SIZE || !rd64(r, r->data + off + 1) ||
	       r->data[off + META_SIZE] == meta_byte(r, MK_NEW_BUFFER);
}

/* Start the buffer at r->pos: 1 with its first record (extents), 0 when it has none, 2 on a loss. */
static int start_buffer(struct xray_reader *r, struct xray_record *rec, struct xray_loss *loss)
{
	size_t off = r->pos, avail = r->size - off;
	const uint8_t *p = r->data + off;

	reset_state(r);
	r->buf_start = off;
	r->buf_closed = false;
	switch (r->layout) {
	case LAYOUT_V1_FIXED:
		r->buf_claim = r->hdr.buffer_size > UINT64_MAX - off ? UINT64_MAX :
			       off + r->hdr.buffer_size;
		r->buf_end = r->buf_claim < r->size ? (size_t)r->buf_claim : r->size;
		r->in_buffer = true;
		if (avail < META_SIZE || p[0] != meta_byte(r, MK_NEW_BUFFER))
			return damage(r, off, loss, "%s", avail < META_SIZE ?
				      "buffer cut before its NewBuffer record" :
				      "buffer does not start with a NewBuffer record");
		return 0;
	case LAYOUT_V1_SEQ:
		r->buf_claim = r->size;
		r->buf_end = r->size;
		if (avail < META_SIZE || p[0] != meta_byte(r, MK_NEW_BUFFER))
			return damage(r, off, loss, "%s", avail < META_SIZE ?
				      "trailing bytes too short for a NewBuffer record" :
				      "no NewBuffer record where a buffer should start");
		r->in_buffer = true;
		return 0;
	default:
		break;
	}
	if (avail < META_SIZE || p[0] != meta_byte(r, MK_BUFFER_EXTENTS))
		return damage(r, off, loss, "%s", avail < META_SIZE ?
			      "trailing bytes too short for a BufferExtents record" :
			      "no BufferExtents record where a buffer should start");
	if (!extents_start(r, off))
		return damage(r, off, loss, "BufferExtents record not followed by a NewBuffer record");
	rec_start(r, rec, XRAY_REC_BUFFER_EXTENTS, off);
	rec->value = rd64(r, p + 1);
	r->buf_claim = rec->value > UINT64_MAX - off - META_SIZE ? UINT64_MAX :
		       off + META_SIZE + rec->value;
	r->buf_end = r->buf_claim < r->size ? (size_t)r->buf_claim : r->size;
	r->pos = off + META_SIZE;
	r->in_buffer = true;
	return 1;
}

/* A metadata record at r->pos, @avail bytes left in the buffer. */
static int meta_next(struct xray_reader *r, struct xray_record *rec, struct xray_loss *loss,
		     size_t avail)
{
	size_t off = r->pos;
	const uint8_t *p = r->data + off;
	uint8_t kind = meta_kind(r, p[0]);
	uint16_t version = r->hdr.version;
	int32_t event_size;

	if (kind >= MK_COUNT)
		return damage(r, off, loss, "unknown metadata record kind %u", kind);
	if (kind == MK_BUFFER_EXTENTS && r->layout == LAYOUT_EXTENTS &&
	    extents_start(r, off)) {
		/* the extents before overstated: a new buffer starts here */
		loss_fill(loss, off, 0, "BufferExtents record inside the buffer at 0x%zx, whose "
			  "extents claim %" PRIu64 " bytes: a new buffer starts here", r->buf_start,
			  r->buf_claim - r->buf_start - META_SIZE);
		r->in_buffer = false;
		return 2;
	}
	if (avail < META_SIZE)
		return damage(r, off, loss, "%s record cut: %zu of its 16 bytes in the buffer",
			      xray_rec_name((uint8_t)(XRAY_REC_META_BASE + kind)), avail);
	rec_start(r, rec, (uint8_t)(XRAY_REC_META_BASE + kind), off);
	switch (kind) {
	case MK_NEW_BUFFER:
		rec->value = rd32(r, p + 1);
		r->tid = (uint32_t)rec->value;
		rec->tid = r->tid;
		break;
	case MK_END_OF_BUFFER:
		if (r->layout == LAYOUT_EXTENTS)
			return damage(r, off, loss, "EndOfBuffer record in a version %u trace",
				      version);
		/* the rest of the buffer is padding */
		r->buf_closed = true;
		r->in_buffer = false;
		r->pos = r->layout == LAYOUT_V1_FIXED ? r->buf_end : off + META_SIZE;
		/*
		 * Padding is whatever the buffer held before, but never a new
		 * buffer's first records: those mean the header's buffer_size
		 * overstates, and the buffer there must be read, not skipped.
		 */
		if (r->layout == LAYOUT_V1_FIXED)
			r->overstated = buffer_in_padding(r, off + META_SIZE);
		if (r->overstated)
			r->pos = r->overstated;
		return 1;
	case MK_NEW_CPU:
		r->cpu = rd16(r, p + 1);
		r->tsc = rd64(r, p + 3);
		rec->value = r->tsc;
		rec->cpu = r->cpu;
		rec->tsc = r->tsc;
		break;
	case MK_TSC_WRAP:
		r->tsc = rd64(r, p + 1);
		rec->value = r->tsc;
		rec->tsc = r->tsc;
		break;
	case MK_WALLTIME:
		rec->value = rd64(r, p + 1);
		rec->value2 = rd32(r, p + 9);
		break;
	case MK_CUSTOM_EVENT:
	case MK_TYPED_EVENT:
		event_size = (int32_t)rd32(r, p + 1);
		if (event_size <= 0 || (size_t)event_size > avail - META_SIZE)
			return damage(r, off, loss, "%s of %" PRId32 " bytes: %zu bytes left in the buffer",
				      xray_rec_name(rec->kind), event_size, avail - META_SIZE);
		rec->event_size = event_size;
		rec->payload = p + META_SIZE;
		if (kind == MK_TYPED_EVENT || version >= 5) {
			/* signed here, unlike a function record's: llvm-xray adds it as such */
			rec->tsc_delta = rd32(r, p + 5);
			r->tsc += (uint64_t)(int64_t)(int32_t)rec->tsc_delta;
			rec->tsc = r->tsc;
			if (kind == MK_TYPED_EVENT)
				rec->event_type = rd16(r, p + 9);
		} else {
			/* the event's own time, which does not move the buffer's */
			rec->value = rd64(r, p + 5);
			rec->tsc = rec->value;
			if (version == 4)
				rec->event_cpu = rd16(r, p + 13);
		}
		r->pos = off + META_SIZE + (size_t)event_size;
		return 1;
	case MK_CALL_ARG:
		rec->value = rd64(r, p + 1);
		break;
	case MK_BUFFER_EXTENTS:
		if (r->layout == LAYOUT_EXTENTS)
			return damage(r, off, loss, "BufferExtents record inside a buffer, not "
				      "followed by a NewBuffer record");
		return damage(r, off, loss, "BufferExtents record in a version 1 trace");
	case MK_PID:
		rec->value = rd32(r, p + 1);
		r->pid = (uint32_t)rec->value;
		rec->pid = r->pid;
		break;
	}
	r->pos = off + META_SIZE;
	return 1;
}

static int fdr_next(struct xray_reader *r, struct xray_record *rec, struct xray_loss *loss)
{
	if (r->overstated) {
		loss_fill(loss, r->overstated, 0, "a buffer starts at 0x%zx, inside the %" PRIu64
			  "-byte buffer at 0x%zx the header's buffer_size describes: buffer_size "
			  "overstates, buffers are read where they start", r->overstated,
			  r->hdr.buffer_size, r->buf_start);
		r->overstated = 0;
		return 2;
	}
	for (;;) {
		size_t off = r->pos, avail;
		const uint8_t *p;

		if (!r->in_buffer) {
			int ret;

			if (off >= r->size)
				return 0;
			ret = start_buffer(r, rec, loss);
			if (ret)
				return ret;
			continue;
		}
		if (off >= r->buf_end) {
			r->in_buffer = false;
			if (r->buf_claim > r->size && !r->buf_closed) {
				loss_fill(loss, r->size, 0, "the trace ends %" PRIu64 " bytes into the "
					  "buffer at 0x%zx, which claims %" PRIu64 " bytes",
					  (uint64_t)r->size - r->buf_start, r->buf_start,
					  r->buf_claim - r->buf_start);
				r->pos = r->size;
				return 2;
			}
			/* version 1 buffers start at their boundary */
			if (r->layout == LAYOUT_V1_FIXED)
				r->pos = r->buf_end;
			continue;
		}
		avail = r->buf_end - off;
		p = r->data + off;
		if (!is_meta(r, p[0])) {
			uint32_t word;
			uint8_t kind;

			if (avail < FUNC_SIZE)
				return damage(r, off, loss, "function record cut: %zu of its 8 bytes "
					      "in the buffer", avail);
			word = rd32(r, p);
			kind = r->hdr.big_endian ? (word >> 28) & 7 : (word >> 1) & 7;
			if (kind > XRAY_REC_ENTER_ARGS)
				return damage(r, off, loss, "unknown function record type %u", kind);
			rec_start(r, rec, kind, off);
			rec->func_id = (int32_t)(r->hdr.big_endian ? word & 0x0fffffff : word >> 4);
			rec->tsc_delta = rd32(r, p + 4);
			r->tsc += rec->tsc_delta;
			rec->tsc = r->tsc;
			r->pos = off + FUNC_SIZE;
			return 1;
		}
		return meta_next(r, rec, loss, avail);
	}
}

int xray_reader__next(struct xray_reader *r, struct xray_record *rec, struct xray_loss *loss)
{
	if (r->layout == LAYOUT_BASIC)
		return basic_next(r, rec, loss);
	return fdr_next(r, rec, loss);
}

const char *xray_rec_name(uint8_t kind)
{
	static const char *const meta[MK_COUNT] = {
		[MK_NEW_BUFFER] = "NewBuffer",
		[MK_END_OF_BUFFER] = "EndOfBuffer",
		[MK_NEW_CPU] = "NewCPUId",
		[MK_TSC_WRAP] = "TSCWrap",
		[MK_WALLTIME] = "WallClockTime",
		[MK_CUSTOM_EVENT] = "CustomEvent",
		[MK_CALL_ARG] = "CallArg",
		[MK_BUFFER_EXTENTS] = "BufferExtents",
		[MK_TYPED_EVENT] = "TypedEvent",
		[MK_PID] = "PIDEntry",
	};

	if (kind <= XRAY_REC_ENTER_ARGS)
		return "Function";
	if (kind >= XRAY_REC_META_BASE && kind - XRAY_REC_META_BASE < MK_COUNT)
		return meta[kind - XRAY_REC_META_BASE];
	return "Unknown";
}
