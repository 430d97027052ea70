/* cr_math.h: correctly rounded fp32 exp and rsqrt (rne), the same code for
 * the host (tests) and the device (kernels).
 *
 * Every operation below is one IEEE binary64 operation (+, *, /, sqrt, fma,
 * rint, the conversion to binary32), each correctly rounded on the CPU and
 * on the GPU alike, and nothing is contracted (C: -ffp-contract=off; CUDA:
 * -fmad=false plus explicit fma).  So the device computes the same bits as
 * the host, and a test on the host over every binary32 input proves the
 * device function (docs/cuda.md, "Correctly rounded functions").
 *
 * rsqrt: candidate 1/sqrt(x) in binary64 (error < 2^-52), rounded to
 *   binary32, then one exact correction: the candidate y is right iff the
 *   two midpoints m- < 1/sqrt(x) < m+ around it, i.e. x*m-^2 < 1 < x*m+^2;
 *   m^2 (<= 50 bits) is exact in binary64 and fma(x, m^2, -1) has the sign
 *   of the exact x*m^2 - 1, never zero (1/sqrt(x) is never a midpoint).
 *   Correct by construction; tests/test_cuda_host.c checks every input.
 * exp:   2^(k/64) * exp(r), |r| <= ln2/128, in binary64 (error about one
 *   binary64 ulp), rounded once to binary32.  Where that rounding is not the
 *   correct one (the exact value lies within ~2^-52 of a binary32 midpoint)
 *   the result comes from CRM_EXP_EXCEPTIONS, found by an exhaustive scan of
 *   every binary32 input against a correctly rounded reference (the `long`
 *   test test_cuda_host_exhaustive re-runs that scan). */
#ifndef PARITY_CR_MATH_H
#define PARITY_CR_MATH_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define CRM_FN __host__ __device__ static inline
#else
#include <math.h>
#define CRM_FN static inline
#endif

/* 2^(j/64), j = 0..63, each rounded to binary64 (rne); checked against MPFR
 * by tests/test_cuda_host.c. */
#define CRM_EXP2_TABLE                                                                                        \
    0x1p+0, 0x1.02c9a3e778061p+0, 0x1.059b0d3158574p+0, 0x1.0874518759bc8p+0, 0x1.0b5586cf9890fp+0,           \
        0x1.0e3ec32d3d1a2p+0, 0x1.11301d0125b51p+0, 0x1.1429aaea92dep+0, 0x1.172b83c7d517bp+0,                \
        0x1.1a35beb6fcb75p+0, 0x1.1d4873168b9aap+0, 0x1.2063b88628cd6p+0, 0x1.2387a6e756238p+0,               \
        0x1.26b4565e27cddp+0, 0x1.29e9df51fdee1p+0, 0x1.2d285a6e4030bp+0, 0x1.306fe0a31b715p+0,               \
        0x1.33c08b26416ffp+0, 0x1.371a7373aa9cbp+0, 0x1.3a7db34e59ff7p+0, 0x1.3dea64c123422p+0,               \
        0x1.4160a21f72e2ap+0, 0x1.44e086061892dp+0, 0x1.486a2b5c13cdp+0, 0x1.4bfdad5362a27p+0,                \
        0x1.4f9b2769d2ca7p+0, 0x1.5342b569d4f82p+0, 0x1.56f4736b527dap+0, 0x1.5ab07dd485429p+0,               \
        0x1.5e76f15ad2148p+0, 0x1.6247eb03a5585p+0, 0x1.6623882552225p+0, 0x1.6a09e667f3bcdp+0,               \
        0x1.6dfb23c651a2fp+0, 0x1.71f75e8ec5f74p+0, 0x1.75feb564267c9p+0, 0x1.7a11473eb0187p+0,               \
        0x1.7e2f336cf4e62p+0, 0x1.82589994cce13p+0, 0x1.868d99b4492edp+0, 0x1.8ace5422aa0dbp+0,               \
        0x1.8f1ae99157736p+0, 0x1.93737b0cdc5e5p+0, 0x1.97d829fde4e5p+0, 0x1.9c49182a3f09p+0,                 \
        0x1.a0c667b5de565p+0, 0x1.a5503b23e255dp+0, 0x1.a9e6b5579fdbfp+0, 0x1.ae89f995ad3adp+0,               \
        0x1.b33a2b84f15fbp+0, 0x1.b7f76f2fb5e47p+0, 0x1.bcc1e904bc1d2p+0, 0x1.c199bdd85529cp+0,               \
        0x1.c67f12e57d14bp+0, 0x1.cb720dcef9069p+0, 0x1.d072d4a07897cp+0, 0x1.d5818dcfba487p+0,               \
        0x1.da9e603db3285p+0, 0x1.dfc97337b9b5fp+0, 0x1.e502ee78b3ff6p+0, 0x1.ea4afa2a490dap+0,               \
        0x1.efa1bee615a27p+0, 0x1.f50765b6e454p+0, 0x1.fa7c1819e90d8p+0

/* 64/ln2, and ln2/64 = L1 + L2 (each rne). */
#define CRM_INV_LN2_64 0x1.71547652b82fep+6
#define CRM_LN2_64_HI 0x1.62e42fefa39efp-7
#define CRM_LN2_64_LO 0x1.abc9e3b39803fp-62

/* The inputs x (binary32 bit patterns) where the binary64 path rounds to the
 * wrong binary32 neighbour, with the correctly rounded result.  The
 * exhaustive scan over every binary32 x in [-104, 89] (6.5 minutes on 2
 * cores; test_cuda_host_exhaustive, label `long`, prints the rows when the
 * path changes) found none: the path's error (about half a binary64 ulp)
 * is below the distance of every exp(x) to a binary32 midpoint.  The one
 * row is a harmless sentinel (exp(+0) = 1, what the path gives anyway): C
 * has no empty arrays. */
#define CRM_EXP_EXCEPTIONS /* x bits, exp(x) bits */ \
    {0u, 0x3f800000u}

typedef struct crm_pair {
    uint32_t x, y;
} crm_pair;

#if defined(__CUDACC__)
static __device__ const double crm_exp2_dev[64] = {CRM_EXP2_TABLE};
static __device__ const crm_pair crm_exp_exc_dev[] = {CRM_EXP_EXCEPTIONS};
#endif
static const double crm_exp2_host[64] = {CRM_EXP2_TABLE};
static const crm_pair crm_exp_exc_host[] = {CRM_EXP_EXCEPTIONS};
#define CRM_NEXC (sizeof crm_exp_exc_host / sizeof crm_exp_exc_host[0])

#if defined(__CUDA_ARCH__)
#define CRM_EXP2 crm_exp2_dev
#define CRM_EXC crm_exp_exc_dev
#else
#define CRM_EXP2 crm_exp2_host
#define CRM_EXC crm_exp_exc_host
#endif

CRM_FN uint32_t crm_f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

CRM_FN float crm_u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

CRM_FN double crm_u2d(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* exp(x) in binary64 before the final rounding (also used by the tests). */
CRM_FN double crm_exp_d(float x)
{
    double xd = (double)x;
    double kd = rint(xd * CRM_INV_LN2_64); /* |k| < 2^14 */
    double r = fma(-kd, CRM_LN2_64_HI, xd);
    r = fma(-kd, CRM_LN2_64_LO, r);       /* |r| <= ln2/128 + tiny */
    /* expm1(r): Taylor to degree 6, error < r^7/5040 < 2^-62 */
    double p = fma(r, 1.0 / 720, 1.0 / 120);
    p = fma(r, p, 1.0 / 24);
    p = fma(r, p, 1.0 / 6);
    p = fma(r, p, 0.5);
    p = fma(r * r, p, r);
    long long k = (long long)kd;
    int j = (int)(k & 63), e = (int)((k - j) / 64); /* floor division: k = 64 e + j */
    double t = CRM_EXP2[j];
    double y = fma(t, p, t);
    /* 2^e, -150 <= e <= 128: exact, and y * 2^e is exact (a normal binary64) */
    return y * crm_u2d((uint64_t)(1023 + e) << 52);
}

/* exp(x) correctly rounded to binary32 (rne). */
CRM_FN float crm_expf(float x)
{
    if (x != x)
        return crm_u2f(0x7fc00000u); /* canonical NaN */
    if (x > 89.0f)
        return crm_u2f(0x7f800000u); /* e^89 > 2^128: +inf (also x = +inf) */
    if (x < -104.0f)
        return 0.0f;                 /* e^-104 < 2^-150: rounds to +0 (also -inf) */
    float f = (float)crm_exp_d(x);
    uint32_t u = crm_f2u(x);
    for (unsigned i = 0; i < CRM_NEXC; i++)
        if (CRM_EXC[i].x == u)
            return crm_u2f(CRM_EXC[i].y);
    return f;
}

/* 1/sqrt(x) correctly rounded to binary32 (rne).  x < 0: NaN; +-0: +-inf;
 * +inf: +0. */
CRM_FN float crm_rsqrtf(float x)
{
    if (x != x || x < 0.0f)
        return crm_u2f(0x7fc00000u);
    if (x == 0.0f)
        return crm_u2f(crm_f2u(x) | 0x7f800000u); /* +-inf with x's sign */
    if (x == crm_u2f(0x7f800000u))
        return 0.0f;
    double xd = (double)x;
    float y = (float)(1.0 / sqrt(xd)); /* within one ulp: 1/sqrt(x) is in [2^-64, 2^75], normal */
    uint32_t yu = crm_f2u(y);
    double yd = (double)y;
    double up = (double)crm_u2f(yu + 1), dn = (double)crm_u2f(yu - 1);
    double mhi = (yd + up) * 0.5, mlo = (yd + dn) * 0.5; /* exact: 25-bit midpoints */
    if (fma(xd, mhi * mhi, -1.0) < 0.0) /* 1/sqrt(x) > m+ */
        return crm_u2f(yu + 1);
    if (fma(xd, mlo * mlo, -1.0) > 0.0) /* 1/sqrt(x) < m- */
        return crm_u2f(yu - 1);
    return y;
}

#endif
