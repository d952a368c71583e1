#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`sfprof agent` delivers every window, once, whatever the server does (issue 26).

Receivers (receivers.py) started here on 127.0.0.1 log every request with the
payload's identity (name, from, until) and whether its status line went out
whole (the server has it). Counts never depend on fixed clocks: each case
runs until enough happened, within a bound.

  hang        a server that reads and never answers: SIGTERM ends the agent
              within --flush-timeout (2 s; before: two 30 s transfer
              timeouts); what was not delivered stays spooled, and a second
              run against a server that answers delivers each of it once.
  refused     503 for payloads whose body's SHA-256 is odd: the others go
              (before: the first refused one held back all), each once; the
              refused ones are tried again on their own schedule.
  refused400  400 for those: each tried once, dropped, counted and said.
  close200    "200 OK" then the connection closed: each payload sent once.
  trickle     the answer at one byte every 0.03 s past --push-timeout 1: its
              200 is delivery, each payload sent once (before: sent again).
  outdir-kill --output-dir and --push, the server hanging and the agent
              SIGKILLed: the next start pushes the windows written but not
              pushed (before: never); every window of the output dir is
              pushed exactly once.
  full-outdir the output directory on a 160K tmpfs: the agent runs on,
              deleting its oldest windows (counted and said); exit 0.
  full-spool  the spool on a 256K tmpfs, the server down: the oldest payloads
              go, counted; no stale errno (ENOENT) said; exit 0.
  spool-size  --spool-size 32K, the server down: what the spool holds on disk
              (st_blocks * 512), sampled every 20 ms, never passes 32K.
  privilege   as nobody: the error names "sfprof agent", and neither the
              output directory nor the spool is left behind.

With --api otlp the agent pushes OTLP profiles to --otlp-endpoint instead of
/ingest (issue 31): the same cases, one request per window.

Exit status 0 pass, 1 fail, 77 skip (not root, no BTF, no unshare).
"""

import argparse
import collections
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))


class Failure(Exception):
    pass


def log(msg=''):
    print(msg, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Receiver:
    def __init__(self, ctx, mode, name='rcv', extra=(), port=None):
        self.port, self.dir = port or free_port(), ctx.path(name)
        self.proc = ctx.spawn([sys.executable, os.path.join(HERE, 'receivers.py'),
                               str(self.port), self.dir, mode, *extra],
                              stdout=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != 'ready':
            raise Failure('the receiver did not start')
        self.url = f'http://127.0.0.1:{self.port}'

    def stop(self):
        self.proc.kill()
        self.proc.wait(timeout=10)

    def requests(self):
        try:
            with open(os.path.join(self.dir, 'log.jsonl')) as f:
                return [json.loads(line) for line in f if line.endswith('\n')]
        except FileNotFoundError:
            return []

    def taken(self):
        """How many times the server took each payload."""
        return collections.Counter(r['id'] for r in self.requests() if r['taken'])

    def pause(self, on, how='pause'):
        path = os.path.join(self.dir, how)
        if on:
            open(path, 'w').close()
        elif os.path.exists(path):
            os.unlink(path)


class Ctx:
    def __init__(self, args):
        self.sfprof = os.path.abspath(args.sfprof)
        self.work = os.path.abspath(args.workdir)
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        self.procs = []

    def path(self, name):
        return os.path.join(self.work, name)

    def spawn(self, cmd, **kw):
        p = subprocess.Popen([str(c) for c in cmd], **kw)
        self.procs.append(p)
        return p

    def agent(self, args, name='agent'):
        """The agent in the background; its stderr in NAME.err."""
        cmd = [self.sfprof, 'agent', *args]
        log('$ ' + ' '.join(cmd))
        err = open(self.path(name + '.err'), 'w')
        p = self.spawn(cmd, stderr=err)
        p.err_path = self.path(name + '.err')
        return p

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)


def stderr_of(p):
    with open(p.err_path) as f:
        return f.read()


def wait_for(what, cond, bound, proc=None):
    """Until cond() holds, at most bound seconds (the machine may be busy)."""
    t0 = time.monotonic()
    while not cond():
        if proc is not None and proc.poll() is not None:
            raise Failure(f'the agent exited with {proc.returncode} before {what}:\n' +
                          stderr_of(proc)[-3000:])
        if time.monotonic() - t0 > bound:
            raise Failure(f'{what}: not within {bound} s')
        time.sleep(0.1)
    log(f'ok: {what} ({time.monotonic() - t0:.1f} s)')


def stop(p, sig=signal.SIGTERM, bound=60):
    """Signal the agent; @return (its exit status, seconds to exit)."""
    t0 = time.monotonic()
    p.send_signal(sig)
    rc = p.wait(timeout=bound)
    secs = time.monotonic() - t0
    text = stderr_of(p)
    log(text.rstrip('\n')[-3000:])
    log(f'exit {rc} after {secs:.2f} s')
    return rc, secs


def push_counts(text):
    m = re.search(r'push: (\d+) windows made into (\d+) payloads, (\d+) pushed, (\d+) tries '
                  r'failed, (\d+) refused, (\d+) dropped at the spool bound, (\d+) unreadable '
                  r'windows; (\d+) payloads', text)
    if not m:
        raise Failure('the agent printed no push summary')
    return dict(zip(['windows', 'payloads', 'pushed', 'failures', 'refused', 'dropped', 'bad',
                     'spooled'], map(int, m.groups())))


def check_once(taken, what):
    twice = {k: n for k, n in taken.items() if n > 1}
    if twice:
        raise Failure(f'{what}: {len(twice)} payloads taken more than once, e.g. '
                      f'{sorted(twice.items())[:3]}')


def spooled_ids(spool):
    """The identities of the payloads a spool holds, as the receivers log them."""
    import receivers
    ids = set()
    for name in os.listdir(spool):
        if name.endswith('.push'):
            with open(os.path.join(spool, name), 'rb') as f:
                # SFPUSH2: a line "API URL" before the query (issue 31)
                api = b'ingest'
                if f.readline() == b'SFPUSH2\n':
                    api = f.readline().split(b' ')[0]
                query = f.readline().decode().strip()
                body = f.read()
            if api == b'otlp':
                ids.add(receivers.otlp_identity(body))
            else:
                ids.add(receivers.identity('/ingest?' + query, {}, b''))
    return ids


AGENT = ['-F', '99', '--window', '1']
# Where the agent pushes: --push (Pyroscope's /ingest), or --otlp-endpoint with --api otlp.
DEST = '--push'


def case_hang(ctx):
    rcv = Receiver(ctx, 'hang')
    spool = ctx.path('spool')
    a = ctx.agent([DEST, rcv.url, '--spool-dir', spool, *AGENT, '--flush-timeout', '2'])
    wait_for('a push hangs at the server', lambda: rcv.requests(), 30, a)
    time.sleep(1.5)
    rc, secs = stop(a)
    if rc != 0:
        raise Failure(f'exit {rc}')
    # the flush's 2 s, and what exiting costs on a busy machine
    if secs > 2 + 2:
        raise Failure(f'SIGTERM took {secs:.1f} s with --flush-timeout 2')
    left = spooled_ids(spool)
    waiting = [n for n in os.listdir(os.path.join(spool, 'windows')) if n.startswith('window-')]
    log(f'left: {len(left)} payloads spooled, {len(waiting)} windows waiting')
    if not left and not waiting:
        raise Failure('nothing was left spooled')
    rcv.stop()
    # the same server back: a payload goes only to the URL it was made for (issue 31)
    ok = Receiver(ctx, 'ok', 'rcv-ok', port=rcv.port)
    b = ctx.agent([DEST, ok.url, '--spool-dir', spool, *AGENT], 'agent2')
    wait_for('what the first run spooled is delivered', lambda: left <= set(ok.taken()), 40, b)
    stop(b)
    check_once(ok.taken(), 'the second run')


def case_refused(ctx, mode='odd503'):
    rcv = Receiver(ctx, mode)
    a = ctx.agent([DEST, rcv.url, '--spool-dir', ctx.path('spool'), *AGENT,
                   '--max-backoff', '2', '--flush-timeout', '1'])
    refused = lambda: {r['id'] for r in rcv.requests() if r['status'] in (400, 503)}

    def enough():
        ids = refused()
        # payloads that came after a refused one were taken all the same
        later = [r for r in rcv.requests() if r['taken'] and ids and
                 r['t'] > min(q['t'] for q in rcv.requests() if q['id'] in ids)]
        return len(ids) >= 3 and len(later) >= 6
    wait_for('payloads taken after one was refused', enough, 40, a)
    rc, _ = stop(a)
    if rc != 0:
        raise Failure(f'exit {rc}')
    text = stderr_of(a)
    c = push_counts(text)
    taken = rcv.taken()
    check_once(taken, mode)
    if c['pushed'] != sum(taken.values()):
        raise Failure(f'the agent says {c["pushed"]} pushed, the server took {sum(taken.values())}')
    tries = collections.Counter(r['id'] for r in rcv.requests() if not r['taken'])
    if mode == 'odd400':
        if c['refused'] != len(tries) or any(n != 1 for n in tries.values()):
            raise Failure(f'{c["refused"]} refused, {len(tries)} payloads answered 400, tried '
                          f'{sorted(set(tries.values()))} times')
        if 'refused a payload (HTTP 400)' not in text or 'refused by the server' not in text:
            raise Failure('the refusals were not said')
    elif c['refused']:
        raise Failure('a 503 was taken as a refusal for good')


def case_refused400(ctx):
    case_refused(ctx, 'odd400')


def case_answer(ctx, mode, extra=(), timeout='2'):
    rcv = Receiver(ctx, mode, extra=extra)
    a = ctx.agent([DEST, rcv.url, '--spool-dir', ctx.path('spool'), *AGENT,
                   '--push-timeout', timeout, '--max-backoff', '2', '--flush-timeout', '3'])
    wait_for('8 payloads taken', lambda: sum(rcv.taken().values()) >= 8, 60, a)
    rc, _ = stop(a)
    if rc != 0:
        raise Failure(f'exit {rc}')
    c = push_counts(stderr_of(a))
    taken = rcv.taken()
    check_once(taken, mode)
    if c['pushed'] != sum(taken.values()):
        raise Failure(f'the agent says {c["pushed"]} pushed, the server took {sum(taken.values())}')


def case_close200(ctx):
    case_answer(ctx, 'close200')


def case_trickle(ctx):
    case_answer(ctx, 'trickle', ('--byte-secs', '0.03'), timeout='1')


def windows_in(d):
    return sorted(n for n in os.listdir(d) if n.startswith('window-') and n.endswith('.sfprof'))


def has_threads(pid, names):
    """Whether process @pid runs threads of all these @names."""
    try:
        comms = {open(f'/proc/{pid}/task/{t}/comm').read().strip()
                 for t in os.listdir(f'/proc/{pid}/task')}
    except OSError:
        return False
    return set(names) <= comms


def case_outdir_kill(ctx):
    rcv = Receiver(ctx, 'ok')
    out, spool = ctx.path('out'), ctx.path('spool')
    args = ['--output-dir', out, DEST, rcv.url, '--spool-dir', spool, *AGENT,
            '--max-backoff', '1']
    a = ctx.agent(args)
    wait_for('3 payloads taken', lambda: sum(rcv.taken().values()) >= 3, 30, a)
    # a push that hangs holds back the windows' conversion: they are only in the output dir
    rcv.pause(True, 'hang')
    n = len(windows_in(out))
    wait_for('4 windows written while the server hangs', lambda: len(windows_in(out)) >= n + 4,
             30, a)
    stop(a, signal.SIGKILL)
    rcv.pause(False, 'hang')
    started = time.monotonic()
    b = ctx.agent(args + ['--flush-timeout', '10'], 'agent2')
    # stopped 2 s after its start, and not before it samples and pushes (how soon it starts
    # depends on the machine): what it has not pushed by then it pushes as it stops
    wait_for('the next start samples and pushes',
             lambda: has_threads(b.pid, ('sfprof-unw0', 'sfprof-push')), 60, b)
    time.sleep(max(0.0, started + 2 - time.monotonic()))
    rc, _ = stop(b)
    if rc != 0:
        raise Failure(f'exit {rc}')
    taken = rcv.taken()
    check_once(taken, 'across the SIGKILL')
    spans = {tuple(k.split('|')[1:]) for k in taken}
    missing, empty = [], 0
    for name in windows_in(out):
        m = re.match(r'window-(\d+)-(\d+)\.sfprof', name)
        if (str(int(m[1])), str(int(m[2]))) in spans:
            continue
        if not has_samples(ctx, os.path.join(out, name)):
            empty += 1	# no sample (a first window, one cut at stop): nothing to push
            continue
        missing.append(name)
    log(f'{len(windows_in(out))} windows written, {len(spans)} pushed, {empty} with no sample')
    if missing:
        raise Failure(f'{len(missing)} windows of the output directory never pushed: {missing}')
    if len(spans) < 6:
        raise Failure(f'only {len(spans)} windows pushed')


def has_samples(ctx, path):
    p = subprocess.run([ctx.sfprof, 'dump', '-i', path], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True, timeout=60)
    return any(line.startswith('sample') for line in p.stdout.splitlines())


def in_tmpfs(ctx, size, mountpoint, agent_args, until, after=''):
    """The agent with @mountpoint a tmpfs of @size, in a mount namespace of its own, run
    until its stderr says @until (at most 60 s: how soon the disk fills depends on what the
    machine runs), then 4 windows more, then stopped with SIGTERM."""
    os.makedirs(mountpoint, exist_ok=True)
    err = ctx.path('agent.stderr')
    script = (f'mount -t tmpfs -o size={size},mode=0700 tmpfs {mountpoint} || exit 3\n'
              f': >{err}\n{ctx.sfprof} agent {" ".join(agent_args)} 2>{err} &\n'
              'pid=$!\n'
              'i=0\n'
              f'while [ $i -lt 600 ] && kill -0 $pid 2>/dev/null && '
              f'! grep -qs {shlex.quote(until)} {err}; do sleep 0.1; i=$((i + 1)); done\n'
              'sleep 4\n'
              'kill -TERM $pid 2>/dev/null\n'
              f'wait $pid\nrc=$?\ncat {err} >&2\n{after}\nexit $rc\n')
    log(script)
    p = subprocess.run(['unshare', '-m', '--propagation', 'private', 'sh', '-c', script],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    log(p.stdout[-3000:])
    log(p.stderr[-3000:])
    if p.returncode == 3:
        raise Failure('cannot mount a tmpfs')
    return p


def case_full_outdir(ctx):
    out = ctx.path('out')
    p = in_tmpfs(ctx, '160k', out, ['--output-dir', out, *AGENT], 'the disk is full',
                 f'ls {out} | tail -1')
    if p.returncode != 0:
        raise Failure(f'exit {p.returncode} with the output directory full')
    m = re.search(r'the disk full: (\d+) windows kept were deleted to make room, (\d+) lost',
                  p.stderr)
    if not m or int(m[1]) == 0 or 'the disk is full' not in p.stderr:
        raise Failure('no window was deleted, or it was not said')
    m = re.search(r'(\d+) windows written', p.stderr)
    if not m or int(m[1]) < 5:
        raise Failure('windows stopped being written')


def case_full_spool(ctx):
    spool = ctx.path('spool')
    p = in_tmpfs(ctx, '256k', spool, ['--push', f'http://127.0.0.1:{free_port()}', '--spool-dir',
                                     spool, *AGENT, '--flush-timeout', '0'],
                 'the filesystem is full', f'du -sk {spool}')
    if p.returncode != 0:
        raise Failure(f'exit {p.returncode} with the spool full')
    if 'No such file' in p.stderr or 'ENOENT' in p.stderr:
        raise Failure('a stale errno was said')
    if not re.search(r'push: (\d+) payloads dropped, the spool.s filesystem full', p.stderr):
        raise Failure('no payload was dropped at the full disk, or it was not said')
    m = re.search(r'(\d+) windows written', p.stderr)
    if not m or int(m[1]) < 5:
        raise Failure('windows stopped being written')


def spool_disk(spool):
    total = 0
    try:
        for name in os.listdir(spool):
            try:
                st = os.lstat(os.path.join(spool, name))
            except FileNotFoundError:
                continue
            if not os.path.isdir(os.path.join(spool, name)):
                total += st.st_blocks * 512
    except FileNotFoundError:
        pass
    return total


def case_spool_size(ctx):
    spool, bound = ctx.path('spool'), 32 << 10
    a = ctx.agent([DEST, f'http://127.0.0.1:{free_port()}', '--spool-dir', spool, *AGENT,
                   '--spool-size', '32K', '--max-backoff', '1'])
    peak, t0, full_at = 0, time.monotonic(), None
    # until 4 s after the spool first held half its bound (the first window's conversion
    # reads every binary the system runs: its time depends on the machine)
    while full_at is None or time.monotonic() - full_at < 4:
        if a.poll() is not None:
            raise Failure(f'the agent exited with {a.returncode}')
        if time.monotonic() - t0 > 60:
            raise Failure('the spool did not fill within 60 s')
        peak = max(peak, spool_disk(spool))
        if full_at is None and peak >= bound // 2:
            full_at = time.monotonic()
        time.sleep(0.02)
    rc, _ = stop(a)
    c = push_counts(stderr_of(a))
    log(f'spool on disk: peak {peak} bytes, bound {bound}; {c["dropped"]} dropped')
    if rc != 0 or peak > bound or not c['dropped']:
        raise Failure(f'the spool held {peak} bytes on disk, bound {bound} ({c["dropped"]} '
                      'dropped)')


def case_privilege(ctx):
    os.chmod(ctx.work, 0o777)
    out, spool = ctx.path('out'), ctx.path('spool')
    p = subprocess.run(['setpriv', '--reuid', '65534', '--regid', '65534', '--clear-groups',
                        ctx.sfprof, 'agent', '--output-dir', out, '--push',
                        f'http://127.0.0.1:{free_port()}', '--spool-dir', spool, '-d', '1'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    log(p.stderr)
    if p.returncode == 0:
        raise Failure('the agent started without privileges')
    if 'sfprof record' in p.stderr or 'sfprof agent' not in p.stderr:
        raise Failure('the error does not name sfprof agent')
    for d in (out, spool):
        if os.path.exists(d):
            raise Failure(f'{d} was left behind')


CASES = {'hang': case_hang, 'refused': case_refused, 'refused400': case_refused400,
         'close200': case_close200, 'trickle': case_trickle, 'outdir-kill': case_outdir_kill,
         'full-outdir': case_full_outdir, 'full-spool': case_full_spool,
         'spool-size': case_spool_size, 'privilege': case_privilege}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', required=True, choices=sorted(CASES))
    ap.add_argument('--api', choices=('ingest', 'otlp'), default='ingest',
                    help='push to /ingest, or OTLP profiles to --otlp-endpoint')
    args = ap.parse_args()
    global DEST
    DEST = '--otlp-endpoint' if args.api == 'otlp' else '--push'
    if os.geteuid() != 0:
        log('SKIP: sfprof agent needs root (CAP_BPF and CAP_PERFMON)')
        return SKIP
    if not os.access('/sys/kernel/btf/vmlinux', os.R_OK):
        log('SKIP: this kernel has no BTF')
        return SKIP
    for tool in ('unshare', 'setpriv'):
        if not shutil.which(tool):
            log(f'SKIP: no {tool}')
            return SKIP
    ctx = Ctx(args)
    busy = ctx.spawn([sys.executable, '-c', 'while True: sum(range(1000))'])
    try:
        CASES[args.case](ctx)
    except Failure as e:
        log(f'FAIL: {e}')
        return 1
    finally:
        busy.kill()
        ctx.cleanup()
    log('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main())
