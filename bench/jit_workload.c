/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * jit_workload: a program running "JIT code" it wrote itself, for
 * scripts/bench-jit (what sfprof record costs per sample on it).
 *
 * usage: jit_workload [--baseline] [--functions N] [--seconds S] [--work W] [--seed X]
 *
 * JIT mode (default): mmaps an anonymous region, writes N (default
 * 100,000) x86-64 functions of 64 bytes into it, each with its own
 * immediate (no two alike), makes it read+execute, and writes
 * /tmp/perf-PID.map with a line per function ("START SIZE jit_fn_I",
 * hex). Then, for S seconds (default 10, wall time), it calls chains
 * through them:
 *
 *   main -> run -> J x 1-3 -> vm_call (C) -> J x 1-3 [-> vm_leaf (C)]
 *
 * where each J is a function picked at random among the N (uniform; so
 * the sampled stacks are spread over most of them) and the chain's last
 * function spins W iterations (default 20,000): a JIT function in 3
 * chains of 4, the C function vm_leaf in the 4th. Every function keeps a
 * frame pointer (push %rbp; mov %rsp,%rbp), so the stacks are complete
 * by frame pointers.
 *
 * A JIT function (rdi: the rest of the chain, a NULL-ended array of
 * functions; rsi: W):
 *
 *    0: 55                push %rbp
 *    1: 48 89 e5          mov  %rsp,%rbp
 *    4: b8 II II II II    mov  $I,%eax           (its index)
 *    9: 48 8b 07          mov  (%rdi),%rax
 *   12: 48 85 c0          test %rax,%rax
 *   15: 74 08             je   25
 *   17: 48 83 c7 08       add  $8,%rdi
 *   21: ff d0             call *%rax
 *   23: 5d                pop  %rbp
 *   24: c3                ret
 *   25: 48 89 f0          mov  %rsi,%rax         (the leaf: spin)
 *   28: 48 ff c8          dec  %rax
 *   31: 75 fb             jne  28
 *   33: 5d                pop  %rbp
 *   34: c3                ret
 *   35: cc ...            int3 to the next function
 *
 * --baseline: the same loop and the same chains with every JIT function
 * replaced by one of 8 compiled C functions of the same shape: no JIT
 * code, no perf map.
 *
 * It prints a line when the chains start (its pid, mode, where the code is
 * and the map it wrote), and one at the end with the chains it ran. The map
 * is left in place (a profiler may read it after the process exits;
 * scripts/bench-jit removes it).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define FN_SIZE		64
#define CHAIN_MAX	8

typedef void chain_fn(void *const *next, long work);

static volatile uint64_t sink;

static inline void spin(long work)
{
	for (long i = work; i > 0; i--)
		__asm__ volatile("" ::: "memory");
}

/* The chain goes on through the next function, or ends here spinning. Never a tail call. */
#define CHAIN_STEP(name, salt)							\
	__attribute__((noinline, noclone)) static void name(void *const *next, long work) \
	{									\
		chain_fn *f = (chain_fn *)next[0];				\
										\
		sink += (salt);							\
		if (f)								\
			f(next + 1, work);					\
		else								\
			spin(work);						\
		__asm__ volatile("" ::: "memory");				\
		sink -= (salt);							\
	}

/* The C frames of every chain: the VM's call stub and helper */
CHAIN_STEP(vm_call, 1)
CHAIN_STEP(vm_leaf, 2)

/* --baseline's stand-ins for JIT functions */
CHAIN_STEP(c_fn0, 10)
CHAIN_STEP(c_fn1, 11)
CHAIN_STEP(c_fn2, 12)
CHAIN_STEP(c_fn3, 13)
CHAIN_STEP(c_fn4, 14)
CHAIN_STEP(c_fn5, 15)
CHAIN_STEP(c_fn6, 16)
CHAIN_STEP(c_fn7, 17)

static chain_fn *const c_fns[8] = { c_fn0, c_fn1, c_fn2, c_fn3, c_fn4, c_fn5, c_fn6, c_fn7 };

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* N functions in anonymous memory, made read+execute. */
static uint8_t *make_code(size_t n, size_t *len)
{
	static const uint8_t tmpl[] = {
		0x55, 0x48, 0x89, 0xe5, 0xb8, 0, 0, 0, 0, 0x48, 0x8b, 0x07, 0x48, 0x85, 0xc0,
		0x74, 0x08, 0x48, 0x83, 0xc7, 0x08, 0xff, 0xd0, 0x5d, 0xc3, 0x48, 0x89, 0xf0,
		0x48, 0xff, 0xc8, 0x75, 0xfb, 0x5d, 0xc3,
	};
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *code;

	_Static_assert(sizeof(tmpl) <= FN_SIZE, "a function fits its slot");
	*len = (n * FN_SIZE + page - 1) / page * page;
	code = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		uint8_t *f = code + i * FN_SIZE;
		uint32_t imm = (uint32_t)i;

		memset(f, 0xcc, FN_SIZE);
		memcpy(f, tmpl, sizeof(tmpl));
		memcpy(f + 5, &imm, sizeof(imm));
	}
	if (mprotect(code, *len, PROT_READ | PROT_EXEC)) {
		munmap(code, *len);
		return NULL;
	}
	return code;
}

/* /tmp/perf-PID.map: a line per function, as V8's --perf-basic-prof writes it. */
static int write_map(const uint8_t *code, size_t n, char *path, size_t cap)
{
	FILE *f;

	snprintf(path, cap, "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return -errno;
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%" PRIxPTR " %x jit_fn_%zu\n", (uintptr_t)(code + i * FN_SIZE), FN_SIZE, i);
	if (fclose(f))
		return -errno;
	return 0;
}

/* One chain: 1-3 functions, vm_call, 1-3 functions, and vm_leaf in one chain of 4. */
__attribute__((noinline)) static void run(uint8_t *code, size_t n, long work)
{
	void *chain[CHAIN_MAX + 1];
	size_t k = 0, a = 1 + rnd() % 3, b = 1 + rnd() % 3;

	for (size_t i = 0; i < a + b; i++) {
		if (i == a)
			chain[k++] = (void *)vm_call;
		chain[k++] = code ? (void *)(code + FN_SIZE * (rnd() % n)) : (void *)c_fns[rnd() % 8];
	}
	if (rnd() % 4 == 0)
		chain[k++] = (void *)vm_leaf;
	chain[k] = NULL;
	((chain_fn *)chain[0])(chain + 1, work);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "baseline", no_argument, NULL, 'b' },
		{ "functions", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 's' },
		{ "work", required_argument, NULL, 'w' },
		{ "seed", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	size_t n = 100000, len = 0;
	double seconds = 10, t0, t;
	long work = 20000;
	bool baseline = false;
	uint8_t *code = NULL;
	uint64_t chains = 0;
	char map[64] = "";
	int c, err;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'b': baseline = true; break;
		case 'n': n = strtoull(optarg, NULL, 0); break;
		case 's': seconds = strtod(optarg, NULL); break;
		case 'w': work = strtol(optarg, NULL, 0); break;
		case 'S': rng = strtoull(optarg, NULL, 0) | 1; break;
		default:
			fprintf(stderr, "usage: jit_workload [--baseline] [--functions N] [--seconds S] "
				"[--work W] [--seed X]\n");
			return 2;
		}
	}
	if (!n || n > UINT32_MAX || work < 1 || !(seconds > 0)) {
		fprintf(stderr, "jit_workload: --functions, --work and --seconds take positive values\n");
		return 2;
	}
	if (!baseline) {
		if (!(code = make_code(n, &len))) {
			fprintf(stderr, "jit_workload: code: %s\n", strerror(errno));
			return 1;
		}
		if ((err = write_map(code, n, map, sizeof(map)))) {
			fprintf(stderr, "jit_workload: %s: %s\n", map, strerror(-err));
			return 1;
		}
	}
	if (baseline)
		printf("jit_workload: pid %d, baseline (8 C functions)\n", (int)getpid());
	else
		printf("jit_workload: pid %d, jit, %zu functions at 0x%" PRIxPTR "-0x%" PRIxPTR
		       ", map %s\n", (int)getpid(), n, (uintptr_t)code, (uintptr_t)(code + len), map);
	fflush(stdout);
	t0 = now();
	do {
		for (int i = 0; i < 16; i++)
			run(code, n, work);
		chains += 16;
		t = now();
	} while (t - t0 < seconds);
	printf("jit_workload: %" PRIu64 " chains in %.2f s (%.0f/s)\n", chains, t - t0,
	       chains / (t - t0));
	return 0;
}
