/* SPDX-License-Identifier: BSD-2-Clause */
/* Symbolizer markup: a line split into plain text, SGR escapes and {{{tag:fields}}} elements. */
#ifndef SFPROF_MARKUP_H
#define SFPROF_MARKUP_H

#include <stdbool.h>
#include <stddef.h>

/* Fields kept per element; an element with more counts them all (bad field counts are errors). */
#define MARKUP_MAX_FIELDS 8

enum markup_kind {
	MARKUP_TEXT,
	MARKUP_SGR,		/* "\033[%um" with one of the spec's codes */
	MARKUP_ELEMENT,
};

struct markup_span {
	const char *s;
	size_t len;
};

struct markup_node {
	enum markup_kind kind;
	struct markup_span text;	/* the whole node as it appears */
	struct markup_span tag;		/* elements: the tag, never empty */
	struct markup_span body;	/* elements: everything after "tag:" (hexdict's pairs) */
	struct markup_span fields[MARKUP_MAX_FIELDS];
	size_t nfields;			/* all the fields, also those past MARKUP_MAX_FIELDS */
};

/**
 * markup_next() - the next node of @line (@len bytes) from *@pos on.
 *
 * As llvm-symbolizer's parser splits a line: an element is "{{{" up to the
 * first "}}}" after it with a non-empty tag (up to the first ':'); fields
 * are split at every ':'; "{{{:" ... "}}}" and a "{{{" without an end are
 * text. Text between elements is split again at the spec's SGR escapes.
 *
 * @return true and fills @node, advancing *@pos; false at the end of the line.
 */
bool markup_next(const char *line, size_t len, size_t *pos, struct markup_node *node);

/**
 * markup_unclosed() - the last "{{{" of @line from @from on, when no "}}}"
 * follows it: an element opened and not closed on its line.
 *
 * @return its offset, or -1.
 */
long markup_unclosed(const char *line, size_t len, size_t from);

/**
 * markup_open_before_end() - a "{{{" in a line that should continue a
 * multi-line element, before the "}}}" that would close it (or anywhere
 * when none does): another element begins, so the first was never closed.
 *
 * @return its offset, or -1.
 */
long markup_open_before_end(const char *line, size_t len);

/**
 * markup_multiline_begin() - whether @line opens an element the spec lets
 * span lines (hexdict): its last "{{{" has no "}}}" after it and names
 * such a tag. That is asked of a line holding no element from *@from on.
 *
 * @return the offset of that "{{{", or -1.
 */
long markup_multiline_begin(const char *line, size_t len, size_t from);

/** @return the offset just past the first "}}}" of @line, or -1. */
long markup_multiline_end(const char *line, size_t len);

#endif
