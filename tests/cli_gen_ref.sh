#!/bin/sh
# cli_gen_ref.sh PARITY KERNELS: `parity gen` and `parity ref` from the
# outside, on the sample registry: exit statuses (0 success, 2 bad usage or
# input, OUT untouched on failure), generation that does not depend on the
# thread count, the shape and class taken from the input's metadata, the
# metadata written, and input validation naming the tensor.
set -u
PARITY=$1
KERNELS=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# run WANT_RC NAME ARGS...: stdout in $T/out, stderr in $T/err.
run() {
  want=$1 name=$2
  shift 2
  "$PARITY" "$@" > "$T/out" 2> "$T/err"
  rc=$?
  [ $rc -eq "$want" ] || fail "$name: exit $rc, want $want (stdout: $(cat "$T/out"); stderr: $(cat "$T/err"))"
}
has() { grep -q -F -- "$2" "$T/$1" || fail "$3: '$2' not in $1: $(cat "$T/$1")"; }

run 0 "gen --help" gen --help
has out "usage: parity gen FAMILY.POINT" "gen --help"
run 0 "ref --help" ref --help
has out "usage: parity ref FAMILY.POINT" "ref --help"

# Generation: the same file at any thread count; another seed differs.
S="M=3,N=5,K=40"
run 0 "gen 1 thread" gen gemm.splitk --kernels "$KERNELS" --shape "$S" --seed 11 --threads 1 -o "$T/a.st"
run 0 "gen 2 threads" gen gemm.splitk --kernels "$KERNELS" --shape "$S" --seed 11 --threads 2 -o "$T/b.st"
cmp -s "$T/a.st" "$T/b.st" || fail "gen: 1 and 2 threads wrote different files"
run 0 "gen seed 12" gen gemm.splitk --kernels "$KERNELS" --shape "$S" --seed 12 -o "$T/c.st"
cmp -s "$T/a.st" "$T/c.st" && fail "gen: seeds 11 and 12 wrote the same file"
run 0 "inspect gen" inspect "$T/a.st"
has out "meta family = gemm" "gen metadata"
has out "meta seed = 11" "gen metadata"
has out "meta dist = normal" "gen metadata"
has out "meta shape = $S" "gen metadata"
has out "tensor a: BF16 [3, 40]" "gen tensors"
has out "tensor b: BF16 [5, 40]" "gen tensors"

# Reference: shape and class from the metadata; the metadata written.
run 0 "ref" ref gemm.splitk --kernels "$KERNELS" --in "$T/a.st" -o "$T/r.st"
run 0 "inspect ref" inspect "$T/r.st"
has out "meta spec_hash = " "ref metadata"
has out "meta reduction.k = split(4, stride(8, seq, pairwise), seq)" "ref metadata"
has out "meta engine = " "ref metadata"
has out "tensor y: BF16 [3, 5]" "ref tensors"
run 0 "ref mpfr" ref gemm.splitk --kernels "$KERNELS" --in "$T/a.st" -o "$T/r2.st" --engine mpfr --threads 1
"$PARITY" inspect "$T/r2.st" | grep "^  " | grep -v "meta engine" > "$T/r2.txt"
"$PARITY" inspect "$T/r.st" | grep "^  " | grep -v "meta engine" > "$T/r1.txt"
cmp -s "$T/r1.txt" "$T/r2.txt" || fail "ref: the default engine and mpfr differ"
# another point of the family on the same inputs
run 0 "ref other point" ref gemm.seq --kernels "$KERNELS" --in "$T/a.st" -o "$T/r3.st"

# Integer inputs: every tree gives the same bits.
run 0 "gen int" gen gemm.seq --kernels "$KERNELS" --shape M=2,N=3,K=300 --seed 5 --dist int -o "$T/i.st"
run 0 "ref int seq" ref gemm.seq --kernels "$KERNELS" --in "$T/i.st" -o "$T/i1.st"
run 0 "ref int splitk" ref gemm.splitk --kernels "$KERNELS" --in "$T/i.st" -o "$T/i2.st"
"$PARITY" inspect "$T/i1.st" | grep "^    " > "$T/v1.txt"
"$PARITY" inspect "$T/i2.st" | grep "^    " > "$T/v2.txt"
cmp -s "$T/v1.txt" "$T/v2.txt" || fail "int inputs: seq and splitk differ"

# Every family of the sample registry generates and evaluates.
run 0 "gemv" gen gemv_w4a16.per_group --kernels "$KERNELS" --shape N=8,K=256 --seed 1 -o "$T/g.st"
run 0 "gemv ref" ref gemv_w4a16.per_group --kernels "$KERNELS" --in "$T/g.st" -o "$T/gr.st"
run 0 "moe" gen moe_grouped_gemm.seq --kernels "$KERNELS" --shape T=3,E=4,H=16,N=5,topk=2 --seed 1 -o "$T/m.st"
run 0 "moe ref" ref moe_grouped_gemm.seq --kernels "$KERNELS" --in "$T/m.st" -o "$T/mr.st"
run 0 "attn" gen paged_decode_attention.split512 --kernels "$KERNELS" \
  --shape B=2,HQ=4,HKV=2,D=8,P=16,NP=80,MAXP=40 --seed 1 -o "$T/p.st"
run 0 "attn ref" ref paged_decode_attention.split512 --kernels "$KERNELS" --in "$T/p.st" -o "$T/pr.st"
run 0 "rms" gen rmsnorm.fused_add --kernels "$KERNELS" --shape T=2,H=32 --seed 1 --dist adversarial -o "$T/n.st"
run 0 "rms ref" ref rmsnorm.fused_add --kernels "$KERNELS" --in "$T/n.st" -o "$T/nr.st"
run 0 "inspect rms" inspect "$T/nr.st"
has out "tensor residual_out" "rmsnorm residual_out"
run 0 "silu" gen silu_and_mul.libm --kernels "$KERNELS" --shape T=2,H=8 --seed 1 -o "$T/s.st"
run 0 "silu ref" ref silu_and_mul.libm --kernels "$KERNELS" --in "$T/s.st" -o "$T/sr.st"
run 0 "inspect silu" inspect "$T/sr.st"
has out "meta elementwise.silu = libm_expf_div (2 ulp): evaluated as cr" "approximation noted"

# Errors: exit 2, OUT not written (an existing OUT left as it was).
run 2 "gen no seed" gen gemm.seq --kernels "$KERNELS" --shape "$S" -o "$T/x.st"
run 2 "gen bad seed" gen gemm.seq --kernels "$KERNELS" --shape "$S" --seed -3 -o "$T/x.st"
has err "--seed: '-3' is not an unsigned 64-bit integer" "gen bad seed"
run 2 "gen bad dist" gen gemm.seq --kernels "$KERNELS" --shape "$S" --seed 1 --dist gauss -o "$T/x.st"
has err "unknown distribution 'gauss'" "gen bad dist"
run 2 "gen specials without adversarial" gen gemm.seq --kernels "$KERNELS" --shape "$S" --seed 1 --specials -o "$T/x.st"
run 2 "gen unknown point" gen gemm.nope --kernels "$KERNELS" --shape "$S" --seed 1 -o "$T/x.st"
run 2 "gen missing dim" gen gemm.seq --kernels "$KERNELS" --shape M=3,N=5 --seed 1 -o "$T/x.st"
has err "K" "gen missing dim"
[ -e "$T/x.st" ] && fail "a failed gen wrote its output"
cp "$T/r.st" "$T/keep.st"
run 2 "ref wrong family inputs" ref rmsnorm.plain --kernels "$KERNELS" --in "$T/a.st" --shape T=3,H=40 -o "$T/keep.st"
has err "holds inputs of family 'gemm', not 'rmsnorm'" "ref wrong inputs"
cmp -s "$T/r.st" "$T/keep.st" || fail "a failed ref changed its output file"
run 2 "ref wrong shape" ref gemm.seq --kernels "$KERNELS" --in "$T/a.st" --shape M=3,N=5,K=41 -o "$T/x.st"
has err "input tensor 'a' has shape [3, 40]; expected [M, K] = [3, 41]" "ref wrong shape"
run 2 "ref bad engine" ref gemm.seq --kernels "$KERNELS" --in "$T/a.st" --engine gpu -o "$T/x.st"
run 2 "ref missing input" ref gemm.seq --kernels "$KERNELS" --in "$T/none.st" -o "$T/x.st"
run 2 "ref no args" ref
[ -e "$T/x.st" ] && fail "a failed ref wrote its output"

[ $fails -eq 0 ] && echo "cli_gen_ref: all passed"
exit $fails
