# SPDX-License-Identifier: BSD-2-Clause
"""One GDB session of the GDB unwinder tests: runs a plan, writes what GDB saw.

Loaded by gdb_test.py with `gdb -batch -nx [-x sfunwind_gdb.py] -x session.py`
and $SFU_GDB_PLAN naming a JSON plan. Each run of the plan starts the program
(natively, or under qemu-user through `target remote`), or opens a core
file, or attaches to a pid; then it records, for every thread, each frame
GDB unwinds (pc, sp, frame pointer, type, name, shared library), the `bt`
text, the output of extra commands, and for a step run the frames at every
instruction of one call. Nothing here checks: the driver compares.
"""

import json
import os
import socket
import subprocess
import time

import gdb

PLAN = json.load(open(os.environ['SFU_GDB_PLAN']))
REGS = {'i386:x86-64': ('rip', 'rsp', 'rbp', None), 'aarch64': ('pc', 'sp', 'x29', 'x30')}
MAX_FRAMES = 400
MAX_STEPS = 3000
FRAME_TYPES = {gdb.NORMAL_FRAME: 'normal', gdb.DUMMY_FRAME: 'dummy', gdb.INLINE_FRAME: 'inline',
               gdb.TAILCALL_FRAME: 'tailcall', gdb.SIGTRAMP_FRAME: 'sigtramp',
               gdb.ARCH_FRAME: 'arch', gdb.SENTINEL_FRAME: 'sentinel'}

last_stop = {}


def on_stop(event):
    last_stop.clear()
    if isinstance(event, gdb.BreakpointEvent):
        last_stop['stop'] = 'breakpoint'
    elif isinstance(event, gdb.SignalEvent):
        last_stop['stop'] = event.stop_signal
    else:
        last_stop['stop'] = 'stop'


gdb.events.stop.connect(on_stop)


def ex(cmd):
    return gdb.execute(cmd, to_string=True)


def reg(frame, name):
    try:
        v = frame.read_register(name)
    except (gdb.error, ValueError):
        return None
    if v.is_optimized_out:
        return None
    try:
        return int(v) & 0xffffffffffffffff
    except gdb.error:
        return None


def regnames():
    return REGS[gdb.selected_inferior().architecture().name()]


def frames():
    """The selected thread's frames, newest first, as GDB unwinds them."""
    pcn, spn, fpn, lrn = regnames()
    out = []
    stop = None
    try:
        f = gdb.newest_frame()
    except gdb.error as e:
        return [], str(e)
    while f is not None and len(out) < MAX_FRAMES:
        try:
            pc = f.pc()
        except gdb.error as e:
            stop = str(e)
            break
        try:
            name = f.name()
        except gdb.error:
            name = None
        out.append({'level': f.level(), 'pc': pc, 'sp': reg(f, spn), 'fp': reg(f, fpn),
                    'type': FRAME_TYPES.get(f.type(), str(f.type())), 'name': name,
                    'solib': gdb.solib_name(pc)})
        if lrn:
            out[-1]['lr'] = reg(f, lrn)
        try:
            older = f.older()
        except gdb.error as e:
            stop = str(e)
            break
        if older is None:
            stop = gdb.frame_stop_reason_string(f.unwind_stop_reason())
        f = older
    return out, stop


def threads():
    inf = gdb.selected_inferior()
    sel = gdb.selected_thread()
    out = []
    for t in sorted(inf.threads(), key=lambda t: t.num):
        t.switch()
        fr, stop = frames()
        out.append({'num': t.num, 'selected': t == sel, 'frames': fr, 'stop_reason': stop})
    if sel is not None:
        sel.switch()
    return out


def resolve(name):
    """(start, end) of function @name, from the symbols of an unstripped program."""
    sym = gdb.lookup_global_symbol(name) or gdb.lookup_symbol(name)[0]
    if sym is None:
        sym = gdb.lookup_static_symbol(name)
    if sym is None:
        raise gdb.GdbError('no symbol ' + name)
    start = int(sym.value().address)
    block = gdb.block_for_pc(start)
    while block.function is None and block.superblock is not None:
        block = block.superblock
    return [block.start, block.end]


def step_through(run):
    """Stop at the entry of a call, stepi until it returns; frames at each pc."""
    spec = run['step']
    entry = spec.get('entry')
    if entry is None:
        entry = resolve(spec['entry_symbol'])[0]
    gdb.execute('tbreak *0x%x' % entry, to_string=True)
    gdb.execute('continue', to_string=True)
    newest = gdb.newest_frame()
    if newest.pc() != entry:
        raise gdb.GdbError('step: did not stop at 0x%x but at 0x%x' % (entry, newest.pc()))
    ret = spec.get('return_pc')
    if ret is None:
        ret = newest.older().pc()
    steps = []
    while len(steps) < MAX_STEPS:
        fr, stop = frames()
        steps.append({'frames': fr, 'stop_reason': stop})
        gdb.execute('stepi', to_string=True)
        if gdb.newest_frame().pc() == ret:
            break
    return {'steps': steps, 'return_pc': ret, 'entry': entry}


def record(run, result):
    if run.get('symbols'):
        syms = run['symbols']
        if isinstance(syms, list):
            syms = {n: n for n in syms}
        result['symbols'] = {k: resolve(n) for k, n in syms.items()}
    if run.get('step'):
        result.update(step_through(run))
    result['threads'] = threads()
    try:
        result['bt'] = ex('bt')
    except gdb.error as e:
        result['bt'] = 'error: %s' % e
    # Commands such as frame, up and finish print through GDB's stop and
    # frame printers, which to_string does not capture: their output goes to
    # GDB's stdout between markers the driver looks for.
    for i, cmd in enumerate(run.get('commands', [])):
        gdb.flush()
        gdb.write('@@@BEGIN %s %d\n' % (run['name'], i))
        try:
            gdb.execute(cmd, from_tty=True)
        except gdb.error as e:
            gdb.write('error: %s\n' % e)
        gdb.flush()
        gdb.write('@@@END\n')
        gdb.flush()
    result['commands'] = list(run.get('commands', []))
    if run.get('gcore'):
        ex('gcore ' + run['gcore'])


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def start_qemu(run):
    """qemu-user with its gdb stub on a free port; @return the Popen."""
    for _ in range(5):
        port = free_port()
        cmd = PLAN['qemu'] + ['-g', str(port), PLAN['program']] + run['args'].split()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        for _ in range(50):
            time.sleep(0.05)
            if proc.poll() is not None:
                break
            try:
                ex('target remote 127.0.0.1:%d' % port)
                return proc
            except gdb.error:
                continue
        proc.kill()
        proc.wait(timeout=10)
    raise gdb.GdbError('qemu did not start')


def one_run(run):
    result = {'name': run['name']}
    qemu = None
    if run.get('debug'):
        gdb.execute('set debug sframe-unwinder on')
    try:
        if PLAN.get('core'):
            ex('core-file ' + PLAN['core'])
        elif PLAN.get('attach'):
            ex('attach %d' % PLAN['attach'])
        elif PLAN.get('qemu'):
            qemu = start_qemu(run)
        if run.get('break'):
            ex('break ' + run['break'])
        if PLAN.get('qemu'):
            ex('continue')
        elif not PLAN.get('core') and not PLAN.get('attach'):
            ex('run ' + run['args'])
        result['stop'] = last_stop.get('stop')
        if run.get('break'):
            ex('delete')
        record(run, result)
    except gdb.error as e:
        result['error'] = str(e)
    finally:
        if run.get('debug'):
            gdb.execute('set debug sframe-unwinder off')
        if PLAN.get('attach'):
            try:
                ex('detach')
            except gdb.error:
                pass
        elif not PLAN.get('core'):
            try:
                ex('kill')
            except gdb.error:
                pass
        if qemu is not None:
            try:
                qemu.wait(timeout=10)
            except subprocess.TimeoutExpired:
                qemu.kill()
                qemu.wait(timeout=10)
    return result


def main():
    # the plan's name must not move the inferior's stack from session to session
    for cmd in ['unset environment SFU_GDB_PLAN', 'set breakpoint pending on',
                'set confirm off', 'set pagination off', 'set width 0', 'set height 0',
                'set print frame-arguments none', 'set print entry-values no'] + \
            PLAN.get('setup', []):
        gdb.execute(cmd)
    ex('file ' + PLAN['program'])
    results = [one_run(run) for run in PLAN['runs']]
    with open(PLAN['out'], 'w') as f:
        json.dump(results, f, indent=1)


try:
    main()
except Exception as e:  # the driver sees a missing result file and our message
    gdb.write('session.py: %s: %s\n' % (type(e).__name__, e), gdb.STDERR)
