#!/bin/sh
# torch_planted.sh PARITY: a planted bug seen red, then green.  A backend
# written with the Python kit (python/parity/backend.py, numpy only) whose
# gemm declares `seq` (fp32, a multiply then an add per term, K in order)
# is run by `parity campaign` twice: with PLANT=1 its kernel sums K in two
# halves and adds them (split(2, seq, seq)), which the campaign must fail
# (exit 1) naming gemm.seq; with PLANT=0 it realises what it declares and
# the campaign passes (exit 0).  Exit 77 (a skip) where /usr/bin/python3
# lacks numpy.
set -u
PARITY="$1"
PY=/usr/bin/python3
SRC="$(cd "$(dirname "$0")/.." && pwd)"
if ! "$PY" -c "import numpy" 2>/dev/null; then
  echo "torch_planted: skipped: $PY cannot import numpy (apt-get install python3-numpy)"
  exit 77
fi
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/kernels/kitgemm/common"
cat > "$T/planted.py" <<PYEOF
import os, sys
sys.path.insert(0, "$SRC/python")
import importlib.util
spec = importlib.util.spec_from_file_location("kit", "$SRC/python/parity/backend.py")
backend = importlib.util.module_from_spec(spec)
spec.loader.exec_module(backend)
import numpy as np

PLANT = os.environ.get("PLANT") == "1"

np.seterr(all="ignore")

def dot_seq(a, b, lo, hi):
    s = np.zeros((a.shape[0], b.shape[0]), dtype=np.float32)
    for k in range(lo, hi):   # fp32: the product rounded, then the add
        s = s + a[:, None, k] * b[None, :, k]
    return s

@backend.kernel("gemm", "kit_gemm_seq")
def gemm(point, inputs, mode, threads):
    a, b = inputs.f32("a"), inputs.f32("b")
    k = a.shape[1]
    if PLANT:                 # the bug: K in two halves, then their sum
        y = dot_seq(a, b, 0, k // 2) + dot_seq(a, b, k // 2, k)
    else:
        y = dot_seq(a, b, 0, k)
    return {"y": backend.to_format(y, point.params.get("out", "bf16"))}

backend.serve(name="kitgemm", threaded=False)
PYEOF
cat > "$T/kernels/kitgemm/HARDWARE.toml" <<TEOF
class = "kitgemm"
description = "a numpy gemm served by the Python backend kit"
atoms = []
backend = { serve = "$PY $T/planted.py" }
TEOF
cat > "$T/kernels/kitgemm/common/KERNEL_FAMILIES.toml" <<'TEOF'
[[family]]
id = "gemm"
shape = ["M", "N", "K"]
reductions = ["k"]
formats = ["bf16", "fp16", "fp32"]
kernels = ["kit_gemm_seq"]

[[family.param]]
name = "in"
kind = "numerics"
default = "bf16"

[[family.param]]
name = "out"
kind = "numerics"
default = "bf16"

[[family.point]]
id = "seq"
kernel = "kit_gemm_seq"
[family.point.numerics.k]
acc = "fp32"
fma = false
tree = "seq"
out = "fp32"
TEOF
fail=0
"$PARITY" registry lint "$T/kernels" || { echo "torch_planted: the registry does not lint"; exit 1; }
PLANT=1 "$PARITY" campaign --class kitgemm --kernels "$T/kernels" --no-ledger --quiet > "$T/red.txt" 2>&1
rc=$?
cat "$T/red.txt"
if [ "$rc" -ne 1 ]; then
  echo "torch_planted: FAIL: with the planted split the campaign exited $rc, not 1"; fail=1
elif ! grep -q "gemm.seq" "$T/red.txt"; then
  echo "torch_planted: FAIL: the campaign failed without naming gemm.seq"; fail=1
else
  echo "torch_planted: red as planted: exit 1 naming gemm.seq"
fi
PLANT=0 "$PARITY" campaign --class kitgemm --kernels "$T/kernels" --no-ledger --quiet > "$T/green.txt" 2>&1
rc=$?
cat "$T/green.txt"
if [ "$rc" -ne 0 ]; then
  echo "torch_planted: FAIL: without the bug the campaign exited $rc, not 0"; fail=1
else
  echo "torch_planted: green without the bug: exit 0"
fi
exit $fail
