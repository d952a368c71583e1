#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Agreement with the assembler: rows derived from .eh_frame against GNU as's .sframe.

GNU as --gsframe writes .sframe from the same .cfi_* directives it writes
.eh_frame from, so for every function both describe, the rows libsfunwind
derives from .eh_frame must equal the rows as wrote, function by function.
Programs are compiled here (C and C++, -O0/-O1/-O2/-O3/-Os, PIE, non-PIE and
shared, DRAP stack realignment, VLAs, exceptions, hand-written CFI; AArch64
plain, pac-ret and pac-ret+b-key under --arch aarch64) and for each binary

  1. `sfprof sframe F` (the .sframe as wrote, and ld for the .plt) and
     `sfprof sframe --from-eh-frame F` are parsed into functions;
  2. every function of .sframe must be in the derived table with the same
     start, size, FDE type, PAuth key and rows (pc, CFA, RA, FP);
  3. a function only the derived table has must be one of these, the
     differences allowed:
       - code as did not assemble: crt1.o's _start (its CFI says the RA is
         undefined) and the linker's .plt.got and .plt.sec stubs, whose
         .eh_frame ld writes but whose .sframe ld 2.40 does not;
       - a function with a row SFrame version 1 cannot hold, which gas 2.40
         leaves out whole: a CFA on a register other than SP and FP or
         loaded from memory (DRAP), the FP saved through an expression or
         in a register, an RA not at CFA-8 (x86-64), rows marked unusable;
     and in the functions both have:
       - gas 2.40 ends a function with a row equal to the one before it when
         the last directive after the last advance changes neither CFA, RA
         nor FP (`.cfi_offset %rbx` at the end of a noreturn function):
         consecutive equal rows of .sframe are merged before comparing;
       - gas 2.40 on AArch64 writes an FP saved while the RA is still in the
         link register as two data words, which every reader takes for CFA
         and RA: such rows of .sframe say "RA at c-N, FP same" where ours
         say "RA in lr, FP at c-N" (a flexible FDE); the function is counted
         and left out of the readelf comparison;
  4. `sfprof sframe --readelf --from-eh-frame F` must print, for every
     function `readelf --sframe F` prints, the same block of text.

Exit status: 0 pass, 1 fail, 77 skip (no gas --gsframe, no cross compiler).
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys

SKIP = 77

# Stack realignment through DRAP, VLAs, alloca, big frames, noreturn, recursion.
PROG_C = r'''
#include <alloca.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void sink(void *a, void *b)
{
	__asm__ volatile("" :: "r"(a), "r"(b) : "memory");
}

/* x86-64: a VLA and an over-aligned local make gcc realign through DRAP (r10) */
__attribute__((noinline)) int drap(int n)
{
	char vla[n];
	int x[16] __attribute__((aligned(64)));

	memset(vla, 0, n);
	sink(vla, x);
	return vla[n / 2] + x[3];
}

__attribute__((noinline)) int with_alloca(int n)
{
	char *p = alloca(n);

	memset(p, 1, n);
	sink(p, 0);
	return p[n - 1];
}

__attribute__((noinline)) int big_frame(int n)
{
	volatile char b[100000];

	b[n] = 1;
	return b[n / 2];
}

__attribute__((noinline)) int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline, noreturn)) void die(const char *why)
{
	fprintf(stderr, "%s\n", why);
	exit(3);
}

static jmp_buf env;

__attribute__((noinline)) int jumper(int n)
{
	if (setjmp(env))
		return 1;
	if (n > 100)
		longjmp(env, 1);
	return fib(n);
}

int main(int argc, char **argv)
{
	int n = argc + 20;

	if (argc > 5)
		die(argv[0]);
	return drap(n) + with_alloca(n) + big_frame(n) + jumper(n) > 1000;
}
'''

PROG_CXX = r'''
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

struct Shape {
	virtual ~Shape() = default;
	virtual double area() const = 0;
};

struct Square : Shape {
	double s;
	explicit Square(double v) : s(v) {}
	double area() const override { return s * s; }
};

template <typename T> __attribute__((noinline)) T sum(const std::vector<T> &v)
{
	T t{};
	for (const auto &x : v)
		t += x;
	return t;
}

__attribute__((noinline)) int thrower(int n)
{
	if (n > 3)
		throw std::runtime_error("too big: " + std::to_string(n));
	return n;
}

__attribute__((noinline)) int catcher(int n)
{
	try {
		return thrower(n);
	} catch (const std::exception &e) {
		return (int)std::string(e.what()).size();
	}
}

int main(int argc, char **)
{
	std::vector<std::unique_ptr<Shape>> shapes;
	std::map<std::string, int> m;

	for (int i = 0; i < argc + 5; i++) {
		shapes.push_back(std::make_unique<Square>(i));
		m[std::to_string(i)] = catcher(i);
	}
	std::vector<double> areas;
	for (auto &s : shapes)
		areas.push_back(s->area());
	return (int)sum(areas) + m.size() > 1000;
}
'''

# Hand-written CFI: the directives compilers rarely use, one function each.
ASM_X86_64 = r'''
	.text
	.globl	remember
	.type	remember, @function
remember:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	testq	%rdi, %rdi
	je	1f
	.cfi_remember_state
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	ret
1:
	.cfi_restore_state
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	.cfi_restore %rbp
	ret
	.cfi_endproc
	.size	remember, .-remember

	.globl	adjust
	.type	adjust, @function
adjust:
	.cfi_startproc
	subq	$24, %rsp
	.cfi_adjust_cfa_offset 24
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbx, 0
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	.cfi_same_value %rbx
	addq	$24, %rsp
	.cfi_adjust_cfa_offset -24
	ret
	.cfi_endproc
	.size	adjust, .-adjust

	.globl	saves_fp_in_reg
	.type	saves_fp_in_reg, @function
saves_fp_in_reg:
	.cfi_startproc
	movq	%rbp, %rax
	.cfi_register %rbp, %rax
	movq	%rax, %rbp
	.cfi_restore %rbp
	ret
	.cfi_endproc
	.size	saves_fp_in_reg, .-saves_fp_in_reg
'''

ASM_AARCH64 = r'''
	.text
	.globl	remember
	.type	remember, %function
remember:
	.cfi_startproc
	stp	x29, x30, [sp, -32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	mov	x29, sp
	cbz	x0, 1f
	.cfi_remember_state
	ldp	x29, x30, [sp], 32
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	ret
1:
	.cfi_restore_state
	ldp	x29, x30, [sp], 32
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	remember, .-remember

	.globl	fp_only
	.type	fp_only, %function
fp_only:
	.cfi_startproc
	str	x29, [sp, -16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	ldr	x29, [sp], 16
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	fp_only, .-fp_only
'''

MAIN_FOR_ASM = r'''
long remember(long);
int main(int argc, char **argv) { (void)argv; return (int)remember(argc) == 12345; }
'''

ARCHES = {
    'x86_64': dict(cc='gcc', cxx='g++', asm=ASM_X86_64, flags=[
        ['-O0'], ['-O1'], ['-O2'], ['-O3'], ['-Os'],
        ['-O2', '-fno-omit-frame-pointer'], ['-O2', '-fomit-frame-pointer'],
    ]),
    'aarch64': dict(cc='aarch64-linux-gnu-gcc', cxx='aarch64-linux-gnu-g++', asm=ASM_AARCH64,
                    flags=[
        ['-O0'], ['-O2'], ['-Os'],
        ['-O2', '-mbranch-protection=pac-ret'],
        ['-O2', '-mbranch-protection=pac-ret+leaf'],
        ['-O2', '-mbranch-protection=pac-ret+b-key'],
    ]),
}

# The functions of the C runtime objects as did not assemble.
CRT_FUNCS = {'_start', '_init', '_fini', '_dl_relocate_static_pie',
             # AArch64's crtbegin.o is built with unwind tables
             'deregister_tm_clones', 'register_tm_clones', '__do_global_dtors_aux',
             'frame_dummy', 'call_weak_fn'}


class Failure(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def run(cmd, cwd=None, check=True):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors='replace')
    if check and p.returncode != 0:
        raise Failure(f'{" ".join(shlex.quote(c) for c in cmd)} exited with {p.returncode}:\n'
                      f'{p.stderr}{p.stdout[-2000:]}')
    return p


FDE_RE = re.compile(r'^fde\s+\d+\s+0x([0-9a-f]+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(.*)$')
ROW_RE = re.compile(r'^    0x([0-9a-f]+)\s+(\S+)\s+(undefined \(outermost\)|\S+)\s+(\S+)(\s+unusable)?$')


def parse_listing(text):
    """{start: dict(size, type, key, signal, flex, name, rows[(pc, cfa, ra, fp, unusable)])}"""
    funcs, cur = {}, None
    for line in text.splitlines():
        m = FDE_RE.match(line)
        if m:
            start = int(m.group(1), 16)
            cur = dict(size=int(m.group(2)), type=m.group(3), key=m.group(4),
                       signal=m.group(5) != '-', flex=m.group(6) != '-', name=m.group(7),
                       rows=[])
            if start in funcs:
                raise Failure(f'two functions start at {start:#x}')
            funcs[start] = cur
            continue
        m = ROW_RE.match(line)
        if m and cur is not None:
            cur['rows'].append((int(m.group(1), 16), m.group(2), m.group(3), m.group(4),
                                bool(m.group(5))))
    return funcs


def sections(readelf, path):
    """[(name, start, end)] of the allocated sections."""
    out = run([readelf, '-SW', path]).stdout
    secs = []
    for m in re.finditer(r'\]\s+(\S+)\s+\S+\s+([0-9a-f]{8,})\s+[0-9a-f]+\s+([0-9a-f]+)', out):
        start, size = int(m.group(2), 16), int(m.group(3), 16)
        if start:
            secs.append((m.group(1), start, start + size))
    return secs


def section_of(secs, addr):
    for name, start, end in secs:
        if start <= addr < end:
            return name
    return '?'


def v1_cannot_hold(arch, fn):
    """Why SFrame version 1 (gas 2.40) cannot hold this derived function, or None."""
    for pc, cfa, ra, fp, unusable in fn['rows']:
        if unusable:
            return 'an unusable row'
        if not re.fullmatch(r'(sp|fp)[+-]\d+', cfa):
            return f'CFA {cfa}'
        if ra.startswith('undefined'):
            return 'an outermost-frame row'
        if fp != 'same' and not re.fullmatch(r'c[+-]\d+', fp):
            return f'FP {fp}'
        if arch == 'x86_64' and ra != 'c-8':
            return f'RA {ra}'
        if arch == 'aarch64':
            ra_plain = ra.replace('[s]', '')
            if ra_plain not in ('lr',) and not re.fullmatch(r'c[+-]\d+', ra_plain):
                return f'RA {ra}'
            if ra_plain == 'lr' and fp != 'same':
                return 'an FP saved while the RA is in the link register'
    if fn['signal']:
        return 'a signal trampoline'
    return None


def merge_equal_rows(rows):
    """Drop rows equal to the one before but for their pc (gas 2.40's redundant last FRE)."""
    out = []
    for r in rows:
        if not out or out[-1][1:] != r[1:]:
            out.append(r)
    return out


def gas_fp_as_ra(row):
    """The row as gas 2.40 writes it for AArch64 when the FP is saved and the RA is not:
    with two data words, the second of which readers take for the RA's."""
    pc, cfa, ra, fp = row
    if ra == 'lr' and fp != 'same':
        return (pc, cfa, fp, 'same')
    return row


def compare_listings(arch, path, gas, derived, secs):
    """Failures as strings; the counts of compared and allowed functions; the starts
    of functions where .sframe is wrong (gas_fp_as_ra())."""
    problems, gas_bugs = [], set()
    for start, g in sorted(gas.items()):
        d = derived.get(start)
        if d is None:
            problems.append(f'{g["name"]} at {start:#x}: in .sframe, not derived from .eh_frame')
            continue
        for field in ('size', 'type', 'key'):
            if g[field] != d[field]:
                problems.append(f'{g["name"]} at {start:#x}: {field} {g[field]} in .sframe, '
                                f'{d[field]} derived')
        grows = merge_equal_rows([r[:4] for r in g['rows']])
        drows = [r[:4] for r in d['rows']]
        if grows != drows and arch == 'aarch64' and grows == [gas_fp_as_ra(r) for r in drows]:
            gas_bugs.add(start)
            continue
        if grows != drows or any(r[4] for r in d['rows']):
            lines = [f'{g["name"]} at {start:#x}: rows differ', '  .sframe:']
            lines += [f'    {pc:#x} {cfa} {ra} {fp}' for pc, cfa, ra, fp in grows]
            lines.append('  derived:')
            lines += [f'    {pc:#x} {cfa} {ra} {fp}{" unusable" if u else ""}'
                      for pc, cfa, ra, fp, u in d['rows']]
            problems.append('\n'.join(lines))
    allowed = {}
    for start, d in sorted(derived.items()):
        if start in gas:
            continue
        sec = section_of(secs, start)
        name = d['name'].split('+')[0]
        why = None
        if sec in ('.plt.got', '.plt.sec', '.plt'):
            why = f'linker stub in {sec}'
        elif name in CRT_FUNCS:
            why = f'C runtime {name}'
        else:
            why = v1_cannot_hold(arch, d)
        if why is None:
            problems.append(f'{d["name"]} at {start:#x} ({sec}): derived from .eh_frame, '
                            f'missing from .sframe with no allowed reason')
        else:
            allowed[why] = allowed.get(why, 0) + 1
    if gas_bugs:
        allowed['gas 2.40 wrote the FP as the RA'] = len(gas_bugs)
    return problems, len(gas), allowed, gas_bugs


def readelf_blocks(text):
    """{pc: block text} of readelf --sframe's function index, equal rows merged."""
    blocks = {}
    for chunk in text.split('\n\n'):
        m = re.search(r'func idx \[\d+\]: pc = (0x[0-9a-f]+),(.*)', chunk, re.S)
        if not m:
            continue
        lines, prev = [], None
        for line in m.group(2).rstrip().split('\n'):
            row = re.match(r'\s+[0-9a-f]{16}(\s.*)$', line)
            if row and row.group(1).rstrip() == prev:
                continue
            prev = row.group(1).rstrip() if row else None
            lines.append(line.rstrip())
        blocks[int(m.group(1), 16)] = '\n'.join(lines)
    return blocks


def compare_readelf(readelf, sfprof, path, skip):
    want = run([readelf, '--sframe', path]).stdout
    got = run([sfprof, 'sframe', '--readelf', '--from-eh-frame', path]).stdout
    wb, gb = readelf_blocks(want), readelf_blocks(got)
    problems = []
    for pc, block in sorted(wb.items()):
        if pc in skip:
            continue
        if pc not in gb:
            problems.append(f'readelf: function at {pc:#x} missing from the derived table')
        elif gb[pc] != block:
            problems.append(f'readelf: function at {pc:#x} differs:\n--- readelf\n{block}\n'
                            f'--- sfprof --from-eh-frame\n{gb[pc]}')
    return problems, len(wb)


def build(arch, cfg, work, progs, flags, idx):
    """Compile the programs of one flag set; returns the binaries to check."""
    cc, cxx = cfg['cc'], cfg['cxx']
    tag = f'{idx}-' + '_'.join(f.lstrip('-').replace('=', '-') for f in flags)
    d = os.path.join(work, tag)
    os.makedirs(d, exist_ok=True)
    base = ['-Wa,--gsframe', '-g0', '-I', progs] + flags
    with open(os.path.join(d, 'prog.c'), 'w') as f:
        f.write(PROG_C)
    with open(os.path.join(d, 'prog.cc'), 'w') as f:
        f.write(PROG_CXX)
    with open(os.path.join(d, 'cfi.s'), 'w') as f:
        f.write(cfg['asm'])
    with open(os.path.join(d, 'asm_main.c'), 'w') as f:
        f.write(MAIN_FOR_ASM)
    out = []

    def link(name, cmd):
        run(cmd, cwd=d)
        out.append(os.path.join(d, name))

    link('prog-pie', [cc, *base, '-fPIE', '-pie', '-o', 'prog-pie', 'prog.c'])
    link('prog-nopie', [cc, *base, '-fno-pie', '-no-pie', '-o', 'prog-nopie', 'prog.c'])
    link('libchain.so', [cc, *base, '-fPIC', '-shared', '-o', 'libchain.so',
                         os.path.join(progs, 'libchain.c')])
    run([cc, *base, '-c', '-o', 'snapshot.o', os.path.join(progs, 'snapshot.c')], cwd=d)
    link('chain', [cc, *base, '-pthread', '-o', 'chain', os.path.join(progs, 'chain.c'),
                   'snapshot.o', '-L.', '-lchain', '-Wl,-rpath,$ORIGIN'])
    link('chain-cxx', [cxx, *base, '-pthread', '-o', 'chain-cxx',
                       os.path.join(progs, 'chain.cc'), 'snapshot.o',
                       '-L.', '-lchain', '-Wl,-rpath,$ORIGIN'])
    link('prog-cxx', [cxx, *base, '-o', 'prog-cxx', 'prog.cc'])
    link('asm', [cc, *base, '-o', 'asm', 'asm_main.c', 'cfi.s'])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--progs', required=True, help='tests/progs')
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--arch', choices=sorted(ARCHES), default='x86_64')
    args = ap.parse_args()
    sfprof = os.path.abspath(args.sfprof)
    progs = os.path.abspath(args.progs)
    cfg = ARCHES[args.arch]
    work = os.path.abspath(args.workdir)
    readelf = 'readelf'

    for tool in (cfg['cc'], cfg['cxx']):
        if not shutil.which(tool):
            log(f'SKIP: {tool} not found')
            return SKIP
    probe = subprocess.run([cfg['cc'], '-Wa,--gsframe', '-x', 'c', '-c', '-o', os.devnull, '-'],
                           input='int f(void) { return 0; }\n', text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if probe.returncode:
        log(f'SKIP: {cfg["cc"]} -Wa,--gsframe does not assemble:\n{probe.stdout}')
        return SKIP
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    failures, compared, readelf_compared, allowed_total = [], 0, 0, {}
    try:
        binaries = []
        for i, flags in enumerate(cfg['flags']):
            binaries += build(args.arch, cfg, work, progs, flags, i)
    except Failure as e:
        log(f'FAIL: {e}')
        return 1
    for path in binaries:
        rel = os.path.relpath(path, work)
        try:
            gas = parse_listing(run([sfprof, 'sframe', path]).stdout)
            derived = parse_listing(run([sfprof, 'sframe', '--from-eh-frame', path]).stdout)
            if not gas or not derived:
                raise Failure(f'{rel}: empty listing (.sframe {len(gas)}, derived {len(derived)})')
            problems, n, allowed, gas_bugs = compare_listings(args.arch, path, gas, derived,
                                                              sections(readelf, path))
            rproblems, rn = compare_readelf(readelf, sfprof, path, gas_bugs)
            problems += rproblems
            compared += n
            readelf_compared += rn
            for k, v in allowed.items():
                allowed_total[k] = allowed_total.get(k, 0) + v
            if problems:
                for p in problems[:10]:
                    log(f'FAIL: {rel}: {p}')
                if len(problems) > 10:
                    log(f'FAIL: {rel}: ... and {len(problems) - 10} more')
                failures.append(rel)
            else:
                log(f'ok: {rel}: {n} functions equal, {sum(allowed.values())} only derived')
        except Failure as e:
            log(f'FAIL: {rel}: {e}')
            failures.append(rel)
    log('derived-only functions by reason: ' +
        ', '.join(f'{k}: {v}' for k, v in sorted(allowed_total.items())))
    if failures:
        log(f'FAIL: {len(failures)} of {len(binaries)} binaries: {" ".join(failures)}')
        return 1
    log(f'PASS: {len(binaries)} binaries, {compared} functions equal to .sframe, '
        f'{readelf_compared} readelf blocks identical')
    return 0


if __name__ == '__main__':
    sys.exit(main())
