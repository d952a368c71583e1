/* SPDX-License-Identifier: BSD-2-Clause */
/* Text from outside (names, paths, comms, build IDs) made safe to print: the one escaping rule. */
#ifndef SFPROF_TEXT_H
#define SFPROF_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*
 * The rule. Every string sfprof prints that a profiled process, a profile
 * file or an ELF file chose (a comm, a path, a symbol, the recorded command
 * line) goes through it, in every output format:
 *
 *   - well-formed UTF-8 passes as it is, but for the code points below;
 *   - a backslash is written "\\";
 *   - tab, newline and carriage return are written "\t", "\n", "\r"; any
 *     other C0 control and DEL as "\xHH";
 *   - a byte that does not start or continue a well-formed UTF-8 sequence
 *     (a comm the kernel cut mid-character, Latin-1 file names, overlong
 *     forms, surrogates) is written "\xHH", byte by byte;
 *   - the C1 controls (U+0080-U+009F, CSI U+009B among them), the line and
 *     paragraph separators U+2028 and U+2029, the bidirectional formatting
 *     characters (U+200E, U+200F, U+202A-U+202E, U+2066-U+2069: text that
 *     reads otherwise than it is) and the noncharacters U+FFFE and U+FFFF as
 *     "\uHHHH".
 *
 * HH are lower-case hex digits. The result is valid UTF-8 without a control
 * character, and unambiguous: "\xHH" stands for the byte HH, "\uHHHH" for
 * the code point, "\\" for a backslash, so the original can be recovered.
 *
 * Flags add the characters a format gives a meaning, escaped as "\xHH" too,
 * or as entities for XML.
 */
enum text_flags {
	TEXT_QUOTED = 1 << 0,	/* '"': strings printed between double quotes (dump) */
	TEXT_FOLDED = 1 << 1,	/* ';': a frame of a folded stack, where ';' separates frames */
	TEXT_MARKUP = 1 << 2,	/* '{', '}': text among symbolizer markup elements */
	TEXT_FIELD = 1 << 3,	/* '{', '}', ':': a field of a symbolizer markup element */
	TEXT_XML = 1 << 4,	/* '&', '<', '>', '"', '\'' as entities: XML text and attributes */
};

/** text_clean() - whether @s prints unchanged under @flags (enum text_flags). */
bool text_clean(const char *s, unsigned flags);

/**
 * text_put() - write @s to @out under the rule and @flags.
 * @return 0, or -EIO when @out has its error flag set.
 */
int text_put(FILE *out, const char *s, unsigned flags);

/**
 * text_put_width() - as text_put(), but at most @max characters as displayed
 * (an XML entity is one, an escape as many as it has), never cutting an
 * escape or a UTF-8 sequence. @return the characters written.
 */
size_t text_put_width(FILE *out, const char *s, unsigned flags, size_t max);

/** text_width() - the characters text_put() shows for @s, counted as text_put_width() does. */
size_t text_width(const char *s, unsigned flags);

/**
 * text_escape() - @s under the rule and @flags into @buf, as snprintf():
 * NUL-terminated when @cap > 0, cut before an escape or a UTF-8 sequence
 * that does not fit whole.
 * @return the length of the whole escaped text, without the NUL; the text
 * was cut when it is >= @cap.
 */
size_t text_escape(char *buf, size_t cap, const char *s, unsigned flags);

/**
 * text_dup() - @s under the rule and @flags in a new string, to free().
 * @return the string, or NULL with errno ENOMEM.
 */
char *text_dup(const char *s, unsigned flags);

#endif
