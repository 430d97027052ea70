/* ref_internal.h: what the family files of refimpl/ share: the job (spec,
 * inputs, outputs, engine, per-thread scratch), reductions over gathered
 * rows, correctly rounded elementwise operations, params and tensors.
 * Not installed; only the refimpl sources include it. */
#ifndef PARITY_REF_INTERNAL_H
#define PARITY_REF_INTERNAL_H

#include <mpfr.h>

#include "nx_engine.h"
#include "nx_mp.h"
#include "nx_round_fast.h"
#include "refimpl.h"

/* --- correctly rounded elementwise operations (ref_math.c) ---------------- */

typedef struct ref_math {
    nx_mp mp;
    mpfr_t a, b, c, d;
    /* a gather's per-thread cache of decoded values (paged attention keeps
     * the V rows of the unit it is gathering): `key` says what it holds,
     * SIZE_MAX nothing; owner is the context it was filled for */
    double *cache;
    size_t cache_cap, cache_key;
    const void *cache_owner;
} ref_math;

void ref_math_init(ref_math *m);
void ref_math_clear(ref_math *m);
/* The thread's cache with room for n doubles (its contents kept when it
 * already had the room), or NULL when out of memory. */
double *ref_math_cache(ref_math *m, size_t n);
/* Values first .. first+n-1 of t, decoded from storage into the thread's
 * cache unless it already holds (owner, key), and left there for the next
 * row that asks for the same key; NULL when the cache cannot be had (out
 * of memory): the caller then reads storage itself. */
const double *ref_math_row(ref_math *m, const void *owner, size_t key, const st_tensor *t, size_t first, size_t n);
/* The same values copied into out, from storage where the cache cannot be had. */
void ref_math_cached_row(ref_math *m, const void *owner, size_t key, const st_tensor *t, size_t first, size_t n,
                         double *out);

/* One rounding of the exact result to fp32 in rne (IEEE specials: NaN in,
 * NaN out; inf - inf, 0 * inf, 0 / 0, inf / inf are NaN; x / 0 is +-inf).
 * Operands are any doubles (exact values). */
double ref_f32_add(ref_math *m, double x, double y);
double ref_f32_mul(ref_math *m, double x, double y);
double ref_f32_div(ref_math *m, double x, double y);
/* The exact functions, correctly rounded to fp32 (rne). */
double ref_f32_exp(ref_math *m, double x, nx_err *err);
double ref_f32_rsqrt(ref_math *m, double x);
double ref_f32_silu(ref_math *m, double x, nx_err *err);
/* Rounding of an exact double to a format. */
double ref_round(ref_math *m, double x, nx_fmt f, nx_mode mode, int saturate);

/* A decimal (or hex, "0x1p-3") param, parsed exactly and rounded once to
 * fp32 (rne); def is used when the param is absent. */
nx_status ref_param_f32(const fam_spec *s, const char *name, const char *def, double *out, nx_err *err);

/* gemv_w4a16's 16 possible weights of a group, w[q] = fp16((q - z) * s) in
 * rne (s an fp16 value, z in [0, 15]): with fast (the fast engine's fp16
 * rounding, nx_round_fast.h), F16C's conversion where s is finite and the
 * CPU has it, else nx_rf_round (the same bits); fast NULL: MPFR's
 * (ref_round). */
void ref_fp16_weights(double s, int z, const nx_rfmt *fast, ref_math *m, double w[16]);

/* --- params ----------------------------------------------------------------- */

/* A dimension: an integer in [1, 2^31) */
/* The inputs of descs, decoded (8 bytes per element) beside their encoding,
 * against --max-bytes (nx_limits.h); before gen or ref allocates them. */
nx_status ref_limit_inputs(const fam_spec *s, const ref_tensor_desc *d, size_t nd, nx_err *err);
nx_status ref_dim(const fam_spec *s, const char *name, long def, long *out, nx_err *err); /* def < 0: required */
nx_status ref_param_bool(const fam_spec *s, const char *name, int def, int *out, nx_err *err);
/* A format param (a docs/numerics.md name with a safetensors dtype of its own). */
nx_status ref_param_fmt(const fam_spec *s, const char *name, nx_fmt def, nx_fmt *out, nx_err *err);
/* A reduction the family needs; the error names the family and the reduction. */
nx_status ref_need_red(const fam_spec *s, const char *name, const fam_reduction **out, nx_err *err);
/* The largest precision p such that every integer of magnitude < 2^p is
 * exact in every format the point's arithmetic uses (acc, @FMT, product,
 * in, atom acc and frac_bits + 1). */
int ref_point_exact_bits(const nx_point *pt);
/* The largest R >= 1 with R^2 * factor < 2^bits, capped at 2^p of fmt. */
long ref_int_bound(double factor, int bits, nx_fmt fmt);

/* --- input descriptions (ref_common.c) ------------------------------------- */

typedef struct ref_desc_list {
    ref_tensor_desc *t;
    size_t n, cap;
    nx_status st;     /* sticky: the first failure */
} ref_desc_list;

/* Appends a tensor description; dims names the dimensions ("N,K"). */
ref_tensor_desc *ref_add_float(ref_desc_list *l, const char *name, nx_fmt f, const char *dims, int ndim,
                               const int64_t *shape, long int_max);
ref_tensor_desc *ref_add_ints(ref_desc_list *l, const char *name, st_dtype dt, const char *dims, int ndim,
                              const int64_t *shape, ref_kind kind, long lo, long hi);
/* 4-bit integers in [0, 15] (family/fam_int4.h): shape is the logical one
 * (its last dimension the values per row); packed stores them two per byte,
 * the last dimension then ceil(n / 2) bytes, and dims should say so. */
ref_tensor_desc *ref_add_u4(ref_desc_list *l, const char *name, const char *dims, int ndim, const int64_t *shape,
                            int packed);

/* --- the job ------------------------------------------------------------------ */

typedef nx_status (*ref_reduce_fn)(const nx_program *p, const nx_rows *in, double *y, int threads, nx_err *err);

typedef struct ref_prog {
    const fam_reduction *red;
    size_t n;
    int dot;
    nx_program *p;
} ref_prog;

typedef struct ref_job {
    const fam_spec *spec;
    const st_file *in;
    st_file *out;
    int nthreads;
    ref_reduce_fn reduce;
    ref_math *maths;     /* one per thread */
    ref_prog *progs;
    size_t nprogs, progs_cap;
} ref_job;

ref_math *ref_job_math(ref_job *j); /* this OpenMP thread's scratch */
/* Every thread's cache forgotten: at the start of a job (its context, the
 * caches' owner, may stand where an earlier job's stood) and where a job
 * starts caching rows of another kind. */
void ref_job_forget_rows(ref_job *j);
/* Threads for a parallel loop of `work` units of about a nanosecond each
 * (an engine term, a binary64 step; callers weigh an MPFR function as
 * more): 1 below REF_PAR_MIN, where starting a second thread costs more
 * than it saves (and leaves it spinning while the rest is serial), else
 * the job's.  A small `parity ref` took 13 ms at 2 threads and 5 at 1. */
#define REF_PAR_MIN ((size_t)1 << 15)
static inline int ref_threads_for(const ref_job *j, size_t work)
{
    return work < REF_PAR_MIN ? 1 : j->nthreads;
}

/* The program of a reduction at length n (built once, cached). */
nx_status ref_program(ref_job *j, const fam_reduction *r, size_t n, int dot, const nx_program **out,
                      nx_err *err);

/* Fills row `row` of a reduction: n values into a (and b for a dot). */
typedef void (*ref_gather_fn)(const void *ctx, size_t row, double *a, double *b, ref_math *m);

/* Evaluates reduction r at length n over `rows` rows, gathered into
 * per-thread buffers by g and reduced by one engine call per block of
 * about REF_BLOCK_VALUES values; y[rows] receives the results
 * (members of the point's out format). */
/* ref_reduce_rows gathers and reduces per thread in blocks of this many
 * terms (a and b: 512 KiB each, in a core's cache). */
#define REF_BLOCK_VALUES ((size_t)1 << 16)
nx_status ref_reduce_rows(ref_job *j, const fam_reduction *r, size_t n, int dot, size_t rows, nx_fmt afmt,
                          nx_fmt bfmt, ref_gather_fn g, const void *ctx, double *y, nx_err *err);
/* A dot product whose row r has its a in place, n values at arow(ctx, r)
 * (an activation row every output reads), not copied for the fast engine;
 * g fills b only (its a argument is NULL). */
typedef const double *(*ref_arow_fn)(const void *ctx, size_t row);
nx_status ref_reduce_rows_a(ref_job *j, const fam_reduction *r, size_t n, size_t rows, nx_fmt afmt, nx_fmt bfmt,
                            ref_arow_fn arow, ref_gather_fn g, const void *ctx, double *y, nx_err *err);
/* The same over rows already contiguous (a, b: rows * n values). */
nx_status ref_reduce_flat(ref_job *j, const fam_reduction *r, size_t n, int dot, size_t rows, nx_fmt afmt,
                          const double *a, nx_fmt bfmt, const double *b, double *y, nx_err *err);

/* Input tensors (already validated by ref_run). */
const st_tensor *ref_tensor(ref_job *j, const char *name);
/* Decodes a float input into a malloc'd array. */
nx_status ref_decode(ref_job *j, const char *name, double **out, nx_err *err);
/* Element i of an integer tensor (U8, I32, ...), sign-extended. */
long ref_int_at(const st_tensor *t, size_t i);
/* Adds an output tensor of format f holding values v. */
nx_status ref_emit(ref_job *j, const char *name, nx_fmt f, int ndim, const int64_t *shape, const double *v,
                   nx_err *err);
double *ref_alloc(size_t count); /* count doubles (at least one) */

/* The rows of a dot-product output (ref_output_rows): output element
 * (i, n) of y [R, N] is row i * N + n, its terms a[m_i, :] . b[n, :] with
 * m_i = rows[i] (or i), a [M, K] and b [N, K] decoded values; y's values are
 * decoded here.  Fills o (reduction red, formats fa, fb, y's fy). */
nx_status ref_out_rows_dot(const fam_spec *s, const char *red, const double *a, long M, const double *b, size_t N,
                           size_t K, nx_fmt fa, nx_fmt fb, nx_fmt fy, const st_tensor *y, const int64_t *rows,
                           size_t max_rows, ref_out_rows *o, nx_err *err);

/* --- the families ------------------------------------------------------------ */

typedef struct ref_family {
    const char *name;
    nx_status (*inputs)(const fam_spec *s, ref_desc_list *l, nx_err *err);
    nx_status (*run)(ref_job *j, nx_err *err);
    /* The main output as rows of the reduction whose result it is
     * (refimpl.h, ref_output_rows); NULL: the family has no such layout. */
    nx_status (*out_rows)(const fam_spec *s, const st_file *in, const st_tensor *y, const int64_t *rows,
                          size_t max_rows, ref_out_rows *out, nx_err *err);
} ref_family;

extern const ref_family ref_family_gemm, ref_family_gemv_w4a16, ref_family_moe_grouped_gemm,
    ref_family_paged_decode_attention, ref_family_rmsnorm, ref_family_silu_and_mul, ref_family_softmax;

#endif
