// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: what an OTLP/HTTP endpoint answers, as the agent reads it
 * (user/agent/otlp_response.c). Byte 0 picks: even, the 2xx body as an
 * ExportProfilesServiceResponse; odd, an error body as a google.rpc.Status.
 * Each answer is 0 or a documented error; a message is NUL-terminated within
 * its room with no control character; a refused body leaves nothing behind;
 * the same input answers the same.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/otlp_response.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_otlp_response: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static void text_check(const char *s, size_t cap)
{
	const char *end = memchr(s, '\0', cap);

	if (!end)
		broken("a message not terminated within its room");
	for (; s < end; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			broken("control byte 0x%02x in a message", (unsigned char)*s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct otlp_partial a, b;
	char msg[64], msg2[64];
	uint8_t *body;
	size_t len;
	int ret, ret2;

	if (!size)
		return 0;
	len = size - 1;
	/* exactly the input's bytes on the heap: a read past them is caught by ASan */
	body = malloc(len ? len : 1);
	if (!body)
		return 0;
	memcpy(body, data + 1, len);
	if (data[0] % 2 == 0) {
		memset(&a, 'x', sizeof(a));
		ret = otlp_response_read(body, len, &a);
		if (ret && ret != -EBADMSG)
			broken("otlp_response_read returned %d", ret);
		text_check(a.message, sizeof(a.message));
		if (ret && (a.rejected || a.message[0]))
			broken("a refused body left %lld, \"%s\"", (long long)a.rejected, a.message);
		ret2 = otlp_response_read(body, len, &b);
		if (ret2 != ret || a.rejected != b.rejected || strcmp(a.message, b.message))
			broken("the same body read as %d then %d", ret, ret2);
	} else {
		size_t cap = 1 + data[0] % sizeof(msg);

		memset(msg, 'x', sizeof(msg));
		ret = otlp_status_message(body, len, msg, cap);
		if (ret && ret != -ENOENT && ret != -EBADMSG)
			broken("otlp_status_message returned %d", ret);
		text_check(msg, cap);
		if (ret && msg[0])
			broken("an error (%d) with a message \"%s\"", ret, msg);
		ret2 = otlp_status_message(body, len, msg2, cap);
		if (ret2 != ret || strcmp(msg, msg2))
			broken("the same body read as %d then %d", ret, ret2);
	}
	free(body);
	return 0;
}
