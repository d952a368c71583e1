// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: the input as an sfprof archive (sfprof archive's output, which
 * report, script, export and buildid-list read in place). First read from
 * memory, the members checked against the archive's rules as they come; then
 * unpacked from a file as report unpacks it, and the directory checked: only
 * the members' names inside it, and nothing left of it when unpacking fails.
 * Every member told holds the bytes its header says, no more (sfarchive.h).
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buildid/sfarchive.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_archive: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

struct check {
	bool open;
	unsigned members;
	uint64_t bytes, declared;
};

static int check_begin(void *ctx, const struct sfarchive_member *m)
{
	struct check *c = ctx;
	char path[256];

	if (c->open)
		broken("a member began before the last one ended");
	if (m->kind == SFARCHIVE_OTHER || !m->name)
		broken("a member of no kind was told");
	if (strstr(m->name, "..") || m->name[0] == '/')
		broken("member name '%s' leaves the directory", m->name);
	if (m->kind == SFARCHIVE_BINARY || m->kind == SFARCHIVE_DEBUG) {
		if (buildid_path(path, sizeof(path), ".", m->build_id, m->build_id_len,
				 m->kind == SFARCHIVE_DEBUG ? BUILDID_DEBUG_SUFFIX : NULL) ||
		    strcmp(path + 2, m->name))
			broken("member '%s' is not named by its build ID", m->name);
	}
	c->open = true;
	c->members++;
	c->bytes = 0;
	c->declared = m->size;
	return 0;
}

static int check_data(void *ctx, const void *buf, size_t len)
{
	struct check *c = ctx;

	if (!c->open || !buf)
		broken("data outside a member");
	c->bytes += len;
	if (c->bytes > c->declared)
		broken("a member holds more than its header's %llu bytes",
		       (unsigned long long)c->declared);
	return 0;
}

static int check_end(void *ctx)
{
	struct check *c = ctx;

	if (!c->open)
		broken("a member ended twice");
	if (c->bytes != c->declared)
		broken("a member ended at %llu bytes, its header says %llu",
		       (unsigned long long)c->bytes, (unsigned long long)c->declared);
	c->open = false;
	return 0;
}

/* Every name in the unpacked directory is a member's. */
static void check_tree(const char *dir)
{
	char path[4200];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		broken("unpacked directory %s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st))
			broken("%s: %s", path, strerror(errno));
		if (!strcmp(de->d_name, BUILDID_TREE) && S_ISDIR(st.st_mode))
			continue;
		if (!S_ISREG(st.st_mode) || (strcmp(de->d_name, SFARCHIVE_PROFILE) &&
					     strcmp(de->d_name, SFARCHIVE_KALLSYMS)))
			broken("unpacked %s is not a member's", path);
	}
	closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct check c = { 0 };
	struct sfarchive_sink sink = { check_begin, check_data, check_end, &c };
	char why[512], path[64], *dir = NULL;
	int err, unpacked;

	why[0] = '\0';
	err = sfarchive_read_memory(data, size, &sink, why, sizeof(why));
	if (err && !why[0])
		broken("error %d without a reason", err);
	if (!err && c.open)
		broken("the last member never ended");

	/* unpacked from a file, as a reader unpacks -i ARCHIVE */
	if (fd < 0 && (fd = memfd_create("archive", MFD_CLOEXEC)) < 0)
		abort();
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	unpacked = sfarchive_unpack(path, &dir, why, sizeof(why));
	if (!unpacked != !err && err != -ENOMEM && unpacked != -ENOSPC)
		broken("read %d, unpacked %d", err, unpacked);
	if (unpacked && dir)
		broken("a failed unpack returned a directory");
	if (!unpacked) {
		check_tree(dir);
		sfarchive_remove(dir);
		if (!access(dir, F_OK))
			broken("%s is left after sfarchive_remove()", dir);
		free(dir);
	}
	return 0;
}
