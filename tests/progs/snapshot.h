/* SPDX-License-Identifier: BSD-2-Clause */
/* Self-unwind snapshots: test programs capture their own registers and stack into a file. */
#ifndef SFU_SNAPSHOT_H
#define SFU_SNAPSHOT_H

/*
 * A test program whose call chain is known by construction records it as it
 * runs and captures snapshots that sfu-unwind-snapshot later unwinds.
 *
 * Every function of the chain starts with SFU_SNAP_FUNC() (C: the name is
 * __func__) or SFU_SNAP_FUNC_AS("_ZN3app4stepEi") (C++: the mangled symbol),
 * which pushes the name on a per-thread shadow stack and pops it when the
 * function returns (a cleanup variable). The pop runs after every call the
 * function makes, so no call of the chain can become a tail call. Mark the
 * functions SFU_SNAP_NOINLINE so they keep their own symbol.
 *
 * SFU_SNAP_CAPTURE() then records, without calling anything:
 *   - pc: the address of a label inside its own asm statement, so frame 0 is
 *     always in the function that expands the macro, at a point where that
 *     function's stack pointer is the one its unwind rows describe;
 *   - sp, fp (rbp / x29) and lr (x30; 0 on x86-64), read in the same asm;
 *   - a copy of the stack from sp to the top of the thread's stack;
 *   - the shadow stack, innermost first: the expected chain.
 * Because it makes no call, it can be used in a leaf function (on AArch64 the
 * return address is then still in x30); sfu_snap__write() may be called later,
 * from a caller, to write the capture to a file. SFU_SNAPSHOT(tag) does both.
 *
 * A signal handler captures the context it interrupted instead, as a
 * profiler samples: sfu_snap__capture_signal() into a capture from
 * sfu_snap__capture_new(), written later with sfu_snap__write_capture().
 * Frame 0 is then any instruction, and the chain recorded may lack the
 * innermost function (interrupted before its push or after its pop).
 *
 * Each thread that captures calls sfu_snap__thread_init() first (the main
 * thread through sfu_snap__init()); it finds the top of the stack and
 * allocates the copy buffer, so that the capture itself needs neither.
 *
 * File format, all integers little-endian, no padding ("<dir>/<tag>.snap"):
 *
 *   offset  size  field
 *   0       8     magic "SFUSNAP1"
 *   8       4     arch: 0 x86-64, 1 AArch64 (enum sfu_arch)
 *   12      8     pc
 *   20      8     sp
 *   28      8     fp   (rbp / x29)
 *   36      8     lr   (x30; 0 on x86-64)
 *   44      8     stack base address (= sp)
 *   52      8     stack length S
 *   60      S     stack bytes [base, base + S)
 *   60+S    8     maps length M
 *   68+S    M     the text of /proc/self/maps at write time
 *   68+S+M  8     chain length C in bytes (0: no expectation recorded)
 *   76+S+M  C     expected chain: function symbol names, innermost first,
 *                 each terminated by a NUL; the last one is the thread's
 *                 outermost instrumented function (main, or the thread's
 *                 start routine)
 *
 * The file ends there; readers reject trailing bytes.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SFU_SNAP_MAGIC "SFUSNAP1"
#define SFU_SNAP_ARCH_X86_64 0
#define SFU_SNAP_ARCH_AARCH64 1

/* Deepest shadow stack recorded; deeper captures fail at write time. */
#define SFU_SNAP_CHAIN_MAX 64
/* Largest stack copy; the main thread's stack above main is a few KiB. */
#define SFU_SNAP_STACK_MAX (1u << 20)

#if defined(__x86_64__)
#define SFU_SNAP_ARCH SFU_SNAP_ARCH_X86_64
#elif defined(__aarch64__) && defined(__AARCH64EL__)
#define SFU_SNAP_ARCH SFU_SNAP_ARCH_AARCH64
#else
#error "snapshot.h supports x86-64 and little-endian AArch64"
#endif

/* Keep a function of the chain a real frame with its own symbol (no .constprop clone). */
#if defined(__clang__)
#define SFU_SNAP_NOINLINE __attribute__((noinline, used))
#else
#define SFU_SNAP_NOINLINE __attribute__((noipa, used))
#endif

/* Layout fixed: the capture asm stores at these offsets. */
struct sfu_snap_regs {
	uint64_t pc;	/* 0 */
	uint64_t sp;	/* 8 */
	uint64_t fp;	/* 16 */
	uint64_t lr;	/* 24 */
};

/* One capture: registers, stack copy and the shadow stack at that moment. */
struct sfu_snap_capture {
	struct sfu_snap_regs regs;
	uint8_t *stack;		/* stack_max bytes, copied from regs.sp */
	uint64_t stack_max;
	uint64_t stack_len;
	unsigned depth;
	const char *chain[SFU_SNAP_CHAIN_MAX];	/* outermost first, as pushed */
	int captured;
	int truncated;		/* the stack did not fit */
};

/* Per-thread state; only the inline functions below and snapshot.c touch it. */
struct sfu_snap_thread {
	uint64_t stack_top;	/* 0 until sfu_snap__thread_init() */
	unsigned depth;		/* shadow stack */
	const char *chain[SFU_SNAP_CHAIN_MAX];
	struct sfu_snap_capture last;	/* what SFU_SNAP_CAPTURE() fills */
};

/* Defined in snapshot.c, linked into the executable; shared libraries reach it dynamically. */
extern __thread struct sfu_snap_thread sfu_snap_self;

/**
 * sfu_snap__init() - set the output directory and prepare the calling (main) thread.
 * @return 0 or a negative errno (messages go to stderr: this is test-program code).
 */
int sfu_snap__init(const char *dir);

/**
 * sfu_snap__thread_init() - prepare the calling thread for captures.
 * @return 0 or a negative errno.
 */
int sfu_snap__thread_init(void);

/** sfu_snap__thread_fini() - free the calling thread's buffer. */
void sfu_snap__thread_fini(void);

/**
 * sfu_snap__write() - write this thread's last capture to "<dir>/<tag>.snap".
 * @return 0 or a negative errno; a failure is also remembered for sfu_snap__status().
 */
int sfu_snap__write(const char *tag);

/**
 * sfu_snap__write_capture() - write @cap to "<dir>/<tag>.snap".
 * @return 0 or a negative errno.
 */
int sfu_snap__write_capture(const struct sfu_snap_capture *cap, const char *tag);

/**
 * sfu_snap__capture_new() - a capture with its own stack buffer, for signal handlers.
 * @stack_max: bytes of stack it can hold; 0 for SFU_SNAP_STACK_MAX.
 * @return the capture, or NULL.
 */
struct sfu_snap_capture *sfu_snap__capture_new(size_t stack_max);

/** sfu_snap__capture_free() - accepts NULL. */
void sfu_snap__capture_free(struct sfu_snap_capture *cap);

/**
 * sfu_snap__capture_signal() - capture the context a signal interrupted.
 * @ucontext: the third argument of an SA_SIGINFO handler.
 *
 * Async-signal-safe: the registers come from the ucontext, the stack from the
 * interrupted sp up (the handler runs below it), the chain from the shadow
 * stack of the interrupted thread. Frame 0 is then any instruction, in a
 * prologue or epilogue too, as for a profiler's sample; the shadow stack may
 * lack that innermost function if it was interrupted before its push or
 * after its pop.
 */
void sfu_snap__capture_signal(struct sfu_snap_capture *cap, const void *ucontext);

/** @return 0 when every write so far succeeded, 1 otherwise (an exit status). */
int sfu_snap__status(void);

static inline __attribute__((always_inline)) int sfu_snap__enter(const char *name)
{
	struct sfu_snap_thread *t = &sfu_snap_self;

	if (t->depth < SFU_SNAP_CHAIN_MAX)
		t->chain[t->depth] = name;
	return (int)t->depth++;
}

static inline __attribute__((always_inline)) void sfu_snap__leave(int *depth)
{
	/* the barrier keeps the pop, and so the caller's frame, after the last call */
	__asm__ volatile("" ::: "memory");
	sfu_snap_self.depth = (unsigned)*depth;
}

#define SFU_SNAP__CAT2(a, b) a##b
#define SFU_SNAP__CAT(a, b) SFU_SNAP__CAT2(a, b)
#define SFU_SNAP_FUNC_AS(name)                                                         \
	int SFU_SNAP__CAT(sfu_snap_frame_, __LINE__)                                   \
		__attribute__((cleanup(sfu_snap__leave), unused)) = sfu_snap__enter(name)
#define SFU_SNAP_FUNC() SFU_SNAP_FUNC_AS(__func__)

/*
 * One asm statement reads fp and lr before anything else, then sp, then the
 * address of its own first instruction. The pointer to the result and the
 * scratch register are pinned (r11/r10, x16/x17) so that neither can be the
 * frame pointer or link register the asm is reading.
 */
#if SFU_SNAP_ARCH == SFU_SNAP_ARCH_X86_64
#define SFU_SNAP__READ_REGS(regs_ptr)                                                  \
	do {                                                                           \
		register struct sfu_snap_regs *sfu_snap_r_ __asm__("r11") = (regs_ptr); \
		__asm__ volatile("1:\n\t"                                              \
				 "movq %%rbp, 16(%0)\n\t"                              \
				 "movq $0, 24(%0)\n\t"                                 \
				 "movq %%rsp, 8(%0)\n\t"                               \
				 "leaq 1b(%%rip), %%r10\n\t"                           \
				 "movq %%r10, 0(%0)\n\t"                               \
				 :                                                     \
				 : "r"(sfu_snap_r_)                                    \
				 : "r10", "memory");                                   \
	} while (0)
#else
#define SFU_SNAP__READ_REGS(regs_ptr)                                                  \
	do {                                                                           \
		register struct sfu_snap_regs *sfu_snap_r_ __asm__("x16") = (regs_ptr); \
		__asm__ volatile("1:\n\t"                                              \
				 "stp x29, x30, [%0, #16]\n\t"                         \
				 "mov x17, sp\n\t"                                     \
				 "str x17, [%0, #8]\n\t"                               \
				 "adr x17, 1b\n\t"                                     \
				 "str x17, [%0]\n\t"                                   \
				 :                                                     \
				 : "r"(sfu_snap_r_)                                    \
				 : "x17", "memory");                                   \
	} while (0)
#endif

/* Copy the stack and the shadow stack with plain loads: no call, not even memcpy. */
static inline __attribute__((always_inline)) void
sfu_snap__copy(const struct sfu_snap_thread *t, struct sfu_snap_capture *c)
{
	const volatile uint64_t *src = (const volatile uint64_t *)(uintptr_t)c->regs.sp;
	const char *const volatile *names = t->chain;
	uint64_t *dst = (uint64_t *)c->stack;
	uint64_t len = 0;
	unsigned i, depth;

	c->truncated = 0;
	if (dst && t->stack_top > c->regs.sp) {
		len = (t->stack_top - c->regs.sp) & ~(uint64_t)7;
		if (len > c->stack_max) {
			len = c->stack_max;
			c->truncated = 1;
		}
	}
	for (uint64_t w = 0; w < len / 8; w++)
		dst[w] = src[w];
	c->stack_len = len;

	depth = t->depth < SFU_SNAP_CHAIN_MAX ? t->depth : SFU_SNAP_CHAIN_MAX;
	for (i = 0; i < depth; i++)
		c->chain[i] = names[i];
	c->depth = t->depth;
	c->captured = 1;
}

/* Capture this point without making a call; see the top of the file. */
#define SFU_SNAP_CAPTURE()                                                             \
	do {                                                                           \
		struct sfu_snap_thread *sfu_snap_t_ = &sfu_snap_self;                  \
		SFU_SNAP__READ_REGS(&sfu_snap_t_->last.regs);                          \
		sfu_snap__copy(sfu_snap_t_, &sfu_snap_t_->last);                       \
	} while (0)

/* Capture here and write "<dir>/<tag>.snap" at once. */
#define SFU_SNAPSHOT(tag)                                                              \
	do {                                                                           \
		SFU_SNAP_CAPTURE();                                                    \
		sfu_snap__write(tag);                                                  \
	} while (0)

#ifdef __cplusplus
}
#endif

#endif
