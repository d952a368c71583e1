#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Recording under pressure: what `sfprof record` loses, completes, costs and holds when the machine is full.

Run through scripts/bench-pressure, which builds sfprof and the workloads
(bench/pressure/deepspin.c as pressure_deep: threads spinning 200 frames
deep; shortdeep.c as pressure_short0..7: processes 60 frames deep that live
20 ms, distinct build IDs) and passes their paths. Each part is selectable
with --parts; every figure comes from sfprof's own summary lines on stderr,
from /proc, from wait4's rusage, or from bpftool:

  saturation  one deep thread per CPU plus a loop of short-lived processes,
              `record -a` at 999 and 4999 Hz for --seconds: samples, lost (ring
              full / past the reader's queue bound), share of user stacks that
              are complete, user-stack bytes copied per sample, stacks cut by
              the copy's end, sfprof's peak RSS (rusage maxrss = VmHWM) and CPU
              time, and its wall time against --duration (start and stop cost).
  deep        completeness with the adaptive per-thread copy size beside
              --stack-size 65536 and the largest --stack-size (MAX_USTACK_BYTES,
              read from bpf/sample.h) on two programs recorded as `record -F 999
              -- COMMAND`: pressure_deep (200 frames, ~20 KiB of stack) and a
              real compiler run, `gcc -O2 -c` on a generated file whose nesting
              makes cc1 recurse deep (gen_cc_input.py; its deepest stacks pass
              256 KiB; --cc-functions 280 makes a ~17 s run). perf
              --call-graph dwarf copies a fixed 8192 bytes per sample; if perf
              is installed it records the same gcc run for its samples and
              bytes per sample, and with --perf-script its share of complete
              stacks (perf script unwinds every sample: about 45 s for 7000 cc1
              samples).
  cost        kernel.bpf_stats_enabled=1 for the part (restored after); each
              BPF figure is run_time_ns / run_cnt of a program over --seconds
              (bpftool -j prog show, before and after, the program still
              running; for sfprof the window opens 1 s (SETTLE) after its first
              sample, its start-up left out), sfprof's CPU time per sample
              over the same window (schedstat of its threads; the window's
              share of the samples in its file). sfprof loads one of two BPF
              programs: "sample" (the user stack read straight into the ring
              record, where the kernel has bpf_probe_read_user_dynptr) or
              "sample_copied" (assembled aside and copied into the ring); the
              window measures the one it holds, and the tables say which.
              Beside it, two baselines of bench/bpf_baseline measured in the
              same run: counting only (a perf_event program that counts the
              samples it filters on) and one read (the same plus 8 bytes read
              at the user SP). Four tables: (i) shallow stacks, cpuloop
              --threads 3 --no-pin as the target at 999 Hz: counting only and
              one read with --pid, `record -p PID` and `record -a`, with the
              user-stack bytes copied per sample and the program that ran;
              (ii) the same load, `record -p PID` with SFPROF_SAMPLER_CUT set
              to each of --cost-cuts (the parts the sampler leaves out;
              lookups-twice, not a cut, makes its three map lookups twice;
              direct runs sample_copied where sample could run; a value sfprof
              refuses is printed as such): ns per run and "vs full ns", the
              line's minus the whole sampler's in the same round (negative:
              cheaper); size-lookup and output are not in the default list:
              without them no thread's copy size is learned, every sample
              copies 16 KiB and costs more; (iii) one deep thread per CPU at
              999 and 4999 Hz: both baselines on every task and `record -a`,
              with sfprof's CPU over its whole life too (rusage: start-up /proc
              scan and the final write included); (iv) record's user space per
              sample in the sfprof runs of (i) (record -p) and (iii), no run of
              its own: CPU per sample over the window by thread (schedstat:
              the reader, the main thread; the unwinders, sfprof-unw*; the
              others; all) and from record's summary line, its whole run:
              finding the process, unwinding, writing.
              Every line is measured --cost-rounds times (default 3), the
              rounds interleaved within a table (round 1 of every line, then
              round 2 of every line, ...) so that a slow phase of this VM
              falls on every line alike; a table keeps one workload across
              its rounds. Each column is the median of the rounds, and
              "spread" the lowest and highest ns/run; "vs full ns" the median
              of the differences within a round. The part first says the
              kernel (uname -r) and whether bpf_stats_enabled was already on.
  memory      one deep thread per CPU, `record -a` at 999, 4999, 10000 and
              20000 Hz for --memory-seconds: peak RSS, samples per second and
              CPU reached (below the rate asked: the kernel throttled), lost,
              complete share.
  churn       the saturation load at 999 Hz for --churn-minutes, sfprof's RSS
              every --rss-interval seconds as it goes: whether it stays flat.
  ring        `record -a` for --ring-seconds at each of --ring-rates, (i) quiet,
              (ii) beside one pressure_deep of one thread per CPU started in
              sfprof's own scheduling group (no session of their own: with
              sched_autogroup_enabled a session is weighed as one group, and a
              load in another session is not competing with sfprof's threads one
              for one; --ring-groups own puts each in its own): samples, lost
              with the ring full and past the unwinders' queue bound, complete
              share, the longest a sample waited, what sfprof says it sampled
              and spent finishing, and how its reader was scheduled.

Prints figures only; it fails only when a run does not work (a profiler
exits non-zero or prints no summary). Every process it starts runs in its own
process group, is stopped at the end whatever happens (SIGINT for sfprof,
which then writes its file; SIGKILL to the group past a bounded wait), and
the workloads also end by themselves at a deadline. Sysctls it changes
(bpf_stats_enabled; perf_event_max_sample_rate, which the kernel lowers
itself under load) are restored.
"""

import argparse
import json
import os
import re
import resource
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import gen_cc_input  # noqa: E402

NAME = 'bench-pressure'
NCPU = os.cpu_count() or 1
CLK_TCK = os.sysconf('SC_CLK_TCK')
BPF_STATS = '/proc/sys/kernel/bpf_stats_enabled'
MAX_RATE = '/proc/sys/kernel/perf_event_max_sample_rate'
MiB = 1024 * 1024
SETTLE = 1.0  # seconds from sfprof's first sample to cost's window: its start-up left out


def max_copy():
    """The sampler's largest user-stack copy: MAX_USTACK_BYTES in bpf/sample.h."""
    with open(os.path.join(HERE, '..', '..', 'bpf', 'sample.h')) as f:
        m = re.search(r'^#define\s+MAX_USTACK_BYTES\s+(\d+)', f.read(), re.M)
    if not m:
        sys.exit(f'{NAME}: no MAX_USTACK_BYTES in bpf/sample.h')
    return int(m.group(1))


MAX_COPY = max_copy()

# sfprof's summary, one figure at a time so that a reworded line loses one column, not the run
FIGURES = {
    'span': r'sfprof record: ([\d.]+) s, \d+ samples',
    'samples': r' (\d+) samples \(\d+ lost\)',
    'lost': r' samples \((\d+) lost\)',
    'user': r', (\d+) with a user stack',
    'complete': r'([\d.]+)% of them complete',
    'processes': r'; (\d+) processes;',
    'file_bps': r'bytes in .* \(([\d.]+) bytes/sample\)',
    'lost_ring': r'lost: (\d+) with the ring full',
    'lost_queue': r', (\d+) past the reader\'s queue bound',
    'copy_bps': r'user stack copies: (\d+) bytes/sample',
    'cut': r', (\d+) stacks cut by the copy\'s end',
    'sizes_set': r'sfprof record: (\d+) per-thread copy sizes set',
    'lost_unwind': r', (\d+) past the unwinders\' queue bound',
    'wait_ms': r'the longest a sample waited to be unwound ([\d.]+) ms',
    'sampled': r'sfprof record: sampled ([\d.]+) s',
    'finish': r'; finished in ([\d.]+) s',
    'started': r'; started ([\d.]+) s before',
    'reader': r'sfprof record: the reader ran at (real-time|normal) priority',
    'reader_cpu': r'the reader ran at real-time priority .*?: ([\d.]+) s of CPU',
    'reader_over': r'its budget used up in (\d+ of \d+) windows',
    'ring_how': r'user stack copies: [^;\n]*?, (read straight into the ring|copied into the ring)',
    'sum_find_us': r'user space per sample: ([\d.]+) us finding its process',
    'sum_unwind_us': r'us finding its process, ([\d.]+) us unwinding',
    'sum_write_us': r'us unwinding, ([\d.]+) us writing',
}
# SFPROF_SAMPLER_CUT=times: record's line of the program sample's steps, ns per sample
STEPS = ('filter', 'header', 'registers', 'reserve', 'copy', 'submit')
FIGURES.update({f'step_{s}': rf"the program sample's steps .*?\b{s} (\d+)" for s in STEPS})
# the BPF programs of sfprof's sampler: one of the two is loaded (user/record/sampler.c), sample
# where the kernel reads user memory straight into a ring record, else sample_copied
SAMPLERS = ('sample', 'sample_copied')


class Failed(Exception):
    def __init__(self, message, log=None):
        super().__init__(message)
        self.log = log  # what the program said on stderr, when it ran


def say(text=''):
    print(text, flush=True)


def fmt(v, spec='', none='-'):
    return none if v is None else format(v, spec)


def med(rounds, key):
    """The median of @key over @rounds (figures of each round), those without it left out."""
    vals = [r[key] for r in rounds if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def spread(rounds, key='ns'):
    """'lowest-highest' of @key over @rounds."""
    vals = [r[key] for r in rounds if r.get(key) is not None]
    return f'{min(vals):.0f}-{max(vals):.0f}' if vals else '-'


class Procs:
    """Every process the benchmark starts, each the leader of its own process group."""

    def __init__(self):
        self.live = []

    def start(self, argv, stop_signal=signal.SIGTERM, session=True, **kw):
        """@session: a session of its own (its own autogroup where the kernel groups by
        session, as sched_autogroup_enabled does), else only a process group of its own."""
        kw.setdefault('stdin', subprocess.DEVNULL)
        if session:
            kw['start_new_session'] = True
        else:
            kw['process_group'] = 0
        p = subprocess.Popen(argv, **kw)
        p.stop_signal = stop_signal
        self.live.append(p)
        return p

    def reaped(self, p, status):
        """@p was reaped with os.wait4: tell Popen, forget it."""
        p.returncode = os.waitstatus_to_exitcode(status)
        self.forget(p)

    def forget(self, p):
        if p in self.live:
            self.live.remove(p)
        try:  # what the leader left behind in its group
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass

    def stop(self, p, grace=10.0):
        """Stop @p with its own signal, then SIGKILL its group past @grace seconds."""
        if p.poll() is None:
            try:
                os.kill(p.pid, p.stop_signal)
            except OSError:
                pass
            try:
                p.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        self.forget(p)

    def stop_all(self):
        for p in list(self.live):
            self.stop(p, grace=5.0)


PROCS = Procs()


def tool_version(tool):
    if not shutil.which(tool):
        return f'no {tool}'
    out = subprocess.run([tool, '--version'], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, timeout=30).stdout
    return out.splitlines()[0] if out else tool


class Sysctl:
    """A sysctl set for a while and put back, also when the kernel changed it meanwhile."""

    def __init__(self, path):
        self.path = path
        self.saved = self.read()

    def read(self):
        with open(self.path) as f:
            return f.read().strip()

    def write(self, value):
        with open(self.path, 'w') as f:
            f.write(str(value))

    def restore(self):
        if self.read() != self.saved:
            self.write(self.saved)
            return True
        return False


def proc_status(pid):
    """VmRSS and VmHWM of @pid in bytes, or None once it is gone."""
    try:
        with open(f'/proc/{pid}/status') as f:
            text = f.read()
    except OSError:
        return None
    out = {}
    for key in ('VmRSS', 'VmHWM'):
        m = re.search(rf'^{key}:\s+(\d+) kB', text, re.M)
        out[key] = int(m.group(1)) * 1024 if m else 0
    return out


def thread_ns(pid):
    """{tid: (name, ns on a CPU)} of every thread of @pid (schedstat's first field), None once
    it is gone."""
    out = {}
    try:
        tasks = os.listdir(f'/proc/{pid}/task')
    except OSError:
        return None
    for t in tasks:
        try:
            with open(f'/proc/{pid}/task/{t}/comm') as f:
                name = f.read().strip()
            with open(f'/proc/{pid}/task/{t}/schedstat') as f:
                out[int(t)] = (name, int(f.read().split()[0]))
        except (OSError, ValueError, IndexError):
            pass
    return out


def thread_groups(pid, before, after):
    """@pid's CPU seconds between two thread_ns() readings by kind of thread: 'reader' (the main
    thread, named sfprof: the ring's reader), 'unwind' (sfprof-unw*), 'other' (keeper, prepare,
    ...); a thread born in between counts from 0, one gone by @after is left out ('gone')."""
    g = {'reader': 0, 'unwind': 0, 'other': 0}
    for tid, (name, ns) in (after or {}).items():
        kind = 'reader' if tid == pid else 'unwind' if name.startswith('sfprof-unw') else 'other'
        g[kind] += max(ns - (before or {}).get(tid, (name, 0))[1], 0)
    out = {k: v / 1e9 for k, v in g.items()}
    out['gone'] = len(set(before or {}) - set(after or {}))
    return out


class Bench:
    def __init__(self, a):
        self.a = a
        self.work = tempfile.mkdtemp(prefix=f'{NAME}.')
        self.data = os.path.join(self.work, 'sfprof.data')
        self.runs = 0
        self.rate = Sysctl(MAX_RATE)
        self.lowered = 0  # times the kernel lowered perf_event_max_sample_rate
        self.user_lines = []  # cost: (label, rounds) of the sfprof runs for cost_user()

    # workloads

    def deep(self, seconds, threads=NCPU):
        """pressure_deep on @threads threads; it ends by itself 30 s past @seconds."""
        return PROCS.start([self.a.deep, str(seconds + 30), str(threads)])

    def churn(self, seconds):
        """A shell loop running the short-lived variants one after the other; ends by itself too."""
        out = open(os.path.join(self.work, f'churn{self.runs}.count'), 'w+')
        script = ('n=0; end=$((SECONDS + $1)); shift; trap \'echo $n; exit 0\' TERM; '
                  'while ((SECONDS < end)); do "${@:n % $# + 1:1}"; n=$((n + 1)); done; echo $n')
        p = PROCS.start(['bash', '-c', script, 'churn', str(int(seconds) + 30), *self.a.shorts],
                        stdout=out)
        p.count_file = out
        return p

    def churn_count(self, p):
        PROCS.stop(p)
        p.count_file.seek(0)
        text = p.count_file.read().strip()
        p.count_file.close()
        return int(text) if text.isdigit() else None

    # one sfprof recording

    def record(self, hz, duration=None, extra=(), command=None, every=None, on_rss=None,
               window=None, session=True, pid=None, cut=None):
        """Run `sfprof record` once and return its figures.

        @duration: --duration SECS (None: until @command exits, or @window stops it).
        @pid: record -p PID instead of -a.
        @cut: SFPROF_SAMPLER_CUT in sfprof's environment (the parts its sampler leaves out).
        @command: recorded with `-- COMMAND` (rusage then counts it too: RSS is polled instead).
        @every, @on_rss: call on_rss(seconds, rss) every @every seconds.
        @window: called with the sfprof pid once it samples; returns what to add to the
                 figures, after which sfprof is stopped with SIGINT.
        """
        self.runs += 1
        if self.rate.restore():
            self.lowered += 1
        for f in (self.data, self.data + '.old'):
            if os.path.exists(f):
                os.unlink(f)
        argv = [self.a.sfprof, 'record', '-F', str(hz), '-o', self.data]
        if pid is not None:
            argv[2:2] = ['-p', str(pid)]
        elif command is None:
            argv.insert(2, '-a')
        if duration is not None:
            argv += ['--duration', f'{duration:g}']
        argv += list(extra)
        if command is not None:
            argv += ['--', *command]
        log_path = os.path.join(self.work, f'run{self.runs}.log')
        log = open(log_path, 'w+')
        # bounded: the run's own length plus start and stop, then SIGINT, then SIGKILL
        limit = (duration if duration is not None else self.a.command_timeout) + 60
        t0 = time.monotonic()
        env = None
        if cut is not None:
            env = dict(os.environ, SFPROF_SAMPLER_CUT=cut)
        p = PROCS.start(argv, stop_signal=signal.SIGINT, session=session,
                        stdout=subprocess.DEVNULL, stderr=log, env=env)
        hwm = 0  # the highest VmHWM and VmRSS read while it ran
        next_rss = t0 + every if every else None
        extra_figures = {}
        status = ru = None
        interrupted = None
        try:
            if window:
                extra_figures = window(p.pid) or {}
                os.kill(p.pid, signal.SIGINT)
            while True:
                pid, status, ru = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    break
                now = time.monotonic()
                st = proc_status(p.pid)
                if st:
                    hwm = max(hwm, st['VmHWM'], st['VmRSS'])
                    if next_rss and now >= next_rss:
                        next_rss += every
                        on_rss(now - t0, st['VmRSS'])
                if interrupted is None and now - t0 > limit:
                    interrupted = now
                    os.kill(p.pid, signal.SIGINT)
                elif interrupted is not None and now - interrupted > 20:
                    os.killpg(p.pid, signal.SIGKILL)
                    pid, status, ru = os.wait4(p.pid, 0)
                    break
                time.sleep(0.05)
        finally:
            if status is not None:
                PROCS.reaped(p, status)
        wall = time.monotonic() - t0
        log.seek(0)
        text = log.read()
        log.close()
        if self.a.keep:
            os.makedirs(self.a.keep, exist_ok=True)
            shutil.copy(log_path, self.a.keep)
        code = p.returncode
        r = {k: None for k in FIGURES}
        for k, rx in FIGURES.items():
            m = re.search(rx, text)
            if m:
                v = m.group(1)
                r[k] = float(v) if re.fullmatch(r'\d+\.\d*', v) else int(v) if v.isdigit() else v
        if interrupted is not None:
            raise Failed(f'{" ".join(argv)}: still running {limit:.0f} s after its start\n{text}')
        if code or r['samples'] is None:
            raise Failed(f'{" ".join(argv)}: exit status {code}, '
                         f'{"no" if r["samples"] is None else "a"} summary line\n{text}',
                         log=text)
        r['wall'] = wall
        r['cpu'] = ru.ru_utime + ru.ru_stime
        # rusage's maxrss is the VmHWM of sfprof alone only when it had no command to wait
        # for; the kernel updates it lazily, so the last reading may be a little higher
        r['peak'] = max(hwm, ru.ru_maxrss * 1024) if command is None else hwm
        r['size'] = os.path.getsize(self.data) if os.path.exists(self.data) else None
        r.update(extra_figures)
        return r

    # the parts

    def saturation(self):
        a = self.a
        say(f'== saturation: {NCPU} threads 200 frames deep + a loop of 20-ms processes 60 frames '
            f'deep; record -a for {a.seconds:g} s')
        say(f'{"Hz":>6} {"samples":>9} {"lost":>7} {"ring":>7} {"queue":>6} {"complete":>9} '
            f'{"copy B/smp":>10} {"cut":>7} {"procs":>6} {"runs":>6} {"peak RSS":>10} '
            f'{"CPU s":>6} {"span s":>7} {"wall-dur":>9}')
        for hz in (999, 4999):
            dp = self.deep(a.seconds)
            ch = self.churn(a.seconds)
            try:
                time.sleep(0.5)
                r = self.record(hz, a.seconds)
            finally:
                runs = self.churn_count(ch)
                PROCS.stop(dp)
            say(f'{hz:>6} {r["samples"]:>9} {fmt(r["lost"]):>7} {fmt(r["lost_ring"]):>7} '
                f'{fmt(r["lost_queue"]):>6} {fmt(r["complete"], ".1f"):>8}% '
                f'{fmt(r["copy_bps"]):>10} {fmt(r["cut"]):>7} {fmt(r["processes"]):>6} '
                f'{fmt(runs):>6} {r["peak"] / MiB:>6.1f} MiB {r["cpu"]:>6.2f} '
                f'{fmt(r["span"], ".1f"):>7} {(r["wall"] - a.seconds) * 1000:>6.0f} ms')
        say('  (lost: ring = the ring was full, the reader behind; queue = past the reader\'s '
            'queue bound; complete: of the')
        say('   samples with a user stack; cut: stacks cut by the copy\'s end; procs: processes '
            'sfprof saw; runs: short-lived')
        say('   processes started meanwhile; wall-dur: sfprof\'s wall time minus --duration, '
            'its start and stop)')
        say()

    def cc_input(self):
        path = os.path.join(self.work, 'deepnest.c')
        if not os.path.exists(path):
            with open(path, 'w') as out:
                gen_cc_input.generate(out, self.a.cc_functions, self.a.cc_nest, self.a.cc_expr)
        return path

    def deep_part(self):
        a = self.a
        src = self.cc_input()
        obj = os.path.join(self.work, 'deepnest.o')
        gcc = ['gcc', '-O2', '-c', src, '-o', obj]
        sizes = (('default', ()), ('65536 (fixed)', ('--stack-size', '65536')),
                 (f'{MAX_COPY} (fixed)', ('--stack-size', str(MAX_COPY))))
        say(f'== deep: completeness, the default copy size (adapted per thread) beside '
            f'--stack-size 65536 and {MAX_COPY} (the most); record -F 999 -- COMMAND')
        say(f'   pressure_deep: {NCPU} threads 200 frames deep (~20 KiB of stack) for '
            f'{a.seconds:g} s;')
        say(f'   cc1: gcc -O2 -c on a generated file, {a.cc_functions} functions nested '
            f'{a.cc_nest} blocks deep, expressions {a.cc_expr} deep '
            f'({os.path.getsize(src) / MiB:.1f} MiB)')
        say(f'{"program":<14} {"copy size":<15} {"samples":>8} {"lost":>5} {"complete":>9} '
            f'{"copy B/smp":>10} {"cut":>6} {"file B/smp":>10} {"wall s":>7}')
        for name, cmd in (('pressure_deep', [a.deep, f'{a.seconds:g}', str(NCPU)]),
                          ('cc1 (gcc -O2)', gcc)):
            for label, extra in sizes:
                r = self.record(999, command=cmd, extra=extra)
                say(f'{name:<14} {label:<15} {r["samples"]:>8} {fmt(r["lost"]):>5} '
                    f'{fmt(r["complete"], ".1f"):>8}% {fmt(r["copy_bps"]):>10} '
                    f'{fmt(r["cut"]):>6} {fmt(r["file_bps"], ".1f"):>10} {r["wall"]:>7.2f}')
        say('perf --call-graph dwarf copies 8192 bytes/sample (its default, fixed for every '
            'thread)')
        if a.no_perf:
            pass
        elif not shutil.which('perf'):
            say('  (perf is not installed: no perf run)')
        else:
            self.perf_dwarf(gcc)
        say()

    def perf_dwarf(self, gcc):
        data = os.path.join(self.work, 'perf.data')
        log_path = os.path.join(self.work, 'perf.log')
        argv = ['perf', 'record', '-N', '-B', '--no-buildid', '--no-buildid-cache',
                '--call-graph', 'dwarf', '-F', '999', '-o', data, '--', *gcc]
        with open(log_path, 'w') as log:
            t0 = time.monotonic()
            p = PROCS.start(argv, stop_signal=signal.SIGINT, stdout=log, stderr=log)
            try:
                code = p.wait(timeout=self.a.command_timeout + 60)
            except subprocess.TimeoutExpired:
                raise Failed(f'{" ".join(argv)}: still running after '
                             f'{self.a.command_timeout + 60} s')
            finally:
                PROCS.stop(p)
            wall = time.monotonic() - t0
        if code or not os.path.exists(data):
            with open(log_path) as f:
                raise Failed(f'{" ".join(argv)}: exit status {code}\n{f.read()}')
        stats = subprocess.run(['perf', 'report', '-i', data, '--stats'], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=120).stdout
        samples = lost = 0
        section = False
        for line in stats.splitlines():
            # the event's own section, not the aggregated one
            if line.endswith(' stats:') and not line.startswith('Aggregated'):
                section = True
            elif section and re.match(r'\s*SAMPLE events:', line):
                samples = int(line.split()[-1])
            elif section and re.match(r'\s*LOST_SAMPLES events:', line):
                lost = int(line.split()[-1])
        size = os.path.getsize(data)
        complete = ''
        if self.a.perf_script and samples:
            complete = f', {self.perf_complete(data):.1f}% complete'
        say(f'perf record --call-graph dwarf -F 999 on the same gcc run: {samples} samples, '
            f'{lost} lost, {size / max(samples, 1):.0f} bytes/sample in its file{complete}, '
            f'{wall:.2f} s wall')
        if not self.a.perf_script:
            say('  (--perf-script: also its share of complete stacks, from perf script)')
        os.unlink(data)

    def perf_complete(self, data):
        """perf script's share of samples whose stack reaches libc's start or a thread's start."""
        bottom = re.compile(r'\s(__libc_start_call_main|__libc_start_main\S*|start_thread|'
                            r'clone3?)(\s|$)')
        p = PROCS.start(['perf', 'script', '-i', data, '-F', 'comm,ip,sym'],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        total = good = 0
        in_sample = ok = False
        timer = threading.Timer(600, PROCS.stop, (p,))
        timer.start()
        try:
            for line in p.stdout:
                if line and not line[0].isspace():
                    if in_sample:
                        total, good = total + 1, good + ok
                    in_sample, ok = True, False
                elif bottom.search(line):
                    ok = True
            if in_sample:
                total, good = total + 1, good + ok
            if p.wait(timeout=60):
                raise Failed('perf script failed, or was still unwinding after 600 s')
        finally:
            timer.cancel()
            PROCS.stop(p)
        return 100.0 * good / max(total, 1)

    def bpf_ids(self, pid):
        """The ids of the BPF programs @pid holds, from the fdinfo of its descriptors."""
        ids = set()
        try:
            fds = os.listdir(f'/proc/{pid}/fdinfo')
        except OSError:
            return ids
        for fd in fds:
            try:
                with open(f'/proc/{pid}/fdinfo/{fd}') as f:
                    m = re.search(r'^prog_id:\s+(\d+)', f.read(), re.M)
            except OSError:
                continue
            if m:
                ids.add(int(m.group(1)))
        return ids

    def bpf_stats(self, ids, names):
        """{id: (run_cnt, run_time_ns, name)} of the programs named one of @names among @ids."""
        out = subprocess.run(['bpftool', '-j', 'prog', 'show'], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             timeout=30).stdout
        return {prog['id']: (prog.get('run_cnt', 0), prog.get('run_time_ns', 0), prog['name'])
                for prog in json.loads(out or '[]')
                if prog.get('name') in names and prog.get('id') in ids}

    def bpf_window(self, pid, names, settle=0.0):
        """The BPF statistics of @pid's program named one of @names (whichever it holds; 'prog'
        says which) over a window of --seconds that opens @settle seconds after the program
        first ran, and @pid's CPU time over it, all its threads ('win_cpu') and by kind
        (thread_groups()); {} when @pid exits before it has loaded the program (it refused)."""
        name = '" or "'.join(names)
        deadline = time.monotonic() + 30
        while True:  # the program exists once the process has loaded it
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                return {}  # not reaped: its caller reads its status and what it said
            ids = self.bpf_ids(pid)
            before = self.bpf_stats(ids, names) if ids else {}
            if any(cnt for cnt, _, _ in before.values()):  # it has run: it is attached
                break
            if time.monotonic() > deadline:
                raise Failed(f'no BPF program named "{name}" loaded and run in 30 s')
            time.sleep(0.1)
        time.sleep(settle)
        odd = []
        for _ in range(3):
            # the programs it holds now: sfprof was once seen holding a second "sample" for a
            # moment at its start, gone by the window's end
            ids = self.bpf_ids(pid)
            before = self.bpf_stats(ids, names)
            ids = set(before)
            n0, t0 = thread_ns(pid), time.monotonic()
            time.sleep(self.a.seconds)
            after = self.bpf_stats(ids, names)
            n1, t1 = thread_ns(pid), time.monotonic()
            for _ in range(5):  # a listing that missed one: read again before calling it gone
                if set(after) == ids:
                    break
                if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                    return {}  # it exited in the window: its caller says how, and what it said
                time.sleep(0.1)
                after = self.bpf_stats(ids, names)
            if not ids:
                raise Failed(f'process {pid} no longer holds a BPF program named "{name}"')
            runs = sum(after[i][0] - before[i][0] for i in ids if i in after)
            run_ns = sum(after[i][1] - before[i][1] for i in ids if i in after)
            if set(after) == ids and runs >= 0 and run_ns >= 0:
                groups = thread_groups(pid, n0, n1)
                return {'runs': runs, 'run_ns': run_ns, 'win_s': t1 - t0, 'odd': odd,
                        'prog': ','.join(sorted({after[i][2] for i in ids})),
                        'win_cpu': groups['reader'] + groups['unwind'] + groups['other'],
                        **{f'win_{k}': v for k, v in groups.items()}}
            # seen on this VM under another tenant's load: a window whose statistics went
            # back; and a program gone in the window while the process lives on; it is
            # measured again, and said
            odd.append(f'{name} {sorted(ids)}: {before} -> {after}, process {pid} holding '
                       f'{sorted(self.bpf_ids(pid))} at the end')
        raise Failed(f'the BPF statistics of "{name}" went back or away in 3 windows: '
                     f'{"; ".join(odd)}')

    def sfprof_cost(self, hz, pid=None, cut=None):
        """`record -a` (or -p @pid) at @hz, its BPF sampler (sample or sample_copied, the one
        it loaded) measured over a window."""
        def window(spid):
            return self.bpf_window(spid, SAMPLERS, settle=SETTLE)

        r = self.record(hz, window=window, pid=pid, cut=cut)
        if 'runs' not in r:
            raise Failed(f'sfprof record{f" -p {pid}" if pid else " -a"}: exited before it '
                         f'loaded its BPF sampler ({" or ".join(SAMPLERS)})')
        # the samples of the window: its share of the span sfprof sampled (a -p recording's
        # BPF runs include those the pid filter drops)
        span = r['sampled'] or r['span']
        smp = r['samples'] * min(r['win_s'] / span, 1) if span else None
        r['user_us'] = r['win_cpu'] / smp * 1e6 if smp else None
        for k in ('reader', 'unwind', 'other'):
            r[f'{k}_us'] = r[f'win_{k}'] / smp * 1e6 if smp else None
        return r

    def baseline(self, prog, hz, pid=None):
        """bench/bpf_baseline --prog @prog at @hz (--pid @pid), measured over the same window:
        its BPF figures, plus 'samples' and 'failed' (reads) it counted over its life."""
        self.runs += 1
        if self.rate.restore():
            self.lowered += 1
        argv = [self.a.baseline, '--prog', prog, '--hz', str(hz)]
        if pid is not None:
            argv += ['--pid', str(pid)]
        log = open(os.path.join(self.work, f'baseline{self.runs}.log'), 'w+')
        p = PROCS.start(argv, stop_signal=signal.SIGINT, stdout=subprocess.PIPE, stderr=log,
                        text=True)
        out = ''
        r = {}
        try:
            ready, _, _ = select.select([p.stdout], [], [], 30)
            line = p.stdout.readline().strip() if ready else ''
            if line == 'ready':
                r = self.bpf_window(p.pid, (f'base_{prog}',))
                os.kill(p.pid, signal.SIGINT)
            else:
                os.kill(p.pid, signal.SIGTERM)
            out, _ = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            raise Failed(f'{" ".join(argv)}: still running 30 s after SIGINT')
        finally:
            PROCS.stop(p)
            log.seek(0)
            text = log.read()
            log.close()
        m = re.search(r'bpf_baseline: (\d+) samples, (\d+) failed reads', out)
        if p.returncode or not m or 'runs' not in r:
            raise Failed(f'{" ".join(argv)}: exit status {p.returncode}, '
                         f'{"a" if m else "no"} count line\n{text}', log=text)
        r['samples'], r['failed'] = int(m.group(1)), int(m.group(2))
        return r

    def cost(self):
        a = self.a
        if not shutil.which('bpftool'):
            say('== cost: skipped (bpftool is not installed)')
            say()
            return
        stats = Sysctl(BPF_STATS)
        on = stats.saved != '0'
        say(f'== cost: kernel {os.uname().release}; kernel.bpf_stats_enabled was '
            + (f'already on ({stats.saved}) before this part' if on else
               'off (0): 1 for the part, put back to 0 after'))
        say(f'   every figure is the median of {a.cost_rounds} round(s), each a window of '
            f'{a.seconds:g} s while the program runs (sfprof\'s from {SETTLE:g} s')
        say('   after its first sample): run_time_ns / run_cnt of its BPF program from bpftool -j '
            'prog show, before and after;')
        say('   the rounds interleaved, table by table (round 1 of every line, then round 2 of '
            'every line, ...): a slow phase')
        say('   of the machine falls on every line alike; spread: the lowest and the highest '
            'ns/run of the rounds')
        say()
        try:
            stats.write(1)
            self.cost_shallow()
            self.cost_cuts()
            self.cost_deep()
            self.cost_user()
        finally:
            stats.restore()

    def shallow(self, lines):
        """cpuloop, 3 unpinned threads 4 calls deep, for @lines measures of a table; ends by
        itself."""
        seconds = lines * (self.a.seconds + 40) + 30
        p = PROCS.start([self.a.cpuloop, '--threads', '3', '--no-pin', '--seconds', str(seconds)],
                        stdout=subprocess.DEVNULL)
        time.sleep(0.5)
        return p

    def alive(self, p, what):
        if p.poll() is not None:
            raise Failed(f'{what} exited early (status {p.returncode})')

    def odd(self, rounds):
        for r in rounds:
            for o in r.get('odd', ()):
                say(f'    (a window of this line was measured again: its BPF statistics went '
                    f'back, {o})')

    def sampler_ran(self, rounds):
        """Which of sfprof's BPF programs the rounds measured, and how its summary says the
        user stacks went into the ring (one answer per distinct one)."""
        seen = []
        for r in rounds:
            what = f'{r.get("prog") or "?"} ({r.get("ring_how") or "summary silent"})'
            if what not in seen:
                seen.append(what)
        return ' / '.join(seen) or '-'

    def rounds(self, lines, check):
        """Each of @lines, (key, measure), measured --cost-rounds times with the rounds
        interleaved: round 1 of every line, then round 2 of every line, ... so that a slow phase
        of this VM (another tenant's load) falls on every line alike rather than on one. @check()
        runs before each measure (the workload is still there); a measure returning None (a
        line that cannot run, said once) is left out. @return {key: [figures of each round]}."""
        out = {key: [] for key, _ in lines}
        for n in range(self.a.cost_rounds):
            for key, measure in lines:
                check()
                r = measure()
                if r is not None:
                    r['round'] = n
                    if 'runs' in r:
                        r['ns'] = r['run_ns'] / max(r['runs'], 1)
                        r['cpu_pct'] = 100 * r['win_cpu'] / r['win_s']
                    out[key].append(r)
        return out

    def cost_shallow(self):
        a = self.a
        say('== cost per sample on shallow stacks: cpuloop --threads 3 --no-pin (4 levels of '
            f'calls) on {NCPU} CPUs, -F 999')
        say(f'{"program":<24} {"BPF runs":>9} {"ns/run":>7} {"spread":>11} {"samples":>8} '
            f'{"copy B/smp":>10} {"user us/smp":>11} {"CPU %":>6}  notes')
        lines = [('counting only (--pid)', 'count', None), ('one read (--pid)', 'read', None),
                 ('sfprof record -p PID', None, 'pid'), ('sfprof record -a', None, None)]
        cl = self.shallow(len(lines) * a.cost_rounds)
        try:
            def measure(prog, target):
                if prog:
                    return lambda: self.baseline(prog, 999, pid=cl.pid)
                return lambda: self.sfprof_cost(999, pid=cl.pid if target else None)

            got = self.rounds([(label, measure(prog, target)) for label, prog, target in lines],
                              lambda: self.alive(cl, 'cpuloop'))
        finally:
            PROCS.stop(cl)
        self.user_lines.append(('shallow record -p (999 Hz)', got['sfprof record -p PID']))
        for label, prog, _ in lines:
            rs = got[label]
            if prog:
                tail = (f'{"-":>10} {"-":>11} {"-":>6}  '
                        + (f'{fmt(med(rs, "failed"), ".0f")} failed reads' if prog == 'read'
                           else ''))
            else:
                tail = (f'{fmt(med(rs, "copy_bps"), ".0f"):>10} '
                        f'{fmt(med(rs, "user_us"), ".2f"):>11} '
                        f'{fmt(med(rs, "cpu_pct"), ".1f"):>6}  {fmt(med(rs, "lost"), ".0f")} lost; '
                        f'ran {self.sampler_ran(rs)}')
            say(f'{label:<24} {fmt(med(rs, "runs"), ".0f"):>9} {fmt(med(rs, "ns"), ".0f"):>7} '
                f'{spread(rs):>11} {fmt(med(rs, "samples"), ".0f"):>8} ' + tail)
            self.odd(rs)
        say('  (counting only, one read: bench/bpf_baseline, a perf_event program on a cpu-clock '
            'event per CPU that counts the')
        say('   samples of cpuloop, and also reads 8 bytes at the user SP of the task interrupted; '
            'BPF runs: every run of the')
        say('   program over the window, those the pid filter drops included; samples: what the '
            'program counted over its life')
        say('   (the baselines) or in the file (sfprof); copy B/smp: user-stack bytes copied per '
            'sample, from sfprof\'s summary;')
        say('   user us/smp: sfprof\'s CPU time over the window (all its threads, user + system) '
            'per sample, the window\'s')
        say('   share of the samples in its file; CPU %: the same time in % of one CPU; every '
            'column the median of the rounds;')
        say('   ran: sfprof\'s BPF program the window measured, sample (the user stack read '
            'straight into the ring record,')
        say('   on kernels with bpf_probe_read_user_dynptr) or sample_copied (assembled aside and '
            'copied into the ring), and')
        say('   in brackets what record\'s summary says of it)')
        say()

    def cost_cuts(self):
        a = self.a
        with open(a.sfprof, 'rb') as f:
            reads_cut = b'SFPROF_SAMPLER_CUT' in f.read()
        say('== where the sampler\'s time goes: sfprof record -p PID -F 999 on the same cpuloop, '
            'SFPROF_SAMPLER_CUT=PARTS')
        say('   (the parts the sampler leaves out)'
            + ('' if reads_cut else '; this sfprof does not read SFPROF_SAMPLER_CUT: every line '
               'runs the whole sampler'))
        say(f'{"cut":<16} {"BPF runs":>9} {"ns/run":>7} {"spread":>11} {"vs full ns":>10} '
            f'{"copy B/smp":>10} {"user us/smp":>11} {"samples":>8}  program')
        refused = {}
        cl = self.shallow(len(a.cost_cuts) * a.cost_rounds)

        def measure(cut):
            def run():
                if cut in refused:  # refused once: it would be every round
                    return None
                try:
                    return self.sfprof_cost(999, pid=cl.pid, cut=cut or None)
                except Failed as e:
                    if e.log is None:
                        raise
                    said = [ln.strip() for ln in e.log.splitlines() if ln.strip()]
                    named = [ln for ln in said if 'SFPROF_SAMPLER_CUT' in ln or 'cut' in ln]
                    refused[cut] = (named or said or ['(nothing on stderr)'])[-1]
                    return None
            return run

        try:
            got = self.rounds([(cut, measure(cut)) for cut in a.cost_cuts],
                              lambda: self.alive(cl, 'cpuloop'))
        finally:
            PROCS.stop(cl)
        full = {r['round']: r['ns'] for r in got.get('', [])}
        for cut in a.cost_cuts:
            label = cut or '(none)'
            if cut in refused:
                say(f'{label:<16} refused: {refused[cut]}')
                continue
            rs = got[cut]
            # paired by round: the whole sampler and this line measured in the same phase
            vs = [r['ns'] - full[r['round']] for r in rs if cut and r['round'] in full]
            say(f'{label:<16} {fmt(med(rs, "runs"), ".0f"):>9} {fmt(med(rs, "ns"), ".0f"):>7} '
                f'{spread(rs):>11} '
                f'{fmt(statistics.median(vs) if vs else None, "+.0f"):>10} '
                f'{fmt(med(rs, "copy_bps"), ".0f"):>10} {fmt(med(rs, "user_us"), ".2f"):>11} '
                f'{fmt(med(rs, "samples"), ".0f"):>8}  '
                + ' / '.join(dict.fromkeys(r.get('prog') or '?' for r in rs)))
            self.odd(rs)
        say('  (vs full ns: this line\'s ns/run minus the full sampler\'s, the line (none), in '
            'the same round, the median over')
        say('   the rounds: negative = cheaper; after-filter: the sampler\'s floor, it returns '
            'right after the pid filter;')
        say('   lookups-twice: not a cut, the three per-sample map lookups (targets, stack_sizes, '
            'py_procs) made twice: + the')
        say('   lookups\' cost; kstack, python, comm: without the kernel stack, the Python walk, '
            'the thread\'s name; ustack: the')
        say('   user stack copy (and its bytes in the ring) left out; \'ustack,output\': also no '
            'ring record (only the header was')
        say('   left to write); direct: the program sample_copied instead of sample on the same '
            'kernel (what the in-place read')
        say('   saves); program: the one the window measured. size-lookup and output alone are '
            'not in the default list: no')
        say('   thread\'s copy size is learned without them (no sizes, or no samples reaching '
            'user space), so every sample')
        say('   copies the default 16 KiB and costs more; refused: sfprof would not run with that '
            'SFPROF_SAMPLER_CUT, and')
        say('   what it said; times: not a cut either, each step of the program timed, its clock '
            'reads in its ns/run)')
        if 'times' in got and 'times' not in refused:
            rs = got['times']
            say('  the program sample\'s steps, from the line times (each step\'s ns per sample, '
                'medians; each with a')
            say('  clock read and a map update of its own, some tens of ns): '
                + ', '.join(f'{s} {fmt(med(rs, "step_" + s), ".0f")}' for s in STEPS))
        say()

    def cost_deep(self):
        a = self.a
        say(f'== cost per sample on deep stacks: {NCPU} threads 200 frames deep, record -a, '
            f'and the baselines on every task (no --pid)')
        say(f'{"Hz":>6} {"program":<14} {"BPF runs":>9} {"ns/run":>7} {"spread":>11} '
            f'{"samples":>9} {"lost":>6} {"user us/smp":>11} {"CPU %":>6} {"life CPU s":>10} '
            f'{"life us/smp":>11}')
        lines = [(hz, label, prog) for hz in (999, 4999)
                 for label, prog in (('counting only', 'count'), ('one read', 'read'),
                                     ('sfprof -a', None))]

        def measure(hz, prog):
            if prog:
                return lambda: self.baseline(prog, hz)

            def run():
                r = self.sfprof_cost(hz)
                r['life_us'] = r['cpu'] / max(r['samples'], 1) * 1e6
                return r
            return run

        dp = self.deep(len(lines) * a.cost_rounds * (a.seconds + 40))
        try:
            time.sleep(0.5)
            got = self.rounds([((hz, label), measure(hz, prog)) for hz, label, prog in lines],
                              lambda: self.alive(dp, 'pressure_deep'))
        finally:
            PROCS.stop(dp)
        ran = self.sampler_ran([r for hz, label, prog in lines if not prog
                                for r in got[(hz, label)]])
        self.user_lines += [(f'deep record -a {hz} Hz', got[(hz, label)])
                            for hz, label, prog in lines if not prog]
        for hz, label, prog in lines:
            rs = got[(hz, label)]
            head = (f'{hz:>6} {label:<14} {fmt(med(rs, "runs"), ".0f"):>9} '
                    f'{fmt(med(rs, "ns"), ".0f"):>7} {spread(rs):>11} '
                    f'{fmt(med(rs, "samples"), ".0f"):>9} ')
            if prog:
                say(head + (f'{fmt(med(rs, "failed"), ".0f"):>6}' if prog == 'read'
                            else f'{"-":>6}')
                    + f' {"-":>11} {"-":>6} {"-":>10} {"-":>11}')
            else:
                say(head + f'{fmt(med(rs, "lost"), ".0f"):>6} '
                    f'{fmt(med(rs, "user_us"), ".2f"):>11} {fmt(med(rs, "cpu_pct"), ".1f"):>6} '
                    f'{fmt(med(rs, "cpu"), ".2f"):>10} {fmt(med(rs, "life_us"), ".2f"):>11}')
            self.odd(rs)
        say('  (lost: for one read, the reads that failed (a kernel thread has no user stack); '
            'user: sfprof\'s CPU time over')
        say('   the window (all its threads, user + system) per sample (the window\'s share of '
            'those in its file), and in %')
        say('   of one CPU; life: its whole run from rusage, start-up /proc scan and final write '
            'included, per sample written;')
        say('   one pressure_deep for the whole table; every column the median of the rounds;')
        say(f'   sfprof\'s BPF program: {ran})')
        say()

    def cost_user(self):
        """record's user space per sample, from the runs of the shallow and deep tables."""
        say('== record\'s user space per sample (us): the sfprof runs of the tables above, no '
            'run of its own')
        say(f'{"run":<28} {"reader":>7} {"unwinders":>9} {"others":>7} {"all":>7}  '
            f'{"finding":>8} {"unwinding":>9} {"writing":>8}')
        gone = 0
        for label, rs in self.user_lines:
            gone += sum(r.get('win_gone') or 0 for r in rs)
            say(f'{label:<28} {fmt(med(rs, "reader_us"), ".2f"):>7} '
                f'{fmt(med(rs, "unwind_us"), ".2f"):>9} {fmt(med(rs, "other_us"), ".2f"):>7} '
                f'{fmt(med(rs, "user_us"), ".2f"):>7}  {fmt(med(rs, "sum_find_us"), ".2f"):>8} '
                f'{fmt(med(rs, "sum_unwind_us"), ".2f"):>9} '
                f'{fmt(med(rs, "sum_write_us"), ".2f"):>8}')
        say('  (reader, unwinders, others, all: CPU time over the line\'s window, per sample of '
            'the window (the window\'s share')
        say('   of the samples in its file), from the first field of /proc/PID/task/*/schedstat '
            '(ns on a CPU, user + system)')
        say('   read at the window\'s start and end, by thread: the reader is the main thread '
            '(named sfprof), the unwinders')
        say('   sfprof-unw*, the others the rest (sfprof-keeper, sfprof-prepare, ...); a thread '
            'born in the window counts from')
        say('   its birth, one gone before its end is left out'
            + (f' ({gone} such thread(s) seen)' if gone else ' (none seen)') + '; finding, '
            'unwinding, writing: record\'s')
        say('   summary line "user space per sample" (its whole run, per sample handled: finding '
            'its process, unwinding, writing')
        say('   it), so start-up and the end are in those, not in the window\'s; every column the '
            'median of the rounds)')
        say()

    def memory(self):
        a = self.a
        say(f'== memory: {NCPU} threads 200 frames deep, record -a for {a.memory_seconds:g} s '
            f'per rate (perf_event_max_sample_rate {self.rate.saved})')
        say(f'{"Hz":>6} {"samples":>9} {"Hz/CPU":>7} {"lost":>7} {"ring":>7} {"queue":>6} '
            f'{"complete":>9} {"copy B/smp":>10} {"peak RSS":>10} {"CPU %":>6} {"wall-dur":>9}')
        for hz in (999, 4999, 10000, 20000):
            if hz > int(self.rate.read()):
                say(f'{hz:>6}  (above kernel.perf_event_max_sample_rate '
                    f'{self.rate.read()}: perf_event_open refuses it)')
                continue
            dp = self.deep(a.memory_seconds)
            try:
                time.sleep(0.5)
                r = self.record(hz, a.memory_seconds)
            finally:
                PROCS.stop(dp)
            span = r['span'] or a.memory_seconds
            say(f'{hz:>6} {r["samples"]:>9} {r["samples"] / NCPU / span:>7.0f} '
                f'{fmt(r["lost"]):>7} {fmt(r["lost_ring"]):>7} {fmt(r["lost_queue"]):>6} '
                f'{fmt(r["complete"], ".1f"):>8}% {fmt(r["copy_bps"]):>10} '
                f'{r["peak"] / MiB:>6.1f} MiB {100 * r["cpu"] / r["wall"]:>6.1f} '
                f'{(r["wall"] - a.memory_seconds) * 1000:>6.0f} ms')
        say('  (Hz/CPU: samples per second and CPU over sfprof\'s span, below the rate asked '
            'when the kernel throttles;')
        say('   CPU %: sfprof\'s user + system time over its wall time, of one CPU)')
        say()

    def ring(self):
        """What the ring and its reader sustain per rate, on a quiet machine and a full one."""
        a = self.a
        shared = a.ring_groups == 'shared'
        say(f'== ring: record -a for {a.ring_seconds:g} s per rate; (i) quiet: nothing started '
            f'beside it; (ii) full: {NCPU} programs')
        say(f'   200 frames deep of one thread each (every CPU busy), '
            + ('in sfprof\'s scheduling group (one session: their threads and sfprof\'s '
               'compete one for one)' if shared else
               'each in a session (an autogroup) of its own, as sfprof') + '; '
            f'perf_event_max_sample_rate {self.rate.saved}')
        say(f'{"load":<6} {"Hz":>6} {"samples":>8} {"Hz/CPU":>7} {"lost ring":>9} {"unwind":>7} '
            f'{"lost %":>7} {"complete":>9} {"wait ms":>8} {"CPU %":>6} {"start":>6} {"sampled":>8} '
            f'{"finish":>7} {"wall-dur":>9} {"loadavg":>7}  reader')
        rows = []
        for load in a.ring_loads:
            for hz in a.ring_rates:
                if hz > int(self.rate.read()):
                    say(f'{load:<6} {hz:>6}  (above kernel.perf_event_max_sample_rate '
                        f'{self.rate.read()}: perf_event_open refuses it)')
                    continue
                deep = []
                try:
                    if load == 'full':
                        deep = [PROCS.start([a.deep, str(a.ring_seconds + 30), '1'],
                                            session=not shared) for _ in range(NCPU)]
                        time.sleep(0.5)
                    with open('/proc/loadavg') as f:
                        lavg = float(f.read().split()[0])
                    r = self.record(hz, a.ring_seconds, session=not shared)
                finally:
                    for d in deep:
                        PROCS.stop(d)
                lost = sum(r[k] or 0 for k in ('lost_ring', 'lost_queue', 'lost_unwind'))
                taken = r['samples'] + lost
                span = r['sampled'] or r['span'] or a.ring_seconds
                rows.append((load, hz, r))
                say(f'{load:<6} {hz:>6} {r["samples"]:>8} {r["samples"] / NCPU / span:>7.0f} '
                    f'{fmt(r["lost_ring"]):>9} {fmt(r["lost_unwind"]):>7} '
                    f'{100 * lost / max(taken, 1):>6.1f}% {fmt(r["complete"], ".1f"):>8}% '
                    f'{fmt(r["wait_ms"], ".1f"):>8} {100 * r["cpu"] / r["wall"]:>6.1f} '
                    f'{fmt(r["started"], ".2f"):>6} {fmt(r["sampled"], ".3f"):>8} '
                    f'{fmt(r["finish"], ".2f"):>7} '
                    f'{(r["wall"] - a.ring_seconds) * 1000:>6.0f} ms {lavg:>7.2f}  '
                    + (f'RT, {r["reader_cpu"]:.2f} s CPU, over budget in {r["reader_over"]}'
                       if r['reader'] == 'real-time' else fmt(r['reader'])))
        say('  (samples: in the file; Hz/CPU: samples per second and CPU sampled; lost ring: '
            'the ring full, the reader behind;')
        say('   unwind: past the unwinders\' queue bound; lost %: every sample lost, of those '
            'taken and lost; complete: of the')
        say('   samples with a user stack; wait ms: the longest a sample waited to be unwound; '
            'CPU %: sfprof\'s user + system')
        say('   time over its wall time; start, sampled, finish: what sfprof says it took to '
            'start, sampled and spent')
        say('   after (seconds); wall-dur: its wall time minus --duration; loadavg: the 1-minute '
            'load average before the run:')
        say('   other tenants of the machine;')
        say('   reader: RT when it ran at real-time priority, its CPU so and the 100 ms windows '
            'in which it used its budget up)')
        say()
        return rows

    def churn_part(self):
        a = self.a
        seconds = a.churn_minutes * 60
        say(f'== churn: {NCPU} threads 200 frames deep + the loop of 20-ms processes, record -a '
            f'-F 999 for {a.churn_minutes:g} min; RSS every {a.rss_interval:g} s')
        curve = []

        def on_rss(t, rss):
            curve.append((t, rss))
            say(f'  {t:>6.0f} s  RSS {rss / MiB:>7.1f} MiB')

        dp = self.deep(seconds)
        ch = self.churn(seconds)
        try:
            time.sleep(0.5)
            r = self.record(999, seconds, every=a.rss_interval, on_rss=on_rss)
        finally:
            runs = self.churn_count(ch)
            PROCS.stop(dp)
        say(f'  {r["samples"]} samples, {fmt(r["lost"])} lost, {fmt(r["complete"], ".1f")}% '
            f'complete, {fmt(r["processes"])} processes seen ({fmt(runs)} short-lived runs), '
            f'peak RSS {r["peak"] / MiB:.1f} MiB')
        if len(curve) >= 3:
            # from the second reading on: the first includes the start-up
            (t1, r1), (tn, rn) = curve[1], curve[-1]
            slope = (rn - r1) / MiB / ((tn - t1) / 60)
            say(f'  RSS from {t1:.0f} s to {tn:.0f} s: {r1 / MiB:.1f} -> {rn / MiB:.1f} MiB '
                f'({(rn - r1) / MiB:+.1f} MiB, {slope:+.2f} MiB/min)')
        else:
            say('  (fewer than 3 RSS readings: no trend; lengthen --churn-minutes or shorten '
                '--rss-interval)')
        say()

    def run(self):
        a = self.a
        say(f'{NAME}: {NCPU} CPUs, {os.uname().release}; parts {",".join(a.parts)}; '
            f'--seconds {a.seconds:g}, --memory-seconds {a.memory_seconds:g}, '
            f'--churn-minutes {a.churn_minutes:g}')
        say(f'{NAME}: kernel.perf_event_max_sample_rate = {self.rate.saved}, '
            f'kernel.perf_cpu_time_max_percent = '
            f'{Sysctl("/proc/sys/kernel/perf_cpu_time_max_percent").saved}; {tool_version("gcc")}; '
            f'{tool_version("perf")}')
        say()
        start = time.monotonic()
        try:
            for part in a.parts:
                {'saturation': self.saturation, 'deep': self.deep_part, 'cost': self.cost,
                 'memory': self.memory, 'churn': self.churn_part, 'ring': self.ring}[part]()
        finally:
            self.lowered += self.rate.restore()
            if self.lowered:
                say(f'{NAME}: the kernel lowered perf_event_max_sample_rate (interrupts took '
                    f'too long), seen {self.lowered} time(s); put back to {self.rate.saved} '
                    f'before the next run and at the end')
        say(f'{NAME}: {time.monotonic() - start:.0f} s')

    def close(self):
        shutil.rmtree(self.work, ignore_errors=True)


PARTS = ('saturation', 'deep', 'cost', 'memory', 'churn', 'ring')
# cost's breakdown: the values of SFPROF_SAMPLER_CUT (sfprof's user/record/sampler.c reads them),
# the whole sampler first
COST_CUTS = ('', 'times', 'after-filter', 'lookups-twice', 'kstack', 'python', 'comm', 'ustack',
             'ustack,output', 'direct')


def positive(v):
    x = float(v)
    if x <= 0:
        raise argparse.ArgumentTypeError(f'{v}: not a positive number')
    return x


def main():
    ap = argparse.ArgumentParser(prog=NAME, description=__doc__.split('\n')[0])
    ap.add_argument('--sfprof', required=True, help='the sfprof binary')
    ap.add_argument('--deep', required=True, help='the pressure_deep binary')
    ap.add_argument('--shorts', required=True, help='the pressure_short variants, comma-separated')
    ap.add_argument('--cpuloop', help='the cpuloop binary (bench/cpuloop.c; for cost)')
    ap.add_argument('--baseline', help='the bpf_baseline binary (bench/bpf_baseline.c; for cost)')
    ap.add_argument('--cost-cuts', default='/'.join(COST_CUTS),
                    help='the SFPROF_SAMPLER_CUT values of cost\'s breakdown, separated by '
                    '\'/\' (a value is itself comma-separated; an empty one is the whole '
                    f'sampler; default {"/".join(COST_CUTS)})')
    ap.add_argument('--cost-rounds', type=int, default=3,
                    help='times cost measures each line of its tables, the rounds interleaved '
                    '(round 1 of every line, then round 2, ...); it prints the median and the '
                    'spread (default 3)')
    ap.add_argument('--parts', default=','.join(PARTS),
                    help=f'comma-separated, of {",".join(PARTS)} (default: all)')
    ap.add_argument('--seconds', type=positive, default=10,
                    help='each run of saturation, cost and pressure_deep in deep (default 10)')
    ap.add_argument('--memory-seconds', type=positive, default=20,
                    help='each rate of memory (default 20)')
    ap.add_argument('--churn-minutes', type=positive, default=2, help='the churn run (default 2)')
    ap.add_argument('--rss-interval', type=positive, default=10,
                    help='seconds between RSS readings in churn (default 10)')
    ap.add_argument('--cc-functions', type=int, default=100,
                    help='functions in the generated file cc1 compiles (default 100: ~6 s)')
    ap.add_argument('--cc-nest', type=int, default=24, help='their block nesting (default 24)')
    ap.add_argument('--cc-expr', type=int, default=24,
                    help='their expression nesting (default 24)')
    ap.add_argument('--ring-seconds', type=positive, default=5,
                    help='each run of ring (default 5)')
    ap.add_argument('--ring-rates', default='999,4999,10000,20000',
                    help='the rates of ring, comma-separated (default 999,4999,10000,20000)')
    ap.add_argument('--ring-loads', default='quiet,full',
                    help='the loads of ring: quiet, full or both (default quiet,full)')
    ap.add_argument('--ring-groups', choices=('shared', 'own'), default='shared',
                    help='ring\'s deep programs in sfprof\'s scheduling group (shared, the '
                    'default) or each in a session of its own')
    ap.add_argument('--no-perf', action='store_true', help='no perf run in deep')
    ap.add_argument('--perf-script', action='store_true',
                    help='also perf\'s share of complete stacks (slow: perf script unwinds)')
    ap.add_argument('--command-timeout', type=positive, default=600,
                    help='bound on a recorded command (default 600 s)')
    ap.add_argument('--keep', metavar='DIR', help='copy sfprof\'s logs into DIR')
    a = ap.parse_args()
    a.parts = [p for p in a.parts.split(',') if p]
    for p in a.parts:
        if p not in PARTS:
            ap.error(f'no part {p!r} (of {",".join(PARTS)})')
    a.shorts = a.shorts.split(',')
    a.cost_cuts = a.cost_cuts.split('/')
    if a.cost_rounds < 1:
        ap.error('--cost-rounds: at least 1')
    if 'cost' in a.parts:
        for opt in ('cpuloop', 'baseline'):
            if not getattr(a, opt):
                ap.error(f'the cost part needs --{opt}')
            if not os.access(getattr(a, opt), os.X_OK):
                ap.error(f'{getattr(a, opt)}: not an executable')
    a.ring_rates = [int(x) for x in a.ring_rates.split(',') if x]
    a.ring_loads = [x for x in a.ring_loads.split(',') if x]
    for x in a.ring_loads:
        if x not in ('quiet', 'full'):
            ap.error(f'--ring-loads: no load {x!r} (quiet, full)')
    for path in [a.sfprof, a.deep, *a.shorts]:
        if not os.access(path, os.X_OK):
            ap.error(f'{path}: not an executable')
    if os.geteuid():
        sys.exit(f'{NAME}: needs root (BPF, sysctls)')

    def terminate(sig, frame):
        raise SystemExit(128 + sig)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, terminate)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    bench = Bench(a)
    try:
        bench.run()
    except Failed as e:
        print(f'{NAME}: {e}', file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f'{NAME}: interrupted', file=sys.stderr)
        return 130
    finally:
        PROCS.stop_all()
        bench.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
