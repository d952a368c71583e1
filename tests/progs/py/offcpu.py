# SPDX-License-Identifier: BSD-2-Clause
# A Python chain blocked in a system call, known by construction: py_off_leaf
# sleeps argv[1] times (4 ms each, one off-CPU block each) under py_off_mid,
# py_off_top and <module>. python_test.py checks the Python frames of the
# off-CPU samples. Then py_off_tail sleeps 1 s more: the recorder names a
# frame from the process's memory, which must still be there when it gets to
# the sample (on a loaded machine, some time after).
import sys
import time


def py_off_leaf(n):
    for _ in range(n):
        time.sleep(0.004)


def py_off_mid(n):
    py_off_leaf(n)


def py_off_top(n):
    py_off_mid(n)


def py_off_tail():
    time.sleep(1.0)


py_off_top(int(sys.argv[1]))
py_off_tail()
