#!/usr/bin/env python3
"""Writes the command line's test dumps for index-K caches, straddling pieces and padded cells, with the block
checksums NumPy expects for them (cli/src/test/resources/dumps-cells/, manifest cells.json).

The checksums come from generate_cells.py's NumPy implementation (a cell = K bytes then V bytes, P = ceil(bytes/8),
the last piece zero-padded when cells are padded), computed from the LOGICAL cells before they are written into a
dump; the file writers are dumps.py's. An index-K cache (`layers.<L>.index_k`) is a second cache of layer L: its heads
follow the layer's KV heads (head offset + KV heads, unless --index-k-head says otherwise).

  indexk-bf16.safetensors            gathered: layers 2 and 5, K+V bf16 [40, 2, 64] and index_k bf16 [40, 1, 64]
  indexk-bf16-flipped.safetensors    the same with bit 3 of one byte of layers.5.index_k flipped (token 21: block 1)
  indexk-fp8-paged.safetensors       vllm-mla: layer 3 kv_cache (6, 16, 576) u8 and index_k (6, 16, 132) u8 (fp8 128
                                     + 4-byte scale), 53 tokens on 4 pages; needs --pad-cells
  indexk-fp8-paged-flipped.safetensors  the same with one bit of index_k flipped (token 37: block 2 of 16)
  straddle-k4-v4.npz                 gathered fp16 K and V of 2 values (4 bytes each): one piece straddles K and V
  odd-k6.safetensors                 gathered bf16 K of 3 values (6-byte cells): needs --pad-cells

Usage: python3 golden/generator/dumps_cells.py [--out DIR]
"""
import json
import os

import numpy as np

from dumps import T, fresh_out, safetensors_bytes, npz_bytes
from generate_cells import Cache, expected

U8 = np.uint8


def rng_for(name):
    return np.random.default_rng(list(name.encode('ascii')))


def random_bytes(rng, *shape):
    return np.frombuffer(rng.bytes(int(np.prod(shape))), dtype=U8).reshape(shape).copy()


def per_head(cells):
    """[tokens, heads, bytes] -> [heads, tokens, bytes], the order expected() reads."""
    return np.ascontiguousarray(cells.transpose(1, 0, 2))


def differing(a, b):
    return [i for i, (x, y) in enumerate(zip(a, b)) if x != y]


def case(caches, num_tokens, block_size, args, pad):
    values, _ = expected(caches, 0, num_tokens, block_size, 0, False)
    return {'args': args, 'pad_cells': pad, 'block_size': block_size, 'first_block': 0, 'num_tokens': num_tokens,
            'values': values}


def indexk_bf16(out, dumps):
    rng = rng_for('indexk-bf16')
    N = 40
    kv = {L: (random_bytes(rng, N, 2, 128), random_bytes(rng, N, 2, 128)) for L in (2, 5)}
    ik = {L: random_bytes(rng, N, 1, 128) for L in (2, 5)}

    def tensors(ikk):
        t = {}
        for L in (2, 5):
            t['layers.%d.k' % L] = T('BF16', (N, 2, 64), kv[L][0])
            t['layers.%d.v' % L] = T('BF16', (N, 2, 64), kv[L][1])
            t['layers.%d.index_k' % L] = T('BF16', (N, 1, 64), ikk[L])
        return t

    def caches(ikk, head_offset=0, index_head=None):
        out_ = []
        for L in (2, 5):
            out_.append(Cache(L, head_offset, 2, 128, 128, per_head(np.concatenate(kv[L], axis=2))))
            out_.append(Cache(L, head_offset + 2 if index_head is None else index_head, 1, 128, 0, per_head(ikk[L])))
        return out_

    with open(os.path.join(out, 'indexk-bf16.safetensors'), 'wb') as f:
        f.write(safetensors_bytes(tensors(ik)))
    flipped = {L: a.copy() for L, a in ik.items()}
    flipped[5][21, 0, 77] ^= 1 << 3
    with open(os.path.join(out, 'indexk-bf16-flipped.safetensors'), 'wb') as f:
        f.write(safetensors_bytes(tensors(flipped)))
    assert differing(case(caches(ik), N, 16, [], False)['values'], case(caches(flipped), N, 16, [], False)['values']) == [1]
    dumps.append({'file': 'indexk-bf16.safetensors', 'layout': 'gathered', 'skipped_without_padding': False,
                  'flipped': {'file': 'indexk-bf16-flipped.safetensors', 'tensor': 'layers.5.index_k', 'token': 21,
                              'block_size': 16, 'block': 1,
                              'values': case(caches(flipped), N, 16, [], False)['values']},
                  'cases': [case(caches(ik), N, 16, [], False),
                            case(caches(ik), N, 16, ['--pad-cells'], True),
                            case(caches(ik, 2), N, 8, ['--head-offset', '2'], False),
                            case(caches(ik, 0, 9), N, 16, ['--index-k-head', '9'], False)]})


def indexk_fp8_paged(out, dumps):
    rng = rng_for('indexk-fp8-paged')
    N, pages, page = 53, 6, 16
    table = [4, 1, 5, 2]
    latent = random_bytes(rng, N, 1, 576)
    index = random_bytes(rng, N, 1, 132)

    def tensors(ikk):
        kv_cache = random_bytes(rng_for('filler-kv'), pages, page, 576)
        ik_cache = random_bytes(rng_for('filler-ik'), pages, page, 132)
        for t in range(N):
            kv_cache[table[t // page], t % page] = latent[t, 0]
            ik_cache[table[t // page], t % page] = ikk[t, 0]
        return {'layers.3.kv_cache': T('U8', kv_cache.shape, kv_cache),
                'layers.3.index_k': T('U8', ik_cache.shape, ik_cache),
                'block_table': T('I32', (len(table),), np.array(table, dtype='<i4')),
                'num_tokens': T('I64', (), np.array(N, dtype='<i8'))}

    def caches(ikk):
        return [Cache(3, 0, 1, 576, 0, per_head(latent)), Cache(3, 1, 1, 132, 0, per_head(ikk))]

    with open(os.path.join(out, 'indexk-fp8-paged.safetensors'), 'wb') as f:
        f.write(safetensors_bytes(tensors(index)))
    flipped = index.copy()
    flipped[37, 0, 130] ^= 1 << 6   # a byte of the 4-byte scale
    with open(os.path.join(out, 'indexk-fp8-paged-flipped.safetensors'), 'wb') as f:
        f.write(safetensors_bytes(tensors(flipped)))
    assert differing(case(caches(index), N, 16, [], True)['values'], case(caches(flipped), N, 16, [], True)['values']) == [2]
    dumps.append({'file': 'indexk-fp8-paged.safetensors', 'layout': 'vllm-mla', 'skipped_without_padding': True,
                  'flipped': {'file': 'indexk-fp8-paged-flipped.safetensors', 'tensor': 'layers.3.index_k', 'token': 37,
                              'block_size': 16, 'block': 2,
                              'values': case(caches(flipped), N, 16, ['--pad-cells'], True)['values']},
                  'cases': [case(caches(index), N, 16, ['--pad-cells'], True),
                            case(caches(index), N, 32, ['--pad-cells'], True)]})


def straddle(out, dumps):
    rng = rng_for('straddle-k4-v4')
    N = 19
    k = random_bytes(rng, N, 2, 4)
    v = random_bytes(rng, N, 2, 4)
    with open(os.path.join(out, 'straddle-k4-v4.npz'), 'wb') as f:
        f.write(npz_bytes({'layers.1.k': T('F16', (N, 2, 2), k), 'layers.1.v': T('F16', (N, 2, 2), v)}, compressed=False))
    caches = [Cache(1, 0, 2, 4, 4, per_head(np.concatenate([k, v], axis=2)))]
    dumps.append({'file': 'straddle-k4-v4.npz', 'layout': 'gathered', 'skipped_without_padding': False,
                  'cases': [case(caches, N, 8, [], False)]})


def odd(out, dumps):
    rng = rng_for('odd-k6')
    N = 8
    k = random_bytes(rng, N, 1, 6)
    with open(os.path.join(out, 'odd-k6.safetensors'), 'wb') as f:
        f.write(safetensors_bytes({'layers.0.k': T('BF16', (N, 1, 3), k)}))
    dumps.append({'file': 'odd-k6.safetensors', 'layout': 'gathered', 'skipped_without_padding': True,
                  'cases': [case([Cache(0, 0, 1, 6, 0, per_head(k))], N, 4, ['--pad-cells'], True)]})


def main():
    out = fresh_out(__doc__, 'dumps-cells')
    np.seterr(over='ignore')
    dumps = []
    indexk_bf16(out, dumps)
    indexk_fp8_paged(out, dumps)
    straddle(out, dumps)
    odd(out, dumps)
    with open(os.path.join(out, 'cells.json'), 'w') as f:
        json.dump({'generator': 'golden/generator/dumps_cells.py', 'dumps': dumps}, f, indent=1, sort_keys=True)
        f.write('\n')
    print('wrote %s: %d dumps' % (out, len(dumps)))


if __name__ == '__main__':
    main()
