#!/bin/sh
# cli_reveal_blas.sh PARITY BLAS_PROBE EXAMPLES: `parity reveal` against the
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
[ $fails -eq 0 ] && echo "cli_reveal_blas: all passed"
exit $((fails > 0))
