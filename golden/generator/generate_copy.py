#!/usr/bin/env python3
"""Golden vectors for the verifying copy (KvChecksum.copyAndChecksum, docs/architecture.md "The verifying copy").

An implementation of its own in NumPy, sharing no code with the Java library (the piece arithmetic and MIX are
pieces.py's, shared with the other padded-piece generators):
  * every buffer's initial bytes come from a rule both sides compute: 8-byte word i of buffer k (little-endian) is
    splitmix64(seed*2^32 + k*2^26 + i), i.e. z = x + 0x9E3779B97F4A7C15, z = (z ^ z>>30) * 0xBF58476D1CE4E5B9,
    z = (z ^ z>>27) * 0x94D049BB133111EB, z ^ z>>31, all mod 2^64 (seed: the CRC-32 of the name); so no buffer is
    committed, only JSON;
  * the copy: request position t (S <= t < N, S = the destination's first_block * block_size) lies in the source at
    page source.block_table[(t-S)//Ps], slot (t-S)%Ps, and goes to the destination at page
    destination.block_table[(t-S)//Pd], slot (t-S)%Pd; for every (layer, global head) present in both, the cell's
    K bytes and V bytes are copied; nothing else is written; every source cell is read before any destination cell
    is written (what matters only in place, where the destination's regions lie in the source's buffers: vLLM's
    in-place rearrangement, which a backend runs staged page by page);
  * expected: the destination's block checksums over the copied heads (block size B of the destination, blocks
    first_block..), the definition's: cell = K bytes then V bytes, P = ceil(bytes/8) (zero-padded pieces only with
    "pad_cells"), j = t*P + p, s = sum v(x_j)(2j+1), c = sum m s, m = 2(layer*2^16 + head) + 1, mod 2^64,
    v = MIX in the mixed mode;
  * "initial_sha256" and "final_sha256": SHA-256 of every buffer before and after the copy (source buffers
    unchanged, destination buffers changed in the copied cells only); the destination's bytes themselves are not
    committed.

Checks before writing: every expected value is recomputed a second way, with Python ints over pieces assembled from
the destination buffers after the copy through the JSON's own layout description; and the destination bytes outside
the copied cells are compared with their initial bytes.

Files: golden/src/main/resources/vectors-copy/NAME.json and index.json. NAME.json:
  name, seed, description, mode ("standard" | "mixed"), pad_cells, num_tokens,
  in_place (optional, true): the destination's regions lie in the source's buffers (their "buffer" numbers name
    them), every buffer's role is "both";
  buffers: [{"bytes", "role": "source" | "destination" | "both"}] (source buffers first),
  source and destination: {"page_size", "num_pages", "block_table", "first_block", "block_size", "layers"}, where
    layers are [{"layer", "first_head", "num_heads", "k": region, "v": region or null}] and a region is
    {"buffer", "offset", "page_stride", "token_stride", "head_stride", "cell_bytes"} (as generate.py's);
  expected: the destination's block checksums (decimal strings), one per block first_block .. ceil(N/B)-1;
  copied: [[layer, head], ...] the copied slices in the destination's order;
  initial_sha256, final_sha256: hex digests per buffer.

Usage: python3 golden/generator/generate_copy.py [--out DIR]   (default golden/src/main/resources/vectors-copy)
"""
import argparse
import hashlib
import json
import os
import zlib

import numpy as np

from pieces import M64, U64, cdiv, mix_int, slice_values

GOLDEN = 0x9E3779B97F4A7C15


def fill(seed, k, nbytes):
    """The initial bytes of buffer k: splitmix64 of seed*2^32 + k*2^26 + word index, little-endian words."""
    assert nbytes % 8 == 0 and nbytes // 8 < (1 << 26)
    x = np.arange(nbytes // 8, dtype=U64) + U64((seed * (1 << 32) + k * (1 << 26)) & M64)
    z = x + U64(GOLDEN)
    z = (z ^ (z >> U64(30))) * U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> U64(27))) * U64(0x94D049BB133111EB)
    z = z ^ (z >> U64(31))
    return z.astype('<u8').view(np.uint8).copy()


def splitmix_int(x):
    z = (x + GOLDEN) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class Side:
    """One cache: its layers' regions in buffers of its own, its pages and its table."""

    def __init__(self, page_size, num_pages, table, first_block, block_size):
        self.page_size, self.num_pages, self.table = page_size, num_pages, table
        self.first_block, self.block_size = first_block, block_size
        self.layers = []

    def json(self):
        return {'page_size': self.page_size, 'num_pages': self.num_pages, 'block_table': self.table,
                'first_block': self.first_block, 'block_size': self.block_size, 'layers': self.layers}


def region(buffer, offset, page, token, head, cell):
    return {'buffer': buffer, 'offset': offset, 'page_stride': page, 'token_stride': token, 'head_stride': head,
            'cell_bytes': cell}


def add_layers(side, sizes, kind, model, first_head, heads, off):
    """Appends each model layer (layer, kb, vb) with heads first_head .. first_head+heads-1 in layout `kind`; each
    layer's buffers are appended to `sizes` (bytes; their index is the region's buffer number)."""
    ps, npg = side.page_size, side.num_pages
    for layer, kb, vb in model:
        if kind == 'flash':        # (2, pages, page_size, heads, D): K then V
            assert kb == vb
            page = ps * heads * kb
            b = len(sizes)
            sizes.append(off + 2 * npg * page)
            k = region(b, off, page, heads * kb, kb, kb)
            v = region(b, off + npg * page, page, heads * kb, kb, vb)
        elif kind == 'nhd':        # FlashInfer (pages, 2, page_size, heads, D)
            assert kb == vb
            page = 2 * ps * heads * kb
            b = len(sizes)
            sizes.append(off + npg * page)
            k = region(b, off, page, heads * kb, kb, kb)
            v = region(b, off + ps * heads * kb, page, heads * kb, kb, vb)
        elif kind == 'hnd':        # FlashInfer (pages, 2, heads, page_size, D)
            assert kb == vb
            page = 2 * heads * ps * kb
            b = len(sizes)
            sizes.append(off + npg * page)
            k = region(b, off, page, kb, ps * kb, kb)
            v = region(b, off + heads * ps * kb, page, kb, ps * kb, vb)
        elif kind == 'mla':        # (pages, page_size, row), K only
            assert vb == 0 and heads == 1
            b = len(sizes)
            sizes.append(off + npg * ps * kb)
            k = region(b, off, ps * kb, kb, 0, kb)
            v = None
        elif kind == 'sglang':     # k_buffer and v_buffer of [slots, heads, D], pages of page_size slots
            b = len(sizes)
            sizes.append(off + npg * ps * heads * kb)
            sizes.append(off + npg * ps * heads * vb)
            k = region(b, off, ps * heads * kb, heads * kb, kb, kb)
            v = region(b + 1, off, ps * heads * vb, heads * vb, vb, vb)
        elif kind.startswith('packed'):  # token-major, K and V side by side in one cell, `pad` bytes after each cell
            pad = int(kind[6:] or 0)
            cell = kb + vb + pad
            b = len(sizes)
            sizes.append(off + npg * ps * heads * cell + 8)
            k = region(b, off, ps * heads * cell, heads * cell, cell, kb)
            v = None if vb == 0 else region(b, off + kb, ps * heads * cell, heads * cell, cell, vb)
        else:
            raise ValueError(kind)
        side.layers.append({'layer': layer, 'first_head': first_head, 'num_heads': heads, 'k': k, 'v': v})


def cell_offsets(side, r, h, S, N):
    """Byte offsets of local head h's cells of positions S..N-1 in region r."""
    i = np.arange(N - S)
    pages = np.array(side.table, dtype=np.int64)[i // side.page_size]
    slots = i % side.page_size
    return r['offset'] + pages * r['page_stride'] + slots * r['token_stride'] + h * r['head_stride']


def read_cells(buf, side, layer_json, h, S, N):
    """[T][kb + vb] cells of one head, K bytes then V bytes."""
    parts = []
    for r in (layer_json['k'], layer_json['v']):
        if r is None:
            continue
        o = cell_offsets(side, r, h, S, N)
        parts.append(buf[r['buffer']][o[:, None] + np.arange(r['cell_bytes'])[None, :]])
    return np.concatenate(parts, axis=1)


def write_cells(buf, side, layer_json, h, S, N, cells):
    at = 0
    for r in (layer_json['k'], layer_json['v']):
        if r is None:
            continue
        o = cell_offsets(side, r, h, S, N)
        buf[r['buffer']][o[:, None] + np.arange(r['cell_bytes'])[None, :]] = cells[:, at:at + r['cell_bytes']]
        at += r['cell_bytes']


def build(name, description, src, dst, N, mixed=False, pad=False, in_place=False):
    seed = zlib.crc32(name.encode('ascii'))
    B, F = dst.block_size, dst.first_block
    S = F * B
    assert src.first_block * src.block_size == S, name
    assert len(src.table) == cdiv(N - S, src.page_size) and len(dst.table) == cdiv(N - S, dst.page_size), name
    assert len(set(dst.table)) == len(dst.table) and max(dst.table) < dst.num_pages and max(src.table) < src.num_pages
    sizes = src.sizes + dst.sizes
    nsrc = len(src.sizes)
    if in_place:  # the destination's regions name the source's buffers
        assert not dst.sizes, name
        nsrc = 0
    for l in dst.layers:  # destination regions name buffers after the source's
        for key in ('k', 'v'):
            if l[key] is not None:
                l[key]['buffer'] += nsrc
    sizes = [cdiv(s, 8) * 8 + 8 for s in sizes]
    bufs = [fill(seed, k, n) for k, n in enumerate(sizes)]
    for k, b in enumerate(bufs):  # the fill rule once more, in Python ints, at both ends of every buffer
        for i in (0, len(b) // 8 - 1):
            x = (seed * (1 << 32) + k * (1 << 26) + i) & M64
            assert int.from_bytes(bytes(b[8 * i:8 * i + 8]), 'little') == splitmix_int(x), (name, k, i)
    initial = [hashlib.sha256(b.tobytes()).hexdigest() for b in bufs]
    before = [b.copy() for b in bufs]
    src_heads = {}
    for l in src.layers:
        for h in range(l['num_heads']):
            src_heads[(l['layer'], l['first_head'] + h)] = (l, h)
    nb = cdiv(N, B) - F
    total = [0] * nb
    copied = []
    written = [np.zeros(len(b), dtype=bool) for b in bufs]
    pending = []  # every source cell is read before any destination cell is written
    for l in dst.layers:
        for h in range(l['num_heads']):
            head = l['first_head'] + h
            if (l['layer'], head) not in src_heads:
                continue
            sl, sh = src_heads[(l['layer'], head)]
            assert (sl['k']['cell_bytes'], sl['v'] and sl['v']['cell_bytes']) == \
                   (l['k']['cell_bytes'], l['v'] and l['v']['cell_bytes']), name
            cells = read_cells(bufs, src, sl, sh, S, N)
            if not pad:
                assert cells.shape[1] % 8 == 0, name
            pending.append((l, h, cells))
            for r in (l['k'], l['v']):
                if r is not None:
                    o = cell_offsets(dst, r, h, S, N)
                    written[r['buffer']][(o[:, None] + np.arange(r['cell_bytes'])[None, :]).ravel()] = True
            s = slice_values(cells, S, N, B, F, mixed)
            m = 2 * (l['layer'] * 65536 + head) + 1
            total = [(a + m * v) & M64 for a, v in zip(total, s)]
            copied.append([l['layer'], head])
    assert copied, name
    for l, h, cells in pending:
        write_cells(bufs, dst, l, h, S, N, cells)
    for k in range(len(bufs)):
        assert in_place or k >= nsrc or np.array_equal(bufs[k], before[k]), (name, 'source changed')
        assert np.array_equal(bufs[k][~written[k]], before[k][~written[k]]), (name, 'bytes outside the cells')
    js = {'name': name, 'seed': seed, 'description': description, 'mode': 'mixed' if mixed else 'standard',
          'pad_cells': pad, 'num_tokens': N,
          'buffers': [{'bytes': n, 'role': 'both' if in_place else 'source' if k < nsrc else 'destination'}
                      for k, n in enumerate(sizes)],
          'source': src.json(), 'destination': dst.json(), 'expected': [str(v) for v in total], 'copied': copied,
          'initial_sha256': initial, 'final_sha256': [hashlib.sha256(b.tobytes()).hexdigest() for b in bufs]}
    if in_place:
        js['in_place'] = True
        assert any(not np.array_equal(b, a) for b, a in zip(bufs, before)), (name, 'nothing changed')
    recheck(js, bufs)
    return js


def recheck(js, bufs):
    """The second way: Python ints over pieces assembled from the destination buffers after the copy, found through
    the JSON's own description of the destination."""
    d = js['destination']
    N = js['num_tokens']
    B, F, ps = d['block_size'], d['first_block'], d['page_size']
    S = F * B
    mixed = js['mode'] == 'mixed'
    copied = {tuple(x) for x in js['copied']}
    total = [0] * (cdiv(N, B) - F)

    def cell_bytes(r, t, h):
        i = t - S
        at = r['offset'] + d['block_table'][i // ps] * r['page_stride'] + (i % ps) * r['token_stride'] \
            + h * r['head_stride']
        return bytes(bufs[r['buffer']][at:at + r['cell_bytes']])

    for l in d['layers']:
        for h in range(l['num_heads']):
            head = l['first_head'] + h
            if (l['layer'], head) not in copied:
                continue
            kb = l['k']['cell_bytes']
            vb = 0 if l['v'] is None else l['v']['cell_bytes']
            P = cdiv(kb + vb, 8)
            m = 2 * (l['layer'] * 65536 + head) + 1
            for b in range(F, cdiv(N, B)):
                s = 0
                for t in range(b * B, min((b + 1) * B, N)):
                    cell = cell_bytes(l['k'], t, h) + (b'' if l['v'] is None else cell_bytes(l['v'], t, h))
                    cell += bytes(8 * P - len(cell))
                    for p in range(P):
                        x = int.from_bytes(cell[8 * p:8 * p + 8], 'little')
                        s += (mix_int(x) if mixed else x) * (2 * (t * P + p) + 1)
                total[b - F] = (total[b - F] + m * s) & M64
    assert js['expected'] == [str(v) for v in total], js['name']


def perm(rng, n, needed):
    return [int(p) for p in rng.permutation(n)[:needed]]


def side(name, salt, kind, model, heads, first_head, page_size, N, S, block_size, off=64, spare=3):
    """A side with a permuted table (seeded by the name and salt) and its buffers' sizes in .sizes."""
    rng = np.random.default_rng([zlib.crc32(name.encode('ascii')), salt])
    needed = cdiv(N - S, page_size)
    s = Side(page_size, needed + spare, perm(rng, needed + spare, needed), S // block_size, block_size)
    s.sizes = []
    add_layers(s, s.sizes, kind, model, first_head, heads, off)
    return s


def vectors():
    out = []

    def add(name, description, src_kind, dst_kind, model, N, B, F, Ps, Pd, src_heads=(0, 8), dst_heads=(0, 8),
            mixed=False, pad=False, src_off=64, dst_off=40):
        S = F * B
        src = side(name, 1, src_kind, model, src_heads[1] - src_heads[0], src_heads[0], Ps, N, S, B, src_off)
        dst = side(name, 2, dst_kind, model, dst_heads[1] - dst_heads[0], dst_heads[0], Pd, N, S, B, dst_off)
        out.append(build(name, description, src, dst, N, mixed, pad))

    bf16_128 = [(0, 256, 256), (1, 256, 256)]
    add('perm-flash', 'vLLM flash to vLLM flash, pages permuted: 2 layers x 4 heads, bf16 head dim 128, page 16, '
        'B=16, N=100', 'flash', 'flash', bf16_128, 100, 16, 0, 16, 16, (0, 4), (0, 4))
    add('nhd-to-hnd', 'FlashInfer NHD to HND: 2 layers x 2 heads, head dim 128 bf16, page 16, B=16, N=77',
        'nhd', 'hnd', bf16_128, 77, 16, 0, 16, 16, (0, 2), (0, 2))
    add('hnd-to-nhd', 'FlashInfer HND to NHD from block 1 (a prefix hit): 2 layers x 2 heads, 128-byte cells, '
        'page 16, B=32, N=90, F=1', 'hnd', 'nhd', [(0, 128, 128), (1, 128, 128)], 90, 32, 1, 16, 16, (0, 2), (0, 2))
    add('flash-to-flashinfer', 'vLLM flash to FlashInfer NHD: layers 0, 5, 12 x 2 heads, 128-byte cells, page 16, '
        'B=16, N=45', 'flash', 'nhd', [(0, 128, 128), (5, 128, 128), (12, 128, 128)], 45, 16, 0, 16, 16,
        (0, 2), (0, 2))
    add('pages-4-to-16-b8', 'small source pages into large destination pages: NHD, page 4 into page 16, B=8, N=61',
        'nhd', 'nhd', [(3, 64, 64)], 61, 8, 0, 4, 16, (0, 2), (0, 2))
    add('pages-16-to-4-b8', 'large source pages into small destination pages from block 2: HND page 16 into NHD '
        'page 4, B=8, N=70, F=2', 'hnd', 'nhd', [(3, 64, 64)], 70, 8, 2, 16, 4, (0, 2), (0, 2))
    add('tp-0-3-into-0-7', 'TP re-shard: a producer rank holding heads 0-3 of 8 into a consumer holding 0-7 (flash, '
        'bf16 head dim 128, page 16, B=16, N=40)', 'flash', 'flash', bf16_128, 40, 16, 0, 16, 16, (0, 4), (0, 8))
    add('tp-8-into-4-7', 'TP re-shard: a producer with heads 0-7 into a consumer rank holding 4-7 (flash to HND, '
        '128-byte cells, page 16, B=16, N=40)', 'flash', 'hnd', [(0, 128, 128), (2, 128, 128)], 40, 16, 0, 16, 16,
        (0, 8), (4, 8))
    # Llama-3-8B TP1's geometry: 8 heads x 256-byte cells (bf16 head dim 128), 2 KiB token rows of K and of V
    add('perm-flash-8x256', 'production geometry (Llama-3-8B TP1): vLLM flash to vLLM flash, pages permuted: 2 layers '
        'x 8 heads, bf16 head dim 128, page 16, B=16, N=37', 'flash', 'flash', bf16_128, 37, 16, 0, 16, 16)
    add('flash-to-hnd-8x256', 'production geometry (Llama-3-8B TP1): vLLM flash to FlashInfer HND from block 1: '
        '2 layers x 8 heads, bf16 head dim 128, page 16, B=16, N=45, F=1', 'flash', 'hnd', bf16_128, 45, 16, 1, 16,
        16)
    add('mla-576', 'MLA latent rows of 576 bytes (3 layers, K only), staging pages of 16 into pages of 64, B=16, N=90',
        'mla', 'mla', [(0, 576, 0), (1, 576, 0), (2, 576, 0)], 90, 16, 0, 16, 64, (0, 1), (0, 1))
    add('sglang-to-flash', "SGLang's split K and V pools with page size 1 into vLLM flash pages of 16, 2 heads, "
        '64-byte cells, B=16, N=30', 'sglang', 'flash', [(0, 64, 64), (1, 64, 64)], 30, 16, 0, 1, 16, (0, 2), (0, 2))
    add('misaligned-nhd', 'NHD to NHD at byte offsets 3 and 5 (no alignment), page 8 into 8, B=16, N=33',
        'nhd', 'nhd', [(0, 64, 64)], 33, 16, 0, 8, 8, (0, 2), (0, 2), src_off=3, dst_off=5)
    add('straddle-k12-v12', 'byte cells: K 12 + V 12 bytes (piece 1 straddles K and V), token-major with 3 and 5 '
        'bytes of padding, page 4 into 8, B=8, N=27', 'packed3', 'packed5', [(1, 12, 12)], 27, 8, 0, 4, 8,
        (0, 2), (0, 2))
    add('padded-132', 'byte cells: an fp8 index-K row of 128 + 4 bytes (132, padded to 136), page 16 into 64, B=16, '
        'N=50', 'packed', 'packed1', [(4, 132, 0)], 50, 16, 0, 16, 64, (0, 1), (0, 1), pad=True)
    add('mixed-nhd-to-hnd', 'the mixed mode: FlashInfer NHD to HND, 2 layers x 2 heads, 128-byte cells, page 8 into '
        '16, B=16, N=41', 'nhd', 'hnd', [(0, 128, 128), (1, 128, 128)], 41, 16, 0, 8, 16, (0, 2), (0, 2), mixed=True)
    add('mixed-padded-k6-v6', 'the mixed mode over byte cells: K 6 + V 6 bytes padded to 16, page 4 into 8, B=8, N=19',
        'packed', 'packed2', [(2, 6, 6)], 19, 8, 0, 4, 8, (0, 2), (0, 2), mixed=True, pad=True)
    in_place_vectors(out)
    return out


def in_place_side(page_size, num_pages, table, block_size, layers):
    s = Side(page_size, num_pages, table, 0, block_size)
    s.sizes = []
    s.layers = layers
    return s


def in_place_vectors(out):
    """Copies whose destination lies in the source's own buffers, each destination page reading only bytes of its
    own page: what vLLM does after a transfer (kv_postprocess_layout_on_receive,
    kv_postprocess_blksize_and_layout_on_receive: index_select of the received blocks, a permute, index_copy_ into
    the same block ids)."""
    def table(name, pages, needed):
        rng = np.random.default_rng([zlib.crc32(name.encode('ascii')), 3])
        return perm(rng, pages, needed)

    # NHD -> HND on the same block ids: FlashInfer (pages, 2, 16, heads, D) read as (pages, 2, heads, 16, D)
    name, N, ps, heads, kb, npg = 'inplace-nhd-to-hnd', 77, 16, 2, 128, 8
    off = 64
    t = table(name, npg, cdiv(N, ps))
    src = Side(ps, npg, t, 0, 16)
    src.sizes = []
    add_layers(src, src.sizes, 'nhd', [(0, kb, kb), (1, kb, kb)], 0, heads, off)
    dst = in_place_side(ps, npg, t, 16, [])
    page = 2 * ps * heads * kb
    for l in src.layers:
        b = l['k']['buffer']
        dst.layers.append({'layer': l['layer'], 'first_head': 0, 'num_heads': heads,
                           'k': region(b, off, page, kb, ps * kb, kb),
                           'v': region(b, off + heads * ps * kb, page, kb, ps * kb, kb)})
    out.append(build(name, "in place: vLLM's layout postprocess, FlashInfer NHD to HND on the same block ids of the "
                     'same buffer: 2 layers x 2 heads, 128-byte cells, page 16, B=16, N=77', src, dst, N,
                     in_place=True))

    # remote blocks of 4 (HND) into local pages of 16 (flash NHD) of the same memory: the blksize postprocess
    name, N, heads, kb, npg = 'inplace-blocks-4-into-16', 61, 2, 64, 6
    local = table(name, npg, cdiv(N, 16))
    remote = [4 * p + k for p in local for k in range(4)][:cdiv(N, 4)]
    src = in_place_side(4, 4 * npg, remote, 16, [])
    dst = in_place_side(16, npg, local, 16, [])
    sizes = []
    for layer in (0, 1):
        b = len(sizes)
        page = 16 * heads * kb
        sizes.append(off + 2 * npg * page)
        src.layers.append({'layer': layer, 'first_head': 0, 'num_heads': heads,
                           'k': region(b, off, 4 * heads * kb, kb, 4 * kb, kb),
                           'v': region(b, off + npg * page, 4 * heads * kb, kb, 4 * kb, kb)})
        dst.layers.append({'layer': layer, 'first_head': 0, 'num_heads': heads,
                           'k': region(b, off, page, heads * kb, kb, kb),
                           'v': region(b, off + npg * page, page, heads * kb, kb, kb)})
    src.sizes = sizes
    out.append(build(name, "in place: vLLM's block-size postprocess, remote HND blocks of 4 tokens received into "
                     'local flash (NHD) pages of 16 of the same memory and rearranged there: 2 layers x 2 heads, '
                     '64-byte cells, B=16, N=61', src, dst, N, in_place=True))

    # MLA rows: remote blocks of 4 into local pages of 16, the four remote blocks of a page in a shuffled order
    name, N, kb, npg = 'inplace-mla-blocks', 45, 576, 5
    local = table(name, npg, cdiv(N, 16))
    remote = [4 * p + k for p in local for k in (2, 0, 3, 1)][:cdiv(N, 4)]
    src = in_place_side(4, 4 * npg, remote, 16, [])
    dst = in_place_side(16, npg, local, 16, [])
    sizes = []
    for layer in (0, 1, 2):
        b = len(sizes)
        sizes.append(off + npg * 16 * kb)
        src.layers.append({'layer': layer, 'first_head': 0, 'num_heads': 1,
                           'k': region(b, off, 4 * kb, kb, 0, kb), 'v': None})
        dst.layers.append({'layer': layer, 'first_head': 0, 'num_heads': 1,
                           'k': region(b, off, 16 * kb, kb, 0, kb), 'v': None})
    src.sizes = sizes
    out.append(build(name, 'in place, MLA (K only): rows of 576 bytes, remote blocks of 4 received out of order into '
                     'local pages of 16 and put in order in the same memory: 3 layers, B=16, N=45', src, dst, N,
                     in_place=True))

    # byte cells in place: K 12 + V 12 bytes token-major (3 bytes of padding), the two halves of each page swapped
    name, N, heads, npg = 'inplace-straddle-halves', 27, 2, 5
    cell = 12 + 12 + 3
    local = table(name, npg, cdiv(N, 8))
    remote = [2 * p + k for p in local for k in (1, 0)][:cdiv(N, 4)]
    src = in_place_side(4, 2 * npg, remote, 8, [])
    dst = in_place_side(8, npg, local, 8, [])
    b = 0
    src.sizes = [off + npg * 8 * heads * cell + 8]
    src.layers.append({'layer': 1, 'first_head': 0, 'num_heads': heads,
                       'k': region(b, off, 4 * heads * cell, heads * cell, cell, 12),
                       'v': region(b, off + 12, 4 * heads * cell, heads * cell, cell, 12)})
    dst.layers.append({'layer': 1, 'first_head': 0, 'num_heads': heads,
                       'k': region(b, off, 8 * heads * cell, heads * cell, cell, 12),
                       'v': region(b, off + 12, 8 * heads * cell, heads * cell, cell, 12)})
    out.append(build(name, 'in place over byte cells: K 12 + V 12 bytes token-major, source pages of 4 that are the '
                     'halves of destination pages of 8, each page\'s halves swapped, B=8, N=27', src, dst, N,
                     in_place=True))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(os.path.dirname(here), 'src', 'main', 'resources', 'vectors-copy')
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=default_out)
    args = ap.parse_args()
    np.seterr(over='ignore')
    vs = vectors()
    os.makedirs(args.out, exist_ok=True)
    for f in sorted(os.listdir(args.out)):
        if f.endswith('.json'):
            os.remove(os.path.join(args.out, f))
    for js in vs:
        with open(os.path.join(args.out, js['name'] + '.json'), 'w', encoding='ascii', newline='\n') as f:
            f.write(json.dumps(js, sort_keys=True, indent=1) + '\n')
    with open(os.path.join(args.out, 'index.json'), 'w', encoding='ascii', newline='\n') as f:
        f.write(json.dumps({'vectors': sorted(js['name'] for js in vs)}, sort_keys=True, indent=1) + '\n')
    print('wrote %d copy vectors to %s' % (len(vs), args.out))


if __name__ == '__main__':
    main()
