// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: the unwinder against real modules. The registers and the stack
 * bytes are the input's, as a profiled process's are; the modules are real
 * files mapped where the input says: the C library this program runs with, a
 * C library built with --gsframe (.sframe) and a C++ program built without
 * (.eh_frame only) from gen_seeds.sh, and an AArch64 program with PAC.
 *
 * Input (little-endian): flags, the module to steer the pc into, 6 bytes
 * unused, the load addresses of the 4 modules, pc, sp, fp, lr, then the stack
 * bytes from sp. The seeds are stacks unwind_seed_prog captured of itself,
 * with its modules' load addresses.
 *
 * Checks: the unwind stops within its frame array; frame 0 is the pc; each
 * step that is not a signal frame moves the stack pointer up (equal only
 * from the interrupted frame), so that no stack loops but through signal
 * frames, which the depth bounds; every read is inside the stack copy; the
 * unwind with a row cache gives the frames the uncached steps give; each
 * frame's table lookup covers its address.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sfunwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef FUZZ_SEEDS_DIR
#define FUZZ_SEEDS_DIR "."
#endif

#define MAX_FRAMES 256
/* Reads one step may make: CFA, RA, FP, or a signal frame's four registers. */
#define READS_PER_STEP 4
#define HDR_SIZE 72
#define NMODULES 4

enum {
	F_STEER_PC = 1 << 0,	/* pc = a module's text start + pc % its size */
	F_STEER_STACK = 1 << 1,	/* stack words 0xaa.. become addresses in a module's text */
	F_NO_FP = 1 << 2,	/* opts.no_fp_fallback */
	F_CACHE = 1 << 3,	/* a row cache for sfu_unwind() */
	F_AARCH64 = 1 << 4,	/* unwind as AArch64 */
};

struct module {
	struct sfu_module *m;
	uint64_t text, text_size;	/* the first executable segment's vaddr and size */
};

static struct module modules[NMODULES];
static size_t nmodules;
static struct sfu_cache *cache;
static volatile uint64_t sink;

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_unwind: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static int find_libc(struct dl_phdr_info *info, size_t size, void *ctx)
{
	char *path = ctx;

	(void)size;
	if (info->dlpi_name && strstr(info->dlpi_name, "/libc.so.6")) {
		snprintf(path, 4096, "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}

/* Slot @slot: the module at @path, or none when it cannot be opened (seeds not generated). */
static void add_module(size_t slot, const char *path)
{
	const struct sfu_segment *segs;
	struct module *mod = &modules[slot];
	size_t n;

	mod->m = sfu_module__open(path, NULL);
	if (!mod->m) {
		fprintf(stderr, "fuzz_unwind: %s: %s, left out\n", path, strerror(errno));
		return;
	}
	segs = sfu_module__segments(mod->m, &n);
	for (size_t i = 0; i < n; i++) {
		if ((segs[i].flags & PF_X) && segs[i].memsz) {
			mod->text = segs[i].vaddr;
			mod->text_size = segs[i].memsz;
			break;
		}
	}
	if (!mod->text_size) {
		sfu_module__put(mod->m);
		mod->m = NULL;
		return;
	}
	nmodules++;
}

static void setup(void)
{
	char libc[4096] = "";

	cache = sfu_cache__new();
	if (!cache)
		broken("sfu_cache__new: %s", strerror(errno));
	dl_iterate_phdr(find_libc, libc);
	/* the slots are the seeds': unwind_seed_prog.cc writes them in this order */
	add_module(0, libc[0] ? libc : "/lib/x86_64-linux-gnu/libc.so.6");
	add_module(1, FUZZ_SEEDS_DIR "/unwind-modules/libunwseed.so");
	add_module(2, FUZZ_SEEDS_DIR "/unwind-modules/unwind_seed_prog");
	add_module(3, FUZZ_SEEDS_DIR "/elf/aarch64-O2-pac");
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* A page-aligned load address; a module that is not PIE loads where it says. */
static uint64_t load_base(const struct module *mod, uint64_t base)
{
	return sfu_module__is_dyn(mod->m) ? base & ~0xfffULL : 0;
}

/* An address in module @which's text, @v choosing where; @v itself when there is no module. */
static uint64_t steer(const uint64_t *bases, unsigned which, uint64_t v)
{
	const struct module *mod = &modules[which % NMODULES];

	if (!mod->m)
		return v;
	return load_base(mod, bases[which % NMODULES]) + mod->text + v % mod->text_size;
}

/* Each module's executable segments, at its load address, as the loader maps them. */
static struct sfu_addrspace *map_modules(const uint64_t *bases)
{
	struct sfu_addrspace *as = sfu_addrspace__new(cache, NULL);

	if (!as)
		return NULL;
	for (size_t i = 0; i < NMODULES; i++) {
		const struct sfu_segment *segs;
		uint64_t base;
		size_t n;

		if (!modules[i].m)
			continue;
		base = load_base(&modules[i], bases[i]);
		segs = sfu_module__segments(modules[i].m, &n);
		for (size_t j = 0; j < n; j++) {
			uint64_t start = base + (segs[j].vaddr & ~0xfffULL);
			uint64_t end = (base + segs[j].vaddr + segs[j].memsz + 0xfff) & ~0xfffULL;

			if (!(segs[j].flags & PF_X))
				continue;
			/* a mapping that wraps is refused (-EINVAL), as one that overlaps replaces */
			sfu_addrspace__add(as, start, end, segs[j].offset & ~0xfffULL,
					   PROT_READ | PROT_EXEC, sfu_module__path(modules[i].m),
					   modules[i].m);
		}
	}
	return as;
}

struct reader {
	struct sfu_snapshot snap;
	size_t reads;
};

static int read_stack(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct reader *r = ctx;
	int err = sfu_snapshot_read(&r->snap, addr, buf, len);

	r->reads++;
	if (!err && (addr < r->snap.base || addr - r->snap.base > r->snap.size ||
		     len > r->snap.size - (addr - r->snap.base)))
		broken("read of %zu bytes at %#llx outside the copy [%#llx, +%zu)", len,
		       (unsigned long long)addr, (unsigned long long)r->snap.base, r->snap.size);
	return err;
}

/* What covers a frame's address must hold it. */
static void check_lookup(const struct sfu_addrspace *as, uint64_t pc)
{
	struct sfu_lookup l;
	int err = sfu_unwind_lookup(as, pc, &l);

	if (l.mapping && (pc < l.mapping->start || pc >= l.mapping->end))
		broken("%#llx in the mapping [%#llx, %#llx)", (unsigned long long)pc,
		       (unsigned long long)l.mapping->start, (unsigned long long)l.mapping->end);
	if (err) {
		if (err != -ENOENT)
			broken("lookup of %#llx returned %d", (unsigned long long)pc, err);
		return;
	}
	/* Go's table has no FDEs: the row is made for the pc */
	if (!l.mapping || (!l.fde && l.source != SFU_SRC_GOPCLNTAB) || !l.row)
		broken("lookup of %#llx found no mapping, FDE or row", (unsigned long long)pc);
	if (pc < l.func_start || pc >= l.func_end)
		broken("%#llx found in the function [%#llx, %#llx)", (unsigned long long)pc,
		       (unsigned long long)l.func_start, (unsigned long long)l.func_end);
	sink += l.row_start + l.source;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sfu_frame frames[MAX_FRAMES];
	SFU_OPTS(sfu_unwind_opts, opts);
	struct sfu_unwind_opts plain;
	struct sfu_addrspace *as;
	struct reader r1, r2;
	struct sfu_regs regs, cur;
	uint64_t bases[NMODULES];
	uint8_t flags, *stack;
	size_t n = 0, len, steps;
	int stop, stop2 = 0;

	if (!cache)
		setup();
	if (size < HDR_SIZE)
		return 0;
	flags = data[0];
	for (size_t i = 0; i < NMODULES; i++)
		bases[i] = get_u64(data + 8 + 8 * i);
	regs.pc = get_u64(data + 40);
	regs.sp = get_u64(data + 48);
	regs.fp = get_u64(data + 56);
	regs.lr = get_u64(data + 64);
	if (flags & F_STEER_PC)
		regs.pc = steer(bases, data[1], regs.pc);
	/* the stack copy alone, exactly as long as the input gives, for the sanitizer */
	len = size - HDR_SIZE;
	stack = malloc(len ? len : 1);
	if (!stack)
		return 0;
	memcpy(stack, data + HDR_SIZE, len);
	if (flags & F_STEER_STACK) {
		for (size_t off = 0; off + 8 <= len; off += 8) {
			uint64_t w = get_u64(stack + off);

			if (w >> 56 == 0xaa) {
				w = steer(bases, (unsigned)(w >> 48) & 0xff, w & 0xffffffffffffULL);
				memcpy(stack + off, &w, sizeof(w));
			}
		}
	}
	as = map_modules(bases);
	if (!as) {
		free(stack);
		return 0;
	}
	opts.arch = flags & F_AARCH64 ? SFU_ARCH_AARCH64 : SFU_ARCH_X86_64;
	opts.no_fp_fallback = !!(flags & F_NO_FP);
	plain = opts;
	if (flags & F_CACHE)
		opts.cache = sfu_unwind_cache__new();

	r1 = (struct reader){ { regs.sp, stack, len }, 0 };
	stop = sfu_unwind(as, &opts, &regs, read_stack, &r1, frames, MAX_FRAMES, &n);
	if (stop < SFU_STOP_OUTERMOST || stop > SFU_STOP_STACK_SWITCH)
		broken("stop reason %d", stop);
	if (!n || n > MAX_FRAMES || (stop == SFU_STOP_DEPTH) != (n == MAX_FRAMES))
		broken("%zu frames of %d, stopped by %s", n, MAX_FRAMES, sfu_stop_name(stop));
	if (frames[0].addr != regs.pc || frames[0].kind != SFU_FRAME_PC ||
	    frames[0].source != SFU_SRC_NONE)
		broken("frame 0 is not the pc");
	if (r1.reads > READS_PER_STEP * n + 2)
		broken("%zu reads for %zu frames", r1.reads, n);

	/* the same, step by step without a cache */
	r2 = (struct reader){ { regs.sp, stack, len }, 0 };
	cur = regs;
	for (steps = 1; steps < n; steps++) {
		struct sfu_step next;
		bool first = frames[steps - 1].kind == SFU_FRAME_PC;

		stop2 = sfu_unwind_step(as, &plain, &cur, first, read_stack, &r2, &next);
		if (stop2)
			broken("step %zu stopped (%s) where the unwind went on", steps,
			       sfu_stop_name(stop2));
		if (next.regs.pc != frames[steps].addr || next.kind != frames[steps].kind ||
		    next.source != frames[steps].source)
			broken("step %zu: %#llx (%s, %s); the unwind: %#llx (%s, %s)", steps,
			       (unsigned long long)next.regs.pc, next.kind ? "ra" : "pc",
			       sfu_source_name(next.source), (unsigned long long)frames[steps].addr,
			       frames[steps].kind ? "ra" : "pc", sfu_source_name(frames[steps].source));
		if (next.kind == SFU_FRAME_RA &&
		    (next.regs.sp < cur.sp || (next.regs.sp == cur.sp && !first)))
			broken("step %zu: sp %#llx after %#llx", steps,
			       (unsigned long long)next.regs.sp, (unsigned long long)cur.sp);
		cur = next.regs;
	}
	if (stop != SFU_STOP_DEPTH) {
		struct sfu_step next;

		stop2 = sfu_unwind_step(as, &plain, &cur, frames[n - 1].kind == SFU_FRAME_PC,
					read_stack, &r2, &next);
		if (stop2 != stop)
			broken("the last step stopped by %s, the unwind by %s", sfu_stop_name(stop2),
			       sfu_stop_name(stop));
	}
	for (size_t i = 0; i < n; i++)
		check_lookup(as, frames[i].kind == SFU_FRAME_RA ? frames[i].addr - 1 : frames[i].addr);
	sink += n + r1.reads;
	sfu_unwind_cache__free(opts.cache);
	sfu_addrspace__free(as);
	free(stack);
	return 0;
}
