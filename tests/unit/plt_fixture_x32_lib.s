# SPDX-License-Identifier: BSD-2-Clause
# An x32 shared object (ELFCLASS32 x86-64, RELA relocations) calling through its PLT
# (test_symbolize): the stubs of plt_fixture_i386_lib.s, reached through %rip.
	.text
	.globl	lib_add
	.type	lib_add, @function
lib_add:
	call	ext_first@PLT
	call	_ZN2ns4funcEi@PLT
	call	lib_sub@PLT
	call	local_ifunc@PLT
	movl	ext_taken@GOTPCREL(%rip), %eax
	call	ext_taken@PLT
	ret
	.size	lib_add, .-lib_add
	.globl	lib_sub
	.type	lib_sub, @function
lib_sub:
	ret
	.size	lib_sub, .-lib_sub
	.type	impl, @function
impl:
	ret
	.size	impl, .-impl
	.type	resolve, @function
resolve:
	leaq	impl(%rip), %rax
	ret
	.size	resolve, .-resolve
	.type	local_ifunc, @gnu_indirect_function
	.set	local_ifunc, resolve

	.section .note.GNU-stack,"",@progbits
