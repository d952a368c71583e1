#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""perf's figures on JIT workloads whose call chains are known by construction.

The workloads (tests/progs/jit/: chain.js, Chain.java, chain.py) spin until the process has
used SECONDS of CPU time (default 4; CPU time, so that the share of the samples in start-up
does not grow on a loaded machine) in

    jit_main -> jit_outer -> jit_middle -> jit_leaf

the time in jit_leaf. Each row runs one under `perf record` with the runtime's flags for
external profilers and computes from `perf script`'s text (comm, pid/tid, ip, sym, dso):

  named     % of the samples whose stack names one of the program's functions (a frame
            whose symbol holds jit_main, jit_outer, jit_middle or jit_leaf as a word:
            V8's `JS:*jit_leaf /path/chain.js:20:18`, HotSpot's `int Chain.jit_leaf(int,
            int)`, CPython's `py::jit_leaf:/path/chain.py`)
  chain     % of the named samples whose frames naming the program's functions, read
            outermost first, are exactly a prefix of the chain starting at jit_main
            (the caller above its callee, none missing, none extra)
  complete  % of the samples with a user stack whose outermost user frame is where a
            process or a thread starts: _start, __libc_start_main(_impl), start_thread,
            __clone3/clone3/__clone/clone, or __libc_start_call_main (the outermost frame a
            frame-pointer walk can reach: glibc has no frame pointers, and only its fixed
            start-up frames lie beyond it)

Rows (ROWS below): the runtime flags that make the JIT code nameable, and the same
runtimes without them ("-plain": nothing there should get worse).

  node-map        node --perf-basic-prof                  perf -g (V8 keeps rbp)
  node-jitdump    node --perf-prof --perf-prof-unwinding-info --interpreted-frames-native-stack
                                                          perf --call-graph dwarf, inject --jit
  java-map        java -XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions
                  -XX:+DumpPerfMapAtExit                  perf -g
  py312-perf      python3.12 -X perf                      perf --call-graph dwarf (pyenv's
                  CPython has no frame pointers: -g sees one frame, row py312-perf-fp)
  py313-perf-jit  python3.13 -X perf_jit                  perf --call-graph dwarf, inject --jit

Debian's perf 6.1 sometimes dies on an assertion (util/build-id.c) reading the records
of BPF programs other recordings load: it records with --no-bpf-event -B and each row is
tried up to four times; a row perf could not do says so.

jit_test.py imports this file for the workloads, the runtimes, the parsing and the figures,
and computes the same figures from `sfprof script`.

By hand (as root):  tests/integration/jit_perf_baseline.py [--seconds 4] [--rows a,b] [--keep DIR]
Exit status 0 when every row ran (or its runtime is missing), 1 when perf failed a row.
"""

import argparse
import glob
import os
import re
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
PROGS_JIT = os.path.realpath(os.path.join(HERE, '..', 'progs', 'jit'))

CHAIN = ['jit_main', 'jit_outer', 'jit_middle', 'jit_leaf']
LEAF = CHAIN[-1]
OWN = re.compile(r'(?<![A-Za-z0-9_])(' + '|'.join(CHAIN) + r')(?![A-Za-z0-9_])')
# where a process or a thread starts (see the docstring)
START = {'_start', '__libc_start_main', '__libc_start_main_impl', '__libc_start_call_main',
         'start_thread', '__clone3', 'clone3', '__clone', 'clone'}
KERNEL_DSOS = ('[kernel.kallsyms]', '[kernel]', '[guest.kernel.kallsyms]')
SCRIPT_FIELDS = 'comm,pid,tid,time,event,ip,sym,dso'
FREQ = 999

# The Java flags that keep every method of Chain in a frame of its own (no inlining),
# and HotSpot's "CompileCommand: dontinline ..." line off stdout.
JAVA_CHAIN_FLAGS = ['-XX:CompileCommand=quiet', '-XX:CompileCommand=dontinline,Chain::*']

# name: runtime, the runtime's flags, perf's call-graph mode, perf inject --jit,
# whether the row's JIT frames should be named (False: the "nothing gets worse" rows)
ROWS = {
    'node-map': dict(runtime='node', flags=['--perf-basic-prof'], mode='fp', inject=False,
                     jit=True),
    'node-jitdump': dict(runtime='node', flags=['--perf-prof', '--perf-prof-unwinding-info',
                                                '--interpreted-frames-native-stack'],
                         mode='dwarf', inject=True, jit=True),
    'java-map': dict(runtime='java', flags=['-XX:+PreserveFramePointer',
                                            '-XX:+UnlockDiagnosticVMOptions',
                                            '-XX:+DumpPerfMapAtExit'],
                     mode='fp', inject=False, jit=True),
    'py312-perf': dict(runtime='python3.12', flags=['-X', 'perf'], mode='dwarf', inject=False,
                       jit=True),
    'py313-perf-jit': dict(runtime='python3.13', flags=['-X', 'perf_jit'], mode='dwarf',
                           inject=True, jit=True),
    # in PID and mount namespaces of its own with a /tmp of its own, as in a container: its
    # map is /tmp/perf-NSPID.map there, found through /proc/PID/root (sfprof only)
    'py312-container': dict(runtime='python3.12', flags=['-X', 'perf'], mode='dwarf',
                            inject=False, jit=True, container=True),
    # without the flags (Java keeps -XX:+PreserveFramePointer: without it no frame-pointer
    # or SFrame unwinder gets through HotSpot's compiled frames, map or no map)
    'node-plain': dict(runtime='node', flags=[], mode='fp', inject=False, jit=False),
    'java-plain': dict(runtime='java', flags=['-XX:+PreserveFramePointer'], mode='fp',
                       inject=False, jit=False),
    'py312-plain': dict(runtime='python3.12', flags=[], mode='dwarf', inject=False, jit=False),
    'py313-plain': dict(runtime='python3.13', flags=[], mode='dwarf', inject=False, jit=False),
    # for the record: perf -g on CPython 3.12 (no frame pointers); V8's jitdump without
    # its CODE_UNWINDING_INFO records
    'node-jitdump-nounwind': dict(runtime='node', flags=['--perf-prof',
                                                         '--interpreted-frames-native-stack'],
                                  mode='dwarf', inject=True, jit=True),
    'py312-perf-fp': dict(runtime='python3.12', flags=['-X', 'perf'], mode='fp', inject=False,
                          jit=True),
}
DEFAULT_ROWS = ['node-map', 'node-jitdump', 'java-map', 'py312-perf', 'py313-perf-jit',
                'node-plain', 'java-plain', 'py312-plain', 'py313-plain', 'py312-perf-fp',
                'node-jitdump-nounwind']


def log(msg=''):
    print(msg, flush=True)


def quote(cmd):
    return ' '.join(shlex.quote(str(c)) for c in cmd)


# --- the runtimes ---

class Missing(Exception):
    """A runtime this row needs is not on this machine (a skip, not a failure)."""


def pyenv_root():
    if shutil.which('pyenv'):
        p = subprocess.run(['pyenv', 'root'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True, timeout=30)
        if p.returncode == 0 and p.stdout.strip():
            return p.stdout.strip()
    return os.environ.get('PYENV_ROOT') or os.path.expanduser('~/.pyenv')


def version_key(path):
    m = re.search(r'/versions/(\d+)\.(\d+)\.(\d+)', path)
    return tuple(int(x) for x in m.groups()) if m else (0, 0, 0)


def find_python(minor):
    """The newest $(pyenv root)/versions/3.MINOR.*/bin/python3.MINOR, else python3.MINOR on
    PATH; Missing when neither exists (Debian 12 has 3.11 only)."""
    name = f'python3.{minor}'
    found = sorted(glob.glob(os.path.join(pyenv_root(), 'versions', f'3.{minor}.*', 'bin',
                                          name)), key=version_key)
    found = [p for p in found if os.access(p, os.X_OK)]
    if found:
        return found[-1]
    path = shutil.which(name)
    # pyenv's shim for a version not installed fails when run: check it really runs
    if path:
        p = subprocess.run([path, '-c', 'import sys; print(sys.version_info[:2])'],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                           timeout=30)
        if p.returncode == 0 and p.stdout.strip() == f'(3, {minor})':
            return path
    raise Missing(f'{name} not found ($(pyenv root)/versions/3.{minor}.*/bin/{name} or PATH: '
                  f'Debian 12 has neither; pyenv\'s builds are on this project\'s image)')


def find_node():
    node = shutil.which('node') or shutil.which('nodejs')
    if not node:
        raise Missing('node not found (Debian package nodejs; scripts/setup installs it)')
    return node


def node_version(node):
    p = subprocess.run([node, '--version'], stdout=subprocess.PIPE, text=True, timeout=30)
    return p.stdout.strip()


def find_java():
    java, javac = shutil.which('java'), shutil.which('javac')
    if not java or not javac:
        raise Missing('java or javac not found (Debian package openjdk-17-jdk-headless; '
                      'scripts/setup installs it)')
    return java, javac


def java_version(java):
    p = subprocess.run([java, '-version'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=60)
    m = re.search(r'version "([^"]+)"', p.stdout)
    return m.group(1) if m else '?'


class Runtime:
    """The command line of a row's workload, run in @work (V8 writes jit-PID.dump and
    isolate-*.log in the current directory; the Java classes are compiled there)."""

    def __init__(self, row, work):
        self.row = row
        self.spec = ROWS[row]
        self.work = work
        kind = self.spec['runtime']
        if kind == 'node':
            self.exe = find_node()
            self.version = 'node ' + node_version(self.exe)
            opts = subprocess.run([self.exe, '--v8-options'], stdout=subprocess.PIPE,
                                  text=True, timeout=60).stdout
            for flag in self.spec['flags']:
                if flag.startswith('--') and flag[2:] not in opts:
                    raise Missing(f'{self.version} has no {flag} (node --v8-options)')
            self.prefix = [self.exe, *self.spec['flags'], os.path.join(PROGS_JIT, 'chain.js')]
        elif kind == 'java':
            self.exe, javac = find_java()
            self.version = 'java ' + java_version(self.exe)
            classes = os.path.join(work, 'classes')
            if not os.path.exists(os.path.join(classes, 'Chain.class')):
                os.makedirs(classes, exist_ok=True)
                cmd = [javac, '-d', classes, os.path.join(PROGS_JIT, 'Chain.java')]
                log('$ ' + quote(cmd))
                p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, timeout=300)
                if p.returncode:
                    raise RuntimeError(f'javac failed: {p.stdout.strip()[:500]}')
            self.prefix = [self.exe, *self.spec['flags'], *JAVA_CHAIN_FLAGS, '-cp', classes,
                           'Chain']
        else:
            self.exe = find_python(int(kind.split('.')[1]))
            p = subprocess.run([self.exe, '--version'], stdout=subprocess.PIPE, text=True,
                               timeout=30)
            self.version = p.stdout.strip()
            self.prefix = [self.exe, *self.spec['flags'], os.path.join(PROGS_JIT, 'chain.py')]
        if self.spec.get('container'):
            if not shutil.which('unshare'):
                raise Missing('unshare not found (util-linux)')
            self.version += ' in its own PID and mount namespaces, /tmp a tmpfs of its own'
            # the script is opened before /tmp is covered (the tree may be under /tmp)
            self.prefix = ['unshare', '--pid', '--mount', '--fork', '--mount-proc', 'sh', '-c',
                           'exec 3< "$1" && shift && mount -t tmpfs tmpfs /tmp && '
                           'exec "$0" "$@"', self.prefix[0], self.prefix[-1],
                           *self.prefix[1:-1], '/proc/self/fd/3']

    def cmd(self, seconds):
        return [*self.prefix, f'{seconds:g}']


# --- files the runtimes leave ---

def runtime_files(pids, work):
    """The maps, dumps and logs the runtimes (and perf inject) wrote for @pids."""
    out = []
    for pid in pids:
        out += [f'/tmp/perf-{pid}.map', f'/tmp/jit-{pid}.dump',
                os.path.join(work, f'jit-{pid}.dump')]
        out += glob.glob(f'/tmp/jitted-{pid}-*.so')
        out += glob.glob(os.path.join(work, f'jitted-{pid}-*.so'))
        out += glob.glob(os.path.join(work, f'isolate-*-{pid}-v8.log'))
    return [p for p in out if os.path.exists(p)]


def remove_files(paths):
    for p in paths:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


JITDUMP_RECORDS = {0: 'CODE_LOAD', 1: 'CODE_MOVE', 2: 'CODE_DEBUG_INFO', 3: 'CODE_CLOSE',
                   4: 'CODE_UNWINDING_INFO'}


def jitdump_summary(path):
    """'N CODE_LOAD, M CODE_UNWINDING_INFO, ...' of a jitdump file (the records by type)."""
    with open(path, 'rb') as f:
        data = f.read()
    if len(data) < 40 or struct.unpack_from('<I', data, 0)[0] != 0x4A695444:
        return 'not a jitdump file'
    version, hsize = struct.unpack_from('<II', data, 4)
    counts = Counter()
    off = hsize
    while off + 16 <= len(data):
        rid, size = struct.unpack_from('<II', data, off)
        if size < 16:
            break
        counts[JITDUMP_RECORDS.get(rid, f'type {rid}')] += 1
        off += size
    return f'version {version}: ' + ', '.join(f'{n} {k}' for k, n in sorted(counts.items()))


# --- perf script's text (sfprof script prints the same) ---

HEADER = re.compile(r'^(\S.*?)\s+(\d+)/(\d+)\s+[\d.]+:')
FRAME = re.compile(r'^\s+([0-9a-fA-F]+)\s+(.*?)\s*\(([^()]*)\)\s*$')


class Sample:
    __slots__ = ('comm', 'pid', 'tid', 'frames')

    def __init__(self, comm, pid, tid):
        self.comm, self.pid, self.tid = comm, pid, tid
        self.frames = []        # (addr, sym, dso), innermost first

    def user(self):
        return [f for f in self.frames if f[2] not in KERNEL_DSOS]


def parse_script(text):
    """[Sample] of `perf script -F comm,pid,tid,time,event,ip,sym,dso`'s text."""
    samples = []
    cur = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            m = HEADER.match(line)
            cur = Sample(m.group(1), int(m.group(2)), int(m.group(3))) if m else None
            if cur:
                samples.append(cur)
            continue
        m = FRAME.match(line)
        if cur is not None and m:
            cur.frames.append((int(m.group(1), 16), m.group(2), m.group(3)))
    return samples


def base_name(sym):
    """A symbol without perf's +0xOFF, glibc's @@VERSION and a C++ signature."""
    sym = re.sub(r'\+0x[0-9a-f]+$', '', sym)
    return sym.split('@')[0].split('(')[0].strip()


def own(sym):
    m = OWN.search(sym)
    return m.group(1) if m else None


class Figures:
    def __init__(self, samples, chain=CHAIN):
        self.samples = len(samples)
        self.user = self.named = self.chain = self.complete = 0
        self.incomplete_ends = Counter()    # outermost frames of incomplete stacks
        self.leaves = Counter()             # innermost user frames
        self.wrong_chains = Counter()
        self.comms = Counter(s.comm for s in samples)
        self.pids = sorted({s.pid for s in samples})
        for s in samples:
            user = s.user()
            if not user:
                continue
            self.user += 1
            self.leaves[base_name(user[0][1]) or '?'] += 1
            end = base_name(user[-1][1])
            if end in START:
                self.complete += 1
            else:
                self.incomplete_ends[f'{end or "?"} ({os.path.basename(user[-1][2])})'] += 1
            names = [n for n in (own(f[1]) for f in reversed(user)) if n]
            if names:
                self.named += 1
                if names == chain[:len(names)]:
                    self.chain += 1
                else:
                    self.wrong_chains[' -> '.join(names)] += 1

    @staticmethod
    def pct(a, b):
        return 100.0 * a / b if b else 0.0

    @property
    def named_pct(self):
        return self.pct(self.named, self.samples)

    @property
    def chain_pct(self):
        return self.pct(self.chain, self.named)

    @property
    def complete_pct(self):
        return self.pct(self.complete, self.user)

    def line(self):
        return (f'{self.samples} samples: named {self.named_pct:.1f}%, chain {self.chain_pct:.1f}% '
                f'of the named ({self.pct(self.chain, self.samples):.1f}% of all), complete '
                f'{self.complete_pct:.1f}% of {self.user} with a user stack')

    def details(self):
        out = [f'  threads by comm: {dict(self.comms.most_common(6))}',
               f'  innermost user frames: ' +
               ', '.join(f'{k[:60]} {v}' for k, v in self.leaves.most_common(4))]
        if self.incomplete_ends:
            out.append('  outermost frames of incomplete stacks: ' +
                       ', '.join(f'{k[:60]} {v}' for k, v in self.incomplete_ends.most_common(4)))
        if self.wrong_chains:
            out.append('  chains not in order: ' +
                       ', '.join(f'{k} {v}' for k, v in self.wrong_chains.most_common(3)))
        return out


# --- perf ---

class PerfFailed(Exception):
    pass


def run_bounded(cmd, timeout, cwd=None, env=None):
    """Run @cmd in a process group of its own; on timeout the group is killed (by its id)
    and reaped. @return (returncode, stdout, stderr)."""
    p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, errors='replace', cwd=cwd, env=env, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate(timeout=30)
        raise subprocess.TimeoutExpired(cmd, timeout, out, err)
    return p.returncode, out, err


def perf_once(rt, seconds, work, tag):
    """One perf recording of @rt's workload: (Figures, notes). PerfFailed when perf died.
    The workload runs through `sh -c 'echo $$ >PIDFILE; exec CMD'`, so that the maps and
    dumps of its pid are removed whatever happens."""
    data = os.path.join(work, f'{tag}.perf.data')
    pidfile = os.path.join(work, f'{tag}.pid')
    remove_files([data, data + '.old', pidfile])
    cmd = ['perf', 'record', '-q', '--no-bpf-event', '-B', '-N', '-F', str(FREQ)]
    cmd += ['-g'] if rt.spec['mode'] == 'fp' else ['--call-graph', 'dwarf', '-k', 'mono']
    cmd += ['-o', data, '--', 'sh', '-c', 'echo $$ >"$0"; exec "$@"', pidfile,
            *rt.cmd(seconds)]
    log('$ ' + quote(cmd))
    try:
        return perf_analyse(rt, seconds, work, tag, cmd, data)
    finally:
        try:
            with open(pidfile) as f:
                remove_files(runtime_files([int(f.read().strip())], work))
        except (OSError, ValueError):
            pass


def perf_analyse(rt, seconds, work, tag, cmd, data):
    rc, out, err = run_bounded(cmd, timeout=seconds * 10 + 120, cwd=work)
    if out.strip():
        log('  ' + out.strip().splitlines()[-1])
    if rc or 'assertion' in err.lower() or not os.path.exists(data):
        raise PerfFailed(f'perf record exited with {rc}: {err.strip()[-300:]}')
    notes = []
    raw = data
    if rt.spec['inject']:
        injected = os.path.join(work, f'{tag}.perf.jit.data')
        c = ['perf', 'inject', '--jit', '-i', data, '-o', injected]
        log('$ ' + quote(c))
        rc, _, err = run_bounded(c, timeout=600, cwd=work)
        if rc:
            raise PerfFailed(f'perf inject --jit exited with {rc}: {err.strip()[-300:]}')
        data = injected
    c = ['perf', 'script', '--no-inline', '-F', SCRIPT_FIELDS, '-i', data]
    log('$ ' + quote(c))
    rc, text, err = run_bounded(c, timeout=900, cwd=work)
    if rc:
        raise PerfFailed(f'perf script exited with {rc}: {err.strip()[-300:]}')
    samples = parse_script(text)
    if not samples:
        raise PerfFailed(f'perf script printed no samples: {err.strip()[-300:]}')
    fig = Figures(samples)
    for f in runtime_files(fig.pids, work):
        if f.endswith('.dump'):
            notes.append(f'{f}: {jitdump_summary(f)}')
    rc, mm, err = run_bounded(['perf', 'script', '--show-mmap-events', '-F', 'comm', '-i', raw],
                              timeout=600, cwd=work)
    mapped = sorted(set(re.findall(r'\s(/\S*jit-\d+\.dump)$', mm, re.M)))
    if rc:
        notes.append(f'perf script --show-mmap-events exited with {rc}: {err.strip()[-200:]}')
    elif rt.spec['inject'] or mapped:
        notes.append('jitdump mapped into the process (an MMAP record perf inject --jit '
                     f'follows): {", ".join(mapped) or "none"}')
    remove_files(runtime_files(fig.pids, work))
    return fig, notes


def perf_row(row, seconds, work, tries=4):
    """(Runtime, Figures, notes) of one row; Missing when its runtime is not here;
    PerfFailed when perf failed @tries times."""
    rt = Runtime(row, work)
    last = None
    for attempt in range(1, tries + 1):
        try:
            fig, notes = perf_once(rt, seconds, work, f'{row}-{attempt}')
            if attempt > 1:
                notes.append(f'perf failed {attempt - 1} time(s) before: {last}')
            return rt, fig, notes
        except PerfFailed as e:
            last = e
            log(f'  perf failed (try {attempt} of {tries}): {e}')
    raise PerfFailed(f'{row}: perf failed {tries} times; the last: {last}')


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--seconds', type=float, default=4.0, help='of CPU time, each run')
    ap.add_argument('--rows', default=','.join(DEFAULT_ROWS),
                    help='comma-separated, of: ' + ', '.join(ROWS))
    ap.add_argument('--keep', metavar='DIR', help='work in DIR and keep the recordings')
    args = ap.parse_args()
    rows = [r for r in args.rows.split(',') if r]
    for r in rows:
        if r not in ROWS:
            ap.error(f'no row {r!r}')
    if os.geteuid() != 0:
        log('note: not root: perf may not sample (kernel.perf_event_paranoid)')
    if not shutil.which('perf'):
        log('perf not found (Debian package linux-perf)')
        return 1
    work = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix='jit-perf-')
    os.makedirs(work, exist_ok=True)
    results, failed = [], False
    try:
        for row in rows:
            log(f'=== {row}')
            try:
                rt, fig, notes = perf_row(row, args.seconds, work)
            except Missing as e:
                log(f'  skipped: {e}')
                results.append((row, None, f'skipped: {e}'))
                continue
            except PerfFailed as e:
                log(f'  {e}')
                results.append((row, None, f'perf failed: {e}'))
                failed = True
                continue
            log(f'  {rt.version}: {quote(rt.cmd(args.seconds))}')
            log(f'  perf {"-g" if rt.spec["mode"] == "fp" else "--call-graph dwarf -k mono"}'
                f'{" + inject --jit" if rt.spec["inject"] else ""}: {fig.line()}')
            for line in fig.details() + ['  ' + n for n in notes]:
                log(line)
            results.append((row, fig, rt.version))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    log('\n=== perf, summary')
    log(f'{"row":22} {"samples":>8} {"named":>7} {"chain":>7} {"complete":>9}')
    for row, fig, what in results:
        if fig is None:
            log(f'{row:22} {what}')
        else:
            log(f'{row:22} {fig.samples:8d} {fig.named_pct:6.1f}% {fig.chain_pct:6.1f}% '
                f'{fig.complete_pct:8.1f}%   {what}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
