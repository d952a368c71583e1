/* SPDX-License-Identifier: BSD-2-Clause */
/* Writing sfprof archives (sfarchive.h) with libarchive: a pax tar, zstd-compressed, put in place whole. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sfarchive.h"
#include "util/outfile.h"

struct sfarchive_writer {
	struct outfile *out;
	struct archive *a;
	uint64_t bytes;
};

struct sfarchive_writer *sfarchive_writer__create(const char *path, char *why, size_t why_cap)
{
	struct sfarchive_writer *w = calloc(1, sizeof(*w));
	int err;

	if (!w) {
		snprintf(why, why_cap, "out of memory");
		return NULL;
	}
	w->out = outfile__create(path);
	if (!w->out) {
		err = errno;
		snprintf(why, why_cap, "%s: %s", path,
			 err == ELOOP ? "a symbolic link: not written through" : strerror(err));
		free(w);
		errno = err;
		return NULL;
	}
	w->a = archive_write_new();
	if (!w->a || archive_write_add_filter_zstd(w->a) != ARCHIVE_OK ||
	    archive_write_set_format_pax_restricted(w->a) != ARCHIVE_OK ||
	    archive_write_open_FILE(w->a, outfile__stream(w->out)) != ARCHIVE_OK) {
		snprintf(why, why_cap, "%s: %s", path,
			 w->a && archive_error_string(w->a) ? archive_error_string(w->a) :
							     "cannot start the archive");
		sfarchive_writer__discard(w);
		errno = EIO;
		return NULL;
	}
	return w;
}

int sfarchive_writer__add(struct sfarchive_writer *w, const char *name, const char *src,
			  char *why, size_t why_cap)
{
	struct archive_entry *e = NULL;
	uint64_t left;
	struct stat st;
	char buf[65536];
	int fd, err = 0;

	fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		err = -errno;
		snprintf(why, why_cap, "%s: %s", src, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
		snprintf(why, why_cap, "%s: not a regular file", src);
		goto out;
	}
	e = archive_entry_new();
	if (!e) {
		err = -ENOMEM;
		snprintf(why, why_cap, "out of memory");
		goto out;
	}
	archive_entry_set_pathname(e, name);
	archive_entry_set_size(e, st.st_size);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0600);
	archive_entry_set_mtime(e, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	if (archive_write_header(w->a, e) != ARCHIVE_OK)
		goto archive_error;
	for (left = st.st_size; left;) {
		ssize_t n = read(fd, buf, left < sizeof(buf) ? left : sizeof(buf));

		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			snprintf(why, why_cap, "%s: %s", src,
				 n < 0 ? strerror(errno) : "shorter than it was: changed meanwhile");
			goto out;
		}
		if (archive_write_data(w->a, buf, n) != n)
			goto archive_error;
		left -= n;
	}
	w->bytes += st.st_size;
	goto out;
archive_error:
	err = -EIO;
	snprintf(why, why_cap, "writing %s: %s", name,
		 archive_error_string(w->a) ? archive_error_string(w->a) : "archive error");
out:
	archive_entry_free(e);
	if (fd >= 0)
		close(fd);
	return err;
}

uint64_t sfarchive_writer__bytes(const struct sfarchive_writer *w)
{
	return w->bytes;
}

int sfarchive_writer__commit(struct sfarchive_writer *w, char *why, size_t why_cap)
{
	int err = 0;

	if (archive_write_close(w->a) != ARCHIVE_OK) {
		snprintf(why, why_cap, "%s", archive_error_string(w->a) ?
			 archive_error_string(w->a) : "archive error");
		sfarchive_writer__discard(w);
		return -EIO;
	}
	archive_write_free(w->a);
	err = outfile__commit(w->out);
	if (err)
		snprintf(why, why_cap, "%s", strerror(-err));
	free(w);
	return err;
}

void sfarchive_writer__discard(struct sfarchive_writer *w)
{
	if (!w)
		return;
	if (w->a)
		archive_write_free(w->a);
	outfile__discard(w->out);
	free(w);
}
