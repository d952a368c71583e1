/* SPDX-License-Identifier: BSD-2-Clause */
/* The file behind a process's mapping: the places it is reached from, in the one order they are tried. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mapfile.h"
#include "sfunwind/module.h"

/* @return whether the formatted path fit @cap (a cut path names another file). */
static int fits(int n, size_t cap)
{
	return n > 0 && (size_t)n < cap;
}

int mapfile__each(uint32_t pid, uint64_t start, uint64_t end, const char *path,
		  mapfile_try_fn fn, void *ctx)
{
	char buf[PATH_MAX + 64];
	int n, ret;

	if (start < end) {
		n = snprintf(buf, sizeof(buf), "/proc/%u/map_files/%llx-%llx", pid,
			     (unsigned long long)start, (unsigned long long)end);
		if (fits(n, sizeof(buf)) && (ret = fn(ctx, MAPFILE_MAPPED, buf)))
			return ret;
	}
	/* longer than PATH_MAX: no path the kernel gives, nor one open() takes */
	if (!path || path[0] != '/' || strnlen(path, PATH_MAX) == PATH_MAX)
		return -ENOENT;
	n = snprintf(buf, sizeof(buf), "/proc/%u/root%s", pid, path);
	if (fits(n, sizeof(buf)) && (ret = fn(ctx, MAPFILE_IN_ROOT, buf)))
		return ret;
	if ((ret = fn(ctx, MAPFILE_HERE, path)))
		return ret;
	return -ENOENT;
}

/* Keep @fd only if it is a regular file: a device's open may act, its read may not end. */
static int regular(int fd)
{
	struct stat st;
	int err;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		err = -errno;
	else if (S_ISREG(st.st_mode))
		return fd;
	else
		err = -EINVAL;
	close(fd);
	return err;
}

int mapfile__open_path(const char *path, int follow)
{
	return regular(open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (follow ? 0 : O_NOFOLLOW)));
}

struct open_ctx {
	uint32_t pid;
	const char *path;
	int fd;
};

/* @path under the root of process @pid, resolved there as the process would. */
static int open_in_root(uint32_t pid, const char *path, const char *proc_path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	char root[32];
	int dir, fd;

	snprintf(root, sizeof(root), "/proc/%u/root", pid);
	dir = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	fd = (int)syscall(SYS_openat2, dir, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS)	/* before Linux 5.6: as the path says */
		fd = open(proc_path, (int)how.flags);
	fd = regular(fd);
	close(dir);
	return fd;
}

int mapfile__open_place(uint32_t pid, enum mapfile_via via, const char *place, const char *path)
{
	switch (via) {
	case MAPFILE_MAPPED:
		return mapfile__open_path(place, 1);
	case MAPFILE_IN_ROOT:
		return open_in_root(pid, path, place);
	case MAPFILE_HERE:
		break;
	}
	return mapfile__open_path(place, 0);
}

static int try_open(void *ctx, enum mapfile_via via, const char *place)
{
	struct open_ctx *o = ctx;

	o->fd = mapfile__open_place(o->pid, via, place, o->path);
	return o->fd >= 0;
}

int mapfile__open(uint32_t pid, uint64_t start, uint64_t end, const char *path)
{
	struct open_ctx o = { pid, path, -ENOENT };
	int ret = mapfile__each(pid, start, end, path, try_open, &o);

	return ret > 0 ? o.fd : ret;
}

struct module_try {
	struct sfu_cache *cache;
	const struct sfu_build_id *want;
	struct sfu_module *m;
};

static int try_module(void *ctx, enum mapfile_via via, const char *place)
{
	struct module_try *t = ctx;

	(void)via;
	if ((t->m = sfu_cache__open(t->cache, place, t->want, NULL)))
		return 1;
	/* the memory bound: no other place will do better */
	return errno == ENOSPC ? -ENOSPC : 0;
}

struct sfu_module *mapfile__module(struct sfu_cache *cache, uint32_t pid, uint64_t start,
				   uint64_t end, const char *path, const struct sfu_build_id *want)
{
	struct module_try t = { cache, want, NULL };
	int ret = mapfile__each(pid, start, end, path, try_module, &t);

	if (ret <= 0)
		errno = -ret;
	return t.m;
}
