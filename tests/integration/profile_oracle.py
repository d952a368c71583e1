# SPDX-License-Identifier: BSD-2-Clause
"""An independent reading of sfprof profiles, for integration tests.

`sfprof dump` prints every record of a profile file as a line of text; this
module parses those lines and symbolizes the stacks without any of sfprof's
own code: addresses become (module, ELF virtual address) through the
mapping records of the sample's process and the module's PT_LOAD segments
(`readelf -lW`), and a name through the module's symbol table (`nm`), the
innermost sized symbol that contains the address. A return address is looked
up at address - 1, so a call at the very end of a function is still named
after that function.

Records are applied in file order, as a reader of the format must: a
sample sees the process record and the mappings of its pid written before
it, and nothing written after. A process record starts a new image of its
pid (a new process, or the same one after exec) with no mappings yet; an
exit record ends it.

    prof = load_profile(sfprof, 'sfprof.data')
    syms = Symbolizer()
    for s in prof.samples:
        frames = syms.user_frames(s)     # [Frame], innermost first
        names = [f.symbol for f in frames]
    stacks = folded(prof.samples, syms)  # {(outermost, ..., leaf): weight}

Kernel stacks are named with /proc/kallsyms (KernelSymbols), which needs
root to show addresses.

Used by record_test.py (issue #4) and meant for the report tests (#5).
"""

import bisect
import os
import re
import subprocess


# docs/FORMAT.md, sample flags: bit 0, a sample taken inside execve with the registers of the
# program it replaced, has no user stack; readers show this one frame, in this module, instead.
SAMPLE_F_EXEC_OLD_IMAGE = 0x1
EXEC_OLD_IMAGE = '[execve: old image]'
EXEC_OLD_IMAGE_DSO = '[execve]'


class OracleError(Exception):
    """The dump does not parse, or a record breaks the format's rules."""


# --- records ---

class Process:
    """One image of a process: its process record and the mappings written for it since."""

    def __init__(self, pid, ppid, comm, exe, line):
        self.pid, self.ppid, self.comm, self.exe = pid, ppid, comm, exe
        self.line = line            # line number of its process record in the dump
        self.script = ''            # a CPython interpreter's script or "-m NAME", as dumped
        self.mappings = []          # Mapping, in file order
        self.exited = False

    def __repr__(self):
        return f'Process(pid={self.pid}, comm={self.comm!r}, exe={self.exe!r})'


class Module:
    def __init__(self, mid, build_id, size, path):
        self.id, self.build_id, self.size, self.path = mid, build_id, size, path


class Mapping:
    def __init__(self, pid, start, end, offset, prot, module):
        self.pid, self.start, self.end, self.offset = pid, start, end, offset
        self.prot = prot            # 'r-x' as dump prints it
        self.module = module        # Module or None

    def __repr__(self):
        path = self.module.path if self.module else None
        return f'Mapping({self.start:#x}-{self.end:#x} off {self.offset:#x} {path})'


class Stack:
    """A decoded stack: entries are ('pc'|'ra'|'async', addr) or ('omit', count); the user
    stack of a sample with SAMPLE_F_EXEC_OLD_IMAGE is [('old-image', 0)], ending None."""

    def __init__(self, sid, space, entries, ending):
        self.id, self.space, self.entries = sid, space, entries
        self.ending = ending        # 'end', 'truncated' or None (neither printed)
        self.kernel_jits = []       # the profile's BPF programs: (start, end, name)

    @property
    def truncated(self):
        return self.ending == 'truncated'

    @property
    def omitted(self):
        return sum(v for k, v in self.entries if k == 'omit')


class Event:
    """An event record: what the samples naming its id count (docs/FORMAT.md, Events)."""

    def __init__(self, eid, etype, config, period, freq, flags, name):
        self.id, self.type, self.config, self.period = eid, etype, config, period
        self.freq, self.flags, self.name = freq, flags, name

    def __repr__(self):
        return f'Event({self.id}, {self.name!r}, type {self.type}, config {self.config})'


class Sample:
    def __init__(self, time, pid, tid, cpu, weight, ustack, kstack, process, nmaps, comm,
                 line, event=0, flags=0):
        self.time, self.pid, self.tid, self.cpu, self.weight = time, pid, tid, cpu, weight
        self.event = event          # the id of its event record; 0: the header's cpu-clock
        self.flags = flags          # the record's sample flags (SAMPLE_F_*)
        self.ustack, self.kstack = ustack, kstack   # Stack or None
        self.process = process      # the Process image current at this sample, or None
        self.nmaps = nmaps          # how many of its mappings were written before the sample
        self.comm = comm            # the thread's name when the sample was taken
        self.line = line

    @property
    def mappings(self):
        return self.process.mappings[:self.nmaps] if self.process else []

    @property
    def old_image(self):
        """Taken in execve with the replaced program's registers: [execve: old image]."""
        return bool(self.flags & SAMPLE_F_EXEC_OLD_IMAGE)


class Profile:
    def __init__(self):
        self.header = []            # the '# ' lines
        self.system_wide = False
        self.command = False
        self.freq = 0
        self.modules = {}           # id -> Module
        self.events = {}            # id -> Event
        self.stacks = {}            # id -> Stack
        self.samples = []
        self.processes = []         # every Process image, in file order
        self.exits = []             # (time, pid)
        self.lost = 0
        self.kernel_jits = []       # (start, end, name) of pid 0's JIT records: BPF programs
        self.jits = []              # (pid, start, end, name) of the other JIT records
        self.py_frames = {}         # id -> (qualname, file, line, entry): Python frames
        self.py_chains = {}         # line number of a sample -> its Python frame ids, innermost first
        self.summary = None         # (samples, lost, blocks) from the last '#' line
        self.stderr = ''
        self.returncode = 0

    def by_pid(self, pid):
        return [s for s in self.samples if s.pid == pid]


# --- parsing `sfprof dump` ---

# a CPython interpreter's script ("-m NAME" for a module) follows its exe when recorded
_PROCESS = re.compile(r'^process pid (\d+) ppid (\d+) comm "(.*)" exe "(.*?)"(?: script "(.*)")? '
                      r'pidns (\d+) mntns (\d+) nspid (\d+)$')
_THREAD = re.compile(r'^thread pid (\d+) tid (\d+) comm "(.*)"$')
_MODULE = re.compile(r'^module (\d+) build-id ([0-9a-f]*|-) size (\d+) path "(.*)"$')
_MAPPING = re.compile(r'^mapping pid (\d+) 0x([0-9a-f]+)-0x([0-9a-f]+) offset 0x([0-9a-f]+) '
                      r'([r-][w-][x-]) module (\d+)$')
_STACK = re.compile(r'^stack (\d+) (user|kernel)((?: \S+)*)$')
_SAMPLE = re.compile(r'^sample (\d+)\.(\d{9}) pid (\d+) tid (\d+) cpu (\d+) weight (\d+) '
                     r'ustack (\d+) kstack (\d+)(?: event (\d+))?(?: flags (0x[0-9a-f]+))?'
                     r'(?: python ([0-9,]+)(?: truncated)?)?$')
_PY_FRAME = re.compile(r'^py_frame (\d+) line (\d+)( entry)? qualname "(.*)" file "(.*)"$')
_EVENT = re.compile(r'^event (\d+) type (\d+) config (\d+) period (\d+) freq (\d+) '
                    r'flags (0|0x[0-9a-f]+) name "(.*)"$')
_LOST = re.compile(r'^lost (\d+)\.(\d{9}) cpu (\d+) count (\d+)$')
_EXIT = re.compile(r'^exit (\d+)\.(\d{9}) pid (\d+)$')
_COMM = re.compile(r'^comm (\d+)\.(\d{9}) pid (\d+) tid (\d+) comm "(.*)"$')
_JIT = re.compile(r'^jit (\d+)\.(\d{9}) pid (\d+) 0x([0-9a-f]+)-0x([0-9a-f]+)( map)?( unload)? '
                  r'name "(.*)" source "(.*?)"(?: .*)?$')
_SUMMARY = re.compile(r'^# (\d+) samples, (\d+) lost, (\d+) blocks$')
_META = re.compile(r'^# .*: sfprof profile, created \S+, (\d+) Hz, \d+-byte stacks(.*)$')


def _ns(sec, frac):
    return int(sec) * 1000000000 + int(frac)


def _parse_stack(sid, space, text):
    words = text.split()
    entries, ending, i = [], None, 0
    while i < len(words):
        w = words[i]
        if w in ('end', 'truncated'):
            if i != len(words) - 1:
                raise OracleError(f'stack {sid}: {w} before the last frame')
            ending = w
            i += 1
        elif w in ('pc', 'ra', 'async'):
            entries.append((w, int(words[i + 1], 16)))
            i += 2
        elif w == 'omit':
            entries.append(('omit', int(words[i + 1])))
            i += 2
        else:
            raise OracleError(f'stack {sid}: unknown word {w!r}')
    return Stack(sid, space, entries, ending)


def parse_dump(text):
    """A Profile from the text of `sfprof dump`; OracleError where a rule is broken."""
    prof = Profile()
    current = {}        # pid -> Process image
    comms = {}          # tid -> comm
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith('#'):
            prof.header.append(line)
            m = _META.match(line)
            if m:
                prof.freq = int(m.group(1))
                prof.system_wide = 'system-wide' in m.group(2)
                prof.command = 'command' in m.group(2)
            m = _SUMMARY.match(line)
            if m:
                prof.summary = tuple(int(x) for x in m.groups())
            continue
        m = _SAMPLE.match(line)
        if m:
            pid, tid, cpu, weight, us, ks = (int(x) for x in m.groups()[2:8])
            event = int(m.group(9) or 0)
            flags = int(m.group(10) or '0', 16)
            if event and event not in prof.events:
                raise OracleError(f'line {n}: sample names event {event} before its record')
            stacks = []
            for sid in (us, ks):
                if sid and sid not in prof.stacks:
                    raise OracleError(f'line {n}: sample uses stack {sid} before its record')
                stacks.append(prof.stacks[sid] if sid else None)
            if flags & SAMPLE_F_EXEC_OLD_IMAGE:
                # the format's rule: no user stack (one given is ignored), one frame instead
                stacks[0] = Stack(0, 'user', [('old-image', 0)], None)
            if stacks[0] and stacks[0].space != 'user':
                raise OracleError(f'line {n}: ustack {us} is a kernel stack')
            if stacks[1] and stacks[1].space != 'kernel':
                raise OracleError(f'line {n}: kstack {ks} is a user stack')
            if m.group(11):
                ids = [int(x) for x in m.group(11).split(',')]
                if any(i not in prof.py_frames for i in ids):
                    raise OracleError(f'line {n}: sample uses a Python frame before its record')
                prof.py_chains[n] = ids
            proc = current.get(pid)
            prof.samples.append(Sample(_ns(m.group(1), m.group(2)), pid, tid, cpu, weight,
                                       stacks[0], stacks[1], proc,
                                       len(proc.mappings) if proc else 0, comms.get(tid), n,
                                       event, flags))
            continue
        m = _PY_FRAME.match(line)
        if m:
            fid = int(m.group(1))
            if fid in prof.py_frames:
                raise OracleError(f'line {n}: Python frame {fid} written twice')
            prof.py_frames[fid] = (m.group(4), m.group(5), int(m.group(2)), bool(m.group(3)))
            continue
        m = _EVENT.match(line)
        if m:
            eid = int(m.group(1))
            if eid != len(prof.events) + 1:
                raise OracleError(f'line {n}: event {eid} out of order (ids count from 1)')
            prof.events[eid] = Event(eid, int(m.group(2)), int(m.group(3)), int(m.group(4)),
                                     int(m.group(5)), int(m.group(6), 16), m.group(7))
            continue
        m = _STACK.match(line)
        if m:
            sid = int(m.group(1))
            if sid in prof.stacks:
                raise OracleError(f'line {n}: stack {sid} written twice')
            prof.stacks[sid] = _parse_stack(sid, m.group(2), m.group(3))
            # kernel frames are named from the profile's BPF programs first (KernelSymbols)
            prof.stacks[sid].kernel_jits = prof.kernel_jits
            continue
        m = _MAPPING.match(line)
        if m:
            pid, mid = int(m.group(1)), int(m.group(6))
            if mid and mid not in prof.modules:
                raise OracleError(f'line {n}: mapping uses module {mid} before its record')
            if pid not in current:
                raise OracleError(f'line {n}: mapping of pid {pid} before its process record')
            current[pid].mappings.append(Mapping(pid, int(m.group(2), 16), int(m.group(3), 16),
                                                 int(m.group(4), 16), m.group(5),
                                                 prof.modules.get(mid)))
            continue
        m = _MODULE.match(line)
        if m:
            mid = int(m.group(1))
            if mid in prof.modules:
                raise OracleError(f'line {n}: module {mid} written twice')
            bid = '' if m.group(2) == '-' else m.group(2)
            prof.modules[mid] = Module(mid, bid, int(m.group(3)), m.group(4))
            continue
        m = _PROCESS.match(line)
        if m:
            pid = int(m.group(1))
            proc = Process(pid, int(m.group(2)), m.group(3), m.group(4), n)
            proc.script = m.group(5) or ''
            current[pid] = proc
            prof.processes.append(proc)
            continue
        m = _THREAD.match(line)
        if m:
            comms[int(m.group(2))] = m.group(3)
            continue
        m = _COMM.match(line)
        if m:
            comms[int(m.group(4))] = m.group(5)
            continue
        m = _EXIT.match(line)
        if m:
            pid = int(m.group(3))
            prof.exits.append((_ns(m.group(1), m.group(2)), pid))
            if pid in current:
                current.pop(pid).exited = True
            continue
        m = _LOST.match(line)
        if m:
            prof.lost += int(m.group(4))
            continue
        m = _JIT.match(line)
        if m:
            pid, start, end = int(m.group(3)), int(m.group(4), 16), int(m.group(5), 16)
            if end <= start:
                raise OracleError(f'line {n}: JIT record of an empty range')
            if pid:
                prof.jits.append((pid, start, end, m.group(8)))
            else:
                prof.kernel_jits.append((start, end, m.group(8)))
            continue
        raise OracleError(f'line {n}: does not parse: {line!r}')
    return prof


def load_profile(sfprof, path):
    """Run `sfprof dump -i PATH` and parse it; its stderr and status are kept in the Profile."""
    p = subprocess.run([sfprof, 'dump', '-i', path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, errors='replace', timeout=300)
    if p.returncode != 0:
        raise OracleError(f'sfprof dump -i {path} exited with {p.returncode}: {p.stderr.strip()}')
    prof = parse_dump(p.stdout)
    prof.stderr, prof.returncode = p.stderr, p.returncode
    return prof


# --- ELF files through binutils ---

class Elf:
    """PT_LOAD segments (readelf -lW), function symbols (nm) and build ID (readelf -n)."""

    _LOAD = re.compile(r'^\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+'
                       r'0x([0-9a-f]+)\s+0x([0-9a-f]+)', re.M)

    def __init__(self, path):
        self.path = path
        out = _run(['readelf', '-lW', path])
        self.loads = [tuple(int(x, 16) for x in m.groups()[:3])
                      for m in self._LOAD.finditer(out)]
        m = re.search(r'Build ID: ([0-9a-f]+)', _run(['readelf', '-nW', path]))
        self.build_id = m.group(1) if m else ''
        syms = self._nm([]) or self._nm(['-D'])
        # innermost first when sorted by start: for equal starts the smaller one wins
        syms.sort(key=lambda s: (s[0], -s[1]))
        self.starts = [s[0] for s in syms]
        self.syms = syms

    def _nm(self, extra):
        p = subprocess.run(['nm', '-S', '--defined-only', *extra, self.path],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        syms = []
        for line in p.stdout.splitlines():
            f = line.split()
            # text symbols with a size: t/T, weak W/w, indirect functions i
            if len(f) == 4 and f[2] in 'tTWwi' and int(f[1], 16):
                syms.append((int(f[0], 16), int(f[1], 16), f[3].split('@')[0]))
        return syms

    def vaddr(self, file_offset):
        """The ELF virtual address of a file offset, or None when no PT_LOAD holds it."""
        for off, vaddr, filesz in self.loads:
            if off <= file_offset < off + filesz:
                return file_offset - off + vaddr
        return None

    def symbol_at(self, vaddr):
        """(start, size, name) of the innermost (smallest) sized symbol holding @vaddr, or None."""
        best = None
        i = bisect.bisect_right(self.starts, vaddr)
        # symbols that start at or before vaddr; a few hundred back covers nesting
        for start, size, name in reversed(self.syms[max(0, i - 256):i]):
            if start <= vaddr < start + size and (best is None or size < best[1]):
                best = (start, size, name)
        return best

    def symbol(self, vaddr):
        """The innermost (smallest) sized symbol containing @vaddr, or None."""
        best = self.symbol_at(vaddr)
        return best[2] if best else None


def _run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                          check=True).stdout


class Frame:
    """One user frame, named by the oracle."""

    def __init__(self, kind, addr, mapping=None, vaddr=None, symbol=None, module=None):
        self.kind, self.addr, self.mapping = kind, addr, mapping
        self.vaddr, self.symbol = vaddr, symbol
        self._module = module       # a frame no mapping holds that has a module: [execve]

    @property
    def module(self):
        """The module's path, or None outside every mapping (or a mapping without one)."""
        if self.mapping and self.mapping.module:
            return self.mapping.module.path
        return self._module

    def __repr__(self):
        where = self.symbol or (f'{os.path.basename(self.module)}+{self.vaddr:#x}'
                                if self.module and self.vaddr is not None else '??')
        return f'{self.kind} {self.addr:#x} {where}'


class Symbolizer:
    """Names the user frames of samples; each ELF file is read once."""

    def __init__(self, check_build_id=True):
        self.elves = {}
        self.check_build_id = check_build_id

    def elf(self, module):
        """The Elf of a module record, None when the file is not there (or not ELF)."""
        path = module.path
        if path not in self.elves:
            elf = None
            if path.startswith('/') and os.path.isfile(path):
                try:
                    elf = Elf(path)
                except subprocess.CalledProcessError:
                    elf = None
            if elf and self.check_build_id and module.build_id and \
                    elf.build_id != module.build_id:
                raise OracleError(f'{path}: build ID {elf.build_id or "none"} on disk, '
                                  f'{module.build_id} in module record {module.id}')
            self.elves[path] = elf
        return self.elves[path]

    def frame(self, mappings, kind, addr):
        look = addr - 1 if kind in ('ra', 'async') else addr
        for mp in mappings:
            if mp.start <= look < mp.end:
                f = Frame(kind, addr, mp)
                elf = self.elf(mp.module) if mp.module else None
                if elf:
                    f.vaddr = elf.vaddr(look - mp.start + mp.offset)
                    if f.vaddr is not None:
                        f.symbol = elf.symbol(f.vaddr)
                return f
        return Frame(kind, addr)

    def user_frames(self, sample):
        """[Frame] of the sample's user stack, innermost first, omits left out; [] if none."""
        if not sample.ustack:
            return []
        if sample.old_image:
            return [Frame('old-image', 0, symbol=EXEC_OLD_IMAGE, module=EXEC_OLD_IMAGE_DSO)]
        maps = sample.mappings
        return [self.frame(maps, k, v) for k, v in sample.ustack.entries if k != 'omit']


def frame_name(frame):
    """A frame's symbol, else 'module+0xVADDR', else '??' (outside every mapping)."""
    if frame.symbol:
        return frame.symbol
    if frame.module:
        where = f'+{frame.vaddr:#x}' if frame.vaddr is not None else ''
        return os.path.basename(frame.module) + where
    return '??'


def folded(samples, syms, ksyms=None):
    """Counter of stacks, outermost first as in folded-stack text: {(name, ...): weight}.

    User frames come from @syms; with @ksyms (KernelSymbols), kernel frames
    are appended after them (innermost last), named '[k] symbol'."""
    out = {}
    for s in samples:
        names = [frame_name(f) for f in reversed(syms.user_frames(s))]
        if ksyms and s.kstack:
            names += [f'[k] {n or "??"}' for n in reversed(ksyms.frames(s.kstack))]
        key = tuple(names)
        out[key] = out.get(key, 0) + s.weight
    return out


class KernelSymbols:
    """/proc/kallsyms as the oracle for kernel stacks (addresses need root).

    A BPF program's code ([bpf] lines) is named only by the profile's own records of the
    programs loaded while it was recorded: kallsyms now may hold another program there,
    or none. Its lines only end the symbol below them."""

    def __init__(self, path='/proc/kallsyms'):
        syms = []
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[1] in 'tTWw':
                    bpf = len(parts) >= 4 and parts[3] == '[bpf]'
                    syms.append((int(parts[0], 16), None if bpf else parts[2]))
        syms.sort(key=lambda s: s[0])
        self.starts = [a for a, _ in syms]
        self.names = [n for _, n in syms]
        self.usable = any(self.starts)

    # kallsyms has no sizes: no function reaches this far past its symbol. An address past
    # it is in nothing kallsyms lists now (a BPF program's JIT image, unloaded since: other
    # recordings load and unload theirs beside the tests), not _einittext+0x3c0269ee.
    REACH = 1 << 20

    def symbol(self, addr, kernel_jits=()):
        """The BPF function of @kernel_jits holding @addr (the last recorded), else the
        nearest text symbol at or below @addr (kallsyms has no sizes) within REACH,
        or None."""
        for start, end, name in reversed(kernel_jits):
            if start <= addr < end:
                return name
        i = bisect.bisect_right(self.starts, addr) - 1
        if i < 0 or not self.starts[i] or addr - self.starts[i] >= self.REACH:
            return None
        return self.names[i]

    def frames(self, stack):
        """Names of a kernel stack's frames, innermost first, return addresses at addr - 1."""
        kj = getattr(stack, 'kernel_jits', ())
        return [self.symbol(v - 1 if k == 'ra' else v, kj) for k, v in stack.entries
                if k != 'omit']
