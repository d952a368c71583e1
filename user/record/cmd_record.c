/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof record: sample with BPF, unwind each sample in its process, write the profile file. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buildid/buildid_record.h"
#include "cmds.h"
#include "events.h"
#include "flight.h"
#include "lost.h"
#include "pipeline.h"
#include "python.h"
#include "rt_budget.h"
#include "sampler.h"
#include "sizes.h"
#include "util/text.h"

#define DEFAULT_FREQ	999
/* The copy a thread starts with; its own unwinds then size it (--stack-size fixes it instead). */
#define DEFAULT_STACK	65536
#define MAX_DEPTH	128	/* frames kept per stack: perf's default max-stack is 127 */
#define DEFAULT_MAX_MEMORY	(256ull << 20)
#define MIN_MAX_MEMORY		(64ull << 20)
#define DEFAULT_MAX_WORKERS	4	/* unwinding threads by default: the CPUs online, at most this */
#define DEFAULT_OFF_CPU_MIN_NS	1000000ull	/* --off-cpu-thresh: 1 ms */

static const char usage[] =
	"usage: sfprof record [-F HZ | -c PERIOD] [-e EVENT[,EVENT...]] [--off-cpu]\n"
	"                     [-a] [-p PID[,PID...]] [-t TID[,TID...]] [--duration SECS]\n"
	"                     [-g] [--call-graph sframe|fp] [--stack-size BYTES]\n"
	"                     [--max-memory SIZE] [--unwind-threads N] [--no-prepare]\n"
	"                     [--no-buildid-cache] [--buildid-cache-size SIZE] [-o FILE]\n"
	"                     [--flight-recorder SECS] [--rt-budget PCT] [--no-python]\n"
	"                     [-- COMMAND [ARGS...]]\n"
	"\n"
	"Sample user and kernel stacks on the cpu-clock event (or the events of -e),\n"
	"unwind them with SFrame (frame pointers where there is none) and write them\n"
	"to FILE (sfprof.data).\n"
	"\n"
	"  -e, --event EVENT,...  sample on these events (repeatable): cpu-clock (the\n"
	"                         default), task-clock, page-faults (faults),\n"
	"                         minor-faults, major-faults, context-switches (cs),\n"
	"                         cpu-migrations (migrations), alignment-faults,\n"
	"                         emulation-faults; the hardware events (cycles,\n"
	"                         instructions, cache-references, cache-misses,\n"
	"                         branches, branch-misses, bus-cycles, ref-cycles,\n"
	"                         stalled-cycles-frontend/backend) where the machine has\n"
	"                         a PMU; tracepoints SUBSYSTEM:NAME (tracefs is mounted\n"
	"                         at /sys/kernel/tracing if it is not). Each sample\n"
	"                         names its event; one weighs the events it stands for\n"
	"                         (its period), a cpu-clock or task-clock sample 1\n"
	"  -F, --freq HZ          samples per second on each CPU (default 999); a\n"
	"                         tracepoint is sampled at every hit\n"
	"  -c, --count PERIOD     a sample every PERIOD events (not with -F), a\n"
	"                         tracepoint's too\n"
	"      --off-cpu          also the stacks of the recorded threads when they\n"
	"                         block, as event offcpu-time, each weighing the\n"
	"                         nanoseconds the thread stayed off the CPU (until it\n"
	"                         ran again): on-CPU and off-CPU views of one recording\n"
	"      --off-cpu-thresh MSECS  blocks shorter than this (default 1 ms) are\n"
	"                         counted in the summary, not recorded (perf adds its\n"
	"                         shorter blocks up in the kernel by stack; sfprof\n"
	"                         cannot unwind there)\n"
	"  -a, --all-cpus         every process on the system\n"
	"  -p, --pid PID,...      these processes and their threads\n"
	"  -t, --tid TID,...      these threads only\n"
	"  -d, --duration SECS    stop after SECS seconds\n"
	"  -g                     call graphs: accepted for perf's sake, sfprof always\n"
	"                         records them\n"
	"      --call-graph MODE  how user stacks are unwound: sframe (the default:\n"
	"                         .sframe, then rows from .eh_frame, then frame\n"
	"                         pointers), fp (frame pointers only, for comparison).\n"
	"                         dwarf[,SIZE] is sframe, the same DWARF CFI unwound\n"
	"                         from a stack copy as perf's dwarf mode (SIZE sets\n"
	"                         --stack-size); lbr is refused (Intel PMU branch\n"
	"                         records, not stack copies)\n"
	"      --stack-size BYTES user stack bytes copied per sample, for every thread\n"
	"                         (4096-262144); by default a thread starts at 65536\n"
	"                         and its size follows what unwinding its stacks needs\n"
	"      --max-memory SIZE  bound on what the record path holds (default 256M;\n"
	"                         K, M, G suffixes; at least 64M): the sample ring takes\n"
	"                         1/8 (at most 32M), samples waiting to be unwound 3/8,\n"
	"                         the index of stacks written 1/16, the unwind tables of\n"
	"                         the programs sampled 1/4; past a bound samples are\n"
	"                         dropped and counted as lost (past the tables' bound a\n"
	"                         new file's frames are walked by frame pointers alone),\n"
	"                         and recording goes on\n"
	"      --unwind-threads N threads that unwind samples (default: the CPUs online,\n"
	"                         at most 4); each owns the processes whose pid % N is its\n"
	"                         number\n"
	"      --no-prepare       open a file when a sample first needs it, not when a\n"
	"                         process maps it (by default a thread of its own opens\n"
	"                         each new executable mapping's file and makes its unwind\n"
	"                         table at once, so that samples do not wait for it)\n"
	"  -o, --output FILE      where to write (an existing FILE is kept as FILE.old)\n"
	"      --no-buildid-cache don't keep the binaries sampled processes map in the\n"
	"                         build-ID cache ($XDG_CACHE_HOME/sfprof/.build-id, else\n"
	"                         ~/.cache/sfprof/.build-id), from which report names\n"
	"                         their frames after they are replaced or removed\n"
	"      --flight-recorder SECS  keep only the last SECS seconds of unwound stacks,\n"
	"                         in memory (compressed, at most 1/8 of --max-memory:\n"
	"                         past it the oldest go first), and write them to\n"
	"                         FILE.YYYYMMDDHHMMSSmmm on SIGUSR2 and to FILE at the end\n"
	"                         (perf record's --overwrite with --switch-output=signal);\n"
	"                         not with -e, -c or --off-cpu\n"
	"      --no-python        no Python frames: by default the frames of each CPython\n"
	"                         3.10-3.13 interpreter a sampled thread runs are read\n"
	"                         at each sample (its thread state, code objects) and\n"
	"                         the views show them after _PyEval_EvalFrameDefault\n"
	"      --buildid-cache-size SIZE  what that cache may hold (default 2G, every\n"
	"                         entry at its file size; the entries used longest ago\n"
	"                         are evicted first)\n"
	"      --rt-budget PCT    the thread that drains the sample ring, and each\n"
	"                         unwinding thread while its queue is a quarter full,\n"
	"                         run at real-time priority (SCHED_FIFO, over every\n"
	"                         program of normal priority), each for at most PCT%\n"
	"                         of one CPU in every 100 ms, at normal priority past\n"
	"                         it (default 25; 0: never; needs CAP_SYS_NICE)\n"
	"\n"
	"With COMMAND, sfprof starts it and records it and its children until it exits;\n"
	"with -a as well, the whole system for as long as it runs. Ctrl-C stops cleanly.\n"
	"Needs root, or CAP_BPF and CAP_PERFMON.\n";

static volatile sig_atomic_t stop_signal, dump_signal, hup_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/*
 * SIGHUP does not stop the recording (as under nohup): it is passed to the
 * command, as a shell passes it to its jobs when its terminal hangs up (the
 * kernel signals only the session's leader), and the command's exit ends the
 * recording with a whole file. Without a command, recording goes on.
 */
static void on_hup(int sig)
{
	(void)sig;
	hup_signal = 1;
}

static void on_usr2(int sig)
{
	(void)sig;
	dump_signal = 1;
}

struct record {
	const char *output;
	uint32_t freq;
	uint32_t stack_size;
	bool stack_fixed;	/* --stack-size: no per-thread sizes */
	uint64_t max_memory;	/* --max-memory */
	bool no_buildid_cache;	/* --no-buildid-cache */
	uint64_t buildid_cache_bytes;	/* --buildid-cache-size */
	struct buildid_keeper *buildid;
	unsigned workers;	/* --unwind-threads */
	bool no_prepare;	/* --no-prepare */
	bool all;
	double duration;
	pid_t *pids;
	size_t npids;
	pid_t *tids, *tid_pids;	/* -t: the threads, and the process of each */
	size_t ntids;
	struct event_list events;	/* -e */
	uint32_t event_ids[MAX_EVENTS];	/* their ids in the file (0: no event record) */
	uint64_t period;		/* -c */
	bool freq_given;		/* -F */
	bool fp_only;			/* --call-graph fp */
	bool no_python;			/* --no-python */
	bool off_cpu;			/* --off-cpu */
	uint64_t off_cpu_min_ns;	/* --off-cpu-thresh */
	uint32_t off_cpu_event;		/* its id in the file */
	char **command;
	pid_t child;
	int go_fd;		/* write a byte: the child may exec */
	int exec_err_fd;	/* the child's errno if exec failed; EOF when it worked */
	struct pipeline *pipeline;
	struct profile_writer *w;
	pthread_mutex_t wlock;	/* w is written by the unwinding threads too */
	struct sampler *sampler;
	uint64_t lost_written;
	bool tty;
	double flight_secs;		/* --flight-recorder */
	struct flight *flight;
	uint64_t flight_dumps;
	unsigned rt_pct;		/* --rt-budget */
	struct rt_budget *reader_rt;	/* the ring reader's, this thread's */
	struct rt_budget *unwind_rt[PIPELINE_MAX_WORKERS];	/* each its unwinding thread's */
	/* CLOCK_MONOTONIC: cmd_record() entered, sampling's window [t0, t_end) */
	uint64_t entered, t0, t_end;
};

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int parse_pids(struct record *r, const char *arg)
{
	char *copy = strdup(arg), *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		long pid = strtol(tok, &end, 10);
		pid_t *p;

		if (*end || pid <= 0 || pid > INT32_MAX) {
			fprintf(stderr, "sfprof record: '%s' is not a process id\n", tok);
			free(copy);
			return -EINVAL;
		}
		p = realloc(r->pids, (r->npids + 1) * sizeof(*p));
		if (!p) {
			free(copy);
			return -ENOMEM;
		}
		r->pids = p;
		r->pids[r->npids++] = pid;
	}
	free(copy);
	return 0;
}

/* The process (tgid) thread @tid belongs to, from /proc. @return it, or 0 when there is no such thread. */
static pid_t tgid_of(pid_t tid)
{
	char path[64], line[256];
	pid_t tgid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

/* -t TID,...: each thread and its process. @return 0 or -errno (said). */
static int parse_tids(struct record *r, const char *arg)
{
	char *copy = strdup(arg), *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		long tid = strtol(tok, &end, 10);
		pid_t *p, *q, tgid;

		if (*end || tid <= 0 || tid > INT32_MAX) {
			fprintf(stderr, "sfprof record: '%s' is not a thread id\n", tok);
			free(copy);
			return -EINVAL;
		}
		tgid = tgid_of(tid);
		if (!tgid) {
			fprintf(stderr, "sfprof record: no thread %ld\n", tid);
			free(copy);
			return -ESRCH;
		}
		p = realloc(r->tids, (r->ntids + 1) * sizeof(*p));
		if (p)
			r->tids = p;
		q = realloc(r->tid_pids, (r->ntids + 1) * sizeof(*q));
		if (q)
			r->tid_pids = q;
		if (!p || !q) {
			free(copy);
			return -ENOMEM;
		}
		r->tids[r->ntids] = tid;
		r->tid_pids[r->ntids++] = tgid;
	}
	free(copy);
	return 0;
}

/* --call-graph MODE: perf's modes, as far as they mean something here. @return 0 or -EINVAL (said). */
static int parse_call_graph(struct record *r, const char *arg)
{
	char *end;
	long v;

	if (!strcmp(arg, "sframe") || !strcmp(arg, "dwarf")) {
		r->fp_only = false;
		return 0;
	}
	if (!strcmp(arg, "fp")) {
		r->fp_only = true;
		return 0;
	}
	if (!strncmp(arg, "dwarf,", 6)) {
		/* perf's dump size: the user stack copied per sample */
		v = strtol(arg + 6, &end, 10);
		if (*end || v < 4096 || v > MAX_USTACK_BYTES) {
			fprintf(stderr, "sfprof record: --call-graph dwarf,SIZE takes 4096 to %d bytes\n",
				MAX_USTACK_BYTES);
			return -EINVAL;
		}
		r->fp_only = false;
		r->stack_size = (v + STACK_CHUNK - 1) / STACK_CHUNK * STACK_CHUNK;
		r->stack_fixed = true;
		return 0;
	}
	if (!strcmp(arg, "lbr")) {
		fprintf(stderr, "sfprof record: --call-graph lbr: sfprof does not use Intel's last "
			"branch records (a PMU feature); it unwinds stack copies: use sframe (the "
			"default) or fp\n");
		return -EINVAL;
	}
	fprintf(stderr, "sfprof record: --call-graph takes sframe, fp or dwarf[,SIZE], not '%s'\n",
		arg);
	return -EINVAL;
}

static int parse_args(struct record *r, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "freq", required_argument, NULL, 'F' },
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "stack-size", required_argument, NULL, 's' },
		{ "max-memory", required_argument, NULL, 'M' },
		{ "unwind-threads", required_argument, NULL, 'T' },
		{ "no-prepare", no_argument, NULL, 'P' },
		{ "output", required_argument, NULL, 'o' },
		{ "no-buildid-cache", no_argument, NULL, 0x2000 },
		{ "buildid-cache-size", required_argument, NULL, 0x2001 },
		{ "flight-recorder", required_argument, NULL, 0x2002 },
		{ "rt-budget", required_argument, NULL, 0x2003 },
		{ "no-python", no_argument, NULL, 0x2004 },
		{ "event", required_argument, NULL, 'e' },
		{ "count", required_argument, NULL, 'c' },
		{ "tid", required_argument, NULL, 't' },
		{ "call-graph", required_argument, NULL, 'G' },
		{ "off-cpu", no_argument, NULL, 'O' },
		{ "off-cpu-thresh", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char msg[512], *end;
	unsigned long long uv;
	double ms;
	long v;
	int c;

	while ((c = getopt_long(argc, argv, "+F:ap:d:o:he:c:t:g", opts, NULL)) != -1) {
		switch (c) {
		case 'F':
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > 100000) {
				fprintf(stderr, "sfprof record: -F takes a frequency from 1 to 100000 Hz\n");
				return 2;
			}
			r->freq = v;
			r->freq_given = true;
			break;
		case 'e':
			if (event_list__parse(&r->events, optarg, NULL, msg, sizeof(msg))) {
				fprintf(stderr, "sfprof record: %s\n", msg);
				return 2;
			}
			break;
		case 'c':
			errno = 0;
			uv = strtoull(optarg, &end, 10);
			if (*end || end == optarg || errno || optarg[0] == '-' || !uv ||
			    uv > (1ull << 62)) {
				fprintf(stderr, "sfprof record: -c takes a period of at least 1 event\n");
				return 2;
			}
			r->period = uv;
			break;
		case 't':
			if (parse_tids(r, optarg))
				return 2;
			break;
		case 'g':
			break;	/* call graphs are always recorded */
		case 'G':
			if (parse_call_graph(r, optarg))
				return 2;
			break;
		case 'O':
			r->off_cpu = true;
			break;
		case 'm':
			ms = strtod(optarg, &end);
			if (*end || end == optarg || !(ms >= 0) || ms > 3600e3) {
				fprintf(stderr, "sfprof record: --off-cpu-thresh takes milliseconds, "
					"0 to 3600000\n");
				return 2;
			}
			r->off_cpu_min_ns = (uint64_t)(ms * 1e6);
			break;
		case 'a':
			r->all = true;
			break;
		case 'p':
			if (parse_pids(r, optarg))
				return 2;
			break;
		case 'd':
			r->duration = strtod(optarg, &end);
			if (*end || r->duration <= 0) {
				fprintf(stderr, "sfprof record: --duration takes a positive number of seconds\n");
				return 2;
			}
			break;
		case 's':
			v = strtol(optarg, &end, 10);
			if (*end || v < 4096 || v > MAX_USTACK_BYTES) {
				fprintf(stderr, "sfprof record: --stack-size takes 4096 to %d bytes\n",
					MAX_USTACK_BYTES);
				return 2;
			}
			r->stack_size = (v + STACK_CHUNK - 1) / STACK_CHUNK * STACK_CHUNK;
			r->stack_fixed = true;
			break;
		case 'M':
			if (parse_size(optarg, &r->max_memory) || r->max_memory < MIN_MAX_MEMORY) {
				fprintf(stderr, "sfprof record: --max-memory takes a size of at least 64M "
					"(a number of bytes, or with a K, M or G suffix)\n");
				return 2;
			}
			break;
		case 'T':
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > PIPELINE_MAX_WORKERS) {
				fprintf(stderr, "sfprof record: --unwind-threads takes 1 to %d\n",
					PIPELINE_MAX_WORKERS);
				return 2;
			}
			r->workers = v;
			break;
		case 'P':
			r->no_prepare = true;
			break;
		case 'o':
			r->output = optarg;
			break;
		case 0x2000:
			r->no_buildid_cache = true;
			break;
		case 0x2004:
			r->no_python = true;
			break;
		case 0x2001:
			if (parse_size(optarg, &r->buildid_cache_bytes)) {
				fprintf(stderr, "sfprof record: --buildid-cache-size takes a size (a "
					"number of bytes, or with a K, M or G suffix)\n");
				return 2;
			}
			break;
		case 0x2003:
			v = strtol(optarg, &end, 10);
			if (*end || end == optarg || v < 0 || v > 100) {
				fprintf(stderr, "sfprof record: --rt-budget takes a share of one "
					"CPU from 0 to 100 (%%)\n");
				return 2;
			}
			r->rt_pct = v;
			break;
		case 0x2002:
			r->flight_secs = strtod(optarg, &end);
			if (*end || end == optarg || !(r->flight_secs >= 0.1) || r->flight_secs > 3600) {
				fprintf(stderr, "sfprof record: --flight-recorder takes 0.1 to 3600 seconds\n");
				return 2;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			return 1;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind < argc)
		r->command = argv + optind;
	if (!r->all && !r->npids && !r->ntids && !r->command) {
		fprintf(stderr, "sfprof record: say what to record: -a, -p PID, -t TID or -- COMMAND\n\n%s",
			usage);
		return 2;
	}
	if (r->ntids && (r->all || r->command || r->npids)) {
		fprintf(stderr, "sfprof record: -t goes without -a, -p and a command\n");
		return 2;
	}
	if (r->period && r->freq_given) {
		fprintf(stderr, "sfprof record: -c and -F go apart: a sample every PERIOD events, "
			"or HZ samples a second\n");
		return 2;
	}
	for (size_t i = 0; i < r->events.n; i++) {
		if (event_spec__probe(&r->events.ev[i], msg, sizeof(msg))) {
			fprintf(stderr, "sfprof record: %s\n", msg);
			return 2;
		}
	}
	if (r->flight_secs && (r->events.n || r->period || r->off_cpu)) {
		fprintf(stderr, "sfprof record: --flight-recorder goes without -e, -c and --off-cpu\n");
		return 2;
	}
	if (r->npids && (r->all || r->command)) {
		fprintf(stderr, "sfprof record: -p goes without -a and without a command\n");
		return 2;
	}
	return 0;
}

/* Fork the command, held before exec until start_command(). */
static int fork_command(struct record *r)
{
	int go[2], report[2];

	if (pipe2(go, O_CLOEXEC) || pipe2(report, O_CLOEXEC)) {
		fprintf(stderr, "sfprof record: pipe: %s\n", strerror(errno));
		return -errno;
	}
	r->child = fork();
	if (r->child < 0) {
		fprintf(stderr, "sfprof record: fork: %s\n", strerror(errno));
		return -errno;
	}
	if (r->child == 0) {
		char byte;
		int e;

		close(go[1]);
		close(report[0]);
		if (read(go[0], &byte, 1) != 1)
			_exit(127);	/* sfprof gave up before starting it */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(r->command[0], r->command);
		e = errno;
		if (write(report[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(report[1]);
	r->go_fd = go[1];
	r->exec_err_fd = report[0];
	return 0;
}

/* Let the command exec; returns 0 once it did, or its exec errno. */
static int start_command(struct record *r)
{
	ssize_t n;
	int e = 0;

	if (write(r->go_fd, "g", 1) != 1)
		return errno;
	close(r->go_fd);
	r->go_fd = -1;
	n = read(r->exec_err_fd, &e, sizeof(e));
	close(r->exec_err_fd);
	r->exec_err_fd = -1;
	return n == sizeof(e) ? e : 0;
}

static void fill_meta(struct record *r, struct profile_meta *m, struct utsname *u, char **cmdline)
{
	size_t len = 0;

	uname(u);
	memset(m, 0, sizeof(*m));
	m->flags = (r->all ? PROFILE_F_SYSTEM_WIDE : 0) | (r->command ? PROFILE_F_COMMAND : 0);
	m->created_ns = now_ns(CLOCK_REALTIME);
	m->clock_offset_ns = m->created_ns - now_ns(CLOCK_MONOTONIC);
	m->freq_hz = r->period ? 0 : r->freq;	/* -c: by period, each event's record says */
	m->stack_size = r->stack_size;
	m->host = u->nodename;
	m->release = u->release;
	m->machine = u->machine;
	*cmdline = NULL;
	for (char **a = r->command; a && *a; a++)
		len += strlen(*a) + 1;
	if (len && (*cmdline = malloc(len))) {
		char *p = *cmdline;

		for (char **a = r->command; *a; a++)
			p += sprintf(p, "%s%s", a == r->command ? "" : " ", *a);
		m->cmdline = *cmdline;
	}
}

static int write_lost(struct record *r);

/*
 * The flight recorder's slice ends at @t: the threads finish it
 * (pipeline__cut()) and go on in the next. An error stops the recording,
 * through stop_signal's loop, as a write error would.
 */
static int flight_cut(struct record *r, uint64_t t)
{
	int err = write_lost(r);

	if (!err)
		err = flight__cut(r->flight, r->pipeline, t);
	r->w = flight__writer(r->flight);
	profile_writer__set_stack_bound(r->w, r->max_memory / 16);
	if (err) {
		fprintf(stderr, "%ssfprof record: flight recorder: %s: recording stopped\n",
			r->tty ? "\r\033[K" : "\n", strerror(-err));
		stop_signal = SIGTERM;
	}
	return err;
}

/* The draining thread only copies: everything slow happens on the unwinding threads. */
static void on_sample(void *ctx, const struct sample_hdr *h, const uint64_t *kstack,
		      const uint8_t *ustack)
{
	struct record *r = ctx;

	if (r->flight && h->time_ns >= flight__cut_at(r->flight))
		flight_cut(r, h->time_ns);
	pipeline__sample(r->pipeline, h, kstack, ustack);
}

/*
 * From unwinding thread @worker: real-time priority while its queue backs
 * up, within its budget. Its budget is its own: made and used by it alone,
 * read once it has ended.
 */
static void on_backlog(void *ctx, unsigned worker, bool backlog)
{
	struct record *r = ctx;
	struct rt_budget **rb = &r->unwind_rt[worker];

	if (!*rb && (!backlog || !r->rt_pct ||
		     !(*rb = rt_budget__new(r->rt_pct, RT_BUDGET_PRIO_UNWIND))))
		return;
	rt_budget__tick(*rb, backlog);
}

/* From an unwinding thread: a map update, safe from any thread. */
static int on_resize(void *ctx, uint32_t tid, uint32_t bytes)
{
	struct record *r = ctx;

	return sampler__set_stack_size(r->sampler, tid, bytes);
}

static void on_task_event(void *ctx, const struct perf_event_header *e, uint64_t time)
{
	struct record *r = ctx;

	if (r->flight && time >= flight__cut_at(r->flight))
		flight_cut(r, time);
	pipeline__task_event(r->pipeline, e, time);
	if (e->type == PERF_RECORD_EXIT && !r->stack_fixed && e->size >= sizeof(*e) + 16) {
		uint32_t tid;

		/* pid, ppid, tid: its size goes with it */
		memcpy(&tid, (const uint8_t *)(e + 1) + 8, sizeof(tid));
		sampler__forget_thread(r->sampler, tid);
	}
}

static void on_warn(void *ctx, uint32_t pid, const char *comm, const char *why)
{
	struct record *r = ctx;

	/* the comm and the paths in @why are the process's: escaped, as in every output */
	fprintf(stderr, "%ssfprof record: process %u (", r->tty ? "\r\033[K" : "", pid);
	text_put(stderr, comm[0] ? comm : "?", 0);
	fputs("): ", stderr);
	text_put(stderr, why, 0);
	fputc('\n', stderr);
}

/* Write the lost samples counted since the last call. @return 0 or -errno. */
static int write_lost(struct record *r)
{
	return record_write_lost(r->sampler, r->pipeline, r->w, &r->wlock, &r->lost_written);
}

/* On a terminal, a line rewritten every second; the summary replaces it at the end. */
static void progress(struct record *r)
{
	struct pipeline_stats ps;
	uint64_t samples, bytes;

	if (!r->tty)
		return;
	pipeline__stats(r->pipeline, &ps);
	pthread_mutex_lock(&r->wlock);
	samples = profile_writer__samples(r->w);
	bytes = profile_writer__bytes(r->w);
	pthread_mutex_unlock(&r->wlock);
	fprintf(stderr, "\r\033[Ksfprof record: %" PRIu64 " samples, %" PRIu64 " lost, %" PRIu64
		" processes, %" PRIu64 " bytes written ...", samples, r->lost_written,
		ps.procs.processes, bytes);
}

static bool is_recorded(void *ctx, uint32_t pid)
{
	struct record *r = ctx;

	return sampler__is_target(r->sampler, pid);
}

/* What --off-cpu recorded and what it could not. */
static void offcpu_summary(struct record *r)
{
	struct offcpu_stats os;

	if (sampler__offcpu_stats(r->sampler, &os))
		return;
	fprintf(stderr, "sfprof record: off-cpu: %" PRIu64 " blocks recorded; not recorded: %" PRIu64
		" shorter than %.3f ms (%.3f s in all), %" PRIu64 " ended outside a syscall "
		"(%.3f s), %" PRIu64 " with the ring full, %" PRIu64 " with no room to hold them, %"
		PRIu64 " still blocked at the end; %" PRIu64 " without a user stack, %" PRIu64
		" ended at their syscall's exit (no switch-in seen); %" PRIu64 " runs of the "
		"programs skipped by the kernel\n",
		os.emitted, os.short_blocks, r->off_cpu_min_ns / 1e6, os.short_ns / 1e9,
		os.not_syscall, os.not_syscall_ns / 1e9, os.lost, os.full, os.still_blocked,
		os.ustack_fault, os.unseen, os.prog_misses);
}

/* The summary: its figures are the file's (samples and lost as written, bytes as on disk). */
struct written {
	uint64_t samples, lost;	/* in whole blocks on disk */
	uint64_t unwritten;	/* samples unwound that the file does not hold */
	int err;		/* why: the write error */
};

static void summary(struct record *r, double secs, const struct written *wr,
		    uint64_t stack_resets, int scanned)
{
	uint64_t samples = wr->samples;
	struct pipeline_stats ps;
	const struct procs_stats *st = &ps.procs;
	struct sampler_stats ss;
	uint64_t bytes = 0;
	struct stat fst;

	sampler__stats(r->sampler, &ss);
	pipeline__stats(r->pipeline, &ps);
	if (stat(r->output, &fst) == 0)
		bytes = fst.st_size;
	fprintf(stderr, "%ssfprof record: %.1f s, %" PRIu64 " samples (%" PRIu64 " lost), %" PRIu64
		" with a user stack, %.1f%% of them complete; %" PRIu64 " processes; "
		"%d running at start; %" PRIu64 " bytes in %s (%.1f bytes/sample)\n",
		r->tty ? "\r\033[K" : "", secs, samples, wr->lost, st->user_stacks,
		st->user_stacks ? 100.0 * st->complete / st->user_stacks : 0.0, st->processes,
		scanned, bytes, r->output, samples ? (double)bytes / samples : 0.0);
	if (st->exec_old_image)
		fprintf(stderr, "sfprof record: %" PRIu64 " samples inside execve had the registers of "
			"the program it replaced, gone by then: no user stack, shown as "
			"[execve: old image]\n", st->exec_old_image);
	if (wr->unwritten)
		fprintf(stderr, "sfprof record: %" PRIu64 " samples in %s, %" PRIu64 " not written: "
			"%s\n", samples, r->output, wr->unwritten,
			wr->err == -ENOSPC || wr->err == -EDQUOT ? "disk full" :
			wr->err ? strerror(-wr->err) : "write error");
	fprintf(stderr, "sfprof record: lost: %" PRIu64 " with the ring full (the reader behind), %" PRIu64
		" past the reader's queue bound, %" PRIu64 " past the unwinders' queue bound "
		"(%.1f MiB for each of %u threads, %.1f MiB the most queued in one); user stack "
		"copies: %.0f bytes/sample, %s, %" PRIu64 " stacks cut by the copy's end\n",
		ss.lost_ring + ss.lost_scratch + ss.malformed, ss.lost_queue, ps.dropped,
		(double)ps.queue_bytes / 1048576.0, r->workers, ps.queued_peak / 1048576.0,
		ps.handled ? (double)ps.ustack_bytes / ps.handled : 0.0,
		r->stack_fixed ? "fixed by --stack-size" : "sized per thread", st->copy_ran_out);
	if (!r->stack_fixed)
		fprintf(stderr, "sfprof record: %" PRIu64 " per-thread copy sizes set\n", ps.resized);
	if (r->workers > 1)
		fprintf(stderr, "sfprof record: %" PRIu64 " samples (%.1f%%) unwound by a thread helping "
			"their process's own thread\n", ps.helped, ps.handled ? 100.0 * ps.helped / ps.handled : 0.0);
	if (ps.dropped_events)
		fprintf(stderr, "sfprof record: %" PRIu64 " task events dropped at their queue bound: some "
			"processes may lack mappings\n", ps.dropped_events);
	fprintf(stderr, "sfprof record: files: %" PRIu64 " opened when mapped (of %" PRIu64 " executable "
		"mappings; %" PRIu64 " not opened); the longest a sample waited to be unwound %.1f ms, "
		"%" PRIu64 " samples over %.0f ms\n", ps.prepare.prepared, ps.prepare.asked,
		ps.prepare.failed, ps.slowest_ns / 1e6, ps.slow, PIPELINE_SLOW_NS / 1e6);
	if (ps.jit.maps || ps.jit.dumps || ps.jit.code_tables || ps.jit.code_refused)
		fprintf(stderr, "sfprof record: JIT code: %" PRIu64 " perf maps and %" PRIu64 " jitdumps "
			"read, %" PRIu64 " pieces of code written; rows for %" PRIu64 " from unwinding "
			"info, %" PRIu64 " from their instructions (%" PRIu64 " could not be read "
			"exactly) and %" PRIu64 " as copies of those; %" PRIu64 " samples unwound again "
			"with them\n", ps.jit.maps, ps.jit.dumps, ps.jit.records, ps.jit.eh_tables,
			ps.jit.code_tables, ps.jit.code_refused, ps.jit.copy_tables, ps.jit.reunwound);
	if (ps.modules_refused)
		fprintf(stderr, "sfprof record: %" PRIu64 " files not loaded at the unwind tables' bound "
			"(%.0f MiB, 1/4 of --max-memory): their frames were walked by frame pointers "
			"alone\n", ps.modules_refused, (double)(r->max_memory / 4) / 1048576.0);
	if (ps.py_processes || ss.py_faults || ss.py_truncated)
		fprintf(stderr, "sfprof record: Python: %" PRIu64 " processes running an interpreter, "
			"%" PRIu64 " frames named (%" PRIu64 " code objects unreadable, %" PRIu64
			" gone before they were named); %" PRIu64 " chains cut at %d frames, %"
			PRIu64 " ended by a read that failed\n",
			ps.py_processes, ps.py_frames, ps.py_unresolved, ps.py_stale, ss.py_truncated,
			PY_MAX_FRAMES, ss.py_faults);
	if (stack_resets)
		fprintf(stderr, "sfprof record: the index of stacks written passed its bound %" PRIu64
			" times: stacks seen again were written again\n", stack_resets);
	offcpu_summary(r);
}

static bool targets_alive(const struct record *r)
{
	for (size_t i = 0; i < r->npids; i++)
		if (kill(r->pids[i], 0) == 0 || errno != ESRCH)
			return true;
	for (size_t i = 0; i < r->ntids; i++)
		if (syscall(SYS_tgkill, r->tid_pids[i], r->tids[i], 0) == 0 || errno != ESRCH)
			return true;
	return false;
}

/*
 * The event records: one per -e event (cpu-clock alone at the default
 * frequency needs none, as before -e), then offcpu-time. Each gets its id
 * in r->event_ids or r->off_cpu_event. @return 0 or -errno (said).
 */
static int write_events(struct record *r)
{
	struct profile_event ev;
	char msg[256];
	int err;

	if (!event_list__is_default(&r->events) || r->period) {
		if (!r->events.n && event_list__parse(&r->events, "cpu-clock", NULL, msg, sizeof(msg)))
			return -EINVAL;
		for (size_t i = 0; i < r->events.n; i++) {
			const struct event_spec *e = &r->events.ev[i];
			bool tp = e->type == PERF_TYPE_TRACEPOINT;

			ev = (struct profile_event){
				.type = e->type, .config = e->config,
				.period = r->period ? r->period : tp ? 1 : 0,
				.freq_hz = r->period || tp ? 0 : r->freq, .name = e->name,
			};
			if ((err = profile_writer__event(r->w, &ev, &r->event_ids[i])))
				goto fail;
		}
	} else {
		r->events.n = 0;	/* the sampler's default: cpu-clock, no id */
	}
	if (r->off_cpu) {
		ev = (struct profile_event){ .type = PROFILE_EV_OFF_CPU,
					     .flags = PROFILE_EV_F_WEIGHT_NS, .name = "offcpu-time" };
		if ((err = profile_writer__event(r->w, &ev, &r->off_cpu_event)))
			goto fail;
	}
	return 0;
fail:
	fprintf(stderr, "sfprof record: writing %s: %s\n", r->output, strerror(-err));
	return err;
}

/*
 * SIGUSR2: the last SECS before @now into FILE.YYYYMMDDHHMMSSmmm, as perf's
 * --switch-output=signal names its files. @return 0 or -errno (said).
 */
static int flight_dump(struct record *r, uint64_t now)
{
	struct profile_diag diag = { "" };
	uint64_t real = now_ns(CLOCK_REALTIME), samples;
	time_t secs = real / 1000000000ull;
	char stamp[32], *path;
	struct tm tm;
	int err;

	if ((err = flight_cut(r, now)))
		return err;
	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm);
	if (asprintf(&path, "%s.%s%03u", r->output, stamp,
		     (unsigned)(real / 1000000ull % 1000)) < 0)
		return -ENOMEM;
	err = flight__write(r->flight, path, now, &samples, &diag);
	if (err)
		fprintf(stderr, "%ssfprof record: flight recorder: %s\n", r->tty ? "\r\033[K" : "",
			diag.reason);
	else
		fprintf(stderr, "%ssfprof record: flight recorder: %" PRIu64 " samples of the last "
			"%.1f s in %s\n", r->tty ? "\r\033[K" : "", samples, r->flight_secs, path);
	r->flight_dumps++;
	free(path);
	/* a dump that cannot be written is said; the recording goes on */
	return 0;
}

/*
 * Sample until stopped: Ctrl-C, SIGTERM, --duration, the command's or the
 * -p targets' exit, or an error writing the file (at once: what is written
 * stays whole).
 */
static int run(struct record *r, int *child_status)
{
	uint64_t last_progress = r->t0;
	uint64_t deadline = r->duration ? r->t0 + (uint64_t)(r->duration * 1e9) : UINT64_MAX;
	int err = 0;

	while (!stop_signal) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		/* wake at the deadline, not after it: a round hands over for 20 ms at most */
		int timeout = deadline - now < 100000000ull ? (int)((deadline - now + 999999) / 1000000)
							    : 100;

		if (now >= deadline)
			break;
		err = sampler__poll(r->sampler, timeout);
		rt_budget__tick(r->reader_rt, true);
		pipeline__kick(r->pipeline);	/* the round's task events, at once */
		if (err < 0 && err != -EINTR) {
			fprintf(stderr, "\nsfprof record: reading samples: %s\n", strerror(-err));
			break;
		}
		err = pipeline__error(r->pipeline);
		if (err) {
			fprintf(stderr, "%ssfprof record: writing %s: %s: recording stopped\n",
				r->tty ? "\r\033[K" : "\n", r->output, strerror(-err));
			break;
		}
		now = now_ns(CLOCK_MONOTONIC);
		if (now >= deadline)
			break;
		/* an idle recording still moves on: samples have had 100 ms to come */
		if (r->flight && now >= flight__cut_at(r->flight) + 100000000ull &&
		    flight_cut(r, now - 100000000ull))
			break;
		if (r->flight && dump_signal) {
			dump_signal = 0;
			if (flight_dump(r, now))
				break;
		}
		if (hup_signal) {
			/* a shell's killpg() gave it one already: a second changes nothing for most */
			if (r->child > 0)
				kill(r->child, SIGHUP);
			hup_signal = 0;
			/* the terminal may be gone: the message may go nowhere, and that is all */
			fprintf(stderr, "%ssfprof record: SIGHUP: recording goes on%s\n",
				r->tty ? "\r\033[K" : "\n", r->child > 0 ? " (passed to the command, "
				"it stops with the command)" : "; Ctrl-C or SIGTERM stops it");
		}
		if (r->child > 0 && waitpid(r->child, child_status, WNOHANG) == r->child) {
			r->child = 0;
			break;
		}
		if (now - last_progress >= 1000000000ull) {
			if (r->npids && !targets_alive(r))
				break;	/* as perf record -p does */
			/* modules of processes long gone: a churn of programs costs no memory */
			pipeline__trim(r->pipeline, NULL);
			err = write_lost(r);
			pthread_mutex_lock(&r->wlock);
			if (!err)
				err = profile_writer__tick(r->w);
			pthread_mutex_unlock(&r->wlock);
			if (err) {
				fprintf(stderr, "%ssfprof record: writing %s: %s: recording stopped\n",
					r->tty ? "\r\033[K" : "\n", r->output, strerror(-err));
				break;
			}
			progress(r);
			last_progress = now;
		}
	}
	/* sampling ends now, or at the deadline the loop saw late: the BPF side stops at once */
	r->t_end = now_ns(CLOCK_MONOTONIC);
	if (r->t_end > deadline)
		r->t_end = deadline;
	sampler__set_window(r->sampler, r->t0, r->t_end);
	return err;
}

/* When each step after the sampling window ended (CLOCK_MONOTONIC). */
struct tail {
	uint64_t drained;	/* the ring read to its end, the events detached */
	uint64_t unwound;	/* the unwinding threads through their queues */
	uint64_t written;	/* the file flushed and closed */
};

/*
 * What the recording's time went to: its start, the window sampled (on the
 * samples' own clock, CLOCK_MONOTONIC, as script prints them) and the
 * finishing after it, each step of it. The last line: what it says is
 * true of the whole command, up to its exit.
 */
static void timing(const struct record *r, const struct tail *t)
{
	struct rt_budget_stats rs, us, u;
	struct pipeline_stats ps;
	uint64_t now;

	rt_budget__stats(r->reader_rt, &rs);
	memset(&us, 0, sizeof(us));
	for (unsigned i = 0; i < PIPELINE_MAX_WORKERS; i++) {
		rt_budget__stats(r->unwind_rt[i], &u);
		us.windows += u.windows;
		us.over += u.over;
		us.rt_ns += u.rt_ns;
	}
	if (!r->rt_pct)
		fprintf(stderr, "sfprof record: the reader ran at normal priority (--rt-budget 0)\n");
	else if (rs.refused)
		fprintf(stderr, "sfprof record: the reader ran at normal priority: real-time "
			"priority refused (%s%s)\n", strerror(-rs.err),
			rs.err == -EPERM ? ": it needs CAP_SYS_NICE" : "");
	else
		fprintf(stderr, "sfprof record: the reader ran at real-time priority (SCHED_FIFO %d), "
			"each thread for at most %u%% of one CPU per %.0f ms: %.3f s of CPU so, its "
			"budget used up in %" PRIu64 " of %" PRIu64 " windows; the unwinding threads "
			"%.3f s so in %" PRIu64 " windows while their queues backed up, used up in %"
			PRIu64 "\n", RT_BUDGET_PRIO_READER, r->rt_pct, RT_BUDGET_WINDOW_NS / 1e6,
			rs.rt_ns / 1e9, rs.over, rs.windows, us.rt_ns / 1e9, us.windows, us.over);
	pipeline__stats(r->pipeline, &ps);
	if (ps.joined_at < t->drained || ps.joined_at > t->unwound)
		ps.joined_at = t->unwound;
	now = now_ns(CLOCK_MONOTONIC);
	fprintf(stderr, "sfprof record: sampled %.3f s, CLOCK_MONOTONIC %llu.%06llu to %llu.%06llu; "
		"started %.3f s before; finished in %.3f s (the ring drained %.3f s, the unwinding "
		"threads' backlog %.3f s, the kernel's JIT code named %.3f s, the file written "
		"%.3f s, the build-ID cache %.3f s)\n",
		(r->t_end - r->t0) / 1e9, (unsigned long long)(r->t0 / 1000000000ull),
		(unsigned long long)(r->t0 / 1000 % 1000000),
		(unsigned long long)(r->t_end / 1000000000ull),
		(unsigned long long)(r->t_end / 1000 % 1000000), (r->t0 - r->entered) / 1e9,
		(now - r->t_end) / 1e9, (t->drained - r->t_end) / 1e9,
		(ps.joined_at - t->drained) / 1e9, (t->unwound - ps.joined_at) / 1e9,
		(t->written - t->unwound) / 1e9, (now - t->written) / 1e9);
}

static int setup_targets(struct record *r)
{
	int err;

	for (size_t i = 0; i < r->npids; i++) {
		if (kill(r->pids[i], 0) && errno == ESRCH) {
			fprintf(stderr, "sfprof record: no process %d\n", r->pids[i]);
			return -ESRCH;
		}
	}
	if (r->command && (err = fork_command(r)))
		return err;
	return 0;
}

int cmd_record(int argc, char **argv)
{
	struct record r = { .output = "sfprof.data", .freq = DEFAULT_FREQ,
			    .stack_size = DEFAULT_STACK, .max_memory = DEFAULT_MAX_MEMORY,
			    .buildid_cache_bytes = BUILDID_KEEPER_DEFAULT_BYTES,
			    .off_cpu_min_ns = DEFAULT_OFF_CPU_MIN_NS, .rt_pct = RT_BUDGET_DEFAULT_PCT,
			    .go_fd = -1, .exec_err_fd = -1, .wlock = PTHREAD_MUTEX_INITIALIZER,
			    .entered = now_ns(CLOCK_MONOTONIC) };
	struct pipeline_opts popts;
	struct sampler_cbs cbs = { on_sample, on_task_event };
	struct sampler_opts sopts;
	struct profile_diag diag = { "" };
	struct profile_meta meta;
	struct utsname uts;
	char msg[512], *cmdline = NULL;
	int ret = 1, err, child_status = 0, scanned = 0;
	uint64_t stack_resets, protect_s;
	struct tail tail = { 0 };
	struct written wr = { 0 };
	struct sigaction old_hup;
	long cpus;
	double secs;

	argv[0] = "sfprof record";	/* for getopt's messages */
	err = parse_args(&r, argc, argv);
	if (err) {
		free(r.pids);	/* -p may have come before the option that was refused */
		free(r.tids);
		free(r.tid_pids);
		return err == 1 ? 0 : err;
	}
	r.tty = isatty(STDERR_FILENO);
	if (setup_targets(&r))
		goto out;

	if (!r.workers) {
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
		r.workers = cpus < 1 ? 1 : cpus > DEFAULT_MAX_WORKERS ? DEFAULT_MAX_WORKERS : cpus;
	}
	fill_meta(&r, &meta, &uts, &cmdline);
	if (r.flight_secs) {
		r.flight = flight__new(r.flight_secs, r.max_memory / 8, &meta, now_ns(CLOCK_MONOTONIC));
		if (!r.flight) {
			fprintf(stderr, "sfprof record: flight recorder: %s\n", strerror(errno));
			goto out;
		}
		r.w = flight__writer(r.flight);
	} else {
		r.w = profile_writer__create(r.output, &meta, &diag);
	}
	if (!r.w) {
		fprintf(stderr, "sfprof record: %s\n", diag.reason);
		goto out;
	}
	/* the events' ids go into the BPF side: the file's records come first */
	if (write_events(&r))
		goto discard;
	sopts = (struct sampler_opts){ r.freq, r.stack_size, !r.all, r.command && !r.all,
				       record_ring_bytes(r.max_memory), r.events.n ? &r.events : NULL,
				       r.event_ids, r.period, r.ntids > 0, r.off_cpu,
				       r.off_cpu_min_ns, r.off_cpu_event, r.no_python };
	r.sampler = sampler__new(&sopts, &cbs, &r, msg, sizeof(msg));
	if (!r.sampler) {
		fprintf(stderr, "sfprof record: %s\n", msg);
		goto discard;
	}
	/* a cache that cannot be written is said before sampling starts (after rights: they come first) */
	/*
	 * A recording's binaries stay as long as it runs; a flight recorder's,
	 * which runs for months, while a dump may still hold their samples.
	 */
	protect_s = r.flight_secs ? 2 * (uint64_t)r.flight_secs + 60 : BUILDID_KEEPER_PROTECT_ALL;
	if (!r.no_buildid_cache &&
	    !(r.buildid = buildid_record__start("record", r.buildid_cache_bytes, protect_s)))
		goto discard;
	for (size_t i = 0; i < r.npids; i++)
		sampler__add_target(r.sampler, r.pids[i]);
	for (size_t i = 0; i < r.ntids; i++)
		sampler__add_tid(r.sampler, r.tids[i]);
	if (r.child > 0)
		sampler__add_target(r.sampler, r.child);
	profile_writer__set_stack_bound(r.w, r.max_memory / 16);
	popts = (struct pipeline_opts){
		.workers = r.workers, .queue_bytes = r.max_memory * 3 / 8, .arch = SFU_ARCH_HOST,
		.max_depth = MAX_DEPTH, .copy_start = r.stack_size, .copy_adaptive = !r.stack_fixed,
		.module_bytes = r.max_memory / 4, .prepare = !r.no_prepare,
		.fp_only = r.fp_only,
	};
	r.pipeline = pipeline__new(r.w, &r.wlock, &popts);
	if (!r.pipeline) {
		fprintf(stderr, "sfprof record: cannot start the unwinding threads: %s\n",
			strerror(errno));
		goto discard;
	}
	pipeline__set_warn(r.pipeline, on_warn, &r);
	pipeline__set_resize(r.pipeline, on_resize, &r);
	pipeline__set_backlog(r.pipeline, on_backlog, &r);
	pipeline__set_wanted(r.pipeline, is_recorded, &r);
	if (!r.no_python) {
		struct python_map_ops pyops;

		if (sampler__python_ops(r.sampler, &pyops))
			fprintf(stderr, "sfprof record: no Python frames: the kernel has no bpf_loop() "
				"(5.17)\n");
		else if (pipeline__set_python(r.pipeline, &pyops)) {
			fprintf(stderr, "sfprof record: Python frames: %s\n", strerror(ENOMEM));
			goto discard;
		}
	}
	if (r.buildid) {
		pipeline__set_module_hook(r.pipeline, buildid_record__module, r.buildid);
		pipeline__set_map_hook(r.pipeline, buildid_record__map, r.buildid);
	}

	/* what runs already; new processes arrive as task events */
	if (r.all)
		scanned = pipeline__scan_all(r.pipeline);
	for (size_t i = 0; i < r.npids; i++)
		if (!pipeline__scan(r.pipeline, r.pids[i]))
			scanned++;
	for (size_t i = 0; i < r.ntids; i++)
		if ((!i || r.tid_pids[i] != r.tid_pids[i - 1]) && !pipeline__scan(r.pipeline, r.tid_pids[i]))
			scanned++;
	/* sampled from its exec on, as perf counts a command: before it, it is sfprof */
	if (r.child > 0 && !pipeline__scan_held(r.pipeline, r.child))
		scanned++;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	/* under nohup SIGHUP stays ignored; the command, forked already, has the dispositions sfprof got */
	if (sigaction(SIGHUP, NULL, &old_hup) == 0 && old_hup.sa_handler != SIG_IGN) {
		struct sigaction sa = { .sa_handler = on_hup, .sa_flags = SA_RESTART };

		sigemptyset(&sa.sa_mask);
		sigaction(SIGHUP, &sa, NULL);
	}
	/* a reader of stderr that went away costs the summary, not the file or the command's wait */
	signal(SIGPIPE, SIG_IGN);
	if (r.flight)
		signal(SIGUSR2, on_usr2);
	if ((err = pipeline__start(r.pipeline))) {
		fprintf(stderr, "sfprof record: cannot start the unwinding threads: %s\n",
			strerror(-err));
		goto discard;
	}
	/* real-time before the first sample: the ring never waits for the programs sampled */
	if (!(r.reader_rt = rt_budget__new(r.rt_pct, RT_BUDGET_PRIO_READER))) {
		fprintf(stderr, "sfprof record: %s\n", strerror(errno));
		goto discard;
	}
	rt_budget__tick(r.reader_rt, true);
	if (sampler__start(r.sampler, msg, sizeof(msg))) {
		fprintf(stderr, "sfprof record: %s\n", msg);
		goto discard;
	}
	/*
	 * Every CPU attached: sampling starts now, for --duration exactly
	 * (samples taken while attaching are dropped), and the command after.
	 */
	r.t0 = now_ns(CLOCK_MONOTONIC);
	sampler__set_window(r.sampler, r.t0, r.duration ? r.t0 + (uint64_t)(r.duration * 1e9) :
							 UINT64_MAX);
	if (r.child > 0 && (err = start_command(&r))) {
		fprintf(stderr, "sfprof record: %s: %s\n", r.command[0],
			err == ENOENT ? "command not found" : strerror(err));
		waitpid(r.child, NULL, 0);
		r.child = 0;
		goto discard;
	}
	if (r.tty && r.period)
		fprintf(stderr, "sfprof record: recording a sample every %" PRIu64 " events; Ctrl-C to stop\n",
			r.period);
	else if (r.tty)
		fprintf(stderr, "sfprof record: recording at %u Hz; Ctrl-C to stop\n", r.freq);
	err = run(&r, &child_status);
	/* the duration is the sampling's window: the backlog is handled after it */
	secs = (r.t_end - r.t0) / 1e9;
	/* what remains is not urgent: nothing can overflow once the events are detached */
	rt_budget__tick(r.reader_rt, false);
	pipeline__wait_for_room(r.pipeline);
	if (!err && (err = sampler__drain(r.sampler)))
		fprintf(stderr, "sfprof record: reading samples: %s\n", strerror(-err));
	tail.drained = now_ns(CLOCK_MONOTONIC);
	/* the backlog: every sample queued is unwound and written (none after a write error) */
	if (pipeline__finish(r.pipeline) && !err) {
		err = pipeline__error(r.pipeline);
		fprintf(stderr, "sfprof record: writing %s: %s\n", r.output, strerror(-err));
	}
	tail.unwound = now_ns(CLOCK_MONOTONIC);
	if (!err && (err = write_lost(&r)))
		fprintf(stderr, "sfprof record: writing %s: %s\n", r.output, strerror(-err));
	stack_resets = profile_writer__stack_resets(r.w);
	if (r.flight) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);

		/* the threads are done: the last slice is closed without them */
		ret = flight__cut(r.flight, NULL, now) ||
		      flight__write(r.flight, r.output, now, &wr.samples, &diag) || err ? 1 : 0;
		wr.lost = r.lost_written;
		r.w = NULL;
	} else {
		/* the last block first: the summary counts what the file holds */
		wr.err = profile_writer__flush(r.w);
		profile_writer__written(r.w, &wr.samples, &wr.lost, &wr.unwritten);
		ret = profile_writer__close(r.w, err != 0, &diag) ? 1 : (err ? 1 : 0);
		r.w = NULL;
	}
	tail.written = now_ns(CLOCK_MONOTONIC);
	if (ret && diag.reason[0])
		fprintf(stderr, "sfprof record: %s\n", diag.reason);
	summary(&r, secs, &wr, stack_resets, scanned);
	if (r.buildid)
		buildid_record__finish(r.buildid, "record", stderr);
	timing(&r, &tail);
	goto out;
discard:
	/* no thread may write to it any more */
	pipeline__free(r.pipeline);
	r.pipeline = NULL;
	if (!r.flight)
		profile_writer__discard(r.w);
	r.w = NULL;
out:
	if (r.child > 0) {
		if (r.go_fd >= 0) {
			close(r.go_fd);		/* never started: it exits */
			r.go_fd = -1;
		} else {
			/* recording stopped first (Ctrl-C, --duration): the command stops too */
			kill(r.child, stop_signal ? stop_signal : SIGTERM);
		}
		waitpid(r.child, &child_status, 0);
	}
	if (r.go_fd >= 0)
		close(r.go_fd);
	if (r.exec_err_fd >= 0)
		close(r.exec_err_fd);
	pipeline__free(r.pipeline);
	flight__free(r.flight);
	buildid_keeper__free(r.buildid);
	sampler__free(r.sampler);
	rt_budget__free(r.reader_rt);
	for (unsigned i = 0; i < PIPELINE_MAX_WORKERS; i++)
		rt_budget__free(r.unwind_rt[i]);
	free(r.pids);
	free(r.tids);
	free(r.tid_pids);
	free(cmdline);
	return ret;
}
