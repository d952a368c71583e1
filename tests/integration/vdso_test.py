#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""vDSO frames named (issue 28): sfprof record of tests/progs/vdso_loop.c, a loop of
clock_gettime(CLOCK_MONOTONIC) that the vDSO answers, against an oracle of the image.

The oracle: the [vdso] mapping of a child process read independently (/proc/PID/maps,
/proc/PID/mem) into a file, its function symbols from `readelf -sW --dyn-syms`. Each
[vdso] frame sfprof script shows must carry the name of the symbol covering its address
(pc - 1 for a return address), the alias perf's choose_best_symbol() keeps (not weak,
then fewest leading underscores, then longest: __vdso_clock_gettime, not the weak
clock_gettime). Checked:

  - of the samples in the loop (a stack through vdso_loop()), at least MIN_VDSO_SHARE
    have a [vdso] frame, and every [vdso] frame is named as the oracle names it;
  - no frame of those samples is unnamed ([anon], [unknown]): stacks reach main;
  - the image is kept in the build-ID cache under the oracle's build ID, and report,
    export (collapsed, pprof, svg) name the frames from that copy, the only one
    (XDG_CACHE_HOME is the test's); with an empty cache they stay unnamed, and an
    archive (sfprof archive) carries the image.

Exit status 0 pass, 1 fail, 77 skip (not root, no BTF).
"""
import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys
import time

SKIP = 77
RUNS = 3                # too few samples: again with the workload 2x, then 4x
MIN_LOOP_SAMPLES = 300  # at 999 Hz for 2 s: about 2,000 expected
# the loop's own instructions and libc's wrapper take the rest (4% measured)
MIN_VDSO_SHARE = 0.90
VDSO_DSO = '[vdso]'


class Failure(Exception):
    pass


class TooFew(Failure):
    pass


def log(msg=''):
    print(msg, flush=True)


def run(cmd, check=True, env=None, timeout=120):
    log('$ ' + ' '.join(str(c) for c in cmd))
    p = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env, timeout=timeout)
    err = p.stderr.decode(errors='replace')
    if err.strip():
        log(err.rstrip('\n')[-3000:])
    if check and p.returncode:
        raise Failure(f'{os.path.basename(str(cmd[0]))} exited with {p.returncode}')
    return p


def dump_vdso(work):
    """The [vdso] image of a fresh 64-bit child, read from its memory; its path."""
    child = subprocess.Popen(['sleep', '30'])
    try:
        # until its exec is through: the image before it may not be the program's yet
        for _ in range(200):
            with open(f'/proc/{child.pid}/maps') as f:
                spans = [ln.split()[0] for ln in f if ln.rstrip().endswith('[vdso]')]
            if spans:
                break
            time.sleep(0.01)
        if len(spans) != 1:
            raise Failure(f'the child maps {len(spans)} [vdso] mappings')
        lo, hi = (int(x, 16) for x in spans[0].split('-'))
        with open(f'/proc/{child.pid}/mem', 'rb') as f:
            f.seek(lo)
            image = f.read(hi - lo)
    finally:
        child.kill()
        child.wait()
    path = os.path.join(work, 'vdso-oracle.so')
    with open(path, 'wb') as f:
        f.write(image)
    return path


def oracle_symbols(path):
    """[(start, end, name)] of the image's function symbols, one name per address as perf
    keeps it; and its build ID (hex)."""
    out = subprocess.run(['readelf', '-sW', '--dyn-syms', path], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    by_addr = {}
    for ln in out.splitlines():
        f = ln.split()
        if len(f) < 8 or f[3] != 'FUNC' or f[6] == 'UND':
            continue
        value, size, bind, name = int(f[1], 16), int(f[2], 0), f[4], f[7].split('@')[0]
        by_addr.setdefault((value, size), []).append((bind, name))
    syms = []
    for (value, size), cands in by_addr.items():
        # choose_best_symbol(): not weak, then fewest leading underscores, then longest
        best = min(cands, key=lambda c: (c[0] == 'WEAK', len(c[1]) - len(c[1].lstrip('_')),
                                         -len(c[1])))
        syms.append((value, value + max(size, 1), best[1]))
    notes = subprocess.run(['readelf', '-n', path], stdout=subprocess.PIPE, text=True).stdout
    m = re.search(r'Build ID: ([0-9a-f]+)', notes)
    if not m:
        raise Failure('the vDSO image has no GNU build-ID note')
    return sorted(syms), m.group(1)


def oracle_name(syms, addr):
    for lo, hi, name in syms:
        if lo <= addr < hi:
            return name
    return None


FRAME = re.compile(r'^\s+([0-9a-f]+) (.*) \((.*)\)$')


def script_samples(text):
    """[(comm, [(addr, symbol, dso)])] of sfprof script's output."""
    samples, cur = [], None
    for ln in text.splitlines():
        if not ln.strip():
            cur = None
            continue
        if not ln[0].isspace():
            cur = (ln.split()[0], [])
            samples.append(cur)
            continue
        m = FRAME.match(ln)
        if m and cur is not None:
            cur[1].append((int(m.group(1), 16), m.group(2), m.group(3)))
    return samples


def base_name(sym):
    return re.sub(r'\+0x[0-9a-f]+$', '', sym)


def check_script(text, prog, syms):
    fails = []
    loop = [fr for comm, fr in script_samples(text)
            if any(base_name(s) == 'vdso_loop' and d == prog for _, s, d in fr)]
    with_vdso = named = 0
    mismatched, unnamed = [], []
    for frames in loop:
        has = False
        # the kernel's frames come first; the first user frame is the pc, the others
        # return addresses
        user = [f for f in frames if f[2] != '[kernel.kallsyms]']
        for k, (addr, sym, dso) in enumerate(user):
            if dso in ('[anon]', '[unknown]') or sym.startswith('[') or \
               re.fullmatch(r'0x[0-9a-f]+|\[?unknown\]?', sym):
                unnamed.append((addr, sym, dso))
            if dso != VDSO_DSO:
                continue
            has = True
            want = oracle_name(syms, addr if k == 0 else addr - 1)
            if base_name(sym) == want:
                named += 1
            else:
                mismatched.append((addr, sym, want))
        with_vdso += has
    log(f'{len(loop)} samples in the loop, {with_vdso} with a [vdso] frame, {named} [vdso] '
        f'frames named as the oracle names them, {len(mismatched)} otherwise, '
        f'{len(unnamed)} unnamed frames')
    if len(loop) < MIN_LOOP_SAMPLES:
        raise TooFew(f'only {len(loop)} samples in vdso_loop(), need {MIN_LOOP_SAMPLES}')
    if with_vdso < MIN_VDSO_SHARE * len(loop):
        fails.append(f'only {with_vdso} of {len(loop)} samples in the loop have a [vdso] '
                     f'frame (need {MIN_VDSO_SHARE:.0%})')
    if mismatched:
        fails.append(f'{len(mismatched)} [vdso] frames misnamed, e.g. ' + ', '.join(
            f'{a:#x} {s!r} (oracle: {w!r})' for a, s, w in mismatched[:5]))
    if unnamed:
        fails.append(f'{len(unnamed)} frames of the loop unnamed, e.g. {unnamed[:5]}')
    return fails


def check_exports(sfprof, data, env, work):
    fails = []
    for fmt in ('collapsed', 'pprof', 'svg'):
        out = os.path.join(work, f'out.{fmt}')
        run([sfprof, 'export', '-i', data, '-f', fmt, '-o', out], env=env)
        with open(out, 'rb') as f:
            body = f.read()
        if body[:2] == b'\x1f\x8b':
            body = gzip.decompress(body)
        if b'__vdso_clock_gettime' not in body:
            fails.append(f'export -f {fmt}: no __vdso_clock_gettime')
        if fmt == 'collapsed' and not re.search(rb';__vdso_clock_gettime \d+\n', body):
            fails.append('export -f collapsed: no stack ending in __vdso_clock_gettime')
    return fails


def case(sfprof, progs, work, scale):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    prog = os.path.join(work, 'vdso_loop')
    run(['gcc', '-O2', '-g', '-Wall', '-Wextra', '-o', prog, os.path.join(progs, 'vdso_loop.c')])
    syms, build_id = oracle_symbols(dump_vdso(work))
    log(f'oracle: [vdso] build ID {build_id}, {len(syms)} functions')
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, 'cache'), HOME=work)
    data = os.path.join(work, 'vdso.data')
    t0 = time.monotonic()
    run([sfprof, 'record', '-o', data, '--', prog, str(2 * scale)], env=env, timeout=60 * scale)
    log(f'recorded in {time.monotonic() - t0:.1f} s')

    script = run([sfprof, 'script', '-i', data], env=env).stdout.decode(errors='replace')
    fails = check_script(script, prog, syms)

    kept = os.path.join(work, 'cache', 'sfprof')
    found = [os.path.join(d, f) for d, _, fs in os.walk(kept) for f in fs]
    if not any(build_id in p.replace('/', '') for p in found):
        fails.append(f'no entry of build ID {build_id} in the build-ID cache {kept}')

    report = run([sfprof, 'report', '-i', data], env=env).stdout.decode(errors='replace')
    top = [ln for ln in report.splitlines() if '%' in ln and not ln.startswith('#')][:1]
    if not top or VDSO_DSO not in top[0] or '__vdso_clock_gettime' not in top[0]:
        fails.append(f'report: the top line is not [vdso] __vdso_clock_gettime: {top}')
    fails += check_exports(sfprof, data, env, work)

    # the cache's copy is the only one: without it the frames are not named
    bare = dict(env, XDG_CACHE_HOME=os.path.join(work, 'empty-cache'))
    os.makedirs(bare['XDG_CACHE_HOME'])
    report = run([sfprof, 'report', '-i', data], env=bare).stdout.decode(errors='replace')
    if '__vdso_clock_gettime' in report:
        fails.append('report names the vDSO without the build-ID cache: from where?')

    # an archive carries the image elsewhere: named from it with the cache empty
    archive = os.path.join(work, 'vdso.tar')
    run([sfprof, 'archive', '-i', data, '-o', archive], env=env)
    report = run([sfprof, 'report', '-i', archive], env=bare).stdout.decode(errors='replace')
    if '__vdso_clock_gettime' not in report:
        fails.append('report of the archive, the cache empty: no __vdso_clock_gettime')
    return fails


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--progs', required=True, help='tests/progs')
    ap.add_argument('--workdir', required=True)
    args = ap.parse_args()
    if os.geteuid() != 0:
        log('SKIP: sfprof record needs root (CAP_BPF and CAP_PERFMON)')
        return SKIP
    if not os.access('/sys/kernel/btf/vmlinux', os.R_OK):
        log('SKIP: this kernel has no BTF')
        return SKIP
    for tool in ('gcc', 'readelf'):
        if not shutil.which(tool):
            log(f'SKIP: {tool} not found')
            return SKIP
    sfprof, progs = os.path.abspath(args.sfprof), os.path.abspath(args.progs)
    work = os.path.abspath(args.workdir)
    scale = 1
    for attempt in range(RUNS):
        try:
            fails = case(sfprof, progs, work, scale)
        except TooFew as e:
            if attempt == RUNS - 1:
                log(f'FAIL: {e}, with the workload {scale}x as long')
                return 1
            scale *= 2
            log(f'too few samples ({e}): again with the workload {scale}x as long')
            continue
        except Failure as e:
            fails = [str(e)]
        break
    for f in fails:
        log(f'FAIL: {f}')
    if not fails:
        log('PASS')
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
