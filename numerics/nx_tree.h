/* nx_tree.h: the reduction-tree language of NUMERICS.md §4: parse (errors
 * point at the line and column), the canonical printer (parse ∘ print is
 * the identity) and the tree's structure. */
#ifndef NX_TREE_H
#define NX_TREE_H

#include "nx_error.h"
#include "nx_format.h"

typedef enum nx_tree_kind {
    NX_T_SEQ, NX_T_PAIRWISE, NX_T_HALVING, NX_T_ATOMIC, NX_T_CHAIN,
    NX_T_REVERSE, NX_T_SPLIT, NX_T_TILE, NX_T_STRIDE
} nx_tree_kind;

typedef struct nx_tree {
    nx_tree_kind kind;
    int fmt;              /* -1, or the nx_fmt of an `@FMT` suffix */
    long count;           /* split S, tile T0, stride L, chain N */
    long opt;             /* split align A, stride block V (1 = default) */
    struct nx_tree *t;    /* reverse/split/tile/stride: the tree of the parts */
    struct nx_tree *c;    /* split/tile/stride: the combinator */
} nx_tree;

#define NX_TREE_INT_MAX (1L << 30)

/* Parses text; `name` prefixes messages ("tree:1:9: expected ',' after the
 * split count").  Returns NX_OK and *out, or NX_EINVAL. */
nx_status nx_tree_parse(const char *text, const char *name, nx_tree **out, nx_err *err);
void nx_tree_free(nx_tree *t);

/* Canonical text: single spaces after commas, defaults (align=1, block=1)
 * omitted.  Returns a malloc'd string, or NULL when out of memory. */
char *nx_tree_print(const nx_tree *t);

/* 1 if the tree (anywhere) uses chain / atomic. */
int nx_tree_uses(const nx_tree *t, nx_tree_kind k);

#endif
