/* refimpl.h: the exact reference of each kernel family (docs/families.md)
 * and the description of its inputs, for the generator.
 *
 * One file per family (gemm.c, gemv_w4a16.c, moe_grouped_gemm.c,
 * paged_decode_attention.c, rmsnorm.c, silu_and_mul.c, softmax.c), which
 * also lays out its output as the rows of its reduction where it is one
 * (ref_output_rows).  Every reduction
 * goes through numerics/: the reduction's numerics point is expanded for its
 * length (nx_program_build) and evaluated by an engine over rows gathered
 * into contiguous buffers; nothing here fixes an order.  Every elementwise
 * step is one correctly rounded operation (ref_math.c). */
#ifndef PARITY_REFIMPL_H
#define PARITY_REFIMPL_H

#include <stddef.h>
#include <stdint.h>

#include "famspec.h"
#include "nx_engine.h"
#include "nx_philox.h"
#include "safetensors.h"

/* --- running a family ----------------------------------------------------- */

/* The engine: nx_engine_kind (numerics/nx_engine.h); the reference runs
 * NX_ENGINE_MPFR or NX_ENGINE_FAST. */

/* 1 if the engine is built into this binary. */
int ref_engine_available(nx_engine_kind e);
/* The fastest engine built in. */
nx_engine_kind ref_engine_default(void);

typedef struct ref_opts {
    int threads;       /* <= 0: OpenMP's default */
    nx_engine_kind engine;
} ref_opts;

/* Evaluates spec's family on the input tensors of `in` (validated against
 * ref_inputs: names, dtypes, shapes, integer ranges) and adds the output
 * tensors to `out` (y, and residual_out for rmsnorm with residual).  Uses
 * ref_engine_default(). */
nx_status ref_run(const fam_spec *spec, const st_file *in, st_file *out, int threads, nx_err *err);
nx_status ref_run_opts(const fam_spec *spec, const st_file *in, st_file *out, const ref_opts *opts,
                       nx_err *err);

/* Adds the spec's description to out's metadata: spec_hash (when the spec
 * has one), reduction.<name> = the filled tree, numerics.<name> = the
 * canonical point, elementwise.<name> = "cr" or the approximation and how
 * the reference evaluates it, nondeterministic.<name> for a tree that uses
 * `atomic` (evaluated in seq order). */
nx_status ref_spec_meta(const fam_spec *spec, st_file *out, nx_err *err);

/* Validates the input tensors of `in` against ref_inputs (names, dtypes,
 * shapes, integer ranges), as ref_run does. */
nx_status ref_check_inputs(const fam_spec *spec, const st_file *in, nx_err *err);

/* --- derived error bounds (ref_bound.c, docs/tolerance.md) --------------------- */

/* A bound on |y[i] - y*[i]| for every element of the family's main output y
 * as spec computes it on `in`, y* the family's mathematical value on the
 * inputs as given (every reduction and elementwise step exact): each
 * reduction's error from its tree (nx_bound), carried through the epilogue.
 * as_reference: the elementwise functions as the reference evaluates them
 * (correctly rounded) instead of the declared approximations.  *bound
 * (malloc'd, *count elements, y's order).  NX_EUNSUPPORTED when no finite
 * bound is derivable (an approximate exp whose results are the terms of
 * attention's reductions, a rounding that may overflow, a non-finite
 * input): why says which and where.  Other errors: bad inputs or params. */
nx_status ref_bound(const fam_spec *spec, const st_file *in, int as_reference, int threads, double **bound,
                    size_t *count, char *why, size_t wlen, nx_err *err);

/* 1 when a and b are points of one family that compute the same
 * mathematical function (equal params that define it: gemm's alpha, beta,
 * bias; rmsnorm's eps; ...), so that |y_a - y_b| <= bound_a + bound_b;
 * else 0 and why says what differs. */
int ref_bound_same_function(const fam_spec *a, const fam_spec *b, char *why, size_t len);

/* --- an output as the rows of its reduction (fit, `parity explain`) ------------ */

/* Where a family's main output is the result of one reduction (gemm's y
 * with alpha = 1, beta = 0 and no bias is reduction `k` of a[m, :] and
 * b[n, :], rounded to y's format), the rows that reduction reduced: row i
 * of the output, element j, is row i * cols + j here, with its n terms
 * a[.] * b[.] (b NULL: a value sum) and the output's value y[.].  This is
 * the layout `parity fit` reads, written once per family. */
typedef struct ref_out_rows {
    char reduction[32];   /* the reduction's name in the family ("k") */
    size_t rows, n;       /* rows laid out and terms per row */
    size_t total;         /* the output's elements: rows is all of them, or
                             an evenly spaced sample (max_rows) */
    nx_fmt a_fmt, b_fmt, y_fmt;
    double *a, *b, *y;    /* rows * n, rows * n (or NULL), rows; malloc'd */
} ref_out_rows;

void ref_out_rows_free(ref_out_rows *r);

/* The rows of spec's family for output tensor y (its first dimension the
 * batch: y's row i is the logical row rows[i] of the inputs `in`, or row i
 * when rows is NULL).  max_rows > 0: at most that many rows, output
 * elements floor(t * total / max_rows), so that a large output is never laid
 * out whole (and rows x n stays within the --max-terms limit).  NX_EUNSUPPORTED, with the reason, when the family
 * has no such layout or the point's epilogue changes the reduction's
 * result (gemm: alpha, beta, bias); NX_EINVAL for inputs that do not
 * match the shape. */
nx_status ref_output_rows(const fam_spec *spec, const st_file *in, const st_tensor *y, const int64_t *rows,
                          size_t max_rows, ref_out_rows *out, nx_err *err);

/* The families refimpl knows, for messages and listings. */
size_t ref_family_count(void);
const char *ref_family_name(size_t i);

/* --- inputs ----------------------------------------------------------------- */

typedef enum ref_kind {
    REF_FLOAT,    /* a number format of docs/numerics.md §1, from the chosen distribution */
    REF_INTS,     /* integers, uniform in [lo, hi] (int4 weights, zero points,
                     block table entries, context lengths) */
    REF_DISTINCT  /* per row (last dimension), distinct integers in [lo, hi] (top-k ids) */
} ref_kind;

#define REF_MAX_NDIM 4

typedef struct ref_tensor_desc {
    char name[32];
    ref_kind kind;
    st_dtype dtype;
    int fmt;                       /* REF_FLOAT: its nx_fmt; else -1 */
    int ndim;
    int64_t shape[REF_MAX_NDIM];
    char dims[48];                 /* the shape by dimension names, "[N, K]" */
    long lo, hi;                   /* integer kinds: the inclusive range */
    long int_max;                  /* REF_FLOAT under `int`: the bound that keeps
                                      every reduction of the family exact */
    int packed4;                   /* REF_INTS in [0, 15] stored two per byte
                                      (family/fam_int4.h): shape is the stored
                                      one, `row` values per row of its last
                                      dimension */
    long row;
} ref_tensor_desc;

/* The input tensors of spec's family at its shape, in file order; *descs is
 * malloc'd.  Errors: an unknown family, a missing or bad param. */
nx_status ref_inputs(const fam_spec *spec, ref_tensor_desc **descs, size_t *count, nx_err *err);

typedef struct ref_gen_opts {
    uint64_t seed;
    nx_dist dist;
    int specials;      /* adversarial: also +-inf and NaN */
    int threads;
} ref_gen_opts;

/* Generates every input tensor of ref_inputs into out (tensors only, no
 * metadata).  Each element is a pure function of (seed, tensor name,
 * index): see nx_philox.h and docs/families.md ("Inputs"). */
nx_status ref_generate(const fam_spec *spec, const ref_gen_opts *opts, st_file *out, nx_err *err);

#endif
