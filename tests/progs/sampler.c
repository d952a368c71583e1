/* SPDX-License-Identifier: BSD-2-Clause */
/* Self-unwind test program sampled by SIGPROF: frame 0 anywhere, prologues and epilogues too. */
#define _GNU_SOURCE
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>

#include "libchain.h"
#include "snapshot.h"

/*
 * Like a profiler, a SIGPROF handler captures whatever the main thread was
 * doing; main writes the samples as "sample-NNN" once the timer is off. The
 * chain recorded is the shadow stack when the signal came, so the true chain
 * is either exactly that or one more function in front (interrupted before
 * its push or after its pop). Samples whose pc is outside the executable and
 * libchain.so (the dynamic linker resolving a PLT slot or a TLS address) have
 * no .sframe to start from; the driver counts but does not check them.
 *
 * With "step" instead of a sample count (x86-64 only), the trap flag
 * single-steps one call of outer() and every instruction executed in the
 * program or libchain.so is captured once, in order: the whole chain at
 * every pc, deterministically. The two helpers that set and clear the flag
 * are plain assembly with CFI, so they have .sframe rows too.
 *
 * Usage: sampler OUTPUT-DIR [SAMPLES | step]
 */

#define DEFAULT_SAMPLES 300
#define MAX_SECONDS 20

#define STEP_MAX_SAMPLES 4096
#define STEP_STACK_MAX (256 * 1024)
#define MAX_RANGES 16

static struct sfu_snap_capture **samples;
static int max_samples;
static volatile sig_atomic_t nsamples;
static volatile uint64_t sink;

static void on_sigprof(int sig, siginfo_t *info, void *ucontext)
{
	int n = nsamples;

	(void)sig;
	(void)info;
	if (n >= max_samples)
		return;
	sfu_snap__capture_signal(samples[n], ucontext);
	nsamples = n + 1;
}

static uint64_t outer(uint64_t x);

#if defined(__x86_64__)
/* Executable ranges of the program and libchain.so: the only code stepping captures. */
static struct {
	uint64_t start, end;
} ranges[MAX_RANGES];
static int nranges;
/* pcs captured so far: open addressing, twice the captures it holds */
static uint64_t seen[2 * STEP_MAX_SAMPLES];
static volatile sig_atomic_t overflow;

static int add_ranges(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (info->dlpi_name[0] && !strstr(info->dlpi_name, "libchain.so"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum && nranges < MAX_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			ranges[nranges].start = info->dlpi_addr + ph->p_vaddr;
			ranges[nranges].end = ranges[nranges].start + ph->p_memsz;
			nranges++;
		}
	}
	return 0;
}

static int first_visit(uint64_t pc)
{
	size_t mask = sizeof(seen) / sizeof(seen[0]) - 1;
	size_t i = (size_t)(pc * 0x9e3779b97f4a7c15ull >> 40) & mask;

	while (seen[i]) {
		if (seen[i] == pc)
			return 0;
		i = (i + 1) & mask;
	}
	seen[i] = pc;
	return 1;
}

static void on_sigtrap(int sig, siginfo_t *info, void *ucontext)
{
	uint64_t pc = (uint64_t)((ucontext_t *)ucontext)->uc_mcontext.gregs[REG_RIP];
	int n = nsamples, i;

	(void)sig;
	(void)info;
	for (i = 0; i < nranges; i++)
		if (pc >= ranges[i].start && pc < ranges[i].end)
			break;
	if (i == nranges || !first_visit(pc))
		return;
	if (n >= max_samples) {
		overflow = 1;
		return;
	}
	sfu_snap__capture_signal(samples[n], ucontext);
	nsamples = n + 1;
}

/* The trap flag traps after each instruction from the one following popfq. */
void trap_on(void) __asm__("sfu_trap_on");
void trap_off(void) __asm__("sfu_trap_off");
__asm__(".text\n"
	".type sfu_trap_on, @function\n"
	"sfu_trap_on:\n"
	"	.cfi_startproc\n"
	"	pushfq\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	orq $0x100, (%rsp)\n"
	"	popfq\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size sfu_trap_on, .-sfu_trap_on\n"
	".type sfu_trap_off, @function\n"
	"sfu_trap_off:\n"
	"	.cfi_startproc\n"
	"	pushfq\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	andq $~0x100, (%rsp)\n"
	"	popfq\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size sfu_trap_off, .-sfu_trap_off\n");

SFU_SNAP_NOINLINE static int step_once(void)
{
	SFU_SNAP_FUNC();
	struct sigaction sa;

	dl_iterate_phdr(add_ranges, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigtrap;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTRAP, &sa, NULL)) {
		perror("sampler: SIGTRAP");
		return -1;
	}
	trap_on();
	sink = outer(1);
	trap_off();
	if (overflow) {
		fprintf(stderr, "sampler: more than %d distinct pcs\n", max_samples);
		return -1;
	}
	return 0;
}
#else
static int step_once(void)
{
	fprintf(stderr, "sampler: step needs the x86-64 trap flag\n");
	return -1;
}
#endif

SFU_SNAP_NOINLINE static uint64_t spin(uint64_t x, int n)
{
	SFU_SNAP_FUNC();

	for (int i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		x ^= x >> 29;
		/* keep the loop a loop */
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

/* Called back from libchain.so. */
SFU_SNAP_NOINLINE static int sampled_cb(int x)
{
	SFU_SNAP_FUNC();

	return (int)spin((uint64_t)x, 40) + 1;
}

SFU_SNAP_NOINLINE static uint64_t with_vla(uint64_t x, int n)
{
	SFU_SNAP_FUNC();
	volatile char buf[n];

	buf[0] = (char)x;
	buf[n - 1] = (char)(x >> 8);
	return spin(x + buf[0], 20) + buf[n - 1];
}

SFU_SNAP_NOINLINE static uint64_t inner(uint64_t x)
{
	SFU_SNAP_FUNC();

	x = spin(x, 30);
	x += (uint64_t)chain_apply(sampled_cb, (int)(x & 0xffff), NULL);
	return x ^ spin(x, 10);
}

SFU_SNAP_NOINLINE static uint64_t middle(uint64_t x)
{
	SFU_SNAP_FUNC();
	uint64_t a = inner(x);

	a += spin(a, 5);
	a += with_vla(a, 16 + (int)(a & 63));
	return a + inner(a);
}

SFU_SNAP_NOINLINE static uint64_t outer(uint64_t x)
{
	SFU_SNAP_FUNC();

	return middle(x) * 3 + middle(x + 1);
}

/* Take SIGPROF samples of outer() until there are max_samples or time is up. */
SFU_SNAP_NOINLINE static int sample_for_a_while(void)
{
	SFU_SNAP_FUNC();
	struct itimerval timer = { { 0, 1000 }, { 0, 1000 } };
	struct timespec start, now;
	struct sigaction sa;
	uint64_t x = 1;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigprof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL) || setitimer(ITIMER_PROF, &timer, NULL)) {
		perror("sampler: SIGPROF timer");
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		for (int i = 0; i < 200; i++)
			x = outer(x);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (nsamples < max_samples && now.tv_sec - start.tv_sec < MAX_SECONDS);
	timer = (struct itimerval){ { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &timer, NULL);
	sink = x;
	return 0;
}

int main(int argc, char **argv)
{
	SFU_SNAP_FUNC();
	int step = argc == 3 && !strcmp(argv[2], "step");
	char tag[32];

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s OUTPUT-DIR [SAMPLES | step]\n", argv[0]);
		return 2;
	}
	max_samples = step ? STEP_MAX_SAMPLES : argc == 3 ? atoi(argv[2]) : DEFAULT_SAMPLES;
	if (max_samples <= 0 || sfu_snap__init(argv[1]))
		return 2;
	samples = calloc((size_t)max_samples, sizeof(*samples));
	if (!samples)
		return 1;
	for (int i = 0; i < max_samples; i++) {
		samples[i] = sfu_snap__capture_new(step ? STEP_STACK_MAX : 0);
		if (!samples[i]) {
			fprintf(stderr, "sampler: out of memory\n");
			return 1;
		}
	}
	if (step ? step_once() : sample_for_a_while())
		return 1;

	for (int i = 0; i < nsamples; i++) {
		snprintf(tag, sizeof(tag), "sample-%03d", i);
		sfu_snap__write_capture(samples[i], tag);
	}
	printf("sampler: %d samples\n", (int)nsamples);
	for (int i = 0; i < max_samples; i++)
		sfu_snap__capture_free(samples[i]);
	free(samples);
	sfu_snap__thread_fini();
	return sfu_snap__status();
}
