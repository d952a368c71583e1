/* SPDX-License-Identifier: BSD-2-Clause */
/* CRC-32 for the profile file's header, block headers and trailer. */
#include "profile_internal.h"

/* Bitwise: it only ever covers a few dozen bytes of header at a time. */
uint32_t profile_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? 0xedb88320u ^ (crc >> 1) : crc >> 1;
	}
	return ~crc;
}
