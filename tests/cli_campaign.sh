#!/bin/sh
# cli_campaign.sh PARITY ST_FLIP KERNELS: the main job from the outside:
# `parity campaign` on the cpu class (verdicts, negative controls, JSON,
# JUnit, traces), `parity check` on its traces (a flipped bit is named, a
# trace at another point passes within tolerance and says why, a malformed
# trace is an input error), a class with no device, transcripts and Tier 3.
set -u
PARITY=$1
FLIP=$2
KERNELS=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$PARITY" campaign --class cpu --kernels "$KERNELS" --shapes small --json "$T/c.json" --junit "$T/c.xml" \
  --traces "$T/tr" > "$T/out" 2> "$T/err"
rc=$?
[ $rc -eq 0 ] || { fail "campaign: exit $rc, want 0"; cat "$T/out" "$T/err"; }
grep -q '^gemm.splitk ' "$T/out" || fail "campaign: no table line for gemm.splitk"
grep -q 'passed, 0 failed' "$T/out" || fail "campaign: summary line"
# the input space each point's power cases covered (docs/power.md), in the report and the JSON
grep -q '^  *input space: shapes: .*K = 2048 + 1 (above any block)' "$T/out" || fail "campaign: no input-space account"
grep -q '"input_space": "shapes: ' "$T/c.json" || fail "json: no power.input_space"
grep -q '^\[1/' "$T/err" || fail "campaign: no progress lines on stderr"
grep -q '"failed": 0' "$T/c.json" || fail "json: failed != 0"
grep -q '"negative_control": true' "$T/c.json" || fail "json: no negative control"
grep -q '<testsuite name="parity.campaign.cpu"' "$T/c.xml" || fail "junit: no testsuite"
grep -q '<testcase classname="gemm.splitk" name="tier2"' "$T/c.xml" || fail "junit: no tier2 testcase"
# the thread-count-dependent kernel fails eager vs graphed, as its control must
grep -q 'gemm.splitk_threads eager_graphed: ok (negative control failed as expected): ' "$T/out" \
  || fail "the thread-count kernel did not fail Tier 1 as a negative control"

# every Tier 1 check has a negative control, and each fails as it must
grep -q 'gemm.batch_split rows: ok (negative control failed as expected): ' "$T/out" || fail "row-invariance control"
grep -q 'gemm.atomic_split determinism: ok (negative control failed as expected): ' "$T/out" || fail "determinism control"
grep -q 'gemm.legacy_control new_legacy: ok (negative control failed as expected): ' "$T/out" || fail "new-vs-legacy control"
# "not bit-exact" only where some bit differs: at 2+ threads the thread-count
# control's graphed run is the declared point (bit-exact, judged by its tolerance)
grep 'gemm.splitk_threads tier2' "$T/out" | grep -q 'not bit-exact' && fail "campaign: 'not bit-exact' without a differing bit"

# Traces: one checks bit-exact; a flipped bit fails Tier 2 naming the element.
tr=$(ls "$T"/tr/cpu.gemm.splitk.graphed-0.safetensors 2> /dev/null)
[ -n "$tr" ] || fail "no trace written"
"$PARITY" check --kernels "$KERNELS" "$tr" > "$T/o1" 2>&1 || fail "check of a good trace: exit $? ($(cat "$T/o1"))"
grep -q 'bits ' "$T/o1" || fail "check: a good trace is not bit-exact"
cp "$tr" "$T/flip.safetensors"
"$FLIP" "$T/flip.safetensors" y 29 3 || fail "st_flip"
"$PARITY" check --kernels "$KERNELS" "$T/flip.safetensors" > "$T/o2" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "check of a flipped trace: exit $rc, want 1"
grep -q '1 / .* elements of .y. differ, first at \[1, 5\] (logical row 1)' "$T/o2" \
  || fail "check: the flipped element [1, 5] is not named: $(cat "$T/o2")"
# Tier 1 across the campaign's traces of one point
"$PARITY" check --kernels "$KERNELS" "$T"/tr/cpu.gemm.splitk.*.safetensors > "$T/o3" 2>&1 || fail "check of a point's traces"
grep -q 'tier1 rows ' "$T/o3" || fail "check: no row-invariance comparison across traces"
# Tier 1 is linear in the traces: 60 copies of one run (as 60 runs of one
# configuration) are 59 determinism comparisons against the first, not
# 60 * 59 / 2 = 1770 pairs; one copy with a flipped bit is named against it
mkdir -p "$T/many"
for i in $(seq 1 60); do cp "$tr" "$T/many/run$i.safetensors"; done
"$PARITY" check --kernels "$KERNELS" "$T"/many/*.safetensors > "$T/o3m" 2>&1 || fail "check of 60 identical runs: exit $?"
[ "$(grep -c '^tier1 determinism ' "$T/o3m")" -eq 59 ] || fail "check of 60 runs: $(grep -c '^tier1 ' "$T/o3m") tier-1 lines, want 59"
cp "$T/flip.safetensors" "$T/many/run7.safetensors"
"$PARITY" check --kernels "$KERNELS" "$T"/many/*.safetensors > "$T/o3m" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "^tier1 determinism .*run1.safetensors vs .*run7.safetensors: FAIL" "$T/o3m" \
  || fail "check of 60 runs, one flipped: exit $rc: $(grep 'run7' "$T/o3m" | head -3)"
# One verdict everywhere: the thread-count kernel's eager and graphed traces
# disagree, and their traces say it is a negative control for that check, so
# check judges them as the campaign judged the runs: the same verdict in the
# same words (the campaign's sentence appears verbatim in check's output).
"$PARITY" check --kernels "$KERNELS" "$T"/tr/cpu.gemm.splitk_threads.graphed-0.safetensors \
  "$T"/tr/cpu.gemm.splitk_threads.eager-0.safetensors --json "$T/o4.json" > "$T/o4" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "check: the thread-count control's traces: exit $rc, want 0 ($(cat "$T/o4"))"
grep -q 'tier1 eager_graphed .*: ok (negative control failed as expected): eager and graphed runs: the bits differ' "$T/o4" \
  || fail "check: the negative control is not judged as one: $(cat "$T/o4")"
camp_t1=$(sed -n 's/^  gemm.splitk_threads eager_graphed: //p' "$T/out")
check_t1=$(sed -n 's/^tier1 eager_graphed [^ ]* vs [^ ]*: //p' "$T/o4")
[ -n "$camp_t1" ] && [ "$camp_t1" = "$check_t1" ] \
  || fail "check and campaign word one Tier 1 verdict differently: campaign '$camp_t1', check '$check_t1'"
# Tier 2 of one negative-control run (the row control's graphed run, not
# bit-exact): campaign and check say the same
camp_t2=$(sed -n 's/^  gemm.batch_split tier2: //p' "$T/out")
[ -n "$camp_t2" ] || fail "campaign: no Tier 2 detail for gemm.batch_split"
"$PARITY" check --kernels "$KERNELS" "$T"/tr/cpu.gemm.batch_split.graphed-0.safetensors > "$T/o4b" 2>&1 \
  || fail "check of the row control's graphed trace: exit $? ($(cat "$T/o4b"))"
grep -qF -- "$camp_t2" "$T/o4b" || fail "check and campaign word one Tier 2 verdict differently: '$camp_t2' vs $(cat "$T/o4b")"
grep -q 'bits_differ": 0' "$T/o4.json" || fail "check json: the graphed control trace should have bits_differ 0"
grep -q 'not bit-exact: 0 ' "$T/o4" "$T/o4b" "$T/out" && fail "a report says 'not bit-exact' of 0 differing elements"
# every trace of the campaign checks, negative controls included
"$PARITY" check --kernels "$KERNELS" "$T"/tr/*.safetensors > "$T/o4c" 2>&1 \
  || fail "check of every campaign trace: exit $? ($(grep -E 'FAIL' "$T/o4c" | head -3))"
# a trace without the new keys (the committed samples) is judged as before
grep -q 'negative_control' "$KERNELS"/../traces/samples/cpu/*.safetensors && fail "samples carry the new keys"
# another numerics point: within tolerance, not bit-exact, and why
"$PARITY" check --kernels "$KERNELS" "$tr" --reference gemm.seq > "$T/o5" 2>&1 || fail "check --reference: exit $?"
# (with a bf16 output the two orders may round to the same bits: the words say
# which, "bit-exact" or "not bit-exact", from the bits themselves)
grep -q 'ok: \(bit-exact\|within the tolerance, not bit-exact\): .*split(4, stride(8, seq, pairwise), seq) vs seq' "$T/o5" \
  || fail "check --reference: no reason given: $(cat "$T/o5")"

# A .npy output (raw bf16 bytes with a dtype hint) checked with options
# standing in for the metadata: y's bytes cut out of the trace with dd.
st="$T/tr/cpu.gemm.seq.graphed-0.safetensors"
hlen=$(od -An -t u8 -N8 "$st" | tr -d ' ')
offs=$(dd if="$st" bs=1 skip=8 count="$hlen" 2> /dev/null | grep -o '"y":{[^}]*}' | grep -o 'data_offsets":\[[0-9]*,[0-9]*' | grep -o '[0-9]*,[0-9]*')
s0=${offs%,*}; s1=${offs#*,}
hdr="{'descr': '<V2', 'fortran_order': False, 'shape': (4, 24), }"
while [ $(( (10 + ${#hdr} + 1) % 64 )) -ne 0 ]; do hdr="$hdr "; done
{ printf '\223NUMPY\001\000'; printf "\\$(printf %03o $(( (${#hdr} + 1) % 256 )))\\$(printf %03o $(( (${#hdr} + 1) / 256 )))";
  printf '%s\n' "$hdr"; dd if="$st" bs=1 skip=$((8 + hlen + s0)) count=$((s1 - s0)) 2> /dev/null; } > "$T/y.npy"
"$PARITY" check --kernels "$KERNELS" --npy "$T/y.npy" --dtype bf16 --point gemm.seq --class cpu --shape M=4,N=24,K=200 \
  --seed 1 > "$T/o8" 2>&1 || fail "check --npy: exit $? ($(cat "$T/o8"))"
grep -q 'bits .*0 / 96' "$T/o8" || fail "check --npy: not bit-exact: $(cat "$T/o8")"
"$PARITY" check --kernels "$KERNELS" --npy "$T/y.npy" --point gemm.seq --class cpu --shape M=4,N=24,K=200 --seed 1 \
  > /dev/null 2> "$T/e8"; [ $? -eq 2 ] || fail "check --npy of raw bytes without --dtype: not exit 2"
grep -q 'dtype hint' "$T/e8" || fail "check --npy: the missing hint is not named"

# Cross-class parity (the central claim).  cpu2 inherits every point of cpu:
# bit parity at every point but the atomic one (declared nondeterministic).
"$PARITY" campaign --class cpu2 --against cpu --kernels "$KERNELS" --shapes small --quiet --traces "$T/tr2" \
  --json "$T/x.json" --junit "$T/x.xml" > "$T/x1" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "campaign cpu2 --against cpu: exit $rc, want 0 ($(cat "$T/x1"))"
n_yes=$(grep -c ' parity: ok: bit parity between cpu2 and cpu at [a-z_0-9.]*: yes (' "$T/x1")
n_pts=$(grep -v '^family.point ' "$T/x1" | grep -c '^[a-z_0-9]*\.[a-z_0-9]*  ')
[ "$n_pts" -eq 18 ] || fail "campaign cpu2: $n_pts table lines, want 18"
[ "$n_yes" -eq 17 ] || fail "campaign cpu2 --against cpu: $n_yes points with bit parity, want 17: $(cat "$T/x1")"
grep -q 'gemm.atomic_split parity: ok (declared difference): .*atomic' "$T/x1" || fail "atomic point not a declared difference"
grep -q '"against": "cpu"' "$T/x.json" || fail "json: no against"
grep -q '"parity": {' "$T/x.json" || fail "json: no parity check"
grep -q '<testcase classname="gemm.splitk" name="parity"' "$T/x.xml" || fail "junit: no parity testcase"
# the same from cpu's traces instead of running cpu here
"$PARITY" campaign --class cpu2 --against cpu --against-traces "$T/tr" --kernels "$KERNELS" --quiet > "$T/x2" 2>&1 \
  || fail "campaign --against-traces: exit $? ($(cat "$T/x2"))"
[ "$(grep -c ' parity: ok: bit parity between cpu2 and cpu at .*: yes (' "$T/x2")" -eq 17 ] \
  || fail "campaign --against-traces: not 17 points with bit parity: $(cat "$T/x2")"
# another split at one point: a declared difference (what registry compare says), exit 0
"$PARITY" campaign --class cpu-split8 --against cpu --families gemm --kernels "$KERNELS" --quiet --traces "$T/tr8" \
  > "$T/x3" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "campaign cpu-split8 --against cpu: exit $rc, want 0 ($(cat "$T/x3"))"
grep -q '^gemm.splitk .* declared ' "$T/x3" || fail "cpu-split8: gemm.splitk not 'declared' in the table"
grep -q 'gemm.splitk parity: ok (declared difference): bit parity between cpu-split8 and cpu at gemm.splitk: not expected: the points differ: .*split count: 8 vs 4' "$T/x3" \
  || fail "cpu-split8: the declared difference is not named: $(cat "$T/x3")"
# bf16 outputs hide it at the campaign's inputs; the fp32 variant, run on both classes, shows it
grep -q 'gemm.splitk parity: .*the bits agree nevertheless: .*; outputs identical at these inputs, the declared difference shows at fp32 (in=fp32,out=fp32), the point.s shape: [1-9][0-9]* of 96 elements of .y. differ' "$T/x3" \
  || fail "cpu-split8: the declared difference not shown at fp32: $(grep 'gemm.splitk parity' "$T/x3")"
grep -q 'gemm.seq parity: ok: bit parity between cpu-split8 and cpu at gemm.seq: yes' "$T/x3" || fail "cpu-split8: gemm.seq not at parity"
# check: traces of two classes at one point
"$PARITY" check --kernels "$KERNELS" "$T/tr/cpu.gemm.splitk.graphed-0.safetensors" "$T/tr2/cpu2.gemm.splitk.graphed-0.safetensors" \
  > "$T/x4" 2>&1 || fail "check cpu vs cpu2: exit $? ($(cat "$T/x4"))"
grep -q 'bit parity between cpu and cpu2 at gemm.splitk: yes' "$T/x4" || fail "check cpu vs cpu2: no parity verdict: $(cat "$T/x4")"
"$PARITY" check --kernels "$KERNELS" "$T/tr/cpu.gemm.splitk.graphed-0.safetensors" "$T/tr8/cpu-split8.gemm.splitk.graphed-0.safetensors" \
  > "$T/x5" 2>&1 || fail "check cpu vs cpu-split8: exit $? ($(cat "$T/x5"))"
grep -q 'ok (declared difference): bit parity between cpu and cpu-split8 at gemm.splitk: not expected: the points differ: .*split count: 4 vs 8' "$T/x5" \
  || fail "check cpu vs cpu-split8: the difference is not named: $(cat "$T/x5")"
# a tampered trace: one bit of y[1, 5] flipped in cpu2's run
cp "$T/tr2/cpu2.gemm.splitk.graphed-0.safetensors" "$T/flip2.safetensors"
"$FLIP" "$T/flip2.safetensors" y 29 3 || fail "st_flip"
"$PARITY" check --kernels "$KERNELS" "$T/tr/cpu.gemm.splitk.graphed-0.safetensors" "$T/flip2.safetensors" > "$T/x6" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "check of a tampered cross-class pair: exit $rc, want 1"
grep -q 'FAIL: bit parity between cpu and cpu2 at gemm.splitk: no: output .y.: 1 / 96 elements differ, first at \[1, 5\] (logical row 1' "$T/x6" \
  || fail "check: the tampered element is not named: $(cat "$T/x6")"
# and the campaign against a tampered trace directory fails at that point
mkdir -p "$T/trx" && cp "$T/flip2.safetensors" "$T/trx/cpu2.gemm.splitk.graphed-0.safetensors"
"$PARITY" campaign --class cpu --against cpu2 --against-traces "$T/trx" --families gemm --kernels "$KERNELS" --quiet \
  > "$T/x7" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "campaign against a tampered trace: exit $rc, want 1"
grep -q 'gemm.splitk parity: FAIL: bit parity between cpu and cpu2 at gemm.splitk: no: ' "$T/x7" || fail "campaign: tampered parity not reported"
grep -q 'gemm.seq parity: skipped: no trace of class cpu2' "$T/x7" || fail "campaign: a missing trace is not a skip"
"$PARITY" campaign --class cpu --against nosuch --kernels "$KERNELS" > /dev/null 2>&1; [ $? -eq 2 ] || fail "--against unknown class: not exit 2"
for c in campaign check; do
  "$PARITY" $c --help | grep -q 'exit status: 0' || fail "$c --help: exit statuses not documented"
done
"$PARITY" campaign --help | grep -q -- '--against D' || fail "campaign --help: --against not documented"

# Bad input is an input error, never a verdict.
printf 'not a trace' > "$T/bad.safetensors"
"$PARITY" check --kernels "$KERNELS" "$T/bad.safetensors" 2> "$T/e1"; rc=$?
[ $rc -eq 2 ] || fail "check of garbage: exit $rc, want 2"
grep -q 'bad.safetensors' "$T/e1" || fail "check of garbage: file not named"
"$PARITY" check --kernels "$KERNELS" "$T/nope.safetensors" 2> /dev/null; [ $? -eq 2 ] || fail "missing trace: not exit 2"
"$PARITY" campaign --class nosuch --kernels "$KERNELS" > /dev/null 2>&1; [ $? -eq 2 ] || fail "unknown class: not exit 2"
"$PARITY" campaign --class cpu --shapes huge --kernels "$KERNELS" > /dev/null 2>&1; [ $? -eq 2 ] || fail "unknown preset: not exit 2"

# A class whose backend cannot run here is a skip, said as such.
if ! command -v nvidia-smi > /dev/null 2>&1; then
  "$PARITY" campaign --class sm90 --kernels "$KERNELS" > "$T/o6" 2>&1; rc=$?
  [ $rc -eq 0 ] || fail "sm90 without a GPU: exit $rc, want 0"
  grep -q 'skipped' "$T/o6" || fail "sm90 without a GPU: not said to be skipped"
fi

# Transcripts and Tier 3.
printf '[1,2,3]\n[4,5,6]\n' > "$T/a.jsonl"
printf '[1,2,3]\n[4,9,6]\n' > "$T/b.jsonl"
"$PARITY" transcript "$T/a.jsonl" "$T/a.jsonl" > /dev/null || fail "transcript: identical files"
"$PARITY" transcript "$T/a.jsonl" "$T/b.jsonl" > "$T/o7"; [ $? -eq 1 ] || fail "transcript: divergence not exit 1"
"$PARITY" transcript "$T/a.jsonl" "$T/b.jsonl" --min-rate 0.5 > /dev/null || fail "transcript: rate 0.5 should pass"
printf '{"acc": 0.71}' > "$T/m.json"
printf '{"acc": {"min": 0.7}}' > "$T/bars.json"
"$PARITY" tier3 "$T/m.json" "$T/bars.json" > /dev/null || fail "tier3: bar met"
printf '{"acc": {"min": 0.8}}' > "$T/bars2.json"
"$PARITY" tier3 "$T/m.json" "$T/bars2.json" > /dev/null; [ $? -eq 1 ] || fail "tier3: missed bar not exit 1"
# a metric that is NaN (written "nan": JSON has no NaN) is present and fails its bar, never "missing"
printf '{"acc": "nan"}' > "$T/mnan.json"
printf '{"acc": {"min": 0}}' > "$T/barnan.json"
"$PARITY" tier3 "$T/mnan.json" "$T/barnan.json" > "$T/tnan" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "tier3: a NaN metric: exit $rc, want 1"
grep -q '^FAIL acc: nan' "$T/tnan" && ! grep -q missing "$T/tnan" || fail "tier3: a NaN metric said as missing: $(cat "$T/tnan")"
for c in campaign check transcript tier3; do "$PARITY" $c --help > /dev/null || fail "$c --help"; done

# --dist int sums exactly in any order: the reduction-order controls cannot
# differ under it.  They are "not exercised by these inputs", run again on
# added normal rows where they fail as built, and the campaign passes.
"$PARITY" campaign --class cpu --kernels "$KERNELS" --shapes small --dist int --no-ledger > "$T/int" 2> /dev/null
rc=$?
[ $rc -eq 0 ] || { fail "campaign --dist int: exit $rc, want 0"; grep FAIL "$T/int"; }
for k in 'gemm.splitk_threads eager_graphed' 'gemm.batch_split rows' 'gemm.atomic_split determinism' \
         'gemm.legacy_control new_legacy'; do
  grep -q "^  $k: ok (negative control not exercised by these inputs; failed as expected on added rows): under --dist int: .*identical bit for bit; on added rows of --dist normal inputs (seed 1): .*the bits differ" "$T/int" \
    || fail "--dist int: $k not said to be unexercised and exercised on added rows"
done
# A control that cannot fail on any rows stays a failure: gemm.splitk (a
# deterministic kernel) declared as the eager/graphed control.
cp -r "$KERNELS" "$T/k2"
sed -i '/^kernel = "cpu_gemm_splitk"$/{n;n;s/^params = { split_k = 4 }$/params = { split_k = 4, negative_control = "eager_graphed" }/}' \
  "$T/k2/cpu/common/KERNEL_FAMILIES.toml"
grep -q 'split_k = 4, negative_control = "eager_graphed"' "$T/k2/cpu/common/KERNEL_FAMILIES.toml" || fail "planting the false control"
"$PARITY" campaign --class cpu --kernels "$T/k2" --shapes small --dist int --no-ledger > "$T/int2" 2> /dev/null
rc=$?
[ $rc -eq 1 ] || fail "a control that never fails, --dist int: exit $rc, want 1"
grep -q '^  gemm.splitk eager_graphed: FAIL (negative control did not fail)' "$T/int2" \
  || fail "a control that never fails was not reported as one"

# A registry that `registry lint` refuses is refused by campaign and lkb
# (exit 2, the first error named, no report written); --allow-lint-errors
# runs it and says so.
cp -r "$KERNELS" "$T/klint"
sed -i 's/^params = { split_k = 4 }$/params = { split_k = 4, bogus_param = 3 }/' "$T/klint/cpu/common/KERNEL_FAMILIES.toml"
"$PARITY" campaign --class cpu --kernels "$T/klint" --shapes small --no-ledger --json "$T/lint.json" > /dev/null 2> "$T/lint.err"
rc=$?
[ $rc -eq 2 ] || fail "campaign on a registry with a lint error: exit $rc, want 2"
[ -e "$T/lint.json" ] && fail "campaign refused for lint wrote its --json"
grep -q "fails lint: 1 error; the first: .*KERNEL_FAMILIES.toml:[0-9]*:[0-9]*: error: param 'bogus_param'" "$T/lint.err" \
  || fail "campaign lint refusal does not name the first error: $(cat "$T/lint.err")"
"$PARITY" campaign --class cpu --kernels "$T/klint" --shapes small --no-ledger --allow-lint-errors > "$T/lint.out" 2> /dev/null
rc=$?
[ $rc -eq 0 ] || fail "campaign --allow-lint-errors: exit $rc, want 0"
grep -q "^Registry lint: .*fails lint: 1 error.*run anyway (--allow-lint-errors)" "$T/lint.out" || fail "campaign --allow-lint-errors does not say so"
"$PARITY" lkb --class cpu --kernels "$T/klint" --json "$T/lkb.json" > /dev/null 2> "$T/lkb.err"
rc=$?
[ $rc -eq 2 ] || fail "lkb on a registry with a lint error: exit $rc, want 2"
[ -e "$T/lkb.json" ] && fail "lkb refused for lint wrote its --json"
grep -q "error: param 'bogus_param'" "$T/lkb.err" || fail "lkb lint refusal does not name the error"

# A kernel that refuses its point's params is the point's input error,
# naming the param (exit 2), never "skipped: no kernel".
cp -r "$KERNELS" "$T/kp"
sed -i 's/^params = { split_k = 4 }$/params = { split_k = 1073741824 }/' "$T/kp/cpu/common/KERNEL_FAMILIES.toml"
sed -i '/^kernel = "cpu_rmsnorm"$/a params = { eps = nan }' "$T/kp/cpu/common/KERNEL_FAMILIES.toml"
"$PARITY" campaign --class cpu --kernels "$T/kp" --shapes small --no-ledger > "$T/kp.out" 2> /dev/null
rc=$?
[ $rc -eq 2 ] || fail "kernels refusing their params: exit $rc, want 2"
grep -q "^gemm.splitk .*ERROR: gemm.splitk: the cpu backend's kernel 'cpu_gemm_splitk' refuses the point's params: .*split_k = 1073741824" "$T/kp.out" \
  || fail "split_k = 2^30 not an input error naming split_k"
grep -q "^rmsnorm.plain .*ERROR: .*refuses the point's params: .*param 'eps' = 'nan'" "$T/kp.out" \
  || fail "eps = nan not an input error naming eps"
grep -q "skipped: the cpu backend has no kernel" "$T/kp.out" && fail "a refused param said as a skip"
# a negative eps (ms + eps under a square root): refused the same way
cp -r "$KERNELS" "$T/ke"
sed -i '/^kernel = "cpu_rmsnorm"$/a params = { eps = -1.0 }' "$T/ke/cpu/common/KERNEL_FAMILIES.toml"
"$PARITY" campaign --class cpu --kernels "$T/ke" --families rmsnorm --shapes small --no-ledger > "$T/ke.out" 2> /dev/null
rc=$?
[ $rc -eq 2 ] || fail "eps = -1: exit $rc, want 2"
grep -q "^rmsnorm.plain .*ERROR: .*param 'eps' = -1: must be >= 0" "$T/ke.out" || fail "eps = -1 not an input error naming eps: $(grep '^rmsnorm.plain' "$T/ke.out")"

# --version: the project's version (CMake's project()) and the git revision built
"$PARITY" --version | grep -qE '^parity [0-9]+\.[0-9]+\.[0-9]+ \(git ([0-9a-f]{7,40}(-dirty)?|unknown: not built from a git checkout)\)$' \
  || fail "--version: $("$PARITY" --version)"

# One output-path policy: a report over the ledger, over a registry file or
# over the reference traces is refused before anything runs (exit 2), and
# nothing is lost: the ledger, the registry and the traces stay as they were.
cp -r "$KERNELS" "$T/kw"
"$PARITY" campaign --class cpu --kernels "$T/kw" --shapes small --no-power --ledger "$T/kw.sqlite" --json "$T/kw.sqlite" \
  > /dev/null 2> "$T/kw.err"
[ $? -eq 2 ] || fail "--json over the --ledger: want 2"
grep -q -- '--ledger .* are the same file' "$T/kw.err" || fail "--json over the ledger not said: $(cat "$T/kw.err")"
[ -e "$T/kw.sqlite" ] && fail "--json over the ledger: a file was written"
"$PARITY" campaign --class cpu --kernels "$T/kw" --shapes small --no-power --no-ledger --json "$T/kw/cpu/HARDWARE.toml" \
  > /dev/null 2> "$T/kw.err"
[ $? -eq 2 ] || fail "--json over a registry file: want 2"
diff -r "$KERNELS" "$T/kw" > /dev/null || fail "a registry file was overwritten"
mkdir -p "$T/ref"
"$PARITY" campaign --class cpu --kernels "$T/kw" --shapes small --no-power --no-ledger --traces "$T/ref" > /dev/null 2>&1
ls "$T/ref" > "$T/ref.before"
"$PARITY" campaign --class cpu2 --kernels "$T/kw" --shapes small --no-power --no-ledger --against cpu \
  --against-traces "$T/ref" --traces "$T/ref" > /dev/null 2> "$T/kw.err"
[ $? -eq 2 ] || fail "--traces over --against-traces: want 2"
grep -q 'is the folder of --against-traces' "$T/kw.err" || fail "--traces over --against-traces not said"
ls "$T/ref" | cmp -s - "$T/ref.before" || fail "the reference traces changed"
# the same policy in the other commands that read a registry whole
"$PARITY" lkb --class cpu --kernels "$T/kw" --json "$T/kw/cpu/MEASUREMENTS.toml" > /dev/null 2>&1
[ $? -eq 2 ] || fail "lkb --json over MEASUREMENTS.toml: want 2"
"$PARITY" gate --before "$T/kw" --after "$T/kw" --class cpu --quiet --no-bench --json "$T/kw/cpu/HARDWARE.toml" > /dev/null 2>&1
[ $? -eq 2 ] || fail "gate --json over HARDWARE.toml: want 2"
"$PARITY" check "$T/ref"/cpu.rmsnorm.plain.graphed-0.safetensors --kernels "$T/kw" --json "$T/kw/cpu/HARDWARE.toml" > /dev/null 2>&1
[ $? -eq 2 ] || fail "check --json over HARDWARE.toml: want 2"
diff -r "$KERNELS" "$T/kw" > /dev/null || fail "a registry file was overwritten by lkb, gate or check"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cli_campaign: all checks passed"
