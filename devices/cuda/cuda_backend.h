/* cuda_backend.h: what the CUDA backend offers beyond devices/device.h:
 * the device's description as fields, and traces of its runs written
 * through the C capture API (traces/capture.h) with that device metadata,
 * so `parity check` can verify them on any machine.  Both exist in a build
 * without CUDA too (then they report "built without CUDA"). */
#ifndef PARITY_CUDA_BACKEND_H
#define PARITY_CUDA_BACKEND_H

#include <stddef.h>

#include "device.h"

typedef struct dev_cuda_info {
    int available;          /* 1 if a GPU is usable */
    char reason[256];       /* why not: "no GPU (...)", "built without CUDA" */
    char sku[256];          /* cudaDeviceProp.name, "NVIDIA H200" */
    int sm_count;
    int cc_major, cc_minor;
    char class_name[16];    /* "sm90", or "" for a compute capability without a class */
    char driver[32];        /* the CUDA version the driver supports, "13.0" */
    char runtime[32];       /* the CUDA runtime linked in, "13.0" */
    char nvcc[32];          /* the nvcc that compiled the kernels, "13.0.88" */
    long long memory_bytes;
} dev_cuda_info;

/* Fills *info (never fails: without a GPU, available = 0 and the reason). */
void dev_cuda_info_get(dev_cuda_info *info);

/* What a trace records about one run besides its outputs. */
typedef struct dev_cuda_trace {
    const char *point;          /* NULL: spec->point */
    unsigned long long run;     /* run index */
    int has_seed;               /* inputs from the generator: seed and dist */
    unsigned long long seed;
    const char *dist;
    const st_file *inputs;      /* or the inputs themselves (stored as in.NAME); may be NULL with a seed */
    const char *batch;          /* "rows=0..15", "perm=3,1,0,2"; NULL: every row in order */
    const char *created;        /* RFC 3339 UTC, NULL: now */
} dev_cuda_trace;

/* Writes the trace of a run of `spec` (its outputs in `out`, as run()
 * produced them with opts) to path through the capture API: family, point,
 * class, kernel, the shape and params from the spec, mode and run, the
 * device (sku, sm_count, driver, nvcc, host, cc, runtime).  Atomic: on
 * failure nothing is written. */
nx_status dev_cuda_write_trace(const char *path, const fam_spec *spec, const st_file *out, const dev_opts *opts,
                               const dev_cuda_trace *t, nx_err *err);

#endif
