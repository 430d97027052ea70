/* registry_compare.c: `parity registry compare`: two resolved points at one
 * shape.  Equal hashes (and no `atomic`) mean bit parity is expected;
 * otherwise every difference is listed per reduction (tree structure, atom
 * fields, formats, modes), then elementwise functions and the params that
 * change bits, and the tolerance that then applies. */
#include "registry_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


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
            nx_point_diff(&tmp, &nd, &rx->point, &ry->point);
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
