/* nx_round_fast.h: rounding of exact values to the formats of docs/numerics.md
 * §1 in the modes of §2 by integer bit manipulation (CPFloat-style), with
 * results identical to nx_mp_round (nx_mp.c): the same gradual underflow,
 * overflow, signed-zero, unsigned-format and saturate rules.
 *
 * An exact value reaches here as a double, as a double-double (hi + lo,
 * |lo| <= 4 ulp(hi), the exact sum), as a normalised triple, or as an
 * integer scaled by a power of two with a sticky bit.  Everything ends in
 * nx_rf_round_scaled: one shift, one increment decision, one overflow test.
 * No floating-point operation rounds anything here; every double built is
 * exact. */
#ifndef NX_ROUND_FAST_H
#define NX_ROUND_FAST_H

#include <stdint.h>
#include <string.h>

#include "nx_format.h"

/* The parameters of a format that rounding needs, copied out of the format
 * table once (engines keep one per operation). */
typedef struct nx_rfmt {
    int p;          /* precision, hidden bit included */
    int emin;       /* minimum normal exponent */
    double maxf;    /* max finite */
    uint64_t maxbits; /* the binary64 bit pattern of maxf */
    nx_fmt fmt;
    int is_signed, has_zero;
} nx_rfmt;

void nx_rfmt_init(nx_rfmt *r, nx_fmt f);

/* Rounds ±(N + d)·2^k to the format, where d is in [0, 1) and d > 0 exactly
 * when sticky is set.  N > 0; when sticky is set N must be at least 2^55 (so
 * the cut lies above the unknown fraction).  k may be any int with |k| well
 * below INT_MAX (the superaccumulator passes -2200 … 2300); values below
 * every format's range round to 0 or its smallest quantum as the mode says,
 * values above the double range overflow as §2 says. */
double nx_rf_round_scaled(int neg, uint64_t N, int k, int sticky, const nx_rfmt *f, nx_mode m,
                          int saturate);

/* Rounds the exact value x (any double: NaN, ±inf, ±0 included). */
double nx_rf_round(double x, const nx_rfmt *f, nx_mode m, int saturate);

/* Rounds hi + lo (exact), with |lo| <= 4 ulp(hi) (TwoSum and TwoProd give
 * |lo| <= ulp(hi)/2).  hi finite; hi == 0 implies lo == 0. */
double nx_rf_round_dd(double hi, double lo, const nx_rfmt *f, nx_mode m, int saturate);

/* Rounds hi + mid + lo (exact), |mid| <= 4 ulp(hi), |lo| <= ulp(mid)/2
 * (lo == 0 when mid == 0). */
double nx_rf_round_ddd(double hi, double mid, double lo, const nx_rfmt *f, nx_mode m,
                       int saturate);

/* Convenience: the same by format. */
double nx_round_fast(double x, nx_fmt f, nx_mode m, int saturate);
double nx_round_fast_dd(double hi, double lo, nx_fmt f, nx_mode m, int saturate);

/* Rounds the exact nonzero finite hi + lo (as in nx_rf_round_dd; lo may be 0)
 * to a multiple of 2^q in mode m, and returns the signed multiple.  The
 * caller guarantees |hi + lo| < 2^(q + 61).  This is the per-term cut of an
 * atom (§5 step 3). */
int64_t nx_rf_cut(double hi, double lo, int q, nx_mode m);

/* floor(log2 |hi + lo|) of a nonzero finite double-double (lo may be 0). */
int nx_rf_lg_dd(double hi, double lo);

/* Bit helpers shared with the engines. */
static inline uint64_t nx_rf_bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline double nx_rf_from_bits(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* 2^q for q in [-1074, 1023], exactly. */
static inline double nx_rf_pow2(int q)
{
    return q >= -1022 ? nx_rf_from_bits((uint64_t)(q + 1023) << 52)
                      : nx_rf_from_bits(1ull << (q + 1074));
}

/* floor(log2 |x|) of a nonzero finite double. */
static inline int nx_rf_lg(double x)
{
    uint64_t u = nx_rf_bits(x) & ~(1ull << 63);
    int e = (int)(u >> 52);
    if (e)
        return e - 1023;
    return 63 - __builtin_clzll(u) - 1074;
}

#endif
