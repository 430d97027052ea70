#!/bin/sh
# cli_reduce.sh PARITY ST_CRAFT: `parity reduce` from the outside: results on
# hand-worked inputs, and every malformed point, file and shape rejected with
# exit 2, a message naming what is wrong, and the output file untouched.
set -u
PARITY=$1
CRAFT=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_reject NAME POINT IN PATTERN: exit 2, stderr matches PATTERN, and
# an existing output file keeps its bytes.
expect_reject() {
  name=$1 point=$2 in=$3 pattern=$4
  printf 'previous contents\n' > "$T/out.safetensors"
  "$PARITY" reduce --numerics "$point" --in "$in" --out "$T/out.safetensors" 2> "$T/err"
  rc=$?
  [ $rc -eq 2 ] || fail "$name: exit $rc, want 2 ($(cat "$T/err"))"
  grep -q -- "$pattern" "$T/err" || fail "$name: message '$(cat "$T/err")' lacks '$pattern'"
  [ "$(cat "$T/out.safetensors")" = "previous contents" ] || fail "$name: the existing output was modified"
  rm -f "$T/out.safetensors"
  "$PARITY" reduce --numerics "$point" --in "$in" --out "$T/new.safetensors" 2> /dev/null
  [ ! -e "$T/new.safetensors" ] || fail "$name: an output was written"
  ls -A "$T" | grep -q -E '(^\.|\.tmp)' && fail "$name: a temporary file was left behind ($(ls -A "$T" | tr '\n' ' '))"
  return 0
}

# Little-endian fp32 patterns: 2^24, 1, -2^24.
P24=0000804b ONE=0000803f M24=000080cb
good="$T/good.safetensors"
"$CRAFT" raw "$good" '{"a":{"dtype":"F32","shape":[2,4],"data_offsets":[0,32]}}' \
  "$P24$ONE$M24$ONE$ONE$P24$ONE$M24"

# Hand-worked (docs/numerics.md §4): row 0 = 2^24, 1, -2^24, 1; row 1 = 1, 2^24, 1, -2^24.
# seq: row 0 → 1, row 1 → 0.  halving: 2, 2.  pairwise: 1, 1.
check_y() {
  tree=$1 want=$2
  "$PARITY" reduce --numerics "{ tree = \"$tree\" }" --in "$good" --out "$T/y.safetensors" 2> "$T/err" \
    || fail "$tree: exit $? ($(cat "$T/err"))"
  got=$("$PARITY" inspect "$T/y.safetensors" | grep -o '(0x[0-9a-f]*)' | tr -d '()' | tr '\n' ' ')
  [ "$got" = "$want" ] || fail "$tree: y = $got, want $want"
}
check_y seq "0x3f800000 0x0 "
check_y halving "0x40000000 0x40000000 "
check_y pairwise "0x3f800000 0x3f800000 "
"$PARITY" inspect "$T/y.safetensors" | grep -q 'meta numerics_hash = [0-9a-f]\{64\}' || fail "no hash in the output metadata"

# bf16 output of the same: dtype BF16, shape [2]
"$PARITY" reduce --numerics '{ tree = "halving", out = "bf16" }' --in "$good" --out "$T/b.safetensors" || fail "bf16 out"
"$PARITY" inspect "$T/b.safetensors" | grep -q 'tensor y: BF16 \[2\]' || fail "bf16 out: wrong dtype/shape"
"$PARITY" inspect "$T/b.safetensors" | grep -q '0x4000)' || fail "bf16 out: 2.0 is 0x4000"

# F4 output: 2 rows fill a byte (dtype F4); 3 rows do not, so y is widened
# to F32 and the metadata says so.  e2m1 of 1, 3, 5 (a tie between 4 and 6:
# even mantissa) is 1, 3, 4.
"$PARITY" reduce --numerics '{ tree = "pairwise", out = "e2m1" }' --in "$good" --out "$T/f4.safetensors" || fail "F4 out"
"$PARITY" inspect "$T/f4.safetensors" | grep -q 'tensor y: F4 \[2\]' || fail "F4 out: 2 rows are not stored as F4"
"$CRAFT" raw "$T/three" '{"a":{"dtype":"F32","shape":[3,1],"data_offsets":[0,12]}}' 0000803f000040400000a040
"$PARITY" reduce --numerics '{ out = "e2m1" }' --in "$T/three" --out "$T/f4w.safetensors" || fail "F4 out, 3 rows"
got=$("$PARITY" inspect "$T/f4w.safetensors" | grep -o '(0x[0-9a-f]*)' | tr -d '()' | tr '\n' ' ')
[ "$got" = "0x3f800000 0x40400000 0x40800000 " ] || fail "F4 out, 3 rows: y = $got"
"$PARITY" inspect "$T/f4w.safetensors" | grep -q 'meta y_storage = F32: widened' || fail "F4 out, 3 rows: not said"

# Row classes (docs/numerics.md §4.3): row 1 by halving (2), row 0 by seq (1),
# in every engine; a third-edition tree in a class.
for eng in auto fast mpfr; do
  "$PARITY" reduce --engine $eng --numerics '{ tree = "seq", rows = [{ select = "r == R - 1", tree = "halving" }] }' \
    --in "$good" --out "$T/rc.safetensors" 2> "$T/err" || fail "row classes ($eng): exit $? ($(cat "$T/err"))"
  got=$("$PARITY" inspect "$T/rc.safetensors" | grep -o '(0x[0-9a-f]*)' | tr -d '()' | tr '\n' ' ')
  [ "$got" = "0x3f800000 0x40000000 " ] || fail "row classes ($eng): y = $got"
done
"$PARITY" reduce --numerics '{ rows = [{ select = "r < 1", tree = "body(2, seq[fma=false], pairwise, carry)" }] }' \
  --in "$good" --out "$T/rc3.safetensors" 2> "$T/err" || fail "row class with body: exit $? ($(cat "$T/err"))"
expect_reject "row class out" '{ rows = [{ select = "r < 1", out = "bf16" }] }' "$good" "rows\[0\]': out = \"bf16\" differs"
expect_reject "row class selector" '{ rows = [{ select = "r <" }] }' "$good" "rows\[0\].select"
expect_reject "row class grid" '{ grid = [3, 3], rows = [{ select = "i == 0" }] }' "$good" "lays out 9 rows, but there are 2"
"$PARITY" reduce --numerics '{ rows = [{ select = "r < 1" }] }' --in "$good" --out "$T/rr.safetensors" \
  --report "$T/rr.json" 2> "$T/err"
[ $? -eq 2 ] && grep -q "row classes are not supported by the report" "$T/err" || fail "row classes with --report"
[ ! -e "$T/rr.safetensors" ] || fail "row classes with --report: an output was written"
# Malformed points.
expect_reject "tree column" '{ tree = "split(4 seq" }' "$good" "tree:1:9: expected ',' after the split count"
expect_reject "unknown key" '{ acc = "fp32", treee = "seq" }' "$good" "treee"
expect_reject "unknown format" '{ acc = "fp33" }' "$good" "unknown format 'fp33'"
expect_reject "unknown mode" '{ rounding = "nearest" }' "$good" "unknown rounding mode 'nearest'"
expect_reject "wrong type" '{ fma = "yes" }' "$good" "fma"
expect_reject "chain without atom" '{ tree = "chain(4)" }' "$good" "needs an atom"
expect_reject "unknown preset" '{ tree = "chain(4)", atom = "sm99.mma" }' "$good" "unknown atom preset 'sm99.mma'"
expect_reject "not a table" 'acc = "fp32"' "$good" "--numerics"
expect_reject "frac_bits range" '{ tree = "chain(4)", atom = { frac_bits = -1 } }' "$good" "frac_bits"

# Malformed files.
expect_reject "missing file" '{}' "$T/nope.safetensors" "nope.safetensors"
"$CRAFT" raw "$T/short" '{"a":' '' --cut 5
expect_reject "truncated" '{}' "$T/short" "short"
"$CRAFT" raw "$T/longhdr" '{"a":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]}}' 0000803f --len 999
expect_reject "header longer than the file" '{}' "$T/longhdr" "999"
"$CRAFT" raw "$T/overlap" '{"a":{"dtype":"F32","shape":[1,4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[1,4],"data_offsets":[8,24]}}' \
  "$ONE$ONE$ONE$ONE$ONE$ONE"
expect_reject "overlapping offsets" '{}' "$T/overlap" "'b'"
"$CRAFT" raw "$T/oob" '{"a":{"dtype":"F32","shape":[2,4],"data_offsets":[0,32]}}' "$ONE$ONE$ONE$ONE"
expect_reject "out-of-bounds offsets" '{}' "$T/oob" "'a'"
"$CRAFT" raw "$T/mismatch" '{"a":{"dtype":"F32","shape":[2,4],"data_offsets":[0,16]}}' "$ONE$ONE$ONE$ONE"
expect_reject "shape/size mismatch" '{}' "$T/mismatch" "shape \[2, 4\]"
"$CRAFT" raw "$T/dup" '{"a":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]}}' "$ONE"
expect_reject "duplicate keys" '{}' "$T/dup" "duplicate"
"$CRAFT" raw "$T/dtype" '{"a":{"dtype":"F33","shape":[1,1],"data_offsets":[0,4]}}' "$ONE"
expect_reject "unknown dtype" '{}' "$T/dtype" "F33"

# Malformed shapes.
"$CRAFT" raw "$T/oned" '{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}' "$ONE$ONE$ONE$ONE"
expect_reject "1-D a" '{}' "$T/oned" "'a' has 1 dimensions"
"$CRAFT" raw "$T/bshape" '{"a":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2,1],"data_offsets":[8,16]}}' \
  "$ONE$ONE$ONE$ONE"
expect_reject "b shape" '{}' "$T/bshape" "tensor 'b' has shape \[2, 1\]"
"$CRAFT" raw "$T/noa" '{"b":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]}}' "$ONE"
expect_reject "no a" '{}' "$T/noa" "no tensor 'a'"
"$CRAFT" raw "$T/int" '{"a":{"dtype":"I32","shape":[1,1],"data_offsets":[0,4]}}' "01000000"
expect_reject "integer dtype" '{}' "$T/int" "I32"

# Usage.
"$PARITY" reduce --in "$good" --out "$T/x" 2> /dev/null; [ $? -eq 2 ] || fail "missing --numerics: not exit 2"
"$PARITY" reduce --numerics '{}' --in "$good" --out "$T/x" --engine gpu 2> /dev/null; [ $? -eq 2 ] || fail "bad engine: not exit 2"
for c in reduce tree atoms inspect; do
  "$PARITY" $c --help > /dev/null || fail "$c --help"
done
"$PARITY" --help | grep -q "exit status" || fail "--help lacks exit statuses"
"$PARITY" frobnicate 2> /dev/null; [ $? -eq 2 ] || fail "unknown command: not exit 2"
[ "$("$PARITY" tree show halving --n 8)" = "((t0+t4)+(t2+t6))+((t1+t5)+(t3+t7))" ] || fail "tree show halving"

# Engines (docs/engines.md): every engine gives the same bits; auto checks
# the fast engine against MPFR and refuses to write on a difference.
for e in auto fast mpfr; do
  "$PARITY" reduce --numerics '{ tree = "pairwise" }' --in "$good" --out "$T/e.safetensors" --engine $e 2> "$T/err" \
    || fail "engine $e: exit $? ($(cat "$T/err"))"
  got=$("$PARITY" inspect "$T/e.safetensors" | grep -o '(0x[0-9a-f]*)' | tr -d '()' | tr '\n' ' ')
  [ "$got" = "0x3f800000 0x3f800000 " ] || fail "engine $e: y = $got"
  "$PARITY" inspect "$T/e.safetensors" | grep -q "meta engine = $e" || fail "engine $e: not in the metadata"
done
"$PARITY" reduce --numerics '{}' --in "$good" --out "$T/x" --engine fast --check 4 2> /dev/null; [ $? -eq 2 ] \
  || fail "--check without auto: not exit 2"
# The report: per-row exact value, error in ulps and bound, and a summary.
"$PARITY" reduce --numerics '{ tree = "seq" }' --in "$good" --out "$T/r.safetensors" --report "$T/r.json" 2> "$T/err" \
  || fail "report: exit $? ($(cat "$T/err"))"
for k in '"max_error_ulps"' '"max_bound_over_observed"' '"exact": "0x' '"bound_ulps"' '"bound_violations": 0' '"rows": 2'; do
  grep -q "$k" "$T/r.json" || fail "report lacks $k"
done
# seq on row 1 (1, 2^24, 1, -2^24) gives +0 (each 1 is lost to 2^24) where the exact sum is 2
grep -q '"result_bits": "0x0"' "$T/r.json" || fail "report: row 1's result"
# Negative control: a fault injected into the fast result of row 0 (always
# checked) is an internal error, exit 3, and nothing is written; without
# the check (--engine fast) the same fault goes through.
printf 'previous contents\n' > "$T/keep.safetensors"
PARITY_REDUCE_FAULT_ROW=0 "$PARITY" reduce --numerics '{ tree = "seq" }' --in "$good" --out "$T/keep.safetensors" \
  --report "$T/keep.json" 2> "$T/err"
rc=$?
[ $rc -eq 3 ] || fail "injected fault: exit $rc, want 3"
grep -q "disagree on row 0: fast fp32 0x3f800001" "$T/err" || fail "injected fault: message '$(cat "$T/err")'"
[ "$(cat "$T/keep.safetensors")" = "previous contents" ] || fail "injected fault: the output was modified"
[ ! -e "$T/keep.json" ] || fail "injected fault: a report was written"
PARITY_REDUCE_FAULT_ROW=0 "$PARITY" reduce --numerics '{ tree = "seq" }' --in "$good" --out "$T/f.safetensors" \
  --engine fast 2> /dev/null || fail "injected fault with --engine fast: exit $?"
ls -a "$T" | grep -q '\.tmp\.' && fail "a temporary file was left behind"

# The accumulator input c (docs/numerics.md §4.1, §6), rows as in $good.
# seq from c: row 0 from -2^24: 0, 1, 1 - 2^24 = -16777215, -16777214
# (0xcb7ffffe); row 1 from 1: 2, 2^24 + 2, 2^24 + 3 → 2^24 + 4 (a tie, even),
# 4 (0x40800000).  pairwise is round(T + c): row 0 1 - 2^24 (0xcb7fffff),
# row 1 1 + 1 = 2.  Without c: 1 and 0 (above).
withc="$T/withc.safetensors"
"$CRAFT" raw "$withc" '{"a":{"dtype":"F32","shape":[2,4],"data_offsets":[0,32]},"c":{"dtype":"F32","shape":[2],"data_offsets":[32,40]}}' \
  "$P24$ONE$M24$ONE$ONE$P24$ONE$M24$M24$ONE"
withc_bf16="$T/withc_bf16.safetensors" # the same c as BF16 (-2^24 = 0xcb80, 1 = 0x3f80)
"$CRAFT" raw "$withc_bf16" '{"a":{"dtype":"F32","shape":[2,4],"data_offsets":[0,32]},"c":{"dtype":"BF16","shape":[2],"data_offsets":[32,36]}}' \
  "$P24$ONE$M24$ONE$ONE$P24$ONE$M24"80cb803f
check_c() {
  name=$1 in=$2 tree=$3 engine=$4 want=$5
  "$PARITY" reduce --numerics "{ tree = \"$tree\" }" --in "$in" --out "$T/yc.safetensors" --engine "$engine" \
    2> "$T/err" || fail "c $name $tree $engine: exit $? ($(cat "$T/err"))"
  got=$("$PARITY" inspect "$T/yc.safetensors" | grep -o '(0x[0-9a-f]*)' | tr -d '()' | tr '\n' ' ')
  [ "$got" = "$want" ] || fail "c $name $tree $engine: y = $got, want $want"
}
for e in auto fast mpfr; do
  check_c F32 "$withc" seq $e "0xcb7ffffe 0x40800000 "
  check_c F32 "$withc" pairwise $e "0xcb7fffff 0x40000000 "
  check_c BF16 "$withc_bf16" seq $e "0xcb7ffffe 0x40800000 "
done
"$PARITY" inspect "$T/yc.safetensors" | grep -q 'meta c = BF16' || fail "c: its dtype is not in the metadata"
"$PARITY" reduce --numerics '{ tree = "seq" }' --in "$good" --out "$T/nc.safetensors" 2> /dev/null
h_without=$("$PARITY" inspect "$T/nc.safetensors" | grep 'numerics_hash')
h_with=$("$PARITY" inspect "$T/yc.safetensors" | grep 'numerics_hash')
[ "$h_without" != "$h_with" ] || fail "c: the hash does not change with c"
# The report's exact value includes c: seq's row 0 is exact (-16777214 =
# 2 - 2^24); row 1's is 1 + 2^24 + 1 - 2^24 + c = 3, its result 4.  Without
# c in the exact value no row would be exact.
"$PARITY" reduce --numerics '{ tree = "seq" }' --in "$withc" --out "$T/rc.safetensors" --report "$T/rc.json" 2> "$T/err" \
  || fail "c report: exit $? ($(cat "$T/err"))"
grep -q '"c_format": "fp32"' "$T/rc.json" || fail "c report: no c_format"
grep -q '"bound_violations": 0' "$T/rc.json" || fail "c report: the bound is violated"
grep -q '"rows_exact": 1' "$T/rc.json" || fail "c report: row 0 is not exact against the sum + c"
# auto's MPFR re-check runs from c too: a fault is still caught
PARITY_REDUCE_FAULT_ROW=1 "$PARITY" reduce --numerics '{ tree = "seq" }' --in "$withc" --out "$T/fc.safetensors" \
  2> "$T/err"
rc=$?
[ $rc -eq 3 ] || fail "c injected fault: exit $rc, want 3"
grep -q "disagree on row 1: fast fp32 0x40800001" "$T/err" || fail "c injected fault: message '$(cat "$T/err")'"
# c of the wrong shape or dtype: exit 2, naming c and its shape, nothing written
"$CRAFT" raw "$T/c3" '{"a":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]},"c":{"dtype":"F32","shape":[3],"data_offsets":[8,20]}}' \
  "$ONE$ONE$ONE$ONE$ONE"
expect_reject "c of 3 rows" '{}' "$T/c3" "tensor 'c' has shape \[3\]; expected \[2\]"
"$CRAFT" raw "$T/c21" '{"a":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]},"c":{"dtype":"F32","shape":[2,1],"data_offsets":[8,16]}}' \
  "$ONE$ONE$ONE$ONE"
expect_reject "c of 2 dimensions" '{}' "$T/c21" "tensor 'c' has shape \[2, 1\]"
"$CRAFT" raw "$T/cint" '{"a":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]},"c":{"dtype":"I32","shape":[2],"data_offsets":[8,16]}}' \
  "$ONE$ONE"0100000001000000
expect_reject "c of I32" '{}' "$T/cint" "tensor 'c' (shape \[2\]): dtype I32"

# Size classes (docs/numerics.md §4.3, fourth edition): `n` in a selector is
# the reduction length.  The rows of one input share n, so two inputs: rows
# of 2^24 then n - 1 ones at n = 7 and n = 48.  n = 7 takes reverse(seq):
# 6 + 2^24, exact, 0x4b800003; n = 48 takes seq: every + 1 ties back to 2^24,
# 0x4b800000.  The same rows under reverse(seq) alone give 0x4b800018 at
# n = 48 (2^24 + 47 ties to 2^24 + 48), so each length shows its class.
sized() {
  n=$1 row=$P24 k=1
  while [ $k -lt "$n" ]; do row="$row$ONE"; k=$((k + 1)); done
  "$CRAFT" raw "$T/n$n" "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,$n],\"data_offsets\":[0,$((8 * n))]}}" "$row$row"
}
SIZED='{ tree = "seq", rows = [{ select = "n < 48", tree = "reverse(seq)" }] }'
for nw in "7 0x4b800003" "48 0x4b800000"; do
  set -- $nw
  sized "$1"
  for eng in mpfr fast auto; do
    "$PARITY" reduce --engine $eng --numerics "$SIZED" --in "$T/n$1" --out "$T/y.safetensors" 2> "$T/err" \
      || fail "size class n = $1 ($eng): exit $? ($(cat "$T/err"))"
    got=$("$PARITY" inspect "$T/y.safetensors" | grep -o '(0x[0-9a-f]*)' | tr -d '()' | tr '\n' ' ')
    [ "$got" = "$2 $2 " ] || fail "size class n = $1 ($eng): y = $got, want $2 $2"
  done
done
"$PARITY" reduce --engine mpfr --numerics '{ tree = "reverse(seq)" }' --in "$T/n48" --out "$T/y.safetensors" 2> "$T/err" \
  || fail "reverse(seq) at n = 48: exit $?"
got=$("$PARITY" inspect "$T/y.safetensors" | grep -o '(0x[0-9a-f]*)' | tr -d '()' | tr '\n' ' ')
[ "$got" = "0x4b800018 0x4b800018 " ] || fail "reverse(seq) at n = 48 (the control): y = $got"
expect_reject "n against a non-integer" '{ rows = [{ select = "n < 4.5" }] }' "$T/n7" "unexpected '\.'"
expect_reject "a name that is not n" '{ rows = [{ select = "len < 48" }] }' "$T/n7" "unknown name 'len'"
expect_reject "n against a negative number" '{ rows = [{ select = "n < -1" }] }' "$T/n7" "column 5: expected a number, a name or '('"
"$CRAFT" raw "$T/n0" '{"a":{"dtype":"F32","shape":[1,0],"data_offsets":[0,0]}}' ""
expect_reject "a division by n at n = 0" '{ rows = [{ select = "r / n == 0" }] }' "$T/n0" "division by zero at row 0"

if [ $fails -ne 0 ]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "cli_reduce: all checks passed"
