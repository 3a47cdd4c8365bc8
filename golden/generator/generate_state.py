#!/usr/bin/env python3
"""Golden state-row digests (per request, per state buffer: Mamba/SSM state rows).

Definition (docs/definition.md, "State rows"): a row of L bytes is read as P = ceil(L/8) little-endian 8-byte pieces,
the last one zero-padded at its END when L is not a multiple of 8 (its missing high bytes are 0);
    D = sum_{p<P} v(x_p) * (2p + 1)  mod 2^64,   v = identity (standard) or MIX = feistel3 (mixed),
i.e. the KV slice sum of a one-token request whose cell is the row. An empty row has D = 0.

Writes golden/src/main/resources/vectors-state/:
    state.bin   random bytes (seed: CRC-32 of "state-rows"), the memory every row lives in
    state.json  {"bytes": len(state.bin), "cases": [{"name", "description", "rows": [{"name", "offset", "length",
                 "standard", "mixed"}]}]}   (digests as unsigned decimal strings; offsets into state.bin)
Each case is one call with its rows in order. Rows cover every length 0..72, lengths around 2^k, unaligned offsets,
rows touching byte 0 and the buffer's last byte, and conv/ssm-sized rows.

Checks before writing: the NumPy digests against a plain Python-int loop over the bytes; MIX against
generate_mixed's Python-int mixer on fixed examples; tiny hand-computed cases.

Usage: python3 golden/generator/generate_state.py [--out DIR]
"""
import argparse
import json
import os
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate_mixed as gm  # noqa: E402  (the mixer only; it shares nothing with the Java code)

U64 = np.uint64
M64 = (1 << 64) - 1
SIZE = 40000


def digest_np(buf, offset, length, mixed):
    row = np.frombuffer(buf, dtype=np.uint8)[offset:offset + length]
    padded = np.zeros(-(-length // 8) * 8, dtype=np.uint8)
    padded[:length] = row
    x = padded.view('<u8').astype(U64)
    if mixed:
        x = gm.mix_np(x)
    w = np.arange(x.size, dtype=U64) * U64(2) + U64(1)
    return int((x * w).sum(dtype=U64))


def digest_int(buf, offset, length, mixed):
    d = 0
    for p in range(0, length, 8):
        chunk = bytes(buf[offset + p:offset + min(p + 8, length)])
        x = int.from_bytes(chunk, 'little')            # fewer than 8 bytes: the high bytes are 0
        d += (gm.mix_int(x) if mixed else x) * (2 * (p // 8) + 1)
    return d & M64


def self_test():
    b = bytes(range(1, 17)) + b'\xff' * 8
    assert digest_int(b, 0, 0, False) == 0
    assert digest_int(b, 0, 1, False) == 1                       # one byte: piece 0x01, weight 1
    assert digest_int(b, 0, 8, False) == 0x0807060504030201
    assert digest_int(b, 0, 9, False) == (0x0807060504030201 + 9 * 3) & M64
    assert digest_int(b, 16, 8, False) == M64                    # 2^64 - 1 times weight 1
    assert digest_int(b, 16, 8, True) == gm.mix_int(M64)
    for x in gm.EXAMPLES:
        assert int(gm.mix_np(np.array([x], dtype=U64))[0]) == gm.mix_int(x)


def cases(size):
    rng = np.random.default_rng([zlib.crc32(b'state-rows'), 1])
    out = []

    def rows(pairs, prefix):
        return [(prefix + str(i), int(o), int(n)) for i, (o, n) in enumerate(pairs)]

    lengths = list(range(0, 73))
    offs = [int(rng.integers(0, size - 80)) for _ in lengths]
    out.append(('every-length', 'lengths 0..72, one row each, at random (mostly unaligned) offsets',
                rows(zip(offs, lengths), 'row')))
    aligned = [(int(rng.integers(0, (size - 80) // 8)) * 8, n) for n in (1, 7, 8, 9, 15, 16, 17, 31, 32, 33)]
    out.append(('aligned', '8-byte aligned offsets, lengths around whole pieces', rows(aligned, 'row')))
    pow2 = []
    for k in range(3, 13):
        for d in (-1, 0, 1):
            n = (1 << k) + d
            pow2.append((int(rng.integers(0, size - n)), n))
    out.append(('powers-of-two', 'lengths 2^k - 1, 2^k, 2^k + 1 for k = 3..12', rows(pow2, 'row')))
    edges = [(0, 3), (2, 5), (0, 0), (1, 1), (0, 8), (0, 13), (size - 13, 13), (size - 3, 3), (size - 8, 8),
             (size, 0), (5, 2)]
    out.append(('edges', 'rows touching byte 0 and the last byte of the memory, rows ending before byte 8, '
                'empty rows at both ends', rows(edges, 'row')))
    out.append(('mamba', 'conv and ssm rows of one request, sized like a small Mamba layer (conv 4x1536x2 bytes, '
                'ssm 24x16x16x4 + 5 bytes)',
                [('conv', 64, 4 * 1536 * 2), ('ssm', 12349, 24 * 16 * 16 * 4 + 5)]))
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(os.path.dirname(here), 'src', 'main', 'resources', 'vectors-state')
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=default_out, help='output folder (default: %(default)s)')
    args = ap.parse_args()
    np.seterr(over='ignore')
    self_test()
    buf = np.random.default_rng(zlib.crc32(b'state-rows')).bytes(SIZE)
    doc_cases = []
    n = 0
    for name, description, rws in cases(SIZE):
        out_rows = []
        for rname, o, length in rws:
            assert 0 <= o and o + length <= SIZE
            std, mix = digest_np(buf, o, length, False), digest_np(buf, o, length, True)
            assert std == digest_int(buf, o, length, False), (name, rname)
            assert mix == digest_int(buf, o, length, True), (name, rname)
            assert length == 0 or std != mix, (name, rname)   # the mode changes every non-empty row
            out_rows.append({'name': rname, 'offset': o, 'length': length, 'standard': str(std), 'mixed': str(mix)})
            n += 1
        doc_cases.append({'name': name, 'description': description, 'rows': out_rows})
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'state.bin'), 'wb') as f:
        f.write(buf)
    with open(os.path.join(args.out, 'state.json'), 'w', encoding='ascii', newline='\n') as f:
        f.write(json.dumps({'bytes': SIZE, 'cases': doc_cases}, sort_keys=True, indent=1) + '\n')
    print('%d state rows in %d cases (each re-checked with Python ints) -> %s' % (n, len(doc_cases), args.out))


if __name__ == '__main__':
    main()
