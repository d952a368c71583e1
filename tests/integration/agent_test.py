#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`sfprof agent` (issue 14) against a receiver on 127.0.0.1 and go tool pprof.

The receiver (agent_receiver.py, Python's http.server) stores every push.
agent_work (tests/progs, built here with -Wa,--gsframe) spins in
agent_leaf <- agent_mid <- main.

  windows     --output-dir and --push together, 2 s windows: every payload
              reads in `go tool pprof -raw`; the pushed windows tile time (each
              until is the next from) and are the windows written; the samples
              of all payloads add up to what the agent says it wrote, and each
              window's payloads to its file's samples (sfprof dump); agent_work
              is its own service (exe label) with symbolized, complete chains;
              tenant and bearer token arrive as headers; --keep-count 3 leaves
              the newest three windows and no .tmp.
  down        the receiver down until a try failed and payloads of 3 windows wait
              in the spool, then up, the agent stopped by SIGTERM once they are
              pushed: every window arrives, the last one (flushed at SIGTERM)
              too, tiling time, and the agent says tries failed.
  spool       the receiver never up, --spool-size 64K: payloads are dropped
              oldest first and counted, the spool stays within its bound (disk blocks) and
              keeps the newest; a second run pushes what the first left.
  containers  two agent_work processes in two cgroups made here under the
              cgroup2 tree (a docker and a containerd scope, 64-hex IDs), one
              in its own PID and mount namespaces (unshare -p -m --fork): two
              services named from their container IDs, container_id labels
              right, complete symbolized chains in each.
  raw         --no-symbolize --group-by comm: agent_raw's service is named by
              its comm; its user frames carry no function, only addresses in a
              mapping of agent_raw with readelf's build ID, and those addresses,
              made file addresses through the mapping, are agent_leaf,
              agent_mid and main to addr2line (what a server that symbolizes
              by build ID does).
  jit         CPython 3.12 -X perf with --no-symbolize: the JIT frames of its perf map are
              named in the payloads (py::jit_leaf <- ... <- py::jit_main), nothing else is.
  python      --group-by exe with two CPython processes (Debian's python3.11, else
              pyenv's 3.11-3.13) spinning in tests/progs/py/agent_chain.py, one
              run as a script (-u PATH), one as a module (-B -m agent_chain), and
              a second agent beside the first with --python-only: each is its own
              service, named by the script's basename (exe= and script=PATH
              labels) or the module (exe= and module=); their samples carry
              py_agent_leaf <- py_agent_mid <- py_agent_top <- <module> in
              order, at the lines of the calls in the file, each Python segment
              merged just above a _PyEval_EvalFrameDefault frame (the module's
              then runpy's _run_code <- _run_module_as_main); with --python-only
              the payloads hold Python frames alone, the same chains.
  connect     --push-api connect (Pyroscope's push.v1.PusherService/Push), the receiver
              answering the first 2 pushes with 500 and a connect error (JSON), then
              200: each window arrives once, in one request (one POST) holding a
              series per service, the windows tiling time (the pprofs' time and
              duration), with the samples the agent wrote; agent_work's series has
              __name__=process_cpu, service_name, host, exe and pyroscope_spy, its
              chains complete; connect's headers, tenant and token came; the
              agent's log says the connect error's message; a run with --push-api
              ingest after it leaves the connect payloads spooled for a connect run,
              and pushes one an older sfprof spooled (SFPUSH1) to /ingest.
  otlp        --otlp-endpoint (OTLP/HTTP profiles) with OTEL_EXPORTER_OTLP_HEADERS,
              OTEL_RESOURCE_ATTRIBUTES and OTEL_EXPORTER_OTLP_COMPRESSION=gzip, the
              receiver answering the first 2 pushes with 500 (a google.rpc.Status),
              then 200 with a partial success (1 rejected, "one of them was bad"):
              each window arrives once, in one ExportProfilesServiceRequest (one
              POST, gzipped, with the header), the windows tiling time (the
              profiles' time and duration); every stack resolves through the
              dictionary to function names (otlp_decode.py); agent_work's resource
              holds agent_leaf <- agent_mid <- main; every resource has
              service.name, host.name and deployment.environment=test; the
              values add up to the samples the agent wrote times the period; the
              Status's message and the partial success are said, the latter once;
              --push with --otlp-endpoint, and --tenant with it, are refused;
              protoc (where installed) reads a request with docs/otlp's messages.
              Figures: bytes per window, raw and gzipped.
  flight      `record --flight-recorder 2`: SIGUSR2, 3 s after the command's
              exec, writes the last 2 s of samples and nothing older (a program
              that changes its leaf function every second says which second a
              sample is from).

Each check is also run on a deliberately damaged input (a window left out, a
payload left out, the other container's ID, an older second, a chain with two
frames swapped, another script's label, native frames under --python-only) and
must fail.

Exit status 0 pass, 1 fail, 77 skip (not root, no BTF, no go, no cgroup2 tree).
"""

import argparse
import copy
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_oracle  # noqa: E402

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
CHAIN = ['agent_leaf', 'agent_mid', 'main']


class Failure(Exception):
    pass


def log(msg=''):
    print(msg, flush=True)


def run(cmd, check=True, timeout=120, **kw):
    log('$ ' + ' '.join(str(c) for c in cmd))
    p = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, errors='replace', timeout=timeout, **kw)
    for text in (p.stdout, p.stderr):
        if text.strip():
            log(text.rstrip('\n')[-4000:])
    if check and p.returncode != 0:
        raise Failure(f'{os.path.basename(str(cmd[0]))} exited with {p.returncode}')
    return p


def must_fail(what, fn, *args):
    """A check run on damaged input: it must find the damage, or it cannot fail."""
    try:
        fn(*args)
    except Failure as e:
        log(f'ok: {what} is caught ({str(e)[:120]})')
        return
    raise Failure(f'the check cannot fail: {what} went unnoticed')


def wait_for(what, cond, bound, proc=None):
    """Until cond() holds, at most @bound seconds (the machine may be busy)."""
    t0 = time.monotonic()
    while not cond():
        if proc is not None and proc.poll() is not None:
            raise Failure(f'exited with {proc.returncode} before {what}')
        if time.monotonic() - t0 > bound:
            raise Failure(f'{what}: not within {bound} s')
        time.sleep(0.1)
    log(f'ok: {what} ({time.monotonic() - t0:.1f} s)')


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Receiver:
    def __init__(self, port, out, args=()):
        self.port, self.out, self.proc, self.args = port, out, None, list(args)

    def start(self):
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, 'agent_receiver.py'),
                                      str(self.port), self.out, *self.args],
                                     stdout=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != 'ready':
            raise Failure('the receiver did not start')

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.proc = None

    def pushes(self):
        got = []
        for name in sorted(os.listdir(self.out)):
            if name.endswith('.json') and name[:6].isdigit():
                base = os.path.join(self.out, name[:-5])
                with open(base + '.json') as f:
                    meta = json.load(f)
                got.append((meta, base + '.bin'))
        return got


class Ctx:
    def __init__(self, args):
        self.sfprof = os.path.abspath(args.sfprof)
        self.progs = os.path.abspath(args.progs)
        self.work = os.path.abspath(args.workdir)
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        self.procs = []

    def path(self, name):
        return os.path.join(self.work, name)

    def build_work(self, name='agent_work'):
        out = self.path(name)
        run(['gcc', '-O2', '-fomit-frame-pointer', '-Wa,--gsframe', '-o', out,
             os.path.join(self.progs, 'agent_work.c')])
        return out

    def spawn(self, cmd, **kw):
        p = subprocess.Popen([str(c) for c in cmd], **kw)
        self.procs.append(p)
        return p

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)


def empty_windows(err):
    """Windows the agent wrote with no sample (the last, cut at stop, may be): none pushed."""
    m = re.search(r'push: (\d+) windows held no sample', err)
    return int(m[1]) if m else 0


def agent(ctx, args, timeout=60, env=None):
    p = run([ctx.sfprof, 'agent', *args], check=False, timeout=timeout, env=env)
    if p.returncode != 0:
        raise Failure(f'sfprof agent exited with {p.returncode}')
    m = re.search(r'(\d+) windows written \((\d+) not\), (\d+) samples in them', p.stderr)
    if not m:
        raise Failure('the agent printed no summary')
    s = {'windows': int(m[1]), 'failed': int(m[2]), 'samples': int(m[3]), 'stderr': p.stderr,
         'empty': empty_windows(p.stderr)}
    m = re.search(r'push: (\d+) windows made into (\d+) payloads, (\d+) pushed, (\d+) tries '
                  r'failed, (\d+) refused, (\d+) dropped at the spool bound, (\d+) unreadable '
                  r'windows; (\d+) payloads', p.stderr)
    if m:
        s.update(zip(['pw', 'payloads', 'pushed', 'failures', 'refused', 'dropped', 'bad',
                      'spooled'], map(int, m.groups())))
    return s


def pprof_raw(path):
    """go tool pprof -raw: samples [(count, [location names leaf first])]."""
    return [(c, [name for _, _, name in frames]) for c, frames in pprof_addresses(path)[0]]


def spans_of(pushes):
    return sorted({(int(m['query']['from'][0]), int(m['query']['until'][0])) for m, _ in pushes})


def check_tiling(spans, n):
    if len(spans) != n:
        raise Failure(f'{len(spans)} windows pushed, {n} written')
    for (f1, u1), (f2, u2) in zip(spans, spans[1:]):
        if u1 != f2:
            raise Failure(f'windows [{f1}, {u1}) and [{f2}, {u2}) leave a gap or overlap')
    for f, u in spans:
        if u <= f:
            raise Failure(f'window [{f}, {u}) is empty')


def count(pushes):
    total = 0
    for _, path in pushes:
        total += sum(c for c, _ in pprof_raw(path))
    return total


def check_total(pushes, want):
    got = count(pushes)
    if got != want:
        raise Failure(f'the payloads hold {got} samples, the agent says it wrote {want}')


def has_chain(pushes, chain=CHAIN):
    """Samples whose frames start with @chain (leaf first), and all samples, of @pushes."""
    hits = total = 0
    for _, path in pushes:
        for c, frames in pprof_raw(path):
            total += c
            if frames[:len(chain)] == chain:
                hits += c
    return hits, total


def check_chain(pushes, what, chain=CHAIN):
    hits, total = has_chain(pushes, chain)
    if hits < 5:
        seen = {}
        for _, path in pushes:
            for c, frames in pprof_raw(path):
                key = ' <- '.join(frames[:6])
                seen[key] = seen.get(key, 0) + c
        common = sorted(seen.items(), key=lambda kv: -kv[1])[:3]
        raise Failure(f'{what}: {hits} of {total} samples have the chain {" <- ".join(chain)}; '
                      f'the most common: {common}')
    log(f'ok: {what}: {hits} of {total} samples have the complete, symbolized chain')


def service(meta):
    return meta['query']['name'][0]


def preconditions():
    if os.geteuid() != 0:
        log('SKIP: sfprof agent needs root (CAP_BPF and CAP_PERFMON)')
        sys.exit(SKIP)
    if not os.access('/sys/kernel/btf/vmlinux', os.R_OK):
        log('SKIP: this kernel has no BTF')
        sys.exit(SKIP)
    for tool in ('gcc', 'go'):
        if not shutil.which(tool):
            log(f'SKIP: {tool} not found (go tool pprof is the oracle)')
            sys.exit(SKIP)


def case_windows(ctx):
    work = ctx.build_work()
    rcv = Receiver(free_port(), ctx.path('received'))
    rcv.start()
    token = secrets.token_hex(16)
    with open(ctx.path('token'), 'w') as f:
        f.write(token + '\n')
    os.chmod(ctx.path('token'), 0o600)
    try:
        ctx.spawn([work, '9'])
        out = ctx.path('out')
        s = agent(ctx, ['--output-dir', out, '--push', f'http://127.0.0.1:{rcv.port}',
                        '--spool-dir', ctx.path('spool'), '--window', '2', '-d', '8', '-F', '99',
                        '--keep-count', '3', '--max-memory', '128M', '--tenant', 'team-a',
                        '--bearer-token-file', ctx.path('token')])
    finally:
        rcv.stop()
    pushes = rcv.pushes()
    if s['failed'] or s['windows'] < 4:
        raise Failure(f'{s["windows"]} windows written, {s["failed"]} not')
    if s['pushed'] != s['payloads'] or s['spooled'] or s['pushed'] != len(pushes):
        raise Failure(f'{s["payloads"]} payloads, {s["pushed"]} pushed, {len(pushes)} received')
    spans = spans_of(pushes)
    check_tiling(spans, s['windows'] - s['empty'])
    must_fail('a window left out', check_tiling, spans[:1] + spans[2:], s['windows'] - s['empty'])
    check_total(pushes, s['samples'])
    must_fail('a payload left out', check_total, pushes[1:], s['samples'])
    # each window's file against its payloads (the three kept)
    kept = sorted(n for n in os.listdir(out))
    if any(n.endswith('.tmp') or n.startswith('.') for n in kept):
        raise Failure(f'unfinished windows left in {out}: {kept}')
    # an empty window (nothing pushed for it) is kept too: its file is checked below to
    # hold no sample, as its payloads hold none
    names = [f'window-{f:010d}-{u:010d}.sfprof' for f, u in spans]
    kept_pushed = [n for n in kept if n in names]
    if (len(kept) != 3 or len(kept) - len(kept_pushed) > s['empty'] or
            kept_pushed != names[len(names) - len(kept_pushed):] or
            any(n < kept_pushed[-1] for n in kept if n not in names)):
        raise Failure(f'--keep-count 3 kept {kept}, not the newest three of {spans}')
    for name in kept:
        f, u = map(int, re.findall(r'\d+', name))
        prof = profile_oracle.load_profile(ctx.sfprof, os.path.join(out, name))
        in_file = sum(x.weight for x in prof.samples)
        in_push = count([p for p in pushes if spans_of([p]) == [(f, u)]])
        if in_file != in_push:
            raise Failure(f'{name}: {in_file} samples, its payloads {in_push}')
    # another test's agent_work may run beside this one (system-wide): this one by its path
    mine = [p for p in pushes if service(p[0]).startswith('agent_work{') and
            f'exe={work}' in service(p[0])]
    if not mine:
        raise Failure(f'no service agent_work with exe={work}: {sorted({service(m) for m, _ in pushes})}')
    check_chain(mine, 'agent_work')
    must_fail('another leaf', check_chain, mine, 'agent_work', ['agent_mid', 'agent_leaf', 'main'])
    for meta, _ in pushes:
        q = meta['query']
        if q['format'] != ['pprof'] or q['sampleRate'] != ['99'] or 'host=' not in service(meta):
            raise Failure(f'query {q}')
        if meta['tenant'] != 'team-a' or meta['authorization'] != f'Bearer {token}':
            raise Failure(f'headers: tenant {meta["tenant"]}, authorization {meta["authorization"]}')
    if token in s['stderr']:
        raise Failure('the token was printed')


def case_down(ctx):
    work = ctx.build_work()
    rcv = Receiver(free_port(), ctx.path('received'))
    spool = ctx.path('spool')
    ctx.spawn([work, '3600'])       # until the end (ctx.cleanup)
    # its stderr in a file: a pipe not read while waiting could fill and stop it
    errf = open(ctx.path('agent.err'), 'w+')
    a = ctx.spawn([ctx.sfprof, 'agent', '--push', f'http://127.0.0.1:{rcv.port}', '--spool-dir',
                   spool, '--window', '1', '--max-backoff', '2',
                   '--flush-timeout', '15'], stderr=errf)
    try:
        # down long enough for a try to fail (the agent says so) and payloads of several
        # windows to wait in the spool: how soon depends on the machine (polled, not timed)
        held = lambda: spool_files(spool) if os.path.isdir(spool) else []
        failed = lambda: 'payloads stay spooled and are tried again' in \
            open(ctx.path('agent.err'), errors='replace').read()
        wait_for('a try failed and payloads of 3 windows spooled while the receiver is down',
                 lambda: failed() and len({n.split('-')[0] for n in held()}) >= 3, 60, a)
        down = set(held())
        rcv.start()
        wait_for('the payloads spooled while down pushed', lambda: not down & set(held()),
                 60, a)
        # SIGTERM: the window being recorded is flushed and pushed too
        a.send_signal(signal.SIGTERM)
        a.wait(timeout=60)
    finally:
        rcv.stop()
        errf.seek(0)
        err = errf.read()
        errf.close()
    log(err)
    if a.returncode:
        raise Failure(f'sfprof agent exited with {a.returncode}')
    n = int(re.search(r'(\d+) windows written', err)[1])
    m = re.search(r'(\d+) payloads, (\d+) pushed, (\d+) tries failed', err)
    payloads, pushed, failures = map(int, m.groups())
    if not failures:
        raise Failure('no try failed: the receiver was not down')
    pushes = rcv.pushes()
    if pushed != payloads or len(pushes) != payloads:
        raise Failure(f'{payloads} payloads, {pushed} pushed, {len(pushes)} received')
    spans = spans_of(pushes)
    n -= empty_windows(err)
    check_tiling(spans, n)
    must_fail('a window lost while down', check_tiling, spans[1:], n)
    total = int(re.search(r'(\d+) samples in them', err)[1])
    check_total(pushes, total)


def pprof_addresses(path, symbolize=True):
    """go tool pprof -raw: (samples [(count, [(address, mapping id, name) leaf first])],
    mappings {id: (start, limit, offset, file, build id)}). Without @symbolize, pprof
    leaves unnamed locations unnamed (it would look for the binaries to name them)."""
    cmd = ['go', 'tool', 'pprof', '-raw'] + ([] if symbolize else ['-symbolize=none'])
    p = subprocess.run(cmd + [path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    if p.returncode or 'malformed' in p.stderr:
        raise Failure(f'go tool pprof -raw {path}: {p.stderr.strip()[:300]}')
    samples, locs, maps, part = [], {}, {}, None
    for line in p.stdout.splitlines():
        if line.startswith(('Samples:', 'Locations', 'Mappings')):
            part = line.split()[0].rstrip(':')
            continue
        if part == 'Samples':
            m = re.match(r'\s+(\d+)\s+\d+: ([\d ]+)$', line)
            if m:
                samples.append((int(m[1]), [int(x) for x in m[2].split()]))
        elif part == 'Locations':
            m = re.match(r'\s+(\d+): (0x[0-9a-f]+) M=(\d+)\s*(.*)$', line)
            if m:
                named = re.match(r'(.*) \S*:\d+ s=\d+', m[4])
                locs[int(m[1])] = (int(m[2], 16), int(m[3]), named[1].strip() if named else '')
        elif part == 'Mappings':
            m = re.match(r'\s*(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) (\S+) ?(\S*)', line)
            if m:
                maps[int(m[1])] = (int(m[2], 16), int(m[3], 16), int(m[4], 16), m[5], m[6])
    return [(c, [locs.get(i, (0, 0, '?')) for i in ids]) for c, ids in samples], maps


def raw_chains(pushes, exe):
    """Leaf-first chains of file addresses in @exe, and the names any of their frames carry."""
    chains, names = [], set()
    for _, path in pushes:
        samples, maps = pprof_addresses(path)
        for c, frames in samples:
            own = []
            for addr, mid, name in frames:
                start, _, offset, file, bid = maps.get(mid, (0, 0, 0, '', ''))
                if file == exe:
                    own.append((addr - start + offset, bid))
                    if name:
                        names.add(name)
            if own:
                chains.append((c, own))
    return chains, names


def addr2line(exe, addrs):
    p = run(['addr2line', '-f', '-e', exe, *[hex(a) for a in addrs]])
    return p.stdout.splitlines()[0::2]


def check_raw(chains, names, exe, want_id):
    if names:
        raise Failure(f'--no-symbolize: frames of {exe} carry names {sorted(names)[:5]}')
    ids = {bid for _, own in chains for _, bid in own}
    if ids != {want_id}:
        raise Failure(f'{exe}\'s mapping carries build IDs {ids}, readelf says {want_id}')
    good = total = 0
    for c, own in chains:
        # a return address is one past its call: the call's own byte names the caller
        addrs = [own[0][0]] + [a - 1 for a, _ in own[1:3]]
        total += c
        if addr2line(exe, addrs) == CHAIN[:len(addrs)]:
            good += c
    log(f'--no-symbolize: {good} of {total} samples in {exe} are {" <- ".join(CHAIN)} '
        'to addr2line')
    if total < 5 or good < 0.9 * total:
        raise Failure(f'--no-symbolize: {good} of {total} samples name the chain by address')


def case_raw(ctx):
    work = ctx.build_work('agent_raw')
    want_id = re.search(r'Build ID: ([0-9a-f]+)', run(['readelf', '-n', work]).stdout)[1]
    rcv = Receiver(free_port(), ctx.path('received'))
    rcv.start()
    try:
        ctx.spawn([work, '6'])
        s = agent(ctx, ['--push', f'http://127.0.0.1:{rcv.port}', '--spool-dir',
                        ctx.path('spool'), '--window', '2', '-d', '5', '-F', '99',
                        '--max-memory', '128M', '--no-symbolize', '--group-by', 'comm'])
    finally:
        rcv.stop()
    pushes = rcv.pushes()
    if s['pushed'] != s['payloads'] or s['pushed'] != len(pushes):
        raise Failure(f'{s["payloads"]} payloads, {s["pushed"]} pushed, {len(pushes)} received')
    mine = [p for p in pushes if service(p[0]).startswith('agent_raw{')]
    if not mine:
        raise Failure(f'no service agent_raw (its comm): {sorted({service(m) for m, _ in pushes})[:8]}')
    chains, names = raw_chains(mine, work)
    check_raw(chains, names, work, want_id)
    must_fail('another build ID', check_raw, chains, names, work, '00' * 20)
    must_fail('names left in', check_raw, chains, names | {'agent_leaf'}, work, want_id)
    shifted = [(c, [(a + 0x40, b) for a, b in own]) for c, own in chains]
    must_fail('addresses off by 0x40', check_raw, shifted, names, work, want_id)


def case_jit(ctx):
    """CPython 3.12 -X perf under the agent with --no-symbolize: its JIT frames are named in
    the payloads all the same (a server cannot name them by build ID), chain in order."""
    import jit_perf_baseline as jb
    try:
        python = jb.find_python(12)
    except jb.Missing as e:
        log(f'SKIP: {e}')
        sys.exit(SKIP)
    script = os.path.join(os.path.dirname(HERE), 'progs', 'jit', 'chain.py')
    rcv = Receiver(free_port(), ctx.path('received'))
    rcv.start()
    try:
        p = ctx.spawn([python, '-X', 'perf', script, '8'], stdout=subprocess.DEVNULL)
        s = agent(ctx, ['--push', f'http://127.0.0.1:{rcv.port}', '--spool-dir',
                        ctx.path('spool'), '--window', '2', '-d', '6', '-F', '99',
                        '--max-memory', '128M', '--no-symbolize'])
    finally:
        rcv.stop()
        if p.poll() is None:
            p.kill()
        for f in (f'/tmp/perf-{p.pid}.map',):
            if os.path.exists(f):
                os.unlink(f)
    mine = [x for x in rcv.pushes() if f'exe={python}' in service(x[0])]
    if not mine:
        raise Failure(f'no service with exe={python}: {sorted({service(m) for m, _ in rcv.pushes()})[:8]}')
    want = ['py::jit_leaf', 'py::jit_middle', 'py::jit_outer', 'py::jit_main']
    # as the payload says them: no names pprof would add from the binaries
    samples = [(c, [name for _, _, name in frames]) for _, path in mine
               for c, frames in pprof_addresses(path, symbolize=False)[0]]

    def check(samples, want):
        hits = total = 0
        for c, frames in samples:
            total += c
            named = [f.split(':/')[0] for f in frames if f.startswith('py::jit_')]
            if named[:len(want)] == want:
                hits += c
        if hits * 2 < total:
            raise Failure(f'{hits} of {total} samples of {python} name {" <- ".join(want)}')
        log(f'ok: {hits} of {total} samples of {python} name {" <- ".join(want)} in the payloads')
    check(samples, want)
    must_fail('the chain with two frames swapped', check, samples,
              [want[0], want[2], want[1], want[3]])


def label_clean(s):
    """A label value as the agent writes it (service.c's clean())."""
    return re.sub(r'[^A-Za-z0-9._\-/:]', '_', s)


def service_labels(meta):
    """(name, {label: value}) of a payload's service."""
    m = re.match(r'^(.*)\{(.*)\}$', service(meta))
    if not m:
        raise Failure(f'service {service(meta)!r} has no labels')
    return m[1], dict(kv.split('=', 1) for kv in m[2].split(',') if '=' in kv)


def pprof_frames(path):
    """go tool pprof -raw -symbolize=none (names as the payload gives them: pprof's own
    demangling names `<module>` nothing): [(count, [location leaf first])], a location
    being (mapping id or None, [(name, file, line)] innermost inlined first)."""
    p = subprocess.run(['go', 'tool', 'pprof', '-raw', '-symbolize=none', path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    if p.returncode or 'malformed' in p.stderr:
        raise Failure(f'go tool pprof -raw {path}: {p.stderr.strip()[:300]}')
    samples, locs, part, cur = [], {}, None, None
    for line in p.stdout.splitlines():
        if line.startswith(('Samples:', 'Locations', 'Mappings')):
            part = line.split()[0].rstrip(':')
            continue
        if part == 'Samples':
            m = re.match(r'\s+(\d+)\s+\d+:([\d ]*)$', line)
            if m:
                samples.append((int(m[1]), [int(x) for x in m[2].split()]))
        elif part == 'Locations':
            m = re.match(r'\s+(\d+): 0x[0-9a-f]+(?: M=(\d+))? (.*)$', line)
            rest = m[3] if m else line.strip()
            if m:
                cur = locs[int(m[1])] = (int(m[2]) if m[2] else None, [])
            # a native name may hold spaces (C++), a Python file too (<frozen runpy>)
            fn = re.match(r'(\S*) (.*):(\d+) s=\d+' if cur and cur[0] is None else
                          r'(.*) (\S*):(\d+) s=\d+', rest)
            if fn and cur is not None:
                cur[1].append((fn[1].strip(), fn[2], int(fn[3])))
    return [(c, [locs.get(i, (0, [('?', '', 0)])) for i in ids]) for c, ids in samples]


def chain_lines(script):
    """The Python chain agent_chain.py spins in, leaf first, by construction: each
    function's name with the lines a sample in it may show (the leaf: its body; each
    caller: the line of its call)."""
    with open(script) as f:
        lines = f.read().splitlines()

    def line_of(text):
        hits = [i + 1 for i, ln in enumerate(lines) if text in ln]
        if len(hits) != 1:
            raise Failure(f'{script}: {len(hits)} lines hold {text!r}')
        return hits[0]
    leaf = line_of('def py_agent_leaf(')
    return [('py_agent_leaf', set(range(leaf + 1, line_of('def py_agent_mid(')))),
            ('py_agent_mid', {line_of('return py_agent_leaf(end)')}),
            ('py_agent_top', {line_of('return py_agent_mid(end)')}),
            ('<module>', {line_of('    py_agent_top(')})]


RUNPY = [('_run_code', None), ('_run_module_as_main', None)]


def check_py_chain(samples, want, tail, python_only, what):
    """Samples of one Python service against its chain: @want [(name, lines)] leaf first
    in agent_chain.py, then @tail's frames (runpy's, frozen from 3.11 on, any line) and no
    other Python frame;
    each Python segment right above a _PyEval_EvalFrameDefault frame (the outermost of
    its location), or, @python_only, no native frame in any sample."""
    hits = in_leaf = total = 0
    bad = None
    for c, locs in samples:
        total += c
        py = [(i, fr[0]) for i, (mid, fr) in enumerate(locs) if mid is None and fr]
        if python_only and len(py) != len(locs):
            raise Failure(f'{what}: --python-only, and a sample has native frames '
                          f'{[fr[0][0] for mid, fr in locs if mid is not None][:4]}')
        if not any(f[0] == 'py_agent_leaf' for _, f in py):
            continue
        in_leaf += c
        ok = len(py) == len(want) + len(tail)
        for k, (name, lines) in enumerate(want + tail):
            if not ok:
                break
            f = py[k][1]
            base = os.path.basename(f[1])
            ok = (f[0] == name and (lines is None and base in ('runpy.py', '<frozen runpy>') or
                                    lines is not None and base == 'agent_chain.py' and
                                    f[2] in lines))
        if ok and not python_only:
            # innermost Python frames first, then only native ones: the segment ends
            # at <module> (and at runpy's last): an eval frame must follow each
            ends = [len(want) - 1] + ([len(want) + len(tail) - 1] if tail else [])
            for k in ends:
                i = py[k][0]
                if i + 1 >= len(locs) or locs[i + 1][0] is None or \
                        locs[i + 1][1][-1][0] != '_PyEval_EvalFrameDefault':
                    ok = False
            # native frames only before the leaf's Python frame: never inside the chain
            first = py[0][0]
            if any(locs[i][0] is None for i in range(first)) or \
                    [i for i, _ in py[:len(want)]] != list(range(first, first + len(want))):
                ok = False
        if ok:
            hits += c
        elif bad is None:
            bad = [(fr[0][0] if fr else '?') + ('' if mid else f' ({os.path.basename(fr[0][1])}:'
                                                f'{fr[0][2]})') for mid, fr in locs][:14]
    log(f'{what}: {hits} of {total} samples ({in_leaf} in py_agent_leaf) carry '
        f'{" <- ".join(n for n, _ in want + tail)}')
    if hits < 20 or hits < 0.95 * in_leaf or hits < 0.8 * total:
        raise Failure(f'{what}: {hits} of {total} samples ({in_leaf} in py_agent_leaf) carry '
                      f'the chain; one that does not: {bad}')


def case_python(ctx):
    """Python services by script and module, chains merged, --python-only (see the top)."""
    import python_test
    found = python_test.interpreters()
    # 3.11 on: a Python call runs in its caller's eval loop, the chain is one segment
    # (3.10 gives each frame an eval frame of its own, which the check does not expect)
    python = next((found[k] for k in ('debian-3.11', 'pyenv-3.11', 'pyenv-3.12', 'pyenv-3.13')
                   if k in found), None)
    if not python:
        log('SKIP: needs CPython 3.11-3.13: /usr/bin/python3.11 or pyenv\'s')
        sys.exit(SKIP)
    exe = os.path.realpath(python)
    script = ctx.path('agent_chain.py')
    shutil.copy(os.path.join(ctx.progs, 'py', 'agent_chain.py'), script)
    want = chain_lines(script)
    rcv = [Receiver(free_port(), ctx.path('received')), Receiver(free_port(), ctx.path('py-only'))]
    for r in rcv:
        r.start()
    script_labels = {'exe': label_clean(exe), 'script': label_clean(script)}
    module_labels = {'exe': label_clean(exe), 'module': 'agent_chain'}

    def windows(pushes, name, labels):
        """How many payloads of service @name with exactly @labels (and host)."""
        n = 0
        for meta, _ in pushes:
            try:
                got, lab = service_labels(meta)
            except Failure:
                continue
            n += got == name and {k: v for k, v in lab.items() if k != 'host'} == labels
        return n

    agents = []
    try:
        # spinning until stopped (120 s at most if the test dies): the script, the module
        ctx.spawn([python, '-u', script, '120'], stdout=subprocess.DEVNULL)
        ctx.spawn([python, '-B', '-m', 'agent_chain', '120'], cwd=ctx.work,
                  stdout=subprocess.DEVNULL)
        # the two agents at once: the same processes, the same seconds
        for i, extra in enumerate(([], ['--python-only'])):
            errf = open(ctx.path(f'agent{i}.err'), 'w+')
            agents.append((ctx.spawn([ctx.sfprof, 'agent', '--push',
                                      f'http://127.0.0.1:{rcv[i].port}', '--spool-dir',
                                      ctx.path(f'spool{i}'), '--window', '2', '-F',
                                      '99', '--max-memory', '128M', '--group-by', 'exe',
                                      *extra], stderr=errf), errf))
        # until each receiver holds two windows of each service (a busy machine starts
        # the agents and the interpreters late), bounded
        wait_for('two windows of each Python service at each receiver',
                 lambda: all(windows(r.pushes(), 'agent_chain.py', script_labels) >= 2 and
                             windows(r.pushes(), 'agent_chain', module_labels) >= 2
                             for r in rcv), 90, agents[0][0])
        for a, errf in agents:
            a.send_signal(signal.SIGTERM)
        for a, errf in agents:
            a.wait(timeout=60)
            errf.seek(0)
            log(errf.read().rstrip('\n')[-1500:])
            if a.returncode:
                raise Failure(f'sfprof agent exited with {a.returncode}')
    finally:
        for r in rcv:
            r.stop()
        ctx.cleanup()
        for _, errf in agents:
            errf.close()
    runs = [r.pushes() for r in rcv]
    log('services: ' + ', '.join(sorted({service(m) for m, _ in runs[0]})))

    def of(pushes, name, labels):
        """The payloads of service @name whose labels hold @labels, and nothing more
        than host besides them."""
        mine = []
        for meta, path in pushes:
            n, lab = service_labels(meta)
            if n == name and {k: v for k, v in lab.items() if k != 'host'} == labels:
                mine.append(path)
        if not mine:
            raise Failure(f'no service {name} with labels {labels}: '
                          f'{sorted({service(m) for m, _ in pushes})[:10]}')
        return mine

    def samples(paths):
        return [s for path in paths for s in pprof_frames(path)]

    for k, (pushes, python_only) in enumerate(zip(runs, (False, True))):
        what = '--python-only ' if python_only else ''
        as_script = samples(of(pushes, 'agent_chain.py', script_labels))
        as_module = samples(of(pushes, 'agent_chain', module_labels))
        check_py_chain(as_script, want, [], python_only, f'{what}the script\'s service')
        check_py_chain(as_module, want, RUNPY, python_only, f'{what}the module\'s service')
        if not k:
            must_fail('the chain with two frames swapped', check_py_chain, as_script,
                      [want[0], want[2], want[1], want[3]], [], False, 'swapped')
            must_fail('the module\'s chain without runpy\'s frames', check_py_chain, as_module,
                      want, [], False, 'no runpy')
            must_fail('another line for py_agent_mid', check_py_chain, as_script,
                      [want[0], ('py_agent_mid', {w + 1 for w in want[1][1]})] + want[2:], [],
                      False, 'line')
            must_fail('native frames taken for --python-only\'s', check_py_chain, as_script,
                      want, [], True, 'native')
            must_fail('another script\'s label', of, pushes, 'agent_chain.py',
                      dict(script_labels, script=label_clean(script + 'x')))
            must_fail('the module named as a script', of, pushes, 'agent_chain',
                      dict(module_labels, script='agent_chain'))


def spool_files(spool):
    return sorted(n for n in os.listdir(spool) if n.endswith('.push'))


def case_spool(ctx):
    work = ctx.build_work()
    spool = ctx.path('spool')
    port = free_port()
    ctx.spawn([work, '30'])  # stopped by the test's cleanup
    # in disk blocks, the spool's own marker among them: room for a window's payloads on a
    # machine whose other work makes them large, and less than 7 windows of them
    bound = 64 * 1024
    for attempt in range(3):
        # --no-inline: the subject is the spool, and the newest payloads must be made while
        # the agent runs; under ASan on a loaded machine, the DWARF of every process's
        # libraries (inlined frames) left the pusher 6 of 9 windows behind
        s = agent(ctx, ['--push', f'http://127.0.0.1:{port}', '--spool-dir', spool, '--window',
                        '1', '-d', '7', '-F', '199', '--spool-size', str(bound),
                        '--flush-timeout', '0', '--no-inline'])
        left = spool_files(spool)
        size = sum(os.stat(os.path.join(spool, n)).st_blocks * 512 for n in left)
        log(f'spool: {len(left)} payloads, {size} bytes; {s["dropped"]} dropped')
        if s['dropped'] or attempt == 2:
            break
        # a quiet machine makes small payloads, and 7 windows of them all fit: a third of
        # what they took holds a window's and not 7 windows'
        bound = max(8192, size // 3)
        log(f'nothing dropped: again with --spool-size {bound}')
        shutil.rmtree(spool)
    if not s['dropped'] or size > bound or s['spooled'] != len(left):
        raise Failure(f'spool bound {bound}: {size} bytes held, {s["dropped"]} dropped')
    if s['dropped'] + len(left) != s['payloads']:
        raise Failure(f'{s["payloads"]} payloads: {s["dropped"]} dropped + {len(left)} held')
    if not left:
        raise Failure(f'the spool kept none of {s["payloads"]} payloads under its bound {bound}')
    newest = max(int(n[:10]) for n in left)
    if newest < int(time.time()) - 3:
        raise Failure('the spool did not keep the newest payloads')
    # the next run pushes what this one left
    rcv = Receiver(port, ctx.path('received'))
    rcv.start()
    try:
        agent(ctx, ['--push', f'http://127.0.0.1:{port}', '--spool-dir', spool, '--window', '1',
                    '-d', '1'])
    finally:
        rcv.stop()
    got = {int(m['query']['until'][0]) for m, _ in rcv.pushes()}
    held = {int(n[:10]) for n in left}
    if not held <= got or spool_files(spool):
        raise Failure(f'left by the first run: {sorted(held)}; pushed by the second: {sorted(got)}')


def case_containers(ctx):
    root = '/sys/fs/cgroup/unified'
    if not os.path.exists(os.path.join(root, 'cgroup.procs')):
        root = '/sys/fs/cgroup'
    if not os.path.exists(os.path.join(root, 'cgroup.procs')) or not shutil.which('unshare'):
        log('SKIP: no writable cgroup2 tree or no unshare')
        sys.exit(SKIP)
    work = ctx.build_work()
    ids = [secrets.token_hex(32), secrets.token_hex(32)]
    top = os.path.join(root, f'sfprof-agent-test-{os.getpid()}')
    groups = [os.path.join(top, f'docker-{ids[0]}.scope'),
              os.path.join(top, f'cri-containerd-{ids[1]}.scope')]
    try:
        for g in groups:
            os.makedirs(g)
    except OSError as e:
        log(f'SKIP: cannot make cgroups under {root}: {e}')
        sys.exit(SKIP)
    rcv = Receiver(free_port(), ctx.path('received'))
    rcv.start()
    try:
        # the tables' bound of the default --max-memory (12 MiB) is filled by cc1 and
        # libLLVM when other builds run beside the test: agent_work's table would then be
        # refused and its frames walked by frame pointers (README, Missing)
        a = ctx.spawn([ctx.sfprof, 'agent', '--push', f'http://127.0.0.1:{rcv.port}',
                       '--spool-dir', ctx.path('spool'), '--window', '2', '-d', '8', '-F', '99',
                       '--max-memory', '128M'],
                      stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        ctx.spawn(['sh', '-c', f'echo $$ > {groups[0]}/cgroup.procs && exec {work} 5'])
        ctx.spawn(['unshare', '-p', '-m', '--fork', 'sh', '-c',
                   f'echo $$ > {groups[1]}/cgroup.procs && exec {work} 5'])
        _, err = a.communicate(timeout=60)
        log(err)
    finally:
        rcv.stop()
        ctx.cleanup()
        for g in groups + [top]:
            try:
                os.rmdir(g)
            except OSError:
                pass
    pushes = rcv.pushes()
    names = sorted({service(m) for m, _ in pushes})
    log('services: ' + ', '.join(names))

    def check(want):
        for runtime, cid in want:
            mine = [p for p in pushes if service(p[0]).startswith(f'{runtime}-{cid[:12]}{{')]
            if not mine or f'container_id={cid}' not in service(mine[0][0]):
                raise Failure(f'no service {runtime}-{cid[:12]} with container_id={cid}')
            check_chain(mine, f'{runtime}-{cid[:12]}')
    check([('docker', ids[0]), ('containerd', ids[1])])
    must_fail('the other container\'s ID', check, [('docker', ids[1])])


def check_last(prof, t, secs, what):
    """Samples of @prof lie in [t - secs, t] (ns), and reach back near t - secs."""
    times = [s.time for s in prof.samples]
    if len(times) < 50:
        raise Failure(f'{what}: {len(times)} samples')
    old = [x for x in times if x < t - secs * 1e9 - 20e6]
    if old:
        raise Failure(f'{what}: {len(old)} of {len(times)} samples older than {secs} s before '
                      f'SIGUSR2 (the oldest {(t - min(times)) / 1e9:.3f} s before)')
    if min(times) > t - (secs - 0.3) * 1e9 or max(times) > t + 0.2e9:
        raise Failure(f'{what}: samples from {(t - min(times)) / 1e9:.3f} s to '
                      f'{(t - max(times)) / 1e9:.3f} s before SIGUSR2, not the last {secs} s')
    log(f'ok: {what}: {len(times)} samples, {(t - min(times)) / 1e9:.3f} to '
        f'{(t - max(times)) / 1e9:.3f} s before SIGUSR2')


def execd(pid, exe):
    """Whether a child of process @pid runs @exe."""
    kids = subprocess.run(['pgrep', '-P', str(pid)], stdout=subprocess.PIPE,
                          text=True).stdout.split()
    for kid in kids:
        try:
            if os.readlink(f'/proc/{kid}/exe') == os.path.realpath(exe):
                return True
        except OSError:
            pass
    return False


def case_flight(ctx):
    work = ctx.build_work()
    out = ctx.path('flight.data')
    rec = ctx.spawn([ctx.sfprof, 'record', '--flight-recorder', '2', '-F', '499', '-o', out,
                     '--', work, '6'], stderr=subprocess.PIPE, text=True)
    # 3 s after the command's exec (sfprof's child execs it once recording runs), however
    # long sfprof took to start: the recorder then holds 2 s
    wait_for('the command runs', lambda: execd(rec.pid, work), 60, rec)
    time.sleep(3)
    t = time.monotonic_ns()     # CLOCK_MONOTONIC, the samples' clock
    rec.send_signal(signal.SIGUSR2)
    _, err = rec.communicate(timeout=60)
    log(err)
    if rec.returncode:
        raise Failure(f'sfprof record exited with {rec.returncode}')
    dumps = [n for n in os.listdir(ctx.work) if n.startswith('flight.data.') and
             not n.endswith('.old')]
    if len(dumps) != 1:
        raise Failure(f'SIGUSR2 wrote {dumps}')
    prof = profile_oracle.load_profile(ctx.sfprof, ctx.path(dumps[0]))
    check_last(prof, t, 2, 'SIGUSR2')
    must_fail('samples older than asked', check_last, prof, t, 1, 'SIGUSR2 against 1 s')
    # its stacks are whole: the known chain, symbolized by the report's own reading
    p = run([ctx.sfprof, 'report', '-i', ctx.path(dumps[0]), '--stdio', '--sort', 'sym'])
    if 'agent_leaf' not in p.stdout:
        raise Failure('the dump has no agent_leaf')
    # at the end: the last 2 s before the command exited
    end = profile_oracle.load_profile(ctx.sfprof, out)
    last = max(s.time for s in end.samples)
    check_last(end, last, 2, 'at exit')


def connect_spans(pushes):
    """The windows [(from, until)] of connect series, from their pprofs' time and duration."""
    return sorted({(m['time_nanos'] // 10**9, (m['time_nanos'] + m['duration_nanos']) // 10**9)
                   for m, _ in pushes})


def check_requests(pushes):
    """Each request one window (all its series), each window in one request: none pushed twice."""
    of = {}
    for m, _ in pushes:
        of.setdefault(m['request'], set()).update(connect_spans([(m, None)]))
    spans = [sorted(s) for s in of.values()]
    if any(len(s) != 1 for s in spans):
        raise Failure(f'a request holds several windows: {spans}')
    flat = [s[0] for s in spans]
    if len(set(flat)) != len(flat):
        raise Failure(f'a window came in {len(flat) - len(set(flat)) + 1} requests: pushed twice')
    return len(of)


def case_connect(ctx):
    work = ctx.build_work()
    rcv = Receiver(free_port(), ctx.path('received'), ['--fail-first', '2'])
    spool = ctx.path('spool')
    rcv.start()
    token = secrets.token_hex(16)
    with open(ctx.path('token'), 'w') as f:
        f.write(token + '\n')
    os.chmod(ctx.path('token'), 0o600)
    try:
        ctx.spawn([work, '12'])
        s = agent(ctx, ['--push', f'http://127.0.0.1:{rcv.port}/', '--push-api', 'connect',
                        '--spool-dir', spool, '--window', '2', '-d', '7', '-F', '99',
                        '--max-backoff', '1', '--flush-timeout', '10', '--max-memory', '128M',
                        '--tenant', 'team-c', '--bearer-token-file', ctx.path('token')])
    finally:
        rcv.stop()
    pushes = rcv.pushes()
    with open(os.path.join(rcv.out, 'failed.json')) as f:
        failed = json.load(f)['failed']
    log(f'{s["windows"]} windows, {s["payloads"]} payloads, {s["pushed"]} pushed, '
        f'{s["failures"]} tries failed; the receiver failed {failed}, stored {len(pushes)} series')
    if s['failed'] or s['windows'] < 3:
        raise Failure(f'{s["windows"]} windows written, {s["failed"]} not')
    if failed != 2 or s['failures'] != 2:
        raise Failure(f'the receiver failed {failed} pushes, the agent counted {s["failures"]}')
    # the connect error's message, as the receiver wrote it, in the agent's log
    if not re.search(r'push\.v1\.PusherService/Push: HTTP 500 \(internal: the receiver is told '
                     r'to fail \(push 1\)\): payloads stay spooled', s['stderr']):
        raise Failure('the agent did not say the connect error\'s message')
    if any(m['api'] != 'connect' for m, _ in pushes):
        raise Failure('a push came to /ingest')
    requests = check_requests(pushes)
    n = s['windows'] - s['empty']
    # one payload, one POST per window
    if not (s['payloads'] == s['pushed'] == requests == n) or s['spooled']:
        raise Failure(f'{n} windows with samples, {s["payloads"]} payloads, {s["pushed"]} pushed, '
                      f'{requests} requests taken, {s["spooled"]} left')
    dup = pushes + [(dict(m, request=10**6), p) for m, p in pushes[:1]]
    must_fail('a window pushed twice', check_requests, dup)
    spans = connect_spans(pushes)
    check_tiling(spans, n)
    must_fail('a window left out', check_tiling, spans[:1] + spans[2:], n)
    check_total(pushes, s['samples'])
    must_fail('a series left out', check_total, pushes[1:], s['samples'])
    for m, _ in pushes:
        lb = m['labels']
        if (lb.get('__name__') != 'process_cpu' or not lb.get('service_name') or
                lb.get('host') != label_clean(os.uname().nodename) or
                lb.get('pyroscope_spy') != 'sfprof'):
            raise Failure(f'labels {lb}')
        if any(not re.fullmatch(r'[a-zA-Z_][a-zA-Z0-9_]*', k) for k in lb):
            raise Failure(f'a label name Prometheus refuses: {sorted(lb)}')
        if (m['content_type'] != 'application/proto' or m['connect_version'] != '1' or
                m['tenant'] != 'team-c' or m['authorization'] != f'Bearer {token}'):
            raise Failure(f'headers: {m["content_type"]}, {m["connect_version"]}, '
                          f'{m["tenant"]}, {m["authorization"]}')
    # one series per service in each request
    for r in {m['request'] for m, _ in pushes}:
        names = [tuple(sorted(m['labels'].items())) for m, _ in pushes if m['request'] == r]
        if len(names) != len(set(names)):
            raise Failure(f'request {r} holds a service twice')
    mine = [x for x in pushes if x[0]['labels'].get('service_name') == 'agent_work' and
            x[0]['labels'].get('exe') == label_clean(work)]
    if not mine:
        raise Failure(f'no series agent_work with exe={work}: '
                      f'{sorted({m["labels"].get("service_name") for m, _ in pushes})}')
    check_chain(mine, 'agent_work (connect)')
    must_fail('another leaf', check_chain, mine, 'agent_work', ['agent_mid', 'agent_leaf', 'main'])
    if token in s['stderr']:
        raise Failure('the token was printed')
    # payloads for connect left in the spool are not pushed to /ingest by another run
    os.makedirs(spool, exist_ok=True)
    name = f'{int(time.time()):010d}-00000000-00000000.push'
    body = b'SFPUSH2\nconnect ' + f'http://127.0.0.1:{rcv.port}{"/push.v1.PusherService/Push"}'.encode() + \
        b'\n\n' + b'\x0a\x00'
    with open(os.path.join(spool, name), 'wb') as f:
        f.write(body)
    # one left by an sfprof before connect (SFPUSH1, no API line): an /ingest payload
    old = f'{int(time.time()) - 1:010d}-00000000-00000001.push'
    with open(os.path.join(spool, old), 'wb') as f:
        f.write(b'SFPUSH1\nname=old_payload%7Bhost%3Dh%7D&from=1&until=2&format=pprof\nbody')
    rcv2 = Receiver(rcv.port, ctx.path('received2'))
    rcv2.start()
    try:
        s2 = agent(ctx, ['--push', f'http://127.0.0.1:{rcv.port}', '--spool-dir', spool,
                         '--window', '1', '-d', '1', '-F', '19'])
    finally:
        rcv2.stop()
    if not os.path.exists(os.path.join(spool, name)):
        raise Failure('the connect payload left by a run was taken by an ingest run')
    if any(m.get('api') == 'connect' for m, _ in rcv2.pushes()):
        raise Failure('an ingest run pushed to connect')
    if os.path.exists(os.path.join(spool, old)) or \
            not any(service(m) == 'old_payload{host=h}' for m, _ in rcv2.pushes()):
        raise Failure('the SFPUSH1 payload was not pushed to /ingest')
    if 'payloads made for another API or server' not in s2['stderr'] or \
            not re.search(r'push: 1 payloads spooled for another API', s2['stderr']):
        raise Failure('the ingest run did not say it left the connect payload')
    log('ok: the connect payload stays for a connect run')


def otlp_requests(pushes):
    """[(meta, decoded request)] of the OTLP pushes stored, in the order they came."""
    import otlp_decode
    out = []
    for m, path in pushes:
        with open(path, 'rb') as f:
            try:
                out.append((m, otlp_decode.decode_request(f.read())))
            except (otlp_decode.DecodeError, UnicodeDecodeError) as e:
                raise Failure(f'{path}: not an ExportProfilesServiceRequest: {e}')
    return out


def otlp_spans(reqs):
    """Each request's window (from, until) in Unix seconds: one per request, or Failure."""
    import otlp_decode
    spans = []
    for _, req in reqs:
        sp = {(p.get('time_unix_nano', 0) // 10**9,
               (p.get('time_unix_nano', 0) + p.get('duration_nano', 0)) // 10**9)
              for _, p in otlp_decode.profiles(req)}
        if len(sp) != 1:
            raise Failure(f'a request holds {len(sp)} windows: {sorted(sp)}')
        spans.append(sp.pop())
    if len(set(spans)) != len(spans):
        raise Failure(f'a window came in two requests: pushed twice ({spans})')
    return sorted(spans)


def otlp_total(reqs, samples):
    """The values of every sample add up to @samples times the (one) period."""
    import otlp_decode
    periods = {p.get('period', 0) for _, req in reqs for _, p in otlp_decode.profiles(req)}
    if len(periods) != 1 or not periods.issubset({10**9 // 99, round(10**9 / 99)}):
        raise Failure(f'periods {sorted(periods)}, not 1e9/99 ns')
    period = periods.pop()
    got = sum(v for _, req in reqs for _, _, v in otlp_decode.stacks(req))
    if got != samples * period:
        raise Failure(f'the values add up to {got}, not {samples} samples x {period} ns')
    return period


def otlp_stacks_named(reqs):
    """Every stack resolves through the dictionary to function names, none empty or an address."""
    import otlp_decode
    n = 0
    for _, req in reqs:
        for attrs, frames, _ in otlp_decode.stacks(req):
            bad = [f for f in frames if not f or f.startswith('0x')]
            if not frames or bad:
                raise Failure(f'{attrs.get("service.name")}: a stack not resolved to names: '
                              f'{frames}')
            n += 1
    return n


def otlp_chain(reqs, exe, chain=CHAIN):
    """Samples of agent_work's resource with @chain leaf first (by value), and of all its samples."""
    import otlp_decode
    hits = total = 0
    for _, req in reqs:
        for attrs, frames, v in otlp_decode.stacks(req):
            if attrs.get('service.name') == 'agent_work' and \
                    attrs.get('process.executable.path') == exe:
                total += v
                if frames[:len(chain)] == chain:
                    hits += v
    if not total or hits < total // 2:
        raise Failure(f'agent_work: {hits} of {total} ns have {" <- ".join(chain)}')
    log(f'ok: agent_work: {hits} of {total} ns have the complete, symbolized chain')


def otlp_resources(reqs, host):
    import otlp_decode
    for _, req in reqs:
        names = []
        for rp in req['resource_profiles']:
            a = otlp_decode.resource_attrs(rp)
            if not a.get('service.name') or a.get('host.name') != host or \
                    a.get('deployment.environment') != 'test':
                raise Failure(f'resource attributes {a}')
            names.append(tuple(sorted(a.items())))
        if len(names) != len(set(names)):
            raise Failure('a request holds a resource twice')


def case_otlp(ctx):
    work = ctx.build_work()
    rcv = Receiver(free_port(), ctx.path('received'), ['--fail-first', '2', '--partial', '1'])
    url = f'http://127.0.0.1:{rcv.port}'
    env = dict(os.environ, OTEL_EXPORTER_OTLP_HEADERS='x-test=1',
               OTEL_RESOURCE_ATTRIBUTES='deployment.environment=test',
               OTEL_EXPORTER_OTLP_COMPRESSION='gzip', OTEL_SERVICE_NAME='sfprof-agent')
    for args, want in ((['--push', url, '--otlp-endpoint', url], 'one destination'),
                       (['--otlp-endpoint', url, '--tenant', 't'], 'OTEL_EXPORTER_OTLP_HEADERS')):
        p = run([ctx.sfprof, 'agent', *args, '-d', '1'], check=False, timeout=30)
        if p.returncode != 2 or want not in p.stderr:
            raise Failure(f'{args}: exit {p.returncode}, not refused saying "{want}"')
    log('ok: --push with --otlp-endpoint and --tenant with it are refused')
    # one script's name in two folders: two services, whose resource attributes are the same
    twins = []
    for d in ('a', 'b'):
        os.makedirs(ctx.path(d), exist_ok=True)
        twins.append(ctx.path(os.path.join(d, 'twin.py')))
        with open(twins[-1], 'w') as f:
            f.write('import time\nend = time.monotonic() + 12\nwhile time.monotonic() < end:\n'
                    '    pass\n')
    rcv.start()
    try:
        ctx.spawn([work, '12'])
        for t in twins:
            ctx.spawn([sys.executable, t])
        s = agent(ctx, ['--otlp-endpoint', url, '--spool-dir', ctx.path('spool'),
                        '--window', '2', '-d', '7', '-F', '99', '--max-backoff', '1',
                        '--flush-timeout', '10', '--max-memory', '128M'], env=env)
    finally:
        rcv.stop()
    pushes = rcv.pushes()
    with open(os.path.join(rcv.out, 'failed.json')) as f:
        failed = json.load(f)['failed']
    n = s['windows'] - s['empty']
    log(f'{s["windows"]} windows, {s["payloads"]} payloads, {s["pushed"]} pushed, '
        f'{s["failures"]} tries failed; the receiver failed {failed}, took {len(pushes)}')
    if s['failed'] or s['windows'] < 3:
        raise Failure(f'{s["windows"]} windows written, {s["failed"]} not')
    if failed != 2 or s['failures'] != 2:
        raise Failure(f'the receiver failed {failed} pushes, the agent counted {s["failures"]}')
    if not re.search(r'/v1development/profiles: HTTP 500 \(the receiver is told to fail '
                     r'\(push 1\)\): payloads stay spooled', s['stderr']):
        raise Failure('the agent did not say the google.rpc.Status message')
    said = re.findall(r'/v1development/profiles: 1 profiles rejected: one of them was bad',
                      s['stderr'])
    if len(said) != 1:
        raise Failure(f'the partial success said {len(said)} times, not once')
    m = re.search(r'push: (\d+) profiles rejected by the OTLP endpoint', s['stderr'])
    if not m or int(m[1]) != n:
        raise Failure(f'rejected profiles counted: {m[1] if m else None}, want {n}')
    if any(m.get('api') != 'otlp' or m['path'] != '/v1development/profiles' or
           m['content_encoding'] != 'gzip' or m['content_type'] != 'application/x-protobuf' or
           m['headers'].get('x-test') != '1' or 'x-scope-orgid' in m['headers']
           for m, _ in pushes):
        raise Failure(f'headers or path: {[m.get("headers") for m, _ in pushes][:1]}')
    if not (s['payloads'] == s['pushed'] == len(pushes) == n) or s['spooled']:
        raise Failure(f'{n} windows with samples, {s["payloads"]} payloads, {s["pushed"]} pushed, '
                      f'{len(pushes)} requests taken, {s["spooled"]} left')
    reqs = otlp_requests(pushes)
    spans = otlp_spans(reqs)
    must_fail('a window pushed twice', otlp_spans, reqs + reqs[:1])
    check_tiling(spans, n)
    must_fail('a window left out', check_tiling, spans[:1] + spans[2:], n)
    period = otlp_total(reqs, s['samples'])
    must_fail('a request left out', otlp_total, reqs[1:], s['samples'])
    must_fail('one sample more', otlp_total, reqs, s['samples'] + 1)
    log(f'ok: the values add up to {s["samples"]} samples x {period} ns')
    log(f'ok: {otlp_stacks_named(reqs)} stacks resolve to function names')
    otlp_chain(reqs, work)
    must_fail('another leaf', otlp_chain, reqs, work, ['agent_mid', 'agent_leaf', 'main'])
    host = os.uname().nodename
    otlp_resources(reqs, host)
    must_fail('another host', otlp_resources, reqs, host + 'x')
    import otlp_decode
    twin = [rp for _, req in reqs for rp in req['resource_profiles']
            if otlp_decode.resource_attrs(rp).get('service.name') == 'twin.py']
    if not twin:
        raise Failure('no resource of twin.py, the script run from two folders')
    dup = copy.deepcopy(reqs[0])
    dup[1]['resource_profiles'].append(dup[1]['resource_profiles'][0])
    must_fail('a resource twice', otlp_resources, [dup], host)
    log('ok: every resource has service.name, host.name and deployment.environment')
    # protoc with this project's own message definitions reads the same bytes (where installed)
    if shutil.which('protoc'):
        proto_dir = os.path.join(os.path.dirname(os.path.dirname(HERE)), 'docs', 'otlp')
        with open(pushes[0][1], 'rb') as f:
            p = subprocess.run(['protoc', '-I', proto_dir,
                                '--decode=sfprof.otlp.ExportProfilesServiceRequest',
                                os.path.join(proto_dir, 'sfprof_otlp.proto')], stdin=f,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        if p.returncode or b'"service.name"' not in p.stdout:
            raise Failure(f'protoc --decode: {p.returncode} {p.stderr[:300]!r}')
        log('ok: protoc --decode reads the first request')
    else:
        log('note: no protoc (protobuf-compiler): not read by protoc')
    # figures: a window's request, raw (as stored) and gzipped (as sent)
    import gzip as gz
    raw = [os.path.getsize(p) for _, p in pushes]
    sent = [int(m['headers'].get('content-length', 0)) for m, _ in pushes]
    log(f'figure: OTLP bytes per window: {sum(raw) / len(raw):.0f} raw, '
        f'{sum(sent) / len(sent):.0f} gzipped (as sent; gzip -6 of the raw: '
        f'{sum(len(gz.compress(open(p, "rb").read(), 6)) for _, p in pushes) / len(pushes):.0f})')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--progs', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', required=True)
    args = ap.parse_args()
    preconditions()
    ctx = Ctx(args)
    cases = {'windows': case_windows, 'down': case_down, 'spool': case_spool,
             'containers': case_containers, 'flight': case_flight, 'raw': case_raw,
             'jit': case_jit, 'python': case_python, 'connect': case_connect,
             'otlp': case_otlp}
    try:
        cases[args.case](ctx)
    except Failure as e:
        log(f'FAIL: {e}')
        return 1
    finally:
        ctx.cleanup()
    log('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main())
