#!/bin/sh
# torch_campaign.sh PARITY KERNELS: `parity campaign --class torch-cpu`
# (PyTorch 1.13's CPU operators, kernels/torch-cpu) under each of ATen's
# CPU capabilities (ATEN_CPU_CAPABILITY = default, avx2, avx512), with
# traces; then the traces of each point compared across capabilities with
# `parity diff`.  Holds what docs/torch-cpu.md records: every point passes
# Tier 1 (determinism, eager vs torch.jit, new vs legacy, rows) and Tier 2
# on the campaign's inputs; power fails where docs/torch-cpu.md says why
# (EXPECTED_POWER_FAIL below) and nowhere else; gemm.mm's bits do not
# depend on the capability.  Exit 77 (a skip) where /usr/bin/python3
# cannot import torch.
set -u
PARITY="$1"
KERNELS="$2"
PY=/usr/bin/python3
if ! "$PY" -c "import torch, numpy" 2>/dev/null; then
  echo "torch_campaign: skipped: $PY cannot import torch and numpy (apt-get install python3-torch)"
  exit 77
fi
EXPECTED_POWER_FAIL="gemm.mm_bf16 gemv_w4a16.per_element moe_grouped_gemm.seq"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail=0
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
for cap in default avx2 avx512; do
  ATEN_CPU_CAPABILITY=$cap "$PARITY" campaign --class torch-cpu --kernels "$KERNELS" --shapes small --no-ledger \
    --quiet --json "$T/$cap.json" --traces "$T/$cap" > "$T/$cap.txt" 2>&1
  rc=$?
  echo "== ATEN_CPU_CAPABILITY=$cap: exit $rc"
  sed -n '/^family.point/,/^$/p' "$T/$cap.txt"
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
    cat "$T/$cap.txt"; echo "torch_campaign: FAIL: the campaign under $cap exited $rc"; fail=1; continue
  fi
  "$PY" - "$T/$cap.json" "$EXPECTED_POWER_FAIL" <<'PYEOF' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
expected = set(sys.argv[2].split())
bad = 0
for p in d["points"]:
    c = p["checks"]
    for k in ("determinism", "eager_graphed", "new_legacy", "rows"):
        if c[k]["verdict"] not in ("pass", "skip"):
            print("torch_campaign: FAIL: %s %s: %s" % (p["id"], k, c[k]["detail"][:300])); bad = 1
    t2 = c["tier2"]
    if t2["verdict"] == "pass":
        if p["id"] in expected:
            print("torch_campaign: note: %s now passes power; docs/torch-cpu.md and the list need updating" % p["id"])
    elif p["id"] not in expected or "on the campaign's own inputs: ok" not in t2["detail"]:
        print("torch_campaign: FAIL: %s tier2: %s" % (p["id"], t2["detail"][:500])); bad = 1
    else:
        print("torch_campaign: %s: power fails as docs/torch-cpu.md records" % p["id"])
sys.exit(bad)
PYEOF
done
# the same points' bits across capabilities (graphed run 0 of each)
for f in "$T"/default/*.graphed-0.safetensors; do
  b=$(basename "$f")
  for cap in avx2 avx512; do
    [ -f "$T/$cap/$b" ] || continue
    if "$PARITY" diff "$f" "$T/$cap/$b" > "$T/diff.txt" 2>&1; then
      echo "capability default vs $cap, $b: identical"
    else
      echo "capability default vs $cap, $b: $(grep -m1 'elements differ' "$T/diff.txt")"
      case "$b" in
        torch-cpu.gemm.mm.*) echo "torch_campaign: FAIL: gemm.mm depends on the capability"; fail=1 ;;
      esac
    fi
  done
done
exit $fail
