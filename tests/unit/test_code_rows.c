/* SPDX-License-Identifier: BSD-2-Clause */
/* Rows for machine code read instruction by instruction: hand-assembled functions, refusals, an unwind. */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "testutil.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define CODE		0x7f0000001000ull	/* where the code is said to run, as JIT code does */
#define MAX_ROWS	8
#define MAX_PROBES	8

/* Rows as the decoder gives them back (AMD64: RA fixed at CFA - 8). */
#define L_SP(o)		{ .kind = SFU_LOC_REG_OFFSET, .reg = SFU_REG_SP, .offset = (o) }
#define L_FP(o)		{ .kind = SFU_LOC_REG_OFFSET, .reg = SFU_REG_FP, .offset = (o) }
#define L_AT(o)		{ .kind = SFU_LOC_AT_CFA, .offset = (o) }
#define L_SAME		{ .kind = SFU_LOC_SAME, .reg = SFU_REG_FP }
#define L_UNDEF		{ .kind = SFU_LOC_UNDEFINED }
#define L_LR		{ .kind = SFU_LOC_IN_REG, .reg = SFU_REG_RA }
#define ROW(s, f, c, p)	{ .start = (s), .flags = (f), .cfa = c, .ra = L_AT(-8), .fp = p }
#define A64ROW(s, f, c, r, p) { .start = (s), .flags = (f), .cfa = c, .ra = r, .fp = p }
#define UNREACHED(s)	{ .start = (s), .flags = SFU_ROW_FLEX | SFU_ROW_UNUSABLE, .cfa = L_SP(0), \
			  .ra = L_UNDEF, .fp = L_SAME }
#define FLEX		SFU_ROW_FLEX
#define MANGLED		SFU_ROW_MANGLED_RA

/* A call to code elsewhere: rel32 0x1000 past the next instruction. */
#define CALL_OUT	0xe8, 0x00, 0x10, 0x00, 0x00
/* AArch64, little-endian words: bl to 0x1000 past itself, and ret */
#define A64_BL_OUT	0x00, 0x04, 0x00, 0x94
#define A64_RET		0xc0, 0x03, 0x5f, 0xd6

/* A pc and the CFA rule its lookup must give (SP or FP + offset); unusable when reg is -1. */
struct probe {
	uint32_t off;
	int reg;
	int32_t cfa;
};

struct code_case {
	const char *name;
	const uint8_t *code;
	size_t len;
	enum sfu_arch arch;		/* 0: x86-64 */
	uint8_t pauth_key;		/* AArch64: the FDE's key, 1 for B */
	int want_errno;			/* 0: a table with rows and probes below */
	const char *why;		/* on failure, part of the note */
	struct sfu_row rows[MAX_ROWS];
	size_t num_rows;
	struct probe probes[MAX_PROBES];
	size_t num_probes;
};

/* `.code = BYTES(...)` sets .code and, as the member after it, .len */
#define BYTES(...)	(const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ })

/* CPython 3.12's _Py_trampoline_func_start (libpython3.12.so.1.0, checked with objdump -d). */
static const uint8_t py_trampoline[] = {
	0x48, 0x83, 0xec, 0x08,		/* 0: sub $0x8,%rsp */
	0xff, 0xd1,			/* 4: call *%rcx */
	0x48, 0x83, 0xc4, 0x08,		/* 6: add $0x8,%rsp */
	0xc3,				/* 10: ret */
};

static const struct code_case cases[] = {
	{
		.name = "CPython 3.12 perf trampoline",
		.code = py_trampoline, .len = sizeof(py_trampoline),
		.rows = { ROW(0, 0, L_SP(8), L_SAME), ROW(4, 0, L_SP(16), L_SAME),
			  ROW(10, 0, L_SP(8), L_SAME) },
		.num_rows = 3,
		/* each instruction, and the return address minus one (inside the call) */
		.probes = { { 0, SFU_REG_SP, 8 }, { 4, SFU_REG_SP, 16 }, { 6, SFU_REG_SP, 16 },
			    { 10, SFU_REG_SP, 8 }, { 5, SFU_REG_SP, 16 } },
		.num_probes = 5,
	},
	{
		.name = "frame pointer: push, mov, sub, call, leave, ret",
		.code = BYTES(0x55,			/* 0: push %rbp */
			      0x48, 0x89, 0xe5,		/* 1: mov %rsp,%rbp */
			      0x48, 0x83, 0xec, 0x10,	/* 4: sub $0x10,%rsp */
			      CALL_OUT,			/* 8: call elsewhere */
			      0xc9,			/* 13: leave */
			      0xc3),			/* 14: ret */
		/* from the SP while its height is known, frame pointer or not */
		.rows = { ROW(0, 0, L_SP(8), L_SAME), ROW(1, 0, L_SP(16), L_AT(-16)),
			  ROW(8, 0, L_SP(32), L_AT(-16)), ROW(14, 0, L_SP(8), L_SAME) },
		.num_rows = 4,
		.probes = { { 8, SFU_REG_SP, 32 }, { 12, SFU_REG_SP, 32 }, { 13, SFU_REG_SP, 32 } },
		.num_probes = 3,
	},
	{
		.name = "a branch whose paths agree",
		.code = BYTES(0x48, 0x83, 0xec, 0x08,	/* 0: sub $0x8,%rsp */
			      0x85, 0xff,		/* 4: test %edi,%edi */
			      0x74, 0x07,		/* 6: je 15 */
			      CALL_OUT,			/* 8: call elsewhere */
			      0xeb, 0x05,		/* 13: jmp 20 */
			      CALL_OUT,			/* 15: call elsewhere */
			      0x48, 0x83, 0xc4, 0x08,	/* 20: add $0x8,%rsp */
			      0xc3),			/* 24: ret */
		.rows = { ROW(0, 0, L_SP(8), L_SAME), ROW(4, 0, L_SP(16), L_SAME),
			  ROW(24, 0, L_SP(8), L_SAME) },
		.num_rows = 3,
		.probes = { { 12, SFU_REG_SP, 16 }, { 19, SFU_REG_SP, 16 }, { 24, SFU_REG_SP, 8 } },
		.num_probes = 3,
	},
	{
		.name = "a loop",
		.code = BYTES(0x31, 0xc0,		/* 0: xor %eax,%eax */
			      0xff, 0xc0,		/* 2: inc %eax */
			      0x39, 0xf8,		/* 4: cmp %edi,%eax */
			      0x75, 0xfa,		/* 6: jne 2 */
			      0xc3),			/* 8: ret */
		.rows = { ROW(0, 0, L_SP(8), L_SAME) },
		.num_rows = 1,
	},
	{
		.name = "and $-16,%rsp under a frame pointer",
		.code = BYTES(0x55,			/* 0: push %rbp */
			      0x48, 0x89, 0xe5,		/* 1: mov %rsp,%rbp */
			      0x48, 0x83, 0xe4, 0xf0,	/* 4: and $-16,%rsp */
			      CALL_OUT,			/* 8: call elsewhere */
			      0xc9,			/* 13: leave */
			      0xc3),			/* 14: ret */
		/* once the SP's height is unknown, from the FP */
		.rows = { ROW(0, 0, L_SP(8), L_SAME), ROW(1, 0, L_SP(16), L_AT(-16)),
			  ROW(8, 0, L_FP(16), L_AT(-16)), ROW(14, 0, L_SP(8), L_SAME) },
		.num_rows = 4,
		.probes = { { 4, SFU_REG_SP, 16 }, { 12, SFU_REG_FP, 16 }, { 13, SFU_REG_FP, 16 } },
		.num_probes = 3,
	},
	{
		.name = "callee-saved register and lea -8(%rbp),%rsp",
		.code = BYTES(0x55,			/* 0: push %rbp */
			      0x48, 0x89, 0xe5,		/* 1: mov %rsp,%rbp */
			      0x53,			/* 4: push %rbx */
			      0x48, 0x83, 0xe4, 0xf0,	/* 5: and $-16,%rsp */
			      CALL_OUT,			/* 9: call elsewhere */
			      0x48, 0x8d, 0x65, 0xf8,	/* 14: lea -0x8(%rbp),%rsp */
			      0x5b,			/* 18: pop %rbx */
			      0x5d,			/* 19: pop %rbp */
			      0xc3),			/* 20: ret */
		.rows = { ROW(0, 0, L_SP(8), L_SAME), ROW(1, 0, L_SP(16), L_AT(-16)),
			  ROW(5, 0, L_SP(24), L_AT(-16)), ROW(9, 0, L_FP(16), L_AT(-16)),
			  ROW(18, 0, L_SP(24), L_AT(-16)), ROW(19, 0, L_SP(16), L_AT(-16)),
			  ROW(20, 0, L_SP(8), L_SAME) },
		.num_rows = 7,
	},
	{
		/* as GCC does without frame pointers: %rbp is a callee-saved register like any other */
		.name = "paths meet, one with %rbp = SP + N, the other not",
		.code = BYTES(0x55,			/* 0: push %rbp */
			      0x48, 0x8d, 0x2c, 0x24,	/* 1: lea (%rsp),%rbp */
			      0x85, 0xff,		/* 5: test %edi,%edi */
			      0x74, 0x03,		/* 7: je 12 */
			      0x48, 0x89, 0xc5,		/* 9: mov %rax,%rbp */
			      0x5d,			/* 12: pop %rbp */
			      0xc3),			/* 13: ret */
		.rows = { ROW(0, 0, L_SP(8), L_SAME), ROW(1, 0, L_SP(16), L_AT(-16)),
			  ROW(13, 0, L_SP(8), L_SAME) },
		.num_rows = 3,
	},
	{
		.name = "paths meet with different SP heights under a frame pointer",
		.code = BYTES(0x55,			/* 0: push %rbp */
			      0x48, 0x89, 0xe5,		/* 1: mov %rsp,%rbp */
			      0x85, 0xff,		/* 4: test %edi,%edi */
			      0x74, 0x01,		/* 6: je 9 */
			      0x50,			/* 8: push %rax */
			      0xc9,			/* 9: leave, with CFA = SP + 16 or SP + 24 */
			      0xc3),			/* 10: ret */
		.rows = { ROW(0, 0, L_SP(8), L_SAME), ROW(1, 0, L_SP(16), L_AT(-16)),
			  ROW(9, 0, L_FP(16), L_AT(-16)), ROW(10, 0, L_SP(8), L_SAME) },
		.num_rows = 4,
	},
	{
		.name = "a tail call through jmp",
		.code = BYTES(0x48, 0x83, 0xec, 0x08,	/* 0: sub $0x8,%rsp */
			      CALL_OUT,			/* 4: call elsewhere */
			      0x48, 0x83, 0xc4, 0x08,	/* 9: add $0x8,%rsp */
			      0xe9, 0x00, 0x10, 0x00, 0x00),	/* 13: jmp elsewhere */
		.rows = { ROW(0, 0, L_SP(8), L_SAME), ROW(4, 0, L_SP(16), L_SAME),
			  ROW(13, 0, L_SP(8), L_SAME) },
		.num_rows = 3,
	},
	{
		.name = "an indirect tail call, after a push and a pop",
		.code = BYTES(0x55,			/* 0: push %rbp */
			      0x5d,			/* 1: pop %rbp */
			      0xff, 0xe0),		/* 2: jmp *%rax */
		.rows = { ROW(0, 0, L_SP(8), L_SAME), ROW(1, 0, L_SP(16), L_AT(-16)),
			  ROW(2, 0, L_SP(8), L_SAME) },
		.num_rows = 3,
	},
	{
		.name = "a branch out of the range",
		.code = BYTES(0x85, 0xff,		/* 0: test %edi,%edi */
			      0x0f, 0x84, 0x00, 0x10, 0x00, 0x00,	/* 2: je elsewhere */
			      0x6a, 0x01,		/* 8: push $1 */
			      0x58,			/* 10: pop %rax */
			      0xc3),			/* 11: ret */
		.rows = { ROW(0, 0, L_SP(8), L_SAME), ROW(10, 0, L_SP(16), L_SAME),
			  ROW(11, 0, L_SP(8), L_SAME) },
		.num_rows = 3,
	},
	{
		.name = "bytes no path reaches: padding, trailing bytes",
		.code = BYTES(0x85, 0xff,		/* 0: test %edi,%edi */
			      0x74, 0x03,		/* 2: je 7 */
			      0xc3,			/* 4: ret */
			      0xcc, 0x06,		/* 5: int3, and a byte that does not decode */
			      0xf3, 0x0f, 0x1e, 0xfa,	/* 7: endbr64 */
			      0xc3,			/* 11: ret */
			      0x0f, 0x1f, 0x00),	/* 12: nopl (%rax) */
		.rows = { ROW(0, FLEX, L_SP(8), L_SAME), UNREACHED(5), ROW(7, FLEX, L_SP(8), L_SAME),
			  UNREACHED(12) },
		.num_rows = 4,
		.probes = { { 5, -1, 0 }, { 6, -1, 0 }, { 8, SFU_REG_SP, 8 }, { 14, -1, 0 } },
		.num_probes = 4,
	},
	{
		/* glibc's fortify wrappers fall into the function after them */
		.name = "a fall through past the end, as a jump elsewhere",
		.code = BYTES(0x48, 0x39, 0xd1,		/* 0: cmp %rdx,%rcx */
			      0x0f, 0x82, 0x00, 0x10, 0x00, 0x00),	/* 3: jb elsewhere */
		.rows = { ROW(0, 0, L_SP(8), L_SAME) },
		.num_rows = 1,
	},
	{
		.name = "a call that does not return, at the end",
		.code = BYTES(0x50,			/* 0: push %rax */
			      CALL_OUT),		/* 1: call elsewhere */
		.rows = { ROW(0, 0, L_SP(8), L_SAME), ROW(1, 0, L_SP(16), L_SAME) },
		.num_rows = 2,
	},

	/* AArch64 */
	{
		/* Python/asm_trampoline.S of CPython 3.12, assembled */
		.name = "AArch64: CPython 3.12 perf trampoline",
		.arch = SFU_ARCH_AARCH64,
		.code = BYTES(0xfd, 0x7b, 0xbf, 0xa9,	/* 0: stp x29, x30, [sp, #-16]! */
			      0xfd, 0x03, 0x00, 0x91,	/* 4: mov x29, sp */
			      0x60, 0x00, 0x3f, 0xd6,	/* 8: blr x3 */
			      0xfd, 0x7b, 0xc1, 0xa8,	/* 12: ldp x29, x30, [sp], #16 */
			      A64_RET),			/* 16: ret */
		.rows = { A64ROW(0, 0, L_SP(0), L_LR, L_SAME),
			  A64ROW(4, 0, L_SP(16), L_AT(-8), L_AT(-16)),
			  A64ROW(16, 0, L_SP(0), L_LR, L_SAME) },
		.num_rows = 3,
		.probes = { { 11, SFU_REG_SP, 16 }, { 12, SFU_REG_SP, 16 }, { 16, SFU_REG_SP, 0 } },
		.num_probes = 3,
	},
	{
		.name = "AArch64: return address signed with key A",
		.arch = SFU_ARCH_AARCH64,
		.code = BYTES(0x3f, 0x23, 0x03, 0xd5,	/* 0: paciasp */
			      0xfd, 0x7b, 0xbf, 0xa9,	/* 4: stp x29, x30, [sp, #-16]! */
			      0xfd, 0x03, 0x00, 0x91,	/* 8: mov x29, sp */
			      A64_BL_OUT,		/* 12: bl elsewhere */
			      0xfd, 0x7b, 0xc1, 0xa8,	/* 16: ldp x29, x30, [sp], #16 */
			      0xbf, 0x23, 0x03, 0xd5,	/* 20: autiasp */
			      A64_RET),			/* 24: ret */
		.rows = { A64ROW(0, 0, L_SP(0), L_LR, L_SAME),
			  A64ROW(4, MANGLED, L_SP(0), L_LR, L_SAME),
			  A64ROW(8, MANGLED, L_SP(16), L_AT(-8), L_AT(-16)),
			  A64ROW(20, MANGLED, L_SP(0), L_LR, L_SAME),
			  A64ROW(24, 0, L_SP(0), L_LR, L_SAME) },
		.num_rows = 5,
	},
	{
		.name = "AArch64: return address signed with key B",
		.arch = SFU_ARCH_AARCH64, .pauth_key = 1,
		.code = BYTES(0x7f, 0x23, 0x03, 0xd5,	/* 0: pacibsp */
			      0xff, 0x23, 0x03, 0xd5,	/* 4: autibsp */
			      A64_RET),			/* 8: ret */
		.rows = { A64ROW(0, 0, L_SP(0), L_LR, L_SAME),
			  A64ROW(4, MANGLED, L_SP(0), L_LR, L_SAME),
			  A64ROW(8, 0, L_SP(0), L_LR, L_SAME) },
		.num_rows = 3,
	},
	{
		.name = "AArch64: a frame record at the bottom of the frame",
		.arch = SFU_ARCH_AARCH64,
		.code = BYTES(0xff, 0x83, 0x00, 0xd1,	/* 0: sub sp, sp, #0x20 */
			      0xfd, 0x7b, 0x01, 0xa9,	/* 4: stp x29, x30, [sp, #16] */
			      0xfd, 0x43, 0x00, 0x91,	/* 8: add x29, sp, #0x10 */
			      A64_BL_OUT,		/* 12: bl elsewhere */
			      0xfd, 0x7b, 0x41, 0xa9,	/* 16: ldp x29, x30, [sp, #16] */
			      0xff, 0x83, 0x00, 0x91,	/* 20: add sp, sp, #0x20 */
			      A64_RET),			/* 24: ret */
		.rows = { A64ROW(0, 0, L_SP(0), L_LR, L_SAME),
			  A64ROW(4, 0, L_SP(32), L_LR, L_SAME),
			  A64ROW(8, 0, L_SP(32), L_AT(-8), L_AT(-16)),
			  A64ROW(20, 0, L_SP(32), L_LR, L_SAME),
			  A64ROW(24, 0, L_SP(0), L_LR, L_SAME) },
		.num_rows = 5,
		.probes = { { 15, SFU_REG_SP, 32 } },
		.num_probes = 1,
	},
	{
		.name = "AArch64: an SP change not modelled, under a frame pointer",
		.arch = SFU_ARCH_AARCH64,
		.code = BYTES(0xfd, 0x7b, 0xbf, 0xa9,	/* 0: stp x29, x30, [sp, #-16]! */
			      0xfd, 0x03, 0x00, 0x91,	/* 4: mov x29, sp */
			      0xff, 0x63, 0x20, 0xcb,	/* 8: sub sp, sp, x0 */
			      A64_BL_OUT,		/* 12: bl elsewhere */
			      0xbf, 0x03, 0x00, 0x91,	/* 16: mov sp, x29 */
			      0xfd, 0x7b, 0xc1, 0xa8,	/* 20: ldp x29, x30, [sp], #16 */
			      A64_RET),			/* 24: ret */
		.rows = { A64ROW(0, 0, L_SP(0), L_LR, L_SAME),
			  A64ROW(4, 0, L_SP(16), L_AT(-8), L_AT(-16)),
			  A64ROW(12, 0, L_FP(16), L_AT(-8), L_AT(-16)),
			  A64ROW(20, 0, L_SP(16), L_AT(-8), L_AT(-16)),
			  A64ROW(24, 0, L_SP(0), L_LR, L_SAME) },
		.num_rows = 5,
		.probes = { { 15, SFU_REG_FP, 16 } },
		.num_probes = 1,
	},
	{
		.name = "AArch64: FP saved, the return address still in x30 (flexible rows)",
		.arch = SFU_ARCH_AARCH64,
		.code = BYTES(0xfd, 0x0f, 0x1f, 0xf8,	/* 0: str x29, [sp, #-16]! */
			      0xfd, 0x03, 0x00, 0x91,	/* 4: mov x29, sp */
			      0xfd, 0x07, 0x41, 0xf8,	/* 8: ldr x29, [sp], #16 */
			      A64_RET),			/* 12: ret */
		.rows = { A64ROW(0, FLEX, L_SP(0), L_LR, L_SAME),
			  A64ROW(4, FLEX, L_SP(16), L_LR, L_AT(-16)),
			  A64ROW(12, FLEX, L_SP(0), L_LR, L_SAME) },
		.num_rows = 3,
	},
	{
		.name = "AArch64: a leaf, and cmp sp (capstone 4 says it writes sp)",
		.arch = SFU_ARCH_AARCH64,
		.code = BYTES(0x00, 0x04, 0x00, 0x91,	/* 0: add x0, x0, #1 */
			      0xff, 0x63, 0x20, 0xeb,	/* 4: cmp sp, x0 */
			      0x40, 0x00, 0x00, 0xb4,	/* 8: cbz x0, 16 */
			      A64_RET,			/* 12: ret */
			      0x00, 0x04, 0x00, 0x14),	/* 16: b elsewhere */
		.rows = { A64ROW(0, 0, L_SP(0), L_LR, L_SAME) },
		.num_rows = 1,
	},

	/* refusals */
	{
		.name = "AArch64: a call with the return address in x30",
		.arch = SFU_ARCH_AARCH64,
		.code = BYTES(A64_BL_OUT,		/* 0: bl elsewhere */
			      A64_RET),			/* 4: ret */
		.want_errno = ENOENT, .why = "still in x30",
	},
	{
		.name = "AArch64: x30 overwritten",
		.arch = SFU_ARCH_AARCH64,
		.code = BYTES(0xfe, 0x03, 0x00, 0xaa,	/* 0: mov x30, x0 */
			      A64_RET),			/* 4: ret */
		.want_errno = ENOENT, .why = "return address in the link register",
	},
	{
		.name = "AArch64: a misaligned SP",
		.arch = SFU_ARCH_AARCH64,
		.code = BYTES(0xff, 0x23, 0x00, 0xd1,	/* 0: sub sp, sp, #0x8 */
			      A64_RET),
		.want_errno = ENOENT, .why = "16-byte aligned",
	},
	{
		/* one byte above the CFA: the entry's height is 0, so not a height of 0 either */
		.name = "AArch64: the SP above the CFA",
		.arch = SFU_ARCH_AARCH64,
		.code = BYTES(0xe0, 0x1f, 0x40, 0xf8,	/* 0: ldr x0, [sp, #1]! */
			      A64_RET),
		.want_errno = ENOENT, .why = "leaves the frame",
	},
	{
		.name = "AArch64: a return with the stack not restored",
		.arch = SFU_ARCH_AARCH64,
		.code = BYTES(0xff, 0x43, 0x00, 0xd1,	/* 0: sub sp, sp, #0x10 */
			      A64_RET),			/* 4: ret */
		.want_errno = ENOENT, .why = "not restored",
	},
	{
		.name = "AArch64: a return with a signed return address",
		.arch = SFU_ARCH_AARCH64,
		.code = BYTES(0x3f, 0x23, 0x03, 0xd5,	/* 0: paciasp */
			      A64_RET),			/* 4: ret */
		.want_errno = ENOENT, .why = "signed",
	},
	{
		.name = "AArch64: both keys",
		.arch = SFU_ARCH_AARCH64,
		.code = BYTES(0x3f, 0x23, 0x03, 0xd5,	/* 0: paciasp */
			      0xbf, 0x23, 0x03, 0xd5,	/* 4: autiasp */
			      0x7f, 0x23, 0x03, 0xd5,	/* 8: pacibsp */
			      A64_RET),
		.want_errno = ENOENT, .why = "both keys",
	},
	{
		.name = "AArch64: the saved return address overwritten",
		.arch = SFU_ARCH_AARCH64,
		.code = BYTES(0xfd, 0x7b, 0xbf, 0xa9,	/* 0: stp x29, x30, [sp, #-16]! */
			      0xe0, 0x07, 0x00, 0xf9,	/* 4: str x0, [sp, #8] */
			      0xfd, 0x7b, 0xc1, 0xa8,	/* 8: ldp x29, x30, [sp], #16 */
			      A64_RET),
		.want_errno = ENOENT, .why = "overwrites the return address",
	},
	{
		.name = "paths that disagree",
		.code = BYTES(0x85, 0xff,		/* 0: test %edi,%edi */
			      0x74, 0x01,		/* 2: je 5 */
			      0x55,			/* 4: push %rbp */
			      0xc3),			/* 5: ret, reached with CFA = SP + 8 and SP + 16 */
		.want_errno = ENOENT, .why = "different frames",
	},
	{
		.name = "an unknown SP change without a frame pointer",
		.code = BYTES(0x48, 0x83, 0xe4, 0xf0,	/* 0: and $-16,%rsp */
			      0xc3),			/* 4: ret */
		.want_errno = ENOENT, .why = "without a frame pointer",
	},
	{
		.name = "sub of a register from the SP",
		.code = BYTES(0x48, 0x29, 0xc4,		/* 0: sub %rax,%rsp */
			      0xc3),			/* 3: ret */
		.want_errno = ENOENT, .why = "without a frame pointer",
	},
	{
		.name = "a pointer to a local in %rbp is no frame pointer",
		.code = BYTES(0x55,			/* 0: push %rbp */
			      0x48, 0x8d, 0x6c, 0x24, 0x04,	/* 1: lea 0x4(%rsp),%rbp */
			      0x48, 0x8d, 0x65, 0x08,	/* 6: lea 0x8(%rbp),%rsp: not modelled */
			      0x5d, 0xc3),		/* 10: pop %rbp; ret */
		.want_errno = ENOENT, .why = "without a frame pointer",
	},
	{
		.name = "code cut mid-instruction",
		.code = BYTES(0x48, 0x83, 0xec, 0x08,	/* 0: sub $0x8,%rsp */
			      0xff, 0xd1,		/* 4: call *%rcx */
			      0x48, 0x83),		/* 6: add $0x8,%rsp, cut */
		.want_errno = ENOENT, .why = "cut at the end",
	},
	{
		.name = "undecodable bytes",
		.code = BYTES(0x50,			/* 0: push %rax */
			      0x06,			/* 1: push %es: not in 64-bit mode */
			      0xc3),
		.want_errno = ENOENT, .why = "do not decode",
	},
	{
		.name = "a jump into the middle of an instruction",
		.code = BYTES(0x48, 0x83, 0xec, 0x08,	/* 0: sub $0x8,%rsp */
			      0xeb, 0xfb),		/* 4: jmp 1 */
		.want_errno = ENOENT, .why = "middle of an instruction",
	},

	{
		.name = "the return address overwritten",
		.code = BYTES(0x48, 0x89, 0x04, 0x24,	/* 0: mov %rax,(%rsp) */
			      0xc3),			/* 4: ret */
		.want_errno = ENOENT, .why = "return address",
	},
	{
		.name = "the saved frame pointer overwritten",
		.code = BYTES(0x55,			/* 0: push %rbp */
			      0x48, 0x89, 0xe5,		/* 1: mov %rsp,%rbp */
			      0x48, 0x89, 0x45, 0x00,	/* 4: mov %rax,0x0(%rbp) */
			      0x5d,			/* 8: pop %rbp */
			      0xc3),			/* 9: ret */
		.want_errno = ENOENT, .why = "saved frame pointer",
	},
	{
		.name = "the caller's frame pointer lost",
		.code = BYTES(0x31, 0xed,		/* 0: xor %ebp,%ebp */
			      0xc3),			/* 2: ret */
		.want_errno = ENOENT, .why = "caller's frame pointer",
	},
	{
		.name = "the saved frame pointer popped into another register",
		.code = BYTES(0x55,			/* 0: push %rbp */
			      0x58,			/* 1: pop %rax */
			      0xc3),			/* 2: ret */
		.want_errno = ENOENT, .why = "saved frame pointer",
	},
	{
		.name = "a return from the wrong height",
		.code = BYTES(0x6a, 0x00,		/* 0: push $0 */
			      0xc3),			/* 2: ret */
		.want_errno = ENOENT, .why = "not on top",
	},
	{
		.name = "the return address popped",
		.code = BYTES(0x58,			/* 0: pop %rax */
			      0xff, 0xe0),		/* 1: jmp *%rax */
		.want_errno = ENOENT, .why = "popped",
	},
	{
		.name = "a 16-bit push",
		.code = BYTES(0x66, 0x6a, 0x05,		/* 0: pushw $5 */
			      0xc3),
		.want_errno = ENOENT, .why = "operand-size prefix",
	},
	{
		.name = "a misaligned SP",
		.code = BYTES(0x48, 0x83, 0xec, 0x04,	/* 0: sub $0x4,%rsp */
			      0xc3),
		.want_errno = ENOENT, .why = "aligned",
	},
	{
		.name = "a frame too large",
		.code = BYTES(0x48, 0x81, 0xec, 0x00, 0x00, 0x10, 0x00,	/* 0: sub $0x100000,%rsp */
			      0xc3),
		.want_errno = ENOENT, .why = "leaves the frame",
	},
	{
		.name = "the SP above the CFA",
		.code = BYTES(0x48, 0x83, 0xc4, 0x10,	/* 0: add $0x10,%rsp */
			      0xc3),
		.want_errno = ENOENT, .why = "leaves the frame",
	},
	{
		.name = "a call into the function's own body",
		.code = BYTES(0xe8, 0x00, 0x00, 0x00, 0x00,	/* 0: call 5 */
			      0x58,			/* 5: pop %rax */
			      0xc3),
		.want_errno = ENOENT, .why = "own body",
	},
	{
		.name = "enter",
		.code = BYTES(0xc8, 0x10, 0x00, 0x00,	/* 0: enter $0x10,$0 */
			      0xc9, 0xc3),
		.want_errno = ENOENT, .why = "enter",
	},
	{
		.name = "no code",
		.code = py_trampoline, .len = 0,
		.want_errno = ENOENT, .why = "bytes of code",
	},
};

/*
 * The table's rows against the case's, which are written as one function
 * over the whole code with an UNREACHED row at each stretch no path reaches:
 * the table has a function per stretch of reached instructions and nothing
 * over the rest. Whether a function's rows are flexible is its own.
 */
static size_t check_rows(const struct sfu_sframe *sf, const struct code_case *c)
{
	struct sfu_row got[64];
	size_t n = 0, real = 0;
	uint64_t end = CODE;

	for (size_t i = 0; i < sfu_sframe__fde_count(sf); i++) {
		const struct sfu_fde *fde = sfu_sframe__fde(sf, i);

		assert_true(fde->start >= end);
		assert_int_equal(fde->pauth_key, c->pauth_key);
		if (fde->start > end) {
			struct sfu_row gap = UNREACHED(0);

			gap.start = (uint32_t)(end - CODE);
			assert_true(n < 64);
			got[n++] = gap;
		}
		for (uint32_t k = 0; k < fde->num_fres; k++) {
			assert_true(n < 64);
			got[n] = *sfu_sframe__row(sf, fde->first_row + k);
			got[n++].start += (uint32_t)(fde->start - CODE);
			real++;
		}
		end = fde->start + fde->size;
	}
	assert_true(end <= CODE + c->len);
	if (end < CODE + c->len) {
		struct sfu_row gap = UNREACHED(0);

		gap.start = (uint32_t)(end - CODE);
		assert_true(n < 64);
		got[n++] = gap;
	}
	assert_int_equal(sfu_sframe__fde(sf, 0)->start, CODE);
	if (n != c->num_rows)
		for (size_t k = 0; k < n; k++)
			print_message("  row %zu: +%u flags %#x\n", k, got[k].start, got[k].flags);
	assert_int_equal(n, c->num_rows);
	for (size_t k = 0; k < n; k++) {
		struct sfu_row want = c->rows[k];

		got[k].flags &= ~SFU_ROW_FLEX;
		want.flags &= ~SFU_ROW_FLEX;
		assert_row_equal(&got[k], &want);
	}
	return real;
}

static void check_case(const struct code_case *c)
{
	struct sfu_code_stats st;
	struct sfu_diag diag = { 0 };
	const struct sfu_fde *fde;
	struct sfu_sframe *sf;
	struct sfu_row row;
	void *code;

	print_message("case: %s\n", c->name);
	/* an exact-size copy, so that a read past the end is caught */
	code = memdup_exact_or_fail(c->code, c->len);
	memset(&st, 0xa5, sizeof(st));
	errno = 0;
	sf = sfu_sframe__from_code(code, c->len, CODE, c->arch, &st, &diag);
	free(code);
	if (c->want_errno) {
		assert_null(sf);
		assert_int_equal(errno, c->want_errno);
		assert_int_equal(diag.err, -c->want_errno);
		assert_non_null(strstr(diag.reason, c->why));
		assert_non_null(strstr(st.note, c->why));
		print_message("  refused: %s\n", st.note);
		return;
	}
	if (!sf)
		fail_msg("%s: %s", c->name, diag.reason);
	assert_string_equal(st.note, "");
	assert_int_equal(sfu_sframe__header(sf)->version, 3);
	assert_int_equal(sfu_sframe__header(sf)->abi, c->arch == SFU_ARCH_AARCH64 ?
			 SFU_SFRAME_ABI_AARCH64_LE : SFU_SFRAME_ABI_AMD64_LE);
	assert_int_equal(st.rows, check_rows(sf, c));
	for (size_t k = 0; k < c->num_probes; k++) {
		const struct probe *p = &c->probes[k];
		int got = sfu_sframe__lookup(sf, CODE + p->off, &fde, &row);

		/* bytes no path reaches are in no function: no row there */
		if (p->reg < 0) {
			assert_int_equal(got, -ENOENT);
			continue;
		}
		assert_int_equal(got, 0);
		assert_false(row.flags & SFU_ROW_UNUSABLE);
		assert_int_equal(row.cfa.kind, SFU_LOC_REG_OFFSET);
		assert_int_equal(row.cfa.reg, p->reg);
		assert_int_equal(row.cfa.offset, p->cfa);
	}
	/* nothing outside the function */
	assert_int_equal(sfu_sframe__lookup(sf, CODE - 1, &fde, &row), -ENOENT);
	assert_int_equal(sfu_sframe__lookup(sf, CODE + c->len, &fde, &row), -ENOENT);
	sfu_sframe__free(sf);
}

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		check_case(&cases[i]);
}

/* SFU_CODE_MAX_INSNS instructions are analysed, one more is refused. */
static void test_instruction_limit(void **state)
{
	size_t len = SFU_CODE_MAX_INSNS + 1;
	struct sfu_code_stats st;
	struct sfu_diag diag = { 0 };
	uint8_t *code = malloc(len);
	struct sfu_sframe *sf;

	(void)state;
	assert_non_null(code);
	/* nops, then ret: one instruction too many */
	memset(code, 0x90, len - 1);
	code[len - 1] = 0xc3;
	sf = sfu_sframe__from_code(code, len, CODE, SFU_ARCH_X86_64, &st, &diag);
	assert_null(sf);
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(st.note, "more than"));
	assert_int_equal(st.insns, SFU_CODE_MAX_INSNS);
	/* one fewer fits */
	sf = sfu_sframe__from_code(code + 1, len - 1, CODE, SFU_ARCH_X86_64, &st, &diag);
	assert_non_null(sf);
	assert_int_equal(st.insns, SFU_CODE_MAX_INSNS);
	assert_int_equal(st.rows, 1);
	sfu_sframe__free(sf);
	free(code);
}

static void test_arguments(void **state)
{
	struct sfu_diag diag = { 0 };
	uint8_t *big;

	(void)state;
	/* no stats, no diag */
	sfu_sframe__free(sfu_sframe__from_code(py_trampoline, sizeof(py_trampoline), CODE,
					       SFU_ARCH_X86_64, NULL, NULL));
	assert_null(sfu_sframe__from_code(py_trampoline, sizeof(py_trampoline), CODE, 7, NULL, &diag));
	assert_int_equal(errno, ENOTSUP);
	assert_int_equal(diag.err, -ENOTSUP);
	assert_null(sfu_sframe__from_code(NULL, 11, CODE, SFU_ARCH_X86_64, NULL, &diag));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(diag.err, -EINVAL);
	assert_null(sfu_sframe__from_code(py_trampoline, sizeof(py_trampoline), UINT64_MAX - 4,
					  SFU_ARCH_X86_64, NULL, NULL));
	assert_int_equal(errno, EINVAL);
	big = calloc(1, SFU_CODE_MAX_BYTES + 1);
	assert_non_null(big);
	assert_null(sfu_sframe__from_code(big, SFU_CODE_MAX_BYTES + 1, CODE, SFU_ARCH_X86_64, NULL,
					  &diag));
	assert_int_equal(errno, ENOENT);
	free(big);
}

/*
 * End to end: a CPython function's frame, called through its trampoline,
 * which sits in anonymous memory as a module made from the derived table.
 * The caller is in a module with a row of its own.
 */
#define STUB		0x7f0000010000ull
#define CALLER		0x401000ull
#define CALLER_RA	(CALLER + 0x40)
#define STACK_TOP	0x7ffff000ull
#define STACK_SIZE	0x200u

static struct sfu_module *stub_module(uint64_t start, size_t len)
{
	struct sfu_segment seg = { .vaddr = start, .memsz = len, .offset = 0, .filesz = len,
				   .flags = PF_R | PF_X };
	struct sfu_code_stats st;
	struct sfu_sframe *sf;
	struct sfu_module *m;

	sf = sfu_sframe__from_code(py_trampoline, sizeof(py_trampoline), start, SFU_ARCH_X86_64,
				   &st, NULL);
	assert_non_null(sf);
	assert_int_equal(st.insns, 4);
	m = sfu_module__new("[perf-trampoline]", NULL, EM_X86_64, &seg, 1, sf);
	assert_non_null(m);
	return m;
}

static void test_unwind_through_trampoline(void **state)
{
	SFU_OPTS(sfu_unwind_opts, opts, .arch = SFU_ARCH_X86_64, .no_fp_fallback = 1);
	uint8_t stack[STACK_SIZE] = { 0 };
	struct sfu_snapshot snap = { STACK_TOP - STACK_SIZE, stack, STACK_SIZE };
	uint64_t entry_sp = STACK_TOP - 0x100, v;
	struct sfu_addrspace *as;
	struct sfu_module *m;
	struct sfu_lookup look;
	struct sfu_step step;
	struct sfu_regs regs;

	(void)state;
	as = sfu_addrspace__new(NULL, NULL);
	assert_non_null(as);
	m = stub_module(STUB, sizeof(py_trampoline));
	assert_int_equal(sfu_addrspace__add(as, STUB, STUB + sizeof(py_trampoline), 0,
					    PROT_READ | PROT_EXEC, NULL, m), 0);
	sfu_module__put(m);

	/*
	 * The caller called the trampoline: [entry_sp] = CALLER_RA. The
	 * trampoline's sub left 8 bytes of padding, then its call pushed
	 * STUB + 6 for the Python function at entry_sp - 16.
	 */
	v = CALLER_RA;
	memcpy(&stack[entry_sp - snap.base], &v, 8);
	memset(&stack[entry_sp - 8 - snap.base], 0xee, 8);
	v = STUB + 6;
	memcpy(&stack[entry_sp - 16 - snap.base], &v, 8);

	/* a return address in the trampoline: looked up as pc - 1, inside the call */
	regs = (struct sfu_regs){ .pc = STUB + 6, .sp = entry_sp - 8, .fp = 0x1234 };
	assert_int_equal(sfu_unwind_step(as, &opts, &regs, 0, sfu_snapshot_read, &snap, &step), 0);
	assert_int_equal(step.regs.pc, CALLER_RA);
	assert_int_equal(step.regs.sp, entry_sp + 8);
	assert_int_equal(step.regs.fp, 0x1234);
	assert_int_equal(step.source, SFU_SRC_SFRAME);
	assert_int_equal(step.kind, SFU_FRAME_RA);

	/* interrupted at each instruction, with the SP the code had there */
	static const struct { uint32_t off; uint64_t sp; } at[] = {
		{ 0, 0 }, { 4, 8 }, { 6, 8 }, { 10, 0 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(at); i++) {
		regs = (struct sfu_regs){ .pc = STUB + at[i].off, .sp = entry_sp - at[i].sp,
					  .fp = 0x1234 };
		assert_int_equal(sfu_unwind_step(as, &opts, &regs, 1, sfu_snapshot_read, &snap,
						 &step), 0);
		assert_int_equal(step.regs.pc, CALLER_RA);
		assert_int_equal(step.regs.sp, entry_sp + 8);
	}

	/* what a debugger's hook sees */
	assert_int_equal(sfu_unwind_lookup(as, STUB + 5, &look), 0);
	assert_int_equal(look.func_start, STUB);
	assert_int_equal(look.func_end, STUB + sizeof(py_trampoline));
	assert_int_equal(look.row_start, STUB + 4);
	sfu_addrspace__free(as);
}

/* The same on AArch64, where the trampoline keeps a frame record and the entry's RA is in x30. */
static const uint8_t py_trampoline_a64[] = {
	0xfd, 0x7b, 0xbf, 0xa9,		/* 0: stp x29, x30, [sp, #-16]! */
	0xfd, 0x03, 0x00, 0x91,		/* 4: mov x29, sp */
	0x60, 0x00, 0x3f, 0xd6,		/* 8: blr x3 */
	0xfd, 0x7b, 0xc1, 0xa8,		/* 12: ldp x29, x30, [sp], #16 */
	0xc0, 0x03, 0x5f, 0xd6,		/* 16: ret */
};

static void test_unwind_through_trampoline_a64(void **state)
{
	struct sfu_segment seg = { .vaddr = STUB, .memsz = sizeof(py_trampoline_a64),
				   .filesz = sizeof(py_trampoline_a64), .flags = PF_R | PF_X };
	SFU_OPTS(sfu_unwind_opts, opts, .arch = SFU_ARCH_AARCH64, .no_fp_fallback = 1);
	uint8_t stack[STACK_SIZE] = { 0 };
	struct sfu_snapshot snap = { STACK_TOP - STACK_SIZE, stack, STACK_SIZE };
	uint64_t entry_sp = STACK_TOP - 0x100, v;
	struct sfu_addrspace *as;
	struct sfu_sframe *sf;
	struct sfu_module *m;
	struct sfu_step step;
	struct sfu_regs regs;

	(void)state;
	sf = sfu_sframe__from_code(py_trampoline_a64, sizeof(py_trampoline_a64), STUB,
				   SFU_ARCH_AARCH64, NULL, NULL);
	assert_non_null(sf);
	m = sfu_module__new("[perf-trampoline]", NULL, EM_AARCH64, &seg, 1, sf);
	assert_non_null(m);
	as = sfu_addrspace__new(NULL, NULL);
	assert_non_null(as);
	assert_int_equal(sfu_addrspace__add(as, STUB, STUB + sizeof(py_trampoline_a64), 0,
					    PROT_READ | PROT_EXEC, NULL, m), 0);
	sfu_module__put(m);

	/* the frame record: the caller's x29, then x30 */
	v = 0x5555;
	memcpy(&stack[entry_sp - 16 - snap.base], &v, 8);
	v = CALLER_RA;
	memcpy(&stack[entry_sp - 8 - snap.base], &v, 8);

	/* interrupted at the entry: the return address is still in x30 */
	regs = (struct sfu_regs){ .pc = STUB, .sp = entry_sp, .fp = 0x5555, .lr = CALLER_RA };
	assert_int_equal(sfu_unwind_step(as, &opts, &regs, 1, sfu_snapshot_read, &snap, &step), 0);
	assert_int_equal(step.regs.pc, CALLER_RA);
	assert_int_equal(step.regs.sp, entry_sp);

	/* a return address after blr x3: CFA = SP + 16 */
	regs = (struct sfu_regs){ .pc = STUB + 12, .sp = entry_sp - 16, .fp = entry_sp - 16 };
	assert_int_equal(sfu_unwind_step(as, &opts, &regs, 0, sfu_snapshot_read, &snap, &step), 0);
	assert_int_equal(step.regs.pc, CALLER_RA);
	assert_int_equal(step.regs.sp, entry_sp);
	assert_int_equal(step.regs.fp, 0x5555);

	/* past frame 0, x30 is not known: the entry's row cannot be used */
	regs = (struct sfu_regs){ .pc = STUB + 4, .sp = entry_sp, .fp = 0x5555 };
	assert_int_equal(sfu_unwind_step(as, &opts, &regs, 0, sfu_snapshot_read, &snap, &step),
			 SFU_STOP_BAD_INFO);
	sfu_addrspace__free(as);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_instruction_limit),
		cmocka_unit_test(test_arguments),
		cmocka_unit_test(test_unwind_through_trampoline),
		cmocka_unit_test(test_unwind_through_trampoline_a64),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
