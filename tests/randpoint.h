/* randpoint.h: random numerics points and inputs for the property tests
 * (the oracle comparison, fast == MPFR, the bounds).
 *
 * Points cover every format, tree construct, mode and atom option;
 * inputs are bit patterns: uniform bits, values near a common scale (so
 * sums cancel and carry), subnormals, signed zeros and exact negations of
 * earlier terms.  One splitmix64 stream, seeded by rp_seed: the same seed
 * gives the same cases everywhere. */
#ifndef PARITY_RANDPOINT_H
#define PARITY_RANDPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "oracle/oracle.h"

#define RP_MAX_N 64

typedef struct rp_case {
    char toml[2048];     /* the point as an inline TOML table */
    orc_point op;        /* the same point for the oracle (strings point into the case) */
    char tree[1024];
    const char *in_fmt, *b_fmt; /* formats of a and b */
    int dot;
    size_t n;
    uint64_t a[RP_MAX_N], b[RP_MAX_N]; /* bit patterns of one row */
    int has_c;           /* the row is reduced from a start value c (docs/numerics.md §6) */
    const char *c_fmt;   /* c's format: a's, b's or any other input format */
    uint64_t c;          /* c's bit pattern */
    int c_scale;         /* the scale c was drawn near (for more rows) */
} rp_case;

/* 2 (the default): trees of the second edition only, so a seed draws the
 * cases it always drew; 3: also the third edition's forms and subtree
 * settings (docs/numerics.md §4.1); 4: the third edition with lanes
 * (docs/numerics.md §4.2): lanes(W, [stages], C) with W in 1 ... 8, one to
 * four loop, peel and fold stages valid at the live width, and a random C,
 * also as a combinator and under settings.  Each level draws exactly what
 * it drew before the next one was added. */
extern int rp_edition;
/* 0 (the default): the draws as always; 1: half of the terms from the rare
 * paths (short mantissas that cancel exactly, subnormals, negations). */
extern int rp_rare;

void rp_seed(uint64_t seed);
uint64_t rp_rand(void);
int rp_below(int n); /* uniform in [0, n) */

/* A random point and one row of inputs.  About a third of the cases have a
 * start value c; c comes from a second stream (seeded with the first), so
 * the points and terms are those the same seed drew before c existed. */
void rp_case_make(rp_case *c);

/* A random c pattern of format f near 2^scale_exp (or a zero, NaN, inf,
 * subnormal...), from the c stream. */
uint64_t rp_gen_c_bits(const char *f, int scale_exp);

/* A random pattern of format f (see above); prev: earlier patterns of the
 * row (for exact negations); scale_exp: the common scale. */
uint64_t rp_gen_bits(const char *f, const uint64_t *prev, size_t nprev, int scale_exp);

/* Prints a case to stderr so that it can be replayed. */
void rp_case_dump(const rp_case *c, uint64_t seed, long idx, const char *why);

#endif
