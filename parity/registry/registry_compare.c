/* registry_compare.c: `parity registry compare`: two resolved points at one
 * shape.  Equal hashes (and no `atomic`) mean bit parity is expected;
 * otherwise every difference is listed per reduction (tree structure, atom
 * fields, formats, modes), then elementwise functions and the params that
 * change bits, and the tolerance that then applies. */
#include "registry_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *tree_kind_name(nx_tree_kind k)
{
    switch (k) {
    case NX_T_SEQ: return "seq";
    case NX_T_PAIRWISE: return "pairwise";
    case NX_T_HALVING: return "halving";
    case NX_T_ATOMIC: return "atomic";
    case NX_T_CHAIN: return "chain";
    case NX_T_REVERSE: return "reverse";
    case NX_T_SPLIT: return "split";
    case NX_T_TILE: return "tile";
    case NX_T_STRIDE: return "stride";
    case NX_T_BODY: return "body";
    case NX_T_ORDER: return "order";
    case NX_T_EXPR: return "expr";
    case NX_T_LANES: return "lanes";
    }
    return "?";
}

static const char *fmt_or(int f, const char *none)
{
    return f >= 0 ? nx_format((nx_fmt)f)->name : none;
}

static const char *mode_or(int m, const char *none)
{
    return m >= 0 ? nx_mode_name((nx_mode)m) : none;
}

/* Walks two trees in step and reports each structural difference with the
 * path to it ("split parts: chain group 8 vs 16"). */
static void tree_diff(nx_sbuf *b, size_t *nd, const nx_tree *x, const nx_tree *y, const char *path)
{
    char where[512];
    snprintf(where, sizeof where, "%s%s", path, *path ? " " : "");
    if (x->kind != y->kind) {
        char *tx = nx_tree_print(x), *ty = nx_tree_print(y);
        nx_sbuf_printf(b, "      %s%s vs %s\n", where, tx ? tx : "?", ty ? ty : "?");
        free(tx);
        free(ty);
        (*nd)++;
        return;
    }
    const char *k = tree_kind_name(x->kind);
    if (x->fmt != y->fmt) {
        nx_sbuf_printf(b, "      %s%s format (@FMT): %s vs %s\n", where, k, fmt_or(x->fmt, "inherited"),
                       fmt_or(y->fmt, "inherited"));
        (*nd)++;
    }
    if (x->fma != y->fma || x->product != y->product || x->rounding != y->rounding) {
        nx_sbuf_printf(b, "      %s%s settings: fma %s vs %s, product %s vs %s, rounding %s vs %s\n", where, k,
                       x->fma < 0 ? "inherited" : x->fma ? "true" : "false",
                       y->fma < 0 ? "inherited" : y->fma ? "true" : "false",
                       x->product == -2 ? "inherited" : fmt_or(x->product, "exact"),
                       y->product == -2 ? "inherited" : fmt_or(y->product, "exact"), mode_or(x->rounding, "inherited"),
                       mode_or(y->rounding, "inherited"));
        (*nd)++;
    }
    int lists_differ = x->nlist != y->nlist || (x->nlist && memcmp(x->list, y->list, x->nlist * sizeof *x->list));
    if (lists_differ || x->carry != y->carry || (!x->c) != (!y->c)) {
        char *tx = nx_tree_print(x), *ty = nx_tree_print(y);
        nx_sbuf_printf(b, "      %s%s: %s vs %s\n", where, k, tx ? tx : "?", ty ? ty : "?");
        free(tx);
        free(ty);
        (*nd)++;
        return;
    }
    const char *cname = x->kind == NX_T_SPLIT    ? "count"
                        : x->kind == NX_T_STRIDE ? "lanes"
                        : x->kind == NX_T_TILE   ? "size"
                        : x->kind == NX_T_CHAIN  ? "group"
                        : x->kind == NX_T_BODY   ? "multiple"
                        : x->kind == NX_T_LANES  ? "width"
                                                 : NULL;
    if (cname && x->count != y->count) {
        nx_sbuf_printf(b, "      %s%s %s: %ld vs %ld\n", where, k, cname, x->count, y->count);
        (*nd)++;
    }
    const char *oname = x->kind == NX_T_SPLIT ? "align" : x->kind == NX_T_STRIDE ? "block"
                        : x->kind == NX_T_TILE ? "halve" : NULL;
    if (oname && x->opt != y->opt) {
        nx_sbuf_printf(b, "      %s%s %s: %ld vs %ld\n", where, k, oname, x->opt, y->opt);
        (*nd)++;
    }
    char sub[512];
    if (x->t && y->t) {
        snprintf(sub, sizeof sub, "%s%s%s%s", path, *path ? " " : "", k, x->kind == NX_T_REVERSE ? ":" : " parts:");
        tree_diff(b, nd, x->t, y->t, sub);
    }
    if (x->u && y->u) {
        snprintf(sub, sizeof sub, "%s%s%s tail:", path, *path ? " " : "", k);
        tree_diff(b, nd, x->u, y->u, sub);
    }
    if (x->c && y->c) {
        snprintf(sub, sizeof sub, "%s%s%s combine:", path, *path ? " " : "", k);
        tree_diff(b, nd, x->c, y->c, sub);
    }
}

static void point_diff(nx_sbuf *b, size_t *nd, const nx_point *x, const nx_point *y)
{
#define DIFF_S(label, sx, sy)                                                   \
    do {                                                                         \
        const char *a_ = (sx), *b_ = (sy);                                       \
        if (strcmp(a_, b_) != 0) {                                               \
            nx_sbuf_printf(b, "    %s: %s vs %s\n", (label), a_, b_);            \
            (*nd)++;                                                             \
        }                                                                        \
    } while (0)
    DIFF_S("acc", nx_format(x->acc)->name, nx_format(y->acc)->name);
    DIFF_S("rounding", nx_mode_name(x->rounding), nx_mode_name(y->rounding));
    DIFF_S("in", fmt_or(x->in, "none"), fmt_or(y->in, "none"));
    if (x->in >= 0 || y->in >= 0)
        DIFF_S("in_rounding", nx_mode_name(x->in_rounding), nx_mode_name(y->in_rounding));
    DIFF_S("fma", x->fma ? "true" : "false", y->fma ? "true" : "false");
    DIFF_S("product", fmt_or(x->product, "exact"), fmt_or(y->product, "exact"));
    char *tx = nx_tree_print(x->tree), *ty = nx_tree_print(y->tree);
    if (tx && ty && strcmp(tx, ty) != 0) {
        nx_sbuf_printf(b, "    tree: %s vs %s\n", tx, ty);
        size_t before = *nd;
        if (x->tree->kind == y->tree->kind)
            tree_diff(b, nd, x->tree, y->tree, "");
        if (*nd == before)
            (*nd)++;
    }
    free(tx);
    free(ty);
    const nx_atom *ax = &x->atom, *ay = &y->atom;
    if (ax->present != ay->present) {
        nx_sbuf_printf(b, "    atom: %s vs %s\n", ax->present ? (ax->preset[0] ? ax->preset : "present") : "none",
                       ay->present ? (ay->preset[0] ? ay->preset : "present") : "none");
        (*nd)++;
    } else if (ax->present) {
        if (ax->frac_bits != ay->frac_bits) {
            char fx[16], fy[16];
            snprintf(fx, sizeof fx, "%d", ax->frac_bits);
            snprintf(fy, sizeof fy, "%d", ay->frac_bits);
            nx_sbuf_printf(b, "    atom frac_bits: %s vs %s\n", ax->frac_bits < 0 ? "exact" : fx,
                           ay->frac_bits < 0 ? "exact" : fy);
            (*nd)++;
        }
        DIFF_S("atom term_round", nx_mode_name(ax->term_round), nx_mode_name(ay->term_round));
        DIFF_S("atom round", mode_or(ax->round, "the point's rounding"), mode_or(ay->round, "the point's rounding"));
        DIFF_S("atom acc", fmt_or(ax->acc, "the current format"), fmt_or(ay->acc, "the current format"));
        if (strcmp(ax->preset, ay->preset) != 0)
            nx_sbuf_printf(b, "    (atom presets: %s vs %s)\n", ax->preset[0] ? ax->preset : "none",
                           ay->preset[0] ? ay->preset : "none");
    }
    DIFF_S("out", nx_format(nx_point_out(x))->name, nx_format(nx_point_out(y))->name);
    DIFF_S("out_rounding", nx_mode_name(nx_point_out_rounding(x)), nx_mode_name(nx_point_out_rounding(y)));
    DIFF_S("saturate", x->saturate ? "true" : "false", y->saturate ? "true" : "false");
#undef DIFF_S
}

static void elem_text(char *buf, size_t cap, const fam_elem *e)
{
    if (!e || e->impl == FAM_ELEM_CR)
        snprintf(buf, cap, "cr%s", e ? "" : " (default)");
    else
        snprintf(buf, cap, "approx %s (%g ulp)", e->approx, e->ulp);
}

static int uses_atomic(const fam_spec *s)
{
    for (size_t i = 0; i < s->nreds; i++)
        if (nx_tree_uses(s->reds[i].point.tree, NX_T_ATOMIC))
            return 1;
    return 0;
}

static void put_tol(nx_sbuf *b, const fam_tolerance *t)
{
    if (t->has_ulp)
        nx_sbuf_printf(b, "ulp = %g", t->ulp);
    if (t->has_rtol)
        nx_sbuf_printf(b, "%srtol = %g, atol = %g", t->has_ulp ? ", " : "", t->rtol, t->atol);
    if (!t->has_ulp && !t->has_rtol)
        nx_sbuf_printf(b, "none");
}

static nx_status split_arg(const char *arg, char **cls, const char **fp, nx_err *err)
{
    const char *colon = strchr(arg, ':');
    if (!colon || colon == arg || !colon[1])
        return nx_err_set(err, NX_EINVAL, "'%s' is not CLASS:FAMILY.POINT", arg);
    *cls = malloc((size_t)(colon - arg) + 1);
    if (!*cls)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    memcpy(*cls, arg, (size_t)(colon - arg));
    (*cls)[colon - arg] = 0;
    *fp = colon + 1;
    return NX_OK;
}

nx_status reg_compare(const reg_registry *r, const char *a, const char *b, const char *shape, char **text,
                      int *parity, nx_err *err)
{
    *text = NULL;
    *parity = 0;
    char *ca = NULL, *cb = NULL;
    const char *fa = NULL, *fb = NULL;
    nx_status st;
    if ((st = split_arg(a, &ca, &fa, err)))
        return st;
    if ((st = split_arg(b, &cb, &fb, err))) {
        free(ca);
        return st;
    }
    reg_resolved ra, rb;
    st = reg_resolve_spec(r, ca, fa, shape, &ra, err);
    if (st) {
        nx_err_prefix(err, "%s", a);
        free(ca);
        free(cb);
        return st;
    }
    st = reg_resolve_spec(r, cb, fb, shape, &rb, err);
    if (st) {
        nx_err_prefix(err, "%s", b);
        reg_resolved_free(&ra);
        free(ca);
        free(cb);
        return st;
    }
    const fam_spec *x = &ra.spec, *y = &rb.spec;
    nx_sbuf o = {0};
    nx_sbuf_printf(&o, "A  %s   hash %s\n", a, x->hash);
    nx_sbuf_printf(&o, "B  %s   hash %s\n", b, y->hash);
    if (strcmp(x->family, y->family) != 0)
        nx_sbuf_printf(&o, "note: different families (%s vs %s): compared reduction by reduction\n", x->family,
                       y->family);
    int same = strcmp(x->hash, y->hash) == 0;
    int atomic = uses_atomic(x) || uses_atomic(y);
    size_t nd = 0;
    if (!same) {
        nx_sbuf_printf(&o, "differences:\n");
        /* Reductions: the union, in name order (A's names, then B's own). */
        size_t n = x->nreds + y->nreds;
        const char **names = malloc((n ? n : 1) * sizeof *names);
        size_t nn = 0;
        for (size_t i = 0; names && i < x->nreds; i++)
            names[nn++] = x->reds[i].name;
        for (size_t i = 0; names && i < y->nreds; i++)
            if (!fam_reduction_get(x, y->reds[i].name))
                names[nn++] = y->reds[i].name;
        for (size_t i = 1; i < nn; i++)
            for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
                const char *t = names[j];
                names[j] = names[j - 1];
                names[j - 1] = t;
            }
        for (size_t i = 0; i < nn; i++) {
            const fam_reduction *rx = fam_reduction_get(x, names[i]), *ry = fam_reduction_get(y, names[i]);
            if (!rx || !ry) {
                nx_sbuf_printf(&o, "  reduction %s: only in %s\n", names[i], rx ? "A" : "B");
                nd++;
                continue;
            }
            nx_sbuf tmp = {0};
            size_t before = nd;
            point_diff(&tmp, &nd, &rx->point, &ry->point);
            char *t = nx_sbuf_take(&tmp);
            if (nd > before)
                nx_sbuf_printf(&o, "  reduction %s:\n%s", names[i], t ? t : "");
            free(t);
        }
        free(names);
        /* Elementwise functions: absent means cr. */
        for (int pass = 0; pass < 2; pass++) {
            const fam_spec *s = pass ? y : x, *other = pass ? x : y;
            for (size_t i = 0; i < s->nelems; i++) {
                const char *name = s->elems[i].name;
                if (pass && fam_elem_get(other, name))
                    continue;
                const fam_elem *ex = fam_elem_get(x, name), *ey = fam_elem_get(y, name);
                char tx[256], ty[256];
                elem_text(tx, sizeof tx, ex);
                elem_text(ty, sizeof ty, ey);
                int ix = ex ? (int)ex->impl : FAM_ELEM_CR, iy = ey ? (int)ey->impl : FAM_ELEM_CR;
                int differ = ix != iy || (ix == FAM_ELEM_APPROX && (strcmp(ex->approx, ey->approx) != 0 || ex->ulp != ey->ulp));
                if (differ) {
                    nx_sbuf_printf(&o, "  elementwise %s: %s vs %s\n", name, tx, ty);
                    nd++;
                }
            }
        }
        /* Params that change bits. */
        for (int pass = 0; pass < 2; pass++) {
            const reg_resolved *s = pass ? &rb : &ra, *other = pass ? &ra : &rb;
            for (size_t i = 0; i < s->env.n; i++) {
                const reg_env_val *v = &s->env.v[i];
                if (!strcmp(v->source, "shape") || !reg_kind_hashed(s->fam, v->name))
                    continue;
                const reg_env_val *w = reg_env_get(&other->env, v->name);
                if (w && (!strcmp(w->source, "shape") || !reg_kind_hashed(other->fam, w->name)))
                    w = NULL;
                if (pass && w)
                    continue;
                if (!w || strcmp(v->value, w->value) != 0) {
                    const char *va = pass ? (w ? w->value : "(unset)") : v->value;
                    const char *vb = pass ? v->value : (w ? w->value : "(unset)");
                    nx_sbuf_printf(&o, "  param %s: %s vs %s\n", v->name, va, vb);
                    nd++;
                }
            }
        }
        if (nd == 0)
            nx_sbuf_printf(&o, "  (none found field by field; the canonical texts differ)\n");
    }
    nx_sbuf_printf(&o, "tolerance:\n  A declares ");
    put_tol(&o, &x->tol);
    nx_sbuf_printf(&o, "\n  B declares ");
    put_tol(&o, &y->tol);
    nx_sbuf_printf(&o, "\n");
    if (same && !atomic) {
        nx_sbuf_printf(&o, "  applies: none (the bits must be equal)\n");
        nx_sbuf_printf(&o, "bit parity expected\n");
        *parity = 1;
    } else {
        fam_tolerance t = {0};
        /* The pair's declared tolerance: the looser of the two declarations. */
        for (int i = 0; i < 2; i++) {
            const fam_tolerance *s = i ? &y->tol : &x->tol;
            if (s->has_ulp) {
                t.ulp = t.has_ulp && t.ulp > s->ulp ? t.ulp : s->ulp;
                t.has_ulp = 1;
            }
            if (s->has_rtol) {
                t.rtol = t.has_rtol && t.rtol > s->rtol ? t.rtol : s->rtol;
                t.atol = t.has_rtol && t.atol > s->atol ? t.atol : s->atol;
                t.has_rtol = 1;
            }
        }
        if (t.has_ulp || t.has_rtol) {
            nx_sbuf_printf(&o, "  applies: ");
            put_tol(&o, &t);
            nx_sbuf_printf(&o, " (declared%s)\n",
                           (x->tol.has_ulp || x->tol.has_rtol) && (y->tol.has_ulp || y->tol.has_rtol)
                               ? "; the looser of the two"
                               : "");
        } else {
            nx_sbuf_printf(&o, "  applies: the derived bound (none declared): a reduction of depth d in a format of "
                               "unit roundoff u stays within about d*u*sum|t_i| of the exact value\n");
        }
        if (same)
            nx_sbuf_printf(&o, "bits may differ: the points are the same, but they use 'atomic' (undefined order)\n");
        else
            nx_sbuf_printf(&o, "bits may differ: %zu difference%s\n", nd, nd == 1 ? "" : "s");
    }
    reg_resolved_free(&ra);
    reg_resolved_free(&rb);
    free(ca);
    free(cb);
    *text = nx_sbuf_take(&o);
    return *text ? NX_OK : nx_err_set(err, NX_ENOMEM, "out of memory");
}
