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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buildid/buildid_keeper.h"
#include "cmds.h"
#include "events.h"
#include "flight.h"
#include "python.h"
#include "recorder.h"
#include "sizes.h"
#include "common/clock.h"
#include "util/text.h"

#define DEFAULT_FREQ	999
#define DEFAULT_MAX_MEMORY	(256ull << 20)
#define MIN_MAX_MEMORY		(64ull << 20)
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
	unsigned workers;	/* --unwind-threads (0: the recorder's default) */
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
	int child_status;
	int go_fd;		/* write a byte: the child may exec */
	int exec_err_fd;	/* the child's errno if exec failed; EOF when it worked */
	struct recorder *rec;
	struct profile_writer *w;	/* the file's writer (the flight recorder's are its own) */
	bool tty;
	double flight_secs;		/* --flight-recorder */
	struct flight *flight;
	uint64_t flight_dumps;
	unsigned rt_pct;		/* --rt-budget */
	uint64_t entered;		/* CLOCK_MONOTONIC: cmd_record() entered */
};

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
	m->created_ns = clock_real_ns();
	m->clock_offset_ns = m->created_ns - clock_mono_ns();
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

/*
 * The flight recorder's slice ends at @t: the threads finish it
 * (pipeline__cut()) and go on in the next. An error stops the recording,
 * through stop_signal's loop, as a write error would.
 */
static int flight_cut(struct record *r, uint64_t t)
{
	int err = recorder__write_lost(r->rec);

	if (!err)
		err = flight__cut(r->flight, recorder__pipeline(r->rec), t);
	recorder__set_writer(r->rec, flight__writer(r->flight));
	if (err) {
		fprintf(stderr, "%ssfprof record: flight recorder: %s: recording stopped\n",
			r->tty ? "\r\033[K" : "\n", strerror(-err));
		stop_signal = SIGTERM;
	}
	return err;
}

/* Before each sample and task event: the flight recorder's slice ends at the first past it. */
static void on_item(void *ctx, uint64_t time)
{
	struct record *r = ctx;

	if (r->flight && time >= flight__cut_at(r->flight))
		flight_cut(r, time);
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

/* On a terminal, a line rewritten every second; the summary replaces it at the end. */
static void progress(void *ctx)
{
	struct record *r = ctx;
	struct recorder_stats st;
	uint64_t samples, bytes;

	if (!r->tty)
		return;
	recorder__stats(r->rec, &st);
	recorder__written(r->rec, &samples, &bytes);
	fprintf(stderr, "\r\033[Ksfprof record: %" PRIu64 " samples, %" PRIu64 " lost, %" PRIu64
		" processes, %" PRIu64 " bytes written ...", samples, st.lost_written,
		st.pipeline.procs.processes, bytes);
}

/* What --off-cpu recorded and what it could not. */
static void offcpu_summary(const struct record *r, const struct recorder_stats *st)
{
	const struct offcpu_stats os = st->offcpu;

	if (!st->has_offcpu)
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
		    uint64_t stack_resets)
{
	uint64_t samples = wr->samples;
	struct recorder_stats rs;
	const struct pipeline_stats *ps = &rs.pipeline;
	const struct procs_stats *st = &ps->procs;
	const struct sampler_stats *ss = &rs.sampler;
	uint64_t bytes = 0;
	struct stat fst;

	recorder__stats(r->rec, &rs);
	if (stat(r->output, &fst) == 0)
		bytes = fst.st_size;
	fprintf(stderr, "%ssfprof record: %.1f s, %" PRIu64 " samples (%" PRIu64 " lost), %" PRIu64
		" with a user stack, %.1f%% of them complete; %" PRIu64 " processes; "
		"%d running at start; %" PRIu64 " bytes in %s (%.1f bytes/sample)\n",
		r->tty ? "\r\033[K" : "", secs, samples, wr->lost, st->user_stacks,
		st->user_stacks ? 100.0 * st->complete / st->user_stacks : 0.0, st->processes,
		rs.scanned, bytes, r->output, samples ? (double)bytes / samples : 0.0);
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
		"copies: %.0f bytes/sample, %s, %s, %" PRIu64 " stacks cut by the copy's end\n",
		ss->lost_ring + ss->lost_scratch + ss->malformed, ss->lost_queue, ps->dropped,
		(double)ps->queue_bytes / 1048576.0, rs.workers, ps->queued_peak / 1048576.0,
		ps->handled ? (double)ps->ustack_bytes / ps->handled : 0.0,
		r->stack_fixed ? "fixed by --stack-size" : "sized per thread",
		!ss->direct ? "copied into the ring" : r->no_python ? "read straight into the ring" :
		"read straight into the ring (CPython processes' copied aside, their frames walked in the copy)",
		st->copy_ran_out);
	if (!r->stack_fixed)
		fprintf(stderr, "sfprof record: %" PRIu64 " per-thread copy sizes set; %" PRIu64
			" samples (%.1f%%) of threads named before, their names not read\n", ps->resized,
			st->unnamed, ps->handled ? 100.0 * st->unnamed / ps->handled : 0.0);
	if (rs.workers > 1)
		fprintf(stderr, "sfprof record: %" PRIu64 " samples (%.1f%%) unwound by a thread helping "
			"their process's own thread\n", ps->helped, ps->handled ? 100.0 * ps->helped / ps->handled : 0.0);
	if (ps->dropped_events)
		fprintf(stderr, "sfprof record: %" PRIu64 " task events dropped at their queue bound: some "
			"processes may lack mappings\n", ps->dropped_events);
	fprintf(stderr, "sfprof record: files: %" PRIu64 " opened when mapped (of %" PRIu64 " executable "
		"mappings; %" PRIu64 " not opened); the longest a sample waited to be unwound %.1f ms, "
		"%" PRIu64 " samples over %.0f ms\n", ps->prepare.prepared, ps->prepare.asked,
		ps->prepare.failed, ps->slowest_ns / 1e6, ps->slow, PIPELINE_SLOW_NS / 1e6);
	if (ps->handled) {
		struct rusage ru;
		double cpu = 0;

		if (!getrusage(RUSAGE_SELF, &ru))
			cpu = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
			      (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
		fprintf(stderr, "sfprof record: user space per sample: %.2f us finding its process, "
			"%.2f us unwinding, %.2f us writing; %.2f us of CPU in all (the reader, task "
			"events, start and end included)\n", ps->process_ns / 1e3 / ps->handled,
			ps->unwind_ns / 1e3 / ps->handled, ps->write_ns / 1e3 / ps->handled,
			cpu * 1e6 / ps->handled);
	}
	if (ss->step_ns[STEP_SAMPLES]) {
		double n = (double)ss->step_ns[STEP_SAMPLES];

		fprintf(stderr, "sfprof record: the program sample's steps (ns per sample, each "
			"with a clock read): filter %.0f, header %.0f, registers %.0f, reserve %.0f, "
			"copy %.0f, submit %.0f, of %.0f samples\n", ss->step_ns[STEP_FILTER] / n,
			ss->step_ns[STEP_HEADER] / n, ss->step_ns[STEP_REGS] / n,
			ss->step_ns[STEP_RESERVE] / n, ss->step_ns[STEP_COPY] / n,
			ss->step_ns[STEP_SUBMIT] / n, n);
	}
	if (ps->jit.maps || ps->jit.dumps || ps->jit.code_tables || ps->jit.code_refused)
		fprintf(stderr, "sfprof record: JIT code: %" PRIu64 " perf maps and %" PRIu64 " jitdumps "
			"read, %" PRIu64 " pieces of code written; rows for %" PRIu64 " from unwinding "
			"info, %" PRIu64 " from their instructions (%" PRIu64 " could not be read "
			"exactly) and %" PRIu64 " as copies of those; %" PRIu64 " samples unwound again "
			"with them\n", ps->jit.maps, ps->jit.dumps, ps->jit.records, ps->jit.eh_tables,
			ps->jit.code_tables, ps->jit.code_refused, ps->jit.copy_tables, ps->jit.reunwound);
	if (ps->modules_refused)
		fprintf(stderr, "sfprof record: %" PRIu64 " files not loaded at the unwind tables' bound "
			"(%.0f MiB, 1/4 of --max-memory): their frames were walked by frame pointers "
			"alone\n", ps->modules_refused, (double)rs.budget.modules / 1048576.0);
	if (ps->py_processes || ss->py_faults || ss->py_truncated)
		fprintf(stderr, "sfprof record: Python: %" PRIu64 " processes running an interpreter, "
			"%" PRIu64 " frames named (%" PRIu64 " code objects unreadable, %" PRIu64
			" gone before they were named); %" PRIu64 " chains cut at %d frames, %"
			PRIu64 " ended by a read that failed\n",
			ps->py_processes, ps->py_frames, ps->py_unresolved, ps->py_stale, ss->py_truncated,
			PY_MAX_FRAMES, ss->py_faults);
	if (stack_resets)
		fprintf(stderr, "sfprof record: the index of stacks written passed its bound %" PRIu64
			" times: stacks seen again were written again\n", stack_resets);
	offcpu_summary(r, &rs);
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
	uint64_t real = clock_real_ns(), samples;
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

static bool stopped(void *ctx)
{
	(void)ctx;
	return stop_signal != 0;
}

static void read_failed(void *ctx, int err)
{
	(void)ctx;
	fprintf(stderr, "\nsfprof record: reading samples: %s\n", strerror(-err));
}

/* An error writing the file stops recording at once: what is written stays whole. */
static int check(void *ctx, int err)
{
	struct record *r = ctx;

	if (err)
		fprintf(stderr, "%ssfprof record: writing %s: %s: recording stopped\n",
			r->tty ? "\r\033[K" : "\n", r->output, strerror(-err));
	return err;
}

/* Each round: the flight recorder's idle cut and dumps, SIGHUP, the command's exit. */
static int each_round(void *ctx, uint64_t now)
{
	struct record *r = ctx;

	/* an idle recording still moves on: samples have had 100 ms to come */
	if (r->flight && now >= flight__cut_at(r->flight) + 100000000ull &&
	    flight_cut(r, now - 100000000ull))
		return RECORDER_STOP;
	if (r->flight && dump_signal) {
		dump_signal = 0;
		if (flight_dump(r, now))
			return RECORDER_STOP;
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
	if (r->child > 0 && waitpid(r->child, &r->child_status, WNOHANG) == r->child) {
		r->child = 0;
		return RECORDER_STOP;
	}
	return 0;
}

/* Each second: -p's targets all gone stop the recording, as perf record -p does. */
static int each_second(void *ctx, uint64_t now)
{
	struct record *r = ctx;

	(void)now;
	return r->npids && !targets_alive(r) ? RECORDER_STOP : 0;
}

/*
 * What the recording's time went to: its start, the window sampled (on the
 * samples' own clock, CLOCK_MONOTONIC, as script prints them) and the
 * finishing after it, each step of it. The last line: what it says is
 * true of the whole command, up to its exit. @written: the file flushed
 * and closed.
 */
static void timing(const struct record *r, const struct recorder_stats *st, uint64_t written)
{
	const struct rt_budget_stats *rs = &st->reader_rt, *us = &st->unwind_rt;
	uint64_t now, joined_at = st->pipeline.joined_at;

	if (!r->rt_pct)
		fprintf(stderr, "sfprof record: the reader ran at normal priority (--rt-budget 0)\n");
	else if (rs->refused)
		fprintf(stderr, "sfprof record: the reader ran at normal priority: real-time "
			"priority refused (%s%s)\n", strerror(-rs->err),
			rs->err == -EPERM ? ": it needs CAP_SYS_NICE" : "");
	else
		fprintf(stderr, "sfprof record: the reader ran at real-time priority (SCHED_FIFO %d), "
			"each thread for at most %u%% of one CPU per %.0f ms: %.3f s of CPU so, its "
			"budget used up in %" PRIu64 " of %" PRIu64 " windows; the unwinding threads "
			"%.3f s so in %" PRIu64 " windows while their queues backed up, used up in %"
			PRIu64 "\n", RT_BUDGET_PRIO_READER, r->rt_pct, RT_BUDGET_WINDOW_NS / 1e6,
			rs->rt_ns / 1e9, rs->over, rs->windows, us->rt_ns / 1e9, us->windows, us->over);
	if (joined_at < st->drained || joined_at > st->unwound)
		joined_at = st->unwound;
	now = clock_mono_ns();
	fprintf(stderr, "sfprof record: sampled %.3f s, CLOCK_MONOTONIC %llu.%06llu to %llu.%06llu; "
		"started %.3f s before; finished in %.3f s (the ring drained %.3f s, the unwinding "
		"threads' backlog %.3f s, the kernel's JIT code named %.3f s, the file written "
		"%.3f s, the build-ID cache %.3f s)\n",
		(st->t_end - st->t0) / 1e9, (unsigned long long)(st->t0 / 1000000000ull),
		(unsigned long long)(st->t0 / 1000 % 1000000),
		(unsigned long long)(st->t_end / 1000000000ull),
		(unsigned long long)(st->t_end / 1000 % 1000000), (st->t0 - r->entered) / 1e9,
		(now - st->t_end) / 1e9, (st->drained - st->t_end) / 1e9,
		(joined_at - st->drained) / 1e9, (st->unwound - joined_at) / 1e9,
		(written - st->unwound) / 1e9, (now - written) / 1e9);
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
			    .stack_size = RECORDER_STACK_START, .max_memory = DEFAULT_MAX_MEMORY,
			    .buildid_cache_bytes = BUILDID_KEEPER_DEFAULT_BYTES,
			    .off_cpu_min_ns = DEFAULT_OFF_CPU_MIN_NS, .rt_pct = RT_BUDGET_DEFAULT_PCT,
			    .go_fd = -1, .exec_err_fd = -1, .entered = clock_mono_ns() };
	struct recorder_hooks hooks = {
		.item = on_item, .stopped = stopped, .read_failed = read_failed, .check = check,
		.round = each_round, .second = each_second, .progress = progress, .warn = on_warn,
		.lost_each_second = true,
	};
	struct recorder_opts ropts;
	struct recorder_budget budget;
	struct recorder_stats rs;
	enum recorder_step step;
	struct profile_diag diag = { "" };
	struct profile_meta meta;
	struct utsname uts;
	char msg[512], *cmdline = NULL;
	int ret = 1, err;
	uint64_t stack_resets, written;
	struct written wr = { 0 };
	struct sigaction old_hup;
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
	/*
	 * Before the file exists: a signal while the sampler loads (seconds
	 * on a loaded machine) ends the recording at its first round, with
	 * the file whole, instead of killing sfprof with the file half made.
	 */
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
	if (r.flight_secs)
		signal(SIGUSR2, on_usr2);

	fill_meta(&r, &meta, &uts, &cmdline);
	recorder_budget__split(r.max_memory, 0, &budget);
	if (r.flight_secs) {
		r.flight = flight__new(r.flight_secs, budget.flight, &meta, clock_mono_ns());
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
	ropts = (struct recorder_opts){
		.name = "record",
		.sampler = { r.freq, r.stack_size, !r.all, r.command && !r.all, 0,
			     r.events.n ? &r.events : NULL, r.event_ids, r.period, r.ntids > 0,
			     r.off_cpu, r.off_cpu_min_ns, r.off_cpu_event, r.no_python },
		.max_memory = r.max_memory, .workers = r.workers, .copy_adaptive = !r.stack_fixed,
		.prepare = !r.no_prepare, .fp_only = r.fp_only, .python = !r.no_python,
		.say_no_python = true,
		/*
		 * A recording's binaries stay as long as it runs; a flight
		 * recorder's, which runs for months, while a dump may still
		 * hold their samples.
		 */
		.buildid = !r.no_buildid_cache, .buildid_bytes = r.buildid_cache_bytes,
		.buildid_protect_s = r.flight_secs ? 2 * (uint64_t)r.flight_secs + 60 :
				     BUILDID_KEEPER_PROTECT_ALL,
		.rt = true, .rt_pct = r.rt_pct,
		.all = r.all, .pids = r.pids, .npids = r.npids, .tids = r.tids,
		.tid_pids = r.tid_pids, .ntids = r.ntids, .held = r.child,
		.exact_window = true, .duration = r.duration,
	};
	r.rec = recorder__new(&ropts, &hooks, &r, msg, sizeof(msg));
	if (!r.rec) {
		fprintf(stderr, "sfprof record: %s\n", msg);
		goto discard;
	}
	if (recorder__prepare(r.rec, r.w))
		goto discard;

	if (recorder__start(r.rec))
		goto discard;
	/* the command after every CPU is attached */
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
	err = recorder__run(r.rec);
	err = recorder__drain(r.rec, err, &step);
	if (step == RECORDER_READING)
		fprintf(stderr, "sfprof record: reading samples: %s\n", strerror(-err));
	else if (step == RECORDER_WRITING)
		fprintf(stderr, "sfprof record: writing %s: %s\n", r.output, strerror(-err));
	r.w = recorder__writer(r.rec);
	stack_resets = profile_writer__stack_resets(r.w);
	if (r.flight) {
		uint64_t now = clock_mono_ns();

		/* the threads are done: the last slice is closed without them */
		ret = flight__cut(r.flight, NULL, now) ||
		      flight__write(r.flight, r.output, now, &wr.samples, &diag) || err ? 1 : 0;
		recorder__stats(r.rec, &rs);
		wr.lost = rs.lost_written;
		r.w = NULL;
	} else {
		/* the last block first: the summary counts what the file holds */
		wr.err = profile_writer__flush(r.w);
		profile_writer__written(r.w, &wr.samples, &wr.lost, &wr.unwritten);
		ret = profile_writer__close(r.w, err != 0, &diag) ? 1 : (err ? 1 : 0);
		r.w = NULL;
	}
	written = clock_mono_ns();
	if (ret && diag.reason[0])
		fprintf(stderr, "sfprof record: %s\n", diag.reason);
	recorder__stats(r.rec, &rs);
	/* the duration is the sampling's window: the backlog is handled after it */
	secs = (rs.t_end - rs.t0) / 1e9;
	summary(&r, secs, &wr, stack_resets);
	recorder__finish_keeper(r.rec, stderr);
	recorder__stats(r.rec, &rs);
	timing(&r, &rs, written);
	goto out;
discard:
	/* no thread may write to it any more */
	recorder__end_threads(r.rec, false);
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
		waitpid(r.child, &r.child_status, 0);
	}
	if (r.go_fd >= 0)
		close(r.go_fd);
	if (r.exec_err_fd >= 0)
		close(r.exec_err_fd);
	recorder__free(r.rec);
	flight__free(r.flight);
	free(r.pids);
	free(r.tids);
	free(r.tid_pids);
	free(cmdline);
	return ret;
}
