#!/usr/bin/env python3
"""Reads the WRITTEN golden vectors (NAME.json + NAME.bin, index.json) the way a consumer would and
checks them: the checksums recomputed with plain Python ints from the bytes through the generic
layout description, the family parameters rebuilt into the same regions, and every relation.
Needs only the Python standard library.

Usage: python3 golden/generator/verify.py [DIR]     (default: golden/src/main/resources/vectors)
"""
import json
import os
import sys

M64 = (1 << 64) - 1


def cdiv(a, b):
    return -(-a // b)


def family_regions(v):
    """The layers' regions and the buffer sizes as rebuilt from the family parameters."""
    f = v['family']
    name = f['name']
    L = len(v['layers'])
    regs = []
    if name in ('vllm-flash', 'flashinfer-nhd', 'flashinfer-hnd'):
        npg, ps, H, D, e = f['num_pages'], f['page_size'], f['heads'], f['head_dim'], f['elem_bytes']
        E = D * e
        if name == 'vllm-flash':
            pst, tst, hst, voff, size = ps * H * E, H * E, E, npg * ps * H * E, 2 * npg * ps * H * E
        elif name == 'flashinfer-nhd':
            pst, tst, hst, voff, size = 2 * ps * H * E, H * E, E, ps * H * E, npg * 2 * ps * H * E
        else:
            pst, tst, hst, voff, size = 2 * H * ps * E, E, ps * E, H * ps * E, npg * 2 * H * ps * E
        for i in range(L):
            k = dict(buffer=i, offset=0, page_stride=pst, token_stride=tst, head_stride=hst, cell_bytes=E)
            regs.append((k, dict(k, offset=voff), H))
        return regs, [size] * L, ps
    if name == 'vllm-mla':
        npg, ps, D, e = f['num_pages'], f['page_size'], f['head_dim'], f['elem_bytes']
        for i in range(L):
            regs.append((dict(buffer=i, offset=0, page_stride=ps * D * e, token_stride=D * e, head_stride=0,
                              cell_bytes=D * e), None, 1))
        return regs, [npg * ps * D * e] * L, ps
    if name == 'sglang':
        slots, ps, H, D, e, mla = f['num_slots'], f['page_size'], f['heads'], f['head_dim'], f['elem_bytes'], \
            f['mla']
        E = D * e
        for i in range(L):
            k = dict(buffer=i if mla else 2 * i, offset=0, page_stride=ps * H * E, token_stride=H * E,
                     head_stride=E, cell_bytes=E)
            regs.append((k, None if mla else dict(k, buffer=2 * i + 1), H))
        return regs, [slots * H * E] * (L if mla else 2 * L), ps
    if name == 'flat':
        nl, mp, H, D, e = f['num_layers'], f['max_pos'], f['heads'], f['head_dim'], f['elem_bytes']
        assert nl == L
        E = D * e
        t0 = v['first_block'] * v['block_size']
        for i in range(L):
            k = dict(buffer=0, offset=(i * mp + t0) * H * E, page_stride=0, token_stride=H * E, head_stride=E,
                     cell_bytes=E)
            regs.append((k, dict(k, buffer=1), H))
        return regs, [L * mp * H * E] * 2, mp - t0
    raise AssertionError('unknown family ' + name)


def check_vector(d, name):
    with open(os.path.join(d, name + '.json'), encoding='ascii') as fh:
        v = json.load(fh)
    with open(os.path.join(d, name + '.bin'), 'rb') as fh:
        blob = fh.read()
    assert v['name'] == name
    keys = {'name', 'seed', 'description', 'family', 'block_size', 'num_tokens', 'first_block', 'page_size',
            'block_table', 'buffers', 'layers', 'expected', 'expected_slices'}
    assert set(v) == keys, set(v) ^ keys
    bufs = [blob[b['offset']:b['offset'] + b['bytes']] for b in v['buffers']]
    for b, r in zip(bufs, v['buffers']):
        assert len(b) == r['bytes']
    B, N, F, ps, table = v['block_size'], v['num_tokens'], v['first_block'], v['page_size'], v['block_table']
    t0 = F * B
    assert N > t0 and len(table) == cdiv(N - t0, ps)
    if v['family'] is not None:
        regs, sizes, fps = family_regions(v)
        assert fps == ps, (name, fps, ps)
        assert sizes == [b['bytes'] for b in v['buffers']], (name, sizes)
        for (k, vv, H), lay in zip(regs, v['layers']):
            assert lay['k'] == k and lay['v'] == vv and lay['num_heads'] == H, name
    expected = []
    slices = {}
    for b in range(F, cdiv(N, B)):
        c = 0
        for lay in v['layers']:
            for h in range(lay['num_heads']):
                head = lay['first_head'] + h
                s = 0
                for t in range(b * B, min((b + 1) * B, N)):
                    page = table[(t - t0) // ps]
                    o = (t - t0) % ps
                    cell = b''
                    for r in (lay['k'], lay['v']):
                        if r is None:
                            continue
                        a = r['offset'] + page * r['page_stride'] + o * r['token_stride'] + h * r['head_stride']
                        assert a + r['cell_bytes'] <= len(bufs[r['buffer']])
                        cell += bufs[r['buffer']][a:a + r['cell_bytes']]
                    P = len(cell) // 8
                    for p in range(P):
                        s += int.from_bytes(cell[8 * p:8 * p + 8], 'little') * (2 * (t * P + p) + 1)
                s &= M64
                slices.setdefault((lay['layer'], head), []).append(str(s))
                c += (2 * (lay['layer'] * 65536 + head) + 1) * s
        expected.append(str(c & M64))
    assert expected == v['expected'], name + ': expected checksums disagree'
    order = [(lay['layer'], lay['first_head'] + h) for lay in v['layers'] for h in range(lay['num_heads'])]
    assert [(e['layer'], e['head']) for e in v['expected_slices']] == order, name
    for e in v['expected_slices']:
        assert e['values'] == slices[(e['layer'], e['head'])], name + ': slice sums disagree'
    return v


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(here), 'src', 'main', 'resources',
                                                           'vectors')
    with open(os.path.join(d, 'index.json'), encoding='ascii') as fh:
        index = json.load(fh)
    names = index['vectors']
    assert names == sorted(names) and len(set(names)) == len(names)
    files = sorted(f for f in os.listdir(d) if f != 'index.json')
    assert files == sorted([n + '.json' for n in names] + [n + '.bin' for n in names]), 'stray or missing files'
    vs = {n: check_vector(d, n) for n in names}
    ex = {n: [int(x) for x in v['expected']] for n, v in vs.items()}
    for r in index['relations']:
        if r['kind'] == 'sum':
            acc = [0] * len(ex[r['whole']])
            for p in r['parts']:
                assert len(ex[p]) == len(acc)
                acc = [(a + x) & M64 for a, x in zip(acc, ex[p])]
            assert acc == ex[r['whole']], r
        elif r['kind'] == 'rechunk':
            s, l, f = ex[r['small']], ex[r['large']], r['factor']
            assert vs[r['small']]['first_block'] == 0 and vs[r['large']]['first_block'] == 0
            assert vs[r['large']]['block_size'] == f * vs[r['small']]['block_size']
            assert len(l) == cdiv(len(s), f)
            for k in range(len(l)):
                assert sum(s[k * f:(k + 1) * f]) & M64 == l[k], r
        elif r['kind'] == 'differs':
            assert len(ex[r['a']]) == len(ex[r['b']]) and ex[r['a']] != ex[r['b']], r
        else:
            raise AssertionError(r)
    print('verified %d vectors and %d relations in %s' % (len(names), len(index['relations']), d))


if __name__ == '__main__':
    main()
