/* SPDX-License-Identifier: BSD-2-Clause */
/* sfprof agent: windows made into pprof payloads per service, spooled on disk, pushed with retries. */
#ifndef SFPROF_AGENT_PUSH_H
#define SFPROF_AGENT_PUSH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "otel.h"
#include "service.h"

/* Which of Pyroscope's APIs payloads are made for and pushed to. */
enum push_api {
	PUSH_API_INGEST,		/* POST /ingest?QUERY, one gzipped pprof per service */
	PUSH_API_CONNECT,		/* push.v1.PusherService/Push: one PushRequest per window */
	PUSH_API_OTLP,			/* OTLP/HTTP: one ExportProfilesServiceRequest per window */
};

struct push_opts {
	const char *url;		/* the server; /ingest is added unless its path ends so */
	enum push_api api;		/* with PUSH_API_CONNECT, the procedure's path is added to url */
	/* with PUSH_API_OTLP: url is otel->endpoint, as given; headers, gzip and the resource */
	const struct otel_export *otel;
	const char *spool_dir;		/* payloads not pushed yet, one file each */
	const char *output_dir;		/* where windows are kept, or NULL: those a crash left unpushed go at start */
	uint64_t spool_bytes;		/* bound on them: the oldest go first, counted */
	const char *tenant;		/* X-Scope-OrgID, or NULL */
	const char *bearer_token;	/* Authorization: Bearer, or NULL */
	const char *basic_auth;		/* USER:PASSWORD, or NULL */
	enum group_by group_by;
	bool no_symbolize;
	bool no_inline;			/* no inlined frames (Lines of a Location) */
	bool python_only;		/* Python frames alone (--python-only) */
	const char *host;		/* the host label */
	uint32_t sample_rate;		/* Hz */
	double flush_secs;		/* at stop, how long to go on pushing what is spooled */
	double max_backoff_secs;	/* the longest wait between two tries */
	double push_timeout_secs;	/* the longest one push may take */
	FILE *log;			/* where failures are said (stderr), once per change */
};

struct push_stats {
	uint64_t windows;		/* windows made into payloads */
	uint64_t payloads;		/* payloads made: spooled, or dropped at once (no room) */
	uint64_t pushed;		/* payloads the server took */
	uint64_t failures;		/* tries that failed (and were retried) */
	uint64_t refused;		/* payloads the server refused for good (4xx), dropped */
	uint64_t dropped;		/* payloads dropped at the spool's bound, oldest first */
	uint64_t dropped_full;		/* payloads dropped because the spool's filesystem was full */
	uint64_t bad_windows;		/* windows that could not be read */
	uint64_t spooled_bytes;		/* what the spool holds now on disk (blocks), as bounded */
	uint64_t spooled;		/* payloads it holds now */
	uint64_t elsewhere;		/* of them, payloads for another API or server: left for a run that pushes there */
	uint64_t rejected;		/* OTLP: profiles a 2xx answer's partial success said were rejected */
};

struct pusher;

/**
 * pusher__new() - a thread that makes windows into payloads and pushes
 * them. Payloads left in the spool by an earlier run are pushed too, and
 * windows left in its windows/ directory, or written to opts.output_dir
 * but never made into payloads (a crash), are made into payloads first.
 * Each payload is spooled before it is pushed, each window's payloads once
 * (a mark in the spool says up to which window); each is pushed until its
 * 2xx status line comes, with a backoff of its own.
 * @return the pusher, or NULL with errno set (@err says why).
 */
struct pusher *pusher__new(const struct push_opts *opts, char *err, size_t errlen);

/**
 * pusher__window() - a whole window file covering [@from, @until) (Unix
 * seconds); with !@keep the pusher deletes it once its payloads are
 * spooled. Never blocks on the network. @return 0 or -ENOMEM.
 */
int pusher__window(struct pusher *p, const char *path, uint64_t from, uint64_t until, bool keep);

/** pusher__stats() - the counts so far. */
void pusher__stats(struct pusher *p, struct push_stats *st);

/**
 * pusher__begin_stop() - the flush starts now: at most opts.flush_secs
 * more, a push under way then cut (what it carried stays spooled unless its
 * 2xx came); windows may still be given. Accepts NULL.
 */
void pusher__begin_stop(struct pusher *p);

/**
 * pusher__stop() - make the windows given into payloads, push for at most
 * opts.flush_secs (what remains stays spooled for the next run), stop the
 * thread and free; accepts NULL. @st: the final counts, or NULL.
 */
void pusher__stop(struct pusher *p, struct push_stats *st);

/**
 * push_spool_windows_dir() - where windows wait to be made into payloads
 * when no output directory keeps them: DIR/windows. @return 0 or -ENOSPC.
 */
int push_spool_windows_dir(const char *spool_dir, char *buf, size_t cap);

#endif
