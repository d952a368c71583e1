#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write small ELF core files for fuzz_core: NT_PRSTATUS, NT_FILE and PT_LOADs, as the kernel lays them out.

usage: core_seed.py OUTDIR
Writes x86_64-core and aarch64-core (one thread, a stack PT_LOAD, a code
mapping of /bin/true and one of a missing file) and x86_64-core-threads
(two threads, no NT_FILE).
"""

import os
import struct
import sys

EM_X86_64, EM_AARCH64 = 62, 183
PT_LOAD, PT_NOTE = 1, 4
NT_PRSTATUS, NT_FILE = 1, 0x46494c45
PF_X, PF_W, PF_R = 1, 2, 4


def note(ntype, desc):
    name = b'CORE\0'
    pad = lambda b: b + b'\0' * (-len(b) % 4)
    return struct.pack('<III', len(name), len(desc), ntype) + pad(name) + pad(desc)


def prstatus(machine, pc, sp):
    regs = [0] * (27 if machine == EM_X86_64 else 34)
    if machine == EM_X86_64:
        regs[16], regs[19] = pc, sp
    else:
        regs[32], regs[31] = pc, sp
    return b'\0' * 112 + struct.pack('<%dQ' % len(regs), *regs) + b'\0' * 8


def nt_file(entries):
    head = struct.pack('<QQ', len(entries), 4096)
    body = b''.join(struct.pack('<QQQ', s, e, off) for s, e, off, _ in entries)
    names = b''.join(n.encode() + b'\0' for _, _, _, n in entries)
    return head + body + names


def core(machine, threads, files, stack_base):
    notes = b''.join(note(NT_PRSTATUS, prstatus(machine, pc, sp)) for pc, sp in threads)
    if files:
        notes += note(NT_FILE, nt_file(files))
    stack = bytes(range(256)) * 2
    loads = [(stack_base, len(stack), PF_R | PF_W, stack)]
    loads += [(s, e - s, PF_R | PF_X, b'') for s, e, _, _ in files]
    phnum = 1 + len(loads)
    off = 64 + 56 * phnum
    phdrs = struct.pack('<IIQQQQQQ', PT_NOTE, 0, off, 0, 0, len(notes), 0, 4)
    data = notes
    for vaddr, memsz, flags, content in loads:
        phdrs += struct.pack('<IIQQQQQQ', PT_LOAD, flags, off + len(data), vaddr, 0,
                             len(content), memsz, 4096)
        data += content
    ehdr = b'\x7fELF' + bytes([2, 1, 1, 0]) + b'\0' * 8
    ehdr += struct.pack('<HHIQQQIHHHHHH', 4, machine, 1, 0, 64, 0, 0, 64, 56, phnum, 64, 0, 0)
    return ehdr + phdrs + data


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    files = [(0x400000, 0x401000, 0, '/bin/true'), (0x7f0000000000, 0x7f0000002000, 1,
                                                     '/nonexistent/libgone.so')]
    seeds = {
        'x86_64-core': core(EM_X86_64, [(0x400100, 0x7ffd0000)], files, 0x7ffd0000),
        'aarch64-core': core(EM_AARCH64, [(0x400100, 0x7ffd0000)], files, 0x7ffd0000),
        'x86_64-core-threads': core(EM_X86_64, [(0x400100, 0x7ffd0000), (0x400200, 0x7ffd0100)],
                                    [], 0x7ffd0000),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main()
