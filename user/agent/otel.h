/* SPDX-License-Identifier: BSD-2-Clause */
/* OpenTelemetry's exporter settings for OTLP profiles: --otlp-endpoint and the OTEL_* variables the SDKs read. */
#ifndef SFPROF_AGENT_OTEL_H
#define SFPROF_AGENT_OTEL_H

#include <stdbool.h>
#include <stddef.h>

#include "report/export.h"
#include "service.h"

/* The signal's path under OTEL_EXPORTER_OTLP_ENDPOINT (OTLP/HTTP, profiles v1development). */
#define OTEL_PROFILES_PATH "/v1development/profiles"
/* Longest variable read: a longer one is refused, not cut */
#define OTEL_VALUE_MAX 65536

struct otel_kv {
	char *key;
	char *value;
};

/* A list of key=value pairs: headers or resource attributes. */
struct otel_list {
	struct otel_kv *kv;
	size_t n, cap;
};

enum otel_endpoint_from {
	OTEL_FROM_NONE,			/* no endpoint: no OTLP export */
	OTEL_FROM_OPTION,		/* --otlp-endpoint */
	OTEL_FROM_PROFILES_ENV,		/* OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT, as given */
	OTEL_FROM_ENV,			/* OTEL_EXPORTER_OTLP_ENDPOINT + OTEL_PROFILES_PATH */
};

/* What an OTLP profiles exporter needs: where, with which headers, compressed or not, and the resource. */
struct otel_export {
	char *endpoint;			/* the URL requests are POSTed to, or NULL */
	enum otel_endpoint_from from;
	struct otel_list headers;	/* sent as they are (names as given, values decoded) */
	bool gzip;			/* Content-Encoding: gzip */
	struct otel_list resource;	/* resource attributes, service.name from OTEL_SERVICE_NAME */
};

/* How a variable is looked up (getenv, or a table in tests): NULL when unset. */
typedef const char *(*otel_getenv_fn)(void *ctx, const char *name);

/**
 * otel_parse_list() - a W3C-baggage-like list "k1=v1,k2=v2" into @list
 * (added to what it holds; a key given again takes the later value, header
 * names compared without case with @headers): whitespace around keys and
 * values trimmed, values percent-decoded (RFC 3986; '+' stays '+'), empty
 * members skipped. Keys are tokens (RFC 9110 tchar, as W3C baggage's keys);
 * no value decodes to a NUL, and with @headers none holds a control
 * character but tab (no header can be smuggled in).
 * @return 0, -EINVAL (said in @err, naming @what) or -ENOMEM.
 */
int otel_parse_list(struct otel_list *list, const char *s, bool headers, const char *what,
		    char *err, size_t errlen);

/** otel_list_get() - the value of @key in @list (headers: without case), or NULL. */
const char *otel_list_get(const struct otel_list *list, const char *key, bool headers);

/**
 * otel_check_url() - whether @url is an http:// or https:// URL with a
 * host, and no whitespace or control character. @return 0 or -EINVAL
 * (said in @err, naming @what).
 */
int otel_check_url(const char *url, const char *what, char *err, size_t errlen);

/**
 * otel_profiles_url() - the profiles endpoint under the base @base:
 * OTEL_PROFILES_PATH appended with one slash between (the base's trailing
 * slashes dropped). @return a malloc'ed URL or NULL (out of memory).
 */
char *otel_profiles_url(const char *base);

/**
 * otel_export_read() - the settings: the endpoint from @option
 * (--otlp-endpoint: OTEL_PROFILES_PATH appended when its path is empty or
 * "/", else used as given), else OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT (as
 * given), else OTEL_EXPORTER_OTLP_ENDPOINT (the base); with one, the headers
 * of OTEL_EXPORTER_OTLP_HEADERS overridden per name by
 * OTEL_EXPORTER_OTLP_PROFILES_HEADERS, compression from
 * OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION else OTEL_EXPORTER_OTLP_COMPRESSION
 * ("gzip" or "none", the default), the resource from
 * OTEL_RESOURCE_ATTRIBUTES with service.name set by OTEL_SERVICE_NAME. An
 * empty variable is an unset one (the SDK environment spec). Without an
 * endpoint nothing else is read (@e->from OTEL_FROM_NONE): a variable meant
 * for another program does not stop the agent.
 * @return 0, -EINVAL (said in @err) or -ENOMEM; @e is always to be freed.
 */
int otel_export_read(struct otel_export *e, const char *option, otel_getenv_fn env, void *ctx,
		     char *err, size_t errlen);

/** otel_export_free() - what @e holds freed (values zeroed: headers may be secrets); accepts NULL. */
void otel_export_free(struct otel_export *e);

/* service.name, host.name, container.id, k8s.pod.uid, process.executable.name and .path */
#define OTEL_SERVICE_ATTRS 6

/**
 * otel_resource_attrs() - the attributes of the Resource of service @sv's
 * profiles, with the semantic conventions' names: service.name (the
 * profiled service's name: it wins over OTEL_SERVICE_NAME, which names the
 * agent itself), host.name (@host, when set), container.id and k8s.pod.uid
 * (when known), process.executable.name and .path (when the service is
 * named after its executable), then each attribute of @resource
 * (OTEL_RESOURCE_ATTRIBUTES, the agent's service.name) whose key is not set
 * yet, in their order. @out points into @sv, @host and @resource, and holds
 * at most OTEL_SERVICE_ATTRS + @resource->n.
 * @return how many.
 */
size_t otel_resource_attrs(const struct service *sv, const char *host,
			   const struct otel_list *resource, struct otlp_attr *out);

/** otel_getenv() - an otel_getenv_fn over the process's environment. */
const char *otel_getenv(void *ctx, const char *name);

#endif
