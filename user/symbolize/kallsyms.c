/* SPDX-License-Identifier: BSD-2-Clause */
/* The kernel's symbols, from /proc/kallsyms or a recording's copy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/vec.h"
#include "symbolize_internal.h"

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The farthest a kernel address is named from the symbol before it (kallsyms has no sizes). */
#define KSYM_REACH (1u << 20)

static void load_kallsyms(struct symbolizer *s)
{
	/*
	 * What kallsyms can be, the file being outside input (an archive's, a
	 * --kallsyms): a line is an address, a type, a name of at most
	 * KSYM_NAME_LEN (512) bytes and a module's, so one longer is no symbol's
	 * and is skipped without being held; a file is some ten times a large
	 * kernel's (~6 MB, ~150k lines) at most, so a larger one is no
	 * kallsyms and names nothing.
	 */
	enum { KSYM_LINE_MAX = 1024 };
	const size_t max_bytes = 64u << 20, max_syms = 1u << 21;
	FILE *f = fopen(s->opts.kallsyms ? s->opts.kallsyms : "/proc/kallsyms", "re");
	char line[KSYM_LINE_MAX + 1];
	size_t total = 0;
	bool too_big = false;

	s->ksyms_loaded = true;
	if (!f)
		return;
	for (;;) {
		unsigned long long addr;
		int name = 0, name_end = 0, c;
		size_t len = 0;
		char type;

		/* the rest of a cut line is never read as a line of its own */
		while ((c = getc_unlocked(f)) != EOF) {
			if (++total > max_bytes || c == '\n')
				break;
			if (len < KSYM_LINE_MAX)
				line[len] = c;
			len++;
		}
		if (total > max_bytes) {
			too_big = true;
			break;
		}
		if (c == EOF && !len)
			break;
		if (s->nksyms >= max_syms) {
			too_big = true;
			break;
		}
		if (len > KSYM_LINE_MAX)
			continue;
		line[len] = '\0';
		if (sscanf(line, "%llx %c %n%*s%n", &addr, &type, &name, &name_end) != 2 ||
		    !name_end || !addr)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		/*
		 * A BPF program's code is named only while it is loaded: kept
		 * as a bound that names nothing, so that no address in it is
		 * named after the symbol below it. A profile names the
		 * programs its recording saw (session.c).
		 */
		if (strstr(line + name_end, "[bpf]")) {
			if (VEC_RESERVE(s->ksyms, s->ksyms_cap, s->nksyms + 1, 65536))
				break;
			s->ksyms[s->nksyms].addr = addr;
			s->ksyms[s->nksyms++].name = KSYM_NONE;
			continue;
		}
		if (s->knames_len + (name_end - name) + 1 > UINT32_MAX ||
		    VEC_RESERVE(s->ksyms, s->ksyms_cap, s->nksyms + 1, 65536) ||
		    VEC_RESERVE(s->knames, s->knames_cap, s->knames_len + (name_end - name) + 1,
				1 << 20))
			break;
		s->ksyms[s->nksyms].addr = addr;
		s->ksyms[s->nksyms++].name = s->knames_len;
		memcpy(s->knames + s->knames_len, line + name, name_end - name);
		s->knames_len += name_end - name;
		s->knames[s->knames_len++] = '\0';
	}
	fclose(f);
	if (too_big) {
		free(s->ksyms);
		free(s->knames);
		s->ksyms = NULL;
		s->knames = NULL;
		s->nksyms = s->ksyms_cap = s->knames_len = s->knames_cap = 0;
	}
	/* no text symbols (a file of data symbols, an empty one): no array to sort */
	if (s->nksyms)
		qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), ksym_cmp);
	/* held as long as the symbolizer (an agent's months): no room to grow into */
	if (s->nksyms) {
		struct ksym *k = realloc(s->ksyms, s->nksyms * sizeof(*s->ksyms));
		char *n = realloc(s->knames, s->knames_len);

		if (k)
			s->ksyms = k;
		if (n)
			s->knames = n;
	}
}

bool symbolizer__kernel(struct symbolizer *s, uint64_t addr, struct sym_info *out)
{
	size_t lo = 0, hi;

	memset(out, 0, sizeof(*out));
	out->vaddr = addr;
	if (!s->ksyms_loaded)
		load_kallsyms(s);
	hi = s->nksyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/*
	 * kallsyms gives no sizes: past the last symbol below it by more than
	 * any function's length, an address is in no symbol kallsyms lists (a
	 * BPF program's JIT image, gone since), not _einittext+0x3c82e666
	 */
	if (!lo || addr - s->ksyms[lo - 1].addr >= KSYM_REACH || s->ksyms[lo - 1].name == KSYM_NONE)
		return false;
	out->name = s->knames + s->ksyms[lo - 1].name;
	out->offset = addr - s->ksyms[lo - 1].addr;
	return true;
}
