/* SPDX-License-Identifier: BSD-2-Clause */
/* Write a profile whose strings a hostile process chose: comms, paths and a command line, as given. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "sfunwind/cbf.h"

#define PID 4242
#define MAP_START 0x7f0000000000ull
#define MAX_FRAMES 64

static const char usage[] =
	"usage: sfprof-crafted-profile OUT EXE BUILD_ID MAP_SIZE COMM COMM2 CMDLINE KADDR\n"
	"                              STACK_A STACK_B\n"
	"\n"
	"Write the profile OUT of one process (pid 4242, comm COMM, executable EXE\n"
	"mapped r-x from file offset 0 at 0x7f0000000000, MAP_SIZE bytes, build ID\n"
	"BUILD_ID in hex) recorded with the command line CMDLINE, and two threads:\n"
	"4242 named COMM takes 3 samples of user stack STACK_A and kernel stack\n"
	"KADDR; 4243 named COMM2 takes 2 samples of user stack STACK_B. A stack\n"
	"is file offsets in EXE in hex, innermost first, joined by ','. Strings go\n"
	"into the file byte for byte, whatever they hold.\n";

static uint64_t hex_arg(const char *s, const char *what)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 16);
	if (errno || end == s || *end) {
		fprintf(stderr, "sfprof-crafted-profile: %s: '%s' is not a hex number\n", what, s);
		exit(2);
	}
	return v;
}

/* The CBF bytes of a stack given as file offsets, each placed in the mapping. */
static size_t encode(const char *list, uint8_t *buf, size_t cap)
{
	uint64_t addrs[MAX_FRAMES];
	char *copy = strdup(list), *tok, *save = NULL;
	struct sfu_cbf_enc enc;
	size_t n = 0;

	if (!copy)
		exit(1);
	for (tok = strtok_r(copy, ",", &save); tok && n < MAX_FRAMES; tok = strtok_r(NULL, ",", &save))
		addrs[n++] = MAP_START + hex_arg(tok, "stack");
	free(copy);
	if (sfu_cbf_enc__init(&enc, 64, buf, cap) ||
	    sfu_cbf_encode_stack(&enc, addrs, n, 0, false)) {
		fprintf(stderr, "sfprof-crafted-profile: cannot encode '%s'\n", list);
		exit(1);
	}
	return sfu_cbf_enc__len(&enc);
}

int main(int argc, char **argv)
{
	uint8_t ustack_a[SFU_CBF_BOUND(MAX_FRAMES)], ustack_b[SFU_CBF_BOUND(MAX_FRAMES)];
	uint8_t kstack[SFU_CBF_BOUND(1)], build_id[64];
	struct profile_meta meta = {
		.created_ns = 1700000000000000000ull,
		.freq_hz = 99,
		.stack_size = 8192,
		.host = "host\x1b]0;owned\x07",
		.release = "6.1\xff",
		.machine = "x86_64",
	};
	struct profile_writer *w;
	struct profile_diag diag;
	size_t len_a, len_b, len_k, build_id_len;
	uint64_t map_size, kaddr;
	uint32_t module;
	int err = 0;

	if (argc != 11) {
		fputs(usage, stderr);
		return 2;
	}
	build_id_len = strlen(argv[3]) / 2;
	if (build_id_len > sizeof(build_id) || strlen(argv[3]) % 2) {
		fputs("sfprof-crafted-profile: BUILD_ID: an even number of hex digits, at most 128\n",
		      stderr);
		return 2;
	}
	for (size_t i = 0; i < build_id_len; i++) {
		char byte[3] = { argv[3][2 * i], argv[3][2 * i + 1], 0 };

		build_id[i] = hex_arg(byte, "BUILD_ID");
	}
	map_size = hex_arg(argv[4], "MAP_SIZE");
	kaddr = hex_arg(argv[8], "KADDR");
	meta.cmdline = argv[7];
	len_a = encode(argv[9], ustack_a, sizeof(ustack_a));
	len_b = encode(argv[10], ustack_b, sizeof(ustack_b));
	{
		struct sfu_cbf_enc enc;

		if (sfu_cbf_enc__init(&enc, 64, kstack, sizeof(kstack)) ||
		    sfu_cbf_encode_stack(&enc, &kaddr, 1, 0, false))
			return 1;
		len_k = sfu_cbf_enc__len(&enc);
	}
	w = profile_writer__create(argv[1], &meta, &diag);
	if (!w) {
		fprintf(stderr, "sfprof-crafted-profile: %s\n", diag.reason);
		return 1;
	}
	{
		struct profile_process p = { .pid = PID, .ppid = 1, .comm = argv[5], .exe = argv[2] };
		struct profile_thread t1 = { PID, PID, argv[5] }, t2 = { PID, PID + 1, argv[6] };
		struct profile_module m = { .file_size = map_size, .build_id = build_id,
					    .build_id_len = build_id_len, .path = argv[2] };

		err = profile_writer__process(w, &p);
		err = err ? err : profile_writer__thread(w, &t1);
		err = err ? err : profile_writer__thread(w, &t2);
		err = err ? err : profile_writer__module(w, &m, &module);
	}
	if (!err) {
		struct profile_mapping map = { .pid = PID, .start = MAP_START,
					       .end = MAP_START + map_size, .prot = 5,
					       .module_id = module };

		err = profile_writer__mapping(w, &map);
	}
	for (int i = 0; i < 5 && !err; i++) {
		struct profile_sample s = {
			.time_ns = 1000000000ull + i * 10000000ull,
			.pid = PID, .tid = i < 3 ? PID : PID + 1, .cpu = i & 1, .weight = 1,
			.ustack = i < 3 ? ustack_a : ustack_b, .ustack_len = i < 3 ? len_a : len_b,
			.kstack = i < 3 ? kstack : NULL, .kstack_len = i < 3 ? len_k : 0,
		};

		err = profile_writer__sample(w, &s);
	}
	if (err) {
		fprintf(stderr, "sfprof-crafted-profile: writing %s: %s\n", argv[1], strerror(-err));
		profile_writer__discard(w);
		return 1;
	}
	if (profile_writer__close(w, false, &diag)) {
		fprintf(stderr, "sfprof-crafted-profile: %s\n", diag.reason);
		return 1;
	}
	return 0;
}
