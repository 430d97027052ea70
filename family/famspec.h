/* famspec.h: one family point resolved for a class and a shape: what the
 * reference implementations (refimpl/), the input generator and the device
 * backends consume.  The registry (parity/registry/registry.h) produces it; tests may build
 * one by hand.  Everything is owned by the fam_spec and freed by
 * fam_spec_free. */
#ifndef PARITY_FAMSPEC_H
#define PARITY_FAMSPEC_H

#include <limits.h>
#include <stddef.h>

#include "nx_point.h"

typedef enum fam_elem_impl {
    FAM_ELEM_CR,      /* correctly rounded (rne) in the function's format */
    FAM_ELEM_APPROX   /* a named approximation with an ulp bound */
} fam_elem_impl;

typedef struct fam_elem {
    char *name;        /* "exp", "rsqrt", "silu", ... */
    fam_elem_impl impl;
    char *approx;      /* the approximation's name (FAM_ELEM_APPROX), else NULL */
    double ulp;        /* its declared bound in ulps (0 for cr) */
} fam_elem;

typedef struct fam_param {
    char *name;
    char *value;       /* as text: integers in decimal, strings as they are */
} fam_param;

typedef struct fam_reduction {
    char *name;        /* "k", "group", "qk", "softmax_sum", "pv", "combine", "sumsq" */
    nx_point point;    /* templates ({split_k}, {K}, ...) already filled */
    char *tree_text;   /* the filled tree text, for messages */
} fam_reduction;

typedef struct fam_tolerance {
    int has_ulp;
    double ulp;
    int has_rtol;
    double rtol, atol;
} fam_tolerance;

typedef struct fam_spec {
    char *family;      /* "gemm" */
    char *point;       /* "splitk4" */
    char *class_name;  /* "sm90" */
    char *kernel;      /* the kernel id the point names, or NULL */
    /* params: point values over family defaults over class defaults, then
     * the shape's dimensions (M, N, K, ...) */
    fam_param *params;
    size_t nparams;
    fam_reduction *reds;
    size_t nreds;
    fam_elem *elems;
    size_t nelems;
    fam_tolerance tol;
    char *hash;        /* SHA-256 over every reduction's filled point (its
                          canonical text), the elementwise choices and the
                          bit-changing params (docs/registry.md): equal
                          hashes, equal bits */
} fam_spec;

void fam_spec_free(fam_spec *s);

/* Lookups; NULL / error when absent. */
const char *fam_param_get(const fam_spec *s, const char *name);
nx_status fam_param_long(const fam_spec *s, const char *name, long *out, nx_err *err);
nx_status fam_param_double(const fam_spec *s, const char *name, double *out, nx_err *err);
const fam_reduction *fam_reduction_get(const fam_spec *s, const char *name);
const fam_elem *fam_elem_get(const fam_spec *s, const char *name);

/* The spec's family and point ids for messages ("?" when unset). */
const char *fam_spec_family(const fam_spec *s);
const char *fam_spec_point(const fam_spec *s);

/* Typed readers of a spec's params, the one set that refimpl, the cpu and
 * the cuda backends read through (a backend adds its own limits on top).
 * An absent param takes the family's default (its descriptor's, famdesc.h:
 * the one place a family's defaults are written), else def; with def one of
 * the FAM_DEFAULT_* values below, an absent param without a default is an
 * error.  A present one (or a default) must parse, else an error
 * "FAMILY.POINT: param 'NAME' = 'VALUE' is not ...".
 *   fam_get_long: an integer;
 *   fam_get_dim:  a dimension in [1, 2^30]; def < 0: required (the error
 *                 says how to give it: --shape NAME=...);
 *   fam_get_bool: true or false;
 *   fam_get_fmt:  a format name of docs/numerics.md §1;
 *   fam_get_f32:  a finite number (decimal or hex) rounded once to fp32,
 *                 to nearest even; def is its text. */
/* The param's text, else the family's default (into buf), else NULL: for
 * readers of their own kind (refimpl's exact fp32 parse). */
const char *fam_param_text(const fam_spec *s, const char *name, char *buf, size_t n);

#define FAM_DEFAULT_LONG LONG_MIN          /* the family's default, else an error */
#define FAM_DEFAULT_BOOL (-1)
#define FAM_DEFAULT_FMT ((nx_fmt)-1)
#define FAM_DEFAULT_STR ((const char *)0)
nx_status fam_get_long(const fam_spec *s, const char *name, long def, long *out, nx_err *err);
nx_status fam_get_dim(const fam_spec *s, const char *name, long def, long *out, nx_err *err);
nx_status fam_get_bool(const fam_spec *s, const char *name, int def, int *out, nx_err *err);
nx_status fam_get_fmt(const fam_spec *s, const char *name, nx_fmt def, nx_fmt *out, nx_err *err);
nx_status fam_get_f32(const fam_spec *s, const char *name, const char *def, float *out, nx_err *err);

/* Building one by hand (tests, the registry): append copies. */
nx_status fam_spec_set_param(fam_spec *s, const char *name, const char *value, nx_err *err);
/* Takes ownership of *pt (the caller must not free it afterwards). */
nx_status fam_spec_add_reduction(fam_spec *s, const char *name, nx_point *pt, const char *tree_text,
                                 nx_err *err);
nx_status fam_spec_add_elem(fam_spec *s, const char *name, fam_elem_impl impl, const char *approx,
                            double ulp, nx_err *err);

#endif
