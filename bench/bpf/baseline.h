/* SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only) */
/* What bench/bpf/baseline.bpf.c and its loader bench/bpf_baseline.c share: the slots of its counts map. */
#ifndef SFPROF_BENCH_BASELINE_H
#define SFPROF_BENCH_BASELINE_H

#define BASELINE_SAMPLES	0	/* samples of the tasks counted */
#define BASELINE_READ_FAILED	1	/* base_read: reads at the user SP that failed */
#define BASELINE_NCOUNTERS	2

#endif
