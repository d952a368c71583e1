#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`sfprof record` and `report` on a Go program, with go tool nm as the oracle (issue 28).

gowork.go (main > goTop > goMid > goLeaf, goLeaf frameless: no frame record,
so frame pointers lose goMid) is built by the Go toolchain three ways: plain,
-ldflags=-s (no symbol table) and -ldflags='-s -w' (no DWARF either). Go
binaries have no .eh_frame and no .sframe: only Go's own table (.gopclntab)
unwinds them. The three are recorded at once, each under `sfprof record -- CMD`
until it has MIN_SAMPLES samples (bounded), then:

  chains    >= 95% of the samples whose pc is in main.goLeaf have the return
            addresses goMid, goTop, main.main in turn (by go tool nm of the
            plain build: the text of the three is the same, checked), and
            then runtime.main and runtime.goexit;
  complete  record's summary says >= 95% of the user stacks are complete, and
            report's "Truncated stacks" is <= 5%;
  names     every frame `sfprof script` names is the function go tool nm has
            at that address (an assembly body's ".abi0" dropped), in the
            stripped builds too;
  signal    a sample taken in Go's signal handler (SIGURG preemption, when one
            was caught) has runtime.sigreturn (Go's sa_restorer) above
            runtime.sigtramp, and the interrupted pc after it.

Every check is also run once with a wrong expectation and must then fail.
Exit status 0 pass, 1 fail, 77 skip (not root, no BTF, no go).
"""

import argparse
import bisect
import os
import re
import shutil
import signal
import subprocess
import sys
import time

SKIP = 77
MIN_SAMPLES = 300           # samples of the program per build (0.3 s at 999 Hz)
MIN_PERCENT = 95.0
DEADLINE = 30               # seconds a recording may take to reach MIN_SAMPLES
CHAIN = ['main.goLeaf', 'main.goMid', 'main.goTop', 'main.main', 'runtime.main', 'runtime.goexit']
BUILDS = {'plain': '', 'stripped': '-s', 'nodwarf': '-s -w'}


class Failure(Exception):
    pass


def log(msg=''):
    print(msg, flush=True)


def run(cmd, **kw):
    log(f'$ ' + ' '.join(str(c) for c in cmd))
    t0 = time.monotonic()
    p = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, errors='replace', timeout=kw.pop('timeout', 120), **kw)
    log(f'  ({time.monotonic() - t0:.2f} s)')
    if p.returncode != 0:
        raise Failure(f'{os.path.basename(str(cmd[0]))} exited with {p.returncode}: '
                      f'{p.stderr.strip()}')
    return p


class Nm:
    """go tool nm of the plain build: text symbols by address."""

    def __init__(self, go, path):
        out = run([go, 'tool', 'nm', '-size', path]).stdout
        syms = []
        for line in out.splitlines():
            m = re.match(r'^\s*([0-9a-f]+)\s+(\d+)\s+([Tt])\s+(.+)$', line)
            if m and int(m.group(2)):
                name = m.group(4)
                syms.append((int(m.group(1), 16), int(m.group(2)),
                             name[:-5] if name.endswith('.abi0') else name))
        syms.sort()
        self.addrs = [s[0] for s in syms]
        self.syms = syms
        self.by_name = {s[2]: s for s in syms}

    def name(self, addr):
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0:
            return None
        start, size, name = self.syms[i]
        return name if addr < start + size else None


def code_layout(path):
    """(address, mnemonic) of each instruction of .text, by objdump: the -s builds differ from
    the plain one in data addresses only, which keeps the plain build's nm valid for them."""
    out = run(['objdump', '-d', '-j', '.text', '--no-show-raw-insn', path], timeout=120).stdout
    layout = []
    for line in out.splitlines():
        addr, tab, insn = line.partition(':\t')
        if tab:
            layout.append((addr, insn.split(' ', 1)[0]))
    return layout


def record(sfprof, progs, work):
    """`sfprof record -- PROG` for each build at once, each until its profile holds MIN_SAMPLES
    samples: {build: (profile, record's stderr)}."""
    recs, outs, stopped = {}, {}, set()
    for build, prog in progs.items():
        outs[build] = os.path.join(work, build + '.data')
        if os.path.exists(outs[build]):
            os.unlink(outs[build])     # an older run's profile would count as this one's
        cmd = [sfprof, 'record', '-F', '999', '-o', outs[build], '--', prog, '60s']
        log('$ ' + ' '.join(cmd) + ' &')
        recs[build] = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       text=True, errors='replace')
    deadline = time.monotonic() + DEADLINE
    result = {}
    try:
        while len(stopped) < len(recs):
            if time.monotonic() > deadline:
                raise Failure(f'fewer than {MIN_SAMPLES} samples within {DEADLINE} s')
            for build, rec in recs.items():
                if build in stopped:
                    continue
                if rec.poll() is not None:
                    raise Failure(f'{build}: sfprof record exited early with {rec.returncode}: '
                                  f'{rec.stderr.read().strip()}')
                if not os.path.exists(outs[build]):
                    continue
                p = subprocess.run([sfprof, 'dump', '-i', outs[build]], stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True, errors='replace')
                if sum(1 for l in p.stdout.splitlines() if l.startswith('sample ')) >= MIN_SAMPLES:
                    rec.send_signal(signal.SIGINT)
                    stopped.add(build)
            time.sleep(0.1)
        for build, rec in recs.items():
            _, err = rec.communicate(timeout=30)
            if rec.returncode != 0:
                raise Failure(f'{build}: sfprof record exited with {rec.returncode}: '
                              f'{err.strip()}')
            log(err.rstrip('\n'))
            result[build] = (outs[build], err)
    finally:
        for rec in recs.values():
            if rec.poll() is None:
                rec.kill()
                rec.wait()
    return result


def user_stacks(sfprof, path):
    """[addresses of each sample's user stack, frame 0 first], from sfprof dump."""
    out = run([sfprof, 'dump', '-i', path]).stdout
    stacks, samples = {}, []
    for line in out.splitlines():
        if line.startswith('stack ') and ' user ' in line:
            f = line.split()
            stacks[f[1]] = [int(x, 16) for x in f[4::2] if x != 'end']
        elif line.startswith('sample '):
            m = re.search(r' ustack (\d+)', line)
            if m and m.group(1) in stacks:
                samples.append(stacks[m.group(1)])
    return samples


def check_chains(nm, samples, chain, fails, what):
    """The share of goLeaf samples whose return addresses name @chain in turn."""
    leaf = [s for s in samples if nm.name(s[0]) == chain[0]]
    good = sum(1 for s in leaf if [nm.name(a - 1) for a in s[1:len(chain)]] == chain[1:])
    pct = 100.0 * good / len(leaf) if leaf else 0.0
    log(f'{what}: {good} of {len(leaf)} samples in {chain[0]} have the chain '
        f'{" > ".join(reversed(chain))} ({pct:.1f}%)')
    if len(leaf) < MIN_SAMPLES // 2 or pct < MIN_PERCENT:
        fails.append(f'{what}: {pct:.1f}% of {len(leaf)} samples in {chain[0]} have its chain')


def check_complete(record_err, report_out, fails, what, max_truncated=100.0 - MIN_PERCENT):
    m = re.search(r'(\d+) with a user stack, ([\d.]+)% of them complete', record_err)
    if not m:
        fails.append(f'{what}: no "with a user stack" in record\'s summary')
        return
    complete = float(m.group(2))
    t = re.search(r'# Truncated stacks: (\d+) samples \(([\d.]+)%\)', report_out)
    truncated = float(t.group(2)) if t else 0.0
    log(f'{what}: record says {complete}% of {m.group(1)} user stacks complete; report says '
        f'{truncated}% truncated')
    if complete < MIN_PERCENT:
        fails.append(f'{what}: record says only {complete}% of the user stacks are complete')
    if truncated > max_truncated:
        fails.append(f'{what}: report says {truncated}% of the stacks are truncated')


def check_names(nm, script_out, fails, what, rename=None):
    """Each frame line of script: ADDR NAME+0xOFF (PATH); NAME must be nm's at ADDR (as looked up)."""
    checked = wrong = 0
    for block in script_out.split('\n\n'):
        lines = [l for l in block.splitlines() if l.startswith('\t')]
        for i, line in enumerate(lines):
            m = re.match(r'^\s+([0-9a-f]+) (.+?)\+0x([0-9a-f]+) \((.*)\)$', line)
            if not m or 'gowork' not in m.group(4):
                continue
            addr, name = int(m.group(1), 16), m.group(2)
            if name.endswith('.abi0'):
                name = name[:-5]
            if rename and name in rename:
                name = rename[name]
            checked += 1
            # a precise pc is named by itself, a return address by the call before it
            want = (nm.name(addr), nm.name(addr - 1))
            if name not in want:
                wrong += 1
                if wrong <= 5:
                    log(f'{what}: {line.strip()}: go tool nm says {want}')
    log(f'{what}: {checked} frames named, {wrong} differ from go tool nm')
    if not checked or wrong:
        fails.append(f'{what}: {wrong} of {checked} frame names differ from go tool nm')


def check_signal(nm, samples, fails, what, sigreturn='runtime.sigreturn'):
    """In Go's signal handler: sigtramp's caller is sigreturn, at its entry; after it, the interrupted pc."""
    seen = 0
    for s in samples:
        names = [nm.name(a) for a in s]
        if 'runtime.sigtramp' not in names:
            continue
        i = names.index('runtime.sigtramp')
        if i + 2 >= len(s):
            fails.append(f'{what}: a stack ends at runtime.sigtramp')
            continue
        seen += 1
        entry = nm.by_name.get(sigreturn, (None,))[0]
        if s[i + 1] != entry:
            fails.append(f'{what}: sigtramp returns to {s[i + 1]:#x}, not {sigreturn} ({entry})')
        if nm.name(s[i + 2]) is None:
            fails.append(f'{what}: the interrupted pc {s[i + 2]:#x} is in no function')
    log(f'{what}: {seen} samples in Go\'s signal handler')
    return seen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--source', required=True, help='gowork.go')
    ap.add_argument('--workdir', required=True)
    args = ap.parse_args()
    if os.geteuid() != 0:
        log('SKIP: sfprof record needs root (CAP_BPF and CAP_PERFMON)')
        return SKIP
    if not os.access('/sys/kernel/btf/vmlinux', os.R_OK):
        log('SKIP: this kernel has no BTF')
        return SKIP
    go = shutil.which('go')
    if not go or not shutil.which('objdump'):
        log('SKIP: needs the Go toolchain (go) and objdump')
        return SKIP
    sfprof = os.path.abspath(args.sfprof)
    work = os.path.abspath(args.workdir)
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, GOCACHE=os.path.join(work, 'gocache'), GO111MODULE='off', GOFLAGS='',
               GOPROXY='off')
    progs = {}
    for build, ldflags in BUILDS.items():
        progs[build] = os.path.join(work, 'gowork_' + build)
        run([go, 'build', '-ldflags=' + ldflags, '-o', progs[build], args.source], env=env)
    nm = Nm(go, progs['plain'])
    for name in CHAIN:
        if name not in nm.by_name:
            raise Failure(f'go tool nm has no {name}')
    plain_code = code_layout(progs['plain'])
    fails = []
    signals = 0
    for build, prog in progs.items():
        if build != 'plain' and code_layout(prog) != plain_code:
            raise Failure(f'{build}: its code is laid out unlike the plain build\'s: nm cannot '
                          'name it')
    recorded = record(sfprof, progs, work)
    for build in progs:
        out, err = recorded[build]
        samples = user_stacks(sfprof, out)
        report = run([sfprof, 'report', '-i', out]).stdout
        script = run([sfprof, 'script', '-i', out]).stdout
        check_chains(nm, samples, CHAIN, fails, build)
        check_complete(err, report, fails, build)
        check_names(nm, script, fails, build)
        seen = check_signal(nm, samples, fails, build)
        signals += seen

        # the checks can fail
        wrong = []
        check_chains(nm, samples, [CHAIN[0], CHAIN[2], CHAIN[1]] + CHAIN[3:], wrong, 'must fail')
        check_complete(err.replace('of them complete', 'of them'), report, wrong, 'must fail')
        check_complete(err, report, wrong, 'must fail', max_truncated=-1)
        check_names(nm, script, wrong, 'must fail', rename={'main.goMid': 'main.goTop'})
        if len(wrong) != 4:
            fails.append(f'{build}: a check with a wrong expectation passed: {wrong}')
        if seen:
            wrong = []
            check_signal(nm, samples, wrong, 'must fail', sigreturn='runtime.sigtramp')
            if not wrong:
                fails.append(f'{build}: the signal check with a wrong sa_restorer passed')
    if not signals:
        log('note: no sample fell in Go\'s signal handler; its frame was not checked')
    for f in fails:
        log('FAIL: ' + f)
    return 1 if fails else 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except Failure as e:
        log(f'FAIL: {e}')
        sys.exit(1)
