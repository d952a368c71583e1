/* SPDX-License-Identifier: BSD-2-Clause */
/* Self-unwind test program in C: known call chains, snapshots written to argv[1]. */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include "libchain.h"
#include "snapshot.h"

/*
 * Snapshots written (tag: expected chain, innermost first):
 *   main:          main
 *   mid:           level2 level1 main
 *   leaf:          leaf level3 level2 level1 main      (captured in a leaf, written by level3)
 *   lib:           chain_step chain_apply via_lib main
 *   callback:      callback chain_step chain_apply via_lib main
 *   callback-deep: cb_inner callback chain_step chain_apply via_lib main
 *   recursion:     recurse x4 main
 *   vla:           vla_frame main                      (a frame with a variable-size stack)
 *   vla-callee:    vla_callee vla_frame main
 *   thread-mid:    level2 level1 thread_main
 *   thread-leaf:   leaf level3 level2 level1 thread_main
 *   noreturn:      fatal check_or_die main              (the return address is past
 *                                                        the end of check_or_die)
 */

/* Opaque to the optimiser, so that results stay data-dependent on calls. */
static volatile int sink;

SFU_SNAP_NOINLINE static int leaf(int x)
{
	SFU_SNAP_FUNC();

	/* no call at all: on AArch64 the return address is still in x30 */
	SFU_SNAP_CAPTURE();
	return x * 3 + 1;
}

SFU_SNAP_NOINLINE static int level3(int x, const char *leaf_tag)
{
	SFU_SNAP_FUNC();
	int r = leaf(x);

	if (leaf_tag)
		sfu_snap__write(leaf_tag);
	return r + x;
}

SFU_SNAP_NOINLINE int level2(int x, const char *mid_tag, const char *leaf_tag)
{
	SFU_SNAP_FUNC();

	if (mid_tag)
		SFU_SNAPSHOT(mid_tag);
	return level3(x + 1, leaf_tag) ^ 5;
}

SFU_SNAP_NOINLINE int level1(int x, const char *mid_tag, const char *leaf_tag)
{
	SFU_SNAP_FUNC();

	return level2(x * 2, mid_tag, leaf_tag) + sink;
}

SFU_SNAP_NOINLINE static int cb_inner(int x)
{
	SFU_SNAP_FUNC();

	SFU_SNAPSHOT("callback-deep");
	return x + 7;
}

/* Called back from libchain.so through a function pointer. */
SFU_SNAP_NOINLINE int callback(int x)
{
	SFU_SNAP_FUNC();

	SFU_SNAPSHOT("callback");
	return cb_inner(x) * 2;
}

SFU_SNAP_NOINLINE static int via_lib(int x)
{
	SFU_SNAP_FUNC();

	/* through the PLT into the shared library */
	return chain_apply(callback, x, "lib") + 1;
}

SFU_SNAP_NOINLINE static int recurse(int n)
{
	SFU_SNAP_FUNC();

	if (n == 0) {
		SFU_SNAPSHOT("recursion");
		return sink;
	}
	return recurse(n - 1) + n;
}

SFU_SNAP_NOINLINE static int vla_callee(const char *buf, int n)
{
	SFU_SNAP_FUNC();

	SFU_SNAPSHOT("vla-callee");
	return buf[n / 2];
}

/* The stack pointer moves by a run-time amount, so the CFA must come from the frame pointer. */
SFU_SNAP_NOINLINE static int vla_frame(int n)
{
	SFU_SNAP_FUNC();
	char buf[n];

	memset(buf, n, sizeof(buf));
	SFU_SNAPSHOT("vla");
	return vla_callee(buf, n) + buf[n - 1];
}

static jmp_buf recover;

SFU_SNAP_NOINLINE __attribute__((noreturn)) static void fatal(const char *why)
{
	SFU_SNAP_FUNC();

	SFU_SNAPSHOT("noreturn");
	sink = (int)strlen(why);
	longjmp(recover, 1);
}

/* Ends in a call to a noreturn function: its return address is the next function's start. */
SFU_SNAP_NOINLINE __attribute__((noreturn)) static void check_or_die(int x)
{
	SFU_SNAP_FUNC();
	char why[32];

	snprintf(why, sizeof(why), "bad value %d", x);
	fatal(why);
}

SFU_SNAP_NOINLINE static void *thread_main(void *arg)
{
	SFU_SNAP_FUNC();
	int x = (int)(long)arg;

	if (sfu_snap__thread_init())
		return NULL;
	sink = level1(x, "thread-mid", "thread-leaf");
	sfu_snap__thread_fini();
	return NULL;
}

int main(int argc, char **argv)
{
	SFU_SNAP_FUNC();
	pthread_t thread;
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTPUT-DIR\n", argv[0]);
		return 2;
	}
	if (sfu_snap__init(argv[1]))
		return 1;

	SFU_SNAPSHOT("main");
	sink = level1(argc, "mid", "leaf");
	sink = via_lib(argc);
	sink = recurse(3);
	sink = vla_frame(argc + 40);

	unsigned depth = sfu_snap_self.depth;
	if (!setjmp(recover))
		check_or_die(argc);
	/* longjmp skipped the pops of check_or_die and fatal */
	sfu_snap_self.depth = depth;

	err = pthread_create(&thread, NULL, thread_main, (void *)(long)argc);
	if (err) {
		fprintf(stderr, "pthread_create: %s\n", strerror(err));
		return 1;
	}
	pthread_join(thread, NULL);

	sfu_snap__thread_fini();
	return sfu_snap__status();
}
