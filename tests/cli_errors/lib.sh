# lib.sh: the harness of the input-error tables (tests/cli_errors/*.sh), one
# script per command, each sourcing this file:
#
#   . "$(dirname "$0")/lib.sh" "$@"     # PARITY ST_CRAFT KERNELS
#   errors <<'EOF'
#   # fragment the message must contain | the arguments after `parity`
#   '--limit': 'x' is not an integer     | inspect $T/good.st --limit x
#   EOF
#   helps <<'EOF'
#   inspect --help | --limit
#   EOF
#   finish
#
# A row of `errors` passes when the command exits with status 2 (bad input;
# a signal or 3 fails it), its standard error contains the fragment (its
# standard output when the fragment starts with "stdout:"), and nothing was
# written: the tree under $T (inputs, and $W where outputs are asked for)
# lists the same paths and sizes before and after, so an output the row
# names does not exist afterwards and no temporary (.NAME.tmp.*) is left.
# The arguments are expanded by the shell (eval): quote as on a command
# line; $T, $W and $K (the sample registry) may be used, in the fragment
# too.  A row runs under a 20 s limit.  The harness's own variables are
# lower case (frag, args, ...); a table script's are upper case.
#
# A row of `helps` runs `parity ARGS`: exit 0, "usage: parity" on standard
# output, each listed option in it, nothing on standard error.
set -u
PARITY=$1
CRAFT=${2:-}
K=${3:-}
T=$(mktemp -d)
_scr=$(mktemp -d)
trap 'rm -rf "$T" "$_scr"' EXIT
W=$T/w
mkdir "$W"
fails=0
nrows=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Every path under $T with its size (directories as "d"): what a failing
# command must leave as it found it.
snapshot() { (cd "$T" && find . -printf '%p %s %y\n' | LC_ALL=C sort) }

# subst TEXT: TEXT with $T, $W and $K replaced by their values (for
# fragments, which are compared literally).
subst() {
  printf '%s' "$1" | sed -e "s|\\\$W|$W|g" -e "s|\\\$T|$T|g" -e "s|\\\$K|$K|g"
}

limit() { if command -v timeout > /dev/null; then timeout 20 "$@"; else "$@"; fi }

# row FRAGMENT ARGS: one row of a table (the table's loop is `errors`).
row() {
  frag=$(subst "$1") args=$2
  nrows=$((nrows + 1))
  stream=err
  case $frag in stdout:*) stream=out frag=${frag#stdout:} ;; esac
  snapshot > "$_scr/before"
  eval "set -- $args"
  limit "$PARITY" "$@" < /dev/null > "$_scr/out" 2> "$_scr/err"
  rc=$?
  what="parity $args"
  [ $rc -eq 2 ] || fail "$what: exit $rc, want 2 (stderr: $(head -c 300 "$_scr/err"))"
  grep -q -F -- "$frag" "$_scr/$stream" || fail "$what: '$frag' not in std$stream: $(head -c 300 "$_scr/$stream")"
  snapshot > "$_scr/after"
  if ! cmp -s "$_scr/before" "$_scr/after"; then
    fail "$what: wrote something: $(diff "$_scr/before" "$_scr/after" | grep '^[<>]' | head -5 | tr '\n' ' ')"
  fi
  left=$(find "$T" -name '.*.tmp.*' | head -3)
  [ -z "$left" ] || fail "$what: temporaries left behind: $left"
}

# Reads a table "FRAGMENT | ARGS" from standard input: one row per line,
# split at its first '|' (a fragment holds none); blank lines and lines
# starting with # are skipped.
errors() {
  while IFS= read -r line; do
    case $line in '' | '#'*) continue ;; esac
    frag=${line%%|*}
    args=${line#*|}
    frag=$(printf '%s' "$frag" | sed -e 's/[[:space:]]*$//')
    row "$frag" "$args"
  done
}

# Reads a table "ARGS | OPTION..." from standard input.
helps() {
  while IFS= read -r line; do
    case $line in '' | '#'*) continue ;; esac
    args=${line%%|*} opts=${line#*|}
    nrows=$((nrows + 1))
    eval "set -- $args"
    "$PARITY" "$@" < /dev/null > "$_scr/out" 2> "$_scr/err"
    rc=$?
    [ $rc -eq 0 ] || fail "parity $args: exit $rc, want 0"
    grep -q '^usage: parity' "$_scr/out" || fail "parity $args: no 'usage: parity' on stdout"
    [ ! -s "$_scr/err" ] || fail "parity $args: wrote to stderr: $(head -c 200 "$_scr/err")"
    for o in $opts; do
      grep -q -F -- "$o" "$_scr/out" || fail "parity $args: option '$o' not in the usage text"
    done
  done
}

finish() {
  [ $fails -eq 0 ] || { echo "$fails of $nrows rows failed"; exit 1; }
  echo "$nrows rows passed"
  exit 0
}
