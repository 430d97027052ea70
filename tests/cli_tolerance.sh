#!/bin/sh
# cli_tolerance.sh PARITY ST_CRAFT ST_FLIP KERNELS: Tier 2 where the device
# runs another numerics point (docs/tolerance.md) and `parity check
# --numerics` on any output, from the outside.
#  - a gemm.splitk trace checked against gemm.seq passes within the bound
#    derived from both trees and says so; a value moved far beyond it fails;
#  - paged attention: the bound through the softmax; with a declared
#    approximate exp and no tolerance none is derivable, and torch.testing's
#    default applies, said to be the last resort;
#  - the campaign judges an approximation without a declared tolerance by
#    the point's bound against itself;
#  - check --numerics: a hand-computed output passes (safetensors and .npy),
#    one flipped bit fails naming the row, a wrong shape, dtype or missing
#    tensor is an input error naming the file and tensor; an `atomic` point
#    is judged by its tree's bound.
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
grep -q '(judged by the bound derived from the tree: \|none outside the bound derived from the tree' "$T/o1" \
  || fail "derived: not judged by the bound: $(cat "$T/o1")"
# element 5 moved by a high mantissa bit (bf16 bit 5: a quarter of its value): far outside
cp "$tr" "$T/far.safetensors"
"$FLIP" "$T/far.safetensors" y 5 5 || fail "st_flip"
"$PARITY" check --kernels "$KERNELS" "$T/far.safetensors" --reference gemm.seq > "$T/o2" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "derived, far value: exit $rc, want 1 ($(cat "$T/o2"))"
grep -q 'first at \[0, 5\]' "$T/o2" || fail "derived, far value: element not named: $(cat "$T/o2")"
grep -q "Policy: bound, bf16: |got - ref| <= bound per element (the bound derived from both points' trees)" "$T/o2" \
  || fail "derived, far value: the report does not say which bound: $(cat "$T/o2")"

# attention: the bound through the softmax (exp of scores within their bounds)
a="$T/tr/cpu.paged_decode_attention.nosplit.graphed-0.safetensors"
"$PARITY" check --kernels "$KERNELS" "$a" --reference paged_decode_attention.split512 > "$T/o3" 2>&1 \
  || fail "attention: exit $? ($(cat "$T/o3"))"
grep -q 'derived bound from the trees of paged_decode_attention.nosplit and paged_decode_attention.split512' "$T/o3" \
  || fail "attention: no derived bound: $(cat "$T/o3")"
# no derivable bound (the same point declaring an approximate exp and no
# tolerance, in a copy of the registry): torch.testing's default, said to be
# the last resort, with the reason
cp -r "$KERNELS" "$T/k"
sed -i '/^id = "nosplit"/,/^exp = "cr"/ s/^exp = "cr"/exp = { approx = "ex2.approx.ftz.f32", ulp = 2 }/' \
  "$T/k/cpu/common/KERNEL_FAMILIES.toml"
"$PARITY" check --kernels "$T/k" "$a" --reference paged_decode_attention.split512 > "$T/o4" 2>&1 \
  || fail "fallback: exit $? ($(cat "$T/o4"))"
grep -q 'no declared tolerance and no derivable bound (.*exp is a declared approximation.*): torch.testing default for bf16.*a last resort' \
  "$T/o4" || fail "fallback: not said: $(cat "$T/o4")"

# the campaign: an approximate silu with no declared tolerance (a copy of
# the registry without it) is judged by the point's bound against itself
cp -r "$KERNELS" "$T/k2"
sed -i '/^id = "libm"/,/^ulp = 2/ { /^\[family.point.tolerance\]/d; /^ulp = 2$/d }' "$T/k2/cpu/common/KERNEL_FAMILIES.toml"
"$PARITY" campaign --class cpu --kernels "$T/k2" --shapes small > "$T/c2" 2>&1 || fail "campaign, no tolerance: exit $?"
grep -q 'silu_and_mul.libm tier2: ok: .* 384 elements of .y. .*the bound derived from the tree.*derived bound from the trees of silu_and_mul.libm and silu_and_mul.libm' \
  "$T/c2" || fail "campaign: the approximation is not judged by the derived bound: $(grep libm "$T/c2")"

# --- parity check --numerics ------------------------------------------------
# a = [[1, 2, 3, 4], [0.5, 0.25, 0.125, 1]] (F32); seq sums 10 and 1.875, by hand
"$CRAFT" raw "$T/in" '{"a":{"dtype":"F32","shape":[2,4],"data_offsets":[0,32]}}' \
  0000803f0000004000004040000080400000003f0000803e0000003e0000803f || fail "craft in"
"$CRAFT" raw "$T/y" '{"y":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}' 000020410000f03f || fail "craft y"
"$CRAFT" raw "$T/yflip" '{"y":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}' 000020410100f03f
"$CRAFT" raw "$T/y3" '{"y":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}}' 000020410000f03f00000000
"$CRAFT" raw "$T/yh" '{"y":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}' 0049803f
"$CRAFT" raw "$T/z" '{"z":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}' 000020410000f03f
P='{ acc = "fp32", tree = "seq" }'
"$PARITY" check --numerics "$P" --in "$T/in" --out "$T/y" > "$T/n1" 2>&1 || fail "numerics: matching output: exit $? ($(cat "$T/n1"))"
grep -q 'bits .*0 / 2 rows differ' "$T/n1" || fail "numerics: not bit-exact: $(cat "$T/n1")"
"$PARITY" check --numerics "$P" --in "$T/in" --out "$T/yflip" > "$T/n2" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "numerics: flipped bit: exit $rc, want 1"
grep -q 'FAIL .*first at row 1' "$T/n2" || fail "numerics: the row is not named: $(cat "$T/n2")"
grep -q 'Mismatched elements: 1 / 2' "$T/n2" || fail "numerics: no Tier 2 report: $(cat "$T/n2")"
"$PARITY" check --numerics "$P" --in "$T/in" --out "$T/y3" > /dev/null 2> "$T/n3"; rc=$?
[ $rc -eq 2 ] || fail "numerics: wrong shape: exit $rc, want 2"
grep -q "y3: tensor 'y' has shape \[3\]" "$T/n3" || fail "numerics: wrong shape not named: $(cat "$T/n3")"
"$PARITY" check --numerics "$P" --in "$T/in" --out "$T/yh" > /dev/null 2> "$T/n4"; rc=$?
[ $rc -eq 2 ] || fail "numerics: wrong dtype: exit $rc, want 2"
grep -q "yh: tensor 'y' has dtype F16" "$T/n4" || fail "numerics: wrong dtype not named: $(cat "$T/n4")"
"$PARITY" check --numerics "$P" --in "$T/in" --out "$T/z" > /dev/null 2> "$T/n5"; rc=$?
[ $rc -eq 2 ] || fail "numerics: missing tensor: exit $rc, want 2"
grep -q "z: no tensor 'y'" "$T/n5" || fail "numerics: missing tensor not named: $(cat "$T/n5")"
"$PARITY" check --numerics "$P" --in "$T/in" --out "$T/z" --name z > /dev/null 2>&1 || fail "numerics: --name z: exit $?"
"$PARITY" check --numerics '{ acc = "fp32", tree = "nope" }' --in "$T/in" --out "$T/y" > /dev/null 2>&1
[ $? -eq 2 ] || fail "numerics: a bad point is not exit 2"
# the same output as .npy ('<f4', shape (2,)); then one bit off
npy() {
  hdr="{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"
  while [ $(( (10 + ${#hdr} + 1) % 64 )) -ne 0 ]; do hdr="$hdr "; done
  { printf '\223NUMPY\001\000'; printf "\\$(printf %03o $(( ${#hdr} + 1 )))\\000"; printf '%s\n' "$hdr"; printf "$1"; } > "$2"
}
npy '\000\000\040\101\000\000\360\077' "$T/y.npy"
npy '\000\000\040\101\001\000\360\077' "$T/yflip.npy"
"$PARITY" check --numerics "$P" --in "$T/in" --out "$T/y.npy" > "$T/n6" 2>&1 || fail "numerics .npy: exit $? ($(cat "$T/n6"))"
"$PARITY" check --numerics "$P" --in "$T/in" --out "$T/yflip.npy" > "$T/n7" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "numerics .npy flipped: exit $rc, want 1 ($(cat "$T/n7"))"
grep -q 'first at row 1' "$T/n7" || fail "numerics .npy: the row is not named"
# `atomic`: no defined order, judged by the tree's bound against the exact value
A='{ acc = "fp32", tree = "split(2, seq, atomic)" }'
"$PARITY" check --numerics "$A" --in "$T/in" --out "$T/y" --json "$T/n8.json" > "$T/n8" 2>&1 || fail "atomic: exit $? ($(cat "$T/n8"))"
grep -q 'bound .*atomic' "$T/n8" || fail "atomic: not judged by the bound: $(cat "$T/n8")"
# row classes (docs/numerics.md §4.3, what `parity reveal` prints for a
# kernel with a one-row path or remainder rows): the reference is each
# row's class; the same output against the point without its class fails
# at the class's rows
RC='{ tree = "pairwise", rows = [{ select = "r % 2 == 1", tree = "seq" }, { select = "R == 1", tree = "reverse(seq)" }] }'
"$CRAFT" rand "$T/rc_in" F32 9 40 3 > /dev/null || fail "craft"
"$PARITY" reduce --numerics "$RC" --in "$T/rc_in" --out "$T/rc_y" 2> "$T/err" || fail "row classes: reduce: $(cat "$T/err")"
"$PARITY" check --numerics "$RC" --in "$T/rc_in" --out "$T/rc_y" > "$T/n9" 2>&1 || fail "row classes: exit $? ($(cat "$T/n9"))"
"$PARITY" check --numerics "$RC" --in "$T/rc_in" --out "$T/rc_y" --engine mpfr > "$T/n9" 2>&1 || fail "row classes, mpfr: exit $? ($(cat "$T/n9"))"
"$PARITY" check --numerics '{ tree = "pairwise" }' --in "$T/rc_in" --out "$T/rc_y" > "$T/n10" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "row classes: the point without its classes: exit $rc, want 1 ($(cat "$T/n10"))"
grep -q 'row [1357]' "$T/n10" || fail "row classes: the failing row is not an odd one: $(cat "$T/n10")"
"$PARITY" check --numerics "{ tree = \"pairwise\", rows = [{ select = \"r % 2 == 1\", tree = \"split(2, seq, atomic)\" }] }" \
  --in "$T/rc_in" --out "$T/rc_y" > /dev/null 2> "$T/n11"; rc=$?
[ $rc -eq 2 ] && grep -q "row classes with an 'atomic' tree" "$T/n11" || fail "row classes with atomic: exit $rc ($(cat "$T/n11"))"
grep -q '"policy": "bound"' "$T/n8.json" || fail "atomic: json policy"
"$PARITY" check --numerics "$A" --in "$T/in" --out "$T/yflip" > /dev/null 2>&1
[ $? -eq 0 ] || fail "atomic: one ulp at 1.875 is within the bound"
"$CRAFT" raw "$T/yfar" '{"y":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}' 000020410000003f
"$PARITY" check --numerics "$A" --in "$T/in" --out "$T/yfar" > /dev/null 2>&1
[ $? -eq 1 ] || fail "atomic: 0.5 for 1.875 passed"
"$PARITY" check --numerics --help | grep -q 'Y.safetensors|Y.npy' || fail "check --numerics --help"
"$PARITY" check --help | grep -q -- '--numerics P --in' || fail "check --help does not mention --numerics"

[ $fails -eq 0 ] && echo "cli_tolerance: all checks passed"
exit $fails
