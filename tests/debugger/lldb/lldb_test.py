#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The LLDB command `sframe` (debugger/sfunwind_lldb.py) against real lldb-16.

tests/debugger/progs/dbgchain.c (+ libdbgcb.so) is compiled at test time with
`-Wa,--gsframe -fomit-frame-pointer` into WORKDIR, in four copies that differ
only in their unwind information (the first three are one link, so the same
code at the same addresses):

  eh/    .eh_frame and .sframe: lldb's own `bt` is right here (the oracle)
  sf/    SFrame-only (.eh_frame and .eh_frame_hdr removed)
  st/    SFrame-only and stripped (symbols and debug info removed too)
  none/  compiled without .sframe and without unwind tables (the negative
         for `sframe bt`; objcopy cannot take .sframe out of a linked file)

Cases (--case):

  bt    lldb-16 in batch (-b -s FILE) launches each mode of dbgchain
        (leaf, lib, vla, signal, thread) under each copy: one session for
        eh/, without the plugin, and one for the others (the copies of one
        link share a build ID, which libsfunwind's module cache takes as one
        file, so eh/ must not lend its .eh_frame to the SFrame-only ones).
        On x86-64, lldb-16's own `bt` also unwinds sf/, from its
        instruction profiler and the symbol table (logged, not asserted). `sframe bt -v`
        (`sframe bt -v all` for the thread mode) must give the chain the
        source fixes by construction, frame by frame: the program's frames
        named by nm of the unstripped copy (and, unstripped, by lldb's own
        symbols in the output), at the same module-relative addresses as
        lldb's `bt` on eh/, every caller of a program frame found through
        .sframe, libc's frames through rows from .eh_frame (the signal frame
        through __restore_rt's). Negative checks: lldb's own `bt` on st/
        does not give the chain, nor does `sframe bt` on none/.
  core  `prog abort` dumps core (RLIMIT_CORE unlimited, the kernel's
        core_pattern when it writes a file in the working directory, else
        gdb's gcore); `target create PROG --core CORE` and `sframe bt` must
        give the chain, on sf/ and st/, and not lldb's `bt` on st/.
  info  `sframe info ADDR`: in the SFrame-only program (.sframe, each row of
        two functions as readelf --sframe prints it, the function's bounds
        as nm -S gives them), in libc (rows from .eh_frame, as readelf
        --debug-dump=frames-interp prints them), in the vDSO (rows from its
        .eh_frame, read from memory), unmapped (none); bad arguments and no
        process are errors.

Exit status 0 pass, 1 fail, 77 skip (no lldb-16 with Python, no gas --gsframe).
"""

import argparse
import glob
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import time

SKIP = 77
PROGRAM_MODULES = ('prog', 'libdbgcb.so')
LIBC = '<libc>'     # one frame in libc.so.6: the signal trampoline

# The chains dbgchain.c fixes, innermost program frame first (the frames
# before it are libc's raise/abort, the frame after it is libc's).
CHAINS = {
    'leaf': ['leaf6', 'level4', 'level3', 'level2', 'level1', 'run_leaf', 'main'],
    'lib': ['cb_leaf', 'lib_callback', 'dbgcb_call', 'run_lib', 'main'],
    'vla': ['vla_leaf', 'vla_frame', 'run_vla', 'main'],
    'signal': ['handler_leaf', 'on_signal', LIBC, 'spin_until', 'run_signal', 'main'],
    'abort': ['leaf_abort', 'abort_mid', 'run_abort', 'main'],
}
# thread mode: the thread that raised SIGTRAP, and main's thread (in pthread_join,
# or still in pthread_create: only its program frames are fixed)
THREAD_CHAINS = {'raised': ['thread_leaf', 'thread_mid', 'thread_start'],
                 'main': ['run_thread', 'main']}
MODES = [('leaf', []), ('lib', []), ('vla', ['1000']), ('signal', []), ('thread', [])]


class Failure(Exception):
    pass


def log(msg=''):
    print(msg, flush=True)


def run(cmd, cwd=None, timeout=120, check=True):
    log('$ ' + ' '.join(shlex.quote(c) for c in cmd))
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       stdin=subprocess.DEVNULL, text=True, errors='replace', timeout=timeout)
    if check and p.returncode != 0:
        print(p.stdout, flush=True)
        raise Failure('%s exited with %d' % (os.path.basename(cmd[0]), p.returncode))
    return p


_sessions = set()   # process groups of running debugger sessions


def _terminate(signum, _frame):
    """meson's timeout (SIGTERM) or ^C: the sessions are in their own process
    groups, out of meson's reach, so end them here."""
    for pgid in list(_sessions):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    sys.exit(128 + signum)


def run_group(cmd, cwd, timeout, out_path):
    """Run @cmd in its own session with its output going to @out_path as it
    comes, and kill the whole session after it (the debuggee and lldb-server
    included) however it ended. @return (exit status, output)."""
    log('$ ' + ' '.join(shlex.quote(c) for c in cmd))
    with open(out_path, 'w') as out_file:
        p = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out_file,
                             stderr=subprocess.STDOUT, start_new_session=True)
    _sessions.add(p.pid)
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        where = stacks(p.pid)
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        with open(out_path, errors='replace') as f:
            print(f.read(), flush=True)
        print('--- where %s was stuck ---\n%s' % (os.path.basename(cmd[0]), where), flush=True)
        raise Failure('%s did not finish in %d s' % (os.path.basename(cmd[0]), timeout))
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _sessions.discard(p.pid)
    with open(out_path, errors='replace') as f:
        return p.returncode, f.read()


def stacks(pid):
    """The threads' stacks of a stuck @pid, from gdb when there is one."""
    gdb = shutil.which('gdb')
    if not gdb:
        return '(no gdb to say)'
    try:
        p = subprocess.run([gdb, '-nx', '-batch', '-p', str(pid), '-ex',
                            'thread apply all bt 30'], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors='replace', timeout=30)
    except subprocess.TimeoutExpired:
        return '(gdb did not attach in time)'
    return '\n'.join(x for x in p.stdout.splitlines() if x.startswith(('#', 'Thread')))


# --- building the copies ---

def build(progs, workdir, cflags, pie, kinds):
    """Compile dbgchain and libdbgcb.so into WORKDIR/eh, and derive the other copies."""
    pie_flags = ['-fPIE', '-pie'] if pie else ['-fno-PIE', '-no-pie']
    base = ['gcc', '-g', '-fomit-frame-pointer', '-Wa,--gsframe'] + cflags.split()
    eh = os.path.join(workdir, 'eh')
    os.makedirs(eh, exist_ok=True)
    run(base + ['-shared', '-fPIC', os.path.join(progs, 'libdbgcb.c'), '-o',
                os.path.join(eh, 'libdbgcb.so')])
    run(base + pie_flags + ['-I', progs, os.path.join(progs, 'dbgchain.c'), '-L', eh, '-ldbgcb',
                            '-Wl,-rpath,$ORIGIN', '-lpthread', '-o', os.path.join(eh, 'prog')])
    for kind in kinds:
        if kind in ('eh', 'none'):
            continue
        d = os.path.join(workdir, kind)
        os.makedirs(d, exist_ok=True)
        for f in PROGRAM_MODULES:
            out = os.path.join(d, f)
            run(['objcopy', '--remove-section=.eh_frame', '--remove-section=.eh_frame_hdr',
                 os.path.join(eh, f), out])
            if kind == 'st':
                run(['strip', out])
    if 'none' in kinds:
        # objcopy cannot take .sframe out of a linked file without breaking
        # its segments: the same sources assembled without it instead
        d = os.path.join(workdir, 'none')
        os.makedirs(d, exist_ok=True)
        plain = ['gcc', '-g', '-fomit-frame-pointer', '-fno-asynchronous-unwind-tables',
                 '-fno-unwind-tables'] + cflags.split()
        run(plain + ['-shared', '-fPIC', os.path.join(progs, 'libdbgcb.c'), '-o',
                     os.path.join(d, 'libdbgcb.so')])
        run(plain + pie_flags + ['-I', progs, os.path.join(progs, 'dbgchain.c'), '-L', d,
                                 '-ldbgcb', '-Wl,-rpath,$ORIGIN', '-lpthread', '-o',
                                 os.path.join(d, 'prog')])
    for kind in kinds:
        for f in PROGRAM_MODULES:
            check_sections(os.path.join(workdir, kind, f), kind)


def check_sections(path, kind):
    out = run(['readelf', '-SW', path]).stdout
    have = set(re.findall(r'\]\s+(\.\S+)', out))
    want = {'eh': {'.eh_frame', '.sframe'}, 'sf': {'.sframe'}, 'st': {'.sframe'},
            'none': set()}[kind]
    gone = {'eh': set(), 'sf': {'.eh_frame', '.eh_frame_hdr'},
            'st': {'.eh_frame', '.eh_frame_hdr', '.symtab', '.debug_info'},
            'none': {'.sframe'}}[kind]
    if not want <= have or gone & have:
        raise Failure('%s: sections %s, want %s and none of %s' % (path, sorted(have),
                                                                   sorted(want), sorted(gone)))


class Elf:
    """nm and readelf -l of one unstripped module: names for addresses."""

    def __init__(self, path):
        out = run(['nm', '-S', '--defined-only', path]).stdout
        self.funcs = []
        for line in out.splitlines():
            f = line.split()
            if len(f) == 4 and f[2] in 'tTwW':
                self.funcs.append((int(f[0], 16), int(f[1], 16), f[3]))
        out = run(['readelf', '-lW', path]).stdout
        self.loads = []
        for m in re.finditer(r'^\s*LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+'
                             r'(0x[0-9a-f]+)', out, re.M):
            self.loads.append(tuple(int(x, 16) for x in m.groups()))

    def name(self, vaddr):
        for start, size, name in self.funcs:
            if start <= vaddr < start + size:
                return name
        return None

    def symbol(self, name):
        for start, size, n in self.funcs:
            if n == name:
                return start, size
        raise Failure('nm has no %s' % name)

    def file_offset(self, vaddr):
        for off, va, filesz in self.loads:
            if va <= vaddr < va + filesz:
                return vaddr - va + off
        return None


# --- parsing lldb's output ---

def split_session(out):
    """[(command, [output lines])] in the order lldb echoed the commands."""
    parts = []
    for line in out.splitlines():
        if line.startswith('(lldb) '):
            parts.append((line[7:].strip(), []))
        elif parts:
            parts[-1][1].append(line)
    return parts


FRAME_RE = re.compile(r'^\s*(\*)?\s*frame #(\d+): (0x[0-9a-fA-F]+)(?: (.*))?$')
THREAD_RE = re.compile(r'^([* ]) thread #(\d+)(.*)$')


def parse_backtrace(lines):
    """{thread number: {'selected', 'header', 'frames', 'stop'}} of `bt` or `sframe bt`."""
    threads, cur = {}, None
    for line in lines:
        m = THREAD_RE.match(line)
        if m:
            cur = dict(selected=m.group(1) == '*', header=line.strip(), frames=[], stop=None)
            threads[int(m.group(2))] = cur
            continue
        if cur is None:
            continue
        m = re.match(r'^\s*sframe: stopped after frame #(\d+): (.*)$', line)
        if m:
            cur['stop'] = m.group(2)
            continue
        m = FRAME_RE.match(line)
        if not m:
            continue
        where = (m.group(4) or '').strip()
        source = None
        s = re.search(r'\s+\[(regs|sframe|eh_frame|fp)\]$', where)
        if s:
            source, where = s.group(1), where[:s.start()]
        frame = dict(index=int(m.group(2)), pc=int(m.group(3), 16), source=source,
                     module=None, name=None, offset=None, text=where)
        if '`' in where:
            frame['module'], rest = where.split('`', 1)
            frame['name'] = re.match(r'[^\s(]*', rest).group(0)
        elif re.match(r'^\S+\+0x[0-9a-f]+$', where):
            mod, off = where.rsplit('+0x', 1)
            frame['module'], frame['offset'] = mod, int(off, 16)
        elif where:
            frame['module'] = where.split()[0]
        if frame['index'] != len(cur['frames']):
            raise Failure('frame numbers out of order: %r' % line)
        cur['frames'].append(frame)
    return threads


def parse_slides(lines):
    """{module basename: load slide} from `image list -o -f`."""
    slides = {}
    for line in lines:
        m = re.match(r'^\[\s*\d+\]\s+(0x[0-9a-f]+)\s+(\S+)', line)
        if m:
            slides[os.path.basename(m.group(2))] = int(m.group(1), 16)
    return slides


# --- the chain checks ---

class Checker:
    def __init__(self, elves):
        self.elves = elves  # {module: Elf} of the unstripped copies

    def describe(self, frames):
        return '\n'.join('    #%d 0x%x %s%s' % (f['index'], f['pc'], f['text'],
                                                 ' [%s]' % f['source'] if f['source'] else '')
                         for f in frames)

    def check(self, frames, chain, slides, sources):
        """Raise Failure unless @frames hold @chain (see CHAINS). With @sources,
        also the table that found each frame (`sframe bt -v`)."""
        first = next((i for i, f in enumerate(frames) if f['module'] in PROGRAM_MODULES), None)
        if first is None:
            raise Failure('no frame in the program')
        if first == 0:
            raise Failure('frame 0 is in the program, want libc (raise, abort, futex)')
        for f in frames[:first]:
            if f['module'] != 'libc.so.6':
                raise Failure('frame #%d before the program is in %s, want libc.so.6' %
                              (f['index'], f['module']))
        if len(frames) < first + len(chain) + 1:
            raise Failure('%d frames, the chain needs %d' % (len(frames),
                                                             first + len(chain) + 1))
        precise = False
        for j, want in enumerate(chain):
            f = frames[first + j]
            if want == LIBC:
                if f['module'] != 'libc.so.6':
                    raise Failure('frame #%d in %s, want the signal frame in libc.so.6' %
                                  (f['index'], f['module']))
                precise = True
                continue
            if f['module'] not in PROGRAM_MODULES:
                raise Failure('frame #%d in %s, want %s' % (f['index'], f['module'], want))
            elf = self.elves[f['module']]
            vaddr = f['pc'] - slides[f['module']]
            lookup = vaddr if precise else vaddr - 1
            got = elf.name(lookup)
            if got != want:
                raise Failure('frame #%d at 0x%x is in %s (nm), want %s' % (f['index'],
                                                                             f['pc'], got, want))
            # what the output says must be the same function, or its file offset
            if f['name'] is not None and f['name'] != want:
                raise Failure('frame #%d printed as %s, want %s' % (f['index'], f['name'], want))
            if f['offset'] is not None and f['offset'] != elf.file_offset(vaddr):
                raise Failure('frame #%d printed at file offset 0x%x, want 0x%x' %
                              (f['index'], f['offset'], elf.file_offset(vaddr)))
            if sources:
                prev = frames[first + j - 1]
                want_src = 'sframe' if prev['module'] in PROGRAM_MODULES else 'eh_frame'
                if f['source'] != want_src:
                    raise Failure('frame #%d found through %s, want %s (the caller of a %s '
                                  'frame)' % (f['index'], f['source'], want_src,
                                              prev['module']))
            precise = False
        after = frames[first + len(chain)]
        if after['module'] != 'libc.so.6':
            raise Failure('frame #%d after %s is in %s, want libc.so.6' %
                          (after['index'], chain[-1], after['module']))
        if sources and after['source'] != 'sframe':
            raise Failure('frame #%d found through %s, want sframe' % (after['index'],
                                                                      after['source']))

    def program_frames(self, frames, slides):
        """[(module, address in the module)] of the program's frames. A frame
        that a signal interrupted (a libc frame, the trampoline, between it
        and a program frame) stopped at any instruction of its loop: its
        function stands for its address."""
        out = []
        for i, f in enumerate(frames):
            if f['module'] not in PROGRAM_MODULES:
                continue
            vaddr = f['pc'] - slides[f['module']]
            if (i >= 2 and frames[i - 1]['module'] == 'libc.so.6' and
                    frames[i - 2]['module'] in PROGRAM_MODULES):
                out.append((f['module'], self.elves[f['module']].name(vaddr)))
            else:
                out.append((f['module'], hex(vaddr)))
        return out


def thread_chains(threads, mode):
    """[(thread number, chain)] the output of @mode must hold."""
    if mode != 'thread':
        if len(threads) != 1:
            raise Failure('%d threads in the output, want 1' % len(threads))
        return [(n, CHAINS[mode]) for n in threads]
    raised = [n for n, t in threads.items() if 'SIGTRAP' in t['header']]
    others = [n for n in threads if n not in raised]
    if len(raised) != 1 or len(others) != 1:
        raise Failure('want one thread stopped by SIGTRAP and one other, got %r' %
                      [t['header'] for t in threads.values()])
    return [(raised[0], THREAD_CHAINS['raised']), (others[0], THREAD_CHAINS['main'])]


def in_clone3_gap(thread):
    """Main's thread stopped in __clone3 between the syscall and its ret:
    glibc ends the FDE before the syscall (the child's unwind info would be
    wrong), so no table covers the parent's pc either and the walk has to
    stop there, saying so. Where main's thread is when the other thread
    raises SIGTRAP is a race."""
    frames = thread['frames']
    return (len(frames) == 1 and (frames[0]['name'] or '').startswith('__clone3') and
            thread['stop'] == 'no unwind info')


def check_output(checker, threads, mode, slides, sources, label):
    """Check every thread of one backtrace; raise Failure naming what failed."""
    chains = thread_chains(threads, mode)
    for n, chain in chains:
        frames = threads[n]['frames']
        if mode == 'thread' and chain is THREAD_CHAINS['main'] and in_clone3_gap(threads[n]):
            log('info: %s, thread #%d: stopped in __clone3 after its syscall, where glibc has '
                'no CFI: no unwind info, as said' % (label, n))
            continue
        try:
            checker.check(frames, chain, slides, sources)
        except Failure as e:
            raise Failure('%s, thread #%d: %s\n%s' % (label, n, e, checker.describe(frames)))


def fails(fn):
    try:
        fn()
    except Failure as e:
        return str(e)
    return None


# --- lldb ---

# The session's last command leaves lldb at once. lldb-16's own teardown
# (SBDebugger::Destroy at `quit`) now and then aborts on a corrupted heap and
# then hangs printing its backtrace (seen in CI under load, with and without
# the plugin: upstream reports of exit-time crashes); nothing the test checks
# happens there, so the session ends before it, with lldb's output flushed.
SESSION_END = 'script import ctypes, os; ctypes.CDLL(None).fflush(None); os._exit(0)'


def lldb_session(args, commands, cwd, name, timeout=60, plugin=True):
    """Run @commands in one lldb-16 batch session; @return [(command, lines)].

    The copies of one link share a build ID, which libsfunwind's module cache
    takes as the same file: eh/ (which keeps .eh_frame) never shares a
    session with the plugin and the SFrame-only copies, so that what those
    are unwound with is their own tables."""
    path = os.path.join(cwd, name + '.lldb')
    head = ['settings set auto-confirm true']
    if plugin:
        head.append('command script import ' + args.plugin)
    with open(path, 'w') as f:
        f.write('\n'.join(head + commands + [SESSION_END]) + '\n')
    t0 = time.monotonic()
    # -O: a failing command must not end the sourced file (the setting has
    # to be in force before the file is sourced)
    rc, out = run_group([args.lldb, '-x', '-b', '-O',
                         'settings set interpreter.stop-command-source-on-error false',
                         '-s', path], cwd, timeout, os.path.join(cwd, name + '.out'))
    log('  (%s: %.1f s, output in %s.out)' % (name, time.monotonic() - t0, name))
    parts = split_session(out)
    if not parts or parts[-1][0] != SESSION_END or rc != 0:
        print(out, flush=True)
        raise Failure('lldb (exit status %d) did not run the session to its end' % rc)
    for cmd, lines in parts:
        if cmd.startswith('command script import') and any('error' in x for x in lines):
            raise Failure('the plugin did not load:\n' + '\n'.join(lines))
    return parts


def outputs_of(parts, prefix):
    return [lines for cmd, lines in parts if cmd.startswith(prefix)]


def need_tools(args):
    lldb = shutil.which(args.lldb)
    if not lldb:
        log('SKIP: needs %s (Debian package lldb-16)' % args.lldb)
        sys.exit(SKIP)
    args.lldb = lldb
    p = run([lldb, '-x', '-b', '-o', 'script import lldb; print("py", lldb.SBDebugger)'],
            timeout=60, check=False)
    if 'py' not in p.stdout or p.returncode != 0:
        log('SKIP: %s has no Python scripting (needs python3-lldb-16)' % lldb)
        sys.exit(SKIP)
    for tool in ('gcc', 'objcopy', 'strip', 'nm', 'readelf'):
        if not shutil.which(tool):
            log('SKIP: needs %s' % tool)
            sys.exit(SKIP)
    probe = os.path.join(args.workdir, 'probe.c')
    with open(probe, 'w') as f:
        f.write('int main(void) { return 0; }\n')
    p = run(['gcc', '-c', '-Wa,--gsframe', probe, '-o', probe + '.o'], check=False)
    if p.returncode != 0:
        log('SKIP: the assembler does not know --gsframe (needs binutils >= 2.40)')
        sys.exit(SKIP)


# --- cases ---

def case_bt(args):
    kinds = ['eh', 'sf', 'st', 'none']
    build(args.progs, args.workdir, args.cflags, args.pie, kinds)
    elves = {m: Elf(os.path.join(args.workdir, 'eh', m)) for m in PROGRAM_MODULES}
    checker = Checker(elves)

    sessions = {'oracle': [], 'bt': []}
    for kind in kinds:
        commands = sessions['oracle' if kind == 'eh' else 'bt']
        commands.append('target create %s' % os.path.join(args.workdir, kind, 'prog'))
        for mode, extra in (MODES if kind != 'none' else MODES[:1]):
            every = ' all' if mode == 'thread' else ''
            commands += ['process launch -- %s' % ' '.join([mode] + extra),
                         'image list -o -f']
            if kind != 'eh':
                commands.append('sframe bt -v' + every)
            commands += ['bt' + every, 'process kill']
    parts = lldb_session(args, sessions['oracle'], args.workdir, 'oracle', plugin=False)
    parts += lldb_session(args, sessions['bt'], args.workdir, 'bt', timeout=80)

    # walk the session in the order the commands were given
    results = {}
    kind = cur = None
    for cmd, lines in parts:
        if cmd.startswith('target create'):
            kind = os.path.basename(os.path.dirname(cmd.split()[-1]))
        elif cmd.startswith('process launch'):
            mode = cmd.split()[3]
            results[(kind, mode)] = cur = {'launch': lines}
        elif cmd.startswith('image list'):
            cur['slides'] = parse_slides(lines)
        elif cmd.startswith('sframe bt'):
            cur['sframe'] = parse_backtrace(lines)
            cur['sframe_text'] = lines
        elif cmd.startswith('bt'):
            cur['bt'] = parse_backtrace(lines)

    failures = []

    def expect(cond_fn, what):
        err = fails(cond_fn)
        if err:
            failures.append('%s: %s' % (what, err))
        else:
            log('ok: ' + what)

    for kind in kinds:
        for mode, _ in (MODES if kind != 'none' else MODES[:1]):
            r = results.get((kind, mode))
            if not r or 'bt' not in r or 'slides' not in r:
                failures.append('%s %s: the session has no output for it' % (kind, mode))
                continue
            if not any('stop reason = signal SIGTRAP' in x for x in r['launch']):
                failures.append('%s %s: the process did not stop on SIGTRAP:\n%s' %
                                (kind, mode, '\n'.join(r['launch'])))
                continue
            slides = r['slides']
            if kind == 'eh':
                expect(lambda: check_output(checker, r['bt'], mode, slides, False, 'bt'),
                       'eh %s: lldb bt (the oracle) gives the chain' % mode)
                continue
            if kind == 'none':
                err = fails(lambda: check_output(checker, r['sframe'], mode, slides, False,
                                                 'sframe bt'))
                if err:
                    log('ok: none %s: sframe bt without .sframe does not give the chain (%s)' %
                        (mode, err.splitlines()[0]))
                else:
                    failures.append('none %s: sframe bt gives the chain without .sframe: the '
                                    'check cannot fail' % mode)
                continue
            if 'sframe' not in r:
                failures.append('%s %s: no sframe bt output' % (kind, mode))
                continue
            expect(lambda: check_output(checker, r['sframe'], mode, slides, True, 'sframe bt'),
                   '%s %s: sframe bt gives the chain' % (kind, mode))
            oracle = results.get(('eh', mode))

            def same_addresses():
                # main's thread in the thread mode stops wherever the race
                # leaves it: only the raising thread's frames are fixed
                for n, chain in thread_chains(r['sframe'], mode):
                    if chain is THREAD_CHAINS['main']:
                        continue
                    got = checker.program_frames(r['sframe'][n]['frames'], slides)
                    ref = oracle['bt'].get(n)
                    if ref is None:
                        raise Failure('lldb bt on eh/ has no thread #%d' % n)
                    want = checker.program_frames(ref['frames'], oracle['slides'])
                    if got != want:
                        raise Failure('thread #%d: program frames %s, lldb bt on eh/ %s' %
                                      (n, got, want))
            if oracle and 'bt' in oracle:
                expect(same_addresses, '%s %s: the program frames are lldb bt\'s on eh/' %
                       (kind, mode))
            native = fails(lambda: check_output(checker, r['bt'], mode, slides, False, 'bt'))
            if kind == 'st':
                if native:
                    log('ok: st %s: lldb\'s own bt does not give the chain (%s)' %
                        (mode, native.splitlines()[0]))
                else:
                    failures.append('st %s: lldb\'s own bt gives the chain on the stripped '
                                    'SFrame-only program: the check proves nothing' % mode)
            else:
                # lldb-16's x86-64 instruction profiler finds these frames
                # when the symbol table gives it function bounds
                log('info: sf %s: lldb\'s own bt %s' %
                    (mode, 'gives the chain too' if not native else
                     'does not give the chain (%s)' % native.splitlines()[0]))
    return failures


def core_file(workdir, exe, gdb):
    """Run `exe abort` in @workdir so that it dumps core; @return the core's path."""
    with open('/proc/sys/kernel/core_pattern') as f:
        pattern = f.read().strip()
    with open('/proc/sys/kernel/core_uses_pid') as f:
        uses_pid = f.read().strip() == '1'
    if pattern and not pattern.startswith('|') and '/' not in pattern:
        for old in glob.glob(os.path.join(workdir, 'core*')):
            os.unlink(old)
        p = subprocess.Popen([exe, 'abort'], cwd=workdir, stdin=subprocess.DEVNULL,
                             preexec_fn=lambda: resource.setrlimit(
                                 resource.RLIMIT_CORE,
                                 (resource.RLIM_INFINITY, resource.RLIM_INFINITY)))
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise Failure('%s abort did not end' % exe)
        if p.returncode != -signal.SIGABRT:
            raise Failure('%s abort exited with %d, want SIGABRT' % (exe, p.returncode))
        name = pattern
        for spec, val in (('%%', '\0'), ('%p', str(p.pid)),
                          ('%e', os.path.basename(exe)[:15]), ('%s', str(int(signal.SIGABRT)))):
            name = name.replace(spec, val)
        name = re.sub(r'%.', '*', name).replace('\0', '%')
        if uses_pid and '%p' not in pattern:
            name += '.%d' % p.pid
        found = glob.glob(os.path.join(workdir, name))
        if len(found) == 1:
            log('  core by the kernel (core_pattern %r): %s' % (pattern, found[0]))
            return found[0]
        log('  the kernel wrote no core as %r in %s: trying gdb\'s gcore' % (name, workdir))
    if not gdb:
        log('SKIP: no core: core_pattern %r does not write into the working directory, and '
            'there is no gdb for gcore' % pattern)
        sys.exit(SKIP)
    core = os.path.join(workdir, 'gcore')
    run_group([gdb, '-nx', '-batch', '-ex', 'run', '-ex', 'gcore ' + core, '-ex', 'kill',
               '--args', exe, 'abort'], workdir, 60, core + '.log')
    if not os.path.exists(core):
        raise Failure('gdb wrote no core')
    return core


def case_core(args):
    kinds = ['eh', 'sf', 'st']
    build(args.progs, args.workdir, args.cflags, args.pie, kinds)
    elves = {m: Elf(os.path.join(args.workdir, 'eh', m)) for m in PROGRAM_MODULES}
    checker = Checker(elves)
    cores = {}
    for kind in kinds:
        d = os.path.join(args.workdir, kind)
        cores[kind] = core_file(d, os.path.join(d, 'prog'), shutil.which('gdb'))
    sessions = {'oracle': [], 'core': []}
    for kind in kinds:
        sessions['oracle' if kind == 'eh' else 'core'] += [
            'target create %s --core %s' % (os.path.join(args.workdir, kind, 'prog'), cores[kind]),
            'image list -o -f', 'bt'] + (['sframe bt -v', 'sframe info $pc'] if kind != 'eh'
                                         else [])
    parts = lldb_session(args, sessions['oracle'], args.workdir, 'oracle', plugin=False)
    parts += lldb_session(args, sessions['core'], args.workdir, 'core')
    results, kind = {}, None
    for cmd, lines in parts:
        if cmd.startswith('target create'):
            kind = os.path.basename(os.path.dirname(cmd.split()[2]))
            results[kind] = {'create': lines}
        elif cmd.startswith('image list'):
            results[kind]['slides'] = parse_slides(lines)
        elif cmd.startswith('sframe bt'):
            results[kind]['sframe'] = parse_backtrace(lines)
        elif cmd.startswith('bt'):
            results[kind]['bt'] = parse_backtrace(lines)
        elif cmd.startswith('sframe info'):
            results[kind]['info'] = lines
    failures = []
    for kind in kinds:
        r = results.get(kind, {})
        if not any('was loaded' in x for x in r.get('create', [])) or 'bt' not in r:
            failures.append('%s: lldb did not load the core:\n%s' %
                            (kind, '\n'.join(r.get('create', []))))
            continue
        slides = r['slides']
        tests = [('bt', False)] if kind == 'eh' else [('sframe', True)]
        for key, sources in tests:
            err = fails(lambda: check_output(checker, r[key], 'abort', slides, sources, key))
            what = '%s core: %s gives the chain' % (kind, 'lldb bt (the oracle)' if key == 'bt'
                                                   else 'sframe bt')
            if err:
                failures.append('%s: %s' % (what, err))
            else:
                log('ok: ' + what)
        if kind != 'eh':
            got = [checker.program_frames(t['frames'], slides) for t in r['sframe'].values()]
            want = [checker.program_frames(t['frames'], results['eh']['slides'])
                    for t in results['eh']['bt'].values()]
            if got != want:
                failures.append('%s core: program frames %s, lldb bt on the eh/ core %s' %
                                (kind, got, want))
            else:
                log('ok: %s core: the program frames are lldb bt\'s on the eh/ core' % kind)
            info = '\n'.join(r.get('info', []))
            if 'table: rows from .eh_frame' not in info or 'libc.so.6' not in info:
                failures.append('%s core: sframe info $pc does not say rows from .eh_frame in '
                                'libc:\n%s' % (kind, info))
            else:
                log('ok: %s core: sframe info $pc: rows from .eh_frame in libc' % kind)
        if kind == 'st':
            native = fails(lambda: check_output(checker, r['bt'], 'abort', slides, False, 'bt'))
            if native:
                log('ok: st core: lldb\'s own bt does not give the chain (%s)' %
                    native.splitlines()[0])
            else:
                failures.append('st core: lldb\'s own bt gives the chain: the check proves '
                                'nothing')
    return failures


def readelf_eh_rows(lib, vaddr):
    """readelf --debug-dump=frames-interp: (fde start, end, [(loc, cfa, rbp, ra)]) covering @vaddr."""
    out = run(['readelf', '--debug-dump=frames-interp', '--debug-dump=no-follow-links',
               lib]).stdout
    fde = None
    for block in out.split('\n\n'):
        m = re.search(r'FDE cie=\S+ pc=([0-9a-f]+)\.\.([0-9a-f]+)', block)
        if not m:
            continue
        start, end = int(m.group(1), 16), int(m.group(2), 16)
        if not start <= vaddr < end:
            continue
        lines = block.splitlines()
        hdr = next(i for i, x in enumerate(lines) if x.strip().startswith('LOC'))
        cols = lines[hdr].split()
        rows = []
        for x in lines[hdr + 1:]:
            f = x.split()
            if len(f) != len(cols):
                continue
            row = dict(zip(cols, f))
            rows.append((int(row['LOC'], 16), row['CFA'], row.get('rbp', 'u'), row['ra']))
        fde = (start, end, rows)
    if fde is None:
        raise Failure('readelf has no FDE for 0x%x in %s' % (vaddr, lib))
    return fde


def parse_info(lines):
    text = '\n'.join(lines)
    info = {'text': text}
    m = re.search(r'^pc (0x[0-9a-f]+): (.*)$', text, re.M)
    if m:
        info['pc'], info['path'] = int(m.group(1), 16), m.group(2)
    m = re.search(r'^\s*table: (.*?)(?: \(.*\))?$', text, re.M)
    if m:
        info['table'] = m.group(1)
    m = re.search(r'^\s*function: (0x[0-9a-f]+)-(0x[0-9a-f]+)$', text, re.M)
    if m:
        info['function'] = (int(m.group(1), 16), int(m.group(2), 16))
    m = re.search(r'^\s*row at (0x[0-9a-f]+): CFA=(\S+) RA=(\S+) FP=(\S+)', text, re.M)
    if m:
        info['row'] = (int(m.group(1), 16), m.group(2), m.group(3), m.group(4))
    return info


def case_info(args):
    build(args.progs, args.workdir, args.cflags, args.pie, ['eh', 'sf'])
    prog = os.path.join(args.workdir, 'sf', 'prog')
    elf = Elf(os.path.join(args.workdir, 'eh', 'prog'))

    # readelf --sframe rows of two functions: leaf6 (sp-based) and vla_frame (fp-based)
    out = run(['readelf', '--sframe', prog]).stdout
    sframe = {}
    for block in re.split(r'\n\s*\n', out):
        m = re.search(r'func idx \[\d+\]: pc = (0x[0-9a-f]+), size = (\d+) bytes', block)
        if not m or 'STARTPC[m]' in block:
            continue
        start = int(m.group(1), 16)
        rows = re.findall(r'^\s*([0-9a-f]{8,})\s+(\S+)\s+(\S+)\s+(\S+)\s*$', block, re.M)
        sframe[start] = (int(m.group(2)), [(int(a, 16), c, fp, ra) for a, c, fp, ra in rows])
    queries = []    # (command, check(info, slides))
    for fn in ('leaf6', 'vla_frame'):
        start, size = elf.symbol(fn)
        if start not in sframe:
            raise Failure('readelf --sframe has no FDE at %s (0x%x)' % (fn, start))
        fde_size, rows = sframe[start]
        if fde_size != size:
            raise Failure('%s: nm size %d, .sframe FDE size %d' % (fn, size, fde_size))
        for addr, cfa, fp, ra in rows:
            queries.append(('sframe info %s+%d' % (fn, addr - start),
                            ('prog', fn, start, size, addr, cfa, fp, ra)))
    queries.append(('sframe info raise', None))

    # before the launch: no process yet, both subcommands must say so
    commands = ['target create ' + prog, 'sframe bt', 'sframe info 0x10',
                'process launch -- leaf', 'image list -o -f']
    commands += [q for q, _ in queries]
    commands += ['sframe info __vdso_clock_gettime', 'sframe info _start', 'sframe info 0x10', 'sframe bt bogus', 'sframe info',
                 'sframe info no_such_symbol_here', 'process kill']
    parts = lldb_session(args, commands, args.workdir, 'info')
    launch = next((i for i, (cmd, _) in enumerate(parts) if cmd.startswith('process launch')),
                  len(parts))
    outputs = dict(parts[launch:])
    failures = []

    def expect(ok, what, text=''):
        if ok:
            log('ok: ' + what)
        else:
            failures.append(what + ('\n' + text if text else ''))

    slides = parse_slides(outputs.get('image list -o -f', []))
    if 'prog' not in slides or 'libc.so.6' not in slides:
        raise Failure('image list -o -f names no prog or libc.so.6')
    for cmd, want in queries:
        info = parse_info(outputs.get(cmd, []))
        if want is None:
            continue
        _, fn, start, size, addr, cfa, fp, ra = want
        slide = slides['prog']
        # x86-64 SFrame keeps the RA at a fixed CFA-8: readelf prints it 'u'
        ra_want = 'c-8' if ra == 'u' else ra
        ok = (info.get('table') == '.sframe' and info.get('path') == prog and
              info.get('function') == (start + slide, start + size + slide) and
              info.get('row') == (addr + slide, cfa, ra_want, fp))
        expect(ok, '%s: .sframe, function 0x%x-0x%x, row CFA=%s RA=%s FP=%s (readelf --sframe)'
               % (cmd, start, start + size, cfa, ra_want, fp), info['text'])

    # libc: rows from .eh_frame, as readelf prints them
    info = parse_info(outputs.get('sframe info raise', []))
    libc = info.get('path')
    if not libc or 'libc.so.6' not in libc:
        failures.append('sframe info raise: not in libc.so.6:\n' + info['text'])
    else:
        vaddr = info['pc'] - slides['libc.so.6']
        start, end, rows = readelf_eh_rows(libc, vaddr)
        row = [r for r in rows if r[0] <= vaddr][-1]
        cfa = row[1].replace('rsp', 'sp').replace('rbp', 'fp')
        ok = (info.get('table') == 'rows from .eh_frame' and
              info.get('function') == (start + slides['libc.so.6'], end + slides['libc.so.6'])
              and info.get('row') is not None and info['row'][1] == cfa and
              info['row'][2] == row[3] and info['row'][3] == row[2])
        expect(ok, 'sframe info raise: rows from .eh_frame, FDE 0x%x-0x%x, CFA=%s RA=%s FP=%s '
               '(readelf --debug-dump=frames-interp)' % (start, end, cfa, row[3], row[2]),
               info['text'])

    # the vDSO exists only in memory: its image is read from there
    info = parse_info(outputs.get('sframe info __vdso_clock_gettime', []))
    expect(info.get('table') == 'rows from .eh_frame' and info.get('path') == '[vdso]' and
           info.get('function', (None,))[0] == info.get('pc'),
           'sframe info __vdso_clock_gettime: rows from .eh_frame in [vdso], from the symbol on',
           info['text'])
    info = parse_info(outputs.get('sframe info _start', []))
    expect(info.get('table') == 'none' and info.get('path') == prog,
           'sframe info _start: none (crt1.o has neither table here), in prog', info['text'])
    info = parse_info(outputs.get('sframe info 0x10', []))
    expect(info.get('table') == 'none' and info.get('path') == 'no mapping',
           'sframe info 0x10: none, no mapping', info['text'])

    errors = [(cmd, lines) for cmd, lines in parts
              if cmd in ('sframe bt bogus', 'sframe info', 'sframe info no_such_symbol_here')]
    errors += [(cmd + ' (no process)', lines) for cmd, lines in parts[:launch]
               if cmd.startswith('sframe')]
    for cmd, lines in errors:
        text = '\n'.join(lines)
        expect(text.startswith('error: sframe:'), '%s: an error' % cmd, text)
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--lldb', default='lldb-16')
    ap.add_argument('--plugin', required=True, help='build/debugger/sfunwind_lldb.py')
    ap.add_argument('--progs', required=True, help='tests/debugger/progs')
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', required=True, choices=['bt', 'core', 'info'])
    ap.add_argument('--cflags', default='-O2')
    ap.add_argument('--pie', action='store_true', default=True)
    ap.add_argument('--no-pie', dest='pie', action='store_false')
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)
    args.plugin = os.path.abspath(args.plugin)
    args.workdir = os.path.abspath(args.workdir)
    if os.path.isdir(args.workdir):
        shutil.rmtree(args.workdir)
    os.makedirs(args.workdir)
    need_tools(args)
    try:
        failures = {'bt': case_bt, 'core': case_core, 'info': case_info}[args.case](args)
    except (Failure, subprocess.TimeoutExpired) as e:
        failures = [str(e)]
    for f in failures:
        log('FAIL: ' + f)
    if failures:
        return 1
    log('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main())
