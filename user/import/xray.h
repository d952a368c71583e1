/* SPDX-License-Identifier: BSD-2-Clause */
/* XRay traces: the reader (FDR versions 1-5 and basic mode), the instrumentation map, stacks. */
#ifndef SFPROF_XRAY_H
#define SFPROF_XRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- the trace reader (xray_read.c) --- */

enum xray_trace_type {
	XRAY_TRACE_BASIC = 0,	/* "naive" mode: 32-byte records (type 0 in the header) */
	XRAY_TRACE_FDR = 1,	/* Flight Data Recorder (type 1) */
};

struct xray_header {
	uint16_t version;
	uint16_t type;		/* enum xray_trace_type */
	bool constant_tsc;
	bool nonstop_tsc;
	bool big_endian;	/* byte order of the trace, told from the header */
	uint64_t cycle_freq;	/* ticks per second */
	uint64_t buffer_size;	/* FDR version 1: bytes per thread buffer; 0 when unused */
};

/*
 * What a record is. Function records first; metadata records keep the
 * numbers of their kind in the trace plus XRAY_REC_META_BASE.
 */
enum xray_rec_kind {
	XRAY_REC_ENTER = 0,		/* function entry */
	XRAY_REC_EXIT = 1,		/* function exit */
	XRAY_REC_TAIL_EXIT = 2,		/* exit through a tail call */
	XRAY_REC_ENTER_ARGS = 3,	/* entry, call arguments follow */

	XRAY_REC_META_BASE = 16,
	XRAY_REC_NEW_BUFFER = XRAY_REC_META_BASE + 0,	/* tid */
	XRAY_REC_END_OF_BUFFER = XRAY_REC_META_BASE + 1,
	XRAY_REC_NEW_CPU = XRAY_REC_META_BASE + 2,	/* cpu, absolute tsc */
	XRAY_REC_TSC_WRAP = XRAY_REC_META_BASE + 3,	/* absolute tsc */
	XRAY_REC_WALLTIME = XRAY_REC_META_BASE + 4,	/* seconds, microseconds */
	XRAY_REC_CUSTOM_EVENT = XRAY_REC_META_BASE + 5,	/* size, tsc (or delta), cpu; payload */
	XRAY_REC_CALL_ARG = XRAY_REC_META_BASE + 6,	/* arg */
	XRAY_REC_BUFFER_EXTENTS = XRAY_REC_META_BASE + 7,	/* size (v2+) */
	XRAY_REC_TYPED_EVENT = XRAY_REC_META_BASE + 8,	/* size, delta, event type; payload */
	XRAY_REC_PID = XRAY_REC_META_BASE + 9,		/* pid (v3+) */
};

/*
 * One record, decoded. The raw fields say what the trace holds; the state
 * fields are what the reader derived from the records before it in the same
 * thread buffer (FDR) or in the record itself (basic mode).
 */
struct xray_record {
	uint8_t kind;		/* enum xray_rec_kind */
	uint64_t offset;	/* file offset of the record */

	/* raw */
	int32_t func_id;	/* function records */
	uint32_t tsc_delta;	/* function records, v5 custom and typed events */
	uint64_t value;		/* tsc (NEW_CPU, TSC_WRAP, v1-4 CUSTOM_EVENT), seconds (WALLTIME),
				   arg (CALL_ARG), size (BUFFER_EXTENTS), pid, tid (NEW_BUFFER) */
	uint64_t value2;	/* microseconds (WALLTIME) */
	int32_t event_size;	/* CUSTOM_EVENT, TYPED_EVENT: payload bytes that follow */
	uint16_t event_type;	/* TYPED_EVENT */
	uint16_t event_cpu;	/* v4 CUSTOM_EVENT */
	const uint8_t *payload;	/* CUSTOM_EVENT, TYPED_EVENT: event_size bytes, in the trace */

	/* state */
	uint64_t tsc;		/* absolute time of this record, in ticks */
	uint32_t tid;
	uint32_t pid;		/* 0 until a PID record (v3+), or in basic mode */
	uint16_t cpu;
};

/* A part of the trace that could not be read: reported, then skipped. */
struct xray_loss {
	uint64_t offset;	/* where the damage starts */
	uint64_t bytes;		/* bytes skipped */
	char reason[160];
};

struct xray_reader;

/**
 * xray_reader__new() - start reading a whole trace held in memory.
 * @data, @size: the trace (kept, not copied: the caller maps the file).
 * @reason: on failure, why the header is unusable (at least 160 bytes).
 *
 * @return the reader, or NULL with errno set: EBADMSG (not an XRay trace or
 * a damaged header), ENOTSUP (a version or type it does not know), ENOMEM.
 */
struct xray_reader *xray_reader__new(const void *data, size_t size, char *reason);

/** @return the trace's header. */
const struct xray_header *xray_reader__header(const struct xray_reader *r);

/**
 * xray_reader__next() - the next record in file order.
 *
 * A damaged or cut buffer is skipped: the reader goes on with the next
 * buffer it can find and reports the skipped bytes through @loss (when not
 * NULL), returning 2 once for each loss before the next record.
 *
 * @return 1 with @rec filled, 2 with @loss filled, 0 at the end, or a
 * negative errno (-ENOMEM).
 */
int xray_reader__next(struct xray_reader *r, struct xray_record *rec, struct xray_loss *loss);

/** xray_reader__free() - accepts NULL. */
void xray_reader__free(struct xray_reader *r);

/** @return a name for a record kind as llvm-xray fdr-dump prints it ("Function", "NewBuffer"). */
const char *xray_rec_name(uint8_t kind);

/* --- the instrumentation map (xray_instrmap.c) --- */

struct xray_instrmap;

/**
 * xray_instrmap__open() - read an instrumented binary's `xray_instr_map`.
 * @path: the ELF file.
 * @reason: on failure, why (at least 160 bytes).
 *
 * Function ids are numbered from 1 in sled order, a new id each time the
 * sled's function address changes, as compiler-rt does; sled versions 0-1
 * hold absolute addresses, 2 and later PC-relative ones.
 *
 * @return the map, or NULL with errno set (ENOENT: no such section,
 * EBADMSG: malformed, ENOMEM).
 */
struct xray_instrmap *xray_instrmap__open(const char *path, char *reason);

/**
 * xray_instrmap__func() - the address of function @id, in the ELF file's
 * own address space. @return 0, or -ENOENT for an id the map does not have.
 */
int xray_instrmap__func(const struct xray_instrmap *m, int32_t id, uint64_t *addr);

/* Sled kinds (compiler-rt's XRayEntryType), as bits of xray_instrmap__kinds(). */
enum {
	XRAY_SLED_ENTRY = 0,
	XRAY_SLED_EXIT = 1,
	XRAY_SLED_TAIL = 2,
	XRAY_SLED_LOG_ARGS_ENTRY = 3,
	XRAY_SLED_CUSTOM_EVENT = 4,
	XRAY_SLED_TYPED_EVENT = 5,
};

/**
 * xray_instrmap__kinds() - the kinds of function @id's sleds, each as a bit
 * 1 << XRAY_SLED_*. @return 0, or -ENOENT for an id the map does not have.
 */
int xray_instrmap__kinds(const struct xray_instrmap *m, int32_t id, uint8_t *kinds);

/** @return the number of functions. */
size_t xray_instrmap__count(const struct xray_instrmap *m);

/** xray_instrmap__free() - accepts NULL. */
void xray_instrmap__free(struct xray_instrmap *m);

#endif
