/* ref_math.c: the correctly rounded elementwise operations of the families
 * and the parsing of numeric params.
 *
 * add and mul are nx_mp's (one correct rounding).  Division and the
 * parsing of decimal text use round-to-odd: the exact value truncated to
 * 64 bits with the last bit forced to 1 when inexact rounds to any format of
 * at most 62 bits exactly as the exact value would (Boldo-Melquiond), so
 * one more rounding gives the correct result, subnormals included.  exp and
 * silu use Ziv's strategy: evaluate at w bits with a proven error bound and
 * widen until mpfr_can_round says that rounding toward zero to 25 bits is
 * decided; then no rounding boundary of fp32 (normal or subnormal, whose
 * boundaries are all 25-bit numbers) lies between the approximation and the
 * exact value, and rounding the approximation is rounding the exact value.
 * rsqrt of a positive fp32 value is a normal fp32 number, so MPFR's own
 * correctly rounded rec_sqrt at 24 bits is already the answer. */
#include "ref_internal.h"
#include "rows.h"

#include <stdint.h>
#include <stdlib.h>

#include <math.h>
#include <string.h>

#define ZIV_MAX_PREC 8192

void ref_math_init(ref_math *m)
{
    nx_mp_init(&m->mp);
    mpfr_inits2(64, m->a, m->b, m->c, m->d, (mpfr_ptr)0);
    m->cache = NULL;
    m->cache_cap = 0;
    m->cache_key = SIZE_MAX;
    m->cache_owner = NULL;
}

double *ref_math_cache(ref_math *m, size_t n)
{
    if (n <= m->cache_cap)
        return m->cache;
    double *c = ref_alloc(n);
    if (!c)
        return NULL;
    free(m->cache);
    m->cache = c;
    m->cache_cap = n;
    m->cache_key = SIZE_MAX;
    return c;
}

const double *ref_math_row(ref_math *m, const void *owner, size_t key, const st_tensor *t, size_t first, size_t n)
{
    if (m->cache_owner == owner && m->cache_key == key)
        return m->cache;
    double *row = ref_math_cache(m, n);
    if (row) {
        rows_decode_range(t, first, n, row, NULL);
        m->cache_key = key;
        m->cache_owner = owner;
    }
    return row;
}

void ref_math_cached_row(ref_math *m, const void *owner, size_t key, const st_tensor *t, size_t first, size_t n,
                         double *out)
{
    const double *row = ref_math_row(m, owner, key, t, first, n);
    if (row)
        memcpy(out, row, n * sizeof *out);
    else
        rows_decode_range(t, first, n, out, NULL);
}

void ref_math_clear(ref_math *m)
{
    mpfr_clears(m->a, m->b, m->c, m->d, (mpfr_ptr)0);
    nx_mp_clear(&m->mp);
    free(m->cache);
    m->cache = NULL;
}

double ref_round(ref_math *m, double x, nx_fmt f, nx_mode mode, int saturate)
{
    return nx_mp_round_d(&m->mp, x, f, mode, saturate);
}

double ref_f32_add(ref_math *m, double x, double y)
{
    return nx_mp_add(&m->mp, x, y, NX_FP32, NX_RNE);
}

double ref_f32_mul(ref_math *m, double x, double y)
{
    /* exact product in MPFR: operands may be fp64 (a reduction's out) */
    return nx_mp_mul(&m->mp, x, y, NX_FP32, NX_RNE, 0);
}

/* Turns r, a truncation (RNDZ) with ternary value inex, into the round-to-odd
 * value at r's precision. */
static void make_odd(mpfr_ptr r, int inex)
{
    if (inex == 0 || !mpfr_regular_p(r))
        return;
    if (mpfr_min_prec(r) < mpfr_get_prec(r)) { /* last bit 0: step away from zero */
        if (mpfr_signbit(r))
            mpfr_nextbelow(r);
        else
            mpfr_nextabove(r);
    }
}

double ref_f32_div(ref_math *m, double x, double y)
{
    if (!isfinite(x) || !isfinite(y) || x == 0 || y == 0) /* exact IEEE results: 0, inf, NaN */
        return nx_mp_round_d(&m->mp, x / y, NX_FP32, NX_RNE, 0);
    mpfr_set_prec(m->a, 53);
    mpfr_set_prec(m->b, 53);
    mpfr_set_prec(m->c, 64);
    mpfr_set_d(m->a, x, MPFR_RNDN);
    mpfr_set_d(m->b, y, MPFR_RNDN);
    make_odd(m->c, mpfr_div(m->c, m->a, m->b, MPFR_RNDZ));
    return nx_mp_round(&m->mp, m->c, NX_FP32, NX_RNE, 0);
}

/* Rounds the Ziv approximation in m->c (error below 2^(EXP(c) - errbits))
 * to fp32 if that is decided; returns 1 then. */
static int ziv_try(ref_math *m, mpfr_prec_t errbits, double *out)
{
    if (!mpfr_regular_p(m->c)) {
        *out = nx_mp_round(&m->mp, m->c, NX_FP32, NX_RNE, 0);
        return 1;
    }
    if (!mpfr_can_round(m->c, errbits, MPFR_RNDN, MPFR_RNDZ, 25))
        return 0;
    *out = nx_mp_round(&m->mp, m->c, NX_FP32, NX_RNE, 0);
    return 1;
}

double ref_f32_exp(ref_math *m, double x, nx_err *err)
{
    if (isnan(x))
        return NAN;
    if (isinf(x))
        return x > 0 ? INFINITY : 0.0;
    if (x == 0)
        return 1.0; /* the one exact case: e^x is transcendental for x != 0 */
    mpfr_set_prec(m->a, 53);
    mpfr_set_d(m->a, x, MPFR_RNDN);
    for (mpfr_prec_t w = 64; w <= ZIV_MAX_PREC; w *= 2) {
        double r;
        mpfr_set_prec(m->c, w);
        mpfr_exp(m->c, m->a, MPFR_RNDN); /* |error| <= 2^(EXP - w - 1); overflow gives inf */
        if (ziv_try(m, w - 1, &r))
            return r;
    }
    nx_err_set(err, NX_EINTERNAL, "exp(%a): not decided at %d bits", x, ZIV_MAX_PREC);
    return NAN;
}

double ref_f32_rsqrt(ref_math *m, double x)
{
    if (isnan(x) || x < 0)
        return NAN;
    if (x == 0)
        return signbit(x) ? -INFINITY : INFINITY;
    if (isinf(x))
        return 0.0;
    mpfr_set_prec(m->a, 53);
    mpfr_set_prec(m->c, 24);
    mpfr_set_d(m->a, x, MPFR_RNDN);
    mpfr_rec_sqrt(m->c, m->a, MPFR_RNDN); /* in [2^-64, 2^75]: a normal fp32 number */
    return mpfr_get_d(m->c, MPFR_RNDN);
}

double ref_f32_silu(ref_math *m, double x, nx_err *err)
{
    if (isnan(x))
        return NAN;
    if (x == 0 || x == INFINITY)
        return x; /* silu(+-0) = +-0 (0 / 2) */
    if (x == -INFINITY || x < -200)
        return -0.0; /* |x e^x| < 2^-150 below -200: rounds to -0 */
    if (x >= 32)
        return x; /* x - silu(x) < x e^-32 < half an ulp of x: rounds to x */
    mpfr_set_prec(m->a, 53);
    mpfr_set_d(m->a, x, MPFR_RNDN);
    for (mpfr_prec_t w = 64; w <= ZIV_MAX_PREC; w *= 2) {
        double r;
        mpfr_set_prec(m->b, w);
        mpfr_set_prec(m->c, w);
        mpfr_neg(m->c, m->a, MPFR_RNDN);
        mpfr_exp(m->b, m->c, MPFR_RNDN);    /* e^-x, relative error <= 2^-w */
        mpfr_add_ui(m->b, m->b, 1, MPFR_RNDN); /* 1 + e^-x: no cancellation, <= 2^(1-w) */
        mpfr_div(m->c, m->a, m->b, MPFR_RNDN); /* relative error < 2^(2-w) < 2^(EXP - (w - 2)) */
        if (ziv_try(m, w - 3, &r))
            return r;
    }
    nx_err_set(err, NX_EINTERNAL, "silu(%a): not decided at %d bits", x, ZIV_MAX_PREC);
    return NAN;
}

nx_status ref_param_f32(const fam_spec *s, const char *name, const char *def, double *out, nx_err *err)
{
    char buf[64];
    const char *v = fam_param_text(s, name, buf, sizeof buf);
    if (!v)
        v = def;
    if (!v)
        return nx_err_set(err, NX_EINVAL, "%s.%s: param '%s' has no value and the family no default (give it in the "
                          "point)", s->family ? s->family : "?", s->point ? s->point : "?", name);
    mpfr_t x;
    mpfr_init2(x, 256);
    char *end;
    int inex = mpfr_strtofr(x, v, &end, 0, MPFR_RNDZ);
    if (end == v || *end || !mpfr_number_p(x)) {
        mpfr_clear(x);
        return nx_err_set(err, NX_EINVAL, "%s.%s: param '%s' = '%s' is not a finite number",
                          s->family ? s->family : "?", s->point ? s->point : "?", name, v);
    }
    make_odd(x, inex);
    nx_mp mp;
    nx_mp_init(&mp);
    *out = nx_mp_round(&mp, x, NX_FP32, NX_RNE, 0);
    nx_mp_clear(&mp);
    mpfr_clear(x);
    if (!isfinite(*out))
        return nx_err_set(err, NX_EINVAL, "%s.%s: param '%s' = '%s' overflows fp32", s->family ? s->family : "?",
                          s->point ? s->point : "?", name, v);
    return NX_OK;
}
