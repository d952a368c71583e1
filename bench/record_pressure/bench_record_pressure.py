#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""What `sfprof record -a` does under pressure: lost samples, complete stacks, memory, cost per sample.

Builds two workloads with gcc (-fno-omit-frame-pointer -Wa,--gsframe) in a
temporary directory: deep.c, threads spinning 200 frames deep, and short.c,
a process 60 frames deep that lives 20 ms, built as 40 variants with
distinct build IDs so that a churn of them opens and releases modules.
Then, each part selectable with --parts:

  saturation  one deep thread plus a loop of short-lived processes (both
              CPUs busy), `record -a` at 999 and 4999 Hz for --seconds:
              samples, lost (by cause), complete stacks, user-stack bytes
              per sample, peak RSS, the sampled span against --duration and
              the wall time.
  rates       deep threads on every CPU at 999, 4999, 10000 and 20000 Hz for
              --seconds: the same figures; memory must stay bounded.
  cost        deep threads on every CPU at 999 and 4999 Hz, with
              kernel.bpf_stats_enabled: the BPF program's run time per
              sample (run_time_ns / run_cnt from bpftool), and sfprof's own
              CPU time (user + sys, startup included) per sample.
  churn       the saturation load at 999 Hz for --churn-seconds, sfprof's
              RSS every 10 s: it should level off.

Figures only: the exit status says whether the runs worked. Needs root,
gcc with --gsframe, bpftool for the cost part.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CFLAGS = ['-O2', '-fno-omit-frame-pointer', '-Wa,--gsframe', '-pthread']
SUMMARY = re.compile(r'sfprof: ([\d.]+) s, (\d+) samples \((\d+) lost\), (\d+) with a user stack, '
                     r'([\d.]+)% of them complete; (\d+) processes')
COPIES = re.compile(r'lost: (\d+) with the ring full.*?, (\d+) past the reader\'s queue bound; '
                    r'user stack copies: (\d+) bytes/sample')


def log(msg=''):
    print(msg, flush=True)


def build(work):
    run = lambda *a: subprocess.run(list(a), check=True)  # noqa: E731
    deep = os.path.join(work, 'deep')
    run('gcc', *CFLAGS, '-o', deep, os.path.join(HERE, 'deep.c'))
    shorts = []
    procs = []
    for i in range(1, 41):
        out = os.path.join(work, f'short{i}')
        procs.append(subprocess.Popen(['gcc', *CFLAGS, f'-DVARIANT={i}', '-o', out,
                                       os.path.join(HERE, 'short.c')]))
        shorts.append(out)
    for p in procs:
        if p.wait():
            sys.exit('bench-record-pressure: building short.c failed')
    return deep, shorts


class Churn:
    """Runs the short-lived variants one after the other until stopped."""

    def __init__(self, shorts):
        self.shorts, self.stop, self.count = shorts, threading.Event(), 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        i = 0
        while not self.stop.is_set():
            subprocess.run([self.shorts[i % len(self.shorts)]])
            i += 1
            self.count += 1

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=10)


def record(sfprof, out, hz, seconds, sample_rss=None):
    """Run `sfprof record -a`; return its figures, polling its RSS (and calling @sample_rss)."""
    cmd = [sfprof, 'record', '-a', '-F', str(hz), '--duration', str(seconds), '-o', out]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = 0
    last_sample = t0
    err = []
    reader = threading.Thread(target=lambda: err.append(p.stderr.read()), daemon=True)
    reader.start()
    while p.poll() is None:
        try:
            with open(f'/proc/{p.pid}/status') as f:
                for line in f:
                    if line.startswith('VmRSS:'):
                        rss = int(line.split()[1])
                        peak = max(peak, rss)
                        if sample_rss and time.monotonic() - last_sample >= 10:
                            last_sample = time.monotonic()
                            sample_rss(last_sample - t0, rss)
        except OSError:
            pass
        time.sleep(0.05)
    wall = time.monotonic() - t0
    reader.join(timeout=10)
    text = err[0] if err else ''
    m, c = SUMMARY.search(text), COPIES.search(text)
    if p.returncode or not m or not c:
        sys.exit(f'bench-record-pressure: {" ".join(cmd)}: exit {p.returncode}\n{text}')
    return {'secs': float(m.group(1)), 'samples': int(m.group(2)), 'lost': int(m.group(3)),
            'complete': float(m.group(5)), 'processes': int(m.group(6)),
            'lost_ring': int(c.group(1)), 'lost_queue': int(c.group(2)),
            'bytes': int(c.group(3)), 'peak_mib': peak / 1024, 'wall': wall}


HEAD = (f'{"":28} {"Hz":>6} {"samples":>9} {"lost":>6} {"ring":>6} {"queue":>6} '
        f'{"complete":>9} {"B/sample":>9} {"peak RSS":>10} {"span":>7} {"wall":>7}')


def row(what, hz, r):
    log(f'{what:28} {hz:>6} {r["samples"]:>9} {r["lost"]:>6} {r["lost_ring"]:>6} '
        f'{r["lost_queue"]:>6} {r["complete"]:>8.1f}% {r["bytes"]:>9} '
        f'{r["peak_mib"]:>6.1f} MiB {r["secs"]:>6.1f}s {r["wall"]:>6.2f}s')


def saturation(a, deep, shorts, out):
    log(f'== saturation: one deep thread and short-lived processes, {a.seconds} s')
    log(HEAD)
    for hz in (999, 4999):
        dp = subprocess.Popen([deep, str(a.seconds + 3), '1'])
        try:
            with Churn(shorts) as ch:
                r = record(a.sfprof, out, hz, a.seconds)
        finally:
            dp.kill()
            dp.wait()
        row(f'deep + churn ({ch.count} runs)', hz, r)


def rates(a, deep, out):
    ncpu = os.cpu_count() or 1
    log(f'== rates: {ncpu} deep threads, {a.seconds} s each')
    log(HEAD)
    for hz in (999, 4999, 10000, 20000):
        dp = subprocess.Popen([deep, str(a.seconds + 3), str(ncpu)])
        try:
            r = record(a.sfprof, out, hz, a.seconds)
        finally:
            dp.kill()
            dp.wait()
        row('deep threads', hz, r)


def bpf_sample_stats():
    p = subprocess.run(['bpftool', '-j', 'prog', 'show'], stdout=subprocess.PIPE, text=True)
    for prog in json.loads(p.stdout or '[]'):
        if prog.get('name') == 'sample' and prog.get('run_cnt'):
            return prog['run_cnt'], prog['run_time_ns']
    return None


def cost(a, deep, out):
    if not shutil.which('bpftool'):
        log('== cost: skipped (no bpftool)')
        return
    ncpu = os.cpu_count() or 1
    with open('/proc/sys/kernel/bpf_stats_enabled') as f:
        old = f.read().strip()
    log(f'== cost per sample: {ncpu} deep threads, {a.seconds} s')
    try:
        with open('/proc/sys/kernel/bpf_stats_enabled', 'w') as f:
            f.write('1')
        for hz in (999, 4999):
            dp = subprocess.Popen([deep, str(a.seconds + 3), str(ncpu)])
            stats = []
            try:
                t = threading.Timer(a.seconds - 0.5, lambda: stats.append(bpf_sample_stats()))
                t.start()
                before = os.times()
                r = record(a.sfprof, out, hz, a.seconds)
                after = os.times()
                t.join()
            finally:
                dp.kill()
                dp.wait()
            cpu = (after.children_user - before.children_user +
                   after.children_system - before.children_system)
            bpf = (f'BPF {stats[0][1] / stats[0][0]:.0f} ns/sample ({stats[0][0]} runs)'
                   if stats and stats[0] else 'BPF: no stats')
            log(f'{hz:>5} Hz: {bpf}; sfprof {cpu:.2f} s CPU for {r["samples"]} samples = '
                f'{cpu / max(r["samples"], 1) * 1e6:.1f} us/sample '
                f'({r["samples"] / max(cpu, 1e-9):.0f} samples/s per core, startup included)')
    finally:
        with open('/proc/sys/kernel/bpf_stats_enabled', 'w') as f:
            f.write(old)


def churn(a, deep, shorts, out):
    log(f'== churn: one deep thread and short-lived processes at 999 Hz, {a.churn_seconds} s')
    curve = []
    dp = subprocess.Popen([deep, str(a.churn_seconds + 3), '1'])
    try:
        with Churn(shorts) as ch:
            r = record(a.sfprof, out, 999, a.churn_seconds,
                       lambda t, rss: curve.append(f'{t:.0f}s:{rss / 1024:.0f}'))
    finally:
        dp.kill()
        dp.wait()
    log(f'RSS (MiB) every 10 s: {" ".join(curve)}')
    log(f'{r["samples"]} samples, {r["lost"]} lost, {r["processes"]} processes '
        f'({ch.count} runs), peak {r["peak_mib"]:.1f} MiB')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--seconds', type=int, default=10)
    ap.add_argument('--churn-seconds', type=int, default=120)
    ap.add_argument('--parts', default='saturation,rates,cost,churn')
    a = ap.parse_args()
    if os.geteuid():
        sys.exit('bench-record-pressure: needs root (BPF)')
    parts = a.parts.split(',')
    work = tempfile.mkdtemp(prefix='bench-record-pressure.')
    try:
        deep, shorts = build(work)
        out = os.path.join(work, 'p.data')
        if 'saturation' in parts:
            saturation(a, deep, shorts, out)
        if 'rates' in parts:
            rates(a, deep, out)
        if 'cost' in parts:
            cost(a, deep, out)
        if 'churn' in parts:
            churn(a, deep, shorts, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
