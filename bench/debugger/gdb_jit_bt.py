#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""How long gdb's `bt` of a deep stack takes with the JIT-reader plugin.

Not a test: it prints figures. It compiles dbgchain.c twice from the same
commands (-O2 -fomit-frame-pointer -Wa,--gsframe, PIE): an SFrame-only copy
(.eh_frame and .eh_frame_hdr removed) and one that keeps .eh_frame. Each is
stopped in `deep N` (N + 6 frames), and inside gdb `bt` is timed with
Python's perf_counter around gdb.execute('bt', to_string=True), after
`maintenance flush register-cache` so that every run unwinds every frame
again (the symbol tables stay loaded, as for a user typing `bt` twice):

  jit      the SFrame-only copy, with `jit-reader-load sfunwind-gdb-jit.so`
  native   the .eh_frame copy, plain gdb (its DWARF unwinder)
  jit-eh   the .eh_frame copy with the plugin loaded (it declines every
           frame .sframe does not cover; here it covers ours, so it unwinds)

The first `bt` after the stop (cold: the plugin finds the process and opens
the modules, gdb reads its tables) is reported apart. The median of --runs
warm runs is the figure.

usage: bench/debugger/gdb_jit_bt.py [--plugin build/debugger/sfunwind-gdb-jit.so] [--depth 200] [--runs 21]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

TIMER = '''python
import time, statistics
def _bt_time():
    t = time.perf_counter()
    out = gdb.execute('bt', to_string=True)
    return time.perf_counter() - t, out.count('\\n#') + 1
cold, frames = _bt_time()
warm = []
for _ in range(%(runs)d):
    gdb.execute('maintenance flush register-cache')
    warm.append(_bt_time()[0])
print('@@RESULT frames=%%d cold=%%.3f median=%%.3f min=%%.3f max=%%.3f' %% (
    frames, cold * 1e3, statistics.median(warm) * 1e3, min(warm) * 1e3, max(warm) * 1e3))
end
'''


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=kw.pop('timeout', 120),
                          **kw).stdout


def build(work, progs):
    cflags = ['-O2', '-g', '-fomit-frame-pointer', '-Wa,--gsframe']
    out = {}
    for kind in ('sf', 'eh'):
        libdir = os.path.join(work, 'lib_' + kind)
        os.makedirs(libdir)
        lib = os.path.join(libdir, 'libdbgcb.so')
        prog = os.path.join(work, 'prog_' + kind)
        sh(['gcc'] + cflags + ['-shared', '-fPIC', os.path.join(progs, 'libdbgcb.c'), '-o', lib])
        sh(['gcc'] + cflags + ['-I', progs, os.path.join(progs, 'dbgchain.c'), '-L', libdir,
                               '-ldbgcb', '-Wl,-rpath,' + libdir, '-lpthread', '-o', prog])
        if kind == 'sf':
            for f in (lib, prog):
                sh(['objcopy', '--remove-section=.eh_frame', '--remove-section=.eh_frame_hdr', f])
        out[kind] = prog
    return out


def measure(prog, depth, runs, plugin, work, tag):
    script = os.path.join(work, tag + '.gdb')
    with open(script, 'w') as f:
        if plugin:
            f.write('jit-reader-load %s\n' % plugin)
        f.write('run deep %d\n' % depth)
        f.write(TIMER % {'runs': runs})
        f.write('kill\n')
    out = sh(['gdb', '-nx', '-batch', '-x', script, prog], timeout=300)
    m = re.search(r'@@RESULT (.*)', out)
    if not m:
        sys.exit('%s: no result:\n%s' % (tag, out[-2000:]))
    return dict(kv.split('=') for kv in m.group(1).split())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--plugin', default=os.path.join(ROOT, 'build', 'debugger',
                                                     'sfunwind-gdb-jit.so'))
    ap.add_argument('--progs', default=os.path.join(ROOT, 'tests', 'debugger', 'progs'))
    ap.add_argument('--depth', type=int, default=200)
    ap.add_argument('--runs', type=int, default=21)
    args = ap.parse_args()
    plugin = os.path.abspath(args.plugin)
    if not os.path.exists(plugin):
        sys.exit('no plugin at %s (ninja -C build)' % plugin)
    with tempfile.TemporaryDirectory(prefix='sfu-bench-bt-') as work:
        progs = build(work, args.progs)
        rows = [
            ('jit', progs['sf'], plugin),
            ('native', progs['eh'], None),
            ('jit-eh', progs['eh'], plugin),
        ]
        print('bt of `deep %d`, %d warm runs each (ms)' % (args.depth, args.runs))
        print('%-8s %7s %8s %8s %8s %8s' % ('', 'frames', 'cold', 'median', 'min', 'max'))
        for tag, prog, plug in rows:
            r = measure(prog, args.depth, args.runs, plug, work, tag)
            print('%-8s %7s %8s %8s %8s %8s' % (tag, r['frames'], r['cold'], r['median'],
                                                r['min'], r['max']))


if __name__ == '__main__':
    main()
