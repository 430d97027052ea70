/* paged_decode_attention.c: one decode step of attention over a paged KV
 * cache (docs/families.md, paged_decode_attention).  For sequence b and
 * query head h (KV head h / (HQ / HKV)), position j < context_lens[b] lives
 * in page block_table[b, j / P], slot j % P:
 *   s_j = fp32(scale * qk_j), qk_j = reduction `qk` over D;
 *   per split c (positions [c*split, min((c+1)*split, L))): m_c = max s_j,
 *   p_j = exp(fp32(s_j - m_c)), l_c = reduction `softmax_sum` over the p_j,
 *   o_c[d] = reduction `pv` over the products p_j * v_j[d];
 *   with split > 0: M = max m_c, w_c = exp(fp32(m_c - M)), L = reduction
 *   `combine` of w_c * l_c, O[d] = reduction `combine` of w_c * o_c[d];
 *   split = 0: one split, L = l_0, O = o_0 (no combine runs);
 *   y[d] = fp32(O[d] / L) rounded to param `out` (the pv point's
 *   out_rounding and saturate).
 * Rows of equal length are reduced together; exp is correctly rounded. */
#include "ref_internal.h"
#include "rows.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct attn_p {
    long B, HQ, HKV, D, P, NP, MAXP, split;
    nx_fmt in, out;
    double scale;
    const fam_reduction *qk, *ssum, *pv, *combine;
} attn_p;

static nx_status params(const fam_spec *s, attn_p *p, nx_err *err)
{
    nx_status st;
    const char *who = s->point ? s->point : "?";
    if ((st = ref_dim(s, "B", -1, &p->B, err)) || (st = ref_dim(s, "HQ", -1, &p->HQ, err)) ||
        (st = ref_dim(s, "HKV", -1, &p->HKV, err)) || (st = ref_dim(s, "D", -1, &p->D, err)) ||
        (st = ref_dim(s, "P", -1, &p->P, err)) || (st = ref_dim(s, "NP", -1, &p->NP, err)) ||
        (st = ref_dim(s, "MAXP", -1, &p->MAXP, err)) || (st = ref_param_fmt(s, "in", FAM_DEFAULT_FMT, &p->in, err)) ||
        (st = ref_param_fmt(s, "out", FAM_DEFAULT_FMT, &p->out, err)) || (st = ref_need_red(s, "qk", &p->qk, err)) ||
        (st = ref_need_red(s, "softmax_sum", &p->ssum, err)) || (st = ref_need_red(s, "pv", &p->pv, err)))
        return st;
    if (p->HQ % p->HKV)
        return nx_err_set(err, NX_EINVAL, "%s.%s: HQ = %ld is not a multiple of HKV = %ld", s->family, who, p->HQ,
                          p->HKV);
    if (p->MAXP * p->P > (1L << 30))
        return nx_err_set(err, NX_EINVAL, "%s.%s: MAXP * P = %ld positions is too many", s->family, who,
                          p->MAXP * p->P);
    p->split = 0;
    if (fam_param_get(s, "split") && (st = fam_param_long(s, "split", &p->split, err)))
        return st;
    if (p->split < 0)
        return nx_err_set(err, NX_EINVAL, "%s.%s: split = %ld is negative", s->family, who, p->split);
    p->combine = NULL;
    if (p->split > 0 && (st = ref_need_red(s, "combine", &p->combine, err)))
        return st;
    if (fam_param_get(s, "scale"))
        return ref_param_f32(s, "scale", NULL, &p->scale, err);
    ref_math m;
    ref_math_init(&m);
    p->scale = ref_f32_rsqrt(&m, (double)p->D);
    ref_math_clear(&m);
    return NX_OK;
}

static nx_status inputs(const fam_spec *s, ref_desc_list *l, nx_err *err)
{
    attn_p p;
    nx_status st = params(s, &p, err);
    if (st)
        return st;
    long r = ref_int_bound((double)p.D, ref_point_exact_bits(&p.qk->point), p.in);
    ref_add_float(l, "q", p.in, "B,HQ,D", 3, (int64_t[]){p.B, p.HQ, p.D}, r);
    ref_add_float(l, "k_cache", p.in, "NP,P,HKV,D", 4, (int64_t[]){p.NP, p.P, p.HKV, p.D}, r);
    ref_add_float(l, "v_cache", p.in, "NP,P,HKV,D", 4, (int64_t[]){p.NP, p.P, p.HKV, p.D},
                  ref_int_bound(1, 6, p.in));
    ref_add_ints(l, "block_table", ST_I32, "B,MAXP", 2, (int64_t[]){p.B, p.MAXP}, REF_INTS, 0, p.NP - 1);
    ref_add_ints(l, "context_lens", ST_I32, "B", 1, (int64_t[]){p.B}, REF_INTS, 1, p.MAXP * p.P);
    return NX_OK;
}

/* One split of one (sequence, head). */
typedef struct unit {
    size_t b, h, first; /* first KV position */
    size_t len;
    size_t pos;         /* index of its first score in s[] / p[] */
} unit;

typedef struct attn_ctx {
    const attn_p *p;
    const double *q, *prob, *w, *l, *o;
    const st_tensor *kt, *vt, *bt; /* k_cache and v_cache read where they lie */
    const size_t *len, *pos0, *ns, *u0; /* per sequence: L, first score, splits, first unit */
    const unit *units;
    const size_t *sel; /* the units (or sequences x heads) of this batch */
    size_t B;
} attn_ctx;

/* Index into k_cache / v_cache of position j of sequence b, KV head kvh. */
static size_t kv_at(const attn_ctx *c, size_t b, size_t j, size_t kvh)
{
    size_t P = (size_t)c->p->P, D = (size_t)c->p->D, HKV = (size_t)c->p->HKV;
    size_t page = (size_t)ref_int_at(c->bt, b * (size_t)c->p->MAXP + j / P);
    return ((page * P + j % P) * HKV + kvh) * D;
}

static size_t kv_head(const attn_ctx *c, size_t h)
{
    return h / (size_t)(c->p->HQ / c->p->HKV);
}

/* `qk`, row r of sequence b (binary search on pos0), local = r - pos0[b]:
 * the rows run ((kvh * L + j) * G + g), G = HQ / HKV query heads per KV
 * head, so the G scores that read one key row come together and the thread
 * decodes it once (key r / G: pos0[b] is a multiple of HQ); the score is
 * query head h = kvh * G + g at position j, qk_pos gives its index. */
static void qk_row(const attn_ctx *c, size_t r, size_t *bi, size_t *h, size_t *j)
{
    size_t lo = 0, hi = c->B; /* the last sequence with pos0 <= r */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (c->pos0[mid] <= r)
            lo = mid;
        else
            hi = mid;
    }
    size_t G = (size_t)(c->p->HQ / c->p->HKV), L = c->len[lo], local = r - c->pos0[lo];
    size_t kvh = local / G / L;
    *bi = lo;
    *j = local / G % L;
    *h = kvh * G + local % G;
}

static size_t qk_pos(const attn_ctx *c, size_t r)
{
    size_t bi, h, j;
    qk_row(c, r, &bi, &h, &j);
    return c->pos0[bi] + h * c->len[bi] + j;
}

static const double *arow_qk(const void *vc, size_t r)
{
    const attn_ctx *c = vc;
    size_t bi, h, j;
    qk_row(c, r, &bi, &h, &j);
    return c->q + (bi * (size_t)c->p->HQ + h) * (size_t)c->p->D; /* q[b, h, :] in place */
}

static void gather_qk(const void *vc, size_t r, double *a, double *b, ref_math *m)
{
    const attn_ctx *c = vc;
    (void)a;
    size_t bi, h, j, D = (size_t)c->p->D, key = r / (size_t)(c->p->HQ / c->p->HKV);
    qk_row(c, r, &bi, &h, &j);
    ref_math_cached_row(m, c, key, c->kt, kv_at(c, bi, j, kv_head(c, h)), D, b); /* k_j: D values, one row */
}

/* `softmax_sum`, row r: the p_j of unit sel[r]. */
static void gather_ssum(const void *vc, size_t r, double *a, double *b, ref_math *m)
{
    const attn_ctx *c = vc;
    (void)b;
    (void)m;
    const unit *u = &c->units[c->sel[r]];
    for (size_t i = 0; i < u->len; i++)
        a[i] = c->prob[u->pos + i];
}

/* `pv`, row r = i * D + d: p_j and v_j[d] of unit sel[i].  The D rows of a
 * unit come one after another, so the thread decodes the unit's V rows
 * (len x D values) once into its cache and reads the column d from there;
 * out of memory for the cache, value by value from storage. */
static void gather_pv(const void *vc, size_t r, double *a, double *b, ref_math *m)
{
    const attn_ctx *c = vc;
    size_t D = (size_t)c->p->D, d = r % D, ui = c->sel[r / D];
    const unit *u = &c->units[ui];
    size_t kvh = kv_head(c, u->h);
    double *vr = m->cache_owner == c && m->cache_key == ui ? m->cache : NULL;
    if (!vr && (vr = ref_math_cache(m, u->len * D))) {
        for (size_t i = 0; i < u->len; i++)
            rows_decode_range(c->vt, kv_at(c, u->b, u->first + i, kvh), D, vr + i * D, NULL);
        m->cache_key = ui;
        m->cache_owner = c;
    }
    for (size_t i = 0; i < u->len; i++) {
        a[i] = c->prob[u->pos + i];
        if (vr)
            b[i] = vr[i * D + d];
        else
            rows_decode_range(c->vt, kv_at(c, u->b, u->first + i, kvh) + d, 1, b + i, NULL);
    }
}

/* `combine` of L, row r: w_c and l_c over the splits of (b, h) = sel[r]. */
static void gather_cl(const void *vc, size_t r, double *a, double *b, ref_math *m)
{
    const attn_ctx *c = vc;
    (void)m;
    size_t bh = c->sel[r], bi = bh / (size_t)c->p->HQ, h = bh % (size_t)c->p->HQ;
    size_t u0 = c->u0[bi] + h * c->ns[bi];
    for (size_t s = 0; s < c->ns[bi]; s++) {
        a[s] = c->w[u0 + s];
        b[s] = c->l[u0 + s];
    }
}

/* `combine` of O, row r = i * D + d: w_c and o_c[d] over the splits of sel[i]. */
static void gather_co(const void *vc, size_t r, double *a, double *b, ref_math *m)
{
    const attn_ctx *c = vc;
    (void)m;
    size_t D = (size_t)c->p->D, d = r % D;
    size_t bh = c->sel[r / D], bi = bh / (size_t)c->p->HQ, h = bh % (size_t)c->p->HQ;
    size_t u0 = c->u0[bi] + h * c->ns[bi];
    for (size_t s = 0; s < c->ns[bi]; s++) {
        a[s] = c->w[u0 + s];
        b[s] = c->o[(u0 + s) * D + d];
    }
}

/* max with NaN propagation (m starts at -inf) */
static double nmax(double m, double x)
{
    if (isnan(m) || isnan(x))
        return NAN;
    return x > m ? x : m;
}

typedef struct attn_bufs {
    size_t *len, *pos0, *ns, *u0, *sel;
    unit *units;
    double *q, *s, *prob, *m, *l, *o, *w, *L, *O, *y;
} attn_bufs;

static void bufs_free(attn_bufs *x)
{
    free(x->len);
    free(x->pos0);
    free(x->ns);
    free(x->u0);
    free(x->sel);
    free(x->units);
    free(x->q);
    free(x->s);
    free(x->prob);
    free(x->m);
    free(x->l);
    free(x->o);
    free(x->w);
    free(x->L);
    free(x->O);
    free(x->y);
}

/* Runs a reduction over the items sel[0 .. cnt) grouped by the length len_of
 * gives each (rows per item: per_item), with gather g. */
typedef size_t (*len_fn)(const attn_ctx *c, size_t item);

static size_t unit_len(const attn_ctx *c, size_t item)
{
    return c->units[item].len;
}

static size_t seq_splits(const attn_ctx *c, size_t item)
{
    return c->ns[item / (size_t)c->p->HQ];
}

static nx_status by_length(ref_job *j, attn_ctx *c, size_t nitems, len_fn lf, size_t per_item,
                           const fam_reduction *r, int dot, nx_fmt af, nx_fmt bf, ref_gather_fn g, double *y,
                           size_t *sel, double *tmp, nx_err *err)
{
    /* the distinct lengths, smallest first; items keep their order inside one */
    size_t done = 0, last = 0;
    while (done < nitems) {
        size_t n = (size_t)-1;
        for (size_t i = 0; i < nitems; i++) {
            size_t li = lf(c, i);
            if (li > last && li < n)
                n = li;
        }
        size_t cnt = 0;
        for (size_t i = 0; i < nitems; i++)
            if (lf(c, i) == n)
                sel[cnt++] = i;
        c->sel = sel;
        nx_status st = ref_reduce_rows(j, r, n, dot, cnt * per_item, af, bf, g, c, tmp, err);
        if (st)
            return st;
        for (size_t i = 0; i < cnt; i++)
            for (size_t k = 0; k < per_item; k++)
                y[sel[i] * per_item + k] = tmp[i * per_item + k];
        done += cnt;
        last = n;
    }
    return NX_OK;
}

static nx_status run(ref_job *j, nx_err *err)
{
    attn_p p;
    nx_status st = params(j->spec, &p, err);
    if (st)
        return st;
    size_t B = (size_t)p.B, HQ = (size_t)p.HQ, D = (size_t)p.D;
    attn_bufs x = {0};
    double *tmp = NULL;
    x.len = malloc(B * sizeof *x.len);
    x.pos0 = malloc(B * sizeof *x.pos0);
    x.ns = malloc(B * sizeof *x.ns);
    x.u0 = malloc(B * sizeof *x.u0);
    if (!x.len || !x.pos0 || !x.ns || !x.u0) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto done;
    }
    const st_tensor *cl = ref_tensor(j, "context_lens");
    size_t npos = 0, nunits = 0;
    for (size_t b = 0; b < B; b++) {
        size_t L = (size_t)ref_int_at(cl, b), S = p.split ? (size_t)p.split : L;
        x.len[b] = L;
        x.pos0[b] = npos;
        x.ns[b] = (L + S - 1) / S;
        x.u0[b] = nunits;
        npos += HQ * L;
        nunits += HQ * x.ns[b];
    }
    size_t nsel = nunits > B * HQ ? nunits : B * HQ;
    x.units = malloc(nunits * sizeof *x.units);
    x.sel = malloc(nsel * sizeof *x.sel);
    x.s = ref_alloc(npos);
    x.prob = ref_alloc(npos);
    x.m = ref_alloc(nunits);
    x.l = ref_alloc(nunits);
    x.o = ref_alloc(nunits * D);
    x.w = ref_alloc(nunits);
    x.L = ref_alloc(B * HQ);
    x.O = ref_alloc(B * HQ * D);
    x.y = ref_alloc(B * HQ * D);
    tmp = ref_alloc(nsel * D);
    if (!x.units || !x.sel || !x.s || !x.prob || !x.m || !x.l || !x.o || !x.w || !x.L || !x.O || !x.y || !tmp) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t b = 0, u = 0; b < B; b++) {
        size_t L = x.len[b], S = p.split ? (size_t)p.split : L;
        for (size_t h = 0; h < HQ; h++)
            for (size_t c = 0; c < x.ns[b]; c++, u++) {
                size_t first = c * S, len = L - first < S ? L - first : S;
                x.units[u] = (unit){b, h, first, len, x.pos0[b] + h * L + first};
            }
    }
    if ((st = ref_decode(j, "q", &x.q, err)))
        goto done;
    attn_ctx c = {&p,   x.q,    x.prob, x.w,   x.l,     x.o,  ref_tensor(j, "k_cache"), ref_tensor(j, "v_cache"),
                  ref_tensor(j, "block_table"), x.len, x.pos0, x.ns, x.u0, x.units, x.sel, B};
    ref_job_forget_rows(j); /* no thread's cache holds a row of this job yet */

    /* scores, into prob (free until the probabilities), then each score to its place */
    if ((st = ref_reduce_rows_a(j, p.qk, D, npos, p.in, p.in, arow_qk, gather_qk, &c, x.prob, err)))
        goto done;
    for (size_t r = 0; r < npos; r++)
        x.s[qk_pos(&c, r)] = x.prob[r];
    ref_job_forget_rows(j); /* the caches now hold key rows: not a unit's values */
    /* per split: max, probabilities */
    nx_status est = NX_OK;
#pragma omp parallel for num_threads(ref_threads_for(j, npos * 64)) schedule(dynamic, 16)
    for (size_t u = 0; u < nunits; u++) {
        ref_math *m = ref_job_math(j);
        const unit *un = &x.units[u];
        double mx = -INFINITY;
        for (size_t i = 0; i < un->len; i++) {
            x.s[un->pos + i] = ref_f32_mul(m, p.scale, x.s[un->pos + i]);
            mx = nmax(mx, x.s[un->pos + i]);
        }
        x.m[u] = mx;
        for (size_t i = 0; i < un->len; i++) {
            nx_err e1 = {0};
            x.prob[un->pos + i] = ref_f32_exp(m, ref_f32_add(m, x.s[un->pos + i], -mx), &e1);
            if (e1.code) {
#pragma omp critical
                {
                    est = e1.code;
                    *err = e1;
                }
            }
        }
    }
    if ((st = est))
        goto done;
    nx_fmt pf = NX_FP32;
    if ((st = by_length(j, &c, nunits, unit_len, 1, p.ssum, 0, pf, pf, gather_ssum, x.l, x.sel, tmp, err)) ||
        (st = by_length(j, &c, nunits, unit_len, D, p.pv, 1, pf, p.in, gather_pv, x.o, x.sel, tmp, err)))
        goto done;
    if (!p.combine) { /* split = 0: one split per (b, h), unit index b * HQ + h */
        for (size_t i = 0; i < B * HQ; i++) {
            x.L[i] = x.l[i];
            for (size_t d = 0; d < D; d++)
                x.O[i * D + d] = x.o[i * D + d];
        }
    } else {
        for (size_t b = 0; b < B; b++)
            for (size_t h = 0; h < HQ; h++) {
                ref_math *m = &j->maths[0];
                size_t u0 = x.u0[b] + h * x.ns[b];
                double M = -INFINITY;
                for (size_t s = 0; s < x.ns[b]; s++)
                    M = nmax(M, x.m[u0 + s]);
                for (size_t s = 0; s < x.ns[b]; s++) {
                    nx_err e1 = {0};
                    x.w[u0 + s] = ref_f32_exp(m, ref_f32_add(m, x.m[u0 + s], -M), &e1);
                    if (e1.code) {
                        *err = e1;
                        st = e1.code;
                        goto done;
                    }
                }
            }
        nx_fmt lf = nx_point_out(&p.ssum->point), of = nx_point_out(&p.pv->point);
        if ((st = by_length(j, &c, B * HQ, seq_splits, 1, p.combine, 1, NX_FP32, lf, gather_cl, x.L, x.sel, tmp,
                            err)) ||
            (st = by_length(j, &c, B * HQ, seq_splits, D, p.combine, 1, NX_FP32, of, gather_co, x.O, x.sel, tmp,
                            err)))
            goto done;
    }
    nx_mode mode = nx_point_out_rounding(&p.pv->point);
    int sat = p.pv->point.saturate;
#pragma omp parallel for num_threads(ref_threads_for(j, B * HQ * D * 8)) schedule(static)
    for (size_t i = 0; i < B * HQ * D; i++) {
        ref_math *m = ref_job_math(j);
        x.y[i] = ref_round(m, ref_f32_div(m, x.O[i], x.L[i / D]), p.out, mode, sat);
    }
    st = ref_emit(j, "y", p.out, 3, (int64_t[]){p.B, p.HQ, p.D}, x.y, err);
done:
    bufs_free(&x);
    free(tmp);
    return st;
}

const ref_family ref_family_paged_decode_attention = {"paged_decode_attention", inputs, run, NULL};
