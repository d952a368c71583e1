/* SPDX-License-Identifier: BSD-2-Clause */
/* Compact Backtrace Format (CBF) version 0: one stack per buffer, encoded and decoded. */
#ifndef SFUNWIND_CBF_H
#define SFUNWIND_CBF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sfunwind/diag.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The format is specified in CompactBacktraceFormat.md; where it leaves a
 * choice open, this codec does what Swift's reference implementation
 * (stdlib/public/RuntimeModule/CompactBacktrace.swift) does, so that for the
 * same frames the bytes are the same:
 *
 * - address bytes are big-endian and sign-extended from their top bit; the
 *   encoder writes the fewest bytes that give the value back, and writes an
 *   absolute address only when that is strictly shorter than the delta from
 *   the previous address (ties go relative). The previous address starts at
 *   0, so the first frame is usually relative to 0, although the
 *   specification asks for an absolute first address; the decoder accepts
 *   both;
 * - `omit` counts 1-31 fit in the instruction, larger ones (and 0) follow it
 *   as big-endian bytes; `rep` counts 1-8 fit in the instruction, larger ones
 *   follow it;
 * - `rep` repeats the previous result, which may be an `omit` (Swift keeps
 *   omitted frames as its "previous frame" too); a `rep` of N yields N more
 *   copies.
 */

/* What one decoded result (or one encoder input) is. */
enum sfu_cbf_kind {
	SFU_CBF_PC = 1,		/* a frame: the interrupted instruction (frame 0) */
	SFU_CBF_RA,		/* a frame: a return address */
	SFU_CBF_ASYNC,		/* a frame: an async resume point */
	SFU_CBF_OMIT,		/* `value` frames were left out here */
	SFU_CBF_END,		/* the stack is complete */
	SFU_CBF_TRUNCATED,	/* the stack ended early: a `trunc`, or malformed input */
};

struct sfu_cbf_frame {
	uint8_t kind;		/* enum sfu_cbf_kind */
	uint64_t value;		/* the address (PC, RA, ASYNC), the count (OMIT), else 0 */
};

/*
 * Largest count one `rep` may carry: the limit of Swift's decoder, whose
 * maxRepeatCount (1_048_576) counts the repeats after the first copy.
 */
#define SFU_CBF_MAX_REPEAT 0x100001ULL

/*
 * Bytes that always hold an encoding of @n frames, OMIT entries included,
 * by sfu_cbf_encode_frames() or sfu_cbf_encode_stack(): the info byte, at
 * most 9 bytes a frame plus one omit, and the end.
 */
#define SFU_CBF_BOUND(n) ((size_t)11 + (size_t)9 * (size_t)(n))

/** @return "pc", "ra", "async", "omit", "end", "truncated", or NULL for an unknown kind. */
SFU_API const char *sfu_cbf_kind_name(unsigned kind);

/*
 * Encoder. It writes into the caller's buffer and allocates nothing, so it
 * can live on the stack of a sampling loop. Fields are private.
 *
 * Each sfu_cbf_enc__*() call writes whole instructions or nothing: on
 * -ENOSPC the buffer and the encoder are as they were, and the caller may
 * copy the bytes written so far (sfu_cbf_enc__len()) to a larger buffer and
 * go on with sfu_cbf_enc__rebuffer(). SFU_CBF_BOUND() gives a size that is
 * always enough.
 */
struct sfu_cbf_enc {
	uint8_t *buf;
	size_t cap;
	size_t len;		/* bytes written so far: the encoding is buf[0, len) */
	uint64_t mask;		/* all ones in the word */
	uint64_t prev_addr;	/* what relative addresses are computed from */
	struct sfu_cbf_frame last;	/* the last frame or omit written, what `rep` repeats */
	uint8_t word_bytes;
	bool has_last;
	bool done;		/* `end` or `trunc` was written */
};

/**
 * sfu_cbf_enc__init() - start an encoding: writes the information byte.
 * @word_bits: 16, 32 or 64; addresses are truncated to this many bits.
 * @buf: where the bytes go, @cap bytes of room.
 *
 * @return 0, -EINVAL for another word size, -ENOSPC when @cap is 0.
 */
SFU_API int sfu_cbf_enc__init(struct sfu_cbf_enc *enc, unsigned word_bits, void *buf, size_t cap);

/**
 * sfu_cbf_enc__rebuffer() - continue in @buf, which holds a copy of the
 * bytes written so far (enc->len of them) and has @cap bytes of room.
 *
 * @return 0, or -EINVAL when @cap is smaller than what was written.
 */
SFU_API int sfu_cbf_enc__rebuffer(struct sfu_cbf_enc *enc, void *buf, size_t cap);

/** @return the number of bytes written so far. */
SFU_API size_t sfu_cbf_enc__len(const struct sfu_cbf_enc *enc);

/**
 * sfu_cbf_enc__frame() - write a `pc`, `ra` or `async` instruction.
 * @kind: SFU_CBF_PC, SFU_CBF_RA or SFU_CBF_ASYNC.
 * @addr: the address; bits above the word size are dropped.
 *
 * Absolute or relative, whichever is shorter (relative on a tie); the
 * fewest bytes that sign-extend back to the value.
 *
 * @return 0, -EINVAL for another kind or after the end, -ENOSPC.
 */
SFU_API int sfu_cbf_enc__frame(struct sfu_cbf_enc *enc, unsigned kind, uint64_t addr);

/**
 * sfu_cbf_enc__rep() - the previous frame (or omit) occurs @count more times.
 *
 * 1-8 are written in the instruction, larger counts in the fewest bytes
 * after it. Counts above SFU_CBF_MAX_REPEAT or the word's range are split
 * over several `rep`s, which decode to the same frames. A count of 0 writes
 * nothing.
 *
 * @return 0, -EINVAL when nothing was written yet that could be repeated or
 * after the end, -ENOSPC.
 */
SFU_API int sfu_cbf_enc__rep(struct sfu_cbf_enc *enc, uint64_t count);

/**
 * sfu_cbf_enc__omit() - @count frames were left out here.
 *
 * 1-31 are written in the instruction, 0 and larger counts in the fewest
 * bytes after it.
 *
 * @return 0, -ERANGE when @count does not fit in the word, -EINVAL after the
 * end, -ENOSPC.
 */
SFU_API int sfu_cbf_enc__omit(struct sfu_cbf_enc *enc, uint64_t count);

/**
 * sfu_cbf_enc__end() - finish with `end`, or with `trunc` when @truncated
 * (the stack goes on but was not captured). Nothing can follow.
 *
 * @return 0, -EINVAL after the end, -ENOSPC.
 */
SFU_API int sfu_cbf_enc__end(struct sfu_cbf_enc *enc, bool truncated);

/**
 * sfu_cbf_encode_frames() - write a sequence of results as Swift's encoder does.
 * @enc: initialised; the frames go after whatever was written before, and
 *       an entry equal to the last frame or omit written becomes a `rep`.
 * @frames: PC, RA, ASYNC and OMIT entries, optionally ending with END or
 *          TRUNCATED; with neither, `end` is written after the last.
 *
 * A run of entries equal to the one before it (same kind, same value once
 * truncated to the word) becomes one `rep`.
 *
 * @return 0; -EINVAL for an unknown kind or an entry after END or
 * TRUNCATED; -ERANGE for an omit count that does not fit in the word;
 * -ENOSPC, with a prefix of the encoding written.
 */
SFU_API int sfu_cbf_encode_frames(struct sfu_cbf_enc *enc, const struct sfu_cbf_frame *frames, size_t n);

/**
 * sfu_cbf_encode_stack() - write one sampled stack as sfprof stores it.
 * @enc: initialised, nothing written after the information byte.
 * @addrs: @n addresses, innermost first: @addrs[0] is the interrupted
 *         instruction (`pc`), the rest are return addresses (`ra`).
 * @max_frames: 0 for no limit. A longer stack keeps its innermost
 *         max_frames - min(16, max_frames / 2) frames and its outermost
 *         min(16, max_frames / 2), with an `omit` of the rest between them:
 *         the leaf end says where the time went, the root end which thread
 *         and entry point it belongs to.
 * @truncated: unwinding stopped before the outermost frame; the encoding
 *         ends with `trunc` instead of `end`.
 *
 * Runs of identical consecutive addresses (direct recursion) become `rep`.
 * SFU_CBF_BOUND(n) bytes are always enough. (sfprof's recorder writes a stack
 * with a signal frame in it, whose interrupted pc must stay a `pc`, by
 * sfu_cbf_encode_frames() with the same cut.)
 *
 * @return 0, -ERANGE when the omitted count does not fit a 16-bit word,
 * -EINVAL after the end, -ENOSPC.
 */
SFU_API int sfu_cbf_encode_stack(struct sfu_cbf_enc *enc, const uint64_t *addrs, size_t n,
			 size_t max_frames, bool truncated);

/* Decoder flags. */
/*
 * The input is known to hold exactly one stack: a clean end of input between
 * instructions reads as END (the specification lets a writer leave `end`
 * out when the length is known). Without it that reads as TRUNCATED, as in
 * Swift's decoder.
 */
#define SFU_CBF_DEC_END_OPTIONAL 0x1

/*
 * Streaming decoder: one result at a time, `rep` expanded by a counter,
 * never reading outside [data, data + len). Fields are private.
 */
struct sfu_cbf_dec {
	const uint8_t *data;
	size_t len;
	size_t pos;		/* next byte to read */
	uint64_t mask;
	uint64_t prev_addr;
	uint64_t repeat;	/* copies of `last` still to return */
	struct sfu_cbf_frame last;
	uint8_t word_bits;	/* 16, 32 or 64; 0 when the information byte is bad */
	uint8_t flags;
	bool has_last;
	bool done;		/* END or TRUNCATED was returned */
	int err;		/* 0, or -EBADMSG once malformed input was met */
	const char *why;	/* what was malformed */
	size_t why_pos;		/* the offset of the byte it was found at */
	struct sfu_diag *diag;
};

/**
 * sfu_cbf_dec__init() - start decoding @len bytes at @data (kept, not copied).
 * @flags: SFU_CBF_DEC_*.
 * @diag: optional; filled ("byte 5: rep with no previous frame") when the
 *        input turns out to be malformed.
 *
 * Reads the information byte; a bad one (no byte, reserved word size,
 * version other than 0) makes the first result TRUNCATED.
 */
SFU_API void sfu_cbf_dec__init(struct sfu_cbf_dec *dec, const void *data, size_t len, unsigned flags,
		       struct sfu_diag *diag);

/**
 * sfu_cbf_dec__next() - the next result: a PC, RA, ASYNC or OMIT, and
 * finally END or TRUNCATED.
 *
 * Malformed input (input ending inside an instruction or without `end`,
 * a reserved opcode, `rep` with nothing before it, a count with more bytes
 * than the word, a `rep` over SFU_CBF_MAX_REPEAT) gives TRUNCATED, with
 * sfu_cbf_dec__error() saying why.
 *
 * @return 0 with @out filled; -ENOENT once END or TRUNCATED was returned.
 */
SFU_API int sfu_cbf_dec__next(struct sfu_cbf_dec *dec, struct sfu_cbf_frame *out);

/** @return the word size from the information byte (16, 32, 64), or 0 when it is bad. */
SFU_API unsigned sfu_cbf_dec__word_bits(const struct sfu_cbf_dec *dec);

/** @return the bytes consumed so far; after END, where anything that follows starts. */
SFU_API size_t sfu_cbf_dec__offset(const struct sfu_cbf_dec *dec);

/**
 * sfu_cbf_dec__error() - why the input was malformed.
 * @pos: optional; receives the offset of the offending byte (or of the end
 *       of input when it was missing).
 *
 * @return a fixed string, or NULL when nothing malformed was met (a `trunc`
 * instruction is not malformed).
 */
SFU_API const char *sfu_cbf_dec__error(const struct sfu_cbf_dec *dec, size_t *pos);

/**
 * sfu_cbf_decode() - decode a whole stack into an array.
 * @frames: room for @cap results (at least 1); receives every result, the
 *          last always END or TRUNCATED.
 * @count: receives the number of results stored.
 * @word_bits: optional; receives the word size (0 when the information
 *          byte is bad).
 * @diag: optional; says why on -EBADMSG and -ENOSPC.
 *
 * @return 0 when the stack decoded whole (ending with `end` or `trunc`);
 * -EBADMSG for malformed input, with what came before it stored and then
 * TRUNCATED; -ENOSPC when more than @cap results would be needed, with the
 * first @cap - 1 stored and then TRUNCATED; -EINVAL when @cap is 0.
 */
SFU_API int sfu_cbf_decode(const void *data, size_t len, unsigned flags, struct sfu_cbf_frame *frames,
		   size_t cap, size_t *count, unsigned *word_bits, struct sfu_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
