/* SPDX-License-Identifier: BSD-2-Clause */
/* Interned strings: each distinct string gets the next id, from 0, and is kept once. */
#ifndef SFPROF_STRTAB_H
#define SFPROF_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct hmap;

/* Zeroed, an empty table. */
struct strtab {
	const char **strs;	/* by id, in the order first seen (the map's copies) */
	size_t count, cap;
	struct hmap *ids;	/* string -> id + 1 */
};

/** strtab__intern() - the id of @str (length @len), added if new. @return the id, or -ENOMEM. */
int64_t strtab__intern(struct strtab *t, const char *str, size_t len);

/** strtab__release() - free what the table holds; the table is empty afterwards. */
void strtab__release(struct strtab *t);

#endif
