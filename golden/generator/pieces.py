"""What the generators of padded-piece vectors share (generate_cells.py, generate_combinations.py): the piece
arithmetic from the definition, MIX, and the writing of a vector folder.

  * a cell's bytes are read as little-endian uint64 pieces, P = ceil(bytes / 8), the last piece zero-padded;
  * j = t*P + p, s = sum x_j (2j+1) mod 2^64; in the mixed mode x_j is replaced by MIX(x_j) (three Feistel rounds,
    docs/detection.md), here in NumPy and in plain Python ints (generate_mixed.py checks one against the other).
"""
import json
import os

import numpy as np

M64 = (1 << 64) - 1
M32 = (1 << 32) - 1
U64 = np.uint64
ALIGN = 64


def cdiv(a, b):
    return -(-a // b)


def mix_int(x):
    """MIX on a Python int, on its two 32-bit halves, as docs/detection.md defines it."""
    hi, lo = x >> 32, x & M32
    p = lo * 0x9E3779B9
    hi ^= (p ^ (p >> 32)) & M32
    p = hi * 0x85EBCA6B
    lo ^= (p ^ (p >> 32)) & M32
    p = lo * 0xC2B2AE35
    hi ^= (p ^ (p >> 32)) & M32
    return (hi << 32) | lo


def mix_np(x):
    """MIX on a uint64 array (wraps mod 2^64)."""
    lo = U64(M32)
    s = U64(32)
    p = (x & lo) * U64(0x9E3779B9)
    x = x ^ ((p ^ (p >> s)) << s)
    p = (x >> s) * U64(0x85EBCA6B)
    x = x ^ ((p ^ (p >> s)) & lo)
    p = (x & lo) * U64(0xC2B2AE35)
    return x ^ ((p ^ (p >> s)) << s)


def slice_values(cells, t0, N, B, F, mixed):
    """NumPy: the slice sums of one head's request cells [T][C] (tokens t0 .. N-1, cells zero-padded to whole
    pieces) for blocks F.. ."""
    T, C = cells.shape
    P = cdiv(C, 8)
    if T == 0:
        return []
    whole = np.zeros((T, 8 * P), dtype=np.uint8)
    whole[:, :C] = cells
    x = whole.view('<u8').reshape(T, P).astype(U64)
    if mixed:
        x = mix_np(x)
    j = np.arange(t0, N, dtype=U64)[:, None] * U64(P) + np.arange(P, dtype=U64)[None, :]
    per_token = (x * (j * U64(2) + U64(1))).sum(axis=1, dtype=U64)
    return [int(per_token[b * B - t0:min((b + 1) * B, N) - t0].sum(dtype=U64)) for b in range(F, cdiv(N, B))]


def write_vectors(out, vs):
    """Writes vectors [(json, bin bytes)] as NAME.json + NAME.bin and index.json into OUT, replacing every .json and
    .bin already there."""
    os.makedirs(out, exist_ok=True)
    for f in sorted(os.listdir(out)):
        if f.endswith('.json') or f.endswith('.bin'):
            os.remove(os.path.join(out, f))
    for js, data in vs:
        with open(os.path.join(out, js['name'] + '.json'), 'w', encoding='ascii', newline='\n') as f:
            f.write(json.dumps(js, sort_keys=True, indent=1) + '\n')
        with open(os.path.join(out, js['name'] + '.bin'), 'wb') as f:
            f.write(data)
    with open(os.path.join(out, 'index.json'), 'w', encoding='ascii', newline='\n') as f:
        f.write(json.dumps({'vectors': sorted(js['name'] for js, _ in vs)}, sort_keys=True, indent=1) + '\n')
