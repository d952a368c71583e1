#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Hostile perf maps and jitdumps under `sfprof record`, with the real BPF sampler.

The map and the dump are written by the profiled process and read by sfprof as
root (user/record/jit.c, user/jit/perfmap.h, user/jit/jitdump.h). The issue:
"Bad lengths, overlapping and huge ranges, names of megabytes with control
bytes, a dump cut mid-record or rewritten while read: a clear note, bounded
memory, nothing raw on a terminal."

tests/progs/jit_hostile.c (compiled at test time into WORKDIR, as record_test.py
builds its programs) copies six tiny functions with frame pointers into one
anonymous executable page, FN_SLOT bytes apart: outer calls middle (which
calls leaf), ctl, big and nul; leaf, ctl, big and nul spin (leaf the most).
Each --case is one of its modes, run as

    /usr/bin/time -v sfprof record -o FILE -- jit_hostile MODE SECONDS

until the process has used SECONDS of CPU time (again, twice as long, if the
recording has fewer than MIN_SAMPLES samples). Then, for every case:

  - record exits 0; its stderr holds a sentence naming the bad file
    (/tmp/perf-PID.map or /tmp/jit-PID.dump, as the process sees it), and no
    raw control byte (ESC, BEL, CR, NUL, U+202E, ...: hostile_text.bad_chars);
  - sfprof's peak RSS (time -v: the largest of sfprof and its children) is
    under RSS_MAX_KB;
  - `report --stdio --sort sym`, `script`, `export --format collapsed` (and
    `dump`) print valid UTF-8 with no raw control character; every frame in the
    code page carries the name its function must have (or none), every other
    frame is not named by the map or the dump (main, run_jit, libc and the
    kernel stay named as themselves), the leaf's samples have the chain
    leaf <- middle <- outer <- run_jit <- main, and hostile names come out in
    hostile_text.escape()'s form, cut where the reader cuts them.

The modes (see jit_hostile.c for the bytes):

  map-hostile     a huge range (0 ffffffffffff0000 HUGE_RANGE) first, ranges
                  overlapping the functions (EARLY_*) before their good lines
                  (the later good lines win), bad lines over leaf after its
                  good line (no size, size 0, wrapping, signs, over 64 bits, no
                  digit: BAD_* must name nothing), big's line with a 3 MB name
                  (over PERFMAP_LINE_MAX: skipped, so big is HUGE_RANGE's),
                  ctl's with a 60 KB name of control bytes (cut to its first
                  PERFMAP_NAME_MAX = 1024 bytes, escaped), nul's
                  "jit_nul\\0HIDDEN\\e[0m" (shown as "jit_nul": the profile's
                  names are C strings), and a 200 KB line over leaf with no
                  newline at the end of the file (skipped).
  dump-cut        good CODE_LOADs, then big's cut mid-name: the file ends there.
                  The loads before it name their frames; big is unnamed.
  dump-rewritten  a good dump; after 1 s the file is truncated and written
                  again from the start (a new header timestamp, names
                  jit_rewritten_*). The first names name the frames; whether
                  the second ones are read is printed, not checked.
  dump-bad        good loads; ctl's with a 1 MB name of control bytes (cut to
                  JITDUMP_NAME_MAX = 4096 bytes, escaped); a CODE_LOAD whose
                  total_size (24) is below its fixed fields; good loads of big
                  and nul after it (reading stops at the damage: unnamed).
  dump-nonul      good loads of outer, middle, leaf; ctl's whose name has no NUL
                  inside the record; good loads of big and nul after it
                  (unnamed: reading stops at the damage).

Each case also runs its output checks against a wrong expectation (another
name for leaf, the ctl name one byte longer) and must then fail. The files the
program writes under /tmp are removed.

Exit status 0 pass, 1 fail, 77 skip (not root, no BTF, no gcc -Wa,--gsframe,
not x86-64).
"""

import os
import platform
import re
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_text as ht  # noqa: E402
import record_test as rt  # noqa: E402

SKIP = 77
Failure = rt.Failure
log, expect, raise_fails = rt.log, rt.expect, rt.raise_fails

SECONDS = 3.0
MIN_SAMPLES = 1000
RSS_MAX_KB = 200 * 1024
TIME = '/usr/bin/time'

FN_SLOT = 0x100
SLOTS = ['outer', 'middle', 'leaf', 'ctl', 'big', 'nul']
GOOD = {s: f'jit_hostile_{s}' for s in SLOTS}
CHAIN = ['jit_hostile_leaf', 'jit_hostile_middle', 'jit_hostile_outer', 'run_jit', 'main']
CHAIN_MIN = 95.0            # % of the leaf's samples with exactly CHAIN at their top
NOTES_MAX = 3               # a note, not a flood
LEAF_MIN = 300              # samples in leaf, of >= MIN_SAMPLES (about half are there)

PERFMAP_NAME_MAX = 1024     # user/jit/perfmap.h
JITDUMP_NAME_MAX = 4096     # user/jit/jitdump.h


def hostile_bytes(length, lead, nul):
    """jit_hostile.c's hostile_bytes(): @length bytes of what a terminal obeys."""
    pat = (b'\x1b[31m' b'\r' b'\x07' b'\xe2\x80\xae' b'\xff\xfe' b'\x1b]0;owned\x07'
           b'\xc3' b'(' b'\x7f' b'\x9b' b'\x00' b'x')
    body = bytearray(lead)
    while len(body) < length:
        body += pat
    body = body[:length]
    if not nul:
        body = body.replace(b'\x00', b'\x01')
    return bytes(body)


# What each mode must show: per slot the raw name its frames carry (None: unnamed, an
# address in anonymous memory); raw strings no output may hold; the file the note names.
MODES = {
    'map-hostile': {
        'names': dict(GOOD, ctl=hostile_bytes(60 << 10, b'CTL60K', False)[:PERFMAP_NAME_MAX],
                      big=b'HUGE_RANGE', nul=b'jit_nul'),
        'absent': [b'EARLY_', b'BAD_', b'BIG3MB', b'NAMED_LONG', b'HIDDEN'],
        'file': '/tmp/perf-{pid}.map',
    },
    'dump-cut': {
        'names': dict(GOOD, big=None),
        'absent': [b'jit_hostile_big'],
        'file': '/tmp/jit-{pid}.dump',
    },
    'dump-rewritten': {
        'names': dict(GOOD),
        'absent': [],
        'file': '/tmp/jit-{pid}.dump',
    },
    'dump-bad': {
        'names': dict(GOOD, ctl=hostile_bytes(1 << 20, b'CTL1MB', False)[:JITDUMP_NAME_MAX],
                      big=None, nul=None),
        'absent': [b'BAD_SMALL', b'jit_hostile_big', b'jit_hostile_nul'],
        'file': '/tmp/jit-{pid}.dump',
    },
    'dump-nonul': {
        'names': dict(GOOD, ctl=None, big=None, nul=None),
        'absent': [b'BAD_NONUL', b'jit_hostile_ctl', b'jit_hostile_big', b'jit_hostile_nul'],
        'file': '/tmp/jit-{pid}.dump',
    },
}
for _m in MODES.values():
    _m['names'] = {k: (v.encode() if isinstance(v, str) else v) for k, v in _m['names'].items()}


# --- recording ---

def record(ctx, prog, mode, secs):
    """One recording: {'rc', 'stderr' (bytes), 'stdout', 'pid', 'code', 'rss_kb', 'samples'}."""
    out = ctx.path(f'{mode}.data')
    timef = ctx.path(f'{mode}.time')
    cmd = [TIME, '-v', '-o', timef, ctx.sfprof, 'record', '-o', out, '--', prog, mode,
           f'{secs:g}']
    log('$ ' + rt.quote(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60 + 8 * secs)
    stdout = p.stdout.decode('utf-8', 'backslashreplace')
    log(stdout.rstrip('\n'))
    log(p.stderr.decode('utf-8', 'backslashreplace').rstrip('\n'))
    m = re.search(r'jit_hostile: pid (\d+) code 0x([0-9a-f]+)', stdout)
    if not m:
        raise Failure(f'jit_hostile printed no pid: {stdout!r}')
    pid, code = int(m.group(1)), int(m.group(2), 16)
    for f in (f'/tmp/perf-{pid}.map', f'/tmp/jit-{pid}.dump'):
        if os.path.lexists(f):
            os.unlink(f)
    with open(timef) as f:
        t = f.read()
    m = re.search(r'Maximum resident set size \(kbytes\): (\d+)', t)
    rss = int(m.group(1)) if m else None
    m = re.search(r'Command exited with non-zero status (\d+)', t)
    rc = int(m.group(1)) if m else p.returncode
    s = rt.SUMMARY.search(p.stderr.decode('utf-8', 'replace'))
    return {'rc': rc, 'stderr': p.stderr, 'stdout': stdout, 'pid': pid, 'code': code,
            'rss_kb': rss, 'samples': int(s.group(2)) if s else 0, 'data': out}


def sf(ctx, args):
    """sfprof @args: its stdout as bytes; its stderr checked clean too."""
    cmd = [ctx.sfprof, *args]
    log('$ ' + rt.quote(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if p.stderr.strip():
        log(p.stderr.decode('utf-8', 'backslashreplace').rstrip())
    if p.returncode != 0:
        raise Failure(f'sfprof {args[0]} exited with {p.returncode}')
    return p.stdout, p.stderr


# --- the checks ---

FRAME = re.compile(r'^\t\s*([0-9a-f]+) (.*) \((.*)\)$')


def parse_script(text):
    """Samples as lists of (address, symbol without +0xOFF, module)."""
    samples, cur = [], None
    for line in text.split('\n'):
        if not line:
            if cur is not None:
                samples.append(cur)
            cur = None
            continue
        if not line.startswith('\t'):
            cur = []
            continue
        m = FRAME.match(line)
        if m and cur is not None:
            sym = re.sub(r'\+0x[0-9a-f]+$', '', m.group(2))
            cur.append((int(m.group(1), 16), sym, m.group(3)))
    if cur is not None:
        samples.append(cur)
    return samples


def short(text):
    """@text for a message: whole when short, else its length, head and tail."""
    if len(text) <= 100:
        return repr(text)
    return f'{len(text)} characters {text[:40]!r}...{text[-40:]!r}'


def check_script(text, rec, want, fails):
    code, pid = rec['code'], rec['pid']
    srcs = (f'/tmp/perf-{pid}.map', f'/tmp/jit-{pid}.dump')
    names = {s: (ht.escape(n) if n is not None else None) for s, n in want['names'].items()}
    samples = parse_script(text)
    wrong, outside, seen, leaf, chain_ok = {}, {}, set(), 0, 0
    for frames in samples:
        in_exec = any(m == '[kernel.kallsyms]' and 'execve' in s for _, s, m in frames)
        for addr, sym, mod in frames:
            if code <= addr < code + len(SLOTS) * FN_SLOT:
                slot = SLOTS[(addr - code) // FN_SLOT]
                want_sym = names[slot]
                ok = (sym == want_sym and mod in srcs) if want_sym is not None else \
                    (sym == 'anon' and mod == '//anon')
                if not ok:
                    key = (slot, sym, mod)
                    wrong[key] = wrong.get(key, 0) + 1
            else:
                seen.add(sym)
                if mod in srcs or sym == 'HUGE_RANGE':
                    outside[(hex(addr), sym[:80], mod)] = in_exec
        if frames and code + 2 * FN_SLOT <= frames[0][0] < code + 3 * FN_SLOT:
            leaf += 1
            if [f[1] for f in frames[:len(CHAIN)]] == CHAIN:
                chain_ok += 1
    for (slot, sym, mod), n in sorted(wrong.items(), key=lambda kv: -kv[1])[:5]:
        w = names[slot] or 'none'
        expect(False, fails, f'script: {n} frames in {slot} named {short(sym)} ({mod}), want '
               f'{short(w)}')
    for (addr, sym, mod), in_exec in list(outside.items())[:5]:
        why = (' (a sample inside execve: a pc of the image before exec, which no mapping of '
               'this image holds)') if in_exec else ''
        expect(False, fails, f'script: a frame outside the code page, {addr}, named {sym!r} '
               f'from {mod}{why}')
    for sym in ('main', 'run_jit', '__libc_start_call_main'):
        expect(sym in seen, fails, f'script: no frame named {sym}')
    pct = 100.0 * chain_ok / leaf if leaf else 0.0
    log(f'script: {len(samples)} samples, {leaf} in leaf, {chain_ok} ({pct:.1f}%) with the chain '
        f'{" <- ".join(CHAIN)}')
    expect(leaf >= LEAF_MIN, fails, f'script: {leaf} samples in leaf, want >= {LEAF_MIN}')
    expect(pct >= CHAIN_MIN, fails, f'script: {pct:.1f}% of the leaf samples have the chain, '
           f'want >= {CHAIN_MIN}%')


def check_collapsed(text, want, fails):
    names = {s: (ht.escape(n, ';') if n is not None else None)
             for s, n in want['names'].items()}
    stacks = {}
    for line in text.split('\n'):
        if line:
            stack, _, count = line.rpartition(' ')
            stacks[stack] = stacks.get(stack, 0) + int(count)
    leaf_tail = ';main;run_jit;' + ';'.join(reversed(CHAIN[:3]))
    n = sum(c for s, c in stacks.items() if s.endswith(leaf_tail))
    expect(n >= LEAF_MIN, fails, f'collapsed: {n} samples end in ...{leaf_tail}, want >= '
           f'{LEAF_MIN}')
    expect(any(s.startswith('jit_hostile;_start;__libc_start_main_impl;__libc_start_call_main;'
                            'main;') for s in stacks), fails,
           'collapsed: no stack from _start through libc to main')
    for slot in ('ctl', 'big', 'nul'):
        want_leaf = names[slot] if names[slot] is not None else '[anon]'
        n = sum(c for s, c in stacks.items()
                if s.endswith(';jit_hostile_outer;' + want_leaf))
        expect(n > 0, fails, f'collapsed: no stack ends in jit_hostile_outer;{short(want_leaf)}')


# report's symbol column holds 8,192 bytes with its "[.] " (cmd_report.c): a longer name is
# shown cut there, never inside an escape.
REPORT_SYM_ROOM = 8192 - 4 - 1


def report_shown(escaped):
    if len(escaped) <= REPORT_SYM_ROOM:
        return escaped
    cut = escaped[:REPORT_SYM_ROOM]
    esc = cut.rfind('\\')
    # an escape (\xHH, \uHHHH, \\) that does not fit whole is left out whole
    if esc >= 0 and esc + 6 > len(cut):
        whole = escaped[esc:esc + 6]
        m = re.match(r'\\(x[0-9a-f]{2}|u[0-9a-f]{4}|[\\ntr])', whole)
        if m and esc + len(m.group(0)) > len(cut):
            cut = cut[:esc]
    return cut


def check_report(text, want, fails):
    rows = [line for line in text.split('\n') if line and not line.startswith('#')]
    syms = {re.sub(r'^\s*[\d.]+%\s+\[.\]\s', '', r).rstrip() for r in rows}
    for slot in ('leaf', 'ctl', 'big', 'nul'):
        n = want['names'][slot]
        if n is not None:
            shown = report_shown(ht.escape(n))
            expect(shown in syms or any(s.startswith(shown) for s in syms), fails,
                   f'report: no row for {slot} named {short(shown)}')


def check_outputs(ctx, rec, want, fails):
    data = rec['data']
    outputs = {}
    for what, args in (('report', ['report', '-i', data, '--stdio', '--sort', 'sym']),
                       ('script', ['script', '-i', data]),
                       ('collapsed', ['export', '-i', data, '--format', 'collapsed']),
                       ('dump', ['dump', '-i', data])):
        if what not in ctx.cache:
            ctx.cache[what] = sf(ctx, args)
        out, err = ctx.cache[what]
        outputs[what] = ht.check_clean(what, out, fails, tab_lines=(what == 'script'))
        ht.check_clean(f'{what} stderr', err, fails)
    for what, text in outputs.items():
        if what == 'dump':
            continue
        for raw in want['absent']:
            expect(ht.escape(raw) not in text, fails, f'{what}: {raw!r} is there')
    check_script(outputs['script'], rec, want, fails)
    check_collapsed(outputs['collapsed'], want, fails)
    check_report(outputs['report'], want, fails)
    return fails


def check_record(rec, want, fails):
    expect(rec['rc'] == 0, fails, f'sfprof record exited with {rec["rc"]}')
    err = ht.check_clean('record stderr', rec['stderr'], fails)
    for raw in (b'\x1b', b'\x07', b'\r', b'\x00', b'\xe2\x80\xae', b'\x9b'):
        expect(raw not in rec['stderr'], fails, f'record stderr: a raw {raw!r}')
    path = want['file'].format(pid=rec['pid'])
    notes = [line for line in err.split('\n')
             if line.startswith('sfprof record: ') and path in line]
    for line in notes:
        log(f'note: {line[:300]}')
    expect(notes, fails, f'record: no sentence on stderr names {path}')
    expect(len(notes) <= NOTES_MAX, fails, f'record: {len(notes)} sentences name {path}, want '
           f'at most {NOTES_MAX}')
    rss = rec['rss_kb']
    if rss is None:
        expect(False, fails, f'{TIME} -v gave no maximum resident set size')
    else:
        log(f'record: peak RSS {rss / 1024:.1f} MiB (sfprof, or the largest of its children)')
        expect(rss < RSS_MAX_KB, fails, f'record: peak RSS {rss} KiB, want < {RSS_MAX_KB}')


class Ctx(rt.Ctx):
    def __init__(self, args):
        super().__init__(args)
        self.cache = {}


def run_case(ctx, mode):
    want = MODES[mode]
    prog = ctx.compile('jit_hostile.c', 'jit_hostile')
    secs = SECONDS
    rec = record(ctx, prog, mode, secs)
    if rec['samples'] < MIN_SAMPLES and rec['rc'] == 0:
        log(f'{rec["samples"]} samples, fewer than {MIN_SAMPLES}: once more, twice as long')
        secs *= 2
        rec = record(ctx, prog, mode, secs)
    fails = []
    expect(rec['samples'] >= MIN_SAMPLES, fails,
           f'{rec["samples"]} samples, want >= {MIN_SAMPLES}')
    check_record(rec, want, fails)
    if rec['rc'] == 0:
        check_outputs(ctx, rec, want, fails)
        if mode == 'dump-rewritten':
            script = ctx.cache['script'][0]
            log('dump-rewritten: the names written after the rewrite are '
                f'{"read" if b"jit_rewritten_" in script else "not read"}')
    # the checks can fail: another name for leaf, the cut name one byte longer, a note
    # naming another file (run before the verdict, so that a failing case shows it too)
    if rec['rc'] != 0:
        raise_fails(fails)
    bad = dict(want, names=dict(want['names'], leaf=b'not_this_function'))
    rt.must_fail(check_outputs(ctx, rec, bad, []), 'another name for leaf')
    cut = want['names']['ctl']
    if cut is not None and len(cut) > 100:
        full = hostile_bytes(len(cut) + 1, cut[:6], False)
        bad = dict(want, names=dict(want['names'], ctl=full))
        rt.must_fail(check_outputs(ctx, rec, bad, []), 'the ctl name one byte longer')
    bad = dict(want, file='/tmp/perf-{pid}.nothing')
    neg = []
    check_record(rec, bad, neg)
    rt.must_fail(neg, 'a note naming another file')
    raise_fails(fails)


CASES = {mode: (lambda ctx, m=mode: run_case(ctx, m)) for mode in MODES}


def main():
    if platform.machine() != 'x86_64':
        log(f'SKIP: jit_hostile copies x86-64 code; this is {platform.machine()}')
        return SKIP
    if not os.access(TIME, os.X_OK):
        log(f'SKIP: {TIME} not found (GNU time measures the peak RSS)')
        return SKIP
    import argparse
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--progs', required=True, help='tests/progs')
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', required=True, choices=sorted(CASES))
    args = ap.parse_args()
    sys.stdout.reconfigure(errors='backslashreplace')
    rt.check_preconditions()
    ctx = Ctx(args)
    shutil.rmtree(ctx.work, ignore_errors=True)
    os.makedirs(ctx.work)
    t0 = time.monotonic()
    try:
        CASES[args.case](ctx)
    except (Failure, subprocess.TimeoutExpired) as e:
        log(f'FAIL: {e}')
        return 1
    log(f'PASS ({time.monotonic() - t0:.1f} s)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
