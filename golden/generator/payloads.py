#!/usr/bin/env python3
"""Checksum payloads written and read by Python's msgpack (Debian: python3-msgpack), a client of the wire format
that shares no code with the Java codec.

  python3 golden/generator/payloads.py [--out DIR]       writes NAME.msgpack + NAME.txt per case
                                                         (default: engine/src/test/resources/interop)
  python3 golden/generator/payloads.py --decode FILE...  decodes payloads (e.g. written by Java) and prints
                                                         each in the NAME.txt form; FILE,SECTIONS_FILE decodes
                                                         the sections value beside the checksums too

Wire format (seeds/003, final form; the project tags it 2):
  [2, tp_size, num_tokens, [[group_id, fingerprint, block_size, start, values], ...]]
version 3 (a checksum mode other than the standard one; earlier releases also put named sections inline there):
  [3, tp_size, num_tokens, mode, [[group_id, fingerprint, block_size, start, values], ...], {name: any, ...}]
the sections value, carried beside the checksums (kv_transfer_params["kv_checksum_sections"]):
  [1, {name: any, ...}]
the earlier revision's version 1:
  [1, num_tokens, [[group_id, fingerprint, start, values], ...]]
and the final form tagged 1 (the seed names no version number for it):
  [1, tp_size, num_tokens, [[group_id, fingerprint, block_size, start, values], ...]]
values is a msgpack bin of little-endian uint64 block checksums; fingerprint an unsigned 64-bit integer.

The NAME.txt form, one field per line, every number in decimal (unsigned):
  tag T            the version tag in the bytes
  form F           v3 | v2 | v1 | v1-tagged-final
  tp_size N        (absent for v1)
  num_tokens N
  mode M           (v3 only)
  group G fingerprint F block_size B start S values V1 V2 ...   (block_size absent for v1)
  reencoded NAME   the file holding what a reader that writes the final form as version 2 must write back
  reencoded_sections NAME   the file holding the sections value a Java reader writes back (absent: none, as it
                   keeps only the sections it knows)
  input_sections NAME       the sections value that travels beside NAME.msgpack (absent: none travels)
  identical true   (--decode only) packing the decoded object again gives the same bytes
  section sglang-digest group G worker W signature S page_size P first_token F num_pages N digest D
                   (--decode only, one line per entry of a known sglang-digest section, before `identical`)

Sections this release knows (KNOWN_SECTIONS) are kept by a Java reader, which writes them back beside the checksums
(NAME.sections-value.msgpack), never inline; for them NAME.sections lists the entries in the `section ...` form above.
The inline cases (v3-sections, v3-sglang-digest) are what earlier releases wrote: still read, written back split.

Deterministic: every case draws from np.random.default_rng(crc32(name)).
"""
import argparse
import os
import sys
import zlib

import numpy as np

try:
    import msgpack
except ImportError:  # pragma: no cover - reported, not hidden
    sys.stderr.write("payloads.py: python3 cannot import msgpack (Debian: apt-get install python3-msgpack)\n")
    sys.exit(2)

LE_U64 = np.dtype('<u8')
KNOWN_SECTIONS = ('sglang-digest',)


def cdiv(a, b):
    return -(-a // b)


def values_bin(values):
    return np.asarray(values, dtype=LE_U64).tobytes()


def draw_u64(rng, n):
    """Uniform uint64 values, half of them with the top bit set: msgpack uint64 territory."""
    return [int(x) for x in rng.integers(0, 1 << 64, size=n, dtype=np.uint64, endpoint=False)]


def group(rng, gid, num_tokens, block_size, start=None):
    blocks = cdiv(num_tokens, block_size)
    if start is None:
        start = int(rng.integers(0, blocks + 1))
    fp = draw_u64(rng, 1)[0]
    return dict(group_id=gid, fingerprint=fp, block_size=block_size, start=start, values=draw_u64(rng, blocks - start))


def cases():
    """name -> (form, tp_size, num_tokens, groups)."""
    out = {}

    def rng(name):
        return np.random.default_rng(zlib.crc32(name.encode('ascii')))

    r = rng('v2-one-group')
    out['v2-one-group'] = ('v2', 2, 150, [group(r, 0, 150, 16, start=0)])
    r = rng('v2-three-groups')
    out['v2-three-groups'] = ('v2', 8, 161, [group(r, 0, 161, 16, start=8), group(r, 1, 161, 32), group(r, 7, 161, 1)])
    out['v2-no-groups'] = ('v2', 1, 0, [])
    r = rng('v2-empty-values')
    out['v2-empty-values'] = ('v2', 4, 64, [group(r, 3, 64, 16, start=4)])
    r = rng('v2-wide-numbers')
    # num_tokens past 2^32 (uint64 in msgpack), block size past 2^16, a group id past 2^16.
    n = (1 << 33) + 5
    out['v2-wide-numbers'] = ('v2', 65536, n, [group(r, 70000, n, 1 << 20, start=cdiv(n, 1 << 20) - 3)])
    r = rng('v1-two-groups')
    g = [group(r, 0, 100, 16, start=0), group(r, 2, 100, 16, start=3)]
    out['v1-two-groups'] = ('v1', None, 100, g)
    r = rng('v1-tagged-final')
    out['v1-tagged-final'] = ('v1-tagged-final', 2, 150, [group(r, 0, 150, 16, start=2), group(r, 1, 150, 32)])
    r = rng('v3-mixed')
    out['v3-mixed'] = ('v3', 4, 161, [group(r, 0, 161, 16, start=3), group(r, 1, 161, 32)], 'mixed', {})
    r = rng('v3-standard')
    out['v3-standard'] = ('v3', 1, 40, [group(r, 2, 40, 16, start=0)], 'standard', {})
    r = rng('v3-unknown-mode')
    out['v3-unknown-mode'] = ('v3', 2, 33, [group(r, 0, 33, 16, start=1)], 'fmix64-v9', {})
    r = rng('v3-sections')
    # Sections this reader does not know: nested arrays and maps, bin, str, nil, a float, a negative number. A reader
    # skips them; one that keeps none writes the payload back with an empty map.
    out['v3-sections'] = ('v3', 8, 64, [group(r, 5, 64, 16, start=0)], 'mixed',
                          {'later-extension': [1, -2, 3.5, None, {'k': b'\x00\xff'}], 'z': 'text', 'empty': {}})
    r = rng('v3-sglang-digest')
    # A section Java knows (docs/wire-format.md, "Known sections"): [group, worker, signature, page_size, first_token,
    # num_pages, adler32], sorted by (group, worker) as Java writes them; one signature with its top bit set.
    digests = [zlib.adler32(r.bytes(int(r.integers(1, 4096)))) for _ in range(3)]
    sigs = draw_u64(r, 2)
    out['v3-sglang-digest'] = ('v3', 2, 40, [group(r, 0, 40, 16, start=0), group(r, 1, 40, 8, start=0)], 'standard',
                               {'sglang-digest': [[0, 0, sigs[0], 16, 0, 3, digests[0]], [0, 1, sigs[0], 16, 0, 3, digests[1]],
                                                  [1, 0, sigs[1] | (1 << 63), 8, 0, 5, digests[2]]]})
    # Sections beside the checksums (the current form): the checksums are the plain version-2 (or mixed-mode
    # version-3, with an empty map) bytes, the sections a value of their own.
    r = rng('v2-sglang-digest-separate')
    digests = [zlib.adler32(r.bytes(int(r.integers(1, 4096)))) for _ in range(2)]
    sigs = draw_u64(r, 1)
    out['v2-sglang-digest-separate'] = ('v2', 2, 48, [group(r, 0, 48, 16, start=0)], None, None,
                                        {'sglang-digest': [[0, 0, sigs[0] | (1 << 63), 16, 0, 3, digests[0]],
                                                           [0, 1, sigs[0] | (1 << 63), 16, 0, 3, digests[1]]]})
    r = rng('v2-unknown-sections-separate')
    out['v2-unknown-sections-separate'] = ('v2', 4, 70, [group(r, 1, 70, 32, start=1)], None, None,
                                           {'later-extension': [1, -2, 3.5, None, {'k': b'\x00\xff'}], 'z': 'text'})
    r = rng('v3-mixed-sections-separate')
    digests = [zlib.adler32(r.bytes(int(r.integers(1, 4096))))]
    sigs = draw_u64(r, 1)
    out['v3-mixed-sections-separate'] = ('v3', 8, 33, [group(r, 0, 33, 8, start=2)], 'mixed', {},
                                         {'sglang-digest': [[0, 0, sigs[0], 8, 16, 3, digests[0]]]})
    return out


def sections_value(sections):
    """The sections value: [1, {name: any, ...}]."""
    return [1, sections]


def sections_text(sections):
    """The `section ...` lines of the known sections' entries."""
    lines = []
    for e in (sections or {}).get('sglang-digest', []):
        lines.append('section sglang-digest group %d worker %d signature %d page_size %d first_token %d num_pages %d '
                     'digest %d' % tuple(e))
    return lines


def to_object(form, tp, n, groups, mode=None, sections=None):
    if form == 'v3':
        return [3, tp, n, mode, [[g['group_id'], g['fingerprint'], g['block_size'], g['start'], values_bin(g['values'])]
                                 for g in groups], sections]
    if form == 'v1':
        return [1, n, [[g['group_id'], g['fingerprint'], g['start'], values_bin(g['values'])] for g in groups]]
    tag = 2 if form == 'v2' else 1
    return [tag, tp, n, [[g['group_id'], g['fingerprint'], g['block_size'], g['start'], values_bin(g['values'])]
                         for g in groups]]


def from_object(obj):
    """(form, tp, n, groups, mode, sections) from a decoded payload; raises ValueError for anything else."""
    if not isinstance(obj, list) or len(obj) not in (3, 4, 6) or not isinstance(obj[0], int):
        raise ValueError('not a checksum payload: %r' % (obj,))
    tag = obj[0]
    mode, sections = None, None
    if tag == 3 and len(obj) == 6:
        form, tp, n, mode, raw, sections, fields = 'v3', obj[1], obj[2], obj[3], obj[4], obj[5], 5
        if not isinstance(mode, str) or not isinstance(sections, dict):
            raise ValueError('version 3 with mode %r and sections %r' % (mode, sections))
    elif tag == 1 and len(obj) == 3:
        form, tp, n, raw, fields = 'v1', None, obj[1], obj[2], 4
    elif tag in (1, 2) and len(obj) == 4:
        form, tp, n, raw, fields = ('v2' if tag == 2 else 'v1-tagged-final'), obj[1], obj[2], obj[3], 5
    else:
        raise ValueError('tag %r with %d elements' % (tag, len(obj)))
    groups = []
    for g in raw:
        if len(g) != fields:
            raise ValueError('a group of %d fields in %s' % (len(g), form))
        if len(g[-1]) % 8:
            raise ValueError('values of %d bytes' % len(g[-1]))
        vals = [int(x) for x in np.frombuffer(g[-1], dtype=LE_U64)]
        d = dict(group_id=g[0], fingerprint=g[1], start=g[-2], values=vals)
        d['block_size'] = g[2] if fields == 5 else None
        groups.append(d)
    return form, tp, n, groups, mode, sections


def to_text(form, tp, n, groups, mode=None, extra=()):
    tag = 1 if form in ('v1', 'v1-tagged-final') else 3 if form == 'v3' else 2
    lines = ['tag %d' % tag, 'form %s' % form]
    if tp is not None:
        lines.append('tp_size %d' % tp)
    lines.append('num_tokens %d' % n)
    if form == 'v3':
        lines.append('mode %s' % mode)
    for g in groups:
        line = 'group %d fingerprint %d' % (g['group_id'], g['fingerprint'])
        if g.get('block_size') is not None:
            line += ' block_size %d' % g['block_size']
        line += ' start %d values' % g['start']
        for v in g['values']:
            line += ' %d' % v
        lines.append(line)
    lines.extend(extra)
    return '\n'.join(lines) + '\n'


def pack(obj):
    return msgpack.packb(obj, use_bin_type=True)


def write(out):
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        if f.endswith('.msgpack') or f.endswith('.txt') or f.endswith('.sections'):
            os.remove(os.path.join(out, f))
    for name, case in sorted(cases().items()):
        form, tp, n, groups = case[:4]
        mode, sections = case[4:6] if len(case) >= 6 else (None, None)
        separate = case[6] if len(case) == 7 else None
        if form == 'v1':
            groups = [dict(g, block_size=None) for g in groups]   # version 1 carries no block size
        data = pack(to_object(form, tp, n, groups, mode, sections))
        # Python reads its own bytes back to the same values before anything is written.
        back = from_object(msgpack.unpackb(data, raw=False, strict_map_key=False))
        assert back == (form, tp, n, groups, mode, sections), name
        reencoded = name
        extra = []
        every = dict(sections or {}, **(separate or {}))
        known = {k: v for k, v in every.items() if k in KNOWN_SECTIONS}
        if known and set(every) <= set(KNOWN_SECTIONS):
            # NAME.sections lists the known sections' entries.
            with open(os.path.join(out, name + '.sections'), 'w') as fh:
                fh.write('\n'.join(sections_text(known)) + '\n')
        if sections:
            # A Java reader writes the checksums back without inline sections: its sections travel beside them.
            reencoded = name + '.no-sections'
            with open(os.path.join(out, reencoded + '.msgpack'), 'wb') as fh:
                fh.write(pack(to_object(form, tp, n, groups, mode, {})))
        if separate is not None:
            with open(os.path.join(out, name + '.sections-value.msgpack'), 'wb') as fh:
                fh.write(pack(sections_value(separate)))
            extra.append('input_sections ' + name + '.sections-value')
        if known:
            # A reader keeps the sections it knows and writes them as the sections value.
            rs = name + '.sections-value' if separate is not None and set(separate) == set(known) else name + '.known-sections-value'
            if rs != name + '.sections-value':
                with open(os.path.join(out, rs + '.msgpack'), 'wb') as fh:
                    fh.write(pack(sections_value(known)))
            extra.append('reencoded_sections ' + rs)
        if form == 'v1-tagged-final':
            # A reader of the final form writes it back tagged 2: the same fields, the tag changed.
            reencoded = name + '.as-v2'
            with open(os.path.join(out, reencoded + '.msgpack'), 'wb') as fh:
                fh.write(pack(to_object('v2', tp, n, groups)))
        with open(os.path.join(out, name + '.msgpack'), 'wb') as fh:
            fh.write(data)
        with open(os.path.join(out, name + '.txt'), 'w') as fh:
            fh.write(to_text(form, tp, n, groups, mode, extra + ['reencoded ' + reencoded]))


def decode(files):
    for arg in files:
        # FILE, or FILE,SECTIONS_FILE: the checksums and the sections value that travelled beside them.
        path, _, spath = arg.partition(',')
        with open(path, 'rb') as fh:
            data = fh.read()
        obj = msgpack.unpackb(data, raw=False, strict_map_key=False)
        form, tp, n, groups, mode, sections = from_object(obj)
        identical = pack(obj) == data
        if spath:
            with open(spath, 'rb') as fh:
                sdata = fh.read()
            sobj = msgpack.unpackb(sdata, raw=False, strict_map_key=False)
            if not isinstance(sobj, list) or len(sobj) != 2 or sobj[0] != 1 or not isinstance(sobj[1], dict):
                raise ValueError('not a sections value [1, {...}]: %r' % (sobj,))
            if set(sobj[1]) & set(sections or {}):
                raise ValueError('sections both inline and beside: %r' % sorted(set(sobj[1]) & set(sections or {})))
            sections = dict(sections or {}, **sobj[1])
            identical = identical and pack(sobj) == sdata
        sys.stdout.write('file %s\n' % os.path.basename(path))
        sys.stdout.write(to_text(form, tp, n, groups, mode,
                                 sections_text(sections) + ['identical %s' % ('true' if identical else 'false')]))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=os.path.join(here, '..', '..', 'engine', 'src', 'test', 'resources', 'interop'))
    ap.add_argument('--decode', nargs='+', metavar='FILE')
    a = ap.parse_args()
    if a.decode:
        decode(a.decode)
    else:
        write(os.path.normpath(a.out))


if __name__ == '__main__':
    main()
