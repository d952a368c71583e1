#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write the small hand-made seed files under tests/fuzz/corpus/.

The seeds are committed; run this again only to change them. Real sections
and binaries are added to the corpus at build time (gen_seeds.sh).
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC = 0xDEE2
F_SORTED, F_FP, F_PCREL = 0x1, 0x2, 0x4
ABI_AARCH64_BE, ABI_AARCH64_LE, ABI_AMD64_LE, ABI_S390X_BE = 1, 2, 3, 4


def fre(start, addr_size, base_sp, offsets, off_size=1, mangled=False, e="<"):
    """One FRE: start address, info byte, then the offsets."""
    afmt = {1: "B", 2: "H", 4: "I"}[addr_size]
    ofmt = {1: "b", 2: "h", 4: "i"}[off_size]
    info = (1 if base_sp else 0) | (len(offsets) << 1)
    info |= {1: 0, 2: 1, 4: 2}[off_size] << 5
    info |= 0x80 if mangled else 0
    out = struct.pack(e + afmt, start) + bytes([info])
    for o in offsets:
        out += struct.pack(e + ofmt, o)
    return out


def fde_info(fre_type, pcmask=False, pauth_b=False, signal=False):
    return fre_type | (0x10 if pcmask else 0) | (0x20 if pauth_b else 0) | (0x80 if signal else 0)


def section(version, flags, abi, fixed_fp, fixed_ra, funcs, e="<"):
    """funcs: list of (start, size, info, rep_size, [fre bytes]).

    start is relative to the section start (or, with F_PCREL, to the
    FDE's own start field: the caller passes what is stored).
    """
    fde_size = {1: 17, 2: 20, 3: 16}[version]
    fres = b""
    fdes = b""
    num_fres = 0
    for start, size, info, rep_size, rows in funcs:
        off = len(fres)
        if version == 3:
            fres += struct.pack(e + "HBBB", len(rows), info, 0, rep_size)
        fres += b"".join(rows)
        num_fres += len(rows)
        if version == 1:
            fdes += struct.pack(e + "iIIIB", start, size, off, len(rows), info)
        elif version == 2:
            fdes += struct.pack(e + "iIIIBBH", start, size, off, len(rows), info, rep_size, 0)
        else:
            fdes += struct.pack(e + "qII", start, size, off)
    assert len(fdes) == fde_size * len(funcs)
    hdr = struct.pack(e + "HBBBbbBIIIII", MAGIC, version, flags, abi, fixed_fp, fixed_ra, 0,
                      len(funcs), num_fres, len(fres), 0, len(fdes))
    assert len(hdr) == 28
    return hdr + fdes + fres


def amd64_seeds():
    a1 = 0  # SFRAME_FRE_TYPE_ADDR1
    push_rbp = [fre(0, 1, True, [8]), fre(1, 1, True, [16, -16]), fre(4, 1, False, [16, -16]),
                fre(30, 1, True, [8])]
    plain = [fre(0, 1, True, [8]), fre(4, 1, True, [32]), fre(40, 1, True, [8])]
    plt = [fre(0, 1, True, [8]), fre(11, 1, True, [16])]
    seeds = {}
    seeds["v1-empty"] = section(1, F_SORTED, ABI_AMD64_LE, 0, -8, [])
    seeds["v1-amd64"] = section(1, F_SORTED, ABI_AMD64_LE, 0, -8, [
        (0x100, 32, fde_info(a1), 0, push_rbp),
        (0x120, 48, fde_info(a1), 0, plain)])
    seeds["v1-unsorted"] = section(1, 0, ABI_AMD64_LE, 0, -8, [
        (0x200, 48, fde_info(a1), 0, plain),
        (0x100, 32, fde_info(a1), 0, push_rbp)])
    seeds["v2-amd64-plt"] = section(2, F_SORTED, ABI_AMD64_LE, 0, -8, [
        (0x40, 64, fde_info(a1, pcmask=True), 16, plt),
        (0x100, 48, fde_info(a1), 0, plain)])
    # With F_PCREL the stored start is relative to the FDE's start field:
    # FDE i sits at 28 + 20 * i.
    seeds["v2-amd64-pcrel"] = section(2, F_SORTED | F_PCREL, ABI_AMD64_LE, 0, -8, [
        (0x100 - 28, 32, fde_info(a1), 0, push_rbp),
        (0x120 - 48, 0x1000, fde_info(2), 0,
         [fre(0, 4, True, [8]), fre(0x800, 4, True, [4096], off_size=2)])])
    seeds["v3-amd64"] = section(3, F_SORTED | F_PCREL, ABI_AMD64_LE, 0, -8, [
        (0x100 - 28, 32, fde_info(a1), 0, push_rbp),
        (0x140 - 44, 48, fde_info(a1, signal=True), 0, plain)])
    return seeds


def aarch64_seeds():
    # CFA = SP + 16, FP at CFA - 16, RA at CFA - 8, signed with PAuth.
    def rows(e):
        return [fre(0, 1, True, [0], e=e), fre(4, 1, True, [0], mangled=True, e=e),
                fre(8, 1, True, [16, -8, -16], mangled=True, e=e),
                fre(36, 1, True, [0], e=e)]
    seeds = {}
    seeds["v2-aarch64-le"] = section(2, F_SORTED, ABI_AARCH64_LE, 0, 0, [
        (0x400, 40, fde_info(0), 0, rows("<"))], e="<")
    seeds["v2-aarch64-be-keyb"] = section(2, F_SORTED, ABI_AARCH64_BE, 0, 0, [
        (0x400, 40, fde_info(0, pauth_b=True), 0, rows(">"))], e=">")
    return seeds


def broken_seeds(good):
    return {
        "truncated-header": good[:10],
        "fre-past-end": good[:-3],
        "bad-version": good[:2] + b"\x09" + good[3:],
    }


def elf_seeds():
    # An ELF header with no program or section headers, then one whose
    # section header table points past the end of the file.
    ident = b"\x7fELF\x02\x01\x01" + bytes(9)
    hdr = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0x1000, 0, 0, 0, 64, 56, 0, 64, 0, 0)
    bad_sh = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0x1000, 0, 0x10000, 0, 64, 56, 0,
                                 64, 4, 3)
    return {"empty-dyn": hdr, "shoff-past-end": bad_sh}


def main():
    sframe = {}
    sframe.update(amd64_seeds())
    sframe.update(aarch64_seeds())
    sframe.update(broken_seeds(sframe["v2-amd64-plt"]))
    for sub, seeds in (("sframe", sframe), ("elf", elf_seeds())):
        d = os.path.join(HERE, "corpus", sub)
        os.makedirs(d, exist_ok=True)
        for name, data in sorted(seeds.items()):
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
