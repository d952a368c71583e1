#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The folders of user/ build in one direction (issue 30, docs/DESIGN.md).

The order is user/meson.build's: the subdir() lines, each folder one static library. A file of a
folder's library includes only folders before it (and common/, the library's sfunwind/ headers,
bpf/'s); a command (cmd_*.c) and main.c may include any folder and cmds.h. Every .c of a folder is
listed in its own meson.build and no other meson.build of the tree names a file of user/, except
where it compiles one again with other flags (tests/unit: xray_stacks.c with a bound of its own).
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
user = root / "user"
order = re.findall(r"^subdir\('([a-z_]+)'\)", (user / "meson.build").read_text(), re.M)
problems = []
if len(order) < 5:
    problems.append(f"user/meson.build: only {order} as subdir() lines")
folders = {p.name for p in user.iterdir() if p.is_dir()}
if set(order) != folders:
    problems.append(f"user/ folders {sorted(folders)} but user/meson.build builds {order}")

include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
for i, folder in enumerate(order):
    allowed = set(order[:i + 1])
    listed = (user / folder / "meson.build").read_text()
    for src in sorted((user / folder).glob("*.[ch]")):
        command = src.name.startswith("cmd_")
        if src.suffix == ".c" and f"'{src.name}'" not in listed:
            problems.append(f"{src.relative_to(root)}: not listed in user/{folder}/meson.build")
        for inc in include.findall(src.read_text()):
            if "/" not in inc:
                if inc == "cmds.h" and not command:
                    problems.append(f"{src.relative_to(root)}: a library file includes cmds.h")
                continue
            top = inc.split("/")[0]
            if top in ("common", "sfunwind") or top not in folders:
                continue
            if not command and top not in allowed:
                problems.append(f"{src.relative_to(root)}: includes {inc}, "
                                f"but {top}/ builds after {folder}/")

# no other meson.build lists user/ sources (they link the folders' libraries)
for mb in root.rglob("meson.build"):
    rel = mb.relative_to(root)
    if rel.parts[0] in ("user", "build") or rel.parts[0].startswith("build"):
        continue
    for m in re.finditer(r"'([^']*user/[^']+\.c)'", mb.read_text()):
        if m.group(1).endswith("import/xray_stacks.c") and rel.parts[:2] == ("tests", "unit"):
            continue
        problems.append(f"{rel}: lists {m.group(1)} (link its folder's library)")

for p in problems:
    print(p)
print(f"{len(order)} folders in order {' '.join(order)}: {len(problems)} problems")
sys.exit(1 if problems else 0)
