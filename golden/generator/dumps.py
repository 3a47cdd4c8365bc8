#!/usr/bin/env python3
"""Writes the KV dumps the command-line tests read, and the block checksums NumPy expects for them.

Independent of the Java code: the checksums are computed here straight from the definition
(docs/definition.md), from the LOGICAL data (per layer: K and V bytes of [tokens, heads, cell]),
before the data is scattered into a physical layout full of random garbage elsewhere.

  cell       = K bytes of one (token, head) followed by its V bytes (MLA: K only)
  piece x_j  = little-endian uint64 number p of the cell of request position t, j = t*P + p
  slice sum  s = sum_j x_j * (2j + 1)                      mod 2^64
  block      c = sum_(layer, head) (2*(layer*2^16 + head) + 1) * s   mod 2^64
  block b of size B covers request positions [b*B, min((b+1)*B, num_tokens))

Every checksum is computed twice (uint64 NumPy arrays, and plain Python integers) and the two must agree.

Formats: safetensors (written by hand: 8-byte LE header length, JSON header, data), .npy (numpy.lib.format),
.npz (zip written with fixed timestamps so reruns are byte-identical; one stored with zip64 extras as
numpy.savez does, one deflated as numpy.savez_compressed does), and a directory of .npy files.

Layouts (names as the CLI's --layout):
  gathered             layers.<L>.k / layers.<L>.v   [tokens, heads, head_dim], token 0 = position F*B
  vllm-flash           layers.<L>.kv_cache (2, pages, page_size, heads, head_dim)  + block_table
  vllm-flashinfer-nhd  layers.<L>.kv_cache (pages, 2, page_size, heads, head_dim)  + block_table
  vllm-flashinfer-hnd  layers.<L>.kv_cache (pages, 2, heads, page_size, head_dim)  + block_table
  vllm-mla             layers.<L>.kv_cache (pages, page_size, head_dim)            + block_table
The block table lists the pages of positions F*B, F*B + page_size, ...; an optional integer tensor
`num_tokens` holds the request's token count.

Output: DIR/*.{safetensors,npy,npz}, DIR/<name>/ (npy directories) and DIR/dumps.json (the manifest
the tests read).  Usage: python3 golden/generator/dumps.py [--out DIR]   (default cli/src/test/resources/dumps)
"""
import argparse
import io
import json
import os
import shutil
import struct
import zipfile
import zlib

import numpy as np

from pieces import mix_int, mix_np  # the mixed mode's mixer, NumPy's own implementation

SEED = 20250604
M64 = (1 << 64) - 1
H = 1 << 16
U8 = np.uint8
U64 = np.uint64

# safetensors dtype -> (bytes per element, numpy dtype used when the same data goes into .npy/.npz)
DTYPES = {
    'BF16': (2, '<i2'),       # torch has no numpy bf16: dumps use tensor.view(torch.int16)
    'F16': (2, '<f2'),
    'F32': (4, '<f4'),
    'F8_E4M3': (1, '|u1'),
    'F8_E5M2': (1, '|u1'),
    'U8': (1, '|u1'),
    'I32': (4, '<i4'),
    'I64': (8, '<i8'),
}


def cdiv(a, b):
    return -(-a // b)


def rng_for(name):
    return np.random.default_rng([SEED, zlib.crc32(name.encode('ascii'))])


# ------------------------------------------------------------------------------------------------
# The definition
# ------------------------------------------------------------------------------------------------

def block_checksums(layers, num_tokens, first_block, block_size, head_offset, mixed=False):
    """layers: list of (layer_number, K uint8 [T, heads, kb], V uint8 [T, heads, vb] or None) holding
    request positions start .. start+T-1, start = first_block*block_size.  Returns the block
    checksums of blocks first_block .. cdiv(num_tokens, block_size)-1 as Python ints."""
    start = first_block * block_size
    nb = cdiv(num_tokens, block_size) - first_block
    n = num_tokens - start
    out = np.zeros(nb, dtype=U64)
    with np.errstate(over='ignore'):
        for (layer, k, v) in layers:
            cells = k if v is None else np.concatenate([k, v], axis=2)
            assert cells.shape[0] >= n and cells.shape[2] % 8 == 0
            P = cells.shape[2] // 8
            x = np.ascontiguousarray(cells[:n]).view('<u8').astype(U64)          # [n, heads, P]
            if mixed:
                x = mix_np(x)
            t = np.arange(n, dtype=U64) + U64(start)
            j = t[:, None] * U64(P) + np.arange(P, dtype=U64)[None, :]           # [n, P]
            w = j * U64(2) + U64(1)
            per_token = (x * w[:, None, :]).sum(axis=2, dtype=U64)               # [n, heads]
            for h in range(cells.shape[1]):
                m = U64(2 * (layer * H + head_offset + h) + 1)
                for i in range(nb):
                    b = first_block + i
                    lo, hi = b * block_size - start, min((b + 1) * block_size, num_tokens) - start
                    out[i] += m * per_token[lo:hi, h].sum(dtype=U64)
    fast = [int(c) for c in out]
    assert fast == block_checksums_pyint(layers, num_tokens, first_block, block_size, head_offset, mixed)
    return fast


def block_checksums_pyint(layers, num_tokens, first_block, block_size, head_offset, mixed=False):
    """The same, one piece at a time with Python integers (the second, independent computation)."""
    start = first_block * block_size
    out = []
    for b in range(first_block, cdiv(num_tokens, block_size)):
        c = 0
        for (layer, k, v) in layers:
            for h in range(k.shape[1]):
                s = 0
                for t in range(b * block_size, min((b + 1) * block_size, num_tokens)):
                    cell = k[t - start, h].tobytes() + (b'' if v is None else v[t - start, h].tobytes())
                    P = len(cell) // 8
                    for p in range(P):
                        x = int.from_bytes(cell[8 * p:8 * p + 8], 'little')
                        if mixed:
                            x = mix_int(x)
                        s += x * (2 * (t * P + p) + 1)
                c += (2 * (layer * H + head_offset + h) + 1) * (s & M64)
        out.append(c & M64)
    return out


# ------------------------------------------------------------------------------------------------
# Writers
# ------------------------------------------------------------------------------------------------

class T:
    """A tensor to write: raw little-endian bytes, a safetensors dtype and a shape."""

    def __init__(self, dtype, shape, data):
        data = np.ascontiguousarray(data)
        self.dtype, self.shape = dtype, tuple(int(s) for s in shape)
        self.raw = data.view(U8).reshape(-1).tobytes()
        assert len(self.raw) == DTYPES[dtype][0] * int(np.prod(self.shape, dtype=np.int64)), (dtype, shape)

    def array(self):
        return np.frombuffer(self.raw, dtype=DTYPES[self.dtype][1]).reshape(self.shape)


def safetensors_bytes(tensors, metadata=None, header_override=None):
    header, offset, chunks = {}, 0, []
    for name in sorted(tensors):
        t = tensors[name]
        header[name] = {'dtype': t.dtype, 'shape': list(t.shape), 'data_offsets': [offset, offset + len(t.raw)]}
        offset += len(t.raw)
        chunks.append(t.raw)
    if metadata:
        header['__metadata__'] = metadata
    if header_override:
        header_override(header)
    text = json.dumps(header, separators=(',', ':')).encode('utf-8')
    text += b' ' * (-len(text) % 8)
    return struct.pack('<Q', len(text)) + text + b''.join(chunks)


def npy_bytes(arr):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(arr), version=(1, 0), allow_pickle=False)
    return buf.getvalue()


def npz_bytes(tensors, compressed):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED) as zf:
        for name in sorted(tensors):
            info = zipfile.ZipInfo(name + '.npy', date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
            info.external_attr = 0o600 << 16
            # numpy.savez opens every member with force_zip64=True: the reader must handle zip64 extras
            with zf.open(info, 'w', force_zip64=True) as f:
                f.write(npy_bytes(tensors[name].array()))
    return buf.getvalue()


def write(out, name, fmt, tensors):
    path = os.path.join(out, name)
    if fmt == 'safetensors':
        data = safetensors_bytes(tensors)
    elif fmt == 'npz':
        data = npz_bytes(tensors, compressed=False)
    elif fmt == 'npz-deflated':
        data = npz_bytes(tensors, compressed=True)
    elif fmt == 'npy-dir':
        os.makedirs(path, exist_ok=True)
        for n in sorted(tensors):
            with open(os.path.join(path, n + '.npy'), 'wb') as f:
                f.write(npy_bytes(tensors[n].array()))
        return
    else:
        raise AssertionError(fmt)
    with open(path, 'wb') as f:
        f.write(data)


# ------------------------------------------------------------------------------------------------
# Logical data and physical layouts
# ------------------------------------------------------------------------------------------------

def draw(rng, layer_numbers, tokens, heads, kb, vb):
    """Logical data: [(layer, K [tokens, heads, kb] uint8, V or None)]."""
    out = []
    for layer in layer_numbers:
        k = rng.integers(0, 256, size=(tokens, heads, kb), dtype=U8)
        v = None if vb == 0 else rng.integers(0, 256, size=(tokens, heads, vb), dtype=U8)
        out.append((layer, k, v))
    return out


def gathered_tensors(layers, dtype):
    e = DTYPES[dtype][0]
    ts = {}
    for (layer, k, v) in layers:
        ts['layers.%d.k' % layer] = T(dtype, k.shape[:2] + (k.shape[2] // e,), k)
        if v is not None:
            ts['layers.%d.v' % layer] = T(dtype, v.shape[:2] + (v.shape[2] // e,), v)
    return ts


def paged_tensors(rng, layers, layout, dtype, num_pages, page_size, table_dtype, num_tokens_tensor=None):
    """Scatters the logical tokens into pages drawn at random from a cache of num_pages pages filled with
    garbage; returns the tensors (caches, block_table, optional num_tokens)."""
    e = DTYPES[dtype][0]
    tokens, heads, cb = layers[0][1].shape
    n_pages = cdiv(tokens, page_size)
    table = rng.permutation(num_pages)[:n_pages]
    ts = {}
    for (layer, k, v) in layers:
        if layout == 'vllm-flash':
            cache = rng.integers(0, 256, size=(2, num_pages, page_size, heads, cb), dtype=U8)
        elif layout == 'vllm-flashinfer-nhd':
            cache = rng.integers(0, 256, size=(num_pages, 2, page_size, heads, cb), dtype=U8)
        elif layout == 'vllm-flashinfer-hnd':
            cache = rng.integers(0, 256, size=(num_pages, 2, heads, page_size, cb), dtype=U8)
        elif layout == 'vllm-mla':
            assert heads == 1 and v is None
            cache = rng.integers(0, 256, size=(num_pages, page_size, cb), dtype=U8)
        else:
            raise AssertionError(layout)
        for t in range(tokens):
            page, slot = int(table[t // page_size]), t % page_size
            for h in range(heads):
                if layout == 'vllm-flash':
                    cache[0, page, slot, h], cache[1, page, slot, h] = k[t, h], v[t, h]
                elif layout == 'vllm-flashinfer-nhd':
                    cache[page, 0, slot, h], cache[page, 1, slot, h] = k[t, h], v[t, h]
                elif layout == 'vllm-flashinfer-hnd':
                    cache[page, 0, h, slot], cache[page, 1, h, slot] = k[t, h], v[t, h]
                else:
                    cache[page, slot] = k[t, 0]
        ts['layers.%d.kv_cache' % layer] = T(dtype, cache.shape[:-1] + (cb // e,), cache)
    ts['block_table'] = T(table_dtype, (n_pages,), table.astype(DTYPES[table_dtype][1]))
    if num_tokens_tensor is not None:
        ts['num_tokens'] = T('I64', (), np.array(num_tokens_tensor, dtype='<i8'))
    return ts


# ------------------------------------------------------------------------------------------------
# The dumps
# ------------------------------------------------------------------------------------------------

def case(layers, tokens_in_dump, block_size, first_block=0, head_offset=0, num_tokens=None, arg_num_tokens=None):
    """One `sum` invocation and its expected result.  num_tokens: what the CLI should use (default
    F*B + tokens in the dump); arg_num_tokens: the value passed as --num-tokens, if any."""
    n = num_tokens if num_tokens is not None else first_block * block_size + tokens_in_dump
    args = {'block_size': block_size, 'first_block': first_block, 'head_offset': head_offset,
            'num_tokens': arg_num_tokens}
    return {'args': args, 'num_tokens': n, 'first_block': first_block,
            'values': [str(c) for c in block_checksums(layers, n, first_block, block_size, head_offset)],
            'values_mixed': [str(c) for c in block_checksums(layers, n, first_block, block_size, head_offset, True)]}


def good_dumps(out):
    dumps = []

    def add(file, fmt, layout, dtype, tensors, cases, note):
        write(out, file, fmt, tensors)
        dumps.append({'file': file, 'format': fmt, 'layout': layout, 'dtype': dtype, 'note': note, 'cases': cases})

    def gathered(file, fmt, dtype, shape, cases, note):
        """A gathered dump of draw()'s SHAPE (layer numbers, tokens, heads, K and V bytes); CASES: c(block size, ...)."""
        L = draw(rng_for(file), *shape)
        add(file, fmt, 'gathered', dtype, gathered_tensors(L, dtype), [case(L, shape[1], b, **kw) for b, kw in cases],
            note)

    def paged(file, fmt, layout, dtype, shape, pages, table, cases, note, num_tokens_tensor=None):
        """A paged dump of LAYOUT: PAGES = (number, page size), TABLE the block table's dtype."""
        r = rng_for(file)
        L = draw(r, *shape)
        ts = paged_tensors(r, L, layout, dtype, pages[0], pages[1], table, num_tokens_tensor=num_tokens_tensor)
        add(file, fmt, layout, dtype, ts, [case(L, shape[1], b, **kw) for b, kw in cases], note)

    def c(block_size, **kw):
        return block_size, kw

    # gathered, bf16, safetensors: block sizes 1/16/32, a first block past 2^32 pieces, a TP head offset
    gathered('gathered-bf16.safetensors', 'safetensors', 'BF16', ([0, 1, 2, 3], 37, 2, 128, 128), [
        c(16), c(1), c(32), c(16, first_block=2), c(16, head_offset=4), c(16, num_tokens=30, arg_num_tokens=30),
        c(32, first_block=1 << 28),
    ], '4 layers x 2 heads x 64 bf16, 37 tokens (partial last block)')
    # gathered MLA (K only), fp8 e4m3, head dim 576, layer numbers with gaps
    gathered('gathered-mla-f8e4m3.safetensors', 'safetensors', 'F8_E4M3', ([0, 5, 7], 21, 1, 576, 0), [c(16), c(8)],
             'MLA latent rows 576 x fp8, layers 0, 5, 7')
    # gathered f32 .npz, stored members with zip64 extras (as numpy.savez writes)
    gathered('gathered-f32.npz', 'npz', 'F32', ([0, 1], 19, 4, 128, 128), [c(16), c(4)],
             '2 layers x 4 heads x 32 f32, stored npz')
    # gathered f16 .npz, deflated members (numpy.savez_compressed)
    gathered('gathered-f16-deflated.npz', 'npz-deflated', 'F16', ([0, 1, 2], 25, 2, 32, 32), [c(16), c(16, first_block=1)],
             '3 layers x 2 heads x 16 f16, deflated npz')
    # gathered bf16 as a directory of .npy files (bf16 saved as int16)
    gathered('gathered-bf16-npy', 'npy-dir', 'BF16', ([0, 1], 18, 2, 128, 128), [c(16), c(2)],
             'directory of layers.<L>.{k,v}.npy, bf16 as int16')

    # vllm-flash bf16, page 16, random I32 block table, num_tokens tensor (55: the last page is partial)
    paged('vllm-flash-bf16.safetensors', 'safetensors', 'vllm-flash', 'BF16', ([0, 1, 2], 55, 2, 128, 128), (10, 16),
          'I32', [c(16), c(32, num_tokens=55), c(16, num_tokens=50, arg_num_tokens=50), c(16, head_offset=2),
                  c(64, num_tokens=55)],
          'vLLM FlashAttention (2, 10, 16, 2, 64) bf16, table I32, num_tokens tensor 55', num_tokens_tensor=55)
    # vllm-flash f16, page 8 (kernel-block split under 16/32-token blocks), I64 table, npz
    paged('vllm-flash-f16-page8.npz', 'npz', 'vllm-flash', 'F16', ([0, 1], 53, 1, 256, 256), (12, 8), 'I64',
          [c(8, num_tokens=53, arg_num_tokens=53), c(16, num_tokens=53, arg_num_tokens=53),
           c(32, num_tokens=53, arg_num_tokens=53)],
          'vLLM FlashAttention (2, 12, 8, 1, 128) f16, page 8 under 8/16/32-token blocks, table I64')
    # flashinfer NHD, fp8 stored as uint8
    paged('flashinfer-nhd-u8.safetensors', 'safetensors', 'vllm-flashinfer-nhd', 'U8', ([0, 1, 2, 3], 40, 2, 64, 64),
          (8, 16), 'I64', [c(16, num_tokens=40), c(48, num_tokens=40)], 'FlashInfer NHD (8, 2, 16, 2, 64) fp8 as U8',
          num_tokens_tensor=40)
    # flashinfer HND, fp8 e5m2
    paged('flashinfer-hnd-f8e5m2.safetensors', 'safetensors', 'vllm-flashinfer-hnd', 'F8_E5M2', ([0, 1], 33, 4, 32, 32),
          (6, 16), 'I32', [c(16, num_tokens=33)], 'FlashInfer HND (6, 2, 4, 16, 32) fp8 e5m2', num_tokens_tensor=33)
    # flashinfer HND, bf16, page 8, npz
    paged('flashinfer-hnd-bf16.npz', 'npz', 'vllm-flashinfer-hnd', 'BF16', ([0, 1], 30, 2, 128, 128), (5, 8), 'I32',
          [c(8, num_tokens=30), c(16, num_tokens=30)], 'FlashInfer HND (5, 2, 2, 8, 64) bf16', num_tokens_tensor=30)
    # vllm-mla, bf16, 576
    paged('vllm-mla-bf16.safetensors', 'safetensors', 'vllm-mla', 'BF16', ([0, 1, 2], 45, 1, 1152, 0), (6, 16), 'I32',
          [c(16, num_tokens=45), c(32, num_tokens=45)], 'vLLM MLA (6, 16, 576) bf16', num_tokens_tensor=45)
    # vllm-mla, fp8 as uint8, page 32, npz
    paged('vllm-mla-u8.npz', 'npz', 'vllm-mla', 'U8', ([3, 4], 50, 1, 576, 0), (4, 32), 'I64',
          [c(32, num_tokens=50), c(64, num_tokens=50)], 'vLLM MLA (4, 32, 576) fp8 as U8, layers 3, 4',
          num_tokens_tensor=50)
    return dumps


def diff_dumps(out):
    """One request (4 layers x 2 heads x 64 bf16, 48 tokens) written three times: gathered; FlashInfer HND page 8
    with the same bytes; vLLM flash page 16 with two known changes."""
    r = rng_for('diff')
    L = draw(r, [0, 1, 2, 3], 48, 2, 128, 128)
    write(out, 'diff-a-gathered.safetensors', 'safetensors', gathered_tensors(L, 'BF16'))
    write(out, 'diff-same-hnd.safetensors', 'safetensors',
          paged_tensors(r, L, 'vllm-flashinfer-hnd', 'BF16', 9, 8, 'I32', num_tokens_tensor=48))
    changed = [(layer, k.copy(), v.copy()) for (layer, k, v) in L]
    # change 1: layer 2, head 1, tokens 20..22, K bytes 10..13 (block 1 of 16)
    changed[2][1][20:23, 1, 10:14] ^= U8(0x5A)
    # change 2: layer 0, head 0, token 40, V byte 100 (block 2)
    changed[0][2][40, 0, 100] ^= U8(0x01)
    write(out, 'diff-b-flash.safetensors', 'safetensors',
          paged_tensors(r, changed, 'vllm-flash', 'BF16', 7, 16, 'I64', num_tokens_tensor=48))
    va = [str(c) for c in block_checksums(L, 48, 0, 16, 0)]
    vb = [str(c) for c in block_checksums(changed, 48, 0, 16, 0)]
    vam = [str(c) for c in block_checksums(L, 48, 0, 16, 0, True)]
    vbm = [str(c) for c in block_checksums(changed, 48, 0, 16, 0, True)]
    return [
        {'a': 'diff-a-gathered.safetensors', 'layout_a': 'gathered',
         'b': 'diff-same-hnd.safetensors', 'layout_b': 'vllm-flashinfer-hnd',
         'block_size': 16, 'values_a': va, 'values_b': va, 'values_a_mixed': vam, 'values_b_mixed': vam,
         'differences': []},
        {'a': 'diff-a-gathered.safetensors', 'layout_a': 'gathered',
         'b': 'diff-b-flash.safetensors', 'layout_b': 'vllm-flash',
         'block_size': 16, 'values_a': va, 'values_b': vb, 'values_a_mixed': vam, 'values_b_mixed': vbm,
         'differences': [
             {'block': 1, 'layer': 2, 'head': 1, 'token_first': 20, 'token_last': 22,
              'k_bytes': [10, 13], 'v_bytes': None},
             {'block': 2, 'layer': 0, 'head': 0, 'token_first': 40, 'token_last': 40,
              'k_bytes': None, 'v_bytes': [100, 100]}]},
    ]


def malformed_dumps(out):
    """Inputs the CLI must refuse with exit 65 and one line containing `error` (case-insensitive)."""
    r = rng_for('malformed')
    small = draw(r, [0, 1], 8, 1, 16, 16)
    good = gathered_tensors(small, 'BF16')
    cases = []

    def add(file, data, layout, error, args=None, note=''):
        with open(os.path.join(out, file), 'wb') as f:
            f.write(data)
        cases.append({'file': file, 'layout': layout, 'block_size': 16, 'args': args or [], 'error': error,
                      'note': note})

    data = safetensors_bytes(good)
    add('bad-truncated.safetensors', data[:-40], 'gathered', 'truncated', note='data cut 40 bytes short')
    add('bad-header-length.safetensors', struct.pack('<Q', 1 << 40) + data[8:], 'gathered', 'header length',
        note='header length 2^40, larger than the file')
    add('bad-header-json.safetensors', struct.pack('<Q', 16) + b'{"layers.0.k": [' + data[24:], 'gathered',
        'header', note='header is not JSON')

    def lie(h):
        h['layers.0.k']['data_offsets'][1] += 8
    add('bad-offsets.safetensors', safetensors_bytes(good, header_override=lie), 'gathered', 'data_offsets',
        note='data_offsets span 8 bytes more than shape x dtype')

    def unknown(h):
        h['layers.1.v']['dtype'] = 'Q4_K'
    add('bad-dtype.safetensors', safetensors_bytes(good, header_override=unknown), 'gathered', 'dtype',
        note='unknown dtype Q4_K')
    add('bad-no-layers.safetensors', safetensors_bytes({'model.k': good['layers.0.k']}), 'gathered', 'layers.',
        note='no tensor named layers.<L>.k')
    vbad = dict(good)
    vbad['layers.1.v'] = T('BF16', (7, 1, 16), np.zeros(224, dtype=U8))
    add('bad-v-shape.safetensors', safetensors_bytes(vbad), 'gathered', 'shape',
        note='V holds 7 tokens, K 8 (V may have another head_dim, not other tokens or heads)')
    # (cells that are not whole 8-byte pieces are no input error but a skipped group: dumps_cells.py, odd-k6)
    add('bad-too-many-tokens.safetensors', data, 'gathered', 'num-tokens', args=['--num-tokens', '100'],
        note='--num-tokens past the tokens in the dump')

    paged = paged_tensors(r, small, 'vllm-flash', 'BF16', 4, 8, 'I32', num_tokens_tensor=8)
    shape3 = dict(paged)
    kv = paged['layers.0.kv_cache']
    shape3['layers.0.kv_cache'] = T('BF16', (1,) + kv.shape[1:], np.frombuffer(kv.raw, dtype=U8)[:len(kv.raw) // 2])
    add('bad-flash-shape.safetensors', safetensors_bytes(shape3), 'vllm-flash', 'shape',
        note='kv_cache first dimension 1, not 2')
    add('bad-flash-4d.safetensors', safetensors_bytes(paged), 'vllm-mla', 'shape',
        note='a 5-D vllm-flash cache read as vllm-mla')
    past = dict(paged)
    past['block_table'] = T('I32', (1,), np.array([4], dtype='<i4'))
    add('bad-table-past-cache.safetensors', safetensors_bytes(past), 'vllm-flash', 'block_table',
        note='block_table[0] = 4 in a cache of 4 pages')
    nt = dict(paged)
    del nt['block_table']
    add('bad-no-table.safetensors', safetensors_bytes(nt), 'vllm-flash', 'block_table', note='no block_table')
    ft = dict(paged)
    ft['block_table'] = T('F32', (1,), np.array([1.0], dtype='<f4'))
    add('bad-table-dtype.safetensors', safetensors_bytes(ft), 'vllm-flash', 'block_table',
        note='block_table of floats')
    add('bad-block-size.safetensors', safetensors_bytes(paged), 'vllm-flash', 'multiple', args=[],
        note='block size 16 with page size 8 is fine; 12 is not')
    cases[-1]['block_size'] = 12

    arr = good['layers.0.k'].array()
    npy = npy_bytes(arr)
    os.makedirs(os.path.join(out, 'bad-npy'), exist_ok=True)
    with open(os.path.join(out, 'bad-npy', 'layers.0.k.npy'), 'wb') as f:
        f.write(npy[:-10])
    cases.append({'file': 'bad-npy', 'layout': 'gathered', 'block_size': 16, 'args': [], 'error': 'truncated',
                  'note': '.npy data cut 10 bytes short'})
    add('bad-bigendian.npy', npy_bytes(arr.astype('>i2')), 'gathered', 'big-endian', note='big-endian .npy')
    hdr = "{'descr': '|O', 'fortran_order': False, 'shape': (8, 1, 8), }"
    hdr = hdr + ' ' * (-(10 + len(hdr) + 1) % 64) + '\n'
    add('bad-object.npy', b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr.encode('latin1') + bytes(64),
        'gathered', 'dtype', note='object dtype')
    z = npz_bytes(good, compressed=False)
    add('bad-truncated.npz', z[:len(z) // 2], 'gathered', 'zip', note='zip cut in half (no central directory)')
    return cases


def fresh_out(doc, default_folder):
    """The folder of --out (default cli/src/test/resources/DEFAULT_FOLDER), emptied: every generator of test dumps
    writes its whole folder anew."""
    ap = argparse.ArgumentParser(description=doc.split('\n')[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument('--out', default=os.path.join(here, '..', '..', 'cli', 'src', 'test', 'resources', default_folder))
    out = os.path.normpath(ap.parse_args().out)
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    return out


def write_manifest(out, file, manifest):
    """Writes the manifest (sorted keys, one space of indent, a final newline) and prints the folder's size."""
    with open(os.path.join(out, file), 'w') as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write('\n')
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs)
    print('wrote %s: %d bytes' % (out, total))


def main():
    out = fresh_out(__doc__, 'dumps')
    write_manifest(out, 'dumps.json', {
        'generator': 'golden/generator/dumps.py',
        'seed': SEED,
        'definition': 'c = sum_(layer,head) (2*(layer*2^16+head)+1) * sum_j x_j*(2j+1) mod 2^64, j = t*P + p',
        'dumps': good_dumps(out),
        'diffs': diff_dumps(out),
        'malformed': malformed_dumps(out),
    })


if __name__ == '__main__':
    main()
