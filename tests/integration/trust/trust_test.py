#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Issue 26: root's build-ID cache trusts nothing a user controls.

Each case makes a throwaway user (useradd, removed at the end, even on
failure) whose program root records with sfprof record; the program's hot
function is honest_spin (nm of the binary is the oracle). The user then
attacks with a forged binary of the same build ID (gcc -Wl,--build-id=0x...),
whose hot function is evil_spin:

  rewrite    the user rewrites the recorded binary in place through a second
             hard link (same inode). Root's report and archive still name
             honest_spin; the cache's entry is not the user's inode. Negative
             check: the recorded path itself now says evil_spin (nm), and a
             report with an empty cache prints evil_spin.
  taken      the recorded path is deleted and the user puts the forgery there:
             root's report names honest_spin (the cache is preferred); with an
             empty cache it names evil_spin (negative check).
  planted    XDG_CACHE_HOME is a directory of the user's, with .build-id/XX a
             symbolic link to a directory of root's: root's record refuses it
             ("owned by uid N, not by root: not used", non-zero exit), nothing
             is created in the link's target, no file of root's appears under
             the user's directory (with --no-buildid-cache too, which says the
             derived unwind tables are not kept there: before, root wrote them
             there and read back whatever the user put in their place), and
             root's report refuses to read it (the forgery put in the link's
             target is not named).
  symlinks   root's own cache holding a symbolic link as an entry, and one as
             an XX directory, to the forgery: report does not follow them
             (says so, names no evil_spin) and archive packs no file for the
             module.

Exit status 0 pass, 1 fail, 77 skip (not root, no BTF, no useradd/runuser).
"""

import argparse
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from record_test import Failure, check_preconditions, log, run  # noqa: E402

SKIP = 77

PROG = r'''
volatile unsigned long sink;
__attribute__((noinline)) void NAME_spin(void)
{
	for (int i = 0; i < 200000; i++)
		sink += i * 7;
}
int main(void)
{
	for (int i = 0; i < 1500; i++)
		NAME_spin();
	return 0;
}
'''


class Ctx:
    def __init__(self, args):
        self.sfprof = os.path.abspath(args.sfprof)
        self.work = os.path.abspath(args.workdir)
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        os.chmod(self.work, 0o755)
        self.cache = self.path('root-cache')   # root's own XDG_CACHE_HOME
        os.makedirs(self.cache, mode=0o700)
        self.user = None
        self.uid = None

    def path(self, *names):
        return os.path.join(self.work, *names)

    def env(self, cache=None):
        e = dict(os.environ)
        e['XDG_CACHE_HOME'] = cache or self.cache
        e['TMPDIR'] = self.work
        e.pop('DEBUGINFOD_URLS', None)
        return e

    def sfprof_run(self, args, cache=None, check=True, timeout=90):
        return run([self.sfprof, *args], check=check, env=self.env(cache), timeout=timeout)

    def as_user(self, cmd, check=True):
        return run(['runuser', '-u', self.user, '--', *cmd], check=check, timeout=60)

    def add_user(self):
        name = f'sfpt{os.getpid() % 100000}'
        for attempt in range(20):
            # /etc/passwd's lock is taken by the other cases' useradd too
            p = run(['useradd', '-M', '-N', '-s', '/bin/sh', name], check=False)
            if p.returncode == 0:
                break
            if p.returncode == 9:   # exists: a leftover of a killed run
                run(['userdel', name], check=False)
            time.sleep(0.2 + 0.1 * attempt)
        else:
            raise Failure(f'useradd {name} failed')
        self.user = name
        self.uid = int(run(['id', '-u', name]).stdout)

    def del_user(self):
        if not self.user:
            return
        for attempt in range(20):
            if run(['userdel', self.user], check=False).returncode in (0, 6):
                break
            time.sleep(0.2 + 0.1 * attempt)
        self.user = None

    def user_dir(self, name):
        d = self.path(name)
        os.makedirs(d)
        os.chown(d, self.uid, -1)
        os.chmod(d, 0o755)
        return d

    def compile(self, name, out, build_id):
        src = self.path(f'{name}.c')
        with open(src, 'w') as f:
            f.write(PROG.replace('NAME', name))
        run(['gcc', '-O1', '-fno-inline', f'-Wl,--build-id=0x{build_id}', '-o', out, src])
        return out


def spins(path):
    """The *_spin functions nm names in PATH: the oracle of which program it is."""
    out = run(['nm', path]).stdout
    return sorted(set(re.findall(r'\b(honest_spin|evil_spin)\b', out)))


def report_syms(ctx, data, cache=None):
    p = ctx.sfprof_run(['report', '-i', data, '--stdio'], cache, check=False)
    if p.returncode:
        raise Failure(f'report exited with {p.returncode}')
    rows = {}
    for line in p.stdout.splitlines():
        m = re.match(r'^\s+([\d.]+)%\s+\S+\s+\S+\s+\[.\] (\S+)', line)
        if m:
            rows[m.group(2)] = rows.get(m.group(2), 0) + float(m.group(1))
    return rows, p.stderr


def expect(cond, fails, msg):
    if not cond:
        fails.append(msg)
        log('FAIL: ' + msg)


def record_user_prog(ctx, prog, data, *opts, cache=None):
    return ctx.sfprof_run(['record', *opts, '-o', data, '--', 'runuser', '-u', ctx.user, '--',
                           prog], cache)


def forge_pair(ctx, where):
    """An honest program and a forgery of its build ID, both built by root."""
    bid = secrets.token_hex(20)
    honest = ctx.compile('honest', ctx.path('honest.bin'), bid)
    evil = ctx.compile('evil', ctx.path('evil.bin'), bid)
    expect_spins(honest, ['honest_spin'])
    expect_spins(evil, ['evil_spin'])
    prog = os.path.join(where, 'prog')
    shutil.copy(honest, prog)
    os.chown(prog, ctx.uid, -1)
    os.chmod(prog, 0o755)
    return bid, prog, evil


def expect_spins(path, want):
    got = spins(path)
    if got != want:
        raise Failure(f'nm {path}: {got}, want {want}')


def check_honest(ctx, data, fails, what, cache=None):
    rows, err = report_syms(ctx, data, cache)
    log(f'{what}: honest_spin {rows.get("honest_spin", 0):.1f}%, '
        f'evil_spin {rows.get("evil_spin", 0):.1f}%')
    expect(rows.get('honest_spin', 0) >= 50, fails,
           f'{what}: report names honest_spin in {rows.get("honest_spin", 0):.1f}% (want >= 50)')
    expect('evil_spin' not in rows, fails, f'{what}: report names evil_spin')
    return err


def check_forged_visible(ctx, data, fails, what):
    """Negative check: with nothing kept, the forgery at the path is what report reads."""
    empty = ctx.path('empty-cache')
    os.makedirs(empty, mode=0o700, exist_ok=True)
    rows, _ = report_syms(ctx, data, empty)
    expect(rows.get('evil_spin', 0) >= 50, fails,
           f'{what}: with an empty cache report should read the forgery at the path '
           f'(evil_spin {rows.get("evil_spin", 0):.1f}%): the test proves nothing')


def archive_member_spins(ctx, data, bid):
    arch = data + '.tar.zst'
    ctx.sfprof_run(['archive', '-i', data, '-o', arch])
    out = ctx.path('unpacked-' + os.path.basename(data))
    os.makedirs(out)
    run(['tar', '-xf', arch, '-C', out])
    member = os.path.join(out, '.build-id', bid[:2], bid[2:])
    return spins(member) if os.path.isfile(member) else None


def entry_path(ctx, bid, cache_home=None):
    return os.path.join(cache_home or ctx.cache, 'sfprof', '.build-id', bid[:2], bid[2:])


def check_attacked(ctx, prog, data, bid, fails, what):
    """The forgery is at the recorded path; report and archive still give the honest build."""
    expect_spins(prog, ['evil_spin'])   # the attack happened
    check_honest(ctx, data, fails, what)
    got = archive_member_spins(ctx, data, bid)
    expect(got == ['honest_spin'], fails, f'{what}: archive member of the build: nm says {got}')
    check_forged_visible(ctx, data, fails, what)


def case_rewrite(ctx):
    fails = []
    home = ctx.user_dir('user-files')
    bid, prog, evil = forge_pair(ctx, home)
    data = ctx.path('rewrite.data')
    record_user_prog(ctx, prog, data)
    entry = entry_path(ctx, bid)
    st, pst = os.lstat(entry), os.stat(prog)
    expect(st.st_ino != pst.st_ino, fails, 'the cache entry is the user\'s inode (a hard link)')
    expect(st.st_uid == 0 and not st.st_mode & 0o022, fails,
           f'the cache entry is owned by uid {st.st_uid}, mode {st.st_mode & 0o7777:o}')
    # the user rewrites it in place through a second link: the same inode
    second = os.path.join(home, 'second-link')
    ctx.as_user(['ln', prog, second])
    ctx.as_user(['sh', '-c', f'cat {evil} > {second}'])
    expect(os.stat(prog).st_ino == pst.st_ino, fails, 'the rewrite made a new inode')
    check_attacked(ctx, prog, data, bid, fails, 'rewritten in place')
    return fails


def case_taken(ctx):
    fails = []
    # a directory anyone may write, as /tmp is
    tmp = ctx.path('shared-tmp')
    os.makedirs(tmp)
    os.chmod(tmp, 0o1777)
    bid, prog, evil = forge_pair(ctx, tmp)
    data = ctx.path('taken.data')
    record_user_prog(ctx, prog, data)
    os.unlink(prog)
    ctx.as_user(['cp', evil, prog])
    expect(os.stat(prog).st_uid == ctx.uid, fails, 'the forgery is not the user\'s')
    check_attacked(ctx, prog, data, bid, fails, 'path taken over')
    return fails


def owned_by_root(top):
    found = []
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            if os.lstat(os.path.join(d, n)).st_uid == 0:
                found.append(os.path.join(d, n))
    return found


def expect_nothing_made(target, home, fails):
    expect(not os.listdir(target), fails, f'created through the link: {os.listdir(target)}')
    expect(not owned_by_root(home), fails, f'root created {owned_by_root(home)}')


def case_planted(ctx):
    fails = []
    home = ctx.user_dir('user-home')
    cache_home = os.path.join(home, '.cache')
    files = ctx.user_dir('user-files')
    bid, prog, evil = forge_pair(ctx, files)
    target = ctx.path('roots-dir')          # any directory of root's
    os.makedirs(target)
    # planted by the user: a cache whose XX directory is a link to root's directory
    tree = os.path.join(cache_home, 'sfprof', '.build-id')
    ctx.as_user(['mkdir', '-p', tree])
    ctx.as_user(['ln', '-s', target, os.path.join(tree, bid[:2])])
    data = ctx.path('planted.data')
    p = ctx.sfprof_run(['record', '-o', data, '--', 'runuser', '-u', ctx.user, '--', prog],
                       cache_home, check=False)
    # the first directory that is the user's is named: here the home the cache is in
    want = re.compile(rf'^sfprof record: build-ID cache {re.escape(cache_home)}/sfprof: '
                      rf'({re.escape(home)}\S*: )?owned by uid {ctx.uid}, not by root: not used',
                      re.M)
    expect(p.returncode != 0, fails, f'record with a planted cache exited {p.returncode}')
    expect(want.search(p.stderr), fails, f'record should say {want.pattern!r}; said '
           f'{p.stderr.strip()!r}')
    expect_nothing_made(target, home, fails)
    # without the binaries' cache: the derived tables are not kept there either
    p = ctx.sfprof_run(['record', '--no-buildid-cache', '-o', data, '--', 'runuser', '-u',
                        ctx.user, '--', prog], cache_home, check=False)
    expect(p.returncode == 0, fails, f'record --no-buildid-cache exited {p.returncode}')
    expect('not used' in p.stderr, fails, 'record --no-buildid-cache did not say the '
           f'directory is not used: {p.stderr.strip()!r}')
    expect_nothing_made(target, home, fails)
    # report with that cache: the link is not followed, the refusal said
    shutil.copy(evil, os.path.join(target, bid[2:]))
    os.unlink(prog)
    rows, err = report_syms(ctx, data, cache_home)
    expect('evil_spin' not in rows, fails, 'report read the planted cache: evil_spin')
    expect(f'build-ID cache {cache_home}/sfprof' in err and 'not used' in err, fails,
           f'report did not say the planted cache is not used: {err.strip()!r}')
    os.unlink(os.path.join(target, bid[2:]))
    expect(not owned_by_root(home), fails, f'root created {owned_by_root(home)}')
    return fails


def case_symlinks(ctx):
    fails = []
    files = ctx.user_dir('user-files')
    bid, prog, evil = forge_pair(ctx, files)
    data = ctx.path('symlinks.data')
    record_user_prog(ctx, prog, data, '--no-buildid-cache')
    os.unlink(prog)
    tree = os.path.join(ctx.cache, 'sfprof', '.build-id')
    os.makedirs(os.path.join(tree, bid[:2]), mode=0o700, exist_ok=True)
    entry = os.path.join(tree, bid[:2], bid[2:])
    # a link as the entry
    os.symlink(evil, entry)
    expect_spins(entry, ['evil_spin'])    # following it would read the forgery
    rows, err = report_syms(ctx, data)
    expect('evil_spin' not in rows, fails, 'report followed a link in the cache: evil_spin')
    expect('a symbolic link' in err and 'not used' in err, fails,
           f'report did not say the link is not used: {err.strip()!r}')
    got = archive_member_spins(ctx, data, bid)
    expect(got is None, fails, f'archive packed the link\'s target: nm says {got}')
    # a link as the XX directory
    os.unlink(entry)
    os.rmdir(os.path.dirname(entry))
    elsewhere = ctx.path('elsewhere')
    os.makedirs(elsewhere, mode=0o700)
    shutil.copy(evil, os.path.join(elsewhere, bid[2:]))
    os.symlink(elsewhere, os.path.join(tree, bid[:2]))
    expect_spins(entry, ['evil_spin'])
    rows, err = report_syms(ctx, data)
    expect('evil_spin' not in rows, fails, 'report followed a linked XX directory: evil_spin')
    expect('not used' in err, fails, f'report did not say the link is not used: {err.strip()!r}')
    return fails


CASES = {'rewrite': case_rewrite, 'taken': case_taken, 'planted': case_planted,
         'symlinks': case_symlinks}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', choices=sorted(CASES), required=True)
    args = ap.parse_args()
    check_preconditions()
    for tool in ('useradd', 'userdel', 'runuser'):
        if not shutil.which(tool):
            log(f'SKIP: {tool} not found (a throwaway user is needed)')
            return SKIP
    ctx = Ctx(args)
    # meson's timeout sends SIGTERM: the user is removed then too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        ctx.add_user()
        fails = CASES[args.case](ctx)
    except (Failure, subprocess.TimeoutExpired, OSError) as e:
        log(f'FAIL: {e}')
        return 1
    finally:
        ctx.del_user()
    if fails:
        log('FAIL: ' + '; '.join(fails))
        return 1
    log('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main())
