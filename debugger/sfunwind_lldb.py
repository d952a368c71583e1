# SPDX-License-Identifier: BSD-2-Clause
"""LLDB command `sframe`: backtraces and unwind-table lookups through libsfunwind.

    (lldb) command script import /usr/share/sfprof/sfunwind_lldb.py
    (lldb) sframe bt [-v] [-c COUNT] [all]
    (lldb) sframe info ADDR

`sframe bt` walks the selected thread (or every thread with `all`) with
libsfunwind alone: .sframe first, then rows derived from .eh_frame, then
frame pointers. It works where lldb's own unwinder cannot, on code whose only
unwind information is .sframe, and on live processes and core files alike.
Frames are printed as lldb's `bt` prints them; an address no symbol covers is
`module+0xOFFSET`, OFFSET being the file offset (as `sfprof report` names it).
`-v` adds which table found each frame.

`sframe info ADDR` says which table covers ADDR (.sframe, rows from
.eh_frame, none) and the row that applies there.

lldb-16 has no unwinder hook, so this is a command; the per-frame logic is
sfunwind.Stepper, which a scripted frame provider could call unchanged.
"""

import hashlib
import os
import re
import shlex
import sys

import lldb

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import sfunwind  # noqa: E402  (found beside this file)

_EXEC = lldb.ePermissionsExecutable
_SYMBOL_CONTEXT = (lldb.eSymbolContextModule | lldb.eSymbolContextCompUnit |
                   lldb.eSymbolContextFunction | lldb.eSymbolContextSymbol |
                   lldb.eSymbolContextLineEntry)

# One address space per architecture for the life of the session: the
# mappings are rebuilt at each command (modules load and unload), the parsed
# modules and the row cache are kept.
_spaces = {}

# Images of in-memory modules (the vDSO), by content, and their names.
_images = {}
_image_names = {}
_IMAGE_MAX = 1 << 20


class CommandError(Exception):
    """A user error: the message is printed as the command's error."""


def _arch(target):
    triple = target.GetTriple() or ''
    if triple.startswith('x86_64'):
        return sfunwind.ARCH_X86_64
    if triple.startswith(('aarch64', 'arm64')):
        return sfunwind.ARCH_AARCH64
    raise CommandError('unsupported architecture %r (x86_64 and aarch64 only)' % triple)


def _memory_image(target, module):
    """A path to the ELF image of @module read from the process's memory (the
    vDSO: the kernel's signal trampoline on AArch64, the time functions), or
    None. libsfunwind reads files: the image goes into a memfd that this
    process keeps open, one per distinct image, and /proc/self/fd/N names it."""
    base = module.GetObjectFileHeaderAddress().GetLoadAddress(target)
    if base == lldb.LLDB_INVALID_ADDRESS:
        return None
    process = target.GetProcess()
    error = lldb.SBError()
    ehdr = process.ReadMemory(base, 64, error)
    if error.Fail() or not ehdr or ehdr[:4] != b'\x7fELF' or ehdr[4] != 2:
        return None     # ELF64 only: x86-64 and AArch64
    order = 'little' if ehdr[5] == 1 else 'big'

    def field(off, size):
        return int.from_bytes(ehdr[off:off + size], order)
    phoff, shoff = field(32, 8), field(40, 8)
    phentsize, phnum, shentsize, shnum = field(54, 2), field(56, 2), field(58, 2), field(60, 2)
    size = max(phoff + phentsize * phnum, shoff + shentsize * shnum)
    if size > _IMAGE_MAX:
        return None
    image = process.ReadMemory(base, size, error)
    if error.Fail() or not image or len(image) != size:
        return None
    key = hashlib.sha1(image).hexdigest()
    if key not in _images:
        try:
            fd = os.memfd_create('sfunwind-vdso', os.MFD_CLOEXEC)
        except (AttributeError, OSError):
            return None     # no memfd: the vDSO's frames are left to frame pointers
        view = memoryview(image)
        while view:
            view = view[os.write(fd, view):]
        path = '/proc/self/fd/%d' % fd
        _images[key] = path
        _image_names[path] = module.GetFileSpec().GetFilename()
    return _images[key]


def module_mappings(target):
    """[(start, end, file_offset, path)] of the executable segments of every module."""
    out = []
    for module in target.module_iter():
        path = module.GetFileSpec().fullpath
        if not path or not os.path.isfile(path):
            # modules that only exist in memory: the vDSO, whose image is there
            path = None
            if module.GetFileSpec().GetFilename() == '[vdso]':
                path = _memory_image(target, module)
            if not path:
                continue
        for section in module.section_iter():
            if not section.GetPermissions() & _EXEC:
                continue
            start = section.GetLoadAddress(target)
            size = section.GetByteSize()
            if start == lldb.LLDB_INVALID_ADDRESS or not size:
                continue
            out.append((start, start + size, section.GetFileOffset(), path))
    return out


def address_space(target):
    """The sfunwind.AddressSpace of @target's modules as they are loaded now."""
    arch = _arch(target)
    space = _spaces.get(arch)
    if space is None:
        space = sfunwind.AddressSpace(arch, fp_fallback=True)
        _spaces[arch] = space
    else:
        space.clear()
    for start, end, offset, path in module_mappings(target):
        try:
            space.add(start, end, offset, path)
        except sfunwind.Error:
            pass    # an overlapping or odd segment: the rest still unwinds
    return space


_CHUNK = 4096


def memory_reader(process):
    """read(addr, size) -> bytes or None, for one stop of @process.

    A walk reads a few words per frame, mostly from the same stack pages:
    whole chunks are read once through the SB API (one call costs far more
    than the copy), and a chunk that cannot be read whole (the end of a
    mapping) falls back to reading just what was asked.
    """
    chunks = {}

    def direct(addr, size):
        error = lldb.SBError()
        data = process.ReadMemory(addr, size, error)
        if error.Fail() or data is None or len(data) < size:
            return None
        return data

    def chunk(base):
        if base not in chunks:
            chunks[base] = direct(base, _CHUNK)
        return chunks[base]

    def read(addr, size):
        base = addr - addr % _CHUNK
        if addr + size <= base + _CHUNK:
            data = chunk(base)
            if data is not None:
                off = addr - base
                return data[off:off + size]
        return direct(addr, size)
    return read


def _register(frame, names):
    for name in names:
        value = frame.FindRegister(name)
        if value.IsValid() and value.GetValue() is not None:
            return value.GetValueAsUnsigned()
    return 0


def frame0_registers(thread, arch):
    """The registers sfunwind.Stepper takes, read from the thread's frame 0."""
    frame = thread.GetFrameAtIndex(0)
    if arch == sfunwind.ARCH_AARCH64:
        return {'pc': frame.GetPC(), 'sp': frame.GetSP(),
                'fp': _register(frame, ('fp', 'x29')), 'lr': _register(frame, ('lr', 'x30'))}
    return {'pc': frame.GetPC(), 'sp': frame.GetSP(), 'fp': _register(frame, ('rbp',)), 'lr': 0}


def _file_offset(addr):
    section = addr.GetSection()
    if not section.IsValid():
        return None
    return section.GetFileOffset() + addr.GetFileAddress() - section.GetFileAddress()


def describe_address(target, pc, exact):
    """`module`symbol + off at file:line:col` for @pc, or `module+0xOFFSET`.

    A return address (@exact false) is looked up as pc - 1, as lldb does, so
    that a call at the end of a function names that function and its line.
    """
    addr = target.ResolveLoadAddress(pc if exact else pc - 1)
    module = addr.GetModule()
    if not module.IsValid():
        return ''
    mod_name = module.GetFileSpec().GetFilename() or '?'
    sc = addr.GetSymbolContext(_SYMBOL_CONTEXT)
    name = start = None
    function, symbol = sc.GetFunction(), sc.GetSymbol()
    if function.IsValid():
        name = function.GetDisplayName() or function.GetName()
        start = function.GetStartAddress().GetLoadAddress(target)
    elif symbol.IsValid() and not symbol.IsSynthetic():
        name = symbol.GetDisplayName() or symbol.GetName()
        start = symbol.GetStartAddress().GetLoadAddress(target)
    if name is None or start == lldb.LLDB_INVALID_ADDRESS:
        offset = _file_offset(addr)
        if offset is None:
            return mod_name
        return '%s+0x%x' % (mod_name, offset + (0 if exact else 1))
    text = '%s`%s + %d' % (mod_name, name, pc - start)
    line = sc.GetLineEntry()
    if line.IsValid() and line.GetFileSpec().GetFilename() and line.GetLine():
        text += ' at %s:%d' % (line.GetFileSpec().GetFilename(), line.GetLine())
        if line.GetColumn():
            text += ':%d' % line.GetColumn()
    return text


def thread_header(thread, selected):
    text = '%s thread #%d' % ('*' if selected else ' ', thread.GetIndexID())
    name = thread.GetName()
    if name:
        text += ", name = '%s'" % name
    if thread.GetStopReason() not in (lldb.eStopReasonNone, lldb.eStopReasonInvalid):
        reason = thread.GetStopDescription(256)
        if reason:
            text += ', stop reason = %s' % reason
    return text


def backtrace(target, process, thread, space, selected, verbose=False, limit=1024):
    """The lines `sframe bt` prints for @thread."""
    arch = space.arch
    stepper = sfunwind.Stepper(space, sframe_only=False)
    regs = frame0_registers(thread, arch)
    # one frame past the limit tells a cut walk from one that ends there
    walked, stop = stepper.walk(regs, memory_reader(process), limit=limit + 1)
    cut = len(walked) > limit
    frames = walked[:limit]
    lines = [thread_header(thread, selected)]
    star = selected and thread.GetSelectedFrame().GetFrameID() == 0
    for i, (pc, precise, source) in enumerate(frames):
        # A frame whose caller's pc is precise is a signal trampoline: its pc
        # is the handler's return address, the trampoline's first
        # instruction, and names the trampoline itself.
        trampoline = i + 1 < len(walked) and walked[i + 1][1]
        where = describe_address(target, pc, precise or trampoline)
        text = '  %s frame #%d: 0x%016x' % ('*' if i == 0 and star else ' ', i, pc)
        if where:
            text += ' ' + where
        if verbose:
            text += '  [%s]' % sfunwind.source_name(source)
        lines.append(text)
    if cut:
        lines.append('  sframe: stopped after frame #%d: frame limit (%d)' % (len(frames) - 1,
                                                                                limit))
    elif stop is not None and stop != sfunwind.STOP_OUTERMOST:
        lines.append('  sframe: stopped after frame #%d: %s' % (len(frames) - 1,
                                                                sfunwind.stop_name(stop)))
    return lines


def _target_process(debugger, exe_ctx):
    """The target and process the command runs in: the execution context's
    (a script may pass one to HandleCommand), else the selected ones."""
    target = exe_ctx.GetTarget() if exe_ctx and exe_ctx.GetTarget().IsValid() else None
    if target is None:
        target = debugger.GetSelectedTarget()
    if not target.IsValid():
        raise CommandError('no target: create one with `target create` (or `--core`)')
    process = target.GetProcess()
    if not process.IsValid() or process.GetState() in (lldb.eStateInvalid, lldb.eStateUnloaded,
                                                       lldb.eStateConnected, lldb.eStateExited,
                                                       lldb.eStateDetached):
        raise CommandError('no process: launch or attach one, or load a core file')
    if process.GetState() == lldb.eStateRunning:
        raise CommandError('the process is running: interrupt it first')
    return target, process


def _parse_address(target, text):
    try:
        return int(text, 0)
    except ValueError:
        pass
    # SYMBOL or SYMBOL+OFFSET, even without debug info to type the symbol
    m = re.match(r'^\s*([A-Za-z_.$][\w.$@]*)\s*(?:([+-])\s*(0[xX][0-9a-fA-F]+|\d+))?\s*$', text)
    if m:
        offset = int(m.group(3), 0) if m.group(3) else 0
        if m.group(2) == '-':
            offset = -offset
        for sc in target.FindSymbols(m.group(1)):
            addr = sc.GetSymbol().GetStartAddress().GetLoadAddress(target)
            if addr != lldb.LLDB_INVALID_ADDRESS:
                return addr + offset
    frame = target.GetProcess().GetSelectedThread().GetSelectedFrame()
    value = frame.EvaluateExpression(text) if frame.IsValid() else target.EvaluateExpression(text)
    if not value.IsValid() or value.GetError().Fail():
        error = value.GetError().GetCString() if value.IsValid() else None
        raise CommandError('cannot evaluate %r: %s' % (text, error or 'invalid expression'))
    addr = value.GetValueAsUnsigned()
    if value.GetType().IsFunctionType():
        addr = value.GetAddress().GetLoadAddress(target)
    return addr


def sframe_bt(debugger, command, exe_ctx=None):
    try:
        args = shlex.split(command)
    except ValueError as e:
        raise CommandError(str(e))
    usage = 'usage: sframe bt [-v] [-c COUNT] [all]'
    verbose, all_threads, limit = False, False, 1024
    i = 0
    while i < len(args):
        a = args[i]
        if a == '-v':
            verbose = True
        elif a == 'all':
            all_threads = True
        elif a == '-c' and i + 1 < len(args):
            i += 1
            try:
                limit = int(args[i], 0)
            except ValueError:
                raise CommandError('-c takes a number of frames\n' + usage)
            if limit < 1:
                raise CommandError('-c takes a number of frames >= 1\n' + usage)
        else:
            raise CommandError('unexpected argument %r\n%s' % (a, usage))
        i += 1
    target, process = _target_process(debugger, exe_ctx)
    space = address_space(target)
    selected = process.GetSelectedThread()
    if exe_ctx and exe_ctx.GetThread().IsValid() and exe_ctx.GetProcess() == process:
        selected = exe_ctx.GetThread()
    threads = list(process) if all_threads else [selected]
    out = []
    for thread in threads:
        if not thread.IsValid():
            continue
        if out:
            out.append('')
        out.extend(backtrace(target, process, thread, space,
                             thread.GetThreadID() == selected.GetThreadID(), verbose, limit))
    return out


def sframe_info(debugger, command, exe_ctx=None):
    text = command.strip()
    if not text:
        raise CommandError('usage: sframe info ADDR')
    target, _process = _target_process(debugger, exe_ctx)
    pc = _parse_address(target, text)
    space = address_space(target)
    lookup = space.lookup(pc)
    lookup.path = _image_names.get(lookup.path, lookup.path)
    out = lookup.describe()
    where = describe_address(target, pc, True)
    if where:
        out.insert(1, '  symbol: ' + where)
    return out


class _Command:
    handler = None
    short = ''
    long = ''

    def __init__(self, debugger, internal_dict):
        pass

    def get_short_help(self):
        return self.short

    def get_long_help(self):
        return self.long

    def __call__(self, debugger, command, exe_ctx, result):
        try:
            lines = type(self).handler(debugger, command, exe_ctx)
        except (CommandError, sfunwind.Error) as e:
            result.SetError('sframe: %s' % e)
            return
        result.AppendMessage('\n'.join(lines))
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)


class BtCommand(_Command):
    handler = staticmethod(sframe_bt)
    short = 'Backtrace through libsfunwind (.sframe, .eh_frame rows, frame pointers).'
    long = ('sframe bt [-v] [-c COUNT] [all]\n'
            'Unwinds the selected thread, or all threads, with libsfunwind alone and\n'
            'prints the frames as `bt` does. -v shows which table found each frame;\n'
            '-c stops after COUNT frames. A last line says why the walk stopped when\n'
            'it did not reach the outermost frame.')


class InfoCommand(_Command):
    handler = staticmethod(sframe_info)
    short = 'Which unwind table covers an address, and its row there.'
    long = ('sframe info ADDR\n'
            'ADDR is a number, SYMBOL[+OFFSET], or an expression ($pc). Says whether\n'
            '.sframe, rows derived from .eh_frame, or nothing covers it, and the\n'
            'CFA/RA/FP rules of the row.')


def _run(debugger, command):
    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(command, result)
    return result.Succeeded()


def __lldb_init_module(debugger, internal_dict):
    _run(debugger, 'command container delete sframe')  # a second import replaces the first
    _run(debugger, 'command container add -h "libsfunwind: SFrame backtraces and lookups." '
                   '-H "sframe bt [all] | sframe info ADDR" sframe')
    for name, cls in (('bt', BtCommand), ('info', InfoCommand)):
        if not _run(debugger, 'command script add -c %s.%s sframe %s' % (__name__, cls.__name__,
                                                                          name)):
            print('sfunwind_lldb: cannot add `sframe %s`' % name, file=sys.stderr)
