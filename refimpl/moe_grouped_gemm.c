/* moe_grouped_gemm.c: top-k mixture of experts (docs/families.md,
 * moe_grouped_gemm).  h_j[t, n] = x[t, :] . w[e_j, n, :] by reduction `k`
 * (rounded to its out); y[t, n] = reduction `combine` over j = 0 .. topk-1
 * of the products topk_weights[t, j] * h_j[t, n], in the declared order. */
#include "ref_internal.h"
#include "rows.h"

#include <stdlib.h>
#include <string.h>

typedef struct moe_p {
    long T, E, H, N, topk;
    nx_fmt in;
    const fam_reduction *k, *combine;
} moe_p;

static nx_status params(const fam_spec *s, moe_p *p, nx_err *err)
{
    nx_status st;
    if ((st = ref_dim(s, "T", -1, &p->T, err)) || (st = ref_dim(s, "E", -1, &p->E, err)) ||
        (st = ref_dim(s, "H", -1, &p->H, err)) || (st = ref_dim(s, "N", -1, &p->N, err)) ||
        (st = ref_dim(s, "topk", -1, &p->topk, err)) || (st = ref_param_fmt(s, "in", NX_BF16, &p->in, err)) ||
        (st = ref_need_red(s, "k", &p->k, err)) || (st = ref_need_red(s, "combine", &p->combine, err)))
        return st;
    if (p->topk > p->E)
        return nx_err_set(err, NX_EINVAL, "%s.%s: topk = %ld exceeds the E = %ld experts", s->family,
                          s->point ? s->point : "?", p->topk, p->E);
    return NX_OK;
}

static nx_status inputs(const fam_spec *s, ref_desc_list *l, nx_err *err)
{
    moe_p p;
    nx_status st = params(s, &p, err);
    if (st)
        return st;
    /* weights in [-2, 2]: the combine's sum of topk * 2 * |h| stays below 2^bits
     * when |h| <= R^2 H does, for the smaller of both points' precisions */
    int bits = ref_point_exact_bits(&p.k->point);
    if (ref_point_exact_bits(&p.combine->point) < bits)
        bits = ref_point_exact_bits(&p.combine->point);
    long r = ref_int_bound((double)p.H * 2.0 * (double)p.topk, bits, p.in);
    ref_add_float(l, "x", p.in, "T,H", 2, (int64_t[]){p.T, p.H}, r);
    ref_add_float(l, "w", p.in, "E,N,H", 3, (int64_t[]){p.E, p.N, p.H}, r);
    ref_add_ints(l, "topk_ids", ST_I32, "T,topk", 2, (int64_t[]){p.T, p.topk}, REF_DISTINCT, 0, p.E - 1);
    ref_add_float(l, "topk_weights", NX_FP32, "T,topk", 2, (int64_t[]){p.T, p.topk}, 2);
    return NX_OK;
}

typedef struct moe_ctx {
    const double *x, *tw, *h;
    const st_tensor *w, *ids; /* w is decoded a row at a time, in the gather */
    size_t N, H, topk;
} moe_ctx;

/* `k`, row (t * topk + j) * N + n: x[t, :] (read in place) and
 * w[topk_ids[t, j], n, :]. */
static const double *arow_k(const void *vc, size_t row)
{
    const moe_ctx *c = vc;
    return c->x + row / c->N / c->topk * c->H;
}

static void gather_k(const void *vc, size_t row, double *a, double *b, ref_math *m)
{
    const moe_ctx *c = vc;
    (void)m;
    (void)a;
    size_t n = row % c->N, tj = row / c->N;
    size_t e = (size_t)ref_int_at(c->ids, tj);
    /* the expert's row straight from its storage: the whole of w decoded
     * at once (8 bytes per element, E*N*H of them) cost more in fresh pages
     * than decoding each row for the few tokens routed to it */
    rows_decode_range(c->w, (e * c->N + n) * c->H, c->H, b, NULL);
}

/* `combine`, row t * N + n: topk_weights[t, :] and h_j[t, n] for j = 0 .. topk-1. */
static void gather_combine(const void *vc, size_t row, double *a, double *b, ref_math *m)
{
    const moe_ctx *c = vc;
    (void)m;
    size_t t = row / c->N, n = row % c->N;
    for (size_t j = 0; j < c->topk; j++) {
        a[j] = c->tw[t * c->topk + j];
        b[j] = c->h[(t * c->topk + j) * c->N + n];
    }
}

static nx_status run(ref_job *j, nx_err *err)
{
    moe_p p;
    nx_status st = params(j->spec, &p, err);
    if (st)
        return st;
    size_t T = (size_t)p.T, N = (size_t)p.N, H = (size_t)p.H, K = (size_t)p.topk;
    double *x = NULL, *tw = NULL, *h = ref_alloc(T * K * N), *y = ref_alloc(T * N);
    if (!h || !y) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto done;
    }
    if ((st = ref_decode(j, "x", &x, err)) || (st = ref_decode(j, "topk_weights", &tw, err)))
        goto done;
    moe_ctx c = {x, tw, h, ref_tensor(j, "w"), ref_tensor(j, "topk_ids"), N, H, K};
    if ((st = ref_reduce_rows_a(j, p.k, H, T * K * N, p.in, p.in, arow_k, gather_k, &c, h, err)))
        goto done;
    nx_fmt hf = nx_point_out(&p.k->point);
    if ((st = ref_reduce_rows(j, p.combine, K, 1, T * N, NX_FP32, hf, gather_combine, &c, y, err)))
        goto done;
    st = ref_emit(j, "y", nx_point_out(&p.combine->point), 2, (int64_t[]){p.T, p.N}, y, err);
done:
    free(x);
    free(tw);
    free(h);
    free(y);
    return st;
}

const ref_family ref_family_moe_grouped_gemm = {"moe_grouped_gemm", inputs, run};
