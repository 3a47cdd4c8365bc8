#!/usr/bin/env python3
"""Golden vectors for cells that are not whole 8-byte pieces in K and V: straddling pieces, index-K caches,
and the padded-cells extension (docs/definition.md, "Extension: padded cells").

An implementation of its own (NumPy, sharing no code with the Java library nor with generate.py; the piece
arithmetic, MIX and the writing of the folder are pieces.py's, shared with generate_combinations.py):
  * a cell is its K bytes followed by its V bytes; P = ceil(cell bytes / 8);
  * piece p of the cell = little-endian uint64 of cell bytes [8p, 8p+8), zero past the cell's end
    (only with padding: without it a cell must be whole pieces, and the group is refused);
    so a piece may straddle K's last bytes and V's first;
  * j = t*P + p, s = sum x_j (2j+1), c = sum m s, m = 2(layer*2^16 + head) + 1, all mod 2^64;
  * mixed mode: x_j replaced by MIX(x_j) (three Feistel rounds, docs/detection.md).

Each vector is written as NAME.json + NAME.bin in the format of generate.py's vectors (golden/generator/README.md)
with three more keys: "pad_cells" (true: the expected values need CellPadding.ZEROS, and a plan without padding
must be refused), "expected_mixed" and "expected_slices_mixed" (the same bytes in the mixed mode).

Checks before writing: the cells read back through each layout description are the logical ones, and every
value is recomputed a second way, with Python ints over pieces assembled byte by byte from the physical buffers.

Usage: python3 golden/generator/generate_cells.py [--out DIR]   (default golden/src/main/resources/vectors-cells)
"""
import argparse
import os
import zlib

import numpy as np

from pieces import ALIGN, M64, U64, cdiv, mix_int, mix_np, slice_values, write_vectors


class Cache:
    """One layer's cache (attention KV, an MLA row, an index-K cache): cells [heads][T][kb + vb] of request tokens
    t0 .. N-1, and where its K and V cells go."""

    def __init__(self, layer, first_head, heads, kb, vb, data):
        self.layer, self.first_head, self.heads, self.kb, self.vb, self.data = layer, first_head, heads, kb, vb, data


def expected(caches, t0, N, B, F, mixed):
    nb = cdiv(N, B) - F
    total = [0] * nb
    slices = []
    for c in caches:
        for h in range(c.heads):
            head = c.first_head + h
            s = slice_values(c.data[h], t0, N, B, F, mixed)
            slices.append({'layer': c.layer, 'head': head, 'values': [str(v) for v in s]})
            m = 2 * (c.layer * 65536 + head) + 1
            total = [(a + m * v) & M64 for a, v in zip(total, s)]
    return [str(v) for v in total], slices


def build(name, description, caches, page_size, B, N, F, pad, kv_order='token'):
    """Scatters every cache's K and V cells into buffers of their own (pages in a permuted table, slack between
    cells so V's pieces lie at offsets that are not multiples of 8), returns the vector's JSON and buffers."""
    rng = np.random.default_rng(zlib.crc32(name.encode('ascii')))
    t0 = F * B
    T = N - t0
    pages_needed = cdiv(T, page_size)
    num_pages = pages_needed + 2
    table = [int(p) for p in rng.permutation(num_pages)[:pages_needed]]
    buffers = []
    layers = []
    for c in caches:
        regions = []
        for part, nbytes, lo in (('k', c.kb, 0), ('v', c.vb, c.kb)):
            if nbytes == 0:
                regions.append(None)
                continue
            slack = int(rng.integers(0, 8))
            offset = int(rng.integers(0, 8))
            cell = nbytes + slack
            if kv_order == 'token':      # [page][slot][head][cell]
                head_stride, token_stride = cell, cell * c.heads + int(rng.integers(0, 4))
                page_stride = token_stride * page_size + int(rng.integers(0, 4))
            else:                        # [page][head][slot][cell]
                token_stride, head_stride = cell, cell * page_size + int(rng.integers(0, 4))
                page_stride = head_stride * c.heads + int(rng.integers(0, 4))
            size = offset + page_stride * num_pages + 8
            buf = np.frombuffer(rng.bytes(size), dtype=np.uint8).copy()
            for i in range(T):
                page, slot = table[i // page_size], i % page_size
                for h in range(c.heads):
                    at = offset + page * page_stride + slot * token_stride + h * head_stride
                    buf[at:at + nbytes] = c.data[h, i, lo:lo + nbytes]
            regions.append({'buffer': len(buffers), 'offset': offset, 'page_stride': page_stride,
                            'token_stride': token_stride, 'head_stride': head_stride, 'cell_bytes': nbytes})
            buffers.append(buf)
        layers.append({'layer': c.layer, 'first_head': c.first_head, 'num_heads': c.heads,
                       'k': regions[0], 'v': regions[1]})
    for c in caches:
        assert pad or (c.kb + c.vb) % 8 == 0, name
    exp, sl = expected(caches, t0, N, B, F, False)
    exp_m, sl_m = expected(caches, t0, N, B, F, True)
    offs = []
    pos = 0
    for b in buffers:
        pos = cdiv(pos, ALIGN) * ALIGN
        offs.append({'offset': pos, 'bytes': len(b)})
        pos += len(b)
    js = {'name': name, 'seed': zlib.crc32(name.encode('ascii')), 'description': description, 'family': None,
          'block_size': B, 'num_tokens': N, 'first_block': F, 'page_size': page_size, 'block_table': table,
          'buffers': offs, 'layers': layers, 'pad_cells': pad,
          'expected': exp, 'expected_slices': sl, 'expected_mixed': exp_m, 'expected_slices_mixed': sl_m}
    data = bytearray(np.random.default_rng([js['seed'], 2]).bytes(pos))
    for b, d in zip(buffers, offs):
        data[d['offset']:d['offset'] + d['bytes']] = b.tobytes()
    recheck(js, bytes(data))
    return js, bytes(data)


def recheck(js, data):
    """The second way: Python ints, each piece assembled byte by byte from the physical buffers through the JSON's
    own layout description (so the description, not the logical array, is what is checked)."""
    B, N, F, ps = js['block_size'], js['num_tokens'], js['first_block'], js['page_size']
    t0 = F * B

    def region_byte(r, t, h, q):
        i = t - t0
        page, slot = js['block_table'][i // ps], i % ps
        base = js['buffers'][r['buffer']]['offset']
        return data[base + r['offset'] + page * r['page_stride'] + slot * r['token_stride'] + h * r['head_stride'] + q]

    for mixed, key, skey in ((False, 'expected', 'expected_slices'), (True, 'expected_mixed', 'expected_slices_mixed')):
        total = [0] * (cdiv(N, B) - F)
        row = 0
        for l in js['layers']:
            kb = l['k']['cell_bytes']
            vb = 0 if l['v'] is None else l['v']['cell_bytes']
            P = cdiv(kb + vb, 8)
            for h in range(l['num_heads']):
                head = l['first_head'] + h
                vals = []
                for b in range(F, cdiv(N, B)):
                    s = 0
                    for t in range(b * B, min((b + 1) * B, N)):
                        for p in range(P):
                            x = 0
                            for q in range(8 * p + 7, 8 * p - 1, -1):
                                byte = 0 if q >= kb + vb else region_byte(l['k'], t, h, q) if q < kb \
                                    else region_byte(l['v'], t, h, q - kb)
                                x = (x << 8) | byte
                            s += (mix_int(x) if mixed else x) * (2 * (t * P + p) + 1)
                    vals.append(s & M64)
                assert js[skey][row] == {'layer': l['layer'], 'head': head, 'values': [str(v) for v in vals]}, \
                    (js['name'], key, row)
                m = 2 * (l['layer'] * 65536 + head) + 1
                total = [(a + m * v) & M64 for a, v in zip(total, vals)]
                row += 1
        assert js[key] == [str(v) for v in total], (js['name'], key)


def cells(rng, heads, T, nbytes, bf16=False):
    if bf16:  # bf16 values of modest size: the top halves of float32s
        f = (rng.integers(-(1 << 20), 1 << 20, size=heads * T * nbytes // 2) / float(1 << 18)).astype('<f4')
        return (f.view('<u4') >> np.uint32(16)).astype('<u2').view(np.uint8).reshape(heads, T, nbytes)
    return np.frombuffer(rng.bytes(heads * T * nbytes), dtype=np.uint8).reshape(heads, T, nbytes).copy()


def kv(rng, layer, first_head, heads, kb, vb, T, bf16=False):
    return Cache(layer, first_head, heads, kb, vb, cells(rng, heads, T, kb + vb, bf16))


def vectors():
    out = []

    def add(name, description, make, page_size, B, N, F, pad, order='token'):
        rng = np.random.default_rng([zlib.crc32(name.encode('ascii')), 1])
        out.append(build(name, description, make(rng, N - F * B), page_size, B, N, F, pad, order))

    add('straddle-k4-v4', 'K 4 + V 4 bytes: one piece, straddling K and V; 2 heads, B=8, N=21',
        lambda r, T: [kv(r, 2, 0, 2, 4, 4, T)], 4, 8, 21, 0, False)
    add('straddle-k12-v20', 'K 12 + V 20 bytes: piece 1 straddles, V pieces at V+4; 3 heads, head-major, B=16, N=37, F=1',
        lambda r, T: [kv(r, 5, 3, 3, 12, 20, T)], 8, 16, 37, 1, False, 'head')
    add('straddle-mla-k516-v60', 'an MLA-like row split 516 + 60 bytes (576 in all), 1 head, B=16, N=33',
        lambda r, T: [kv(r, 7, 0, 1, 516, 60, T)], 16, 16, 33, 0, False)
    add('straddle-k1-v7-k13-v3', 'two layers of odd splits (K 1 + V 7, K 13 + V 3), B=4, N=11',
        lambda r, T: [kv(r, 0, 0, 2, 1, 7, T), kv(r, 1, 0, 1, 13, 3, T)], 2, 4, 11, 0, False)
    add('indexk-bf16', 'layer 3: attention KV (2 heads, K 64 + V 64) then a bf16 index-K cache (head dim 64, head 2), '
        'plus layer 4 alike; B=16, N=40',
        lambda r, T: [kv(r, 3, 0, 2, 64, 64, T, True), kv(r, 3, 2, 1, 128, 0, T, True),
                      kv(r, 4, 0, 2, 64, 64, T, True), kv(r, 4, 2, 1, 128, 0, T, True)], 16, 16, 40, 0, False)
    add('indexk-fp8-132-padded', 'layer 3: an MLA row (576 bytes) then an fp8 index-K cache of 128 + 4-byte scale = 132 '
        'bytes (head 1), padded to 136; B=16, N=35',
        lambda r, T: [kv(r, 3, 0, 1, 576, 0, T), kv(r, 3, 1, 1, 132, 0, T)], 16, 16, 35, 0, True)
    add('padded-k6-v6', 'K 6 + V 6 = 12 bytes (fp16 head dim 3), padded to 16; 2 heads, B=8, N=19, F=1',
        lambda r, T: [kv(r, 1, 4, 2, 6, 6, T)], 4, 8, 19, 1, True, 'head')
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(os.path.dirname(here), 'src', 'main', 'resources', 'vectors-cells')
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=default_out)
    args = ap.parse_args()
    np.seterr(over='ignore')
    assert mix_int(1) == int(mix_np(np.array([1], dtype=U64))[0])
    vs = vectors()
    write_vectors(args.out, vs)
    print('%d cell vectors -> %s' % (len(vs), args.out))


if __name__ == '__main__':
    main()
