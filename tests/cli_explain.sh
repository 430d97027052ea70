#!/bin/sh
# cli_explain.sh PARITY ST_FLIP KERNELS: `parity explain` from the outside.
# Two classes whose gemm.splitk differ only in the split count (4 vs 8),
# with an fp32 output so that the small shape shows it: the explanation
# names the split count.  The negative control gemm.batch_split (declared
# split(1, ...), realised split(2, ...)) against its reference: named.  A
# point that matches its reference: nothing to explain.  A trace whose
# output was tampered with: no point explains it, and explain says so
# instead of inventing one.  Then bad input.
set -u
PARITY=$1
FLIP=$2
KERNELS=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

cp -r "$KERNELS" "$T/k"
# gemm.splitk with an fp32 output on both classes (cpu-split8 overrides split_k)
sed -i 's/^params = { split_k = 4 }$/params = { split_k = 4, out = "fp32" }/' "$T/k/cpu/common/KERNEL_FAMILIES.toml"
sed -i 's/^params = { split_k = 8 }$/params = { split_k = 8, out = "fp32" }/' "$T/k/cpu-split8/common/KERNEL_FAMILIES.toml"
grep -q 'split_k = 4, out = "fp32"' "$T/k/cpu/common/KERNEL_FAMILIES.toml" || fail "setup: cpu's gemm.splitk not found"
grep -q 'split_k = 8, out = "fp32"' "$T/k/cpu-split8/common/KERNEL_FAMILIES.toml" || fail "setup: cpu-split8's not found"
for c in cpu cpu-split8; do
    "$PARITY" campaign --class $c --kernels "$T/k" --families gemm --no-ledger --quiet --traces "$T/$c" > "$T/camp.$c" 2>&1 ||
        fail "campaign $c: $(tail -3 "$T/camp.$c")"
done
A=$T/cpu/cpu.gemm.splitk.eager-0.safetensors
B=$T/cpu-split8/cpu-split8.gemm.splitk.eager-0.safetensors
[ -f "$A" ] && [ -f "$B" ] || fail "setup: traces missing: $(ls "$T/cpu" "$T/cpu-split8" | head)"

# two classes: split count 4 vs 8
"$PARITY" explain "$A" "$B" --kernels "$T/k" > "$T/o1" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "classes: exit $rc, want 1: $(cat "$T/o1")"
grep -Eq '^diff: [1-9][0-9]* of 96 elements of .y. differ in bits' "$T/o1" || fail "classes: no diff count: $(cat "$T/o1")"
grep -Fq 'the declared point reproduces every row' "$T/o1" || fail "classes: declared points should fit"
grep -Fq 'difference (A vs B), reduction '\''k'\'':' "$T/o1" || fail "classes: no difference: $(cat "$T/o1")"
grep -Eq '^ +split count: 4 vs 8$' "$T/o1" || fail "classes: split count not named: $(cat "$T/o1")"
[ "$(sed -n '/^difference/,$p' "$T/o1" | grep -c '^ .* vs ')" -eq 2 ] ||
    fail "classes: more differences than the tree and its split count: $(cat "$T/o1")"

# one trace against its reference: a kernel that realises another point
"$PARITY" explain "$T/cpu/cpu.gemm.batch_split.eager-0.safetensors" --kernels "$T/k" > "$T/o2" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "batch_split: exit $rc, want 1: $(cat "$T/o2")"
grep -Eq 'the declared point does not reproduce [1-9][0-9]* of 96 rows' "$T/o2" || fail "batch_split: $(cat "$T/o2")"
grep -Fq 'tree = "split(2, stride(8, seq, pairwise), seq)"' "$T/o2" || fail "batch_split: realised point: $(cat "$T/o2")"
grep -Eq '^ +split count: 1 vs 2$' "$T/o2" || fail "batch_split: split count not named: $(cat "$T/o2")"
# --json: the same, as one object
"$PARITY" explain "$T/cpu/cpu.gemm.batch_split.eager-0.safetensors" --kernels "$T/k" --json > "$T/o2.json" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "--json: exit $rc, want 1: $(cat "$T/o2.json")"
python3 - "$T/o2.json" <<'PY' || fail "--json: $(cat "$T/o2.json")"
import json, sys
j = json.load(open(sys.argv[1]))
s = j["sides"][0]
assert j["outcome"] == "explained" and j["b"] is None and j["family"] == "gemm", j
assert j["compared"] == 96 and 0 < j["mismatched"] <= 96, j
assert s["rows"] == 96 and s["terms"] == 200 and s["out"] == "fp32", s
assert 'split(2, stride(8, seq, pairwise), seq)' in s["realised"], s
assert s["declared_mismatched_rows"] == j["mismatched"], s
assert "split count: 1 vs 2" in j["difference"], j["difference"]
PY
# the same kernel on row 3 computed alone (inputs regenerated from the seed,
# the batch's row mapped to its logical row): its split count is 8 / M, so 8
# at M = 1 (devices/cpu/cpu_gemm.c)
P=$T/cpu/cpu.gemm.batch_split.row-alone.safetensors
if [ -f "$P" ]; then
    "$PARITY" explain "$P" --kernels "$T/k" > "$T/o2p" 2>&1; rc=$?
    [ $rc -eq 1 ] || fail "row-alone: exit $rc: $(cat "$T/o2p")"
    grep -Eq '^ +split count: 1 vs 8$' "$T/o2p" || fail "row-alone: $(cat "$T/o2p")"
    grep -Fq 'batch rows=3..3' "$T/o2p" || fail "row-alone: batch not shown: $(cat "$T/o2p")"
else
    fail "setup: no row-alone trace: $(ls "$T/cpu")"
fi

# a point that matches its reference: nothing to explain
"$PARITY" explain "$A" --kernels "$T/k" > "$T/o3" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "same: exit $rc, want 0: $(cat "$T/o3")"
grep -Fq 'nothing to explain' "$T/o3" || fail "same: $(cat "$T/o3")"
"$PARITY" explain "$A" "$A" --kernels "$T/k" > "$T/o3b" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "A vs A: exit $rc: $(cat "$T/o3b")"

# tampered: element 5's low mantissa bit flipped (a kernel no point describes)
cp "$A" "$T/bad.safetensors"
"$FLIP" "$T/bad.safetensors" y 5 0 || fail "st_flip"
"$PARITY" explain "$T/bad.safetensors" --kernels "$T/k" > "$T/o4" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "tampered: exit $rc, want 1: $(cat "$T/o4")"
grep -Fq 'diff: 1 of 96 elements' "$T/o4" || fail "tampered: count: $(cat "$T/o4")"
grep -Fq 'the declared point does not reproduce 1 of 96 rows' "$T/o4" || fail "tampered: $(cat "$T/o4")"
grep -Fq 'realised: not found: no point of the space reproduces every row' "$T/o4" || fail "tampered: $(cat "$T/o4")"
grep -Fq 'difference: not named' "$T/o4" || fail "tampered: an explanation was invented: $(cat "$T/o4")"

# gemv_w4a16 per_element: the output is reduction k of x and the weights
# dequantized to fp16, so its declared point reproduces every row of an
# untouched trace and all but the one row of a tampered one (which checks
# the layout, the dequantization and the row order); per_group has no
# layout over the inputs, and says why
"$PARITY" campaign --class cpu --kernels "$T/k" --families gemv_w4a16 --no-ledger --quiet --traces "$T/gv" > /dev/null 2>&1
G=$T/gv/cpu.gemv_w4a16.per_element.eager-0.safetensors
cp "$G" "$T/gbad.safetensors" 2>/dev/null && "$FLIP" "$T/gbad.safetensors" y 7 0
"$PARITY" explain "$T/gbad.safetensors" --kernels "$T/k" > "$T/og" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "gemv tampered: exit $rc, want 1: $(cat "$T/og")"
grep -Fq "reduction 'k': 60 rows of 512 terms, output fp16" "$T/og" || fail "gemv: the rows: $(cat "$T/og")"
grep -Fq 'the declared point does not reproduce 1 of 60 rows' "$T/og" || fail "gemv tampered: $(cat "$T/og")"
cp "$T/gv/cpu.gemv_w4a16.per_group.eager-0.safetensors" "$T/gpg.safetensors" 2>/dev/null && "$FLIP" "$T/gpg.safetensors" y 0 0
"$PARITY" explain "$T/gpg.safetensors" --kernels "$T/k" > "$T/ogp" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "gemv per_group: exit $rc: $(cat "$T/ogp")"
grep -Fq "realised point: not found: gemv_w4a16.per_group: scale_apply = per_group" "$T/ogp" || fail "gemv per_group: $(cat "$T/ogp")"

# a family without a row layout: said, not guessed
R=$(ls "$T/cpu"/cpu.gemm.seq.eager-0.safetensors)
"$PARITY" campaign --class cpu --kernels "$T/k" --families rmsnorm --no-ledger --quiet --traces "$T/rms" > /dev/null 2>&1
RT=$T/rms/cpu.rmsnorm.plain.eager-0.safetensors
cp "$RT" "$T/rbad.safetensors" 2>/dev/null && "$FLIP" "$T/rbad.safetensors" y 0 0
"$PARITY" explain "$T/rbad.safetensors" --kernels "$T/k" > "$T/o5" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "rmsnorm: exit $rc, want 1: $(cat "$T/o5")"
grep -Fq "realised point: not found: family 'rmsnorm' has no layout" "$T/o5" || fail "rmsnorm: $(cat "$T/o5")"

# bad input
"$PARITY" explain "$R" "$RT" --kernels "$T/k" > "$T/o6" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "two families: exit $rc, want 2: $(cat "$T/o6")"
grep -Fq 'of family gemm' "$T/o6" || fail "two families: $(cat "$T/o6")"
"$PARITY" explain "$T/none.safetensors" --kernels "$T/k" > "$T/o7" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "missing file: exit $rc, want 2"
grep -Fq "none.safetensors" "$T/o7" || fail "missing file not named: $(cat "$T/o7")"
"$PARITY" explain > "$T/o8" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "no trace: exit $rc, want 2"
"$PARITY" explain "$A" "$B" "$A" > "$T/o9" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "three traces: exit $rc, want 2"
"$PARITY" explain "$A" --max-rows 0 > "$T/o10" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "--max-rows 0: exit $rc, want 2"
# the rows laid out for the search stay within --max-terms (exit 2, named)
"$PARITY" explain "$T/cpu/cpu.gemm.batch_split.eager-0.safetensors" --kernels "$T/k" --max-terms 5000 > "$T/o12" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "--max-terms 5000: exit $rc, want 2: $(cat "$T/o12")"
grep -Fq "96 rows x 200 terms" "$T/o12" || fail "--max-terms: the limit not named: $(cat "$T/o12")"
"$PARITY" explain --help | grep -q '^usage: parity explain' || fail "--help"
# traces of another seed or input distribution are another problem: refused
# naming what differs (they were "the same")
"$PARITY" campaign --class cpu --kernels "$T/k" --families gemm --no-ledger --quiet --seed 2 --traces "$T/seed2" \
  > "$T/camp.seed2" 2>&1 || fail "campaign --seed 2: $(tail -3 "$T/camp.seed2")"
"$PARITY" campaign --class cpu --kernels "$T/k" --families gemm --no-ledger --quiet --dist uniform \
  --traces "$T/unif" > "$T/camp.unif" 2>&1 || fail "campaign --dist uniform: $(tail -3 "$T/camp.unif")"
"$PARITY" explain "$A" "$T/seed2/cpu.gemm.splitk.eager-0.safetensors" --kernels "$T/k" > "$T/o13" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "another seed: exit $rc, want 2: $(head -5 "$T/o13")"
grep -Fq "$A has seed 1, $T/seed2/cpu.gemm.splitk.eager-0.safetensors has seed 2: different inputs" "$T/o13" \
  || fail "another seed: not named: $(head -5 "$T/o13")"
"$PARITY" explain "$A" "$T/unif/cpu.gemm.splitk.eager-0.safetensors" --kernels "$T/k" > "$T/o14" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "another distribution: exit $rc, want 2: $(head -5 "$T/o14")"
grep -Fq "has inputs of distribution normal, $T/unif/cpu.gemm.splitk.eager-0.safetensors of uniform" "$T/o14" \
  || fail "another distribution: not named: $(head -5 "$T/o14")"

# --max-rows: sampled and said
"$PARITY" explain "$A" "$B" --kernels "$T/k" --max-rows 40 > "$T/o11" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "--max-rows 40: exit $rc: $(cat "$T/o11")"
grep -Fq '40 rows (40 of 96, evenly spaced)' "$T/o11" || fail "--max-rows 40: not said: $(cat "$T/o11")"

[ $fails -eq 0 ] && echo "cli_explain: ok"
exit $((fails > 0))
