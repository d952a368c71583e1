#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""GDB Python unwinder tests: real gdb 13 on SFrame-only programs.

Each case compiles tests/debugger/progs/dbgchain.c (or dbgchain.cc) and
libdbgcb.so at test time, in several flavours that differ only in their
unwind tables and symbols, all at paths of the same length so that, with
GDB's address randomisation off, the stacks lie at the same addresses:

  eh/  .sframe and .eh_frame: plain GDB unwinds it right (the oracle)
  sf/  .eh_frame and .eh_frame_hdr removed: SFrame is the only unwind table
  st/  sf/, stripped (no symbols: chains are checked by address)

and runs GDB sessions (session.py) on them: the oracle without the plugin,
the SFrame-only builds with the plugin (sfunwind_gdb.py), and the same
SFrame-only stops without the plugin, which must come out wrong. The chains
are also checked against the ones dbgchain's header gives by construction.

Cases:
  chain     modes leaf, lib, vla, signal, thread, deep and step (every
            instruction of one call) of one build variant
  features  info frame, up/down, frame N, finish, info registers,
            info sframe, set sframe-unwinder, a core file (gcore), gdb -p
  aarch64   gdb-multiarch and qemu-aarch64 -g, static or dynamic

Exit status 0 pass, 1 fail, 77 skip (a tool is missing; the message says which).
"""

import argparse
import json
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import time

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SESSION = os.path.join(HERE, 'session.py')
GDB_TIMEOUT = 120
DEEP = 12
VLA = 40


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def run(cmd, cwd=None, timeout=120, env=None, quiet=False):
    if not quiet:
        log('$ ' + ' '.join(shlex.quote(c) for c in cmd))
    try:
        p = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, errors='replace',
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise Failure('%s timed out after %d s' % (cmd[0], timeout))
    if p.stdout.strip() and (not quiet or p.returncode):
        log(p.stdout.rstrip())
    if p.returncode:
        raise Failure('%s exited with %d' % (os.path.basename(cmd[0]), p.returncode))
    return p.stdout


# --- expected chains, by construction (dbgchain.c and dbgchain.cc headers) ---
# '*libc' stands for one or more frames in libc; '<signal>' for GDB's
# signal-trampoline frame; a name ending in '*' is a prefix.

def c_names(n):
    return {
        'leaf': ['leaf6', 'level4', 'level3', 'level2', 'level1', 'run_leaf', 'main'],
        'lib': ['cb_leaf', 'lib_callback', 'dbgcb_call', 'run_lib', 'main'],
        'vla': ['vla_leaf', 'vla_frame', 'run_vla', 'main'],
        'signal': ['handler_leaf', 'on_signal', '<signal>', 'spin_until', 'run_signal', 'main'],
        'thread': ['thread_leaf', 'thread_mid', 'thread_start', '*libc'],
        'thread-main': ['run_thread', 'main'],
        'deep': ['deep_leaf'] + ['deep'] * n + ['run_deep', 'main'],
        'abort': ['leaf_abort', 'abort_mid', 'run_abort', 'main'],
        'noreturn': ['leaf_abort', 'abort_mid', 'run_abort', 'main'],
        'spin': ['spin_leaf', 'spin_outer', 'run_spin', 'main'],
        'step': ('stepped', 'step_callee', 'run_step'),
        'leaf-fn': {'leaf': 'leaf6', 'lib': 'cb_leaf', 'vla': 'vla_leaf',
                    'signal': 'handler_leaf', 'deep': 'deep_leaf'},
    }


def cxx_names(n):
    ns = 'cxxchain::'
    lam = ns + 'Walker::walk(cxxchain::Node const&)::{lambda(int)#1}'
    return {
        'leaf': [ns + 'Leaf::visit', lam + '::operator()*', ns + 'descend<0, *',
                 ns + 'descend<1, *', ns + 'descend<2, *', ns + 'Walker::walk',
                 ns + 'run_leaf', 'main'],
        'lib': [ns + 'Leaf::visit', ns + 'on_callback', 'dbgcb_call', ns + 'run_lib', 'main'],
        'vla': [ns + 'Buffer<char>::leaf', ns + 'Buffer<char>::fill', ns + 'run_vla', 'main'],
        'signal': [ns + 'handler_leaf', ns + 'on_signal', '<signal>', ns + 'Spinner::spin_until',
                   ns + 'run_signal', 'main'],
        'thread': [ns + 'Leaf::visit', ns + 'Worker::mid', ns + 'Worker::start', '*libc'],
        'thread-main': [ns + 'run_thread', 'main'],
        'deep': [ns + 'Recurser::bottom'] + [ns + 'Recurser::deep'] * n +
                [ns + 'run_deep', 'main'],
        'abort': [ns + 'leaf_abort', ns + 'abort_mid', ns + 'run_abort', 'main'],
        'noreturn': [ns + 'leaf_abort', ns + 'abort_mid', ns + 'run_abort', 'main'],
        'step-inline': ns + 'Stepper::mix',
        'spin': [ns + 'Spin::operator()', ns + 'spin_outer', ns + 'run_spin', 'main'],
        'step': (ns + 'Stepper::stepped', ns + 'Stepper::callee', ns + 'run_step'),
        'leaf-fn': {'leaf': ns + 'Leaf::visit', 'lib': ns + 'Leaf::visit',
                    'vla': ns + 'Buffer<char>::leaf', 'signal': ns + 'handler_leaf',
                    'deep': ns + 'Recurser::bottom'},
    }


def name_matches(frame, want):
    if want == '<signal>':
        return frame['type'] == 'sigtramp'
    name = frame['name'] or ''
    if want.endswith('*'):
        return name.startswith(want[:-1])
    return name == want


def is_libc(frame):
    return bool(frame['solib']) and '/libc.so' in frame['solib']


def match_chain(frames, want):
    """Does the list of frames spell @want exactly? @return None or why not."""
    i = 0
    for j, w in enumerate(want):
        if w == '*libc':
            k = i
            while k < len(frames) and is_libc(frames[k]):
                k += 1
            if k == i:
                return 'frame %d: expected libc frames, got %s' % (i, describe(frames, i))
            i = k
            continue
        if i >= len(frames):
            return 'chain ends after %d frames, expected %s next' % (i, w)
        if not name_matches(frames[i], w):
            return 'frame %d: expected %s, got %s' % (i, w, describe(frames, i))
        i += 1
    if i != len(frames):
        return 'extra frames after the chain: %s' % describe(frames, i)
    return None


def describe(frames, i):
    if i >= len(frames):
        return 'nothing'
    f = frames[i]
    return '%s at 0x%x (%s)' % (f['name'] or '??', f['pc'], f['type'])


def chain_text(frames):
    return ' <- '.join('%s@0x%x' % (f['name'] or '??', f['pc']) for f in frames)


# --- building the flavours ---

class Build:
    def __init__(self, args, flavour):
        self.dir = os.path.join(args.workdir, flavour)
        self.prog = os.path.join(self.dir, 'prog')
        self.lib = os.path.join(self.dir, 'libdbgcb.so')
        self.flavour = flavour


def build_all(args, flavours):
    """Compile eh/ once, derive sf/ (no .eh_frame) and st/ (sf/ stripped) from it."""
    prefix = '' if args.arch == 'x86_64' else 'aarch64-linux-gnu-'
    cc = prefix + ('g++' if args.lang == 'c++' else 'gcc')
    cc_lib = prefix + 'gcc'
    objcopy = prefix + 'objcopy' if shutil.which(prefix + 'objcopy') else 'objcopy'
    strip = prefix + 'strip' if shutil.which(prefix + 'strip') else 'strip'
    for tool in (cc, cc_lib):
        if not shutil.which(tool):
            raise Skip('needs %s' % tool)
    src = os.path.join(args.progs, 'dbgchain.cc' if args.lang == 'c++' else 'dbgchain.c')
    flags = shlex.split(args.cflags) + ['-g', '-Wa,--gsframe']
    pie = ['-fPIE', '-pie'] if args.pie else ['-fno-pie', '-no-pie']
    builds = {f: Build(args, f) for f in flavours}
    eh = builds['eh']
    shutil.rmtree(args.workdir, ignore_errors=True)
    for b in builds.values():
        os.makedirs(b.dir)
    probe = os.path.join(args.workdir, 'probe.o')
    p = subprocess.run([cc_lib, '-c', '-x', 'c', '-Wa,--gsframe', '-o', probe, '-'],
                       input='int f(void) { return 0; }\n', text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    if p.returncode:
        raise Skip('the assembler cannot emit SFrame (--gsframe): ' + p.stdout.strip())
    if args.static:
        lib_obj = os.path.join(eh.dir, 'libdbgcb.o')
        run([cc_lib] + flags + ['-c', os.path.join(args.progs, 'libdbgcb.c'), '-o', lib_obj])
        run([cc] + flags + ['-static', '-I', args.progs, src, lib_obj, '-lpthread',
                            '-o', eh.prog])
    else:
        run([cc_lib] + flags + ['-shared', '-fPIC', os.path.join(args.progs, 'libdbgcb.c'),
                                '-o', eh.lib])
        # each flavour's program finds its own flavour's library
        run([cc] + flags + pie + ['-I', args.progs, src, '-L', eh.dir, '-ldbgcb',
                                  '-Wl,-rpath,$ORIGIN', '-lpthread', '-o', eh.prog])
    files = [('prog', eh.prog)] + ([] if args.static else [('libdbgcb.so', eh.lib)])
    for f in flavours:
        if f == 'eh':
            continue
        for name, path in files:
            out = os.path.join(builds[f].dir, name)
            run([objcopy, '--remove-section=.eh_frame', '--remove-section=.eh_frame_hdr',
                 path, out])
            if f == 'st':
                run([strip, out])
    for b in builds.values():
        for name, _ in files:
            secs = run(['readelf', '-SW', os.path.join(b.dir, name)], quiet=True)
            if '.sframe' not in secs:
                raise Failure('%s/%s has no .sframe' % (b.flavour, name))
            if (' .eh_frame ' in secs) != (b.flavour == 'eh'):
                raise Failure('%s/%s: .eh_frame %s' % (b.flavour, name,
                                                       'missing' if b.flavour == 'eh' else
                                                       'still there'))
    return builds


# --- gdb sessions ---

def gdb_session(args, name, program, runs, plugin, gdb='gdb', extra=None, env_extra=None):
    """Run session.py in a batch gdb; @return (results, stderr)."""
    plan = dict(program=program, runs=runs, out=os.path.join(args.workdir, name + '.json'))
    plan.update(extra or {})
    plan_path = os.path.join(args.workdir, name + '.plan.json')
    with open(plan_path, 'w') as f:
        json.dump(plan, f, indent=1)
    if os.path.exists(plan['out']):
        os.unlink(plan['out'])
    cmd = [gdb, '-batch', '-nx']
    if plugin:
        cmd += ['-x', args.plugin]
    cmd += ['-x', SESSION]
    env = dict(os.environ, SFU_GDB_PLAN=plan_path)
    env.pop('DEBUGINFOD_URLS', None)
    env.update(env_extra or {})
    log('$ SFU_GDB_PLAN=%s %s' % (plan_path, ' '.join(cmd)))
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors='replace',
                            cwd=args.workdir, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=GDB_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        raise Failure('gdb session %s timed out after %d s' % (name, GDB_TIMEOUT))
    log('  session %s: %.1f s, exit %d' % (name, time.monotonic() - t0, proc.returncode))
    with open(os.path.join(args.workdir, name + '.log'), 'w') as f:
        f.write(out + '\n--- stderr ---\n' + err)
    if not os.path.exists(plan['out']):
        log(out[-3000:])
        log(err[-3000:])
        raise Failure('gdb session %s wrote no results' % name)
    with open(plan['out']) as f:
        results = json.load(f)
    for m in re.finditer(r'^@@@BEGIN (\S+) (\d+)\n(.*?)^@@@END\n', out, re.M | re.S):
        for r in results:
            if r['name'] == m.group(1):
                i = int(m.group(2))
                r['commands'][i] = [r['commands'][i], m.group(3)]
    for r in results:
        if any(isinstance(c, str) for c in r.get('commands', [])):
            raise Failure('session %s, run %s: command output missing' % (name, r['name']))
        if 'error' in r:
            log(err[-3000:])
            raise Failure('session %s, run %s: %s' % (name, r['name'], r['error']))
    return {r['name']: r for r in results}, err


def threads_by_role(result):
    """(selected thread's frames, [other threads' frames])."""
    sel = [t for t in result['threads'] if t['selected']]
    others = [t['frames'] for t in result['threads'] if not t['selected']]
    return (sel[0]['frames'] if sel else []), others


def key(frames, upto=None, fp=True, spans=None):
    """What two unwinds of the same stop must agree on, frame by frame.

    @spans: {index: (start, end)}: frames whose pc is only known to lie in a
    function (the one a timer signal interrupted).
    """
    out = []
    for i, f in enumerate(frames[:upto]):
        pc = f['pc']
        if spans and i in spans:
            pc = spans[i][0] <= pc < spans[i][1]
        out.append((pc, f['sp'], f['fp'] if fp else None, f['type']))
    return out


def no_debug_frames(frames):
    """Without GDB's inline and tail-call frames, which it makes from the
    DWARF a stripped program no longer has."""
    return [f for f in frames if f['type'] not in ('tailcall', 'inline')]


class Checker:
    def __init__(self):
        self.errors = []
        self.checked = 0

    def check(self, ok, what):
        self.checked += 1
        if ok:
            log('  ok: ' + what)
        else:
            log('  FAIL: ' + what)
            self.errors.append(what)

    def done(self):
        if self.errors:
            raise Failure('%d of %d checks failed:\n  %s' % (len(self.errors), self.checked,
                                                            '\n  '.join(self.errors)))
        log('%d checks passed' % self.checked)


def expected_threads(names, mode, leaf_in_libc):
    """[(role, chain)] a run must show: 'sel' for the stopped thread, 'other' for the rest."""
    lead = ['*libc'] if leaf_in_libc else []
    if mode == 'thread':
        return [('sel', lead + names['thread']), ('other', ['*libc'] + names['thread-main'])]
    return [('sel', lead + names[mode])]


def check_chains(ck, label, result, names, mode, leaf_in_libc=True):
    sel, others = threads_by_role(result)
    for role, want in expected_threads(names, mode, leaf_in_libc):
        frames = sel if role == 'sel' else (others[0] if others else [])
        why = match_chain(frames, want)
        ck.check(why is None, '%s %s (%s thread): chain by construction%s' % (
            label, mode, 'stopped' if role == 'sel' else 'other',
            '' if why is None else ': %s\n    got %s' % (why, chain_text(frames))))


def main_index(frames):
    for i, f in enumerate(frames):
        if f['name'] == 'main':
            return i + 1
    return len(frames)


def interrupted_spans(oracle, frames):
    """{index: (start, end)} of the frame below a signal trampoline, whose pc varies by run."""
    span = oracle.get('symbols', {}).get('interrupted')
    if not span:
        return {}
    return {i + 1: tuple(span) for i, f in enumerate(frames) if f['type'] == 'sigtramp'}


def compare_runs(ck, label, oracle, got, mode, upto_main=False, fp=True):
    """@got unwinds every thread exactly as @oracle: pc, sp, frame pointer, frame type."""
    o_sel, o_others = threads_by_role(oracle)
    g_sel, g_others = threads_by_role(got)
    pairs = [('stopped', o_sel, g_sel)] + [('other', a, b) for a, b in zip(o_others, g_others)]
    ck.check(len(o_others) == len(g_others), '%s %s: %d threads as in the oracle' % (
        label, mode, len(g_others) + 1))
    for role, o, g in pairs:
        n = None
        if upto_main:
            o, g = no_debug_frames(o), no_debug_frames(g)
            n = main_index(o)
        # a thread blocked in a futex holds its tid in rbp: it changes from run to run
        kw = dict(fp=fp and role == 'stopped')
        ko = key(o, n, spans=interrupted_spans(oracle, o), **kw)
        kg = key(g, n, spans=interrupted_spans(oracle, g), **kw)
        same = ko == kg
        detail = ''
        if not same:
            detail = '\n    oracle %s\n    got    %s' % (chain_text(o[:n]), chain_text(g[:n]))
            for i, (a, b) in enumerate(zip(ko, kg)):
                if a != b:
                    detail += '\n    first difference at frame %d: %s vs %s' % (
                        i, fmt_key(a), fmt_key(b))
                    break
        ck.check(same, '%s %s (%s thread): pc, sp%s of every frame%s as the .eh_frame oracle%s'
                 % (label, mode, role, ', fp' if kw['fp'] else '',
                    ' up to main' if upto_main else '', detail))


def fmt_key(k):
    return '(%s)' % ', '.join('0x%x' % v if isinstance(v, int) else str(v) for v in k)


def differs(oracle, got):
    o_sel, o_others = threads_by_role(oracle)
    g_sel, g_others = threads_by_role(got)
    if len(o_others) != len(g_others):
        return True
    for o, g in [(o_sel, g_sel)] + list(zip(o_others, g_others)):
        o, g = no_debug_frames(o), no_debug_frames(g)
        n = main_index(o)
        if key(o, n, False, interrupted_spans(oracle, o)) != \
                key(g, n, False, interrupted_spans(oracle, g)):
            return True
    return False


def check_bt_text(ck, label, result, oracle=None):
    """`bt` prints the frames the Python API walked, and (unstripped) what the oracle prints."""
    sel, _ = threads_by_role(result)
    pcs = {}
    for m in re.finditer(r'^#(\d+)\s+(0x[0-9a-f]+) in ', result['bt'], re.M):
        pcs[int(m.group(1))] = int(m.group(2), 16)
    ok = pcs and all(n < len(sel) and sel[n]['pc'] == pc for n, pc in pcs.items())
    ok = ok and len(re.findall(r'^#\d+', result['bt'], re.M)) == len(sel)
    ck.check(ok, '%s %s: bt lists the same %d frames' % (label, result['name'], len(sel)))
    if oracle is not None:
        spans = interrupted_spans(oracle, sel)
        if spans:
            drop = re.compile(r'^#(%s) .*\n' % '|'.join(str(i) for i in spans), re.M)
            result = dict(result, bt=drop.sub('', result['bt']))
            oracle = dict(oracle, bt=drop.sub('', oracle['bt']))
        ck.check(result['bt'] == oracle['bt'], '%s %s: bt text identical to the oracle\'s%s' % (
            label, result['name'], '' if result['bt'] == oracle['bt'] else
            '\n--- oracle\n%s--- got\n%s' % (oracle['bt'], result['bt'])))


def step_chain(frames, names):
    stepped, callee, run_step = names['step']
    inline = names.get('step-inline')
    first = []
    if frames and name_matches(frames[0], callee):
        first = [callee]
    elif inline and frames and name_matches(frames[0], inline):
        first = [inline]
    return first + [stepped, run_step, 'main']


def check_steps(ck, label, oracle, got, names, negative=False, names_only=False,
                stripped=False):
    """Every instruction of the stepped call: the chain up to main at each pc.

    @names_only: the oracle cannot be trusted (gdb cannot strip pointer
    authentication codes over qemu's stub): the chain by construction only.
    """
    o, g = oracle['steps'], got['steps']
    if negative:
        if names_only:
            bad = sum(1 for b in g if match_chain(b['frames'][:main_index(b['frames'])],
                                                  step_chain(b['frames'], names)))
        else:
            bad = sum(1 for a, b in zip(o, g) if key(a['frames'], main_index(a['frames']), False)
                      != key(b['frames'], main_index(a['frames']), False))
        ck.check(len(o) != len(g) or bad > 0,
                 '%s step: without the plugin %d of %d instructions unwind wrong' % (
                     label, bad, len(g)))
        return
    ck.check(len(o) == len(g) and len(o) > 5, '%s step: %d instructions stepped (oracle %d)' % (
        label, len(g), len(o)))
    wrong = []
    for i, (a, b) in enumerate(zip(o, g)):
        fa, fb = a['frames'], b['frames']
        if names_only:
            why = match_chain(fb, step_chain(fb, names))
            if why is not None:
                wrong.append('step %d pc 0x%x: %s' % (i, fb[0]['pc'], why))
            continue
        if match_chain(fa, step_chain(fa, names)) is not None:
            wrong.append('oracle at step %d: %s' % (i, match_chain(fa, step_chain(fa, names))))
            continue
        if stripped:
            fa, fb = no_debug_frames(fa), no_debug_frames(fb)
        n = main_index(fa)
        if key(fa, n) != key(fb, n):
            wrong.append('step %d pc 0x%x: got %s, oracle %s' % (
                i, fa[0]['pc'], chain_text(fb[:n]), chain_text(fa[:n])))
    ck.check(not wrong, '%s step: chain %sright at every instruction%s' % (
        label, 'by construction ' if names_only else '',
        '' if not wrong else '\n    ' + '\n    '.join(wrong[:10])))


# --- the cases ---

def oracle_runs(runs, names):
    """The runs for the oracle, which also names the functions the others are checked by."""
    out = [dict(r) for r in runs]
    for r in out:
        if r['name'] == 'signal':
            r['symbols'] = {'interrupted': names['signal'][3]}
    return out


def bt_runs(modes, names, leaf_break=None):
    runs = []
    for mode in modes:
        args = mode + {'vla': ' %d' % VLA, 'deep': ' %d' % DEEP}.get(mode, '')
        r = {'name': mode, 'args': args}
        if mode == 'noreturn':
            # stopped in abort(): leaf_abort's return address is the end of
            # the function, right only as a return address (pc - 1)
            r = {'name': mode, 'args': 'abort', 'break': 'abort'}
        if leaf_break is not None:
            r['break'] = leaf_break.get(mode)
        runs.append(r)
    return runs


def case_chain(args):
    names = (cxx_names if args.lang == 'c++' else c_names)(DEEP)
    flavours = ['eh', 'sf'] + (['st'] if args.stripped else [])
    builds = build_all(args, flavours)
    modes = ['leaf', 'lib', 'vla', 'signal', 'thread', 'deep', 'noreturn']
    runs = bt_runs(modes, names)
    step_run = {'name': 'step', 'args': 'step', 'step': {'entry_symbol': names['step'][0]}}
    oracle, _ = gdb_session(args, 'oracle', builds['eh'].prog,
                            oracle_runs(runs, names) + [step_run], plugin=False)
    # the others stop at the same addresses: the oracle's symbols name them
    step_run = {'name': 'step', 'args': 'step', 'step': {
        'entry': oracle['step']['entry'], 'return_pc': oracle['step']['return_pc']}}
    runs[modes.index('signal')]['debug'] = True
    plugin, plugin_log = gdb_session(args, 'plugin', builds['sf'].prog, runs + [step_run],
                                     plugin=True)
    for r in runs:
        r.pop('debug', None)
    native, _ = gdb_session(args, 'native', builds['sf'].prog, runs + [step_run], plugin=False)
    stripped = None
    if args.stripped:
        stripped, _ = gdb_session(args, 'stripped', builds['st'].prog, runs + [step_run],
                                  plugin=True)
        stripped_native, _ = gdb_session(args, 'stripped-native', builds['st'].prog, runs,
                                         plugin=False)
        # the oracle past main: GDB alone with the .eh_frame ends at _start (crt1.o's
        # CFI says its return address is undefined)
        past_main, _ = gdb_session(args, 'oracle-past-main', builds['eh'].prog,
                                   [r for r in runs if r['name'] == 'leaf'],
                                   plugin=False,
                                   extra={'setup': ['set backtrace past-main on']})

    ck = Checker()
    for mode in modes:
        check_chains(ck, 'oracle', oracle[mode], names, mode)
        check_chains(ck, 'plugin', plugin[mode], names, mode)
        compare_runs(ck, 'plugin', oracle[mode], plugin[mode], mode)
        check_bt_text(ck, 'plugin', plugin[mode], oracle[mode])
        ck.check(differs(oracle[mode], native[mode]),
                 'native %s: without the plugin the chain is wrong (%s)' % (
                     mode, chain_text(threads_by_role(native[mode])[0])))
        if stripped:
            compare_runs(ck, 'stripped', oracle[mode], stripped[mode], mode, upto_main=True)
            check_bt_text(ck, 'stripped', stripped[mode])
            ck.check(differs(oracle[mode], stripped_native[mode]),
                     'stripped-native %s: without the plugin the chain is wrong' % mode)
    if stripped:
        check_past_entry(ck, 'stripped', past_main['leaf'], stripped['leaf'])
    check_precise(ck, plugin['signal'], plugin_log, names)
    check_steps(ck, 'plugin', oracle['step'], plugin['step'], names)
    check_steps(ck, 'native', oracle['step'], native['step'], names, negative=True)
    if stripped:
        check_steps(ck, 'stripped', oracle['step'], stripped['step'], names, stripped=True)
    ck.done()


def check_past_entry(ck, label, past, got, zero_frame=True):
    """Past main, the frames GDB alone finds with the .eh_frame, to the entry point
    (_start), and nothing after them: at most the
    one frame at pc 0 an unwinder plugin ends the chain with (GDB's Python and
    JIT-reader APIs cannot say "outermost"), and no error."""
    want, _ = threads_by_role(past)
    sel, _ = threads_by_role(got)
    first = next((i for i, f in enumerate(want) if f['name'] == 'main'), None)
    ck.check(first is not None and want[-1]['name'] == '_start',
             '%s %s: the oracle, past main, ends at the entry point: %s' % (
                 label, past['name'], chain_text(want)))
    if first is None:
        return
    want_pcs = [f['pc'] for f in want[first:]]
    pcs = [f['pc'] for f in sel]
    at = pcs.index(want_pcs[0]) if want_pcs[0] in pcs else len(pcs)
    tail = pcs[at:]
    extra = tail[len(want_pcs):]
    stop = [t for t in got['threads'] if t['selected']][0]['stop_reason']
    ok = tail[:len(want_pcs)] == want_pcs and extra in ([], [0] if zero_frame else [])
    ck.check(ok, '%s %s: past main, the frames of the oracle past main (%s), then %s: got %s' % (
        label, got['name'], ' '.join('%#x' % p for p in want_pcs),
        'at most a frame at pc 0' if zero_frame else 'nothing',
        ' '.join('%#x' % p for p in tail)))
    ck.check(stop in ('no reason', 'outermost') and 'Backtrace stopped' not in got['bt'],
             '%s %s: the chain ends without an error (%s)' % (label, got['name'], stop))


def check_precise(ck, result, log_text, names):
    """The frame a signal interrupted was looked up with its precise pc."""
    sel, _ = threads_by_role(result)
    spin = [f for f in sel if name_matches(f, names['signal'][3])]
    ok = bool(spin) and re.search(r'level %d pc 0x%x \(precise\)' % (spin[0]['level'],
                                                                   spin[0]['pc']), log_text)
    ck.check(bool(ok), 'plugin signal: the interrupted frame (%s) unwound with a precise pc' % (
        names['signal'][3]))
    callers = [f for f in sel if f['level'] > (spin[0]['level'] if spin else 1 << 30)]
    ok = all(re.search(r'level %d pc 0x%x:' % (f['level'], f['pc']), log_text)
             for f in callers if f['name'] != 'main')
    ck.check(bool(spin) and ok, 'plugin signal: its callers unwound by the plugin, '
             'looked up as return addresses')


def normalise_info_frame(text):
    """`info frame` without its "Saved registers" list (DWARF says where they are, SFrame not)."""
    return re.sub(r'\n Saved registers:\n(  .*\n?)*', '\n', text)


def case_features(args):
    names = c_names(DEEP)
    builds = build_all(args, ['eh', 'sf'])
    nav = ['frame 3', 'info frame', 'up', 'info frame', 'down', 'frame 5', 'info frame',
           'info registers rip rsp rbp rbx']
    finish = ['frame 3', 'finish', 'bt', 'finish', 'finish', 'finish', 'finish', 'bt',
              'finish', 'bt']
    sframe_cmds = ['frame 0', 'info sframe', 'frame 3', 'info sframe', 'info sframe 0',
                   'info sframe level2', 'show sframe-unwinder', 'set sframe-unwinder off',
                   'show sframe-unwinder', 'bt', 'set sframe-unwinder on',
                   'show sframe-unwinder', 'bt']
    core = {f: os.path.join(args.workdir, 'core.' + f) for f in ('eh', 'sf')}
    runs_o = [{'name': 'leaf', 'args': 'leaf', 'commands': nav + finish},
              {'name': 'abort', 'args': 'abort', 'gcore': core['eh']}]
    runs_p = [{'name': 'leaf', 'args': 'leaf', 'commands': nav + sframe_cmds + finish},
              {'name': 'abort', 'args': 'abort', 'gcore': core['sf']}]
    oracle, _ = gdb_session(args, 'oracle', builds['eh'].prog, runs_o, plugin=False)
    plugin, _ = gdb_session(args, 'plugin', builds['sf'].prog, runs_p, plugin=True)
    native, _ = gdb_session(args, 'native', builds['sf'].prog,
                            [{'name': 'leaf', 'args': 'leaf'}], plugin=False)
    ck = Checker()
    p_cmds = plugin['leaf']['commands']
    for i, cmd in enumerate(nav):
        got = p_cmds[i][1]
        want = oracle['leaf']['commands'][i][1]
        if cmd == 'info frame':
            # the plugin's registers are values, not stack slots: no list
            ck.check('Saved registers' not in got and 'Saved registers' in want,
                     'info frame (%d): no saved-register addresses invented' % i)
            got, want = normalise_info_frame(got), normalise_info_frame(want)
        if cmd.startswith('info registers'):
            regs = dict(re.findall(r'^(\w+)\s+(\S+(?: \S+)?)', got, re.M))
            oregs = dict(re.findall(r'^(\w+)\s+(\S+(?: \S+)?)', want, re.M))
            ok = all(regs.get(r) == oregs.get(r) for r in ('rip', 'rsp', 'rbp')) and \
                regs.get('rbx') == '<not saved>'
            ck.check(ok, 'info registers in frame 5: rip, rsp, rbp as the oracle, rbx '
                     '<not saved>\n%s' % got)
            continue
        ck.check(got == want, '%s (%d): output as the oracle\'s%s' % (
            cmd, i, '' if got == want else '\n--- oracle\n%s--- got\n%s' % (want, got)))
    m = re.search(r'Stack level 3, frame at (0x[0-9a-f]+)', p_cmds[1][1])
    sel, _ = threads_by_role(plugin['leaf'])
    ck.check(m and int(m.group(1), 16) == sel[4]['sp'],
             'info frame: frame 3\'s address is its CFA, the sp of frame 4')
    base = len(nav)
    out = [c[1] for c in p_cmds[base:base + len(sframe_cmds)]]
    ck.check('table: rows from .eh_frame' in out[1] and 'unwound by: GDB' in out[1] and
             'libc.so' in out[1], 'info sframe in raise (libc): rows from .eh_frame, left to GDB'
             '\n' + out[1])
    leaf6 = sel[3]
    ok = ('table: .sframe' in out[3] and 'pc 0x%x:' % (leaf6['pc'] - 1) in out[3] and
          'unwound by: the SFrame unwinder' in out[3] and 'modules from: pid' in out[3] and
          re.search(r'row at 0x[0-9a-f]+: CFA=sp\+\d+ RA=c-8', out[3]))
    ck.check(bool(ok), 'info sframe in leaf6: .sframe row for pc - 1\n' + out[3])
    ck.check('table: none' in out[4] and 'no mapping' in out[4],
             'info sframe 0: no mapping, no table\n' + out[4])
    level2 = [f for f in sel if f['name'] == 'level2'][0]
    fn = re.search(r'function: (0x[0-9a-f]+)-(0x[0-9a-f]+)', out[5])
    ck.check(bool(fn) and int(fn.group(1), 16) <= level2['pc'] - 1 < int(fn.group(2), 16) and
             'table: .sframe' in out[5], 'info sframe level2: the function that holds level2\'s '
             'frame\n' + out[5])
    ck.check(out[6].strip() == 'The SFrame unwinder is on.' and
             out[8].strip() == 'The SFrame unwinder is off.' and
             out[11].strip() == 'The SFrame unwinder is on.',
             'show sframe-unwinder follows set sframe-unwinder')
    ck.check(out[9] == native['leaf']['bt'] and out[9] != oracle['leaf']['bt'],
             'set sframe-unwinder off: bt as without the plugin (wrong)\n' + out[9])
    ck.check(out[12] == oracle['leaf']['bt'], 'set sframe-unwinder on: bt right again')
    o_fin = oracle['leaf']['commands'][len(nav):]
    p_fin = p_cmds[base + len(sframe_cmds):]
    for (cmd, want), (_, got) in zip(o_fin, p_fin):
        ck.check(got == want, '%s: output as the oracle\'s%s' % (
            cmd, '' if got == want else '\n--- oracle\n%s--- got\n%s' % (want, got)))
    ck.check(len(o_fin) == len(p_fin) and 'Value returned' in o_fin[-2][1] and
             'Run till exit from #3' in o_fin[1][1],
             'finish: leaf6 up to run_leaf, whose value is returned')

    # a module with .eh_frame as well as .sframe is GDB's to unwind (full register state)
    both, both_log = gdb_session(args, 'plugin-eh', builds['eh'].prog,
                                 [{'name': 'leaf', 'args': 'leaf', 'debug': True,
                                   'commands': ['frame 3', 'info sframe']}], plugin=True)
    ck.check(both['leaf']['bt'] == oracle['leaf']['bt'] and 'caller pc' not in both_log and
             re.search(r'level 3 pc 0x%x: \.eh_frame covers it, left to GDB' % sel[3]['pc'],
                       both_log),
             'plugin on the .eh_frame build: every frame left to GDB')
    ck.check('unwound by: GDB (the module\'s .eh_frame covers it too)' in
             both['leaf']['commands'][1][1], 'info sframe on the .eh_frame build: left to GDB\n'
             + both['leaf']['commands'][1][1])

    # the core files gcore wrote
    for f in ('eh', 'sf'):
        ck.check(os.path.exists(core[f]), 'gcore wrote %s' % core[f])
    c_oracle, _ = gdb_session(args, 'core-oracle', builds['eh'].prog,
                              [{'name': 'core', 'commands': []}], plugin=False,
                              extra={'core': core['eh']})
    c_plugin, _ = gdb_session(args, 'core-plugin', builds['sf'].prog,
                              [{'name': 'core', 'commands': ['info sframe leaf_abort']}],
                              plugin=True, extra={'core': core['sf']})
    c_native, _ = gdb_session(args, 'core-native', builds['sf'].prog,
                              [{'name': 'core'}], plugin=False, extra={'core': core['sf']})
    check_chains(ck, 'core oracle', c_oracle['core'], names, 'abort')
    check_chains(ck, 'core plugin', c_plugin['core'], names, 'abort')
    compare_runs(ck, 'core plugin', c_oracle['core'], c_plugin['core'], 'abort')
    ck.check(differs(c_oracle['core'], c_native['core']),
             'core native: without the plugin the chain is wrong')
    ck.check('modules from: proc-mappings' in c_plugin['core']['commands'][0][1],
             'core: modules from `info proc mappings`\n' + c_plugin['core']['commands'][0][1])

    # gdb -p on a running process
    for plugin_on, label in ((True, 'attach-plugin'), (False, 'attach-native')):
        proc = subprocess.Popen([builds['sf'].prog, 'spin'], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, text=True)
        try:
            ready, _, _ = select.select([proc.stdout], [], [], 10)
            if not ready:
                raise Failure('the spin program did not print its pid')
            pid = int(proc.stdout.readline())
            res, _ = gdb_session(args, label, builds['sf'].prog,
                                 [{'name': 'spin', 'commands': ['info sframe spin_leaf']}],
                                 plugin=plugin_on, extra={'attach': pid})
        finally:
            proc.kill()
            proc.wait(timeout=10)
        why = match_chain(threads_by_role(res['spin'])[0], names['spin'])
        if plugin_on:
            ck.check(why is None, 'gdb -p with the plugin: chain by construction%s' % (
                '' if why is None else ': ' + why))
            ck.check('modules from: pid' in res['spin']['commands'][0][1],
                     'gdb -p: modules from /proc/PID/maps')
        else:
            ck.check(why is not None, 'gdb -p without the plugin: chain wrong (%s)' % why)
    ck.done()


def case_aarch64(args):
    for tool in ('gdb-multiarch', 'qemu-aarch64'):
        if not shutil.which(tool):
            raise Skip('needs %s' % tool)
    if not args.static and not os.path.isdir('/usr/aarch64-linux-gnu/lib'):
        raise Skip('needs the AArch64 sysroot /usr/aarch64-linux-gnu')
    names = c_names(DEEP)
    builds = build_all(args, ['eh', 'sf'])
    modes = ['leaf', 'lib', 'vla', 'signal', 'deep']
    # a static program's libc has no unwind table left: stop in the leaf instead of raise
    runs = bt_runs(modes, names, names['leaf-fn'] if args.static else None)
    # qemu's SVE signal frames are more than gdb 13 can read: no SVE (-cpu max keeps PAuth)
    qemu = ['qemu-aarch64', '-cpu', 'max,sve=off'] + \
        ([] if args.static else ['-L', '/usr/aarch64-linux-gnu'])

    def extra(b):
        setup = ['set architecture aarch64']
        if not args.static:
            setup += ['set sysroot /usr/aarch64-linux-gnu', 'set solib-search-path ' + b.dir]
        return {'qemu': qemu, 'setup': setup}

    step_run = {'name': 'step', 'args': 'step', 'step': {'entry_symbol': names['step'][0]}}
    oracle, _ = gdb_session(args, 'oracle', builds['eh'].prog,
                            oracle_runs(runs, names) + [step_run], plugin=False,
                            gdb='gdb-multiarch', extra=extra(builds['eh']))
    step_run = {'name': 'step', 'args': 'step', 'step': {
        'entry': oracle['step']['entry'], 'return_pc': oracle['step']['return_pc']}}
    plugin, _ = gdb_session(args, 'plugin', builds['sf'].prog, runs + [step_run], plugin=True,
                            gdb='gdb-multiarch', extra=extra(builds['sf']))
    native, _ = gdb_session(args, 'native', builds['sf'].prog, runs + [step_run], plugin=False,
                            gdb='gdb-multiarch', extra=extra(builds['sf']))
    ck = Checker()
    # gdb 13 over qemu's stub has no PAC mask: it cannot strip signed return
    # addresses even with .eh_frame, so for pac-ret only the chains by
    # construction are checked
    pac = 'pac-ret' in args.cflags
    if pac:
        log('  pac-ret: the oracle cannot strip PACs; checking chains by construction only')
    wrong_native = []
    for mode in modes:
        if not pac:
            check_chains(ck, 'oracle', oracle[mode], names, mode, leaf_in_libc=not args.static)
            compare_runs(ck, 'plugin', oracle[mode], plugin[mode], mode)
            check_bt_text(ck, 'plugin', plugin[mode], oracle[mode])
        else:
            check_bt_text(ck, 'plugin', plugin[mode])
        check_chains(ck, 'plugin', plugin[mode], names, mode, leaf_in_libc=not args.static)
        if pac:
            sel = threads_by_role(native[mode])[0]
            lead = [] if args.static else ['*libc']
            if match_chain(sel, lead + names[mode]) is not None:
                wrong_native.append(mode)
        elif differs(oracle[mode], native[mode]):
            wrong_native.append(mode)
        sel, _ = threads_by_role(plugin[mode])
        # SFrame does not say where a caller's x30 went: frames the plugin
        # unwound show it <not saved>, but x29 known
        ours = [f for i, f in enumerate(sel) if i > 0 and f['solib'] == sel[i - 1]['solib'] and
                sel[i - 1]['type'] == 'normal' and not is_libc(sel[i - 1])]
        ck.check(ours and all(f['lr'] is None and f['fp'] is not None for f in ours),
                 'plugin %s: x30 <not saved> and x29 known in the %d frames it unwound' % (
                     mode, len(ours)))
    log('  without the plugin, wrong: %s' % ', '.join(wrong_native))
    ck.check(len(wrong_native) >= 1,
             'native: without the plugin at least one chain is wrong (%s)' % wrong_native)
    check_steps(ck, 'plugin', oracle['step'], plugin['step'], names, names_only=pac)
    check_steps(ck, 'native', oracle['step'], native['step'], names, negative=True,
                names_only=pac)
    ck.done()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('case', choices=['chain', 'features', 'aarch64'])
    ap.add_argument('--plugin', required=True, help='build/debugger/sfunwind_gdb.py')
    ap.add_argument('--progs', required=True, help='tests/debugger/progs')
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--lang', choices=['c', 'c++'], default='c')
    ap.add_argument('--cflags', default='-O2 -fomit-frame-pointer')
    ap.add_argument('--pie', action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument('--static', action='store_true')
    ap.add_argument('--stripped', action='store_true')
    args = ap.parse_args()
    args.arch = 'aarch64' if args.case == 'aarch64' else 'x86_64'
    # a run directory of its own: two `meson test` at once must not share files
    top = os.path.abspath(args.workdir)
    os.makedirs(top, exist_ok=True)
    args.workdir = os.path.join(top, 'run.%d' % os.getpid())
    args.plugin = os.path.abspath(args.plugin)
    try:
        gdb = 'gdb-multiarch' if args.case == 'aarch64' else 'gdb'
        if not shutil.which(gdb):
            raise Skip('needs %s' % gdb)
        p = subprocess.run([gdb, '-batch', '-nx', '-ex', 'python print(gdb.VERSION)'],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
        m = re.match(r'(\d+)\.', p.stdout.strip())
        if p.returncode or not m:
            raise Skip('needs %s with Python' % gdb)
        if int(m.group(1)) < 13:
            raise Skip('needs gdb 13 or later, %s is %s' % (gdb, p.stdout.strip()))
        {'chain': case_chain, 'features': case_features, 'aarch64': case_aarch64}[args.case](args)
    except Skip as e:
        log('SKIP: %s' % e)
        shutil.rmtree(args.workdir, ignore_errors=True)
        return SKIP
    except Failure as e:
        log('FAIL: %s (files kept in %s)' % (e, args.workdir))
        return 1
    shutil.rmtree(args.workdir, ignore_errors=True)
    log('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main())
