/* SPDX-License-Identifier: BSD-2-Clause */
/* What an OTLP/HTTP profiles endpoint answers: ExportProfilesServiceResponse's partial success, google.rpc.Status's message. */
#ifndef SFPROF_AGENT_OTLP_RESPONSE_H
#define SFPROF_AGENT_OTLP_RESPONSE_H

#include <stddef.h>
#include <stdint.h>

/*
 * By field numbers (opentelemetry.proto.collector.profiles.v1development):
 * ExportProfilesServiceResponse { ExportProfilesPartialSuccess partial_success = 1; }
 * ExportProfilesPartialSuccess { int64 rejected_profiles = 1; string error_message = 2; }
 * and an error's body (OTLP/HTTP): google.rpc.Status { int32 code = 1; string message = 2; ... }
 */
struct otlp_partial {
	int64_t rejected;	/* rejected_profiles: 0 when absent */
	char message[512];	/* error_message, control characters as spaces, cut to fit */
};

/**
 * otlp_response_read() - a 2xx answer's body read as an
 * ExportProfilesServiceResponse: every length and varint checked against
 * the end of @buf, unknown fields skipped (wire types 0, 1, 2, 5), a
 * field given again taking the later value (protobuf's rule). An empty
 * body is a full success.
 * @return 0, or -EBADMSG (not a protobuf message; @out then zeroed).
 */
int otlp_response_read(const void *buf, size_t len, struct otlp_partial *out);

/**
 * otlp_status_message() - the message of an error answer's body read as a
 * google.rpc.Status, into @out (control characters as spaces, cut to @cap,
 * NUL-terminated). @return 0, -ENOENT (a message without one) or -EBADMSG.
 */
int otlp_status_message(const void *buf, size_t len, char *out, size_t cap);

#endif
