#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write an ELF file's .eh_frame and .eh_frame_hdr as a fuzz_ehframe.c input.

usage: ehframe_seed.py ELF OUT
"""
import struct
import sys

EM_AARCH64 = 183


def sections(data):
    """{name: (addr, bytes)} of a 64-bit ELF file."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise SystemExit("not a 64-bit ELF file")
    e = "<" if data[5] == 1 else ">"
    (machine,) = struct.unpack_from(e + "H", data, 18)
    shoff, = struct.unpack_from(e + "Q", data, 40)
    shentsize, shnum, shstrndx = struct.unpack_from(e + "HHH", data, 58)
    hdrs = [struct.unpack_from(e + "IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = hdrs[shstrndx]
    out = {}
    for h in hdrs:
        name_off = strtab[4] + h[0]
        name = data[name_off:data.index(b"\0", name_off)].decode()
        if h[1] != 8:  # not NOBITS
            out[name] = (h[3], data[h[4]:h[4] + h[5]])
    return out, machine, e == ">"


def main():
    data = open(sys.argv[1], "rb").read()
    secs, machine, big = sections(data)
    if ".eh_frame" not in secs:
        raise SystemExit(f"{sys.argv[1]}: no .eh_frame")
    eh_addr, eh = secs[".eh_frame"]
    hdr_addr, hdr = secs.get(".eh_frame_hdr", (0, b""))
    flags = (1 if machine == EM_AARCH64 else 0) | (2 if big else 0)
    with open(sys.argv[2], "wb") as f:
        f.write(bytes([flags]) + struct.pack("<III", eh_addr & 0xFFFFFFFF, hdr_addr & 0xFFFFFFFF,
                                             len(hdr)) + hdr + eh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
