# SPDX-License-Identifier: BSD-2-Clause
"""Running and reading llvm-xray-16 and sfprof on XRay traces, for the synthetic tests.

Parsers for what each tool prints:
  llvm-xray-16 convert -f yaml     records (kind, id, thread, process, cpu, tsc)
  llvm-xray-16 stack -all-stacks -stack-format=flame -aggregation-type=time
                                   inclusive ticks per (thread, stack) node
  llvm-xray-16 account -f csv      calls and summed seconds per function
  sfprof xray dump --state         records (offset, kind, id, tid, pid, cpu, tsc)
  sfprof export --format collapsed self ns per stack (the process name dropped)
"""

import os
import re
import subprocess
from collections import Counter

LLVM_XRAY = 'llvm-xray-16'
TIMEOUT = 120

# llvm-xray convert's kinds, by xray_gen's event kinds
YAML_KINDS = {'function-enter': 'enter', 'function-exit': 'exit', 'function-tail-exit': 'tail',
              'function-enter-arg': 'enter_args', 'custom-event': 'custom',
              'typed-event': 'typed'}


def run(cmd, timeout=TIMEOUT, **kw):
    """Run @cmd, output as text (undecodable bytes replaced): CompletedProcess."""
    r = subprocess.run(cmd, capture_output=True, timeout=timeout, **kw)
    r.stdout = r.stdout.decode('utf-8', 'replace')
    r.stderr = r.stderr.decode('utf-8', 'replace')
    return r


# --- llvm-xray-16 -------------------------------------------------------------

_YAML_REC = re.compile(r'^\s*- \{ type: (\d+), func-id: (-?\d+), (?:function: [^,]*, )?'
                       r'(?:args: \[ ([0-9, ]*) \], )?cpu: (\d+), '
                       r'thread: (\d+), (?:process: (\d+), )?kind: ([a-z-]+), tsc: (\d+)')


def llvm_records(binary, trace):
    """(returncode, stderr, [(kind, fid, tid, pid, cpu, tsc, args)]) from convert -f yaml."""
    r = run([LLVM_XRAY, 'convert', '-m', binary, '-f', 'yaml', trace])
    recs = []
    for line in r.stdout.splitlines():
        m = _YAML_REC.match(line)
        if m:
            _, fid, args, cpu, tid, pid, kind, tsc = m.groups()
            args = tuple(int(a) for a in args.split(',')) if args else ()
            recs.append((YAML_KINDS.get(kind, kind), int(fid), int(tid), int(pid or 0),
                         int(cpu), int(tsc), args))
    return r.returncode, r.stderr, recs


def llvm_stack(binary, trace, keep_going=False):
    """(returncode, stderr, Counter {(tid, name, ...): inclusive ticks}), zero nodes left out."""
    cmd = [LLVM_XRAY, 'stack', '-m', binary, '-all-stacks', '-stack-format=flame',
           '-aggregation-type=time', trace]
    if keep_going:
        cmd.insert(2, '-k')
    r = run(cmd)
    out = Counter()
    for line in r.stdout.splitlines():
        if not line.strip():
            continue
        stack, value = line.rsplit(' ', 1)
        frames = stack.rstrip(';').split(';')
        if not frames[0].startswith('thread_'):
            raise ValueError(f'llvm-xray stack: unexpected line {line!r}')
        key = (int(frames[0][len('thread_'):]),) + tuple(frames[1:])
        out[key] += int(value)
    return r.returncode, r.stderr, +out


def llvm_account(binary, trace):
    """(returncode, stderr, {name: (calls, sum in seconds)}) from account -f csv."""
    r = run([LLVM_XRAY, 'account', '-m', binary, '-f', 'csv', trace])
    out = {}
    for line in r.stdout.splitlines()[1:]:
        m = re.match(r'^(-?\d+),(\d+),[^,]*,[^,]*,[^,]*,[^,]*,[^,]*,([^,]*),".*","(.*)"$', line)
        if not m:
            raise ValueError(f'llvm-xray account: unexpected line {line!r}')
        out[m.group(4)] = (int(m.group(2)), float(m.group(3)))
    return r.returncode, r.stderr, out


def fdr_dump_verify(trace):
    return run([LLVM_XRAY, 'fdr-dump', '-verify', trace])


# --- sfprof -------------------------------------------------------------------

def not_built(r):
    """Is this the placeholder sfprof prints for a command not written yet?"""
    return r.returncode == 1 and 'not built yet' in (r.stdout + r.stderr)


def sfprof_import(sfprof, binary, traces, out, extra=(), timeout=TIMEOUT):
    if isinstance(traces, str):
        traces = [traces]
    if os.path.exists(out):
        os.unlink(out)
    return run([sfprof, 'import', 'xray', '-m', binary, '-o', out] + list(extra) + list(traces),
               timeout=timeout)


def parse_collapsed(text):
    """{(frame, ...): count} from collapsed lines, the first frame (the process name) dropped."""
    out = Counter()
    for line in text.splitlines():
        if not line:
            continue
        stack, value = line.rsplit(' ', 1)
        frames = stack.split(';')
        out[tuple(frames[1:])] += int(value)
    return +out


def sfprof_collapsed(sfprof, profile):
    """(CompletedProcess, Counter) of `sfprof export --format collapsed -i PROFILE`."""
    r = run([sfprof, 'export', '--format', 'collapsed', '-i', profile])
    return r, (parse_collapsed(r.stdout) if r.returncode == 0 else Counter())


# `sfprof xray dump` record lines, by the text they start with (longest first)
DUMP_KINDS = [
    ('<Function Enter With Arg:', 'enter_args'),
    ('<Function Enter:', 'enter'),
    ('<Function Tail Exit:', 'tail'),
    ('<Function Exit:', 'exit'),
    ('<Thread ID:', 'NewBuffer'),
    ('<End of Buffer>', 'EndOfBuffer'),
    ('<CPU:', 'NewCPUId'),
    ('<TSC Wrap:', 'TSCWrap'),
    ('<Wall Time:', 'WalltimeMarker'),
    ('<Custom Event:', 'CustomEvent'),
    ('<Typed Event:', 'TypedEvent'),
    ('<Call Argument:', 'CallArgument'),
    ('<Buffer:', 'BufferExtents'),
    ('<PID:', 'Pid'),
]
_STATE = re.compile(r'  @0x([0-9a-f]+) tid (\d+) pid (\d+) cpu (\d+) tsc (\d+)$')
_FID = re.compile(r'#(-?\d+)')


class DumpRec:
    __slots__ = ('offset', 'kind', 'fid', 'tid', 'pid', 'cpu', 'tsc', 'text')

    def __repr__(self):
        return f'DumpRec({self.offset:#x} {self.kind} fid={self.fid} tid={self.tid} tsc={self.tsc})'


def sfprof_dump(sfprof, trace):
    """(CompletedProcess, header line, [DumpRec], [loss lines], [summary lines])."""
    r = run([sfprof, 'xray', 'dump', '--state', trace])
    recs, losses, summary, head = [], [], [], None
    for line in r.stdout.splitlines():
        if line.startswith('LOSS'):
            losses.append(line)
            continue
        if line.startswith('#'):
            if head is None:
                head = line
            else:
                summary.append(line)
            continue
        m = _STATE.search(line)
        d = DumpRec()
        d.text = line[:m.start()] if m else line
        d.kind = next((k for p, k in DUMP_KINDS if line.startswith(p)), 'unknown')
        if m:
            d.offset, d.tid, d.pid, d.cpu, d.tsc = (int(m.group(1), 16), int(m.group(2)),
                                                    int(m.group(3)), int(m.group(4)),
                                                    int(m.group(5)))
        else:
            d.offset = d.tid = d.pid = d.cpu = d.tsc = None
        f = _FID.search(d.text) if d.kind in ('enter', 'exit', 'tail', 'enter_args',
                                              'CallArgument') else None
        d.fid = int(f.group(1)) if f else None
        recs.append(d)
    return r, head, recs, losses, summary


def sanitizer_report(text):
    """A sanitizer's or the C library's complaint in @text, or None."""
    for pat in ('AddressSanitizer', 'UndefinedBehaviorSanitizer', 'runtime error:',
                'LeakSanitizer', 'MemorySanitizer', 'stack smashing', 'double free',
                'malloc(): ', 'free(): ', 'Segmentation fault'):
        if pat in text:
            return pat
    return None
