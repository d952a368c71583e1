/* SPDX-License-Identifier: BSD-2-Clause */
/* Built against an installed libsfunwind (its .pc only): unwinds its own stack and prints the chain. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sfunwind/addrspace.h>
#include <sfunwind/module.h>
#include <sfunwind/unwind.h>
#include <sfunwind/version.h>

#define KEEP __attribute__((noipa))
#define MAX_FRAMES 64

/* The registers of the frame that runs this asm, pc being the asm's own first instruction. */
#if defined(__x86_64__)
#define READ_REGS(r)                                                             \
	do {                                                                     \
		register struct sfu_regs *r_ __asm__("r11") = (r);               \
		__asm__ volatile("1:\n\t"                                        \
				 "movq %%rbp, 16(%0)\n\t"                        \
				 "movq $0, 24(%0)\n\t"                           \
				 "movq %%rsp, 8(%0)\n\t"                         \
				 "leaq 1b(%%rip), %%r10\n\t"                     \
				 "movq %%r10, 0(%0)\n\t"                         \
				 :                                               \
				 : "r"(r_)                                       \
				 : "r10", "memory");                             \
	} while (0)
#define ARCH SFU_ARCH_X86_64
#elif defined(__aarch64__)
#define READ_REGS(r)                                                             \
	do {                                                                     \
		register struct sfu_regs *r_ __asm__("x16") = (r);               \
		__asm__ volatile("1:\n\t"                                        \
				 "stp x29, x30, [%0, #16]\n\t"                   \
				 "mov x17, sp\n\t"                               \
				 "str x17, [%0, #8]\n\t"                         \
				 "adr x17, 1b\n\t"                               \
				 "str x17, [%0]\n\t"                             \
				 :                                               \
				 : "r"(r_)                                       \
				 : "x17", "memory");                             \
	} while (0)
#define ARCH SFU_ARCH_AARCH64
#else
#error "x86-64 and AArch64 only"
#endif

volatile int sink;

/* The process reads its own stack: every address the unwinder asks for is one it computed. */
static int read_self(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (!addr)
		return -EFAULT;
	memcpy(buf, (const void *)(uintptr_t)addr, len);
	return 0;
}

static int print_chain(const struct sfu_regs *regs)
{
	SFU_OPTS(sfu_unwind_opts, opts, .arch = ARCH, .no_fp_fallback = 1);
	struct sfu_frame frames[MAX_FRAMES];
	struct sfu_addrspace *as;
	struct sfu_diag diag = { 0 };
	size_t n = 0;
	int stop, err;

	as = sfu_addrspace__new(NULL, NULL);
	if (!as) {
		perror("sfu_addrspace__new");
		return 1;
	}
	err = sfu_addrspace__load_pid(as, getpid(), &diag);
	if (err) {
		fprintf(stderr, "selfunwind: /proc/self/maps: %s\n", diag.reason[0] ? diag.reason : strerror(-err));
		sfu_addrspace__free(as);
		return 1;
	}
	stop = sfu_unwind(as, &opts, regs, read_self, NULL, frames, MAX_FRAMES, &n);
	for (size_t i = 0; i < n; i++) {
		const struct sfu_mapping *m = sfu_addrspace__find(as, frames[i].addr);
		uint64_t addr = frames[i].addr - (frames[i].kind == SFU_FRAME_RA);
		const char *name = NULL;
		uint64_t off = 0;

		if (m && m->module)
			sfu_module__symbolize(m->module, addr - m->bias, &name, &off);
		printf("frame %zu %s %s\n", i, name ? name : "??", sfu_source_name(frames[i].source));
	}
	printf("stop %s\n", sfu_stop_name(stop));
	sfu_addrspace__free(as);
	return 0;
}

KEEP int inst_leaf(int v)
{
	struct sfu_regs regs;

	READ_REGS(&regs);
	sink += v;
	return print_chain(&regs);
}

/* each caller works after its call, so that no call becomes a tail call */
KEEP int inst_mid(int v) { int r = inst_leaf(v + 1); __asm__ volatile("" ::: "memory"); sink++; return r; }
KEEP int inst_outer(int v) { int r = inst_mid(v + 1); __asm__ volatile("" ::: "memory"); sink++; return r; }

int main(void)
{
	int r;

	printf("version header %s library %s number %d\n", SFU_VERSION_STRING, sfu_version(),
	       SFU_VERSION_NUMBER);
	r = inst_outer(1);
	__asm__ volatile("" ::: "memory");
	sink++;
	return r;
}
