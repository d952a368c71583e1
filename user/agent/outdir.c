/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof agent's output directory: window names and retention by count, bytes and age. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outdir.h"

int window_name(char *buf, size_t cap, const char *dir, uint64_t from, uint64_t until)
{
	int n = snprintf(buf, cap, "%s/window-%010" PRIu64 "-%010" PRIu64 ".sfprof", dir, from,
			 until);

	return n < 0 || (size_t)n >= cap ? -ENOSPC : 0;
}

int window_tmp_name(char *buf, size_t cap, const char *dir, uint64_t from)
{
	int n = snprintf(buf, cap, "%s/.window-%010" PRIu64 ".tmp", dir, from);

	return n < 0 || (size_t)n >= cap ? -ENOSPC : 0;
}

static int only_windows(const struct dirent *de)
{
	unsigned long long from, until;
	char end;

	return sscanf(de->d_name, "window-%llu-%llu.sfprof%c", &from, &until, &end) == 2;
}

int outdir_retain(const char *dir, const struct retention *r, uint64_t now_secs)
{
	struct dirent **names = NULL;
	int n = scandir(dir, &names, only_windows, alphasort), deleted = 0;
	uint64_t *sizes, total = 0;
	int dfd;

	if (n < 0)
		return -errno;
	sizes = calloc(n + 1, sizeof(*sizes));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!sizes || dfd < 0) {
		deleted = sizes ? -errno : -ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		struct stat st;

		if (!fstatat(dfd, names[i]->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode))
			sizes[i] = st.st_size;
		total += sizes[i];
	}
	/* oldest first (names sort by time); the newest stays whatever the bounds */
	for (int i = 0; i + 1 < n; i++) {
		unsigned long long from, until;
		int left = n - i;

		sscanf(names[i]->d_name, "window-%llu-%llu", &from, &until);
		if ((r->count && (uint64_t)left > r->count) || (r->bytes && total > r->bytes) ||
		    (r->age_secs && until + r->age_secs < now_secs)) {
			if (!unlinkat(dfd, names[i]->d_name, 0))
				deleted++;
			total -= sizes[i];
		}
	}
out:
	if (dfd >= 0)
		close(dfd);
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(sizes);
	return deleted;
}

int outdir_clean_tmp(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (!strncmp(de->d_name, ".window-", 8) && len > 4 &&
		    !strcmp(de->d_name + len - 4, ".tmp") && !unlinkat(dirfd(d), de->d_name, 0))
			n++;
	}
	closedir(d);
	return n;
}
