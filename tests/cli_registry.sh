#!/bin/sh
# cli_registry.sh PARITY KERNELS: `parity registry` from the outside: exit
# statuses of lint (0 clean, 2 errors or a registry that does not load),
# show, list and compare (0 parity expected, 1 bits may differ, 2 bad input),
# and the file:line of lint findings on a registry crafted here.
set -u
PARITY=$1
KERNELS=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# run WANT_RC NAME ARGS...: stdout in $T/out, stderr in $T/err.
run() {
  want=$1 name=$2
  shift 2
  "$PARITY" "$@" > "$T/out" 2> "$T/err"
  rc=$?
  [ $rc -eq "$want" ] || fail "$name: exit $rc, want $want (stdout: $(cat "$T/out"); stderr: $(cat "$T/err"))"
}
has() { grep -q -F -- "$2" "$T/$1" || fail "$3: '$2' not in $1: $(cat "$T/$1")"; }

# The sample registry lints clean.
run 0 "lint sample" registry lint "$KERNELS"
has out "$KERNELS: clean (8 classes, 7 families," "lint sample"
run 0 "lint --kernels" registry lint --kernels "$KERNELS"

# A broken registry: exit 2, each finding at its file:line.
mkdir -p "$T/bad/x/common" "$T/bad/y"
cat > "$T/bad/x/HARDWARE.toml" <<'TOML'
class = "x"
parent = "nowhere"
TOML
cat > "$T/bad/y/HARDWARE.toml" <<'TOML'
class = "y"
TOML
cat > "$T/bad/x/common/KERNEL_FAMILIES.toml" <<'TOML'
[[family]]
id = "f"
kernels = ["k1"]
[[family.param]]
name = "threads"
kind = "runtime"
default = 2
[[family.point]]
id = "p"
how = "copy"
[family.point.numerics.k]
tree = "stride({threads}, seq, seq)"
[[family.point]]
id = "q"
TOML
cat > "$T/bad/DEVICES.toml" <<'TOML'
[[device]]
sku = "Z"
class = "sm99"
TOML
run 2 "lint bad" registry lint "$T/bad"
has out "$T/bad/x/HARDWARE.toml:2:1: error: parent 'nowhere' does not exist" "parent"
has out "$T/bad/x/common/KERNEL_FAMILIES.toml:10:1: error: point 'p' is a copy without a reason" "copy"
has out "$T/bad/x/common/KERNEL_FAMILIES.toml:12:" "runtime line"
has out "runtime param 'threads' is used in numerics 'k' of f.p" "runtime"
has out "$T/bad/x/common/KERNEL_FAMILIES.toml:13:" "no numerics line"
has out "point 'q' of family 'f' has no numerics" "no numerics"
has out "$T/bad/DEVICES.toml:3:1: error: device 'Z': class 'sm99' does not exist" "device"
has out "$T/bad: 5 errors" "count"

# A registry that does not load: exit 2, the message on stderr.
mkdir -p "$T/broken/x/common"
printf 'class = "x"\n' > "$T/broken/x/HARDWARE.toml"
printf '[[family]]\nid = "f"\nkernels = "k1"\n' > "$T/broken/x/common/KERNEL_FAMILIES.toml"
run 2 "lint broken" registry lint "$T/broken"
has err "$T/broken/x/common/KERNEL_FAMILIES.toml:3:" "broken"
run 2 "lint missing dir" registry lint "$T/none"
run 2 "lint two dirs" registry lint "$KERNELS" --kernels "$KERNELS"

# show / list.
run 0 "show" registry show gemm.splitk --class sm90 --shape M=16,N=4096,K=4096 "$KERNELS"
has out "tree         split(4, chain(16), seq, align=64)" "show tree"
has out "kernels/sm90/common/KERNEL_FAMILIES.toml:" "show origin"
has out "evidence at sm90: 0" "show evidence (sm90 has no record yet)"
run 0 "show cpu" registry show gemm.splitk --class cpu --shape M=16,N=4096,K=4096 "$KERNELS"
has out "evidence at cpu: 2" "show cpu evidence"
run 0 "show sm80" registry show gemm.splitk --class sm80 --shape K=4096 "$KERNELS"
has out "evidence at sm80: 0" "show sm80 evidence"
run 2 "show unknown point" registry show gemm.nope --class sm90 "$KERNELS"
has err "no point 'nope'" "show unknown point"
run 2 "show without class" registry show gemm.tc "$KERNELS"
run 2 "show missing shape" registry show paged_decode_attention.v1 --class sm80 "$KERNELS"
has err "template {P} has no value" "show missing shape"
run 0 "list" registry list --class sm90 "$KERNELS"
has out "gemm.splitk" "list"
has out "overridden" "list override"
run 2 "list unknown class" registry list --class sm70 "$KERNELS"
[ -s "$T/out" ] && fail "list unknown class: printed before the error: $(head -2 "$T/out")"

# compare: 0 parity expected, 1 not, 2 bad input.
run 0 "compare equal" registry compare sm80:gemm.tc sm89:gemm.tc --shape K=4096 "$KERNELS"
has out "bit parity expected" "compare equal"
run 1 "compare split" registry compare sm80:gemm.splitk sm80:gemm.splitk8 --shape M=16,N=4096,K=4096 "$KERNELS"
has out "split count: 4 vs 8" "compare split"
run 1 "compare atom" registry compare sm80:gemm.splitk sm90:gemm.splitk --shape K=4096 "$KERNELS"
has out "atom frac_bits: 24 vs 25" "compare atom"
has out "applies: ulp = 2" "compare tolerance"
run 2 "compare bad arg" registry compare gemm.tc sm89:gemm.tc "$KERNELS"
run 2 "compare one arg" registry compare sm80:gemm.tc --kernels "$KERNELS" --shape K=1
has err "compare needs two points A B" "compare one arg"

# help and usage.
for sub in lint list show compare; do
  run 0 "$sub --help" registry $sub --help
  has out "exit status" "$sub --help"
done
run 0 "registry --help" registry --help
run 2 "registry alone" registry
run 2 "unknown sub" registry frob

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cli_registry: all passed"
