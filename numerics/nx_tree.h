/* nx_tree.h: the reduction-tree language of docs/numerics.md §4 and §4.1: parse (errors
 * point at the line and column), the canonical printer (parse ∘ print is
 * the identity) and the tree's structure. */
#ifndef NX_TREE_H
#define NX_TREE_H

#include "nx_error.h"
#include "nx_format.h"

typedef enum nx_tree_kind {
    NX_T_SEQ, NX_T_PAIRWISE, NX_T_HALVING, NX_T_ATOMIC, NX_T_CHAIN,
    NX_T_REVERSE, NX_T_SPLIT, NX_T_TILE, NX_T_STRIDE,
    /* third edition (§4.1) */
    NX_T_BODY, NX_T_ORDER, NX_T_EXPR,
    /* a vector accumulator whose lanes outlive one loop (§4.2) */
    NX_T_LANES,
    /* eighth edition: the remainder first, then the multiple (§4.2) */
    NX_T_HEAD
} nx_tree_kind;

/* An `expr` bracketing in postfix: an index (>= 0) pushes leaf(t_i),
 * NX_EXPR_ADD pops two and pushes their rounded sum. */
#define NX_EXPR_ADD (-1L)

/* The stages of `lanes(W, [stage, ...], C)` in t->list, one after another:
 *   NX_LANES_LOOP B            loop(B)
 *   NX_LANES_LOOPU B U         loop(B, U), U a multiple of B above it (sixth
 *                              edition): while U terms remain, U / B blocks
 *   NX_LANES_PEEL B M          peel(B, M)
 *   NX_LANES_REST L            rest(L), the last stage (sixth edition):
 *                              every term left, one at a time, to lane L
 *   NX_LANES_FOLD V k          fold(V, [b0, ..., b(k-1)]), followed by the k
 *                              brackets, each in postfix (register indices
 *                              and NX_EXPR_ADD) ended by NX_LANES_END.
 * t->count is W, t->c the combinator, t->k the number of stages. */
#define NX_LANES_LOOP (-2L)
#define NX_LANES_PEEL (-3L)
#define NX_LANES_FOLD (-4L)
#define NX_LANES_END (-5L)
#define NX_LANES_LOOPU (-6L)
#define NX_LANES_REST (-7L)

typedef struct nx_tree {
    nx_tree_kind kind;
    int fmt;              /* -1, or the nx_fmt of an `@FMT` suffix or `[acc=FMT]` */
    int fma;              /* -1, or `[fma=...]` (0/1) */
    int product;          /* -2: not set; -1: `[product=exact]`; else an nx_fmt */
    int rounding;         /* -1, or `[rounding=...]` (an nx_mode) */
    int store;            /* -1, or `[store=FMT]` (seventh edition, an nx_fmt): the subtree's result
                           * rounded to FMT in its mode before it goes anywhere; not inherited */
    long count;           /* split S, tile T0 (0 with a size list), stride L, chain N, body/head L, lanes W */
    long opt;             /* split align A, stride block V, tile halve A (1 = default; tile: 0 = none) */
    struct nx_tree *t;    /* reverse/split/tile/stride/order: the tree of the parts; body/head: of the
                           * multiple of L (the body) */
    struct nx_tree *c;    /* split/tile/stride/body/head/lanes: the combinator (body, head, tile: NULL
                           * with carry) */
    struct nx_tree *u;    /* body: the tree of the tail; head: of the head (the first n mod L terms) */
    int carry;            /* body: the tail continues from the body's value; head: the body
                           * continues from the head's;
                           * tile (fifth edition): each tile from the running value */
    long *list;           /* tile: the sizes; order: the permutation; expr: the postfix program;
                           * lanes: the stages (NX_LANES_*) */
    size_t nlist;
    long k;               /* expr: the number of indices (0 ... k-1); lanes: the number of stages */
} nx_tree;

#define NX_TREE_INT_MAX (1L << 30)
/* Deepest nesting the parser accepts (trees, and brackets of an expr). */
#define NX_TREE_MAX_DEPTH 256

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
