#!/bin/sh
# python.sh PARITY LIBPARITY: the Python package (python/parity) against the
# built libparity.so and the CLI, with Debian's python3-numpy, python3-torch
# and python3-pytest (CTest `python`).  Exit 77 (a skip) when they are not
# installed: scripts/setup installs them.
set -eu
PARITY_CLI="$1"
PARITY_LIB="$2"
shift 2
export PARITY_CLI PARITY_LIB
PY=/usr/bin/python3
SRC="$(cd "$(dirname "$0")/.." && pwd)"
# A library built with AddressSanitizer cannot be loaded into an
# uninstrumented interpreter (the ASan runtime must come first): the C code
# is checked under the sanitizers by the C tests; the Python layer here.
if ldd "$PARITY_LIB" 2>/dev/null | grep -q 'libasan'; then
  echo "python: skipped: $PARITY_LIB is built with AddressSanitizer (scripts/test --sanitize); run the default build"
  exit 77
fi
if ! "$PY" -c "import numpy, torch, pytest" 2>/dev/null; then
  echo "python: skipped: $PY lacks numpy, torch or pytest (apt-get install python3-numpy python3-torch python3-pytest)"
  exit 77
fi
# at most two threads per torch op: the suite runs beside the rest of ctest -j
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
cd "$SRC/python"
exec "$PY" -m pytest -q -p no:cacheprovider tests "$@"
