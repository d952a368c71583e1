// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* Baselines for the sampler's cost (scripts/bench-pressure): a perf_event program that only counts, and one that also reads 8 bytes at the user SP. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "baseline.h"

/* Set by the loader before the object is loaded. */
const volatile __u32 target_tgid = 0;	/* 0: every task but the loader (as record -a) */
const volatile __u32 self_tgid = 0;	/* the loader, never counted */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, BASELINE_NCOUNTERS);
} counts SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&counts, &which);

	if (n)
		*n += 1;
}

/* The same test as the sampler's pid filter: idle, the loader, or not the target. */
static __always_inline bool wanted(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	if (!(__u32)id || tgid == self_tgid)
		return false;
	return !target_tgid || tgid == target_tgid;
}

SEC("perf_event")
int base_count(struct bpf_perf_event_data *ctx)
{
	if (wanted())
		count(BASELINE_SAMPLES);
	return 0;
}

SEC("perf_event")
int base_read(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task;
	struct pt_regs *regs;
	__u64 word;

	if (!wanted())
		return 0;
	count(BASELINE_SAMPLES);
	task = bpf_get_current_task_btf();
	/* the registers the task had in user space, as the sampler's fill_user() reads them */
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (bpf_probe_read_user(&word, sizeof(word), (const void *)PT_REGS_SP(regs)))
		count(BASELINE_READ_FAILED);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
