#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Inlined frames (issue 28) in script, report, the exports and diff, on a real recording.

tests/progs/inline_chain.c, built -O2 -g, spends its time in mix_leaf,
inlined into mix_middle, into mix_outer, into inline_work (noinline), called
from step_caller, inlined into inline_driver (noinline): the chains are
known by construction. Each case records it with `sfprof record` until
inline_work has MIN_SAMPLES samples (the workload doubled on a busy
machine, a bounded number of times), then:

  script   every distinct address of the program in `sfprof script -F
           +srcline` has the inlined chain binutils `addr2line -f -i` and
           `llvm-symbolizer-16 --inlining` give (names, and file:line as
           addr2line gives them), at the address for the sampled pc and at
           the address - 1 for callers, as sfprof looks callers up; the
           inlined frames are "(inlined)" as in perf script --inline; the
           hot samples have the chain by construction; `--no-inline` prints
           exactly the same with the inlined frames' lines left out.
  report   self rows are the real functions, as perf's, and equal
           `--no-inline`'s; `--children` has a row "[.] NAME (inlined)" for
           each inlined function, its Children share the share of samples
           whose script stack holds it, its Self 0; `-g` trees show the
           chain with " (inlined)" after the inlined functions (perf 6.1's
           report --inline), and `--no-inline` none.
  exports  collapsed equals stackcollapse-perf.pl's folding of the script
           text (inlined frames are plain names, as the script folds perf
           script --inline's); the svg has frames of the inlined functions;
           pprof's `go tool pprof -traces` shows the chain in order, and
           `-raw` shows the frames inlined at one address as one Location
           with several Lines, innermost first; `--no-inline` removes the
           inlined functions from all three; `export --diff`'s flame graph
           has them; `sfprof diff` keeps its rows
           the real functions (perf diff's self rows) with or without
           --no-inline.

Every check is also run against a deliberately wrong expectation and must fail.
Exit status 0 pass, 1 fail, 77 skip (not root, no BTF, no gas --gsframe, no addr2line,
llvm-symbolizer-16 or go).
"""

import os
import re
import shutil
import subprocess
import sys
from collections import Counter

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_test as rt  # noqa: E402
import report_test  # noqa: E402
import stackcollapse  # noqa: E402
from record_test import Failure, TooFew, expect, log, must_fail, raise_fails  # noqa: E402

SKIP = 77
MIN_SAMPLES = 100
# the hot chain by construction, innermost first (frames of the program)
HOT = ['mix_leaf', 'mix_middle', 'mix_outer', 'inline_work', 'step_caller', 'inline_driver',
       'main']
INLINED = {'mix_leaf', 'mix_middle', 'mix_outer', 'step_caller'}

_EVENT = re.compile(r'^\S.*? +\d+/\d+ +\[\d{3,}\] +\d+\.\d{6}: +\d+ \S+: $')
_FRAME = re.compile(r'^\t {0,15}([0-9a-f]{1,16}) (.+?)(?:\+0x[0-9a-f]+)? \((.+)\)$')
_SRCLINE = re.compile(r'^  (\S.*):(\d+)$')


def sfprof(ctx, args, check=True):
    return report_test.sfprof(ctx, args, check=check)


def parse_script(text):
    """[[{addr, name, module, src}, ...] innermost first] per sample; src is 'file:line'
    (base name) when srcline was printed."""
    samples, cur = [], None
    for n, line in enumerate(text.split('\n'), 1):
        if cur is None:
            if line == '':
                continue
            if not _EVENT.match(line):
                raise Failure(f'script line {n}: not a sample header: {line!r}')
            cur = []
            continue
        if line == '':
            samples.append(cur)
            cur = None
            continue
        m = _SRCLINE.match(line)
        if m and cur:
            cur[-1]['src'] = f'{m.group(1)}:{m.group(2)}'
            continue
        m = _FRAME.match(line)
        if not m:
            raise Failure(f'script line {n}: not a frame line: {line!r}')
        cur.append({'addr': int(m.group(1), 16), 'name': m.group(2), 'module': m.group(3),
                    'src': None})
    if cur is not None:
        raise Failure('script: the last sample is not followed by a blank line')
    return samples


def groups(sample, prog):
    """The program's addresses in a sample, innermost first: (address, is_ra, frames of
    that address innermost first). A frame shown "(inlined)" belongs to the next frame
    that is not; the first user frame of a sample is its pc, the others return
    addresses."""
    out, run, user_seen = [], [], False
    for f in sample:
        if f['module'] == '[kernel.kallsyms]':
            continue
        run.append(f)
        if f['module'] == 'inlined':
            continue
        if any(g['addr'] != f['addr'] for g in run):
            raise Failure(f'inlined frames at another address than their function: {run}')
        # another module's frames (libc's, inlined ones too with its debug file) are not checked
        if f['module'] == prog:
            out.append((f['addr'], user_seen, run))
        user_seen, run = True, []
    if run:
        raise Failure(f'inlined frames with no function after them: {run}')
    return out


def addr2line(prog, addrs):
    """{address: [(function, 'file:line')] innermost first} from binutils addr2line -f -i."""
    p = subprocess.run(['addr2line', '-a', '-f', '-i', '-e', prog, *[hex(a) for a in addrs]],
                       stdout=subprocess.PIPE, text=True, check=True, timeout=60)
    out, cur, lines = {}, None, p.stdout.splitlines()
    i = 0
    while i < len(lines):
        if re.match(r'^0x[0-9a-f]+$', lines[i]):
            cur = int(lines[i], 16)
            out[cur] = []
            i += 1
            continue
        func, where = lines[i], lines[i + 1]
        where = re.sub(r' \(discriminator \d+\)$', '', where)
        path, _, line = where.rpartition(':')
        # no line (crt1's _start): sfprof prints none
        src = None if path == '??' or line in ('?', '0') else f'{os.path.basename(path)}:{line}'
        out[cur].append((func, src))
        i += 2
    return out


def llvm_symbolizer(prog, addrs):
    """{address: [function] innermost first} from llvm-symbolizer-16 --inlining."""
    p = subprocess.run(['llvm-symbolizer-16', '--inlining', '--functions=linkage', '--obj', prog,
                        *[hex(a) for a in addrs]],
                       stdout=subprocess.PIPE, text=True, check=True, timeout=60)
    blocks = [b for b in p.stdout.split('\n\n') if b.strip()]
    if len(blocks) != len(addrs):
        raise Failure(f'llvm-symbolizer-16 printed {len(blocks)} blocks for {len(addrs)} addresses')
    return {a: b.strip().split('\n')[0::2] for a, b in zip(addrs, blocks)}


def setup(ctx):
    for tool in ('addr2line', 'llvm-symbolizer-16', 'go'):
        if not shutil.which(tool):
            log(f'SKIP: {tool} not found')
            sys.exit(SKIP)
    prog = ctx.compile('inline_chain.c', 'inline_chain', extra=['-g'])
    data = ctx.path('inline.data')
    report_test.record(ctx, [prog, ctx.secs(300)], data)
    text = sfprof(ctx, ['script', '-i', data, '--no-inline']).stdout
    hot = sum(1 for s in parse_script(text)
              if any(f['name'] == 'inline_work' and f['module'] == prog for f in s[:1]))
    log(f'{hot} samples in inline_work')
    if hot < MIN_SAMPLES:
        raise TooFew(f'{hot} samples in inline_work, fewer than {MIN_SAMPLES}')
    return prog, data


# --- script ---

def check_chains(prog, samples, a2l, llvm, what):
    fails = []
    seen = {}
    for s in samples:
        for addr, is_ra, run in groups(s, prog):
            seen[(addr, is_ra)] = run
    for (addr, is_ra), run in sorted(seen.items()):
        at = addr - 1 if is_ra else addr
        names = [f['name'] for f in run]
        want = [fn for fn, _ in a2l.get(at, [])]
        expect(names == want, fails,
               f'{what}: {hex(addr)} ({"return address" if is_ra else "pc"}): sfprof {names}, '
               f'addr2line -i {want}')
        expect(names == llvm.get(at), fails,
               f'{what}: {hex(addr)}: sfprof {names}, llvm-symbolizer --inlining {llvm.get(at)}')
        srcs = [f['src'] for f in run]
        want_src = [src for _, src in a2l.get(at, [])]
        expect(srcs == want_src, fails,
               f'{what}: {hex(addr)}: sfprof lines {srcs}, addr2line -i {want_src}')
    return fails, len(seen)


def hot_chains(prog, samples):
    """How many samples have HOT as their program's frames, innermost first."""
    n = 0
    for s in samples:
        names = [f['name'] for _, _, run in groups(s, prog) for f in run]
        n += names[:len(HOT)] == HOT
    return n


def case_script(ctx):
    prog, data = setup(ctx)
    text = sfprof(ctx, ['script', '-i', data, '-F', '+srcline']).stdout
    samples = parse_script(text)
    addrs = sorted({a - 1 if ra else a for s in samples for a, ra, _ in groups(s, prog)})
    a2l, llvm = addr2line(prog, addrs), llvm_symbolizer(prog, addrs)
    fails, n = check_chains(prog, samples, a2l, llvm, 'script')
    log(f'{n} distinct (address, pc or return address) of {os.path.basename(prog)} checked '
        'against addr2line -i and llvm-symbolizer-16 --inlining')
    hot = hot_chains(prog, samples)
    expect(hot >= MIN_SAMPLES, fails,
           f'{hot} samples with the chain {HOT}, fewer than {MIN_SAMPLES}')
    expect(any(f['module'] == 'inlined' for s in samples for f in s), fails,
           'no frame shown (inlined)')
    # wrong expectations: the chain without its inlined frames, and one level short
    wrong = {a: v[-1:] for a, v in a2l.items()}
    must_fail(check_chains(prog, samples, wrong, llvm, 'wrong')[0], 'chains without inlines')
    wrong = {a: v[1:] if len(v) > 1 else v for a, v in llvm.items()}
    must_fail(check_chains(prog, samples, a2l, wrong, 'wrong')[0], 'chains one level short')

    # --no-inline: the same lines, less the inlined frames (default fields: no srcline)
    full = sfprof(ctx, ['script', '-i', data]).stdout
    plain = sfprof(ctx, ['script', '-i', data, '--no-inline']).stdout
    stripped = '\n'.join(ln for ln in full.split('\n') if not ln.endswith(' (inlined)'))
    expect(plain == stripped, fails,
           'script --no-inline is not script with its (inlined) frames left out')
    expect(' (inlined)' not in plain, fails, 'script --no-inline shows inlined frames')
    must_fail([] if full == stripped else ['differs'], 'script with inlined frames')
    raise_fails(fails)


# --- report ---

def stack_names(prog, samples):
    """Per sample, the set of 'NAME (inlined)' of its inlined frames in the program."""
    out = []
    for s in samples:
        out.append({f['name'] + ' (inlined)' for _, _, run in groups(s, prog)
                    for f in run if f['module'] == 'inlined'})
    return out


def check_children(rep, shares, what):
    fails = []
    for name, share in sorted(shares.items()):
        rows = rep.find(sym=f'[.] {name}')
        expect(len(rows) == 1, fails, f'{what}: {len(rows)} rows [.] {name}')
        if len(rows) != 1:
            continue
        row = rows[0]
        expect(abs(row['Children'] - share) <= 0.011, fails,
               f'{what}: {name}: Children {row["Children"]:.2f}%, the script\'s stacks '
               f'{share:.2f}%')
        expect(row['Self'] == 0, fails, f'{what}: {name}: Self {row["Self"]:.2f}%, not 0')
    return fails


def tree_has(tree, chain):
    """True when report -g's @tree has @chain on consecutive lines, as a branch
    ('|--98.68%--NAME') or a row's only chain ('---NAME')."""
    lines = [re.sub(r'^[\s|]*(--[\d.]+%--|---)?', '', ln).strip() for ln in tree.split('\n')]
    return any(lines[i:i + len(chain)] == chain for i in range(len(lines)))


def case_report(ctx):
    prog, data = setup(ctx)
    fails = []
    rep = report_test.Report(sfprof(ctx, ['report', '-i', data, '--stdio']).stdout)
    plain = sfprof(ctx, ['report', '-i', data, '--stdio', '--no-inline']).stdout
    expect(rep.text == plain, fails, 'report (self rows) differs from report --no-inline')
    expect(rep.find(sym='[.] inline_work'), fails, 'no row [.] inline_work')
    expect('(inlined)' not in rep.text, fails, 'a self row of an inlined function')

    samples = parse_script(sfprof(ctx, ['script', '-i', data]).stdout)
    per = stack_names(prog, samples)
    count = Counter(n for names in per for n in names)
    shares = {n: 100.0 * c / len(samples) for n, c in count.items()}
    expect(set(f'{n} (inlined)' for n in INLINED) <= set(shares), fails,
           f'the script\'s stacks lack inlined functions: {sorted(shares)}')
    children = sfprof(ctx, ['report', '-i', data, '--stdio', '--children', '-g', 'none']).stdout
    crep = report_test.Report(children)
    fails += check_children(crep, shares, 'report --children')
    must_fail(check_children(crep, {k: v + 1 for k, v in shares.items()}, 'wrong'),
              'children shares one point off')
    nchildren = sfprof(ctx, ['report', '-i', data, '--stdio', '--children', '-g', 'none',
                             '--no-inline']).stdout
    expect('(inlined)' not in nchildren, fails, 'report --children --no-inline shows inlined rows')

    tree = sfprof(ctx, ['report', '-i', data, '--stdio', '-g']).stdout
    want = [f'{n} (inlined)' if n in INLINED else n for n in HOT]
    expect(tree_has(tree, want), fails, f'report -g: no chain {want} in the tree')
    must_fail([] if tree_has(tree, HOT) else ['absent'], 'a tree without (inlined)')
    # a row whose samples all share one chain prints it as one branch, '---NAME'
    one = '\n'.join(['    99.67%  p  p  [.] inline_work', '            |', '            ---' + want[0]]
                    + ['               ' + n for n in want[1:]])
    expect(tree_has(one, want), fails, 'the tree parser misses a single-branch chain')
    ntree = sfprof(ctx, ['report', '-i', data, '--stdio', '-g', '--no-inline']).stdout
    expect('(inlined)' not in ntree and 'mix_leaf' not in ntree, fails,
           'report -g --no-inline shows inlined functions')
    raise_fails(fails)


# --- exports and diff ---

def pprof_traces(path):
    p = subprocess.run(['go', 'tool', 'pprof', '-traces', path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120,
                       env={**os.environ, 'PPROF_TMPDIR': os.path.dirname(path)})
    if p.returncode:
        raise Failure(f'go tool pprof -traces failed: {p.stderr.strip()}')
    traces = []
    for block in p.stdout.split('-----------+')[1:]:
        frames = []
        for line in block.split('\n')[1:]:
            m = re.match(r'^\s+(?:\S+ms|\d+)?\s+(\S.*)$', line)
            if m and not re.match(r'^\s+(thread|pid|tid):', line):
                frames.append(m.group(1).strip())
        traces.append(frames)
    return traces


def pprof_locations(path):
    """[[function, ...] per Location, innermost Line first] from go tool pprof -raw."""
    p = subprocess.run(['go', 'tool', 'pprof', '-raw', path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120,
                       env={**os.environ, 'PPROF_TMPDIR': os.path.dirname(path)})
    if p.returncode:
        raise Failure(f'go tool pprof -raw failed: {p.stderr.strip()}')
    text = p.stdout.split('Locations', 1)[-1].split('Mappings', 1)[0]
    locs = []
    for line in text.split('\n'):
        m = re.match(r'^\s+\d+: 0x[0-9a-f]+ M=\d+ (\S+)', line)
        if m:
            locs.append([m.group(1)])
            continue
        m = re.match(r'^\s{8,}(\S+) \S*:\d+ s=\d+$', line)
        if m and locs:
            locs[-1].append(m.group(1))
    return locs


def case_exports(ctx):
    prog, data = setup(ctx)
    fails = []
    script = sfprof(ctx, ['script', '-i', data]).stdout
    folded = sfprof(ctx, ['export', '-i', data, '--format', 'collapsed']).stdout
    got = Counter()
    for line in folded.splitlines():
        stack, _, n = line.rpartition(' ')
        got[stack] += int(n)
    want = stackcollapse.fold(script, kernel=True)
    expect(got == want, fails, 'collapsed differs from stackcollapse-perf.pl of the script: '
           + '; '.join(f'{k}: {got[k]} vs {want[k]}' for k in set(got) ^ set(want)
                       if got[k] != want[k])[:600])
    chain = ';'.join(reversed(HOT))
    hot = sum(n for k, n in got.items() if chain in k)
    expect(hot >= MIN_SAMPLES, fails, f'collapsed: {hot} samples with {chain}')
    plain = sfprof(ctx, ['export', '-i', data, '--format', 'collapsed', '--no-inline']).stdout
    expect(not any(n in plain for n in INLINED), fails,
           'collapsed --no-inline shows inlined functions')
    nscript = sfprof(ctx, ['script', '-i', data, '--no-inline']).stdout
    must_fail([] if got == stackcollapse.fold(nscript, kernel=True) else ['differs'],
              'collapsed as the script without inlined frames folds')

    svg = ctx.path('inline.svg')
    sfprof(ctx, ['export', '-i', data, '--format', 'svg', '-o', svg])
    with open(svg, encoding='utf-8') as f:
        titles = re.findall(r'<title>([^<]*?) \(\d+ samples?', f.read())
    expect(INLINED <= set(titles), fails, f'svg: frames {sorted(INLINED - set(titles))} missing')
    sfprof(ctx, ['export', '-i', data, '--format', 'svg', '--no-inline', '-o', svg])
    with open(svg, encoding='utf-8') as f:
        ntitles = set(re.findall(r'<title>([^<]*?) \(\d+ samples?', f.read()))
    expect(not INLINED & ntitles, fails, 'svg --no-inline shows inlined functions')

    pb = ctx.path('inline.pb.gz')
    sfprof(ctx, ['export', '-i', data, '--format', 'pprof', '-o', pb])
    traces = pprof_traces(pb)
    # pprof marks a Line that is not its Location's last "(inline)"
    want = [f'{n} (inline)' if n in INLINED else n for n in HOT]
    hot = sum(1 for t in traces if t[:len(want)] == want)
    expect(hot >= 1, fails, f'go tool pprof -traces: no trace starting {want}')
    must_fail([] if any(t[:len(HOT)] == HOT for t in traces) else ['none'],
              'traces with the inlined functions as Locations of their own')
    locs = pprof_locations(pb)
    expect(HOT[:4] in locs, fails, f'go tool pprof -raw: no Location with Lines {HOT[:4]}')
    expect(HOT[4:6] in locs, fails, f'go tool pprof -raw: no Location with Lines {HOT[4:6]}')
    expect(not any(loc == ['mix_leaf'] for loc in locs), fails,
           'go tool pprof -raw: an inlined function as a Location of its own')
    sfprof(ctx, ['export', '-i', data, '--format', 'pprof', '--no-inline', '-o', pb])
    ntraces = pprof_traces(pb)
    expect(not any(f.split(' ')[0] in INLINED for t in ntraces for f in t), fails,
           'pprof --no-inline shows inlined functions')
    expect(any(t[:1] == ['inline_work'] for t in ntraces), fails,
           'pprof --no-inline: no trace starting at inline_work')

    # a differential flame graph folds as collapsed does: its frames have the inlined layers
    sfprof(ctx, ['export', '-i', data, '--format', 'svg', '--diff', data, '-o', svg])
    with open(svg, encoding='utf-8') as f:
        dtitles = set(re.findall(r'<title>([^<]*?) \(', f.read()))
    expect(INLINED <= dtitles, fails,
           f'svg --diff: frames {sorted(INLINED - dtitles)} missing')

    drows = sfprof(ctx, ['diff', data, data]).stdout
    ndrows = sfprof(ctx, ['diff', data, data, '--no-inline']).stdout
    expect('inline_work' in drows and '(inlined)' not in drows, fails,
           'diff: rows are not the real functions')
    expect(drows == ndrows, fails, 'diff differs from diff --no-inline')
    raise_fails(fails)


CASES = {'script': case_script, 'report': case_report, 'exports': case_exports}


def main():
    return rt.case_main(__doc__, CASES)


if __name__ == '__main__':
    sys.exit(main())
