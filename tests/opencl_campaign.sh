#!/bin/sh
# opencl_campaign.sh PARITY KERNELS PROBE LIB: the opencl class from the
# outside (docs/opencl.md).
#  1. `parity campaign --class opencl --shapes small` passes at every point;
#  2. `--against cpu` says bit parity at the points the registry makes
#     equal, and names the class with no such point otherwise; `registry
#     compare` names the declared difference of the work-group tree;
#  3. planted bugs are caught: PARITY_OPENCL_PLANT=contract (the pragma
#     left out: PoCL fuses s + a*b) and =split (twice the split count) make
#     the campaign fail (exit 1), naming the point and what the kernel does.
# The expected verdicts come from the reference (the campaign's Tier 2),
# never from the library.  Exit 77 (said on stdout) without an OpenCL
# platform or device (PROBE is test_opencl_backend LIB --probe).
set -u
PARITY=$1
KERNELS=$2
PROBE=$3
LIB=$4
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$PROBE" "$LIB" --probe > "$T/probe" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
  cat "$T/probe"
  exit 77
fi
[ $rc -eq 0 ] || { echo "FAIL: the probe: exit $rc"; cat "$T/probe"; exit 1; }
unset PARITY_OPENCL_PLANT

camp() { # camp NAME ARGS...: the campaign's stdout in $T/NAME, its status in $T/NAME.rc
  name=$1
  shift
  "$PARITY" campaign --class opencl --kernels "$KERNELS" --shapes small --ledger "$T/ledger.sqlite" "$@" \
    > "$T/$name" 2> "$T/$name.err"
  echo $? > "$T/$name.rc"
}

POINTS="gemm.seq gemm.seq_nofma gemm.splitk gemm.wg rmsnorm.plain rmsnorm.fused_add softmax.plain"

# 1. every point passes
camp green
[ "$(cat "$T/green.rc")" -eq 0 ] || { fail "campaign: exit $(cat "$T/green.rc"), want 0"; cat "$T/green" "$T/green.err"; }
grep -q ' 7 passed, 0 failed, 0 skipped, 0 input error' "$T/green" || fail "campaign: summary: $(grep 'point(s)' "$T/green")"
for p in $POINTS; do
  grep -q "^$p .* bits " "$T/green" || fail "campaign: $p is not bit-exact: $(grep "^$p " "$T/green")"
done
grep -q 'backend opencl' "$T/green" || fail "campaign: the backend is not named"

# 2. against cpu: bit parity where the points are equal
camp against --against cpu
[ "$(cat "$T/against.rc")" -eq 0 ] || { fail "--against cpu: exit $(cat "$T/against.rc"), want 0"; cat "$T/against" "$T/against.err"; }
for p in gemm.seq gemm.splitk rmsnorm.plain rmsnorm.fused_add softmax.plain; do
  grep -qF "bit parity between opencl and cpu at $p: yes" "$T/against" || fail "--against cpu: no bit parity at $p"
done
for p in gemm.wg gemm.seq_nofma; do
  grep -qF "$p parity: skipped: class cpu has no point $p" "$T/against" || fail "--against cpu: $p not said to be opencl's own"
done
# the work-group tree is a declared difference from cpu's split-K and seq
"$PARITY" registry compare opencl:gemm.wg cpu:gemm.splitk --kernels "$KERNELS" > "$T/cmp" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "registry compare opencl:gemm.wg cpu:gemm.splitk: exit $rc, want 1"
grep -qF 'stride(32, seq, halving)' "$T/cmp" || fail "registry compare: the wg tree not named: $(cat "$T/cmp")"
grep -q 'bits may differ' "$T/cmp" || fail "registry compare: no 'bits may differ'"
"$PARITY" registry compare opencl:gemm.splitk cpu:gemm.splitk --kernels "$KERNELS" > "$T/cmp2" 2>&1 \
  || fail "registry compare opencl:gemm.splitk cpu:gemm.splitk: exit $?, want 0"
grep -q 'bit parity expected' "$T/cmp2" || fail "registry compare splitk: $(tail -1 "$T/cmp2")"
# a declared difference in a campaign: opencl's split-K (4 slices) against
# cpu-split8's (8 slices), the same point id, the points differing by declaration
"$PARITY" campaign --class opencl --kernels "$KERNELS" --families gemm --no-ledger --against cpu-split8 > "$T/s8" 2>&1
rc=$?
[ $rc -eq 0 ] || { fail "--against cpu-split8: exit $rc, want 0 (a declared difference is no failure)"; cat "$T/s8"; }
grep -qF 'gemm.splitk parity: ok (declared difference): bit parity between opencl and cpu-split8 at gemm.splitk: not expected: the points differ: ' "$T/s8" &&
  grep -qF 'split count: 4 vs 8' "$T/s8" || { fail "--against cpu-split8: the declared difference not named"; cat "$T/s8"; }
grep -qF 'bit parity between opencl and cpu-split8 at gemm.seq: yes' "$T/s8" || fail "--against cpu-split8: gemm.seq"

# 3. the plants: red, naming the point and what the kernel realises instead
PARITY_OPENCL_PLANT=contract camp contract
[ "$(cat "$T/contract.rc")" -eq 1 ] || fail "plant contract: exit $(cat "$T/contract.rc"), want 1"
grep -q '^gemm.seq_nofma .*FAIL' "$T/contract" || fail "plant contract: gemm.seq_nofma not failed"
grep 'gemm.seq_nofma tier2: FAIL' "$T/contract" | grep -qF 'fma = true' \
  || fail "plant contract: the fused neighbour not named: $(grep 'gemm.seq_nofma tier2' "$T/contract")"
grep -q ' 6 passed, 1 failed' "$T/contract" || fail "plant contract: $(grep 'point(s)' "$T/contract")"

PARITY_OPENCL_PLANT=split camp split
[ "$(cat "$T/split.rc")" -eq 1 ] || fail "plant split: exit $(cat "$T/split.rc"), want 1"
grep -q '^gemm.splitk .*FAIL' "$T/split" || fail "plant split: gemm.splitk not failed"
grep 'gemm.splitk tier2: FAIL' "$T/split" | grep -qF 'the kernel reduces split(8, stride(8, seq, pairwise), seq), the point declares split(4' \
  || fail "plant split: the split not named: $(grep 'gemm.splitk tier2' "$T/split")"
grep -q ' 6 passed, 1 failed' "$T/split" || fail "plant split: $(grep 'point(s)' "$T/split")"

# and the plant against cpu: bit parity at gemm.splitk broken
PARITY_OPENCL_PLANT=split camp split_against --against cpu
[ "$(cat "$T/split_against.rc")" -eq 1 ] || fail "plant split --against cpu: exit $(cat "$T/split_against.rc"), want 1"

PARITY_OPENCL_PLANT=bogus camp bogus
# a plant that does not exist is every point's error (exit 2), never a skipped class
[ "$(cat "$T/bogus.rc")" -eq 2 ] || fail "plant bogus: exit $(cat "$T/bogus.rc"), want 2"
grep -qF "PARITY_OPENCL_PLANT = 'bogus': not a plant" "$T/bogus" || fail "a bogus plant is not refused"

[ $fails -eq 0 ] && echo "opencl_campaign: ok" || echo "opencl_campaign: $fails failure(s)"
[ $fails -eq 0 ]
