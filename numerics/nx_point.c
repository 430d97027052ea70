/* nx_point.c: defaults, validation and printing of numerics points; the
 * atom presets of atom_presets.def. */
#include "nx_point.h"
#include "nx_sbuf.h"
#include "nx_select.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const nx_atom_preset presets[] = {
#define X(name, n, f, tr, r, acc, what) {name, n, f, tr, r, acc, what},
#include "atom_presets.def"
#undef X
};

const nx_atom_preset *nx_atom_preset_find(const char *name)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].name, name) == 0)
            return &presets[i];
    return NULL;
}

const nx_atom_preset *nx_atom_preset_at(size_t i)
{
    return i < sizeof presets / sizeof presets[0] ? &presets[i] : NULL;
}

const char *nx_align_name(nx_align a)
{
    return a == NX_ALIGN_VALUES ? "values" : "operands";
}

int nx_align_parse(const char *s, nx_align *a)
{
    if (strcmp(s, "operands") == 0)
        *a = NX_ALIGN_OPERANDS;
    else if (strcmp(s, "values") == 0)
        *a = NX_ALIGN_VALUES;
    else
        return -1;
    return 0;
}

void nx_atom_from_preset(nx_atom *a, const nx_atom_preset *p)
{
    memset(a, 0, sizeof *a);
    a->present = 1;
    a->frac_bits = p->frac_bits;
    a->term_round = p->term_round;
    a->round = (int)p->round;
    a->acc = (int)p->acc;
    a->group = p->group;
    snprintf(a->preset, sizeof a->preset, "%s", p->name);
}

nx_status nx_point_init(nx_point *pt, nx_err *err)
{
    memset(pt, 0, sizeof *pt);
    pt->acc = NX_FP32;
    pt->rounding = NX_RNE;
    pt->in = -1;
    pt->in_rounding = NX_RNE;
    pt->fma = 1;
    pt->product = -1;
    pt->atom.frac_bits = -1;
    pt->atom.term_round = NX_RZ;
    pt->atom.round = -1;
    pt->atom.acc = -1;
    pt->out = -1;
    pt->out_rounding = -1;
    return nx_point_set_tree(pt, "seq", "tree", err);
}

void nx_point_free(nx_point *pt)
{
    nx_tree_free(pt->tree);
    pt->tree = NULL;
    for (size_t k = 0; k < pt->nclasses; k++) {
        free(pt->classes[k].select);
        nx_select_free(pt->classes[k].sel);
        if (pt->classes[k].pt) {
            nx_point_free(pt->classes[k].pt);
            free(pt->classes[k].pt);
        }
    }
    free(pt->classes);
    pt->classes = NULL;
    pt->nclasses = 0;
}

nx_status nx_point_copy_base(const nx_point *pt, nx_point *out, nx_err *err)
{
    *out = *pt;
    out->classes = NULL;
    out->nclasses = 0;
    out->grid_m = out->grid_n = 0;
    out->tree = NULL;
    char *text = nx_tree_print(pt->tree);
    if (!text)
        return nx_err_set(err, NX_ENOMEM, "out of memory");
    nx_status st = nx_tree_parse(text, "tree", &out->tree, err);
    free(text);
    return st;
}

nx_status nx_point_for_row(const nx_point *pt, size_t r, size_t R, size_t n, const nx_point **out, nx_err *err)
{
    *out = pt;
    if (pt->nclasses && pt->grid_m > 0 && (size_t)(pt->grid_m * pt->grid_n) != R)
        return nx_err_set(err, NX_EINVAL, "key 'grid': [%ld, %ld] lays out %ld rows, but there are %zu", pt->grid_m,
                          pt->grid_n, pt->grid_m * pt->grid_n, R);
    for (size_t k = 0; k < pt->nclasses; k++) {
        int hit;
        nx_status st = nx_select_eval(pt->classes[k].sel, (long long)r, (long long)R, pt->grid_m, pt->grid_n,
                                        (long long)n, &hit, err);
        if (st) {
            nx_err_prefix(err, "key 'rows[%zu].select' (\"%s\")", k, pt->classes[k].select);
            return st;
        }
        if (hit) {
            *out = pt->classes[k].pt;
            return NX_OK;
        }
    }
    return NX_OK;
}

nx_status nx_point_set_tree(nx_point *pt, const char *text, const char *name, nx_err *err)
{
    nx_tree *t;
    nx_status st = nx_tree_parse(text, name, &t, err);
    if (st)
        return st;
    nx_tree_free(pt->tree);
    pt->tree = t;
    return NX_OK;
}

nx_status nx_point_validate(const nx_point *pt, nx_err *err)
{
    if (nx_tree_uses(pt->tree, NX_T_CHAIN) && !pt->atom.present)
        return nx_err_set(err, NX_EINVAL,
                          "key 'tree': chain(N) needs an atom, and the point has no key 'atom'");
    if (pt->atom.present && pt->atom.frac_bits > 1000)
        return nx_err_set(err, NX_EINVAL, "key 'atom.frac_bits': %d is out of range (0..1000)",
                          pt->atom.frac_bits);
    return NX_OK;
}

nx_fmt nx_point_out(const nx_point *pt)
{
    return pt->out >= 0 ? (nx_fmt)pt->out : pt->acc;
}

nx_mode nx_point_out_rounding(const nx_point *pt)
{
    return pt->out_rounding >= 0 ? (nx_mode)pt->out_rounding : pt->rounding;
}

char *nx_point_print(const nx_point *pt)
{
    nx_sbuf b = {0};
    char *tree = nx_tree_print(pt->tree);
    nx_sbuf_printf(&b, "{ acc = \"%s\", rounding = \"%s\"", nx_format(pt->acc)->name,
                   nx_mode_name(pt->rounding));
    if (pt->in >= 0)
        nx_sbuf_printf(&b, ", in = \"%s\", in_rounding = \"%s\"", nx_format((nx_fmt)pt->in)->name,
                       nx_mode_name(pt->in_rounding));
    nx_sbuf_printf(&b, ", fma = %s, product = \"%s\", tree = \"%s\"", pt->fma ? "true" : "false",
                   pt->product >= 0 ? nx_format((nx_fmt)pt->product)->name : "exact",
                   tree ? tree : "?");
    if (pt->atom.present) {
        nx_sbuf_printf(&b, ", atom = { ");
        if (pt->atom.frac_bits >= 0)
            nx_sbuf_printf(&b, "frac_bits = %d, ", pt->atom.frac_bits);
        nx_sbuf_printf(&b, "term_round = \"%s\"", nx_mode_name(pt->atom.term_round));
        if (pt->atom.round >= 0)
            nx_sbuf_printf(&b, ", round = \"%s\"", nx_mode_name((nx_mode)pt->atom.round));
        if (pt->atom.acc >= 0)
            nx_sbuf_printf(&b, ", acc = \"%s\"", nx_format((nx_fmt)pt->atom.acc)->name);
        nx_sbuf_printf(&b, ", align = \"%s\"", nx_align_name((nx_align)pt->atom.align));
        nx_sbuf_printf(&b, " }");
    }
    nx_sbuf_printf(&b, ", out = \"%s\", out_rounding = \"%s\", saturate = %s",
                   nx_format(nx_point_out(pt))->name, nx_mode_name(nx_point_out_rounding(pt)),
                   pt->saturate ? "true" : "false");
    if (pt->grid_m > 0)
        nx_sbuf_printf(&b, ", grid = [%ld, %ld]", pt->grid_m, pt->grid_n);
    if (pt->nclasses) {
        /* each class in full: its own canonical point with its selector */
        nx_sbuf_printf(&b, ", rows = [");
        for (size_t k = 0; k < pt->nclasses; k++) {
            char *c = nx_point_print(pt->classes[k].pt);
            nx_sbuf_printf(&b, "%s{ select = \"%s\", %s", k ? ", " : "", pt->classes[k].select, c ? c + 2 : "?");
            free(c);
        }
        nx_sbuf_printf(&b, "]");
    }
    nx_sbuf_printf(&b, " }");
    free(tree);
    return nx_sbuf_take(&b);
}
