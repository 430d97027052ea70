#!/bin/sh
# examples_scale_out.sh PARITY KERNELS: the Slurm job files of
# examples/scale-out run as plain shell scripts with the environment Slurm
# gives an array of 4 tasks (no Slurm needed), then the merge job; the
# merged ledger must hold the verdicts of a single-process campaign.
set -u
PARITY=$1
KERNELS=$2
EX=$(dirname "$0")/../examples/scale-out
EX=$(cd "$EX" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
command -v sqlite3 > /dev/null || { echo "needs the sqlite3 shell (Debian package sqlite3)"; exit 1; }
cd "$T" || exit 1
export PARITY KERNELS CLASS=cpu SHAPES=small SLURM_ARRAY_TASK_COUNT=4 SLURM_CPUS_PER_TASK=2
for t in 0 1 2 3; do
  SLURM_ARRAY_TASK_ID=$t sh "$EX/campaign-array.sbatch" > "task$t.out" 2>&1 || fail "array task $t: $(cat "task$t.out")"
done
ls out/shards/ledger-*-of-4.sqlite 2> /dev/null | wc -l | grep -qx 4 || fail "not 4 shard ledgers"
sh "$EX/merge.sbatch" > merge.out 2>&1 || fail "merge job: $(cat merge.out)"
grep -q '4 run(s) added' merge.out || fail "merge job did not add 4 runs: $(cat merge.out)"
"$PARITY" campaign --class cpu --kernels "$KERNELS" --threads 2 --ledger one.sqlite --quiet > /dev/null 2>&1 || fail "single campaign"
V="SELECT id, tier1, tier2, ifnull(bit_exact, '-'), hash FROM point ORDER BY id"
[ "$(sqlite3 out/ledger.sqlite "$V")" = "$(sqlite3 one.sqlite "$V")" ] || fail "merged verdicts differ from a single campaign's"
# resubmitting the merge adds nothing
sh "$EX/merge.sbatch" > merge2.out 2>&1
grep -q '0 run(s) added (0 point(s)), 4 already present' merge2.out || fail "merge not idempotent: $(head -1 merge2.out)"
[ $fails -eq 0 ] && echo "examples_scale_out: all passed"
exit $((fails != 0))
