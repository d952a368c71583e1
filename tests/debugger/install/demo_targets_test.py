#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""What scripts/demo builds is what the README's debugger section runs.

The README tells a new user to run scripts/demo, then points gdb and lldb at
build/debugger/sfunwind_gdb.py, build/debugger/sfunwind-gdb-jit.so and
build/debugger/sfunwind_lldb.py; the Python front ends load
build/unwind/libsfunwind.so.0. When demo built only sfprof, the front ends
said "cannot load libsfunwind". This test reads the `meson compile` lines of
scripts/demo, resolves their targets with `meson introspect --targets`, and
checks that every build/ file the debugger section names (and the library
the Python front ends load) is made by one of them, or by `meson setup`
itself (a configured file, which is no target's output).

Exit status 0 pass, 1 fail.
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys


def demo_targets(demo):
    """The target specs of every `meson compile -C build ...` line of @demo."""
    specs = []
    for line in open(demo):
        line = line.split('>')[0].strip()
        if not line.startswith('meson compile'):
            continue
        words = shlex.split(line)[2:]
        i = 0
        while i < len(words):
            if words[i] == '-C':
                i += 2
                continue
            if not words[i].startswith('-'):
                specs.append(words[i])
            i += 1
    return specs


def resolve(spec, targets, source_root):
    """The files target @spec ("name", "dir/name", "dir/name:type") makes."""
    path, _, kind = spec.partition(':')
    subdir, _, name = path.rpartition('/')
    out = []
    for t in targets:
        if t['name'] != name:
            continue
        where = os.path.relpath(os.path.dirname(t['defined_in']), source_root)
        if subdir and where != subdir:
            continue
        if kind and t['type'] != kind.replace('_', ' '):
            continue
        out += t['filename']
    return out


def readme_paths(readme):
    """The build/ files the README's section on the debuggers names."""
    text = open(readme).read()
    start = text.index('## The library and the debuggers')
    end = text.index('\n## ', start + 1)
    return sorted(set(re.findall(r'build/[\w./-]+\.(?:py|so)\b', text[start:end])))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source', required=True)
    ap.add_argument('--builddir', required=True)
    args = ap.parse_args()
    src, build = os.path.abspath(args.source), os.path.abspath(args.builddir)
    targets = json.loads(subprocess.run(['meson', 'introspect', build, '--targets'],
                                        stdout=subprocess.PIPE, check=True, text=True,
                                        timeout=60).stdout)
    specs = demo_targets(os.path.join(src, 'scripts', 'demo'))
    made = set()
    fails = []
    for spec in specs:
        files = resolve(spec, targets, src)
        if not files:
            fails.append('scripts/demo builds %s, which is no target of this build' % spec)
        made.update(os.path.realpath(f) for f in files)
    outputs = {os.path.realpath(f) for t in targets for f in t['filename']}
    print('scripts/demo builds: %s' % ', '.join(specs))
    wanted = readme_paths(os.path.join(src, 'README.md'))
    # the library the Python front ends load (debugger/sfunwind.py.in: _BUILD_LIB)
    wanted.append('build/unwind/libsfunwind.so.0')
    if len(wanted) < 4:
        fails.append('the README names only %s: its debugger section moved?' % wanted)
    for rel in wanted:
        path = os.path.join(build, rel[len('build/'):])
        real = os.path.realpath(path)
        if real in made:
            how = 'built by scripts/demo'
        elif real not in outputs and os.path.exists(path):
            how = 'configured by meson setup'
        else:
            how = None
            fails.append('%s, which the README uses, is %s' % (
                rel, 'a target scripts/demo does not build' if real in outputs else
                'neither built by scripts/demo nor configured'))
        print('%-40s %s' % (rel, how or 'MISSING'))
    for f in fails:
        print('FAIL: ' + f)
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
