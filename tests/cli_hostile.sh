#!/bin/sh
# cli_hostile.sh PARITY: hostile and unlucky input from the outside (issue 14):
# no crash (exit 0 or 2, never a signal), a message naming where, bounded
# time.  Expected texts are worked out here from the documented forms, not
# taken from the program.
set -u
PARITY=$1
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
  [ $rc -eq "$want" ] || fail "$name: exit $rc, want $want (stderr: $(head -c 400 "$T/err"))"
}
has() { grep -q -F -- "$2" "$T/$1" || fail "$3: '$2' not in $1: $(head -c 400 "$T/$1")"; }

# ---- stack depth: the program printer ------------------------------------
# seq over n terms is ((...((+0+t0)+t1)...)+t(n-2))+t(n-1): a chain n deep.
n=180000
awk -v n=$n 'BEGIN { s = ""; for (i = 1; i < n; i++) printf "("; printf "+0+t0)";
  for (i = 1; i < n - 1; i++) printf "+t%d)", i; printf "+t%d\n", n - 1 }' > "$T/want_seq"
run 0 "tree show seq --n $n" tree show seq --n $n
cmp -s "$T/out" "$T/want_seq" || fail "tree show seq --n $n: not the sequential bracketing"

# split(200000, seq, seq) at n = 96: slices 0..95 hold one term each (+0+tk),
# the other 199904 are empty (+0); the combinator is one chain 200000 deep.
run 0 "split(200000, seq, seq)" tree show 'split(200000, seq, seq)' --n 96
[ "$(grep -o '(+0)' "$T/out" | wc -l)" -eq 199904 ] || fail "split(200000, seq, seq): not 199904 empty slices"
has out "(+0+t95)" "split(200000, seq, seq)"

# ---- stack depth: the tree parser, from --numerics and a registry file ----
deep() { awk -v d=$1 'BEGIN { for (i = 0; i < d; i++) printf "reverse("; printf "seq";
  for (i = 0; i < d; i++) printf ")" }'; }
run 2 "--numerics tree 14000 deep" tree show seq --n 4 --numerics "{ tree = \"$(deep 14000)\" }"
has err "nested deeper than 256 levels" "--numerics tree 14000 deep"
mkdir -p "$T/reg/x/common"
printf 'class = "x"\n' > "$T/reg/x/HARDWARE.toml"
: > "$T/reg/DEVICES.toml"
{ printf '[[family]]\nid = "f"\nkernels = ["k1"]\n[[family.point]]\nid = "p"\n'
  printf '[family.point.numerics.k]\ntree = "%s"\n' "$(deep 50000)"; } > "$T/reg/x/common/KERNEL_FAMILIES.toml"
run 2 "registry tree 50000 deep" registry lint "$T/reg"
has out "KERNEL_FAMILIES.toml:7:8: error: key 'tree': tree:1:2049: the tree is nested deeper than 256 levels" \
  "registry tree 50000 deep"
run 2 "registry show, tree 50000 deep" registry show f.p --class x "$T/reg"
has err "nested deeper than 256 levels" "registry show, tree 50000 deep"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cli_hostile: all passed"
