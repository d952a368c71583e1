/* SPDX-License-Identifier: BSD-2-Clause */
/* An output file that holds stacks: owner-only, never written through a symlink, whole or not at all. */
#ifndef SFPROF_OUTFILE_H
#define SFPROF_OUTFILE_H

#include <stdio.h>

struct outfile;

/**
 * outfile__create() - start writing @path.
 *
 * A regular file, or a new one, is written to a temporary file made with
 * O_EXCL in the same directory, mode 0600 as the profile (stacks and names
 * can hold secrets), and renamed over @path by outfile__commit(): a failed
 * write leaves what was there, and rename() replaces a symlink put there
 * meanwhile rather than following it. A symlink at @path is refused with
 * ELOOP: writing through it would change a file the user did not name, and
 * replacing it would surprise whoever made it. Anything else that is not a
 * directory (a pipe, a terminal, /dev/null) is opened with O_NOFOLLOW and
 * written in place.
 *
 * @return the file, or NULL with errno set (ELOOP for a symlink, EISDIR).
 */
struct outfile *outfile__create(const char *path);

/** outfile__stream() - where to write. */
FILE *outfile__stream(struct outfile *o);

/**
 * outfile__commit() - flush, close and put the file in place; frees @o.
 * @return 0, or a negative errno (the temporary file is then removed).
 */
int outfile__commit(struct outfile *o);

/** outfile__discard() - close and remove what was written, leaving @path as it was; NULL is fine. */
void outfile__discard(struct outfile *o);

#endif
