#!/bin/sh
# torch_campaign.sh PARITY KERNELS: `parity campaign --class torch-cpu`
# (PyTorch 1.13's CPU operators, kernels/torch-cpu) under each of ATen's
# CPU capabilities (ATEN_CPU_CAPABILITY = default, avx2, avx512), with
# traces, then once at the 8b-layer shapes; the traces of each point
# compared across capabilities with `parity diff`; then `parity model` of
# llama3-8b at the tiny scale on the class's lowering (common/FUSIONS.toml),
# against the exact reference and against class cpu.  Holds what
# docs/torch-cpu.md records: every campaign exits 0, every point passes
# Tier 1 (determinism, eager vs torch.jit, new vs legacy, rows) and Tier 2;
# power passes (not skips) at every point without a declared approximation
# (POWER_PASS below); gemm.mm's bits do not depend on the capability.  The
# model's expected outcomes are what the points declare (below).  Exit 77
# (a skip) where /usr/bin/python3 cannot import torch.
set -u
PARITY="$1"
KERNELS="$2"
PY=/usr/bin/python3
if ! "$PY" -c "import torch, numpy" 2>/dev/null; then
  echo "torch_campaign: skipped: $PY cannot import torch and numpy (apt-get install python3-torch)"
  exit 77
fi
# the points whose power runs (no declared approximation): each must pass.
# gemm.mm_bf16 is oneDNN's VDPBF16PS kernel: on a host without AVX-512 BF16
# the backend has no kernel for it, and its checks are skips.
POWER_PASS="gemm.mm gemm.mm_bf16 gemv_w4a16.per_element moe_grouped_gemm.seq"
MAY_SKIP=""
if ! grep -q avx512_bf16 /proc/cpuinfo 2>/dev/null; then
  POWER_PASS="gemm.mm gemv_w4a16.per_element moe_grouped_gemm.seq"
  MAY_SKIP="gemm.mm_bf16"
  echo "torch_campaign: no AVX-512 BF16 here: gemm.mm_bf16 may be skipped"
fi
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail=0
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
check_json() {   # check_json JSON: every Tier 1 check, Tier 2 and POWER_PASS's power
  "$PY" - "$1" "$POWER_PASS" "$MAY_SKIP" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
power, may_skip = set(sys.argv[2].split()), set(sys.argv[3].split())
bad = 0
seen = set()
for p in d["points"]:
    seen.add(p["id"])
    c = p["checks"]
    for k in ("determinism", "eager_graphed", "new_legacy", "rows"):
        if c[k]["verdict"] not in ("pass", "skip"):
            print("torch_campaign: FAIL: %s %s: %s" % (p["id"], k, c[k]["detail"][:300])); bad = 1
    if p["id"] in may_skip and c["tier2"]["verdict"] == "skip":
        continue
    if c["tier2"]["verdict"] != "pass":
        print("torch_campaign: FAIL: %s tier2: %s" % (p["id"], c["tier2"]["detail"][:500])); bad = 1
    if p["id"] in power and p["power"]["verdict"] != "pass":
        print("torch_campaign: FAIL: %s power %s: %s" % (p["id"], p["power"]["verdict"], p["power"]["detail"][:300]))
        bad = 1
for m in sorted(power - seen):
    print("torch_campaign: FAIL: no point %s in the campaign" % m); bad = 1
sys.exit(bad)
PYEOF
}
for cap in default avx2 avx512; do
  ATEN_CPU_CAPABILITY=$cap "$PARITY" campaign --class torch-cpu --kernels "$KERNELS" --shapes small --no-ledger \
    --quiet --json "$T/$cap.json" --traces "$T/$cap" > "$T/$cap.txt" 2>&1
  rc=$?
  echo "== ATEN_CPU_CAPABILITY=$cap: exit $rc"
  sed -n '/^family.point/,/^$/p' "$T/$cap.txt"
  if [ "$rc" -ne 0 ]; then
    cat "$T/$cap.txt"; echo "torch_campaign: FAIL: the campaign under $cap exited $rc, not 0"; fail=1
  fi
  [ -f "$T/$cap.json" ] && { check_json "$T/$cap.json" || fail=1; }
done
# one decoder layer's shapes (K = 4096: the bf16 mm's blocks of 1024)
"$PARITY" campaign --class torch-cpu --kernels "$KERNELS" --shapes 8b-layer --no-ledger --quiet \
  --json "$T/8b.json" > "$T/8b.txt" 2>&1
rc=$?
echo "== --shapes 8b-layer: exit $rc"
sed -n '/^family.point/,/^$/p' "$T/8b.txt"
if [ "$rc" -ne 0 ]; then
  cat "$T/8b.txt"; echo "torch_campaign: FAIL: the 8b-layer campaign exited $rc, not 0"; fail=1
fi
[ -f "$T/8b.json" ] && { check_json "$T/8b.json" || fail=1; }
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
# parity model on the class's lowering (common/FUSIONS.toml: gemm.mm,
# rmsnorm.plain / .fused_add, paged_decode_attention.nosplit,
# silu_and_mul.torch).  What the points declare:
# - against the exact reference of the same points: gemm.mm realises its
#   point, so a gemm's bits equal the reference's when its inputs do; the
#   norms, attention and silu declare approximations (rsqrt, exp, silu), so
#   the first op whose bits differ, if one does, is one of those (exit 1),
#   never a gemm; exit 0 where none shows.
# - against class cpu: every family op runs another point than cpu's
#   (cpu: gemm.splitk, split-KV attention, correctly rounded rsqrt, exp and
#   silu), so bit parity is not expected and the verdict is the logits
#   within a tolerance: exit 0 or 1 (neither point declares one, so the
#   report says torch.testing's bf16 default, the last resort), every
#   first difference a declared one.
MODEL="--model llama3-8b --scale tiny --kernels $KERNELS"
"$PARITY" model --class torch-cpu $MODEL --json "$T/model.json" > "$T/model.txt" 2>&1
rc=$?
echo "== parity model --class torch-cpu (against the exact reference): exit $rc"
grep -E '^(Logits|First difference|Transcripts|Model parity)' "$T/model.txt"
"$PARITY" model --class torch-cpu $MODEL --against cpu --json "$T/model-cpu.json" > "$T/model-cpu.txt" 2>&1
rc2=$?
echo "== parity model --class torch-cpu --against cpu: exit $rc2"
grep -E '^(Logits|First difference|Transcripts|Model parity)' "$T/model-cpu.txt"
for r in "$rc" "$rc2"; do
  if [ "$r" -ne 0 ] && [ "$r" -ne 1 ]; then
    cat "$T/model.txt" "$T/model-cpu.txt"; echo "torch_campaign: FAIL: parity model exited $r"; fail=1
  fi
done
if [ -f "$T/model.json" ] && [ -f "$T/model-cpu.json" ]; then
  "$PY" - "$T/model.json" "$T/model-cpu.json" "$rc" <<'PYEOF' || fail=1
import json, sys
ref, cpu, rc = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
approx = ("rmsnorm.", "paged_decode_attention.", "silu_and_mul.")
bad = 0
ops = {o["id"]: o for o in ref["ops"]}
fd = ref["first_difference"]
if fd.get("found"):
    pt = ops[fd["op"]].get("point", "")
    if not pt.startswith(approx):
        print("torch_campaign: FAIL: model: the first op to differ from the exact reference is %s (%s), "
              "whose point declares no approximation" % (fd["op"], pt)); bad = 1
    if rc != 1:
        print("torch_campaign: FAIL: model: bits differ but the exit is %d" % rc); bad = 1
elif rc != 0:
    print("torch_campaign: FAIL: model: no difference from the exact reference but the exit is %d" % rc); bad = 1
if cpu["bit_parity_expected"] is not False:
    print("torch_campaign: FAIL: model --against cpu: bit parity expected, though the points differ"); bad = 1
for o in cpu["ops"]:
    if not o["outside_families"] and o.get("same_point") is not False:
        print("torch_campaign: FAIL: model --against cpu: %s runs cpu's point %s" % (o["id"], o.get("control_point")))
        bad = 1
fd = cpu["first_difference"]
if fd.get("found") and fd.get("declared") is not True:
    print("torch_campaign: FAIL: model --against cpu: the first difference (%s) is not a declared one" % fd["op"])
    bad = 1
sys.exit(bad)
PYEOF
fi
exit $fail
