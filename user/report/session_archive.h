/* SPDX-License-Identifier: BSD-2-Clause */
/* Reading an sfprof archive as a profile: unpacked into a private directory for as long as the session lives. */
#ifndef SFPROF_SESSION_ARCHIVE_H
#define SFPROF_SESSION_ARCHIVE_H

#include "report/session.h"

struct session_archive;

/**
 * session_archive__open() - session__open() of the profile an archive
 * (sfarchive.h) holds, its binaries and debug files found by build ID in
 * the unpacked tree before anywhere else but their recorded paths, and its
 * kallsyms used unless @opts names one. @return the session, or NULL with
 * @diag filled (nothing unpacked is left).
 */
struct session *session_archive__open(const char *path, const struct session_opts *opts,
				      struct profile_diag *diag);

/** session_archive__free() - remove the unpacked directory; accepts NULL. */
void session_archive__free(struct session_archive *a);

#endif
