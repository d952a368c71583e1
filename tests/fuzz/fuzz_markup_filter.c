// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: the input as a log of symbolizer markup through sfprof
 * symbolize's filter (user/symbolize/): every line, whatever it holds, is
 * parsed and filtered, the context (modules, mmaps, multi-line elements)
 * carried from line to line, the output thrown away. The filter must not
 * crash, and it must go on to the next line after any error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/symbolize.h"
#include "symbolize/filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned long reported;

static void count(void *ctx, unsigned long line, size_t col, const char *msg)
{
	(void)ctx;
	/* a column is never 0, and a message never empty */
	if (!col || !*msg || !line)
		abort();
	reported++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sinkf;
	static struct symbolizer *sym;
	struct markup_filter_opts o = { .color = size & 1, .error = count };
	struct markup_filter *f;
	const char *p = (const char *)data, *end = p + size;
	struct symbolizer_opts so = { .no_debuginfod = true, .no_lines = false };

	if (!sinkf && !(sinkf = fopen("/dev/null", "we")))
		return 0;
	/* one symbolizer for the run: modules found by build ID stay, as in a long log */
	if (!sym && !(sym = symbolizer__new(&so)))
		return 0;
	if (!(f = markup_filter__new(sym, sinkf, &o)))
		return 0;
	reported = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t len = nl ? (size_t)(nl + 1 - p) : (size_t)(end - p);
		char *line = malloc(len + 1);

		if (!line)
			break;
		memcpy(line, p, len);
		/* a last line without its newline is given one, as the command does */
		if (!nl)
			line[len++] = '\n';
		markup_filter__line(f, line, len);
		free(line);
		p += nl ? (size_t)(nl + 1 - p) : (size_t)(end - p);
	}
	markup_filter__finish(f);
	if (markup_filter__errors(f) != reported)
		abort();
	markup_filter__free(f);
	return 0;
}
