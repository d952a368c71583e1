#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Unwinding through libc with rows derived from .eh_frame, against gdb's own unwinder.

Debian's libc has no .sframe and no frame pointers: every frame in it is
found through the rows libsfunwind derives from its .eh_frame. One run
covers one case of tests/progs/libc_paths.c (compiled here with
-Wa,--gsframe, so the program's own frames come from .sframe):

  qsort   the hot function is a qsort comparator, called from libc's
          recursive merge sort
  memcpy  the time goes in libc's memcpy and memmove
  signal  the time goes in a signal handler, below the kernel's signal frame
          and libc's __restore_rt, raised from libc's pthread_kill

and checks, with sfu-unwind-snapshot --no-fp-fallback:

  1. snapshots taken in place (in the comparator, in the handler): the
     unwind reaches _start (outermost frame), the frames in the program are
     exactly the recorded chain, and each frame says where it came from:
     the caller of a libc frame from eh_frame, of the program's from sframe;
  2. SIGPROF samples, frame 0 anywhere, as a profiler takes them: at least
     99% must do the same (a sample may lack the function it interrupted in
     its prologue or epilogue, or stand in a PLT stub, as in self_unwind.py);
     samples in the vDSO (clock_gettime), which is not read, are counted
     apart;
  3. gdb (tests/integration/gdb_snapshot.py) stops the same program at many
     points -- each comparator call, each instruction of qsort's merge code,
     of memcpy and memmove, of raise and pthread_kill up to the signal, the
     handler below the signal frame -- and writes a snapshot and its own
     backtrace at each: the frames must be the same addresses, frame for
     frame, to the entry point.

With --arch aarch64 (qsort and memcpy) the program is cross-compiled and run
under qemu-user with the AArch64 libc, and checked the same way without gdb
(the signal case is not: AArch64's sigreturn trampoline is in the vDSO,
which is not read).

--case resolve steps through ld.so's lazy binding instead: _dl_runtime_resolve
keeps its CFA in rbx while it realigns the stack, which the row model cannot
follow, so there the unwind must stop with "unusable unwind info" after a
prefix of gdb's frames; everywhere else the frames must be gdb's.

Exit status: 0 pass, 1 fail, 77 skip (no gas --gsframe, no cross compiler or
qemu; no gdb skips the gdb part, and --case resolve whole).
"""
import argparse
import os
import platform
import re
import shlex
import shutil
import struct
import subprocess
import sys

SKIP = 77
SAMPLES = 300
MIN_PASS = 0.99
# The program's functions that push themselves on the shadow stack.
PROG_FUNCS = {'main', 'work', 'sample_for_a_while', 'cmp_ints', 'sort_many', 'copy_many',
              'busy_in_handler', 'on_usr1', 'signal_loop'}
FRAME_RE = re.compile(r'^#(\d+) 0x([0-9a-f]+) (pc|ra) (\S+) (\S+?)(?:\+0x([0-9a-f]+))? (\S+)$')


class Failure(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def run(cmd, cwd=None, env=None, check=True):
    log('$ ' + ' '.join(shlex.quote(c) for c in cmd))
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, errors='replace')
    if check and p.returncode != 0:
        raise Failure(f'{os.path.basename(cmd[0])} exited with {p.returncode}:\n{p.stdout[-3000:]}')
    return p


def parse_chain(path):
    """The expected chain recorded in a snapshot (tests/progs/snapshot.h)."""
    data = open(path, 'rb').read()
    _, _, _, _, _, _, _, slen = struct.unpack_from('<8sI6Q', data)
    off = 60 + slen
    (mlen,) = struct.unpack_from('<Q', data, off)
    off += 8 + mlen
    (clen,) = struct.unpack_from('<Q', data, off)
    chain = data[off + 8:off + 8 + clen]
    return chain.decode().split('\0')[:-1] if chain else []


def unwind(tool, path):
    """([(addr, kind, source, symbol, module)], stop reason) from sfu-unwind-snapshot."""
    p = subprocess.run([tool, '--no-fp-fallback', path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, errors='replace')
    if p.returncode != 0:
        raise Failure(f'{path}: sfu-unwind-snapshot exited with {p.returncode}:\n{p.stdout}')
    frames, stop = [], None
    for line in p.stdout.splitlines():
        m = FRAME_RE.match(line)
        if m:
            frames.append((int(m.group(2), 16), m.group(3), m.group(4), m.group(5), m.group(7)))
        elif line.startswith('stop: '):
            stop = line[6:]
    return frames, stop, p.stdout


def check_chain(frames, stop, chain, text):
    """A snapshot or sample unwound to the entry point through exactly the recorded frames."""
    if stop != 'outermost frame':
        raise Failure(f'stopped with "{stop}", not at the entry point\n{text}')
    if not chain or chain[-1] != 'main':
        raise Failure(f'recorded chain {chain} does not end in main')
    if any(f[2] == 'fp' for f in frames):
        raise Failure(f'a frame came from frame pointers\n{text}')
    # a frame's source is the table of the frame below it: libc's derived rows, the program's .sframe
    for callee, frame in zip(frames, frames[1:]):
        want = 'eh_frame' if callee[4] == 'libc.so.6' else \
            'sframe' if callee[4] == 'prog' and callee[3] in PROG_FUNCS else None
        if want and frame[2] != want:
            raise Failure(f'the caller of {callee[3]} ({callee[4]}) came from {frame[2]}, '
                          f'not {want}\n{text}')
    prog = [f[3] for f in frames if f[4] == 'prog']
    # the program's frames past main are _start's: the C runtime, not recorded
    if 'main' in prog:
        prog = prog[:prog.index('main') + 1]
    front = 1 if frames[0][4] != 'prog' or frames[0][3] in PROG_FUNCS else 2
    for skip in range(front + 1):
        if prog[skip:] == chain:
            return
    raise Failure(f'frames in the program {prog}, recorded chain {chain}\n{text}')


ARCHES = {
    'x86_64': dict(cc='gcc', run=[]),
    'aarch64': dict(cc='aarch64-linux-gnu-gcc',
                    run=['qemu-aarch64', '-L', '/usr/aarch64-linux-gnu']),
}


def compile_prog(args, work):
    arch = ARCHES[args.arch]
    cflags = ['-O2', '-Wa,--gsframe', '-Wall', '-Wextra', '-fPIE', '-I', args.progs]
    for tool in (arch['cc'], *arch['run'][:1]):
        if not shutil.which(tool):
            log(f'SKIP: {tool} not found')
            sys.exit(SKIP)
    probe = subprocess.run([arch['cc'], '-Wa,--gsframe', '-x', 'c', '-c', '-o', os.devnull, '-'],
                           input='int f(void) { return 0; }\n', text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if probe.returncode:
        log(f'SKIP: {arch["cc"]} -Wa,--gsframe does not assemble:\n{probe.stdout}')
        sys.exit(SKIP)
    run([arch['cc'], *cflags, '-pie', '-o', 'prog', os.path.join(args.progs, 'libc_paths.c'),
         os.path.join(args.progs, 'snapshot.c')], cwd=work)


def libc_has_no_sframe():
    """The point of the test: the libc unwound through must have no .sframe."""
    out = subprocess.run(['ldd', '/bin/true'], stdout=subprocess.PIPE, text=True).stdout
    m = re.search(r'libc\.so\.6 => (\S+)', out)
    if not m:
        return True
    secs = subprocess.run(['readelf', '-SW', m.group(1)], stdout=subprocess.PIPE,
                          text=True).stdout
    return '.sframe' not in secs


def check_snapshots(args, work):
    snapdir = os.path.join(work, 'snap')
    run([*ARCHES[args.arch]['run'], os.path.join(work, 'prog'), snapdir, args.case,
         str(SAMPLES)], cwd=work)
    names = sorted(f[:-5] for f in os.listdir(snapdir) if f.endswith('.snap'))
    in_place = [n for n in names if '-snap-' in n]
    samples = [n for n in names if '-sample-' in n]
    if args.case != 'memcpy' and len(in_place) != 4:
        raise Failure(f'{len(in_place)} snapshots in place, expected 4')
    for name in in_place:
        path = os.path.join(snapdir, name + '.snap')
        frames, stop, text = unwind(args.tool, path)
        check_chain(frames, stop, parse_chain(path), text)
        if not any(f[4] == 'libc.so.6' for f in frames[1:]):
            raise Failure(f'{name}: no frame in libc\n{text}')
        if args.case == 'signal' and not any(f[1] == 'pc' for f in frames[1:]):
            raise Failure(f'{name}: no frame below a signal frame\n{text}')
        log(f'ok: {name}: {len(frames)} frames to the entry point')

    failed, vdso, in_libc, through_libc = [], 0, 0, 0
    for name in samples:
        path = os.path.join(snapdir, name + '.snap')
        frames, stop, text = unwind(args.tool, path)
        if frames and frames[0][4] in ('[vdso]', '?') and stop == 'no unwind info':
            vdso += 1
            continue
        try:
            check_chain(frames, stop, parse_chain(path), text)
        except Failure as e:
            failed.append(name)
            if len(failed) <= 5:
                log(f'FAIL: {name}: {e}')
            continue
        in_libc += frames[0][4] == 'libc.so.6'
        through_libc += any(f[4] == 'libc.so.6' for f in frames[:-3])
    checked = len(samples) - vdso
    ok = checked - len(failed)
    log(f'{len(samples)} samples: {ok} of {checked} reach the entry point through the '
        f'recorded frames ({100.0 * ok / max(checked, 1):.1f}%), {in_libc} with frame 0 in '
        f'libc, {through_libc} through libc, {vdso} in the vDSO (not checked)')
    if checked < SAMPLES // 2:
        raise Failure(f'only {checked} samples checked, need {SAMPLES // 2} (libc_paths takes '
                      f'{SAMPLES}, a ms of CPU time apart, for 30 s of the clock at most)')
    if ok < MIN_PASS * checked:
        raise Failure(f'{len(failed)} samples failed: {" ".join(failed[:20])}')
    if args.case == 'memcpy' and in_libc < checked // 2:
        raise Failure(f'only {in_libc} of {checked} samples in libc: memcpy is not the hot spot')
    if through_libc < checked // 2:
        raise Failure(f'only {through_libc} of {checked} samples have a frame in libc')


def check_gdb(args, work):
    gdbdir = os.path.join(work, 'gdb')
    os.makedirs(gdbdir)
    env = dict(os.environ, SFU_GDB_OUT=gdbdir, SFU_GDB_PLAN=args.case,
               SFU_GDB_STEPS=str(args.steps))
    mode = 'memcpy' if args.case == 'resolve' else args.case
    p = run(['gdb', '-nx', '-batch', '-x', os.path.join(args.here, 'gdb_snapshot.py'),
             '--args', os.path.join(work, 'prog'), gdbdir, mode, 'gdb'], cwd=work, env=env,
            check=False)
    if 'gdb_snapshot:' in p.stdout or p.returncode != 0:
        raise Failure(f'gdb did not complete its plan (exit {p.returncode})')
    stops = sorted(f[:-5] for f in os.listdir(gdbdir) if f.endswith('.snap'))
    if len(stops) < 3:
        raise Failure(f'gdb stopped only {len(stops)} times')
    equal, short, bad = 0, 0, []
    for name in stops:
        want = [int(line, 16) for line in open(os.path.join(gdbdir, name + '.gdb'))
                if line.startswith('0x')]
        frames, stop, text = unwind(args.tool, os.path.join(gdbdir, name + '.snap'))
        got = [f[0] for f in frames]
        if got == want:
            equal += 1
            continue
        # only where the row model cannot follow the CFA (ld.so's resolver) may we stop early
        if args.case == 'resolve' and stop == 'unusable unwind info' and \
                got == want[:len(got)] and len(got) < len(want):
            short += 1
            continue
        bad.append(name)
        if len(bad) <= 5:
            log(f'FAIL: {name}: gdb {[hex(a) for a in want]}\n{text}')
    log(f'gdb: {len(stops)} stops, {equal} with the same frames, {short} stopped early on '
        f'unusable rows, {len(bad)} differ')
    if bad:
        raise Failure(f'{len(bad)} gdb stops differ: {" ".join(bad[:20])}')
    if args.case == 'resolve' and not short:
        raise Failure('no stop in the resolver: the plan did not reach it')


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--tool', required=True, help='sfu-unwind-snapshot')
    ap.add_argument('--progs', required=True, help='tests/progs')
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', choices=['qsort', 'memcpy', 'signal', 'resolve'], required=True)
    ap.add_argument('--arch', choices=sorted(ARCHES), default='x86_64')
    ap.add_argument('--steps', type=int, default=400, help='single-stepped gdb stops')
    args = ap.parse_args()
    args.tool = os.path.abspath(args.tool)
    args.progs = os.path.abspath(args.progs)
    args.here = os.path.dirname(os.path.abspath(__file__))
    if platform.machine() != 'x86_64':
        log('SKIP: the libc paths are checked on an x86-64 host')
        return SKIP
    if args.arch == 'aarch64' and args.case not in ('qsort', 'memcpy'):
        log(f'SKIP: {args.case} is checked on x86-64 only')
        return SKIP
    work = os.path.abspath(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, 'snap'))
    # gdb runs the program natively
    have_gdb = shutil.which('gdb') is not None and args.arch == 'x86_64'
    if args.case == 'resolve' and not have_gdb:
        log('SKIP: no gdb')
        return SKIP
    try:
        if not libc_has_no_sframe():
            log('note: this libc has .sframe; its frames come from there, not .eh_frame')
        compile_prog(args, work)
        if args.case != 'resolve':
            check_snapshots(args, work)
        if have_gdb:
            check_gdb(args, work)
        elif args.arch != 'x86_64':
            log('note: gdb compares natively, on x86-64 only')
        else:
            log('note: no gdb, the comparison with its backtraces is skipped')
    except Failure as e:
        log(f'FAIL: {e}')
        return 1
    log('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main())
