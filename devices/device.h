/* device.h: the interface every class backend implements (devices/cpu,
 * devices/cuda), so the campaign treats them alike.
 *
 * A backend runs one family point (a fam_spec, see family/famspec.h and
 * docs/families.md) on inputs given as a safetensors file in memory and
 * fills the family's outputs.  It honours the point's declared numerics:
 * each kernel says next to its reduction which tree expression it realises. */
#ifndef PARITY_DEVICE_H
#define PARITY_DEVICE_H

#include <stddef.h>

#include "famspec.h"
#include "safetensors.h"

typedef enum dev_mode {
    DEV_EAGER = 0,   /* a plain launch (cpu: one thread) */
    DEV_GRAPHED = 1  /* a captured graph replayed (cpu: all threads) */
} dev_mode;

typedef struct dev_opts {
    dev_mode mode;
    int threads;        /* cpu: OpenMP threads for DEV_GRAPHED (0 = all) */
    const char *kernel; /* a kernel id of the family, or NULL: the point's kernel */
} dev_opts;

typedef struct dev_backend dev_backend;

/* Every function takes the backend itself first, so that one table of
 * functions serves many backends of one kind (each out-of-tree class its
 * process or its library: devices/ext, docs/backends.md).  Call them
 * through the dev_* wrappers below. */
struct dev_backend {
    const char *name;   /* "cpu", "cuda", an out-of-tree backend's own name */
    /* 1 if runnable here; else 0 with the reason (e.g. "no GPU") in why. */
    int (*available)(const dev_backend *self, char *why, size_t whylen);
    /* The device as a JSON object text (sku, driver, sm_count, host, ...). */
    nx_status (*describe)(const dev_backend *self, char *json, size_t len, nx_err *err);
    /* 1 if the backend has a kernel for this family point / kernel id. */
    int (*supports)(const dev_backend *self, const fam_spec *spec, const char *kernel);
    /* Runs the point on `in` (the family's input tensors) and adds the
     * family's output tensors to `out`. */
    nx_status (*run)(const dev_backend *self, const fam_spec *spec, const st_file *in, st_file *out,
                     const dev_opts *opts, nx_err *err);
    /* Optional (NULL: not told).  NX_OK when the backend has no such kernel
     * (that is `supports`' business) or its kernel accepts the point's
     * params; else the error naming the param the kernel refuses (a
     * split count out of range, a NaN epsilon): an input error of the
     * point, never a skip. */
    nx_status (*check_params)(const dev_backend *self, const fam_spec *spec, const char *kernel, nx_err *err);
    /* 1 when dev_opts.threads changes how a kernel runs (cpu: the OpenMP
     * team), so that a run at another thread count can show a point that
     * follows the threads; 0 where threads mean nothing (cuda). */
    int threaded;
    /* Optional (NULL: never).  1 when the backend says that its kernel for
     * this point is nondeterministic on purpose (atomics, a scheduler's
     * order): the campaign then judges determinism as a declared
     * nondeterminism, not a failure, and Tier 2 by the tolerance. */
    int (*nondeterministic)(const dev_backend *self, const fam_spec *spec, const char *kernel);
    /* The backend's own state (an out-of-tree backend's process or
     * library); NULL for the built-ins. */
    void *impl;
};

static inline int dev_available(const dev_backend *b, char *why, size_t whylen)
{
    return b->available(b, why, whylen);
}

static inline nx_status dev_describe(const dev_backend *b, char *json, size_t len, nx_err *err)
{
    return b->describe(b, json, len, err);
}

static inline int dev_supports(const dev_backend *b, const fam_spec *spec, const char *kernel)
{
    return b->supports(b, spec, kernel);
}

static inline nx_status dev_run(const dev_backend *b, const fam_spec *spec, const st_file *in, st_file *out,
                                const dev_opts *opts, nx_err *err)
{
    return b->run(b, spec, in, out, opts, err);
}

static inline nx_status dev_check_params(const dev_backend *b, const fam_spec *spec, const char *kernel, nx_err *err)
{
    return b->check_params ? b->check_params(b, spec, kernel, err) : NX_OK;
}

static inline int dev_nondeterministic(const dev_backend *b, const fam_spec *spec, const char *kernel)
{
    return b->nondeterministic ? b->nondeterministic(b, spec, kernel) : 0;
}

const dev_backend *dev_cpu_backend(void);
const dev_backend *dev_cuda_backend(void); /* present even without CUDA: then never available */

#endif
