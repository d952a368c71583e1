/* SPDX-License-Identifier: BSD-2-Clause */
/* The symbolizing filter: markup lines in, the same lines with elements replaced out. */
#ifndef SFPROF_MARKUP_FILTER_H
#define SFPROF_MARKUP_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct symbolizer;
struct markup_filter;

/*
 * Told of each element that could not be handled: @line (1-based, the line
 * the element starts on), @col (1-based byte column of the field at fault,
 * as llvm-symbolizer's caret points), a message in llvm-symbolizer's words.
 */
typedef void (*markup_error_fn)(void *ctx, unsigned long line, size_t col, const char *msg);

struct markup_filter_opts {
	bool color;		/* keep SGR escapes (a terminal); else they are stripped */
	markup_error_fn error;
	void *ctx;
};

/**
 * markup_filter__new() - a filter writing to @out, naming addresses with
 * @sym (which it does not own).
 * @return the filter, or NULL with errno set.
 */
struct markup_filter *markup_filter__new(struct symbolizer *sym, FILE *out,
					 const struct markup_filter_opts *opts);

/** Destructor; accepts NULL. */
void markup_filter__free(struct markup_filter *f);

/**
 * markup_filter__line() - filter one line of @len bytes, its line ending
 * included (a last line without one is given one, as llvm-symbolizer does).
 *
 * @return 0, or -ENOMEM (the line is then lost).
 */
int markup_filter__line(struct markup_filter *f, const char *line, size_t len);

/**
 * markup_filter__end_file() - the end of one input file: a multi-line
 * element still open is reported and written as text, and line numbers
 * start again. The contextual elements (modules, mmaps) carry on into the
 * next file, as if the files were one stream.
 */
void markup_filter__end_file(struct markup_filter *f);

/**
 * markup_filter__finish() - the end of the input: a multi-line element
 * left open is written as text, the context is dropped.
 */
void markup_filter__finish(struct markup_filter *f);

/** @return the number of elements that could not be handled so far. */
unsigned long markup_filter__errors(const struct markup_filter *f);

#endif
