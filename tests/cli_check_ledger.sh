#!/bin/sh
# cli_check_ledger.sh PARITY KERNELS ST_FLIP: `parity check TRACE... --ledger
# FILE --class C` (docs/ledger.md "Traces checked into the ledger"): the
# traces of a cpu campaign checked into a fresh ledger under set clocks
# (PARITY_LEDGER_CLOCK), day 1 passing, day 2 with a planted trace whose y
# bits were altered (exit 1, recorded, the point off parity), day 3 passing
# again; the rows as a campaign's; `parity ttbp` over them, the expected
# times worked out by hand from the clocks below; `parity ledger runs`
# marking the runs as from traces; and the refusals (exit 2) that leave
# the ledger byte for byte as it was.
set -u
PARITY=$1
KERNELS=$2
FLIP=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
q() { sqlite3 -batch -noheader "$1" "$2"; }
command -v sqlite3 > /dev/null || { echo "needs the sqlite3 shell (Debian package sqlite3)"; exit 1; }
jq_() { sqlite3 -batch -noheader :memory: "SELECT json_extract(readfile('$1'), '$2')"; }

# --- the traces of a cpu campaign (and the campaign's own ledger, to compare rows)
"$PARITY" campaign --class cpu --shapes small --kernels "$KERNELS" --traces "$T/tr" --ledger "$T/camp.sqlite" \
  --quiet > "$T/camp.out" 2>&1 || fail "campaign: $(tail -3 "$T/camp.out")"
ntr=$(ls "$T"/tr/*.safetensors | wc -l)
[ "$ntr" -gt 20 ] || fail "the campaign wrote only $ntr traces"
# the same traces, one of them planted: bit 0 of y[0] of gemm.splitk's graphed run
mkdir "$T/bad"
cp "$T"/tr/*.safetensors "$T/bad/"
"$FLIP" "$T/bad/cpu.gemm.splitk.graphed-0.safetensors" y 0 0 || fail "st_flip"
cmp -s "$T/tr/cpu.gemm.splitk.graphed-0.safetensors" "$T/bad/cpu.gemm.splitk.graphed-0.safetensors" \
  && fail "the planted trace is not planted"

L=$T/l.sqlite
chk() { # CLOCK DIR [options]: checks DIR's traces into $L
  clock=$1; dir=$2; shift 2
  PARITY_LEDGER_CLOCK=$clock "$PARITY" check "$dir"/*.safetensors --kernels "$KERNELS" "$@" > "$T/c.out" 2> "$T/c.err"
}

# --- day 1: every point passes
chk 2026-05-01T09:00:00Z "$T/tr" --ledger "$L" --class cpu
rc=$?
[ $rc -eq 0 ] || fail "day 1: exit $rc, want 0 ($(tail -3 "$T/c.err"))"
grep -q "^recorded in the ledger $L: run 1 of class cpu (source check), 18 point(s), exit status 0$" "$T/c.out" \
  || fail "day 1: the recorded line: $(grep recorded "$T/c.out")"
r=$(q "$L" "SELECT id, complete, exit_status, class, shapes, source, started_utc, points, points_failed FROM run")
[ "$r" = "1|1|0|cpu|traces|check|2026-05-01T09:00:00Z|18|0" ] || fail "day 1 run row: '$r'"
q "$L" "SELECT json_extract(device, '$.threads') IS NOT NULL FROM run" | grep -qx 1 \
  || fail "the traces' device is not recorded: $(q "$L" 'SELECT device FROM run')"
[ "$(q "$L" "SELECT count(*) FROM trace")" = "$ntr" ] || fail "not every checked trace recorded"
q "$L" "SELECT path FROM trace WHERE point_id = 'gemm.splitk'" | grep -q 'cpu.gemm.splitk.graphed-0.safetensors$' \
  || fail "gemm.splitk's graphed trace not recorded"
# each point's row as the campaign's: hash, kernel, shape, verdicts, basis
for id in gemm.splitk gemm.seq gemm.batch_split rmsnorm.fused_add paged_decode_attention.split512; do
  cols="hash, kernel, shape, tier2, tier2_basis, declared_tolerance, bit_exact, tier1"
  a=$(q "$T/camp.sqlite" "SELECT $cols FROM point WHERE id = '$id'")
  b=$(q "$L" "SELECT $cols FROM point WHERE id = '$id'")
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "$id: the check's row '$b' is not the campaign's '$a'"
done
# a negative control stays one (ttbp leaves it out)
[ "$(q "$L" "SELECT negative FROM check_result WHERE point_id = 'gemm.batch_split' AND name = 'rows'")" = 1 ] \
  || fail "gemm.batch_split's rows check is not marked negative"
"$PARITY" ledger runs --ledger "$L" > "$T/runs.out" 2>&1 || fail "ledger runs"
grep -Eq '^ +1 2026-05-01T09:00:00Z +cpu +- +traces +- +18 +0 +0 check +complete$' "$T/runs.out" \
  || fail "ledger runs does not mark the run as from traces: $(cat "$T/runs.out")"

# --- day 2: the planted trace fails, and is recorded
chk 2026-05-02T09:00:00Z "$T/bad" --ledger "$L" --class cpu
rc=$?
[ $rc -eq 1 ] || fail "day 2: exit $rc, want 1 ($(tail -3 "$T/c.err"))"
r=$(q "$L" "SELECT exit_status, points_failed FROM run WHERE id = 2")
[ "$r" = "1|1" ] || fail "day 2 run row: '$r'"
r=$(q "$L" "SELECT tier2, bit_exact FROM point WHERE run_id = 2 AND id = 'gemm.splitk'")
[ "$r" = "fail|0" ] || fail "day 2: gemm.splitk '$r', want fail|0"
q "$L" "SELECT detail FROM check_result WHERE run_id = 2 AND point_id = 'gemm.splitk' AND name = 'tier2'" \
  | grep -q 'cpu.gemm.splitk.graphed-0.safetensors' || fail "day 2: the failing trace is not named"
[ "$(q "$L" "SELECT tier2 FROM point WHERE run_id = 2 AND id = 'gemm.seq'")" = pass ] || fail "day 2: gemm.seq"

# --- day 3: all pass again
chk 2026-05-03T21:30:00Z "$T/tr" --ledger "$L" --class cpu || fail "day 3: exit $?"

# --- TTBP, by hand: t0 = day 1 09:00; every point at parity in run 1 (TTBP 0);
# gemm.splitk broken by run 2 (day 2 09:00), back in run 3 (day 3 21:30)
"$PARITY" ttbp --class cpu --ledger "$L" --json "$T/t.json" > "$T/t.out" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "ttbp: exit $rc, want 0 ($(cat "$T/t.out"))"
grep -q '^first campaign: run 1 at 2026-05-01T09:00:00Z; 3 complete run(s)' "$T/t.out" \
  || fail "ttbp first line: $(head -3 "$T/t.out")"
grep -Eq '^gemm.splitk +2026-05-01T09:00:00Z +1 00:00:00 +bits +regressed, back$' "$T/t.out" \
  || fail "ttbp gemm.splitk: $(grep '^gemm.splitk ' "$T/t.out")"
# (the planted graphed run also differs from the eager run and the row variants: Tier 1 fails first)
grep -q '^  gemm.splitk: broken by run 2 at 2026-05-02T09:00:00Z (tier1 fail: eager_graphed, rows); at parity again from run 3 at 2026-05-03T21:30:00Z$' \
  "$T/t.out" || fail "the regression: $(grep -A2 regressions "$T/t.out")"
grep -q '^held since: no' "$T/t.out" || fail "held line"
[ "$(jq_ "$T/t.json" '$.overall.ttbp_s')" = 0 ] || fail "json overall.ttbp_s"

# a second ledger that starts with the failing day: gemm.splitk reaches
# parity 1d 12:30:00 (= 36 h 30 min = 131400 s) after the first run
L2=$T/l2.sqlite
chk 2026-05-02T09:00:00Z "$T/bad" --ledger "$L2" --class cpu
[ $? -eq 1 ] || fail "L2 day 2: want exit 1"
chk 2026-05-03T21:30:00Z "$T/tr" --ledger "$L2" --class cpu || fail "L2 day 3: exit $?"
"$PARITY" ttbp --class cpu --ledger "$L2" --json "$T/t2.json" > "$T/t2.out" 2>&1 || fail "ttbp L2: exit $?"
grep -Eq '^gemm.splitk +2026-05-03T21:30:00Z +2 1d 12:30:00 +bits +held$' "$T/t2.out" \
  || fail "ttbp L2 gemm.splitk: $(grep '^gemm.splitk ' "$T/t2.out")"
grep -q '^overall: all .* point(s) reached bit parity by run 2 at 2026-05-03T21:30:00Z: TTBP 1d 12:30:00$' "$T/t2.out" \
  || fail "ttbp L2 overall: $(grep overall "$T/t2.out")"
[ "$(jq_ "$T/t2.json" '$.overall.ttbp_s')" = 131400 ] || fail "json L2 overall.ttbp_s"

# --- refusals: exit 2, the ledger byte for byte as it was, its dump too
cp "$L" "$T/before.sqlite"
q "$L" .dump > "$T/before.dump"
refuse() { # WHAT MESSAGE ARGS...: exit 2, MESSAGE on stderr, $L unchanged
  what=$1; msg=$2; shift 2
  PARITY_LEDGER_CLOCK=2026-05-04T00:00:00Z "$PARITY" check --kernels "$KERNELS" "$@" > "$T/r.out" 2> "$T/r.err"
  rc=$?
  [ $rc -eq 2 ] || fail "$what: exit $rc, want 2"
  grep -qF -- "$msg" "$T/r.err" || fail "$what: stderr '$(cat "$T/r.err")' lacks '$msg'"
  cmp -s "$L" "$T/before.sqlite" || fail "$what: the ledger changed"
  q "$L" .dump | cmp -s - "$T/before.dump" || fail "$what: the ledger's dump changed"
}
refuse "--ledger without --class" "--ledger FILE needs --class C" "$T"/tr/*.safetensors --ledger "$L"
refuse "--class without --ledger" "give --ledger" "$T"/tr/*.safetensors --class cpu
refuse "--model without --ledger" "--model M labels the run" "$T"/tr/*.safetensors --model m
refuse "a class not in the registry" "--class: class 'nosuch' is not in the registry" \
  "$T"/tr/*.safetensors --ledger "$L" --class nosuch
# a trace of another class (cpu2, a sample class of the registry)
"$PARITY" campaign --class cpu2 --shapes small --kernels "$KERNELS" --families gemm --traces "$T/tr2" --no-ledger \
  --quiet > /dev/null 2>&1 || fail "campaign cpu2"
refuse "a trace of another class" "$T/tr2/cpu2.gemm.splitk.graphed-0.safetensors: class is 'cpu2', expected 'cpu'" \
  "$T"/tr/*.safetensors "$T/tr2/cpu2.gemm.splitk.graphed-0.safetensors" --ledger "$L" --class cpu
# a trace that is not one (an input error after good ones)
head -c 100 "$T/tr/cpu.gemm.seq.graphed-0.safetensors" > "$T/cut.safetensors"
refuse "a truncated trace" "cut.safetensors" "$T"/tr/*.safetensors "$T/cut.safetensors" --ledger "$L" --class cpu
PARITY_LEDGER_CLOCK=yesterday "$PARITY" check --kernels "$KERNELS" "$T"/tr/*.safetensors --ledger "$L" --class cpu \
  > /dev/null 2>&1
[ $? -eq 2 ] || fail "a bad PARITY_LEDGER_CLOCK: want exit 2"
cmp -s "$L" "$T/before.sqlite" || fail "a bad clock: the ledger changed"
# an input error with a fresh ledger path creates no file
PARITY_LEDGER_CLOCK=2026-05-04T00:00:00Z "$PARITY" check --kernels "$KERNELS" "$T/cut.safetensors" \
  --ledger "$T/fresh.sqlite" --class cpu > /dev/null 2>&1
[ $? -eq 2 ] || fail "fresh ledger, bad trace: want exit 2"
[ -e "$T/fresh.sqlite" ] && fail "an input error created the ledger"
# another program's database: refused before anything is checked, unchanged
sqlite3 "$T/foreign.db" "CREATE TABLE t(x); INSERT INTO t VALUES (1)"
cp "$T/foreign.db" "$T/foreign.orig"
"$PARITY" check --kernels "$KERNELS" "$T"/tr/*.safetensors --ledger "$T/foreign.db" --class cpu > /dev/null 2> "$T/f.err"
[ $? -eq 2 ] || fail "a foreign database: want exit 2"
grep -q "not a parity ledger" "$T/f.err" || fail "foreign database message: $(cat "$T/f.err")"
cmp -s "$T/foreign.db" "$T/foreign.orig" || fail "the foreign database changed"
# the ledger is still the three runs
[ "$(q "$L" 'SELECT count(*) FROM run')" = 3 ] || fail "a refusal added a run"

[ $fails -eq 0 ] && echo "cli_check_ledger: all passed"
exit $((fails > 0))
