/* diff.c: two tensors element by element (diff.h): counts, the ulp
 * histogram, first and worst element, errors, and the localisation along
 * each axis and through the trace's inputs. */
#include "diff.h"
#include "famdesc.h"
#include "compare.h"
#include "nx_format.h"
#include "nx_limits.h"
#include "rows.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *diff_bucket_name(int bucket)
{
    static const char *const names[DIFF_H_NBUCKETS] = {"0", "1", "2-3", "4-15", "16-255", ">=256", "nan/inf"};
    return bucket >= 0 && bucket < DIFF_H_NBUCKETS ? names[bucket] : "?";
}

int diff_bucket_of(uint64_t d)
{
    if (d == 0)
        return DIFF_H_0;
    if (d == 1)
        return DIFF_H_1;
    if (d <= 3)
        return DIFF_H_2_3;
    if (d <= 15)
        return DIFF_H_4_15;
    if (d <= 255)
        return DIFF_H_16_255;
    return DIFF_H_256_UP;
}

size_t diff_shape_text(int ndim, const int64_t *shape, char *buf, size_t cap)
{
    size_t k = 0;
    int w = snprintf(buf, cap, "[");
    k += (size_t)w;
    for (int d = 0; d < ndim; d++) {
        w = snprintf(k < cap ? buf + k : NULL, k < cap ? cap - k : 0, "%s%lld", d ? ", " : "", (long long)shape[d]);
        k += (size_t)w;
    }
    w = snprintf(k < cap ? buf + k : NULL, k < cap ? cap - k : 0, "]");
    return k + (size_t)w;
}

void diff_result_free(diff_result *r)
{
    if (!r)
        return;
    for (int d = 0; d < r->naxes; d++)
        free(r->axes[d].count);
    for (int g = 0; g < r->ngroups; g++) {
        free(r->groups[g].ndiff);
        free(r->groups[g].ntotal);
    }
    free(r->list);
    memset(r, 0, sizeof *r);
}

/* --- axis names from the trace's family ------------------------------------------ */

/* The outputs' axes of each family (docs/families.md) are its descriptor's
 * (family/famdesc.h).  rmsnorm's residual_out has y's. */

static void name_axes(diff_result *r, const trace *t)
{
    for (int d = 0; d < r->naxes; d++) {
        diff_axis *x = &r->axes[d];
        if (d == 0) {
            snprintf(x->unit, sizeof x->unit, "row");
            snprintf(x->units, sizeof x->units, "rows");
        } else if (d == r->naxes - 1) {
            snprintf(x->unit, sizeof x->unit, "column");
            snprintf(x->units, sizeof x->units, "columns");
        } else {
            snprintf(x->unit, sizeof x->unit, "index %d", d);
            snprintf(x->units, sizeof x->units, "indices %d", d);
        }
    }
    const fam_desc *an = t ? fam_desc_of(t->family) : NULL;
    if (!an)
        return;
    int nd = 0;
    while (nd < 3 && an->out_dims[nd])
        nd++;
    if (nd != r->naxes)
        return;
    for (int d = 0; d < nd; d++) {
        int64_t v;
        if (!trace_shape_dim(t, an->out_dims[d], &v) || v != r->axes[d].extent)
            return; /* not the family's output layout: keep the plain names */
    }
    for (int d = 0; d < nd; d++) {
        diff_axis *x = &r->axes[d];
        snprintf(x->dim, sizeof x->dim, "%s", an->out_dims[d]);
        snprintf(x->unit, sizeof x->unit, "%s", an->out_units[d][0]);
        snprintf(x->units, sizeof x->units, "%s", an->out_units[d][1]);
    }
}

/* --- groups: KV heads, pages, experts ----------------------------------------- */

static diff_group *new_group(diff_result *r, const char *unit, const char *units, const char *users, size_t nitems)
{
    if (r->ngroups >= DIFF_MAX_GROUPS)
        return NULL;
    diff_group *g = &r->groups[r->ngroups++];
    memset(g, 0, sizeof *g);
    snprintf(g->unit, sizeof g->unit, "%s", unit);
    snprintf(g->units, sizeof g->units, "%s", units);
    snprintf(g->users, sizeof g->users, "%s", users);
    g->nitems = nitems;
    if (nitems) {
        g->ndiff = calloc(nitems, sizeof *g->ndiff);
        g->ntotal = calloc(nitems, sizeof *g->ntotal);
        if (!g->ndiff || !g->ntotal) {
            g->nitems = 0;
            snprintf(g->note, sizeof g->note, "out of memory");
        }
    }
    return g;
}

/* An I32 input of the trace with the given shape (ndim 1 or 2), or NULL. */
static const st_tensor *int_input(const trace *t, const char *name, int ndim, int64_t d0, int64_t d1)
{
    const st_tensor *x = t ? trace_input(t, name) : NULL;
    if (!x || x->dtype != ST_I32 || x->ndim != ndim || x->shape[0] != d0 || (ndim == 2 && x->shape[1] != d1))
        return NULL;
    return x;
}

static int32_t i32_at(const st_tensor *x, size_t i)
{
    return (int32_t)(uint32_t)st_get_bits(x, x->data, i);
}

/* The trace of the pair that holds input `name`, preferring A's. */
static const trace *with_input(const diff_context *c, const char *name)
{
    if (c->ta && trace_input(c->ta, name))
        return c->ta;
    if (c->tb && trace_input(c->tb, name))
        return c->tb;
    return c->ta ? c->ta : c->tb;
}

static void find_groups(diff_result *r, const diff_context *c)
{
    const trace *t = c->ta ? c->ta : c->tb;
    if (!t || !r->mismatched || !r->naxes || !r->axes[0].dim[0])
        return;
    const diff_axis *rows = &r->axes[0];
    if (!strcmp(t->family, "paged_decode_attention")) {
        int64_t B = rows->extent, HQ, HKV, P, NP, MAXP;
        if (trace_shape_dim(t, "HQ", &HQ) && trace_shape_dim(t, "HKV", &HKV) && HKV > 0 && HQ % HKV == 0 &&
            r->naxes == 3) {
            diff_group *g = new_group(r, "KV head", "KV heads", "query heads", (size_t)HKV);
            if (g && g->nitems) {
                snprintf(g->source, sizeof g->source, "query head h reads KV head h / (HQ/HKV), HQ=%lld, HKV=%lld",
                         (long long)HQ, (long long)HKV);
                for (int64_t h = 0; h < HQ; h++) {
                    g->ntotal[h / (HQ / HKV)]++;
                    g->ndiff[h / (HQ / HKV)] += r->axes[1].count[h] > 0;
                }
            }
        }
        if (trace_shape_dim(t, "P", &P) && trace_shape_dim(t, "NP", &NP) && trace_shape_dim(t, "MAXP", &MAXP) &&
            P > 0 && NP > 0 && NP <= (1 << 24)) {
            const trace *ti = with_input(c, "block_table");
            const st_tensor *bt = int_input(ti, "block_table", 2, B, MAXP);
            const st_tensor *cl = int_input(ti, "context_lens", 1, B, 0);
            diff_group *g = new_group(r, "page", "pages", "sequences", bt && cl ? (size_t)NP : 0);
            if (g && !bt)
                snprintf(g->note, sizeof g->note,
                         "not named: the traces hold no in.block_table [%lld, %lld] I32 (inputs given by seed: "
                         "`parity gen` regenerates them)", (long long)B, (long long)MAXP);
            else if (g && !cl)
                snprintf(g->note, sizeof g->note, "not named: the traces hold no in.context_lens [%lld] I32",
                         (long long)B);
            else if (g && g->nitems) {
                snprintf(g->source, sizeof g->source, "in.block_table and in.context_lens of %s", ti->path);
                for (int64_t b = 0; b < B; b++) {
                    int64_t len = i32_at(cl, (size_t)b), np = (len + P - 1) / P;
                    if (np > MAXP)
                        np = MAXP;
                    for (int64_t j = 0; j < np; j++) {
                        int32_t pg = i32_at(bt, (size_t)(b * MAXP + j));
                        if (pg < 0 || pg >= NP)
                            continue;
                        int seen = 0; /* a page read twice by one sequence counts once */
                        for (int64_t j2 = 0; j2 < j && !seen; j2++)
                            seen = i32_at(bt, (size_t)(b * MAXP + j2)) == pg;
                        if (seen)
                            continue;
                        g->ntotal[pg]++;
                        g->ndiff[pg] += rows->count[b] > 0;
                    }
                }
            }
        }
    } else if (!strcmp(t->family, "moe_grouped_gemm")) {
        int64_t T = rows->extent, E, K;
        if (trace_shape_dim(t, "E", &E) && trace_shape_dim(t, "topk", &K) && E > 0 && E <= (1 << 24)) {
            const trace *ti = with_input(c, "topk_ids");
            const st_tensor *ids = int_input(ti, "topk_ids", 2, T, K);
            diff_group *g = new_group(r, "expert", "experts", "tokens", ids ? (size_t)E : 0);
            if (g && !ids)
                snprintf(g->note, sizeof g->note,
                         "not named: the traces hold no in.topk_ids [%lld, %lld] I32 (inputs given by seed: "
                         "`parity gen` regenerates them)", (long long)T, (long long)K);
            else if (g && g->nitems) {
                snprintf(g->source, sizeof g->source, "in.topk_ids of %s", ti->path);
                for (int64_t tk = 0; tk < T; tk++)
                    for (int64_t j = 0; j < K; j++) {
                        int32_t e = i32_at(ids, (size_t)(tk * K + j));
                        if (e < 0 || e >= E)
                            continue;
                        int seen = 0;
                        for (int64_t j2 = 0; j2 < j && !seen; j2++)
                            seen = i32_at(ids, (size_t)(tk * K + j2)) == e;
                        if (seen)
                            continue;
                        g->ntotal[e]++;
                        g->ndiff[e] += rows->count[tk] > 0;
                    }
            }
        }
    }
}

/* --- the comparison ------------------------------------------------------------------ */

static void elem_of(const st_tensor *a, const st_tensor *b, int fmt, size_t i, diff_elem *e)
{
    memset(e, 0, sizeof *e);
    e->index = i;
    e->a_bits = st_get_bits(a, a->data, i);
    e->b_bits = st_get_bits(b, b->data, i);
    e->a = e->b = NAN;
    if (fmt >= 0) {
        e->a = nx_decode((nx_fmt)fmt, e->a_bits, NULL);
        e->b = nx_decode((nx_fmt)fmt, e->b_bits, NULL);
        e->has_ulp = !isinf(e->a) && !isinf(e->b) && cmp_ulp_distance((nx_fmt)fmt, e->a_bits, e->b_bits, &e->ulp);
    }
}

nx_status diff_tensors(const st_tensor *a, const st_tensor *b, const diff_context *ctx, diff_result *out,
                       nx_err *err)
{
    diff_context c0 = {0};
    if (!ctx)
        ctx = &c0;
    memset(out, 0, sizeof *out);
    char sa[160], sb[160];
    diff_shape_text(a->ndim, a->shape, sa, sizeof sa);
    diff_shape_text(b->ndim, b->shape, sb, sizeof sb);
    if (strcmp(sa, sb) != 0)
        return nx_err_set(err, NX_EINVAL, "shapes differ: %s vs %s", sa, sb);
    if (a->dtype != b->dtype)
        return nx_err_set(err, NX_EINVAL, "dtypes differ: %s vs %s (both shapes %s); compare outputs of one format",
                          st_dtype_name(a->dtype), st_dtype_name(b->dtype), sa);
    /* a count per index of every axis and a byte to mark them: a shape like
     * [0, 2^40] holds nothing yet asks for that much (docs/limits.md) */
    uint64_t axes = 0;
    for (int d = 0; d < a->ndim; d++)
        if (__builtin_add_overflow(axes, (uint64_t)a->shape[d], &axes))
            return nx_err_set(err, NX_EINVAL, "shape %s: its extents overflow 64 bits", sa);
    char what[224];
    snprintf(what, sizeof what, "shape %s: the per-index counts of its axes", sa);
    nx_status lst = nx_limits_elems(axes, sizeof(size_t) + 1, what, err);
    if (lst)
        return lst;
    snprintf(out->name_a, sizeof out->name_a, "%s", a->name ? a->name : "");
    snprintf(out->name_b, sizeof out->name_b, "%s", b->name ? b->name : "");
    out->dtype = a->dtype;
    out->fmt = rows_fmt_of_dtype(a->dtype);
    out->ndim = a->ndim;
    memcpy(out->shape, a->shape, sizeof out->shape);
    out->n = (size_t)a->nelem;
    out->max_list = ctx->max_list ? ctx->max_list : 10;
    out->list = calloc(out->max_list, sizeof *out->list);
    out->naxes = a->ndim;
    for (int d = 0; d < out->naxes; d++) {
        out->axes[d].extent = a->shape[d];
        out->axes[d].count = calloc(a->shape[d] ? (size_t)a->shape[d] : 1, sizeof *out->axes[d].count);
        if (!out->axes[d].count) {
            diff_result_free(out);
            return nx_err_set(err, NX_ENOMEM, "out of memory for the axes of %s", sa);
        }
    }
    if (!out->list) {
        diff_result_free(out);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    name_axes(out, ctx->ta ? ctx->ta : ctx->tb);

    int fmt = out->fmt;
    int have_worst = 0;
    for (size_t i = 0; i < out->n; i++) {
        uint64_t ab = st_get_bits(a, a->data, i), bb = st_get_bits(b, b->data, i);
        if (ab == bb && fmt < 0)
            continue;
        diff_elem e;
        if (ab == bb) {
            /* still a finite pair for the errors (0), one pass over equal elements */
            out->hist[DIFF_H_0]++;
            if (!out->has_err) {
                double v = nx_decode((nx_fmt)fmt, ab, NULL);
                if (isfinite(v)) {
                    out->has_err = 1;
                    out->max_abs = out->max_rel = 0;
                    out->max_abs_index = out->max_rel_index = i;
                }
            }
            continue;
        }
        elem_of(a, b, fmt, i, &e);
        out->mismatched++;
        if (out->mismatched == 1)
            out->first = e;
        if (out->nlist < out->max_list)
            out->list[out->nlist++] = e;
        if (fmt >= 0) {
            if (isnan(e.a) || isnan(e.b)) {
                out->nan_mismatch++;
                out->hist[DIFF_H_NONFINITE]++;
            } else if (isinf(e.a) || isinf(e.b)) {
                out->inf_mismatch++;
                out->hist[DIFF_H_NONFINITE]++;
            } else {
                out->hist[diff_bucket_of(e.ulp)]++;
                if (e.ulp == 0)
                    out->zero_sign++;
                double ad = fabs(e.b - e.a), rd = e.a != 0 ? ad / fabs(e.a) : (ad > 0 ? INFINITY : 0);
                if (!out->has_err || ad > out->max_abs) {
                    out->max_abs = ad;
                    out->max_abs_index = i;
                }
                if (!out->has_err || rd > out->max_rel) {
                    out->max_rel = rd;
                    out->max_rel_index = i;
                }
                if (!out->has_err) {
                    out->max_abs_index = out->max_rel_index = i;
                    out->has_err = 1;
                }
            }
            /* the worst: the greatest ulp distance; a NaN/inf pair only when
             * no finite pair differs */
            if (!have_worst || (e.has_ulp && (!out->worst.has_ulp || e.ulp > out->worst.ulp))) {
                out->worst = e;
                have_worst = 1;
            }
        } else if (!have_worst) {
            out->worst = e;
            have_worst = 1;
        }
        /* per axis */
        size_t rem = i;
        for (int d = out->naxes - 1; d >= 0; d--) {
            size_t ext = (size_t)out->axes[d].extent;
            out->axes[d].count[rem % ext]++;
            rem /= ext;
        }
    }
    if (fmt < 0)
        out->hist[DIFF_H_0] = out->n - out->mismatched;
    for (int d = 0; d < out->naxes; d++) {
        diff_axis *x = &out->axes[d];
        uint8_t *hit = malloc(x->extent ? (size_t)x->extent : 1);
        if (!hit) {
            diff_result_free(out);
            return nx_err_set(err, NX_ENOMEM, "out of memory");
        }
        for (int64_t j = 0; j < x->extent; j++)
            hit[j] = x->count[j] > 0;
        diff_pattern_find(hit, x->extent, &x->pat);
        free(hit);
    }
    find_groups(out, ctx);
    return NX_OK;
}
