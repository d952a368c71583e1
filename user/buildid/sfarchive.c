/* SPDX-License-Identifier: BSD-2-Clause */
/* Reading sfprof archives (sfarchive.h) under the rules of their members, and unpacking them. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "sfarchive.h"
#include "common/hmap.h"

#define PROFILE_MAGIC_BYTES "\x89SFPROF\n"
#define ELF_MAGIC_BYTES "\x7f" "ELF"

/* The most members an archive names: a file each, two per binary a profile hit. */
#define MAX_MEMBERS (1u << 18)

/* Free space an unpack leaves its file system: a sixteenth of it, at most this. */
#define UNPACK_MARGIN (64ull << 20)

/* --- reading --- */

int sfarchive_is(const char *path)
{
	uint8_t head[512];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = pread(fd, head, sizeof(head), 0);
	close(fd);
	if (n < 0)
		return -errno;
	if (n >= 8 && !memcmp(head, PROFILE_MAGIC_BYTES, 8))
		return 0;
	if (n >= 4 && !memcmp(head, "\x28\xb5\x2f\xfd", 4))
		return 1;	/* zstd: what sfprof archive writes */
	return n >= 262 && !memcmp(head + 257, "ustar", 5);	/* an unpacked and re-packed tar */
}

/* Name a member by what it holds; "./" removed. */
static enum sfarchive_kind classify(const char *name, struct sfarchive_member *m)
{
	const char *xx, *rest;
	char dir[3];
	bool debug;

	if (!strcmp(name, SFARCHIVE_PROFILE))
		return SFARCHIVE_PROFILE_FILE;
	if (!strcmp(name, SFARCHIVE_KALLSYMS))
		return SFARCHIVE_KALLSYMS_FILE;
	if (strncmp(name, BUILDID_TREE "/", strlen(BUILDID_TREE) + 1))
		return SFARCHIVE_OTHER;
	xx = name + strlen(BUILDID_TREE) + 1;
	rest = strchr(xx, '/');
	if (!rest || rest - xx != 2 || strchr(rest + 1, '/'))
		return SFARCHIVE_OTHER;
	memcpy(dir, xx, 2);
	dir[2] = '\0';
	m->build_id_len = buildid_parse_name(dir, rest + 1, m->build_id, &debug);
	if (!m->build_id_len)
		return SFARCHIVE_OTHER;
	return debug ? SFARCHIVE_DEBUG : SFARCHIVE_BINARY;
}

static const char *archive_why(struct archive *a)
{
	return archive_error_string(a) ? archive_error_string(a) : "unreadable";
}

/* @n bytes as a person reads them, in @buf. */
static const char *human(uint64_t n, char *buf, size_t cap)
{
	if (n >= 1ull << 30)
		snprintf(buf, cap, "%.1f GiB", n / 1073741824.0);
	else if (n >= 1ull << 20)
		snprintf(buf, cap, "%.1f MiB", n / 1048576.0);
	else if (n >= 1ull << 10)
		snprintf(buf, cap, "%.1f KiB", n / 1024.0);
	else
		snprintf(buf, cap, "%llu bytes", (unsigned long long)n);
	return buf;
}

/* The bytes a member of @kind starts with, their count in *@len; NULL for none. */
static const char *member_magic(enum sfarchive_kind kind, size_t *len)
{
	switch (kind) {
	case SFARCHIVE_PROFILE_FILE:
		*len = sizeof(PROFILE_MAGIC_BYTES) - 1;
		return PROFILE_MAGIC_BYTES;
	case SFARCHIVE_BINARY:
	case SFARCHIVE_DEBUG:
		*len = sizeof(ELF_MAGIC_BYTES) - 1;
		return ELF_MAGIC_BYTES;
	default:
		*len = 0;
		return NULL;
	}
}

static void say_not_magic(const struct sfarchive_member *m, char *why, size_t why_cap)
{
	if (m->kind == SFARCHIVE_PROFILE_FILE)
		snprintf(why, why_cap, "its " SFARCHIVE_PROFILE " is not an sfprof profile");
	else
		snprintf(why, why_cap, "member %.200s is not an ELF file", m->name);
}

/*
 * Read one member's data to @sink, checked against what its header says
 * and what its kind starts with, before any of it reaches the sink.
 */
static int read_data(struct archive *a, const struct sfarchive_member *m,
		     const struct sfarchive_sink *sink, char *why, size_t why_cap)
{
	size_t magic_len, head_len = 0;
	const char *magic = member_magic(m->kind, &magic_len);
	uint8_t head[8];
	uint64_t got = 0;
	const void *buf;
	la_int64_t off;
	size_t len;
	int err, r;

	while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK ||
	       r == ARCHIVE_WARN) {
		if (off < 0 || (uint64_t)off != got) {
			snprintf(why, why_cap, "member %.200s has holes: refused", m->name);
			return -EBADMSG;
		}
		if (len > m->size - got) {
			snprintf(why, why_cap, "member %.200s holds more than the %llu bytes its "
				 "header says", m->name, (unsigned long long)m->size);
			return -EBADMSG;
		}
		if (head_len < magic_len) {
			size_t n = len < magic_len - head_len ? len : magic_len - head_len;

			memcpy(head + head_len, buf, n);
			head_len += n;
			if (head_len == magic_len && memcmp(head, magic, magic_len)) {
				say_not_magic(m, why, why_cap);
				return -EBADMSG;
			}
		}
		got += len;
		if (sink->data && len && (err = sink->data(sink->ctx, buf, len))) {
			snprintf(why, why_cap, "%.200s: %s", m->name, strerror(-err));
			return err;
		}
	}
	if (r != ARCHIVE_EOF) {
		snprintf(why, why_cap, "member %.200s: %s", m->name, archive_why(a));
		return -EBADMSG;
	}
	if (got != m->size) {
		snprintf(why, why_cap, "member %.200s holds %llu bytes, its header says %llu",
			 m->name, (unsigned long long)got, (unsigned long long)m->size);
		return -EBADMSG;
	}
	/* a profile, not another archive: a reader opens it as one, never nests */
	if (head_len < magic_len) {
		say_not_magic(m, why, why_cap);
		return -EBADMSG;
	}
	return 0;
}

/* Read every member of @a, telling @sink those it takes. */
static int read_members(struct archive *a, const struct sfarchive_sink *sink, char *why,
			size_t why_cap)
{
	struct hmap *seen = hmap__new(HMAP_BYTES);
	struct archive_entry *e;
	uint64_t total = 0;
	unsigned members = 0;
	bool profile = false;
	char h1[32], h2[32];
	int err = 0, r;

	if (!seen) {
		snprintf(why, why_cap, "out of memory");
		return -ENOMEM;
	}
	while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
		struct sfarchive_member m = { 0 };
		const char *name = archive_entry_pathname(e);
		uint8_t key[1 + BUILDID_MAX];
		uint64_t *v;

		if (!name) {
			err = -EBADMSG;
			snprintf(why, why_cap, "a member without a name");
			goto out;
		}
		while (name[0] == '.' && name[1] == '/')
			name += 2;
		if (archive_entry_filetype(e) == AE_IFDIR)
			continue;	/* the tree's directories are made as their files need them */
		if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e) ||
		    archive_entry_symlink(e)) {
			err = -EBADMSG;
			snprintf(why, why_cap, "member %.200s is not a regular file", name);
			goto out;
		}
		if (!archive_entry_size_is_set(e) || archive_entry_size(e) < 0) {
			err = -EBADMSG;
			snprintf(why, why_cap, "member %.200s has no size", name);
			goto out;
		}
		m.size = archive_entry_size(e);
		/* skipped members are read through too (a zstd stream does not seek) */
		if (m.size > SFARCHIVE_MAX_BYTES - total) {
			err = -EFBIG;
			snprintf(why, why_cap, "members of more than %s in all: refused",
				 human(SFARCHIVE_MAX_BYTES, h1, sizeof(h1)));
			goto out;
		}
		total += m.size;
		m.kind = classify(name, &m);
		if (m.kind == SFARCHIVE_OTHER)
			continue;	/* an archive of a later sfprof: what this one does not know */
		m.name = name;
		if (++members > MAX_MEMBERS) {
			err = -EFBIG;
			snprintf(why, why_cap, "more than %u members: refused", MAX_MEMBERS);
			goto out;
		}
		if (m.kind == SFARCHIVE_KALLSYMS_FILE && m.size > SFARCHIVE_MAX_KALLSYMS) {
			err = -EFBIG;
			snprintf(why, why_cap, "member " SFARCHIVE_KALLSYMS " of %s, more than a "
				 "kallsyms can be (%s): refused", human(m.size, h1, sizeof(h1)),
				 human(SFARCHIVE_MAX_KALLSYMS, h2, sizeof(h2)));
			goto out;
		}
		/* written whole, at the size its header gives: a hole is a size that lies */
		if (archive_entry_sparse_count(e) > 0) {
			err = -EBADMSG;
			snprintf(why, why_cap, "member %.200s has holes: refused", name);
			goto out;
		}
		key[0] = m.kind;
		memcpy(key + 1, m.build_id, m.build_id_len);
		if ((err = hmap__entry(seen, key, 1 + m.build_id_len, &v, NULL))) {
			snprintf(why, why_cap, "out of memory");
			goto out;
		}
		if (*v) {
			err = -EBADMSG;
			snprintf(why, why_cap, "member %.200s is there twice", name);
			goto out;
		}
		*v = 1;
		profile |= m.kind == SFARCHIVE_PROFILE_FILE;
		if (sink->begin && (err = sink->begin(sink->ctx, &m))) {
			snprintf(why, why_cap, "%.200s: %s", name, strerror(-err));
			goto out;
		}
		if ((err = read_data(a, &m, sink, why, why_cap)))
			goto out;
		if (sink->end && (err = sink->end(sink->ctx))) {
			snprintf(why, why_cap, "%.200s: %s", name, strerror(-err));
			goto out;
		}
	}
	if (r != ARCHIVE_EOF) {
		err = -EBADMSG;
		snprintf(why, why_cap, "damaged: %s", archive_why(a));
	} else if (!profile) {
		err = -EBADMSG;
		snprintf(why, why_cap, "no " SFARCHIVE_PROFILE " in it: not an sfprof archive");
	}
out:
	hmap__free(seen);
	return err;
}

static struct archive *reader_new(void)
{
	struct archive *a = archive_read_new();

	/* only what sfprof writes: fewer of libarchive's parsers for a hostile file to reach */
	if (a && (archive_read_support_filter_zstd(a) != ARCHIVE_OK ||
		  archive_read_support_filter_none(a) != ARCHIVE_OK ||
		  archive_read_support_format_tar(a) != ARCHIVE_OK)) {
		archive_read_free(a);
		a = NULL;
	}
	return a;
}

int sfarchive_read_memory(const void *data, size_t size, const struct sfarchive_sink *sink,
			  char *why, size_t why_cap)
{
	struct archive *a = reader_new();
	int err;

	if (!a) {
		snprintf(why, why_cap, "out of memory");
		return -ENOMEM;
	}
	if (archive_read_open_memory(a, data, size) != ARCHIVE_OK) {
		snprintf(why, why_cap, "not an sfprof archive: %s", archive_why(a));
		archive_read_free(a);
		return -EBADMSG;
	}
	err = read_members(a, sink, why, why_cap);
	archive_read_free(a);
	return err;
}

/* Unpacking: each member into the directory, made new. */
struct unpack {
	int dirfd;
	int fd;
	const char *dir;	/* where it is made, for messages */
	char why[512];	/* what the sink saw, said better than an errno */
};

/* Whether @m fits in the directory's file system, a margin left. @return 0 or -ENOSPC. */
static int unpack_room(struct unpack *u, const struct sfarchive_member *m)
{
	uint64_t avail, margin;
	struct statvfs fs;
	char h1[32], h2[32], h3[32];

	if (fstatvfs(u->dirfd, &fs))
		return -errno;
	avail = (uint64_t)fs.f_bavail * fs.f_frsize;
	margin = (uint64_t)fs.f_blocks * fs.f_frsize / 16;
	if (margin > UNPACK_MARGIN)
		margin = UNPACK_MARGIN;
	if (m->size <= avail && avail - m->size >= margin && (!fs.f_files || fs.f_favail > 2))
		return 0;
	/* what to do about it first: a path in front may leave little of the message */
	snprintf(u->why, sizeof(u->why), "member of %s refused: %s free in %s, %s of it kept; "
		 "TMPDIR names where to unpack (%.200s)", human(m->size, h1, sizeof(h1)),
		 human(avail, h2, sizeof(h2)), u->dir, human(margin, h3, sizeof(h3)), m->name);
	return -ENOSPC;
}

static int unpack_begin(void *ctx, const struct sfarchive_member *m)
{
	struct unpack *u = ctx;
	char sub[sizeof(BUILDID_TREE) + 4];
	int err;

	if ((err = unpack_room(u, m)))
		return err;
	if (m->kind == SFARCHIVE_BINARY || m->kind == SFARCHIVE_DEBUG) {
		snprintf(sub, sizeof(sub), BUILDID_TREE "/%.2s", m->name + strlen(BUILDID_TREE) + 1);
		if ((mkdirat(u->dirfd, BUILDID_TREE, 0700) && errno != EEXIST) ||
		    (mkdirat(u->dirfd, sub, 0700) && errno != EEXIST))
			return -errno;
	}
	/* names checked by classify(): no "..", no absolute path, at most two levels down */
	u->fd = openat(u->dirfd, m->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		       0600);
	return u->fd < 0 ? -errno : 0;
}

static int unpack_data(void *ctx, const void *buf, size_t len)
{
	struct unpack *u = ctx;
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(u->fd, p, len);

		if (n < 0 && (errno == ENOSPC || errno == EDQUOT)) {
			/* filled by others since the member began */
			snprintf(u->why, sizeof(u->why), "no space left in %s: refused; TMPDIR "
				 "names where to unpack", u->dir);
			return -ENOSPC;
		}
		if (n < 0)
			return -errno;
		p += n;
		len -= n;
	}
	return 0;
}

static int unpack_end(void *ctx)
{
	struct unpack *u = ctx;
	int err = close(u->fd) ? -errno : 0;

	u->fd = -1;
	return err;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

void sfarchive_remove(const char *dir)
{
	if (dir)
		nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int sfarchive_unpack(const char *path, char **dir, char *why, size_t why_cap)
{
	static const struct sfarchive_sink sink_ops = { unpack_begin, unpack_data, unpack_end, NULL };
	struct sfarchive_sink sink = sink_ops;
	struct unpack u = { .fd = -1 };
	const char *tmp = getenv("TMPDIR");
	struct archive *a = NULL;
	char *made;
	int fd, err;

	*dir = NULL;
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	if (asprintf(&made, "%s/sfprof-archive-XXXXXX", tmp) < 0) {
		snprintf(why, why_cap, "out of memory");
		return -ENOMEM;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		snprintf(why, why_cap, "%s: %s", path, strerror(errno));
		free(made);
		return err;
	}
	if (!mkdtemp(made)) {
		err = -errno;
		snprintf(why, why_cap, "%s: %s", made, strerror(errno));
		free(made);
		close(fd);
		return err;
	}
	u.dirfd = open(made, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	a = reader_new();
	if (u.dirfd < 0 || !a) {
		err = u.dirfd < 0 ? -errno : -ENOMEM;
		snprintf(why, why_cap, "%s: %s", made, strerror(-err));
		goto out;
	}
	if (archive_read_open_fd(a, fd, 65536) != ARCHIVE_OK) {
		err = -EBADMSG;
		snprintf(why, why_cap, "%s: not an sfprof archive: %s", path, archive_why(a));
		goto out;
	}
	sink.ctx = &u;
	u.dir = tmp;
	err = read_members(a, &sink, why, why_cap);
	if (err) {
		char inner[512];

		snprintf(inner, sizeof(inner), "%s", u.why[0] ? u.why : why);
		snprintf(why, why_cap, "%s: %s", path, inner);
	}
out:
	if (u.fd >= 0)
		close(u.fd);
	if (u.dirfd >= 0)
		close(u.dirfd);
	if (a)
		archive_read_free(a);
	close(fd);
	if (err) {
		sfarchive_remove(made);
		free(made);
	} else {
		*dir = made;
	}
	return err;
}
