#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Samples taken inside execve(2) (issue 27), recorded with the real BPF sampler.

A thread inside execve has the user registers of the program it is replacing
until the kernel gives it the new program's. From the moment the kernel puts
the new address space in, the old program's memory is gone: no user stack
can be read at its sp, and its pc is in none of the new image's mappings.
Such a sample is shown with its kernel stack and, in place of the user
stack, one frame `[execve: old image]` (module `[execve]`), neither an
unknown frame nor a truncated stack. A sample inside execve taken before that
moment has the old program's memory and is unwound as any other.

tests/progs/exec_loop.c (compiled at test time with .sframe) forks children
that exec themselves again and again, each image with MIB MiB of memory that
its exec gives back after the switch and ARGKIB KiB of arguments that the
kernel copies out of the old address space before it; the system call is made
from the program's own code, so that an unwound sample's user stack is, from
frame 0, sys_execve_raw exec_step exec_child main, then libc.

The oracle is independent of sfprof's own judgement: `sfprof dump` (parsed by
profile_oracle.py) and /proc/kallsyms name each sample's kernel stack, and a
sample is inside execve when it passes through the kernel's execve functions.
The kernel functions it is in say on which side of the switch it was taken:

  after   exit_mmap/__mmput under begin_new_exec (the old address space torn
          down, after the switch), setup_new_exec, setup_arg_pages, elf_load,
          elf_map, load_elf_interp, create_elf_tables: must be the marker
  before  copy_strings, copy_string_kernel, alloc_bprm, do_open_execat,
          open_exec: must be unwound, the chain above from frame 0, complete
  other   (bprm_execve itself, de_thread, the return after the new registers
          are in): the marker, or the user stack the oracle unwinds from the
          dump, complete

and none may show an `[unknown]` frame or a truncated user stack. Then the
outputs: `script` (each sample), `report`'s "Truncated stacks" line (the
oracle's count of truncated user stacks, none of them inside execve),
`report --children` ([execve] [.] [execve: old image] at the marked share),
`-g`, `--sort srcline`, `export` collapsed, markup, pprof and svg, and
`record`'s summary (its count of marked samples is the file's).

Each check also runs once on doctored input (a marker replaced by the
[unknown] frame that sfprof printed before, an unwound chain with a frame
dropped), and must then fail.

Too few samples on either side of the switch: the recording runs again, its
workload twice, then four times as long (at most 3 runs).

Exit status 0 pass, 1 fail, 77 skip (not root, no BTF, no gas --gsframe,
kallsyms without addresses).
"""

import gzip
import os
import re
import subprocess
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_oracle  # noqa: E402
import record_test as rt  # noqa: E402
import report_test as rpt  # noqa: E402
from record_test import Failure, TooFewMsg, expect, log, must_fail, raise_fails  # noqa: E402

SECS = 2                    # the workload's length, scaled by ctx.scale
MIB = 32                    # memory each image touches: its exec tears it down after the switch
ARGKIB = 1536               # arguments each exec copies before the switch
MIN_AFTER = 20              # samples after the switch needed (expected: about 60 a second)
MIN_BEFORE = 10             # samples before it (expected: about 25 a second)

MARKER = profile_oracle.EXEC_OLD_IMAGE
MARKER_DSO = profile_oracle.EXEC_OLD_IMAGE_DSO
CHAIN = ['sys_execve_raw', 'exec_step', 'exec_child', 'main']

EXEC_FUNCS = {'do_execveat_common', 'do_execve', 'do_execveat', 'bprm_execve',
              '__x64_sys_execve', '__x64_sys_execveat', '__arm64_sys_execve',
              '__arm64_sys_execveat'}
AFTER_FUNCS = {'setup_new_exec', 'setup_arg_pages', 'elf_load', 'elf_map', 'load_elf_interp',
               'create_elf_tables'}
TEARDOWN = {'exit_mmap', '__mmput', 'mmput'}
BEFORE_FUNCS = {'copy_strings', 'copy_string_kernel', 'alloc_bprm', 'do_open_execat',
                'open_exec'}


# --- script ---

_EVENT = re.compile(r'^(\S.*?) +(\d+)/(\d+) +\[(\d{3,})\] +(\d+)\.(\d{6}): +(\d+) cpu-clock: $')
_FRAME = re.compile(r'^\t *([0-9a-f]+) (.+) \((.*)\)$')
_OFFSET = re.compile(r'\+0x[0-9a-f]+$')


class Block:
    def __init__(self, m):
        self.pid, self.tid = int(m.group(2)), int(m.group(3))
        self.usecs = int(m.group(5)) * 1000000 + int(m.group(6))
        self.kernel = []        # names
        self.user = []          # (addr, name without +0x..., module)


def parse_script(text):
    blocks, cur = [], None
    for n, line in enumerate(text.split('\n'), 1):
        if cur is None:
            if not line:
                continue
            m = _EVENT.match(line)
            if not m:
                raise Failure(f'script line {n}: not a sample header: {line!r}')
            cur = Block(m)
        elif not line:
            blocks.append(cur)
            cur = None
        else:
            m = _FRAME.match(line)
            if not m:
                raise Failure(f'script line {n}: not a frame line: {line!r}')
            name, mod = _OFFSET.sub('', m.group(2)), m.group(3)
            if mod == '[kernel.kallsyms]':
                cur.kernel.append(name)
            else:
                cur.user.append((int(m.group(1), 16), name, mod))
    if cur is not None:
        blocks.append(cur)
    return blocks


# --- the oracle ---

def base(name):
    return name.split('.')[0] if name else None      # copy_strings.isra.0


def side(knames):
    """'after', 'before', 'other' for a stack inside execve, None for one outside."""
    names = {base(n) for n in knames}
    if not names & EXEC_FUNCS:
        return None
    if names & AFTER_FUNCS or ('begin_new_exec' in names and names & TEARDOWN):
        return 'after'
    if names & BEFORE_FUNCS:
        return 'before'
    return 'other'


def shown_user(block, prog):
    """A block's user frames as (name, module): functions of @prog by name, others by module."""
    return [(name if mod == prog else None, os.path.basename(mod)) for _, name, mod in block.user]


def oracle_user(syms, s, prog):
    return [(f.symbol if f.module == prog else None, os.path.basename(f.module or '[unknown]'))
            for f in syms.user_frames(s)]


def check_exec_samples(ctx, prof, ksyms, blocks, prog, what):
    """The samples inside execve: each the marker or correctly unwound, as its side of the
    switch wants. @return (fails, Counter of sides, Counter of renderings)."""
    fails, sides, shown, wrong = [], Counter(), Counter(), Counter()
    expect(len(blocks) == len(prof.samples), fails,
           f'{what}: {len(blocks)} script blocks for {len(prof.samples)} samples')
    for b, s in zip(blocks, prof.samples):
        if (b.pid, b.tid, b.usecs) != (s.pid, s.tid, s.time // 1000):
            fails.append(f'{what}: script block {(b.pid, b.tid, b.usecs)} for the sample at '
                         f'dump line {s.line}')
            break
        where = side(ksyms.frames(s.kstack)) if s.kstack else None
        marker = [(a, n, m) for a, n, m in b.user] == [(0, MARKER, MARKER_DSO)]
        if where is None:
            expect(not s.old_image and not marker, fails,
                   f'{what}: the sample at dump line {s.line}, outside execve, is marked')
            continue
        sides[where] += 1
        raw = None if s.old_image else s.ustack
        unwound = (raw is not None and raw.ending == 'end' and not marker and
                   shown_user(b, prog) == oracle_user(ctx.syms, s, prog) and
                   all(n != '[unknown]' and not n.startswith('[unknown]+') for _, n, _ in b.user))
        if where == 'before':
            unwound = unwound and [n for n, _ in shown_user(b, prog)[:4]] == CHAIN
        if marker and s.old_image:
            how = 'marker'
        elif unwound:
            how = 'unwound'
        else:
            how = 'wrong'
        shown[(where, how)] += 1
        if how == 'wrong' or (where == 'after' and how != 'marker') or \
                (where == 'before' and how != 'unwound'):
            user = ' '.join(f'{n}({os.path.basename(m)})' for _, n, m in b.user) or '(none)'
            ending = raw.ending if raw else None
            wrong[f'{where}: user stack {user} [{ending}]'] += 1
    for k, v in wrong.most_common(8):
        log(f'    {v} x {k}')
    expect(not wrong, fails, f'{what}: {sum(wrong.values())} samples inside execve neither '
           f'the marker nor unwound as their side of the switch wants')
    return fails, sides, shown


def doctored(text):
    """@text with one marker made the [unknown] frame sfprof showed before, and one unwound
    chain inside execve without its exec_step frame."""
    lines = text.split('\n')
    out, marked, dropped = [], False, False
    for line in lines:
        if not marked and line.endswith(f' {MARKER} ({MARKER_DSO})'):
            out.append('\t    7f4f5c5ddad7 [unknown]+0x7f4f5c5ddad7 ([unknown])')
            marked = True
            continue
        if not dropped and ' exec_step+0x' in line:
            dropped = True
            continue
        out.append(line)
    return '\n'.join(out), marked and dropped


# --- the cases ---

def report_checks(ctx, out, prof, marked, what):
    """report's header, --children, -g and srcline rows; the exports' markers."""
    fails = []
    total = sum(s.weight for s in prof.samples)
    weight = sum(s.weight for s in prof.samples if s.old_image)
    trunc = sum(1 for s in prof.samples if s.ustack and s.ustack.truncated)
    in_exec_trunc = sum(1 for s in marked if s.ustack and s.ustack.truncated)
    expect(in_exec_trunc == 0, fails, f'{what}: {in_exec_trunc} samples inside execve have a '
           f'truncated user stack in the file')
    rep, _ = rpt.report(ctx, out, '--stdio')
    line = rep.header.get('Truncated stacks')
    log(f'{what}: report "Truncated stacks": {line!r}; the oracle: {trunc} truncated user '
        f'stacks, {weight} of {total} samples marked')
    if trunc:
        expect(line and line.startswith(f'{trunc} samples '), fails,
               f'{what}: Truncated stacks {line!r}, the oracle counts {trunc}')
    else:
        expect(line is None, fails, f'{what}: Truncated stacks {line!r}, the oracle counts none')
    rep, _ = rpt.report(ctx, out, '--stdio', '--children', '--sort', 'dso,sym')
    got = rep.share('Children', dso=MARKER_DSO, sym=f'[.] {MARKER}')
    want = 100.0 * weight / total
    log(f'{what}: report --children: {MARKER_DSO} [.] {MARKER} {got}%, marked {want:.2f}%')
    expect(got is not None and abs(got - want) <= 0.01, fails,
           f'{what}: --children share of {MARKER} {got}%, want {want:.2f}%')
    p = rpt.sfprof(ctx, ['report', '-i', out, '--stdio', '-g', 'caller', '--sort', 'sym'])
    graph = [ln for ln in p.stdout.splitlines() if ln.rstrip().endswith(MARKER)]
    expect(graph, fails, f'{what}: report -g caller: no {MARKER} in the call graphs')
    p = rpt.sfprof(ctx, ['report', '-i', out, '--stdio', '--children', '--sort', 'srcline'])
    rows = [ln for ln in p.stdout.splitlines() if MARKER in ln]
    expect(len(rows) == 1 and rows[0].rstrip().endswith(MARKER), fails,
           f'{what}: report --sort srcline rows of the marker: {rows}')
    # the exports
    p = rpt.sfprof(ctx, ['export', '-i', out, '--format', 'collapsed'])
    folded = sum(int(ln.rsplit(' ', 1)[1]) for ln in p.stdout.splitlines()
                 if f';{MARKER};' in ln)
    expect(folded == weight, fails, f'{what}: export collapsed: {folded} under {MARKER}, '
           f'want {weight}')
    p = rpt.sfprof(ctx, ['export', '-i', out, '--format', 'markup'])
    notes = len(re.findall(r'^ +#\d+ +0x0+ ' + re.escape(MARKER) + '$', p.stdout, re.M))
    truncs = p.stdout.count('\n    [truncated]\n')
    expect(notes == len([s for s in prof.samples if s.old_image]) and truncs == trunc, fails,
           f'{what}: export markup: {notes} marker lines, {truncs} [truncated]; want '
           f'{len([s for s in prof.samples if s.old_image])} and {trunc}')
    pb = ctx.path('exec.pb.gz')
    rpt.sfprof(ctx, ['export', '-i', out, '--format', 'pprof', '-o', pb])
    with gzip.open(pb) as f:
        expect(MARKER.encode() in f.read(), fails, f'{what}: export pprof: no {MARKER}')
    svg = ctx.path('exec.svg')
    rpt.sfprof(ctx, ['export', '-i', out, '--format', 'svg', '-o', svg])
    with open(svg) as f:
        expect(MARKER in f.read(), fails, f'{what}: export svg: no {MARKER}')
    return fails


def case_exec(ctx):
    ksyms = profile_oracle.KernelSymbols()
    if not ksyms.usable:
        log('SKIP: /proc/kallsyms shows no addresses (kptr_restrict)')
        sys.exit(rt.SKIP)
    known = {base(n) for n in ksyms.names if n}
    for what, names in (('execve', EXEC_FUNCS), ('after the switch', AFTER_FUNCS | TEARDOWN),
                        ('before the switch', BEFORE_FUNCS)):
        if not names & known:
            log(f'SKIP: this kernel names none of the functions that tell a sample {what} '
                f'({", ".join(sorted(names))}): inlined or renamed')
            sys.exit(rt.SKIP)
    prog = ctx.compile('exec_loop.c', 'exec_loop')
    out = ctx.path('exec.data')
    p = ctx.record(['--', prog, ctx.secs(SECS), str(MIB), str(ARGKIB)], out, timeout=300)
    if p.returncode != 0:
        raise Failure(f'sfprof record exited with {p.returncode}')
    prof = rpt.load(ctx, out)
    script = rpt.sfprof(ctx, ['script', '-i', out]).stdout
    blocks = parse_script(script)
    what = 'exec'
    fails, sides, shown = check_exec_samples(ctx, prof, ksyms, blocks, prog, what)
    log(f'{what}: {sum(sides.values())} samples inside execve of {len(prof.samples)}: '
        + ', '.join(f'{k} {v}' for k, v in sorted(sides.items())))
    log(f'{what}: shown as ' + ', '.join(f'{w} {h} {v}' for (w, h), v in sorted(shown.items())))
    expect(sides['after'] >= MIN_AFTER, fails,
           TooFewMsg(f'{what}: {sides["after"]} samples after the switch, need {MIN_AFTER}'))
    expect(sides['before'] >= MIN_BEFORE, fails,
           TooFewMsg(f'{what}: {sides["before"]} samples before the switch, need '
                     f'{MIN_BEFORE}'))
    # the checks can fail
    bad, ok = doctored(script)
    if ok:
        must_fail(check_exec_samples(ctx, prof, ksyms, parse_script(bad), prog,
                                     'doctored script')[0], 'a marker shown as [unknown], '
                  'a chain with a frame dropped')
    # record's summary counts the file's marked samples
    marked = [s for s in prof.samples if s.old_image]
    m = re.search(r'sfprof record: (\d+) samples inside execve', p.stderr)
    got = int(m.group(1)) if m else 0
    expect(got == len(marked), fails, f'{what}: the summary says {got} samples marked, the '
           f'file has {len(marked)}')
    in_exec = [s for s in prof.samples if s.kstack and side(ksyms.frames(s.kstack))]
    fails += report_checks(ctx, out, prof, in_exec, what)
    raise_fails(fails)


CASES = {'exec': case_exec}


def main():
    return rt.case_main(__doc__, CASES)


if __name__ == '__main__':
    sys.exit(main())
