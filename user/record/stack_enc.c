/* SPDX-License-Identifier: BSD-2-Clause */
/* Sampled stacks as CBF: one cut policy for user and kernel stacks, frame kinds kept. */
#include <errno.h>
#include <stdlib.h>

#include "stack_enc.h"
#include "util/vec.h"

/* @kind_of(i) gives frame i's kind, @addr_of(i) its address: the cut applied, then encoded. */
static int encode(struct stack_enc *e, size_t n, const struct stack_cut *cut, bool truncated,
		  const struct sfu_frame *frames, const uint64_t *addrs, const uint8_t **out,
		  size_t *len)
{
	size_t top = n, bottom = 0, k = 0;
	struct sfu_cbf_enc enc;
	int err;

	if (cut->max_frames && n > cut->max_frames) {
		bottom = cut->max_frames / 2 < 16 ? cut->max_frames / 2 : 16;
		top = cut->max_frames - bottom;
	}
	if (VEC_RESERVE(e->frames, e->cap, top + bottom + 2, 64) ||
	    VEC_RESERVE(e->buf, e->buf_cap, SFU_CBF_BOUND(top + bottom + 1), 1024))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (i == top && top < n - bottom) {
			e->frames[k++] = (struct sfu_cbf_frame){ SFU_CBF_OMIT, n - top - bottom };
			i = n - bottom;
			if (i == n)
				break;
		}
		if (frames)
			e->frames[k++] = (struct sfu_cbf_frame){
				frames[i].kind == SFU_FRAME_PC || !i ? SFU_CBF_PC : SFU_CBF_RA,
				frames[i].addr };
		else
			e->frames[k++] = (struct sfu_cbf_frame){ i ? SFU_CBF_RA : SFU_CBF_PC, addrs[i] };
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
	return encode(e, n, cut, truncated, frames, NULL, out, len);
}

int stack_enc__addrs(struct stack_enc *e, const uint64_t *addrs, size_t n,
		     const struct stack_cut *cut, bool truncated, const uint8_t **out, size_t *len)
{
	return encode(e, n, cut, truncated, NULL, addrs, out, len);
}

void stack_enc__release(struct stack_enc *e)
{
	free(e->frames);
	free(e->buf);
	*e = (struct stack_enc){ 0 };
}
