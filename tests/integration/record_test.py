#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`sfprof record` with the real BPF sampler, checked against an independent oracle.

Each --case records real programs (tests/progs, compiled at test time into
WORKDIR with -O2 -fomit-frame-pointer -Wa,--gsframe, so only .sframe can
unwind them) and reads the profile back through `sfprof dump`, which
profile_oracle.py parses and symbolizes with readelf and nm:

  chains      record_chains (four threads, deep recursion, libcallback.so
              calling back into the program) under `record -- CMD`: in each
              hot leaf, >= 99% of the samples have exactly the expected chain
              from frame 0 up to the thread's entry function (main, or the
              pthread start routine), and the frame after it is outside the
              program (libc, which has neither .sframe nor frame pointers).
  all-pid     `record -a` sees three processes started after recording
              began (each a binary nothing else runs) and one running before,
              with their exe, their mappings and their chains; `record -p PID`
              of a multi-threaded process sees only that process, all its
              threads.
  shortlived  a stream of 40 processes of ~40 ms each, one binary nothing else
              runs, under `record -a`: their samples come after their process
              and mapping records, and unwind and symbolize to their chain.
              A process image after exec is known by its comm; its process
              record must name the new executable and its thread the new comm.
  syscalls    a program that spends its time in read(2) and getppid(2): the
              samples taken in the kernel carry a user stack that symbolizes
              to the calling chain up to main, and a kernel stack that
              /proc/kallsyms names. The profile's records of BPF programs
              (the sampler's own among them) are where /proc/kallsyms,
              read over and over while recording, put them, by its names.
  errors      a pid that does not exist, a command that does not exist (the
              previous output file is kept), no target, bad options: clear
              messages, the right exit status, no output file.
  signals     SIGINT and SIGTERM stop `record -a` and `record -- CMD` cleanly:
              exit 0, a complete file (no notice from dump), the command gone.
  pressure    deepframes (one thread 40 KiB deep): with the default per-thread
              copy sizes >= 99% of its user stacks are complete and a size
              was set; with --stack-size 8192 most are cut, and the summary
              says so. `--duration 1.5 -a -F 4999` beside it stops at 1.5 s.
              The summary's samples, lost and bytes are the file's. On a
              tmpfs too small for the recording (a mount namespace of its
              own), recording stops at once with "No space left on device",
              exit 1, and the whole blocks written are readable.

Every check on a recording is also run once with a deliberately wrong
expectation (a chain with a frame changed, the other process's pid, another
leaf name) on the same profile, and must then fail: the checks can fail.

Exit status 0 pass, 1 fail, 77 skip (not root, no BTF, no gas --gsframe).
"""

import argparse
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_oracle  # noqa: E402

SKIP = 77
CFLAGS = ['-O2', '-fomit-frame-pointer', '-Wa,--gsframe', '-Wall', '-Wextra', '-pthread']

MIN_PERCENT = 99.0          # of the samples in a hot leaf with exactly the expected chain
MIN_LEAF_SAMPLES = 100      # fewer makes the percentage meaningless (expected: hundreds)
RUNS = 3                    # too few samples: a case runs again, its workload 2x, then 4x

# record_chains.c: hot leaf -> chain from frame 0 to the thread's entry function
RECURSION_DEPTH = 40
CHAINS = {
    'spin_recursion': ['spin_recursion'] + ['recurse'] * RECURSION_DEPTH + ['main_work', 'main'],
    'spin_a': ['spin_a', 'a_inner', 'a_middle', 'a_outer', 'thread_a'],
    'spin_cb': ['spin_cb', 'cb_entry', 'lib_step', 'lib_apply', 'b_outer', 'thread_b'],
    'spin_c': ['spin_c', 'vla_frame', 'thread_c'],
}
# shortlived.c
SL_CHAINS = {'sl_leaf': ['sl_leaf', 'sl_work', 'main']}
# syscalls.c: frame 0 is the instruction after `syscall`
SC_CHAINS = {
    'sys_read_zero': ['sys_read_zero', 'read_loop', 'sc_outer', 'main'],
    'sys_getppid': ['sys_getppid', 'getppid_loop', 'sc_outer', 'main'],
}


class Failure(Exception):
    pass


class TooFew(Failure):
    """Every failed check was one of too few samples: the machine was busy, not sfprof
    wrong. case_main() runs the case again with its workload longer (ctx.scale)."""


class TooFewMsg(str):
    """A failed check's message that says too few samples were taken."""


def log(msg=''):
    print(msg, flush=True)


def quote(cmd):
    return ' '.join(shlex.quote(str(c)) for c in cmd)


def run(cmd, check=True, **kw):
    log('$ ' + quote(cmd))
    p = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, errors='replace', timeout=kw.pop('timeout', 120), **kw)
    for text in (p.stdout, p.stderr):
        if text.strip():
            log(text.rstrip('\n'))
    if check and p.returncode != 0:
        raise Failure(f'{os.path.basename(str(cmd[0]))} exited with {p.returncode}')
    return p


class Ctx:
    def __init__(self, args):
        self.sfprof = os.path.abspath(args.sfprof)
        self.progs = os.path.abspath(args.progs)
        self.work = os.path.abspath(args.workdir)
        self.syms = profile_oracle.Symbolizer()
        # how many times longer than written the cases run their workloads: doubled when
        # a run found too few samples (a busy machine), at most RUNS - 1 times (TooFew)
        self.scale = 1

    def secs(self, n):
        """A workload's length in seconds (or any unit), scaled."""
        return str(n * self.scale)

    def path(self, name):
        return os.path.join(self.work, name)

    def compile(self, src, out, extra=(), shared=False, libs=()):
        """Build tests/progs/SRC into WORKDIR/OUT and check it really has .sframe."""
        cmd = ['gcc', *CFLAGS, '-I', self.progs, *extra]
        cmd += ['-fPIC', '-shared'] if shared else []
        cmd += ['-o', self.path(out), os.path.join(self.progs, src), *libs]
        run(cmd)
        hdr = subprocess.run(['readelf', '-lW', self.path(out)], stdout=subprocess.PIPE,
                             text=True).stdout
        if 'GNU_SFRAME' not in hdr:
            raise Failure(f'{out}: no PT_GNU_SFRAME segment: -Wa,--gsframe had no effect')
        return self.path(out)

    def record(self, args, out, **kw):
        return run([self.sfprof, 'record', '-o', out, *args], check=False, **kw)

    def load(self, path):
        prof = profile_oracle.load_profile(self.sfprof, path)
        if prof.stderr.strip():
            raise Failure(f'sfprof dump -i {path} complains: {prof.stderr.strip()}')
        if prof.summary is None:
            raise Failure('sfprof dump printed no summary line')
        return prof


def check_preconditions():
    if os.geteuid() != 0:
        log('SKIP: sfprof record needs root (CAP_BPF and CAP_PERFMON)')
        sys.exit(SKIP)
    if not os.access('/sys/kernel/btf/vmlinux', os.R_OK):
        log('SKIP: this kernel has no BTF')
        sys.exit(SKIP)
    for tool in ('gcc', 'readelf', 'nm'):
        if not shutil.which(tool):
            log(f'SKIP: {tool} not found')
            sys.exit(SKIP)
    probe = subprocess.run(['gcc', '-Wa,--gsframe', '-x', 'c', '-c', '-o', os.devnull, '-'],
                           input='int f(void) { return 0; }\n', text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if probe.returncode:
        log(f'SKIP: gcc -Wa,--gsframe does not assemble:\n{probe.stdout}')
        sys.exit(SKIP)


# --- chain checks, shared by the cases ---

def names(frames):
    return [f.symbol or (os.path.basename(f.module) if f.module else '??') for f in frames]


def chain_report(ctx, samples, chains, modules):
    """Per hot leaf: (samples with frame 0 in it, exact chains, a few wrong ones).

    A sample is in a leaf when its frame 0 symbolizes to it inside one of
    @modules (paths). Its chain is exact when frames 0..n-1 are the chain,
    each inside @modules, and frame n, if any, is outside them: the thread's
    entry function was reached and nothing of the program follows it."""
    stats = {leaf: [0, 0, Counter()] for leaf in chains}
    for s in samples:
        frames = ctx.syms.user_frames(s)
        if not frames or frames[0].module not in modules or frames[0].symbol not in chains:
            continue
        want = chains[frames[0].symbol]
        st = stats[frames[0].symbol]
        st[0] += 1
        got = frames[:len(want)]
        ok = names(got) == want and all(f.module in modules for f in got) and \
            (len(frames) == len(want) or frames[len(want)].module not in modules)
        if ok:
            st[1] += 1
        else:
            st[2][(' '.join(names(frames)), s.ustack.ending)] += 1
    return stats


def check_chains(ctx, samples, chains, modules, what, min_samples=MIN_LEAF_SAMPLES,
                 quiet=False):
    """Failures (strings) of the >= 99% rule for each leaf of @chains."""
    fails = []
    for leaf, (n, exact, wrong) in chain_report(ctx, samples, chains, modules).items():
        pct = 100.0 * exact / n if n else 0.0
        if not quiet:
            log(f'{what}: {leaf}: {exact} of {n} samples ({pct:.2f}%) have the chain '
                f'{compact(chains[leaf])}')
            for (chain, ending), count in wrong.most_common(3):
                log(f'    {count} x {chain} [{ending}]')
        if n < min_samples:
            fails.append(TooFewMsg(f'{what}: {leaf}: only {n} samples, need {min_samples}'))
        elif pct < MIN_PERCENT:
            fails.append(f'{what}: {leaf}: {pct:.2f}% exact chains, need {MIN_PERCENT}%')
    return fails


def compact(chain):
    out, i = [], 0
    while i < len(chain):
        j = i
        while j < len(chain) and chain[j] == chain[i]:
            j += 1
        out.append(chain[i] + (f' x{j - i}' if j - i > 1 else ''))
        i = j
    return ' '.join(out)


def wrong_chains(chains):
    """The same table with one frame of each chain renamed: every leaf must then fail."""
    out = {}
    for leaf, chain in chains.items():
        bad = list(chain)
        bad[len(bad) // 2 if len(bad) > 1 else 0] = 'not_this_function'
        out[leaf] = bad
    return out


def must_fail(fails, what):
    """A negative check: @fails, from a wrong expectation, must not be empty."""
    if not fails:
        raise Failure(f'negative check did not fail: {what}')
    log(f'ok: negative check fails as it must: {what} ({len(fails)} failure(s))')


def expect(cond, fails, msg):
    if not cond:
        fails.append(msg)


def raise_fails(fails):
    for f in fails:
        log(f'FAIL: {f}')
    if fails and all(isinstance(f, TooFewMsg) for f in fails):
        raise TooFew(f'{len(fails)} check(s) found too few samples')
    if fails:
        raise Failure(f'{len(fails)} check(s) failed')


# --- waiting for a recording to run ---

def start_recording(ctx, args, out, canary):
    """Start `sfprof record ARGS -o OUT` and return once it samples: the profile
    written so far (whole blocks) holds a sample of the spinning @canary."""
    cmd = [ctx.sfprof, 'record', '-o', out, *args]
    log('$ ' + quote(cmd) + ' &')
    rec = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           errors='replace')
    spin = subprocess.Popen([canary, '30000'])
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            if rec.poll() is not None:
                raise Failure(f'sfprof record exited early with {rec.returncode}: '
                              f'{rec.stderr.read().strip()}')
            if os.path.exists(out):
                p = subprocess.run([ctx.sfprof, 'dump', '-i', out], stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True, errors='replace')
                if f' pid {spin.pid} tid ' in p.stdout:
                    log(f'recording: a sample of canary {spin.pid} is in {out}')
                    return rec
            time.sleep(0.1)
        raise Failure('no sample of the canary process within 30 s')
    except BaseException:
        rec.kill()
        rec.wait()
        raise
    finally:
        spin.kill()
        spin.wait()


def stop_recording(rec, sig=signal.SIGINT):
    rec.send_signal(sig)
    try:
        out, err = rec.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        rec.kill()
        rec.communicate()
        raise Failure(f'sfprof record did not stop within 30 s of {sig.name}')
    if err.strip():
        log(err.rstrip('\n'))
    if rec.returncode != 0:
        raise Failure(f'sfprof record exited with {rec.returncode} after {sig.name}')


# --- the cases ---

def case_chains(ctx):
    ctx.compile('libcallback.c', 'libcallback.so', shared=True)
    prog = ctx.compile('record_chains.c', 'record_chains',
                       libs=['-L', ctx.work, '-lcallback', '-Wl,-rpath,$ORIGIN'])
    lib = ctx.path('libcallback.so')
    out = ctx.path('chains.data')
    p = ctx.record(['--', prog, ctx.secs(3)], out, timeout=60 * ctx.scale)
    if p.returncode != 0:
        raise Failure(f'sfprof record exited with {p.returncode}')
    prof = ctx.load(out)
    fails = []
    expect(prof.command and not prof.system_wide, fails, 'header flags: want command only')
    pids = {s.pid for s in prof.samples}
    expect(len(pids) == 1, fails, f'samples of {len(pids)} processes, want only the command')
    procs = [pr for pr in prof.processes if pr.exe == prog]
    # sfprof's child is recorded from its exec of the command on, as perf counts a
    # command: a sample inside the exec, still named sfprof, is not the command's
    for pr in prof.processes:
        expect(pr.exe == prog, fails, f'a process record with exe {pr.exe}, want only {prog}')
    expect(all(s.comm != 'sfprof' for s in prof.samples), fails,
           'samples of sfprof\'s child before its exec were recorded')
    expect(len(procs) == 1, fails, f'{len(procs)} process records with exe {prog}, want 1')
    samples = [s for s in prof.samples if s.process in procs]
    tids = {s.tid for s in samples}
    expect(len(tids) >= 4, fails, f'samples of {len(tids)} threads, want the 4 spinning ones')
    fails += check_chains(ctx, samples, CHAINS, {prog, lib}, 'record -- record_chains')
    raise_fails(fails)
    must_fail(check_chains(ctx, samples, wrong_chains(CHAINS), {prog, lib}, 'wrong', quiet=True),
              'a frame of each expected chain renamed')
    must_fail(check_chains(ctx, samples, CHAINS, {prog}, 'wrong', quiet=True),
              'libcallback.so not accepted as a module of the chains')
    # the sampler's two programs: the one this kernel gets, then the other where it has both
    direct = kernel_reads_direct()
    want = 'read straight into the ring' if direct else 'copied into the ring'
    if want not in p.stderr:
        raise Failure(f'record did not say its user stacks were {want}: {p.stderr[-600:]}')
    # each thread's copy ends at its outermost frame once an unwind has reached it: before,
    # the smallest copy (4 KiB) ran past the spinning threads' stacks, to their mappings' end
    m = re.search(r'user stack copies: (\d+) bytes/sample', p.stderr)
    if not m or int(m.group(1)) > 2048:
        raise Failure(f'user stack bytes copied per sample: {m and m.group(1)}, want at most '
                      f'2048 (before tops were learned, 4 KiB and more per thread)')
    if not direct:
        log('the kernel has no bpf_probe_read_user_dynptr(): the program sample_copied only')
        return
    env = dict(os.environ, SFPROF_SAMPLER_CUT='direct')
    p = ctx.record(['--', prog, ctx.secs(3)], out, timeout=60 * ctx.scale, env=env)
    if p.returncode != 0 or 'copied into the ring' not in p.stderr:
        raise Failure(f'sfprof record with the program sample_copied: exit {p.returncode}, '
                      f'{p.stderr[-600:]}')
    samples = [s for s in ctx.load(out).samples if s.process and s.process.exe == prog]
    raise_fails(check_chains(ctx, samples, CHAINS, {prog, lib}, 'record (sample_copied)'))


def kernel_reads_direct():
    """Whether the kernel's BTF has the kfunc the sampler's program sample needs."""
    with open('/sys/kernel/btf/vmlinux', 'rb') as f:
        return b'\0bpf_probe_read_user_dynptr\0' in f.read()


def spinner_copies(ctx, names_):
    """shortlived.c built once per name, each with its own build ID."""
    return [ctx.compile('shortlived.c', n, extra=[f'-DVARIANT={i + 1}'])
            for i, n in enumerate(names_)]


def exec_images(prof, pids, exe):
    """The process images of @pids after they exec'd @exe, known by their comm
    (set by the exec itself), and the failures of their records: each must name
    @exe. A sample taken while the exec runs, or one taken after the exit
    record (the kernel samples a task until its very end), must not give its
    process a record with another executable."""
    comm = os.path.basename(exe)[:15]
    images = [pr for pr in prof.processes if pr.pid in pids and pr.comm == comm]
    # a sample in the exec's own kernel work, before the new image's first mapping
    # event, may write a record whose exe is not known yet (''), provided a
    # later record of the same pid names it
    named = {pr.pid for pr in images if pr.exe == exe}
    fails = [f'pid {pr.pid}: process record at dump line {pr.line} has comm {comm!r} but exe '
             f'{pr.exe!r}, want {exe}' for pr in images
             if pr.exe != exe and not (pr.exe == '' and pr.pid in named)]
    # the thread that exec'd is renamed by the exec: thread and comm records say so
    for s in prof.samples:
        if s.pid in pids and s.tid == s.pid and any(s.process is pr for pr in images) and \
                s.comm != comm:
            fails.append(f'pid {s.pid}: sample at dump line {s.line} of the exec\'d image, '
                         f'but its thread is named {s.comm!r}, not {comm!r}')
            break
    return images, fails


def where_frame0(ctx, samples, exe):
    """Counter of where frame 0 of each sample is: in @exe (by symbol), in another
    module, in no mapping of the sample's process, or no user stack at all."""
    where = Counter()
    for s in samples:
        frames = ctx.syms.user_frames(s)
        if not frames:
            where['no user stack'] += 1
        elif frames[0].module == exe:
            where[f'in {os.path.basename(exe)}: {frames[0].symbol}'] += 1
        elif frames[0].module:
            where[f'in {os.path.basename(frames[0].module)}'] += 1
        else:
            where['in no mapping' + (' (user mode)' if not s.kstack else ' (in the kernel)')] += 1
    return where


def check_late_process(ctx, prof, pid, exe, min_samples=20, quiet=False):
    images, fails = exec_images(prof, {pid}, exe)
    expect(images, fails, f'pid {pid}: no process record with comm {os.path.basename(exe)[:15]!r}')
    for pr in images:
        expect(pr.ppid == os.getpid(), fails,
               f'pid {pid}: ppid {pr.ppid}, want {os.getpid()} (this driver)')
        # a record written inside the exec, before its first mapping event, has
        # neither exe nor mappings yet (exec_images checks that a named one follows)
        expect(pr.exe == '' or
               any(m.module and m.module.path == exe and 'x' in m.prot for m in pr.mappings),
               fails, f'pid {pid}: no executable mapping of {exe}')
    mine = [s for s in prof.samples if s.pid == pid and any(s.process is pr for pr in images)]
    where = where_frame0(ctx, mine, exe)
    if not quiet:
        log(f'pid {pid}: frame 0 of its samples: ' +
            ', '.join(f'{k} {v}' for k, v in where.most_common()))
    expect(not where['in no mapping (user mode)'], fails,
           f'pid {pid}: {where["in no mapping (user mode)"]} user-mode samples outside '
           f'every mapping written for it')
    fails += check_chains(ctx, mine, SL_CHAINS, {exe}, f'pid {pid} {os.path.basename(exe)}',
                          min_samples=min_samples, quiet=quiet)
    return fails


def case_all_pid(ctx):
    token = secrets.token_hex(3)
    errors, too_few = [], []
    for part in (record_all, record_pid):
        try:
            part(ctx, token)
        except TooFew as e:
            log(f'FAIL: {part.__name__}: {e}')
            too_few.append(part.__name__)
        except Failure as e:
            log(f'FAIL: {part.__name__}: {e}')
            errors.append(part.__name__)
    if errors:
        raise Failure(f'failed: {" ".join(errors + too_few)}')
    if too_few:
        raise TooFew(f'too few samples in {" ".join(too_few)}')


def record_all(ctx, token):
    """-a: three processes started once the recording samples, and one already running."""
    late = spinner_copies(ctx, [f'late{i}-{token}' for i in range(3)])
    early = spinner_copies(ctx, [f'early-{token}'])[0]
    canary = ctx.compile('shortlived.c', f'canary-{token}')
    out = ctx.path('all.data')
    # until killed: however long the recording takes to start on a busy machine
    before = subprocess.Popen([early, '3600000'])
    try:
        rec = start_recording(ctx, ['-a'], out, canary)
        try:
            procs = [subprocess.Popen([exe, ctx.secs(600)]) for exe in late]
            for p in procs:
                p.wait(timeout=30)
        finally:
            stop_recording(rec)
    finally:
        before.kill()
        before.wait()
    prof = ctx.load(out)
    fails = []
    expect(prof.system_wide, fails, 'header flags: want system-wide')
    for p, exe in zip(procs, late):
        fails += check_late_process(ctx, prof, p.pid, exe)
    # running at start: known from /proc, not from events
    mine = [s for s in prof.samples if s.pid == before.pid and s.process and
            s.process.exe == early]
    fails += check_chains(ctx, mine, SL_CHAINS, {early}, f'pid {before.pid} (running at start)',
                          min_samples=20)
    raise_fails(fails)
    must_fail(check_late_process(ctx, prof, procs[0].pid, late[1], quiet=True),
              'pid of late0 expected to run late1')


def record_pid(ctx, token):
    """-p: only the given process, all its threads."""
    ctx.compile('libcallback.c', 'libcallback.so', shared=True)
    chains = ctx.compile('record_chains.c', 'record_chains',
                         libs=['-L', ctx.work, '-lcallback', '-Wl,-rpath,$ORIGIN'])
    other = spinner_copies(ctx, [f'other-{token}'])[0]
    # both until killed, once the recording's --duration is over: a target that ended on
    # its own clock left a recording slow to start (a busy machine) with few samples
    target = subprocess.Popen([chains, '3600'])
    bystander = subprocess.Popen([other, '3600000'])
    try:
        time.sleep(0.2)     # its threads exist
        out = ctx.path('pid.data')
        p = ctx.record(['-p', str(target.pid), '--duration', ctx.secs(2)], out,
                       timeout=60 * ctx.scale)
        if p.returncode != 0:
            raise Failure(f'sfprof record -p exited with {p.returncode}')
    finally:
        for proc in (target, bystander):
            proc.kill()
            proc.wait()
    prof = ctx.load(out)
    fails = []

    def only(pid):
        f = []
        seen = {s.pid for s in prof.samples}
        expect(seen == {pid}, f, f'-p {pid}: samples of pids {sorted(seen)}')
        seen = {pr.pid for pr in prof.processes}
        expect(seen == {pid}, f, f'-p {pid}: process records of pids {sorted(seen)}')
        return f
    fails += only(target.pid)
    expect(not prof.system_wide and not prof.command, fails, 'header flags: want neither')
    tids = {s.tid for s in prof.samples}
    expect(len(tids) >= 4, fails, f'-p: samples of {len(tids)} threads, want the 4 spinning ones')
    lib = ctx.path('libcallback.so')
    samples = [s for s in prof.samples if s.process and s.process.exe == chains]
    fails += check_chains(ctx, samples, CHAINS, {chains, lib}, f'record -p {target.pid}',
                          min_samples=MIN_LEAF_SAMPLES // 2)
    raise_fails(fails)
    must_fail(only(bystander.pid), 'the bystander\'s pid expected in the -p profile')


def case_shortlived(ctx):
    runs, ms = 40, 40 * ctx.scale
    token = secrets.token_hex(4)
    exe = spinner_copies(ctx, [f'sl-{token}'])[0]
    canary = ctx.compile('shortlived.c', f'canary-{token}')
    out = ctx.path('shortlived.data')
    rec = start_recording(ctx, ['-a'], out, canary)
    pids = []
    try:
        t0 = time.monotonic()
        for _ in range(runs):
            p = subprocess.Popen([exe, str(ms)])
            pids.append(p.pid)
            if p.wait(timeout=30) != 0:
                raise Failure(f'{exe} exited with {p.returncode}')
        log(f'{runs} runs of {os.path.basename(exe)} ({ms} ms each) took '
            f'{time.monotonic() - t0:.2f} s')
    finally:
        stop_recording(rec)
    prof = ctx.load(out)
    pidset = set(pids)
    images, fails = exec_images(prof, pidset, exe)
    image = [s for s in prof.samples if s.pid in pidset and any(s.process is pr for pr in images)]
    before = sum(1 for s in prof.samples if s.pid in pidset) - len(image)
    # every run was seen as itself, with its mappings before its samples
    seen = Counter(s.pid for s in image)
    log(f'{len(seen)} of {runs} runs have samples attributed to {os.path.basename(exe)}: '
        f'{len(image)} samples, and {before} more of those pids before exec')
    expect(len(seen) >= runs * 0.9, fails, f'only {len(seen)} of {runs} runs have samples')
    where = where_frame0(ctx, image, exe)
    log('frame 0 of those samples: ' + ', '.join(f'{k} {v}' for k, v in where.most_common()))
    user = sum(1 for s in image if not s.kstack)
    unmapped = where['in no mapping (user mode)']
    expect(unmapped <= user // 200, fails,
           f'{unmapped} of {user} user-mode samples are outside every mapping written for their '
           f'process (mapping records missing?)')
    leaf = where[f'in {os.path.basename(exe)}: sl_leaf']
    # each run spins ms of the clock after a start of fixed CPU time (ld.so): on a busy
    # machine the spin's share falls, and longer runs bring it back
    expect(leaf >= 0.8 * len(image), fails,
           TooFewMsg(f'only {leaf} of {len(image)} samples in sl_leaf, where the program '
                     f'spins, need 80% ({ms} ms runs)'))
    for pid in sorted(seen):
        expect(any(m.module and m.module.path == exe for pr in images if pr.pid == pid
                   for m in pr.mappings), fails, f'pid {pid}: no mapping of {exe}')
    fails += check_chains(ctx, image, SL_CHAINS, {exe}, f'{runs} runs of {os.path.basename(exe)}',
                          min_samples=runs * 5)
    raise_fails(fails)
    must_fail(check_chains(ctx, image, wrong_chains(SL_CHAINS), {exe}, 'wrong', quiet=True),
              'sl_leaf expected under another caller')


def bpf_kallsyms():
    """{(address, name)} of the BPF programs /proc/kallsyms lists now."""
    seen = set()
    with open('/proc/kallsyms') as f:
        for line in f:
            if line.endswith('\t[bpf]\n'):
                parts = line.split()
                seen.add((int(parts[0], 16), parts[2]))
    return seen


def check_kernel_jits(prof, snapshots, what):
    """The profile's records of BPF programs (pid 0) against /proc/kallsyms read while it
    was recorded: the sampler's own programs are there, at the address kallsyms gave them,
    by the name it gave them (programs of other recordings may have come and gone)."""
    fails = []
    confirmed = [(a, n) for a, _, n in prof.kernel_jits if (a, n) in snapshots]
    log(f'{what}: {len(prof.kernel_jits)} BPF functions recorded, {len(confirmed)} of them '
        f'at the address and with the name /proc/kallsyms gave them while recording')
    for suffix in ('_sample', '_fork', '_exec'):
        expect(any(n.endswith(suffix) for _, n in confirmed), fails,
               f'{what}: no BPF function named *{suffix} recorded as kallsyms listed it')
    bad = [(a, e) for a, e, _ in prof.kernel_jits if not 0 < e - a < 1 << 20]
    expect(not bad, fails, f'{what}: BPF ranges of no plausible length: {bad[:3]}')
    return fails


def case_syscalls(ctx):
    prog = ctx.compile('syscalls.c', 'syscalls')
    out = ctx.path('syscalls.data')
    # /proc/kallsyms's BPF programs, read over and over while recording: the oracle of
    # the BPF programs' records (the sampler's frames in the kernel stacks of exec)
    snapshots, done = set(), threading.Event()

    def watch():
        while not done.is_set():
            snapshots.update(bpf_kallsyms())
            done.wait(0.1)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        p = ctx.record(['--', prog, ctx.secs(2)], out, timeout=60 * ctx.scale)
    finally:
        done.set()
        watcher.join(timeout=30)
    if p.returncode != 0:
        raise Failure(f'sfprof record exited with {p.returncode}')
    prof = ctx.load(out)
    kfails = check_kernel_jits(prof, snapshots, 'BPF programs')
    raise_fails(kfails)
    wrong = profile_oracle.Profile()
    wrong.kernel_jits = [(a, e, n + 'x') for a, e, n in prof.kernel_jits]
    must_fail(check_kernel_jits(wrong, snapshots, 'wrong'), 'BPF functions renamed')
    ksyms = profile_oracle.KernelSymbols()
    samples = [s for s in prof.samples if s.process and s.process.exe == prog]
    in_kernel = [s for s in samples if s.kstack]
    fails = []
    log(f'{len(samples)} samples of {prog}, {len(in_kernel)} with a kernel stack')
    expect(len(in_kernel) >= 2 * MIN_LEAF_SAMPLES, fails,
           TooFewMsg(f'only {len(in_kernel)} samples in the kernel: not syscall-heavy?'))
    no_user = [s for s in in_kernel if not s.ustack]
    expect(not no_user, fails, f'{len(no_user)} samples in the kernel have no user stack '
           f'(first at dump line {no_user[0].line if no_user else 0})')
    # frame 0 of the user stack is the instruction after `syscall`
    fails += check_chains(ctx, in_kernel, SC_CHAINS, {prog}, 'in the kernel')
    report = chain_report(ctx, in_kernel, SC_CHAINS, {prog})
    in_leaves = sum(v[0] for v in report.values())
    expect(in_leaves >= 0.95 * len(in_kernel), fails,
           f'only {in_leaves} of {len(in_kernel)} kernel samples have a user frame 0 '
           f'in a syscall function')
    # the kernel stacks are kernel code, and the read(2) ones show it
    if ksyms.usable:
        unnamed = sum(1 for s in in_kernel if None in ksyms.frames(s.kstack))
        expect(unnamed <= len(in_kernel) // 100, fails,
               f'{unnamed} kernel stacks have frames /proc/kallsyms does not name')
        reads = [s for s in in_kernel
                 if [f.symbol for f in ctx.syms.user_frames(s)[:1]] == ['sys_read_zero']]
        with_read = sum(1 for s in reads
                        if any(n and 'read' in n for n in ksyms.frames(s.kstack)))
        log(f'kernel stacks under sys_read_zero naming a read function: '
            f'{with_read} of {len(reads)}')
        expect(with_read >= 0.5 * len(reads), fails,
               f'only {with_read} of {len(reads)} read(2) kernel stacks name a read function')
    else:
        log('note: /proc/kallsyms shows no addresses; kernel stacks not named')
    raise_fails(fails)
    must_fail(check_chains(ctx, in_kernel, wrong_chains(SC_CHAINS), {prog}, 'wrong', quiet=True),
              'a frame of each syscall chain renamed')


def case_errors(ctx):
    fails = []
    out = ctx.path('err.data')

    def gone(what):
        for f in (out, out + '.old'):
            expect(not os.path.exists(f), fails, f'{what}: {os.path.basename(f)} was left behind')

    for f in (out, out + '.old'):
        if os.path.exists(f):
            os.unlink(f)
    p = ctx.record(['-p', '999999999'], out)
    expect(p.returncode not in (0, 2) and p.returncode > 0, fails,
           f'-p 999999999: exit {p.returncode}, want a runtime failure (1)')
    expect('no process 999999999' in p.stderr, fails, '-p 999999999: no "no process" message')
    gone('-p 999999999')

    for cmd in ('/nonexistent/cmd', 'sfprof-no-such-command-' + secrets.token_hex(4)):
        p = ctx.record(['--', cmd, 'arg'], out)
        expect(p.returncode not in (0, 2) and p.returncode > 0, fails,
               f'-- {cmd}: exit {p.returncode}, want a runtime failure (1)')
        expect(f'{cmd}: command not found' in p.stderr, fails,
               f'-- {cmd}: no "{cmd}: command not found" message')
        gone(f'-- {cmd}')

    # an earlier profile in the way is renamed to FILE.old, and put back on failure
    with open(out, 'w') as f:
        f.write('an earlier profile\n')
    p = ctx.record(['--', '/nonexistent/cmd'], out)
    expect(p.returncode == 1, fails, f'-- /nonexistent/cmd over a file: exit {p.returncode}')
    kept = open(out).read() if os.path.exists(out) else None
    expect(kept == 'an earlier profile\n', fails,
           f'the earlier {os.path.basename(out)} was not restored (now {kept!r})')
    expect(not os.path.exists(out + '.old'), fails, f'{os.path.basename(out)}.old left behind')
    os.unlink(out)

    # without privileges: the BPF load is refused, and the message says what is needed
    # nobody's own directory: a build-ID cache in one anybody can write is refused
    outdir = tempfile.mkdtemp(prefix='sfprof-nobody-')
    os.chown(outdir, 65534, 65534)
    nobody_out = os.path.join(outdir, 'nobody.data')
    cmd = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', ctx.sfprof, 'record',
           '-a', '-d', '1', '-o', nobody_out]
    log('$ ' + quote(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors='replace')
    expect(p.returncode == 1, fails, f'record as nobody: exit {p.returncode}, want 1')
    expect('CAP_BPF and CAP_PERFMON' in p.stderr, fails,
           f'record as nobody: no privilege message in {p.stderr!r}')
    expect(not os.path.exists(nobody_out), fails, 'record as nobody: an output file was left')

    # CAP_BPF and CAP_PERFMON alone, a root-owned target: what cannot be read of it
    # (its mapped files through /proc/PID/root, its namespaces) is said once, with why
    spin = subprocess.Popen(['sh', '-c', 'while :; do :; done'])
    try:
        cmd = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups',
               '--inh-caps=+bpf,+perfmon', '--ambient-caps=+bpf,+perfmon',
               'env', f'HOME={outdir}', ctx.sfprof, 'record', '-p', str(spin.pid), '-d', '1',
               '-o', nobody_out]
        log('$ ' + quote(cmd))
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           errors='replace', timeout=60)
    finally:
        spin.kill()
        spin.wait()
    if p.returncode != 0 and 'CAP_BPF' in p.stderr:
        log('capabilities without root cannot load BPF on this kernel: that check is skipped')
    else:
        log(p.stderr.rstrip())
        said = [l for l in p.stderr.splitlines()
                if l.startswith(f'sfprof record: process {spin.pid} (')]
        files = [l for l in said if 'mapped files cannot be opened' in l]
        expect(p.returncode == 0, fails, f'record -p with capabilities: exit {p.returncode}')
        expect(len(files) == 1 and 'Permission denied' in files[0] and
               'frame pointers alone' in files[0], fails,
               f'unopened files not said once with the reason: {said!r}')
        expect(sum('/ns: Permission denied' in l for l in said) == 1, fails,
               f'unreadable namespaces not said once with the reason: {said!r}')
    shutil.rmtree(outdir, ignore_errors=True)

    usage = [([], 'say what to record'), (['-F', '0', '-a'], '-F'),
             (['-a', '-p', '1'], '-p goes without -a'), (['-p', 'abc'], 'not a process id'),
             (['--stack-size', '100', '-a'], '--stack-size'), (['--bogus'], 'usage')]
    for args, msg in usage:
        p = ctx.record(args, out)
        expect(p.returncode == 2, fails, f'record {quote(args)}: exit {p.returncode}, want 2')
        expect(msg in p.stderr, fails, f'record {quote(args)}: no {msg!r} in the message')
        gone(f'record {quote(args)}')
    raise_fails(fails)


def exe_of(pid):
    try:
        return os.readlink(f'/proc/{pid}/exe')
    except OSError:
        return None


def case_signals(ctx):
    fails = []
    spinner = ctx.compile('shortlived.c', 'spinner')
    for sig in (signal.SIGINT, signal.SIGTERM):
        out = ctx.path(f'{sig.name}.data')
        # once it samples (the spinner, something to sample on an idle machine too): a
        # signal before that, while it starts on a busy machine, finds no handler yet
        rec = start_recording(ctx, ['-a'], out, spinner)
        log(f'kill -{sig.name} {rec.pid}')
        t0 = time.monotonic()
        stop_recording(rec, sig)
        log(f'stopped {time.monotonic() - t0:.2f} s after {sig.name}')
        prof = ctx.load(out)     # fails on any notice: truncated, damaged, stopped early
        expect(prof.summary[0] > 0, fails, f'{sig.name}: no samples in {out}')
        expect(prof.summary[0] == len(prof.samples), fails, f'{sig.name}: summary disagrees')
        expect(os.stat(out).st_mode & 0o777 == 0o600, fails, f'{sig.name}: mode not 0600')

    # with a command, the command is stopped too
    out = ctx.path('command.data')
    cmd = [ctx.sfprof, 'record', '-o', out, '--', 'sleep', '60']
    log('$ ' + quote(cmd) + ' &; kill -INT $! once it runs sleep')
    rec = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           errors='replace')
    # its child execs the command once recording runs: polled, however long that takes
    sleep = os.path.realpath(shutil.which('sleep'))
    deadline = time.monotonic() + 30
    while True:
        children = subprocess.run(['pgrep', '-P', str(rec.pid)], stdout=subprocess.PIPE,
                                  text=True).stdout.split()
        if any(exe_of(c) == sleep for c in children) or rec.poll() is not None or \
                time.monotonic() > deadline:
            break
        time.sleep(0.05)
    log(f'sfprof record\'s children: {children}, running {[exe_of(c) for c in children]}')
    stop_recording(rec, signal.SIGINT)
    expect(len(children) == 1, fails, f'sfprof record -- sleep had children {children}')
    for c in children:
        expect(not os.path.exists(f'/proc/{c}'), fails, f'the command (pid {c}) still runs')
    ctx.load(out)
    raise_fails(fails)


SUMMARY = re.compile(r'^sfprof record: ([\d.]+) s, (\d+) samples \((\d+) lost\), (\d+) with a user '
                     r'stack, ([\d.]+)% of them complete; .* (\d+) bytes in (.*) \(', re.M)


def summary_of(p, what):
    m = SUMMARY.search(p.stderr)
    if not m:
        raise Failure(f'{what}: no summary line in {p.stderr!r}')
    return {'secs': float(m.group(1)), 'samples': int(m.group(2)), 'lost': int(m.group(3)),
            'complete': float(m.group(5)), 'bytes': int(m.group(6))}


def case_pressure(ctx):
    fails = []
    prog = ctx.compile('deepframes.c', 'deepframes')
    out = ctx.path('pressure.data')

    # per-thread copy sizes: the deep thread gets what it needs
    p = ctx.record(['-F', '999', '--', prog, '3'], out)
    expect(p.returncode == 0, fails, f'record deepframes: exit {p.returncode}: {p.stderr[-400:]}')
    s = summary_of(p, 'record deepframes')
    log(f'default copy sizes: {s["complete"]}% complete')
    m = re.search(r'(\d+) per-thread copy sizes set', p.stderr)
    expect(m and int(m.group(1)) >= 1, fails, 'default: no per-thread copy size was set')
    expect(s['complete'] >= 99.0, fails,
           f'default copy sizes: {s["complete"]}% of the user stacks complete, want >= 99%')
    neg = []
    expect(s['complete'] >= 100.5, neg, 'a share of complete stacks above 100%')
    must_fail(neg, 'a share of complete stacks above 100%')
    # the summary is the file's
    prof = ctx.load(out)
    expect(s['samples'] == len(prof.samples), fails,
           f'summary says {s["samples"]} samples, the file has {len(prof.samples)}')
    expect(s['lost'] == prof.lost, fails, f'summary says {s["lost"]} lost, the file {prof.lost}')
    expect(s['bytes'] == os.path.getsize(out), fails,
           f'summary says {s["bytes"]} bytes, the file has {os.path.getsize(out)}')

    p = ctx.record(['-F', '999', '--stack-size', '8192', '--', prog, '2'], out)
    s8 = summary_of(p, 'record --stack-size 8192')
    m = re.search(r'(\d+) stacks cut by the copy\'s end', p.stderr)
    log(f'--stack-size 8192: {s8["complete"]}% complete, {m.group(1) if m else "?"} cut')
    expect(s8['complete'] < 50, fails, f'--stack-size 8192: {s8["complete"]}% complete, '
           'want most cut (40 KiB deep)')
    expect(m and int(m.group(1)) > s8['samples'] // 4, fails,
           '--stack-size 8192: the summary does not count the cut stacks')

    # --duration is the sampling's length, under load
    busy = subprocess.Popen([prog, '8'])
    try:
        t0 = time.monotonic()
        p = ctx.record(['-a', '-F', '4999', '--duration', '1.5'], out, timeout=30)
        wall = time.monotonic() - t0
    finally:
        busy.kill()
        busy.wait()
    s = summary_of(p, 'record --duration 1.5')
    log(f'--duration 1.5: summary {s["secs"]} s, wall {wall:.2f} s')
    expect(abs(s['secs'] - 1.5) < 0.051, fails, f'--duration 1.5: sampled {s["secs"]} s')
    expect(wall < 1.5 + 5, fails, f'--duration 1.5: sfprof ran {wall:.2f} s')

    # a full disk stops the recording at once; what was written stays readable
    mnt = ctx.path('mnt')
    os.makedirs(mnt, exist_ok=True)
    copy = ctx.path('full.data')
    if os.path.exists(copy):
        os.unlink(copy)
    # room for the first blocks (every process of the system) and a few seconds of samples
    script = ('mount -t tmpfs -o size=262144 sfprof-test "$1" || exit 99; '
              '"$2" record -a -F 4999 --duration 40 -o "$1/o.data"; echo "rc=$?" >&2; '
              'cp "$1/o.data" "$3"')
    busy = subprocess.Popen([prog, '45'])
    try:
        t0 = time.monotonic()
        p = subprocess.run(['unshare', '-m', '--propagation', 'private', 'sh', '-c', script, 'sh',
                            mnt, ctx.sfprof, copy], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, errors='replace', timeout=60)
        wall = time.monotonic() - t0
    finally:
        busy.kill()
        busy.wait()
    if 'rc=' not in p.stderr:
        log(f'a full disk: not checked, no tmpfs in a mount namespace here: {p.stderr[-300:]}')
    else:
        log(f'a full disk: stopped after {wall:.1f} s: {p.stderr.strip()[-300:]}')
        expect('rc=1' in p.stderr, fails, 'full disk: want exit 1')
        expect('No space left on device' in p.stderr and 'recording stopped' in p.stderr, fails,
               'full disk: no "No space left on device ... recording stopped" message')
        expect(wall < 30, fails, f'full disk: recording went on for {wall:.1f} s of 40')
        prof = profile_oracle.load_profile(ctx.sfprof, copy)
        expect(len(prof.samples) > 0, fails, 'full disk: no samples readable in what was written')
    raise_fails(fails)


def case_thread_names(ctx):
    """Each sample has the name its thread had then (tests/progs/thread_names.c:
    first-K in first_phase, second-K after its rename), though the sampler reads a
    thread's name only until the loader has sized its copy (SAMPLE_F_NO_COMM)."""
    fails = []
    threads, ms = 3, 300 * ctx.scale
    prog = ctx.compile('thread_names.c', 'thread_names')
    out = ctx.path('names.data')
    p = ctx.record(['-F', '999', '--', prog, str(threads), str(ms)], out)
    if p.returncode:
        raise Failure(f'record thread_names: exit {p.returncode}: {p.stderr[-400:]}')
    s = summary_of(p, 'record thread_names')
    m = re.search(r'(\d+) samples \(([\d.]+)%\) of threads named before', p.stderr)
    if not m:
        raise Failure(f'record thread_names: no count of samples named before: {p.stderr!r}')
    log(f'{m.group(1)} of {s["samples"]} samples ({m.group(2)}%) of threads named before')
    prof = ctx.load(out)
    seen = {}       # tid -> {phase: Counter of comms}
    for smp in prof.samples:
        if not smp.ustack or not smp.process or smp.process.exe != prog:
            continue
        phase = next((n for n in names(ctx.syms.user_frames(smp))
                      if n in ('first_phase', 'second_phase')), None)
        if phase:
            seen.setdefault(smp.tid, {}).setdefault(phase, Counter())[smp.comm] += 1

    def check(want_first, want_second):
        out = []
        ks = set()
        expect(len(seen) == threads, out, f'samples of {len(seen)} threads in the phases, '
               f'want {threads}')
        for tid, phases in sorted(seen.items()):
            first = phases.get('first_phase', Counter())
            second = phases.get('second_phase', Counter())
            log(f'thread {tid}: first_phase {dict(first)}, second_phase {dict(second)}')
            if sum(first.values()) < 50 or sum(second.values()) < 50:
                out.append(TooFewMsg(f'thread {tid}: {sum(first.values())} and '
                                     f'{sum(second.values())} samples in the phases, need 50'))
                continue
            k = next(iter(first)).rpartition('-')[2]
            ks.add(k)
            expect(set(first) == {want_first + k}, out,
                   f'thread {tid}: first_phase samples named {dict(first)}, want {want_first + k}')
            expect(set(second) == {want_second + k}, out,
                   f'thread {tid}: second_phase samples named {dict(second)}, '
                   f'want {want_second + k}')
        expect(len(ks) == len(seen), out, f'threads share a name: {sorted(ks)}')
        return out

    fails += check('first-', 'second-')
    must_fail(check('second-', 'first-'), 'the names of the two phases swapped')
    # the case this is about: most samples' threads were sized, so named before
    expect(float(m.group(2)) >= 50.0, fails, f'only {m.group(2)}% of the samples were of '
           'threads named before: the sampler read the name of most')
    raise_fails(fails)


EBADF_CLOSE = re.compile(r'^\d+\s+close\((\d+)\)\s+= -1 EBADF', re.M)


def double_closes(cmd, trace, **kw):
    """The fds @cmd (run under strace -f) closed when they were not open: a second
    close of one fd, which in a threaded program can close another thread's file."""
    # LeakSanitizer cannot run under ptrace: an ASan build's leak check is left off here
    asan = os.environ.get('ASAN_OPTIONS', '')
    env = dict(os.environ, ASAN_OPTIONS=(asan + ':' if asan else '') + 'detect_leaks=0')
    p = run(['strace', '-f', '-qq', '-e', 'trace=close', '-e', 'status=failed', '-o', trace,
             *cmd], check=False, env=env, **kw)
    with open(trace) as f:
        return p, [int(m.group(1)) for m in EBADF_CLOSE.finditer(f.read())]


def case_fds(ctx):
    """sfprof record closes no fd twice: the perf events' fds belong to their links
    once attached (libbpf closes them), and the build-ID keeper opens files on its
    own thread while the sampler detaches."""
    if not shutil.which('strace'):
        log('SKIP: strace not found (scripts/setup installs it)')
        sys.exit(SKIP)
    fails = []
    prog = ctx.compile('thread_names.c', 'thread_names')
    for what, extra in (('cpu-clock', []), ('two events and off-CPU',
                                            ['-e', 'cpu-clock,page-faults', '--off-cpu'])):
        out = ctx.path('fds.data')
        p, bad = double_closes([ctx.sfprof, 'record', '-F', '999', *extra, '-o', out, '--', prog,
                                '2', str(100 * ctx.scale)], ctx.path('close.trace'))
        expect(p.returncode == 0, fails, f'{what}: record exited with {p.returncode}: '
               f'{p.stderr[-300:]}')
        log(f'{what}: {len(bad)} closes of fds not open')
        expect(not bad, fails, f'{what}: record closed fds {bad} when they were not open')
    # the check sees a second close
    _, bad = double_closes([sys.executable, '-c', 'import os\nfd = os.open("/", os.O_RDONLY)\n'
                            'os.close(fd)\ntry:\n    os.close(fd)\nexcept OSError:\n    pass\n'],
                           ctx.path('neg.trace'))
    must_fail([] if not bad else ['seen'], 'a program that closes one fd twice')
    raise_fails(fails)


CASES = {
    'chains': case_chains, 'all-pid': case_all_pid, 'shortlived': case_shortlived,
    'syscalls': case_syscalls, 'errors': case_errors, 'signals': case_signals,
    'pressure': case_pressure, 'thread-names': case_thread_names, 'fds': case_fds,
}


def case_main(doc, cases, errors=()):
    """The command line every recording test driver shares: run --case NAME of
    @cases with a fresh work directory. Exit status 0 pass, 1 fail, 77 skip."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--progs', required=True, help='tests/progs')
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', required=True, choices=sorted(cases))
    args = ap.parse_args()
    sys.stdout.reconfigure(errors='backslashreplace')
    check_preconditions()
    ctx = Ctx(args)
    shutil.rmtree(ctx.work, ignore_errors=True)
    os.makedirs(ctx.work)
    t0 = time.monotonic()
    try:
        # a case that counts samples of a fixed-length workload runs until it has enough:
        # its workload twice and four times as long on a machine too busy to give them
        for attempt in range(RUNS):
            try:
                cases[args.case](ctx)
                break
            except TooFew as e:
                if attempt == RUNS - 1:
                    raise TooFew(f'{e}, with the workload {ctx.scale}x as long in the last of '
                                 f'{RUNS} runs (the bound)') from e
                ctx.scale *= 2
                log(f'too few samples ({e}): again with the workload {ctx.scale}x as long')
                shutil.rmtree(ctx.work, ignore_errors=True)
                os.makedirs(ctx.work)
    except (Failure, profile_oracle.OracleError, subprocess.TimeoutExpired) + tuple(errors) as e:
        log(f'FAIL: {e}')
        return 1
    log(f'PASS ({time.monotonic() - t0:.1f} s)')
    return 0


def main():
    return case_main(__doc__, CASES)


if __name__ == '__main__':
    sys.exit(main())
