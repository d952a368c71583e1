#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write ELF notes for fuzz_buildid_notes's corpus.

usage: buildid_notes_seed.py OUTDIR

Each input is fuzz_buildid_notes.c's mode byte (bit 0: 8-byte alignment, bit 1: read as an
ELF file too) and the notes: a build ID alone, after an ABI tag or a property note (as ld
lays out .note.gnu.property in an 8-aligned PT_NOTE), cut, of each length edge, and a
minimal 64-bit ELF file whose one PT_NOTE holds a build ID.
"""
import os
import struct
import sys

NT_GNU_ABI_TAG, NT_GNU_BUILD_ID, NT_GNU_PROPERTY_TYPE_0 = 1, 3, 5
ID20 = bytes(range(0xa0, 0xb4))


def note(ntype, name, desc, align=4):
    def pad(b):
        return b + b"\0" * (-len(b) % align)
    return pad(struct.pack("<III", len(name), len(desc), ntype) + name) + pad(desc)


def elf_with_notes(notes):
    """A 64-bit little-endian ET_EXEC with one PT_NOTE (p_align 4) right after its headers."""
    ehsize, phentsize = 64, 56
    off = ehsize + phentsize
    eh = (b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8 +
          struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0x401000, ehsize, 0, 0, ehsize, phentsize, 1,
                      64, 0, 0))
    ph = struct.pack("<IIQQQQQQ", 4, 4, off, 0x400000 + off, 0x400000 + off, len(notes),
                     len(notes), 4)
    return eh + ph + notes


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    abi = note(NT_GNU_ABI_TAG, b"GNU\0", struct.pack("<IIII", 0, 3, 2, 0))
    prop = note(NT_GNU_PROPERTY_TYPE_0, b"GNU\0", struct.pack("<IIII", 0xc0000002, 4, 3, 0), 8)
    bid = note(NT_GNU_BUILD_ID, b"GNU\0", ID20)
    seeds = {
        "alone": b"\0" + bid,
        "after-abi-tag": b"\0" + abi + bid,
        "after-property-8": b"\1" + prop + note(NT_GNU_BUILD_ID, b"GNU\0", ID20, 8),
        "cut": b"\0" + (abi + bid)[:-6],
        "one-byte": b"\0" + note(NT_GNU_BUILD_ID, b"GNU\0", b"\x42"),
        "max": b"\0" + note(NT_GNU_BUILD_ID, b"GNU\0", bytes(range(64))),
        "too-long": b"\0" + note(NT_GNU_BUILD_ID, b"GNU\0", bytes(range(65))),
        "huge-namesz": b"\0" + struct.pack("<III", 0xfffffff8, 20, 3) + b"GNU\0" + ID20,
        "elf": b"\2" + elf_with_notes(abi + bid),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
