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


# ---- .eh_frame seeds for fuzz_ehframe.c: flags, addresses, .eh_frame_hdr, .eh_frame ----

EH_ADDR, HDR_ADDR, FUNC = 0x2000, 0x1f00, 0x1000


def uleb(v):
    out = b""
    while True:
        b, v = v & 0x7F, v >> 7
        out += bytes([b | (0x80 if v else 0)])
        if not v:
            return out


def sleb(v):
    out = b""
    while True:
        b, v = v & 0x7F, v >> 7
        if (v == 0 and not b & 0x40) or (v == -1 and b & 0x40):
            return out + bytes([b])
        out += bytes([b | 0x80])


def cie(aug, caf, daf, ra, augdata, insns, e="<"):
    body = struct.pack(e + "I", 0) + b"\x01" + aug + b"\0" + uleb(caf) + sleb(daf) + bytes([ra])
    body += uleb(len(augdata)) + augdata + insns
    return struct.pack(e + "I", len(body)) + body


def fde(at, cie_at, start, size, insns, e="<"):
    """An FDE at section offset @at whose CIE is at @cie_at, pcrel|sdata4 pointers."""
    field = at + 8
    body = struct.pack(e + "I", at + 4 - cie_at)
    body += struct.pack(e + "iI", start - (EH_ADDR + field), size) + uleb(0) + insns
    return struct.pack(e + "I", len(body)) + body


def eh_input(flags, eh, starts_fdes=(), e="<"):
    """The fuzz input; a search table when @starts_fdes lists (start, FDE offset)."""
    hdr = b""
    if starts_fdes:
        hdr = bytes([1, 0x1B, 0x03, 0x3B]) + struct.pack(e + "i", EH_ADDR - (HDR_ADDR + 4))
        hdr += struct.pack(e + "I", len(starts_fdes))
        for start, off in starts_fdes:
            hdr += struct.pack(e + "ii", start - HDR_ADDR, EH_ADDR + off - HDR_ADDR)
    return bytes([flags]) + struct.pack("<III", EH_ADDR, HDR_ADDR, len(hdr)) + hdr + eh


def ehframe_seeds():
    seeds = {}
    x86_init = bytes([0x0C, 7, 8, 0x90, 1])  # def_cfa rsp+8; rip at cfa-8
    c = cie(b"zR", 1, -8, 16, b"\x1b", x86_init)
    # push rbp; mov rbp; remember; leave; ret; restore; DRAP expression; args_size; val_offset
    prog = bytes([0x41, 0x0E, 16, 0x86, 2, 0x43, 0x0D, 6, 0x0A, 0x48, 0x0C, 7, 8, 0x41, 0x0B,
                  0x0F, 3, 0x76, 0x78, 0x06, 0x10, 6, 2, 0x76, 0, 0x2E, 8, 0x42, 0x14, 3, 2,
                  0x02, 0x10, 0x07, 16])
    f1 = fde(len(c), 0, FUNC, 0x40, prog)
    f2 = fde(len(c) + len(f1), 0, FUNC + 0x40, 0x20, bytes([0x44, 0x0E, 16, 0x44, 0x0E, 8]))
    eh = c + f1 + f2 + b"\0\0\0\0"
    seeds["amd64-ops"] = eh_input(0, eh)
    seeds["amd64-ops-hdr"] = eh_input(0, eh, [(FUNC, len(c)), (FUNC + 0x40, len(c) + len(f1))])
    plt = bytes([0x0E, 16, 0x46, 0x0E, 24, 0x4A, 0x0F, 11, 0x77, 8, 0x80, 0, 0x3F, 0x1A, 0x3B,
                 0x2A, 0x33, 0x24, 0x22])
    seeds["amd64-plt"] = eh_input(0, c + fde(len(c), 0, FUNC, 0x40, plt))
    # glibc's __restore_rt: the CFA and registers from the ucontext at the SP
    sig = cie(b"zRS", 1, -8, 16, b"\x1b", b"")
    sig_prog = bytes([0x0F, 4, 0x77, 0xA0, 0x01, 0x06, 0x10, 6, 3, 0x77, 0xF8, 0x00,
                      0x10, 16, 3, 0x77, 0xA8, 0x01, 0x10, 7, 3, 0x77, 0xA0, 0x01])
    seeds["amd64-signal"] = eh_input(0, sig + fde(len(sig), 0, FUNC - 1, 10, sig_prog))
    # AArch64 pac-ret with key B: paciasp; stp x29, x30, [sp, -16]!; mov x29, sp; ...
    a64 = bytes([0x41, 0x2D, 0x41, 0x0E, 16, 0x9D, 2, 0x9E, 1, 0x41, 0x0C, 29, 16, 0x44,
                 0x0C, 31, 16, 0x41, 0xDE, 0xDD, 0x0E, 0, 0x41, 0x2D])
    for e, flags, name in (("<", 1, "aarch64-pac-b"), (">", 3, "aarch64-be-pac-b")):
        ca = cie(b"zRB", 4, -8, 30, b"\x1b", bytes([0x0C, 31, 0]), e)
        seeds[name] = eh_input(flags, ca + fde(len(ca), 0, FUNC, 0x40, a64, e), e=e)
    return seeds


def main():
    sframe = {}
    sframe.update(amd64_seeds())
    sframe.update(aarch64_seeds())
    sframe.update(broken_seeds(sframe["v2-amd64-plt"]))
    for sub, seeds in (("sframe", sframe), ("elf", elf_seeds()), ("ehframe", ehframe_seeds())):
        d = os.path.join(HERE, "corpus", sub)
        os.makedirs(d, exist_ok=True)
        for name, data in sorted(seeds.items()):
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
