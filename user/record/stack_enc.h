/* SPDX-License-Identifier: BSD-2-Clause */
/* A sampled stack as CBF bytes: frames with their kinds, long stacks cut by one policy. */
#ifndef SFPROF_STACK_ENC_H
#define SFPROF_STACK_ENC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sfunwind.h"
#include "sfunwind/cbf.h"

/*
 * How a stack too long to keep is cut: with max_frames (0: no limit), it
 * keeps its innermost max_frames - min(16, max_frames / 2) frames and its
 * outermost min(16, max_frames / 2), with an `omit` of the rest between
 * them; the leaf end says where the time went, the root end which thread it
 * was. sfu_cbf_encode_stack() makes the cut and writes the bytes, except for
 * a stack with a signal frame in it (see stack_enc__frames()).
 */
struct stack_cut {
	size_t max_frames;
};

struct stack_enc {
	uint64_t *addrs;		/* sfu_cbf_encode_stack()'s input, reused */
	size_t addrs_cap;
	struct sfu_cbf_frame *frames;	/* sfu_cbf_encode_frames()'s: stacks with a signal frame */
	size_t cap;
	uint8_t *buf;			/* the bytes of the last stack */
	size_t buf_cap;
};

/**
 * stack_enc__frames() - encode @n unwound frames, innermost first, each a
 * pc or a return address as its kind says (a frame below a signal frame is
 * a pc), ending in `trunc` when @truncated. The bytes are
 * sfu_cbf_encode_stack()'s; a stack with a pc past frame 0, which that cannot
 * write, gets the same cut by sfu_cbf_encode_frames().
 * @return 0 with the bytes in *@out, *@len (valid until the next call), or
 * a negative errno (-ENOMEM, -ERANGE).
 */
int stack_enc__frames(struct stack_enc *e, const struct sfu_frame *frames, size_t n,
		      const struct stack_cut *cut, bool truncated, const uint8_t **out,
		      size_t *len);

/**
 * stack_enc__addrs() - the same for bare addresses (a kernel stack): the
 * first is a pc, the others return addresses; sfu_cbf_encode_stack() itself.
 */
int stack_enc__addrs(struct stack_enc *e, const uint64_t *addrs, size_t n,
		     const struct stack_cut *cut, bool truncated, const uint8_t **out, size_t *len);

/** stack_enc__release() - free the buffers; the object can be used again. */
void stack_enc__release(struct stack_enc *e);

#endif
