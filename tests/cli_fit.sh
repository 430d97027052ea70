#!/bin/sh
# cli_fit.sh PARITY ST_CRAFT [long]: `parity fit` from the outside.  Outputs
# are made by `parity reduce` at hidden points on two lengths n; fit must
# print (last line of stdout) a point that `parity reduce` accepts and that
# reproduces the hidden point's outputs bit for bit on FRESH inputs (another
# seed, another n), compared as raw bytes of tensor y.  A Y no point of the
# space makes exits 1 with the closest candidates; bad inputs exit 2 naming
# the file and tensor.  With a third argument `long`, more hidden points.
set -u
PARITY=$1
CRAFT=$2
MODE=${3:-}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# y_bytes FILE ROWS BYTES: tensor y's data (the last ROWS*BYTES bytes of a
# one-tensor safetensors file) as hex.
y_bytes() { tail -c $(($2 * $3)) "$1" | od -An -tx1 | tr -d ' \n'; }

# recover NAME POINT DTYPE(a) DTYPE(b or -) YBYTES: fit on two pairs (14 rows
# of n = 300, or R1 rows; 11 rows of n = 517), with --space SPACE when set,
# then check on fresh inputs.
recover() {
  name=$1 point=$2 da=$3 db=$4 yb=$5
  bopt=$db
  [ "$db" = "-" ] && bopt=
  "$CRAFT" rand "$T/i1" "$da" "${R1:-14}" 300 11 $bopt || { fail "$name: craft"; return; }
  "$CRAFT" rand "$T/i2" "$da" 11 517 12 $bopt || { fail "$name: craft"; return; }
  "$CRAFT" rand "$T/i3" "$da" 13 389 13 $bopt || { fail "$name: craft"; return; }
  for i in 1 2 3; do
    "$PARITY" reduce --numerics "$point" --in "$T/i$i" --out "$T/y$i" 2> "$T/err" ||
      { fail "$name: reduce at the hidden point: $(cat "$T/err")"; return; }
  done
  set --
  [ -n "${SPACE:-}" ] && set -- --space "$SPACE"
  "$PARITY" fit --in "$T/i1" --ref "$T/y1" --in "$T/i2" --ref "$T/y2" "$@" > "$T/out" 2> "$T/err"
  rc=$?
  [ $rc -eq 0 ] || { fail "$name: fit exit $rc: $(tail -3 "$T/err")"; return; }
  grep -q 'candidates/s\|/s;\|/s)' "$T/err" || fail "$name: no progress (candidates per second) on stderr"
  fitted=$(tail -n 1 "$T/out")
  "$PARITY" reduce --numerics "$fitted" --in "$T/i3" --out "$T/f3" 2> "$T/err" ||
    { fail "$name: reduce does not accept the fitted point '$fitted': $(cat "$T/err")"; return; }
  [ "$(y_bytes "$T/y3" 13 "$yb")" = "$(y_bytes "$T/f3" 13 "$yb")" ] ||
    fail "$name: the fitted point '$fitted' differs from the hidden point on fresh inputs"
  # and on the fitting inputs themselves
  "$PARITY" reduce --numerics "$fitted" --in "$T/i2" --out "$T/f2" 2> /dev/null
  [ "$(y_bytes "$T/y2" 11 "$yb")" = "$(y_bytes "$T/f2" 11 "$yb")" ] ||
    fail "$name: the fitted point does not reproduce its own Y"
}

recover stride '{ fma = true, tree = "stride(32, seq, halving, block=4)" }' F32 F32 4
recover body '{ tree = "body(8, stride(8, seq[fma=true], seq), seq[fma=false], carry)" }' F32 F32 4
recover split '{ tree = "split(4, pairwise, seq)" }' F32 F32 4
# the clean-up loop first (docs/numerics.md's eighth edition): n mod 8
# terms before 8 lanes, 4 of them at 300, 5 at 517 and at the fresh 389
recover head '{ tree = "head(8, seq, stride(8, seq, pairwise))" }' F32 F32 4
# a level-3 BLAS's K blocking (OpenBLAS sgemm on a Haswell core): 517 is
# cut 264 + 253, which K blocks of 512 give too; the fresh 389 (320 + 69
# halved to 200 + 189, a single block for 512) holds the fit to 320
recover kblock '{ fma = true, tree = "tile(320, seq, seq, halve=8)" }' F32 F32 4
recover rowclass '{ tree = "stride(8, seq, halving)", rows = [{ select = "r >= R - R % 4", fma = false, tree = "seq" }] }' F32 F32 4
# nested remainders: a 1-row kernel after a 2-row one after 4-row tiles.
# The last class has one row per pair (two in all): among the 12,180
# candidates of the default space some reproduce two rows by chance, so the
# space is a small one, as a user who read the kernel would give.
R1=15 SPACE='stride(8, seq, halving); seq; pairwise; stride(2, seq, seq); halving' recover nested '{ tree = "stride(8, seq, halving)", rows = [{ select = "r >= R - R % 2", fma = false, tree = "seq" }, { select = "r >= R - R % 4", tree = "pairwise" }] }' F32 F32 4
if [ "$MODE" = long ]; then
  recover fp64acc '{ acc = "fp64", fma = false, product = "fp32", tree = "tile(64, pairwise, seq)", out = "fp32" }' F32 F32 4
  recover sum_bf16 '{ acc = "fp32", tree = "stride(16, seq, pairwise)", out = "bf16" }' BF16 - 2
  recover rowclass3 '{ tree = "split(2, seq, seq)", rows = [{ select = "r < 2", tree = "pairwise" }, { select = "r >= R - R % 4", fma = false, tree = "seq" }] }' F32 F32 4
fi

# --space: a list expanded into trees; the fitted point is from it
"$CRAFT" rand "$T/i1" F32 6 300 21 F32
"$CRAFT" rand "$T/i2" F32 6 200 22 F32
for i in 1 2; do "$PARITY" reduce --numerics '{ tree = "tile(16, pairwise, seq)" }' --in "$T/i$i" --out "$T/y$i"; done
# space_fit LABEL SPACE COUNT: fit pairs 1 and 2 over SPACE; exit 0, COUNT
# candidates, the hidden tile(16, pairwise, seq) fitted
space_fit() {
  "$PARITY" fit --in "$T/i1" --ref "$T/y1" --in "$T/i2" --ref "$T/y2" --space "$2" > "$T/out" 2> "$T/err"
  rc=$?
  [ $rc -eq 0 ] || fail "$1: exit $rc: $(tail -2 "$T/err")"
  tail -n 1 "$T/out" | grep -q 'tree = "tile(16, pairwise, seq)"' || fail "$1: fitted '$(tail -n 1 "$T/out")'"
  grep -q "^parity fit: $3 candidates" "$T/err" || fail "$1: want $3 candidates: $(head -1 "$T/err")"
}
# 6 trees x 5 settings
space_fit space 'let P = 4, 8, 16; tile({P}, pairwise, seq); tile({P}, seq, seq)' 30
# a list defined again replaces the first from its line on, and may name it:
# P is 16, 4 (the first definition once won: tile(4, ...) alone)
space_fit "space again" 'let P = 4; let P = 16, {P}; tile({P}, pairwise, seq)' 10

# a space line longer than 512 characters is taken whole: 64 nested
# reverse() (an even number, so the order is tile(16, pairwise, seq)'s)
# around the answer; the line was once cut at 512 bytes and refused
long="tile(16, pairwise, seq)"
k=0
while [ $k -lt 64 ]; do long="reverse($long)"; k=$((k + 1)); done
[ ${#long} -gt 512 ] || fail "long space line: only ${#long} characters"
"$PARITY" fit --in "$T/i1" --ref "$T/y1" --in "$T/i2" --ref "$T/y2" --space "seq; $long" > "$T/out" 2> "$T/err"
rc=$?
[ $rc -eq 0 ] || fail "long space line: exit $rc: $(tail -2 "$T/err")"
tail -n 1 "$T/out" | grep -q 'reverse(reverse(' || fail "long space line: fitted '$(tail -n 1 "$T/out")'"

# Y as a .npy array (written here byte by byte: magic, version 1.0, header
# padded to 64 bytes, the 6 float32 values of y1)
h="{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }"
pad=$((64 - (10 + ${#h} + 1) % 64))
{ printf '\223NUMPY\001\000'; printf "\\$(printf '%03o' $(((${#h} + pad + 1) % 256)))\\$(printf '%03o' $(((${#h} + pad + 1) / 256)))"
  printf '%s%*s\n' "$h" $pad ''; tail -c 24 "$T/y1"; } > "$T/y1.npy"
"$PARITY" fit --in "$T/i1" --ref "$T/y1.npy" --in "$T/i2" --ref "$T/y2" \
  --space 'let P = 4, 8, 16; tile({P}, pairwise, seq); tile({P}, seq, seq)' > "$T/out" 2> "$T/err"
rc=$?
[ $rc -eq 0 ] || fail "npy: exit $rc: $(tail -2 "$T/err")"
tail -n 1 "$T/out" | grep -q 'tree = "tile(16, pairwise, seq)"' || fail "npy: fitted '$(tail -n 1 "$T/out")'"

# outside the space: stride of 3 lanes, not a power of two
"$PARITY" reduce --numerics '{ tree = "stride(3, seq, halving)" }' --in "$T/i1" --out "$T/y1"
"$PARITY" reduce --numerics '{ tree = "stride(3, seq, halving)" }' --in "$T/i2" --out "$T/y2"
"$PARITY" fit --in "$T/i1" --ref "$T/y1" --in "$T/i2" --ref "$T/y2" --max 3000 > "$T/out" 2> "$T/err"
rc=$?
[ $rc -eq 1 ] || fail "outside: exit $rc, want 1"
grep -q 'closest 1: [0-9]*/12 rows differ: {' "$T/out" || fail "outside: no closest candidates: $(cat "$T/out")"

# Per-part arithmetic: one part of the kernel's tree in a setting of its
# own (a tail summed in double, a body in double with its tail in float),
# which no point of the default space is.  fit takes the closest trees and
# tries each part in other settings (docs/fit.md "Per-part arithmetic").
# Without that step nothing fits (exit 1; 13 of 25 rows at best for the
# first).
# The third has two parts of its own (the lanes in double, the tail
# without FMA): the closest trees miss it, the row classes do not fit, and
# every body with each part in each setting (about 140,000 points) finds
# it, the tail's FMA flip being one of the space's bodies.  Under
# AddressSanitizer (14 s there) the third is left out: the "outside" case
# above runs the same search to its end.
set -- '{ tree = "body(8, stride(8, seq, seq), seq[acc=fp64])" }' \
  '{ acc = "fp64", fma = false, tree = "body(16, stride(16, seq, pairwise), seq[acc=fp32])" }'
ldd "$PARITY" 2>/dev/null | grep -q libasan ||
  set -- "$@" '{ tree = "body(16, stride(16, seq, pairwise)[acc=fp64], seq[fma=false])" }'
for hp in "$@"; do
  "$CRAFT" rand "$T/p1" F32 14 300 61 F32
  "$CRAFT" rand "$T/p2" F32 11 517 62 F32
  "$CRAFT" rand "$T/p3" F32 13 389 63 F32
  for i in 1 2 3; do "$PARITY" reduce --numerics "$hp" --in "$T/p$i" --out "$T/py$i" || fail "parts: reduce at $hp"; done
  "$PARITY" fit --in "$T/p1" --ref "$T/py1" --in "$T/p2" --ref "$T/py2" --json > "$T/out" 2> "$T/err"
  rc=$?
  fitted=$(tail -n 1 "$T/out")
  if [ $rc -ne 0 ]; then
    fail "parts $hp: exit $rc: $(tail -3 "$T/err")"
  else
    grep -q '^parity fit: per-part arithmetic: [0-9]* candidates (.*), [0-9.]* s$' "$T/err" ||
      fail "parts $hp: no per-part line: $(cat "$T/err")"
    grep -q '"per_part":true' "$T/out" || fail "parts $hp: --json does not say per_part: $(head -c 300 "$T/out")"
    "$PARITY" reduce --numerics "$fitted" --in "$T/p3" --out "$T/pf3" 2> "$T/err" || fail "parts: reduce refuses '$fitted': $(cat "$T/err")"
    [ "$(y_bytes "$T/py3" 13 4)" = "$(y_bytes "$T/pf3" 13 4)" ] ||
      fail "parts $hp: the fitted point '$fitted' differs from the hidden point on fresh inputs"
  fi
done

# grid_fit NAME M N SEED HIDDEN TEXT...: outputs of the hidden point on an
# M x N grid at n = 300 and 517 (seeds SEED, SEED + 1); fit --grid must
# print a point that holds each TEXT (fixed strings) and reproduces the
# hidden one on fresh inputs (n = 389, seed SEED + 2) on the same grid.
grid_fit() {
  name=$1 m=$2 nn=$3 seed=$4 hp=$5
  shift 5
  R=$((m * nn))
  "$CRAFT" rand "$T/g1" F32 $R 300 $seed F32
  "$CRAFT" rand "$T/g2" F32 $R 517 $((seed + 1)) F32
  "$CRAFT" rand "$T/g3" F32 $R 389 $((seed + 2)) F32
  for i in 1 2 3; do "$PARITY" reduce --numerics "$hp" --in "$T/g$i" --out "$T/gy$i" || fail "$name: reduce at the hidden point"; done
  "$PARITY" fit --in "$T/g1" --ref "$T/gy1" --in "$T/g2" --ref "$T/gy2" --grid $m,$nn > "$T/out" 2> "$T/err"
  rc=$?
  [ $rc -eq 0 ] || { fail "$name: exit $rc: $(tail -3 "$T/err")"; return; }
  fitted=$(tail -n 1 "$T/out")
  for want in "$@"; do
    printf '%s\n' "$fitted" | grep -qF -- "$want" || fail "$name: fitted '$fitted' does not hold '$want'"
  done
  "$PARITY" reduce --numerics "$fitted" --in "$T/g3" --out "$T/gf3" 2> "$T/err" || { fail "$name: reduce refuses '$fitted': $(cat "$T/err")"; return; }
  [ "$(y_bytes "$T/gy3" $R 4)" = "$(y_bytes "$T/gf3" $R 4)" ] ||
    fail "$name: the fitted point '$fitted' differs from the hidden point on fresh inputs"
}
# --grid, two rectangles: on 12 x 12 the cells of rows 0-3 at columns 8-11
# and of rows 8-11 at columns 0-3 take another path, which no set of rows
# or columns, nor one of each, holds (docs/fit.md "Two rectangles").  The
# hidden point spells them its own way; fit names them by its families:
# rows 0-3 `i % 12 < 4` (12 % P is never 8), columns 8-11 `j >= N - N % 8`.
# Then the two other corners: (0, 0) lies in the class, so the tree that
# fits row 0 is the class's, and fit names the other cells: rows 0-7 at
# columns 4-11 and rows 4-11 at columns 0-7, again two rectangles.  One
# cell of those is right by chance under the class's tree at both lengths:
# the class is taken from the cells both trees get right too.
grid_fit "rects p" 12 12 41 \
  '{ tree = "stride(8, seq, halving)", grid = [12, 12], rows = [{ select = "(i < 4 && j >= 8) || (i >= 8 && j < 4)", fma = false, tree = "seq" }] }' \
  'fma = true, product = "exact", tree = "stride(8, seq, halving)"' \
  'grid = [12, 12], rows = [{ select = "(i % 12 < 4 && j >= N - N % 8) || (i >= M - M % 8 && j % 12 < 4)", acc = "fp32", rounding = "rne", fma = false, product = "exact", tree = "seq"'
grid_fit "rects q" 12 12 41 \
  '{ tree = "stride(8, seq, halving)", grid = [12, 12], rows = [{ select = "(i < 4 && j < 4) || (i >= 8 && j >= 8)", fma = false, tree = "seq" }] }' \
  'fma = false, product = "exact", tree = "seq"' \
  'grid = [12, 12], rows = [{ select = "(i < M - M % 8 && j % 12 >= 4) || (i % 12 >= 4 && j < N - N % 8)", acc = "fp32", rounding = "rne", fma = true, product = "exact", tree = "stride(8, seq, halving)"'

# --grid: 60 rows as a 6 x 10 grid, the edge rows (i >= 4: M % 4 = 2) and
# the edge columns (j >= 8: N % 4 = 2) of a 4 x 4 tile take another path.
# No selector over r alone holds those rows short of listing them; fit
# with --grid names the grid class, and the point reproduces the hidden
# one on fresh inputs (another seed, another n) on the same grid.
# (last: the bad inputs below use its files)
grid_fit grid 6 10 31 \
  '{ tree = "stride(8, seq, halving)", grid = [6, 10], rows = [{ select = "i >= M - M % 4 || j >= N - N % 4", fma = false, tree = "seq" }] }' \
  'grid = [6, 10], rows = [{ select = "i >= M - M % 4 || j >= N - N % 4"'

# bad inputs: exit 2, naming the file and tensor
expect2() {
  name=$1 pattern=$2
  shift 2
  timeout 60 "$PARITY" fit "$@" > "$T/out" 2> "$T/err"
  rc=$?
  [ $rc -eq 2 ] || fail "$name: exit $rc, want 2 ($(cat "$T/err"))"
  grep -q -- "$pattern" "$T/err" || fail "$name: message '$(cat "$T/err")' lacks '$pattern'"
}
"$CRAFT" rand "$T/i4" F32 5 100 3 F32
"$PARITY" reduce --numerics '{ tree = "seq" }' --in "$T/i4" --out "$T/y4"
expect2 pairs '--in and --ref in pairs' --in "$T/i1"
expect2 noy "$T/i1: no tensor 'y'" --in "$T/i1" --ref "$T/i1"
expect2 rows "$T/y4: tensor 'y'" --in "$T/i1" --ref "$T/y4"
expect2 noa "$T/y1: unexpected tensor 'y'" --in "$T/y1" --ref "$T/y1"
expect2 missing "$T/nope" --in "$T/nope" --ref "$T/y1"
expect2 space 'line 2' --in "$T/i1" --ref "$T/y1" --space "$(printf 'seq; pairwise\nstride(4, seq')"
# a space whose lists expand to 10^8 candidates is refused before it is built
printf 'let a = 1,2,3,4,5,6,7,8,9,10\nlet b = 1,2,3,4,5,6,7,8,9,10\nlet c = 1,2,3,4,5,6,7,8,9,10\nlet d = 1,2,3,4,5,6,7,8,9,10\nsplit({a}, stride({b}, seq, seq), seq) {c}{d}{a}{b}{c}{d}\n' > "$T/big.space"
expect2 bigspace 'line 5: its {NAME} lists expand to more than 100000 candidates' --in "$T/i1" --ref "$T/y1" --space "$T/big.space"
# a list naming itself once expanded 16 levels deep and dropped the rest:
# 4^16 calls (a hang) for four values, "no candidates" for two
expect2 selflist "line 1: list 'a' names itself ({a}), and no list 'a' is defined above it" --in "$T/i1" --ref "$T/y1" \
  --space "$(printf 'let a = {a},{a},{a},{a}\ntile(4, seq, {a})')"
# two lists naming each other: a's {b} names no list where a is defined, so
# it stays as written, and the tree refuses it (it was dropped, unsaid)
expect2 mutuallist "line 3: tree:" --in "$T/i1" --ref "$T/y1" --space "$(printf 'let a = x{b}\nlet b = {a}\nseq{b}')"
# a list's own values are bounded as a line is
expect2 biglist "line 3: list 'b' expands to more than 100000 values" --in "$T/i1" --ref "$T/y1" \
  --space "$(printf 'let a = 1,2,3,4,5,6,7,8,9,10\nlet c = 1\nlet b = {a}{a}{a}{a}{a}{a}')"
# and the whole space: 83 default spaces of 12,180 candidates (82 of them
# hold 998,760)
awk 'BEGIN { for (i = 0; i < 83; i++) print "default" }' > "$T/many.space"
expect2 manyspace "line 83: the space holds more than 1000000 candidates" --in "$T/i1" --ref "$T/y1" --space "$T/many.space"
# --grid: one grid for every pair, M * N its rows, "M,N" with positive integers
expect2 gridrows "pair 2 ($T/i1, $T/y1) has 6" --in "$T/g1" --ref "$T/gy1" --in "$T/i1" --ref "$T/y1" --grid 6,10
expect2 gridprod "--grid 7,10 lays out 70 rows, but pair 1 ($T/g1, $T/gy1) has 60" --in "$T/g1" --ref "$T/gy1" --grid 7,10
expect2 gridform "--grid '6x10': expected M,N" --in "$T/g1" --ref "$T/gy1" --grid 6x10
expect2 gridzero "--grid '0,60': expected M,N" --in "$T/g1" --ref "$T/gy1" --grid 0,60
expect2 gridtwice "--grid given twice" --in "$T/g1" --ref "$T/gy1" --grid 6,10 --grid 6,10
"$CRAFT" rand "$T/s1" F32 6 300 21
expect2 dotsum "$T/s1: has no 'b'" --in "$T/i1" --ref "$T/y1" --in "$T/s1" --ref "$T/y1"

# Lengths that leave remainders unseen are said: n = 300 and 516 are both
# 0 mod 4 (and mod 2 both even), so a tail that runs at odd n is in no row
"$CRAFT" rand "$T/e1" F32 8 300 31 F32 || fail "even lengths: craft"
"$CRAFT" rand "$T/e2" F32 8 516 32 F32 || fail "even lengths: craft"
for i in 1 2; do
  "$PARITY" reduce --numerics '{ tree = "pairwise" }' --in "$T/e$i" --out "$T/ey$i" 2> /dev/null || fail "even lengths: reduce"
done
"$PARITY" fit --in "$T/e1" --ref "$T/ey1" --in "$T/e2" --ref "$T/ey2" > "$T/out" 2> "$T/err" || fail "even lengths: fit"
grep -q '^parity fit: note: no pair has n mod 2 in {1}: a path that runs only there' "$T/err" \
  || fail "even lengths: the unseen remainders are not said: $(grep note "$T/err")"
"$CRAFT" rand "$T/e3" F32 8 389 33 F32 || fail "even lengths: craft"
"$PARITY" reduce --numerics '{ tree = "pairwise" }' --in "$T/e3" --out "$T/ey3" 2> /dev/null || fail "odd length: reduce"
"$PARITY" fit --in "$T/e1" --ref "$T/ey1" --in "$T/e3" --ref "$T/ey3" > /dev/null 2> "$T/err" || fail "300 and 389: fit"
grep -q 'note: no pair has n mod 2 ' "$T/err" && fail "300 and 389: a remainder mod 2 said unseen"
grep -q 'note: no pair has n mod 4 in {2, 3}' "$T/err" || fail "300 and 389: n mod 4 in {2, 3} unseen, not said: $(grep note "$T/err")"

[ $fails -eq 0 ] && echo "cli_fit: all passed"
[ $fails -eq 0 ]
