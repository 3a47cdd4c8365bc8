#!/usr/bin/env python3
"""The bound `kvchecksum sum` is compared with: a NumPy memmap sum of every KV byte of a safetensors dump, read as
little-endian uint64 words (the checksum reads the same bytes as 8-byte pieces). Prints the sum."""
import json
import struct
import sys

import numpy as np

path = sys.argv[1]
with open(path, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
start = 8 + n
end = max(v["data_offsets"][1] for k, v in header.items() if k != "__metadata__")
m = np.memmap(path, dtype="<u8", mode="r", offset=start, shape=(end // 8,))
total = 0
step = 1 << 24  # 128 MiB at a time keeps the temporary small
for i in range(0, m.shape[0], step):
    total = (total + int(m[i:i + step].sum(dtype=np.uint64))) % (1 << 64)  # NumPy's sum wraps modulo 2^64
print(total)
