#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`sfprof cbf encode` and `sfprof cbf decode` as a user drives them.

- Swift's published vector (test/Backtracing/CompactBacktraceFormat.swift,
  testRepeatLimit) through `decode --hex`: 1048578 `pc 0x7f` lines and `end`;
  one more repeat is refused after `pc 0x7f`.
- Swift's testAllInstructions frames through `encode --hex` give the bytes
  derived by hand from Swift's encoder rules (see tests/unit/test_cbf.c), and
  decode back.
- Random stacks at every word size: `encode | decode` prints the input lines
  again, through a real shell pipe and through --hex; encoding what decode
  printed gives the same bytes.
- Bad input (malformed bytes, bad hex, bad lines) exits 1 with one line on
  stderr; usage errors exit 2.

Exit status: 0 pass, 1 fail.
"""
import argparse
import random
import shlex
import subprocess
import sys

SWIFT_VECTOR = '02 18 7f 8a 10 00 01 00'
SWIFT_OVER_LIMIT = '02 18 7f 8a 10 00 02'
SWIFT_ALL_LINES = (['pc 0x1000', 'ra 0x1010', 'ra 0xf10', 'async 0x7fff00002000', 'omit 5',
                    'omit 1000', 'ra 0x2020', 'ra 0x2020'] + ['pc 0x3030'] * 10 + ['truncated'])
SWIFT_ALL_BYTES = ('02 11 10 00 20 10 21 ff 00 35 7f ff 00 00 10 f0 44 61 03 e8 '
                   '29 20 20 80 11 10 10 88 09 01')

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f'FAIL: {what}', file=sys.stderr)


def run(sfprof, args, data):
    if isinstance(data, str):
        data = data.encode()
    return subprocess.run([sfprof, 'cbf'] + args, input=data, capture_output=True, timeout=120)


def random_stack(rng, word):
    """Lines of one stack, with recursion runs, omits, and every kind."""
    mask = (1 << word) - 1
    lines, prev = [], rng.randrange(1 << word)
    for i in range(rng.randrange(0, 200)):
        pick = rng.randrange(100)
        if lines and pick < 20:
            lines.append(lines[-1])
        elif i and pick < 25:
            lines.append(f'omit {rng.choice([1, 31, 32, rng.randrange(1 << min(word, 40))])}')
        else:
            kind = 'pc' if i == 0 else 'async' if pick < 30 else 'ra'
            if rng.randrange(3):
                prev = (prev + rng.randrange(-0x10000, 0x10000)) & mask
            else:
                prev = rng.randrange(1 << word)
            lines.append(f'{kind} {prev:#x}')
    lines.append(rng.choice(['end', 'truncated']))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--sfprof', required=True)
    sfprof = ap.parse_args().sfprof

    # Swift's vector: pc 0x7f, 0x100001 more copies, end
    r = run(sfprof, ['decode', '--hex'], SWIFT_VECTOR + '\n')
    out = r.stdout.decode().splitlines()
    check(r.returncode == 0 and not r.stderr, f'Swift vector: exit {r.returncode}, {r.stderr!r}')
    check(len(out) == 1048579, f'Swift vector: {len(out)} lines, want 1048578 frames and end')
    check(out[-1:] == ['end'] and set(out[:-1]) == {'pc 0x7f'},
          f'Swift vector: unexpected lines {sorted(set(out))[:4]}')

    r = run(sfprof, ['decode', '--hex'], SWIFT_OVER_LIMIT)
    check(r.returncode == 1, f'Swift over-limit vector: exit {r.returncode}, want 1')
    check(r.stdout.decode() == 'pc 0x7f\ntruncated\n',
          f'Swift over-limit vector printed {r.stdout.decode()!r}')
    check(b'over the limit' in r.stderr, f'Swift over-limit vector: stderr {r.stderr!r}')

    r = run(sfprof, ['encode', '--hex'], '\n'.join(SWIFT_ALL_LINES) + '\n')
    check(r.returncode == 0 and r.stdout.decode() == SWIFT_ALL_BYTES + '\n',
          f'Swift testAllInstructions: encode gave {r.stdout.decode()!r} (exit {r.returncode})')
    r = run(sfprof, ['decode', '--hex'], SWIFT_ALL_BYTES)
    check(r.returncode == 0 and r.stdout.decode().splitlines() == SWIFT_ALL_LINES,
          f'Swift testAllInstructions: decode gave {r.stdout.decode()!r}')

    rng = random.Random(0xcbf)
    for word in (16, 32, 64):
        for i in range(40):
            lines = random_stack(rng, word)
            text = '\n'.join(lines) + '\n'
            name = f'{word}-bit stack {i}'
            # a real pipe, as a user types it
            cmd = (f'{shlex.quote(sfprof)} cbf encode --word {word} | '
                   f'{shlex.quote(sfprof)} cbf decode')
            r = subprocess.run(['bash', '-o', 'pipefail', '-c', cmd],
                               input=text.encode(), capture_output=True, timeout=60)
            check(r.returncode == 0 and r.stdout.decode() == text,
                  f'{name}: encode | decode: exit {r.returncode}, {r.stderr!r}')
            # the same through hex text, and encoding the output again is stable
            enc = run(sfprof, ['encode', '--hex', '--word', str(word)], text)
            dec = run(sfprof, ['decode', '--hex'], enc.stdout)
            check(enc.returncode == 0 and dec.returncode == 0 and dec.stdout.decode() == text,
                  f'{name}: through --hex: {enc.stderr!r} {dec.stderr!r}')
            again = run(sfprof, ['encode', '--hex', '--word', str(word)], dec.stdout)
            check(again.stdout == enc.stdout, f'{name}: encoding decode\'s output changed the bytes')
            check(enc.stdout[:2].decode() == {16: '00', 32: '01', 64: '02'}[word],
                  f'{name}: information byte {enc.stdout[:2]!r}')

    # bad input: exit 1 and say why on stderr
    bad = [
        (['decode'], b'\x02\x80\x00', b'rep with no previous frame', 'truncated\n'),
        (['decode'], b'\x02\x10\x01', b'without an end', 'pc 0x1\ntruncated\n'),
        (['decode'], b'\x03\x00', b'reserved word size', 'truncated\n'),
        (['decode'], b'\x02\x10\x01\x12\x00', b'inside the address', 'pc 0x1\ntruncated\n'),
        (['decode'], b'\x00\x62\x00\x00\x01\x00', b'more bytes than the word', 'truncated\n'),
        (['decode'], b'\x02\x00\x00', b'after the end instruction', 'end\n'),
        (['decode'], b'', b'no information byte', 'truncated\n'),
        (['decode', '--hex'], b'02 1', b'odd number of hex digits', ''),
        (['decode', '--hex'], b'02 0g', b'not a hex digit', ''),
        (['encode'], b'pc 0x1\nbogus 1\n', b'line 2: unknown result', ''),
        (['encode', '--word', '16'], b'pc 0x10000\n', b'does not fit 16-bit words', ''),
        (['encode', '--word', '32'], b'omit 4294967296\n', b'does not fit 32-bit words', ''),
        (['encode'], b'pc 7f\n', b'not hex', ''),
        (['encode'], b'ra\n', b'needs an address', ''),
        (['encode'], b'end\npc 0x1\n', b'after the end of the stack', ''),
        (['encode'], b'end 1\n', b'takes no value', ''),
    ]
    for args, data, why, stdout in bad:
        r = run(sfprof, args, data)
        name = f'{" ".join(args)} <<< {data!r}'
        check(r.returncode == 1, f'{name}: exit {r.returncode}, want 1')
        check(why in r.stderr and r.stderr.count(b'\n') == 1,
              f'{name}: stderr {r.stderr!r}, want one line with {why!r}')
        check(r.stdout.decode() == stdout, f'{name}: stdout {r.stdout!r}, want {stdout!r}')

    # usage errors: exit 2
    for args in ([], ['frobnicate'], ['decode', '--word', '16'], ['encode', '--word', '8'],
                 ['encode', 'file'], ['decode', '--bogus']):
        r = run(sfprof, args, b'')
        check(r.returncode == 2 and r.stderr,
              f'sfprof cbf {" ".join(args)}: exit {r.returncode}, want 2')

    if failures:
        print(f'{len(failures)} failures', file=sys.stderr)
        return 1
    print('cbf CLI: all checks passed')
    return 0


if __name__ == '__main__':
    sys.exit(main())
