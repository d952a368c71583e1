#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`sfprof symbolize`, the markup filter, against `llvm-symbolizer-16 --filter-markup`.

The oracle runs on the same input with the same --debug-file-directory; stdout must be
equal line for line wherever LLVM implements the element. Normalised, because the spec
leaves it open: nothing but the text of demangled names, which the Itanium ABI does not
fix (LLVM writes `'lambda'()` and `(.cold)`, libiberty `{lambda()#1}` and
`[clone .cold]`): those symbols are checked against c++filt (libiberty) instead.

  elements   a program compiled here with gcc -O2 -g whose always_inline chain
             leaf <- mid <- outer is known by construction, a copy without DWARF,
             and a hand-written log using every element: equal output; the bt of
             the trap address expands to leaf, mid, outer at the source lines of
             the program; hexdict and dumpfile as documented; SGR stripped when
             not a terminal and kept with --color=always; exit status 0.
  malformed  every error class (unknown element, bad field counts, bad fields,
             overlapping mmaps, unknown module id, no mmap covering an address,
             a missing build ID, elements split over lines): the same stdout as
             LLVM, the same messages at the same columns (LLVM's caret), each as
             `sfprof symbolize: FILE:LINE:COL: message`, the lines after each
             error still filtered, exit status 1. Split elements, which LLVM
             passes as text silently, are reported too.
  sweep      pc and data elements at every 8th byte of every loaded segment of the
             program, code and data: equal to LLVM line for line.
  streams    an unclosed hexdict before a bt line (reported at its own line and
             column, the bt still symbolized), an element split over lines, three
             FILEs as one stream with line numbers per file, a missing build ID's
             column: expected text and messages.
  export     a recording of record_chains (root, BPF) exported with `sfprof export
             --format markup`: equal output line for line, glibc's frames
             included (relative DWARF directories joined under the CU's, the
             outermost frame named by the symbol table), frames in the program
             named.

Each comparison is also run once on a deliberately damaged input or expectation and
must then fail. Exit status 0 pass, 1 fail, 77 skip (no gcc or llvm-symbolizer-16;
export: not root, no BTF).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SKIP = 77
LLVM = 'llvm-symbolizer-16'


class Failure(Exception):
    pass


def log(msg=''):
    print(msg, flush=True)


PROG = r'''
#include <signal.h>
volatile int sink;
int gvar = 42;
long gtable[16];
static inline __attribute__((always_inline)) void leaf(int x)
{
	sink = x * 3;            /* LEAF_LINE */
	__builtin_trap();
}
static inline __attribute__((always_inline)) void mid(int x)
{
	sink = x;
	leaf(x + 1);             /* MID_CALL */
}
__attribute__((noinline)) void outer(int x)
{
	mid(x + 2);              /* OUTER_CALL */
	sink = 0;
}
int main(void)
{
	outer(sink);             /* MAIN_CALL */
	return 0;
}
'''


def line_of(tag):
    for i, text in enumerate(PROG.lstrip('\n').splitlines(), 1):
        if tag in text:
            return i
    raise Failure(f'{tag} not in the program')


class Ctx:
    def __init__(self, args):
        self.sfprof = os.path.abspath(args.sfprof)
        self.progs = os.path.abspath(args.progs)
        self.work = os.path.abspath(args.workdir)

    def path(self, *p):
        return os.path.join(self.work, *p)


def run(cmd, **kw):
    log('$ ' + ' '.join(str(c) for c in cmd))
    return subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=kw.pop('timeout', 120), **kw)


def build_id(path):
    out = subprocess.run(['readelf', '-n', path], stdout=subprocess.PIPE, text=True).stdout
    m = re.search(r'Build ID: ([0-9a-f]+)', out)
    if not m:
        raise Failure(f'{path}: no build ID')
    return m.group(1)


def keep(debug_dir, path):
    """Copy @path to DIR/.build-id/xx/rest.debug, where both filters look. @return its build ID."""
    bid = build_id(path)
    d = os.path.join(debug_dir, '.build-id', bid[:2])
    os.makedirs(d, exist_ok=True)
    shutil.copy2(path, os.path.join(d, bid[2:] + '.debug'))
    return bid


def symbol_addr(path, name):
    out = subprocess.run(['nm', path], stdout=subprocess.PIPE, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[2] == name:
            return int(f[0], 16)
    raise Failure(f'{name} not in {path}')


def trap_addr(path):
    """The ud2 of outer, where leaf's __builtin_trap was inlined."""
    out = subprocess.run(['objdump', '-d', '--no-show-raw-insn', path], stdout=subprocess.PIPE,
                         text=True).stdout
    body = out.split('<outer>:', 1)[1].split('\n\n', 1)[0]
    for line in body.splitlines():
        if 'ud2' in line:
            return int(line.split(':')[0], 16)
    raise Failure('no ud2 in outer')


def call_ret(path, callee):
    """The return address of main's call to @callee."""
    out = subprocess.run(['objdump', '-d', '--no-show-raw-insn', path], stdout=subprocess.PIPE,
                         text=True).stdout
    lines = out.split('<main>:', 1)[1].split('\n\n', 1)[0].splitlines()
    for i, line in enumerate(lines):
        if 'call' in line and f'<{callee}>' in line:
            return int(lines[i + 1].split(':')[0], 16)
    raise Failure(f'no call to {callee} in main')


def loads(path):
    """PT_LOAD (vaddr, memsz, flags) of @path."""
    out = subprocess.run(['readelf', '-lW', path], stdout=subprocess.PIPE, text=True).stdout
    segs = []
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == 'LOAD':
            flags = ''.join(c for c in ' '.join(f[6:-1]) if c in 'RWE')
            segs.append((int(f[2], 16), int(f[5], 16), flags))
    return segs


def context(mod_id, name, path, base):
    """module and mmap elements for @path loaded at @base, as a loader maps it."""
    lines = [f'{{{{{{module:{mod_id}:{name}:elf:{build_id(path)}}}}}}}']
    for vaddr, memsz, flags in loads(path):
        start = (base + vaddr) & ~0xfff
        size = ((base + vaddr + memsz + 0xfff) & ~0xfff) - start
        mode = ('r' if 'R' in flags else '') + ('w' if 'W' in flags else '') + \
            ('x' if 'E' in flags else '')
        lines.append(f'{{{{{{mmap:{start:#x}:{size:#x}:load:{mod_id}:{mode}:{vaddr & ~0xfff:#x}}}}}}}')
    return lines


def both(ctx, text, debug_dir, extra=(), system=False):
    """(sfprof stdout, stderr, status), (llvm stdout, stderr) on the same input.
    sfprof always looks in /usr/lib/debug too, as report does; @system: so does LLVM."""
    inp = text.encode()
    p = run([ctx.sfprof, 'symbolize', '--no-debuginfod', '--debug-file-directory', debug_dir,
             *extra], input=inp)
    q = run([LLVM, '--filter-markup', f'--debug-file-directory={debug_dir}',
             *(['--debug-file-directory=/usr/lib/debug'] if system else [])], input=inp)
    return (p.stdout.decode(errors='replace'), p.stderr.decode(errors='replace'), p.returncode), \
        (q.stdout.decode(errors='replace'), q.stderr.decode(errors='replace'))


def compare(mine, theirs, what, fails):
    a, b = mine.splitlines(), theirs.splitlines()
    if len(a) != len(b):
        fails.append(f'{what}: {len(a)} lines, {LLVM} {len(b)}')
    for i, (x, y) in enumerate(zip(a, b), 1):
        if x != y:
            fails.append(f'{what}: line {i}:\n  sfprof: {x!r}\n  llvm:   {y!r}')
            break
    return fails


def llvm_errors(stderr):
    """[(message, column)] from llvm-symbolizer's 'error: MSG' / line / caret triples."""
    out, lines = [], stderr.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r'^error: (.*)$', lines[i])
        if m and i + 2 < len(lines) and lines[i + 2].strip() == '^':
            out.append((m.group(1), lines[i + 2].index('^') + 1))
            i += 3
        elif m:
            out.append((m.group(1), None))
            i += 1
        else:
            i += 1
    return out


def my_errors(stderr):
    out = []
    for line in stderr.splitlines():
        m = re.match(r'^sfprof symbolize: (.*?):(\d+):(\d+): (.*)$', line)
        if m:
            out.append((m.group(4), int(m.group(3)), int(m.group(2))))
    return out


def must_fail(fails, what):
    if not fails:
        raise Failure(f'negative check passed, it cannot fail: {what}')
    log(f'negative check failed as it must: {what}: {fails[0].splitlines()[0]}')


def raise_fails(fails):
    if fails:
        raise Failure('\n'.join(fails))


def setup_prog(ctx):
    src = ctx.path('inl.c')
    with open(src, 'w') as f:
        f.write(PROG.lstrip('\n'))
    prog, nodbg = ctx.path('inl'), ctx.path('inl-nodbg')
    for out, g in ((prog, ['-g']), (nodbg, [])):
        p = run(['gcc', '-O2', *g, '-Wl,--build-id', '-o', out, src])
        if p.returncode:
            raise Failure(f'gcc: {p.stderr.decode()}')
    debug_dir = ctx.path('debug')
    keep(debug_dir, prog)
    keep(debug_dir, nodbg)
    return prog, nodbg, debug_dir


BASE, BASE2 = 0x555555554000, 0x7f0000000000

# Names both demanglers write alike: compared with LLVM.
SAME = ['_ZN7Mangled4NameEv', 'foobar', '_ZN3foo3barIiEEvT_', '_ZN2ns1fEPKcRSt6string', '']
# Names they write differently: compared with c++filt (libiberty, which sfprof uses).
DIFFERENT = ['_ZZ4mainENKUlvE_clEv', '_Z1fv.cold', '_ZNKSt6vectorIiSaIiEE4sizeEv']


def case_elements(ctx):
    prog, nodbg, debug_dir = setup_prog(ctx)
    trap, ret = trap_addr(prog), call_ret(prog, 'outer')
    trap2, ret2 = trap_addr(nodbg), call_ret(nodbg, 'outer')
    gvar, gtable = symbol_addr(prog, 'gvar'), symbol_addr(prog, 'gtable')
    lines = ['plain text, {{{not markup', '{{{reset}}}']
    lines += context(1, 'inl', prog, BASE)
    lines += context(0x2, 'inl-nodbg', nodbg, BASE2)
    lines += [
        f'   {{{{{{bt:0:{BASE + trap:#x}:pc}}}}}}',
        f'   {{{{{{bt:1:{BASE + ret:#x}:ra}}}}}}',
        f'   {{{{{{bt:2:{BASE + ret:#x}}}}}}} trailing text',
        f'{{{{{{bt:12:{BASE2 + trap2:#x}:pc}}}}}}',
        f'{{{{{{bt:1234567:{BASE2 + ret2:#x}}}}}}}',
        f'pc: {{{{{{pc:{BASE + trap:#x}}}}}}} / {{{{{{pc:{BASE + trap:#x}:pc}}}}}} / '
        f'{{{{{{pc:{BASE + ret:#x}:ra}}}}}} / {{{{{{pc:{BASE2 + trap2:#x}}}}}}}',
        f'data: {{{{{{data:{BASE + gvar:#x}}}}}}} {{{{{{data:{BASE + gvar + 2:#x}}}}}}} '
        f'{{{{{{data:{BASE + gtable + 40:#x}}}}}}}',
        'sym: ' + ' '.join(f'{{{{{{symbol:{s}}}}}}}' for s in SAME),
        'two {{{symbol:a}}}{{{symbol:b}}} in a row\r',
        'color: \033[31mred {{{symbol:_ZN7Mangled4NameEv}}}\033[0m \033[1mbold\033[0m',
        f'{{{{{{mmap:{BASE + 0x100000:#x}:0x1000:load:1:r:0x100000}}}}}}',
        f'after an added mmap {{{{{{pc:{BASE + trap:#x}}}}}}}',
        '{{{reset}}}',
        'after reset',
    ]
    text = '\n'.join(lines) + '\n'
    (out, err, rc), (lout, lerr) = both(ctx, text, debug_dir)
    log(out)
    fails = compare(out, lout, 'elements', [])
    if rc != 0 or err.strip():
        fails.append(f'exit status {rc}, stderr {err.strip()[:300]!r}: expected 0 and nothing')
    # the inline chain, known by construction
    bt0 = [ln for ln in out.splitlines() if re.search(r'#0(\.\d)?\s+0x', ln)]
    want = [('leaf', line_of('LEAF_LINE') + 1), ('mid', line_of('MID_CALL')),
            ('outer', line_of('OUTER_CALL'))]
    got = []
    for ln in bt0:
        m = re.search(r'0x[0-9a-f]{16} (\S+) \S*inl\.c:(\d+):\d+ \(inl\+', ln)
        if m:
            got.append((m.group(1), int(m.group(2))))
    if got != want:
        fails.append(f'frame 0 inline chain {got}, expected {want}')
    # the rows of frame 0: #0.1, #0.2, #0, as LLVM numbers them
    nums = [re.match(r'\s*(#\S+)', ln).group(1) for ln in bt0]
    if nums != ['#0.1', '#0.2', '#0']:
        fails.append(f'frame 0 numbered {nums}')
    raise_fails(fails)
    log(f'elements: {len(out.splitlines())} lines equal to {LLVM}; frame 0 = {got}')

    # negative: the same input with the mmaps 0x40 off must differ from the oracle's reading
    shifted = text.replace(f'load:1:rx:', 'load:1:rx:0x40').replace('rx:0x400x1000', 'rx:0x1040')
    (sout, _, _), _ = both(ctx, shifted, debug_dir)
    must_fail(compare(sout, lout, 'shifted mmaps', []), 'mmaps 0x40 off')

    # symbols the demanglers write differently: c++filt is the oracle
    fails = []
    for name in DIFFERENT:
        p = run([ctx.sfprof, 'symbolize'], input=f'{{{{{{symbol:{name}}}}}}}\n'.encode())
        want = subprocess.run(['c++filt', name], stdout=subprocess.PIPE, text=True).stdout
        if p.stdout.decode() != want:
            fails.append(f'{name}: {p.stdout.decode()!r}, c++filt {want!r}')
    raise_fails(fails)

    # colours: kept with --color=always, stripped otherwise (stdout is a pipe)
    colored = 'a \033[31mred {{{symbol:x}}}\033[1m\nnext\n'
    p = run([ctx.sfprof, 'symbolize', '--color=always'], input=colored.encode())
    if p.stdout.decode() != 'a \033[31mred x\033[1m\n\033[0mnext\n':
        fails.append(f'--color=always: {p.stdout.decode()!r}')
    p = run([ctx.sfprof, 'symbolize'], input=colored.encode())
    if p.stdout.decode() != 'a red x\nnext\n':
        fails.append(f'not a tty: {p.stdout.decode()!r}')
    raise_fails(fails)

    # hexdict and dumpfile: LLVM passes them through; the documented forms
    hd = '\n'.join(context(1, 'inl', prog, BASE)) + '\n' + (
        'regs {{{hexdict:\n'
        f'  RIP: {BASE + trap:#x} RAX: 0\n'
        f'  RBX:     {BASE + gvar + 1:#x} R9:0x2776ff4f\n'
        '  }}} end\n'
        '{{{dumpfile:sancov:sancov.8675}}}\n')
    p = run([ctx.sfprof, 'symbolize', '--debug-file-directory', debug_dir], input=hd.encode())
    got = p.stdout.decode().splitlines()[1:]
    want = ['regs   RIP: %#x RAX: 0' % (BASE + trap),
            '  RBX:     %#x R9:0x2776ff4f' % (BASE + gvar + 1),
            f'  RIP = outer[{ctx.path("inl.c")}:{line_of("LEAF_LINE") + 1}] (inl+{trap:#x})',
            f'  RBX = gvar+0x1 (inl+{gvar + 1:#x}) end',
            '[[[dumpfile sancov sancov.8675]]]']
    if got != want or p.returncode:
        fails.append('hexdict/dumpfile:\n  got  ' + '\n  got  '.join(got) +
                     '\n  want ' + '\n  want '.join(want) + f'\n  status {p.returncode}')
    raise_fails(fails)
    log('hexdict, dumpfile, colours and demangling as documented')


def case_malformed(ctx):
    prog, nodbg, debug_dir = setup_prog(ctx)
    trap = trap_addr(prog)
    good = f'{{{{{{bt:0:{BASE + trap:#x}:pc}}}}}}'
    bad = [
        '{{{unknownelem:1:2}}}',
        '{{{PC:0x1}}}',
        '{{{pc}}}', '{{{pc:0x1:pc:x}}}', '{{{pc:zz}}}', '{{{pc:0x1:up}}}', '{{{pc:}}}',
        '{{{bt:0}}}', '{{{bt:x:0x1}}}', '{{{bt:0:0x1:ra:1}}}',
        '{{{data:0x1:2}}}', '{{{data:12}}}', '{{{symbol:a:b}}}', '{{{symbol}}}',
        '{{{pc:0x1000}}}', '{{{bt:3:0x1000}}}', '{{{data:0x1000}}}',
        '{{{reset:1}}}',
        '{{{module:9:x:elf}}}', '{{{module:9:x:coff:00}}}', '{{{module:9:x:elf:zz}}}',
        '{{{module:9:x:elf:0}}}', '{{{module:1:x:elf:abcd}}}', '{{{module:0x:x:elf:abcd}}}',
        f'{{{{{{mmap:{BASE + 0x1100:#x}:0x10:load:1:rx:0x1100}}}}}}',
        '{{{mmap:0x1:0x10:load:7:rx:0x0}}}',
        '{{{mmap:0x1:0x10:load:1:rwz:0x0}}}', '{{{mmap:0x1:0x10:store:1:r:0x0}}}',
        '{{{mmap:0x1:0x10:load:1:r:0x0:9}}}', '{{{mmap:0x1:zz:load:1:r:0x0}}}',
        '{{{mmap:0x1}}}',
        '{{{module:5:gone:elf:0102030405060708}}}',
        '{{{mmap:0x100000:0x1000:load:5:rx:0x0}}}',
        '{{{pc:0x100010}}}',
        f'{{{{{{pc:{BASE + trap:#x}', '}}}',         # an element split over lines
        '{{{bt:0:0x1', ':pc}}}',
    ]
    lines = ['{{{reset}}}'] + context(1, 'inl', prog, BASE)
    unknown_line = len(lines) + 1
    for i, b in enumerate(bad):
        lines += [b, f'  after bad input {i}: {good}']
    text = '\n'.join(lines) + '\n'
    (out, err, rc), (lout, lerr) = both(ctx, text, debug_dir)
    log(out)
    log(err)
    fails = compare(out, lout, 'malformed', [])
    if rc != 1:
        fails.append(f'exit status {rc}, expected 1')
    # the line after each bad one is still filtered
    after = [ln for ln in out.splitlines() if ' after ' in ln]
    unfiltered = [ln for ln in after if '{{{' in ln or ' leaf ' not in ln]
    if len(after) != len(bad) or unfiltered:
        fails.append(f'{len(after)} lines after bad ones, {len(unfiltered)} not filtered: '
                     f'{unfiltered[:2]}')
    # the same errors at the same columns, in LLVM's words, with the line number
    mine = my_errors(err)
    theirs = llvm_errors(lerr)
    unknown = [e for e in mine if e[0].startswith('unknown element')]
    # LLVM says nothing of an element split over lines (text to it too)
    split = [e for e in mine if e[0].startswith('element not closed on its line')]
    # LLVM gives no caret for a build ID it cannot find: there the message alone is compared
    mine_llvm = [(m, None if m.startswith('could not find build ID') else c) for m, c, _ in mine
                 if not m.startswith('unknown element') and
                 not m.startswith('element not closed on its line')]
    theirs_c = list(theirs)
    if len(split) != 2:
        fails.append(f'split elements reported as {split}: expected twice')
    if mine_llvm != theirs_c:
        fails.append('errors differ:\n  sfprof ' + repr(mine_llvm) + '\n  llvm   ' + repr(theirs_c))
    if len(unknown) != 1 or unknown[0][2] != unknown_line:
        fails.append(f'unknown element reported as {unknown}: expected once, line {unknown_line}')
    if not re.search(r'could not be handled', err):
        fails.append('no summary of the errors')
    raise_fails(fails)
    log(f'malformed: {len(mine)} errors, {len(theirs)} as {LLVM} reports them')
    # negative: one error fewer must be noticed
    must_fail(['errors differ'] if mine_llvm[1:] != theirs_c else [], 'one error dropped')


def case_export(ctx):
    import export_test as et
    import record_test as rt
    rt.check_preconditions()
    rctx = rt.Ctx(argparse.Namespace(sfprof=ctx.sfprof, progs=ctx.progs, workdir=ctx.work))
    data, prof, prog, lib = et.record_chains(rctx, 'markup.data', seconds=1)
    markup = et.export(rctx, data, 'markup').decode()
    debug_dir = ctx.path('debug')
    for path in (prog, lib):
        keep(debug_dir, path)
    # the system's libraries are found through /usr/lib/debug (libc6-dbg) by both
    (out, err, rc), (lout, lerr) = both(ctx, markup, debug_dir, system=True)
    fails = compare(out, lout, 'export', [])
    bts = [ln for ln in out.splitlines() if re.match(r'\s*#\d+(\.\d+)?\s+0x', ln)]
    named = [ln for ln in bts if re.search(r'0x[0-9a-f]{16} (?!<invalid>)\S+ .*\(record_chains\+', ln)]
    if not named:
        fails.append('no frame of record_chains named')
    raise_fails(fails)
    log(f'export: {len(markup.splitlines())} markup lines, {len(bts)} frames, '
        f'{len(named)} in the program; output equal to {LLVM}; status {rc}')
    # negative: the program's mmaps shifted
    bid = build_id(prog)
    ids = {m.group(1) for m in re.finditer(r'\{\{\{module:(\d+):[^:]*:elf:' + bid, markup)}
    shifted = re.sub(r'(\{\{\{mmap:0x[0-9a-f]+:0x[0-9a-f]+:load:(\d+):rx?:0x)([0-9a-f]+)',
                     lambda m: m.group(1) + (f'{int(m.group(3), 16) + 0x40:x}'
                                             if m.group(2) in ids else m.group(3)), markup)
    (sout, _, _), _ = both(ctx, shifted, debug_dir, system=True)
    must_fail(compare(sout, lout, 'shifted', []), 'the program\'s mmaps 0x40 off')


def case_sweep(ctx):
    """pc and data elements at every 8th byte of every loaded segment of the program,
    code and data alike: equal to LLVM line for line (the symbol table's rule: a symbol of
    no size, as _fini or __bss_start, runs to the next; objects name data and code)."""
    prog, _, debug_dir = setup_prog(ctx)
    lines = ['{{{reset}}}'] + context(1, 'inl', prog, BASE)
    n = 0
    for vaddr, memsz, _ in loads(prog):
        for a in range(vaddr, vaddr + memsz, 8):
            lines.append(f'{a:#x}: {{{{{{pc:{BASE + a:#x}}}}}}} {{{{{{data:{BASE + a:#x}}}}}}}')
            n += 1
    text = '\n'.join(lines) + '\n'
    (out, err, rc), (lout, _) = both(ctx, text, debug_dir)
    fails = compare(out, lout, 'sweep', [])
    named = {m.group(1) for m in re.finditer(r'\] (?:\S+: )?\S+ (\w+)\[', out)}
    data = {m.group(1) for m in re.finditer(r'(\w+)(?:\+0x[0-9a-f]+)? \[0x', out)}
    log(f'sweep: {n} addresses; names in pc elements {sorted(named)[:12]}; status {rc}')
    for want in ('gvar', 'gtable'):
        if want not in out:
            fails.append(f'sweep: {want} never named')
    raise_fails(fails)
    # negative: LLVM's output of the sweep 8 bytes on
    shifted = '\n'.join(re.sub(r'0x([0-9a-f]+)\}', lambda m: f'{int(m.group(1), 16) + 8:#x}}}',
                               ln) for ln in lines) + '\n'
    _, (sout, _) = both(ctx, shifted, debug_dir)
    must_fail(compare(out, sout, 'sweep shifted', []), 'the sweep against a shifted one')


def case_streams(ctx):
    """Errors that span lines and files, with the line and column they name:
    an unclosed hexdict is reported where it opened when the next element begins, and that
    next line is filtered as usual; an element other than hexdict split over two lines is
    text, as in LLVM, but reported; several FILEs are one stream (context carries) whose
    line numbers start again in each file, and a hexdict open at a file's end is reported in
    that file; a module found nowhere is reported at the element that needed it."""
    prog, _, debug_dir = setup_prog(ctx)
    trap = trap_addr(prog)
    bt = f'{{{{{{bt:0:{BASE + trap:#x}:pc}}}}}}'
    ctx_lines = ['{{{reset}}}'] + context(1, 'inl', prog, BASE)
    fails = []

    def sym(args, text=None):
        p = run([ctx.sfprof, 'symbolize', '--no-debuginfod', '--debug-file-directory', debug_dir,
                 *args], input=text.encode() if text is not None else None)
        return p.stdout.decode(), p.stderr.decode(), p.returncode

    alone, _, _ = sym([], '\n'.join(ctx_lines + ['  ' + bt]) + '\n')
    want_bt = alone.splitlines()[1:]
    hd = len(ctx_lines) + 1
    out, err, rc = sym([], '\n'.join(ctx_lines + ['regs {{{hexdict: A:0x1', '  ' + bt,
                                                   'tail']) + '\n')
    got = out.splitlines()
    expect_eq(fails, 'unclosed hexdict: the next line', got[2:2 + len(want_bt)], want_bt)
    expect_eq(fails, 'unclosed hexdict: its own line', got[1], 'regs {{{hexdict: A:0x1')
    expect_eq(fails, 'unclosed hexdict: errors', my_errors(err),
              [('hexdict not closed before the next element: written as text', 6, hd)])
    expect_eq(fails, 'unclosed hexdict: status', rc, 1)
    out, err, rc = sym([], f'x {{{{{{pc:{BASE + trap:#x}\n}}}}}}\nok {{{{{{symbol:_Z1fv}}}}}}\n')
    expect_eq(fails, 'split element: output', out.splitlines(),
              [f'x {{{{{{pc:{BASE + trap:#x}', '}}}', 'ok f()'])
    expect_eq(fails, 'split element: errors', my_errors(err),
              [('element not closed on its line (only hexdict may span lines): left as text',
                3, 1)])
    expect_eq(fails, 'split element: status', rc, 1)
    files = []
    for i, body in enumerate(['\n'.join(ctx_lines), 'one\ntwo\n{{{pc:0x1}}}\n  ' + bt,
                              '{{{hexdict:\n A:0x1']):
        files.append(ctx.path(f'stream{i}.txt'))
        with open(files[-1], 'w') as f:
            f.write(body + '\n')
    out, err, rc = sym([*files, files[1]])
    lines = [ln for ln in err.splitlines() if ':' in ln and 'could not be handled' not in ln]
    expect_eq(fails, 'files: errors', lines, [
        f'sfprof symbolize: {files[1]}:3:7: no mmap covers address',
        f'sfprof symbolize: {files[2]}:1:1: multi-line element not closed before the end of '
        'its file',
        f'sfprof symbolize: {files[1]}:3:7: no mmap covers address'])
    expect_eq(fails, 'files: the bt of the second file, filtered twice (context carried)',
              sum(1 for ln in out.splitlines() if ln in want_bt), 2 * len(want_bt))
    out, err, rc = sym([], '{{{reset}}}\n{{{module:5:gone:elf:0102030405060708}}}\n'
                       '{{{mmap:0x100000:0x1000:load:5:rx:0x0}}}\n  {{{bt:0:0x100010:pc}}}\n')
    # at the bt's frame number, where LLVM puts its caret for a bt's address errors
    expect_eq(fails, 'missing build ID: errors', my_errors(err),
              [("could not find build ID '0102030405060708'", 9, 4)])
    raise_fails(fails)
    must_fail([f for f in [expect_eq([], 'x', my_errors(err), [])] if f], 'no errors expected')
    log('streams: hexdict recovery, split elements, files and columns as documented')


def expect_eq(fails, what, got, want):
    if got != want:
        fails.append(f'{what}:\n  got  {got!r}\n  want {want!r}')
        return fails[-1]
    return None


CASES = {'elements': case_elements, 'malformed': case_malformed, 'export': case_export,
         'sweep': case_sweep, 'streams': case_streams}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--progs', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', required=True, choices=sorted(CASES))
    args = ap.parse_args()
    for tool in ('gcc', LLVM, 'readelf', 'nm', 'objdump', 'c++filt'):
        if not shutil.which(tool):
            log(f'SKIP: {tool} not found (scripts/setup installs it)')
            return SKIP
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
