#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write small Go function tables (.gopclntab) of each layout for fuzz_gopclntab's corpus.

usage: gopclntab_seed.py OUTDIR

Each table holds three functions at 0x401000 (a frameless leaf, one with a
frame, runtime.goexit), their pc-to-SP-delta tables, an inline-tree PCDATA
table and FUNCDATA slot on the second, in the Go 1.16, 1.18 and 1.20 layouts
(runtime/symtab.go pcHeader, runtime2.go _func).
"""
import os
import struct
import sys

TEXT = 0x401000
MAGIC = {116: 0xfffffffa, 118: 0xfffffff0, 120: 0xfffffff1}
# name, offset from TEXT, size, flag, pcsp pairs (value, pc delta), inline-tree index pairs
FUNCS = [
    ('main.leaf', 0x00, 0x20, 0, [(0, 0x20)], None),
    ('main.mid', 0x20, 0x40, 0, [(0, 4), (0x28, 0x38), (0, 4)], [(-1, 0x10), (0, 0x8), (-1, 0x28)]),
    ('runtime.goexit', 0x60, 0x10, 1, [(0, 0x10)], None),
]


def uvarint(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pcvalue(pairs):
    out, val = bytearray(), -1
    for value, pcdelta in pairs:
        d = value - val
        out += uvarint((d << 1) if d >= 0 else ((~d << 1) | 1))
        out += uvarint(pcdelta)
        val = value
    return bytes(out + b'\0')


def align(b, a):
    b += b'\0' * (-len(b) % a)


def table(version):
    words = 7 if version == 116 else 8
    t = bytearray(8 + words * 8)
    names = len(t)
    nameoff = []
    for f in FUNCS:
        nameoff.append(len(t) - names)
        t += f[0].encode() + b'\0'
    align(t, 8)
    pctab = len(t)
    t += b'\0'
    pcsp, inl = [], []
    for f in FUNCS:
        pcsp.append(len(t) - pctab)
        t += pcvalue(f[4])
        inl.append(len(t) - pctab if f[5] else 0)
        if f[5]:
            t += pcvalue(f[5])
    align(t, 8)
    pcln = len(t)
    field = 8 if version == 116 else 4
    records = []
    for i, f in enumerate(FUNCS):
        r = bytearray(struct.pack('<Q', TEXT + f[1]) if version == 116 else struct.pack('<I', f[1]))
        npcdata = 3 if f[5] else 0
        r += struct.pack('<iiIIIIII', nameoff[i], 0, 0, pcsp[i], 0, 0, npcdata, 0)
        if version == 120:
            r += struct.pack('<i', 1)
        r += bytes([0, 0 if version == 116 else f[3], 0, 4 if f[5] else 0])
        if f[5]:
            r += struct.pack('<III', 0, 0, inl[i])
            if version == 116:
                align(r, 8)     # records start 8-aligned: the same as aligning the address
                r += struct.pack('<QQQQ', 0, 0, 0, 0x4a0000)
            else:
                r += struct.pack('<IIII', 0xffffffff, 0xffffffff, 0xffffffff, 0x40)
        align(r, 8)
        records.append(bytes(r))
    functab = (2 * len(FUNCS) + 1) * field
    functab += -functab % 8
    rec_offs, at = [], functab
    for r in records:
        rec_offs.append(at)
        at += len(r)
    for i in range(len(FUNCS) + 1):
        off = FUNCS[i][1] if i < len(FUNCS) else FUNCS[-1][1] + FUNCS[-1][2]
        if version == 116:
            t += struct.pack('<Q', TEXT + off) + (struct.pack('<Q', rec_offs[i]) if i < len(FUNCS) else b'')
        else:
            t += struct.pack('<I', off) + (struct.pack('<I', rec_offs[i]) if i < len(FUNCS) else b'')
    align(t, 8)
    for r in records:
        t += r
    hdr = [len(FUNCS), 0] + ([] if version == 116 else [TEXT]) + [names, 0, 0, pctab, pcln]
    struct.pack_into('<IBBBB', t, 0, MAGIC[version], 0, 0, 1, 8)
    struct.pack_into('<' + 'Q' * words, t, 8, *hdr)
    return bytes(t)


SEGMENT_ADDR = 0x4a0000
PREFIX = 64          # bytes before the table: the input is a segment, not a table


def segment(version):
    """A read-only segment as a stripped file holds it (fuzz_gopclntab's in_segment()): other
    data, the table, main.mid's inline tree (main.leaf inlined at +0x10), and the moduledata
    that points at the table and gives gofunc."""
    t = table(version)
    seg = bytearray(PREFIX) + t
    align(seg, 8)
    tree = len(seg)
    # main.leaf (name offset 0) inlined, its call site at +0x30 (inline index -1 there)
    if version == 120:
        seg += struct.pack('<BBBBiii', 0, 0, 0, 0, 0, 0x30, 1)
    else:
        seg += struct.pack('<hBBiiii', -1, 0, 0, 0, 0, 0, 0x30)
    align(seg, 8)
    words = [0] * 41
    tab = SEGMENT_ADDR + PREFIX
    words[0] = tab
    words[1] = tab + struct.unpack_from('<Q', t, 8 + 3 * 8)[0]
    words[22] = TEXT
    words[40 if version == 120 else 38] = SEGMENT_ADDR + tree - 0x40
    seg += struct.pack('<' + 'Q' * len(words), *words)
    return bytes(seg)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for v in (116, 118, 120):
        with open(os.path.join(out, f'go{v}-three-funcs'), 'wb') as f:
            f.write(table(v))
    for v in (118, 120):
        with open(os.path.join(out, f'go{v}-segment-inline'), 'wb') as f:
            f.write(segment(v))
    # a table behind other read-only data, as a stripped file's segment holds it
    with open(os.path.join(out, 'go118-after-rodata'), 'wb') as f:
        f.write(b'\xf0\xff\xff\xff' + b'\x00' * 60 + table(118))


if __name__ == '__main__':
    main()
