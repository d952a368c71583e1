#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Self-unwind integration test: build a test program, let it snapshot itself, unwind the snapshots.

One run covers one variant (architecture, program, flags). The program
(tests/progs/chain.c or chain.cc, with libchain.so) records its true call
chain in each snapshot; this driver

  1. compiles the program and libchain.so into WORKDIR at test time,
  2. runs it (under qemu-user for AArch64) to write the snapshots,
  3. checks each snapshot on its own, with readelf as the oracle: the format
     parses, the stack copy starts at sp, and the pc of frame 0 lies in the
     function the chain says,
  4. runs sfu-unwind-snapshot --expect <chain> --expect-source sframe on it:
     every frame up to main (or the thread's start routine) must be found
     through .sframe and symbolize to the expected name; past that (libc,
     which has no .sframe) the tool only has to finish without crashing.

--lang sampler runs tests/progs/sampler.c instead, where frame 0 is any
instruction: SIGPROF samples, or with --step (x86-64) every instruction of
one call, single-stepped with the trap flag. Each sample must unwind through
.sframe to main with its recorded chain, allowing the one or two functions
in front that the shadow stack cannot know about (see check_sample).

--negative instead checks that the checks can fail: a wrong --expect, a
wrong frame source, a truncated snapshot and trailing bytes must all be
rejected.

Exit status 0 pass, 1 fail, 77 skip (missing cross compiler, qemu or
assembler support for --gsframe).
"""

import argparse
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys

SKIP = 77

ARCHES = {
    'x86_64': {
        'cc': 'gcc', 'cxx': 'g++', 'run': [], 'id': 0, 'readelf_machine': 'X86-64',
    },
    'aarch64': {
        'cc': 'aarch64-linux-gnu-gcc', 'cxx': 'aarch64-linux-gnu-g++',
        'run': ['qemu-aarch64', '-L', '/usr/aarch64-linux-gnu'], 'id': 1,
        'readelf_machine': 'AArch64',
    },
}

# Tags each program writes; a missing snapshot is a failure, not a smaller test.
TAGS = {
    'c': ['main', 'mid', 'leaf', 'lib', 'callback', 'callback-deep', 'recursion', 'vla',
          'vla-callee', 'thread-mid', 'thread-leaf', 'noreturn'],
    'c++': ['virtual-leaf', 'method', 'functor', 'cxx-lib', 'cxx-callback', 'template',
            'throwing'],
}
SOURCES = {'c': 'chain.c', 'c++': 'chain.cc', 'sampler': 'sampler.c'}
MODULES = ('prog', 'libchain.so')

# Sampler runs: samples taken, and how many must land in the program or libchain.so.
SAMPLES = 300
MIN_CHECKED = 100
# The functions of sampler.c and libchain.c that push themselves on the shadow stack.
SAMPLER_FUNCS = {'main', 'step_once', 'sample_for_a_while', 'outer', 'middle', 'inner',
                 'with_vla', 'spin', 'sampled_cb', 'chain_apply', 'chain_step'}

# Where frame 0 of each snapshot is: every capture is in the executable but these.
IN_LIBRARY = {'lib', 'cxx-lib'}


class Failure(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def run(cmd, cwd=None, check=True):
    log('$ ' + ' '.join(shlex.quote(c) for c in cmd))
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, errors='replace')
    if p.stdout:
        print(p.stdout, end='' if p.stdout.endswith('\n') else '\n', flush=True)
    if p.returncode < 0:
        raise Failure(f'{cmd[0]} killed by signal {-p.returncode}')
    if check and p.returncode != 0:
        raise Failure(f'{os.path.basename(cmd[0])} exited with {p.returncode}')
    return p


# --- the snapshot format (tests/progs/snapshot.h), parsed independently of the C tool ---

def parse_snapshot(data):
    hdr = struct.Struct('<8sI6Q')
    if len(data) < hdr.size:
        raise Failure('snapshot shorter than its header')
    magic, arch, pc, sp, fp, lr, base, slen = hdr.unpack_from(data)
    if magic != b'SFUSNAP1':
        raise Failure(f'bad magic {magic!r}')
    off = hdr.size

    def take(n, what):
        nonlocal off
        if n > len(data) - off:
            raise Failure(f'{what} runs past the end of the snapshot')
        chunk = data[off:off + n]
        off += n
        return chunk

    stack = take(slen, 'stack')
    (mlen,) = struct.unpack('<Q', take(8, 'maps length'))
    maps = take(mlen, 'maps').decode()
    (clen,) = struct.unpack('<Q', take(8, 'chain length'))
    chain = take(clen, 'chain')
    if off != len(data):
        raise Failure(f'{len(data) - off} trailing bytes')
    if chain and not chain.endswith(b'\0'):
        raise Failure('chain not NUL-terminated')
    names = chain.decode().split('\0')[:-1] if chain else []
    return dict(arch=arch, pc=pc, sp=sp, fp=fp, lr=lr, base=base, stack=stack, maps=maps,
                chain=names)


def parse_maps(text):
    out = []
    for line in text.splitlines():
        f = line.split(None, 5)
        if len(f) < 5:
            raise Failure(f'maps line does not parse: {line!r}')
        start, end = (int(x, 16) for x in f[0].split('-'))
        out.append(dict(start=start, end=end, perms=f[1], offset=int(f[2], 16),
                        path=f[5].strip() if len(f) > 5 else ''))
    return out


# --- readelf as the symbol oracle ---

class ElfOracle:
    def __init__(self, path):
        self.path = path
        out = subprocess.run(['readelf', '-lW', path], stdout=subprocess.PIPE, text=True,
                             check=True).stdout
        self.loads = []
        for m in re.finditer(r'^\s*LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+'
                             r'(0x[0-9a-f]+)\s+(0x[0-9a-f]+)', out, re.M):
            off, vaddr, filesz, _ = (int(x, 16) for x in m.groups())
            self.loads.append((off, vaddr, filesz))
        out = subprocess.run(['readelf', '-sW', path], stdout=subprocess.PIPE, text=True,
                             check=True).stdout
        self.funcs = []
        for line in out.splitlines():
            f = line.split()
            if len(f) >= 8 and f[3] == 'FUNC' and f[6] != 'UND':
                self.funcs.append((int(f[1], 16), int(f[2], 0), f[7]))

    def section(self, name):
        """(start, end) of section @name, or None."""
        if not hasattr(self, 'sections'):
            out = subprocess.run(['readelf', '-SW', self.path], stdout=subprocess.PIPE,
                                 text=True, check=True).stdout
            self.sections = {}
            for m in re.finditer(r'\]\s+(\S+)\s+\S+\s+([0-9a-f]{8,})\s+[0-9a-f]+\s+([0-9a-f]+)',
                                 out):
                self.sections[m.group(1)] = (int(m.group(2), 16),
                                             int(m.group(2), 16) + int(m.group(3), 16))
        return self.sections.get(name)

    def sframe_row(self, vaddr):
        """The row readelf --sframe shows for @vaddr: (cfa_base, cfa_offset, fp, ra), or None."""
        if not hasattr(self, 'sframe'):
            out = subprocess.run(['readelf', '--sframe', self.path], stdout=subprocess.PIPE,
                                 text=True, check=True).stdout
            self.sframe, func = [], None
            for line in out.splitlines():
                m = re.match(r'\s*func idx \[\d+\]: pc = (0x[0-9a-f]+), size = (\d+) bytes', line)
                if m:
                    func = dict(start=int(m.group(1), 16), size=int(m.group(2)), mask=False,
                                rows=[])
                    self.sframe.append(func)
                    continue
                if func and 'STARTPC[m]' in line:
                    func['mask'] = True
                m = re.match(r'\s*([0-9a-f]+)\s+(sp|fp)([+-]\d+)\s+(\S+)\s+(\S+)', line)
                if func and m:
                    func['rows'].append((int(m.group(1), 16), m.group(2), int(m.group(3)),
                                         m.group(4), m.group(5)))
        for func in self.sframe:
            if func['start'] <= vaddr < func['start'] + func['size'] and not func['mask']:
                rows = [r for r in func['rows'] if r[0] <= vaddr]
                return rows[-1][1:] if rows else None
        return None

    def vaddr(self, mapping, addr):
        file_off = addr - mapping['start'] + mapping['offset']
        for off, vaddr, filesz in self.loads:
            if off <= file_off < off + filesz:
                return file_off - off + vaddr
        raise Failure(f'{self.path}: no PT_LOAD maps file offset {file_off:#x}')

    def symbol(self, vaddr):
        names = sorted({n for v, s, n in self.funcs if v <= vaddr < v + max(s, 1)})
        return names


# --- the test steps ---

def compile_variant(args, arch, work):
    cc, cxx = arch['cc'], arch['cxx']
    for tool in (cc, cxx if args.lang == 'c++' else cc, *arch['run'][:1]):
        if not shutil.which(tool):
            log(f'SKIP: {tool} not found')
            sys.exit(SKIP)
    cflags = ['-Wa,--gsframe', '-Wall', '-Wextra', '-pthread', '-I', args.progs] + \
        shlex.split(args.cflags)
    probe = subprocess.run([cc, '-Wa,--gsframe', '-x', 'c', '-c', '-o', os.devnull, '-'],
                           input='int f(void) { return 0; }\n', text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if probe.returncode:
        log(f'SKIP: {cc} -Wa,--gsframe does not assemble:\n{probe.stdout}')
        sys.exit(SKIP)

    pie = ['-fPIE'] if args.pie else ['-fno-pie']
    ldpie = ['-pie'] if args.pie else ['-no-pie']
    src = os.path.join(args.progs, SOURCES[args.lang])
    run([cc, *cflags, '-fPIC', '-shared', '-o', 'libchain.so',
         os.path.join(args.progs, 'libchain.c')], cwd=work)
    run([cc, *cflags, *pie, '-c', '-o', 'snapshot.o', os.path.join(args.progs, 'snapshot.c')],
        cwd=work)
    run([cxx if args.lang == 'c++' else cc, *cflags, *pie, '-c', '-o', 'prog.o', src], cwd=work)
    run([cxx if args.lang == 'c++' else cc, *cflags, *ldpie, '-o', 'prog', 'prog.o',
         'snapshot.o', '-L.', '-lchain', '-Wl,-rpath,$ORIGIN'], cwd=work)
    for binary in MODULES:
        hdr = subprocess.run(['readelf', '-hlW', os.path.join(work, binary)],
                             stdout=subprocess.PIPE, text=True, check=True).stdout
        if 'GNU_SFRAME' not in hdr:
            raise Failure(f'{binary}: no PT_GNU_SFRAME segment: -Wa,--gsframe had no effect')
        if arch['readelf_machine'] not in hdr:
            raise Failure(f'{binary}: not an {arch["readelf_machine"]} ELF file')
        want_type = 'DYN' if binary.endswith('.so') or args.pie else 'EXEC'
        if not re.search(rf'Type:\s+{want_type}', hdr):
            raise Failure(f'{binary}: expected ELF type {want_type}')


def check_snapshot(tag, snap, arch, work, oracles):
    """Checks that need neither libsfunwind nor its unwinder."""
    if snap['arch'] != arch['id']:
        raise Failure(f'{tag}: arch {snap["arch"]}, expected {arch["id"]}')
    if snap['base'] != snap['sp'] or not snap['stack']:
        raise Failure(f'{tag}: the stack copy must start at sp and be non-empty')
    if not snap['chain']:
        raise Failure(f'{tag}: no expected chain recorded')
    maps = parse_maps(snap['maps'])
    stack_map = [m for m in maps if m['start'] <= snap['sp'] < m['end']]
    if not stack_map or snap['sp'] + len(snap['stack']) > stack_map[0]['end']:
        raise Failure(f'{tag}: the stack copy is not inside one mapping')
    if arch['id'] == 0 and snap['lr'] != 0:
        raise Failure(f'{tag}: lr must be 0 on x86-64')

    code = [m for m in maps if m['start'] <= snap['pc'] < m['end']]
    if not code or 'x' not in code[0]['perms']:
        raise Failure(f'{tag}: pc {snap["pc"]:#x} is not in an executable mapping')
    path = code[0]['path']
    want_module = 'libchain.so' if tag in IN_LIBRARY else 'prog'
    if os.path.realpath(path) != os.path.realpath(os.path.join(work, want_module)):
        raise Failure(f'{tag}: pc {snap["pc"]:#x} is in {path}, expected {want_module}')
    if path not in oracles:
        oracles[path] = ElfOracle(path)
    names = oracles[path].symbol(oracles[path].vaddr(code[0], snap['pc']))
    if snap['chain'][0] not in names:
        raise Failure(f'{tag}: readelf puts pc {snap["pc"]:#x} in {names or "no symbol"}, '
                      f'the recorded chain starts with {snap["chain"][0]}')


def unwind_snapshot(args, tag, path, snap):
    chain = ','.join(snap['chain'])
    p = run([args.tool, '--expect', chain, '--expect-source', 'sframe', path], check=False)
    if p.returncode != 0:
        raise Failure(f'{tag}: sfu-unwind-snapshot exited with {p.returncode}')
    if not re.search(r'^stop: ', p.stdout, re.M):
        raise Failure(f'{tag}: no stop reason printed')


def negative(args, path, snap, work):
    """The checks above must be able to fail."""
    wrong = list(snap['chain'])
    wrong[len(wrong) // 2] = 'not_a_frame'
    p = run([args.tool, '--expect', ','.join(wrong), path], check=False)
    if p.returncode != 1 or 'FAIL' not in p.stdout:
        raise Failure(f'a wrong --expect must fail with status 1, got {p.returncode}')

    longer = list(snap['chain']) + ['beyond_main'] * 3
    p = run([args.tool, '--expect', ','.join(longer), path], check=False)
    if p.returncode != 1:
        raise Failure(f'an --expect longer than the stack must fail, got {p.returncode}')

    p = run([args.tool, '--expect', ','.join(snap['chain']), '--expect-source', 'eh_frame',
             path], check=False)
    if p.returncode != 1:
        raise Failure(f'a wrong --expect-source must fail, got {p.returncode}')

    data = open(path, 'rb').read()
    for name, corrupt in (('truncated', data[:len(data) // 2]),
                          ('trailing', data + b'\0'),
                          ('badmagic', b'SFUSNAP0' + data[8:]),
                          ('header-only', data[:60])):
        bad = os.path.join(work, f'{name}.snap')
        with open(bad, 'wb') as f:
            f.write(corrupt)
        p = run([args.tool, '--expect', ','.join(snap['chain']), bad], check=False)
        if p.returncode != 2 or 'not a valid snapshot' not in p.stdout:
            raise Failure(f'{name} snapshot must be rejected with status 2, got {p.returncode}')

    # the independent parser agrees with the tool on what was recorded
    p = run([args.tool, '--print-chain', path])
    if p.stdout.strip() != ','.join(snap['chain']):
        raise Failure('--print-chain disagrees with the Python parser')


FRAME_RE = re.compile(r'^#(\d+) 0x([0-9a-f]+) (pc|ra) (\S+) (\S+?)(?:\+0x([0-9a-f]+))? (\S+)$')


def tool_frames(stdout):
    """[(symbol, source, module)] from the tool's frame lines."""
    frames = []
    for line in stdout.splitlines():
        m = FRAME_RE.match(line)
        if m:
            frames.append((m.group(5), m.group(4), m.group(7)))
    return frames


def check_sample(args, tag, path, snap, work, oracles):
    """A sample may have one function in front of the recorded chain; see sampler.c.

    Returns the frame 0 symbol, or None when the pc is outside the program and
    libchain.so (nothing to start from there; not checked)."""
    maps = parse_maps(snap['maps'])
    code = [m for m in maps if m['start'] <= snap['pc'] < m['end']]
    if not code or os.path.basename(code[0]['path']) not in MODULES or \
            os.path.dirname(os.path.realpath(code[0]['path'])) != work:
        return None
    if not snap['chain'] or snap['chain'][-1] != 'main':
        raise Failure(f'{tag}: recorded chain {snap["chain"]} does not end in main')
    mapping = code[0]
    if mapping['path'] not in oracles:
        oracles[mapping['path']] = ElfOracle(mapping['path'])
    elf = oracles[mapping['path']]
    vaddr = elf.vaddr(mapping, snap['pc'])
    oracle = elf.symbol(vaddr)

    p = subprocess.run([args.tool, path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, errors='replace')
    if p.returncode != 0:
        raise Failure(f'{tag}: sfu-unwind-snapshot exited with {p.returncode}:\n{p.stdout}')
    frames = tool_frames(p.stdout)
    syms = [f[0] for f in frames]
    if not frames or (syms[0] not in oracle and not (syms[0] == '??' and not oracle)):
        raise Failure(f'{tag}: frame 0 is {syms[:1]}, readelf says {oracle or "no symbol"}'
                      f'\n{p.stdout}')
    chain = snap['chain']
    n = len(chain)
    # In front of the recorded chain: at most one instrumented function (not
    # pushed yet, or popped already), and before it, in frame 0 only, code
    # that is not instrumented (a PLT stub the function is calling).
    front = 1 if syms[0] in SAMPLER_FUNCS else 2
    for skip in range(front + 1):
        if syms[skip:skip + n] == chain and \
                all(f[1] == 'sframe' for f in frames[1:skip + n]):
            return syms[0]
    raise Failure(f'{tag}: unwound {syms}, recorded chain {chain} '
                  f'(with at most {front} function(s) in front)\n{p.stdout}')


def check_samples(args, arch, work, written):
    oracles = {}
    failures, outside, where = [], 0, {}
    for tag in written:
        path = os.path.join(work, 'snap', tag + '.snap')
        try:
            snap = parse_snapshot(open(path, 'rb').read())
            if snap['arch'] != arch['id'] or snap['base'] != snap['sp']:
                raise Failure(f'{tag}: bad arch or stack base')
            sym = check_sample(args, tag, path, snap, work, oracles)
            if sym is None:
                outside += 1
            else:
                where[sym] = where.get(sym, 0) + 1
        except Failure as e:
            log(f'FAIL: {e}')
            failures.append(tag)
    checked = len(written) - outside
    log(f'{len(written)} samples, {outside} outside the program and libchain.so, frame 0 in: ' +
        ', '.join(f'{k} {v}' for k, v in sorted(where.items(), key=lambda kv: -kv[1])))
    if failures:
        more = f' and {len(failures) - 20} more' if len(failures) > 20 else ''
        log(f'FAIL: {len(failures)} of {checked} checked samples: {" ".join(failures[:20])}{more}')
        return 1
    if checked < MIN_CHECKED:
        bound = '' if args.step else (f' (sampler.c takes {SAMPLES}, a ms of CPU time apart, '
                                      f'for 20 s of the clock at most)')
        log(f'FAIL: only {checked} samples in the program and libchain.so, need '
            f'{MIN_CHECKED}{bound}')
        return 1
    log(f'PASS: {checked} of {checked} samples unwound to main')
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--tool', required=True, help='sfu-unwind-snapshot')
    ap.add_argument('--progs', required=True, help='tests/progs')
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--arch', choices=sorted(ARCHES), default='x86_64')
    ap.add_argument('--lang', choices=sorted(SOURCES), default='c',
                    help='the program: chain.c, chain.cc or sampler.c')
    ap.add_argument('--cflags', default='-O2 -fomit-frame-pointer')
    ap.add_argument('--pie', action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument('--step', action='store_true',
                    help='sampler: single-step one call instead of sampling (x86-64)')
    ap.add_argument('--negative', action='store_true')
    args = ap.parse_args()
    args.tool = os.path.abspath(args.tool)
    args.progs = os.path.abspath(args.progs)

    arch = ARCHES[args.arch]
    work = os.path.abspath(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, 'snap'))

    failures = []
    try:
        compile_variant(args, arch, work)
        run([*arch['run'], os.path.join(work, 'prog'), os.path.join(work, 'snap'),
             *(['step' if args.step else str(SAMPLES)] if args.lang == 'sampler' else [])],
            cwd=work)
        written = sorted(f[:-5] for f in os.listdir(os.path.join(work, 'snap'))
                         if f.endswith('.snap'))
        if args.lang == 'sampler':
            return check_samples(args, arch, work, written)
        if sorted(TAGS[args.lang]) != written:
            raise Failure(f'snapshots written {written}, expected {sorted(TAGS[args.lang])}')
    except Failure as e:
        log(f'FAIL: {e}')
        return 1

    oracles = {}
    # the negative checks need one snapshot with a chain of several frames
    tags = ['callback-deep' if args.lang == 'c' else 'cxx-callback'] if args.negative \
        else TAGS[args.lang]
    for tag in tags:
        path = os.path.join(work, 'snap', tag + '.snap')
        try:
            snap = parse_snapshot(open(path, 'rb').read())
            check_snapshot(tag, snap, arch, work, oracles)
            if args.negative:
                negative(args, path, snap, work)
                log(f'ok: negative checks on {tag}')
                continue
            unwind_snapshot(args, tag, path, snap)
            log(f'ok: {tag}')
        except Failure as e:
            log(f'FAIL: {e}')
            failures.append(tag)
    if failures:
        log(f'FAIL: {len(failures)} of {len(tags)} snapshots: {" ".join(failures)}')
        return 1
    log('PASS')
    return 0


if __name__ == '__main__':
    sys.exit(main())
