/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Functions with aliases, built with DWARF (test_symbolize): named by their
 * DWARF name as perf names glibc's (__libc_start_main_impl, not one of its
 * aliases), where perf's loader alone would keep the longest global alias.
 */
int impl_one(int x);
int impl_two(int x);

int impl_one(int x)
{
	return x * 3 + 1;
}

int impl_two(int x)
{
	return x * 5 + 2;
}

extern int one_alias(int x) __attribute__((alias("impl_one")));
extern int __one(int x) __attribute__((alias("impl_one")));
extern int two_alias(int x) __attribute__((alias("impl_two")));
