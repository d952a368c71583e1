// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target: the record path after the ring. The input is what the sampler
 * hands over, in the form its debug capture writes (records.h: a kind byte,
 * a u32 length, the record): perf task events (MMAP2, COMM, FORK, EXIT) and
 * BPF sample records, each checked as the sampler checks it
 * (task_record__time(), sample_record__check()), then given to the process
 * table and the unwinder as an unwinding thread gives them (procs.h),
 * writing a profile. The profile must then read back whole, with every
 * sample written.
 *
 * Pids are moved above pid_max, as the unit tests' are: nothing of them is
 * read from /proc, so a run does not depend on the processes of the machine.
 * Mapped files are opened by the paths the records give, as the recorder
 * opens them once their process is gone.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/profile.h"
#include "record/procs.h"
#include "record/records.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Pids no process has (pid_max is at most 2^22), as in tests/unit/test_pipeline.c. */
#define PID_BASE 4200000u
#define PID_SPAN 65536u
#define MAX_DEPTH 128	/* sfprof record's */

static struct sfu_cache *cache;
static char dir[256], path[300];

__attribute__((noreturn, format(printf, 1, 2)))
static void broken(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_record: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static void remove_dir(void)
{
	char old[310];

	unlink(path);
	snprintf(old, sizeof(old), "%s.old", path);
	unlink(old);
	rmdir(dir);
}

/* The module cache as the recorder's (no symbols; no disk cache: each run starts afresh). */
static void setup(void)
{
	const char *tmp = getenv("TMPDIR");

	cache = sfu_cache__new();
	if (!cache)
		broken("sfu_cache__new: %s", strerror(errno));
	sfu_cache__set_flags(cache, SFU_MODULE_OPEN_NO_SYMBOLS);
	snprintf(dir, sizeof(dir), "%s/fuzz_record-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		broken("mkdtemp %s: %s", dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/record.data", dir);
	atexit(remove_dir);
}

static uint32_t no_pid(uint32_t pid)
{
	return PID_BASE + pid % PID_SPAN;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* A task event as the perf buffer gives it: e->size bytes, the pids moved. */
static void task_event(struct procs *p, const uint8_t *item, size_t len)
{
	struct perf_event_header *e;
	uint8_t *rec;
	uint64_t time;
	size_t npids;

	/* the kernel's records have a header and fit in its u16 size */
	if (len < sizeof(*e) || len > UINT16_MAX)
		return;
	rec = malloc(len);
	if (!rec)
		return;
	memcpy(rec, item, len);
	e = (struct perf_event_header *)rec;
	e->size = (uint16_t)len;
	/* mmap2 and comm: pid, tid; fork and exit: pid, ppid, tid, ptid */
	npids = e->type == PERF_RECORD_FORK || e->type == PERF_RECORD_EXIT ? 4 : 2;
	for (size_t i = 0; i < npids && sizeof(*e) + 4 * (i + 1) <= len; i++) {
		uint8_t *at = rec + sizeof(*e) + 4 * i;

		put_u32(at, no_pid(get_u32(at)));
	}
	/* what the sampler passes on (sampler.c on_task_event) */
	if ((e->type == PERF_RECORD_MMAP2 || e->type == PERF_RECORD_COMM ||
	     e->type == PERF_RECORD_FORK || e->type == PERF_RECORD_EXIT) &&
	    !task_record__time(e, &time))
		procs__task_event(p, e, time);
	free(rec);
}

/* A ring record: checked as the sampler checks it, then unwound and written. */
static bool sample(struct procs *p, const uint8_t *item, size_t len)
{
	struct procs_copy_use use;
	struct sample_view v;
	struct sample_hdr *h;
	uint8_t *rec = malloc(len ? len : 1);
	bool taken = false;

	if (!rec)
		return false;
	memcpy(rec, item, len);
	h = (struct sample_hdr *)rec;
	if (len >= sizeof(*h)) {
		h->pid = no_pid(h->pid);
		h->tid = no_pid(h->tid);
	}
	if (!sample_record__check(rec, len, &v)) {
		if (v.h != h || (const uint8_t *)v.kstack != rec + sizeof(*h) ||
		    v.ustack != rec + sizeof(*h) + 8 * (size_t)h->kstack_depth ||
		    v.ustack + h->ustack_len > rec + len)
			broken("a sample of %zu bytes checked into the wrong parts", len);
		procs__sample(p, v.h, v.kstack, v.ustack, &use);
		if (use.unwound && use.copied != h->ustack_len)
			broken("a copy of %u bytes said to be %u", h->ustack_len, use.copied);
		if (use.used > use.copied)
			broken("%u bytes of a copy of %u used", use.used, use.copied);
		if (use.new_size && (use.new_size < MIN_USTACK_BYTES ||
				     use.new_size > MAX_USTACK_BYTES || use.new_size % STACK_CHUNK))
			broken("a new copy size of %u bytes", use.new_size);
		taken = true;
	}
	free(rec);
	return taken;
}

/* The profile written must read back whole, with every sample procs wrote. */
static void read_back(uint64_t written)
{
	struct profile_diag diag = { "" };
	struct profile_reader *r = profile_reader__open(path, &diag);
	const struct profile_status *st;
	struct profile_record rec;
	uint64_t samples = 0;
	int ret;

	if (!r)
		broken("the profile written does not open: %s", diag.reason);
	while ((ret = profile_reader__next(r, &rec)) > 0)
		samples += rec.type == PROFILE_REC_SAMPLE;
	if (ret < 0 && ret != -ENOMEM)
		broken("reading the profile written: %d", ret);
	st = profile_reader__status(r);
	if (!ret && (st->bad_blocks || st->truncated || !st->has_trailer || st->unknown_stacks))
		broken("the profile written is damaged: %llu bad blocks (%s), truncated %d, "
		       "trailer %d, %llu unknown stacks", (unsigned long long)st->bad_blocks,
		       st->first_error, st->truncated, st->has_trailer,
		       (unsigned long long)st->unknown_stacks);
	if (!ret && (samples != written || st->trailer_samples != written))
		broken("%llu samples written, %llu read back, the trailer says %llu",
		       (unsigned long long)written, (unsigned long long)samples,
		       (unsigned long long)st->trailer_samples);
	profile_reader__free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct profile_meta meta = { .cmdline = "fuzz_record", .freq_hz = 999 };
	struct profile_diag diag = { "" };
	struct profile_writer *w;
	struct procs *p;
	uint64_t written;
	int err;

	if (!cache)
		setup();
	unlink(path);
	w = profile_writer__create(path, &meta, &diag);
	if (!w)
		broken("%s: %s", path, diag.reason);
	/* small: long inputs start the stack index again, as long recordings do */
	profile_writer__set_stack_bound(w, 64 << 10);
	p = procs__new(w, NULL, cache, SFU_ARCH_HOST, MAX_DEPTH);
	if (!p)
		broken("procs__new: %s", strerror(errno));
	procs__set_copy_sizes(p, 16384, true);
	/* made-up pids may be live processes: their maps and memory are not this test's */
	procs__set_jit(p, false);
	for (size_t at = 0; at + 5 <= size;) {
		uint8_t kind = data[at];
		size_t len = get_u32(data + at + 1);

		at += 5;
		if (len > size - at)
			len = size - at;
		if (kind == RECORD_CAPTURE_TASK)
			task_event(p, data + at, len);
		else if (kind == RECORD_CAPTURE_SAMPLE)
			sample(p, data + at, len);
		at += len;
		if (procs__error(p))
			break;
	}
	err = procs__error(p);
	if (err && err != -ENOMEM)
		broken("recording stopped: %s", strerror(-err));
	written = procs__stats(p)->samples;
	if (profile_writer__samples(w) != written)
		broken("procs wrote %llu samples, the writer counts %llu",
		       (unsigned long long)written,
		       (unsigned long long)profile_writer__samples(w));
	if (profile_writer__close(w, err != 0, &diag)) {
		if (!err)
			broken("closing the profile: %s", diag.reason);
	} else if (!err) {
		read_back(written);
	}
	procs__free(p);
	return 0;
}
