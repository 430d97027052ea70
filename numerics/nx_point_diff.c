/* nx_point_diff.c: the differences between two numerics points in words
 * (nx_point.h, nx_point_diff): per setting, then the tree walked in step
 * ("split count: 4 vs 8"), the atom and the output.  `parity registry
 * compare` and `parity explain` print them. */
#include "nx_point.h"
#include "nx_sbuf.h"

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
    case NX_T_HEAD: return "head";
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
    if (x->store != y->store) {
        nx_sbuf_printf(b, "      %s%s result stored: %s vs %s\n", where, k, fmt_or(x->store, "not stored"),
                       fmt_or(y->store, "not stored"));
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
                        : x->kind == NX_T_HEAD   ? "modulus"
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
        snprintf(sub, sizeof sub, "%s%s%s %s:", path, *path ? " " : "", k, x->kind == NX_T_HEAD ? "head" : "tail");
        tree_diff(b, nd, x->u, y->u, sub);
    }
    if (x->c && y->c) {
        snprintf(sub, sizeof sub, "%s%s%s combine:", path, *path ? " " : "", k);
        tree_diff(b, nd, x->c, y->c, sub);
    }
}

void nx_point_diff(nx_sbuf *b, size_t *nd, const nx_point *x, const nx_point *y)
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
