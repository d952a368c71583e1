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
#   clang++-16 and its XRay runtime are installed,
#   OUTDIR/symbolize/ programs built with -g (C and C++), a small glibc library
#   and its debug file (libc6-dbg), C++ names from libstdc++'s symbol table,
#   an i386 library and PIE (PLTs named from REL relocations),
#   OUTDIR/kallsyms/ excerpts of /proc/kallsyms (and OUTDIR/kallsyms-session,
#   the larger one fuzz_session and fuzz_export name kernel frames from),
#   OUTDIR/maps/ /proc/PID/maps of a few programs,
#   OUTDIR/unwind/ stacks unwind_seed_prog captured of itself, with the
#   modules they run in under OUTDIR/unwind-modules/.
# Recorded profiles and perf records (BPF) come from record_seeds.sh.
set -euo pipefail

srcdir=$1 outdir=$2 stamp=$3
rm -rf "$outdir"
mkdir -p "$outdir/sframe" "$outdir/elf" "$outdir/ehframe" "$outdir/core" "$outdir/xray" \
	"$outdir/symbolize" "$outdir/kallsyms" "$outdir/maps" "$outdir/unwind" \
	"$outdir/unwind-modules"
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

# The symbolizer: DWARF of a C and a C++ program (the C++ one's names mangled),
# a real library's symbol tables and its debug file.
gcc -O2 -g -o "$outdir/symbolize/seed_prog-g" "$srcdir/seed_prog.c"
g++ -O2 -g -o "$outdir/symbolize/symbolize_seed-g" "$srcdir/symbolize_seed.cc"
lib=$(gcc -print-file-name=libmemusage.so)
if [ -f "$lib" ]; then
	cp "$(readlink -f "$lib")" "$outdir/symbolize/libmemusage.so"
	id=$(readelf -n "$lib" | awk '/Build ID/ { print $3 }')
	debug=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
	if [ -f "$debug" ]; then
		cp "$debug" "$outdir/symbolize/libmemusage.so.debug"
	else
		echo "gen_seeds: no debug file for $lib (libc6-dbg): not a seed" >&2
	fi
fi
# 32-bit x86: a library and a PIE calling it through PIC PLTs named from REL
# relocations (test_symbolize's fixtures), where as and ld take --32.
if as --32 -o "$work/plt_i386_lib.o" "$srcdir/../unit/plt_fixture_i386_lib.s" 2>/dev/null &&
	as --32 -o "$work/plt_i386_exe.o" "$srcdir/../unit/plt_fixture_i386_exe.s" &&
	ld -m elf_i386 -shared -z noseparate-code -soname libplt_i386.so -o "$outdir/symbolize/libplt_i386.so" \
		"$work/plt_i386_lib.o" &&
	ld -m elf_i386 -pie -z noseparate-code --dynamic-linker /lib/ld-linux.so.2 --allow-shlib-undefined \
		-o "$outdir/symbolize/plt_i386_pie" "$work/plt_i386_exe.o" "$outdir/symbolize/libplt_i386.so"; then
	cp "$outdir/symbolize/libplt_i386.so" "$outdir/elf/libplt_i386.so"
else
	echo "gen_seeds: as --32 or ld -m elf_i386 failed: no i386 seeds" >&2
fi
# Demangling: names from libstdc++'s symbol table, 40 to a seed.
libstdcxx=$(g++ -print-file-name=libstdc++.so)
if [ -f "$libstdcxx" ]; then
	nm -D --defined-only "$libstdcxx" | awk '$3 ~ /^_Z/ { sub(/@.*/, "", $3); print $3 }' | awk 'NR % 97 == 1' |
		head -n 120 | split -l 40 - "$outdir/symbolize/names-libstdc++-"
fi

# kallsyms: excerpts of the running kernel's (with addresses only when root).
if [ -r /proc/kallsyms ] && awk 'NR == 1 { exit $1 ~ /^0+$/ }' /proc/kallsyms; then
	head -n 200 /proc/kallsyms >"$outdir/kallsyms/head"
	awk 'NR % 500 == 0' /proc/kallsyms | head -n 200 >"$outdir/kallsyms/every-500th"
	grep -m 100 '\[' /proc/kallsyms >"$outdir/kallsyms/modules" || true
	awk '$2 ~ /^[tTwW]$/ && NR % 40 == 0' /proc/kallsyms >"$outdir/kallsyms-session"
else
	echo "gen_seeds: /proc/kallsyms has no addresses here: no kallsyms seeds" >&2
fi

# Maps of real processes: cat's, a shell's, python's.
cat /proc/self/maps >"$outdir/maps/cat"
sh -c 'cat "/proc/$$/maps"' >"$outdir/maps/sh"
if command -v python3 >/dev/null; then
	python3 -c 'import sys; sys.stdout.write(open("/proc/self/maps").read())' \
		>"$outdir/maps/python3"
fi

# The unwinder: a C++ program without .sframe and its --gsframe library, run to
# capture its own stacks; fuzz_unwind maps the same files.
mods=$outdir/unwind-modules
gcc -O2 -fPIC -shared -Wa,--gsframe -fno-omit-frame-pointer -Wl,-soname,libunwseed.so \
	-o "$mods/libunwseed.so" "$srcdir/unwind_seed_lib.c"
g++ -O2 -o "$mods/unwind_seed_prog" "$srcdir/unwind_seed_prog.cc" -I"$srcdir" \
	-L"$mods" -lunwseed -Wl,-rpath,'$ORIGIN'
"$mods/unwind_seed_prog" "$outdir/unwind/captured"

if [ "$made" -eq 0 ]; then
	echo "gen_seeds: no compiler produced a seed" >&2
	exit 1
fi
echo "$made variants" >"$stamp"
