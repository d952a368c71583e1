#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`sfprof xray dump` against llvm-xray-16 on traces compiler-rt 16 writes.

Builds dump_prog.cc with clang++-16 -fxray-instrument, runs it, and checks:
- fdr: FDR mode, two threads, small buffers (several per thread), recursion,
  tail calls, logged arguments. sfprof's record lines are `llvm-xray-16
  fdr-dump`'s, line for line; the thread, process, cpu and absolute time
  sfprof derives for every function record (--state) and the call arguments
  equal `llvm-xray-16 convert -f yaml`'s, thread by thread; no loss.
- cut: the same trace cut inside a record and between buffers: the records
  before the cut are fdr-dump's, then one loss at the cut.
- events: FDR with a custom and a typed event (built at -O0, where
  compiler-rt 16's event trampolines do not crash). compiler-rt 16 writes the
  typed event's record cut; fdr-dump stops there ("Invalid offset for a
  typed event record (N)", N one past the record's first byte) and sfprof
  reports a loss at that record and nothing after it. A runtime that writes
  it whole must give fdr-dump's lines exactly.
- basic: basic mode, every record's kind, function id, tsc, cpu, thread,
  process and arguments equal `llvm-xray-16 convert -f yaml`'s, in order.
- errors: a missing file and a file that is not a trace exit 1 with one
  line on stderr; a usage error exits 2.

Exit status: 0 pass, 1 fail, 77 when clang++-16, its XRay runtime or
llvm-xray-16 is missing.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
failures = []

FUNC_LINE = re.compile(r'^<Function (Enter With Arg|Enter|Exit|Tail Exit): #(\d+) delta = \+(\d+)>'
                       r'  @0x([0-9a-f]+) tid (\d+) pid (\d+) cpu (\d+) tsc (\d+)$')
ARG_LINE = re.compile(r'^<Call Argument: data = (\d+) \(hex = 0x[0-9a-f]+\)>  @')
BASIC_FUNC = re.compile(r'^<Function (Enter With Arg|Enter|Exit|Tail Exit): #(\d+) tsc = (\d+), '
                        r'cpu = (\d+), tid = (\d+), pid = (\d+)>$')
BASIC_ARG = re.compile(r'^<Call Argument: data = (\d+) \(hex = 0x[0-9a-f]+\), #(\d+), '
                       r'tid = (\d+), pid = (\d+)>$')
KINDS = {'Enter': 'function-enter', 'Exit': 'function-exit', 'Tail Exit': 'function-tail-exit',
         'Enter With Arg': 'function-enter-arg'}


def log(msg):
    print(msg, file=sys.stderr)


def check(cond, what):
    if not cond:
        failures.append(what)
        log(f'FAIL: {what}')
    return cond


def run(cmd, **kw):
    kw.setdefault('capture_output', True)
    kw.setdefault('text', True)
    kw.setdefault('timeout', 120)
    return subprocess.run(cmd, **kw)


def build(workdir, opt):
    exe = os.path.join(workdir, f'dump_prog{opt}')
    r = run(['clang++-16', opt, '-g', '-fxray-instrument', '-o', exe,
             os.path.join(HERE, 'dump_prog.cc'), '-lpthread'])
    if r.returncode:
        log(f'SKIP: clang++-16 -fxray-instrument does not build (libclang-rt-16-dev?):\n{r.stderr}')
        sys.exit(SKIP)
    return exe


def make_trace(workdir, exe, name, args, basic=False):
    """Run @exe; return the trace it wrote."""
    tdir = os.path.join(workdir, name)
    shutil.rmtree(tdir, ignore_errors=True)
    os.makedirs(tdir)
    env = dict(os.environ)
    opts = f'xray_logfile_base={tdir}/xray-log. verbosity=0'
    if basic:
        env['XRAY_OPTIONS'] = 'patch_premain=true xray_mode=xray-basic ' + opts
        env['XRAY_BASIC_OPTIONS'] = 'func_duration_threshold_us=0'
    else:
        env['XRAY_OPTIONS'] = 'patch_premain=false ' + opts
    r = run([exe] + args, env=env, timeout=60)
    if not check(r.returncode == 0, f'{name}: {exe} {args} exited {r.returncode}: {r.stderr}'):
        return None
    traces = sorted(os.listdir(tdir))
    if not check(len(traces) == 1, f'{name}: expected one trace in {tdir}, found {traces}'):
        return None
    return os.path.join(tdir, traces[0])


def sfprof_dump(sfprof, trace, state=False):
    r = run([sfprof, 'xray', 'dump'] + (['--state'] if state else []) + [trace])
    check(r.returncode == 0, f'sfprof xray dump {trace} exited {r.returncode}: {r.stderr}')
    return r.stdout.splitlines()


def record_lines(lines):
    """sfprof's record lines, without --state, typed events as fdr-dump ends them."""
    out = []
    for line in lines:
        if not line.startswith('<'):
            continue
        line = line.split('  @')[0]
        if line.startswith('<Typed Event:'):
            line = line[:-1]
        out.append(line)
    return out


def fdr_dump(trace):
    r = run(['llvm-xray-16', 'fdr-dump', trace])
    return r.returncode, r.stdout.splitlines(), r.stderr


def yaml_records(trace, extra=()):
    """llvm-xray-16 convert -f yaml: the records, as dicts of strings."""
    r = run(['llvm-xray-16', 'convert', '-f', 'yaml'] + list(extra) + [trace])
    if not check(r.returncode == 0, f'llvm-xray-16 convert {trace}: {r.stderr}'):
        return []
    recs = []
    for line in r.stdout.splitlines():
        line = line.strip()
        if not line.startswith('- {'):
            continue
        fields = dict(re.findall(r"([a-z-]+): ('[^']*'|\[[^\]]*\]|[^,}]+)", line))
        recs.append({k: v.strip() for k, v in fields.items()})
    return recs


def yaml_args(rec):
    a = rec.get('args', '[]').strip('[] ')
    return [int(x) for x in a.split(',') if x.strip()]


def summary(lines):
    m = [re.match(r'^# (\d+) loss(?:es)?, (\d+) bytes skipped$', x) for x in lines]
    m = [x for x in m if x]
    return (int(m[0].group(1)), int(m[0].group(2))) if m else None


def check_fdr(sfprof, trace):
    name = 'fdr'
    rc, llvm, err = fdr_dump(trace)
    if not check(rc == 0, f'{name}: llvm-xray-16 fdr-dump failed: {err}'):
        return
    lines = sfprof_dump(sfprof, trace)
    ours = record_lines(lines)
    check(len(llvm) > 1000, f'{name}: only {len(llvm)} records in the trace')
    check(sum(x.startswith('<Buffer:') for x in llvm) > 2,
          f'{name}: want several buffers, fdr-dump shows '
          f'{sum(x.startswith("<Buffer:") for x in llvm)}')
    check(any('Tail Exit' in x for x in llvm), f'{name}: no tail exit in the trace')
    check(any(x.startswith('<Call Argument') for x in llvm), f'{name}: no call argument')
    if not check(ours == llvm, f'{name}: sfprof and fdr-dump differ'):
        for i, (a, b) in enumerate(zip(ours, llvm)):
            if a != b:
                log(f'  line {i}: sfprof {a!r}\n  line {i}: llvm   {b!r}')
                break
        log(f'  {len(ours)} lines against {len(llvm)}')
    check(summary(lines) == (0, 0), f'{name}: losses reported: {summary(lines)}')
    check(lines and lines[0].startswith('# ') and 'FDR trace version 5, little-endian' in lines[0],
          f'{name}: header line {lines[:1]}')

    # The state sfprof derives, against what llvm-xray's trace expander derives.
    per_thread = defaultdict(list)
    last = None
    for line in sfprof_dump(sfprof, trace, state=True):
        m = FUNC_LINE.match(line)
        if m:
            kind, fid, _, _, tid, pid, cpu, tsc = m.groups()
            last = [KINDS[kind], int(fid), int(tsc), int(cpu), int(pid), []]
            per_thread[int(tid)].append(last)
            continue
        m = ARG_LINE.match(line)
        if m and last is not None:
            last[5].append(int(m.group(1)))
    theirs = defaultdict(list)
    for rec in yaml_records(trace):
        if not rec.get('kind', '').startswith('function-'):
            continue
        theirs[int(rec['thread'])].append([rec['kind'], int(rec['func-id']), int(rec['tsc']),
                                          int(rec['cpu']), int(rec['process']), yaml_args(rec)])
    check(len(per_thread) == 3, f'{name}: {len(per_thread)} threads, expected 3')
    check(sorted(per_thread) == sorted(theirs),
          f'{name}: threads {sorted(per_thread)} against convert\'s {sorted(theirs)}')
    for tid in per_thread:
        # convert orders a thread's buffers by their wall time; compare as sets of records
        a = sorted(per_thread[tid])
        b = sorted(theirs.get(tid, []))
        if not check(a == b, f'{name}: thread {tid}: {len(a)} records differ from convert\'s '
                     f'{len(b)}'):
            diff = [x for x in a if x not in b][:3] + ['/'] + [x for x in b if x not in a][:3]
            log(f'  first differences (sfprof / convert): {diff}')


def check_cut(sfprof, trace, workdir):
    with open(trace, 'rb') as f:
        data = f.read()
    _, full, _ = fdr_dump(trace)
    # offsets of the buffers, from sfprof's --state lines
    starts = [int(m.group(1), 16) for m in
              (re.match(r'^<Buffer: size = \d+ bytes>  @0x([0-9a-f]+) ', x)
               for x in sfprof_dump(sfprof, trace, state=True)) if m]
    if not check(len(starts) >= 3, f'cut: {len(starts)} buffers'):
        return
    for name, at in (('record', starts[2] + 16 * 5 + 3), ('buffer', starts[2])):
        cut = os.path.join(workdir, f'cut-{name}')
        with open(cut, 'wb') as f:
            f.write(data[:at])
        lines = sfprof_dump(sfprof, cut)
        ours = record_lines(lines)
        losses = [x for x in lines if x.startswith('LOSS')]
        rc, llvm, err = fdr_dump(cut)
        if name == 'buffer':
            # a cut between buffers is not damage anyone can see
            check(rc == 0 and ours == llvm and not losses,
                  f'cut between buffers: {len(ours)} records against fdr-dump\'s {len(llvm)} '
                  f'(exit {rc}), losses {losses}')
            continue
        # fdr-dump stops at the cut record; sfprof reports it and ends
        check(rc != 0, f'cut in a record: fdr-dump did not fail')
        check(ours == llvm and ours == full[:len(ours)],
              f'cut in a record: {len(ours)} records against fdr-dump\'s {len(llvm)}')
        check(len(losses) == 1 and losses[0].startswith(f'LOSS at 0x{starts[2] + 16 * 5:x}: 3 bytes'),
              f'cut in a record: losses {losses}')
        check(summary(lines) == (1, 3), f'cut in a record: summary {summary(lines)}')


def check_events(sfprof, trace):
    rc, llvm, err = fdr_dump(trace)
    lines = sfprof_dump(sfprof, trace, state=True)
    ours = record_lines(lines)
    losses = [x for x in lines if x.startswith('LOSS')]
    check(any(x.startswith("<Custom Event: delta = +") and x.endswith(", size = 4, data = 'dump'>")
              for x in ours), 'events: no custom event line')
    m = re.search(r'Invalid offset for a typed event record \((\d+)\)', err)
    if rc == 0:
        check(ours == llvm and not losses and
              any(x.startswith('<Typed Event:') for x in ours),
              'events: fdr-dump read the whole trace, sfprof did not print the same')
        return
    if not check(m is not None, f'events: fdr-dump failed another way: {err}'):
        return
    at = int(m.group(1)) - 1
    check(ours == llvm, f'events: {len(ours)} records against fdr-dump\'s {len(llvm)} before '
          'its error')
    check(len(losses) == 1 and losses[0].startswith(f'LOSS at 0x{at:x}:') and
          'TypedEvent record cut' in losses[0], f'events: losses {losses}, expected one at {at:#x}')
    # nothing after the loss: the cut record was the trace's last
    check(lines.index(losses[0]) == len(lines) - 3 if losses else False,
          'events: records after the loss')


def check_basic(sfprof, trace):
    lines = sfprof_dump(sfprof, trace)
    check(lines and 'basic-mode trace version' in lines[0], f'basic: header line {lines[:1]}')
    ours = []
    for line in lines:
        m = BASIC_FUNC.match(line)
        if m:
            kind, fid, tsc, cpu, tid, pid = m.groups()
            ours.append([KINDS[kind], int(fid), int(tsc), int(cpu), int(tid), int(pid), []])
            continue
        m = BASIC_ARG.match(line)
        if m:
            arg, fid, tid, pid = m.groups()
            check(ours and ours[-1][0] == 'function-enter-arg' and ours[-1][1] == int(fid) and
                  ours[-1][4] == int(tid), f'basic: argument of #{fid} not after its entry')
            if ours:
                ours[-1][6].append(int(arg))
            continue
        check(not line.startswith('<'), f'basic: line not understood: {line}')
    theirs = [[r['kind'], int(r['func-id']), int(r['tsc']), int(r['cpu']), int(r['thread']),
               int(r['process']), yaml_args(r)] for r in yaml_records(trace, ['-sort=false'])]
    check(len(ours) > 100, f'basic: only {len(ours)} records')
    check(any(x[0] == 'function-enter-arg' and x[6] for x in ours), 'basic: no arguments')
    if not check(ours == theirs, f'basic: {len(ours)} records differ from convert\'s {len(theirs)}'):
        for i, (a, b) in enumerate(zip(ours, theirs)):
            if a != b:
                log(f'  record {i}: sfprof {a}\n  record {i}: llvm   {b}')
                break
    check(summary(lines) == (0, 0), f'basic: losses reported: {summary(lines)}')


def check_errors(sfprof, workdir, exe):
    r = run([sfprof, 'xray', 'dump', os.path.join(workdir, 'no-such-trace')])
    check(r.returncode == 1 and not r.stdout and 'No such file' in r.stderr and
          len(r.stderr.splitlines()) == 1, f'missing file: exit {r.returncode}, {r.stderr!r}')
    r = run([sfprof, 'xray', 'dump', exe])
    check(r.returncode == 1 and not r.stdout and 'not an XRay trace' in r.stderr,
          f'an ELF file: exit {r.returncode}, {r.stderr!r}')
    r = run([sfprof, 'xray', 'dump'])
    check(r.returncode == 2 and 'usage' in r.stderr, f'no trace: exit {r.returncode}')
    r = run([sfprof, 'xray', 'dump', '--help'])
    check(r.returncode == 0 and 'usage' in r.stdout, f'--help: exit {r.returncode}')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', required=True, choices=['fdr', 'events', 'basic', 'errors'])
    args = ap.parse_args()
    for tool in ('clang++-16', 'llvm-xray-16'):
        if not shutil.which(tool):
            log(f'SKIP: {tool} not found')
            return SKIP
    os.makedirs(args.workdir, exist_ok=True)
    if args.case == 'fdr':
        exe = build(args.workdir, '-O2')
        trace = make_trace(args.workdir, exe, 'fdr', ['fdr', '4', '2'])
        if trace:
            check_fdr(args.sfprof, trace)
            check_cut(args.sfprof, trace, args.workdir)
    elif args.case == 'events':
        exe = build(args.workdir, '-O0')
        trace = make_trace(args.workdir, exe, 'events', ['events', '1', '1'])
        if trace:
            check_events(args.sfprof, trace)
    elif args.case == 'basic':
        exe = build(args.workdir, '-O2')
        trace = make_trace(args.workdir, exe, 'basic', ['basic', '3', '2'], basic=True)
        if trace:
            check_basic(args.sfprof, trace)
    else:
        exe = build(args.workdir, '-O2')
        check_errors(args.sfprof, args.workdir, exe)
    if failures:
        log(f'{len(failures)} failure(s)')
        return 1
    print('ok')
    return 0


if __name__ == '__main__':
    sys.exit(main())
