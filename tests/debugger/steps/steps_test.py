#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The debugger front ends under every way GDB and lldb move and ask about frames.

tests/debugger/progs/steps.c (inlined frames, a tail call, a signal handler,
two threads) and steps_throw.cc (a throw from an inlined function) are
compiled at test time with -O2 -g -Wa,--gsframe, unstripped, PIE or not, in
two copies of one link (same code at the same addresses, paths of the same
length, so that with GDB's address randomisation off the stacks are the same):

  eh/  .eh_frame and .sframe: GDB alone and lldb alone unwind it right (the oracle)
  sf/  .eh_frame and .eh_frame_hdr removed: .sframe is the only unwind table

Case gdb: one scripted GDB session (steps_session.py) per program, copy and
front end, each running the same commands, as typed at the prompt (GDB_STEPS):
break, stepi N (N up to 41, from a breakpoint on a function whose first
instructions are inlined code: the way GDB 13 aborted with the Python
unwinder before 02ddf03), nexti, step, next, finish (from real and inlined
frames, out of a signal handler into its trampoline), until, advance,
up/down, frame function, bt full, frame apply all, an inferior call, a
hardware watchpoint, a tail call, a stop in a signal handler, next and stepi
over a signal, a second thread (thread N), start, reverse-stepi,
reverse-next and reverse-finish under `record full`, catch throw; after each
stop, the frames GDB unwinds. Sessions: GDB alone on eh/ (the oracle, which
must also stop where the plan says) and on sf/ (which must be wrong
somewhere, so that the comparison can fail); the Python unwinder
(sfunwind_gdb.py) and the JIT plugin (jit-reader-load) on eh/ and sf/.
Every session with a front end must end normally (exit 0, every command
run), print no internal-error, no "Recursive internal problem", no Python
exception, and give each command the oracle's outcome: the same error if
any, the same frames (name, pc, sp and type of each frame of the selected
thread, and of the other thread at the thread stops) and the same selected
frame. GDB makes tail-call frames from the DWARF call sites of the frames
its own DWARF unwinder unwinds; where a front end unwinds the frame below
one (sf/), it cannot be there, so on sf/ the program's tail-call frames are
left out of both sides (counted and logged).

Case remote: the same for the inlined part and the tail call
(GDB_REMOTE_STEPS) with the program under qemu-x86_64's gdb stub, a remote
target, for GDB alone and the Python unwinder (the JIT plugin does not work
on remote targets). Before the unwinder left target commands out of its
sniffer while GDB handles a stop (_mid_stop), the first `stepi` there left
GDB taking the thread as running for the rest of the session.

Case lldb: lldb-16 sessions on the same programs (LLDB_STEPS: thread
step-inst -c N, step-inst-over, step-over, step-in, step-out, until, frame
select, up/down, a watchpoint, breakpoints in the signal handler, the thread
and __cxa_throw). After each stop, steps_lldb.py's `steps-dump` records
lldb's own frames (SB API) and the output of `sframe bt all` (the LLDB
command, sfunwind_lldb.py). On sf/, `sframe bt all` must give, thread by
thread, the real frames (pc, module, function) lldb alone gives on eh/ at the
same stop (lldb's inlined frames folded into their real frame, its
artificial tail-call frames left out and counted: `sframe bt` walks real
frames only); on eh/, in a session of its own (the copies share a build ID,
which libsfunwind's module cache takes as one file), the same, and the same
as lldb's own frames in that session. The command must never fail and lldb
must run each session to its end.

Exit status 0 pass, 1 fail, 77 skip (the message says what is missing).
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SESSION = os.path.join(HERE, 'steps_session.py')
SESSION_TIMEOUT = 60
BUILD_TIMEOUT = 60
# name: (source, compiler, libraries, arguments)
PROGRAMS = {'steps': ('steps.c', 'gcc', ['-lpthread'], '6'),
            'steps_throw': ('steps_throw.cc', 'g++', [], '')}
BAD_TEXT = ('internal-error', 'Recursive internal problem', 'Python Exception',
            'A problem internal to GDB', 'Traceback (most recent call last)')


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def log(msg=''):
    print(msg, flush=True)


def run(cmd, cwd=None, timeout=BUILD_TIMEOUT):
    log('$ ' + ' '.join(shlex.quote(c) for c in cmd))
    try:
        p = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, errors='replace',
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure('%s did not finish in %d s' % (cmd[0], timeout))
    if p.returncode:
        log(p.stdout)
        raise Failure('%s exited with %d' % (os.path.basename(cmd[0]), p.returncode))
    return p.stdout


_sessions = set()   # process groups of running debugger sessions


def _terminate(signum, _frame):
    """meson's timeout (SIGTERM) or ^C: the sessions run in their own process
    groups, out of meson's reach, so they end here."""
    for pgid in list(_sessions):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    sys.exit(128 + signum)


def run_session(cmd, cwd, out_path, env=None, timeout=SESSION_TIMEOUT):
    """Run a debugger session in its own process group, killed (debuggee
    included) however it ends. @return (exit status, output)."""
    log('$ ' + ' '.join(shlex.quote(c) for c in cmd))
    t0 = time.monotonic()
    with open(out_path, 'w') as out:
        p = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                             stderr=subprocess.STDOUT, env=env, start_new_session=True)
    _sessions.add(p.pid)
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise Failure('%s did not finish in %d s (output in %s)' % (
            os.path.basename(cmd[0]), timeout, out_path))
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _sessions.discard(p.pid)
    log('  (%.1f s, exit %d, output in %s)' % (time.monotonic() - t0, p.returncode,
                                                os.path.basename(out_path)))
    with open(out_path, errors='replace') as f:
        return p.returncode, f.read()


# --- the programs ---

def build(args):
    """eh/ and sf/ copies of each program: @return {program: {copy: path}}."""
    for tool in ('gcc', 'g++', 'objcopy', 'readelf'):
        if not shutil.which(tool):
            raise Skip('needs %s' % tool)
    probe = os.path.join(args.workdir, 'probe.o')
    p = subprocess.run(['gcc', '-c', '-x', 'c', '-Wa,--gsframe', '-o', probe, '-'],
                       input='int f(void) { return 0; }\n', text=True, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT)
    if p.returncode:
        raise Skip('the assembler cannot emit SFrame (--gsframe, binutils >= 2.40): ' +
                   p.stdout.strip())
    pie = ['-fPIE', '-pie'] if args.pie else ['-fno-PIE', '-no-pie']
    out = {}
    for copy in ('eh', 'sf'):
        os.makedirs(os.path.join(args.workdir, copy), exist_ok=True)
    for name, (src, cc, libs, _) in PROGRAMS.items():
        eh = os.path.join(args.workdir, 'eh', name)
        sf = os.path.join(args.workdir, 'sf', name)
        run([cc, '-O2', '-g', '-Wa,--gsframe'] + pie +
            [os.path.join(args.progs, src), '-o', eh] + libs)
        run(['objcopy', '--remove-section=.eh_frame', '--remove-section=.eh_frame_hdr', eh, sf])
        for copy, path in (('eh', eh), ('sf', sf)):
            secs = set(re.findall(r'\]\s+(\.\S+)', run(['readelf', '-SW', path])))
            if '.sframe' not in secs or ('.eh_frame' in secs) != (copy == 'eh'):
                raise Failure('%s: sections %s' % (path, sorted(secs)))
        out[name] = {'eh': eh, 'sf': sf}
    return out


# --- GDB ---

# (command, what to record after it: '' nothing, 'd' the selected thread's
# frames, 't' every thread's; the function the oracle's selected frame must
# be in, so that a compiler that moves the stops is noticed, None for any)
GDB_STEPS = [
    ('handle SIGUSR1 nostop noprint pass', '', None),
    ('break work', '', None),
    # work, first call: stepi N through its inlined frames
    ('run', 'd', 'work'),
    ('stepi', 'd', None),
    ('stepi 2', 'd', None),
    ('stepi 5', 'd', None),
    ('bt', '', None),
    ('stepi 41', 'd', None),
    ('nexti', 'd', None),
    ('nexti 3', 'd', None),
    ('step', 'd', None),
    ('next', 'd', None),
    ('step 3', 'd', None),
    ('info frame', '', None),
    ('up', 'd', None),
    ('info frame', '', None),
    ('down', 'd', None),
    ('frame function work', 'd', 'work'),
    ('bt full', '', None),
    ('frame apply all -q p $pc', '', None),
    ('finish', 'd', 'run_inline'),
    ('call step_leaf(3)', 'd', 'run_inline'),
    # second call: into the inlined frames with step, finish out of one
    ('continue', 'd', 'work'),
    ('step', 'd', 'mix_outer'),
    ('stepi 4', 'd', 'mix_inner'),
    ('up', 'd', 'mix_outer'),
    ('finish', 'd', 'work'),
    ('until', 'd', None),
    ('until', 'd', None),
    ('next 3', 'd', None),
    ('stepi 41', 'd', None),
    ('bt', '', None),
    # a watchpoint the inlined code triggers (third call)
    ('delete', '', None),
    ('watch watched', '', None),
    ('continue', 'd', 'mix_outer'),
    ('bt', '', None),
    ('continue', 'd', 'mix_outer'),
    ('delete', '', None),
    # advance stops where it is told or where the selected frame returns
    ('advance step_leaf', 'd', None),
    ('advance run_tail', 'd', 'main'),
    ('advance run_tail', 'd', 'run_tail'),
    # a tail call: GDB alone shows tail_caller as a tail-call frame
    ('break tail_callee', '', None),
    ('continue', 'd', 'tail_callee'),
    ('bt', '', None),
    ('frame function run_tail', 'd', 'run_tail'),
    ('frame 0', 'd', 'tail_callee'),
    ('finish', 'd', 'run_tail'),
    ('delete', '', None),
    # a signal handler, out of it through the trampoline, next over a signal
    ('break handler_leaf', '', None),
    ('continue', 'd', 'handler_leaf'),
    ('bt', '', None),
    ('frame function victim', 'd', 'victim'),
    ('info frame', '', None),
    ('frame 0', 'd', 'handler_leaf'),
    ('finish', 'd', 'handler_mid'),
    ('finish', 'd', 'on_signal'),
    ('finish', 'd', None),
    ('bt', '', None),
    ('stepi 2', 'd', 'victim'),
    ('finish', 'd', 'run_signal'),
    ('delete', '', None),
    ('break victim', '', None),
    ('continue', 'd', 'victim'),
    ('next', 'd', 'victim'),
    ('next', 'd', 'victim'),
    ('next', 'd', 'run_signal'),
    ('continue', 'd', 'victim'),
    ('stepi 9', 'd', None),
    ('bt', '', None),
    ('stepi 3', 'd', None),
    ('delete', '', None),
    # two threads
    ('break thread_leaf', '', None),
    ('continue', 't', 'thread_leaf'),
    ('thread apply all bt', '', None),
    ('thread 1', 't', None),
    ('frame function run_thread', 'd', 'run_thread'),
    ('thread 2', 't', 'thread_leaf'),
    ('up', 'd', 'thread_mid'),
    ('frame function thread_start', 'd', 'thread_start'),
    ('down', 'd', 'thread_mid'),
    ('frame 0', 'd', 'thread_leaf'),
    ('next', 't', 'thread_leaf'),
    ('finish', 't', 'thread_mid'),
    ('delete', '', None),
    ('continue', '', None),
    # again from the start
    ('start', 'd', 'main'),
    ('next', 'd', 'main'),
    ('step', 'd', 'run_inline'),
    # backwards, under process record
    ('record full', '', None),
    ('stepi 41', 'd', None),
    ('reverse-stepi 20', 'd', None),
    ('reverse-next', 'd', None),
    ('reverse-finish', 'd', None),
    ('record stop', '', None),
    ('kill', '', None),
]

# Under qemu-user's gdb stub (a remote target: GDB reads no /proc of the
# process, the Python unwinder takes the modules from GDB's objfiles): the
# inlined part and the tail call.
GDB_REMOTE_STEPS = ([('break work', '', None), ('continue', 'd', 'work')] +
                    GDB_STEPS[GDB_STEPS.index(('run', 'd', 'work')) + 1:
                              GDB_STEPS.index(('watch watched', '', None))] +
                    [('break tail_callee', '', None), ('continue', 'd', 'tail_callee'),
                     ('bt', '', None), ('frame function run_tail', 'd', 'run_tail'),
                     ('frame 0', 'd', 'tail_callee'), ('finish', 'd', 'run_tail'),
                     ('kill', '', None)])

GDB_THROW_STEPS = [
    ('catch throw', '', None),
    ('run', 'd', '__cxa_throw'),
    ('bt', '', None),
    ('up', 'd', 'steps::check'),
    ('up', 'd', 'steps::thrower'),
    ('info frame', '', None),
    ('frame function steps::run_throw', 'd', 'steps::run_throw'),
    ('down', 'd', 'steps::thrower'),
    ('frame 0', 'd', '__cxa_throw'),
    ('stepi 3', 'd', None),
    ('kill', '', None),
]


def gdb_session(args, name, label, program, steps, front, qemu=None):
    """One GDB session (under @qemu's gdb stub, a remote target, when given);
    @return (its records, one per command, what went wrong, its output)."""
    out = os.path.join(args.workdir, label + '.jsonl')
    plan = {'program': program, 'out': out, 'args': PROGRAMS[name][3], 'qemu': qemu,
            'commands': [{'cmd': c, 'dump': bool(f), 'threads': f == 't'}
                         for c, f, _ in steps]}
    plan_path = os.path.join(args.workdir, label + '.plan.json')
    with open(plan_path, 'w') as f:
        json.dump(plan, f, indent=1)
    if os.path.exists(out):
        os.unlink(out)
    cmd = [args.gdb, '-batch', '-nx']
    if front == 'py':
        cmd += ['-x', args.plugin]
    elif front == 'jit':
        cmd += ['-ex', 'jit-reader-load ' + args.jit]
    cmd += ['-x', SESSION]
    env = dict(os.environ, SFU_STEPS_PLAN=plan_path)
    env.pop('DEBUGINFOD_URLS', None)
    rc, text = run_session(cmd, args.workdir, os.path.join(args.workdir, label + '.log'), env)
    records, done = [], False
    if os.path.exists(out):
        with open(out) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    break   # the line GDB was writing when it died
                if rec.get('done'):
                    done = True
                else:
                    records.append(rec)
    problems = []
    bad = [x for x in text.splitlines() if any(b in x for b in BAD_TEXT)]
    if bad:
        problems.append('GDB printed:\n      ' + '\n      '.join(bad[:6]))
    if rc != 0:
        problems.append('GDB exited with status %d%s' % (
            rc, ' (%s)' % signal.Signals(-rc).name if rc < 0 else
            ' (killed by %s)' % signal.Signals(rc - 128).name if 128 < rc < 160 else ''))
    if not done:
        problems.append('the session stopped after %d of %d commands' % (
            len(records), len(steps)))
    if 'steps_session.py:' in text:
        problems.append('the session script failed: ' + text[text.index('steps_session.py:'):]
                        .splitlines()[0])
    return records, problems, text


def frame_key(f):
    return (f['name'], f['pc'], f['sp'], f['type'])


def syscall_restart(opc, gpc, in_lib):
    """Whether two stops of the same thread differ only in the way a
    blocking system call was caught: the kernel leaves the pc on the
    2-byte syscall instruction (to restart it) or after it, whichever it was
    doing when the debugger stopped the thread (main's thread, in
    futex(2), at the thread stops)."""
    return in_lib and opc is not None and gpc is not None and abs(opc - gpc) == 2


def frame_keys(oracle, got):
    """The keys of @oracle's and @got's frames, with @got's innermost pc
    taken as the oracle's where they differ by a syscall restart."""
    ko = [frame_key(f) for f in oracle]
    kg = [frame_key(f) for f in got]
    if oracle and got and syscall_restart(oracle[0]['pc'], got[0]['pc'],
                                          bool(oracle[0]['solib'])):
        top = got[0]['pc']
        kg = [(k[0], oracle[0]['pc']) + k[2:] if f['pc'] == top else k
              for k, f in zip(kg, got)]
    return ko, kg


def fmt_frames(frames):
    return ' <- '.join('%s@0x%x%s' % (f['name'] or '??', f['pc'],
                                      '' if f['type'] == 'normal' else '[%s]' % f['type'])
                       for f in frames)


def name_is(name, want):
    name = name or ''
    return name.startswith(want[:-1]) if want.endswith('*') else name == want


def selected_frame(rec):
    level = rec.get('selected')
    if level is None or not 0 <= level < len(rec['frames']):
        return None
    return rec['frames'][level]


def check_oracle(label, records, steps):
    """The oracle ran every command without an error, and stopped where the
    plan says: the plan still means what it says with this compiler."""
    why = []
    for rec, (cmd, what, want) in zip(records, steps):
        where = 'command %d `%s`' % (rec['index'], cmd)
        if rec.get('error'):
            why.append('%s: %s' % (where, rec['error']))
        elif what and not rec.get('running'):
            why.append('%s: no process' % where)
        elif want and not name_is((selected_frame(rec) or {}).get('name'), want):
            why.append('%s: selected frame in %s, the plan wants %s\n      %s' % (
                where, (selected_frame(rec) or {}).get('name'), want,
                fmt_frames(rec['frames'])))
    if len(records) != len(steps):
        why.append('%d of %d commands ran' % (len(records), len(steps)))
    if why:
        raise Failure('the oracle (%s) does not follow the plan:\n  %s' % (
            label, '\n  '.join(why)))


class Tally:
    def __init__(self):
        self.stops = 0
        self.frames = 0
        self.dropped = 0
        self.mismatches = []
        self.errors = []


def strip_tailcalls(frames, tally):
    """@frames without the tail-call frames in the program (not libc's,
    which GDB unwinds itself in every session)."""
    kept = [f for f in frames if f['type'] != 'tailcall' or f['solib']]
    if tally is not None:
        tally.dropped += len(frames) - len(kept)
    return kept


def compare_records(label, oracle, got, tally, drop_tailcalls):
    """Every command's outcome in @got against @oracle's: the same error, the
    same frames at each recorded stop, the same frame selected. Mismatches go
    to @tally."""
    if len(got) != len(oracle):
        tally.mismatches.append('%s: %d commands ran, %d in the oracle' % (
            label, len(got), len(oracle)))
    for o, g in zip(oracle, got):
        where = '%s, command %d `%s`' % (label, o['index'], o['cmd'])
        if o.get('error') != g.get('error') or o.get('running') != g.get('running'):
            tally.mismatches.append('%s: error %r, process %s; the oracle: error %r, process %s'
                                    % (where, g.get('error'), g.get('running'), o.get('error'),
                                       o.get('running')))
            continue
        if not o.get('running'):
            continue
        tally.stops += 1
        pairs = [('thread %s' % o['thread'], o['frames'], g['frames'])]
        for num, frames in sorted(o.get('threads', {}).items()):
            pairs.append(('thread %s' % num, frames, g.get('threads', {}).get(num, [])))
        for what, of, gf in pairs:
            if drop_tailcalls:
                of, gf = strip_tailcalls(of, tally), strip_tailcalls(gf, None)
            tally.frames += len(of)
            ko, kg = frame_keys(of, gf)
            if ko != kg:
                i = next((i for i, (a, b) in enumerate(zip(ko, kg)) if a != b),
                         min(len(ko), len(kg)))
                tally.mismatches.append(
                    '%s, %s: first difference at frame #%d\n      oracle %s\n      got    %s'
                    % (where, what, i, fmt_frames(of), fmt_frames(gf)))
        so, sg = selected_frame(o), selected_frame(g)
        if g.get('thread') != o.get('thread') or (so and frame_key(so)) != (sg and frame_key(sg)):
            tally.mismatches.append('%s: thread %s, frame %s selected; the oracle: thread %s, '
                                    'frame %s' % (where, g.get('thread'),
                                                  sg and fmt_frames([sg]), o.get('thread'),
                                                  so and fmt_frames([so])))


def case_gdb(args, remote=False):
    args.gdb = shutil.which('gdb')
    if not args.gdb:
        raise Skip('needs gdb (13 or later, with Python)')
    p = subprocess.run([args.gdb, '-batch', '-nx', '-ex', 'python print(gdb.VERSION)'],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    m = re.match(r'(\d+)\.', p.stdout.strip())
    if p.returncode or not m:
        raise Skip('needs gdb with Python')
    if int(m.group(1)) < 13:
        raise Skip('needs gdb 13 or later, gdb is %s' % p.stdout.strip())
    fronts = args.fronts.split(',')
    qemu = None
    cases = (('steps', GDB_STEPS), ('steps_throw', GDB_THROW_STEPS))
    if remote:
        if not shutil.which('qemu-x86_64'):
            raise Skip('needs qemu-x86_64 (Debian package qemu-user)')
        # the JIT plugin works on local processes and cores only
        fronts = [f for f in fronts if f != 'jit']
        qemu = [shutil.which('qemu-x86_64')]
        cases = (('steps', GDB_REMOTE_STEPS),)
    if 'jit' in fronts and not (args.jit and os.path.exists(args.jit)):
        raise Skip('needs the JIT plugin (sfunwind-gdb-jit.so: the build found no '
                   'gdb/jit-reader.h)')
    progs = build(args)
    tally = Tally()
    for name, steps in cases:
        oracle, problems, _ = gdb_session(args, name, name + '-eh-gdb', progs[name]['eh'], steps,
                                          None, qemu)
        if problems:
            raise Failure('the oracle (GDB alone on eh/%s) did not run: %s' % (
                name, '; '.join(problems)))
        check_oracle(name + '-eh-gdb', oracle, steps)
        log('  oracle eh/%s: %d commands, %d stops' % (
            name, len(oracle), sum(1 for r in oracle if r.get('running') and 'frames' in r)))
        for copy in ('eh', 'sf'):
            for front in fronts:
                label = '%s-%s-%s' % (name, copy, front)
                got, problems, _ = gdb_session(args, name, label, progs[name][copy], steps,
                                               front, qemu)
                for why in problems:
                    tally.errors.append('%s: %s' % (label, why))
                before = len(tally.mismatches)
                compare_records(label, oracle, got, tally, drop_tailcalls=copy == 'sf')
                log('  %s: %d commands, %d mismatches%s' % (
                    label, len(got), len(tally.mismatches) - before,
                    '' if not problems else ', ' + '; '.join(p.splitlines()[0]
                                                             for p in problems)))
        # the same stops without a front end must come out wrong
        label = name + '-sf-gdb'
        try:
            got, problems, _ = gdb_session(args, name, label, progs[name]['sf'], steps, None,
                                           qemu)
        except Failure as e:    # GDB alone lost, not what this test is about
            got, problems = [], [str(e)]
        negative = Tally()
        compare_records(label, oracle, got, negative, drop_tailcalls=True)
        log('  %s (GDB alone on .sframe only, must differ): %d differences%s' % (
            label, len(negative.mismatches),
            '' if not problems else ' (%s)' % '; '.join(p.splitlines()[0] for p in problems)))
        if not negative.mismatches:
            tally.errors.append('%s: GDB alone on the SFrame-only copy stops and unwinds as the '
                                'oracle: the comparison cannot fail' % label)
    return report(tally)


# --- LLDB ---

# (command, 'd' to record the stop after it, the function the oracle's
# selected thread's innermost frame must be in, None for any)
LLDB_STEPS = [
    ('process handle SIGUSR1 -s false -n false -p true', '', None),
    ('breakpoint set -n work', '', None),
    ('process launch -- 6', 'd', 'mix_outer'),
    ('thread step-inst', 'd', None),
    ('thread step-inst -c 2', 'd', None),
    ('thread step-inst -c 5', 'd', None),
    ('thread step-inst -c 41', 'd', None),
    ('thread step-inst-over', 'd', None),
    ('thread step-inst-over -c 3', 'd', None),
    ('thread step-over', 'd', None),
    ('thread step-in', 'd', None),
    ('thread step-in', 'd', None),
    ('frame select 1', 'd', None),
    ('up', 'd', None),
    ('down', 'd', None),
    ('frame select 0', 'd', None),
    ('thread step-out', 'd', None),
    ('continue', 'd', 'mix_outer'),
    ('thread step-out', 'd', 'work'),
    ('thread until {until_line}', 'd', 'work'),
    ('thread step-out', 'd', 'run_inline'),
    ('breakpoint delete', '', None),
    ('watchpoint set variable watched', '', None),
    ('continue', 'd', None),
    ('continue', 'd', None),
    ('watchpoint delete', '', None),
    ('breakpoint set -n tail_callee', '', None),
    ('continue', 'd', 'tail_callee'),
    ('thread step-out', 'd', 'run_tail'),
    ('breakpoint set -n handler_leaf', '', None),
    ('continue', 'd', 'handler_leaf'),
    ('frame select 4', 'd', 'handler_leaf'),
    ('frame select 0', '', None),
    ('thread step-out', 'd', 'handler_mid'),
    ('thread step-out', 'd', 'on_signal'),
    ('thread step-inst -c 4', 'd', None),
    ('breakpoint delete', '', None),
    ('breakpoint set -n thread_leaf', '', None),
    ('continue', 'd', 'thread_leaf'),
    ('thread select 1', 'd', None),
    ('thread select 2', 'd', 'thread_leaf'),
    ('frame select 2', 'd', 'thread_leaf'),
    ('frame select 0', '', None),
    ('thread step-over', 'd', 'thread_leaf'),
    ('thread step-out', 'd', 'thread_mid'),
    ('breakpoint delete', '', None),
    ('continue', 'd', None),
]

LLDB_THROW_STEPS = [
    ('breakpoint set -n __cxa_throw', '', None),
    ('process launch', 'd', '__cxa_throw'),
    ('frame select 2', 'd', '__cxa_throw'),
    ('frame select 0', '', None),
    ('thread step-inst -c 3', 'd', None),
    ('process kill', '', None),
]

# The session's last command leaves lldb at once: lldb-16's own teardown
# sometimes aborts on a corrupted heap (see tests/debugger/lldb/lldb_test.py).
LLDB_END = 'script import ctypes, os; ctypes.CDLL(None).fflush(None); os._exit(0)'
SFRAME_FRAME_RE = re.compile(r'^\s*\*?\s*frame #(\d+): (0x[0-9a-fA-F]+)(?: (.*))?$')


def source_line(progs, src, text):
    with open(os.path.join(progs, src)) as f:
        for n, line in enumerate(f, 1):
            if line.strip() == text:
                return n
    raise Failure('%s has no line %r' % (src, text))


def parse_sframe_bt(text):
    """{thread number: [{pc, module, name}]} of `sframe bt all`'s output."""
    threads, cur = {}, None
    for line in text.splitlines():
        m = re.match(r'^[* ] thread #(\d+)', line)
        if m:
            cur = threads.setdefault(m.group(1), [])
            continue
        m = SFRAME_FRAME_RE.match(line)
        if not m or cur is None:
            continue
        where = m.group(3) or ''
        module = name = None
        if '`' in where:
            module, rest = where.split('`', 1)
            n = re.match(r'(.*?) \+ \d+(?: at |$)', rest)
            name = n.group(1) if n else rest
        elif where:
            module = re.split(r'[+ ]', where, 1)[0]
        cur.append({'pc': int(m.group(2), 16), 'module': module, 'name': name})
    return threads


def lldb_session(args, label, program, steps, plugin):
    """One lldb-16 session; @return (records, problems)."""
    out = os.path.join(args.workdir, label + '.jsonl')
    if os.path.exists(out):
        os.unlink(out)
    lines = ['settings set auto-confirm true',
             'command script import ' + os.path.join(HERE, 'steps_lldb.py'),
             'script steps_lldb.OUT = %r' % out]
    if plugin:
        lines.append('command script import ' + args.plugin)
    lines.append('target create ' + program)
    until = source_line(args.progs, 'steps.c', 'return r;')
    for cmd, what, _ in steps:
        lines.append(cmd.format(until_line=until))
        if what:
            lines.append('steps-dump' + (' sframe' if plugin else ''))
    lines.append(LLDB_END)
    path = os.path.join(args.workdir, label + '.lldb')
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    # -O: a failing command must not end the sourced file
    rc, text = run_session([args.lldb, '-x', '-b', '-O',
                            'settings set interpreter.stop-command-source-on-error false',
                            '-s', path], args.workdir, os.path.join(args.workdir, label + '.log'))
    records = []
    if os.path.exists(out):
        with open(out) as f:
            records = [json.loads(x) for x in f if x.strip()]
    problems = []
    echoed = [x[7:].strip() for x in text.splitlines() if x.startswith('(lldb) ')]
    if rc != 0 or not echoed or echoed[-1] != LLDB_END:
        problems.append('lldb (exit status %d) did not run the session to its end' % rc)
    if 'Traceback (most recent call last)' in text:
        problems.append('a Python traceback in lldb\'s output')
    for cmd, block in lldb_blocks(text):
        if cmd.startswith(('command script import', 'script ')) and 'error' in block:
            problems.append('`%s`: %s' % (cmd, block.strip()))
    for rec in records:
        sf = rec.get('sframe')
        if sf and (not sf['ok'] or sf['error']):
            problems.append('sframe bt all failed: %s' % (sf['error'].strip() or '(no message)'))
    want = sum(1 for _, what, _ in steps if what)
    if len(records) != want:
        problems.append('%d of %d stops recorded' % (len(records), want))
    return records, problems


def lldb_blocks(text):
    """[(command, its output)] in the order lldb echoed them."""
    out = []
    for line in text.splitlines():
        if line.startswith('(lldb) '):
            out.append([line[7:].strip(), ''])
        elif out:
            out[-1][1] += line + '\n'
    return out


def check_lldb_oracle(label, records, steps):
    why = []
    dumped = [(cmd, want) for cmd, what, want in steps if what]
    for n, (rec, (cmd, want)) in enumerate(zip(records, dumped)):
        # the last stop is the process's exit
        if not rec.get('running') and n != len(dumped) - 1:
            why.append('`%s`: no process' % cmd)
            continue
        if want and rec.get('running'):
            frames = rec['threads'][str(rec['thread'])]['frames']
            got = frames[0]['innermost'] if frames else None
            if not name_is(got, want) and not name_is(got, want + '(*'):
                why.append('`%s`: stopped in %s, the plan wants %s' % (cmd, got, want))
    if len(records) != len(dumped):
        why.append('%d of %d stops recorded' % (len(records), len(dumped)))
    if why:
        raise Failure('the oracle (%s) does not follow the plan:\n  %s' % (
            label, '\n  '.join(why)))


def lldb_key(f):
    return (f['pc'], f['module'], f['name'])


def compare_lldb(label, oracle, got, tally):
    """`sframe bt all` of each stop of @got against lldb's own frames of
    @oracle's same stop (the same thread, the same frame 0)."""
    for i, (o, g) in enumerate(zip(oracle, got)):
        where = '%s, stop %d after `%s`' % (label, i, o.get('cmd'))
        if o.get('running') != g.get('running'):
            tally.mismatches.append('%s: process %s, the oracle\'s %s' % (
                where, g.get('running'), o.get('running')))
            continue
        if not o.get('running'):
            continue
        sframe = parse_sframe_bt(g['sframe']['output'])
        tally.stops += 1
        for num, ot in sorted(o['threads'].items()):
            of = [lldb_key(f) for f in ot['frames']]
            gf = [lldb_key(f) for f in sframe.get(num, [])]
            if of and gf and syscall_restart(of[0][0], gf[0][0], of[0][1] not in PROGRAMS):
                gf[0] = of[0][:1] + gf[0][1:]
            tally.frames += len(of)
            tally.dropped += ot.get('artificial', 0)
            if of != gf:
                i = next((i for i, (a, b) in enumerate(zip(of, gf)) if a != b),
                         min(len(of), len(gf)))
                tally.mismatches.append(
                    '%s, thread %s: first difference at frame #%d\n      lldb   %s\n'
                    '      sframe %s' % (where, num, i, fmt_lldb(of), fmt_lldb(gf)))


def stop_pc(rec):
    """The pc where the selected thread stopped, None without a process."""
    if not rec.get('running'):
        return None
    frames = rec['threads'].get(str(rec['thread']), {}).get('frames') or [{}]
    return frames[0].get('pc')


def fmt_lldb(frames):
    return ' <- '.join('%s`%s@0x%x' % (m, n, pc) for pc, m, n in frames)


def case_lldb(args):
    lldb = shutil.which(args.lldb)
    if not lldb:
        raise Skip('needs %s (Debian package lldb-16)' % args.lldb)
    args.lldb = lldb
    p = subprocess.run([lldb, '-x', '-b', '-o', 'script import lldb; print("py", 1 + 1)'],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    if 'py 2' not in p.stdout:
        raise Skip('%s has no Python scripting (needs python3-lldb-16)' % lldb)
    progs = build(args)
    tally = Tally()
    for name, steps in (('steps', LLDB_STEPS), ('steps_throw', LLDB_THROW_STEPS)):
        # eh/ without the command is the oracle; the copies of one link share
        # a build ID, which libsfunwind's module cache takes as one file, so
        # eh/ and sf/ never share a session with the command
        oracle, problems = lldb_session(args, name + '-eh-lldb', progs[name]['eh'], steps,
                                        False)
        if problems:
            raise Failure('the oracle (lldb alone on eh/%s) did not run: %s' % (
                name, '; '.join(problems)))
        check_lldb_oracle(name + '-eh-lldb', oracle, steps)
        cmds = [c for c, what, _ in steps if what]
        for rec, cmd in zip(oracle, cmds):
            rec['cmd'] = cmd
        for copy in ('eh', 'sf'):
            label = '%s-%s-sframe' % (name, copy)
            got, problems = lldb_session(args, label, progs[name][copy], steps, True)
            for why in problems:
                tally.errors.append('%s: %s' % (label, why))
            for rec, cmd in zip(got, cmds):
                rec['cmd'] = cmd
            before = len(tally.mismatches)
            # lldb moves by its own unwinder: on sf/ a stop it reaches
            # differently is lldb's, not the command's
            same, moved = [], []
            for o, g in zip(oracle, got):
                if stop_pc(o) != stop_pc(g):
                    moved.append(g.get('cmd'))
                else:
                    same.append((o, g))
            if moved:
                log('  %s: lldb stopped elsewhere than on eh/ after %s: not compared' % (
                    label, ', '.join('`%s`' % c for c in moved)))
                if copy == 'eh':
                    tally.mismatches.append('%s: the command changed where lldb stops (%s)'
                                            % (label, ', '.join(moved)))
            compare_lldb(label, [o for o, _ in same], [g for _, g in same], tally)
            # and the command against lldb's own frames in the same session
            if copy == 'eh':
                compare_lldb(label + ' (same session)', got, got, tally)
            log('  %s: %d stops, %d compared, %d mismatches' % (
                label, len(got), len(same), len(tally.mismatches) - before))
    return report(tally)


def report(tally):
    log('%d stops compared, %d frames, %d mismatches, %d session errors%s' % (
        tally.stops, tally.frames, len(tally.mismatches), len(tally.errors),
        ', %d tail-call frames left out on sf/' % tally.dropped if tally.dropped else ''))
    failures = tally.errors + tally.mismatches
    if failures:
        raise Failure('%d failures:\n  %s' % (len(failures), '\n  '.join(failures)))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--case', choices=['gdb', 'remote', 'lldb'], required=True)
    ap.add_argument('--plugin', help='build/debugger/sfunwind_gdb.py or sfunwind_lldb.py')
    ap.add_argument('--jit', default='', help='build/debugger/sfunwind-gdb-jit.so')
    ap.add_argument('--fronts', default='py,jit', help='GDB front ends: py, jit')
    ap.add_argument('--lldb', default='lldb-16')
    ap.add_argument('--progs', required=True, help='tests/debugger/progs')
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--pie', action=argparse.BooleanOptionalAction, default=True)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)
    # a run directory of its own: two `meson test` at once must not share files
    args.workdir = os.path.join(os.path.abspath(args.workdir), 'run.%d' % os.getpid())
    args.plugin = os.path.abspath(args.plugin) if args.plugin else None
    args.jit = os.path.abspath(args.jit) if args.jit else ''
    if os.uname().machine != 'x86_64':
        log('SKIP: the programs are x86-64 only (steps.c makes a syscall of its own)')
        return SKIP
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    t0 = time.monotonic()
    try:
        {'gdb': case_gdb, 'remote': lambda a: case_gdb(a, remote=True),
         'lldb': case_lldb}[args.case](args)
    except Skip as e:
        log('SKIP: %s' % e)
        shutil.rmtree(args.workdir, ignore_errors=True)
        return SKIP
    except Failure as e:
        log('FAIL: %s\n(files kept in %s)' % (e, args.workdir))
        return 1
    shutil.rmtree(args.workdir, ignore_errors=True)
    log('PASS (%.1f s)' % (time.monotonic() - t0))
    return 0


if __name__ == '__main__':
    sys.exit(main())
