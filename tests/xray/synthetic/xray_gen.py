#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""XRay traces written from the spec, and what they hold by construction.

A trace is described as per-thread event sequences with absolute times in
ticks (enter, exit, tail exit, enter with arguments, custom and typed events,
each on a CPU). `write()` lays them out as compiler-rt does:

  FDR (type 1), versions 1-5, little- or big-endian
    - several buffers per thread, each at most `buffer_size` bytes:
      v1   NewBuffer WalltimeMarker NewCPUId ... EndOfBuffer, then padding
           up to buffer_size (zeros or garbage); the header's buffer_size
           is the size of every buffer
      v2   BufferExtents NewBuffer WalltimeMarker NewCPUId ...
      v3+  BufferExtents NewBuffer WalltimeMarker Pid NewCPUId ...
      (BufferExtents counts the bytes after itself, as compiler-rt writes it)
    - function records carry the ticks since the previous record that set
      the time (function record, NewCPUId, TSCWrap, v5 custom/typed event);
      a TSCWrap (absolute time) precedes a record whose delta would not fit
      in an int32, a NewCPUId (cpu, absolute time) one whose CPU changed
    - custom events: v1-3 (size, absolute tsc), v4 (+ cpu), v5 (size, delta);
      typed events (size, delta, type) from v5
    - bitfields as the spec says: on little-endian the discriminant is the
      least significant bit of the first byte, the function record's action
      bits 1-3 and its id bits 4-31 of the first 32-bit word; on big-endian
      the discriminant is the most significant bit, then the action (bits
      30-28) and the id (bits 27-0); the header's constant_tsc and
      nonstop_tsc likewise (bits 0 and 1, or 31 and 30, of its bitfield word)
    - NewBuffer holds the thread id as an int32 (what compiler-rt and
      llvm-xray use; the spec's 2-byte field plus 2 reserved bytes reads the
      same on little-endian)
  basic mode (type 0), versions 1-3: 32-byte records with absolute times,
      argument payload records after an entry with arguments, written in
      per-thread chunks as the runtime flushes them.

`expect()` computes, from the description alone, what a reader that
rebuilds stacks as llvm-xray does must find: per stack the self time
(the time between consecutive function records of a thread, charged to the
stack current between them), per stack the inclusive time of every closed
call (llvm-xray stack's flame values), calls per function (exits matched to
the top of the stack, llvm-xray account's counts), unmatched exits.

Run as a program it writes a described trace (see --help) and its binary.
"""

import argparse
import json
import os
import random
import struct
import subprocess
import sys
from collections import Counter

INT32_MAX = 0x7fffffff

# metadata record kinds
NEW_BUFFER, END_OF_BUFFER, NEW_CPU, TSC_WRAP, WALLTIME, CUSTOM, CALL_ARG, EXTENTS, TYPED, PID = range(10)
META_NAMES = ['NewBuffer', 'EndOfBuffer', 'NewCPUId', 'TSCWrap', 'WalltimeMarker',
              'CustomEvent', 'CallArgument', 'BufferExtents', 'TypedEvent', 'Pid']
# function record actions
ACTIONS = {'enter': 0, 'exit': 1, 'tail': 2, 'enter_args': 3}
FUNC_KINDS = frozenset(ACTIONS)
ENTRIES = frozenset(('enter', 'enter_args'))


class Ev:
    """One event of a thread: kind, absolute time in ticks, cpu, and its data."""
    __slots__ = ('kind', 't', 'fid', 'args', 'payload', 'etype', 'cpu')

    def __init__(self, kind, t, fid=0, args=(), payload=b'', etype=0, cpu=0):
        if kind not in FUNC_KINDS and kind not in ('custom', 'typed'):
            raise ValueError(f'unknown event kind {kind!r}')
        self.kind, self.t, self.fid, self.args = kind, t, fid, tuple(args)
        self.payload, self.etype, self.cpu = payload, etype, cpu

    def __repr__(self):
        return f'Ev({self.kind}, t={self.t}, fid={self.fid}, cpu={self.cpu})'


class Thread:
    def __init__(self, tid, pid, events):
        self.tid, self.pid, self.events = tid, pid, events
        ts = [e.t for e in events]
        if ts != sorted(ts):
            raise ValueError(f'thread {tid}: events out of time order')


class Rec:
    """A record as written: file offset, size (with payload), kind name."""
    __slots__ = ('offset', 'size', 'kind', 'tid', 'buf', 'ev')

    def __init__(self, offset, size, kind, tid, buf, ev):
        self.offset, self.size, self.kind, self.tid, self.buf, self.ev = offset, size, kind, tid, buf, ev

    @property
    def end(self):
        return self.offset + self.size


class Buf:
    """A thread buffer as written: [offset, end) in the file, its records."""
    __slots__ = ('offset', 'end', 'tid', 'pid', 'ordinal', 'recs', 'data_end')

    def __init__(self, tid, pid, ordinal):
        self.tid, self.pid, self.ordinal = tid, pid, ordinal
        self.offset = self.end = self.data_end = 0
        self.recs = []


class Written:
    """The trace's bytes and where everything went."""

    def __init__(self, spec, data, bufs, recs):
        self.spec, self.data, self.bufs, self.recs = spec, data, bufs, recs

    def func_recs(self):
        """The function records in file order, each with (pid, tid) and its event."""
        return [r for r in self.recs if r.kind in FUNC_KINDS]


class Spec:
    """A trace to write: its threads and how to lay them out."""

    def __init__(self, threads, version=5, big_endian=False, mode='fdr', freq=1_000_000_000,
                 buffer_size=1024, pad='zero', order='time', constant_tsc=True, nonstop_tsc=True,
                 wall0=1_700_000_000, cpu_jitter=0, basic_chunk=16, seed=1):
        if mode not in ('fdr', 'basic'):
            raise ValueError('mode is fdr or basic')
        if mode == 'fdr' and not 1 <= version <= 5:
            raise ValueError('FDR versions are 1-5')
        if mode == 'basic' and not 1 <= version <= 3:
            raise ValueError('basic mode versions are 1-3')
        self.threads, self.version, self.big_endian, self.mode = threads, version, big_endian, mode
        self.freq, self.buffer_size, self.pad, self.order = freq, buffer_size, pad, order
        self.constant_tsc, self.nonstop_tsc, self.wall0 = constant_tsc, nonstop_tsc, wall0
        self.cpu_jitter, self.basic_chunk, self.seed = cpu_jitter, basic_chunk, seed

    @property
    def e(self):
        return '>' if self.big_endian else '<'


# --- encoding ---------------------------------------------------------------

def header(spec):
    e = spec.e
    if spec.big_endian:
        bits = spec.constant_tsc << 31 | spec.nonstop_tsc << 30
    else:
        bits = spec.constant_tsc | spec.nonstop_tsc << 1
    kind = 1 if spec.mode == 'fdr' else 0
    bsize = spec.buffer_size if spec.mode == 'fdr' else 0
    return struct.pack(e + 'HHIQQQ', spec.version, kind, bits, spec.freq, bsize, 0)


def meta(spec, kind, body=b''):
    if len(body) > 15:
        raise ValueError('metadata body longer than 15 bytes')
    first = (0x80 | kind) if spec.big_endian else (kind << 1 | 1)
    return bytes([first]) + body.ljust(15, b'\0')


def func(spec, action, fid, delta):
    if spec.big_endian:
        word = action << 28 | (fid & 0x0fffffff)
    else:
        word = ((fid & 0x0fffffff) << 4 | action << 1) & 0xffffffff
    return struct.pack(spec.e + 'II', word, delta & 0xffffffff)


class _State:
    __slots__ = ('base', 'cpu', 'used')

    def __init__(self, base, cpu, used):
        self.base, self.cpu, self.used = base, cpu, used


def _atom(spec, st, ev):
    """Records for @ev after state @st: ([(kind, bytes)], base, cpu)."""
    e, v = spec.e, spec.version
    parts, base, cpu = [], st.base, st.cpu
    if ev.cpu != cpu:
        parts.append(('NewCPUId', meta(spec, NEW_CPU, struct.pack(e + 'HQ', ev.cpu, ev.t))))
        base, cpu = ev.t, ev.cpu
    delta = 0
    if ev.kind in FUNC_KINDS or (ev.kind == 'custom' and v >= 5) or ev.kind == 'typed':
        delta = ev.t - base
        if delta < 0:
            raise ValueError(f'{ev}: time goes backwards from {base}')
        if delta > INT32_MAX:
            parts.append(('TSCWrap', meta(spec, TSC_WRAP, struct.pack(e + 'Q', ev.t))))
            delta = 0
        base = ev.t
    if ev.kind in FUNC_KINDS:
        action = ACTIONS[ev.kind]
        if ev.kind == 'enter_args' and not ev.args:
            raise ValueError(f'{ev}: an entry with arguments needs one')
        parts.append((ev.kind, func(spec, action, ev.fid, delta)))
        for a in ev.args:
            parts.append(('CallArgument', meta(spec, CALL_ARG, struct.pack(e + 'Q', a & (2**64 - 1)))))
    elif ev.kind == 'custom':
        n = len(ev.payload)
        if v >= 5:
            body = struct.pack(e + 'ii', n, delta)
        elif v == 4:
            body = struct.pack(e + 'iQH', n, ev.t, ev.cpu)
        else:
            body = struct.pack(e + 'iQ', n, ev.t)
        parts.append(('CustomEvent', meta(spec, CUSTOM, body) + ev.payload))
    else:
        if v < 5:
            raise ValueError('typed events are written from FDR version 5 on')
        parts.append(('TypedEvent',
                      meta(spec, TYPED, struct.pack(e + 'iiH', len(ev.payload), delta, ev.etype))
                      + ev.payload))
    return parts, base, cpu


def _fdr_thread_buffers(spec, th, rng):
    """Lay out one thread's events as buffers: [(Buf, [(kind, bytes, ev)])]."""
    e, v = spec.e, spec.version
    out, cur, st = [], None, None
    # room a buffer keeps for what closes it (v1: EndOfBuffer)
    reserve = 16 if v == 1 else 0
    prev_t = None
    for ev in th.events:
        if cur is not None:
            parts, base, cpu = _atom(spec, st, ev)
            size = sum(len(b) for _, b in parts)
            if st.used + size + reserve <= spec.buffer_size:
                cur[1].extend((k, b, ev) for k, b in parts)
                st.used += size
                st.base, st.cpu = base, cpu
                prev_t = ev.t
                continue
        # a new buffer, as the runtime starts one: who, when, where
        buf = Buf(th.tid, th.pid, len(out))
        recs = [('NewBuffer', meta(spec, NEW_BUFFER, struct.pack(e + 'i', th.tid)), None),
                ('WalltimeMarker', meta(spec, WALLTIME, struct.pack(
                    e + 'QI', spec.wall0 + buf.ordinal, buf.ordinal)), None)]
        if v >= 3:
            recs.append(('Pid', meta(spec, PID, struct.pack(e + 'i', th.pid)), None))
        t0 = ev.t
        if spec.cpu_jitter and prev_t is not None:
            t0 = ev.t - rng.randrange(0, min(spec.cpu_jitter, ev.t - prev_t) + 1)
        recs.append(('NewCPUId', meta(spec, NEW_CPU, struct.pack(e + 'HQ', ev.cpu, t0)), None))
        cur = (buf, recs)
        out.append(cur)
        st = _State(t0, ev.cpu, sum(len(b) for _, b, _ in recs))
        parts, base, cpu = _atom(spec, st, ev)
        size = sum(len(b) for _, b in parts)
        if st.used + size + reserve > spec.buffer_size:
            raise ValueError(f'{ev} does not fit in an empty {spec.buffer_size}-byte buffer')
        recs.extend((k, b, ev) for k, b in parts)
        st.used += size
        st.base, st.cpu = base, cpu
        prev_t = ev.t
    return out


def _basic_thread_chunks(spec, th):
    e = spec.e
    recs = []
    for ev in th.events:
        if ev.kind not in FUNC_KINDS:
            raise ValueError('basic mode logs function records only')
        recs.append((ev.kind, struct.pack(e + 'HBBiQII8x', 0, ev.cpu & 0xff, ACTIONS[ev.kind],
                                          ev.fid, ev.t, th.tid, th.pid), ev))
        for a in ev.args:
            recs.append(('CallArgument', struct.pack(e + 'H2xiIIQ8x', 1, ev.fid, th.tid, th.pid,
                                                     a & (2**64 - 1)), ev))
    out = []
    i = 0
    while i < len(recs):
        j = min(i + spec.basic_chunk, len(recs))
        # an entry's argument payloads stay with it
        while j < len(recs) and recs[j][0] == 'CallArgument':
            j += 1
        out.append((Buf(th.tid, th.pid, len(out)), recs[i:j]))
        i = j
    return out


def write(spec):
    """Lay out @spec: a Written with the bytes, buffers and records."""
    rng = random.Random(spec.seed)
    per_thread = []
    for th in spec.threads:
        if spec.mode == 'fdr':
            per_thread.append(_fdr_thread_buffers(spec, th, rng))
        else:
            per_thread.append(_basic_thread_chunks(spec, th))
    # file order: per-thread order kept, threads interleaved
    items = [(ti, bi, b) for ti, bl in enumerate(per_thread) for bi, b in enumerate(bl)]
    if spec.order == 'time':
        items.sort(key=lambda x: (_first_t(x[2][1]), x[0], x[1]))
    elif spec.order == 'shuffle':
        queues = [list(bl) for bl in per_thread]
        items = []
        while any(queues):
            ti = rng.choice([i for i, q in enumerate(queues) if q])
            b = queues[ti].pop(0)
            items.append((ti, b[0].ordinal, b))
    elif spec.order != 'thread':
        raise ValueError(f'unknown order {spec.order!r}')
    out = bytearray(header(spec))
    bufs, recs = [], []
    for _, _, (buf, parts) in items:
        buf.offset = len(out)
        body = b''.join(b for _, b, _ in parts)
        if spec.mode == 'fdr' and spec.version >= 2:
            ext = meta(spec, EXTENTS, struct.pack(spec.e + 'Q', len(body)))
            buf.recs.append(Rec(len(out), 16, 'BufferExtents', buf.tid, buf, None))
            out += ext
        for k, b, ev in parts:
            r = Rec(len(out), len(b), k, buf.tid, buf, ev)
            buf.recs.append(r)
            out += b
        if spec.mode == 'fdr' and spec.version == 1:
            buf.recs.append(Rec(len(out), 16, 'EndOfBuffer', buf.tid, buf, None))
            out += meta(spec, END_OF_BUFFER)
            buf.data_end = len(out)
            pad = buf.offset + spec.buffer_size - len(out)
            if spec.pad == 'garbage':
                out += bytes(rng.randrange(256) for _ in range(pad))
            else:
                out += bytes(pad)
        buf.data_end = buf.data_end or len(out)
        buf.end = len(out)
        bufs.append(buf)
        recs.extend(buf.recs)
    return Written(spec, bytes(out), bufs, recs)


def _first_t(parts):
    for _, _, ev in parts:
        if ev is not None:
            return ev.t
    return 0


# --- what the trace holds, by construction ---------------------------------

class Expected:
    """Self and inclusive ticks per (pid, tid, stack of ids), calls per id."""

    def __init__(self):
        self.self_ticks = Counter()
        self.incl_ticks = Counter()
        self.calls = Counter()      # exits matched to an entry of their function
        self.closed = Counter()     # frames popped: by their exit, or by an outer one
        self.entries = Counter()
        self.unmatched = 0
        self.unwound = 0
        self.args = 0

    def self_ns(self, freq, names=None, by_thread=False):
        """Self time in ns per stack (tuples of names, or ids), threads merged unless asked."""
        return _to_ns(self.self_ticks, freq, names, by_thread)

    def incl_ns(self, freq, names=None, by_thread=True):
        return _to_ns(self.incl_ticks, freq, names, by_thread)


def _to_ns(ticks, freq, names, by_thread):
    out = Counter()
    for (pid, tid, stack), t in ticks.items():
        ns, rem = divmod(t * 1_000_000_000, freq)
        if rem:
            raise ValueError(f'{t} ticks at {freq} Hz is not a whole number of ns: '
                             'use times that are multiples of a tick quantum')
        key = tuple(names[f] if names else f for f in stack)
        if by_thread:
            key = (pid, tid) + key
        out[key] += ns
    return +out


def simulate(seq):
    """Rebuild stacks from (pid, tid, Ev) in processing order (function events only count).

    An item None is a break (a loss): the time from each thread's record
    before it to its next record is not known, and not counted.
    """
    x = Expected()
    stacks, last = {}, {}
    for item in seq:
        if item is None:
            last.clear()
            continue
        pid, tid, ev = item
        if ev.kind not in FUNC_KINDS:
            continue
        key = (pid, tid)
        st = stacks.setdefault(key, [])
        if st and key in last:
            x.self_ticks[(pid, tid, tuple(f for f, _ in st))] += ev.t - last[key]
        last[key] = ev.t
        if ev.kind in ENTRIES:
            st.append((ev.fid, ev.t))
            x.entries[ev.fid] += 1
            x.args += len(ev.args)
            continue
        depth = next((i for i in range(len(st) - 1, -1, -1) if st[i][0] == ev.fid), None)
        if depth is None:
            x.unmatched += 1
            continue
        for i in range(len(st) - 1, depth - 1, -1):
            x.incl_ticks[(pid, tid, tuple(f for f, _ in st[:i + 1]))] += ev.t - st[i][1]
            x.closed[st[i][0]] += 1
        x.unwound += len(st) - 1 - depth
        x.calls[ev.fid] += 1
        del st[depth:]
    return x


def expect(spec):
    """What @spec holds: every thread's events in time order."""
    return simulate((th.pid, th.tid, ev) for th in spec.threads for ev in th.events)


def expect_records(spec, func_recs):
    """What a reader finds from these function records (Written.func_recs() or a part; None: a break)."""
    pids = {th.tid: th.pid for th in spec.threads}
    return simulate(None if r is None else (pids[r.tid], r.tid, r.ev) for r in func_recs)


# --- random but well-formed threads ------------------------------------------

def random_thread(rng, tid, pid, fids, calls, t0, quantum=1, max_depth=12, cpus=(0,),
                  p_tail=0.08, p_args=0.1, p_custom=0.0, p_typed=0.0, p_migrate=0.02,
                  p_wrap=0.0, p_recurse=0.1, gap=(1, 400), close=True,
                  payload_sizes=(1, 7, 8, 24, 40)):
    """A thread making @calls calls among @fids, starting at exactly t0.

    Calls nest up to max_depth; some entries log arguments, some calls end
    in a tail call (tail exit of the caller, then the callee's entry at the
    same level), some recurse. p_wrap makes a gap of more than 2^31 ticks
    (a TSCWrap). With close, every call returns before the end.
    """
    evs = []
    t = t0
    cpu = cpus[0]
    stack = []

    def tick():
        nonlocal t, cpu
        if p_wrap and rng.random() < p_wrap:
            t += (INT32_MAX + 1 + rng.randrange(1 << 32)) // quantum * quantum + quantum
        else:
            t += rng.randrange(*gap) * quantum
        if len(cpus) > 1 and rng.random() < p_migrate:
            cpu = rng.choice([c for c in cpus if c != cpu])

    def side_events():
        if p_custom and rng.random() < p_custom:
            tick()
            evs.append(Ev('custom', t, payload=bytes(rng.randrange(256) for _ in range(
                rng.choice(payload_sizes))), cpu=cpu))
        if p_typed and rng.random() < p_typed:
            tick()
            evs.append(Ev('typed', t, etype=rng.randrange(1, 5),
                          payload=bytes(rng.randrange(256) for _ in range(rng.choice([3, 16]))),
                          cpu=cpu))

    def enter(f):
        if p_args and rng.random() < p_args:
            evs.append(Ev('enter_args', t, f, args=[rng.randrange(1 << 64) for _ in range(
                rng.randrange(1, 4))], cpu=cpu))
        else:
            evs.append(Ev('enter', t, f, cpu=cpu))
        stack.append(f)

    made = 0
    first = True
    while made < calls or stack:
        if not first:
            tick()
        first = False
        side_events()
        want_call = made < calls and len(stack) < max_depth and (not stack or rng.random() < 0.55)
        if want_call:
            if stack and rng.random() < p_recurse:
                f = stack[-1]
            else:
                f = rng.choice(fids)
            enter(f)
            made += 1
        elif stack:
            f = stack.pop()
            if made < calls and rng.random() < p_tail:
                # f tail-calls g: f's exit through the tail call, then g runs in its place
                evs.append(Ev('tail', t, f, cpu=cpu))
                tick()
                enter(rng.choice(fids))
                made += 1
            else:
                evs.append(Ev('exit', t, f, cpu=cpu))
        if not close and made >= calls:
            break
    return Thread(tid, pid, evs)


# --- the instrumented binary -------------------------------------------------

def binary_source(nfuncs):
    lines = ['/* SPDX-License-Identifier: BSD-2-Clause */',
             '/* Functions for synthetic XRay traces to name: written by xray_gen.py. */',
             'volatile int sink;']
    for i in range(nfuncs):
        lines.append(f'__attribute__((noinline)) void fn_{i}(int x) {{ sink += x + {i}; }}')
    lines.append('int main(int argc, char **argv)\n{\n\t(void)argv;')
    for i in range(nfuncs):
        lines.append(f'\tfn_{i}(argc);')
    lines.append('\treturn 0;\n}')
    return '\n'.join(lines) + '\n'


def build_binary(workdir, nfuncs, cc='clang-16', xray='llvm-xray-16', addresses=False):
    """Compile @nfuncs functions with -fxray-instrument: (path, {id: name}[, {id: address}])."""
    os.makedirs(workdir, exist_ok=True)
    src = os.path.join(workdir, f'funcs{nfuncs}.c')
    out = os.path.join(workdir, f'funcs{nfuncs}')
    with open(src, 'w') as f:
        f.write(binary_source(nfuncs))
    subprocess.run([cc, '-O1', '-g', '-fxray-instrument', '-fxray-instruction-threshold=1',
                    src, '-o', out], check=True, capture_output=True, timeout=300)
    r = subprocess.run([xray, 'extract', '-s', out], check=True, capture_output=True,
                       text=True, timeout=120)
    names, addrs = {}, {}
    for line in r.stdout.splitlines():
        if 'function-enter' not in line:
            continue
        fields = dict(p.strip().split(': ', 1) for p in line.strip('-{} ').split(', '))
        names[int(fields['id'])] = fields['function-name']
        addrs[int(fields['id'])] = int(fields['function'], 16)
    return (out, names, addrs) if addresses else (out, names)


def fn_ids(names):
    """The ids of fn_* (not main), in name order."""
    by_name = {n: i for i, n in names.items()}
    return [by_name[n] for n in sorted((n for n in names.values() if n.startswith('fn_')),
                                       key=lambda n: int(n[3:]))]


# --- command line -----------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description='Write a random synthetic XRay trace.')
    ap.add_argument('--out', required=True, help='trace file to write')
    ap.add_argument('--binary-dir', help='also build the instrumented binary here')
    ap.add_argument('--funcs', type=int, default=8)
    ap.add_argument('--version', type=int, default=5)
    ap.add_argument('--big-endian', action='store_true')
    ap.add_argument('--basic', action='store_true')
    ap.add_argument('--threads', type=int, default=3)
    ap.add_argument('--calls', type=int, default=200)
    ap.add_argument('--buffer-size', type=int, default=1024)
    ap.add_argument('--freq', type=int, default=1_000_000_000)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--expect', help='write the expected self ns per stack (JSON) here')
    a = ap.parse_args()
    rng = random.Random(a.seed)
    names = None
    if a.binary_dir:
        _, names = build_binary(a.binary_dir, a.funcs)
        fids = fn_ids(names)
    else:
        fids = list(range(1, a.funcs + 1))
    threads = [random_thread(rng, 100 + i, 4242, fids, a.calls, 10**12, cpus=(0, 1, 2, 3),
                             p_custom=0 if a.basic else 0.05, p_typed=0.05 if a.version >= 5 and not a.basic else 0)
               for i in range(a.threads)]
    spec = Spec(threads, version=a.version, big_endian=a.big_endian,
                mode='basic' if a.basic else 'fdr', freq=a.freq, buffer_size=a.buffer_size, seed=a.seed)
    w = write(spec)
    with open(a.out, 'wb') as f:
        f.write(w.data)
    if a.expect:
        x = expect(spec)
        with open(a.expect, 'w') as f:
            json.dump({';'.join(map(str, k)): v for k, v in x.self_ns(a.freq, names).items()}, f, indent=1)
    print(f'{a.out}: {len(w.data)} bytes, {len(w.bufs)} buffers, {len(w.recs)} records')
    return 0


if __name__ == '__main__':
    sys.exit(main())
