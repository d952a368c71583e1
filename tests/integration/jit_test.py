#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`sfprof record` of JIT runtimes: JIT frames named, stacks complete.

Each --case records one workload of tests/progs/jit/ (chain.js, Chain.java, chain.py:
jit_main -> jit_outer -> jit_middle -> jit_leaf, the time in jit_leaf) under
`sfprof record -o FILE -- CMD`, with the runtime's flags for external profilers, and
computes from `sfprof script -i FILE` the figures jit_perf_baseline.py computes from
`perf script` (same parser, same definitions; see its docstring):

  named     % of the samples whose stack names one of the program's functions
  chain     % of the named samples whose program frames are the chain from jit_main, in order
  complete  % of the samples with a user stack that reach where the process or thread starts

Cases (the runtimes' flags: jit_perf_baseline.ROWS):

  node-map        node --perf-basic-prof (/tmp/perf-PID.map)
  node-jitdump    node --perf-prof --perf-prof-unwinding-info --interpreted-frames-native-stack
                  (jit-PID.dump in the current directory, mapped by the process)
  java-map        java -XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions
                  -XX:+DumpPerfMapAtExit (/tmp/perf-PID.map, written at exit)
  py312-perf      python3.12 -X perf (trampolines, /tmp/perf-PID.map)
  py313-perf-jit  python3.13 -X perf_jit (/tmp/jit-PID.dump with unwinding info)
      named >= 90%, chain >= 90%, complete >= 95%; `sfprof report --stdio` shows jit_leaf in
      its top rows (self for Node and Java; for Python, whose leaf is a trampoline with no
      self time, among the rows of --children over 50%); `sfprof export --format collapsed`
      has a line holding the whole chain in order; `--format pprof` read by `go tool pprof
      -top` names jit_leaf (no go: that check only is skipped, said).
  node-plain, java-plain   the same runtimes without their map and dump flags (Java keeps
      -XX:+PreserveFramePointer): nothing may get worse, complete >= 95%.
  py312-plain, py313-plain  CPython without -X perf: its frames are all the interpreter's;
      the figures are printed, not checked.

A run must have MIN_SAMPLES samples: the workload runs until it has used SECONDS of CPU
time (so that, however loaded the machine, a run takes about as many samples, the same
share of them in its start-up), and once again for twice as long if it had fewer. The
chain checks are also run against a wrong expectation (the chain with jit_outer and
jit_middle swapped) and must then fail. Every process started is in a process group of its
own, killed by its id on a timeout; the maps, dumps and logs the runtimes leave are removed.

Exit status 0 pass, 1 fail, 77 skip (not root, no BTF, the runtime missing: node,
java/javac, pyenv's python3.12 or python3.13).
"""

import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jit_perf_baseline as jb  # noqa: E402

SKIP = 77
SECONDS = 4.0
MIN_SAMPLES = 1500          # a run with fewer runs again, twice as long
MIN_USABLE = 500            # fewer even then: the figures mean nothing, a failure
NAMED_MIN, CHAIN_MIN, COMPLETE_MIN = 90.0, 90.0, 95.0
WRONG_CHAIN = ['jit_main', 'jit_middle', 'jit_outer', 'jit_leaf']

CASES = ['node-map', 'node-jitdump', 'java-map', 'py312-perf', 'py313-perf-jit', 'py312-container',
         'node-plain', 'java-plain', 'py312-plain', 'py313-plain']

log, quote = jb.log, jb.quote


class Failure(Exception):
    pass


def expect(cond, fails, msg):
    if not cond:
        fails.append(msg)


def check_preconditions():
    if os.geteuid() != 0:
        log('SKIP: sfprof record needs root (CAP_BPF and CAP_PERFMON)')
        sys.exit(SKIP)
    if not os.access('/sys/kernel/btf/vmlinux', os.R_OK):
        log('SKIP: this kernel has no BTF')
        sys.exit(SKIP)


class Ctx:
    def __init__(self, args):
        self.sfprof = os.path.abspath(args.sfprof)
        self.work = os.path.abspath(args.workdir)
        self.case = args.case
        self.pids = set()       # of the recorded processes: their maps and dumps go at the end

    def path(self, name):
        return os.path.join(self.work, name)

    def sfprof_run(self, args, timeout=300):
        cmd = [self.sfprof, *args]
        log('$ ' + quote(cmd))
        rc, out, err = jb.run_bounded(cmd, timeout=timeout, cwd=self.work)
        if rc:
            log(err.rstrip())
            raise Failure(f'sfprof {args[0]} exited with {rc}')
        return out, err


# --- recording ---

SUMMARY = re.compile(r'sfprof record: [\d.]+ s, (\d+) samples \((\d+) lost\), (\d+) with a user '
                     r'stack, ([\d.]+)% of them complete')


def record(ctx, runtime, seconds, out):
    """sfprof record -o OUT -- the workload, run in the work directory: (summary line, its
    complete %). The record and the workload are one process group, killed on a timeout."""
    jb.remove_files([out, out + '.old'])
    # --no-python: the subject is JIT code's names; CPython's own frames (issue 29) would name
    # each function twice, as the -X perf trampoline and as the Python frame
    cmd = [ctx.sfprof, 'record', '--no-python', '-o', out, '--', *runtime.cmd(seconds)]
    log('$ ' + quote(cmd))
    try:
        rc, stdout, stderr = jb.run_bounded(cmd, timeout=seconds * 10 + 120, cwd=ctx.work)
    except subprocess.TimeoutExpired:
        raise Failure(f'sfprof record did not end within {seconds * 10 + 120:.0f} s (killed)')
    if stdout.strip():
        log('  ' + stdout.strip().splitlines()[-1])
    lines = [line for line in stderr.splitlines() if line.strip()]
    for line in lines[:3]:
        log('  ' + line)
    if rc:
        log(stderr.rstrip())
        if os.path.exists(out):         # what was written names the processes to clean up
            try:
                script_samples(ctx, out)
            except (Failure, subprocess.TimeoutExpired):
                pass
        raise Failure(f'sfprof record exited with {rc}')
    m = next((SUMMARY.search(line) for line in lines if SUMMARY.search(line)), None)
    return (m.group(0) if m else '(no summary line)'), (float(m.group(4)) if m else None)


def script_samples(ctx, data):
    out, err = ctx.sfprof_run(['script', '-i', data, '-F', jb.SCRIPT_FIELDS])
    if err.strip():
        log(err.strip()[:500])
    samples = jb.parse_script(out)
    ctx.pids.update(s.pid for s in samples)
    return samples


def record_enough(ctx, runtime):
    """Record until a run has MIN_SAMPLES samples (SECONDS of CPU time, then once twice
    as many): (profile path, samples, sfprof's own complete %)."""
    seconds = SECONDS
    for attempt in (1, 2):
        data = ctx.path(f'{ctx.case}-{attempt}.data')
        summary, own_complete = record(ctx, runtime, seconds, data)
        samples = script_samples(ctx, data)
        log(f'  {len(samples)} samples in sfprof script ({summary})')
        if len(samples) >= MIN_SAMPLES:
            return data, samples, own_complete
        if attempt == 1:
            log(f'  fewer than {MIN_SAMPLES} samples: recording again for {2 * seconds:g} s of CPU')
            seconds *= 2
    if len(samples) < MIN_USABLE:
        raise Failure(f'only {len(samples)} samples in a {seconds:g} s run (need {MIN_USABLE} '
                      f'to mean anything, {MIN_SAMPLES} wanted)')
    log(f'note: only {len(samples)} samples in a {seconds:g} s run ({MIN_SAMPLES} wanted): '
        f'the figures are coarser')
    return data, samples, own_complete


# --- the figures ---

def figure_fails(fig, jit, runtime_kind):
    fails = []
    if jit:
        expect(fig.named_pct >= NAMED_MIN, fails,
               f'{fig.named_pct:.1f}% of the samples name the program\'s functions, '
               f'need {NAMED_MIN:.0f}%')
        expect(fig.named and fig.chain_pct >= CHAIN_MIN, fails,
               f'{fig.chain_pct:.1f}% of the named samples have the chain '
               f'{" -> ".join(jb.CHAIN)} in order, need {CHAIN_MIN:.0f}%')
    if jit or not runtime_kind.startswith('python'):
        expect(fig.complete_pct >= COMPLETE_MIN, fails,
               f'{fig.complete_pct:.1f}% of the user stacks complete, need {COMPLETE_MIN:.0f}%')
    return fails


# --- report, collapsed, pprof ---

ROW = re.compile(r'^\s+([\d.]+)%\s+(?:([\d.]+)%\s+)?\[(.)\]\s(.*)$')


def report_rows(text):
    """[(first share, sym)] of `sfprof report --stdio --sort sym`'s rows, in order."""
    out = []
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            out.append((float(m.group(1)), m.group(4)))
    return out


def check_report(ctx, data, leaf_has_self):
    fails = []
    if leaf_has_self:
        out, _ = ctx.sfprof_run(['report', '-i', data, '--stdio', '--no-children', '--sort',
                                 'sym'])
        rows = report_rows(out)
        top = rows[:5]
        for share, sym in top:
            log(f'  report: {share:6.2f}%  {sym[:100]}')
        expect(any(jb.own(sym) == jb.LEAF for _, sym in top), fails,
               f'sfprof report --stdio --no-children: {jb.LEAF} not in the top 5 rows')
    else:
        out, _ = ctx.sfprof_run(['report', '-i', data, '--stdio', '--children', '--sort', 'sym'])
        rows = [(share, sym) for share, sym in report_rows(out) if share >= 50.0]
        hits = [(i, share, sym) for i, (share, sym) in enumerate(rows) if jb.own(sym) == jb.LEAF]
        if hits:
            i, share, sym = hits[0]
            log(f'  report --children: row {i + 1}: {share:.2f}%  {sym[:100]}')
        expect(hits, fails, f'sfprof report --stdio --children: no {jb.LEAF} among the '
                            f'{len(rows)} rows over 50%')
    return fails


def chain_lines(collapsed, chain):
    """(samples, all samples) of the collapsed lines whose program frames are @chain."""
    hit = total = 0
    for line in collapsed.splitlines():
        frames, _, count = line.rpartition(' ')
        if not count.isdigit():
            continue
        total += int(count)
        names = [n for n in (jb.own(f) for f in frames.split(';')) if n]
        if names == chain:
            hit += int(count)
    return hit, total


def check_collapsed(ctx, data, chain=jb.CHAIN):
    out, _ = ctx.sfprof_run(['export', '-i', data, '--format', 'collapsed'])
    hit, total = chain_lines(out, chain)
    log(f'  collapsed: {hit} of {total} samples on lines with {";".join(chain)} in order')
    return out, ([] if hit else [f'export --format collapsed: no line holds '
                                 f'{";".join(chain)} in order'])


def go_env(ctx):
    env = dict(os.environ)
    home = ctx.path('gohome')
    os.makedirs(home, exist_ok=True)
    env.update(HOME=home, GOCACHE=os.path.join(home, 'cache'), GOFLAGS='-mod=mod',
               GOTOOLCHAIN='local', PPROF_TMPDIR=os.path.join(home, 'pprof'),
               PPROF_BINARY_PATH=home)
    return env


def check_pprof(ctx, data):
    if not shutil.which('go'):
        log('  pprof: not checked: go not found (go tool pprof is the oracle; '
            'scripts/setup installs golang-go)')
        return []
    out = ctx.path('profile.pb.gz')
    ctx.sfprof_run(['export', '-i', data, '--format', 'pprof', '-o', out])
    with open(out, 'rb') as f:
        gzip.decompress(f.read())
    cmd = ['go', 'tool', 'pprof', '-top', '-nodecount=1000000', '-nodefraction=0',
           '-edgefraction=0', out]
    log('$ ' + quote(cmd))
    rc, text, err = jb.run_bounded(cmd, timeout=300, cwd=ctx.work, env=go_env(ctx))
    if rc:
        return [f'go tool pprof exited with {rc}: {err.strip()[:300]}']
    rows = [line for line in text.splitlines() if jb.own(line) == jb.LEAF]
    if rows:
        log(f'  pprof -top: {rows[0].strip()[:120]}')
    return [] if rows else [f'go tool pprof -top names no {jb.LEAF}']


# --- the case ---

def check_other_outputs(ctx, data, leaf_has_self):
    """report -g, svg, markup, diff and an archive read elsewhere name the chain too."""
    fails = []
    out, _ = ctx.sfprof_run(['report', '-i', data, '--stdio', '--children', '-g', 'caller'])
    missing = [f for f in jb.CHAIN if f not in out]
    log(f'  report -g: {"all of the chain" if not missing else "missing " + ", ".join(missing)}')
    if missing:
        fails.append(f'report -g names no {", ".join(missing)}')
    svg = ctx.path('profile.svg')
    ctx.sfprof_run(['export', '-i', data, '--format', 'svg', '-o', svg])
    with open(svg, encoding='utf-8', errors='replace') as f:
        text = f.read()
    missing = [f for f in jb.CHAIN if f not in text]
    if missing:
        fails.append(f'export --format svg names no {", ".join(missing)}')
    out, _ = ctx.sfprof_run(['export', '-i', data, '--format', 'markup'])
    named = [line for line in out.splitlines() if jb.LEAF in line and ' in ' in line]
    log(f'  markup: {len(named)} frame lines name {jb.LEAF}')
    if not named:
        fails.append(f'export --format markup writes no frame named {jb.LEAF}')
    if leaf_has_self:
        out, _ = ctx.sfprof_run(['diff', data, data])
        if not any(jb.LEAF in line for line in out.splitlines() if not line.startswith('#')):
            fails.append(f'diff has no row for {jb.LEAF}')
    arch = ctx.path('profile.tar.zst')
    ctx.sfprof_run(['archive', '-i', data, '-o', arch])
    out, _ = ctx.sfprof_run(['report', '-i', arch, '--stdio', '--children', '--sort', 'sym'])
    if jb.LEAF not in out:
        fails.append(f'report of the archive names no {jb.LEAF}')
    os.unlink(arch)
    return fails


def run_case(ctx):
    try:
        runtime = jb.Runtime(ctx.case, ctx.work)
    except jb.Missing as e:
        log(f'SKIP: {e}')
        sys.exit(SKIP)
    spec = jb.ROWS[ctx.case]
    jit = spec['jit']
    log(f'{runtime.version}: {quote(runtime.cmd(SECONDS))}')
    data, samples, own_complete = record_enough(ctx, runtime)
    fails = []
    fig = jb.Figures(samples)
    log(f'sfprof: {fig.line()}')
    for line in fig.details():
        log(line)
    if own_complete is not None:
        log(f'  (sfprof record\'s own count: {own_complete:.1f}% complete)')
    fails += figure_fails(fig, jit, spec['runtime'])
    if jit:
        fails += check_report(ctx, data, not spec['runtime'].startswith('python'))
        _, f = check_collapsed(ctx, data)
        fails += f
        fails += check_pprof(ctx, data)
        fails += check_other_outputs(ctx, data, not spec['runtime'].startswith('python'))
        # wrong on purpose: the same checks against the chain with two frames swapped
        if not fails:
            bad = jb.Figures(samples, chain=WRONG_CHAIN)
            if bad.chain_pct >= CHAIN_MIN:
                fails.append(f'negative check did not fail: the chain '
                             f'{" -> ".join(WRONG_CHAIN)} is in {bad.chain_pct:.1f}%')
            if check_collapsed(ctx, data, WRONG_CHAIN)[1] == []:
                fails.append('negative check did not fail: a collapsed line holds '
                             f'{";".join(WRONG_CHAIN)}')
            if not fails:
                log('ok: negative checks fail as they must (the chain with jit_outer and '
                    'jit_middle swapped)')
    else:
        log(f'  {ctx.case}: the frames are the interpreter\'s (nothing to name)'
            if spec['runtime'].startswith('python') else
            f'  {ctx.case}: without its map flags nothing may get worse')
    log(f'FIGURES {ctx.case}: samples {fig.samples}, named {fig.named_pct:.1f}%, chain '
        f'{fig.chain_pct:.1f}%, complete {fig.complete_pct:.1f}%')
    for f in fails:
        log(f'FAIL: {f}')
    if fails:
        raise Failure(f'{len(fails)} check(s) failed')


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', required=True, choices=CASES)
    args = ap.parse_args()
    sys.stdout.reconfigure(errors='backslashreplace')
    check_preconditions()
    ctx = Ctx(args)
    shutil.rmtree(ctx.work, ignore_errors=True)
    os.makedirs(ctx.work)
    t0 = time.monotonic()
    try:
        run_case(ctx)
    except (Failure, subprocess.TimeoutExpired, RuntimeError, OSError) as e:
        log(f'FAIL: {e}')
        return 1
    finally:
        # the maps, dumps and logs the runtimes wrote (read by script, report and export)
        jb.remove_files(jb.runtime_files(sorted(ctx.pids), ctx.work))
    log(f'PASS ({time.monotonic() - t0:.1f} s)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
