#!/usr/bin/env python3
"""Mixed-mode expectations for the golden vectors (docs/detection.md).

In mixed mode every 8-byte piece x passes through the fixed bijection MIX before weighting:
    s = sum_j MIX(x_j) * (2j + 1)  mod 2^64,   c = sum m * s  mod 2^64   (everything else unchanged)
    MIX(x) = H(L(H(x, 0x9E3779B9), 0x85EBCA6B), 0xC2B2AE35)    with x = hi * 2^32 + lo and
    H(x, k): p = lo * k (exact 64-bit product);  hi ^= (p ^ (p >> 32)) mod 2^32
    L(x, k): p = hi * k;                          lo ^= (p ^ (p >> 32)) mod 2^32

The vectors themselves (layouts, bytes) are the standard ones in golden/src/main/resources/vectors/, unchanged;
this program rebuilds them in memory with generate.py and writes only the mixed-mode values, to
golden/src/main/resources/vectors-mixed/mixed.json:
    {"mode": "mixed", "mixer": "feistel3", "mixer_examples": [[x, MIX(x)], ...],
     "vectors": {NAME: {"expected": [...], "expected_slices": [{"layer", "head", "values"}]}}}
(unsigned 64-bit values as decimal strings, the same order and meaning as in NAME.json).

Checks before writing: MIX against a plain Python-int implementation written from the definition above; the
mixed values of every vector up to 20000 pieces, and of every production-geometry vector (generate.py's PRODUCTION),
recomputed with Python ints; the sum and rechunk relations of index.json hold in mixed mode too (the mixer keeps the
sum additive over pieces); every 'differs' pair differs.

Usage: python3 golden/generator/generate_mixed.py [--out DIR]
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate as g  # noqa: E402
from pieces import mix_int, mix_np  # noqa: E402  (MIX, shared by every generator of the mixed mode)

U64 = np.uint64
M64 = (1 << 64) - 1
PYINT_MAX_PIECES = 20000


EXAMPLES = [0, 1, 2, 1 << 31, 1 << 32, 1 << 63, M64, 0x0123456789ABCDEF, 0xFEDCBA9876543210,
            0x8000000080000000, 0x3FF0000000000000, 0xBF80BF80BF80BF80]


def mixed_slice_sums(cells, t0, N, B, F):
    T, C = cells.shape
    P = C // 8
    x = mix_np(np.ascontiguousarray(cells).view('<u8').reshape(T, P).astype(U64))
    t = np.full(T, t0, dtype=U64) + np.arange(T, dtype=U64)
    j = t[:, None] * np.full((1, 1), P, dtype=U64) + np.arange(P, dtype=U64)[None, :]
    w = j * np.full((1, 1), 2, dtype=U64) + np.ones((1, 1), dtype=U64)
    per_token = (x * w).sum(axis=1, dtype=U64)
    return [int(per_token[b * B - t0:min((b + 1) * B, N) - t0].sum(dtype=U64)) for b in range(F, g.cdiv(N, B))]


def mixed_expected(v):
    G = v.group
    nblk = g.cdiv(G.N, G.B) - G.F
    totals, slices = [0] * nblk, []
    for ld in v.layers:
        for h in range(ld.nh):
            head = ld.first_head + h
            s = mixed_slice_sums(ld.data[h], G.t0, G.N, G.B, G.F)
            slices.append((ld.layer, head, s))
            m = g.head_weight(ld.layer, head)
            totals = [(a + m * b) & M64 for a, b in zip(totals, s)]
    return totals, slices


def pyint_expected(v):
    G = v.group
    totals = []
    for b in range(G.F, g.cdiv(G.N, G.B)):
        c = 0
        for ld in v.layers:
            P = (ld.kb + ld.vb) // 8
            for h in range(ld.nh):
                s = 0
                for t in range(b * G.B, min((b + 1) * G.B, G.N)):
                    cell = ld.data[h, t - G.t0].tobytes()
                    for p in range(P):
                        s += mix_int(int.from_bytes(cell[8 * p:8 * p + 8], 'little')) * (2 * (t * P + p) + 1)
                c += (2 * (ld.layer * 65536 + ld.first_head + h) + 1) * (s & M64)
        totals.append(c & M64)
    return totals


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(os.path.dirname(here), 'src', 'main', 'resources', 'vectors-mixed')
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=default_out, help='output folder (default: %(default)s)')
    args = ap.parse_args()
    np.seterr(over='ignore')

    xs = np.array(EXAMPLES, dtype=U64)
    assert [int(y) for y in mix_np(xs)] == [mix_int(x) for x in EXAMPLES]
    rng = np.random.default_rng(7)
    r = rng.integers(0, 1 << 63, size=4096, dtype=np.int64).astype(U64) * np.uint64(2) + np.uint64(1)
    assert [int(y) for y in mix_np(r)] == [mix_int(int(x)) for x in r]

    g.self_test_arithmetic()
    g.generate_all()
    out, checked = {}, 0
    for name in sorted(g.ALL):
        v = g.ALL[name]
        exp, slices = mixed_expected(v)
        assert exp != v.expected, name          # the mode changes the values (else the vector proves nothing)
        if v.pieces <= PYINT_MAX_PIECES or name in g.PRODUCTION:
            assert pyint_expected(v) == exp, '%s: python-int check disagrees' % name
            checked += 1
        out[name] = {'expected': [str(x) for x in exp],
                     'expected_slices': [{'layer': l, 'head': h, 'values': [str(x) for x in s]}
                                         for (l, h, s) in slices]}
    for rel in g.RELATIONS:
        if rel['kind'] == 'sum':
            acc = [0] * len(out[rel['whole']]['expected'])
            for p in rel['parts']:
                acc = [(a + int(x)) & M64 for a, x in zip(acc, out[p]['expected'])]
            assert acc == [int(x) for x in out[rel['whole']]['expected']], rel
        elif rel['kind'] == 'rechunk':
            small = [int(x) for x in out[rel['small']]['expected']]
            f = rel['factor']
            for k, c in enumerate(out[rel['large']]['expected']):
                assert sum(small[k * f:(k + 1) * f]) & M64 == int(c), rel
        else:
            assert out[rel['a']]['expected'] != out[rel['b']]['expected'], rel
    doc = {'mode': 'mixed', 'mixer': 'feistel3',
           'mixer_examples': [[str(x), str(mix_int(x))] for x in EXAMPLES],
           'vectors': out}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'mixed.json'), 'w', encoding='ascii', newline='\n') as f:
        f.write(json.dumps(doc, sort_keys=True, indent=1) + '\n')
    print('%d vectors in mixed mode (%d re-checked with Python ints), %d relations re-checked -> %s' % (
        len(out), checked, len(g.RELATIONS), args.out))


if __name__ == '__main__':
    main()
