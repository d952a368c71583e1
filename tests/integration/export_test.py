#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`sfprof export` on real recordings, read back by the tools each format is for.

Each --case records tests/progs/record_chains.c (four threads spinning in
hot leaves at the end of known call chains, built as record_test.py builds
it) and exports the profile:

  markup     two record_chains processes at once (the same binary at two
             load addresses), started by sh. The markup goes through
             `llvm-symbolizer-16 --filter-markup --debug-file-directory=DIR`,
             DIR holding a copy of every recorded binary at
             .build-id/xx/rest.debug: no error, no element left unprocessed,
             one block per sample, each mmap at the module-relative address
             readelf's PT_LOAD gives, every frame in the program named as the
             independent oracle (profile_oracle.py: nm, readelf) names it,
             every hot leaf named identically in all its samples, and the
             leaves' shares equal to `sfprof report --sort sym`'s. Then again
             with the program gone and only its debug file in DIR (program
             headers without file offsets): the same mmaps, every frame a bt.
  collapsed  every line `comm;frame;...;leaf COUNT` (one space, integer
             count, as speedscope needs), counts summing to the sample count,
             the process name as root, kernel frames only innermost, and the
             stacks equal to the oracle's (frames outside the program masked).
  pprof      `go tool pprof -top` (sample index samples) shows flat counts
             equal to the self counts of the collapsed stacks, and (cpu
             nanoseconds) flat% equal to `sfprof report --sort sym`; -raw shows
             the period, mappings with readelf's build IDs.
  svg        the flame graph parses as XML, loads nothing from outside, names
             the hot leaves in <title> with the collapsed counts and shares;
             its script passes `node --check`; with chromium, a headless
             load that zooms and searches (frames hidden, widths, "Matched")
             and a screenshot, both optional.
  cli        bad formats, options and files: messages and exit status.

Each check is also run against a deliberately wrong input or expectation (a
shifted mmap, an empty debug directory, a changed count, a missing name, a
cut file) and must then fail.

Exit status 0 pass, 1 fail, 77 skip (not root, no BTF, no gas --gsframe, no
llvm-symbolizer-16 or go).
"""

import gzip
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import elf_labels  # noqa: E402
import profile_oracle  # noqa: E402
import record_test as rt  # noqa: E402

SKIP = 77
HOT = sorted(rt.CHAINS)             # the hot leaves
MIN_LEAF_SAMPLES = 50
SVG_NS = '{http://www.w3.org/2000/svg}'
Failure = rt.Failure
log, run, expect, must_fail, raise_fails = rt.log, rt.run, rt.expect, rt.must_fail, rt.raise_fails


def need(tool, why):
    if not shutil.which(tool):
        log(f'SKIP: {tool} not found ({why}; scripts/setup installs it)')
        sys.exit(SKIP)


def record_chains(ctx, name, seconds=2, procs=1, exe=None):
    """Record record_chains for @seconds (times ctx.scale: longer when a run had too few
    samples) (@procs copies at once, under sh; named @exe if given): the profile, its
    oracle reading, the program and its library."""
    ctx.compile('libcallback.c', 'libcallback.so', shared=True)
    prog = ctx.compile('record_chains.c', 'record_chains',
                       libs=['-L', ctx.work, '-lcallback', '-Wl,-rpath,$ORIGIN'])
    if exe:
        shutil.copy2(prog, ctx.path(exe))
        prog = ctx.path(exe)
    out = ctx.path(name)
    seconds = ctx.secs(seconds)
    if procs == 1:
        cmd = [prog, seconds]
    else:
        cmd = ['sh', '-c', ' & '.join([f'{prog} {seconds}'] * procs) + '; wait']
    p = ctx.record(['--', *cmd], out, timeout=60 * ctx.scale)
    if p.returncode != 0:
        raise Failure(f'sfprof record exited with {p.returncode}')
    prof = ctx.load(out)
    return out, prof, prog, ctx.path('libcallback.so')


def export(ctx, data, fmt, out=None, extra=()):
    # the oracle names the dump's frames with the symbol tables, which know nothing of
    # inlining (ld.so's and libc's debug files have inlined chains): --no-inline (inlined
    # frames are inline_test.py's)
    cmd = [ctx.sfprof, 'export', '--no-inline', '-i', data, '-f', fmt, *extra]
    if out:
        cmd += ['-o', out]
    log('$ ' + rt.quote(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if p.stderr.strip():
        log(p.stderr.decode(errors='replace').rstrip())
    if p.returncode != 0:
        raise Failure(f'sfprof export -f {fmt} exited with {p.returncode}')
    if p.stderr.strip():
        raise Failure(f'sfprof export -f {fmt} wrote to stderr')
    return p.stdout


def report_shares(ctx, data):
    """{(kind, symbol): percent} from `sfprof report --sort sym`, or None without report."""
    p = subprocess.run([ctx.sfprof, 'report', '-i', data, '--sort', 'sym'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors='replace', timeout=120)
    if p.returncode != 0:
        log(f'note: sfprof report --sort sym exited with {p.returncode}: '
            f'{p.stderr.strip()[:200]}: comparing with the collapsed stacks only')
        return None
    rows = {}
    for line in p.stdout.splitlines():
        m = re.match(r'^\s*([\d.]+)%\s+\[(.)\] (.*)$', line)
        if m:
            key = (m.group(2), m.group(3))
            rows[key] = rows.get(key, 0.0) + float(m.group(1))
    if not rows:
        raise Failure('sfprof report --sort sym printed no rows')
    return rows


# --- collapsed ---

LINE = re.compile(r'^(\S(?:.*\S)?) (\d+)$')


def parse_collapsed(text):
    """[(frames, count)]; Failure on a line speedscope or flamegraph.pl would not read."""
    stacks = []
    for n, line in enumerate(text.splitlines(), 1):
        m = LINE.match(line)
        if not m:
            raise Failure(f'collapsed line {n} is not "frames COUNT": {line[:200]!r}')
        frames = m.group(1).split(';')
        if any(f == '' for f in frames):
            raise Failure(f'collapsed line {n} has an empty frame: {line[:200]!r}')
        stacks.append((frames, int(m.group(2))))
    return stacks


def self_counts(stacks):
    """{name: samples whose innermost frame it is}, kernel names without their _[k]."""
    out = Counter()
    for frames, count in stacks:
        leaf = frames[-1]
        out[leaf[:-4] if leaf.endswith('_[k]') else leaf] += count
    return out


def program_names(paths):
    names = set()
    for path in paths:
        names.update(name for _, _, name in profile_oracle.Elf(path).syms)
    return names


def user_part(frames):
    """The user frames of a collapsed stack, outermost first (root and kernel frames dropped)."""
    return [f for f in frames[1:] if not f.endswith('_[k]')]


def check_collapsed(stacks, prof, syms, modules, known, comm):
    fails = []
    total = sum(s.weight for s in prof.samples)
    got = sum(c for _, c in stacks)
    expect(got == total, fails, f'counts sum to {got}, the profile has {total} samples')
    expect(got == prof.summary[0], fails, f'counts sum to {got}, dump says {prof.summary[0]}')
    roots = Counter(frames[0] for frames, _ in stacks)
    expect(set(roots) == {comm}, fails, f'root frames {dict(roots)}, want only {comm!r}')
    for frames, _ in stacks:
        kernel = [f.endswith('_[k]') for f in frames[1:]]
        if kernel != sorted(kernel):
            fails.append(f'a user frame after a kernel frame: {";".join(frames)[:300]}')
            break
    seen = Counter(tuple(frames) for frames, _ in stacks)
    expect(max(seen.values()) == 1, fails, 'a stack appears on two lines')
    # the oracle's stacks, frames outside the program masked on both sides
    mine = Counter()
    for frames, count in stacks:
        mine[tuple(f if f in known else '?' for f in user_part(frames))] += count
    theirs = Counter()

    def outside(f):
        # masked by name as the export's frames are: ld.so's entry label _start (named as
        # perf names it, elf_labels.py) is also a name of the program
        name = f.symbol
        if not name and f.module and f.vaddr is not None:
            found = elf_labels.Labels.of(elf_labels.debug_file(f.module) or f.module).lookup(
                f.vaddr)
            name = found[0] if found else None
        return name if name in known else '?'
    for s in prof.samples:
        frames = syms.user_frames(s)
        theirs[tuple(f.symbol if f.module in modules and f.symbol else outside(f)
                     for f in reversed(frames))] += s.weight
    diff = (mine - theirs) + (theirs - mine)
    if diff:
        fails.append(f'{sum(diff.values())} samples differ from the oracle\'s stacks')
        for stack, n in diff.most_common(4):
            side = 'export' if mine[stack] > theirs[stack] else 'oracle'
            fails.append(f'  {n} more in the {side}: {";".join(stack)[:300]}')
    for leaf in HOT:
        n = sum(c for frames, c in stacks if user_part(frames)[-1:] == [leaf])
        expect(n >= MIN_LEAF_SAMPLES, fails,
               rt.TooFewMsg(f'{leaf}: only {n} samples, need {MIN_LEAF_SAMPLES}'))
    return fails


def case_collapsed(ctx):
    data, prof, prog, lib = record_chains(ctx, 'collapsed.data')
    text = export(ctx, data, 'collapsed').decode()
    for line in text.splitlines()[:6]:
        log('  ' + line[:160])
    stacks = parse_collapsed(text)
    known = program_names([prog, lib])
    modules = {prog, lib}
    comm = os.path.basename(prog)
    fails = check_collapsed(stacks, prof, ctx.syms, modules, known, comm)
    log(f'collapsed: {len(stacks)} distinct stacks, {sum(c for _, c in stacks)} samples')
    raise_fails(fails)
    # wrong on purpose
    bad = [(f, c + (1 if i == 0 else 0)) for i, (f, c) in enumerate(stacks)]
    must_fail(check_collapsed(bad, prof, ctx.syms, modules, known, comm), 'one count plus one')
    hot = max(range(len(stacks)), key=lambda i: stacks[i][1])
    bad = list(stacks)
    frames = list(bad[hot][0])
    frames[-2] = 'not_this_function'
    bad[hot] = (frames, bad[hot][1])
    must_fail(check_collapsed(bad, prof, ctx.syms, modules, known, comm),
              'a frame of the hottest stack renamed')
    must_fail(check_collapsed(stacks, prof, ctx.syms, modules, known, 'other'),
              'another process name as root')
    first, rest = text.split('\n', 1)
    try:
        parse_collapsed(first.replace(' ', '  ') + '\n' + rest)
        must_fail([], 'two spaces before a count')
    except Failure as e:
        log(f'ok: negative check fails as it must: two spaces before a count ({e})')


# --- markup ---

BT_OUT = re.compile(r'^\s*#(\d+)\s+0x([0-9a-f]+)\s*(.*)$')
HEADER = re.compile(r'^(.*) (\d+)/(\d+) \[(\d+)\] (\d+)\.(\d{9}):')
MMAP = re.compile(r'^\{\{\{mmap:0x([0-9a-f]+):0x([0-9a-f]+):load:(\d+):([rwx]+):'
                  r'0x([0-9a-f]+)\}\}\}$')
MODULE = re.compile(r'^\{\{\{module:(\d+):([^:]*):elf:([0-9a-f]+)\}\}\}$')


def build_id_dir(ctx, prof, name):
    """DIR/.build-id/xx/rest.debug: a copy of every recorded binary with a build ID."""
    top = ctx.path(name)
    shutil.rmtree(top, ignore_errors=True)
    for m in prof.modules.values():
        if not m.build_id or not m.path.startswith('/') or not os.path.isfile(m.path):
            continue
        d = os.path.join(top, '.build-id', m.build_id[:2])
        os.makedirs(d, exist_ok=True)
        shutil.copyfile(m.path, os.path.join(d, m.build_id[2:] + '.debug'))
    os.makedirs(top, exist_ok=True)
    return top


def symbolize(markup, debug_dir):
    cmd = ['llvm-symbolizer-16', '--filter-markup', f'--debug-file-directory={debug_dir}']
    log('$ ' + rt.quote(cmd) + ' < markup')
    p = subprocess.run(cmd, input=markup, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, errors='replace', timeout=300)
    if p.returncode != 0:
        raise Failure(f'llvm-symbolizer-16 exited with {p.returncode}')
    return p.stdout, p.stderr


def frame_name(rest):
    """The function of an llvm-symbolizer frame line's tail, None when it has none."""
    rest = re.sub(r'\s*\([^()]*\)$', '', rest).strip()     # (module+0xoffset)
    if not rest:
        return None
    parts = rest.rsplit(' ', 1)
    if len(parts) == 2 and re.match(r'^\S+:\d+(:\d+)?$', parts[1]):
        return parts[0]
    return rest


def parse_symbolized(out):
    """{(pid, tid, time): [(frame number, name)]} from the filter's output."""
    blocks, cur = {}, None
    for line in out.splitlines():
        m = HEADER.match(line)
        if m:
            key = (int(m.group(2)), int(m.group(3)), int(m.group(5)) * 10**9 + int(m.group(6)))
            if key in blocks:
                raise Failure(f'two samples with the same thread and time: {line}')
            cur = blocks[key] = []
            continue
        m = BT_OUT.match(line)
        if m and cur is not None:
            cur.append((int(m.group(1)), frame_name(m.group(3))))
    return blocks


def check_symbolized(out, err, prof, syms, modules, report, quiet=False):
    fails = []
    # the filter reports on stderr, carets included, and still exits 0
    errors = [l for l in err.splitlines() if l.strip()]
    errors += [l for l in out.splitlines() if re.match(r'^\s*(error|warning):', l)]
    expect(not errors, fails, f'{len(errors)} error lines from llvm-symbolizer, first: '
           f'{errors[:1]}')
    left = [l for l in out.splitlines() if '{{{' in l or l.startswith('[[[bt')]
    expect(not left, fails, f'{len(left)} markup elements not processed, first: {left[:1]}')
    blocks = parse_symbolized(out)
    expect(len(blocks) == len(prof.samples), fails,
           f'{len(blocks)} sample blocks, the profile has {len(prof.samples)} samples')
    leaves = {leaf: [0, 0] for leaf in HOT}     # samples, named identically
    wrong = Counter()
    renumbered = []         # dump lines of samples whose frames are not numbered 0, 1, ...
    alone = Counter()       # llvm's frame 0 name, samples taken in user mode
    for s in prof.samples:
        frames = syms.user_frames(s)
        got = blocks.get((s.pid, s.tid, s.time))
        if got is None:
            fails.append(f'no block for the sample at dump line {s.line}')
            continue
        if [n for n, _ in got] != list(range(len(got))):
            renumbered.append(s.line)
        if got and not s.kstack:
            alone[got[0][1]] += s.weight
        if frames and frames[0].symbol in leaves:
            st = leaves[frames[0].symbol]
            st[0] += 1
            st[1] += bool(got) and got[0][1] == frames[0].symbol
        for i, f in enumerate(frames):
            name = got[i][1] if i < len(got) else '<missing>'
            # elsewhere (libc) aliases make two right names: getpagesize, __getpagesize
            if f.module in modules and f.symbol and name != f.symbol:
                wrong[(i, f.symbol, name)] += 1
        if len(got) != len(frames):
            wrong[('count', len(frames), len(got))] += 1
    expect(not renumbered, fails, f'{len(renumbered)} samples whose frames are not numbered '
           f'0, 1, 2...: the first at dump line {renumbered[:1]}')
    for leaf, (n, same) in leaves.items():
        if not quiet:
            log(f'markup: {leaf}: {same} of {n} samples named {leaf} by llvm-symbolizer')
        expect(n >= MIN_LEAF_SAMPLES, fails,
               rt.TooFewMsg(f'{leaf}: only {n} samples, need {MIN_LEAF_SAMPLES}'))
        expect(same == n, fails, f'{leaf}: llvm-symbolizer names {n - same} of its {n} '
               f'samples otherwise')
    if wrong:
        fails.append(f'{sum(wrong.values())} frames named otherwise than by the oracle')
        for (i, want, got_), n in wrong.most_common(4):
            fails.append(f'  {n} x frame {i}: oracle {want}, llvm-symbolizer {got_}')
    if report is not None:
        total = sum(s.weight for s in prof.samples)
        for leaf in HOT:
            want = report.get(('.', leaf), 0.0)
            mine = 100.0 * alone[leaf] / total
            if not quiet:
                log(f'markup: {leaf}: {mine:.2f}% of the samples (user mode) by '
                    f'llvm-symbolizer, {want:.2f}% self by sfprof report')
            expect(abs(mine - want) <= 0.011, fails,
                   f'{leaf}: {mine:.2f}% by llvm-symbolizer, sfprof report says {want:.2f}%')
    return fails


def check_mmaps(markup, prof, elves):
    """Each mmap's module-relative address is what readelf -lW says the mapping holds
    (@elves: Elf by path, filled as needed)."""
    fails, checked = [], 0
    modules = {}
    for line in markup.splitlines():
        m = MODULE.match(line)
        if m:
            modules[int(m.group(1))] = m.group(3)
            continue
        m = MMAP.match(line)
        if not m:
            continue
        start, size, mod, perms, rel = (int(m.group(1), 16), int(m.group(2), 16),
                                        int(m.group(3)), m.group(4), int(m.group(5), 16))
        if mod not in modules:
            fails.append(f'mmap before its module: {line}')
            continue
        maps = [mp for pr in prof.processes for mp in pr.mappings
                if mp.start == start and mp.module and mp.module.build_id == modules[mod]]
        if not maps:
            fails.append(f'no recorded mapping at {start:#x} of build ID {modules[mod]}')
            continue
        mp = maps[0]
        if mp.module.path not in elves:
            elves[mp.module.path] = profile_oracle.Elf(mp.module.path)
        want = elves[mp.module.path].vaddr(mp.offset)
        expect(want == rel, fails, f'{line}: readelf puts offset {mp.offset:#x} of '
               f'{mp.module.path} at {want if want is None else hex(want)}')
        expect(size == mp.end - mp.start and perms == mp.prot.replace('-', ''), fails,
               f'{line}: recorded {mp}')
        checked += 1
    expect(checked, fails, 'no mmap element')
    return fails, checked


def check_streams(markup, prof):
    """One {{{reset}}} stream per process: each stream's samples are of one pid, each pid
    sampled has a stream (two if it exec'd), and the streams hold every sample."""
    fails = []
    streams = markup.split('{{{reset}}}\n')
    expect(streams[0] == '', fails, 'text before the first {{{reset}}}')
    pids = Counter()
    for st in streams[1:]:
        mine = {int(m.group(2)) for m in map(HEADER.match, st.splitlines()) if m}
        expect(len(mine) == 1, fails, f'a stream with the samples of pids {sorted(mine)}')
        pids.update(mine)
    sampled = {s.pid for s in prof.samples}
    execs = {pr.pid for pr in prof.processes if len([p for p in prof.processes
                                                      if p.pid == pr.pid]) > 1}
    expect(set(pids) == sampled, fails, f'streams of pids {sorted(pids)}, samples of '
           f'{sorted(sampled)}')
    expect(all(n == 1 or pid in execs for pid, n in pids.items()), fails,
           f'several streams of a pid that did not exec: {pids}')
    headers = sum(1 for line in markup.splitlines() if HEADER.match(line))
    expect(headers == len(prof.samples), fails,
           f'{headers} sample lines, the profile has {len(prof.samples)} samples')
    log(f'markup: {len(markup.splitlines())} lines, {len(streams) - 1} streams for pids '
        f'{sorted(pids)}, {headers} samples')
    return fails


def case_markup(ctx):
    need('llvm-symbolizer-16', 'the markup oracle')
    data, prof, prog, lib = record_chains(ctx, 'markup.data', procs=2)
    pids = {s.pid for s in prof.samples if s.process and s.process.exe == prog}
    if len(pids) != 2:
        raise Failure(f'samples of {len(pids)} record_chains processes, want 2')
    markup = export(ctx, data, 'markup').decode()
    fails = check_streams(markup, prof)
    elves = {}
    mm_fails, checked = check_mmaps(markup, prof, elves)
    fails += mm_fails
    log(f'markup: {checked} mmap elements at the addresses readelf gives')
    debug_dir = build_id_dir(ctx, prof, 'debug')
    out, err = symbolize(markup, debug_dir)
    for line in out.splitlines()[:12]:
        log('  ' + line[:160])
    report = report_shares(ctx, data)
    fails += check_symbolized(out, err, prof, ctx.syms, {prog, lib}, report)
    raise_fails(fails)

    # wrong on purpose: the program's mmaps 0x40 off, and no binaries to read
    prog_id = profile_oracle.Elf(prog).build_id
    ids = {m.group(1) for m in map(MODULE.match, markup.splitlines()) if m and
           m.group(3) == prog_id}

    def shift(line):
        m = MMAP.match(line)
        if not m or m.group(3) not in ids:
            return line
        return line[:m.start(5)] + f'{int(m.group(5), 16) + 0x40:016x}' + line[m.end(5):]

    shifted = '\n'.join(shift(line) for line in markup.splitlines()) + '\n'
    must_fail(check_mmaps(shifted, prof, elves)[0], 'the program\'s mmaps 0x40 off (readelf)')
    out2, err2 = symbolize(shifted, debug_dir)
    must_fail(check_symbolized(out2, err2, prof, ctx.syms, {prog, lib}, None, quiet=True),
              'the program\'s mmaps 0x40 off (llvm-symbolizer)')
    empty = ctx.path('empty-debug')
    os.makedirs(empty, exist_ok=True)
    out3, err3 = symbolize(markup, empty)
    must_fail(check_symbolized(out3, err3, prof, ctx.syms, {prog, lib}, None, quiet=True),
              'no binaries in the debug directory')
    debug_file_only(ctx, data, prof, prog, lib, debug_dir, elves, markup)


PLAIN_FRAME = re.compile(r'^    #\d+    0x[0-9a-f]{16} ', re.M)


def debug_file_only(ctx, data, prof, prog, lib, debug_dir, elves, before):
    """The program gone, only its debug file (objcopy --only-keep-debug) found by build ID:
    its program headers keep addresses but not file offsets, and the markup must still
    place and name every frame. The oracle read the program before it went."""
    bid = profile_oracle.Elf(prog).build_id
    debug = os.path.join(debug_dir, '.build-id', bid[:2], bid[2:] + '.debug')
    run(['objcopy', '--only-keep-debug', prog, debug])
    gone = prog + '.gone'
    os.rename(prog, gone)
    try:
        markup = export(ctx, data, 'markup', extra=['--debug-file-directory', debug_dir]).decode()
    finally:
        os.rename(gone, prog)
    fails, checked = check_mmaps(markup, prof, elves)
    expect(checked == check_mmaps(before, prof, elves)[1], fails,
           f'{checked} mmaps, {check_mmaps(before, prof, elves)[1]} with the program there')
    plain = len(PLAIN_FRAME.findall(markup))
    expect(plain == len(PLAIN_FRAME.findall(before)), fails,
           f'{plain} frames as plain text, not {{{{{{bt}}}}}}, '
           f'{len(PLAIN_FRAME.findall(before))} with the program there')
    out, err = symbolize(markup, debug_dir)
    fails += check_symbolized(out, err, prof, ctx.syms, {prog, lib}, None, quiet=True)
    raise_fails(fails)
    log(f'markup: the program gone, its debug file by build ID: {checked} mmaps where readelf '
        f'puts them, every frame named as before')


# --- pprof ---

TOP_ROW = re.compile(r'^\s*(\S+)\s+([\d.]+)%\s+([\d.]+)%\s+(\S+)\s+([\d.]+)%\s+(.+)$')


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
    log('$ ' + rt.quote(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors='replace', env=go_env(ctx), timeout=300)
    if p.returncode != 0:
        raise Failure(f'go tool pprof exited with {p.returncode}: {p.stderr.strip()[:300]}')
    if p.stderr.strip():
        raise Failure(f'go tool pprof complains: {p.stderr.strip()[:300]}')
    return p.stdout


def parse_top(text):
    """({name: flat}, {name: flat%}, total) of `pprof -top`; flat as printed (count or time)."""
    flat, pct, total = Counter(), Counter(), None
    rows = False
    for line in text.splitlines():
        m = re.search(r'Total samples = (\d+)\s*$', line)
        if m:
            total = int(m.group(1))
        if re.match(r'^\s*flat\s+flat%', line):
            rows = True
            continue
        m = TOP_ROW.match(line) if rows else None
        if m:
            value = m.group(1)
            flat[m.group(6)] += int(value) if value.isdigit() else 0
            pct[m.group(6)] += float(m.group(2))
    return flat, pct, total


def check_pprof(flat, pct, total, selfs, nsamples, report):
    fails = []
    expect(total == nsamples, fails, f'pprof: {total} samples in all, the profile has {nsamples}')
    for name in set(flat) | set(k for k, v in selfs.items() if v):
        expect(flat[name] == selfs[name], fails,
               f'{name}: flat {flat[name]} in pprof, {selfs[name]} self in the collapsed stacks')
    for leaf in HOT:
        expect(selfs[leaf] >= MIN_LEAF_SAMPLES, fails,
               rt.TooFewMsg(f'{leaf}: only {selfs[leaf]} samples, need {MIN_LEAF_SAMPLES}'))
    if report is not None:
        mine = Counter()
        for (_, sym), share in report.items():
            mine[sym] += share
        for name in set(pct) | set(mine):
            expect(abs(pct[name] - mine[name]) <= 0.011, fails,
                   f'{name}: flat {pct[name]:.2f}% in pprof (cpu), '
                   f'{mine[name]:.2f}% in sfprof report')
    return fails


def case_pprof(ctx):
    need('go', 'go tool pprof is the oracle')
    data, prof, prog, lib = record_chains(ctx, 'pprof.data')
    out = ctx.path('profile.pb.gz')
    export(ctx, data, 'pprof', out=out)
    with open(out, 'rb') as f:
        raw = f.read()
    fails = []
    expect(raw[:2] == b'\x1f\x8b', fails, 'not gzip data')
    gzip.decompress(raw)
    # pprof names an unnamed frame by its address (module+0xADDR), as collapsed does with
    # --keep-addresses; without it collapsed folds them into [module] (CI: a sample in
    # record_chains' PLT, record_chains+0x1026 in pprof, [record_chains] in collapsed)
    selfs = self_counts(parse_collapsed(export(ctx, data, 'collapsed',
                                               extra=['--keep-addresses']).decode()))
    top_args = ['-top', '-nodecount=1000000', '-nodefraction=0', '-edgefraction=0']
    counts = pprof(ctx, top_args + ['-sample_index=samples'], out)
    for line in counts.splitlines()[:14]:
        log('  ' + line)
    flat, _, total = parse_top(counts)
    _, pct, _ = parse_top(pprof(ctx, top_args + ['-sample_index=cpu'], out))
    report = report_shares(ctx, data)
    nsamples = sum(s.weight for s in prof.samples)
    fails += check_pprof(flat, pct, total, selfs, nsamples, report)
    rawtext = pprof(ctx, ['-raw'], out)
    freq = prof.freq
    expect(f'Period: {10**9 // freq}' in rawtext, fails, f'-raw shows no period {10**9 // freq}')
    expect('PeriodType: cpu nanoseconds' in rawtext, fails, '-raw: period type not cpu nanoseconds')
    expect('samples/count cpu/nanoseconds' in rawtext, fails, '-raw: sample types')
    for path in (prog, lib):
        bid = profile_oracle.Elf(path).build_id
        expect(re.search(rf'^\d+: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ {re.escape(path)} {bid}',
                         rawtext, re.M), fails, f'-raw: no mapping of {path} with build ID {bid}')
    raise_fails(fails)
    log('pprof: flat counts equal the collapsed self counts' +
        (', flat% equal sfprof report\'s' if report else ''))

    # wrong on purpose
    bad = Counter(selfs)
    bad[HOT[0]] += 1
    must_fail(check_pprof(flat, pct, total, bad, nsamples, None), f'{HOT[0]} one sample more')
    if report:
        bad = dict(report)
        bad[('.', HOT[1])] = bad.get(('.', HOT[1]), 0) + 0.5
        must_fail(check_pprof(flat, pct, total, selfs, nsamples, bad),
                  f'{HOT[1]} 0.5% more in the report')


# --- svg ---

def check_svg(text, selfs_cum, total, process):
    fails = []
    try:
        root = ET.fromstring(text.encode('utf-8', 'surrogateescape'))
    except ET.ParseError as e:
        return [f'the SVG does not parse as XML: {e}']
    expect(root.tag == SVG_NS + 'svg', fails, f'root element {root.tag}')
    titles = [t.text or '' for t in root.iter(SVG_NS + 'title')]
    frames = {}
    for t in titles:
        m = re.match(r'^(.*) \((\d+) samples?, ([\d.]+)%\)$', t)
        if not m:
            fails.append(f'a title is not "NAME (N samples, P%)": {t[:100]!r}')
            break
        frames.setdefault(m.group(1), []).append((int(m.group(2)), float(m.group(3))))
    expect(frames.get('all') == [(total, 100.0)], fails,
           f'"all" is {frames.get("all")}, want {total} samples, 100%')
    expect(frames.get(process) == [(total, 100.0)], fails,
           f'the process {process!r} is {frames.get(process)}, want {total} samples, 100%')
    for leaf in HOT:
        got = frames.get(leaf, [])
        want = selfs_cum[leaf]
        expect(sum(n for n, _ in got) == want, fails,
               f'{leaf}: {got} in the titles, {want} samples in the collapsed stacks')
        for n, p in got:
            expect(abs(p - 100.0 * n / total) < 0.006, fails, f'{leaf}: {n} samples but {p}%')
    # self-contained: nothing loaded from elsewhere
    refs = re.findall(r'(?:href|src)\s*=|url\(|@import|<image', text)
    expect(not refs, fails, f'external references: {refs[:3]}')
    scripts = list(root.iter(SVG_NS + 'script'))
    expect(len(scripts) == 1 and 'function zoom' in (scripts[0].text or ''), fails,
           'no inline script with zoom')
    expect('function search' in text and 'Reset Zoom' in text, fails, 'no search or reset zoom')
    return fails


def chromium_probe(ctx, svg_path):
    """Load the SVG headless, zoom into spin_a and search, return the DOM (or None)."""
    browser = shutil.which('chromium') or shutil.which('chromium-browser')
    if not browser:
        log('note: no chromium: the headless zoom/search check and screenshot are skipped')
        return None
    with open(svg_path) as f:
        text = f.read()
    probe = ("<script type=\"text/ecmascript\"><![CDATA[\nfunction probe() {\n"
             "  var g = frames.filter(function (g) { return g.fname === 'spin_a'; })[0];\n"
             "  zoom(g); search(/a_inner|spin_a/);\n"
             "  svg.setAttribute('fg:probe', g.querySelector('rect').getAttribute('width'));\n"
             "}\n]]></script>\n</svg>")
    text = text.replace('onload="init(evt)"', 'onload="init(evt); probe()"')
    text = text[:text.rindex('</svg>')] + probe
    path = ctx.path('probe.svg')
    with open(path, 'w') as f:
        f.write(text)
    base = [browser, '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
            f'--user-data-dir={ctx.path("chromium")}']
    p = subprocess.run(base + ['--dump-dom', 'file://' + path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, errors='replace', timeout=120)
    shot = ctx.path('flamegraph.png')
    subprocess.run(base + [f'--screenshot={shot}', '--window-size=1200,900',
                           'file://' + os.path.abspath(svg_path)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    if os.path.exists(shot):
        log(f'screenshot: {shot}')
    if p.returncode != 0 or '<svg' not in p.stdout:
        log(f'note: chromium --dump-dom failed ({p.returncode}): {p.stderr.strip()[:200]}')
        return None
    return p.stdout


def check_probe(dom):
    """What the script did in chromium: spin_a across the width, others hidden, 100% matched."""
    fails = []
    m = re.search(r'fg:probe="([\d.]+)"', dom)
    expect(m and abs(float(m.group(1)) - 1180) < 0.5, fails,
           f'the zoomed frame is {m.group(1) if m else "?"} px wide, want 1180')
    hidden = {n: len(re.findall(rf'<g class="f hide"[^>]*><title>{n} \(', dom))
              for n in ('spin_c', 'spin_cb', 'spin_recursion')}
    expect(all(hidden.values()), fails, f'frames outside the zoom not hidden: {hidden}')
    expect('Matched: 100.00%' in dom, fails, 'the search does not say "Matched: 100.00%"')
    return fails


def case_svg(ctx):
    # a name of 16 bytes: its comm keeps 15, the first byte of the UTF-8 'é' alone,
    # which is not UTF-8 and must not make the SVG bad XML: it is escaped, as everywhere
    data, prof, prog, lib = record_chains(ctx, 'svg.data',
                                          exe=os.fsdecode(b'record_chains_\xc3\xa9'))
    root = 'record_chains_\\xc3'
    path = ctx.path('flamegraph.svg')
    export(ctx, data, 'svg', out=path, extra=['--title', 'record_chains & <friends>'])
    with open(path, encoding='utf-8', errors='surrogateescape') as f:
        text = f.read()
    stacks = parse_collapsed(export(ctx, data, 'collapsed').decode(errors='surrogateescape'))
    cum = Counter()
    for frames, count in stacks:
        for name in set(frames):
            cum[name] += count
    total = sum(c for _, c in stacks)
    fails = check_svg(text, cum, total, root)
    log(f'svg: {len(text)} bytes, {text.count("<g class=")} frames')
    if shutil.which('node'):
        script = re.search(r'<script[^>]*><!\[CDATA\[\n(.*?)\]\]></script>', text, re.S)
        js = ctx.path('flamegraph.js')
        with open(js, 'w') as f:
            f.write(script.group(1) if script else '')
        p = run(['node', '--check', js], check=False)
        expect(script and p.returncode == 0, fails, 'the script does not pass node --check')
    else:
        log('note: no node: the script is not syntax-checked')
    dom = chromium_probe(ctx, path)
    if dom is not None:
        probe_fails = check_probe(dom)
        fails += probe_fails
        if not probe_fails:
            log('chromium: zoom into spin_a hides the other leaves, search matches 100.00%')
    raise_fails(fails)

    # wrong on purpose
    bad = Counter(cum)
    bad[HOT[0]] += 1
    must_fail(check_svg(text, bad, total, root), f'{HOT[0]} one sample more than the titles say')
    must_fail(check_svg(text.replace('>spin_a (', '>spin_x ('), cum, total, root),
              'spin_a missing')
    must_fail(check_svg(text[:len(text) // 2], cum, total, root), 'the file cut in half')
    must_fail(check_svg(text.replace(root, 'record_chains_\udcc3'), cum, total, root),
              'the comm\'s lone UTF-8 byte written as it is')
    if dom is not None:
        must_fail(check_probe(dom.replace('Matched: 100.00%', 'Matched: 50.00%')),
                  'the search matching half')


# --- cli ---

def case_cli(ctx):
    fails = []
    data, prof, prog, lib = record_chains(ctx, 'cli.data', seconds=0.5)

    def sfprof(args, want_status, want_msg):
        p = subprocess.run([ctx.sfprof, 'export', *args], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, errors='replace')
        log(f'$ sfprof export {rt.quote(args)}: exit {p.returncode}: {p.stderr.strip()[:120]}')
        expect(p.returncode == want_status, fails,
               f'export {rt.quote(args)}: exit {p.returncode}, want {want_status}')
        expect(want_msg in p.stderr, fails, f'export {rt.quote(args)}: no {want_msg!r}')
        return p

    sfprof(['-i', data], 2, 'say which format')
    sfprof(['-i', data, '-f', 'json'], 2, "unknown format 'json'")
    sfprof(['-i', data, '-f', 'svg', 'extra'], 2, "unexpected argument 'extra'")
    sfprof(['--bogus'], 2, 'usage')
    sfprof(['-i', ctx.path('nonexistent.data'), '-f', 'svg'], 1, 'nonexistent.data')
    sfprof(['-i', data, '-f', 'svg', '-o', ctx.path('no/such/dir/x.svg')], 1,
           'no/such/dir/x.svg')
    p = subprocess.run([ctx.sfprof, 'export', '--help'], stdout=subprocess.PIPE, text=True)
    expect(p.returncode == 0 and 'Kernel frames' in p.stdout, fails,
           'export --help does not say what markup does with kernel frames')
    for fmt in ('markup', 'collapsed', 'pprof', 'svg'):
        out = ctx.path(f'cli.{fmt}')
        with open(out, 'w') as f:
            f.write('an earlier file\n')
        sfprof(['-i', data, '-f', fmt + 'x', '-o', out], 2, 'unknown format')
        with open(out) as f:
            expect(f.read() == 'an earlier file\n', fails, f'{fmt}: a failed export changed -o')
        export(ctx, data, fmt, out=out)
        expect(os.path.getsize(out) > 100, fails, f'{fmt}: the earlier file was not replaced')
    left = [n for n in os.listdir(ctx.work) if '.tmp.' in n]
    expect(not left, fails, f'temporary files left behind: {left}')
    # a device is written in place (and never removed): a full one is an error
    p = subprocess.run([ctx.sfprof, 'export', '-i', data, '-f', 'collapsed', '-o', '/dev/full'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log(f'$ sfprof export -f collapsed -o /dev/full: exit {p.returncode}: {p.stderr.strip()}')
    expect(p.returncode == 1 and '/dev/full: No space left on device' in p.stderr, fails,
           'a full disk is not reported')
    expect(os.path.exists('/dev/full') and not os.path.isfile('/dev/full'), fails,
           '/dev/full is gone after a failed export to it')
    raise_fails(fails)


CASES = {'markup': case_markup, 'collapsed': case_collapsed, 'pprof': case_pprof,
         'svg': case_svg, 'cli': case_cli}


def main():
    return rt.case_main(__doc__, CASES)


if __name__ == '__main__':
    sys.exit(main())
