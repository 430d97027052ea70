#!/bin/sh
# cli_reveal_grid.sh PARITY LIBGEMM_TILE CRAFT: `parity reveal --grid M,N`
# (docs/reveal.md "Grid classes"): a gemm probed one M x N output a call,
# its row classes named over i and j.  The expected selectors and trees are
# written by hand from the simulated points' declarations and from
# examples/reveal/gemm_tile.c's source, never taken from reveal's output:
#   - simulated grid points: an edge-column class, an edge row and an edge
#     column on different paths (listed in the order first-true-wins needs),
#     a corner, two rectangles (OpenBLAS's 36 x 40 sgemm, simulated); the
#     revealed point and the simulated one give the same
#     bytes through `parity reduce` on fresh rows at lengths not probed;
#   - the tiled C gemm (4 x 4 register tiles, 4 fused lanes; the edge one
#     accumulator with a separate multiply and add) by --dlopen: the class
#     `i >= M - M % 4 || j >= N - N % 4` with fma = false, the rest fused;
#     on a grid whose M and N are multiples of 4 no class at all; the rows
#     its arithmetic is fitted on go one whole grid a call;
#   - the same kernel without --grid: it refuses calls that are not a grid
#     (exit 3), and reveal never sends it anything else with --grid (a batch
#     that is not one gemm's would come out wrong and fail the confirmation).
set -u
P=$1
LIB=$2
CRAFT=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# grid_sim NAME M,N N SIM SELECTORS...: reveal the simulated point SIM on the
# grid; exit 0, the point holds `grid = [M, N]` and its classes' selectors
# are SELECTORS in that order; then the revealed and the simulated point give
# the same bytes through `parity reduce` on fresh random rows at two lengths
grid_sim() {
  name=$1 grid=$2 n=$3 sim=$4
  shift 4
  out=$("$P" reveal --simulate "$sim" --grid "$grid" --n "$n" 2>"$T/err")
  rc=$?
  last=$(printf '%s\n' "$out" | tail -n 1)
  [ $rc -eq 0 ] || { fail "$name: exit $rc: $(cat "$T/err") $out"; return; }
  m=${grid%,*} nn=${grid#*,}
  case "$last" in *"grid = [$m, $nn]"*) ;; *) fail "$name: no grid = [$m, $nn] in $last" ;; esac
  got=$(printf '%s\n' "$last" | grep -o 'select = "[^"]*"' | sed 's/select = "\(.*\)"/\1/' | tr '\n' ';')
  exp=$(for s in "$@"; do printf '%s;' "$s"; done)
  [ "$got" = "$exp" ] || fail "$name: selectors '$got', expected '$exp'"
  for L in $((n + 5)) 17; do
    "$CRAFT" rand "$T/in.st" F32 $((m * nn)) $L 31 >/dev/null || { fail "$name: craft"; return; }
    "$P" reduce --numerics "$sim" --in "$T/in.st" --out "$T/y1.st" 2>"$T/err" &&
      "$P" reduce --numerics "$last" --in "$T/in.st" --out "$T/y2.st" 2>>"$T/err" ||
      { fail "$name: reduce at n = $L: $(cat "$T/err")"; return; }
    # y's bytes: the last 4 per row (the header holds each point's own text)
    y1=$(tail -c $((m * nn * 4)) "$T/y1.st" | od -An -tx1 | tr -d ' \n')
    y2=$(tail -c $((m * nn * 4)) "$T/y2.st" | od -An -tx1 | tr -d ' \n')
    [ -n "$y1" ] && [ "$y1" = "$y2" ] || fail "$name: the revealed point and the simulated one differ at n = $L"
  done
}

# the last two columns seq (N = 10: N % 4 = 2), the rest pairwise
grid_sim "edge columns" 6,10 24 \
  '{ tree = "pairwise", grid = [6, 10], rows = [{ select = "j >= N - N % 4", tree = "seq" }] }' \
  "j >= N - N % 4"
# an edge row (M = 7: M % 2 = 1, the last row) on one path, every fifth
# column from the fourth on another: two classes, the smaller listed first
grid_sim "edge row and columns" 7,10 20 \
  '{ tree = "pairwise", grid = [7, 10], rows = [{ select = "i >= M - M % 2", tree = "seq" }, { select = "j % 5 >= 3", tree = "reverse(seq)" }] }' \
  "i >= M - M % 2" "j % 5 >= 3"
# a corner: the last two rows and the last two columns at once
grid_sim "corner" 6,10 16 \
  '{ tree = "pairwise", fma = false, grid = [6, 10], rows = [{ select = "i >= M - M % 4 && j >= N - N % 4", tree = "seq", fma = false }] }' \
  "i >= M - M % 4 && j >= N - N % 4"
# two rectangles, OpenBLAS's Haswell sgemm at 36 x 40: two lanes over
# rounds of 8 terms at rows 0-7 and 24-31 for the columns j % 12 < 6 and
# at rows 0-31 for the last 4 columns, one running sum elsewhere; named by
# the families (docs/fit.md "Two rectangles": rows 0-31 `i < M - M % 8`,
# columns 36-39 the first spelling `j >= N - N % 6`)
# (under AddressSanitizer, 27 s there, two blocks of 12 x 12 instead: the
# same naming, test_reveal_grid runs the 36 x 40 one)
if ldd "$P" 2>/dev/null | grep -q libasan; then
  grid_sim "two rectangles" 12,12 24 \
    '{ tree = "pairwise", grid = [12, 12], rows = [{ select = "(i < 4 && j >= 8) || (i >= 8 && j < 4)", tree = "seq" }] }' \
    "(i % 12 < 4 && j >= N - N % 8) || (i >= M - M % 8 && j % 12 < 4)"
else
  grid_sim "two rectangles" 36,40 24 \
    '{ tree = "seq", grid = [36, 40], rows = [{ select = "(i % 24 < 8 && j % 12 < 6) || (i < 32 && j >= 36)", tree = "lanes(2, [loop(2, 8), rest(0)], seq)" }] }' \
    "(i % 24 < 8 && j % 12 < 6) || (i < M - M % 8 && j >= N - N % 6)"
fi

# the tiled C gemm: its edge (rows 4, 5 and columns 8, 9 of 6 x 10) one
# accumulator, unfused; whole tiles 4 fused lanes over blocks of 4 terms,
# combined (l0 + l1) + (l2 + l3), the tail fused into the sum (at n = 100
# the tail does not run; the induction length 107 has one of 3 terms)
out=$("$P" reveal --dlopen "$LIB:gemm_tile" --grid 6,10 --n 100 2>"$T/err")
rc=$?
last=$(printf '%s\n' "$out" | tail -n 1)
if [ $rc -ne 0 ]; then
  fail "gemm_tile 6 x 10: exit $rc: $(cat "$T/err") $out"
else
  case "$last" in
    *'fma = true, product = "exact", tree = "body(4, stride(4, seq, pairwise), seq, carry)"'*'grid = [6, 10], rows = [{ select = "i >= M - M % 4 || j >= N - N % 4", acc = "fp32", rounding = "rne", fma = false, product = "exact", tree = "seq"'*) ;;
    *) fail "gemm_tile 6 x 10: point $last" ;;
  esac
  printf '%s\n' "$out" | grep -q '^lengths: at n = 101 (not probed) the point reproduced 1020 of 1020 ' ||
    fail "gemm_tile 6 x 10: not held at n = 101: $out"
  # the rows the arithmetic is fitted on go as whole gemms, 60 rows a call
  # (packed, the targeted and random rows took about 6 a call)
  ar=$(printf '%s\n' "$out" | sed -n 's/^arithmetic probes: \([0-9]*\) rows in \([0-9]*\) calls.*/\1 \2/p')
  set -- $ar
  [ $# -eq 2 ] && [ "$2" -gt 0 ] && [ "$1" -eq $(($2 * 60)) ] ||
    fail "gemm_tile 6 x 10: the arithmetic's rows not one grid a call: '$ar'"
fi
# 8 x 12: every output in a whole tile, no class
out=$("$P" reveal --dlopen "$LIB:gemm_tile" --grid 8,12 --n 100 2>"$T/err")
rc=$?
last=$(printf '%s\n' "$out" | tail -n 1)
case "$rc:$last" in
  *'fma = true, product = "exact", tree = "body(4, stride(4, seq, pairwise), seq, carry)"'*) ;;
  *) fail "gemm_tile 8 x 12: exit $rc, point $last $(cat "$T/err")" ;;
esac
case "$last" in *select*|*grid*) fail "gemm_tile 8 x 12: a class where there is none: $last" ;; esac
# without --grid the kernel gets rows, not a grid: it refuses, exit 3
"$P" reveal --dlopen "$LIB:gemm_tile" --n 64 >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 3 ] || fail "gemm_tile without --grid: exit $rc, expected 3"
# a PARITY_GRID the caller left in the environment is not the kernel's grid
PARITY_GRID=6,10 "$P" reveal --dlopen "$LIB:gemm_tile" --n 64 --rows 60 >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 3 ] || fail "gemm_tile with PARITY_GRID set but no --grid: exit $rc, expected 3"

if [ $fails -ne 0 ]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "cli_reveal_grid: ok"
