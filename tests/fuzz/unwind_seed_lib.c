// SPDX-License-Identifier: BSD-2-Clause
/* The shared library of fuzz_unwind's seed program, built with --gsframe: frames of varied shapes, and the capture. */
#define _GNU_SOURCE	/* dl_iterate_phdr, pthread_getattr_np */
#include <alloca.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwind_seed.h"

#define NOINLINE __attribute__((noinline))
/* Stack bytes kept from sp: enough for the frames, small for the corpus. */
#define MAX_STACK (24 << 10)

static const char *out_prefix = "unwind";
static unsigned captures;
volatile int unw_sink;

void unw_set_output(const char *prefix)
{
	out_prefix = prefix;
}

struct bases {
	uint64_t base[4];
};

static int find_bases(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct bases *b = ctx;
	const char *name = info->dlpi_name ? info->dlpi_name : "";

	(void)size;
	if (!name[0] && !b->base[UNW_PROG])
		b->base[UNW_PROG] = info->dlpi_addr;
	else if (strstr(name, "/libc.so.6"))
		b->base[UNW_LIBC] = info->dlpi_addr;
	else if (strstr(name, "libunwseed.so"))
		b->base[UNW_LIB] = info->dlpi_addr;
	return 0;
}

static void put_u64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

void unw_capture(uint64_t pc, uint64_t sp, uint64_t fp, unsigned module)
{
	struct bases b = { { 0 } };
	unsigned char hdr[72] = { 0 };
	pthread_attr_t attr;
	void *stack_addr;
	size_t stack_size, len = MAX_STACK;
	char path[4096];
	FILE *f;

	dl_iterate_phdr(find_bases, &b);
	/* where the AArch64 module goes: anywhere out of the way */
	b.base[3] = 0x200000000ull;
	/* the stack's end: no further than the thread's stack */
	if (!pthread_getattr_np(pthread_self(), &attr)) {
		if (!pthread_attr_getstack(&attr, &stack_addr, &stack_size) &&
		    (uintptr_t)stack_addr + stack_size - sp < len)
			len = (uintptr_t)stack_addr + stack_size - sp;
		pthread_attr_destroy(&attr);
	}
	hdr[1] = (unsigned char)module;
	for (int i = 0; i < 4; i++)
		put_u64(hdr + 8 + 8 * i, b.base[i]);
	put_u64(hdr + 40, pc);
	put_u64(hdr + 48, sp);
	put_u64(hdr + 56, fp);
	snprintf(path, sizeof(path), "%s-%u", out_prefix, captures++);
	f = fopen(path, "wb");
	if (!f || fwrite(hdr, sizeof(hdr), 1, f) != 1 ||
	    fwrite((const void *)(uintptr_t)sp, len, 1, f) != 1) {
		perror(path);
		exit(1);
	}
	fclose(f);
}

/* alloca: the CFA is found from the frame pointer */
static NOINLINE int dynamic_frame(int depth, int (*cb)(int), int arg)
{
	char *buf = alloca((size_t)(depth & 7) * 64 + 16);

	memset(buf, depth, (size_t)(depth & 7) * 64 + 16);
	return lib_walk(depth - 1, cb, arg + buf[3]) + buf[0];
}

/* a frame of more than 127 bytes: 2-byte FRE offsets */
static NOINLINE int medium_frame(int depth, int (*cb)(int), int arg)
{
	volatile char buf[600];

	buf[depth % 600] = (char)depth;
	return lib_walk(depth - 1, cb, arg) + buf[depth % 600];
}

static NOINLINE int innermost(int (*cb)(int), int arg)
{
	if (arg < 0)
		UNW_CAPTURE(UNW_LIB);
	return cb(arg < 0 ? -arg : arg) + 1;
}

NOINLINE int lib_walk(int depth, int (*cb)(int), int arg)
{
	if (depth <= 0)
		return innermost(cb, arg);
	if (depth & 1)
		return dynamic_frame(depth, cb, arg) + unw_sink;
	return medium_frame(depth, cb, arg) + unw_sink;
}
