/* SPDX-License-Identifier: BSD-2-Clause */
/* Interned strings: a map from the string to its id, and the strings by id. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/hmap.h"
#include "strtab.h"
#include "common/vec.h"

int64_t strtab__intern(struct strtab *t, const char *str, size_t len)
{
	const char *copy;
	uint64_t *id;
	int err;

	if (!t->ids && !(t->ids = hmap__new(HMAP_BYTES)))
		return -ENOMEM;
	if ((err = hmap__entry(t->ids, str, len, &id, &copy)))
		return err;
	if (*id)
		return *id - 1;
	if (VEC_RESERVE(t->strs, t->cap, t->count + 1, 256)) {
		hmap__delete(t->ids, str, len, NULL);
		return -ENOMEM;
	}
	t->strs[t->count] = copy;
	*id = ++t->count;
	return t->count - 1;
}

void strtab__release(struct strtab *t)
{
	free(t->strs);
	hmap__free(t->ids);
	memset(t, 0, sizeof(*t));
}
