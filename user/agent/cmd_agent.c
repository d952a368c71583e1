/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof agent: the whole system sampled until stopped, cut into windows, each a whole profile, kept and/or pushed. */
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cmds.h"
#include "otel.h"
#include "outdir.h"
#include "push.h"
#include "record/recorder.h"
#include "record/sizes.h"
#include "common/clock.h"
#include "util/text.h"

/*
 * 19 Hz: a low rate keeps the agent's cost near nothing (38 samples/s on
 * two CPUs), and a prime keeps it out of step with the periodic work of the
 * programs sampled (timers at 10, 50, 100 Hz), which a round rate would
 * see always or never; Parca Agent chose 19 for the same reason.
 */
#define DEFAULT_FREQ		19
#define DEFAULT_WINDOW		10
/* Windows a cached binary is kept from eviction after its last use (symbolized by then) */
#define AGENT_KEEP_WINDOWS	6
/* See usage: what a month of running needs, not what a burst of recording wants. */
#define DEFAULT_MAX_MEMORY	(48ull << 20)
#define MIN_MAX_MEMORY		(16ull << 20)
#define DEFAULT_SPOOL_DIR	"/var/spool/sfprof"
#define DEFAULT_SPOOL_BYTES	(256ull << 20)
#define DEFAULT_KEEP_BYTES	(1ull << 30)
#define DEFAULT_KEEP_AGE	86400
#define DEFAULT_BUILDID_BYTES	(1ull << 30)
/* Samples this late after a window's end still go to it: the ring hands over within ms. */
#define CUT_GRACE_NS		300000000ull
/* Free space kept in the output directory for the next window, at least (twice the largest seen) */
#define MIN_ROOM		(64ull << 10)

static const char usage[] =
	"usage: sfprof agent [--window SECS] [-F HZ] [--output-dir DIR]\n"
	"                    [--push URL | --otlp-endpoint URL]\n"
	"                    [--group-by container|exe|comm] [--no-symbolize] ...\n"
	"\n"
	"Sample every process of the system until stopped (SIGTERM, SIGINT), cut into\n"
	"windows, each a whole profile, written to --output-dir and/or pushed to a\n"
	"profile server (Grafana Pyroscope's /ingest, one series per service), or to\n"
	"an OpenTelemetry Collector or backend over OTLP.\n"
	"\n"
	"  -F, --freq HZ          samples per second on each CPU (default 19: cheap, and\n"
	"                         a prime, out of step with programs' periodic work)\n"
	"      --window SECS      the windows' length (default 10); they start at\n"
	"                         multiples of SECS of the clock and tile time\n"
	"  -d, --duration SECS    stop after SECS seconds\n"
	"      --output-dir DIR   keep each window as DIR/window-FROM-UNTIL.sfprof (Unix\n"
	"                         seconds), written aside and renamed when whole\n"
	"      --keep-count N     ... at most N windows there (default: no bound)\n"
	"      --keep-bytes SIZE  ... at most SIZE bytes of them (default 1G)\n"
	"      --keep-age SECS    ... none that ended more than SECS ago (default 86400);\n"
	"                         the oldest go first, the newest always stays\n"
	"      --push URL         push each window to this server (http or https; its\n"
	"                         /ingest unless URL has a path): a gzipped pprof per\n"
	"                         service, name=SERVICE{host=...,container_id=...,exe=...}\n"
	"      --push-api API     ingest (the default: POST /ingest, a payload per\n"
	"                         service) or connect (Pyroscope's push.v1.PusherService/\n"
	"                         Push under URL: one PushRequest per window, a series per\n"
	"                         service with __name__=process_cpu, service_name= and\n"
	"                         the labels above)\n"
	"      --otlp-endpoint URL  push OpenTelemetry profiles over OTLP/HTTP instead\n"
	"                         (URL with no path gets /v1development/profiles): one\n"
	"                         ExportProfilesServiceRequest per window, a resource\n"
	"                         per service (service.name, host.name, container.id).\n"
	"                         Without --push or it, OTEL_EXPORTER_OTLP_PROFILES_\n"
	"                         ENDPOINT or ..._ENDPOINT select it; also read:\n"
	"                         OTEL_EXPORTER_OTLP_[PROFILES_]HEADERS (authentication\n"
	"                         goes there), _COMPRESSION=gzip, OTEL_RESOURCE_ATTRIBUTES\n"
	"                         and OTEL_SERVICE_NAME (on every resource; the profiled\n"
	"                         service's own service.name wins)\n"
	"      --group-by KEY     the service of a process: container (the default: its\n"
	"                         container's ID from its cgroup, docker, containerd,\n"
	"                         cri-o, podman, a Kubernetes pod's UID; a process in\n"
	"                         none by its executable), exe, or comm; by executable,\n"
	"                         a Python program is named by its script (app.py,\n"
	"                         with script=PATH) or module (python -m gunicorn:\n"
	"                         gunicorn, with module=gunicorn), beside exe=\n"
	"      --no-symbolize     push user frames as addresses in mappings with build IDs,\n"
	"                         for servers that symbolize themselves (Parca)\n"
	"      --no-inline        no functions inlined (DWARF's) as frames of their own\n"
	"      --python-only      Python functions alone: no native or kernel frames\n"
	"      --tenant ID        send X-Scope-OrgID: ID (a multi-tenant Pyroscope)\n"
	"      --bearer-token-file FILE  send Authorization: Bearer with FILE's first line\n"
	"      --basic-auth-file FILE    basic authentication, FILE's first line USER:PASSWORD\n"
	"                         (secrets come from files, never from the command line,\n"
	"                         which every user can read in /proc)\n"
	"      --spool-dir DIR    payloads not pushed yet (default " DEFAULT_SPOOL_DIR "):\n"
	"                         a server slow or down loses nothing; they are tried again\n"
	"                         with backoff (1 s doubling to --max-backoff, less a\n"
	"                         random part of up to half), and\n"
	"                         the next run pushes what a run left\n"
	"      --spool-size SIZE  bound on the spool (default 256M): past it the oldest\n"
	"                         payloads are dropped, and counted\n"
	"      --flush-timeout SECS  at stop, how long to go on pushing (default 5)\n"
	"      --max-backoff SECS the longest wait between two tries (default 60); each\n"
	"                         payload has its own, so that one the server cannot take\n"
	"                         holds back no other\n"
	"      --push-timeout SECS the longest one push may take (default 30); a push\n"
	"                         whose 2xx status line came is delivered\n"
	"      --max-memory SIZE  bound on the record path (default 48M, at least 16M):\n"
	"                         the sample ring 1/8 (at least 4M), queues 3/8 (touched\n"
	"                         as used), the stack index 1/16, unwind tables 1/4\n"
	"      --unwind-threads N threads that unwind (default 1: at 19 Hz one thread is\n"
	"                         idle most of the time, and each holds a process table)\n"
	"      --no-buildid-cache don't keep the binaries sampled processes map, by which\n"
	"                         a short-lived program is named after its file is gone\n"
	"      --buildid-cache-size SIZE  bound on that cache (default 1G)\n"
	"\n"
	"SIGHUP reopens the output directory (made again if it was moved away). Needs\n"
	"root, or CAP_BPF, CAP_PERFMON and the right to read every process.\n";

static volatile sig_atomic_t stop_signal, hup_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static void on_hup(int sig)
{
	(void)sig;
	hup_signal = 1;
}

struct agent {
	/* options */
	unsigned window;
	uint32_t freq;
	double duration;
	const char *output_dir;
	struct retention keep;
	struct push_opts push;
	const char *otlp_endpoint;	/* --otlp-endpoint */
	struct otel_export otel;	/* it and the OTEL_* variables, checked */
	char *token, *basic;		/* read from their files */
	uint64_t max_memory;
	unsigned workers;
	bool no_buildid_cache;
	uint64_t buildid_bytes;
	/* state */
	struct utsname uts;
	char win_dir[4096];		/* where windows are written: the output or spool's windows dir */
	int dirfd;			/* that directory, reopened on SIGHUP */
	struct recorder *rec;
	struct pusher *pusher;
	uint64_t clock_offset;		/* CLOCK_REALTIME - CLOCK_MONOTONIC, ns, at start */
	/* the current window */
	struct profile_writer *w;
	int w_dirfd;			/* the directory it is written in (a dup) */
	char w_tmp[64];			/* its name there until whole */
	uint64_t from, until;		/* Unix seconds */
	uint64_t cut_mono;		/* until, on CLOCK_MONOTONIC */
	/* totals */
	uint64_t windows, samples, failed_windows, lost_total;
	uint64_t empty_windows;		/* written with no sample: no payload to push */
	uint64_t largest_window;	/* bytes: what the next one is given room for */
	uint64_t dropped_full;		/* kept windows deleted to make room on a full disk */
	uint64_t lost_full;		/* windows lost as they were written, the disk full */
	bool said_full;
	bool made_win_dir, made_spool_dir;	/* removed if the agent fails to start */
	int err;			/* stops the agent, unless the disk is full (start_over) */
};

/* The first line of a secret's file: said as an error if it cannot be read or is open to others. */
static char *read_secret(const char *path, const char *opt)
{
	char line[4096];
	struct stat st;
	FILE *f = fopen(path, "re");
	char *s;

	if (!f) {
		fprintf(stderr, "sfprof agent: %s %s: %s\n", opt, path, strerror(errno));
		return NULL;
	}
	if (!fstat(fileno(f), &st) && (st.st_mode & 077))
		fprintf(stderr, "sfprof agent: %s %s: readable by others (mode %03o): keep it 0600\n",
			opt, path, st.st_mode & 0777);
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, "\r\n")] = '\0';
	if (!line[0]) {
		fprintf(stderr, "sfprof agent: %s %s: empty\n", opt, path);
		return NULL;
	}
	s = strdup(line);
	explicit_bzero(line, sizeof(line));
	return s;
}

static int parse_uint(const char *arg, uint64_t min, uint64_t max, uint64_t *v)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(arg, &end, 10);
	if (end == arg || *end || errno || arg[0] == '-' || x < min || x > max)
		return -EINVAL;
	*v = x;
	return 0;
}

enum {
	OPT_WINDOW = 0x3000, OPT_OUTPUT_DIR, OPT_KEEP_COUNT, OPT_KEEP_BYTES, OPT_KEEP_AGE,
	OPT_PUSH, OPT_GROUP_BY, OPT_NO_SYMBOLIZE, OPT_NO_INLINE, OPT_TENANT, OPT_BEARER, OPT_BASIC,
	OPT_SPOOL_DIR, OPT_SPOOL_SIZE, OPT_FLUSH, OPT_MAX_MEMORY, OPT_THREADS,
	OPT_NO_BUILDID, OPT_BUILDID_SIZE, OPT_MAX_BACKOFF, OPT_PUSH_TIMEOUT, OPT_PYTHON_ONLY,
	OPT_PUSH_API, OPT_OTLP_ENDPOINT,
};

/* @return 0, 1 for --help, or 2 (said). */
static int parse_args(struct agent *a, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "freq", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "output-dir", required_argument, NULL, OPT_OUTPUT_DIR },
		{ "keep-count", required_argument, NULL, OPT_KEEP_COUNT },
		{ "keep-bytes", required_argument, NULL, OPT_KEEP_BYTES },
		{ "keep-age", required_argument, NULL, OPT_KEEP_AGE },
		{ "push", required_argument, NULL, OPT_PUSH },
		{ "push-api", required_argument, NULL, OPT_PUSH_API },
		{ "otlp-endpoint", required_argument, NULL, OPT_OTLP_ENDPOINT },
		{ "group-by", required_argument, NULL, OPT_GROUP_BY },
		{ "no-symbolize", no_argument, NULL, OPT_NO_SYMBOLIZE },
		{ "no-inline", no_argument, NULL, OPT_NO_INLINE },
		{ "python-only", no_argument, NULL, OPT_PYTHON_ONLY },
		{ "tenant", required_argument, NULL, OPT_TENANT },
		{ "bearer-token-file", required_argument, NULL, OPT_BEARER },
		{ "basic-auth-file", required_argument, NULL, OPT_BASIC },
		{ "spool-dir", required_argument, NULL, OPT_SPOOL_DIR },
		{ "spool-size", required_argument, NULL, OPT_SPOOL_SIZE },
		{ "flush-timeout", required_argument, NULL, OPT_FLUSH },
		{ "max-backoff", required_argument, NULL, OPT_MAX_BACKOFF },
		{ "push-timeout", required_argument, NULL, OPT_PUSH_TIMEOUT },
		{ "max-memory", required_argument, NULL, OPT_MAX_MEMORY },
		{ "unwind-threads", required_argument, NULL, OPT_THREADS },
		{ "no-buildid-cache", no_argument, NULL, OPT_NO_BUILDID },
		{ "buildid-cache-size", required_argument, NULL, OPT_BUILDID_SIZE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *bearer_file = NULL, *basic_file = NULL;
	bool push_api = false;
	char why[256];
	uint64_t v;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "F:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'F':
			if (parse_uint(optarg, 1, 100000, &v)) {
				fprintf(stderr, "sfprof agent: -F takes a frequency from 1 to 100000 Hz\n");
				return 2;
			}
			a->freq = v;
			break;
		case 'd':
			a->duration = strtod(optarg, &end);
			if (*end || end == optarg || !(a->duration > 0)) {
				fprintf(stderr, "sfprof agent: --duration takes a positive number of seconds\n");
				return 2;
			}
			break;
		case OPT_WINDOW:
			if (parse_uint(optarg, 1, 3600, &v)) {
				fprintf(stderr, "sfprof agent: --window takes whole seconds, 1 to 3600\n");
				return 2;
			}
			a->window = v;
			break;
		case OPT_OUTPUT_DIR:
			a->output_dir = optarg;
			break;
		case OPT_KEEP_COUNT:
			if (parse_uint(optarg, 1, UINT64_MAX, &a->keep.count)) {
				fprintf(stderr, "sfprof agent: --keep-count takes a number of windows, at least 1\n");
				return 2;
			}
			break;
		case OPT_KEEP_BYTES:
			if (parse_size(optarg, &a->keep.bytes)) {
				fprintf(stderr, "sfprof agent: --keep-bytes takes a size (K, M, G suffixes)\n");
				return 2;
			}
			break;
		case OPT_KEEP_AGE:
			if (parse_uint(optarg, 1, UINT64_MAX / 2, &a->keep.age_secs)) {
				fprintf(stderr, "sfprof agent: --keep-age takes seconds, at least 1\n");
				return 2;
			}
			break;
		case OPT_PUSH:
			if (strncmp(optarg, "http://", 7) && strncmp(optarg, "https://", 8)) {
				fprintf(stderr, "sfprof agent: --push takes an http:// or https:// URL\n");
				return 2;
			}
			a->push.url = optarg;
			break;
		case OPT_PUSH_API:
			if (!strcmp(optarg, "ingest"))
				a->push.api = PUSH_API_INGEST;
			else if (!strcmp(optarg, "connect"))
				a->push.api = PUSH_API_CONNECT;
			else {
				fprintf(stderr, "sfprof agent: --push-api takes ingest or connect\n");
				return 2;
			}
			push_api = true;
			break;
		case OPT_OTLP_ENDPOINT:
			a->otlp_endpoint = optarg;
			break;
		case OPT_GROUP_BY:
			if (!strcmp(optarg, "container"))
				a->push.group_by = GROUP_CONTAINER;
			else if (!strcmp(optarg, "exe"))
				a->push.group_by = GROUP_EXE;
			else if (!strcmp(optarg, "comm"))
				a->push.group_by = GROUP_COMM;
			else {
				fprintf(stderr, "sfprof agent: --group-by takes container, exe or comm\n");
				return 2;
			}
			break;
		case OPT_NO_SYMBOLIZE:
			a->push.no_symbolize = true;
			break;
		case OPT_NO_INLINE:
			a->push.no_inline = true;
			break;
		case OPT_PYTHON_ONLY:
			a->push.python_only = true;
			break;
		case OPT_TENANT:
			for (const char *s = optarg; *s; s++)
				if ((unsigned char)*s < 0x21 || *s == 0x7f) {
					fprintf(stderr, "sfprof agent: --tenant: no spaces or control characters\n");
					return 2;
				}
			a->push.tenant = optarg;
			break;
		case OPT_BEARER:
			bearer_file = optarg;
			break;
		case OPT_BASIC:
			basic_file = optarg;
			break;
		case OPT_SPOOL_DIR:
			a->push.spool_dir = optarg;
			break;
		case OPT_SPOOL_SIZE:
			if (parse_size(optarg, &a->push.spool_bytes) || a->push.spool_bytes < 4096) {
				fprintf(stderr, "sfprof agent: --spool-size takes a size of at least 4K\n");
				return 2;
			}
			break;
		case OPT_FLUSH:
			a->push.flush_secs = strtod(optarg, &end);
			if (*end || end == optarg || !(a->push.flush_secs >= 0) || a->push.flush_secs > 3600) {
				fprintf(stderr, "sfprof agent: --flush-timeout takes 0 to 3600 seconds\n");
				return 2;
			}
			break;
		case OPT_MAX_BACKOFF:
			a->push.max_backoff_secs = strtod(optarg, &end);
			if (*end || end == optarg || !(a->push.max_backoff_secs >= 1) ||
			    a->push.max_backoff_secs > 3600) {
				fprintf(stderr, "sfprof agent: --max-backoff takes 1 to 3600 seconds\n");
				return 2;
			}
			break;
		case OPT_PUSH_TIMEOUT:
			a->push.push_timeout_secs = strtod(optarg, &end);
			if (*end || end == optarg || !(a->push.push_timeout_secs >= 0.1) ||
			    a->push.push_timeout_secs > 3600) {
				fprintf(stderr, "sfprof agent: --push-timeout takes 0.1 to 3600 seconds\n");
				return 2;
			}
			break;
		case OPT_MAX_MEMORY:
			if (parse_size(optarg, &a->max_memory) || a->max_memory < MIN_MAX_MEMORY) {
				fprintf(stderr, "sfprof agent: --max-memory takes a size of at least 16M\n");
				return 2;
			}
			break;
		case OPT_THREADS:
			if (parse_uint(optarg, 1, PIPELINE_MAX_WORKERS, &v)) {
				fprintf(stderr, "sfprof agent: --unwind-threads takes 1 to %d\n",
					PIPELINE_MAX_WORKERS);
				return 2;
			}
			a->workers = v;
			break;
		case OPT_NO_BUILDID:
			a->no_buildid_cache = true;
			break;
		case OPT_BUILDID_SIZE:
			if (parse_size(optarg, &a->buildid_bytes)) {
				fprintf(stderr, "sfprof agent: --buildid-cache-size takes a size\n");
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
	if (optind < argc) {
		fprintf(stderr, "sfprof agent: unexpected argument '%s': the agent samples the whole "
			"system\n", argv[optind]);
		return 2;
	}
	if (a->push.url && a->otlp_endpoint) {
		fprintf(stderr, "sfprof agent: --push or --otlp-endpoint: windows are pushed to one "
			"destination\n");
		return 2;
	}
	if (a->push.url) {
		/* --push says where: an OTEL endpoint meant for the SDKs of the host's programs stays theirs */
		const char *env = otel_getenv(NULL, "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");

		if (!env || !*env)
			env = otel_getenv(NULL, "OTEL_EXPORTER_OTLP_ENDPOINT");
		if (env && *env)
			fprintf(stderr, "sfprof agent: OTEL_EXPORTER_OTLP_*ENDPOINT ignored: windows go to "
				"--push %s\n", a->push.url);
	} else if (otel_export_read(&a->otel, a->otlp_endpoint, otel_getenv, NULL, why,
				    sizeof(why))) {
		/* bad OTEL_* settings are said now, not when the first window is pushed */
		fprintf(stderr, "sfprof agent: %s\n", why);
		return 2;
	} else if (a->otel.from != OTEL_FROM_NONE) {
		if (bearer_file || basic_file || a->push.tenant || push_api) {
			fprintf(stderr, "sfprof agent: --tenant, --push-api and the authentication files "
				"are for --push: an OTLP endpoint's authentication goes in "
				"OTEL_EXPORTER_OTLP_HEADERS\n");
			return 2;
		}
		a->push.url = a->otel.endpoint;
		a->push.api = PUSH_API_OTLP;
		a->push.otel = &a->otel;
	}
	if (!a->output_dir && !a->push.url) {
		fprintf(stderr, "sfprof agent: say where windows go: --output-dir DIR, --push URL or "
			"--otlp-endpoint URL, or one of them and --output-dir\n\n%s", usage);
		return 2;
	}
	if (!a->push.url && (bearer_file || basic_file || a->push.tenant || a->push.no_symbolize ||
			     push_api)) {
		fprintf(stderr, "sfprof agent: --tenant, --no-symbolize, --push-api and the "
			"authentication files go with --push (--no-symbolize with --otlp-endpoint too)\n");
		return 2;
	}
	if (bearer_file && basic_file) {
		fprintf(stderr, "sfprof agent: --bearer-token-file or --basic-auth-file, not both\n");
		return 2;
	}
	if (bearer_file && !(a->token = read_secret(bearer_file, "--bearer-token-file")))
		return 2;
	if (basic_file && !(a->basic = read_secret(basic_file, "--basic-auth-file")))
		return 2;
	if (a->basic && !strchr(a->basic, ':')) {
		fprintf(stderr, "sfprof agent: --basic-auth-file %s: its line must be USER:PASSWORD\n",
			basic_file);
		return 2;
	}
	a->push.bearer_token = a->token;
	a->push.basic_auth = a->basic;
	return 0;
}

/* Open (make if need be, *@made then) the directory windows are written in. @return its fd, or -errno (said). */
static int open_dir(const char *dir, bool *made)
{
	int fd;

	if (!mkdir(dir, 0700)) {
		if (made)
			*made = true;
	} else if (errno != EEXIST) {
		fprintf(stderr, "sfprof agent: %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "sfprof agent: %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	return fd;
}

/* A writer for the window starting at @from (Unix s): in the windows' directory under a .tmp name. NULL: said. */
static struct profile_writer *open_window(struct agent *a, uint64_t from, int *dirfd, char *tmp,
					  size_t tmplen)
{
	struct profile_diag diag = { "" };
	struct profile_meta meta = {
		.flags = PROFILE_F_SYSTEM_WIDE, .created_ns = clock_real_ns(),
		.freq_hz = a->freq, .stack_size = RECORDER_STACK_START,
		.clock_offset_ns = a->clock_offset, .host = a->uts.nodename,
		.release = a->uts.release, .machine = a->uts.machine, .cmdline = "sfprof agent",
	};
	struct profile_writer *w;
	char path[128];

	*dirfd = dup(a->dirfd);
	if (*dirfd < 0) {
		fprintf(stderr, "sfprof agent: %s\n", strerror(errno));
		return NULL;
	}
	snprintf(tmp, tmplen, ".window-%010" PRIu64 ".tmp", from);
	/* through the directory's descriptor: a directory moved since (SIGHUP) is still written whole */
	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", *dirfd, tmp);
	unlinkat(*dirfd, tmp, 0);	/* an unfinished one of an earlier run: never whole */
	w = profile_writer__create(path, &meta, &diag);
	if (!w) {
		fprintf(stderr, "sfprof agent: %s/%s: %s\n", a->win_dir, tmp, diag.reason);
		close(*dirfd);
		*dirfd = -1;
	}
	return w;
}

/* The end of the window that holds Unix second @t: the next multiple of the window's length. */
static uint64_t window_end(const struct agent *a, uint64_t t)
{
	return (t / a->window + 1) * a->window;
}

/*
 * Close a window and give it out: renamed from its .tmp name once whole
 * (into the directory as it is now, after a SIGHUP), kept within the
 * retention bounds, handed to the pusher. A window that cannot be written
 * whole is removed and counted.
 */
static void finish_window(struct agent *a, struct profile_writer *w, int dirfd, const char *tmp,
			  uint64_t from, uint64_t until)
{
	struct profile_diag diag = { "" };
	uint64_t samples = profile_writer__samples(w);
	struct stat st;
	char name[64], path[4200];

	snprintf(name, sizeof(name), "window-%010" PRIu64 "-%010" PRIu64 ".sfprof", from, until);
	if (profile_writer__close(w, false, &diag)) {
		fprintf(stderr, "sfprof agent: %s: not kept\n", diag.reason);
		unlinkat(dirfd, tmp, 0);
		a->failed_windows++;
		close(dirfd);
		return;
	}
	if (renameat(dirfd, tmp, a->dirfd, name) && renameat(dirfd, tmp, dirfd, name)) {
		fprintf(stderr, "sfprof agent: %s/%s: %s: not kept\n", a->win_dir, name, strerror(errno));
		unlinkat(dirfd, tmp, 0);
		a->failed_windows++;
		close(dirfd);
		return;
	}
	close(dirfd);
	if (!fstatat(a->dirfd, name, &st, 0) && (uint64_t)st.st_blocks * 512 > a->largest_window)
		a->largest_window = st.st_blocks * 512;
	a->windows++;
	if (!samples)
		a->empty_windows++;
	a->samples += samples;
	window_name(path, sizeof(path), a->win_dir, from, until);
	if (a->output_dir)
		outdir_retain(a->win_dir, &a->keep, clock_real_ns() / 1000000000ull);
	if (a->pusher && pusher__window(a->pusher, path, from, until, a->output_dir != NULL))
		fprintf(stderr, "sfprof agent: %s: out of memory: not pushed\n", path);
}

/*
 * Cut: the window ends at its until; the next starts there and ends at the
 * next multiple of the window's length after @t (Unix s), so that a stall
 * (a suspended machine) makes one long window, not many empty ones.
 */
static void cut(struct agent *a, uint64_t t)
{
	struct profile_writer *old = a->w, *nw;
	uint64_t from = a->from, until = a->until;
	int old_dirfd = a->w_dirfd, nw_dirfd, err;
	char old_tmp[sizeof(a->w_tmp)], nw_tmp[sizeof(a->w_tmp)];

	/* into the window ending: the samples lost since the last window */
	if ((err = recorder__write_lost(a->rec))) {
		a->err = err;
		return;
	}
	nw = open_window(a, until, &nw_dirfd, nw_tmp, sizeof(nw_tmp));
	if (!nw) {
		a->err = errno == ENOSPC || errno == EDQUOT ? -errno : -EIO;
		return;
	}
	/* every item queued before now is handled into the old window first */
	err = recorder__cut(a->rec, nw);
	memcpy(old_tmp, a->w_tmp, sizeof(old_tmp));
	a->w = nw;
	a->w_dirfd = nw_dirfd;
	memcpy(a->w_tmp, nw_tmp, sizeof(nw_tmp));
	a->from = until;
	a->until = window_end(a, t > until ? t : until);
	a->cut_mono = a->until * 1000000000ull - a->clock_offset;
	if (err) {
		fprintf(stderr, "sfprof agent: writing a window: %s\n", strerror(-err));
		a->err = err;
	}
	finish_window(a, old, old_dirfd, old_tmp, from, until);
}

/* The Unix second of monotonic time @mono. */
static uint64_t unix_secs(const struct agent *a, uint64_t mono)
{
	return (mono + a->clock_offset) / 1000000000ull;
}

/* Before each sample and task event: the ring hands them over in time order, the first past the end cuts. */
static void on_item(void *ctx, uint64_t time)
{
	struct agent *a = ctx;

	if (time >= a->cut_mono && !a->err)
		cut(a, unix_secs(a, time));
}

/* SIGHUP: the directory windows go to is opened again, made again if it was moved away. */
static void reopen(struct agent *a)
{
	int fd = open_dir(a->win_dir, NULL);

	if (fd < 0)
		return;		/* said; windows go on to the one open */
	close(a->dirfd);
	a->dirfd = fd;
	fprintf(stderr, "sfprof agent: %s reopened\n", a->win_dir);
}

/* Free bytes on the filesystem of the windows' directory; UINT64_MAX when it cannot be told. */
static uint64_t dir_avail(const struct agent *a)
{
	struct statvfs vfs;

	if (fstatvfs(a->dirfd, &vfs))
		return UINT64_MAX;
	return (uint64_t)vfs.f_bavail * vfs.f_frsize;
}

static int only_windows(const struct dirent *de)
{
	unsigned long long from, until;
	char end;

	return sscanf(de->d_name, "window-%llu-%llu.sfprof%c", &from, &until, &end) == 2;
}

/*
 * A full disk: the oldest windows kept in the output directory go (counted,
 * said once) until the next window has room, twice the largest written; at
 * least one with @one (the disk filled while a window was written). The
 * newest stays. Windows waiting in the spool are the pusher's, which keeps
 * room beside them.
 */
static void make_room(struct agent *a, bool one)
{
	uint64_t room = 2 * a->largest_window > MIN_ROOM ? 2 * a->largest_window : MIN_ROOM;
	struct dirent **names = NULL;
	int n, dropped = 0;

	if (!a->output_dir || (!one && dir_avail(a) >= room))
		return;
	n = scandir(a->win_dir, &names, only_windows, alphasort);
	for (int i = 0; i + 1 < n; i++) {
		if ((one && !dropped) || dir_avail(a) < room) {
			if (!unlinkat(a->dirfd, names[i]->d_name, 0))
				dropped++;
		}
		free(names[i]);
	}
	if (n > 0)
		free(names[n - 1]);
	free(names);
	a->dropped_full += dropped;
	if (dropped && !a->said_full) {
		fprintf(stderr, "sfprof agent: %s: the disk is full: the oldest windows are deleted, "
			"and counted\n", a->win_dir);
		a->said_full = true;
	} else if (!dropped && dir_avail(a) >= 4 * room) {
		a->said_full = false;	/* room again: a new shortage is said */
	}
}

static bool disk_full(int err)
{
	return err == -ENOSPC || err == -EDQUOT;
}

/*
 * The disk filled as a window was written: that window is lost (counted),
 * the oldest windows kept make room, and the recording goes on into a new
 * file for the same span, with new unwinding threads (a write error stops
 * theirs for good). An agent runs for months: a full disk must not stop it.
 * @return 0 or -errno (said).
 */
static int start_over(struct agent *a)
{
	recorder__end_threads(a->rec, true);
	profile_writer__discard(a->w);
	unlinkat(a->w_dirfd, a->w_tmp, 0);
	close(a->w_dirfd);
	a->w = NULL;
	a->lost_full++;
	a->err = 0;
	if (!a->said_full)
		fprintf(stderr, "sfprof agent: %s: the disk is full: the window being written is "
			"lost, and counted\n", a->win_dir);
	make_room(a, true);
	a->said_full = true;
	a->w = open_window(a, a->from, &a->w_dirfd, a->w_tmp, sizeof(a->w_tmp));
	if (!a->w)
		return -ENOSPC;
	return recorder__restart(a->rec, a->w);
}

/* An error that is not a full disk stops the agent (a full disk starts over). */
static bool stopped(void *ctx)
{
	struct agent *a = ctx;

	return stop_signal || (a->err && !disk_full(a->err));
}

static void read_failed(void *ctx, int err)
{
	(void)ctx;
	fprintf(stderr, "sfprof agent: reading samples: %s\n", strerror(-err));
}

/* @err writing (0: none), or a window that could not be cut: a full disk starts over. */
static int check(void *ctx, int err)
{
	struct agent *a = ctx;

	if (!err && disk_full(a->err))
		err = a->err;
	if (disk_full(err) && !(err = start_over(a)))
		return RECORDER_AGAIN;
	if (err)
		fprintf(stderr, "sfprof agent: writing a window: %s: stopped\n", strerror(-err));
	return err;
}

static int each_round(void *ctx, uint64_t now)
{
	struct agent *a = ctx;

	/* an idle system still gets its windows, once late samples had their chance */
	if (now >= a->cut_mono + CUT_GRACE_NS && !a->err)
		cut(a, unix_secs(a, now - CUT_GRACE_NS));
	if (hup_signal) {
		hup_signal = 0;
		reopen(a);
	}
	return 0;
}

static int each_second(void *ctx, uint64_t now)
{
	(void)now;
	make_room(ctx, false);
	return 0;
}

static long rss_kib(const char *field)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)))
			v = strtol(line + strlen(field), NULL, 10);
	fclose(f);
	return v;
}

/*
 * An agent that failed to start removes the directories it made, when
 * nothing but its own bookkeeping is in them (a window is never left: it is
 * discarded), so that a retry with other rights starts from where it was.
 */
static void unmake_dirs(struct agent *a)
{
	char path[4200];

	if (a->made_win_dir)
		rmdir(a->win_dir);
	if (!a->made_spool_dir)
		return;
	if (push_spool_windows_dir(a->push.spool_dir, path, sizeof(path)) == 0)
		rmdir(path);
	snprintf(path, sizeof(path), "%s/.converted", a->push.spool_dir);
	unlink(path);
	rmdir(a->push.spool_dir);
}

static void summary(struct agent *a, double secs, const struct push_stats *st)
{
	struct recorder_stats rs;
	const struct pipeline_stats *ps = &rs.pipeline;

	recorder__stats(a->rec, &rs);
	fprintf(stderr, "sfprof agent: %.1f s, %" PRIu64 " windows written (%" PRIu64 " not), %"
		PRIu64 " samples in them, %" PRIu64 " lost (%" PRIu64 " at the unwinders' queue "
		"bound); %" PRIu64 " processes with samples; RSS peak %ld KiB\n",
		secs, a->windows, a->failed_windows, a->samples, rs.lost_written, ps->dropped,
		ps->procs.processes, rss_kib("VmHWM:"));
	if (a->dropped_full || a->lost_full)
		fprintf(stderr, "sfprof agent: the disk full: %" PRIu64 " windows kept were deleted "
			"to make room, %" PRIu64 " lost as they were written\n", a->dropped_full,
			a->lost_full);
	if (ps->modules_refused)
		fprintf(stderr, "sfprof agent: %" PRIu64 " files not loaded at the unwind tables' bound "
			"(%.0f MiB, 1/4 of --max-memory): their frames were walked by frame pointers "
			"alone\n", ps->modules_refused, (double)rs.budget.modules / 1048576.0);
	if (!a->push.url)
		return;
	fprintf(stderr, "sfprof agent: push: %" PRIu64 " windows made into %" PRIu64 " payloads, %"
		PRIu64 " pushed, %" PRIu64 " tries failed, %" PRIu64 " refused, %" PRIu64
		" dropped at the spool bound, %" PRIu64 " unreadable windows; %" PRIu64
		" payloads (%" PRIu64 " bytes) still spooled\n",
		st->windows, st->payloads, st->pushed, st->failures, st->refused, st->dropped,
		st->bad_windows, st->spooled, st->spooled_bytes);
	if (st->refused)
		fprintf(stderr, "sfprof agent: push: %" PRIu64 " payloads refused by the server for "
			"what they are (HTTP 4xx, not 408 or 429): dropped\n", st->refused);
	if (st->dropped_full)
		fprintf(stderr, "sfprof agent: push: %" PRIu64 " payloads dropped, the spool's "
			"filesystem full\n", st->dropped_full);
	if (st->rejected)
		fprintf(stderr, "sfprof agent: push: %" PRIu64 " profiles rejected by the OTLP endpoint "
			"(partial success)\n", st->rejected);
	if (st->elsewhere)
		fprintf(stderr, "sfprof agent: push: %" PRIu64 " payloads spooled for another API or "
			"server left for a run that pushes there\n", st->elsewhere);
	if (a->empty_windows)
		fprintf(stderr, "sfprof agent: push: %" PRIu64 " windows held no sample: nothing "
			"pushed for them\n", a->empty_windows);
}

int cmd_agent(int argc, char **argv)
{
	struct agent a = {
		.window = DEFAULT_WINDOW, .freq = DEFAULT_FREQ, .max_memory = DEFAULT_MAX_MEMORY,
		.workers = 1, .buildid_bytes = DEFAULT_BUILDID_BYTES, .dirfd = -1, .w_dirfd = -1,
		.keep = { 0, DEFAULT_KEEP_BYTES, DEFAULT_KEEP_AGE },
		.push = { .spool_dir = DEFAULT_SPOOL_DIR, .spool_bytes = DEFAULT_SPOOL_BYTES,
			  .flush_secs = 5, .max_backoff_secs = 60, .push_timeout_secs = 30,
			  .group_by = GROUP_CONTAINER },
	};
	struct recorder_hooks hooks = {
		.item = on_item, .stopped = stopped, .read_failed = read_failed, .check = check,
		.round = each_round, .second = each_second,
	};
	struct recorder_opts ropts;
	enum recorder_step step;
	struct sigaction sa;
	struct push_stats pst = { 0 };
	char msg[512];
	uint64_t t0, now;
	double secs;
	int ret = 1, err;

	argv[0] = "sfprof agent";
	err = parse_args(&a, argc, argv);
	if (err)
		goto out_args;
	uname(&a.uts);
	a.push.host = a.uts.nodename;
	a.push.sample_rate = a.freq;
	a.push.log = stderr;
	if (a.output_dir) {
		snprintf(a.win_dir, sizeof(a.win_dir), "%s", a.output_dir);
	} else if (push_spool_windows_dir(a.push.spool_dir, a.win_dir, sizeof(a.win_dir))) {
		fprintf(stderr, "sfprof agent: --spool-dir: too long\n");
		goto out;
	}
	/* first what needs privileges: an agent that cannot sample leaves no directory behind */
	ropts = (struct recorder_opts){
		.name = "agent",
		.sampler = { .freq_hz = a.freq, .stack_size = RECORDER_STACK_START },
		.max_memory = a.max_memory, .ring_by_rate = true, .workers = a.workers,
		.copy_adaptive = true, .prepare = true, .python = true,
		/*
		 * The binaries of a window's samples stay until it is symbolized
		 * and pushed (a few windows); past that the cache is evicted by
		 * last use, this agent's entries with the rest, so that months of
		 * new binaries keep being kept at its bound.
		 */
		.buildid = !a.no_buildid_cache, .buildid_bytes = a.buildid_bytes,
		.buildid_protect_s = AGENT_KEEP_WINDOWS * (uint64_t)a.window + 60,
		.all = true, .duration = a.duration,
	};
	a.rec = recorder__new(&ropts, &hooks, &a, msg, sizeof(msg));
	if (!a.rec) {
		fprintf(stderr, "sfprof agent: %s\n", msg);
		goto out;
	}
	if (a.push.url) {
		struct stat st;

		a.made_spool_dir = lstat(a.push.spool_dir, &st) && errno == ENOENT;
		a.push.output_dir = a.output_dir;
		curl_global_init(CURL_GLOBAL_DEFAULT);
		a.pusher = pusher__new(&a.push, msg, sizeof(msg));
		if (!a.pusher) {
			fprintf(stderr, "sfprof agent: %s\n", msg);
			goto out;
		}
	}
	if ((a.dirfd = open_dir(a.win_dir, &a.made_win_dir)) < 0)
		goto out;
	if (a.output_dir)
		outdir_clean_tmp(a.win_dir);
	a.clock_offset = clock_real_ns() - clock_mono_ns();
	now = clock_real_ns() / 1000000000ull;
	a.from = now;
	a.until = window_end(&a, now);
	a.cut_mono = a.until * 1000000000ull - a.clock_offset;
	a.w = open_window(&a, a.from, &a.w_dirfd, a.w_tmp, sizeof(a.w_tmp));
	if (!a.w)
		goto out;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	/* the build-ID keeper, the unwinding threads writing into a.w, then sampling */
	if (recorder__prepare(a.rec, a.w) || recorder__start(a.rec))
		goto discard;
	fprintf(stderr, "sfprof agent: sampling every process at %u Hz, %u s windows%s%s%s%s%s\n",
		a.freq, a.window, a.output_dir ? " into " : "", a.output_dir ? a.output_dir : "",
		a.push.url ? ", pushed to " : "", a.push.url ? a.push.url : "",
		a.push.url && a.push.api == PUSH_API_CONNECT ? " (connect)" :
		a.push.url && a.push.api == PUSH_API_OTLP ? " (OTLP)" : "");
	t0 = clock_mono_ns();
	err = recorder__run(a.rec);
	if (!err)
		err = a.err;
	/* the flush's time starts at the signal: a push under way is cut at --flush-timeout */
	pusher__begin_stop(a.pusher);
	/* stopping: the current window is flushed whole, up to now */
	err = recorder__drain(a.rec, err, &step);
	if (step == RECORDER_READING)
		fprintf(stderr, "sfprof agent: reading samples: %s\n", strerror(-err));
	now = clock_real_ns();
	/* the last window ends at the next whole second: windows tile whole seconds */
	now = (now + 999999999ull) / 1000000000ull;
	/* none after a full disk that left no room for a new one (said) */
	if (a.w)
		finish_window(&a, a.w, a.w_dirfd, a.w_tmp, a.from, now > a.from ? now : a.from + 1);
	a.w = NULL;
	secs = (clock_mono_ns() - t0) / 1e9;
	/* what went and what stays is said after the last push */
	pusher__stop(a.pusher, &pst);
	a.pusher = NULL;
	summary(&a, secs, &pst);
	recorder__finish_keeper(a.rec, stderr);
	ret = err ? 1 : 0;
	goto out;
discard:
	/* no thread may write to it any more */
	recorder__end_threads(a.rec, false);
	if (a.w) {
		profile_writer__discard(a.w);
		unlinkat(a.w_dirfd, a.w_tmp, 0);
		close(a.w_dirfd);
		a.w = NULL;
	}
out:
	recorder__free(a.rec);
	pusher__stop(a.pusher, NULL);
	if (ret)
		unmake_dirs(&a);
	if (a.dirfd >= 0)
		close(a.dirfd);
	if (a.push.url)
		curl_global_cleanup();
	free(a.token);
	free(a.basic);
	otel_export_free(&a.otel);
	return ret;
out_args:
	free(a.token);
	free(a.basic);
	otel_export_free(&a.otel);
	return err == 1 ? 0 : err;
}
