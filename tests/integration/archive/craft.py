#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write crafted sfprof archives: a pax tar in a zstd frame, its members streamed.

Members may be far larger than the archive: a run of one byte is a zstd RLE
block (128 KiB in 4 bytes), so a 1 GiB member of one repeated byte makes an
archive of some 32 KB, written at once, never held whole.

usage: craft.py OUT SHAPE PROFILE SIZE    (shapes: see shapes())

Used by archive_test.py and to write the archive fuzzer's seeds
(tests/fuzz/corpus/archive/crafted-*.tar.zst, at smaller sizes).
"""

import struct
import sys
import tarfile

GiB = 1 << 30
MiB = 1 << 20
BLOCK = 128 << 10   # zstd's largest block; the window below is as large
BUILD_ID = 'ab' + 'cd' * 19
KSYM = 'sfprof_archive_ksym'
KADDR = 0xffffffff81000000


def repeat(byte, size, head=b'', tail=b''):
    """A member's bytes: head, then @byte up to @size bytes less tail's, then tail."""
    return [head, (byte, size - len(head) - len(tail)), tail]


def member(name, size, parts):
    return (name, size, parts)


def bytes_member(name, data):
    return (name, len(data), [data])


class Frame:
    """A zstd frame of raw and RLE blocks, no checksum, no content size."""

    def __init__(self, f):
        self.f = f
        self.raw = bytearray()
        f.write(b'\x28\xb5\x2f\xfd' + bytes([0x00, 7 << 3]))  # window 1 << (10 + 7)

    def _block(self, kind, size, body, last=False):
        self.f.write(struct.pack('<I', last | kind << 1 | size << 3)[:3] + body)

    def _flush(self):
        for i in range(0, len(self.raw), BLOCK):
            chunk = bytes(self.raw[i:i + BLOCK])
            self._block(0, len(chunk), chunk)
        self.raw.clear()

    def put(self, data):
        self.raw += data

    def run(self, byte, n):
        if n < 64:
            self.put(byte * n)
            return
        self._flush()
        while n:
            k = min(n, BLOCK)
            self._block(1, k, byte)
            n -= k

    def end(self):
        self._flush()
        self._block(0, 0, b'', last=True)


def write(out, members):
    """The members as a pax tar in one zstd frame, into @out."""
    with open(out, 'wb') as f:
        z = Frame(f)
        for name, size, parts in members:
            info = tarfile.TarInfo(name)
            info.size = size
            info.mode = 0o644
            z.put(info.tobuf(format=tarfile.PAX_FORMAT))
            wrote = 0
            for p in parts:
                if isinstance(p, tuple):
                    z.run(*p)
                    wrote += p[1]
                else:
                    z.put(p)
                    wrote += len(p)
            assert wrote == size, (name, wrote, size)
            z.run(b'\0', -size % 512)
        z.run(b'\0', 1024)
        z.end()


def shapes(profile, big):
    """What each shape's members are; @big is the size of the large member."""
    prof = open(profile, 'rb').read()
    ksyms = f'{KADDR:016x} T {KSYM}\n'.encode()
    return {
        # kallsyms of one line of @big bytes, no newline
        'kallsyms-line': [bytes_member('sfprof.data', prof),
                          member('kallsyms', big, repeat(b'x', big))],
        # a line longer than any kallsyms line, then a good one: the good one names
        'kallsyms-long-line': [bytes_member('sfprof.data', prof),
                               member('kallsyms', big + len(ksyms),
                                      repeat(b'x', big + len(ksyms), tail=b'\n' + ksyms[:-1]))],
        # a binary of zeros, and a profile of zeros
        'zeros-binary': [bytes_member('sfprof.data', prof),
                         member('.build-id/ab/' + BUILD_ID[2:], big, repeat(b'\0', big))],
        'zeros-profile': [member('sfprof.data', big, repeat(b'\0', big))],
        # an ELF magic then zeros: a binary as large as it says
        'elf-zeros': [bytes_member('sfprof.data', prof),
                      member('.build-id/ab/' + BUILD_ID[2:], big,
                             repeat(b'\0', big, head=b'\x7fELF\x02\x01\x01'))],
        # the good shape: a profile, kallsyms, a small binary
        'small': [bytes_member('sfprof.data', prof), bytes_member('kallsyms', ksyms),
                  bytes_member('.build-id/ab/' + BUILD_ID[2:], b'\x7fELF' + b'\0' * 60)],
    }


def main():
    if len(sys.argv) != 5:
        sys.exit('usage: craft.py OUT SHAPE PROFILE SIZE')
    out, shape, profile, size = sys.argv[1:]
    write(out, shapes(profile, int(size, 0))[shape])


if __name__ == '__main__':
    main()
