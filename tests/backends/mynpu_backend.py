"""The served backend of docs/backends.md's bring-up, whole: class mynpu's
gemm as a loop a kernel author writes in numpy, K in order, one rounding
per product and one per sum (fp32), the output rounded once.

Run by parity as `/usr/bin/python3 mynpu_backend.py` in the class's folder
(HARDWARE.toml); PARITY_PYTHON names the folder holding the parity package.
"""
import os
import sys

sys.path.insert(0, os.environ.get("PARITY_PYTHON", os.path.join(os.path.dirname(__file__), "..", "..", "python")))

import numpy as np  # noqa: E402

from parity import backend  # noqa: E402


def plain(point):
    # the kernel knows no epilogue: alpha 1, beta 0, no bias, or not this kernel
    return point.get("alpha", "1") == "1" and point.get("beta", "0") == "0" and not point.flag("bias")


@backend.kernel("gemm", "npu_gemm_seq", supports=plain)
def gemm(point, inputs):
    a, b = inputs.f32("a"), inputs.f32("b")           # [M, K], [N, K]; BF16 patterns decoded exactly
    acc = np.zeros((a.shape[0], b.shape[0]), np.float32)
    for k in range(a.shape[1]):                        # K in order
        acc += np.outer(a[:, k], b[:, k])              # the product rounded to fp32, then the sum
    return {"y": backend.to_format(acc, point.get("out", "bf16"))}


backend.serve(name="mynpu", threaded=False, describe={"sku": "mynpu-sim", "numpy": np.__version__})
