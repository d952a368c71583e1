# SPDX-License-Identifier: BSD-2-Clause
# Python chains known by construction, one phase after the other, each spinning
# in its own leaf for argv[1] seconds of CPU: recursion, threads, a generator, a
# C function calling back into Python, an exception unwinding. python_test.py
# checks each sample's Python frames against the chains named in CHAINS.
import functools
import os
import sys
import threading
import time

DEPTH = 12


def spin(seconds):
    end = time.thread_time() + seconds
    n = 0
    while time.thread_time() < end:
        n += 1
    return n


# recursion: py_rec_leaf, py_rec x DEPTH, py_recursion, <module>
def py_rec_leaf(seconds):
    return spin(seconds)


def py_rec(n, seconds):
    if n == 0:
        return py_rec_leaf(seconds)
    return py_rec(n - 1, seconds) + 1


def py_recursion(seconds):
    return py_rec(DEPTH - 1, seconds)


# threads: each its own chain, py_thread_leaf_K, py_thread_body_K, then threading's frames
def py_thread_leaf_0(seconds):
    return spin(seconds)


def py_thread_leaf_1(seconds):
    return spin(seconds)


def py_thread_body_0(seconds):
    return py_thread_leaf_0(seconds)


def py_thread_body_1(seconds):
    return py_thread_leaf_1(seconds)


def py_threads(seconds):
    ts = [threading.Thread(target=f, args=(seconds,)) for f in (py_thread_body_0, py_thread_body_1)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


# generator: py_gen_leaf, py_gen, py_gen_consume, <module>
def py_gen_leaf(seconds):
    return spin(seconds)


def py_gen(seconds):
    for _ in range(4):
        yield py_gen_leaf(seconds / 4)


def py_gen_consume(seconds):
    return sum(py_gen(seconds))


# a C function calling back: py_key_leaf, [sorted], py_sort_caller, <module>
def py_key_leaf(x):
    return spin(x)


def py_sort_caller(seconds):
    return sorted([seconds / 4] * 4, key=py_key_leaf)


# functools.reduce: py_reduce_leaf, [reduce], py_reduce_caller, <module>
def py_reduce_leaf(acc, x):
    spin(x)
    return acc + 1


def py_reduce_caller(seconds):
    return functools.reduce(py_reduce_leaf, [seconds / 4] * 4, 0)


# an exception unwinding: py_exc_inner raised through; its caller spins in its
# finally, py_exc_inner gone: py_exc_finally_leaf, py_exc_mid, py_exc_outer, <module>
def py_exc_inner():
    raise ValueError("unwinding")


def py_exc_finally_leaf(seconds):
    return spin(seconds)


def py_exc_mid(seconds):
    try:
        py_exc_inner()
    finally:
        py_exc_finally_leaf(seconds)


def py_exc_outer(seconds):
    try:
        py_exc_mid(seconds)
    except ValueError:
        pass


# deeper than the sampler's cap (128 frames): the chain is cut, its innermost 128 kept
DEEP = 150


def py_deep_leaf(seconds):
    return spin(seconds)


def py_deep(n, seconds):
    if n == 0:
        return py_deep_leaf(seconds)
    return py_deep(n - 1, seconds) + 1


def py_warmup(seconds):
    return spin(seconds)


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.3
    # CPU time spent before the phases, in no phase's chain: for a run whose interpreter
    # the recorder finds late (libpython loaded by dlopen, found when its mapping event is
    # handled, later on a loaded machine or under ASan)
    py_warmup(float(os.environ.get('CHAINS_WARMUP_CPU', '0')))
    py_recursion(seconds)
    py_threads(seconds)
    py_gen_consume(seconds)
    py_sort_caller(seconds)
    py_reduce_caller(seconds)
    py_exc_outer(seconds)
    py_deep(DEEP, seconds)
    # wall time after the phases, their code objects alive: a recording names a frame from
    # the process's memory, and one that has fallen behind (python_test.py runs seven at once
    # on a busy machine) names the last phases' frames before the interpreter frees them
    time.sleep(float(os.environ.get('CHAINS_LINGER', '0')))
