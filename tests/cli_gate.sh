#!/bin/sh
# cli_gate.sh PARITY KERNELS: `parity gate` on copies of the sample registry:
# an identical promotion passes; a changed split count fails naming the
# point; a change of output bits is named by run; a kernel id changed with
# identical bits passes and says so; an added point is new, a dropped one
# fails; bad input is exit 2.  Run times are compared as the gate always
# does (interleaved pairs, a stated false-alarm rate): identical registries
# must pass on this shared machine, and once more with two busy processes
# the test starts.
set -u
PARITY=$1
KERNELS=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
mf() { echo "$T/$1/cpu/common/KERNEL_FAMILIES.toml"; }
gate_t() { "$PARITY" gate --class cpu --quiet "$@"; }
# the runs that test bits and gates leave the timing out, for speed
gate() { gate_t --no-bench "$@"; }
for d in A same split bits kernel added; do cp -r "$KERNELS" "$T/$d"; done

# an identical promotion passes, every point compared
gate_t --before "$T/A" --after "$T/same" --json "$T/same.json" > "$T/o1" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "identical registries: exit $rc, want 0 ($(cat "$T/o1"))"
npts=$("$PARITY" registry list --kernels "$KERNELS" --class cpu 2> /dev/null | grep -cE '^ *[a-z_0-9]+\.[a-z_0-9]+')
grep -q "^$npts point(s) compared: $npts passed, 0 failed" "$T/o1" || fail "identical: not $npts points passed: $(tail -4 "$T/o1")"
grep -q '^gate: PASS$' "$T/o1" || fail "identical: no PASS line"
grep -q 'microbenchmarks: each compared point.s kernels of both sides timed alternately' "$T/o1" \
  || fail "the timing method is not said"
grep -q 'false-alarm rate at most 1% for the whole gate' "$T/o1" || fail "the false-alarm rate is not said"
# identical registries on a loaded machine: still no slower point (not
# under AddressSanitizer, scripts/test --sanitize: there the timing is the
# sanitizer's, and the default build runs it)
if ldd "$PARITY" 2>/dev/null | grep -q libasan; then
  echo "cli_gate: an AddressSanitizer build: the loaded-machine timing is left to the default build"
else
  ( while :; do :; done ) & B1=$!
  ( while :; do :; done ) & B2=$!
  gate_t --before "$T/A" --after "$T/same" > "$T/o1b" 2>&1
  rc=$?
  kill $B1 $B2; wait $B1 $B2 2> /dev/null
  [ $rc -eq 0 ] || fail "identical registries, loaded machine: exit $rc, want 0 ($(grep '^    slower: ' "$T/o1b"))"
  grep -q '^    slower: ' "$T/o1b" && fail "identical registries, loaded machine: a point called slower"
fi
if command -v sqlite3 > /dev/null; then
  [ "$(sqlite3 :memory: "SELECT json_extract(readfile('$T/same.json'), '\$.pass')")" = 1 ] || fail "json pass"
fi

# a changed split count fails, naming the point
sed -i '0,/params = { split_k = 4 }/s//params = { split_k = 2 }/' "$(mf split)"
cmp -s "$(mf A)" "$(mf split)" && fail "the split count was not changed"
gate --before "$T/A" --after "$T/split" --families gemm > "$T/o2" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "changed split count: exit $rc, want 1"
grep -Eq '^gemm.splitk +FAIL$' "$T/o2" || fail "gemm.splitk is not named as failing: $(cat "$T/o2")"
grep -q '^    gate changed: point hash ' "$T/o2" || fail "the hash change is not said"
[ "$(grep -cE '^[a-z_0-9.]+ +FAIL$' "$T/o2")" = 1 ] || fail "other points fail too: $(grep FAIL "$T/o2")"

# other output bits (fp32 output, split 2): named per run
sed -i '0,/params = { split_k = 4 }/s//params = { split_k = 2, out = "fp32" }/' "$(mf bits)"
gate --before "$T/A" --after "$T/bits" --families gemm > "$T/o3" 2>&1
[ $? -eq 1 ] || fail "changed bits: want exit 1"
grep -q "^    outputs not byte-identical: run graphed-0: output 'y'" "$T/o3" || fail "differing outputs not named: $(cat "$T/o3")"

# only a kernel id changes (gemm.seq runs on cpu_gemm_reversed, which
# realises the same seq tree; no legacy kernel on either side): passes, said
sed -i 's/^kernel = "cpu_gemm_seq"$/kernel = "cpu_gemm_reversed"\nparams = { legacy_kernel = "" }/' "$(mf kernel)"
sed -i '0,/^name = "split_k"$/s//name = "legacy_kernel"\nkind = "runtime"\n\n[[family.param]]\nname = "split_k"/' "$(mf kernel)"
"$PARITY" registry lint --kernels "$T/kernel" > /dev/null 2>&1 || fail "the kernel-change registry does not lint"
gate --before "$T/A" --after "$T/kernel" --families gemm > "$T/o4" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "kernel id change with identical bits: exit $rc, want 0 ($(cat "$T/o4"))"
grep -Eq '^gemm.seq +pass \(kernel changed\)$' "$T/o4" || fail "kernel change not on gemm.seq's line"
grep -q '^    kernel changed: cpu_gemm_seq -> cpu_gemm_reversed (outputs byte-identical, gates unchanged)$' "$T/o4" \
  || fail "the kernel change is not said: $(cat "$T/o4")"
grep -q 'kernel changed at 1; checks gained at 0$' "$T/o4" || fail "kernel change count"

# a point added is new, not compared; dropped, it fails
printf '\n[[family.point]]\nid = "cr2"\nkernel = "cpu_silu_and_mul"\n[family.point.elementwise]\nsilu = "cr"\n' >> "$(mf added)"
gate --before "$T/A" --after "$T/added" --families silu_and_mul > "$T/o5" 2>&1
[ $? -eq 0 ] || fail "added point: want exit 0 ($(cat "$T/o5"))"
grep -Eq '^silu_and_mul.cr2 +new \(not compared\)$' "$T/o5" || fail "new point not listed: $(cat "$T/o5")"
gate --before "$T/added" --after "$T/A" --families silu_and_mul > "$T/o6" 2>&1
[ $? -eq 1 ] || fail "removed point: want exit 1"
grep -Eq '^silu_and_mul.cr2 +REMOVED' "$T/o6" || fail "removed point not listed"

# two git revisions of a repository: the registry at each, exported
if command -v git > /dev/null; then
  mkdir "$T/repo" && cp -r "$KERNELS" "$T/repo/kernels"
  g() { git -C "$T/repo" -c user.email=t@t -c user.name=t "$@"; }
  g init -q && g add kernels && g commit -qm before || fail "git repo"
  sed -i '0,/params = { split_k = 4 }/s//params = { split_k = 2 }/' "$T/repo/kernels/cpu/common/KERNEL_FAMILIES.toml"
  g commit -qam after || fail "git commit"
  (cd "$T/repo" && gate --before HEAD~1 --after HEAD --families gemm) > "$T/o7" 2>&1
  [ $? -eq 1 ] || fail "git revisions with a changed split: want exit 1 ($(cat "$T/o7"))"
  grep -Eq '^gemm.splitk +FAIL$' "$T/o7" || fail "git revisions: gemm.splitk not named"
  grep -q '^parity gate: class cpu, before HEAD~1, after HEAD,' "$T/o7" || fail "the revisions are not named"
  (cd "$T/repo" && gate --before HEAD~1 --after "$T/A" --families gemm) > "$T/o8" 2>&1
  [ $? -eq 0 ] || fail "a revision against a directory of the same registry: want 0 ($(cat "$T/o8"))"
  (cd "$T/repo" && gate --before nosuchrev --after HEAD) > /dev/null 2> "$T/e"
  [ $? -eq 2 ] || fail "unknown revision: want 2"
  grep -q "'nosuchrev' is neither a directory nor a git revision" "$T/e" || fail "unknown revision not named"
  (cd "$T/repo" && gate --before HEAD --after HEAD --registry-path nosuch) > /dev/null 2> "$T/e"
  [ $? -eq 2 ] || fail "a revision without the registry path: want 2"
  grep -q "has no 'nosuch' to export" "$T/e" || fail "missing registry path not named: $(cat "$T/e")"
fi

# usage and input errors
"$PARITY" gate --help | grep -q '^usage: parity gate' || fail "--help"
gate --before "$T/A" --class cpu > /dev/null 2>&1; [ $? -eq 2 ] || fail "no --after: want 2"
gate --before "$T/nosuch" --after "$T/A" > /dev/null 2> "$T/e"; [ $? -eq 2 ] || fail "missing dir: want 2"
grep -q -- "--before: '$T/nosuch' is neither a directory nor a git revision" "$T/e" || fail "missing dir not named: $(cat "$T/e")"
"$PARITY" gate --before "$T/A" --after "$T/A" --class nosuch > /dev/null 2> "$T/e"; [ $? -eq 2 ] || fail "unknown class: want 2"
gate_t --before "$T/A" --after "$T/A" --slack x > /dev/null 2> "$T/e"; [ $? -eq 2 ] || fail "bad --slack: want 2"
grep -q -- '--slack' "$T/e" || fail "bad --slack not named"
gate_t --before "$T/A" --after "$T/A" --false-alarm 1 > /dev/null 2> "$T/e"; [ $? -eq 2 ] || fail "--false-alarm 1: want 2"
gate_t --before "$T/A" --after "$T/A" --pairs 5 > /dev/null 2> "$T/e"; [ $? -eq 2 ] || fail "--pairs 5: want 2"
# a gate that ends in exit 2 writes no --json (it wrote it, then said 2):
# no point of the family, neither a new file nor over an existing one
gate --before "$T/A" --after "$T/A" --families nosuchfamily --json "$T/e2.json" > /dev/null 2> "$T/e"
[ $? -eq 2 ] || fail "--families matching nothing: want 2"
grep -q -- "--families: no point of class cpu belongs to 'nosuchfamily'" "$T/e" || fail "--families nothing: $(cat "$T/e")"
[ ! -e "$T/e2.json" ] || fail "--families matching nothing: --json was written on exit 2"
echo old > "$T/e3.json"
gate --before "$T/A" --after "$T/A" --families nosuchfamily --json "$T/e3.json" > /dev/null 2>&1
[ "$(cat "$T/e3.json")" = old ] || fail "--families matching nothing: an existing --json was replaced on exit 2"

# --traces is locked like campaign's: another run holding DIR/.parity.lock
# (flock(1), its pid written there) makes the gate exit 2 naming it
if command -v flock > /dev/null; then
  mkdir "$T/tr"
  flock "$T/tr/.parity.lock" sh -c 'echo $PPID > "$1"; echo $PPID > "$2"; shift 2; "$@"' _ \
    "$T/tr/.parity.lock" "$T/holder" "$PARITY" gate --class cpu --quiet --before "$T/A" --after "$T/A" \
    --families rmsnorm --traces "$T/tr" > "$T/lo" 2> "$T/le"
  rc=$?
  [ $rc -eq 2 ] || fail "a locked gate --traces: exit $rc, want 2 ($(cat "$T/le"))"
  grep -qF "parity gate: --traces $T/tr is being written by another run (pid $(cat "$T/holder"), holding $T/tr/.parity.lock)" "$T/le" \
    || fail "a locked gate --traces: message '$(cat "$T/le")'"
  [ -z "$(ls "$T/tr")" ] || fail "a locked gate --traces: written: $(ls "$T/tr")"
  gate --before "$T/A" --after "$T/A" --families rmsnorm --traces "$T/tr" > "$T/lo" 2>&1 \
    || fail "an unlocked gate --traces: exit $? ($(cat "$T/lo"))"
  [ -d "$T/tr/before" ] && [ -d "$T/tr/after" ] || fail "an unlocked gate --traces: no before/after folders"
else
  echo "cli_gate: flock(1) not found: the --traces lock is not tested"
fi

# an after side that `registry lint` refuses: exit 2 naming it, no --json
cp -r "$KERNELS" "$T/lint"
sed -i 's/^params = { split_k = 4 }$/params = { split_k = 4, bogus_param = 3 }/' "$(mf lint)"
gate --before "$T/A" --after "$T/lint" --json "$T/lint.json" > /dev/null 2> "$T/e"
[ $? -eq 2 ] || fail "gate with a lint error after: want 2"
[ -e "$T/lint.json" ] && fail "gate refused for lint wrote its --json"
grep -q -- "--after $T/lint fails lint: 1 error; the first: .*error: param 'bogus_param'" "$T/e" || fail "gate lint refusal: $(cat "$T/e")"
gate --before "$T/A" --after "$T/lint" --allow-lint-errors > "$T/o" 2> /dev/null
grep -q "^registry lint: --after $T/lint fails lint" "$T/o" || fail "gate --allow-lint-errors does not say so"

# Without --class the gate finds the classes the change touches: the cpu
# template's split count hard-coded to 4 leaves cpu's view unchanged (its
# split_k is 4) but changes cpu-split8's, whose kernel runs 8: gated there,
# it fails; --class cpu alone passes, which is why every class is found.
cp -r "$KERNELS" "$T/hard4"
sed -i '0,/tree = "split({split_k}, stride({vec}, seq, pairwise), seq)"/s//tree = "split(4, stride({vec}, seq, pairwise), seq)"/' "$(mf hard4)"
gate --before "$T/A" --after "$T/hard4" --class cpu > /dev/null 2>&1
[ $? -eq 0 ] || fail "hard-coded split(4): --class cpu should pass (the view of cpu is unchanged)"
"$PARITY" gate --quiet --no-bench --before "$T/A" --after "$T/hard4" --json "$T/touch.json" > "$T/touch" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "hard-coded split(4), every touched class: exit $rc, want 1"
grep -q '^classes the change touches: 1$' "$T/touch" || fail "touched classes: $(head -3 "$T/touch")"
grep -q '^  cpu-split8: gemm.splitk: numerics hash [0-9a-f]* -> [0-9a-f]*$' "$T/touch" || fail "cpu-split8 not named with why"
grep -q '^parity gate: class cpu-split8,' "$T/touch" || fail "cpu-split8 not gated"
grep -q '^parity gate: class cpu,' "$T/touch" && fail "an untouched class was gated"
grep -q '^gate over 1 touched class(es): FAIL$' "$T/touch" || fail "no overall verdict"
grep -q '"why": "gemm.splitk: numerics hash' "$T/touch.json" || fail "json: the class's why"
# identical registries touch no class and pass
"$PARITY" gate --quiet --no-bench --before "$T/A" --after "$T/same" > "$T/touch0" 2>&1
[ $? -eq 0 ] || fail "identical registries, every touched class: want 0"
grep -q '^classes the change touches: 0$' "$T/touch0" || fail "identical registries touch a class"

# A touched class this machine cannot run (an sm* class without a GPU) is
# not gated, and the gate does not pass on it: a numerics change there
# fails without running anything (the hash is known from the registry); a
# change that keeps the hash (sm80's copy point splitk8 instantiated from
# the template) is not verified, exit 1, never PASS.
cp -r "$KERNELS" "$T/sm80num" && cp -r "$KERNELS" "$T/sm80inst"
sed -i '0,/params = { split_k = 4 }/s//params = { split_k = 6 }/' "$T/sm80num/sm80/common/KERNEL_FAMILIES.toml"
python3 - "$T/sm80inst/sm80/common/KERNEL_FAMILIES.toml" <<'PY'
import re, sys
p = sys.argv[1]
s = open(p).read()
t = re.sub(r'how = "copy"\nreason = "[^"]*"\nkernel = "gemm_bf16_tc_splitk8_legacy"',
           'how = "instantiation"\nkernel = "gemm_bf16_tc_splitk"', s)
assert t != s
open(p, "w").write(t)
PY
"$PARITY" gate --quiet --no-bench --before "$T/A" --after "$T/sm80num" --json "$T/sm80num.json" > "$T/g80" 2>&1
rc=$?
if grep -q '^class sm80: not gated here' "$T/g80"; then
  [ $rc -eq 1 ] || fail "sm80 split_k 4 -> 6, not gated here: exit $rc, want 1 ($(tail -1 "$T/g80"))"
  grep -q '^class sm80: not gated here: .*; FAIL without running: gemm.splitk: numerics hash [0-9a-f]* -> [0-9a-f]*$' "$T/g80" \
    || fail "sm80 numerics change: not failed without running: $(grep '^class sm80' "$T/g80")"
  grep -q '^gate over 3 touched class(es): FAIL$' "$T/g80" || fail "sm80 numerics change: $(tail -1 "$T/g80")"
  grep -q '"fails": "gemm.splitk: numerics hash' "$T/sm80num.json" || fail "sm80 numerics change: json fails"
  "$PARITY" gate --quiet --no-bench --before "$T/A" --after "$T/sm80inst" --json "$T/sm80inst.json" > "$T/g80i" 2>&1
  rc=$?
  [ $rc -eq 1 ] || fail "sm80 promotion, not gated here: exit $rc, want 1 ($(tail -1 "$T/g80i"))"
  grep -q '^class sm80: not gated here: .*; not verified$' "$T/g80i" || fail "sm80 promotion: $(grep '^class sm80' "$T/g80i")"
  grep -q '^gate over 2 touched class(es): NOT VERIFIED: 2 could not be gated here' "$T/g80i" \
    || fail "sm80 promotion: verdict $(tail -1 "$T/g80i")"
  grep -q '"verified": false' "$T/sm80inst.json" || fail "sm80 promotion: json verified"
  grep -q '"pass": true' "$T/sm80inst.json" && fail "sm80 promotion: json pass"
else
  echo "cli_gate: sm80 runs here; the not-gated cases are left to a machine without a GPU"
fi

# a kernel swapped for one that splits by the thread count: byte-identical
# on the gate's default inputs at 2 threads, but the power checks (one
# thread, fp32) see split(1, ...) where split(4, ...) is declared
cp -r "$KERNELS" "$T/thr"
python3 - "$(mf thr)" <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
old = 'id = "splitk"\nhow = "instantiation"\nkernel = "cpu_gemm_splitk"\n'
assert old in s
open(p, 'w').write(s.replace(old, 'id = "splitk"\nhow = "instantiation"\nkernel = "cpu_gemm_splitk_threads"\n', 1))
PY
gate --before "$T/A" --after "$T/thr" --families gemm > "$T/thr.out" 2>&1
[ $? -eq 1 ] || fail "a kernel that splits by the thread count passes the gate"
grep -q "gate changed: tier2: ok -> FAIL (after: FAIL: power: gemm.splitk: .*k: the kernel reduces split(1, stride(8, seq, pairwise), seq), the point declares split(4, stride(8, seq, pairwise), seq)" "$T/thr.out" \
  || fail "the thread-split kernel not named by the power checks: $(grep -A3 '^gemm.splitk ' "$T/thr.out")"

# a gate stopped by SIGTERM removes its temporary folders and dies of the signal
mkdir -p "$T/gtmp"
TMPDIR="$T/gtmp" "$PARITY" gate --class cpu --quiet --before "$T/A" --after "$T/same" > /dev/null 2> "$T/gsig.err" &
gp=$!
i=0
while [ -z "$(ls "$T/gtmp")" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -n "$(ls "$T/gtmp")" ] || fail "the gate made no temporary folder to clean"
kill -TERM $gp
wait $gp
rc=$?
[ $rc -eq 143 ] || fail "gate on SIGTERM: exit $rc, want 143 (killed by the signal)"
[ -z "$(ls "$T/gtmp")" ] || fail "gate on SIGTERM left its temporary folders: $(ls "$T/gtmp")"

[ $fails -eq 0 ] && echo "cli_gate: all passed"
exit $((fails != 0))
