#!/usr/bin/env python3
"""Golden vectors for SGLang's page digest (SPEC section 6; docs/definition.md, "SGLang's page digest").

The digest of one request is Adler-32 (Python's zlib.adler32, starting value 1) of one ordered byte stream:
every layer's K pages (layers in the group's order, each layer's pages in the request's page order), then every
layer's V pages in the same order (none for MLA, whose kv_buffer is K only), then the request's state rows in
the order listed. An SGLang buffer is [slots, heads, head_dim] of elem_bytes each, page p being slots
[p*page_size, (p+1)*page_size), so a page is page_size*heads*head_dim*elem_bytes contiguous bytes. The pages are
those of the checksummed range: tokens [first_block*block_size, num_tokens), page_table[i] holding tokens
first_block*block_size + [i*page_size, (i+1)*page_size); a partial last page is digested whole (as in SGLang).

The stream is built here with NumPy slicing of the buffers, independently of the Java code; the expected value
comes from zlib.adler32 and is cross-checked against Adler-32 written from its definition in NumPy
(A = 1 + sum x_i, B = n + sum (n - i) x_i, mod 65521).

Writes golden/src/main/resources/vectors-digest/: index.json ({"vectors": [names]}) and, per vector, NAME.bin
(every buffer at its offset, random filler between them) and NAME.json with exactly these keys:
  description, elem_bytes, page_size, heads, head_dim, num_slots, layers (layer numbers), mla,
  k_buffers / v_buffers ([{offset, bytes}] per layer, into NAME.bin; v_buffers null for MLA),
  state_buffers ([{name, offset, bytes}]), state_rows ([{name, buffer, offset, length}]: buffer indexes
  state_buffers, offset within that buffer), page_table, num_tokens, first_block, block_size,
  stream_bytes, expected_digest (unsigned 32-bit, a JSON integer).
Every vector has a fixed seed (the CRC-32 of its name); JSON is written with sort_keys=True, indent=1.

Usage: python3 golden/generator/generate_digest.py [--out DIR]
"""
import argparse
import glob
import json
import os
import zlib

import numpy as np

MOD = 65521
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, '..', 'src', 'main', 'resources', 'vectors-digest')


def adler_numpy(stream):
    """Adler-32 from its definition, with exact integer arithmetic (chunked so int64 cannot overflow)."""
    x = np.frombuffer(stream, dtype=np.uint8).astype(np.int64)
    n = len(x)
    a, b = 1, 0
    step = 1 << 16
    for at in range(0, n, step):
        c = x[at:at + step]
        m = len(c)
        # each byte of this chunk adds to B once per position from its own to the chunk's end...
        w = np.arange(m, 0, -1, dtype=np.int64)
        b = (b + m * a + int((c * w).sum())) % MOD  # ...and the chunk's m positions each see the running A
        a = (a + int(c.sum())) % MOD
    return (b << 16) | a


def draw_bytes(rng, n, kind):
    if kind == 'ff':
        out = np.full(n, 0xFF, dtype=np.uint8)   # the largest sums: A and B wrap 65521 quickly
        flip = rng.integers(0, n, size=max(1, n // 97))
        out[flip] = rng.integers(0, 256, size=len(flip), dtype=np.uint8)
        return out
    return np.frombuffer(rng.bytes(n), dtype=np.uint8).copy()


def make(name, description, *, elem_bytes, page_size, heads, head_dim, num_pages, layers, mla=False,
         page_table, num_tokens, first_block=0, block_size=16, state=(), kind='random'):
    """state: [(name, rows, row_bytes, [(row, offset, length), ...])]: buffers of rows, and the spans digested."""
    seed = zlib.crc32(name.encode())
    rng = np.random.default_rng([seed, 1])
    num_slots = num_pages * page_size
    cell = heads * head_dim * elem_bytes
    buf_bytes = num_slots * cell
    parts = []            # (kind, index, array)
    ks = [draw_bytes(rng, buf_bytes, kind).reshape(num_slots, heads, head_dim * elem_bytes) for _ in layers]
    vs = None if mla else [draw_bytes(rng, buf_bytes, kind).reshape(num_slots, heads, head_dim * elem_bytes)
                           for _ in layers]
    states = [(sname, draw_bytes(rng, rows * row_bytes, kind).reshape(rows, row_bytes), spans)
              for sname, rows, row_bytes, spans in state]
    # the stream, by slicing [slots, heads, dim] buffers into pages of page_size slots
    start = first_block * block_size
    used = -(-(num_tokens - start) // page_size)
    pages = page_table[:used]
    stream = bytearray()
    for group in ([ks] if mla else [ks, vs]):
        for buf in group:
            for p in pages:
                stream += buf[p * page_size:(p + 1) * page_size].tobytes()
    state_rows = []
    for i, (sname, arr, spans) in enumerate(states):
        for row, off, length in spans:
            flat = arr.reshape(-1)
            at = row * arr.shape[1] + off
            stream += flat[at:at + length].tobytes()
            state_rows.append({'name': sname, 'buffer': i, 'offset': at, 'length': length})
    stream = bytes(stream)
    digest = zlib.adler32(stream)
    check = adler_numpy(stream)
    if digest != check:
        raise SystemExit(f'{name}: zlib.adler32 {digest:#x} != Adler-32 from the definition {check:#x}')
    # the file: buffers at 64-byte-aligned offsets (plus 8 for every other buffer), random filler between
    blobs = [a.tobytes() for a in ks] + ([] if mla else [a.tobytes() for a in vs]) + [s[1].tobytes() for s in states]
    offsets = []
    at = 0
    for i, b in enumerate(blobs):
        at = -(-at // 64) * 64 + (8 if i % 2 else 0) + 64
        offsets.append(at)
        at += len(b)
    out = bytearray(np.random.default_rng([seed, 2]).bytes(at))
    for off, b in zip(offsets, blobs):
        out[off:off + len(b)] = b
    nk = len(layers)
    desc = {
        'description': description,
        'elem_bytes': elem_bytes, 'page_size': page_size, 'heads': heads, 'head_dim': head_dim,
        'num_slots': num_slots, 'layers': list(layers), 'mla': mla,
        'k_buffers': [{'offset': offsets[i], 'bytes': buf_bytes} for i in range(nk)],
        'v_buffers': None if mla else [{'offset': offsets[nk + i], 'bytes': buf_bytes} for i in range(nk)],
        'state_buffers': [{'name': s[0], 'offset': offsets[(nk if mla else 2 * nk) + i], 'bytes': s[1].nbytes}
                          for i, s in enumerate(states)],
        'state_rows': state_rows,
        'page_table': [int(p) for p in page_table], 'num_tokens': num_tokens, 'first_block': first_block,
        'block_size': block_size, 'stream_bytes': len(stream), 'expected_digest': digest,
    }
    return name, desc, bytes(out)


def perm(name, n, k):
    return [int(p) for p in np.random.default_rng([zlib.crc32(name.encode()), 3]).permutation(n)[:k]]


def vectors():
    v = []
    n = 'bf16-h2-d64-p16'
    v.append(make(n, 'bf16, 2 KV heads x 64, page size 16, 2 layers; 70 tokens: 5 pages out of order, the last one '
                     'partial (digested whole)', elem_bytes=2, page_size=16, heads=2, head_dim=64, num_pages=8,
                  layers=[0, 1], page_table=perm(n, 8, 5), num_tokens=70))
    n = 'bf16-h2-d64-p16-from-block2'
    v.append(make(n, 'as bf16-h2-d64-p16 from block 2 of 16 tokens (a consumer range): the table starts at token 32',
                  elem_bytes=2, page_size=16, heads=2, head_dim=64, num_pages=8, layers=[3, 5],
                  page_table=perm(n, 8, 3), num_tokens=70, first_block=2, block_size=16))
    n = 'fp16-h4-d32-p1'
    v.append(make(n, "fp16, 4 KV heads x 32, page size 1 (SGLang's default: a page is a slot), 2 layers, 37 tokens "
                     'in scattered slots', elem_bytes=2, page_size=1, heads=4, head_dim=32, num_pages=64,
                  layers=[0, 1], page_table=perm(n, 64, 37), num_tokens=37, block_size=8))
    n = 'fp8-h1-d128-p64'
    v.append(make(n, 'fp8 stored as uint8, 1 KV head x 128, page size 64, 3 layers, 150 tokens (3 pages, partial '
                     'last)', elem_bytes=1, page_size=64, heads=1, head_dim=128, num_pages=5, layers=[0, 1, 2],
                  page_table=perm(n, 5, 3), num_tokens=150))
    n = 'fp32-h8-d16-p8-state'
    v.append(make(n, 'fp32, 8 KV heads x 16, page size 8, 2 layers, 20 tokens, then two state buffers (conv, ssm) '
                     'rows of request 2 and a 0-byte row', elem_bytes=4, page_size=8, heads=8, head_dim=16,
                  num_pages=6, layers=[0, 1], page_table=perm(n, 6, 3), num_tokens=20,
                  state=[('conv', 4, 96, [(2, 0, 96)]), ('ssm', 3, 200, [(2, 0, 200), (1, 17, 0)])]))
    n = 'mla-bf16-d576-p32'
    v.append(make(n, 'MLA: kv_buffer [slots, 1, 576] bf16, K only, page size 32, 2 layers, 100 tokens',
                  elem_bytes=2, page_size=32, heads=1, head_dim=576, num_pages=6, layers=[0, 1], mla=True,
                  page_table=perm(n, 6, 4), num_tokens=100))
    n = 'fp8-h4-d64-p32-saturated'
    v.append(make(n, 'fp8 bytes nearly all 0xFF (A and B wrap 65521 within a few hundred bytes), 4 heads x 64, page '
                     'size 32, 2 layers, 300 tokens: a stream of 300 KiB, past 65521 bytes and several 5552-byte '
                     'blocks', elem_bytes=1, page_size=32, heads=4, head_dim=64, num_pages=12, layers=[0, 1],
                  page_table=perm(n, 12, 10), num_tokens=300, kind='ff'))
    n = 'state-only'
    v.append(make(n, 'no tokens (empty page range), one state row: the stream is the row alone', elem_bytes=2,
                  page_size=16, heads=1, head_dim=64, num_pages=2, layers=[0], page_table=[], num_tokens=0,
                  state=[('ssm', 2, 64, [(1, 0, 64)])]))
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=DEFAULT_OUT)
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    for f in glob.glob(os.path.join(out, '*.json')) + glob.glob(os.path.join(out, '*.bin')):
        os.remove(f)
    vs = vectors()
    for name, desc, blob in vs:
        with open(os.path.join(out, name + '.json'), 'w') as f:
            json.dump(desc, f, sort_keys=True, indent=1)
            f.write('\n')
        with open(os.path.join(out, name + '.bin'), 'wb') as f:
            f.write(blob)
    with open(os.path.join(out, 'index.json'), 'w') as f:
        json.dump({'vectors': sorted(n for n, _, _ in vs)}, f, sort_keys=True, indent=1)
        f.write('\n')
    print(f'generate_digest.py: {len(vs)} page-digest vectors in {out}')


if __name__ == '__main__':
    main()
