# SPDX-License-Identifier: BSD-2-Clause
# A frame chain that loops: the <module> frame made its own caller (ctypes, the
# release build offsets of this version) while py_cycle_leaf spins for argv[1]
# seconds of CPU, then put back. The sampler must cut the chain at its cap,
# never hang or fail the sample. Also a code object whose names point at
# garbage: its frames go unnamed. Prints "skip" for a version it does not know.
import ctypes
import sys
import time

# (offset of the current frame's holder in the thread state, of the frame in
# it or None, of the frame's caller): tstate->cframe->current_frame, previous
OFFSETS = {
    (3, 10): (0x18, None, 0x18),
    (3, 11): (0x38, 0x8, 0x30),
    (3, 12): (0x38, 0x0, 0x8),
    (3, 13): (0x48, None, 0x8),
}
# co_qualname (co_name for 3.10) in a code object
QUALNAME = {(3, 10): 112, (3, 11): 128, (3, 12): 128, (3, 13): 128}


def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def py_cycle_leaf(seconds):
    spin(seconds)


def py_garbage_name(seconds):
    spin(seconds)


def word(addr):
    return ctypes.c_uint64.from_address(addr)


ver = sys.version_info[:2]
if ver not in OFFSETS:
    print("skip", flush=True)
    sys.exit(0)
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.2
ctypes.pythonapi.PyThreadState_Get.restype = ctypes.c_void_p
tstate = ctypes.pythonapi.PyThreadState_Get()
holder, inner, previous = OFFSETS[ver]
frame = word(tstate + holder).value
if inner is not None:
    frame = word(frame + inner).value
# the <module> frame, the one running this line: its caller, itself
saved = word(frame + previous).value
word(frame + previous).value = frame
try:
    py_cycle_leaf(seconds)
finally:
    word(frame + previous).value = saved

code = id(py_garbage_name.__code__)
name = word(code + QUALNAME[ver])
saved = name.value
name.value = 0xdead0000beef
try:
    py_garbage_name(seconds)
finally:
    name.value = saved
print("done", flush=True)
