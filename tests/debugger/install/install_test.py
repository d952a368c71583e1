#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""libsfunwind as installed: `meson install --destdir`, then a program built from the .pc alone.

Checks, in a temporary DESTDIR:
  1. the installed files: headers (with the generated version.h), libsfunwind.so.X.Y.Z with
     its soname link, the static archive, libsfunwind.pc, sfprof, the debugger front ends;
  2. the shared library's soname is libsfunwind.so.0 and it exports exactly the functions the
     public headers mark SFU_API, each under a SFUNWIND_<release> version node;
  3. a program compiled and linked with nothing but `pkg-config --cflags --libs libsfunwind`
     (PKG_CONFIG_SYSROOT_DIR pointing into DESTDIR) loads the installed library and unwinds
     its own stack through .sframe: inst_leaf, inst_mid, inst_outer, main.

Exit status 0 pass, 1 fail, 77 skip (no pkg-config).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

SKIP = 77


def run(cmd, **kw):
    kw.setdefault('timeout', 120)
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def must(cmd, what, **kw):
    r = run(cmd, **kw)
    if r.returncode != 0:
        print('FAIL: %s: %s exited %d\n%s%s' % (what, ' '.join(cmd), r.returncode, r.stdout,
                                               r.stderr))
        sys.exit(1)
    return r.stdout


def api_names(headers_dir):
    names = set()
    for f in sorted(os.listdir(headers_dir)):
        if not f.endswith('.h') and not f.endswith('.h.in'):
            continue
        with open(os.path.join(headers_dir, f)) as fh:
            for m in re.finditer(r'^SFU_API\b[^(]*?\b(sfu_\w+)\(', fh.read(), re.M):
                names.add(m.group(1))
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--builddir', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--source', required=True)
    ap.add_argument('--headers', required=True, help='include/sfunwind in the source tree')
    ap.add_argument('--prefix', required=True)
    ap.add_argument('--libdir', required=True)
    ap.add_argument('--includedir', required=True)
    ap.add_argument('--bindir', required=True)
    ap.add_argument('--datadir', required=True)
    ap.add_argument('--version', required=True)
    args = ap.parse_args()

    for tool in ('pkg-config', 'readelf', 'nm', 'gcc', 'objcopy'):
        if not shutil.which(tool):
            print('SKIP: needs %s' % tool)
            return SKIP

    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    dest = os.path.join(args.workdir, 'dest')
    must(['meson', 'install', '-C', args.builddir, '--destdir', dest, '--no-rebuild', '--quiet'],
         'meson install')

    def inst(*parts):
        return os.path.join(dest, args.prefix.lstrip('/'), *parts)

    libdir = inst(args.libdir)
    failures = []
    expected = [
        inst(args.includedir, 'sfunwind', h) for h in
        ('addrspace.h', 'api.h', 'cbf.h', 'diag.h', 'ehframe.h', 'module.h', 'sframe.h',
         'unwind.h', 'version.h')
    ] + [
        os.path.join(libdir, 'libsfunwind.so.' + args.version),
        os.path.join(libdir, 'libsfunwind.so.0'),
        os.path.join(libdir, 'libsfunwind.so'),
        os.path.join(libdir, 'libsfunwind.a'),
        os.path.join(libdir, 'pkgconfig', 'libsfunwind.pc'),
        inst(args.bindir, 'sfprof'),
        inst(args.datadir, 'sfprof', 'sfunwind.py'),
        inst(args.datadir, 'sfprof', 'sfunwind_gdb.py'),
        inst(args.datadir, 'sfprof', 'sfunwind_lldb.py'),
        inst(args.datadir, 'sfprof', 'sfunwind-gdb-jit.so'),
    ]
    for path in expected:
        if not os.path.exists(path):
            failures.append('not installed: ' + os.path.relpath(path, dest))
    if os.path.realpath(os.path.join(libdir, 'libsfunwind.so.0')) != \
            os.path.realpath(os.path.join(libdir, 'libsfunwind.so.' + args.version)):
        failures.append('libsfunwind.so.0 does not point at libsfunwind.so.' + args.version)

    # The installed binding must look for the library where it was installed.
    binding = inst(args.datadir, 'sfprof', 'sfunwind.py')
    if os.path.exists(binding):
        want = os.path.join(args.prefix, args.libdir, 'libsfunwind.so.0')
        with open(binding) as fh:
            if "_INSTALL_LIB = '%s'" % want not in fh.read():
                failures.append('installed sfunwind.py does not name %s' % want)

    so = os.path.join(libdir, 'libsfunwind.so.' + args.version)
    dyn = must(['readelf', '-d', so], 'readelf -d')
    if not re.search(r'\(SONAME\)\s+Library soname: \[libsfunwind\.so\.0\]', dyn):
        failures.append('soname is not libsfunwind.so.0:\n' + dyn)

    exported = {}
    for line in must(['nm', '-D', '--defined-only', so], 'nm -D').splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in 'TtWwDdBbRr':
            name, _, node = parts[2].partition('@@')
            exported[name] = node
    api = api_names(args.headers)
    if len(api) < 60:
        failures.append('only %d SFU_API functions found in %s' % (len(api), args.headers))
    missing = sorted(api - set(exported))
    extra = sorted(set(exported) - api)
    if missing:
        failures.append('SFU_API functions not exported: ' + ', '.join(missing))
    if extra:
        failures.append('exported but not SFU_API: ' + ', '.join(extra))
    # one node per release (tests/abi_check.py checks each symbol's); SFUNWIND_0 had no sz in its structs
    nodes = {n for n in exported.values()}
    if not nodes or any(not re.fullmatch(r'SFUNWIND_\d+\.\d+', n) for n in nodes):
        failures.append('version nodes %s, want SFUNWIND_<major>.<minor> ones' % sorted(nodes))

    # A program that knows only the .pc.
    env = dict(os.environ)
    env['PKG_CONFIG_PATH'] = os.path.join(libdir, 'pkgconfig')
    env['PKG_CONFIG_SYSROOT_DIR'] = dest
    modversion = must(['pkg-config', '--modversion', 'libsfunwind'], 'pkg-config', env=env).strip()
    if modversion != args.version:
        failures.append('pkg-config --modversion says %s, want %s' % (modversion, args.version))
    flags = must(['pkg-config', '--cflags', '--libs', 'libsfunwind'], 'pkg-config', env=env).split()
    if not any(f.startswith('-I' + dest) for f in flags):
        failures.append('pkg-config --cflags does not point into DESTDIR: %s' % flags)
    prog = os.path.join(args.workdir, 'selfunwind')
    must(['gcc', '-O2', '-fomit-frame-pointer', '-Wa,--gsframe', '-Wall', '-Werror', args.source,
          '-o', prog + '.full'] + flags + ['-Wl,-rpath,' + libdir], 'compile against the .pc')
    # SFrame is the program's only unwind information.
    must(['objcopy', '--remove-section=.eh_frame', '--remove-section=.eh_frame_hdr',
          prog + '.full', prog], 'objcopy')

    # meson test points LD_LIBRARY_PATH at the build tree: the installed library must be found
    # through the program's own run path.
    run_env = {k: v for k, v in os.environ.items() if k != 'LD_LIBRARY_PATH'}
    r = run([prog], env=run_env)
    out = r.stdout
    print(out, end='')
    if r.returncode != 0:
        failures.append('selfunwind exited %d: %s' % (r.returncode, r.stderr))
    want_version = 'version header %s library %s' % (args.version, args.version)
    if want_version not in out:
        failures.append('version line is not "%s"' % want_version)
    frames = re.findall(r'^frame (\d+) (\S+) (\S+)$', out, re.M)
    chain = [(name, source) for _, name, source in frames[:4]]
    want = [('inst_leaf', 'regs'), ('inst_mid', 'sframe'), ('inst_outer', 'sframe'),
            ('main', 'sframe')]
    if chain != want:
        failures.append('chain %s, want %s' % (chain, want))

    # The library the program ran with is the installed one.
    maps = run(['ldd', prog], env=run_env).stdout
    m = re.search(r'libsfunwind\.so\.0 => (\S+)', maps)
    if not m or not os.path.realpath(m.group(1)).startswith(os.path.realpath(dest)):
        failures.append('selfunwind does not load libsfunwind from DESTDIR:\n' + maps)

    for f in failures:
        print('FAIL: ' + f)
    if failures:
        return 1
    print('PASS: installed libsfunwind %s: %d exported functions, self-unwind %s' %
          (args.version, len(exported), ' '.join(n for n, _ in chain)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
