/* SPDX-License-Identifier: BSD-2-Clause */
/* GNU build IDs: found in ELF notes and printed in hex, one rule for libsfunwind and sfprof. */
#ifndef SFPROF_BUILDID_NOTE_H
#define SFPROF_BUILDID_NOTE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The bytes of the longest build ID kept (SFU_BUILD_ID_MAX); the shortest is 2. */
#define BUILDID_MAX 64

/**
 * buildid_note_find() - the GNU build ID (an NT_GNU_BUILD_ID note named
 * "GNU") in @size bytes of ELF notes at @notes, in the host's byte order, as
 * a PT_NOTE segment, a SHT_NOTE section or /sys/kernel/notes holds them.
 * @align: the notes' alignment, 4 or 8 (8: a segment aligned so, as
 *	NT_GNU_PROPERTY_TYPE_0 notes want; anything else is taken as 4).
 * @out: BUILDID_MAX bytes, the ID.
 * @len: its length, 2 to BUILDID_MAX.
 *
 * The bytes are untrusted: every size is checked against @size; a note that
 * runs past the end ends the search. A note of fewer than 2 bytes is not a
 * build ID and the search goes on.
 *
 * @return 1 when found, 0 when there is none, -EMSGSIZE when the first
 * build-ID note is longer than BUILDID_MAX (kept truncated it would name
 * another file's ID; what to make of it is the caller's).
 */
int buildid_note_find(const void *notes, size_t size, size_t align, uint8_t *out, size_t *len);

/**
 * buildid_from_notes() - buildid_note_find() for callers that hold a build
 * ID or none: @return the length found, 0 for none or one too long.
 */
size_t buildid_from_notes(const void *notes, size_t size, size_t align, uint8_t *out);

/**
 * buildid_hex() - @id in lower-case hex into @out (2 * @len + 1 bytes).
 * @return the length written.
 */
size_t buildid_hex(char *out, size_t cap, const uint8_t *id, size_t len);

/** buildid_fput() - @id in lower-case hex to @f, as buildid_hex() writes it, of any length. */
void buildid_fput(FILE *f, const uint8_t *id, size_t len);

#endif
