#!/bin/sh
# cli_diff.sh PARITY ST_CRAFT ST_FLIP SAMPLES: `parity diff` from the outside:
# identical files, one flipped bit named with both patterns, .npy against
# safetensors, shapes that differ, --json, a row pattern, the sample traces
# (a permuted batch, several outputs, a head of paged attention).
set -u
PARITY=$1
CRAFT=$2
FLIP=$3
SAMPLES=$4
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
rep() { i=0; while [ $i -lt "$2" ]; do printf '%s' "$1"; i=$((i + 1)); done; }

# y: F32 [4, 4], every element 1.0 (0x3f800000)
ones=$(rep 0000803f 16)
"$CRAFT" raw "$T/a.safetensors" '{"y":{"dtype":"F32","shape":[4,4],"data_offsets":[0,64]}}' "$ones" || fail "st_craft a"
cp "$T/a.safetensors" "$T/b.safetensors"

# identical
"$PARITY" diff "$T/a.safetensors" "$T/b.safetensors" > "$T/o1" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "identical: exit $rc, want 0 ($(cat "$T/o1"))"
grep -q "0 / 16 elements differ" "$T/o1" || fail "identical: no count: $(cat "$T/o1")"

# one flipped bit: element 6 = [1, 2], bit 0: 0x3f800001 = 1 + 2^-23, 1 ulp
"$FLIP" "$T/b.safetensors" y 6 0 || fail "st_flip"
"$PARITY" diff "$T/a.safetensors" "$T/b.safetensors" > "$T/o2" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "flipped: exit $rc, want 1 ($(cat "$T/o2"))"
grep -q "1 / 16 elements differ" "$T/o2" || fail "flipped: count: $(cat "$T/o2")"
grep -qF "first: [1, 2] (flat 6): A 0x3f800000 (0x1p+0), B 0x3f800001 (0x1.000002p+0), 1 ulp" "$T/o2" \
  || fail "flipped: the element and both patterns are not named: $(cat "$T/o2")"
grep -q "ulp histogram (fp32): 0: 15, 1: 1, 2-3: 0" "$T/o2" || fail "flipped: histogram: $(cat "$T/o2")"
grep -q "^rows: 1 of 4 differ: 1 -- row 1$" "$T/o2" || fail "flipped: row not localised: $(cat "$T/o2")"
grep -q "^columns: 1 of 4 differ: 2 -- column 2$" "$T/o2" || fail "flipped: column not localised: $(cat "$T/o2")"
# A and B swapped: the same element, the patterns swapped
"$PARITY" diff "$T/b.safetensors" "$T/a.safetensors" > "$T/o2b" 2>&1
grep -qF "A 0x3f800001 (0x1.000002p+0), B 0x3f800000 (0x1p+0)" "$T/o2b" || fail "swapped: $(cat "$T/o2b")"

# --json parses and says the same
"$PARITY" diff --json "$T/a.safetensors" "$T/b.safetensors" > "$T/j" 2> "$T/je"; rc=$?
[ $rc -eq 1 ] || fail "json: exit $rc, want 1"
python3 -c 'import json,sys; json.load(sys.stdin)' < "$T/j" || fail "json: does not parse: $(cat "$T/j" "$T/je")"
python3 - "$T/j" << 'EOF' || fail "json: wrong content: $(cat "$T/j")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["mismatched"] == 1 and d["n"] == 16, d
assert d["first"]["index"] == [1, 2] and d["first"]["flat_index"] == 6
assert d["first"]["a"]["bits"] == "0x3f800000" and d["first"]["b"]["bits"] == "0x3f800001"
assert d["first"]["b"]["value"] == "0x1.000002p+0"
assert d["ulp_histogram"]["1"] == 1 and d["ulp_histogram"]["0"] == 15
assert d["axes"][0]["differing"] == [[1, 1]]
assert d["identical"] is False
EOF
"$PARITY" diff --json "$T/a.safetensors" "$T/a.safetensors" | python3 -c 'import json,sys; d = json.load(sys.stdin); assert d["identical"] and d["first"] is None' \
  || fail "json of identical files"

# .npy ('<f4', shape (4, 4)) of the same values as the safetensors file
npy() { # npy SHAPE DATA-OCTAL-ESCAPES OUT
  hdr="{'descr': '<f4', 'fortran_order': False, 'shape': $1, }"
  while [ $(( (10 + ${#hdr} + 1) % 64 )) -ne 0 ]; do hdr="$hdr "; done
  { printf '\223NUMPY\001\000'; printf "\\$(printf %03o $(( ${#hdr} + 1 )))\\000"; printf '%s\n' "$hdr"; printf "$2"; } > "$3"
}
npy '(4, 4)' "$(rep '\000\000\200\077' 16)" "$T/y.npy"
"$PARITY" diff "$T/y.npy" "$T/a.safetensors" > "$T/o3" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "npy vs safetensors: exit $rc, want 0 ($(cat "$T/o3"))"
"$PARITY" diff "$T/y.npy" "$T/b.safetensors" > "$T/o3b" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "npy vs flipped safetensors: exit $rc, want 1 ($(cat "$T/o3b"))"

# shapes that differ: exit 2, both shapes named
"$CRAFT" raw "$T/c.safetensors" '{"y":{"dtype":"F32","shape":[2,8],"data_offsets":[0,64]}}' "$ones" || fail "st_craft c"
"$PARITY" diff "$T/a.safetensors" "$T/c.safetensors" > "$T/o4" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "shape mismatch: exit $rc, want 2"
grep -q "\[4, 4\]" "$T/o4" && grep -q "\[2, 8\]" "$T/o4" || fail "shape mismatch: both shapes not named: $(cat "$T/o4")"
"$PARITY" diff "$T/y.npy" "$T/c.safetensors" > "$T/o4b" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "npy shape mismatch: exit $rc, want 2"
# dtypes that differ, a missing tensor, a missing file, usage
"$CRAFT" raw "$T/h.safetensors" '{"y":{"dtype":"F16","shape":[4,4],"data_offsets":[0,32]}}' "$(rep 003c 16)"
"$PARITY" diff "$T/a.safetensors" "$T/h.safetensors" > "$T/o5" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "dtype mismatch: exit $rc, want 2"
grep -q "F32" "$T/o5" && grep -q "F16" "$T/o5" || fail "dtype mismatch not named: $(cat "$T/o5")"
"$PARITY" diff --tensor nope "$T/a.safetensors" "$T/b.safetensors" > "$T/o6" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "missing tensor: exit $rc, want 2"
grep -q "a.safetensors: no tensor 'nope'" "$T/o6" || fail "missing tensor not named: $(cat "$T/o6")"
"$PARITY" diff "$T/a.safetensors" "$T/missing.safetensors" > /dev/null 2>&1; [ $? -eq 2 ] || fail "missing file: not exit 2"
"$PARITY" diff "$T/a.safetensors" > /dev/null 2>&1; [ $? -eq 2 ] || fail "one file: not exit 2"
"$PARITY" diff --help | grep -q 'usage: parity diff A B' || fail "diff --help"
"$PARITY" --help | grep -q '^  diff ' || fail "diff is not in parity --help"

# a row pattern: y [16, 2], rows 1, 5, 9, 13 differ (elements 2, 10, 18, 26)
"$CRAFT" raw "$T/r.safetensors" '{"y":{"dtype":"F32","shape":[16,2],"data_offsets":[0,128]}}' "$(rep 0000803f 32)"
cp "$T/r.safetensors" "$T/r2.safetensors"
for e in 2 10 18 26; do "$FLIP" "$T/r2.safetensors" y $e 4; done
"$PARITY" diff "$T/r.safetensors" "$T/r2.safetensors" > "$T/o7" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "row pattern: exit $rc, want 1"
grep -q "^rows: 4 of 16 differ: 1, 5, 9, 13 -- .*every 4th row from row 1" "$T/o7" \
  || fail "row pattern: every 4th row not found: $(cat "$T/o7")"
grep -q "ulp histogram (fp32): 0: 28, 1: 0, 2-3: 0, 4-15: 0, 16-255: 4," "$T/o7" || fail "row pattern: histogram (bit 4 = 16 ulp)"
# the last row, and --max-list
cp "$T/r.safetensors" "$T/r3.safetensors"
"$FLIP" "$T/r3.safetensors" y 30 0; "$FLIP" "$T/r3.safetensors" y 31 0
"$PARITY" diff --max-list 1 "$T/r.safetensors" "$T/r3.safetensors" > "$T/o8" 2>&1
grep -q "^rows: 1 of 16 differ: 15 -- row 15 (the last)$" "$T/o8" || fail "last row: $(cat "$T/o8")"
grep -q "differing elements (first 1 of 2)" "$T/o8" || fail "--max-list 1: $(cat "$T/o8")"

# traces: eager vs graphed identical; a permuted batch aligned by logical row
C="$SAMPLES/cpu"
"$PARITY" diff "$C/cpu.gemm.splitk.eager-0.safetensors" "$C/cpu.gemm.splitk.graphed-0.safetensors" > "$T/t1" 2>&1 \
  || fail "traces eager vs graphed: exit $? ($(cat "$T/t1"))"
"$PARITY" diff "$C/cpu.gemm.splitk.eager-0.safetensors" "$C/cpu.gemm.splitk.row-perm.safetensors" > "$T/t2" 2>&1 \
  || fail "traces rows vs perm: exit $? ($(cat "$T/t2"))"
grep -q "taken in A's order of logical rows" "$T/t2" || fail "perm: no alignment note: $(cat "$T/t2")"
cp "$C/cpu.gemm.splitk.eager-0.safetensors" "$T/g.safetensors"
"$FLIP" "$T/g.safetensors" y 29 3
"$PARITY" diff "$C/cpu.gemm.splitk.eager-0.safetensors" "$T/g.safetensors" > "$T/t3" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "trace flipped: exit $rc"
grep -q "^rows (M): 1 of 4 differ: 1 -- row 1$" "$T/t3" || fail "trace: rows not named by M: $(cat "$T/t3")"
grep -q "^columns (N): 1 of 24 differ: 5 -- column 5$" "$T/t3" || fail "trace: columns not named by N"
# several outputs: the first diverging one is named
cp "$C/cpu.rmsnorm.fused_add.graphed-0.safetensors" "$T/n.safetensors"
"$FLIP" "$T/n.safetensors" residual_out 0 0
"$PARITY" diff "$C/cpu.rmsnorm.fused_add.graphed-0.safetensors" "$T/n.safetensors" > "$T/t4" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "rmsnorm: exit $rc"
grep -q "tensors, in order: 'y' identical (0 / 640), 'residual_out' differs (1 / 640)" "$T/t4" || fail "rmsnorm: per tensor: $(cat "$T/t4")"
grep -q "first diverging tensor: 'residual_out' (2 of 2)" "$T/t4" || fail "rmsnorm: first diverging: $(cat "$T/t4")"
"$PARITY" diff --tensor y "$C/cpu.rmsnorm.fused_add.graphed-0.safetensors" "$T/n.safetensors" > /dev/null 2>&1 \
  || fail "rmsnorm --tensor y: exit $?, want 0"
"$PARITY" diff "$C/cpu.gemm.splitk.eager-0.safetensors" "$C/cpu.rmsnorm.fused_add.graphed-0.safetensors" > "$T/t5" 2>&1
[ $? -eq 2 ] || fail "gemm vs rmsnorm: not exit 2"
# paged attention: head 2 of every sequence (elements 32, 96, 160): heads and KV heads
cp "$C/cpu.paged_decode_attention.split512.graphed-0.safetensors" "$T/p.safetensors"
for e in 32 96 160; do "$FLIP" "$T/p.safetensors" y $e 0; done
"$PARITY" diff "$C/cpu.paged_decode_attention.split512.graphed-0.safetensors" "$T/p.safetensors" > "$T/t6" 2>&1
grep -q "^heads (HQ): 1 of 4 differ: 2 -- head 2$" "$T/t6" || fail "paged: head: $(cat "$T/t6")"
grep -q "^KV heads .*: 1 of 2 touched by a difference: 1 (1 of 2 query heads differ)" "$T/t6" || fail "paged: KV head: $(cat "$T/t6")"
grep -q "^pages: not named" "$T/t6" || fail "paged: pages without in.block_table"

[ $fails -eq 0 ] && echo "cli_diff: all passed"
exit $fails
