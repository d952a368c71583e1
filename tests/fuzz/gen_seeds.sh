#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Build small programs with GNU as --gsframe and put their .sframe sections and
# the binaries themselves into the fuzz seed corpora.
#
# usage: gen_seeds.sh SRCDIR OUTDIR STAMP
#   OUTDIR/sframe/ receives raw .sframe sections, OUTDIR/elf/ ELF files,
#   OUTDIR/ehframe/ .eh_frame and .eh_frame_hdr in fuzz_ehframe.c's form,
#   OUTDIR/core/ small core files (core_seed.py),
#   OUTDIR/xray/ XRay traces compiler-rt wrote (FDR and basic mode), where
#   clang++-16 and its XRay runtime are installed.
set -euo pipefail

srcdir=$1 outdir=$2 stamp=$3
rm -rf "$outdir"
mkdir -p "$outdir/sframe" "$outdir/elf" "$outdir/ehframe" "$outdir/core" "$outdir/xray"
python3 "$srcdir/core_seed.py" "$outdir/core"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# name compiler objcopy flags...
variants=(
	"amd64-O0|gcc|objcopy|-O0"
	"amd64-O2|gcc|objcopy|-O2"
	"amd64-O2-nofp|gcc|objcopy|-O2 -fomit-frame-pointer"
	"amd64-O2-fp|gcc|objcopy|-O2 -fno-omit-frame-pointer"
	"amd64-Os-shared|gcc|objcopy|-Os -fPIC -shared"
	"aarch64-O0|aarch64-linux-gnu-gcc|aarch64-linux-gnu-objcopy|-O0"
	"aarch64-O2-pac|aarch64-linux-gnu-gcc|aarch64-linux-gnu-objcopy|-O2 -mbranch-protection=pac-ret"
	"aarch64-O2-pacb|aarch64-linux-gnu-gcc|aarch64-linux-gnu-objcopy|-O2 -mbranch-protection=pac-ret+b-key"
)

made=0
for v in "${variants[@]}"; do
	IFS='|' read -r name cc objcopy flags <<<"$v"
	if ! command -v "$cc" >/dev/null; then
		echo "gen_seeds: $cc not found, skipping $name" >&2
		continue
	fi
	# shellcheck disable=SC2086 # flags is a word list
	"$cc" $flags -Wa,--gsframe -Wl,-z,noseparate-code -Wl,-z,max-page-size=4096 -o "$work/$name" "$srcdir/seed_prog.c"
	"$objcopy" -O binary --only-section=.sframe "$work/$name" "$outdir/sframe/$name"
	"$objcopy" --strip-debug --remove-section=.comment "$work/$name" "$outdir/elf/$name"
	python3 "$srcdir/ehframe_seed.py" "$work/$name" "$outdir/ehframe/$name"
	made=$((made + 1))
done

# Whole files small enough for the ELF fuzzer to mutate quickly.
gcc -O2 -Wa,--gsframe -nostdlib -static -Wl,--build-id -Wl,-z,noseparate-code \
	-Wl,-z,norelro -o "$outdir/elf/tiny-static" "$srcdir/tiny.c"
gcc -O2 -Wa,--gsframe -c -o "$outdir/elf/tiny.o" "$srcdir/tiny.c"
objcopy -O binary --only-section=.sframe "$outdir/elf/tiny-static" "$outdir/sframe/tiny-static"

# Real XRay traces: compiler-rt 16 writes FDR version 5 (its typed event
# record comes out cut, a quirk worth keeping) and basic mode version 3.
if command -v clang++-16 >/dev/null &&
	clang++-16 -O0 -fxray-instrument -o "$work/xray_seed_prog" "$srcdir/xray_seed_prog.cc" \
		-lpthread 2>"$work/xray_cc.log"; then
	XRAY_OPTIONS="patch_premain=false xray_logfile_base=$work/xray-fdr. verbosity=0" \
		timeout 30 "$work/xray_seed_prog" fdr 2>/dev/null || true
	XRAY_BASIC_OPTIONS="func_duration_threshold_us=0" \
		XRAY_OPTIONS="patch_premain=true xray_mode=xray-basic xray_logfile_base=$work/xray-basic. verbosity=0" \
		timeout 30 "$work/xray_seed_prog" 2>/dev/null || true
	for t in "$work"/xray-fdr.* "$work"/xray-basic.*; do
		[ -e "$t" ] || continue
		name=$(basename "$t")
		cp "$t" "$outdir/xray/compiler-rt-${name%%.*}"
	done
else
	echo "gen_seeds: clang++-16 -fxray-instrument not available, no real XRay traces" >&2
fi

if [ "$made" -eq 0 ]; then
	echo "gen_seeds: no compiler produced a seed" >&2
	exit 1
fi
echo "$made variants" >"$stamp"
