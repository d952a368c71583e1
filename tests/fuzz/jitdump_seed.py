#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write small jitdump files, whole and damaged, as seeds for fuzz_jitdump.

usage: jitdump_seed.py OUTDIR

The committed corpus tests/fuzz/corpus/jitdump/ is this script's output, but
for real-cpython-3.13.0 and real-node-20: the header and first records of
dumps that `python3.13 -X perf_jit` and `node --perf-prof
--perf-prof-unwinding-info` wrote (a TurboFan function's unwinding data and
code among them). Run it again only to change them. Layouts as V8 (src/diagnostics/perf-jit.cc) and
CPython (Python/perf_jit_trampoline.c) write them: a 40-byte header, then
records of id, total_size, timestamp and their fields; DEBUG_INFO and
UNWINDING_INFO padded to 8 bytes; unwinding data .eh_frame then a 20-byte
.eh_frame_hdr, placed for code_addr + round_up(code_size, 8). Both byte orders.
"""
import os
import struct
import sys

LOAD, MOVE, DEBUG, CLOSE, UNWIND = range(5)
EM_X86_64 = 62


class Dump:
    def __init__(self, big_endian=False, header_size=40, flags=0):
        self.e = ">" if big_endian else "<"
        self.b = bytearray()
        self.b += struct.pack(self.e + "IIIIIIQ", 0x4A695444, 1, header_size, EM_X86_64,
                              0xDEADBEEF, 4242, 1_000_000)
        if header_size >= 40:
            self.b += struct.pack(self.e + "Q", flags)
        self.b += b"\xa5" * (header_size - len(self.b))
        self.ts = 1_000_000

    def record(self, rid, body, align=1):
        self.ts += 1000
        size = 16 + len(body)
        pad = (-size) % align
        self.b += struct.pack(self.e + "IIQ", rid, size + pad, self.ts) + body + bytes(pad)

    def load(self, addr, name, code, index):
        body = struct.pack(self.e + "IIQQQQ", 4242, 4243, addr, addr, len(code), index)
        self.record(LOAD, body + name + b"\0" + code)

    def move(self, old, new, size, index):
        self.record(MOVE, struct.pack(self.e + "IIQQQQQ", 4242, 4243, new, old, new, size, index))

    def debug(self, addr, entries):
        body = struct.pack(self.e + "QQ", addr, len(entries))
        for a, line, col, name in entries:
            body += struct.pack(self.e + "Qii", a, line, col) + name + b"\0"
        self.record(DEBUG, body, 8)

    def unwind(self, code_size):
        eh, hdr = unwinding_data(self.e, code_size)
        data = eh + hdr
        self.record(UNWIND, struct.pack(self.e + "QQQ", len(data), len(hdr), len(data)) + data, 8)

    def unwind_empty(self):
        """V8's record for code without unwinding information: a header with no table."""
        hdr = bytes([1, 0x1b, 0x03, 0x3b]) + bytes(16)
        self.record(UNWIND, struct.pack(self.e + "QQQ", len(hdr), len(hdr), 0) + hdr, 8)

    def raw(self, rid, body=b""):
        self.record(rid, body)


def unwinding_data(e, code_size):
    """CIE, one FDE for [code_addr, +code_size), V8's terminator, then .eh_frame_hdr."""
    rounded = (code_size + 7) & ~7
    cie = struct.pack(e + "II", 20, 0) + bytes([1]) + b"zR\0" + bytes([1, 0x78, 16, 1, 0x1b,
                                                                      0x0c, 7, 8, 0x90, 1, 0, 0])
    program = bytes([0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6, 0x43, 0x0c, 7, 8, 0, 0, 0])
    fde_at = len(cie)
    fde = struct.pack(e + "IIiI", 4 + 4 + 4 + 1 + len(program), fde_at + 4,
                      -(rounded + fde_at + 8), code_size) + b"\0" + program
    eh = cie + fde + bytes(4)
    hdr = bytes([1, 0x1b, 0x03, 0x3b]) + struct.pack(e + "iIii", -(len(eh) + 4), 1,
                                                     -(rounded + len(eh)), -(len(eh) - fde_at))
    return eh, hdr


def v8_like(big_endian):
    d = Dump(big_endian)
    code = bytes([0x55, 0x48, 0x89, 0xE5, 0x48, 0x83, 0xEC, 0x10, 0xC9, 0xC3])
    d.debug(0x7F0000001000, [(0x7F0000001040, 1, 1, b"/srv/app.js"),
                             (0x7F0000001044, 3, 9, b"\xff"),
                             (0x7F0000001048, 4, 2, b"/srv/lib.js")])
    d.unwind(len(code))
    d.load(0x7F0000001000, b"LazyCompile:*fib /srv/app.js:3", code, 1)
    d.unwind_empty()
    d.load(0x7F0000001100, b"Builtin:ArgumentsAdaptorTrampoline", b"\xc3", 2)
    d.move(0x7F0000001000, 0x7F0000002000, len(code), 1)
    d.raw(CLOSE)
    return bytes(d.b)


def cpython_like():
    d = Dump()
    tramp = bytes([0x55, 0x48, 0x89, 0xE5, 0xFF, 0xD1, 0x5D, 0xC3])
    for i, name in enumerate([b"py::<module>:/x.py", b"py::f:/x.py", b"py::g:/y.py"]):
        d.unwind(len(tramp))
        d.load(0x7F5A3C001000 + 0x60 * i, name, tramp, i + 1)
    return bytes(d.b)


def odd_headers():
    short = Dump(header_size=32)
    short.load(0x1000, b"f", b"\xc3", 0)
    longer = Dump(header_size=64, flags=1)
    longer.raw(99, b"\x01\x02\x03")
    longer.raw(0xFFFFFFFF)
    longer.load(0x2000, b"", b"", 1)
    return bytes(short.b), bytes(longer.b)


def damaged():
    out = {}
    whole = v8_like(False)
    out["cut-in-record"] = whole[:len(whole) - 23]
    out["cut-in-header"] = whole[:21]
    d = Dump()
    d.load(0x1000, b"ok", b"\xc3", 0)
    d.record(DEBUG, struct.pack("<QQ", 0x1000, 3) + struct.pack("<Qii", 0x1000, 1, 0) + b"a\0", 8)
    out["debug-count"] = bytes(d.b)
    d = Dump(True)
    d.load(0x1000, b"ok", b"\xc3", 0)
    d.b += struct.pack(">IIQ", LOAD, 8, 0)
    out["below-prefix-be"] = bytes(d.b)
    d = Dump()
    d.load(0x1000, b"n" * 300, b"\x90" * 40, 0)
    out["long-name"] = bytes(d.b)
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = {"v8-le": v8_like(False), "v8-be": v8_like(True), "cpython": cpython_like()}
    seeds["header-32"], seeds["header-64"] = odd_headers()
    seeds.update(damaged())
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
