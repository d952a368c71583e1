# SPDX-License-Identifier: BSD-2-Clause
"""gdb script: stop a program at many points and record, at each, gdb's backtrace and a snapshot.

Loaded with `gdb -batch -x gdb_snapshot.py --args PROG ...` by libc_unwind.py.
At each stop it writes, into $SFU_GDB_OUT:

  NAME.snap  the registers and stack in the format of tests/progs/snapshot.h
             (no expected chain), for sfu-unwind-snapshot to unwind;
  NAME.gdb   the pc of every frame gdb's own unwinder finds (frame 0 first,
             one hex number a line), past main and the entry point, then
             "stop: REASON" with gdb's reason for the last frame. Inline
             and tail-call frames, which gdb makes up from debug information
             (libc6-dbg), have no stack frame of their own and are left out.

gdb unwinds with the same .eh_frame (and its own heuristics where there is
none), so the two frame lists must be equal. $SFU_GDB_PLAN picks the stops:

  qsort   every call of cmp_ints until 8, then each instruction executed
          after the 8th (into and through qsort's merge code in libc)
  memcpy  each instruction from copy_many's first call of memcpy on,
          through the PLT stub and libc's implementations of memcpy and
          memmove (bound at start, LD_BIND_NOW)
  resolve each instruction from copy_many's entry on, through ld.so's lazy
          binding of memcpy (_dl_runtime_resolve, _dl_fixup)
  signal  busy_in_handler's entry (below the signal frame) a few times, and
          each instruction of raise and pthread_kill up to the signal

$SFU_GDB_STEPS bounds the single-stepped stops (default 400).
"""
import os
import struct

import gdb

OUT = os.environ['SFU_GDB_OUT']
PLAN = os.environ['SFU_GDB_PLAN']
STEPS = int(os.environ.get('SFU_GDB_STEPS', '400'))

count = 0


def stack_top(maps, sp):
    for line in maps.splitlines():
        rng = line.split()[0]
        start, end = (int(x, 16) for x in rng.split('-'))
        if start <= sp < end:
            return end
    raise gdb.GdbError(f'sp {sp:#x} is in no mapping')


def reg(name):
    return int(gdb.parse_and_eval(f'(unsigned long){name}'))


def dump(why):
    """Write NAME.snap and NAME.gdb for the current stop."""
    global count
    inf = gdb.selected_inferior()
    pcs, f = [], gdb.newest_frame()
    last = f
    while f is not None and len(pcs) < 256:
        # inlined calls and tail calls are frames to gdb when it has debug
        # information (libc6-dbg), not frames on the stack
        if f.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
            pcs.append(f.pc())
        last = f
        f = f.older()
    reason = gdb.frame_stop_reason_string(last.unwind_stop_reason())
    pc, sp, fp = reg('$pc'), reg('$sp'), reg('$rbp')
    with open(f'/proc/{inf.pid}/maps') as m:
        maps = m.read()
    top = stack_top(maps, sp)
    stack = bytes(inf.read_memory(sp, top - sp))
    name = f'{PLAN}-{count:04d}'
    count += 1
    maps_b = maps.encode()
    with open(os.path.join(OUT, name + '.snap'), 'wb') as out:
        out.write(b'SFUSNAP1' + struct.pack('<I6Q', 0, pc, sp, fp, 0, sp, len(stack)))
        out.write(stack)
        out.write(struct.pack('<Q', len(maps_b)) + maps_b)
        out.write(struct.pack('<Q', 0))
    with open(os.path.join(OUT, name + '.gdb'), 'w') as out:
        out.write(f'# {why}\n')
        for p in pcs:
            out.write(f'{p:#x}\n')
        out.write(f'stop: {reason}\n')


def in_libc():
    pc = reg('$pc')
    so = gdb.solib_name(pc)
    return so is not None and 'libc.so' in so


def step_and_dump(n, why, keep=lambda: True):
    """Single-step n instructions, dumping where keep() says."""
    seen = set()
    for _ in range(n):
        gdb.execute('stepi', to_string=True)
        if not gdb.selected_inferior().threads():
            return
        pc = reg('$pc')
        if pc in seen or not keep():
            continue
        seen.add(pc)
        dump(why)


def main():
    gdb.execute('set pagination off')
    gdb.execute('set confirm off')
    gdb.execute('set debuginfod enabled off', to_string=True)
    gdb.execute('set backtrace past-main on')
    gdb.execute('set backtrace past-entry on')
    gdb.execute('handle SIGUSR1 nostop noprint pass', to_string=True)
    if PLAN == 'qsort':
        gdb.execute('break cmp_ints', to_string=True)
        gdb.execute('run', to_string=True)
        for _ in range(8):
            dump('cmp_ints entry')
            gdb.execute('continue', to_string=True)
        gdb.execute('delete', to_string=True)
        step_and_dump(STEPS, 'qsort stepping')
    elif PLAN == 'memcpy':
        # bound at start: the first call goes straight into libc, not the resolver
        gdb.execute('set environment LD_BIND_NOW 1')
        gdb.execute('break copy_many', to_string=True)
        gdb.execute('run', to_string=True)
        gdb.execute('delete', to_string=True)
        # to the first call of memcpy, then through it
        for _ in range(200):
            gdb.execute('stepi', to_string=True)
            if in_libc():
                break
        dump('memcpy entry')
        step_and_dump(STEPS, 'memcpy stepping')
    elif PLAN == 'resolve':
        # the first call of memcpy goes through ld.so's lazy binding
        gdb.execute('break copy_many', to_string=True)
        gdb.execute('run', to_string=True)
        gdb.execute('delete', to_string=True)
        step_and_dump(STEPS, 'lazy binding stepping')
    elif PLAN == 'signal':
        gdb.execute('break busy_in_handler', to_string=True)
        gdb.execute('run', to_string=True)
        for _ in range(2):
            dump('busy_in_handler entry')
            gdb.execute('continue', to_string=True)
        dump('busy_in_handler entry')
        gdb.execute('delete', to_string=True)
        gdb.execute('break raise', to_string=True)
        gdb.execute('continue', to_string=True)
        gdb.execute('delete', to_string=True)
        step_and_dump(STEPS, 'raise stepping')
    else:
        raise gdb.GdbError(f'unknown plan {PLAN}')
    gdb.execute('kill', to_string=True)


try:
    main()
except gdb.error as e:
    print(f'gdb_snapshot: {e}')
    gdb.execute('quit 1')
