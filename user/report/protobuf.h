/* SPDX-License-Identifier: BSD-2-Clause */
/* Protocol buffers written by hand: a growing buffer, scalar, length-delimited and message fields. */
#ifndef SFPROF_PROTOBUF_H
#define SFPROF_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "strtab.h"

enum { PB_WIRE_VARINT = 0, PB_WIRE_I64 = 1, PB_WIRE_LEN = 2 };

/* A growing protobuf buffer; an allocation failure is remembered and reported at the end. */
struct pb {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

/** pb_raw() - append @n bytes as they are. */
void pb_raw(struct pb *b, const void *data, size_t n);

/** pb_varint() - append @v as a base-128 varint (a negative int64 as its two's complement). */
void pb_varint(struct pb *b, uint64_t v);

/** pb_uint() - a varint field; zero is proto3's default and is left out. */
void pb_uint(struct pb *b, unsigned field, uint64_t v);

/** pb_uint_always() - a varint field even when zero: a member of a oneof, whose presence means something. */
void pb_uint_always(struct pb *b, unsigned field, uint64_t v);

/** pb_fixed64() - a fixed64 field (little-endian); zero is left out. */
void pb_fixed64(struct pb *b, unsigned field, uint64_t v);

/** pb_bytes() - a length-delimited field: bytes, a string, a packed array. */
void pb_bytes(struct pb *b, unsigned field, const void *data, size_t n);

/** pb_msg() - append @sub as a message field, then empty @sub for the next one. */
void pb_msg(struct pb *b, unsigned field, struct pb *sub);

/** pb_write() - write @b's bytes to @out (an empty buffer writes nothing). @return whether all went. */
bool pb_write(const struct pb *b, FILE *out);

/** pb_release() - free the buffer; it is empty afterwards. */
void pb_release(struct pb *b);

/**
 * pb_string_id() - the id of @s (NULL: "") in @t, escaped: protobuf strings
 * are UTF-8, and names, paths and comms come from outside. The escaping is
 * injective, so distinct strings keep distinct ids.
 * @return the id, or 0 with *@oom set when memory ran out.
 */
uint64_t pb_string_id(struct strtab *t, const char *s, bool *oom);

#endif
