/* nx_program.h: a numerics point expanded for a length n.
 *
 * Expansion turns the tree of a point into its explicit bracketing: a flat
 * list of operations in single-assignment form, each naming its format and
 * mode.  Every engine runs this same list, so the engines differ only in
 * how they perform one rounded operation, never in the order.  The
 * canonical hash of a point at a shape is a hash of this list (with the
 * point's input/output conversions and atom); equal hashes mean equal bits. */
#ifndef NX_PROGRAM_H
#define NX_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "nx_point.h"

typedef enum nx_opkind {
    NX_OP_ZERO, /* +0 */
    NX_OP_LEAF, /* round(value(x)) */
    NX_OP_ADD,  /* round(value(x) + value(y)); with fma: round(a*b + value(x)) */
    NX_OP_ATOM, /* atom(value(x), group of gn sources starting at gsrc[y]) */
    NX_OP_START /* the row's start value s0 = c[r], exact (docs/numerics.md §4.1, §6);
                 * fmt is fp64: c may be of any format */
} nx_opkind;

/* A source is a term (>= 0: its index) or an earlier operation's result
 * (< 0: operation -(s+1)). */
#define NX_SRC_IS_TERM(s) ((s) >= 0)
#define NX_SRC_OP(s) (-(s) - 1)

typedef struct nx_op {
    uint8_t kind;
    uint8_t fmt;  /* format of the rounding */
    uint8_t mode; /* mode of the rounding */
    uint8_t pfmt; /* for a product term's value(t): the format it rounds to; 0xff: n/a */
    uint8_t fma;  /* ADD: y is a product term that meets x in one fused multiply-add */
    int32_t x, y;
    int32_t gn;   /* ATOM: group size */
} nx_op;

typedef struct nx_program {
    size_t n;          /* terms per row */
    int dot;           /* 1: terms are products a*b; 0: values x */
    int in;            /* nx_fmt or -1 */
    nx_mode in_rounding;
    nx_fmt out;
    nx_mode out_rounding;
    int saturate;
    int atom_frac_bits;
    nx_mode atom_term_round;
    nx_align atom_align; /* §5 step 2: what a product addend's exponent is */
    int nondeterministic; /* the tree uses `atomic` */
    int start;            /* 1: rows are reduced from a start value c[r] (one NX_OP_START) */
    nx_op *ops;
    size_t nops;
    int32_t *gsrc;     /* atom groups */
    size_t ngsrc;
    int32_t result;    /* source of the tree's result */
} nx_program;

/* A point expands to at most nx_limits_get()->max_ops operations at one n
 * (default NX_LIMITS_DEFAULT_OPS = 2^23, 16 bytes each; `--max-ops`):
 * more is bad input, refused as soon as it is known. */

nx_status nx_program_build(const nx_point *pt, size_t n, int dot, nx_program **out, nx_err *err);

/* The same; start = 1 expands the tree reduced from each row's start value
 * (the accumulator input c, docs/numerics.md §4.1 "Reducing from a start
 * value" and §6): seq and chain start from it, a split/tile/stride whose
 * combinator is seq starts that combinator from it, reverse and X@FMT pass
 * it on, and any other tree T becomes round(T + s0). */
nx_status nx_program_build_ex(const nx_point *pt, size_t n, int dot, int start, nx_program **out,
                              nx_err *err);
void nx_program_free(nx_program *p);

/* SHA-256 of the expanded point, as 64 hex digits + NUL. */
nx_status nx_program_hash(const nx_program *p, char hex[65], nx_err *err);

/* The explicit bracketing, e.g. "((t0+t4)+(t2+t6))+((t1+t5)+(t3+t7))";
 * atoms print as "[s+t0+t1+...]", the start value as "c".  malloc'd; NULL
 * when out of memory. */
char *nx_program_expansion(const nx_program *p);

#endif
