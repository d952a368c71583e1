# SPDX-License-Identifier: BSD-2-Clause
# A 32-bit x86 program calling the library of plt_fixture_i386_lib.s (test_symbolize):
# linked -no-pie (PLT entries jump through absolute GOT addresses) and -pie (through
# %ebx), lib_sub's address taken from the GOT as well (in the PIE, a .plt.got stub).
	.text
	.globl	_start
	.type	_start, @function
_start:
	call	.Lpc
.Lpc:	popl	%ebx
	addl	$_GLOBAL_OFFSET_TABLE_+[.-.Lpc], %ebx
	call	lib_add@PLT
	call	lib_sub@PLT
	movl	lib_sub@GOT(%ebx), %eax
	hlt
	.size	_start, .-_start

	.section .note.GNU-stack,"",@progbits
