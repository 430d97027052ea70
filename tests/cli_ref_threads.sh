#!/bin/sh
# cli_ref_threads.sh PARITY KERNELS: `parity gen` and `parity ref` give the
# same bytes with 1 and 2 threads (--threads and OMP_NUM_THREADS) at every
# point of class cpu (and gen under every float distribution), at shapes
# with more rows than one block of the reference (refimpl/ref_common.c,
# REF_BLOCK_VALUES), so that the threads partition the rows differently; and the int4 weights `parity gen` writes
# are the bytes the generator published before it ran 16 blocks at a time
# (a SHA-256 recorded from the serial generator).
set -u
PARITY=$1
KERNELS=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

shape_of() {
  case $1 in
  gemm) echo "M=4,N=64,K=1024" ;;
  gemv_w4a16) echo "B=2,N=64,K=1024" ;;
  moe_grouped_gemm) echo "T=6,E=4,H=256,N=64,topk=2" ;;
  paged_decode_attention) echo "B=2,HQ=4,HKV=2,D=32,P=8,NP=40,MAXP=16" ;;
  rmsnorm) echo "T=8,H=512" ;;
  silu_and_mul) echo "T=8,H=512" ;;
  esac
}

points=$("$PARITY" registry list --class cpu --kernels "$KERNELS" | awk 'NR > 1 { print $1 }')
[ -n "$points" ] || fail "registry list --class cpu named no point"
for pt in $points; do
  sh=$(shape_of "${pt%%.*}")
  [ -n "$sh" ] || { fail "$pt: no shape for family ${pt%%.*}"; continue; }
  for t in 1 2; do
    "$PARITY" gen "$pt" --shape "$sh" --seed 7 --kernels "$KERNELS" --threads $t -o "$T/in$t.safetensors" ||
      fail "$pt: gen --threads $t exited $?"
    OMP_NUM_THREADS=$t "$PARITY" ref "$pt" --in "$T/in1.safetensors" --kernels "$KERNELS" -o "$T/ref$t.safetensors" 2>> "$T/err" ||
      fail "$pt: ref with OMP_NUM_THREADS=$t exited $?"
    "$PARITY" ref "$pt" --in "$T/in1.safetensors" --kernels "$KERNELS" --threads $t -o "$T/reft$t.safetensors" 2>> "$T/err" ||
      fail "$pt: ref --threads $t exited $?"
  done
  cmp -s "$T/in1.safetensors" "$T/in2.safetensors" || fail "$pt: gen with 1 and 2 threads differ"
  cmp -s "$T/ref1.safetensors" "$T/ref2.safetensors" || fail "$pt: ref with OMP_NUM_THREADS=1 and 2 differ"
  cmp -s "$T/reft1.safetensors" "$T/reft2.safetensors" || fail "$pt: ref with --threads 1 and 2 differ"
  cmp -s "$T/ref1.safetensors" "$T/reft1.safetensors" || fail "$pt: ref with OMP_NUM_THREADS=1 and --threads 1 differ"
done

# The float distributions other than the default normal: uniform and
# adversarial (with specials) at 1 and 2 threads.  gemm's B at this shape is
# 65536 elements, 16 of the generator's 4096-element chunks
# (numerics/nx_philox.c, nx_philox_fill), so the two runs split it differently.
for d in uniform adversarial; do
  for t in 1 2; do
    sp=; [ $d = adversarial ] && sp=--specials
    "$PARITY" gen gemm.seq --shape "$(shape_of gemm)" --seed 7 --dist $d $sp --kernels "$KERNELS" --threads $t \
      -o "$T/d$t.safetensors" || fail "gemm.seq --dist $d: gen --threads $t exited $?"
  done
  cmp -s "$T/d1.safetensors" "$T/d2.safetensors" || fail "gemm.seq --dist $d: gen with 1 and 2 threads differ"
done

# qweight of gemv_w4a16.per_group at B=3,N=20,K=512, seed 1: bytes
# [3072, 13312) of the data, which starts after the 8-byte header length and
# the header.  The hash was recorded from the serial generator (one
# nx_philox_block call per element).
"$PARITY" gen gemv_w4a16.per_group --shape B=3,N=20,K=512 --seed 1 --kernels "$KERNELS" --threads 2 -o "$T/q.safetensors" ||
  fail "gen gemv_w4a16.per_group exited $?"
hlen=$(od -An -tu8 -N8 "$T/q.safetensors" | tr -d ' ')
head -c $((8 + hlen)) "$T/q.safetensors" | grep -q -F '"qweight":{"dtype":"U8","shape":[20,512],"data_offsets":[3072,13312]}' ||
  fail "gemv_w4a16.per_group: qweight is not U8 [20, 512] at data offsets [3072, 13312]"
q=$(tail -c +$((8 + hlen + 3072 + 1)) "$T/q.safetensors" | head -c 10240 | sha256sum | cut -d' ' -f1)
[ "$q" = 073a938d06e94ec8c6ec7495f68f34f76178e6288e71a954ebb0d6e9aa7afafc ] ||
  fail "gemv_w4a16.per_group: qweight's SHA-256 is $q, not the serial generator's 073a938d..."

if [ $fails -ne 0 ]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "all passed"
