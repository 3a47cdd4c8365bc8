#!/usr/bin/env python3
"""Golden vectors for combinations of features that the other sets test one at a time (issue 25):

  * padding x segments: a segmented cache (KvSegments: 2-4 allocations of whole pages, each its own page size)
    whose cells are not whole 8-byte pieces (index-K 132-byte K-only cells, K 6 + V 6, K 12 + V 20 straddling),
    with CellPadding.ZEROS where needed; requests from block 0 and from a block F > 0, block sizes that straddle
    segment boundaries;
  * mixed x byte cells: groups whose layers mix whole-piece layers with byte-cell layers (straddling and padded),
    page tables shuffled; every vector has both modes, these are the ones whose launches mix the two cell kinds;
  * several requests in one plan: one group, 3-5 requests of different lengths, block sizes, first blocks and page
    tables (some sharing pages, one with no blocks at all), each with its own expectations.

An implementation of its own (NumPy; shares no code with the Java library; the piece arithmetic, MIX and the
writing of the folder are pieces.py's, shared with generate_cells.py):
  * a cell is its K bytes followed by its V bytes, read as little-endian uint64 pieces, P = ceil(bytes / 8), the
    last piece zero-padded at its end (padding; without it every cell must be whole pieces);
  * j = t*P + p (t = the token's request position), s = sum x_j (2j+1), c = sum m s, m = 2(layer*2^16 + head) + 1,
    all mod 2^64; in the mixed mode x_j is replaced by MIX(x_j) (three Feistel rounds, docs/detection.md).

File format (NAME.json + NAME.bin; index.json lists the names). Checksums are unsigned 64-bit decimal strings, every
other number a JSON integer, every offset, stride and size in bytes:
  name, seed, description     the name, its seed (CRC-32 of the name), what it covers
  source                      "group" (one group, requests address it through their page tables) or "segments"
                              (the groups are consecutive position ranges: segment i holds request positions
                              [start_i, start_i + num_pages*page_size), start_0 = 0, each next one where the previous
                              one ends; position t is on page (t - start_i) // page_size, slot (t - start_i) % page_size;
                              the requests' page tables are empty)
  pad_cells                   true: the expectations need CellPadding.ZEROS; a plan without padding must be refused
  buffers                     [{offset, bytes}]: byte ranges of NAME.bin (each starts at a multiple of 64)
  groups                      [{page_size, num_pages, layers}], layers as in generate.py's vectors:
                              [{layer, first_head, num_heads, k: region, v: region or null}], a region
                              {buffer, offset, page_stride, token_stride, head_stride, cell_bytes}; the K bytes of
                              (page p, slot o, local head h) start at offset + p*page_stride + o*token_stride +
                              h*head_stride of that buffer; every group has the same layers, heads and cell sizes
  requests                    [{num_tokens, first_block, block_size, block_table, expected, expected_slices,
                              expected_mixed, expected_slices_mixed}]: page i of block_table holds request tokens
                              [F*B + i*page_size, F*B + (i+1)*page_size) (empty for segments); expected values are
                              the blocks F .. ceil(N/B)-1 (none when F*B = N); expected_slices [{layer, head, values}]
                              in the order of the layers, then local head; the _mixed keys the same in mixed mode
Every buffer byte that no cell owns is random garbage (never zeros).

Checks before writing: no buffer byte belongs to two cells and every vector has garbage; segments have one geometry
and meet the page-boundary rule (a segment's page size divides the distance from its start to the first position
read in it); every value is recomputed a second way, with Python ints over pieces assembled byte by byte from the
written buffers through the written JSON (round-tripped), for every request and both modes.

Usage: python3 golden/generator/generate_combinations.py [--out DIR]
       (default golden/src/main/resources/vectors-combinations)
"""
import argparse
import json
import os
import zlib

import numpy as np

from pieces import ALIGN, M64, U64, cdiv, mix_int, mix_np, slice_values, write_vectors


class Entry:
    """One layer entry of the geometry: layer number, first head, heads, K and V bytes per cell."""

    def __init__(self, layer, first_head, heads, kb, vb):
        self.layer, self.first_head, self.heads, self.kb, self.vb = layer, first_head, heads, kb, vb

    @property
    def cell(self):
        return self.kb + self.vb


class Builder:
    """The buffers of one vector and the groups laid over them."""

    def __init__(self, name):
        self.seed = zlib.crc32(name.encode('ascii'))
        self.layout = np.random.default_rng([self.seed, 1])   # strides, offsets, garbage
        self.data = np.random.default_rng(self.seed)          # cell bytes
        self.buffers = []                                     # (bytes, owned mask)

    def region(self, nbytes, heads, page_size, num_pages, order):
        rng = self.layout
        slack = int(rng.integers(0, 8))
        offset = int(rng.integers(0, 8))
        cell = nbytes + slack
        if order == 'token':        # [page][slot][head][cell]
            head_stride = cell
            token_stride = cell * heads + int(rng.integers(0, 4))
            page_stride = token_stride * page_size + int(rng.integers(0, 4))
        else:                       # [page][head][slot][cell]
            token_stride = cell
            head_stride = cell * page_size + int(rng.integers(0, 4))
            page_stride = head_stride * heads + int(rng.integers(0, 4))
        extent = offset + (num_pages - 1) * page_stride + (page_size - 1) * token_stride + (heads - 1) * head_stride \
            + nbytes
        size = extent + int(rng.integers(0, 8))
        buf = np.frombuffer(rng.bytes(size), dtype=np.uint8).copy()
        self.buffers.append((buf, np.zeros(size, dtype=bool)))
        return {'buffer': len(self.buffers) - 1, 'offset': offset, 'page_stride': page_stride,
                'token_stride': token_stride, 'head_stride': head_stride, 'cell_bytes': nbytes}

    def group(self, geometry, page_size, num_pages):
        """A group of `num_pages` pages of `page_size` slots; every slot of every page holds random cells.
        Returns its JSON and its cells: per entry an array [heads][num_pages][page_size][cell bytes]."""
        layers, cells = [], []
        for e in geometry:
            data = np.frombuffer(self.data.bytes(e.heads * num_pages * page_size * e.cell), dtype=np.uint8) \
                .reshape(e.heads, num_pages, page_size, e.cell)
            cells.append(data)
            regions = []
            for nbytes, lo in ((e.kb, 0), (e.vb, e.kb)):
                if nbytes == 0:
                    regions.append(None)
                    continue
                order = ('token', 'head')[int(self.layout.integers(0, 2))]
                r = self.region(nbytes, e.heads, page_size, num_pages, order)
                buf, owned = self.buffers[r['buffer']]
                for p in range(num_pages):
                    for o in range(page_size):
                        for h in range(e.heads):
                            at = r['offset'] + p * r['page_stride'] + o * r['token_stride'] + h * r['head_stride']
                            assert not owned[at:at + nbytes].any(), 'two cells share a byte'
                            owned[at:at + nbytes] = True
                            buf[at:at + nbytes] = data[h, p, o, lo:lo + nbytes]
                regions.append(r)
            layers.append({'layer': e.layer, 'first_head': e.first_head, 'num_heads': e.heads,
                           'k': regions[0], 'v': regions[1]})
        return {'page_size': page_size, 'num_pages': num_pages, 'layers': layers}, cells

    def pack(self):
        offs, pos = [], 0
        for buf, _ in self.buffers:
            pos = cdiv(pos, ALIGN) * ALIGN
            offs.append({'offset': pos, 'bytes': len(buf)})
            pos += len(buf)
        data = bytearray(np.random.default_rng([self.seed, 2]).bytes(pos))
        for (buf, _), d in zip(self.buffers, offs):
            data[d['offset']:d['offset'] + d['bytes']] = buf.tobytes()
        assert any(not owned.all() for _, owned in self.buffers), 'no garbage byte in any buffer'
        return offs, bytes(data)


def request_cells(source, groups, cells, entry, req):
    """The request's cells of one geometry entry, [heads][T][C], read from the logical page arrays (not the buffers)."""
    N, F, B = req['num_tokens'], req['first_block'], req['block_size']
    t0 = F * B
    rows = []
    for t in range(t0, N):
        if source == 'group':
            ps = groups[0]['page_size']
            g, page, slot = 0, req['block_table'][(t - t0) // ps], (t - t0) % ps
        else:
            start = 0
            for g, gj in enumerate(groups):
                end = start + gj['num_pages'] * gj['page_size']
                if t < end:
                    break
                start = end
            else:
                raise AssertionError('token past the last segment')
            page, slot = (t - start) // gj['page_size'], (t - start) % gj['page_size']
        rows.append(cells[g][entry][:, page, slot, :])
    e = cells[0][entry]
    if not rows:
        return np.zeros((e.shape[0], 0, e.shape[3]), dtype=np.uint8)
    return np.stack(rows, axis=1)


def expectations(source, geometry, groups, cells, req):
    N, F, B = req['num_tokens'], req['first_block'], req['block_size']
    nb = cdiv(N, B) - F
    for mixed, key, skey in ((False, 'expected', 'expected_slices'), (True, 'expected_mixed', 'expected_slices_mixed')):
        total, slices = [0] * nb, []
        for i, e in enumerate(geometry):
            rc = request_cells(source, groups, cells, i, req)
            for h in range(e.heads):
                head = e.first_head + h
                s = slice_values(rc[h], F * B, N, B, F, mixed)
                slices.append({'layer': e.layer, 'head': head, 'values': [str(v) for v in s]})
                m = 2 * (e.layer * 65536 + head) + 1
                total = [(a + m * v) & M64 for a, v in zip(total, s)]
        req[key] = [str(v) for v in total]
        req[skey] = slices


def recheck(js, data):
    """The second way: Python ints, each piece assembled byte by byte from the written buffers through the written
    description; also the rules a source must meet (one geometry, page tables in range, the segments' page rule)."""
    groups, source = js['groups'], js['source']
    starts = [0]
    for gj in groups:
        starts.append(starts[-1] + gj['num_pages'] * gj['page_size'])
    geo = [(l['layer'], l['first_head'], l['num_heads'], l['k']['cell_bytes'],
            0 if l['v'] is None else l['v']['cell_bytes']) for l in groups[0]['layers']]
    for gj in groups:
        assert [(l['layer'], l['first_head'], l['num_heads'], l['k']['cell_bytes'],
                 0 if l['v'] is None else l['v']['cell_bytes']) for l in gj['layers']] == geo, 'geometry differs'
    assert source == 'segments' or len(groups) == 1
    uneven = any((kb + vb) % 8 for _, _, _, kb, vb in geo)
    assert uneven == js['pad_cells'], 'pad_cells must say whether some cell is not whole pieces'

    def byte(region, gi, page, slot, h, q):
        at = js['buffers'][region['buffer']]['offset'] + region['offset'] + page * region['page_stride'] \
            + slot * region['token_stride'] + h * region['head_stride'] + q
        return data[at]

    for req in js['requests']:
        N, F, B, table = req['num_tokens'], req['first_block'], req['block_size'], req['block_table']
        t0 = F * B
        assert 0 <= t0 <= N
        if source == 'group':
            ps = groups[0]['page_size']
            assert len(table) == cdiv(N - t0, ps) and all(0 <= p < groups[0]['num_pages'] for p in table)
        else:
            assert table == [] and N <= starts[-1]
            for gi in range(len(groups)):
                a = max(starts[gi], t0)
                if a < min(starts[gi + 1], N):
                    assert (a - starts[gi]) % groups[gi]['page_size'] == 0, 'segment page rule'

        def where(t):
            if source == 'group':
                ps = groups[0]['page_size']
                return 0, table[(t - t0) // ps], (t - t0) % ps
            gi = max(i for i in range(len(groups)) if starts[i] <= t)
            ps = groups[gi]['page_size']
            return gi, (t - starts[gi]) // ps, (t - starts[gi]) % ps

        for mixed, key, skey in ((False, 'expected', 'expected_slices'),
                                 (True, 'expected_mixed', 'expected_slices_mixed')):
            total = [0] * (cdiv(N, B) - F)
            row = 0
            for li, (layer, first_head, heads, kb, vb) in enumerate(geo):
                P = cdiv(kb + vb, 8)
                for h in range(heads):
                    vals = []
                    for b in range(F, cdiv(N, B)):
                        s = 0
                        for t in range(b * B, min((b + 1) * B, N)):
                            gi, page, slot = where(t)
                            l = groups[gi]['layers'][li]
                            for p in range(P):
                                x = 0
                                for q in range(8 * p + 7, 8 * p - 1, -1):
                                    if q >= kb + vb:
                                        v = 0
                                    elif q < kb:
                                        v = byte(l['k'], gi, page, slot, h, q)
                                    else:
                                        v = byte(l['v'], gi, page, slot, h, q - kb)
                                    x = (x << 8) | v
                                s += (mix_int(x) if mixed else x) * (2 * (t * P + p) + 1)
                        vals.append(s & M64)
                    assert req[skey][row] == {'layer': layer, 'head': first_head + h,
                                              'values': [str(v) for v in vals]}, (js['name'], key, row)
                    m = 2 * (layer * 65536 + first_head + h) + 1
                    total = [(a + m * v) & M64 for a, v in zip(total, vals)]
                    row += 1
            assert req[key] == [str(v) for v in total], (js['name'], key)


def finish(name, description, source, builder, geometry, groups, cells, requests, pad):
    for req in requests:
        expectations(source, geometry, groups, cells, req)
        assert req['expected_mixed'] != req['expected'] or not req['expected'], name
    offs, data = builder.pack()
    js = {'name': name, 'seed': builder.seed, 'description': description, 'source': source, 'pad_cells': pad,
          'buffers': offs, 'groups': groups, 'requests': requests}
    recheck(json.loads(json.dumps(js)), data)
    return js, data


def request(N, F, B, table):
    return {'num_tokens': N, 'first_block': F, 'block_size': B, 'block_table': table}


def segmented(name, description, geometry, counts, pad):
    """A segmented cache of `counts` segments of random page sizes and page counts, with three requests: from block 0
    over every position (blocks straddle segment boundaries), from a block F > 0 in another block size (straddling
    too) ending inside the last segment, and one of blocks larger than a segment."""
    b = Builder(name)
    rng = np.random.default_rng([b.seed, 3])
    groups, cells = [], []
    for _ in range(counts):
        ps = int((1, 2, 4, 8)[int(rng.integers(0, 4))])
        n = int(rng.integers(1, 4 if ps >= 4 else 6))
        gj, c = b.group(geometry, ps, n)
        groups.append(gj)
        cells.append(c)
    starts = [0]
    for gj in groups:
        starts.append(starts[-1] + gj['num_pages'] * gj['page_size'])
    end = starts[-1]

    def straddles(B, N, t0=0):   # some computed block holds tokens of two segments
        return any(s % B and t0 < s < N for s in starts[1:-1])

    def page_rule(F, B):
        t0 = F * B
        i = max(i for i in range(counts) if starts[i] <= t0)
        return (t0 - starts[i]) % groups[i]['page_size'] == 0

    B0 = next(B for B in (5, 6, 3, 7, 10, 9) if straddles(B, end))
    reqs = [request(end, 0, B0, [])]
    N1 = end - int(rng.integers(1, 4))
    # F > 0 whose first token lies inside a segment (not at its start), with a segment boundary inside a later block
    cands = [(F, B) for B in (4, 6, 3, 8, 5, 2) if B != B0 for F in range(1, cdiv(N1, B))
             if page_rule(F, B) and F * B not in starts and straddles(B, N1, F * B)]
    F1, B1 = cands[int(rng.integers(0, len(cands)))]
    reqs.append(request(N1, F1, B1, []))
    B2 = max(gj['num_pages'] * gj['page_size'] for gj in groups) + int(rng.integers(1, 5))
    reqs.append(request(end - int(rng.integers(0, 3)), 0, B2, []))
    segs = ', '.join('%dx%d' % (gj['num_pages'], gj['page_size']) for gj in groups)
    return finish(name, '%s; %d segments (pages x page size: %s); requests F=0 B=%d, F=%d B=%d, F=0 B=%d'
                  % (description, counts, segs, B0, F1, B1, B2), 'segments', b, geometry, groups, cells, reqs, pad)


def one_group(name, description, geometry, page_size, num_pages, specs, pad, shares=()):
    """One group of `num_pages` pages, requests (N, F, B) with shuffled page tables of distinct pages each;
    `shares` = (request a, its table index i, request b, its table index j): request b's page j is request a's page i."""
    b = Builder(name)
    rng = np.random.default_rng([b.seed, 3])
    gj, cells = b.group(geometry, page_size, num_pages)
    reqs = []
    for c, (N, F, B) in enumerate(specs):
        n = cdiv(N - F * B, page_size)
        shared = {j: reqs[a]['block_table'][i] for a, i, cc, j in shares if cc == c}
        own = iter(int(p) for p in rng.permutation(num_pages) if int(p) not in shared.values())
        reqs.append(request(N, F, B, [shared[j] if j in shared else next(own) for j in range(n)]))
    for r in reqs:
        assert len(set(r['block_table'])) == len(r['block_table']), 'a page twice in one table'
    used = {p for r in reqs for p in r['block_table']}
    assert len(used) < num_pages, 'every group has an unused page'
    return finish(name, description, 'group', b, geometry, [gj], [cells], reqs, pad)


def vectors():
    E = Entry
    out = [
        # padding x segments
        segmented('segments-indexk-fp8-132-padded',
                  'layer 3: an fp8 MLA row (576 bytes, head 0) and an fp8 index-K cache of 128 + 4-byte scale = 132 '
                  'bytes (head 1), K only, padded to 136',
                  [E(3, 0, 1, 576, 0), E(3, 1, 1, 132, 0)], 3, True),
        segmented('segments-padded-k6-v6',
                  'layer 0: K 16 + V 16 (whole pieces, 2 heads); layer 1: K 6 + V 6 (heads 4, 5) padded to 16',
                  [E(0, 0, 2, 16, 16), E(1, 4, 2, 6, 6)], 4, True),
        segmented('segments-straddle-k12-v20',
                  'layer 5: K 12 + V 20 (heads 3..5): piece 1 straddles K and V, no padding needed',
                  [E(5, 3, 3, 12, 20)], 3, False),
        # mixed x byte cells
        one_group('bytecells-straddle-mixed-layers',
                  'layers 0 (K 32 + V 32, 2 heads), 1 (K 12 + V 20, 2 heads, straddling), 2 (K 4 + V 4, one piece) '
                  'and 7 (K 8 + V 8); page 4, shuffled table; requests N=29 B=8 and N=37 F=1 B=16',
                  [E(0, 0, 2, 32, 32), E(1, 0, 2, 12, 20), E(2, 0, 1, 4, 4), E(7, 0, 2, 8, 8)], 4, 14,
                  [(29, 0, 8), (37, 1, 16)], False),
        one_group('bytecells-padded-mixed-layers',
                  'layer 3: MLA row 576 (head 0) + index-K 132 (head 1, padded); layer 4: K 6 + V 6 (2 heads, padded) '
                  '+ K 8 + V 8 (heads 2, 3); layer 6: K 12 + V 20 (straddling); page 8, shuffled table; '
                  'request N=43 F=2 B=8',
                  [E(3, 0, 1, 576, 0), E(3, 1, 1, 132, 0), E(4, 0, 2, 6, 6), E(4, 2, 2, 8, 8), E(6, 0, 1, 12, 20)],
                  8, 6, [(43, 2, 8)], True),
        # several requests in one plan
        one_group('requests-5-shared-pages',
                  'layers 0, 1 of K 16 + V 16 (2 heads), page 4; five requests (N, F, B) = (30, 0, 8), (17, 0, 4), '
                  '(41, 1, 16), (23, 3, 6), (9, 0, 1); requests 1 and 3 reuse pages of requests 0 and 2',
                  [E(0, 0, 2, 16, 16), E(1, 0, 2, 16, 16)], 4, 24,
                  [(30, 0, 8), (17, 0, 4), (41, 1, 16), (23, 3, 6), (9, 0, 1)], False,
                  shares=[(0, 0, 1, 0), (0, 1, 1, 1), (2, 2, 3, 0)]),
        one_group('requests-4-padded',
                  'layer 2: K 6 + V 6 (2 heads, padded) and layer 9: K 24 + V 24; page 2; four requests (N, F, B) = '
                  '(13, 0, 4), (19, 2, 3), (8, 1, 8) (no blocks: F*B = N), (11, 1, 5); request 3 reuses pages of '
                  'request 0',
                  [E(2, 0, 2, 6, 6), E(9, 0, 1, 24, 24)], 2, 24,
                  [(13, 0, 4), (19, 2, 3), (8, 1, 8), (11, 1, 5)], True,
                  shares=[(0, 3, 3, 0), (0, 4, 3, 2)]),
    ]
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(os.path.dirname(here), 'src', 'main', 'resources', 'vectors-combinations')
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=default_out, help='output folder (default: %(default)s)')
    args = ap.parse_args()
    np.seterr(over='ignore')
    xs = [0, 1, 1 << 32, M64, 0x0123456789ABCDEF]
    assert [int(y) for y in mix_np(np.array(xs, dtype=U64))] == [mix_int(x) for x in xs]
    vs = vectors()
    write_vectors(args.out, vs)
    print('%d combination vectors -> %s' % (len(vs), args.out))


if __name__ == '__main__':
    main()
