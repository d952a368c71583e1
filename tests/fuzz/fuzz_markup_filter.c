// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: the input as a log of symbolizer markup through sfprof
 * symbolize's filter (user/markup/): every line, whatever it holds, is
 * parsed and filtered, the context (modules, mmaps, multi-line elements)
 * carried from line to line. The filter must not crash, must report as many
 * errors as it counts, and must go on after any input: the next file's
 * lines are filtered (a sentinel line's symbol element demangled).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/symbolize.h"
#include "markup/filter.h"

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

static const char sentinel[] = "sentinel {{{symbol:_Z1fv}}}\n";
static const char shown[] = "sentinel f()\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *sinkf;
	char *out = NULL;
	size_t outlen = 0;
	static struct symbolizer *sym;
	struct markup_filter_opts o = { .color = size & 1, .error = count };
	struct markup_filter *f;
	const char *p = (const char *)data, *end = p + size;
	struct symbolizer_opts so = { .no_debuginfod = true, .no_lines = false };

	if (!(sinkf = open_memstream(&out, &outlen)))
		return 0;
	/* one symbolizer for the run: modules found by build ID stay, as in a long log */
	if (!sym && !(sym = symbolizer__new(&so)))
		return 0;
	if (!(f = markup_filter__new(sym, sinkf, &o))) {
		fclose(sinkf);
		free(out);
		return 0;
	}
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
	/* the file ends; the next one's line is filtered whatever came before */
	markup_filter__end_file(f);
	markup_filter__line(f, sentinel, sizeof(sentinel) - 1);
	markup_filter__finish(f);
	if (markup_filter__errors(f) != reported)
		abort();
	markup_filter__free(f);
	fclose(sinkf);
	if (outlen < sizeof(shown) - 1 || memcmp(out + outlen - (sizeof(shown) - 1), shown,
						 sizeof(shown) - 1))
		abort();
	free(out);
	return 0;
}
