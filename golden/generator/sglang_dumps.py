#!/usr/bin/env python3
"""Writes the SGLang dumps the command-line tests read (--layout sglang), with what NumPy and zlib expect for them.

Independent of the Java code.  For every dump and case it records:
  values     the block checksums from the definition (dumps.block_checksums, NumPy and plain Python integers)
  digest     SGLang's page digest: zlib.adler32 over every layer's K pages, then every layer's V pages (layers in
             number order, the request's pages in request order, whole pages of page_size slots), then every state
             row (`state.<name>` tensors, in name order)
  signature  our layout signature (docs/sglang.md; SGLang's own hash is not in the sources, so this one is ours):
             FNV-1a 64 over little-endian uint64 words [page_size, buffer count, item length per buffer], the item
             lengths being each layer's K page bytes, then each layer's V page bytes, then each state row's bytes.

Layout (SGLang's token-to-KV pool; names as the CLI reads them):
  layers.<L>.k_buffer, layers.<L>.v_buffer   [slots, heads, head_dim]   (MLA: layers.<L>.kv_buffer [slots, 1, 576])
  req_to_token                               1-D int32: the slot of each request position from F*B on
  page_size                                  one int64 (absent: 1)
  num_tokens                                 optional one int64
  state.<name>                               optional: the request's row of a state buffer
Slots of one page are consecutive from a multiple of page_size; page 0 is never used (SGLang keeps slot 0 as a
padding slot); every slot the request does not use holds random garbage.

Output: DIR/*.safetensors|*.npz and DIR/sglang.json.  Usage: python3 golden/generator/sglang_dumps.py [--out DIR]
(default cli/src/test/resources/sglang-dumps).  Reruns are byte-identical.
"""
import zlib

import numpy as np

from dumps import T, U8, block_checksums, cdiv, draw, fresh_out, rng_for, write, write_manifest, DTYPES

M64 = (1 << 64) - 1
FNV_OFFSET = 0xcbf29ce484222325
FNV_PRIME = 0x100000001b3


def layout_signature(page_size, item_lengths):
    """FNV-1a 64 of the little-endian uint64 words [page_size, len(item_lengths), *item_lengths]."""
    h = FNV_OFFSET
    for w in [page_size, len(item_lengths)] + list(item_lengths):
        for b in int(w).to_bytes(8, 'little'):
            h = ((h ^ b) * FNV_PRIME) & M64
    return h


class Pool:
    """One request scattered into SGLang's pool: per layer k/v buffers [slots, heads, cell bytes] of garbage, the
    request's logical tokens written at the slots of the pages drawn for it."""

    def __init__(self, rng, layers, pool_pages, page_size, start=0):
        self.layers, self.page_size, self.start = layers, page_size, start
        tokens, heads, _ = layers[0][1].shape
        self.n_pages = cdiv(tokens, page_size)
        self.pages = [int(p) for p in 1 + rng.permutation(pool_pages - 1)[:self.n_pages]]
        self.slots = np.array([self.pages[i // page_size] * page_size + i % page_size for i in range(tokens)],
                              dtype='<i4')
        n = pool_pages * page_size
        self.k, self.v = [], []
        for (layer, k, v) in layers:
            kb = rng.integers(0, 256, size=(n, heads, k.shape[2]), dtype=U8)
            kb[self.slots] = k
            self.k.append(kb)
            if v is not None:
                vb = rng.integers(0, 256, size=(n, heads, v.shape[2]), dtype=U8)
                vb[self.slots] = v
                self.v.append(vb)
            else:
                self.v.append(None)

    def tensors(self, dtype, mla=False, with_page_size=True, num_tokens=None, states=None):
        e = DTYPES[dtype][0]
        ts = {}
        for (layer, _, _), kb, vb in zip(self.layers, self.k, self.v):
            if mla:
                ts['layers.%d.kv_buffer' % layer] = T(dtype, kb.shape[:2] + (kb.shape[2] // e,), kb)
            else:
                ts['layers.%d.k_buffer' % layer] = T(dtype, kb.shape[:2] + (kb.shape[2] // e,), kb)
                ts['layers.%d.v_buffer' % layer] = T(dtype, vb.shape[:2] + (vb.shape[2] // e,), vb)
        ts['req_to_token'] = T('I32', self.slots.shape, self.slots)
        if with_page_size:
            ts['page_size'] = T('I64', (), np.array(self.page_size, dtype='<i8'))
        if num_tokens is not None:
            ts['num_tokens'] = T('I64', (), np.array(num_tokens, dtype='<i8'))
        for name, row in sorted((states or {}).items()):
            ts['state.' + name] = T('U8', row.shape, row)
        return ts

    def digest(self, num_tokens, states=None):
        """(adler32, signature, num_pages) of positions [start, num_tokens): whole pages, K then V, then states."""
        p = self.page_size
        used = self.pages[:cdiv(num_tokens - self.start, p)]
        stream, items = [], []
        for bufs in (self.k, self.v):
            for b in bufs:
                if b is None:
                    continue
                items.append(p * b.shape[1] * b.shape[2])
                for page in used:
                    stream.append(b[page * p:(page + 1) * p].tobytes())
        for name, row in sorted((states or {}).items()):
            items.append(row.nbytes)
            stream.append(row.tobytes())
        return zlib.adler32(b''.join(stream)), layout_signature(p, items), len(used)


def case(pool, block_size, first_block=0, head_offset=0, num_tokens=None, arg_num_tokens=None, states=None):
    tokens = pool.layers[0][1].shape[0]
    n = num_tokens if num_tokens is not None else first_block * block_size + tokens
    digest, signature, pages = pool.digest(n, states)
    return {'args': {'block_size': block_size, 'first_block': first_block, 'head_offset': head_offset,
                     'num_tokens': arg_num_tokens},
            'num_tokens': n, 'first_block': first_block,
            'values': [str(c) for c in block_checksums(pool.layers, n, first_block, block_size, head_offset)],
            'sglang_digest': {'digest': digest, 'signature': str(signature), 'page_size': pool.page_size,
                              'first_token': pool.start, 'num_pages': pages}}


def good_dumps(out):
    dumps, extra = [], {}

    def add(file, fmt, dtype, tensors, cases, note):
        write(out, file, fmt, tensors)
        dumps.append({'file': file, 'format': fmt, 'layout': 'sglang', 'dtype': dtype, 'note': note, 'cases': cases})

    # The producer: 3 layers x 2 heads x 64 bf16, 55 tokens (the last page partial), page 16, a pool of 8 pages.
    r = rng_for('sglang-bf16-page16')
    L = draw(r, [0, 1, 2], 55, 2, 128, 128)
    prod = Pool(r, L, 8, 16)
    add('sglang-bf16-page16.safetensors', 'safetensors', 'BF16', prod.tensors('BF16'), [
        case(prod, 16), case(prod, 32), case(prod, 8), case(prod, 16, head_offset=2),
        case(prod, 16, num_tokens=40, arg_num_tokens=40)],
        'SGLang pool 3 layers x [128 slots, 2, 64] bf16, page 16, 55 tokens in pages drawn from 1..7')

    # The same request in a consumer with page size 8 (another pool, other pages): a peer with another layout.
    r = rng_for('sglang-bf16-page8')
    cons = Pool(r, L, 12, 8)
    add('sglang-bf16-page8.safetensors', 'safetensors', 'BF16', cons.tensors('BF16'), [case(cons, 16), case(cons, 8)],
        'the request of sglang-bf16-page16 in a pool of page size 8 (12 pages)')

    # The producer's pool with one bit flipped: layer 1, V, position 37, head 0, byte 3, bit 2 (block 2 of 16).
    flipped = Pool.__new__(Pool)
    flipped.__dict__.update(prod.__dict__)
    flipped.v = [b.copy() for b in prod.v]
    flipped.v[1][prod.slots[37], 0, 3] ^= U8(0x04)
    changed = [(l, k, v.copy()) for (l, k, v) in L]
    changed[1][2][37, 0, 3] ^= U8(0x04)
    flipped.layers = changed
    add('sglang-bf16-page16-flipped.safetensors', 'safetensors', 'BF16', flipped.tensors('BF16'), [case(flipped, 16)],
        'sglang-bf16-page16 with bit 2 of V byte 3 of layer 1, head 0, position 37 flipped (block 2 of 16)')
    extra['flipped'] = {'producer': 'sglang-bf16-page16.safetensors', 'consumer': 'sglang-bf16-page16-flipped.safetensors',
                        'block_size': 16, 'mismatched_blocks': [2]}
    extra['peer'] = {'producer': 'sglang-bf16-page16.safetensors', 'consumer': 'sglang-bf16-page8.safetensors',
                     'block_size': 16}

    # MLA: kv_buffer [slots, 1, 576] fp8 as U8, page 4, two state rows, npz; no page_size default would be wrong here.
    r = rng_for('sglang-mla-u8-page4')
    L = draw(r, [0, 3], 21, 1, 576, 0)
    mla = Pool(r, L, 9, 4)
    states = {'ssm': r.integers(0, 256, size=(3, 16), dtype=U8), 'conv': r.integers(0, 256, size=(40,), dtype=U8)}
    add('sglang-mla-u8-page4.npz', 'npz', 'U8', mla.tensors('U8', mla=True, states=states),
        [case(mla, 4, states=states), case(mla, 16, states=states)],
        'SGLang MLA pool 2 layers x [36 slots, 1, 576] fp8 as U8, page 4, 21 tokens, state rows conv (40 B), ssm (48 B)')

    # A consumer's dump from position 32 on (a prefix hit of two 16-token blocks), page 8, f16, num_tokens tensor.
    r = rng_for('sglang-f16-from32')
    L = draw(r, [0, 1], 29, 1, 256, 256)
    late = Pool(r, L, 6, 8, start=32)
    add('sglang-f16-from32.npz', 'npz', 'F16', late.tensors('F16', num_tokens=61),
        [case(late, 16, first_block=2, num_tokens=61), case(late, 32, first_block=1, num_tokens=61)],
        'SGLang pool 2 layers x [48 slots, 1, 128] f16, page 8, positions 32..60 (--first-block), num_tokens 61')

    # Page size 1 (SGLang's default; no page_size tensor): every slot is a page, any order is valid.
    r = rng_for('sglang-f32-page1')
    L = draw(r, [0, 1], 13, 2, 32, 32)
    one = Pool(r, L, 20, 1)
    add('sglang-f32-page1.safetensors', 'safetensors', 'F32', one.tensors('F32', with_page_size=False),
        [case(one, 4), case(one, 16)], 'SGLang pool 2 layers x [20 slots, 2, 8] f32, no page_size tensor (page 1)')
    return dumps, extra


def malformed_dumps(out):
    """SGLang dumps the CLI must refuse with exit 65 and one line naming the problem."""
    r = rng_for('sglang-malformed')
    L = draw(r, [0, 1], 12, 1, 16, 16)
    pool = Pool(r, L, 5, 4)
    cases = []

    def add(file, tensors, error, args=None, note='', block_size=4):
        write(out, file, 'safetensors', tensors)
        cases.append({'file': file, 'layout': 'sglang', 'block_size': block_size, 'args': args or [], 'error': error,
                      'note': note})

    good = pool.tensors('BF16')
    bad = dict(good)
    s = pool.slots.copy()
    s[6] += 1  # position 6 of the page holding 4..7 jumps a slot
    bad['req_to_token'] = T('I32', s.shape, s)
    add('sglang-bad-not-consecutive.safetensors', bad, 'position 6', note='req_to_token[6] is not the next slot of its page')
    bad = dict(good)
    s = pool.slots.copy()
    s[4:8] += 1  # the page of positions 4..7 starts at a slot that is not a multiple of 4
    bad['req_to_token'] = T('I32', s.shape, s)
    add('sglang-bad-unaligned-page.safetensors', bad, 'multiple of the page size', note='a page starting off a multiple of 4')
    bad = dict(good)
    s = pool.slots.copy()
    s[0:4] = [20, 21, 22, 23]
    bad['req_to_token'] = T('I32', s.shape, s)
    add('sglang-bad-slot-past-pool.safetensors', bad, 'past the pool', note='slots 20..23 in a pool of 20 slots')
    bad = dict(good)
    del bad['req_to_token']
    add('sglang-bad-no-req-to-token.safetensors', bad, 'req_to_token', note='no req_to_token')
    bad = dict(good)
    bad['req_to_token'] = T('I32', (3, 4), pool.slots.reshape(3, 4))
    add('sglang-bad-2d-req-to-token.safetensors', bad, '1-D', note='the whole 2-D req_to_token pool, not one row')
    add('sglang-bad-first-block.safetensors', good, 'inside a page', args=['--first-block', '1'], block_size=2,
        note='position 2 is inside a page of 4')
    bad = dict(good)
    bad['layers.1.v_buffer'] = T('BF16', (16, 1, 8), r.integers(0, 256, size=(16, 1, 16), dtype=U8))
    add('sglang-bad-slots-differ.safetensors', bad, 'shape', note='V of layer 1 holds 16 slots, K 20')
    return cases


def main():
    out = fresh_out(__doc__, 'sglang-dumps')
    dumps, extra = good_dumps(out)
    manifest = {
        'generator': 'golden/generator/sglang_dumps.py',
        'signature': 'FNV-1a 64 of LE uint64 [page_size, n_buffers, K page bytes per layer..., V page bytes per layer...,'
                     ' state row bytes...]',
        'digest': 'zlib.adler32(K pages of every layer, then V pages, then state rows in name order)',
        'signature_examples': [
            {'page_size': 16, 'items': [8192] * 4, 'signature': str(layout_signature(16, [8192] * 4))},
            {'page_size': 1, 'items': [], 'signature': str(layout_signature(1, []))}],
        'dumps': dumps,
        'malformed': malformed_dumps(out),
    }
    manifest.update(extra)
    write_manifest(out, 'sglang.json', manifest)


if __name__ == '__main__':
    main()
