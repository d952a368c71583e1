#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""What importing a large XRay FDR trace costs: sfprof import xray against llvm-xray-16 stack.

Writes a version 5 FDR trace as compiler-rt lays it out (16 KiB buffers,
BufferExtents, NewBuffer, WalltimeMarker, Pid, NewCPUId, then function
records with TSC deltas; little-endian, cycle frequency 1 GHz) of at least
--mb megabytes: --threads threads, each entering two outer frames once and
then running, one after the other, "requests" picked at random from a pool
of --episodes distinct call trees (up to --depth frames below the outer two,
calls among --funcs functions, recursion, tail calls, entries with
arguments). The trace therefore holds far fewer distinct stacks than
records, and twice the trace holds the same stacks.

It then times, in one run, on the same trace (page cache warm):
  sfprof import xray -m BIN -o OUT TRACE
  llvm-xray-16 stack -m BIN -all-stacks -stack-format=flame -aggregation-type=time TRACE
and prints, for each, wall time, records per second and memory: the peak
resident set (ru_maxrss: anonymous memory and the file pages it touched,
the trace included when it is mapped) and the peak anonymous memory
(RssAnon sampled every 5 ms). Then it imports traces with the same stacks
and prints how sfprof's memory moved: twice the records over twice the time,
twice the records in the same time (the same requests, twice as fast), and
the same records over ten times the time. sfprof sums time per (thread,
stack, one-second window) and writes each window out as it closes: none of
the three should cost more memory.

sfprof's profile is checked against the construction: `sfprof export
--format collapsed` must give each stack's self time exactly. Figures only:
the exit status says whether the runs worked, not how fast they were.
"""

import argparse
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'tests', 'xray', 'synthetic'))
import xray_gen as g  # noqa: E402
import xray_oracles as o  # noqa: E402

T0 = 5 * 10**12
FREQ = 1_000_000_000
BUFFER = 16384          # compiler-rt's default buffer_size
PID = 4321


def log(msg):
    print(msg, flush=True)


class Episode:
    """One request: encoded records (relative deltas), duration, self ticks per stack."""
    __slots__ = ('data', 'records', 'funcs', 'ticks', 'self_ticks', 'gap', 'outer')


def make_episodes(seed, fids, count, depth, spec, halve=False, stretch=1):
    """@count requests; with @halve, the same calls in half the time; @stretch times slower."""
    rng = random.Random(seed)
    eps = []
    for _ in range(count):
        th = g.random_thread(rng, 1, PID, fids, calls=rng.randrange(20, 120), t0=0,
                             quantum=2, max_depth=depth, cpus=(0,), p_tail=0.05, p_args=0.05,
                             p_recurse=0.08, gap=(3, 150))
        e = Episode()
        e.gap = rng.randrange(25, 1000) * 2
        if halve:
            for ev in th.events:
                ev.t //= 2
            e.gap //= 2
        for ev in th.events:
            ev.t *= stretch
        e.gap *= stretch
        parts, prev, recs, funcs = [], -e.gap, 0, 0
        for ev in th.events:
            parts.append(g.func(spec, g.ACTIONS[ev.kind], ev.fid, ev.t - prev))
            for a in ev.args:
                parts.append(g.meta(spec, g.CALL_ARG, struct.pack('<Q', a)))
            recs += 1 + len(ev.args)
            funcs += 1
            prev = ev.t
        e.data = b''.join(parts)
        e.records, e.funcs = recs, funcs
        e.ticks = th.events[-1].t + e.gap      # from the previous record to the last exit
        x = g.simulate((PID, 1, ev) for ev in th.events)
        e.self_ticks = Counter({st: v for (_, _, st), v in x.self_ticks.items()})
        # the gap before it and any time between its top-level calls: the outer frames'
        e.outer = e.ticks - sum(e.self_ticks.values())
        eps.append(e)
    return eps


def write_trace(path, episodes, outer, threads, min_bytes, seed):
    """Write the trace; return (bytes, records, function records, self ticks per stack)."""
    spec = g.Spec([], version=5, freq=FREQ, buffer_size=BUFFER)
    rng = random.Random(seed)
    per_thread = max(1, min_bytes // threads)
    self_ticks = Counter()
    uses = Counter()
    outer_self = 0
    total_recs = total_funcs = 0
    streams = []
    for ti in range(threads):
        tid = 3000 + ti
        t = T0
        bufs = []
        size = 0
        ordinal = 0
        # the thread's outer frames, entered once
        pro = g.func(spec, 0, outer[0], 0) + g.func(spec, 0, outer[1], 10)
        outer_self += 10
        body, body_len, last_t, first_t = [pro], len(pro), T0 + 10, T0
        buf_recs, buf_funcs = 2, 2

        def close(body, first_t):
            nonlocal size, ordinal, total_recs, total_funcs
            pre = (g.meta(spec, g.NEW_BUFFER, struct.pack('<i', tid))
                   + g.meta(spec, g.WALLTIME, struct.pack('<QI', 1_700_000_000 + ordinal, ordinal))
                   + g.meta(spec, g.PID, struct.pack('<i', PID))
                   + g.meta(spec, g.NEW_CPU, struct.pack('<HQ', ti % 4, first_t)))
            data = pre + b''.join(body)
            bufs.append(g.meta(spec, g.EXTENTS, struct.pack('<Q', len(data))) + data)
            size += 16 + len(data)
            ordinal += 1
            total_recs += 5
        t = last_t
        while size < per_thread:
            e = episodes[rng.randrange(len(episodes))]
            if body_len + len(e.data) + 80 > BUFFER:
                close(body, first_t)
                total_recs += buf_recs
                total_funcs += buf_funcs
                # the next buffer's NewCPUId carries the time of the record before it
                body, body_len, first_t, buf_recs, buf_funcs = [], 0, t, 0, 0
            body.append(e.data)
            body_len += len(e.data)
            buf_recs += e.records
            buf_funcs += e.funcs
            uses[id(e)] += 1
            outer_self += e.outer
            t += e.ticks
        epi = g.func(spec, 1, outer[1], 700) + g.func(spec, 1, outer[0], 10)
        outer_self += 700
        body.append(epi)
        buf_recs += 2
        buf_funcs += 2
        close(body, first_t)
        total_recs += buf_recs
        total_funcs += buf_funcs
        streams.append(bufs)
        self_ticks[(outer[0],)] += 20
    self_ticks[tuple(outer)] += outer_self - 10 * threads
    for e in episodes:
        n = uses[id(e)]
        if n:
            for st, v in e.self_ticks.items():
                self_ticks[tuple(outer) + st] += v * n
    # threads' buffers interleaved, as several threads fill and flush them
    with open(path, 'wb') as f:
        f.write(g.header(spec))
        written = 32
        idx = [0] * threads
        while any(idx[i] < len(streams[i]) for i in range(threads)):
            for i in range(threads):
                if idx[i] < len(streams[i]):
                    f.write(streams[i][idx[i]])
                    written += len(streams[i][idx[i]])
                    idx[i] += 1
    return written, total_recs, total_funcs, self_ticks


class Run:
    __slots__ = ('wall', 'hwm_kb', 'anon_kb', 'rc', 'stderr')


def measure(cmd, stdout=subprocess.DEVNULL):
    """Run @cmd: wall time, peak VmHWM and RssAnon (sampled every 5 ms), exit status.

    Not the child's ru_maxrss: Linux keeps it across execve, so it would start
    at this (large) Python process's resident size.
    """
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE)
    peak = {'VmHWM:': 0, 'RssAnon:': 0}
    done = threading.Event()

    def sample():
        path = f'/proc/{p.pid}/status'
        while not done.is_set():
            try:
                with open(path) as f:
                    for line in f:
                        key = line.split(None, 1)[0]
                        if key in peak:
                            peak[key] = max(peak[key], int(line.split()[1]))
            except (OSError, ValueError, IndexError):
                break
            done.wait(0.005)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    err = p.stderr.read()
    p.wait()
    r = Run()
    r.wall = time.monotonic() - t0
    done.set()
    th.join()
    r.rc = p.returncode
    r.hwm_kb = peak['VmHWM:']
    r.anon_kb = peak['RssAnon:']
    r.stderr = err.decode('utf-8', 'replace')
    return r


def best(runs):
    return min(runs, key=lambda r: r.wall)


def mib(kb):
    return f'{kb / 1024:7.1f} MiB'


def span_s(ticks, threads):
    """Trace time per thread, in s: the self time of all its stacks (the outer frames never leave)."""
    return sum(ticks.values()) / threads / FREQ


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--workdir', help='keep the traces here (default: a temporary directory)')
    ap.add_argument('--mb', type=int, default=128, help='trace size in MB (default 128)')
    ap.add_argument('--threads', type=int, default=4)
    ap.add_argument('--funcs', type=int, default=200)
    ap.add_argument('--episodes', type=int, default=3000)
    ap.add_argument('--depth', type=int, default=24)
    ap.add_argument('--reps', type=int, default=3, help='sfprof runs, the fastest kept')
    ap.add_argument('--llvm-reps', type=int, default=1)
    ap.add_argument('--no-llvm', action='store_true')
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args()
    for tool in ('clang-16', o.LLVM_XRAY):
        if not shutil.which(tool):
            sys.exit(f'bench-xray: {tool} not found')
    work = a.workdir or tempfile.mkdtemp(prefix='bench-xray.')
    os.makedirs(work, exist_ok=True)
    try:
        return bench(a, work)
    finally:
        if not a.workdir:
            shutil.rmtree(work, ignore_errors=True)


def bench(a, work):
    t = time.monotonic()
    binary, names = g.build_binary(work, a.funcs)
    fids = g.fn_ids(names)
    outer, fids = fids[:2], fids[2:]
    spec = g.Spec([], version=5, freq=FREQ)
    episodes = make_episodes(a.seed, fids, a.episodes, a.depth, spec)
    dense = make_episodes(a.seed, fids, a.episodes, a.depth, spec, halve=True)
    slow = make_episodes(a.seed, fids, a.episodes, a.depth, spec, stretch=10)
    trace = os.path.join(work, 'big.xray')
    # (what, path, requests, size in units of the trace's)
    traces2 = [('twice as long', os.path.join(work, 'long.xray'), episodes, 2),
               ('twice as dense', os.path.join(work, 'dense.xray'), dense, 2),
               ('10x slower', os.path.join(work, 'slow.xray'), slow, 1)]
    size, recs, funcs, ticks = write_trace(trace, episodes, outer, a.threads, a.mb * 10**6, a.seed)
    log(f'trace:  {size / 1e6:.1f} MB, FDR version 5, {a.threads} threads, {recs} records '
        f'({funcs} function records), {len(ticks)} distinct stacks, '
        f'{a.funcs} functions, stacks up to {a.depth + 2} frames, '
        f'{span_s(ticks, a.threads):.2f} s of trace time per thread')
    written2 = []
    for what, path, pool, times in traces2:
        w2 = write_trace(path, pool, outer, a.threads, times * a.mb * 10**6, a.seed + 1)
        written2.append(w2)
        log(f'{what}: {w2[0] / 1e6:.1f} MB, {w2[1]} records ({w2[2]} function records), '
            f'{len(w2[3])} distinct stacks, {span_s(w2[3], a.threads):.2f} s per thread')
    log(f'traces written in {time.monotonic() - t:.1f} s')
    out = os.path.join(work, 'big.sfprof')

    runs = []
    for _ in range(a.reps):
        if os.path.exists(out):
            os.unlink(out)
        runs.append(measure([a.sfprof, 'import', 'xray', '-m', binary, '-o', out, trace]))
        if runs[-1].rc:
            sys.exit(f'bench-xray: sfprof import failed (exit {runs[-1].rc}):\n{runs[-1].stderr}')
    s = best(runs)
    r, got = o.sfprof_collapsed(a.sfprof, out)
    want = Counter()
    for st, v in ticks.items():
        want[tuple(names[f] for f in st)] += v     # 1 GHz: ticks are ns
    ok = got == +want
    log('')
    log(f'{"":34} {"wall":>9} {"records/s":>12} {"peak RSS":>12} {"peak anon":>12}')
    log(f'{"sfprof import xray":34} {s.wall:8.2f}s {recs / s.wall:12.3e} {mib(s.hwm_kb)} '
        f'{mib(s.anon_kb)}')
    if not a.no_llvm:
        lr = [measure([o.LLVM_XRAY, 'stack', '-m', binary, '-all-stacks', '-stack-format=flame',
                       '-aggregation-type=time', trace]) for _ in range(a.llvm_reps)]
        lb = best(lr)
        if lb.rc:
            log(f'llvm-xray-16 stack failed (exit {lb.rc}): {lb.stderr.strip()[:300]}')
        log(f'{"llvm-xray-16 stack -all-stacks":34} {lb.wall:8.2f}s {recs / lb.wall:12.3e} '
            f'{mib(lb.hwm_kb)} {mib(lb.anon_kb)}')
        log(f'sfprof is {lb.wall / s.wall:.1f}x faster than llvm-xray-16 stack, with '
            f'{lb.hwm_kb / max(s.hwm_kb, 1):.1f}x less peak RSS')
    # the same stacks: twice the records over twice the time or in the same time, or the
    # same records over ten times the time (ten times the one-second windows)
    ok2 = True
    for (what, path, _, _), (size2, recs2, _, ticks2) in zip(traces2, written2):
        runs2 = []
        for _ in range(a.reps):
            if os.path.exists(out):
                os.unlink(out)
            runs2.append(measure([a.sfprof, 'import', 'xray', '-m', binary, '-o', out, path]))
            if runs2[-1].rc:
                sys.exit(f'bench-xray: sfprof import ({what}) failed:\n{runs2[-1].stderr}')
        s2 = best(runs2)
        _, got2 = o.sfprof_collapsed(a.sfprof, out)
        want2 = Counter()
        for st, v in ticks2.items():
            want2[tuple(names[f] for f in st)] += v
        ok2 = ok2 and got2 == +want2
        log(f'{"sfprof import xray, " + what:34} {s2.wall:8.2f}s {recs2 / s2.wall:12.3e} '
            f'{mib(s2.hwm_kb)} {mib(s2.anon_kb)}   '
            f'({(s2.hwm_kb - s.hwm_kb) / 1024:+.1f}, {(s2.anon_kb - s.anon_kb) / 1024:+.1f} MiB)')
    log('')
    log(f'sfprof self time per stack equals the construction: {"yes" if ok else "NO"} '
        f'(trace), {"yes" if ok2 else "NO"} (the three others)')
    if not ok:
        diff = [(k, want.get(k, 0), got.get(k, 0)) for k in set(want) | set(got)
                if want.get(k, 0) != got.get(k, 0)]
        log(f'  {len(diff)} stacks differ, e.g. {diff[:3]}')
    return 0 if ok and ok2 else 1


if __name__ == '__main__':
    sys.exit(main())
