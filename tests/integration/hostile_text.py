#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Hostile names through every output of sfprof, and the files exports make.

Every string a profile holds was chosen by someone else: the comm a process
gave itself, the paths of what it mapped, the symbols of its ELF files, the
source file names in their DWARF, the kernel's symbols, the recorded command
line. sfprof prints them under one rule (user/util/text.h): well-formed UTF-8
passes, a backslash is "\\\\", tab, newline and CR are "\\t", "\\n", "\\r",
other C0 controls, DEL and bytes that are not UTF-8 are "\\xHH", C1 controls,
U+2028/U+2029, the bidirectional controls and U+FFFE/U+FFFF are "\\uHHHH";
each format adds its own characters ("\\x3b" for ';' in collapsed frames,
"\\x7b"/"\\x7d"/"\\x3a" in symbolizer markup, '"' in dump's quoted strings,
XML's entities in svg). escape() below is an independent transcription of
the rule, from Python's strict UTF-8 decoder.

  written   tests/tools/sfprof-crafted-profile writes a profile of
            tests/progs/hostile_name.c built at a path with a newline, ESC
            and bytes that are not UTF-8, its hot function renamed (objcopy)
            to hold ESC, a newline, a tab, a fake frame, ';', "{{{reset}}}",
            ':', 0xff and the C1 control CSI; comms "x\\n\\tfff main\\n\\e[2J"
            and "{{{reset}}}:" cut mid-character; a kallsyms file with such a
            kernel symbol. Then report, report --sort pid, script, export
            markup (read back by llvm-symbolizer-16 --filter-markup),
            collapsed, pprof (its string table decoded here, strictly as
            UTF-8; go tool pprof -raw when go is installed), svg (parsed by
            xml.etree) and dump: each output is valid UTF-8 with no control
            character but the line ends, has as many lines as it should, and
            shows each hostile string in its escaped form where it belongs.
            script names the frame no symbol covers module+0xOFFSET once.
            No root needed.
  recorded  the same program run by `sfprof record` (it sets its comm with
            prctl(PR_SET_NAME); the kernel keeps 15 bytes), through every
            output. Needs root and BPF like record_test.py; skips (77)
            without them.
  files     under umask 022, exports of every format are created 0600, and
            replace an earlier 0644 file with a 0600 one; a symlink at the
            output path (to a file, dangling, to /dev/null) is refused with
            exit 1 and its target is left as it was; a device is written in
            place; no temporary file is left. No root needed.

Each case also runs its checks on a deliberately wrong expectation and must
then fail. Exit status 0 pass, 1 fail, 77 skip.
"""

import argparse
import gzip
import os
import re
import shutil
import stat
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_test as rt  # noqa: E402

SKIP = 77
Failure = rt.Failure
log, expect, raise_fails = rt.log, rt.expect, rt.raise_fails

COMM = b'x\n\tfff main\n\x1b[2J'
COMM2 = b'{{{reset}}}:ab\xe2\x82'          # a comm the kernel cut mid-character
SYM = b'hot\x1b[2J\n\tfff main\xff;{{{reset}}}:\xc2\x9b'
DIR = b'lib\n\x1b[31m\xfe'
BASE = b'prog;{x}:\x07\xe2\x80\xae'       # U+202E RIGHT-TO-LEFT OVERRIDE
CMDLINE = b'run \x1b]0;owned\x07 \xff\n--evil \\x41'
KSYM = b'kfunc\x1b[2J\xff;{:}\xe2\x80\xa8'
SRC = b'hostile\x1b[2J\xff\n\tfff.c'          # hostile_name.c's #line
HOST = b'host\x1b]0;owned\x07'             # sfprof-crafted-profile's host
KADDR = 0xffffffff81000010
PID = 4242

_ESCAPED_POINTS = set(range(0x80, 0xa0)) | {0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202b,
                                            0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068,
                                            0x2069, 0xfffe, 0xffff}


def escape(raw, extra=''):
    """The rule of user/util/text.h, with the characters of @extra escaped too."""
    out, i = [], 0
    while i < len(raw):
        c = raw[i]
        if c < 0x80:
            ch = chr(c)
            if ch == '\\':
                out.append('\\\\')
            elif ch in '\t\n\r':
                out.append({'\t': '\\t', '\n': '\\n', '\r': '\\r'}[ch])
            elif c < 0x20 or c == 0x7f or ch in extra:
                out.append(f'\\x{c:02x}')
            else:
                out.append(ch)
            i += 1
            continue
        for n in (2, 3, 4):
            try:
                ch = raw[i:i + n].decode('utf-8', 'strict')
            except UnicodeDecodeError:
                continue
            break
        else:
            out.append(f'\\x{c:02x}')
            i += 1
            continue
        out.append(f'\\u{ord(ch):04x}' if ord(ch) in _ESCAPED_POINTS else ch)
        i += n
    return ''.join(out)


def bad_chars(text):
    """Characters no output may hold: controls but the line end, C1, separators, bidi."""
    return sorted({f'U+{ord(ch):04X}' for ch in text
                   if (ord(ch) < 0x20 and ch != '\n') or ord(ch) in _ESCAPED_POINTS or
                   ord(ch) == 0x7f})


def check_clean(what, data, fails, tab_lines=False):
    """@data (bytes) is UTF-8 without a control character but '\\n' (and with
    @tab_lines, a tab starting a line): returns the text."""
    try:
        text = data.decode('utf-8', 'strict')
    except UnicodeDecodeError as e:
        expect(False, fails, f'{what}: not UTF-8: {e}')
        return data.decode('utf-8', 'replace')
    bad = bad_chars(re.sub(r'^\t', '', text, flags=re.M) if tab_lines else text)
    expect(not bad, fails, f'{what}: raw control characters {bad}')
    return text


def expect_in(what, needle, text, fails):
    expect(needle in text, fails, f'{what}: {needle!r} is not there')


class Ctx(rt.Ctx):
    def __init__(self, args):
        super().__init__(args)
        self.crafted = os.path.abspath(args.crafted)
        self.kallsyms = None

    def sf(self, args, check=True):
        """sfprof with @args, its output as bytes."""
        cmd = [self.sfprof, *args]
        log('$ ' + rt.quote([os.fsdecode(c) if isinstance(c, bytes) else c for c in cmd]))
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        if p.stderr.strip():
            log(p.stderr.decode('utf-8', 'backslashreplace').rstrip())
        if check and p.returncode != 0:
            raise Failure(f'sfprof {args[0]} exited with {p.returncode}')
        return p


def elf_layout(path):
    """(build ID hex, [(p_offset, p_vaddr, p_filesz)] of the PT_LOADs) from readelf."""
    notes = subprocess.run(['readelf', '-nW', path], stdout=subprocess.PIPE, check=True,
                           text=True).stdout
    m = re.search(r'Build ID: ([0-9a-f]+)', notes)
    if not m:
        raise Failure(f'{path}: no build ID')
    loads = []
    for line in subprocess.run(['readelf', '-lW', path], stdout=subprocess.PIPE, check=True,
                               text=True).stdout.splitlines():
        f = line.split()
        if f and f[0] == 'LOAD':
            loads.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
    return m.group(1), loads


def file_offset(loads, vaddr):
    for off, va, size in loads:
        if va <= vaddr < va + size:
            return vaddr - va + off
    raise Failure(f'{vaddr:#x} is in no PT_LOAD')


def symbols(path):
    """{name: vaddr} of the function symbols, from nm."""
    out = {}
    for line in subprocess.run(['nm', path], stdout=subprocess.PIPE, check=True,
                               text=True).stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in 'tT':
            out[f[2]] = int(f[0], 16)
    return out


def build_hostile(ctx, compile_):
    """hostile_name.c built (by @compile_), hot_spin renamed SYM, copied to DIR/BASE:
    (its path as bytes, the unrenamed build, the symbol addresses)."""
    plain = compile_('hostile_name.c', 'hostile_name')
    renamed = ctx.path('hostile_renamed')
    rt.run(['objcopy', '--redefine-sym', os.fsdecode(b'hot_spin=' + SYM), plain, renamed])
    if b'\n' not in subprocess.run(['nm', renamed], stdout=subprocess.PIPE).stdout:
        raise Failure('objcopy --redefine-sym left hot_spin as it was')
    d = os.path.join(os.fsencode(ctx.work), DIR)
    os.makedirs(d, exist_ok=True)
    exe = os.path.join(d, BASE)
    shutil.copy2(renamed, exe)
    return exe, plain, symbols(plain)


# --- the outputs, each checked ---

def check_outputs(ctx, data, want, fails, kallsyms=None):
    """Every output of @data against @want: {'comms': [thread names, raw], 'roots': [process
    names] (collapsed, svg, report --sort pid), 'also': [other thread names script may show],
    'exe': raw path, 'sym': raw, 'unnamed': file offset or None, 'ksym': raw or None,
    'cmdline': raw, 'src': raw or None, 'samples': int or None, 'script_lines': int or
    None}."""
    ks = ['--kallsyms', kallsyms] if kallsyms else []
    exe, base = want['exe'], os.path.basename(want['exe'])

    # report: rows (every frame's, with --children) and header
    text = check_clean('report', ctx.sf(['report', '-i', data, '--children', *ks]).stdout,
                       fails)
    for c in want['comms']:
        expect(re.search(r'^ +[0-9.]+%  +[0-9.]+%  ' + re.escape(escape(c)) + ' ', text, re.M),
               fails,
               f'report: no row of comm {escape(c)!r}')
    expect_in('report', escape(base) + ' ', text, fails)
    expect_in('report', '[.] ' + escape(want['sym']), text, fails)
    expect_in('report', '# Command line: ' + escape(want['cmdline']) + '\n', text, fails)
    if want['ksym']:
        expect_in('report', '[k] ' + escape(want['ksym']), text, fails)
    if want['unnamed'] is not None:
        expect_in('report', f'[.] {escape(base)}+{want["unnamed"]:#x}\n', text, fails)
    text = check_clean('report --sort pid', ctx.sf(['report', '-i', data, '--sort', 'pid',
                                                        *ks]).stdout, fails)
    for c in want['roots']:
        expect(re.search(r'^ +[0-9.]+%  +\d+:' + re.escape(escape(c)) + '$', text, re.M),
               fails, f'report --sort pid: no row {escape(c)!r}')

    # script: one header per sample, one line per frame, nothing else
    # (a frame line starts with a tab, as perf script's)
    text = check_clean('script', ctx.sf(['script', '-i', data, *ks]).stdout, fails,
                       tab_lines=True)
    lines = text.split('\n')
    heads = [l for l in lines if l and not l.startswith('\t')]
    expect(heads and all(any(l.startswith(escape(c) + ' ') for c in want['comms'] + want['also'])
                         for l in heads), fails,
           f'script: sample lines that do not start with an escaped comm: {heads[:3]}')
    frame_re = re.compile(r'^\t {0,15}[0-9a-f]{1,16} .+ \(.+\)$')
    odd = [l for l in lines if l.startswith('\t') and not frame_re.match(l)]
    expect(not odd, fails, f'script: frame lines out of shape: {odd[:3]}')
    if want['script_lines'] is not None:
        expect(len(lines) == want['script_lines'], fails,
               f'script: {len(lines)} lines, want {want["script_lines"]}')
    expect(re.search(r'^\t {0,15}[0-9a-f]{1,16} ' + re.escape(escape(want['sym'])) +
                     r'\+0x[0-9a-f]+ \(' + re.escape(escape(exe)) + r'\)$', text, re.M), fails,
           'script: no frame line of the renamed symbol, escaped, with its module path')
    if want['unnamed'] is not None:
        line = f'\t{want["unnamed"]:16x} {escape(base)}+{want["unnamed"]:#x} ({escape(exe)})'
        expect(line in lines, fails, f'script: no line {line!r} for the frame no symbol covers')
        expect(not re.search(r'\+0x[0-9a-f]+\+0x0 \(', text), fails,
               'script: a name with +0x0 after its offset')
    if want['ksym']:
        expect_in('script', f'\t{KADDR:16x} {escape(want["ksym"])}+0x10 ([kernel.kallsyms])\n',
                  text, fails)

    # collapsed: one stack per line, ';' only between frames
    text = check_clean('collapsed', ctx.sf(['export', '-i', data, '-f', 'collapsed',
                                                *ks]).stdout, fails)
    total = 0
    for line in text.splitlines():
        m = re.match(r'^(.+) (\d+)$', line)
        expect(m, fails, f'collapsed: a line out of shape: {line!r}')
        if m:
            total += int(m.group(2))
    if want['samples'] is not None:
        expect(total == want['samples'], fails,
               f'collapsed: counts add up to {total}, want {want["samples"]}')
    frames = [f for line in text.splitlines() for f in line.rsplit(' ', 1)[0].split(';')]
    expect(escape(want['sym'], ';') in frames, fails,
           f'collapsed: no frame {escape(want["sym"], ";")!r}')
    for c in want['roots']:
        expect(escape(c, ';') in frames, fails, f'collapsed: no root {escape(c, ";")!r}')
    if want['ksym']:
        expect(escape(want['ksym'], ';') + '_[k]' in frames, fails,
               'collapsed: no escaped kernel frame')

    # pprof: the string table, decoded here
    p = ctx.sf(['export', '-i', data, '-f', 'pprof', '-o', ctx.path('out.pb.gz'), *ks])
    with open(ctx.path('out.pb.gz'), 'rb') as f:
        strings = pprof_strings(gzip.decompress(f.read()))
    decoded = [check_clean(f'pprof string {i}', s, fails) for i, s in enumerate(strings)]
    for needle in [want['sym'], exe, want['cmdline']] + want['comms'] + \
            ([want['ksym']] if want['ksym'] else []):
        expect(escape(needle) in decoded, fails, f'pprof: no string {escape(needle)!r}')
    if want['src']:
        expect(any(s.endswith('/' + escape(want['src'])) for s in decoded), fails,
               f'pprof: no file name ending in {escape(want["src"])!r}')
    if shutil.which('go'):
        log('$ go tool pprof -raw out.pb.gz')
        raw = go_pprof_raw(ctx, ctx.path('out.pb.gz'))
        expect(escape(want['sym']) in raw, fails, 'go tool pprof -raw: no escaped symbol')

    # markup: read back by the filter it is for
    markup = ctx.sf(['export', '-i', data, '-f', 'markup', *ks]).stdout
    text = check_clean('markup', markup, fails)
    expect(re.search(r'^\{\{\{module:\d+:' + re.escape(escape(base, ':{}')) +
                     r':elf:[0-9a-f]+\}\}\}$', text, re.M), fails,
           'markup: no module element with the escaped name')
    for c in want['comms']:
        expect(re.search('^' + re.escape(escape(c, '{}')) + r' \d+/\d+ \[\d+\] ', text, re.M),
               fails, f'markup: no sample line of {escape(c, "{}")!r}')
    if shutil.which('llvm-symbolizer-16'):
        debug = debug_dir(ctx, data, want)
        p = subprocess.run(['llvm-symbolizer-16', '--filter-markup',
                            f'--debug-file-directory={debug}'], input=markup,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        # (the filter prints the DWARF file names of the build raw: its text, not ours)
        out = p.stdout.decode('utf-8', 'replace')
        err = p.stderr.decode('utf-8', 'replace').strip()
        expect(p.returncode == 0 and not err, fails,
               f'llvm-symbolizer-16 --filter-markup: exit {p.returncode}: {err[:300]}')
        expect('{{{' not in out, fails, 'the filter left a markup element unprocessed')
        expect(re.search(r'^ +#0 +0x[0-9a-f]+ hot_spin ', out, re.M), fails,
               'the filter named no frame hot_spin: the bt elements were not read')
        for c in want['comms']:
            expect_in('the filter\'s output', escape(c, '{}') + ' ', out, fails)
    else:
        log('llvm-symbolizer-16 not found: the markup is not read back')

    # svg: XML, names escaped under XML's entities
    svg = ctx.sf(['export', '-i', data, '-f', 'svg', *ks]).stdout
    check_clean('svg', svg, fails)
    try:
        root = ET.fromstring(svg)
    except ET.ParseError as e:
        expect(False, fails, f'svg: not XML: {e}')
    else:
        ns = '{http://www.w3.org/2000/svg}'
        titles = [t.text or '' for t in root.iter(ns + 'title')]
        for needle in [want['sym']] + want['roots']:
            expect(any(t.startswith(escape(needle) + ' (') for t in titles), fails,
                   f'svg: no frame titled {escape(needle)!r}')
        head = [t.text for t in root.iter(ns + 'text') if t.get('id') == 'title']
        expect(head == ['sfprof: ' + escape(want['cmdline'])], fails,
               f'svg: the title is {head!r}')

    # dump: every record on its line, strings quoted
    text = check_clean('dump', ctx.sf(['dump', '-i', data]).stdout, fails)
    for c in want['comms']:
        expect_in('dump', 'comm "' + escape(c, '"') + '"', text, fails)
    expect_in('dump', 'path "' + escape(exe, '"') + '"', text, fails)
    expect_in('dump', '# command line: ' + escape(want['cmdline']) + '\n', text, fails)
    known = ('#', 'process ', 'thread ', 'module ', 'mapping ', 'stack ', 'sample ', 'lost ',
             'exit ', 'comm ', 'event ', 'jit ')
    odd = [l for l in text.splitlines() if not l.startswith(known)]
    expect(not odd, fails, f'dump: lines that are no record: {odd[:3]}')
    return fails


def debug_dir(ctx, data, want):
    """A --debug-file-directory for the filter: every module of the profile at
    .build-id/xx/rest.debug, the hostile program as its unrenamed build."""
    d = ctx.path('debug')
    shutil.rmtree(d, ignore_errors=True)
    dump = subprocess.run([ctx.sfprof, 'dump', '-i', data], stdout=subprocess.PIPE,
                          check=True).stdout
    for m in re.finditer(rb'^module \d+ build-id ([0-9a-f]+) size \d+ path "(.*)"$', dump, re.M):
        build_id, path = m.group(1).decode(), m.group(2)
        src = want['plain'] if path == escape(want['exe'], '"').encode() else os.fsdecode(path)
        if not os.path.exists(src):
            # a module no file holds ([vdso]): the copy record kept in the build-ID cache
            xdg = os.environ.get('XDG_CACHE_HOME', '')
            cache = xdg if xdg.startswith('/') else os.path.expanduser('~/.cache')
            src = os.path.join(cache, 'sfprof', '.build-id', build_id[:2], build_id[2:])
        if not os.path.exists(src):
            continue
        os.makedirs(os.path.join(d, '.build-id', build_id[:2]), exist_ok=True)
        os.symlink(os.path.abspath(src),
                   os.path.join(d, '.build-id', build_id[:2], build_id[2:] + '.debug'))
    return d


def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def pprof_strings(buf):
    """profile.proto's string_table (field 6) as bytes, from the top-level message."""
    out, i = [], 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            if field == 6:
                out.append(buf[i:i + n])
            i += n
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise Failure(f'pprof: wire type {wire} at byte {i}')
    return out


def go_pprof_raw(ctx, path):
    home = ctx.path('gohome')
    env = dict(os.environ, HOME=home, GOCACHE=os.path.join(home, 'cache'),
               GOTOOLCHAIN='local', PPROF_TMPDIR=os.path.join(home, 'pprof'),
               PPROF_BINARY_PATH=home)
    p = subprocess.run(['go', 'tool', 'pprof', '-raw', path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env, timeout=300)
    if p.returncode != 0:
        raise Failure(f'go tool pprof -raw exited with {p.returncode}: {p.stderr[:300]!r}')
    return p.stdout.decode('utf-8', 'replace')


def must_fail(ctx, data, want, kallsyms, what):
    """The checks on a wrong expectation: they must find something."""
    if not check_outputs(ctx, data, want, [], kallsyms):
        raise Failure(f'the checks pass with a wrong expectation ({what})')
    log(f'(the checks fail as they must with {what})')


# --- the cases ---

def compile_plain(ctx):
    def compile_(src, out):
        path = ctx.path(out)
        rt.run(['gcc', '-O2', '-g', '-Wall', '-Wextra', '-o', path,
                os.path.join(ctx.progs, src)])
        return path
    return compile_


def written_profile(ctx):
    exe, plain, syms = build_hostile(ctx, compile_plain(ctx))
    build_id, loads = elf_layout(plain)
    off = {name: file_offset(loads, syms[name]) for name in ('hot_spin', 'hot_caller', 'main')}
    size = (os.path.getsize(exe) + 4095) & ~4095
    kallsyms = ctx.path('kallsyms')
    with open(kallsyms, 'wb') as f:
        f.write(b'ffffffff80000000 T _stext\n')
        f.write(b'%x T %s\n' % (KADDR - 0x10, KSYM))
        f.write(b'%x T after\n' % (KADDR + 0x1000))
    data = ctx.path('written.data')
    stack_a = f'{off["hot_spin"] + 4:x},{off["hot_caller"] + 8:x},{off["main"] + 8:x}'
    stack_b = f'10,{off["hot_caller"] + 8:x}'
    rt.run([ctx.crafted, data, os.fsdecode(exe), build_id, f'{size:x}', os.fsdecode(COMM),
            os.fsdecode(COMM2), os.fsdecode(CMDLINE), f'{KADDR:x}', stack_a, stack_b])
    want = {'comms': [COMM, COMM2], 'roots': [COMM], 'also': [], 'exe': exe, 'plain': plain, 'sym': SYM, 'unnamed': 0x10, 'ksym': KSYM,
            'cmdline': CMDLINE, 'src': SRC, 'samples': 5,
            # 3 samples of a header, a kernel frame and 3 user frames; 2 of a header and
            # 2 frames; a blank line after each, and the empty string after the last
            'script_lines': 3 * 6 + 2 * 4 + 1}
    return data, want, kallsyms


def case_written(ctx):
    data, want, kallsyms = written_profile(ctx)
    fails = check_outputs(ctx, data, want, [], kallsyms)
    # dump alone shows the header's host
    text = ctx.sf(['dump', '-i', data]).stdout.decode('utf-8', 'replace')
    expect_in('dump', '# host ' + escape(HOST) + ', kernel 6.1\\xff,', text, fails)
    raise_fails(fails)
    must_fail(ctx, data, dict(want, sym=b'hot\x1b[2J'), kallsyms, 'another symbol')
    must_fail(ctx, data, dict(want, script_lines=want['script_lines'] + 1), kallsyms,
              'one script line more')


def case_recorded(ctx):
    rt.check_preconditions()
    exe, plain, _ = build_hostile(ctx, lambda src, out: ctx.compile(src, out, extra=['-g']))
    data = ctx.path('recorded.data')
    p = ctx.record(['--', os.fsdecode(exe), '2'], data, timeout=120)
    if p.returncode != 0:
        raise Failure(f'sfprof record exited with {p.returncode}')
    # the kernel keeps 15 bytes of a comm
    # before its prctl() the process has the name exec gave it (its file's), and before
    # the exec, sfprof's child's
    want = {'comms': [COMM[:15]], 'roots': [], 'also': [BASE[:15], b'sfprof'], 'exe': exe,
            'plain': plain, 'sym': SYM, 'unnamed': None, 'ksym': None,
            'cmdline': b'', 'src': SRC, 'samples': None, 'script_lines': None}
    # the recorded command line is the command: the hostile path, then its argument
    want['cmdline'] = exe + b' 2'
    fails = check_outputs(ctx, data, want, [])
    raise_fails(fails)
    must_fail(ctx, data, dict(want, comms=[COMM]), None, 'the comm uncut')


def case_files(ctx):
    data, _, kallsyms = written_profile(ctx)
    fails = []
    old = os.umask(0o022)
    try:
        for fmt in ('markup', 'collapsed', 'pprof', 'svg'):
            out = ctx.path(f'new.{fmt}')
            ctx.sf(['export', '-i', data, '-f', fmt, '-o', out, '--kallsyms', kallsyms])
            mode = stat.S_IMODE(os.stat(out).st_mode)
            expect(mode == 0o600, fails, f'{fmt}: a new export is {mode:o}, want 600')
            # an earlier file, readable by all, is replaced by an owner-only one
            with open(out, 'w') as f:
                f.write('earlier\n')
            os.chmod(out, 0o644)
            ctx.sf(['export', '-i', data, '-f', fmt, '-o', out, '--kallsyms', kallsyms])
            mode = stat.S_IMODE(os.stat(out).st_mode)
            expect(mode == 0o600 and os.path.getsize(out) > 100, fails,
                   f'{fmt}: the export over an earlier 644 file is {mode:o}, want 600')
            # symlinks are refused, their targets left alone
            target = ctx.path(f'target.{fmt}')
            with open(target, 'w') as f:
                f.write('the target\n')
            os.chmod(target, 0o644)
            for name, dest in (('link', target), ('dangling', ctx.path(f'nothing.{fmt}')),
                               ('devnull', '/dev/null')):
                link = ctx.path(f'{name}.{fmt}')
                os.symlink(dest, link)
                p = ctx.sf(['export', '-i', data, '-f', fmt, '-o', link, '--kallsyms',
                                kallsyms], check=False)
                err = p.stderr.decode('utf-8', 'replace')
                expect(p.returncode == 1 and 'symbolic link' in err, fails,
                       f'{fmt}: -o {name} symlink: exit {p.returncode}, {err.strip()!r}')
                expect(os.path.islink(link) and os.readlink(link) == dest, fails,
                       f'{fmt}: the {name} symlink was changed')
            with open(target) as f:
                expect(f.read() == 'the target\n', fails, f'{fmt}: a symlink target changed')
            expect(stat.S_IMODE(os.stat(target).st_mode) == 0o644, fails,
                   f'{fmt}: a symlink target changed mode')
            expect(not os.path.exists(ctx.path(f'nothing.{fmt}')), fails,
                   f'{fmt}: a dangling symlink target was created')
            # a device is written in place, stdout as before
            p = ctx.sf(['export', '-i', data, '-f', fmt, '-o', '/dev/null', '--kallsyms',
                            kallsyms], check=False)
            expect(p.returncode == 0 and stat.S_ISCHR(os.stat('/dev/null').st_mode), fails,
                   f'{fmt}: -o /dev/null: exit {p.returncode}')
            if fmt != 'pprof':
                p = ctx.sf(['export', '-i', data, '-f', fmt, '-o', '-', '--kallsyms',
                                kallsyms])
                expect(len(p.stdout) > 100, fails, f'{fmt}: -o - wrote nothing to stdout')
        p = ctx.sf(['export', '-i', data, '-f', 'svg', '-o', ctx.work], check=False)
        expect(p.returncode == 1, fails, f'-o DIRECTORY: exit {p.returncode}')
    finally:
        os.umask(old)
    left = [n for n in os.listdir(ctx.work) if '.tmp.' in n]
    expect(not left, fails, f'temporary files left behind: {left}')
    raise_fails(fails)


CASES = {'written': case_written, 'recorded': case_recorded, 'files': case_files}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--crafted', required=True, help='sfprof-crafted-profile')
    ap.add_argument('--progs', required=True, help='tests/progs')
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', required=True, choices=sorted(CASES))
    args = ap.parse_args()
    sys.stdout.reconfigure(errors='backslashreplace')
    for tool in ('gcc', 'objcopy', 'readelf', 'nm'):
        if not shutil.which(tool):
            log(f'SKIP: {tool} not found')
            return SKIP
    ctx = Ctx(args)
    shutil.rmtree(ctx.work, ignore_errors=True)
    os.makedirs(ctx.work)
    t0 = time.monotonic()
    try:
        CASES[args.case](ctx)
    except (Failure, subprocess.TimeoutExpired, subprocess.CalledProcessError) as e:
        log(f'FAIL: {e}')
        return 1
    log(f'PASS ({time.monotonic() - t0:.1f} s)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
