/* SPDX-License-Identifier: BSD-2-Clause */
/* Sampled stacks as CBF: the bytes of sfu_cbf_encode_stack(), frame kinds kept, one cut for all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "record/stack_enc.h"

/* What the encoder wrote, decoded. */
static size_t decode(const uint8_t *cbf, size_t len, struct sfu_cbf_frame *out, size_t cap)
{
	struct sfu_cbf_dec dec;
	struct sfu_cbf_frame f;
	size_t n = 0;

	sfu_cbf_dec__init(&dec, cbf, len, 0, NULL);
	while (sfu_cbf_dec__next(&dec, &f) == 0) {
		assert_true(n < cap);
		out[n++] = f;
		if (f.kind == SFU_CBF_END || f.kind == SFU_CBF_TRUNCATED)
			break;
	}
	return n;
}

/* A stack of plain frames: byte for byte what sfu_cbf_encode_stack() writes, at every length and cut. */
static void test_same_as_library(void **state)
{
	struct stack_enc e = { 0 };
	struct sfu_frame frames[300];
	uint64_t addrs[300];
	uint8_t want[SFU_CBF_BOUND(300)];

	(void)state;
	for (size_t i = 0; i < 300; i++) {
		/* recursion (repeats) in the middle */
		addrs[i] = i > 100 && i < 200 ? 0x401234 : 0x400000 + i * 16;
		frames[i] = (struct sfu_frame){ addrs[i], i ? SFU_FRAME_RA : SFU_FRAME_PC, 0 };
	}
	for (size_t n = 1; n <= 300; n += 37) {
		for (size_t max = 0; max <= 200; max += 50) {
			struct stack_cut cut = { max };
			struct sfu_cbf_enc enc;
			const uint8_t *got;
			size_t len;

			assert_int_equal(sfu_cbf_enc__init(&enc, 64, want, sizeof(want)), 0);
			assert_int_equal(sfu_cbf_encode_stack(&enc, addrs, n, max, n % 2), 0);
			assert_int_equal(stack_enc__frames(&e, frames, n, &cut, n % 2, &got, &len), 0);
			assert_int_equal(len, sfu_cbf_enc__len(&enc));
			assert_memory_equal(got, want, len);
			assert_int_equal(stack_enc__addrs(&e, addrs, n, &cut, n % 2, &got, &len), 0);
			assert_memory_equal(got, want, len);
		}
	}
	stack_enc__release(&e);
}

/* Below a signal frame the interrupted pc is exact: a pc, not a return address, cut or not. */
static void test_kinds_kept(void **state)
{
	struct stack_enc e = { 0 };
	struct sfu_frame frames[40];
	struct sfu_cbf_frame got[64];
	struct stack_cut cut = { 20 };
	const uint8_t *cbf;
	size_t len, n;

	(void)state;
	for (size_t i = 0; i < 40; i++)
		frames[i] = (struct sfu_frame){ 0x1000 + i * 8,
						i == 0 || i == 3 || i == 35 ? SFU_FRAME_PC :
						SFU_FRAME_RA, 0 };
	assert_int_equal(stack_enc__frames(&e, frames, 40, &cut, false, &cbf, &len), 0);
	n = decode(cbf, len, got, 64);
	/* 10 innermost, an omit of 20, 10 outermost, the end */
	assert_int_equal(n, 22);
	assert_int_equal(got[0].kind, SFU_CBF_PC);
	assert_int_equal(got[1].kind, SFU_CBF_RA);
	assert_int_equal(got[3].kind, SFU_CBF_PC);
	assert_int_equal(got[3].value, 0x1000 + 3 * 8);
	assert_int_equal(got[10].kind, SFU_CBF_OMIT);
	assert_int_equal(got[10].value, 20);
	assert_int_equal(got[11].value, 0x1000 + 30 * 8);
	assert_int_equal(got[16].kind, SFU_CBF_PC);	/* frame 35 */
	assert_int_equal(got[16].value, 0x1000 + 35 * 8);
	assert_int_equal(got[21].kind, SFU_CBF_END);
	/* a cut of one frame keeps the innermost only */
	cut.max_frames = 1;
	assert_int_equal(stack_enc__frames(&e, frames, 40, &cut, true, &cbf, &len), 0);
	n = decode(cbf, len, got, 64);
	assert_int_equal(n, 3);
	assert_int_equal(got[1].kind, SFU_CBF_OMIT);
	assert_int_equal(got[1].value, 39);
	assert_int_equal(got[2].kind, SFU_CBF_TRUNCATED);
	stack_enc__release(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_library),
		cmocka_unit_test(test_kinds_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
