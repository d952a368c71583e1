#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Cut a recording's capture (SFPROF_DEBUG_CAPTURE, user/record/records.h) into fuzz_record seeds.

usage: record_seed.py CAPTURE PREFIX   (writes PREFIX-0, PREFIX-1, ...)

The capture holds every task event of the system and every sample; a seed
keeps the task events of the sampled processes (and of their parents' forks)
up to its samples, then a run of samples, at most MAX_BYTES in all.
"""
import struct
import sys

MAX_BYTES = 40 << 10
MAX_SEEDS = 4
TASK, SAMPLE = 0, 1
PERF_RECORD_FORK = 7


def items(data):
    at = 0
    while at + 5 <= len(data):
        kind, size = struct.unpack_from("<BI", data, at)
        yield kind, data[at:at + 5 + size]
        at += 5 + size


def main():
    capture, prefix = sys.argv[1], sys.argv[2]
    with open(capture, "rb") as f:
        stream = list(items(f.read()))
    # sample_hdr: time_ns, then pid
    pids = {struct.unpack_from("<I", it, 5 + 8)[0] for kind, it in stream if kind == SAMPLE}
    # perf records: header (8 bytes), then pid; a fork's ppid next
    def wanted(it):
        pid, other = struct.unpack_from("<II", it, 5 + 8)
        ptype = struct.unpack_from("<I", it, 5)[0]
        return pid in pids or (ptype == PERF_RECORD_FORK and other in pids)

    events, seeds, cur, cur_size = b"", [], b"", 0
    for kind, it in stream:
        if kind == TASK:
            if len(it) >= 5 + 16 and wanted(it):
                events += it
                if cur:
                    cur += it
            continue
        if len(events) + len(it) > MAX_BYTES:
            continue
        if not cur:
            cur = events
        if len(cur) + len(it) > MAX_BYTES:
            seeds.append(cur)
            if len(seeds) == MAX_SEEDS:
                break
            cur = events
        cur += it
    if cur and len(seeds) < MAX_SEEDS:
        seeds.append(cur)
    for i, seed in enumerate(seeds):
        with open("%s-%d" % (prefix, i), "wb") as f:
            f.write(seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
