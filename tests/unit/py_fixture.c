/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Native frames named as CPython's (test_session): the interpreter loop
 * _PyEval_EvalFrameDefault, a C function calling back into Python, a leaf
 * and a main, each a function of its own that the symbolizer names.
 */
int _PyEval_EvalFrameDefault(int x);
int _PyEval_EvalFrameDefault_not(int x);
int py_fixture_call(int x);
int py_fixture_leaf(int x);
int py_fixture_main(int x);

/* distinct bodies: identical ones could be folded into one address */
__attribute__((noinline)) int _PyEval_EvalFrameDefault(int x)
{
	return x * 3 + 1;
}

/* a name that only starts like the loop's: not where Python frames go */
__attribute__((noinline)) int _PyEval_EvalFrameDefault_not(int x)
{
	return x * 5 + 2;
}

__attribute__((noinline)) int py_fixture_call(int x)
{
	return x * 7 + 3;
}

__attribute__((noinline)) int py_fixture_leaf(int x)
{
	return x * 11 + 4;
}

__attribute__((noinline)) int py_fixture_main(int x)
{
	return x * 13 + 5;
}
