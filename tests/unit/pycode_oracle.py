# SPDX-License-Identifier: BSD-2-Clause
# The oracle of test_pycode.c: code objects of this interpreter, their addresses (id) and what
# their names and lines are by the interpreter's own co_lines()/co_positions(). Waits on stdin.
import sys

QCAP, FCAP = 256, 512

SRC = '''
def rec(n):
    if n == 0:
        return 0
    return rec(n - 1) + 1

def gen(k):
    for i in range(k):
        yield i * 2

class Outer:
    class Inner:
        def method(self):
            def nested():
                return [x for x in range(3)]
            return nested

    def \u00f1and\u00fa(self):
        return 1

def \u540d\u524d():
    return 2

def \U00020000():
    return 3

def many_lines(a):
    b = a + 1
    for i in range(a):
        b += i
    try:
        raise ValueError(b)
    except ValueError:
        c = 2
    finally:
        b -= 1
    return (a +
            b +
            c)

lam = lambda x: x + 1
'''


def expected(s, cap):
    out = b''
    for ch in s:
        if ch == '\0' or 0xd800 <= ord(ch) <= 0xdfff:
            ch = '\ufffd'
        e = ch.encode()
        if len(out) + len(e) > cap - 1:
            break
        out += e
    return out


def walk(code, seen, out):
    if id(code) in seen:
        return
    seen.add(id(code))
    out.append(code)
    for c in code.co_consts:
        if isinstance(c, type(code)):
            walk(c, seen, out)


def main():
    minor = sys.version_info[1]
    codes, seen = [], set()
    for fname in ['/tmp/t\u00ebst_\U0001f600/w\u00f6rk.py', 'plain.py', 'caf\u00e9.py']:
        walk(compile(SRC, fname, 'exec'), seen, codes)
    import json.decoder
    import functools
    for mod in (json.decoder, functools):
        for v in list(vars(mod).values()):
            for f in [v] + (list(vars(v).values()) if isinstance(v, type) else []):
                c = getattr(f, '__code__', None)
                if c is not None:
                    walk(c, seen, codes)
    some = codes[1]
    if minor >= 11:
        codes.append(some.replace(co_qualname='q' * 400, co_filename='\u00e9' * 700))
        codes.append(some.replace(co_qualname='a\0b', co_filename='\U0001f600' * 300))
    else:
        codes.append(some.replace(co_name='n' * 400, co_filename='\u00e9' * 700))
        codes.append(some.replace(co_name='a\0b'))
    w = sys.stdout.write
    w('V %d %d\n' % (minor, int(hasattr(sys, 'gettotalrefcount'))))
    try:
        import ctypes
        runtime = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, '_PyRuntime'))
    except (ImportError, ValueError):
        runtime = 0
    w('R %d\n' % runtime)
    for c in codes:
        q = c.co_qualname if minor >= 11 else c.co_name
        w('C %d %d %s %s\n' % (id(c), c.co_firstlineno, expected(q, QCAP).hex() or '-',
                                expected(c.co_filename, FCAP).hex() or '-'))
        nbytes = len(c.co_code)
        lines = [0] * (nbytes // 2)
        for start, end, line in c.co_lines():
            for off in range(start, end, 2):
                if off // 2 < len(lines):
                    lines[off // 2] = line or 0
        pos = [p[0] or 0 for p in c.co_positions()] if minor >= 11 else None
        for i, line in enumerate(lines):
            w('L %d %d %d\n' % (2 * i, line, pos[i] if pos else -1))
        w('L %d 0 -1\n' % (nbytes + 64))
    w('E\n')
    sys.stdout.flush()
    sys.stdin.readline()


main()
