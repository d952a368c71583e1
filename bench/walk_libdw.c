/* SPDX-License-Identifier: BSD-2-Clause */
/* elfutils libdw under test, driven as perf's util/unwind-libdw.c drives it. */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unwinder.h"

struct dw_walker {
	Dwfl *dwfl;
	pid_t pid;
	/* the unwind in progress */
	const struct bench_snapshot *snap;
	uint64_t *out;
	size_t n;
	size_t max;
	const char *why;
};

static pid_t dw_next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	struct dw_walker *w = dwfl_arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = w;
	return w->pid;
}

/* Stack reads only: libdw takes the CFI from the ELF files itself. */
static bool dw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	const struct bench_snapshot *s = ((struct dw_walker *)dwfl_arg)->snap;
	uint64_t off = addr - s->base;

	(void)dwfl;
	if (addr < s->base || s->size < sizeof(*result) || off > s->size - sizeof(*result))
		return false;
	memcpy(result, s->stack + off, sizeof(*result));
	return true;
}

static bool dw_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct bench_snapshot *s = ((struct dw_walker *)thread_arg)->snap;
	/* DWARF x86-64 numbering: 6 rbp, 7 rsp; the others stay undefined */
	Dwarf_Word fp_sp[2] = { s->regs.fp, s->regs.sp };

	if (!dwfl_thread_state_registers(thread, 6, 2, fp_sp))
		return false;
	dwfl_thread_state_register_pc(thread, s->regs.pc);
	return true;
}

static int dw_frame(Dwfl_Frame *state, void *arg)
{
	struct dw_walker *w = arg;
	Dwarf_Addr pc;

	if (!dwfl_frame_pc(state, &pc, NULL)) {
		w->why = dwfl_errmsg(-1);
		return DWARF_CB_ABORT;
	}
	if (w->out)
		w->out[w->n] = pc;
	return ++w->n < w->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static size_t dw_walk(void *state, const struct bench_snapshot *s, uint64_t *out, size_t max,
		      const char **why)
{
	struct dw_walker *w = state;

	w->snap = s;
	w->out = out;
	w->n = 0;
	w->max = max;
	w->why = "depth limit";
	if (dwfl_getthread_frames(w->dwfl, w->pid, dw_frame, w) == -1)
		w->why = dwfl_errmsg(-1);
	else if (w->n < max)
		w->why = "outermost frame";
	if (why)
		*why = w->why;
	return w->n;
}

static const Dwfl_Callbacks dw_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

static const Dwfl_Thread_Callbacks dw_thread_callbacks = {
	.next_thread = dw_next_thread,
	.memory_read = dw_memory_read,
	.set_initial_registers = dw_set_initial_registers,
};

static void dw_walker__free(void *state)
{
	struct dw_walker *w = state;

	if (!w)
		return;
	if (w->dwfl)
		dwfl_end(w->dwfl);
	free(w);
}

/*
 * One Dwfl for the address space, attached once: the thread callbacks read
 * whichever snapshot dw_walk() points them at, so the modules' CFI stays
 * decoded between unwinds. Recent perf keeps a Dwfl per address space the same
 * way; perf 6.1 built one per sample, which costs about 2.5 times as much at
 * 32 frames.
 */
int unwinder_libdw__init(struct unwinder *u)
{
	struct dw_walker *w;
	int err;

	w = calloc(1, sizeof(*w));
	if (!w) {
		fprintf(stderr, "bench_unwind: libdw: %s\n", strerror(ENOMEM));
		return -ENOMEM;
	}
	*u = (struct unwinder){ "libdw", dw_walk, dw_walker__free, w };
	w->pid = getpid();
	w->dwfl = dwfl_begin(&dw_callbacks);
	if (!w->dwfl)
		goto fail;
	dwfl_report_begin(w->dwfl);
	err = dwfl_linux_proc_report(w->dwfl, w->pid);
	if (err) {
		fprintf(stderr, "bench_unwind: libdw: reporting /proc/self/maps: %s\n",
			err > 0 ? strerror(err) : dwfl_errmsg(-1));
		return err > 0 ? -err : -EINVAL;
	}
	if (dwfl_report_end(w->dwfl, NULL, NULL))
		goto fail;
	if (!dwfl_attach_state(w->dwfl, NULL, w->pid, &dw_thread_callbacks, w))
		goto fail;
	return 0;
fail:
	fprintf(stderr, "bench_unwind: libdw: %s\n", dwfl_errmsg(-1));
	return -EINVAL;
}
