#!/bin/sh
# cli_fit_blas.sh PARITY BLAS_DRIVE: `parity fit` against real CPU BLAS
# libraries (CTest label `blas`, opt-in: `scripts/test --blas`).  For each
# of netlib BLAS, OpenBLAS and BLIS (the Debian packages libblas-dev,
# libopenblas-dev, libblis-dev) and each of sdot, sgemv (N and T) and sgemm:
#   - Tier 1: the results with 1 and with 2 threads, at the fitting sizes and
#     at a larger one, compared byte for byte; a difference is printed as a
#     Tier 1 finding (a property of the library, not a failure of this test);
#   - fit on two sizes (n = 300, 14 rows; n = 517, 11 rows) with the
#     default space (no --space), then the fitted point through `parity
#     reduce` on fresh inputs (n = 389, 13 rows, another seed) must give
#     the library's bytes.  A fitted point that does not fails the test;
#     a routine with no point is a failure where MUST (below) lists it for
#     the core the library runs here, else listed (docs/fit.md "Real
#     kernels" says which and why).  The NAME_ROUTINE.space files beside
#     this script are regression data for `parity fit --space` (the
#     kernels' loops written by hand), not used here;
#   - NAME_ROUTINE.point, when present and its `core` line names the core
#     the library dispatches to here (OPENBLAS_VERBOSE, BLIS_ARCH_DEBUG):
#     the point derived from the kernel's source (the one line that is not a
#     comment, `core` or `check`) through `parity reduce` on the fresh inputs
#     its `check N ROWS SEED` lines name (lengths that are not multiples of
#     any block, other row counts) must give the library's bytes.
# Exit 77 (skip) when a library is not installed.
set -u
PARITY=$1
DRIVE=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
L=/usr/lib/x86_64-linux-gnu
[ -d "$L" ] || L=/usr/lib/$(gcc -dumpmachine 2>/dev/null)
LIBS="netlib:$L/blas/libblas.so.3 openblas:$L/openblas-pthread/libopenblas.so.0 blis:$L/blis-openmp/libblis.so.4"
for e in $LIBS; do
  [ -e "${e#*:}" ] || { echo "cli_fit_blas: ${e#*:} is not installed (scripts/setup --blas): skipped"; exit 77; }
done
fails=0
findings=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
y_bytes() { tail -c $(($2 * 4)) "$1" | od -An -tx1 | tr -d ' \n'; }
run() { # run THREADS LIB ROUTINE N ROWS SEED IN Y
  t=$1
  shift
  OPENBLAS_NUM_THREADS=$t BLIS_NUM_THREADS=$t OMP_NUM_THREADS=$t "$DRIVE" "$@"
}

for e in $LIBS; do
  name=${e%%:*} lib=${e#*:}
  # the core the library dispatches to on this machine: its kernels, hence
  # the points, depend on it
  case $name in
  openblas) core=$(OPENBLAS_VERBOSE=2 OPENBLAS_NUM_THREADS=1 "$DRIVE" "$lib" sdot 8 1 1 "$T/c.in" "$T/c.y" 2>&1 | sed -n 's/^Core: //p') ;;
  blis) core=$(BLIS_ARCH_DEBUG=1 BLIS_NUM_THREADS=1 "$DRIVE" "$lib" sdot 8 1 1 "$T/c.in" "$T/c.y" 2>&1 | sed -n "s/.*sub-configuration '\\(.*\\)'.*/\\1/p") ;;
  *) core=reference ;;
  esac
  echo "$name: core ${core:-unknown}"
  # the routines fit must find without --space on this core (the cores of
  # Debian 12's libraries this test has run on); netlib's everywhere
  case "$name:$core" in
  netlib:*) MUST="netlib:sdot netlib:sgemv_n netlib:sgemv_t netlib:sgemm" ;;
  openblas:Haswell) MUST="openblas:sgemm" ;;
  blis:generic) MUST="blis:sdot blis:sgemv_t blis:sgemm" ;;
  *) MUST="" ;;
  esac
  for rt in sdot sgemv_n sgemv_t sgemm; do
    tag="$name $rt"
    # Tier 1: thread count
    for sz in "300 14" "517 11" "3000 700"; do
      set -- $sz
      [ "$rt" = sdot ] && [ "$1" = 3000 ] && set -- 40000 4
      run 1 "$lib" $rt $1 $2 5 "$T/t.in" "$T/t1.y" && run 2 "$lib" $rt $1 $2 5 "$T/t.in" "$T/t2.y" ||
        { fail "$tag: the driver failed"; continue 2; }
      if ! cmp -s "$T/t1.y" "$T/t2.y"; then
        echo "TIER 1 FINDING: $tag: results with 1 and 2 threads differ (n = $1, $2 outputs)"
        findings=$((findings + 1))
      fi
    done
    # the point derived from the kernel's source (NAME_ROUTINE.point: `check N
    # ROWS SEED` lines, then the point) against the library on fresh inputs
    pf=$(dirname "$0")/${name}_$rt.point
    if [ -f "$pf" ] && ! grep '^core ' "$pf" | tr ' ' '\n' | grep -qx "$core"; then
      echo "skip: $tag: $(basename "$pf") holds for the cores $(sed -n 's/^core //p' "$pf"), not for ${core:-unknown}"
    elif [ -f "$pf" ]; then
      p=$(grep -v -e '^#' -e '^check ' -e '^core ' -e '^ *$' "$pf")
      grep '^check ' "$pf" | while read -r _ n rows seed; do
        run 1 "$lib" $rt $n $rows $seed "$T/pi" "$T/py" &&
          "$PARITY" reduce --numerics "$p" --in "$T/pi" --out "$T/pf" 2> "$T/err" || { echo "$n $rows $seed: $(cat "$T/err")"; continue; }
        [ "$(y_bytes "$T/py" $rows)" = "$(y_bytes "$T/pf" $rows)" ] || echo "$n $rows $seed: bytes differ"
      done > "$T/pbad"
      if [ -s "$T/pbad" ]; then
        fail "$tag: the point of $(basename "$pf") does not give the library's bytes at n rows seed = $(tr '\n' ';' < "$T/pbad")"
      else
        echo "ok: $tag: $(basename "$pf") at $(grep -c '^check ' "$pf") fresh sizes"
      fi
    fi
    # fit on two sizes, check on fresh inputs
    run 1 "$lib" $rt 300 14 1 "$T/i1" "$T/y1" && run 1 "$lib" $rt 517 11 2 "$T/i2" "$T/y2" &&
      run 1 "$lib" $rt 389 13 3 "$T/i3" "$T/y3" || { fail "$tag: the driver failed"; continue; }
    "$PARITY" fit --in "$T/i1" --ref "$T/y1" --in "$T/i2" --ref "$T/y2" > "$T/out" 2> "$T/err"
    rc=$?
    if [ $rc -ne 0 ]; then
      case " $MUST " in
      *" $name:$rt "*) fail "$tag: no point found (exit $rc; docs/fit.md \"Real kernels\"); closest: $(grep '^closest 1' "$T/out")" ;;
      *) echo "not found: $tag (exit $rc, core ${core:-unknown}; docs/fit.md \"Real kernels\"); closest: $(grep '^closest 1' "$T/out" | cut -c1-160)" ;;
      esac
      continue
    fi
    p=$(tail -n 1 "$T/out")
    "$PARITY" reduce --numerics "$p" --in "$T/i3" --out "$T/f3" 2> "$T/err" || { fail "$tag: reduce: $(cat "$T/err")"; continue; }
    if [ "$(y_bytes "$T/y3" 13)" = "$(y_bytes "$T/f3" 13)" ]; then
      echo "ok: $tag: $p"
    else
      fail "$tag: the fitted point $p does not reproduce fresh inputs"
    fi
  done
done
echo "cli_fit_blas: $fails failure(s), $findings Tier 1 finding(s)"
[ $fails -eq 0 ]
