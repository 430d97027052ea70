/* gemm.c: y[m, n] = epilogue(a[m, :] . b[n, :]) (docs/families.md, gemm).
 * The dot product is reduction `k` over K; the epilogue is fp32 rne
 * operations: t = fp32(alpha * acc), t = fp32(t + fp32(beta * c[m, n])) when
 * beta != 0, t = fp32(t + bias[n]) when bias; y = t rounded to param `out`
 * with the `k` point's out_rounding and saturate. */
#include "ref_internal.h"
#include "rows.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

typedef struct gemm_p {
    long M, N, K;
    nx_fmt in, out;
    double alpha, beta;
    int bias;
    const fam_reduction *k;
} gemm_p;

static nx_status params(const fam_spec *s, gemm_p *p, nx_err *err)
{
    nx_status st;
    if ((st = ref_dim(s, "M", -1, &p->M, err)) || (st = ref_dim(s, "N", -1, &p->N, err)) ||
        (st = ref_dim(s, "K", -1, &p->K, err)) || (st = ref_param_fmt(s, "in", FAM_DEFAULT_FMT, &p->in, err)) ||
        (st = ref_param_fmt(s, "out", FAM_DEFAULT_FMT, &p->out, err)) ||
        (st = ref_param_f32(s, "alpha", FAM_DEFAULT_STR, &p->alpha, err)) ||
        (st = ref_param_f32(s, "beta", FAM_DEFAULT_STR, &p->beta, err)) || (st = ref_param_bool(s, "bias", FAM_DEFAULT_BOOL, &p->bias, err)) ||
        (st = ref_need_red(s, "k", &p->k, err)))
        return st;
    if (nx_point_out(&p->k->point) != NX_FP32)
        return nx_err_set(err, NX_EINVAL,
                          "%s.%s: reduction 'k' has out = %s; gemm needs fp32 (the result feeds the fp32 epilogue, "
                          "the output format is param 'out')",
                          s->family, s->point ? s->point : "?", nx_format(nx_point_out(&p->k->point))->name);
    return NX_OK;
}

static nx_status inputs(const fam_spec *s, ref_desc_list *l, nx_err *err)
{
    gemm_p p;
    nx_status st = params(s, &p, err);
    if (st)
        return st;
    long r = ref_int_bound((double)p.K, ref_point_exact_bits(&p.k->point), p.in);
    ref_add_float(l, "a", p.in, "M,K", 2, (int64_t[]){p.M, p.K}, r);
    ref_add_float(l, "b", p.in, "N,K", 2, (int64_t[]){p.N, p.K}, r);
    if (p.beta != 0)
        ref_add_float(l, "c", p.out, "M,N", 2, (int64_t[]){p.M, p.N}, ref_int_bound(1, 8, p.out));
    if (p.bias)
        ref_add_float(l, "bias", NX_FP32, "N", 1, (int64_t[]){p.N}, 8);
    return NX_OK;
}

typedef struct gemm_ctx {
    const double *a;
    const st_tensor *b; /* decoded a row at a time, in the gather */
    size_t M, K;
} gemm_ctx;

/* Row n * M + i: a[i, :] (read in place) and b[n, :].  The rows run n-major, so the M rows
 * that meet one row of b come together: the thread decodes it from its
 * storage once into its cache and copies it from there (N*K of b decoded
 * up front cost more in fresh pages; decoded for each of the M rows it
 * was a fifth of the reference's time). */
static const double *arow(const void *vc, size_t row)
{
    const gemm_ctx *c = vc;
    return c->a + row % c->M * c->K; /* a[i, :] in place */
}

static void gather(const void *vc, size_t row, double *a, double *b, ref_math *m)
{
    const gemm_ctx *c = vc;
    size_t n = row / c->M;
    (void)a;
    ref_math_cached_row(m, c, n, c->b, n * c->K, c->K, b);
}

static nx_status run(ref_job *j, nx_err *err)
{
    gemm_p p;
    nx_status st = params(j->spec, &p, err);
    if (st)
        return st;
    size_t M = (size_t)p.M, N = (size_t)p.N, K = (size_t)p.K;
    double *a = NULL, *c = NULL, *bias = NULL, *acc = ref_alloc(M * N), *accn = ref_alloc(M * N);
    if (!acc || !accn) {
        free(acc);
        free(accn);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    if ((st = ref_decode(j, "a", &a, err)) ||
        (p.beta != 0 && (st = ref_decode(j, "c", &c, err))) || (p.bias && (st = ref_decode(j, "bias", &bias, err))))
        goto done;
    gemm_ctx ctx = {a, ref_tensor(j, "b"), M, K};
    ref_job_forget_rows(j); /* no thread's cache holds a row of this job yet */
    /* accn[n * M + i] = acc[i, n] */
    if ((st = ref_reduce_rows_a(j, p.k, K, M * N, p.in, p.in, arow, gather, &ctx, accn, err)))
        goto done;
    nx_mode mode = nx_point_out_rounding(&p.k->point);
    int sat = p.k->point.saturate;
#pragma omp parallel for num_threads(ref_threads_for(j, M * N * 8)) schedule(static)
    for (size_t r = 0; r < M * N; r++) {
        ref_math *m = ref_job_math(j);
        double t = ref_f32_mul(m, p.alpha, accn[(r % N) * M + r / N]);
        if (p.beta != 0)
            t = ref_f32_add(m, t, ref_f32_mul(m, p.beta, c[r]));
        if (p.bias)
            t = ref_f32_add(m, t, bias[r % N]);
        acc[r] = ref_round(m, t, p.out, mode, sat);
    }
    st = ref_emit(j, "y", p.out, 2, (int64_t[]){p.M, p.N}, acc, err);
done:
    free(a);
    free(c);
    free(bias);
    free(acc);
    free(accn);
    return st;
}

/* y[m, n] is reduction k of a[m, :] . b[n, :] when the epilogue leaves the
 * fp32 result as it is (alpha = 1, beta = 0, no bias): output element
 * (i, n) is row i * N + n. */
static nx_status out_rows(const fam_spec *s, const st_file *in, const st_tensor *y, const int64_t *rows,
                          size_t max_rows, ref_out_rows *o, nx_err *err)
{
    gemm_p p;
    nx_status st = params(s, &p, err);
    if (st)
        return st;
    if (p.alpha != 1 || p.beta != 0 || p.bias)
        return nx_err_set(err, NX_EUNSUPPORTED,
                          "%s.%s: its epilogue (alpha = %g, beta = %g, bias = %s) changes the result of reduction 'k'; "
                          "only alpha = 1, beta = 0 and no bias leave y the reduction's result",
                          s->family, s->point ? s->point : "?", p.alpha, p.beta, p.bias ? "true" : "false");
    const st_tensor *ta = st_find(in, "a"), *tb = st_find(in, "b");
    if (!ta || !tb)
        return nx_err_set(err, NX_EINVAL, "%s: inputs 'a' and 'b' are needed", s->family);
    double *a = ref_alloc((size_t)ta->nelem), *b = ref_alloc((size_t)tb->nelem);
    if (!a || !b)
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
    else if (!(st = rows_decode(ta, a, err)) && !(st = rows_decode(tb, b, err)))
        st = ref_out_rows_dot(s, "k", a, p.M, b, (size_t)p.N, (size_t)p.K, p.in, p.in, p.out, y, rows, max_rows, o, err);
    free(a);
    free(b);
    return st;
}

const ref_family ref_family_gemm = {"gemm", inputs, run, out_rows};
