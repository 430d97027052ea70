#!/bin/sh
# cli_hostile.sh PARITY [KERNELS]: hostile and unlucky input from the outside:
# no crash (exit 0 or 2, never a signal), a message naming where, bounded
# time.  Expected texts are worked out here from the documented forms, not
# taken from the program.
set -u
PARITY=$1
KERNELS=${2:-}
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

# ---- TOML: non-ASCII where whitespace is expected (toml++ 3.3.0 reached
# TOML_UNREACHABLE for U+00A1 ... U+0499 there: undefined behaviour) -------
# Each is refused before toml++ sees it, naming line, column and code point.
run 2 "--numerics { a = Kappa }" tree show seq --n 2 --numerics '{ a = Κ }'
has err "--numerics:1:7: unexpected U+039A outside a string or comment" "--numerics { a = Kappa }"
run 2 "--numerics { a = U+00A1 }" reduce --numerics '{ a = ¡ }' --in "$T/none" --out "$T/y"
has err "--numerics:1:7: unexpected U+00A1" "--numerics { a = U+00A1 }"
[ ! -e "$T/y" ] || fail "--numerics { a = U+00A1 }: an output was written"
run 2 "--numerics U+0499 after a value" tree show seq --n 2 --numerics '{ acc = "fp32" ҙ}'
has err "--numerics:1:16: unexpected U+0499" "--numerics U+0499 after a value"
# In a multi-line basic string, after a backslash and first after a
# line-ending backslash, toml++ asks the same question: refused there too.
run 2 "--numerics multi-line string, after a line-ending backslash" tree show seq --n 2 \
  --numerics "$(printf '{ acc = """fp32\\\n  Κ""" }')"
has err "--numerics:2:3: U+039A first after a line-ending backslash" "after a line-ending backslash"
mkdir -p "$T/utf/x/common"
: > "$T/utf/DEVICES.toml"
printf 'class = "x" # Κλάση ¡ ҙ: any UTF-8 in a comment\n' > "$T/utf/x/HARDWARE.toml"
cat > "$T/utf/x/common/KERNEL_FAMILIES.toml" <<'TOML'
# Κ ¡ ҙ
[[family]]
id = "f"
description = """Κ
  ¡ in a multi-line basic string \u039A\
  then ASCII ҙ"""
pipeline = '''
Κ ¡ ҙ in a multi-line literal string'''
kernels = ["k1"]
[[family.point]]
id = "p"
description = "Κ¡ — in a basic string"
[family.point.numerics.k]
tree = "seq" # Κ
TOML
run 0 "registry with UTF-8 in strings and comments" registry lint "$T/utf"
# non-ASCII in a registry file where whitespace is expected: file:line:col
printf 'class = "x"\nparent =\302\240"y"\n' > "$T/utf/x/HARDWARE.toml"
run 2 "registry U+00A0 for a space" registry lint "$T/utf"
has err "x/HARDWARE.toml:2:9: unexpected U+00A0 outside a string or comment" "registry U+00A0 for a space"
printf 'class = "x"\n  Κ = 1\n' > "$T/utf/x/HARDWARE.toml"
run 2 "registry list, Kappa as a key" registry list "$T/utf"
has err "x/HARDWARE.toml:2:3: unexpected U+039A" "registry list, Kappa as a key"
run 0 "--numerics UTF-8 in a comment" tree show seq --n 2 --numerics '{ acc = "fp32" } # Κ ¡ ҙ'

# ---- TOML nesting: dotted keys and headers are bounded like brackets -----
dotted() { awk -v d=$1 'BEGIN { printf "a"; for (i = 1; i < d; i++) printf ".a" }'; }
run 2 "--numerics dotted key 20000 deep" tree show seq --n 2 --numerics "{ $(dotted 20000) = 1 }"
has err "--numerics:1:3: nested deeper than 128 levels" "--numerics dotted key 20000 deep"
# 127 components (plus the wrapper's one) are fine for TOML: the point then
# says the key is unknown.
run 2 "--numerics dotted key 127 deep" tree show seq --n 2 --numerics "{ $(dotted 127) = 1 }"
has err "unknown key 'a'" "--numerics dotted key 127 deep"
printf '[%s]\nx = 1\n' "$(dotted 50000)" > "$T/utf/x/HARDWARE.toml"
run 2 "registry header 50000 deep" registry lint "$T/utf"
has err "x/HARDWARE.toml:1:1: nested deeper than 128 levels" "registry header 50000 deep"
{ printf 'class = "x"\nv = '; awk 'BEGIN { for (i = 0; i < 200; i++) printf "{ a = "; printf "1";
  for (i = 0; i < 200; i++) printf " }"; print "" }'; } > "$T/utf/x/HARDWARE.toml"
run 2 "registry inline tables 200 deep" registry lint "$T/utf"
# v is level 1; the k-th "a" (column 7 + 6(k - 1)) is level k + 1: k = 128 is too deep
has err "x/HARDWARE.toml:2:769: nested deeper than 128 levels" "registry inline tables 200 deep"

# ---- registry list: linear in the registry ------------------------------
# 100 families of 100 points (0.9 MB): the point p of family f is declared
# at line 403 f + 4 p + 4.  It took 89 s when every point rebuilt the view.
mkdir -p "$T/big/x/common"
: > "$T/big/DEVICES.toml"
printf 'class = "x"\n' > "$T/big/x/HARDWARE.toml"
awk 'BEGIN { for (f = 0; f < 100; f++) { printf "[[family]]\nid = \"f%d\"\nkernels = [\"k%d\"]\n", f, f;
  for (p = 0; p < 100; p++) printf "[[family.point]]\nid = \"p%d\"\n[family.point.numerics.k]\ntree = \"split(4, seq, pairwise)\"\n", p } }' \
  > "$T/big/x/common/KERNEL_FAMILIES.toml"
if command -v timeout > /dev/null; then LIMIT="timeout 15"; else LIMIT=; fi
start=$(date +%s)
$LIMIT "$PARITY" registry list "$T/big" > "$T/out" 2> "$T/err"
rc=$?
[ $rc -eq 0 ] || fail "registry list, 10000 points: exit $rc (124: over 15 s)"
[ "$(grep -c '^  f[0-9]*\.p[0-9]* ' "$T/out")" -eq 10000 ] || fail "registry list, 10000 points: not 10000 points listed"
grep -q "^  f99\.p99  *$T/big/x/common/KERNEL_FAMILIES.toml:40297\$" "$T/out" || fail "registry list: f99.p99 not at line 40297"
grep -q "^  f37\.p5  *$T/big/x/common/KERNEL_FAMILIES.toml:14935\$" "$T/out" || fail "registry list: f37.p5 not at line 14935"
$LIMIT "$PARITY" registry lint "$T/big" > "$T/out" 2> "$T/err"
rc=$?
[ $rc -eq 0 ] || fail "registry lint, 10000 points: exit $rc (124: over 15 s)"
echo "registry list + lint of 10000 points: $(( $(date +%s) - start )) s"

# lint's duplicate checks in n log n: one family of 50,000 points (4.4 MB)
# with p7 declared again at the end (took about 18 s, quadratic)
awk 'BEGIN { printf "[[family]]\nid = \"f0\"\nkernels = [\"k0\"]\n";
  for (p = 0; p < 50000; p++) printf "[[family.point]]\nid = \"p%d\"\n[family.point.numerics.k]\ntree = \"seq\"\n", p;
  printf "[[family.point]]\nid = \"p7\"\n" }' > "$T/big/x/common/KERNEL_FAMILIES.toml"
$LIMIT "$PARITY" registry lint "$T/big" > "$T/out" 2> "$T/err"
rc=$?
[ $rc -eq 2 ] || fail "registry lint, 50000 points and a duplicate: exit $rc, want 2 (124: over 15 s)"
# p7 at line 3 + 4 * 7 + 1 = 32; the second one's id key at 3 + 4 * 50000 + 2 = 200005, column 1
has out "KERNEL_FAMILIES.toml:200005:1: error: point 'p7' is declared twice in family 'f0' (first at line 32)" \
  "registry lint, 50000 points and a duplicate"

# ---- ids name files: refused when they could leave a folder --------------
badid() {
  want_field=$1 id=$2 msg=$3
  if [ "$want_field" = point ]; then fam=f pid=$id; else fam=$id pid=p; fi
  printf '[[family]]\nid = "%s"\nkernels = ["k1"]\n[[family.point]]\nid = "%s"\n' "$fam" "$pid" > "$T/utf/x/common/KERNEL_FAMILIES.toml"
  printf 'class = "x"\n' > "$T/utf/x/HARDWARE.toml"
  run 2 "$want_field id '$id'" registry lint "$T/utf"
  has err "$msg" "$want_field id '$id'"
  run 2 "$want_field id '$id', list" registry list "$T/utf"
}
badid point "x/../../../escaped" "x/common/KERNEL_FAMILIES.toml:5:6: point id 'x/../../../escaped': character 2 ('/') is not allowed"
badid point "a..b" "KERNEL_FAMILIES.toml:5:6: point id 'a..b' contains \"..\""
badid point "-rf" "KERNEL_FAMILIES.toml:5:6: point id '-rf': character 1 ('-') is not allowed"
badid point ".hidden" "KERNEL_FAMILIES.toml:5:6: point id '.hidden': character 1 ('.') is not allowed"
badid point "" "KERNEL_FAMILIES.toml:5:6: point id is empty"
badid family "a.b" "KERNEL_FAMILIES.toml:2:6: family id 'a.b': character 2 ('.') is not allowed"
badid family "../up" "KERNEL_FAMILIES.toml:2:6: family id '../up': character 1 ('.') is not allowed"
# 64 characters are fine, 65 are not
id64=$(awk 'BEGIN { for (i = 0; i < 64; i++) printf "a" }')
printf '[[family]]\nid = "f"\nkernels = ["k1"]\n[[family.point]]\nid = "%s"\n[[family.point]]\nid = "v1.2-rc_3"\n' "$id64" \
  > "$T/utf/x/common/KERNEL_FAMILIES.toml"
run 0 "point id of 64 characters, and v1.2-rc_3" registry list "$T/utf"
has out "f.v1.2-rc_3" "point id v1.2-rc_3"
has out "f.$id64" "point id of 64 characters"
badid point "${id64}a" "KERNEL_FAMILIES.toml:5:6: point id is 65 characters long (at most 64)"

# ---- outputs: never an input, never each other, never a link or a device -
# in.safetensors: a F32 [1, 2] = 1, 2 (header length, JSON, data, by hand)
mkst() {
  json='{"a":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]}}'
  { printf "$(printf '\\%03o' ${#json})"; printf '\000\000\000\000\000\000\000'; printf '%s' "$json"
    printf '\000\000\200\077\000\000\000\100'; } > "$1"
}
mkdir -p "$T/o"
mkst "$T/o/in.st"
cp "$T/o/in.st" "$T/o/in.orig"
P='{ acc = "fp32" }'
run 0 "reduce, plain" reduce --numerics "$P" --in "$T/o/in.st" --out "$T/o/y.st"
same_in() { cmp -s "$T/o/in.st" "$T/o/in.orig" || fail "$1: the input was modified"; }
run 2 "--out = --in" reduce --numerics "$P" --in "$T/o/in.st" --out "$T/o/in.st"
has err "is the same file as --in" "--out = --in"; same_in "--out = --in"
run 2 "--out = --in by another path" reduce --numerics "$P" --in "$T/o/in.st" --out "$T/o/../o/./in.st"
has err "is the same file as --in" "--out = --in by another path"; same_in "--out = --in by another path"
ln "$T/o/in.st" "$T/o/hard.st"
run 2 "--out a hard link of --in" reduce --numerics "$P" --in "$T/o/in.st" --out "$T/o/hard.st"
has err "is the same file as --in" "--out a hard link of --in"; same_in "--out a hard link of --in"
run 2 "--report = --in" reduce --numerics "$P" --in "$T/o/in.st" --out "$T/o/y2.st" --report "$T/o/in.st"
has err "--report $T/o/in.st is the same file as --in" "--report = --in"; same_in "--report = --in"
[ ! -e "$T/o/y2.st" ] || fail "--report = --in: --out was written"
run 2 "--out X --report X" reduce --numerics "$P" --in "$T/o/in.st" --out "$T/o/x.st" --report "$T/o/x.st"
has err "--out $T/o/x.st and --report $T/o/x.st are the same file" "--out X --report X"
[ ! -e "$T/o/x.st" ] || fail "--out X --report X: X was written"
run 2 "campaign --json X --junit X" campaign --class cpu --json "$T/o/r.json" --junit "$T/o/./r.json"
has err "are the same file" "campaign --json X --junit X"
[ ! -e "$T/o/r.json" ] || fail "campaign --json X --junit X: X was written"
run 2 "check --numerics --json = --in" check --numerics "$P" --in "$T/o/in.st" --out "$T/o/y.st" --json "$T/o/in.st"
has err "is the same file as --in" "check --numerics --json = --in"; same_in "check --numerics --json = --in"
# a symbolic link and a FIFO as --out: refused, left as they were
printf 'target\n' > "$T/o/target"
ln -s target "$T/o/link.st"
run 2 "--out a symbolic link" reduce --numerics "$P" --in "$T/o/in.st" --out "$T/o/link.st"
has err "is a symbolic link" "--out a symbolic link"
[ -L "$T/o/link.st" ] && [ "$(cat "$T/o/target")" = target ] || fail "--out a symbolic link: the link or its target changed"
if mkfifo "$T/o/fifo" 2> /dev/null; then
  run 2 "--report a FIFO" reduce --numerics "$P" --in "$T/o/in.st" --out "$T/o/y3.st" --report "$T/o/fifo"
  has err "is not a regular file (a FIFO)" "--report a FIFO"
  [ -p "$T/o/fifo" ] || fail "--report a FIFO: the FIFO was replaced"
  [ ! -e "$T/o/y3.st" ] || fail "--report a FIFO: --out was written"
fi
# modes: 0666 less the umask, for the output and the report alike
( umask 002; "$PARITY" reduce --numerics "$P" --in "$T/o/in.st" --out "$T/o/m.st" --report "$T/o/m.json" ) \
  || fail "reduce under umask 002: exit $?"
[ "$(stat -c %a "$T/o/m.st")" = 664 ] || fail "--out under umask 002: mode $(stat -c %a "$T/o/m.st"), want 664"
[ "$(stat -c %a "$T/o/m.json")" = 664 ] || fail "--report under umask 002: mode $(stat -c %a "$T/o/m.json"), want 664"
# a legal 253-character name
long=$(awk 'BEGIN { for (i = 0; i < 250; i++) printf "n"; printf ".st" }')
run 0 "--out with a 253-character name" reduce --numerics "$P" --in "$T/o/in.st" --out "$T/o/$long" --report "$T/o/$long.j"
[ -s "$T/o/$long" ] || fail "--out with a 253-character name: not written"
# temporaries of a process that no longer exists (SIGKILL) are removed by the
# next write of the same output; a live process's are kept
dead=$(sh -c 'echo $$')
: > "$T/o/.y.st.$dead.tmp.AbCdEf"
: > "$T/o/.y.st.$$.tmp.GhIjKl"
run 0 "reduce after a killed one" reduce --numerics "$P" --in "$T/o/in.st" --out "$T/o/y.st"
[ ! -e "$T/o/.y.st.$dead.tmp.AbCdEf" ] || fail "a dead process's temporary file was left"
[ -e "$T/o/.y.st.$$.tmp.GhIjKl" ] || fail "a live process's temporary file was removed"
rm -f "$T/o/.y.st.$$.tmp.GhIjKl"
ls -A "$T/o" | grep -q '\.tmp' && fail "temporary files left: $(ls -A "$T/o" | grep '\.tmp')"

# ttbp, transcript, tier3, ledger merge: --json/--out never an input
printf '{"x": 1}\n' > "$T/o/control.jsonl"
cp "$T/o/control.jsonl" "$T/o/control.orig"
run 2 "transcript --json = CONTROL" transcript "$T/o/control.jsonl" "$T/o/in.st" --json "$T/o/control.jsonl"
has err "--json $T/o/control.jsonl is the same file as CONTROL" "transcript --json = CONTROL"
cmp -s "$T/o/control.jsonl" "$T/o/control.orig" || fail "transcript --json = CONTROL: CONTROL was modified"
run 2 "tier3 --json = BARS" tier3 "$T/o/in.st" "$T/o/control.jsonl" --json "$T/o/control.jsonl"
has err "is the same file as BARS" "tier3 --json = BARS"
cmp -s "$T/o/control.jsonl" "$T/o/control.orig" || fail "tier3 --json = BARS: BARS was modified"
if [ -n "$KERNELS" ]; then
  "$PARITY" campaign --class cpu --kernels "$KERNELS" --families rmsnorm --ledger "$T/o/l.sqlite" -q > /dev/null 2>&1 \
    || fail "campaign for a ledger: exit $?"
  cp "$T/o/l.sqlite" "$T/o/l.orig"
  run 2 "ttbp --json = --ledger" ttbp --class cpu --ledger "$T/o/l.sqlite" --json "$T/o/l.sqlite"
  has err "--json $T/o/l.sqlite is the same file as --ledger" "ttbp --json = --ledger"
  cmp -s "$T/o/l.sqlite" "$T/o/l.orig" || fail "ttbp --json = --ledger: the ledger was modified"
  ln -s l.sqlite "$T/o/l.link"
  run 2 "ttbp --json a symbolic link" ttbp --class cpu --ledger "$T/o/l.sqlite" --json "$T/o/l.link"
  has err "is a symbolic link" "ttbp --json a symbolic link"
  run 2 "ledger merge --out = IN" ledger merge --out "$T/o/l.link" "$T/o/l.sqlite"
  run 2 "ledger merge --out = IN (hard link)" ledger merge --out "$T/o/l.sqlite" "$T/o/l.orig" "$T/o/./l.sqlite"
  has err "is the same file as IN" "ledger merge --out = IN"
  cmp -s "$T/o/l.sqlite" "$T/o/l.orig" || fail "ledger merge --out = IN: the ledger was modified"
fi

# ---- a command that fails writes nothing ---------------------------------
printf 'earlier run\n' > "$T/o/c.json"
run 2 "campaign, registry that does not load" campaign --class cpu --kernels "$T/o/nowhere" \
  --traces "$T/o/tr" --json "$T/o/c.json" --no-ledger
[ ! -e "$T/o/tr" ] || fail "campaign, registry that does not load: --traces was created"
[ "$(cat "$T/o/c.json")" = "earlier run" ] || fail "campaign, registry that does not load: --json was replaced"
if [ -n "$KERNELS" ]; then
  run 2 "campaign --families matching nothing" campaign --class cpu --kernels "$KERNELS" --families nosuch \
    --json "$T/o/c.json" --junit "$T/o/c.xml" --no-ledger -q
  has err "--families: no point of class cpu belongs to 'nosuch'" "campaign --families matching nothing"
  [ "$(cat "$T/o/c.json")" = "earlier run" ] || fail "campaign --families matching nothing: --json was replaced"
  [ ! -e "$T/o/c.xml" ] || fail "campaign --families matching nothing: --junit was written"
fi

# ---- every limit of docs/limits.md, at the limit and one past it ---------
# tree nesting: 256 levels (255 reverse( around seq) parse, 257 do not
run 0 "tree nesting 256" tree show "$(deep 255)" --n 2
run 2 "tree nesting 257" tree show "$(deep 256)" --n 2
has err "tree:1:2049: the tree is nested deeper than 256 levels" "tree nesting 257"
# expr brackets: 256 levels ((..(0 + 1) + 2) .. + 256) parse, 257 do not
brk() { awk -v d=$1 'BEGIN { printf "expr("; for (i = 0; i < d; i++) printf "("; printf "0";
  for (i = 1; i <= d; i++) printf " + %d)", i; printf ")" }'; }
run 0 "expr brackets 256" tree show "$(brk 256)" --n 2
run 2 "expr brackets 257" tree show "$(brk 257)" --n 2
has err "the bracketing is nested deeper than 256 levels" "expr brackets 257"
# selector nesting: 255 parentheses (256 levels with the comparison's operands) parse, 256 do not
sel() { awk -v d=$1 'BEGIN { for (i = 0; i < d; i++) printf "("; printf "r < 1"; for (i = 0; i < d; i++) printf ")" }'; }
run 0 "selector nesting 256" reduce --numerics "{ rows = [{ select = \"$(sel 255)\" }] }" --in "$T/o/in.st" --out "$T/o/s.st"
run 2 "selector nesting 257" reduce --numerics "{ rows = [{ select = \"$(sel 256)\" }] }" --in "$T/o/in.st" --out "$T/o/s2.st"
has err "the selector is nested deeper than 256 levels" "selector nesting 257"
# TOML nesting: 128 levels (the wrapper's v and 127 components) are TOML, 129 are not
run 2 "TOML nesting 129" tree show seq --n 2 --numerics "{ $(dotted 128) = 1 }"
has err "--numerics:1:3: nested deeper than 128 levels" "TOML nesting 129"
# integers in a tree: at most 2^30
run 2 "split count 2^30 + 1" tree show 'split(1073741825, seq, seq)' --n 4
has err "the split count is too large (at most 1073741824)" "split count 2^30 + 1"
run 2 "head modulus 2^30 + 1" tree show 'head(1073741825, seq, seq)' --n 4
has err "tree:1:6: the head modulus is too large (at most 1073741824)" "head modulus 2^30 + 1"
# operations of an expanded point: at most 2^23 (--max-ops), refused before
# allocating when the parts alone are that many (it took 4 GiB, exit 3)
$LIMIT "$PARITY" tree show 'stride(1073741824, seq, seq)' --n 4 > "$T/out" 2> "$T/err"
[ $? -eq 2 ] || fail "stride(2^30) at n = 4: exit $?, want 2"
has err "the tree expands to more than 8388608 operations at n = 4" "stride(2^30) at n = 4"
$LIMIT "$PARITY" tree show 'split(134217728, seq, seq)' --n 4 > "$T/out" 2> "$T/err"
[ $? -eq 2 ] || fail "split(2^27) at n = 4: exit $?, want 2"
# tree show --n: at most 2^20
run 0 "tree show --n 2^20" tree show pairwise --n 1048576
run 2 "tree show --n 2^20 + 1" tree show pairwise --n 1048577
has err "--n: '1048577' is not an integer in [0, 1048576]" "tree show --n 2^20 + 1"

# ---- LKB files: a broken [[measurement]] or value is a lint
# error naming file, line and key, never a crash or a NaN in the report ---
if [ -n "$KERNELS" ]; then
  # lintk NAME WANT_LINE: both lints exit 2 (not a signal) and name it
  lintk() {
    run 2 "registry lint: $1" registry lint "$T/lk"
    has out "$2" "registry lint: $1"
    run 2 "lkb --lint: $1" lkb --lint --kernels "$T/lk"
    has out "$2" "lkb --lint: $1"
  }
  fresh() { rm -rf "$T/lk"; cp -r "$KERNELS" "$T/lk"; }
  M=$T/lk/cpu/MEASUREMENTS.toml
  fresh; { printf '[[measurement]]\n'; cat "$KERNELS/cpu/MEASUREMENTS.toml"; } > "$M"
  lintk "[[measurement]] without id" "$M:1:1: missing key 'id'"
  fresh; { printf '[[measurement]]\nid = "x"\n'; cat "$KERNELS/cpu/MEASUREMENTS.toml"; } > "$M"
  lintk "[[measurement]] without point" "$M:1:1: missing key 'point'"
  fresh; { printf '[[measurement]]\nid = 7\n'; cat "$KERNELS/cpu/MEASUREMENTS.toml"; } > "$M"
  lintk "[[measurement]] id not a string" "$M:2:6: key 'id' must be a string"
  fresh; { printf '[[measurement]]\nid = "x"\npoint = ["gemm.splitk"]\n'; cat "$KERNELS/cpu/MEASUREMENTS.toml"; } > "$M"
  lintk "[[measurement]] point not a string" "$M:3:9: key 'point' must be a string"
  fresh; { printf '[[measurement]]\nbogus = 1\n'; cat "$KERNELS/cpu/MEASUREMENTS.toml"; } > "$M"
  lintk "[[measurement]] with an unknown key" "$M:2:9: unknown key 'bogus' in [[measurement]]"
  # the same, last in the file: the records before it were read
  fresh; { cat "$KERNELS/cpu/MEASUREMENTS.toml"; printf '\n[[measurement]]\nbogus = 1\n'; } > "$M"
  lintk "an unknown key in the last [[measurement]]" "unknown key 'bogus' in [[measurement]]"
  # numbers: finite, and counts that fit
  for v in nan inf -inf; do
    fresh; sed -i "0,/^median_s = .*/s//median_s = $v/" "$M"
    lintk "median_s = $v" "'median_s' must be a finite number >= 0"
    grep -q "^$M:[0-9]*:12: error\|$M:[0-9]*:12:" "$T/out" || fail "median_s = $v: no file:line:column: $(head -c 300 "$T/out")"
  done
  fresh; sed -i "0,/^rows = .*/s//rows = 1e300/" "$M"
  lintk "rows = 1e300" "'rows' must be at most 2147483647"
  # counts whole, repeats at least one, min <= median <= max, ids not empty
  fresh; sed -i "0,/^rows = .*/s//rows = 1.5/" "$M"
  lintk "rows = 1.5" "'rows' must be a whole number, not 1.5"
  fresh; sed -i "0,/^repeats = .*/s//repeats = 0/" "$M"
  lintk "repeats = 0" "'repeats' must be at least 1"
  fresh; sed -i "0,/^min_s = .*/s//min_s = 1000.0/" "$M"
  lintk "min_s above median_s" "min_s <= median_s <= max_s must hold"
  fresh; sed -i '0,/^id = .*/s//id = ""/' "$M"
  lintk "id = empty" "'id' must not be empty"
  # a negative control that names no Tier 1 check
  fresh; sed -i '0,/negative_control = "eager_graphed"/s//negative_control = "bogus"/' "$T/lk/cpu/common/KERNEL_FAMILIES.toml"
  run 2 "registry lint: negative_control = bogus" registry lint "$T/lk"
  has out "negative_control names 'bogus', no Tier 1 check" "registry lint: negative_control = bogus"
  # STEP.toml: per names layer or step
  S=$T/lk/models/llama3-8b/STEP.toml
  fresh; sed -i '0,/^per = "step"/s//per = "epoch"/' "$S"
  lintk "per = epoch" "$S:15:7: 'per' must be \"layer\" or \"step\""
  # flops and bytes: counts, 0 ... 2^62; an op's id not empty
  fresh; sed -i '0,/^flops = "0"/s//flops = "0-4"/' "$S"
  lintk "flops = 0-4" "op 'embed': flops = -4 at C = 1 (must be 0 ... 2^62)"
  fresh; sed -i '0,/^bytes = "2\*2\*T\*H"/s//bytes = "4611686018427387903+4611686018427387903"/' "$S"
  lintk "bytes = 2^63 - 2" "op 'embed': bytes = 9223372036854775806 at C = 1 (must be 0 ... 2^62)"
  fresh; sed -i '0,/^id = "embed"/s//id = ""/' "$S"
  lintk "op id empty" "an op's 'id' must not be empty"
  # HARDWARE.toml [rates]: 5e-324 gave "coverage -nan%", inf a time of 0
  H=$T/lk/cpu/HARDWARE.toml
  for v in 5e-324 inf nan 0 1e13; do
    fresh; sed -i "s/^vector_tflops = .*/vector_tflops = $v/" "$H"
    lintk "vector_tflops = $v" "$H:20: error: [rates] vector_tflops must be a number in [1e-6, 1e12]"
  done
  # an empty class folder and a STEP.toml that is not TOML: said, not a crash
  # (and under the sanitizers: no qsort(NULL, 0), no leak)
  fresh; mkdir -p "$T/lk/cpu/empty"
  run 0 "lkb, an empty folder in the class" lkb --class cpu --kernels "$T/lk"
  fresh; printf 'this is = = not TOML\n' > "$S"
  lintk "STEP.toml that does not parse" "$S:1:"
  run 2 "lkb --model, STEP.toml that does not parse" lkb --class cpu --kernels "$T/lk" --model llama3-8b --allow-lint-errors
  has err "$S:1:" "lkb --model, STEP.toml that does not parse"
fi

# ---- a FIFO (or any file that is not regular) as an input:
# refused at once, naming it, by every reader; never opened blocking.  Each
# run is under `timeout` so a regression fails here instead of hanging.
case $PARITY in /*) ;; *) PARITY=$(pwd)/$PARITY ;; esac # the tests below change folders
mkdir -p "$T/ff"
mkst "$T/ff/in.st"
if mkfifo "$T/ff/p" "$T/ff/p.npy" "$T/ff/p.json" 2> /dev/null; then
  # trun NAME ARGS...: exit 2 within 20 s, naming the FIFO as such
  trun() {
    name=$1
    shift
    timeout 20 "$PARITY" "$@" > "$T/out" 2> "$T/err"
    rc=$?
    [ $rc -eq 124 ] && { fail "FIFO: $name: blocked (killed after 20 s)"; return; }
    [ $rc -eq 2 ] || fail "FIFO: $name: exit $rc, want 2 (stderr: $(head -c 300 "$T/err"))"
    grep -q "not a regular file (a FIFO)" "$T/err" || fail "FIFO: $name: not named: $(head -c 300 "$T/err")"
  }
  trun "inspect" inspect "$T/ff/p"
  trun "reduce --in" reduce --numerics "$P" --in "$T/ff/p" --out "$T/ff/y.st"
  trun "check --numerics --out .npy" check --numerics "$P" --in "$T/ff/in.st" --out "$T/ff/p.npy"
  trun "diff A B" diff "$T/ff/in.st" "$T/ff/p"
  trun "diff .npy" diff "$T/ff/p.npy" "$T/ff/in.st"
  trun "fit --ref" fit --in "$T/ff/in.st" --ref "$T/ff/p"
  trun "transcript CONTROL" transcript "$T/ff/p" "$T/o/control.jsonl"
  trun "tier3 METRICS" tier3 "$T/ff/p.json" "$T/o/control.jsonl"
  trun "tier3 BARS" tier3 "$T/o/control.jsonl" "$T/ff/p.json"
  trun "ledger runs" ledger runs --ledger "$T/ff/p"
  trun "ttbp" ttbp --class cpu --ledger "$T/ff/p"
  trun "ledger merge IN" ledger merge --out "$T/ff/m.sqlite" "$T/ff/p"
  [ ! -e "$T/ff/m.sqlite" ] || fail "FIFO: ledger merge IN: --out was created"
  if [ -n "$KERNELS" ]; then
    trun "campaign --ledger" campaign --class cpu --kernels "$KERNELS" --families rmsnorm --ledger "$T/ff/p" -q
    trun "lkb --ledger" lkb --class cpu --kernels "$KERNELS" --ledger "$T/ff/p"
    for f in cpu/HARDWARE.toml cpu/common/KERNEL_FAMILIES.toml cpu/MEASUREMENTS.toml DEVICES.toml; do
      rm -rf "$T/ff/k"; cp -r "$KERNELS" "$T/ff/k"; rm -f "$T/ff/k/$f"; mkfifo "$T/ff/k/$f"
      timeout 20 "$PARITY" registry lint "$T/ff/k" > "$T/out" 2> "$T/err"
      rc=$?
      [ $rc -eq 2 ] || fail "FIFO: registry lint with $f a FIFO: exit $rc, want 2"
      grep -q "$f: not a regular file (a FIFO)" "$T/out" "$T/err" || fail "FIFO: registry lint with $f a FIFO: not named: $(head -c 300 "$T/out" "$T/err")"
    done
  fi
  # a reveal kernel whose {out} is a FIFO
  timeout 20 "$PARITY" reveal --exec 'rm -f {out}; mkfifo {out} # {in}' --n 8 --order-only > "$T/out" 2> "$T/err"
  rc=$?
  [ $rc -eq 2 ] || fail "FIFO: reveal {out} a FIFO: exit $rc, want 2 (stderr: $(head -c 300 "$T/err"))"
  grep -q "out.safetensors: not a regular file (a FIFO)" "$T/err" || fail "FIFO: reveal {out}: not named: $(head -c 300 "$T/err")"
fi

# ---- ledgers are read read-only: runs, ttbp, merge inputs and
# lkb --ledger never create, write or migrate the file they read ----------
if [ -n "$KERNELS" ]; then
  mkdir -p "$T/rl"
  : > "$T/rl/zero.db"
  head -c 4096 /dev/zero | tr '\0' 'x' > "$T/rl/junk.db"
  sqlite3 "$T/rl/foreign.db" 'CREATE TABLE t(a); INSERT INTO t VALUES (1)'
  for f in zero junk foreign; do
    cp "$T/rl/$f.db" "$T/rl/$f.orig"
    run 2 "ledger runs on $f.db" ledger runs --ledger "$T/rl/$f.db"
    has err "ledger $T/rl/$f.db: " "ledger runs on $f.db"
    run 2 "ttbp on $f.db" ttbp --class cpu --ledger "$T/rl/$f.db"
    has err "ledger $T/rl/$f.db: " "ttbp on $f.db"
    run 2 "ledger merge of $f.db" ledger merge --out "$T/rl/m.sqlite" "$T/rl/$f.db"
    has err "ledger $T/rl/$f.db: " "ledger merge of $f.db"
    [ ! -e "$T/rl/m.sqlite" ] || fail "ledger merge of $f.db: --out was created"
    run 2 "lkb --ledger $f.db" lkb --class cpu --kernels "$KERNELS" --ledger "$T/rl/$f.db"
    has err "ledger $T/rl/$f.db: " "lkb --ledger $f.db"
    cmp -s "$T/rl/$f.db" "$T/rl/$f.orig" || fail "a reader wrote into $f.db ($(wc -c < "$T/rl/$f.db") bytes)"
  done
  has err "not a parity ledger" "lkb --ledger foreign.db"
  run 2 "ttbp on an empty file" ttbp --class cpu --ledger "$T/rl/zero.db"
  has err "an empty database, not a parity ledger" "ttbp on an empty file"
  # a ledger of schema 1 is read (migrated in memory), and stays schema 1
  "$PARITY" campaign --class cpu --kernels "$KERNELS" --families rmsnorm --ledger "$T/rl/v1.sqlite" -q > /dev/null 2>&1 \
    || fail "campaign for a ledger: exit $?"
  sqlite3 "$T/rl/v1.sqlite" "PRAGMA journal_mode=DELETE; DROP TABLE measurement;
    $(for c in residual_count residual_loc residual_copy_points residual_single_class coverage_c1 coverage_c16 \
      coverage_c128 coverage_c1_measured coverage_c16_measured coverage_c128_measured residual_entries source device \
      chain reference class_files; do
      printf 'ALTER TABLE run DROP COLUMN %s; ' $c; done) ALTER TABLE point DROP COLUMN out_digest; ALTER TABLE point DROP COLUMN in_digest;
    DELETE FROM schema_migration WHERE version >= 2; PRAGMA user_version = 1;" > /dev/null \
    || fail "making a schema 1 ledger"
  cp "$T/rl/v1.sqlite" "$T/rl/v1.orig"
  run 0 "ledger runs on a schema 1 ledger" ledger runs --ledger "$T/rl/v1.sqlite"
  has out "complete" "ledger runs on a schema 1 ledger"
  run 0 "ttbp on a schema 1 ledger" ttbp --class cpu --ledger "$T/rl/v1.sqlite"
  run 0 "ledger merge of a schema 1 ledger" ledger merge --out "$T/rl/m1.sqlite" "$T/rl/v1.sqlite"
  has out "1 run(s) added" "ledger merge of a schema 1 ledger"
  cmp -s "$T/rl/v1.sqlite" "$T/rl/v1.orig" || fail "a reader migrated the schema 1 ledger in place"
  [ "$(sqlite3 "$T/rl/v1.sqlite" 'PRAGMA user_version')" = 1 ] || fail "the schema 1 ledger is no longer schema 1"
fi

# ---- reveal's kernels: a per-call --timeout that kills the
# command's process group, a bad --serve answer kills the child, and file
# names are quoted so no character of TMPDIR is interpreted -------------
# a hung --exec kernel: killed after --timeout, with what it started
( cd "$T" && timeout 30 "$PARITY" reveal --exec "sh -c 'echo \$\$ > hung.pid; exec sleep 300' # {in} {out}" \
    --n 8 --timeout 1 > "$T/out" 2> "$T/err" )
rc=$?
[ $rc -eq 3 ] || fail "reveal, a hung --exec kernel: exit $rc, want 3 (stderr: $(head -c 300 "$T/err"))"
has err "did not finish within 1 s" "reveal, a hung --exec kernel"
sleep 0.2
# still running (a zombie, dead but not reaped where PID 1 does not reap, is not)
hp=$(cat "$T/hung.pid" 2> /dev/null)
[ -n "$hp" ] && [ -r "/proc/$hp/stat" ] && [ "$(awk '{ print $3 }' "/proc/$hp/stat")" != Z ] \
  && fail "reveal, a hung --exec kernel: its child still runs"
[ -n "$hp" ] || fail "reveal, a hung --exec kernel: the kernel did not start"
# SIGTERM while a call is under way: the probe files and their folder go
# (in /dev/shm, reveal's default, they would hold memory until a restart)
mkdir -p "$T/sigtmp"
( cd "$T" && exec env TMPDIR="$T/sigtmp" "$PARITY" reveal --exec "sh -c 'echo \$\$ > sig.pid; exec sleep 300' # {in} {out}" \
    --n 8 --timeout 60 > /dev/null 2>&1 ) &
rp=$!
i=0
while [ ! -s "$T/sig.pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -n "$(ls "$T/sigtmp")" ] || fail "reveal, SIGTERM mid-call: no probe folder while the call runs"
kill -TERM $rp
wait $rp 2> /dev/null
kill "$(cat "$T/sig.pid" 2> /dev/null)" 2> /dev/null
[ -z "$(ls -A "$T/sigtmp")" ] || fail "reveal, SIGTERM mid-call: left $(ls -A "$T/sigtmp" "$T/sigtmp"/* 2> /dev/null | tr '\n' ' ')"
# a kernel that hangs only at the length reveal probes for induction (15
# for n = 8): a kernel failure there too (exit 3, the length named), not a
# length the kernel declines
cat > "$T/hang15.sh" <<EOF2
#!/bin/sh
"$PARITY" inspect "\$1" | grep -q 'tensor a: F32 \[[0-9]*, 15\]' && exec sleep 300
exec "$PARITY" reduce --numerics '{ acc = "fp32" }' --in "\$1" --out "\$2"
EOF2
chmod +x "$T/hang15.sh"
timeout 60 "$PARITY" reveal --exec "$T/hang15.sh {in} {out}" --n 8 --timeout 2 > "$T/out" 2> "$T/err"
rc=$?
[ $rc -eq 3 ] || fail "reveal, a kernel hung at the induction length: exit $rc, want 3 (stderr: $(head -c 300 "$T/err"))"
has err "the order again at n = 15 (induction): --exec: the command did not finish within 2 s" \
  "reveal, a kernel hung at the induction length"
# a kernel that takes another order on the confirmation's batch (77 rows):
# the confirmation fails (exit 1) and the last line says so; the refuted
# point is named in it, never printed alone as the answer
cat > "$T/conf77.sh" <<EOF2
#!/bin/sh
t=seq
"$PARITY" inspect "\$1" | grep -q 'tensor a: F32 \[77, 8\]' && t='reverse(seq)'
exec "$PARITY" reduce --numerics "{ acc = \"fp32\", tree = \"\$t\" }" --in "\$1" --out "\$2"
EOF2
chmod +x "$T/conf77.sh"
timeout 120 "$PARITY" reveal --exec "$T/conf77.sh {in} {out}" --n 8 --confirm 77 > "$T/out" 2> "$T/err"
rc=$?
[ $rc -eq 1 ] || fail "reveal, the confirmation rows differ: exit $rc, want 1 (stderr: $(head -c 300 "$T/err"))"
last=$(tail -n 1 "$T/out")
case $last in
"not confirmed: the point revealed at n = 8 reproduced "*" of 77 fresh random rows: {"*'tree = "seq"'*) ;;
*) fail "reveal, the confirmation rows differ: last line: $last" ;;
esac
# a hung --serve kernel: no answer within --timeout
timeout 30 "$PARITY" reveal --serve 'read l; exec sleep 300' --n 8 --timeout 1 > "$T/out" 2> "$T/err"
rc=$?
[ $rc -eq 3 ] || fail "reveal, a hung --serve kernel: exit $rc, want 3 (stderr: $(head -c 300 "$T/err"))"
has err "no answer within 1 s" "reveal, a hung --serve kernel"
# a bad --serve answer: the child is killed, not waited on (default --timeout)
timeout 30 "$PARITY" reveal --serve 'read l; echo nonsense; exec sleep 300' --n 8 > "$T/out" 2> "$T/err"
rc=$?
[ $rc -eq 3 ] || fail "reveal, a bad --serve answer: exit $rc, want 3 (stderr: $(head -c 300 "$T/err"))"
has err "the command answered: nonsense" "reveal, a bad --serve answer"
# an answer that only starts with "ok" is not "ok": the y it left is not
# taken (the kernel said something else than success)
cat > "$T/okay.sh" <<EOF2
#!/bin/sh
while read i o; do
  "$PARITY" reduce --numerics '{ acc = "fp32" }' --in "\$i" --out "\$o" > /dev/null 2>&1
  echo "\$1"
done
EOF2
chmod +x "$T/okay.sh"
for ans in okay-but-failed ok-failed "ok then error" "ok "; do
  timeout 30 "$PARITY" reveal --serve "$T/okay.sh '$ans'" --n 8 --order-only > "$T/out" 2> "$T/err"
  rc=$?
  [ $rc -eq 3 ] || fail "reveal, a --serve answer '$ans': exit $rc, want 3 (stdout: $(tail -n 1 "$T/out"))"
  has err "the command answered: $ans" "reveal, a --serve answer '$ans'"
done
timeout 30 "$PARITY" reveal --serve "$T/okay.sh ok" --n 8 --order-only > "$T/out" 2> "$T/err"
rc=$?
[ $rc -eq 0 ] || fail "reveal, a --serve answer 'ok': exit $rc, want 0 (stderr: $(head -c 300 "$T/err"))"
has out "order: seq" "reveal, a --serve answer 'ok'"
run 2 "reveal --timeout 0" reveal --exec 'true {in} {out}' --n 8 --timeout 0
has err "--timeout: '0' is not a number of seconds" "reveal --timeout 0"
# a quote and a command substitution in TMPDIR: quoted, not run
mkdir -p "$T/q/q'\$(touch pwned)'"
( cd "$T/q" && TMPDIR="q'\$(touch pwned)'" timeout 60 "$PARITY" reveal --order-only --n 8 \
    --exec "$PARITY reduce --numerics '{ acc = \"fp32\" }' --in {in} --out {out}" > "$T/out" 2> "$T/err" )
rc=$?
[ $rc -eq 0 ] || fail "reveal with a quote in TMPDIR: exit $rc, want 0 (stderr: $(head -c 300 "$T/err"))"
[ ! -e "$T/q/pwned" ] || fail "reveal with a quote in TMPDIR: the file name was run as shell code"
has out "order: seq" "reveal with a quote in TMPDIR"

# ---- a large file with a bad header is refused without being read whole:
# a 2 GiB sparse file whose 8-byte prefix announces an impossible header
# (it was populated whole first: 2.1 GB of RSS, 3.8 s)
truncate -s 2G "$T/big.safetensors" 2> /dev/null && {
  printf '\377\377\377\377\377\377\377\177' | dd of="$T/big.safetensors" conv=notrunc 2> /dev/null
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f '%M' -o "$T/big.rss" "$PARITY" inspect "$T/big.safetensors" > /dev/null 2> "$T/big.err"
    rc=$?
    [ "$(tail -1 "$T/big.rss")" -lt 65536 ] || fail "a bad header was read whole: peak RSS $(tail -1 "$T/big.rss") KB"
  else
    "$PARITY" inspect "$T/big.safetensors" > /dev/null 2> "$T/big.err"
    rc=$?
  fi
  [ $rc -eq 2 ] || fail "a 2 GiB file with a bad header: exit $rc, want 2"
  grep -q 'header length .* exceeds' "$T/big.err" || fail "the bad header not said: $(cat "$T/big.err")"
  rm -f "$T/big.safetensors"
}

# ---- the same for .npy and for TOML: a header or a size refused from the
# first bytes, not after the whole file
truncate -s 2G "$T/big.npy" 2> /dev/null && {
  printf '\223NUMPY\001\000\377\377' | dd of="$T/big.npy" conv=notrunc 2> /dev/null
  printf '\223NUMPY\001\000\106\000{"descr": "<f4", "fortran_order": False, "shape": (1,), }            \n\0\0\0\0' > "$T/one.npy"
  timeout 20 "$PARITY" diff "$T/big.npy" "$T/one.npy" > /dev/null 2> "$T/npy.err"
  rc=$?
  [ $rc -eq 2 ] || fail "a 2 GiB .npy with a bad header: exit $rc, want 2 (124: it was read whole)"
  grep -q "big.npy: byte" "$T/npy.err" || fail "the .npy's bad header not named: $(cat "$T/npy.err")"
  rm -f "$T/big.npy"
}
if [ -n "$KERNELS" ]; then
  cp -r "$KERNELS" "$T/hk"
  truncate -s 1G "$T/hk/cpu/HARDWARE.toml"
  timeout 20 "$PARITY" registry lint "$T/hk" > "$T/out" 2> "$T/err"
  rc=$?
  [ $rc -eq 2 ] || fail "a 1 GiB HARDWARE.toml: exit $rc, want 2 (124: it was read whole)"
  grep -q 'HARDWARE.toml: 1073741824 bytes: a TOML file may hold at most 16 MiB' "$T/err" "$T/out" \
    || fail "a 1 GiB HARDWARE.toml: $(cat "$T/err" "$T/out" | head -3)"
  rm -rf "$T/hk"
fi

# ---- reveal: a FIFO as the --dlopen library, rows x n over --max-bytes,
# and an --html report over the kernel's own script
mkfifo "$T/lib.fifo" 2> /dev/null && {
  timeout 20 "$PARITY" reveal --dlopen "$T/lib.fifo:dot8" --n 16 > /dev/null 2> "$T/err"
  rc=$?
  [ $rc -eq 2 ] || fail "reveal --dlopen FIFO: exit $rc, want 2 (124: it waited on the FIFO)"
  has err "lib.fifo: not a regular file" "reveal --dlopen FIFO"
}
# --space: a FIFO is refused (its path was parsed as tree text), and so is
# a space file over 1 MiB, before it is read
mkfifo "$T/space.fifo" 2> /dev/null && {
  timeout 20 "$PARITY" reveal --simulate '{ tree = "seq" }' --n 16 --space "$T/space.fifo" > /dev/null 2> "$T/err"
  rc=$?
  [ $rc -eq 2 ] || fail "--space FIFO: exit $rc, want 2"
  has err "--space $T/space.fifo: not a regular file (a FIFO, a directory or a device)" "--space FIFO"
}
truncate -s 2M "$T/big.space"
run 2 "--space of 2 MiB" reveal --simulate '{ tree = "seq" }' --n 16 --space "$T/big.space"
has err "--space $T/big.space: 2097152 bytes: a space file may hold at most 1 MiB" "--space of 2 MiB"
run 2 "reveal --rows x --n over --max-bytes" reveal --simulate '{ tree = "seq" }' --n 2048 --rows 20000 --max-bytes 256M
has err "reveal --rows 20000 at n = 2048 (about 48 bytes a term): needs 1966080000 bytes, more than the limit of 268435456" \
  "reveal --rows x --n"
printf '#!/bin/sh\nexit 1\n' > "$T/k.sh"
chmod +x "$T/k.sh"
cp "$T/k.sh" "$T/k.sh.orig"
run 2 "reveal --html over the --exec script" reveal --exec "$T/k.sh {in} {out}" --n 16 --html "$T/k.sh"
has err "--html $T/k.sh is the same file as --exec $T/k.sh" "reveal --html over the --exec script"
cmp -s "$T/k.sh" "$T/k.sh.orig" || fail "reveal --html replaced the kernel's script"

# a kernel that makes {out} a directory: refused, and reveal's temporary
# folder is removed all the same (it was left behind)
mkdir -p "$T/tmpd"
printf '#!/bin/sh\nmkdir "$2"\n' > "$T/kdir.sh"
chmod +x "$T/kdir.sh"
TMPDIR="$T/tmpd" "$PARITY" reveal --exec "$T/kdir.sh {in} {out}" --n 8 > /dev/null 2> "$T/err"
rc=$?
[ $rc -eq 2 ] || fail "{out} made a directory: exit $rc, want 2"
has err "out.safetensors: not a regular file (a directory)" "{out} made a directory"
[ -z "$(ls -A "$T/tmpd")" ] || fail "{out} made a directory: left behind: $(ls -A "$T/tmpd")"

# ---- outputs over what a command reads or writes, by class: the registry
# of ttbp, the --before of lkb, the traces a campaign writes or reads, a
# gate's traces, the ledger's SQLite side files
if [ -n "$KERNELS" ]; then
  R=$T/oreg
  cp -r "$KERNELS" "$R"
  cp "$R/cpu/HARDWARE.toml" "$T/hw.orig"
  L=$T/l.sqlite
  "$PARITY" campaign --class cpu --kernels "$R" --families silu_and_mul --ledger "$L" --quiet --no-power \
    --traces "$T/tr" > /dev/null 2>&1 || fail "the campaign that makes the ledger and the traces"
  run 2 "ttbp --json inside --kernels" ttbp --class cpu --kernels "$R" --ledger "$L" --json "$R/cpu/HARDWARE.toml"
  has err "is inside --kernels" "ttbp --json inside --kernels"
  run 2 "lkb --json inside --before" lkb --class cpu --kernels "$KERNELS" --before "$R" --json "$R/cpu/HARDWARE.toml"
  has err "is inside --before" "lkb --json inside --before"
  cmp -s "$R/cpu/HARDWARE.toml" "$T/hw.orig" || fail "a registry file was replaced"
  tr1=$(ls "$T/tr" | grep safetensors | head -1)
  cp "$T/tr/$tr1" "$T/tr1.orig"
  run 2 "campaign --json over an --against-traces trace" campaign --class cpu2 --kernels "$R" --families silu_and_mul \
    --no-ledger --quiet --no-power --against cpu --against-traces "$T/tr" --json "$T/tr/$tr1"
  has err "is inside --against-traces" "campaign --json over an --against-traces trace"
  run 2 "campaign --json among its own --traces" campaign --class cpu --kernels "$R" --families silu_and_mul \
    --no-ledger --quiet --no-power --traces "$T/tr" --json "$T/tr/$tr1"
  has err "is inside --traces" "campaign --json among its own --traces"
  cmp -s "$T/tr/$tr1" "$T/tr1.orig" || fail "a trace was replaced by a report"
  run 2 "gate --json among its --traces" gate --class cpu --before "$R" --after "$R" --families silu_and_mul \
    --no-bench --quiet --traces "$T/tr" --json "$T/tr/$tr1"
  has err "is inside --traces" "gate --json among its --traces"
  run 2 "campaign --json over the ledger's -wal" campaign --class cpu --kernels "$R" --families silu_and_mul \
    --ledger "$L" --quiet --no-power --json "$L-wal"
  has err "is the file SQLite keeps beside --ledger $L (its '-wal' file)" "campaign --json over the ledger's -wal"
  run 2 "ttbp --json over the ledger's -journal" ttbp --class cpu --kernels "$R" --ledger "$L" --json "$L-journal"
  has err "(its '-journal' file)" "ttbp --json over the ledger's -journal"
  [ -e "$L-journal" ] && fail "a -journal was written beside the ledger"

  # a time no kernel takes: finite, but sums over it would not be
  cp -r "$KERNELS" "$T/mreg"
  cat >> "$T/mreg/cpu/MEASUREMENTS.toml" <<'EOF2'

[[measurement]]
id = "huge-1"
point = "gemm.splitk"
utc = "2026-01-01T00:00:00Z"
rows = 16
median_s = 1.7976931348623157e308
min_s = 1.0
max_s = 2.0
EOF2
  run 2 "median_s = DBL_MAX" registry lint "$T/mreg"
  grep -q "'median_s' must be at most 1e+06" "$T/out" "$T/err" || fail "median_s = DBL_MAX: $(cat "$T/out" "$T/err" | head -3)"
  # bench reads the records it appends to before it times anything
  cp -r "$KERNELS" "$T/breg"
  printf '\n[[measurement]]\npoint = "gemm.seq"\n' >> "$T/breg/cpu/MEASUREMENTS.toml"
  run 2 "bench on bad records" bench --class cpu --point gemm.seq --rows 1 --repeats 2 --kernels "$T/breg" --no-ledger
  grep -q '^bench' "$T/out" && fail "bench timed a kernel before reading its bad records: $(cat "$T/out")"

  # an unknown key of a megabyte is named, not echoed whole
  cp -r "$KERNELS" "$T/kreg"
  { echo '[rates]'; head -c 1048576 /dev/zero | tr '\0' k; echo ' = 1'; } > "$T/kk"
  if grep -q '^\[rates\]' "$T/kreg/cpu/HARDWARE.toml"; then
    sed -i '/^\[rates\]/d' "$T/kreg/cpu/HARDWARE.toml"
    cat "$T/kk" >> "$T/kreg/cpu/HARDWARE.toml"
    "$PARITY" registry lint "$T/kreg" > "$T/out" 2>&1
    [ "$(wc -c < "$T/out")" -lt 4096 ] || fail "a 1 MB unknown key: lint said $(wc -c < "$T/out") bytes"
    grep -q "unknown key 'kkkk.*\.\.\.' in \[rates\]" "$T/out" || fail "a 1 MB unknown key: $(head -c 300 "$T/out")"
  fi

  # a registry file that cannot be read (a FIFO): the refusal names it
  cp -r "$KERNELS" "$T/freg"
  rm -f "$T/freg/cpu/common/FUSIONS.toml"
  if mkfifo "$T/freg/cpu/common/FUSIONS.toml" 2> /dev/null; then
    timeout 20 "$PARITY" campaign --class cpu --kernels "$T/freg" --no-ledger --quiet > "$T/out" 2> "$T/err"
    rc=$?
    [ $rc -eq 2 ] || fail "a FIFO FUSIONS.toml: exit $rc, want 2"
    has err "the first: $T/freg/cpu/common/FUSIONS.toml: not a regular file" "a FIFO FUSIONS.toml"
  fi

  # a class chain longer than 64: lkb reads the whole chain (its rates)
  C=$T/chain
  cp -r "$KERNELS" "$C"
  prev=cpu
  for i in $(seq 1 70); do
    mkdir -p "$C/c$i"
    printf 'class = "c%d"\nparent = "%s"\natoms = []\n' $i "$prev" > "$C/c$i/HARDWARE.toml"
    prev=c$i
  done
  run 0 "lkb at the end of a 70-class chain" lkb --class c70 --kernels "$C"
fi

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cli_hostile: all passed"
