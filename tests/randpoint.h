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
} rp_case;

void rp_seed(uint64_t seed);
uint64_t rp_rand(void);
int rp_below(int n); /* uniform in [0, n) */

/* A random point and one row of inputs. */
void rp_case_make(rp_case *c);

/* A random pattern of format f (see above); prev: earlier patterns of the
 * row (for exact negations); scale_exp: the common scale. */
uint64_t rp_gen_bits(const char *f, const uint64_t *prev, size_t nprev, int scale_exp);

/* Prints a case to stderr so that it can be replayed. */
void rp_case_dump(const rp_case *c, uint64_t seed, long idx, const char *why);

#endif
