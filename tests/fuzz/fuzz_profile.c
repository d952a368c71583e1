// SPDX-License-Identifier: BSD-2-Clause
/* Fuzz target: read a profile file, or a block of records wrapped into one, touching every field. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile_input.h"
#include "sfunwind/cbf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Stacks decoded per input, and results kept per stack: bounds the time of one input. */
#define MAX_DECODED_STACKS 256
#define MAX_RESULTS 4096

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
			r->sample.weight + r->sample.event;
		touch_stack(r->sample.ustack, r->sample.ustack_len, r->sample.ustack_id, decoded);
		touch_stack(r->sample.kstack, r->sample.kstack_len, r->sample.kstack_id, decoded);
		if (r->sample.py_depth > PROFILE_PY_MAX_DEPTH || (r->sample.py_depth && !r->sample.py_frames))
			broken("sample with %zu Python frames at %p", r->sample.py_depth,
			       (const void *)r->sample.py_frames);
		if (r->sample.py_truncated && !r->sample.py_depth)
			broken("a Python chain cut with no frames");
		for (size_t i = 0; i < r->sample.py_depth; i++) {
			if (!r->sample.py_frames[i])
				broken("Python frame id 0 in a sample");
			sink += r->sample.py_frames[i];
		}
		break;
	case PROFILE_REC_PY_FRAME:
		touch_str(r->py_frame.qualname, "py_frame qualname");
		touch_str(r->py_frame.file, "py_frame file");
		if (!r->py_frame.id)
			broken("py_frame record with id 0 returned");
		sink += r->py_frame.line + r->py_frame.flags;
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
	case PROFILE_REC_EVENT:
		touch_str(r->event.name, "event name");
		if (!r->event.id)
			broken("event record with id 0 returned");
		sink += r->event.type + r->event.config + r->event.period + r->event.freq_hz +
			r->event.flags;
		break;
	case PROFILE_REC_JIT:
		touch_str(r->jit.name, "jit name");
		touch_str(r->jit.source, "jit source");
		touch_bytes(r->jit.lines, r->jit.lines_len, "jit lines");
		if (r->jit.end <= r->jit.start)
			broken("jit record of an empty or wrapping range returned");
		sink += r->jit.time_ns + r->jit.pid + r->jit.flags;
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
	sink += st->blocks + st->unknown_stacks + st->unknown_py_frames + st->trailer_samples + st->trailer_lost +
		st->trailer_failed + strlen(st->first_error);
	profile_reader__free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile_input in;

	if (profile_input__open(&in, data, size))
		broken("cannot hand %zu bytes to the reader", size);
	read_profile(in.path, in.size);
	profile_input__close(&in);
	return 0;
}
