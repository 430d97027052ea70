/* oracle.h: an independent, slow, exact test oracle for numerics points.
 *
 * Written only from docs/numerics.md (sections 1, 2, 4, 5) and
 * docs/interpretations.md; the third edition's point language (subtree
 * settings X[k=v, ...], body and carry, tile lists and halve=, order, expr,
 * lanes with its loop, peel and fold stages, row classes) from
 * docs/numerics.md §4.1-§4.3.  Every intermediate value is an exact GMP
 * rational (mpq_t); no floating-point arithmetic touches a value and no MPFR
 * is used.  Clarity over speed: trees are evaluated recursively on explicit
 * arrays of terms.
 *
 * Format names: "fp64","fp32","tf32","fp16","bf16","e5m2","e4m3","e3m2",
 * "e2m3","e2m1","e8m0","e8m13".  Bit patterns are right-aligned in a
 * uint64_t (e3m2/e2m3 use the low 6 bits, e2m1 the low 4).
 * Rounding modes: "rne","rna","rz","ru","rd". */
#ifndef PARITY_ORACLE_H
#define PARITY_ORACLE_H

#include <stdint.h>
#include <stddef.h>
#include <gmp.h>

typedef struct orc_point {
    const char *acc;          /* format name, default "fp32" when NULL */
    const char *rounding;     /* "rne","rna","rz","ru","rd"; NULL = "rne" */
    const char *in;           /* NULL = none */
    const char *in_rounding;  /* NULL = "rne" */
    int fma;                  /* 1 or 0 */
    const char *product;      /* NULL or "exact" = exact; else a format name */
    const char *tree;         /* tree text per the grammar of section 4 (third edition); NULL = "seq" */
    int has_atom;
    int atom_frac_bits;       /* -1 = no frac_bits (addends stay exact) */
    const char *atom_term_round; /* NULL = "rz" */
    const char *atom_round;      /* NULL = the point's rounding */
    const char *atom_acc;        /* NULL = the current format */
    const char *atom_align;      /* "operands" (NULL, the default) or "values" */
    const char *out;          /* NULL = acc */
    const char *out_rounding; /* NULL = rounding */
    int saturate;
} orc_point;

/* Inputs are bit patterns (right-aligned in uint64_t) in format in_fmt.
 * b_bits == NULL means a value sum (terms x_i = a_i), else a dot product
 * (terms a_i * b_i, b_i in format b_fmt, NULL = in_fmt).
 * On success returns 0 and writes the result's bit pattern in format `out`
 * to *out_bits.  On a bad point/tree/input pattern, or a NaN that has to be
 * rounded to a format with no NaN encoding, returns nonzero and writes a
 * message to err (when err != NULL and errlen > 0). */
int orc_reduce(const orc_point *p, const char *in_fmt, const char *b_fmt,
               const uint64_t *a_bits, const uint64_t *b_bits, size_t n,
               uint64_t *out_bits, char *err, size_t errlen);

/* The same, reduced from the start value c (the accumulator input of
 * section 6, D = A·B + C): *c_bits in format c_fmt, decoded exactly (no
 * `in` rounding).  c_bits == NULL: no start value, as orc_reduce.  Section
 * 4.1 "Reducing from a start value s0": seq and chain start from it,
 * reverse and order pass it on, split/tile/stride/body/lanes pass it to a
 * seq combinator, body(..., carry) starts from round(s0 + the body's value),
 * X@FMT and X[...] pass it to X; any other tree T gives round(T + s0). */
int orc_reduce_c(const orc_point *p, const char *in_fmt, const char *b_fmt,
                 const uint64_t *a_bits, const uint64_t *b_bits, size_t n,
                 const char *c_fmt, const uint64_t *c_bits,
                 uint64_t *out_bits, char *err, size_t errlen);

/* Row classes (docs/numerics.md §4.3): a class overrides the point's keys
 * for the rows whose selector is true.  `set` names the keys the class
 * holds (ORC_K_* bits); only those fields of `keys` are read.  ORC_K_ATOM
 * replaces the point's whole atom (has_atom and every atom_* field).
 * ORC_K_ROWS / ORC_K_GRID record a class that holds `rows` or `grid`,
 * which is malformed. */
enum {
    ORC_K_ACC = 1u << 0, ORC_K_ROUNDING = 1u << 1, ORC_K_IN = 1u << 2,
    ORC_K_IN_ROUNDING = 1u << 3, ORC_K_FMA = 1u << 4, ORC_K_PRODUCT = 1u << 5,
    ORC_K_TREE = 1u << 6, ORC_K_ATOM = 1u << 7, ORC_K_OUT = 1u << 8,
    ORC_K_OUT_ROUNDING = 1u << 9, ORC_K_SATURATE = 1u << 10,
    ORC_K_ROWS = 1u << 11, ORC_K_GRID = 1u << 12
};

typedef struct orc_rowclass {
    const char *select;  /* the selector expression */
    unsigned set;        /* ORC_K_* bits: the keys this class holds */
    orc_point keys;      /* their values */
} orc_rowclass;

/* Evaluates a selector for row r of R: integers, r, R, and with grid
 * (grid[0] = M, grid[1] = N; NULL: no grid) also i = r / N, j = r % N, M, N;
 * + - * / % (floor division, remainder with the divisor's sign), == != < <=
 * > >= (1 or 0), && || (short-circuit) and !, parentheses; C precedence and
 * left associativity.  Returns 0 and *value, or nonzero with a message
 * naming the column for a selector that does not parse, an unknown name, a
 * division by zero or an overflow of int64. */
int orc_select_eval(const char *select, int64_t r, int64_t R, const int64_t grid[2],
                    int64_t *value, char *err, size_t errlen);

/* The same for a row of n terms: n (docs/numerics.md §4.3, fourth edition)
 * is a name too, the reduction length; orc_select_eval knows no n. */
int orc_select_eval_n(const char *select, int64_t r, int64_t R, int64_t n, const int64_t grid[2],
                      int64_t *value, char *err, size_t errlen);

/* The class of row r (of n terms): *which = the index of the first class whose selector
 * is nonzero, or -1 when none is.  Returns nonzero on a selector error. */
int orc_row_class(const orc_rowclass *classes, size_t nclasses, const int64_t grid[2],
                  size_t R, size_t r, size_t n, long *which, char *err, size_t errlen);

/* A whole point with row classes over R rows of n terms: a_bits[r*n + i]
 * (and b_bits, NULL for a sum), c_bits[r] (NULL: no start value), results
 * out_bits[r] in the point's `out` format.  Row r is reduced by the point
 * with the keys of its class (orc_row_class) applied over it, or by the
 * point as it is.  Malformed (nonzero, a message): a selector that does not
 * parse or divides by zero, a class holding rows or grid, a grid whose M·N
 * is not R (or M, N below 1), a class whose `out` format differs from the
 * point's, and anything orc_reduce_c rejects in the point or any class
 * (every class is checked, whether a row selects it or not). */
int orc_reduce_rows(const orc_point *p, const orc_rowclass *classes, size_t nclasses,
                    const int64_t grid[2], size_t R,
                    const char *in_fmt, const char *b_fmt,
                    const uint64_t *a_bits, const uint64_t *b_bits, size_t n,
                    const char *c_fmt, const uint64_t *c_bits,
                    uint64_t *out_bits, char *err, size_t errlen);

/* Rounds the exact finite value to fmt with mode (and saturate, which turns
 * every overflow into +-max finite) and writes its bit pattern.  When
 * exact_value is zero its sign is sign_if_zero (-1 or +1).  Returns 0 on
 * success, nonzero for an unknown format or mode. */
int orc_round_bits(const char *fmt, const char *mode, int saturate,
                   const mpq_t exact_value, int sign_if_zero, uint64_t *out_bits);

/* Decodes a bit pattern into an exact rational (set to 0 for inf and NaN).
 * Returns 0 for finite, 1 for +inf, -1 for -inf, 2 for NaN; *neg_zero (if
 * not NULL) is set to 1 for -0, else 0.  Extension: returns 3 for an unknown
 * format or a pattern that is not an encoding of the format (bits above the
 * storage width; a finite tf32/e8m13 pattern with nonzero low mantissa bits). */
int orc_decode(const char *fmt, uint64_t bits, mpq_t value, int *neg_zero);

#endif
