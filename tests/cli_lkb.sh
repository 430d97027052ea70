#!/bin/sh
# cli_lkb.sh PARITY KERNELS: `parity lkb`, `parity bench` and the LKB lint
# (docs/lkb.md) on registries built here to known answers.  Every expected
# number is worked out by hand below from the rates, shapes and records
# of the test registry, never taken from parity's output.
set -u
PARITY=$1
KERNELS=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
command -v sqlite3 > /dev/null || { echo "needs the sqlite3 shell (Debian package sqlite3)"; exit 1; }
q() { sqlite3 -batch -noheader "$1" "$2"; }
jq_() { sqlite3 -batch -noheader :memory: "SELECT json_extract(readfile('$1'), '$2')"; }
# |json value - expected| < 1e-12, the expected value an SQL expression
near() { # FILE PATH EXPR WHAT
  r=$(sqlite3 -batch -noheader :memory: "SELECT abs(json_extract(readfile('$1'), '$2') - ($3)) < 1e-12")
  [ "$r" = 1 ] || fail "$4: $2 = $(jq_ "$1" "$2"), want $3"
}

# ---- registry R: class x (and y, its child), rates 1 GB/s and 1 GFLOP/s
R=$T/r
mkdir -p "$R/x/common/k1" "$R/x/m1" "$R/y" "$R/models/toy"
cat > "$R/x/HARDWARE.toml" <<'EOF'
class = "x"
[rates]
memory_gbs = 1
vector_tflops = 0.001
EOF
cat > "$R/y/HARDWARE.toml" <<'EOF'
class = "y"
parent = "x"
EOF
# f: memory-bound, points a (instantiation) and b (branch: a policy variant);
# g: cuda_core, points c (a copy) and d (on bundle bx, which only x realises)
cat > "$R/x/common/KERNEL_FAMILIES.toml" <<'EOF'
[[bundle]]
id = "bx"
mma = "none: fp32 FMA"
operands = "plain loads"
schedule = "one thread per row"
accumulator = "registers"
classes = ["x"]

[[bundle]]
id = "bxy"
mma = "none: fp32 FMA"
operands = "plain loads"
schedule = "one thread per row"
accumulator = "registers"
classes = ["x", "y"]

[[family]]
id = "f"
shape = ["T"]
reductions = ["k"]
compute = { unit = "memory" }
kernels = ["ka", "kb"]

[[family.point]]
id = "a"
kernel = "ka"
bundle = "bxy"
[family.point.numerics.k]
tree = "seq"

[[family.point]]
id = "b"
how = "branch"
kernel = "kb"
[family.point.numerics.k]
tree = "seq"

[[family.evidence]]
class = "x"
point = "a"
rows = [1]
measurement = "m-a-1"

[[family]]
id = "g"
shape = ["M"]
reductions = ["k"]
compute = { unit = "cuda_core" }
kernels = ["kc", "kd"]

[[family.point]]
id = "c"
how = "copy"
reason = "copied before the template had a parameter for it"
kernel = "kc"
[family.point.numerics.k]
tree = "seq"

[[family.point]]
id = "d"
kernel = "kd"
bundle = "bx"
[family.point.numerics.k]
tree = "seq"
EOF
cat > "$R/x/common/FUSIONS.toml" <<'EOF'
[[rule]]
family = "f"
op = "n2"
point = "b"

[[rule]]
family = "f"
point = "a"

[[rule]]
family = "g"
op = "m1"
point = "c"

[[rule]]
family = "g"
rows = [1, 16]
point = "d"
EOF
# per layer (2 layers): n1 1000 T bytes; n2 3000 T bytes; m1 max(4000 M flops,
# 1000 M bytes); m2 max(2000 M flops, 1000 bytes); per step: z 2000 T bytes
cat > "$R/models/toy/STEP.toml" <<'EOF'
model = "toy"
layers = 2

[[op]]
id = "n1"
family = "f"
shape = "T=C"
flops = "0"
bytes = "1000*T"

[[op]]
id = "n2"
family = "f"
shape = "T=C"
flops = "0"
bytes = "3000*T"

[[op]]
id = "m1"
family = "g"
shape = "M=C"
flops = "4000*M"
bytes = "1000*M"

[[op]]
id = "m2"
family = "g"
shape = "M=C"
flops = "2000*M"
bytes = "min(1000, 5000*M)"

[[op]]
id = "z"
per = "step"
shape = "T=C"
flops = "0"
bytes = "2000*T"
EOF
# records: f.a at 1 row (shape T=1, 5e-6 s: its weight at C1 is measured),
# f.a at 16 rows on another shape (in the envelope, not a weight), and the
# TTPV story: A does not beat its baseline (max 5e-6 >= baseline min 4e-6),
# B does by speed (1e-5 < 2e-5) and by energy (0.5 J < 0.7 J)
cat > "$R/x/MEASUREMENTS.toml" <<'EOF'
[[measurement]]
id = "m-a-1"
point = "f.a"
rows = 1
shape = "T=1"
utc = "2026-01-01T00:00:00Z"
median_s = 5e-6
min_s = 4.5e-6
max_s = 5e-6
baseline = "legacy kernel ka_legacy"
baseline_median_s = 6e-6
baseline_min_s = 4e-6
baseline_max_s = 7e-6

[[measurement]]
id = "m-a-16"
point = "f.a"
rows = 16
shape = "T=99"
utc = "2026-01-02T06:00:00Z"
median_s = 9e-6
min_s = 8e-6
max_s = 1e-5
baseline = "legacy kernel ka_legacy"
baseline_median_s = 3e-5
baseline_min_s = 2e-5
baseline_max_s = 4e-5
energy = "rapl: test"
energy_j = 0.4
energy_min_j = 0.3
energy_max_j = 0.5
baseline_energy_j = 0.8
baseline_energy_min_j = 0.7
baseline_energy_max_j = 0.9
EOF
# residual of x: k1 (KERNEL.toml: why, two users, a [shadow] of f.a) holds
# a.cu (3 lines) and b.cuh (2 lines, no final newline); m1/model.cu (4
# lines) has no KERNEL.toml but is listed in FORKS.md; the copy point g.c
printf 'int a;\nint b;\nint c;\n' > "$R/x/common/k1/a.cu"
printf 'int d;\nint e;' > "$R/x/common/k1/b.cuh"
cat > "$R/x/common/k1/KERNEL.toml" <<'EOF'
id = "k1"
why = "the template cannot express it yet"
users = ["x", "y"]
[shadow]
point = "f.a"
why = "same numerics, other loads"
EOF
printf '1\n2\n3\n4\n' > "$R/x/m1/model.cu"
printf '# forks\n\n- `x/m1/model.cu`: the toy model kernel\n- `x:g.c`: the copy\n' > "$R/FORKS.md"

P=$PARITY
"$P" registry lint "$R" > "$T/lint" 2>&1 || fail "lint of the test registry: $(cat "$T/lint")"
"$P" lkb --class x --model toy --kernels "$R" --json "$T/x.json" --ledger "$T/none.sqlite" > "$T/x.out" 2> "$T/x.err" \
  || fail "lkb x: $(cat "$T/x.err")"
# C1: n1 measured 2 x 5e-6; n2 2 x 3e-6 (policy); m1 2 x 4e-6 (copy); m2 2 x 2e-6
# (shared, no record); z 2e-6 (novel): total 30e-6
near "$T/x.json" '$.c1.step_s' '30e-6' "C1 step"
near "$T/x.json" '$.c1.shared' '10.0/30' "C1 shared"
near "$T/x.json" '$.c1.shared_unmeasured' '4.0/30' "C1 shared-unmeasured"
near "$T/x.json" '$.c1.parameterisation' '8.0/30' "C1 parameterisation"
near "$T/x.json" '$.c1.policy_variant' '6.0/30' "C1 policy"
near "$T/x.json" '$.c1.novel' '2.0/30' "C1 novel"
near "$T/x.json" '$.c1.coverage' '20.0/30' "C1 coverage"
near "$T/x.json" '$.c1.coverage_measured' '10.0/30' "C1 measured coverage"
[ "$(jq_ "$T/x.json" '$.c1.weights_measured')" = 1 ] || fail "C1: one op weighed by its record"
# C16: no weight measured (the 16-row record is of another shape): n1 32,
# n2 96, m1 128, m2 64, z 32 (1e-6 s): total 352
near "$T/x.json" '$.c16.step_s' '352e-6' "C16 step"
near "$T/x.json" '$.c16.coverage' '192.0/352' "C16 coverage"
near "$T/x.json" '$.c16.coverage_measured' '32.0/352' "C16 measured coverage (f.a has a 16-row record)"
near "$T/x.json" '$.c16.shared' '32.0/352' "C16 shared"
near "$T/x.json" '$.c16.shared_unmeasured' '64.0/352' "C16 shared-unmeasured"
# C128: no rule covers m2 above 16 rows: n1 256, n2 768, m1 1024, m2 512, z 256
near "$T/x.json" '$.c128.step_s' '2816e-6' "C128 step"
near "$T/x.json" '$.c128.coverage' '1024.0/2816' "C128 coverage"
near "$T/x.json" '$.c128.shared_unmeasured' '768.0/2816' "C128 shared-unmeasured"
near "$T/x.json" '$.c128.parameterisation' '1024.0/2816' "C128 parameterisation"
[ "$(jq_ "$T/x.json" '$.c128.ops[3].no_rule')" = 1 ] || fail "m2 at C128 is not 'no rule of this class covers it'"
near "$T/x.json" '$.coverage_c16' '192.0/352' "ledger field coverage_c16"
grep -q '^  Shared 33.33% (measured on this class), shared-unmeasured 13.33%, parameterisation 26.67%, policy variant 20.00%, novel 6.67% of the step$' \
  "$T/x.out" || fail "the seed's coverage line at C1: $(grep Shared "$T/x.out" | head -1)"
grep -q 'no rule of this class covers it' "$T/x.out" || fail "no-rule op not said"
# the envelope: f.a at rows 1 and 16
[ "$(jq_ "$T/x.json" '$.envelope.f.a')" = '[1,16]' ] || fail "envelope: $(jq_ "$T/x.json" '$.envelope')"
[ "$(jq_ "$T/x.json" '$.envelope.g')" = '' ] || fail "g has no record, so no envelope"
grep -q '^  f: a rows 1, 16$' "$T/x.out" || fail "envelope line: $(grep -A2 envelope "$T/x.out")"
# the residual: 3 sources (3 + 2 + 4 = 9 lines), 1 shadow, 1 copy point
[ "$(jq_ "$T/x.json" '$.residual_count')" = 5 ] || fail "residual_count $(jq_ "$T/x.json" '$.residual_count'), want 5"
[ "$(jq_ "$T/x.json" '$.residual_loc')" = 9 ] || fail "residual_loc $(jq_ "$T/x.json" '$.residual_loc'), want 9"
[ "$(jq_ "$T/x.json" '$.residual_copy_points')" = 1 ] || fail "residual_copy_points"
[ "$(jq_ "$T/x.json" '$.residual_single_class')" = 1 ] || fail "residual_single_class"
[ "$(jq_ "$T/x.json" '$.single_class[0].point')" = g.d ] || fail "the single-class point is g.d"
grep -q '^  source x/m1/model.cu (m1, 4 lines): why: none given; measurement: none; listed in FORKS.md; users: x/m1$' "$T/x.out" \
  || fail "per-model source line: $(grep model.cu "$T/x.out")"
# promotion candidates: the two sources and the shadow of k1 (KERNEL.toml
# users x, y), and the copy point g.c, which the rules of x and of y (its
# child) both route toy's op m1 to: users x/toy and y/toy, derived from data
[ "$(jq_ "$T/x.json" '$.promotion_candidates')" = '["f.a","x/common/k1/a.cu","x/common/k1/b.cuh","g.c"]' ] \
  || fail "promotion candidates: $(jq_ "$T/x.json" '$.promotion_candidates')"
grep -q '^  g.c (users: x/toy, y/toy)$' "$T/x.out" || fail "g.c's derived users: $(grep 'g.c (users' "$T/x.out")"
# hand-written users must name classes or models of the registry, each
# once.  users_lint DIR USERS WANT: k1's users set to USERS in a copy DIR
# must be a lint error whose line says WANT.
users_lint() {
  cp -r "$R" "$T/$1"
  sed -i "s/^users = .*/users = $2/" "$T/$1/x/common/k1/KERNEL.toml"
  grep -qF "users = $2" "$T/$1/x/common/k1/KERNEL.toml" || fail "planting users = $2"
  "$P" registry lint "$T/$1" > "$T/$1.out" 2>&1
  [ $? -eq 2 ] || fail "users = $2 is not a lint error"
  grep -q "k1/KERNEL.toml:[0-9]*: error: users: $3" "$T/$1.out" || fail "users = $2: $(grep 'users:' "$T/$1.out")"
}
users_lint ul '["qwen9", "x", "y"]' "'qwen9' is no class"
# a name twice is one user: a lint error, and no second user for rule 1
users_lint u2 '["x", "x"]' "'x' is named twice"
"$P" lkb --class x --kernels "$T/u2" --allow-lint-errors --json "$T/u2.json" > "$T/u2.txt" 2>&1
[ "$(jq_ "$T/u2.json" '$.promotion_candidates')" = '["f.a","g.c"]' ] \
  || fail "a repeated user made a promotion candidate: $(jq_ "$T/u2.json" '$.promotion_candidates')"
grep -q '^  source x/common/k1/a.cu (class, [0-9]* lines): .*; users: x (KERNEL.toml)$' "$T/u2.txt" \
  || fail "one user is not printed: $(grep 'k1/a.cu' "$T/u2.txt")"
# the class y: bundle bx is x's alone, so nothing single-class on y; its own residual is the inherited copy point
"$P" lkb --class y --kernels "$R" --json "$T/y.json" > /dev/null 2>&1 || fail "lkb y"
[ "$(jq_ "$T/y.json" '$.residual_single_class')" = 0 ] || fail "y: single-class"
[ "$(jq_ "$T/y.json" '$.residual_count')" = 1 ] || fail "y: the residual is the copy point only"
[ "$(jq_ "$T/y.json" '$.residual[0].in_forks')" = 1 ] || fail "y: the copy inherited from x is listed as x:g.c"
[ "$(jq_ "$T/y.json" '$.c1')" = '' ] || fail "without --model there is no coverage"

# TTPV: t0 is the first record (no ledger): B beat at 2026-01-02T06:00:00Z, 1d 06:00:00 later
[ "$(jq_ "$T/x.json" '$.ttpv[0].speed_s')" = 108000 ] || fail "TTPV-speed $(jq_ "$T/x.json" '$.ttpv[0].speed_s'), want 108000"
[ "$(jq_ "$T/x.json" '$.ttpv[0].energy_s')" = 108000 ] || fail "TTPV-energy"
grep -q '^  f.a: speed 1d 06:00:00 (record m-a-16 at 2026-01-02T06:00:00Z); energy 1d 06:00:00 (record m-a-16' "$T/x.out" \
  || fail "TTPV line: $(grep 'f.a: speed' "$T/x.out")"
# with a ledger whose first campaign of x is a day earlier, t0 moves: 2d 06:00:00
L=$T/t0.sqlite
# (the runs a ledger of the current schema holds, its version said: lkb --ledger refuses other databases)
q "$L" "CREATE TABLE run(class TEXT, complete INTEGER, started_s INTEGER, started_utc TEXT);
        INSERT INTO run VALUES ('x', 1, 1767139200, '2025-12-31T00:00:00Z'), ('x', 0, 1, '1970-01-01T00:00:01Z');
        PRAGMA user_version = 5"
"$P" lkb --class x --kernels "$R" --ledger "$L" --json "$T/t0.json" > /dev/null 2>&1 || fail "lkb with a ledger"
[ "$(jq_ "$T/t0.json" '$.ttpv[0].speed_s')" = 194400 ] || fail "TTPV since the first campaign: $(jq_ "$T/t0.json" '$.ttpv[0].speed_s'), want 194400"
# a winning record before the class's first campaign: TTPV 0, said so, never negative
L2=$T/late.sqlite
q "$L2" "CREATE TABLE run(class TEXT, complete INTEGER, started_s INTEGER, started_utc TEXT);
        INSERT INTO run VALUES ('x', 1, 1767571200, '2026-01-05T00:00:00Z'); PRAGMA user_version = 5"
"$P" lkb --class x --kernels "$R" --ledger "$L2" --json "$T/late.json" > "$T/late.out" 2>&1 || fail "lkb with a later ledger"
[ "$(jq_ "$T/late.json" '$.ttpv[0].speed_s')" = 0 ] || fail "TTPV before t0: $(jq_ "$T/late.json" '$.ttpv[0].speed_s'), want 0"
[ "$(jq_ "$T/late.json" '$.ttpv[0].speed_before_t0')" = 1 ] || fail "TTPV before t0 not flagged"
grep -q "f.a: speed 00:00:00 (record m-a-16 at 2026-01-02T06:00:00Z, before the class's first campaign: TTPV 0)" "$T/late.out" \
  || fail "TTPV before t0 line: $(grep 'f.a: speed' "$T/late.out")"
grep -q -- "-[0-9]*:[0-9]*:[0-9]*\|speed -" "$T/late.out" && fail "a negative time printed"
# no energy reading at all: said, never guessed
sed -i '/^energy/d; /_energy_/d' "$R/x/MEASUREMENTS.toml"
"$P" lkb --class x --kernels "$R" --json - > "$T/ne.json" 2>&1 || fail "lkb without energy"
[ "$(jq_ "$T/ne.json" '$.ttpv[0].energy')" = "not measured: no energy counter readable here" ] || fail "energy not said unmeasured"

# parameterization yield: before, g.d was a copy and x had a 10-line source more
B=$T/before
cp -r "$R" "$B"
sed -i 's/^id = "d"$/id = "d"\nhow = "copy"\nreason = "an old copy"/' "$B/x/common/KERNEL_FAMILIES.toml"
printf '1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n' > "$B/x/common/k1/old.cu"
"$P" lkb --class x --kernels "$R" --before "$B" --json "$T/yl.json" > "$T/yl.out" 2>&1 || fail "lkb --before: $(cat "$T/yl.out")"
[ "$(jq_ "$T/yl.json" '$.yield.residual_lines_deleted')" = 10 ] || fail "yield lines: $(jq_ "$T/yl.json" '$.yield')"
[ "$(jq_ "$T/yl.json" '$.yield.points')" = "g.d (was a copy)" ] || fail "yield points: $(jq_ "$T/yl.json" '$.yield.points')"
[ "$(jq_ "$T/yl.json" '$.yield.families_promoted')" = 0 ] || fail "yield families"
# g.d replaced a copy with the same numerics point, and the rules of x and y
# route toy's m2 to it: two users, a promotion.  A brand-new point is none.
A2=$T/after2
cp -r "$R" "$A2"
printf '\n[[family.point]]\nid = "e"\nkernel = "kd"\n[family.point.numerics.k]\ntree = "seq"\n' >> "$A2/x/common/KERNEL_FAMILIES.toml"
"$P" lkb --class x --kernels "$A2" --before "$B" --json "$T/yn.json" > "$T/yn.out" 2>&1 || fail "lkb --before (new point): $(cat "$T/yn.out")"
[ "$(jq_ "$T/yn.json" '$.yield.points')" = "g.d (was a copy)" ] || fail "a new point counted as promoted: $(jq_ "$T/yn.json" '$.yield.points')"
[ "$(jq_ "$T/yn.json" '$.yield.not_promotions')" = "g.e (new: nothing of the residual went)" ] \
  || fail "the new point not said: $(jq_ "$T/yn.json" '$.yield.not_promotions')"
# the copy replaced where only class x's rules reach it: one user, no promotion
B1=$T/before1
cp -r "$B" "$B1"
cp -r "$R" "$T/after1"
sed -i '/^rows = \[1, 16\]$/d' "$T/after1/x/common/FUSIONS.toml"
mkdir -p "$T/after1/y/common"
printf '[[rule]]\nfamily = "g"\npoint = "c"\n' > "$T/after1/y/common/FUSIONS.toml"
"$P" lkb --class x --kernels "$T/after1" --before "$B1" --json "$T/y1.json" > "$T/y1.out" 2>&1 || fail "lkb --before (one user): $(cat "$T/y1.out")"
[ "$(jq_ "$T/y1.json" '$.yield.points_promoted')" = 0 ] || fail "a single-user point counted as promoted: $(jq_ "$T/y1.json" '$.yield')"
[ "$(jq_ "$T/y1.json" '$.yield.not_promotions')" = "g.d (was a copy; 1 user: rule 1 needs two)" ] \
  || fail "the single user not said: $(jq_ "$T/y1.json" '$.yield.not_promotions')"

# the same from a git revision: the registry committed, then its old source deleted
if command -v git > /dev/null; then
  G=$T/g
  mkdir -p "$G" && cp -r "$B" "$G/kernels"
  (cd "$G" && git init -q && git add kernels && git -c user.email=t@t -c user.name=t commit -qm before) \
    || fail "git setup"
  rm "$G/kernels/x/common/k1/old.cu"
  sed -i '/^how = "copy"$/{N;/an old copy/d}' "$G/kernels/x/common/KERNEL_FAMILIES.toml"
  (cd "$G" && "$P" lkb --class x --before HEAD --json "$T/yg.json") > "$T/yg.out" 2>&1 || fail "lkb --before HEAD: $(cat "$T/yg.out")"
  [ "$(jq_ "$T/yg.json" '$.yield.residual_lines_deleted')" = 10 ] || fail "yield from a revision: $(jq_ "$T/yg.json" '$.yield')"
  [ "$(jq_ "$T/yg.json" '$.yield.before')" = "HEAD (git revision)" ] || fail "the revision is not named"
  grep -q '^parameterization yield since HEAD (git revision): 10 residual line(s) deleted (19 -> 9)' "$T/yg.out" \
    || fail "yield line: $(grep yield "$T/yg.out")"
fi

# ---- the lint: silent residual, evidence without a record, bundles
S=$T/silent
cp -r "$R" "$S"
printf 'x\n' > "$S/x/common/silent.c"
"$P" registry lint "$S" > "$T/s.out" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "a silent residual entry: lint exit $rc, want 2"
grep -q "^$S/x/common/silent.c: error: silent residual of class x: source x/common/silent.c has no reason (KERNEL.toml 'why'), no measurement, and is not listed in $S/FORKS.md$" \
  "$T/s.out" || fail "silent residual message: $(cat "$T/s.out")"
"$P" lkb --lint --kernels "$S" > "$T/s2.out" 2>&1
[ $? -eq 2 ] || fail "lkb --lint does not reject the silent entry"
# listed in FORKS.md: no longer silent
printf -- '- `x/common/silent.c`\n' >> "$S/FORKS.md"
"$P" registry lint "$S" > "$T/s3.out" 2>&1 || fail "a source listed in FORKS.md is not silent: $(cat "$T/s3.out")"
# a [shadow] without why, measurement or listing
printf 'id = "k2"\n[shadow]\npoint = "f.b"\n' > "$S/x/common/KERNEL.toml"
"$P" registry lint "$S" > "$T/s4.out" 2>&1
grep -q 'error: silent residual of class x: \[shadow\] f.b has no reason' "$T/s4.out" || fail "silent shadow: $(cat "$T/s4.out")"
E=$T/ev
cp -r "$R" "$E"
sed -i 's/measurement = "m-a-1"/measurement = "m-none"/' "$E/x/common/KERNEL_FAMILIES.toml"
"$P" registry lint "$E" > "$T/e.out" 2>&1
[ $? -eq 2 ] || fail "evidence naming no record: lint passes"
grep -q "KERNEL_FAMILIES.toml:[0-9]*: error: evidence measurement 'm-none' does not exist (no \[\[measurement\]\] with this id in $E/x/MEASUREMENTS.toml)" \
  "$T/e.out" || fail "evidence message: $(cat "$T/e.out")"
sed -i 's/measurement = "m-none"/measurement = "m-a-1"/; s/rows = \[1\]/rows = [1, 2]/' "$E/x/common/KERNEL_FAMILIES.toml"
"$P" registry lint "$E" > "$T/e2.out" 2>&1
grep -q "error: evidence of f.a at class x claims rows 2, which no record of the point at that class measured" "$T/e2.out" \
  || fail "evidence claiming unmeasured rows: $(cat "$T/e2.out")"
D=$T/dup
cp -r "$R" "$D"
sed -i 's/^id = "bxy"$/id = "bx"/; s/bundle = "bxy"/bundle = "nope"/' "$D/x/common/KERNEL_FAMILIES.toml"
"$P" registry lint "$D" > "$T/d.out" 2>&1
grep -q "error: bundle 'bx' declared twice" "$T/d.out" || fail "bundle declared twice: $(cat "$T/d.out")"
grep -q "error: point f.a names bundle 'nope', which no \[\[bundle\]\] declares" "$T/d.out" || fail "unknown bundle"
printf '[rates]\nmemory_gb = 3\n' >> "$D/y/HARDWARE.toml"
"$P" registry lint "$D" > "$T/d2.out" 2>&1
grep -q "y/HARDWARE.toml:[0-9]*: error: unknown key 'memory_gb' in \[rates\]" "$T/d2.out" || fail "rates key: $(cat "$T/d2.out")"
# bad input: a missing model, a rule naming an unknown point, usage
"$P" lkb --class x --model nope --kernels "$R" > /dev/null 2> "$T/m.err"
[ $? -eq 2 ] || fail "a missing step manifest is not exit 2"
grep -q "models/nope/STEP.toml" "$T/m.err" || fail "missing step message: $(cat "$T/m.err")"
sed -i 's/point = "d"/point = "zz"/' "$D/x/common/FUSIONS.toml"
"$P" lkb --class x --model toy --kernels "$D" > /dev/null 2> "$T/r.err"
[ $? -eq 2 ] || fail "a rule naming an unknown point is not exit 2"
grep -q "FUSIONS.toml:[0-9]*: \(error: \)\?rule names point 'g.zz', which class x does not have" "$T/r.err" || fail "rule message: $(cat "$T/r.err")"
"$P" lkb > /dev/null 2>&1
[ $? -eq 2 ] || fail "lkb without --class is not exit 2"
"$P" lkb --help | grep -q '^usage: parity lkb' || fail "lkb --help"
"$P" bench --help | grep -q '^usage: parity bench' || fail "bench --help"

# ---- parity bench on the cpu class writes a record (small shapes, 2 repeats)
K=$T/k
cp -r "$KERNELS" "$K"
before=$(grep -c '^\[\[measurement\]\]' "$K/cpu/MEASUREMENTS.toml")
PARITY_LEDGER_CLOCK=2026-02-01T00:00:00Z "$P" bench --class cpu --point gemm.splitk --rows 2 3 --shapes small \
  --repeats 2 --warmup 0 --kernels "$K" --ledger "$T/b.sqlite" > "$T/b.out" 2> "$T/b.err" || fail "bench: $(cat "$T/b.err")"
after=$(grep -c '^\[\[measurement\]\]' "$K/cpu/MEASUREMENTS.toml")
[ "$after" -eq $((before + 2)) ] || fail "bench wrote $((after - before)) records, want 2"
grep -q '^id = "cpu.gemm.splitk.r2.20260201T000000Z"$' "$K/cpu/MEASUREMENTS.toml" || fail "record id"
grep -q '^shape = "M=2,N=24,K=200"$' "$K/cpu/MEASUREMENTS.toml" || fail "record shape (the preset's, M set to 2)"
grep -q '^baseline = "legacy kernel cpu_gemm_splitk_legacy"$' "$K/cpu/MEASUREMENTS.toml" || fail "record baseline"
grep -q '^repeats = 2$' "$K/cpu/MEASUREMENTS.toml" || fail "record repeats"
[ "$(q "$T/b.sqlite" "SELECT count(*), min(rows), max(rows), min(repeats) FROM measurement WHERE class = 'cpu'")" = "2|2|3|2" ] \
  || fail "ledger measurement rows: $(q "$T/b.sqlite" 'SELECT * FROM measurement')"
grep -q "^  energy: not measured: no energy counter readable here$\|^  energy (rapl" "$T/b.out" || fail "energy line: $(cat "$T/b.out")"
# ledger merge carries the records, by id: twice changes nothing
"$P" ledger merge --out "$T/m.sqlite" "$T/b.sqlite" > "$T/m.out" 2>&1 || fail "ledger merge: $(cat "$T/m.out")"
grep -q '2 measurement(s) added, 0 already present' "$T/m.out" || fail "merge count: $(cat "$T/m.out")"
"$P" ledger merge --out "$T/m.sqlite" "$T/b.sqlite" > "$T/m.out" 2>&1 || fail "ledger merge again: $(cat "$T/m.out")"
grep -q '0 measurement(s) added, 2 already present' "$T/m.out" || fail "merge again count: $(cat "$T/m.out")"
[ "$(q "$T/m.sqlite" "SELECT group_concat(id || ':' || rows || ':' || repeats, ' ') FROM (SELECT * FROM measurement ORDER BY id)")" \
  = "cpu.gemm.splitk.r2.20260201T000000Z:2:2 cpu.gemm.splitk.r3.20260201T000000Z:3:2" ] \
  || fail "merged measurement rows: $(q "$T/m.sqlite" 'SELECT id, rows, repeats FROM measurement')"
"$P" registry lint "$K" > /dev/null 2>&1 || fail "the registry with new records does not lint clean"
"$P" lkb --class cpu --kernels "$K" --json "$T/k.json" > /dev/null 2>&1 || fail "lkb cpu"
[ "$(jq_ "$T/k.json" '$.envelope.gemm.splitk')" = '[1,2,3,16]' ] || fail "the new rows join the envelope: $(jq_ "$T/k.json" '$.envelope.gemm')"
# a record id taken in the same second gets a suffix
PARITY_LEDGER_CLOCK=2026-02-01T00:00:00Z "$P" bench --class cpu --point gemm.splitk --rows 2 --shapes small \
  --repeats 2 --warmup 0 --kernels "$K" --no-ledger > /dev/null 2>&1 || fail "bench again"
grep -q '^id = "cpu.gemm.splitk.r2.20260201T000000Z-2"$' "$K/cpu/MEASUREMENTS.toml" || fail "second id not suffixed"
# four bench runs at once on one registry: each record kept (a lock around
# the read-append-rename of MEASUREMENTS.toml), the file still lints clean
n0=$(grep -c '^\[\[measurement\]\]' "$K/cpu/MEASUREMENTS.toml")
for r in 1 2 3 4; do
  PARITY_LEDGER_CLOCK=2026-02-0${r}T00:00:00Z "$P" bench --class cpu --point gemm.splitk --rows $r --shapes small \
    --repeats 2 --warmup 0 --kernels "$K" --no-ledger > /dev/null 2> "$T/bc$r.err" &
done
wait
for r in 1 2 3 4; do [ -s "$T/bc$r.err" ] && grep -q -i error "$T/bc$r.err" && fail "concurrent bench $r: $(cat "$T/bc$r.err")"; done
n1=$(grep -c '^\[\[measurement\]\]' "$K/cpu/MEASUREMENTS.toml")
[ "$n1" -eq $((n0 + 4)) ] || fail "concurrent bench runs kept $((n1 - n0)) of 4 records"
"$P" registry lint "$K" > /dev/null 2>&1 || fail "MEASUREMENTS.toml after concurrent bench runs does not lint clean"
"$P" bench --class cpu --point gemm.nope --rows 2 --shapes small --kernels "$K" --no-ledger > /dev/null 2> "$T/bn.err"
[ $? -eq 2 ] || fail "bench of an unknown point is not exit 2"
grep -q "family 'gemm' has no point 'nope' at class 'cpu'" "$T/bn.err" || fail "bench unknown point: $(cat "$T/bn.err")"
grep -q '^bench: ' "$T/bn.err" && fail "bench unknown point: a progress line before the error"
"$P" bench --class cpu --point gemm.splitk --rows 0 --kernels "$K" > /dev/null 2>&1
[ $? -eq 2 ] || fail "bench --rows 0 is not exit 2"
# the baseline as another class runs the point; --no-record writes nothing
cp "$K/cpu/MEASUREMENTS.toml" "$T/m.before"
"$P" bench --class cpu --point gemm.splitk --rows 1 --shape M=1,N=8,K=64 --baseline-class cpu-split8 --repeats 2 \
  --kernels "$K" --no-record > "$T/bc.out" 2>&1 || fail "bench --baseline-class: $(cat "$T/bc.out")"
grep -q '^  baseline class cpu-split8 (kernel cpu_gemm_splitk): median' "$T/bc.out" || fail "baseline class line: $(cat "$T/bc.out")"
cmp -s "$T/m.before" "$K/cpu/MEASUREMENTS.toml" || fail "--no-record wrote a record"
# a class whose backend cannot run here: exit 2, said
if ! "$P" bench --class sm90 --point gemm.splitk --rows 1 --kernels "$K" --no-ledger > /dev/null 2> "$T/g.err"; then
  grep -q "^parity bench: --class sm90: the cuda backend cannot run here" "$T/g.err" || fail "no GPU message: $(cat "$T/g.err")"
fi

# ---- the ledger fields after a campaign, and the residual delta line
C=$T/c
cp -r "$KERNELS" "$C"
mkdir -p "$C/cpu/common/extra"
printf 'why = "a test source"\n' > "$C/cpu/common/extra/KERNEL.toml"
printf 'a\nb\nc\nd\ne\n' > "$C/cpu/common/extra/k.c"
CL=$T/c.sqlite
camp() { "$P" campaign --class cpu --kernels "$C" --families rmsnorm --ledger "$CL" --quiet "$@" > "$T/c.out" 2>&1; }
camp --model llama3-8b || fail "campaign 1: $(cat "$T/c.out")"
r=$(q "$CL" "SELECT residual_count, residual_loc, residual_copy_points, residual_single_class,
             coverage_c1 IS NOT NULL, coverage_c16_measured IS NOT NULL, coverage_c128 IS NOT NULL FROM run")
[ "$r" = "1|5|0|0|1|1|1" ] || fail "ledger fields after a campaign: '$r', want 1|5|0|0|1|1|1"
grep -q '^LKB residual delta: none to compare (the first recorded residual of the class: now 1 entries, 5 lines, 0 copy points, 0 single-class)$' \
  "$T/c.out" || fail "first residual line: $(grep residual "$T/c.out")"
printf 'a\nb\n' > "$C/cpu/common/extra/k.c"
camp || fail "campaign 2"
grep -q '^LKB residual delta: +0 entries, -3 lines, +0 copy points, +0 single-class (since run 1: now 1 entries, 2 lines, 0 copy points, 0 single-class)$' \
  "$T/c.out" || fail "residual delta line: $(grep residual "$T/c.out")"
[ "$(q "$CL" "SELECT coverage_c1 IS NULL, residual_loc FROM run WHERE id = 2")" = "1|2" ] \
  || fail "a campaign without --model records no coverage"
# an old (schema 1) ledger opens, migrated, its runs kept with NULL fields:
# schema 1 made from this ledger by dropping what migration 2 added
O=$T/old.sqlite
cp "$CL" "$O"
q "$O" "ALTER TABLE run DROP COLUMN residual_count; ALTER TABLE run DROP COLUMN residual_loc;
        ALTER TABLE run DROP COLUMN residual_copy_points; ALTER TABLE run DROP COLUMN residual_single_class;
        ALTER TABLE run DROP COLUMN coverage_c1; ALTER TABLE run DROP COLUMN coverage_c16;
        ALTER TABLE run DROP COLUMN coverage_c128; ALTER TABLE run DROP COLUMN coverage_c1_measured;
        ALTER TABLE run DROP COLUMN coverage_c16_measured; ALTER TABLE run DROP COLUMN coverage_c128_measured;
        ALTER TABLE run DROP COLUMN residual_entries; ALTER TABLE run DROP COLUMN source; ALTER TABLE run DROP COLUMN device;
        ALTER TABLE run DROP COLUMN chain; ALTER TABLE run DROP COLUMN reference; ALTER TABLE run DROP COLUMN class_files;
        ALTER TABLE point DROP COLUMN out_digest; ALTER TABLE point DROP COLUMN in_digest;
        DROP TABLE measurement; DELETE FROM schema_migration WHERE version >= 2; PRAGMA user_version = 1" \
  || fail "making a schema 1 ledger"
# A reader reads it (migrated in a copy in memory) and leaves it at schema 1;
# a campaign appending to it migrates it.
"$P" ledger runs --ledger "$O" > "$T/o.out" 2>&1 || fail "an old ledger does not open: $(cat "$T/o.out")"
grep -c complete "$T/o.out" | grep -qx 2 || fail "ledger runs on an old ledger: $(cat "$T/o.out")"
[ "$(q "$O" 'PRAGMA user_version')" = 1 ] || fail "ledger runs migrated the old ledger (a reader writes nothing)"
"$P" campaign --class cpu --kernels "$KERNELS" --families rmsnorm --ledger "$O" -q > "$T/o2.out" 2>&1 \
  || fail "a campaign on an old ledger: $(cat "$T/o2.out")"
[ "$(q "$O" 'PRAGMA user_version')" = 5 ] || fail "the old ledger is not migrated by a campaign"
[ "$(q "$O" 'SELECT count(*), count(residual_count) FROM run')" = "3|1" ] || fail "old runs: $(q "$O" 'SELECT count(*), count(residual_count) FROM run')"

# ---- energy from RAPL, on a stand-in for /sys/class/powercap -------------
# package domain intel-rapl:0 is read; its sub-domain intel-rapl:0:0 and a
# non-RAPL zone are not.  A counter that stands still gives 0 J per run.
PC=$T/powercap
mkdir -p "$PC/intel-rapl:0" "$PC/intel-rapl:0:0" "$PC/dtpm:0"
echo 5000000 > "$PC/intel-rapl:0/energy_uj"
echo 262143328850 > "$PC/intel-rapl:0/max_energy_range_uj"
echo 777 > "$PC/intel-rapl:0:0/energy_uj"
echo 999 > "$PC/dtpm:0/energy_uj"
KE=$T/ke
cp -r "$KERNELS" "$KE"
benche() {
  PARITY_POWERCAP=$PC "$P" bench --class cpu --point rmsnorm.plain --rows 2 --shapes small --repeats 3 --warmup 0 \
    --kernels "$KE" --ledger "$T/e.sqlite" > "$T/e.out" 2> "$T/e.err"
}
benche || fail "bench with RAPL: $(cat "$T/e.err")"
grep -q "^  energy (rapl: 1 package domain(s) of $PC): median 0 J per run" "$T/e.out" \
  || fail "a still RAPL counter: $(grep energy "$T/e.out")"
[ "$(q "$T/e.sqlite" "SELECT energy_j, energy_min_j, energy_max_j, energy_source FROM measurement")" = \
  "0.0|0.0|0.0|rapl: 1 package domain(s) of $PC" ] || fail "RAPL record: $(q "$T/e.sqlite" 'SELECT energy_j, energy_source FROM measurement')"

[ $fails -eq 0 ] && echo "cli_lkb: all passed"
exit $((fails > 0))
