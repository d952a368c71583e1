# SPDX-License-Identifier: BSD-2-Clause
"""A reference folder for `perf script` text, following FlameGraph's stackcollapse-perf.pl.

FlameGraph is not packaged for Debian, so the integration tests fold with
this transcription of stackcollapse-perf.pl's rules (default options):

  - lines starting with '#' are skipped;
  - an event line, `^(\\S.+?)\\s+(\\d+)\\/*(\\d+)*\\s+`, starts a sample and
    names its process (group 1, spaces turned into '_');
  - a frame line, `^\\s*(\\w+)\\s*(.+) \\((\\S*)\\)`, gives (pc, function,
    module); a trailing `+0x<hex>` offset is stripped from the function, a
    function starting with '(' is skipped, `a->b` is split into inlined
    frames (the inner ones get `_[i]`), `[unknown]` becomes `[module]`
    (basename) when the module is known, and the generic tidying applies:
    ';' becomes ':', everything from the first '(' that does not open
    "(anonymous namespace)" is cut unless the name looks like a Go method
    (`.(...).`), and quotes are removed;
  - frames are prepended, so a stack reads outermost first; a blank line
    ends the sample, which counts 1 (the script's period is not used), and
    what is not followed by a blank line is not counted;
  - the output is `process;outermost;...;innermost COUNT`, sorted.

With kernel=True, as with the script's --kernel option, functions of a
module matching `(kernel\.|vmlinux$)` get the suffix `_[k]`.

fold() returns those counts; fold_frames() the same samples as lists of
(function, module) pairs, for comparisons that need to know each frame's
module.
"""

import re
from collections import Counter

_EVENT = re.compile(r'^(\S.+?)\s+(\d+)/*(\d+)*\s+', re.ASCII)
_FRAME = re.compile(r'^\s*(\w+)\s*(.+) \((\S*)\)', re.ASCII)
_OFFSET = re.compile(r'\+0x[\da-f]+$')
_GO_METHOD = re.compile(r'\.\(.*\)\.')
_PARAMS = re.compile(r'\((?!anonymous namespace\)).*')
_KERNEL_MOD = re.compile(r'(kernel\.|vmlinux$)')


class FoldError(Exception):
    """A line stackcollapse-perf.pl would warn about ("Unrecognized line")."""


def _tidy(func, mod):
    if func == '[unknown]' and mod != '[unknown]':
        func = '[' + mod.rsplit('/', 1)[-1] + ']'
    func = func.replace(';', ':')
    if not _GO_METHOD.search(func):
        func = _PARAMS.sub('', func)
    return func.replace('"', '').replace("'", '')


def fold_frames(text, strict=True, kernel=False):
    """[(process name, [(function, module), ...] outermost first)], one per sample.
    @kernel: the script's --kernel option, kernel functions get the suffix _[k]."""
    samples, stack, pname = [], [], None
    lines = text.split('\n')
    for n, line in enumerate(lines, 1):
        if line.startswith('#'):
            continue
        if line == '':
            # as the script does: the process name makes @stack non-empty, so
            # every blank line counts, even one after a sample without frames
            if n < len(lines) or stack or pname is not None:
                samples.append((pname if pname is not None else '', stack))
            stack, pname = [], None
            continue
        m = _EVENT.match(line)
        if m:
            pname = m.group(1).replace(' ', '_')
            continue
        m = _FRAME.match(line)
        if m:
            rawfunc, mod = _OFFSET.sub('', m.group(2)), m.group(3)
            if kernel and _KERNEL_MOD.search(mod):
                rawfunc += '_[k]'
            if rawfunc.startswith('('):
                continue
            inline = []
            for func in rawfunc.split('->'):
                func = _tidy(func, mod)
                if inline:
                    func += '_[i]'
                inline.append((func, mod))
            stack = inline + stack
            continue
        if strict:
            raise FoldError(f'line {n}: unrecognized line: {line!r}')
    return samples


def fold(text, strict=True, kernel=False):
    """Counter {'process;outermost;...;innermost': samples}, as stackcollapse-perf.pl prints."""
    out = Counter()
    for pname, stack in fold_frames(text, strict, kernel):
        out[';'.join([pname] + [f for f, _ in stack])] += 1
    return out


def format_folded(counts):
    return ''.join(f'{k} {counts[k]}\n' for k in sorted(counts))


def parse_folded(text):
    """Counter from folded text: each line 'STACK COUNT'."""
    out = Counter()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, _, count = line.rpartition(' ')
        if not stack or not count.isdigit():
            raise FoldError(f'folded line {n} does not parse: {line!r}')
        out[stack] += int(count)
    return out
