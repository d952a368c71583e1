/* SPDX-License-Identifier: BSD-2-Clause */
/* Loads the off-CPU sampler over the sampler's ring and target maps, and reads its counters. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "offcpu.h"
#include "offcpu.skel.h"
#include "offcpu_sampler.h"

struct offcpu_sampler {
	struct offcpu_bpf *skel;
	int ncpus;
	bool attached;
	uint64_t still_blocked;
};

/*
 * __schedule's text in /proc/kallsyms: its address to the next text
 * symbol's. Left 0 when kallsyms hides addresses (kptr_restrict) or lacks it.
 */
static void schedule_range(uint64_t *lo, uint64_t *hi)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512], type, name[256];
	unsigned long long addr;
	uint64_t at = 0, next = UINT64_MAX;

	*lo = *hi = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 &&
		    (type == 't' || type == 'T') && !strcmp(name, "__schedule")) {
			at = addr;
			break;
		}
	if (at && !fseek(f, 0, SEEK_SET))
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 &&
			    (type == 't' || type == 'T') && addr > at && addr < next)
				next = addr;
	fclose(f);
	if (at && next != UINT64_MAX) {
		*lo = at;
		*hi = next;
	}
}

struct offcpu_sampler *offcpu_sampler__new(const struct offcpu_opts *o, char *err, size_t errlen)
{
	struct offcpu_sampler *oc = calloc(1, sizeof(*oc));
	struct offcpu_bpf *skel;
	uint64_t lo, hi;
	int e;

	if (!oc) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	oc->ncpus = libbpf_num_possible_cpus();
	if (oc->ncpus <= 0) {
		e = -oc->ncpus;
		snprintf(err, errlen, "cannot count CPUs: %s", strerror(e));
		goto fail;
	}
	skel = oc->skel = offcpu_bpf__open();
	if (!skel) {
		e = errno;
		snprintf(err, errlen, "cannot open the off-CPU sampler: %s", strerror(e));
		goto fail;
	}
	skel->rodata->ustack_size = o->stack_size;
	skel->rodata->filter_pids = o->filter_pids;
	skel->rodata->filter_tids = o->filter_tids;
	skel->rodata->self_tgid = o->self_tgid;
	skel->rodata->min_ns = o->min_ns;
	skel->rodata->event_id = o->event_id;
	skel->rodata->wakeup_bytes = o->wakeup_bytes;
	skel->rodata->python_frames = o->python_frames;
	schedule_range(&lo, &hi);
	skel->rodata->sched_lo = lo;
	skel->rodata->sched_hi = hi;
	bpf_map__set_max_entries(skel->maps.scratch, oc->ncpus);
	if ((e = -bpf_map__reuse_fd(skel->maps.samples, o->ring_fd)) ||
	    (e = -bpf_map__reuse_fd(skel->maps.targets, o->targets_fd)) ||
	    (e = -bpf_map__reuse_fd(skel->maps.tids, o->tids_fd)) ||
	    (e = -bpf_map__reuse_fd(skel->maps.stack_sizes, o->sizes_fd)) ||
	    (e = -bpf_map__reuse_fd(skel->maps.counters, o->counters_fd)) ||
	    (e = -bpf_map__reuse_fd(skel->maps.py_procs, o->py_procs_fd)) ||
	    (e = -bpf_map__reuse_fd(skel->maps.py_threads, o->py_threads_fd))) {
		snprintf(err, errlen, "cannot share the sampler's maps with the off-CPU sampler: %s",
			 strerror(e));
		goto fail;
	}
	if (offcpu_bpf__load(skel)) {
		e = errno;
		snprintf(err, errlen, "cannot load the off-CPU sampler: %s%s", strerror(e),
			 getenv("SFPROF_DEBUG_BPF") ? "" : " (SFPROF_DEBUG_BPF=1 shows the verifier's log)");
		goto fail;
	}
	return oc;
fail:
	offcpu_sampler__free(oc);
	errno = e;
	return NULL;
}

int offcpu_sampler__attach(struct offcpu_sampler *oc, char *err, size_t errlen)
{
	int e;

	if (offcpu_bpf__attach(oc->skel)) {
		e = errno;
		snprintf(err, errlen, "cannot attach the off-CPU sampler to sched_switch and sys_exit: %s",
			 strerror(e));
		return -e;
	}
	oc->attached = true;
	return 0;
}

/* The blocks still held: threads off the CPU now, whose end the recording will not see. */
static uint64_t count_blocked(struct offcpu_sampler *oc)
{
	int fd = bpf_map__fd(oc->skel->maps.blocked);
	uint32_t key, next;
	uint64_t n = 0;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		n++;
		key = next;
		prev = &key;
	}
	return n;
}

void offcpu_sampler__detach(struct offcpu_sampler *oc)
{
	if (!oc || !oc->attached)
		return;
	offcpu_bpf__detach(oc->skel);
	oc->attached = false;
	oc->still_blocked = count_blocked(oc);
}

/* Runs of @prog the kernel skipped: it was already running on that CPU. */
static uint64_t prog_misses(const struct bpf_program *prog)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
		return 0;
	return info.recursion_misses;
}

void offcpu_sampler__stats(struct offcpu_sampler *oc, struct offcpu_stats *st)
{
	uint64_t *vals = calloc(oc->ncpus, sizeof(*vals)), sum[OFFCPU_COUNTER_MAX] = { 0 };
	int fd = bpf_map__fd(oc->skel->maps.offcpu_counters);

	for (uint32_t key = 0; vals && key < OFFCPU_COUNTER_MAX; key++)
		if (!bpf_map_lookup_elem(fd, &key, vals))
			for (int i = 0; i < oc->ncpus; i++)
				sum[key] += vals[i];
	free(vals);
	*st = (struct offcpu_stats){
		.emitted = sum[OFFCPU_EMITTED], .lost = sum[OFFCPU_LOST] + sum[OFFCPU_NO_SCRATCH],
		.short_blocks = sum[OFFCPU_SHORT], .short_ns = sum[OFFCPU_SHORT_NS],
		.full = sum[OFFCPU_FULL], .not_syscall = sum[OFFCPU_NOT_SYSCALL],
		.not_syscall_ns = sum[OFFCPU_NOT_SYSCALL_NS],
		.ustack_fault = sum[OFFCPU_USTACK_FAULT], .unseen = sum[OFFCPU_UNSEEN],
		.still_blocked = oc->attached ? count_blocked(oc) : oc->still_blocked,
		.prog_misses = prog_misses(oc->skel->progs.offcpu_switch) +
			       prog_misses(oc->skel->progs.offcpu_sys_exit),
	};
}

void offcpu_sampler__free(struct offcpu_sampler *oc)
{
	if (!oc)
		return;
	offcpu_bpf__destroy(oc->skel);
	free(oc);
}
