// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: the agent's parsers of settings and answers (user/agent/otel.c,
 * connect.c). Byte 0 picks one: 0 OTEL_EXPORTER_OTLP_HEADERS-like lists, 1
 * OTEL_RESOURCE_ATTRIBUTES-like lists, 2 a connect error's JSON body, 3 the
 * whole otel_export_read() over variables cut from the input at NULs. Each
 * answer is 0 or a documented error with a message said; a list holds
 * non-empty token keys, header values with no control character but tab, a
 * message NUL-terminated within its room; the same input answers the same.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/connect.h"
#include "agent/otel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_otel: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static void list_check(const struct otel_list *l, bool headers)
{
	for (size_t i = 0; i < l->n; i++) {
		const char *k = l->kv[i].key;

		if (!k[0])
			broken("an empty key");
		for (; *k; k++)
			if ((unsigned char)*k <= 0x20 || *k == ',' || *k == '=' || *k == 0x7f)
				broken("key byte 0x%02x", (unsigned char)*k);
		for (const char *v = l->kv[i].value; headers && *v; v++)
			if (((unsigned char)*v < 0x20 && *v != '\t') || *v == 0x7f)
				broken("header value byte 0x%02x", (unsigned char)*v);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(l->kv[j].key, l->kv[i].key))
				broken("key %s twice", l->kv[i].key);
	}
}

static void list_free(struct otel_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->kv[i].key);
		free(l->kv[i].value);
	}
	free(l->kv);
}

/* The input's variables: NUL-separated values in a fixed order of names. */
static const char *const names[] = {
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_PROFILES_HEADERS",
	"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION",
	"OTEL_RESOURCE_ATTRIBUTES", "OTEL_SERVICE_NAME", "--otlp-endpoint",
};
#define NVARS (sizeof(names) / sizeof(names[0]))

static const char *vars_get(void *ctx, const char *name)
{
	const char **vals = ctx;

	for (size_t i = 0; i < NVARS; i++)
		if (!strcmp(names[i], name))
			return vals[i];
	return NULL;
}

static void export_check(const char *text, size_t len)
{
	const char *vals[NVARS] = { NULL };
	struct otel_export e;
	char err[256] = "";
	const char *p = text;
	int ret;

	for (size_t i = 0; i < NVARS && p < text + len; i++) {
		vals[i] = p;
		p += strlen(p) + 1;
	}
	ret = otel_export_read(&e, vals[NVARS - 1], vars_get, vals, err, sizeof(err));
	if (ret && ret != -EINVAL && ret != -ENOMEM)
		broken("otel_export_read returned %d", ret);
	if (ret && !err[0])
		broken("an error (%d) with nothing said", ret);
	if (!ret && (e.from == OTEL_FROM_NONE) != !e.endpoint)
		broken("from %d with endpoint %s", e.from, e.endpoint ? e.endpoint : "(none)");
	if (!ret && e.endpoint && strncmp(e.endpoint, "http://", 7) && strncmp(e.endpoint, "https://", 8))
		broken("endpoint %s", e.endpoint);
	if (!ret) {
		list_check(&e.headers, true);
		list_check(&e.resource, false);
	}
	otel_export_free(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256], out[128], out2[128];
	struct otel_list l = { 0 };
	char *text;
	size_t len;
	int ret, ret2;

	if (!size)
		return 0;
	len = size - 1;
	/* a NUL-terminated copy of exactly the input: a read past it is caught by ASan */
	text = malloc(len + 1);
	if (!text)
		return 0;
	memcpy(text, data + 1, len);
	text[len] = '\0';
	switch (data[0] % 4) {
	case 0:
	case 1:
		err[0] = '\0';
		ret = otel_parse_list(&l, text, data[0] % 4 == 0, "VAR", err, sizeof(err));
		if (ret && ret != -EINVAL && ret != -ENOMEM)
			broken("otel_parse_list returned %d", ret);
		if (ret && strncmp(err, "VAR: ", 5) && ret != -ENOMEM)
			broken("said \"%s\"", err);
		if (!ret)
			list_check(&l, data[0] % 4 == 0);
		list_free(&l);
		break;
	case 2:
		memset(out, 'x', sizeof(out));
		ret = connect_error_message(text, len, out, sizeof(out));
		if (ret && ret != -ENOENT && ret != -EBADMSG)
			broken("connect_error_message returned %d", ret);
		if (!memchr(out, '\0', sizeof(out)))
			broken("a message not terminated");
		for (const char *c = out; *c; c++)
			if ((unsigned char)*c < 0x20)
				broken("control byte 0x%02x in the message", (unsigned char)*c);
		ret2 = connect_error_message(text, len, out2, sizeof(out2));
		if (ret2 != ret || strcmp(out, out2))
			broken("the same body read as %d then %d", ret, ret2);
		break;
	default:
		export_check(text, len);
		break;
	}
	free(text);
	return 0;
}
