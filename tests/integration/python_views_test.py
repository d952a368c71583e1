#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Python frames in every view, on profiles gen-profile writes with chains known by construction.

gen-profile --python LIB writes a process whose native frames are functions of
tests/unit/py_fixture.c (one named _PyEval_EvalFrameDefault) and whose samples
carry Python frames (docs/FORMAT.md):

  30 samples  [py_fixture_leaf, eval, py_fixture_main] running rt_leaf < rt_mid
              < rt_top, one interpreter call (rt_top the entry frame)
  20 * K      [py_fixture_leaf, eval, py_fixture_call, eval, py_fixture_main]
              running key_fn (entered from C) < sort_them < <module>: two
              segments, each before its own eval frame
  1           [eval, py_fixture_main] running a function whose name holds ';',
              markup and control characters, in a file whose path has a space
  5           [py_fixture_leaf, py_fixture_main], no Python frames

and every view must show the merged chains, outermost first
main > eval > rt_top > rt_mid > rt_leaf > py_fixture_leaf, names as
`qualname (file.py:line)`, and with --python-only the Python frames alone:
export collapsed (exact lines), script (each sample's frames in order),
report (--children shares, --python-only self shares), export svg (titles
and escaping), export pprof through `go tool pprof -traces` and `-raw` (the
oracle: a Python frame is a Location with one Line of its qualname, file and
line), diff of K=1 against K=3 (shares moved by construction), export
markup (a Python frame as llvm-symbolizer prints a symbolized one), dump.

Exit status 0 pass, 1 fail, 77 skip (no go for the pprof oracle).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

import stackcollapse

SKIP = 77

LEAF, EVAL, CALL, MAIN = ('py_fixture_leaf', '_PyEval_EvalFrameDefault', 'py_fixture_call',
                          'py_fixture_main')
RT = ['rt_leaf (prog.py:30)', 'rt_mid (prog.py:20)', 'rt_top (prog.py:10)']
SORT = ['key_fn (sorter.py:7)', 'sort_them (sorter.py:12)', '<module> (sorter.py:40)']
# innermost first, as script prints them
CHAINS = {
    4000: [LEAF, *RT, EVAL, MAIN],
    4001: [LEAF, SORT[0], EVAL, CALL, SORT[1], SORT[2], EVAL, MAIN],
    4003: [LEAF, MAIN],
}
PY_ONLY = {4000: RT, 4001: SORT, 4003: []}
# the hostile name as text.h escapes it in plain-text views
ODD_ESCAPED = r'Odd;name <b>&\x1b[31m\n (odd.py:3)'


def log(msg):
    print(msg, flush=True)


class Ctx:
    def __init__(self, args):
        self.sfprof = os.path.abspath(args.sfprof)
        self.gen = os.path.abspath(args.gen_profile)
        self.lib = os.path.abspath(args.py_fixture)
        self.work = os.path.abspath(args.workdir)
        self.fails = []
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)

    def path(self, name):
        return os.path.join(self.work, name)

    def expect(self, cond, msg):
        if not cond:
            self.fails.append(msg)
            log(f'FAIL: {msg}')

    def run(self, *argv, binary=False):
        cmd = [self.sfprof, *argv]
        log('$ ' + ' '.join(cmd))
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        if p.returncode != 0:
            raise SystemExit(f'FAIL: {" ".join(argv)} exited {p.returncode}: '
                             f'{p.stderr.decode(errors="replace")[:400]}')
        # no view passes a control character of a name through
        self.expect(b'\x1b' not in p.stdout and b'\x1b' not in p.stderr,
                    f'{" ".join(argv)}: a raw ESC byte in the output')
        return p.stdout if binary else p.stdout.decode()

    def generate(self, name, scale):
        out = self.path(name)
        subprocess.run([self.gen, '-o', out, '--python', self.lib, '--python-scale', str(scale)],
                       check=True, timeout=60)
        return out


def check_collapsed(ctx, prof):
    got = set(ctx.run('export', '-f', 'collapsed', '-i', prof).splitlines())
    want = {
        'python3;' + ';'.join(reversed(CHAINS[4000])) + ' 30',
        'python3;' + ';'.join(reversed(CHAINS[4001])) + ' 20',
        'python3;' + ';'.join([MAIN, EVAL, ODD_ESCAPED.replace(';', r'\x3b')]) + ' 1',
        'python3;' + ';'.join(reversed(CHAINS[4003])) + ' 5',
    }
    ctx.expect(got == want, f'collapsed: got {sorted(got)}, want {sorted(want)}')
    got = set(ctx.run('export', '-f', 'collapsed', '--python-only', '-i', prof).splitlines())
    want = {
        'python3;' + ';'.join(reversed(RT)) + ' 30',
        'python3;' + ';'.join(reversed(SORT)) + ' 20',
        'python3;' + ODD_ESCAPED.replace(';', r'\x3b') + ' 1',
        'python3 5',
    }
    ctx.expect(got == want, f'collapsed --python-only: got {sorted(got)}, want {sorted(want)}')


FRAME = re.compile(r'^\t\s*([0-9a-f]+) (.*) \((.*)\)$')


def script_samples(text):
    """[(tid, [(addr, name, module)])] of script's output."""
    out = []
    for block in text.strip().split('\n\n'):
        lines = block.splitlines()
        m = re.match(r'^\S+\s+(\d+)/(\d+)\s', lines[0])
        frames = [FRAME.match(line).groups() for line in lines[1:] if FRAME.match(line)]
        out.append((int(m.group(2)), frames))
    return out


def strip_off(name):
    return re.sub(r'\+0x[0-9a-f]+$', '', name)


def check_script(ctx, prof):
    text = ctx.run('script', '-i', prof)
    samples = script_samples(text)
    ctx.expect(len(samples) == 56, f'script: {len(samples)} samples, want 56')
    # FlameGraph's stackcollapse-perf.pl reads every line (a module is one word: the
    # hostile file's space escaped) and cuts a name at its first '(', the qualname left
    try:
        folded = stackcollapse.fold(text)
        want = 'python3;' + ';'.join([MAIN, EVAL, 'rt_top ', 'rt_mid ', 'rt_leaf ', LEAF])
        ctx.expect(folded.get(want) == 30 and sum(folded.values()) == 56,
                   f'stackcollapse of script: {dict(folded)}')
    except stackcollapse.FoldError as e:
        ctx.expect(False, f'stackcollapse of script: {e}')
    for tid, frames in samples:
        names = [strip_off(n) for _, n, _ in frames]
        if tid == 4002:
            ctx.expect(names == [ODD_ESCAPED, EVAL, MAIN], f'script, tid 4002: {names}')
            continue
        ctx.expect(names == CHAINS[tid], f'script, tid {tid}: {names}, want {CHAINS[tid]}')
        for addr, name, mod in frames:
            if ' (' in name and name.endswith(')'):
                # a Python frame: no address, no offset, the module its file
                ctx.expect(addr == '0' and '+0x' not in name and mod.startswith('/srv/app/'),
                           f'script: Python frame {addr} {name} ({mod})')
    samples = script_samples(ctx.run('script', '--python-only', '-i', prof))
    for tid, frames in samples:
        if tid == 4002:
            continue
        names = [n for _, n, _ in frames]
        ctx.expect(names == PY_ONLY[tid], f'script --python-only, tid {tid}: {names}')


def report_rows(text):
    rows = {}
    for line in text.splitlines():
        m = re.match(r'^\s+([\d.]+)%\s+(?:([+-]?[\d.]+)%\s+)?\S+\s+.*?\[\.\] (.*)$', line)
        if m:
            rows[m.group(3)] = (float(m.group(1)), m.group(2) and float(m.group(2)))
    return rows


def check_report(ctx, prof):
    rows = report_rows(ctx.run('report', '--python-only', '-i', prof))
    # self shares: the innermost Python frame of each sample
    for name, want in ((RT[0], 30 / 56), (SORT[0], 20 / 56), (ODD_ESCAPED, 1 / 56)):
        got = rows.get(name, (None,))[0]
        ctx.expect(got is not None and abs(got - 100 * want) < 0.01,
                   f'report --python-only: {name} {got}%, want {100 * want:.2f}%')
    ctx.expect(not any(n in rows for n in (LEAF, EVAL, MAIN)),
               f'report --python-only shows native frames: {sorted(rows)}')
    text = ctx.run('report', '--children', '-i', prof)
    ctx.expect('# Python: 51 samples (91.07%) with Python frames\n' in text,
               'report: no header line counting the 51 samples with Python frames')
    rows = report_rows(text)
    # children: every sample with the frame anywhere in its merged stack
    for name, want in ((RT[2], 30), (SORT[2], 20), (EVAL, 51), (LEAF, 55)):
        got = rows.get(name, (None,))[0]
        ctx.expect(got is not None and abs(got - 100 * want / 56) < 0.01,
                   f'report --children: {name} {got}%, want {100 * want / 56:.2f}%')


def check_svg(ctx, prof):
    svg = ctx.run('export', '-f', 'svg', '-i', prof)
    for name, n in ((RT[0], 30), (RT[2], 30), (SORT[1], 20)):
        share = f'{100 * n / 56:.2f}%'
        want = f'<title>{name.replace("<", "&lt;").replace(">", "&gt;")} ({n} samples, {share})'
        ctx.expect(want in svg, f'svg: no "{want}"')
    ctx.expect('Odd;name &lt;b&gt;&amp;' in svg and '<b>' not in svg,
               'svg: the hostile name is not escaped as XML text')
    svg = ctx.run('export', '-f', 'svg', '--python-only', '-i', prof)
    ctx.expect(EVAL not in svg and LEAF not in svg and RT[0] in svg,
               'svg --python-only: native frames shown or Python frames missing')


def go_env(ctx):
    env = dict(os.environ)
    home = ctx.path('gohome')
    os.makedirs(home, exist_ok=True)
    env.update(HOME=home, GOCACHE=os.path.join(home, 'cache'), GOFLAGS='-mod=mod',
               GOTOOLCHAIN='local', PPROF_TMPDIR=os.path.join(home, 'pprof'),
               PPROF_BINARY_PATH=home)
    return env


def pprof(ctx, args, path):
    cmd = ['go', 'tool', 'pprof', *args, path]
    log('$ ' + ' '.join(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors='replace', env=go_env(ctx), timeout=300)
    if p.returncode != 0:
        raise SystemExit(f'FAIL: go tool pprof exited {p.returncode}: {p.stderr[:300]}')
    return p.stdout


def pprof_traces(text):
    """{tid: [function, ...] innermost first} of `pprof -traces`."""
    out = {}
    for block in text.split('-----------+')[1:]:
        tid = re.search(r'^\s+tid:\s+(\d+)', block, re.M)
        funcs = []
        for line in block.splitlines():
            m = re.match(r'^\s+(?:[\d.]+\w*s\s+)?(\S.*)$', line)
            if m and not re.match(r'^\s+\w+:\s', line) and not line.startswith('---'):
                funcs.append(m.group(1).strip())
        if tid:
            out[int(tid.group(1))] = [f for f in funcs if not f.startswith('---')]
    return out


def check_pprof(ctx, prof):
    out = ctx.path('py.pb.gz')
    ctx.run('export', '-f', 'pprof', '-i', prof, '-o', out)
    traces = pprof_traces(pprof(ctx, ['-traces'], out))
    # pprof prints function names alone (and shortens <...> away: <module> is left out here)
    want = {4000: [LEAF, 'rt_leaf', 'rt_mid', 'rt_top', EVAL, MAIN],
            4003: [LEAF, MAIN]}
    for tid, funcs in want.items():
        ctx.expect(traces.get(tid) == funcs, f'pprof -traces, tid {tid}: {traces.get(tid)}, '
                   f'want {funcs}')
    t = traces.get(4001, [])
    ctx.expect(t[:6] == [LEAF, 'key_fn', EVAL, CALL, 'sort_them', t[5] if len(t) > 5 else None]
               and t[6:] == [EVAL, MAIN], f'pprof -traces, tid 4001: {t}')
    raw = pprof(ctx, ['-raw'], out)
    for func, file, line in (('rt_leaf', '/srv/app/prog.py', 30),
                             ('sort_them', '/srv/app/sorter.py', 12)):
        ctx.expect(re.search(rf'^\s+\d+: 0x0 {func} {re.escape(file)}:{line} s=0$', raw, re.M),
                   f'pprof -raw: no Location 0x0 {func} {file}:{line}')
    ctx.expect(re.search(r'^\s+\d+: 0x0 .*/srv/app/sorter.py:40 s=0\(<module>\)$', raw, re.M),
               'pprof -raw: no Location of <module> at sorter.py:40')
    out = ctx.path('py-only.pb.gz')
    ctx.run('export', '-f', 'pprof', '--python-only', '-i', prof, '-o', out)
    traces = pprof_traces(pprof(ctx, ['-traces'], out))
    ctx.expect(traces.get(4000) == ['rt_leaf', 'rt_mid', 'rt_top'],
               f'pprof --python-only, tid 4000: {traces.get(4000)}')


def check_diff(ctx, old, new):
    rows = report_rows(ctx.run('diff', '--python-only', old, new))
    # K=1: key_fn 20 of 56; K=3: 60 of 96. rt_leaf: 30 of 56, then 30 of 96.
    for name, base, now in ((SORT[0], 20 / 56, 60 / 96), (RT[0], 30 / 56, 30 / 96)):
        got = rows.get(name)
        want = (100 * base, 100 * (now - base))
        ctx.expect(got is not None and abs(got[0] - want[0]) < 0.01 and
                   got[1] is not None and abs(got[1] - want[1]) < 0.01,
                   f'diff --python-only: {name} {got}, want {want[0]:.2f}% {want[1]:+.2f}')
    text = ctx.run('diff', old, new)
    ctx.expect(ODD_ESCAPED in text, 'diff: the Python leaf frame is not a row')


def check_markup(ctx, prof):
    text = ctx.run('export', '-f', 'markup', '-i', prof)
    # a Python frame as llvm-symbolizer prints a symbolized one: function, file and line
    ctx.expect(len(re.findall(r'^    #1    0x0000000000000000 in rt_leaf /srv/app/prog.py:30$',
                              text, re.M)) == 30, 'markup: not 30 frames #1 of rt_leaf')
    ctx.expect(len(re.findall(r'^    #5    0x0000000000000000 in <module> /srv/app/sorter.py:40$',
                              text, re.M)) == 20, 'markup: not 20 frames #5 of <module>')


def check_dump(ctx, prof):
    text = ctx.run('dump', '-i', prof)
    ctx.expect(len(re.findall(r'^py_frame \d+ ', text, re.M)) == 7,
               'dump: not 7 py_frame records')
    ctx.expect(re.search(r'^py_frame 3 line 10 entry qualname "rt_top" file "/srv/app/prog.py"$',
                         text, re.M), 'dump: rt_top\'s record')
    ctx.expect(len(re.findall(r' python 1,2,3$', text, re.M)) == 30,
               'dump: not 30 samples of chain 1,2,3')


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--gen-profile', required=True)
    ap.add_argument('--py-fixture', required=True)
    ap.add_argument('--workdir', required=True)
    args = ap.parse_args()
    if not shutil.which('go'):
        log('SKIP: go not found (go tool pprof is the oracle; scripts/setup installs it)')
        return SKIP
    ctx = Ctx(args)
    prof = ctx.generate('py.data', 1)
    prof3 = ctx.generate('py3.data', 3)
    check_collapsed(ctx, prof)
    check_script(ctx, prof)
    check_report(ctx, prof)
    check_svg(ctx, prof)
    check_pprof(ctx, prof)
    check_diff(ctx, prof, prof3)
    check_markup(ctx, prof)
    check_dump(ctx, prof)
    if ctx.fails:
        log(f'{len(ctx.fails)} failure(s)')
        return 1
    log('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main())
