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
#include <zstd.h>

#include "sfarchive.h"
#include "util/outfile.h"

struct sfarchive_writer {
	struct outfile *out;
	struct archive *a;
	uint64_t bytes;
	ZSTD_CCtx *zc;
	uint8_t zbuf[1 << 17];
};

/*
 * The tar is compressed here rather than by libarchive's zstd filter, which
 * writes frames without a content checksum: with one, a reader tells a
 * damaged archive from a whole one.
 */
static int compress_to(struct sfarchive_writer *w, const void *buf, size_t len,
		       ZSTD_EndDirective mode)
{
	ZSTD_inBuffer in = { buf, len, 0 };
	size_t left;

	do {
		ZSTD_outBuffer out = { w->zbuf, sizeof(w->zbuf), 0 };

		left = ZSTD_compressStream2(w->zc, &out, &in, mode);
		if (ZSTD_isError(left))
			return -EIO;
		if (out.pos && fwrite(w->zbuf, 1, out.pos, outfile__stream(w->out)) != out.pos)
			return -EIO;
	} while (mode == ZSTD_e_end ? left != 0 : in.pos < in.size);
	return 0;
}

static la_ssize_t tar_write(struct archive *a, void *ctx, const void *buf, size_t len)
{
	if (compress_to(ctx, buf, len, ZSTD_e_continue)) {
		archive_set_error(a, EIO, "compressing: %s", strerror(errno ? errno : EIO));
		return -1;
	}
	return len;
}

static int tar_close(struct archive *a, void *ctx)
{
	if (compress_to(ctx, NULL, 0, ZSTD_e_end)) {
		archive_set_error(a, EIO, "compressing: %s", strerror(errno ? errno : EIO));
		return ARCHIVE_FATAL;
	}
	return ARCHIVE_OK;
}

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
	w->zc = ZSTD_createCCtx();
	if (!w->a || !w->zc ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel, 3)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->zc, ZSTD_c_checksumFlag, 1)) ||
	    archive_write_set_format_pax_restricted(w->a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(w->a, 1) != ARCHIVE_OK ||
	    archive_write_open(w->a, w, NULL, tar_write, tar_close) != ARCHIVE_OK) {
		snprintf(why, why_cap, "%s: %s", path,
			 w->a && archive_error_string(w->a) ? archive_error_string(w->a) :
							     "cannot start the archive");
		sfarchive_writer__discard(w);
		errno = EIO;
		return NULL;
	}
	return w;
}

/* Read @fd to its end into *@out (malloc'd), its length in *@size. @return 0 or -errno. */
static int slurp(int fd, char **out, off_t *size)
{
	size_t len = 0, cap = 1 << 20;
	char *buf = malloc(cap), *grown;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	while ((n = read(fd, buf + len, cap - len)) > 0) {
		len += n;
		if (len == cap) {
			grown = realloc(buf, cap *= 2);
			if (!grown) {
				free(buf);
				return -ENOMEM;
			}
			buf = grown;
		}
	}
	if (n < 0) {
		free(buf);
		return -errno;
	}
	*out = buf;
	*size = len;
	return 0;
}

int sfarchive_writer__add(struct sfarchive_writer *w, const char *name, const char *src,
			  char *why, size_t why_cap)
{
	struct archive_entry *e = NULL;
	uint64_t left, max;
	struct stat st;
	char buf[65536], *whole = NULL;
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
	/* /proc files say 0 bytes: their size is what a read to the end gives */
	if (!st.st_size && (err = slurp(fd, &whole, &st.st_size))) {
		snprintf(why, why_cap, "%s: %s", src, strerror(-err));
		goto out;
	}
	/* what a reader would refuse (sfarchive.h): said now, not when it is read */
	max = !strcmp(name, SFARCHIVE_KALLSYMS) ? SFARCHIVE_MAX_KALLSYMS :
						   SFARCHIVE_MAX_BYTES - w->bytes;
	if ((uint64_t)st.st_size > max) {
		err = -EFBIG;
		snprintf(why, why_cap, "%s: %lld bytes, more than an archive takes (%llu MiB "
			 "for %s)", src, (long long)st.st_size, (unsigned long long)(max >> 20), name);
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
		ssize_t n = whole ? (ssize_t)left : read(fd, buf, left < sizeof(buf) ? left : sizeof(buf));
		const char *from = whole ? whole + (st.st_size - left) : buf;

		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			snprintf(why, why_cap, "%s: %s", src,
				 n < 0 ? strerror(errno) : "shorter than it was: changed meanwhile");
			goto out;
		}
		if (archive_write_data(w->a, from, n) != n)
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
	free(whole);
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
	ZSTD_freeCCtx(w->zc);
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
	ZSTD_freeCCtx(w->zc);
	outfile__discard(w->out);
	free(w);
}
