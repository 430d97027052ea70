#!/usr/bin/env python3
"""probe_numpy.py IN OUT: numpy's float32 dot products served to
`parity reveal --exec 'python3 examples/reveal/probe_numpy.py {in} {out}'`.

Reads `a` and `b` [rows, n] (F32) from the safetensors file IN, writes
y[r] = (a[r] * b[r]).sum(dtype=float32) (numpy's own summation order) as
`y` [rows] F32 to OUT.  Needs numpy (Debian: python3-numpy)."""
import json
import struct
import sys

import numpy as np


def read(path):
    with open(path, "rb") as f:
        raw = f.read()
    (hl,) = struct.unpack("<Q", raw[:8])
    hdr = json.loads(raw[8 : 8 + hl])
    body = raw[8 + hl :]
    out = {}
    for name, t in hdr.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            sys.exit("probe_numpy.py: %s is %s, not F32" % (name, t["dtype"]))
        lo, hi = t["data_offsets"]
        out[name] = np.frombuffer(body[lo:hi], dtype="<f4").reshape(t["shape"])
    return out


def write(path, y):
    data = y.astype("<f4").tobytes()
    hdr = json.dumps({"y": {"dtype": "F32", "shape": [len(y)], "data_offsets": [0, len(data)]}}).encode()
    hdr += b" " * (-len(hdr) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)) + hdr + data)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: probe_numpy.py IN OUT")
    t = read(sys.argv[1])
    y = (t["a"] * t["b"]).sum(axis=1, dtype=np.float32)
    write(sys.argv[2], y)


if __name__ == "__main__":
    main()
