// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: the input as the kallsyms file the report names kernel
 * frames from (`--kallsyms FILE`, default /proc/kallsyms), then kernel
 * addresses named: those of its lines, either side of them, and some the
 * input chooses.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbolize/symbolize.h"
#include "memfd_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Lines whose address is looked up, and names looked for in the file: a bound on one input's time. */
#define MAX_PROBED_LINES 256
#define MAX_SEARCHED 32

static volatile uint64_t sink;
static unsigned searched;
static const char *input_path;

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_kallsyms: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* The address each line of the file starts with (strtoull's, as sscanf's %llx reads it), sorted. */
static uint64_t *line_addrs;
static size_t nline_addrs;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void read_line_addrs(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	char *line = malloc(size + 1);

	nline_addrs = 0;
	free(line_addrs);
	line_addrs = malloc((size + 1) * sizeof(*line_addrs));
	if (!line || !line_addrs)
		broken("out of memory for %zu bytes", size);
	while (p < end) {
		const uint8_t *eol = memchr(p, '\n', (size_t)(end - p));

		if (!eol)
			eol = end;
		memcpy(line, p, (size_t)(eol - p));
		line[eol - p] = '\0';
		line_addrs[nline_addrs++] = strtoull(line, NULL, 16);
		p = eol + 1;
	}
	free(line);
	if (nline_addrs)
		qsort(line_addrs, nline_addrs, sizeof(*line_addrs), cmp_u64);
}

/*
 * Name @addr, and check the answer: a symbol at or below it, whose own
 * address names it at offset 0 and is the address a line of the file starts
 * with, and a name that is a word of the file.
 */
static void probe(struct symbolizer *s, const uint8_t *data, size_t size, uint64_t addr)
{
	uint64_t start;

	struct sym_info info, at;
	size_t len;

	if (!symbolizer__kernel(s, addr, &info)) {
		if (info.name)
			broken("%#llx not found, with a name", (unsigned long long)addr);
		return;
	}
	if (!info.name)
		broken("%#llx found without a name", (unsigned long long)addr);
	len = strlen(info.name);
	if (!len || strpbrk(info.name, " \t\n"))
		broken("%#llx is \"%s\": not a word", (unsigned long long)addr, info.name);
	/* the file searched for the first names only: each search reads the whole file */
	if (++searched <= MAX_SEARCHED && !memmem(data, size, info.name, len))
		broken("%#llx is \"%s\", which the file does not hold", (unsigned long long)addr,
		       info.name);
	if (info.offset > addr || info.vaddr != addr)
		broken("%#llx is %s+%#llx", (unsigned long long)addr, info.name,
		       (unsigned long long)info.offset);
	start = addr - info.offset;
	if (!nline_addrs || !bsearch(&start, line_addrs, nline_addrs, sizeof(start), cmp_u64))
		broken("%#llx is %s+%#llx, but no line of the file starts with %#llx",
		       (unsigned long long)addr, info.name, (unsigned long long)info.offset,
		       (unsigned long long)start);
	if (!symbolizer__kernel(s, addr - info.offset, &at) || at.offset)
		broken("%#llx is %s+%#llx, but its start is not a symbol's",
		       (unsigned long long)addr, info.name, (unsigned long long)info.offset);
	sink += len + info.offset;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symbolizer_opts opts = { .no_debuginfod = true };
	const uint8_t *p = data, *end = data + size;
	struct symbolizer *s;

	input_path = memfd_input("fuzz_kallsyms", data, size);
	read_line_addrs(data, size);
	searched = 0;
	opts.kallsyms = input_path;
	s = symbolizer__new(&opts);
	if (!s)
		return 0;
	probe(s, data, size, 0);
	probe(s, data, size, UINT64_MAX);
	for (unsigned n = 0; p < end && n < MAX_PROBED_LINES; n++) {
		const uint8_t *eol = memchr(p, '\n', (size_t)(end - p));
		char head[24];
		size_t len;
		uint64_t addr;

		if (!eol)
			eol = end;
		len = (size_t)(eol - p) < sizeof(head) - 1 ? (size_t)(eol - p) : sizeof(head) - 1;
		memcpy(head, p, len);
		head[len] = '\0';
		p = eol + 1;
		addr = strtoull(head, NULL, 16);
		probe(s, data, size, addr);
		probe(s, data, size, addr - 1);
		probe(s, data, size, addr + 1);
	}
	/* addresses the input chooses */
	for (size_t off = 0; off + 8 <= size && off < 64; off += 8) {
		uint64_t v;

		memcpy(&v, data + size - 8 - off, sizeof(v));
		probe(s, data, size, v);
	}
	symbolizer__free(s);
	return 0;
}
