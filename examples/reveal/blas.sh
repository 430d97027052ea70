#!/bin/sh
# blas.sh LIB IN OUT: a shell wrapper that serves `parity reveal` probes with
# the sdot of a BLAS library (or, with BLAS_ROUTINE=sgemv_t, the outputs of
# one sgemv T call: blas_probe.c), built beside this script or on PATH, one
# thread, e.g.
#   parity reveal --exec 'examples/reveal/blas.sh /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0 {in} {out}' --n 1024
set -eu
lib=$1
shift
probe=${BLAS_PROBE:-$(dirname "$0")/blas_probe}
export BLAS_LIB="$lib" OPENBLAS_NUM_THREADS=1 BLIS_NUM_THREADS=1 OMP_NUM_THREADS=1
exec "$probe" "$@"
