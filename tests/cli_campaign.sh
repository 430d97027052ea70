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
for c in campaign check transcript tier3; do "$PARITY" $c --help > /dev/null || fail "$c --help"; done

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cli_campaign: all checks passed"
