#!/bin/sh
# cli_parity_target.sh PARITY KERNELS BACKENDS LIBEXT: TTBP, zero-day and the
# gate played over several PARITY_LEDGER_CLOCK days on fresh ledgers
# (docs/ledger.md, "Parity against a target"):
#   1. a port that re-declares its point (cpu-split8: split_k 8 where cpu runs
#      4) is at declared parity, never bit parity with cpu; re-declared back
#      to 4 on day 3 it reaches bit parity then, the hash change listed;
#   2. a model's points reached only at toy shapes (--shapes small) do not
#      count for the model; at --shapes model:M they do; model.M without a
#      `parity model` run is "not run";
#   3. a class edited without new points is class work for zero-day, the
#      file named;
#   4. a promotion of a copy point into an instantiation gains a Tier 1
#      check (new_legacy skip -> ok): the gate passes, gained, promotion said;
#   5. a kernel slower only at a real shape: the gate passes it at the small
#      preset's shape and fails it, naming the point, at the model's shape,
#      on a machine loaded on purpose (two busy processes).
# Every expected time is worked out by hand from the clocks set below.
set -u
PARITY=$1
KERNELS=$2
B=$3
LIB=$(cd "$(dirname "$4")" && pwd)/$(basename "$4")
T=$(mktemp -d)
B1=; B2=
trap '[ -n "$B1" ] && kill $B1 $B2 2> /dev/null; rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
command -v sqlite3 > /dev/null || { echo "needs the sqlite3 shell (Debian package sqlite3)"; exit 1; }
jq_() { sqlite3 -batch -noheader :memory: "SELECT json_extract(readfile('$1'), '$2')"; }
camp() { # CLOCK LEDGER REGISTRY CLASS [options]
  clock=$1 l=$2 reg=$3 cls=$4; shift 4
  PARITY_LEDGER_CLOCK=$clock "$PARITY" campaign --class "$cls" --kernels "$reg" --ledger "$l" --no-power --quiet "$@" \
    > "$T/camp.out" 2>&1
}

# ---- 1. a port that re-declares its point -----------------------------------
cp -r "$KERNELS" "$T/r1"
L=$T/l1.sqlite
camp 2026-06-01T08:00:00Z "$L" "$T/r1" cpu --families gemm || fail "1: cpu day 1: $(cat "$T/camp.out")"
camp 2026-06-02T08:00:00Z "$L" "$T/r1" cpu-split8 --families gemm || fail "1: cpu-split8 day 2"
"$PARITY" ttbp --class cpu-split8 --ledger "$L" --json "$T/s8.json" > "$T/s8.out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "1: cpu-split8 at declared parity only: exit $rc, want 1 ($(cat "$T/s8.out"))"
grep -q '^parity against: per point, the nearest ancestor that ran it (cpu first)$' "$T/s8.out" || fail "1: target not said"
grep -Eq '^gemm.seq +2026-06-02T08:00:00Z +2 00:00:00 +bits +held$' "$T/s8.out" || fail "1: gemm.seq: $(grep '^gemm.seq' "$T/s8.out")"
grep -Eq "^gemm.splitk +not yet +- +- +declared +declared parity since run 2 at 2026-06-02T08:00:00Z \(00:00:00\): numerics point [0-9a-f]{12}, cpu's [0-9a-f]{12} \(run 1\): a declared difference$" "$T/s8.out" \
  || fail "1: gemm.splitk counted as bit parity: $(grep '^gemm.splitk' "$T/s8.out")"
grep -q '^overall: not reached: 1 of 2 point(s) reached bit parity, 1 more at declared parity only$' "$T/s8.out" || fail "1: overall"
[ "$(jq_ "$T/s8.json" '$.points[1].parity')" = declared ] || fail "1: json parity"
[ "$(jq_ "$T/s8.json" '$.points[1].reached')" = 0 ] || fail "1: json reached"
# day 3, 20:00: the port declares split_k 4 again (cpu's point): bit parity
# then, 1 day 12 hours after its first campaign (day 2, 08:00) = 129600 s
sed -i 's/^params = { split_k = 8 }$/params = { split_k = 4 }/' "$T/r1/cpu-split8/common/KERNEL_FAMILIES.toml"
camp 2026-06-03T20:00:00Z "$L" "$T/r1" cpu-split8 --families gemm || fail "1: cpu-split8 day 3"
"$PARITY" ttbp --class cpu-split8 --ledger "$L" --json "$T/s8b.json" > "$T/s8b.out" 2>&1 || fail "1: day 3: exit $? ($(cat "$T/s8b.out"))"
grep -Eq '^gemm.splitk +2026-06-03T20:00:00Z +3 1d 12:00:00 +bits +held$' "$T/s8b.out" || fail "1: day 3 splitk: $(grep '^gemm.splitk' "$T/s8b.out")"
grep -Eq '^  gemm.splitk: by run 3 at 2026-06-03T20:00:00Z: numerics point [0-9a-f]{12}, was [0-9a-f]{12}; the parity reached at run 2 no longer counts$' "$T/s8b.out" \
  || fail "1: the hash change is not an event: $(grep -A2 '^numerics changed' "$T/s8b.out")"
grep -q '^overall: all 2 point(s) reached bit parity by run 3 at 2026-06-03T20:00:00Z: TTBP 1d 12:00:00$' "$T/s8b.out" || fail "1: day 3 overall"
[ "$(jq_ "$T/s8b.json" '$.overall.ttbp_s')" = 129600 ] || fail "1: json ttbp_s"
# --reference names the target: held to itself-less cpu2, which never ran: nothing reached
"$PARITY" ttbp --class cpu-split8 --reference cpu2 --ledger "$L" > "$T/ref.out" 2>&1
[ $? -eq 1 ] || fail "1: --reference cpu2 (no records): want exit 1"
grep -q "reference cpu2 has no record of gemm.seq at this shape and inputs" "$T/ref.out" || fail "1: --reference: $(cat "$T/ref.out")"

# ---- 2. toy shapes do not count for a model; model.M not run ------------------
L=$T/l2.sqlite
camp 2026-06-01T00:00:00Z "$L" "$KERNELS" cpu --model llama3-8b --families gemm,rmsnorm || fail "2: small"
"$PARITY" ttbp --class cpu --model llama3-8b --kernels "$KERNELS" --ledger "$L" > "$T/m1.out" 2>&1
[ $? -eq 1 ] || fail "2: toy shapes counted for the model: $(cat "$T/m1.out")"
grep -q '^shapes that count: model:llama3-8b (.*); left out: 8 record(s) at other shapes (small)$' "$T/m1.out" \
  || fail "2: shapes: $(grep '^shapes' "$T/m1.out")"
grep -Eq '^gemm.splitk +not yet +- +- +not run +not run at shapes model:llama3-8b$' "$T/m1.out" || fail "2: splitk not run"
grep -Eq '^model.llama3-8b +not yet +- +- +not run +not run: no `parity model --ledger` run of llama3-8b on class cpu is recorded$' "$T/m1.out" \
  || fail "2: model point: $(grep '^model' "$T/m1.out")"
camp 2026-06-02T00:00:00Z "$L" "$KERNELS" cpu --shapes model:llama3-8b --families gemm,rmsnorm || fail "2: model shapes: $(cat "$T/camp.out")"
grep -q '^  gemm.splitk  *M=1,N=448,K=4096  *gate_up at C=1: M=1,N=28672,K=4096, capped N 28672 -> 448 ' "$T/camp.out" \
  || fail "2: the cap is not declared: $(grep gate_up "$T/camp.out" | head -2)"
[ "$(sqlite3 "$L" "SELECT shape FROM point WHERE run_id = 2 AND id = 'rmsnorm.plain'")" = 'T=1,H=4096; T=16,H=4096; T=128,H=4096' ] \
  || fail "2: the ledger does not record the shapes"
"$PARITY" ttbp --class cpu --model llama3-8b --kernels "$KERNELS" --ledger "$L" > "$T/m2.out" 2>&1
grep -Eq '^gemm.splitk +2026-06-02T00:00:00Z +2 1d 00:00:00 +bits +held$' "$T/m2.out" || fail "2: splitk at model shapes: $(grep '^gemm.splitk' "$T/m2.out")"
grep -q '^overall: not reached: 4 of 7 point(s) reached bit parity$' "$T/m2.out" || fail "2: overall: $(grep '^overall' "$T/m2.out")"
"$PARITY" ttbp --class cpu --model llama3-8b --any-shapes --kernels "$KERNELS" --ledger "$L" > "$T/m3.out" 2>&1
grep -Eq '^gemm.splitk +2026-06-01T00:00:00Z +1 00:00:00 +bits' "$T/m3.out" || fail "2: --any-shapes counts the toy run"

# ---- 3. zero-day: a class edited without new points is class work -----------
cp -r "$KERNELS" "$T/r3"
L=$T/l3.sqlite
# day 1: cpu runs; cpu2 runs an hour later with a port bug of its own
# manifest (gemm.splitk at split_k 8: declared parity only, not bit parity)
mkdir -p "$T/r3/cpu2/common"
printf '[[family]]\nid = "gemm"\n\n[[family.point]]\nid = "splitk"\nparams = { split_k = 8 }\n' \
  > "$T/r3/cpu2/common/KERNEL_FAMILIES.toml"
camp 2026-06-01T00:00:00Z "$L" "$T/r3" cpu --model llama3-8b --families gemm || fail "3: cpu"
camp 2026-06-01T01:00:00Z "$L" "$T/r3" cpu2 --model llama3-8b --families gemm || fail "3: day 1: $(cat "$T/camp.out")"
# day 2, 12:00: the same file fixed (split_k 4, no new point): bit parity,
# 1 day 11 hours after cpu2's first campaign, after class work
sed -i 's/split_k = 8/split_k = 4/' "$T/r3/cpu2/common/KERNEL_FAMILIES.toml"
camp 2026-06-02T12:00:00Z "$L" "$T/r3" cpu2 --model llama3-8b --families gemm || fail "3: day 2"
"$PARITY" ttbp --model llama3-8b --zero-day --class cpu2 --all-points --any-shapes --ledger "$L" > "$T/z.out" 2>&1
[ $? -eq 1 ] || fail "3: zero-day after class work: want exit 1 ($(cat "$T/z.out"))"
grep -q '^  cpu2 *not zero-day: bit parity by run 3 at 2026-06-02T12:00:00Z (TTBP 1d 11:00:00), after class work: run 3: class files changed since run 2: cpu2/common/KERNEL_FAMILIES.toml changed$' "$T/z.out" \
  || fail "3: class work not named: $(cat "$T/z.out")"

# ---- 4. a promotion that gains a check --------------------------------------
cp -r "$KERNELS" "$T/pa"
python3 - "$T/pa/cpu/common/KERNEL_FAMILIES.toml" <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
s = s.replace('[[family.param]]\nname = "split_k"', '[[family.param]]\nname = "legacy_kernel"\nkind = "runtime"\n\n[[family.param]]\nname = "split_k"', 1)
i = s.index('[[family.point]]\nid = "splitk_threads"')
add = ('[[family.point]]\nid = "splitk_copy"\nhow = "copy"\nreason = "a copy of splitk waiting to be folded in"\n'
       'kernel = "cpu_gemm_splitk"\nparams = { split_k = 4, legacy_kernel = "" }\n[family.point.numerics.k]\n'
       'acc = "fp32"\ntree = "split({split_k}, stride({vec}, seq, pairwise), seq)"\nout = "fp32"\n\n')
open(p, 'w').write(s[:i] + add + s[i:])
PY
# a rule sends lm_head to the copy point, for every model: two users or more
printf '[[rule]]\nfamily = "gemm"\nop = "lm_head"\npoint = "splitk_copy"\n\n' | cat - "$T/pa/cpu/common/FUSIONS.toml" > "$T/fu"
cp "$T/fu" "$T/pa/cpu/common/FUSIONS.toml"
cp -r "$T/pa" "$T/pb"
python3 - "$T/pb/cpu/common/KERNEL_FAMILIES.toml" <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
old = 'id = "splitk_copy"\nhow = "copy"\nreason = "a copy of splitk waiting to be folded in"\nkernel = "cpu_gemm_splitk"\nparams = { split_k = 4, legacy_kernel = "" }'
assert old in s
open(p, 'w').write(s.replace(old, 'id = "splitk_copy"\nhow = "instantiation"\nkernel = "cpu_gemm_splitk"\nparams = { split_k = 4 }', 1))
PY
"$PARITY" registry lint --kernels "$T/pa" > "$T/lint" 2>&1 || fail "4: the before registry does not lint: $(cat "$T/lint")"
"$PARITY" gate --class cpu --quiet --no-bench --families gemm --before "$T/pa" --after "$T/pb" --json "$T/g4.json" > "$T/g4.out" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "4: a promotion that gains a check: exit $rc, want 0 ($(cat "$T/g4.out"))"
grep -Eq '^gemm.splitk_copy +pass \(kernel changed, check gained\)$' "$T/g4.out" || fail "4: point line: $(grep '^gemm.splitk_copy' "$T/g4.out")"
grep -q '^    gained: tier1 new_legacy: skip -> ok ' "$T/g4.out" || fail "4: the gained check is not said"
grep -q 'gate changed' "$T/g4.out" && fail "4: a gained check reported as a change: $(grep 'gate changed' "$T/g4.out")"
grep -q '^Promoted into the LKB: gemm / splitk_copy / kernel cpu_gemm_splitk / numerics point [0-9a-f]\{12\} / users .* / residual removed: copy gemm.splitk_copy$' "$T/g4.out" \
  || fail "4: promotion line: $(grep '^Promoted' "$T/g4.out")"
grep -q '^LKB residual delta: -1 entries, +0 lines, -1 copy points, ' "$T/g4.out" || fail "4: residual line: $(grep '^LKB' "$T/g4.out")"
[ "$(tail -1 "$T/g4.out")" = "gate: PASS" ] || fail "4: last line: $(tail -1 "$T/g4.out")"
[ "$(jq_ "$T/g4.json" '$.points[2].checks_gained')" = 1 ] || fail "4: json checks_gained"
"$PARITY" gate --class cpu --quiet --no-bench --families rmsnorm --before "$T/pa" --after "$T/pa" > "$T/g4b.out" 2>&1 || fail "4: identical"
grep -q '^Promoted into the LKB: no promotion$' "$T/g4b.out" || fail "4: no promotion not said"

# ---- 5. a kernel slower only at a real shape, on a loaded machine ------------
R=$T/r5
mkdir -p "$R/models"
cp -r "$B/kernels/ext-gemm" "$R/" && cp -r "$KERNELS/models/llama3-8b" "$R/models/"
printf '[[device]]\nsku = "host"\nclass = "ext-gemm"\nname = "the host CPU"\n' > "$R/DEVICES.toml"
sed -i "s|dlopen = \"libext_gemm.so\"|dlopen = \"$LIB\"|" "$R/ext-gemm/HARDWARE.toml"
sed -i 's/^kernels = \["ext_gemm_seq", "ext_gemm_seq_legacy"\]$/kernels = ["ext_gemm_seq", "ext_gemm_seq_legacy", "ext_gemm_seq_slow", "ext_gemm_seq_slow_legacy"]/' \
  "$R/ext-gemm/common/KERNEL_FAMILIES.toml"
printf '[[rule]]\nfamily = "gemm"\npoint = "seq"\n' > "$R/ext-gemm/common/FUSIONS.toml"
printf '\n[rates]\nmemory_gbs = 3.08\nvector_tflops = 0.0168\n' >> "$R/ext-gemm/HARDWARE.toml"
cp -r "$R" "$T/r5s"
sed -i 's/^kernel = "ext_gemm_seq"$/kernel = "ext_gemm_seq_slow"/' "$T/r5s/ext-gemm/common/KERNEL_FAMILIES.toml"
cmp -s "$R/ext-gemm/common/KERNEL_FAMILIES.toml" "$T/r5s/ext-gemm/common/KERNEL_FAMILIES.toml" && fail "5: the kernel was not swapped"
( while :; do :; done ) & B1=$!
( while :; do :; done ) & B2=$!
"$PARITY" gate --class ext-gemm --quiet --bench-shapes preset --before "$R" --after "$T/r5s" > "$T/g5a.out" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "5: at the small preset's shape the slower kernel is not slower: exit $rc, want 0 ($(cat "$T/g5a.out"))"
grep -Eq '^    time: time ratio after/before [0-9.]+ \[[0-9.]+, [0-9.]+\] .*timed at M=4,N=24,K=200 \(the small preset.s shape\)$' "$T/g5a.out" \
  || fail "5: the time ratio is not printed for a passing point: $(grep -A6 '^gemm.seq' "$T/g5a.out")"
"$PARITY" gate --class ext-gemm --quiet --before "$R" --after "$T/r5s" --json "$T/g5.json" > "$T/g5.out" 2>&1
rc=$?
kill $B1 $B2; wait $B1 $B2 2> /dev/null; B1=
[ $rc -eq 1 ] || fail "5: slower at the model's shape: exit $rc, want 1 ($(cat "$T/g5.out"))"
grep -Eq '^gemm.seq +FAIL$' "$T/g5.out" || fail "5: gemm.seq not named"
grep -Eq '^    slower: time ratio after/before [0-9.]+ \[[0-9.]+, [0-9.]+\] .*timed at M=1,N=[0-9]+,K=4096 \(qkv_proj at C=1: M=1,N=6144,K=4096, capped ' "$T/g5.out" \
  || fail "5: the slower line: $(grep -A6 '^gemm.seq' "$T/g5.out")"
grep -q 'false-alarm rate at most 1% for the whole gate' "$T/g5.out" || fail "5: the false-alarm rate is not stated"
[ -n "$(jq_ "$T/g5.json" '$.points[0].time_ratio_lo')" ] || fail "5: json interval"

[ $fails -eq 0 ] && echo "cli_parity_target: all passed"
exit $((fails != 0))
