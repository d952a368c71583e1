/* SPDX-License-Identifier: BSD-2-Clause */
/* Interned strings for the exporters: each distinct string gets the next id. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"

static uint64_t hash(const char *str, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)str[i]) * 0x100000001b3ull;
	return h ^ (h >> 32);
}

static uint32_t *slot(const struct strtab *t, const char *str, size_t len)
{
	for (size_t j = hash(str, len) & (t->nslots - 1);; j = (j + 1) & (t->nslots - 1)) {
		uint32_t *e = &t->slots[j];
		const char *s;

		if (!*e)
			return e;
		s = t->strs[*e - 1];
		if (!strncmp(s, str, len) && !s[len])
			return e;
	}
}

static int rehash(struct strtab *t)
{
	size_t n = t->nslots ? t->nslots * 2 : 1024;
	uint32_t *old = t->slots;
	size_t nold = t->nslots;

	t->slots = calloc(n, sizeof(*t->slots));
	if (!t->slots) {
		t->slots = old;
		return -ENOMEM;
	}
	t->nslots = n;
	for (size_t i = 0; i < nold; i++)
		if (old[i])
			*slot(t, t->strs[old[i] - 1], strlen(t->strs[old[i] - 1])) = old[i];
	free(old);
	return 0;
}

int64_t strtab__intern(struct strtab *t, const char *str, size_t len)
{
	uint32_t *e;
	char *copy;

	if ((t->count + 1) * 2 > t->nslots && rehash(t))
		return -ENOMEM;
	e = slot(t, str, len);
	if (*e)
		return *e - 1;
	if (t->count == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		char **strs = realloc(t->strs, cap * sizeof(*strs));

		if (!strs)
			return -ENOMEM;
		t->strs = strs;
		t->cap = cap;
	}
	copy = strndup(str, len);
	if (!copy)
		return -ENOMEM;
	t->strs[t->count++] = copy;
	*e = t->count;
	return t->count - 1;
}

void strtab__release(struct strtab *t)
{
	for (size_t i = 0; i < t->count; i++)
		free(t->strs[i]);
	free(t->strs);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}
