#!/bin/sh
# cli_limits.sh PARITY ST_CRAFT KERNELS [long]: the limits on sizes taken
# from inputs (docs/limits.md): --max-bytes, --max-terms, --max-ops, --max-work, each fed
# at the limit (accepted) and one past it (refused, exit 2, naming the file,
# tensor, shape, limit and option, nothing written); tiny files whose shapes
# ask for minutes and gigabytes refused at once; the run-level lock of a
# --traces folder; concurrent campaigns appending to one ledger.  Expected
# numbers are worked out here by hand from the documented costs:
#   reduce: 64 bytes per row, + 8 per element of a (and b) when decoded at
#   once (--report, row classes, check --numerics, fit); terms rows x n
#   with a zero extent counted as 1; n <= --max-ops; work rows x operations;
#   seq over n terms: one +0 and n additions, n + 1 operations;
#   split(k, seq, seq) at n = 1: the part holding t0 is 2 operations, the
#   other k - 1 parts one +0 each, the combinator +0 and k additions: 2k + 2.
# With "long", also the default operation limit fed for real (about 7 s).
set -u
PARITY=$1
CRAFT=$2
KERNELS=$3
MODE=${4:-}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# run WANT_RC NAME ARGS...: stdout in $T/out, stderr in $T/err; a guard of 120 s
# against a hang (the slowest accepted case takes ~6 s alone, several times
# that on a loaded machine running the suite in parallel).
LIMIT=""
command -v timeout > /dev/null && LIMIT="timeout 120"
run() {
  want=$1 name=$2
  shift 2
  $LIMIT "$PARITY" "$@" > "$T/out" 2> "$T/err"
  rc=$?
  [ $rc -eq "$want" ] || fail "$name: exit $rc, want $want (stderr: $(head -c 400 "$T/err"))"
}
has() { grep -q -F -- "$2" "$T/$1" || fail "$3: '$2' not in $1: $(head -c 400 "$T/$1")"; }
empty_a() { "$CRAFT" raw "$T/$1" "{\"a\":{\"dtype\":\"F32\",\"shape\":[$2],\"data_offsets\":[0,0]}}" ""; }
P='{ acc = "fp32" }'

# ---- tiny files with huge shapes: refused at once ------------------------
# [0, 2^26]: 80 bytes that expanded a 2^26-term tree (minutes, 2.5 GB)
empty_a z1.st 0,67108864
run 2 "[0, 2^26]" reduce --numerics "$P" --in "$T/z1.st" --out "$T/y1.st"
has err "$T/z1.st: tensor 'a' of shape [0, 67108864]: n = 67108864 terms per row is more than the limit of 8388608 operations of an expanded tree (raise it with --max-ops)" "[0, 2^26]"
[ ! -e "$T/y1.st" ] || fail "[0, 2^26]: an output was written"
# [2^31, 0]: 2^31 rows x 64 bytes = 2^37 (it headed for 16 GiB and an 8 GiB output)
empty_a z2.st 2147483648,0
run 2 "[2^31, 0]" reduce --numerics "$P" --in "$T/z2.st" --out "$T/y2.st"
has err "$T/z2.st: tensor 'a' of shape [2147483648, 0]: needs 137438953472 bytes, more than the limit of 8589934592 (raise it with --max-bytes)" "[2^31, 0]"
[ ! -e "$T/y2.st" ] || fail "[2^31, 0]: an output was written"
# [2^40, 0]: was exit 3 "out of memory"; 2^40 rows x 1 > 2^31 terms
empty_a z3.st 1099511627776,0
run 2 "[2^40, 0]" reduce --numerics "$P" --in "$T/z3.st" --out "$T/y3.st"
has err "$T/z3.st: tensor 'a' of shape [1099511627776, 0]: 1099511627776 rows x 0 terms (a zero extent counts as 1) is more than the limit of 2147483648 terms (raise it with --max-terms)" "[2^40, 0]"
# [2^32, 2^32]: the element count overflows 64 bits
empty_a z4.st 4294967296,4294967296
run 2 "[2^32, 2^32]" reduce --numerics "$P" --in "$T/z4.st" --out "$T/y4.st"
has err "overflows 64 bits" "[2^32, 2^32]"
# check --numerics and fit read IN the same way
run 2 "check --numerics [2^31, 0]" check --numerics "$P" --in "$T/z2.st" --out "$T/nosuch.st"
has err "tensor 'a' of shape [2147483648, 0]: needs 137438953472 bytes" "check --numerics [2^31, 0]"
run 2 "fit [2^31, 0]" fit --in "$T/z2.st" --ref "$T/nosuch.st"
has err "tensor 'a' of shape [2147483648, 0]: needs 137438953472 bytes" "fit [2^31, 0]"

# ---- zero extents cost nothing: [0, n] is an empty y, [rows, 0] rows of +0
empty_a e1.st 0,4
run 0 "[0, 4]" reduce --numerics "$P" --in "$T/e1.st" --out "$T/ye1.st"
run 0 "inspect [0]" inspect "$T/ye1.st"
has out "tensor y: F32 [0]" "[0, 4]"

# ---- --max-bytes: 1000 rows of n = 0 cost 64000 bytes --------------------
empty_a e2.st 1000,0
run 0 "--max-bytes 64000" reduce --numerics "$P" --in "$T/e2.st" --out "$T/ye2.st" --max-bytes 64000
run 0 "inspect [1000]" inspect "$T/ye2.st"
has out "tensor y: F32 [1000]" "--max-bytes 64000"
run 2 "--max-bytes 63999" --max-bytes 63999 reduce --numerics "$P" --in "$T/e2.st" --out "$T/ye2b.st"
has err "$T/e2.st: tensor 'a' of shape [1000, 0]: needs 64000 bytes, more than the limit of 63999 (raise it with --max-bytes)" "--max-bytes 63999"
[ ! -e "$T/ye2b.st" ] || fail "--max-bytes 63999: an output was written"
# [4, 3] with a and b, streamed: 64 x 4 = 256 bytes; with --report (every
# element decoded at once) 8 x 24 + 256 = 448; check --numerics decodes
# every element too
"$CRAFT" rand "$T/r.st" F32 4 3 7 F32
run 0 "--max-bytes 256" reduce --numerics "$P" --in "$T/r.st" --out "$T/yr.st" --max-bytes=256
run 2 "--max-bytes 255" reduce --numerics "$P" --in "$T/r.st" --out "$T/yr2.st" --max-bytes 255
has err "tensor 'a' of shape [4, 3]: needs 256 bytes, more than the limit of 255" "--max-bytes 255"
# --report: every row decoded (448, as check --numerics) and 4096 bytes of
# report per row: 448 + 4 x 4096 = 16832
run 0 "--report --max-bytes 16832" reduce --numerics "$P" --in "$T/r.st" --out "$T/yr5.st" --report "$T/yr5.json" --max-bytes=16832
run 2 "--report --max-bytes 16831" reduce --numerics "$P" --in "$T/r.st" --out "$T/yr6.st" --report "$T/yr6.json" --max-bytes 16831
has err "tensor 'a' of shape [4, 3] with its --report: needs 16832 bytes, more than the limit of 16831" "--report --max-bytes 16831"
[ ! -e "$T/yr6.json" ] || fail "--report --max-bytes 16831: the report was written"
run 0 "check --numerics --max-bytes 448" check --numerics "$P" --in "$T/r.st" --out "$T/yr.st" --max-bytes 448
run 2 "check --numerics --max-bytes 447" check --numerics "$P" --in "$T/r.st" --out "$T/yr.st" --max-bytes 447
has err "tensor 'a' of shape [4, 3]: needs 448 bytes, more than the limit of 447" "check --numerics --max-bytes 447"
# suffixes: 1K = 1024
run 0 "--max-bytes 1K" reduce --numerics "$P" --in "$T/r.st" --out "$T/yr3.st" --max-bytes 1K
run 2 "--max-bytes 0" reduce --numerics "$P" --in "$T/r.st" --out "$T/yr4.st" --max-bytes 0
has err "parity: --max-bytes: '0' is not a size" "--max-bytes 0"
run 2 "--max-bytes 1X" reduce --numerics "$P" --in "$T/r.st" --out "$T/yr4.st" --max-bytes 1X
has err "parity: --max-bytes: '1X' is not a size" "--max-bytes 1X"
# at most 2^62: 4194304T is 2^22 x 2^40
run 0 "--max-bytes 4194304T" tree show seq --n 2 --max-bytes 4194304T
run 2 "--max-bytes 4194305T" tree show seq --n 2 --max-bytes 4194305T
has err "parity: --max-bytes: '4194305T' is not a size" "--max-bytes 4194305T"
run 2 "--max-work 18446744073709551616" tree show seq --n 2 --max-work 18446744073709551616
run 2 "--max-ops without a value" tree show seq --n 2 --max-ops
has err "parity: option --max-ops needs a value" "--max-ops without a value"

# ---- --max-terms: rows x n, a zero extent counted as 1 --------------------
run 0 "--max-terms 12" reduce --numerics "$P" --in "$T/r.st" --out "$T/yt.st" --max-terms 12
run 2 "--max-terms 11" reduce --numerics "$P" --in "$T/r.st" --out "$T/yt2.st" --max-terms 11
has err "$T/r.st: tensor 'a' of shape [4, 3]: 4 rows x 3 terms (a zero extent counts as 1) is more than the limit of 11 terms (raise it with --max-terms)" "--max-terms 11"
empty_a e3.st 0,5
run 0 "[0, 5] --max-terms 5" reduce --numerics "$P" --in "$T/e3.st" --out "$T/ye3.st" --max-terms 5
run 2 "[0, 5] --max-terms 4" reduce --numerics "$P" --in "$T/e3.st" --out "$T/ye3b.st" --max-terms 4
has err "0 rows x 5 terms (a zero extent counts as 1) is more than the limit of 4 terms" "[0, 5] --max-terms 4"
empty_a e4.st 1024,0
run 0 "[1024, 0] --max-terms 1K" reduce --numerics "$P" --in "$T/e4.st" --out "$T/ye4.st" --max-terms 1K
empty_a e5.st 1025,0
run 2 "[1025, 0] --max-terms 1K" reduce --numerics "$P" --in "$T/e5.st" --out "$T/ye5.st" --max-terms 1K
has err "1025 rows x 0 terms (a zero extent counts as 1) is more than the limit of 1024 terms" "[1025, 0] --max-terms 1K"

# ---- --max-ops: seq over n terms is n + 1 operations ----------------------
run 0 "reduce seq n = 3, --max-ops 4" reduce --numerics "$P" --in "$T/r.st" --out "$T/yo.st" --max-ops 4
run 2 "reduce seq n = 3, --max-ops 3" reduce --numerics "$P" --in "$T/r.st" --out "$T/yo2.st" --max-ops 3
has err "--numerics: key 'tree': the tree expands to more than 3 operations at n = 3 (raise the limit with --max-ops)" "reduce --max-ops 3"
run 2 "reduce n = 3, --max-ops 2" reduce --numerics "$P" --in "$T/r.st" --out "$T/yo3.st" --max-ops 2
has err "tensor 'a' of shape [4, 3]: n = 3 terms per row is more than the limit of 2 operations of an expanded tree" "reduce --max-ops 2"
run 0 "tree show seq --n 1000 --max-ops 1001" tree show seq --n 1000 --max-ops 1001
run 2 "tree show seq --n 1000 --max-ops 1000" tree show seq --n 1000 --max-ops 1000
has err "key 'tree': the tree expands to more than 1000 operations at n = 1000" "seq --max-ops 1000"
run 0 "split(499) --max-ops 1000" tree show 'split(499, seq, seq)' --n 1 --max-ops 1000
run 2 "split(500) --max-ops 1000" tree show 'split(500, seq, seq)' --n 1 --max-ops 1000
has err "the tree expands to more than 1000 operations at n = 1" "split(500) --max-ops 1000"
# the default, 2^23: split(2^22, seq, seq) at n = 1 is 2^23 + 2
run 2 "split(2^22) at the default" tree show 'split(4194304, seq, seq)' --n 1
has err "key 'tree': the tree expands to more than 8388608 operations at n = 1 (raise the limit with --max-ops)" "split(2^22)"
if [ "$MODE" = long ]; then
  # the worst tree accepted at the default: 2 x 4194303 + 2 = 2^23 operations
  run 0 "split(2^22 - 1) at the default" tree show 'split(4194303, seq, seq)' --n 1
  [ "$(grep -o '(+0)' "$T/out" | wc -l)" -eq 4194302 ] || fail "split(2^22 - 1): not 4194302 empty parts"
fi

# ---- --max-work: rows x operations; [4, 3] under seq is 4 x 4 = 16 -------
run 0 "--max-work 16" reduce --numerics "$P" --in "$T/r.st" --out "$T/yw.st" --max-work 16
run 2 "--max-work 15" reduce --numerics "$P" --in "$T/r.st" --out "$T/yw2.st" --max-work 15
has err "$T/r.st: tensor 'a' of shape [4, 3]: 4 rows x 4 operations of the point expanded at n = 3 is more than the limit of 15 (raise it with --max-work)" "--max-work 15"
[ ! -e "$T/yw2.st" ] || fail "--max-work 15: an output was written"
run 2 "check --numerics --max-work 15" check --numerics "$P" --in "$T/r.st" --out "$T/yw.st" --max-work 15
has err "4 rows x 4 operations of the point expanded at n = 3 is more than the limit of 15" "check --numerics --max-work 15"
# fit: a candidate whose evaluation over a pair's rows is over the limit is
# skipped and counted (seq: 4 x 4 = 16; pairwise at n = 3: 4 x 5 = 20)
"$PARITY" reduce --numerics "$P" --in "$T/r.st" --out "$T/yf.st" 2> /dev/null
run 0 "fit --max-work 16" fit --in "$T/r.st" --ref "$T/yf.st" --space 'seq; pairwise' --max-work 16 --no-classes
has err "parity fit: 5 candidates skipped: a pair's rows x the operations of their expansion are more than --max-work (16; raise it with --max-work)" "fit --max-work 16"
run 1 "fit --max-work 15" fit --in "$T/r.st" --ref "$T/yf.st" --space 'seq; pairwise' --max-work 15 --no-classes
has err "parity fit: 10 candidates skipped" "fit --max-work 15"
has out "no candidate could be evaluated" "fit --max-work 15"
# the default, 2^32: split(2^21 - 1, seq, seq) at n = 1 is 2^22 operations,
# over 1025 rows 2^32 + 2^22 (a few KB of input, hours of work)
"$CRAFT" rand "$T/w.st" F32 1025 1 3
run 2 "2^32 + 2^22 evaluations" reduce --numerics '{ acc = "fp32", tree = "split(2097151, seq, seq)" }' --in "$T/w.st" --out "$T/yw3.st"
has err "tensor 'a' of shape [1025, 1]: 1025 rows x 4194304 operations of the point expanded at n = 1 is more than the limit of 4294967296 (raise it with --max-work)" "2^32 + 2^22 evaluations"

# ---- gen and ref: the inputs at a shape, and the reference's arrays ------
# gemm.splitk at M=4,N=4,K=8: a and b BF16 [4, 8], each 32 x (8 + 2) = 320
S=M=4,N=4,K=8
run 0 "gen --max-bytes 640" gen gemm.splitk --kernels "$KERNELS" --shape $S --seed 1 -o "$T/g.st" --max-bytes 640
run 2 "gen --max-bytes 639" gen gemm.splitk --kernels "$KERNELS" --shape $S --seed 1 -o "$T/g2.st" --max-bytes 639
has err "gemm.splitk: the inputs a [4, 8], b [4, 8] (decoded, 8 bytes per element, and encoded): needs 640 bytes, more than the limit of 639 (raise it with --max-bytes)" "gen --max-bytes 639"
[ ! -e "$T/g2.st" ] || fail "gen --max-bytes 639: an output was written"
run 2 "ref --max-bytes 639" ref gemm.splitk --kernels "$KERNELS" --in "$T/g.st" --out "$T/gr.st" --max-bytes 639
has err "needs 640 bytes, more than the limit of 639" "ref --max-bytes 639"
# M = N = 2^20, K = 1: 4 MiB of inputs whose reference is 2^40 values
run 0 "gen M = N = 2^20, K = 1" gen gemm.splitk --kernels "$KERNELS" --shape M=1048576,N=1048576,K=1 --seed 1 -o "$T/gb.st"
run 2 "ref M = N = 2^20, K = 1" ref gemm.splitk --kernels "$KERNELS" --in "$T/gb.st" --out "$T/gbr.st"
has err "gemm.splitk: at this shape an array of 1099511627776 values (8 bytes each) is more than the limit of 8589934592 bytes (raise it with --max-bytes)" "ref 2^40"
[ ! -e "$T/gbr.st" ] || fail "ref 2^40: an output was written"

# ---- diff: a count per index of every axis, 8 bytes + 1 each ------------
"$CRAFT" raw "$T/d1.st" '{"y":{"dtype":"F32","shape":[0,1099511627776],"data_offsets":[0,0]}}' ""
cp "$T/d1.st" "$T/d2.st"
run 2 "diff [0, 2^40]" diff "$T/d1.st" "$T/d2.st"
has err "tensor 'y': shape [0, 1099511627776]: the per-index counts of its axes: needs 9895604649984 bytes, more than the limit of 8589934592 (raise it with --max-bytes)" "diff [0, 2^40]"
"$CRAFT" raw "$T/d3.st" '{"y":{"dtype":"F32","shape":[0,1000],"data_offsets":[0,0]}}' ""
cp "$T/d3.st" "$T/d4.st"
run 0 "diff [0, 1000] --max-bytes 9000" diff "$T/d3.st" "$T/d4.st" --max-bytes 9000
run 2 "diff [0, 1000] --max-bytes 8999" diff "$T/d3.st" "$T/d4.st" --max-bytes 8999
has err "needs 9000 bytes, more than the limit of 8999" "diff --max-bytes 8999"

# ---- transcript and tier3 read their files whole: 32 and 64 bytes a byte --
printf '[1, 2, 3]\n[4, 5]\n' > "$T/c.jsonl"   # 17 bytes: 544
cp "$T/c.jsonl" "$T/d.jsonl"
run 0 "transcript --max-bytes 544" transcript "$T/c.jsonl" "$T/d.jsonl" --max-bytes 544
run 2 "transcript --max-bytes 543" transcript "$T/c.jsonl" "$T/d.jsonl" --max-bytes 543
has err "$T/c.jsonl: a file of 17 bytes, read whole (lines of token ids, up to 32 bytes of memory per byte): needs 544 bytes, more than the limit of 543 (raise it with --max-bytes)" "transcript --max-bytes 543"
printf '{"acc": 0.5}\n' > "$T/m.json"            # 13 bytes: 832
printf '{"acc": {"min": 0.4}}\n' > "$T/b.json"   # 22 bytes: 1408
run 0 "tier3 --max-bytes 1408" tier3 "$T/m.json" "$T/b.json" --max-bytes 1408
run 2 "tier3 --max-bytes 1407" tier3 "$T/m.json" "$T/b.json" --max-bytes 1407
has err "$T/b.json: a file of 22 bytes, read whole (a JSON tree, up to 64 bytes of memory per byte): needs 1408 bytes, more than the limit of 1407" "tier3 --max-bytes 1407"

# ---- the lock of a --traces folder ---------------------------------------
camp() { "$PARITY" campaign --class cpu --kernels "$KERNELS" --shapes small --families silu_and_mul --quiet "$@"; }
if command -v flock > /dev/null; then
  mkdir "$T/tr"
  # another run holds DIR/.parity.lock (flock(1), writing its pid there as
  # parity does) while a campaign is started on DIR: exit 2, its pid named
  flock "$T/tr/.parity.lock" sh -c 'echo $PPID > "$1"; echo $PPID > "$2"; shift 2; "$@"' _ \
    "$T/tr/.parity.lock" "$T/holder" "$PARITY" campaign --class cpu --kernels "$KERNELS" --shapes small \
    --families silu_and_mul --quiet --no-ledger --traces "$T/tr" > "$T/out" 2> "$T/err"
  rc=$?
  [ $rc -eq 2 ] || fail "a locked --traces: exit $rc, want 2 ($(cat "$T/err"))"
  has err "parity campaign: --traces $T/tr is being written by another run (pid $(cat "$T/holder"), holding $T/tr/.parity.lock); nothing written" "a locked --traces"
  [ -z "$(ls "$T/tr")" ] || fail "a locked --traces: traces were written: $(ls "$T/tr")"
  # once it is released the same campaign runs and writes its traces
  camp --no-ledger --traces "$T/tr" > "$T/out" 2> "$T/err" || fail "an unlocked --traces: exit $? ($(cat "$T/err"))"
  [ "$(ls "$T/tr" | grep -c '\.safetensors$')" -gt 0 ] || fail "an unlocked --traces: no traces"
else
  echo "cli_limits: flock(1) not found: the --traces lock is not tested"
fi

# ---- one ledger, four campaigns at once: SQLite's transactions suffice ---
if command -v sqlite3 > /dev/null; then
  camp --ledger "$T/one.sqlite" > /dev/null 2>&1
  pts=$(sqlite3 "$T/one.sqlite" "SELECT count(*) FROM point")
  chk=$(sqlite3 "$T/one.sqlite" "SELECT count(*) FROM check_result")
  [ "$pts" -gt 0 ] || fail "one campaign recorded no points"
  for i in 1 2 3 4; do camp --ledger "$T/four.sqlite" > /dev/null 2>&1 & done
  wait
  q() { sqlite3 "$T/four.sqlite" "$1"; }
  [ "$(q "SELECT count(*) FROM run WHERE complete = 1")" = 4 ] || fail "four campaigns: not 4 complete runs: $(q "SELECT id, complete FROM run")"
  [ "$(q "SELECT count(DISTINCT run_id) FROM point")" = 4 ] || fail "four campaigns: points not in 4 runs"
  [ "$(q "SELECT count(*) FROM run r WHERE (SELECT count(*) FROM point p WHERE p.run_id = r.id) = $pts AND r.points = $pts")" = 4 ] \
    || fail "four campaigns: a run without its $pts points: $(q "SELECT run_id, count(*) FROM point GROUP BY run_id")"
  [ "$(q "SELECT count(*) FROM check_result")" = $((4 * chk)) ] || fail "four campaigns: not 4 x $chk check results"
fi

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cli_limits: all passed"
