#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Archives as outside input (issue 26): `sfprof report -i ARCHIVE` of crafted archives.

Each archive is some kilobytes whose members unpack to up to a GiB (craft.py:
zstd RLE blocks). Every run is bounded in time and memory (its own rusage:
max RSS under 200 MB), and TMPDIR, a directory of the test's, is empty after it.

Cases:
  kallsyms-line  a kallsyms member of one 1 GiB line: refused at its header,
                 saying so; a --kallsyms file of a 1 GiB line (sparse): read
                 64 MiB at most, names nothing, exit 0.
  long-line      a kallsyms member of one 48 MiB line, then a good line: the
                 long line skipped unheld (max RSS under 48 MB), the kernel
                 frame named by the good one.
  zeros          a binary of 1 GiB of zeros, a profile of 1 GiB of zeros:
                 refused at their first bytes (not ELF, not a profile).
  tmpfs          TMPDIR an 8 MiB tmpfs (private mount namespace): an ELF
                 member of 16 MiB refused for want of room, saying how much
                 is free; a small archive read there all the same.
  rules          members named ../x, /x, a symbolic link, a hard link, a
                 member twice, a cut archive: refused or never written
                 outside; nothing left.
"""

import argparse
import io
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import craft  # noqa: E402

SKIP = 77
MAX_RSS_KB = 200 * 1024
TIMEOUT = 20
BUILD_ID = '0123456789abcdef0123456789abcdef01234567'


class Ctx:
    def __init__(self, args):
        self.sfprof = args.sfprof
        self.crafted_profile = args.crafted_profile
        self.workdir = args.workdir
        shutil.rmtree(self.workdir, ignore_errors=True)
        os.makedirs(self.workdir)
        self.tmp = self.path('tmp')
        os.mkdir(self.tmp)
        self.fails = []
        self.profile = self.path('p.data')
        subprocess.run([self.crafted_profile, self.profile, '/usr/bin/true', BUILD_ID, '1000',
                        'comm', 'comm2', 'cmd', f'{craft.KADDR + 0x10:x}', '10,20', '30'],
                       check=True, timeout=TIMEOUT)

    def path(self, *parts):
        return os.path.join(self.workdir, *parts)

    def expect(self, ok, what):
        if not ok:
            self.fails.append(what)
            print(f'FAIL: {what}', flush=True)

    def craft(self, shape, size):
        out = self.path(f'{shape}-{size}.tar.zst')
        craft.write(out, craft.shapes(self.profile, size)[shape])
        return out

    def run(self, args, tmpdir=None, wrap=()):
        """sfprof ARGS, bounded: (exit status, stdout, stderr, seconds, max RSS in KB)."""
        out, err = self.path('stdout'), self.path('stderr')
        env = dict(os.environ, TMPDIR=tmpdir or self.tmp)
        t0 = time.monotonic()
        with open(out, 'wb') as o, open(err, 'wb') as e:
            p = subprocess.Popen(list(wrap) + [self.sfprof] + args, stdout=o, stderr=e,
                                 stdin=subprocess.DEVNULL, env=env, start_new_session=True)
            while True:
                pid, status, ru = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() - t0 > TIMEOUT:
                    os.killpg(p.pid, signal.SIGKILL)
                    pid, status, ru = os.wait4(p.pid, 0)
                    self.fails.append(f'{args}: killed after {TIMEOUT} s')
                    break
                time.sleep(0.02)
        p.returncode = os.waitstatus_to_exitcode(status)
        secs = time.monotonic() - t0
        text = open(out, errors='replace').read(), open(err, errors='replace').read()
        print(f'$ TMPDIR={env["TMPDIR"]} sfprof {" ".join(args)}: exit {p.returncode}, '
              f'{secs:.2f} s, max RSS {ru.ru_maxrss} KB\n  {text[1].strip()[:400]}', flush=True)
        return p.returncode, text[0], text[1], secs, ru.ru_maxrss

    def report(self, archive, tmpdir=None, wrap=(), extra=(), max_rss_kb=MAX_RSS_KB):
        r = self.run(['report', '-i', archive, '--stdio'] + list(extra), tmpdir, wrap)
        self.expect(r[4] < max_rss_kb, f'{archive}: max RSS {r[4]} KB, over {max_rss_kb}')
        self.expect(r[3] < TIMEOUT / 2, f'{archive}: {r[3]:.1f} s')
        self.expect_clean(tmpdir or self.tmp)
        return r

    def refused(self, archive, words, what):
        rc, _, err, _, _ = self.report(archive)
        self.expect(rc not in (0, -9), f'{what}: exit {rc}, want a refusal')
        line = err.strip().splitlines()[-1] if err.strip() else ''
        self.expect(line.startswith('sfprof report: ') and all(w in line for w in words),
                    f'{what}: stderr {err.strip()[:300]!r}, want a line with {words}')

    def expect_clean(self, tmpdir):
        left = os.listdir(tmpdir)
        self.expect(not left, f'left in TMPDIR {tmpdir}: {left}')


def case_kallsyms_line(ctx):
    arch = ctx.craft('kallsyms-line', craft.GiB)
    ctx.expect(os.path.getsize(arch) < 64 << 10, f'{arch}: {os.path.getsize(arch)} bytes')
    ctx.refused(arch, ['kallsyms', '1.0 GiB', 'refused'], 'a kallsyms of one 1 GiB line')
    # the same line as a file of the user's, and one with a line past any kallsyms line
    big = ctx.path('kallsyms-1g')
    with open(big, 'wb') as f:
        f.truncate(craft.GiB)
        f.seek(craft.GiB)
        f.write(f'\n{craft.KADDR:016x} T {craft.KSYM}\n'.encode())
    rc, out, _, _, _ = ctx.report(ctx.profile, extra=['--kallsyms', big])
    ctx.expect(rc == 0, f'--kallsyms of a 1 GiB line: exit {rc}')
    ctx.expect(craft.KSYM not in out, '--kallsyms of 1 GiB: named from a file past any kallsyms')
    long = ctx.path('kallsyms-long')
    with open(long, 'wb') as f:
        f.write(b'ffffffff81000000 T ' + b'y' * 100000 + b'\n' +
                f'{craft.KADDR:016x} T {craft.KSYM}\n'.encode())
    rc, out, _, _, _ = ctx.report(ctx.profile, extra=['--kallsyms', long])
    ctx.expect(rc == 0 and f'[k] {craft.KSYM}' in out and 'yyyy' not in out,
               f'--kallsyms with a 100 KB line: exit {rc}, kernel frame not named by the next line')


def case_long_line(ctx):
    arch = ctx.craft('kallsyms-long-line', 48 << 20)
    # the line is never held: less than its 48 MiB (report of a small profile: ~20 MB)
    rc, out, _, _, _ = ctx.report(arch, max_rss_kb=48 << 10)
    ctx.expect(rc == 0, f'a kallsyms with a 48 MiB line: exit {rc}')
    ctx.expect(f'[k] {craft.KSYM}' in out and 'xxxx' not in out,
               'a kallsyms with a 48 MiB line: the kernel frame is not named by the line after it')


def case_zeros(ctx):
    ctx.refused(ctx.craft('zeros-binary', craft.GiB), ['not an ELF file'],
                'a binary of 1 GiB of zeros')
    ctx.refused(ctx.craft('zeros-profile', craft.GiB), ['sfprof.data', 'not an sfprof profile'],
                'a profile of 1 GiB of zeros')


def case_tmpfs(ctx):
    if os.geteuid() != 0 or not shutil.which('unshare'):
        print('SKIP: needs root and unshare for a private tmpfs')
        return SKIP
    mnt = ctx.path('mnt')
    os.mkdir(mnt)
    probe = subprocess.run(['unshare', '-m', '--propagation', 'private', 'sh', '-c',
                            f'mount -t tmpfs -o size=8m tmpfs {mnt}'], capture_output=True,
                           timeout=TIMEOUT)
    if probe.returncode:
        print(f'SKIP: no tmpfs in a private mount namespace: {probe.stderr.decode().strip()}')
        return SKIP
    # sfprof runs in its own namespace, the tmpfs mounted there: "ls" after it sees what it left
    wrap = ['unshare', '-m', '--propagation', 'private', 'sh', '-c',
            f'mount -t tmpfs -o size=8m tmpfs {mnt} && "$0" "$@"; rc=$?; '
            f'ls -A {mnt} >{ctx.path("left")}; exit $rc']
    for shape, size, ok in (('elf-zeros', 16 << 20, False), ('small', 0, True),
                            ('elf-zeros', 1 << 20, True)):
        arch = ctx.craft(shape, size)
        rc, out, err, _, _ = ctx.report(arch, tmpdir=mnt, wrap=wrap)
        left = open(ctx.path('left')).read().split()
        ctx.expect(not left, f'{shape} {size}: left in the tmpfs: {left}')
        if ok:
            ctx.expect(rc == 0, f'{shape} of {size} bytes on an 8 MiB tmpfs: exit {rc}')
            continue
        line = err.strip().splitlines()[-1] if err.strip() else ''
        ctx.expect(rc not in (0, -9) and 'free in ' + mnt in line and
                   'member of 16.0 MiB refused' in line and 'TMPDIR' in line,
                   f'{shape} of {size} bytes on an 8 MiB tmpfs: exit {rc}, {line!r}')


def case_rules(ctx):
    prof = open(ctx.profile, 'rb').read()
    bid = '.build-id/ab/' + craft.BUILD_ID[2:]

    def tar(name, entries, keep=0):
        path = ctx.path(name)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode='w', format=tarfile.PAX_FORMAT) as t:
            for ename, kind, data in entries:
                info = tarfile.TarInfo(ename)
                if kind == 'file':
                    info.size = len(data)
                    t.addfile(info, io.BytesIO(data))
                else:
                    info.type = kind
                    info.linkname = data
                    t.addfile(info)
        raw = buf.getvalue()
        with open(path, 'wb') as f:
            f.write(raw[:keep] if keep else raw)
        return path

    escape = ctx.path('escaped')
    outside = [('sfprof.data', 'file', prof), ('../escaped', 'file', b'x'),
               (escape, 'file', b'x'), (bid + '/../../../escaped', 'file', b'x')]
    rc, _, _, _, _ = ctx.report(tar('outside.tar', outside))
    ctx.expect(rc == 0 and not os.path.exists(escape) and
               not os.path.exists(os.path.join(os.path.dirname(ctx.tmp), 'escaped')),
               f'members named outside the directory: exit {rc}, or written there')
    for name, entries, words in (
            ('symlink.tar', [('sfprof.data', 'file', prof), (bid, tarfile.SYMTYPE, '/etc/passwd')],
             ['not a regular file']),
            ('hardlink.tar', [('sfprof.data', 'file', prof), (bid, tarfile.LNKTYPE, 'sfprof.data')],
             ['not a regular file']),
            ('twice.tar', [('sfprof.data', 'file', prof), ('sfprof.data', 'file', prof)],
             ['twice']),
            ('noprofile.tar', [(bid, 'file', b'\x7fELF')], ['no sfprof.data'])):
        ctx.refused(tar(name, entries), words, name)
    # a size that lies: the header says more than the archive holds
    ctx.refused(tar('cut.tar', [('sfprof.data', 'file', prof),
                                (bid, 'file', b'\x7fELF' + b'\1' * 5000)],
                    keep=512 * (1 + (len(prof) + 511) // 512 + 1) + 2000),
                [bid], 'a member cut short of its size')


CASES = {'kallsyms-line': case_kallsyms_line, 'long-line': case_long_line, 'zeros': case_zeros,
         'tmpfs': case_tmpfs, 'rules': case_rules}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--crafted-profile', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', choices=sorted(CASES), required=True)
    args = ap.parse_args()
    ctx = Ctx(args)
    t0 = time.monotonic()
    ret = CASES[args.case](ctx)
    print(f'{args.case}: {time.monotonic() - t0:.2f} s', flush=True)
    if ctx.fails:
        print(f'{len(ctx.fails)} failure(s)')
        return 1
    shutil.rmtree(ctx.workdir, ignore_errors=True)
    return ret or 0


if __name__ == '__main__':
    sys.exit(main())
