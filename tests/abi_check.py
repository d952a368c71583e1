#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""libsfunwind.so exports exactly its public API: the SFU_API functions of the headers, each in the
version node of libsfunwind.map that lists it.

Usage: abi_check.py LIBSFUNWIND.so LIBSFUNWIND.map HEADER...

Three lists must be one: the functions the headers declare SFU_API, the symbols the map file's
version nodes list, and the symbols the shared library defines in its dynamic symbol table
(nm -D --defined-only), each bound to the node the map gives it (readelf --dyn-syms shows
sfu_x@@SFUNWIND_0.1). A public function missing from the map is not exported (local: *); a symbol
the map lists but nothing defines, or one exported without being declared, is an ABI slip.
Exits 77 when nm or readelf is missing.
"""
import re
import shutil
import subprocess
import sys


def header_functions(paths):
    """{name: header} for every SFU_API declaration."""
    names = {}
    for path in paths:
        with open(path, encoding='utf-8') as f:
            text = f.read()
        text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
        text = re.sub(r'//[^\n]*', ' ', text)
        text = re.sub(r'^[ \t]*#[^\n]*(\\\n[^\n]*)*', ' ', text, flags=re.M)
        for m in re.finditer(r'\bSFU_API\b([^;{]*?)\(', text):
            ident = re.findall(r'[A-Za-z_]\w*', m.group(1))
            if not ident:
                sys.exit('%s: cannot read the SFU_API declaration %r' % (path, m.group(0)))
            names[ident[-1]] = path
    return names


def map_nodes(path):
    """[(node, [symbols])] in file order, and {symbol: node}; a glob in global: is an error."""
    with open(path, encoding='utf-8') as f:
        text = f.read()
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'#[^\n]*', ' ', text)
    nodes, where = [], {}
    for m in re.finditer(r'([A-Za-z_][\w.]*)\s*\{(.*?)\}\s*([A-Za-z_][\w.]*)?\s*;', text, re.S):
        node, body = m.group(1), m.group(2)
        syms = []
        parts = r'(global|local)\s*:([^:]*?)(?=\b(?:global|local)\s*:|$)'
        for part in re.finditer(parts, body, re.S):
            entries = [e.strip() for e in part.group(2).split(';') if e.strip()]
            if part.group(1) == 'local':
                continue
            for e in entries:
                if any(c in e for c in '*?['):
                    sys.exit('%s: node %s exports a pattern (%s): list symbols one by one'
                             % (path, node, e))
                if e in where:
                    sys.exit('%s: %s is listed in %s and %s' % (path, e, where[e], node))
                where[e] = node
                syms.append(e)
        nodes.append((node, syms))
    if not nodes:
        sys.exit('%s: no version node' % path)
    return nodes, where


def nm_defined(lib):
    out = subprocess.run(['nm', '-D', '--defined-only', lib], check=True, capture_output=True,
                         text=True).stdout
    names = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        name = fields[2].split('@')[0]
        # the version nodes themselves are absolute symbols of the same names
        if fields[1] == 'A':
            continue
        names.add(name)
    return names


def readelf_versions(lib):
    """{symbol: (version, default)} for the defined dynamic symbols."""
    out = subprocess.run(['readelf', '--dyn-syms', '--wide', lib], check=True,
                         capture_output=True, text=True).stdout
    versions = {}
    for line in out.splitlines():
        fields = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(fields) < 8 or not fields[0].endswith(':') or fields[6] in ('UND', 'Ndx'):
            continue
        if fields[6] == 'ABS' and fields[3] == 'OBJECT' and '@' not in fields[7]:
            continue
        m = re.match(r'([^@]+)(@@?)(.+)$', fields[7])
        if not m:
            versions[fields[7]] = (None, False)
        else:
            if fields[6] == 'ABS' and m.group(1) == m.group(3):
                continue        # a version definition, not a symbol
            versions[m.group(1)] = (m.group(3), m.group(2) == '@@')
    return versions


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    lib, mapfile, headers = sys.argv[1], sys.argv[2], sys.argv[3:]
    for tool in ('nm', 'readelf'):
        if not shutil.which(tool):
            print('abi_check: needs %s (binutils)' % tool)
            return 77
    declared = header_functions(headers)
    nodes, listed = map_nodes(mapfile)
    exported = nm_defined(lib)
    versions = readelf_versions(lib)
    errors = []

    for name in sorted(set(declared) - set(listed)):
        errors.append('%s: declared SFU_API in %s but not in the map: not exported'
                      % (name, declared[name]))
    for name in sorted(set(listed) - set(declared)):
        errors.append('%s: listed in %s (%s) but no header declares it SFU_API'
                      % (name, mapfile, listed[name]))
    for name in sorted(set(listed) - exported):
        errors.append('%s: listed in %s but the library does not define it' % (name, listed[name]))
    for name in sorted(exported - set(listed)):
        errors.append('%s: exported but not in the map' % name)
    for name in sorted(set(listed) & exported):
        version, default = versions.get(name, (None, False))
        if version != listed[name] or not default:
            errors.append('%s: exported as %s%s%s, the map says @@%s'
                          % (name, name, '@@' if default else '@', version, listed[name]))
    if set(versions) != exported:
        errors.append('nm and readelf disagree: %s'
                      % sorted(set(versions) ^ exported))

    for e in errors:
        print('abi_check: ' + e)
    print('abi_check: %d functions declared, %d listed in %s, %d exported: %s'
          % (len(declared), len(listed), ', '.join(n for n, _ in nodes), len(exported),
             'FAIL' if errors else 'ok'))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
