/* cpu_math.c: exp, rsqrt and silu of an fp32 argument, correctly rounded
 * to fp32 (rne), as the cpu points declare them (`cr`).
 *
 * Fast path: the function in binary64, y.  Its relative error is below
 * 2^-50: rsqrt is sqrt and a division, each correctly rounded (< 2^-52 in
 * all); exp is the C library's binary64 exp (glibc documents < 1 ulp,
 * 2^-52); silu adds one addition and one division (2^-53 each, and 1 +
 * e^-x has no cancellation).  The check allows far more, 2^-44: the exact
 * value lies in [y - |y| 2^-44, y + |y| 2^-44], and when both ends round to
 * the same fp32 number (rounding is monotonic) so does the exact value,
 * subnormal results included (the conversion rounds onto the subnormal
 * grid itself).  Otherwise (an exact value within 2^-44 relative of an fp32
 * rounding boundary: about one argument in 2^19) MPFR decides by Ziv's
 * strategy; these rare hard cases are the only use of MPFR in the backend.
 * Special values follow IEEE (docs/families.md, "Elementwise functions"). */
#include "cpu_internal.h"

#include <math.h>
#include <mpfr.h>
#include <string.h>

#define CHECK_MARGIN 0x1p-44
#define ZIV_MAX_PREC 8192

static unsigned long fallbacks;

unsigned long cpu_cr_fallbacks(void)
{
    unsigned long n;
#pragma omp atomic read
    n = fallbacks;
    return n;
}

static void count_fallback(void)
{
#pragma omp atomic
    fallbacks++;
}

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* 1 and *out when both ends of y's error interval round to one fp32. */
static int decided(double y, float *out)
{
    double d = fabs(y) * CHECK_MARGIN; /* exact: a power-of-two scaling of a normal double */
    float lo = (float)(y - d), hi = (float)(y + d);
    if (fbits(lo) != fbits(hi))
        return 0;
    *out = lo;
    return 1;
}

/* --- MPFR (Ziv) ------------------------------------------------------------------ */

/* c approximates the exact value with |error| < 2^(EXP(c) - errbits): if
 * rounding toward zero to 25 bits is decided, no fp32 rounding boundary
 * (each a 25-bit number, subnormal ones included) separates c from the
 * exact value, and c rounds to fp32 as the exact value does. */
static int ziv_done(mpfr_t c, mpfr_prec_t errbits, float *out)
{
    if (!mpfr_regular_p(c) || mpfr_can_round(c, errbits, MPFR_RNDN, MPFR_RNDZ, 25)) {
        *out = mpfr_get_flt(c, MPFR_RNDN);
        return 1;
    }
    return 0;
}

/* Whether an MPFR path ran since the last take: MPFR then keeps constant
 * caches in the threads that ran it, which the backend frees after the
 * run (cpu_backend.c).  Set rarely (the MPFR paths are the fallbacks),
 * read once a run. */
static int mpfr_used;

static void cpu_mpfr_mark(void)
{
    if (!__atomic_load_n(&mpfr_used, __ATOMIC_RELAXED))
        __atomic_store_n(&mpfr_used, 1, __ATOMIC_RELAXED);
}

int cpu_mpfr_take_used(void)
{
    return __atomic_exchange_n(&mpfr_used, 0, __ATOMIC_RELAXED);
}

float cpu_exp_mpfr(float x)
{
    cpu_mpfr_mark();
    if (isnan(x))
        return NAN;
    if (isinf(x))
        return x > 0 ? INFINITY : 0.0f;
    if (x == 0)
        return 1.0f;
    mpfr_t a, c;
    mpfr_init2(a, 24);
    mpfr_init2(c, 64);
    mpfr_set_flt(a, x, MPFR_RNDN); /* exact */
    float r = NAN;
    for (mpfr_prec_t w = 64; w <= ZIV_MAX_PREC; w *= 2) {
        mpfr_set_prec(c, w);
        mpfr_exp(c, a, MPFR_RNDN); /* |error| <= 2^(EXP(c) - w - 1) */
        if (ziv_done(c, w - 1, &r))
            break;
    }
    mpfr_clears(a, c, (mpfr_ptr)0);
    return r;
}

float cpu_rsqrt_mpfr(float x)
{
    cpu_mpfr_mark();
    if (isnan(x) || x < 0)
        return NAN;
    if (x == 0)
        return copysignf(INFINITY, x);
    if (isinf(x))
        return 0.0f;
    mpfr_t a, c;
    mpfr_init2(a, 24);
    mpfr_init2(c, 24);
    mpfr_set_flt(a, x, MPFR_RNDN);
    mpfr_rec_sqrt(c, a, MPFR_RNDN); /* correctly rounded; in [2^-64, 2^75]: a normal fp32 */
    float r = mpfr_get_flt(c, MPFR_RNDN);
    mpfr_clears(a, c, (mpfr_ptr)0);
    return r;
}

float cpu_silu_mpfr(float x)
{
    cpu_mpfr_mark();
    if (isnan(x))
        return NAN;
    if (x == 0 || x == INFINITY)
        return x;
    if (x < -200.0f)
        return -0.0f; /* the shortcuts of cpu_silu_cr: Ziv cannot decide them near x */
    if (x >= 32.0f)
        return x;
    mpfr_t a, b, c;
    mpfr_init2(a, 24);
    mpfr_init2(b, 64);
    mpfr_init2(c, 64);
    mpfr_set_flt(a, x, MPFR_RNDN);
    float r = NAN;
    for (mpfr_prec_t w = 64; w <= ZIV_MAX_PREC; w *= 2) {
        mpfr_set_prec(b, w);
        mpfr_set_prec(c, w);
        mpfr_neg(c, a, MPFR_RNDN);
        mpfr_exp(b, c, MPFR_RNDN);             /* e^-x, relative error <= 2^-w */
        mpfr_add_ui(b, b, 1, MPFR_RNDN);       /* no cancellation: <= 2^(1-w) */
        mpfr_div(c, a, b, MPFR_RNDN);          /* relative < 2^(2-w) */
        if (ziv_done(c, w - 3, &r))
            break;
    }
    mpfr_clears(a, b, c, (mpfr_ptr)0);
    return r;
}

/* --- the fast paths ----------------------------------------------------------------- */

float cpu_exp_cr(float x)
{
    if (isnan(x))
        return x;
    if (x == 0)
        return 1.0f;
    if (x > 89.0f)
        return INFINITY; /* e^89 > 2^128 (also x = +inf) */
    if (x < -104.0f)
        return 0.0f;     /* e^-104 < 2^-150, half the smallest subnormal (also -inf) */
    float r;
    if (decided(exp((double)x), &r))
        return r;
    count_fallback();
    return cpu_exp_mpfr(x);
}

float cpu_rsqrt_cr(float x)
{
    if (isnan(x) || x < 0)
        return NAN;
    if (x == 0)
        return copysignf(INFINITY, x);
    if (isinf(x))
        return 0.0f;
    float r;
    if (decided(1.0 / sqrt((double)x), &r))
        return r;
    count_fallback();
    return cpu_rsqrt_mpfr(x);
}

float cpu_silu_cr(float x)
{
    if (isnan(x))
        return x;
    if (x == 0 || x == INFINITY)
        return x;      /* silu(+-0) = +-0 */
    if (x < -200.0f)
        return -0.0f;  /* |x e^x| < 2^-150 below -200 (also -inf) */
    if (x >= 32.0f)
        return x;      /* x - silu(x) < x e^-32, below half an ulp of x */
    double xd = (double)x;
    float r;
    if (decided(xd / (1.0 + exp(-xd)), &r))
        return r;
    count_fallback();
    return cpu_silu_mpfr(x);
}
