#!/bin/sh
# torch_kblocks.sh LIBPARITY: the K blocks of torch's bf16 mm (oneDNN's
# bf16 matmul, the torch-cpu point gemm.mm_bf16), held by the exact
# reference (parity.assert_bits, `parity check --numerics`).  Inputs whose
# second half of K cancels the first (a = [x, -x[p]], b = [y, y[p]]), so
# that each output is its rounding errors alone and every bracketing shows:
# the declared point tile(1024, order([1, 0], seq), seq) must give torch's
# bits at K = 200, 2048 and 4096 and must not at K = 768, where oneDNN
# blocks K by 512 (tile(512, ...) must give them there); the backend's
# supports() must refuse 512 < K <= 1024 and take the others
# (docs/torch-cpu.md "The K blocks of the bf16 mm").  Exit 77 (a skip)
# where /usr/bin/python3 cannot import torch, or the host has no AVX-512
# BF16 (torch then takes another bf16 gemm, which this point is not).
set -u
PARITY_LIB="$1"
export PARITY_LIB
PY=/usr/bin/python3
SRC="$(cd "$(dirname "$0")/.." && pwd)"
if ! "$PY" -c "import torch, numpy" 2>/dev/null; then
  echo "torch_kblocks: skipped: $PY cannot import torch and numpy (apt-get install python3-torch)"
  exit 77
fi
if ! grep -q avx512_bf16 /proc/cpuinfo 2>/dev/null; then
  echo "torch_kblocks: skipped: no AVX-512 BF16 here: torch's bf16 mm is not the kernel gemm.mm_bf16 declares"
  exit 77
fi
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
PYTHONPATH="$SRC/python" exec "$PY" - "$SRC" <<'PYEOF'
import importlib.util, os, sys
import torch, parity
src = sys.argv[1]
spec = importlib.util.spec_from_file_location("torch_cpu_backend", os.path.join(src, "kernels/torch-cpu/backend.py"))
be = importlib.util.module_from_spec(spec)
spec.loader.exec_module(be)

def point(tree):
    return '{ acc = "fp32", fma = false, tree = "%s", out = "bf16" }' % tree

def case(K, M=4, N=64):
    g = torch.Generator().manual_seed(K)
    h = K // 2
    x, y = torch.randn(M, h, generator=g).bfloat16(), torch.randn(N, h, generator=g).bfloat16()
    p = torch.randperm(h, generator=g)
    a, b = torch.cat([x, -x[:, p]], 1), torch.cat([y, y[:, p]], 1)
    torch.set_num_threads(1)
    c = torch.mm(a, b.t())
    rows_a = a.repeat_interleave(N, 0).contiguous()      # row m*N + n: a[m], b[n]
    rows_b = b.repeat(M, 1).contiguous()
    return c.reshape(-1).contiguous(), rows_a, rows_b

def holds(K, tree):
    c, ra, rb = case(K)
    try:
        parity.assert_bits(c, point=point(tree), a=ra, b=rb)
        return True, ""
    except AssertionError as e:
        return False, " ".join(str(e).splitlines()[0].split())

def supports(K):
    obj = {"family": "gemm", "point": "mm_bf16", "kernel": "torch_gemm_native",
           "params": {"in": "bf16", "out": "bf16", "M": "4", "N": "64", "K": str(K)},
           "numerics": {"k": '{ acc = "fp32", fma = false, tree = "seq", out = "fp32" }'}}
    return be.supports_native(be.backend.Point(obj))

bad = 0
DECLARED = "tile(1024, order([1, 0], seq), seq)"
for K, tree, want in ((200, DECLARED, True), (2048, DECLARED, True), (4096, DECLARED, True),
                      (4096, "order([1, 0], seq)", False), (768, DECLARED, False),
                      (768, "tile(512, order([1, 0], seq), seq)", True)):
    ok, why = holds(K, tree)
    print("torch_kblocks: K = %d, %s: %s%s"
          % (K, tree, "torch's bits" if ok else "not torch's bits", "" if ok else " (" + why + ")"))
    if ok != want:
        print("torch_kblocks: FAIL: expected %s" % ("torch's bits" if want else "a difference")); bad = 1
for K, want in ((200, True), (512, True), (513, False), (768, False), (1024, False), (1025, True), (4096, True)):
    s = supports(K)
    print("torch_kblocks: supports(gemm.mm_bf16 at K = %d) = %s" % (K, s))
    if s != want:
        print("torch_kblocks: FAIL: expected %s" % want); bad = 1
sys.exit(bad)
PYEOF
