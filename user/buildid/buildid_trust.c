/* SPDX-License-Identifier: BSD-2-Clause */
/* Whether a build-ID tree and its entries can be trusted: changed by no one but the effective user and root. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buildid.h"
#include "sfunwind.h"

/* As the kernel's bound on links followed in one lookup. */
#define MAX_LINKS 40

static bool trusted_uid(uid_t uid)
{
	return uid == geteuid() || uid == 0;
}

/* "not by root" or "not by uid 1000 or root": who may own what is trusted. */
static void owner_words(char *out, size_t cap, uid_t uid)
{
	if (!geteuid())
		snprintf(out, cap, "owned by uid %u, not by root", (unsigned)uid);
	else
		snprintf(out, cap, "owned by uid %u, not by uid %u or root", (unsigned)uid,
			 (unsigned)geteuid());
}

/*
 * Whether the directory @st (at @where) is changed by no one but the
 * effective user and root. @ancestor: a directory on the way to the tree,
 * which may also be sticky and world-writable as /tmp is (its entries of
 * ours are renamed or removed by no one else), never the tree's own.
 */
static int check_dir(const struct stat *st, const char *where, bool ancestor, char *why,
		     size_t why_cap)
{
	char words[96];

	if (!S_ISDIR(st->st_mode)) {
		snprintf(why, why_cap, "%s: not a directory", where);
		return -ENOTDIR;
	}
	if (!trusted_uid(st->st_uid)) {
		owner_words(words, sizeof(words), st->st_uid);
		snprintf(why, why_cap, "%s: %s", where, words);
		return -EPERM;
	}
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(ancestor && (st->st_mode & S_ISVTX))) {
		snprintf(why, why_cap, "%s: writable by %s (mode %04o)", where,
			 st->st_mode & S_IWOTH ? "others" : "its group",
			 (unsigned)(st->st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* The names left in @p, "." not counted. */
static size_t names_left(const char *p)
{
	size_t n = 0;

	while (*p) {
		size_t len;

		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		n += len && !(len == 1 && *p == '.');
		p += len;
	}
	return n;
}

/*
 * Walk @dir from / with openat() and O_NOFOLLOW, each directory checked
 * (check_dir()) before the next name is looked up in it, those missing made
 * owner-only when @create. A symbolic link on the way is followed only when
 * the effective user or root owns it: it is in a directory checked already,
 * so no one else put it there. The last @own directories are the tree's
 * own, checked strictly: never sticky, never a link.
 * @return an O_DIRECTORY fd of @dir, or a negative errno with @why filled.
 */
static int walk(const char *dir, size_t own, bool create, char *why, size_t why_cap)
{
	char rest[2 * PATH_MAX], walked[2 * PATH_MAX], target[PATH_MAX];
	size_t dirlen = strlen(dir);
	int fd = -1, next, links = 0, err;
	struct stat st;
	char *p;

	if (dir[0] != '/') {
		snprintf(why, why_cap, "%s: not an absolute path", dir);
		return -EINVAL;
	}
	if (dirlen >= sizeof(rest)) {
		snprintf(why, why_cap, "%.200s...: %s", dir, strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	memcpy(rest, dir, dirlen + 1);
	walked[0] = '\0';
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		err = -errno;
		snprintf(why, why_cap, "/: %s", strerror(errno));
		goto fail;
	}
	if ((err = check_dir(&st, "/", names_left(rest) >= own, why, why_cap)))
		goto fail;
	p = rest;
	while (*p) {
		char *name, *end;
		size_t wl;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		name = p;
		end = strchr(p, '/');
		p = end ? end + 1 : p + strlen(p);
		if (end)
			*end = '\0';
		if (!strcmp(name, "."))
			continue;
		wl = strlen(walked);
		if (!strcmp(name, "..")) {
			char *slash = strrchr(walked, '/');

			if (slash)
				*slash = '\0';
		} else if (wl + 1 + strlen(name) < sizeof(walked)) {
			snprintf(walked + wl, sizeof(walked) - wl, "/%s", name);
		}
		if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW)) {
			if (errno != ENOENT || !create || !strcmp(name, "..")) {
				err = -errno;
				snprintf(why, why_cap, "%s: %s", walked[0] ? walked : "/",
					 strerror(errno));
				goto fail;
			}
			if ((mkdirat(fd, name, 0700) && errno != EEXIST) ||
			    fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW)) {
				err = -errno;
				snprintf(why, why_cap, "%s: %s", walked, strerror(errno));
				goto fail;
			}
		}
		if (S_ISLNK(st.st_mode)) {
			char words[96];
			size_t left = strlen(p);
			ssize_t n;

			if (!trusted_uid(st.st_uid)) {
				owner_words(words, sizeof(words), st.st_uid);
				snprintf(why, why_cap, "%s: a symbolic link %s", walked, words);
				err = -EPERM;
				goto fail;
			}
			/* a tree's own directory is one, where it is: what evicts removes in it */
			if (names_left(p) < own) {
				snprintf(why, why_cap, "%s: a symbolic link", walked);
				err = -EPERM;
				goto fail;
			}
			n = readlinkat(fd, name, target, sizeof(target));
			if (n < 0 || (size_t)n >= sizeof(target) || ++links > MAX_LINKS ||
			    (size_t)n + 1 + left >= sizeof(rest)) {
				err = n < 0 ? -errno : -ELOOP;
				snprintf(why, why_cap, "%s: %s", walked, strerror(-err));
				goto fail;
			}
			/* the link's target, then what was left after it */
			memmove(rest + n + 1, p, left + 1);
			memcpy(rest, target, n);
			rest[n] = '/';
			p = rest;
			/* where the link was is not where its target is */
			if (target[0] == '/') {
				walked[0] = '\0';
				close(fd);
				fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
				if (fd < 0) {
					err = -errno;
					snprintf(why, why_cap, "/: %s", strerror(errno));
					goto fail;
				}
			} else {
				char *slash = strrchr(walked, '/');

				if (slash)
					*slash = '\0';
			}
			continue;
		}
		next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 || fstat(next, &st)) {
			err = -errno;
			snprintf(why, why_cap, "%s: %s", walked, strerror(errno));
			if (next >= 0)
				close(next);
			goto fail;
		}
		close(fd);
		fd = next;
		if ((err = check_dir(&st, walked, names_left(p) >= own, why, why_cap)))
			goto fail;
	}
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return err;
}

int buildid_dir_trust(const char *dir, size_t own, bool create, char *why, size_t why_cap)
{
	int fd = walk(dir, own, create, why, why_cap);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int buildid_tree_trust(const char *dir, bool create, char *why, size_t why_cap)
{
	char tree[2 * PATH_MAX];
	int err = buildid_dir_trust(dir, 1, create, why, why_cap);

	if (err)
		return err;
	if (snprintf(tree, sizeof(tree), "%s/" BUILDID_TREE, dir) >= (int)sizeof(tree)) {
		snprintf(why, why_cap, "%.200s...: %s", dir, strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	return buildid_dir_trust(tree, 2, create, why, why_cap);
}

int buildid_entry_trust(const char *dir, const char *path, char *why, size_t why_cap)
{
	size_t dlen = strlen(dir);
	const char *slash = strrchr(path, '/');
	char parent[2 * PATH_MAX], words[96];
	struct stat st;
	int fd, err;

	/* DIR/.build-id/XX/NAME: DIR, .build-id and XX are the tree's own */
	if (strncmp(path, dir, dlen) || path[dlen] != '/' || !slash || slash == path ||
	    (size_t)(slash - path) >= sizeof(parent)) {
		snprintf(why, why_cap, "%s: not an entry of %s", path, dir);
		return -EINVAL;
	}
	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
	fd = walk(parent, 3, false, why, why_cap);
	if (fd < 0)
		return fd;
	if (fstatat(fd, slash + 1, &st, AT_SYMLINK_NOFOLLOW)) {
		err = -errno;
		snprintf(why, why_cap, "%s: %s", path, strerror(errno));
		goto out;
	}
	err = -EPERM;
	if (S_ISLNK(st.st_mode))
		snprintf(why, why_cap, "%s: a symbolic link", path);
	else if (!S_ISREG(st.st_mode))
		snprintf(why, why_cap, "%s: not a regular file", path);
	else if (!trusted_uid(st.st_uid) && (owner_words(words, sizeof(words), st.st_uid), true))
		snprintf(why, why_cap, "%s: %s", path, words);
	else if (st.st_mode & (S_IWGRP | S_IWOTH))
		snprintf(why, why_cap, "%s: writable by others (mode %04o)", path,
			 (unsigned)(st.st_mode & 07777));
	else
		err = 0;
out:
	close(fd);
	return err;
}

bool buildid_file_trusted(const struct stat *st)
{
	return S_ISREG(st->st_mode) && trusted_uid(st->st_uid) &&
	       !(st->st_mode & (S_IWGRP | S_IWOTH));
}

int buildid_open_checked(const char *path, const uint8_t *id, size_t len, char *why,
			 size_t why_cap)
{
	char self[64];
	struct sfu_module *m;
	struct stat st;
	int fd, err;

	/* followed: /usr/lib/debug/.build-id holds links by design; the cache's were refused */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st)) {
		err = -errno;
		snprintf(why, why_cap, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
		snprintf(why, why_cap, "%s: not a regular file", path);
		goto fail;
	}
	/* the build ID of what this fd reads, wherever the path points now */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	m = sfu_module__open_flags(self, SFU_MODULE_OPEN_NO_UNWIND | SFU_MODULE_OPEN_NO_SYMBOLS,
				   NULL);
	if (!m) {
		err = -errno;
		snprintf(why, why_cap, "%s: %s", path, strerror(errno));
		goto fail;
	}
	err = len && sfu_module__build_id(m)->len == len &&
	      !memcmp(sfu_module__build_id(m)->bytes, id, len) ? 0 : -ESTALE;
	sfu_module__put(m);
	if (err) {
		snprintf(why, why_cap, "%s: holds another build now", path);
		goto fail;
	}
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return err;
}
