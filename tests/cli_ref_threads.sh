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
  softmax) echo "T=8,H=512" ;;
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

# qweight of gemv_w4a16.per_group at B=3,N=20,K=512, seed 1, two int4 per
# byte (the registry's packed = true): bytes [3072, 8192) of the data, which
# starts after the 8-byte header length and the header.  Unpacked here (low
# nibble first) into one value per byte, its hash is the one recorded from
# the serial generator (one nx_philox_block call per element, one value per
# byte): packing stores the same values.
"$PARITY" gen gemv_w4a16.per_group --shape B=3,N=20,K=512 --seed 1 --kernels "$KERNELS" --threads 2 -o "$T/q.safetensors" ||
  fail "gen gemv_w4a16.per_group exited $?"
hlen=$(od -An -tu8 -N8 "$T/q.safetensors" | tr -d ' ')
head -c $((8 + hlen)) "$T/q.safetensors" | grep -q -F '"qweight":{"dtype":"U8","shape":[20,256],"data_offsets":[3072,8192]}' ||
  fail "gemv_w4a16.per_group: qweight is not U8 [20, 256] at data offsets [3072, 8192]"
q=$(tail -c +$((8 + hlen + 3072 + 1)) "$T/q.safetensors" | head -c 5120 |
  perl -e 'binmode STDIN; binmode STDOUT; local $/; print map { chr(ord($_) & 15), chr(ord($_) >> 4) } split //, <STDIN>' |
  sha256sum | cut -d' ' -f1)
[ "$q" = 073a938d06e94ec8c6ec7495f68f34f76178e6288e71a954ebb0d6e9aa7afafc ] ||
  fail "gemv_w4a16.per_group: qweight unpacked has SHA-256 $q, not the serial generator's 073a938d..."

# The same point with packed = false (a copy of the registry): qweight one
# value per byte with the recorded hash, and the references of both points
# give the same y bits from the two layouts (the cpu kernels' equality:
# test_cpu_backend).
cp -r "$KERNELS" "$T/k0"
sed -i '/^name = "packed"/,/^default/s/^default = true/default = false/' "$T/k0/cpu/common/KERNEL_FAMILIES.toml"
"$PARITY" gen gemv_w4a16.per_group --shape B=3,N=20,K=512 --seed 1 --kernels "$T/k0" -o "$T/q0.safetensors" ||
  fail "gen gemv_w4a16.per_group (packed = false) exited $?"
hlen=$(od -An -tu8 -N8 "$T/q0.safetensors" | tr -d ' ')
head -c $((8 + hlen)) "$T/q0.safetensors" | grep -q -F '"qweight":{"dtype":"U8","shape":[20,512],"data_offsets":[3072,13312]}' ||
  fail "gemv_w4a16.per_group, packed = false: qweight is not U8 [20, 512] at data offsets [3072, 13312]"
q=$(tail -c +$((8 + hlen + 3072 + 1)) "$T/q0.safetensors" | head -c 10240 | sha256sum | cut -d' ' -f1)
[ "$q" = 073a938d06e94ec8c6ec7495f68f34f76178e6288e71a954ebb0d6e9aa7afafc ] ||
  fail "gemv_w4a16.per_group, packed = false: qweight's SHA-256 is $q, not the serial generator's 073a938d..."
for pt in gemv_w4a16.per_group gemv_w4a16.per_element; do
  for e in fast mpfr; do
    "$PARITY" ref $pt --in "$T/q.safetensors" --kernels "$KERNELS" --engine $e -o "$T/y1.safetensors" 2>> "$T/err" ||
      fail "$pt: ref (packed) exited $?"
    "$PARITY" ref $pt --in "$T/q0.safetensors" --kernels "$T/k0" --engine $e -o "$T/y0.safetensors" 2>> "$T/err" ||
      fail "$pt: ref (packed = false) exited $?"
    "$PARITY" diff "$T/y1.safetensors" "$T/y0.safetensors" > "$T/d" 2>&1 ||
      fail "$pt --engine $e: y from packed and unpacked weights differ: $(head -3 "$T/d")"
  done
done

if [ $fails -ne 0 ]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "all passed"
