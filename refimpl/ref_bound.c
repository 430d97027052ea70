/* ref_bound.c: a bound on |y - y*| for every element of a family's main
 * output y (refimpl.h, ref_bound), y* the family's mathematical value on the
 * inputs as given (docs/tolerance.md).
 *
 * Every reduction's error comes from nx_bound (its tree, formats, modes,
 * atom cuts and out conversion over the row's own terms); the epilogues
 * carry it on.  A quantity is a pair (E, M): |computed - exact| <= E and
 * |exact| <= M, so |computed| <= M + E.  An fp32 rne operation on such
 * pairs adds the operands' propagated errors and one rounding of a value of
 * magnitude at most the computed one's bound (nx_bound_rounding).  Where a
 * reduction's terms are earlier computed values (the MoE combine over h,
 * gemv's per-group k over u_g, attention's probabilities and partials,
 * softmax's exponentials), those values are computed here, so nx_bound sees
 * the terms the point really adds. */
#include "nx_bound.h"
#include "nx_round_fast.h"
#include "ref_internal.h"
#include "famdesc.h"
#include "fam_int4.h"
#include "rows.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct eb {
    double E, M;
} eb;

static double R(nx_fmt f, nx_mode m, double S)
{
    return nx_bound_rounding(f, m, S);
}

/* A binary64 computation of a bound is within a few 2^-53 of the truth:
 * this relative margin covers every such step below. */
#define MARGIN (1 + 0x1p-40)

static eb eb_exact(double v)
{
    return (eb){0, fabs(v)};
}

/* fp32(x * y), rne */
static eb eb_mul(eb x, eb y)
{
    double E = (x.M + x.E) * y.E + y.M * x.E;
    double S = (x.M + x.E) * (y.M + y.E);
    return (eb){(E + R(NX_FP32, NX_RNE, S)) * MARGIN, x.M * y.M};
}

/* fp32(x + y), rne */
static eb eb_add(eb x, eb y)
{
    double S = x.M + x.E + y.M + y.E;
    return (eb){(x.E + y.E + R(NX_FP32, NX_RNE, S)) * MARGIN, (x.M + y.M) * MARGIN};
}

/* the computed value rounded to f in mode m (saturate: an overflow is
 * +-max finite, which no finite bound covers) */
static eb eb_round(eb x, nx_fmt f, nx_mode m)
{
    return (eb){(x.E + R(f, m, x.M + x.E)) * MARGIN, x.M};
}

/* An elementwise function's own error at a result of magnitude <= S: half
 * an fp32 ulp when correctly rounded (or when the reference evaluates it),
 * its declared ulps otherwise. */
static double elem_err(const fam_spec *s, const char *name, int as_reference, double S)
{
    const fam_elem *e = fam_elem_get(s, name);
    if (!e || e->impl == FAM_ELEM_CR || as_reference)
        return R(NX_FP32, NX_RNE, S);
    return e->ulp * (0x1p-23 * S + 0x1p-149);
}

/* --- the job ----------------------------------------------------------------- */

typedef struct bjob {
    const fam_spec *s;
    const st_file *in;
    int as_ref, threads;
    double *bound;
    size_t n;
} bjob;

static nx_status decode(bjob *j, const char *name, double **out, nx_err *err)
{
    const st_tensor *t = st_find(j->in, name);
    *out = NULL;
    if (!t)
        return nx_err_set(err, NX_EINVAL, "input tensor '%s' is missing", name);
    double *v = ref_alloc(t->nelem);
    if (!v)
        return nx_err_set(err, NX_ENOMEM, "out of memory decoding '%s'", name);
    nx_status st = rows_decode(t, v, err);
    if (st) {
        free(v);
        return st;
    }
    *out = v;
    return NX_OK;
}

/* A program and one nx_bound scratch per thread. */
typedef struct bprog {
    nx_program *p;
    nx_bound **b;
    int nb;
} bprog;

/* 1 when every `atomic` of t is a combinator (the order of whole parts). */
static int atomic_only_combining(const nx_tree *t, int as_comb)
{
    if (!t)
        return 1;
    if (t->kind == NX_T_ATOMIC)
        return as_comb;
    return atomic_only_combining(t->t, 0) && atomic_only_combining(t->u, 0) && atomic_only_combining(t->c, 1);
}

static nx_status bprog_new(bjob *j, const fam_reduction *r, size_t n, int dot, bprog *bp, nx_err *err)
{
    memset(bp, 0, sizeof *bp);
    nx_status st = nx_program_build(&r->point, n, dot, &bp->p, err);
    if (st) {
        nx_err_prefix(err, "reduction '%s'", r->name);
        return st;
    }
    bp->nb = j->threads;
    bp->b = calloc((size_t)bp->nb, sizeof *bp->b);
    if (!bp->b)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    int comb = atomic_only_combining(r->point.tree, 0);
    for (int i = 0; i < bp->nb; i++) {
        if (!(bp->b[i] = nx_bound_new(bp->p)))
            return nx_err_set(err, NX_ENOMEM, "out of memory");
        nx_bound_atomic_combinator(bp->b[i], comb);
    }
    return NX_OK;
}

static void bprog_free(bprog *bp)
{
    for (int i = 0; bp->b && i < bp->nb; i++)
        nx_bound_free(bp->b[i]);
    free(bp->b);
    nx_program_free(bp->p);
    memset(bp, 0, sizeof *bp);
}

/* The bound of one row of a reduction: (E, M) with M = sum |t_i|. */
static eb red_row(const bprog *bp, nx_fmt af, const double *a, nx_fmt bf, const double *b)
{
    eb r;
    r.E = nx_bound_apriori_sum(bp->b[omp_get_thread_num()], bp->p, af, a, bf, b, &r.M);
    return r;
}

/* One row's computed value (the fast engine, bit-identical to MPFR). */
static double red_value(const bprog *bp, nx_fmt af, const double *a, nx_fmt bf, const double *b)
{
    nx_rows in;
    memset(&in, 0, sizeof in);
    in.rows = 1;
    in.a_fmt = af;
    in.a = a;
    in.b_fmt = bf;
    in.b = bp->p->dot ? b : NULL;
    double y = NAN;
    nx_err e;
    if (nx_fast_reduce(bp->p, &in, &y, 1, &e) != NX_OK)
        return NAN;
    return y;
}

/* --- gemm: y* = alpha (a . b) + beta c + bias ------------------------------------ */

static nx_status gemm_bound(bjob *j, nx_err *err)
{
    const fam_spec *s = j->s;
    long M, N, K;
    nx_fmt in, out;
    double alpha, beta;
    int bias;
    const fam_reduction *k;
    nx_status st;
    if ((st = ref_dim(s, "M", -1, &M, err)) || (st = ref_dim(s, "N", -1, &N, err)) ||
        (st = ref_dim(s, "K", -1, &K, err)) || (st = ref_param_fmt(s, "in", FAM_DEFAULT_FMT, &in, err)) ||
        (st = ref_param_fmt(s, "out", FAM_DEFAULT_FMT, &out, err)) || (st = ref_param_f32(s, "alpha", FAM_DEFAULT_STR, &alpha, err)) ||
        (st = ref_param_f32(s, "beta", FAM_DEFAULT_STR, &beta, err)) || (st = ref_param_bool(s, "bias", FAM_DEFAULT_BOOL, &bias, err)) ||
        (st = ref_need_red(s, "k", &k, err)))
        return st;
    double *a = NULL, *b = NULL, *c = NULL, *bv = NULL;
    bprog bp = {0};
    j->n = (size_t)M * (size_t)N;
    if (!(j->bound = ref_alloc(j->n)))
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    if ((st = decode(j, "a", &a, err)) || (st = decode(j, "b", &b, err)) ||
        (beta != 0 && (st = decode(j, "c", &c, err))) || (bias && (st = decode(j, "bias", &bv, err))) ||
        (st = bprog_new(j, k, (size_t)K, 1, &bp, err)))
        goto done;
    nx_mode mode = nx_point_out_rounding(&k->point);
#pragma omp parallel for num_threads(j->threads) schedule(dynamic, 16)
    for (size_t r = 0; r < j->n; r++) {
        size_t m = r / (size_t)N, n = r % (size_t)N;
        eb t = eb_mul(eb_exact(alpha), red_row(&bp, in, a + m * (size_t)K, in, b + n * (size_t)K));
        if (beta != 0)
            t = eb_add(t, eb_mul(eb_exact(beta), eb_exact(c[r])));
        if (bias)
            t = eb_add(t, eb_exact(bv[n]));
        j->bound[r] = eb_round(t, out, mode).E;
    }
done:
    bprog_free(&bp);
    free(a);
    free(b);
    free(c);
    free(bv);
    return st;
}

/* --- gemv_w4a16: y* = sum x (q - z) s ----------------------------------------------- */

static nx_status gemv_bound(bjob *j, nx_err *err)
{
    const fam_spec *s = j->s;
    long B, N, K, G;
    int zp, pk;
    const fam_reduction *k, *grp = NULL;
    nx_status st;
    if ((st = ref_dim(s, "B", -1, &B, err)) || (st = ref_dim(s, "N", -1, &N, err)) ||
        (st = ref_dim(s, "K", -1, &K, err)) || (st = ref_dim(s, "group", -1, &G, err)) ||
        (st = ref_param_bool(s, "zero_points", FAM_DEFAULT_BOOL, &zp, err)) || (st = ref_param_bool(s, "packed", FAM_DEFAULT_BOOL, &pk, err)) ||
        (st = ref_need_red(s, "k", &k, err)))
        return st;
    if (K % G)
        return nx_err_set(err, NX_EINVAL, "group = %ld does not divide K = %ld", G, K);
    const char *sa = fam_param_get(s, "scale_apply");
    int per_group = sa && !strcmp(sa, "per_group");
    if (per_group && (st = ref_need_red(s, "group", &grp, err)))
        return st;
    size_t ng = (size_t)(K / G), Ks = (size_t)K, Gs = (size_t)G;
    double *x = NULL, *sc = NULL;
    bprog bk = {0}, bg = {0};
    const st_tensor *qt = st_find(j->in, "qweight"), *zt = zp ? st_find(j->in, "zeros") : NULL;
    j->n = (size_t)B * (size_t)N;
    if (!(j->bound = ref_alloc(j->n)))
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    if (!qt || (zp && !zt)) {
        st = nx_err_set(err, NX_EINVAL, "input tensor '%s' is missing", !qt ? "qweight" : "zeros");
        goto done;
    }
    if ((st = decode(j, "x", &x, err)) || (st = decode(j, "scales", &sc, err)) ||
        (st = bprog_new(j, k, per_group ? ng : Ks, !per_group, &bk, err)) ||
        (per_group && (st = bprog_new(j, grp, Gs, 1, &bg, err))))
        goto done;
    int fail = 0;
#pragma omp parallel num_threads(j->threads)
    {
        double *w = ref_alloc(Ks), *u = ref_alloc(ng), *qz = ref_alloc(Gs);
        if (!w || !u || !qz) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp for schedule(dynamic, 4)
        for (size_t r = 0; r < j->n; r++) {
            if (!w || !u || !qz)
                continue;
            size_t bi = r / (size_t)N, n = r % (size_t)N;
            const double *xr = x + bi * Ks;
            const uint8_t *q = fam_u4_row(qt->data, n, Ks, pk);
            const uint8_t *zr = zt ? fam_u4_row(zt->data, n, ng, pk) : NULL;
            if (!per_group) {
                /* w = fp16((q - z) s): the dequantization error shifts
                 * the exact value the reduction's bound is taken against */
                double dq = 0;
                for (size_t i = 0; i < Ks; i++) {
                    size_t g = i / Gs;
                    int z = zr ? (int)fam_u4_at(zr, g, pk) : 8;
                    double e = (double)((int)fam_u4_at(q, i, pk) - z) * sc[n * ng + g]; /* exact */
                    w[i] = nx_round_fast(e, NX_FP16, NX_RNE, 0);
                    dq += fabs(xr[i]) * fabs(w[i] - e);
                }
                j->bound[r] = (red_row(&bk, NX_FP16, xr, NX_FP16, w).E + dq) * MARGIN;
                continue;
            }
            /* per_group: p_g by `group`, u_g = fp32(p_g s_g), k over the u_g */
            double E = 0;
            for (size_t g = 0; g < ng; g++) {
                int z = zr ? (int)fam_u4_at(zr, g, pk) : 8;
                for (size_t i = 0; i < Gs; i++)
                    qz[i] = (double)((int)fam_u4_at(q, g * Gs + i, pk) - z);
                eb pg = red_row(&bg, NX_FP16, xr + g * Gs, NX_FP16, qz);
                double pv = red_value(&bg, NX_FP16, xr + g * Gs, NX_FP16, qz), sg = sc[n * ng + g];
                u[g] = nx_round_fast(pv * sg, NX_FP32, NX_RNE, 0); /* pv * sg is exact in binary64 */
                E += fabs(sg) * pg.E + fabs(u[g] - pv * sg);
            }
            j->bound[r] = (red_row(&bk, NX_FP32, u, NX_FP32, NULL).E + E) * MARGIN;
        }
        free(w);
        free(u);
        free(qz);
    }
    if (fail)
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
done:
    bprog_free(&bk);
    bprog_free(&bg);
    free(x);
    free(sc);
    return st;
}

/* --- moe_grouped_gemm: y* = sum_j tw_j (x . w_{e_j}) ----------------------------- */

static nx_status moe_bound(bjob *j, nx_err *err)
{
    const fam_spec *s = j->s;
    long T, E, H, N, topk;
    nx_fmt in;
    const fam_reduction *k, *comb;
    nx_status st;
    if ((st = ref_dim(s, "T", -1, &T, err)) || (st = ref_dim(s, "E", -1, &E, err)) ||
        (st = ref_dim(s, "H", -1, &H, err)) || (st = ref_dim(s, "N", -1, &N, err)) ||
        (st = ref_dim(s, "topk", -1, &topk, err)) || (st = ref_param_fmt(s, "in", FAM_DEFAULT_FMT, &in, err)) ||
        (st = ref_need_red(s, "k", &k, err)) || (st = ref_need_red(s, "combine", &comb, err)))
        return st;
    size_t Hs = (size_t)H, Ns = (size_t)N, tk = (size_t)topk;
    double *x = NULL, *w = NULL, *tw = NULL;
    bprog bk = {0}, bc = {0};
    const st_tensor *ids = st_find(j->in, "topk_ids");
    j->n = (size_t)T * Ns;
    if (!(j->bound = ref_alloc(j->n)))
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    if (!ids) {
        st = nx_err_set(err, NX_EINVAL, "input tensor 'topk_ids' is missing");
        goto done;
    }
    if ((st = decode(j, "x", &x, err)) || (st = decode(j, "w", &w, err)) || (st = decode(j, "topk_weights", &tw, err)) ||
        (st = bprog_new(j, k, Hs, 1, &bk, err)) || (st = bprog_new(j, comb, tk, 1, &bc, err)))
        goto done;
    nx_fmt hf = nx_point_out(&k->point);
    int fail = 0;
#pragma omp parallel num_threads(j->threads)
    {
        double *h = ref_alloc(tk);
        if (!h) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp for schedule(dynamic, 4)
        for (size_t r = 0; r < j->n; r++) {
            if (!h)
                continue;
            size_t t = r / Ns, n = r % Ns;
            double Eh = 0;
            for (size_t q = 0; q < tk; q++) {
                long e = ref_int_at(ids, t * tk + q);
                if (e < 0 || e >= E) {
                    h[q] = NAN;
                    continue;
                }
                const double *xr = x + t * Hs, *wr = w + ((size_t)e * Ns + n) * Hs;
                eb hb = red_row(&bk, in, xr, in, wr);
                h[q] = red_value(&bk, in, xr, in, wr);
                Eh += fabs(tw[t * tk + q]) * hb.E;
            }
            j->bound[r] = (red_row(&bc, NX_FP32, tw + t * tk, hf, h).E + Eh) * MARGIN;
        }
        free(h);
    }
    if (fail)
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
done:
    bprog_free(&bk);
    bprog_free(&bc);
    free(x);
    free(w);
    free(tw);
    return st;
}

/* --- rmsnorm: y* = x' w / sqrt(sum x'^2 / H + eps) ------------------------------- */

static nx_status rms_bound(bjob *j, nx_err *err)
{
    const fam_spec *s = j->s;
    long T, H;
    nx_fmt in, out;
    double eps;
    int residual;
    const fam_reduction *ssr;
    nx_status st;
    if ((st = ref_dim(s, "T", -1, &T, err)) || (st = ref_dim(s, "H", -1, &H, err)) ||
        (st = ref_param_fmt(s, "in", FAM_DEFAULT_FMT, &in, err)) || (st = ref_param_fmt(s, "out", FAM_DEFAULT_FMT, &out, err)) ||
        (st = ref_param_f32(s, "eps", FAM_DEFAULT_STR, &eps, err)) || (st = ref_param_bool(s, "residual", FAM_DEFAULT_BOOL, &residual, err)) ||
        (st = ref_need_red(s, "sumsq", &ssr, err)))
        return st;
    size_t Hs = (size_t)H;
    double *x = NULL, *res = NULL, *wt = NULL;
    bprog bp = {0};
    j->n = (size_t)T * Hs;
    if (!(j->bound = ref_alloc(j->n)))
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    if ((st = decode(j, "x", &x, err)) || (st = decode(j, "weight", &wt, err)) ||
        (residual && (st = decode(j, "residual", &res, err))) || (st = bprog_new(j, ssr, Hs, 1, &bp, err)))
        goto done;
    if (residual) /* x' = round_in(x + residual): fixed by the family, the same for every point */
        for (size_t i = 0; i < j->n; i++)
            x[i] = nx_round_fast(x[i] + res[i], in, NX_RNE, 0); /* two members of in: exact sum in binary64 */
    nx_mode mode = nx_point_out_rounding(&ssr->point);
#pragma omp parallel for num_threads(j->threads) schedule(dynamic, 1)
    for (size_t t = 0; t < (size_t)T; t++) {
        const double *xr = x + t * Hs;
        eb ss = red_row(&bp, in, xr, in, xr); /* M = sum x'^2, the exact ss (rounded up) */
        double ms_lo = ss.M / MARGIN / MARGIN / (double)H;
        eb ms = eb_round((eb){ss.E / (double)H * MARGIN, ss.M / (double)H * MARGIN}, NX_FP32, NX_RNE);
        eb a = eb_add(ms, eb_exact(eps));
        double a_lo = (ms_lo + eps) / MARGIN; /* the exact argument is at least this */
        double d = a.E / a_lo;
        double rs = 1 / sqrt(a_lo) * MARGIN; /* >= rsqrt of the exact argument */
        eb r;
        if (!(d < 0.5) || !(a_lo > 0)) {
            r = (eb){INFINITY, rs};
        } else {
            /* rsqrt(a*(1 + delta)) = rsqrt(a*)(1 + delta)^(-1/2), |delta| <= d */
            double rel = (1 / sqrt(1 - d) - 1) * MARGIN;
            r.M = rs;
            r.E = rs * rel + elem_err(s, "rsqrt", j->as_ref, rs * (1 + rel));
        }
        for (size_t h = 0; h < Hs; h++) {
            eb y = eb_mul(eb_mul(eb_exact(xr[h]), r), eb_exact(wt[h]));
            j->bound[t * Hs + h] = eb_round(y, out, mode).E;
        }
    }
done:
    bprog_free(&bp);
    free(x);
    free(res);
    free(wt);
    return st;
}

/* --- silu_and_mul: y* = silu(g) u ------------------------------------------------- */

static nx_status silu_bound(bjob *j, nx_err *err)
{
    const fam_spec *s = j->s;
    long T, H;
    nx_fmt in, out;
    nx_status st;
    if ((st = ref_dim(s, "T", -1, &T, err)) || (st = ref_dim(s, "H", -1, &H, err)) ||
        (st = ref_param_fmt(s, "in", FAM_DEFAULT_FMT, &in, err)) || (st = ref_param_fmt(s, "out", FAM_DEFAULT_FMT, &out, err)))
        return st;
    size_t Hs = (size_t)H;
    double *x = NULL;
    j->n = (size_t)T * Hs;
    if (!(j->bound = ref_alloc(j->n)))
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    if ((st = decode(j, "x", &x, err)))
        return st;
    for (size_t i = 0; i < j->n; i++) {
        size_t t = i / Hs, h = i % Hs;
        double g = x[t * 2 * Hs + h], u = x[t * 2 * Hs + Hs + h];
        /* binary64 within a few ulps; the smallest double keeps the
         * subnormal term where silu(g) underflows (exp(-g) overflows) */
        double sg = fabs(g / (1 + exp(-g))) * MARGIN * MARGIN + 0x1p-1074;
        if (isnan(sg))
            sg = INFINITY;
        eb si = {elem_err(s, "silu", j->as_ref, sg), sg};
        j->bound[i] = eb_round(eb_mul(si, eb_exact(u)), out, NX_RNE).E;
    }
    free(x);
    return NX_OK;
}

/* --- paged_decode_attention: y* = sum_j e^(s*_j) v_j / sum_j e^(s*_j) ------------ */

/* Softmax is invariant under a shift: with the computed max m_c of a split
 * (and M over the splits), y* = sum e^(s*_j - M) v_j / sum e^(s*_j - M),
 * s*_j = scale (q . k_j) exact, and every computed exponential is compared
 * with e^(s*_j - m_c) or e^(m_c - M): an argument within delta of the exact
 * one gives a relative error e^delta - 1, plus the exp's own rounding. */

typedef struct lenprog {
    size_t n;
    bprog p;
} lenprog;

typedef struct lencache {
    lenprog *v;
    size_t n;
} lencache;

static nx_status lc_add(bjob *j, lencache *c, const fam_reduction *r, size_t n, int dot, nx_err *err)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].n == n)
            return NX_OK;
    lenprog *v = realloc(c->v, (c->n + 1) * sizeof *v);
    if (!v)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    c->v = v;
    c->v[c->n].n = n;
    nx_status st = bprog_new(j, r, n, dot, &c->v[c->n].p, err);
    c->n++;
    return st;
}

static const bprog *lc_get(const lencache *c, size_t n)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].n == n)
            return &c->v[i].p;
    return NULL;
}

static void lc_free(lencache *c)
{
    for (size_t i = 0; i < c->n; i++)
        bprog_free(&c->v[i].p);
    free(c->v);
}

/* Rows of one program at once (the engine over contiguous rows). */
static int red_values(const bprog *bp, size_t rows, nx_fmt af, const double *a, nx_fmt bf, const double *b, double *y)
{
    nx_rows in;
    memset(&in, 0, sizeof in);
    in.rows = rows;
    in.a_fmt = af;
    in.a = a;
    in.b_fmt = bf;
    in.b = bp->p->dot ? b : NULL;
    nx_err e;
    return nx_fast_reduce(bp->p, &in, y, 1, &e) == NX_OK;
}

/* e^x rounded up enough to bound the exact exponential (libm: < 1 ulp) */
static double exp_up(double x)
{
    return exp(x) * (1 + 0x1p-50);
}

static nx_status attn_bound(bjob *j, nx_err *err)
{
    const fam_spec *s = j->s;
    long B, HQ, HKV, D, P, NP, MAXP, split = 0;
    nx_fmt in, out;
    double scale;
    const fam_reduction *qk, *ssum, *pv, *comb = NULL;
    nx_status st;
    if ((st = ref_dim(s, "B", -1, &B, err)) || (st = ref_dim(s, "HQ", -1, &HQ, err)) ||
        (st = ref_dim(s, "HKV", -1, &HKV, err)) || (st = ref_dim(s, "D", -1, &D, err)) ||
        (st = ref_dim(s, "P", -1, &P, err)) || (st = ref_dim(s, "NP", -1, &NP, err)) ||
        (st = ref_dim(s, "MAXP", -1, &MAXP, err)) || (st = ref_param_fmt(s, "in", FAM_DEFAULT_FMT, &in, err)) ||
        (st = ref_param_fmt(s, "out", FAM_DEFAULT_FMT, &out, err)) || (st = ref_need_red(s, "qk", &qk, err)) ||
        (st = ref_need_red(s, "softmax_sum", &ssum, err)) || (st = ref_need_red(s, "pv", &pv, err)))
        return st;
    if (HQ % HKV)
        return nx_err_set(err, NX_EINVAL, "HQ = %ld is not a multiple of HKV = %ld", HQ, HKV);
    if (fam_param_get(s, "split") && (st = fam_param_long(s, "split", &split, err)))
        return st;
    if (split < 0)
        return nx_err_set(err, NX_EINVAL, "split = %ld is negative", split);
    if (split > 0 && (st = ref_need_red(s, "combine", &comb, err)))
        return st;
    if (fam_param_get(s, "scale")) {
        if ((st = ref_param_f32(s, "scale", NULL, &scale, err)))
            return st;
    } else {
        ref_math m;
        ref_math_init(&m);
        scale = ref_f32_rsqrt(&m, (double)D);
        ref_math_clear(&m);
    }
    const fam_elem *ex = fam_elem_get(s, "exp");
    if (!j->as_ref && ex && ex->impl == FAM_ELEM_APPROX)
        return nx_err_set(err, NX_EUNSUPPORTED,
                          "%s: exp is a declared approximation (%s) whose results are the terms of the softmax "
                          "reductions; their bound is derived over correctly rounded terms only",
                          s->family, ex->approx ? ex->approx : "approx");
    const st_tensor *bt = st_find(j->in, "block_table"), *cl = st_find(j->in, "context_lens");
    if (!bt || !cl)
        return nx_err_set(err, NX_EINVAL, "input tensor '%s' is missing", !bt ? "block_table" : "context_lens");
    size_t Ds = (size_t)D, Ps = (size_t)P, nh = (size_t)HQ, g = (size_t)(HQ / HKV);
    double *q = NULL, *k = NULL, *v = NULL;
    bprog bqk = {0};
    lencache css = {0}, cpv = {0}, ccb = {0};
    size_t maxlen = 1, maxns = 1;
    j->n = (size_t)B * nh * Ds;
    if (!(j->bound = ref_alloc(j->n)))
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    if ((st = decode(j, "q", &q, err)) || (st = decode(j, "k_cache", &k, err)) || (st = decode(j, "v_cache", &v, err)) ||
        (st = bprog_new(j, qk, Ds, 1, &bqk, err)))
        goto done;
    for (long b = 0; b < B && !st; b++) { /* the programs of every length */
        size_t L = (size_t)ref_int_at(cl, (size_t)b), S = split ? (size_t)split : L, ns = (L + S - 1) / S;
        size_t last = L - (ns - 1) * S;
        if ((st = lc_add(j, &css, ssum, S < L ? S : L, 0, err)) || (st = lc_add(j, &css, ssum, last, 0, err)) ||
            (st = lc_add(j, &cpv, pv, S < L ? S : L, 1, err)) || (st = lc_add(j, &cpv, pv, last, 1, err)) ||
            (comb && (st = lc_add(j, &ccb, comb, ns, 1, err))))
            break;
        if (L > maxlen)
            maxlen = L;
        if (ns > maxns)
            maxns = ns;
    }
    if (st)
        goto done;
    nx_fmt lf = nx_point_out(&ssum->point), of = nx_point_out(&pv->point);
    nx_mode mode = nx_point_out_rounding(&pv->point);
    int fail = 0;
#pragma omp parallel num_threads(j->threads)
    {
        ref_math m;
        ref_math_init(&m);
        size_t cap = maxlen * Ds;
        double *qa = ref_alloc(cap), *kb = ref_alloc(cap), *sv = ref_alloc(maxlen), *sE = ref_alloc(maxlen);
        double *pr = ref_alloc(maxlen), *pe = ref_alloc(maxlen), *dl = ref_alloc(maxlen);
        double *ml = ref_alloc(maxns), *lv = ref_alloc(maxns), *lE = ref_alloc(maxns), *llo = ref_alloc(maxns);
        double *ov = ref_alloc(maxns * Ds), *oE = ref_alloc(maxns * Ds), *w = ref_alloc(maxns), *we = ref_alloc(maxns);
        double *wlo = ref_alloc(maxns), *col = ref_alloc(maxns), *Ov = ref_alloc(Ds), *OE = ref_alloc(Ds);
        int ok = qa && kb && sv && sE && pr && pe && dl && ml && lv && lE && llo && ov && oE && w && we && wlo && col && Ov &&
                 OE;
        if (!ok) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (size_t u = 0; u < (size_t)B * nh; u++) {
            if (!ok)
                continue;
            size_t b = u / nh, h = u % nh, kvh = h / g, L = (size_t)ref_int_at(cl, b);
            size_t S = split ? (size_t)split : L, ns = (L + S - 1) / S;
            const double *qr = q + (b * nh + h) * Ds;
            int bad = 0;
            for (size_t c = 0; c < ns && !bad; c++) {
                size_t first = c * S, len = L - first < S ? L - first : S;
                /* scores: s = fp32(scale * qk), qk within its bound */
                for (size_t i = 0; i < len; i++) {
                    size_t jj = first + i, page = (size_t)ref_int_at(bt, b * (size_t)MAXP + jj / Ps);
                    const double *kr = k + ((page * Ps + jj % Ps) * (size_t)HKV + kvh) * Ds;
                    memcpy(qa + i * Ds, qr, Ds * sizeof *qa);
                    memcpy(kb + i * Ds, kr, Ds * sizeof *kb);
                }
                if (!red_values(&bqk, len, in, qa, in, kb, sv)) {
                    bad = 1;
                    break;
                }
                double mx = -INFINITY;
                for (size_t i = 0; i < len; i++) {
                    double E = red_row(&bqk, in, qa + i * Ds, in, kb + i * Ds).E, x = scale * sv[i]; /* exact */
                    sv[i] = nx_round_fast(x, NX_FP32, NX_RNE, 0);
                    sE[i] = fabs(scale) * E * MARGIN + fabs(sv[i] - x);
                    if (isnan(sv[i]) || !isfinite(sE[i]))
                        bad = 1;
                    mx = sv[i] > mx ? sv[i] : mx;
                }
                /* p = exp(fp32(s - m)): within e^delta - 1 of e^(s* - m), plus exp's rounding */
                double lo = 0, ep = 0;
                for (size_t i = 0; i < len && !bad; i++) {
                    double d = sv[i] - mx, arg = nx_round_fast(d, NX_FP32, NX_RNE, 0); /* d exact */
                    double delta = (sE[i] + fabs(arg - d)) * MARGIN;
                    nx_err e1;
                    pr[i] = ref_f32_exp(&m, arg, &e1);
                    double ea = exp_up(arg);
                    pe[i] = (ea * expm1(delta) * MARGIN + elem_err(s, "exp", j->as_ref, ea)) * MARGIN;
                    dl[i] = delta;
                    lo += exp(arg - delta) / MARGIN / MARGIN;
                    ep += pe[i];
                }
                if (bad)
                    break;
                const bprog *bs = lc_get(&css, len), *bpv = lc_get(&cpv, len);
                ml[c] = mx;
                llo[c] = lo;
                lE[c] = (red_row(bs, NX_FP32, pr, NX_FP32, NULL).E + ep) * MARGIN;
                if (!red_values(bs, 1, NX_FP32, pr, NX_FP32, NULL, &lv[c])) {
                    bad = 1;
                    break;
                }
                /* o[d] over the products p_j v_j[d] */
                for (size_t d = 0; d < Ds; d++) {
                    double ev = 0;
                    for (size_t i = 0; i < len; i++) {
                        size_t jj = first + i, page = (size_t)ref_int_at(bt, b * (size_t)MAXP + jj / Ps);
                        double vv = v[((page * Ps + jj % Ps) * (size_t)HKV + kvh) * Ds + d];
                        qa[d * len + i] = pr[i];
                        kb[d * len + i] = vv;
                        ev += fabs(vv) * pe[i];
                    }
                    oE[c * Ds + d] = (red_row(bpv, NX_FP32, qa + d * len, in, kb + d * len).E + ev) * MARGIN;
                }
                if (!red_values(bpv, Ds, NX_FP32, qa, in, kb, ov + c * Ds))
                    bad = 1;
            }
            double Lv = 0, LE = 0, Llo = 0;
            if (!bad && !comb) {
                Lv = lv[0];
                LE = lE[0];
                Llo = llo[0];
                for (size_t d = 0; d < Ds; d++) {
                    Ov[d] = ov[d];
                    OE[d] = oE[d];
                }
            } else if (!bad) {
                /* w_c = exp(fp32(m_c - M)) against e^(m_c - M) */
                double M = -INFINITY;
                for (size_t c = 0; c < ns; c++)
                    M = ml[c] > M ? ml[c] : M;
                Llo = 0;
                for (size_t c = 0; c < ns; c++) {
                    double d = ml[c] - M, arg = nx_round_fast(d, NX_FP32, NX_RNE, 0), delta = fabs(arg - d) * MARGIN;
                    nx_err e1;
                    w[c] = ref_f32_exp(&m, arg, &e1);
                    double ea = exp_up(arg);
                    we[c] = (ea * expm1(delta) * MARGIN + elem_err(s, "exp", j->as_ref, ea)) * MARGIN;
                    Llo += exp(arg - delta) / MARGIN / MARGIN * llo[c];
                }
                const bprog *bc = lc_get(&ccb, ns);
                double extra = 0;
                for (size_t c = 0; c < ns; c++)
                    extra += fabs(w[c]) * lE[c] + (fabs(lv[c]) + lE[c]) * we[c];
                LE = (red_row(bc, NX_FP32, w, lf, lv).E + extra) * MARGIN;
                if (!red_values(bc, 1, NX_FP32, w, lf, lv, &Lv))
                    bad = 1;
                for (size_t d = 0; d < Ds && !bad; d++) {
                    extra = 0;
                    for (size_t c = 0; c < ns; c++) {
                        col[c] = ov[c * Ds + d];
                        extra += fabs(w[c]) * oE[c * Ds + d] + (fabs(col[c]) + oE[c * Ds + d]) * we[c];
                    }
                    OE[d] = (red_row(bc, NX_FP32, w, of, col).E + extra) * MARGIN;
                    if (!red_values(bc, 1, NX_FP32, w, of, col, &Ov[d]))
                        bad = 1;
                }
            }
            for (size_t d = 0; d < Ds; d++) {
                double *out_b = &j->bound[u * Ds + d];
                if (bad || !(Lv > 0) || !(Llo > 0)) {
                    *out_b = INFINITY;
                    continue;
                }
                /* O/L against the exact ratio: |dO|/L + |O*| |dL| / (L L*) */
                double qv = fabs(Ov[d] / Lv) * MARGIN;
                double E = (OE[d] / Lv + (fabs(Ov[d]) + OE[d]) * LE / (Lv * Llo)) * MARGIN;
                eb y = {E + R(NX_FP32, NX_RNE, qv), qv + E};
                *out_b = eb_round(y, out, mode).E;
            }
        }
        ref_math_clear(&m);
        free(qa), free(kb), free(sv), free(sE), free(pr), free(pe), free(dl), free(ml), free(lv), free(lE);
        free(llo), free(ov), free(oE), free(w), free(we), free(wlo), free(col), free(Ov), free(OE);
    }
    if (fail)
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
done:
    bprog_free(&bqk);
    lc_free(&css);
    lc_free(&cpv);
    lc_free(&ccb);
    free(q);
    free(k);
    free(v);
    return st;
}

/* --- softmax: y*_h = e^(x_h - m) / sum_j e^(x_j - m) ------------------------------ */

/* max with NaN propagation (m starts at -inf) */
static double nan_max(double m, double x)
{
    if (isnan(m) || isnan(x))
        return NAN;
    return x > m ? x : m;
}

/* The smallest fp32 number >= v (v >= 0, finite). */
static double f32_up(double v)
{
    float f = (float)v;
    if ((double)f < v)
        f = nextafterf(f, INFINITY);
    return (double)f;
}

/* softmax is shift-invariant: y* = e^(x_h - m) / sum_j e^(x_j - m) with the
 * computed maximum m (exact: one of the inputs), so each computed e_h is
 * compared with e^(x_h - m).  The argument fp32(x_h - m) is within delta of
 * x_h - m, so e_h is within e^a (e^delta - 1) plus exp's own error; `sum`
 * adds its bound over the terms (an approximate exp: over an upper envelope
 * of the terms it may give, the bound growing with the terms' magnitudes)
 * and the terms' errors; the division e/s adds |de|/s + |e*| |ds| / (s s*),
 * with s* >= sum_j e^(a_j - delta_j) >= 1 (the maximum's term is e^0) and
 * every computed s >= s* - |ds|; then fp32 and `out`.  A row with a NaN, a
 * +inf or only -inf has no finite bound. */
static nx_status softmax_bound(bjob *j, nx_err *err)
{
    const fam_spec *s = j->s;
    long T, H;
    nx_fmt in, out;
    const fam_reduction *sr;
    nx_status st;
    if ((st = ref_dim(s, "T", -1, &T, err)) || (st = ref_dim(s, "H", -1, &H, err)) ||
        (st = ref_param_fmt(s, "in", FAM_DEFAULT_FMT, &in, err)) || (st = ref_param_fmt(s, "out", FAM_DEFAULT_FMT, &out, err)) ||
        (st = ref_need_red(s, "sum", &sr, err)))
        return st;
    const fam_elem *ex = fam_elem_get(s, "exp");
    /* an approximation within N ulps: e' <= e* (1 + N 2^-23) + N 2^-149 and
     * e* <= e (1 + 2^-24) + 2^-150 for the correctly rounded e */
    double N = !j->as_ref && ex && ex->impl == FAM_ELEM_APPROX ? ex->ulp : 0;
    size_t Hs = (size_t)H;
    double *x = NULL;
    bprog bp = {0};
    j->n = (size_t)T * Hs;
    if (!(j->bound = ref_alloc(j->n)))
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    if ((st = decode(j, "x", &x, err)) || (st = bprog_new(j, sr, Hs, 0, &bp, err)))
        goto done;
    nx_mode mode = nx_point_out_rounding(&sr->point);
    int fail = 0;
#pragma omp parallel num_threads(j->threads)
    {
        ref_math m;
        ref_math_init(&m);
        double *e = ref_alloc(Hs), *pe = ref_alloc(Hs), *u = ref_alloc(Hs);
        if (!e || !pe || !u) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (size_t t = 0; t < (size_t)T; t++) {
            if (!e || !pe || !u)
                continue;
            const double *xr = x + t * Hs;
            double mx = -INFINITY;
            for (size_t h = 0; h < Hs; h++)
                mx = nan_max(mx, xr[h]);
            int bad = !isfinite(mx);
            double lo = 0, ep = 0;
            for (size_t h = 0; h < Hs && !bad; h++) {
                double a = xr[h] == -INFINITY ? -INFINITY : ref_f32_add(&m, xr[h], -mx);
                if (a == -INFINITY) { /* e = +0; e^(x - m) is 0 or below every double */
                    e[h] = u[h] = 0;
                    pe[h] = xr[h] == -INFINITY ? 0 : 0x1p-1074;
                    ep += pe[h];
                    continue;
                }
                double d = xr[h] - mx; /* binary64: within 2^-53 |d| of x - m */
                double delta = (fabs(a - d) + fabs(d) * 0x1p-53) * MARGIN;
                nx_err e1;
                e[h] = ref_f32_exp(&m, a, &e1);
                if (delta < 1) {
                    double ea = exp_up(a);
                    pe[h] = (ea * expm1(delta) * MARGIN + elem_err(s, "exp", j->as_ref, ea)) * MARGIN;
                } else { /* |a| > 2^24: both values lie in [0, e^(a + delta)] */
                    double hi = exp_up(a + delta);
                    pe[h] = (hi + elem_err(s, "exp", j->as_ref, hi)) * MARGIN;
                }
                u[h] = N > 0 ? f32_up((e[h] * (1 + 0x1p-24) + 0x1p-150) * (1 + N * 0x1p-23) * MARGIN + N * 0x1p-149)
                             : e[h];
                lo += exp(a - delta) / MARGIN / MARGIN;
                ep += pe[h];
            }
            double sE = bad ? INFINITY : (red_row(&bp, NX_FP32, u, NX_FP32, NULL).E + ep) * MARGIN;
            double slo = (lo - sE) / MARGIN; /* below s* and below every computed s */
            for (size_t h = 0; h < Hs; h++) {
                double *out_b = &j->bound[t * Hs + h];
                if (bad || !(slo > 0) || !(sE < INFINITY)) {
                    *out_b = INFINITY;
                    continue;
                }
                double qv = (e[h] + 2 * pe[h]) / slo * MARGIN; /* >= the computed e' / s' and y* */
                double E = (pe[h] / slo + (e[h] + pe[h]) * sE / (slo * lo)) * MARGIN;
                eb y = {E + R(NX_FP32, NX_RNE, qv), qv};
                *out_b = eb_round(y, out, mode).E;
            }
        }
        ref_math_clear(&m);
        free(e);
        free(pe);
        free(u);
    }
    if (fail)
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
done:
    bprog_free(&bp);
    free(x);
    return st;
}

/* --- dispatch ------------------------------------------------------------------------ */

/* Each family's bound.  The params that define its mathematical value (not
 * its order or precision), so that two points differing in one compute
 * different functions, are its descriptor's (family/famdesc.h). */
static const struct {
    const char *family;
    nx_status (*fn)(bjob *j, nx_err *err);
} fams[] = {
    {"gemm", gemm_bound},       {"gemv_w4a16", gemv_bound},     {"moe_grouped_gemm", moe_bound},
    {"paged_decode_attention", attn_bound}, {"rmsnorm", rms_bound}, {"silu_and_mul", silu_bound},
    {"softmax", softmax_bound},
};
#define NFAMS (sizeof fams / sizeof fams[0])

static int fam_index(const fam_spec *s)
{
    for (size_t i = 0; i < NFAMS; i++)
        if (s->family && !strcmp(s->family, fams[i].family))
            return (int)i;
    return -1;
}

int ref_bound_same_function(const fam_spec *a, const fam_spec *b, char *why, size_t len)
{
    int fi = fam_index(a);
    if (fi < 0 || !b->family || strcmp(a->family, b->family) != 0) {
        snprintf(why, len, "the two points are of different families (%s, %s)", a->family ? a->family : "?",
                 b->family ? b->family : "?");
        return 0;
    }
    /* the params that define the family's value: its descriptor's */
    const fam_desc *fd = fam_desc_of(a->family);
    for (int k = 0; fd && k < 4 && fd->value_params[k]; k++) {
        char ba[64], bb[64]; /* a param left to the family's default has the default's value */
        const char *p = fd->value_params[k], *va = fam_param_text(a, p, ba, sizeof ba),
                   *vb = fam_param_text(b, p, bb, sizeof bb);
        if ((va == NULL) != (vb == NULL) || (va && strcmp(va, vb) != 0)) {
            snprintf(why, len, "the two points compute different functions: param '%s' is %s and %s", p,
                     va ? va : "(default)", vb ? vb : "(default)");
            return 0;
        }
    }
    return 1;
}

nx_status ref_bound(const fam_spec *spec, const st_file *in, int as_reference, int threads, double **bound,
                    size_t *count, char *why, size_t wlen, nx_err *err)
{
    *bound = NULL;
    *count = 0;
    if (wlen)
        why[0] = 0;
    int fi = fam_index(spec);
    if (fi < 0)
        return nx_err_set(err, NX_EINVAL, "family '%s' has no reference implementation",
                          spec->family ? spec->family : "(none)");
    nx_status st = ref_check_inputs(spec, in, err);
    if (st)
        return st;
    bjob j = {spec, in, as_reference != 0, threads > 0 ? threads : omp_get_max_threads(), NULL, 0};
    nx_err e1 = {0};
    st = fams[fi].fn(&j, &e1);
    if (st) {
        free(j.bound);
        if (st == NX_EUNSUPPORTED)
            snprintf(why, wlen, "%s", e1.msg);
        if (err)
            *err = e1;
        return st;
    }
    size_t inf_at = SIZE_MAX;
    for (size_t i = 0; i < j.n && inf_at == SIZE_MAX; i++)
        if (!(j.bound[i] < INFINITY))
            inf_at = i;
    if (inf_at != SIZE_MAX) {
        snprintf(why, wlen,
                 "%s.%s: the bound is unbounded at element %zu (a rounding may overflow, an input is not finite, or "
                 "an elementwise argument is not bounded away from its singularity)",
                 spec->family, spec->point ? spec->point : "?", inf_at);
        free(j.bound);
        return nx_err_set(err, NX_EUNSUPPORTED, "%s", why);
    }
    *bound = j.bound;
    *count = j.n;
    return NX_OK;
}
