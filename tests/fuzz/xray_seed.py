#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write small XRay traces, whole and damaged, as seeds for fuzz_xray.

usage: xray_seed.py OUTDIR

The committed corpus tests/fuzz/corpus/xray/ is this script's output; run it
again only to change them. Real traces from compiler-rt are added at build
time (gen_seeds.sh). Layouts: FDR versions 1-5 and basic mode, in both byte
orders, with the spec's bitfield rules (little-endian from the least
significant bit, big-endian from the most significant).
"""
import os
import sys

FDR, BASIC = 1, 0
ENTER, EXIT, TAIL_EXIT, ENTER_ARGS = 0, 1, 2, 3
(NEW_BUFFER, END_OF_BUFFER, NEW_CPU, TSC_WRAP, WALLTIME, CUSTOM_EVENT, CALL_ARG,
 BUFFER_EXTENTS, TYPED_EVENT, PID) = range(10)


class Trace:
    def __init__(self, big_endian, version, ttype=FDR, buffer_size=0x4000):
        self.be = big_endian
        self.version = version
        self.b = bytearray()
        self.u(version, 2)
        self.u(ttype, 2)
        self.u(0x80 | 0x40 if big_endian else 0x03, 1)  # constant and non-stop TSC
        self.b += bytes(3)
        self.u(1000000000, 8)
        self.u(buffer_size, 8)
        self.b += bytes(8)

    def u(self, v, n):
        self.b += (v & ((1 << (8 * n)) - 1)).to_bytes(n, "big" if self.be else "little")

    def meta(self, kind, *fields):
        """fields: (value, size) pairs; the reserved rest holds garbage."""
        start = len(self.b)
        self.u(0x80 | kind if self.be else kind << 1 | 1, 1)
        for v, n in fields:
            self.u(v, n)
        self.b += b"\xa5" * (start + 16 - len(self.b))
        return start

    def fn(self, kind, fid, delta):
        if self.be:
            self.u(kind << 28 | (fid & 0x0FFFFFFF), 4)
        else:
            self.u(kind << 1 | fid << 4, 4)
        self.u(delta, 4)

    def extents(self):
        return self.meta(BUFFER_EXTENTS, (0, 8))

    def close(self, at):
        size = len(self.b) - at - 16
        self.b[at + 1:at + 9] = size.to_bytes(8, "big" if self.be else "little")

    def custom(self, payload, tsc_or_delta, cpu=0):
        if self.version >= 5:
            self.meta(CUSTOM_EVENT, (len(payload), 4), (tsc_or_delta, 4))
        elif self.version == 4:
            self.meta(CUSTOM_EVENT, (len(payload), 4), (tsc_or_delta, 8), (cpu, 2))
        else:
            self.meta(CUSTOM_EVENT, (len(payload), 4), (tsc_or_delta, 8))
        self.b += payload

    def typed(self, payload, delta, etype):
        self.meta(TYPED_EVENT, (len(payload), 4), (delta, 4), (etype, 2))
        self.b += payload

    def preamble(self, tid, cpu, tsc):
        self.meta(NEW_BUFFER, (tid, 4))
        self.meta(WALLTIME, (1700000000, 8), (123456, 4))
        if self.version >= 3:
            self.meta(PID, (4242, 4))
        self.meta(NEW_CPU, (cpu, 2), (tsc, 8))

    def calls(self, depth, fid=1):
        """Nested calls, a tail exit and an entry with arguments."""
        for d in range(depth):
            self.fn(ENTER, fid + d, 100 + d)
        self.fn(ENTER_ARGS, fid + depth, 7)
        self.meta(CALL_ARG, (0xDEADBEEF, 8))
        self.meta(CALL_ARG, (42, 8))
        self.fn(TAIL_EXIT, fid + depth, 3)
        for d in reversed(range(depth)):
            self.fn(EXIT, fid + d, 50)


def fdr_buffer(t, tid, cpu=0, tsc=1 << 40, events=True):
    """One version 2-5 buffer."""
    at = t.extents()
    t.preamble(tid, cpu, tsc)
    t.calls(3)
    t.meta(TSC_WRAP, (tsc + (1 << 33), 8))
    t.fn(ENTER, 9, 0xFFFFFFFF)
    t.meta(NEW_CPU, (cpu + 1, 2), (tsc + (1 << 34), 8))
    t.fn(EXIT, 9, 1)
    if events:
        t.custom(b"hello", 5 if t.version >= 5 else tsc + 77, 3)
        if t.version >= 4:
            t.typed(b"typed!", 2, 12)
    t.close(at)


def v1_buffer(t, tid, size, end=True):
    """One version 1 buffer of @size bytes (0: as long as it is)."""
    start = len(t.b)
    t.preamble(tid, 1, 1 << 36)
    t.calls(2)
    t.custom(b"v1", 1 << 36)
    if end:
        t.meta(END_OF_BUFFER)
    if size:
        t.b += b"\xff" * (start + size - len(t.b))


def basic_trace(be):
    t = Trace(be, 3, BASIC)
    t.b[16:32] = bytes(16)

    def rec(cpu, kind, fid, tsc, tid):
        t.u(0, 2)
        t.u(cpu, 1)
        t.u(kind, 1)
        t.u(fid, 4)
        t.u(tsc, 8)
        t.u(tid, 4)
        t.u(4242, 4)
        t.b += bytes(8)

    def arg(fid, tid, value):
        t.u(1, 2)
        t.b += bytes(2)
        t.u(fid, 4)
        t.u(tid, 4)
        t.u(4242, 4)
        t.u(value, 8)
        t.b += bytes(8)

    rec(0, ENTER, 1, 1000, 7)
    rec(1, ENTER_ARGS, 2, 1100, 8)
    arg(2, 8, 0x1234)
    rec(1, TAIL_EXIT, 2, 1200, 8)
    rec(0, EXIT, 1, 1300, 7)
    return t


def seeds():
    out = {}
    for be in (False, True):
        e = "be" if be else "le"
        for v in (2, 3, 4, 5):
            t = Trace(be, v)
            fdr_buffer(t, 101)
            fdr_buffer(t, 102, cpu=3, events=False)
            out[f"v{v}-{e}"] = t.b
        t = Trace(be, 1, buffer_size=512)
        v1_buffer(t, 201, 512)
        v1_buffer(t, 202, 512, end=False)
        out[f"v1-{e}"] = t.b
        t = Trace(be, 1, buffer_size=0)
        v1_buffer(t, 201, 0)
        v1_buffer(t, 202, 0)
        out[f"v1-sequential-{e}"] = t.b
        out[f"basic-{e}"] = basic_trace(be).b

    # Damage, little-endian: each costs one buffer.
    t = Trace(False, 5)
    fdr_buffer(t, 1)
    cut = len(t.b)
    fdr_buffer(t, 2)
    out["v5-cut-record"] = t.b[:len(t.b) - 3]
    out["v5-cut-at-buffer"] = t.b[:cut + 40]
    lying = bytearray(t.b)
    lying[33:41] = (cut - 48 + 24).to_bytes(8, "little")
    out["v5-extents-long"] = lying
    lying = bytearray(t.b)
    lying[33:41] = (cut - 48 - 8).to_bytes(8, "little")
    out["v5-extents-short"] = lying
    garbage = Trace(False, 5)
    fdr_buffer(garbage, 1)
    garbage.b += b"\x0f\x00\xff\xff" * 5
    fdr_buffer(garbage, 2)
    out["v5-garbage-between"] = garbage.b
    bad = Trace(False, 5)
    at = bad.extents()
    bad.preamble(1, 0, 5)
    bad.meta(CUSTOM_EVENT, (100000, 4), (1, 4))
    bad.b += b"short"
    bad.close(at)
    fdr_buffer(bad, 2)
    out["v5-event-past-end"] = bad.b
    unknown = Trace(False, 5)
    at = unknown.extents()
    unknown.preamble(1, 0, 5)
    unknown.meta(12, (0, 8))
    unknown.fn(6, 1, 1)
    unknown.close(at)
    fdr_buffer(unknown, 2)
    out["v5-unknown-kinds"] = unknown.b
    wrong = Trace(False, 6)
    fdr_buffer(wrong, 1)
    out["v6-unsupported"] = wrong.b
    return out


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for name, data in seeds().items():
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
