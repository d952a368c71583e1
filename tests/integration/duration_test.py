#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`sfprof record --duration`: the window it says it sampled, against the samples and the clock.

record ends with a line of its own time:

    sfprof record: sampled S s, CLOCK_MONOTONIC A to B; started U s before;
                   finished in F s (...)

A and B are on the samples' clock (CLOCK_MONOTONIC, which `sfprof dump`
prints and Python's time.monotonic() reads). Each --case records, measures
the command's wall clock itself (L before it starts, E after it exited) and
reads the profile through profile_oracle.py (`sfprof dump`):

  busy     -a -F 4999 --duration 3 beside one 40-KiB-deep program per CPU
           (tests/progs/deepframes.c, every CPU busy);
  quiet    -a -F 999 --duration 2, nothing started beside it;
  command  --duration 1 -- PROG 6 (stopped at the duration, the command with
           it), and --duration 30 -- PROG 1 (stopped when it exits: the
           window ends then, short of the duration).

What must be exactly true, and is asserted so:
  - no sample lies outside [A, B]: not one before sampling started, not one
    after the window's end, however late record got to detach its events
    (the sampler stops at B by itself);
  - with --duration D and nothing else stopping it, B - A = S = D (to the
    microseconds printed), and the first summary line's seconds are S;
  - record's account fits inside the test's clock: L <= A - U (it started
    after it was launched) and B + F <= E (it exited after it finished).
What is true within a stated tolerance:
  - the account covers the wall clock: E - L - (U + S + F) is at most
    UNACCOUNTED_S (the process's exec and exit around what record measures:
    loading libraries, freeing the BPF objects), on a busy machine too;
  - the window is sampled: with every CPU busy at 4999 Hz the first sample
    comes within a fifth of the window from A, the last within a fifth from B.

A negative check runs each window check against a window 10% short, which
must then fail. Exit status 0 pass, 1 fail, 77 skip (not root, no BTF, no gas
--gsframe).
"""

import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record_test import Failure, case_main, expect, log, must_fail, quote, raise_fails  # noqa: E402

# what record does not measure of its own run: exec, dynamic loading, exit
UNACCOUNTED_S = 2.0
# rounding of the printed figures: seconds to the ms, stamps to the microsecond
MS = 0.0015

TIMING = re.compile(r'^sfprof record: sampled ([\d.]+) s, CLOCK_MONOTONIC (\d+)\.(\d{6}) to '
                    r'(\d+)\.(\d{6}); started ([\d.]+) s before; finished in ([\d.]+) s', re.M)
FIRST = re.compile(r'^sfprof record: ([\d.]+) s, (\d+) samples \((\d+) lost\)', re.M)
READER = re.compile(r'^sfprof record: the reader ran at (real-time|normal) priority', re.M)


def timed_record(ctx, args, out):
    """Run record; @return (stderr, L, E) with L and E on CLOCK_MONOTONIC, in ns."""
    cmd = [ctx.sfprof, 'record', '-o', out, *args]
    log('$ ' + quote(cmd))
    launched = time.monotonic_ns()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors='replace', timeout=120)
    exited = time.monotonic_ns()
    log(p.stderr.rstrip('\n'))
    if p.returncode:
        raise Failure(f'record exited with {p.returncode}')
    return p.stderr, launched, exited


def account(stderr):
    m = TIMING.search(stderr)
    if not m:
        raise Failure('no "sfprof record: sampled ..." line')
    a = int(m.group(2)) * 10**9 + int(m.group(3)) * 1000
    b = int(m.group(4)) * 10**9 + int(m.group(5)) * 1000
    return {'sampled': float(m.group(1)), 'a': a, 'b': b, 'started': float(m.group(6)),
            'finished': float(m.group(7))}


def check_window(prof, t, fails, what):
    """No sample outside [A, B + 1 us): the stamps are printed truncated to the microsecond."""
    times = [s.time for s in prof.samples]
    early = [x for x in times if x < t['a']]
    late = [x for x in times if x >= t['b'] + 1000]
    expect(times, fails, f'{what}: no samples')
    expect(not early, fails, f'{what}: {len(early)} samples before the window\'s start, the '
           f'first {(t["a"] - min(early or [0])) / 1e6:.3f} ms before it')
    expect(not late, fails, f'{what}: {len(late)} samples after the window\'s end, the last '
           f'{(max(late or [0]) - t["b"]) / 1e6:.3f} ms after it')
    return times


def check_account(stderr, launched, exited, t, fails, what):
    """record's times against the test's clock."""
    wall = (exited - launched) / 1e9
    said = t['started'] + t['sampled'] + t['finished']
    log(f'{what}: wall {wall:.3f} s; record says started {t["started"]:.3f} + sampled '
        f'{t["sampled"]:.3f} + finished {t["finished"]:.3f} = {said:.3f} s; '
        f'{wall - said:.3f} s outside its account')
    expect(abs((t['b'] - t['a']) / 1e9 - t['sampled']) <= MS, fails,
           f'{what}: B - A = {(t["b"] - t["a"]) / 1e9:.6f} s, sampled {t["sampled"]} s')
    expect(t['a'] - t['started'] * 1e9 >= launched - MS * 1e9, fails,
           f'{what}: it says it started {t["started"]} s before A, '
           f'{(launched - (t["a"] - t["started"] * 1e9)) / 1e9:.3f} s before it was launched')
    expect(t['b'] + t['finished'] * 1e9 <= exited + MS * 1e9, fails,
           f'{what}: it says it finished {t["finished"]} s after B, '
           f'{(t["b"] + t["finished"] * 1e9 - exited) / 1e9:.3f} s after it exited')
    expect(wall - said <= UNACCOUNTED_S, fails,
           f'{what}: {wall - said:.3f} s of the wall clock outside its account '
           f'(bound {UNACCOUNTED_S} s)')
    m = FIRST.search(stderr)
    expect(m and abs(float(m.group(1)) - t['sampled']) <= 0.05 + 1e-9, fails,
           f'{what}: the summary\'s first line says {m.group(1) if m else "?"} s, '
           f'sampled {t["sampled"]} s')
    m = READER.search(stderr)
    expect(m, fails, f'{what}: no line on how the reader was scheduled')
    if m and m.group(1) == 'normal':
        log(f'{what}: the reader ran at normal priority here')


def shortened(t):
    """A window 10% short at its end: a wrong expectation."""
    return dict(t, b=t['b'] - (t['b'] - t['a']) // 10)


def check_run(ctx, args, out, what, duration=None, coverage=False):
    stderr, launched, exited = timed_record(ctx, args, out)
    t = account(stderr)
    fails = []
    if duration is not None:
        expect(abs(t['sampled'] - duration) <= MS, fails,
               f'{what}: sampled {t["sampled"]} s, --duration {duration}')
    check_account(stderr, launched, exited, t, fails, what)
    prof = ctx.load(out)
    times = check_window(prof, t, fails, what)
    if times:
        log(f'{what}: {len(times)} samples, the first {(min(times) - t["a"]) / 1e6:.3f} ms after '
            f'A, the last {(t["b"] - max(times)) / 1e6:.3f} ms before B')
    if coverage and times:
        fifth = (t['b'] - t['a']) / 5
        expect(min(times) - t['a'] <= fifth, fails, f'{what}: no sample in the window\'s first '
               f'fifth')
        expect(t['b'] - max(times) <= fifth, fails, f'{what}: no sample in the window\'s last '
               f'fifth')
    neg = []
    check_window(prof, shortened(t), neg, f'{what}, a window 10% short')
    must_fail(neg, f'{what}: samples in a window 10% short')
    raise_fails(fails)
    return t


def case_busy(ctx):
    prog = ctx.compile('deepframes.c', 'deepframes')
    busy = [subprocess.Popen([prog, '20']) for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.3)
        check_run(ctx, ['-a', '-F', '4999', '--duration', '3'], ctx.path('busy.data'),
                  'busy', duration=3.0, coverage=True)
    finally:
        for p in busy:
            p.kill()
            p.wait()


def case_quiet(ctx):
    check_run(ctx, ['-a', '-F', '999', '--duration', '2'], ctx.path('quiet.data'), 'quiet',
              duration=2.0)


def case_command(ctx):
    prog = ctx.compile('deepframes.c', 'deepframes')
    check_run(ctx, ['-F', '999', '--duration', '1', '--', prog, '6'], ctx.path('cut.data'),
              'stopped at --duration 1', duration=1.0)
    t = check_run(ctx, ['-F', '999', '--duration', '30', '--', prog, '1'],
                  ctx.path('exit.data'), 'stopped by the command\'s exit')
    fails = []
    expect(1.0 - MS <= t['sampled'] < 30, fails, f'the command ran 1 s: sampled {t["sampled"]} s')
    raise_fails(fails)


CASES = {'busy': case_busy, 'quiet': case_quiet, 'command': case_command}


def main():
    return case_main(__doc__, CASES)


if __name__ == '__main__':
    sys.exit(main())
