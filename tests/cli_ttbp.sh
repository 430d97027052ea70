#!/bin/sh
# cli_ttbp.sh PARITY KERNELS: `parity ttbp` over a ledger built from
# campaigns with set clocks (PARITY_LEDGER_CLOCK) on copies of the sample
# registry: a point that reaches parity a day and six hours after the first
# campaign (before that its declared tree is one no cpu kernel realises: an
# input error), breaks again at a later campaign and comes back; another
# model's campaign; an incomplete run.  Negative controls never count; with
# --model only the step's hot points do.  The expected times are worked out
# by hand from the clocks below.
set -u
PARITY=$1
KERNELS=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
command -v sqlite3 > /dev/null || { echo "needs the sqlite3 shell (Debian package sqlite3)"; exit 1; }
jq_() { sqlite3 -batch -noheader :memory: "SELECT json_extract(readfile('$1'), '$2')"; }
L=$T/l.sqlite
M=$T/reg/cpu/common/KERNEL_FAMILIES.toml
cp -r "$KERNELS" "$T/reg"
cp "$M" "$T/good.toml"
# broken: gemm.splitk declares a tree no cpu kernel realises (an input error, not at parity)
sed '0,/tree = "split({split_k}, stride({vec}, seq, pairwise), seq)"/s//tree = "split({split_k}, stride({vec}, seq, seq), seq)"/' \
  "$T/good.toml" > "$T/broken.toml"
cmp -s "$T/good.toml" "$T/broken.toml" && fail "the broken manifest is not broken"
camp() { # CLOCK MANIFEST [options]
  clock=$1; cp "$2" "$M"; shift 2
  PARITY_LEDGER_CLOCK=$clock "$PARITY" campaign --class cpu --kernels "$T/reg" --families gemm --ledger "$L" \
    --quiet "$@" > "$T/camp.out" 2>&1
}
camp 2026-01-01T00:00:00Z "$T/broken.toml"
[ $? -eq 2 ] || fail "run 1 should be an input error at gemm.splitk: $(cat "$T/camp.out")"
camp 2026-01-02T06:00:00Z "$T/good.toml" || fail "run 2"
camp 2026-01-03T00:00:00Z "$T/broken.toml"
[ $? -eq 2 ] || fail "run 3 should be an input error"
cp "$L" "$T/after3.sqlite"
camp 2026-01-04T12:00:00Z "$T/good.toml" || fail "run 4"
camp 2026-01-10T00:00:00Z "$T/good.toml" --model m2 || fail "run 5"
# an incomplete run before all of them: ignored, counted
sqlite3 "$L" "INSERT INTO run(uuid, started_utc, started_s, class, shapes, seed, harness_version)
              VALUES ('x', '2025-12-01T00:00:00Z', 1764547200, 'cpu', 'small', '1', 'parity')"

"$PARITY" ttbp --class cpu --ledger "$L" --json "$T/t.json" > "$T/t.out" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "ttbp: exit $rc, want 0 ($(cat "$T/t.out"))"
grep -q '^first campaign: run 1 at 2026-01-01T00:00:00Z; 5 complete run(s) (1 incomplete run(s) ignored)' "$T/t.out" \
  || fail "first campaign line: $(cat "$T/t.out")"
grep -Eq '^gemm.splitk +2026-01-02T06:00:00Z +2 1d 06:00:00 +bits +regressed, back$' "$T/t.out" || fail "gemm.splitk line"
grep -Eq '^gemm.seq +2026-01-01T00:00:00Z +1 00:00:00 +bits +held$' "$T/t.out" || fail "gemm.seq line"
# the four negative controls are left out, said so
grep -q '^points that count: every point the campaigns recorded (2); left out: 4 negative control(s), never counted' "$T/t.out" \
  || fail "the controls are not left out: $(grep 'points that count' "$T/t.out")"
grep -Eq '^gemm\.(splitk_threads|batch_split|atomic_split|legacy_control) ' "$T/t.out" && fail "a negative control counted"
grep -q '^  gemm.splitk: broken by run 3 at 2026-01-03T00:00:00Z (input error: .*); at parity again from run 4 at 2026-01-04T12:00:00Z$' \
  "$T/t.out" || fail "the regression is not listed with the runs: $(grep -A3 regressions "$T/t.out")"
grep -q '^overall: all 2 point(s) reached bit parity by run 2 at 2026-01-02T06:00:00Z: TTBP 1d 06:00:00$' "$T/t.out" \
  || fail "overall line: $(grep overall "$T/t.out")"
grep -q '^held since: no (1 point(s) regressed' "$T/t.out" || fail "held line"
# the same in JSON: 1 day 6 hours = 108000 s
[ "$(jq_ "$T/t.json" '$.overall.ttbp_s')" = 108000 ] || fail "json overall.ttbp_s"
[ "$(jq_ "$T/t.json" '$.overall.held')" = 0 ] || fail "json overall.held"
[ "$(jq_ "$T/t.json" '$.points[1].id')" = gemm.splitk ] || fail "json points[1]"
[ "$(jq_ "$T/t.json" '$.points[1].ttbp_s')" = 108000 ] || fail "json splitk ttbp_s"
[ "$(jq_ "$T/t.json" '$.points[1].regressions[0].run')" = 3 ] || fail "json regression run"
[ "$(jq_ "$T/t.json" '$.points[1].regressions[0].back_run')" = 4 ] || fail "json regression back_run"
[ "$(jq_ "$T/t.json" '$.negative_controls_left_out')" = 4 ] || fail "json controls left out"
"$PARITY" ttbp --class cpu --ledger "$L" --json - > "$T/t2.json" || fail "--json -"
[ "$(jq_ "$T/t2.json" '$.incomplete_runs_ignored')" = 1 ] || fail "json on stdout"

# the model's TTBP: from its own first campaign (m2 has no step: every point)
"$PARITY" ttbp --class cpu --model m2 --ledger "$L" --all-points > "$T/m.out" 2>&1 || fail "ttbp --model: exit $?"
grep -q '^first campaign: run 5 at 2026-01-10T00:00:00Z; 1 complete run(s)$' "$T/m.out" || fail "model first campaign: $(cat "$T/m.out")"
grep -q 'TTBP 00:00:00$' "$T/m.out" || fail "model TTBP"
grep -q '^held since: yes' "$T/m.out" || fail "model held"

# as of run 3 the regressed point is not at parity: exit 1
"$PARITY" ttbp --class cpu --ledger "$T/after3.sqlite" > "$T/a.out" 2>&1
[ $? -eq 1 ] || fail "ttbp with a point not at parity: want exit 1"
grep -q 'not at parity since' "$T/a.out" || fail "an open regression is not said"

# a model with a step counts its hot points: llama3-8b's ops on cpu lower
# to gemm.seq (gate_up, ...) and gemm.splitk among the gemm points
camp 2026-01-11T00:00:00Z "$T/good.toml" --model llama3-8b || fail "run 6"
# (no `parity model` run is recorded: model.llama3-8b counts, not run, exit 1)
"$PARITY" ttbp --class cpu --model llama3-8b --any-shapes --kernels "$T/reg" --ledger "$L" --json "$T/h.json" > "$T/h.out" 2>&1
[ $? -eq 1 ] || fail "ttbp --model llama3-8b without a model run: want 1: $(cat "$T/h.out")"
grep -Eq '^model.llama3-8b +not yet +- +- +not run ' "$T/h.out" || fail "model.llama3-8b is not 'not run'"
grep -q "^points that count: the hot points of llama3-8b's step on class cpu" "$T/h.out" || fail "hot points not said: $(cat "$T/h.out")"
hot=$(jq_ "$T/h.json" '$.points[#-1].id')
[ -n "$hot" ] || fail "no hot point counted"
"$PARITY" ttbp --class cpu --model nostep --kernels "$T/reg" --ledger "$L" > /dev/null 2> "$T/e"
[ $? -eq 2 ] || fail "a model without a step: want 2 (or --all-points)"
grep -q -- '--all-points' "$T/e" || fail "the way out (--all-points) not said"

# zero-day readiness of a model: on cpu2 parity at its first campaign with
# no class work (ready); on cpu, parity only after the registry gained a
# point the first campaign did not have (class work: not zero-day)
Z=$T/z.sqlite
cp -r "$KERNELS" "$T/zr"
ZM=$T/zr/cpu/common/KERNEL_FAMILIES.toml
cp "$ZM" "$T/zgood.toml"
zc() { clock=$1; cls=$2; shift 2
  PARITY_LEDGER_CLOCK=$clock "$PARITY" campaign --class "$cls" --kernels "$T/zr" --families gemm --model llama3-8b \
    --no-power --ledger "$Z" --quiet "$@" > "$T/zc.out" 2>&1; }
cp "$T/broken.toml" "$ZM"
zc 2026-02-01T00:00:00Z cpu; [ $? -eq 2 ] || fail "zero-day: run 1 should be an input error"
python3 - "$T/zgood.toml" <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
i = s.index('[[family.point]]\nid = "splitk_threads"')
add = '[[family.point]]\nid = "extra"\nkernel = "cpu_gemm_seq"\n[family.point.numerics.k]\nacc = "fp32"\ntree = "seq"\n\n'
open(p, 'w').write(s[:i] + add + s[i:])
PY
cp "$T/zgood.toml" "$ZM"
zc 2026-02-02T00:00:00Z cpu || fail "zero-day: run 2: $(cat "$T/zc.out")"
zc 2026-02-03T00:00:00Z cpu2 || fail "zero-day: cpu2"
"$PARITY" ttbp --model llama3-8b --zero-day --any-shapes --all-points --kernels "$T/zr" --ledger "$Z" --json "$T/z.json" > "$T/z.out" 2>&1
[ $? -eq 1 ] || fail "zero-day: not ready everywhere, want exit 1: $(cat "$T/z.out")"
grep -q '^  cpu2 *ready: bit parity by run 3 at 2026-02-03T00:00:00Z (TTBP 00:00:00' "$T/z.out" || fail "cpu2 zero-day: $(cat "$T/z.out")"
grep -q '^  cpu *not zero-day: bit parity by run 2 at 2026-02-02T00:00:00Z (TTBP 1d 00:00:00), after class work: run 2: class files changed since run 1: cpu/common/KERNEL_FAMILIES.toml changed; a point the first campaign did not have: gemm.extra$' "$T/z.out" \
  || fail "cpu zero-day: $(cat "$T/z.out")"
grep -q '^zero-day ready on 1 of 2 class(es)$' "$T/z.out" || fail "zero-day summary"
[ "$(jq_ "$T/z.json" '$.ready_everywhere')" = 0 ] || fail "zero-day json"
"$PARITY" ttbp --model llama3-8b --zero-day --any-shapes --all-points --class cpu2 --kernels "$T/zr" --ledger "$Z" > /dev/null 2>&1 || fail "zero-day on cpu2 alone: want 0"
"$PARITY" ttbp --zero-day --ledger "$Z" > /dev/null 2>&1; [ $? -eq 2 ] || fail "--zero-day without --model: want 2"

# Two campaigns within one second (CI jobs, shards): the broken one first,
# then the good one, both at the same clock.  Parity is reached by run 2,
# in the table, the overall line and zero-day alike (ordered by time, then
# by run).
S=$T/same.sqlite
for m in broken good; do
  cp "$T/$m.toml" "$M"
  PARITY_LEDGER_CLOCK=2026-03-01T00:00:00Z "$PARITY" campaign --class cpu --kernels "$T/reg" --families gemm \
    --ledger "$S" --model llama3-8b --quiet > /dev/null 2>&1
done
"$PARITY" ttbp --class cpu --ledger "$S" > "$T/s.out" 2>&1
grep -Eq '^gemm.splitk +2026-03-01T00:00:00Z +2 00:00:00 ' "$T/s.out" || fail "same second: table: $(grep '^gemm.splitk' "$T/s.out")"
grep -q '^overall: all 2 point(s) reached bit parity by run 2 at 2026-03-01T00:00:00Z' "$T/s.out" \
  || fail "same second: overall: $(grep overall "$T/s.out")"
"$PARITY" ttbp --model llama3-8b --zero-day --any-shapes --class cpu --all-points --ledger "$S" > "$T/sz.out" 2>&1
grep -q 'bit parity by run 2 at 2026-03-01T00:00:00Z' "$T/sz.out" || fail "same second: zero-day: $(cat "$T/sz.out")"
# the manifest was edited between the two runs: class work, the file named
grep -q 'after class work: run 2: class files changed since run 1: cpu/common/KERNEL_FAMILIES.toml changed$' "$T/sz.out" \
  || fail "same second: zero-day does not name the edited file: $(cat "$T/sz.out")"

# usage and input errors
"$PARITY" ttbp --help | grep -q '^usage: parity ttbp' || fail "--help"
"$PARITY" ttbp --ledger "$L" > /dev/null 2>&1; [ $? -eq 2 ] || fail "no --class: want 2"
"$PARITY" ttbp --class cpu --ledger "$T/missing.sqlite" > /dev/null 2> "$T/e"; [ $? -eq 2 ] || fail "missing ledger: want 2"
grep -q 'missing.sqlite' "$T/e" || fail "missing ledger not named"
[ -e "$T/missing.sqlite" ] && fail "ttbp created a ledger"
"$PARITY" ttbp --class nosuch --ledger "$L" > /dev/null 2> "$T/e"; [ $? -eq 2 ] || fail "unknown class: want 2"
grep -q "no complete campaign of class 'nosuch'" "$T/e" || fail "unknown class message: $(cat "$T/e")"
"$PARITY" ttbp --class cpu --bogus > /dev/null 2>&1; [ $? -eq 2 ] || fail "unknown option: want 2"

[ $fails -eq 0 ] && echo "cli_ttbp: all passed"
exit $((fails != 0))
