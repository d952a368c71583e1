# SPDX-License-Identifier: BSD-2-Clause
# A 32-bit x86 shared object calling through its PIC PLT (test_symbolize): lazy
# JUMP_SLOT stubs (a C++ name among them), an IRELATIVE one (a local ifunc), and
# a .plt.got stub for a function whose address is also loaded from the GOT.
	.text
	.globl	lib_add
	.type	lib_add, @function
lib_add:
	pushl	%ebx
	call	.Lpc
.Lpc:	popl	%ebx
	addl	$_GLOBAL_OFFSET_TABLE_+[.-.Lpc], %ebx
	call	ext_first@PLT
	call	_ZN2ns4funcEi@PLT
	call	lib_sub@PLT
	call	local_ifunc@PLT
	movl	ext_taken@GOT(%ebx), %eax
	call	ext_taken@PLT
	popl	%ebx
	ret
	.size	lib_add, .-lib_add

	.globl	lib_sub
	.type	lib_sub, @function
lib_sub:
	movl	4(%esp), %eax
	subl	8(%esp), %eax
	ret
	.size	lib_sub, .-lib_sub

	.type	impl, @function
impl:
	ret
	.size	impl, .-impl
	.type	resolve, @function
resolve:
	leal	impl@GOTOFF(%ebx), %eax
	ret
	.size	resolve, .-resolve
	.type	local_ifunc, @gnu_indirect_function
	.set	local_ifunc, resolve

	.section .note.GNU-stack,"",@progbits
