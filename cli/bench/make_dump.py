#!/usr/bin/env python3
"""Writes a gathered bf16 KV dump (safetensors) of about SIZE GiB: Llama-3-8B shape, 32 layers x 8 KV heads x 128.

Usage: make_dump.py OUT.safetensors [GiB]   (default 2). Seeded: the same bytes every time."""
import json
import struct
import sys

import numpy as np

out = sys.argv[1]
gib = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
layers, heads, dim = 32, 8, 128
per_token = layers * 2 * heads * dim * 2
tokens = int(gib * (1 << 30)) // per_token
tensor_bytes = tokens * heads * dim * 2
header, off = {}, 0
for l in range(layers):
    for kind in ("k", "v"):
        header[f"layers.{l}.{kind}"] = {"dtype": "BF16", "shape": [tokens, heads, dim], "data_offsets": [off, off + tensor_bytes]}
        off += tensor_bytes
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
rng = np.random.default_rng(20261129)
chunk = rng.integers(0, 1 << 16, size=tensor_bytes // 2, dtype=np.uint16)  # one tensor's worth, rolled per tensor
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for i in range(2 * layers):
        f.write(np.roll(chunk, i * 4097).tobytes())
print(f"{out}: {tokens} tokens, {off / (1 << 30):.2f} GiB of KV")
