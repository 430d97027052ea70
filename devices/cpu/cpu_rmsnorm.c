/* cpu_rmsnorm.c: RMSNorm kernels (docs/families.md, rmsnorm;
 * docs/cpu-backend.md).
 *
 *   cpu_rmsnorm             residual = false; sumsq: stride(V, seq, pairwise)
 *   cpu_rmsnorm_legacy      the same point, written lane by lane (Tier 1
 *                           new vs legacy)
 *   cpu_fused_add_rmsnorm   residual = true: x' = round_in(x + residual),
 *                           also stored as residual_out; the same sumsq
 *
 * Per token t: ss = sumsq of x' * x' over H (fmaf lanes), ms = fp32(ss / H),
 * r = rsqrt_cr(fp32(ms + eps)), y = fp32(fp32(x' * r) * weight) rounded to
 * param `out`.  x + residual in float then rounded to bf16 / fp16 is the
 * correctly rounded sum: double rounding through fp32 (24 bits) is
 * innocuous for p <= 11 (24 >= 2p + 2, Figueroa).  OpenMP runs over tokens. */
#include "cpu_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct rms_args {
    long T, H, vec;
    nx_fmt in, out;
    float eps;
    int residual;
    const fam_reduction *sumsq;
} rms_args;

static nx_status numerics(const fam_spec *s, rms_args *a, nx_err *err)
{
    nx_status st;
    if ((st = cpu_fmt(s, "in", FAM_DEFAULT_FMT, &a->in, err)) || (st = cpu_fmt(s, "out", FAM_DEFAULT_FMT, &a->out, err)) ||
        (st = cpu_f32(s, "eps", FAM_DEFAULT_STR, &a->eps, err)) || (st = cpu_bool(s, "residual", FAM_DEFAULT_BOOL, &a->residual, err)) ||
        (st = cpu_vec(s, &a->vec, err)) || (st = cpu_io_fmts(s, a->in, 1, a->out, err)))
        return st;
    if (!(a->eps >= 0))
        return nx_err_set(err, NX_EINVAL, "param 'eps' = %g: must be >= 0", (double)a->eps);
    return NX_OK;
}

static nx_status check(const fam_spec *s, const cpu_kernel *k, nx_err *err)
{
    rms_args a;
    nx_status st = numerics(s, &a, err);
    if (st)
        return st;
    int want_res = k == &cpu_k_fused_add_rmsnorm;
    if (want_res != a.residual)
        return nx_err_set(err, NX_EUNSUPPORTED, "cpu: kernel %s runs residual = %s; %s.%s has residual = %s", k->id,
                          want_res ? "true" : "false", s->family, s->point ? s->point : "?",
                          a.residual ? "true" : "false");
    char tree[64];
    snprintf(tree, sizeof tree, "stride(%ld, seq, pairwise)", a.vec);
    if ((st = cpu_check_red(s, k, "sumsq", tree, 1, &a.sumsq, err)))
        return st;
    return cpu_check_elem(s, k, "rsqrt", NULL, err);
}

static nx_status run(const cpu_run *r, nx_err *err)
{
    const fam_spec *s = r->spec;
    rms_args a;
    nx_status st;
    if ((st = numerics(s, &a, err)) || (st = cpu_dim(s, "T", -1, &a.T, err)) || (st = cpu_dim(s, "H", -1, &a.H, err)))
        return st;
    if (a.H > (1L << 24))
        return nx_err_set(err, NX_EUNSUPPORTED, "cpu: rmsnorm: H = %ld is not exact in fp32", a.H);
    a.sumsq = fam_reduction_get(s, "sumsq");
    size_t T = (size_t)a.T, H = (size_t)a.H, V = (size_t)a.vec;
    int legacy = r->kernel == &cpu_k_rmsnorm_legacy;
    float Hf = (float)H;
    float *x = NULL, *res = NULL, *w = NULL, *y = malloc(T * H * sizeof *y);
    if (!y)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    if ((st = cpu_decode(st_find(r->in, "x"), r->threads, &x, err)) ||
        (st = cpu_decode(st_find(r->in, "weight"), r->threads, &w, err)) ||
        (a.residual && (st = cpu_decode(st_find(r->in, "residual"), r->threads, &res, err))))
        goto done;
#pragma omp parallel for num_threads(r->threads) schedule(static)
    for (size_t t = 0; t < T; t++) {
        float *xr = x + t * H;
        if (a.residual) /* x' = round_in(x + residual), in place */
            for (size_t i = 0; i < H; i++)
                xr[i] = cpu_round_to(xr[i] + res[t * H + i], a.in, 0);
        float lane[CPU_MAX_VEC];
        if (!legacy) {
            /* sumsq: stride(V, seq, pairwise); all lanes advance together */
            for (size_t l = 0; l < V; l++)
                lane[l] = 0.0f;
            size_t i = 0;
            for (; i + V <= H; i += V)
                for (size_t l = 0; l < V; l++)
                    lane[l] = fmaf(xr[i + l], xr[i + l], lane[l]);
            for (size_t l = 0; i + l < H; l++)
                lane[l] = fmaf(xr[i + l], xr[i + l], lane[l]);
        } else {
            /* sumsq: stride(V, seq, pairwise); one lane after the other */
            for (size_t l = 0; l < V; l++) {
                float acc = 0.0f;
                for (size_t i = l; i < H; i += V)
                    acc = fmaf(xr[i], xr[i], acc);
                lane[l] = acc;
            }
        }
        float ss = cpu_pairwise(lane, V);
        float ms = ss / Hf;
        float rs = cpu_rsqrt_cr(ms + a.eps);
        for (size_t i = 0; i < H; i++) {
            float v = xr[i] * rs;
            y[t * H + i] = v * w[i];
        }
    }
    int sat = a.sumsq->point.saturate;
    st = cpu_emit(r->out, "y", a.out, sat, 2, (int64_t[]){a.T, a.H}, y, r->threads, err);
    if (!st && a.residual)
        st = cpu_emit(r->out, "residual_out", a.in, 0, 2, (int64_t[]){a.T, a.H}, x, r->threads, err);
done:
    free(x);
    free(res);
    free(w);
    free(y);
    return st;
}

const cpu_kernel cpu_k_rmsnorm = {"cpu_rmsnorm", "rmsnorm", "sumsq: stride(V, seq, pairwise); rsqrt cr", check, run};
const cpu_kernel cpu_k_rmsnorm_legacy = {"cpu_rmsnorm_legacy", "rmsnorm",
                                         "sumsq: stride(V, seq, pairwise), lane by lane; rsqrt cr", check, run};
const cpu_kernel cpu_k_fused_add_rmsnorm = {"cpu_fused_add_rmsnorm", "rmsnorm",
                                            "residual add, then sumsq: stride(V, seq, pairwise); rsqrt cr", check,
                                            run};
