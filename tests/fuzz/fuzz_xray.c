// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: read the input as an XRay trace, every record and loss, and
 * check the reader's promises; rebuild its stacks as `sfprof import xray`
 * does and check the windows given.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/xray.h"
#include "import/xray_stacks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_xray: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* The bytes a record spans at least: its own, and its payload. */
static uint64_t record_size(const struct xray_header *h, const struct xray_record *rec)
{
	if (h->type == XRAY_TRACE_BASIC)
		return 32;
	if (rec->kind <= XRAY_REC_ENTER_ARGS)
		return 8;
	return 16 + (rec->payload ? (uint64_t)rec->event_size : 0);
}

static void check_header(const struct xray_header *h)
{
	if (h->type == XRAY_TRACE_FDR ? h->version < 1 || h->version > 5 :
	    h->type != XRAY_TRACE_BASIC || h->version < 1 || h->version > 3)
		broken("accepted type %u version %u", h->type, h->version);
	if (h->type == XRAY_TRACE_BASIC && h->buffer_size)
		broken("basic mode with a buffer size");
}

static void check_record(const uint8_t *data, size_t size, const struct xray_header *h,
			 const struct xray_record *rec)
{
	uint64_t need = record_size(h, rec);

	if (rec->kind > XRAY_REC_PID ||
	    (rec->kind > XRAY_REC_ENTER_ARGS && rec->kind < XRAY_REC_META_BASE))
		broken("record kind %u", rec->kind);
	if (h->type == XRAY_TRACE_BASIC && rec->kind > XRAY_REC_ENTER_ARGS &&
	    rec->kind != XRAY_REC_CALL_ARG)
		broken("basic-mode record of kind %u", rec->kind);
	if (rec->offset < 32 || rec->offset > size || need > size - rec->offset)
		broken("record %u at 0x%llx of %llu bytes, trace of %zu bytes", rec->kind,
		       (unsigned long long)rec->offset, (unsigned long long)need, size);
	if (h->type == XRAY_TRACE_FDR && rec->kind <= XRAY_REC_ENTER_ARGS &&
	    (rec->func_id < 0 || rec->func_id > 0x0fffffff))
		broken("function id %d wider than 28 bits", rec->func_id);
	if (rec->kind == XRAY_REC_CUSTOM_EVENT || rec->kind == XRAY_REC_TYPED_EVENT) {
		if (!rec->payload || rec->event_size <= 0)
			broken("event at 0x%llx without a payload (%d bytes)",
			       (unsigned long long)rec->offset, rec->event_size);
		if (rec->payload != data + rec->offset + 16)
			broken("event payload not right after its record");
	} else if (rec->payload || rec->event_size) {
		broken("record %u with a payload", rec->kind);
	}
	if (rec->payload) {
		/* in the trace, wholly: read it all, for the sanitizers */
		volatile uint8_t sum = 0;

		if (rec->payload < data || (size_t)(rec->payload - data) > size ||
		    (size_t)rec->event_size > size - (size_t)(rec->payload - data))
			broken("payload outside the trace");
		for (int32_t i = 0; i < rec->event_size; i++)
			sum ^= rec->payload[i];
		(void)sum;
	}
}

/* What the windows given so far add up to. */
struct windows {
	struct xray_stacks *s;
	uint64_t ticks, cells;
};

static int check_window(void *ctx, const struct xray_cell *cells, size_t n)
{
	struct windows *w = ctx;

	if (!n)
		broken("an empty window");
	for (size_t i = 0; i < n; i++) {
		const struct xray_cell *c = &cells[i];

		if (c->thread != cells[0].thread || c->window != cells[0].window)
			broken("a window of two threads or windows");
		if (c->thread >= xray_stacks__nthreads(w->s) || !c->node ||
		    c->node >= xray_stacks__nnodes(w->s))
			broken("cell of thread %u node %u", c->thread, c->node);
		if (!c->ticks)
			broken("a cell without time");
		w->ticks += c->ticks;
	}
	w->cells += n;
	return 0;
}

/* Read the whole trace; @return the number of results, and a digest of them in @digest. */
static size_t read_all(const uint8_t *data, size_t size, uint64_t *digest)
{
	char reason[160];
	struct xray_reader *r = xray_reader__new(data, size, reason);
	const struct xray_header *h;
	struct xray_record rec;
	struct xray_loss loss;
	uint64_t floor = 32, last_rec = 0, d = 0;
	bool any_rec = false;
	size_t n = 0;
	int ret, err;
	/* windows of 2^40 ticks: damaged timestamps open few, so that an input stays quick */
	struct windows win = { xray_stacks__new(1ull << 40, check_window, &win), 0, 0 };

	if (!r) {
		if (errno != EBADMSG && errno != ENOTSUP && errno != ENOMEM)
			broken("xray_reader__new: errno %d", errno);
		xray_stacks__free(win.s);
		if (!reason[0])
			broken("xray_reader__new failed without a reason");
		if (size >= 32 && errno == EBADMSG && !strstr(reason, "not an XRay trace"))
			broken("a whole header refused as '%s'", reason);
		*digest = 0;
		return 0;
	}
	h = xray_reader__header(r);
	check_header(h);
	while ((ret = xray_reader__next(r, &rec, &loss)) > 0) {
		/* each result moves past at least a byte, but a zero-byte loss */
		if (++n > 2 * size + 2)
			broken("%zu results from %zu bytes", n, size);
		if (ret == 2) {
			if (loss.offset < floor || loss.offset > size || loss.bytes > size - loss.offset)
				broken("loss at 0x%llx of %llu bytes: floor 0x%llx, size %zu",
				       (unsigned long long)loss.offset, (unsigned long long)loss.bytes,
				       (unsigned long long)floor, size);
			if (any_rec && loss.offset <= last_rec)
				broken("loss at 0x%llx not after the record at 0x%llx",
				       (unsigned long long)loss.offset, (unsigned long long)last_rec);
			if (!loss.reason[0] || !memchr(loss.reason, '\0', sizeof(loss.reason)))
				broken("loss without a reason");
			floor = loss.offset + loss.bytes;
			d = d * 31 + loss.offset * 7 + loss.bytes;
			if (win.s)
				xray_stacks__break(win.s);
			continue;
		}
		if (ret != 1)
			broken("next returned %d", ret);
		check_record(data, size, h, &rec);
		if (rec.offset < floor || (any_rec && rec.offset <= last_rec))
			broken("record at 0x%llx before 0x%llx", (unsigned long long)rec.offset,
			       (unsigned long long)(any_rec && last_rec >= floor ? last_rec : floor));
		any_rec = true;
		last_rec = rec.offset;
		d = d * 31 + rec.offset + rec.kind + rec.tsc + rec.tid;
		if (win.s && (err = xray_stacks__add(win.s, &rec))) {
			if (err != -ENOMEM && err != -E2BIG)
				broken("xray_stacks__add: %d", err);
			xray_stacks__free(win.s);
			win.s = NULL;
		}
	}
	if (ret != 0)
		broken("next returned %d", ret);
	if (xray_reader__next(r, &rec, &loss) != 0)
		broken("no longer at the end");
	xray_reader__free(r);
	if (win.s) {
		err = xray_stacks__finish(win.s);
		if (err && err != -ENOMEM && err != -E2BIG)
			broken("xray_stacks__finish: %d", err);
		/* all the time counted was given, in cells of one window each */
		if (!err && (win.ticks != xray_stacks__stats(win.s)->self_ticks ||
			     win.cells != xray_stacks__ncells(win.s)))
			broken("windows of %llu ticks in %llu cells; %llu ticks counted",
			       (unsigned long long)win.ticks, (unsigned long long)win.cells,
			       (unsigned long long)xray_stacks__stats(win.s)->self_ticks);
		xray_stacks__free(win.s);
	}
	*digest = d;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t d1, d2;
	size_t n1, n2;

	n1 = read_all(data, size, &d1);
	/* the reader keeps no state between traces */
	n2 = read_all(data, size, &d2);
	if (n1 != n2 || d1 != d2)
		broken("two readings differ");
	return 0;
}
