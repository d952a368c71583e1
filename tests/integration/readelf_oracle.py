#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Oracle test for `sfprof sframe`: binutils 2.40 readelf and nm against our output.

Programs are compiled here with `-Wa,--gsframe` (C and C++, -O0/-O2/-Os,
non-PIE, PIE, shared libraries with PLT calls, relocatable objects; AArch64
plain, pac-ret and pac-ret+b-key) and for each one
`sfprof sframe --readelf F` must be byte-identical to `readelf --sframe F`.

Modes:
  --arch x86_64 | aarch64   the readelf comparison for one architecture,
                            plus a multi-file invocation
  --listing                 the default listing (function names against nm,
                            counts against readelf) and the error cases

Exit status: 0 pass, 1 fail, 77 skip (no readelf 2.40, no gas --gsframe,
no cross compiler).
"""
import argparse
import concurrent.futures
import difflib
import os
import re
import shutil
import subprocess
import sys

SKIP = 77

PROG_C = r'''
#include <alloca.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) int work(const int *a, int n)
{
	char buf[256];
	int s = 0;

	for (int i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "%d", a[i]);
		s += (int)strlen(buf) + fib(a[i] % 10);
	}
	return s;
}

__attribute__((noinline)) int big_frame(int n)
{
	volatile char b[10000];

	b[n] = 1;
	return b[n / 2] + work((const int *)b, n);
}

/* alloca makes the CFA frame-pointer based even with -fomit-frame-pointer */
__attribute__((noinline)) int dyn_frame(int n)
{
	char *p = alloca((size_t)n * 16 + 16);

	memset(p, n, (size_t)n * 16);
	return p[n] + work((const int *)p, n / 4);
}

int main(int argc, char **argv)
{
	int a[4] = { 1, 2, 3, argc };

	(void)argv;
	printf("%d\n", work(a, 4) + big_frame(argc) + dyn_frame(argc));
	return 0;
}
'''

PROG_CXX = r'''
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

struct Shape {
	virtual ~Shape() {}
	virtual int area(int x) const
	{
		if (x < 0)
			throw std::runtime_error("negative");
		return x * 2;
	}
};

struct Square : Shape {
	int area(int x) const override { return x * x; }
};

template <typename T> T total(const std::vector<T> &v, const Shape &s)
{
	T t{};
	for (const T &x : v)
		t += s.area(x);
	return t;
}

int main(int argc, char **)
{
	std::vector<int> v{1, 2, 3, argc};
	std::map<std::string, int> m;
	Square sq;
	try {
		m["total"] = total(v, sq);
		std::cout << m["total"] << std::endl;
	} catch (const std::exception &e) {
		std::cerr << e.what() << std::endl;
		return 1;
	}
	return 0;
}
'''

LIB_C = r'''
#include <stdio.h>
#include <stdlib.h>

extern int ext(int);

int lf(int x)
{
	printf("%d\n", x);
	return abs(x) + ext(x);
}

int lg(int x)
{
	puts("lg");
	return lf(x) * 2 + (int)(long)malloc((size_t)x);
}

int ext(int x)
{
	return x + 1;
}
'''

# >64 KiB of code and a 100 KB frame: 4-byte FRE start addresses and offsets
BIG_C = r'''
#define R(x) x x x x x x x x x x
volatile int g;

int huge(int n)
{
	volatile char buf[100000];

	buf[n] = 1;
	R(R(R(R(g += n * 3; g ^= g >> 3;))))
	return buf[n / 2] + g;
}

int main(int c, char **v)
{
	(void)v;
	return huge(c);
}
'''

# No headers: the cross toolchain has no big-endian libc.
FREESTANDING_C = r'''
__attribute__((noinline)) static long leaf(long x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) long mid(long *v, int n)
{
	long frame[64];
	long s = 0;

	for (int i = 0; i < n; i++) {
		frame[i % 64] = leaf(v[i]);
		s += frame[(i * 7) % 64];
	}
	return s;
}

long top(long *v, int n)
{
	return mid(v, n) + leaf(n);
}
'''

SOURCES = {'prog.c': PROG_C, 'prog.cc': PROG_CXX, 'lib.c': LIB_C, 'big.c': BIG_C,
           'freestanding.c': FREESTANDING_C}

# Functions of PROG_C the listing must name (all noinline or main).
PROG_FUNCS = ['main', 'work', 'fib', 'big_frame', 'dyn_frame']


class Failures:
    def __init__(self):
        self.count = 0

    def fail(self, what, detail=''):
        self.count += 1
        print(f'FAIL: {what}')
        if detail:
            print(detail.rstrip('\n'))


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def show_diff(expected, got, exp_name, got_name):
    lines = difflib.unified_diff(expected.decode(errors='replace').splitlines(True),
                                 got.decode(errors='replace').splitlines(True),
                                 exp_name, got_name)
    # trailing spaces matter in this format: make them visible
    lines = [l.rstrip('\n') + '$\n' for l in lines]
    if len(lines) > 60:
        lines = lines[:60] + [f'... {len(lines) - 60} more diff lines\n']
    return ''.join(lines)


def check_tools(readelf):
    if not shutil.which(readelf):
        print(f'SKIP: {readelf} not found')
        return False
    first = run([readelf, '--version']).stdout.decode().splitlines()[0]
    # the output format changed in 2.41 (fixed offsets in the header, 'f' in the RA column)
    if not re.search(r'\b2\.40(\.\d+)?\b', first):
        print(f'SKIP: the oracle is binutils 2.40 readelf, found: {first}')
        return False
    return True


def can_gsframe(cc, workdir):
    if not shutil.which(cc):
        return False
    src = os.path.join(workdir, 'probe.c')
    with open(src, 'w') as f:
        f.write('int probe(void) { return 1; }\n')
    r = run([cc, '-Wa,--gsframe', '-c', src, '-o', os.path.join(workdir, 'probe-' + cc + '.o')])
    return r.returncode == 0


def write_sources(workdir):
    for name, text in SOURCES.items():
        with open(os.path.join(workdir, name), 'w') as f:
            f.write(text)


def x86_builds():
    """(output name, driver, source, flags) for x86-64."""
    b = []
    for opt in ('-O0', '-O2', '-Os'):
        o = opt[1:]
        for fp_name, fp in (('', []), ('-omitfp', ['-fomit-frame-pointer'])):
            b.append((f'c-{o}{fp_name}-nopie', 'gcc', 'prog.c', [opt, '-fno-pie', '-no-pie'] + fp))
            b.append((f'c-{o}{fp_name}-pie', 'gcc', 'prog.c', [opt, '-fPIE', '-pie'] + fp))
        b.append((f'c-{o}.o', 'gcc', 'prog.c', [opt, '-c']))
        b.append((f'cxx-{o}-pie', 'g++', 'prog.cc', [opt, '-fPIE', '-pie']))
        b.append((f'cxx-{o}-nopie', 'g++', 'prog.cc', [opt, '-fno-pie', '-no-pie']))
        b.append((f'cxx-{o}.o', 'g++', 'prog.cc', [opt, '-c']))
        b.append((f'lib-{o}.so', 'gcc', 'lib.c', [opt, '-fPIC', '-shared']))
    b.append(('c-O2-fp-pie', 'gcc', 'prog.c', ['-O2', '-fno-omit-frame-pointer', '-fPIE', '-pie']))
    b.append(('cxx-O2-omitfp-pie', 'g++', 'prog.cc', ['-O2', '-fomit-frame-pointer', '-fPIE', '-pie']))
    b.append(('lib-O2-ibtplt.so', 'gcc', 'lib.c',
              ['-O2', '-fPIC', '-shared', '-fcf-protection', '-Wl,-z,ibtplt']))
    b.append(('lib-O2-now.so', 'gcc', 'lib.c', ['-O2', '-fPIC', '-shared', '-Wl,-z,now']))
    b.append(('c-O2-r.o', 'gcc', 'prog.c', ['-O2', '-r', '-nostdlib']))
    b.append(('big-O2-nopie', 'gcc', 'big.c', ['-O2', '-fno-pie', '-no-pie']))
    return b


def aarch64_builds():
    cc, cxx = 'aarch64-linux-gnu-gcc', 'aarch64-linux-gnu-g++'
    b = []
    for bp_name, bp in (('', []), ('-pac', ['-mbranch-protection=pac-ret']),
                        ('-pacb', ['-mbranch-protection=pac-ret+b-key'])):
        for opt in ('-O0', '-O2', '-Os'):
            o = opt[1:]
            b.append((f'a64-c-{o}{bp_name}.o', cc, 'prog.c', [opt, '-c'] + bp))
            b.append((f'a64-c-{o}{bp_name}-pie', cc, 'prog.c', [opt, '-fPIE', '-pie'] + bp))
        b.append((f'a64-c-O2{bp_name}-nopie', cc, 'prog.c', ['-O2', '-fno-pie', '-no-pie'] + bp))
        b.append((f'a64-c-O2{bp_name}-omitfp-pie', cc, 'prog.c',
                  ['-O2', '-fomit-frame-pointer', '-fPIE', '-pie'] + bp))
        b.append((f'a64-lib-O2{bp_name}.so', cc, 'lib.c', ['-O2', '-fPIC', '-shared'] + bp))
        b.append((f'a64-cxx-O2{bp_name}-pie', cxx, 'prog.cc', ['-O2', '-fPIE', '-pie'] + bp))
        b.append((f'a64-cxx-O2{bp_name}.o', cxx, 'prog.cc', ['-O2', '-c'] + bp))
    for opt in ('-O0', '-O2'):
        b.append((f'a64-be-{opt[1:]}-pacb.o', cc, 'freestanding.c',
                  [opt, '-c', '-mbig-endian', '-mbranch-protection=pac-ret+b-key']))
    b.append(('a64-big-O2.o', cc, 'big.c', ['-O2', '-c']))
    return b


def build_all(workdir, builds, fails):
    def one(spec):
        name, driver, src, flags = spec
        out = os.path.join(workdir, name)
        cmd = [driver, '-Wa,--gsframe'] + flags + [os.path.join(workdir, src), '-o', out]
        r = run(cmd)
        return spec, out, cmd, r

    built = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        for spec, out, cmd, r in ex.map(one, builds):
            if r.returncode != 0:
                fails.fail(f'build {spec[0]}: {" ".join(cmd)}', r.stderr.decode(errors='replace'))
            else:
                built.append(out)
    return built


def compare_readelf(sfprof, readelf, files, label, fails):
    """sfprof sframe --readelf FILES must print what readelf --sframe FILES prints."""
    exp = run([readelf, '--sframe'] + files)
    got = run([sfprof, 'sframe', '--readelf'] + files)
    # an empty comparison proves nothing: readelf must have dumped every file
    dumps = exp.stdout.count(b'Contents of the SFrame section .sframe:')
    if exp.returncode != 0 or dumps != len(files) or b'func idx [0]' not in exp.stdout:
        fails.fail(f'{label}: readelf did not dump an SFrame section for each file '
                   f'(rc {exp.returncode}, {dumps} of {len(files)})',
                   exp.stderr.decode(errors='replace'))
        return False
    ok = True
    if got.returncode != 0 or got.stderr:
        fails.fail(f'{label}: sfprof exited {got.returncode}', got.stderr.decode(errors='replace'))
        ok = False
    if got.stdout != exp.stdout:
        fails.fail(f'{label}: sfprof sframe --readelf differs from readelf --sframe',
                   show_diff(exp.stdout, got.stdout, 'readelf --sframe', 'sfprof sframe --readelf'))
        ok = False
    return ok


def mode_arch(args, workdir, fails):
    if args.arch == 'x86_64':
        drivers, builds = ('gcc', 'g++'), x86_builds()
    else:
        drivers, builds = ('aarch64-linux-gnu-gcc', 'aarch64-linux-gnu-g++'), aarch64_builds()
    for d in drivers:
        if not can_gsframe(d, workdir):
            print(f'SKIP: {d} missing or its assembler has no --gsframe')
            return SKIP
    write_sources(workdir)
    files = build_all(workdir, builds, fails)
    same = sum(compare_readelf(args.sfprof, args.readelf, [f], os.path.basename(f), fails)
               for f in files)
    print(f'{same} of {len(files)} {args.arch} files identical to readelf --sframe')

    # several files: readelf's "File:" lines, in command line order, mixed kinds
    multi = [f for f in files if re.search(r'(c-O2-pie|\.so|-O0\.o)$', os.path.basename(f))]
    if len(multi) >= 2 and compare_readelf(args.sfprof, args.readelf, multi,
                                           f'{len(multi)} files at once', fails):
        print(f'{len(multi)} files at once: identical')
    return 0


def section_offset(readelf, path, name):
    """File offset of section NAME, from readelf -S -W."""
    out = run([readelf, '-S', '-W', path]).stdout.decode()
    for line in out.splitlines():
        m = re.match(r'\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s', line)
        if m and m.group(1) == name:
            return int(m.group(2), 16)
    return None


def expect_error(sfprof, argv, path, what, fails, reason=None):
    r = run([sfprof, 'sframe'] + argv)
    err = r.stderr.decode(errors='replace')
    if r.returncode != 1:
        fails.fail(f'{what}: exit status {r.returncode}, expected 1', err)
    if r.stdout:
        fails.fail(f'{what}: printed on stdout', r.stdout.decode(errors='replace')[:400])
    if not err.startswith(f'sfprof sframe: {path}: ') or err.count('\n') != 1:
        fails.fail(f'{what}: stderr is not one "sfprof sframe: {path}: ..." line', err)
    elif reason and not re.search(reason, err):
        fails.fail(f'{what}: stderr does not match /{reason}/', err)
    else:
        print(f'ok: {what}: {err.strip()}')


def mode_listing(args, workdir, fails):
    if not can_gsframe('gcc', workdir):
        print('SKIP: gcc missing or its assembler has no --gsframe')
        return SKIP
    write_sources(workdir)
    prog, lib = os.path.join(workdir, 'prog'), os.path.join(workdir, 'lib.so')
    files = build_all(workdir, [('prog', 'gcc', 'prog.c', ['-O0', '-fno-pie', '-no-pie']),
                                ('lib.so', 'gcc', 'lib.c', ['-O2', '-fPIC', '-shared'])], fails)
    if len(files) != 2:
        return 0

    # -- the listing names the functions nm knows, at nm's addresses --
    for path, funcs in ((prog, PROG_FUNCS), (lib, ['lf', 'lg', 'ext'])):
        r = run([args.sfprof, 'sframe', path])
        out = r.stdout.decode()
        if r.returncode != 0 or r.stderr:
            fails.fail(f'listing {path}: exit {r.returncode}', r.stderr.decode())
            continue
        nm = {}
        for line in run(['nm', '--defined-only', path]).stdout.decode().splitlines():
            addr, _, name = line.split()
            nm.setdefault(name, int(addr, 16))
        fdes = {}
        for m in re.finditer(r'^fde\s+(\d+)\s+0x([0-9a-f]{16})\s+(\d+)\s+(pcinc|pcmask/\d+)\s+\S+\s+\S+\s+\S+\s+(\S+)$',
                             out, re.M):
            fdes[m.group(5)] = int(m.group(2), 16)
        for fn in funcs:
            if fn not in fdes:
                fails.fail(f'listing {os.path.basename(path)}: no function line for {fn}', out)
            elif fdes[fn] != nm.get(fn):
                fails.fail(f'listing {os.path.basename(path)}: {fn} at {fdes[fn]:#x}, nm says {nm.get(fn, 0):#x}')
        # counts and header against readelf
        re_out = run([args.readelf, '--sframe', path]).stdout.decode()
        n_fdes = int(re.search(r'Num FDEs: (\d+)', re_out).group(1))
        n_fres = int(re.search(r'Num FREs: (\d+)', re_out).group(1))
        rows = len(re.findall(r'^    0x[0-9a-f]{16}  ', out, re.M))
        if len(re.findall(r'^fde ', out, re.M)) != n_fdes or rows != n_fres:
            fails.fail(f'listing {os.path.basename(path)}: FDE/row counts differ from readelf ({n_fdes}/{n_fres})', out)
        for want in (r'^  source      section \.sframe$', r'^  version     1$',
                     r'^  abi         AMD64 little-endian$', r'^  fixed-ra    c-8$',
                     rf'^  fdes        {n_fdes}$', rf'^  fres        {n_fres}$'):
            if not re.search(want, out, re.M):
                fails.fail(f'listing {os.path.basename(path)}: no line /{want}/', out[:800])
        bid = re.search(r'Build ID: ([0-9a-f]+)', run([args.readelf, '-n', path]).stdout.decode())
        if bid and not re.search(rf'^  build-id    {bid.group(1)}$', out, re.M):
            fails.fail(f'listing {os.path.basename(path)}: build ID is not {bid.group(1)}', out[:800])
        print(f'ok: listing {os.path.basename(path)}: {len(fdes)} named functions, '
              f'{n_fdes} FDEs, {rows} rows')

    # -- error cases: one line on stderr naming the file, nothing on stdout, exit 1 --
    text = os.path.join(workdir, 'not-elf.txt')
    with open(text, 'w') as f:
        f.write('this is not an ELF file\n' * 8)
    plain = os.path.join(workdir, 'no-sframe.o')
    r = run(['gcc', '-O2', '-c', os.path.join(workdir, 'lib.c'), '-o', plain])
    if r.returncode != 0:
        fails.fail('build no-sframe.o', r.stderr.decode())
    corrupt = os.path.join(workdir, 'corrupt-num-fdes')
    shutil.copyfile(prog, corrupt)
    off = section_offset(args.readelf, corrupt, '.sframe')
    if off is None:
        fails.fail(f'no .sframe section in {prog}')
    else:
        with open(corrupt, 'r+b') as f:
            f.seek(off + 8)		# sfh_num_fdes
            f.write(b'\xff\xff\xff\x7f')
    missing = os.path.join(workdir, 'does-not-exist')

    for mode in ([], ['--readelf']):
        m = ' '.join(mode) or 'listing'
        expect_error(args.sfprof, mode + [text], text, f'{m}: not ELF', fails)
        expect_error(args.sfprof, mode + [plain], plain, f'{m}: no .sframe', fails, r'no SFrame data')
        expect_error(args.sfprof, mode + [corrupt], corrupt, f'{m}: num_fdes 0x7fffffff', fails,
                     r'cannot decode SFrame data: .*FDEs')
        expect_error(args.sfprof, mode + [missing], missing, f'{m}: missing file', fails,
                     r'No such file')

    # -- no section named .sframe: the listing finds the PT_GNU_SFRAME segment,
    # --readelf refuses (readelf itself would print nothing) --
    renamed = os.path.join(workdir, 'renamed-section')
    r = run(['objcopy', '--rename-section', '.sframe=.sfx', prog, renamed])
    if r.returncode != 0:
        fails.fail('objcopy --rename-section', r.stderr.decode())
    else:
        r = run([args.sfprof, 'sframe', renamed])
        if r.returncode != 0 or not re.search(r'^  source      PT_GNU_SFRAME segment$',
                                              r.stdout.decode(), re.M):
            fails.fail(f'listing of {renamed}: exit {r.returncode}, no "source PT_GNU_SFRAME segment"',
                       r.stdout.decode()[:400] + r.stderr.decode())
        else:
            print('ok: listing renamed-section: from the PT_GNU_SFRAME segment')
        expect_error(args.sfprof, ['--readelf', renamed], renamed, '--readelf: no section named .sframe',
                     fails, r'no section named \.sframe')

    # -- several files, one bad: the others are printed, exit 1 at the end --
    r = run([args.sfprof, 'sframe', '--readelf', prog, corrupt, lib])
    exp = run([args.readelf, '--sframe', prog, lib])
    if r.returncode != 1 or r.stdout != exp.stdout:
        fails.fail(f'--readelf good, corrupt, good: exit {r.returncode}, expected 1 and the '
                   'two good files as readelf prints them',
                   show_diff(exp.stdout, r.stdout, 'readelf', 'sfprof'))
    elif r.stderr.decode().count('\n') != 1 or corrupt not in r.stderr.decode():
        fails.fail('--readelf good, corrupt, good: stderr', r.stderr.decode())
    else:
        print('ok: --readelf good, corrupt, good: the good files printed, exit 1')
    r = run([args.sfprof, 'sframe', prog, text, lib])
    out = r.stdout.decode()
    if r.returncode != 1 or not out.startswith(f'{prog}:\n') or f'\n\n{lib}:\n' not in out:
        fails.fail(f'listing good, bad, good: exit {r.returncode}', out[:400])
    else:
        print('ok: listing good, bad, good: the good files printed, exit 1')

    r = run([args.sfprof, 'sframe', '--help'])
    if r.returncode != 0 or not r.stdout.startswith(b'usage: sfprof sframe'):
        fails.fail('sframe --help', r.stdout.decode() + r.stderr.decode())
    r = run([args.sfprof, 'sframe'])
    if r.returncode != 2 or r.stdout:
        fails.fail(f'sframe without FILE: exit {r.returncode}, expected 2')
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--sfprof', required=True)
    p.add_argument('--workdir', required=True)
    p.add_argument('--readelf', default=os.environ.get('READELF', 'readelf'))
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument('--arch', choices=['x86_64', 'aarch64'])
    g.add_argument('--listing', action='store_true')
    args = p.parse_args()
    args.sfprof = os.path.abspath(args.sfprof)

    if not check_tools(args.readelf):
        return SKIP
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    fails = Failures()
    status = mode_listing(args, args.workdir, fails) if args.listing else \
        mode_arch(args, args.workdir, fails)
    if status == SKIP:
        return SKIP
    if fails.count:
        print(f'{fails.count} failure(s); files are in {args.workdir}')
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
