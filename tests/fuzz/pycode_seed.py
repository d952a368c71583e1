#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write memory images holding one CPython code object of each layout for fuzz_pycode's corpus.

usage: pycode_seed.py OUTDIR

Each input is fuzz_pycode.c's 16-byte header (minor - 10, flags, the code object's offset, the
instruction offset) and an image loaded at 0x7f0000100000: the type named "code", str and bytes
types with their tp_flags, compact str objects (ASCII, latin-1, UCS-2, UCS-4), the line table
(3.10: PEP 626 pairs; 3.11+: PEP 657 entries) and the code object, as user/record/pycode.c's
layouts place their fields (the offsets of pyenv's release builds, from their DWARF).
"""
import os
import struct
import sys

BASE = 0x7f0000100000
T_CODE, T_CODE_NAME, T_STR, T_BYTES = 0x000, 0x040, 0x050, 0x100
O_QUAL, O_NAME, O_FILE, O_TABLE, O_CODE = 0x1c0, 0x240, 0x2c0, 0x380, 0x3c0
SIZE = 0x490

# minor: co_qualname, co_name, co_filename, co_firstlineno, co_linetable, str ascii data, compact data
LAYOUTS = {
    10: (0, 112, 104, 40, 120, 48, 72),
    11: (128, 120, 112, 72, 136, 48, 72),
    12: (128, 120, 112, 68, 136, 40, 56),
    13: (128, 120, 112, 68, 136, 40, 56),
}

TABLE_310 = bytes([6, 0, 4, 2, 0, 3, 2, 0x80, 8, 0xff, 0, 0x7f])
TABLE_311 = bytes([0x80 | 13 << 3 | 0, 0x00, 0x80 | 13 << 3 | 2, 0x04, 0x80 | 15 << 3,
                   0x80 | 11 << 3 | 1, 0x05, 0x07, 0x80 | 14 << 3, 0x43, 0x01, 0, 1, 2,
                   0x80 | 13 << 3, 0x44, 0x01, 0x80 | 3 << 3, 0x11])


def put(img, at, fmt, *v):
    struct.pack_into('<' + fmt, img, at, *v)


def put_str(img, lay, at, s):
    cps = [ord(c) for c in s]
    top = max(cps, default=0)
    kind = 1 if top < 0x100 else 2 if top < 0x10000 else 4
    ascii_ = top < 0x80
    put(img, at + 8, 'Q', BASE + T_STR)
    put(img, at + 16, 'Q', len(cps))
    put(img, at + 32, 'I', kind << 2 | 1 << 5 | (1 << 6 if ascii_ else 0))
    data = at + (lay[5] if ascii_ else lay[6])
    for i, cp in enumerate(cps):
        put(img, data + i * kind, {1: 'B', 2: 'H', 4: 'I'}[kind], cp)


def image(minor, qual, name, fname, table, first=10):
    lay = LAYOUTS[minor]
    img = bytearray(SIZE)
    put(img, T_CODE + 24, 'Q', BASE + T_CODE_NAME)
    img[T_CODE_NAME:T_CODE_NAME + 5] = b'code\0'
    put(img, T_STR + 168, 'Q', 1 << 28)
    put(img, T_BYTES + 168, 'Q', 1 << 27)
    put_str(img, lay, O_QUAL, qual)
    put_str(img, lay, O_NAME, name)
    put_str(img, lay, O_FILE, fname)
    put(img, O_TABLE + 8, 'Q', BASE + T_BYTES)
    put(img, O_TABLE + 16, 'Q', len(table))
    img[O_TABLE + 32:O_TABLE + 32 + len(table)] = table
    put(img, O_CODE + 8, 'Q', BASE + T_CODE)
    put(img, O_CODE + lay[3], 'i', first)
    if lay[0]:
        put(img, O_CODE + lay[0], 'Q', BASE + O_QUAL)
    put(img, O_CODE + lay[1], 'Q', BASE + O_NAME)
    put(img, O_CODE + lay[2], 'Q', BASE + O_FILE)
    put(img, O_CODE + lay[4], 'Q', BASE + O_TABLE)
    return img


# 3.13's _Py_DebugOffsets as far as pycode.c reads them: (offset, value) of its fields.
DEBUG_313 = [(280, 112), (288, 120), (296, 128), (304, 136), (312, 68), (344, 200), (360, 8),
             (376, 24), (392, 168), (520, 16), (528, 32), (544, 32), (552, 16), (560, 40)]


def debug_offsets():
    buf = bytearray(568)
    buf[0:8] = b'xdebugpy'
    put(buf, 8, 'Q', 0x030d00f0)
    for at, v in DEBUG_313:
        put(buf, at, 'Q', v)
    return buf


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    names = [
        ('ascii', 'f.<locals>.g', 'g', '/srv/app/main.py'),
        ('latin1', 'Outer.\u00f1and\u00fa', '\u00f1and\u00fa', '/tmp/caf\u00e9.py'),
        ('ucs2', '\u540d\u524d', '\u540d\u524d', '/home/\u540d/x.py'),
        ('ucs4', '\U00020000.g', '\U00020000', '/tmp/t\u00ebst_\U0001f600/w\u00f6rk.py'),
    ]
    for minor in LAYOUTS:
        table = TABLE_310 if minor == 10 else TABLE_311
        for tag, qual, name, fname in names:
            for off in (0, 10, 16):
                hdr = struct.pack('<BBHIQ', minor - 10, 0, O_CODE, 0, off)
                with open(os.path.join(out, '3%d-%s-%d' % (minor, tag, off)), 'wb') as f:
                    f.write(hdr + image(minor, qual, name, fname, table))
            if minor == 13:
                # the layout from the interpreter's own offsets (minor byte says 3.10: unused)
                hdr = struct.pack('<BBHIQ', 0, 1, O_CODE, 0, 10)
                with open(os.path.join(out, '313-debug-%s' % tag), 'wb') as f:
                    f.write(hdr + debug_offsets() + image(minor, qual, name, fname, table))


main()
