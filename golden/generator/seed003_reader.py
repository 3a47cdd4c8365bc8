#!/usr/bin/env python3
"""A consumer of seeds/003's final form and nothing else: what a vLLM scheduler of that series does with the request's
kv_transfer_params. It shares no code with payloads.py or the Java codec, knows no version 3 and no sections, and
ignores every key of kv_transfer_params but "kv_checksums" (seeds/003: proxies forward keys they do not know).

  /usr/bin/python3 golden/generator/seed003_reader.py PARAMS.json...

Each PARAMS.json holds one kv_transfer_params object. For each file it prints

  file NAME
  version V tp_size T num_tokens N
  group G fingerprint F block_size B start S values V1 V2 ...     (one line per group)

or, when the checksums cannot be read as the final form,

  file NAME
  error TYPE: MESSAGE

(an earlier release's version 3 with sections inline fails here: "too many values to unpack").
"""
import base64
import json
import os
import sys

import numpy as np

try:
    import msgpack
except ImportError:  # pragma: no cover - reported, not hidden
    sys.stderr.write("seed003_reader.py: python3 cannot import msgpack (Debian: apt-get install python3-msgpack)\n")
    sys.exit(2)


def read(params):
    """seeds/003: base64(msgpack((version, tp_size, num_tokens, [(group_id, fingerprint, block_size, start, values)])))"""
    version, tp_size, num_tokens, groups = msgpack.unpackb(base64.b64decode(params["kv_checksums"]))
    lines = ['version %d tp_size %d num_tokens %d' % (version, tp_size, num_tokens)]
    for group_id, fingerprint, block_size, start, values in groups:
        sums = np.frombuffer(values, dtype=np.dtype('<u8'))
        lines.append('group %d fingerprint %d block_size %d start %d values%s'
                     % (group_id, fingerprint, block_size, start, ''.join(' %d' % int(v) for v in sums)))
    return lines


def main():
    for path in sys.argv[1:]:
        with open(path) as fh:
            params = json.load(fh)
        sys.stdout.write('file %s\n' % os.path.basename(path))
        try:
            lines = read(params)
        except Exception as e:  # the reader's own failure is the result
            lines = ['error %s: %s' % (type(e).__name__, e)]
        sys.stdout.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
