#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Record a few real programs with the sfprof of this build, for the fuzz seed
# corpora: the profiles (fuzz_session, fuzz_export) and the perf task events and
# BPF sample records the recording handed over (fuzz_record, cut by
# record_seed.py from the capture SFPROF_DEBUG_CAPTURE writes).
#
# usage: record_seeds.sh SRCDIR OUTDIR SFPROF STAMP
#   OUTDIR/session/ profiles, OUTDIR/record/ record streams.
# Recording needs root (or CAP_BPF and CAP_PERFMON) and a kernel with BTF;
# without them it says so and makes no seeds: the committed corpora remain.
set -euo pipefail

srcdir=$1 outdir=$2 sfprof=$3 stamp=$4
rm -rf "$outdir"
mkdir -p "$outdir/session" "$outdir/record"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

skip() {
	echo "record_seeds: $*: no recorded seeds, the committed corpora only" >&2
	echo "skipped: $*" >"$stamp"
	exit 0
}
[ "$(id -u)" -eq 0 ] || skip "not root"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF"

# name|command: short, with a fork, an exec and an exit each, deep stacks in python
workloads=(
	"shell-gzip|ls -lR /usr/share/doc >/dev/null; gzip -9 -c $sfprof >/dev/null"
	"python-json|python3 -c 'import json
for _ in range(200): json.loads(json.dumps([list(range(50))] * 40))'"
)
made=0
for w in "${workloads[@]}"; do
	name=${w%%|*} cmd=${w#*|}
	# the profile, and what the sampler handed over while it was made
	if ! SFPROF_DEBUG_CAPTURE="$work/$name.capture" timeout 60 "$sfprof" record -F 999 \
		-o "$work/$name.data" -- sh -c "$cmd" >"$work/$name.log" 2>&1; then
		cat "$work/$name.log" >&2
		[ "$made" -gt 0 ] || skip "sfprof record failed"
		continue
	fi
	cp "$work/$name.data" "$outdir/session/$name"
	python3 "$srcdir/record_seed.py" "$work/$name.capture" "$outdir/record/$name"
	made=$((made + 1))
done
echo "$made recordings" >"$stamp"
