/* SPDX-License-Identifier: BSD-2-Clause */
/* Output files that hold stacks: a 0600 temporary file beside the target, renamed over it when whole. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

struct outfile {
	FILE *f;
	char *path;
	char *tmp;	/* the temporary file; NULL when written in place */
};

/* Open a file that is not a regular one (a pipe, a device) to write it in place. */
static int open_in_place(struct outfile *o)
{
	struct stat st;
	int fd = open(o->path, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	/* what lstat() saw may have been replaced since: only never a regular file in place */
	if (fstat(fd, &st) || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
		close(fd);
		return -EAGAIN;
	}
	if (!(o->f = fdopen(fd, "w"))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return 0;
}

/* A new 0600 file in @path's directory, named after it, for renaming over it. */
static int open_temporary(struct outfile *o)
{
	const char *slash = strrchr(o->path, '/');
	const char *base = slash ? slash + 1 : o->path;
	int dirlen = slash ? (int)(slash - o->path + 1) : 0, fd;

	/* a long name leaves room for the suffix within NAME_MAX */
	if (asprintf(&o->tmp, "%.*s.%.200s.tmp.XXXXXX", dirlen, o->path, base) < 0) {
		o->tmp = NULL;
		return -ENOMEM;
	}
	/* O_EXCL (mkostemp's): never an existing file, never through a symlink; mode 0600 */
	fd = mkostemp(o->tmp, O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;

		free(o->tmp);
		o->tmp = NULL;
		return err;
	}
	if (!(o->f = fdopen(fd, "w"))) {
		int err = -errno;

		close(fd);
		unlink(o->tmp);
		return err;
	}
	return 0;
}

struct outfile *outfile__create(const char *path)
{
	struct outfile *o = calloc(1, sizeof(*o));
	struct stat st;
	int err;

	if (!o || !(o->path = strdup(path))) {
		err = -ENOMEM;
		goto fail;
	}
	if (!lstat(path, &st)) {
		if (S_ISLNK(st.st_mode)) {
			err = -ELOOP;
			goto fail;
		}
		if (S_ISDIR(st.st_mode)) {
			err = -EISDIR;
			goto fail;
		}
		if (!S_ISREG(st.st_mode) && (err = open_in_place(o)) != -EAGAIN) {
			if (err)
				goto fail;
			return o;
		}
	} else if (errno != ENOENT) {
		err = -errno;
		goto fail;
	}
	if ((err = open_temporary(o)))
		goto fail;
	return o;
fail:
	if (o) {
		free(o->path);
		free(o->tmp);
		free(o);
	}
	errno = -err;
	return NULL;
}

FILE *outfile__stream(struct outfile *o)
{
	return o->f;
}

static void outfile_free(struct outfile *o)
{
	free(o->path);
	free(o->tmp);
	free(o);
}

int outfile__commit(struct outfile *o)
{
	int err = 0;

	if (fflush(o->f))
		err = errno > 0 ? -errno : -EIO;
	else if (ferror(o->f))
		err = -EIO;
	if (fclose(o->f) && !err)
		err = errno > 0 ? -errno : -EIO;
	if (o->tmp && !err && rename(o->tmp, o->path))
		err = -errno;
	if (o->tmp && err)
		unlink(o->tmp);
	outfile_free(o);
	return err;
}

void outfile__discard(struct outfile *o)
{
	if (!o)
		return;
	fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	outfile_free(o);
}
