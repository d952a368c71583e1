#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Python frames in every sample (issue 29), recorded with the real BPF sampler.

tests/progs/py/chains.py runs phases whose Python chains are known by
construction, each spinning in `spin` for a fixed CPU time: recursion, two
threads with chains of their own, a generator, C functions calling back into
Python (sorted(key=...), functools.reduce), a finally block run while an
exception unwinds (the raising frame gone), and a recursion deeper than the
sampler's cap of 128 frames. It runs under each interpreter present:
Debian's /usr/bin/python3.11 (libpython in the executable) and pyenv's
3.10-3.13 (libpython shared).

For each, from `sfprof script` (each sample's frames; a Python frame is
`qualname (file.py:line)` in module file.py):
  - every phase has samples, and at least 95% of the samples whose Python
    chain holds a phase's leaf carry the phase's whole chain, in order,
    innermost first, nothing else (threads: their own two frames, then only
    threading.py's); the deep recursion is cut at exactly 128 frames and
    record's summary counts chains cut;
  - at least 95% of the samples whose native stack runs
    _PyEval_EvalFrameDefault carry Python frames, from the first that does on
    (before it, record had not handled the interpreter's mapping event: the
    discovery lag, printed);
  - the native part: record's share of complete user stacks is as high as
    with --no-python (a second recording of Debian's, or the first present).
tests/progs/py/embed.c (compiled here) loads pyenv's first libpython with
dlopen() 50 ms after it started and runs chains.py through runpy: the same
chains, then only runpy's frames.
tests/progs/py/hostile.py (under the same interpreter) makes its <module>
frame its own caller, then points a code object's name at garbage: the
looping chain is cut at exactly 128 frames (record counts each), the
garbage gives an unnamed frame, never a name.
A chain with a frame dropped or swapped must fail the check (doctored input).
Too few samples: the run is repeated at twice the CPU time (at most 3 runs).

Exit status 0 pass, 1 fail, 77 skip (not root, no BTF, no interpreter).
"""

import argparse
import glob
import os
import re
import subprocess
import sys

CAP = 128
DEPTH = 12       # chains.py's DEPTH
MIN_PER_PHASE = 15
SHARE = 0.95

FRAME_RE = re.compile(r'^\s+[0-9a-f]+ (?P<q>.+) \((?P<base>[^():]+):(?P<line>\d+)\)'
                      r'(?:\+0x0)? \((?P<file>[^()]*)\)$')
# a frame whose code object could not be read
UNNAMED_RE = re.compile(r'^\s+[0-9a-f]+ \? \(\?\)')
NATIVE_RE = re.compile(r'^\s+[0-9a-f]+ (?P<sym>\S+?)(?:\+0x[0-9a-f]+)? \(')
HEAD_RE = re.compile(r'^\S.* (?P<pid>\d+)/(?P<tid>\d+) ')


class Failure(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def interpreters():
    """{name: path} of the interpreters present."""
    found = {}
    if os.access('/usr/bin/python3.11', os.X_OK):
        found['debian-3.11'] = '/usr/bin/python3.11'
    roots = []
    try:
        roots.append(subprocess.run(['pyenv', 'root'], capture_output=True, text=True,
                                    timeout=10).stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        pass
    roots.append(os.path.expanduser('~/.pyenv'))
    for root in roots:
        for minor in (10, 11, 12, 13):
            for d in sorted(glob.glob(os.path.join(root, 'versions', f'3.{minor}.*'))):
                exe = os.path.join(d, 'bin', f'python3.{minor}')
                if os.access(exe, os.X_OK) and f'pyenv-3.{minor}' not in found:
                    found[f'pyenv-3.{minor}'] = exe
    return found


def parse_script(text):
    """[(tid, python frames [(qualname, file basename, line, path)], native symbols)] per sample."""
    samples, cur = [], None
    for line in text.splitlines():
        if not line.strip():
            cur = None
            continue
        if not line[0].isspace():
            m = HEAD_RE.match(line)
            cur = (int(m.group('tid')) if m else 0, [], [])
            samples.append(cur)
            continue
        if cur is None:
            continue
        m = FRAME_RE.match(line)
        if m and m.group('file').endswith('.py') or (m and m.group('file').startswith('<')):
            cur[1].append((m.group('q'), m.group('base'), int(m.group('line')), m.group('file')))
            continue
        if UNNAMED_RE.match(line):
            cur[1].append(('?', '?', 0, '?'))
            continue
        m = NATIVE_RE.match(line)
        if m:
            cur[2].append(m.group('sym'))
    return samples


def short(q):
    """3.10 names a method by co_name: compare the last part of a qualname."""
    return q.rsplit('.', 1)[-1]


def phases():
    """{leaf: (expected chain of qualnames from spin outwards, or None for threads)}."""
    rec = ['spin', 'py_rec_leaf'] + ['py_rec'] * DEPTH + ['py_recursion', '<module>']
    return {
        'py_rec_leaf': rec,
        'py_thread_leaf_0': ['spin', 'py_thread_leaf_0', 'py_thread_body_0'],
        'py_thread_leaf_1': ['spin', 'py_thread_leaf_1', 'py_thread_body_1'],
        'py_gen_leaf': ['spin', 'py_gen_leaf', 'py_gen', 'py_gen_consume', '<module>'],
        'py_key_leaf': ['spin', 'py_key_leaf', 'py_sort_caller', '<module>'],
        'py_reduce_leaf': ['spin', 'py_reduce_leaf', 'py_reduce_caller', '<module>'],
        'py_exc_finally_leaf': ['spin', 'py_exc_finally_leaf', 'py_exc_mid', 'py_exc_outer',
                                '<module>'],
        'py_deep_leaf': (['spin', 'py_deep_leaf'] + ['py_deep'] * (CAP - 2)),
    }


def chain_ok(leaf, want, frames, outer=()):
    """Whether @frames (innermost first) are @leaf's phase's whole chain, then only frames
    of the files @outer (what ran chains.py: runpy in an embedding program)."""
    names = [short(f[0]) for f in frames]
    if leaf.startswith('py_thread_leaf'):
        # the thread's own frames, then threading.py's bootstrap and nothing else
        return (names[:len(want)] == want and len(frames) > len(want) and
                all(f[1] == 'threading.py' for f in frames[len(want):]))
    if leaf == 'py_deep_leaf':
        return len(frames) == CAP and names == want
    own = frames[:len(want)]
    return (names[:len(want)] == want and all(f[1] == 'chains.py' for f in own) and
            all(f[1] in outer for f in frames[len(want):]))


def check_chains(name, samples, outer=()):
    """The phases' chains in @samples: @return {leaf: (ok, of)}; raises Failure."""
    want = phases()
    got = {leaf: [0, 0] for leaf in want}
    bad = {}
    for _, frames, _ in samples:
        names = [short(f[0]) for f in frames]
        for leaf in want:
            if leaf in names:
                got[leaf][1] += 1
                if chain_ok(leaf, want[leaf], frames, outer):
                    got[leaf][0] += 1
                else:
                    bad.setdefault(leaf, names)
                break
    for leaf, (ok, of) in got.items():
        if of < MIN_PER_PHASE:
            raise Failure(f'{name}: {of} samples in {leaf}, fewer than {MIN_PER_PHASE}')
        if ok < SHARE * of:
            raise Failure(f'{name}: {leaf}: {ok} of {of} samples carry the whole chain; '
                          f'one that does not: {bad.get(leaf)}')
    return got


def check_coverage(name, samples):
    """Samples running the interpreter's eval loop carry Python frames, from the first that
    does on: before it, the recorder had not handled the mapping event of the interpreter
    yet (its discovery lag, returned as a count of samples)."""
    first = next((i for i, s in enumerate(samples) if s[1]), None)
    if first is None:
        raise Failure(f'{name}: no sample carries Python frames')
    lag = sum(1 for s in samples[:first] if '_PyEval_EvalFrameDefault' in s[2])
    evals = [s for s in samples[first:] if '_PyEval_EvalFrameDefault' in s[2]]
    with_py = sum(1 for s in evals if s[1])
    if not evals or with_py < SHARE * len(evals):
        raise Failure(f'{name}: {with_py} of {len(evals)} samples in _PyEval_EvalFrameDefault '
                      f'carry Python frames')
    return with_py, len(evals), lag


OFFCPU_CHAIN = ['py_off_leaf', 'py_off_mid', 'py_off_top', '<module>']
OFFCPU_SLEEPS = 60
OFFCPU_MIN = 30


def offcpu_samples(text):
    """parse_script() of the off-CPU samples of `sfprof script`'s @text only."""
    blocks = [b for b in text.split('\n\n') if ' offcpu-time:' in b.split('\n', 1)[0]]
    return parse_script('\n\n'.join(blocks))


def check_offcpu(name, samples, chain=OFFCPU_CHAIN):
    """Off-CPU samples blocked in py_off_leaf's sleep carry @chain, innermost first, from
    offcpu.py and nothing after it, from the first that carries Python frames on (before
    it, record had not handled the interpreter's mapping yet): @return (ok, of, lag);
    raises Failure."""
    of = ok = 0
    bad = None
    first = next((i for i, s in enumerate(samples) if s[1]), len(samples))
    for _, frames, natives in samples[first:]:
        if 'time_sleep' not in natives and not any(f[0] == 'py_off_leaf' for f in frames):
            continue
        if any(f[0] == 'py_off_tail' for f in frames):
            continue
        of += 1
        names = [short(f[0]) for f in frames]
        if names == chain and all(f[1] == 'offcpu.py' for f in frames):
            ok += 1
        else:
            bad = bad or names
    if of < OFFCPU_MIN:
        raise Failure(f'{name}: {of} off-CPU samples in time.sleep under py_off_leaf once '
                      f'Python frames came, fewer than {OFFCPU_MIN}')
    if ok < SHARE * of:
        raise Failure(f'{name}: {ok} of {of} off-CPU samples carry the chain {chain}; one '
                      f'that does not: {bad}')
    return ok, of, first


def self_test():
    """The chain check must fail on a chain with a frame dropped or two swapped."""
    want = phases()
    full = [(q, 'chains.py', 1, '/x/chains.py') for q in want['py_gen_leaf']]
    samples = [(1, list(full), ['_PyEval_EvalFrameDefault'])] * 40
    for leaf, chain in want.items():
        if leaf == 'py_gen_leaf':
            continue
        if leaf.startswith('py_thread'):
            fr = [(q, 'chains.py', 1, '') for q in chain] + [('Thread.run', 'threading.py', 1, '')]
        else:
            fr = [(q, 'chains.py', 1, '') for q in chain]
        samples += [(2, fr, [])] * 20
    check_chains('self-test', samples)
    dropped = [(1, full[:2] + full[3:], [])] * 40
    swapped = [(1, [full[0], full[2], full[1]] + full[3:], [])] * 40
    for doctored in (dropped, swapped):
        try:
            check_chains('self-test', doctored + samples[40:])
        except Failure:
            continue
        raise Failure('the chain check passed doctored chains')
    off = [(q, 'offcpu.py', 1, '/x/offcpu.py') for q in OFFCPU_CHAIN]
    good = [(1, off, ['time_sleep'])] * OFFCPU_MIN
    check_offcpu('self-test', [(1, [], ['time_sleep'])] * 5 + good)
    for doctored in ([(1, off[1:], ['time_sleep'])] * OFFCPU_MIN,
                     [(1, [off[1], off[0]] + off[2:], ['time_sleep'])] * OFFCPU_MIN,
                     [(1, off + [('f', 'x.py', 1, '')], ['time_sleep'])] * OFFCPU_MIN,
                     good[:5] + [(1, [], ['time_sleep'])] * 2 + good[5:],
                     good[1:]):
        try:
            check_offcpu('self-test', doctored)
        except Failure:
            continue
        raise Failure('the off-CPU chain check passed doctored chains')


def check_hostile(name, samples, err):
    """tests/progs/py/hostile.py: a frame chain that loops is cut at the cap, a code object
    whose names point at garbage gives an unnamed frame, and record goes on."""
    cycle = [s for s in samples if any(f[0] == 'py_cycle_leaf' for f in s[1])]
    garbage = [s for s in samples if [f[0] for f in s[1][:1]] == ['spin'] and
               len(s[1]) == 3 and s[1][2][0] == '<module>']
    if len(cycle) < MIN_PER_PHASE or len(garbage) < MIN_PER_PHASE:
        raise Failure(f'{name}: hostile: {len(cycle)} samples in the loop, {len(garbage)} in the '
                      f'garbage names, fewer than {MIN_PER_PHASE}')
    want = ['spin', 'py_cycle_leaf'] + ['<module>'] * (CAP - 2)
    ok = sum(1 for s in cycle if [short(f[0]) for f in s[1]] == want)
    if ok < SHARE * len(cycle):
        raise Failure(f'{name}: hostile: {ok} of {len(cycle)} samples in the loop cut at {CAP} '
                      f'frames as {want[:3]}...')
    named = sum(1 for s in garbage if s[1][1][0] != '?')
    if named:
        raise Failure(f'{name}: hostile: {named} frames named from garbage names')
    _, cut = summary_figures(err)
    if cut < len(cycle):
        raise Failure(f'{name}: hostile: record counted {cut} chains cut, the file has '
                      f'{len(cycle)}')
    log(f'  {name} hostile: {ok}/{len(cycle)} looping chains cut at {CAP}, '
        f'{len(garbage)} frames of garbage names unnamed')


def check_embedded(name, samples, err):
    """tests/progs/py/embed.c: libpython loaded by dlopen() 50 ms after the program started,
    chains.py run through runpy: the same chains, then runpy's frames."""
    try:
        got = check_chains(name, samples, outer=('runpy.py', '<string>'))
    except Failure as e:
        raise Failure(f'{e}\n  record said: {python_line(err)}') from None
    if not re.search(r'Python: [1-9]\d* processes', err):
        raise Failure(f'{name}: record found no interpreter: {err.strip()}')
    log(f'  {name} (dlopen): ' + ', '.join(f'{leaf} {ok}/{of}' for leaf, (ok, of) in got.items()))


def build_embed(progs, work):
    """tests/progs/py/embed.c compiled: its path, or None without a C compiler."""
    exe = os.path.join(work, 'embed')
    for cc in ('cc', 'gcc', 'clang'):
        try:
            p = subprocess.run([cc, '-O1', '-o', exe, os.path.join(progs, 'py', 'embed.c'), '-ldl'],
                               capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if p.returncode == 0:
            return exe
    return None


def python_line(stderr):
    """record's summary of the interpreters it read (frames named, unreadable, gone)."""
    m = re.search(r'Python: [^\n]*', stderr)
    return m.group(0) if m else '(no Python summary)'


def summary_figures(stderr):
    m = re.search(r'with a user stack, ([0-9.]+)% of them complete', stderr)
    cut = re.search(r'(\d+) chains cut at \d+ frames', stderr)
    return (float(m.group(1)) if m else None, int(cut.group(1)) if cut else 0)


def start_record(sfprof, work, name, exe, workload, seconds, extra=(), seconds_arg=None, env=None):
    """`sfprof record` of @workload under @exe (with @seconds_arg after @seconds, a program
    taking the script as its own argument), started: (profile, Popen)."""
    out = os.path.join(work, name + ('-nopy' if '--no-python' in extra else '') + '.data')
    if os.path.exists(out):
        os.unlink(out)
    cmd = [sfprof, 'record', '-F', '1999', *extra, '-o', out, '--', exe, workload, str(seconds)]
    if seconds_arg is not None:
        cmd.append(str(seconds_arg))
    log('$ ' + ' '.join(cmd) + ' &')
    # chains.py lingers a second after its phases: a recording behind its process names the
    # code objects before they are freed (README, Missing: a recording that falls far behind)
    return out, subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True, errors='replace',
                                 env=dict(env or os.environ, CHAINS_LINGER='1'))


def finish_record(name, out, p):
    """Wait for a recording (bounded; killed past it): (profile, record's stderr)."""
    try:
        _, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise Failure(f'{name}: record did not finish in 120 s')
    if p.returncode != 0:
        raise Failure(f'{name}: record exited with {p.returncode}: {err.strip()[-2000:]}')
    return out, err


def record(sfprof, work, name, exe, workload, seconds, extra=()):
    return finish_record(name, *start_record(sfprof, work, name, exe, workload, seconds, extra))


def script(sfprof, data):
    p = subprocess.run([sfprof, 'script', '-i', data], capture_output=True, text=True,
                       errors='replace', timeout=120)
    if p.returncode != 0:
        raise Failure(f'script -i {data}: exit {p.returncode}: {p.stderr.strip()[-2000:]}')
    return p.stdout


def test_interpreter(sfprof, work, name, exe, workload, started, seconds):
    """Check @name's recording (@started: its profile and Popen, at @seconds per phase)."""
    data, err = finish_record(name, *started)
    for attempt in range(3):
        samples = parse_script(script(sfprof, data))
        try:
            got = check_chains(name, samples)
            break
        except Failure as e:
            if 'fewer than' not in str(e) or attempt == 2:
                raise Failure(f'{e}\n  record said: {python_line(err)}') from None
            log(f'  {e}: again at twice the CPU time')
            seconds *= 2
            data, err = record(sfprof, work, name, exe, workload, seconds)
    with_py, evals, lag = check_coverage(name, samples)
    complete, cut = summary_figures(err)
    if not cut:
        raise Failure(f'{name}: record counted no chain cut at {CAP} frames: {err.strip()}')
    log(f'  {name}: ' + ', '.join(f'{leaf} {ok}/{of}' for leaf, (ok, of) in got.items()) +
        f'; {with_py}/{evals} eval samples with Python frames ({lag} before the interpreter '
        f'was found); {complete}% complete; {cut} chains cut')
    return complete


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--progs', required=True)
    ap.add_argument('--workdir', required=True)
    args = ap.parse_args()

    self_test()
    if os.geteuid() != 0:
        print('SKIP: recording needs root (BPF)')
        return 77
    if not os.path.exists('/sys/kernel/btf/vmlinux'):
        print('SKIP: recording needs the kernel BTF (/sys/kernel/btf/vmlinux)')
        return 77
    found = interpreters()
    if not found:
        print('SKIP: no CPython 3.10-3.13 (/usr/bin/python3.11, pyenv versions 3.1X.*)')
        return 77
    os.makedirs(args.workdir, exist_ok=True)
    workload = os.path.join(args.progs, 'py', 'chains.py')
    seconds = 0.03
    base = 'debian-3.11' if 'debian-3.11' in found else next(iter(found))
    started, nopy_started, hostile_started, embed_started = {}, None, None, None
    offcpu_started = {}
    try:
        # all at once: each phase spins for CPU time, which the machine's load does not change
        for name, exe in found.items():
            started[name] = start_record(args.sfprof, args.workdir, name, exe, workload, seconds)
        nopy_started = start_record(args.sfprof, args.workdir, base, found[base], workload,
                                    seconds, extra=('--no-python',))
        embed_lib = next((exe for n, exe in found.items() if n.startswith('pyenv-')), None)
        embed = build_embed(args.progs, args.workdir) if embed_lib else None
        if embed:
            embed_lib = glob.glob(os.path.join(os.path.dirname(os.path.dirname(embed_lib)), 'lib',
                                               'libpython3.*.so.1.0'))[0]
            # 0.5 s of CPU before the phases: libpython is found when record handles the
            # dlopen's mapping event, which under ASan on a loaded machine came after the
            # first phase had run (0 of its samples with Python frames)
            embed_started = start_record(args.sfprof, args.workdir, 'embed', embed, embed_lib,
                                         workload, extra=(), seconds_arg=seconds,
                                         env=dict(os.environ, CHAINS_WARMUP_CPU='0.5'))
        else:
            log('  no pyenv libpython or no C compiler: the dlopen case is not run')
        hostile_started = start_record(args.sfprof, args.workdir, base + '-hostile', found[base],
                                       os.path.join(args.progs, 'py', 'hostile.py'), seconds)
        results = {}
        for name, exe in found.items():
            results[name] = test_interpreter(args.sfprof, args.workdir, name, exe, workload,
                                             started.pop(name), seconds)
        # after the others: their load delays record, and a frame is named from the
        # process's memory
        for name, exe in found.items():
            offcpu_started[name] = start_record(
                args.sfprof, args.workdir, name + '-offcpu', exe,
                os.path.join(args.progs, 'py', 'offcpu.py'), OFFCPU_SLEEPS,
                extra=('--off-cpu',))
        for name, exe in found.items():
            data, err = finish_record(name + ' --off-cpu', *offcpu_started.pop(name))
            sleeps = OFFCPU_SLEEPS
            for attempt in range(3):
                try:
                    ok, of, lag = check_offcpu(name, offcpu_samples(script(args.sfprof, data)))
                    break
                except Failure as e:
                    if 'fewer than' not in str(e) or attempt == 2:
                        py = re.search(r'Python: .*', err)
                        raise Failure(f'{e} (record: {py.group(0) if py else err[-500:]})')
                    sleeps *= 2
                    log(f'  {e}: again with {sleeps} sleeps')
                    data, err = record(args.sfprof, args.workdir, name + '-offcpu', exe,
                                     os.path.join(args.progs, 'py', 'offcpu.py'), sleeps,
                                     extra=('--off-cpu',))
            log(f'  {name}: {ok}/{of} off-CPU samples in time.sleep carry the Python chain '
                f'({lag} before the interpreter was found)')
        # the native part as complete as without Python frames
        _, err = finish_record(base + ' --no-python', *nopy_started)
        nopy, _ = summary_figures(err)
        with_py = results[base]
        log(f'  {base}: {with_py}% complete with Python frames, {nopy}% without')
        data, err = finish_record(base + ' hostile', *hostile_started)
        check_hostile(base, parse_script(script(args.sfprof, data)), err)
        if embed:
            data, err = finish_record('embed', *embed_started)
            check_embedded('embed ' + os.path.basename(embed_lib),
                           parse_script(script(args.sfprof, data)), err)
        if with_py is None or nopy is None or with_py < min(nopy, 99.0) - 0.5:
            raise Failure(f'{base}: {with_py}% of user stacks complete with Python frames, '
                          f'{nopy}% without')
    except (Failure, subprocess.TimeoutExpired) as e:
        print(f'FAIL: {e}')
        return 1
    finally:
        # every recording this test started is stopped by it
        for _, p in list(started.values()) + list(offcpu_started.values()) + [
                x for x in (nopy_started, hostile_started,
                                                          embed_started) if x]:
            if p.poll() is None:
                p.kill()
                p.communicate()
    print(f'PASS: {", ".join(found)}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
