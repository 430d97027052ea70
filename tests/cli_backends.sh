#!/bin/sh
# cli_backends.sh PARITY LIBEXT KERNELS BACKENDS: out-of-tree class
# backends from the outside (docs/backends.md).  A class ext-gemm whose
# kernel is the library LIBEXT (tests/backends/ext_gemm.c) passes, holds
# bit parity with cpu, and fails on each planted bug; a served backend that
# misbehaves (hangs, dies, garbage, another id, a bad output file) is that
# point's error (exit 3), never a hang, a crash or a pass, with the other
# point still run and nothing left behind; a malformed backend key is
# refused naming the file and line.
set -u
PARITY=$1
LIB=$2
KERNELS=$3
B=$4
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# A registry: cpu, the library's class, and a hostile served class.
R=$T/kernels
mkdir -p "$R"
cp -r "$KERNELS/cpu" "$R/"
printf '[[device]]\nsku = "host"\nclass = "cpu"\nname = "the host CPU"\n' > "$R/DEVICES.toml"
cp -r "$B/kernels/ext-gemm" "$R/"
sed -i "s|dlopen = \"libext_gemm.so\"|dlopen = \"$LIB\"|" "$R/ext-gemm/HARDWARE.toml"
"$PARITY" registry lint --kernels "$R" > "$T/lint" 2>&1 || { fail "lint of the test registry"; cat "$T/lint"; }

# ---- the library, in a child (the default) -----------------------------
"$PARITY" campaign --class ext-gemm --kernels "$R" --no-ledger > "$T/out" 2> "$T/err"
rc=$?
[ $rc -eq 0 ] || { fail "ext-gemm campaign: exit $rc, want 0"; cat "$T/out" "$T/err"; }
grep -q '^gemm.seq  *ok  *ok  *ok  *ok  *bits' "$T/out" || { fail "ext-gemm: gemm.seq not ok at every check"; cat "$T/out"; }
grep -q 'class ext-gemm, backend ext-gemm' "$T/out" || fail "ext-gemm: the backend's own name is not said"
grep -q 'gemm.seq  *ok: [0-9]* distinguished' "$T/out" || fail "ext-gemm: power did not run"

"$PARITY" campaign --class ext-gemm --kernels "$R" --no-ledger --against cpu > "$T/out" 2>&1
grep -q 'bit parity between ext-gemm and cpu at gemm.seq: yes' "$T/out" || { fail "--against cpu: no bit parity"; cat "$T/out"; }

# planted bugs: red (exit 1 naming the point and what the kernel does instead)
for p in reverse nofma legacy; do
  EXT_GEMM_PLANT=$p "$PARITY" campaign --class ext-gemm --kernels "$R" --no-ledger > "$T/out" 2>&1
  rc=$?
  [ $rc -eq 1 ] || { fail "plant $p: exit $rc, want 1"; cat "$T/out"; }
  grep -q '^gemm.seq .*FAIL' "$T/out" || fail "plant $p: gemm.seq not failed"
done
EXT_GEMM_PLANT=reverse "$PARITY" campaign --class ext-gemm --kernels "$R" --no-ledger 2>&1 |
  grep -q 'k: the kernel reduces reverse(seq), the point declares seq' || fail "plant reverse: the order not named"
EXT_GEMM_PLANT=nofma "$PARITY" campaign --class ext-gemm --kernels "$R" --no-ledger 2>&1 |
  grep -q 'neighbour k: fma = false' || fail "plant nofma: fma = false not named"
EXT_GEMM_PLANT=legacy "$PARITY" campaign --class ext-gemm --kernels "$R" --no-ledger 2>&1 |
  grep -q 'gemm.seq new_legacy: FAIL' || fail "plant legacy: new vs legacy did not fail"

# a kernel whose runs differ: a determinism failure (red) unless the backend
# declares it nondeterministic on purpose, which the report then says
EXT_GEMM_PLANT=flaky "$PARITY" campaign --class ext-gemm --kernels "$R" --no-ledger > "$T/out" 2>&1
rc=$?
[ $rc -eq 1 ] || { fail "flaky kernel: exit $rc, want 1"; cat "$T/out"; }
grep -q '^gemm.seq .*FAIL' "$T/out" || { fail "flaky kernel: gemm.seq did not fail"; cat "$T/out"; }
EXT_GEMM_PLANT=flaky EXT_GEMM_NONDET=1 "$PARITY" campaign --class ext-gemm --kernels "$R" --no-ledger \
  --json "$T/nd.json" > "$T/out" 2>&1
rc=$?
[ $rc -eq 0 ] || { fail "declared nondeterministic: exit $rc, want 0"; cat "$T/out"; }
grep -q "declares kernel 'ext_gemm_seq' nondeterministic on purpose (the repeated runs" "$T/nd.json" ||
  { fail "declared nondeterministic: not said"; cat "$T/out"; }

# the ledger, ttbp and the gate work on the class unchanged: a failing day,
# then a passing one two days later, is a TTBP of 2 days
L=$T/ledger.sqlite
PARITY_LEDGER_CLOCK=2026-12-01T00:00:00Z EXT_GEMM_PLANT=reverse "$PARITY" campaign --class ext-gemm --kernels "$R" \
  --ledger "$L" > /dev/null 2>&1
PARITY_LEDGER_CLOCK=2026-12-03T00:00:00Z "$PARITY" campaign --class ext-gemm --kernels "$R" --ledger "$L" > /dev/null 2>&1
"$PARITY" ttbp --class ext-gemm --ledger "$L" > "$T/out" 2>&1
grep -q 'all 1 point(s) reached bit parity by run 2 at 2026-12-03T00:00:00Z: TTBP 2d 00:00:00' "$T/out" ||
  { fail "ttbp of ext-gemm"; cat "$T/out"; }
cp -r "$R" "$T/after"
sed -i 's/one fused multiply-add chain over K per output/one fma chain per output (reworded)/' \
  "$T/after/ext-gemm/common/KERNEL_FAMILIES.toml"
"$PARITY" gate --before "$R" --after "$T/after" --class ext-gemm > "$T/out" 2>&1 || { fail "gate on ext-gemm: exit $?"; cat "$T/out"; }
grep -q 'gate: PASS' "$T/out" || fail "gate on ext-gemm: no PASS"
# after: the same library with a bug planted, served through `parity backend host`
sed -i "s|^backend = .*|backend = { serve = \"EXT_GEMM_PLANT=reverse exec $PARITY backend host $LIB\" }|" \
  "$T/after/ext-gemm/HARDWARE.toml"
"$PARITY" gate --before "$R" --after "$T/after" --class ext-gemm > "$T/out" 2>&1
rc=$?
[ $rc -eq 1 ] || { fail "gate on ext-gemm with the planted bug: exit $rc, want 1"; cat "$T/out"; }
grep -q '^gemm.seq .*FAIL' "$T/out" || { fail "gate: gemm.seq not failed"; cat "$T/out"; }

# in process: the same verdicts
cp -r "$R/ext-gemm" "$R/ext-gemm-inproc"
sed -i -e 's/class = "ext-gemm"/class = "ext-gemm-inproc"/' -e "s|dlopen = \"$LIB\"|dlopen = \"$LIB\", in_process = true|" \
  "$R/ext-gemm-inproc/HARDWARE.toml"
"$PARITY" campaign --class ext-gemm-inproc --kernels "$R" --no-ledger > "$T/out" 2>&1 || { fail "in_process campaign"; cat "$T/out"; }
EXT_GEMM_PLANT=reverse "$PARITY" campaign --class ext-gemm-inproc --kernels "$R" --no-ledger > /dev/null 2>&1
[ $? -eq 1 ] || fail "in_process: the planted bug passed"

# `parity backend info`
"$PARITY" backend info --class ext-gemm --kernels "$R" --point gemm.seq > "$T/info" 2>&1 || { fail "backend info: exit $?"; cat "$T/info"; }
grep -q 'available: yes' "$T/info" || fail "backend info: not available"
grep -q '"library":"ext_gemm 1.0"' "$T/info" || { fail "backend info: no device description"; cat "$T/info"; }
grep -q 'gemm.seq: kernel ext_gemm_seq: yes' "$T/info" || fail "backend info: the point's kernel"
grep -q 'legacy kernel ext_gemm_seq_legacy: yes' "$T/info" || fail "backend info: the legacy kernel"

# a library that is not there: an error (exit 3), not a skip
cp -r "$R/ext-gemm" "$R/ext-missing"
sed -i -e 's/class = "ext-gemm"/class = "ext-missing"/' -e "s|dlopen = \"$LIB\"|dlopen = \"$T/nowhere.so\"|" \
  "$R/ext-missing/HARDWARE.toml"
"$PARITY" campaign --class ext-missing --kernels "$R" --no-ledger > "$T/out" 2>&1
rc=$?
[ $rc -eq 3 ] || { fail "missing library: exit $rc, want 3"; cat "$T/out"; }
grep -q 'nowhere.so' "$T/out" || fail "missing library: the file is not named"

# ---- a hostile served backend --------------------------------------------
if [ -x "$PY" ]; then
  mkdir -p "$R/hostile/common"
  sed -e 's/id = "seq"/id = "seq"/' "$R/ext-gemm/common/KERNEL_FAMILIES.toml" > "$R/hostile/common/KERNEL_FAMILIES.toml"
  cat >> "$R/hostile/common/KERNEL_FAMILIES.toml" << 'TOML'

[[family.point]]
id = "bad"
how = "instantiation"
kernel = "ext_gemm_seq"
description = "the point the hostile backend misbehaves at"
[family.point.numerics.k]
acc = "fp32"
tree = "seq"
out = "fp32"
TOML
  hostile() { # MODE: the class file for that mode
    cat > "$R/hostile/HARDWARE.toml" << TOML
class = "hostile"
description = "a served backend that misbehaves at point bad"
atoms = []
backend = { serve = "exec $PY $B/hostile.py $PARITY $LIB $1 # parity-hostile-$$", timeout = 3 }
TOML
  }
  check_mode() { # MODE RC MESSAGE
    hostile "$1"
    mkdir -p "$T/tmp"
    t0=$(date +%s)
    TMPDIR=$T/tmp "$PARITY" campaign --class hostile --kernels "$R" --no-ledger --json "$T/h.json" > "$T/out" 2>&1
    rc=$?
    t1=$(date +%s)
    [ $rc -eq "$2" ] || { fail "hostile $1: exit $rc, want $2"; cat "$T/out"; }
    grep -q -- "$3" "$T/out" || { fail "hostile $1: no '$3'"; cat "$T/out"; }
    [ $((t1 - t0)) -le 30 ] || fail "hostile $1: took $((t1 - t0)) s with a 3 s timeout"
    if [ "$2" -eq 3 ]; then
      grep -q '^gemm.seq  *ok  *ok  *ok  *ok  *bits' "$T/out" || { fail "hostile $1: the good point did not run"; cat "$T/out"; }
      grep -q '1 passed, 0 failed, 0 skipped, 0 input error(s), 1 backend error(s)' "$T/out" || fail "hostile $1: summary"
      grep -q '"backend_error": true' "$T/h.json" || fail "hostile $1: the JSON report has no error for the point"
    fi
    sleep 0.2
    pgrep -f "parity-hostile-$$" > /dev/null && { fail "hostile $1: a backend process is left"; pkill -9 -f "parity-hostile-$$"; }
    [ -z "$(ls -A "$T/tmp")" ] || { fail "hostile $1: files left in TMPDIR: $(ls -A "$T/tmp")"; rm -rf "$T/tmp"; }
  }
  check_mode none 0 '1 passed\|2 passed'
  check_mode hang 3 'no answer within 3 s to run (--backend-timeout); killed with its process group'
  check_mode exit 3 'the backend exited with status 3 during run'
  check_mode segv 3 'the backend was killed by signal 11'
  check_mode garbage 3 "answered run with a line that is not a JSON object ('this is not JSON')"
  check_mode wrong_id 3 'answered run (request id [0-9]*) with another id'
  check_mode nul 3 'answered run with a line that is not a JSON object'
  check_mode no_ok 3 'answered run without a boolean "ok"'
  check_mode huge 3 'answered run with a line over 1048576 bytes'
  check_mode error 3 'run: the device ran out of its scratch memory'
  check_mode no_output 3 'its output file is not usable'
  # its stdin, the same socket, stays open: no end of file, the timeout ends it
  check_mode close_stdout 3 'no answer within 3 s to run'
  check_mode partial 3 'its output file is not usable'
  check_mode wrong_name 3 "the device output 'y' is missing"
  check_mode wrong_dtype 3 "the device output 'y' is missing or has another dtype"
  check_mode wrong_shape 3 "the device output 'y'"
  # a silent wrong answer is a failure, never a pass
  check_mode flip 1 'gemm.bad .*FAIL'
  for m in hello_hang hello_exit hello_abi; do
    hostile "$m"
    "$PARITY" campaign --class hostile --kernels "$R" --no-ledger > "$T/out" 2>&1
    rc=$?
    [ $rc -eq 3 ] || { fail "hostile $m: exit $rc, want 3"; cat "$T/out"; }
    grep -q 'the backend could not be started' "$T/out" || { fail "hostile $m: not said"; cat "$T/out"; }
  done
  # --backend-timeout overrides the class's timeout
  hostile hang
  "$PARITY" campaign --class hostile --kernels "$R" --no-ledger --backend-timeout 1 > "$T/out" 2>&1
  grep -q 'no answer within 1 s to run' "$T/out" || { fail "--backend-timeout 1 not used"; cat "$T/out"; }
  "$PARITY" campaign --class hostile --kernels "$R" --no-ledger --timeout=2 > "$T/out" 2>&1
  grep -q 'no answer within 2 s to run' "$T/out" || { fail "--timeout=2 not used"; cat "$T/out"; }
  "$PARITY" campaign --class hostile --kernels "$R" --no-ledger --timeout 0 > "$T/out" 2>&1
  [ $? -eq 2 ] && grep -q "seconds in (0, 86400\] expected" "$T/out" || { fail "--timeout 0 accepted"; cat "$T/out"; }
else
  echo "skipped the hostile served backend: no $PY"
fi

# ---- docs/backends.md's bring-up: a numpy kernel through the Python kit -----
if [ -x "$PY" ] && "$PY" -c 'import numpy' 2> /dev/null; then
  cp -r "$B/kernels/mynpu" "$R/"
  sed -i "s|/usr/bin/python3 mynpu_backend.py|PARITY_PYTHON=$B/../../python $PY $B/mynpu_backend.py|" \
    "$R/mynpu/HARDWARE.toml"
  "$PARITY" registry lint --kernels "$R" > "$T/out" 2>&1 || { fail "mynpu: lint"; cat "$T/out"; }
  "$PARITY" backend info --class mynpu --kernels "$R" --point gemm.seq > "$T/out" 2>&1
  grep -q 'available: yes' "$T/out" && grep -q '"sku":"mynpu-sim"' "$T/out" &&
    grep -q 'gemm.seq: kernel npu_gemm_seq: yes' "$T/out" || { fail "mynpu: backend info"; cat "$T/out"; }
  "$PARITY" campaign --class mynpu --kernels "$R" --no-ledger > "$T/out" 2>&1
  rc=$?
  [ $rc -eq 0 ] || { fail "mynpu campaign: exit $rc, want 0"; cat "$T/out"; }
  grep -q '^gemm.seq  *ok  *ok  *skip  *ok  *bits' "$T/out" || { fail "mynpu: gemm.seq"; cat "$T/out"; }
  grep -q 'gemm.seq  *ok: [0-9]* distinguished, 0 equivalent, 0 not distinguished' "$T/out" || fail "mynpu: power"
  "$PARITY" campaign --class mynpu --kernels "$R" --no-ledger --against cpu > "$T/out" 2>&1
  grep -q 'bit parity between mynpu and cpu at gemm.seq: not expected: the points differ: .*fma' "$T/out" ||
    { fail "mynpu --against cpu: the declared difference"; cat "$T/out"; }
  grep -q 'the declared difference shows at fp32 (in=fp32,out=fp32), the point.s shape: [1-9][0-9]* of 96 elements' "$T/out" ||
    { fail "mynpu --against cpu: fma vs no fma not shown at fp32"; cat "$T/out"; }
  # the same kernel declared with fma = true (what it does not do): red
  sed -i 's/^fma = false$/fma = true/' "$R/mynpu/common/KERNEL_FAMILIES.toml"
  "$PARITY" campaign --class mynpu --kernels "$R" --no-ledger > "$T/out" 2>&1
  rc=$?
  [ $rc -eq 1 ] || { fail "mynpu declared fma = true: exit $rc, want 1"; cat "$T/out"; }
  grep -q "the kernel's bits match the neighbour k: fma = false, not the declared point" "$T/out" ||
    { fail "mynpu declared fma = true: fma = false not named"; cat "$T/out"; }
  rm -rf "$R/mynpu"
else
  echo "skipped the bring-up of docs/backends.md: no numpy for $PY"
fi

# ---- the backend key, malformed: refused naming the file and line ------------
bad_key() { # VALUE MESSAGE
  mkdir -p "$R/badkey"
  printf 'class = "badkey"\natoms = []\nbackend = %s\n' "$1" > "$R/badkey/HARDWARE.toml"
  "$PARITY" registry lint --kernels "$R" > "$T/out" 2>&1
  rc=$?
  [ $rc -eq 2 ] || { fail "backend = $1: lint exit $rc, want 2"; cat "$T/out"; }
  grep -q "badkey/HARDWARE.toml:3:.*$2" "$T/out" || { fail "backend = $1: no '$2' at line 3"; cat "$T/out"; }
  rm -rf "$R/badkey"
}
bad_key '"tpu"' 'a built-in backend is "cpu" or "cuda"'
bad_key '{ serve = "x", dlopen = "y" }' 'exactly one of serve and dlopen (found both)'
bad_key '{ timeout = 3 }' 'exactly one of serve and dlopen (found neither)'
bad_key '{ serve = "" }' 'backend.serve is empty'
bad_key '{ serve = "x", timeout = -1 }' 'backend.timeout = -1'
bad_key '{ serve = "x", in_process = true }' 'backend.in_process is for a dlopen backend'
bad_key '{ serve = "x", port = 8 }' 'port'
bad_key '3' 'backend'

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cli_backends: all passed"
