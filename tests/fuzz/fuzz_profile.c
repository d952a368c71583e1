// SPDX-License-Identifier: BSD-2-Clause
/* Fuzz target: read a profile file, or a block of records wrapped into one, touching every field. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include "profile/profile.h"
#include "sfunwind/cbf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Stacks decoded per input, and results kept per stack: bounds the time of one input. */
#define MAX_DECODED_STACKS 256
#define MAX_RESULTS 4096

static const uint8_t file_magic[8] = { 0x89, 'S', 'F', 'P', 'R', 'O', 'F', '\n' };

static volatile uint64_t sink;

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_profile: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static void touch_str(const char *s, const char *what)
{
	if (!s)
		broken("%s is NULL", what);
	sink += strlen(s);
}

static void touch_bytes(const uint8_t *p, size_t n, const char *what)
{
	if (n && !p)
		broken("%s: %zu bytes at NULL", what, n);
	for (size_t i = 0; i < n; i++)
		sink += p[i];
}

static void touch_stack(const uint8_t *cbf, size_t len, uint32_t id, size_t *decoded)
{
	struct sfu_cbf_frame frames[MAX_RESULTS];
	size_t count = 0;

	if (!cbf) {
		if (len)
			broken("sample stack %u: NULL with length %zu", id, len);
		return;
	}
	if (!id)
		broken("sample has stack bytes but id 0");
	touch_bytes(cbf, len, "sample stack");
	if (++*decoded > MAX_DECODED_STACKS)
		return;
	sfu_cbf_decode(cbf, len, SFU_CBF_DEC_END_OPTIONAL, frames, MAX_RESULTS, &count, NULL,
		       NULL);
	for (size_t i = 0; i < count; i++)
		sink += frames[i].kind + frames[i].value;
}

static void touch_record(const struct profile_record *r, size_t *decoded)
{
	switch (r->type) {
	case PROFILE_REC_PROCESS:
		touch_str(r->process.comm, "process comm");
		touch_str(r->process.exe, "process exe");
		sink += r->process.pid + r->process.ppid + r->process.pid_ns + r->process.mnt_ns +
			r->process.ns_pid;
		break;
	case PROFILE_REC_THREAD:
		touch_str(r->thread.comm, "thread comm");
		sink += r->thread.pid + r->thread.tid;
		break;
	case PROFILE_REC_MODULE:
		touch_bytes(r->module.build_id, r->module.build_id_len, "module build ID");
		touch_str(r->module.path, "module path");
		sink += r->module.id + r->module.file_size;
		break;
	case PROFILE_REC_MAPPING:
		sink += r->mapping.pid + r->mapping.start + r->mapping.end + r->mapping.file_offset +
			r->mapping.prot + r->mapping.module_id;
		break;
	case PROFILE_REC_STACK:
		touch_bytes(r->stack.cbf, r->stack.len, "stack record");
		sink += r->stack.id + r->stack.space;
		break;
	case PROFILE_REC_SAMPLE:
		sink += r->sample.time_ns + r->sample.pid + r->sample.tid + r->sample.cpu +
			r->sample.weight;
		touch_stack(r->sample.ustack, r->sample.ustack_len, r->sample.ustack_id, decoded);
		touch_stack(r->sample.kstack, r->sample.kstack_len, r->sample.kstack_id, decoded);
		break;
	case PROFILE_REC_LOST:
		sink += r->lost.time_ns + r->lost.cpu + r->lost.count;
		break;
	case PROFILE_REC_EXIT:
		sink += r->exit.time_ns + r->exit.pid;
		break;
	case PROFILE_REC_COMM:
		touch_str(r->comm.comm, "comm comm");
		sink += r->comm.time_ns + r->comm.pid + r->comm.tid;
		break;
	default:
		broken("record of unknown type %u returned", r->type);
	}
}

static void touch_meta(const struct profile_meta *m)
{
	const char *s[] = { m->host, m->release, m->machine, m->cmdline };

	sink += m->flags + m->created_ns + m->freq_hz + m->stack_size + m->clock_offset_ns;
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		if (s[i])
			sink += strlen(s[i]);
}

static void read_profile(const char *path, uint64_t file_size)
{
	struct profile_diag diag = { "" };
	struct profile_reader *r;
	struct profile_record rec;
	const struct profile_status *st;
	size_t decoded = 0;
	int ret;

	errno = 0;
	r = profile_reader__open(path, &diag);
	if (!r) {
		if (errno != EBADMSG && errno != ENOTSUP && errno != ENOMEM)
			broken("open failed with errno %d (%s)", errno, diag.reason);
		if (!diag.reason[0])
			broken("open failed (errno %d) without a reason", errno);
		return;
	}
	touch_meta(profile_reader__meta(r));
	while ((ret = profile_reader__next(r, &rec)) > 0)
		touch_record(&rec, &decoded);
	if (ret < 0 && ret != -ENOMEM && ret != -EIO)
		broken("next() returned %d", ret);
	if (ret == 0 && profile_reader__next(r, &rec) != 0)
		broken("next() after the end returned a record");
	st = profile_reader__status(r);
	if (st->file_size != file_size)
		broken("file_size %llu, the file has %llu bytes", (unsigned long long)st->file_size,
		       (unsigned long long)file_size);
	if (st->bytes_recovered > st->file_size)
		broken("recovered %llu bytes of %llu", (unsigned long long)st->bytes_recovered,
		       (unsigned long long)st->file_size);
	if (ret == 0 && st->truncated == st->has_trailer)
		broken("at the end: truncated %d, has_trailer %d", st->truncated, st->has_trailer);
	if (st->bad_blocks && !st->first_error[0])
		broken("%llu bad blocks without a first_error", (unsigned long long)st->bad_blocks);
	sink += st->blocks + st->unknown_stacks + st->trailer_samples + st->trailer_lost +
		st->trailer_failed + strlen(st->first_error);
	profile_reader__free(r);
}

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

/*
 * Input that is not a file is the records of one block: wrap it in a header,
 * a block and a trailer so that mutations reach the record decoder rather
 * than stop at the zstd checksum. @return the file's size, 0 when it cannot be built.
 */
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

/*
 * The reader takes a path: hand it the bytes through a memfd, or a temporary
 * file when /proc is not there (*named is then set: unlink @path after).
 */
static int open_input(const uint8_t *data, size_t size, char *path, size_t path_len, bool *named)
{
	int fd = memfd_create("fuzz_profile", MFD_CLOEXEC);
	size_t done = 0;

	*named = false;
	if (fd >= 0) {
		snprintf(path, path_len, "/proc/self/fd/%d", fd);
		if (access(path, R_OK)) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		const char *tmp = getenv("TMPDIR");

		snprintf(path, path_len, "%s/fuzz_profile-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		fd = mkstemp(path);
		if (fd < 0)
			return -1;
		*named = true;
	}
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		if (n <= 0) {
			close(fd);
			if (*named)
				unlink(path);
			return -1;
		}
		done += n;
	}
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *wrapped = NULL;
	char path[256];
	bool named;
	int fd;

	if (size < sizeof(file_magic) || memcmp(data, file_magic, sizeof(file_magic))) {
		size = wrap_records(data, size, &wrapped);
		if (!size)
			return 0;
		data = wrapped;
	}
	fd = open_input(data, size, path, sizeof(path), &named);
	if (fd < 0)
		broken("cannot hand %zu bytes to the reader", size);
	read_profile(path, size);
	close(fd);
	if (named)
		unlink(path);
	free(wrapped);
	return 0;
}
