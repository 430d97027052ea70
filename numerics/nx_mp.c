/* nx_mp.c: MPFR primitives of the reference engine (see nx_mp.h).
 *
 * Fast path: MPFR computes the operation correctly rounded to p bits with an
 * unbounded exponent.  That equals the format's rounding whenever the result
 * lies above the minimum normal 2^emin (any monotone rounding of a value
 * below 2^emin lands at or below 2^emin, so |r| > 2^emin proves the exact
 * value was in the normal range) and is checked against max finite for
 * overflow.  Otherwise the exact value is computed at a precision wide
 * enough to hold it and rounded with nx_mp_round.  rna, which MPFR does not
 * offer for arithmetic, is "truncate to p+1 bits, then round away to p bits":
 * the decision of rna depends only on the first dropped bit. */
#include "nx_mp.h"

#include <math.h>

#define NX_MP_BIG_PREC 4400 /* > the span of any exact fp64 a*b + c */

void nx_mp_init(nx_mp *mp)
{
    mpfr_init2(mp->r, 64);
    mpfr_init2(mp->t1, 64);
    mpfr_init2(mp->t2, 64);
    mpfr_init2(mp->t3, 128);
    mpfr_init2(mp->big, NX_MP_BIG_PREC);
}

void nx_mp_clear(nx_mp *mp)
{
    mpfr_clear(mp->r);
    mpfr_clear(mp->t1);
    mpfr_clear(mp->t2);
    mpfr_clear(mp->t3);
    mpfr_clear(mp->big);
}

mpfr_rnd_t nx_mp_rnd(nx_mode m)
{
    switch (m) {
    case NX_RNE: return MPFR_RNDN;
    case NX_RZ: return MPFR_RNDZ;
    case NX_RU: return MPFR_RNDU;
    case NX_RD: return MPFR_RNDD;
    default: return MPFR_RNDZ; /* rna: truncation first, see above */
    }
}

/* Sign of |x| - 2^e for a nonzero finite x. */
static int cmpabs_pow2(mpfr_srcptr x, mpfr_exp_t e)
{
    return mpfr_signbit(x) ? -mpfr_cmp_si_2exp(x, -1, e) : mpfr_cmp_ui_2exp(x, 1, e);
}

void nx_mp_round_quantum(mpfr_ptr r, mpfr_srcptr x, mpfr_exp_t q, nx_mode m)
{
    int neg = mpfr_signbit(x) != 0;
    mpfr_exp_t k = mpfr_get_exp(x) - q; /* bits from the leading one down to 2^q */
    if (k >= 1) {
        if (m == NX_RNA) {
            mpfr_set_prec(r, (mpfr_prec_t)k + 1);
            mpfr_set(r, x, MPFR_RNDZ);
            mpfr_prec_round(r, (mpfr_prec_t)k, MPFR_RNDA);
        } else {
            mpfr_set_prec(r, (mpfr_prec_t)k);
            mpfr_set(r, x, nx_mp_rnd(m));
        }
        return;
    }
    /* |x| < 2^q: the result is 0 or 2^q.  Compare |x| with the half 2^(q-1). */
    int half_cmp; /* sign of |x| - 2^(q-1) */
    if (k < 0)
        half_cmp = -1;
    else
        half_cmp = cmpabs_pow2(x, q - 1);
    int up;
    switch (m) {
    case NX_RNE: up = half_cmp > 0; break; /* a tie goes to 0, the even multiple */
    case NX_RNA: up = half_cmp >= 0; break;
    case NX_RZ: up = 0; break;
    case NX_RU: up = !neg; break;
    default: up = neg; break; /* rd */
    }
    mpfr_set_prec(r, 2);
    if (up)
        mpfr_set_si_2exp(r, neg ? -1 : 1, q, MPFR_RNDN);
    else
        mpfr_set_zero(r, neg ? -1 : 1);
}

double nx_round_inf(int negative, nx_fmt f, int saturate)
{
    const nx_format_info *fi = nx_format(f);
    if (!fi->is_signed && negative)
        return NAN;
    if (fi->has_inf && !saturate)
        return negative ? -INFINITY : INFINITY;
    if (!saturate && fi->nan != NX_NAN_NONE)
        return NAN;
    return negative ? -fi->max_finite : fi->max_finite;
}

double nx_round_overflow(int negative, nx_fmt f, nx_mode m, int saturate)
{
    const nx_format_info *fi = nx_format(f);
    if (!fi->is_signed && negative)
        return NAN;
    if (saturate || m == NX_RZ || (m == NX_RU && negative) || (m == NX_RD && !negative))
        return negative ? -fi->max_finite : fi->max_finite;
    if (fi->has_inf)
        return negative ? -INFINITY : INFINITY;
    if (fi->nan != NX_NAN_NONE)
        return NAN;
    return negative ? -fi->max_finite : fi->max_finite;
}

/* A zero result: keeps its sign, except in formats without a zero. */
static double zero_of(nx_fmt f, int negative)
{
    if (!nx_format(f)->has_zero)
        return NAN;
    return negative ? -0.0 : 0.0;
}

/* Checks a rounded result r (nonzero, finite) for overflow and signedness. */
static double finish(mpfr_srcptr r, nx_fmt f, nx_mode m, int saturate)
{
    const nx_format_info *fi = nx_format(f);
    int neg = mpfr_signbit(r) != 0;
    if (neg && !fi->is_signed)
        return NAN;
    /* compared in MPFR: r may be 2^1024, beyond every double */
    if (neg ? mpfr_cmp_d(r, -fi->max_finite) < 0 : mpfr_cmp_d(r, fi->max_finite) > 0)
        return nx_round_overflow(neg, f, m, saturate);
    return mpfr_get_d(r, MPFR_RNDN);
}

double nx_mp_round(nx_mp *mp, mpfr_srcptr x, nx_fmt f, nx_mode m, int saturate)
{
    if (mpfr_nan_p(x))
        return NAN;
    if (mpfr_inf_p(x))
        return nx_round_inf(mpfr_signbit(x) != 0, f, saturate);
    if (mpfr_zero_p(x))
        return zero_of(f, mpfr_signbit(x) != 0);
    const nx_format_info *fi = nx_format(f);
    mpfr_exp_t lg = mpfr_get_exp(x) - 1; /* floor(log2 |x|) */
    mpfr_exp_t e = lg > fi->emin ? lg : fi->emin;
    nx_mp_round_quantum(mp->r, x, e - fi->p + 1, m);
    if (mpfr_zero_p(mp->r))
        return zero_of(f, mpfr_signbit(mp->r) != 0);
    return finish(mp->r, f, m, saturate);
}

double nx_mp_round_d(nx_mp *mp, double x, nx_fmt f, nx_mode m, int saturate)
{
    if (isnan(x))
        return NAN;
    if (isinf(x))
        return nx_round_inf(signbit(x) != 0, f, saturate);
    mpfr_set_prec(mp->t1, 53);
    mpfr_set_d(mp->t1, x, MPFR_RNDN);
    return nx_mp_round(mp, mp->t1, f, m, saturate);
}

/* After a fast-path operation into mp->r at p (or p+1 for rna) bits: the
 * result if it is final, or a NaN-boxed "retry" signalled through *retry. */
static double fast_result(nx_mp *mp, nx_fmt f, nx_mode m, int *retry)
{
    const nx_format_info *fi = nx_format(f);
    *retry = 0;
    if (m == NX_RNA)
        mpfr_prec_round(mp->r, fi->p, MPFR_RNDA);
    if (mpfr_zero_p(mp->r)) /* an exact zero: MPFR applied IEEE's sign rule */
        return zero_of(f, mpfr_signbit(mp->r) != 0);
    if (cmpabs_pow2(mp->r, fi->emin) > 0)
        return finish(mp->r, f, m, 0);
    *retry = 1;
    return 0;
}

static void set_fast_prec(nx_mp *mp, nx_fmt f, nx_mode m)
{
    mpfr_set_prec(mp->r, nx_format(f)->p + (m == NX_RNA));
}

static int is_special(double x)
{
    return isnan(x) || isinf(x);
}

/* IEEE result of an addition involving a NaN or an infinity, in format f. */
static double special_add(double x, double y, nx_fmt f)
{
    double s = x + y; /* NaN propagation and inf - inf = NaN, exactly as IEEE */
    if (isnan(s))
        return NAN;
    return nx_round_inf(s < 0, f, 0);
}

/* floor(log2 |x|) of a nonzero finite double, and the exponent of its last bit. */
static long top_exp(double x) { return ilogb(x); }

double nx_mp_add(nx_mp *mp, double x, double y, nx_fmt f, nx_mode m)
{
    if (is_special(x) || is_special(y))
        return special_add(x, y, f);
    int retry;
    set_fast_prec(mp, f, m);
    mpfr_set_prec(mp->t1, 53);
    mpfr_set_d(mp->t1, x, MPFR_RNDN);
    mpfr_add_d(mp->r, mp->t1, y, nx_mp_rnd(m));
    double v = fast_result(mp, f, m, &retry);
    if (!retry)
        return v;
    /* Exact sum: the span from the larger top bit to the smaller last bit. */
    long hi = -1100, lo = 1100;
    if (x != 0) { hi = top_exp(x); lo = top_exp(x) - 53; }
    if (y != 0) { if (top_exp(y) > hi) hi = top_exp(y); if (top_exp(y) - 53 < lo) lo = top_exp(y) - 53; }
    mpfr_set_prec(mp->big, (mpfr_prec_t)(hi - lo + 4));
    mpfr_add_d(mp->big, mp->t1, y, nx_mp_rnd(m == NX_RNA ? NX_RNE : m));
    return nx_mp_round(mp, mp->big, f, m, 0);
}

/* Loads a and b into t1, t2 (53 bits, exact). */
static void load2(nx_mp *mp, double a, double b)
{
    mpfr_set_prec(mp->t1, 53);
    mpfr_set_prec(mp->t2, 53);
    mpfr_set_d(mp->t1, a, MPFR_RNDN);
    mpfr_set_d(mp->t2, b, MPFR_RNDN);
}

/* The IEEE product of possibly special operands (0 * inf = NaN). */
static double special_mul(double a, double b)
{
    return a * b;
}

double nx_mp_fma(nx_mp *mp, double a, double b, double c, nx_fmt f, nx_mode m,
                 int dbl_product)
{
    if (is_special(a) || is_special(b)) {
        double p = special_mul(a, b); /* inf or NaN: exact as IEEE */
        return special_add(p, c, f);
    }
    if (is_special(c))
        return special_add(c, 0.0, f); /* a finite product meets NaN or inf */
    if (dbl_product) {
        /* exact: both significands have at most 26 bits and the exponents
         * stay far inside binary64's range; a zero product keeps IEEE's sign */
        return nx_mp_add(mp, a * b, c, f, m);
    }
    int retry;
    load2(mp, a, b);
    mpfr_set_prec(mp->t3, 53);
    mpfr_set_d(mp->t3, c, MPFR_RNDN);
    set_fast_prec(mp, f, m);
    mpfr_fma(mp->r, mp->t1, mp->t2, mp->t3, nx_mp_rnd(m));
    double v = fast_result(mp, f, m, &retry);
    if (!retry)
        return v;
    mpfr_set_prec(mp->big, NX_MP_BIG_PREC);
    mpfr_fma(mp->big, mp->t1, mp->t2, mp->t3, nx_mp_rnd(m == NX_RNA ? NX_RNE : m));
    return nx_mp_round(mp, mp->big, f, m, 0);
}

double nx_mp_mul(nx_mp *mp, double a, double b, nx_fmt f, nx_mode m, int dbl_product)
{
    if (is_special(a) || is_special(b)) {
        double p = special_mul(a, b);
        return isnan(p) ? NAN : nx_round_inf(p < 0, f, 0);
    }
    if (dbl_product)
        return nx_mp_round_d(mp, a * b, f, m, 0);
    load2(mp, a, b);
    mpfr_set_prec(mp->t3, 106);
    mpfr_mul(mp->t3, mp->t1, mp->t2, MPFR_RNDN); /* exact in 106 bits */
    return nx_mp_round(mp, mp->t3, f, m, 0);
}
