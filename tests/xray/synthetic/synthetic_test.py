#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""XRay traces written from the spec, read by llvm-xray-16 and by sfprof.

Each --case writes, with xray_gen.py, one or two traces of three threads
calling the functions of a binary compiled here with clang-16
-fxray-instrument (so the function ids are a real xray_instr_map's): nested
calls with recursion, tail calls, entries with arguments, custom events
(typed events from version 5), several buffers per thread, TSC wraps and CPU
migrations in the middle of buffers, buffers of the threads interleaved.
What each trace holds is known by construction (xray_gen.expect): self ticks
per stack, inclusive ticks per stack, calls per function.

  oracle   (traces llvm-xray-16 reads: little-endian FDR, basic mode in both
           byte orders) `fdr-dump -verify` passes; `convert -f yaml` gives
           every event with its thread, process, cpu and absolute time;
           `stack -all-stacks -stack-format=flame -aggregation-type=time`
           gives the inclusive time of every (thread, stack), and the self time
           derived from it (node minus children) is the constructed one;
           `account` gives the constructed calls and summed time per function.
           llvm-xray 16 reads neither big-endian FDR traces as the spec lays
           them out (it looks for the discriminant in bit 0 of the first byte
           whatever the byte order) nor version 1 buffers padded with anything
           but zeros in whole 8-byte records: those traces are checked
           against the construction alone, and what llvm-xray says of them is
           printed.
  sfprof   `sfprof xray dump --state` prints every record written, at its
           offset, with the id, thread, process, cpu and absolute time of each
           function record, and no loss; `sfprof import xray -m BIN -o OUT
           --functions` exits 0, its summary counts the threads, records,
           entries, exits, tail exits, arguments, events, unmatched exits and
           unwound frames written, the time covered and the self time, and no
           loss; --functions gives the entries and closed frames of every
           function and the address llvm-xray-16 extract gives it; `sfprof
           export -i OUT --format collapsed` gives the constructed self ns per
           stack. The same import of the trace with one record moved by one
           tick must give other numbers (the comparison can fail).

The *-unmatched-* cases add a thread whose records start inside calls and
end inside others, with exits of functions not on the stack (ignored) and an
exit that unwinds the frames above its entry. The bitfields case compiles
compiler-rt's record layouts (bitfield structs) with clang-16 for
little-endian (x86-64, AArch64) and big-endian (PowerPC64, s390x, MIPS)
targets and checks that xray_gen writes the same bytes.

Exit status 0 pass, 1 fail, 77 skip (no clang-16 or llvm-xray-16).
"""

import argparse
import os
import re
import random
import shutil
import struct
import sys
from collections import Counter

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import xray_gen as g  # noqa: E402
import xray_oracles as o  # noqa: E402

SKIP = 77
NFUNCS = 10
T0 = 10**12

# name: (mode, version, big-endian, cycle frequency, tick quantum, buffer size)
CASES = {
    'fdr-v1-le': ('fdr', 1, False, 1_000_000_000, 1, 512),
    'fdr-v1-be': ('fdr', 1, True, 1_000_000_000, 1, 512),
    'fdr-v2-le': ('fdr', 2, False, 2_500_000_000, 5, 512),
    'fdr-v2-be': ('fdr', 2, True, 2_500_000_000, 5, 512),
    'fdr-v3-le': ('fdr', 3, False, 3_000_000_000, 3, 640),
    'fdr-v3-be': ('fdr', 3, True, 3_000_000_000, 3, 640),
    'fdr-v4-le': ('fdr', 4, False, 1_000_000_000, 1, 480),
    'fdr-v4-be': ('fdr', 4, True, 1_000_000_000, 1, 480),
    'fdr-v5-le': ('fdr', 5, False, 2_000_000_000, 2, 512),
    'fdr-v5-be': ('fdr', 5, True, 2_000_000_000, 2, 512),
    'basic-v1-le': ('basic', 1, False, 1_000_000_000, 1, 0),
    'basic-v2-be': ('basic', 2, True, 1_000_000_000, 1, 0),
    'basic-v3-le': ('basic', 3, False, 2_500_000_000, 5, 0),
    'basic-v3-be': ('basic', 3, True, 2_500_000_000, 5, 0),
    # a thread whose trace starts inside calls and ends inside others, with exits
    # of functions not on the stack and an exit that unwinds frames above it
    'fdr-v3-unmatched-le': ('fdr', 3, False, 1_000_000_000, 1, 512),
    'basic-v3-unmatched-be': ('basic', 3, True, 1_000_000_000, 1, 0),
}

# the bitfield layout of the records, as C compilers lay out compiler-rt's structs
BITFIELD_TARGETS = [('x86_64-linux-gnu', False), ('aarch64-linux-gnu', False),
                    ('powerpc64-linux-gnu', True), ('s390x-linux-gnu', True),
                    ('mips-linux-gnu', True)]
BITFIELD_SRC = '''
struct __attribute__((packed)) hdr { unsigned short version, type; _Bool constant_tsc : 1;
	_Bool nonstop_tsc : 1; };
struct __attribute__((packed)) func { unsigned char type : 1; unsigned char kind : 3;
	int fid : 28; unsigned delta; };
struct __attribute__((packed)) meta { unsigned char type : 1; unsigned char kind : 7;
	unsigned char data[15]; };
struct __attribute__((packed)) all { struct hdr h[3]; struct func f[4]; struct meta m[4]; } all = {
	{ { 3, 1, 1, 0 }, { 5, 1, 0, 1 }, { 1, 0, 1, 1 } },
	{ { 0, 0, 1, 0 }, { 0, 1, 0x0abcdef, 0x7fffffff }, { 0, 2, 0x0fffffff, 1 },
	  { 0, 3, 0x1234567, 0xdeadbeef } },
	{ { 1, 0, { 0 } }, { 1, 7, { 0 } }, { 1, 9, { 0 } }, { 1, 127, { 0 } } } };
'''

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f'FAIL: {what}', file=sys.stderr)
    return cond


def log(msg):
    print(msg, flush=True)


def diff_counters(want, got, limit=8):
    """A few lines saying where two Counters differ."""
    lines = []
    for k in sorted(set(want) | set(got), key=str):
        if want.get(k, 0) != got.get(k, 0):
            lines.append(f'    {";".join(map(str, k))}: want {want.get(k, 0)}, got {got.get(k, 0)}')
    more = f'\n    ... {len(lines) - limit} more' if len(lines) > limit else ''
    return '\n'.join(lines[:limit]) + more


class Trace:
    def __init__(self, name, spec, llvm):
        self.name, self.spec, self.llvm = name, spec, llvm


def make_threads(rng, fids, mode, version, quantum, payload_sizes, tids=(1001, 1002, 70001)):
    threads = []
    for i, tid in enumerate(tids):
        if version == 1 and mode == 'fdr':
            tid = tid & 0xffff      # the spec's 2-byte field
        th = g.random_thread(
            rng, tid, 4242, fids, calls=160, t0=T0 // quantum * quantum, quantum=quantum,
            max_depth=9, cpus=(0, 1, 2, 3) if i != 1 else (5,), p_migrate=0.04,
            p_wrap=0.01, p_custom=0.06 if mode == 'fdr' else 0,
            p_typed=0.05 if mode == 'fdr' and version >= 5 else 0, payload_sizes=payload_sizes)
        threads.append(th)
    return threads


def traces_for(case, fids):
    mode, version, be, freq, quantum, bsize = CASES[case]
    seed = sum(map(ord, case))
    rng = random.Random(seed)
    out = []
    # llvm-xray 16 reads v1 only when the padding after EndOfBuffer parses as
    # 8-byte records: zeros, and payloads in whole 8 bytes
    sizes = (8, 16, 40) if version == 1 else (1, 7, 8, 24, 40)
    spec = g.Spec(make_threads(rng, fids, mode, version, quantum, sizes), version=version,
                  big_endian=be, mode=mode, freq=freq, buffer_size=bsize, pad='zero',
                  order='time', cpu_jitter=40 * quantum if version in (3, 5) else 0,
                  basic_chunk=24, seed=seed)
    if 'unmatched' in case:
        spec.threads.append(unmatched_thread(fids, T0 // quantum * quantum, quantum))
    out.append(Trace(case, spec, llvm=not (be and mode == 'fdr')))
    if mode == 'fdr' and version == 1:
        # as old runtimes left them: garbage after EndOfBuffer, odd payloads
        spec = g.Spec(make_threads(rng, fids, mode, version, quantum, (1, 5, 13, 24)),
                      version=1, big_endian=be, freq=freq, buffer_size=bsize + 40,
                      pad='garbage', order='shuffle', seed=seed + 1)
        out.append(Trace(case + '-garbage', spec, llvm=False))
    if mode == 'fdr' and version >= 4:
        # one more layout: buffers in shuffled order, small buffers
        spec = g.Spec(make_threads(rng, fids, mode, version, quantum, sizes, tids=(7, 8)),
                      version=version, big_endian=be, freq=freq, buffer_size=256,
                      order='shuffle', seed=seed + 2)
        out.append(Trace(case + '-shuffled', spec, llvm=not be))
    return out


def unmatched_thread(fids, t0, q):
    """Records as a ring buffer leaves them: exits first, frames open at the end."""
    a, b, c, d = fids[:4]
    seq = [('exit', a), ('enter', b), ('exit', c), ('enter', c), ('enter', d), ('enter', a),
           ('tail', c), ('exit', b), ('enter', a), ('enter_args', a), ('exit', d), ('tail', a),
           ('enter', b), ('enter', c)]
    evs = []
    for i, (kind, f) in enumerate(seq):
        evs.append(g.Ev(kind, t0 + i * 1000 * q + (i % 3) * q, f, args=(7, 8) if kind == 'enter_args'
                        else (), cpu=1))
    return g.Thread(999, 4242, evs)


def check_construction(t, w):
    """The written trace has what the test claims to exercise."""
    kinds = Counter(r.kind for r in w.recs)
    per_thread = Counter(b.tid for b in w.bufs)
    name = t.name
    long_threads = {th.tid for th in t.spec.threads if len(th.events) > 100}
    check(all(n >= 2 for tid, n in per_thread.items() if tid in long_threads),
          f'{name}: some thread has a single buffer: {dict(per_thread)}')
    check(kinds['tail'] > 0 and kinds['enter_args'] > 0 and kinds['CallArgument'] > 0,
          f'{name}: no tail exit or entry with arguments written')
    if t.spec.mode == 'fdr':
        check(kinds['TSCWrap'] > 0, f'{name}: no TSCWrap written')
        check(kinds['CustomEvent'] > 0, f'{name}: no custom event written')
        if t.spec.version >= 5:
            check(kinds['TypedEvent'] > 0, f'{name}: no typed event written')
        # a NewCPUId after a function record of the same buffer: a migration
        mig = 0
        for b in w.bufs:
            seen_func = False
            for r in b.recs:
                seen_func = seen_func or r.kind in g.FUNC_KINDS
                mig += seen_func and r.kind == 'NewCPUId'
        check(mig > 0, f'{name}: no CPU migration inside a buffer')
    return kinds


def llvm_pid(spec, th):
    if spec.mode == 'basic' or spec.version >= 3:
        return th.pid
    return th.tid if spec.version == 2 else 0


def check_llvm(t, w, x, binary, names, path):
    spec = t.spec
    name = t.name
    if spec.mode == 'fdr':
        r = o.fdr_dump_verify(path)
        if not t.llvm:
            log(f'  note: llvm-xray-16 fdr-dump -verify {name}: exit {r.returncode}: '
                f'{r.stderr.strip().splitlines()[0] if r.stderr.strip() else "no error"}')
            return
        check(r.returncode == 0, f'{name}: llvm-xray-16 fdr-dump -verify: exit {r.returncode}: '
              f'{r.stderr.strip()[:300]}')
    elif not t.llvm:
        return
    # every event, where and when it happened
    rc, err, recs = o.llvm_records(binary, path)
    if not check(rc == 0, f'{name}: llvm-xray-16 convert: exit {rc}: {err.strip()[:300]}'):
        return
    want = Counter()
    for th in spec.threads:
        for ev in th.events:
            if ev.kind in g.FUNC_KINDS:
                want[(ev.kind, ev.fid, th.tid, llvm_pid(spec, th), ev.cpu, ev.t, ev.args)] += 1
            else:
                want[(ev.kind, th.tid, ev.t)] += 1
    got = Counter()
    for kind, fid, tid, pid, cpu, tsc, args in recs:
        got[(kind, fid, tid, pid, cpu, tsc, args) if kind in g.FUNC_KINDS else (kind, tid, tsc)] += 1
    check(want == got, f'{name}: llvm-xray-16 convert records differ from the written '
          f'events:\n{diff_counters(want, got)}')
    if x.unmatched:
        log(f'  note: {name}: llvm-xray-16 stack and account not compared: on an exit with '
            f'no entry on the stack llvm-xray stack empties the whole stack, account stops')
        return
    # inclusive ticks per (thread, stack)
    rc, err, stack = o.llvm_stack(binary, path)
    if check(rc == 0, f'{name}: llvm-xray-16 stack: exit {rc}: {err.strip()[:300]}'):
        incl = Counter({(tid,) + tuple(names[f] for f in st): v
                        for (pid, tid, st), v in x.incl_ticks.items()})
        check(+incl == stack, f'{name}: llvm-xray-16 stack inclusive ticks differ from the '
              f'construction:\n{diff_counters(+incl, stack)}')
        # self = node - children, from llvm's numbers, against the construction's self ticks
        self_llvm = Counter(stack)
        for k, v in stack.items():
            if len(k) > 2:
                self_llvm[k[:-1]] -= v
        want_self = Counter({(tid,) + tuple(names[f] for f in st): v
                             for (pid, tid, st), v in x.self_ticks.items()})
        check(+self_llvm == +want_self, f'{name}: self ticks derived from llvm-xray-16 stack '
              f'differ from the construction:\n{diff_counters(+want_self, +self_llvm)}')
    # calls and time per function
    rc, err, acc = o.llvm_account(binary, path)
    if check(rc == 0, f'{name}: llvm-xray-16 account: exit {rc}: {err.strip()[:300]}'):
        calls = {names[f]: n for f, n in x.calls.items()}
        check({k: v[0] for k, v in acc.items()} == calls,
              f'{name}: llvm-xray-16 account calls {sorted((k, v[0]) for k, v in acc.items())} '
              f'!= constructed {sorted(calls.items())}')
        sums = Counter()
        for (pid, tid, st), v in x.incl_ticks.items():
            sums[names[st[-1]]] += v
        for fn, (n, secs) in acc.items():
            want_s = sums[fn] / spec.freq
            check(abs(secs - want_s) <= 1e-5 * want_s + 1e-9,
                  f'{name}: llvm-xray-16 account sum for {fn}: {secs} s, constructed {want_s} s')


def check_dump(t, w, sfprof, path):
    spec = t.spec
    name = t.name
    r, head, recs, losses, summary = o.sfprof_dump(sfprof, path)
    if o.not_built(r):
        check(False, f'{name}: sfprof xray dump is not built yet')
        return
    if not check(r.returncode == 0 and not r.stderr.strip(),
                 f'{name}: sfprof xray dump: exit {r.returncode}: {r.stderr.strip()[:300]}'):
        return
    check(not losses, f'{name}: sfprof xray dump reports losses in an undamaged trace: {losses[:3]}')
    endian = 'big' if spec.big_endian else 'little'
    kind = 'FDR' if spec.mode == 'fdr' else 'basic-mode'
    want_head = (f'XRay {kind} trace version {spec.version}, {endian}-endian, cycle frequency '
                 f'{spec.freq} Hz, constant TSC yes, non-stop TSC yes')
    check(head is not None and want_head in head, f'{name}: dump header {head!r}, want {want_head!r}')
    # every record at its offset, of its kind
    want = [(rec.offset, rec.kind) for rec in w.recs]
    got = [(d.offset, d.kind) for d in recs]
    if not check(want == got, f'{name}: sfprof xray dump lists {len(got)} records, '
                 f'{len(want)} written; first difference: '
                 f'{next(((a, b) for a, b in zip(want, got) if a != b), (want[len(got):len(got)+1], got[len(want):len(want)+1]))}'):
        return
    pid_known = spec.mode == 'basic' or spec.version >= 3
    pids = {th.tid: th.pid for th in spec.threads}
    bad = []
    for rec, d in zip(w.recs, recs):
        if rec.kind not in g.FUNC_KINDS:
            continue
        ev = rec.ev
        got_f = (d.fid, d.tid, d.cpu, d.tsc) + ((d.pid,) if pid_known else ())
        want_f = (ev.fid, rec.tid, ev.cpu, ev.t) + ((pids[rec.tid],) if pid_known else ())
        if got_f != want_f:
            bad.append(f'{rec.offset:#x} {rec.kind}: (id, tid, cpu, tsc[, pid]) {got_f}, want {want_f}')
    check(not bad, f'{name}: sfprof xray dump function records differ ({len(bad)}):\n    ' +
          '\n    '.join(bad[:6]))
    n_funcs = sum(1 for rec in w.recs if rec.kind in g.FUNC_KINDS)
    check(any(f'# {len(w.recs)} records: {n_funcs} function' in s for s in summary),
          f'{name}: dump summary {summary}, want {len(w.recs)} records, {n_funcs} function')


def summary_fields(text):
    """The numbers of sfprof import's summary (stderr), by line label."""
    out = {}
    for line in text.splitlines():
        m = re.match(r'^  ([a-z][a-z ]+?)\s{2,}(.*)$', line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def check_import(t, w, x, sfprof, binary, names, addrs, path, workdir):
    spec = t.spec
    name = t.name
    out = os.path.join(workdir, t.name + '.sfprof')
    r = o.sfprof_import(sfprof, binary, path, out, extra=['--functions'])
    if o.not_built(r):
        check(False, f'{name}: sfprof import is not built yet')
        return
    bad = o.sanitizer_report(r.stderr)
    if not check(r.returncode == 0 and not bad,
                 f'{name}: sfprof import xray: exit {r.returncode}: {r.stderr.strip()[:400]}'):
        return
    # the summary: what was read
    f = summary_fields(r.stderr)
    evs = [ev for th in spec.threads for ev in th.events]
    kinds = Counter(ev.kind for ev in evs)
    fts = [ev.t for ev in evs if ev.kind in g.FUNC_KINDS]
    span = (max(fts) - min(fts)) * 10**9 // spec.freq
    want = {
        'threads': str(len(spec.threads)),
        'records': (f'{len(w.recs)} ({len(fts)} function: {kinds["enter"]} entries, '
                    f'{kinds["enter_args"]} with arguments, {kinds["exit"]} exits, '
                    f'{kinds["tail"]} tail exits)'),
        'time covered': (f'{span // 10**9}.{span % 10**9:09d} s, self time '
                         f'{sum(x.self_ns(spec.freq).values())} ns'),
        'unmatched exits': f'{x.unmatched} ',
        'unwound frames': f'{x.unwound} ',
        'call arguments': str(sum(len(ev.args) for ev in evs)),
        'custom events': str(kinds['custom']),
        'typed events': str(kinds['typed']),
        'lost': '0 bytes in 0 place(s)',
    }
    for k, v in want.items():
        check(k in f and f[k].startswith(v), f'{name}: sfprof import summary "{k}": '
              f'{f.get(k)!r}, want {v!r}')
    check(not re.search(r'offset \d+ \(0x', r.stderr), f'{name}: sfprof import reports a loss '
          f'on an undamaged trace: {r.stderr.strip()[:300]}')
    # calls per function (--functions: id, entries, closed, address)
    got_f = {}
    for line in r.stdout.splitlines():
        m = re.match(r'^\s*(-?\d+)\s+(\d+)\s+(\d+)\s+0x([0-9a-f]+)$', line)
        if m:
            got_f[int(m.group(1))] = (int(m.group(2)), int(m.group(3)), int(m.group(4), 16))
    want_f = {fid: (x.entries[fid], x.closed[fid], addrs[fid])
              for fid in set(x.entries) | set(x.closed)}
    check(got_f == want_f, f'{name}: sfprof import --functions (id: entries, closed, address) '
          f'{sorted(got_f.items())[:4]}..., want {sorted(want_f.items())[:4]}...')
    # self ns per stack
    re_, got = o.sfprof_collapsed(sfprof, out)
    if not check(re_.returncode == 0, f'{name}: sfprof export --format collapsed: exit '
                 f'{re_.returncode}: {re_.stderr.strip()[:300]}'):
        return
    want = x.self_ns(spec.freq, names)
    if check(want == got, f'{name}: collapsed self ns differ from the construction '
             f'(total want {sum(want.values())}, got {sum(got.values())}):\n'
             f'{diff_counters(want, got)}'):
        log(f'  sfprof: {len(got)} stacks, {sum(got.values())} ns of self time, as constructed')
    return want


def check_can_fail(t, w, want, sfprof, binary, path, workdir):
    """The comparison sees one record's time moved by one tick quantum."""
    spec = t.spec
    q = CASES[t.name][4]
    # a function record in the middle of a buffer, after another one
    buf = w.bufs[len(w.bufs) // 2]
    funcs = [r for r in buf.recs if r.kind in g.FUNC_KINDS]
    rec = funcs[len(funcs) // 2]
    data = bytearray(w.data)
    # FDR: the tick delta; basic mode: the absolute time
    off, fmt = (rec.offset + 4, 'I') if spec.mode == 'fdr' else (rec.offset + 8, 'Q')
    struct.pack_into(spec.e + fmt, data, off, struct.unpack_from(spec.e + fmt, data, off)[0] + q)
    bad = os.path.join(workdir, t.name + '-moved.xray')
    with open(bad, 'wb') as f:
        f.write(data)
    out = os.path.join(workdir, t.name + '-moved.sfprof')
    r = o.sfprof_import(sfprof, binary, bad, out)
    re_, got = o.sfprof_collapsed(sfprof, out)
    check(r.returncode == 0 and got and got != want,
          f'{t.name}: moving the record at {rec.offset:#x} by {q} ticks went unseen (exit '
          f'{r.returncode}): the comparison cannot fail')


def bitfields(workdir):
    """xray_gen's record bytes against clang-16's layout of the same bitfields, per target."""
    objcopy = shutil.which('llvm-objcopy-16')
    if not objcopy:
        log('SKIP: llvm-objcopy-16 not found (Debian: llvm-16)')
        return SKIP
    src = os.path.join(workdir, 'bitfields.c')
    with open(src, 'w') as f:
        f.write(BITFIELD_SRC)
    hdrs = [(3, 1, True, False), (5, 1, False, True), (1, 0, True, True)]
    funcs = [(0, 1, 0), (1, 0x0abcdef, 0x7fffffff), (2, 0x0fffffff, 1), (3, 0x1234567, 0xdeadbeef)]
    metas = [0, 7, 9, 127]
    tried = Counter()
    for target, be in BITFIELD_TARGETS:
        obj = os.path.join(workdir, f'bitfields-{target}.o')
        binf = obj + '.data'
        r = o.run(['clang-16', f'--target={target}', '-c', src, '-o', obj])
        if r.returncode:
            log(f'  note: clang-16 cannot build for {target}: {r.stderr.strip()[:200]}')
            continue
        r = o.run([objcopy, '-O', 'binary', '--only-section=.data', obj, binf])
        if not check(r.returncode == 0, f'{target}: llvm-objcopy-16: {r.stderr.strip()[:200]}'):
            continue
        with open(binf, 'rb') as f:
            data = f.read()
        want = b''
        for version, kind, ctsc, nstsc in hdrs:
            spec = g.Spec([], version=version, big_endian=be, mode='fdr' if kind else 'basic',
                          constant_tsc=ctsc, nonstop_tsc=nstsc)
            want += g.header(spec)[:5]
        spec = g.Spec([], big_endian=be)
        want += b''.join(g.func(spec, k, fid, d) for k, fid, d in funcs)
        want += b''.join(g.meta(spec, k) for k in metas)
        if check(data == want, f'{target}: compiled bitfields {data.hex()} != xray_gen {want.hex()}'):
            log(f'{target}: {"big" if be else "little"}-endian layout matches ({len(data)} bytes)')
        tried[be] += 1
    if not tried[True] or not tried[False]:
        log('SKIP: clang-16 builds for no big-endian or no little-endian target')
        return SKIP
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', required=True, choices=sorted(CASES) + ['bitfields'])
    a = ap.parse_args()
    for tool in ('clang-16', o.LLVM_XRAY):
        if not shutil.which(tool):
            log(f'SKIP: {tool} not found (Debian: clang-16, llvm-16)')
            return SKIP
    os.makedirs(a.workdir, exist_ok=True)
    if a.case == 'bitfields':
        return bitfields(a.workdir)
    binary, names, addrs = g.build_binary(a.workdir, NFUNCS, addresses=True)
    fids = g.fn_ids(names)
    check(len(fids) == NFUNCS, f'{binary}: {len(fids)} functions in the map, want {NFUNCS}')
    traces = traces_for(a.case, fids)
    for t in traces:
        w = g.write(t.spec)
        path = os.path.join(a.workdir, t.name + '.xray')
        with open(path, 'wb') as f:
            f.write(w.data)
        x = g.expect(t.spec)
        kinds = check_construction(t, w)
        log(f'{t.name}: {len(w.data)} bytes, {len(w.bufs)} buffers, {len(w.recs)} records '
            f'({kinds["NewCPUId"]} NewCPUId, {kinds["TSCWrap"]} TSCWrap, {kinds["tail"]} tail '
            f'exits), {sum(x.calls.values())} calls, {len(x.self_ticks)} (thread, stack) pairs')
        check((x.unmatched > 0 and x.unwound > 0) == ('unmatched' in t.name),
              f'{t.name}: the construction has {x.unmatched} unmatched exits, {x.unwound} '
              f'unwound frames')
        check_llvm(t, w, x, binary, names, path)
        check_dump(t, w, a.sfprof, path)
        want = check_import(t, w, x, a.sfprof, binary, names, addrs, path, a.workdir)
        if want and t is traces[0]:
            check_can_fail(t, w, want, a.sfprof, binary, path, a.workdir)
    if failures:
        log(f'{len(failures)} check(s) failed')
        return 1
    log('all checks passed')
    return 0


if __name__ == '__main__':
    sys.exit(main())
