/* nx_exact.c: the superaccumulator of nx_exact.h.
 *
 * Two layers.
 *
 * Digits: c[j] holds a signed count of 2^(32 j + BASE).  A double M·2^k
 * (M < 2^53) lands in three consecutive chunks as three 32-bit digits, so a
 * chunk grows by less than 2^32 per term and 2^30 terms fit before the
 * carries must be propagated.  This layer takes anything, one term at a
 * time, in about 20 instructions.
 *
 * Blocks: arrays go through an error-free extraction cascade first (binned
 * summation).  For a block of at most 1024 terms with max |t| < 2^(E+1),
 * level l works on the grid u_l = 2^(b_l - 43), b_0 = E + 1,
 * b_(l+1) = b_l - 44: each of 8 lanes keeps an accumulator that starts at
 * sigma_l = 1.5·2^(b_l + 9) and stays in sigma_l's binade (at most 128 terms
 * of at most 2^b_l each), so acc' = acc + r rounds r to a multiple of u_l,
 * q = acc' - acc and r - q are exact, and the accumulator never rounds away
 * anything: three operations per level per term.  The block's smallest term
 * says how many levels (1 to 3) reach its lowest bit; what a pass leaves
 * (rare) goes through the cascade again, lower down, or to the digits.  The
 * lane sums acc - sigma_l (exact) are then added to the digits.  All of it
 * is exact, so the order of the terms is irrelevant and the loops are
 * vectorised (GCC vector extensions; an AVX2
 * clone is chosen at run time on x86-64). */
#include "nx_exact.h"
#include "nx_mp.h"
#include "nx_round_fast.h"

#include <gmp.h>
#include <math.h>
#include <string.h>

#define SIGN 0x8000000000000000ull
#define ABSM 0x7fffffffffffffffull
#define INF_BITS 0x7ff0000000000000ull
#define MASK32 0xffffffffull

void nx_xacc_init(nx_xacc *x)
{
    memset(x, 0, sizeof *x);
    x->lo = NX_XACC_CHUNKS;
    x->hi = -1;
}

/* Adds ±M·2^(pos + BASE), M < 2^53, pos >= 0. */
static inline void add_digits(nx_xacc *x, int neg, uint64_t M, int pos)
{
    int j = pos >> 5, sh = pos & 31;
    uint64_t d0 = (M << sh) & MASK32;
    uint64_t d1 = (M >> (32 - sh)) & MASK32;
    uint64_t d2 = (M >> 1) >> (63 - sh);
    if (neg) {
        x->c[j] -= (int64_t)d0;
        x->c[j + 1] -= (int64_t)d1;
        x->c[j + 2] -= (int64_t)d2;
    } else {
        x->c[j] += (int64_t)d0;
        x->c[j + 1] += (int64_t)d1;
        x->c[j + 2] += (int64_t)d2;
    }
    if (j < x->lo)
        x->lo = j;
    if (j + 2 > x->hi)
        x->hi = j + 2;
    x->adds++;
}

/* Carries: every chunk below the top becomes a digit in [0, 2^32); the top
 * chunk keeps the sign, in [-2^32, 2^32). */
static void propagate(nx_xacc *x)
{
    x->adds = 0;
    if (x->lo > x->hi)
        return;
    int hi = x->hi, lo = x->lo;
    int64_t carry = 0;
    for (int j = lo; j < hi; j++) {
        int64_t v = x->c[j] + carry;
        carry = v >> 32; /* arithmetic shift: floor(v / 2^32) */
        x->c[j] = v - carry * ((int64_t)1 << 32);
    }
    x->c[hi] += carry;
    while ((x->c[hi] >= ((int64_t)1 << 32) || x->c[hi] < -((int64_t)1 << 32)) &&
           hi + 1 < NX_XACC_CHUNKS) {
        carry = x->c[hi] >> 32;
        x->c[hi] -= carry * ((int64_t)1 << 32);
        x->c[++hi] += carry;
    }
    while (hi >= lo && x->c[hi] == 0)
        hi--;
    while (lo <= hi && x->c[lo] == 0)
        lo++;
    if (lo > hi) {
        x->lo = NX_XACC_CHUNKS;
        x->hi = -1;
    } else {
        x->lo = lo;
        x->hi = hi;
    }
}

static inline void maybe_propagate(nx_xacc *x)
{
    if (x->adds >= (1u << 30))
        propagate(x);
}

/* A finite double into the digits, scaled by 2^e, flags untouched. */
static inline void add_finite(nx_xacc *x, uint64_t u, int e)
{
    uint64_t a = u & ABSM;
    if (a == 0)
        return;
    int ex = (int)(a >> 52);
    uint64_t M = ex ? (a & ((1ull << 52) - 1)) | (1ull << 52) : a;
    int k = ex ? ex - 1075 : -1074;
    int pos = k + e - NX_XACC_BASE;
    if (pos < 0) {
        /* a scaled term written with trailing zeros below the range: the bits
         * shifted out are zero (no exact term reaches below 2^-2148) */
        M >>= -pos < 64 ? -pos : 63;
        pos = 0;
    }
    add_digits(x, (int)(u >> 63), M, pos);
    maybe_propagate(x);
}

static inline void note_term(nx_xacc *x, uint64_t u)
{
    x->nonnegzero |= u != SIGN;
    x->nonposzero |= u != 0;
}

void nx_xacc_add(nx_xacc *x, double v)
{
    uint64_t u = nx_rf_bits(v);
    note_term(x, u);
    uint64_t a = u & ABSM;
    if (a >= INF_BITS) {
        if (a > INF_BITS)
            x->nan = 1;
        else if (u >> 63)
            x->ninf = 1;
        else
            x->pinf = 1;
        return;
    }
    add_finite(x, u, 0);
}

void nx_xacc_add_scaled(nx_xacc *x, double v, int e)
{
    if (!isfinite(v)) {
        nx_xacc_add(x, v);
        return;
    }
    uint64_t u = nx_rf_bits(v);
    note_term(x, u);
    add_finite(x, u, e);
}

void nx_xacc_add_prod(nx_xacc *x, double a, double b)
{
    double p = a * b;
    if (!isfinite(a) || !isfinite(b) || a == 0 || b == 0) {
        nx_xacc_add(x, p); /* NaN, inf, 0·inf = NaN, or a signed zero: all exact */
        return;
    }
    if (isfinite(p) && fabs(p) >= 0x1p-968) {
        /* TwoProd: the exact product is p + e, and e does not underflow */
        double e = fma(a, b, -p);
        nx_xacc_add(x, p);
        if (e != 0)
            add_finite(x, nx_rf_bits(e), 0);
        return;
    }
    /* Underflow or overflow: split off the exponents, multiply the
     * significands (in [1/4, 1)), add scaled. */
    int ea, eb;
    double ma = frexp(a, &ea), mb = frexp(b, &eb);
    double pp = ma * mb, ee = fma(ma, mb, -pp);
    nx_xacc_add_scaled(x, pp, ea + eb);
    if (ee != 0)
        add_finite(x, nx_rf_bits(ee), ea + eb);
}

void nx_xacc_sub_acc(nx_xacc *x, const nx_xacc *y0)
{
    nx_xacc y = *y0;
    propagate(&y);
    propagate(x);
    for (int j = y.lo; j <= y.hi; j++)
        x->c[j] -= y.c[j];
    if (y.lo <= y.hi) {
        if (y.lo < x->lo)
            x->lo = y.lo;
        if (y.hi > x->hi)
            x->hi = y.hi;
        /* y's chunks are digits with a top below 2^34 in magnitude: the
         * difference needs a carry pass before many more terms. */
        x->adds = 1u << 29;
    }
    x->nan |= y.nan;
    x->pinf |= y.ninf;
    x->ninf |= y.pinf;
    x->nonnegzero |= y.nonposzero;
    x->nonposzero |= y.nonnegzero;
}

/* ---------------------------------------------------------------------- */
/* The block cascade. */

typedef double v4d __attribute__((vector_size(32)));
typedef int64_t v4l __attribute__((vector_size(32)));
typedef uint64_t v4u __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));

#define XB 1024 /* terms per block: 8 lanes x 128 < 2^9 */

enum { K_SUM, K_DOT, K_SUM_F32, K_DOT_F32 };

/* Pass 1: the terms of a block into buf (padded with +0 to a multiple of 8);
 * returns the largest |t| as bits, and in *mnbits the smallest nonzero |t|
 * (INF_BITS if none), and the zero-sign flags. */
static inline __attribute__((always_inline)) uint64_t
load_block(int kind, const void *va, const void *vb, size_t n, double *buf, uint64_t *mnbits,
           uint64_t *notneg0, uint64_t *notpos0)
{
    const v4l absm = {(int64_t)ABSM, (int64_t)ABSM, (int64_t)ABSM, (int64_t)ABSM};
    /* |t| + 2^63 - 1 as a signed number: zero becomes the largest value and
     * the nonzero magnitudes keep their order, so a signed minimum skips the
     * zeros */
    const v4l bias = {(int64_t)ABSM, (int64_t)ABSM, (int64_t)ABSM, (int64_t)ABSM};
    const v4l zero = {0, 0, 0, 0};
    v4l mx = zero, mn = bias;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        v4d t;
        if (kind == K_SUM) {
            memcpy(&t, (const double *)va + i, sizeof t);
        } else if (kind == K_DOT) {
            v4d a, b;
            memcpy(&a, (const double *)va + i, sizeof a);
            memcpy(&b, (const double *)vb + i, sizeof b);
            t = a * b;
        } else if (kind == K_SUM_F32) {
            v4f a;
            memcpy(&a, (const float *)va + i, sizeof a);
            t = __builtin_convertvector(a, v4d);
        } else {
            v4f a, b;
            memcpy(&a, (const float *)va + i, sizeof a);
            memcpy(&b, (const float *)vb + i, sizeof b);
            t = __builtin_convertvector(a, v4d) * __builtin_convertvector(b, v4d);
        }
        memcpy(buf + i, &t, sizeof t);
        v4l u;
        memcpy(&u, &t, sizeof u);
        v4l au = u & absm;
        v4l gt = au > mx;
        mx = (au & gt) | (mx & ~gt);
        v4l az = (v4l)((v4u)au + (v4u)bias); /* wraps in the unsigned view */
        v4l lt = az < mn;
        mn = (az & lt) | (mn & ~lt);
    }
    uint64_t m = 0, mi = INF_BITS;
    for (int l = 0; l < 4; l++) {
        if ((uint64_t)mx[l] > m)
            m = (uint64_t)mx[l];
        uint64_t z = (uint64_t)mn[l] - ABSM; /* back to |t|; 0 for "only zeros" */
        if (z && z < mi)
            mi = z;
    }
    for (; i < n; i++) {
        double t;
        if (kind == K_SUM)
            t = ((const double *)va)[i];
        else if (kind == K_DOT)
            t = ((const double *)va)[i] * ((const double *)vb)[i];
        else if (kind == K_SUM_F32)
            t = ((const float *)va)[i];
        else
            t = (double)((const float *)va)[i] * (double)((const float *)vb)[i];
        buf[i] = t;
        uint64_t u = nx_rf_bits(t) & ABSM;
        if (u > m)
            m = u;
        if (u && u < mi)
            mi = u;
    }
    /* Zero signs matter only for a block of zeros: any nonzero term is
     * neither +0 nor -0. */
    uint64_t fnn = m != 0, fnp = m != 0;
    if (m == 0)
        for (size_t j = 0; j < n; j++) {
            uint64_t u = nx_rf_bits(buf[j]);
            fnn |= u != SIGN;
            fnp |= u != 0;
        }
    for (; i % 8; i++)
        buf[i] = 0.0;
    *mnbits = mi;
    *notneg0 = fnn;
    *notpos0 = fnp;
    return m;
}

/* Pass 2: L extraction levels (L = 1, 2 or 3, a constant after inlining)
 * over buf (length a multiple of 8).  Each level's lane accumulators start
 * at sigma_l: acc' = acc + r rounds r to the grid of sigma_l's binade, so
 * q = acc' - acc and r - q are exact (three operations per level).  The
 * remainders are written back; returns 1 if any is nonzero.  out[l][j] gets
 * lane j's exact sum of level l. */
static inline __attribute__((always_inline)) int extract(double *buf, size_t n, int L,
                                                        const double *sig, double out[3][8])
{
    const v4d S0 = {sig[0], sig[0], sig[0], sig[0]}, S1 = {sig[1], sig[1], sig[1], sig[1]},
              S2 = {sig[2], sig[2], sig[2], sig[2]};
    v4d A0 = S0, B0 = S0, A1 = S1, B1 = S1, A2 = S2, B2 = S2;
    v4l nz = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i += 8) {
        v4d ra, rb, na, nb;
        memcpy(&ra, buf + i, sizeof ra);
        memcpy(&rb, buf + i + 4, sizeof rb);
        na = A0 + ra;
        nb = B0 + rb;
        ra -= na - A0;
        rb -= nb - B0;
        A0 = na;
        B0 = nb;
        if (L >= 2) {
            na = A1 + ra;
            nb = B1 + rb;
            ra -= na - A1;
            rb -= nb - B1;
            A1 = na;
            B1 = nb;
        }
        if (L >= 3) {
            na = A2 + ra;
            nb = B2 + rb;
            ra -= na - A2;
            rb -= nb - B2;
            A2 = na;
            B2 = nb;
        }
        v4l ua, ub;
        memcpy(&ua, &ra, sizeof ua);
        memcpy(&ub, &rb, sizeof ub);
        nz |= ua | ub;
        memcpy(buf + i, &ra, sizeof ra);
        memcpy(buf + i + 4, &rb, sizeof rb);
    }
    A0 -= S0; /* exact: the same binade */
    B0 -= S0;
    A1 -= S1;
    B1 -= S1;
    A2 -= S2;
    B2 -= S2;
    for (int l = 0; l < 4; l++) {
        out[0][l] = A0[l];
        out[0][l + 4] = B0[l];
        out[1][l] = A1[l];
        out[1][l + 4] = B1[l];
        out[2][l] = A2[l];
        out[2][l + 4] = B2[l];
    }
    /* a remainder of -0 (a -0 term) is not a remainder */
    return ((nz[0] | nz[1] | nz[2] | nz[3]) & (int64_t)ABSM) != 0;
}

/* Terms of buf[0..n) (n a multiple of 8, finite, largest |t| = mbits,
 * smallest nonzero mnbits, each with at most sigbits significant bits) into x. */
static inline __attribute__((always_inline)) void cascade(nx_xacc *x, double *buf, size_t n,
                                                         uint64_t mbits, uint64_t mnbits,
                                                         int sigbits)
{
    if (mbits == 0)
        return;
    int E = nx_rf_lg(nx_rf_from_bits(mbits));
    int b = E + 1;
    if (b + 9 > 1023) {
        for (size_t i = 0; i < n; i++)
            add_finite(x, nx_rf_bits(buf[i]), 0);
        return;
    }
    /* the lowest bit any term can have */
    int low = nx_rf_lg(nx_rf_from_bits(mnbits)) - sigbits + 1;
    double out[3][8];
    for (;;) {
        /* levels needed to reach `low`: level l takes bits down to b - 43 - 44 l */
        int need = b - 43 <= low ? 1 : b - 87 <= low ? 2 : 3;
        if (b - 43 - 44 * (need - 1) < -1074) {
            /* too deep for the doubles' grid: the digits take the rest */
            for (size_t i = 0; i < n; i++)
                add_finite(x, nx_rf_bits(buf[i]), 0);
            return;
        }
        double sig[3] = {1.5 * nx_rf_pow2(b + 9), need >= 2 ? 1.5 * nx_rf_pow2(b - 44 + 9) : 0,
                         need >= 3 ? 1.5 * nx_rf_pow2(b - 88 + 9) : 0};
        int more = need == 1 ? extract(buf, n, 1, sig, out)
                 : need == 2 ? extract(buf, n, 2, sig, out)
                             : extract(buf, n, 3, sig, out);
        for (int l = 0; l < need; l++)
            for (int j = 0; j < 8; j++)
                add_finite(x, nx_rf_bits(out[l][j]), 0);
        if (!more)
            return;
        b -= 44 * need;
    }
}

static inline __attribute__((always_inline)) void blocks(nx_xacc *x, int kind, const void *a,
                                                        const void *b, size_t n)
{
    double buf[XB];
    size_t esz = kind == K_SUM || kind == K_DOT ? sizeof(double) : sizeof(float);
    int sigbits = kind == K_SUM ? 53 : kind == K_SUM_F32 ? 24 : 48;
    for (size_t off = 0; off < n; off += XB) {
        size_t m = n - off < XB ? n - off : XB;
        const char *pa = (const char *)a + off * esz;
        const char *pb = b ? (const char *)b + off * esz : NULL;
        uint64_t nn, np, mn;
        uint64_t mbits = load_block(kind, pa, pb, m, buf, &mn, &nn, &np);
        x->nonnegzero |= nn != 0;
        x->nonposzero |= np != 0;
        size_t mm = (m + 7) & ~(size_t)7;
        if (mbits >= INF_BITS) {
            for (size_t i = 0; i < m; i++)
                nx_xacc_add(x, buf[i]); /* flags are already noted; specials recorded here */
            continue;
        }
        cascade(x, buf, mm, mbits, mn, sigbits);
    }
}

/* One specialised copy per kind (kind is a constant in each call). */
#define BLOCKS_BY_KIND(x, kind, a, b, n)                                                           \
    switch (kind) {                                                                                \
    case K_SUM: blocks(x, K_SUM, a, b, n); break;                                                  \
    case K_DOT: blocks(x, K_DOT, a, b, n); break;                                                  \
    case K_SUM_F32: blocks(x, K_SUM_F32, a, b, n); break;                                          \
    default: blocks(x, K_DOT_F32, a, b, n); break;                                                 \
    }

static void blocks_generic(nx_xacc *x, int kind, const void *a, const void *b, size_t n)
{
    BLOCKS_BY_KIND(x, kind, a, b, n)
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static void blocks_avx2(nx_xacc *x, int kind, const void *a,
                                                        const void *b, size_t n)
{
    BLOCKS_BY_KIND(x, kind, a, b, n)
}

static int have_avx2(void)
{
    return __builtin_cpu_supports("avx2") != 0;
}
#endif

static void run_blocks(nx_xacc *x, int kind, const void *a, const void *b, size_t n)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_avx2()) {
        blocks_avx2(x, kind, a, b, n);
        return;
    }
#endif
    blocks_generic(x, kind, a, b, n);
}

void nx_xacc_add_sum(nx_xacc *x, const double *v, size_t n)
{
    run_blocks(x, K_SUM, v, NULL, n);
}

void nx_xacc_add_sum_f32(nx_xacc *x, const float *v, size_t n)
{
    run_blocks(x, K_SUM_F32, v, NULL, n);
}

void nx_xacc_add_dot_f32(nx_xacc *x, const float *a, const float *b, size_t n)
{
    run_blocks(x, K_DOT_F32, a, b, n);
}

void nx_xacc_add_dot(nx_xacc *x, const double *a, const double *b, size_t n, int exact_products)
{
    if (exact_products) {
        run_blocks(x, K_DOT, a, b, n);
        return;
    }
    /* fp64 operands: TwoProd into a buffer of p and e, the exceptions
     * (underflow, overflow, specials) straight to the digits. */
    double buf[XB];
    size_t m = 0;
    uint64_t mbits = 0, mnbits = INF_BITS;
    for (size_t i = 0; i < n; i++) {
        double p = a[i] * b[i];
        double ap = fabs(p);
        if (!(ap >= 0x1p-968 && ap <= 0x1p+1000)) {
            nx_xacc_add_prod(x, a[i], b[i]);
            continue;
        }
        double e = fma(a[i], b[i], -p);
        x->nonnegzero = x->nonposzero = 1; /* a nonzero term */
        buf[m++] = p;
        buf[m++] = e;
        if (nx_rf_bits(ap) > mbits)
            mbits = nx_rf_bits(ap);
        double ae = fabs(e != 0 ? e : p);
        if (nx_rf_bits(ae) < mnbits)
            mnbits = nx_rf_bits(ae);
        if (m == XB) {
            cascade(x, buf, m, mbits, mnbits, 53);
            m = 0;
            mbits = 0;
            mnbits = INF_BITS;
        }
    }
    if (m) {
        while (m % 8)
            buf[m++] = 0.0;
        cascade(x, buf, m, mbits, mnbits, 53);
    }
}

/* ---------------------------------------------------------------------- */
/* Reading the sum. */

int nx_xacc_sign(nx_xacc *x)
{
    if (x->nan || x->pinf || x->ninf)
        return 2;
    propagate(x);
    if (x->lo > x->hi)
        return 0;
    return x->c[x->hi] > 0 ? 1 : -1;
}

/* The magnitude as 32-bit digits dig[lo..hi] (zero elsewhere); returns the
 * sign (1 negative).  x must be propagated and nonzero. */
static int magnitude(const nx_xacc *x, uint32_t *dig, int *plo, int *phi)
{
    int neg = x->c[x->hi] < 0;
    int lo = x->lo, hi = x->hi, j;
    int64_t carry = 0;
    for (j = lo; j <= hi || (carry != 0 && j < NX_XACC_CHUNKS); j++) {
        int64_t c = j <= hi ? x->c[j] : 0;
        int64_t v = (neg ? -c : c) + carry;
        carry = v >> 32;
        dig[j] = (uint32_t)(v - carry * ((int64_t)1 << 32));
    }
    hi = j - 1;
    while (hi > lo && dig[hi] == 0)
        hi--;
    while (lo < hi && dig[lo] == 0)
        lo++;
    *plo = lo;
    *phi = hi;
    return neg;
}

static int zero_negative(const nx_xacc *x, nx_mode m)
{
    if (m == NX_RD)
        return x->nonposzero;
    return x->nonposzero && !x->nonnegzero;
}

double nx_xacc_round(nx_xacc *x, nx_fmt f, nx_mode m, int saturate)
{
    if (x->nan || (x->pinf && x->ninf))
        return NAN;
    if (x->pinf || x->ninf)
        return nx_round_inf(x->ninf, f, saturate);
    propagate(x);
    nx_rfmt rf;
    nx_rfmt_init(&rf, f);
    if (x->lo > x->hi)
        return nx_rf_round(zero_negative(x, m) ? -0.0 : 0.0, &rf, m, saturate);
    uint32_t dig[NX_XACC_CHUNKS];
    int lo, hi;
    int neg = magnitude(x, dig, &lo, &hi);
    uint64_t d1 = hi - 1 >= lo ? dig[hi - 1] : 0, d2 = hi - 2 >= lo ? dig[hi - 2] : 0;
    uint64_t W = ((uint64_t)dig[hi] << 32) | d1;
    int lz = __builtin_clzll(W);
    uint64_t N = W << lz;
    int sticky;
    if (lz) {
        N |= d2 >> (32 - lz);
        sticky = (d2 & ((1ull << (32 - lz)) - 1)) != 0;
    } else {
        sticky = d2 != 0;
    }
    for (int j = lo; j <= hi - 3 && !sticky; j++)
        sticky = dig[j] != 0;
    int k = 32 * (hi - 1) + NX_XACC_BASE - lz;
    return nx_rf_round_scaled(neg, N, k, sticky, &rf, m, saturate);
}

void nx_xacc_get_mpfr(nx_xacc *x, mpfr_ptr out)
{
    if (x->nan || (x->pinf && x->ninf)) {
        mpfr_set_nan(out);
        return;
    }
    if (x->pinf || x->ninf) {
        mpfr_set_inf(out, x->ninf ? -1 : 1);
        return;
    }
    propagate(x);
    if (x->lo > x->hi) {
        mpfr_set_prec(out, 2);
        mpfr_set_zero(out, zero_negative(x, NX_RNE) ? -1 : 1);
        return;
    }
    uint32_t dig[NX_XACC_CHUNKS];
    int lo, hi;
    int neg = magnitude(x, dig, &lo, &hi);
    mpz_t z;
    mpz_init(z);
    mpz_import(z, (size_t)(hi - lo + 1), -1, sizeof(uint32_t), 0, 0, dig + lo);
    mpfr_prec_t prec = (mpfr_prec_t)mpz_sizeinbase(z, 2);
    mpfr_set_prec(out, prec < 2 ? 2 : prec);
    mpfr_set_z_2exp(out, z, 32 * lo + NX_XACC_BASE, MPFR_RNDN); /* exact */
    if (neg)
        mpfr_neg(out, out, MPFR_RNDN);
    mpz_clear(z);
}

double nx_exact_dot(const double *a, const double *b, size_t n, int exact_products, nx_fmt f,
                    nx_mode m)
{
    nx_xacc x;
    nx_xacc_init(&x);
    nx_xacc_add_dot(&x, a, b, n, exact_products);
    return nx_xacc_round(&x, f, m, 0);
}

double nx_exact_sum(const double *v, size_t n, nx_fmt f, nx_mode m)
{
    nx_xacc x;
    nx_xacc_init(&x);
    nx_xacc_add_sum(&x, v, n);
    return nx_xacc_round(&x, f, m, 0);
}
