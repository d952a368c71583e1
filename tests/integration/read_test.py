#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Every reading command of sfprof on profiles written by gen-profile, then crafted.

  empty     profiles with no samples (no records at all; a process and its
            mappings and nothing sampled): report, script, every export format
            and dump succeed with nothing to show; run by `scripts/check` on
            the ASan and UBSan build too, where a NULL passed where C wants an
            array (qsort_r of no rows) stops the command.
  counts    counts the file's bytes do not bear out, with valid checksums: a
            block claiming 0xffffffff records, a block claiming one fewer, a
            trailer counting 2^64 - 1 lost samples, a lost record of 2^64 - 1,
            a trailer counting more samples than the blocks hold. Every command
            prints what it could read, names the damage on stderr, and exits 1;
            no output shows the absurd number, and report says the lost count
            is unknown. Each crafted file is checked to be damaged only where
            meant: the same file with the count put back reads cleanly.

Exit status 0 pass, 1 fail.
"""

import argparse
import gzip
import os
import shutil
import struct
import subprocess
import sys
import zlib

EXPORTS = ('collapsed', 'pprof', 'markup', 'svg')
HEADER_FIXED = 40
BLOCK_HDR = 20
TRAILER = 64
ABSURD = str(2**64 - 1)


class Failure(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def expect(cond, fails, msg):
    if not cond:
        fails.append(msg)
        log(f'FAIL: {msg}')


class Ctx:
    def __init__(self, args):
        self.sfprof = os.path.abspath(args.sfprof)
        self.gen = os.path.abspath(args.gen_profile)
        self.work = os.path.abspath(args.workdir)
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)

    def path(self, name):
        return os.path.join(self.work, name)

    def generate(self, name, *opts):
        out = self.path(name)
        subprocess.run([self.gen, '-o', out, *opts], check=True)
        return out


def commands(ctx, prof):
    """(name, argv, output file or None) of every reading command over @prof."""
    cmds = [('report', ['report', '-i', prof], None),
            ('report --children', ['report', '--children', '-i', prof], None),
            ('script', ['script', '-i', prof], None),
            ('dump', ['dump', '-i', prof], None)]
    for fmt in EXPORTS:
        out = ctx.path(os.path.basename(prof) + '.' + fmt)
        cmds.append((f'export {fmt}', ['export', '-f', fmt, '-i', prof, '-o', out], out))
    return cmds


def run_cmd(ctx, argv, out):
    """Run sfprof; the text it wrote (stdout, or the export file) and the process."""
    if out and os.path.exists(out):
        os.unlink(out)
    p = subprocess.run([ctx.sfprof, *argv], capture_output=True, timeout=120)
    text = p.stdout
    if out and os.path.exists(out):
        with open(out, 'rb') as f:
            text = f.read()
        if out.endswith('.pprof'):
            text = gzip.decompress(text)
    return p, text


def sanitizer_said(stderr):
    return b'runtime error' in stderr or b'AddressSanitizer' in stderr or b'LeakSanitizer' in stderr


def case_empty(ctx):
    fails = []
    files = [ctx.generate('nothing.data'),
             ctx.generate('no-samples.data', '--mappings', '3')]
    for prof in files:
        what = os.path.basename(prof)
        for name, argv, out in commands(ctx, prof):
            p, text = run_cmd(ctx, argv, out)
            expect(p.returncode == 0 and not sanitizer_said(p.stderr), fails,
                   f'{name} of {what}: exit {p.returncode}, stderr {p.stderr.decode()[-2000:]!r}')
            expect(not p.stderr.strip(), fails,
                   f'{name} of {what}: notices on a whole file: {p.stderr.decode()!r}')
            if p.returncode:
                continue
            t = text.decode(errors='replace')
            if name.startswith('report'):
                expect('# Samples: 0 ' in t and '# Total Lost Samples: 0' in t, fails,
                       f'{name} of {what}: header {t[:400]!r}')
                expect(not [l for l in t.splitlines() if l and not l.startswith('#')], fails,
                       f'{name} of {what}: rows without samples')
            elif name == 'script' or name == 'export collapsed':
                expect(t == '', fails, f'{name} of {what}: {t[:200]!r}')
            elif name == 'dump':
                expect('# 0 samples, 0 lost, ' in t, fails, f'dump of {what}: {t[-200:]!r}')
            elif name == 'export svg':
                expect('0 samples, 0 lost' in t and t.rstrip().endswith('</svg>'), fails,
                       f'svg of {what}')
            elif name == 'export markup':
                expect('{{{bt' not in t, fails, f'markup of {what}: a backtrace')
            elif name == 'export pprof':
                expect(len(text) > 0, fails, f'pprof of {what}: empty')
    return fails


# ---- crafting: the file's layout, as docs/FORMAT.md gives it ----

def blocks(data):
    """Offsets of the block headers and of the trailer of a whole file."""
    pos = struct.unpack_from('<H', data, 10)[0]
    found = []
    while data[pos:pos + 4] == b'SFB1':
        found.append(pos)
        pos += BLOCK_HDR + struct.unpack_from('<I', data, pos + 4)[0]
    if data[pos:pos + 4] != b'SFT1' or len(data) - pos != TRAILER:
        raise Failure(f'gen-profile wrote no trailer where expected ({pos} of {len(data)})')
    return found, pos


def set_block_records(data, at, n):
    d = bytearray(data)
    struct.pack_into('<I', d, at + 12, n)
    struct.pack_into('<I', d, at + 16, zlib.crc32(bytes(d[at:at + 16])))
    return bytes(d)


def set_trailer_u64(data, at, field, v):
    d = bytearray(data)
    struct.pack_into('<Q', d, at + field, v)
    struct.pack_into('<I', d, at + 60, zlib.crc32(bytes(d[at:at + 60])))
    return bytes(d)


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def zstd_frame(payload):
    """A zstd frame (RFC 8878) holding @payload (at most 255 bytes) as one raw block: a
    single segment with a one-byte content size, no checksum."""
    assert len(payload) <= 255
    block = (len(payload) << 3) | 1     # last block, raw
    return (b'\x28\xb5\x2f\xfd' + bytes([0x20, len(payload)]) +
            block.to_bytes(3, 'little') + payload)


def append_block(data, trailer_at, records, nrec):
    """@data with a block of @records (bytes, @nrec of them) before its trailer, and the
    trailer's block count raised to match."""
    frame = zstd_frame(records)
    hdr = bytearray(b'SFB1' + struct.pack('<III', len(frame), len(records), nrec))
    hdr += struct.pack('<I', zlib.crc32(bytes(hdr)))
    trailer = data[trailer_at:]
    blocks_written = struct.unpack_from('<Q', trailer, 24)[0]
    out = data[:trailer_at] + bytes(hdr) + frame + trailer
    return set_trailer_u64(out, trailer_at + len(hdr) + len(frame), 24, blocks_written + 1)


def case_counts(ctx):
    fails = []
    base = ctx.generate('base.data', '--mappings', '200', '--samples', '300', '--stacks', '50')
    with open(base, 'rb') as f:
        data = f.read()
    offs, tr = blocks(data)
    if len(offs) < 1:
        raise Failure('gen-profile wrote no block')
    nrec = struct.unpack_from('<I', data, offs[0] + 12)[0]
    samples = struct.unpack_from('<Q', data, tr + 8)[0]
    # a lost record (type 7) of 2^64 - 1 at the first sample's time, in a block of its own
    lost_rec = varint(0) + varint(2**32 - 1) + varint(2**64 - 1)
    lost_block = bytes([7]) + varint(len(lost_rec)) + lost_rec
    crafted = [
        # name, bytes, what stderr must say, whether report's lost count is unknown
        ('all-ones records', set_block_records(data, offs[0], 0xffffffff),
         'claims 4294967295 records but holds', False),
        ('one record short', set_block_records(data, offs[0], nrec - 1),
         f'claims {nrec - 1} records but holds {nrec}', False),
        ('trailer lost 2^64-1', set_trailer_u64(data, tr, 16, 2**64 - 1),
         f'the trailer counts {ABSURD} lost samples', True),
        ('lost record 2^64-1', append_block(data, tr, lost_block, 1),
         f'a lost record counts {ABSURD} samples', True),
        ('trailer samples', set_trailer_u64(data, tr, 8, samples + 1),
         f'the trailer counts {samples + 1} samples but the blocks hold {samples}', False),
    ]
    # the crafting itself: the same steps with the true values read cleanly
    five = append_block(data, tr, bytes([7]) + varint(3) + varint(0) + varint(1) + varint(5), 1)
    for name, good in (('records put back', set_block_records(data, offs[0], nrec)),
                       ('trailer put back', set_trailer_u64(data, tr, 16, 0)),
                       ('lost record of 5', set_trailer_u64(five, len(five) - TRAILER, 16, 5))):
        prof = ctx.path('good.data')
        with open(prof, 'wb') as f:
            f.write(good)
        p, _ = run_cmd(ctx, ['dump', '-i', prof], None)
        expect(p.returncode == 0 and not p.stderr.strip(), fails,
               f'{name}: not read cleanly: exit {p.returncode}, {p.stderr.decode()!r}')
    for name, d, says, lost_unknown in crafted:
        prof = ctx.path(name.replace(' ', '-') + '.data')
        with open(prof, 'wb') as f:
            f.write(d)
        for cmd, argv, out in commands(ctx, prof):
            p, text = run_cmd(ctx, argv, out)
            err = p.stderr.decode(errors='replace')
            what = f'{cmd} of {name}'
            expect(p.returncode == 1 and not sanitizer_said(p.stderr), fails,
                   f'{what}: exit {p.returncode}, want 1; stderr {err[-2000:]!r}')
            expect(says in err and 'damaged' in err, fails, f'{what}: stderr {err!r}, want {says!r}')
            expect(text, fails, f'{what}: no output: what could be read is still shown')
            if cmd == 'dump':
                # dump shows records as they are; its totals are checked like the rest
                summary = [l for l in text.decode().splitlines() if l.startswith('# ')][-1]
                expect(ABSURD not in summary, fails, f'{what}: summary {summary!r}')
            else:
                expect(ABSURD.encode() not in text, fails, f'{what}: the absurd count is shown')
            if cmd == 'report':
                t = text.decode()
                want = ('# Total Lost Samples: unknown' if lost_unknown else
                        '# Total Lost Samples: 0')
                expect(want in t, fails, f'{what}: no {want!r} in {t[:300]!r}')
    return fails


CASES = {'empty': case_empty, 'counts': case_counts}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--gen-profile', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', required=True, choices=sorted(CASES))
    args = ap.parse_args()
    ctx = Ctx(args)
    try:
        fails = CASES[args.case](ctx)
    except Failure as e:
        log(f'FAIL: {e}')
        return 1
    if fails:
        log(f'{len(fails)} check(s) failed')
        return 1
    log('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main())
