#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Time GDB's `bt` of a 200-frame stack: the SFrame unwinder against GDB's own DWARF unwinder.

usage: bench/debugger/gdb_bt.py [--plugin build/debugger/sfunwind_gdb.py] [--frames 200] [--repeat 15]
                   [--no-args]

Compiles tests/debugger/progs/dbgchain.c (-O2 -fomit-frame-pointer, with
SFrame) twice into a temporary directory: with .eh_frame, and SFrame-only
(.eh_frame removed). Runs mode `deep N` to its raise(SIGTRAP) in gdb and
times `bt` inside gdb with Python's clock: the first `bt` of the stop
(cold), then the median of --repeat runs, each after
`maint flush register-cache` (which drops GDB's frame cache, so every frame
is unwound again). `walk` is the median time of the same unwinding without
printing: gdb.Frame.older() from the newest frame to main. Prints one line
per configuration:

  native/eh      gdb alone on the .eh_frame build (DWARF CFI)
  plugin/sframe  gdb with sfunwind_gdb.py on the SFrame-only build
  plugin/eh      gdb with sfunwind_gdb.py on the .eh_frame build (the plugin
                 is asked about every frame and leaves them all to GDB)

A benchmark, not a test: it prints figures and checks only that each bt
reached main.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

GDB_SCRIPT = r'''
import json, time, statistics, gdb
out = {}
gdb.execute('set pagination off')
gdb.execute('set confirm off')
for cmd in SETUP:
    gdb.execute(cmd)
gdb.execute('run', to_string=True)
t = time.perf_counter()
text = gdb.execute('bt', to_string=True)
out['cold'] = time.perf_counter() - t
out['frames'] = text.count('\n#') + 1
out['main'] = ' main (' in text
times = []
for _ in range(REPEAT):
    gdb.execute('maint flush register-cache', to_string=True)
    t = time.perf_counter()
    gdb.execute('bt', to_string=True)
    times.append(time.perf_counter() - t)
out['median'] = statistics.median(times)
out['min'] = min(times)
walks = []
for _ in range(REPEAT):
    gdb.execute('maint flush register-cache', to_string=True)
    t = time.perf_counter()
    f = gdb.newest_frame()
    while f is not None:
        f = f.older()
    walks.append(time.perf_counter() - t)
out['walk'] = statistics.median(walks)
gdb.execute('kill', to_string=True)
with open(OUT, 'w') as f:
    json.dump(out, f)
'''


def build(workdir, progs):
    flags = ['-O2', '-g', '-fomit-frame-pointer', '-Wa,--gsframe']
    for d in ('eh', 'sf'):
        os.makedirs(os.path.join(workdir, d))
    eh = os.path.join(workdir, 'eh')
    subprocess.run(['gcc'] + flags + ['-shared', '-fPIC', os.path.join(progs, 'libdbgcb.c'),
                                      '-o', os.path.join(eh, 'libdbgcb.so')], check=True)
    subprocess.run(['gcc'] + flags + ['-I', progs, os.path.join(progs, 'dbgchain.c'),
                                      '-L', eh, '-ldbgcb', '-Wl,-rpath,$ORIGIN', '-lpthread',
                                      '-o', os.path.join(eh, 'prog')], check=True)
    for name in ('prog', 'libdbgcb.so'):
        subprocess.run(['objcopy', '--remove-section=.eh_frame',
                        '--remove-section=.eh_frame_hdr', os.path.join(eh, name),
                        os.path.join(workdir, 'sf', name)], check=True)


def measure(workdir, prog, plugin, frames, repeat, label, setup):
    out = os.path.join(workdir, label.replace('/', '-') + '.json')
    script = os.path.join(workdir, label.replace('/', '-') + '.py')
    with open(script, 'w') as f:
        f.write('REPEAT = %d\nOUT = %r\nSETUP = %r\n' % (repeat, out, setup) + GDB_SCRIPT)
    cmd = ['gdb', '-batch', '-nx']
    if plugin:
        cmd += ['-x', plugin]
    cmd += ['-x', script, '--args', prog, 'deep', str(frames)]
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    if not os.path.exists(out):
        sys.exit('%s: gdb wrote no result:\n%s' % (label, p.stdout[-2000:]))
    with open(out) as f:
        r = json.load(f)
    if not r['main']:
        sys.exit('%s: bt did not reach main' % label)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--plugin', default=os.path.join(ROOT, 'build', 'debugger',
                                                     'sfunwind_gdb.py'))
    ap.add_argument('--progs', default=os.path.join(ROOT, 'tests', 'debugger', 'progs'))
    ap.add_argument('--frames', type=int, default=200)
    ap.add_argument('--repeat', type=int, default=15)
    ap.add_argument('--no-args', action='store_true',
                    help='set print frame-arguments none: time the frames, not the arguments')
    args = ap.parse_args()
    for tool in ('gdb', 'gcc', 'objcopy'):
        if not shutil.which(tool):
            sys.exit('bench_bt: needs %s' % tool)
    if not os.path.exists(args.plugin):
        sys.exit('bench_bt: no %s (run ninja -C build)' % args.plugin)
    workdir = tempfile.mkdtemp(prefix='bench_bt.')
    try:
        build(workdir, args.progs)
        configs = [('native/eh', 'eh', None), ('plugin/sframe', 'sf', args.plugin),
                   ('plugin/eh', 'eh', args.plugin)]
        setup = ['set print frame-arguments none'] if args.no_args else []
        print('bt of mode `deep %d` (dbgchain.c -O2)%s, %s' % (
            args.frames, ', frame-arguments none' if args.no_args else '',
            subprocess.run(['gdb', '--version'], stdout=subprocess.PIPE,
                           text=True).stdout.split('\n')[0]))
        print('%-14s %7s %10s %12s %10s %11s %10s' % ('config', 'frames', 'cold ms',
                                                      'median ms', 'min ms', 'us/frame',
                                                      'walk ms'))
        for label, flavour, plugin in configs:
            r = measure(workdir, os.path.join(workdir, flavour, 'prog'), plugin, args.frames,
                        args.repeat, label, setup)
            print('%-14s %7d %10.1f %12.1f %10.1f %11.1f %10.1f' % (
                label, r['frames'], r['cold'] * 1e3, r['median'] * 1e3, r['min'] * 1e3,
                r['median'] * 1e6 / r['frames'], r['walk'] * 1e3))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == '__main__':
    main()
