#!/bin/sh
# cli_reveal_blas.sh PARITY BLAS_PROBE EXAMPLES: `parity reveal` against the
# sdot of real CPU BLAS libraries through the shell wrapper
# examples/reveal/blas.sh (label `blas`, opt-in: `scripts/test --blas`).
#   - netlib BLAS: the reference Fortran loop, a running sum of separately
#     rounded products: the point { tree = "seq", fma = false } in full, at
#     n = 100 and n = 1000, reproducing 1000 of 1000 fresh rows;
#   - OpenBLAS, BLIS: the order must be revealed (a tree, with its probe and
#     call counts); whether the arithmetic space holds their mixed-format
#     vector kernels is printed as a finding (docs/reveal.md, limits).
# Exit 77 (skip) when a library is not installed.
set -u
PARITY=$1
PROBE=$2
EX=$3
L=/usr/lib/x86_64-linux-gnu
[ -d "$L" ] || L=/usr/lib/$(gcc -dumpmachine 2>/dev/null)
NETLIB=$L/blas/libblas.so.3
OPENBLAS=$L/openblas-pthread/libopenblas.so.0
BLIS=$L/blis-openmp/libblis.so.4
for f in $NETLIB $OPENBLAS $BLIS; do
  [ -e "$f" ] || { echo "cli_reveal_blas: $f is not installed (scripts/test --blas): skipped"; exit 77; }
done
export BLAS_PROBE=$PROBE
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
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
  done
done
[ $fails -eq 0 ] && echo "cli_reveal_blas: all passed"
exit $((fails > 0))
