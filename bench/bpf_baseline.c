/* SPDX-License-Identifier: BSD-2-Clause */
/* Benchmark: the baselines beside the sampler's cost (scripts/bench-pressure): a BPF program on a cpu-clock event per CPU that only counts, or counts and reads 8 bytes at the user SP. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "baseline.h"
#include "baseline.skel.h"

static const char usage[] =
	"usage: bpf_baseline --prog count|read --hz N [--pid PID]\n"
	"\n"
	"Loads a BPF program on a cpu-clock perf event per online CPU sampled at N Hz\n"
	"(frequency mode, as sfprof record opens its own), prints 'ready' once it is\n"
	"attached, and runs until SIGINT or SIGTERM; then prints what it counted:\n"
	"  bpf_baseline: 2997 samples, 0 failed reads\n"
	"  count  the program only counts the samples of the tasks it filters on\n"
	"  read   it also reads 8 bytes at the interrupted task's user SP\n"
	"  --pid  only the threads of process PID (default: every task but this one,\n"
	"         as record -a)\n"
	"Its cost per sample is the kernel's BPF statistics of the program named\n"
	"base_count or base_read (kernel.bpf_stats_enabled=1, bpftool prog show).\n";

/* The chosen program's attachments: one perf event and one link per online CPU. */
struct baseline {
	struct baseline_bpf *skel;
	struct bpf_link **links;
	int *event_fds;
	int ncpus;
};

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's warnings are how a load fails; its debug lines are noise here */
	return level == LIBBPF_DEBUG ? 0 : vfprintf(stderr, fmt, ap);
}

static long perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
			    unsigned long flags)
{
	return syscall(__NR_perf_event_open, attr, pid, cpu, group, flags);
}

static void baseline__free(struct baseline *b)
{
	if (!b)
		return;
	/* a link closes its event's fd; one not linked is closed here */
	for (int i = 0; b->links && i < b->ncpus; i++)
		bpf_link__destroy(b->links[i]);
	for (int i = 0; b->event_fds && i < b->ncpus; i++)
		if (b->event_fds[i] >= 0 && !(b->links && b->links[i]))
			close(b->event_fds[i]);
	free(b->links);
	free(b->event_fds);
	baseline_bpf__destroy(b->skel);
	free(b);
}

/*
 * Opens and loads the object with only @read's program (base_read, else
 * base_count), filtering on @tgid (0: every task but this one).
 * @return the baseline, or NULL with errno set.
 */
static struct baseline *baseline__load(bool read, uint32_t tgid)
{
	struct baseline *b = calloc(1, sizeof(*b));
	int err;

	if (!b)
		return NULL;
	b->ncpus = libbpf_num_possible_cpus();
	if (b->ncpus <= 0) {
		err = b->ncpus ? -b->ncpus : EINVAL;
		fprintf(stderr, "bpf_baseline: cannot count the possible CPUs: %s\n", strerror(err));
		goto fail;
	}
	b->links = calloc(b->ncpus, sizeof(*b->links));
	b->event_fds = malloc(b->ncpus * sizeof(*b->event_fds));
	if (!b->links || !b->event_fds) {
		err = ENOMEM;
		goto fail;
	}
	for (int i = 0; i < b->ncpus; i++)
		b->event_fds[i] = -1;
	b->skel = baseline_bpf__open();
	if (!b->skel) {
		err = errno;
		fprintf(stderr, "bpf_baseline: cannot open the BPF object: %s\n", strerror(err));
		goto fail;
	}
	b->skel->rodata->target_tgid = tgid;
	b->skel->rodata->self_tgid = getpid();
	bpf_program__set_autoload(read ? b->skel->progs.base_count : b->skel->progs.base_read,
				  false);
	if (baseline_bpf__load(b->skel)) {
		err = errno;
		fprintf(stderr, "bpf_baseline: cannot load the BPF program: %s%s\n", strerror(err),
			err == EPERM ? " (needs root or CAP_BPF and CAP_PERFMON)" : "");
		goto fail;
	}
	return b;
fail:
	baseline__free(b);
	errno = err;
	return NULL;
}

/*
 * A cpu-clock event at @hz on every online CPU, @prog attached to each.
 * @return 0 or -errno, having said why.
 */
static int baseline__attach(struct baseline *b, struct bpf_program *prog, uint32_t hz)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = hz,
	};
	int attached = 0, en;

	for (int cpu = 0; cpu < b->ncpus; cpu++) {
		int fd = perf_event_open(&attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			if (errno == ENODEV)
				continue;	/* a possible CPU that is offline */
			en = errno;
			fprintf(stderr, "bpf_baseline: cannot open a cpu-clock event at %" PRIu32
				" Hz on CPU %d: %s%s\n", hz, cpu, strerror(en),
				en == EINVAL ? " (above kernel.perf_event_max_sample_rate?)" : "");
			return -en;
		}
		b->event_fds[cpu] = fd;
		b->links[cpu] = bpf_program__attach_perf_event(prog, fd);
		if (!b->links[cpu]) {
			en = errno;
			fprintf(stderr, "bpf_baseline: cannot attach %s on CPU %d: %s\n",
				bpf_program__name(prog), cpu, strerror(en));
			return -en;
		}
		attached++;
	}
	if (!attached) {
		fprintf(stderr, "bpf_baseline: no online CPU to open an event on\n");
		return -ENODEV;
	}
	return 0;
}

/*
 * The counts map's slot @which summed over the CPUs into @out.
 * @return 0 or -errno.
 */
static int baseline__count(const struct baseline *b, uint32_t which, uint64_t *out)
{
	uint64_t *values = calloc(b->ncpus, sizeof(*values));
	int err = 0;

	if (!values)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.counts), &which, values)) {
		err = -errno;
		goto out;
	}
	*out = 0;
	for (int i = 0; i < b->ncpus; i++)
		*out += values[i];
out:
	free(values);
	return err;
}

/* @arg as a number from 1 to @max into @out. @return 0 or -EINVAL. */
static int parse_u32(const char *arg, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || *arg == '-' || v < 1 || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "prog", required_argument, NULL, 'p' },
		{ "hz", required_argument, NULL, 'F' },
		{ "pid", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *prog = NULL;
	uint32_t hz = 0, tgid = 0;
	uint64_t samples = 0, failed = 0;
	struct baseline *b;
	sigset_t stop;
	int opt, sig, err;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (strcmp(optarg, "count") && strcmp(optarg, "read")) {
				fprintf(stderr, "bpf_baseline: --prog takes count or read, not '%s'\n",
					optarg);
				return 2;
			}
			prog = optarg;
			break;
		case 'F':
			if (parse_u32(optarg, 1000000, &hz)) {
				fprintf(stderr, "bpf_baseline: --hz takes 1 to 1000000, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'P':
			if (parse_u32(optarg, INT32_MAX, &tgid)) {
				fprintf(stderr, "bpf_baseline: --pid takes a process id, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind < argc || !prog || !hz) {
		fputs(usage, stderr);
		return 2;
	}
	if (tgid && kill(tgid, 0) && errno == ESRCH) {
		fprintf(stderr, "bpf_baseline: no process %" PRIu32 "\n", tgid);
		return 1;
	}

	/* blocked before the events exist, so that a signal sent once 'ready' is out waits for sigwait */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &stop, NULL)) {
		fprintf(stderr, "bpf_baseline: cannot block SIGINT and SIGTERM: %s\n", strerror(errno));
		return 1;
	}
	libbpf_set_print(libbpf_quiet);
	b = baseline__load(!strcmp(prog, "read"), tgid);
	if (!b)
		return 1;
	err = baseline__attach(b, !strcmp(prog, "read") ? b->skel->progs.base_read :
			       b->skel->progs.base_count, hz);
	if (err)
		goto out;
	if (printf("ready\n") < 0 || fflush(stdout)) {
		err = -EIO;
		fprintf(stderr, "bpf_baseline: cannot write to stdout\n");
		goto out;
	}
	if ((err = -sigwait(&stop, &sig))) {
		fprintf(stderr, "bpf_baseline: sigwait: %s\n", strerror(-err));
		goto out;
	}
	if ((err = baseline__count(b, BASELINE_SAMPLES, &samples)) ||
	    (err = baseline__count(b, BASELINE_READ_FAILED, &failed))) {
		fprintf(stderr, "bpf_baseline: cannot read the counts: %s\n", strerror(-err));
		goto out;
	}
	printf("bpf_baseline: %" PRIu64 " samples, %" PRIu64 " failed reads\n", samples, failed);
	if (fflush(stdout))
		err = -EIO;
out:
	baseline__free(b);
	return err ? 1 : 0;
}
