#!/usr/bin/python3
"""bench_python.py [--rows R] [--n N] [--repeat K] [--reveal-n N]: the Python
package's cost over the C library it binds, measured in the same run.

reduce: parity.reduce on R x N fp32 (a dot product, engine auto, every
core) against the same reduction as `parity reduce` runs it in process:
parity_reduce of libparity.so called directly (pa_reduce, the function
cmd_reduce.c calls, on the same memory).  The ratio must stay under 1.2:
no Python loop per row, no copy.  The CLI as a process (reading IN,
writing OUT) is timed too, for scale.

reveal: the time per probe row of parity.reveal of a numpy kernel, against
`parity reveal --serve` of the same kernel written as a probe program in
Python (examples/reveal/probe_numpy.py's loop, one file pair per call).

Best of K runs each, interleaved.  PARITY_LIB / PARITY_BUILD say where the
build is (default build/).
"""

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import numpy as np  # noqa: E402

import parity  # noqa: E402
from parity import _lib  # noqa: E402

POINT = '{ acc = "fp32", tree = "split(4, seq, pairwise)" }'


def best(f, k):
    t = []
    for _ in range(k):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return min(t)


def cli_path():
    b = os.environ.get("PARITY_BUILD", "build")
    return os.path.join(b if os.path.isabs(b) else os.path.join(ROOT, b), "parity")


def write_in(path, a, b):
    import json
    import struct
    h = json.dumps({"a": {"dtype": "F32", "shape": list(a.shape), "data_offsets": [0, a.nbytes]},
                    "b": {"dtype": "F32", "shape": list(b.shape), "data_offsets": [a.nbytes, 2 * a.nbytes]}})
    h = h.encode() + b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        f.write(a.tobytes())
        f.write(b.tobytes())


def bench_reduce(rows, n, k):
    g = np.random.default_rng(1)
    a = g.standard_normal((rows, n), dtype=np.float32)
    b = g.standard_normal((rows, n), dtype=np.float32)
    y = np.empty(rows, np.float32)
    shape = (ctypes.c_int64 * 2)(rows, n)
    ta = _lib.Tensor(a.ctypes.data, b"F32", 2, shape)
    tb = _lib.Tensor(b.ctypes.data, b"F32", 2, shape)
    err = _lib.Error()
    p = POINT.encode()

    def raw():
        if _lib.lib.parity_reduce(p, ctypes.byref(ta), ctypes.byref(tb), None, b"auto", 0, 0, y.ctypes.data,
                                  y.nbytes, ctypes.byref(err)):
            raise RuntimeError(err.text)

    def py():
        return parity.reduce(POINT, a, b)

    raw()
    assert py().tobytes() == y.tobytes()
    t_raw = t_py = float("inf")
    for _ in range(k):
        t_raw = min(t_raw, best(raw, 1))
        t_py = min(t_py, best(py, 1))
    t_cli = None
    cli = cli_path()
    if os.path.exists(cli):
        with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d:
            write_in(os.path.join(d, "in.safetensors"), a, b)
            cmd = [cli, "reduce", "--numerics", POINT, "--in", os.path.join(d, "in.safetensors"), "--out",
                   os.path.join(d, "y.safetensors")]
            t_cli = best(lambda: subprocess.run(cmd, check=True), k)
    print("reduce %d x %d fp32 dot, engine auto: in-process C (the CLI's call) %.3f s, parity.reduce %.3f s, "
          "ratio %.3f (goal <= 1.2)%s" % (rows, n, t_raw, t_py, t_py / t_raw,
                                          "; the CLI as a process, files in tmpfs: %.3f s" % t_cli if t_cli else ""))
    return t_py / t_raw


SERVE = r'''
import sys, json, struct
import numpy as np
def kernel(a, b):
    return np.cumsum(a * b, axis=1)[:, -1].copy()
for line in sys.stdin:
    i, o = line.split()
    raw = open(i, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    h = json.loads(raw[8:8 + n])
    d = raw[8 + n:]
    t = {k: np.frombuffer(d[v["data_offsets"][0]:v["data_offsets"][1]], "<f4").reshape(v["shape"])
         for k, v in h.items() if k != "__metadata__"}
    y = kernel(t["a"], t["b"]).astype("<f4")
    hd = json.dumps({"y": {"dtype": "F32", "shape": [len(y)], "data_offsets": [0, y.nbytes]}}).encode()
    hd += b" " * (-len(hd) % 8)
    open(o, "wb").write(struct.pack("<Q", len(hd)) + hd + y.tobytes())
    print("ok", flush=True)
'''


def bench_reveal(n, k):
    def kernel(a, b):
        return np.cumsum(a * b, axis=1)[:, -1].copy()
    info = {}
    t_py = best(lambda: parity.reveal(kernel, n=n, info=info), k)
    per_py = t_py / info["probes"]
    cli = cli_path()
    if not os.path.exists(cli):
        print("reveal n=%d: parity.reveal %.1f us per probe (%d probes, %d calls); no CLI to compare" %
              (n, per_py * 1e6, info["probes"], info["calls"]))
        return None
    with tempfile.TemporaryDirectory() as d:
        prog = os.path.join(d, "serve.py")
        open(prog, "w").write(SERVE)
        cmd = [cli, "reveal", "--serve", "%s %s" % (sys.executable, prog), "--n", str(n)]
        out = []

        def serve():
            r = subprocess.run(cmd, check=True, capture_output=True, text=True)
            out.append(r.stdout)
        t_cli = best(serve, k)
    probes = next(int(l.split()[3].rstrip(",")) for l in out[-1].splitlines() if l.startswith("calls:"))
    per_cli = t_cli / probes
    print("reveal n=%d: parity.reveal %.1f us per probe (%d probes in %d calls, %.2f s); --serve %.1f us per probe "
          "(%d probes, %.2f s); ratio %.3f (goal <= 1)" % (n, per_py * 1e6, info["probes"], info["calls"], t_py,
                                                         per_cli * 1e6, probes, t_cli, per_py / per_cli))
    return per_py / per_cli


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reveal-n", type=int, default=64)
    o = ap.parse_args()
    r = bench_reduce(o.rows, o.n, o.repeat)
    v = bench_reveal(o.reveal_n, o.repeat)
    return 0 if r <= 1.2 and (v is None or v <= 1.0) else 1


if __name__ == "__main__":
    sys.exit(main())
