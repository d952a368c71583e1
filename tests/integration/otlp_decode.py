#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""An OTLP profiles request (ExportProfilesServiceRequest, profiles v1development) read by field number.

A protobuf reader of its own (wire types 0, 1, 2 and 5), independent of the
encoder in user/report/export_otlp.c, for the tests of `sfprof export --format
otlp` and of the agent's OTLP pushes:

  decode_request(data) -> dict   the request as dicts and lists, names as in
                                 docs/otlp/sfprof_otlp.proto; every index checked
                                 against its table (DecodeError when one is out)
  stacks(req) -> [(resource_attrs, [frame names, leaf first], value)]
                                 every sample's stack resolved through the
                                 dictionary: a Location's Lines innermost first,
                                 a Location without Lines as 0xADDRESS
  check_zero_elements(req) -> [problems]
                                 the dictionary's tables each start with the
                                 zero value, string_table[0] == ""

Run as a script on a file, it prints the resources and their folded stacks.
"""

import struct
import sys


class DecodeError(Exception):
    pass


def _varint(buf, pos):
    v = shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError(f'varint past the end at byte {pos}')
        b = buf[pos]
        pos += 1
        v |= (b & 0x7f) << shift
        if not b & 0x80:
            return v, pos
        shift += 7
        if shift >= 70:
            raise DecodeError(f'varint over 10 bytes at byte {pos}')


def fields(buf):
    """[(field number, wire type, value)]: an int for varint and fixed types, bytes for LEN."""
    out, pos = [], 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise DecodeError(f'field number 0 at byte {pos}')
        if wt == 0:
            v, pos = _varint(buf, pos)
        elif wt == 1:
            if pos + 8 > len(buf):
                raise DecodeError('fixed64 past the end')
            v = struct.unpack_from('<Q', buf, pos)[0]
            pos += 8
        elif wt == 2:
            n, pos = _varint(buf, pos)
            if pos + n > len(buf):
                raise DecodeError(f'field {num}: {n} bytes, past the end')
            v = bytes(buf[pos:pos + n])
            pos += n
        elif wt == 5:
            if pos + 4 > len(buf):
                raise DecodeError('fixed32 past the end')
            v = struct.unpack_from('<I', buf, pos)[0]
            pos += 4
        else:
            raise DecodeError(f'wire type {wt} (field {num})')
        out.append((num, wt, v))
    return out


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _packed(v, wt):
    """A repeated varint field's values: packed (LEN) or one unpacked element."""
    if wt == 0:
        return [v]
    vals, pos = [], 0
    while pos < len(v):
        x, pos = _varint(v, pos)
        vals.append(x)
    return vals


def _message(buf, schema):
    """@schema: {field: (name, kind, repeated)}; kind 'int', 'sint' (int64), 'str', 'bytes',
    'fixed', or a nested schema dict. Unknown fields are kept under their number."""
    msg = {name: [] for name, _, rep in schema.values() if rep}
    for num, wt, v in fields(buf):
        if num not in schema:
            msg.setdefault(num, []).append(v)
            continue
        name, kind, rep = schema[num]
        if isinstance(kind, dict):
            if wt != 2:
                raise DecodeError(f'{name}: wire type {wt} for a message')
            vals = [_message(v, kind)]
        elif kind == 'str':
            if wt != 2:
                raise DecodeError(f'{name}: wire type {wt} for a string')
            vals = [v.decode('utf-8')]      # strict: protobuf strings are UTF-8
        elif kind == 'bytes':
            vals = [v]
        elif kind == 'fixed':
            if wt == 2:
                vals = [struct.unpack_from('<Q', v, i)[0] for i in range(0, len(v), 8)]
            elif wt == 1:
                vals = [v]
            else:
                raise DecodeError(f'{name}: wire type {wt} for fixed64')
        else:
            if wt not in (0, 2):
                raise DecodeError(f'{name}: wire type {wt} for a varint')
            vals = _packed(v, wt)
            if kind == 'sint':
                vals = [_signed(x) for x in vals]
        if rep:
            msg[name].extend(vals)
        else:
            msg[name] = vals[-1]
    return msg


ANY_VALUE = {1: ('string_value', 'str', False), 2: ('bool_value', 'int', False),
             3: ('int_value', 'sint', False), 4: ('double_value', 'fixed', False),
             5: ('array_value', 'bytes', False), 6: ('kvlist_value', 'bytes', False),
             7: ('bytes_value', 'bytes', False), 8: ('string_value_strindex', 'int', False)}
KEY_VALUE = {1: ('key', 'str', False), 2: ('value', ANY_VALUE, False),
             3: ('key_strindex', 'int', False)}
RESOURCE = {1: ('attributes', KEY_VALUE, True), 2: ('dropped_attributes_count', 'int', False)}
SCOPE = {1: ('name', 'str', False), 2: ('version', 'str', False),
         3: ('attributes', KEY_VALUE, True)}
VALUE_TYPE = {1: ('type_strindex', 'int', False), 2: ('unit_strindex', 'int', False)}
SAMPLE = {1: ('stack_index', 'int', False), 2: ('attribute_indices', 'int', True),
          3: ('link_index', 'int', False), 4: ('values', 'sint', True),
          5: ('timestamps_unix_nano', 'fixed', True)}
PROFILE = {1: ('sample_type', VALUE_TYPE, False), 2: ('samples', SAMPLE, True),
           3: ('time_unix_nano', 'fixed', False), 4: ('duration_nano', 'int', False),
           5: ('period_type', VALUE_TYPE, False), 6: ('period', 'sint', False),
           7: ('profile_id', 'bytes', False), 8: ('dropped_attributes_count', 'int', False),
           9: ('original_payload_format', 'str', False), 10: ('original_payload', 'bytes', False),
           11: ('attribute_indices', 'int', True)}
SCOPE_PROFILES = {1: ('scope', SCOPE, False), 2: ('profiles', PROFILE, True),
                  3: ('schema_url', 'str', False)}
RESOURCE_PROFILES = {1: ('resource', RESOURCE, False),
                     2: ('scope_profiles', SCOPE_PROFILES, True), 3: ('schema_url', 'str', False)}
MAPPING = {1: ('memory_start', 'int', False), 2: ('memory_limit', 'int', False),
           3: ('file_offset', 'int', False), 4: ('filename_strindex', 'int', False),
           5: ('attribute_indices', 'int', True)}
LINE = {1: ('function_index', 'int', False), 2: ('line', 'sint', False),
        3: ('column', 'sint', False)}
LOCATION = {1: ('mapping_index', 'int', False), 2: ('address', 'int', False),
            3: ('lines', LINE, True), 4: ('attribute_indices', 'int', True)}
FUNCTION = {1: ('name_strindex', 'int', False), 2: ('system_name_strindex', 'int', False),
            3: ('filename_strindex', 'int', False), 4: ('start_line', 'sint', False)}
LINK = {1: ('trace_id', 'bytes', False), 2: ('span_id', 'bytes', False)}
KEY_VALUE_AND_UNIT = {1: ('key_strindex', 'int', False), 2: ('value', ANY_VALUE, False),
                      3: ('unit_strindex', 'int', False)}
STACK = {1: ('location_indices', 'int', True)}
DICTIONARY = {1: ('mapping_table', MAPPING, True), 2: ('location_table', LOCATION, True),
              3: ('function_table', FUNCTION, True), 4: ('link_table', LINK, True),
              5: ('string_table', 'str', True), 6: ('attribute_table', KEY_VALUE_AND_UNIT, True),
              7: ('stack_table', STACK, True)}
REQUEST = {1: ('resource_profiles', RESOURCE_PROFILES, True), 2: ('dictionary', DICTIONARY, False)}


def _check(what, idx, table):
    if not 0 <= idx < len(table):
        raise DecodeError(f'{what} {idx} out of its table ({len(table)} elements)')


def _check_indices(req):
    d = req.get('dictionary')
    if d is None:
        raise DecodeError('no dictionary')
    strs = d['string_table']
    for m in d['mapping_table']:
        _check('mapping filename_strindex', m.get('filename_strindex', 0), strs)
        for a in m['attribute_indices']:
            _check('mapping attribute index', a, d['attribute_table'])
    for f in d['function_table']:
        for k in ('name_strindex', 'system_name_strindex', 'filename_strindex'):
            _check(f'function {k}', f.get(k, 0), strs)
    for loc in d['location_table']:
        _check('location mapping_index', loc.get('mapping_index', 0), d['mapping_table'])
        for ln in loc['lines']:
            _check('line function_index', ln.get('function_index', 0), d['function_table'])
    for a in d['attribute_table']:
        _check('attribute key_strindex', a.get('key_strindex', 0), strs)
    for st in d['stack_table']:
        for i in st['location_indices']:
            _check('stack location index', i, d['location_table'])
    for rp in req['resource_profiles']:
        for sp in rp['scope_profiles']:
            for prof in sp['profiles']:
                for vt in ('sample_type', 'period_type'):
                    for k in ('type_strindex', 'unit_strindex'):
                        _check(f'{vt}.{k}', prof.get(vt, {}).get(k, 0), strs)
                for s in prof['samples']:
                    _check('sample stack_index', s.get('stack_index', 0), d['stack_table'])
                    _check('sample link_index', s.get('link_index', 0), d['link_table'])
                    for a in s['attribute_indices']:
                        _check('sample attribute index', a, d['attribute_table'])


def decode_request(data):
    """The request @data (bytes) as dicts; DecodeError when it is not one, or an index is out."""
    req = _message(data, REQUEST)
    _check_indices(req)
    return req


def any_value(v):
    """An AnyValue's Python value (strings, ints, ...), None when unset."""
    for k in ('string_value', 'int_value', 'bool_value', 'double_value', 'bytes_value'):
        if k in v:
            return v[k]
    return None


def resource_attrs(rp):
    """{key: value} of a ResourceProfiles' Resource."""
    return {kv['key']: any_value(kv.get('value', {}))
            for kv in rp.get('resource', {}).get('attributes', [])}


def attribute(req, idx):
    """(key, value) of attribute_table[@idx]."""
    d = req['dictionary']
    a = d['attribute_table'][idx]
    return d['string_table'][a.get('key_strindex', 0)], any_value(a.get('value', {}))


def frame_names(req, stack_index):
    """The frames of stack_table[@stack_index], leaf first: a Location's Lines innermost
    first (inlined functions before their caller), 0xADDRESS for one without Lines."""
    d = req['dictionary']
    strs = d['string_table']
    names = []
    for li in d['stack_table'][stack_index]['location_indices']:
        loc = d['location_table'][li]
        if not loc['lines']:
            names.append(f'0x{loc.get("address", 0):x}')
        for ln in loc['lines']:
            fn = d['function_table'][ln.get('function_index', 0)]
            names.append(strs[fn.get('name_strindex', 0)])
    return names


def profiles(req):
    """[(resource attrs, profile)] of every Profile of the request."""
    return [(resource_attrs(rp), prof) for rp in req['resource_profiles']
            for sp in rp['scope_profiles'] for prof in sp['profiles']]


def stacks(req):
    """[(resource attrs, [frame names, leaf first], value)]: every sample of every profile,
    its value the sum of its values."""
    out = []
    for attrs, prof in profiles(req):
        for s in prof['samples']:
            out.append((attrs, frame_names(req, s.get('stack_index', 0)), sum(s['values'])))
    return out


def check_zero_elements(req):
    """[problems]: each table's element 0 is the zero value and present, string_table[0] ""."""
    d = req['dictionary']
    bad = []
    for name in ('mapping_table', 'location_table', 'function_table', 'attribute_table',
                 'stack_table', 'link_table', 'string_table'):
        if not d.get(name):
            bad.append(f'{name}: empty, no element 0')
    if bad:
        return bad
    if d['string_table'][0] != '':
        bad.append(f'string_table[0] is {d["string_table"][0]!r}, not ""')
    for name in ('mapping_table', 'location_table', 'function_table', 'attribute_table',
                 'stack_table'):
        zero = d[name][0]
        if any(v not in ([], None) for v in zero.values()):
            bad.append(f'{name}[0] is not the zero value: {zero}')
    link = d['link_table'][0]
    if any(link.get(k, b'').strip(b'\0') for k in ('trace_id', 'span_id')):
        bad.append(f'link_table[0] is not a zero Link: {link}')
    return bad


def main():
    with open(sys.argv[1], 'rb') as f:
        req = decode_request(f.read())
    for attrs, prof in profiles(req):
        strs = req['dictionary']['string_table']
        st = prof.get('sample_type', {})
        print(attrs, strs[st.get('type_strindex', 0)], strs[st.get('unit_strindex', 0)],
              'period', prof.get('period', 0))
        for s in prof['samples']:
            print('  ' + ';'.join(reversed(frame_names(req, s.get('stack_index', 0)))),
                  sum(s['values']))


if __name__ == '__main__':
    main()
