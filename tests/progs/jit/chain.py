# SPDX-License-Identifier: BSD-2-Clause
"""A workload whose call chain is known by construction (tests/integration/jit_test.py):

    jit_main -> jit_outer -> jit_middle -> jit_leaf

until the process has used SECONDS of CPU time (argument, default 4; not of the clock,
whose runs on a loaded machine get fewer samples for the same start-up), the time spent in
jit_leaf's integer loop. CPython
never inlines: every call is a frame of the interpreter, and with `-X perf` (3.12+) or
`-X perf_jit` (3.13+) a trampoline of its own named py::FUNCTION:FILE.
"""

import sys
import time


def jit_leaf(n, seed):
    x = seed & 0xffffffff
    for i in range(n):
        x = (x * 1103515245 + 12345 + i) & 0xffffffff
        x ^= x >> 13
    return x


def jit_middle(seed):
    acc = seed
    for k in range(4):
        acc = (acc + jit_leaf(500, seed + k)) & 0xffffffff
    return acc


def jit_outer(seed):
    acc = seed
    for k in range(4):
        acc ^= jit_middle(seed * 7 + k)
    return acc


def jit_main(seconds):
    acc = rounds = 0
    while time.process_time() < seconds:
        acc ^= jit_outer(rounds)
        rounds += 1
    return acc, rounds


if __name__ == '__main__':
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
    acc, rounds = jit_main(secs)
    print(f'chain.py: {rounds} rounds in {secs:g} s of CPU time ({acc})')
