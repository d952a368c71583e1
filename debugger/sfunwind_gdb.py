# SPDX-License-Identifier: BSD-2-Clause
"""A GDB Python unwinder over libsfunwind: SFrame-only code unwinds in GDB.

Load it with `gdb -x sfunwind_gdb.py` or `source sfunwind_gdb.py` (from the
build tree's debugger/ or the installed share/sfprof/). For each frame whose
pc has .sframe rows it asks libsfunwind (through sfunwind.py, found next to
this file) for the caller's pc, sp and frame pointer. Frames of modules
whose .eh_frame covers the pc, and frames no table covers, are left to GDB's
own unwinders, so that libc's frames keep GDB's full register state.

The caller's registers it gives GDB are the ones SFrame describes: pc, sp
and the frame pointer (rbp, x29). Every other register of a frame it
unwinds is <not saved>; on AArch64 that includes x30 (SFrame does not say
where the caller's link register went), except below a signal frame.

Commands:
  info sframe [ADDR]          which table covers ADDR (default: the selected
                              frame's pc) and its row
  set sframe-unwinder on|off  enable or disable the unwinder (flushes frames)
  set debug sframe-unwinder on|off  print each frame the unwinder takes
"""

import os
import re
import struct
import sys

import gdb
import gdb.unwinder

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sfunwind  # noqa: E402  (found next to this file)

UNWINDER_NAME = 'sframe'
_MASK64 = 0xffffffffffffffff


class FrameId:
    """A frame's identity for GDB: its CFA (the caller's sp) and the function start."""

    def __init__(self, sp, pc):
        # gdb 13 takes only gdb.Value here, not Python integers
        self.sp = gdb.Value(sp)
        self.pc = gdb.Value(pc)


def _gdb_int(value):
    return int(value) & _MASK64


def _address(value):
    """An address from an expression's value: functions and arrays by their address."""
    if value.type.strip_typedefs().code in (gdb.TYPE_CODE_FUNC, gdb.TYPE_CODE_ARRAY):
        value = value.address
    return _gdb_int(value)


# --- ELF section headers, for targets GDB only describes by its objfiles ---

def _elf_sections(path):
    """{name: (addr, offset, size, flags)} of a 64-bit little-endian ELF file, or {}."""
    try:
        with open(path, 'rb') as f:
            ehdr = f.read(64)
            if len(ehdr) < 64 or ehdr[:4] != b'\x7fELF' or ehdr[4] != 2 or ehdr[5] != 1:
                return {}
            shoff, = struct.unpack_from('<Q', ehdr, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from('<HHH', ehdr, 0x3a)
            if not shoff or shentsize < 64 or not shnum or shstrndx >= shnum:
                return {}
            f.seek(shoff)
            table = f.read(shentsize * shnum)
            if len(table) < shentsize * shnum:
                return {}
            hdrs = [struct.unpack_from('<IIQQQQIIQQ', table, i * shentsize)
                    for i in range(shnum)]
            strtab = hdrs[shstrndx]
            f.seek(strtab[4])
            names = f.read(strtab[5])
    except OSError:
        return {}
    out = {}
    for h in hdrs:
        name_off, flags, addr, offset, size = h[0], h[2], h[3], h[4], h[5]
        end = names.find(b'\0', name_off)
        if name_off >= len(names) or end < 0:
            continue
        out[names[name_off:end].decode(errors='replace')] = (addr, offset, size, flags)
    return out


_SHF_EXECINSTR = 0x4


def _objfile_mappings(info_files, exec_file):
    """[(start, end, file_offset, path)] of the executable sections `info files` lists.

    Section addresses in `info files` are where the target has them; the
    file offset of each comes from the ELF file's own section headers.
    """
    sections = {}
    out = []
    for line in info_files.splitlines():
        m = re.match(r'\s*(0x[0-9a-f]+) - (0x[0-9a-f]+) is (\S+)(?: in (.*\S))?\s*$', line)
        if not m:
            continue
        path = m.group(4) or exec_file
        if not path:
            continue
        if path not in sections:
            sections[path] = _elf_sections(path)
        sec = sections[path].get(m.group(3))
        if not sec or not sec[3] & _SHF_EXECINSTR:
            continue
        start, end = int(m.group(1), 16), int(m.group(2), 16)
        if end > start:
            out.append((start, end, sec[1], path))
    return out


# --- the process as libsfunwind sees it ---

class _Process:
    """The address space of the selected inferior, reloaded when it may have changed."""

    def __init__(self):
        self.space = None
        self.arch = None
        self.key = None
        self.stale = True
        self.reloaded_since_stop = False
        self.how = None         # 'pid', 'proc-mappings', 'objfiles'
        self.error = None

    def invalidate(self, *_args):
        self.stale = True
        self.reloaded_since_stop = False

    def _key(self):
        inf = gdb.selected_inferior()
        return (inf.num, inf.pid, gdb.current_progspace().filename)

    def get(self, arch):
        if self.space is None or self.arch != arch:
            if self.space is not None:
                self.space.close()
            self.space = sfunwind.AddressSpace(arch)
            self.arch = arch
            self.stale = True
        if self.stale or self.key != self._key():
            if self.how not in (None, 'pid') and self.key == self._key() and _mid_stop():
                # the last mappings serve until GDB has stopped (see _mid_stop)
                return self.space
            self.reload()
        return self.space

    def reload(self):
        """Describe the selected inferior's modules to libsfunwind afresh."""
        self.space.clear()
        self.stale = False
        self.reloaded_since_stop = True
        self.key = self._key()
        self.error = None
        inf = gdb.selected_inferior()
        conn = getattr(inf, 'connection', None)
        kind = getattr(conn, 'type', None) if conn is not None else None
        if inf.pid > 0 and kind == 'native':
            try:
                self.space.load_pid(inf.pid)
                self.how = 'pid'
                return
            except sfunwind.Error as e:
                self.error = str(e)
                self.space.clear()
        # core files (gdb reads the NT_FILE note), gdbserver, other targets
        text = ''
        if not _mid_stop():
            try:
                text = gdb.execute('info proc mappings', to_string=True)
            except gdb.error:
                pass
        try:
            if text and self.space.add_maps_table(text):
                self.how = 'proc-mappings'
                return
        except sfunwind.Error as e:
            self.error = str(e)
            self.space.clear()
        # qemu-user and other stubs that do not give the maps: GDB's objfiles
        try:
            text = gdb.execute('info files', to_string=True)
        except gdb.error:
            text = ''
        exec_file = gdb.current_progspace().filename
        for start, end, off, path in _objfile_mappings(text, exec_file):
            try:
                self.space.add(start, end, off, path)
            except sfunwind.Error as e:
                self.error = str(e)
        self.how = 'objfiles'

    def retry_after_miss(self):
        """A pc no mapping holds: reload once per stop. @return True when reloaded."""
        if self.reloaded_since_stop:
            return False
        self.reload()
        return True


def _mid_stop():
    """Whether GDB is still handling a stop (the steps of a stepi N, a step
    over an inlined call, a breakpoint's condition) rather than done with it:
    the thread is running for GDB until then. No command that talks to a
    remote target may run there: `info proc mappings` (which reads
    /proc/PID/maps through the target) run from a sniffer in the middle of a
    stepi on qemu-user's stub, which answers it with an error, left GDB
    taking the thread as running ever after ("Selected thread is running")."""
    thread = gdb.selected_thread()
    try:
        return thread is not None and thread.is_running()
    except gdb.error:
        return False


_ARCHES = {'i386:x86-64': sfunwind.ARCH_X86_64, 'aarch64': sfunwind.ARCH_AARCH64}


def _arch_of(gdbarch):
    return _ARCHES.get(gdbarch.name())


class SFrameUnwinder(gdb.unwinder.Unwinder):
    """Unwinds the frames whose pc has .sframe rows, through libsfunwind."""

    def __init__(self):
        super().__init__(UNWINDER_NAME)
        self.process = _Process()
        self.debug = False
        # (sp, pc) of callers this unwinder found with a precise pc (below a
        # signal trampoline it unwound itself)
        self.precise_callers = set()
        # (thread ptid, level) -> the pc of each frame GDB asked about
        self._level_pcs = {}
        # thread ptid -> the levels GDB asked this unwinder about since it
        # last built that thread's frames, in order
        self._sniffed = {}
        self._reg_types = {}

    def reset(self, *_args):
        """The process ran or changed: forget what was learnt about its frames.

        Not on stop events: GDB has already unwound the frames it prints by
        then, and those must stay known."""
        self.precise_callers.clear()
        self._level_pcs.clear()
        self._sniffed.clear()
        self.process.invalidate()

    # A frame's pc is precise (the instruction to execute, not a return
    # address) as GDB decides it (get_frame_address_in_block): when the next
    # newer frame that is not an inline frame is the sentinel (the frame is
    # frame 0, or the real frame of inline frames at the top of the stack),
    # or is a signal trampoline. GDB 13's PendingFrame cannot say what the
    # newer frames are. But GDB asks the Python unwinders about every frame
    # except inline and tail-call frames (its own unwinders for those come
    # first), once per frame, newest first; so the last level this unwinder
    # was asked about is that newer frame, and none means only inline frames
    # are newer. Whether it is a signal trampoline is read from the
    # instructions at its pc, as GDB's own sigtramp sniffers do, never from
    # gdb.Frame: while GDB sniffs a frame, the ids of the frames newer than
    # it may still be being computed (stepping past inline frames computes
    # them), and asking gdb.Frame about them aborts GDB on its assertion
    # in get_frame_id.
    def _is_precise(self, thread, level, arch):
        levels = self._sniffed.get(thread)
        if not levels:
            return True
        pc = self._level_pcs.get((thread, levels[-1]))
        return pc is not None and self._is_sigtramp(pc, arch)

    def _generation(self, thread, level):
        """Record that GDB asks about @level; a level not above the last one
        asked means GDB rebuilt its frames (a flush, a thread switch)."""
        levels = self._sniffed.setdefault(thread, [])
        if levels and level <= levels[-1]:
            levels.clear()
            for key in [k for k in self._level_pcs if k[0] == thread]:
                del self._level_pcs[key]
        return levels

    # The return trampolines the kernel's signal frames return to: x86-64
    # glibc's __restore_rt (mov $15,%rax; syscall), AArch64's vDSO
    # __kernel_rt_sigreturn (mov x8,#139; svc #0). A trampoline frame's pc is
    # at one of their instructions.
    _SIGTRAMPS = {
        sfunwind.ARCH_X86_64: (bytes.fromhex('48c7c00f0000000f05'), (0, 7)),
        sfunwind.ARCH_AARCH64: (bytes.fromhex('681180d2010000d4'), (0, 4)),
    }

    def _is_sigtramp(self, pc, arch):
        code, offsets = self._SIGTRAMPS.get(arch, (None, ()))
        if code is None:
            return False
        inferior = gdb.selected_inferior()
        for off in offsets:
            if pc < off:
                continue
            try:
                if inferior.read_memory(pc - off, len(code)).tobytes() == code:
                    return True
            except (gdb.error, gdb.MemoryError):
                pass
        return False

    def _value(self, pending, arch, name, number):
        t = self._reg_types.get((arch, name))
        if t is None:
            t = pending.read_register(name).type
            self._reg_types[(arch, name)] = t
        return gdb.Value(number).cast(t)

    def _log(self, msg):
        if self.debug:
            gdb.write('sframe-unwinder: %s\n' % msg, gdb.STDLOG)

    # GDB's Python API cannot mark a frame the outermost one (GDB's own
    # outer_frame_id is not reachable from it), and GDB stops silently
    # after the entry function only by its symbol, which a stripped program
    # does not have. So an outermost frame this unwinder takes has a caller
    # at pc 0: GDB shows that one frame and stops after it ("zero PC":
    # normal frames never return there), with no error. (A frame filter
    # could hide it from `bt`, but GDB prints every frame through a filter
    # differently: "in  ()" for "in ?? ()".)
    def _outermost(self, pending, arch, level, pc, sp, func):
        names = sfunwind.REGISTERS[arch]
        info = pending.create_unwind_info(FrameId(sp, func or pc))
        info.add_saved_register(names['pc'], self._value(pending, arch, names['pc'], 0))
        info.add_saved_register(names['sp'], self._value(pending, arch, names['sp'], sp))
        info.add_saved_register(names['fp'], self._value(pending, arch, names['fp'], 0))
        self._log('level %d pc 0x%x: the outermost frame (function 0x%x)' % (level, pc, func))
        return info

    def __call__(self, pending):
        if not self.enabled:
            return None
        thread = gdb.selected_thread()
        thread = thread.ptid if thread is not None else None
        level = pending.level()
        levels = self._generation(thread, level)
        try:
            return self._unwind(pending, thread, level)
        except (gdb.error, gdb.MemoryError, sfunwind.Error) as e:
            self._log('level %d: %s' % (level, e))
            return None
        finally:
            levels.append(level)

    def _unwind(self, pending, thread, level):
        arch = _arch_of(pending.architecture())
        if arch is None:
            return None
        names = sfunwind.REGISTERS[arch]
        pc = _gdb_int(pending.read_register(names['pc']))
        sp = _gdb_int(pending.read_register(names['sp']))
        precise = (level == 0 or (sp, pc) in self.precise_callers or
                   self._is_precise(thread, level, arch))
        self._level_pcs[(thread, level)] = pc
        space = self.process.get(arch)
        at = pc if precise else (pc - 1) & _MASK64
        lookup = space.lookup(at)
        if lookup.path is None and self.process.retry_after_miss():
            space = self.process.space
            lookup = space.lookup(at)
        if lookup.source == sfunwind.SRC_NONE and lookup.func_start:
            # the entry routine of its module (_start), which no table covers
            return self._outermost(pending, arch, level, pc, sp, lookup.func_start)
        if lookup.source != sfunwind.SRC_SFRAME:
            return None
        if space.eh_frame_covers(at):
            self._log('level %d pc 0x%x: .eh_frame covers it, left to GDB' % (level, pc))
            return None
        fp = _gdb_int(pending.read_register(names['fp']))
        lr = 0
        if precise and names['lr']:
            lr_value = pending.read_register(names['lr'])
            if not lr_value.is_optimized_out:
                lr = _gdb_int(lr_value)
        inferior = gdb.selected_inferior()

        def read(addr, size):
            return inferior.read_memory(addr, size).tobytes()

        stop, step = space.step(pc, sp, fp, lr, precise, read)
        if stop == sfunwind.STOP_OUTERMOST:
            # the row says the return address is undefined, or it is 0
            return self._outermost(pending, arch, level, pc, sp, lookup.func_start)
        if stop:
            self._log('level %d pc 0x%x: %s, left to GDB' % (level, pc, sfunwind.stop_name(stop)))
            return None
        info = pending.create_unwind_info(FrameId(step.cfa, lookup.func_start))
        info.add_saved_register(names['pc'], self._value(pending, arch, names['pc'], step.pc))
        info.add_saved_register(names['sp'], self._value(pending, arch, names['sp'], step.sp))
        info.add_saved_register(names['fp'], self._value(pending, arch, names['fp'], step.fp))
        if step.precise:
            # a signal frame: the kernel saved every register, lr included
            self.precise_callers.add((step.sp, step.pc))
            if names['lr']:
                info.add_saved_register(names['lr'],
                                        self._value(pending, arch, names['lr'], step.lr))
        self._log('level %d pc 0x%x%s: caller pc 0x%x sp 0x%x fp 0x%x (cfa 0x%x, function 0x%x)'
                  % (level, pc, ' (precise)' if precise else '', step.pc, step.sp, step.fp,
                     step.cfa, lookup.func_start))
        return info


UNWINDER = SFrameUnwinder()


class SFrameUnwinderParameter(gdb.Parameter):
    """Whether GDB unwinds frames with .sframe rows through libsfunwind."""

    set_doc = 'Set whether the SFrame unwinder (libsfunwind) is used.'
    show_doc = 'Show whether the SFrame unwinder (libsfunwind) is used.'

    def __init__(self):
        super().__init__('sframe-unwinder', gdb.COMMAND_STACK, gdb.PARAM_BOOLEAN)
        self.value = True

    def get_set_string(self):
        UNWINDER.enabled = bool(self.value)
        UNWINDER.reset()
        gdb.invalidate_cached_frames()
        return ''

    def get_show_string(self, svalue):
        # `disable unwinder global sframe` flips the same switch
        return 'The SFrame unwinder is %s.' % ('on' if UNWINDER.enabled else 'off')


class SFrameDebugParameter(gdb.Parameter):
    """Print each frame the SFrame unwinder takes, and why it leaves others."""

    set_doc = 'Set SFrame unwinder debugging.'
    show_doc = 'Show SFrame unwinder debugging.'

    def __init__(self):
        super().__init__('debug sframe-unwinder', gdb.COMMAND_MAINTENANCE, gdb.PARAM_BOOLEAN)
        self.value = False

    def get_set_string(self):
        UNWINDER.debug = bool(self.value)
        return ''

    def get_show_string(self, svalue):
        return 'SFrame unwinder debugging is %s.' % svalue


class InfoSFrame(gdb.Command):
    """Show which unwind table covers an address, and its row.

Usage: info sframe [ADDR]
ADDR defaults to the selected frame's pc; for a caller frame (a return
address) the row looked up is the one for pc - 1, as the unwinder does."""

    def __init__(self):
        super().__init__('info sframe', gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        try:
            self._info(arg)
        except gdb.error as e:
            raise gdb.GdbError('info sframe: %s' % e)
        except sfunwind.Error as e:
            raise gdb.GdbError('info sframe: %s' % e)

    def _info(self, arg):
        arch = None
        if arg.strip():
            pc = _address(gdb.parse_and_eval(arg))
            at = pc
            try:
                arch = _arch_of(gdb.selected_frame().architecture())
            except gdb.error:
                pass
            note = None
        else:
            frame = gdb.selected_frame()
            arch = _arch_of(frame.architecture())
            pc = frame.pc()
            # as GDB: precise unless the next newer frame but inline ones is a normal frame
            newer = frame.newer()
            while newer is not None and newer.type() == gdb.INLINE_FRAME:
                newer = newer.newer()
            precise = newer is None or newer.type() not in (gdb.NORMAL_FRAME,
                                                            gdb.TAILCALL_FRAME)
            at = pc if precise else pc - 1
            note = None if precise else 'frame #%d: a return address, row for pc - 1 = 0x%x' % (
                frame.level(), at)
        if arch is None:
            arch = _arch_of(gdb.selected_inferior().architecture())
        if arch is None:
            raise gdb.GdbError('info sframe: this architecture has no SFrame unwinder')
        space = UNWINDER.process.get(arch)
        lookup = space.lookup(at)
        if lookup.path is None and UNWINDER.process.retry_after_miss():
            space = UNWINDER.process.space
            lookup = space.lookup(at)
        lines = lookup.describe()
        if note:
            lines.insert(1, '  ' + note)
        if lookup.source == sfunwind.SRC_NONE and lookup.func_start:
            who = ('the SFrame unwinder (libsfunwind): the outermost frame'
                   if UNWINDER.enabled else 'GDB (the SFrame unwinder is off)')
        elif lookup.source == sfunwind.SRC_SFRAME:
            if space.eh_frame_covers(at):
                who = 'GDB (the module\'s .eh_frame covers it too)'
            else:
                who = 'the SFrame unwinder (libsfunwind)' if UNWINDER.enabled \
                    else 'GDB (the SFrame unwinder is off)'
        else:
            who = 'GDB'
        lines.append('  unwound by: ' + who)
        lines.append('  modules from: %s%s' % (
            UNWINDER.process.how, ' (%s)' % UNWINDER.process.error if UNWINDER.process.error
            else ''))
        gdb.write('\n'.join(lines) + '\n')


def _on_new_objfile(_event):
    UNWINDER.reset()


def _on_stop(_event):
    # the mappings may have changed while it ran; GDB's frames are kept
    UNWINDER.process.invalidate()


def _install():
    try:
        sfunwind.library()
    except sfunwind.Error as e:
        gdb.write('sfunwind_gdb.py: %s: the SFrame unwinder is not installed\n' % e,
                  gdb.STDERR)
        return
    # sourced again: the new copy replaces the old one everywhere
    for registry, handler in getattr(gdb, '_sframe_unwinder_handlers', []):
        registry.disconnect(handler)
    gdb.unwinder.register_unwinder(None, UNWINDER, replace=True)
    SFrameUnwinderParameter()
    SFrameDebugParameter()
    InfoSFrame()
    ev = gdb.events
    handlers = [(ev.stop, _on_stop), (ev.cont, UNWINDER.reset),
                (ev.exited, UNWINDER.reset), (ev.new_objfile, _on_new_objfile),
                (ev.clear_objfiles, UNWINDER.reset)]
    for name in ('new_inferior', 'inferior_deleted', 'memory_changed', 'register_changed',
                 'inferior_call'):
        if hasattr(ev, name):
            handlers.append((getattr(ev, name), UNWINDER.reset))
    for registry, handler in handlers:
        registry.connect(handler)
    gdb._sframe_unwinder_handlers = handlers


_install()
