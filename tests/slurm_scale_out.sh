#!/bin/sh
# slurm_scale_out.sh PARITY KERNELS: the Slurm job files of
# examples/scale-out under a real single-node Slurm (Debian's slurm-wlm and
# munge), started here with their own configuration, key, ports and
# directories in a temporary directory, and stopped at the end: an array of
# 4 shards, then the dependent merge job; the merged ledger must hold the
# verdicts of a single-process campaign.  Opt-in (CTest label `slurm`,
# `scripts/test --slurm`); needs root (slurmd) and exits 77 (skipped)
# without the Slurm and munge daemons.
set -u
PARITY=$1
KERNELS=$2
EX=$(cd "$(dirname "$0")/../examples/scale-out" && pwd)
for c in slurmctld slurmd munged sbatch sinfo sqlite3; do
  command -v $c > /dev/null || { echo "skipped: $c not installed (apt-get install slurm-wlm munge sqlite3)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "skipped: slurmd needs root"; exit 77; }
S=$(mktemp -d)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
stop() {
  for p in slurmd slurmctld munged; do
    [ -s "$S/$p.pid" ] && kill "$(cat "$S/$p.pid")" 2> /dev/null
  done
  sleep 1
  rm -rf "$S"
}
trap stop EXIT
H=$(hostname)
# ports: PARITY_SLURM_PORT (default 16817) and the next one
P=${PARITY_SLURM_PORT:-16817}
mkdir -p "$S/state" "$S/spool" "$S/w/out/shards"
dd if=/dev/urandom of="$S/munge.key" bs=1024 count=1 2> /dev/null && chmod 400 "$S/munge.key"
cat > "$S/slurm.conf" << EOF2
ClusterName=parity
SlurmctldHost=$H
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$S/munge.sock
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldPort=$P
SlurmdPort=$((P + 1))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
NodeName=$H CPUs=$(nproc) State=UNKNOWN
PartitionName=parity Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF2
export SLURM_CONF="$S/slurm.conf"
munged --key-file="$S/munge.key" --socket="$S/munge.sock" --pid-file="$S/munged.pid" --log-file="$S/munged.log" \
  --seed-file="$S/munge.seed" --force || { echo "FAIL: munged did not start"; exit 1; }
slurmctld || { echo "FAIL: slurmctld did not start"; exit 1; }
slurmd || { echo "FAIL: slurmd did not start"; exit 1; }
i=0
until sinfo -h -o %T 2> /dev/null | grep -q idle; do
  i=$((i + 1))
  [ $i -lt 60 ] || { echo "FAIL: the node never became idle: $(tail -3 "$S/slurmd.log")"; exit 1; }
  sleep 1
done

cd "$S/w" || exit 1
# the job file asks for 8 CPUs per task: this node may have fewer
job=$(sbatch --parsable --cpus-per-task=1 \
  --export=ALL,PARITY="$PARITY",KERNELS="$KERNELS",CLASS=cpu,SHAPES=small "$EX/campaign-array.sbatch") \
  || fail "sbatch of the array"
merge=$(sbatch --parsable --wait --dependency=afterok:"$job" --export=ALL,PARITY="$PARITY",CLASS=cpu \
  "$EX/merge.sbatch") || fail "the merge job (after the array $job): $(cat out/shards/*.out 2> /dev/null | tail -5)"
ls out/shards/ledger-*-of-4.sqlite 2> /dev/null | wc -l | grep -qx 4 || fail "not 4 shard ledgers"
grep -q '4 run(s) added' out/shards/slurm-merge-"$merge".out 2> /dev/null || fail "merge output: $(cat out/shards/slurm-merge-*.out)"
# one thread per task, as the array ran (at one thread the thread-count
# negative control cannot fail: exit 1 is a verdict here, recorded as such)
"$PARITY" campaign --class cpu --kernels "$KERNELS" --threads 1 --ledger one.sqlite --quiet > /dev/null 2>&1
[ $? -le 1 ] || fail "the single campaign"
V="SELECT id, tier1, tier2, ifnull(bit_exact, '-'), hash FROM point ORDER BY id"
[ "$(sqlite3 out/ledger.sqlite "$V")" = "$(sqlite3 one.sqlite "$V")" ] \
  || fail "merged shard verdicts differ from a single campaign's"
[ "$(sqlite3 out/ledger.sqlite "SELECT group_concat(shard, ' ') FROM (SELECT shard FROM run ORDER BY shard)")" = \
  "1/4 2/4 3/4 4/4" ] || fail "the runs do not record shards 1/4 .. 4/4"
[ $fails -eq 0 ] && echo "slurm_scale_out: all passed"
exit $((fails != 0))
