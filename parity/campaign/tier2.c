/* tier2.c: the one Tier 2 (tier2.h): the policy (bits, the declared
 * tolerance, the derived bound, the last resort) and the judgement of a
 * device output against the reference's, with the mismatches named by
 * logical row. */
#include "tier2.h"
#include "nx_limits.h"
#include "rows.h"
#include "verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

nx_status t2_policy_for(const fam_spec *dev, const fam_spec *ref, const char *differs, int negative,
                        const st_file *in, nx_fmt fmt, size_t n, const uint64_t *ref_bits, const size_t *src,
                        int threads, t2_policy *pol, char *why, size_t len, nx_err *err)
{
    memset(pol, 0, sizeof *pol);
    why[0] = 0;
    int approx = 0;
    for (size_t i = 0; i < dev->nelems; i++)
        approx |= dev->elems[i].impl == FAM_ELEM_APPROX;
    int same_point = dev->hash && ref->hash && strcmp(dev->hash, ref->hash) == 0;
    if (same_point && !approx && !negative) {
        cmp_options_init(&pol->opt, CMP_BITWISE);
        return NX_OK;
    }
    if (!same_point)
        snprintf(why, len, "%s", differs && *differs ? differs : "the run's point and the reference's differ");
    else if (negative)
        snprintf(why, len, "a negative control: judged by its declared tolerance");
    else
        snprintf(why, len, "an elementwise function is a declared approximation");
    /* the declared tolerance, else the bound of the points' trees (the
     * device's approximations vs the reference's cr, an `atomic` in any
     * order), else torch.testing's default */
    nx_status st = t2_policy_choose(dev, ref, in, fmt, n, ref_bits, src, threads, pol, err);
    if (!st && *pol->why) {
        size_t l = strlen(why);
        snprintf(why + l, len - l, "; %s", pol->why);
    }
    return st;
}

void t2_result_free(t2_result *res)
{
    free(res->text);
    res->text = NULL;
    free(res->diff);
    res->diff = NULL;
    res->ndiff = 0;
}

/* The reference's main output: "y", else its first tensor. */
static const st_tensor *main_output(const st_file *want)
{
    const st_tensor *m = NULL;
    for (size_t i = 0; i < want->ntensors; i++)
        if (!m || strcmp(want->tensors[i].name, "y") == 0)
            m = &want->tensors[i];
    return m;
}

static int64_t rows_of(const st_tensor *t)
{
    return t->ndim ? t->shape[0] : 1;
}

/* got holds want's rows: the same dtype, rank and row shape. */
/* "BF16 [4, 24]" */
static void shape_text(const st_tensor *t, char *out, size_t cap)
{
    size_t k = (size_t)snprintf(out, cap, "%s [", st_dtype_name(t->dtype));
    for (int d = 0; d < t->ndim && k + 24 < cap; d++)
        k += (size_t)snprintf(out + k, cap - k, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    if (k + 2 < cap)
        snprintf(out + k, cap - k, "]");
}

static int same_rows(const st_tensor *g, const st_tensor *w)
{
    if (!g || g->dtype != w->dtype || g->ndim != w->ndim)
        return 0;
    for (int d = 1; d < g->ndim; d++)
        if (g->shape[d] != w->shape[d])
            return 0;
    return 1;
}

/* The mismatches of the main output, kept while the budget holds them. */
static void keep_diff(const t2_case *c, const uint64_t *g, const uint64_t *r, size_t n, t2_result *res)
{
    if (!c->diff_budget || !res->cmp.bits_differ)
        return;
    size_t nd = 0;
    for (size_t i = 0; i < n; i++)
        nd += g[i] != r[i];
    if (nd && nd <= *c->diff_budget && (res->diff = malloc(nd * sizeof *res->diff))) {
        for (size_t i = 0; i < n; i++)
            if (g[i] != r[i])
                res->diff[res->ndiff++] = i;
        *c->diff_budget -= nd;
    } else if (nd) {
        res->diff_dropped = 1;
    }
}

/* Under a bitwise policy the other outputs (rmsnorm's residual_out) must
 * agree bit for bit on every row too. */
static void other_outputs(const t2_case *c, const st_tensor *mw, size_t nrows, t2_result *res)
{
    for (size_t i = 0; i < c->want->ntensors && res->pass; i++) {
        const st_tensor *x = &c->want->tensors[i], *y = st_find(c->got, x->name);
        if (x == mw)
            continue;
        size_t rb = x->ndim && x->shape[0] ? (size_t)(x->nbytes / (uint64_t)x->shape[0]) : (size_t)x->nbytes;
        int ok = same_rows(y, x) && (uint64_t)rows_of(y) == nrows;
        size_t j = 0;
        for (; ok && j < nrows; j++) {
            size_t src = c->ref_rows ? (size_t)c->ref_rows[j] : j;
            ok = (int64_t)src < rows_of(x) && memcmp(y->data + j * rb, x->data + src * rb, rb) == 0;
        }
        if (!ok) {
            res->pass = 0;
            res->bit_exact = 0;
            if (!y || j == 0)
                snprintf(res->detail, sizeof res->detail, "%s: not bit-exact: output '%s' differs from the reference",
                         VD_FAIL, x->name);
            else
                snprintf(res->detail, sizeof res->detail,
                         "%s: not bit-exact: output '%s' batch row %zu differs from the reference", VD_FAIL, x->name,
                         j - 1);
        }
    }
}

nx_status t2_judge(const t2_case *c, t2_result *res, nx_err *err)
{
    memset(res, 0, sizeof *res);
    const st_tensor *w = main_output(c->want);
    if (!w)
        return nx_err_set(err, NX_EINTERNAL, "%s: the reference produced no output", c->name);
    const st_tensor *g = st_find(c->got, w->name);
    if (!same_rows(g, w)) {
        /* what the device wrote, said beside what the family's output is */
        char wrote[256] = "", want[128];
        shape_text(w, want, sizeof want);
        if (!g) {
            size_t k = 0;
            for (size_t i = 0; i < c->got->ntensors && k + 40 < sizeof wrote; i++)
                k += (size_t)snprintf(wrote + k, sizeof wrote - k, "%s'%.32s'", i ? ", " : "", c->got->tensors[i].name);
        } else
            shape_text(g, wrote, sizeof wrote);
        return nx_err_set(err, NX_EDEVICE,
                          "%s: the device output '%s' is missing or has another dtype or size than the reference's "
                          "(the device wrote %s%s; the reference's is %s)",
                          c->name, w->name, g ? "" : "the tensors ", *wrote ? wrote : "nothing", want);
    }
    int f = rows_fmt_of_dtype(w->dtype);
    if (f < 0)
        return nx_err_set(err, NX_EUNSUPPORTED, "%s: output '%s' has dtype %s, not a number format", c->name, w->name,
                          st_dtype_name(w->dtype));
    size_t nrows = (size_t)rows_of(g), n = (size_t)g->nelem;
    size_t per = nrows ? n / nrows : 0;
    if (!c->ref_rows && g->nelem != w->nelem)
        return nx_err_set(err, NX_EINVAL, "%s: the device output '%s' has %llu elements, the reference's %llu", c->name,
                          w->name, (unsigned long long)g->nelem, (unsigned long long)w->nelem);
    char what[320];
    snprintf(what, sizeof what, "%s: output '%s' (%zu elements, 24 bytes each compared)", c->name, w->name, n);
    nx_status st = nx_limits_elems(n, 24, what, err); /* docs/limits.md */
    if (st)
        return st;
    snprintf(res->output, sizeof res->output, "%s", w->name);
    res->cols = g->ndim && g->shape[g->ndim - 1] > 0 ? g->shape[g->ndim - 1] : 1;
    uint64_t *gb = malloc((n ? n : 1) * sizeof *gb), *rb = malloc((n ? n : 1) * sizeof *rb);
    size_t *src = c->ref_rows ? malloc((n ? n : 1) * sizeof *src) : NULL;
    if (!gb || !rb || (c->ref_rows && !src)) {
        free(gb);
        free(rb);
        free(src);
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        size_t row = i / per, s = c->ref_rows ? (size_t)c->ref_rows[row] * per + i % per : i;
        if (s >= (size_t)w->nelem) {
            st = nx_err_set(err, NX_EINVAL, "%s: batch row %zu reads row %lld of the reference, which has %lld rows",
                            c->name, row, (long long)c->ref_rows[row], (long long)rows_of(w));
            break;
        }
        gb[i] = st_get_bits(g, g->data, i);
        rb[i] = st_get_bits(w, w->data, s);
        if (src)
            src[i] = s;
    }
    t2_policy pol;
    char why[2048] = "";
    memset(&pol, 0, sizeof pol);
    if (!st)
        st = t2_policy_for(c->dev, c->ref, c->differs, c->negative, c->in, (nx_fmt)f, n, rb, src, c->threads, &pol,
                           why, sizeof why, err);
    cmp_options opt = pol.opt;
    cmp_input ci = {(nx_fmt)f, n, gb, rb, NULL, NULL, g->ndim, g->shape};
    t2_policy_input(&pol, &ci);
    if (!st)
        st = cmp_compare(&ci, &opt, &res->cmp, err);
    t2_policy_free(&pol);
    if (!st)
        keep_diff(c, gb, rb, n, res);
    free(gb);
    free(rb);
    free(src);
    if (st)
        return st;
    res->text = cmp_result_text(&res->cmp);
    res->bit_exact = res->cmp.bits_differ == 0;
    char idx[160] = "";
    if (res->cmp.first_mismatch != CMP_NO_INDEX) {
        size_t fm = res->cmp.first_mismatch, row = fm / (per ? per : 1);
        cmp_format_index(idx, sizeof idx, fm, g->ndim, g->shape, CMP_INDEX_BRACKETS);
        size_t l = strlen(idx);
        snprintf(idx + l, sizeof idx - l, " (logical row %lld)", c->rows ? (long long)c->rows[row] : (long long)row);
    }
    vd_evidence e = {.kind = VD_TIER2, .cmp = &res->cmp, .output = w->name, .first_at = idx, .why = why};
    res->pass = vd_judge(&e, res->detail, sizeof res->detail);
    if (opt.policy == CMP_BITWISE)
        other_outputs(c, w, nrows, res);
    return NX_OK;
}
