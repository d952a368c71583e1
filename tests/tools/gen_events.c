/* SPDX-License-Identifier: BSD-2-Clause */
/* gen-events: write a profile of one process whose samples, events and stacks a script gives. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "sfunwind/cbf.h"

#define PID 4242
#define MAP_START 0x7f0000000000ull
#define MAX_FRAMES 256

static const char usage[] =
	"usage: gen-events OUT < SCRIPT\n"
	"\n"
	"Write the profile OUT of process 4242 from SCRIPT, one directive per line:\n"
	"\n"
	"  exe PATH SIZE BUILD_ID   the executable, mapped r-x from file offset 0 at\n"
	"                           0x7f0000000000, SIZE bytes (hex); BUILD_ID in hex\n"
	"  comm NAME                the process's name (before exe)\n"
	"  thread TID NAME          a thread and its name\n"
	"  event NAME TYPE FLAGS    an event record (ids from 1 in order); FLAGS 1:\n"
	"                           weights in ns (off-CPU)\n"
	"  sample EVENT TID CPU NS WEIGHT OFF,OFF,...\n"
	"                           a sample of event id EVENT (0: cpu-clock) at time NS\n"
	"                           whose user stack is file offsets of PATH in hex,\n"
	"                           innermost first (the first a pc, the others return\n"
	"                           addresses); '-' for no stack\n"
	"\n"
	"Everything it holds is known by construction: tests of report and script.\n";

static int fail(int line, const char *what)
{
	fprintf(stderr, "gen-events: line %d: %s\n", line, what);
	return 1;
}

static size_t encode(char *list, uint8_t *buf, size_t cap)
{
	uint64_t addrs[MAX_FRAMES];
	char *tok, *save = NULL;
	struct sfu_cbf_enc enc;
	size_t n = 0;

	if (!strcmp(list, "-"))
		return 0;
	for (tok = strtok_r(list, ",", &save); tok && n < MAX_FRAMES; tok = strtok_r(NULL, ",", &save))
		addrs[n++] = MAP_START + strtoull(tok, NULL, 16);
	if (sfu_cbf_enc__init(&enc, 64, buf, cap) || sfu_cbf_encode_stack(&enc, addrs, n, 0, false))
		return 0;
	return sfu_cbf_enc__len(&enc);
}

int main(int argc, char **argv)
{
	struct profile_meta meta = { .created_ns = 1700000000000000000ull, .freq_hz = 99,
				     .stack_size = 8192, .host = "gen", .machine = "x86_64",
				     .cmdline = "gen-events" };
	static uint8_t ustack[SFU_CBF_BOUND(MAX_FRAMES)];
	char line[8192], comm[64] = "gen";
	struct profile_writer *w;
	struct profile_diag diag;
	int n = 0, err = 0;

	if (argc != 2 || argv[1][0] == '-') {
		fputs(usage, argc == 2 && !strcmp(argv[1], "--help") ? stdout : stderr);
		return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
	}
	w = profile_writer__create(argv[1], &meta, &diag);
	if (!w) {
		fprintf(stderr, "gen-events: %s\n", diag.reason);
		return 1;
	}
	while (!err && fgets(line, sizeof(line), stdin)) {
		char a[4096], b[4096], c[256];
		unsigned long long u1, u2, u3, u4, u5;

		n++;
		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		if (sscanf(line, "comm %63s", comm) == 1)
			continue;
		if (sscanf(line, "exe %4095s %llx %255s", a, &u1, c) == 3) {
			uint8_t build_id[64];
			size_t len = strlen(c) / 2;
			struct profile_process p = { .pid = PID, .ppid = 1, .comm = comm, .exe = a };
			struct profile_module m = { .file_size = u1, .build_id = build_id, .path = a };
			uint32_t module;

			if (len > sizeof(build_id))
				return fail(n, "build ID too long");
			for (size_t i = 0; i < len; i++) {
				char byte[3] = { c[2 * i], c[2 * i + 1], 0 };

				build_id[i] = (uint8_t)strtoul(byte, NULL, 16);
			}
			m.build_id_len = len;
			if (!(err = profile_writer__process(w, &p)) &&
			    !(err = profile_writer__module(w, &m, &module))) {
				struct profile_mapping map = { .pid = PID, .start = MAP_START,
							       .end = MAP_START + u1, .prot = 5,
							       .module_id = module };

				err = profile_writer__mapping(w, &map);
			}
		} else if (sscanf(line, "thread %llu %255s", &u1, c) == 2) {
			struct profile_thread t = { PID, (uint32_t)u1, c };

			err = profile_writer__thread(w, &t);
		} else if (sscanf(line, "event %255s %llu %llu", c, &u1, &u2) == 3) {
			struct profile_event e = { .type = (uint32_t)u1, .flags = (uint32_t)u2,
						   .period = 1, .name = c };
			uint32_t id;

			err = profile_writer__event(w, &e, &id);
		} else if (sscanf(line, "sample %llu %llu %llu %llu %llu %4095s", &u1, &u2, &u3, &u4,
				  &u5, b) == 6) {
			struct profile_sample s = { .time_ns = u4, .pid = PID, .tid = (uint32_t)u2,
						    .cpu = (uint32_t)u3, .weight = (uint32_t)u5,
						    .event = (uint32_t)u1, .ustack = ustack };

			s.ustack_len = encode(b, ustack, sizeof(ustack));
			if (!s.ustack_len)
				s.ustack = NULL;
			err = profile_writer__sample(w, &s);
		} else {
			profile_writer__discard(w);
			return fail(n, "not a directive (see --help)");
		}
	}
	if (err) {
		fprintf(stderr, "gen-events: line %d: %s\n", n, strerror(-err));
		profile_writer__discard(w);
		return 1;
	}
	if (profile_writer__close(w, false, &diag)) {
		fprintf(stderr, "gen-events: %s\n", diag.reason);
		return 1;
	}
	return 0;
}
