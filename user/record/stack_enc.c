/* SPDX-License-Identifier: BSD-2-Clause */
/* Sampled stacks as CBF by sfu_cbf_encode_stack(), user and kernel alike, frame kinds kept. */
#include <errno.h>
#include <stdlib.h>

#include "stack_enc.h"
#include "common/vec.h"

/* Bytes that hold @n frames cut as @cut says, whichever path encodes them. */
static int reserve_buf(struct stack_enc *e, size_t n, const struct stack_cut *cut)
{
	size_t kept = cut->max_frames && n > cut->max_frames ? cut->max_frames : n;

	return VEC_RESERVE(e->buf, e->buf_cap, SFU_CBF_BOUND(kept + 1), 1024) ? -ENOMEM : 0;
}

/* The library's own encoding of a sampled stack: frame 0 a pc, the others return addresses. */
static int encode_addrs(struct stack_enc *e, const uint64_t *addrs, size_t n,
			const struct stack_cut *cut, bool truncated, const uint8_t **out,
			size_t *len)
{
	struct sfu_cbf_enc enc;
	int err;

	if ((err = reserve_buf(e, n, cut)) ||
	    (err = sfu_cbf_enc__init(&enc, 64, e->buf, e->buf_cap)) ||
	    (err = sfu_cbf_encode_stack(&enc, addrs, n, cut->max_frames, truncated)))
		return err;
	*out = e->buf;
	*len = sfu_cbf_enc__len(&enc);
	return 0;
}

/*
 * A stack with a frame below a signal frame, whose pc is exact: it must stay
 * a `pc`, which sfu_cbf_encode_stack() cannot say (its frames past the first
 * are return addresses, looked up at addr - 1, which can name the function
 * before). The same cut, made here, then sfu_cbf_encode_frames(); the tests
 * hold the two paths to the same bytes for the stacks both can encode.
 */
static int encode_kinds(struct stack_enc *e, const struct sfu_frame *frames, size_t n,
			const struct stack_cut *cut, bool truncated, const uint8_t **out,
			size_t *len)
{
	size_t top = n, bottom = 0, k = 0;
	struct sfu_cbf_enc enc;
	int err;

	if (cut->max_frames && n > cut->max_frames) {
		bottom = cut->max_frames / 2 < 16 ? cut->max_frames / 2 : 16;
		top = cut->max_frames - bottom;
	}
	if (VEC_RESERVE(e->frames, e->cap, top + bottom + 2, 64) || reserve_buf(e, n, cut))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		unsigned kind;

		if (i == top && top < n - bottom) {
			e->frames[k++] = (struct sfu_cbf_frame){ SFU_CBF_OMIT, n - top - bottom };
			i = n - bottom;
			if (i == n)
				break;
		}
		kind = frames[i].kind == SFU_FRAME_PC || !i ? SFU_CBF_PC : SFU_CBF_RA;
		e->frames[k++] = (struct sfu_cbf_frame){ kind, frames[i].addr };
	}
	e->frames[k++] = (struct sfu_cbf_frame){ truncated ? SFU_CBF_TRUNCATED : SFU_CBF_END, 0 };
	if ((err = sfu_cbf_enc__init(&enc, 64, e->buf, e->buf_cap)) ||
	    (err = sfu_cbf_encode_frames(&enc, e->frames, k)))
		return err;
	*out = e->buf;
	*len = sfu_cbf_enc__len(&enc);
	return 0;
}

int stack_enc__frames(struct stack_enc *e, const struct sfu_frame *frames, size_t n,
		      const struct stack_cut *cut, bool truncated, const uint8_t **out,
		      size_t *len)
{
	for (size_t i = 1; i < n; i++)
		if (frames[i].kind == SFU_FRAME_PC)
			return encode_kinds(e, frames, n, cut, truncated, out, len);
	if (VEC_RESERVE(e->addrs, e->addrs_cap, n ? n : 1, 64))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		e->addrs[i] = frames[i].addr;
	return encode_addrs(e, e->addrs, n, cut, truncated, out, len);
}

int stack_enc__addrs(struct stack_enc *e, const uint64_t *addrs, size_t n,
		     const struct stack_cut *cut, bool truncated, const uint8_t **out, size_t *len)
{
	return encode_addrs(e, addrs, n, cut, truncated, out, len);
}

void stack_enc__release(struct stack_enc *e)
{
	free(e->frames);
	free(e->addrs);
	free(e->buf);
	*e = (struct stack_enc){ 0 };
}
