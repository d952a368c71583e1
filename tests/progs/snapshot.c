/* SPDX-License-Identifier: BSD-2-Clause */
/* Self-unwind snapshots: per-thread setup and the file writer (format in snapshot.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "read_whole.h"
#include "snapshot.h"

__thread struct sfu_snap_thread sfu_snap_self;

static char out_dir[PATH_MAX];
static int failed;

static int fail(int err, const char *what, const char *detail)
{
	fprintf(stderr, "snapshot: %s%s%s: %s\n", what, detail ? " " : "", detail ? detail : "",
		strerror(-err));
	failed = 1;
	return err;
}

static uint64_t current_sp(void)
{
	uint64_t sp;

#if SFU_SNAP_ARCH == SFU_SNAP_ARCH_X86_64
	__asm__ volatile("movq %%rsp, %0" : "=r"(sp));
#else
	__asm__ volatile("mov %0, sp" : "=r"(sp));
#endif
	return sp;
}

/*
 * The main thread's stack grows on demand, so its top is the end of the
 * mapping that holds the stack pointer (the [stack] line; under qemu-user the
 * guest's own stack mapping, which qemu also names [stack]).
 */
static int main_stack_top(uint64_t *top)
{
	uint64_t sp = current_sp(), start, end;
	char line[512];
	FILE *f;
	int err = -ENOENT;

	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 "-%" SCNx64, &start, &end) != 2)
			continue;
		if (sp >= start && sp < end) {
			*top = end;
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

static int thread_stack_top(uint64_t *top)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;
	int err;

	err = pthread_getattr_np(pthread_self(), &attr);
	if (err)
		return -err;
	err = pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	if (err)
		return -err;
	*top = (uint64_t)(uintptr_t)addr + size;
	return 0;
}

int sfu_snap__thread_init(void)
{
	struct sfu_snap_thread *t = &sfu_snap_self;
	int err;

	if (getpid() == (pid_t)syscall(SYS_gettid))
		err = main_stack_top(&t->stack_top);
	else
		err = thread_stack_top(&t->stack_top);
	if (err)
		return fail(err, "cannot find the top of the stack", NULL);
	t->last.stack = malloc(SFU_SNAP_STACK_MAX);
	if (!t->last.stack)
		return fail(-ENOMEM, "stack buffer", NULL);
	t->last.stack_max = SFU_SNAP_STACK_MAX;
	return 0;
}

void sfu_snap__thread_fini(void)
{
	free(sfu_snap_self.last.stack);
	sfu_snap_self.last.stack = NULL;
}

struct sfu_snap_capture *sfu_snap__capture_new(size_t stack_max)
{
	struct sfu_snap_capture *cap = calloc(1, sizeof(*cap));

	if (!cap)
		return NULL;
	cap->stack_max = (stack_max ? stack_max : SFU_SNAP_STACK_MAX) & ~(size_t)7;
	cap->stack = malloc(cap->stack_max);
	if (!cap->stack) {
		free(cap);
		return NULL;
	}
	return cap;
}

void sfu_snap__capture_free(struct sfu_snap_capture *cap)
{
	if (!cap)
		return;
	free(cap->stack);
	free(cap);
}

void sfu_snap__capture_signal(struct sfu_snap_capture *cap, const void *ucontext)
{
	const mcontext_t *mc = &((const ucontext_t *)ucontext)->uc_mcontext;

#if SFU_SNAP_ARCH == SFU_SNAP_ARCH_X86_64
	cap->regs.pc = (uint64_t)mc->gregs[REG_RIP];
	cap->regs.sp = (uint64_t)mc->gregs[REG_RSP];
	cap->regs.fp = (uint64_t)mc->gregs[REG_RBP];
	cap->regs.lr = 0;
#else
	cap->regs.pc = mc->pc;
	cap->regs.sp = mc->sp;
	cap->regs.fp = mc->regs[29];
	cap->regs.lr = mc->regs[30];
#endif
	sfu_snap__copy(&sfu_snap_self, cap);
}

int sfu_snap__init(const char *dir)
{
	if (strlen(dir) >= sizeof(out_dir))
		return fail(-ENAMETOOLONG, "output directory", dir);
	strcpy(out_dir, dir);
	return sfu_snap__thread_init();
}

int sfu_snap__status(void)
{
	return failed;
}

static int put(FILE *f, const void *p, size_t len)
{
	return fwrite(p, 1, len, f) == len ? 0 : -EIO;
}

static int put_u32(FILE *f, uint32_t v)
{
	uint8_t b[4];

	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return put(f, b, sizeof(b));
}

static int put_u64(FILE *f, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return put(f, b, sizeof(b));
}


int sfu_snap__write(const char *tag)
{
	return sfu_snap__write_capture(&sfu_snap_self.last, tag);
}

int sfu_snap__write_capture(const struct sfu_snap_capture *cap, const char *tag)
{
	char path[PATH_MAX + 64];
	char *maps = NULL;
	size_t maps_len = 0, chain_len = 0;
	FILE *f;
	int err;

	if (!cap->captured)
		return fail(-EINVAL, tag, "nothing captured");
	if (!cap->stack_len)
		return fail(-EINVAL, tag, "no stack copied (sfu_snap__thread_init not called?)");
	if (cap->truncated)
		return fail(-E2BIG, tag, "stack larger than the capture buffer");
	if (cap->depth > SFU_SNAP_CHAIN_MAX)
		return fail(-E2BIG, tag, "chain deeper than SFU_SNAP_CHAIN_MAX");
	if ((size_t)snprintf(path, sizeof(path), "%s/%s.snap", out_dir, tag) >= sizeof(path))
		return fail(-ENAMETOOLONG, "output path for", tag);

	err = read_whole("/proc/self/maps", (void **)&maps, &maps_len);
	if (err)
		return fail(err, "/proc/self/maps", NULL);
	for (unsigned i = 0; i < cap->depth; i++)
		chain_len += strlen(cap->chain[i]) + 1;

	f = fopen(path, "we");
	if (!f) {
		err = fail(-errno, "cannot create", path);
		free(maps);
		return err;
	}
	err = put(f, SFU_SNAP_MAGIC, 8);
	err = err ?: put_u32(f, SFU_SNAP_ARCH);
	err = err ?: put_u64(f, cap->regs.pc);
	err = err ?: put_u64(f, cap->regs.sp);
	err = err ?: put_u64(f, cap->regs.fp);
	err = err ?: put_u64(f, cap->regs.lr);
	err = err ?: put_u64(f, cap->regs.sp);
	err = err ?: put_u64(f, cap->stack_len);
	err = err ?: put(f, cap->stack, cap->stack_len);
	err = err ?: put_u64(f, maps_len);
	err = err ?: put(f, maps, maps_len);
	err = err ?: put_u64(f, chain_len);
	/* innermost first: the shadow stack is pushed outermost first */
	for (unsigned i = cap->depth; !err && i-- > 0;)
		err = put(f, cap->chain[i], strlen(cap->chain[i]) + 1);
	if (fclose(f) && !err)
		err = -errno;
	free(maps);
	if (err)
		return fail(err, "cannot write", path);
	return 0;
}
