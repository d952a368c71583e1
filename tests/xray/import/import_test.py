#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`sfprof import xray` on real XRay FDR traces, checked against llvm-xray-16.

xray_prog.cc is compiled at test time with clang++-16 -fxray-instrument (in
WORKDIR) and run in FDR mode with func_duration_threshold_us=0, one scenario
per run; the trace is imported and what sfprof shows is compared with what
llvm-xray-16 computes from the same trace:

  threads, recursion, tailcalls, exceptions, events, basic (threads in basic mode)
      self time per stack: `sfprof export --format collapsed` (all threads)
      and `sfprof script` (per thread) against `llvm-xray-16 stack -all-stacks
      -stack-format=flame -aggregation-type=time`, whose values are inclusive
      per node, in ticks: self = the node's value minus its children's,
      converted to ns as sfprof does (floor(ticks * 1e9 / frequency), once per
      thread and stack): equal to the nanosecond, at the trace's 1e9 ticks/s and
      (threads) with the header rewritten to 2.4e9. Frames closed per function (--functions)
      against `llvm-xray-16 account -d` (-d: an exception unwinds frames that
      never exit; -d pops down to the matching entry as `stack` does), on the
      single-threaded scenarios: account rejects every record earlier than the
      first one it processed, so on a multi-threaded trace it fails. Entries per
      function and the summary's record counts against the records of
      `llvm-xray-16 convert -f yaml`. `sfprof report` names the functions as
      llvm-xray does (demangled) with shares of time equal to the oracle's.
      Each scenario has its own checks (recursion depth in the stacks, tail
      exits, frames unwound by exceptions, call arguments and custom events).
  pprof
      `go tool pprof -raw` reads sample type and period type wall/nanoseconds
      and sample values summing to the collapsed total; -top says Type: wall.
  errors
      a missing binary, one without xray_instr_map, a file that is not a trace,
      an empty one, a header alone: non-zero exit and no output file (an
      existing one untouched); a cut trace: exit 1, the rest imported, the
      profile marked as stopped by an error.
  instrmap
      `sfprof import xray --map` against `llvm-xray-16 extract` on a PIE, a
      non-PIE, the non-PIE's map rewritten as version 0 sleds (absolute
      addresses), and a hand-made ELF whose version 1 sleds are filled by
      R_X86_64_RELATIVE relocations; damaged maps are refused cleanly.

Comparisons are also run with a deliberately wrong expectation and must fail.
Exit status 0 pass, 1 fail, 77 skip (no clang++-16, llvm-xray-16, XRay runtime
or, for pprof, go).
"""

import argparse
import collections
import glob
import os
import re
import shutil
import struct
import subprocess
import sys

SKIP = 77
SCENARIOS = ('threads', 'recursion', 'tailcalls', 'exceptions', 'events', 'basic')
SINGLE_THREADED = ('recursion', 'tailcalls', 'exceptions', 'events')


class Failure(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def expect(cond, fails, msg):
    if not cond:
        fails.append(msg)


def raise_fails(fails):
    if fails:
        for f in fails[:40]:
            log('FAIL: ' + f)
        raise Failure(f'{len(fails)} check(s) failed')


def must_fail(fails, what):
    if not fails:
        raise Failure(f'a deliberately wrong expectation passed: {what}')
    log(f'negative check: {what}: rejected ({fails[0]})')


def need(tool, why):
    if not shutil.which(tool):
        log(f'SKIP: needs {tool}: {why}')
        sys.exit(SKIP)


def run(cmd, check=True, timeout=120, env=None):
    log('$ ' + ' '.join(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors='replace', timeout=timeout, env=env)
    if check and p.returncode != 0:
        log(p.stderr.strip()[-2000:])
        raise Failure(f'{os.path.basename(cmd[0])} exited with {p.returncode}')
    return p


class Ctx:
    def __init__(self, args):
        self.sfprof = args.sfprof
        self.source = args.source
        self.workdir = args.workdir
        os.makedirs(self.workdir, exist_ok=True)

    def path(self, name):
        return os.path.join(self.workdir, name)


# --- building and tracing ---

def build(ctx, name='prog', flags=()):
    out = ctx.path(name)
    run(['clang++-16', '-O2', '-g', '-fxray-instrument', '-fxray-instruction-threshold=1',
         *flags, ctx.source, '-o', out, '-lpthread'])
    return out


def trace(ctx, prog, scenario):
    """The trace of one run of a scenario; 'basic' is 'threads' in basic mode."""
    base = ctx.path(f'trace-{scenario}.')
    for old in glob.glob(base + '*'):
        os.unlink(old)
    env = dict(os.environ, XRAY_OPTIONS=f'patch_premain=false xray_logfile_base={base}')
    run([prog, 'threads', 'basic'] if scenario == 'basic' else [prog, scenario], env=env,
        timeout=60)
    files = glob.glob(base + '*')
    if len(files) != 1:
        raise Failure(f'{scenario}: expected one trace file, found {files}')
    return files[0]


def sfprof(ctx, args, check=True):
    return run([ctx.sfprof, *args], check=check, timeout=120)


def import_trace(ctx, prog, tr, out):
    p = sfprof(ctx, ['import', 'xray', '-m', prog, '-o', out, '--functions', tr])
    log(p.stderr.rstrip())
    return parse_summary(p.stderr), parse_functions(p.stdout)


def parse_summary(text):
    s = {}
    m = re.search(r'XRay (FDR|basic mode) version (\d+), (\d+) ticks/s', text)
    if m:
        s['format'], s['version'], s['freq'] = m.group(1), int(m.group(2)), int(m.group(3))
    for key, pat in (('threads', r'^\s+threads\s+(\d+)'),
                     ('unmatched', r'^\s+unmatched exits\s+(\d+)'),
                     ('unwound', r'^\s+unwound frames\s+(\d+)'),
                     ('call_args', r'^\s+call arguments\s+(\d+)'),
                     ('custom', r'^\s+custom events\s+(\d+)'),
                     ('typed', r'^\s+typed events\s+(\d+)'),
                     ('lost', r'^\s+lost\s+(\d+) bytes')):
        m = re.search(pat, text, re.M)
        if m:
            s[key] = int(m.group(1))
    m = re.search(r'^\s+records\s+(\d+) \((\d+) function: (\d+) entries, (\d+) with arguments, '
                  r'(\d+) exits, (\d+) tail exits\)', text, re.M)
    if m:
        (s['records'], s['function_records'], s['enters'], s['enters_args'], s['exits'],
         s['tail_exits']) = map(int, m.groups())
    return s


def parse_functions(text):
    funcs = {}
    for line in text.splitlines():
        if line.startswith('#') or not line.strip():
            continue
        fid, entries, closed, addr = line.split()
        funcs[int(fid)] = (int(entries), int(closed), int(addr, 16))
    return funcs


# --- what llvm-xray says ---

def norm(name):
    # libiberty's demangler writes "> >" where llvm's writes ">>"
    while '> >' in name:
        name = name.replace('> >', '>>')
    return name


def llvm_flame(prog, tr):
    """{(tid, frames root first): inclusive ticks} of `llvm-xray-16 stack`."""
    p = run(['llvm-xray-16', 'stack', '-m', prog, '-all-stacks', '-stack-format=flame',
             '-aggregation-type=time', tr])
    incl = collections.Counter()
    for line in p.stdout.splitlines():
        path, value = line.rsplit(' ', 1)
        frames = path.rstrip(';').split(';')
        tid = int(frames[0][len('thread_'):])
        incl[(tid, tuple(norm(f) for f in frames[1:]))] += int(value)
    return incl


def self_of(incl):
    """Self ticks per (tid, stack): a node's inclusive value minus its children's."""
    children = collections.Counter()
    for (tid, frames), value in incl.items():
        if len(frames) > 1:
            children[(tid, frames[:-1])] += value
    return {k: v - children[k] for k, v in incl.items()}


def ns(ticks, freq):
    return ticks * 10**9 // freq


def llvm_records(prog, tr):
    """The records `llvm-xray-16 convert -f yaml` decodes, and the header's frequency."""
    p = run(['llvm-xray-16', 'convert', '-m', prog, '-f', 'yaml', tr])
    freq = int(re.search(r'cycle-frequency:\s+(\d+)', p.stdout).group(1))
    kinds = collections.Counter()
    enters = collections.Counter()
    threads = set()
    for m in re.finditer(r'func-id: (-?\d+),.*?thread: (\d+),.*?kind: ([a-z-]+),', p.stdout):
        fid, tid, kind = int(m.group(1)), int(m.group(2)), m.group(3)
        kinds[kind] += 1
        threads.add(tid)
        if kind in ('function-enter', 'function-enter-arg'):
            enters[fid] += 1
    return freq, kinds, enters, threads


def llvm_account(prog, tr):
    """{funcid: count} of `llvm-xray-16 account -d`, or None when it refuses the trace."""
    p = run(['llvm-xray-16', 'account', '-d', '-m', prog, tr], check=False)
    if p.returncode != 0:
        log('account: ' + p.stderr.strip().splitlines()[-1])
        return None
    counts = {}
    for line in p.stdout.splitlines()[2:]:
        fields = line.split()
        if len(fields) > 2 and fields[0].isdigit():
            counts[int(fields[0])] = int(fields[1])
    return counts


def llvm_names(prog):
    """{id: name} of `llvm-xray-16 extract -s`."""
    p = run(['llvm-xray-16', 'extract', '-s', prog])
    names = {}
    for m in re.finditer(r"id: (\d+), .*?function-name: '(.*?)', version", p.stdout):
        names.setdefault(int(m.group(1)), norm(m.group(2)))
    return names


# --- what sfprof says ---

def collapsed(ctx, prof):
    """{frames below the process name: ns} of `sfprof export --format collapsed`."""
    out = collections.Counter()
    for line in sfprof(ctx, ['export', '-i', prof, '-f', 'collapsed']).stdout.splitlines():
        path, value = line.rsplit(' ', 1)
        out[tuple(norm(f) for f in path.split(';')[1:])] += int(value)
    return out


SCRIPT_HEAD = re.compile(r'^\S.* +(\d+)/(\d+) +\[\d+\] +[\d.]+: +(\d+) (\S+): $')


def script(ctx, prof):
    """{(tid, frames root first): ns} of `sfprof script`, and the event names it printed."""
    out, events = collections.Counter(), set()
    block = None
    for line in sfprof(ctx, ['script', '-i', prof]).stdout.splitlines() + ['']:
        m = SCRIPT_HEAD.match(line)
        if m:
            block = (int(m.group(2)), int(m.group(3)), [])
            events.add(m.group(4))
        elif line.startswith('\t') and block:
            _, rest = line.strip().split(' ', 1)
            name = rest.rsplit(' (', 1)[0].rsplit('+0x', 1)[0]
            block[2].append(norm(name))
        elif not line and block:
            out[(block[0], tuple(reversed(block[2])))] += block[1]
            block = None
    return out, events


def report(ctx, prof):
    """(header text, {symbol: self %}) of `sfprof report --sort sym`."""
    text = sfprof(ctx, ['report', '-i', prof, '--sort', 'sym']).stdout
    rows = {}
    for line in text.splitlines():
        m = re.match(r'^\s+([\d.]+)%\s+\[\.\] (.+)$', line)
        if m:
            rows[norm(m.group(2).rstrip())] = float(m.group(1))
    return text, rows


# --- comparisons ---

def compare(what, got, want):
    fails = []
    for k in sorted(set(got) | set(want), key=str):
        if got.get(k, 0) != want.get(k, 0):
            fails.append(f'{what} {k}: sfprof {got.get(k, 0)}, llvm-xray {want.get(k, 0)}')
    return fails


def check_self(ctx, prog, tr, prof, freq):
    """Self ns per (thread, stack) from `sfprof script` and per stack from `export
    --format collapsed`, against llvm-xray stack's ticks made self and converted as sfprof
    converts them: floor(ticks * 1e9 / frequency) once per stack and thread, so that the
    two are equal to the ns; the collapsed stacks sum the threads' rounded values."""
    flame = self_of(llvm_flame(prog, tr))
    want_thread = {k: ns(v, freq) for k, v in flame.items() if ns(v, freq)}
    want_all = collections.Counter()
    for (tid, frames), v in want_thread.items():
        want_all[frames] += v
    got_thread, events = script(ctx, prof)
    got_all = collapsed(ctx, prof)
    fails = compare('self ns of thread, stack', dict(got_thread), want_thread)
    fails += compare('self ns of stack', dict(got_all), dict(want_all))
    expect(events == {'wall-time'}, fails, f'script events {events}, not wall-time')
    log(f'{len(want_thread)} (thread, stack) pairs at {freq} ticks/s: self time equal to '
        'llvm-xray stack\'s')
    return fails, want_thread, want_all, got_all


def case_scenario(ctx, scenario):
    prog = build(ctx)
    tr = trace(ctx, prog, scenario)
    prof = ctx.path(f'{scenario}.data')
    summary, funcs = import_trace(ctx, prog, tr, prof)
    freq, kinds, enters, threads = llvm_records(prog, tr)
    fails = []

    # the records, as llvm-xray decodes them
    expect(summary.get('freq') == freq, fails, f'frequency {summary.get("freq")}, llvm {freq}')
    expect(summary.get('threads') == len(threads), fails,
           f'{summary.get("threads")} threads, llvm-xray sees {len(threads)}')
    for key, kind in (('enters', 'function-enter'), ('enters_args', 'function-enter-arg'),
                      ('exits', 'function-exit'), ('tail_exits', 'function-tail-exit'),
                      ('custom', 'custom-event')):
        expect(summary.get(key) == kinds[kind], fails,
               f'{key}: {summary.get(key)} in the summary, {kinds[kind]} {kind} records')
    expect(summary.get('unmatched') == 0, fails, f'{summary.get("unmatched")} unmatched exits')
    expect(summary.get('lost') == 0, fails, f'{summary.get("lost")} bytes lost')
    fails += compare('entries of function', {k: v[0] for k, v in funcs.items()}, dict(enters))

    # calls per function, as llvm-xray account counts them
    account = llvm_account(prog, tr)
    closed = {k: v[1] for k, v in funcs.items()}
    if account is not None:
        fails += compare('calls (account -d count) of function', closed, account)
        log(f'account -d: {len(account)} functions, counts equal')
    else:
        expect(scenario not in SINGLE_THREADED, fails, 'llvm-xray account refused the trace')

    # self time per stack, per thread (script) and over all threads (collapsed)
    more, want_thread, want_all, got_all = check_self(ctx, prog, tr, prof, freq)
    fails += more
    total = sum(want_all.values())
    expect(total > 0, fails, 'no self time at all')

    # report: names as llvm-xray's, shares of time
    head, rows = report(ctx, prof)
    expect(f"of event 'wall-time'" in head, fails, 'report: event is not wall-time')
    m = re.search(r'^# Event count: (\d+) ns', head, re.M)
    expect(m and int(m.group(1)) == total, fails,
           f'report: event count {m and m.group(1)}, {total} ns of self time')
    leaf_self = collections.Counter()
    for frames, v in want_all.items():
        leaf_self[frames[-1]] += v
    names = set(llvm_names(prog).values())
    for sym, pct in rows.items():
        expect(sym in names, fails, f'report: {sym!r} is no function llvm-xray names')
    for sym, v in leaf_self.items():
        want = 100.0 * v / total
        if want >= 0.01:
            expect(abs(rows.get(sym, 0.0) - want) <= 0.0051, fails,
                   f'report: {sym} {rows.get(sym, 0.0):.2f}%, llvm-xray {want:.4f}%')

    # what each scenario is about
    stacks = set(want_all)
    if scenario == 'recursion':
        expect(any(f.count('work::recurse(int)') == 9 for f in stacks), fails,
               'no stack with work::recurse(int) 9 deep')
        expect(any(f.count('work::ping(int)') >= 4 and f.count('work::pong(int)') >= 4
                   for f in stacks), fails, 'no stack of ping/pong mutual recursion')
    elif scenario == 'tailcalls':
        expect(summary.get('tail_exits', 0) >= 500, fails,
               f'{summary.get("tail_exits")} tail exits, the program makes 1000 tail calls')
        expect(('work::tail_target(int)',) in stacks, fails,
               'work::tail_target(int) never a root: its callers left by tail calls')
    elif scenario == 'exceptions':
        expect(summary.get('unwound', 0) > 0, fails, 'no frame unwound by an exception')
        expect(any(f[-2:] == ('work::middle(int)', 'work::thrower(int)') for f in stacks),
               fails, 'no stack of thrower under middle')
    elif scenario in ('threads', 'basic'):
        expect(len(threads) == 4, fails, f'{len(threads)} threads traced, the program runs 4')
        expect(summary.get('format') == ('basic mode' if scenario == 'basic' else 'FDR'), fails,
               f'read as {summary.get("format")}')
    elif scenario == 'events':
        expect(summary.get('enters_args') == 200 and summary.get('call_args') == 200, fails,
               f'{summary.get("enters_args")} entries with arguments, '
               f'{summary.get("call_args")} call arguments: 200 each')
        expect(summary.get('custom') == 200, fails, f'{summary.get("custom")} custom events')
    if scenario == 'threads':
        # the same trace at another frequency: each stack of each thread rounds down once
        slow = ctx.path('trace-2.4GHz')
        with open(tr, 'rb') as f:
            data = bytearray(f.read())
        struct.pack_into('<Q', data, 8, 2400000000)
        with open(slow, 'wb') as f:
            f.write(data)
        sfprof(ctx, ['import', 'xray', '-m', prog, '-o', ctx.path('slow.data'), slow])
        more, _, slow_all, _ = check_self(ctx, prog, slow, ctx.path('slow.data'), 2400000000)
        fails += more
        expect(sum(slow_all.values()) < total, fails, '2.4 GHz: not less time than at 1 GHz')
    if scenario == 'tailcalls':
        # two traces in one profile: each trace's stacks, summed
        other = trace(ctx, prog, 'recursion')
        both = ctx.path('both.data')
        p = sfprof(ctx, ['import', 'xray', '-m', prog, '-o', both, tr, other])
        expect(len(re.findall(r'XRay FDR version', p.stderr)) == 2, fails, 'not two summaries')
        sfprof(ctx, ['import', 'xray', '-m', prog, '-o', ctx.path('other.data'), other])
        want = collapsed(ctx, prof) + collapsed(ctx, ctx.path('other.data'))
        fails += compare('two traces: self ns of stack', dict(collapsed(ctx, both)), dict(want))
    raise_fails(fails)

    # wrong on purpose
    some = max(want_all, key=want_all.get)
    bad = dict(want_all)
    bad[some] += 1
    must_fail(compare('self ns of stack', dict(got_all), bad), f'{some[-1]} one ns more')
    bad = dict(want_all)
    bad[some + ('nosuch()',)] = 1
    must_fail(compare('self ns of stack', dict(got_all), bad), 'a stack llvm-xray never saw')
    bad = {k: v for k, v in enters.items()}
    bad[next(iter(bad))] += 1
    must_fail(compare('entries', {k: v[0] for k, v in funcs.items()}, bad), 'one entry more')


def case_pprof(ctx):
    need('go', 'go tool pprof is the oracle')
    prog = build(ctx)
    tr = trace(ctx, prog, 'threads')
    prof = ctx.path('threads.data')
    import_trace(ctx, prog, tr, prof)
    total = sum(collapsed(ctx, prof).values())
    out = ctx.path('threads.pb.gz')
    sfprof(ctx, ['export', '-i', prof, '-f', 'pprof', '-o', out])
    home = ctx.path('gohome')
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ, HOME=home, GOCACHE=os.path.join(home, 'cache'), GOTOOLCHAIN='local',
               GOFLAGS='-mod=mod', PPROF_TMPDIR=os.path.join(home, 'pprof'),
               PPROF_BINARY_PATH=home)
    fails = []

    def pprof(args):
        p = run(['go', 'tool', 'pprof', *args, out], env=env, timeout=300)
        expect(not p.stderr.strip(), fails, f'go tool pprof complains: {p.stderr.strip()[:200]}')
        return p.stdout

    raw = pprof(['-raw'])
    top = pprof(['-top', '-nodecount=1000', '-nodefraction=0'])
    log('\n'.join(top.splitlines()[:12]))
    fails += check_pprof(raw, top, total)
    raise_fails(fails)
    log(f'pprof: wall/nanoseconds, sample values summing to {total} ns')
    must_fail(check_pprof(raw, top, total + 1), 'a total one ns more')
    must_fail(check_pprof(raw.replace('wall', 'cpu'), top, total), 'cpu as the sample type')


def check_pprof(raw, top, total):
    fails = []
    expect('PeriodType: wall nanoseconds' in raw, fails, '-raw: period type not wall nanoseconds')
    expect(re.search(r'^Period: 1$', raw, re.M), fails, '-raw: period not 1')
    m = re.search(r'^Samples:\n(.*)$', raw, re.M)
    expect(m and m.group(1).split() == ['wall/nanoseconds'], fails,
           f'-raw: sample types {m and m.group(1)!r}, not wall/nanoseconds')
    values = [int(v) for v in re.findall(r'^\s+(\d+): [\d ]+$', raw, re.M)]
    expect(sum(values) == total, fails,
           f'-raw: sample values sum to {sum(values)}, collapsed to {total} ns')
    expect(re.search(r'^Type: wall$', top, re.M), fails, '-top: Type is not wall')
    # pprof shortens C++ names to their qualified name, without parameters
    expect(re.search(r'\s work::leaf$', top, re.M) and re.search(r'\s spin\(int\)$', top, re.M),
           fails, '-top: functions not named')
    return fails


def case_errors(ctx):
    prog = build(ctx)
    tr = trace(ctx, prog, 'recursion')
    out = ctx.path('out.data')
    fails = []

    def fails_cleanly(what, args, words, status=None):
        mine = []
        for f in (out, out + '.old'):
            if os.path.exists(f):
                os.unlink(f)
        with open(out, 'w') as f:
            f.write('keep me\n')
        p = sfprof(ctx, ['import', 'xray', *args], check=False)
        log(p.stderr.strip())
        if status is None:
            expect(p.returncode not in (0, 2) and p.returncode > 0, mine,
                   f'{what}: exit status {p.returncode}')
        else:
            expect(p.returncode == status, mine, f'{what}: exit status {p.returncode}, not {status}')
        expect(re.search(words, p.stderr), mine, f'{what}: no message matching {words!r}')
        with open(out, 'rb') as f:
            expect(f.read() == b'keep me\n', mine, f'{what}: the existing output was touched')
        expect(not os.path.exists(out + '.old'), mine, f'{what}: {out}.old appeared')
        return mine

    def copy_cut(name, size):
        dst = ctx.path(name)
        with open(tr, 'rb') as f, open(dst, 'wb') as g:
            g.write(f.read()[:size])
        return dst

    notrace = ctx.path('notes.txt')
    with open(notrace, 'w') as f:
        f.write('this is not an XRay trace, just some text long enough to have a header\n' * 3)
    empty = ctx.path('empty.trace')
    open(empty, 'w').close()
    plain = ctx.path('plain')
    with open(ctx.path('plain.c'), 'w') as f:
        f.write('int main(void) { return 0; }\n')
    run(['clang-16', '-O2', ctx.path('plain.c'), '-o', plain])

    fails += fails_cleanly('missing binary', ['-m', ctx.path('nosuch'), '-o', out, tr],
                           r'nosuch: No such file')
    fails += fails_cleanly('binary without instrumentation', ['-m', plain, '-o', out, tr],
                  r'no xray_instr_map section')
    fails += fails_cleanly('not an ELF file', ['-m', notrace, '-o', out, tr], r'not an ELF file')
    fails += fails_cleanly('missing trace', ['-m', prog, '-o', out, ctx.path('nosuch.trace')],
                  r'No such file')
    fails += fails_cleanly('text as a trace', ['-m', prog, '-o', out, notrace],
                           r'not a usable XRay trace')
    fails += fails_cleanly('binary as a trace', ['-m', prog, '-o', out, prog],
                           r'not a usable XRay trace')
    fails += fails_cleanly('empty trace', ['-m', prog, '-o', out, empty], r'empty file')
    fails += fails_cleanly('directory as a trace', ['-m', prog, '-o', out, ctx.workdir],
                  r'not a regular file')
    fails += fails_cleanly('header alone', ['-m', prog, '-o', out, copy_cut('header.trace', 32)],
                  r'no function records')
    fails += fails_cleanly('good and bad traces', ['-m', prog, '-o', out, tr, notrace],
                  r'not a usable XRay trace')
    fails += fails_cleanly('no binary', ['-o', out, tr], r'-m BINARY', status=2)
    fails += fails_cleanly('no trace', ['-m', prog, '-o', out], r'no trace', status=2)
    p = sfprof(ctx, ['import', 'perf', 'x'], check=False)
    expect(p.returncode == 2 and 'unknown format' in p.stderr, fails, 'import perf: not refused')

    # a trace cut in the middle of a buffer: what was read is imported, marked incomplete
    os.unlink(out)
    cut = copy_cut('cut.trace', os.path.getsize(tr) * 2 // 3 + 5)
    p = sfprof(ctx, ['import', 'xray', '-m', prog, '-o', out, cut], check=False)
    log(p.stderr.strip())
    expect(p.returncode == 1, fails, f'cut trace: exit status {p.returncode}, not 1')
    expect(re.search(r'cut\.trace: offset \d+ \(0x[0-9a-f]+\): \d+ bytes lost', p.stderr), fails,
           'cut trace: the loss and its offset not reported')
    expect(os.path.exists(out), fails, 'cut trace: nothing imported')
    if os.path.exists(out):
        r = sfprof(ctx, ['report', '-i', out], check=False)
        expect(r.returncode == 0 and 'stopped early on an error' in r.stderr, fails,
               'cut trace: the profile does not say it is incomplete')
        expect('work::recurse(int)' in r.stdout, fails, 'cut trace: what was read is not there')
    raise_fails(fails)
    must_fail(fails_cleanly('a good import', ['-m', prog, '-o', out, tr], r'wrote'),
              'a good import taken for a failure')


# --- instrumentation maps ---

def llvm_extract(path):
    """The sleds' function addresses in order, and {address: id} as `llvm-xray-16 extract`
    prints them (the last id given to an address, from its reverse map)."""
    p = run(['llvm-xray-16', 'extract', path])
    funcs, ids = [], {}
    for m in re.finditer(r'id: (\d+), address: 0x([0-9A-F]+), function: 0x([0-9A-F]+)', p.stdout):
        funcs.append(int(m.group(3), 16))
        ids[int(m.group(3), 16)] = int(m.group(1))
    return funcs, ids


def number(funcs):
    """{id: address}: a new id each time the sleds' function changes (compiler-rt's rule)."""
    ids, fid, cur = {}, 0, None
    for f in funcs:
        if f != cur:
            fid += 1
            cur = f
            ids[fid] = f
    return ids


def check_map(name, got, funcs, last_ids):
    fails = compare(f'{name}: address of function', got, number(funcs))
    last = {}
    for fid, addr in sorted(got.items()):
        last[addr] = fid
    fails += compare(f'{name}: last id of address', last, last_ids)
    return fails


def sfprof_map(ctx, path):
    p = sfprof(ctx, ['import', 'xray', '-m', path, '--map'])
    ids = {}
    for line in p.stdout.splitlines():
        fid, addr = line.split()
        ids[int(fid)] = int(addr, 16)
    return ids


def elf_sections(data):
    """{name: (offset, size, addr)} of a little-endian ELF64 file."""
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3a)
    heads = [struct.unpack_from('<IIQQQQIIQQ', data, shoff + i * shentsize) for i in range(shnum)]
    stroff = heads[shstrndx][4]
    out = {}
    for h in heads:
        end = data.index(b'\0', stroff + h[0])
        out[data[stroff + h[0]:end].decode()] = (h[4], h[5], h[3])
    return out


def rewrite_v0(src, dst):
    """The map of @src with every sled as version 0: absolute addresses."""
    data = bytearray(open(src, 'rb').read())
    off, size, addr = elf_sections(bytes(data))['xray_instr_map']
    for pos in range(0, size, 32):
        a, f = struct.unpack_from('<QQ', data, off + pos)
        if data[off + pos + 18] >= 2:
            a = (a + addr + pos) % 2**64
            f = (f + addr + pos + 8) % 2**64
        struct.pack_into('<QQ', data, off + pos, a, f)
        data[off + pos + 18] = 0
    open(dst, 'wb').write(data)


def synthetic_pie(dst, funcs, sec_addr=0x3000):
    """A small ET_DYN x86-64 ELF: xray_instr_map of version 1 sleds with zero fields, an
    R_X86_64_RELATIVE relocation (.rela.dyn) for each, entry and exit sleds per function."""
    sleds = b''
    relas = b''
    for i, fn in enumerate(funcs):
        for kind in (0, 1):
            pos = len(sleds)
            sleds += struct.pack('<QQBBB13x', 0, 0, kind, 0, 1)
            relas += struct.pack('<QQq', sec_addr + pos, 8, fn + 0x10 * kind)
            relas += struct.pack('<QQq', sec_addr + pos + 8, 8, fn)
    shstr = b'\0xray_instr_map\0.rela.dyn\0.shstrtab\0'
    ehsize, shentsize = 64, 64
    off_sleds = ehsize
    off_rela = off_sleds + len(sleds)
    off_str = off_rela + len(relas)
    shoff = (off_str + len(shstr) + 7) & ~7
    eh = struct.pack('<16sHHIQQQIHHHHHH', b'\x7fELF\x02\x01\x01' + b'\0' * 9, 3, 62, 1, 0, 0,
                     shoff, 0, ehsize, 0, 0, shentsize, 4, 3)

    def sh(name, typ, flags, addr, off, size, link=0, info=0, align=1, entsize=0):
        return struct.pack('<IIQQQQIIQQ', name, typ, flags, addr, off, size, link, info, align,
                           entsize)
    shdrs = (sh(0, 0, 0, 0, 0, 0) +
             sh(1, 1, 0x82, sec_addr, off_sleds, len(sleds)) +
             sh(16, 4, 2, 0, off_rela, len(relas), align=8, entsize=24) +
             sh(26, 3, 0, 0, off_str, len(shstr)))
    data = eh + sleds + relas + shstr
    data += b'\0' * (shoff - len(data)) + shdrs
    open(dst, 'wb').write(data)


def case_instrmap(ctx):
    fails = []
    pie = build(ctx, 'prog-pie', ['-fPIE', '-pie'])
    nopie = build(ctx, 'prog-nopie', ['-fno-pie', '-no-pie'])
    v0 = ctx.path('prog-v0')
    rewrite_v0(nopie, v0)
    synth = ctx.path('synthetic.so')
    synthetic_pie(synth, [0x1000, 0x1040, 0x1040, 0x1100, 0x1000])
    for path in (pie, nopie, v0, synth):
        funcs, last_ids = llvm_extract(path)
        got = sfprof_map(ctx, path)
        fails += check_map(os.path.basename(path), got, funcs, last_ids)
        expect(len(got) >= 4, fails, f'{path}: only {len(got)} functions')
        log(f'{os.path.basename(path)}: {len(got)} function ids for {len(funcs)} sleds, as '
            'llvm-xray extract has them')
    # the sled versions differ but the functions are the same
    expect(sfprof_map(ctx, v0) == sfprof_map(ctx, nopie), fails, 'version 0 map differs from v2')

    # damaged maps are refused, not read past
    data = open(pie, 'rb').read()
    off, size, _ = elf_sections(data)['xray_instr_map']
    odd = ctx.path('odd-size')
    with open(odd, 'wb') as f:
        shoff, = struct.unpack_from('<Q', data, 0x28)
        d = bytearray(data)
        for i in range(struct.unpack_from('<H', data, 0x3c)[0]):
            h = shoff + i * 64
            if struct.unpack_from('<Q', d, h + 24)[0] == off:
                struct.pack_into('<Q', d, h + 32, size - 8)
        f.write(d)
    cut = ctx.path('cut-binary')
    with open(cut, 'wb') as f:
        f.write(data[:off + size // 2])
    for path, words in ((odd, 'not a whole number'), (cut, r'xray_instr_map|not an ELF|ELF')):
        p = sfprof(ctx, ['import', 'xray', '-m', path, '--map'], check=False)
        log(p.stderr.strip())
        expect(p.returncode == 1 and re.search(words, p.stderr), fails,
               f'{os.path.basename(path)}: exit {p.returncode}, {p.stderr.strip()!r}')
    raise_fails(fails)
    funcs, last_ids = llvm_extract(synth)
    got = sfprof_map(ctx, synth)
    bad = dict(got)
    bad[2] += 4
    must_fail(check_map('synthetic', bad, funcs, last_ids), 'a function moved by 4 bytes')
    bad = dict(got)
    bad[5] = 0x1200
    must_fail(check_map('synthetic', bad, funcs, last_ids), 'one function more')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--source', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', required=True,
                    choices=SCENARIOS + ('pprof', 'errors', 'instrmap'))
    args = ap.parse_args()
    need('clang++-16', 'it builds the XRay-instrumented program (setup: clang-16)')
    need('llvm-xray-16', 'llvm-xray-16 is the oracle (setup: llvm-16)')
    rt = glob.glob('/usr/lib/llvm-16/lib/clang/16/lib/linux/libclang_rt.xray-fdr-*.a')
    if not rt:
        log('SKIP: needs the XRay FDR runtime (setup: libclang-rt-16-dev)')
        return SKIP
    ctx = Ctx(args)
    try:
        if args.case in SCENARIOS:
            case_scenario(ctx, args.case)
        else:
            {'pprof': case_pprof, 'errors': case_errors, 'instrmap': case_instrmap}[args.case](ctx)
    except (Failure, subprocess.TimeoutExpired) as e:
        log(f'FAIL: {e}')
        return 1
    log('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main())
