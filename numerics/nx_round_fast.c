/* nx_round_fast.c: integer rounding of exact values to any format and mode
 * (see nx_round_fast.h).
 *
 * An exact value is brought to the form ±(N + d)·2^k with N a 64-bit
 * integer and d in [0, 1) known only as "zero or not" (the sticky bit).
 * The format's quantum at the value is 2^q with q = max(lg, emin) - p + 1,
 * lg = floor(log2 |value|), exactly as nx_mp_round computes it; N is shifted
 * right by q - k and the dropped bits (round bit, sticky) decide the
 * increment.  A carry out of the top (R = 2^p) is just a larger integer, so
 * the binade change needs no special case.  The overflow, zero and
 * unsigned-format rules come last and reuse nx_round_overflow and
 * nx_round_inf, so they cannot drift from the MPFR engine's. */
#include "nx_round_fast.h"
#include "nx_mp.h"

#include <math.h>

void nx_rfmt_init(nx_rfmt *r, nx_fmt f)
{
    const nx_format_info *fi = nx_format(f);
    r->p = fi->p;
    r->emin = fi->emin;
    r->maxf = fi->max_finite;
    r->maxbits = nx_rf_bits(fi->max_finite);
    r->fmt = f;
    r->is_signed = fi->is_signed;
    r->has_zero = fi->has_zero;
}

/* |x| = M·2^k for a finite nonzero double (M < 2^53). */
static inline void decomp(double x, uint64_t *M, int *k)
{
    uint64_t u = nx_rf_bits(x) & ~(1ull << 63);
    int e = (int)(u >> 52);
    uint64_t f = u & ((1ull << 52) - 1);
    if (e) {
        *M = f | (1ull << 52);
        *k = e - 1075;
    } else {
        *M = f;
        *k = -1074;
    }
}

/* round((N + d) / 2^s) in mode m for a value of sign neg, s >= 1. */
static inline uint64_t shround(uint64_t N, int s, int sticky, int neg, nx_mode m)
{
    uint64_t R;
    int rbit, st;
    if (s < 64) {
        uint64_t half = 1ull << (s - 1);
        R = N >> s;
        rbit = (N & half) != 0;
        st = (N & (half - 1)) != 0 || sticky;
    } else if (s == 64) {
        R = 0;
        rbit = (int)(N >> 63);
        st = (N << 1) != 0 || sticky;
    } else {
        R = 0;
        rbit = 0;
        st = N != 0 || sticky;
    }
    int inc;
    switch (m) {
    case NX_RNE: inc = rbit && (st || (R & 1)); break;
    case NX_RNA: inc = rbit; break;
    case NX_RZ: inc = 0; break;
    case NX_RU: inc = !neg && (rbit || st); break;
    default: inc = neg && (rbit || st); break;
    }
    return R + (uint64_t)inc;
}

static inline double zero_of(const nx_rfmt *f, int neg)
{
    if (!f->has_zero)
        return NAN;
    return neg ? -0.0 : 0.0;
}

/* The value ±R·2^q (R already rounded) with §2's zero, sign and overflow rules. */
static double finish(int neg, uint64_t R, int q, const nx_rfmt *f, nx_mode m, int saturate)
{
    if (R == 0)
        return zero_of(f, neg);
    if (neg && !f->is_signed)
        return NAN;
    int rlg = 63 - __builtin_clzll(R) + q;
    if (rlg > 1023)
        return nx_round_overflow(neg, f->fmt, m, saturate);
    double v = (double)R * nx_rf_pow2(q); /* exact: R <= 2^53, the product is a member */
    if (v > f->maxf)
        return nx_round_overflow(neg, f->fmt, m, saturate);
    return neg ? -v : v;
}

double nx_rf_round_scaled(int neg, uint64_t N, int k, int sticky, const nx_rfmt *f, nx_mode m,
                          int saturate)
{
    int lg = 63 - __builtin_clzll(N) + k;
    int e = lg > f->emin ? lg : f->emin;
    int q = e - f->p + 1;
    int s = q - k;
    uint64_t R;
    if (s <= 0) {
        /* every bit lies at or above the quantum: exact (and N <= 2^p) */
        R = N;
        q = k;
    } else {
        R = shround(N, s, sticky, neg, m);
    }
    return finish(neg, R, q, f, m, saturate);
}

double nx_rf_round(double x, const nx_rfmt *f, nx_mode m, int saturate)
{
    if (isnan(x))
        return NAN;
    /* fp32 in rne without saturation is IEEE's own conversion: gradual
     * underflow, ties to even, overflow to infinity (§2.1, §2.2), in the
     * default rounding direction, which nothing in the project changes */
    if (f->fmt == NX_FP32 && m == NX_RNE && !saturate)
        return (double)(float)x;
    /* bf16 and fp16 in rne, x in their normal range: ties-to-even on the
     * double's own bits (add half an ulp less one, plus the kept last bit,
     * then clear what is dropped; a carry moves into the exponent as it
     * should), then §2.2's overflow.  Below the normal range: the path below. */
    if ((f->fmt == NX_BF16 || f->fmt == NX_FP16) && m == NX_RNE && !saturate) {
        uint64_t u;
        memcpy(&u, &x, sizeof u);
        uint64_t sgn = u & (1ull << 63), a = u ^ sgn;
        int e = (int)(a >> 52) - 1023;
        if (e >= f->emin && e < 1024) {
            int drop = 53 - f->p;
            uint64_t r = a + ((1ull << (drop - 1)) - 1) + ((a >> drop) & 1);
            r &= ~((1ull << drop) - 1);
            double v;
            memcpy(&v, &r, sizeof v);
            if (v > f->maxf)
                return nx_round_overflow(sgn != 0, f->fmt, m, saturate);
            return sgn ? -v : v;
        }
    }
    int neg = signbit(x) != 0;
    if (isinf(x))
        return nx_round_inf(neg, f->fmt, saturate);
    if (x == 0)
        return zero_of(f, neg);
    uint64_t M;
    int k;
    decomp(x, &M, &k);
    return nx_rf_round_scaled(neg, M, k, 0, f, m, saturate);
}

/* |hi + lo| = (N + d)·2^k as in nx_rf_round_scaled; with lo != 0, N >= 2^61.
 * lo2 (|lo2| <= ulp(lo)/2) only moves the floor and the sticky bit. */
static inline void dd_decomp(double hi, double lo, double lo2, uint64_t *N, int *k, int *sticky)
{
    uint64_t M;
    int kh;
    decomp(hi, &M, &kh);
    if (lo == 0) {
        *N = M;
        *k = kh;
        *sticky = 0;
        return;
    }
    uint64_t Nh = M << 10;
    int kk = kh - 10;
    uint64_t Ml;
    int kl;
    decomp(lo, &Ml, &kl);
    uint64_t L;
    int frac;
    if (kl >= kk) {
        L = Ml << (kl - kk); /* <= 2^12 since |lo| <= 4 ulp(hi) */
        frac = 0;
    } else {
        int sh = kk - kl;
        L = sh < 64 ? Ml >> sh : 0;
        frac = sh < 64 ? (Ml & ((1ull << sh) - 1)) != 0 : 1;
    }
    int same = signbit(hi) == signbit(lo);
    if (same)
        Nh += L;
    else
        Nh -= L + (uint64_t)frac;
    if (!frac && lo2 != 0) {
        frac = 1;
        if (signbit(lo2) != signbit(hi))
            Nh -= 1;
    }
    *N = Nh;
    *k = kk;
    *sticky = frac;
}

double nx_rf_round_ddd(double hi, double mid, double lo, const nx_rfmt *f, nx_mode m,
                       int saturate)
{
    if (!isfinite(hi) || hi == 0)
        return nx_rf_round(hi, f, m, saturate);
    uint64_t N;
    int k, sticky;
    dd_decomp(hi, mid, lo, &N, &k, &sticky);
    return nx_rf_round_scaled(signbit(hi) != 0, N, k, sticky, f, m, saturate);
}

double nx_rf_round_dd(double hi, double lo, const nx_rfmt *f, nx_mode m, int saturate)
{
    return nx_rf_round_ddd(hi, lo, 0.0, f, m, saturate);
}

double nx_round_fast(double x, nx_fmt f, nx_mode m, int saturate)
{
    nx_rfmt r;
    nx_rfmt_init(&r, f);
    return nx_rf_round(x, &r, m, saturate);
}

double nx_round_fast_dd(double hi, double lo, nx_fmt f, nx_mode m, int saturate)
{
    nx_rfmt r;
    nx_rfmt_init(&r, f);
    return nx_rf_round_dd(hi, lo, &r, m, saturate);
}

int64_t nx_rf_cut(double hi, double lo, int q, nx_mode m)
{
    uint64_t N;
    int k, sticky;
    dd_decomp(hi, lo, 0.0, &N, &k, &sticky);
    int neg = signbit(hi) != 0;
    int s = q - k;
    uint64_t R = s <= 0 ? N << -s : shround(N, s, sticky, neg, m);
    return neg ? -(int64_t)R : (int64_t)R;
}

int nx_rf_lg_dd(double hi, double lo)
{
    if (lo == 0)
        return nx_rf_lg(hi);
    uint64_t N;
    int k, sticky;
    dd_decomp(hi, lo, 0.0, &N, &k, &sticky);
    return 63 - __builtin_clzll(N) + k;
}
