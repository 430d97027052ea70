/* oracle.h: an independent, slow, exact test oracle for numerics points.
 *
 * Written only from docs NUMERICS.md (sections 1, 2, 4, 5) and
 * docs/interpretations.md.  Every intermediate value is an exact GMP
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
    const char *tree;         /* tree text per the grammar of section 4; NULL = "seq" */
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
 * reverse passes it on, split/tile/stride pass it to a seq combinator,
 * X@FMT to X; any other tree T gives round(T + s0). */
int orc_reduce_c(const orc_point *p, const char *in_fmt, const char *b_fmt,
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
