/* SPDX-License-Identifier: BSD-2-Clause */
/* Pyroscope's push.v1.PusherService/Push over the connect protocol: the request, its labels, its URL, its errors. */
#ifndef SFPROF_AGENT_CONNECT_H
#define SFPROF_AGENT_CONNECT_H

#include <stddef.h>
#include <stdint.h>

#include "service.h"

/* The procedure's path under the server's URL (connect: /PACKAGE.SERVICE/METHOD). */
#define CONNECT_PUSH_PATH "/push.v1.PusherService/Push"
/* __name__, service_name, host, container_id, pod_uid, exe, script, module, pyroscope_spy */
#define CONNECT_MAX_LABELS 9

struct connect_label {
	const char *name;
	const char *value;
};

/**
 * connect_labels() - the labels of @sv's series, those set: the ones the
 * /ingest query carries (service_query(): host, container_id, pod_uid, exe,
 * script, module) with __name__ (process_cpu), service_name and
 * pyroscope_spy (sfprof, as /ingest's spyName becomes). Every name is a
 * valid Prometheus label name. @hostbuf holds the host cleaned as
 * service_query() cleans it; @out points into @sv and @hostbuf.
 * @return how many, at most CONNECT_MAX_LABELS.
 */
size_t connect_labels(const struct service *sv, const char *host, char hostbuf[128],
		      struct connect_label out[CONNECT_MAX_LABELS]);

/*
 * A PushRequest being built: one RawProfileSeries per service. Protobuf by
 * field numbers (grafana/pyroscope api/push/v1/push.proto):
 * PushRequest { repeated RawProfileSeries series = 1; }
 * RawProfileSeries { repeated types.v1.LabelPair labels = 1; repeated RawSample samples = 2; }
 * LabelPair { string name = 1; string value = 2; }
 * RawSample { bytes raw_profile = 1; string ID = 2; }
 */
struct connect_request {
	uint8_t *buf;
	size_t len, cap;
	size_t nseries;
};

/**
 * connect_request__add() - one series: @labels and one sample whose
 * raw_profile is the @len bytes of @pprof (gzipped pprof).
 * @return 0 or -ENOMEM (the request is left as it was).
 */
int connect_request__add(struct connect_request *r, const struct connect_label *labels, size_t n,
			 const void *pprof, size_t len);

/** connect_request__release() - the request's buffer freed, the request empty again. */
void connect_request__release(struct connect_request *r);

/**
 * connect_url() - where pushes go: @base with CONNECT_PUSH_PATH appended
 * (trailing slashes of @base dropped first), unless its path ends so.
 * @return a malloc'ed URL, or NULL (out of memory).
 */
char *connect_url(const char *base);

/**
 * connect_error_message() - what a connect error's JSON body
 * ({"code": "...", "message": "...", "details": [...]}) says, as
 * "CODE: MESSAGE" (or either alone) in @out, control characters as spaces,
 * cut to @cap. @return 0, -ENOENT (a JSON object with neither), or
 * -EBADMSG (not a JSON object).
 */
int connect_error_message(const char *body, size_t len, char *out, size_t cap);

#endif
