/* rmsnorm.c: y = x' * rsqrt(mean(x'^2) + eps) * weight (docs/families.md,
 * rmsnorm).  With residual, x' = x + residual rounded once to x's format
 * (also output as residual_out); ss = reduction `sumsq` over H of x' * x';
 * ms = fp32(ss / H); r = rsqrt(fp32(ms + eps)), correctly rounded;
 * y = fp32(fp32(x' * r) * weight) rounded to param `out` with the sumsq
 * point's out_rounding and saturate. */
#include "ref_internal.h"

#include <stdlib.h>

typedef struct rms_p {
    long T, H;
    nx_fmt in, out;
    double eps;
    int residual;
    const fam_reduction *sumsq;
} rms_p;

static nx_status params(const fam_spec *s, rms_p *p, nx_err *err)
{
    nx_status st;
    if ((st = ref_dim(s, "T", -1, &p->T, err)) || (st = ref_dim(s, "H", -1, &p->H, err)) ||
        (st = ref_param_fmt(s, "in", FAM_DEFAULT_FMT, &p->in, err)) || (st = ref_param_fmt(s, "out", FAM_DEFAULT_FMT, &p->out, err)) ||
        (st = ref_param_f32(s, "eps", FAM_DEFAULT_STR, &p->eps, err)) ||
        (st = ref_param_bool(s, "residual", FAM_DEFAULT_BOOL, &p->residual, err)) || (st = ref_need_red(s, "sumsq", &p->sumsq, err)))
        return st;
    if (!(p->eps >= 0)) /* ms + eps is under a square root: a negative eps makes zero rows NaN */
        return nx_err_set(err, NX_EINVAL, "param 'eps' = %g: must be >= 0", (double)p->eps);
    return NX_OK;
}

static nx_status inputs(const fam_spec *s, ref_desc_list *l, nx_err *err)
{
    rms_p p;
    nx_status st = params(s, &p, err);
    if (st)
        return st;
    /* x' = x + residual in [-2R, 2R]: H * (2R)^2 < 2^bits, and 2R exact */
    long r = ref_int_bound(4.0 * (double)p.H, ref_point_exact_bits(&p.sumsq->point), p.in);
    if (p.residual)
        r = r / 2 > 0 ? r / 2 : 1;
    ref_add_float(l, "x", p.in, "T,H", 2, (int64_t[]){p.T, p.H}, r);
    ref_add_float(l, "weight", p.in, "H", 1, (int64_t[]){p.H}, ref_int_bound(1, 6, p.in));
    if (p.residual)
        ref_add_float(l, "residual", p.in, "T,H", 2, (int64_t[]){p.T, p.H}, r);
    return NX_OK;
}

static nx_status run(ref_job *j, nx_err *err)
{
    rms_p p;
    nx_status st = params(j->spec, &p, err);
    if (st)
        return st;
    size_t T = (size_t)p.T, H = (size_t)p.H;
    double *x = NULL, *res = NULL, *weight = NULL, *ss = ref_alloc(T), *y = ref_alloc(T * H);
    if (!ss || !y) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto done;
    }
    if ((st = ref_decode(j, "x", &x, err)) || (st = ref_decode(j, "weight", &weight, err)) ||
        (p.residual && (st = ref_decode(j, "residual", &res, err))))
        goto done;
    if (p.residual) {
#pragma omp parallel for num_threads(ref_threads_for(j, T * H * 8)) schedule(static)
        for (size_t i = 0; i < T * H; i++)
            x[i] = nx_mp_add(&ref_job_math(j)->mp, x[i], res[i], p.in, NX_RNE);
    }
    /* the rows of x' are already contiguous: a = b = x' */
    if ((st = ref_reduce_flat(j, p.sumsq, H, 1, T, p.in, x, p.in, x, ss, err)))
        goto done;
    nx_mode mode = nx_point_out_rounding(&p.sumsq->point);
    int sat = p.sumsq->point.saturate;
#pragma omp parallel for num_threads(ref_threads_for(j, T * H * 8)) schedule(static)
    for (size_t t = 0; t < T; t++) {
        ref_math *m = ref_job_math(j);
        double ms = ref_f32_div(m, ss[t], (double)H);
        double r = ref_f32_rsqrt(m, ref_f32_add(m, ms, p.eps));
        for (size_t h = 0; h < H; h++)
            y[t * H + h] = ref_round(m, ref_f32_mul(m, ref_f32_mul(m, x[t * H + h], r), weight[h]), p.out, mode, sat);
    }
    st = ref_emit(j, "y", p.out, 2, (int64_t[]){p.T, p.H}, y, err);
    if (!st && p.residual)
        st = ref_emit(j, "residual_out", p.in, 2, (int64_t[]){p.T, p.H}, x, err);
done:
    free(x);
    free(res);
    free(weight);
    free(ss);
    free(y);
    return st;
}

const ref_family ref_family_rmsnorm = {"rmsnorm", inputs, run, NULL};
