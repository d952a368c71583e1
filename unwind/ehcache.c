/* SPDX-License-Identifier: BSD-2-Clause */
/* Disk cache of tables derived from .eh_frame: one SFrame section per build ID. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
	for (unsigned i = 0; i < id->len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id->bytes[i]);
	/* the name says what the file is to a person looking in the directory */
	if (asprintf(&path, "%s/%s.eh_frame-v%d.sframe", dir, hex, EHCACHE_FORMAT) < 0)
		return NULL;
	return path;
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
		if (mkdir(p, 0755) && errno != EEXIST) {
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
	if ((err = make_dirs(dir)))
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
