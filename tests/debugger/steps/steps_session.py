# SPDX-License-Identifier: BSD-2-Clause
"""One GDB session of the stepping tests: runs a list of commands, records the frames after each.

Loaded by steps_test.py as `gdb -batch -nx [-x sfunwind_gdb.py] -x steps_session.py`
with $SFU_STEPS_PLAN naming a JSON plan: {program, args, out, commands, and
for a remote session qemu, the qemu-user command to run the program under,
whose gdb stub GDB connects to}. Each command is {cmd, dump, threads}: it
runs as typed at the prompt (from_tty, its output, stop and frame lines
included, between markers on stdout), and one JSON line per command goes to
the plan's `out` (its error, and with `dump` the frames GDB then unwinds),
flushed at once, so that a session GDB aborts in still says how far it got.
Nothing here checks: the driver compares.
"""

import json
import os
import socket
import subprocess
import time

import gdb

PLAN = json.load(open(os.environ['SFU_STEPS_PLAN']))
MAX_FRAMES = 64
FRAME_TYPES = {gdb.NORMAL_FRAME: 'normal', gdb.DUMMY_FRAME: 'dummy', gdb.INLINE_FRAME: 'inline',
               gdb.TAILCALL_FRAME: 'tailcall', gdb.SIGTRAMP_FRAME: 'sigtramp',
               gdb.ARCH_FRAME: 'arch', gdb.SENTINEL_FRAME: 'sentinel'}


def reg(frame, name):
    try:
        v = frame.read_register(name)
        if v.is_optimized_out:
            return None
        return int(v) & 0xffffffffffffffff
    except (gdb.error, ValueError):
        return None


def frames():
    """The selected thread's frames, newest first: what `bt` walks."""
    out = []
    try:
        f = gdb.newest_frame()
    except gdb.error as e:
        return {'frames': [], 'stop': str(e)}
    stop = None
    while f is not None and len(out) < MAX_FRAMES:
        try:
            name = f.name()
        except gdb.error:
            name = None
        out.append({'pc': f.pc(), 'sp': reg(f, 'rsp'), 'type': FRAME_TYPES.get(f.type(), '?'),
                    'name': name, 'solib': gdb.solib_name(f.pc())})
        try:
            f = f.older()
        except gdb.error as e:
            stop = str(e)
            break
    try:
        selected = gdb.selected_frame().level()
    except gdb.error:
        selected = None
    return {'frames': out, 'stop': stop, 'selected': selected}


def dump(command):
    rec = {'cmd': command['cmd']}
    thread = gdb.selected_thread()
    if thread is None or not thread.is_valid():
        rec['running'] = False
        return rec
    rec['running'] = True
    rec['thread'] = thread.num
    rec.update(frames())
    if command.get('threads'):
        rec['threads'] = {}
        level = rec.get('selected')
        for t in sorted(gdb.selected_inferior().threads(), key=lambda t: t.num):
            if t.num == thread.num:
                continue
            t.switch()
            rec['threads'][str(t.num)] = frames()['frames']
        thread.switch()
        if level:
            gdb.execute('frame %d' % level, to_string=True)
    return rec


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def start_qemu():
    """The program under qemu-user's gdb stub, GDB connected to it (a remote
    target). It dies with GDB's process group."""
    for _ in range(5):
        port = free_port()
        # without the plan's name, whose length differs by session: in the guest's
        # environment it moved the stack by 16 bytes in some sessions and not others
        env = {k: v for k, v in os.environ.items() if k != 'SFU_STEPS_PLAN'}
        proc = subprocess.Popen(PLAN['qemu'] + ['-g', str(port), PLAN['program']] +
                                PLAN.get('args', '').split(), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        for _ in range(100):
            time.sleep(0.05)
            if proc.poll() is not None:
                break
            try:
                gdb.execute('target remote 127.0.0.1:%d' % port, to_string=True)
                return proc
            except gdb.error:
                continue
        proc.kill()
        proc.wait(timeout=10)
    raise gdb.GdbError('qemu did not start')


def main():
    # the plan's name in the environment must not move the inferior's stack
    for cmd in ['unset environment SFU_STEPS_PLAN', 'set confirm off', 'set pagination off',
                'set width 0', 'set height 0', 'file ' + PLAN['program'],
                'set args ' + PLAN.get('args', '')]:
        gdb.execute(cmd, to_string=True)
    if PLAN.get('qemu'):
        start_qemu()
    with open(PLAN['out'], 'w') as out:
        for i, command in enumerate(PLAN['commands']):
            gdb.flush()
            gdb.write('@@@BEGIN %d\n' % i)
            error = None
            try:
                gdb.execute(command['cmd'], from_tty=True)
            except gdb.error as e:
                error = str(e)
                gdb.write('error: %s\n' % e)
            gdb.flush()
            gdb.write('@@@END %d\n' % i)
            gdb.flush()
            rec = dump(command) if command.get('dump') else {'cmd': command['cmd']}
            rec['index'] = i
            if error:
                rec['error'] = error
            out.write(json.dumps(rec) + '\n')
            out.flush()
        out.write(json.dumps({'done': True}) + '\n')


try:
    main()
except Exception as e:  # the driver sees no 'done' line and this
    gdb.write('steps_session.py: %s: %s\n' % (type(e).__name__, e), gdb.STDERR)
