#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`sfprof record -e / -c / -t / --call-graph / --off-cpu` with the real BPF sampler.

Each --case records tests/progs/events_prog.c (compiled at test time, -O2
-fomit-frame-pointer -Wa,--gsframe unless said) and reads the profile back
through `sfprof dump` (profile_oracle.py: readelf, nm):

  tracepoint  `-e syscalls:sys_enter_write -c 1` on a program making exactly N
              write(2) calls from ev_do_write <- ev_write_loop <- ev_outer <-
              main: N samples of that event with that chain, and perf stat of
              the same tracepoint counts N too; `-c 7` on 7N writes: N samples
              each weighing 7, the event record's period 7.
  faults      `-e page-faults -c 1` (and `-e faults -c 10`) on N first touches
              of fresh pages in fault_touch: N samples in fault_touch (chain to
              main), and the process's samples are what `perf stat -e
              page-faults` counts (within 1%: sfprof's start at the fork, perf's
              at the exec); their weights add up to N with -c 10; `-e cs -c 1` on the
              off-CPU program: one sample per sleep of thread A in off_a_sleep
              (two more at most: a preemption there).
  default     without -e the file holds no event record and samples name no
              event (files as before -e); with -e cpu-clock,page-faults both
              records, in that order, each sample naming one of them.
  tid         `-t TID` of one of two spinning threads: every sample is that
              thread's, in spin_x; none of the other thread's.
  callgraph   a chain fp_leaf <- fp_mid <- fp_outer <- main built without frame
              pointers: >= 99% of the fp_leaf samples have the whole chain by
              default (sframe), < 50% with --call-graph fp; built with
              -fno-omit-frame-pointer: >= 99% both ways. -g is accepted.
  errors      bad event names, tracepoints that do not exist, modifiers,
              --call-graph lbr and nonsense, -c 0, -c with -F, -t of no
              thread, and a hardware event where perf stat says the machine has
              no PMU: `sfprof record: ...` on stderr, a non-zero exit, no file.
  offcpu      `--off-cpu` on a program whose thread A sleeps 50 ms at a time in
              off_a_sleep and thread B waits on a pipe fed every 20 ms in
              off_b_wait: the offcpu-time weights of each chain are within 5% of
              the time the program measured around its blocking calls; their
              off-CPU kernel stacks go through schedule(); `perf sched timehist`
              (perf recording sched tracepoints system-wide at the same time)
              sees the same blocks, one less at most (a thread's last), and its
              times are logged beside (perf 6.1 counts some late wake-ups
              several ms long); bcc's offcputime beside where it can run (it
              needs kernel headers: here it cannot, and says so).
              The cpu-clock samples of thread C spinning in on_cpu_spin are in
              the same file. With --off-cpu-thresh 100 the 50 ms blocks are not
              recorded, and the checks then fail.

Every check is also run with a wrong expectation and must then fail.
Exit status 0 pass, 1 fail, 77 skip (not root, no BTF, no gas --gsframe).
"""

import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_oracle  # noqa: E402
from record_test import (Failure, TooFewMsg, case_main, expect, log, must_fail,  # noqa: E402
                         quote, raise_fails, run)

CFLAGS = ['-O2', '-Wa,--gsframe', '-Wall', '-Wextra', '-pthread']
NOFP = ['-fomit-frame-pointer']
FP = ['-fno-omit-frame-pointer']

WRITE_CHAIN = ['ev_do_write', 'ev_write_loop', 'ev_outer', 'main']
FAULT_CHAIN = ['fault_touch', 'fault_outer', 'main']
FP_CHAIN = ['fp_leaf', 'fp_mid', 'fp_outer', 'main']
PROG = 'events_prog.c'


def build(ctx, name, flags):
    out = ctx.path(name)
    run(['gcc', *CFLAGS, *flags, '-o', out, os.path.join(ctx.progs, PROG)])
    return out


def load(ctx, path):
    prof = ctx.load(path)
    log(f'{path}: {len(prof.samples)} samples, events {list(prof.events.values())}')
    return prof


def program_chain(ctx, sample, exe):
    """The frames of @sample inside @exe, from the first one in it outwards (names)."""
    frames = ctx.syms.user_frames(sample)
    i = 0
    while i < len(frames) and frames[i].module != exe:
        i += 1
    out = []
    while i < len(frames) and frames[i].module == exe:
        out.append(frames[i].symbol or '??')
        i += 1
    return out


def chains_of(ctx, samples, exe):
    return Counter(tuple(program_chain(ctx, s, exe)) for s in samples)


def event_id(prof, name):
    ids = [e.id for e in prof.events.values() if e.name == name]
    if len(ids) != 1:
        raise Failure(f'{len(ids)} event records named {name!r}, want 1')
    return ids[0]


def record_ok(ctx, args, out, timeout=120):
    p = ctx.record(args, out, timeout=timeout)
    if p.returncode != 0:
        raise Failure(f'sfprof record exited with {p.returncode}')
    return p


# --- perf as the oracle ---

def perf_stat(ctx, event, cmd):
    """How many @event perf stat counts while @cmd runs (from its exec). perf record
    cannot be the oracle here: Debian's perf 6.1 dies reading this kernel's MMAP2
    records (an assertion in util/build-id.c, then a smashed stack)."""
    p = run(['perf', 'stat', '-x,', '-e', event, '--', *cmd])
    for line in p.stderr.splitlines():
        f = line.split(',')
        if len(f) > 2 and f[2] == event and f[0].isdigit():
            log(f'perf stat: {f[0]} {event}')
            return int(f[0])
    raise Failure(f'perf stat printed no count of {event}')


# --- cases ---

def case_tracepoint(ctx):
    exe = build(ctx, 'ev', NOFP)
    n = 500
    fails = []
    out = ctx.path('tp.data')
    record_ok(ctx, ['-e', 'syscalls:sys_enter_write', '-c', '1', '--', exe, 'writes', str(n)],
              out)
    prof = load(ctx, out)
    eid = event_id(prof, 'syscalls:sys_enter_write')
    ev = prof.events[eid]
    tp_id = int(open('/sys/kernel/tracing/events/syscalls/sys_enter_write/id').read())
    expect(ev.type == 2 and ev.config == tp_id and ev.period == 1, fails,
           f'event record {ev.type}/{ev.config}/{ev.period}, want tracepoint {tp_id} period 1')
    mine = [s for s in prof.samples if s.event == eid]
    chains = chains_of(ctx, mine, exe)
    log(f'chains: {chains.most_common(3)}')

    def check(samples, chains, want_n, chain):
        f = []
        expect(len(samples) == want_n, f, f'{len(samples)} samples of the tracepoint, want {want_n}')
        expect(chains[tuple(chain)] == want_n, f,
               f'{chains[tuple(chain)]} with the chain {chain}, want {want_n}')
        return f
    fails += check(mine, chains, n, WRITE_CHAIN)
    must_fail(check(mine, chains, n, ['ev_do_write', 'ev_outer', 'main']), 'a frame left out')
    must_fail(check(mine, chains, n + 1, WRITE_CHAIN), 'one write more')
    perf_n = perf_stat(ctx, 'syscalls:sys_enter_write', [exe, 'writes', str(n)])
    expect(perf_n == len(mine), fails, f'perf stat counts {perf_n}, sfprof {len(mine)} samples')

    # -c 7: a sample every 7 hits, each weighing 7
    out = ctx.path('tp7.data')
    record_ok(ctx, ['-e', 'syscalls:sys_enter_write', '-c', '7', '--', exe, 'writes', str(7 * 60)],
              out)
    prof = load(ctx, out)
    eid = event_id(prof, 'syscalls:sys_enter_write')
    mine = [s for s in prof.samples if s.event == eid]
    weights = Counter(s.weight for s in mine)
    log(f'-c 7: {len(mine)} samples, weights {dict(weights)}')
    # the period is counted per CPU: a migration may leave up to 6 hits on each CPU
    expect(prof.events[eid].period == 7, fails, f'period {prof.events[eid].period}, want 7')
    expect(set(weights) == {7}, fails, f'weights {dict(weights)}, want 7 each')
    expect(60 - os.cpu_count() <= len(mine) <= 60, fails, f'{len(mine)} samples, want about 60')
    must_fail([] if set(weights) == {1} else ['weights are not 1'], 'weights of 1 with -c 7')
    raise_fails(fails)


def case_faults(ctx):
    exe = build(ctx, 'ev', NOFP)
    n = 3000
    fails = []
    out = ctx.path('pf.data')
    record_ok(ctx, ['-e', 'page-faults', '-c', '1', '--', exe, 'faults', str(n)], out)
    prof = load(ctx, out)
    eid = event_id(prof, 'page-faults')
    ev = prof.events[eid]
    expect(ev.type == 1 and ev.config == 2 and ev.period == 1, fails,
           f'event record {ev}, want software page-faults period 1')
    mine = [s for s in prof.samples if s.event == eid]
    chains = chains_of(ctx, mine, exe)
    in_touch = sum(c for ch, c in chains.items() if ch[:1] == ('fault_touch',))
    exact = chains[tuple(FAULT_CHAIN)]
    log(f'{len(mine)} page-fault samples, {in_touch} in fault_touch, {exact} with the chain')
    perf_n = perf_stat(ctx, 'page-faults', [exe, 'faults', str(n)])

    def check(got, want):
        f = []
        expect(got == want, f, f'{got} page faults in fault_touch, want {want}')
        return f
    fails += check(exact, n)
    fails += check(in_touch, exact)
    # the whole process's, from its exec in both (sfprof holds the command until then), of
    # two runs: ld.so's faults vary by a few from one run to the next
    expect(abs(len(mine) - perf_n) <= perf_n * 0.01 + 10, fails,
           f'{len(mine)} page-fault samples of the process, perf stat counts {perf_n}')
    must_fail(check(exact, n // 2), 'half the page faults')

    # -e faults (perf's other name) every 10: the weights add up to the faults
    out = ctx.path('pf10.data')
    record_ok(ctx, ['-e', 'faults', '-c', '10', '--', exe, 'faults', str(n)], out)
    prof = load(ctx, out)
    eid = event_id(prof, 'page-faults')
    mine = [s for s in prof.samples if s.event == eid and
            program_chain(ctx, s, exe) == FAULT_CHAIN]
    total = sum(s.weight for s in mine)
    log(f'-c 10: {len(mine)} samples in fault_touch weighing {total}')
    expect(all(s.weight == 10 for s in mine), fails, 'a -c 10 sample does not weigh 10')
    expect(abs(total - n) <= 10 * os.cpu_count(), fails, f'weights add up to {total}, want {n}')

    # context switches: one per 50 ms sleep of thread A
    rounds = 8
    out = ctx.path('cs.data')
    record_ok(ctx, ['-e', 'cs', '-c', '1', '--', exe, 'offcpu', str(rounds)], out)
    prof = load(ctx, out)
    eid = event_id(prof, 'context-switches')
    sleeps = sum(1 for s in prof.samples if s.event == eid and
                 program_chain(ctx, s, exe)[:1] == ['off_a_sleep'])
    log(f'{sleeps} context switches in off_a_sleep')
    # one per sleep, and now and then a preemption in the few instructions around it
    expect(rounds <= sleeps <= rounds + 2, fails,
           f'{sleeps} context switches in off_a_sleep, want {rounds}')
    raise_fails(fails)


def case_default(ctx):
    exe = build(ctx, 'ev', NOFP)
    fails = []
    out = ctx.path('plain.data')
    record_ok(ctx, ['--', exe, 'chain', ctx.secs(1)], out)
    prof = load(ctx, out)
    expect(not prof.events, fails, f'event records {prof.events} without -e')
    expect(prof.samples and all(s.event == 0 for s in prof.samples), fails,
           'samples naming an event without -e')
    # a second of the program's time: 999 on an idle CPU, about a third of that on a machine
    # busy with two other CPU-bound jobs per core; what the check is for is that they come
    # (fewer: the case runs again, longer)
    expect(len(prof.samples) > 100, fails,
           TooFewMsg(f'only {len(prof.samples)} samples in {ctx.secs(1)} s at 999 Hz, '
                     f'need more than 100'))

    out = ctx.path('two.data')
    # page-faults at the default 999 Hz: the kernel adapts its period to a burst of faults,
    # which has given from 0 to 431 samples of 100,000 faults; three tries for at least one
    for attempt in range(3):
        record_ok(ctx, ['-e', 'cpu-clock,page-faults', '--', exe, 'faults', '100000'], out)
        prof = load(ctx, out)
        per = Counter(s.event for s in prof.samples)
        log(f'samples per event: {dict(per)} (try {attempt + 1})')
        if per[2]:
            break
    names = [e.name for e in prof.events.values()]
    expect(names == ['cpu-clock', 'page-faults'], fails, f'events {names}')
    expect(set(per) <= {1, 2} and per[2] > 0, fails, f'samples per event {dict(per)}')
    must_fail([] if set(per) <= {0} else ['samples name events'], 'samples naming no event')
    raise_fails(fails)


def case_tid(ctx):
    exe = build(ctx, 'ev', NOFP)
    out = ctx.path('tid.data')
    prog = subprocess.Popen([exe, 'threads', '30'], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        tids = {}
        for _ in range(2):
            k, v = prog.stdout.readline().split()
            tids[k] = int(v)
        log(f'threads: {tids}')
        record_ok(ctx, ['-t', str(tids['x']), '--duration', ctx.secs(1)], out)
    finally:
        prog.kill()
        prog.wait()
    prof = load(ctx, out)
    fails = []

    def check(want_tid, leaf):
        f = []
        tids_seen = Counter(s.tid for s in prof.samples)
        # as in case_default: enough to tell the threads apart on a busy machine
        expect(len(prof.samples) > 100, f,
               TooFewMsg(f'only {len(prof.samples)} samples in {ctx.secs(1)} s, '
                         f'need more than 100'))
        expect(set(tids_seen) == {want_tid}, f, f'threads sampled {dict(tids_seen)}, want {want_tid}')
        leaves = Counter((ctx.syms.user_frames(s)[:1] or [None])[0] and
                         ctx.syms.user_frames(s)[0].symbol for s in prof.samples)
        expect(leaves[leaf] >= 0.95 * len(prof.samples), f, f'leaves {dict(leaves)}, want {leaf}')
        return f
    fails += check(tids['x'], 'spin_x')
    must_fail(check(tids['y'], 'spin_y'), 'the other thread')
    raise_fails(fails)


def case_callgraph(ctx):
    nofp = build(ctx, 'ev', NOFP)
    fp = build(ctx, 'ev-fp', FP)
    fails = []
    share = {}
    for exe in (nofp, fp):
        for mode in ('sframe', 'fp'):
            out = ctx.path(f'cg-{os.path.basename(exe)}-{mode}.data')
            args = ['--call-graph', mode, '--', exe, 'chain', ctx.secs(1)]
            if mode == 'sframe':
                args = ['-g'] + args
            record_ok(ctx, args, out)
            prof = load(ctx, out)
            leaf = [s for s in prof.samples
                    if (ctx.syms.user_frames(s)[:1] or [None])[0] is not None and
                    ctx.syms.user_frames(s)[0].symbol == 'fp_leaf']
            exact = sum(1 for s in leaf if program_chain(ctx, s, exe) == FP_CHAIN)
            share[(exe, mode)] = (exact, len(leaf))
            log(f'{os.path.basename(exe)} --call-graph {mode}: {exact} of {len(leaf)} fp_leaf '
                f'samples with the chain; {chains_of(ctx, leaf, exe).most_common(2)}')

    # fewer fp_leaf samples make the shares below mean nothing: the case runs again, longer
    for (exe, mode), (_, n) in share.items():
        expect(n > 200, fails, TooFewMsg(f'{os.path.basename(exe)} --call-graph {mode}: only '
                                         f'{n} fp_leaf samples in {ctx.secs(1)} s, need more '
                                         f'than 200'))
    raise_fails(fails)

    def pct(key):
        exact, n = share[key]
        return 100.0 * exact / n

    def check(lo_fp_nofp):
        f = []
        expect(pct((nofp, 'sframe')) >= 99, f, f'sframe without frame pointers: {pct((nofp, "sframe")):.1f}%')
        expect(pct((fp, 'sframe')) >= 99, f, f'sframe with frame pointers: {pct((fp, "sframe")):.1f}%')
        expect(pct((fp, 'fp')) >= 99, f, f'fp with frame pointers: {pct((fp, "fp")):.1f}%')
        expect(pct((nofp, 'fp')) < lo_fp_nofp, f,
               f'fp without frame pointers: {pct((nofp, "fp")):.1f}% whole chains')
        return f
    fails += check(50)
    must_fail(check(0), 'fp chains as whole as sframe without frame pointers')
    raise_fails(fails)


def case_errors(ctx):
    fails = []
    out = ctx.path('bad.data')
    no_pmu = 'not supported' in run(['perf', 'stat', '-e', 'cycles', 'true'], check=False).stderr
    cases = [
        (['-e', 'nosuch-event'], 'unknown event'),
        (['-e', 'cpu-clock,,page-faults'], 'empty event name'),
        (['-e', 'sched:no_such_tracepoint'], 'no tracepoint'),
        (['-e', 'no_such_subsystem:x'], 'no tracepoint'),
        (['-e', '../../x:y'], "'../../x:y'"),
        (['-e', 'sched:*'], 'not a tracepoint'),
        (['-e', 'cycles:u'], 'modifiers'),
        (['-e', 'cpu/cycles/'], 'PMU terms'),
        (['-e', 'page-faults', '-e', 'faults'], 'given twice'),
        (['-e', 'offcpu-time'], '--off-cpu'),
        (['--call-graph', 'lbr'], 'last branch records'),
        (['--call-graph', 'frames'], '--call-graph takes'),
        (['--call-graph', 'dwarf,12'], 'dwarf,SIZE'),
        (['-c', '0'], '-c takes'),
        (['-c', '100', '-F', '99'], '-c and -F'),
        (['-t', '999999999'], 'no thread'),
        (['-t', '1', '-a'], '-t goes without'),
        (['--off-cpu-thresh', '-1'], '--off-cpu-thresh'),
    ]
    if no_pmu:
        cases.append((['-e', 'cycles'], 'hardware performance counter'))
        cases.append((['-e', 'cpu-clock,instructions'], 'hardware performance counter'))
    else:
        log('perf stat counts cycles here: the no-PMU error cannot be checked')
    for args, want in cases:
        full = args if '-t' in args or '-a' in args else args + ['--', 'true']
        p = ctx.record(full, out)
        err = p.stderr.strip()
        ok = p.returncode != 0 and err.startswith('sfprof record: ') and want in err and \
            not os.path.exists(out)
        expect(ok, fails, f'{quote(full)}: exit {p.returncode}, {err!r}, want {want!r}')
    # the oracle of the check itself: a good command passes it
    p = ctx.record(['-e', 'page-faults', '--', 'true'], out)
    must_fail([] if p.returncode != 0 else ['it worked'], 'a good -e refused')
    os.unlink(out)
    raise_fails(fails)


# --- off-CPU ---

def timehist_blocks(ctx, data, tids, min_ms):
    """Per thread of @tids: its blocks of @min_ms or more off the CPU, in order,
    each (its time off the CPU in ns: wait + scheduling delay, the run after it in
    ms), as perf sched timehist computes them from sched_switch and sched_wakeup.
    The bound applies to the sum, as --off-cpu-thresh does to switch-out to
    switch-in: a thread woken while it was still switching out has a wait of 0
    and all of its block in the delay. timehist prints a line when a thread
    leaves the CPU: a thread's last block, before its last run and its exit, has
    none. A line's times are of the block before its run, and its state is the
    one the thread left the CPU in at the end of that run: a block after a
    switch-out in state R was a preemption (the thread runnable all along, not
    blocked in a call), which --off-cpu does not record, and is left out."""
    p = run(['perf', 'sched', 'timehist', '--state', '-i', data], check=False)
    if p.returncode:
        return None
    blocks = {tid: [] for tid in tids}
    last_state = {}
    line_re = re.compile(r'^\s*[\d.]+\s+\[\d+\]\s+\S+\[(\d+)(?:/\d+)?\]\s+([\d.]+)\s+([\d.]+)\s+'
                         r'([\d.]+)\s+(\S+)')
    for line in p.stdout.splitlines():
        m = line_re.match(line)
        if m and int(m.group(1)) in blocks:
            # task[tid/pid], or task[pid] for a main thread
            tid = int(m.group(1))
            off_ms = float(m.group(2)) + float(m.group(3))
            if off_ms >= min_ms and last_state.get(tid) != 'R':
                blocks[tid].append((off_ms * 1e6, float(m.group(4))))
            last_state[tid] = m.group(5)
    return blocks


def bcc_offcpu(ctx, exe_name, secs):
    """Start bcc's offcputime (folded, user stacks) for @secs; None when it cannot run."""
    tool = shutil.which('offcputime-bpfcc')
    if not tool:
        log('bcc: offcputime-bpfcc is not installed (scripts/setup installs bpfcc-tools)')
        return None
    cmd = [tool, '-f', '-U', '-m', '1000', str(secs)]
    log('$ ' + quote(cmd) + ' &')
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def bcc_result(proc, markers):
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        log('bcc: offcputime did not finish')
        return None
    if proc.returncode:
        why = [ln for ln in err.splitlines() if ln.strip()][:2]
        log(f'bcc: offcputime cannot run here (exit {proc.returncode}): {" / ".join(why)}')
        return None
    got = Counter()
    for line in out.splitlines():
        stack, _, us = line.rpartition(' ')
        for key, marker in markers.items():
            if marker in stack.split(';'):
                got[key] += int(us) * 1000
    return got


def offcpu_exports(ctx, out, weights, on_total, off_total):
    """Exports of a file with cpu-clock and offcpu-time samples: one event's samples each,
    in that event's unit. Collapsed gives cpu-clock's (said on stderr) unless --event
    offcpu-time, whose counts are the off-CPU nanoseconds per chain; pprof's sample types
    are then samples/count and offcpu/nanoseconds, read back by go tool pprof -raw."""
    f = []

    def collapsed(*args):
        p = run([ctx.sfprof, 'export', '-i', out, '-f', 'collapsed', *args])
        per = Counter()
        for line in p.stdout.splitlines():
            stack, _, n = line.rpartition(' ')
            frames = stack.split(';')
            per['A' if 'off_a_sleep' in frames else 'B' if 'off_b_wait' in frames else '-'] += \
                int(n)
        return p.stderr, per

    said, per = collapsed()
    expect('holds samples of 2 events' in said and "this is cpu-clock's" in said, f,
           f'export of two events does not say which it gives: {said.strip()!r}')
    expect(sum(per.values()) == on_total, f,
           f'collapsed adds {sum(per.values())}, the file has {on_total} cpu-clock samples')
    _, per = collapsed('--event', 'offcpu-time')
    log(f'collapsed --event offcpu-time: {dict(per)} ns')
    expect(sum(per.values()) == off_total and per['A'] == weights['A'] and
           per['B'] == weights['B'], f, f'collapsed --event offcpu-time {dict(per)}, the '
           f'file {dict(weights)} of {off_total} ns')
    p = run([ctx.sfprof, 'diff', out, out, '--event', 'offcpu-time'])
    expect('[k] __schedule' in p.stdout and 'on_cpu_spin' not in p.stdout, f,
           'diff --event offcpu-time: rows of another event, or none of its own')
    p = run([ctx.sfprof, 'export', '-i', out, '-f', 'collapsed', '--event', 'no-such'],
            check=False)
    expect(p.returncode != 0 and "has no event 'no-such'" in p.stderr and not p.stdout, f,
           f'--event no-such: exit {p.returncode}, {p.stderr.strip()!r}')
    if not shutil.which('go'):
        log('go is not installed: pprof\'s units are not read back')
        return f
    pb = ctx.path('off.pb.gz')
    run([ctx.sfprof, 'export', '-i', out, '-f', 'pprof', '--event', 'offcpu-time', '-o', pb])
    home = ctx.path('gohome')
    env = dict(os.environ, HOME=home, GOCACHE=os.path.join(home, 'cache'), GOTOOLCHAIN='local',
               PPROF_TMPDIR=os.path.join(home, 'pprof'), PPROF_BINARY_PATH=home)
    raw = run(['go', 'tool', 'pprof', '-raw', pb], env=env, timeout=300).stdout
    lines = raw.splitlines()
    types = lines[lines.index('Samples:') + 1].split() if 'Samples:' in lines else []
    ns = 0
    for line in lines[lines.index('Samples:') + 2:] if types else []:
        m = re.match(r'^\s+(\d+)\s+(\d+):', line)
        if not m:
            if line and not line.startswith(' '):
                break
            continue
        ns += int(m.group(2))
    log(f'pprof -raw: sample types {types}, {ns} ns in offcpu')
    expect(types == ['samples/count', 'offcpu/nanoseconds'], f, f'pprof sample types {types}')
    expect(ns == off_total, f, f'pprof offcpu/nanoseconds add {ns}, the file {off_total}')
    return f


def case_offcpu(ctx):
    exe = build(ctx, 'ev', NOFP)
    rounds = 16 * ctx.scale
    out = ctx.path('off.data')
    sched = ctx.path('sched.perf.data')
    bcc = bcc_offcpu(ctx, 'ev', 4 * ctx.scale)
    # perf records the scheduler system-wide while sfprof records the program
    cmd = ['perf', 'record', '-B', '-N', '-a', '-e', 'sched:sched_switch',
           '-e', 'sched:sched_wakeup', '-e', 'sched:sched_waking', '-o', sched, '--',
           ctx.sfprof, 'record', '--off-cpu', '-o', out, '--', exe, 'offcpu', str(rounds)]
    p = run(cmd, check=False, timeout=120)
    perf_ok = p.returncode == 0
    if not perf_ok:
        p = record_ok(ctx, ['--off-cpu', '--', exe, 'offcpu', str(rounds)], out)
    truth = {}
    for line in p.stdout.splitlines():
        k, ns, tid = line.split()
        truth[k] = (int(ns), int(tid))
    log(f'the program measured: {truth}')
    prof = load(ctx, out)
    eid = event_id(prof, 'offcpu-time')
    ev = prof.events[eid]
    fails = []
    expect(ev.type == 65535 and ev.flags & 1, fails, f'offcpu-time record {ev.type} {ev.flags}')
    off = [s for s in prof.samples if s.event == eid]
    weights = Counter()
    for s in off:
        ch = program_chain(ctx, s, exe)
        if ch[:2] == ['off_a_sleep', 'thread_a']:
            weights['A'] += s.weight
        elif ch[:2] == ['off_b_wait', 'thread_b']:
            weights['B'] += s.weight
    on = [s for s in prof.samples if s.event == 0 and
          program_chain(ctx, s, exe)[:1] == ['on_cpu_spin']]
    log(f'offcpu-time weights per chain: {dict(weights)} ns; {len(on)} cpu-clock samples in '
        f'on_cpu_spin')
    ksyms = profile_oracle.KernelSymbols()
    if ksyms.usable:
        # they blocked: their kernel stacks go through the scheduler
        through = sum(1 for s in off if s.kstack and
                      any(n in ('schedule', '__schedule') for n in ksyms.frames(s.kstack)))
        log(f'{through} of {len(off)} off-CPU kernel stacks go through schedule()')
        expect(through >= 0.95 * len(off), fails, f'{through} of {len(off)} off-CPU kernel '
               f'stacks through schedule()')
        # and start in __schedule: the BPF program and the tracepoint's frames are left out
        first = Counter(ksyms.frames(s.kstack)[0] for s in off if s.kstack)
        log(f'off-CPU kernel stacks start in {dict(first.most_common(3))}')
        expect(first['__schedule'] >= 0.95 * len(off), fails,
               f'off-CPU kernel stacks start in {dict(first.most_common(3))}, not __schedule')

    def check(want, label, got_w=weights):
        f = []
        for k in ('A', 'B'):
            got, exp = got_w[k], want[k]
            err = abs(got - exp) / exp if exp else 1.0
            log(f'{label}: {k}: sfprof {got / 1e9:.4f} s, {label} {exp / 1e9:.4f} s '
                f'({100 * err:.2f}% apart)')
            expect(err <= 0.05, f, f'{k}: {got} ns off the CPU, {label} says {exp} ns')
        return f
    clock = {k: truth[k][0] for k in ('A', 'B')}
    fails += check(clock, 'the program\'s clock')
    fails += offcpu_exports(ctx, out, weights, sum(1 for s in prof.samples if s.event == 0),
                            sum(s.weight for s in off))
    # thread C spins while A and B block (about 1.3 s x ctx.scale): fewer on a busy machine
    expect(len(on) >= 300, fails, TooFewMsg(f'only {len(on)} cpu-clock samples in on_cpu_spin '
                                            f'in the same file ({rounds} rounds), need 300'))
    must_fail(check({'A': clock['B'], 'B': clock['A']}, 'swapped'), 'A and B swapped')
    counts = Counter()
    for s in off:
        counts[tuple(program_chain(ctx, s, exe)[:1])] += 1
    must_fail(check({'A': counts[('off_a_sleep',)], 'B': counts[('off_b_wait',)]}, 'counted'),
              'samples counted instead of weighed')
    if perf_ok:
        th = timehist_blocks(ctx, sched, {truth['A'][1], truth['B'][1]}, 1.0)
        if th:
            # Block by block, in order, as far as timehist sees them (not the last):
            # logged beside the program's clock, not asserted. Debian's perf 6.1
            # counts some blocks of a thread woken late (its CPU busy) several ms
            # longer than the thread itself measured around its nanosleep, so it
            # is the weaker oracle of the two.
            want, paired = {}, Counter()
            for k, key in (('A', 'off_a_sleep'), ('B', 'off_b_wait')):
                mine = sorted((s.time, s.weight) for s in off
                              if program_chain(ctx, s, exe)[:1] == [key])
                theirs = th[truth[k][1]]
                n = min(len(mine), len(theirs))
                log(f'{k}: {len(mine)} blocks recorded, timehist sees {len(theirs)}')
                if not len(mine) - 1 <= len(theirs) <= len(mine):
                    log(f'{k}: sfprof (ms): {[round(w / 1e6, 2) for _, w in mine]}')
                    log(f'{k}: timehist (ms): {[round(t / 1e6, 2) for t, _ in theirs]}')
                expect(len(mine) - 1 <= len(theirs) <= len(mine), fails,
                       f'{k}: {len(mine)} blocks recorded, timehist sees {len(theirs)}')
                want[k] = sum(t for t, _ in theirs[:n])
                paired[k] = sum(w for _, w in mine[:n])
            check(want, 'perf sched timehist', paired)
    else:
        log('perf record of the sched tracepoints failed: no timehist oracle')
    if bcc:
        got = bcc_result(bcc, {'A': 'thread_a', 'B': 'thread_b'})
        if got:
            fails += check(got, 'bcc offcputime')

    # the threshold: 50 ms blocks are not recorded at 100 ms, and the check fails
    out2 = ctx.path('off100.data')
    p2 = record_ok(ctx, ['--off-cpu', '--off-cpu-thresh', '100', '--', exe, 'offcpu', '4'], out2)
    truth2 = {line.split()[0]: int(line.split()[1]) for line in p2.stdout.splitlines()}
    prof2 = load(ctx, out2)
    eid2 = event_id(prof2, 'offcpu-time')
    off2 = [s for s in prof2.samples if s.event == eid2]
    short = [s for s in off2 if s.weight < 100_000_000]
    expect(not short, fails, f'{len(short)} blocks under the 100 ms threshold')
    weights2 = Counter()
    for s in off2:
        ch = program_chain(ctx, s, exe)
        weights2['A' if ch[:1] == ['off_a_sleep'] else 'B' if ch[:1] == ['off_b_wait'] else '-'] += \
            s.weight
    must_fail(check(truth2, 'blocks under --off-cpu-thresh 100', weights2),
              'the 50 ms and 20 ms blocks left out')
    raise_fails(fails)


CASES = {
    'tracepoint': case_tracepoint, 'faults': case_faults, 'default': case_default,
    'tid': case_tid, 'callgraph': case_callgraph, 'errors': case_errors, 'offcpu': case_offcpu,
}


def main():
    if not shutil.which('perf'):
        log('SKIP: perf not found')
        return 77
    return case_main(__doc__, CASES)


if __name__ == '__main__':
    sys.exit(main())
