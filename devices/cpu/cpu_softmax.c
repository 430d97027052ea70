/* cpu_softmax.c: row softmax kernels (docs/families.md, softmax;
 * docs/cpu-backend.md).
 *
 *   cpu_softmax        exp correctly rounded to fp32 (cpu_exp_cr)
 *   cpu_softmax_libm   exp = the C library's expf: the declared
 *                      approximation `libm_expf` (1 ulp; glibc 2.36 measured
 *                      within 0.5017 ulp at every fp32 argument <= 0), never
 *                      bit-exact against cr
 *
 * Per token t: m = max x (NaN wins), e = exp(fp32(x - m)) (one float
 * subtraction: the correctly rounded difference, -inf for x = -inf),
 * s = sum of the e: stride(V, seq, pairwise) over values, y = fp32(e / s)
 * rounded to param `out`.  OpenMP runs over tokens. */
#include "cpu_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct softmax_args {
    long T, H, vec;
    nx_fmt in, out;
    const fam_reduction *sum;
} softmax_args;

static nx_status numerics(const fam_spec *s, softmax_args *a, nx_err *err)
{
    nx_status st;
    if ((st = cpu_fmt(s, "in", FAM_DEFAULT_FMT, &a->in, err)) || (st = cpu_fmt(s, "out", FAM_DEFAULT_FMT, &a->out, err)) ||
        (st = cpu_vec(s, &a->vec, err)) || (st = cpu_io_fmts(s, a->in, 0, a->out, err)))
        return st;
    return NX_OK;
}

static nx_status check(const fam_spec *s, const cpu_kernel *k, nx_err *err)
{
    softmax_args a;
    nx_status st = numerics(s, &a, err);
    if (st)
        return st;
    char tree[64];
    snprintf(tree, sizeof tree, "stride(%ld, seq, pairwise)", a.vec);
    if ((st = cpu_check_red(s, k, "sum", tree, 1, &a.sum, err)))
        return st;
    return cpu_check_elem(s, k, "exp", k == &cpu_k_softmax_libm ? "libm_expf" : NULL, err);
}

/* sum: stride(V, seq, pairwise) over the values e[0 .. n): term i goes to
 * lane i mod V, each lane a chain of fp32 additions from +0 in increasing
 * i, every lane (an empty one too: +0) combined by cpu_pairwise.  The lanes
 * advance together, so V = 8 is one vector register. */
static inline __attribute__((always_inline)) void lanes_add(float *lane, const float *e, size_t n, size_t V)
{
    size_t i = 0;
    for (; i + V <= n; i += V)
        for (size_t l = 0; l < V; l++)
            lane[l] = lane[l] + e[i + l];
    for (size_t l = 0; i + l < n; l++)
        lane[l] = lane[l] + e[i + l];
}

CPU_HOT static float strided_sum(const float *e, size_t n, size_t V)
{
    float lane[CPU_MAX_VEC];
    for (size_t l = 0; l < V; l++)
        lane[l] = 0.0f;
    if (V == 8)
        lanes_add(lane, e, n, 8);
    else
        lanes_add(lane, e, n, V);
    return cpu_pairwise(lane, V);
}

static nx_status run(const cpu_run *r, nx_err *err)
{
    const fam_spec *s = r->spec;
    softmax_args a;
    nx_status st;
    if ((st = numerics(s, &a, err)) || (st = cpu_dim(s, "T", -1, &a.T, err)) || (st = cpu_dim(s, "H", -1, &a.H, err)))
        return st;
    a.sum = fam_reduction_get(s, "sum");
    size_t T = (size_t)a.T, H = (size_t)a.H, V = (size_t)a.vec;
    int libm = r->kernel == &cpu_k_softmax_libm;
    float *x = NULL, *y = malloc(T * H * sizeof *y);
    if (!y)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    if ((st = cpu_decode(st_find(r->in, "x"), r->threads, &x, err)))
        goto done;
#pragma omp parallel for num_threads(r->threads) schedule(static)
    for (size_t t = 0; t < T; t++) {
        const float *xr = x + t * H;
        float *yr = y + t * H;
        float m = -INFINITY;
        for (size_t i = 0; i < H; i++) /* a NaN, once met, stays: NaN > m is false */
            m = isnan(xr[i]) || xr[i] > m ? xr[i] : m;
        for (size_t i = 0; i < H; i++) {
            float d = xr[i] - m; /* -inf - m = -inf: e = +0; inf - inf, -inf - -inf: NaN */
            yr[i] = libm ? expf(d) : cpu_exp_cr(d);
        }
        float sum = strided_sum(yr, H, V);
        for (size_t i = 0; i < H; i++)
            yr[i] = yr[i] / sum;
    }
    st = cpu_emit(r->out, "y", a.out, a.sum->point.saturate, 2, (int64_t[]){a.T, a.H}, y, r->threads, err);
done:
    free(x);
    free(y);
    return st;
}

const cpu_kernel cpu_k_softmax = {"cpu_softmax", "softmax", "sum: stride(V, seq, pairwise) over values; exp cr", check,
                                  run};
const cpu_kernel cpu_k_softmax_libm = {"cpu_softmax_libm", "softmax",
                                       "sum: stride(V, seq, pairwise) over values; exp = libm expf (approximation "
                                       "libm_expf)",
                                       check, run};
