#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: `sframe bt` against lldb's own `bt` on a 200-frame stack.

    python3 bench/debugger/lldb_bt.py [--runs 9] [--depth 200]

Compiles dbgchain (-O2, PIE) twice, as lldb_test.py does: SFrame-only (sf/)
and with .eh_frame kept (eh/). In one lldb-16 session it launches
`prog deep 200` --runs times per case, and times one command per stop with
Python's clock around SBCommandInterpreter.HandleCommand (the output goes to
an SBCommandReturnObject, not to the terminal):

  sframe bt on sf/      libsfunwind's walk plus lldb's symbols and lines
  walk only on sf/      sfunwind.Stepper.walk alone (mappings from lldb's
                        module list, memory through process.ReadMemory)
  bt on eh/             lldb's native unwinder (.eh_frame), same program
  bt on eh/, no args    the same with lldb's frame-format less the
                        arguments (`sframe bt` prints none): no frame
                        variables are read
  bt on sf/             lldb's native unwinder without .eh_frame (frames
                        counted, to show how far it gets)

Each stop is a fresh launch, so lldb's per-stop frame cache is empty for
every timed `bt`; module-level caches (symbols, unwind plans, libsfunwind's
parsed modules) are warm after the first run, which is reported apart.
Prints the figures; not a test.

Inside lldb this file is also the `bench-bt` command the session runs.
"""

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


# --- inside lldb ---

def _frames_in(text):
    return len(re.findall(r'^\s*\*?\s*frame #\d+:', text, re.M))


NOARGS_FORMAT = ('frame #${frame.index}: ${frame.pc}{ ${module.file.basename}'
                 '{`${function.name-without-args}{${frame.no-debug}${function.pc-offset}}}}'
                 '{ at ${line.file.basename}:${line.number}{:${line.column}}}\\n')


def bench_command(debugger, command, exe_ctx, result, internal_dict):
    """bench-bt RUNS COMMAND ARGS...: launch ARGS RUNS times, time COMMAND at each stop."""
    import lldb
    argv = shlex.split(command)
    runs, what, prog_args = int(argv[0]), argv[1], argv[2:]
    ci = debugger.GetCommandInterpreter()
    target = debugger.GetSelectedTarget()
    debugger.SetAsync(False)
    times, frames = [], []
    name = what
    if what == 'bt-noargs':
        # lldb's default frame format without the arguments (no frame variables)
        what = 'bt'
        lldb.SBDebugger.SetInternalVariable('frame-format', NOARGS_FORMAT,
                                            debugger.GetInstanceName())
    for _ in range(runs):
        info = lldb.SBLaunchInfo(prog_args)
        info.SetWorkingDirectory(os.path.dirname(target.GetExecutable().fullpath))
        error = lldb.SBError()
        process = target.Launch(info, error)
        if error.Fail() or process.GetState() != lldb.eStateStopped:
            result.SetError('the process did not stop: %s' % error.GetCString())
            return
        res = lldb.SBCommandReturnObject()
        if what == 'walk':
            import sfunwind
            import sfunwind_lldb
            t0 = time.perf_counter()
            space = sfunwind_lldb.address_space(target)
            thread = process.GetSelectedThread()
            walked, _stop = sfunwind.Stepper(space, sframe_only=False).walk(
                sfunwind_lldb.frame0_registers(thread, space.arch),
                sfunwind_lldb.memory_reader(process))
            dt = time.perf_counter() - t0
            n = len(walked)
        else:
            ctx = lldb.SBExecutionContext(process.GetSelectedThread())
            t0 = time.perf_counter()
            ci.HandleCommand(what, ctx, res, False)
            dt = time.perf_counter() - t0
            if not res.Succeeded():
                result.SetError('%s: %s' % (what, res.GetError()))
                return
            n = _frames_in(res.GetOutput())
        times.append(dt)
        frames.append(n)
        process.Kill()
    debugger.HandleCommand('settings clear frame-format')
    result.AppendMessage('BENCH %s first=%.6f median=%.6f min=%.6f frames=%d' % (
        name.replace(' ', '_'), times[0], statistics.median(times[1:] or times),
        min(times), frames[-1]))


def __lldb_init_module(debugger, internal_dict):
    debugger.HandleCommand('command script add -f %s.bench_command bench-bt' % __name__)


# --- the driver ---

def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--lldb', default='lldb-16')
    ap.add_argument('--plugin', default=os.path.join(ROOT, 'build', 'debugger',
                                                     'sfunwind_lldb.py'))
    ap.add_argument('--progs', default=os.path.join(ROOT, 'tests', 'debugger', 'progs'))
    ap.add_argument('--workdir', help='default: a temporary directory')
    ap.add_argument('--runs', type=int, default=9)
    ap.add_argument('--depth', type=int, default=200)
    args = ap.parse_args()
    if not os.path.exists(args.plugin):
        sys.exit('no %s: run ninja -C build first' % args.plugin)
    sys.path.insert(0, os.path.join(ROOT, 'tests', 'debugger', 'lldb'))
    import lldb_test  # builds the same copies as the test
    tmp = None
    if not args.workdir:
        tmp = tempfile.TemporaryDirectory(prefix='bench-bt-')
        args.workdir = tmp.name
    workdir = os.path.abspath(args.workdir)
    os.makedirs(workdir, exist_ok=True)
    lldb_test.log = lambda msg='': None     # quiet builds
    lldb_test.build(args.progs, workdir, '-O2', True, ['eh', 'sf'])

    cases = [('sf', 'sframe bt'), ('sf', 'walk'), ('eh', 'bt'), ('eh', 'bt-noargs'),
             ('sf', 'bt')]
    lines = ['settings set auto-confirm true',
             'command script import ' + os.path.abspath(args.plugin),
             'command script import ' + os.path.abspath(__file__)]
    for kind, what in cases:
        lines += ['target create ' + os.path.join(workdir, kind, 'prog'),
                  'bench-bt %d %s deep %d' % (args.runs, shlex.quote(what), args.depth)]
    lines.append('quit')
    script = os.path.join(workdir, 'bench.lldb')
    with open(script, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    p = subprocess.run([args.lldb, '-x', '-b', '-s', script], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=600, start_new_session=True)
    found = re.findall(r'^BENCH (\S+) first=(\S+) median=(\S+) min=(\S+) frames=(\d+)$',
                       p.stdout, re.M)
    if len(found) != len(cases):
        print(p.stdout)
        sys.exit('the lldb session did not report every case')
    print('stack of `dbgchain deep %d` (-O2, PIE), %d stops per case, lldb-16:' %
          (args.depth, args.runs))
    print('  %-22s %7s %10s %10s %10s %12s' % ('case', 'frames', 'first ms', 'median ms',
                                               'min ms', 'median us/fr'))
    labels = {('sf', 'sframe_bt'): 'sframe bt on sf/', ('sf', 'walk'): 'walk only on sf/',
              ('eh', 'bt'): 'bt on eh/ (native)', ('eh', 'bt-noargs'): 'bt on eh/, no args',
              ('sf', 'bt'): 'bt on sf/ (native)'}
    for (kind, _), (what, first, median, low, frames) in zip(cases, found):
        frames = int(frames)
        print('  %-22s %7d %10.2f %10.2f %10.2f %12.1f' % (
            labels[(kind, what)], frames, float(first) * 1e3, float(median) * 1e3,
            float(low) * 1e3, float(median) * 1e6 / max(frames, 1)))
    if tmp:
        tmp.cleanup()


if __name__ == '__main__':
    main()
