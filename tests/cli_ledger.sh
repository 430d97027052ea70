#!/bin/sh
# cli_ledger.sh PARITY KERNELS: the campaign ledger (docs/ledger.md) from the
# outside, read back with the sqlite3 shell: a campaign's run and points, the
# clock override, git state of the registry, --no-ledger, bad ledgers, a
# campaign killed with SIGKILL (the ledger stays valid, the run incomplete)
# and concurrent campaigns on one ledger (all of them land).
set -u
PARITY=$1
KERNELS=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
q() { sqlite3 -batch -noheader "$1" "$2"; }
command -v sqlite3 > /dev/null || { echo "needs the sqlite3 shell (Debian package sqlite3)"; exit 1; }

# --- one campaign, its run and points
cd "$T" || exit 1
PARITY_LEDGER_CLOCK=2026-03-01T10:00:00Z "$PARITY" campaign --class cpu --kernels "$KERNELS" --model ck-7b \
  --seed 7 --traces "$T/tr" > stdout 2> err
rc=$?
[ $rc -eq 0 ] || fail "campaign: exit $rc ($(cat err))"
L=$T/out/ledger.sqlite
[ -f "$L" ] || fail "no default ledger out/ledger.sqlite"
[ "$(q "$L" 'PRAGMA journal_mode')" = wal ] || fail "ledger not in WAL mode"
[ "$(q "$L" 'PRAGMA user_version')" = 5 ] || fail "schema version is not 5"
[ "$(q "$L" 'SELECT max(version) FROM schema_migration')" = 5 ] || fail "migration not logged"
row=$(q "$L" "SELECT complete, exit_status, class, model, shapes, seed, started_utc, harness_version FROM run")
case "$row" in
  "1|0|cpu|ck-7b|small|7|2026-03-01T10:00:0"?"Z|parity "*) ;;
  *) fail "run row: '$row'" ;;
esac
# the points: as many as the table has lines, each with its checks
npt=$(grep -cE '^[a-z_0-9]+\.[a-z_0-9]+ +(ok|FAIL|skip)' stdout)
[ "$npt" -gt 10 ] || fail "campaign table has only $npt points"
[ "$(q "$L" 'SELECT count(*) FROM point')" = "$npt" ] || fail "ledger points != table lines ($npt)"
[ "$(q "$L" 'SELECT points FROM run')" = "$npt" ] || fail "run.points != $npt"
[ "$(q "$L" 'SELECT count(*) FROM check_result')" = $((npt * 5)) ] || fail "not 5 checks per point"
r=$(q "$L" "SELECT family, point, kernel, legacy_kernel, tier1, tier2, tier2_basis, bit_exact, max_ulp, length(hash)
            FROM point WHERE id = 'gemm.splitk'")
[ "$r" = "gemm|splitk|cpu_gemm_splitk|cpu_gemm_splitk_legacy|pass|pass|bits|1|0|64" ] || fail "gemm.splitk row: '$r'"
r=$(q "$L" "SELECT tier2_basis, declared_tolerance, bit_exact FROM point WHERE id = 'gemm.batch_split'")
[ "$r" = "declared|rtol 0.0001, atol 0.001|0" ] || fail "gemm.batch_split row: '$r'"
r=$(q "$L" "SELECT verdict, negative FROM check_result WHERE point_id = 'gemm.batch_split' AND name = 'rows'")
[ "$r" = "pass|1" ] || fail "negative control row check: '$r'"
q "$L" "SELECT detail FROM check_result WHERE point_id = 'gemm.batch_split' AND name = 'rows'" | grep -q 'bits differ' \
  || fail "check detail not recorded"
ntr=$(ls "$T"/tr/cpu.gemm.splitk.*.safetensors | wc -l)
[ "$(q "$L" "SELECT count(*) FROM trace WHERE point_id = 'gemm.splitk'")" = "$ntr" ] || fail "traces of gemm.splitk: want $ntr"
q "$L" "SELECT path FROM trace WHERE point_id = 'gemm.splitk'" | grep -q 'cpu.gemm.splitk.graphed-0.safetensors$' \
  || fail "graphed-0 trace not recorded"
[ "$(q "$L" "SELECT t_run >= 0 AND t_ref > 0 FROM point WHERE id = 'gemm.splitk'")" = 1 ] || fail "timings"
# a trace left by an earlier campaign is not recorded for a later one
touch -d '2000-01-01' "$T/tr/cpu.gemm.splitk.stale.safetensors"
"$PARITY" campaign --class cpu --kernels "$KERNELS" --families gemm --ledger "$T/tr.sqlite" --traces "$T/tr" --quiet \
  > /dev/null 2>&1 || fail "campaign with traces"
[ "$(q "$T/tr.sqlite" "SELECT count(*) FROM trace WHERE path LIKE '%stale%'")" = 0 ] || fail "a stale trace was recorded"
[ "$(q "$T/tr.sqlite" "SELECT count(*) FROM trace WHERE point_id = 'gemm.splitk'")" = "$ntr" ] || fail "traces of the second run"

# --- git state: a registry in git, clean then dirty; one outside git
if command -v git > /dev/null; then
  cp -r "$KERNELS" "$T/reg"
  (cd "$T/reg" && git init -q && git add . && git -c user.email=t@t -c user.name=t commit -qm x) || fail "git init"
  head=$(git -C "$T/reg" rev-parse HEAD)
  "$PARITY" campaign --class cpu --kernels "$T/reg" --ledger "$T/g.sqlite" --quiet > /dev/null 2>&1 || fail "campaign in git"
  echo "# edit" >> "$T/reg/cpu/HARDWARE.toml"
  "$PARITY" campaign --class cpu --kernels "$T/reg" --ledger "$T/g.sqlite" --quiet > /dev/null 2>&1 || fail "campaign dirty"
  r=$(q "$T/g.sqlite" "SELECT group_concat(registry_commit || ':' || registry_dirty, ' ') FROM (SELECT * FROM run ORDER BY id)")
  [ "$r" = "$head:0 $head:1" ] || fail "registry git state: '$r', want '$head:0 $head:1'"
  rm -rf "$T/reg/.git"
  "$PARITY" campaign --class cpu --kernels "$T/reg" --ledger "$T/g.sqlite" --quiet > /dev/null 2>&1 || fail "campaign no git"
  r=$(q "$T/g.sqlite" "SELECT registry_commit IS NULL AND registry_dirty IS NULL FROM run WHERE id = 3")
  [ "$r" = 1 ] || fail "registry outside git: '$r'"
fi

# --- --no-ledger, and bad ledgers (exit 2, the file named)
"$PARITY" campaign --class cpu --kernels "$KERNELS" --no-ledger --ledger "$T/none.sqlite" --quiet > /dev/null 2>&1
[ -e "$T/none.sqlite" ] && fail "--no-ledger wrote a ledger"
echo "not a database at all, not at all, not at all, not at all, not at all....." > "$T/bad.sqlite"
"$PARITY" campaign --class cpu --kernels "$KERNELS" --ledger "$T/bad.sqlite" --quiet > /dev/null 2> "$T/e1"
rc=$?
[ $rc -eq 2 ] || fail "a non-SQLite ledger: exit $rc, want 2"
grep -q "bad.sqlite" "$T/e1" || fail "the bad ledger is not named: $(cat "$T/e1")"
cp "$L" "$T/new.sqlite"
sqlite3 "$T/new.sqlite" 'PRAGMA user_version = 99'
"$PARITY" campaign --class cpu --kernels "$KERNELS" --ledger "$T/new.sqlite" --quiet > /dev/null 2> "$T/e2"
rc=$?
[ $rc -eq 2 ] || fail "a newer schema: exit $rc, want 2"
grep -q "new.sqlite: schema version 99 is newer" "$T/e2" || fail "newer schema message: $(cat "$T/e2")"

# --- SIGKILL in the middle of a campaign: valid ledger, run incomplete
K=$T/kill.sqlite
"$PARITY" campaign --class cpu --kernels "$KERNELS" --ledger "$K" --quiet > /dev/null 2>&1 &
"$PARITY" campaign --class cpu --kernels "$KERNELS" --shapes 8b-layer --families gemm --ledger "$K" --quiet \
  > /dev/null 2>&1 &
pid=$!
i=0
while [ "$(q "$K" "SELECT count(*) FROM run WHERE shapes = '8b-layer'" 2> /dev/null)" != 1 ] && [ $i -lt 1200 ]; do
  sleep 0.1
  i=$((i + 1))
done
sleep 0.5
kill -9 $pid 2> /dev/null || fail "the 8b-layer campaign ended before it could be killed"
wait
[ "$(q "$K" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check after kill -9"
r=$(q "$K" "SELECT complete, ended_utc IS NULL, (SELECT count(*) FROM point WHERE run_id = run.id) FROM run WHERE shapes = '8b-layer'")
[ "$r" = "0|1|0" ] || fail "killed run: '$r', want incomplete, no end, no points"
[ "$(q "$K" "SELECT complete FROM run WHERE shapes = 'small'")" = 1 ] || fail "the other campaign did not complete"
# and the ledger takes the next campaign
"$PARITY" campaign --class cpu --kernels "$KERNELS" --ledger "$K" --quiet > /dev/null 2>&1 || fail "campaign after kill"
[ "$(q "$K" 'SELECT count(*) FROM run WHERE complete = 1')" = 2 ] || fail "runs after the kill"

# --- concurrent campaigns on one new ledger: all land, whole
C=$T/conc.sqlite
for s in 1 2 3 4; do
  "$PARITY" campaign --class cpu --kernels "$KERNELS" --ledger "$C" --seed $s --quiet > /dev/null 2> "$T/c$s.err" &
done
wait
for s in 1 2 3 4; do [ -s "$T/c$s.err" ] && fail "concurrent campaign $s: $(cat "$T/c$s.err")"; done
r=$(q "$C" "SELECT count(*), sum(complete), count(DISTINCT seed) FROM run")
[ "$r" = "4|4|4" ] || fail "concurrent runs: '$r', want 4|4|4"
[ "$(q "$C" 'SELECT count(*) FROM point')" = $((npt * 4)) ] || fail "concurrent points: want $((npt * 4))"
[ "$(q "$C" 'PRAGMA integrity_check')" = ok ] || fail "integrity after concurrent campaigns"

# --- the campaign's exit lines: promotions since the class's previous campaign
E=$T/exit.sqlite
cp -r "$KERNELS" "$T/ex"
camp_e() { "$PARITY" campaign --class cpu --kernels "$T/ex" --families gemm,rmsnorm --ledger "$E" --quiet "$@"; }
camp_e > "$T/x1" 2>&1 || fail "exit lines: campaign 1"
grep -q '^Promoted into the LKB: none (the first recorded campaign of class cpu)$' "$T/x1" || fail "first campaign's promotion line"
grep -q '^LKB residual delta: none to compare (the first recorded residual of the class: now 0 entries, 0 lines, 0 copy points, 0 single-class)$' "$T/x1" || fail "no residual line: $(grep residual "$T/x1")"
camp_e > "$T/x2" 2>&1 || fail "exit lines: campaign 2"
grep -q '^Promoted into the LKB: none$' "$T/x2" || fail "an unchanged registry promoted something: $(grep Promoted "$T/x2")"
sed -i '0,/params = { split_k = 4 }/s//params = { split_k = 2 }/' "$T/ex/cpu/common/KERNEL_FAMILIES.toml"
camp_e > "$T/x3" 2>&1 || fail "exit lines: campaign 3"
# a changed split count is a numerics change, never a promotion
grep -q '^Promoted into the LKB: none$' "$T/x3" || fail "a numerics change called a promotion: $(grep Promoted "$T/x3")"
grep -Eq '^Numerics changed at: gemm.splitk \(numerics point [0-9a-f]{12}, was [0-9a-f]{12}\)$' "$T/x3" \
  || fail "the changed split is not said as a numerics change: $(grep -A1 Promoted "$T/x3")"
# a family first run now is neither (the earlier campaigns did not record it)
"$PARITY" campaign --class cpu --kernels "$T/ex" --families silu_and_mul --ledger "$E" --quiet > "$T/x4" 2>&1
grep -q '^Promoted into the LKB: none$' "$T/x4" || fail "new points called promoted: $(grep Promoted "$T/x4")"
[ "$(q "$E" "SELECT exit_lines FROM run WHERE id = 3")" = "$(grep -A2 '^Promoted' "$T/x3")" ] || fail "exit lines not stored as printed"
# A real promotion: a copy point (gemm.head, the LM head's, lowered on cpu
# and its two child classes for both models) replaced by an instantiation
# of the template with the same numerics point: said with its users and
# the residual entry removed; the residual delta says the copy went.
P=$T/promo.sqlite
cp -r "$KERNELS" "$T/pa"
python3 - "$T/pa/cpu/common/KERNEL_FAMILIES.toml" "$T/pa/cpu/common/FUSIONS.toml" <<'PY'
import sys
m, f = sys.argv[1], sys.argv[2]
s = open(m).read()
add = ('[[family.point]]\nid = "head"\nhow = "copy"\nreason = "copied from splitk before split_k was a parameter"\n'
       'kernel = "cpu_gemm_splitk"\nparams = { split_k = 4 }\n[family.point.numerics.k]\nacc = "fp32"\n'
       'tree = "split({split_k}, stride({vec}, seq, pairwise), seq)"\n\n')
i = s.index('[[family.point]]\nid = "splitk_threads"')
open(m, 'w').write(s[:i] + add + s[i:])
r = open(f).read()
old = '[[rule]]\nfamily = "rmsnorm"\nop = "mlp_norm"'
assert old in r
open(f, 'w').write(r.replace(old, '[[rule]]\nfamily = "gemm"\nop = "lm_head"\npoint = "head"\n\n' + old, 1))
PY
"$PARITY" campaign --class cpu --kernels "$T/pa" --families gemm --no-power --ledger "$P" --quiet > "$T/p1" 2>&1 || fail "promotion: campaign 1"
sed -i '/^how = "copy"$/{N;/reason = "copied from splitk/d}' "$T/pa/cpu/common/KERNEL_FAMILIES.toml"
grep -q 'copied from splitk' "$T/pa/cpu/common/KERNEL_FAMILIES.toml" && fail "the copy was not replaced"
"$PARITY" campaign --class cpu --kernels "$T/pa" --families gemm --no-power --ledger "$P" --quiet > "$T/p2" 2>&1 || fail "promotion: campaign 2"
grep -Eq '^Promoted into the LKB: gemm / head / kernel cpu_gemm_splitk / numerics point [0-9a-f]{12} / users cpu/llama3-8b, cpu/mixtral-8x7b, cpu-split8/llama3-8b, cpu-split8/mixtral-8x7b, cpu2/llama3-8b, cpu2/mixtral-8x7b / residual removed: copy gemm.head$' "$T/p2" \
  || fail "the promotion is not said: $(grep Promoted "$T/p2")"
grep -q '^LKB residual delta: -1 entries, +0 lines, -1 copy points' "$T/p2" || fail "the residual delta: $(grep delta "$T/p2")"
grep -q '^Numerics changed' "$T/p2" && fail "a promotion said as a numerics change"
[ "$(q "$P" "SELECT count(*) FROM run WHERE residual_entries IS NOT NULL")" = 2 ] || fail "residual entries not recorded"
camp_e --no-ledger > "$T/x5" 2>&1
grep -q '^Promoted into the LKB: not known (--no-ledger)$' "$T/x5" || fail "--no-ledger promotion line"

# --- a ledger of a newer schema (or a negative one) is refused before a byte
# of it changes: no switch to WAL, no -wal or -shm file beside it
for v in 99 -3; do
  sqlite3 "$T/newer$v.db" "CREATE TABLE t(x); PRAGMA user_version = $v; PRAGMA journal_mode = DELETE;" > /dev/null
  cp "$T/newer$v.db" "$T/newer$v.orig"
  for cmd in "campaign --class cpu --kernels $KERNELS --families rmsnorm" "model --class cpu --model llama3-8b --kernels $KERNELS --scale tiny --prompts 1 --prompt-len 2 --tokens 2"; do
    # shellcheck disable=SC2086
    "$PARITY" $cmd --ledger "$T/newer$v.db" > "$T/nw" 2>&1
    rc=$?
    [ $rc -eq 2 ] || fail "${cmd%% *} --ledger schema $v: exit $rc, want 2"
    if [ "$v" = 99 ]; then
      grep -q "schema version 99 is newer than this parity's" "$T/nw" || fail "${cmd%% *} schema 99: $(tail -1 "$T/nw")"
    else
      grep -q "not a parity ledger (an SQLite database of schema version -3" "$T/nw" || fail "${cmd%% *} schema -3: $(tail -1 "$T/nw")"
    fi
    cmp -s "$T/newer$v.db" "$T/newer$v.orig" || fail "${cmd%% *} --ledger schema $v: the file changed"
    [ ! -e "$T/newer$v.db-wal" ] && [ ! -e "$T/newer$v.db-shm" ] || fail "${cmd%% *} --ledger schema $v: WAL files left"
    rm -f "$T/newer$v.db-wal" "$T/newer$v.db-shm"
  done
  # model writes none of its outputs when the run ends refused (issue 50: outputs left by a failed run)
  "$PARITY" model --class cpu --model llama3-8b --kernels "$KERNELS" --scale tiny --prompts 1 --prompt-len 2 --tokens 2 \
    --ledger "$T/newer$v.db" --json "$T/nw.json" --html "$T/nw.html" --metrics "$T/nw.metrics" > "$T/nw" 2>&1
  [ $? -eq 2 ] || fail "model --ledger schema $v with outputs: not exit 2"
  for f in nw.json nw.html nw.metrics; do
    [ ! -e "$T/$f" ] || { fail "model --ledger schema $v: $f written by a run that exits 2"; rm -f "$T/$f"; }
  done
  [ -z "$(ls -A "$T" | grep '^\.nw\|nw\..*\.tmp')" ] || fail "model --ledger schema $v: temporaries left: $(ls -a "$T")"
done

[ $fails -eq 0 ] && echo "cli_ledger: all passed"
exit $((fails != 0))
