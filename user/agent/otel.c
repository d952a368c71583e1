/* SPDX-License-Identifier: BSD-2-Clause */
/* OpenTelemetry's exporter settings read as the SDK environment spec says: endpoints, headers, compression, resource. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "otel.h"

#define URL_MAX 8192

const char *otel_getenv(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

/* A variable's value; an empty one is unset (the SDK environment spec). */
static const char *env_get(otel_getenv_fn env, void *ctx, const char *name)
{
	const char *v = env(ctx, name);

	return v && *v ? v : NULL;
}

static void say(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* An HTTP token's character (RFC 9110 tchar): what a header name, and a baggage key, is made of. */
static bool tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool ows(char c)
{
	return c == ' ' || c == '\t';
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * The @n bytes of @s percent-decoded into a new string. @return it, or
 * NULL with *@bad set (a '%' not followed by two hex digits, or a NUL
 * decoded) or not (out of memory).
 */
static char *decode(const char *s, size_t n, bool *bad)
{
	char *out = malloc(n + 1);
	size_t o = 0;

	*bad = false;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int hi, lo;

		if (s[i] != '%') {
			out[o++] = s[i];
			continue;
		}
		if (n - i < 3 || (hi = hexval((unsigned char)s[i + 1])) < 0 ||
		    (lo = hexval((unsigned char)s[i + 2])) < 0 || !(hi | lo)) {
			*bad = true;
			free(out);
			return NULL;
		}
		out[o++] = (char)(hi << 4 | lo);
		i += 2;
	}
	out[o] = '\0';
	return out;
}

static void kv_free(struct otel_kv *kv)
{
	if (kv->value)
		explicit_bzero(kv->value, strlen(kv->value));
	free(kv->key);
	free(kv->value);
}

static struct otel_kv *list_find(const struct otel_list *list, const char *key, bool headers)
{
	for (size_t i = 0; i < list->n; i++)
		if (headers ? !strcasecmp(list->kv[i].key, key) : !strcmp(list->kv[i].key, key))
			return &list->kv[i];
	return NULL;
}

const char *otel_list_get(const struct otel_list *list, const char *key, bool headers)
{
	const struct otel_kv *kv = list_find(list, key, headers);

	return kv ? kv->value : NULL;
}

/* Set @key to @value (both taken over, freed on failure). @return 0 or -ENOMEM. */
static int list_set(struct otel_list *list, char *key, char *value, bool headers)
{
	struct otel_kv *kv = list_find(list, key, headers);

	if (kv) {
		/* a later one wins; a header's name as first given */
		struct otel_kv old = { key, kv->value };

		kv->value = value;
		kv_free(&old);
		return 0;
	}
	if (list->n == list->cap) {
		size_t cap = list->cap ? 2 * list->cap : 8;
		struct otel_kv *k = realloc(list->kv, cap * sizeof(*k));

		if (!k) {
			struct otel_kv lost = { key, value };

			kv_free(&lost);
			return -ENOMEM;
		}
		list->kv = k;
		list->cap = cap;
	}
	list->kv[list->n++] = (struct otel_kv){ key, value };
	return 0;
}

int otel_parse_list(struct otel_list *list, const char *s, bool headers, const char *what,
		    char *err, size_t errlen)
{
	size_t member = 0;

	if (strnlen(s, OTEL_VALUE_MAX + 1) > OTEL_VALUE_MAX) {
		say(err, errlen, "%s: longer than %d bytes", what, OTEL_VALUE_MAX);
		return -EINVAL;
	}
	while (*s) {
		const char *m = s, *end = s + strcspn(s, ","), *eq, *k, *kend, *v, *vend;
		char *key, *value;
		bool bad;
		int e;

		s = *end ? end + 1 : end;
		member++;
		while (m < end && ows(*m))
			m++;
		if (m == end)
			continue;	/* "a=1,,b=2", a trailing comma */
		/* members are numbered, never quoted: a header's value may be a secret */
		eq = memchr(m, '=', end - m);
		if (!eq) {
			say(err, errlen, "%s: member %zu is not KEY=VALUE", what, member);
			return -EINVAL;
		}
		k = m;
		kend = eq;
		while (kend > k && ows(kend[-1]))
			kend--;
		v = eq + 1;
		vend = end;
		while (v < vend && ows(*v))
			v++;
		while (vend > v && ows(vend[-1]))
			vend--;
		if (k == kend) {
			say(err, errlen, "%s: member %zu has no key", what, member);
			return -EINVAL;
		}
		for (const char *c = k; c < kend; c++)
			if (!tchar((unsigned char)*c)) {
				say(err, errlen, "%s: member %zu: a key is letters, digits and "
				    "!#$%%&'*+-.^_`|~ only", what, member);
				return -EINVAL;
			}
		key = strndup(k, kend - k);
		value = decode(v, vend - v, &bad);
		if (!key || !value) {
			free(key);
			if (value)
				free(value);
			if (bad) {
				say(err, errlen, "%s: the value of %.*s: '%%' is not followed by two hex "
				    "digits, or decodes to NUL", what, (int)(kend - k), k);
				return -EINVAL;
			}
			say(err, errlen, "out of memory");
			return -ENOMEM;
		}
		for (const char *c = value; headers && *c; c++)
			if (((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f) {
				say(err, errlen, "%s: the value of %s holds a control character", what, key);
				free(key);
				kv_free(&(struct otel_kv){ NULL, value });
				return -EINVAL;
			}
		if ((e = list_set(list, key, value, headers))) {
			say(err, errlen, "out of memory");
			return e;
		}
	}
	return 0;
}

int otel_check_url(const char *url, const char *what, char *err, size_t errlen)
{
	const char *host;

	if (strnlen(url, URL_MAX + 1) > URL_MAX) {
		say(err, errlen, "%s: longer than %d bytes", what, URL_MAX);
		return -EINVAL;
	}
	if (!strncmp(url, "http://", 7))
		host = url + 7;
	else if (!strncmp(url, "https://", 8))
		host = url + 8;
	else {
		say(err, errlen, "%s: not an http:// or https:// URL", what);
		return -EINVAL;
	}
	if (!*host || strchr("/?#", *host)) {
		say(err, errlen, "%s: no host in the URL", what);
		return -EINVAL;
	}
	for (const char *c = url; *c; c++)
		if ((unsigned char)*c <= 0x20 || *c == 0x7f) {
			say(err, errlen, "%s: a space or control character in the URL", what);
			return -EINVAL;
		}
	return 0;
}

char *otel_profiles_url(const char *base)
{
	size_t n = strlen(base), pl = strlen(OTEL_PROFILES_PATH);
	char *url;

	while (n && base[n - 1] == '/')
		n--;
	url = malloc(n + pl + 1);
	if (!url)
		return NULL;
	memcpy(url, base, n);
	memcpy(url + n, OTEL_PROFILES_PATH, pl + 1);
	return url;
}

/* Whether checked URL @url names a server alone (no path, or "/"). */
static bool no_path(const char *url)
{
	const char *path = strchr(strstr(url, "://") + 3, '/');

	return !path || !path[1 + strspn(path + 1, "/")] || (path[1] == '?' || path[1] == '#');
}

int otel_export_read(struct otel_export *e, const char *option, otel_getenv_fn env, void *ctx,
		     char *err, size_t errlen)
{
	const char *pe = env_get(env, ctx, "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
	const char *be = env_get(env, ctx, "OTEL_EXPORTER_OTLP_ENDPOINT");
	const char *v, *what;
	char *key, *value;
	int ret;

	memset(e, 0, sizeof(*e));
	if (option) {
		if ((ret = otel_check_url(option, "--otlp-endpoint", err, errlen)))
			return ret;
		e->endpoint = no_path(option) ? otel_profiles_url(option) : strdup(option);
		e->from = OTEL_FROM_OPTION;
	} else if (pe) {
		if ((ret = otel_check_url(pe, "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", err, errlen)))
			return ret;
		e->endpoint = strdup(pe);
		e->from = OTEL_FROM_PROFILES_ENV;
	} else if (be) {
		if ((ret = otel_check_url(be, "OTEL_EXPORTER_OTLP_ENDPOINT", err, errlen)))
			return ret;
		e->endpoint = otel_profiles_url(be);
		e->from = OTEL_FROM_ENV;
	} else {
		return 0;
	}
	if (!e->endpoint) {
		say(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* the signal's own headers after the common ones: they win per name */
	if ((v = env_get(env, ctx, "OTEL_EXPORTER_OTLP_HEADERS")) &&
	    (ret = otel_parse_list(&e->headers, v, true, "OTEL_EXPORTER_OTLP_HEADERS", err, errlen)))
		return ret;
	if ((v = env_get(env, ctx, "OTEL_EXPORTER_OTLP_PROFILES_HEADERS")) &&
	    (ret = otel_parse_list(&e->headers, v, true, "OTEL_EXPORTER_OTLP_PROFILES_HEADERS", err,
				   errlen)))
		return ret;
	what = "OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION";
	if (!(v = env_get(env, ctx, what))) {
		what = "OTEL_EXPORTER_OTLP_COMPRESSION";
		v = env_get(env, ctx, what);
	}
	if (v && !strcasecmp(v, "gzip")) {
		e->gzip = true;
	} else if (v && strcasecmp(v, "none")) {
		say(err, errlen, "%s: gzip or none, not \"%.32s\"", what, v);
		return -EINVAL;
	}
	if ((v = env_get(env, ctx, "OTEL_RESOURCE_ATTRIBUTES")) &&
	    (ret = otel_parse_list(&e->resource, v, false, "OTEL_RESOURCE_ATTRIBUTES", err, errlen)))
		return ret;
	if ((v = env_get(env, ctx, "OTEL_SERVICE_NAME"))) {
		if (strnlen(v, OTEL_VALUE_MAX + 1) > OTEL_VALUE_MAX) {
			say(err, errlen, "OTEL_SERVICE_NAME: longer than %d bytes", OTEL_VALUE_MAX);
			return -EINVAL;
		}
		key = strdup("service.name");
		value = strdup(v);
		if (!key || !value) {
			free(key);
			free(value);
			say(err, errlen, "out of memory");
			return -ENOMEM;
		}
		if ((ret = list_set(&e->resource, key, value, false))) {
			say(err, errlen, "out of memory");
			return ret;
		}
	}
	return 0;
}

size_t otel_resource_attrs(const struct service *sv, const char *host,
			   const struct otel_list *resource, struct otlp_attr *out)
{
	const char *base = strrchr(sv->exe, '/');
	size_t n = 0;

	out[n++] = (struct otlp_attr){ "service.name", sv->name, 0 };
	if (host && *host)
		out[n++] = (struct otlp_attr){ "host.name", host, 0 };
	if (sv->container_id[0])
		out[n++] = (struct otlp_attr){ "container.id", sv->container_id, 0 };
	if (sv->pod_uid[0])
		out[n++] = (struct otlp_attr){ "k8s.pod.uid", sv->pod_uid, 0 };
	if (sv->exe[0]) {
		out[n++] = (struct otlp_attr){ "process.executable.name",
					       base && base[1] ? base + 1 : sv->exe, 0 };
		if (sv->exe[0] == '/')
			out[n++] = (struct otlp_attr){ "process.executable.path", sv->exe, 0 };
	}
	for (size_t i = 0; resource && i < resource->n; i++) {
		size_t j = 0;

		while (j < n && strcmp(out[j].key, resource->kv[i].key))
			j++;
		if (j == n)
			out[n++] = (struct otlp_attr){ resource->kv[i].key, resource->kv[i].value, 0 };
	}
	return n;
}

static void list_free(struct otel_list *list)
{
	for (size_t i = 0; i < list->n; i++)
		kv_free(&list->kv[i]);
	free(list->kv);
	*list = (struct otel_list){ 0 };
}

void otel_export_free(struct otel_export *e)
{
	if (!e)
		return;
	list_free(&e->headers);
	list_free(&e->resource);
	free(e->endpoint);
	e->endpoint = NULL;
	e->from = OTEL_FROM_NONE;
}
