/* nx_exact.h: exact sums and dot products (a superaccumulator).
 *
 * Terms are fp64/fp32/tf32/fp16/bf16/fp8 values, or products of two such
 * values.  A product of two non-fp64 values (significands of at most 24
 * bits, exponents far inside binary64's range) is exact in binary64; a
 * product with an fp64 operand is split exactly by TwoProd (fma), or, where
 * that would underflow or overflow, by scaling.  Nothing is ever rounded: the
 * accumulator holds the exact sum, which can be read as the correctly
 * rounded value in any format and mode of docs/numerics.md (through
 * nx_round_fast), as its sign, or as an MPFR number.
 *
 * Design (docs/engines.md): 32-bit digits in signed 64-bit chunks covering
 * 2^-2176 … 2^2304 (any product of two doubles, summed up to 2^62 times),
 * fed in blocks by a vectorised error-free extraction cascade (binned
 * summation) whose per-lane partial sums are exact by construction; terms the
 * cascade cannot take (NaN, inf, extreme exponents) go straight into the
 * digits.  Order never matters, so the fast path is free to vectorise. */
#ifndef NX_EXACT_H
#define NX_EXACT_H

#include <stddef.h>
#include <stdint.h>

#include <mpfr.h>

#include "nx_format.h"

#define NX_XACC_BASE (-2176)  /* weight of bit 0 of chunk 0 */
#define NX_XACC_CHUNKS 142

typedef struct nx_xacc {
    int64_t c[NX_XACC_CHUNKS]; /* chunk j holds a digit of weight 2^(32 j + BASE) (+ carries) */
    int lo, hi;                /* chunks that may be nonzero: [lo, hi] (lo > hi: none) */
    uint32_t adds;             /* adds since the last carry propagation */
    int nan, pinf, ninf;       /* special terms seen */
    int nonnegzero, nonposzero; /* some term was not -0 / not +0 (sign of a zero sum) */
} nx_xacc;

void nx_xacc_init(nx_xacc *x);    /* the empty sum */
#define nx_xacc_clear nx_xacc_init

/* One exact term: any double (NaN and ±inf are remembered, not summed). */
void nx_xacc_add(nx_xacc *x, double v);
/* v·2^e for a finite double v; e in [-1200, 1200]. */
void nx_xacc_add_scaled(nx_xacc *x, double v, int e);
/* The exact product a·b of any two doubles. */
void nx_xacc_add_prod(nx_xacc *x, double a, double b);
/* The exact negation of another accumulator's sum is x -= y. */
void nx_xacc_sub_acc(nx_xacc *x, const nx_xacc *y);

/* Arrays.  exact_products: the caller guarantees a[i]·b[i] is exact in
 * binary64 (neither operand is an fp64 value outside the narrower formats);
 * with 0, every product goes through TwoProd. */
void nx_xacc_add_sum(nx_xacc *x, const double *v, size_t n);
void nx_xacc_add_dot(nx_xacc *x, const double *a, const double *b, size_t n, int exact_products);
void nx_xacc_add_dot_f32(nx_xacc *x, const float *a, const float *b, size_t n);
void nx_xacc_add_sum_f32(nx_xacc *x, const float *v, size_t n);

/* Sign of the exact sum: -1, 0, 1; 2 when it is NaN or an infinity. */
int nx_xacc_sign(nx_xacc *x);

/* The sum correctly rounded to format f in mode m (saturate as §3).  A zero
 * sum follows §2 as IEEE sums do: -0 when there is at least one term and
 * every term was -0, and in rd when some term was not +0 (a cancellation);
 * otherwise +0 (the empty sum too).  NaN if a NaN or both infinities were
 * added; else an infinity rounds as nx_round_inf. */
double nx_xacc_round(nx_xacc *x, nx_fmt f, nx_mode m, int saturate);

/* The exact sum as an MPFR number; out's precision is set to hold it
 * exactly (at least 2 bits).  NaN and infinities as above; a zero sum is +0
 * or -0 as nx_xacc_round would give in rne. */
void nx_xacc_get_mpfr(nx_xacc *x, mpfr_ptr out);

/* Convenience: the correctly rounded exact dot product / sum. */
double nx_exact_dot(const double *a, const double *b, size_t n, int exact_products, nx_fmt f,
                    nx_mode m);
double nx_exact_sum(const double *v, size_t n, nx_fmt f, nx_mode m);

#endif
