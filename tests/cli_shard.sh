#!/bin/sh
# cli_shard.sh PARITY KERNELS: scale-out: `parity campaign --shard i/N` runs
# disjoint slices that cover the campaign; the shard ledgers merged with
# `parity ledger merge` hold the verdicts a single-process campaign records,
# and merging again changes nothing.
set -u
PARITY=$1
KERNELS=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
command -v sqlite3 > /dev/null || { echo "needs the sqlite3 shell (Debian package sqlite3)"; exit 1; }
q() { sqlite3 -batch -noheader "$1" "$2"; }
VERDICTS="SELECT id, tier1, tier2, ifnull(tier2_basis, '-'), ifnull(bit_exact, '-'), hash, kernel,
          ifnull(legacy_kernel, '-') FROM point ORDER BY id"

"$PARITY" campaign --class cpu --kernels "$KERNELS" --ledger "$T/one.sqlite" --quiet > /dev/null 2>&1 \
  || fail "the single campaign failed"
N=4
i=1
while [ $i -le $N ]; do
  "$PARITY" campaign --class cpu --kernels "$KERNELS" --shard $i/$N --ledger "$T/s$i.sqlite" --quiet \
    > "$T/o$i" 2> "$T/e$i" &
  i=$((i + 1))
done
wait
total=0
i=1
while [ $i -le $N ]; do
  [ -s "$T/e$i" ] && fail "shard $i: $(cat "$T/e$i")"
  c=$(q "$T/s$i.sqlite" 'SELECT count(*) FROM point')
  [ "$c" -gt 0 ] || fail "shard $i/$N is empty"
  [ "$(q "$T/s$i.sqlite" 'SELECT shard FROM run')" = "$i/$N" ] || fail "shard $i not recorded"
  total=$((total + c))
  i=$((i + 1))
done
all=$(q "$T/one.sqlite" 'SELECT count(*) FROM point')
[ "$total" = "$all" ] || fail "the shards hold $total points, the campaign $all"
"$PARITY" ledger merge --out "$T/m.sqlite" "$T"/s1.sqlite "$T"/s2.sqlite "$T"/s3.sqlite "$T"/s4.sqlite > "$T/mo" 2>&1 \
  || fail "merge: $(cat "$T/mo")"
grep -q "4 run(s) added ($all point(s)), 0 already present" "$T/mo" || fail "merge summary: $(cat "$T/mo")"
[ "$(q "$T/m.sqlite" 'SELECT count(DISTINCT id) FROM point')" = "$all" ] || fail "the shards overlap or miss points"
q "$T/one.sqlite" "$VERDICTS" > "$T/v1"
q "$T/m.sqlite" "$VERDICTS" > "$T/v2"
cmp -s "$T/v1" "$T/v2" || fail "merged verdicts differ from the single campaign's: $(diff "$T/v1" "$T/v2" | head -5)"
[ "$(q "$T/m.sqlite" 'SELECT count(*) FROM check_result')" = "$(q "$T/one.sqlite" 'SELECT count(*) FROM check_result')" ] \
  || fail "merged checks"
# idempotent: again, and with an input given twice
"$PARITY" ledger merge --out "$T/m.sqlite" "$T"/s1.sqlite "$T"/s1.sqlite "$T"/s2.sqlite "$T"/s3.sqlite "$T"/s4.sqlite \
  > "$T/mo2" 2>&1 || fail "merge again"
grep -q '0 run(s) added (0 point(s)), 5 already present' "$T/mo2" || fail "merge again: $(cat "$T/mo2")"
[ "$(q "$T/m.sqlite" 'SELECT count(*) FROM point')" = "$all" ] || fail "merging again added points"
# incomplete runs are not merged
sqlite3 "$T/s1.sqlite" "INSERT INTO run(uuid, started_utc, started_s, class, shapes, seed, harness_version)
                        VALUES ('inc', '2026-01-01T00:00:00Z', 1767225600, 'cpu', 'small', '1', 'parity')"
"$PARITY" ledger merge --out "$T/m.sqlite" "$T/s1.sqlite" > "$T/mo3" 2>&1
grep -q '1 incomplete not merged' "$T/mo3" || fail "incomplete run: $(cat "$T/mo3")"
[ "$(q "$T/m.sqlite" "SELECT count(*) FROM run WHERE uuid = 'inc'")" = 0 ] || fail "an incomplete run was merged"
# the merged ledger reads like one campaign's
"$PARITY" ttbp --class cpu --ledger "$T/m.sqlite" > "$T/tt" 2>&1 || fail "ttbp of the merged ledger: $(cat "$T/tt")"
"$PARITY" ledger runs --ledger "$T/m.sqlite" | grep -c ' complete$' | grep -qx 4 || fail "ledger runs"

# input errors
for bad in 0/3 4/3 1/0 a/b 1/3x; do
  "$PARITY" campaign --class cpu --kernels "$KERNELS" --shard "$bad" --no-ledger > /dev/null 2> "$T/e"
  [ $? -eq 2 ] || fail "--shard $bad: want exit 2"
  grep -q -- "--shard: '$bad'" "$T/e" || fail "--shard $bad not named"
done
"$PARITY" ledger merge --out "$T/m.sqlite" "$T/nosuch.sqlite" > /dev/null 2> "$T/e"; [ $? -eq 2 ] || fail "missing input"
grep -q 'nosuch.sqlite' "$T/e" || fail "missing input not named"
"$PARITY" ledger merge --out "$T/m.sqlite" "$T/m.sqlite" > /dev/null 2>&1; [ $? -eq 2 ] || fail "merge into itself"
"$PARITY" ledger merge "$T/s1.sqlite" > /dev/null 2>&1; [ $? -eq 2 ] || fail "merge without --out"
"$PARITY" ledger bogus > /dev/null 2>&1; [ $? -eq 2 ] || fail "unknown subcommand"
"$PARITY" ledger --help | grep -q '^usage: parity ledger merge' || fail "--help"

[ $fails -eq 0 ] && echo "cli_shard: all passed"
exit $((fails != 0))
