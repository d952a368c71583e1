#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`sfprof report` and `sfprof script` on real recordings, checked against independent oracles.

Each --case records real programs (tests/progs, compiled at test time into
WORKDIR as record_test.py compiles them) with `sfprof record`, and compares
what report and script print with what profile_oracle.py computes from
`sfprof dump` with readelf, nm and /proc/kallsyms:

  chains      record_chains (known chains, four threads, a shared library):
              report's self share of every hot leaf and of every frame-0
              symbol above 1% equals the oracle's (a PLT stub named as
              objdump -d labels it, NAME@plt); the header's totals are
              the dump's; --sort pid / comm,pid,dso,sym; --children equals
              the oracle's share of samples with the function anywhere in
              the stack, once per sample (recurse, 40 deep, is not counted
              40 times); script prints one block per sample in perf script's
              layout whose frames name what the oracle names, offset as it
              does (a return address at address - 1, perf's _start+0x7); script folded
              by stackcollapse.py (FlameGraph's stackcollapse-perf.pl rules)
              gives the stacks of `sfprof export --format collapsed` when that
              command exists, else those of the oracle's own fold.
  cxx         a C++ program: names demangled as c++filt demangles nm's,
              ns::Klass<int>::spin(int) the hot leaf, ns::outer(int) and main
              near 100% children.
  kernel      a syscall-heavy program: [k] rows equal the oracle's kernel
              leaves (kallsyms).
  plt         a hot loop calling strlen and labs through the program's PLT
              (-fno-builtin): frames in the stubs named NAME@plt as objdump
              -d labels them, in report's self shares, script and its fold.
  missing     the recorded binary renamed away: its frames are shown as
              name+0xOFFSET (in script once, with no offset after it), the
              offsets fall in the oracle's hot function (through the renamed
              file), nothing crashes.
  debugfile   a stripped binary whose debug file is found by build ID under
              --debug-file-directory DIR (DIR/.build-id/xx/rest.debug), also
              with the binary gone; a debug file with another build ID at
              that path is not used.
  damaged     a cut profile and one with a damaged block: report and script
              still print what was recovered, with the reader's notice on
              stderr (exit status 1 for the damaged one, 0 for the cut one);
              bad input files and bad options fail cleanly.

Checks are also run with a deliberately wrong expectation and must fail then.
Exit status 0 pass, 1 fail, 77 skip (not root, no BTF, no gas --gsframe).
"""

import bisect
import os
import re
import secrets
import shutil
import subprocess
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_oracle  # noqa: E402
import record_test as rt  # noqa: E402
import stackcollapse  # noqa: E402
from record_test import Failure, expect, log, must_fail, raise_fails  # noqa: E402

SELF_TOLERANCE = 0.5        # percentage points between report and oracle
MIN_SHARE = 1.0             # rows checked against the oracle: at least this share (%)


# --- running sfprof ---
# script and collapsed are compared with the dump's frames named by nm and readelf,
# which know nothing of inlining: they run with --no-inline (inlined frames are
# checked against addr2line -i in inline_test.py)

def sfprof(ctx, args, check=True, quiet=True):
    cmd = [ctx.sfprof, *args]
    log('$ ' + rt.quote(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors='replace', timeout=300)
    if not quiet and p.stdout.strip():
        log(p.stdout.rstrip('\n'))
    if p.stderr.strip():
        log(p.stderr.rstrip('\n'))
    if check and p.returncode != 0:
        raise Failure(f'sfprof {args[0]} exited with {p.returncode}')
    return p


def load(ctx, path):
    """The oracle's profile, where a sample taken after its process's exit record (the
    kernel samples a task to its very end: exit_mmap) keeps the image that exited, as
    the format has it: only a process record starts a new image."""
    prof = ctx.load(path)
    images = {}
    for s in prof.samples:
        if s.process:
            images[s.pid] = s.process
        elif s.pid in images and images[s.pid].exited:
            s.process = images[s.pid]
            s.nmaps = len(s.process.mappings)
    return prof


def record(ctx, cmd, out):
    p = ctx.record(['--', *cmd], out, timeout=120)
    if p.returncode != 0:
        raise Failure(f'sfprof record exited with {p.returncode}')


# --- parsing report ---

class Report:
    def __init__(self, text):
        self.text = text
        self.header = {}
        self.columns = []       # titles
        self.rows = []          # {title: text}, with 'Self' and maybe 'Children' as floats
        lines = text.splitlines()
        titles = dots = None
        for i, line in enumerate(lines):
            if line.startswith('# ') and i + 1 < len(lines) and \
                    re.match(r'^# \.+(  \.+)*$', lines[i + 1]):
                titles, dots = line, lines[i + 1]
                break
            m = re.match(r'^# ([A-Za-z ().]+): (.*)$', line)
            if m:
                self.header[m.group(1)] = m.group(2)
        if titles is None:
            raise Failure('report: no column header line')
        spans = [(m.start(), m.end()) for m in re.finditer(r'\.+', dots)]
        names = [titles[a:b if k + 1 < len(spans) else None].strip()
                 for k, (a, b) in enumerate(spans)]
        if names[0] == 'Children':
            names[1] = 'Self'
        elif names[0] == 'Overhead':
            names[0] = 'Self'
        self.columns = names
        for line in lines[i + 3:]:
            if not line.strip():
                continue
            row = {}
            for k, (a, b) in enumerate(spans):
                cell = line[a:b if k + 1 < len(spans) else None].strip()
                if names[k] in ('Self', 'Children'):
                    if not cell.endswith('%'):
                        raise Failure(f'report: row does not parse: {line!r}')
                    cell = float(cell[:-1])
                row[names[k]] = cell
            self.rows.append(row)

    def find(self, **want):
        """Rows whose columns equal @want (keys: Command, dso, sym, pid)."""
        keys = {'dso': 'Shared Object', 'sym': 'Symbol', 'comm': 'Command',
                'pid': 'Pid:Command'}
        out = []
        for r in self.rows:
            if all((r.get(keys[k], '').split(':')[0].strip() == str(v)) if k == 'pid'
                   else r.get(keys[k]) == v for k, v in want.items()):
                out.append(r)
        return out

    def share(self, col='Self', **want):
        rows = self.find(**want)
        return sum(r[col] for r in rows) if rows else None


def report(ctx, path, *extra):
    p = sfprof(ctx, ['report', '-i', path, *extra])
    return Report(p.stdout), p


# --- the oracle's view of a sample ---

class FuncSymbols:
    """The function symbols of an ELF file as readelf -sW lists them (.symtab, else
    .dynsym), sized or not: for the oracle's second rule. nm's sized symbols name
    an address first; where none holds it, a function symbol of size 0 before it
    (crtstuff's __do_global_dtors_aux) runs up to the next function symbol or the
    end of its own section, whichever comes first (as perf's symbols__fixup_end:
    _init, of size 0 in .init, does not name the PLT stubs after it)."""

    _SYM = re.compile(r'^\s*\d+:\s+([0-9a-f]+)\s+(\d+)\s+I?FUNC\s+\S+\s+\S+\s+(\d+)\s+(\S+)')
    _SEC = re.compile(r'^\s*\[\s*(\d+)\]\s+\S+\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)')
    _cache = {}

    def __init__(self, path):
        tables, cur, secs = {}, None, {}
        out = subprocess.run(['readelf', '-SsW', path], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
        for line in out.splitlines():
            m = self._SEC.match(line)
            if m:
                secs[int(m.group(1))] = int(m.group(2), 16) + int(m.group(3), 16)
                continue
            m = re.match(r"^Symbol table '(\S+)'", line)
            if m:
                cur = tables.setdefault(m.group(1), [])
                continue
            m = self._SYM.match(line)
            if m and cur is not None and int(m.group(1), 16):
                cur.append((int(m.group(1), 16), int(m.group(2)), m.group(4).split('@')[0],
                            secs.get(int(m.group(3)), 0)))
        syms = sorted(tables.get('.symtab') or tables.get('.dynsym') or [])
        self.starts = [a for a, _, _, _ in syms]
        self.syms = syms

    @classmethod
    def of(cls, path):
        if path not in cls._cache:
            cls._cache[path] = cls(path)
        return cls._cache[path]

    def zero_size_at(self, vaddr):
        """(start, name) of the function symbol of size 0 holding @vaddr, or None."""
        i = bisect.bisect_right(self.starts, vaddr) - 1
        if i < 0 or self.syms[i][1] != 0 or vaddr >= self.syms[i][3]:
            return None
        return self.syms[i][0], self.syms[i][2]

    def zero_size(self, vaddr):
        at = self.zero_size_at(vaddr)
        return at[1] if at else None


class PltLabels:
    """The PLT stubs of an ELF file as `objdump -d -C` labels them, <NAME@plt>, in
    .plt, .plt.sec and .plt.got: for the oracle's third rule. A stub runs up to the
    next label of its section or the section's end; labels not of a stub (objdump's
    <*ABS*+0x9f550@plt-0x10> for a section's start, <.plt>) name nothing."""

    _LABEL = re.compile(r'^([0-9a-f]+) <(.*)>:$')
    _cache = {}

    def __init__(self, path):
        self.stubs = []     # (start, end, name) sorted; name None where no stub is
        sec, end = None, 0
        ends = {}
        for line in subprocess.run(['readelf', '-SW', path], stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True).stdout.splitlines():
            m = re.match(r'^\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+'
                         r'([0-9a-f]+)', line)
            if m:
                ends[m.group(1)] = int(m.group(2), 16) + int(m.group(3), 16)
        out = subprocess.run(['objdump', '-d', '-C', path], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
        for line in out.splitlines():
            m = re.match(r'^Disassembly of section (\S+):$', line)
            if m:
                sec = m.group(1) if m.group(1) in ('.plt', '.plt.sec', '.plt.got') else None
                end = ends.get(sec, 0)
                continue
            m = self._LABEL.match(line.rstrip())
            if sec and m:
                name = m.group(2) if m.group(2).endswith('@plt') else None
                if self.stubs and self.stubs[-1][1] > int(m.group(1), 16):
                    self.stubs[-1] = (self.stubs[-1][0], int(m.group(1), 16), self.stubs[-1][2])
                self.stubs.append((int(m.group(1), 16), end, name))
        self.starts = [a for a, _, _ in self.stubs]

    @classmethod
    def of(cls, path):
        if path not in cls._cache:
            cls._cache[path] = cls(path)
        return cls._cache[path]

    def stub_at(self, vaddr):
        """(start, name) of the stub holding @vaddr, or None."""
        i = bisect.bisect_right(self.starts, vaddr) - 1
        if i < 0 or vaddr >= self.stubs[i][1] or not self.stubs[i][2]:
            return None
        return self.stubs[i][0], self.stubs[i][2]


def oracle_symbol(ctx, f):
    """(start, name) of user Frame @f as the oracle names it: nm's sized symbol, else
    FuncSymbols' rule, else objdump's PLT label; None when none names it."""
    if f.vaddr is None or not f.mapping or not f.mapping.module:
        return None
    elf = ctx.syms.elf(f.mapping.module)
    if not elf:
        return None
    look = f.vaddr      # already at address - 1 for a return address
    sized = elf.symbol_at(look)
    if sized:
        return sized[0], sized[2]
    return FuncSymbols.of(elf.path).zero_size_at(look) or PltLabels.of(elf.path).stub_at(look)


def oracle_name(ctx, f):
    """The oracle's name of user Frame @f (oracle_symbol())."""
    if f.symbol or f.vaddr is None or not f.mapping or not f.mapping.module:
        return f.symbol
    at = oracle_symbol(ctx, f)
    return at[1] if at else None

def frame0(ctx, ksyms, s):
    """(dso, '[k] name' | '[.] name' | None) of the innermost frame, as the oracle names it."""
    if s.kstack and s.kstack.entries:
        return '[kernel.kallsyms]', f'[k] {ksyms.frames(s.kstack)[0]}'
    frames = ctx.syms.user_frames(s)
    if not frames:
        return None, None
    f = frames[0]
    name = oracle_name(ctx, f)
    return (os.path.basename(f.module) if f.module else None, f'[.] {name}' if name else None)


def oracle_self(ctx, ksyms, samples):
    """Counter {(dso, sym): weight} of frame 0, and the total weight."""
    out = Counter()
    for s in samples:
        out[frame0(ctx, ksyms, s)] += s.weight
    return out, sum(s.weight for s in samples)


def oracle_children(ctx, samples, modules):
    """Counter {symbol: weight of samples with it among their user frames in @modules}."""
    out = Counter()
    for s in samples:
        names = {f.symbol for f in ctx.syms.user_frames(s) if f.symbol and f.module in modules}
        for n in names:
            out[n] += s.weight
    return out


def check_self(ctx, rep, prof, ksyms, what, comm=None, min_share=MIN_SHARE, quiet=False):
    """Every frame-0 (dso, symbol) the oracle names with >= @min_share of the weight
    has the same self share in @rep, within SELF_TOLERANCE."""
    fails = []
    counts, total = oracle_self(ctx, ksyms, prof.samples)
    for (dso, sym), w in counts.most_common():
        pct = 100.0 * w / total
        if pct < min_share:
            break
        if dso is None or sym is None:
            continue        # unnamed by the oracle: checked elsewhere
        want = {'dso': dso, 'sym': sym}
        if comm:
            want['comm'] = comm
        got = rep.share(**want)
        if not quiet:
            log(f'{what}: {dso} {sym}: report {got}%, oracle {pct:.2f}%')
        expect(got is not None and abs(got - pct) <= SELF_TOLERANCE, fails,
               f'{what}: {dso} {sym}: report self {got}%, oracle {pct:.2f}%')
    return fails


def check_header(rep, prof, what):
    fails = []
    h = rep.header
    n = len(prof.samples)
    expect(h.get('Samples') == f"{n}  of event 'cpu-clock'", fails,
           f'{what}: header Samples {h.get("Samples")!r}, want {n}')
    expect(h.get('Event count (approx.)') == str(sum(s.weight for s in prof.samples)), fails,
           f'{what}: header Event count {h.get("Event count (approx.)")!r}')
    expect(h.get('Total Lost Samples') == str(prof.lost), fails,
           f'{what}: header lost {h.get("Total Lost Samples")!r}, want {prof.lost}')
    pids = len({s.pid for s in prof.samples})
    expect(h.get('Processes') == str(pids), fails,
           f'{what}: header Processes {h.get("Processes")!r}, want {pids}')
    if prof.samples:
        times = [s.time for s in prof.samples]
        secs = (max(times) - min(times)) / 1e9
        m = re.match(r'^([\d.]+) s \(first to last sample\)', h.get('Duration', ''))
        expect(m and abs(float(m.group(1)) - secs) < 0.0015, fails,
               f'{what}: header Duration {h.get("Duration")!r}, want {secs:.3f} s')
    trunc = sum(1 for s in prof.samples if s.ustack and s.ustack.truncated)
    line = h.get('Truncated stacks')
    if trunc:
        expect(line and line.startswith(f'{trunc} samples '), fails,
               f'{what}: header Truncated stacks {line!r}, want {trunc} samples')
    else:
        expect(line is None, fails, f'{what}: a Truncated stacks line without truncated stacks')
    return fails


# --- parsing script ---

_SCRIPT_EVENT = re.compile(r'^(\S.*?) +(\d+)/(\d+) +\[(\d{3,})\] +(\d+)\.(\d{6}): +(\d+) '
                           r'cpu-clock: $')
_SCRIPT_FRAME = re.compile(r'^\t {0,15}([0-9a-f]{1,16}) (.+)\+0x([0-9a-f]+) \((\S+)\)$')
_SCRIPT_OMIT = re.compile(r'^\t {15}0 \[(\d+) frames omitted\] \(\[omitted\]\)$')
# in place of the user stack of a sample taken inside execve (profile_oracle.EXEC_OLD_IMAGE)
_SCRIPT_OLD_IMAGE = re.compile(r'^\t {15}0 \[execve: old image\] \(\[execve\]\)$')
OLD_IMAGE_FRAME = (0, profile_oracle.EXEC_OLD_IMAGE, 0, profile_oracle.EXEC_OLD_IMAGE_DSO)


class ScriptSample:
    def __init__(self, comm, pid, tid, cpu, usecs, weight):
        self.comm, self.pid, self.tid, self.cpu = comm, pid, tid, cpu
        self.usecs, self.weight = usecs, weight
        self.frames = []        # (addr, name, offset, module) or ('omit', count)


def parse_script(text):
    out, cur = [], None
    for n, line in enumerate(text.split('\n'), 1):
        if cur is None:
            if line == '' and n == len(text.split('\n')):
                break
            m = _SCRIPT_EVENT.match(line)
            if not m:
                raise Failure(f'script line {n}: not a sample header: {line!r}')
            cur = ScriptSample(m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)),
                               int(m.group(5)) * 1000000 + int(m.group(6)), int(m.group(7)))
            continue
        if line == '':
            out.append(cur)
            cur = None
            continue
        m = _SCRIPT_OMIT.match(line)
        if m:
            cur.frames.append(('omit', int(m.group(1))))
            continue
        if _SCRIPT_OLD_IMAGE.match(line):
            cur.frames.append(OLD_IMAGE_FRAME)
            continue
        m = _SCRIPT_FRAME.match(line)
        if not m:
            raise Failure(f'script line {n}: not a frame line: {line!r}')
        cur.frames.append((int(m.group(1), 16), m.group(2), int(m.group(3), 16), m.group(4)))
    if cur is not None:
        raise Failure('script: the last sample is not followed by a blank line')
    return out


def check_script(ctx, ksyms, prof, samples, modules, what):
    """Each script block against the oracle's sample: header fields, frame count,
    names of the frames in @modules and of kernel frames."""
    fails = []
    expect(len(samples) == len(prof.samples), fails,
           f'{what}: {len(samples)} blocks for {len(prof.samples)} samples')
    mism = Counter()
    unnamed = 0
    for sc, s in zip(samples, prof.samples):
        comm = s.comm or (s.process.comm if s.process else None)
        head = (sc.pid, sc.tid, sc.cpu, sc.usecs, sc.weight)
        want = (s.pid, s.tid, s.cpu, s.time // 1000, s.weight)
        if head != want:
            mism[f'header {head} != {want}'] += 1
        if comm and sc.comm != comm:
            mism[f'comm {sc.comm!r} != {comm!r}'] += 1
        kern = [(k, v) for k, v in s.kstack.entries] if s.kstack else []
        user = [(k, v) for k, v in s.ustack.entries] if s.ustack else []
        knames = ksyms.frames(s.kstack) if s.kstack else []
        ufr = ctx.syms.user_frames(s)
        expected = [('k', e, knames.pop(0) if e[0] != 'omit' else None) for e in kern] + \
            [('u', e, ufr.pop(0) if e[0] != 'omit' else None) for e in user]
        if len(expected) != len(sc.frames):
            mism[f'{len(sc.frames)} frames, oracle {len(expected)}'] += 1
            continue
        for (space, (kind, value), name), got in zip(expected, sc.frames):
            if kind == 'omit':
                if got != ('omit', value):
                    mism[f'omit {value}: {got}'] += 1
                continue
            if kind == 'old-image':
                if got != OLD_IMAGE_FRAME:
                    mism[f'{got} for the frame of an old image'] += 1
                continue
            if got[0] == 'omit':
                mism['an omit line for a frame'] += 1
                continue
            if got == OLD_IMAGE_FRAME:
                mism['the frame of an old image for a frame'] += 1
                continue
            addr, sym, off, mod = got
            if space == 'k':
                if mod != '[kernel.kallsyms]' or addr != value or (name and sym != name):
                    mism[f'kernel frame {value:#x}: {sym} ({mod}), oracle {name}'] += 1
            elif name.module in modules and oracle_name(ctx, name) is None:
                unnamed += 1
            elif name.module in modules:
                # the oracle looks a return address up at address - 1: named and offset there
                at = oracle_symbol(ctx, name)
                if mod != name.module or sym != oracle_name(ctx, name) or name.vaddr is None or \
                        addr != name.vaddr + (kind != 'pc') or \
                        (at and off != name.vaddr - at[0]):
                    mism[f'{os.path.basename(name.module)} frame: {sym}+{off:#x} at '
                         f'{addr:#x}, oracle {oracle_name(ctx, name)} at {name.vaddr or 0:#x}'] += 1
    if unnamed:
        mods = ', '.join(sorted(os.path.basename(m) for m in modules))
        log(f'{what}: {unnamed} frames in {mods} that no function symbol holds: not compared')
    for k, v in mism.most_common(8):
        log(f'    {v} x {k}')
    expect(not mism, fails, f'{what}: {sum(mism.values())} differences from the oracle')
    return fails


# --- folding ---

def oracle_fold(ctx, ksyms, prof, modules):
    """The oracle's fold, as (comm, [(name, module)] outermost first) per sample, named
    like the script's frames after stackcollapse's tidying."""
    out = []
    for s in prof.samples:
        ufr = iter(ctx.syms.user_frames(s))
        stack = []
        for kind, v in (s.ustack.entries if s.ustack else []):
            if kind == 'omit':
                stack.append((f'[{v} frames omitted]', '[omitted]'))
                continue
            f = next(ufr)
            stack.append((oracle_name(ctx, f), f.module or '[unknown]'))
        kn = iter(ksyms.frames(s.kstack) if s.kstack else [])
        kstack = []
        for kind, v in (s.kstack.entries if s.kstack else []):
            if kind == 'omit':
                kstack.append((f'[{v} frames omitted]', '[omitted]'))
            else:
                kstack.append((next(kn), '[kernel.kallsyms]'))
        frames = list(reversed(stack)) + list(reversed(kstack))
        comm = (s.comm or (s.process.comm if s.process else '')).replace(' ', '_')
        out.append((comm, frames))
    return out


def normalize(samples, modules):
    """Counter of folded stacks where frames outside @modules and the kernel are
    reduced to their module's name: those the oracle cannot name the way sfprof
    does (libc's debug file, symbol versions, module+offset forms)."""
    out = Counter()
    for comm, frames in samples:
        names = [comm]
        for name, mod in frames:
            if mod in ('[anon]', '[unknown]'):
                names.append('<no module>')     # sfprof tells anonymous memory apart
            elif mod not in modules and mod not in ('[kernel.kallsyms]', '[omitted]'):
                names.append(f'<{os.path.basename(mod)}>')
            elif name is None or re.match(r'^\S+\+0x[0-9a-f]+$', name):
                names.append('?')      # unnamed by the oracle, module+0xoffset in sfprof
            else:
                names.append(name)
        out[';'.join(names)] += 1
    return out


def export_collapsed(ctx, path):
    """`sfprof export --format collapsed` output, or None when that command does not exist."""
    probe = subprocess.run([ctx.sfprof, 'export', '--help'], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, errors='replace')
    if probe.returncode != 0 or 'collapsed' not in probe.stdout:
        return None
    out = path + '.collapsed'
    p = sfprof(ctx, ['export', '--format', 'collapsed', '--no-inline', '-i', path, '-o', out],
               check=False)
    if p.returncode != 0:
        p = sfprof(ctx, ['export', '--format', 'collapsed', '--no-inline', '-i', path])
        return p.stdout
    with open(out) as f:
        return f.read()


def diff_counters(a, b, what_a, what_b):
    lines = []
    for k in sorted(set(a) | set(b)):
        if a.get(k, 0) != b.get(k, 0):
            lines.append(f'    {what_a} {a.get(k, 0)}, {what_b} {b.get(k, 0)}: {k[:300]}')
    return lines


_UNNAMED_OFFSET = re.compile(r'\+0x[0-9a-f]+(?=(_\[k\])?$)')
_BRACKETED = re.compile(r'^\[([^\]]+)\]$')


def check_fold(ctx, ksyms, prof, path, script_text, modules, what):
    fails = []
    folded = stackcollapse.fold(script_text)
    expect(sum(folded.values()) == len(prof.samples), fails,
           f'{what}: folded {sum(folded.values())} samples of {len(prof.samples)}')
    collapsed = export_collapsed(ctx, path)
    if collapsed is not None:
        # export writes kernel frames as stackcollapse-perf.pl --kernel does; it starts
        # each stack with the process's name where perf script (and so sfprof script)
        # prints the thread's: the frames are compared, the names counted apart
        theirs = stackcollapse.parse_folded(collapsed)
        mine = stackcollapse.fold(script_text, kernel=True)

        def frames_only(c, strip=False):
            out = Counter()
            for k, v in c.items():
                k = k.split(';', 1)[1] if ';' in k else ''
                if strip:
                    # stackcollapse strips the offset of the script's module+0xOFFSET
                    # names; export keeps it
                    k = ';'.join(_UNNAMED_OFFSET.sub('', f) for f in k.split(';'))
                # export folds an unnamed frame into [module] (perf's [unknown] made
                # useful), stackcollapse of script's module+0xOFFSET into module (CI: a
                # page fault under an unnamed libc frame): compared without the brackets
                k = ';'.join(_BRACKETED.sub(r'\1', f) for f in k.split(';'))
                out[k] += v
            return out
        d = diff_counters(frames_only(mine), frames_only(theirs, strip=True),
                          'script|stackcollapse --kernel', 'export collapsed')
        log(f'{what}: script folded by stackcollapse.py --kernel against export --format '
            f'collapsed: {len(mine)} stacks, {len(d)} differ in their frames')
        for line in d[:10]:
            log(line)
        expect(not d, fails, f'{what}: {len(d)} folded stacks differ from export collapsed')
        names = diff_counters(Counter(k.split(';', 1)[0] for k in mine.elements()),
                              Counter(k.split(';', 1)[0] for k in theirs.elements()),
                              'script (thread names)', 'export (process names)')
        if names:
            log(f'{what}: the first element differs (thread and process names):')
            for line in names:
                log(line)
    else:
        log(f'{what}: `sfprof export --format collapsed` does not exist')
    # and always against the oracle's own fold of the dump
    mine = normalize(stackcollapse.fold_frames(script_text), modules)
    oracle = normalize(oracle_fold(ctx, ksyms, prof, modules), modules)
    d = diff_counters(mine, oracle, 'script', 'oracle')
    log(f'{what}: script folded by stackcollapse.py against the oracle\'s fold of the dump: '
        f'{len(mine)} stacks, {len(d)} differ')
    for line in d[:10]:
        log(line)
    expect(not d, fails, f'{what}: {len(d)} folded stacks differ from the oracle\'s')
    return fails


# --- the cases ---

def build_chains(ctx):
    ctx.compile('libcallback.c', 'libcallback.so', shared=True)
    prog = ctx.compile('record_chains.c', 'record_chains',
                       libs=['-L', ctx.work, '-lcallback', '-Wl,-rpath,$ORIGIN'])
    return prog, ctx.path('libcallback.so')


def case_chains(ctx):
    prog, lib = build_chains(ctx)
    out = ctx.path('chains.data')
    record(ctx, [prog, '3'], out)
    prof = load(ctx, out)
    ksyms = profile_oracle.KernelSymbols()
    modules = {prog, lib}
    name = os.path.basename(prog)
    fails = []

    rep, _ = report(ctx, out)
    log(rep.text.rstrip('\n') if len(rep.rows) < 40 else
        '\n'.join(rep.text.splitlines()[:40]) + '\n...')
    expect(rep.columns == ['Self', 'Command', 'Shared Object', 'Symbol'], fails,
           f'default columns {rep.columns}')
    fails += check_header(rep, prof, 'report')
    fails += check_self(ctx, rep, prof, ksyms, 'report')
    for leaf in rt.CHAINS:
        expect(rep.find(comm=name, dso=name, sym=f'[.] {leaf}'), fails, f'no row for {leaf}')
    total = sum(r['Self'] for r in rep.rows)
    expect(abs(total - 100) <= max(0.5, 0.005 * len(rep.rows)), fails,
           f'self shares add up to {total:.2f}%')
    order = [r['Self'] for r in rep.rows]
    expect(order == sorted(order, reverse=True), fails, 'rows not sorted by self share')
    raise_fails(fails)
    must_fail(check_self(ctx, Report(rep.text.replace('spin_a', 'spin_x')), prof, ksyms,
                         'wrong', quiet=True), 'a hot leaf renamed in the report')

    # --sort pid, and every key
    rep_pid, _ = report(ctx, out, '--sort', 'pid')
    log(rep_pid.text.rstrip('\n'))
    pid = prof.samples[0].pid
    expect(rep_pid.columns == ['Self', 'Pid:Command'], fails, f'--sort pid: {rep_pid.columns}')
    expect(len(rep_pid.rows) == 1 and rep_pid.share(pid=pid) == 100.0, fails,
           f'--sort pid: want one row, pid {pid} at 100%')
    expect(rep_pid.rows and rep_pid.rows[0]['Pid:Command'] == f'{pid}:{name}', fails,
           f'--sort pid: row {rep_pid.rows[:1]}')
    rep_all, _ = report(ctx, out, '--sort', 'dso,sym,pid,comm', '--stdio')
    expect(rep_all.columns == ['Self', 'Shared Object', 'Symbol', 'Pid:Command', 'Command'],
           fails, f'--sort dso,sym,pid,comm: columns {rep_all.columns}')
    for leaf in rt.CHAINS:
        a = rep_all.share(dso=name, sym=f'[.] {leaf}', pid=pid, comm=name)
        b = rep.share(dso=name, sym=f'[.] {leaf}', comm=name)
        expect(a is not None and a == b, fails, f'--sort dso,sym,pid,comm: {leaf} {a}%, '
               f'default sort {b}%')
    fails += check_self(ctx, rep_all, prof, ksyms, '--sort dso,sym,pid,comm', quiet=True)
    rep_sym, _ = report(ctx, out, '--sort', 'sym')
    expect(rep_sym.columns == ['Self', 'Symbol'], fails, f'--sort sym: {rep_sym.columns}')
    for leaf in rt.CHAINS:
        expect(rep_sym.share(sym=f'[.] {leaf}') == rep.share(sym=f'[.] {leaf}'), fails,
               f'--sort sym: {leaf} differs from the default sort')
    for bad in (['--sort', 'nosuchkey'], ['--sort', 'sym,sym'], ['--sort', ''], ['--bogus'],
                ['extra-arg']):
        p = sfprof(ctx, ['report', '-i', out, *bad], check=False)
        expect(p.returncode == 2 and p.stderr.strip(), fails,
               f'report {" ".join(bad)}: exit {p.returncode}, want 2 with a message')
    raise_fails(fails)

    # --children: once per sample, against the oracle
    rep_ch, _ = report(ctx, out, '--children')
    log('\n'.join(rep_ch.text.splitlines()[:30]))
    expect(rep_ch.columns == ['Children', 'Self', 'Command', 'Shared Object', 'Symbol'], fails,
           f'--children columns {rep_ch.columns}')
    children = oracle_children(ctx, prof.samples, modules)
    total = sum(s.weight for s in prof.samples)
    funcs = ['main', 'main_work', 'recurse', 'thread_a', 'a_outer', 'thread_b', 'b_outer',
             'lib_apply', 'cb_entry', 'thread_c', 'vla_frame'] + list(rt.CHAINS)

    def check_children(rep_, counts, quiet=False):
        f = []
        for fn in funcs:
            dso = 'libcallback.so' if fn.startswith('lib_') else name
            got = rep_.share('Children', dso=dso, sym=f'[.] {fn}')
            want = 100.0 * counts[fn] / total
            if not quiet:
                log(f'--children: {fn}: report {got}%, oracle {want:.2f}%')
            expect(got is not None and abs(got - want) <= SELF_TOLERANCE, f,
                   f'--children: {fn}: report {got}%, oracle {want:.2f}%')
        return f
    fails += check_children(rep_ch, children)
    for r in rep_ch.rows:
        expect(r['Children'] + 0.001 >= r['Self'], fails, f'--children: row {r} has '
               f'children < self')
        if r['Children'] > 100.0:
            fails.append(f'--children: row over 100%: {r}')
    order = [r['Children'] for r in rep_ch.rows]
    expect(order == sorted(order, reverse=True), fails, '--children: rows not sorted by children')
    for leaf in rt.CHAINS:
        expect(rep_ch.share(dso=name, sym=f'[.] {leaf}') == rep.share(dso=name, sym=f'[.] {leaf}'),
               fails, f'--children: self of {leaf} differs from the plain report')
    raise_fails(fails)
    per_frame = Counter(children)
    per_frame['recurse'] = sum(sum(1 for f in ctx.syms.user_frames(s) if f.symbol == 'recurse')
                               for s in prof.samples)
    must_fail(check_children(rep_ch, per_frame, quiet=True),
              'recurse counted once per frame instead of once per sample')

    # script: perf script's layout, each frame as the oracle names it
    p = sfprof(ctx, ['script', '--no-inline', '-i', out])
    text = p.stdout
    log('\n'.join(text.splitlines()[:12]))
    blocks = parse_script(text)
    fails += check_script(ctx, ksyms, prof, blocks, modules, 'script')
    raise_fails(fails)
    wrong = text.replace(' spin_c+', ' spin_d+')
    must_fail(check_script(ctx, ksyms, prof, parse_script(wrong), modules, 'wrong'),
              'spin_c renamed in the script output')
    fails += check_fold(ctx, ksyms, prof, out, text, modules, 'folded')
    raise_fails(fails)
    must_fail(check_fold(ctx, ksyms, prof, out, wrong, modules, 'wrong'),
              'spin_c renamed before folding')


def compile_cxx(ctx, src, out):
    cmd = ['g++', '-O2', '-fomit-frame-pointer', '-Wa,--gsframe', '-Wall', '-Wextra',
           '-o', ctx.path(out), os.path.join(ctx.progs, src)]
    rt.run(cmd)
    return ctx.path(out)


def case_cxx(ctx):
    if not shutil.which('g++') or not shutil.which('c++filt'):
        log('SKIP: g++ or c++filt not found')
        sys.exit(rt.SKIP)
    prog = compile_cxx(ctx, 'report_cxx.cc', 'report_cxx')
    out = ctx.path('cxx.data')
    record(ctx, [prog, '1500'], out)
    prof = load(ctx, out)
    ksyms = profile_oracle.KernelSymbols()
    name = os.path.basename(prog)
    fails = []
    rep, _ = report(ctx, out)
    log(rep.text.rstrip('\n'))
    # the oracle's names are nm's, mangled: c++filt demangles them
    counts, total = oracle_self(ctx, ksyms, prof.samples)
    mangled = [sym[4:] for (dso, sym), _ in counts.items() if dso == name and sym]
    demangled = subprocess.run(['c++filt'], input='\n'.join(mangled) + '\n', text=True,
                               stdout=subprocess.PIPE, check=True).stdout.splitlines()
    table = dict(zip(mangled, demangled))
    log('c++filt: ' + ', '.join(f'{k} -> {v}' for k, v in table.items()))
    expect(table.get('_ZN2ns5KlassIiE4spinEi') == 'ns::Klass<int>::spin(int)', fails,
           'the oracle does not see _ZN2ns5KlassIiE4spinEi as the hot leaf')
    for (dso, sym), w in counts.most_common():
        if dso != name or not sym:
            continue
        want = table[sym[4:]]
        got = rep.share(dso=name, sym=f'[.] {want}')
        pct = 100.0 * w / total
        expect(got is not None and abs(got - pct) <= SELF_TOLERANCE, fails,
               f'{sym[4:]}: report row [.] {want} {got}%, oracle {pct:.2f}%')
    top = rep.rows[0] if rep.rows else {}
    expect(top.get('Symbol') == '[.] ns::Klass<int>::spin(int)' and top.get('Self', 0) >= 90,
           fails, f'top row {top}, want [.] ns::Klass<int>::spin(int) at >= 90%')
    expect(not any('_ZN' in r.get('Symbol', '') for r in rep.rows), fails,
           'a mangled name in the report')
    rep_ch, _ = report(ctx, out, '--children')
    log('\n'.join(rep_ch.text.splitlines()[:20]))
    children = oracle_children(ctx, prof.samples, {prog})
    for fn, mangled_fn in (('ns::outer(int)', '_ZN2ns5outerEi'), ('main', 'main'),
                           ('ns::Klass<int>::spin(int)', '_ZN2ns5KlassIiE4spinEi')):
        got = rep_ch.share('Children', dso=name, sym=f'[.] {fn}')
        want = 100.0 * children[mangled_fn] / total
        log(f'--children: {fn}: report {got}%, oracle {want:.2f}%')
        expect(got is not None and abs(got - want) <= SELF_TOLERANCE and got >= 90, fails,
               f'--children: {fn}: report {got}%, oracle {want:.2f}% (want >= 90%)')
    text = sfprof(ctx, ['script', '--no-inline', '-i', out]).stdout
    folded = stackcollapse.fold(text)
    hot = [k for k in folded if k.endswith(';main;ns::outer;ns::Klass<int>::spin')]
    log(f'folded: {sum(folded[k] for k in hot)} samples end main;ns::outer;'
        f'ns::Klass<int>::spin')
    expect(sum(folded[k] for k in hot) >= 0.9 * len(prof.samples), fails,
           'folded script: fewer than 90% of the samples in main;ns::outer;ns::Klass<int>::spin')
    raise_fails(fails)


def case_kernel(ctx):
    prog = ctx.compile('syscalls.c', 'syscalls')
    out = ctx.path('syscalls.data')
    record(ctx, [prog, '2'], out)
    prof = load(ctx, out)
    ksyms = profile_oracle.KernelSymbols()
    if not ksyms.usable:
        log('SKIP: /proc/kallsyms shows no addresses')
        sys.exit(rt.SKIP)
    fails = []
    rep, _ = report(ctx, out)
    log('\n'.join(rep.text.splitlines()[:30]))
    fails += check_header(rep, prof, 'report')
    fails += check_self(ctx, rep, prof, ksyms, 'report', min_share=0.5)
    in_kernel = 100.0 * sum(s.weight for s in prof.samples if s.kstack and s.kstack.entries) / \
        sum(s.weight for s in prof.samples)
    k_rows = sum(r['Self'] for r in rep.find(dso='[kernel.kallsyms]'))
    log(f'[k] rows: {k_rows:.2f}%, oracle: {in_kernel:.2f}% of samples taken in the kernel')
    expect(abs(k_rows - in_kernel) <= max(SELF_TOLERANCE, 0.005 * len(rep.rows)), fails,
           f'[k] rows add up to {k_rows:.2f}%, oracle {in_kernel:.2f}%')
    expect(in_kernel >= 20, fails, f'only {in_kernel:.2f}% of samples in the kernel')
    expect(all(r['Symbol'].startswith('[k] ') for r in rep.find(dso='[kernel.kallsyms]')),
           fails, 'a kernel row without [k]')
    rep_ch, _ = report(ctx, out, '--children')
    for fn in ('sys_read_zero', 'sys_getppid', 'sc_outer', 'main'):
        got = rep_ch.share('Children', dso='syscalls', sym=f'[.] {fn}')
        want = 100.0 * oracle_children(ctx, prof.samples, {prog})[fn] / \
            sum(s.weight for s in prof.samples)
        log(f'--children: {fn}: report {got}%, oracle {want:.2f}%')
        expect(got is not None and abs(got - want) <= SELF_TOLERANCE, fails,
               f'--children: {fn}: report {got}%, oracle {want:.2f}%')
    text = sfprof(ctx, ['script', '--no-inline', '-i', out]).stdout
    fails += check_script(ctx, ksyms, prof, parse_script(text), {prog}, 'script')
    fails += check_fold(ctx, ksyms, prof, out, text, {prog}, 'folded')
    raise_fails(fails)


def case_plt(ctx):
    prog = ctx.compile('plt_calls.c', 'plt_calls', extra=['-fno-builtin'])
    out = ctx.path('plt_calls.data')
    record(ctx, [prog, '2'], out)
    prof = load(ctx, out)
    ksyms = profile_oracle.KernelSymbols()
    fails = []
    rep, _ = report(ctx, out)
    log('\n'.join(rep.text.splitlines()[:20]))
    fails += check_self(ctx, rep, prof, ksyms, 'report', min_share=0.5)
    text = sfprof(ctx, ['script', '--no-inline', '-i', out]).stdout
    script = parse_script(text)
    fails += check_script(ctx, ksyms, prof, script, {prog}, 'script')
    # the stubs hold samples, named as objdump labels them (oracle_symbol's third rule)
    stubs = Counter(f[1] for sc in script for f in sc.frames
                    if len(f) == 4 and f[3] == prog and f[1].endswith('@plt'))
    log(f'script frames in PLT stubs: {dict(stubs)}')
    expect(stubs['strlen@plt'] + stubs['labs@plt'] > 0, fails,
           'no frame named strlen@plt or labs@plt')
    for fn in ('strlen@plt', 'labs@plt'):
        got = rep.share(dso='plt_calls', sym=f'[.] {fn}')
        log(f'report: [.] {fn} {got}%')
    fails += check_fold(ctx, ksyms, prof, out, text, {prog}, 'folded')
    raise_fails(fails)


def case_missing(ctx):
    token = secrets.token_hex(3)
    exe = ctx.compile('shortlived.c', f'gone-{token}')
    name = os.path.basename(exe)
    out = ctx.path('missing.data')
    # the build-ID cache would keep it (buildid_test.py checks that): gone means gone here
    p = ctx.record(['--no-buildid-cache', '--', exe, '1500'], out, timeout=120)
    if p.returncode != 0:
        raise Failure(f'sfprof record exited with {p.returncode}')
    prof = load(ctx, out)          # the binary is still there: the oracle names it
    ksyms = profile_oracle.KernelSymbols()
    counts, total = oracle_self(ctx, ksyms, prof.samples)
    leaf = 100.0 * counts[(name, '[.] sl_leaf')] / total
    in_module = 100.0 * sum(w for (dso, _), w in counts.items() if dso == name) / total
    moved = exe + '.moved'
    os.rename(exe, moved)
    # another test may have kept the same build (same source, same flags) in the real
    # build-ID cache: the report must find none
    os.environ['XDG_CACHE_HOME'] = ctx.path('empty-cache')
    os.makedirs(os.environ['XDG_CACHE_HOME'], exist_ok=True)
    elf = profile_oracle.Elf(moved)
    fails = []
    rep, p = report(ctx, out)
    log('\n'.join(rep.text.splitlines()[:24]))
    rows = rep.find(dso=name)
    expect(rows, fails, f'no rows for {name}')
    named = [r for r in rows if not re.match(rf'^\[\.\] {re.escape(name)}\+0x[0-9a-f]+$',
                                             r['Symbol'])]
    expect(not named, fails, f'{name} is gone, yet rows name its functions: {named[:3]}')
    got = sum(r['Self'] for r in rows)
    log(f'{name} rows: {got:.2f}%, oracle {in_module:.2f}% of frame 0 in it')
    expect(abs(got - in_module) <= max(SELF_TOLERANCE, 0.005 * len(rows)), fails,
           f'{name} rows add up to {got:.2f}%, oracle {in_module:.2f}%')
    # each name+0xOFFSET is a file offset: the renamed file says which function holds it
    in_leaf = 0.0
    for r in rows:
        off = int(r['Symbol'].rsplit('+0x', 1)[1], 16)
        vaddr = elf.vaddr(off)
        if vaddr is not None and elf.symbol(vaddr) == 'sl_leaf':
            in_leaf += r['Self']
    log(f'rows whose offset falls in sl_leaf: {in_leaf:.2f}%, oracle sl_leaf {leaf:.2f}%')
    expect(abs(in_leaf - leaf) <= max(SELF_TOLERANCE, 0.005 * len(rows)), fails,
           f'offsets in sl_leaf: {in_leaf:.2f}%, oracle {leaf:.2f}%')
    for extra in (['--children'], ['--sort', 'dso']):
        report(ctx, out, *extra)
    text = sfprof(ctx, ['script', '--no-inline', '-i', out]).stdout
    blocks = parse_script(text)
    expect(len(blocks) == len(prof.samples), fails, 'script: not one block per sample')
    # an unnamed frame is name+0xOFFSET once, the offset from the module's start: with the
    # binary gone, the address shown is that file offset too
    mine = [f for b in blocks for f in b.frames if f[0] != 'omit' and f[3] == exe]
    bad = [f for f in mine if f[1] != name or f[2] != f[0]]
    expect(mine and not bad, fails, f'script: {len(bad)} frames of {name} not shown as '
           f'{name}+0xOFFSET at address OFFSET: {bad[:3]}')
    expect(not re.search(r'\+0x[0-9a-f]+\+0x[0-9a-f]+ \(', text), fails,
           'script: a frame named with two offsets')
    # stackcollapse-perf.pl strips the offset, as from perf's named frames: the module remains
    folded = stackcollapse.fold(text)
    expect(any(f';{name};' in k or k.endswith(f';{name}') for k in folded), fails,
           f'folded: no frame {name}')
    raise_fails(fails)


def case_debugfile(ctx):
    for tool in ('objcopy', 'strip'):
        if not shutil.which(tool):
            log(f'SKIP: {tool} not found')
            sys.exit(rt.SKIP)
    token = secrets.token_hex(3)
    exe = ctx.compile('shortlived.c', f'stripped-{token}', extra=['-g'])
    other = ctx.compile('shortlived.c', f'other-{token}', extra=['-g', '-DVARIANT=7'])
    name = os.path.basename(exe)
    full = exe + '.full'
    shutil.copy2(exe, full)
    rt.run(['objcopy', '--only-keep-debug', exe, exe + '.debug'])
    rt.run(['strip', '--strip-debug', '--strip-unneeded', exe])
    build_id = profile_oracle.Elf(exe).build_id
    if not build_id or profile_oracle.Elf(full).build_id != build_id:
        raise Failure('the stripped binary lost its build ID')
    if any(s[2] == 'sl_leaf' for s in profile_oracle.Elf(exe).syms):
        raise Failure('strip left sl_leaf in the binary')
    good = ctx.path('debug-good')
    bad = ctx.path('debug-bad')
    for d, src in ((good, exe + '.debug'), (bad, other)):
        os.makedirs(os.path.join(d, '.build-id', build_id[:2]), exist_ok=True)
        shutil.copy2(src, os.path.join(d, '.build-id', build_id[:2], build_id[2:] + '.debug'))
    log(f'debug file: {good}/.build-id/{build_id[:2]}/{build_id[2:]}.debug')
    out = ctx.path('stripped.data')
    record(ctx, [exe, '1500'], out)
    prof = load(ctx, out)
    ksyms = profile_oracle.KernelSymbols()
    ctx.syms.elves[exe] = profile_oracle.Elf(full)    # the oracle reads the unstripped copy
    counts, total = oracle_self(ctx, ksyms, prof.samples)
    leaf = 100.0 * counts[(name, '[.] sl_leaf')] / total
    log(f'oracle: sl_leaf {leaf:.2f}%')
    fails = []

    def named(rep):
        return rep.share(dso=name, sym='[.] sl_leaf')

    rep, _ = report(ctx, out)
    log('\n'.join(rep.text.splitlines()[13:17]))
    expect(named(rep) is None, fails, 'without the debug file, sl_leaf is named anyway')
    rep_bad, _ = report(ctx, out, '--debug-file-directory', bad)
    expect(named(rep_bad) is None, fails,
           'a debug file with another build ID at the build ID\'s path was used')
    rep, _ = report(ctx, out, '--debug-file-directory', bad, '--debug-file-directory', good)
    log('\n'.join(rep.text.splitlines()[13:17]))
    got = named(rep)
    expect(got is not None and abs(got - leaf) <= SELF_TOLERANCE, fails,
           f'with --debug-file-directory: sl_leaf {got}%, oracle {leaf:.2f}%')
    fails += check_self(ctx, rep, prof, ksyms, 'with the debug file')
    text = sfprof(ctx, ['script', '--no-inline', '-i', out, '--debug-file-directory', good]).stdout
    fails += check_script(ctx, ksyms, prof, parse_script(text), {exe}, 'script')
    raise_fails(fails)
    # the binary gone: the debug file alone names the frames
    os.unlink(exe)
    rep, _ = report(ctx, out, '--debug-file-directory', good)
    log('\n'.join(rep.text.splitlines()[13:17]))
    got = named(rep)
    expect(got is not None and abs(got - leaf) <= SELF_TOLERANCE, fails,
           f'binary gone, debug file only: sl_leaf {got}%, oracle {leaf:.2f}%')
    fails += check_self(ctx, rep, prof, ksyms, 'debug file only')
    text = sfprof(ctx, ['script', '--no-inline', '-i', out, '--debug-file-directory', good]).stdout
    fails += check_script(ctx, ksyms, prof, parse_script(text), {exe}, 'script, debug file only')
    raise_fails(fails)


def case_damaged(ctx):
    exe = ctx.compile('shortlived.c', 'damaged')
    out = ctx.path('full.data')
    record(ctx, [exe, '3500'], out)
    prof = load(ctx, out)
    fails = []
    if prof.summary[2] < 3:
        raise Failure(f'only {prof.summary[2]} blocks: cannot cut between blocks')
    data = open(out, 'rb').read()
    cut = ctx.path('cut.data')
    with open(cut, 'wb') as f:
        f.write(data[:len(data) * 6 // 10])
    dump = profile_oracle.load_profile(ctx.sfprof, cut)
    for cmd in ('report', 'script'):
        p = sfprof(ctx, [cmd, '-i', cut], check=False)
        expect(p.returncode == 0, fails, f'{cmd} of a cut file: exit {p.returncode}')
        expect('file truncated' in p.stderr, fails, f'{cmd} of a cut file: no truncation notice')
        if cmd == 'report' and p.returncode == 0:
            rep = Report(p.stdout)
            log('\n'.join(p.stdout.splitlines()[:16]))
            n = len(dump.samples)
            expect(0 < n < len(prof.samples), fails, f'the cut file has {n} samples')
            fails += check_header(rep, dump, 'report of the cut file')
            expect(rep.rows, fails, 'report of the cut file: no rows')
        if cmd == 'script' and p.returncode == 0:
            expect(len(parse_script(p.stdout)) == len(dump.samples), fails,
                   'script of the cut file: not one block per sample read')
    # damage the middle of the file: one block is skipped, the rest is read
    damaged = ctx.path('damaged.data')
    buf = bytearray(data)
    mid = len(buf) // 2
    for i in range(mid, mid + 64):
        buf[i] ^= 0x5a
    with open(damaged, 'wb') as f:
        f.write(buf)
    # what could be read is shown, and the exit status says the file is damaged
    for cmd in ('report', 'script'):
        p = sfprof(ctx, [cmd, '-i', damaged], check=False)
        expect(p.returncode == 1, fails, f'{cmd} of a damaged file: exit {p.returncode}, want 1')
        expect('damaged block' in p.stderr, fails, f'{cmd} of a damaged file: no notice')
        expect(p.stdout, fails, f'{cmd} of a damaged file: no output')
        if cmd == 'report' and p.stdout:
            rep = Report(p.stdout)
            expect(rep.rows and rep.find(sym='[.] sl_leaf'), fails,
                   'report of a damaged file: no sl_leaf row')
    # not a profile, no file, an empty file
    junk = ctx.path('junk.data')
    with open(junk, 'w') as f:
        f.write('not a profile at all\n')
    empty = ctx.path('empty.data')
    open(empty, 'w').close()
    for cmd in ('report', 'script'):
        for path, msg in ((junk, 'not an sfprof profile'), (ctx.path('none.data'), ''),
                          (empty, '')):
            p = sfprof(ctx, [cmd, '-i', path], check=False)
            expect(p.returncode == 1 and p.stderr.strip() and msg in p.stderr and
                   not p.stdout, fails,
                   f'{cmd} -i {os.path.basename(path)}: exit {p.returncode}, stderr '
                   f'{p.stderr.strip()!r}')
    p = sfprof(ctx, ['script', '--bogus'], check=False)
    expect(p.returncode == 2, fails, f'script --bogus: exit {p.returncode}, want 2')
    raise_fails(fails)


CASES = {
    'chains': case_chains, 'cxx': case_cxx, 'kernel': case_kernel, 'plt': case_plt,
    'missing': case_missing,
    'debugfile': case_debugfile, 'damaged': case_damaged,
}


def main():
    return rt.case_main(__doc__, CASES, (stackcollapse.FoldError,))


if __name__ == '__main__':
    sys.exit(main())
