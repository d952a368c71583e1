#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Build small programs with GNU as --gsframe and put their .sframe sections and
# the binaries themselves into the fuzz seed corpora.
#
# usage: gen_seeds.sh SRCDIR OUTDIR STAMP
#   OUTDIR/sframe/ receives raw .sframe sections, OUTDIR/elf/ ELF files,
#   OUTDIR/ehframe/ .eh_frame and .eh_frame_hdr in fuzz_ehframe.c's form,
#   OUTDIR/core/ small core files (core_seed.py).
set -euo pipefail

srcdir=$1 outdir=$2 stamp=$3
rm -rf "$outdir"
mkdir -p "$outdir/sframe" "$outdir/elf" "$outdir/ehframe" "$outdir/core"
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

if [ "$made" -eq 0 ]; then
	echo "gen_seeds: no compiler produced a seed" >&2
	exit 1
fi
echo "$made variants" >"$stamp"
