/* moe_grouped_gemm.c: top-k mixture of experts (docs/families.md,
 * moe_grouped_gemm).  h_j[t, n] = x[t, :] . w[e_j, n, :] by reduction `k`
 * (rounded to its out); y[t, n] = reduction `combine` over j = 0 .. topk-1
 * of the products topk_weights[t, j] * h_j[t, n], in the declared order. */
#include "ref_internal.h"
#include "rows.h"

#include <stdint.h>
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
        (st = ref_dim(s, "topk", -1, &p->topk, err)) || (st = ref_param_fmt(s, "in", FAM_DEFAULT_FMT, &p->in, err)) ||
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
    size_t N, H, topk, E;
    const size_t *order; /* the (t, j) pairs t * topk + j by expert, each expert's in increasing order */
    const size_t *start; /* expert e's pairs: order[start[e] .. start[e + 1]) */
} moe_ctx;

/* `k` rows run expert by expert: expert e's rows are N * cnt_e from
 * start[e] * N, row n * cnt_e + i being pair order[start[e] + i] and
 * output n, so the tokens routed to one expert meet each of its weight
 * rows one after another and the thread decodes that row once. */
static void k_row(const moe_ctx *c, size_t row, size_t *e, size_t *n, size_t *tj)
{
    /* the last expert whose rows start at or before row: it has rows (an
     * expert without tokens starts where the next one does) */
    size_t lo = 0, hi = c->E;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (c->start[mid] * c->N <= row)
            lo = mid;
        else
            hi = mid;
    }
    size_t cnt = c->start[lo + 1] - c->start[lo], local = row - c->start[lo] * c->N;
    *e = lo;
    *n = local / cnt;
    *tj = c->order[c->start[lo] + local % cnt];
}

/* `k`: x[t, :] (read in place) and w[e, n, :]. */
static const double *arow_k(const void *vc, size_t row)
{
    const moe_ctx *c = vc;
    size_t e, n, tj;
    k_row(c, row, &e, &n, &tj);
    return c->x + tj / c->topk * c->H;
}

static void gather_k(const void *vc, size_t row, double *a, double *b, ref_math *m)
{
    const moe_ctx *c = vc;
    (void)a;
    size_t e, n, tj;
    k_row(c, row, &e, &n, &tj);
    size_t key = e * c->N + n;
    ref_math_cached_row(m, c, key, c->w, key * c->H, c->H, b);
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
    double *x = NULL, *tw = NULL, *hs = NULL, *h = ref_alloc(T * K * N), *y = ref_alloc(T * N);
    size_t *order = NULL, *start = NULL;
    if (!h || !y) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto done;
    }
    if ((st = ref_decode(j, "x", &x, err)) || (st = ref_decode(j, "topk_weights", &tw, err)))
        goto done;
    const st_tensor *ids = ref_tensor(j, "topk_ids");
    size_t E = (size_t)p.E;
    if (!(order = malloc(T * K * sizeof *order)) || !(start = calloc(E + 1, sizeof *start)) ||
        !(hs = ref_alloc(T * K * N))) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t tj = 0; tj < T * K; tj++) /* counting sort of the pairs by expert */
        start[(size_t)ref_int_at(ids, tj) + 1]++;
    for (size_t e = 0; e < E; e++)
        start[e + 1] += start[e];
    {
        size_t *next = malloc(E * sizeof *next);
        if (!next) {
            st = nx_err_set(err, NX_ENOMEM, "out of memory");
            goto done;
        }
        memcpy(next, start, E * sizeof *next);
        for (size_t tj = 0; tj < T * K; tj++)
            order[next[(size_t)ref_int_at(ids, tj)]++] = tj;
        free(next);
    }
    moe_ctx c = {x, tw, h, ref_tensor(j, "w"), ids, N, H, K, E, order, start};
    ref_job_forget_rows(j); /* no thread's cache holds a row of this job yet */
    if ((st = ref_reduce_rows_a(j, p.k, H, T * K * N, p.in, p.in, arow_k, gather_k, &c, hs, err)))
        goto done;
    for (size_t e = 0, r = 0; e < E; e++) /* to h[(t * topk + j) * N + n], in k_row's order */
        for (size_t n = 0; n < N; n++)
            for (size_t i = start[e]; i < start[e + 1]; i++)
                h[order[i] * N + n] = hs[r++];
    nx_fmt hf = nx_point_out(&p.k->point);
    if ((st = ref_reduce_rows(j, p.combine, K, 1, T * N, NX_FP32, hf, gather_combine, &c, y, err)))
        goto done;
    st = ref_emit(j, "y", nx_point_out(&p.combine->point), 2, (int64_t[]){p.T, p.N}, y, err);
done:
    free(x);
    free(tw);
    free(hs);
    free(order);
    free(start);
    free(h);
    free(y);
    return st;
}

const ref_family ref_family_moe_grouped_gemm = {"moe_grouped_gemm", inputs, run, NULL};
