/* SPDX-License-Identifier: BSD-2-Clause */
/* The growable array of sfprof: room for more elements, the capacity doubling. */
#ifndef SFPROF_VEC_H
#define SFPROF_VEC_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/**
 * vec_reserve() - make room in an array for @need elements.
 * @arr: the address of the array's pointer (a T **; NULL for no array yet).
 * @cap: the number of elements allocated, updated.
 * @size: sizeof(T).
 * @first: the capacity of an array that had none.
 *
 * The capacity doubles until it holds @need; elements past the old capacity
 * are left uninitialized.
 *
 * @return 0, or -ENOMEM when the size overflows or realloc() fails (the
 * array and @cap are then unchanged).
 */
static inline int vec_reserve(void *arr, size_t *cap, size_t need, size_t size, size_t first)
{
	void **p = arr, *grown;
	size_t n;

	if (need <= *cap)
		return 0;
	n = *cap ? *cap : first ? first : 1;
	while (n < need)
		n = n <= SIZE_MAX / 2 ? n * 2 : need;
	/* no object is larger than PTRDIFF_MAX bytes */
	if (n > PTRDIFF_MAX / size)
		return -ENOMEM;
	grown = realloc(*p, n * size);
	if (!grown)
		return -ENOMEM;
	*p = grown;
	*cap = n;
	return 0;
}

/*
 * VEC_RESERVE() - vec_reserve() for the array @v (an lvalue of type T *)
 * with @cap its size_t capacity: `if (VEC_RESERVE(v, cap, n + 1, 64)) ...;
 * v[n++] = x;`.
 */
#define VEC_RESERVE(v, cap, need, first) vec_reserve(&(v), &(cap), (need), sizeof(*(v)), (first))

#endif
