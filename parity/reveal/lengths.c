/* lengths.c: a revealed point held at lengths it was not revealed at
 * (docs/reveal.md "Induction", "Size classes", "Other lengths"): the
 * check where induction saw another order, the join of two orders by one
 * switch of length, and the confirmation at the lengths rv_confirm_lengths
 * names.  Used by `parity reveal` and by the C and Python API; each line
 * of the account goes to the caller's rv_say. */
#include "reveal.h"

#include "nx_point.h"
#include "nx_sbuf.h"
#include "nx_select.h"
#include "point_toml.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One line to say, formatted (any length: a point with an expr(...) of
 * thousands of terms is one line). */
static void sayf(const rv_say *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sayf(const rv_say *s, const char *fmt, ...)
{
    if (!s || !s->line)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    char *buf = malloc((size_t)n + 1);
    if (!buf)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, (size_t)n + 1, fmt, ap);
    va_end(ap);
    s->line(s->ctx, buf);
    free(buf);
}

static char *join_class(const char *point, const char *path, const char *sel, nx_err *err);

static size_t confirm_rows_of(const rv_opts *o)
{
    return o->confirm_rows ? o->confirm_rows : 1000;
}

/* The point text with one size class added: `, rows = [{ select = SEL,
 * tree = "TREE" }]` before its closing brace (malloc'd). */
static char *with_size_class(const char *point, const char *sel, const char *tree)
{
    size_t l = strlen(point);
    while (l && (point[l - 1] == ' ' || point[l - 1] == '}'))
        l--;
    size_t cap = l + strlen(sel) + strlen(tree) + 64;
    char *out = malloc(cap);
    if (out)
        snprintf(out, cap, "%.*s, rows = [{ select = \"%s\", tree = \"%s\" }] }", (int)l, point, sel, tree);
    return out;
}

/* One switch of length between lo (order tlo) and hi (order thi), found by
 * rv_size_switch; base (a point text) takes a class `n >= T` with thi when
 * base_lo, else `n < T` with tlo (other, where not NULL: the other side's
 * whole point, its arithmetic differing from base's, joined as classes
 * under that selector).  The joined point is confirmed at T - 1,
 * T and T + 1 (both sides of the edge, and one past it: a class that is no
 * switch of length, n % 8 == 3, fails there) and at the lengths at[]
 * outside the edge (said as `what`).  *verdict: -1 no single switch
 * explains the two orders, RV_LEN_HOLDS with *out the joined point,
 * RV_LEN_REFUSED it was tried and failed (said). */
static nx_status join_switch(rv_kernel *k, const rv_opts *o, const char *base, int base_lo, size_t lo,
                             const char *tlo, size_t hi, const char *thi, const char *other, const size_t *at,
                             size_t nat, const char *what, const rv_say *say, int *verdict, char **out, nx_err *err)
{
    *verdict = -1;
    size_t T = 0, reveals = 0, calls0 = k->calls, probes0 = k->probes;
    nx_status st = rv_size_switch(k, o, lo, tlo, hi, thi, &T, &reveals, err);
    if (st || !T)
        return st;
    char sel[64];
    snprintf(sel, sizeof sel, base_lo ? "n >= %zu" : "n < %zu", T);
    /* the other side's tree alone where the arithmetic is the same, else
     * its whole point */
    nx_err je = {0};
    char *pt = other ? join_class(base, other, sel, &je) : with_size_class(base, sel, base_lo ? thi : tlo);
    if (!pt && other && je.code != NX_ENOMEM)
        return NX_OK; /* not joined: the confirmation says the rest */
    if (!pt)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    sayf(say,
         "size class: the order is %s below n = %zu and %s from n = %zu on (%zu more order reveals between n = "
         "%zu and %zu, %zu rows in %zu calls)",
         tlo, T, thi, T, reveals, lo, hi, k->probes - probes0, k->calls - calls0);
    size_t crows = confirm_rows_of(o), rows, ok, fl = 0;
    char why[512], failed[256] = "";
    for (size_t e = 0; e < 3 + nat; e++) {
        size_t L = e < 3 ? T - 1 + e : at[e - 3];
        if (e >= 3 && L + 1 >= T && L <= T + 1)
            continue; /* at the edge: confirmed above */
        if ((st = rv_confirm_at(k, pt, L, crows, o->seed, &rows, &ok, why, sizeof why, err))) {
            free(pt);
            return st;
        }
        sayf(say, "lengths: at n = %zu (%s) the point reproduced %zu of %zu fresh random rows%s%s", L,
             e < 3 ? "the size class's edge" : what, ok, rows, why[0] ? ": " : "", why);
        if (ok != rows && fl < sizeof failed - 24)
            fl += (size_t)snprintf(failed + fl, sizeof failed - fl, "%s%zu", fl ? ", " : "", L);
    }
    if (fl) {
        sayf(say, "not confirmed: the point with a size class fails at n = %s: %s", failed, pt);
        free(pt);
        *verdict = RV_LEN_REFUSED;
        return NX_OK;
    }
    *out = pt;
    *verdict = RV_LEN_HOLDS;
    return NX_OK;
}

nx_status rv_one_length(rv_kernel *k, const rv_opts *o, rv_result *res, const rv_say *say, int *verdict,
                        nx_err *err)
{
    *verdict = RV_LEN_HOLDS;
    if (res->induce != RV_INDUCE_ONE_LENGTH || !res->point)
        return NX_OK;
    /* a size class, where one switch between the two lengths explains
     * the two orders */
    const char *at_n = res->tree_text, *other = res->induce_other;
    nx_status st;
    if (at_n && other && !strstr(at_n, "expr(") && !strstr(other, "expr(")) {
        int up = res->induce_n > res->n, v;
        char *pt = NULL;
        st = join_switch(k, o, res->point, up, up ? res->n : res->induce_n, up ? at_n : other,
                         up ? res->induce_n : res->n, up ? other : at_n, NULL, &res->induce_n, 1,
                         "probed for the order", say, &v, &pt, err);
        if (st)
            return st;
        if (v >= 0) {
            *verdict = v;
            if (v == RV_LEN_HOLDS) {
                free(res->point);
                res->point = pt;
            }
            return NX_OK;
        }
    }
    /* else the point cannot hold there unless the arithmetic hides the
     * difference */
    size_t rows, ok;
    char why[512];
    if ((st = rv_confirm_at(k, res->point, res->induce_n, confirm_rows_of(o), o->seed, &rows, &ok, why, sizeof why,
                            err)))
        return st;
    sayf(say, "lengths: at n = %zu (probed for the order) the point reproduced %zu of %zu fresh random rows%s%s",
         res->induce_n, ok, rows, why[0] ? ": " : "", why);
    if (ok != rows) {
        sayf(say, "not confirmed: the point revealed at n = %zu fails at n = %zu, where the order differs: %s", res->n,
             res->induce_n, res->point);
        *verdict = RV_LEN_REFUSED;
    }
    return NX_OK;
}

/* The tree of a point text (`tree = "..."`) into buf; the rest of the text
 * with the tree left out into rest.  0 when there is no tree or the point
 * has row classes of its own. */
static int split_point(const char *pt, char *tree, size_t tcap, char *rest, size_t rcap)
{
    const char *t = strstr(pt, "tree = \""), *e = t ? strchr(t + 8, '"') : NULL;
    if (!t || !e || strstr(pt, "rows =") || (size_t)(e - t - 8) >= tcap)
        return 0;
    snprintf(tree, tcap, "%.*s", (int)(e - t - 8), t + 8);
    snprintf(rest, rcap, "%.*s%s", (int)(t - pt), pt, e + 1);
    return 1;
}

/* The probed lengths' points differ: where, sorted by length, they are one
 * point up to some length and another from the next (another tree, and
 * the same arithmetic or not), the first length's point takes a size class
 * for the other side (join_switch, confirmed at every probed length too).
 * *verdict as
 * join_switch's. */
static nx_status join_lengths(rv_kernel *k, const rv_opts *o, const size_t *lens, size_t nlens, char *const *points,
                              const rv_say *say, int *verdict, char **out, nx_err *err)
{
    *verdict = -1;
    size_t idx[RV_MAX_LENGTHS];
    if (nlens > RV_MAX_LENGTHS)
        return NX_OK;
    for (size_t i = 0; i < nlens; i++)
        idx[i] = i;
    for (size_t i = 1; i < nlens; i++) /* insertion sort by length */
        for (size_t j = i; j > 0 && lens[idx[j]] < lens[idx[j - 1]]; j--) {
            size_t x = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = x;
        }
    char tlo[512], thi[512], rlo[1024], rhi[1024], t[512], r[1024];
    if (!points[idx[0]] || !split_point(points[idx[0]], tlo, sizeof tlo, rlo, sizeof rlo))
        return NX_OK;
    size_t sw = 0; /* the first sorted position of the other tree */
    for (size_t i = 1; i < nlens; i++) {
        if (!points[idx[i]] || !split_point(points[idx[i]], t, sizeof t, r, sizeof r))
            return NX_OK;
        if (!sw && strcmp(t, tlo)) {
            sw = i;
            snprintf(thi, sizeof thi, "%s", t);
            snprintf(rhi, sizeof rhi, "%s", r);
        }
        if (sw && (strcmp(t, thi) || strcmp(r, rhi)))
            return NX_OK; /* a third tree, or the same tree again after the other */
        if (!sw && strcmp(r, rlo))
            return NX_OK;
    }
    if (!sw || strstr(tlo, "expr(") || strstr(thi, "expr("))
        return NX_OK;
    size_t lo = lens[idx[sw - 1]], hi = lens[idx[sw]];
    /* the first length's point is the base; where the two sides' arithmetic
     * differs too, the class is the other side's whole point */
    int base_lo = lens[0] <= lo;
    const char *other = strcmp(rlo, rhi) ? points[base_lo ? idx[sw] : idx[0]] : NULL;
    return join_switch(k, o, points[0], base_lo, lo, tlo, hi, thi, other, lens, nlens, "probed", say, verdict, out,
                       err);
}

nx_status rv_generalise(rv_kernel *k, const rv_opts *o, const size_t *lens, size_t nlens, char *const *points,
                        const rv_say *say, int *verdict, char **out, nx_err *err)
{
    *verdict = RV_LEN_REFUSED;
    *out = NULL;
    if (nlens < 1 || nlens > RV_MAX_LENGTHS)
        return nx_err_set(err, NX_EINVAL, "lengths: 1 to %d of them", RV_MAX_LENGTHS);
    size_t crows = confirm_rows_of(o), rows, ok;
    char why[512];
    const char *chosen = NULL;
    nx_status st;
    size_t fail_n[RV_MAX_LENGTHS] = {0}, fail_ok[RV_MAX_LENGTHS] = {0}, fail_rows[RV_MAX_LENGTHS] = {0};
    for (size_t c = 0; c < nlens && !chosen; c++) {
        int holds = 1;
        for (size_t l = 0; l < nlens && holds; l++) {
            if (l == c || !strcmp(points[l], points[c]))
                continue; /* confirmed where it was revealed */
            if ((st = rv_confirm_at(k, points[c], lens[l], crows, o->seed, &rows, &ok, why, sizeof why, err)))
                return st;
            holds = ok == rows;
            if (!holds)
                fail_n[c] = lens[l], fail_ok[c] = ok, fail_rows[c] = rows;
        }
        if (holds)
            chosen = points[c];
    }
    char *joined = NULL;
    if (!chosen) {
        int v;
        if ((st = join_lengths(k, o, lens, nlens, points, say, &v, &joined, err)))
            return st;
        if (v == RV_LEN_REFUSED)
            return NX_OK;
        chosen = joined;
    }
    if (!chosen) {
        char list[RV_MAX_LENGTHS * 12] = "";
        size_t ll = 0;
        for (size_t l = 0; l < nlens; l++)
            ll += (size_t)snprintf(list + ll, sizeof list - ll, "%s %zu", l ? "," : "", lens[l]);
        sayf(say, "lengths: no single point the search can express holds at n =%s; the point of each length fails at "
                  "another:", list);
        for (size_t l = 0; l < nlens; l++)
            sayf(say, "lengths: n = %zu reveals %s, which reproduces %zu of %zu rows at n = %zu", lens[l], points[l],
                 fail_ok[l], fail_rows[l], fail_n[l]);
        sayf(say, "not confirmed: the lengths disagree");
        return NX_OK;
    }
    if (nlens > 1) {
        char list[RV_MAX_LENGTHS * 12] = "";
        size_t ll = 0;
        for (size_t l = 0; l < nlens; l++)
            ll += (size_t)snprintf(list + ll, sizeof list - ll, "%s %zu", l ? "," : "", lens[l]);
        sayf(say, "lengths: one point holds at every probed length (n =%s)", list);
    }
    size_t extra[2];
    rv_confirm_lengths(lens[0], extra);
    char failed[128] = "";
    size_t fl = 0;
    for (int e = 0; e < 2; e++) {
        int probed = 0;
        for (size_t l = 0; l < nlens; l++)
            probed |= lens[l] == extra[e];
        if (probed || (e == 1 && extra[1] == extra[0]))
            continue;
        if ((st = rv_confirm_at(k, chosen, extra[e], crows, o->seed, &rows, &ok, why, sizeof why, err))) {
            free(joined);
            return st;
        }
        sayf(say, "lengths: at n = %zu (not probed) the point reproduced %zu of %zu fresh random rows%s%s", extra[e],
             ok, rows, why[0] ? ": " : "", why);
        if (ok != rows)
            fl += (size_t)snprintf(failed + fl, sizeof failed - fl, "%s%zu", fl ? ", " : "", extra[e]);
    }
    if (fl) {
        sayf(say, "not confirmed: the point revealed at n = %zu fails at n = %s: %s", lens[0], failed, chosen);
        free(joined);
        return NX_OK;
    }
    *out = joined ? joined : strdup(chosen);
    if (!*out)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    *verdict = RV_LEN_HOLDS;
    return NX_OK;
}

/* --- one row a call (docs/reveal.md "One row a call") -------------------- */

char *rv_join_one_row(const char *point, const char *one_row, nx_err *err)
{
    return rv_join_rows(point, one_row, 1, err);
}

char *rv_join_rows(const char *point, const char *one_row, size_t R, nx_err *err)
{
    char sel[32];
    snprintf(sel, sizeof sel, "R == %zu", R);
    return join_class(point, one_row, sel, err);
}

/* point with the whole of path (its arithmetic, its tree, its own classes
 * each under `SEL && (...)`) as classes selected by sel, ahead of point's
 * own classes (malloc'd canonical text; NULL with *err set). */
static char *join_class(const char *point, const char *one_row, const char *sel, nx_err *err)
{
    nx_point m, o;
    if (pt_from_text(point, "point", &m, err))
        return NULL;
    if (pt_from_text(one_row, "one-row point", &o, err)) {
        nx_point_free(&m);
        return NULL;
    }
    char *out = NULL;
    size_t nc = o.nclasses + 1 + m.nclasses, k = 0;
    nx_rowclass *cl = NULL;
    if (m.grid_m || o.grid_m) {
        nx_err_set(err, NX_EUNSUPPORTED, "a point with a grid takes no class `%s` here", sel);
        goto done;
    }
    if (!(cl = calloc(nc, sizeof *cl)))
        goto oom;
    /* the one-row path's own classes (size classes), each under R == 1,
     * then the path itself, then the point's own classes: a class of the
     * batches may be true at R = 1 (r >= R - R % 4 picks row 0) */
    for (size_t i = 0; i <= o.nclasses; i++, k++) {
        nx_sbuf sb = {0};
        if (i < o.nclasses)
            nx_sbuf_printf(&sb, "%s && (%s)", sel, o.classes[i].select);
        else
            nx_sbuf_printf(&sb, "%s", sel);
        if (!(cl[k].select = nx_sbuf_take(&sb)))
            goto oom;
        if (nx_select_parse(cl[k].select, "select", &cl[k].sel, err))
            goto done;
        if (i < o.nclasses) {
            cl[k].pt = o.classes[i].pt; /* moved: a class is a whole point */
            o.classes[i].pt = NULL;
        } else if (!(cl[k].pt = calloc(1, sizeof *cl[k].pt)))
            goto oom;
        else if (nx_point_copy_base(&o, cl[k].pt, err))
            goto done;
    }
    for (size_t i = 0; i < m.nclasses; i++)
        cl[k++] = m.classes[i];
    free(m.classes);
    m.classes = cl;
    m.nclasses = nc;
    cl = NULL;
    if (!(out = nx_point_print(&m)))
        goto oom;
    goto done;
oom:
    nx_err_set(err, NX_ENOMEM, "out of memory");
done:
    if (cl) { /* the classes built so far, freed as a point's */
        nx_point part = {0};
        part.classes = cl;
        part.nclasses = k + 1 < nc ? k + 1 : nc;
        nx_point_free(&part);
    }
    nx_point_free(&m);
    nx_point_free(&o);
    return out;
}

/* The path k takes for calls of exactly R rows, revealed by reveal_fn
 * with every call R rows and, a call holding so few rows, a quarter of
 * the default confirmation and disambiguation rows unless o sets them. */
static nx_status reveal_small_path(rv_kernel *k, const rv_opts *o, size_t R, rv_reveal_fn reveal_fn, void *ctx,
                                   char **path, nx_err *err)
{
    size_t keep = k->max_rows;
    int keep_exact = k->exact_rows;
    k->max_rows = R;
    k->exact_rows = 1;
    rv_opts o1 = *o;
    if (!o1.confirm_rows)
        o1.confirm_rows = RV_ONE_ROW_CONFIRM;
    if (!o1.disambig_rows)
        o1.disambig_rows = RV_ONE_ROW_DISAMBIG;
    nx_status st = reveal_fn(k, &o1, ctx, path, err);
    k->max_rows = keep;
    k->exact_rows = keep_exact;
    return st;
}

nx_status rv_one_row(rv_kernel *k, const rv_opts *o, size_t n, const char *point, rv_reveal_fn reveal_fn, void *ctx,
                     const rv_say *say, char **out, nx_err *err)
{
    *out = NULL;
    size_t r1 = RV_ONE_ROW_ROWS, ok1 = 0;
    char why[512];
    if (k->grid_m && k->grid_n) {
        /* a grid kernel's call is one M x N output: there is no call of one row */
        sayf(say, "rows: a grid kernel (%zu x %zu) is called with %zu rows only: one row a call is not tried",
             k->grid_m, k->grid_n, k->grid_m * k->grid_n);
        return (*out = strdup(point)) ? NX_OK : nx_err_set(err, NX_ENOMEM, "out of memory");
    }
    nx_status st = rv_confirm_one_row(k, point, n, r1, o->seed, &ok1, why, sizeof why, err);
    if (st)
        return st;
    sayf(say, "rows: at R = 1 (one row a call, not probed) the point reproduced %zu of %zu fresh random rows at n = "
              "%zu%s%s",
         ok1, r1, n, why[0] ? ": " : "", why);
    char *one = NULL, *pt = NULL;
    if (ok1 != r1 && reveal_fn) {
        size_t calls0 = k->calls, probes0 = k->probes;
        sayf(say, "rows: one row a call takes another path, which the batches never reach: revealed below with every "
                  "row a call of its own");
        if ((st = reveal_small_path(k, o, 1, reveal_fn, ctx, &one, err)))
            return st;
        if (one) {
            nx_err je = {0};
            if (!(pt = rv_join_one_row(point, one, &je))) {
                if (je.code == NX_ENOMEM) {
                    free(one);
                    return nx_err_set(err, NX_ENOMEM, "out of memory");
                }
                sayf(say, "rows: the one-row path's point %s is not joined: %s", one, je.msg);
            }
        }
        if (pt) {
            size_t ok = 0, rows = 0, okb = 0;
            char why2[512];
            if ((st = rv_confirm_one_row(k, pt, n, r1, o->seed ^ 0x52313dULL, &ok, why, sizeof why, err)) ||
                (st = rv_confirm_at(k, pt, n, confirm_rows_of(o), o->seed ^ 0x52313dULL, &rows, &okb, why2,
                                    sizeof why2, err))) {
                free(one);
                free(pt);
                return st;
            }
            sayf(say, "rows: the one-row path joined as `R == 1` (%zu rows in %zu calls): at n = %zu it reproduced "
                      "%zu of %zu fresh rows one a call and %zu of %zu in one batch",
                 k->probes - probes0, k->calls - calls0, n, ok, r1, okb, rows);
            if (why[0] || why2[0])
                sayf(say, "rows: the joined point cannot be evaluated: %s", why[0] ? why : why2);
            if (ok != r1 || okb != rows) {
                free(pt);
                pt = NULL;
            }
        }
        if (!pt)
            sayf(say, "rows: the one-row path is not revealed (above): the point below holds for batches of the "
                      "probed kind only");
    }
    free(one);
    *out = pt ? pt : strdup(point);
    if (!*out)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    /* calls of 2 and 3 rows: a library may take another path for a few
     * outputs (OpenBLAS's sgemv N below 4 columns); held, and where the
     * point fails there, that path revealed with every call exactly R rows
     * and joined as `R == R` */
    for (size_t R = 2; R <= 3 && !st; R++) {
        size_t rr = RV_ONE_ROW_ROWS - RV_ONE_ROW_ROWS % R, okr = 0;
        if ((st = rv_confirm_rows_a_call(k, *out, n, rr, R, o->seed, &okr, why, sizeof why, err)))
            break;
        sayf(say, "rows: at R = %zu (%zu rows a call, not probed) the point reproduced %zu of %zu fresh random rows "
                  "at n = %zu%s%s", R, R, okr, rr, n, why[0] ? ": " : "", why);
        if (okr == rr || !reveal_fn)
            continue;
        size_t calls0 = k->calls, probes0 = k->probes;
        sayf(say, "rows: calls of %zu rows take another path: revealed below with every call %zu rows", R, R);
        char *path = NULL, *joined = NULL;
        int taken = 0;
        if ((st = reveal_small_path(k, o, R, reveal_fn, ctx, &path, err)))
            break;
        if (path) {
            nx_err je = {0};
            if (!(joined = rv_join_rows(*out, path, R, &je))) {
                if (je.code == NX_ENOMEM)
                    st = nx_err_set(err, NX_ENOMEM, "out of memory");
                else
                    sayf(say, "rows: the %zu-row path's point %s is not joined: %s", R, path, je.msg);
            }
        }
        free(path);
        if (joined && !st) {
            size_t okj = 0, ok1j = 0, rows = 0, okb = 0;
            char why2[512];
            if (!(st = rv_confirm_rows_a_call(k, joined, n, rr, R, o->seed ^ 0x52313dULL, &okj, why, sizeof why, err)) &&
                !(st = rv_confirm_one_row(k, joined, n, r1, o->seed ^ 0x52313dULL, &ok1j, why, sizeof why, err)) &&
                !(st = rv_confirm_at(k, joined, n, confirm_rows_of(o), o->seed ^ 0x52313dULL, &rows, &okb, why2,
                                     sizeof why2, err))) {
                sayf(say, "rows: the %zu-row path joined as `R == %zu` (%zu rows in %zu calls): at n = %zu it "
                          "reproduced %zu of %zu fresh rows %zu a call, %zu of %zu one a call and %zu of %zu in one "
                          "batch", R, R, k->probes - probes0, k->calls - calls0, n, okj, rr, R, ok1j, r1, okb, rows);
                if (okj == rr && ok1j == r1 && okb == rows) {
                    free(*out);
                    *out = joined;
                    joined = NULL;
                    taken = 1;
                }
            }
        }
        free(joined);
        if (!st && !taken)
            sayf(say, "rows: the %zu-row path is not revealed (above): the point below does not hold for calls of "
                      "%zu rows", R, R);
    }
    if (st) {
        free(*out);
        *out = NULL;
    }
    return st;
}
