# SPDX-License-Identifier: BSD-2-Clause
# A Python chain known by construction for agent_test.py's python case: it spins in
# py_agent_leaf <- py_agent_mid <- py_agent_top <- <module> for argv[1] seconds of wall
# time (default 10), run as a script or as a module (python -m agent_chain).
import sys
import time


def py_agent_leaf(end):
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


def py_agent_mid(end):
    return py_agent_leaf(end) + 1


def py_agent_top(end):
    return py_agent_mid(end) + 1


if __name__ == "__main__":
    py_agent_top(time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 10.0))
