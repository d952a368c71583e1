# SPDX-License-Identifier: BSD-2-Clause
# A Python chain blocked in a system call, known by construction: py_off_leaf
# sleeps argv[1] times (4 ms each, one off-CPU block each) under py_off_mid,
# py_off_top and <module>. python_test.py checks the Python frames of the
# off-CPU samples.
import sys
import time


def py_off_leaf(n):
    for _ in range(n):
        time.sleep(0.004)


def py_off_mid(n):
    py_off_leaf(n)


def py_off_top(n):
    py_off_mid(n)


py_off_top(int(sys.argv[1]))
