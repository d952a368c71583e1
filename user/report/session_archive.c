/* SPDX-License-Identifier: BSD-2-Clause */
/* An archive opened as a session: unpacked, its tree searched first, removed with the session. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildid/sfarchive.h"
#include "session_archive.h"

struct session_archive {
	char *dir;
	const char **buildid_dirs;	/* the unpacked tree, then --buildid-dir's */
	char *kallsyms;
};

void session_archive__free(struct session_archive *a)
{
	if (!a)
		return;
	sfarchive_remove(a->dir);
	free(a->dir);
	free(a->buildid_dirs);
	free(a->kallsyms);
	free(a);
}

struct session *session_archive__open(const char *path, const struct session_opts *opts,
				      struct profile_diag *diag)
{
	struct session_archive *a = calloc(1, sizeof(*a));
	struct session_opts aopts = { 0 };
	struct session *s = NULL;
	char *profile = NULL;
	size_t n;

	if (!a) {
		snprintf(diag->reason, sizeof(diag->reason), "out of memory");
		return NULL;
	}
	if (sfarchive_unpack(path, &a->dir, diag->reason, sizeof(diag->reason)))
		goto out;
	if (opts)
		aopts = *opts;
	aopts.symbolizer = NULL;	/* its own, which knows the archive's build-ID tree */
	n = aopts.sym.num_buildid_dirs;
	a->buildid_dirs = calloc(n + 1, sizeof(*a->buildid_dirs));
	if (!a->buildid_dirs || asprintf(&profile, "%s/" SFARCHIVE_PROFILE, a->dir) < 0 ||
	    asprintf(&a->kallsyms, "%s/" SFARCHIVE_KALLSYMS, a->dir) < 0) {
		profile = NULL;
		snprintf(diag->reason, sizeof(diag->reason), "out of memory");
		goto out;
	}
	a->buildid_dirs[0] = a->dir;
	for (size_t i = 0; i < n; i++)
		a->buildid_dirs[i + 1] = aopts.sym.buildid_dirs[i];
	aopts.sym.buildid_dirs = a->buildid_dirs;
	aopts.sym.num_buildid_dirs = n + 1;
	/* the recording machine's kernel symbols, unless the user names a file */
	if (!aopts.sym.kallsyms && !access(a->kallsyms, R_OK))
		aopts.sym.kallsyms = a->kallsyms;
	s = session__open(profile, &aopts, diag);
	if (s) {
		session__keep_archive(s, a);
		a = NULL;
	}
out:
	free(profile);
	session_archive__free(a);
	return s;
}
