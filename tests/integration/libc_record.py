#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`sfprof record` of programs whose time goes through libc, unwound with rows from .eh_frame.

Issue #6's profiler view of tests/progs/libc_paths.c (compiled here with
-O2 -fomit-frame-pointer -Wa,--gsframe; Debian's libc has neither .sframe
nor frame pointers): `sfprof record -- libc_paths - MODE run 3` for 3
seconds (again for 6 and 12 if a hot spot had too few samples: a busy
machine; record_test.case_main), the profile read back through `sfprof
dump` by profile_oracle.py (readelf and nm), and in each mode's hot spot at
least 99% of the samples must reach main through the expected frames:

  qsort   frame 0 in cmp_ints, the comparator: the program's frames are
          exactly cmp_ints sort_many work main, with libc's merge sort
          (at least one frame) between cmp_ints and sort_many
  memcpy  frame 0 in libc's memcpy or memmove (unnamed libc code: the
          implementations behind the IFUNCs are local symbols): the
          program's frames are exactly copy_many work main
  signal  frame 0 in busy_in_handler: the program's frames are exactly
          busy_in_handler on_usr1 signal_loop work main, with libc's
          __restore_rt, pthread_kill and raise between on_usr1 and
          signal_loop (the kernel's signal frame is read by the unwinder)

and in every case the stack is complete (the unwinder reached _start's
undefined return address), with the frame after main in libc. The same
checks with one frame of the chain renamed must fail.

Exit status 0 pass, 1 fail, 77 skip (not root, no BTF, no gas --gsframe).
"""
import functools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_oracle  # noqa: E402
import record_test  # noqa: E402
from record_test import Failure, log  # noqa: E402

MIN_PERCENT = 99.0
MIN_SAMPLES = 100

# mode: (what frame 0 must be, the program's frames, where libc frames must sit)
CASES = {
    'qsort': ('cmp_ints', ['cmp_ints', 'sort_many', 'work', 'main'], 'cmp_ints'),
    'memcpy': (None, ['copy_many', 'work', 'main'], None),
    'signal': ('busy_in_handler', ['busy_in_handler', 'on_usr1', 'signal_loop', 'work', 'main'],
               'on_usr1'),
}


def is_libc(path):
    return bool(path) and os.path.basename(path).startswith('libc.so')


def check(ctx, samples, prog, mode, chain, quiet=False):
    """Failures of the >= 99% rule for @mode, with @chain as the program's frames."""
    leaf, _, libc_after = CASES[mode]
    n, good, wrong = 0, 0, {}
    for s in samples:
        frames = ctx.syms.user_frames(s)
        if not frames:
            continue
        f0 = frames[0]
        if leaf is None:
            # the implementations behind the memcpy and memmove IFUNCs are local
            # symbols, which stripped libcs do not name; clock_gettime in main's
            # loop is named, and not the hot spot
            if not is_libc(f0.module) or f0.symbol not in (None, 'memcpy', 'memmove'):
                continue
        elif f0.module != prog or f0.symbol != leaf:
            continue
        n += 1
        in_prog = [i for i, f in enumerate(frames) if f.module == prog]
        names = [frames[i].symbol for i in in_prog]
        ok = s.ustack.ending == 'end' and 'main' in names
        if ok:
            # the C runtime's _start comes after main: not part of the chain
            cut = names.index('main') + 1
            ok = names[:cut] == chain
            main_at = in_prog[cut - 1]
            ok = ok and main_at + 1 < len(frames) and is_libc(frames[main_at + 1].module)
            if ok and libc_after:
                i = in_prog[names.index(libc_after)]
                ok = i + 1 < len(frames) and is_libc(frames[i + 1].module)
        if ok:
            good += 1
        else:
            key = (' '.join(profile_oracle.frame_name(f) for f in frames), s.ustack.ending)
            wrong[key] = wrong.get(key, 0) + 1
    pct = 100.0 * good / n if n else 0.0
    if not quiet:
        log(f'{mode}: {good} of {n} samples ({pct:.2f}%) reach main through '
            f'{" ".join(chain)}')
        for (stack, ending), count in sorted(wrong.items(), key=lambda kv: -kv[1])[:3]:
            log(f'    {count} x {stack} [{ending}]')
    if n < MIN_SAMPLES:
        return [record_test.TooFewMsg(f'{mode}: only {n} samples in the hot spot, need '
                                      f'{MIN_SAMPLES}')]
    if pct < MIN_PERCENT:
        return [f'{mode}: {pct:.2f}% reach main through the expected frames, '
                f'need {MIN_PERCENT}%']
    return []


def run_case(ctx, mode):
    prog = ctx.compile('libc_paths.c', 'libc_paths',
                       libs=[os.path.join(ctx.progs, 'snapshot.c')])
    out = ctx.path(f'{mode}.data')
    # about 3 s, longer when a run had too few samples (record_test.case_main)
    p = ctx.record(['--', prog, '-', mode, 'run', ctx.secs(3)], out, timeout=60 * ctx.scale)
    if p.returncode != 0:
        raise Failure(f'sfprof record exited with {p.returncode}')
    prof = ctx.load(out)
    samples = [s for s in prof.samples if s.process and s.process.exe == prog]
    chain = CASES[mode][1]
    record_test.raise_fails(check(ctx, samples, prog, mode, chain))
    bad = list(chain)
    bad[len(bad) // 2] = 'not_this_function'
    record_test.must_fail(check(ctx, samples, prog, mode, bad, quiet=True),
                          'a frame of the chain renamed')


def main():
    return record_test.case_main(__doc__, {mode: functools.partial(run_case, mode=mode)
                                           for mode in CASES})


if __name__ == '__main__':
    sys.exit(main())
