#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Record and import under hostile conditions (issue 26), each case asserting what a user sees.

  disk-full      record on a tmpfs that fills: the summary's samples are the file's
                 (`sfprof dump` and `sfprof report` count the same), the rest are said
                 "N samples in FILE, M not written: disk full"
  sighup         SIGHUP to record alone: passed to the command, recording goes on until
                 the command exits, summary printed, file whole; a terminal that hangs up
                 (a pty's master closed): the command stops, the file is whole
  xray-build     import xray -m with another build of the program: refused (exit 1,
                 nothing written) for ids past the map and for compiler-rt's file name of
                 another program; --force imports it; each build's own trace is accepted
  xray-memory    report of a profile imported from a crafted trace (recursion 32768 deep,
                 a distinct stack per depth, each a few bytes of CBF `rep`): report's max
                 RSS stays bounded (it was 0.5 GB; 1 GB at 65536) and the cut stacks are said

Exit status 0 pass, 1 fail, 77 skip (not root, no mount namespace, no clang++-16).
"""

import argparse
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import time

SKIP = 77


class Failure(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def run(cmd, check=True, **kw):
    kw.setdefault('stdout', subprocess.PIPE)
    kw.setdefault('stderr', subprocess.PIPE)
    p = subprocess.run(cmd, text=True, errors='replace', **kw)
    if check and p.returncode:
        raise Failure(f'{cmd}: exit {p.returncode}: {p.stderr[-600:]}')
    return p


def expect(cond, msg):
    if not cond:
        raise Failure(msg)


def build_spin(args):
    out = os.path.join(args.workdir, 'spin')
    run(['cc', '-O1', '-fno-omit-frame-pointer', os.path.join(args.srcdir, 'spin.c'), '-o', out])
    return out


def file_counts(args, path):
    """(samples, lost) as `sfprof dump` and `sfprof report` read them."""
    d = run([args.sfprof, 'dump', '-i', path])
    m = re.search(r'^# (\d+) samples, (\d+) lost', d.stdout, re.M)
    expect(m, f'dump -i {path}: no "# N samples, M lost" line')
    r = run([args.sfprof, 'report', '-i', path, '--stdio'])
    m2 = re.search(r'^# Samples: (\d+)', r.stdout, re.M)
    expect(m2, f'report -i {path}: no "# Samples:" line')
    expect(int(m.group(1)) == int(m2.group(1)),
           f'dump says {m.group(1)} samples, report {m2.group(1)}')
    return int(m.group(1)), int(m.group(2))


def summary_counts(stderr):
    m = re.search(r'sfprof record: [\d.]+ s, (\d+) samples \((\d+) lost\)', stderr)
    expect(m, f'no summary line in: {stderr[-600:]}')
    return int(m.group(1)), int(m.group(2))


def case_disk_full(args):
    if os.geteuid():
        return SKIP
    spin = build_spin(args)
    mnt = os.path.join(args.workdir, 'mnt')
    os.makedirs(mnt, exist_ok=True)
    copy = os.path.join(args.workdir, 'full.data')
    if os.path.exists(copy):
        os.unlink(copy)
    # 2 MiB, of which about 48 KiB are left: the first blocks fit, a few seconds' do not
    script = ('mount -t tmpfs -o size=2m sfprof-hostile "$1" || exit 99; '
              'dd if=/dev/zero of="$1/filler" bs=4k count=500 2>/dev/null; '
              '"$2" record -F 20000 --no-buildid-cache -o "$1/x.data" -- "$4" 20; '
              'echo "rc=$?" >&2; cp "$1/x.data" "$3"')
    t0 = time.monotonic()
    p = run(['unshare', '-m', '--propagation', 'private', 'sh', '-c', script, 'sh', mnt,
             args.sfprof, copy, spin], check=False, timeout=60)
    wall = time.monotonic() - t0
    if 'rc=' not in p.stderr:
        log(f'no tmpfs in a mount namespace here: {p.stderr[-300:]}')
        return SKIP
    log(p.stderr.rstrip())
    expect('rc=1' in p.stderr, 'want exit 1 after a full disk')
    expect(wall < 30, f'the recording went on for {wall:.1f} s')
    samples, lost = summary_counts(p.stderr)
    m = re.search(r'(\d+) samples in \S+, (\d+) not written: disk full', p.stderr)
    expect(m, 'no "N samples in FILE, M not written: disk full" line')
    expect(int(m.group(1)) == samples, 'the two summary lines disagree')
    in_file, lost_in_file = file_counts(args, copy)
    log(f'summary: {samples} samples ({lost} lost), {m.group(2)} not written; '
        f'the file: {in_file} samples ({lost_in_file} lost)')
    expect(samples == in_file, f'summary says {samples} samples, the file holds {in_file}')
    expect(lost == lost_in_file, f'summary says {lost} lost, the file holds {lost_in_file}')
    expect(int(m.group(2)) > 0, 'nothing counted as not written')
    return 0


def check_whole(args, path, what):
    d = run([args.sfprof, 'dump', '-i', path], check=False)
    expect(d.returncode == 0, f'{what}: dump -i exits {d.returncode}: {d.stderr[-300:]}')
    r = run([args.sfprof, 'report', '-i', path, '--stdio'], check=False)
    expect(r.returncode == 0 and 'incomplete' not in r.stdout + r.stderr,
           f'{what}: report says the file is not whole: {r.stderr[-300:]}')
    return file_counts(args, path)


def case_sighup(args):
    if os.geteuid():
        return SKIP
    spin = build_spin(args)
    out = os.path.join(args.workdir, 'hup.data')
    # SIGHUP to sfprof alone: the command gets it (as from the terminal) and ends the recording
    p = subprocess.Popen([args.sfprof, 'record', '--no-buildid-cache', '-o', out, '--', spin,
                          '60'], stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (os.path.exists(out) and
                                               os.path.getsize(out) > 100):
        time.sleep(0.1)
    time.sleep(1)
    t0 = time.monotonic()
    os.kill(p.pid, signal.SIGHUP)
    try:
        err = p.communicate(timeout=30)[1]
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        raise Failure('SIGHUP: record still running 30 s later')
    log(err.rstrip())
    log(f'SIGHUP to record: exit {p.returncode} {time.monotonic() - t0:.2f} s later')
    expect(p.returncode == 0, f'SIGHUP: exit {p.returncode}')
    expect('SIGHUP: recording goes on' in err, 'SIGHUP: not said')
    samples, lost = summary_counts(err)
    in_file, lost_in_file = check_whole(args, out, 'SIGHUP')
    expect((samples, lost) == (in_file, lost_in_file),
           f'SIGHUP: summary {samples}/{lost}, file {in_file}/{lost_in_file}')

    # a terminal that hangs up: record on a pty as its session's controlling terminal
    out2 = os.path.join(args.workdir, 'hangup.data')
    if os.path.exists(out2):
        os.unlink(out2)
    pid, master = pty.fork()
    if pid == 0:
        os.execv(args.sfprof, [args.sfprof, 'record', '--no-buildid-cache', '-o', out2, '--',
                               spin, '60'])
    seen = b''
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and b'recording at' not in seen:
        try:
            seen += os.read(master, 4096)
        except OSError:
            break
    time.sleep(1.5)
    t0 = time.monotonic()
    os.close(master)	# the hangup: SIGHUP to the session's foreground group
    status = None
    while time.monotonic() < t0 + 30:
        wpid, st = os.waitpid(pid, os.WNOHANG)
        if wpid:
            status = st
            break
        time.sleep(0.1)
    if status is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise Failure('hangup: record still running 30 s later')
    log(f'hangup: record ended {time.monotonic() - t0:.2f} s later, status {status:#x}')
    expect(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0,
           f'hangup: record did not exit 0 (status {status:#x})')
    in_file, _ = check_whole(args, out2, 'hangup')
    expect(in_file > 0, 'hangup: no samples in the file')
    return 0


def xray_build(args, wide):
    out = os.path.join(args.workdir, f'prog{wide}')
    run(['clang++-16', '-O2', '-fxray-instrument', '-fxray-instruction-threshold=1',
         f'-DWIDE={wide}', os.path.join(args.srcdir, 'xray_builds.cc'), '-o', out])
    return out


def xray_trace(args, prog):
    """A trace with compiler-rt's default name, xray-log.NAME.XXXXXX, in the workdir."""
    name = os.path.basename(prog)
    for f in os.listdir(args.workdir):
        if f.startswith(f'xray-log.{name}.'):
            os.unlink(os.path.join(args.workdir, f))
    run([prog], cwd=args.workdir, env=dict(os.environ, XRAY_OPTIONS='patch_premain=false'),
        timeout=60)
    found = [f for f in os.listdir(args.workdir) if f.startswith(f'xray-log.{name}.')]
    expect(len(found) == 1, f'{prog}: want one trace, found {found}')
    return os.path.join(args.workdir, found[0])


def need_xray():
    return shutil.which('clang++-16') is not None


def case_xray_build(args):
    if not need_xray():
        return SKIP
    progs = [xray_build(args, w) for w in (0, 1)]
    traces = [xray_trace(args, p) for p in progs]
    for t, m in ((0, 0), (1, 1), (1, 0), (0, 1)):
        out = os.path.join(args.workdir, f'x{t}{m}.data')
        if os.path.exists(out):
            os.unlink(out)
        p = run([args.sfprof, 'import', 'xray', '-m', progs[m], '-o', out, traces[t]],
                check=False)
        log(f'trace of prog{t}, map of prog{m}: exit {p.returncode}')
        if t == m:
            expect(p.returncode == 0, f'own build refused: {p.stderr[-400:]}')
            continue
        log(p.stderr.rstrip())
        expect(p.returncode == 1, f'trace {t} map {m}: exit {p.returncode}, want 1')
        expect('not a trace of' in p.stderr and '--force' in p.stderr,
               f'trace {t} map {m}: no clear error')
        expect(not os.path.exists(out), f'trace {t} map {m}: a profile was written')
        if t == 1:
            expect(re.search(r'ids up to 7, the map has 4 functions', p.stderr),
                   'ids past the map not said')
        else:
            expect("called 'prog0', not 'prog1'" in p.stderr, 'the file name not said')
        f = run([args.sfprof, 'import', 'xray', '--force', '-m', progs[m], '-o', out,
                 traces[t]], check=False)
        expect(f.returncode == 0 and os.path.exists(out),
               f'trace {t} map {m}: --force refused: {f.stderr[-400:]}')
    return 0


def deep_trace(path, depth):
    """FDR version 5, one thread: function 1 entered @depth times, one tick apart, then left."""
    b = bytearray()
    b += (5).to_bytes(2, 'little') + (1).to_bytes(2, 'little') + bytes([3]) + bytes(3)
    b += (1000000000).to_bytes(8, 'little') + bytes(16)

    def meta(kind, payload):
        rec = bytes([kind << 1 | 1]) + payload
        return rec + b'\0' * (16 - len(rec))

    body = meta(0, (1).to_bytes(4, 'little'))                       # NewBuffer, tid 1
    body += meta(4, (1700000000).to_bytes(8, 'little') + bytes(4))  # WalltimeMarker
    body += meta(9, (4242).to_bytes(4, 'little'))                   # PID
    body += meta(2, bytes(2) + (1 << 20).to_bytes(8, 'little'))     # NewCPU, tsc
    enter = (0 << 1 | 1 << 4).to_bytes(4, 'little') + (1).to_bytes(4, 'little')
    leave = (1 << 1 | 1 << 4).to_bytes(4, 'little') + (1).to_bytes(4, 'little')
    body += enter * depth + leave * depth
    b += meta(7, len(body).to_bytes(8, 'little')) + body           # BufferExtents
    with open(path, 'wb') as f:
        f.write(b)


def case_xray_memory(args):
    if not need_xray():
        return SKIP
    prog = xray_build(args, 0)
    tr = os.path.join(args.workdir, 'deep.xray')
    deep_trace(tr, 32768)
    data = os.path.join(args.workdir, 'deep.data')
    run([args.sfprof, 'import', 'xray', '--force', '-m', prog, '-o', data, tr])
    log(f'profile: {os.path.getsize(data)} bytes')
    t0 = time.monotonic()
    p = subprocess.Popen([args.sfprof, 'report', '-i', data, '--stdio'],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = b''
    while True:
        chunk = p.stdout.read(65536)
        if not chunk:
            break
        out += chunk
    _, status, ru = os.wait4(p.pid, 0)
    text = out.decode(errors='replace')
    wall = time.monotonic() - t0
    log(f'report: max RSS {ru.ru_maxrss} KiB, {wall:.1f} s, status {status:#x}')
    expect(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, 'report failed')
    # 0.5 GB before the bound; after: 64 MiB of frames, and 64 bytes per byte of stacks
    expect(ru.ru_maxrss < 300 * 1024, f'report held {ru.ru_maxrss} KiB')
    expect(re.search(r'^# Cut stacks: \d+ samples', text, re.M), 'the cut stacks not said')
    expect(re.search(r'^# Samples: 32768 ', text, re.M), 'samples missing')
    return 0


CASES = {'disk-full': case_disk_full, 'sighup': case_sighup, 'xray-build': case_xray_build,
         'xray-memory': case_xray_memory}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--srcdir', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', required=True, choices=sorted(CASES))
    args = ap.parse_args()
    args.sfprof = os.path.abspath(args.sfprof)
    os.makedirs(args.workdir, exist_ok=True)
    try:
        rc = CASES[args.case](args)
    except (Failure, subprocess.TimeoutExpired) as e:
        log(f'FAIL: {e}')
        return 1
    log('SKIP' if rc == SKIP else 'PASS')
    return rc


if __name__ == '__main__':
    sys.exit(main())
