#!/bin/sh
# cli_tolerance.sh PARITY ST_CRAFT ST_FLIP KERNELS: Tier 2 where the device
# runs another numerics point (docs/tolerance.md), from the outside.
#  - a gemm.splitk trace checked against gemm.seq passes within the bound
#    derived from both trees and says so; a value moved far beyond it fails;
#  - paged attention has no derivable bound: the torch.testing default,
#    said to be the last resort.
set -u
PARITY=$1
CRAFT=$2
FLIP=$3
KERNELS=$4
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$PARITY" campaign --class cpu --kernels "$KERNELS" --shapes small --traces "$T/tr" > /dev/null 2>&1 \
  || fail "campaign: exit $?"
tr="$T/tr/cpu.gemm.splitk.graphed-0.safetensors"

# another point, no declared tolerance: the derived bound, said as such
"$PARITY" check --kernels "$KERNELS" "$tr" --reference gemm.seq > "$T/o1" 2>&1 || fail "derived: exit $? ($(cat "$T/o1"))"
grep -q 'derived bound from the trees of gemm.splitk and gemm.seq' "$T/o1" || fail "derived: not said: $(cat "$T/o1")"
grep -q ' bound .*bound: 0 / 96 outside' "$T/o1" || fail "derived: not judged by the bound: $(cat "$T/o1")"
# element 5 moved by a high mantissa bit (bf16 bit 5: a quarter of its value): far outside
cp "$tr" "$T/far.safetensors"
"$FLIP" "$T/far.safetensors" y 5 5 || fail "st_flip"
"$PARITY" check --kernels "$KERNELS" "$T/far.safetensors" --reference gemm.seq > "$T/o2" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "derived, far value: exit $rc, want 1 ($(cat "$T/o2"))"
grep -q 'first at \[0, 5\]' "$T/o2" || fail "derived, far value: element not named: $(cat "$T/o2")"

# no derivable bound: the default as the last resort, with the reason
a="$T/tr/cpu.paged_decode_attention.nosplit.graphed-0.safetensors"
"$PARITY" check --kernels "$KERNELS" "$a" --reference paged_decode_attention.split512 > "$T/o3" 2>&1 \
  || fail "attention: exit $? ($(cat "$T/o3"))"
grep -q 'no declared tolerance and no derivable bound (.*exp.*): torch.testing default for bf16' "$T/o3" \
  || fail "attention: the fallback is not said: $(cat "$T/o3")"

[ $fails -eq 0 ] && echo "cli_tolerance: all checks passed"
exit $fails
