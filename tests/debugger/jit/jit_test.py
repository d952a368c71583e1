#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The GDB JIT-reader plugin (sfunwind-gdb-jit.so) against a real gdb.

One run covers one case (see CASES). It compiles tests/debugger/progs/
dbgchain.c and libdbgcb.c into WORKDIR three times from the same commands,
so that the code is at the same addresses in all three:

  sf/prog + lib_sf/  SFrame only: .eh_frame and .eh_frame_hdr removed
  eh/prog + lib_eh/  .eh_frame kept: plain gdb unwinds it right (the oracle)
  st/prog + lib_st/  the SFrame-only files stripped (stripped cases only)
  se/prog + lib_se/  the .eh_frame files stripped: the oracle for st (gdb
                     makes tail-call frames from DWARF, which st lacks)

and then, in one gdb session per program (`run MODE`, `bt`, `kill`, next
mode), checks for each mode of dbgchain (leaf, lib, vla, signal, thread,
deep, abort, and `late-libs`: lib again after a stop at the first
instruction, before the libraries are mapped, so that the plugin must read
the process's maps again):

  1. with `jit-reader-load PLUGIN`, the SFrame-only program gives the chain
     known by construction (dbgchain.c's header), from the first function of
     ours down to main and nothing after it;
  2. every frame (name and pc, all threads) is the one plain gdb gives for
     the .eh_frame program (the oracle), but for the pc a signal interrupted,
     which differs from run to run;
  3. without the plugin, gdb does not give that chain for the SFrame-only
     program (so the plugin is what makes 1 pass).

Stripped cases check the chain by address: each pc (pc - 1 for a return
address) must fall in the function `nm` names in the unstripped file. Step
cases stop at the first instruction of `stepped` and `stepi` through it and
step_callee until it returns, comparing the whole backtrace with the oracle's
at every instruction, and with the chain known by construction. The attach
case runs `gdb -p` on the `spin` mode, writes a core with gcore and reads it
back, and reads a kernel core of the `abort` mode when core_pattern writes
one into the working directory.

Exit status 0 pass, 1 fail, 77 skip (no gdb, no plugin, no --gsframe).
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time

SKIP = 77
GDB_TIMEOUT = 40
BUILD_TIMEOUT = 30
# every wait of one run ends by then, before meson's timeout (120 s) kills
# the driver but not the sessions it started
BUDGET = 100
DEADLINE = time.monotonic() + BUDGET

CASES = {
    'O2-pie': {'cflags': '-O2', 'pie': True, 'step': True},
    'O0-nopie': {'cflags': '-O0', 'pie': False, 'step': True},
    'O0-pie': {'cflags': '-O0', 'pie': True},
    'O2-nopie': {'cflags': '-O2', 'pie': False},
    'Os-pie': {'cflags': '-Os', 'pie': True},
    'Os-nopie': {'cflags': '-Os', 'pie': False},
    'O2-pie-stripped': {'cflags': '-O2', 'pie': True, 'strip': True},
    'attach': {'cflags': '-O2', 'pie': True, 'attach': True},
}

DEEP = 20
VLA = 100

# mode -> (arguments, the chain by construction from our innermost function to main)
MODES = {
    'leaf': (['leaf'], ['leaf6', 'level4', 'level3', 'level2', 'level1', 'run_leaf', 'main']),
    'lib': (['lib'], ['cb_leaf', 'lib_callback', 'dbgcb_call', 'run_lib', 'main']),
    'vla': (['vla', str(VLA)], ['vla_leaf', 'vla_frame', 'run_vla', 'main']),
    'signal': (['signal'], ['handler_leaf', 'on_signal', '<signal handler called>',
                            'spin_until', 'run_signal', 'main']),
    'thread': (['thread'], None),
    'deep': (['deep', str(DEEP)], ['deep_leaf'] + ['deep'] * DEEP + ['run_deep', 'main']),
    'abort': (['abort'], ['leaf_abort', 'abort_mid', 'run_abort', 'main']),
    # `lib` again, but gdb first stops at the first instruction (starti), where
    # the plugin finds the process before libc and libdbgcb.so are mapped
    'late-libs': (['lib'], ['cb_leaf', 'lib_callback', 'dbgcb_call', 'run_lib', 'main']),
}
# thread mode: the thread that raised, down to its start routine, then libc's
# start_thread and clone3; the main thread, waiting in pthread_join
THREAD_CHAIN = ['thread_leaf', 'thread_mid', 'thread_start']
THREAD_MAIN_CHAIN = ['run_thread', 'main']
SPIN_CHAIN = ['spin_leaf', 'spin_outer', 'run_spin', 'main']
SIGFRAME = '<signal handler called>'

# frames above ours: raise()/abort() and what they call in libc
MAX_LEAD = 5
# backtraces are cut here: without the plugin gdb may wander
MAX_FRAMES = 100


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def kill_session(sid):
    """SIGKILL every process of session @sid (gdb and the inferiors it started)."""
    for ent in os.listdir('/proc'):
        if not ent.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % ent) as f:
                stat = f.read()
            fields = stat[stat.rindex(')') + 2:].split()
            if int(fields[3]) == sid:
                os.kill(int(ent), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            continue


def run(cmd, timeout, cwd=None, check=True):
    """Run @cmd in its own session; everything it started dies with it on timeout."""
    timeout = min(timeout, DEADLINE - time.monotonic())
    if timeout <= 0:
        raise Failure('out of time (%ds) before: %s' % (BUDGET, ' '.join(cmd)))
    proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors='replace',
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_session(proc.pid)
        proc.communicate()
        raise Failure('timed out after %ds: %s' % (timeout, ' '.join(cmd)))
    finally:
        kill_session(proc.pid)
    if check and proc.returncode:
        raise Failure('%s exited %d:\n%s' % (' '.join(cmd), proc.returncode, out))
    return out


# ---- building ----

def build(args, case, work):
    """Compile the three copies; @return {kind: (prog path, lib path)}."""
    progs = args.progs
    cflags = case['cflags'].split() + ['-g', '-fomit-frame-pointer', '-Wa,--gsframe']
    pie = ['-fPIE', '-pie'] if case['pie'] else ['-fno-pie', '-no-pie']
    if os.path.isdir(work):
        shutil.rmtree(work)
    os.makedirs(work)
    # st and se: the sf and eh copies stripped
    kinds = ['sf', 'eh'] + (['st', 'se'] if case.get('strip') else [])
    out = {}
    for kind in kinds:
        # one directory name length for all, so that the rpath strings are as long
        libdir = os.path.join(work, 'lib_' + kind)
        bindir = os.path.join(work, kind)
        os.makedirs(libdir)
        os.makedirs(bindir)
        lib = os.path.join(libdir, 'libdbgcb.so')
        prog = os.path.join(bindir, 'prog')
        run(['gcc'] + cflags + ['-shared', '-fPIC', os.path.join(progs, 'libdbgcb.c'), '-o', lib],
            BUILD_TIMEOUT)
        run(['gcc'] + cflags + pie + ['-I', progs, os.path.join(progs, 'dbgchain.c'),
                                      '-L', libdir, '-ldbgcb', '-Wl,-rpath,' + libdir,
                                      '-lpthread', '-o', prog], BUILD_TIMEOUT)
        for f in (lib, prog):
            if kind in ('sf', 'st'):
                run(['objcopy', '--remove-section=.eh_frame', '--remove-section=.eh_frame_hdr',
                     f], BUILD_TIMEOUT)
            if kind in ('st', 'se'):
                run(['strip', f], BUILD_TIMEOUT)
        out[kind] = (prog, lib)
    for prog, lib in out.values():
        sections = run(['readelf', '-SW', prog], BUILD_TIMEOUT)
        if '.sframe' not in sections:
            raise Skip('the assembler wrote no .sframe section (needs binutils >= 2.40)')
    return out


# ---- gdb output ----

FRAME_RE = re.compile(r'^#(\d+)\s+(?:(0x[0-9a-f]+) in )?(.*?)(?: \(.*)?$')
PC_RE = re.compile(r'^\$\d+ = (0x[0-9a-f]+)')


def gdb_blocks(gdb, prog, blocks, plugin=None, core=None, pid=None, timeout=GDB_TIMEOUT):
    """Run one gdb session: each block is (name, [commands]); @return {name: its output}."""
    cmd = [gdb, '-nx', '-batch']
    if pid:
        cmd += ['-p', str(pid)]
    if plugin:
        cmd += ['-ex', 'jit-reader-load ' + plugin]
    cmd += ['-ex', 'set pagination off', '-ex', 'set width 0']
    for name, lines in blocks:
        cmd += ['-ex', 'echo \\n@@BEGIN %s\\n' % name]
        for line in lines:
            cmd += ['-ex', line]
        cmd += ['-ex', 'echo \\n@@END\\n']
    cmd += [prog] + ([core] if core else [])
    out = run(cmd, timeout, check=False)
    res = {}
    for m in re.finditer(r'^@@BEGIN (\S+)\n(.*?)^@@END$', out, re.S | re.M):
        res[m.group(1)] = m.group(2)
    for name, _ in blocks:
        if name not in res:
            raise Failure('gdb gave no output for %s; it said:\n%s' % (name, out[-3000:]))
    return res


def parse_threads(text):
    """The backtraces in @text: [[(name, pc or None)]], one list per thread, and the pcs
    that `frame apply all -q p/x $pc` printed, [[pc]] likewise."""
    threads, pcs = [], []
    for line in text.splitlines():
        m = FRAME_RE.match(line)
        if m:
            if m.group(1) == '0':
                threads.append([])
            name = m.group(3).strip()
            threads[-1].append((name, int(m.group(2), 16) if m.group(2) else None))
            continue
        m = PC_RE.match(line)
        if m:
            pcs.append(int(m.group(1), 16))
    # the pcs come after all backtraces, thread by thread, frame by frame
    flat = [f for t in threads for f in t]
    if len(pcs) != len(flat):
        raise Failure('%d frames but %d pcs in:\n%s' % (len(flat), len(pcs), text))
    out, i = [], 0
    for t in threads:
        out.append([(name, pcs[i + k]) for k, (name, _) in enumerate(t)])
        i += len(t)
    return out


def names(frames):
    return [n for n, _ in frames]


def chain_error(frames, expected, at_end=True, first_ours=None):
    """@return why @frames is not @expected (after up to MAX_LEAD frames of libc), or None."""
    ns = names(frames)
    if expected[0] not in ns:
        return 'no %s in %s' % (expected[0], ns)
    i = ns.index(expected[0])
    if first_ours is not None and i != first_ours:
        return '%s at frame %d, not %d: %s' % (expected[0], i, first_ours, ns)
    if i > MAX_LEAD or '??' in ns[:i]:
        return 'unexpected frames before %s: %s' % (expected[0], ns)
    got = ns[i:i + len(expected)]
    if got != expected:
        return 'chain %s, expected %s' % (got, expected)
    if at_end and len(ns) != i + len(expected):
        return 'frames after main: %s' % ns[i + len(expected):]
    return None


def check_mode_chain(mode, threads, at_end=True):
    """@return why the chain of @mode is wrong in @threads, or None."""
    if not threads:
        return 'no backtrace'
    if mode == 'thread':
        raised = [t for t in threads if THREAD_CHAIN[0] in names(t)]
        waiting = [t for t in threads if t is not (raised[0] if raised else None)]
        if len(threads) != 2 or not raised:
            return 'threads %s' % [names(t) for t in threads]
        ns = names(raised[0])
        err = chain_error(raised[0], THREAD_CHAIN, at_end=False)
        if err:
            return 'raising thread: ' + err
        # past the start routine: libc's start_thread and clone3, nothing of ours
        rest = ns[ns.index(THREAD_CHAIN[-1]) + 1:]
        if not rest or len(rest) > 3 or '??' in rest or set(rest) & set(THREAD_CHAIN):
            return 'raising thread past %s: %s' % (THREAD_CHAIN[-1], rest)
        ns = names(waiting[0])
        if ns[-2:] != THREAD_MAIN_CHAIN or '??' in ns:
            return 'waiting thread: %s' % ns
        return None
    return chain_error(threads[0], MODES[mode][1], at_end=at_end)


def mode_blocks(with_regs=False, mappings=False):
    blocks = []
    for mode, (argv, _) in MODES.items():
        lines = ['run ' + ' '.join(argv)]
        if mode == 'late-libs':
            lines = ['starti ' + ' '.join(argv), 'info frame', 'continue']
        if mode == 'thread':
            lines += ['thread apply all -q bt %d' % MAX_FRAMES,
                      'thread apply all -q frame apply %d -s -q p/x $pc' % MAX_FRAMES]
        else:
            lines += ['bt %d' % MAX_FRAMES, 'frame apply %d -s -q p/x $pc' % MAX_FRAMES]
        if with_regs and mode == 'leaf':
            # a frame our plugin unwound: registers SFrame does not describe are not saved
            lines += ['echo @@REGS\\n', 'frame 4', 'info registers rip rbx']
        if mappings:
            lines += ['echo @@MAPS\\n', 'info proc mappings']
        lines.append('kill')
        blocks.append((mode, lines))
    return blocks


# ---- symbols for stripped programs ----

def nm_functions(path):
    """[(start, end, name)] of the functions of an ELF file, by `nm -S`."""
    funcs = []
    for line in run(['nm', '-S', '--defined-only', path], BUILD_TIMEOUT).splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in 'tTW':
            start, size = int(parts[0], 16), int(parts[1], 16)
            funcs.append((start, start + size, parts[3]))
    return funcs


def load_bases(text, files):
    """{path: load bias} from `info proc mappings` (the mapping at file offset 0)."""
    bases = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[0].startswith('0x') and parts[-1] in files:
            if int(parts[3], 16) == 0 and parts[-1] not in bases:
                bases[parts[-1]] = int(parts[0], 16)
    return bases


def name_stripped(threads, mapping_text, stripped, unstripped, pie):
    """Replace the `??` frames of stripped files by the function nm finds for their pc."""
    tables = {s: nm_functions(u) for s, u in zip(stripped, unstripped)}
    bases = load_bases(mapping_text, stripped)
    out = []
    for t in threads:
        named = []
        for level, (name, pc) in enumerate(t):
            if name == '??':
                # a return address: the call is just before it; frame 0 and the
                # frame a signal interrupted have a precise pc
                precise = level == 0 or named[-1][0] == SIGFRAME
                addr = pc if precise else pc - 1
                for path, funcs in tables.items():
                    bias = bases.get(path)
                    if bias is None:
                        continue
                    if path == stripped[0] and not pie:
                        bias = 0
                    for start, end, fname in funcs:
                        if start <= addr - bias < end:
                            name = fname
            named.append((name, pc))
        out.append(named)
    return out


# ---- the checks ----

def cut_at_main(threads):
    """Stripped programs: gdb does not know main, so it goes on past it; cut there."""
    out = []
    for t in threads:
        ns = names(t)
        out.append(t[:ns.index('main') + 1] if 'main' in ns else t)
    return out


def comparable(threads):
    """The frames to compare with the oracle: where a signal interrupted the
    program differs from run to run, so that pc is left out."""
    out = []
    for t in threads:
        out.append([(n, None if i and t[i - 1][0] == SIGFRAME else pc)
                    for i, (n, pc) in enumerate(t)])
    return out


def show(threads):
    return [[(n, hex(p) if p is not None else None) for n, p in t] for t in threads]


def check_modes(args, case, files):
    strip = case.get('strip')
    # stripped: the oracle is the .eh_frame copy stripped the same way, so that
    # gdb has no DWARF for either (it builds tail-call frames from DWARF)
    jit_kind, oracle_kind = ('st', 'se') if strip else ('sf', 'eh')
    unstripped = {'st': 'sf', 'se': 'eh'}
    blocks = mode_blocks(with_regs=True, mappings=strip)
    t0 = time.monotonic()
    jit = gdb_blocks(args.gdb, files[jit_kind][0], blocks, plugin=args.plugin)
    oracle = gdb_blocks(args.gdb, files[oracle_kind][0], mode_blocks(mappings=strip))
    bare = gdb_blocks(args.gdb, files[jit_kind][0], mode_blocks(mappings=strip))
    log('3 gdb sessions of %d modes: %.1fs' % (len(MODES), time.monotonic() - t0))

    def frames(out, kind):
        text = out.split('@@REGS')[0].split('@@MAPS')[0]
        threads = parse_threads(text)
        if strip:
            threads = name_stripped(threads, out, list(files[kind]),
                                    list(files[unstripped[kind]]), case['pie'])
            threads = cut_at_main(threads)
        return threads

    errors = []
    bare_wrong = []
    for mode in MODES:
        threads = frames(jit[mode], jit_kind)
        want = frames(oracle[mode], oracle_kind)
        err = check_mode_chain(mode, threads)
        if err:
            errors.append('%s: with the plugin: %s' % (mode, err))
        oracle_err = check_mode_chain(mode, want)
        if oracle_err:
            errors.append('%s: the .eh_frame oracle is wrong itself: %s' % (mode, oracle_err))
        if comparable(threads) != comparable(want):
            errors.append('%s: with the plugin\n  %s\nplain gdb on .eh_frame\n  %s' % (
                mode, show(threads), show(want)))
        if 'Backtrace stopped' in jit[mode].split('@@MAPS')[0] and not strip:
            errors.append('%s: %s' % (mode, jit[mode]))
        try:
            bare_err = check_mode_chain(mode, frames(bare[mode], jit_kind))
        except Failure as e:
            bare_err = str(e).splitlines()[0]
        if bare_err:
            bare_wrong.append(mode)
        log('%-7s plugin: %s; without it: %s' % (mode, err or 'chain ok, = oracle',
                                                   bare_err or 'chain ok'))
    if strip:
        errors += check_past_entry(args, files, jit['leaf'])
    if 'rbx            <not saved>' not in jit['leaf'] or \
            not re.search(r'^rip\s+0x[0-9a-f]+', jit['leaf'], re.M):
        errors.append('leaf: frame 4 should have rip but rbx <not saved>:\n' + jit['leaf'])
    # the negative: without the plugin the SFrame-only program must lose the chain
    if 'leaf' not in bare_wrong or len(bare_wrong) < 3:
        errors.append('without the plugin gdb got the chains of all but %s right: the test '
                      'does not show the plugin is needed' % bare_wrong)
    return errors


def check_past_entry(args, files, jit_leaf):
    """Stripped: past main, the plugin's frames are the ones plain gdb finds with
    the .eh_frame and `set backtrace past-main on` (to _start, whose CFI says the
    return address is undefined), then at most one frame at pc 0 (a JIT reader
    cannot say "outermost"; GDB stops after a pc of 0), and no error."""
    argv = MODES['leaf'][0]
    lines = ['set backtrace past-main on', 'run ' + ' '.join(argv),
             'bt %d' % MAX_FRAMES, 'frame apply %d -s -q p/x $pc' % MAX_FRAMES, 'kill']
    oracle = parse_threads(gdb_blocks(args.gdb, files['eh'][0], [('past', lines)])['past'])[0]
    got = parse_threads(jit_leaf.split('@@REGS')[0].split('@@MAPS')[0])[0]
    ns = names(oracle)
    if 'main' not in ns or ns[-1] != '_start':
        return ['past main: the oracle does not end at _start: %s' % show([oracle])]
    want = [pc for _, pc in oracle[ns.index('main'):]]
    pcs = [pc for _, pc in got]
    at = pcs.index(want[0]) if want[0] in pcs else len(pcs)
    tail = pcs[at:]
    log('past main: oracle %s; plugin %s' % (' '.join('%#x' % p for p in want),
                                              ' '.join('%#x' % (p or 0) for p in tail)))
    errors = []
    if tail[:len(want)] != want or tail[len(want):] not in ([], [0]):
        errors.append('past main: the plugin gives %s, the oracle %s then at most a frame at '
                      'pc 0' % (' '.join('%#x' % (p or 0) for p in tail),
                                ' '.join('%#x' % p for p in want)))
    if 'Backtrace stopped' in jit_leaf:
        errors.append('past main: the chain ends with an error:\n' + jit_leaf)
    return errors


STEP_SCRIPT = '''run step
break *stepped
continue
set $entry = $sp
while $sp <= $entry
  echo @@STEP\\n
  bt 100
  frame apply 100 -s -q p/x $pc
  stepi
end
echo @@STEP\\n
'''


def step_session(args, prog, plugin, work, tag):
    script = os.path.join(work, 'step-%s.gdb' % tag)
    with open(script, 'w') as f:
        f.write(STEP_SCRIPT)
    cmd = [args.gdb, '-nx', '-batch', '-ex', 'set pagination off', '-ex', 'set width 0']
    if plugin:
        cmd += ['-ex', 'jit-reader-load ' + plugin]
    cmd += ['-x', script, prog]
    out = run(cmd, GDB_TIMEOUT, check=False)
    steps = out.split('@@STEP\n')[1:-1]
    res = []
    for s in steps:
        try:
            res.append(parse_threads(s)[0])
        except (Failure, IndexError):
            res.append(None)
    return res


def check_step(args, case, files):
    work = args.workdir
    t0 = time.monotonic()
    jit = step_session(args, files['sf'][0], args.plugin, work, 'jit')
    oracle = step_session(args, files['eh'][0], None, work, 'oracle')
    bare = step_session(args, files['sf'][0], None, work, 'bare')
    log('step: %d instructions, 3 sessions %.1fs' % (len(oracle), time.monotonic() - t0))
    errors = []
    if len(oracle) < 10:
        return ['step: the oracle stepped only %d instructions' % len(oracle)]
    if len(jit) != len(oracle):
        errors.append('step: %d instructions with the plugin, %d for the oracle' % (
            len(jit), len(oracle)))
    callee_seen = 0
    for i, (got, want) in enumerate(zip(jit, oracle)):
        expect = ['stepped', 'run_step', 'main']
        if want and want[0][0] == 'step_callee':
            expect = ['step_callee'] + expect
            callee_seen += 1
        if not want or names(want) != expect:
            errors.append('step %d: the oracle says %s' % (i, want))
            continue
        if got != want:
            errors.append('step %d at %#x: plugin %s, oracle %s' % (
                i, want[0][1], got and [(n, hex(p)) for n, p in got],
                [(n, hex(p)) for n, p in want]))
    if not callee_seen:
        errors.append('step: never in step_callee')
    bare_wrong = sum(1 for got, want in zip(bare, oracle) if got != want)
    log('step: %d pcs (%d in step_callee) checked; without the plugin %d of %d wrong' % (
        len(oracle), callee_seen, bare_wrong, len(oracle)))
    if not bare_wrong:
        errors.append('step: plain gdb got every pc right without the plugin')
    return errors[:20]


def wait_pid_line(proc, timeout):
    """The first line the spin process prints: its pid."""
    import selectors
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    buf = b''
    while b'\n' not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or not sel.select(left):
            raise Failure('spin printed no pid in %ds' % timeout)
        chunk = os.read(proc.stdout.fileno(), 64)
        if not chunk:
            raise Failure('spin exited before printing its pid')
        buf += chunk
    return int(buf.split(b'\n')[0])


def check_attach(args, case, files):
    errors = []
    prog = files['sf'][0]
    work = args.workdir
    gcore = os.path.join(work, 'spin.core')
    proc = subprocess.Popen([prog, 'spin'], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            start_new_session=True)
    try:
        pid = wait_pid_line(proc, 10)
        blocks = [('spin', ['bt %d' % MAX_FRAMES, 'frame apply %d -s -q p/x $pc' % MAX_FRAMES,
                            'gcore ' + gcore])]
        jit = gdb_blocks(args.gdb, prog, blocks, plugin=args.plugin, pid=pid)
        if 'ptrace: Operation not permitted' in jit['spin']:
            raise Skip('gdb may not attach here (ptrace_scope)')
        bare = gdb_blocks(args.gdb, prog, [('spin', ['bt %d' % MAX_FRAMES,
                                                     'frame apply %d -s -q p/x $pc' % MAX_FRAMES])],
                          pid=pid)
    finally:
        kill_session(proc.pid)
        proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()
    threads = parse_threads(jit['spin'])
    err = chain_error(threads[0], SPIN_CHAIN, first_ours=0) if threads else 'no backtrace'
    try:
        bare_threads = parse_threads(bare['spin'])
        bare_err = chain_error(bare_threads[0], SPIN_CHAIN, first_ours=0)
    except (Failure, IndexError) as e:
        bare_err = str(e).splitlines()[0] if str(e) else 'no backtrace'
    log('gdb -p: plugin: %s; without it: %s' % (err or 'chain ok', bare_err or 'chain ok'))
    if err:
        errors.append('gdb -p spin: ' + err)
    if not bare_err:
        errors.append('gdb -p spin: plain gdb got the chain without the plugin')

    # the core gcore wrote, read back: the mappings come from its NT_FILE note
    if not os.path.exists(gcore):
        errors.append('gcore wrote no core: ' + jit['spin'])
    else:
        cores = [('gcore', gcore, SPIN_CHAIN, 0)]
        kcore = kernel_core(prog, work)
        if kcore:
            cores.append(('kernel core', kcore, MODES['abort'][1], None))
        else:
            log('kernel core: core_pattern writes no file here, skipped')
        for what, core, chain, first in cores:
            block = [('core', ['bt %d' % MAX_FRAMES,
                               'frame apply %d -s -q p/x $pc' % MAX_FRAMES])]
            got = gdb_blocks(args.gdb, prog, block, plugin=args.plugin, core=core)
            bare = gdb_blocks(args.gdb, prog, block, core=core)
            try:
                t = parse_threads(got['core'])
                err = chain_error(t[0], chain, first_ours=first) if t else 'no backtrace'
            except Failure as e:
                err = str(e)
            try:
                t = parse_threads(bare['core'])
                bare_err = chain_error(t[0], chain, first_ours=first) if t else 'no backtrace'
            except Failure as e:
                bare_err = str(e).splitlines()[0]
            log('%s: plugin: %s; without it: %s' % (what, err or 'chain ok',
                                                   bare_err or 'chain ok'))
            if err:
                errors.append('%s: %s' % (what, err))
            if not bare_err:
                errors.append('%s: plain gdb got the chain without the plugin' % what)
    return errors


def kernel_core(prog, work):
    """A core the kernel writes for `prog abort`, if core_pattern puts it in @work."""
    try:
        with open('/proc/sys/kernel/core_pattern') as f:
            pattern = f.read().strip()
    except OSError:
        return None
    if pattern.startswith('|') or '/' in pattern:
        return None
    for f in os.listdir(work):
        if f.startswith('core'):
            os.unlink(os.path.join(work, f))

    def unlimited():
        import resource
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY,
                                                  resource.RLIM_INFINITY))
    proc = subprocess.Popen([prog, 'abort'], cwd=work, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=unlimited, start_new_session=True)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        kill_session(proc.pid)
        proc.wait()
        return None
    cores = [f for f in os.listdir(work) if f.startswith('core') and f != 'core.gdb']
    return os.path.join(work, cores[0]) if cores else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--case', required=True, choices=sorted(CASES))
    ap.add_argument('--plugin', required=True, help='sfunwind-gdb-jit.so ("" when not built)')
    ap.add_argument('--progs', required=True, help='tests/debugger/progs')
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--gdb', default='gdb')
    args = ap.parse_args()
    case = CASES[args.case]
    try:
        if not args.plugin or not os.path.exists(args.plugin):
            raise Skip('needs the plugin, built when gdb/jit-reader.h is installed (gdb)')
        if not shutil.which(args.gdb):
            raise Skip('needs gdb')
        args.plugin = os.path.abspath(args.plugin)
        args.workdir = os.path.abspath(args.workdir)
        t0 = time.monotonic()
        files = build(args, case, args.workdir)
        log('%s: built in %.1fs' % (args.case, time.monotonic() - t0))
        if case.get('attach'):
            errors = check_attach(args, case, files)
        else:
            errors = check_modes(args, case, files)
            if case.get('step'):
                errors += check_step(args, case, files)
    except Skip as e:
        log('SKIP: ' + str(e))
        return SKIP
    except Failure as e:
        log('FAIL: ' + str(e))
        return 1
    if errors:
        for e in errors:
            log('FAIL: ' + e)
        return 1
    log('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main())
