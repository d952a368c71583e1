// SPDX-License-Identifier: BSD-2-Clause
/* A fuzz input as a profile file: the bytes in a memfd, records wrapped into a file first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include "profile_input.h"

static const uint8_t file_magic[8] = { 0x89, 'S', 'F', 'P', 'R', 'O', 'F', '\n' };

/* CRC-32 (zlib's) for the frame the harness builds around raw records. */
static uint32_t crc32_ieee(const uint8_t *p, size_t len)
{
	uint32_t c = 0xffffffffu;

	while (len--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & -(c & 1));
	}
	return ~c;
}

static void put_le(uint8_t *p, uint64_t v, unsigned size)
{
	for (unsigned i = 0; i < size; i++)
		p[i] = v >> (8 * i);
}

/* The records of one block in a whole file. @return the file's size, 0 when it cannot be built. */
static size_t wrap_records(const uint8_t *recs, size_t len, uint8_t **out)
{
	size_t hdr = 40 + 3 + 4, bound = ZSTD_compressBound(len), csize;
	uint8_t *f = malloc(hdr + 20 + bound + 64), *b, *t;
	ZSTD_CCtx *zc = ZSTD_createCCtx();

	if (!f || !zc) {
		free(f);
		ZSTD_freeCCtx(zc);
		return 0;
	}
	memset(f, 0, hdr);
	memcpy(f, file_magic, 8);
	put_le(f + 8, 1, 2);
	put_le(f + 10, hdr, 2);
	put_le(f + 24, 999, 4);
	put_le(f + hdr - 4, crc32_ieee(f, hdr - 4), 4);
	b = f + hdr;
	ZSTD_CCtx_setParameter(zc, ZSTD_c_checksumFlag, 1);
	csize = ZSTD_compress2(zc, b + 20, bound, len ? recs : (const uint8_t *)"", len);
	ZSTD_freeCCtx(zc);
	if (ZSTD_isError(csize)) {
		free(f);
		return 0;
	}
	memcpy(b, "SFB1", 4);
	put_le(b + 4, csize, 4);
	put_le(b + 8, len, 4);
	put_le(b + 12, 0, 4);
	put_le(b + 16, crc32_ieee(b, 16), 4);
	t = b + 20 + csize;
	memset(t, 0, 64);
	memcpy(t, "SFT1", 4);
	put_le(t + 4, 64, 4);
	put_le(t + 60, crc32_ieee(t, 60), 4);
	*out = f;
	return hdr + 20 + csize + 64;
}

/* The bytes in a memfd, or a temporary file when /proc is not there. @return the fd, or -1. */
static int write_file(struct profile_input *in, const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz_profile", MFD_CLOEXEC);
	size_t done = 0;

	in->named = false;
	if (fd >= 0) {
		snprintf(in->path, sizeof(in->path), "/proc/self/fd/%d", fd);
		if (access(in->path, R_OK)) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		const char *tmp = getenv("TMPDIR");

		snprintf(in->path, sizeof(in->path), "%s/fuzz_profile-XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		fd = mkstemp(in->path);
		if (fd < 0)
			return -1;
		in->named = true;
	}
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		if (n <= 0) {
			close(fd);
			if (in->named)
				unlink(in->path);
			return -1;
		}
		done += n;
	}
	return fd;
}

int profile_input__open(struct profile_input *in, const uint8_t *data, size_t size)
{
	uint8_t *wrapped = NULL;

	memset(in, 0, sizeof(*in));
	in->fd = -1;
	if (size < sizeof(file_magic) || memcmp(data, file_magic, sizeof(file_magic))) {
		size = wrap_records(data, size, &wrapped);
		if (!size)
			return -1;
		data = wrapped;
	}
	in->size = size;
	in->fd = write_file(in, data, size);
	free(wrapped);
	return in->fd < 0 ? -1 : 0;
}

void profile_input__close(struct profile_input *in)
{
	if (in->fd >= 0)
		close(in->fd);
	if (in->named)
		unlink(in->path);
	in->fd = -1;
	in->named = false;
}
