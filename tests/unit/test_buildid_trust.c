/* SPDX-License-Identifier: BSD-2-Clause */
/* Which build-ID trees and entries are trusted: owners, modes and links along the way, and the derived tables' directory. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "buildid/buildid.h"
#include "sfunwind.h"

/* A uid no one has: what another user owns */
#define OTHER_UID 54321

struct fixture {
	char top[64];	/* a new directory under /tmp, owner-only */
};

static void path_in(char *out, size_t cap, const struct fixture *f, const char *rel)
{
	snprintf(out, cap, "%s/%s", f->top, rel);
}

static void make_dir(const struct fixture *f, const char *rel, mode_t mode)
{
	char p[256];

	path_in(p, sizeof(p), f, rel);
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(chmod(p, mode), 0);	/* past the umask */
}

static void make_file(const struct fixture *f, const char *rel, mode_t mode)
{
	char p[256];
	int fd;

	path_in(p, sizeof(p), f, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void make_link(const struct fixture *f, const char *rel, const char *target)
{
	char p[256];

	path_in(p, sizeof(p), f, rel);
	assert_int_equal(symlink(target, p), 0);
}

static void give_away(const struct fixture *f, const char *rel)
{
	char p[256];

	path_in(p, sizeof(p), f, rel);
	assert_int_equal(lchown(p, OTHER_UID, OTHER_UID), 0);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->top, sizeof(f->top), "/tmp/sfprof-trust-XXXXXX");
	assert_non_null(mkdtemp(f->top));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->top);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* buildid_tree_trust() of @rel, expected to return @want with @said in its reason. */
static void expect_tree(const struct fixture *f, const char *rel, bool create, int want,
			const char *said)
{
	char p[256], why[1024] = "";
	int got;

	path_in(p, sizeof(p), f, rel);
	got = buildid_tree_trust(p, create, why, sizeof(why));
	if (got != want || (said && !strstr(why, said)))
		fail_msg("%s: %d (%s), want %d with \"%s\"", rel, got, why, want, said ? said : "");
}

static void expect_entry(const struct fixture *f, const char *tree, const char *entry, int want,
			 const char *said)
{
	char t[256], e[256], why[1024] = "";
	int got;

	path_in(t, sizeof(t), f, tree);
	path_in(e, sizeof(e), f, entry);
	got = buildid_entry_trust(t, e, why, sizeof(why));
	if (got != want || (said && !strstr(why, said)))
		fail_msg("%s: %d (%s), want %d with \"%s\"", entry, got, why, want, said ? said : "");
}

/* A tree made where nothing was: owner-only, trusted; then what makes it untrusted. */
static void test_tree(void **state)
{
	struct fixture *f = *state;
	char p[256];
	struct stat st;

	expect_tree(f, "home/.cache/sfprof", false, -ENOENT, NULL);
	expect_tree(f, "home-made/.cache/sfprof", true, 0, NULL);
	path_in(p, sizeof(p), f, "home-made/.cache/sfprof/.build-id");
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700);

	/* a sticky world-writable directory on the way (/tmp) is fine; as the tree, not */
	make_dir(f, "sticky", 01777);
	expect_tree(f, "sticky/sfprof", true, 0, NULL);
	expect_tree(f, "sticky", false, -EPERM, "writable by others (mode 1777)");

	/* group-writable on the way, or the tree's own */
	make_dir(f, "grp", 0770);
	expect_tree(f, "grp/sfprof", true, -EPERM, "grp: writable by its group (mode 0770)");
	make_dir(f, "own", 0700);
	make_dir(f, "own/sfprof", 0700);
	make_dir(f, "own/sfprof/.build-id", 0722);
	expect_tree(f, "own/sfprof", false, -EPERM, ".build-id: writable by others");

	/* a file where a directory should be */
	make_file(f, "file", 0600);
	expect_tree(f, "file/sfprof", true, -ENOTDIR, NULL);
}

/* Links: followed on the way when ours, never as the tree's own directories. */
static void test_links(void **state)
{
	struct fixture *f = *state;
	char target[256];

	make_dir(f, "real", 0700);
	make_dir(f, "real/sfprof", 0700);
	make_dir(f, "real/sfprof/.build-id", 0700);
	path_in(target, sizeof(target), f, "real");
	make_link(f, "cachehome", target);
	expect_tree(f, "cachehome/sfprof", false, 0, NULL);
	make_link(f, "real/linked", "sfprof");
	expect_tree(f, "real/linked", false, -EPERM, "linked: a symbolic link");

	/* an XX directory that is a link, an entry that is one */
	make_dir(f, "elsewhere", 0700);
	make_file(f, "elsewhere/0102", 0400);
	path_in(target, sizeof(target), f, "elsewhere");
	make_link(f, "real/sfprof/.build-id/aa", target);
	expect_entry(f, "real/sfprof", "real/sfprof/.build-id/aa/0102", -EPERM,
		     ".build-id/aa: a symbolic link");
	make_dir(f, "real/sfprof/.build-id/bb", 0700);
	path_in(target, sizeof(target), f, "elsewhere/0102");
	make_link(f, "real/sfprof/.build-id/bb/0102", target);
	expect_entry(f, "real/sfprof", "real/sfprof/.build-id/bb/0102", -EPERM, "a symbolic link");
	make_file(f, "real/sfprof/.build-id/bb/0304", 0400);
	expect_entry(f, "real/sfprof", "real/sfprof/.build-id/bb/0304", 0, NULL);
	make_file(f, "real/sfprof/.build-id/bb/0506", 0646);
	expect_entry(f, "real/sfprof", "real/sfprof/.build-id/bb/0506", -EPERM, "writable by others");
	expect_entry(f, "real/sfprof", "real/sfprof/.build-id/bb/0708", -ENOENT, NULL);
}

/* Someone else's: a directory on the way, the tree, a link, an entry (root only: chown). */
static void test_owners(void **state)
{
	struct fixture *f = *state;
	char want[96], target[256];

	if (geteuid()) {
		print_message("needs root to give files to another uid: not run\n");
		skip();
	}
	snprintf(want, sizeof(want), "owned by uid %d, not by root", OTHER_UID);
	make_dir(f, "theirs", 0755);
	give_away(f, "theirs");
	expect_tree(f, "theirs/.cache/sfprof", false, -EPERM, want);
	expect_tree(f, "theirs/.cache/sfprof", true, -EPERM, "theirs: owned by uid");
	make_dir(f, "mine", 0755);
	make_dir(f, "mine/sfprof", 0700);
	make_dir(f, "mine/sfprof/.build-id", 0700);
	make_dir(f, "mine/sfprof/.build-id/cc", 0700);
	make_file(f, "mine/sfprof/.build-id/cc/0102", 0555);
	give_away(f, "mine/sfprof/.build-id/cc/0102");
	expect_entry(f, "mine/sfprof", "mine/sfprof/.build-id/cc/0102", -EPERM, want);
	path_in(target, sizeof(target), f, "mine");
	make_link(f, "theirlink", target);
	give_away(f, "theirlink");
	expect_tree(f, "theirlink/sfprof", false, -EPERM, "a symbolic link owned by uid");
	make_dir(f, "mine/theirs-tree", 0700);
	give_away(f, "mine/theirs-tree");
	expect_tree(f, "mine/theirs-tree", false, -EPERM, want);
}

/* The derived tables' directory (libsfunwind's own check): the same directories refused. */
static void test_derived_tables(void **state)
{
	struct fixture *f = *state;
	struct sfu_cache *cache = sfu_cache__new();
	char p[256];

	assert_non_null(cache);
	make_dir(f, "ok", 0700);
	path_in(p, sizeof(p), f, "ok");
	assert_int_equal(sfu_cache__set_dir(cache, p), 0);
	path_in(p, sizeof(p), f, "ok/not-yet");
	assert_int_equal(sfu_cache__set_dir(cache, p), 0);	/* checked when a table is stored */
	make_dir(f, "open", 0777);
	path_in(p, sizeof(p), f, "open");
	assert_int_equal(sfu_cache__set_dir(cache, p), -EPERM);
	make_dir(f, "open/sub", 0700);
	path_in(p, sizeof(p), f, "open/sub");
	assert_int_equal(sfu_cache__set_dir(cache, p), -EPERM);
	sfu_cache__free(cache);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_links, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owners, setup, teardown),
		cmocka_unit_test_setup_teardown(test_derived_tables, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
