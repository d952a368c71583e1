#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Run one libFuzzer target for a bounded time from its seed corpora.
#
# usage: run_fuzzer.sh FUZZER WORKDIR SEEDDIR...
# The environment bounds the run: SFPROF_FUZZ_RUNS (default 20000),
# SFPROF_FUZZ_SECONDS (default 60) and SFPROF_FUZZ_SEED (default 1, so that
# a run is repeatable; 0 lets libFuzzer pick one).
set -euo pipefail

fuzzer=$(realpath "$1") work=$2
shift 2
runs=${SFPROF_FUZZ_RUNS:-20000}
seconds=${SFPROF_FUZZ_SECONDS:-60}
seed=${SFPROF_FUZZ_SEED:-1}

# New inputs go to WORKDIR/corpus; the seed directories are only read.
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
seeds=()
for d in "$@"; do
	if [ -d "$d" ]; then
		seeds+=("$d")
	else
		echo "run_fuzzer: no seed directory $d, skipped" >&2
	fi
done

# Report through libFuzzer's death callback, once, rather than abort() into
# its signal handler as well (later settings win).
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}abort_on_error=0
export UBSAN_OPTIONS=${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}halt_on_error=1:print_stacktrace=1:abort_on_error=0
status=0
# libFuzzer's default exit code for a finding, 77, would read as "skipped".
# verbosity=0 drops the line per new input, which would bury a report.
# One allocation of 512 MiB from an input of at most a few hundred KiB is a
# count the parser trusted (a profile's module id once made 1.6 GiB of one).
"$fuzzer" -runs="$runs" -max_total_time="$seconds" -seed="$seed" -timeout=10 \
	-error_exitcode=1 -timeout_exitcode=1 -rss_limit_mb=2048 -malloc_limit_mb=512 -verbosity=0 \
	-print_final_stats=1 -artifact_prefix="$work/artifacts/" \
	"$work/corpus" "${seeds[@]}" || status=$?

for a in "$work"/artifacts/*; do
	[ -e "$a" ] || continue
	echo "run_fuzzer: failing input $a; reproduce with: $fuzzer $a" >&2
	# Runs that keep only the log (CI) can rebuild the input with base64 -d.
	if [ "$(stat -c %s "$a")" -le 8192 ]; then
		echo "run_fuzzer: $(basename "$a") in base64:" >&2
		base64 -w 0 "$a" >&2
		echo >&2
	fi
	[ "$status" -ne 0 ] || status=1
done
[ "$status" -ne 77 ] || status=1
exit "$status"
