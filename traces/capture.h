/* capture.h: the C capture API.  A user's host code (C, C++ or CUDA host
 * code) calls it after a kernel launch, once the outputs are back in host
 * memory, to write a trace (docs/traces.md) that `parity check` reads
 * anywhere.
 *
 *   parity_capture *cap = parity_capture_begin("y.safetensors", "gemm",
 *                                              "splitk4", "sm90", "my_gemm_v2");
 *   parity_capture_device(cap, "sku", "NVIDIA H100 80GB HBM3");
 *   parity_capture_shape(cap, "M=16,N=4096,K=4096");
 *   parity_capture_seed(cap, 42, "normal");
 *   parity_capture_batch(cap, "rows=0..15");
 *   cudaMemcpy(host_y, dev_y, bytes, cudaMemcpyDeviceToHost);
 *   parity_capture_output(cap, "y", "BF16", 2, shape, host_y);
 *   nx_err err;
 *   if (parity_capture_end(cap, &err) != NX_OK) fprintf(stderr, "%s\n", err.msg);
 *
 * Errors are sticky: every call returns its own status, the first error is
 * kept, and parity_capture_end reports it and writes nothing, so a caller
 * may check once at the end.  Data is copied at the call; the file is
 * written atomically at parity_capture_end (never half a trace).
 *
 * Link: only libparity_traces (see docs/traces.md for the line).  This
 * header compiles as C and as C++ (C++11 and later). */
#ifndef PARITY_CAPTURE_H
#define PARITY_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "nx_error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_capture parity_capture;

/* Starts a capture that will write path.  family, point and class name the
 * family point and hardware class ([A-Za-z0-9_-]+); kernel is the kernel
 * id.  Returns NULL only when memory is exhausted (every other call,
 * parity_capture_end included, accepts NULL and reports that).  The device's
 * "host" member is set to this machine's host name; mode is "eager" and run
 * 0 until set. */
parity_capture *parity_capture_begin(const char *path, const char *family,
                                     const char *point, const char *class_name,
                                     const char *kernel);

/* A member of the "device" object: known string members are sku, driver,
 * nvcc, host, cpu; known integer members sm_count, threads.  Setting a
 * member again replaces it. */
nx_status parity_capture_device(parity_capture *cap, const char *key,
                                const char *value);
nx_status parity_capture_device_int(parity_capture *cap, const char *key,
                                    long long value);

/* The whole shape, "M=16,N=4096,K=4096" (replaces any dims set before), or
 * one dimension appended. */
nx_status parity_capture_shape(parity_capture *cap, const char *shape);
nx_status parity_capture_dim(parity_capture *cap, const char *name,
                             long long value);

/* The params, "alpha=1,out=bf16" (replaces), or one appended. */
nx_status parity_capture_params(parity_capture *cap, const char *params);
nx_status parity_capture_param(parity_capture *cap, const char *name,
                               const char *value);

/* The generator seed and distribution that made the inputs.  Needed unless
 * every input is captured with parity_capture_input. */
nx_status parity_capture_seed(parity_capture *cap, unsigned long long seed,
                              const char *dist);

/* "eager" or "graphed". */
nx_status parity_capture_mode(parity_capture *cap, const char *mode);
nx_status parity_capture_run(parity_capture *cap, unsigned long long run);

/* The batch layout: "rows=0..15", "rows=5", "perm=3,1,0,2" (grammar in
 * docs/traces.md), or rows first .. first+count-1 in order. */
nx_status parity_capture_batch(parity_capture *cap, const char *batch);
nx_status parity_capture_batch_rows(parity_capture *cap, long long first,
                                    long long count);

/* RFC 3339 UTC time to record instead of the time of parity_capture_end
 * (for reproducible files). */
nx_status parity_capture_created(parity_capture *cap, const char *rfc3339);

/* An extension metadata key, which must start with "x.". */
nx_status parity_capture_meta(parity_capture *cap, const char *key,
                              const char *value);

/* Copies an output tensor from host memory: ndim extents in shape
 * (row-major), elements in dtype's little-endian layout.  dtype is a
 * safetensors name ("BF16", "F8_E4M3", "F32", "I32") or a docs/numerics.md
 * format name ("bf16", "e4m3", "fp32").  A name already captured is an
 * error. */
nx_status parity_capture_output(parity_capture *cap, const char *name,
                                const char *dtype, int ndim,
                                const int64_t *shape, const void *host_ptr);
/* The same for an input; it is stored as "in.NAME". */
nx_status parity_capture_input(parity_capture *cap, const char *name,
                               const char *dtype, int ndim,
                               const int64_t *shape, const void *host_ptr);

/* Validates and writes the trace atomically, then frees cap (always, also
 * on failure; cap must not be used again).  On failure nothing is written
 * and *err (if err is not NULL) names the call or key at fault. */
nx_status parity_capture_end(parity_capture *cap, nx_err *err);

/* Frees cap without writing anything. */
void parity_capture_abort(parity_capture *cap);

#ifdef __cplusplus
}
#endif

#endif
