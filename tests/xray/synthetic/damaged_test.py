#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Damaged XRay traces through `sfprof import xray`: the damage costs its buffer alone.

Traces are written with xray_gen.py (three threads, several buffers each),
then damaged. For every damaged trace `sfprof import xray -m BIN -o OUT`
must end by itself (no signal, within the timeout) without a sanitizer
report, and:

  truncate-*   the trace cut at every buffer boundary: exit 0, no loss
               reported, and the collapsed self ns are exactly those of the
               buffers before the cut (xray_gen.expect_records). Cut at random
               offsets inside buffers: the loss is reported on stderr with an
               offset inside the cut buffer, and the collapsed self ns are
               those of every record before the cut, or of every whole buffer
               before it, or anything in between (a reader may drop the cut
               buffer or keep its records up to the cut).
  extents      (versions 2-5) a BufferExtents that claims too much (into the
               next buffer, past the end of the file, 2^64-1) or too little
               (a few records short, nothing, less than a record), on the last
               buffer of a thread: the loss is reported inside that buffer, and
               the profile holds every other buffer whole and a prefix of the
               damaged one.
  events       a custom or typed event whose size runs past its buffer or the
               file, or is zero or negative; a metadata record of an unknown
               kind; a function record of an unknown type; EndOfBuffer in a
               version 3 trace; BufferExtents in a version 1 trace: the same.
  v1-size      version 1 headers whose buffer_size is 0, 8, smaller than the
               buffers, larger, three times the real size, 2^31, 2^63, 2^64-1:
               the import either reads every record or reports a loss (exit 1):
               never exit 0 with buffers skipped unsaid.
  basic        basic mode: an unknown record type, an unknown function type,
               a partial record at the end: the same as extents.
  header       a wrong version (0, 6, 0xffff), a wrong type (2, 0x100), an
               ELF file, text, an empty file, 31 bytes, random bytes: exit
               non-zero, a message on stderr, no output file.
  flips        random byte flips and overwritten records in every version and
               in basic mode: no crash, no sanitizer report, exit 0 or 1 with
               a message.
  output       the output in a directory that does not exist, or one that
               is a file: exit 1, a message naming it, nothing written; a
               damaged trace leaves an existing output file as it was.
  full-disk    a good trace imported onto tmpfs file systems of 4 KiB to
               the size the import needs (the output, and the windows spilled
               to a temporary file next to it): each import either succeeds
               with the whole profile or exits 1 saying the disk is full,
               leaving the old output file as it was and no other file.
               Needs a mount namespace (root, or user namespaces): else the
               case skips.

sfprof import's exit status, as its usage says: 0 for a trace read whole;
1 with the profile written (and marked incomplete) when parts were lost;
1 without a profile when nothing could be read. Every profile written must
be one `sfprof export` reads. A loss also ends, for every thread, the
interval from its record before the loss to its next one (that time is not
counted, as the thread's records in between may be lost): the expected
profiles are computed with such a break, and also without one.

Exit status 0 pass, 1 fail, 77 skip (no clang-16 or llvm-xray-16).
"""

import argparse
import os
import random
import re
import shutil
import struct
import sys
from collections import Counter

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import xray_gen as g  # noqa: E402
import xray_oracles as o  # noqa: E402

SKIP = 77
NFUNCS = 8
T0 = 10**12
FREQ = 1_000_000_000

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f'FAIL: {what}', file=sys.stderr)
    return cond


def log(msg):
    print(msg, flush=True)


class Ctx:
    def __init__(self, sfprof, workdir, binary, names, fids):
        self.sfprof, self.workdir, self.binary, self.names, self.fids = (
            sfprof, workdir, binary, names, fids)
        self.n = 0
        self.exits = Counter()
        self.profiles = 0
        self.models = Counter()


def make_trace(fids, version, be=False, mode='fdr', seed=1, calls=(30, 90, 90), bsize=384,
               pad='zero', p_custom=0.08):
    """Three threads; the first stops early, so its last buffer sits mid-file."""
    rng = random.Random(seed)
    threads = []
    for i, n in enumerate(calls):
        threads.append(g.random_thread(
            rng, 2001 + i, 31337, fids, calls=n, t0=T0, max_depth=7, cpus=(0, 1, 2),
            p_migrate=0.05, p_wrap=0.01, p_custom=(p_custom * 3 if i == 0 else p_custom)
            if mode == 'fdr' else 0, p_typed=0.05 if mode == 'fdr' and version >= 5 else 0))
    spec = g.Spec(threads, version=version, big_endian=be, mode=mode, freq=FREQ,
                  buffer_size=bsize, pad=pad, basic_chunk=12, seed=seed)
    return spec, g.write(spec)


def names_of(ctx, x):
    return x.self_ns(FREQ, ctx.names)


def import_trace(ctx, label, data):
    """Write @data, import it: (CompletedProcess, Counter or None, out path).

    The Counter is the profile's collapsed self ns, when a profile was written.
    """
    ctx.n += 1
    path = os.path.join(ctx.workdir, f'd{ctx.n:04d}.xray')
    out = os.path.join(ctx.workdir, f'd{ctx.n:04d}.sfprof')
    with open(path, 'wb') as f:
        f.write(data)
    try:
        r = o.sfprof_import(ctx.sfprof, ctx.binary, path, out, timeout=60)
    except Exception as e:    # a hang is a failure, not a crash of the test
        check(False, f'{label}: sfprof import: {e}')
        return None, None, out
    ctx.exits[r.returncode] += 1
    bad = o.sanitizer_report(r.stderr)
    check(r.returncode >= 0, f'{label}: sfprof import killed by signal {-r.returncode}')
    check(not bad, f'{label}: sfprof import: {bad}: {r.stderr.strip()[:600]}')
    check(r.returncode in (0, 1), f'{label}: sfprof import exit {r.returncode}')
    got = None
    if os.path.exists(out):
        re_, got = o.sfprof_collapsed(ctx.sfprof, out)
        check(re_.returncode == 0, f'{label}: sfprof export of the import: exit '
              f'{re_.returncode}: {re_.stderr.strip()[:300]}')
        ctx.profiles += 1
    else:
        check(r.returncode != 0, f'{label}: sfprof import exit 0 but no {out}')
    if r.returncode:
        check(r.stderr.strip() != '', f'{label}: sfprof import exit {r.returncode} without a message')
    return r, got, out


def check_partial(label, r, got):
    """A damaged trace with something left to read: exit 1, a profile, marked incomplete."""
    check(r.returncode == 1, f'{label}: exit {r.returncode}, want 1 (a loss)')
    check(got is not None, f'{label}: no profile written, though the trace has undamaged buffers')
    check('marked incomplete' in r.stderr, f'{label}: the profile is not said to be incomplete')


def loss_offsets(text):
    """Offsets named in the loss lines of @text (hex 0x..., or 'offset N')."""
    offs = []
    for line in text.splitlines():
        low = line.lower()
        if not any(w in low for w in ('loss', 'lost', 'damag', 'skipp', 'cut', 'truncat')):
            continue
        offs += [int(h, 16) for h in re.findall(r'0x([0-9a-f]+)', low)]
        offs += [int(d) for d in re.findall(r'offset (\d+)', low)]
    return offs


def closest(cands, got):
    def dist(c):
        return sum(abs(c.get(k, 0) - got.get(k, 0)) for k in set(c) | set(got))
    return min(cands, key=dist)


def diff_counters(want, got, limit=6):
    lines = []
    for k in sorted(set(want) | set(got), key=str):
        if want.get(k, 0) != got.get(k, 0):
            lines.append(f'    {";".join(map(str, k))}: want {want.get(k, 0)}, got {got.get(k, 0)}')
    more = f'\n    ... {len(lines) - limit} more' if len(lines) > limit else ''
    return '\n'.join(lines[:limit]) + more


def check_one_of(ctx, label, spec, cands, got):
    """@got must be the self ns of one of the record lists @cands (None in them: a break).

    @return the index of the candidate that matched, or None.
    """
    if got is None:
        return None
    want = [names_of(ctx, g.expect_records(spec, c)) for c in cands]
    for i, w in enumerate(want):
        if w == got:
            return i
    near = closest(want, got)
    check(False, f'{label}: collapsed self ns are none of the {len(want)} acceptable '
          f'profiles (total got {sum(got.values())}, nearest {sum(near.values())}):\n'
          f'{diff_counters(near, got)}')
    return None


def check_loss_reported(label, r, lo, hi):
    offs = loss_offsets(r.stderr)
    check(any(lo <= x <= hi for x in offs),
          f'{label}: no loss reported on stderr with an offset in [{lo:#x}, {hi:#x}]: '
          f'{r.stderr.strip()[:400]!r}')


# --- truncation --------------------------------------------------------------

def truncate_case(ctx, version, be, mode, pad='zero', nrandom=30, seed=7):
    spec, w = make_trace(ctx.fids, version, be, mode, seed=seed, pad=pad)
    fr = w.func_recs()
    tag = f'{mode}-v{version}-{"be" if be else "le"}'
    log(f'{tag}: {len(w.data)} bytes, {len(w.bufs)} buffers, {len(fr)} function records')
    # at every buffer boundary: exactly the buffers before it
    cuts = [b.offset for b in w.bufs] + [len(w.data)]
    for cut in cuts:
        label = f'{tag} cut at buffer boundary {cut:#x}'
        r, got, _ = import_trace(ctx, label, w.data[:cut])
        if r is None:
            continue
        recs = [x for x in fr if x.buf.end <= cut]
        if not recs:
            check(r.returncode == 1 and got is None,
                  f'{label}: nothing to read, but exit {r.returncode}, profile {got is not None}')
            continue
        check(r.returncode == 0, f'{label}: exit {r.returncode}: {r.stderr.strip()[:300]}')
        check(not loss_offsets(r.stderr), f'{label}: a loss reported at a clean cut: '
              f'{r.stderr.strip()[:300]!r}')
        check_one_of(ctx, label, spec, [recs], got)
    # inside buffers
    rng = random.Random(seed)
    inside = [x for x in range(33, len(w.data)) if x not in cuts]
    for cut in sorted(rng.sample(inside, min(nrandom, len(inside)))):
        buf = next(b for b in w.bufs if b.offset < cut < b.end)
        label = f'{tag} cut at {cut:#x} (buffer {buf.offset:#x}-{buf.end:#x})'
        r, got, _ = import_trace(ctx, label, w.data[:cut])
        if r is None:
            continue
        whole = [x for x in fr if x.buf.end <= cut]
        upto = [x for x in fr if x.end <= cut]
        cands = [upto[:j] for j in range(len(whole), len(upto) + 1)]
        if not upto or (not whole and got is None):
            # nothing, or only the cut buffer, to read: no profile is acceptable
            check(got is not None or r.returncode == 1,
                  f'{label}: nothing to read, but exit {r.returncode}')
            continue
        # a v1 buffer cut in its padding lost nothing the reader needed; nor
        # does a basic-mode trace cut between two records
        if ((version == 1 and mode == 'fdr' and cut >= buf.data_end) or
                (mode == 'basic' and (cut - 32) % 32 == 0)):
            check(r.returncode == 0, f'{label}: exit {r.returncode}: {r.stderr.strip()[:300]}')
        else:
            check_partial(label, r, got)
            check_loss_reported(label, r, buf.offset, cut)
        check_one_of(ctx, label, spec, cands, got)


# --- damage in the last buffer of a thread -----------------------------------

def last_buffer_mid_file(w):
    """The last buffer of the thread whose last buffer comes first in the file."""
    last = {}
    for b in w.bufs:
        last[b.tid] = b
    cand = sorted(last.values(), key=lambda b: b.offset)
    return cand[0]


def prefix_cands(w, dbuf):
    """Every other buffer whole, a prefix of @dbuf, then a break (or none)."""
    fr = w.func_recs()
    mine = [x for x in fr if x.buf is dbuf]
    before = [x for x in fr if x.buf is not dbuf and x.offset < dbuf.offset]
    after = [x for x in fr if x.buf is not dbuf and x.offset > dbuf.offset]
    out = []
    for k in range(len(mine) + 1):
        out.append(before + mine[:k] + [None] + after)
        out.append(before + mine[:k] + after)
    return out


def damaged(ctx, label, spec, w, dbuf, data, lo=None, hi=None):
    """Import @data (w.data with @dbuf damaged): the others whole, a prefix of dbuf."""
    r, got, _ = import_trace(ctx, label, data)
    if r is None:
        return
    check_partial(label, r, got)
    check_loss_reported(label, r, dbuf.offset if lo is None else lo,
                        (dbuf.end if hi is None else hi))
    i = check_one_of(ctx, label, spec, prefix_cands(w, dbuf), got)
    if i is not None:
        ctx.models[('break' if i % 2 == 0 else 'no break')] += 1


def put(data, off, fmt, value, be):
    b = bytearray(data)
    struct.pack_into(('>' if be else '<') + fmt, b, off, value)
    return bytes(b)


def extents_case(ctx, version, be, seed=11):
    spec, w = make_trace(ctx.fids, version, be, seed=seed)
    tag = f'extents v{version}-{"be" if be else "le"}'
    d = last_buffer_mid_file(w)
    size = d.end - d.offset - 16
    nxt = next(b for b in w.bufs if b.offset == d.end)
    log(f'{tag}: damaging the buffer at {d.offset:#x} ({size} bytes after its extents), '
        f'next buffer at {nxt.offset:#x}')
    lies = [('too big by 48 (into the next buffer)', size + 48),
            ('too big by one record', size + 8),
            ('past the end of the file', len(w.data)),
            ('2^64-1', 2**64 - 1),
            ('too small by 8', size - 8),
            ('too small by 40', size - 40),
            ('zero', 0),
            ('less than a record', 5)]
    for what, v in lies:
        data = put(w.data, d.offset + 1, 'Q', v, be)
        damaged(ctx, f'{tag}: extents {what} ({v})', spec, w, d, data)
    # the last buffer of the file claims more than the file holds
    last = w.bufs[-1]
    lsize = last.end - last.offset - 16
    data = put(w.data, last.offset + 1, 'Q', lsize + 4096, be)
    damaged(ctx, f'{tag}: last buffer extents past the end of the file', spec, w, last, data,
            hi=len(w.data))


def events_case(ctx, version, be, seed=13):
    # a seed whose mid-file last buffer holds a custom event after a function record
    for s in range(seed, seed + 200):
        spec, w = make_trace(ctx.fids, version, be, seed=s)
        d = last_buffer_mid_file(w)
        ev = [x for x in d.recs if x.kind in ('CustomEvent', 'TypedEvent')]
        funcs_before = ev and any(x.kind in g.FUNC_KINDS and x.offset < ev[0].offset for x in d.recs)
        if ev and funcs_before:
            break
    else:
        raise RuntimeError('no seed gives a custom event in a mid-file buffer')
    e = ev[0]
    tag = f'events v{version}-{"be" if be else "le"}'
    log(f'{tag}: damaging the {e.kind} at {e.offset:#x} in the buffer at {d.offset:#x}-{d.end:#x}')
    room = d.end - e.offset - 16
    for what, v in [('past its buffer', room + 1), ('past the file', len(w.data)),
                    ('zero', 0), ('negative', -1), ('INT32_MIN', -2**31)]:
        data = put(w.data, e.offset + 1, 'i', v, be)
        damaged(ctx, f'{tag}: {e.kind} size {what} ({v})', spec, w, d, data, lo=e.offset)
    funcs = [x for x in d.recs if x.kind in g.FUNC_KINDS]
    f = funcs[len(funcs) // 2]
    metas = [x for x in d.recs if x.kind in ('NewCPUId', 'TSCWrap', 'CallArgument', 'CustomEvent')
             and x.offset > d.recs[4].offset]
    b = bytearray(w.data)
    # an unknown function record type (5)
    if be:
        b[f.offset] = (b[f.offset] & 0x8f) | 5 << 4
    else:
        b[f.offset] = (b[f.offset] & 0xf1) | 5 << 1
    damaged(ctx, f'{tag}: function record type 5 at {f.offset:#x}', spec, w, d, bytes(b),
            lo=f.offset)
    for kind in (10, 127, g.END_OF_BUFFER if version >= 2 else g.EXTENTS):
        if not metas:
            break
        m = metas[0]
        b = bytearray(w.data)
        b[m.offset] = g.meta(spec, kind)[0]
        damaged(ctx, f'{tag}: metadata kind {kind} at {m.offset:#x}', spec, w, d, bytes(b),
                lo=m.offset)


def v1_size_case(ctx, be, seed=17):
    """A wrong buffer_size: either everything is read, or the loss is reported (exit 1)."""
    spec, w = make_trace(ctx.fids, 1, be, seed=seed, pad='garbage')
    tag = f'v1-size {"be" if be else "le"}'
    full = names_of(ctx, g.expect_records(spec, w.func_recs()))
    for v in (0, 8, 63, 64, spec.buffer_size // 2, spec.buffer_size - 8, spec.buffer_size + 8,
              spec.buffer_size * 3, 2**31, 2**63, 2**64 - 1):
        label = f'{tag}: buffer_size {v} (written {spec.buffer_size})'
        r, got, _ = import_trace(ctx, label, put(w.data, 16, 'Q', v, be))
        if r is None:
            continue
        if r.returncode == 0:
            check(got == full, f'{label}: exit 0 and no loss reported, but the profile holds '
                  f'{sum(got.values()) if got else 0} of the trace\'s {sum(full.values())} ns '
                  f'of self time: a silent loss')
    # and a correct size still reads the whole trace
    r, got, _ = import_trace(ctx, f'{tag}: buffer_size as written', w.data)
    if r is not None:
        check(r.returncode == 0, f'{tag}: buffer_size as written: exit {r.returncode}')
        check_one_of(ctx, f'{tag}: buffer_size as written', spec, [w.func_recs()], got)


def basic_case(ctx, be, seed=19):
    spec, w = make_trace(ctx.fids, 3, be, mode='basic', seed=seed)
    tag = f'basic {"be" if be else "le"}'
    d = last_buffer_mid_file(w)
    funcs = [x for x in d.recs if x.kind in g.FUNC_KINDS]
    f = funcs[len(funcs) // 2]
    fr = w.func_recs()
    i = fr.index(f)
    for what, off, fmt, v in [('record type 7', f.offset, 'H', 7),
                              ('function type 9', f.offset + 3, 'B', 9)]:
        label = f'{tag}: {what} at {f.offset:#x}'
        data = put(w.data, off, fmt, v, be)
        r, got, _ = import_trace(ctx, label, data)
        if r is None:
            continue
        check_partial(label, r, got)
        check_loss_reported(label, r, f.offset, f.offset + 31)
        # that record is gone, the rest is read (a break where it was, or none)
        check_one_of(ctx, label, spec, [fr[:i] + [None] + fr[i + 1:], fr[:i] + fr[i + 1:]], got)
    # a partial record at the end
    label = f'{tag}: 20 trailing bytes'
    r, got, _ = import_trace(ctx, label, w.data + bytes(20))
    if r is not None:
        check_partial(label, r, got)
        check_loss_reported(label, r, len(w.data), len(w.data) + 20)
        check_one_of(ctx, label, spec, [fr], got)


def header_case(ctx):
    spec, w = make_trace(ctx.fids, 5)
    bad = []
    for v in (0, 6, 0xffff):
        bad.append((f'FDR version {v}', put(w.data, 0, 'H', v, False)))
    for t in (2, 0x100):
        bad.append((f'type {t}', put(w.data, 2, 'H', t, False)))
    bad.append(('basic mode version 4', put(put(w.data, 0, 'H', 4, False), 2, 'H', 0, False)))
    with open(ctx.binary, 'rb') as f:
        bad.append(('an ELF file', f.read()))
    bad.append(('text', b'---\nheader:\n  version: 1\n  type: 1\nrecords: []\n'))
    bad.append(('an empty file', b''))
    bad.append(('31 bytes of a header', w.data[:31]))
    rng = random.Random(3)
    bad.append(('random bytes', bytes(rng.randrange(256) for _ in range(4096))))
    for what, data in bad:
        r, got, out = import_trace(ctx, f'header: {what}', data)
        if r is None:
            continue
        check(r.returncode == 1, f'header: {what}: exit {r.returncode}, want 1')
        check(not os.path.exists(out), f'header: {what}: an output file was written')
    # a header alone: a trace with nothing in it
    r, got, out = import_trace(ctx, 'header: a header and nothing else', w.data[:32])
    if r is not None:
        check(r.returncode == 1 and not os.path.exists(out),
              f'header: a header and nothing else: exit {r.returncode}, output written '
              f'{os.path.exists(out)}')


def flips_case(ctx, seed=23, rounds=12):
    rng = random.Random(seed)
    variants = [(1, False, 'fdr'), (1, True, 'fdr'), (2, False, 'fdr'), (3, True, 'fdr'),
                (4, False, 'fdr'), (5, False, 'fdr'), (5, True, 'fdr'), (3, False, 'basic')]
    for version, be, mode in variants:
        spec, w = make_trace(ctx.fids, version, be, mode, seed=seed + version,
                             pad='garbage' if version == 1 else 'zero')
        for i in range(rounds):
            b = bytearray(w.data)
            how = rng.randrange(3)
            if how == 0:
                for _ in range(rng.randrange(1, 8)):
                    b[rng.randrange(32, len(b))] ^= 1 << rng.randrange(8)
            elif how == 1:
                rec = rng.choice(w.recs)
                for k in range(rec.size):
                    b[rec.offset + k] = rng.randrange(256)
            else:
                off = rng.randrange(32, len(b) - 16)
                b[off:off + 16] = bytes([0xff] * 16) if rng.randrange(2) else bytes(16)
            import_trace(ctx, f'flips {mode}-v{version}-{"be" if be else "le"} #{i}', bytes(b))


def output_case(ctx):
    spec, w = make_trace(ctx.fids, 5)
    path = os.path.join(ctx.workdir, 'good.xray')
    with open(path, 'wb') as f:
        f.write(w.data)
    blocker = os.path.join(ctx.workdir, 'a-file')
    with open(blocker, 'w') as f:
        f.write('not a directory\n')
    for what, out in (('a missing directory', os.path.join(ctx.workdir, 'no', 'such', 'o.sfprof')),
                      ('a file as directory', os.path.join(blocker, 'o.sfprof'))):
        ctx.n += 1
        r = o.sfprof_import(ctx.sfprof, ctx.binary, path, out)
        ctx.exits[r.returncode] += 1
        check(r.returncode == 1, f'output in {what}: exit {r.returncode}, want 1')
        check(os.path.dirname(out) in r.stderr,
              f'output in {what}: the message does not name it: {r.stderr.strip()[:300]}')
        check(not os.path.exists(out), f'output in {what}: written')
    # a damaged trace (nothing readable) leaves the last profile alone
    out = os.path.join(ctx.workdir, 'kept.sfprof')
    ctx.n += 1
    r = o.sfprof_import(ctx.sfprof, ctx.binary, path, out)
    ctx.exits[r.returncode] += 1
    check(r.returncode == 0, f'output: the good trace: exit {r.returncode}')
    with open(out, 'rb') as f:
        before = f.read()
    bad = os.path.join(ctx.workdir, 'bad.xray')
    with open(bad, 'wb') as f:
        f.write(put(w.data, 0, 'H', 6, False))
    ctx.n += 1
    r = o.run([ctx.sfprof, 'import', 'xray', '-m', ctx.binary, '-o', out, bad])
    ctx.exits[r.returncode] += 1
    check(r.returncode == 1, f'output: a bad trace over a profile: exit {r.returncode}')
    with open(out, 'rb') as f:
        check(f.read() == before, 'output: a bad trace changed the profile already there')
    check(not os.path.exists(out + '.old'), 'output: a bad trace renamed the profile')


def in_tmpfs(size, script, args):
    """Run sh -c @script with $1 a fresh tmpfs of @size bytes, in a mount namespace of its own."""
    mnt = args[0]
    body = f'mount -t tmpfs -o size={size} sfprof-test "$1" || exit 99; ' + script
    last = None
    for flags in (['-m'], ['-r', '-m']):
        last = o.run(['unshare'] + flags + ['--propagation', 'private', 'sh', '-c', body, 'sh']
                     + [mnt] + list(args[1:]), timeout=120)
        if last.returncode != 99 and 'unshare failed' not in last.stderr:
            return last
    return last


def full_disk_case(ctx):
    spec, w = make_trace(ctx.fids, 5, calls=(300, 900, 900), bsize=1024)
    path = os.path.join(ctx.workdir, 'good.xray')
    with open(path, 'wb') as f:
        f.write(w.data)
    whole = os.path.join(ctx.workdir, 'whole.sfprof')
    r = o.sfprof_import(ctx.sfprof, ctx.binary, path, whole)
    check(r.returncode == 0, f'full disk: the import on a roomy disk: exit {r.returncode}')
    _, want = o.sfprof_collapsed(ctx.sfprof, whole)
    check(want == names_of(ctx, g.expect_records(spec, w.func_recs())),
          'full disk: the roomy import is not the trace')
    mnt = os.path.join(ctx.workdir, 'mnt')
    os.makedirs(mnt, exist_ok=True)
    got_path = os.path.join(ctx.workdir, 'got.sfprof')
    # old profile in, import, then report: exit status, the files left, the output copied out
    script = ('printf old-profile > "$1/o.sfprof"; '
              '"$2" import xray -m "$3" -o "$1/o.sfprof" "$4" 2>"$1/../err"; echo "rc=$?"; '
              'ls -a "$1" | tr "\\n" " "; echo; cp "$1/o.sfprof" "$5"')
    sizes = [4096 * k for k in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 256)]
    full = ok = 0
    for size in sizes:
        ctx.n += 1
        r = in_tmpfs(size, script, [mnt, ctx.sfprof, ctx.binary, path, got_path])
        if r.returncode == 99 or 'rc=' not in r.stdout:
            log(f'SKIP: no tmpfs in a mount namespace here: {r.stderr.strip()[:200]}')
            return SKIP
        rc = int(re.search(r'rc=(\d+)', r.stdout).group(1))
        files = r.stdout.split('\n')[1].split()
        with open(os.path.join(ctx.workdir, 'err')) as f:
            err = f.read()
        ctx.exits[rc] += 1
        label = f'full disk: tmpfs of {size // 1024} KiB'
        # a whole import renames the old profile to o.sfprof.old, as record does
        check(sorted(files) == ['.', '..', 'o.sfprof'] + (['o.sfprof.old'] if rc == 0 else []),
              f'{label}: files left: {files} (exit {rc}: {err.strip()[:300]})')
        if rc == 0:
            ok += 1
            _, got = o.sfprof_collapsed(ctx.sfprof, got_path)
            check(got == want, f'{label}: exit 0, but the profile is not the whole one')
        else:
            full += 1
            check(rc == 1, f'{label}: exit {rc}')
            check('No space left on device' in err, f'{label}: {err.strip()[:300]}')
            with open(got_path, 'rb') as f:
                check(f.read() == b'old-profile', f'{label}: the old profile was not kept')
    log(f'full disk: {full} imports stopped by a full disk, {ok} whole')
    check(full >= 3 and ok >= 1, f'full disk: {full} full, {ok} whole: the sizes miss the limit')


CASES = {
    'truncate-v1': lambda c: (truncate_case(c, 1, False, 'fdr', pad='garbage'),
                              truncate_case(c, 1, True, 'fdr', nrandom=15)),
    'truncate-v2': lambda c: truncate_case(c, 2, True, 'fdr'),
    'truncate-v3': lambda c: truncate_case(c, 3, False, 'fdr'),
    'truncate-v4': lambda c: truncate_case(c, 4, True, 'fdr'),
    'truncate-v5': lambda c: (truncate_case(c, 5, False, 'fdr'),
                              truncate_case(c, 5, True, 'fdr', nrandom=15)),
    'truncate-basic': lambda c: (truncate_case(c, 3, False, 'basic', nrandom=20),
                                 truncate_case(c, 1, True, 'basic', nrandom=10)),
    'extents': lambda c: (extents_case(c, 2, False), extents_case(c, 3, True),
                          extents_case(c, 4, False), extents_case(c, 5, False)),
    'events': lambda c: (events_case(c, 1, False), events_case(c, 3, True),
                         events_case(c, 4, False), events_case(c, 5, False)),
    'v1-size': lambda c: (v1_size_case(c, False), v1_size_case(c, True)),
    'basic': lambda c: (basic_case(c, False), basic_case(c, True)),
    'header': header_case,
    'flips': flips_case,
    'output': output_case,
    'full-disk': full_disk_case,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', required=True, choices=sorted(CASES))
    a = ap.parse_args()
    for tool in ('clang-16', o.LLVM_XRAY):
        if not shutil.which(tool):
            log(f'SKIP: {tool} not found (Debian: clang-16, llvm-16)')
            return SKIP
    if os.path.isdir(a.workdir):
        shutil.rmtree(a.workdir)
    os.makedirs(a.workdir)
    binary, names = g.build_binary(a.workdir, NFUNCS)
    ctx = Ctx(a.sfprof, a.workdir, binary, names, g.fn_ids(names))
    probe = o.run([a.sfprof, 'import', 'xray', '--help'])
    if o.not_built(probe):
        log('FAIL: sfprof import is not built yet')
        return 1
    if CASES[a.case](ctx) == SKIP:
        return SKIP
    log(f'{ctx.n} imports, exit statuses {dict(ctx.exits)}, {ctx.profiles} profiles written'
        + (f', damage matched with {dict(ctx.models)}' if ctx.models else ''))
    if failures:
        log(f'{len(failures)} check(s) failed')
        return 1
    log('all checks passed')
    return 0


if __name__ == '__main__':
    sys.exit(main())
