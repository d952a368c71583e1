/* SPDX-License-Identifier: BSD-2-Clause */
/* Disk cache of tables derived from .eh_frame: one SFrame section per build ID. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buildid_note.h"
#include "ehframe_internal.h"
#include "sframe_internal.h"

/* A cached table larger than this is not one we wrote. */
#define EHCACHE_MAX_SIZE (256u << 20)

static unsigned long tmp_seq;

char *ehcache_path(const char *dir, const struct sfu_build_id *id)
{
	char hex[2 * SFU_BUILD_ID_MAX + 1];
	char *path;

	if (!id->len || id->len > SFU_BUILD_ID_MAX)
		return NULL;
	buildid_hex(hex, sizeof(hex), id->bytes, id->len);
	/* the name says what the file is to a person looking in the directory */
	if (asprintf(&path, "%s/%s.eh_frame-v%d.sframe", dir, hex, EHCACHE_FORMAT) < 0)
		return NULL;
	return path;
}

/* Whether a file or directory is changed by no one but the effective user and root. */
static bool trusted(const struct stat *st, bool sticky_ok)
{
	return (st->st_uid == geteuid() || !st->st_uid) &&
	       (!(st->st_mode & (S_IWGRP | S_IWOTH)) || (sticky_ok && (st->st_mode & S_ISVTX)));
}

int ehcache_dir_trust(const char *dir)
{
	char rest[2 * PATH_MAX], target[PATH_MAX];
	int fd, next, links = 0, err = 0;
	struct stat st;
	char *p;

	if (dir[0] != '/' || strlen(dir) >= sizeof(rest))
		return -EINVAL;
	strcpy(rest, dir);
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/*
	 * Each directory checked before a name is looked up in it, walked
	 * with O_NOFOLLOW: a link is followed only if the user or root owns
	 * it. A directory on the way may be sticky (/tmp); @dir may not.
	 */
	for (p = rest; !err && *p;) {
		char *name = p + strspn(p, "/"), *end = name + strcspn(name, "/");
		bool last;
		ssize_t n;

		p = *end ? end + 1 : end;
		*end = '\0';
		last = !p[strspn(p, "/")];
		if (!*name || !strcmp(name, "."))
			continue;
		if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW)) {
			err = -errno;
		} else if (S_ISLNK(st.st_mode)) {
			size_t left = strlen(p);

			n = readlinkat(fd, name, target, sizeof(target));
			if ((st.st_uid != geteuid() && st.st_uid) || n <= 0 ||
			    (size_t)n >= sizeof(target) || ++links > 40 ||
			    (size_t)n + 1 + left >= sizeof(rest)) {
				err = -EPERM;
				break;
			}
			memmove(rest + n + 1, p, left + 1);
			memcpy(rest, target, n);
			rest[n] = '/';
			p = rest;
			if (target[0] == '/') {
				close(fd);
				if ((fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
					return -errno;
			}
		} else if ((next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					  O_CLOEXEC)) < 0) {
			err = -errno;
		} else {
			close(fd);
			fd = next;
			if (fstat(fd, &st) || !trusted(&st, !last))
				err = -EPERM;
		}
	}
	close(fd);
	return err;
}

static int read_all(int fd, void *buf, size_t size)
{
	size_t done = 0;

	while (done < size) {
		ssize_t n = read(fd, (char *)buf + done, size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EBADMSG;
		done += (size_t)n;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t size)
{
	size_t done = 0;

	while (done < size) {
		ssize_t n = write(fd, (const char *)buf + done, size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

static bool abi_matches(uint8_t abi, uint16_t machine)
{
	if (machine == EM_X86_64)
		return abi == SFU_SFRAME_ABI_AMD64_LE;
	if (machine == EM_AARCH64)
		return abi == SFU_SFRAME_ABI_AARCH64_LE || abi == SFU_SFRAME_ABI_AARCH64_BE;
	return false;
}

int ehcache_load(const char *dir, const struct sfu_build_id *id, uint16_t machine,
		 struct sfu_sframe **out)
{
	char *path = ehcache_path(dir, id);
	struct sfu_sframe *sf = NULL;
	void *buf = NULL;
	struct stat st;
	int fd = -1, err;

	if (!path)
		return id->len ? -ENOMEM : -ENOENT;
	/* the directory first: its names mean what they say only if no one else can change it */
	err = ehcache_dir_trust(dir);
	if (err) {
		err = err == -EPERM ? -EPERM : -ENOENT;
		goto out;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		err = errno == ENOMEM ? -ENOMEM : -ENOENT;
		goto out;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (uint64_t)st.st_size > EHCACHE_MAX_SIZE) {
		err = -EBADMSG;
		goto out;
	}
	/* a table someone else could have written unwinds nothing of ours: derived anew */
	if (!trusted(&st, false)) {
		err = -EPERM;
		goto out;
	}
	buf = malloc((size_t)st.st_size);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	err = read_all(fd, buf, (size_t)st.st_size);
	if (err) {
		err = -EBADMSG;
		goto out;
	}
	/* a truncated or foreign file fails here, like any corrupt section */
	sf = sframe_new_owned(buf, (size_t)st.st_size, 0, NULL);
	buf = NULL;	/* the table's now, or freed */
	if (!sf) {
		err = errno == ENOMEM ? -ENOMEM : -EBADMSG;
		goto out;
	}
	if (sfu_sframe__header(sf)->version != 3 ||
	    !abi_matches(sfu_sframe__header(sf)->abi, machine)) {
		sfu_sframe__free(sf);
		err = -EBADMSG;
		goto out;
	}
	*out = sf;
	err = 0;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	free(path);
	return err;
}

/* mkdir -p, for a cache directory such as ~/.cache/sfprof. */
static int make_dirs(const char *dir)
{
	char *p = strdup(dir);
	int err = 0;

	if (!p)
		return -ENOMEM;
	for (char *s = p + 1; ; s++) {
		char c = *s;

		if (c != '/' && c != '\0')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) && errno != EEXIST) {
			err = -errno;
			break;
		}
		*s = c;
		if (!c)
			break;
	}
	free(p);
	return err;
}

int ehcache_store(const char *dir, const struct sfu_build_id *id, const void *buf, size_t size)
{
	char *path = ehcache_path(dir, id), *tmp = NULL;
	int fd = -1, err;

	if (!path)
		return id->len ? -ENOMEM : -EINVAL;
	if ((err = make_dirs(dir)) || (err = ehcache_dir_trust(dir)))
		goto out;
	/* unique per process and call: two caches may store one build ID at once */
	if (asprintf(&tmp, "%s.%ld.%lu.tmp", path, (long)getpid(),
		     __atomic_add_fetch(&tmp_seq, 1, __ATOMIC_RELAXED)) < 0) {
		tmp = NULL;
		err = -ENOMEM;
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	err = write_all(fd, buf, size);
	if (!err && close(fd))
		err = -errno;
	fd = -1;
	/* readers see the old file or the new one, never half of one */
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
out:
	if (fd >= 0)
		close(fd);
	free(tmp);
	free(path);
	return err;
}
