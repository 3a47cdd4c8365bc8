#!/usr/bin/env python3
"""Independent NumPy golden-vector generator for the kvchecksum library.

It shares nothing with the Java code.  For every vector it
  1. draws a LOGICAL KV array  layer -> [local head][token][cell bytes]  (K bytes then V bytes),
  2. computes the expected slice sums and block checksums from that logical array,
  3. scatters the cells into a physical layout (buffers full of random garbage elsewhere),
  4. reads the cells back from the physical layout through the generic layout description
     and checks they are the logical ones (so no two cells overlap and the description is right),
  5. for small vectors recomputes the checksums a second, independent way: a plain Python-int
     loop over every 8-byte piece read from the physical buffers through the description,
  6. checks the relations (sum / rechunk / differs) between vectors,
and only then writes NAME.json + NAME.bin for every vector and index.json.

Definition (SPEC.md section 2):
  piece x_j, j = t*P + p  (t = token position in the request, p = piece in the cell, P = cell bytes / 8)
  slice sum  s = sum_j x_j * (2j + 1)              mod 2^64
  block      c = sum_(layer, head) m * s           mod 2^64,  m = 2*(layer*2^16 + head) + 1
  block b of size B covers tokens [b*B, min((b+1)*B, num_tokens)).

Usage: python3 golden/generator/generate.py [--out DIR]
Plain python3 + numpy (works with numpy 1.2x and 2.x).  Deterministic: rerunning gives identical files.
"""
import argparse
import json
import os
import time
import zlib

import numpy as np

M64 = (1 << 64) - 1
HEADS_PER_LAYER = 1 << 16            # H in the definition
BIN_ALIGN = 64                      # buffers start at multiples of this inside NAME.bin
PYINT_CHECK_MAX_PIECES = 60000      # vectors up to this many pieces are re-checked with Python ints
BUDGET = 16000                      # rough size goal (bytes) of one vector's physical cache

U8 = np.uint8
U64 = np.uint64
LE_U64 = np.dtype('<u8')

DTYPES = {'fp8': 1, 'bf16': 2, 'fp16': 2, 'fp32': 4}


def cdiv(a, b):
    return -(-a // b)


def name_seed(name):
    """The per-vector seed: CRC-32 of the name (stable, independent of generation order)."""
    return zlib.crc32(name.encode('ascii'))


# ---------------------------------------------------------------------------------------------
# Logical data
# ---------------------------------------------------------------------------------------------

class LayerData:
    """One entry of the 'layers' list: a layer number, its first GLOBAL head, and its cells.

    data: uint8 array [num_heads][T][kb + vb] for the request tokens t0 .. t0+T-1.
    """

    def __init__(self, layer, first_head, kb, vb, data):
        assert kb > 0 and kb % 8 == 0 and vb % 8 == 0
        assert data.dtype == U8 and data.ndim == 3 and data.shape[2] == kb + vb
        self.layer = int(layer)
        self.first_head = int(first_head)
        self.kb = int(kb)
        self.vb = int(vb)
        self.data = data

    @property
    def nh(self):
        return self.data.shape[0]

    def copy(self):
        return LayerData(self.layer, self.first_head, self.kb, self.vb, self.data.copy())


def draw_float_cells(rng, shape, dtype, scale_exp):
    nbytes = int(np.prod(shape))
    elem = DTYPES[dtype]
    n = nbytes // elem
    u = rng.integers(0, 1 << 20, size=(n, 12), dtype=np.int64).sum(axis=1) - 6 * (1 << 20)
    v = u.astype(np.float64) * (2.0 ** (scale_exp - 20))
    if dtype == 'fp32':
        raw = v.astype('<f4').view(U8)
    elif dtype == 'fp16':
        raw = v.astype('<f2').view(U8)
    elif dtype == 'bf16':
        bits = (v.astype('<f4').view('<u4') >> np.uint32(16)).astype('<u2')
        raw = bits.view(U8)
    else:
        raise AssertionError(dtype)
    return np.ascontiguousarray(raw).reshape(shape)


def draw_logical(rng, specs, t0, N, kb, vb, dtype, mode):
    """specs: list of (layer, first_head, num_heads).  Returns (layers, data description)."""
    T = N - t0
    assert T >= 1
    scale_exp = int(rng.integers(-3, 4)) if mode == 'float' else 0
    out = []
    for (layer, fh, nh) in specs:
        shape = (nh, T, kb + vb)
        if mode == 'float' and dtype != 'fp8':
            data = draw_float_cells(rng, shape, dtype, scale_exp)
        else:
            data = rng.integers(0, 256, size=int(np.prod(shape)), dtype=U8).reshape(shape)
        out.append(LayerData(layer, fh, kb, vb, data))
    if mode == 'float' and dtype != 'fp8':
        what = 'approx. normal %s values (scale 2^%d)' % (dtype, scale_exp)
    else:
        what = 'random bytes'
    return out, what


# ---------------------------------------------------------------------------------------------
# The definition, vectorised (from the logical array)
# ---------------------------------------------------------------------------------------------

def slice_sums(cells, t0, N, B, F):
    """cells: uint8 [T][C], tokens t0..N-1 of one (layer, head).  Slice sums (Python ints) for
    blocks F .. cdiv(N, B)-1.  All arithmetic in uint64 arrays, which wrap mod 2^64."""
    T, C = cells.shape
    assert C % 8 == 0 and T == N - t0 and t0 == F * B
    P = C // 8
    x = np.ascontiguousarray(cells).view(LE_U64).reshape(T, P).astype(U64)
    t = np.full(T, t0, dtype=U64) + np.arange(T, dtype=U64)
    j = t[:, None] * np.full((1, 1), P, dtype=U64) + np.arange(P, dtype=U64)[None, :]
    w = j * np.full((1, 1), 2, dtype=U64) + np.ones((1, 1), dtype=U64)
    per_token = (x * w).sum(axis=1, dtype=U64)
    out = []
    for b in range(F, cdiv(N, B)):
        lo = b * B - t0
        hi = min((b + 1) * B, N) - t0
        out.append(int(per_token[lo:hi].sum(dtype=U64)))
    return out


def head_weight(layer, head):
    return (2 * (layer * HEADS_PER_LAYER + head) + 1) & M64


def expected_from_logical(layers, N, B, F):
    t0 = F * B
    nblk = cdiv(N, B) - F
    slices = []
    totals = [0] * nblk
    for ld in layers:
        for h in range(ld.nh):
            g = ld.first_head + h
            s = slice_sums(ld.data[h], t0, N, B, F)
            slices.append((ld.layer, g, s))
            m = head_weight(ld.layer, g)
            for i in range(nblk):
                totals[i] = (totals[i] + m * s[i]) & M64
    return totals, slices


# ---------------------------------------------------------------------------------------------
# Physical layouts
# ---------------------------------------------------------------------------------------------

def region(buffer, offset, page_stride, token_stride, head_stride, cell_bytes):
    r = dict(buffer=int(buffer), offset=int(offset), page_stride=int(page_stride),
             token_stride=int(token_stride), head_stride=int(head_stride), cell_bytes=int(cell_bytes))
    for k, v in r.items():
        assert v >= 0, (k, v)
    return r


class Group:
    def __init__(self, B, N, F):
        assert B >= 1 and N > F * B >= 0
        self.B, self.N, self.F = B, N, F
        self.t0 = F * B
        self.T = N - F * B


def make_table(rng, needed, num_pages, mode, avoid_zero=False):
    pool = list(range(1 if avoid_zero else 0, num_pages))
    assert len(pool) >= needed
    if mode == 'contig':
        return pool[:needed]
    if mode == 'reverse':
        return pool[:needed][::-1]
    perm = rng.permutation(len(pool))
    return [pool[int(i)] for i in perm[:needed]]


def uniform(layers):
    l0 = layers[0]
    for ld in layers:
        assert (ld.nh, ld.kb, ld.vb) == (l0.nh, l0.kb, l0.vb)
    return l0.nh, l0.kb, l0.vb


class Layout:
    """Result of a layout builder."""

    def __init__(self, buffer_sizes, regions, family, page_size, table, what):
        self.buffer_sizes = [int(s) for s in buffer_sizes]
        self.regions = regions            # per layer: (k region, v region or None)
        self.family = family
        self.page_size = int(page_size)
        self.table = [int(p) for p in table]
        self.what = what


def fam_paged(kind, elem, page_size, extra_pages=1, table_mode='perm'):
    """vllm-flash (2,np,ps,H,D) / flashinfer-nhd (np,2,ps,H,D) / flashinfer-hnd (np,2,H,ps,D),
    one buffer per layer."""
    def build(rng, layers, g):
        H, kb, vb = uniform(layers)
        assert kb == vb and kb % elem == 0
        D = kb // elem
        E = kb
        ps = page_size
        needed = cdiv(g.T, ps)
        npg = needed + extra_pages
        table = make_table(rng, needed, npg, table_mode)
        if kind == 'vllm-flash':
            pst, tst, hst, voff = ps * H * E, H * E, E, npg * ps * H * E
            size = 2 * voff
        elif kind == 'flashinfer-nhd':
            pst, tst, hst, voff = 2 * ps * H * E, H * E, E, ps * H * E
            size = npg * pst
        elif kind == 'flashinfer-hnd':
            pst, tst, hst, voff = 2 * H * ps * E, E, ps * E, H * ps * E
            size = npg * pst
        else:
            raise AssertionError(kind)
        regions = [(region(i, 0, pst, tst, hst, kb), region(i, voff, pst, tst, hst, vb))
                   for i in range(len(layers))]
        fam = {'name': kind, 'num_pages': npg, 'page_size': ps, 'heads': H, 'head_dim': D,
               'elem_bytes': elem}
        return Layout([size] * len(layers), regions, fam, ps, table,
                      '%s, %d pages of %d tokens, %s table' % (kind, npg, ps, table_mode))
    return build


def fam_vllm_mla(elem, page_size, extra_pages=1, table_mode='perm'):
    """vllm-mla (num_pages, page_size, head_dim), K only, one head; head_stride 0."""
    def build(rng, layers, g):
        H, kb, vb = uniform(layers)
        assert H == 1 and vb == 0 and kb % elem == 0
        ps = page_size
        needed = cdiv(g.T, ps)
        npg = needed + extra_pages
        table = make_table(rng, needed, npg, table_mode)
        regions = [(region(i, 0, ps * kb, kb, 0, kb), None) for i in range(len(layers))]
        fam = {'name': 'vllm-mla', 'num_pages': npg, 'page_size': ps, 'head_dim': kb // elem,
               'elem_bytes': elem}
        return Layout([npg * ps * kb] * len(layers), regions, fam, ps, table,
                      'vllm-mla, %d pages of %d tokens, %s table' % (npg, ps, table_mode))
    return build


def fam_sglang(elem, page_size, extra_pages=1, table_mode='perm'):
    """sglang k_buffer/v_buffer (slots, H, D) per layer (buffers 2i, 2i+1), or MLA kv_buffer
    (slots, 1, D) (buffer i).  Page 0 (slot 0 holds SGLang's padding token) is never used."""
    def build(rng, layers, g):
        H, kb, vb = uniform(layers)
        mla = vb == 0
        assert kb % elem == 0 and (mla or kb == vb)
        if mla:
            assert H == 1
        ps = page_size
        needed = cdiv(g.T, ps)
        npg = needed + extra_pages + 1
        table = make_table(rng, needed, npg, table_mode, avoid_zero=True)
        pst, tst, hst = ps * H * kb, H * kb, kb
        size = npg * ps * H * kb
        if mla:
            regions = [(region(i, 0, pst, tst, hst, kb), None) for i in range(len(layers))]
            sizes = [size] * len(layers)
        else:
            regions = [(region(2 * i, 0, pst, tst, hst, kb), region(2 * i + 1, 0, pst, tst, hst, vb))
                       for i in range(len(layers))]
            sizes = [size] * (2 * len(layers))
        fam = {'name': 'sglang', 'num_slots': npg * ps, 'page_size': ps, 'heads': H,
               'head_dim': kb // elem, 'elem_bytes': elem, 'mla': bool(mla)}
        return Layout(sizes, regions, fam, ps, table,
                      'sglang%s, %d slots in pages of %d, %s table' % (' mla' if mla else '', npg * ps, ps,
                                                                     table_mode))
    return build


def fam_flat(elem, extra_pos=5):
    """GPULlama3-style: one K and one V buffer [layer][pos][H*D], pos = absolute position.
    One page (table [0]), page_size = max_pos - F*B, region offsets advanced by F*B rows."""
    def build(rng, layers, g):
        H, kb, vb = uniform(layers)
        assert kb == vb and kb % elem == 0
        L = len(layers)
        max_pos = g.N + extra_pos
        row = H * kb
        slab = max_pos * row
        regions = [(region(0, i * slab + g.t0 * row, 0, row, kb, kb),
                    region(1, i * slab + g.t0 * row, 0, row, kb, vb)) for i in range(L)]
        fam = {'name': 'flat', 'num_layers': L, 'max_pos': max_pos, 'heads': H, 'head_dim': kb // elem,
               'elem_bytes': elem}
        return Layout([L * slab, L * slab], regions, fam, max_pos - g.t0, [0],
                      'flat K and V arrays [layer][pos][heads*head_dim], max_pos %d' % max_pos)
    return build


def nested_strides(order, counts, slot, pads):
    """Row-major strides for dims `order` (outermost first) over a cell slot of `slot` bytes;
    pads[d] extra bytes are appended after each run of dim d."""
    strides = {}
    running = slot
    for d in reversed(order):
        strides[d] = running
        running = running * counts[d] + pads.get(d, 0)
    return strides, running


def gen_vllm_order(order, page_size, pad=False, extra_pages=2, table_mode='perm'):
    """vLLM cross-layer logical [L, B, H, N, C] stored in physical order `order` (e.g. 'BLHNC'),
    all layers in one buffer, C = K bytes then V bytes of the cell (K and V interleaved)."""
    assert sorted(order) == sorted('LBHNC') and order[-1] == 'C'

    def build(rng, layers, g):
        H, kb, vb = uniform(layers)
        ps = page_size
        needed = cdiv(g.T, ps)
        npg = needed + extra_pages
        table = make_table(rng, needed, npg, table_mode)
        counts = {'L': len(layers), 'B': npg, 'H': H, 'N': ps}
        pads = {}
        cpad = 0
        if pad:
            cpad = 8 * int(rng.integers(0, 3))
            pads = {d: 8 * int(rng.integers(0, 5)) for d in 'LBHN'}
        strides, total = nested_strides(order[:-1], counts, kb + vb + cpad, pads)
        base = 8 * int(rng.integers(0, 8)) if pad else 0
        size = base + total + (8 * int(rng.integers(1, 8)) if pad else 0)
        regions = []
        for i in range(len(layers)):
            off = base + i * strides['L']
            regions.append((region(0, off, strides['B'], strides['N'], strides['H'], kb),
                            region(0, off + kb, strides['B'], strides['N'], strides['H'], vb) if vb else None))
        return Layout([size], regions, None, ps, table,
                      'vLLM [L,B,H,N,C] in physical order %s%s, one buffer, %d pages of %d, %s table'
                      % (order, ' with padding' if pad else '', npg, ps, table_mode))
    return build


def gen_random(page_size, aligned=True, extra_pages=None, table_mode='perm', force_kv=None):
    """A random strided layout: random dim order among page/token/head(/kv/layer), random
    padding, K and V combined in one slot (either order), split by a kv dim, or laid out
    independently; layers in one shared buffer, in one buffer each, or one after another."""
    def build(rng, layers, g):
        ps = page_size
        needed = cdiv(g.T, ps)
        npg = needed + (int(rng.integers(1, 3)) if extra_pages is None else extra_pages)
        table = make_table(rng, needed, npg, table_mode)
        hetero = len(set((ld.nh, ld.kb, ld.vb) for ld in layers)) > 1
        has_v = any(ld.vb for ld in layers)
        q = 8 if aligned else 1

        def pad():
            return q * int(rng.integers(0, 4)) if int(rng.integers(0, 2)) else 0

        kvmode = int(rng.integers(0, 3)) if has_v else 0
        if force_kv is not None and has_v:
            kvmode = force_kv
        kfirst = bool(int(rng.integers(0, 2)))
        lmode = 0 if hetero else int(rng.integers(0, 3))   # 0 sequential in one buffer, 1 per-layer buffers, 2 L dim
        descr = []
        sizes = []
        regions = []

        def layout_one(dims, counts, slot):
            order = list(dims)
            perm = rng.permutation(len(order))
            order = [order[int(i)] for i in perm]
            pads = {d: pad() for d in order}
            st, total = nested_strides(order, counts, slot, pads)
            return order, st, total

        if lmode == 2:
            H, kb, vb = uniform(layers)
            counts = {'L': len(layers), 'P': npg, 'T': ps, 'H': H, 'S': 2}
            if kvmode == 1:
                slot = max(kb, vb) + pad()
                order, st, total = layout_one('LPTHS', counts, slot)
                base = q * int(rng.integers(0, 8))
                sizes.append(base + total + pad())
                for i in range(len(layers)):
                    o = base + i * st['L']
                    regions.append((region(0, o, st['P'], st['T'], st['H'], kb),
                                    region(0, o + st['S'], st['P'], st['T'], st['H'], vb)))
                descr.append('one buffer, order %s x slot %d' % (''.join(order), slot))
            elif kvmode == 0:
                slot = kb + vb + pad()
                order, st, total = layout_one('LPTH', counts, slot)
                base = q * int(rng.integers(0, 8))
                sizes.append(base + total + pad())
                ko, vo = (0, kb) if kfirst else (vb, 0)
                for i in range(len(layers)):
                    o = base + i * st['L']
                    regions.append((region(0, o + ko, st['P'], st['T'], st['H'], kb),
                                    region(0, o + vo, st['P'], st['T'], st['H'], vb) if vb else None))
                descr.append('one buffer, order %s x cell (%s first)' % (''.join(order), 'K' if kfirst else 'V'))
            else:
                ko_, kst, ktot = layout_one('LPTH', counts, kb + pad())
                vo_, vst, vtot = layout_one('LPTH', counts, vb + pad())
                kbase = q * int(rng.integers(0, 8))
                sizes.append(kbase + ktot + pad())
                vbase = q * int(rng.integers(0, 8))
                sizes.append(vbase + vtot + pad())
                for i in range(len(layers)):
                    regions.append((region(0, kbase + i * kst['L'], kst['P'], kst['T'], kst['H'], kb),
                                    region(1, vbase + i * vst['L'], vst['P'], vst['T'], vst['H'], vb)))
                descr.append('K buffer order %s, V buffer order %s' % (''.join(ko_), ''.join(vo_)))
            return Layout(sizes, regions, None, ps, table,
                          'random strided: %s; %d pages of %d, %s table' % ('; '.join(descr), npg, ps, table_mode))

        # layers one after another in one buffer (lmode 0), or one buffer per layer (lmode 1)
        cursor = [q * int(rng.integers(0, 8))]
        for i, ld in enumerate(layers):
            counts = {'P': npg, 'T': ps, 'H': ld.nh, 'S': 2}
            kb, vb = ld.kb, ld.vb
            if lmode == 1:
                bk = len(sizes)
                sizes.append(0)
                cursor = [q * int(rng.integers(0, 8))]
            else:
                if not sizes:
                    sizes.append(0)
                bk = 0

            def place(total):
                o = cursor[0]
                cursor[0] = o + total + pad()
                sizes[bk] = cursor[0]
                return o
            if kvmode == 1 and vb:
                slot = max(kb, vb) + pad()
                order, st, total = layout_one('PTHS', counts, slot)
                o = place(total)
                regions.append((region(bk, o, st['P'], st['T'], st['H'], kb),
                                region(bk, o + st['S'], st['P'], st['T'], st['H'], vb)))
                descr.append('L%d %s' % (ld.layer, ''.join(order)))
            elif kvmode == 2 and vb:
                ko_, kst, ktot = layout_one('PTH', counts, kb + pad())
                vo_, vst, vtot = layout_one('PTH', counts, vb + pad())
                ok = place(ktot)
                ov = place(vtot)
                regions.append((region(bk, ok, kst['P'], kst['T'], kst['H'], kb),
                                region(bk, ov, vst['P'], vst['T'], vst['H'], vb)))
                descr.append('L%d K %s V %s' % (ld.layer, ''.join(ko_), ''.join(vo_)))
            else:
                slot = kb + vb + pad()
                order, st, total = layout_one('PTH', counts, slot)
                o = place(total)
                ko, vo = (0, kb) if kfirst else (vb, 0)
                regions.append((region(bk, o + ko, st['P'], st['T'], st['H'], kb),
                                region(bk, o + vo, st['P'], st['T'], st['H'], vb) if vb else None))
                descr.append('L%d %s' % (ld.layer, ''.join(order)))
        return Layout(sizes, regions, None, ps, table,
                      'random strided, %s: %s; %d pages of %d, %s table'
                      % ('one buffer per layer' if lmode == 1 else 'layers one after another',
                         ', '.join(descr), npg, ps, table_mode))
    return build


# ---------------------------------------------------------------------------------------------
# Building a vector: scatter, read back, check, serialise
# ---------------------------------------------------------------------------------------------

def cell_addresses(reg, table, ps, nh, T):
    """Start offsets [nh][T] of the cells of one region (the generic layout rule)."""
    k = np.arange(T, dtype=np.int64)
    pages = np.asarray(table, dtype=np.int64)[k // ps]
    o = k % ps
    h = np.arange(nh, dtype=np.int64)
    return (reg['offset'] + pages * reg['page_stride'] + o * reg['token_stride'])[None, :] \
        + (h * reg['head_stride'])[:, None]


class Vector:
    def __init__(self, name, seed, description, family, group, layout, layers, buffers,
                 expected, slices):
        self.name = name
        self.seed = seed
        self.description = description
        self.family = family
        self.group = group
        self.layout = layout
        self.layers = layers
        self.buffers = buffers            # list of uint8 arrays
        self.expected = expected
        self.slices = slices

    @property
    def pieces(self):
        return sum(ld.data.size // 8 for ld in self.layers)


ALL = {}          # name -> Vector
RELATIONS = []
PRODUCTION = []   # gen_production's names: generate_mixed.py re-checks them with Python ints whatever their size
STATS = {'pyint_checked': 0}


def build_vector(name, description, layers, group, builder, layout_seed=None, seed=None):
    """layers: list of LayerData holding tokens group.t0 .. N-1.  The physical layout and the
    garbage come from default_rng([layout_seed, 1]) (layout_seed defaults to the vector's seed)."""
    assert name not in ALL, name
    if seed is None:
        seed = name_seed(name)
    if layout_seed is None:
        layout_seed = seed
    g = group
    for ld in layers:
        assert ld.data.shape[1] == g.T
    lrng = np.random.default_rng([layout_seed, 1])
    lay = builder(lrng, layers, g)
    assert len(lay.regions) == len(layers)
    assert len(lay.table) == cdiv(g.T, lay.page_size)

    # buffers full of garbage, then the cells
    bufs = [np.frombuffer(lrng.bytes(s), dtype=U8).copy() for s in lay.buffer_sizes]
    for ld, (kr, vr) in zip(layers, lay.regions):
        assert kr['cell_bytes'] == ld.kb
        assert (vr is None) == (ld.vb == 0)
        for reg, lo, n in ((kr, 0, ld.kb), (vr, ld.kb, ld.vb)):
            if reg is None:
                continue
            addr = cell_addresses(reg, lay.table, lay.page_size, ld.nh, g.T)
            assert addr.min() >= 0 and addr.max() + n <= len(bufs[reg['buffer']]), name
            idx = addr[:, :, None] + np.arange(n, dtype=np.int64)[None, None, :]
            bufs[reg['buffer']][idx] = ld.data[:, :, lo:lo + n]
    # read back through the description: every cell must be intact (no overlaps)
    used = [np.zeros(len(b), dtype=np.int32) for b in bufs]
    for ld, (kr, vr) in zip(layers, lay.regions):
        for reg, lo, n in ((kr, 0, ld.kb), (vr, ld.kb, ld.vb)):
            if reg is None:
                continue
            addr = cell_addresses(reg, lay.table, lay.page_size, ld.nh, g.T)
            idx = addr[:, :, None] + np.arange(n, dtype=np.int64)[None, None, :]
            assert np.array_equal(bufs[reg['buffer']][idx], ld.data[:, :, lo:lo + n]), name
            np.add.at(used[reg['buffer']], idx.ravel(), 1)
    for u in used:
        assert u.max() <= 1, '%s: cells overlap' % name
    assert sum(int((u == 0).sum()) for u in used) > 0, \
        '%s: no garbage byte at all' % name

    expected, slices = expected_from_logical(layers, g.N, g.B, g.F)
    v = Vector(name, seed, description + '; ' + lay.what, lay.family, g, lay, layers, bufs,
               expected, slices)
    if v.pieces <= PYINT_CHECK_MAX_PIECES:
        pyint_check(v)
    ALL[name] = v
    return v


def pyint_check(v):
    """Second, independent computation: a plain Python-int loop over every piece, reading the
    cells from the PHYSICAL buffers through the generic layout description."""
    g = v.group
    lay = v.layout
    raw = [bytes(b.tobytes()) for b in v.buffers]
    totals = []
    slices = {}
    for b in range(g.F, cdiv(g.N, g.B)):
        c = 0
        for (kr, vr), ld in zip(lay.regions, v.layers):
            for h in range(ld.nh):
                head = ld.first_head + h
                s = 0
                for t in range(b * g.B, min((b + 1) * g.B, g.N)):
                    k = t - g.F * g.B
                    page = lay.table[k // lay.page_size]
                    o = k % lay.page_size
                    cell = b''
                    for reg in (kr, vr):
                        if reg is None:
                            continue
                        a = reg['offset'] + page * reg['page_stride'] + o * reg['token_stride'] \
                            + h * reg['head_stride']
                        cell += raw[reg['buffer']][a:a + reg['cell_bytes']]
                    P = len(cell) // 8
                    for p in range(P):
                        x = int.from_bytes(cell[8 * p:8 * p + 8], 'little')
                        s += x * (2 * (t * P + p) + 1)
                s %= 1 << 64
                slices.setdefault((ld.layer, head), []).append(s)
                c += (2 * (ld.layer * 65536 + head) + 1) * s
        totals.append(c % (1 << 64))
    assert totals == v.expected, '%s: python-int check disagrees' % v.name
    for (layer, head, vals) in v.slices:
        assert slices[(layer, head)] == vals, v.name
    STATS['pyint_checked'] += 1


def vector_json(v):
    g = v.group
    layers = []
    for ld, (kr, vr) in zip(v.layers, v.layout.regions):
        layers.append({'layer': ld.layer, 'first_head': ld.first_head, 'num_heads': ld.nh,
                       'k': kr, 'v': vr})
    offs = []
    pos = 0
    for b in v.buffers:
        pos = cdiv(pos, BIN_ALIGN) * BIN_ALIGN
        offs.append({'offset': pos, 'bytes': len(b)})
        pos += len(b)
    return {
        'name': v.name, 'seed': v.seed, 'description': v.description, 'family': v.family,
        'block_size': g.B, 'num_tokens': g.N, 'first_block': g.F, 'page_size': v.layout.page_size,
        'block_table': v.layout.table, 'buffers': offs, 'layers': layers,
        'expected': [str(x) for x in v.expected],
        'expected_slices': [{'layer': l, 'head': h, 'values': [str(x) for x in s]}
                            for (l, h, s) in v.slices],
    }, pos


def vector_bin(v, js, total):
    out = bytearray(np.random.default_rng([v.seed, 2]).bytes(total))   # filler between buffers
    for b, d in zip(v.buffers, js['buffers']):
        out[d['offset']:d['offset'] + d['bytes']] = b.tobytes()
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# Relations
# ---------------------------------------------------------------------------------------------

def rel_sum(whole, parts):
    w = ALL[whole]
    for p in parts:
        q = ALL[p]
        assert (q.group.B, q.group.N, q.group.F) == (w.group.B, w.group.N, w.group.F), (whole, p)
    acc = [0] * len(w.expected)
    for p in parts:
        acc = [(a + x) & M64 for a, x in zip(acc, ALL[p].expected)]
    if acc != w.expected:
        raise SystemExit('SUM LAW FAILED: %s != sum of %s' % (whole, parts))
    for p in parts:
        assert ALL[p].expected != w.expected
    RELATIONS.append({'kind': 'sum', 'whole': whole, 'parts': list(parts)})


def rel_rechunk(small, large):
    s, l = ALL[small], ALL[large]
    assert s.group.F == 0 and l.group.F == 0 and s.group.N == l.group.N
    assert l.group.B % s.group.B == 0
    f = l.group.B // s.group.B
    assert len(s.expected) == cdiv(s.group.N, s.group.B) and len(l.expected) == cdiv(l.group.N, l.group.B)
    for k, c in enumerate(l.expected):
        acc = 0
        for x in s.expected[k * f:(k + 1) * f]:
            acc = (acc + x) & M64
        if acc != c:
            raise SystemExit('RECHUNK LAW FAILED: %s -> %s at large block %d' % (small, large, k))
    RELATIONS.append({'kind': 'rechunk', 'small': small, 'large': large, 'factor': f})


def rel_differs(a, b):
    x, y = ALL[a], ALL[b]
    assert (x.group.B, x.group.N, x.group.F) == (y.group.B, y.group.N, y.group.F)
    if x.expected == y.expected:
        raise SystemExit('DIFFERS FAILED: %s and %s have equal checksums' % (a, b))
    RELATIONS.append({'kind': 'differs', 'a': a, 'b': b})


# ---------------------------------------------------------------------------------------------
# The vectors
# ---------------------------------------------------------------------------------------------

FAM_SHORT = {'flash': 'vllm-flash', 'fi-nhd': 'flashinfer-nhd', 'fi-hnd': 'flashinfer-hnd'}


def plan(rng, cell, L, H, lo, hi, ps, extra, budget=BUDGET, keep_lo=False, min_slices=1):
    """Shrink L (layers) and H (heads), then the token range [lo, hi], so that the physical
    cache, about (pages needed + extra) * ps * L * H * cell bytes, stays within `budget`.
    Returns (L, H, T) with T drawn from the remaining range."""
    def cost(T, L, H):
        return (cdiv(T, ps) + extra) * ps * L * H * cell
    while cost(lo, L, H) > budget and L * H > min_slices:
        if H >= L and H > 1 and L * (H - 1) >= min_slices:
            H -= 1
        elif L > 1 and (L - 1) * H >= min_slices:
            L -= 1
        else:
            break
    while not keep_lo and lo > 1 and cost(lo, L, H) > budget:
        lo -= 1
    hi = max(lo, hi)
    while hi > lo and cost(hi, L, H) > budget:
        hi -= 1
    return L, H, int(rng.integers(lo, hi + 1))


def simple(name, dtype, hd, mla, B, N, F, specs, builder_fn, mode, note=''):
    """A vector with uniform layers.  builder_fn(elem) -> builder."""
    seed = name_seed(name)
    rng = np.random.default_rng(seed)
    elem = DTYPES[dtype]
    kb = hd * elem
    vb = 0 if mla else kb
    g = Group(B, N, F)
    layers, what = draw_logical(rng, specs, g.t0, N, kb, vb, dtype, mode)
    desc = '%s%s head_dim %d%s, B=%d, N=%d, F=%d, %s' % (
        dtype, ' MLA' if mla else '', hd, '' if mla else ' K+V', B, N, F, what)
    if note:
        desc = note + '; ' + desc
    return build_vector(name, desc, layers, g, builder_fn(elem))


def paged_builder(fam, ps, **kw):
    if fam in FAM_SHORT:
        return lambda e: fam_paged(FAM_SHORT[fam], e, ps, **kw)
    if fam in ('sglang', 'sglang-mla'):
        return lambda e: fam_sglang(e, ps, **kw)
    if fam == 'mla':
        return lambda e: fam_vllm_mla(e, ps, **kw)
    if fam == 'flat':
        return lambda e: fam_flat(e)
    raise AssertionError(fam)


def gen_matrix():
    """Every family x dtype x head dim with 16-token blocks, and fp8/bf16 with 32-token blocks
    (page = block), random tables with an unused page."""
    for fam in ('flash', 'fi-nhd', 'fi-hnd', 'sglang', 'flat'):
        for dtype in ('fp8', 'bf16', 'fp16', 'fp32'):
            for hd in (64, 128):
                for B in (16, 32):
                    if fam == 'flat' and dtype in ('fp8', 'bf16'):
                        continue       # GPULlama3 stores FP32 or FP16
                    if B == 32 and dtype in ('fp16', 'fp32') and fam != 'flat':
                        continue
                    name = '%s-%s-b%d-h%d' % (dtype, fam, B, hd)
                    rng = np.random.default_rng([name_seed(name), 7])
                    cell = 2 * hd * DTYPES[dtype]
                    extra = 1
                    L0, H0 = int(rng.integers(1, 4)), int(rng.integers(1, 5))
                    H0 = max(H0, 2 // L0)
                    L, H, N = plan(rng, cell, L0, H0, B + 1, 3 * B,
                                   B if fam != 'flat' else 1, extra if fam != 'flat' else 5, 64000, keep_lo=True,
                                   min_slices=2)
                    mode = 'float' if (hd == 128) != (B == 32) else 'bytes'
                    kw = {} if fam == 'flat' else {'extra_pages': extra, 'table_mode': 'perm'}
                    simple(name, dtype, hd, False, B, N, 0, [(l, 0, H) for l in range(L)],
                           paged_builder(fam, B, **kw), mode)
    # MLA: vllm-mla and sglang MLA, head_dim 576, K only
    for fam in ('mla', 'sglang-mla'):
        for dtype in ('fp8', 'bf16', 'fp16'):
            for B in (1, 16, 32, 64):
                if dtype == 'fp16' and B != 16:
                    continue
                name = '%s-%s-b%d-h576' % (dtype, fam, B)
                rng = np.random.default_rng([name_seed(name), 7])
                lo, hi = {1: (1, 40), 16: (17, 47), 32: (33, 70), 64: (20, 63)}[B]
                ps = 16
                extra = 1
                L, _, N = plan(rng, 576 * DTYPES[dtype], int(rng.integers(1, 4)), 1, lo, hi, ps, extra, 40000, keep_lo=True)
                mode = 'float' if B in (16, 64) else 'bytes'
                simple(name, dtype, 576, True, B, N, 0, [(l, 0, 1) for l in range(L)],
                       paged_builder(fam, ps, extra_pages=extra), mode,
                       note='page size %d' % ps)


def gen_token_counts():
    """num_tokens 1, B, B+1, 2B-1, 2B, 3B+5 for B = 1, 16, 32, 64."""
    for B in (1, 16, 32, 64):
        for N in sorted(set([1, B, B + 1, 2 * B - 1, 2 * B, 3 * B + 5])):
            if N < 1:
                continue
            name = 'bf16-flash-b%d-h64-n%d' % (B, N)
            ps = B if B >= 16 else 16
            specs = {1: [(0, 0, 2), (1, 0, 2)], 16: [(0, 0, 2), (1, 0, 2)], 32: [(0, 0, 1), (1, 0, 1)],
                     64: [(0, 0, 1)]}[B]
            simple(name, 'bf16', 64, False, B, N, 0, specs,
                   paged_builder('flash', ps, extra_pages=1), 'float' if B != 32 else 'bytes',
                   note='num_tokens edge case, page size %d' % ps)
    for N in (1, 16, 17):
        name = 'fp8-mla-b16-h576-n%d' % N
        simple(name, 'fp8', 576, True, 16, N, 0, [(0, 0, 1), (1, 0, 1)],
               paged_builder('mla', 16, extra_pages=2), 'bytes', note='num_tokens edge case')


def gen_kernel_splits():
    """Page (kernel block) smaller than the checksum block, permuted tables, unused pages;
    and pages larger than the block."""
    cases = [
        ('bf16', 'flash', 128, 32, 16, 0), ('bf16', 'flash', 64, 64, 16, 0),
        ('fp8', 'fi-hnd', 128, 16, 8, 0), ('fp16', 'fi-nhd', 64, 64, 16, 0),
        ('fp32', 'fi-hnd', 64, 32, 8, 0), ('bf16', 'sglang', 128, 16, 1, 0),
        ('fp8', 'sglang', 64, 32, 8, 0), ('fp8', 'mla', 576, 64, 32, 0),
        ('fp8', 'sglang-mla', 576, 16, 1, 0), ('bf16', 'flash', 128, 32, 16, 2),
        ('fp8', 'fi-nhd', 128, 64, 16, 1), ('fp16', 'fi-hnd', 64, 16, 8, 3),
        ('bf16', 'flash', 64, 16, 32, 0), ('fp8', 'fi-nhd', 64, 16, 64, 1),
        ('bf16', 'sglang', 64, 1, 4, 5),
    ]
    for (dtype, fam, hd, B, ps, F) in cases:
        mla = hd == 576
        name = '%s-%s-b%d-p%d-h%d%s' % (dtype, fam, B, ps, hd, '-f%d' % F if F else '')
        rng = np.random.default_rng([name_seed(name), 7])
        cell = (1 if mla else 2) * hd * DTYPES[dtype]
        extra = int(rng.integers(2, 5))
        L, H, T = plan(rng, cell, int(rng.integers(1, 3)), 1 if mla else int(rng.integers(1, 4)),
                       B + 1, 3 * B + 3, ps, extra, keep_lo=True)
        simple(name, dtype, hd, mla, B, F * B + T, F, [(l, 0, H) for l in range(L)],
               paged_builder(fam, ps, extra_pages=extra, table_mode='perm'),
               'float' if dtype != 'fp8' else 'bytes', note='page size %d, block size %d' % (ps, B))


def gen_first_blocks():
    """Consumer-style vectors starting at a first block > 0 (the table covers from F*B),
    including piece indexes past 2^32, 2^40 and one where 2j+1 wraps past 2^64."""
    cases = [
        # name, dtype, hd, mla, B, F, ps, fam, T
        ('bf16-flash-b16-h128-f3', 'bf16', 128, False, 16, 3, 16, 'flash', 40),
        ('fp16-flat-b16-h64-f2', 'fp16', 64, False, 16, 2, None, 'flat', 21),
        ('fp32-flat-b32-h64-f1', 'fp32', 64, False, 32, 1, None, 'flat', 33),
        ('fp8-fi-hnd-b32-h128-f5', 'fp8', 128, False, 32, 5, 32, 'fi-hnd', 64),
        ('bf16-sglang-b16-h64-f7', 'bf16', 64, False, 16, 7, 16, 'sglang', 17),
        ('bf16-mla-b64-h576-f2', 'bf16', 576, True, 64, 2, 16, 'mla', 40),
        ('bf16-flash-b1-h64-f9', 'bf16', 64, False, 1, 9, 16, 'flash', 20),
        # F*B*P > 2^32: P = 64, F*16 = 2^26 + 16
        ('bf16-flash-b16-h128-f4194305', 'bf16', 128, False, 16, 4194305, 16, 'flash', 37),
        # F*B*P > 2^32 with MLA fp8 (P = 72)
        ('fp8-mla-b64-h576-f1000003', 'fp8', 576, True, 64, 1000003, 16, 'mla', 70),
        ('fp8-sglang-mla-b16-h576-f4000037', 'fp8', 576, True, 16, 4000037, 16, 'sglang-mla', 20),
        # F*B*P > 2^40 with num_tokens < 2^31: fp32 head_dim 1024 (P = 1024), B = 4
        ('fp32-flash-b4-h1024-f268435459', 'fp32', 1024, False, 4, 268435459, 4, 'flash', 5),
        # F*B*P > 2^40 with num_tokens > 2^31 (positions past Java int)
        ('bf16-flash-b16-h128-f1073741831-longpos', 'bf16', 128, False, 16, 1073741831, 16, 'flash', 20),
        # F*B*P > 2^63: the factor 2j+1 wraps mod 2^64
        ('bf16-flash-b16-h128-f144115188075855885-wrap', 'bf16', 128, False, 16, 144115188075855885, 16,
         'flash', 18),
    ]
    for (name, dtype, hd, mla, B, F, ps, fam, T) in cases:
        P = (1 if mla else 2) * hd * DTYPES[dtype] // 8
        note = 'first block %d, first piece index F*B*P = %d' % (F, F * B * P)
        H = 1
        L = 1 if hd > 64 or T >= 50 else 2
        simple(name, dtype, hd, mla, B, F * B + T, F, [(l, 0, H) for l in range(L)],
               paged_builder(fam, ps, extra_pages=1), 'float' if dtype != 'fp8' else 'bytes', note=note)
    assert ALL['bf16-flash-b16-h128-f4194305'].group.F * 16 * 64 > 1 << 32
    assert ALL['fp32-flash-b4-h1024-f268435459'].group.N < (1 << 31)
    assert ALL['fp32-flash-b4-h1024-f268435459'].group.F * 4 * 1024 > 1 << 40
    assert ALL['bf16-flash-b16-h128-f1073741831-longpos'].group.F * 16 * 64 > 1 << 40
    assert ALL['bf16-flash-b16-h128-f144115188075855885-wrap'].group.F * 16 * 64 > 1 << 63
    assert ALL['bf16-flash-b16-h128-f144115188075855885-wrap'].group.N < (1 << 63)


def gen_piece_counts():
    """One vector for every piece count P = 1..64: K only for odd P, K/V split for even P."""
    for P in range(1, 65):
        name = 'pieces-p%d' % P
        seed = name_seed(name)
        rng = np.random.default_rng(seed)
        if P % 2:
            kp = P
        else:
            kp = P // 2 if P % 4 == 0 else int(rng.integers(1, P))
        kb, vb = 8 * kp, 8 * (P - kp)
        B = 16
        ps = int(rng.integers(1, 17))
        L, H, N = plan(rng, 8 * P, int(rng.integers(1, 3)), int(rng.integers(1, 4)), 1, 50, ps, 2, 12000)
        fh = int(rng.integers(0, 3)) * H
        g = Group(B, N, 0)
        specs = [(2 * l + 1, fh, H) for l in range(L)]
        layers, what = draw_logical(rng, specs, 0, N, kb, vb, 'fp8', 'bytes')
        desc = 'P=%d pieces per cell (K %d bytes, %s), B=%d, N=%d, %s' % (
            P, kb, 'V %d bytes' % vb if vb else 'no V', B, N, what)
        build_vector(name, desc, layers, g, gen_random(ps, extra_pages=2), seed=seed)


def gen_generic():
    """vLLM cross-layer physical orders, random strided layouts, unaligned ones,
    Jlama-like pages, odd page sizes, hybrid heads, an MLA cache plus an indexer cache."""
    orders = ['LBHNC', 'LBNHC', 'LHBNC', 'BLHNC', 'BLNHC', 'BHLNC']
    for order in orders:
        for pad in (False, True):
            for dtype, hd in (('bf16', 64), ('fp8', 128)):
                name = 'generic-%s%s-%s-h%d' % (order.lower(), '-pad' if pad else '', dtype, hd)
                rng = np.random.default_rng([name_seed(name), 7])
                B = [16, 32][int(rng.integers(0, 2))]
                ps = [B, B // 2][int(rng.integers(0, 2))]
                L, H, N = plan(rng, 2 * hd * DTYPES[dtype], int(rng.integers(2, 4)), int(rng.integers(1, 4)),
                               1, 3 * B, ps, 2)
                L = max(L, 2)
                simple(name, dtype, hd, False, B, N, 0, [(l, 0, H) for l in range(L)],
                       lambda e, o=order, p=pad, s=ps: gen_vllm_order(o, s, pad=p),
                       'float' if dtype == 'bf16' else 'bytes')
    # MLA in cross-layer orders (K only)
    for order in ('LBNHC', 'BLNHC'):
        name = 'generic-%s-fp8-mla-h576' % order.lower()
        simple(name, 'fp8', 576, True, 16, 20, 0, [(l, 0, 1) for l in range(2)],
               lambda e, o=order: gen_vllm_order(o, 16, pad=True), 'bytes')
    # random strided layouts
    for i in range(48):
        name = 'generic-random-%02d' % i
        seed = name_seed(name)
        rng = np.random.default_rng(seed)
        dtype = ['fp8', 'bf16', 'fp16', 'fp32'][i % 4]
        hd = [64, 128, 64, 576][(i // 4) % 4]
        mla = hd == 576
        B = [1, 16, 32, 64][(i // 16) % 3 + (1 if i % 5 == 0 else 0)]
        cell = (1 if mla else 2) * hd * DTYPES[dtype]
        ps = [B, max(1, B // 2), max(1, B // 4), 2 * B][int(rng.integers(0, 4))]
        while ps > 1 and 2 * ps * cell > BUDGET:
            ps //= 2
        F = int(rng.integers(0, 3)) if i % 3 == 0 else 0
        cell = (1 if mla else 2) * hd * DTYPES[dtype]
        extra = int(rng.integers(1, 3))
        L, H, T = plan(rng, cell, int(rng.integers(1, 4)), 1 if mla else int(rng.integers(1, 5)),
                       1, 3 * B + 2, ps, extra)
        layer_nums = sorted(int(x) for x in rng.permutation(64)[:L])
        fh = int(rng.integers(0, 4)) * H
        g = Group(B, F * B + T, F)
        elem = DTYPES[dtype]
        layers, what = draw_logical(rng, [(ln, fh, H) for ln in layer_nums], g.t0, g.N, hd * elem,
                                    0 if mla else hd * elem, dtype, 'float' if i % 2 else 'bytes')
        desc = '%s%s head_dim %d, layers %s, heads %d..%d, B=%d, N=%d, F=%d, %s' % (
            dtype, ' MLA' if mla else '', hd, layer_nums, fh, fh + H - 1, B, g.N, F, what)
        build_vector(name, desc, layers, g, gen_random(ps, extra_pages=extra), seed=seed)
    # unaligned strides / offsets (not multiples of 8)
    for i in range(4):
        name = 'generic-unaligned-%02d' % i
        seed = name_seed(name)
        rng = np.random.default_rng(seed)
        H = int(rng.integers(1, 4))
        N = int(rng.integers(10, 40))
        g = Group(16, N, 0)
        layers, what = draw_logical(rng, [(0, 0, H), (1, 0, H)], 0, N, 128, 128, 'bf16', 'float')
        build_vector(name, 'unaligned offsets/strides (not multiples of 8): bf16 head_dim 64, B=16, N=%d, %s'
                     % (N, what), layers, g, gen_random(16, aligned=False), seed=seed)
    # odd page sizes that neither divide nor are multiples of the block size
    for i, (B, ps) in enumerate(((16, 5), (16, 24), (32, 12))):
        name = 'generic-oddpage-b%d-p%d' % (B, ps)
        seed = name_seed(name)
        rng = np.random.default_rng(seed)
        N = int(rng.integers(2 * B, 3 * B))
        g = Group(B, N, 0)
        layers, what = draw_logical(rng, [(0, 0, 1), (1, 0, 1)], 0, N, 128, 128, 'fp8', 'bytes')
        build_vector(name, 'page size %d with block size %d (table rule with pages crossing blocks), N=%d, %s'
                     % (ps, B, N, what), layers, g, gen_random(ps), seed=seed)
    # Jlama-like: pages [layers, 2, ctx, heads*head_dim] -> order P L S T H, with K and V in one buffer
    for dtype in ('fp32', 'bf16'):
        name = 'generic-jlama-%s-h64' % dtype
        seed = name_seed(name)
        rng = np.random.default_rng(seed)
        elem = DTYPES[dtype]
        N = 30
        g = Group(16, N, 0)
        layers, what = draw_logical(rng, [(l, 0, 2) for l in range(2)], 0, N, 64 * elem, 64 * elem, dtype, 'float')

        def jl(rng_, lys, g_, ctx=16):
            npg = cdiv(g_.T, ctx) + 1
            table = make_table(rng_, cdiv(g_.T, ctx), npg, 'perm')
            kb = lys[0].kb
            counts = {'P': npg, 'L': len(lys), 'S': 2, 'T': ctx, 'H': 2}
            st, total = nested_strides(['P', 'L', 'S', 'T', 'H'], counts, kb, {})
            regs = [(region(0, i * st['L'], st['P'], st['T'], st['H'], kb),
                     region(0, i * st['L'] + st['S'], st['P'], st['T'], st['H'], kb)) for i in range(len(lys))]
            return Layout([total], regs, None, ctx, table, 'Jlama-like pages [layers,2,ctx,heads*head_dim], '
                          '2 heads, ctx %d, %d pages, permuted table' % (ctx, npg))
        build_vector(name, 'Jlama-like %s head_dim 64, B=16, N=%d, %s' % (dtype, N, what), layers, g, jl,
                     seed=seed)
    # hybrid: layers with different head counts / first heads in one group
    name = 'generic-hybrid-heads'
    seed = name_seed(name)
    rng = np.random.default_rng(seed)
    g = Group(16, 20, 0)
    specs = [(0, 0, 4), (5, 2, 2), (9, 0, 1), (60, 6, 3)]
    layers, what = draw_logical(rng, specs, 0, 20, 64, 64, 'fp8', 'bytes')
    build_vector(name, 'layers with different head counts and first heads %s, fp8 head_dim 64, B=16, N=20, %s'
                 % (specs, what), layers, g, gen_random(16), seed=seed)
    # an MLA latent cache and an indexer K cache of the same layer: consecutive head numbers
    name = 'generic-mla-indexer'
    seed = name_seed(name)
    rng = np.random.default_rng(seed)
    N = 20
    g = Group(16, N, 0)
    layers = []
    for ln in (0, 1):
        mla = rng.integers(0, 256, size=N * 1152, dtype=U8).reshape(1, N, 1152)
        idx = rng.integers(0, 256, size=N * 136, dtype=U8).reshape(1, N, 136)
        layers.append(LayerData(ln, 0, 1152, 0, mla))
        layers.append(LayerData(ln, 1, 136, 0, idx))
    build_vector(name, 'MLA latent cache (bf16 576, head 0) and an indexer K cache (136 bytes, head 1) '
                 'per layer, layers 0 and 1 each listed twice, B=16, N=20, random bytes',
                 layers, g, gen_random(4), seed=seed)


def take(layers, specs):
    """Sub-array of a logical model: specs = [(layer index, local head lo, hi)]."""
    out = []
    for (li, lo, hi) in specs:
        ld = layers[li]
        out.append(LayerData(ld.layer, ld.first_head + lo, ld.kb, ld.vb, ld.data[lo:hi].copy()))
    return out


def gen_tp_pp():
    """A whole model and its TP / PP / TPxPP parts, each in a different layout; the parts'
    checksums add up to the whole's."""
    sets = [
        # base, dtype, hd, layer numbers, heads, B, N, F, whole builder
        ('tp-bf16', 'bf16', 64, [0, 1, 2, 3], 4, 16, 21, 0, paged_builder('flash', 8)),
        ('tp-fp8-l3-7-60', 'fp8', 64, [3, 7, 60, 61], 4, 32, 40, 0, paged_builder('fi-hnd', 8)),
        ('tp-fp16-f2', 'fp16', 64, [0, 1, 2, 3], 2, 16, 50, 2, paged_builder('sglang', 16)),
    ]
    for (base, dtype, hd, lnums, H, B, N, F, wb) in sets:
        seed = name_seed(base + '-whole')
        rng = np.random.default_rng(seed)
        elem = DTYPES[dtype]
        g = Group(B, N, F)
        layers, what = draw_logical(rng, [(ln, 0, H) for ln in lnums], g.t0, N, hd * elem, hd * elem, dtype,
                                    'float' if dtype != 'fp8' else 'bytes')
        common = '%s head_dim %d, layers %s, %d heads, B=%d, N=%d, F=%d, %s' % (
            dtype, hd, lnums, H, B, N, F, what)
        whole = base + '-whole'
        build_vector(whole, 'whole model: ' + common, layers, g, wb(elem), seed=seed)
        L = len(lnums)
        h2, l2 = H // 2, L // 2
        parts_tp, parts_pp, parts_4 = [], [], []
        builders = [paged_builder('fi-nhd', 8), paged_builder('sglang', 4), paged_builder('flat', None),
                    lambda e: gen_random(16), lambda e: gen_vllm_order('BHLNC', 16, pad=True),
                    paged_builder('flash', 16), lambda e: gen_random(8), paged_builder('fi-hnd', 16)]
        bi = 0
        for r in range(2):
            n = '%s-tp2-r%d' % (base, r)
            sub = take(layers, [(i, r * h2, (r + 1) * h2) for i in range(L)])
            if F and builders[bi % len(builders)] is builders[2]:
                bi += 1
            build_vector(n, 'TP2 rank %d (heads %d..%d) of %s: %s' % (r, r * h2, (r + 1) * h2 - 1, whole, common),
                         sub, g, builders[bi % len(builders)](elem))
            bi += 1
            parts_tp.append(n)
        for s in range(2):
            n = '%s-pp2-s%d' % (base, s)
            sub = take(layers, [(i, 0, H) for i in range(s * l2, (s + 1) * l2)])
            build_vector(n, 'PP2 stage %d (layers %s) of %s: %s' % (s, lnums[s * l2:(s + 1) * l2], whole, common),
                         sub, g, builders[bi % len(builders)](elem))
            bi += 1
            parts_pp.append(n)
        for s in range(2):
            for r in range(2):
                n = '%s-tp2pp2-s%d-r%d' % (base, s, r)
                sub = take(layers, [(i, r * h2, (r + 1) * h2) for i in range(s * l2, (s + 1) * l2)])
                build_vector(n, 'TP2xPP2 stage %d rank %d of %s: %s' % (s, r, whole, common), sub, g,
                             builders[bi % len(builders)](elem))
                bi += 1
                parts_4.append(n)
        rel_sum(whole, parts_tp)
        rel_sum(whole, parts_pp)
        rel_sum(whole, parts_4)
    # MLA: PP only (the single latent head is replicated across TP, not split)
    base = 'pp-fp8-mla'
    seed = name_seed(base + '-whole')
    rng = np.random.default_rng(seed)
    g = Group(16, 30, 0)
    layers, what = draw_logical(rng, [(l, 0, 1) for l in range(4)], 0, 30, 576, 0, 'fp8', 'bytes')
    common = 'fp8 MLA head_dim 576, layers 0..3, B=16, N=30, %s' % what
    build_vector(base + '-whole', 'whole model: ' + common, layers, g, fam_vllm_mla(1, 16), seed=seed)
    names = []
    for s in range(4):
        n = '%s-pp4-s%d' % (base, s)
        build_vector(n, 'PP4 stage %d (layer %d) of %s-whole: %s' % (s, s, base, common),
                     take(layers, [(s, 0, 1)]), g, fam_sglang(1, [16, 8, 1, 4][s]))
        names.append(n)
    rel_sum(base + '-whole', names)


def gen_rechunk():
    """The same KV checksummed with 16-, 32- and 64-token blocks (first block 0)."""
    sets = [
        ('rechunk-bf16-flash-h64', 'bf16', 64, False, 100, 1, 2,
         {16: paged_builder('flash', 16), 32: paged_builder('flash', 16), 64: paged_builder('flash', 32)}),
        ('rechunk-fp8-mla-h576', 'fp8', 576, True, 80, 1, 1,
         {16: paged_builder('mla', 16), 32: paged_builder('sglang-mla', 32), 64: paged_builder('mla', 64)}),
        ('rechunk-fp32-h64', 'fp32', 64, False, 97, 1, 1,
         {16: paged_builder('flat', None), 32: lambda e: gen_random(16), 64: paged_builder('fi-hnd', 16)}),
        ('rechunk-fp16-exact-h64', 'fp16', 64, False, 128, 2, 1,
         {16: paged_builder('fi-nhd', 16), 32: paged_builder('sglang', 1), 64: lambda e: gen_random(32)}),
    ]
    for (base, dtype, hd, mla, N, L, H, builders) in sets:
        seed = name_seed(base)
        rng = np.random.default_rng(seed)
        elem = DTYPES[dtype]
        layers, what = draw_logical(rng, [(l, 0, H) for l in range(L)], 0, N, hd * elem,
                                    0 if mla else hd * elem, dtype, 'float' if dtype != 'fp8' else 'bytes')
        for B in (16, 32, 64):
            n = '%s-b%d' % (base, B)
            build_vector(n, 'rechunk set %s with block size %d: %s%s head_dim %d, N=%d, %s' % (
                base, B, dtype, ' MLA' if mla else '', hd, N, what),
                [ld.copy() for ld in layers], Group(B, N, 0), builders[B](elem))
        rel_rechunk(base + '-b16', base + '-b32')
        rel_rechunk(base + '-b16', base + '-b64')
        rel_rechunk(base + '-b32', base + '-b64')


def gen_swaps():
    """Base vectors and variants with two tokens / heads / layers swapped, a flipped bit,
    a block placed at the wrong position.  Same layout and garbage as the base."""
    sets = [
        ('swap-bf16-flash-h64', 'bf16', 64, 16, 36, [0, 5], 2, lambda e: fam_paged('vllm-flash', e, 8)),
        ('swap-fp8-random-h64', 'fp8', 64, 32, 70, [4, 9], 2, lambda e: gen_random(16)),
    ]
    for (base, dtype, hd, B, N, lnums, H, bf) in sets:
        seed = name_seed(base)
        rng = np.random.default_rng(seed)
        elem = DTYPES[dtype]
        g = Group(B, N, 0)
        layers, what = draw_logical(rng, [(ln, 0, H) for ln in lnums], 0, N, hd * elem, hd * elem, dtype,
                                    'float' if dtype != 'fp8' else 'bytes')
        common = '%s head_dim %d, layers %s, %d heads, B=%d, N=%d, %s' % (dtype, hd, lnums, H, B, N, what)
        build_vector(base, 'swap base: ' + common, layers, g, bf(elem), seed=seed)

        def variant(suffix, how, mutate):
            if base != sets[0][0] and suffix not in ('tokens-in-block', 'heads', 'layers', 'bitflip'):
                return
            new = [ld.copy() for ld in layers]
            mutate(new)
            n = '%s-%s' % (base, suffix)
            build_vector(n, '%s: %s with %s' % (n, base, how), new, g, bf(elem), layout_seed=seed)
            rel_differs(base, n)

        def swap_tokens(a, b):
            def m(ls):
                for ld in ls:
                    ld.data[:, [a, b], :] = ld.data[:, [b, a], :]
            return m
        variant('tokens-in-block', 'tokens 3 and 9 swapped in every (layer, head)', swap_tokens(3, 9))
        variant('tokens-across-blocks', 'tokens 1 and %d swapped in every (layer, head)' % (B + 2),
                swap_tokens(1, B + 2))

        def swap_one_cell(ls):
            ld = ls[0]
            ld.data[0, [0, 1], :] = ld.data[0, [1, 0], :]
        variant('tokens-one-slice', 'tokens 0 and 1 swapped in layer %d head 0 only' % lnums[0], swap_one_cell)

        def swap_heads(ls):
            ld = ls[-1]
            ld.data[[0, H - 1]] = ld.data[[H - 1, 0]]
        variant('heads', 'heads 0 and %d of layer %d swapped' % (H - 1, lnums[-1]), swap_heads)

        def swap_layers(ls):
            ls[0].data, ls[1].data = ls[1].data, ls[0].data
        variant('layers', 'layers %d and %d swapped' % (lnums[0], lnums[1]), swap_layers)

        def swap_kv(ls):
            ld = ls[0]
            kb = ld.kb
            d = ld.data.copy()
            ld.data[:, :, :kb] = d[:, :, kb:]
            ld.data[:, :, kb:] = d[:, :, :kb]
        variant('k-v', 'K and V swapped in layer %d' % lnums[0], swap_kv)

        def flip_bit(ls):
            ls[1].data[H - 1, N - 1, 5] ^= 1
        variant('bitflip', 'bit 0 of byte 5 of the last token of layer %d head %d flipped' % (lnums[1], H - 1),
                flip_bit)

        def wrong_block(ls):
            for ld in ls:
                ld.data[:, 0:B, :] = ld.data[:, B:2 * B, :].copy()
        variant('stale-block', 'block 0 overwritten by a copy of block 1', wrong_block)


def gen_production():
    """The geometries engines run, which the drawn vectors above (1-4 heads) never reach: Llama-3-8B at TP1 (8 KV heads
    x head dim 128 bf16: 256-byte K and V cells, 2 KiB token rows of K and of V side by side) in vLLM flash,
    FlashInfer NHD and HND and SGLang (page sizes 1 and 16), and Llama-3-70B at TP8 (1 KV head x 128 bf16) in vLLM
    flash; 2 layers, 16-token blocks, shuffled (one reversed) tables with an unused page, N not a multiple of 16, F > 0 in one.
    These are the backends' row loops for 2 KiB rows (the CPU's from-memory row passes), checked against NumPy."""
    cases = [
        # name, family, page size, heads, N, F, extra pages, table, data
        ('llama3-8b-tp1-flash-n37', 'flash', 16, 8, 37, 0, 1, 'perm', 'float'),
        ('llama3-8b-tp1-fi-nhd-f2-n53', 'fi-nhd', 16, 8, 53, 2, 1, 'reverse', 'float'),
        ('llama3-8b-tp1-fi-hnd-n29', 'fi-hnd', 16, 8, 29, 0, 1, 'perm', 'bytes'),
        ('llama3-8b-tp1-sglang-p1-n37', 'sglang', 1, 8, 37, 0, 1, 'perm', 'bytes'),
        ('llama3-8b-tp1-sglang-p16-n21', 'sglang', 16, 8, 21, 0, 0, 'perm', 'float'),
        ('llama3-70b-tp8-flash-n37', 'flash', 16, 1, 37, 0, 1, 'perm', 'float'),
    ]
    for (name, fam, ps, H, N, F, extra, table, mode) in cases:
        model = 'Llama-3-8B TP1' if H == 8 else 'Llama-3-70B TP8'
        simple(name, 'bf16', 128, False, 16, N, F, [(l, 0, H) for l in range(2)],
               paged_builder(fam, ps, extra_pages=extra, table_mode=table), mode,
               note='production geometry, %s: %d KV heads, page size %d%s' % (
                   model, H, ps, ', page 0 and no other unused' if fam == 'sglang' and not extra else ''))
        PRODUCTION.append(name)


def generate_all():
    gen_matrix()
    gen_token_counts()
    gen_kernel_splits()
    gen_first_blocks()
    gen_piece_counts()
    gen_generic()
    gen_tp_pp()
    gen_rechunk()
    gen_swaps()
    gen_production()
    # the Python-int check must have covered the odd cases at least
    for n in ['bf16-flash-b16-h128-f4194305', 'fp32-flash-b4-h1024-f268435459',
              'bf16-flash-b16-h128-f1073741831-longpos', 'bf16-flash-b16-h128-f144115188075855885-wrap',
              'pieces-p1', 'pieces-p63', 'generic-unaligned-00', 'generic-mla-indexer', 'tp-bf16-whole',
              'bf16-flash-b1-h64-n8', 'generic-oddpage-b16-p5'] + PRODUCTION:
        assert ALL[n].pieces <= PYINT_CHECK_MAX_PIECES, n


def self_test_arithmetic():
    """Tiny hand-checkable cases of the definition."""
    cells = np.zeros((2, 16), dtype=U8)
    cells[0, 0] = 1            # x_0 = 1 (token 0, piece 0), weight 1
    cells[1, 8] = 2            # x_3 = 2 (token 1, piece 1), weight 7
    assert slice_sums(cells, 0, 2, 2, 0) == [1 + 14]
    assert slice_sums(cells, 0, 2, 1, 0) == [1, 14]
    big = np.full((1, 8), 255, dtype=U8)   # x = 2^64 - 1 = -1
    assert slice_sums(big, 5, 6, 5, 1) == [(-(2 * 5 + 1)) & M64]
    assert head_weight(3, 2) == 2 * (3 * 65536 + 2) + 1


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(os.path.dirname(here), 'src', 'main', 'resources', 'vectors')
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=default_out, help='output folder (default: %(default)s)')
    args = ap.parse_args()
    t_start = time.time()
    np.seterr(over='ignore')
    self_test_arithmetic()
    generate_all()
    names = sorted(ALL)
    out = args.out
    os.makedirs(out, exist_ok=True)
    for f in sorted(os.listdir(out)):          # stale vectors from an earlier run
        if f.endswith('.json') or f.endswith('.bin'):
            os.remove(os.path.join(out, f))
    total = 0
    for n in names:
        v = ALL[n]
        js, size = vector_json(v)
        data = vector_bin(v, js, size)
        text = json.dumps(js, sort_keys=True, indent=1) + '\n'
        with open(os.path.join(out, n + '.json'), 'w', encoding='ascii', newline='\n') as f:
            f.write(text)
        with open(os.path.join(out, n + '.bin'), 'wb') as f:
            f.write(data)
        total += len(text) + len(data)
    index = {'vectors': names, 'relations': RELATIONS}
    text = json.dumps(index, sort_keys=True, indent=1) + '\n'
    with open(os.path.join(out, 'index.json'), 'w', encoding='ascii', newline='\n') as f:
        f.write(text)
    total += len(text)
    print('%d vectors, %d relations, %d re-checked with Python ints, %.1f MB, %.1f s -> %s' % (
        len(names), len(RELATIONS), STATS['pyint_checked'], total / 1e6, time.time() - t_start, out))


if __name__ == '__main__':
    main()
