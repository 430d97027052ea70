/* point_toml.c: TOML → nx_point, with messages that name the key and where
 * it is. */
#include "point_toml.h"

#include "nx_select.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const point_keys[] = {"acc", "rounding", "in", "in_rounding", "fma", "product", "tree",
                                         "atom", "out", "out_rounding", "saturate", "rows", "grid", NULL};
/* a row class: any key of a point but rows and grid, and its selector */
static const char *const class_keys[] = {"select", "acc", "rounding", "in", "in_rounding", "fma", "product",
                                         "tree", "atom", "out", "out_rounding", "saturate", NULL};
static const char *const atom_keys[] = {"preset", "frac_bits", "term_round", "round", "acc", "align", NULL};

static const char *format_list(void)
{
    return "fp64, fp32, tf32, fp16, bf16, e5m2, e4m3, e3m2, e2m3, e2m1, e8m0, e8m13";
}

static nx_status get_fmt(const tc_node *t, const char *key, int allow_exact, int *out, nx_err *err)
{
    const tc_node *n = tc_get(t, key);
    if (!n)
        return NX_OK;
    nx_status st = tc_check_kind(n, TC_STRING, err);
    if (st)
        return st;
    if (allow_exact && strcmp(n->str, "exact") == 0) {
        *out = -1;
        return NX_OK;
    }
    int f = nx_fmt_from_name(n->str);
    if (f < 0)
        return tc_errf(err, NX_EINVAL, n, "key '%s': unknown format '%s' (expected %s%s)", key, n->str,
                       allow_exact ? "exact, " : "", format_list());
    *out = f;
    return NX_OK;
}

static nx_status get_mode(const tc_node *t, const char *key, int *out, nx_err *err)
{
    const tc_node *n = tc_get(t, key);
    if (!n)
        return NX_OK;
    nx_status st = tc_check_kind(n, TC_STRING, err);
    if (st)
        return st;
    int m = nx_mode_from_name(n->str);
    if (m < 0)
        return tc_errf(err, NX_EINVAL, n, "key '%s': unknown rounding mode '%s' (expected rne, rna, rz, ru, rd)",
                       key, n->str);
    *out = m;
    return NX_OK;
}

static nx_status get_bool(const tc_node *t, const char *key, int *out, nx_err *err)
{
    const tc_node *n = tc_get(t, key);
    if (!n)
        return NX_OK;
    nx_status st = tc_check_kind(n, TC_BOOL, err);
    if (st)
        return st;
    *out = n->b;
    return NX_OK;
}

static nx_status read_atom(const tc_node *n, nx_atom *a, nx_err *err)
{
    if (n->kind == TC_STRING) {
        const nx_atom_preset *p = nx_atom_preset_find(n->str);
        if (!p)
            return tc_errf(err, NX_EINVAL, n, "key 'atom': unknown atom preset '%s' (see `parity atoms`)",
                           n->str);
        nx_atom_from_preset(a, p);
        return NX_OK;
    }
    if (n->kind != TC_TABLE)
        return tc_errf(err, NX_EINVAL, n, "key 'atom' must be a preset name or a table, found %s",
                       tc_kind_name(n->kind));
    nx_status st = tc_check_keys(n, atom_keys, err);
    if (st)
        return st;
    a->present = 1;
    const tc_node *pr = tc_get(n, "preset");
    if (pr) {
        if ((st = tc_check_kind(pr, TC_STRING, err)))
            return st;
        const nx_atom_preset *p = nx_atom_preset_find(pr->str);
        if (!p)
            return tc_errf(err, NX_EINVAL, pr, "key 'atom.preset': unknown atom preset '%s'", pr->str);
        nx_atom_from_preset(a, p);
    }
    const tc_node *fb = tc_get(n, "frac_bits");
    if (fb) {
        if ((st = tc_check_kind(fb, TC_INT, err)))
            return st;
        if (fb->i < 0 || fb->i > 1000)
            return tc_errf(err, NX_EINVAL, fb, "key 'atom.frac_bits': %lld is out of range (0..1000)", fb->i);
        a->frac_bits = (int)fb->i;
    }
    int m = (int)a->term_round;
    if ((st = get_mode(n, "term_round", &m, err)))
        return st;
    a->term_round = (nx_mode)m;
    if ((st = get_mode(n, "round", &a->round, err)) || (st = get_fmt(n, "acc", 0, &a->acc, err)))
        return st;
    const tc_node *al = tc_get(n, "align");
    if (al) {
        if ((st = tc_check_kind(al, TC_STRING, err)))
            return st;
        nx_align v;
        if (nx_align_parse(al->str, &v))
            return tc_errf(err, NX_EINVAL, al, "key 'atom.align': unknown rule '%s' (expected operands, values)",
                           al->str);
        a->align = (int)v;
    }
    return NX_OK;
}

/* Reads the point keys present in t onto pt (defaults already there). */
static nx_status apply_keys(const tc_node *t, nx_point *pt, nx_err *err)
{
    nx_status st;
    int acc = (int)pt->acc, rnd = (int)pt->rounding, inr = (int)pt->in_rounding;
    if ((st = get_fmt(t, "acc", 0, &acc, err)) || (st = get_mode(t, "rounding", &rnd, err)) ||
        (st = get_fmt(t, "in", 0, &pt->in, err)) || (st = get_mode(t, "in_rounding", &inr, err)) ||
        (st = get_bool(t, "fma", &pt->fma, err)) || (st = get_fmt(t, "product", 1, &pt->product, err)) ||
        (st = get_fmt(t, "out", 0, &pt->out, err)) ||
        (st = get_mode(t, "out_rounding", &pt->out_rounding, err)) ||
        (st = get_bool(t, "saturate", &pt->saturate, err)))
        return st;
    pt->acc = (nx_fmt)acc;
    pt->rounding = (nx_mode)rnd;
    pt->in_rounding = (nx_mode)inr;
    const tc_node *tr = tc_get(t, "tree");
    if (tr) {
        if ((st = tc_check_kind(tr, TC_STRING, err)))
            return st;
        if ((st = nx_point_set_tree(pt, tr->str, "tree", err))) {
            char where[256];
            snprintf(where, sizeof where, "%s:%d:%d: key 'tree'", tr->source ? tr->source : "point",
                     tr->line, tr->column);
            nx_err_prefix(err, "%s", where);
            return st;
        }
    }
    const tc_node *at = tc_get(t, "atom");
    if (at && (st = read_atom(at, &pt->atom, err)))
        return st;
    if ((st = nx_point_validate(pt, err))) {
        nx_err_prefix(err, "%s", t->source ? t->source : "point");
        return st;
    }
    return NX_OK;
}

/* grid = [M, N] and rows = [{ select = "...", ... }, ...] (docs/numerics.md §4.3). */
static nx_status read_classes(const tc_node *t, nx_point *pt, nx_err *err)
{
    nx_status st;
    const tc_node *g = tc_get(t, "grid");
    if (g) {
        if ((st = tc_check_kind(g, TC_ARRAY, err)))
            return st;
        if (g->nitems != 2 || g->items[0]->kind != TC_INT || g->items[1]->kind != TC_INT ||
            g->items[0]->i < 1 || g->items[1]->i < 1 || g->items[0]->i > (1LL << 31) || g->items[1]->i > (1LL << 31))
            return tc_errf(err, NX_EINVAL, g, "key 'grid' must be [M, N], two integers of at least 1");
        pt->grid_m = (long)g->items[0]->i;
        pt->grid_n = (long)g->items[1]->i;
    }
    const tc_node *rs = tc_get(t, "rows");
    if (!rs)
        return NX_OK;
    if ((st = tc_check_kind(rs, TC_ARRAY, err)))
        return st;
    pt->classes = calloc(rs->nitems ? rs->nitems : 1, sizeof *pt->classes);
    if (!pt->classes)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    for (size_t k = 0; k < rs->nitems; k++) {
        const tc_node *c = rs->items[k];
        if (c->kind != TC_TABLE)
            return tc_errf(err, NX_EINVAL, c, "key 'rows': each row class must be a table, found %s",
                           tc_kind_name(c->kind));
        if (tc_get(c, "rows") || tc_get(c, "grid"))
            return tc_errf(err, NX_EINVAL, c, "key 'rows[%zu]': a row class cannot hold 'rows' or 'grid'", k);
        if ((st = tc_check_keys(c, class_keys, err)))
            return st;
        const tc_node *sel;
        if ((st = tc_want(c, "select", TC_STRING, &sel, err)))
            return st;
        nx_rowclass *rc = &pt->classes[pt->nclasses++];
        if (!(rc->select = strdup(sel->str)) || !(rc->pt = calloc(1, sizeof *rc->pt)))
            return nx_err_set(err, NX_ENOMEM, "out of memory");
        char name[64];
        snprintf(name, sizeof name, "key 'rows[%zu].select'", k);
        if ((st = nx_select_parse(sel->str, name, &rc->sel, err))) {
            char where[256];
            snprintf(where, sizeof where, "%s:%d:%d", sel->source ? sel->source : "point", sel->line, sel->column);
            nx_err_prefix(err, "%s", where);
            return st;
        }
        if (nx_select_uses_grid(rc->sel) && pt->grid_m == 0)
            return tc_errf(err, NX_EINVAL, sel, "key 'rows[%zu].select' names i, j, M or N, but the point has no 'grid'",
                           k);
        if ((st = nx_point_copy_base(pt, rc->pt, err)))
            return st;
        if ((st = apply_keys(c, rc->pt, err)))
            return st;
    }
    return NX_OK;
}

nx_status pt_from_toml(const tc_node *t, nx_point *pt, nx_err *err)
{
    nx_status st = nx_point_init(pt, err);
    if (st)
        return st;
    if (t->kind != TC_TABLE) {
        st = tc_errf(err, NX_EINVAL, t, "a numerics point must be a table, found %s", tc_kind_name(t->kind));
        goto fail;
    }
    if ((st = tc_check_keys(t, point_keys, err)) || (st = apply_keys(t, pt, err)) ||
        (st = read_classes(t, pt, err)))
        goto fail;
    return NX_OK;
fail:
    nx_point_free(pt);
    return st;
}

nx_status pt_from_text(const char *text, const char *name, nx_point *pt, nx_err *err)
{
    tc_node *root;
    nx_status st = tc_parse_inline_table(text, name, &root, err);
    if (st)
        return st;
    st = pt_from_toml(root, pt, err);
    tc_free(root);
    return st;
}
