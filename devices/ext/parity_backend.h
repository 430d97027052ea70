/* parity_backend.h: the C ABI of an out-of-tree class backend loaded as a
 * shared library (HARDWARE.toml: backend = { dlopen = "LIB.so" },
 * docs/backends.md).  Header only, plain C99, no other header of parity
 * needed: a backend includes it, defines its functions and exports one
 * symbol,
 *
 *     const parity_backend *parity_backend_v1(void);
 *
 * parity runs the library in a child process of its own by default (a
 * crash or a hang of the library is then a per-point error, never a crash
 * of parity); `in_process = true` loads it into parity itself.
 *
 * Every string handed to the backend is NUL-terminated UTF-8 and lives
 * until the call returns.  Tensors are row-major, little-endian, in
 * safetensors dtypes ("F32", "BF16", "F16", "F64", "F8_E4M3", "F8_E5M2",
 * "U8", "I32", ...); BF16 and F16 elements are uint16_t bit patterns. */
#ifndef PARITY_BACKEND_H
#define PARITY_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PARITY_BACKEND_ABI 1
#define PARITY_BACKEND_MAX_NDIM 8

typedef struct parity_kv {
    const char *key, *value;
} parity_kv;

/* One family point, resolved for a class and a shape (docs/families.md,
 * docs/registry.md). */
typedef struct parity_point {
    const char *family;     /* "gemm" */
    const char *point;      /* "splitk" */
    const char *class_name; /* the class being run ("mynpu") */
    const char *kernel;     /* the point's kernel id, or NULL */
    const char *hash;       /* the point's numerics hash (equal hashes, equal bits) */
    /* every param as text: the point's over the family's over the class
     * defaults, then the shape (M, N, K, ...) */
    const parity_kv *params;
    size_t nparams;
    /* the reductions' declared trees, filled ("k" -> "split(4, seq)") */
    const parity_kv *reductions;
    size_t nreductions;
} parity_point;

typedef struct parity_tensor {
    const char *name;
    const char *dtype;
    int ndim;
    int64_t shape[PARITY_BACKEND_MAX_NDIM];
    void *data;   /* inputs: read only */
    size_t nbytes;
} parity_tensor;

typedef struct parity_run parity_run;
struct parity_run {
    int abi;                    /* PARITY_BACKEND_ABI */
    const parity_point *point;
    const char *kernel;         /* the kernel to run: the point's, or another id (a legacy kernel) */
    int graphed;                /* 0: eager (a plain launch); 1: graphed (a captured graph, all threads) */
    int threads;                /* graphed: the thread count asked for (0: the backend's default) */
    const parity_tensor *inputs;
    size_t ninputs;
    /* Adds output tensor `name` and returns its zeroed buffer of the exact
     * size, which the kernel fills; NULL when refused (a duplicate name, a
     * bad dtype or shape; the reason is parity's).  The family's outputs
     * are docs/families.md's (y; residual_out for fused_add_rmsnorm). */
    void *(*output)(parity_run *r, const char *name, const char *dtype, int ndim, const int64_t *shape);
    void *host;                 /* parity's; not to be touched */
    char error[512];            /* the kernel's message when run returns nonzero */
};

typedef struct parity_backend {
    int abi;          /* PARITY_BACKEND_ABI */
    const char *name; /* said in messages and reports */
    /* 1 when dev_opts' thread count changes how a kernel may run, so that
     * the campaign reruns at other thread counts */
    int threaded;
    /* Optional (NULL: available).  0 with the reason in why. */
    int (*available)(char *why, size_t len);
    /* Optional.  The device as a JSON object text (sku, driver, library
     * versions, compiler); returns 0, nonzero when len is too small. */
    int (*describe)(char *json, size_t len);
    /* Required.  1 when the backend has `kernel` (NULL: the point's) for
     * this point. */
    int (*supports)(const parity_point *p, const char *kernel);
    /* Optional.  0 when the kernel takes the point's params; else nonzero
     * with the param it refuses named in why (an input error of the point). */
    int (*check_params)(const parity_point *p, const char *kernel, char *why, size_t len);
    /* Optional.  1 when the kernel is nondeterministic on purpose. */
    int (*nondeterministic)(const parity_point *p, const char *kernel);
    /* Required.  Runs r->kernel on r->inputs and adds the outputs through
     * r->output; 0 on success, else nonzero with r->error set. */
    int (*run)(parity_run *r);
} parity_backend;

typedef const parity_backend *(*parity_backend_entry)(void);
#define PARITY_BACKEND_SYMBOL "parity_backend_v1"

/* A param's text, or NULL. */
static inline const char *parity_param(const parity_point *p, const char *key)
{
    for (size_t i = 0; i < p->nparams; i++) {
        const char *a = p->params[i].key, *b = key;
        while (*a && *a == *b)
            a++, b++;
        if (*a == *b)
            return p->params[i].value;
    }
    return NULL;
}

/* An input tensor by name, or NULL. */
static inline const parity_tensor *parity_input(const parity_run *r, const char *name)
{
    for (size_t i = 0; i < r->ninputs; i++) {
        const char *a = r->inputs[i].name, *b = name;
        while (*a && *a == *b)
            a++, b++;
        if (*a == *b)
            return &r->inputs[i];
    }
    return NULL;
}

#ifdef __cplusplus
}
#endif

#endif
