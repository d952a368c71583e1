#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The options perf users reach for in `sfprof report` and `sfprof script` (issue 13).

  tree     a profile written by gen-events from the functions of
           tests/progs/report_tree.c (nm's addresses), whose chains are known by
           construction: the -g trees in callee and caller order, graph,
           fractal, flat and folded, with --children, are the exact text perf's
           rules give; -g none, a threshold that cuts a branch.
  events   cpu-clock, page-faults and offcpu-time (weights in ns) samples in
           one file: one section per event with its own count and shares;
           script names each sample's event, padded to the longest name.
  filters  --comm, --pid, --tid, --time (seconds and percentages), --dso,
           --symbols: --percentage relative counts exactly the samples the
           dump says match; absolute keeps each row's share; one-value
           filters name themselves in the header and drop their column.
  perf     record_chains and report_tree run by `perf record --call-graph
           dwarf` with `sfprof record -p` joining the same run: shares per --sort key
           (sym, dso, comm, tid against perf's pid, srcline), the -g tree's
           branches, --children, --percent-limit's rows, and script -F's line
           shapes against perf script's, within a point or four standard deviations
           of two independent samplings, whichever is larger.
  errors   bad --sort, --time, -g, --percent-limit, --pid, --percentage,
           script -F: `sfprof report: ...` or `sfprof script: ...`, non-zero
           exit, nothing on stdout.

Each case also runs its checks against a deliberately wrong expectation, which
must fail. Exit status 0 pass, 1 fail, 77 skip (no root or BTF; perf missing
for the perf case).
"""

import math
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_test as rt  # noqa: E402
from record_test import Failure, expect, log, must_fail, raise_fails  # noqa: E402

GEN_EVENTS = None


def sfprof(ctx, args, check=True):
    # report_tree.c is built -O2 -g and spin_count is inlined into the leaves: these
    # cases are about options on chains known by construction, without inlined frames
    # (those are inline_test.py's)
    if args and args[0] in ('report', 'script', 'export'):
        args = [args[0], '--no-inline', *args[1:]]
    cmd = [ctx.sfprof, *args]
    log('$ ' + rt.quote(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors='replace', timeout=120)
    if p.stderr.strip():
        log(p.stderr.rstrip('\n'))
    if check and p.returncode != 0:
        raise Failure(f'sfprof {args[0]} exited with {p.returncode}')
    return p


def body(text):
    """The report after the column header: rows and trees."""
    lines = text.split('\n')
    for i, line in enumerate(lines):
        if re.match(r'^# \.+', line):
            return '\n'.join(lines[i + 2:])
    raise Failure('report: no column header')


# --- a profile known by construction ---

def elf_funcs(path):
    """{name: (file offset of the function's middle)} from nm and readelf -lW."""
    loads = []
    for line in subprocess.run(['readelf', '-lW', path], stdout=subprocess.PIPE,
                               text=True, check=True).stdout.splitlines():
        m = re.match(r'^\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+\S+\s+0x([0-9a-f]+)', line)
        if m:
            loads.append((int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16)))
    out = {}
    for line in subprocess.run(['nm', '-S', path], stdout=subprocess.PIPE, text=True,
                               check=True).stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in 'tT':
            vaddr, size = int(f[0], 16), int(f[1], 16)
            mid = vaddr + size // 2
            for off, va, filesz in loads:
                if va <= mid < va + filesz:
                    out[f[3]] = mid - va + off
    return out


def build_id(path):
    out = subprocess.run(['readelf', '-n', path], stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    m = re.search(r'Build ID: ([0-9a-f]+)', out)
    if not m:
        raise Failure(f'{path}: no build ID')
    return m.group(1)


def gen(ctx, out, exe, lines):
    funcs = elf_funcs(exe)
    script = [f'comm {os.path.basename(exe)}',
              f'exe {exe} {os.path.getsize(exe):x} {build_id(exe)}']
    for line in lines:
        if line.startswith('sample '):
            f = line.split()
            if f[6] != '-':
                f[6] = ','.join(f'{funcs[n]:x}' for n in f[6].split(','))
            line = ' '.join(f)
        script.append(line)
    p = subprocess.run([ctx.gen_events, out], input='\n'.join(script) + '\n', text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode:
        raise Failure(f'gen-events: {p.stderr.strip()}')


# The chains of the tree profile (innermost first) and their samples:
#   tree_leaf via_g work main   50 (thread 4242, cpu 0)
#   tree_leaf via_h work main   25 (thread 4243, cpu 1)
#   other_leaf work main        20 (thread 4242, cpu 1)
#   work main                    5 (thread 4243, cpu 0)
TREE_SAMPLES = [('tree_leaf,via_g,work,main', 50, 4242, 0),
                ('tree_leaf,via_h,work,main', 25, 4243, 1),
                ('other_leaf,work,main', 20, 4242, 1),
                ('work,main', 5, 4243, 0)]


def tree_profile(ctx, out, samples=TREE_SAMPLES, extra=()):
    exe = ctx.path('report_tree')
    if not os.path.exists(exe):
        rt.run(['gcc', '-O2', '-g', '-fomit-frame-pointer', '-o', exe,
                os.path.join(ctx.progs, 'report_tree.c')])
    lines = ['thread 4242 report_tree', 'thread 4243 worker', *extra]
    t = 1_000_000_000
    for chain, n, tid, cpu in samples:
        for _ in range(n):
            t += 1_000_000
            lines.append(f'sample 0 {tid} {cpu} {t} 1 {chain}')
    gen(ctx, out, exe, lines)
    return exe


CALLEE = '''\
    75.00%  report_tree    [.] tree_leaf
            |
            ---tree_leaf
               |          
               |--50.00%--via_g
               |          work
               |          main
               |          
                --25.00%--via_h
                          work
                          main

    20.00%  report_tree    [.] other_leaf
            |
            ---other_leaf
               work
               main

     5.00%  report_tree    [.] work
            |
            ---work
               main

'''

CALLER = '''\
    75.00%  report_tree    [.] tree_leaf
            |
            ---main
               work
               |          
               |--50.00%--via_g
               |          tree_leaf
               |          
                --25.00%--via_h
                          tree_leaf
'''

CHILDREN_WORK = '''\
   100.00%     5.00%  report_tree    [.] work
            |          
            |--95.00%--work
            |          |          
            |          |--50.00%--via_g
            |          |          tree_leaf
            |          |          
            |          |--25.00%--via_h
            |          |          tree_leaf
            |          |          
            |           --20.00%--other_leaf
            |          
             --5.00%--main
                       work
'''

FRACTAL = '''\
               |--66.67%--via_g
'''

FLAT = '''\
           50.00%
                tree_leaf
                via_g
                work
                main

           25.00%
                tree_leaf
                via_h
                work
                main
'''

FOLDED = '''\
    75.00%  report_tree    [.] tree_leaf
50.00% tree_leaf;via_g;work;main
25.00% tree_leaf;via_h;work;main
    20.00%  report_tree    [.] other_leaf
20.00% other_leaf;work;main
'''


def check_tree(ctx, out, want):
    """@want: {extra args (tuple): text the report's body must hold}."""
    fails = []
    for args, text in want.items():
        if '--sort' not in args:
            args = ('--sort', 'dso,sym', *args)
        got = body(sfprof(ctx, ['report', '-i', out, *args]).stdout)
        if text.startswith('!'):
            ok = text[1:] not in got
        else:
            ok = text in got
        if not ok:
            log(f'report {" ".join(args)}:\n{got}\nwant {"no " if text[0] == "!" else ""}'
                f'block:\n{text.lstrip("!")}')
        expect(ok, fails, f'report {" ".join(args)}: not the tree perf\'s rules give')
    return fails


def case_tree(ctx):
    out = ctx.path('tree.data')
    tree_profile(ctx, out)
    want = {
        ('-g',): CALLEE,
        ('--no-children', '-g', 'graph,0.5,callee'): CALLEE,
        ('-G',): CALLER,
        ('--call-graph=graph,0.5,caller',): CALLER,
        ('--children', '-g'): CHILDREN_WORK,
        ('-g', 'fractal'): FRACTAL,
        ('-g', 'flat'): FLAT,
        ('-g', 'folded'): FOLDED,
        # a threshold over a branch's share leaves it out: via_h (25%) goes
        ('-g', 'graph,30,callee'): '!via_h',
        ('-g', 'none'): '!---',
        ('--sort', 'sym', '--percent-limit', '10'): '!work',
    }
    fails = check_tree(ctx, out, want)
    # without -g, the report is as before: no trees
    plain = body(sfprof(ctx, ['report', '-i', out]).stdout)
    expect('---' not in plain and '|' not in plain, fails, 'a tree without -g')
    raise_fails(fails)
    # wrong expectations must fail: swapped shares, the other order
    must_fail(check_tree(ctx, out, {('-g',): CALLEE.replace('50.00%--via_g', '25.00%--via_g')}),
              'via_g at 25%')
    must_fail(check_tree(ctx, out, {('-g', 'caller'): CALLEE}), 'caller order shown as callee')
    must_fail(check_tree(ctx, out, {('-g', 'graph,30,callee'): '!via_g'}),
              'a threshold under via_g\'s share leaves it out')


def section(text, event):
    """The rows of event @event's section: {symbol: share}, and its header lines."""
    parts = re.split(r"(?m)^# Samples: ", text)
    for p in parts[1:]:
        if p.split('\n', 1)[0].split("'")[1] == event:
            head = {}
            for m in re.finditer(r'(?m)^# ([A-Za-z ().]+): (.*)$', '# Samples: ' + p):
                head.setdefault(m.group(1), m.group(2))
            rows = {}
            for m in re.finditer(r'(?m)^\s+([\d.]+)%\s+\S+\s+\S+\s+\[[.k]\] (\S+)$', p):
                rows[m.group(2)] = float(m.group(1))
            return head, rows
    return None, None


def events_by_key(ctx, out):
    """--sort event,sym: each section's rows name its event in an Event column."""
    f = []
    text = sfprof(ctx, ['report', '-i', out, '--sort', 'event,sym']).stdout
    event, rows = None, Counter()
    for line in text.splitlines():
        m = re.match(r"^# Samples: \d+  of event '([^']+)'", line)
        if m:
            event = m.group(1)
        elif re.match(r'^\s+[\d.]+%', line):
            rows[(event, line.split()[1])] += 1
    log(f'--sort event,sym: rows by (section, Event column) {dict(rows)}')
    expect(rows and all(a == b for a, b in rows) and
           {a for a, _ in rows} == {'cpu-clock', 'page-faults', 'offcpu-time'}, f,
           f'--sort event: rows by (section, column) {dict(rows)}')
    expect(re.search(r'^# Overhead +Event +Symbol', text, re.M), f, 'no Event column title')
    return f


def events_exported(ctx, out):
    """Exports add one event's weights: collapsed gives the first event's (cpu-clock)
    and says so, --event another's, in its unit; an unknown --event is an error."""
    f = []

    def folded(*args):
        p = sfprof(ctx, ['export', '-i', out, '-f', 'collapsed', *args], check=False)
        per = Counter()
        for line in p.stdout.splitlines():
            stack, _, n = line.rpartition(' ')
            per[stack.split(';')[-1]] += int(n)
        return p, per

    p, per = folded()
    expect(per == Counter({'tree_leaf': 30, 'other_leaf': 10}) and
           "holds samples of 3 events: cpu-clock (40), page-faults (4), offcpu-time (2); "
           "this is cpu-clock's" in p.stderr, f, f'collapsed: {dict(per)}, {p.stderr!r}')
    p, per = folded('--event', 'page-faults')
    expect(per == Counter({'via_h': 3, 'other_leaf': 1}) and not p.stderr, f,
           f'collapsed --event page-faults: {dict(per)} {p.stderr!r}')
    p, per = folded('--event', 'offcpu-time')
    expect(per == Counter({'via_g': 3000000, 'other_leaf': 1000000}), f,
           f'collapsed --event offcpu-time: {dict(per)}')
    p, per = folded('--event', 'cycles')
    expect(p.returncode == 1 and not per and "has no event 'cycles' (it has cpu-clock, "
           "page-faults, offcpu-time)" in p.stderr, f, f'--event cycles: {p.returncode} '
           f'{p.stderr!r}')
    return f


def case_events(ctx):
    out = ctx.path('events.data')
    extra = ['event page-faults 1 0', 'event offcpu-time 65535 1']
    samples = [('tree_leaf,via_g,work,main', 30, 4242, 0), ('other_leaf,work,main', 10, 4242, 1)]
    tree_profile(ctx, out, samples, extra)
    # append page faults and off-CPU samples of known weights
    exe = ctx.path('report_tree')
    lines = ['thread 4242 report_tree', 'thread 4243 worker', *extra]
    t = 1_000_000_000
    for chain, n, tid, cpu in samples:
        for _ in range(n):
            t += 1_000_000
            lines.append(f'sample 0 {tid} {cpu} {t} 1 {chain}')
    for _ in range(3):
        t += 1000
        lines.append(f'sample 1 4242 0 {t} 1 via_h,work,main')
    lines.append(f'sample 1 4243 0 {t + 1} 1 other_leaf,work,main')
    lines.append(f'sample 2 4243 1 {t + 2} 3000000 via_g,work,main')
    lines.append(f'sample 2 4243 1 {t + 3} 1000000 other_leaf,work,main')
    gen(ctx, out, exe, lines)
    fails = []

    def check(text, want):
        f = []
        for event, (n, count, rows) in want.items():
            head, got = section(text, event)
            if head is None:
                f.append(f'no section of event {event}')
                continue
            log(f'{event}: {head.get("Samples")!r}, {head.get("Event count (approx.)")!r}, '
                f'{got}')
            expect(head.get('Samples', '').startswith(f'{n}  of event'), f,
                   f'{event}: Samples {head.get("Samples")!r}, want {n}')
            expect(head.get('Event count (approx.)') == str(count), f,
                   f'{event}: Event count {head.get("Event count (approx.)")!r}, want {count}')
            expect(got == rows, f, f'{event}: rows {got}, want {rows}')
        return f

    text = sfprof(ctx, ['report', '-i', out]).stdout
    log(text)
    want = {'cpu-clock': (40, 40, {'tree_leaf': 75.0, 'other_leaf': 25.0}),
            'page-faults': (4, 4, {'via_h': 75.0, 'other_leaf': 25.0}),
            'offcpu-time': (2, 4000000, {'via_g': 75.0, 'other_leaf': 25.0})}
    fails += check(text, want)
    expect(text.count('# Samples: ') == 3, fails, 'not three sections')
    # script: each sample's event, padded to the longest name as perf pads it
    sc = sfprof(ctx, ['script', '-i', out, '-F', 'tid,period,event']).stdout.splitlines()
    names = Counter(line.split()[-1] for line in sc)
    expect(names == Counter({'cpu-clock:': 40, 'page-faults:': 4, 'offcpu-time:': 2}), fails,
           f'script event names {names}')
    expect(any(re.match(r'^ 4243    3000000 offcpu-time: $', line) for line in sc), fails,
           'script: no off-CPU sample line with its weight in ns')
    expect(all(re.search(r'(^| ) {0,2}[a-z-]{9,11}: $', line) and
               line.endswith(': ') and len(line) == len(sc[0]) for line in sc), fails,
           'script: event names not padded to one width')
    fails += events_by_key(ctx, out)
    fails += events_exported(ctx, out)
    raise_fails(fails)
    bad = dict(want)
    bad['offcpu-time'] = (2, 2, {'via_g': 50.0, 'other_leaf': 50.0})  # counted, not weighed
    must_fail(check(text, bad), 'off-CPU samples counted instead of weighed by their ns')


def dump_samples(ctx, path):
    """[(time_ns, pid, tid, cpu, weight, event)] from sfprof dump."""
    out = sfprof(ctx, ['dump', '-i', path]).stdout
    res = []
    for line in out.splitlines():
        m = re.match(r'^sample (\d+)\.(\d{9}) pid (\d+) tid (\d+) cpu (\d+) weight (\d+)'
                     r'.*?(?: event (\d+))?$', line)
        if m:
            res.append((int(m.group(1)) * 10**9 + int(m.group(2)), int(m.group(3)),
                        int(m.group(4)), int(m.group(5)), int(m.group(6)),
                        int(m.group(7) or 0)))
    return res


def samples_line(text):
    m = re.search(r"(?m)^# Samples: (\d+)  of event '[^']*'(.*)$", text)
    return (int(m.group(1)), m.group(2)) if m else (None, None)


def case_filters(ctx):
    out = ctx.path('filters.data')
    tree_profile(ctx, out)
    dump = dump_samples(ctx, out)
    t0, t1 = min(s[0] for s in dump), max(s[0] for s in dump)
    mid = (t0 + t1) // 2
    secs = f'{t0 // 10**9}.{t0 % 10**9:09d},{mid // 10**9}.{mid % 10**9:09d}'
    span = t1 - t0
    # which of the dump's samples each filter keeps (the chains are known: by order)
    chains = [c for c, n, _, _ in TREE_SAMPLES for _ in range(n)]
    leaf = [c.split(',')[0] for c in chains]
    want = {
        ('--comm', 'worker'): sum(1 for s in dump if s[2] == 4243),
        ('--tid', '4242'): sum(1 for s in dump if s[2] == 4242),
        ('--pid', '4242'): len(dump),
        ('--pid', '1'): 0,
        ('--tid', '4242,4243'): len(dump),
        ('--time', secs): sum(1 for s in dump if t0 <= s[0] <= mid),
        ('--time', f',{mid // 10**9}.{mid % 10**9:09d}'): sum(1 for s in dump if s[0] <= mid),
        ('--time', '50%/2'): sum(1 for s in dump if t0 + span // 2 <= s[0]),
        ('--time', '0%-10%'): sum(1 for s in dump if s[0] <= t0 + round(span * 0.1) - 1),
        ('--symbols', 'tree_leaf'): leaf.count('tree_leaf'),
        ('--symbols', 'tree_leaf,work'): leaf.count('tree_leaf') + leaf.count('work'),
        ('--dso', 'report_tree'): len(dump),
        ('--dso', 'libc.so.6'): 0,
    }

    def check(want):
        fails = []
        for args, n in want.items():
            text = sfprof(ctx, ['report', '-i', out, '--percentage', 'relative', *args]).stdout
            got, _ = samples_line(text)
            log(f'{" ".join(args)}: {got} samples, the dump says {n}')
            expect(got == n, fails, f'{" ".join(args)}: {got} samples, the dump says {n}')
            rows = [float(m.group(1)) for m in re.finditer(r'(?m)^\s+([\d.]+)%', body(text))]
            if n:
                expect(abs(sum(rows) - 100.0) < 0.05, fails,
                       f'{" ".join(args)}: relative shares add up to {sum(rows)}')
        return fails

    fails = check(want)
    # absolute (perf's default): a row keeps its share of all samples
    text = sfprof(ctx, ['report', '-i', out, '--comm', 'worker']).stdout
    log(text)
    got, _ = samples_line(text)
    expect(got == len(dump), fails, f'--comm absolute: Samples {got}, want {len(dump)}')
    expect(re.search(r'(?m)^    25\.00%  report_tree    \[\.\] tree_leaf$', text), fails,
           '--comm worker: tree_leaf not at 25% of all samples, or the comm column not dropped')
    expect('# comm: worker\n' in text, fails, '--comm worker: no "# comm: worker" header line')
    text = sfprof(ctx, ['report', '-i', out, '--time', '50%/2']).stdout
    _, suffix = samples_line(text)
    expect(suffix == ' (time slices: 50%/2)', fails, f'--time: Samples line ends {suffix!r}')
    raise_fails(fails)
    wrong = dict(want)
    wrong[('--comm', 'worker')] += 1
    must_fail(check({('--comm', 'worker'): wrong[('--comm', 'worker')]}), 'one sample too many')


def case_errors(ctx):
    out = ctx.path('e.data')
    tree_profile(ctx, out)
    bad = [
        (['report', '--sort', 'nosuchkey'], 'sfprof report: --sort: unknown key'),
        (['report', '--sort', 'sym,sym'], 'sfprof report: --sort: repeated key'),
        (['report', '--time', 'yesterday'], 'sfprof report: --time:'),
        (['report', '--time', '5,3'], 'sfprof report: --time:'),
        (['report', '--time', '60%/2'], 'sfprof report: --time:'),
        (['report', '--time', '10%-5%'], 'sfprof report: --time:'),
        (['report', '-g', 'graph,period'], 'sfprof report: -g:'),
        (['report', '--call-graph=sideways'], 'sfprof report: -g:'),
        (['report', '--percent-limit', 'lots'], 'sfprof report: --percent-limit:'),
        (['report', '--pid', '12x'], 'sfprof report: --pid:'),
        (['report', '--tid', ''], 'sfprof report: --tid:'),
        (['report', '--percentage', 'some'], 'sfprof report: --percentage:'),
        (['script', '-F', 'comm,nosuch'], 'sfprof script: -F: unknown field'),
        (['script', '-F', 'comm,sym'], 'sfprof script: -F:'),
        (['script', '-F', '+comm,tid'], 'sfprof script: -F:'),
    ]

    def check(cases):
        fails = []
        for args, msg in cases:
            p = sfprof(ctx, [*args, '-i', out], check=False)
            expect(p.returncode != 0 and msg in p.stderr and not p.stdout, fails,
                   f'{" ".join(args)}: exit {p.returncode}, stderr {p.stderr.strip()!r}, '
                   f'{len(p.stdout)} bytes on stdout')
        return fails

    fails = check(bad)
    # and the good forms of the same options work
    for args in (['report', '--sort', 'symbol'], ['report', '--time', ','],
                 ['report', '-g', 'caller,0.1,graph'], ['report', '--percent-limit', '1'],
                 ['script', '-F', '+srcline'], ['script', '-F', '-dso,-symoff']):
        p = sfprof(ctx, [*args, '-i', out], check=False)
        expect(p.returncode == 0 and p.stdout, fails, f'{" ".join(args)}: exit {p.returncode}')
    raise_fails(fails)
    must_fail(check([(['report', '--sort', 'symbol'], 'sfprof report:')]),
              'a good --sort taken for a bad one')


# --- against perf on the same workload ---

def perf_report(args):
    cmd = ['perf', 'report', '--stdio', *args]
    # Debian's perf 6.1 sometimes dies on an assertion (util/build-id.c) while
    # BPF programs come and go (other recordings): tried again, then skipped
    for _ in range(4):
        log('$ ' + rt.quote(cmd))
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           errors='replace', timeout=300)
        if p.returncode >= 0:
            break
        log(p.stderr.strip())
    if p.returncode < 0:
        log('SKIP: perf report keeps crashing here (perf 6.1, util/build-id.c)')
        sys.exit(rt.SKIP)
    if p.returncode:
        log(p.stderr)
        raise Failure(f'perf report exited with {p.returncode}')
    return p.stdout


def rows_by(text, ncols):
    """{key columns joined by '|': share} of a report's flat rows (no trees)."""
    out = Counter()
    for line in text.splitlines():
        # with --children the first share is the children's, the self one follows
        m = re.match(r'^\s+([\d.]+)%\s+(?:[\d.]+%\s+)?(.*)$', line)
        if not m:
            continue
        cells = re.split(r'\s{2,}', m.group(2).strip())
        if len(cells) != ncols:
            continue
        out['|'.join(cells)] += float(m.group(1))
    return out


# Samples each profiler took of the run compared (both sample it at the same rate);
# set from sfprof's report header before shares are compared.
SAMPLES = {'n': 0}


def noise(share, n):
    """Four standard deviations, in points, of the difference between two
    independent samplings of a share (%) with @n samples each: two profilers
    with timers of their own never take the same samples. At 999 Hz for 3 s
    (3,000 samples) a 25% share differs by 1.1 points (one deviation) by chance
    alone, so "within a point" is asked where the samples allow it. Four, not
    three: a run makes a dozen such comparisons, and at three one run in about
    sixty failed by chance (CI under ASan: 78.2% against 74.7%, 3.1 deviations)."""
    if not n:
        return 0.0
    p = min(max(share / 100.0, 0.0), 1.0)
    return 4 * 100.0 * math.sqrt(2 * p * (1 - p) / n)


def compare(mine, theirs, what, fails, keys=None, tol=1.0, scale=1.0):
    """@scale: the part of the samples a share is of (a branch's share of its row)."""
    keys = keys or [k for k, v in theirs.items() if v >= 2.0]
    for k in keys:
        a, b = mine.get(k, 0), theirs.get(k, 0)
        bound = max(tol, noise((a + b) / 2, SAMPLES['n'] * scale))
        log(f'{what}: {k}: sfprof {a:.2f}%, perf {b:.2f}% (bound {bound:.2f})')
        expect(abs(a - b) <= bound, fails, f'{what}: {k}: sfprof {a:.2f}%, perf {b:.2f}%, '
               f'more than {bound:.2f} points apart')


def branch_shares(text, row):
    """{function: share} of the first-level branches (|--X%--name) under @row's tree."""
    out = {}
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if re.search(rf'\] {re.escape(row)}\s*$',
                                                                    line)), None)
    if start is None:
        return out
    for line in lines[start + 1:]:
        if re.match(r'^\s+[\d.]+%', line):
            break
        m = re.search(r'--([\d.]+)%--(\S+)', line)
        # perf repeats the row's function as the chains' root, with a share of its own
        # ('|--74.98%--tree_leaf') when another root is cut below the threshold (a chain
        # its DWARF unwinding lost): a branch is what lies under it
        if m and m.group(2) != row:
            out[m.group(2)] = float(m.group(1))
    return out


# Samples sfprof record -p must take of a run for shares to be compared (3 s at 999 Hz gives ~3,000).
MIN_JOINED_SAMPLES = 1000


def record_both(ctx, prog, arg, pd, sd):
    """perf record runs @prog, sfprof record -p joins it until it exits. @return
    'ok', 'perf' when perf could not read its recording, or 'short' when sfprof
    took too few samples (both: try again)."""
    cmd = ['perf', 'record', '-q', '-B', '--no-bpf-event', '-F', '999', '--call-graph', 'dwarf',
           '-o', pd, prog, arg]
    log('$ ' + rt.quote(cmd))
    perf = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pid = None
        deadline = time.monotonic() + 10
        while not pid and time.monotonic() < deadline and perf.poll() is None:
            out = subprocess.run(['pgrep', '-n', '-f', '-x', f'{prog} {arg}'],
                                 stdout=subprocess.PIPE, text=True).stdout.split()
            pid = out[0] if out else None
            if not pid:
                time.sleep(0.02)
        if not pid:
            raise Failure(f'{prog} did not start under perf record')
        p = ctx.record(['-F', '999', '-p', pid, '--duration', '30'], sd, timeout=60)
        if p.returncode:
            raise Failure(f'sfprof record exited with {p.returncode}')
        _, err = perf.communicate(timeout=120)
    finally:
        if perf.poll() is None:
            perf.kill()
            perf.wait()
    if perf.returncode or 'assertion failed' in err or not os.path.exists(pd):
        log(f'perf record failed ({perf.returncode}): {err.strip()[:200]}')
        return 'perf'
    # a BPF program loaded during the recording can leave a file perf cannot read
    q = subprocess.run(['perf', 'report', '--stdio', '-i', pd, '--sort', 'dso', '-g', 'none'],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    if q.returncode:
        log('perf report cannot read that recording: recording again')
        return 'perf'
    # sfprof joins a running program: on a busy machine its start (the BPF
    # verifier) can take most of the run, and shares need samples
    mine = sfprof(ctx, ['report', '-i', sd, '--sort', 'sym', '-g', 'none']).stdout
    m = re.search(r'^# Samples: (\d+)', mine, re.M)
    n = int(m.group(1)) if m else 0
    if n < MIN_JOINED_SAMPLES:
        log(f'sfprof record joined with {n} samples, fewer than {MIN_JOINED_SAMPLES}: '
            'recording a longer run')
        return 'short'
    return 'ok'


def case_perf(ctx):
    if not shutil.which('perf'):
        log('SKIP: perf not found')
        sys.exit(rt.SKIP)
    fails = []
    tree = ctx.compile('report_tree.c', 'report_tree', extra=['-g'])
    ctx.compile('libcallback.c', 'libcallback.so', shared=True)
    chains = ctx.compile('record_chains.c', 'record_chains', extra=['-g'],
                         libs=['-L', ctx.work, '-lcallback', '-Wl,-rpath,$ORIGIN'])
    # Both profilers sample the same run: perf runs the program, sfprof record -p
    # joins it, so that shares agree within a point however the machine is loaded.
    # -B --no-bpf-event: Debian's perf 6.1 asserts (util/build-id.c) and dies
    # collecting build IDs while BPF programs such as sfprof record's are loaded.
    data = {}
    for prog, arg in ((tree, '3'), (chains, '3')):
        name = os.path.basename(prog)
        pd, sd = ctx.path(name + '.perf'), ctx.path(name + '.sf')
        secs = int(arg)
        for _ in range(4):
            got = record_both(ctx, prog, str(secs), pd, sd)
            if got == 'ok':
                break
            if got == 'short':
                secs *= 2  # sfprof joined too late: a run twice as long (3 to 24 s)
        if got != 'ok':
            log('SKIP: perf cannot record or read its recordings here')
            sys.exit(rt.SKIP)
        data[name] = (pd, sd)

    def both(name, s_args, p_args, ncols):
        pd, sd = data[name]
        mine = sfprof(ctx, ['report', '-i', sd, *s_args]).stdout
        m = re.search(r'^# Samples: (\d+)', mine, re.M)
        SAMPLES['n'] = int(m.group(1)) if m else 0
        theirs = perf_report(['-i', pd, *p_args])
        return mine, theirs, rows_by(mine, ncols), rows_by(theirs, ncols)

    # shares per --sort key, perf's names; perf's pid is the thread: sfprof's tid
    for keys, ncols in (('sym', 1), ('symbol', 1), ('dso,sym', 2), ('comm,dso', 2)):
        _, _, mine, theirs = both('report_tree', ['--sort', keys],
                                  ['--no-children', '-g', 'none', '--sort', keys], ncols)
        compare(mine, theirs, f'--sort {keys}', fails)
    _, _, mine, theirs = both('record_chains', ['--sort', 'tid'],
                              ['--no-children', '-g', 'none', '--sort', 'pid'], 1)
    strip = (lambda c: sorted((v for v in c.values() if v >= 2.0), reverse=True))
    log(f'--sort tid: sfprof {strip(mine)}, perf --sort pid {strip(theirs)}')
    expect(len(strip(mine)) == len(strip(theirs)) == 4 and
           all(abs(a - b) <= max(1.0, noise((a + b) / 2, SAMPLES['n']))
               for a, b in zip(strip(mine), strip(theirs))), fails,
           f'--sort tid: {strip(mine)}, perf --sort pid {strip(theirs)}')
    # srcline: the hot lines of the leaves
    _, _, mine, theirs = both('report_tree', ['--sort', 'srcline'],
                              ['--no-children', '-g', 'none', '--sort', 'srcline'], 1)
    compare(mine, theirs, '--sort srcline', fails, tol=1.5)
    # the -g tree: the branches under tree_leaf (callee) and under work (caller)
    mine, theirs, _, _ = both('report_tree', ['-g'], ['--no-children', '-g', 'graph,0.5,callee'],
                              3)
    bm, bt = branch_shares(mine, 'tree_leaf'), branch_shares(theirs, 'tree_leaf')
    log(f'-g callee under tree_leaf: sfprof {bm}, perf {bt}')
    expect(set(bm) == set(bt) == {'via_g', 'via_h'}, fails, f'-g branches {bm}, perf {bt}')
    compare(bm, bt, '-g callee, tree_leaf', fails, keys=['via_g', 'via_h'])
    mine, theirs, _, _ = both('report_tree', ['--children', '-g', 'caller'],
                              ['--children', '-g', 'graph,0.5,caller'], 3)
    bm, bt = branch_shares(mine, 'work'), branch_shares(theirs, 'work')
    log(f'--children -g caller under work: sfprof {bm}, perf {bt}')
    compare(bm, bt, '--children -g caller, work', fails,
            keys=['via_g', 'via_h', 'other_leaf'])
    fb, ft = branch_shares(*[sfprof(ctx, ['report', '-i', data['report_tree'][1], '-g',
                                          'fractal']).stdout], 'tree_leaf'), \
        branch_shares(perf_report(['-i', data['report_tree'][0], '--no-children', '-g',
                                   'fractal']), 'tree_leaf')
    compare(fb, ft, '-g fractal, tree_leaf', fails, keys=['via_g', 'via_h'], scale=0.75)
    # --children: the callers' totals
    _, _, mine, theirs = both('report_tree', ['--children', '--sort', 'sym'],
                              ['--children', '-g', 'none', '--sort', 'sym'], 1)
    compare(mine, theirs, '--children --sort sym', fails,
            keys=['[.] via_g', '[.] via_h', '[.] work', '[.] main', '[.] tree_leaf'])
    # --percent-limit: the same rows kept
    m, t, mine, theirs = both('report_tree', ['--sort', 'sym', '--percent-limit', '10'],
                              ['--no-children', '-g', 'none', '--sort', 'sym',
                               '--percent-limit', '10'], 1)
    log(f'--percent-limit 10: sfprof {sorted(mine)}, perf {sorted(theirs)}')
    expect(sorted(mine) == sorted(theirs) and len(mine) == 2, fails,
           f'--percent-limit 10: sfprof rows {sorted(mine)}, perf {sorted(theirs)}')
    # filters: shares of the rows kept, absolute as perf's
    for s_args in (['--symbols', 'tree_leaf,work'], ['--dso', 'report_tree'],
                   ['--comm', 'report_tree']):
        _, _, mine, theirs = both('report_tree', ['--sort', 'sym', *s_args],
                                  ['--no-children', '-g', 'none', '--sort', 'sym', *s_args], 1)
        compare(mine, theirs, ' '.join(s_args), fails)
        expect(set(k for k, v in mine.items() if v >= 2) == set(k for k, v in theirs.items()
                                                                 if v >= 2), fails,
               f'{" ".join(s_args)}: rows {sorted(mine)}, perf {sorted(theirs)}')
    # script -F: the same line shapes as perf script's
    pd, sd = data['report_tree']
    for fields, shape in (('comm,tid,time', r'^ {0,16}\S+ +\d+ +\d+\.\d{6}: $'),
                          ('tid,period', r'^ *\d+ +\d+ $'),
                          ('ip,sym', r'^\t *[0-9a-f]+ \S+( \(inlined\))?$'),
                          ('ip,sym,symoff,dso', r'^\t *[0-9a-f]+ \S+\+0x[0-9a-f]+ \(\S+\)$')):
        mine = sfprof(ctx, ['script', '-i', sd, '-F', fields]).stdout.splitlines()
        for _ in range(4):
            p = subprocess.run(['perf', 'script', '-i', pd, '-F', fields],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               timeout=300)
            if p.returncode >= 0:
                break
        theirs = p.stdout.splitlines()
        for who, lines in (('sfprof', mine), ('perf', theirs)):
            nonblank = [line for line in lines if line]
            good = [line for line in nonblank if re.match(shape, line)]
            log(f'-F {fields}: {who}: {len(good)} of {len(nonblank)} lines of the shape; '
                f'first {nonblank[:2]}')
            expect(nonblank and len(good) >= 0.99 * len(nonblank), fails,
                   f'-F {fields}: {who}: {len(nonblank) - len(good)} lines not of the shape')
        if fields == 'comm,tid,time':
            expect(len(mine[0]) - len(mine[0].lstrip()) == len(theirs[0]) -
                   len(theirs[0].lstrip()) + len('report_tree') - len(mine[0].split()[0]) or
                   len(mine[0].split()[0]) >= 16 or
                   mine[0].index(mine[0].split()[0]) + len(mine[0].split()[0]) == 16, fails,
                   'comm not padded to 16 as perf pads it')
    raise_fails(fails)
    # a wrong expectation must fail: perf's tree_leaf share against sfprof's other_leaf
    _, _, mine, theirs = both('report_tree', ['--sort', 'sym'],
                              ['--no-children', '-g', 'none', '--sort', 'sym'], 1)
    swapped = Counter({'[.] tree_leaf': mine.get('[.] other_leaf', 0)})
    f = []
    compare(swapped, theirs, 'swapped', f, keys=['[.] tree_leaf'])
    must_fail(f, 'other_leaf\'s share taken for tree_leaf\'s')


CASES = {'tree': case_tree, 'events': case_events, 'filters': case_filters,
         'perf': case_perf, 'errors': case_errors}


def main():
    global GEN_EVENTS
    argv = sys.argv[1:]
    if '--gen-events' in argv:
        i = argv.index('--gen-events')
        GEN_EVENTS = os.path.abspath(argv[i + 1])
        del sys.argv[i + 1:i + 3]
    rt.Ctx.gen_events = GEN_EVENTS
    return rt.case_main(__doc__, CASES)


if __name__ == '__main__':
    sys.exit(main())
