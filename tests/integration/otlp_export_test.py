#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`sfprof export --format otlp` (issue 31): an OTLP profiles request read back by field number.

  gen       a profile gen-events writes from tests/progs/report_tree.c's
            functions (nm's addresses): chains and counts known by
            construction. The request, decoded by otlp_decode.py (a reader of
            its own): every index within its table, every table's element 0
            the zero value, string_table[0] ""; exactly the four chains, leaf
            first, with their samples times the period (1e9 / 99 Hz) as values,
            summing to samples * period; the process's resource attributes
            (service.name, host.name, process.pid, process.executable.name and
            .path); mappings carrying the program's build ID (readelf's) as
            process.executable.build_id.gnu; thread.id and thread.name on
            samples. --event offcpu-time of a profile with two events: one
            profile of (off_cpu, nanoseconds), values the weights. stdout (a
            pipe) gives the same bytes as -o; a terminal is refused. `protoc --decode` with
            docs/otlp/sfprof_otlp.proto reads it (exit 0) and names the chains'
            functions; a cut request fails both readers.
  recorded  tests/progs/record_chains.c recorded for real: every sample's stack
            resolves to names; each hot leaf's chain (record_test.py's table)
            is in order on nearly all its samples; kernel frames are named;
            values add up to the samples (the collapsed export's count) times
            the period, and equal pprof's cpu/nanoseconds total; protoc reads
            it. Figures: bytes of OTLP (raw and gzipped) against pprof (gzipped).

Each check also runs against a doctored expectation (a swapped chain, a value
off by a period, a renamed attribute) that must fail.

Exit status 0 pass, 1 fail, 77 skip (gen: no gcc, nm or readelf; recorded: not
root, no BTF or gas --gsframe). Without protoc (Debian's protobuf-compiler) its
checks are skipped with a note; the rest runs.
"""

import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otlp_decode  # noqa: E402
import record_test as rt  # noqa: E402
import report_options_test as rot  # noqa: E402

SKIP = 77
PROTO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'docs', 'otlp')
PROTO = 'sfprof_otlp.proto'
REQUEST_TYPE = 'sfprof.otlp.ExportProfilesServiceRequest'
Failure = rt.Failure
log, expect, must_fail, raise_fails = rt.log, rt.expect, rt.must_fail, rt.raise_fails

# gen-events' frequency (99 Hz): the period of a cpu-clock sample in ns, as sfprof rounds it
GEN_PERIOD = 1_000_000_000 // 99


def export(ctx, data, fmt='otlp', out=None, extra=(), stdout_ok=False):
    cmd = [ctx.sfprof, 'export', '--no-inline', '-i', data, '-f', fmt, *extra]
    if out:
        cmd += ['-o', out]
    log('$ ' + rt.quote(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    err = p.stderr.decode(errors='replace').strip()
    if err:
        log(err)
    if p.returncode != 0:
        raise Failure(f'sfprof export -f {fmt} exited with {p.returncode}')
    if err and not stdout_ok:
        raise Failure(f'sfprof export -f {fmt} wrote to stderr')
    if out:
        with open(out, 'rb') as f:
            return f.read()
    return p.stdout


def protoc_decode(data):
    """protoc --decode's text of @data, or None without protoc; Failure when it cannot read it."""
    if not shutil.which('protoc'):
        return None
    p = subprocess.run(['protoc', '-I', PROTO_DIR, f'--decode={REQUEST_TYPE}', PROTO],
                       input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                       cwd=PROTO_DIR)
    if p.returncode != 0:
        raise Failure(f'protoc --decode exited with {p.returncode}: '
                      f'{p.stderr.decode(errors="replace").strip()[:300]}')
    return p.stdout.decode(errors='replace')


def check_protoc(data, names, fails):
    """protoc reads @data and its string table holds each of @names."""
    try:
        text = protoc_decode(data)
    except Failure as e:
        fails.append(str(e))
        return
    if text is None:
        log('note: no protoc (Debian protobuf-compiler): its checks are left out')
        return
    strings = set(re.findall(r'^\s*string_table: "(.*)"$', text, re.M))
    for n in names:
        expect(n in strings, fails, f'protoc: no string_table entry "{n}"')
    expect('resource_profiles {' in text and 'dictionary {' in text, fails,
           'protoc: no resource_profiles or dictionary')


def check_cut(data):
    """A request cut short must fail both readers."""
    cut = data[:len(data) - 3]
    try:
        otlp_decode.decode_request(cut)
        raise Failure('otlp_decode read a request cut 3 bytes short')
    except otlp_decode.DecodeError as e:
        log(f'ok: the cut request fails otlp_decode as it must ({e})')
    if shutil.which('protoc'):
        try:
            protoc_decode(cut)
            raise Failure('protoc read a request cut 3 bytes short')
        except Failure as e:
            if 'cut 3 bytes' in str(e):
                raise
            log('ok: the cut request fails protoc as it must')


def check_terminal(ctx, data):
    """Binary output to a terminal is refused (util-linux script gives it one)."""
    if not shutil.which('script'):
        log('note: no script (util-linux): the terminal check is left out')
        return
    cmd = f'{rt.quote([ctx.sfprof, "export", "-i", data, "-f", "otlp"])}; echo "exit $?"'
    p = subprocess.run(['script', '-qc', cmd, '/dev/null'], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors='replace', timeout=60)
    log(p.stdout.strip())
    if 'otlp output is binary protobuf: use -o FILE' not in p.stdout or 'exit 2' not in p.stdout:
        raise Failure('otlp to a terminal: not refused with exit status 2')


def profile_units(req, prof):
    strs = req['dictionary']['string_table']
    st, pt = prof.get('sample_type', {}), prof.get('period_type', {})
    return ((strs[st.get('type_strindex', 0)], strs[st.get('unit_strindex', 0)]),
            (strs[pt.get('type_strindex', 0)], strs[pt.get('unit_strindex', 0)]),
            prof.get('period', 0))


def sample_attrs(req, s):
    return dict(otlp_decode.attribute(req, a) for a in s['attribute_indices'])


def check_structure(req, fails):
    for problem in otlp_decode.check_zero_elements(req):
        fails.append(problem)


# --- gen: a profile known by construction ---

def chains_of(req):
    """{(leaf-first chain): value}, summed over samples."""
    out = {}
    for _, names, value in otlp_decode.stacks(req):
        out[tuple(names)] = out.get(tuple(names), 0) + value
    return out


def check_gen(req, want_chains, want_attrs, want_total, build_id, fails):
    check_structure(req, fails)
    got = chains_of(req)
    expect(got == want_chains, fails, f'chains and values: {got}, not {want_chains}')
    profs = otlp_decode.profiles(req)
    expect(len(profs) == 1, fails, f'{len(profs)} profiles, not one (one process)')
    total = 0
    for attrs, prof in profs:
        for k, v in want_attrs.items():
            expect(attrs.get(k) == v, fails, f'resource attribute {k}: {attrs.get(k)!r}, not {v!r}')
        st, pt, period = profile_units(req, prof)
        expect(st == ('cpu', 'nanoseconds') and pt == st and period == GEN_PERIOD, fails,
               f'sample type {st}, period type {pt}, period {period}: not cpu/nanoseconds, '
               f'{GEN_PERIOD}')
        expect(prof.get('time_unix_nano', 0) > 0, fails, 'no time_unix_nano')
        for s in prof['samples']:
            total += sum(s['values'])
            a = sample_attrs(req, s)
            expect(a.get('thread.id') in (4242, 4243) and
                   a.get('thread.name') == {4242: 'report_tree', 4243: 'worker'}.get(a.get('thread.id')),
                   fails, f'sample attributes {a}')
    expect(total == want_total, fails, f'values add up to {total}, not {want_total}')
    d = req['dictionary']
    ids = {otlp_decode.attribute(req, a) for m in d['mapping_table'] for a in m['attribute_indices']}
    expect(('process.executable.build_id.gnu', build_id) in ids, fails,
           f'no mapping with the build ID {build_id} (mapping attributes {ids})')


def case_gen(ctx):
    for tool in ('gcc', 'nm', 'readelf'):
        if not shutil.which(tool):
            log(f'SKIP: {tool} not found')
            sys.exit(SKIP)
    out = ctx.path('tree.data')
    exe = rot.tree_profile(ctx, out)
    data = export(ctx, out, out=ctx.path('tree.otlp'))
    log(f'{len(data)} bytes')
    req = otlp_decode.decode_request(data)
    want = {tuple(chain.split(',')): n * GEN_PERIOD for chain, n, _, _ in rot.TREE_SAMPLES}
    nsamples = sum(n for _, n, _, _ in rot.TREE_SAMPLES)
    attrs = {'service.name': 'unknown_service:report_tree', 'host.name': 'gen',
             'process.pid': 4242, 'process.executable.name': 'report_tree',
             'process.executable.path': exe}
    bid = rot.build_id(exe)
    fails = []
    check_gen(req, want, attrs, nsamples * GEN_PERIOD, bid, fails)
    # stdout, a pipe: the same bytes
    expect(export(ctx, out) == data, fails, 'stdout and -o differ')
    check_protoc(data, ['tree_leaf', 'via_g', 'via_h', 'other_leaf', 'work', 'main',
                        'process.executable.build_id.gnu'], fails)
    raise_fails(fails)
    # doctored expectations must fail
    swapped = dict(want)
    swapped[('tree_leaf', 'work', 'via_g', 'main')] = swapped.pop(('tree_leaf', 'via_g', 'work', 'main'))
    f = []
    check_gen(req, swapped, attrs, nsamples * GEN_PERIOD, bid, f)
    must_fail(f, 'via_g and work swapped in a chain')
    f = []
    check_gen(req, want, attrs, (nsamples + 1) * GEN_PERIOD, bid, f)
    must_fail(f, 'the values\' total off by one period')
    f = []
    check_gen(req, want, {**attrs, 'process.executable.nam': 'report_tree'},
              nsamples * GEN_PERIOD, bid, f)
    must_fail(f, 'a renamed resource attribute')
    f = []
    check_protoc(data, ['tree_leaf', 'not_a_function_of_report_tree'], f)
    if shutil.which('protoc'):
        must_fail(f, 'protoc names a function the program does not have')
    check_cut(data)
    check_terminal(ctx, out)

    # two events: --event offcpu-time is one profile of (off_cpu, nanoseconds)
    ev = ctx.path('events.data')
    extra = ['event offcpu-time 65535 1']
    lines = ['thread 4242 report_tree', 'thread 4243 worker', *extra]
    t = 1_000_000_000
    for _ in range(10):
        t += 1_000_000
        lines.append(f'sample 0 4242 0 {t} 1 tree_leaf,via_g,work,main')
    lines.append(f'sample 1 4243 1 {t + 2} 3000000 via_g,work,main')
    lines.append(f'sample 1 4243 1 {t + 3} 1000000 other_leaf,work,main')
    rot.gen(ctx, ev, exe, lines)
    f = []
    req = otlp_decode.decode_request(export(ctx, ev, out=ctx.path('events.otlp'),
                                            extra=['--event', 'offcpu-time']))
    check_structure(req, f)
    profs = otlp_decode.profiles(req)
    expect(len(profs) == 1, f, f'--event offcpu-time: {len(profs)} profiles')
    for _, prof in profs:
        st, _, period = profile_units(req, prof)
        expect(st == ('off_cpu', 'nanoseconds'), f, f'--event offcpu-time: sample type {st}')
    got = chains_of(req)
    want_off = {('via_g', 'work', 'main'): 3000000, ('other_leaf', 'work', 'main'): 1000000}
    expect(got == want_off, f, f'--event offcpu-time: {got}, not {want_off}')
    # the default: the first event with samples (cpu-clock), said on stderr
    req = otlp_decode.decode_request(export(ctx, ev, out=ctx.path('events-cpu.otlp'),
                                            stdout_ok=True))
    got = chains_of(req)
    want_cpu = {('tree_leaf', 'via_g', 'work', 'main'): 10 * GEN_PERIOD}
    expect(got == want_cpu, f, f'default event: {got}, not {want_cpu}')
    raise_fails(f)


# --- recorded: record_chains for real ---

def kernel_names(req):
    """The names of the Locations in the kernel's mapping."""
    d = req['dictionary']
    strs = d['string_table']
    kmaps = {i for i, m in enumerate(d['mapping_table'])
             if strs[m.get('filename_strindex', 0)] == '[kernel.kallsyms]'}
    names = []
    for loc in d['location_table']:
        if loc.get('mapping_index', 0) in kmaps:
            names += [strs[d['function_table'][ln.get('function_index', 0)].get('name_strindex', 0)]
                      for ln in loc['lines']] or ['']
    return names


def check_chains(req, chains, fails, min_share=0.9, min_value=0):
    """Each hot leaf's samples (by value) have its chain, leaf first, in order, at least
    @min_share of the time; each hot leaf has at least @min_value."""
    per_leaf, good = {}, {}
    for _, names, value in otlp_decode.stacks(req):
        if names and names[0] in chains:
            per_leaf[names[0]] = per_leaf.get(names[0], 0) + value
            if names[:len(chains[names[0]])] == chains[names[0]]:
                good[names[0]] = good.get(names[0], 0) + value
    for leaf, chain in chains.items():
        total = per_leaf.get(leaf, 0)
        if total < min_value:
            fails.append(rt.TooFewMsg(f'{leaf}: {total} ns of samples, fewer than {min_value}'))
            continue
        share = good.get(leaf, 0) / total
        log(f'{leaf}: {share:.1%} of {total} ns with the chain {rt.compact(chain)}')
        expect(share >= min_share, fails, f'{leaf}: the chain {rt.compact(chain)} on only '
               f'{share:.1%} of its samples')


def case_recorded(ctx):
    rt.check_preconditions()
    ctx.compile('libcallback.c', 'libcallback.so', shared=True)
    prog = ctx.compile('record_chains.c', 'record_chains',
                       libs=['-L', ctx.work, '-lcallback', '-Wl,-rpath,$ORIGIN'])
    data = ctx.path('chains.data')
    p = ctx.record(['--', prog, ctx.secs(1)], data, timeout=60 * ctx.scale)
    if p.returncode != 0:
        raise Failure(f'sfprof record exited with {p.returncode}')
    raw = export(ctx, data, out=ctx.path('chains.otlp'))
    pprof = export(ctx, data, 'pprof', out=ctx.path('chains.pb.gz'))
    collapsed = export(ctx, data, 'collapsed').decode(errors='replace')
    nsamples = sum(int(line.rsplit(' ', 1)[1]) for line in collapsed.splitlines())
    req = otlp_decode.decode_request(raw)
    fails = []
    check_structure(req, fails)
    profs = otlp_decode.profiles(req)
    expect(profs, fails, 'no profile')
    period, total = None, 0
    for attrs, prof in profs:
        st, pt, period = profile_units(req, prof)
        expect(st == ('cpu', 'nanoseconds') and pt == st and period > 0, fails,
               f'units {st} {pt} {period}')
        for k in ('service.name', 'host.name', 'process.pid', 'process.executable.name'):
            expect(k in attrs, fails, f'resource without {k}: {attrs}')
        total += sum(sum(s['values']) for s in prof['samples'])
    mine = [a for a, _ in profs if a.get('process.executable.name') == 'record_chains']
    expect(len(mine) == 1, fails, f'{len(mine)} resources of record_chains, not one')
    unresolved = [n for _, names, _ in otlp_decode.stacks(req) for n in names if not n]
    expect(not unresolved, fails, f'{len(unresolved)} frames without a name')
    kn = kernel_names(req)
    expect(all(kn), fails, f'kernel locations without a name: {kn.count("")} of {len(kn)}')
    log(f'{len(kn)} kernel locations, e.g. {kn[:3]}')
    expect(total == nsamples * period, fails,
           f'values add up to {total}, not {nsamples} samples * {period} ns')
    # pprof's cpu/nanoseconds total, read with the same wire reader
    prof_fields = otlp_decode.fields(gzip.decompress(pprof))
    pprof_ns = sum(otlp_decode._packed(v, 2)[1]
                   for sample in (v for n, _, v in prof_fields if n == 2)
                   for n, wt, v in otlp_decode.fields(sample) if n == 2)
    expect(pprof_ns == total, fails, f'pprof\'s cpu total {pprof_ns}, OTLP\'s {total}')
    check_chains(req, rt.CHAINS, fails, min_value=20 * period)
    check_protoc(raw, sorted({f for c in rt.CHAINS.values() for f in c}), fails)
    raise_fails(fails)
    f = []
    check_chains(req, rt.wrong_chains(rt.CHAINS), f)
    must_fail(f, 'a frame of each chain renamed')
    f = []
    expect(total == (nsamples + 1) * period, f, 'a period more')
    must_fail(f, 'the values\' total off by one period')
    gz = len(gzip.compress(raw))
    log(f'figures: {nsamples} samples, {len(otlp_decode.stacks(req))} OTLP samples: '
        f'otlp {len(raw)} bytes raw, {gz} gzipped; pprof {len(pprof)} bytes gzipped '
        f'({len(gzip.decompress(pprof))} raw)')


CASES = {'gen': case_gen, 'recorded': case_recorded}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--sfprof', required=True)
    ap.add_argument('--progs', required=True, help='tests/progs')
    ap.add_argument('--gen-events', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--case', required=True, choices=sorted(CASES))
    args = ap.parse_args()
    sys.stdout.reconfigure(errors='backslashreplace')
    rt.Ctx.gen_events = os.path.abspath(args.gen_events)
    ctx = rt.Ctx(args)
    t0 = time.monotonic()
    try:
        # a recording with too few samples runs again, its workload twice as long (bounded)
        for attempt in range(rt.RUNS):
            shutil.rmtree(ctx.work, ignore_errors=True)
            os.makedirs(ctx.work)
            try:
                CASES[args.case](ctx)
                break
            except rt.TooFew as e:
                if attempt == rt.RUNS - 1:
                    raise
                ctx.scale *= 2
                log(f'too few samples ({e}): again with the workload {ctx.scale}x as long')
    except (Failure, otlp_decode.DecodeError, subprocess.TimeoutExpired) as e:
        log(f'FAIL: {e}')
        return 1
    log(f'PASS ({time.monotonic() - t0:.1f} s)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
