#!/bin/sh
# cli_reveal_blas.sh PARITY BLAS_PROBE EXAMPLES [ST_CRAFT]: `parity reveal` against the
# sdot of real CPU BLAS libraries through the shell wrapper
# examples/reveal/blas.sh (label `blas`, opt-in: `scripts/test --blas`).
#   - netlib BLAS: the reference Fortran loop, a running sum of separately
#     rounded products: the point { tree = "seq", fma = false } in full, at
#     n = 100 and n = 1000, reproducing 1000 of 1000 fresh rows;
#   - OpenBLAS, BLIS: the order must be revealed (a tree, with its probe and
#     call counts); on its own the recogniser spells it as an expr, which
#     never fuses, so no arithmetic fits (printed); with --space
#     NAME_sdot.space (the kernel's loops as lanes(...)) the order must be
#     named by the space's tree and the point reproduce 1000 of 1000 fresh
#     rows, on the core NAME_sdot.point holds for.
#   - without --space: OpenBLAS's and BLIS's sdot revealed at n = 100 and the
#     point held to the library at eight lengths it never saw (CRAFT given);
#   - the order of sgemv T, sgemv N and sgemm of all three, with row
#     classes, held to the library on fresh rows (CRAFT given; below);
#   - the whole point of those with --shared-b, held at unseen lengths.
# Exit 77 (skip) when a library is not installed.
set -u
PARITY=$1
PROBE=$2
EX=$3
CRAFT=${4:-}
L=/usr/lib/x86_64-linux-gnu
[ -d "$L" ] || L=/usr/lib/$(gcc -dumpmachine 2>/dev/null)
NETLIB=$L/blas/libblas.so.3
OPENBLAS=$L/openblas-pthread/libopenblas.so.0
BLIS=$L/blis-openmp/libblis.so.4
ATLAS=$L/atlas/libblas.so.3 # optional (below): the test does not skip without it
for f in $NETLIB $OPENBLAS $BLIS; do
  [ -e "$f" ] || { echo "cli_reveal_blas: $f is not installed (scripts/test --blas): skipped"; exit 77; }
done
export BLAS_PROBE=$PROBE
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# lib_holds LIB ROUTINE POINT N ROWS SEED [--shared-b] (CRAFT given): fresh
# random rows through the library (examples/reveal/blas.sh) and through
# `parity reduce --numerics POINT`; 0 the same bytes, 1 they differ, 2 one
# of them could not run ($T/err says why)
lib_holds() {
  "$CRAFT" rand "$T/in.st" F32 "$5" "$4" "$6" F32 ${7:-} > /dev/null 2> "$T/err" &&
    BLAS_ROUTINE=$2 "$EX/blas.sh" "$1" "$T/in.st" "$T/k.st" 2>> "$T/err" &&
    "$PARITY" reduce --numerics "$3" --in "$T/in.st" --out "$T/p.st" > /dev/null 2>> "$T/err" || return 2
  "$PARITY" diff "$T/k.st" "$T/p.st" > /dev/null 2>&1 || return 1
}
exp='{ acc = "fp32", rounding = "rne", fma = false, product = "exact", tree = "seq", out = "fp32", out_rounding = "rne", saturate = false }'
for n in 100 1000; do
  out=$("$PARITY" reveal --exec "$EX/blas.sh $NETLIB {in} {out}" --n $n)
  rc=$?
  [ $rc -eq 0 ] && [ "$(echo "$out" | tail -n 1)" = "$exp" ] || fail "netlib sdot n = $n: exit $rc: $out"
  echo "$out" | grep -q "^confidence: reproduced 1000 of 1000 " || fail "netlib sdot n = $n: confidence"
done
for e in "openblas:$OPENBLAS" "blis:$BLIS"; do
  for n in 100 1000; do
    out=$("$PARITY" reveal --exec "$EX/blas.sh ${e#*:} {in} {out}" --n $n 2>&1)
    rc=$?
    echo "$out" | grep -q '^order probes: ' && ! echo "$out" | grep -q '^order: not revealed' ||
      fail "${e%%:*} sdot n = $n: the order was not revealed (exit $rc): $out"
    echo "${e%%:*} sdot n = $n: exit $rc; $(echo "$out" | grep -E '^(order probes|confidence|arithmetic:)' | tr '\n' ' ')"
    echo "  $(echo "$out" | sed -n 's/^order: //p' | cut -c1-200)"
    # with the routine's space (tests/blas/NAME_sdot.space: the kernel's
    # loops as lanes(...), derived from its source) the order is named by
    # it and the arithmetic revealed, when the library runs the core that
    # NAME_sdot.point holds for
    name=${e%%:*}
    case $name in
    openblas) core=$(OPENBLAS_VERBOSE=2 "$PARITY" reveal --exec "$EX/blas.sh ${e#*:} {in} {out}" --n 4 --order-only 2>&1 |
                     sed -n 's/^Core: //p' | head -n 1) ;;
    blis) core=$(BLIS_ARCH_DEBUG=1 "$PARITY" reveal --exec "$EX/blas.sh ${e#*:} {in} {out}" --n 4 --order-only 2>&1 |
                 sed -n "s/.*sub-configuration '\\(.*\\)'.*/\\1/p" | head -n 1) ;;
    esac
    pf=$(dirname "$0")/${name}_sdot.point
    if grep '^core ' "$pf" | tr ' ' '\n' | grep -qx "${core:-none}"; then
      out=$("$PARITY" reveal --exec "$EX/blas.sh ${e#*:} {in} {out}" --n $n --space "$(dirname "$0")/${name}_sdot.space" 2>&1)
      rc=$?
      want=$(grep -v -e '^#' -e '^check ' -e '^core ' -e '^ *$' "$pf" | sed 's/.*tree = "\([^"]*\)".*/\1/')
      [ $rc -eq 0 ] && echo "$out" | grep -qF "order: $want" && echo "$out" | grep -q "^confidence: reproduced 1000 of 1000 " ||
        fail "${name} sdot n = $n with --space: exit $rc: $(echo "$out" | grep -E '^(order|confidence|arithmetic)' | cut -c1-300)"
      echo "${name} sdot n = $n with --space: exit $rc; $(echo "$out" | grep '^confidence')"
    else
      echo "skip: ${name} sdot --space: ${name}_sdot.point holds for $(sed -n 's/^core //p' "$pf"), not for ${core:-unknown}"
    fi
  done
done
# A real kernel with row classes: OpenBLAS sgemv T, the rows of a batch
# being the outputs of one call (BLAS_ROUTINE=sgemv_t, order only: the
# products are premultiplied).  At n = 300 and R = 255 outputs the kernel
# runs 63 groups of 4 outputs (8 FMA lanes, a peeled head), then 2 outputs
# (4 lanes), then 1 (8 lanes, the same bracketing as the groups of 4): rows
# 252 and 253 form a class of their own (tests/blas/openblas_sgemv_t.point).
core=$(OPENBLAS_VERBOSE=2 "$PARITY" reveal --exec "$EX/blas.sh $OPENBLAS {in} {out}" --n 4 --order-only 2>&1 |
       sed -n 's/^Core: //p' | head -n 1)
if grep '^core ' "$(dirname "$0")/openblas_sgemv_t.point" | tr ' ' '\n' | grep -qx "${core:-none}"; then
  out=$(BLAS_ROUTINE=sgemv_t "$PARITY" reveal --exec "$EX/blas.sh $OPENBLAS {in} {out}" --n 300 --order-only \
        --space "$(dirname "$0")/openblas_sgemv_t.space" 2>&1)
  rc=$?
  [ $rc -eq 0 ] || fail "openblas sgemv T, row classes: exit $rc: $(echo "$out" | tail -3)"
  echo "$out" | grep -q '^order: body(4, tile(4096, lanes(8, \[peel(4, 8), loop(8)\]' ||
    fail "openblas sgemv T, row classes: main order $(echo "$out" | grep '^order')"
  echo "$out" | grep -qF 'row class: select = "r >= R - R % 4 && r < R - R % 2", order: body(4, tile(4096, stride(4, seq[fma=false], pairwise), seq),' ||
    fail "openblas sgemv T, row classes: $(echo "$out" | grep '^row class' | cut -c1-300)"
  [ "$(echo "$out" | grep -c '^row class')" -eq 1 ] || fail "openblas sgemv T, row classes: not exactly one class"
  echo "openblas sgemv T (order only, n = 300, 255 outputs): $(echo "$out" | grep -E '^(order probes|row class)' | cut -c1-120 | tr '\n' ' ')"
else
  echo "skip: openblas sgemv T row classes: openblas_sgemv_t.point does not hold for core ${core:-unknown}"
fi
# Without --space, whatever core the library picks here: reveal at n = 100
# (the order at 100 and by induction at 107, the arithmetic on both) must
# print a point that exits 0, and that point must reproduce the library bit
# for bit at lengths reveal never saw (held out: short, tail-only, multiples
# of the vector widths, primes, long), on fresh random inputs through
# `parity reduce`.
if [ -n "${CRAFT:-}" ]; then
  T=$(mktemp -d)
  for e in "openblas:$OPENBLAS" "blis:$BLIS"; do
    name=${e%%:*}
    out=$("$PARITY" reveal --exec "$EX/blas.sh ${e#*:} {in} {out}" --n 100 2>&1)
    rc=$?
    P=$(echo "$out" | tail -n 1)
    if [ $rc -ne 0 ]; then
      fail "$name sdot without --space at n = 100: exit $rc: $(echo "$out" | grep -E '^(order|induction|arithmetic|not)' | cut -c1-300)"
      continue
    fi
    held=""
    for L in 5 31 64 95 257 517 1050 4099; do
      lib_holds "${e#*:}" sdot "$P" "$L" 200 "$L"
      case $? in
      0) held="$held $L" ;;
      1) fail "$name sdot without --space: the point of n = 100 differs from the library at n = $L: $P" ;;
      *) fail "$name sdot held out n = $L: could not run: $(cut -c1-200 "$T/err")" ;;
      esac
    done
    echo "$name sdot without --space: $(echo "$out" | grep '^order:' | cut -c1-100); bit-exact at n =$held (200 rows each)"
  done
  rm -rf "$T"
fi
# The order of sgemv T, sgemv N and sgemm (the rows of a batch are the
# outputs of one call: blas_probe.c premultiplies the products, exact for
# the order's probes), revealed at n = 300 and R = 255 without --space,
# whatever core the library picks here.  The order with its row classes is
# then held to the library on 255 fresh random rows at n = 300 through the
# same wrapper: there the terms are the products rounded to fp32 and x is
# ones, so the point is the order with product = "fp32" (an FMA against 1
# rounds as a separate add does).  A difference fails; an order that the
# language names at no length (printed as expr) is listed, not failed.
# Then the whole point of each with --shared-b (the rows
# of a call share b, the library's x: its own products and FMA), revealed
# at n = 517 (a remainder of every power-of-two block) without --space.  A
# point reveal gives (exit 0) must reproduce the library on fresh rows of
# shared b at lengths and row counts it never saw (n = 64, 389, 1000 with
# 255 rows; 389 with 7, 1000 with 100; 31 with 1 is listed); netlib's must be
# given, and so must those of the cores listed in MUST below (the cores of
# Debian 12's OpenBLAS and BLIS this test has run on: OpenBLAS Haswell's
# sgemv T, with an order class and an arithmetic class, both induced at a
# second length; its sgemv N, columns in carried blocks of 8, then 4, then
# one by one, the last without FMA, and leading rows whose count depends on
# R, r < R % 16 - R % 4; BLIS generic's sgemv N, each block of 8 columns
# added to y as three parts in an order of its own, docs/numerics.md's
# fifth edition).  Exit 1 elsewhere (reveal found no point that holds, and
# said so) is listed.  Both steps serve the probes with
# --serve, one process per reveal: a kernel with row classes takes a
# thousand calls or more, about 10 s so and 2 minutes as a process a call.
ob_core=$(OPENBLAS_VERBOSE=2 "$PARITY" reveal --exec "$EX/blas.sh $OPENBLAS {in} {out}" --n 4 --order-only 2>&1 |
          sed -n 's/^Core: //p' | head -n 1)
bl_core=$(BLIS_ARCH_DEBUG=1 "$PARITY" reveal --exec "$EX/blas.sh $BLIS {in} {out}" --n 4 --order-only 2>&1 |
          sed -n "s/.*sub-configuration '\\(.*\\)'.*/\\1/p" | head -n 1)
# the whole points that must be revealed: LIB:ROUTINE, by core
MUST="netlib:sgemv_t netlib:sgemv_n netlib:sgemm"
[ "$ob_core" = Haswell ] && MUST="$MUST openblas:sgemv_t openblas:sgemv_n openblas:sgemm"
[ "$bl_core" = generic ] && MUST="$MUST blis:sgemv_t blis:sgemv_n blis:sgemm"
echo "cores: OpenBLAS ${ob_core:-unknown}, BLIS ${bl_core:-unknown}; whole points required: $MUST"
if [ -n "${CRAFT:-}" ]; then
  T=$(mktemp -d)
  for e in "netlib:$NETLIB" "openblas:$OPENBLAS" "blis:$BLIS"; do
    for rt in sgemv_t sgemv_n sgemm; do
      name=${e%%:*}
      out=$(BLAS_ROUTINE=$rt "$PARITY" reveal --serve "$EX/blas.sh ${e#*:} --serve" --n 300 --order-only 2>&1)
      rc=$?
      [ $rc -eq 0 ] || fail "$name $rt order at n = 300: exit $rc: $(echo "$out" | tail -n 2 | cut -c1-300)"
      tree=$(echo "$out" | sed -n 's/^order: //p')
      rows=$(echo "$out" | sed -n 's/^row class: \(select = "[^"]*"\), order: \(.*\) (rows probed at every index of 255)$/{ \1, tree = "\2" }/p' |
             paste -sd, - | sed 's/,/, /g; s/}, {/}, {/g')
      p="{ product = \"fp32\", tree = \"$tree\"${rows:+, rows = [$rows]} }"
      ok1=1
      lib_holds "${e#*:}" $rt "$p" 300 255 11
      case $? in
      0) ;;
      1) fail "$name $rt: the order revealed at n = 300 differs from the library on fresh rows: $(echo "$p" | cut -c1-400)"
         ok1=0 ;;
      *) fail "$name $rt: the revealed order could not be run: $(cut -c1-300 "$T/err")"; ok1=0 ;;
      esac
      [ $ok1 -eq 1 ] && case $tree in
      expr*) echo "$name $rt: order at n = 300 reproduced on 255 fresh rows, but named by no tree of the language: $(echo "$tree" | cut -c1-80)..." ;;
      *) echo "$name $rt: order at n = 300 reproduced on 255 fresh rows: $(echo "$tree" | cut -c1-160); $(echo "$out" | grep -c "^row class") row class(es)" ;;
      esac
      out=$(BLAS_ROUTINE=$rt "$PARITY" reveal --serve "$EX/blas.sh ${e#*:} --serve" --n 517 --shared-b 2>&1)
      rc=$?
      if [ $rc -ne 0 ]; then
        case " $MUST " in *" $name:$rt "*) fail "$name $rt --shared-b: exit $rc: $(echo "$out" | tail -n 2 | cut -c1-300)" ;; esac
        echo "$name $rt --shared-b at n = 517: not revealed in full (exit $rc): $(echo "$out" | grep -E '^(not confirmed|arithmetic: no)' | cut -c1-160)"
        continue
      fi
      p=$(echo "$out" | tail -n 1)
      held=""
      # lengths and row counts never probed (R = 7 and 100: other
      # remainders of the 4-, 2- and 1-output kernels' rows)
      for LR in 64:255 389:255 1000:255 389:7 1000:100; do
        L=${LR%%:*} RR=${LR#*:}
        lib_holds "${e#*:}" $rt "$p" $L $RR 23 --shared-b
        case $? in
        0) held="$held $L/$RR" ;;
        1) fail "$name $rt --shared-b: the point revealed at n = 517 differs from the library at n = $L, $RR rows: $(echo "$p" | cut -c1-300)" ;;
        *) fail "$name $rt --shared-b: could not run at n = $L, $RR rows: $(cut -c1-200 "$T/err")" ;;
        esac
      done
      # one row (R = 1): a library may take another path for one output
      # (BLIS's sgemm and sgemv N, OpenBLAS's sgemv N do), which the
      # order's probes, many rows a call, never reach: reveal holds its
      # point there and, where it fails, reveals that path one row a call
      # and joins it as `R == 1` (docs/reveal.md "One row a call")
      lib_holds "${e#*:}" $rt "$p" 31 1 23 --shared-b
      case $? in
      0) held="$held 31/1" ;;
      1) fail "$name $rt --shared-b: one row (R = 1) at n = 31: the point differs from the library; reveal said: $(echo "$out" | grep '^rows: ' | cut -c1-200)" ;;
      *) fail "$name $rt --shared-b: could not run at n = 31, 1 row: $(cut -c1-200 "$T/err")" ;;
      esac
      # two and three rows a call: OpenBLAS's sgemv N takes paths of its
      # own for 2 and 3 outputs, joined as `R == 2` and `R == 3`
      for LR in 64:2 389:3 1000:2; do
        L=${LR%%:*} RR=${LR#*:}
        lib_holds "${e#*:}" $rt "$p" $L $RR 29 --shared-b
        case $? in
        0) held="$held $L/$RR" ;;
        1) fail "$name $rt --shared-b: $RR rows a call at n = $L: the point differs from the library; reveal said: $(echo "$out" | grep "^rows: at R = $RR" | cut -c1-200)" ;;
        *) fail "$name $rt --shared-b: could not run at n = $L, $RR rows: $(cut -c1-200 "$T/err")" ;;
        esac
      done
      echo "$out" | grep -q '^rows: the one-row path joined' && echo "$name $rt --shared-b: $(echo "$out" | grep '^rows: at R = 1' | cut -c1-100); joined: $(echo "$p" | sed 's/.*select = "R == 1", //' | awk -F'tree = "' '{ split($2, a, "\""); print a[1] }' | cut -c1-100)"
      echo "$name $rt --shared-b: $(echo "$p" | awk -F'tree = "' '{ split($2, a, "\""); print a[1] }' | cut -c1-100); bit-exact at n/rows =$held"
    done
  done
  rm -rf "$T"
fi
# sgemm as a whole gemm (docs/reveal.md "Grid classes"): one M x N output
# a call, row classes named over i and j.  netlib's and BLIS's generic
# sgemm run every output on one path (no class).  OpenBLAS's Haswell
# kernel runs two accumulators over rounds of 8 terms, the rest into the
# first (`lanes(2, [loop(2, 8), rest(0)], seq)`, the sixth edition), its
# last N mod 4 columns a running sum (`j >= N - N % 4` on 16 x 6).  On 36 x
# 40 the lanes are the class and the running sum the point: rows 0-7 and
# 24-31 at the columns j % 12 < 6 and rows 0-31 at the last 4 columns, two
# rectangles of grid rows and columns (docs/fit.md "Two rectangles"; before
# them, 65 runs of r).  The cells move with M and N: at 24 x 24 rows 16-23
# take the other half of each 12 columns, at 48 x 48 rows 40-47 the same
# half as rows 0-7, which are no tile's there (lines by number).  Each point is held by reveal itself at n = 301 and 149 on fresh
# gemms: the library's inputs must be one gemm's, which `parity reduce`'s
# random rows are not.
GMUST="netlib:36,40"
[ "$bl_core" = generic ] && GMUST="$GMUST blis:36,40"
[ "$ob_core" = Haswell ] && GMUST="$GMUST openblas:36,40 openblas:16,6 openblas:24,24 openblas:48,48"
for e in "netlib:36,40:$NETLIB" "openblas:36,40:$OPENBLAS" "openblas:16,6:$OPENBLAS" "openblas:24,24:$OPENBLAS" \
  "openblas:48,48:$OPENBLAS" "blis:36,40:$BLIS"; do
  name=${e%%:*} rest=${e#*:}
  grid=${rest%%:*} lib=${rest#*:}
  cells=$(( ${grid%,*} * ${grid#*,} ))
  out=$(BLAS_ROUTINE=sgemm "$PARITY" reveal --serve "$EX/blas.sh $lib --serve" --grid $grid --n 300 2>&1)
  rc=$?
  p=$(echo "$out" | tail -n 1)
  conf=$(( (1000 + cells - 1) / cells * cells ))
  ok=0
  [ $rc -eq 0 ] && [ "$(echo "$out" | grep -c "^lengths: at n = [0-9]* (not probed) the point reproduced $conf of $conf ")" -eq 2 ] && ok=1
  case " $GMUST " in
  *" $name:$grid "*)
    [ $ok -eq 1 ] || fail "$name sgemm --grid $grid: exit $rc: $(echo "$out" | tail -n 3 | cut -c1-300)"
    case "$name:$grid:$p" in
    netlib:*:*select*|blis:*:*select*) fail "$name sgemm --grid $grid: a row class where every output takes one path: $(echo "$p" | cut -c1-300)" ;;
    openblas:16,6:*'tree = "lanes(2, [loop(2, 8), rest(0)], seq)"'*'grid = [16, 6], rows = [{ select = "j >= N - N % 4"'*) ;;
    openblas:16,6:*) fail "openblas sgemm --grid 16,6: not the rounds of 8 and the edge columns: $(echo "$p" | cut -c1-400)" ;;
    openblas:36,40:*'fma = true, product = "exact", tree = "seq"'*'grid = [36, 40], rows = [{ select = "(i % 24 < 8 && j % 12 < 6) || (i < M - M % 8 && j >= N - N % 6)"'*'tree = "lanes(2, [loop(2, 8), rest(0)], seq)"'*) ;;
    openblas:36,40:*) fail "openblas sgemm --grid 36,40: not the running sum with the lanes on two rectangles: $(echo "$p" | cut -c1-500)" ;;
    openblas:24,24:*'tree = "seq"'*'grid = [24, 24], rows = [{ select = "(i % 24 < 8 && j % 12 < 6) || (i >= M - M % 16 && j % 12 >= 6)"'*'tree = "lanes(2, [loop(2, 8), rest(0)], seq)"'*) ;;
    openblas:48,48:*'tree = "seq"'*'grid = [48, 48], rows = [{ select = "(i < 8 && j % 12 < 6) || (i >= M - M % 10 && j % 12 < 6)"'*'tree = "lanes(2, [loop(2, 8), rest(0)], seq)"'*) ;;
    openblas:24,24:*|openblas:48,48:*) fail "openblas sgemm --grid $grid: not the running sum with the lanes on two rectangles: $(echo "$p" | cut -c1-500)" ;;
    esac ;;
  esac
  echo "$name sgemm --grid $grid at n = 300: exit $rc, $(echo "$out" | grep -c '^row class') row class line(s): $(echo "$p" | cut -c1-200)"
done
# ATLAS (Debian's libatlas3-base, generic build), a library none of the
# recogniser's forms or tests were written against: sdot, sgemv T and
# sgemv N revealed at n = 517 without --space, each point held to the
# library at lengths and row counts it never saw.  Its sgemm picks a path
# by M and K together (no copy below a size that depends on both: at K =
# 64 a running sum up to M = 500 and blocks of 48 at M = 1000), which a
# selector over n alone does not name: listed, not failed.
if [ -n "${CRAFT:-}" ] && [ -e "$ATLAS" ]; then
  T=$(mktemp -d)
  for rt in sdot sgemv_t sgemv_n sgemm; do
    sb=--shared-b
    [ $rt = sdot ] && sb=
    out=$(BLAS_ROUTINE=$rt "$PARITY" reveal --serve "$EX/blas.sh $ATLAS --serve" --n 517 $sb 2>&1)
    rc=$?
    p=$(echo "$out" | tail -n 1)
    if [ $rc -ne 0 ]; then
      [ $rt = sgemm ] || fail "atlas $rt at n = 517: exit $rc: $(echo "$out" | tail -n 2 | cut -c1-300)"
      echo "atlas $rt at n = 517: exit $rc"
      continue
    fi
    held="" missed=""
    for LR in 31:7 64:255 100:100 389:255 1000:255 1000:2 2061:33; do
      LL=${LR%%:*} RR=${LR#*:}
      if [ $rt = sdot ]; then # one row a call: the row counts are the gemvs'
        [ "$LR" = 1000:2 ] && continue
        RR=50
      fi
      lib_holds "$ATLAS" $rt "$p" $LL $RR 29 $sb
      case $? in
      0) held="$held $LL/$RR" ;;
      1) [ $rt = sgemm ] || fail "atlas $rt: the point revealed at n = 517 differs from the library at n = $LL, $RR rows: $(echo "$p" | cut -c1-300)"
         missed="$missed $LL/$RR" ;;
      *) fail "atlas $rt: could not run at n = $LL, $RR rows: $(cut -c1-200 "$T/err")" ;;
      esac
    done
    echo "atlas $rt at n = 517: $(echo "$p" | cut -c1-200); held at n/R:$held${missed:+; differs at:$missed}"
  done
  rm -rf "$T"
fi
[ $fails -eq 0 ] && echo "cli_reveal_blas: all passed"
exit $((fails > 0))
