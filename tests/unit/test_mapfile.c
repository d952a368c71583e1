/* SPDX-License-Identifier: BSD-2-Clause */
/* The file behind a mapping (user/util/mapfile.c): the order of the places, and what mapfile__open() refuses. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/mapfile.h"

struct fixture {
	char dir[64];		/* a new directory under /tmp */
	char file[128];		/* a regular file in it, a page long */
	void *map;		/* the file mapped, a page */
	uint64_t start, end;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char page[4096];
	int fd;

	if (!f)
		return -1;
	strcpy(f->dir, "/tmp/sfprof-mapfile-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->file, sizeof(f->file), "%s/lib.so", f->dir);
	fd = open(f->file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	memset(page, 0x5a, sizeof(page));
	if (fd < 0 || write(fd, page, sizeof(page)) != (ssize_t)sizeof(page))
		return -1;
	f->map = mmap(NULL, sizeof(page), PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (f->map == MAP_FAILED)
		return -1;
	f->start = (uintptr_t)f->map;
	f->end = f->start + sizeof(page);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	munmap(f->map, f->end - f->start);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd))
		return -1;
	free(f);
	return 0;
}

#define MAX_SEEN 4

struct seen {
	enum mapfile_via via[MAX_SEEN];
	char place[MAX_SEEN][4200];
	int n, stop_at, stop_with;
};

static int record(void *ctx, enum mapfile_via via, const char *place)
{
	struct seen *s = ctx;

	assert_true(s->n < MAX_SEEN);
	s->via[s->n] = via;
	snprintf(s->place[s->n], sizeof(s->place[0]), "%s", place);
	return ++s->n == s->stop_at ? s->stop_with : 0;
}

/* Same file: what the place opened is what the fixture mapped. */
static void assert_same_file(int fd, const char *path)
{
	struct stat a, b;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(stat(path, &b), 0);
	assert_int_equal(a.st_dev, b.st_dev);
	assert_int_equal(a.st_ino, b.st_ino);
}

static void test_order(void **state)
{
	struct fixture *f = *state;
	struct seen s = { .stop_at = -1 };
	char want[4200];
	int pid = getpid();

	assert_int_equal(mapfile__each(pid, f->start, f->end, "/usr/lib/x.so", record, &s), -ENOENT);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.via[0], MAPFILE_MAPPED);
	snprintf(want, sizeof(want), "/proc/%d/map_files/%llx-%llx", pid,
		 (unsigned long long)f->start, (unsigned long long)f->end);
	assert_string_equal(s.place[0], want);
	assert_int_equal(s.via[1], MAPFILE_IN_ROOT);
	snprintf(want, sizeof(want), "/proc/%d/root/usr/lib/x.so", pid);
	assert_string_equal(s.place[1], want);
	assert_int_equal(s.via[2], MAPFILE_HERE);
	assert_string_equal(s.place[2], "/usr/lib/x.so");
}

/* What the callback returns to stop is what mapfile__each() returns; nothing after it is tried. */
static void test_stop(void **state)
{
	struct fixture *f = *state;
	struct seen s = { .stop_at = 2, .stop_with = -ENOSPC };

	assert_int_equal(mapfile__each(getpid(), f->start, f->end, "/a", record, &s), -ENOSPC);
	assert_int_equal(s.n, 2);
	memset(&s, 0, sizeof(s));
	s.stop_at = 1;
	s.stop_with = 7;
	assert_int_equal(mapfile__each(getpid(), f->start, f->end, "/a", record, &s), 7);
	assert_int_equal(s.n, 1);
}

/* No path, a relative one or an empty range: only the places that can name the file. */
static void test_partial(void **state)
{
	struct fixture *f = *state;
	struct seen s = { .stop_at = -1 };

	assert_int_equal(mapfile__each(getpid(), f->start, f->end, NULL, record, &s), -ENOENT);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.via[0], MAPFILE_MAPPED);
	memset(&s, 0, sizeof(s));
	s.stop_at = -1;
	assert_int_equal(mapfile__each(getpid(), f->start, f->end, "[vdso]", record, &s), -ENOENT);
	assert_int_equal(s.n, 1);
	memset(&s, 0, sizeof(s));
	s.stop_at = -1;
	assert_int_equal(mapfile__each(getpid(), 0, 0, "/a", record, &s), -ENOENT);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.via[0], MAPFILE_IN_ROOT);
}

/* A path too long for PATH_MAX is never cut to one that names another file. */
static void test_too_long(void **state)
{
	struct fixture *f = *state;
	struct seen s = { .stop_at = -1 };
	char *path = malloc(PATH_MAX + 2);

	assert_non_null(path);
	memset(path, 'a', PATH_MAX + 1);
	path[0] = '/';
	path[PATH_MAX + 1] = '\0';
	assert_int_equal(mapfile__each(getpid(), f->start, f->end, path, record, &s), -ENOENT);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.via[0], MAPFILE_MAPPED);
	free(path);
}

static void test_open_mapped(void **state)
{
	struct fixture *f = *state;
	int fd;

	/* the mapped file even when its path is gone */
	fd = mapfile__open(getpid(), f->start, f->end, "/nonexistent/lib.so");
	assert_same_file(fd, f->file);
	close(fd);
	/* unmapped range: through the root, then here */
	fd = mapfile__open(getpid(), f->start + 4096, f->end + 4096, f->file);
	assert_same_file(fd, f->file);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	assert_int_equal(mapfile__open(getpid(), 0, 0, "/nonexistent/lib.so"), -ENOENT);
}

/* A symlink at the path (the kernel's path of a mapping names none) or a device: not opened. */
static void test_open_refused(void **state)
{
	struct fixture *f = *state;
	char link[160];

	snprintf(link, sizeof(link), "%s/link.so", f->dir);
	assert_int_equal(symlink(f->file, link), 0);
	assert_int_equal(mapfile__open(getpid(), 0, 0, link), -ENOENT);
	assert_true(mapfile__open_path(link, 0) == -ELOOP);
	assert_true(mapfile__open_path(link, 1) >= 0 || !"a link is followed when asked");
	assert_int_equal(mapfile__open(getpid(), 0, 0, "/dev/null"), -ENOENT);
	assert_int_equal(mapfile__open_path("/dev/null", 1), -EINVAL);
	assert_int_equal(unlink(link), 0);
}

/*
 * A process in a chroot whose path crosses an absolute symlink: resolved in
 * its root (RESOLVE_IN_ROOT), where /proc/PID/root/PATH would follow the
 * link into ours and find nothing, or another file.
 */
static void test_open_in_root(void **state)
{
	struct fixture *f = *state;
	char p[256], want[256];
	int fd, status, ready[2];
	pid_t child;
	char c;

	if (geteuid() != 0) {
		print_message("not root: chroot is needed; case skipped\n");
		skip();
	}
	snprintf(p, sizeof(p), "%s/real", f->dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(want, sizeof(want), "%s/real/lib.so", f->dir);
	fd = open(want, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/d", f->dir);
	assert_int_equal(symlink("/real", p), 0);	/* absolute: right only inside the root */
	assert_int_equal(pipe(ready), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		close(ready[0]);
		if (chroot(f->dir) || chdir("/"))
			_exit(1);
		(void)!write(ready[1], "r", 1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	/* bounded: the child writes or exits at once */
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	fd = mapfile__open(child, 0, 0, "/d/lib.so");
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_same_file(fd, want);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partial, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_long, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_mapped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_in_root, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
