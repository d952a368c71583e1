# SPDX-License-Identifier: BSD-2-Clause
"""Code labels of an ELF file as readelf lists them, for the naming oracles.

perf names an address no function symbol covers by a code label: a symbol
of type NOTYPE, named, defined in an executable section (flag X), not
HIDDEN or INTERNAL, which runs up to the next symbol (label or function)
or its section's end (ld.so's `_start`, size 0, is one). This reads the
labels and function starts of .symtab and .dynsym with `readelf -SW -sW`,
independently of sfprof's code, and answers that rule:

    labels = Labels.of(path)
    labels.lookup(vaddr)    # (name, offset) or None

debug_file(path) is the file /usr/lib/debug/.build-id names for a binary.
"""

import bisect
import functools
import re
import subprocess

_SECTION = re.compile(r'^\s*\[\s*(\d+)\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+'
                      r'[0-9a-f]+\s+(\S*)\s')
_SYM = re.compile(r'^\s*\d+:\s+([0-9a-f]+)\s+(\d+)\s+(NOTYPE|FUNC|IFUNC)\s+\S+\s+(\S+)\s+'
                  r'(\d+)\s+(\S+)')


def build_id(path):
    out = subprocess.run(['readelf', '-n', path], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    m = re.search(r'Build ID: ([0-9a-f]+)', out)
    return m.group(1) if m else None


@functools.lru_cache(maxsize=None)
def debug_file(path):
    """The debug file of @path under /usr/lib/debug/.build-id, or None."""
    bid = build_id(path)
    if not bid:
        return None
    p = f'/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug'
    try:
        open(p, 'rb').close()
    except OSError:
        return None
    return p


class Labels:
    _cache = {}

    def __init__(self, path):
        out = subprocess.run(['readelf', '-SW', '-sW', path], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
        sections = {}
        syms = []       # (addr, is_label, name, section end)
        for line in out.splitlines():
            m = _SECTION.match(line)
            if m:
                sections[int(m.group(1))] = (int(m.group(3), 16), int(m.group(4), 16),
                                             'X' in m.group(5))
                continue
            m = _SYM.match(line)
            if not m:
                continue
            addr, kind, vis, ndx = int(m.group(1), 16), m.group(3), m.group(4), int(m.group(5))
            sec = sections.get(ndx)
            if not sec or not sec[2] or not sec[0] <= addr < sec[0] + sec[1]:
                continue
            label = kind == 'NOTYPE'
            if label and vis in ('HIDDEN', 'INTERNAL'):
                continue
            syms.append((addr, 0 if not label else 1, m.group(6).split('@')[0] if not label
                         else m.group(6), sec[0] + sec[1]))
        syms.sort()
        self.syms = syms
        self.starts = [s[0] for s in syms]

    @classmethod
    def of(cls, path):
        if path not in cls._cache:
            cls._cache[path] = cls(path)
        return cls._cache[path]

    def lookup(self, vaddr):
        """(label, offset) of the label holding @vaddr, by perf's rule, or None. Function
        symbols bound labels; whether a function covers @vaddr is the caller's question."""
        i = bisect.bisect_right(self.starts, vaddr)
        if not i:
            return None
        at = self.starts[i - 1]
        group = self.syms[bisect.bisect_left(self.starts, at):i]
        if any(not label for _, label, _, _ in group):
            return None         # a function starts there: it names the code
        addr, _, name, end = group[0]
        nxt = self.starts[i] if i < len(self.starts) else end
        if vaddr >= min(end, nxt):
            return None
        return name, vaddr - addr
