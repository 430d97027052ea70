#!/bin/sh
# cli_reduce_stream.sh: `parity reduce` streams its rows (docs/engines.md):
# the same bits for 1 and 2 threads, for every vector variant and with the
# vector path off, and the MPFR engine's, on rows of fp32, bf16, fp16 and
# fp64 with NaN, inf, subnormals, signed zeros and exact cancellations;
# 37 rows (never whole vectors).  Arguments: parity, bench_mkrows.
set -eu
P=$1
MK=$2
T=$(mktemp -d "${TMPDIR:-/tmp}/cli_reduce_stream.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
n=0
# Under AddressSanitizer (scripts/test --sanitize) each of the 400 runs
# starts a sanitized process: the vector variants on 2 threads alone there
# (the same code paths; 1 and 2 in the default build).
THREADS="1 2"
ldd "$P" 2>/dev/null | grep -q libasan && THREADS=2
for dt in F32 BF16 F16 F64; do
  "$MK" --dtype $dt --rows 37 --n 203 --specials --seed 3 -o "$T/in.st"
  "$MK" --dtype $dt --rows 37 --n 203 --specials --seed 4 --values --start $dt -o "$T/inv.st"
  for pt in '{ acc = "fp32" }' '{ acc = "fp32", tree = "pairwise", fma = false }' \
            '{ acc = "fp64", tree = "split(4, seq, pairwise)", out = "bf16" }' \
            '{ acc = "fp32", tree = "stride(8, seq, halving, block=2)" }' '{ acc = "bf16", rounding = "rz" }'; do
    for in in in inv; do
      "$P" reduce --numerics "$pt" --in "$T/$in.st" --out "$T/m.st" --engine mpfr --threads 2 2>/dev/null ||
        fail "mpfr $dt $pt"
      "$P" reduce --numerics "$pt" --in "$T/$in.st" --out "$T/ref.st" --engine fast --threads 1 2>/dev/null ||
        fail "fast $dt $pt"
      "$P" diff "$T/m.st" "$T/ref.st" >/dev/null || fail "fast differs from mpfr: $dt $in $pt"
      for simd in off scalar avx2 avx512; do
        for th in $THREADS; do
          PARITY_SIMD=$simd "$P" reduce --numerics "$pt" --in "$T/$in.st" --out "$T/y.st" --engine fast \
            --threads $th 2>/dev/null || fail "fast $dt $pt $simd $th"
          cmp -s "$T/ref.st" "$T/y.st" || fail "PARITY_SIMD=$simd, $th threads differ: $dt $in $pt"
          n=$((n + 1))
        done
      done
    done
  done
done
# the check is able to fail: a flipped last bit (of a finite result: rows
# without specials) is caught
"$MK" --dtype F32 --rows 37 --n 203 --seed 5 -o "$T/in.st"
"$P" reduce --numerics '{ acc = "fp32" }' --in "$T/in.st" --out "$T/g.st" --engine fast 2>/dev/null || fail "good run"
PARITY_REDUCE_FAULT_ROW=5 "$P" reduce --numerics '{ acc = "fp32" }' --in "$T/in.st" --out "$T/f.st" --engine fast \
  2>/dev/null || fail "fault run"
! cmp -s "$T/f.st" "$T/g.st" || fail "a flipped bit went unseen"
echo "cli_reduce_stream: $n runs, all equal"
